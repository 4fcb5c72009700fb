// Lifetimes: what happens to every object the API hands out once its world is destroyed,
// iterations a program leaves live (abandoned iterators), the finalizers that free forgotten
// worlds, queries, subscriptions and replicators, inputs that are views of wasm memory itself,
// and the guards debug worlds put on every view.
import { readFileSync } from 'node:fs';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, test } from 'vitest';

import { component, createWorld, init, tag, type Chunk, type ChunkIterator, type TesseraModule, type World } from '../../dist/index.js';
import { expectError, sorted, worldPerTest } from './support.js';

const newWorld = worldPerTest();

const Position = component('Position', { x: 'f32', y: 'f32' });
const Health = component('Health', { value: 'i32' });
const Filler = tag('Filler');

// The garbage collector, for the finalizer tests (Vitest gives no --expose-gc flag).
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** Collects garbage and lets the finalization callbacks run (they run as tasks after a GC). */
async function collect(): Promise<void> {
    for (let round = 0; round < 4; round++) {
        gc();
        await new Promise((resolve) => setTimeout(resolve, 0));
    }
}

/** The internals of a module that these tests look at. */
interface HeapInternals {
    exports: Record<string, unknown> & { tes_malloc(bytes: number): number; tes_free(pointer: number): void };
    readonly pooledIterBlocks: number;
}

function heapOf(module: TesseraModule): HeapInternals {
    return (module as unknown as { heap: HeapInternals }).heap;
}

const wasmBytes = readFileSync(new URL('../../dist/tessera.wasm', import.meta.url));

/**
 * A module of its own (its memory is this test's alone), whose allocations from JS are counted:
 * `outstanding` holds the blocks the bindings allocated and have not freed. With `growFirst`,
 * every such allocation grows memory first, as an allocation may: every view of memory made
 * before it is detached, deterministically.
 */
async function instrumentedModule(growFirst = false): Promise<{ module: TesseraModule; outstanding: Set<number> }> {
    await init(); // the package's own module stays the default (the first init({ bytes }) would become it)
    const module = await init({ bytes: wasmBytes });
    const heap = heapOf(module);
    const real = heap.exports;
    const outstanding = new Set<number>();
    heap.exports = {
        ...real,
        tes_malloc(bytes: number): number {
            if (growFirst) module.memory.grow(1);
            const pointer = real.tes_malloc(bytes);
            outstanding.add(pointer >>> 0);
            return pointer;
        },
        tes_free(pointer: number): void {
            outstanding.delete(pointer >>> 0);
            real.tes_free(pointer);
        },
    };
    return { module, outstanding };
}

