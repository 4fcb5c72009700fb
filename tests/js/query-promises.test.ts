// Promises of the README and the .d.ts about queries, chunk iteration, consumers, subscriptions,
// systems and kernels, attacked at their edges.
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';

import { ChildOf, component, relation, tag, type Entity, type Query, type World } from '../../dist/index.js';
import { expectError, sorted, worldPerTest } from './support.js';

const newWorld = worldPerTest();

const Pos = component('QpPos', { x: 'f32', y: 'f32' });
const Vel = component('QpVel', { x: 'f32', y: 'f32' });
const Hp = component('QpHp', { value: 'i32' });
const U8 = component('QpU8', { v: 'u8' });
const U32 = component('QpU32', { v: 'u32' });
const I32 = component('QpI32', { v: 'i32', w: 'i32' });
const I8 = component('QpI8', { v: 'i8' });
const Frozen = tag('QpFrozen');
const Sel = tag('QpSel', { storage: 'sparse' });
const Never = component('QpNever', { n: 'f64' });

/** The entities one run visits (rows of each chunk). */
function run(query: { [Symbol.iterator](): Iterator<any> }): number[] {
    const out: number[] = [];
    for (const chunk of query as Iterable<any>) for (const row of chunk.rows) out.push(chunk.entities[row]);
    return sorted(out);
}

describe('read-only iteration reports nothing; marked writes once', () => {
    test('a plain and a filtered loop that only read mark nothing for any other consumer', async () => {
        const world = await newWorld({ chunkBytes: 1024 });
        const es = world.spawnMany(300, Pos, Hp);
        const sub = world.subscribe({ changed: [Hp] });
        const q = world.query({ changed: [Hp] });
        world.set(es[10]!, Hp, { value: 1 });
        // reads: a plain loop, a filtered loop, count/entities of a plain writes: query
        const plain = world.query({ all: [Hp, Pos] });
        let total = 0;
        for (const chunk of plain) {
            const hp = chunk.column(Hp, 'value');
            for (const row of chunk.rows) total += hp[row]!;
        }
        expect(total).toBe(1);
        expect(run(q)).toEqual([es[10]]);
        expect(sub.drain().entities).toEqual(new Uint32Array([es[10]!]));
        // nothing happened since: every consumer empty, after any number of read loops
        for (let i = 0; i < 3; i++) run(plain);
        expect(run(q)).toEqual([]);
        expect(sub.drain().entities.length).toBe(0);
        world.tick();
        expect(run(q)).toEqual([]);
        expect(sub.drain().entities.length).toBe(0);
    });

    test('an unmarked view write is invisible; a marked one is one change to each consumer', async () => {
        const world = await newWorld();
        const es = world.spawnMany(20, Pos, Hp);
        const s1 = world.subscribe({ changed: [Hp] });
        const s2 = world.subscribe({ changed: [Hp] });
        const unmarked = world.query({ all: [Hp] });
        for (const chunk of unmarked) chunk.column(Hp, 'value')[3] = 7;
        expect(world.get(es[3]!, Hp, 'value')).toBe(7);
        expect(s1.drain().entities.length).toBe(0);
        const marked = world.query({ all: [Hp] });
        for (const chunk of marked) {
            const hp = chunk.column(Hp, 'value');
            hp[4] = 8;
            chunk.markChanged(Hp, 4);
            chunk.markChanged(Hp, 4);
        }
        expect(sorted(s1.drain().entities)).toEqual([es[4]]);
        expect(sorted(s2.drain().entities)).toEqual([es[4]]); // s2 saw neither write before: only the marked
        expect(s1.drain().entities.length).toBe(0);
        expect(s2.drain().entities.length).toBe(0);
    });

    test('a writes: loop left by break marks the chunk it was in, not the chunks it did not reach', async () => {
        const world = await newWorld({ chunkBytes: 1024 });
        world.spawnMany(400, Pos, Hp);
        const sub = world.subscribe({ changed: [Pos] });
        const w = world.query({ all: [Pos], writes: [Pos] });
        let first: number[] = [];
        let chunks = 0;
        for (const chunk of w) {
            chunks++;
            first = Array.from(chunk.entities.subarray(0, chunk.count));
            break;
        }
        expect(chunks).toBe(1);
        expect(first.length).toBeGreaterThan(0);
        expect(first.length).toBeLessThan(400);
        expect(sorted(sub.drain().entities)).toEqual(sorted(first));
    });
});

describe('added / removed across despawn and index reuse', () => {
    test('despawn, then a spawn that reuses the index, in one frame: removed has the old handle, added the new', async () => {
        const world = await newWorld({ minFreeIndices: 1 });
        const a = world.spawn(Hp);
        const b = world.spawn(Hp);
        const sub = world.subscribe({ added: [Hp], removed: [Hp] });
        expect(sorted(sub.drain().entities)).toEqual(sorted([a, b]));
        world.despawn(a);
        world.despawn(b);
        const c = world.spawn(Hp({ value: 4 })); // more than 1 free: index of a reused
        expect(c & 0x1fffff).toBe(a & 0x1fffff);
        expect(c).not.toBe(a);
        const changes = sub.drain();
        expect(Array.from(changes.entities)).toEqual([c]);
        expect(sorted(changes.removed)).toEqual(sorted([a, b]));
        expect(world.get(c, Hp, 'value')).toBe(4);
    });

    test('spawned and despawned between drains: removed only (never as added); a changed query skips it', async () => {
        const world = await newWorld({ minFreeIndices: 1 });
        const keep = world.spawn(Hp);
        const sub = world.subscribe({ added: [Hp], changed: [Hp], removed: [Hp] });
        const ch = world.query({ changed: [Hp] });
        sub.drain();
        const e = world.spawn(Hp);
        world.set(e, Hp, { value: 3 });
        world.despawn(e);
        const changes = sub.drain();
        expect(Array.from(changes.entities)).toEqual([]);
        expect(Array.from(changes.removed)).toEqual([e]);
        expect(run(ch)).toEqual([]);
        world.set(keep, Hp, { value: 1 });
        expect(run(ch)).toEqual([keep]);
    });

    test('despawnAll of a query: each removal reported once, by removedOf too', async () => {
        const world = await newWorld();
        const es = world.spawnMany(50, Hp, Pos);
        const others = world.spawnMany(5, Hp);
        const sub = world.subscribe({ removed: [Hp, Pos] });
        world.query({ all: [Pos] }).despawnAll();
        const changes = sub.drain();
        expect(sorted(changes.removedOf(Hp))).toEqual(sorted(es));
        expect(sorted(changes.removedOf(Pos))).toEqual(sorted(es));
        expect(others.every((e) => world.isAlive(e))).toBe(true);
        expect(sub.drain().removed.length).toBe(0);
    });
});

