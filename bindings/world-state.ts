/**
 * `WorldState`: the world as a whole, the part of `World`'s API that takes or changes its whole
 * state at once: as bytes (snapshot, hash, deltas), over time (checkpoints and rewind, a
 * replicator), and its upkeep (stats, validate, reclaiming archetypes). `World` extends it, so
 * these are `world.snapshot()` and the rest; each method takes its world as `this: World` and
 * delegates to the module of its concept, as `World`'s own methods do. Not a class to use on
 * its own: `createWorld()` makes worlds.
 *
 * @module
 */
import { TesseraError } from './errors.js';
import { Replicator, type ReplicatorOptions } from './replicate.js';
import { checkpoint, rewind, stopRollback } from './rollback.js';
import { applyDelta, hash, snapshot } from './snapshot.js';
import type { World } from './world.js';
import { readStats, type WorldStats } from './world-stats.js';

/** What a world does as a whole: see {@link World}, which extends it. */
export abstract class WorldState {
    /**
     * The whole world as bytes (docs/format.md): entities with their handles, components and
     * values, sparse components, relations and their pairs. `createWorld({ snapshot })` makes
     * it again. Change-detection state, queries, subscriptions and systems are not included.
     * Not inside a loop over the world (its deferred changes are in no state yet).
     * @returns a fresh copy: keep it as long as you like.
     */
    snapshot(this: World): Uint8Array {
        return snapshot(this);
    }

    /**
     * A 64-bit hash of the world's state: XXH64 (seed 0) of its snapshot's body (the bytes
     * after the 16-byte header), computed without writing the snapshot. Worlds with equal
     * snapshots have equal hashes, so peers of a deterministic simulation (lockstep, rollback)
     * compare it to find the first tick they part. It walks the whole world (about as long as
     * one pass over every column; `npm run bench:snapshot` measures it). Not inside a loop
     * over the world, as `snapshot()`.
     */
    hash(this: World): bigint {
        return hash(this);
    }

    /**
     * Takes a checkpoint of the world as it is now, for {@link World.rewind}: rollback netcode
     * takes one every simulated frame. The world keeps the latest `checkpoints` of them
     * (a world option, default 16). The first copies the world's state (its "shadow", about the
     * size of its component data) and makes every component with fields change-tracked; each
     * one after costs what changed since the previous. Not inside a loop over the world.
     * @returns its number: 1 for the first, then one more than the newest kept (after
     * `rewind(k)`, the next is k + 1).
     */
    checkpoint(this: World): number {
        return checkpoint(this);
    }

    /**
     * Returns the world exactly to its state at a kept checkpoint: the same entities and
     * handles, values, sparse components, pairs and their order, the order of rows and of the
     * free queue, so what follows spawns the handles it spawned the first time and
     * `snapshot()` / `hash()` equal those taken at the checkpoint. Costs what changed since.
     * The checkpoint stays kept; newer ones are dropped. Queries, subscriptions, systems and
     * replicators see the rewind as changes, once: what it puts back in another place counts
     * as added, a value written back as changed, what it takes away as removed. Writes through
     * column views are rewound when marked (a query's `writes`, `chunk.markChanged`), as for
     * replication. Components registered since that nothing uses any more are unregistered
     * (their next use registers them again, under the same ids). Not inside a loop over the
     * world; `NO_CHECKPOINT` when the number is not kept (nothing changes).
     */
    rewind(this: World, checkpoint: number): void {
        rewind(this, checkpoint);
    }

    /**
     * Drops every checkpoint and the shadow, and ends the change tracking the first checkpoint
     * started (components other consumers track stay tracked). `reclaimArchetypes()` drops the
     * checkpoints too when it frees an archetype; a component first used after a checkpoint joins
     * them (and a rewind to before its first use takes its registration back when nothing uses
     * it any more).
     */
    stopRollback(this: World): void {
        stopRollback(this);
    }

    /**
     * A replicator: the sending side of replication. It encodes what changed in this world
     * since a replica's acknowledged tick into one buffer (docs/format.md, "Deltas"), walking
     * only what changed; `replica.applyDelta(bytes)` makes another world (a client, a worker, a
     * replay) equal to this one. See {@link Replicator} and {@link Replicator.peer}.
     *
     * @example
     * const replicator = world.replicator();
     * const peer = replicator.peer();
     * // every frame, on the source:
     * const delta = peer.encode();
     * channel.send(delta.bytes.slice());
     * // on the replica, then acknowledged back:
     * replica.applyDelta(bytes);
     * peer.ack(replica.replicaTick);
     */
    replicator(this: World, options: ReplicatorOptions = {}): Replicator {
        return new Replicator(this, options);
    }

    /**
     * Applies a delta or keyframe from a {@link Replicator} (of this world's components, by
     * name: a keyframe registers those this world lacks). Bad bytes throw `BAD_DELTA`,
     * `SNAPSHOT_VERSION` or `DELTA_SCHEMA`, a delta whose baseline this world lacks throws
     * `DELTA_BASELINE` (ask the source for a keyframe: acknowledge 0); then nothing changed.
     * Entities are placed at the source's handles. Not inside a loop over the world.
     * @returns false when the delta is not newer than {@link World.replicaTick} (late or
     *   repeated; nothing changed), true when applied. Deltas come from the replicator whose
     *   keyframe this world holds (another's throw `DELTA_BASELINE`); another replicator's
     *   keyframe applies whatever the tick (a world kept across a server's restart).
     */
    applyDelta(this: World, bytes: Uint8Array): boolean {
        return applyDelta(this, bytes);
    }

    /** Counters: entities, archetypes, chunks, bytes, ticks. */
    stats(this: World): WorldStats {
        return readStats(this);
    }

    /** Checks every storage invariant of the C core; throws `CORRUPT` when one is broken. */
    validate(this: World): void {
        const operation = 'world.validate';
        this.check(this.heap.exports.tes_world_validate(this.live(operation)), operation);
    }

    /**
     * Frees every archetype that holds no entity (the empty set's aside), with its cached
     * transitions; queries forget it. A game that makes many component sets for a while (random
     * loadouts, status effects, a level's own types) otherwise keeps one archetype per set it
     * ever made, and every query walks each one it matches. Call it where a pause costs nothing
     * (a level change, a loading screen): it takes time in proportion to the archetypes, their
     * cached transitions and the queries' matches. When it frees any, the checkpoints go (they
     * name archetypes). Not inside a loop over a query (`INVALID_ARGUMENT`, nothing freed).
     * @returns how many archetypes were freed.
     */
    reclaimArchetypes(this: World): number {
        const operation = 'world.reclaimArchetypes';
        const heap = this.heap;
        const result = heap.exports.tes_archetypes_reclaim(this.live(operation), heap.scratch);
        if (result === heap.results.INVALID_ARGUMENT) {
            throw new TesseraError('INVALID_ARGUMENT', operation, 'called inside a loop over a query: call it between loops');
        }
        this.check(result, operation);
        return heap.u32At(heap.scratch);
    }
}
