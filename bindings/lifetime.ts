/**
 * Lifetimes of what holds memory in the C core: a world, its queries (and so subscriptions),
 * its replicators. `world.destroy()`, `query.close()`, `subscription.close()` and
 * `replicator.close()` free them at once; a `FinalizationRegistry` per kind frees what the
 * program dropped without doing so. The registries are a backstop, not a substitute: they run
 * late (after a garbage collection, if ever), and until then a dropped consumer keeps the
 * change history it has not seen.
 *
 * The rules the finalizers keep:
 * - A held value never references the object it is registered for (that would keep it alive):
 *   it holds the world's {@link WorldLink} and the C pointers, nothing else.
 * - A world and its queries may become unreachable together, and their finalizers then run in
 *   any order: a query's or replicator's finalizer checks `link.pointer`, which is 0 once the
 *   world was destroyed (by `destroy()` or by its own finalizer), and then does nothing.
 * - `close()` unregisters before it frees, so nothing is freed twice.
 * - What another object frees is not registered: a system's query (the world's scheduler
 *   holds it) and a replicator's scope query (freed after the replicator, which uses it).
 *
 * @module
 */
import type { Heap } from './heap.js';
import type { Pointer } from './load.js';

/**
 * What a world's finalizer needs, shared with the finalizers of its queries and replicators.
 * It references no JS object of the world, so holding it keeps nothing alive.
 */
export class WorldLink {
    /** The `tes_world_t *`; 0 once the world was destroyed. */
    pointer: Pointer;
    readonly heap: Heap;
    /**
     * Iteration blocks lent to the world's live iterations: they go back to the heap's pool
     * when the world goes, live iterations or not.
     */
    readonly lentBlocks: Pointer[] = [];
    /**
     * The world's live runs: each holds the module's run reserve (Heap.beginRun) until it
     * ends, or until the world goes (destroyed, or collected with a run left live).
     */
    private liveRuns = 0;

    constructor(heap: Heap, pointer: Pointer) {
        this.heap = heap;
        this.pointer = pointer;
    }

    /** A run of the world starts (see Heap.beginRun). */
    beginRun(operation: string): void {
        this.heap.beginRun(operation);
        this.liveRuns++;
    }

    /** A run of the world ended, or was abandoned with its world. */
    endRun(): void {
        if (this.liveRuns === 0) return;
        this.liveRuns--;
        this.heap.endRun();
    }

    /** Frees the C world and gives its lent iteration blocks back. Idempotent. */
    destroy(): void {
        if (this.pointer === 0) return;
        while (this.liveRuns > 0) this.endRun();
        this.heap.exports.tes_world_destroy(this.pointer);
        this.pointer = 0;
        for (const block of this.lentBlocks) this.heap.returnIterBlock(block);
        this.lentBlocks.length = 0;
    }
}

const worlds = new FinalizationRegistry<WorldLink>((link) => link.destroy());

interface QueryHeld {
    readonly link: WorldLink;
    readonly pointer: Pointer;
}

const queries = new FinalizationRegistry<QueryHeld>(({ link, pointer }) => {
    // tes_query_destroy leaves a query alone while one of its runs is live (possible only
    // when the world itself is unreachable: its finalizer frees everything then).
    if (link.pointer !== 0) link.heap.exports.tes_query_destroy(link.pointer, pointer);
});

interface ReplicatorHeld {
    readonly link: WorldLink;
    readonly pointer: Pointer;
    /** Its scope query (0: none), freed after it: the replicator reads it until then. */
    readonly scope: Pointer;
}

const replicators = new FinalizationRegistry<ReplicatorHeld>(({ link, pointer, scope }) => {
    if (link.pointer === 0) return;
    link.heap.exports.tes_replicator_destroy(pointer);
    if (scope !== 0) link.heap.exports.tes_query_destroy(link.pointer, scope);
});

/** Frees the world's C memory if the program drops it without `destroy()`. */
export function watchWorld(world: object, link: WorldLink): void {
    worlds.register(world, link, world);
}

/** Frees the query's C memory (if its world still exists) if the program drops it without `close()`. */
export function watchQuery(query: object, link: WorldLink, pointer: Pointer): void {
    queries.register(query, { link, pointer }, query);
}

/** Frees the replicator and its scope query if the program drops it without `close()`. */
export function watchReplicator(replicator: object, link: WorldLink, pointer: Pointer, scope: Pointer): void {
    replicators.register(replicator, { link, pointer, scope }, replicator);
}

/** The world was destroyed: its finalizer must not run. */
export function forgetWorld(world: object): void {
    worlds.unregister(world);
}

/** The query was closed: its finalizer must not run. */
export function forgetQuery(query: object): void {
    queries.unregister(query);
}

/** The replicator was closed: its finalizer must not run. */
export function forgetReplicator(replicator: object): void {
    replicators.unregister(replicator);
}