describe('consumers made mid-run, nested runs, runs left early', () => {
    test('a subscription made inside a live loop starts then: writes before it are not its, writes after are', async () => {
        const world = await newWorld();
        const [a, b] = world.spawnMany(2, Hp, Pos);
        const q = world.query({ all: [Pos] });
        let sub!: ReturnType<World['subscribe']>;
        let pending = 0 as Entity;
        for (const _chunk of q) {
            world.set(a!, Hp, { value: 1 });
            sub = world.subscribe({ changed: [Hp] });
            world.set(b!, Hp, { value: 2 });
            pending = world.spawn(Hp({ value: 5 }), Pos); // added, not changed
        }
        expect(world.isAlive(pending)).toBe(true);
        expect(Array.from(sub.drain().entities)).toEqual([b]);
    });

    test('a plain query nested in itself: the inner run sees every entity, writes: marks once', async () => {
        const world = await newWorld({ chunkBytes: 1024 });
        const es = world.spawnMany(200, Pos);
        const sub = world.subscribe({ changed: [Pos] });
        const q = world.query({ all: [Pos], writes: [Pos] });
        let outer = 0;
        let inner = 0;
        for (const chunk of q) {
            outer += chunk.count;
            if (inner === 0) for (const c2 of q) inner += c2.count;
        }
        expect(outer).toBe(200);
        expect(inner).toBe(200);
        expect(sorted(sub.drain().entities)).toEqual(sorted(es));
        expect(sub.drain().entities.length).toBe(0);
    });

    test('throw inside a filtered loop, then iterate again: what it did not reach comes next, each once', async () => {
        const world = await newWorld({ chunkBytes: 1024 });
        const es = world.spawnMany(300, Hp);
        const q = world.query({ changed: [Hp] });
        for (const e of es) world.set(e, Hp, { value: 1 });
        const seen: number[] = [];
        expect(() => {
            for (const chunk of q) {
                for (const row of chunk.rows) seen.push(chunk.entities[row]!);
                throw new Error('boom');
            }
        }).toThrow('boom');
        expect(seen.length).toBeGreaterThan(0);
        expect(seen.length).toBeLessThan(300);
        const rest = run(q);
        expect(sorted([...seen, ...rest])).toEqual(sorted(es));
        expect(rest.filter((e) => seen.includes(e))).toEqual([]);
        expect(run(q)).toEqual([]);
    });

    test('break out of a subscription chunk loop, then drain: the rest, once; an entity changed again once', async () => {
        const world = await newWorld({ chunkBytes: 1024 });
        const es = world.spawnMany(300, Hp);
        const sub = world.subscribe({ changed: [Hp] });
        for (const e of es) world.set(e, Hp, { value: 1 });
        let seen: number[] = [];
        for (const chunk of sub) {
            seen = Array.from(chunk.rows, (r) => chunk.entities[r]!);
            break;
        }
        const last = es[299]!;
        expect(seen).not.toContain(last);
        world.set(last, Hp, { value: 2 });
        const rest = Array.from(sub.drain().entities);
        expect(sorted([...seen, ...rest])).toEqual(sorted(es));
        expect(rest.filter((e) => e === last).length).toBe(1);
        expect(sub.drain().entities.length).toBe(0);
    });
});

describe('kernels at their edges', () => {
    test('u32: scale and addScaled whose exact result passes 2^63 saturate to 2^32-1, never wrap', async () => {
        const world = await newWorld();
        const e = world.spawn(U32({ v: 2 ** 32 - 1 }));
        const q = world.query({ all: [U32] });
        q.scale(U32, 'v', 2 ** 32 - 1);
        expect(world.get(e, U32, 'v')).toBe(2 ** 32 - 1);
        const f = world.spawn(U32({ v: 2 ** 32 - 1 }));
        world.set(e, U32, { v: 2 ** 32 - 1 });
        q.addScaled(U32, 'v', U32, 'v', 2 ** 32 - 1); // v += v * k: about 2^64
        expect(world.get(e, U32, 'v')).toBe(2 ** 32 - 1);
        expect(world.get(f, U32, 'v')).toBe(2 ** 32 - 1);
        q.fill(U32, 'v', 3);
        q.scale(U32, 'v', 0);
        expect(world.get(e, U32, 'v')).toBe(0);
    });

    test('i32: negating the minimum and products past 2^62 saturate; exact results in range are exact', async () => {
        const world = await newWorld();
        const e = world.spawn(I32({ v: -(2 ** 31), w: -(2 ** 31) }));
        const q = world.query({ all: [I32] });
        q.scale(I32, 'v', -1);
        expect(world.get(e, I32, 'v')).toBe(2 ** 31 - 1);
        world.set(e, I32, { v: 0, w: -(2 ** 31) });
        q.addScaled(I32, 'v', I32, 'w', -(2 ** 31)); // 0 + 2^62
        expect(world.get(e, I32, 'v')).toBe(2 ** 31 - 1);
        world.set(e, I32, { v: 0, w: -(2 ** 31) });
        q.addScaled(I32, 'v', I32, 'w', 2 ** 31 - 1); // -2^62 + 2^31
        expect(world.get(e, I32, 'v')).toBe(-(2 ** 31));
        world.set(e, I32, { v: -(2 ** 31), w: 2 ** 31 - 1 });
        q.addScaled(I32, 'v', I32, 'w', 1); // exactly -1
        expect(world.get(e, I32, 'v')).toBe(-1);
        world.set(e, I32, { v: 2 ** 31 - 1 });
        q.offset(I32, 'v', 2 ** 31 - 1);
        expect(world.get(e, I32, 'v')).toBe(2 ** 31 - 1);
        q.offset(I32, 'v', -(2 ** 31));
        expect(world.get(e, I32, 'v')).toBe(-1);
    });

    test('countdown: u32 by its maximum stops at 0 and is returned once; i8 already <= 0 is never returned', async () => {
        const world = await newWorld();
        const a = world.spawn(U32({ v: 5 }));
        const b = world.spawn(U32({ v: 0 }));
        const q = world.query({ all: [U32] });
        expect(Array.from(q.countdown(U32, 'v', 2 ** 32 - 1))).toEqual([a]);
        expect(world.get(a, U32, 'v')).toBe(0);
        expect(world.get(b, U32, 'v')).toBe(0);
        expect(Array.from(q.countdown(U32, 'v', 2 ** 32 - 1))).toEqual([]);
        const c = world.spawn(I8({ v: -128 }));
        const d = world.spawn(I8({ v: 1 }));
        const qi = world.query({ all: [I8] });
        expect(Array.from(qi.countdown(I8, 'v', 127))).toEqual([d]);
        expect(world.get(c, I8, 'v')).toBe(-128);
        expect(world.get(d, I8, 'v')).toBe(-126);
        expect(Array.from(qi.countdown(I8, 'v', -128))).toEqual([]); // -= -128: goes up
        expect(world.get(c, I8, 'v')).toBe(0);
        expect(world.get(d, I8, 'v')).toBe(2);
    });

    test('operands outside the field type are BAD_VALUE and change nothing (snapshot bytes)', async () => {
        const world = await newWorld();
        world.spawnMany(10, U8({ v: 9 }), U32({ v: 7 }));
        const q = world.query({ all: [U8, U32] });
        const before = world.snapshot();
        expectError(() => q.countdown(U8, 'v', 256), 'BAD_VALUE');
        expectError(() => q.scale(U8, 'v', -1), 'BAD_VALUE');
        expectError(() => q.clamp(U8, 'v', -1, 3), 'BAD_VALUE');
        expectError(() => q.clamp(U8, 'v', 0, 256), 'BAD_VALUE');
        expectError(() => q.fill(U32, 'v', 2 ** 32), 'BAD_VALUE');
        expectError(() => q.offset(U32, 'v', 0.5), 'BAD_VALUE');
        expectError(() => q.addScaled(U8, 'v', U32, 'v' as any, 1), 'BAD_FIELD_TYPE');
        expect(world.snapshot()).toEqual(before);
    });

    test('kernels on empty queries and on a never-registered component: nothing written, empty countdown', async () => {
        const world = await newWorld();
        world.spawnMany(5, Pos);
        const empty = world.query({ all: [Pos, Frozen] });
        empty.fill(Pos, 'x', 3);
        expect(Array.from(empty.countdown(Pos, 'x', 1))).toEqual([]);
        const never = world.query({ all: [Never] });
        expect(never.count()).toBe(0);
        expect(never.entities().length).toBe(0);
        never.fill(Never, 'n', 1);
        never.offset(Never, 'n', 1);
        expect(Array.from(never.countdown(Never, 'n', 1))).toEqual([]);
        never.despawnAll();
        never.addAll(Frozen);
        never.removeAll(Frozen);
        expect(world.stats().entityCount).toBe(5);
        expect(
            world
                .query({ all: [Pos] })
                .entities()
                .every((e) => world.get(e, Pos, 'x') === 0),
        ).toBe(true);
    });

    test('a kernel on a query with a sparse all term and a none term writes only matching entities', async () => {
        const world = await newWorld({ chunkBytes: 1024 });
        const es = world.spawnMany(200, Hp({ value: 10 }));
        const chosen = es.filter((_, i) => i % 7 === 0);
        for (const e of chosen) world.add(e, Sel);
        world.add(chosen[0]!, Frozen);
        const q = world.query({ all: [Hp, Sel], none: [Frozen] });
        const sub = world.subscribe({ changed: [Hp] });
        const crossed = q.countdown(Hp, 'value', 10);
        const expected = chosen.slice(1);
        expect(sorted(crossed)).toEqual(sorted(expected));
        for (const e of es) expect(world.get(e, Hp, 'value')).toBe(expected.includes(e) ? 0 : 10);
        expect(sorted(sub.drain().entities)).toEqual(sorted(expected));
    });

    test('a kernel on an added-filtered query touches only the added rows', async () => {
        const world = await newWorld();
        const old = world.spawnMany(10, Hp({ value: 1 }));
        const q = world.query({ added: [Hp] });
        q.offset(Hp, 'value', 1); // first run: every existing entity is added
        const fresh = world.spawnMany(3, Hp({ value: 1 }));
        q.offset(Hp, 'value', 10);
        for (const e of old) expect(world.get(e, Hp, 'value')).toBe(2);
        for (const e of fresh) expect(world.get(e, Hp, 'value')).toBe(11);
        q.offset(Hp, 'value', 100);
        for (const e of fresh) expect(world.get(e, Hp, 'value')).toBe(11);
    });
});

