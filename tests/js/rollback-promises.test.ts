// Rollback held to its promises (README "Rollback: checkpoints and rewinds", "Memory and
// lifetime rules", "Errors"; dist/world-state.d.ts), written from those alone.
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';

import { ChildOf, component, createWorld, relation, tag, TesseraError, type Entity, type World } from '../../dist/index.js';
import { expectError, sorted, worldPerTest } from './support.js';

const newWorld = worldPerTest();

const Pos = component('HrPos', { x: 'f32', y: 'f64' });
const Arr = component('HrArr', { v: ['i16', 3], w: 'u8' });
const SpArr = component('HrSpArr', { q: ['f32', 2] }, { storage: 'sparse' });
const Hp = component('HrHp', { v: 'i32' });
const Tg = tag('HrTg');
const Owns = relation('HrOwns', { k: ['u16', 2] }, { cascade: true });
const Holds = relation('HrHolds', { n: 'i8' }, { exclusive: true });
const Above = relation('HrAbove', undefined, { acyclic: true });

const same = (a: Uint8Array, b: Uint8Array): boolean => a.length === b.length && a.every((v, i) => v === b[i]);
const live = (world: World): Entity[] => sorted(world.query({}).entities());

/** Expects fn to throw a TesseraError with one of the codes, and the world's bytes not to change. */
function refusedUnchanged(world: World, fn: () => unknown, codes: string[]): TesseraError {
    const before = world.snapshot();
    const ranges = world.checkpoints;
    let thrown: unknown;
    try {
        fn();
    } catch (error) {
        thrown = error;
    }
    expect(thrown, 'expected a throw').toBeInstanceOf(TesseraError);
    expect(codes).toContain((thrown as TesseraError).code);
    expect(same(world.snapshot(), before), 'bytes unchanged').toBe(true);
    expect(world.checkpoints).toEqual(ranges);
    return thrown as TesseraError;
}

describe('values of every shape come back exactly', () => {
    test('array fields (table and sparse) and array pair data are rewound', async () => {
        const world = await newWorld();
        const a = world.spawn(Arr({ v: [1, -2, 3], w: 200 }), SpArr({ q: [1.5, -2.5] }));
        const b = world.spawn(Arr({ v: [4, 5, 6], w: 1 }));
        world.addPair(a, Owns, b, { k: [7, 65535] });
        const k = world.checkpoint();
        const bytes = world.snapshot();
        world.set(a, Arr, 'v', [9, 9, 9]);
        world.set(a, SpArr, { q: [0, 0] });
        world.setPair(a, Owns, b, 'k', [1, 1]);
        world.remove(b, Arr);
        world.add(b, SpArr({ q: [3, 4] }));
        for (const chunk of world.query({ all: [Arr], writes: [Arr] })) {
            const v = chunk.column(Arr, 'v');
            for (let i = 0; i < v.length; i++) v[i] = -7;
        }
        world.rewind(k);
        expect(same(world.snapshot(), bytes)).toBe(true);
        expect(world.get(a, Arr)).toEqual({ v: [1, -2, 3], w: 200 });
        expect(world.get(b, Arr)).toEqual({ v: [4, 5, 6], w: 1 });
        expect(world.get(a, SpArr)).toEqual({ q: [1.5, -2.5] });
        expect(world.has(b, SpArr)).toBe(false);
        expect(world.getPair(a, Owns, b)).toEqual({ k: [7, 65535] });
        world.validate();
    });

    test('NaN payloads and -0 written through a marked column are restored bit for bit', async () => {
        const world = await newWorld();
        const es = world.spawnMany(5, Pos({ x: -0, y: NaN }));
        const k = world.checkpoint();
        const bytes = world.snapshot();
        for (const chunk of world.query({ all: [Pos], writes: [Pos] })) {
            const y = chunk.column(Pos, 'y');
            const bits = new Uint32Array(y.buffer, y.byteOffset, y.length * 2);
            for (let i = 0; i < y.length; i++) bits[2 * i] = 0xdeadbeef; // another NaN, same value to JS
            const x = chunk.column(Pos, 'x');
            for (let i = 0; i < x.length; i++) x[i] = 0;
        }
        expect(same(world.snapshot(), bytes)).toBe(false);
        world.rewind(k);
        expect(same(world.snapshot(), bytes)).toBe(true);
        expect(Object.is(world.get(es[0]!, Pos, 'x'), -0)).toBe(true);
    });
});

describe('handles, generations and the free queue', () => {
    test('a slot recycled past its 9-bit generation after the checkpoint: handles after the rewind are those of a straight run', async () => {
        const straight = await newWorld({ minFreeIndices: 1 });
        const world = await newWorld({ minFreeIndices: 1 });
        for (const w of [world, straight]) {
            const es = w.spawnMany(3, Hp({ v: 1 }));
            w.despawn(es[1]!);
            w.despawn(es[2]!);
        }
        const k = world.checkpoint();
        const bytes = world.snapshot();
        const churned: Entity[] = [];
        for (let i = 0; i < 1200; i++) {
            const e = world.spawn(Hp({ v: i }));
            churned.push(e);
            world.despawn(e);
        }
        world.rewind(k);
        expect(same(world.snapshot(), bytes)).toBe(true);
        for (const e of churned.slice(-5)) expect(world.isAlive(e)).toBe(false);
        const next = [0, 1, 2, 3].map(() => world.spawn(Hp));
        const expected = [0, 1, 2, 3].map(() => straight.spawn(Hp));
        expect(next).toEqual(expected);
        expect(same(world.snapshot(), straight.snapshot())).toBe(true);
    });

    test('indices first used after the checkpoint (past several 1,024-index blocks) are gone after the rewind', async () => {
        const world = await newWorld();
        const straight = await newWorld();
        for (const w of [world, straight]) {
            const es = w.spawnMany(10, Hp({ v: 2 }));
            w.despawn(es[4]!);
        }
        const k = world.checkpoint();
        const bytes = world.snapshot();
        const hash = world.hash();
        const many = world.spawnMany(5000, Hp({ v: 3 }), Tg);
        world.despawnMany(many.subarray(0, 2500));
        world.spawnMany(100, Pos);
        world.rewind(k);
        expect(same(world.snapshot(), bytes)).toBe(true);
        expect(world.hash()).toBe(hash);
        expect(world.isAlive(many[4999]!)).toBe(false);
        expectError(() => world.get(many[4999]!, Hp), 'STALE_ENTITY');
        expect(world.stats().entityCount).toBe(9);
        expect(Array.from(world.spawnMany(6000, Hp))).toEqual(Array.from(straight.spawnMany(6000, Hp)));
        expect(same(world.snapshot(), straight.snapshot())).toBe(true);
        world.validate();
    });

    test('a checkpoint of an empty world: the rewind empties it, and the next spawns are a fresh world’s', async () => {
        const world = await newWorld();
        const fresh = await newWorld();
        const k = world.checkpoint();
        const bytes = world.snapshot();
        const a = world.spawn(Hp, Pos);
        world.spawn(Arr, ChildOf(a));
        world.despawn(world.spawn(Tg));
        world.rewind(k);
        expect(same(world.snapshot(), bytes)).toBe(true);
        expect(same(world.snapshot(), fresh.snapshot())).toBe(true);
        expect(world.stats().entityCount).toBe(0);
        expect(world.isAlive(a)).toBe(false);
        expect([world.spawn(Hp), world.spawn(Pos)]).toEqual([fresh.spawn(Hp), fresh.spawn(Pos)]);
    });
});

