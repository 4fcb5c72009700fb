// The per-entity API and deferred commands held to README.md's promises, written from the README
// and the .d.ts alone (each test quotes the sentence it checks).
import { describe, expect, test } from 'vitest';

import { ChildOf, component, relation, tag, TesseraError, type Component, type Entity, type World } from '../../dist/index.js';
import { expectError, FIELD_TYPES, random, storedAs, worldPerTest, type FieldTypeName } from './support.js';

const newWorld = worldPerTest();

const Anchor = tag('HE_Anchor');
const P = component('HE_P', { x: 'f32' });
const C = component('HE_C', { x: 'i32', y: 'u8' });
const S = component('HE_S', { s: 'i16' }, { storage: 'sparse' });
const T = tag('HE_T');
const ST = tag('HE_ST', { storage: 'sparse' });
const Likes = relation('HE_Likes', { a: 'u8' });
const Arr = component('HE_Arr', { x: 'f32', a: ['i16', 3] });
const SArr = component('HE_SArr', { a: ['f64', 2] }, { storage: 'sparse' });
const RArr = relation('HE_RArr', { a: ['u8', 2] });

const sameBytes = (a: Uint8Array, b: Uint8Array) => Buffer.compare(Buffer.from(a), Buffer.from(b)) === 0;

/** `fn` must throw a TesseraError `code` and leave the world's snapshot the same bytes. */
function refusedUnchanged(world: World, fn: () => unknown, code: string, expected: Record<string, unknown> = {}): TesseraError {
    const before = world.snapshot();
    const error = expectError(fn, code as never, expected as never);
    expect(sameBytes(world.snapshot(), before), `${code}: snapshot unchanged`).toBe(true);
    return error;
}

/** What a subscription's drain reports, sorted: `added|removed`. */
function drained(sub: { drain(): { entities: Uint32Array; removed: Uint32Array } }): string {
    const d = sub.drain();
    return `${[...d.entities].sort((a, b) => a - b).join(',')}|${[...d.removed].sort((a, b) => a - b).join(',')}`;
}

describe('deferred set after a recorded add inside a loop', () => {
    // README (Structural changes inside a loop): "when a call recorded in this loop adds or
    // removes `C` on `e` (an add with values of a `C` it holds, a remove and add) [...] the set is
    // recorded after those calls and applied as a change when the loop ends, so a later set is
    // never overwritten by an earlier add's values". (Until 2026-11-28 the set wrote at once and
    // the add's values landed over it: x ended 5, and the change was lost.)
    test('remove, add with values, then set: the set is applied last (table, field handle, sparse)', async () => {
        const world = await newWorld();
        const es = Array.from({ length: 3 }, () => world.spawn(Anchor, C({ x: 1 }), S({ s: 1 })));
        const changedC = world.subscribe({ changed: [C] });
        const changedS = world.subscribe({ changed: [S] });
        changedC.drain();
        changedS.drain();
        const fx = world.field(C, 'x');
        for (const _ of world.query({ all: [Anchor] })) {
            world.remove(es[0]!, C);
            world.add(es[0]!, C({ x: 5 }));
            world.set(es[0]!, C, { x: 7 });
            world.remove(es[1]!, C);
            world.add(es[1]!, C({ x: 5 }));
            fx.set(es[1]!, 7);
            world.remove(es[2]!, S);
            world.add(es[2]!, S({ s: 5 }));
            world.set(es[2]!, S, 's', 7);
            break;
        }
        expect([world.get(es[0]!, C, 'x'), world.get(es[1]!, C, 'x'), world.get(es[2]!, S, 's')]).toEqual([7, 7, 7]);
        // "set is a change wherever it lands ... after a recorded add that brings the component"
        expect(drained(changedC)).toBe(`${es[0]},${es[1]}|`);
        expect(drained(changedS)).toBe(`${es[2]}|`);
    });

    // README: "applied, in order, when the last live iteration ends" and "what it does is decided
    // when it is applied, in order with the rest, exactly as if it were made then"; an add of a
    // component the entity has "writes its values as a change".
    test('add with values of a component the entity has, then set: the later set wins, as outside a loop', async () => {
        const world = await newWorld();
        const outside = world.spawn(C({ x: 1 }));
        world.add(outside, C({ x: 5 }));
        world.set(outside, C, { x: 7 });
        expect(world.get(outside, C, 'x')).toBe(7);
        const e = world.spawn(Anchor, C({ x: 1 }), S({ s: 1 }));
        for (const _ of world.query({ all: [Anchor] })) {
            world.add(e, C({ x: 5 }), S({ s: 5 }));
            world.set(e, C, { x: 7 });
            world.set(e, S, { s: 7 });
            break;
        }
        expect([world.get(e, C, 'x'), world.get(e, S, 's')]).toEqual([7, 7]);
    });

    test('controls that hold: set after an add that brings a component the entity lacked, and set then add', async () => {
        const world = await newWorld();
        const a = world.spawn(Anchor);
        const b = world.spawn(Anchor, C({ x: 1 }));
        let p = 0;
        for (const _ of world.query({ all: [Anchor] })) {
            world.add(a, C({ y: 9 }), S({ s: 5 }));
            world.set(a, C, { x: 7 });
            world.field(S, 's').set(a, 8);
            world.set(b, C, { x: 7 });
            world.add(b, C({ x: 5 }));
            p = world.spawn(C({ x: 1 }));
            world.set(p, C, 'y', 3);
            world.add(p, S({ s: 2 }));
            world.set(p, S, { s: 4 });
            break;
        }
        expect(world.get(a, C)).toEqual({ x: 7, y: 9 });
        expect(world.get(a, S)).toEqual({ s: 8 });
        expect(world.get(b, C)).toEqual({ x: 5, y: 0 });
        expect(world.get(p, C)).toEqual({ x: 1, y: 3 });
        expect(world.get(p, S)).toEqual({ s: 4 });
        expect(world.stats().commandsSkipped).toBe(0);
    });
});