describe('closed queries, unknown components, refusals', () => {
    test('a closed query refuses every use with DESTROYED; close is idempotent', async () => {
        const world = await newWorld();
        world.spawnMany(3, Pos);
        const q = world.query({ all: [Pos] });
        const c = world.query({ changed: [Pos] });
        q.close();
        q.close();
        c.close();
        expect(q.closed && c.closed).toBe(true);
        expectError(() => q.count(), 'DESTROYED');
        expectError(() => q.entities(), 'DESTROYED');
        expectError(() => [...q], 'DESTROYED');
        expectError(() => q.chunks(), 'DESTROYED');
        expectError(() => q.addAll(Frozen), 'DESTROYED');
        expectError(() => q.removeAll(Frozen), 'DESTROYED');
        expectError(() => q.despawnAll(), 'DESTROYED');
        expectError(() => q.fill(Pos, 'x', 1), 'DESTROYED');
        expectError(() => c.entities(), 'DESTROYED');
        expectError(() => [...c], 'DESTROYED');
        expect(world.stats().entityCount).toBe(3);
        expect(world.query({ all: [Pos] }).count()).toBe(3);
    });

    test('a query closed while its loop is live: the loop still ends cleanly, deferred changes apply', async () => {
        const world = await newWorld();
        const es = world.spawnMany(3, Pos);
        const q = world.query({ all: [Pos] });
        let closedInside: unknown;
        try {
            for (const _chunk of q) {
                world.despawn(es[0]!);
                try {
                    q.close();
                } catch (error) {
                    closedInside = error;
                }
            }
        } catch (error) {
            closedInside ??= error;
        }
        // whether close was refused or not, the loop is over: the despawn applied, the world ticks
        expect(world.isAlive(es[0]!)).toBe(false);
        world.tick();
        expect(world.query({ all: [Pos] }).count()).toBe(2);
        if (closedInside !== undefined) expect((closedInside as { code: string }).code).toBe('QUERY_IN_USE');
    });

    test('refused query / subscribe / system descriptions leave the snapshot bytes as they were', async () => {
        const world = await newWorld();
        world.spawnMany(4, Pos, Hp);
        const before = world.snapshot();
        const A2 = component('QpFresh1', { a: 'f32' });
        const B2 = component('QpFresh2', { b: 'f32' });
        expectError(() => world.query({ all: [A2], writes: [B2] }), 'INVALID_ARGUMENT');
        expectError(() => world.query({ alll: [A2] } as any), 'INVALID_ARGUMENT');
        expectError(() => world.query({ all: [A2], removed: [B2] } as any), 'INVALID_ARGUMENT');
        expectError(() => world.subscribe({ all: [A2] }), 'INVALID_ARGUMENT');
        expectError(() => world.subscribe({ changed: [A2], writes: [A2] } as any), 'INVALID_ARGUMENT');
        expectError(() => world.system({ query: { all: [A2], writes: [B2] }, run() {} }), 'INVALID_ARGUMENT');
        expectError(() => world.system({ query: { all: [A2] }, run: 3 } as any), 'INVALID_ARGUMENT');
        expectError(() => world.query({ changed: [Sel], writes: [Sel] }), 'SPARSE_COMPONENT');
        expect(world.snapshot()).toEqual(before);
        // the refused names are not registered: a snapshot restored in another world has none of them
        expect(world.stats().componentCount).toBe(2);
    });

    test('count() and addAll on a consumer are refused and consume nothing', async () => {
        const world = await newWorld();
        const es = world.spawnMany(3, Hp);
        const c = world.query({ changed: [Hp] });
        world.set(es[1]!, Hp, { value: 1 });
        const before = world.snapshot();
        expectError(() => c.count(), 'INVALID_ARGUMENT');
        expectError(() => c.addAll(Frozen), 'INVALID_ARGUMENT');
        expectError(() => c.removeAll(Hp), 'INVALID_ARGUMENT');
        expectError(() => c.despawnAll(), 'INVALID_ARGUMENT');
        expect(world.snapshot()).toEqual(before);
        expect(run(c)).toEqual([es[1]]);
    });
});