describe('relations', () => {
    test('a custom cascade relation: despawning the target takes its sources recursively; the rewind brings all back with data', async () => {
        const world = await newWorld();
        const king = world.spawn(Hp({ v: 1 }));
        const lords = [0, 1].map((i) => world.spawn(Hp({ v: 10 + i })));
        for (const l of lords) world.addPair(king, Owns, l, { k: [l & 0xffff, 1] });
        // Owns cascades: despawning a target despawns its sources. Make chains target <- source.
        const vassal = world.spawn(Hp({ v: 100 }));
        world.addPair(vassal, Owns, lords[0]!, { k: [5, 6] });
        const serf = world.spawn(Hp({ v: 1000 }), SpArr({ q: [1, 2] }));
        world.addPair(serf, Owns, vassal, { k: [8, 9] });
        const k = world.checkpoint();
        const bytes = world.snapshot();
        world.despawn(lords[0]!); // takes king (source of a pair to it), vassal, and serf
        expect([world.isAlive(king), world.isAlive(vassal), world.isAlive(serf), world.isAlive(lords[1]!)]).toEqual([
            false,
            false,
            false,
            true,
        ]);
        world.rewind(k);
        expect(same(world.snapshot(), bytes)).toBe(true);
        expect(world.targets(king, Owns)).toEqual(lords);
        expect(world.getPair(serf, Owns, vassal)).toEqual({ k: [8, 9] });
        expect(world.sources(Owns, lords[0]!)).toEqual([king, vassal]);
        expect(world.get(serf, SpArr)).toEqual({ q: [1, 2] });
        world.validate();
    });

    test('an exclusive replacement and an acyclic chain are rewound; the rewound acyclic relation still refuses cycles', async () => {
        const world = await newWorld();
        const [a, b, c] = [world.spawn(Hp), world.spawn(Hp), world.spawn(Hp)];
        world.addPair(a, Holds, b, { n: -5 });
        world.addPair(a, Above, b);
        world.addPair(b, Above, c);
        const k = world.checkpoint();
        const bytes = world.snapshot();
        world.addPair(a, Holds, c, { n: 7 }); // replaces a->b
        expect(world.targets(a, Holds)).toEqual([c]);
        world.removePair(b, Above, c);
        world.addPair(c, Above, a); // allowed now: no cycle
        world.rewind(k);
        expect(same(world.snapshot(), bytes)).toBe(true);
        expect(world.targets(a, Holds)).toEqual([b]);
        expect(world.getPair(a, Holds, b)).toEqual({ n: -5 });
        expect(world.hasPair(c, Above, a)).toBe(false);
        refusedUnchanged(world, () => world.addPair(c, Above, a), ['CYCLE']);
        world.validate();
    });
});