describe('after world.destroy()', () => {
    test("a delta's bytes and a peer of a replicator left open throw DESTROYED", async () => {
        const world = await newWorld();
        world.spawn(Position({ x: 1 }), Health);
        const replicator = world.replicator();
        const peer = replicator.peer();
        peer.ack(peer.encode().tick); // acknowledged: the next encode releases history first
        const delta = peer.encode();
        expect(delta.bytes.length).toBeGreaterThan(0);
        world.destroy();
        expectError(() => delta.bytes, 'DESTROYED', { operation: 'delta.bytes' });
        expectError(() => peer.encode(), 'DESTROYED', { operation: 'peer.encode' });
        expectError(() => peer.ack(delta.tick), 'DESTROYED', { operation: 'peer.ack' });
        expectError(() => peer.reset(), 'DESTROYED', { operation: 'peer.reset' });
        expectError(() => replicator.encode(), 'DESTROYED', { operation: 'replicator.encode' });
        expectError(() => replicator.peer(), 'DESTROYED', { operation: 'replicator.peer' });
        expect(replicator.closed).toBe(true);
        expect(delta.keyframe).toBe(false); // plain values stay readable
        replicator.close(); // idempotent, touches nothing
        peer.close();
    });

    test('chunks, iterators, queries, subscriptions and systems throw DESTROYED; copies stay', async () => {
        const world = await newWorld({ chunkBytes: 1024 });
        world.spawnMany(300, Position, Health);
        const plain = world.query({ all: [Position] });
        const consumer = world.query({ all: [Position], changed: [Health] });
        const sub = world.subscribe({ added: [Health], removed: [Health] });
        const changes = sub.drain();
        const system = world.system({ query: { all: [Health] }, run() {} });
        let finished: Chunk | undefined;
        for (const chunk of plain) finished = chunk; // a complete run: its chunks expired
        const left = plain.chunks(); // a run left live, on its first chunk
        const current = left.next().value as Chunk;
        const x = current.column(Position, 'x');
        world.destroy();
        for (const chunk of [current, finished!]) {
            expectError(() => chunk.column(Position, 'x'), 'DESTROYED', { operation: 'chunk.column' });
            expectError(() => chunk.entities, 'DESTROYED', { operation: 'chunk.entities' });
            expectError(() => chunk.rows, 'DESTROYED', { operation: 'chunk.rows' });
            expectError(() => chunk.markChanged(Position, 0), 'DESTROYED', { operation: 'chunk.markChanged' });
            expectError(() => chunk.markChanged(Position), 'DESTROYED');
        }
        expectError(() => left.next(), 'DESTROYED', { operation: 'iterator.next' });
        expect(left.return().done).toBe(true); // ending it again is harmless
        expect(x).toBeInstanceOf(Float32Array); // a plain view cannot be guarded (debug worlds do)
        const calls: [string, () => unknown][] = [
            ['query.chunks', () => plain.chunks()],
            ['query.count', () => plain.count()],
            ['query.entities', () => plain.entities()],
            ['query.entities', () => consumer.entities()],
            ['query.fill', () => plain.fill(Position, 'x', 1)],
            ['query.clamp', () => plain.clamp(Position, 'x', 0, 1)],
            ['query.countdown', () => plain.countdown(Position, 'x', 1)],
            ['query.addAll', () => plain.addAll(Filler)],
            ['query.removeAll', () => plain.removeAll(Filler)],
            ['query.despawnAll', () => plain.despawnAll()],
            ['subscription.drain', () => sub.drain()],
            ['subscription.chunks', () => sub.chunks()],
            ['world.replicator', () => world.replicator()],
            ['world.snapshot', () => world.snapshot()],
            ['world.hash', () => world.hash()],
            ['world.applyDelta', () => world.applyDelta(new Uint8Array(8))],
        ];
        for (const [operation, call] of calls) expectError(call, 'DESTROYED', { operation });
        expect([plain.closed, consumer.closed, sub.closed, system.query.closed]).toEqual([true, true, true, true]);
        expect(changes.entities.length).toBe(300); // drained before: a copy, still readable
        plain.close();
        sub.close();
        system.destroy();
    });
});