describe('each change exactly once per consumer: a model (fast-check)', () => {
    type Op =
        | { k: 'spawn'; withHp: boolean; frozen: boolean }
        | { k: 'despawn'; i: number }
        | { k: 'set'; i: number; v: number }
        | { k: 'viewWrite'; i: number; mark: 'none' | 'row' | 'writes' }
        | { k: 'kernel'; frozenOnly: boolean }
        | { k: 'toggleFrozen'; i: number }
        | { k: 'toggleHp'; i: number }
        | { k: 'tick' }
        | { k: 'consume'; c: number; breakAfter: number }
        | { k: 'loopWithCalls'; i: number; j: number };

    const opArb: fc.Arbitrary<Op> = fc.oneof(
        fc.record({ k: fc.constant('spawn' as const), withHp: fc.boolean(), frozen: fc.boolean() }),
        fc.record({ k: fc.constant('despawn' as const), i: fc.nat() }),
        fc.record({ k: fc.constant('set' as const), i: fc.nat(), v: fc.integer({ min: -5, max: 5 }) }),
        fc.record({
            k: fc.constant('viewWrite' as const),
            i: fc.nat(),
            mark: fc.constantFrom('none' as const, 'row' as const, 'writes' as const),
        }),
        fc.record({ k: fc.constant('kernel' as const), frozenOnly: fc.boolean() }),
        fc.record({ k: fc.constant('toggleFrozen' as const), i: fc.nat() }),
        fc.record({ k: fc.constant('toggleHp' as const), i: fc.nat() }),
        fc.record({ k: fc.constant('tick' as const) }),
        fc.record({ k: fc.constant('consume' as const), c: fc.nat(4), breakAfter: fc.integer({ min: 0, max: 3 }) }),
        fc.record({ k: fc.constant('loopWithCalls' as const), i: fc.nat(), j: fc.nat() }),
    );

    test('changed / added / removed consumers (drains, chunk loops left early, a query) agree with a model', async () => {
        await fc.assert(
            fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 100 }), async (ops) => {
                const world = await newWorld({ chunkBytes: 1024, minFreeIndices: 1 });
                const live: Entity[] = [];
                const hasHp = new Set<Entity>();
                const frozen = new Set<Entity>();
                // consumers: 0 changed sub (drain), 1 changed sub (chunk loops), 2 changed query,
                // 3 added sub, 4 removed sub
                const subChanged = world.subscribe({ changed: [Hp] });
                const subChunks = world.subscribe({ changed: [Hp], all: [Pos] });
                const qChanged = world.query({ changed: [Hp] });
                const subAdded = world.subscribe({ added: [Hp] });
                const subRemoved = world.subscribe({ removed: [Hp] });
                const pending: Set<Entity>[] = [new Set(), new Set(), new Set(), new Set()];
                let removedLog: Entity[] = [];
                const changedOne = (e: Entity) => {
                    for (const c of [0, 1, 2]) pending[c]!.add(e);
                };
                const gone = (e: Entity) => {
                    for (const p of pending) p.delete(e);
                    removedLog.push(e);
                };
                const pick = (i: number) => live[i % live.length]!;
                for (const op of ops) {
                    if (op.k === 'spawn' || live.length === 0) {
                        const withHp = op.k === 'spawn' ? op.withHp : true;
                        const parts: any[] = [Pos];
                        if (withHp) parts.push(Hp({ value: 1 }));
                        if (op.k === 'spawn' && op.frozen) parts.push(Frozen);
                        const e = world.spawn(...parts);
                        live.push(e);
                        if (withHp) {
                            hasHp.add(e);
                            pending[3]!.add(e);
                        }
                        if (op.k === 'spawn' && op.frozen) frozen.add(e);
                        continue;
                    }
                    if (op.k === 'despawn') {
                        const e = pick(op.i);
                        world.despawn(e);
                        live.splice(live.indexOf(e), 1);
                        if (hasHp.delete(e)) gone(e);
                        frozen.delete(e);
                    } else if (op.k === 'set') {
                        const e = pick(op.i);
                        if (!hasHp.has(e)) continue;
                        world.set(e, Hp, { value: op.v });
                        changedOne(e);
                    } else if (op.k === 'viewWrite') {
                        const e = pick(op.i);
                        if (!hasHp.has(e)) continue;
                        const q = world.query({ all: [Hp], writes: op.mark === 'writes' ? [Hp] : [] });
                        for (const chunk of q) {
                            const row = chunk.entities.subarray(0, chunk.count).indexOf(e);
                            if (row < 0) continue;
                            chunk.column(Hp, 'value')[row] = 42;
                            if (op.mark === 'row') chunk.markChanged(Hp, row);
                            if (op.mark === 'writes') for (const x of chunk.entities.subarray(0, chunk.count)) changedOne(x);
                        }
                        q.close();
                        if (op.mark === 'row') changedOne(e);
                        expect(world.get(e, Hp, 'value')).toBe(42);
                    } else if (op.k === 'kernel') {
                        const q = world.query(op.frozenOnly ? { all: [Hp, Frozen] } : { all: [Hp] });
                        q.offset(Hp, 'value', 1);
                        q.close();
                        for (const e of hasHp) if (!op.frozenOnly || frozen.has(e)) changedOne(e);
                    } else if (op.k === 'toggleFrozen') {
                        const e = pick(op.i);
                        if (frozen.delete(e)) world.remove(e, Frozen);
                        else {
                            world.add(e, Frozen);
                            frozen.add(e);
                        }
                    } else if (op.k === 'toggleHp') {
                        const e = pick(op.i);
                        if (hasHp.delete(e)) {
                            world.remove(e, Hp);
                            gone(e);
                        } else {
                            world.add(e, Hp);
                            hasHp.add(e);
                            pending[3]!.add(e);
                        }
                    } else if (op.k === 'tick') {
                        world.tick();
                    } else if (op.k === 'loopWithCalls') {
                        // inside a live loop: set (at once), a despawn and an add (deferred, in order)
                        const a = pick(op.i);
                        const b = pick(op.j);
                        const outer = world.query({ all: [Pos] });
                        for (const _chunk of outer) {
                            if (hasHp.has(a)) world.set(a, Hp, { value: 9 });
                            if (!hasHp.has(b)) world.add(b, Hp({ value: 2 }));
                            else world.remove(b, Hp);
                            break;
                        }
                        outer.close();
                        if (hasHp.has(a)) changedOne(a);
                        if (hasHp.has(b)) {
                            hasHp.delete(b);
                            gone(b);
                        } else {
                            hasHp.add(b);
                            pending[3]!.add(b);
                        }
                    } else if (op.k === 'consume') {
                        if (op.c === 0) {
                            expect(sorted(subChanged.drain().entities)).toEqual(sorted(pending[0]!));
                            pending[0]!.clear();
                        } else if (op.c === 1) {
                            let chunks = 0;
                            const seen: Entity[] = [];
                            for (const chunk of subChunks) {
                                for (const row of chunk.rows) seen.push(chunk.entities[row]!);
                                if (++chunks > op.breakAfter) break;
                            }
                            const exp = pending[1]!;
                            for (const e of seen) expect(exp.has(e), `chunk loop reported ${e}`).toBe(true);
                            expect(new Set(seen).size).toBe(seen.length);
                            if (chunks <= op.breakAfter) expect(sorted(seen)).toEqual(sorted(exp)); // ran to the end
                            for (const e of seen) exp.delete(e);
                        } else if (op.c === 2) {
                            expect(run(qChanged)).toEqual(sorted(pending[2]!));
                            pending[2]!.clear();
                        } else if (op.c === 3) {
                            const got = subAdded.drain().entities;
                            expect(sorted(got)).toEqual(sorted(pending[3]!));
                            for (const e of got) expect(world.has(e, Hp)).toBe(true);
                            pending[3]!.clear();
                        } else {
                            expect(Array.from(subRemoved.drain().removed)).toEqual(removedLog);
                            removedLog = [];
                        }
                    }
                }
                // the end: every consumer reports exactly what is left, then nothing
                expect(sorted(subChanged.drain().entities)).toEqual(sorted(pending[0]!));
                expect(sorted(run(subChunks))).toEqual(sorted(pending[1]!));
                expect(run(qChanged)).toEqual(sorted(pending[2]!));
                expect(sorted(subAdded.drain().entities)).toEqual(sorted(pending[3]!));
                expect(Array.from(subRemoved.drain().removed)).toEqual(removedLog);
                expect(subChanged.drain().empty).toBe(true);
                expect(run(qChanged)).toEqual([]);
                world.destroy();
            }),
            { seed: 20240607, numRuns: 250 },
        );
    });
});

const Likes = relation('QpLikes', { amount: 'f32' });
const HpV = component('QpHpV', { value: 'i32' }, { changeDetection: 'value' });
const Mark = component('QpMark', { m: 'f32' }, { storage: 'sparse' });

