// Every contender, in table order: tessera, the limit, then the peers. Plain ES modules (no
// Node-only APIs), shared by the Node runner (bench/js/run.mjs) and a browser page.
import tessera from './tessera.js';
import raw from './raw.js';
import bitecs from './bitecs.js';
import piecs from './piecs.js';
import koota from './koota.js';
import miniplex from './miniplex.js';

export const contenders = [tessera, raw, bitecs, piecs, koota, miniplex];
