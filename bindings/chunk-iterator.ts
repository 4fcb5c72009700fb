/**
 * `ChunkIterator`: one run of a query, chunk by chunk, through the C core's `tes_iter_t` or as a
 * replay of the query's latest run; and the world's stack of live runs, which `tick()` and
 * `destroy()` end.
 *
 * @module
 */
import { ITER, WORLD } from './abi.js';
import { TesseraError } from './errors.js';
import type { Pointer } from './load.js';
import { Chunk, type MarkList } from './chunk.js';
import type { Query } from './query.js';
import type { World } from './world.js';

/** The iterator result at the end of every run. */
const DONE: IteratorResult<Chunk, undefined> = Object.freeze({ done: true, value: undefined });

/**
 * One iteration of a query. `for...of` drives it; leaving the loop early ends it. A chunk is
 * valid until the iterator moves on. `world.tick()` ends an iteration still live (an
 * abandoned iterator, or the loop `tick()` was called from, unless from inside a system: that
 * tick is refused): its `next()` is done from then on. `world.destroy()` ends it too: its
 * `next()` throws `DESTROYED` from then on.
 *
 * The outermost run of a plain query records its chunks (and the views they hand out); while
 * no row or chunk has moved since (`tes_world_layout` is the same), the next outermost run
 * replays that list: no call into wasm per chunk and no new views, which is most of what a
 * run costs when chunks are few and small. Replaying runs defer structural calls through
 * `tes_defer_begin`/`tes_defer_end`, as a C iteration does.
 */
export class ChunkIterator implements IterableIterator<Chunk> {
    private readonly query: Query;
    /** The C iterator (`tes_iter_t`), or 0 when replaying `replay`. */
    private block: Pointer = 0;
    private replay: readonly Chunk[] | undefined;
    /** The chunks this run visits, kept as the query's cache when the run completes. */
    private recording: Chunk[] | undefined;
    private layout = 0;
    private position = 0;
    /** Hand-marked rows of the current chunk per component id (see the constructor). */
    private readonly marks: Map<number, MarkList>;
    private current: Chunk | undefined;
    private done = false;
    /**
     * The result `next()` hands out for every chunk, filled again each time: `for...of` reads
     * it at once, and a new object per chunk was a tenth of a replayed run (its garbage).
     */
    private readonly result = { done: false as const, value: undefined as unknown as Chunk };
    /**
     * False for the query helpers' runs: their chunks never reach the caller, so the query's
     * `writes` are not marked (a read must not report every entity changed).
     */
    private readonly marking: boolean;

    /** @internal */
    constructor(query: Query, world: Pointer, operation: string, marking: boolean) {
        this.query = query;
        this.marking = marking;
        const owner = query.world;
        const exports = owner.heap.exports;
        owner.link.beginRun(operation);
        try {
            this.start(query, world, operation);
        } catch (error) {
            owner.link.endRun();
            throw error;
        }
        // A nested run of the same (plain) query must not flush the outer run's marks into its
        // own chunk: only a run started while none is live uses the query's reusable lists.
        this.marks = query.runs === 0 ? query.marks : new Map();
        query.runs++;
        owner.iterations[owner.liveIterations++] = this;
    }

    /** Starts the run in the C core, or as a replay of the query's latest. */
    private start(query: Query, world: Pointer, operation: string): void {
        const owner = query.world;
        const exports = owner.heap.exports;
        if (!query.consumer && query.runs === 0 && query.stable) {
            // The world's layout counter, read where the core keeps it (no call).
            this.layout = owner.heap.u32[(world + WORLD.layout) >>> 2]!;
            if (query.cachedChunks !== undefined && query.cachedLayout === this.layout) {
                this.replay = query.cachedChunks;
                owner.check(exports.tes_defer_begin(world), operation);
            } else {
                this.recording = [];
            }
        }
        if (this.replay === undefined) {
            this.block = takeIterBlock(owner, operation);
            const result = exports.tes_query_iter(world, query.pointer, this.block);
            if (result !== 0) {
                returnIterBlock(owner, this.block);
                owner.check(result, operation);
            }
        }
    }

    [Symbol.iterator](): this {
        return this;
    }

    next(): IteratorResult<Chunk, undefined> {
        if (this.done) return this.ended();
        try {
            this.finishChunk();
        } catch (error) {
            this.end();
            throw error;
        }
        let chunk: Chunk;
        const replay = this.replay;
        if (replay !== undefined) {
            if (this.position === replay.length) {
                this.end();
                return DONE;
            }
            chunk = replay[this.position++]!;
            chunk.revive();
        } else {
            if (this.query.world.heap.exports.tes_iter_next(this.block) === 0) {
                // Complete: the next run may replay it (tes_iter_next has applied deferred
                // commands by now; if they moved rows, the layout no longer matches).
                if (this.recording !== undefined) {
                    this.query.cachedChunks = this.recording;
                    this.query.cachedLayout = this.layout;
                }
                this.end();
                return DONE;
            }
            chunk = new Chunk(this.query, this.block, this.marks);
            this.recording?.push(chunk);
        }
        this.current = chunk;
        this.result.value = chunk;
        return this.result;
    }