describe('the ring and the world', () => {
    test('two worlds with rollback in one module are independent', async () => {
        const a = await newWorld({ checkpoints: 4 });
        const b = await newWorld({ checkpoints: 4 });
        const ea = a.spawnMany(50, Hp({ v: 1 }), Pos);
        const eb = b.spawnMany(50, Hp({ v: 2 }), Arr);
        const ka = a.checkpoint();
        const kb1 = b.checkpoint();
        const bytesA = a.snapshot();
        b.set(eb[0]!, Hp, 'v', 20);
        const kb2 = b.checkpoint();
        const bytesB2 = b.snapshot();
        a.despawnMany(ea.subarray(0, 25));
        b.despawnMany(eb.subarray(10, 40));
        a.spawnMany(30, Arr);
        b.spawnMany(30, Pos);
        a.rewind(ka);
        expect(same(a.snapshot(), bytesA)).toBe(true);
        expect(b.stats().entityCount).toBe(50);
        expect(b.checkpoints).toEqual({ oldest: kb1, newest: kb2 });
        b.rewind(kb2);
        expect(same(b.snapshot(), bytesB2)).toBe(true);
        expect(same(a.snapshot(), bytesA)).toBe(true);
        expect(a.checkpoints).toEqual({ oldest: ka, newest: ka });
    });

    test('on a destroyed world, checkpoint, rewind, checkpoints and stopRollback throw DESTROYED', async () => {
        const world = await createWorld();
        world.spawn(Hp);
        const k = world.checkpoint();
        world.destroy();
        expectError(() => world.checkpoint(), 'DESTROYED');
        expectError(() => world.rewind(k), 'DESTROYED');
        expectError(() => world.checkpoints, 'DESTROYED');
        expectError(() => world.stopRollback(), 'DESTROYED');
    });

    test('stopRollback empties the stats and keeps the changes other consumers track', async () => {
        const world = await newWorld();
        const es = world.spawnMany(20, Hp({ v: 1 }), Pos);
        const sub = world.subscribe({ changed: [Hp] });
        sub.drain();
        world.checkpoint();
        world.set(es[0]!, Hp, 'v', 5);
        world.checkpoint();
        expect(world.stats().checkpointCount).toBe(2);
        expect(world.stats().shadowBytes).toBeGreaterThan(0);
        world.stopRollback();
        expect(world.stats().checkpointCount).toBe(0);
        expect(world.stats().checkpointBytes).toBe(0);
        expect(world.stats().shadowBytes).toBe(0);
        world.set(es[1]!, Hp, 'v', 6);
        expect(sorted(sub.drain().entities)).toEqual(sorted([es[0]!, es[1]!]));
        // A new ring after the stop starts from the world as it is now.
        const k = world.checkpoint();
        expect(k).toBe(1);
        const bytes = world.snapshot();
        world.set(es[2]!, Pos, { x: 9 });
        world.despawn(es[3]!);
        world.rewind(k);
        expect(same(world.snapshot(), bytes)).toBe(true);
    });

    test('checkpoints of a world restored from a snapshot', async () => {
        const src = await newWorld({ minFreeIndices: 3 });
        const es = src.spawnMany(30, Hp({ v: 4 }), Arr({ w: 3 }));
        src.despawnMany(es.subarray(5, 15));
        src.addPair(es[0]!, Owns, es[1]!, { k: [1, 2] });
        const world = await newWorld({ minFreeIndices: 3, snapshot: src.snapshot() });
        const straight = await newWorld({ minFreeIndices: 3, snapshot: src.snapshot() });
        const k = world.checkpoint();
        const bytes = world.snapshot();
        world.despawn(es[1]!); // cascades to es[0]
        world.spawnMany(20, Pos);
        world.rewind(k);
        expect(same(world.snapshot(), bytes)).toBe(true);
        expect(world.getPair(es[0]!, Owns, es[1]!)).toEqual({ k: [1, 2] });
        expect(Array.from(world.spawnMany(20, Pos))).toEqual(Array.from(straight.spawnMany(20, Pos)));
        expect(same(world.snapshot(), straight.snapshot())).toBe(true);
    });

    test('rewind, checkpoint, rewind again: the new checkpoint holds the rewound world and the later changes', async () => {
        const world = await newWorld({ checkpoints: 5 });
        const e = world.spawn(Hp({ v: 1 }));
        const k1 = world.checkpoint();
        const b1 = world.snapshot();
        world.set(e, Hp, 'v', 2);
        const f = world.spawn(Pos({ x: 2 }));
        world.checkpoint();
        world.checkpoint();
        world.rewind(k1);
        expect(same(world.snapshot(), b1)).toBe(true);
        world.set(e, Hp, 'v', 3);
        const g = world.spawn(Arr);
        expect(g).toBe(f); // same handle as the first time
        const k2 = world.checkpoint();
        expect(k2).toBe(k1 + 1);
        const b2 = world.snapshot();
        world.despawn(e);
        world.despawn(g);
        world.rewind(k2);
        expect(same(world.snapshot(), b2)).toBe(true);
        expect(world.get(e, Hp, 'v')).toBe(3);
        expect(world.has(g, Arr)).toBe(true);
        world.rewind(k1);
        expect(same(world.snapshot(), b1)).toBe(true);
        expect(world.checkpoints).toEqual({ oldest: k1, newest: k1 });
    });

    test('many checkpoints without changes between them: any of them rewinds to the same bytes', async () => {
        const world = await newWorld({ checkpoints: 8 });
        world.spawnMany(10, Hp({ v: 1 }));
        const ks = [1, 2, 3, 4, 5].map(() => world.checkpoint());
        const bytes = world.snapshot();
        world.spawnMany(10, Pos);
        world.rewind(ks[2]!);
        expect(same(world.snapshot(), bytes)).toBe(true);
        expect(world.checkpoints).toEqual({ oldest: 1, newest: 3 });
        world.query({ all: [Hp] }).despawnAll();
        world.rewind(ks[0]!);
        expect(same(world.snapshot(), bytes)).toBe(true);
    });
});

describe('queries, systems and views across a rewind', () => {
    test('a plain query run before a rewind that moved entities sees the rewound world on its next run', async () => {
        const world = await newWorld({ chunkBytes: 1024 });
        const es = world.spawnMany(300, Hp({ v: 1 }), Pos);
        const q = world.query({ all: [Hp] });
        const qTg = world.query({ all: [Hp, Tg] });
        const k = world.checkpoint();
        const values = (): [Entity, number][] => {
            const out: [Entity, number][] = [];
            for (const chunk of q) {
                const v = chunk.column(Hp, 'v');
                for (const row of chunk.rows) out.push([chunk.entities[row]!, v[row]!]);
            }
            return out.sort((x, y) => x[0] - y[0]);
        };
        const at = values();
        for (let i = 0; i < 300; i += 3) world.add(es[i]!, Tg);
        world.despawnMany(es.subarray(100, 200));
        for (let i = 0; i < 300; i += 7) if (world.isAlive(es[i]!)) world.set(es[i]!, Hp, 'v', i);
        expect(values().length).toBe(200);
        expect(qTg.count()).toBeGreaterThan(0);
        world.rewind(k);
        expect(values()).toEqual(at);
        expect(qTg.count()).toBe(0);
        expect(q.count()).toBe(300);
    });

    test('a rewind made by a system outside its loop: the world is the checkpoint, later systems iterate the rewound world', async () => {
        const world = await newWorld();
        const es = world.spawnMany(10, Hp({ v: 1 }));
        const k = world.checkpoint();
        const bytes = world.snapshot();
        world.despawnMany(es.subarray(0, 5));
        world.spawnMany(3, Hp({ v: 9 }), Tg);
        let seen: number[] = [];
        let error: unknown;
        world.system({
            query: { all: [Hp] },
            run(_q, w) {
                try {
                    w.rewind(k);
                } catch (e) {
                    error = e;
                }
            },
        });
        world.system({
            query: { all: [Hp] },
            run(q) {
                seen = [];
                for (const chunk of q) {
                    const v = chunk.column(Hp, 'v');
                    for (const row of chunk.rows) seen.push(v[row]!);
                }
            },
        });
        world.tick();
        if (error !== undefined) {
            // Refusing is acceptable only as a TesseraError that changed nothing.
            expect(error).toBeInstanceOf(TesseraError);
            expect(world.stats().entityCount).toBe(8);
        } else {
            expect(same(world.snapshot(), bytes)).toBe(true);
            expect(seen).toEqual(new Array(10).fill(1));
        }
    });

    test('a Field handle read after a rewind that moved its entity to another archetype reads the rewound value', async () => {
        const world = await newWorld();
        const hp = world.field(Hp, 'v');
        const es = world.spawnMany(50, Hp({ v: 1 }));
        for (let i = 0; i < 50; i++) hp.set(es[i]!, i);
        const k = world.checkpoint();
        for (let i = 0; i < 50; i += 2) world.add(es[i]!, Tg, Pos);
        for (let i = 0; i < 50; i++) hp.set(es[i]!, 1000 + i);
        world.despawnMany(es.subarray(0, 10));
        world.rewind(k);
        for (let i = 0; i < 50; i++) expect(hp.get(es[i]!)).toBe(i);
        hp.set(es[3]!, -1);
        expect(world.get(es[3]!, Hp)).toEqual({ v: -1 });
        expect(world.get(es[4]!, Hp)).toEqual({ v: 4 });
    });

    test('a debug-mode world: a view kept from before a rewind never reads another entity’s data silently', async () => {
        // README: debug mode makes a detached view throw VIEW_DETACHED; a chunk kept past its loop: CHUNK_EXPIRED.
        const world = await newWorld({ debug: true });
        const es = world.spawnMany(100, Hp({ v: 1 }));
        let chunkKept: { column(c: typeof Hp, f: 'v'): Int32Array } | undefined;
        for (const chunk of world.query({ all: [Hp] })) chunkKept = chunk;
        const k = world.checkpoint();
        world.despawnMany(es.subarray(0, 50));
        world.rewind(k);
        expectError(() => chunkKept!.column(Hp, 'v'), 'CHUNK_EXPIRED');
        expect(world.get(es[0]!, Hp, 'v')).toBe(1);
    });
});

