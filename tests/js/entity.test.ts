// Entities: spawn, despawn, isAlive, add/remove/has, get/set, the batch forms, stale handles.
import { describe, expect, test } from 'vitest';

import { component, tag, type ErrorCode, type World } from '../../dist/index.js';
import { countCalls, expectError, snapshot, sorted, worldPerTest } from './support.js';

const newWorld = worldPerTest();

const Position = component('Position', { x: 'f32', y: 'f32' });
const Health = component('Health', { value: 'i32' });
const Inventory = component('Inventory', { items: ['u32', 4], count: 'u8' });
const Path = component('Path', { points: ['f64', 3] });
const Frozen = tag('Frozen');
const AllTypes = component('AllTypes', {
    f32: 'f32',
    f64: 'f64',
    i8: 'i8',
    u8: 'u8',
    i16: 'i16',
    u16: 'u16',
    i32: 'i32',
    u32: 'u32',
});

const F32_MAX = 3.4028234663852886e38;
/** Each field type's extremes and a few values in between, as they read back. */
const extremes = [
    { f32: F32_MAX, f64: Number.MAX_VALUE, i8: 127, u8: 255, i16: 32767, u16: 65535, i32: 2147483647, u32: 4294967295 },
    { f32: -F32_MAX, f64: -Number.MAX_VALUE, i8: -128, u8: 0, i16: -32768, u16: 0, i32: -2147483648, u32: 0 },
    { f32: 1.5, f64: 0.1, i8: -1, u8: 128, i16: -300, u16: 40000, i32: -70000, u32: 3000000000 },
    { f32: Infinity, f64: -Infinity, i8: 0, u8: 1, i16: 1, u16: 1, i32: 1, u32: 1 },
    { f32: Math.fround(1e-45), f64: Number.MIN_VALUE, i8: 5, u8: 6, i16: 7, u16: 8, i32: 9, u32: 10 }, // denormals
];

describe('spawn', () => {
    test('an empty entity: alive, counted, with no components', async () => {
        const world = await newWorld();
        const e = world.spawn();
        expect(e).toBeGreaterThan(0);
        expect(world.isAlive(e)).toBe(true);
        expect(world.has(e, Position)).toBe(false);
        expect(world.stats().entityCount).toBe(1);
        expect(world.spawn()).not.toBe(e);
        world.validate();
    });

    test('with components and a tag: fields start at 0', async () => {
        const world = await newWorld();
        const e = world.spawn(Position, Frozen, Inventory);
        expect(world.has(e, Position)).toBe(true);
        expect(world.has(e, Frozen)).toBe(true);
        expect(world.has(e, Health)).toBe(false);
        expect(world.get(e, Position)).toEqual({ x: 0, y: 0 });
        expect(world.get(e, Inventory)).toEqual({ items: [0, 0, 0, 0], count: 0 });
    });

    test('with initial values: given fields set, the others 0, neighbours untouched', async () => {
        const world = await newWorld();
        const a = world.spawn(Position({ x: 1.5 }), Inventory({ items: [1, 2, 3, 4294967295] }));
        const b = world.spawn(Position({ x: -2, y: 7 }), Inventory({ count: 9 }));
        expect(world.get(a, Position)).toEqual({ x: 1.5, y: 0 });
        expect(world.get(a, Inventory)).toEqual({ items: [1, 2, 3, 4294967295], count: 0 });
        expect(world.get(b, Position)).toEqual({ x: -2, y: 7 });
        expect(world.get(b, Inventory)).toEqual({ items: [0, 0, 0, 0], count: 9 });
    });

    test('array values may be any array-like (typed arrays included)', async () => {
        const world = await newWorld();
        const e = world.spawn(Inventory({ items: new Uint32Array([4, 3, 2, 1]) }), Path({ points: new Float64Array([0.1, 0.2, 0.3]) }));
        expect(world.get(e, Inventory, 'items')).toEqual([4, 3, 2, 1]);
        expect(world.get(e, Path, 'points')).toEqual([0.1, 0.2, 0.3]);
    });

    test('every field type round-trips its limits through spawn, set and get', async () => {
        const world = await newWorld();
        for (const values of extremes) {
            const e = world.spawn(AllTypes(values));
            expect(world.get(e, AllTypes)).toEqual(values);
            const other = world.spawn(AllTypes);
            world.set(other, AllTypes, values);
            expect(world.get(other, AllTypes)).toEqual(values);
            for (const [field, value] of Object.entries(values)) {
                world.set(other, AllTypes, field as keyof typeof values, 0);
                world.set(other, AllTypes, field as keyof typeof values, value);
                expect(world.get(other, AllTypes, field as keyof typeof values)).toBe(value);
            }
        }
    });

    test('floats: f32 rounds to nearest, f64 is exact, NaN and -0 survive', async () => {
        const world = await newWorld();
        const e = world.spawn(AllTypes({ f32: 0.1, f64: 0.1 }));
        expect(world.get(e, AllTypes, 'f32')).toBe(Math.fround(0.1));
        expect(world.get(e, AllTypes, 'f64')).toBe(0.1);
        world.set(e, AllTypes, { f32: NaN, f64: -0 });
        expect(world.get(e, AllTypes, 'f32')).toBeNaN();
        expect(Object.is(world.get(e, AllTypes, 'f64'), -0)).toBe(true);
    });

    test('each spawn gets a fresh handle; handles are small integers', async () => {
        const world = await newWorld();
        const handles = Array.from({ length: 100 }, () => world.spawn(Frozen));
        expect(new Set(handles).size).toBe(100);
        for (const e of handles) expect(e >>> 0 === e && e < 2 ** 30).toBe(true);
    });
});

