// Per-entity access (bindings/access.ts): world.get / set / has / isAlive and world.field, on
// every path: placed, stale, pending, sparse, tracked, untracked, each value as the core takes it.
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';

import { component, relation, tag, type Entity } from '../../dist/index.js';
import { countCalls, EDGE_NUMBERS, EDGE_VALUES, expectError, worldPerTest } from './support.js';

const newWorld = worldPerTest();

const Position = component('Position', { x: 'f32', y: 'f32' });
const Velocity = component('Velocity', { x: 'f32', y: 'f32' });
const Health = component('Health', { value: 'i32' });
const Inventory = component('Inventory', { items: ['u32', 4], count: 'u8' });
const Frozen = tag('Frozen');
const Likes = relation('Likes', { amount: 'f32' });
const schema = { f32: 'f32', f64: 'f64', i8: 'i8', u8: 'u8', i16: 'i16', u16: 'u16', i32: 'i32', u32: 'u32' } as const;
type FieldType = keyof typeof schema;
const types = Object.keys(schema) as FieldType[];
/** Chunk storage. */
const Dense = component('Dense', schema);
/** Sparse storage: another path through the core, the reference for what a value does. */
const Reference = component('Reference', schema, { storage: 'sparse' });

describe('world.get / world.set by handle', () => {
    test('every field type and array fields read back what was written, as the chunk columns hold it', async () => {
        const world = await newWorld();
        const e = world.spawn(Dense, Inventory, Position);
        const values = { f32: 1.5, f64: 0.1, i8: -128, u8: 255, i16: -32768, u16: 65535, i32: -2147483648, u32: 4294967295 };
        for (const type of types) world.set(e, Dense, type, values[type]);
        for (const type of types) expect(world.get(e, Dense, type)).toBe(values[type]);
        expect(world.get(e, Dense)).toEqual(values);
        world.set(e, Inventory, { items: [1, 2, 3, 4], count: 4 });
        expect(world.get(e, Inventory, 'items')).toEqual([1, 2, 3, 4]);
        world.set(e, Position, { x: 3, y: 4 });
        for (const chunk of world.query({ all: [Position] })) {
            expect([...chunk.column(Position, 'x')]).toEqual([3]);
            expect([...chunk.column(Position, 'y')]).toEqual([4]);
        }
    });

    test('an entity that moved archetypes is found in its new chunk; the old row is not touched', async () => {
        const world = await newWorld();
        const a = world.spawn(Position({ x: 1, y: 1 }));
        const b = world.spawn(Position({ x: 2, y: 2 }));
        expect(world.get(a, Position, 'x')).toBe(1);
        world.add(a, Velocity); // a moves; b is swapped into its old row
        world.set(a, Position, 'x', 10);
        expect(world.get(a, Position, 'x')).toBe(10);
        expect(world.get(b, Position, 'x')).toBe(2);
        world.remove(a, Velocity);
        expect(world.get(a, Position, 'x')).toBe(10);
        expect(world.get(b, Position, 'x')).toBe(2);
    });

    test('fields asked for in turn, of one name in two components too, each read and write their own cells', async () => {
        // world.get / world.set remember the latest fields asked for by component and name.
        const world = await newWorld();
        const e = world.spawn(Position, Velocity, Health);
        const f = world.spawn(Position, Velocity);
        for (let round = 0; round < 5; round++) {
            world.set(e, Position, 'x', round + 0.5);
            world.set(e, Velocity, 'x', round + 0.25); // the same name, another component
            world.set(e, Position, 'y', -round);
            world.set(e, Health, 'value', round * 7);
            world.set(f, Velocity, 'x', 100 + round); // another entity, another archetype
            world.set(e, Position, 'x', round + 1.5);
            expect(world.get(e, Velocity, 'x')).toBe(round + 0.25);
            expect(world.get(e, Position, 'x')).toBe(round + 1.5);
            expect(world.get(e, Position, 'y')).toBe(-round);
            expect(world.get(e, Health, 'value')).toBe(round * 7);
            expect(world.get(f, Position, 'x')).toBe(0);
            expect(world.get(f, Velocity, 'x')).toBe(100 + round);
        }
        expect(world.get(e, Position)).toEqual({ x: 5.5, y: -4 });
        expect(world.get(e, Velocity)).toEqual({ x: 4.25, y: 0 });
        // An archetype freed and its address taken by another layout: the remembered fields
        // find the new entity's cells, not the freed archetype's.
        for (let round = 0; round < 10; round++) {
            const gone = world.spawn(Position, Frozen);
            world.set(gone, Position, 'x', 1);
            world.despawn(gone);
            world.reclaimArchetypes();
            const g = world.spawn(Inventory, Position({ y: 9 }), Frozen);
            world.set(g, Position, 'x', round);
            expect(world.get(g, Position, 'x')).toBe(round);
            expect(world.get(g, Position, 'y')).toBe(9);
            expect(world.get(g, Inventory, 'count')).toBe(0);
            world.despawn(g);
        }
        world.validate();
    });

    test('a stale handle throws STALE_ENTITY and never touches the entity that reuses its index', async () => {
        const world = await newWorld({ minFreeIndices: 1 });
        const old = world.spawn(Health({ value: 5 }));
        world.despawn(old);
        world.despawn(world.spawn()); // indices are reused once more than minFreeIndices wait
        let reused: Entity | undefined;
        for (let i = 0; i < 8 && reused === undefined; i++) {
            const e = world.spawn(Health({ value: 7 }));
            if ((e & 0x1fffff) === (old & 0x1fffff)) reused = e;
        }
        expect(reused).toBeDefined();
        expectError(() => world.get(old, Health, 'value'), 'STALE_ENTITY', { operation: 'world.get', entity: old });
        expectError(() => world.set(old, Health, 'value', 99), 'STALE_ENTITY', { operation: 'world.set', entity: old });
        expectError(() => world.set(old, Health, { value: 99 }), 'STALE_ENTITY', { entity: old });
        expectError(() => world.get(old, Health), 'STALE_ENTITY', { operation: 'world.get', entity: old });
        expectError(() => world.has(old, Health), 'STALE_ENTITY', { entity: old });
        expect(world.isAlive(old)).toBe(false);
        expect(world.get(reused!, Health, 'value')).toBe(7);
    });

    test('pending entities: get and has throw PENDING_ENTITY, set is recorded and applied in order', async () => {
        const world = await newWorld();
        world.spawn(Position);
        let pending: Entity = 0;
        for (const _ of world.query({ all: [Position] })) {
            pending = world.spawn(Health({ value: 1 }));
            expect(world.isAlive(pending)).toBe(true);
            expectError(() => world.get(pending, Health, 'value'), 'PENDING_ENTITY', { entity: pending });
            expectError(() => world.get(pending, Health), 'PENDING_ENTITY', { entity: pending });
            expectError(() => world.has(pending, Health), 'PENDING_ENTITY', { entity: pending });
            world.set(pending, Health, 'value', 2);
            world.set(pending, Health, { value: 3 });
        }
        expect(world.get(pending, Health, 'value')).toBe(3);
    });

    test('sparse components and pairs keep working', async () => {
        const world = await newWorld();
        const e = world.spawn(Reference);
        world.set(e, Reference, 'i16', -5);
        expect(world.get(e, Reference, 'i16')).toBe(-5);
        expect(world.has(e, Reference)).toBe(true);
        const bob = world.spawn();
        world.addPair(e, Likes, bob, { amount: 2 });
        expect(world.has(e, Likes(bob))).toBe(true);
        expect(world.getPair(e, Likes, bob, 'amount')).toBe(2);
        expectError(() => world.get(e, Likes as never, 'amount'), 'NEEDS_TARGET');
    });

    test('has and isAlive on placed entities, removed components, never-registered ones and non-handles', async () => {
        const world = await newWorld();
        const e = world.spawn(Position, Frozen);
        expect(world.has(e, Position)).toBe(true);
        expect(world.has(e, Frozen)).toBe(true);
        expect(world.has(e, Health)).toBe(false); // never registered in this world
        world.spawn(Health);
        expect(world.has(e, Health)).toBe(false); // registered, not on e
        world.remove(e, Frozen);
        expect(world.has(e, Frozen)).toBe(false);
        for (const value of [0, -1, 1.5, '1', 2 ** 30, 2 ** 32 + e, NaN, undefined, null, {}]) {
            expect(world.isAlive(value as never)).toBe(false);
        }
        expectError(() => world.has(2 ** 32 + e, Position), 'INVALID_ARGUMENT');
    });

    test('errors name what is wrong: unknown field, tag, missing component, bad values', async () => {
        const world = await newWorld();
        const e = world.spawn(Position, Frozen);
        expectError(() => world.get(e, Position, 'z' as never), 'UNKNOWN_FIELD', { entity: e, component: 'Position', field: 'z' });
        expectError(() => world.get(e, Frozen, 'x' as never), 'TAG_HAS_NO_DATA');
        expectError(() => world.get(e, Frozen), 'TAG_HAS_NO_DATA');
        expectError(() => world.get(e, Velocity, 'x'), 'MISSING_COMPONENT', { entity: e, component: 'Velocity' });
        world.spawn(Velocity);
        expectError(() => world.get(e, Velocity, 'x'), 'MISSING_COMPONENT', { entity: e, component: 'Velocity' });
        expectError(() => world.set(e, Position, 'x', '1' as never), 'BAD_VALUE', { field: 'x' });
        expectError(() => world.set(e, Position, 'x', 1e39), 'BAD_VALUE', { field: 'x' });
        expectError(() => world.get(e, {} as never, 'x'), 'INVALID_ARGUMENT');
    });
});

