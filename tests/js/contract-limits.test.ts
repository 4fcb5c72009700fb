// Contract tests of limits and options (createWorld options, the documented limits hit exactly at
// the limit and one past it, odd schemas, many worlds on one module, destroying a world while
// things of it are held), of per-entity access (world.get/set/has/isAlive, field handles, every
// field type at its edges, on stale / pending / sparse / tracked / untracked components, and
// after reclaimArchetypes, rewinds that take registrations back, snapshots and keyframes), and of
// spawnMany with per-entity columns against a plain JS model. Written from README.md and the
// .d.ts files only; each test quotes the sentence it checks.
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';

import { component, createWorld, init, tag, TesseraError, type Component, type Entity, type World } from '../../dist/index.js';
import { caught, EDGE_NUMBERS, expectError, FIELD_TYPES, INT_RANGE, rng, storedAs, type FieldTypeName, worldPerTest } from './support.js';

const newWorld = worldPerTest();

const TYPES = FIELD_TYPES;
type T = FieldTypeName;
const RANGE: Record<string, readonly [number, number]> = INT_RANGE;

/** A value every type stores as given. */
function valid(type: T, seed: number): number {
    if (type === 'f32') return Math.fround(seed * 0.37 - 11);
    if (type === 'f64') return seed * 0.123456789 - 5;
    const [lo, hi] = RANGE[type]!;
    return lo + (Math.abs(Math.imul(seed + 1, 2654435761)) % (hi - lo + 1));
}

const same = (a: Uint8Array, b: Uint8Array) => a.length === b.length && Buffer.compare(a, b) === 0;

/** `fn` must throw TesseraError `code` (with the context given) and leave the world's bytes and invariants as they were. */
function refusedUnchanged(world: World, fn: () => unknown, code: string, expected: Record<string, unknown> = {}): TesseraError {
    const before = world.snapshot();
    const error = expectError(fn, code as never, expected as never);
    expect(same(world.snapshot(), before), `${error.message}: the snapshot changed`).toBe(true);
    world.validate();
    return error;
}

/** `fn` must throw some TesseraError (no RangeError, no trap) and leave the world as it was. */
function anyRefusal(world: World, fn: () => unknown): TesseraError {
    const before = world.snapshot();
    const thrown = caught(fn);
    expect(thrown, 'expected a TesseraError, nothing was thrown').toBeInstanceOf(TesseraError);
    expect(same(world.snapshot(), before), `${(thrown as Error).message}: the snapshot changed`).toBe(true);
    world.validate();
    return thrown as TesseraError;
}

const edgeNumbers = EDGE_NUMBERS;
const notNumbers = fc.constantFrom<unknown>('1', '', true, false, null, undefined, 10n, {}, [1], new Number(3), Symbol('s'), {
    valueOf: () => 1,
});

const AllT = Object.fromEntries(TYPES.map((t) => [t, t])) as Record<T, T>;

// ---------------------------------------------------------------------------------------------
describe('limits: component types per world', () => {
    // README (Limits): "4,096 component types per world". abi: TOO_MANY_COMPONENTS "component table is full".
    // README: "a call that registered it and then failed takes the registration back".
    test('4,096 register; the 4,097th is refused by every registering call, naming it, and nothing changes', async () => {
        const world = await newWorld();
        const e = world.spawn();
        const defs = Array.from({ length: 4096 }, (_, i) => tag(`CL_T${i}`));
        for (let i = 0; i < defs.length; i++) {
            world.add(e, defs[i]!);
            world.remove(e, defs[i]!);
            if (i % 1024 === 1023) world.reclaimArchetypes();
        }
        expect(world.stats().componentCount).toBe(4096);
        const Over = component('CL_Over', { v: 'f32' });
        const OverSparse = component('CL_OverSparse', { v: 'f32' }, { storage: 'sparse' });
        const ctx = { component: 'CL_Over' };
        refusedUnchanged(world, () => world.spawn(Over({ v: 1 })), 'TOO_MANY_COMPONENTS', { ...ctx, operation: 'world.spawn' });
        refusedUnchanged(world, () => world.add(e, Over), 'TOO_MANY_COMPONENTS', { ...ctx, operation: 'world.add' });
        refusedUnchanged(world, () => world.add(e, defs[0]!, Over), 'TOO_MANY_COMPONENTS', ctx);
        refusedUnchanged(world, () => world.spawnMany(3, Over.columns({ v: [1, 2, 3] })), 'TOO_MANY_COMPONENTS', {
            ...ctx,
            operation: 'world.spawnMany',
        });
        refusedUnchanged(world, () => world.add(e, OverSparse({ v: 2 })), 'TOO_MANY_COMPONENTS', { component: 'CL_OverSparse' });
        expect(world.has(e, defs[0]!)).toBe(false);
        // Reads never register: they answer as for a component no entity has.
        expect(world.has(e, Over)).toBe(false);
        expectError(() => world.get(e, Over), 'MISSING_COMPONENT', { component: 'CL_Over' });
        expectError(() => world.field(Over, 'v').get(e), 'MISSING_COMPONENT', { component: 'CL_Over' });
        expect(world.stats().componentCount).toBe(4096);
        // What is registered keeps working, and the last one too.
        world.add(e, defs[4095]!);
        expect(world.has(e, defs[4095]!)).toBe(true);
        // Another world of the module has a table of its own.
        const other = await newWorld();
        const o = other.spawn(Over({ v: 7 }));
        expect(other.get(o, Over, 'v')).toBe(7);
        world.validate();
    });

    // README (Rollback): "a rewind to before its registration takes the registration back when
    // nothing uses it any more ... the ids come again in the order the frames simulated again register them".
    test('at the limit, a rewind that takes a registration back leaves room for another', async () => {
        const world = await newWorld();
        const e = world.spawn();
        for (let i = 0; i < 4095; i++) {
            const T = tag(`CL_R${i}`);
            world.add(e, T);
            world.remove(e, T);
        }
        world.reclaimArchetypes();
        const cp = world.checkpoint();
        const before = world.snapshot();
        const A = component('CL_RA', { a: 'f64' });
        const B = component('CL_RB', { b: 'f64' });
        world.add(e, A({ a: 1 }));
        expect(world.stats().componentCount).toBe(4096);
        refusedUnchanged(world, () => world.add(e, B({ b: 2 })), 'TOO_MANY_COMPONENTS', { component: 'CL_RB' });
        world.rewind(cp);
        expect(same(world.snapshot(), before)).toBe(true);
        expect(world.stats().componentCount).toBe(4095);
        world.add(e, B({ b: 2 }));
        expect(world.get(e, B, 'b')).toBe(2);
        expect(world.has(e, A)).toBe(false);
        world.validate();
    });

    // README: "a keyframe registers those this world lacks"; "Bad bytes ... and change nothing";
    // Errors: "a failed call leaves the world exactly as it was".
    test('a keyframe that would register a 4,097th component is refused and changes nothing', async () => {
        const source = await newWorld();
        const Net = component('CL_Net', { v: 'i32' });
        const s = source.spawn(Net({ v: 3 }));
        const peer = source.replicator().peer();
        const replica = await newWorld();
        const r = replica.spawn();
        for (let i = 0; i < 4096; i++) {
            const T = tag(`CL_K${i}`);
            replica.add(r, T);
            replica.remove(r, T);
        }
        const keyframe = peer.encode().bytes.slice();
        anyRefusal(replica, () => replica.applyDelta(keyframe));
        expect(replica.replicaTick).toBe(0);
        expect(replica.stats().componentCount).toBe(4096);
        // A replica with room takes the same bytes.
        const roomy = await newWorld();
        expect(roomy.applyDelta(keyframe)).toBe(true);
        expect(roomy.get(s, Net, 'v')).toBe(3);
    });
});