describe('iterations left live', () => {
    test('world.destroy() ends them: it always succeeds, and their block goes back to the pool', async () => {
        const { module } = await instrumentedModule();
        const heap = heapOf(module);
        const world = module.createWorld();
        world.spawn(Position({ x: 1 }));
        const abandoned = world.query({ all: [Position] }).chunks();
        const chunk = abandoned.next().value as Chunk;
        world.spawn(Position); // deferred by the live iteration
        const pooled = heap.pooledIterBlocks;
        world.destroy();
        expect(world.destroyed).toBe(true);
        expect(heap.pooledIterBlocks).toBe(pooled + 1);
        expectError(() => chunk.column(Position, 'x'), 'DESTROYED');
        expectError(() => abandoned.next(), 'DESTROYED');
        // The module goes on: a new world iterates with the pooled block.
        const next = module.createWorld();
        next.spawn(Position({ x: 2 }));
        expect(next.query({ all: [Position] }).count()).toBe(1);
        next.destroy();
    });

    test('world.tick() ends an abandoned iterator: its changes are applied, next() is done, its chunk expired', async () => {
        const world = await newWorld();
        const first = world.spawn(Position({ x: 1 }), Health);
        const victim = world.spawn(Position);
        const watcher = world.subscribe({ changed: [Position] });
        const movers = world.query({ all: [Position, Health], writes: [Position] });
        const abandoned = movers.chunks();
        const chunk = abandoned.next().value as Chunk;
        chunk.column(Position, 'x')[0] = 5;
        const spawned = world.spawn(Position({ x: 2 }));
        world.despawn(victim);
        expectError(() => world.get(spawned, Position), 'PENDING_ENTITY'); // deferred so far
        expect(world.isAlive(victim)).toBe(true);
        let seen = -1;
        world.system({ query: { all: [Position] }, run: (query) => void (seen = query.count()) });
        world.tick();
        expect(seen).toBe(2); // the systems ran after the deferred changes were applied
        expect(world.get(spawned, Position)).toEqual({ x: 2, y: 0 });
        expect(world.get(first, Position)).toEqual({ x: 5, y: 0 });
        expect(world.isAlive(victim)).toBe(false);
        expect(abandoned.next().done).toBe(true);
        expectError(() => chunk.column(Position, 'x'), 'CHUNK_EXPIRED', { operation: 'chunk.column' });
        expectError(() => chunk.entities, 'CHUNK_EXPIRED');
        expect(watcher.drain().entities).toEqual(new Uint32Array([first])); // the chunk's writes were marked
        // Nothing is deferred any more: structural changes apply at once.
        const after = world.spawn(Position);
        expect(world.get(after, Position)).toEqual({ x: 0, y: 0 });
        expect(() => world.snapshot()).not.toThrow();
        movers.close();
        world.destroy();
    });

    test('a replayed run, a consumer run and a subscription run left live are ended by tick()', async () => {
        const world = await newWorld();
        world.spawnMany(3, Position, Health);
        const plain = world.query({ all: [Position] });
        expect(plain.count()).toBe(3); // recorded: the next run replays it
        const replayed = plain.chunks();
        replayed.next();
        const consumer = world.query({ all: [Position], added: [Health] });
        const consumed = consumer.chunks();
        consumed.next();
        const sub = world.subscribe({ added: [Position] });
        const subRun = sub.chunks();
        subRun.next();
        const later = world.spawn(Position, Health);
        world.tick();
        for (const iterator of [replayed, consumed, subRun]) expect(iterator.next().done).toBe(true);
        expect(world.has(later, Health)).toBe(true);
        expect(plain.count()).toBe(4);
        expect(sorted(sub.drain().entities)).toEqual([later]); // the abandoned run consumed the rest
        expect(sorted(consumer.entities())).toEqual([later]);
        plain.close();
        consumer.close(); // no run is live any more
        sub.close();
    });

    test('tick() called inside a loop (not from a system) ends that loop', async () => {
        const world = await newWorld({ chunkBytes: 1024 });
        world.spawnMany(500, Position);
        const q = world.query({ all: [Position] });
        let visited = 0;
        for (const chunk of q) {
            visited++;
            world.spawn(Position);
            world.tick();
            expectError(() => chunk.column(Position, 'x'), 'CHUNK_EXPIRED');
        }
        expect(visited).toBe(1); // the loop's next next() was done
        expect(world.frame).toBe(1);
        expect(q.count()).toBe(501);
        q.close();
    });

    test('an iteration a system leaves live ends when the system returns; the tick completes', async () => {
        const world = await newWorld();
        world.spawn(Position);
        const spawned: number[] = [];
        world.system({
            query: { all: [Position] },
            run(query, w) {
                query.chunks().next(); // left live
                spawned.push(w.spawn(Health));
            },
        });
        world.tick();
        world.tick();
        expect(world.frame).toBe(2);
        for (const e of spawned) expect(world.has(e, Health)).toBe(true);
    });

    test('tick() from a system is still refused while a loop is live, and changes nothing', async () => {
        const world = await newWorld();
        world.spawn(Position);
        const codes: string[] = [];
        world.system({
            query: { all: [Position] },
            run(query, w) {
                for (const _ of query) {
                    try {
                        w.tick();
                    } catch (error) {
                        codes.push((error as { code: string }).code);
                    }
                    expect(w.frame).toBe(0);
                }
            },
        });
        world.tick();
        expect(codes).toEqual(['QUERY_IN_USE']);
        expect(world.frame).toBe(1);
    });
});

