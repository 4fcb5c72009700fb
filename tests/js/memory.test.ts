// Memory growth: wasm memory grows by replacing its ArrayBuffer, which detaches every view made
// before. Views asked for again after growth must read and write the right rows; debug worlds
// turn a stale view into an error instead of silent undefined reads and lost writes. While a
// loop over a query is live, memory does not grow (the run reserve): its views hold throughout.
import { describe, expect, test } from 'vitest';

import { component, init, tag } from '../../dist/index.js';
import { MODULE_MEMORY } from '../../dist/abi.js';
import { expectError, worldPerTest } from './support.js';

const newWorld = worldPerTest();

const Position = component('Position', { x: 'f32', y: 'f32' });
const Health = component('Health', { value: 'i32' });
const Inventory = component('Inventory', { items: ['u16', 3] });
const Filler = tag('Filler');
const Wide = component('Wide', { v: ['f64', 256] });

describe('memory never grows while a loop is live: views hold for the whole run', () => {
    test('5,000 rows with 100 spawns each: all 5,000 column writes are kept', async () => {
        // The least memory the module takes, so that the run and its flush must grow it.
        const tessera = await init({ memory: MODULE_MEMORY.minimum });
        const { memory } = tessera;
        const world = tessera.createWorld();
        const handles = world.spawnMany(5_000, Position);
        const buffer = memory.buffer;
        let writes = 0;
        for (const chunk of world.query({ all: [Position] })) {
            const x = chunk.column(Position, 'x');
            const entities = chunk.entities;
            for (let i = 0; i < chunk.count; i++) {
                for (let k = 0; k < 100; k++) world.spawn(Health, Filler);
                x[i] = entities[i]!;
                writes++;
            }
            expect(x.buffer).toBe(memory.buffer);
        }
        expect(writes).toBe(5_000);
        expect(memory.buffer === buffer).toBe(false); // the run's reserve or the flush grew it, never the loop
        for (const e of handles) expect(world.get(e, Position, 'x')).toBe(e);
        expect(world.stats().entityCount).toBe(5_000 + 500_000);
        world.validate();
        world.destroy();
    });

    test('100k deferred spawns with values, adds and despawns while writing views: every write and spawn kept', async () => {
        const world = await newWorld({ chunkBytes: 4096 });
        const handles = world.spawnMany(2_000, Position, Health, Inventory);
        const spawned: number[] = [];
        for (const chunk of world.query({ all: [Position, Health, Inventory], writes: [Position] })) {
            const x = chunk.column(Position, 'x');
            const hp = chunk.column(Health, 'value');
            const items = chunk.column(Inventory, 'items');
            const entities = chunk.entities;
            for (let i = 0; i < chunk.count; i++) {
                for (let k = 0; k < 50; k++) spawned.push(world.spawn(Health({ value: spawned.length }), Position({ x: k })));
                world.add(entities[i]!, Filler);
                x[i] = 1;
                hp[i] = entities[i]!;
                items[i * 3 + 1] = 7;
            }
        }
        expect(spawned.length).toBe(100_000);
        for (const e of handles) {
            expect(world.get(e, Position, 'x')).toBe(1);
            expect(world.get(e, Health, 'value')).toBe(e);
            expect(world.get(e, Inventory, 'items')[1]).toBe(7);
            expect(world.has(e, Filler)).toBe(true);
        }
        spawned.forEach((e, i) => expect(world.get(e, Health, 'value')).toBe(i));
        world.validate();
    });

    test("a loop body needing more than its run's reserve gets OUT_OF_MEMORY and changes nothing; the next run has room", async () => {
        const { memory } = await init();
        const world = await newWorld();
        world.spawn(Position);
        const count = world.stats().entityCount;
        let refused = false;
        for (const chunk of world.query({ all: [Position] })) {
            const x = chunk.column(Position, 'x');
            const error = expectError(() => world.spawnMany(2_000_000, Filler), 'OUT_OF_MEMORY', { operation: 'world.spawnMany' });
            expect(error.message).toMatch(/reserve/);
            expect(x.buffer).toBe(memory.buffer);
            x[0] = 3;
            refused = true;
        }
        expect(refused).toBe(true);
        expect(world.stats().entityCount).toBe(count);
        expect(world.get(world.query({ all: [Position] }).entities()[0]!, Position, 'x')).toBe(3);
        for (const chunk of world.query({ all: [Position] })) {
            const x = chunk.column(Position, 'x');
            world.spawnMany(2_000_000, Filler);
            expect(x.buffer).toBe(memory.buffer);
        }
        expect(world.stats().entityCount).toBe(count + 2_000_000);
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
            memory.grow(1); // growth the loop did not cause (the host's own)
            expectError(() => x[0], 'VIEW_DETACHED', { component: 'Position', field: 'x', operation: 'column view' });
            expectError(
                () => {
                    x[0] = 7;
                },
                'VIEW_DETACHED',
                { component: 'Position', field: 'x' },
            );
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