// ---------------------------------------------------------------------------------------------
describe('limits: entities', () => {
    // README (Limits): "2,097,151 − `minFreeIndices` live entities (2,093,055 by default; beyond,
    // `TOO_MANY_ENTITIES`, checked before anything is sized by the count)".
    test('the default world holds exactly 2,093,055 entities; one more is TOO_MANY_ENTITIES everywhere, nothing changes', async () => {
        const world = await newWorld();
        const Flag = tag('CL_Flag');
        const first = world.spawn(Flag);
        expectError(() => world.spawnMany(2_093_055, Flag), 'TOO_MANY_ENTITIES', { operation: 'world.spawnMany' });
        const many = world.spawnMany(2_093_054, Flag);
        expect(many.length).toBe(2_093_054);
        expect(world.stats().entityCount).toBe(2_093_055);
        const before = world.snapshot();
        for (const fn of [
            () => world.spawn(),
            () => world.spawn(Flag),
            () => world.spawnMany(1, Flag),
            () => world.spawnMany(2 ** 32 - 1),
        ]) {
            expectError(fn, 'TOO_MANY_ENTITIES');
        }
        expect(same(world.snapshot(), before)).toBe(true);
        // One despawn makes room for exactly one.
        world.despawn(first);
        const again = world.spawn(Flag);
        expect(world.isAlive(again)).toBe(true);
        expect(world.isAlive(first)).toBe(false);
        expectError(() => world.spawn(Flag), 'TOO_MANY_ENTITIES');
        world.validate();
    });

    // README: "2,097,151 − `minFreeIndices` live entities"; "`minFreeIndices` up to 1,048,575".
    test('minFreeIndices 1,048,575: exactly 1,048,576 live entities, also through a loop and columns', async () => {
        const world = await newWorld({ minFreeIndices: 1_048_575 });
        const P = component('CL_P', { x: 'u16' });
        const xs = new Uint16Array(1_048_575).map((_, i) => i & 0xffff);
        const handles = world.spawnMany(1_048_575, P.columns({ x: xs }));
        expect(world.get(handles[70_000]!, P, 'x')).toBe(70_000 & 0xffff);
        const q = world.query({ all: [P] });
        let refused: unknown;
        let last = 0;
        for (const _ of q) {
            last = world.spawn(P({ x: 9 })); // the 1,048,576th: recorded
            try {
                world.spawn(P({ x: 10 }));
            } catch (error) {
                refused = error;
            }
            break;
        }
        expect((refused as TesseraError).code).toBe('TOO_MANY_ENTITIES');
        expect(world.stats().entityCount).toBe(1_048_576);
        expect(world.get(last, P, 'x')).toBe(9);
        refusedUnchanged(world, () => world.spawnMany(1, P.columns({ x: [1] })), 'TOO_MANY_ENTITIES');
    });

    // README (Entity handles): "a stale handle cannot alias a new entity before 2.1 million
    // despawns (512 × (`minFreeIndices` + 1)); until then it always throws `STALE_ENTITY`".
    // minFreeIndices 1: 1,024 despawns.
    test('minFreeIndices 1: a stale handle throws STALE_ENTITY through 1,023 later despawns, on every access path', async () => {
        const world = await newWorld({ minFreeIndices: 1 });
        const H = component('CL_H', { v: 'i32' });
        const hv = world.field(H, 'v');
        const stale = world.spawn(H({ v: 1 }));
        world.despawn(stale);
        let despawns = 1;
        while (despawns < 1024) {
            const e = world.spawn(H({ v: 1000 + despawns }));
            if (e === stale) throw new Error(`aliased after ${despawns} despawns`);
            if (despawns % 97 === 0) {
                expect(world.isAlive(stale)).toBe(false);
                expectError(() => world.get(stale, H, 'v'), 'STALE_ENTITY', { entity: stale });
                expectError(() => hv.get(stale), 'STALE_ENTITY', { entity: stale });
                expectError(() => hv.set(stale, -1), 'STALE_ENTITY', { entity: stale });
                expectError(() => world.set(stale, H, { v: -1 }), 'STALE_ENTITY', { entity: stale });
                expectError(() => world.has(stale, H), 'STALE_ENTITY', { entity: stale });
                expect(world.get(e, H, 'v')).toBe(1000 + despawns);
            }
            world.despawn(e);
            despawns++;
        }
    });

    // README: "Entity handles are numbers below 2^30"; world.d.ts: "a stale handle ... touches
    // nothing"; isAlive: "false for anything else, whatever it is"; README: "stale entity handles
    // are detected on every call and never touch another entity's data".
    test('numbers that are not handles (above 2^30, fractions, negatives, non-numbers) never reach a live entity', async () => {
        const world = await newWorld();
        const H = component('CL_HX', { v: 'i32' });
        const S = component('CL_HS', { v: 'i32' }, { storage: 'sparse' });
        const hv = world.field(H, 'v');
        const sv = world.field(S, 'v');
        const e = world.spawn(H({ v: 5 }), S({ v: 6 }));
        const sub = world.subscribe({ changed: [H] });
        sub.drain();
        const bogus: unknown[] = [
            e + 2 ** 30,
            e + 2 ** 31,
            e + 2 ** 32,
            e - 2 ** 32,
            e + 2 ** 40,
            e + 0.5,
            -e,
            e - 2 ** 31,
            2 ** 30 - 1,
            NaN,
            Infinity,
            -Infinity,
            `${e}`,
            BigInt(e),
            null,
            undefined,
            [e],
            { valueOf: () => e },
        ];
        const before = world.snapshot();
        for (const b of bogus) {
            const h = b as Entity;
            expect(world.isAlive(h), String(b)).toBe(false);
            for (const fn of [
                () => world.get(h, H),
                () => world.get(h, H, 'v'),
                () => world.get(h, S, 'v'),
                () => hv.get(h),
                () => sv.get(h),
                () => world.has(h, H),
                () => world.set(h, H, 'v', 99),
                () => world.set(h, S, 'v', 99),
                () => hv.set(h, 99),
                () => sv.set(h, 99),
                () => world.add(h, S({ v: 99 })),
                () => world.despawn(h),
            ]) {
                let thrown: unknown;
                let result: unknown;
                try {
                    result = fn();
                } catch (error) {
                    thrown = error;
                }
                expect(thrown, `${String(b)}: ${fn.toString()} returned ${String(result)}`).toBeInstanceOf(TesseraError);
            }
        }
        expect(same(world.snapshot(), before)).toBe(true);
        expect(world.get(e, H, 'v')).toBe(5);
        expect(world.get(e, S, 'v')).toBe(6);
        expect(sub.drain().entities.length).toBe(0);
    });
});