describe('systems and ticks', () => {
    test('a system without a stage runs in "update"; stage() returns the same stage for a name; string stages', async () => {
        const world = await newWorld();
        world.spawn(Pos);
        const order: string[] = [];
        const first = world.stage('first');
        const s1 = world.system({ name: 'u1', query: { all: [Pos] }, run: () => void order.push('u1') });
        const s2 = world.system({ name: 'f1', stage: 'first', query: { all: [Pos] }, run: () => void order.push('f1') });
        const s3 = world.system({ name: 'l1', stage: 'last', query: { all: [Pos] }, run: () => void order.push('l1') });
        expect(s1.stage.name).toBe('update');
        expect(s2.stage).toBe(first);
        expect(world.stage('first')).toBe(first);
        expect(world.stage('last')).toBe(s3.stage);
        world.tick();
        expect(order).toEqual(['f1', 'u1', 'l1']);
    });

    test('a consumer system that writes what it watches visits its own writes next tick, and other consumers see them once', async () => {
        const world = await newWorld();
        const [a, b] = world.spawnMany(2, Hp);
        const visits: number[][] = [];
        world.system({
            query: { changed: [Hp], writes: [Hp] },
            run(q) {
                const v: number[] = [];
                for (const chunk of q) for (const row of chunk.rows) v.push(chunk.entities[row]!);
                visits.push(sorted(v));
            },
        });
        const sub = world.subscribe({ changed: [Hp] });
        world.set(a!, Hp, { value: 1 });
        world.tick();
        expect(visits).toEqual([[a]]);
        expect(Array.from(sub.drain().entities)).toEqual([a]);
        world.tick();
        expect(visits[1]).toEqual([a]); // its own write of last tick
        world.set(b!, Hp, { value: 1 });
        world.tick();
        expect(visits[2]).toEqual(sorted([a!, b!]));
        expect(sorted(sub.drain().entities)).toEqual(sorted([a!, b!]));
        expect(sub.drain().empty).toBe(true);
    });

    test('a system that despawns, then one that iterates the same component: the later one never sees the dead', async () => {
        const world = await newWorld({ chunkBytes: 1024 });
        const es = world.spawnMany(100, Hp({ value: 1 }), Pos);
        for (let i = 0; i < 100; i += 3) world.set(es[i]!, Hp, { value: 0 });
        world.system({
            name: 'reap',
            query: { all: [Hp] },
            run(q) {
                for (const chunk of q) {
                    const hp = chunk.column(Hp, 'value');
                    for (const row of chunk.rows) if (hp[row] === 0) world.despawn(chunk.entities[row]!);
                }
            },
        });
        const seen: number[] = [];
        world.system({
            name: 'look',
            query: { changed: [Hp] },
            run(q) {
                for (const chunk of q) for (const row of chunk.rows) seen.push(chunk.entities[row]!);
            },
        });
        world.tick();
        expect(seen).toEqual([]); // every changed one was despawned first
        expect(world.query({ all: [Hp] }).count()).toBe(66);
    });

    test('world.tick ends an abandoned iterator: its chunk expires, next() is done, a writes: chunk is marked', async () => {
        const world = await newWorld();
        const es = world.spawnMany(4, Pos);
        const sub = world.subscribe({ changed: [Pos] });
        const q = world.query({ all: [Pos], writes: [Pos] });
        const it = q.chunks();
        const first = it.next();
        expect(first.done).toBe(false);
        const chunk = first.value!;
        chunk.column(Pos, 'x')[0] = 5;
        world.despawn(es[3]!); // deferred
        expect(world.isAlive(es[3]!)).toBe(true);
        world.tick();
        expect(world.isAlive(es[3]!)).toBe(false);
        expectError(() => chunk.column(Pos, 'x'), 'CHUNK_EXPIRED');
        expect(it.next().done).toBe(true);
        expect(sorted(sub.drain().entities)).toEqual(sorted(es.slice(0, 3)));
        expect(world.get(es[0]!, Pos, 'x')).toBe(5);
    });
});

describe('filters on other kinds of terms', () => {
    test("changeDetection 'value': set to the same value is no change, a mark is one; each once", async () => {
        const world = await newWorld();
        const [a, b] = world.spawnMany(2, HpV({ value: 3 }));
        const q = world.query({ changed: [HpV] });
        world.set(a!, HpV, { value: 3 });
        world.set(b!, HpV, 'value', 4);
        expect(run(q)).toEqual([b]);
        world.markChanged(a!, HpV);
        world.markChanged(a!, HpV);
        expect(run(q)).toEqual([a]);
        const w = world.query({ all: [HpV], writes: [HpV] });
        for (const _ of w); // marks every row, even unwritten
        expect(run(q)).toEqual(sorted([a!, b!]));
        expect(run(q)).toEqual([]);
    });

    test('changed on a sparse component: set of one entity is reported once; filtered chunk rows are in range', async () => {
        const world = await newWorld({ chunkBytes: 1024 });
        const es = world.spawnMany(100, Pos);
        for (let i = 0; i < 100; i += 10) world.add(es[i]!, Mark({ m: i }));
        const q = world.query({ all: [Pos], changed: [Mark] });
        expect(run(q)).toEqual([]);
        world.set(es[30]!, Mark, { m: 1 });
        world.set(es[90]!, Mark, 'm', 2);
        for (const chunk of q) {
            expect(chunk.filtered).toBe(true);
            expect(chunk.rows.length).toBe(chunk.rowCount);
            for (const row of chunk.rows) expect(row).toBeLessThan(chunk.count);
        }
        world.set(es[30]!, Mark, { m: 3 });
        expect(run(q)).toEqual([es[30]]);
        expect(run(q)).toEqual([]);
    });

    test('changed on a relation: a pair added, written or removed reports its source once', async () => {
        const world = await newWorld();
        const [a, b, c] = world.spawnMany(3, Pos);
        const q = world.query({ changed: [Likes] });
        const sub = world.subscribe({ added: [Likes], removed: [Likes] });
        expect(run(q)).toEqual([]);
        world.addPair(a!, Likes, b!, { amount: 1 });
        world.addPair(a!, Likes, c!, { amount: 1 });
        expect(run(q)).toEqual([a]);
        world.setPair(a!, Likes, c!, 'amount', 2);
        expect(run(q)).toEqual([a]);
        let d = sub.drain();
        expect(Array.from(d.entities)).toEqual([a]);
        world.removePair(a!, Likes, b!);
        expect(run(q)).toEqual([a]); // a pair removed (a still has one)
        d = sub.drain();
        expect(Array.from(d.removed)).toEqual([]); // not the last pair
        world.removePair(a!, Likes, c!);
        d = sub.drain();
        expect(Array.from(d.removed)).toEqual([a]);
    });

    test('a pair term with a target: only that pair; children of a despawned parent leave the query', async () => {
        const world = await newWorld();
        const p = world.spawn(Pos);
        const q2 = world.spawn(Pos);
        const kids = world.spawnMany(5, Pos, ChildOf(p));
        const other = world.spawn(Pos, ChildOf(q2));
        const q = world.query({ all: [Pos, ChildOf(p)] });
        expect(sorted(q.entities())).toEqual(sorted(kids));
        expect(world.query({ all: [Pos], none: [ChildOf] }).count()).toBe(2);
        world.despawn(p); // cascade
        expect(q.count()).toBe(0);
        expect(world.isAlive(other)).toBe(true);
    });
});

describe('bulk changes and live iterations', () => {
    test('addAll during a live iteration of the same query is deferred; the loop sees every original entity once', async () => {
        const world = await newWorld({ chunkBytes: 1024 });
        const es = world.spawnMany(300, Pos);
        const q = world.query({ all: [Pos], none: [Frozen] });
        const seen: number[] = [];
        let first = true;
        for (const chunk of q) {
            if (first) {
                q.addAll(Frozen);
                first = false;
            }
            for (const row of chunk.rows) seen.push(chunk.entities[row]!);
        }
        expect(sorted(seen)).toEqual(sorted(es));
        expect(q.count()).toBe(0);
        expect(world.query({ all: [Frozen] }).count()).toBe(300);
    });

    test('removeAll of the none-term while iterating: deferred, then the query matches them again', async () => {
        const world = await newWorld();
        world.spawnMany(10, Pos, Frozen);
        const q = world.query({ all: [Pos], none: [Frozen] });
        const frozen = world.query({ all: [Frozen] });
        const it = world.query({ all: [Pos] });
        for (const _ of it) {
            frozen.removeAll(Frozen);
            expect(q.count()).toBe(0);
        }
        expect(q.count()).toBe(10);
    });

    test('addAll and removeAll report added and removed to subscriptions once each', async () => {
        const world = await newWorld({ chunkBytes: 1024 });
        const es = world.spawnMany(200, Pos);
        const sub = world.subscribe({ added: [Hp], removed: [Hp] });
        sub.drain();
        world.query({ all: [Pos] }).addAll(Hp);
        let d = sub.drain();
        expect(sorted(d.entities)).toEqual(sorted(es));
        for (const e of es) expect(world.get(e, Hp, 'value')).toBe(0);
        world.query({ all: [Hp] }).removeAll(Hp);
        d = sub.drain();
        expect(d.entities.length).toBe(0);
        expect(sorted(d.removed)).toEqual(sorted(es));
        expect(sub.drain().empty).toBe(true);
    });
});