describe('consumers across a rewind', () => {
    test('a subscription sees an entity the rewind brings back as added, one it takes away as removed, a value as changed; once', async () => {
        const world = await newWorld();
        const es = world.spawnMany(6, Hp({ v: 1 }));
        const sub = world.subscribe({ added: [Hp], removed: [Hp] });
        const ch = world.subscribe({ changed: [Hp] });
        sub.drain();
        ch.drain();
        const k = world.checkpoint();
        world.despawn(es[0]!);
        const n = world.spawn(Hp({ v: 5 }));
        world.set(es[1]!, Hp, 'v', 7);
        sub.drain();
        ch.drain();
        world.rewind(k);
        const d = sub.drain();
        // README: "an entity put back in another place or state counts as added" (es[5] moved rows).
        expect(Array.from(d.entities)).toContain(es[0]!);
        expect(Array.from(d.entities)).not.toContain(n);
        for (const e of d.entities) expect(world.has(e, Hp)).toBe(true);
        expect(sorted(d.removed)).toEqual([n]);
        const c = Array.from(ch.drain().entities);
        expect(c).toContain(es[1]!);
        for (const e of c) expect(world.has(e, Hp)).toBe(true);
        const again = sub.drain();
        expect([again.entities.length, again.removed.length, ch.drain().entities.length]).toEqual([0, 0, 0]);
    });

    test('a consumer query that saw a write sees the rewind writing the old value back as a change, once', async () => {
        // README: "a value written back over a different one as changed". A consumer that drained between the
        // write and the rewind must see the rewind's write-back.
        const world = await newWorld();
        const e = world.spawn(Hp({ v: 1 }));
        const ch = world.query({ all: [Hp], changed: [Hp] });
        ch.entities();
        const k = world.checkpoint();
        world.set(e, Hp, 'v', 2);
        expect(Array.from(ch.entities())).toEqual([e]);
        world.rewind(k);
        expect(Array.from(ch.entities())).toEqual([e]);
        expect(Array.from(ch.entities())).toEqual([]);
    });
});

describe('marks of loops left early', () => {
    test('writes of a `writes` loop left with break are rewound', async () => {
        // README: tick() ends a live iteration "as `break` would: the current chunk's writes are marked".
        const world = await newWorld();
        const es = world.spawnMany(10, Hp({ v: 1 }));
        const k = world.checkpoint();
        const bytes = world.snapshot();
        for (const chunk of world.query({ all: [Hp], writes: [Hp] })) {
            const v = chunk.column(Hp, 'v');
            for (let i = 0; i < chunk.count; i++) v[i] = 50;
            break;
        }
        expect(world.get(es[0]!, Hp, 'v')).toBe(50);
        world.rewind(k);
        expect(world.get(es[0]!, Hp, 'v')).toBe(1);
        expect(same(world.snapshot(), bytes)).toBe(true);
    });

    test('writes of a `writes` loop left by an exception are rewound', async () => {
        const world = await newWorld();
        const es = world.spawnMany(10, Hp({ v: 1 }));
        const k = world.checkpoint();
        const bytes = world.snapshot();
        expect(() => {
            for (const chunk of world.query({ all: [Hp], writes: [Hp] })) {
                const v = chunk.column(Hp, 'v');
                for (let i = 0; i < chunk.count; i++) v[i] = 60;
                throw new Error('boom');
            }
        }).toThrow('boom');
        expect(world.get(es[9]!, Hp, 'v')).toBe(60);
        world.rewind(k);
        expect(same(world.snapshot(), bytes)).toBe(true);
    });

    test('writes of an iterator ended by tick() are rewound', async () => {
        const world = await newWorld();
        const es = world.spawnMany(10, Hp({ v: 1 }));
        const k = world.checkpoint();
        const bytes = world.snapshot();
        const it = world.query({ all: [Hp], writes: [Hp] }).chunks();
        const first = it.next();
        const v = first.value!.column(Hp, 'v');
        for (let i = 0; i < v.length; i++) v[i] = 70;
        world.tick();
        expect(world.get(es[0]!, Hp, 'v')).toBe(70);
        world.rewind(k);
        expect(same(world.snapshot(), bytes)).toBe(true);
    });

    test('a sparse-filtered `writes` loop: the visited rows’ writes are rewound', async () => {
        const world = await newWorld();
        const es = world.spawnMany(20, Hp({ v: 1 }));
        for (let i = 0; i < 20; i += 2) world.add(es[i]!, SpArr);
        const k = world.checkpoint();
        const bytes = world.snapshot();
        for (const chunk of world.query({ all: [Hp, SpArr], writes: [Hp] })) {
            const v = chunk.column(Hp, 'v');
            for (const row of chunk.rows) v[row] = 80;
        }
        expect(world.get(es[2]!, Hp, 'v')).toBe(80);
        world.rewind(k);
        expect(same(world.snapshot(), bytes)).toBe(true);
    });

    test('kernels on a sparse-filtered query are rewound', async () => {
        const world = await newWorld();
        const es = world.spawnMany(20, Hp({ v: 5 }), Pos({ x: 1 }));
        for (let i = 0; i < 20; i += 3) world.add(es[i]!, SpArr);
        const k = world.checkpoint();
        const bytes = world.snapshot();
        const q = world.query({ all: [Hp, Pos, SpArr] });
        q.offset(Hp, 'v', 3);
        q.scale(Pos, 'x', 2);
        q.countdown(Hp, 'v', 1);
        expect(world.get(es[3]!, Hp, 'v')).toBe(7);
        world.rewind(k);
        expect(same(world.snapshot(), bytes)).toBe(true);
    });
});