describe('despawn and isAlive', () => {
    test('despawn kills one entity and keeps the others and their data', async () => {
        const world = await newWorld();
        const a = world.spawn(Position({ x: 1 }));
        const b = world.spawn(Position({ x: 2 }));
        const c = world.spawn(Position({ x: 3 }));
        world.despawn(a); // b and c may move (swap-remove): their data must follow
        expect(world.isAlive(a)).toBe(false);
        expect(world.isAlive(b)).toBe(true);
        expect(world.get(b, Position, 'x')).toBe(2);
        expect(world.get(c, Position, 'x')).toBe(3);
        expect(world.stats().entityCount).toBe(2);
        expectError(() => world.despawn(a), 'STALE_ENTITY', { entity: a, operation: 'world.despawn' });
        world.validate();
    });

    test('isAlive answers false, without throwing, for anything that is not a live handle', async () => {
        const world = await newWorld();
        const e = world.spawn();
        for (const value of [0, -1, 1.5, 2 ** 40, NaN, 12345, e + 1]) expect(world.isAlive(value)).toBe(false);
        expect(world.isAlive('1' as never)).toBe(false);
        expect(world.isAlive(e)).toBe(true);
    });
});

describe('add, remove, has', () => {
    test('add: zeroed, or with values; several at once; tags', async () => {
        const world = await newWorld();
        const e = world.spawn(Position({ x: 5, y: 6 }));
        world.add(e, Health, Frozen, Inventory({ items: [1, 1, 2, 3] }));
        expect(world.has(e, Health) && world.has(e, Frozen) && world.has(e, Inventory)).toBe(true);
        expect(world.get(e, Health)).toEqual({ value: 0 });
        expect(world.get(e, Inventory)).toEqual({ items: [1, 1, 2, 3], count: 0 });
        expect(world.get(e, Position)).toEqual({ x: 5, y: 6 }); // moved with the entity
        world.validate();
    });

    test('add of a component the entity has keeps its data, and writes given values as a change', async () => {
        const world = await newWorld();
        const e = world.spawn(Position({ x: 5, y: 6 }), Health({ value: 10 }));
        const changed = world.subscribe({ changed: [Health] });
        const added = world.subscribe({ added: [Health] });
        added.drain(); // the entity's Health counts as added when tracking starts
        world.add(e, Position, Health); // no values: nothing happens
        expect(world.get(e, Position)).toEqual({ x: 5, y: 6 });
        expect(world.get(e, Health)).toEqual({ value: 10 });
        expect(changed.drain().entities).toEqual(new Uint32Array([]));
        world.add(e, Health({ value: 11 }));
        expect(world.get(e, Health)).toEqual({ value: 11 });
        expect(changed.drain().entities).toEqual(new Uint32Array([e]));
        expect(added.drain().entities).toEqual(new Uint32Array([]));
    });

    test('add of a new component with values counts as added, not changed', async () => {
        const world = await newWorld();
        const e = world.spawn(Position);
        const changed = world.subscribe({ changed: [Health] });
        const added = world.subscribe({ added: [Health] });
        world.add(e, Health({ value: 3 }));
        expect(added.drain().entities).toEqual(new Uint32Array([e]));
        expect(changed.drain().entities).toEqual(new Uint32Array([]));
    });

    test('remove: the component is gone, others stay; removing one it lacks does nothing', async () => {
        const world = await newWorld();
        const e = world.spawn(Position({ x: 1, y: 2 }), Health({ value: 3 }), Frozen);
        world.remove(e, Health, Frozen);
        expect(world.has(e, Health)).toBe(false);
        expect(world.has(e, Frozen)).toBe(false);
        expect(world.get(e, Position)).toEqual({ x: 1, y: 2 });
        world.remove(e, Health, Inventory);
        expect(world.has(e, Position)).toBe(true);
        // Back again: fresh, zeroed data.
        world.add(e, Health);
        expect(world.get(e, Health)).toEqual({ value: 0 });
        world.validate();
    });

    test('has, get, set, add, remove on a dead entity throw STALE_ENTITY', async () => {
        const world = await newWorld();
        const e = world.spawn(Position);
        world.despawn(e);
        expectError(() => world.has(e, Position), 'STALE_ENTITY', { entity: e, operation: 'world.has' });
        expectError(() => world.get(e, Position), 'STALE_ENTITY', { entity: e, operation: 'world.get' });
        expectError(() => world.set(e, Position, { x: 1 }), 'STALE_ENTITY', { entity: e });
        expectError(() => world.add(e, Health), 'STALE_ENTITY', { entity: e, operation: 'world.add' });
        expectError(() => world.remove(e, Position), 'STALE_ENTITY', { entity: e, operation: 'world.remove' });
        expectError(() => world.markChanged(e, Position), 'STALE_ENTITY', { entity: e });
        // Calls with nothing to do still check the handle.
        expectError(() => world.set(e, Position, {}), 'STALE_ENTITY', { entity: e, operation: 'world.set' });
        expectError(() => world.add(e), 'STALE_ENTITY', { entity: e, operation: 'world.add' });
        expectError(() => world.remove(e), 'STALE_ENTITY', { entity: e, operation: 'world.remove' });
        const Unused = component('UnusedByThisWorld', { v: 'f32' });
        expectError(() => world.has(e, Unused), 'STALE_ENTITY', { entity: e, operation: 'world.has' });
        expectError(() => world.get(e, Unused), 'STALE_ENTITY', { entity: e, operation: 'world.get' });
    });
});