describe('large worlds', () => {
    test('200k entities: count, entities and iteration agree; a changed filter reports the few written', async () => {
        const world = await newWorld();
        const es = world.spawnMany(200_000, Pos);
        const some = world.spawnMany(1234, Pos, Hp);
        const q = world.query({ all: [Pos] });
        const qh = world.query({ all: [Pos], none: [Hp] });
        expect(q.count()).toBe(201_234);
        expect(qh.count()).toBe(200_000);
        let n = 0;
        for (const chunk of q) n += chunk.count;
        expect(n).toBe(201_234);
        expect(q.entities().length).toBe(201_234);
        const sub = world.subscribe({ changed: [Pos] });
        world.set(es[199_999]!, Pos, { x: 1 });
        world.set(some[0]!, Pos, { x: 1 });
        expect(sorted(sub.drain().entities)).toEqual(sorted([es[199_999]!, some[0]!]));
        world.despawnMany(es.subarray(0, 100_000));
        expect(q.count()).toBe(101_234);
        expect(qh.count()).toBe(100_000);
        expect(world.stats().entityCount).toBe(101_234);
    });
});

describe('a kept plain query (replayed runs) always agrees with a fresh one (fast-check)', () => {
    test('spawns, despawns, tag moves, checkpoints, rewinds, reclaimArchetypes, restores: same entities and values', async () => {
        type Op = { k: number; i: number; v: number };
        await fc.assert(
            fc.asyncProperty(
                fc.array(fc.record({ k: fc.nat(9), i: fc.nat(), v: fc.integer({ min: 0, max: 100 }) }), { minLength: 1, maxLength: 60 }),
                async (ops: Op[]) => {
                    const world = await newWorld({ chunkBytes: 1024, checkpoints: 8 });
                    const kept = world.query({ all: [Pos] });
                    const keptW = world.query({ all: [Pos, Vel], writes: [Pos] });
                    const cps: number[] = [];
                    const observe = (q: Query) => {
                        const out: [number, number][] = [];
                        for (const chunk of q) {
                            const x = chunk.column(Pos, 'x');
                            for (const row of chunk.rows) out.push([chunk.entities[row]!, x[row]!]);
                        }
                        return out.sort((a, b) => a[0] - b[0]);
                    };
                    const alive = () => world.query({ all: [] }).entities();
                    for (const op of ops) {
                        const all = alive();
                        const e = all.length ? all[op.i % all.length]! : 0;
                        switch (op.k) {
                            case 0:
                                world.spawnMany(1 + (op.v % 40), Pos({ x: op.v }));
                                break;
                            case 1:
                                world.spawn(Pos({ x: op.v }), Vel);
                                break;
                            case 2:
                                if (e) world.despawn(e);
                                break;
                            case 3:
                                if (e) {
                                    if (world.has(e, Frozen)) world.remove(e, Frozen);
                                    else world.add(e, Frozen);
                                }
                                break;
                            case 4:
                                cps.push(world.checkpoint());
                                break;
                            case 5: {
                                const range = world.checkpoints;
                                if (range) world.rewind(range.oldest + (op.i % (range.newest - range.oldest + 1)));
                                break;
                            }
                            case 6:
                                world.reclaimArchetypes();
                                break;
                            case 7:
                                if (e && world.has(e, Pos)) world.set(e, Pos, { x: op.v });
                                break;
                            case 8:
                                for (const _ of keptW); // a writes: run
                                break;
                            default:
                                if (e) {
                                    if (world.has(e, Pos)) world.remove(e, Pos);
                                    else world.add(e, Pos({ x: op.v }));
                                }
                        }
                        const fresh = world.query({ all: [Pos] });
                        expect(observe(kept)).toEqual(observe(fresh));
                        expect(kept.count()).toBe(fresh.count());
                        fresh.close();
                        const freshW = world.query({ all: [Pos, Vel] });
                        expect(observe(keptW)).toEqual(observe(freshW));
                        freshW.close();
                    }
                    world.destroy();
                },
            ),
            { seed: 7, numRuns: 120 },
        );
    });
});

describe('sparse terms filter chunks: loops, writes and marks follow the rows', () => {
    test('writes: on a query with a sparse all term marks only the rows that have it', async () => {
        const world = await newWorld({ chunkBytes: 1024 });
        const es = world.spawnMany(200, Hp);
        const chosen = es.filter((_, i) => i % 9 === 4);
        for (const e of chosen) world.add(e, Sel);
        const sub = world.subscribe({ changed: [Hp] });
        const q = world.query({ all: [Hp, Sel], writes: [Hp] });
        const seen: number[] = [];
        for (const chunk of q) {
            expect(chunk.filtered).toBe(true);
            const hp = chunk.column(Hp, 'value');
            for (const row of chunk.rows) {
                hp[row] = 1;
                seen.push(chunk.entities[row]!);
            }
        }
        expect(sorted(seen)).toEqual(sorted(chosen));
        expect(sorted(sub.drain().entities)).toEqual(sorted(chosen));
    });

    test('markChanged(C) without a row on a sparse-filtered chunk marks the visited rows only', async () => {
        const world = await newWorld({ chunkBytes: 1024 });
        const es = world.spawnMany(120, Hp);
        const chosen = es.filter((_, i) => i % 5 === 0);
        for (const e of chosen) world.add(e, Sel);
        const sub = world.subscribe({ changed: [Hp] });
        const q = world.query({ all: [Hp], none: [Sel] });
        for (const chunk of q) chunk.markChanged(Hp);
        const rest = es.filter((e) => !chosen.includes(e));
        expect(sorted(sub.drain().entities)).toEqual(sorted(rest));
    });

    test('changed filter with a sparse all / none / any term: dirty rows that pass, each once', async () => {
        const world = await newWorld({ chunkBytes: 1024 });
        const es = world.spawnMany(150, Hp);
        const sel = es.filter((_, i) => i % 4 === 0);
        for (const e of sel) world.add(e, Sel);
        const qAll = world.query({ all: [Sel], changed: [Hp] });
        const qNone = world.query({ none: [Sel], changed: [Hp] });
        const qAny = world.query({ any: [Sel, Frozen], changed: [Hp] });
        const subAll = world.subscribe({ all: [Sel], changed: [Hp] });
        const written = es.filter((_, i) => i % 3 === 0);
        for (const e of written) world.set(e, Hp, { value: 1 });
        const inSel = written.filter((e) => sel.includes(e));
        const outSel = written.filter((e) => !sel.includes(e));
        expect(run(qAll)).toEqual(sorted(inSel));
        expect(run(qNone)).toEqual(sorted(outSel));
        expect(run(qAny)).toEqual(sorted(inSel));
        expect(run(subAll)).toEqual(sorted(inSel));
        expect(run(qAll)).toEqual([]);
        expect(run(subAll)).toEqual([]);
    });
});

