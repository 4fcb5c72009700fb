/**
 * A world's options and its making: `createWorld(options)` checked key by key, written into a
 * `tes_world_desc_t`, and the C world created (or restored from snapshot bytes).
 *
 * @module
 */
import { LIMITS, WORLD_DESC } from './abi.js';
import { TesseraError, describeValue } from './errors.js';
import { checkCount } from './entities.js';
import type { Heap } from './heap.js';
import type { Pointer } from './load.js';
import { checkKeys } from './options.js';
import { restoreWorld } from './snapshot.js';

/** Options of a world; every field is optional. */
export interface WorldOptions {
    /** Bytes of one chunk block (default 65536, rounded up to a multiple of 64, at least 1024). */
    readonly chunkBytes?: number;
    /**
     * Freed entity slots are reused only while more than this many wait (default 4096, at
     * least 1), which delays a stale handle aliasing a new entity (see the README).
     */
    readonly minFreeIndices?: number;
    /**
     * Debug mode: every view handed out (columns, `chunk.entities`, `chunk.rows`,
     * `delta.bytes`) is wrapped so that touching one after memory growth detached it throws
     * `VIEW_DETACHED`, and after the world was destroyed `DESTROYED`, instead of reading
     * `undefined` or freed memory. Slow; for development and tests.
     */
    readonly debug?: boolean;
    /**
     * Bytes from {@link World.snapshot}: the new world is that world again, with the same
     * entity handles, components, values, sparse components and pairs (docs/format.md).
     * Components are matched by name when this world first uses them, and must have the same
     * schema. Truncated, corrupted or foreign bytes throw `BAD_SNAPSHOT` (another format
     * version: `SNAPSHOT_VERSION`) and make no world.
     */
    readonly snapshot?: Uint8Array;
    /**
     * How many checkpoints {@link World.checkpoint} keeps: how far {@link World.rewind} can go
     * back (default 16, at most 1024).
     */
    readonly checkpoints?: number;
}

/** The options a world knows (createWorld's `wasm` is the module's, passed along whole). */
const WORLD_OPTIONS = ['chunkBytes', 'minFreeIndices', 'checkpoints', 'debug', 'snapshot', 'wasm'] as const;

/** A misspelt option must not pass silently: every key must be one the world knows. @internal */
export function checkWorldOptions(options: unknown, operation: string): void {
    checkKeys(operation, 'world options', options, WORLD_OPTIONS);
    const debug = (options as WorldOptions).debug;
    if (debug !== undefined && typeof debug !== 'boolean') {
        throw new TesseraError('INVALID_ARGUMENT', operation, `debug must be true or false, got ${describeValue(debug)}`);
    }
}

/**
 * The C world of checked options: `tes_world_desc_t` written into the scratch block, then
 * tes_world_create, or tes_world_restore with the snapshot bytes. Throws when C refuses.
 * @internal
 */
export function createCWorld(heap: Heap, options: WorldOptions, operation: string): Pointer {
    const desc = heap.scratch;
    heap.u8.fill(0, desc, desc + WORLD_DESC.size);
    const u32 = heap.u32;
    // In C, 0 means "the default": here the default is an absent option, and 0 is refused
    // rather than silently meaning something else.
    u32[(desc + WORLD_DESC.chunk_bytes) >>> 2] = positive(options.chunkBytes, operation, 'chunkBytes');
    u32[(desc + WORLD_DESC.min_free_indices) >>> 2] = positive(options.minFreeIndices, operation, 'minFreeIndices');
    u32[(desc + WORLD_DESC.checkpoints) >>> 2] = positive(options.checkpoints, operation, 'checkpoints');
    const out = desc + ((WORLD_DESC.size + 7) & ~7);
    if (options.snapshot !== undefined) return restoreWorld(heap, desc, out, options.snapshot, operation);
    const result = heap.exports.tes_world_create(desc, out);
    if (result === heap.results.INVALID_ARGUMENT && (options.checkpoints ?? 0) > LIMITS.max_checkpoints) {
        throw new TesseraError(
            'INVALID_ARGUMENT',
            operation,
            `checkpoints must be at most ${LIMITS.max_checkpoints}, got ${options.checkpoints}`,
        );
    }
    if (result !== 0) throw new TesseraError(heap.codes[result] ?? 'CORRUPT', operation, heap.problem(result));
    return heap.u32At(out);
}

/** An optional option that must be an integer in 1..2^32-1; 0 (the C default) when absent. */
function positive(value: unknown, operation: string, name: string): number {
    if (value === undefined) return 0;
    if (checkCount(value, operation, name) === 0) {
        throw new TesseraError('INVALID_ARGUMENT', operation, `${name} must be at least 1 (leave it out for the default)`);
    }
    return value as number;
}
