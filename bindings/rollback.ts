/**
 * Rollback: `world.checkpoint()`, `world.rewind(checkpoint)`, `world.checkpoints` and
 * `world.stopRollback()`. The C core keeps the checkpoints and writes a rewound state back, at a
 * cost that follows what changed (src/rollback.h); JS checks the argument, names the errors, and
 * forgets the registrations the core took back (what it learned about archetypes, some of which
 * a rewind frees, it keeps with the core's access epoch, which the rewind moves).
 *
 * @module
 */
import { WORLD } from './abi.js';
import { TesseraError, describeValue } from './errors.js';
import { checkOutsideRun } from './snapshot.js';
import type { World } from './world.js';

/** The checkpoints a world keeps: numbers `oldest` to `newest`, each one a possible rewind. */
export interface CheckpointRange {
    readonly oldest: number;
    readonly newest: number;
}

/** world.checkpoint: tes_checkpoint's number. */
export function checkpoint(world: World): number {
    const operation = 'world.checkpoint';
    const pointer = world.live(operation);
    const heap = world.heap;
    checkOutsideRun(world, heap.exports.tes_checkpoint(pointer, heap.scratch), operation);
    return heap.u32At(heap.scratch);
}

/** world.checkpoints: the kept range, or null when none is kept. */
export function checkpoints(world: World): CheckpointRange | null {
    const operation = 'world.checkpoints';
    const pointer = world.live(operation);
    const heap = world.heap;
    const out = heap.scratch;
    world.check(heap.exports.tes_checkpoints(pointer, out, out + 4), operation);
    const oldest = heap.u32At(out);
    return oldest === 0 ? null : { oldest, newest: heap.u32At(out + 4) };
}

/** world.rewind: tes_rewind, then JS forgets the archetypes it knew. */
export function rewind(world: World, checkpoint: number): void {
    const operation = 'world.rewind';
    const pointer = world.live(operation);
    if (!Number.isInteger(checkpoint) || checkpoint < 1 || checkpoint > 0xffffffff) {
        throw new TesseraError(
            'INVALID_ARGUMENT',
            operation,
            `checkpoint: expected a number world.checkpoint() returned, got ${describeValue(checkpoint)}`,
        );
    }
    const heap = world.heap;
    const result = heap.exports.tes_rewind(pointer, checkpoint);
    if (result === heap.results.NO_CHECKPOINT) {
        const kept = checkpoints(world);
        const which = kept === null ? 'none is kept' : `kept: ${kept.oldest} to ${kept.newest}`;
        throw new TesseraError('NO_CHECKPOINT', operation, `checkpoint ${checkpoint} is not kept (${which})`);
    }
    checkOutsideRun(world, result, operation);
    world.registry.takenBack(heap.u32[(pointer + WORLD.component_count) >>> 2]!);
}

/** world.stopRollback: tes_rollback_stop. */
export function stopRollback(world: World): void {
    const operation = 'world.stopRollback';
    checkOutsideRun(world, world.heap.exports.tes_rollback_stop(world.live(operation)), operation);
}