describe('consumers across a rewind', () => {
    test('a rewind is seen once: values put back are changed, spawned-since removed, despawned-since added', async () => {
        const world = await newWorld({ minFreeIndices: 1 });
        const [a, b, c] = world.spawnMany(3, Hp({ value: 1 }));
        const added = world.subscribe({ added: [Hp], removed: [Hp] });
        const changed = world.subscribe({ changed: [Hp] });
        const ch = world.query({ changed: [Hp] });
        added.drain();
        const cp = world.checkpoint();
        world.set(a!, Hp, { value: 5 });
        world.despawn(b!);
        const d = world.spawn(Hp({ value: 7 }));
        let got = added.drain();
        expect(Array.from(got.entities)).toEqual([d]);
        expect(Array.from(got.removed)).toEqual([b]);
        expect(Array.from(changed.drain().entities)).toEqual([a]);
        expect(run(ch)).toEqual([a]);
        world.rewind(cp);
        expect(world.isAlive(b!)).toBe(true);
        expect(world.isAlive(d)).toBe(false);
        got = added.drain();
        // b is back; c may count as added too (README: "an entity put back in another place ... counts as added")
        expect(Array.from(got.entities)).toContain(b);
        expect(Array.from(got.entities)).not.toContain(d);
        expect(Array.from(got.entities)).not.toContain(a);
        expect(Array.from(got.removed)).toEqual([d]);
        expect(Array.from(changed.drain().entities)).toContain(a);
        expect(run(ch)).toContain(a);
        expect(run(ch)).toEqual([]);
        expect(added.drain().empty).toBe(true);
        expect(changed.drain().empty).toBe(true);
        expect(world.get(c!, Hp, 'value')).toBe(1);
        expect(world.get(a!, Hp, 'value')).toBe(1);
    });
});

describe('tick() and destroy() inside loops', () => {
    test('tick() inside a plain loop: deferred changes apply before the systems, the loop ends at its next step', async () => {
        const world = await newWorld({ chunkBytes: 1024 });
        const es = world.spawnMany(300, Pos);
        const seenBySystem: number[] = [];
        world.system({ query: { all: [Pos] }, run: (q) => void seenBySystem.push(q.count()) });
        const q = world.query({ all: [Pos] });
        let steps = 0;
        let kept: any;
        for (const chunk of q) {
            steps++;
            kept = chunk;
            world.despawn(es[0]!);
            world.tick();
        }
        expect(steps).toBe(1);
        expect(seenBySystem).toEqual([299]);
        expect(world.frame).toBe(1);
        expectError(() => kept.column(Pos, 'x'), 'CHUNK_EXPIRED');
        expect(q.count()).toBe(299);
    });

    test('tick() inside a filtered loop: the chunks it did not reach are reported by the next run', async () => {
        const world = await newWorld({ chunkBytes: 1024 });
        const es = world.spawnMany(300, Hp);
        const q = world.query({ changed: [Hp] });
        for (const e of es) world.set(e, Hp, { value: 2 });
        const first: number[] = [];
        for (const chunk of q) {
            for (const row of chunk.rows) first.push(chunk.entities[row]!);
            world.tick();
        }
        expect(first.length).toBeGreaterThan(0);
        expect(first.length).toBeLessThan(300);
        const rest = run(q);
        expect(sorted([...first, ...rest])).toEqual(sorted(es));
        expect(run(q)).toEqual([]);
    });

    test('destroy() inside a loop succeeds; the iterator then throws DESTROYED', async () => {
        const world = await newWorld({ chunkBytes: 1024 });
        world.spawnMany(300, Pos);
        const q = world.query({ all: [Pos] });
        const it = q.chunks();
        const c = it.next().value!;
        world.spawn(Pos);
        world.destroy();
        expectError(() => it.next(), 'DESTROYED');
        expectError(() => c.column(Pos, 'x'), 'DESTROYED');
        expectError(() => q.count(), 'DESTROYED');
        expect(q.closed).toBe(true);
    });
});

describe('subscription terms', () => {
    test('all / none / any narrow added and changed, not removed (.d.ts: "narrow the added and changed reports")', async () => {
        const world = await newWorld();
        const a = world.spawn(Hp, Frozen);
        const b = world.spawn(Hp);
        const sub = world.subscribe({ all: [Frozen], changed: [Hp], removed: [Hp] });
        world.set(a, Hp, { value: 1 });
        world.set(b, Hp, { value: 1 });
        let d = sub.drain();
        expect(Array.from(d.entities)).toEqual([a]);
        world.despawn(b);
        world.remove(a, Hp);
        d = sub.drain();
        expect(sorted(d.removed)).toEqual(sorted([a, b]));
    });

    test('drain and entities() while the same consumer loop is live: QUERY_IN_USE, nothing consumed', async () => {
        const world = await newWorld();
        const es = world.spawnMany(3, Hp);
        const q = world.query({ changed: [Hp] });
        world.set(es[0]!, Hp, { value: 1 });
        const it = q.chunks();
        const r = it.next();
        expect(r.done).toBe(false);
        expectError(() => q.entities(), 'QUERY_IN_USE');
        expectError(() => [...q], 'QUERY_IN_USE');
        it.return!();
        expect(run(q)).toEqual([]); // the chunk handed out counts as seen
        world.set(es[1]!, Hp, { value: 1 });
        expect(Array.from(q.entities())).toEqual([es[1]]);
    });
});

describe('relations as filter terms', () => {
    test('added on a relation is the first pair; removed the last, a despawned target included', async () => {
        const world = await newWorld();
        const [a, b, c] = world.spawnMany(3, Pos);
        const q = world.query({ added: [Likes] });
        const sub = world.subscribe({ removed: [Likes] });
        expect(run(q)).toEqual([]);
        world.addPair(a!, Likes, b!);
        world.addPair(a!, Likes, c!);
        expect(run(q)).toEqual([a]);
        world.addPair(c!, Likes, b!);
        expect(run(q)).toEqual([c]);
        world.despawn(b!); // a keeps its pair to c; c loses its only pair
        expect(Array.from(sub.drain().removed)).toEqual([c]);
        world.removePair(a!, Likes, c!);
        expect(Array.from(sub.drain().removed)).toEqual([a]);
        world.addPair(a!, Likes, c!);
        expect(run(q)).toEqual([a]);
    });
});

describe('kernels and f32 rounding', () => {
    test('countdown on f32 takes the amount rounded to f32: 0.1 counted down by 0.1 crosses', async () => {
        const F = component('QpF32', { t: 'f32' });
        const world = await newWorld();
        const e = world.spawn(F({ t: 0.1 }));
        const q = world.query({ all: [F] });
        expect(Array.from(q.countdown(F, 't', 0.1))).toEqual([e]);
        expect(world.get(e, F, 't')).toBe(0);
    });

    test('a float kernel overflowing f32 gives Infinity, not a refusal; a later countdown from Infinity never crosses', async () => {
        const F = component('QpF32b', { t: 'f32' });
        const world = await newWorld();
        const e = world.spawn(F({ t: 3e38 }));
        const q = world.query({ all: [F] });
        q.scale(F, 't', 10);
        expect(world.get(e, F, 't')).toBe(Infinity);
        expect(Array.from(q.countdown(F, 't', 1))).toEqual([]);
        q.fill(F, 't', 1);
        expect(Array.from(q.countdown(F, 't', 1))).toEqual([e]);
    });
});