// ---------------------------------------------------------------------------------------------
describe('limits: checkpoints', () => {
    // world-options.d.ts: "How many checkpoints ... (default 16, at most 1024)".
    test('checkpoints: 1024 keeps 1,024; 1025 is refused by createWorld', async () => {
        await expect(newWorld({ checkpoints: 1025 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', operation: 'createWorld' });
        const world = await newWorld({ checkpoints: 1024 });
        const C = component('CL_C', { v: 'u16' });
        const e = world.spawn(C);
        let at7: Uint8Array | undefined;
        for (let i = 1; i <= 1030; i++) {
            world.set(e, C, 'v', i);
            expect(world.checkpoint()).toBe(i);
            if (i === 7) at7 = world.snapshot();
        }
        expect(world.checkpoints).toEqual({ oldest: 7, newest: 1030 });
        expect(world.stats().checkpointCount).toBe(1024);
        refusedUnchanged(world, () => world.rewind(6), 'NO_CHECKPOINT');
        world.rewind(7);
        expect(same(world.snapshot(), at7!)).toBe(true);
        expect(world.get(e, C, 'v')).toBe(7);
        expect(world.checkpoint()).toBe(8);
    });

    // README: "a number not kept throws `NO_CHECKPOINT` and changes nothing"; "Checkpoint `n`
    // stays kept ... newer ones go, and the next `checkpoint()` is `n + 1`".
    test('checkpoints: 3 keeps the newest three; rewinds to anything else change nothing', async () => {
        const world = await newWorld({ checkpoints: 3 });
        const C = component('CL_C3', { v: 'f64' });
        const e = world.spawn(C);
        const shots: Uint8Array[] = [];
        for (let i = 1; i <= 5; i++) {
            world.set(e, C, 'v', i / 3);
            world.checkpoint();
            shots[i] = world.snapshot();
        }
        world.set(e, C, 'v', -1);
        expect(world.checkpoints).toEqual({ oldest: 3, newest: 5 });
        for (const n of [0, 1, 2, 6, -1, 3.5, NaN, Infinity, 2 ** 32 + 3, '4', null, undefined]) {
            const error = anyRefusal(world, () => world.rewind(n as number));
            expect(['NO_CHECKPOINT', 'INVALID_ARGUMENT'], `${String(n)}: ${error.code}`).toContain(error.code);
            expect(world.checkpoints).toEqual({ oldest: 3, newest: 5 });
        }
        world.rewind(4);
        expect(same(world.snapshot(), shots[4]!)).toBe(true);
        expect(world.checkpoints).toEqual({ oldest: 3, newest: 4 });
        world.rewind(3);
        expect(same(world.snapshot(), shots[3]!)).toBe(true);
        world.rewind(3);
        expect(world.checkpoint()).toBe(4);
        expect(world.checkpoints).toEqual({ oldest: 3, newest: 4 });
    });
});

// ---------------------------------------------------------------------------------------------
describe('limits: fields, arrays and names used in a world', () => {
    const fields64 = Object.fromEntries(
        Array.from({ length: 64 }, (_, i) => [`f${i}`, i % 9 === 8 ? ([TYPES[i % 8]!, 256] as const) : TYPES[i % 8]!]),
    ) as Record<string, T | readonly [T, number]>;
    const Wide64 = component('CL_Wide64', fields64);
    const typeOf = (i: number) => TYPES[i % 8]!;
    const lengthOf = (i: number) => (i % 9 === 8 ? 256 : 1);
    const valuesFor = (seed: number) =>
        Object.fromEntries(
            Array.from({ length: 64 }, (_, i) =>
                lengthOf(i) === 1
                    ? [`f${i}`, valid(typeOf(i), seed + i)]
                    : [`f${i}`, Array.from({ length: 256 }, (_, k) => valid(typeOf(i), seed * 7 + k))],
            ),
        );

    // README (Limits): "64 fields per component; arrays of up to 256 elements".
    // README: "Every call is all or nothing."
    test('64 fields (arrays of 256 among them): spawn, get, set, columns, snapshot round trip; a bad 64th field writes none', async () => {
        const world = await newWorld();
        const a = valuesFor(1);
        const e = world.spawn(Wide64(a as never));
        expect(world.get(e, Wide64)).toEqual(a);
        const b = valuesFor(2);
        world.set(e, Wide64, b as never);
        expect(world.get(e, Wide64)).toEqual(b);
        refusedUnchanged(world, () => world.set(e, Wide64, { ...valuesFor(3), f63: 2 ** 32 } as never), 'BAD_VALUE', {
            entity: e,
            component: 'CL_Wide64',
            field: 'f63',
        });
        refusedUnchanged(
            world,
            () => world.set(e, Wide64, { ...valuesFor(3), f62: [...(valuesFor(3).f62 as number[]), 1] } as never),
            'BAD_VALUE',
            {
                field: 'f62',
            },
        );
        // columns: 3 entities, every field
        const cols = Object.fromEntries(
            Array.from({ length: 64 }, (_, i) => [
                `f${i}`,
                [0, 1, 2].flatMap((n) => (lengthOf(i) === 1 ? [valid(typeOf(i), n * 100 + i)] : (valuesFor(n)[`f${i}`] as number[]))),
            ]),
        );
        const hs = world.spawnMany(3, Wide64.columns(cols as never));
        for (let n = 0; n < 3; n++) {
            for (let i = 0; i < 64; i += 7) {
                const expected = lengthOf(i) === 1 ? valid(typeOf(i), n * 100 + i) : valuesFor(n)[`f${i}`];
                expect(world.get(hs[n]!, Wide64, `f${i}`)).toEqual(expected);
            }
        }
        const copy = await newWorld({ snapshot: world.snapshot() });
        expect(copy.get(e, Wide64)).toEqual(b);
        expect(same(copy.snapshot(), world.snapshot())).toBe(true);
        copy.validate();
    });

    // README: "names of up to 127 UTF-8 bytes"; "Components are matched by name".
    test('names of exactly 127 UTF-8 bytes in 2-, 3- and 4-byte characters work; 128 bytes are BAD_SCHEMA', async () => {
        const names = ['é'.repeat(63) + 'a', '€'.repeat(42) + 'a', '😀'.repeat(31) + 'abc'];
        for (const name of names) expect(new TextEncoder().encode(name).length).toBe(127);
        const defs = names.map((name, i) => component(name, { [names[(i + 1) % 3]!]: 'i16' }));
        const world = await newWorld();
        const e = world.spawn(...defs.map((C, i) => C({ [names[(i + 1) % 3]!]: -i - 1 } as never)));
        defs.forEach((C, i) => expect(world.get(e, C, names[(i + 1) % 3]! as never)).toBe(-i - 1));
        const copy = await newWorld({ snapshot: world.snapshot() });
        defs.forEach((C, i) => expect(copy.get(e, C)).toEqual({ [names[(i + 1) % 3]!]: -i - 1 }));
        for (const name of ['é'.repeat(63) + 'ab', '😀'.repeat(32)]) {
            expectError(() => component(name, { x: 'f32' }), 'BAD_SCHEMA');
            expectError(() => component('CL_ok', { [name]: 'f32' }), 'BAD_SCHEMA');
        }
    });

    // Schema: "A component's fields by name"; get: "All fields of an entity's component, copied
    // into a fresh object"; set: "Fields left out, or given as undefined, keep their value".
    test('field names that are Object.prototype members or integers: get, set, field handles and columns keep them apart', async () => {
        const Odd = component('CL_Odd', {
            constructor: 'i32',
            toString: 'f64',
            hasOwnProperty: 'u8',
            valueOf: 'i8',
            length: 'u16',
            '10': 'f32',
            '2': 'u32',
            'a b': 'i16',
        });
        const world = await newWorld();
        const init = { constructor: -7, toString: 0.25, hasOwnProperty: 200, valueOf: -100, length: 3, '10': 1.5, '2': 4e9, 'a b': -2 };
        const e = world.spawn(Odd(init));
        const got = world.get(e, Odd);
        expect({ ...got }).toEqual(init);
        for (const key of Object.keys(init)) expect(Object.prototype.hasOwnProperty.call(got, key)).toBe(true);
        world.set(e, Odd, { length: 9, constructor: 1 } as never);
        expect(world.get(e, Odd, 'length')).toBe(9);
        expect(world.get(e, Odd, 'constructor')).toBe(1);
        expect(world.get(e, Odd, 'toString')).toBe(0.25);
        const f2 = world.field(Odd, '2');
        f2.set(e, 2 ** 32 - 1);
        expect(world.get(e, Odd, '2')).toBe(2 ** 32 - 1);
        expect(world.get(e, Odd, '10')).toBe(1.5);
        // Values objects without an own key of a field leave it alone: an inherited member is no value.
        world.set(e, Odd, {} as never);
        expect(world.get(e, Odd, 'hasOwnProperty')).toBe(200);
        const [m] = world.spawnMany(2, Odd.columns({ '10': [1, 2], valueOf: 5 } as never));
        expect(world.get(m!, Odd)).toEqual({
            constructor: 0,
            toString: 0,
            hasOwnProperty: 0,
            valueOf: 5,
            length: 0,
            '10': 1,
            '2': 0,
            'a b': 0,
        });
        for (const chunk of world.query({ all: [Odd] })) {
            expect(Array.from(chunk.column(Odd, 'a b'))).toEqual([-2, 0, 0]);
            expect(Array.from(chunk.column(Odd, '10'))).toEqual([1.5, 1, 2]);
        }
        // A name that is not a field is UNKNOWN_FIELD even when every object has it.
        refusedUnchanged(world, () => world.set(e, Odd, 'isPrototypeOf' as never, 1 as never), 'UNKNOWN_FIELD', { field: 'isPrototypeOf' });
        expectError(() => world.get(e, Odd, 'propertyIsEnumerable' as never), 'UNKNOWN_FIELD');
        expectError(() => world.field(Odd, 'toLocaleString' as never), 'UNKNOWN_FIELD');
    });

    // WorldOptions.chunkBytes: "(default 65536, rounded up to a multiple of 64, at least 1024)".
    // README: "checks every part (... whether the entity's new row fits) before it changes anything".
    test('chunkBytes 1024 with rows far larger than a chunk: entities still fit, or are refused whole', async () => {
        const world = await newWorld({ chunkBytes: 1024 });
        const Big = component('CL_Big', { a: ['f64', 256], b: ['f64', 256], c: 'u8' });
        const data = Array.from({ length: 256 }, (_, i) => i - 128.5);
        const hs = world.spawnMany(20, Big({ a: data, c: 7 }));
        world.set(hs[19]!, Big, 'b', data);
        expect(world.get(hs[19]!, Big, 'b')).toEqual(data);
        expect(world.get(hs[0]!, Big, 'a')).toEqual(data);
        expect(world.get(hs[0]!, Big, 'b')).toEqual(new Array(256).fill(0));
        let rows = 0;
        for (const chunk of world.query({ all: [Big] })) rows += chunk.count;
        expect(rows).toBe(20);
        world.validate();
    });
});

// ---------------------------------------------------------------------------------------------
describe('many worlds on one module', () => {
    // README (Loading): "later worlds share the module"; module.d.ts: "worlds made from it share
    // its wasm memory"; README: "Defined once at module level, usable in any world".
    test('30 worlds, components registered in different orders, interleaved writes and destroys: each keeps its own data (model)', async () => {
        const below = rng(77);
        const defs = Array.from({ length: 6 }, (_, i) => component(`CL_MW${i}`, { v: TYPES[i % 8]!, w: 'f64' }));
        const sparse = component('CL_MWS', { s: 'i32' }, { storage: 'sparse' });
        type Model = Map<Entity, Map<string, { v: number; w: number }>>;
        const worlds: { world: World; model: Model; fields: ReturnType<World['field']>[] }[] = [];
        for (let k = 0; k < 30; k++) {
            const world = await newWorld(k % 3 === 0 ? { debug: true } : k % 3 === 1 ? { minFreeIndices: 1 } : {});
            worlds.push({ world, model: new Map(), fields: defs.map((C) => world.field(C, 'v')) });
        }
        const all = () => worlds.filter((w) => !w.world.destroyed);
        for (let step = 0; step < 3000; step++) {
            const live = all();
            const slot = live[below(live.length)]!;
            const { world, model, fields } = slot;
            const op = below(10);
            const entities = [...model.keys()];
            const e = entities.length ? entities[below(entities.length)]! : 0;
            if (op < 3 || !entities.length) {
                const picks = defs.filter(() => below(3) === 0);
                const values = picks.map((C, i) => ({ C, v: valid(C.schema.v as T, step + i), w: step / 7 }));
                const h = world.spawn(...values.map(({ C, v, w }) => C({ v, w } as never)), sparse({ s: step }));
                model.set(h, new Map([...values.map(({ C, v, w }) => [C.name, { v, w }] as const), ['CL_MWS', { v: step, w: 0 }]]));
            } else if (op === 3) {
                world.despawn(e);
                model.delete(e);
            } else if (op < 7) {
                const i = below(defs.length);
                const C = defs[i]!;
                const has = model.get(e)!.has(C.name);
                const v = valid(C.schema.v as T, step * 3);
                if (has) {
                    if (op === 4) fields[i]!.set(e, v);
                    else world.set(e, C, 'v', v);
                    model.get(e)!.get(C.name)!.v = v;
                } else {
                    expectError(() => fields[i]!.set(e, v), 'MISSING_COMPONENT');
                    world.add(e, C({ v } as never));
                    model.get(e)!.set(C.name, { v, w: 0 });
                }
            } else if (op === 7) {
                world.set(e, sparse, 's', -step);
                model.get(e)!.get('CL_MWS')!.v = -step;
            } else if (op === 8 && step % 50 === 0 && live.length > 5) {
                const held = world.field(defs[0]!, 'v');
                world.destroy();
                expectError(() => held.get(e), 'DESTROYED');
                expectError(() => fields[1]!.set(e, 0), 'DESTROYED');
                // A new world takes its place (and likely its memory).
                const fresh = await newWorld();
                worlds.push({ world: fresh, model: new Map(), fields: defs.map((C) => fresh.field(C, 'v')) });
            } else if (op === 9) {
                world.reclaimArchetypes();
            }
        }
        for (const { world, model, fields } of all()) {
            world.validate();
            expect(world.stats().entityCount).toBe(model.size);
            for (const [e, parts] of model) {
                for (const [i, C] of defs.entries()) {
                    const part = parts.get(C.name);
                    if (!part) {
                        expect(world.has(e, C)).toBe(false);
                        continue;
                    }
                    expect(fields[i]!.get(e)).toBe(part.v);
                    expect(world.get(e, C)).toEqual(part);
                }
                expect(world.get(e, sparse, 's')).toBe(parts.get('CL_MWS')!.v);
            }
        }
    });

    // README (Lifetimes): "`world.destroy()` frees everything and always succeeds; queries,
    // subscriptions, replicators, peers and systems die with it, and any later use of them ...
    // throws `DESTROYED` (the arrays that are copies, like `drain()`'s, stay yours)".
    // world.d.ts isAlive: "Never throws but `DESTROYED`"; destroy: "Calling it again does nothing".
    // access.d.ts Field: "Valid as long as its world."
    test('destroying a world while everything of it is held: every later use is DESTROYED; other worlds untouched', async () => {
        const P = component('CL_DP', { x: 'f32' });
        const S = component('CL_DS', { s: 'u8' }, { storage: 'sparse' });
        const bystander = await newWorld();
        const b = bystander.spawnMany(100, P({ x: 4 }), S({ s: 1 }));
        const bystanderHash = bystander.hash();
        const world = await newWorld();
        const es = world.spawnMany(10, P({ x: 1 }), S({ s: 2 }));
        const e = es[0]!;
        const q = world.query({ all: [P], writes: [P] });
        const sub = world.subscribe({ added: [P], removed: [P] });
        const copy = sub.drain().entities;
        const fx = world.field(P, 'x');
        const fs = world.field(S, 's');
        fx.get(e);
        fs.get(e);
        const replicator = world.replicator();
        const peer = replicator.peer();
        const delta = peer.encode();
        world.checkpoint();
        const iterator = q.chunks();
        iterator.next();
        world.destroy();
        world.destroy();
        expect(world.destroyed).toBe(true);
        const uses: [string, () => unknown][] = [
            ['isAlive', () => world.isAlive(e)],
            ['get', () => world.get(e, P)],
            ['get field', () => world.get(e, P, 'x')],
            ['set', () => world.set(e, P, 'x', 2)],
            ['set values', () => world.set(e, P, { x: 2 })],
            ['has', () => world.has(e, P)],
            ['spawn', () => world.spawn(P)],
            ['spawnMany', () => world.spawnMany(2, P.columns({ x: [1, 2] }))],
            ['despawn', () => world.despawn(e)],
            ['field()', () => world.field(P, 'x')],
            ['field.get', () => fx.get(e)],
            ['field.set', () => fx.set(e, 3)],
            ['sparse field.get', () => fs.get(e)],
            ['sparse field.set', () => fs.set(e, 3)],
            ['query.count', () => q.count()],
            ['query iterate', () => [...q]],
            ['iterator.next', () => iterator.next()],
            ['sub.drain', () => sub.drain()],
            ['replicator.encode', () => replicator.encode()],
            ['replicator.peer', () => replicator.peer()],
            ['peer.encode', () => peer.encode()],
            ['delta.bytes', () => delta.bytes[0]],
            ['snapshot', () => world.snapshot()],
            ['hash', () => world.hash()],
            ['checkpoint', () => world.checkpoint()],
            ['rewind', () => world.rewind(1)],
            ['reclaim', () => world.reclaimArchetypes()],
            ['stats', () => world.stats()],
            ['subscribe', () => world.subscribe({ added: [P] })],
            ['query()', () => world.query({ all: [P] })],
            ['replicator()', () => world.replicator()],
            ['applyDelta', () => world.applyDelta(new Uint8Array(16))],
        ];
        const wrong: string[] = [];
        for (const [name, use] of uses) {
            try {
                use();
                wrong.push(`${name}: no error`);
            } catch (error) {
                if (!(error instanceof TesseraError) || error.code !== 'DESTROYED') wrong.push(`${name}: ${String(error)}`);
            }
        }
        expect(wrong).toEqual([]);
        // close() of what died with the world is idempotent, never a throw.
        sub.close();
        q.close();
        replicator.close();
        peer.close();
        expect(copy.length).toBe(10);
        expect(bystander.hash()).toBe(bystanderHash);
        expect(bystander.get(b[99]!, P, 'x')).toBe(4);
        bystander.validate();
        // A world made now works, and the old field handle still refuses it.
        const next = await newWorld();
        const n = next.spawn(P({ x: 8 }));
        expectError(() => fx.get(n), 'DESTROYED');
        expect(next.field(P, 'x').get(n)).toBe(8);
    });

    // README (Loading): "`(await init()).createWorld()` makes worlds synchronously"; module.d.ts:
    // "Without options the module is loaded once and shared (later calls return the same one)".
    test('init() without options is one shared module; its createWorld checks options as createWorld does', async () => {
        const a = await init();
        const b = await init();
        expect(a).toBe(b);
        const w1 = a.createWorld();
        const w2 = await newWorld();
        try {
            const P = component('CL_IP', { x: 'i32' });
            const e1 = w1.spawn(P({ x: 1 }));
            const e2 = w2.spawn(P({ x: 2 }));
            expect(e1).toBe(e2);
            expect(w1.get(e1, P, 'x')).toBe(1);
            expect(w2.get(e2, P, 'x')).toBe(2);
            for (const bad of [{ checkpoints: 1025 }, { minFreeIndices: 0 }, { minFreeIndices: -1 }, { chunkBytes: -5 }, { alll: 1 }]) {
                expectError(() => a.createWorld(bad as never), 'INVALID_ARGUMENT');
            }
        } finally {
            w1.destroy();
        }
    });
});

// ---------------------------------------------------------------------------------------------
describe('field handles and per-entity access when the world changes underneath', () => {
    // README (Rollback): "a rewind to before its registration takes the registration back ...
    // the ids come again in the order the frames simulated again register them". access.d.ts:
    // "Valid as long as its world"; README: "never touch another entity's data".
    test('a rewind takes back the registration a field handle learned; another component takes the id; the handle never reads it', async () => {
        const world = await newWorld();
        const C = component('CL_RwC', { x: 'f32' });
        const D = component('CL_RwD', { w: 'f32' });
        const anchor = world.spawn(tag('CL_RwAnchor'));
        const cp = world.checkpoint();
        const cx = world.field(C, 'x');
        const c = world.spawn(C({ x: 11 }));
        expect(cx.get(c)).toBe(11);
        world.set(c, C, 'x', 12);
        world.rewind(cp);
        expect(world.isAlive(c)).toBe(false);
        const d = world.spawn(D({ w: 42 })); // D takes the id C had
        expectError(() => cx.get(d), 'MISSING_COMPONENT', { component: 'CL_RwC', entity: d });
        expectError(() => cx.set(d, 5), 'MISSING_COMPONENT', { component: 'CL_RwC' });
        expectError(() => world.get(d, C, 'x'), 'MISSING_COMPONENT');
        expect(world.has(d, C)).toBe(false);
        expect(world.get(d, D, 'w')).toBe(42);
        world.add(anchor, C({ x: 3 }));
        expect(cx.get(anchor)).toBe(3);
        expect(world.get(d, D, 'w')).toBe(42);
        world.validate();
    });

    // README (Snapshots): "Components are matched by name when the restored world first uses them,
    // and must have the same schema and storage (else `BAD_SCHEMA`)"; "get, has and the other
    // reads never register it". A restored entity's values are there for the first read.
    test('a restored world answers a first read through get, has and a field handle made before any use', async () => {
        const source = await newWorld();
        const C = component('CL_SnC', { x: 'f64', k: ['i8', 3] });
        const S = component('CL_SnS', { s: 'u16' }, { storage: 'sparse' });
        const e = source.spawn(C({ x: -0.5, k: [-1, 0, 1] }), S({ s: 65535 }));
        const bytes = source.snapshot();
        const copy = await newWorld({ snapshot: bytes });
        const fx = copy.field(C, 'x');
        const fk = copy.field(C, 'k');
        const fs = copy.field(S, 's');
        expect(fx.get(e)).toBe(-0.5);
        expect(fk.get(e)).toEqual([-1, 0, 1]);
        expect(fs.get(e)).toBe(65535);
        const other = await newWorld({ snapshot: bytes });
        expect(other.has(e, S)).toBe(true);
        expect(other.get(e, C)).toEqual({ x: -0.5, k: [-1, 0, 1] });
        const third = await newWorld({ snapshot: bytes });
        third.set(e, C, 'x', 2);
        expect(third.get(e, C, 'x')).toBe(2);
        expect(same(copy.snapshot(), bytes)).toBe(true);
    });

    // README (Snapshots): "must have the same schema and storage (else `BAD_SCHEMA`)"; Errors: "a
    // failed call leaves the world exactly as it was"; no silent reinterpretation of bytes.
    test('a same-named component of another schema or storage is BAD_SCHEMA on every access path, never the old bytes reread', async () => {
        const source = await newWorld();
        const C = component('CL_SchemaC', { x: 'f32' });
        const e = source.spawn(C({ x: 1.5 }));
        const bytes = source.snapshot();
        const asInt = component('CL_SchemaC', { x: 'i32' });
        const asSparse = component('CL_SchemaC', { x: 'f32' }, { storage: 'sparse' });
        const asWider = component('CL_SchemaC', { x: 'f32', y: 'f32' });
        for (const Wrong of [asInt, asSparse, asWider] as Component<any>[]) {
            const copy = await newWorld({ snapshot: bytes });
            const f = copy.field(Wrong as Component<{ x: 'f32' }>, 'x');
            for (const use of [
                () => copy.get(e, Wrong),
                () => copy.get(e, Wrong, 'x'),
                () => f.get(e),
                () => f.set(e, 2),
                () => copy.set(e, Wrong, 'x', 2),
                () => copy.set(e, Wrong, { x: 2 }),
                () => copy.has(e, Wrong),
                () => copy.add(e, Wrong),
                () => copy.spawn(Wrong),
            ]) {
                refusedUnchanged(copy, use, 'BAD_SCHEMA', { component: 'CL_SchemaC' });
            }
            // The right definition still reads the value.
            expect(copy.get(e, C, 'x')).toBe(1.5);
        }
    });

    // world-state.d.ts applyDelta: "a keyframe registers those this world lacks"; access.d.ts:
    // "The component's id in the world; -1 while it is not registered there".
    test('a field handle made while the component was unregistered reads and writes it once a keyframe registers it', async () => {
        const source = await newWorld();
        const C = component('CL_KfC', { x: 'u8' });
        const Pad = Array.from({ length: 40 }, (_, i) => tag(`CL_KfPad${i}`));
        const s = source.spawn(...Pad.slice(0, 20), C({ x: 200 }));
        const peer = source.replicator().peer();
        const replica = await newWorld();
        const fx = replica.field(C, 'x');
        const own = replica.spawn(Pad[30]!);
        expectError(() => fx.get(own), 'MISSING_COMPONENT');
        expectError(() => fx.get(s + 1000), 'STALE_ENTITY');
        expect(replica.applyDelta(peer.encode().bytes.slice())).toBe(true);
        peer.ack(replica.replicaTick);
        expect(fx.get(s)).toBe(200);
        refusedUnchanged(replica, () => fx.set(s, 256), 'BAD_VALUE', { field: 'x' });
        fx.set(s, 255);
        expect(replica.get(s, C, 'x')).toBe(255);
        // The source moves the entity to another archetype; the replica follows; the handle follows.
        source.add(s, ...Pad.slice(20, 40));
        source.set(s, C, 'x', 3);
        expect(replica.applyDelta(peer.encode().bytes.slice())).toBe(true);
        expect(fx.get(s)).toBe(3);
        replica.validate();
    });

    // README: "Every call is all or nothing"; reclaimArchetypes: "queries forget it"; a field handle
    // is "Valid as long as the world". Here with a subscription watching (the tracked path) and sparse.
    test('field handles over reclaimed archetypes on the tracked path: the right cell, a change seen once', async () => {
        const world = await newWorld();
        const P = component('CL_RcP', { x: 'i16', y: 'i16' });
        const Wide = component('CL_RcWide', { a: 'f64', b: 'f64', c: 'f64' });
        const T = Array.from({ length: 12 }, (_, i) => tag(`CL_RcT${i}`));
        const fx = world.field(P, 'x');
        const sub = world.subscribe({ changed: [P] });
        for (let round = 0; round < 12; round++) {
            const gone = world.spawn(P, T[round]!);
            fx.set(gone, 1);
            world.despawn(gone);
            expect(world.reclaimArchetypes()).toBeGreaterThan(0);
            sub.drain();
            const e = world.spawn(Wide({ a: 1, b: 2, c: 3 }), T[round]!, P({ y: -9 }));
            fx.set(e, round - 6);
            expect(Array.from(sub.drain().entities)).toEqual([e]);
            expect(world.get(e, P)).toEqual({ x: round - 6, y: -9 });
            expect(world.get(e, Wide)).toEqual({ a: 1, b: 2, c: 3 });
            refusedUnchanged(world, () => fx.set(e, 40000), 'BAD_VALUE');
            world.despawn(e);
        }
        world.validate();
    });
});

// ---------------------------------------------------------------------------------------------
describe('every field type at its edges through field handles and one-field set, on every path', () => {
    const Table = component('CL_EdgeT', AllT);
    const Sparse = component('CL_EdgeS', AllT, { storage: 'sparse' });
    const ByValue = component('CL_EdgeV', AllT, { changeDetection: 'value' });
    const Watched = component('CL_EdgeW', AllT);

    // README: "Values are checked before anything is written: `300` into a `u8`, `1.5` into an
    // `i32`, a string or a missing value anywhere throws `BAD_VALUE` and writes nothing".
    // access.d.ts: "`health.get(e)`, `health.set(e, v)` behave exactly as `world.get(e, Health,
    // 'value')` and `world.set(e, Health, 'value', v)`, errors included".
    test('field.set and world.set(e, C, f, v): table untracked / tracked / value-detected / sparse / inside a loop, against the model', async () => {
        const world = await newWorld();
        const e = world.spawn(Table, Sparse, ByValue, Watched);
        // Filters combine with AND: one subscription per watched component.
        const watchW = world.subscribe({ changed: [Watched] });
        const watchV = world.subscribe({ changed: [ByValue] });
        const fields = new Map<string, ReturnType<World['field']>>();
        const field = (C: Component<any>, t: T) => {
            const key = `${C.name}.${t}`;
            if (!fields.has(key)) fields.set(key, world.field(C, t as never));
            return fields.get(key)!;
        };
        const Cs = [Table, Sparse, ByValue, Watched];
        const q = world.query({ all: [Table] });
        fc.assert(
            fc.property(
                fc.constantFrom(...TYPES),
                fc.oneof(edgeNumbers, edgeNumbers, notNumbers),
                fc.integer({ min: 0, max: 3 }),
                fc.boolean(),
                fc.boolean(),
                (t, v, ci, viaField, inLoop) => {
                    const C = Cs[ci]!;
                    const expected = storedAs(t, v);
                    const write = viaField ? () => field(C, t).set(e, v as number) : () => world.set(e, C, t as never, v as never);
                    const op = viaField ? 'field.set' : 'world.set';
                    watchW.drain();
                    watchV.drain();
                    const run = (fn: () => void) => {
                        if (!inLoop) return fn();
                        for (const _ of q) {
                            fn();
                            break;
                        }
                    };
                    if (expected === 'refused') {
                        const before = world.snapshot();
                        let thrown: unknown;
                        run(() => {
                            try {
                                write();
                            } catch (error) {
                                thrown = error;
                            }
                        });
                        expect(thrown, `${C.name}.${t} = ${String(v)} accepted`).toBeInstanceOf(TesseraError);
                        expect((thrown as TesseraError).code).toBe('BAD_VALUE');
                        expect((thrown as TesseraError).operation).toBe(op);
                        expect((thrown as TesseraError).field).toBe(t);
                        expect((thrown as TesseraError).component).toBe(C.name);
                        expect(same(world.snapshot(), before)).toBe(true);
                        expect(watchW.drain().entities.length + watchV.drain().entities.length).toBe(0);
                    } else {
                        const old = world.get(e, C, t as never) as number;
                        run(write);
                        const got = viaField ? field(C, t).get(e) : world.get(e, C, t as never);
                        expect(Object.is(got, expected), `${C.name}.${t} = ${String(v)} read back ${String(got)}`).toBe(true);
                        const changes = (C === ByValue ? watchV : watchW).drain().entities.length;
                        if (C === Watched) expect(changes).toBe(1);
                        if (C === ByValue) {
                            const bytesDiffer = !Object.is(old, expected) && !(Number.isNaN(old) && Number.isNaN(expected));
                            if (bytesDiffer) expect(changes, `${t} ${old} -> ${expected}`).toBe(1);
                        }
                        if (C === Table || C === Sparse) expect(watchW.drain().entities.length + watchV.drain().entities.length).toBe(0);
                    }
                },
            ),
            { numRuns: 1500, seed: 20240611 },
        );
        world.validate();
    });

    // README: "`get` throws `PENDING_ENTITY`; `set`, `add`, `remove` and `despawn` on it are
    // deferred too"; "A call is recorded whole, with the values it was given"; "Every call is all
    // or nothing. Values are checked before anything is written".
    test('on a pending entity: field.set and world.set are checked at the call, recorded in order, applied at the end', async () => {
        const world = await newWorld();
        const anchor = world.spawn(Table);
        const fu8 = world.field(Table, 'u8');
        const fi32 = world.field(Sparse, 'i32');
        const ff32 = world.field(Watched, 'f32');
        let pending = 0;
        for (const _ of world.query({ all: [Table] })) {
            pending = world.spawn(Table({ u8: 1 }), Sparse, Watched);
            expectError(() => fu8.get(pending), 'PENDING_ENTITY', { entity: pending, operation: 'field.get' });
            expectError(() => world.get(pending, Table), 'PENDING_ENTITY');
            fu8.set(pending, 2);
            fu8.set(pending, 3);
            expectError(() => fu8.set(pending, 256), 'BAD_VALUE', { entity: pending, field: 'u8' });
            expectError(() => fi32.set(pending, 2 ** 31), 'BAD_VALUE', { field: 'i32' });
            expectError(() => ff32.set(pending, 1e39), 'BAD_VALUE', { field: 'f32' });
            expectError(() => world.set(pending, Table, { u8: 4, i8: 128 }), 'BAD_VALUE', { field: 'i8' });
            fi32.set(pending, -(2 ** 31));
            ff32.set(pending, -0);
            world.set(pending, Table, { i16: -32768, u32: 2 ** 32 - 1 });
        }
        expect(world.get(pending, Table)).toMatchObject({ u8: 3, i8: 0, i16: -32768, u32: 2 ** 32 - 1 });
        expect(fi32.get(pending)).toBe(-(2 ** 31));
        expect(Object.is(ff32.get(pending), -0)).toBe(true);
        expect(world.stats().commandsSkipped).toBe(0);
        expect(world.isAlive(anchor)).toBe(true);
        world.validate();
    });

    // FieldInput of an array field: "ArrayLike<number>"; README "a missing value anywhere throws
    // `BAD_VALUE` and writes nothing"; get: "a fresh array for array fields".
    test('array fields through a field handle: wrong lengths, holes, non-numbers and out-of-range elements refused whole', async () => {
        const world = await newWorld();
        const A = component('CL_Arr', { v: ['u8', 4], f: ['f32', 2] });
        const SA = component('CL_ArrS', { v: ['i16', 3] }, { storage: 'sparse' });
        const e = world.spawn(A({ v: [1, 2, 3, 4], f: [0.5, -0.5] }), SA({ v: [-1, 0, 1] }));
        const fv = world.field(A, 'v');
        const ff = world.field(A, 'f');
        const fs = world.field(SA, 'v');
        const ctx = (field: string, component = 'CL_Arr') => ({ operation: 'field.set', entity: e, component, field });
        // eslint-disable-next-line no-sparse-arrays
        for (const bad of [
            [1, 2, 3],
            [1, 2, 3, 4, 5],
            [1, 2, 3, 256],
            [1, 2, 3, -1],
            [1, 2, 3, 0.5],
            [1, 2, , 4],
            [1, 2, 3, '4'],
            [1, 2, 3, NaN],
            5,
            null,
            undefined,
            '1234',
            { length: 4 },
        ]) {
            refusedUnchanged(world, () => fv.set(e, bad as never), 'BAD_VALUE', ctx('v'));
        }
        for (const bad of [[1e39, 0], [0], new Float64Array([0, 1e40])])
            refusedUnchanged(world, () => ff.set(e, bad as never), 'BAD_VALUE', ctx('f'));
        for (const bad of [[1, 2, 32768], [1, 2], new Int32Array([0, 0, -40000])]) {
            refusedUnchanged(world, () => fs.set(e, bad as never), 'BAD_VALUE', ctx('v', 'CL_ArrS'));
        }
        fv.set(e, new Uint8Array([9, 8, 7, 6]) as never);
        ff.set(e, [Infinity, NaN]);
        fs.set(e, new Float64Array([-32768, -0, 32767]) as never);
        const got = fv.get(e);
        got[0] = 100;
        expect(fv.get(e)).toEqual([9, 8, 7, 6]);
        expect(ff.get(e)[0]).toBe(Infinity);
        expect(Number.isNaN(ff.get(e)[1])).toBe(true);
        expect(fs.get(e)).toEqual([-32768, 0, 32767]);
    });

    // README: "a field given as `undefined` in a values object is left as it is" (values object only);
    // "a string or a missing value anywhere throws `BAD_VALUE`". One field given as undefined has no
    // value: refused, not taken as 0 or NaN.
    test('one field given undefined (world.set and field.set) is BAD_VALUE on every path, nothing written', async () => {
        const world = await newWorld();
        const e = world.spawn(Table({ f32: 1, i32: 2 }), Sparse({ f64: 3 }), Watched({ u8: 4 }));
        const sub = world.subscribe({ changed: [Watched] });
        for (const [C, f] of [
            [Table, 'f32'],
            [Table, 'i32'],
            [Sparse, 'f64'],
            [Watched, 'u8'],
        ] as const) {
            refusedUnchanged(world, () => world.set(e, C, f, undefined as never), 'BAD_VALUE', { component: C.name, field: f });
            refusedUnchanged(world, () => world.field(C, f).set(e, undefined as never), 'BAD_VALUE', { component: C.name, field: f });
        }
        expect(sub.drain().entities.length).toBe(0);
    });
});

// ---------------------------------------------------------------------------------------------
describe('spawnMany with per-entity columns, against a model', () => {
    const Body = component('CL_SmBody', { a: 'f32', b: 'i8', c: 'u32', d: ['i16', 3], e: 'f64' });
    const Mark = component('CL_SmMark', { m: 'u16', n: ['u8', 2] }, { storage: 'sparse' });
    const Flag = tag('CL_SmFlag');
    type Spec = {
        count: number;
        body: Record<string, unknown>;
        mark: Record<string, unknown> | null;
        bad: null | { comp: 'body' | 'mark'; field: string; position: number };
    };

    const typeOf: Record<string, T> = { a: 'f32', b: 'i8', c: 'u32', d: 'i16', e: 'f64', m: 'u16', n: 'u8' };
    const lenOf: Record<string, number> = { a: 1, b: 1, c: 1, d: 3, e: 1, m: 1, n: 2 };
    const asColumn = (t: T, values: number[], kind: number): ArrayLike<number> => {
        if (kind === 0) return values;
        if (kind === 1) return Float64Array.from(values);
        const Ctor = {
            f32: Float32Array,
            f64: Float64Array,
            i8: Int8Array,
            u8: Uint8Array,
            i16: Int16Array,
            u16: Uint16Array,
            i32: Int32Array,
            u32: Uint32Array,
        }[t];
        return Ctor.from(values);
    };

    const spec = fc
        .record({
            count: fc.integer({ min: 0, max: 40 }),
            seed: fc.integer({ min: 0, max: 1e6 }),
            kinds: fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 7, maxLength: 7 }),
            withMark: fc.boolean(),
            badAt: fc.option(
                fc.tuple(fc.integer({ min: 0, max: 6 }), fc.nat(), fc.constantFrom<unknown>(1.5, -1, 2 ** 32, 1e39, '3', NaN, 70000, null)),
                { freq: 3 },
            ),
        })
        .map(({ count, seed, kinds, withMark, badAt }): Spec => {
            const names = ['a', 'b', 'c', 'd', 'e', 'm', 'n'];
            const body: Record<string, unknown> = {};
            const mark: Record<string, unknown> = {};
            let bad: Spec['bad'] = null;
            names.forEach((f, i) => {
                const t = typeOf[f]!;
                const k = lenOf[f]!;
                const target = i < 5 ? body : mark;
                if (kinds[i] === 3 && k === 1) {
                    target[f] = valid(t, seed + i); // one number for all
                    return;
                }
                if (kinds[i] === 3) return; // left out: starts at 0
                const values: unknown[] = Array.from({ length: count * k }, (_, j) => valid(t, seed + i * 1000 + j));
                const usable = i < 5 || withMark;
                if (badAt && badAt[0] === i && count > 0 && usable && storedAs(t, badAt[2]) === 'refused') {
                    const at = badAt[1] % (count * k);
                    const v = badAt[2];
                    // A plain array takes anything; a Float64Array any number; a typed array of the field's type holds no bad value.
                    if (kinds[i] === 0 || (kinds[i] === 1 && typeof v === 'number')) {
                        values[at] = v;
                        bad = { comp: i < 5 ? 'body' : 'mark', field: f, position: Math.floor(at / k) };
                        target[f] = kinds[i] === 0 ? values : Float64Array.from(values as number[]);
                        return;
                    }
                }
                target[f] = asColumn(t, values as number[], kinds[i]!);
            });
            return { count, body, mark: withMark ? mark : null, bad };
        });

    /** What entity `i` holds for field `f` by the model. */
    function expectedValue(columns: Record<string, unknown>, f: string, i: number): number | number[] {
        const k = lenOf[f]!;
        const column = columns[f];
        if (column === undefined) return k === 1 ? 0 : new Array(k).fill(0);
        if (typeof column === 'number') return storedAs(typeOf[f]!, column) as number;
        const arr = column as ArrayLike<number>;
        const at = (j: number) => storedAs(typeOf[f]!, arr[j]) as number;
        return k === 1 ? at(i) : Array.from({ length: k }, (_, j) => at(i * k + j));
    }

    // README: "`C.columns({ field: column })` gives every entity of a `spawnMany` its own values:
    // entity `i` takes `column[i]`; a field of `k` elements ... takes `k` numbers per entity ... a
    // scalar field may also be one number for all ... a value that does not fit its field at any
    // entity refuses it, and the `BAD_VALUE` names the component, the field, the value and the
    // entity's `position` in the call". "It is still one call into wasm, inside a loop too
    // (recorded with its values, applied in order with the other deferred calls)."
    test('random columns (arrays, typed arrays, one number for all, left out), outside and inside a loop (fast-check)', async () => {
        const world = await newWorld();
        const q = world.query({ all: [Flag] });
        world.spawn(Flag);
        fc.assert(
            fc.property(spec, fc.boolean(), ({ count, body, mark, bad }, inLoop) => {
                const items = [Body.columns(body as never), Flag, ...(mark ? [Mark.columns(mark as never)] : [])];
                const before = world.snapshot();
                const liveBefore = world.stats().entityCount;
                let handles: Uint32Array | undefined;
                let thrown: unknown;
                const call = () => {
                    try {
                        handles = world.spawnMany(count, ...items);
                    } catch (error) {
                        thrown = error;
                    }
                };
                if (inLoop) {
                    for (const _ of q) {
                        call();
                        // Changing the arrays after the call changes nothing recorded ("Each element is read once").
                        for (const col of [...Object.values(body), ...Object.values(mark ?? {})]) {
                            if (typeof col === 'object' && col && (col as ArrayLike<number>).length) (col as number[])[0] = 0;
                        }
                        break;
                    }
                } else call();
                if (bad) {
                    expect(thrown, `expected BAD_VALUE at ${JSON.stringify(bad)}`).toBeInstanceOf(TesseraError);
                    const error = thrown as TesseraError;
                    expect(error.code).toBe('BAD_VALUE');
                    expect(error.operation).toBe('world.spawnMany');
                    expect(error.component).toBe(bad.comp === 'body' ? 'CL_SmBody' : 'CL_SmMark');
                    expect(error.field).toBe(bad.field);
                    expect(error.position).toBe(bad.position);
                    expect(error.entity).toBeUndefined();
                    expect(same(world.snapshot(), before)).toBe(true);
                    return;
                }
                expect(thrown).toBeUndefined();
                expect(handles!.length).toBe(count);
                expect(world.stats().entityCount).toBe(liveBefore + count);
            }),
            { numRuns: 150, seed: 99 },
        );
        world.validate();
    });

    test('the values of random columns read back per entity exactly as the model stores them', async () => {
        const world = await newWorld();
        fc.assert(
            fc.property(
                spec.filter((s) => s.bad === null),
                ({ count, body, mark }) => {
                    const snapshotCols = (cols: Record<string, unknown>) =>
                        Object.fromEntries(
                            Object.entries(cols).map(([k, v]) => [k, typeof v === 'number' ? v : Array.from(v as ArrayLike<number>)]),
                        );
                    const bodyModel = snapshotCols(body);
                    const markModel = mark ? snapshotCols(mark) : null;
                    const handles = world.spawnMany(count, Body.columns(body as never), ...(mark ? [Mark.columns(mark as never)] : []));
                    for (let i = 0; i < count; i++) {
                        const h = handles[i]!;
                        for (const f of ['a', 'b', 'c', 'd', 'e'])
                            expect(world.get(h, Body, f as never), `${f} of ${i}`).toEqual(expectedValue(bodyModel, f, i));
                        if (markModel)
                            for (const f of ['m', 'n']) expect(world.get(h, Mark, f as never)).toEqual(expectedValue(markModel, f, i));
                        else expect(world.has(h, Mark)).toBe(false);
                    }
                    world.despawnMany(handles);
                },
            ),
            { numRuns: 150, seed: 4242 },
        );
        world.validate();
    });

    // README: "recorded with its values, applied in order with the other deferred calls"; "Each element is read once".
    test('inside a loop: the columns are read at the call; the entities appear with them at the end, in order with other calls', async () => {
        const world = await newWorld();
        world.spawn(Flag);
        const xs = new Float32Array([1, 2, 3, 4]);
        const ds = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12];
        let handles: Uint32Array = new Uint32Array();
        let later = 0;
        for (const _ of world.query({ all: [Flag] })) {
            handles = world.spawnMany(4, Body.columns({ a: xs, d: ds, c: 7 }), Mark.columns({ m: [9, 8, 7, 6] }));
            xs.fill(-1);
            ds.fill(-1);
            for (const h of handles) expectError(() => world.get(h, Body), 'PENDING_ENTITY');
            world.set(handles[2]!, Body, 'b', -5);
            world.despawn(handles[3]!);
            later = world.spawn(Body({ a: 100 }));
        }
        expect(Array.from(handles.slice(0, 3), (h) => world.get(h, Body))).toEqual([
            { a: 1, b: 0, c: 7, d: [1, 2, 3], e: 0 },
            { a: 2, b: 0, c: 7, d: [4, 5, 6], e: 0 },
            { a: 3, b: -5, c: 7, d: [7, 8, 9], e: 0 },
        ]);
        expect(Array.from(handles.slice(0, 3), (h) => world.get(h, Mark, 'm'))).toEqual([9, 8, 7]);
        expect(world.isAlive(handles[3]!)).toBe(false);
        expect(world.get(later, Body, 'a')).toBe(100);
        expect(world.stats().commandsSkipped).toBe(0);
    });

    // checkCount: "a count or size argument: an integer in 0..2^32-1"; README "A column must hold
    // exactly `count × k` numbers (`BAD_VALUE` otherwise, before anything is allocated or registered)".
    test('counts that are not counts and zero counts: refused or empty, nothing spawned or registered', async () => {
        const world = await newWorld();
        world.spawn(Flag);
        const Fresh = component('CL_SmFresh', { v: 'u8' });
        const components = world.stats().componentCount;
        for (const count of [-1, 1.5, NaN, Infinity, '3', 2 ** 32, null, undefined, 3n]) {
            anyRefusal(world, () => world.spawnMany(count as number, Fresh.columns({ v: [1, 2, 3] })));
            anyRefusal(world, () => world.spawnMany(count as number, Fresh));
        }
        expect(world.stats().componentCount).toBe(components);
        const none = world.spawnMany(0, Fresh.columns({ v: [] }), Body.columns({ a: 3, d: new Int16Array(0) }));
        expect(none).toBeInstanceOf(Uint32Array);
        expect(none.length).toBe(0);
        refusedUnchanged(world, () => world.spawnMany(0, Fresh.columns({ v: [1] })), 'BAD_VALUE', { component: 'CL_SmFresh', field: 'v' });
        refusedUnchanged(world, () => world.spawnMany(2, Fresh.columns({ w: [1, 2] } as never)), 'UNKNOWN_FIELD', {
            component: 'CL_SmFresh',
            field: 'w',
        });
    });
});