describe('more consumers', () => {
    test('a consumer query with `added` sees an entity the rewind brings back; a subscription splits removals of a sparse component', async () => {
        const world = await newWorld();
        const es = world.spawnMany(4, Hp({ v: 1 }));
        world.add(es[1]!, SpArr({ q: [1, 1] }));
        const addedQ = world.query({ all: [Hp], added: [Hp] });
        addedQ.entities();
        const sub = world.subscribe({ removed: [SpArr, Hp], added: [SpArr] });
        sub.drain();
        const k = world.checkpoint();
        world.despawn(es[0]!);
        world.remove(es[1]!, SpArr);
        world.add(es[2]!, SpArr);
        addedQ.entities();
        sub.drain();
        world.rewind(k);
        expect(Array.from(addedQ.entities())).toContain(es[0]!);
        const d = sub.drain();
        expect(Array.from(d.removedOf(SpArr))).toEqual([es[2]!]);
        expect(Array.from(d.entities)).toContain(es[1]!);
        expect(Array.from(d.entities)).not.toContain(es[2]!);
    });

    test('a tag-only and an empty entity despawned after the checkpoint come back', async () => {
        const world = await newWorld();
        const empty = world.spawn();
        const tagged = world.spawn(Tg);
        const k = world.checkpoint();
        const bytes = world.snapshot();
        world.despawn(empty);
        world.despawn(tagged);
        world.spawn();
        world.rewind(k);
        expect(same(world.snapshot(), bytes)).toBe(true);
        expect(world.isAlive(empty)).toBe(true);
        expect(world.has(tagged, Tg)).toBe(true);
    });
});

describe('history from before the checkpoint', () => {
    test('changes a consumer has not seen yet when the checkpoint is taken are still reported after a rewind to it', async () => {
        // README: "Every consumer sees each change exactly once"; a rewind is seen "as changes, once".
        const world = await newWorld();
        const es = world.spawnMany(6, Hp({ v: 1 }), SpArr);
        // Filters combine with AND: one subscription per filter.
        const added = world.subscribe({ added: [Hp], removed: [Hp] });
        const changed = world.subscribe({ changed: [Hp] });
        const spChanged = world.subscribe({ changed: [SpArr] });
        const spRemoved = world.subscribe({ removed: [SpArr] });
        const pairs = world.subscribe({ pairs: [Owns] });
        for (const s of [added, changed, spChanged, spRemoved, pairs]) s.drain();
        world.set(es[0]!, Hp, 'v', 2); // unseen change
        world.despawn(es[1]!); // unseen removal
        const c = world.spawn(Hp({ v: 3 })); // unseen add
        world.set(es[2]!, SpArr, { q: [4, 4] });
        world.remove(es[3]!, SpArr);
        world.addPair(es[4]!, Owns, es[5]!, { k: [1, 1] });
        const k = world.checkpoint();
        world.set(es[5]!, Hp, 'v', 9);
        world.rewind(k);
        const d = added.drain();
        expect(Array.from(d.entities)).toContain(c);
        expect(Array.from(d.removed)).toEqual([es[1]!]);
        expect(Array.from(changed.drain().entities)).toEqual(expect.arrayContaining([es[0]!, es[5]!]));
        expect(Array.from(spChanged.drain().entities)).toContain(es[2]!);
        expect(Array.from(spRemoved.drain().removed)).toEqual(expect.arrayContaining([es[1]!, es[3]!]));
        const events = pairs.drain().pairEvents.map((ev) => [ev.kind, ev.source, ev.target]);
        expect(events).toEqual([['added', es[4]!, es[5]!]]);
    });

    test('the same with a rewind right after the checkpoint (nothing changed since): the pending changes are kept, once', async () => {
        const world = await newWorld();
        const es = world.spawnMany(3, Hp({ v: 1 }));
        const ch = world.query({ all: [Hp], changed: [Hp] });
        ch.entities();
        world.set(es[1]!, Hp, 'v', 5);
        const k = world.checkpoint();
        world.rewind(k);
        expect(Array.from(ch.entities())).toEqual([es[1]!]);
        expect(Array.from(ch.entities())).toEqual([]);
    });
});

describe('Field handles of sparse and array fields across a rewind', () => {
    test('a Field of a sparse array field reads and writes the rewound values', async () => {
        const world = await newWorld();
        const f = world.field(SpArr, 'q');
        const es = world.spawnMany(8, Hp);
        for (let i = 0; i < 8; i += 2) world.add(es[i]!, SpArr({ q: [i, -i] }));
        const k = world.checkpoint();
        for (let i = 0; i < 8; i += 2) f.set(es[i]!, [100, 100]);
        world.remove(es[0]!, SpArr);
        world.add(es[1]!, SpArr({ q: [7, 7] }));
        world.despawn(es[2]!);
        world.rewind(k);
        for (let i = 0; i < 8; i += 2) expect(f.get(es[i]!)).toEqual([i, -i]);
        expectError(() => f.get(es[1]!), 'MISSING_COMPONENT');
        f.set(es[4]!, [1, 2]);
        expect(world.get(es[4]!, SpArr)).toEqual({ q: [1, 2] });
        expect(world.get(es[6]!, SpArr)).toEqual({ q: [6, -6] });
    });
});

