// Contract tests of values (every field type, array fields, columns of spawnMany, pair data,
// changeDetection: 'value'), of TesseraError context for value and pair refusals, of
// snapshots restored from another world, of world options and of views across worlds.
// Each test quotes the README sentence it checks.
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';

import { createWorld, component, init, relation, tag, TesseraError, type World } from '../../dist/index.js';
import { EDGE_NUMBERS, expectError, FIELD_TYPES, storedAs, worldPerTest, type FieldTypeName } from './support.js';

const newWorld = worldPerTest();

const TYPES = FIELD_TYPES;
type T = FieldTypeName;

const bytesOf = (world: World) => Array.from(world.snapshot());

/** `fn` must throw a TesseraError `code` and leave the snapshot bytes and invariants as they were. */
function refusedUnchanged(world: World, fn: () => unknown, code: string, expected: Record<string, unknown> = {}): TesseraError {
    const before = world.snapshot();
    const error = expectError(fn, code as never, expected as never);
    expect(Buffer.compare(Buffer.from(world.snapshot()), Buffer.from(before))).toBe(0);
    world.validate();
    return error;
}

const AllTypes = component('CV_All', Object.fromEntries(TYPES.map((t) => [t, t])) as Record<T, T>);
const SparseAll = component('CV_SparseAll', Object.fromEntries(TYPES.map((t) => [t, t])) as Record<T, T>, { storage: 'sparse' });
const PairAll = relation('CV_PairAll', Object.fromEntries(TYPES.map((t) => [t, t])) as Record<T, T>);

const edgeNumbers = EDGE_NUMBERS;
const notNumbers = fc.constantFrom<unknown>('1', '', true, null, 10n, {}, [1], new Number(3), () => 1, Symbol('s'));

describe('values of every field type', () => {
    // README: "Values are checked before anything is written: `300` into a `u8`, `1.5` into an
    // `i32`, a string or a missing value anywhere throws `BAD_VALUE` and writes nothing".
    // README (Errors): "a failed call leaves the world exactly as it was (its snapshot is the same bytes)".
    test('set (one field and object), sparse set and setPair: accepted values read back as the type stores them; refused ones change nothing (fast-check)', async () => {
        const world = await newWorld();
        const e = world.spawn(AllTypes, SparseAll);
        const t = world.spawn();
        world.addPair(e, PairAll, t);
        fc.assert(
            fc.property(fc.constantFrom(...TYPES), fc.oneof(edgeNumbers, notNumbers), fc.integer({ min: 0, max: 3 }), (type, v, how) => {
                const expected = storedAs(type, v);
                const write = [
                    () => world.set(e, AllTypes, type, v as never),
                    () => world.set(e, AllTypes, { [type]: v } as never),
                    () => world.set(e, SparseAll, { [type]: v } as never),
                    () => world.setPair(e, PairAll, t, type, v as never),
                ][how]!;
                const read = [
                    () => world.get(e, AllTypes, type),
                    () => world.get(e, AllTypes)[type],
                    () => world.get(e, SparseAll)[type],
                    () => world.getPair(e, PairAll, t)[type],
                ][how]!;
                const component = how === 3 ? 'CV_PairAll' : how === 2 ? 'CV_SparseAll' : 'CV_All';
                if (expected === 'refused') {
                    refusedUnchanged(world, write, 'BAD_VALUE', { entity: e, component, field: type });
                } else {
                    write();
                    expect(Object.is(read(), expected), `${type} ${String(v)} read back ${read()}`).toBe(true);
                }
            }),
            { numRuns: 400, seed: 5 },
        );
    });

    // README: "a field given as `undefined` in a values object is left as it is."
    test('fields left out or given as undefined are left as they are; the others are written', async () => {
        const world = await newWorld();
        const e = world.spawn(AllTypes({ i8: -5, u32: 7, f64: -0 }));
        world.set(e, AllTypes, { u8: 9, i8: undefined, f64: undefined });
        const got = world.get(e, AllTypes);
        expect([got.u8, got.i8, got.u32]).toEqual([9, -5, 7]);
        expect(Object.is(got.f64, -0)).toBe(true);
        // An array field: its elements, -0 and NaN too, exactly as the type stores them.
        const Arr = component('CV_Arr', { v: ['f32', 3], w: ['i16', 2] });
        const a = world.spawn(Arr({ v: new Float64Array([-0, NaN, 0.1]), w: new Int8Array([-1, 2]) }));
        const arr = world.get(a, Arr);
        expect(Object.is(arr.v[0], -0)).toBe(true);
        expect(Number.isNaN(arr.v[1])).toBe(true);
        expect(arr.v[2]).toBe(Math.fround(0.1));
        expect(arr.w).toEqual([-1, 2]);
    });

    // README (Concepts): "`tag(name)`: a component without data." Errors: `TAG_HAS_NO_DATA`.
    test('a tag given values is refused everywhere values go, and nothing changes', async () => {
        const world = await newWorld();
        const Flag = tag('CV_Flag');
        const e = world.spawn(Flag);
        const ctx = { component: 'CV_Flag', field: 'a' };
        refusedUnchanged(world, () => world.set(e, Flag, { a: 1 } as never), 'TAG_HAS_NO_DATA', { ...ctx, entity: e });
        refusedUnchanged(world, () => world.set(e, Flag, 'a' as never, 1 as never), 'TAG_HAS_NO_DATA', ctx);
        refusedUnchanged(world, () => world.add(e, Flag({ a: 1 } as never)), 'TAG_HAS_NO_DATA', ctx);
        refusedUnchanged(world, () => world.spawnMany(2, Flag({ a: 1 } as never)), 'TAG_HAS_NO_DATA', ctx);
        refusedUnchanged(world, () => world.spawnMany(2, Flag.columns({ a: [1, 2] } as never)), 'TAG_HAS_NO_DATA', ctx);
        refusedUnchanged(world, () => world.get(e, Flag), 'TAG_HAS_NO_DATA', { component: 'CV_Flag' });
    });
});

