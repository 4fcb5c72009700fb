/**
 * A world's counters (`tes_world_stats_t`), read at the offsets of bindings/abi.ts.
 *
 * @module
 */
import { WORLD_STATS } from './abi.js';
import type { World } from './world.js';

/** Counters of a world (`tes_world_stats_t`). */
export interface WorldStats {
    readonly entityCount: number;
    readonly entityCapacity: number;
    readonly freeQueueLength: number;
    readonly componentCount: number;
    readonly archetypeCount: number;
    readonly chunkCount: number;
    readonly pooledChunkCount: number;
    readonly chunkBytes: number;
    readonly edgeCount: number;
    readonly graphGeneration: number;
    /** Bytes the world holds from its allocator. */
    readonly bytesAllocated: number;
    /** The tick the next write is stamped with. */
    readonly changeTick: number;
    /** `tick()` calls so far. */
    readonly frame: number;
    readonly queryCount: number;
    /** Deferred commands dropped at a flush because their entity was gone. */
    readonly commandsSkipped: number;
    /** Checkpoints kept (`world.checkpoint()`). */
    readonly checkpointCount: number;
    /** Bytes they hold: the states of what changed between them. */
    readonly checkpointBytes: number;
    /** Bytes of the shadow: the state at the newest checkpoint. */
    readonly shadowBytes: number;
}

/** world.stats: one tes_world_stats call, copied into a plain object. */
export function readStats(world: World): WorldStats {
    const operation = 'world.stats';
    const heap = world.heap;
    const out = heap.scratch;
    world.check(heap.exports.tes_world_stats(world.live(operation), out), operation);
    const u32 = (offset: number) => heap.u32At(out + offset);
    const u64 = (offset: number) => heap.u64At(out + offset);
    return {
        entityCount: u32(WORLD_STATS.entity_count),
        entityCapacity: u32(WORLD_STATS.entity_capacity),
        freeQueueLength: u32(WORLD_STATS.free_queue_length),
        componentCount: u32(WORLD_STATS.component_count),
        archetypeCount: u32(WORLD_STATS.archetype_count),
        chunkCount: u32(WORLD_STATS.chunk_count),
        pooledChunkCount: u32(WORLD_STATS.pooled_chunk_count),
        chunkBytes: u32(WORLD_STATS.chunk_bytes),
        edgeCount: u32(WORLD_STATS.edge_count),
        graphGeneration: u32(WORLD_STATS.graph_generation),
        bytesAllocated: u64(WORLD_STATS.bytes_allocated),
        changeTick: u64(WORLD_STATS.change_tick),
        frame: u64(WORLD_STATS.frame),
        queryCount: u32(WORLD_STATS.query_count),
        commandsSkipped: u32(WORLD_STATS.commands_skipped),
        checkpointCount: u32(WORLD_STATS.checkpoint_count),
        checkpointBytes: u64(WORLD_STATS.checkpoint_bytes),
        shadowBytes: u64(WORLD_STATS.shadow_bytes),
    };
}