describe('a loop gives what the same calls give outside it (random sequences)', () => {
    // README: "A call is recorded whole, with the values it was given, and what it does is decided
    // when it is applied, in order with the rest, exactly as if it were made then"; "a spawn still
    // gets its handle at once ... the handle is the one it would have given"; "Inside a loop a
    // recorded call counts as what it is when it applies". Pair order is left out (pairs between
    // placed entities apply at once, those of pending ones at the end: documented).
    const comps: Component<any>[] = [P, C, S, T, ST];
    const firstField = (c: Component<any>) => c.fields[0]!.name;

    async function trial(seed: number): Promise<void> {
        const r = random(seed);
        const below = (n: number) => Math.floor(r() * n);
        const A = await newWorld();
        const B = await newWorld();
        for (const w of [A, B]) {
            w.spawn(Anchor);
            for (let i = 0; i < 5; i++) w.spawn(P({ x: i }), C({ x: i }), S({ s: i }));
        }
        const subsOf = (w: World) =>
            comps.flatMap((c) => [
                w.subscribe({ added: [c] }),
                w.subscribe({ removed: [c] }),
                ...(c.isTag ? [] : [w.subscribe({ changed: [c] })]),
            ]);
        const subsA = subsOf(A);
        const subsB = subsOf(B);
        for (const s of [...subsA, ...subsB]) s.drain();
        const handles: Entity[] = [2, 3, 4, 5, 6];
        const ops: { name: string; fn: (w: World) => unknown }[] = [];
        const item = (c: Component<any>) =>
            c.isTag || r() < 0.5
                ? c
                : c === P
                  ? P({ x: below(100) })
                  : c === C
                    ? C(r() < 0.5 ? { x: below(100) } : { y: below(100) })
                    : S({ s: below(100) });
        for (let i = 0; i < 25; i++) {
            const e = handles[below(handles.length)]!;
            const f = handles[below(handles.length)]!;
            const c = comps[below(comps.length)]!;
            const k = below(8);
            let op: { name: string; fn: (w: World) => unknown } | undefined;
            if (k === 0) {
                const items: unknown[] = comps.filter(() => r() < 0.4).map(item);
                if (r() < 0.3) items.push(Likes(f, { a: 3 }));
                op = { name: 'spawn', fn: (w) => w.spawn(...(items as never[])) };
            } else if (k === 1) op = { name: `despawn ${e}`, fn: (w) => w.despawn(e) };
            else if (k === 2) {
                const it: unknown = item(c);
                op = { name: `add ${e} ${c.name}`, fn: (w) => w.add(e, it as never) };
            } else if (k === 3) {
                op = { name: `remove ${e} ${c.name}`, fn: (w) => w.remove(e, c) };
            } else if ((k === 4 || k === 5) && !c.isTag) {
                const v = below(100);
                op =
                    k === 4
                        ? { name: `set ${e} ${c.name} ${v}`, fn: (w) => w.set(e, c, { [firstField(c)]: v } as never) }
                        : { name: `field.set ${e} ${c.name} ${v}`, fn: (w) => w.field(c, firstField(c) as never).set(e, v as never) };
            } else if (k === 6) {
                const v = below(100);
                op = { name: `addPair ${e} ${f}`, fn: (w) => w.addPair(e, Likes, f, { a: v }) };
            } else if (k === 7) op = { name: `removePair ${e} ${f}`, fn: (w) => w.removePair(e, Likes, f) };
            if (!op) continue;
            let result: unknown;
            try {
                result = op.fn(A);
            } catch {
                continue; // refused outside a loop: not made in the loop either
            }
            if (typeof result === 'number') handles.push(result);
            ops.push(op);
        }
        for (const _ of B.query({ all: [Anchor] })) {
            for (const op of ops) op.fn(B); // every call A took is taken in the loop too
        }
        const state = (w: World) =>
            handles.map((h) =>
                w.isAlive(h)
                    ? {
                          h,
                          parts: comps.map((c) => (w.has(h, c) ? (c.isTag ? true : w.get(h, c)) : false)),
                          likes: w
                              .targets(h, Likes)
                              .sort((a, b) => a - b)
                              .map((t) => [t, w.getPair(h, Likes, t)]),
                          likedBy: w.sources(Likes, h).sort((a, b) => a - b),
                      }
                    : { h, dead: true },
            );
        const trace = ops.map((o) => o.name).join('\n');
        expect(state(B), `seed ${seed}\n${trace}`).toEqual(state(A));
        expect(B.stats().entityCount).toBe(A.stats().entityCount);
        expect(subsB.map(drained), `seed ${seed}\n${trace}`).toEqual(subsA.map(drained));
        B.validate();
        A.destroy();
        B.destroy();
    }

    test('spawn, despawn, add, remove, set, field.set, pairs: same entities, values and reported changes', async () => {
        for (let seed = 1; seed <= 400; seed++) await trial(seed);
    });
});

