// @ts-check
// The mirror's worker: a second tessera instance (its own wasm memory) holding a replica world
// that is fed by nothing but the delta bytes the page posts, and drawn onto the OffscreenCanvas
// the page transferred. It defines no components and runs no systems: the first keyframe
// registers Position and Color by name, and the definitions imported from scenario.js claim
// them when the query below first uses them. Each applied delta is acknowledged with the
// replica's tick, which is what the page encodes the next delta against (demo/mirror.js).
//
// Messages in:  { type: 'init', canvas, path }, { type: 'delta', epoch, bytes: ArrayBuffer },
//               { type: 'path', path }, { type: 'off' }, { type: 'sample', id, handles }
// Messages out: { type: 'ready' }, { type: 'applied', epoch, tick, applied, entities, applyMs,
//               renderMs }, { type: 'resync', epoch }, { type: 'sample', id, tick, positions },
//               { type: 'error', message }
// (`epoch` is the page's count of switches on, echoed so that it can tell whose delta it was.)
import { init, TesseraError } from '../dist/index.js';
import { Renderer } from './render.js';
import { Color, Position } from './scenario.js';

/** @typedef {import('./render.js').RenderPath} RenderPath */

const scope = /** @type {DedicatedWorkerGlobalScope} */ (/** @type {unknown} */ (self));

/** @type {import('../dist/index.js').World | undefined} */
let replica;
/** @type {Renderer | undefined} */
let renderer;
/** @type {import('../dist/index.js').Query | undefined} */
let visible;
/** No sparks here: they are the source's per-tick events, not state, so no delta carries them. */
const NO_SPARKS = new Float32Array(0);

/** @param {unknown} error */
function report(error) {
    const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    scope.postMessage({ type: 'error', message });
}

/**
 * Applies one delta and draws the replica. A delta whose baseline the replica lacks (it only
 * happens if a delta was lost and the page acknowledged past it) asks for a keyframe instead.
 * @param {ArrayBuffer} buffer
 * @param {number} epoch echoed back
 */
function applyAndDraw(buffer, epoch) {
    if (!replica || !renderer) throw new Error('the mirror worker got a delta before init');
    const started = performance.now();
    let applied = false;
    try {
        applied = replica.applyDelta(new Uint8Array(buffer));
    } catch (error) {
        if (!(error instanceof TesseraError && error.code === 'DELTA_BASELINE')) throw error;
        scope.postMessage({ type: 'resync', epoch });
        return;
    }
    const appliedAt = performance.now();
    // The query is made after the first keyframe: before it the replica has no components.
    visible ??= replica.query({ all: [Position, Color] });
    const entities = replica.stats().entityCount;
    renderer.draw(visible, entities, NO_SPARKS, 0);
    scope.postMessage({
        type: 'applied',
        epoch,
        tick: replica.replicaTick,
        applied,
        entities,
        applyMs: appliedAt - started,
        renderMs: performance.now() - appliedAt,
    });
}

/**
 * Positions of the given handles in the replica (NaN for one it does not hold), for the test
 * that compares them with the source's.
 * @param {number} id
 * @param {Uint32Array} handles
 */
function sample(id, handles) {
    const positions = new Float64Array(2 * handles.length).fill(NaN);
    if (replica) {
        handles.forEach((entity, i) => {
            if (!replica?.isAlive(entity) || !replica.has(entity, Position)) return;
            const p = /** @type {{ x: number, y: number }} */ (replica.get(entity, Position));
            positions[2 * i] = p.x;
            positions[2 * i + 1] = p.y;
        });
    }
    scope.postMessage({ type: 'sample', id, tick: replica?.replicaTick ?? 0, positions });
}

scope.addEventListener('message', async (event) => {
    const message = event.data;
    try {
        if (message.type === 'init') {
            const tessera = await init();
            replica = tessera.createWorld();
            renderer = new Renderer(/** @type {OffscreenCanvas} */ (message.canvas), message.path);
            scope.postMessage({ type: 'ready' });
        } else if (message.type === 'delta') {
            applyAndDraw(message.bytes, message.epoch);
        } else if (message.type === 'path') {
            renderer?.setPath(/** @type {RenderPath} */ (message.path));
        } else if (message.type === 'off') {
            // The page closed its replicator: the picture goes black until a keyframe comes.
            renderer?.setPath(renderer.path);
        } else if (message.type === 'sample') {
            sample(message.id, message.handles);
        }
    } catch (error) {
        report(error);
    }
});