describe('caches and watermarks across a rewind', () => {
    test('consumers that ran many times between the checkpoint and the rewind still see every change made after the rewind', async () => {
        const world = await newWorld();
        const es = world.spawnMany(5, Hp({ v: 1 }));
        const sub = world.subscribe({ changed: [Hp] });
        const q = world.query({ all: [Hp], changed: [Hp] });
        let sysSeen: Entity[] = [];
        world.system({ query: { all: [Hp], changed: [Hp] }, run: (sq) => void (sysSeen = Array.from(sq.entities())) });
        const k = world.checkpoint();
        for (let i = 0; i < 20; i++) {
            world.set(es[i % 5]!, Hp, 'v', 100 + i);
            sub.drain();
            q.entities();
            world.tick();
        }
        world.rewind(k);
        expect(sorted(sub.drain().entities)).toEqual(Array.from(es));
        expect(sorted(q.entities())).toEqual(Array.from(es));
        world.tick();
        expect(sorted(sysSeen)).toEqual(Array.from(es));
        world.set(es[2]!, Hp, 'v', 7);
        expect(Array.from(sub.drain().entities)).toEqual([es[2]!]);
        expect(Array.from(q.entities())).toEqual([es[2]!]);
        world.tick();
        expect(sysSeen).toEqual([es[2]!]);
        world.tick();
        expect(sysSeen).toEqual([]);
    });

    test('add / remove / spawn (in and out of loops) learned before a rewind go to the right archetype after it', async () => {
        // README: "the checkpoints name archetypes"; recorded adds and spawns inside loops are "written straight
        // into the core's list" -- they must not reuse an archetype id the rewind gave to another shape.
        const Big = component('HrBig', { a: 'f64', b: 'f64', c: 'f64' });
        const T2 = tag('HrT2');
        const world = await newWorld();
        world.despawn(world.spawn(Hp, Big, Tg, T2)); // registered up front
        const es = world.spawnMany(6, Hp({ v: 1 }));
        const k = world.checkpoint();
        const bytes = world.snapshot();
        world.add(es[0]!, Tg);
        for (const chunk of world.query({ all: [Hp] }))
            for (const row of chunk.rows) if (chunk.entities[row] === es[1]) world.add(es[1]!, Tg);
        world.spawn(Hp({ v: 2 }), Tg);
        for (const _ of world.query({ all: [Hp] })) {
            world.spawn(Hp({ v: 3 }), Tg);
            break;
        }
        world.rewind(k);
        expect(same(world.snapshot(), bytes)).toBe(true);
        world.spawn(Big({ a: 1, b: 2, c: 3 }), Hp({ v: 9 })); // new shapes, maybe under the freed ids
        world.spawn(Big({ a: 1, b: 2, c: 3 }), T2);
        world.add(es[2]!, Tg);
        for (const chunk of world.query({ all: [Hp] }))
            for (const row of chunk.rows) if (chunk.entities[row] === es[3]) world.add(es[3]!, Tg);
        let s1 = 0;
        for (const _ of world.query({ all: [Hp] })) {
            s1 = world.spawn(Hp({ v: 3 }), Tg);
            break;
        }
        const s2 = world.spawn(Hp({ v: 2 }), Tg);
        for (const [e, v] of [
            [es[2]!, 1],
            [es[3]!, 1],
            [s1, 3],
            [s2, 2],
        ] as const) {
            expect([world.has(e, Tg), world.has(e, Big), world.has(e, T2), world.get(e, Hp, 'v')]).toEqual([true, false, false, v]);
        }
        world.remove(es[2]!, Tg);
        expect([world.has(es[2]!, Tg), world.has(es[2]!, Big)]).toEqual([false, false]);
        expect(world.query({ all: [Hp, Tg] }).count()).toBe(3);
        expect(world.query({ all: [Big] }).count()).toBe(2);
        world.validate();
    });

    test('world.checkpoints is a snapshot of the range, not a live view the caller can corrupt', async () => {
        const world = await newWorld();
        world.spawn(Hp);
        expect(world.checkpoints).toBeNull();
        refusedUnchanged(world, () => world.rewind(1), ['NO_CHECKPOINT']);
        world.checkpoint();
        const r = world.checkpoints as { oldest: number; newest: number };
        try {
            r.oldest = 99;
        } catch {
            // frozen: fine
        }
        world.checkpoint();
        expect(world.checkpoints).toEqual({ oldest: 1, newest: 2 });
        world.rewind(1);
        expect(world.checkpoints).toEqual({ oldest: 1, newest: 1 });
    });
});

describe('orders', () => {
    test('row order of every chunk, targets, sources and pairs order are those of the checkpoint', async () => {
        const L = relation('HrL', { w: 'i32' });
        const world = await newWorld({ chunkBytes: 1024 });
        const es = world.spawnMany(200, Hp({ v: 1 }), Pos);
        const t = world.spawn(Hp);
        for (let i = 0; i < 10; i++) world.addPair(es[i]!, L, t, { w: i });
        for (let i = 0; i < 10; i++) world.addPair(t, L, es[i * 3]!, { w: -i });
        const q = world.query({ all: [Hp] });
        const rows = (): number[][] => {
            const out: number[][] = [];
            for (const chunk of q) out.push(Array.from(chunk.entities.subarray(0, chunk.count)));
            return out;
        };
        const k = world.checkpoint();
        const at = { rows: rows(), sources: world.sources(L, t), targets: world.targets(t, L), pairs: world.pairs(L) };
        for (let i = 0; i < 200; i += 3) world.despawn(es[i]!);
        world.spawnMany(50, Hp, Pos);
        world.removePair(es[1]!, L, t);
        world.addPair(es[1]!, L, t, { w: 5 });
        world.add(es[5]!, Tg);
        world.remove(es[5]!, Tg);
        world.rewind(k);
        expect({ rows: rows(), sources: world.sources(L, t), targets: world.targets(t, L), pairs: world.pairs(L) }).toEqual(at);
    });
});