describe('refused calls change nothing, through every entry point', () => {
    // README: "Values are checked before anything is written: `300` into a `u8`, `1.5` into an
    // `i32`, a string or a missing value anywhere throws `BAD_VALUE` and writes nothing" and
    // (Errors) "a failed call leaves the world exactly as it was (its snapshot is the same bytes)".
    const Typed = Object.fromEntries(FIELD_TYPES.map((t) => [t, component(`HE_Ty_${t}`, { v: t, a: [t, 2] })])) as Record<
        FieldTypeName,
        Component<any>
    >;
    const SparseTyped = Object.fromEntries(
        FIELD_TYPES.map((t) => [t, component(`HE_STy_${t}`, { v: t }, { storage: 'sparse' })]),
    ) as Record<FieldTypeName, Component<any>>;
    const VALUES: unknown[] = [
        0,
        -0,
        1.5,
        -1,
        128,
        256,
        -129,
        32768,
        65536,
        2 ** 31,
        2 ** 32 - 1,
        2 ** 32,
        3.4028236e38,
        1e39,
        -1e39,
        1e-46,
        NaN,
        Infinity,
        '1',
        null,
        true,
        1n,
        [1],
        {},
    ];

    test('spawn (general and planned), spawnMany (values and columns), add, set, field handles, sparse: stored as the type stores it, or refused with nothing changed', async () => {
        const world = await newWorld();
        for (const t of FIELD_TYPES) {
            const Ct = Typed[t];
            const St = SparseTyped[t];
            const base = world.spawn(Ct, St);
            for (const raw of VALUES) {
                const v: any = raw;
                const expected = storedAs(t, v);
                let tmp: Entity = 0;
                const entries: [string, (() => unknown) | undefined, () => unknown][] = [
                    ['spawn', undefined, () => world.get(world.spawn(T, Ct({ v }), St), Ct, 'v')],
                    ['planned spawn', () => world.spawn(Ct({ v: 0 })), () => world.get(world.spawn(Ct({ v })), Ct, 'v')],
                    [
                        'planned array spawn',
                        () => world.spawn(Ct({ a: [0, 0] })),
                        () => (world.get(world.spawn(Ct({ a: [1, v] })), Ct, 'a') as number[])[1],
                    ],
                    ['sparse spawn', () => world.spawn(St({ v: 0 })), () => world.get(world.spawn(St({ v })), St, 'v')],
                    ['spawnMany', undefined, () => world.get(world.spawnMany(2, Ct({ v }))[1]!, Ct, 'v')],
                    ['spawnMany columns', undefined, () => world.get(world.spawnMany(2, Ct.columns({ v: [0, v] }))[1]!, Ct, 'v')],
                    [
                        'spawnMany array columns',
                        undefined,
                        () => (world.get(world.spawnMany(2, Ct.columns({ a: [0, 0, 0, v] }))[1]!, Ct, 'a') as number[])[1],
                    ],
                    ['add', () => (tmp = world.spawn(T)), () => (world.add(tmp, Ct({ v })), world.get(tmp, Ct, 'v'))],
                    ['add of a component it has', undefined, () => (world.add(base, Ct({ v })), world.get(base, Ct, 'v'))],
                    ['set object', undefined, () => (world.set(base, Ct, { v }), world.get(base, Ct, 'v'))],
                    ['set field', undefined, () => (world.set(base, Ct, 'v', v as number), world.get(base, Ct, 'v'))],
                    [
                        'set array field',
                        undefined,
                        () => (world.set(base, Ct, 'a', [v, 0] as never), (world.get(base, Ct, 'a') as number[])[0]),
                    ],
                    ['field handle', undefined, () => (world.field(Ct, 'v').set(base, v as number), world.field(Ct, 'v').get(base))],
                    [
                        'array field handle',
                        undefined,
                        () => (world.field(Ct, 'a').set(base, [0, v] as never), (world.field(Ct, 'a').get(base) as number[])[1]),
                    ],
                    ['sparse set', undefined, () => (world.set(base, St, 'v', v as number), world.get(base, St, 'v'))],
                    ['sparse field handle', undefined, () => (world.field(St, 'v').set(base, v as number), world.field(St, 'v').get(base))],
                ];
                for (const [name, prime, act] of entries) {
                    world.set(base, Ct, { v: 0, a: [0, 0] });
                    world.set(base, St, { v: 0 });
                    prime?.();
                    const label = `${t} ${String(v)} ${name}`;
                    if (expected === 'refused') {
                        const error = refusedUnchanged(world, act, 'BAD_VALUE');
                        expect([Ct.name, St.name], label).toContain(error.component);
                        expect(['v', 'a'], label).toContain(error.field);
                    } else {
                        expect(act(), label).toBe(expected);
                    }
                }
            }
        }
    });

    // README: "A spawn or an add with several components, pairs and values is one call into the
    // core, which checks every part ... before it changes anything"; "a call that registered it
    // and then failed takes the registration back"; "the error names the one at fault".
    test('a spawn or add whose third item is bad: nothing spawned, added or registered; the error names the third', async () => {
        const world = await newWorld();
        const Fresh1 = tag('HE_Fresh1');
        const Fresh2 = component('HE_Fresh2', { v: 'u8' }, { storage: 'sparse' });
        const Fresh3 = component('HE_Fresh3', { v: 'u16', w: ['i8', 2] });
        const e = world.spawn(P);
        const parent = world.spawn(P);
        const cases: [string, () => unknown, string, string | undefined][] = [
            ['spawn u16 -1', () => world.spawn(Fresh1, Fresh2({ v: 1 }), Fresh3({ v: -1 })), 'HE_Fresh3', 'v'],
            ['spawn array length', () => world.spawn(Fresh1, ChildOf(parent), Fresh3({ w: [1, 2, 3] })), 'HE_Fresh3', 'w'],
            ['spawn i8 element', () => world.spawn(Fresh1, Fresh2, Fresh3({ w: [1, 200] })), 'HE_Fresh3', 'w'],
            ['spawn sparse third', () => world.spawn(Fresh1, Fresh3({ v: 1 }), Fresh2({ v: 256 })), 'HE_Fresh2', 'v'],
            ['spawn extra key', () => world.spawn(Fresh1, Fresh2, Fresh3({ v: 1, nope: 2 } as never)), 'HE_Fresh3', 'nope'],
            ['spawnMany string', () => world.spawnMany(10, Fresh1, Fresh2, Fresh3({ v: '1' as never })), 'HE_Fresh3', 'v'],
            ['add bigint', () => world.add(e, Fresh1, Fresh2({ v: 1 }), Fresh3({ v: 1n as never })), 'HE_Fresh3', 'v'],
            ['add -0.5', () => world.add(e, Fresh1, Fresh3, Fresh2({ v: -0.5 })), 'HE_Fresh2', 'v'],
            ['add NaN after pair', () => world.add(e, ChildOf(parent), Fresh1, Fresh2({ v: NaN })), 'HE_Fresh2', 'v'],
        ];
        for (const [label, fn, component, field] of cases) {
            const code = label.includes('extra key') ? 'UNKNOWN_FIELD' : 'BAD_VALUE';
            const error = refusedUnchanged(world, fn, code, { component, field });
            expect(error.operation, label).toMatch(/^world\.(spawn|spawnMany|add)$/);
        }
        expect(world.has(e, Fresh1)).toBe(false);
        expect(world.parentOf(e)).toBeUndefined();
        expect(world.stats().entityCount).toBe(2);
        // the handles a refused spawn did not take are the next ones handed out
        expect(world.spawn(P)).toBe(parent + 1);
    });

    // README: "Every call is all or nothing"; "Each value is read once from your object".
    test('an exception from a getter or a proxy mid-call changes nothing, inside a loop too', async () => {
        const world = await newWorld();
        const Fresh = component('HE_FreshG', { v: 'u8' });
        const e = world.spawn(Anchor, Arr({ x: 1, a: [1, 2, 3] }));
        const throwing = {
            get v(): number {
                throw new Error('getter');
            },
        };
        const throwingArray = new Proxy([1, 2, 3, 4, 5, 6, 7, 8, 9], {
            get(target, key) {
                if (key === '8') throw new Error('proxy');
                return Reflect.get(target, key);
            },
        });
        const attempts = [
            () => world.spawn(Arr({ x: 1 }), Fresh(throwing)),
            () => world.add(e, T, Fresh(throwing)),
            () => world.set(e, Arr, { x: 5, a: [1, 2] as never }),
            () =>
                world.set(e, Arr, {
                    x: 5,
                    get a(): number[] {
                        throw new Error('late');
                    },
                } as never),
            () => world.spawnMany(3, Arr.columns({ x: [1, 2, 3], a: throwingArray })),
        ];
        const before = world.snapshot();
        for (const attempt of attempts) expect(attempt).toThrow();
        expect(sameBytes(world.snapshot(), before)).toBe(true);
        for (const _ of world.query({ all: [Anchor] })) {
            for (const attempt of attempts) expect(attempt).toThrow();
            break;
        }
        expect(sameBytes(world.snapshot(), before)).toBe(true);
        expect(world.get(e, Arr)).toEqual({ x: 1, a: [1, 2, 3] });
        expect(world.stats().commandsSkipped).toBe(0);
    });
});