// ---------------------------------------------------------------------------------------------
describe('rewinds of per-entity writes at the edges', () => {
    // world-state.d.ts rewind: "Returns the world exactly to its state at a kept checkpoint ...
    // `snapshot()` / `hash()` equal those taken at the checkpoint"; README: "`world.set`,
    // `world.field(...).set` and every structural call are seen on their own"; schema.d.ts:
    // "`'value'`: ... `-0` over `0` is one".
    test("-0 over 0 and NaN over NaN through field handles on 'value' components (table and sparse) rewind to the same bytes", async () => {
        const V = component('CL_RwV', { f: 'f32', d: 'f64', i: 'i32' }, { changeDetection: 'value' });
        const SV = component('CL_RwSV', { f: 'f32' }, { storage: 'sparse', changeDetection: 'value' });
        const world = await newWorld();
        const e = world.spawn(V, SV);
        const ff = world.field(V, 'f');
        const fd = world.field(V, 'd');
        const fs = world.field(SV, 'f');
        const cp = world.checkpoint();
        const at = world.snapshot();
        const hash = world.hash();
        ff.set(e, -0);
        fd.set(e, -0);
        fs.set(e, -0);
        world.set(e, V, 'i', -0);
        expect([ff.get(e), fd.get(e), fs.get(e)].every((v) => Object.is(v, -0))).toBe(true);
        expect(same(world.snapshot(), at)).toBe(false);
        world.rewind(cp);
        expect(same(world.snapshot(), at)).toBe(true);
        expect(world.hash()).toBe(hash);
        expect(Object.is(ff.get(e), 0) && Object.is(fs.get(e), 0)).toBe(true);
        ff.set(e, NaN);
        fd.set(e, Infinity);
        const cp2 = world.checkpoint();
        const at2 = world.snapshot();
        ff.set(e, -Infinity);
        fd.set(e, -0);
        fs.set(e, 3.5);
        world.rewind(cp2);
        expect(same(world.snapshot(), at2)).toBe(true);
        expect(Number.isNaN(ff.get(e))).toBe(true);
        expect(fd.get(e)).toBe(Infinity);
        expect(fs.get(e)).toBe(0);
    });

    // README: "a string or a missing value anywhere throws `BAD_VALUE` and writes nothing"; Errors:
    // "Every failure is a `TesseraError`".
    test('bigints and symbols anywhere a value goes are BAD_VALUE TesseraErrors, nothing written', async () => {
        const world = await newWorld();
        const H = component('CL_BigH', { v: 'i32', a: ['u8', 2] });
        const S = component('CL_BigS', { a: ['u8', 2] }, { storage: 'sparse' });
        const e = world.spawn(H({ v: 5 }), S);
        for (const fn of [
            () => world.set(e, H, { a: new BigInt64Array(2) as never }),
            () => world.set(e, H, 'a', [1n, 2n] as never),
            () => world.field(H, 'a').set(e, [1n, 2n] as never),
            () => world.field(H, 'v').set(e, 1n as never),
            () => world.spawn(H({ a: [1n, 2n] as never })),
            () => world.set(e, S, 'a', [1n, 1n] as never),
            () => world.spawnMany(2, H({ a: new BigUint64Array(2) as never })),
            () => world.add(e, H({ v: 1n as never })),
            () => world.spawn(H({ v: Symbol('x') as never })),
            () => world.set(e, H, 'a', [Symbol('x'), 1] as never),
            () => world.spawnMany(2, H.columns({ v: [1, Symbol('x')] as never })),
            () => world.spawnMany(2, H.columns({ v: 5n as never })),
        ]) {
            refusedUnchanged(world, fn, 'BAD_VALUE');
        }
    });
});
// ---------------------------------------------------------------------------------------------
describe('defects these tests found (each failed before its fix)', () => {
    // world.d.ts Entity: "A handle whose entity was despawned is stale:
    // every call that takes it throws `STALE_ENTITY` and touches nothing"; isAlive: "false for
    // anything else, whatever it is (a stale handle, a string, a bigint)"; entities.d.ts handle():
    // "an i32 parameter would truncate 1.5 into another entity's handle"; README: "stale entity
    // handles ... never touch another entity's data". world.set with a values object, world.set of
    // one ARRAY field and field(C, arrayField).set took '1', true, [1], { valueOf }, 1.5,
    // e + 2^32 and e - 2^32 as entity e and wrote it (no error); 1n threw a plain TypeError.
    test('a values-object set or an array-field set given what is not a handle writes nothing', async () => {
        const world = await newWorld();
        const H = component('CL_F1', { v: 'i32', a: ['u8', 2] });
        const S = component('CL_F1S', { v: 'i32' }, { storage: 'sparse' });
        const e = world.spawn(H({ v: 5 }), S({ v: 6 }));
        expect(e).toBe(1);
        const wrote: string[] = [];
        for (const b of ['1', true, [1], { valueOf: () => 1 }, 1.5, e + 2 ** 32, e - 2 ** 32, 1n]) {
            expect(world.isAlive(b as never)).toBe(false);
            for (const [name, fn] of [
                ['set(values)', () => world.set(b as never, H, { v: 99 })],
                ['set(sparse values)', () => world.set(b as never, S, { v: 99 })],
                ['set(array field)', () => world.set(b as never, H, 'a', [9, 9])],
                ['field(array).set', () => world.field(H, 'a').set(b as never, [9, 9])],
            ] as const) {
                const before = world.snapshot();
                const thrown = caught(fn);
                if (!(thrown instanceof TesseraError)) wrote.push(`${name} with ${String(b)}: ${thrown ? String(thrown) : 'no error'}`);
                if (!same(world.snapshot(), before)) {
                    wrote.push(`${name} with ${String(b)} changed entity ${e}: ${JSON.stringify(world.get(e, H))}`);
                    world.set(e, H, { v: 5, a: [0, 0] });
                    world.set(e, S, { v: 6 });
                }
            }
        }
        expect(wrote).toEqual([]);
    });

    // definitions.d.ts component(): "@param name unique per world,
    // 1..127 UTF-8 bytes"; README: "names of up to 127 UTF-8 bytes", "Components are matched by
    // name". A name with a lone surrogate has no UTF-8 form; it was accepted and encoded as U+FFFD,
    // so two different names ('\uD800', '\uDBFF') were one name in a world (the second
    // DUPLICATE_NAME; in a world restored from a snapshot one read the other's data). README now:
    // "names ... well-formed (... a name with one is `BAD_SCHEMA`)".
    test('names with lone surrogates are refused at definition', () => {
        for (const name of ['CL_\uD800', 'CL_\uDBFF', '\uDC00x', 'x\uD83D']) {
            expectError(() => component(name, { x: 'f32' }), 'BAD_SCHEMA', { operation: 'component' });
            expectError(() => component('CL_ok', { [name]: 'f32' }), 'BAD_SCHEMA', { operation: 'component' });
        }
        expect(component('CL_\uD83D\uDE00', { x: 'f32' }).name).toBe('CL_\uD83D\uDE00'); // a pair is fine
    });

    // README, Limits: "a restore or a delta places every entity its bytes hold, even past it, as
    // from a source with a smaller `minFreeIndices`, and spawns are then refused until enough
    // are gone" (the limit bound spawns alone; the README did not say so).
    test('a snapshot or keyframe past the limit of a world is placed whole, and spawns wait until enough are gone', async () => {
        const Flag = tag('CL_F3');
        const source = await newWorld({ minFreeIndices: 1 });
        source.spawnMany(1_048_600, Flag);
        const limit = 2_097_151 - 1_048_575;
        const restored = await newWorld({ snapshot: source.snapshot(), minFreeIndices: 1_048_575 });
        const replica = await newWorld({ minFreeIndices: 1_048_575 });
        expect(replica.applyDelta(source.replicator().peer().encode().bytes.slice())).toBe(true);
        for (const world of [restored, replica]) {
            expect(world.stats().entityCount).toBe(1_048_600);
            refusedUnchanged(world, () => world.spawn(Flag), 'TOO_MANY_ENTITIES');
            world.despawnMany(Uint32Array.from({ length: 1_048_600 - limit + 1 }, (_, i) => i + 1));
            expect(world.isAlive(world.spawn(Flag))).toBe(true);
            world.validate();
        }
    });
});