describe('values: chunk storage and sparse storage store and refuse exactly the same numbers', () => {
    const outcome = (run: () => void, read: () => number): string | number => {
        try {
            run();
        } catch (error) {
            return (error as { code: string }).code;
        }
        return read();
    };

    test('every edge value, every type: the same result through chunk storage and sparse storage', async () => {
        const world = await newWorld();
        const dense = world.spawn(Dense);
        const sparse = world.spawn(Reference);
        for (const type of types) {
            for (const value of EDGE_VALUES) {
                const viaJs = outcome(
                    () => world.set(dense, Dense, type, value),
                    () => world.get(dense, Dense, type),
                );
                const viaC = outcome(
                    () => world.set(sparse, Reference, type, value),
                    () => world.get(sparse, Reference, type),
                );
                expect(viaJs, `${type} ${value}`).toEqual(viaC);
            }
        }
    });

    test('random numbers: the same result both ways (property)', async () => {
        const world = await newWorld();
        const dense = world.spawn(Dense);
        const sparse = world.spawn(Reference);
        fc.assert(
            fc.property(fc.constantFrom(...types), EDGE_NUMBERS, (type, value) => {
                const viaJs = outcome(
                    () => world.set(dense, Dense, type, value),
                    () => world.get(dense, Dense, type),
                );
                const viaC = outcome(
                    () => world.set(sparse, Reference, type, value),
                    () => world.get(sparse, Reference, type),
                );
                expect(viaJs).toEqual(viaC);
            }),
            { numRuns: 5000 },
        );
    });

    test('a multi-field set is all or nothing: one bad value or unknown field writes none', async () => {
        const world = await newWorld();
        const e = world.spawn(Dense({ f32: 1, i8: 1, u32: 1 }));
        expectError(() => world.set(e, Dense, { f32: 2, i8: 300 }), 'BAD_VALUE', { field: 'i8' });
        expectError(() => world.set(e, Dense, { u32: 2, nope: 1 } as never), 'UNKNOWN_FIELD', { field: 'nope' });
        expectError(() => world.set(e, Dense, { f32: 2, u32: 'x' } as never), 'BAD_VALUE', { field: 'u32' });
        expect(world.get(e, Dense)).toMatchObject({ f32: 1, i8: 1, u32: 1 });
        world.set(e, Dense, { f32: 2, i8: -2, u32: undefined });
        expect(world.get(e, Dense)).toMatchObject({ f32: 2, i8: -2, u32: 1 });
    });

    test('each value of a multi-field set is read once, and what was read is what is written', async () => {
        const world = await newWorld();
        const e = world.spawn(Position);
        let reads = 0;
        const values = {
            get x() {
                reads++;
                return reads === 1 ? 5 : 1e39; // a second read would see a value f32 refuses
            },
            y: 6,
        };
        world.set(e, Position, values);
        expect(reads).toBe(1);
        expect(world.get(e, Position)).toEqual({ x: 5, y: 6 });
    });
});

