// The components server and clients share: a replica maps a keyframe's components to its own by
// name, and their schemas must match (else DELTA_SCHEMA).
import { component } from '../../dist/index.js';

export const Position = component('ArenaPosition', { x: 'f32', y: 'f32' });
/** Simulated on the server only: `replicate: false` keeps it off the wire. */
export const Velocity = component('ArenaVelocity', { x: 'f32', y: 'f32' }, { replicate: false });
export const Hue = component('ArenaHue', { h: 'u16' });
export const SIZE = 800; // the arena is SIZE x SIZE units
