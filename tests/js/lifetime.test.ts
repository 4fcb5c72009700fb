// Lifetimes: the finalizers that free forgotten worlds (and the iteration blocks they used),
// inputs that are views of wasm memory itself.
import { readFileSync } from 'node:fs';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, test } from 'vitest';

import { component, init, type ChunkIterator, type TesseraModule } from '../../dist/index.js';
import { sorted } from './support.js';

const Position = component('Position', { x: 'f32', y: 'f32' });
const Health = component('Health', { value: 'i32' });

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

describe('finalizers (a backstop for worlds the program drops without destroy)', () => {
    /** Makes a world, iterates it (completing one run, abandoning another), and forgets it. */
    function iterateAndForget(module: TesseraModule, abandon: boolean): void {
        const world = module.createWorld();
        world.spawn(Position);
        const q = world.query({ all: [Position], added: [Position] });
        for (const chunk of q) chunk.column(Position, 'x');
        if (abandon) world.query({ all: [Position] }).chunks().next();
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
        // pool holds at most as many as were live at once (25 abandoned runs of forgotten
        // worlds, live until their worlds are collected, and one more).
        expect(outstanding.size).toBeLessThanOrEqual(baseline + 26);
        expect(heap.pooledIterBlocks).toBeLessThanOrEqual(26);
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
        const last = source.query({ all: [Health] }).entities().at(-1)!;
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