describe('spawnMany with C.columns', () => {
    const Body = component('CV_Body', { x: 'f32', hp: 'i16', rgb: ['u8', 3] });
    const Mark = component('CV_Mark', { m: 'u16' }, { storage: 'sparse' });

    // README: "entity `i` takes `column[i]`; a field of `k` elements (`['f32', 3]`) takes `k`
    // numbers per entity, entity after entity, the layout of `chunk.column`; a scalar field may
    // also be one number for all."
    test('columns of arrays and typed arrays of other types, k numbers per entity, one number for all', async () => {
        const world = await newWorld();
        const handles = world.spawnMany(
            3,
            Body.columns({
                x: new Int32Array([1, -2, 3]),
                hp: new Float64Array([-0, 7, -300]),
                rgb: new Uint8ClampedArray([1, 2, 3, 4, 5, 6, 7, 8, 9]),
            }),
            Mark.columns({ m: 65535 }),
        );
        expect(Array.from(handles, (e) => world.get(e, Body))).toEqual([
            { x: 1, hp: 0, rgb: [1, 2, 3] },
            { x: -2, hp: 7, rgb: [4, 5, 6] },
            { x: 3, hp: -300, rgb: [7, 8, 9] },
        ]);
        expect(Array.from(handles, (e) => world.get(e, Mark, 'm'))).toEqual([65535, 65535, 65535]);
        world.validate();
    });

    // README: "A column must hold exactly `count × k` numbers (`BAD_VALUE` otherwise, before
    // anything is allocated or registered), and the whole call is checked before anything is
    // spawned: a value that does not fit its field at any entity refuses it, and the `BAD_VALUE`
    // names the component, the field, the value and the entity's `position` in the call".
    // README (Errors): "(its handle does not exist: the spawn was refused)".
    test('refusals: position of the entity at fault, no entity named, nothing spawned or registered', async () => {
        const world = await newWorld();
        world.spawn(Body);
        const at = (position: number, field: string, component = 'CV_Body') => ({
            operation: 'world.spawnMany',
            component,
            field,
            position,
            entity: undefined,
        });
        refusedUnchanged(world, () => world.spawnMany(5, Body.columns({ hp: [1, 2, 3, 4, 40000] })), 'BAD_VALUE', at(4, 'hp'));
        refusedUnchanged(
            world,
            () => world.spawnMany(5, Body.columns({ hp: new Float32Array([1, 2, 2.5, 4, 5]) })),
            'BAD_VALUE',
            at(2, 'hp'),
        );
        refusedUnchanged(world, () => world.spawnMany(3, Body.columns({ x: [0, 1, '2'] } as never)), 'BAD_VALUE', at(2, 'x'));
        refusedUnchanged(world, () => world.spawnMany(2, Body.columns({ x: new BigInt64Array(2) } as never)), 'BAD_VALUE', at(0, 'x'));
        refusedUnchanged(world, () => world.spawnMany(2, Body.columns({ rgb: [1, 2, 3, 4, 5, 256] })), 'BAD_VALUE', at(1, 'rgb'));
        refusedUnchanged(world, () => world.spawnMany(3, Body, Mark.columns({ m: [1, -1, 2] })), 'BAD_VALUE', at(1, 'm', 'CV_Mark'));
        const error = refusedUnchanged(world, () => world.spawnMany(5, Body.columns({ hp: [1, 2, 3, 4, 40000] })), 'BAD_VALUE');
        expect(error.message).toContain('40000');
        expect(error.message).toContain('i16');
        // Lengths: exactly count × k; an array field never takes one number for all.
        for (const columns of [
            { hp: [1, 2] },
            { rgb: [1, 2, 3, 4, 5] },
            { rgb: 3 },
            { x: new DataView(new ArrayBuffer(12)) },
            { x: null },
        ]) {
            refusedUnchanged(world, () => world.spawnMany(3, Body.columns(columns as never)), 'BAD_VALUE', { component: 'CV_Body' });
        }
        // A component registered by the refused call is taken back.
        const Fresh = component('CV_Fresh', { v: 'u8' });
        const count = world.stats().componentCount;
        refusedUnchanged(world, () => world.spawnMany(2, Fresh.columns({ v: [1, 999] })), 'BAD_VALUE', at(1, 'v', 'CV_Fresh'));
        expect(world.stats().componentCount).toBe(count);
    });

    // README: "Each element is read once."  "Only `spawnMany` takes columns."
    test('each element is read once; columns anywhere else are INVALID_ARGUMENT', async () => {
        const world = await newWorld();
        const reads: number[] = [0, 0, 0, 0, 0, 0];
        const column = new Proxy([1, 2, 3, 4, 5, 6], {
            get(target, key, receiver) {
                if (typeof key === 'string' && /^\d+$/.test(key)) reads[Number(key)]!++;
                return Reflect.get(target, key, receiver);
            },
        });
        const handles = world.spawnMany(2, Body.columns({ rgb: column }));
        expect(reads).toEqual([1, 1, 1, 1, 1, 1]);
        expect(world.get(handles[1]!, Body, 'rgb')).toEqual([4, 5, 6]);
        const e = world.spawn(Body);
        refusedUnchanged(world, () => world.spawn(Body.columns({ hp: [1] }) as never), 'INVALID_ARGUMENT', { component: 'CV_Body' });
        refusedUnchanged(world, () => world.add(e, Mark.columns({ m: [1] }) as never), 'INVALID_ARGUMENT', { component: 'CV_Mark' });
    });
});