describe('change tracking', () => {
    test('a tracked write is a change for consumers; a write to an untracked component beside it is none', async () => {
        const world = await newWorld();
        const hits = world.subscribe({ changed: [Health] });
        const e = world.spawn(Health, Position);
        hits.drain();
        world.set(e, Position, 'x', 1); // Position is untracked, in a chunk that tracks Health
        world.set(e, Position, { x: 2, y: 2 });
        expect(hits.drain().entities.length).toBe(0);
        world.set(e, Health, 'value', 3);
        expect([...hits.drain().entities]).toEqual([e]);
        world.set(e, Health, { value: 4 });
        expect([...hits.drain().entities]).toEqual([e]);
        const hp = world.field(Health, 'value');
        hp.set(e, 5);
        expect([...hits.drain().entities]).toEqual([e]);
        hp.get(e);
        world.get(e, Health);
        expect(hits.drain().entities.length).toBe(0); // reads mark nothing
    });

    test('a write inside a loop is a change, seen once', async () => {
        const world = await newWorld();
        const hits = world.subscribe({ changed: [Health] });
        const es = [world.spawn(Health), world.spawn(Health)];
        hits.drain();
        for (const chunk of world.query({ all: [Health] })) {
            for (const e of chunk.entities) world.set(e, Health, 'value', 9);
        }
        expect([...hits.drain().entities].sort()).toEqual([...es].sort());
        expect(hits.drain().entities.length).toBe(0);
    });
});

