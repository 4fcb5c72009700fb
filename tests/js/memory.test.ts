// Memory growth: wasm memory grows by replacing its ArrayBuffer, which detaches every view made
// before. Views asked for again after growth must read and write the right rows; debug worlds
// turn a stale view into an error instead of silent undefined reads and lost writes.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';

import { component, createWorld, init, tag, type World } from '../../dist/index.js';
import { expectError, sorted, worldPerTest } from './support.js';

const newWorld = worldPerTest();

const Position = component('Position', { x: 'f32', y: 'f32' });
const Health = component('Health', { value: 'i32' });
const Inventory = component('Inventory', { items: ['u16', 3] });
const Filler = tag('Filler');
const Wide = component('Wide', { v: ['f64', 256] });

/** Another world of the module, whose wide rows (2 KiB) make the module's memory grow. */
let scratch: World;
beforeAll(async () => {
    scratch = await createWorld();
});
afterAll(() => scratch.destroy());

/**
 * Spawns (deferred, inside the caller's loop) until the module's memory grew, at most about a
 * million entities. Returns how many were spawned. The deferred spawns alone allocate little
 * (their records, a page at a time, fit in whatever room earlier tests freed), so each round also
 * spawns wide rows in another world of the module: all its worlds share one memory.
 */
function growMemory(world: World, memory: WebAssembly.Memory): number {
    const buffer = memory.buffer;
    let spawned = 0;
    while (memory.buffer === buffer) {
        if (spawned >= 1_000_000) throw new Error('memory did not grow');
        world.spawnMany(25_000, Filler);
        spawned += 25_000;
        scratch.spawnMany(1_000, Wide);
    }
    return spawned;
}

describe('growth in the middle of an iteration', () => {
    test('views asked for again read and write the right rows; entities and slots stay right', async () => {
        const { memory } = await init();
        const world = await newWorld({ chunkBytes: 4096 });
        const handles = world.spawnMany(1000, Position, Health, Inventory);
        for (const e of handles) {
            world.set(e, Position, { x: e, y: 2 * e });
            world.set(e, Health, { value: -e });
            world.set(e, Inventory, { items: [e % 65536, 1, 2] });
        }
        const watcher = world.subscribe({ changed: [Position] });
        let chunkIndex = 0;
        let spawned = 0;
        let grewAt = -1;
        const visited: number[] = [];
        for (const chunk of world.query({ all: [Position, Health, Inventory], writes: [Position] })) {
            const rows = [...chunk.entities];
            visited.push(...rows);
            if (chunkIndex++ === 1) {
                // Views made before the growth...
                const x = chunk.column(Position, 'x');
                const entities = chunk.entities;
                expect(x.buffer).toBe(memory.buffer);
                spawned = growMemory(world, memory);
                grewAt = chunk.index;
                // ...are detached now: length 0, reads undefined (hence the debug mode below).
                expect(x.length).toBe(0);
                expect(x[0]).toBeUndefined();
                expect(entities.length).toBe(0);
            }
            // Asked again (after growth for this chunk and every later one): live views.
            const x = chunk.column(Position, 'x');
            const y = chunk.column(Position, 'y');
            const hp = chunk.column(Health, 'value');
            const items = chunk.column(Inventory, 'items');
            expect(x.buffer).toBe(memory.buffer);
            expect([...chunk.entities]).toEqual(rows);
            expect([...chunk.slots]).toEqual([...rows.keys()]);
            for (let i = 0; i < chunk.count; i++) {
                const e = rows[i]!;
                expect([x[i], y[i], hp[i], items[i * 3]]).toEqual([e, 2 * e, -e, e % 65536]);
                x[i] = -e;
                hp[i] = e;
                items[i * 3 + 2] = 7;
            }
        }
        expect(grewAt).toBe(1);
        expect(sorted(visited)).toEqual(sorted(handles));
        // The writes landed; the deferred spawns were applied; the writes were marked.
        for (const e of handles) {
            expect(world.get(e, Position)).toEqual({ x: -e, y: 2 * e });
            expect(world.get(e, Health, 'value')).toBe(e);
            expect(world.get(e, Inventory, 'items')).toEqual([e % 65536, 1, 7]);
        }
        expect(world.stats().entityCount).toBe(1000 + spawned);
        expect(sorted(watcher.drain().entities)).toEqual(sorted(handles));
        world.validate();
    });

    test('a cached view is replaced after growth; before it, the same view is handed out', async () => {
        const { memory } = await init();
        const world = await newWorld();
        const e = world.spawn(Position({ x: 3 }));
        for (const chunk of world.query({ all: [Position] })) {
            const before = chunk.column(Position, 'x');
            expect(chunk.column(Position, 'x')).toBe(before);
            growMemory(world, memory);
            const after = chunk.column(Position, 'x');
            expect(after === before).toBe(false);
            expect(after[0]).toBe(3);
            after[0] = 4;
        }
        expect(world.get(e, Position, 'x')).toBe(4);
    });

    test('spawnMany with values inside the loop, growing memory: every value lands', async () => {
        const { memory } = await init();
        const world = await newWorld();
        world.spawn(Health);
        const batches: Uint32Array[] = [];
        for (const _ of world.query({ all: [Health] })) {
            const buffer = memory.buffer;
            for (let round = 0; memory.buffer === buffer; round++) {
                if (round >= 40) throw new Error('memory did not grow');
                batches.push(world.spawnMany(25_000, Health({ value: round }), Filler));
                scratch.spawnMany(1_000, Wide); /* see growMemory */
            }
        }
        batches.forEach((batch, round) => {
            expect(world.get(batch[0]!, Health, 'value')).toBe(round);
            expect(world.get(batch[batch.length - 1]!, Health, 'value')).toBe(round);
            expect(world.get(batch[12_345]!, Health, 'value')).toBe(round);
        });
        world.validate();
    });

    test('outside iteration: values and handles survive growth', async () => {
        const { memory } = await init();
        const world = await newWorld();
        const handles = world.spawnMany(100, Position);
        handles.forEach((e, i) => world.set(e, Position, { x: i, y: -i }));
        // Wide rows (2 KiB): memory grows within a few rounds whatever room earlier tests freed.
        const buffer = memory.buffer;
        for (let round = 0; memory.buffer === buffer; round++) {
            if (round >= 100) throw new Error('memory did not grow');
            world.spawnMany(4_000, Wide);
        }
        handles.forEach((e, i) => expect(world.get(e, Position)).toEqual({ x: i, y: -i }));
        expect(handles.buffer).not.toBe(memory.buffer); // spawnMany returned a copy, still usable
        expect(handles.length).toBe(100);
    });
});