describe('handles', () => {
    // README: "stale entity handles are detected on every call and never touch another entity's
    // data"; "Entity handles are numbers below 2^30" (21-bit index, 9-bit generation).
    test('a live index with generation bits it never had (or bits above 2^30): STALE_ENTITY through every per-entity call, nothing written', async () => {
        const world = await newWorld();
        const e = world.spawn(Arr({ x: 1, a: [1, 2, 3] }), S({ s: 1 }), SArr({ a: [1, 2] }));
        const fx = world.field(Arr, 'x');
        const fa = world.field(Arr, 'a');
        const fs = world.field(S, 's');
        fx.set(e, 1); // the handles learned where e's row is
        fs.set(e, 1);
        const before = world.snapshot();
        for (const h of [e | (1 << 21), e + (511 << 21), e + 2 ** 30, e + 2 ** 31, e + 2 ** 32 - 2 ** 21]) {
            expect(world.isAlive(h)).toBe(false);
            for (const fn of [
                () => fx.get(h),
                () => fx.set(h, 9),
                () => fa.set(h, [9, 9, 9]),
                () => fs.get(h),
                () => fs.set(h, 9),
                () => world.get(h, Arr),
                () => world.get(h, SArr, 'a'),
                () => world.set(h, Arr, { x: 9 }),
                () => world.set(h, SArr, 'a', [9, 9]),
                () => world.has(h, Arr),
                () => world.add(h, T),
                () => world.remove(h, Arr),
                () => world.despawn(h),
            ])
                expectError(fn, 'STALE_ENTITY', { entity: h });
        }
        expect(sameBytes(world.snapshot(), before)).toBe(true);
        expect(world.get(e, Arr)).toEqual({ x: 1, a: [1, 2, 3] });
    });

    test('a reused slot: field handles (table, sparse, array) and has of the old handle never reach the new entity', async () => {
        const world = await newWorld({ minFreeIndices: 1 });
        const fx = world.field(Arr, 'x');
        const fa = world.field(Arr, 'a');
        const fs = world.field(S, 's');
        const old = world.spawn(Arr({ x: 1 }), S({ s: 1 }));
        fx.get(old);
        fs.get(old);
        world.despawn(old);
        world.despawn(world.spawn());
        const reused = world.spawn(Arr({ x: 2, a: [2, 2, 2] }), S({ s: 2 }), T);
        expect(reused & 0x1fffff).toBe(old & 0x1fffff);
        for (const fn of [
            () => fx.get(old),
            () => fx.set(old, 9),
            () => fa.get(old),
            () => fa.set(old, [9, 9, 9]),
            () => fs.get(old),
            () => fs.set(old, 9),
            () => world.has(old, T),
            () => world.has(old, S),
        ])
            expectError(fn, 'STALE_ENTITY', { entity: old });
        for (const _ of world.query({ all: [Arr] })) {
            expectError(() => world.despawn(old), 'STALE_ENTITY', { entity: old });
            expectError(() => world.add(old, ST), 'STALE_ENTITY', { entity: old });
            expectError(() => fx.set(old, 9), 'STALE_ENTITY', { entity: old });
        }
        expect(world.get(reused, Arr)).toEqual({ x: 2, a: [2, 2, 2] });
        expect(world.get(reused, S)).toEqual({ s: 2 });
        expect(world.has(reused, ST)).toBe(false);
        expect(world.stats().commandsSkipped).toBe(0);
    });
});