describe('get and set', () => {
    test('get returns a fresh copy: changing it changes nothing', async () => {
        const world = await newWorld();
        const e = world.spawn(Inventory({ items: [1, 2, 3, 4], count: 4 }));
        const copy = world.get(e, Inventory);
        copy.items[0] = 99;
        copy.count = 0;
        world.get(e, Inventory, 'items')[1] = 99;
        expect(world.get(e, Inventory)).toEqual({ items: [1, 2, 3, 4], count: 4 });
        expect(world.get(e, Inventory)).not.toBe(world.get(e, Inventory));
    });

    test('set writes the given fields only (object form) or one field', async () => {
        const world = await newWorld();
        const a = world.spawn(Position({ x: 1, y: 2 }), Inventory({ items: [1, 2, 3, 4], count: 4 }));
        const b = world.spawn(Position({ x: 3, y: 4 }), Inventory);
        world.set(a, Position, { y: 20 });
        expect(world.get(a, Position)).toEqual({ x: 1, y: 20 });
        world.set(a, Position, 'x', -10);
        expect(world.get(a, Position)).toEqual({ x: -10, y: 20 });
        world.set(a, Inventory, 'items', [5, 6, 7, 8]);
        world.set(a, Inventory, { count: 200 });
        expect(world.get(a, Inventory)).toEqual({ items: [5, 6, 7, 8], count: 200 });
        world.set(a, Position, { x: undefined, y: 1 } as never); // undefined: left as is (JS callers)
        expect(world.get(a, Position)).toEqual({ x: -10, y: 1 });
        expect(world.get(b, Position)).toEqual({ x: 3, y: 4 });
        expect(world.get(b, Inventory)).toEqual({ items: [0, 0, 0, 0], count: 0 });
    });

    test('get and set of a component the entity lacks: MISSING_COMPONENT', async () => {
        const world = await newWorld();
        const e = world.spawn(Position);
        expectError(() => world.get(e, Health), 'MISSING_COMPONENT', { entity: e, component: 'Health' });
        expectError(() => world.get(e, Health, 'value'), 'MISSING_COMPONENT', { field: 'value' });
        expectError(() => world.set(e, Health, { value: 1 }), 'MISSING_COMPONENT', { entity: e });
        expect(world.has(e, Health)).toBe(false);
    });

    test('a tag has no data to get or set', async () => {
        const world = await newWorld();
        const e = world.spawn(Frozen);
        expectError(() => world.get(e, Frozen), 'TAG_HAS_NO_DATA', { component: 'Frozen' });
        expectError(() => world.set(e, Frozen, { v: 1 } as never), 'TAG_HAS_NO_DATA', { component: 'Frozen' });
    });
});

describe('spawnMany', () => {
    test('fills every entity across several chunks, after existing rows, leaving those alone', async () => {
        const world = await newWorld({ chunkBytes: 4096 });
        // A partly filled chunk first, so that the batch starts mid-chunk.
        const early = Array.from({ length: 5 }, (_, i) =>
            world.spawn(Position({ x: i, y: -i }), Inventory({ items: [i, i, i, i], count: i }), Frozen),
        );
        const count = 1000;
        const items = [7, 8, 9, 4000000000];
        const batch = world.spawnMany(count, Position({ x: 1.5, y: -2 }), Inventory({ items, count: 255 }), Frozen);
        expect(batch).toBeInstanceOf(Uint32Array);
        expect(batch).toHaveLength(count);
        expect(new Set([...batch, ...early]).size).toBe(count + 5);
        // The archetype spans at least 3 chunks (so the fill crossed chunk boundaries).
        const chunks = [...world.query({ all: [Position, Inventory, Frozen] })].length;
        expect(chunks).toBeGreaterThanOrEqual(3);
        for (const e of batch) {
            expect(world.get(e, Position)).toEqual({ x: 1.5, y: -2 });
            expect(world.get(e, Inventory)).toEqual({ items, count: 255 });
            expect(world.has(e, Frozen)).toBe(true);
        }
        early.forEach((e, i) => {
            expect(world.get(e, Position)).toEqual({ x: i, y: -i });
            expect(world.get(e, Inventory)).toEqual({ items: [i, i, i, i], count: i });
        });
        expect(world.stats().entityCount).toBe(count + 5);
        world.validate();
    });

    test('without values: zeroed; count 0: nothing', async () => {
        const world = await newWorld();
        expect(world.spawnMany(0, Position({ x: 1 }))).toEqual(new Uint32Array(0));
        const batch = world.spawnMany(3, Position, Health);
        for (const e of batch) expect([world.get(e, Position), world.get(e, Health)]).toEqual([{ x: 0, y: 0 }, { value: 0 }]);
        expect(world.stats().entityCount).toBe(3);
    });

    test('default-sized chunks: every entity of a batch of three chunks gets its values', async () => {
        const world = await newWorld();
        const batch = world.spawnMany(12000, Position({ x: 3, y: 4 }));
        expect([...world.query({ all: [Position] })].length).toBeGreaterThanOrEqual(3);
        for (const e of batch) expect(world.get(e, Position)).toEqual({ x: 3, y: 4 });
    });
});