describe('pair data and pair errors', () => {
    const Likes = relation('CV_Likes', { amount: 'u8', pos: ['f32', 2] });

    // README: "`world.getPair(alice, Likes, bob);` // { amount: 3 }" and "Objects from `get` and
    // `getPair` are fresh copies too."
    test('pair data round-trips -0 and NaN; bad values refused with the field named, nothing changed', async () => {
        const world = await newWorld();
        const [a, b] = world.spawnMany(2);
        world.addPair(a!, Likes, b!, { amount: 3, pos: [-0, NaN] });
        const got = world.getPair(a!, Likes, b!);
        expect(got.amount).toBe(3);
        expect(Object.is(got.pos[0], -0) && Number.isNaN(got.pos[1])).toBe(true);
        got.pos[0] = 5;
        expect(Object.is(world.getPair(a!, Likes, b!).pos[0], -0)).toBe(true);
        refusedUnchanged(world, () => world.setPair(a!, Likes, b!, { amount: 1, pos: [1, 1e39] }), 'BAD_VALUE', {
            entity: a,
            component: 'CV_Likes',
            field: 'pos',
        });
        refusedUnchanged(world, () => world.addPair(b!, Likes, a!, { amount: 256 }), 'BAD_VALUE', {
            entity: b,
            component: 'CV_Likes',
            field: 'amount',
        });
        refusedUnchanged(world, () => world.spawn(Likes(a!, { amount: -1 })), 'BAD_VALUE', { component: 'CV_Likes', field: 'amount' });
    });

    // README (Errors): "Every failure is a `TesseraError` with a stable `code`, the `operation`,
    // and the `entity`, `component` and `field` involved". A whole-pair read asks for no field.
    test('getPair of a whole pair that is missing names no field', async () => {
        const world = await newWorld();
        const [a, b, c] = world.spawnMany(3);
        world.addPair(a!, Likes, b!, { amount: 1 });
        expectError(() => world.getPair(a!, Likes, c!), 'MISSING_COMPONENT', {
            operation: 'world.getPair',
            entity: a,
            component: 'CV_Likes',
            field: undefined,
        });
    });

    // README (Errors): "Errors about a pair name the entity at fault (the source or the target:
    // the message says which) and the relation." and "Every failure is a `TesseraError` with ...
    // the `entity`, `component` and `field` involved".
    test('errors about a stale entity name the relation or component even when this world never used it', async () => {
        const world = await newWorld();
        const Never = relation('CV_NeverUsed');
        const Unused = component('CV_Unused', { v: 'u8' });
        const live = world.spawn();
        const dead = world.spawn();
        world.despawn(dead);
        const ctx = { entity: dead, component: 'CV_NeverUsed' };
        const failures: [string, () => unknown, Record<string, unknown>][] = [
            ['hasPair', () => world.hasPair(dead, Never, live), ctx],
            ['getPair', () => world.getPair(dead, Never, live), ctx],
            ['targets', () => world.targets(dead, Never), ctx],
            ['remove pair', () => world.remove(dead, Never(live)), ctx],
            ['remove relation', () => world.remove(dead, Never), ctx],
            ['remove component', () => world.remove(dead, Unused), { entity: dead, component: 'CV_Unused' }],
        ];
        const wrong: string[] = [];
        for (const [label, call, expected] of failures) {
            try {
                call();
                wrong.push(`${label}: no throw`);
            } catch (error) {
                const e = error as TesseraError;
                if (e.code !== 'STALE_ENTITY' || e.entity !== expected.entity || e.component !== expected.component) {
                    wrong.push(`${label}: ${e.code} entity=${e.entity} component=${e.component}`);
                }
            }
        }
        expect(wrong).toEqual([]);
    });
});