describe('reads are fresh and mark nothing', () => {
    // README: "Objects from `get` and `getPair` are fresh copies too"; "`world.get(e, Position, 'x')`
    // ... a fresh array for array fields" (world.d.ts); "Components nobody watches cost one branch
    // per write" / a change is a write: reads are none.
    test('get, field.get and getPair of array fields give fresh plain arrays: mutating them changes and marks nothing', async () => {
        const world = await newWorld();
        const e = world.spawn(Arr({ a: [1, 2, 3] }), SArr({ a: [4, 5] }));
        const f = world.spawn(Arr);
        world.addPair(e, RArr, f, { a: [6, 7] });
        const subs = [world.subscribe({ changed: [Arr] }), world.subscribe({ changed: [SArr] }), world.subscribe({ pairs: [RArr] })];
        for (const s of subs) s.drain();
        const copies: unknown[] = [
            world.get(e, Arr),
            world.get(e, Arr, 'a'),
            world.field(Arr, 'a').get(e),
            world.get(e, SArr),
            world.get(e, SArr, 'a'),
            world.field(SArr, 'a').get(e),
            world.getPair(e, RArr, f),
            world.getPair(e, RArr, f, 'a'),
        ];
        for (const copy of copies) {
            const array = (Array.isArray(copy) ? copy : (copy as { a: number[] }).a) as number[];
            expect(Array.isArray(array)).toBe(true);
            array[0] = 99;
            if (!Array.isArray(copy)) (copy as Record<string, unknown>).x = 77;
        }
        expect(world.get(e, Arr)).toEqual({ x: 0, a: [1, 2, 3] });
        expect(world.get(e, SArr)).toEqual({ a: [4, 5] });
        expect(world.getPair(e, RArr, f)).toEqual({ a: [6, 7] });
        expect(world.get(e, Arr, 'a')).not.toBe(world.get(e, Arr, 'a'));
        expect(subs[0]!.drain().entities.length).toBe(0);
        expect(subs[1]!.drain().entities.length).toBe(0);
        expect(subs[2]!.drain().pairEvents).toEqual([]);
    });

    test('get, has, isAlive, field.get, plain query loops that only read, count() and entities() report no change to any consumer', async () => {
        const world = await newWorld();
        const es = world.spawnMany(50, Arr({ x: 1 }), S({ s: 2 }));
        const changedArr = world.query({ all: [Arr], changed: [Arr] });
        const changedS = world.query({ all: [Arr], changed: [S] });
        const sub = world.subscribe({ changed: [Arr] });
        const subS = world.subscribe({ changed: [S] });
        changedArr.entities();
        changedS.entities();
        sub.drain();
        subS.drain();
        const fx = world.field(Arr, 'x');
        const fs = world.field(S, 's');
        const plain = world.query({ all: [Arr] });
        const withWrites = world.query({ all: [Arr], writes: [Arr] });
        let sum = 0;
        for (let round = 0; round < 2; round++) {
            for (const e of es) {
                sum += world.get(e, Arr).x + world.get(e, Arr, 'x') + fx.get(e) + fs.get(e) + world.get(e, S).s;
                expect(world.has(e, Arr) && world.has(e, S) && world.isAlive(e)).toBe(true);
            }
            for (const chunk of plain) {
                const x = chunk.column(Arr, 'x');
                for (const row of chunk.rows) sum += x[row]!;
            }
            expect(withWrites.count()).toBe(50);
            expect(withWrites.entities().length).toBe(50);
        }
        expect(sum).toBe(2 * 50 * 7 + 2 * 50);
        expect(changedArr.entities().length).toBe(0);
        expect(changedS.entities().length).toBe(0);
        expect(sub.drain().entities.length).toBe(0);
        expect(subS.drain().entities.length).toBe(0);
    });
});