describe('rewinds from callbacks', () => {
    test('a rewind from a walk callback is refused or leaves a consistent world', async () => {
        const world = await newWorld();
        const root = world.spawn(Hp);
        const kids = [0, 1, 2].map(() => world.spawn(Hp, ChildOf(root)));
        const k = world.checkpoint();
        const bytes = world.snapshot();
        const late = world.spawn(Hp, ChildOf(kids[0]!));
        const visited: Entity[] = [];
        const order = world.descendants(root);
        let error: unknown;
        world.walk(root, (e) => {
            visited.push(e);
            if (e === kids[0]) {
                try {
                    world.rewind(k);
                } catch (err) {
                    error = err;
                }
            }
        });
        if (error !== undefined) {
            expect(error).toBeInstanceOf(TesseraError);
            expect(world.isAlive(late)).toBe(true);
        } else {
            expect(same(world.snapshot(), bytes)).toBe(true);
        }
        world.validate();
        // world.d.ts: "The list is taken before the first call: ... despawned ones still are [visited]".
        expect(visited).toEqual(order);
    });
});

// ---------------------------------------------------------------------------------------------
// Randomized: checkpoints, rewinds, and simulating the same operations again after a rewind
// ---------------------------------------------------------------------------------------------

const LateT = component('HrLateT', { a: ['f64', 2] });
const LateSp = tag('HrLateSp', { storage: 'sparse' });

type ROp = { k: number; a: number; b: number; c: number; v: number };
const rOpArb: fc.Arbitrary<ROp> = fc.record({
    k: fc.nat(21),
    a: fc.nat(10_000),
    b: fc.nat(10_000),
    c: fc.nat(10_000),
    v: fc.integer({ min: -100, max: 100 }),
});
type RStep = { s: 'op'; op: ROp } | { s: 'cp' } | { s: 'rw'; pick: number; replay: boolean };
const rStepArb: fc.Arbitrary<RStep> = fc.oneof(
    { weight: 12, arbitrary: rOpArb.map((op) => ({ s: 'op', op }) as RStep) },
    { weight: 3, arbitrary: fc.constant({ s: 'cp' } as RStep) },
    { weight: 2, arbitrary: fc.record({ s: fc.constant('rw' as const), pick: fc.nat(100), replay: fc.boolean() }) },
);

/** One deterministic operation of the world's state; refusals must change nothing. */
function rApply(world: World, op: ROp): void {
    const all = live(world);
    const pick = (i: number): Entity => all[i % all.length]!;
    const has = all.length > 0;
    const closeAfter = <T extends { close(): void }>(q: T, fn: (q: T) => void): void => {
        try {
            fn(q);
        } finally {
            q.close();
        }
    };
    switch (op.k) {
        case 0:
        case 1: {
            const items: Parameters<World['spawn']> = [Hp({ v: op.v })];
            if (op.a & 1) items.push(Arr({ v: [op.v, -op.v, op.a & 0x7fff], w: op.b & 0xff }));
            if (op.a & 2) items.push(Tg);
            if (op.a & 4) items.push(SpArr({ q: [op.v / 4, op.c] }));
            if (op.a & 8) items.push(Pos({ x: op.v / 3, y: -op.c }));
            if (has && op.a & 16) items.push(ChildOf(pick(op.b)));
            if (has && op.a & 32) items.push(Owns(pick(op.c), { k: [op.a & 0xffff, op.b & 0xffff] }));
            world.spawn(...items);
            return;
        }
        case 2: {
            const n = (op.a % 40) + 1;
            const hs = Array.from({ length: n }, (_, i) => op.v + i);
            world.spawnMany(n, Hp.columns({ v: hs }), op.b & 1 ? Tg : Arr({ w: 7 }));
            return;
        }
        case 3:
            if (has) world.despawn(pick(op.a));
            return;
        case 4: {
            if (!has) return;
            const chosen = new Set<Entity>();
            for (let i = 0; i < (op.b % 6) + 1; i++) chosen.add(pick(op.a + i * (op.c + 1)));
            world.despawnMany([...chosen]);
            return;
        }
        case 5: {
            if (!has) return;
            const e = pick(op.a);
            if (world.has(e, Arr)) world.set(e, Arr, 'v', [op.v, op.b & 0x7fff, -1]);
            else world.add(e, Arr({ w: op.c & 0xff }));
            return;
        }
        case 6:
            if (has) world.set(pick(op.a), Hp, 'v', op.v * 1000);
            return;
        case 7: {
            if (!has) return;
            const e = pick(op.a);
            if (world.has(e, SpArr)) {
                if (op.b & 1) world.remove(e, SpArr);
                else world.set(e, SpArr, { q: [op.v, op.v] });
            } else world.add(e, SpArr({ q: [op.c, 0.5] }));
            return;
        }
        case 8: {
            if (!has) return;
            const e = pick(op.a);
            if (world.has(e, Tg)) world.remove(e, Tg);
            else world.add(e, Tg);
            return;
        }
        case 9: {
            if (!has) return;
            const [s, t] = [pick(op.a), pick(op.b)];
            if (world.hasPair(s, Owns, t) && op.c & 1) world.removePair(s, Owns, t);
            else world.addPair(s, Owns, t, { k: [op.c & 0xffff, 3] });
            return;
        }
        case 10:
            if (has) world.addPair(pick(op.a), Holds, pick(op.b), { n: op.v });
            return;
        case 11: {
            if (!has) return;
            const [s, t] = [pick(op.a), pick(op.b)];
            const cycle = s === t || world.descendants(s, Above).includes(t);
            if (cycle) {
                const bytes = world.snapshot();
                expectError(() => world.addPair(s, Above, t), 'CYCLE');
                expect(same(world.snapshot(), bytes)).toBe(true);
            } else world.addPair(s, Above, t);
            return;
        }
        case 12: {
            if (!has) return;
            const [c, p] = [pick(op.a), pick(op.b)];
            if (op.c % 4 === 0) {
                world.setParent(c, undefined);
                return;
            }
            if (c === p || world.descendants(c).includes(p)) return;
            const sibs = world.childrenOf(p).filter((x) => x !== c);
            world.setParent(c, p, op.c & 1 && sibs.length ? sibs[op.c % sibs.length] : undefined);
            return;
        }
        case 13:
            closeAfter(world.query({ all: [Hp, Tg] }), (q) => (op.a & 1 ? q.addAll(Pos) : q.removeAll(Tg)));
            return;
        case 14:
            if (op.a % 5 === 0) closeAfter(world.query({ all: [Tg, Arr] }), (q) => q.despawnAll());
            return;
        case 15:
            closeAfter(world.query({ all: [Hp] }), (q) => {
                q.offset(Hp, 'v', op.v);
                q.clamp(Hp, 'v', -5000, 5000);
            });
            return;
        case 16:
            // A `writes` loop left early; and one with markChanged on some rows.
            closeAfter(world.query({ all: [Arr], writes: [Arr] }), (q) => {
                let n = 0;
                for (const chunk of q) {
                    const v = chunk.column(Arr, 'v');
                    for (let i = 0; i < v.length; i++) v[i] = (v[i]! + op.v) | 0;
                    if (++n > op.a % 3) break;
                }
            });
            closeAfter(world.query({ all: [Pos] }), (q) => {
                for (const chunk of q) {
                    const x = chunk.column(Pos, 'x');
                    for (let row = op.b % 3; row < chunk.count; row += 3) {
                        x[row] = op.v;
                        chunk.markChanged(Pos, row);
                    }
                }
            });
            return;
        case 17:
            // Structural changes deferred inside a loop.
            closeAfter(world.query({ all: [Hp] }), (q) => {
                let i = 0;
                for (const chunk of q) {
                    for (const row of chunk.rows) {
                        const e = chunk.entities[row]!;
                        if ((i + op.a) % 7 === 0) world.despawn(e);
                        else if ((i + op.a) % 7 === 1) world.spawn(Hp({ v: i }), ChildOf(e));
                        else if ((i + op.a) % 7 === 2) world.add(e, Tg, SpArr({ q: [i, i] }));
                        i++;
                    }
                }
            });
            return;
        case 18:
            // Components first used here (maybe after a checkpoint).
            if (has) {
                const e = pick(op.a);
                if (op.b & 1) world.add(e, LateT({ a: [op.v, 1] }));
                else world.add(e, LateSp);
            }
            return;
        case 19:
            if (has) {
                const e = pick(op.a);
                if (world.has(e, ChildOf)) world.placePair(e, ChildOf, world.parentOf(e)!);
            }
            return;
        case 20:
            if (has) world.remove(pick(op.a), Owns);
            return;
        default: {
            // A refused call changes nothing.
            if (!has) return;
            const bytes = world.snapshot();
            expectError(() => world.set(pick(op.a), Arr, 'w', 300), has && world.has(pick(op.a), Arr) ? 'BAD_VALUE' : 'MISSING_COMPONENT');
            expect(same(world.snapshot(), bytes)).toBe(true);
        }
    }
}