describe('refused calls with a component the world never used leave the snapshot as it was', () => {
    const fresh = () => component(`QpBrand${Math.random()}`, { z: 'f32' });

    test('consumer.addAll and world.markChanged of an unused component: refused, nothing registered or consumed', async () => {
        const world = await newWorld();
        const es = world.spawnMany(5, Pos, Hp);
        const consumer = world.query({ changed: [Hp] });
        world.set(es[2]!, Hp, { value: 3 });
        const before = world.snapshot();
        const count = world.stats().componentCount;
        expectError(() => consumer.addAll(fresh()), 'INVALID_ARGUMENT');
        expectError(() => world.markChanged(es[0]!, fresh()), 'MISSING_COMPONENT');
        expect(world.stats().componentCount).toBe(count);
        expect(world.snapshot()).toEqual(before);
        expect(run(consumer)).toEqual([es[2]]);
    });

    // Until 2026-11-28 (fixed): a kernel refused with MISSING_COMPONENT for a component the world never used leaves it registered (snapshot bytes change)
    test('a kernel naming a component the world never used: MISSING_COMPONENT and the same snapshot bytes', async () => {
        const world = await newWorld();
        world.spawnMany(5, Pos);
        const plain = world.query({ all: [Pos] });
        const before = world.snapshot();
        const count = world.stats().componentCount;
        expectError(() => plain.fill(fresh(), 'z', 1), 'MISSING_COMPONENT');
        expectError(() => plain.offset(fresh(), 'z', 1), 'MISSING_COMPONENT');
        expectError(() => plain.countdown(fresh(), 'z', 1), 'MISSING_COMPONENT');
        expectError(() => plain.addScaled(Pos, 'x', fresh(), 'z', 1), 'MISSING_COMPONENT');
        expect(world.stats().componentCount).toBe(count);
        expect(world.snapshot()).toEqual(before);
    });

    // Until 2026-11-28 (fixed): chunk.markChanged(C) refused with MISSING_COMPONENT for a never-used C leaves C registered (snapshot bytes change)
    test('chunk.markChanged of a component the world never used: MISSING_COMPONENT and the same snapshot bytes', async () => {
        const world = await newWorld();
        world.spawnMany(5, Pos);
        const plain = world.query({ all: [Pos] });
        const before = world.snapshot();
        const count = world.stats().componentCount;
        for (const chunk of plain) expectError(() => chunk.markChanged(fresh(), 0), 'MISSING_COMPONENT');
        expect(world.stats().componentCount).toBe(count);
        expect(world.snapshot()).toEqual(before);
    });
});

// Until 2026-11-28 (fixed): chunk.column(C, f) refused with MISSING_COMPONENT for a never-used C leaves C registered (snapshot bytes change)
test('chunk.column of a component the world never used: MISSING_COMPONENT and the same snapshot bytes', async () => {
    const world = await newWorld();
    world.spawnMany(5, Pos);
    const plain = world.query({ all: [Pos] });
    const before = world.snapshot();
    const count = world.stats().componentCount;
    const Brand = component('QpBrandColumn', { z: 'f32' });
    for (const chunk of plain) expectError(() => chunk.column(Brand, 'z'), 'MISSING_COMPONENT');
    expect(world.stats().componentCount).toBe(count);
    expect(world.snapshot()).toEqual(before);
});

describe('matching against a brute-force model (fast-check)', () => {
    test('count(), entities() and iteration agree with world.has for random all / none / any over table, sparse and pair terms', async () => {
        const world = await newWorld({ chunkBytes: 1024 });
        const parents = world.spawnMany(3, Pos);
        const termPool = [Pos, Vel, Frozen, Sel, Mark, ChildOf, ChildOf(parents[0]!), Likes, Likes(parents[1]!)] as const;
        const hasTerm = (e: Entity, t: (typeof termPool)[number]): boolean => {
            if (t === ChildOf) return world.parentOf(e) !== undefined;
            if (t === Likes) return world.targets(e, Likes).length > 0;
            if (t === termPool[6]) return world.parentOf(e) === parents[0];
            if (t === termPool[8]) return world.hasPair(e, Likes, parents[1]!);
            return world.has(e, t as any);
        };
        const entArb = fc.record({ bits: fc.nat(255), parent: fc.nat(3), likes: fc.nat(3) });
        const idxs = fc.uniqueArray(fc.nat(termPool.length - 1), { maxLength: 3 });
        await fc.assert(
            fc.asyncProperty(fc.array(entArb, { maxLength: 40 }), idxs, idxs, idxs, async (ents, all, none, any) => {
                const made: Entity[] = [];
                for (const { bits, parent, likes } of ents) {
                    const parts: any[] = [];
                    if (bits & 1) parts.push(Pos);
                    if (bits & 2) parts.push(Vel);
                    if (bits & 4) parts.push(Frozen);
                    if (bits & 8) parts.push(Sel);
                    if (bits & 16) parts.push(Mark({ m: 1 }));
                    if (parent < 3) parts.push(ChildOf(parents[parent]!));
                    if (likes < 3) parts.push(Likes(parents[likes]!));
                    made.push(world.spawn(...parts));
                }
                const desc = { all: all.map((i) => termPool[i]!), none: none.map((i) => termPool[i]!), any: any.map((i) => termPool[i]!) };
                const q = world.query(desc);
                const everyone = [...parents, ...made];
                const expected = everyone.filter(
                    (e) =>
                        desc.all.every((t) => hasTerm(e, t)) &&
                        !desc.none.some((t) => hasTerm(e, t)) &&
                        (desc.any.length === 0 || desc.any.some((t) => hasTerm(e, t))),
                );
                expect(q.count()).toBe(expected.length);
                expect(sorted(q.entities())).toEqual(sorted(expected));
                expect(run(q)).toEqual(sorted(expected));
                q.close();
                world.despawnMany(made);
            }),
            { seed: 99, numRuns: 200 },
        );
    });
});

describe('bulk calls on queries with sparse and pair terms', () => {
    test('addAll / removeAll / despawnAll touch exactly the matching entities', async () => {
        const world = await newWorld({ chunkBytes: 1024 });
        const p = world.spawn(Pos);
        const es = world.spawnMany(120, Pos);
        const sel = es.filter((_, i) => i % 3 === 0);
        const kids = es.filter((_, i) => i % 5 === 0);
        for (const e of sel) world.add(e, Sel);
        for (const e of kids) world.setParent(e, p);
        const sub = world.subscribe({ added: [Frozen], removed: [Frozen] });
        const subM = world.subscribe({ added: [Mark] });
        sub.drain();
        subM.drain();
        world.query({ all: [Pos, Sel] }).addAll(Frozen);
        world.query({ all: [Pos, ChildOf(p)] }).addAll(Mark);
        for (const e of es) {
            expect(world.has(e, Frozen)).toBe(sel.includes(e));
            expect(world.has(e, Mark)).toBe(kids.includes(e));
            if (kids.includes(e)) expect(world.get(e, Mark, 'm')).toBe(0);
        }
        expect(world.has(p, Mark)).toBe(false);
        expect(sorted(sub.drain().entities)).toEqual(sorted(sel));
        expect(sorted(subM.drain().entities)).toEqual(sorted(kids));
        world.query({ all: [Frozen], none: [ChildOf] }).removeAll(Frozen);
        const stillFrozen = sel.filter((e) => kids.includes(e));
        for (const e of es) expect(world.has(e, Frozen)).toBe(stillFrozen.includes(e));
        expect(sorted(sub.drain().removed)).toEqual(sorted(sel.filter((e) => !kids.includes(e))));
        world.query({ all: [ChildOf(p)] }).despawnAll();
        expect(world.isAlive(p)).toBe(true);
        for (const e of es) expect(world.isAlive(e)).toBe(!kids.includes(e));
        expect(world.childrenOf(p)).toEqual([]);
        expect(sorted(sub.drain().removed)).toEqual(sorted(stillFrozen));
    });
});

describe('writes made during a run', () => {
    test("a consumer's own write is seen by its next run; another consumer drained inside the loop sees it once", async () => {
        const world = await newWorld();
        const [x, y] = world.spawnMany(2, Hp);
        const a = world.query({ changed: [Hp] });
        const b = world.subscribe({ changed: [Hp] });
        world.set(y!, Hp, { value: 1 });
        let inside: number[] = [];
        const visited: number[] = [];
        for (const chunk of a) {
            for (const row of chunk.rows) visited.push(chunk.entities[row]!);
            world.set(x!, Hp, { value: 2 });
            inside = Array.from(b.drain().entities);
        }
        expect(visited).toEqual([y]);
        expect(sorted(inside)).toEqual(sorted([x!, y!]));
        expect(b.drain().empty).toBe(true);
        expect(run(a)).toEqual([x]);
        expect(run(a)).toEqual([]);
    });
});