describe('spawnMany with values per entity (C.columns)', () => {
    const Sparse = component('SparseHealth', { value: 'i16' }, { storage: 'sparse' });

    test('entity i takes element i of each column: arrays, typed arrays, array fields, one number for all', async () => {
        const world = await newWorld({ chunkBytes: 1024 });
        const before = world.spawnMany(7, Position({ x: -1, y: -1 }));
        const n = 500; // several chunks
        const xs = Float64Array.from({ length: n }, (_, i) => i * 0.5);
        const ys = Array.from({ length: n }, (_, i) => -i);
        const items = new Uint32Array(4 * n).map((_, k) => k);
        const hp = Int32Array.from({ length: n }, (_, i) => 1000 - i);
        const sparse = Array.from({ length: n }, (_, i) => i - 250);
        const batch = world.spawnMany(
            n,
            Position.columns({ x: xs, y: ys }),
            Inventory.columns({ items, count: 7 }),
            Health.columns({ value: hp }),
            Sparse.columns({ value: sparse }),
            Frozen,
        );
        expect(batch.length).toBe(n);
        batch.forEach((e, i) => {
            expect(world.get(e, Position)).toEqual({ x: i * 0.5, y: -i });
            expect(world.get(e, Inventory)).toEqual({ items: [4 * i, 4 * i + 1, 4 * i + 2, 4 * i + 3], count: 7 });
            expect(world.get(e, Health, 'value')).toBe(1000 - i);
            expect(world.get(e, Sparse, 'value')).toBe(i - 250);
            expect(world.has(e, Frozen)).toBe(true);
        });
        for (const e of before) expect(world.get(e, Position)).toEqual({ x: -1, y: -1 });
        // A column left out starts at 0; no entity, no column needed.
        const [e] = world.spawnMany(1, Position.columns({ y: [5] }));
        expect(world.get(e!, Position)).toEqual({ x: 0, y: 5 });
        expect(world.spawnMany(0, Position.columns({ x: [] }))).toEqual(new Uint32Array(0));
        world.validate();
    });

    test('a value no field can hold at entity 57 refuses the whole call: BAD_VALUE naming the field, value and position', async () => {
        const world = await newWorld();
        world.spawnMany(3, Position);
        const bytes = world.snapshot();
        const hp = Array.from({ length: 100 }, (_, i) => i);
        hp[57] = 1.5;
        const error = expectError(() => world.spawnMany(100, Position.columns({ x: hp }), Health.columns({ value: hp })), 'BAD_VALUE', {
            operation: 'world.spawnMany',
            component: 'Health',
            field: 'value',
            position: 57,
        });
        expect(error.message).toContain('1.5');
        expect(error.message).toContain('#57');
        // An element of an array field: which entity and which element.
        const items = new Array<number>(4 * 10).fill(1);
        items[4 * 6 + 2] = -1; // u32
        const inner = expectError(() => world.spawnMany(10, Inventory.columns({ items })), 'BAD_VALUE', { field: 'items', position: 6 });
        expect(inner.message).toContain('element 2');
        // Not a number at all: refused in JavaScript, with its place too.
        const names: unknown[] = Array.from({ length: 100 }, () => 1);
        names[57] = '1';
        expectError(() => world.spawnMany(100, Position.columns({ x: names as number[] })), 'BAD_VALUE', { field: 'x', position: 57 });
        expectError(() => world.spawnMany(2, Position.columns({ x: new BigInt64Array(2) as never })), 'BAD_VALUE', { position: 0 });
        expect(world.snapshot()).toEqual(bytes);
        expect(world.stats().entityCount).toBe(3);
    });

    test('a column of the wrong length is refused before anything is allocated or registered', async () => {
        const world = await newWorld();
        world.spawn(Position);
        const bytes = world.snapshot();
        const stats = world.stats(); // after the snapshot, which allocates
        const Fresh = component('FreshColumns', { v: 'u8', arr: ['f32', 2] });
        expectError(() => world.spawnMany(10, Position, Fresh.columns({ v: new Uint8Array(9) })), 'BAD_VALUE', {
            component: 'FreshColumns',
            field: 'v',
        });
        // An array field needs count × length numbers, entity after entity.
        const error = expectError(() => world.spawnMany(10, Fresh.columns({ arr: new Float32Array(10) })), 'BAD_VALUE', { field: 'arr' });
        expect(error.message).toContain('20');
        expectError(() => world.spawnMany(10, Fresh.columns({ arr: 1 as never })), 'BAD_VALUE', { field: 'arr' });
        expectError(() => world.spawnMany(3, Fresh.columns({ v: { length: '3' } as never })), 'BAD_VALUE');
        // @ts-expect-error: no such field
        expectError(() => world.spawnMany(3, Fresh.columns({ w: [1, 2, 3] })), 'UNKNOWN_FIELD', { component: 'FreshColumns', field: 'w' });
        expect(world.stats()).toEqual(stats);
        expect(world.snapshot()).toEqual(bytes);
    });

    test('each element is read once: a column whose reads change cannot make the check and the write disagree', async () => {
        const world = await newWorld();
        const reads = new Map<string, number>();
        const column = new Proxy(
            { length: 3 },
            {
                get(target, key) {
                    if (typeof key !== 'string') return undefined;
                    reads.set(key, (reads.get(key) ?? 0) + 1);
                    if (key === 'length') return target.length;
                    // 7 on the first read of each element, then a value an i32 cannot hold.
                    return reads.get(key) === 1 ? 7 : 0.5;
                },
            },
        );
        const batch = world.spawnMany(3, Health.columns({ value: column as unknown as number[] }));
        for (const e of batch) expect(world.get(e, Health, 'value')).toBe(7);
        expect(Object.fromEntries(reads)).toEqual({ length: 1, 0: 1, 1: 1, 2: 1 });
    });

    test('a column may be a view of wasm memory: it is copied before the call allocates', async () => {
        const world = await newWorld();
        const source = world.spawnMany(1000, Position);
        source.forEach((e, i) => world.set(e, Position, 'x', i));
        const columns: Float32Array[] = [];
        for (const chunk of world.query({ all: [Position] })) columns.push(chunk.column(Position, 'x'));
        const view = columns[0]!;
        const copies = world.spawnMany(view.length, Position.columns({ x: view }), Health);
        copies.forEach((e, i) => expect(world.get(e, Position, 'x')).toBe(i));
    });

    test('inside a loop the spawn is recorded, values and all, in order with the other deferred calls', async () => {
        const world = await newWorld();
        const seeds = world.spawnMany(4, Position.columns({ x: [1, 2, 3, 4], y: 0 }));
        const spawned: Uint32Array[] = [];
        for (const chunk of world.query({ all: [Position], none: [Health] })) {
            const x = chunk.column(Position, 'x');
            // Children at each seed's x, as columns straight from the chunk.
            const children = world.spawnMany(chunk.count, Position.columns({ x, y: 9 }), Health.columns({ value: chunk.entities }));
            spawned.push(children);
            expectError(() => world.get(children[0]!, Position), 'PENDING_ENTITY');
            world.set(children[1]!, Health, 'value', -1); // recorded after the spawn
            world.despawn(children[3]!);
        }
        const [children] = spawned;
        expect(world.get(children![0]!, Position)).toEqual({ x: 1, y: 9 });
        expect(world.get(children![0]!, Health, 'value')).toBe(seeds[0]);
        expect(world.get(children![1]!, Health, 'value')).toBe(-1);
        expect(world.get(children![2]!, Position)).toEqual({ x: 3, y: 9 });
        expect(world.isAlive(children![3]!)).toBe(false);
        expect(world.stats().commandsSkipped).toBe(0);
        world.validate();
    });

    test('only spawnMany takes columns; spawn and add refuse them', async () => {
        const world = await newWorld();
        const e = world.spawn(Position);
        // @ts-expect-error: columns are for spawnMany
        expectError(() => world.spawn(Position.columns({ x: [1] })), 'INVALID_ARGUMENT', { component: 'Position' });
        // @ts-expect-error: columns are for spawnMany
        expectError(() => world.add(e, Health.columns({ value: [1] })), 'INVALID_ARGUMENT', { component: 'Health' });
        expectError(() => Position.columns(null as never), 'BAD_VALUE');
        // An array for a scalar field of a plain initializer points to columns.
        const hint = expectError(() => world.spawnMany(2, Position({ x: [1, 2] as never })), 'BAD_VALUE', { field: 'x' });
        expect(hint.message).toContain('Position.columns');
        expect(world.stats().entityCount).toBe(1);
    });
});

