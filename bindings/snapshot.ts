/**
 * A world as bytes: snapshots (`world.snapshot()`, `createWorld({ snapshot })`, `world.hash()`) and the
 * receiving side of replication (`world.applyDelta`). The formats are docs/format.md; the C
 * core reads and writes them, and refuses bad bytes whole.
 *
 * @module
 */
import { TesseraError, describeValue } from './errors.js';
import type { Heap } from './heap.js';
import type { Pointer } from './load.js';
import type { World } from './world.js';

/** world.snapshot: a fresh copy of the world's bytes. */
export function snapshot(world: World): Uint8Array {
    const operation = 'world.snapshot';
    const pointer = world.live(operation);
    const heap = world.heap;
    const out = heap.scratch;
    checkOutsideRun(world, heap.exports.tes_snapshot(pointer, out, out + 4), operation);
    const bytes = heap.u32At(out);
    return heap.u8.slice(bytes, bytes + heap.u32At(out + 4));
}

/** world.hash: XXH64 of the snapshot's body, computed in the core without writing it. */
export function hash(world: World): bigint {
    const operation = 'world.hash';
    const pointer = world.live(operation);
    const heap = world.heap;
    const out = heap.scratch;
    checkOutsideRun(world, heap.exports.tes_world_hash(pointer, out), operation);
    return heap.data.getBigUint64(out, true);
}

/** world.applyDelta: false when the delta is not newer than the replica's tick. */
export function applyDelta(world: World, bytes: Uint8Array): boolean {
    const operation = 'world.applyDelta';
    const pointer = world.live(operation);
    if (!(bytes instanceof Uint8Array)) {
        throw new TesseraError('INVALID_ARGUMENT', operation, `bytes: expected a Uint8Array, got ${describeValue(bytes)}`);
    }
    // The C core refuses too, but only after the bytes were copied into wasm memory: inside a
    // run that copy would take from the run's reserve for nothing.
    if (world.liveIterations > 0) throw insideRun(operation);
    const heap = world.heap;
    const size = bytes.length;
    // The bytes may be a view of this module's memory (delta.bytes of a source world here).
    const block = heap.tempArray(bytes, 'u8', operation);
    const out = heap.scratch;
    heap.u32[out >>> 2] = 0;
    const result = heap.exports.tes_delta_apply(pointer, block, size, out);
    // A keyframe may have registered components: definitions claim them by name.
    world.registry.restored = true;
    world.check(result, operation);
    return heap.u8[out] !== 0;
}

/**
 * world.check for a call the C core refuses while the world defers (snapshot, replicator.encode:
 * a loop's deferred changes are in no state yet). C owns that rule; JS only says what its
 * INVALID_ARGUMENT meant when a run of the world is live.
 */
export function checkOutsideRun(world: World, result: number, operation: string): void {
    if (result === world.heap.results.INVALID_ARGUMENT && world.liveIterations > 0) throw insideRun(operation);
    world.check(result, operation);
}

function insideRun(operation: string): TesseraError {
    return new TesseraError('INVALID_ARGUMENT', operation, 'not inside a loop over the world: its deferred changes are not applied yet');
}

/** tes_world_restore with the description at `desc` (filled) and the bytes copied into wasm. */
export function restoreWorld(heap: Heap, desc: Pointer, out: Pointer, bytes: Uint8Array, operation: string): Pointer {
    if (!(bytes instanceof Uint8Array)) {
        throw new TesseraError('INVALID_ARGUMENT', operation, `snapshot: expected a Uint8Array, got ${describeValue(bytes)}`);
    }
    const size = bytes.length;
    // The bytes may be a view of this module's memory: newArray copies them safely.
    const copy = heap.newArray(bytes, 'u8', operation);
    try {
        const result = heap.exports.tes_world_restore(desc, copy, size, out);
        if (result !== 0) {
            const code = heap.codes[result]!;
            throw new TesseraError(code, operation, `snapshot: ${heap.messages[result]}`);
        }
        return heap.u32At(out);
    } finally {
        heap.exports.tes_free(copy);
    }
}