describe('finalizers (a backstop for what the program drops without destroy or close)', () => {
    /** Makes a world, iterates it (completing one run, abandoning another), and forgets it. */
    function iterateAndForget(module: TesseraModule, abandon: boolean): void {
        const world = module.createWorld();
        world.spawn(Position);
        const q = world.query({ all: [Position], added: [Position] });
        for (const chunk of q) chunk.column(Position, 'x');
        if (abandon)
            world
                .query({ all: [Position] })
                .chunks()
                .next();
    }

    test('forgotten worlds that iterated keep no iteration blocks: the pool stays bounded', async () => {
        const { module, outstanding } = await instrumentedModule();
        const heap = heapOf(module);
        iterateAndForget(module, true);
        await collect();
        const baseline = outstanding.size;
        for (let round = 0; round < 10; round++) {
            for (let i = 0; i < 50; i++) iterateAndForget(module, i % 2 === 0);
            await collect();
        }
        // Every block the bindings allocated for those 500 worlds was freed or pooled again: the
        // pool holds at most as many as were live at once, about one round's abandoned runs
        // (25, live until their worlds are collected, and a few the collector has not yet
        // finalized), however many rounds ran (the old per-world pools left 502 behind).
        expect(outstanding.size).toBeLessThanOrEqual(baseline + 50);
        expect(heap.pooledIterBlocks).toBeLessThanOrEqual(50);
    });

    test('the pool holds as many blocks as iterations were live at once', async () => {
        const { module } = await instrumentedModule();
        const heap = heapOf(module);
        const worlds = [module.createWorld(), module.createWorld()];
        const iterators: ChunkIterator[] = [];
        for (const world of worlds) {
            world.spawn(Position);
            for (let i = 0; i < 3; i++) {
                const q = world.query({ all: [Position], changed: [Position] }); // consumers never replay
                iterators.push(q.chunks());
            }
        }
        for (const iterator of iterators) iterator.return();
        expect(heap.pooledIterBlocks).toBe(6);
        for (let cycle = 0; cycle < 100; cycle++) {
            const world = module.createWorld();
            world.spawn(Position);
            for (const _ of world.query({ all: [Position], changed: [Position] }));
            world.destroy();
        }
        expect(heap.pooledIterBlocks).toBe(6);
        for (const world of worlds) world.destroy();
    });

    test('dropped queries, subscriptions and replicators are freed; systems keep their queries', async () => {
        const world = await newWorld();
        world.spawnMany(10, Position, Health);
        let runs = 0;
        world.system({ query: { all: [Position] }, run: (query) => void (runs += query.count()) });
        const kept = world.subscribe({ changed: [Health] });
        const baseline = world.stats().queryCount;
        (() => {
            for (let i = 0; i < 100; i++) {
                world.query({ all: [Position] }).count();
                world.query({ all: [Position], changed: [Health] }).entities();
                world.subscribe({ changed: [Health], removed: [Position] }).drain();
                world
                    .replicator({ scope: { all: [Position] } })
                    .peer()
                    .encode();
            }
        })();
        expect(world.stats().queryCount).toBeGreaterThan(baseline + 300);
        await collect();
        expect(world.stats().queryCount).toBe(baseline);
        world.tick();
        expect(runs).toBe(10); // the system's query lives on
        world.set(world.query({ all: [Health] }).entities()[0]!, Health, { value: 1 });
        expect(kept.drain().entities.length).toBe(1);
        world.validate();
    });

    test('the world holds no reference to a dropped query or subscription', async () => {
        const world = await newWorld();
        world.spawn(Position, Health);
        const refs = (() => {
            const query = world.query({ all: [Position] });
            for (const chunk of query) chunk.column(Position, 'x'); // recorded for replay
            for (const chunk of query) chunk.entities;
            const sub = world.subscribe({ changed: [Health] });
            for (const _ of sub);
            const replicator = world.replicator();
            replicator.peer().encode();
            return [new WeakRef(query), new WeakRef(sub), new WeakRef(replicator)];
        })();
        await collect();
        expect(refs.map((ref) => ref.deref())).toEqual([undefined, undefined, undefined]);
    });

    test('finalizers never touch a destroyed world, nor free what close() freed', async () => {
        const { module } = await instrumentedModule();
        const gone = module.createWorld();
        gone.spawn(Position);
        (() => {
            for (let i = 0; i < 20; i++) {
                gone.query({ all: [Position] }).count();
                gone.subscribe({ added: [Position] });
                gone.replicator({ scope: { all: [Position] } });
                const closed = gone.query({ all: [Position] });
                closed.close();
            }
        })();
        gone.destroy();
        // A world in the memory the destroyed one gave back, with queries at reused addresses.
        const world = module.createWorld();
        world.spawnMany(5, Position);
        const queries = Array.from({ length: 40 }, () => world.query({ all: [Position] }));
        (() => {
            for (let i = 0; i < 20; i++) world.query({ all: [Position] }).close(); // closed, then dropped
        })();
        const count = world.stats().queryCount;
        await collect();
        expect(world.stats().queryCount).toBe(count);
        for (const q of queries) expect(q.count()).toBe(5);
        world.validate();
        world.destroy();
    });
});