describe('despawnMany', () => {
    test('despawns every listed entity', async () => {
        const world = await newWorld();
        const batch = world.spawnMany(50, Position);
        const keep = world.spawn(Position({ x: 9 }));
        world.despawnMany(batch.subarray(10, 40));
        for (let i = 0; i < 50; i++) expect(world.isAlive(batch[i]!)).toBe(i < 10 || i >= 40);
        expect(world.get(keep, Position, 'x')).toBe(9);
        expect(world.stats().entityCount).toBe(21);
        world.despawnMany([]);
        world.validate();
    });

    test('all or nothing: a stale or duplicate entity fails the call and despawns none', async () => {
        const world = await newWorld();
        const [a, b, c, dead] = world.spawnMany(4, Position({ x: 2 }));
        world.despawn(dead!);
        const before = snapshot(world, [a!, b!, c!], [Position]);
        expectError(() => world.despawnMany([a!, dead!, b!]), 'STALE_ENTITY', {
            entity: dead!,
            operation: 'world.despawnMany',
        });
        expectError(() => world.despawnMany([a!, b!, a!]), 'DUPLICATE_ENTITY', { entity: a! });
        expectError(() => world.despawnMany([a!, -1]), 'INVALID_ARGUMENT');
        expect(snapshot(world, [a!, b!, c!], [Position])).toEqual(before);
        world.validate();
    });
});

describe('stale handles', () => {
    test('a reused slot: the old handle throws STALE_ENTITY and never touches the new entity', async () => {
        // Slots are reused once more than minFreeIndices wait (0 would mean the default, 4096).
        const world = await newWorld({ minFreeIndices: 1 });
        const old = world.spawn(Position({ x: 1, y: 1 }), Health({ value: 1 }));
        world.despawn(old);
        world.despawn(world.spawn()); // two wait now: the oldest (old's slot) is reused
        const reused = world.spawn(Position({ x: 2, y: 2 }), Health({ value: 2 }));
        // Same slot, next generation.
        expect(reused & 0x1fffff).toBe(old & 0x1fffff);
        expect(reused >>> 21).toBe((old >>> 21) + 1);
        expect(world.isAlive(old)).toBe(false);
        expectError(() => world.get(old, Position), 'STALE_ENTITY', { entity: old });
        expectError(() => world.set(old, Position, { x: 99 }), 'STALE_ENTITY', { entity: old });
        expectError(() => world.set(old, Health, 'value', 99), 'STALE_ENTITY', { entity: old });
        expectError(() => world.remove(old, Health), 'STALE_ENTITY', { entity: old });
        expectError(() => world.add(old, Frozen), 'STALE_ENTITY', { entity: old });
        expectError(() => world.despawn(old), 'STALE_ENTITY', { entity: old });
        expectError(() => world.despawnMany([old]), 'STALE_ENTITY', { entity: old });
        expect(world.isAlive(reused)).toBe(true);
        expect(world.get(reused, Position)).toEqual({ x: 2, y: 2 });
        expect(world.get(reused, Health)).toEqual({ value: 2 });
        expect(world.has(reused, Frozen)).toBe(false);
        world.validate();
    });

    test('by default a freed slot is not reused soon', async () => {
        const world = await newWorld();
        const old = world.spawn(Position);
        world.despawn(old);
        const fresh = Array.from({ length: 100 }, () => world.spawn(Position));
        expect(fresh.map((e) => e & 0x1fffff)).not.toContain(old & 0x1fffff);
    });

    test('despawn-and-respawn cycles keep every live entity on its own data', async () => {
        const world = await newWorld({ minFreeIndices: 1 });
        const live = new Map<number, number>();
        const slots = new Set<number>();
        let reuses = 0;
        let next = 0;
        for (let round = 0; round < 20; round++) {
            for (let i = 0; i < 10; i++) {
                const value = next++;
                const e = world.spawn(Health({ value }));
                if (slots.has(e & 0x1fffff)) reuses++;
                slots.add(e & 0x1fffff);
                live.set(e, value);
            }
            const doomed = [...live.keys()].filter((_, i) => i % 3 === round % 3);
            world.despawnMany(doomed);
            for (const e of doomed) live.delete(e);
        }
        expect(sorted(world.query({ all: [Health] }).entities())).toEqual(sorted(live.keys()));
        for (const [e, value] of live) expect(world.get(e, Health, 'value')).toBe(value);
        expect(reuses).toBeGreaterThan(20);
        world.validate();
    });
});