describe("changeDetection: 'value'", () => {
    // README: "`component('Health', { value: 'i32' }, { changeDetection: 'value' })` makes such a
    // write a change only where it changes the stored bytes ...: `set(e, Health, 'value', 5)`
    // over 5 is none, `-0` over `0` is one". "Marks (`writes`, `markChanged`) are changes either way".
    test('set, add with values and kernels change only what changes the stored bytes; marks always', async () => {
        const world = await newWorld();
        const V = component('CV_Value', { i: 'i32', f: 'f32', a: ['u8', 2] }, { changeDetection: 'value' });
        const S = component('CV_ValueSparse', { f: 'f64' }, { changeDetection: 'value', storage: 'sparse' });
        const e = world.spawn(V({ i: 5 }), S);
        // (Filters combine with AND: one subscription per component.)
        const subs = [world.subscribe({ changed: [V] }), world.subscribe({ changed: [S] })];
        for (const sub of subs) sub.drain();
        const changed = (fn: () => void) => {
            fn();
            return subs.reduce((n, sub) => n + sub.drain().entities.length, 0);
        };
        const q = world.query({ all: [V] });
        expect([
            changed(() => world.set(e, V, 'i', 5)),
            changed(() => world.set(e, V, 'i', -0)), // 0 over 5: a change
            changed(() => world.set(e, V, 'i', 0)), // 0 over 0: none (integer -0 is 0)
            changed(() => world.set(e, V, 'f', -0)), // -0 over 0: a change
            changed(() => world.set(e, V, 'f', -0)),
            changed(() => world.set(e, V, 'f', NaN)),
            changed(() => world.set(e, V, 'f', NaN)),
            changed(() => world.set(e, V, { a: [0, 0] })),
            changed(() => world.set(e, V, { a: [0, 1] })),
            changed(() => world.add(e, V({ i: 0, a: [0, 1] }))),
            changed(() => world.add(e, V({ i: 1 }))),
            changed(() => world.set(e, S, { f: 0 })),
            changed(() => world.set(e, S, { f: -0 })),
            changed(() => q.fill(V, 'i', 1)),
            changed(() => q.fill(V, 'i', 2)),
            changed(() => q.fill(V, 'a', 1)),
            changed(() => q.fill(V, 'a', 1)),
            changed(() => world.markChanged(e, V)),
        ]).toEqual([0, 1, 0, 1, 0, 1, 0, 0, 1, 0, 1, 0, 1, 0, 1, 1, 0, 1]);
        for (const sub of subs) sub.close();
    });
});