describe('inputs that are views of wasm memory', () => {
    test('applyDelta(delta.bytes): source and replica in one module, memory growing as keyframes grow', async () => {
        const { module } = await instrumentedModule();
        const source = module.createWorld();
        const replica = module.createWorld();
        const peer = source.replicator().peer();
        for (let round = 0; round < 10; round++) {
            source.spawnMany(20_000, Position({ x: round }), Health({ value: round }));
            peer.reset(); // a keyframe each round: bigger than any temporary block so far
            const delta = peer.encode();
            expect(replica.applyDelta(delta.bytes)).toBe(true);
            expect(replica.stats().entityCount).toBe(source.stats().entityCount);
        }
        const last = source
            .query({ all: [Health] })
            .entities()
            .at(-1)!;
        expect(replica.get(last, Health)).toEqual({ value: 9 });
        source.destroy();
        replica.destroy();
    });

    test('every allocation growing memory: entity lists, delta bytes and snapshot bytes arrive intact', async () => {
        for (const debug of [false, true]) {
            const { module } = await instrumentedModule(true);
            const memory = module.memory;
            const heap = heapOf(module) as HeapInternals & { tempU32(values: ArrayLike<number>, operation: string): number };
            const world = module.createWorld({ debug });
            // Two batches: the temporary block stays smaller than the 2,000 handles of the chunk.
            const listed = [...world.spawnMany(1_000, Position, Health), ...world.spawnMany(1_000, Position, Health)];
            for (const chunk of world.query({ all: [Health] })) {
                expect(chunk.count).toBe(2_000);
                const buffer = memory.buffer;
                // What world.despawnMany(chunk.entities) hands the heap (a guard in debug worlds).
                const list = heap.tempU32(chunk.entities, 'test') >>> 2;
                expect(memory.buffer).not.toBe(buffer); // copying the list grew memory
                expect(Array.from(new Uint32Array(memory.buffer).subarray(list, list + 2_000))).toEqual(listed);
                // Another element type (an f32 column): its numbers are converted, not copied as bytes.
                const x = chunk.column(Position, 'x');
                x[0] = 7;
                x[1] = 9;
                const converted = heap.tempU32(x.subarray(0, 2), 'test') >>> 2;
                expect(Array.from(new Uint32Array(memory.buffer).subarray(converted, converted + 2))).toEqual([7, 9]);
            }

            const replica = module.createWorld({ debug });
            const delta = world.replicator().peer().encode();
            const buffer = memory.buffer;
            expect(replica.applyDelta(delta.bytes)).toBe(true); // bigger than the temporary block
            expect(memory.buffer).not.toBe(buffer);
            expect(sorted(replica.query({ all: [Position, Health] }).entities())).toEqual(sorted(listed));

            const bytes = world.snapshot();
            const pointer = heap.exports.tes_malloc(bytes.length) >>> 0;
            new Uint8Array(memory.buffer, pointer, bytes.length).set(bytes);
            const restored = module.createWorld({ snapshot: new Uint8Array(memory.buffer, pointer, bytes.length) });
            expect(restored.snapshot()).toEqual(bytes);
            heap.exports.tes_free(pointer);
            for (const w of [world, replica, restored]) w.destroy();
        }
    });
});