describe('inside loops', () => {
    // README: "A handle spawned inside a loop is *pending* until then (`get` throws
    // `PENDING_ENTITY`; `set`, `add`, `remove` and `despawn` on it are deferred too)"; world.d.ts:
    // "get and has throw `PENDING_ENTITY`"; isAlive: "a live (or pending) entity".
    test('a pending handle: alive, get/has/field.get refuse with PENDING_ENTITY, and what was recorded on it applies in order', async () => {
        const world = await newWorld();
        world.spawn(Anchor);
        let p = 0;
        let gone = 0;
        for (const _ of world.query({ all: [Anchor] })) {
            p = world.spawn(C({ x: 1 }), T);
            expect(world.isAlive(p)).toBe(true);
            expectError(() => world.get(p, C), 'PENDING_ENTITY', { entity: p });
            expectError(() => world.has(p, T), 'PENDING_ENTITY', { entity: p });
            expectError(() => world.field(C, 'x').get(p), 'PENDING_ENTITY', { entity: p });
            world.remove(p, T);
            world.add(p, T, S({ s: 3 }));
            world.remove(p, T);
            world.field(C, 'y').set(p, 4);
            world.add(p, C({ x: 2 }));
            // spawned and despawned in the same loop
            gone = world.spawn(P);
            world.add(gone, T);
            world.despawn(gone);
            expect(world.isAlive(gone)).toBe(true);
            expectError(() => world.set(p, C, { y: 300 }), 'BAD_VALUE', { entity: p, component: 'HE_C', field: 'y' });
        }
        expect(world.get(p, C)).toEqual({ x: 2, y: 4 });
        expect(world.has(p, T)).toBe(false);
        expect(world.get(p, S)).toEqual({ s: 3 });
        expect(world.isAlive(gone)).toBe(false);
        expectError(() => world.get(gone, P), 'STALE_ENTITY', { entity: gone });
        expect(world.stats().commandsSkipped).toBe(0);
    });

    // README: "A recorded call whose entity is gone by then (despawned by a call recorded before
    // it) is skipped ... `world.stats().commandsSkipped` counts them"; a stale handle throws.
    test('calls recorded after a recorded despawn are skipped and counted; calls on already-stale handles throw at once', async () => {
        const world = await newWorld();
        const a = world.spawn(Anchor, P);
        const b = world.spawn(Anchor, P);
        const dead = world.spawn(P);
        world.despawn(dead);
        for (const _ of world.query({ all: [Anchor] })) {
            expectError(() => world.despawn(dead), 'STALE_ENTITY', { entity: dead });
            expectError(() => world.add(dead, ST), 'STALE_ENTITY', { entity: dead });
            world.despawn(a);
            world.add(a, T); // skipped
            world.remove(a, P); // skipped
            world.despawn(a); // skipped
            world.add(a, ST); // skipped
            world.spawn(P, ChildOf(a)); // spawned, without a parent (the pair skipped)
            world.add(b, T);
        }
        expect(world.stats().commandsSkipped).toBe(5); // four calls on a, and the ChildOf(a) pair of the spawn
        expect(world.isAlive(a)).toBe(false);
        expect(world.has(b, T)).toBe(true);
        const orphans = world.query({ all: [P], none: [Anchor, ChildOf] }).entities();
        expect(orphans.length).toBe(1);
    });

    // README: "Leaving a loop with `break`, `return` or an exception ends its iteration"; "A
    // system's iterations end when the system returns (or throws)"; "applied, in order, when
    // the last live iteration ends".
    test('an exception mid-loop applies what was recorded before it; a nested loop defers to the outer one', async () => {
        const world = await newWorld();
        const e = world.spawn(Anchor, P);
        const q = world.query({ all: [Anchor] });
        let s = 0;
        expect(() => {
            for (const _ of q) {
                s = world.spawn(P({ x: 3 }));
                world.add(e, T);
                world.remove(e, P);
                throw new Error('boom');
            }
        }).toThrow('boom');
        expect(world.get(s, P)).toEqual({ x: 3 });
        expect(world.has(e, T)).toBe(true);
        expect(world.has(e, P)).toBe(false);
        const inner = world.query({ all: [P] });
        let n = 0;
        for (const _ of q) {
            for (const _c of inner) {
                n = world.spawn(P({ x: 4 }));
                world.despawn(s);
                break;
            }
            expectError(() => world.get(n, P), 'PENDING_ENTITY');
            expect(world.get(s, P)).toEqual({ x: 3 }); // its despawn is still recorded
        }
        expect(world.get(n, P)).toEqual({ x: 4 });
        expect(world.isAlive(s)).toBe(false);
    });

    test('a system that records and then throws: what it recorded is applied, the tick fails and the frame does not advance', async () => {
        const world = await newWorld();
        const e = world.spawn(P);
        let s = 0;
        world.system({
            stage: world.stage('HE_stage'),
            query: { all: [P] },
            run(query, w) {
                for (const _ of query) {
                    s = w.spawn(P({ x: 9 }));
                    w.add(e, T);
                    throw new Error('system boom');
                }
            },
        });
        expect(() => world.tick()).toThrow('system boom');
        expect(world.frame).toBe(0);
        expect(world.get(s, P)).toEqual({ x: 9 });
        expect(world.has(e, T)).toBe(true);
    });

    // README: "Views taken in the loop (`chunk.column()`, `chunk.entities`) stay valid for the
    // whole loop, however many calls it records: memory does not grow while a loop is live".
    test('views stay valid (debug world) while the loop body records 30,000 spawns with values, sparse parts and pairs', async () => {
        const world = await newWorld({ debug: true });
        const B = component('HE_Big', { v: 'i32', a: ['f64', 4] });
        const parents = world.spawnMany(1000, P.columns({ x: Array.from({ length: 1000 }, (_, i) => i) }));
        const q = world.query({ all: [P], writes: [P] });
        const spawned: [Entity, number, Entity][] = [];
        let n = 0;
        for (const chunk of q) {
            const x = chunk.column(P, 'x');
            const entities = chunk.entities;
            for (let i = 0; i < chunk.count; i++) {
                for (let k = 0; k < 30; k++, n++)
                    spawned.push([world.spawn(B({ v: n, a: [n, 1, 2, 3] }), S({ s: n % 30000 }), ChildOf(entities[i]!)), n, entities[i]!]);
                x[i]! += 1;
            }
            let sum = 0;
            for (let i = 0; i < chunk.count; i++) sum += x[i]! + entities[i]! * 0;
            expect(sum).toBe((chunk.count * (chunk.count + 1)) / 2); // 1000 rows, 1..1000
        }
        expect(spawned.length).toBe(30000);
        for (const [e, v, parent] of spawned) {
            if (v % 97 !== 0) continue;
            expect(world.get(e, B)).toEqual({ v, a: [v, 1, 2, 3] });
            expect(world.get(e, S, 's')).toBe(v % 30000);
            expect(world.parentOf(e)).toBe(parent);
        }
        expect(world.childrenOf(parents[7]!).length).toBe(30);
        expect(world.get(parents[7]!, P, 'x')).toBe(8);
        world.validate();
    });

    // README: "A component is registered in a world on its first use there (`get`, `has` and the
    // other reads never register it: no entity can have it)"; removing one an entity lacks "does nothing".
    test('remove of components the world never used changes nothing, in a loop or not', async () => {
        const world = await newWorld();
        const e = world.spawn(Anchor, P);
        const unused = [
            tag('HE_U1'),
            component('HE_U2', { v: 'u8' }),
            tag('HE_U3', { storage: 'sparse' }),
            component('HE_U4', { v: 'u8' }, { storage: 'sparse' }),
        ];
        const before = world.snapshot();
        for (const U of unused) {
            world.remove(e, U);
            expect(world.has(e, U)).toBe(false);
        }
        for (const _ of world.query({ all: [Anchor] })) for (const U of unused) world.remove(e, U);
        expect(sameBytes(world.snapshot(), before)).toBe(true);
        expect(world.stats().commandsSkipped).toBe(0);
    });
});