describe('snapshots restored in another world', () => {
    // README: "A snapshot holds every entity with its handle, components and values, sparse
    // components, and relations with their pairs, pair data and child order; a world restored
    // from it ... hands out the same handles on its next spawns, and its own snapshot is the same
    // bytes." "Two worlds with equal snapshots have equal hashes". "Components are matched by
    // name when the restored world first uses them, and must have the same schema and storage
    // (else `BAD_SCHEMA`)."
    test('relations, sparse, local, value-detected and unicode-named components: same bytes, hash, values, handles', async () => {
        const P = component('CV_位置🚀', { x: 'f32', a: ['i16', 3] });
        const S = component('CV_S', { s: 'f64' }, { storage: 'sparse' });
        const Local = component('CV_Local', { l: 'u8' }, { replicate: false });
        const Val = component('CV_Val', { v: 'f32' }, { changeDetection: 'value' });
        const L = relation('CV_L', { amt: 'f32' });
        const world = await newWorld();
        const es: number[] = [];
        for (let i = 0; i < 40; i++) {
            es.push(
                world.spawn(
                    P({ x: i === 3 ? -0 : i === 4 ? NaN : i, a: [i, -i, 7] }),
                    Val({ v: -0 }),
                    ...(i % 3 ? [] : [S({ s: i / 3 })]),
                    ...(i % 5 ? [] : [Local({ l: i })]),
                ),
            );
        }
        for (let i = 1; i < 40; i++) world.addPair(es[i]!, L, es[i - 1]!, { amt: i / 2 });
        for (let i = 1; i < 10; i++) world.setParent(es[i]!, es[0]!);
        for (let i = 30; i < 35; i++) world.despawn(es[i]!);
        const bytes = world.snapshot();
        const copy = await newWorld({ snapshot: bytes });
        expect(Array.from(copy.snapshot())).toEqual(Array.from(bytes));
        expect(copy.hash()).toBe(world.hash());
        expect(Object.is(copy.get(es[3]!, P, 'x'), -0)).toBe(true);
        expect(Number.isNaN(copy.get(es[4]!, P, 'x'))).toBe(true);
        expect(copy.get(es[9]!, S)).toEqual({ s: 3 });
        expect(copy.get(es[10]!, Local)).toEqual({ l: 10 });
        expect(Object.is(copy.get(es[7]!, Val, 'v'), -0)).toBe(true);
        expect(copy.getPair(es[9]!, L, es[8]!)).toEqual({ amt: 4.5 });
        expect(copy.childrenOf(es[0]!)).toEqual(world.childrenOf(es[0]!));
        expect(copy.spawn(P)).toBe(world.spawn(P));
        expect(copy.hash()).toBe(world.hash());
        // Same name, another schema or storage, change detection or replication: BAD_SCHEMA, nothing changed.
        const other = await newWorld({ snapshot: bytes });
        for (const wrong of [
            component('CV_位置🚀', { x: 'f64', a: ['i16', 3] }),
            component('CV_S', { s: 'f64' }),
            component('CV_Local', { l: 'u8' }),
            component('CV_Val', { v: 'f32' }),
        ]) {
            refusedUnchanged(other, () => other.spawn(wrong), 'BAD_SCHEMA', { component: wrong.name });
        }
        expect(Array.from(other.snapshot())).toEqual(Array.from(bytes));
    });
});