describe('debug worlds guard every view', () => {
    test('entities and rows of a filtered chunk: VIEW_DETACHED after growth, fresh ones work', async () => {
        const { memory } = await init();
        const world = await newWorld({ debug: true });
        const handles = world.spawnMany(4, Position, Health);
        const dirty = world.query({ all: [Health], changed: [Health] });
        dirty.entities(); // consumes the spawns
        world.set(handles[2]!, Health, { value: 1 });
        let checked = false;
        for (const chunk of dirty) {
            const entities = chunk.entities;
            const rows = chunk.rows;
            expect([entities[rows[0]!]]).toEqual([handles[2]]);
            memory.grow(1); // growth no loop body causes any more: the host's own
            expectError(() => entities[0], 'VIEW_DETACHED', { operation: 'entities view' });
            expectError(() => rows[0], 'VIEW_DETACHED', { operation: 'rows view' });
            expectError(() => entities.length, 'VIEW_DETACHED');
            expect(chunk.entities[chunk.rows[0]!]).toBe(handles[2]);
            checked = true;
        }
        expect(checked).toBe(true);
        dirty.close();
    });

    test("a delta's bytes: VIEW_DETACHED after growth or the next encode, DESTROYED after destroy", async () => {
        const { memory } = await init();
        const world = await createWorld({ debug: true });
        world.spawn(Position({ x: 3 }));
        const replicator = world.replicator();
        const bytes = replicator.encode().bytes;
        const copy = bytes.slice();
        expect(copy).toBeInstanceOf(Uint8Array);
        expect(Object.getPrototypeOf(copy)).toBe(Uint8Array.prototype); // a real array: send it
        expect(bytes[0]).toBe(copy[0]);
        memory.grow(1);
        expectError(() => bytes[0], 'VIEW_DETACHED', { operation: 'bytes view' });
        const second = replicator.encode();
        const fresh = second.bytes;
        expect(fresh.length).toBeGreaterThan(0);
        const replica = await createWorld({ debug: true });
        expect(replica.applyDelta(fresh)).toBe(true); // the guard is read through
        expect(replica.query({ all: [Position] }).count()).toBe(1);
        replicator.encode();
        expectError(() => fresh[0], 'VIEW_DETACHED', { operation: 'bytes view' });
        const last = replicator.encode().bytes;
        world.destroy();
        expectError(() => last[0], 'DESTROYED', { operation: 'bytes view' });
        replica.destroy();
    });

    test('every view used after its world was destroyed throws DESTROYED', async () => {
        const world = await createWorld({ debug: true });
        const e = world.spawn(Position({ x: 1 }), Health);
        const dirty = world.query({ all: [Health], changed: [Health] });
        dirty.entities();
        world.set(e, Health, { value: 2 });
        const views: [string, ArrayLike<number>][] = [];
        for (const chunk of world.query({ all: [Position] })) {
            views.push(['column view', chunk.column(Position, 'x')], ['entities view', chunk.entities], ['rows view', chunk.rows]);
        }
        for (const chunk of dirty) views.push(['rows view', chunk.rows]);
        for (const [, view] of views) expect(view[0]).toBeDefined();
        world.destroy();
        for (const [operation, view] of views) {
            expectError(() => view[0], 'DESTROYED', { operation });
            expectError(() => view.length, 'DESTROYED');
        }
    });
});