/**
 * Runs `body` with the world's tes_archetype_spawn growing memory by a page after each call, as
 * an allocation of the spawn that finds memory full does (every view made before detaches);
 * returns how many calls grew it.
 */
function spawnsGrowingMemory(world: World, body: () => void): number {
    const heap = (world as unknown as { heap: { memory: WebAssembly.Memory; exports: Record<string, (...a: number[]) => number> } }).heap;
    const real = heap.exports;
    let grown = 0;
    heap.exports = {
        ...real,
        tes_archetype_spawn: (...args: number[]) => {
            const result = real.tes_archetype_spawn!(...args);
            heap.memory.grow(1);
            grown++;
            return result;
        },
    };
    try {
        body();
    } finally {
        heap.exports = real;
    }
    return grown;
}

describe('spawn plans (the latest argument shape, resolved once)', () => {
    const Marked = tag('PlanMarked', { storage: 'sparse' });
    /** The components an entity has, by asking for each of a list. */
    const membership = (world: Awaited<ReturnType<typeof newWorld>>, e: number) =>
        [Position, Health, Frozen, Marked].map((c) => world.has(e, c));

    test('the same list again, another list, the first again: each entity has exactly its list', async () => {
        const world = await newWorld();
        const spawned: [number, boolean[]][] = [];
        // Neighbours of the same length with other members: a plan matched by length alone would fail.
        const lists = [
            [Position, Health],
            [Position, Health],
            [Health],
            [Frozen],
            [Position, Frozen],
            [Position, Health],
            [Health, Position],
            [],
            [Position, Marked],
            [Position, Health],
        ] as const;
        for (let round = 0; round < 3; round++) {
            for (const list of lists) {
                const e = world.spawn(...list);
                spawned.push([e, [Position, Health, Frozen, Marked].map((c) => (list as readonly unknown[]).includes(c))]);
            }
        }
        for (const [e, expected] of spawned) expect(membership(world, e)).toEqual(expected);
        expect(world.query({ all: [Position, Health] }).count()).toBe(15);
        world.validate();
    });

    test('a registration taken back, then another component in its id: the plan is not reused', async () => {
        const world = await newWorld();
        const Fresh = component('PlanFresh', { v: 'f64' });
        const Other = component('PlanOther', { w: 'f64' });
        world.spawn(Position);
        // Registers Fresh, fails, takes it back; Other then gets the id Fresh had.
        expectError(() => world.spawn(Position, Fresh({ v: 'x' as never })), 'BAD_VALUE');
        world.spawn(Other);
        const e = world.spawn(Other);
        expect(world.has(e, Other)).toBe(true);
        expect(world.has(e, Position)).toBe(false);
        const f = world.spawn(Position);
        expect(world.has(f, Position)).toBe(true);
        expect(world.has(f, Other)).toBe(false);
        world.validate();
    });

    test('a planned spawn is one call into wasm, and none inside a loop (recorded), with values too', async () => {
        const world = await newWorld();
        const anchor = world.spawn(Frozen);
        const { calls, restore } = countCalls(world);
        const inLoop: number[] = [];
        try {
            for (const _ of world.query({ all: [Frozen] })) {
                world.spawn(Position, Health); // pending: planned all the same
                calls.length = 0;
                inLoop.push(world.spawn(Position, Health));
                // The run's first recorded spawn fetches a block of indices; the next need none.
                expect(calls).toEqual(['tes_defer_handouts']);
                world.spawn(Position({ x: 1, y: 2 }), Health({ value: 3 }), Frozen);
                calls.length = 0;
                inLoop.push(world.spawn(Position({ x: 4, y: 5 }), Health({ value: 6 }), Frozen));
                expect(calls).toEqual([]);
            }
            expect(world.get(inLoop[0]!, Position)).toEqual({ x: 0, y: 0 });
            expect(world.get(inLoop[1]!, Position)).toEqual({ x: 4, y: 5 });
            expect(world.get(inLoop[1]!, Health, 'value')).toBe(6);
            expect(world.has(inLoop[1]!, Frozen)).toBe(true);
            expect(world.has(inLoop[0]!, Frozen)).toBe(false);
            calls.length = 0;
            // Outside the loop: the core places the row, JS writes the values into it.
            const e = world.spawn(Position({ x: 7, y: 8 }), Health({ value: 9 }), Frozen);
            expect(calls).toEqual(['tes_archetype_spawn']);
            expect(world.get(e, Position)).toEqual({ x: 7, y: 8 });
            expect(world.get(e, Health, 'value')).toBe(9);
        } finally {
            restore();
        }
        expect(world.query({ all: [Position, Health, Frozen] }).count()).toBe(3);
        expect(world.query({ all: [Position, Health] }).count()).toBe(5);
        expect(world.isAlive(anchor)).toBe(true);
        world.validate();
    });

    test('with values: each entity its own, whatever shape comes next, as the general path gives them', async () => {
        const world = await newWorld();
        const spawned: [number, unknown, unknown][] = [];
        const spawn = (position: Record<string, unknown> | undefined, health: number | undefined) => {
            const items = [
                position === undefined ? Position : Position(position as never),
                health === undefined ? Health : Health({ value: health }),
            ];
            const given = Object.fromEntries(Object.entries(position ?? {}).filter(([, v]) => v !== undefined));
            spawned.push([world.spawn(...items), { x: 0, y: 0, ...given }, health ?? 0]);
        };
        for (let i = 0; i < 4; i++) {
            spawn({ x: i, y: -i }, i); // the plan
            spawn({ y: i, x: 2 * i }, i); // other key order
            spawn({ x: i }, i); // a key fewer
            spawn({ x: i, y: undefined }, i); // a value left out
            spawn({ x: i, y: 1 }, undefined); // a bare component in its place
            spawn(undefined, i);
        }
        for (const [e, position, health] of spawned) {
            expect(world.get(e, Position)).toEqual(position);
            expect(world.get(e, Health, 'value')).toBe(health);
        }
        world.validate();
    });

    test('with values: errors are those of the general path, and a refused spawn spawns nothing', async () => {
        const planned = await newWorld();
        const fresh = await newWorld();
        planned.spawn(Position({ x: 1, y: 2 }), Health({ value: 3 }));
        planned.spawn(Position({ x: 1, y: 2 }), Health({ value: 3 }));
        const before = planned.stats().entityCount;
        const bad: [() => unknown[], ErrorCode][] = [
            [() => [Position({ x: 1, y: 2 }), Health({ value: 2.5 })], 'BAD_VALUE'],
            [() => [Position({ x: 1, y: 2 }), Health({ value: 2 ** 40 })], 'BAD_VALUE'],
            [() => [Position({ x: 1, y: '2' as never }), Health({ value: 3 })], 'BAD_VALUE'],
            [() => [Position({ x: 1, y: [2] as never }), Health({ value: 3 })], 'BAD_VALUE'],
            [() => [Position({ x: 1, z: 2 } as never), Health({ value: 3 })], 'UNKNOWN_FIELD'],
        ];
        for (const [items, code] of bad) {
            const general = expectError(() => fresh.spawn(...(items() as [])), code);
            const viaPlan = expectError(() => planned.spawn(...(items() as [])), code);
            expect(viaPlan.message).toBe(general.message);
            expect(viaPlan.component).toBe(general.component);
            expect(viaPlan.field).toBe(general.field);
        }
        expect(planned.stats().entityCount).toBe(before);
        planned.validate();
    });

    test('with values: each value is read once, planned or not', async () => {
        const world = await newWorld();
        world.spawn(Health({ value: 1 }));
        let reads = 0;
        const counting = (answer: unknown) => ({
            get value() {
                reads++;
                return answer;
            },
        });
        const e = world.spawn(Health(counting(5) as never));
        expect(reads).toBe(1);
        expect(world.get(e, Health, 'value')).toBe(5);
        reads = 0;
        expectError(() => world.spawn(Health(counting('5') as never)), 'BAD_VALUE');
        expect(reads).toBe(1);
        reads = 0;
        const f = world.spawn(Health(counting(undefined) as never)); // left out, as in the general path
        expect(reads).toBe(1);
        expect(world.get(f, Health, 'value')).toBe(0);
    });

    test('with values: right after memory grows, and as shapes of more values take the plan in turn', async () => {
        const world = await newWorld();
        const heap = (world as unknown as { heap: { memory: WebAssembly.Memory } }).heap;
        const spawned: [number, unknown, number][] = [];
        const small = (i: number) => {
            spawned.push([world.spawn(Position({ x: i, y: -i })), { x: i, y: -i }, 0]);
        };
        // Nine numbers: the plan's block must grow past what the two-number shape needed.
        const big = (i: number) => {
            const e = world.spawn(
                Position({ x: 2 * i, y: 3 * i }),
                Health({ value: i }),
                Inventory({ items: [i, i + 1, i + 2, i + 3], count: 4 }),
            );
            spawned.push([e, { x: 2 * i, y: 3 * i }, i]);
            expect(world.get(e, Inventory, 'items')).toEqual([i, i + 1, i + 2, i + 3]);
        };
        for (let i = 0; i < 3; i++) small(i); // planned from the second on
        const before = heap.memory.buffer;
        heap.memory.grow(16); // what an allocation does when memory is full: the old buffer is detached
        expect(before.byteLength).toBe(0);
        for (let i = 3; i < 6; i++) small(i);
        for (let i = 6; i < 12; i++) (i % 2 ? small : big)(i);
        for (let i = 12; i < 16; i++) big(i);
        for (const [e, position, health] of spawned) {
            expect(world.get(e, Position)).toEqual(position);
            if (health) expect(world.get(e, Health, 'value')).toBe(health);
        }
        world.validate();
    });

    test('with values outside a loop: consumers, checkpoints and snapshots see what the general path gives', async () => {
        // `planned` spawns one shape over and over (the plan: JS writes the row); `general`
        // alternates the key order, so that no spawn matches the latest shape.
        const run = async (planned: boolean) => {
            const world = await newWorld();
            const added = world.subscribe({ added: [Position] });
            const changed = world.subscribe({ changed: [Position] });
            const spawn = (i: number) =>
                world.spawn(Position(planned || i % 2 ? { x: i, y: -i } : ({ y: -i, x: i } as never)), Health({ value: i }));
            const first = [0, 1, 2, 3, 4].map(spawn);
            added.drain();
            changed.drain();
            const base = world.checkpoint();
            const atBase = world.snapshot();
            const later = [5, 6, 7].map(spawn);
            world.set(first[0]!, Position, 'x', 50);
            // Initial values are part of the spawn: added, not changed.
            const seen = { added: [...added.drain().entities], changed: [...changed.drain().entities] };
            const next = world.checkpoint();
            const atNext = world.snapshot();
            world.set(later[1]!, Health, 'value', 60);
            world.despawn(later[2]!);
            world.rewind(next);
            expect(world.snapshot()).toEqual(atNext);
            world.rewind(base);
            expect(world.snapshot()).toEqual(atBase);
            world.validate();
            return { seen, atBase, atNext, first, later };
        };
        const viaPlan = await run(true);
        const general = await run(false);
        expect(viaPlan.seen).toEqual({ added: viaPlan.later, changed: [viaPlan.first[0]] });
        expect(viaPlan.seen).toEqual(general.seen);
        expect(viaPlan.atBase).toEqual(general.atBase);
        expect(viaPlan.atNext).toEqual(general.atNext);
    });

    test('with values: a spawn whose own call grows memory writes its values through fresh views', async () => {
        const world = await newWorld();
        world.spawn(Position({ x: 1, y: 2 }));
        world.spawn(Position({ x: 1, y: 2 })); // planned from the second on
        let e = 0;
        expect(spawnsGrowingMemory(world, () => (e = world.spawn(Position({ x: 3, y: 4 }))))).toBe(1);
        expect(world.get(e, Position)).toEqual({ x: 3, y: 4 });
        expect(world.stats().entityCount).toBe(3); // one spawn, made once
        world.validate();
    });

    test('with values: a placement the core refuses goes on to its general call, each value still read once', async () => {
        const world = await newWorld();
        const heap = (
            world as unknown as { heap: { exports: Record<string, (...a: number[]) => number>; results: Record<string, number> } }
        ).heap;
        world.spawn(Position({ x: 1, y: 2 }));
        world.spawn(Position({ x: 1, y: 2 })); // planned from the second on
        const real = heap.exports;
        let refused = 0;
        heap.exports = {
            ...real,
            tes_archetype_spawn: () => {
                refused++;
                return heap.results.OUT_OF_MEMORY!;
            },
        };
        let reads = 0;
        const values = {
            get x() {
                reads++;
                return 3;
            },
            y: 4,
        };
        const e = world.spawn(Position(values));
        heap.exports = real;
        expect(refused).toBe(1);
        expect(reads).toBe(1);
        expect(world.get(e, Position)).toEqual({ x: 3, y: 4 });
        expect(world.stats().entityCount).toBe(3);
        world.validate();
    });

    test('without values: a spawn whose own call grows memory answers its handle', async () => {
        const world = await newWorld();
        const first = world.spawn(Position);
        world.spawn(Position); // planned from the second on
        let e = 0;
        expect(spawnsGrowingMemory(world, () => (e = world.spawn(Position)))).toBe(1);
        expect(world.isAlive(e)).toBe(true);
        expect(e).not.toBe(first);
        world.set(e, Position, 'x', 7);
        expect(world.get(e, Position, 'x')).toBe(7);
        expect(world.get(first, Position, 'x')).toBe(0);
        world.validate();
    });

    test("the plan's block in wasm memory is freed with its world", async () => {
        const world = await newWorld();
        const heap = (world as unknown as { heap: { exports: Record<string, (...a: number[]) => number> } }).heap;
        const real = heap.exports;
        const allocated: number[] = [];
        const freed: number[] = [];
        heap.exports = {
            ...real,
            tes_malloc: (bytes: number) => {
                const pointer = real.tes_malloc!(bytes);
                allocated.push(pointer);
                return pointer;
            },
            tes_free: (pointer: number) => {
                freed.push(pointer);
                return real.tes_free!(pointer);
            },
        };
        try {
            world.spawn(Health({ value: 1 })); // the general path, then the plan is learned: its block
            const block = allocated[allocated.length - 1];
            world.spawn(Health({ value: 2 })); // planned: no allocation
            expect(allocated[allocated.length - 1]).toBe(block);
            expect(freed).not.toContain(block);
            world.destroy();
            expect(freed).toContain(block);
        } finally {
            heap.exports = real;
        }
    });

    test('inside a loop the planned spawn is recorded like any other, and placed when the loop ends', async () => {
        const world = await newWorld();
        world.spawn(Position, Health); // planned
        const pending: number[] = [];
        for (const _ of world.query({ all: [Position] })) {
            for (let i = 0; i < 3; i++) pending.push(world.spawn(Position, Health));
            expectError(() => world.get(pending[0]!, Health, 'value'), 'PENDING_ENTITY');
            world.set(pending[1]!, Health, 'value', 7);
        }
        for (const e of pending) expect(membership(world, e)).toEqual([true, true, false, false]);
        expect(world.get(pending[1]!, Health, 'value')).toBe(7);
        world.validate();
    });
});