describe('debug worlds', () => {
    test('a detached view throws VIEW_DETACHED on read and write; a fresh one works', async () => {
        const { memory } = await init();
        const world = await newWorld({ debug: true });
        const e = world.spawn(Position({ x: 1, y: 2 }));
        for (const chunk of world.query({ all: [Position] })) {
            const x = chunk.column(Position, 'x');
            expect(x).toBeInstanceOf(Float32Array);
            expect(x.length).toBe(1);
            expect(x[0]).toBe(1);
            expect(chunk.column(Position, 'x')).toBe(x); // cached while memory stays
            x[0] = 5; // writes through the guarded view land
            x.fill(6, 0, 1); // methods work on it too
            expect(world.get(e, Position, 'x')).toBe(6);
            growMemory(world, memory);
            expectError(() => x[0], 'VIEW_DETACHED', { component: 'Position', field: 'x', operation: 'column view' });
            expectError(() => {
                x[0] = 7;
            }, 'VIEW_DETACHED', { component: 'Position', field: 'x' });
            expectError(() => x.length, 'VIEW_DETACHED');
            const fresh = chunk.column(Position, 'x');
            expect(fresh[0]).toBe(6);
            fresh[0] = 8;
        }
        expect(world.get(e, Position)).toEqual({ x: 8, y: 2 });
    });

    test('a non-debug world hands out plain typed arrays', async () => {
        const world = await newWorld();
        world.spawn(Position);
        for (const chunk of world.query({ all: [Position] })) {
            const x = chunk.column(Position, 'x');
            expect(Object.getPrototypeOf(x)).toBe(Float32Array.prototype);
            expect(x.buffer).toBeInstanceOf(ArrayBuffer);
        }
    });
});