describe('world options and lifetimes', () => {
    // README: "`createWorld({ checkpoints: 16 })`" ; "`minFreeIndices` up to 1,048,575";
    // README (Errors): "Every failure is a `TesseraError` with a stable `code`".
    test('options are checked: types and ranges, INVALID_ARGUMENT from createWorld', async () => {
        for (const options of [
            { checkpoints: 0 },
            { checkpoints: 1.5 },
            { checkpoints: '3' },
            { checkpoints: -1 },
            { checkpoints: 2 ** 32 },
            { minFreeIndices: 1_048_576 },
            { chunkBytes: NaN },
            { chunkBytes: Infinity },
            { debug: 1 },
            { debug: null },
            { snapshot: null },
            { snapshot: [1, 2, 3] },
            { bogus: 1 },
            5,
            [],
        ]) {
            await expect(newWorld(options as never), JSON.stringify(options)).rejects.toMatchObject({
                code: 'INVALID_ARGUMENT',
                operation: 'createWorld',
            });
        }
        const edge = await newWorld({ minFreeIndices: 1_048_575, checkpoints: 1 });
        edge.spawnMany(10);
        edge.validate();
    });

    test('createWorld(null): a TesseraError, as every other non-object', async () => {
        let thrown: unknown;
        try {
            await createWorld(null as never);
        } catch (error) {
            thrown = error;
        }
        expect(thrown).toBeInstanceOf(TesseraError);
        expect((thrown as TesseraError).code).toBe('INVALID_ARGUMENT');
    });

    // README: "While a loop over a query is live, memory does not grow ... so no view obtained in
    // the loop is detached by it." "A loop body that needs more than the room gets
    // `OUT_OF_MEMORY` (saying so; the call changes nothing)". "a call that registered it and then
    // failed takes the registration back". (Errors) "a failed call leaves the world exactly as it
    // was (its snapshot is the same bytes)".
    test("another world's spawnMany refused with OUT_OF_MEMORY inside a debug world's loop: views intact, that world unchanged", async () => {
        const Big = component('CV_Big', { x: 'f32', big: ['f64', 32] });
        const { memory } = await init();
        const other = await newWorld();
        const world = await newWorld({ debug: true });
        const [e] = world.spawnMany(4, Big);
        const q = world.query({ all: [Big] });
        const before = other.snapshot();
        const components = other.stats().componentCount;
        let refused: unknown;
        for (const chunk of q) {
            const x = chunk.column(Big, 'x');
            const size = memory.buffer.byteLength; // the run reserved its room when it started
            try {
                other.spawnMany(300_000, Big); // ~80 MB: more than the run's 64 MiB reserve
            } catch (error) {
                refused = error;
            }
            expect(memory.buffer.byteLength).toBe(size);
            x[0] = 5;
            expect(x[0]).toBe(5);
        }
        expect(world.get(e!, Big, 'x')).toBe(5);
        expect((refused as TesseraError).code).toBe('OUT_OF_MEMORY');
        other.validate();
        // Big was registered by the refused call: it must be taken back.
        expect(other.stats().componentCount).toBe(components);
        expect(Array.from(other.snapshot())).toEqual(Array.from(before));
    });
});