    /** Ends the iteration early (what `break` does): marks, then applies deferred changes. */
    return(): IteratorResult<Chunk, undefined> {
        if (!this.done) {
            try {
                this.finishChunk();
            } finally {
                this.end();
            }
        }
        return DONE;
    }

    /**
     * The current chunk expires, and what it wrote is marked. Small, so that V8 inlines it into
     * `next()`: most runs mark nothing (measured: as a call it was 3% of a run over 27 chunks).
     */
    private finishChunk(): void {
        const chunk = this.current;
        if (chunk === undefined) return;
        this.current = undefined;
        chunk.expire();
        if (this.marking && (this.marks.size !== 0 || this.query.writeIds.length !== 0)) this.markChunk(chunk);
    }

    /** Marks what a chunk wrote: hand-marked rows, then the query's `writes`. */
    private markChunk(chunk: Chunk): void {
        const query = this.query;
        const world = query.world;
        const heap = world.heap;
        const mark = (id: number, rows: Pointer, count: number, operation: string) =>
            world.check(heap.exports.tes_chunk_mark_changed(world.pointer, chunk.archetype, chunk.index, id, rows, count), operation);
        for (const [id, marks] of this.marks) {
            if (marks.whole) mark(id, chunk.rowsPointer, chunk.rowCount, 'chunk.markChanged');
            else if (marks.length) {
                mark(id, heap.tempU32(marks.rows.subarray(0, marks.length), 'chunk.markChanged'), marks.length, 'chunk.markChanged');
            }
            marks.clear();
        }
        for (const id of query.writeIds) mark(id, chunk.rowsPointer, chunk.rowCount, 'query writes');
    }

    /** Ends the run in the C core (applying deferred commands when it is the last). */
    private end(): void {
        if (this.done) return;
        this.done = true;
        this.current?.expire();
        this.current = undefined;
        this.query.runs--;
        const world = this.query.world;
        // Runs mostly end newest first: then this is the top of the stack; else the newer ones
        // move down a slot, keeping the order.
        const live = world.iterations;
        const top = --world.liveIterations;
        if (live[top] !== this) {
            const at = live.indexOf(this);
            live.copyWithin(at, at + 1, top + 1);
        }
        live[top] = undefined;
        const exports = world.heap.exports;
        if (this.replay !== undefined) exports.tes_defer_end(world.pointer);
        else {
            exports.tes_iter_fini(this.block); // harmless after tes_iter_next ended the run
            returnIterBlock(world, this.block);
        }
        world.link.endRun();
    }

    /**
     * @internal The world is being destroyed: the run ends with it, without a call into C (the
     * C world, its run and its deferred commands go whole; the block goes back with the
     * world's). From now on the iterator and its chunks throw `DESTROYED`.
     */
    abandon(): void {
        if (this.done) return;
        this.done = true;
        this.current?.expire();
        this.current = undefined;
        this.query.runs--;
        this.query.world.link.endRun();
    }

    /** `next()` after the end: done (its end, break, tick()), or DESTROYED (world.destroy()). */
    private ended(): IteratorResult<Chunk, undefined> {
        if (this.query.world.pointer === 0) throw new TesseraError('DESTROYED', 'iterator.next', 'the world was destroyed');
        return DONE;
    }
}

/**
 * Ends every live iteration of the world, newest first, as `break` would: its current chunk is
 * marked and expires, and the deferred changes are applied when the last one ends. Every one is
 * ended even when one fails; then the first failure is thrown.
 */
export function endIterations(world: World): void {
    let failure: unknown;
    let failed = false;
    for (const iteration of world.iterations.slice(0, world.liveIterations).reverse()) {
        try {
            iteration!.return();
        } catch (error) {
            if (!failed) failure = error;
            failed = true;
        }
    }
    if (failed) throw failure;
}

/**
 * A `tes_iter_t` block for a run, from the module's pool. It is lent: if the world goes before
 * the run ends, the block goes back to the pool with it.
 */
function takeIterBlock(world: World, operation: string): Pointer {
    const block = world.heap.takeIterBlock(operation);
    world.link.lentBlocks.push(block);
    return block;
}

/** A run ended: its block goes back to the module's pool. */
function returnIterBlock(world: World, block: Pointer): void {
    const lent = world.link.lentBlocks;
    const at = lent.lastIndexOf(block);
    if (at < 0) return; // the world went first and gave it back
    lent[at] = lent[lent.length - 1]!;
    lent.pop();
    world.heap.returnIterBlock(block);
}