describe('world.field', () => {
    test('a handle moving between archetypes with and without the component finds each cell and refuses the others', async () => {
        const world = await newWorld();
        const hp = world.field(Health, 'value');
        // Three archetypes with Health at different column offsets, and one without it.
        const a = world.spawn(Health({ value: 1 }));
        const b = world.spawn(Position, Health({ value: 2 }));
        const c = world.spawn(Position, Velocity, Health({ value: 3 }));
        const none = world.spawn(Position({ x: 7, y: 8 }));
        for (let round = 0; round < 3; round++) {
            for (const [e, want] of [
                [a, 1],
                [none, undefined],
                [b, 2],
                [none, undefined],
                [none, undefined],
                [c, 3],
                [a, 1],
            ] as const) {
                if (want === undefined) {
                    expectError(() => hp.get(e), 'MISSING_COMPONENT', { entity: e, component: 'Health' });
                    expectError(() => hp.set(e, 5), 'MISSING_COMPONENT', { entity: e, component: 'Health' });
                } else {
                    expect(hp.get(e)).toBe(want + round);
                    hp.set(e, want + round + 1);
                    expect(world.get(e, Health, 'value')).toBe(want + round + 1);
                    hp.set(e, want + round);
                }
            }
            for (const e of [a, b, c]) hp.set(e, hp.get(e) + 1);
        }
        // The entity without Health kept its own values.
        expect(world.get(none, Position)).toEqual({ x: 7, y: 8 });
        expect([a, b, c].map((e) => world.get(e, Health, 'value'))).toEqual([4, 5, 6]);
    });

    test('get and set are world.get and world.set for that field, errors included', async () => {
        const world = await newWorld();
        const hp = world.field(Health, 'value');
        expect(hp.name).toBe('value');
        expect(hp.component).toBe(Health);
        const e = world.spawn(Position);
        expectError(() => hp.get(e), 'MISSING_COMPONENT', { operation: 'field.get', entity: e, component: 'Health', field: 'value' });
        world.add(e, Health({ value: 10 }));
        hp.set(e, hp.get(e) - 3);
        expect(world.get(e, Health, 'value')).toBe(7);
        expectError(() => hp.set(e, 2.5), 'BAD_VALUE', { operation: 'field.set', field: 'value' });
        expect(hp.get(e)).toBe(7);
        world.despawn(e);
        expectError(() => hp.get(e), 'STALE_ENTITY', { operation: 'field.get', entity: e });
        const items = world.field(Inventory, 'items');
        const f = world.spawn(Inventory({ items: [4, 3, 2, 1] }));
        expect(items.get(f)).toEqual([4, 3, 2, 1]);
        items.set(f, [1, 1, 1, 1]);
        expect(world.get(f, Inventory, 'items')).toEqual([1, 1, 1, 1]);
        world.destroy();
        expectError(() => hp.get(f), 'DESTROYED');
    });

    test('a field that found its cells forgets them when the world is destroyed', async () => {
        const world = await newWorld();
        const hp = world.field(Health, 'value');
        const e = world.spawn(Health({ value: 3 }));
        hp.set(e, 4);
        expect(hp.get(e)).toBe(4); // the field knows the world's table and Health's column now
        world.destroy();
        // The world's memory is freed and taken by the next world of the module, with an
        // entity of the same handle: reading by what the field kept would answer from it.
        const next = await newWorld();
        expect(next.spawn(Health({ value: 99 }))).toBe(e);
        expectError(() => hp.get(e), 'DESTROYED', { operation: 'field.get' });
        expectError(() => hp.set(e, 5), 'DESTROYED', { operation: 'field.set' });
        expectError(() => world.get(e, Health, 'value'), 'DESTROYED');
        expectError(() => world.get(e, Health), 'DESTROYED');
        // A whole-component write to a destroyed world reads nothing of its values.
        let reads = 0;
        const values = {
            get value() {
                reads++;
                return 5;
            },
        };
        expectError(() => world.set(e, Health, values), 'DESTROYED', { operation: 'world.set' });
        expect(reads).toBe(0);
        expect(next.get(e, Health, 'value')).toBe(99);
    });

    test('refuses what has no field: unknown names, tags, relations, non-components', async () => {
        const world = await newWorld();
        expectError(() => world.field(Health, 'hp' as never), 'UNKNOWN_FIELD', {
            operation: 'world.field',
            component: 'Health',
            field: 'hp',
        });
        expectError(() => world.field(Frozen, 'x' as never), 'TAG_HAS_NO_DATA');
        expectError(() => world.field(Likes as never, 'amount' as never), 'NEEDS_TARGET');
        expectError(() => world.field({} as never, 'x' as never), 'INVALID_ARGUMENT');
    });

    test("a registration taken back by a failed call never lets a field read another component's column", async () => {
        const world = await newWorld();
        const Fresh = component('Fresh', { v: 'f64' });
        const Other = component('Other', { w: 'f64' });
        const fresh = world.field(Fresh, 'v');
        const anchor = world.spawn(Position);
        // Registers Fresh, then fails: Fresh's registration is taken back.
        expectError(() => world.add(anchor, Fresh({ v: 'bad' as never })), 'BAD_VALUE');
        const e = world.spawn(Other({ w: 42 })); // Other may take the id Fresh had
        expectError(() => fresh.get(e), 'MISSING_COMPONENT');
        expect(world.get(e, Other, 'w')).toBe(42);
        world.add(e, Fresh({ v: 1 }));
        expect(fresh.get(e)).toBe(1);
        expect(world.get(e, Other, 'w')).toBe(42);
    });

    test("a registration a rewind takes back never lets a sparse field's call name the component that takes its id", async () => {
        // A sparse field's one call carries the id it learned, trusted while the core's access
        // epoch holds; taking a registration back moves it.
        const world = await newWorld({ checkpoints: 4 });
        const Fresh = component('FreshSparse', { v: 'f64' }, { storage: 'sparse' });
        const Other = component('OtherSparse', { w: 'f64' }, { storage: 'sparse' });
        const fresh = world.field(Fresh, 'v');
        const n = world.checkpoint();
        const e = world.spawn(Position, Fresh({ v: 7 })); // Fresh registered after the checkpoint
        expect(fresh.get(e)).toBe(7); // its id learned
        world.rewind(n); // e gone, Fresh's registration taken back
        const f = world.spawn(Position, Other({ w: 42 })); // Other takes the id Fresh had
        expect(f).toBe(e); // the same handle, even
        expectError(() => fresh.get(f), 'MISSING_COMPONENT');
        expectError(() => fresh.set(f, 1), 'MISSING_COMPONENT');
        expect(world.get(f, Other, 'w')).toBe(42);
        world.add(f, Fresh({ v: 1 }));
        fresh.set(f, 2);
        expect(fresh.get(f)).toBe(2);
        expect(world.get(f, Other, 'w')).toBe(42);
    });

    test('an untracked read or write makes no call into wasm, after memory grew too; a tracked write makes one', async () => {
        const world = await newWorld();
        const heap = (world as unknown as { heap: { memory: WebAssembly.Memory } }).heap;
        const { calls, restore } = countCalls(world);
        try {
            const x = world.field(Position, 'x');
            const e = world.spawn(Position({ x: 8 }), Velocity);
            calls.length = 0;
            x.set(e, 3);
            world.set(e, Position, 'x', x.get(e) + 1);
            expect(world.get(e, Position, 'x')).toBe(4);
            expect(calls).toEqual([]);
            const before = heap.memory.buffer;
            heap.memory.grow(16); // what an allocation does when memory is full: the old buffer is detached
            expect(before.byteLength).toBe(0);
            calls.length = 0;
            x.set(e, 9);
            expect(x.get(e)).toBe(9);
            expect(calls).toEqual([]);
            const changes = world.subscribe({ changed: [Position] });
            changes.drain();
            calls.length = 0;
            x.set(e, 10);
            expect(calls).toEqual(['tes_mark_changed']); // the core stamps, JS stores
            expect([...changes.drain().entities]).toEqual([e]);
        } finally {
            restore();
        }
    });

    test('a tracked write whose stamp the core refuses leaves the old value', async () => {
        const world = await newWorld();
        // The core refuses the stamp and the checked write after it, once `refusing` is set (it
        // does neither for a live entity, so the refusal is staged); Fields keep the exports
        // they were made with, so the stand-ins go in first.
        const heap = (world as unknown as { heap: { exports: Record<string, unknown>; results: Record<string, number> } }).heap;
        const real = heap.exports as Record<string, (...args: unknown[]) => number>;
        const refused = heap.results.INVALID_ARGUMENT!;
        let refusing = false;
        heap.exports = {
            ...real,
            tes_mark_changed: (...args: unknown[]) => (refusing ? refused : real.tes_mark_changed!(...args)),
            tes_set_number: (...args: unknown[]) => (refusing ? refused : real.tes_set_number!(...args)),
        };
        try {
            const e = world.spawn(Position({ x: 8 }), Velocity);
            const x = world.field(Position, 'x');
            const changes = world.subscribe({ changed: [Position] });
            changes.drain();
            x.set(e, 9); // learned, stamped and stored
            expect([...changes.drain().entities]).toEqual([e]);
            refusing = true;
            expectError(() => x.set(e, 3), 'INVALID_ARGUMENT');
            expectError(() => world.set(e, Position, 'x', 4), 'INVALID_ARGUMENT');
            refusing = false;
            expect(world.get(e, Position, 'x')).toBe(9);
            expect([...changes.drain().entities]).toEqual([]);
        } finally {
            heap.exports = real;
        }
    });

    test('a whole-component get and set are found in JS: no call when untracked, one stamp for all fields when tracked', async () => {
        const world = await newWorld();
        const { calls, restore } = countCalls(world);
        try {
            const e = world.spawn(Position({ x: 1, y: 2 }), Velocity);
            calls.length = 0;
            world.set(e, Position, { x: 3, y: 4 });
            world.set(e, Position, { y: 5, x: undefined }); // y alone, x kept
            expect(world.get(e, Position)).toEqual({ x: 3, y: 5 });
            expect(calls).toEqual([]);
            const changes = world.subscribe({ changed: [Position] });
            changes.drain();
            calls.length = 0;
            world.set(e, Position, { x: 6, y: 7 });
            expect(calls).toEqual(['tes_mark_changed']);
            expect([...changes.drain().entities]).toEqual([e]);
            // Refused (y is beyond f32): nothing written, nothing stamped.
            expectError(() => world.set(e, Position, { x: 8, y: 1e39 }), 'BAD_VALUE', { field: 'y' });
            expect([...changes.drain().entities]).toEqual([]);
            expect(world.get(e, Position)).toEqual({ x: 6, y: 7 });
            expect(world.get(e, Velocity)).toEqual({ x: 0, y: 0 });
        } finally {
            restore();
        }
    });

    test('components registered after the field was made (the core moves its records): tracking is still seen', async () => {
        const world = await newWorld();
        const x = world.field(Position, 'x');
        const e = world.spawn(Position);
        x.set(e, 1); // the field's view of Position's record, made now
        // Enough new components that the core's component records are reallocated.
        for (let i = 0; i < 300; i++) world.spawn(component(`Moved${i}`, { v: 'f32' }));
        // Untracked: a store, no call (a stale look at the old records would read garbage).
        const { calls, restore } = countCalls(world);
        try {
            x.set(e, 5);
            expect(calls).toEqual([]);
        } finally {
            restore();
        }
        const changes = world.subscribe({ changed: [Position] });
        changes.drain();
        x.set(e, 2);
        expect([...changes.drain().entities]).toEqual([e]);
        changes.close();
        x.set(e, 3); // untracked again: a store, no stamp to see
        expect(x.get(e)).toBe(3);
    });

    test('memory growth between calls: the field reads through fresh views', async () => {
        const world = await newWorld();
        const x = world.field(Position, 'x');
        const e = world.spawn(Position({ x: 8 }));
        expect(x.get(e)).toBe(8);
        const bytes = world.stats().bytesAllocated;
        world.spawnMany(200_000, Position, Velocity, Health, Dense);
        expect(world.stats().bytesAllocated).toBeGreaterThan(bytes + 8_000_000);
        x.set(e, 9);
        expect(x.get(e)).toBe(9);
        expect(world.get(e, Position, 'x')).toBe(9);
    });
});