describe('randomized histories', () => {
    test('each rewind gives the checkpoint’s bytes and hash; the same operations simulated again give the same bytes and handles', async () => {
        let rewinds = 0;
        let replays = 0;
        await fc.assert(
            fc.asyncProperty(
                fc.array(rStepArb, { minLength: 40, maxLength: Number(process.env.HR_LEN ?? 120), size: 'max' }),
                fc.constantFrom(1024, 65536),
                fc.constantFrom(1, 2, 4096),
                async (steps, chunkBytes, minFreeIndices) => {
                    const world = await createWorld({ checkpoints: 5, chunkBytes, minFreeIndices });
                    try {
                        world.spawnMany(5, Hp({ v: 1 }), Arr);
                        /** The current timeline's steps; per kept checkpoint: its bytes, hash, and where it is in the timeline. */
                        let hist: RStep[] = [];
                        const kept = new Map<number, { bytes: Uint8Array; hash: bigint; at: number }>();
                        const doStep = (step: RStep): void => {
                            hist.push(step);
                            if (step.s === 'op') rApply(world, step.op);
                            else if (step.s === 'cp') {
                                const n = world.checkpoint();
                                kept.set(n, { bytes: world.snapshot(), hash: world.hash(), at: hist.length });
                                const range = world.checkpoints!;
                                for (const key of [...kept.keys()]) if (key < range.oldest) kept.delete(key);
                                expect(range.newest).toBe(n);
                                expect(kept.size).toBe(range.newest - range.oldest + 1);
                            }
                        };
                        for (const step of steps) {
                            if (step.s !== 'rw') {
                                doStep(step);
                                continue;
                            }
                            const range = world.checkpoints;
                            if (!range) continue;
                            const k = range.oldest + (step.pick % (range.newest - range.oldest + 1));
                            const entry = kept.get(k)!;
                            const endBytes = world.snapshot();
                            const endLive = live(world);
                            const since = hist.slice(entry.at);
                            hist = hist.slice(0, entry.at);
                            world.rewind(k);
                            rewinds++;
                            expect(same(world.snapshot(), entry.bytes), `rewind to ${k}: bytes`).toBe(true);
                            expect(world.hash()).toBe(entry.hash);
                            expect(world.checkpoints).toEqual({ oldest: range.oldest, newest: k });
                            for (const key of [...kept.keys()]) if (key > k) kept.delete(key);
                            world.validate();
                            if (step.replay) {
                                // Simulate again exactly what was done since k (checkpoints too): the same world.
                                replays++;
                                for (const again of since) doStep(again);
                                expect(live(world)).toEqual(endLive);
                                expect(same(world.snapshot(), endBytes), 'simulated again: same bytes').toBe(true);
                            }
                        }
                        world.validate();
                    } finally {
                        world.destroy();
                    }
                },
            ),
            { numRuns: Number(process.env.HR_RUNS ?? 150), seed: Number(process.env.HR_SEED ?? 0x7e55e7a) },
        );
        expect(rewinds).toBeGreaterThan(300);
        expect(replays).toBeGreaterThan(100);
    });
});
