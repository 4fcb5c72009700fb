// World state over time held to README.md's contract: rollback (checkpoint / rewind, components
// registered up front or on first use), replication (deltas lost / late / duplicated /
// reordered, source and replica rewinds, changedFields, explicit visibility and budgets),
// subscriptions across rewinds, and bad bytes. Each test asserts a README promise (the
// sentence is quoted next to it). Random sequences come from fast-check, checked against the
// snapshot bytes taken at each checkpoint and validate() after every step.
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';

import { ChildOf, component, createWorld, relation, tag, type Entity, type World } from '../../dist/index.js';
import { expectError, worldPerTest } from './support.js';

const newWorld = worldPerTest();

const Pos = component('HuntPos', { x: 'f32', y: 'f32' });
const Arr = component('HuntArr', { v: ['i16', 2] });
const Flag = tag('HuntFlag');
const Score = component('HuntScore', { v: 'i32' }, { storage: 'sparse' });
const Mark = tag('HuntMark', { storage: 'sparse' });
const Holds = relation('HuntHolds', { d: 'f32' }, { exclusive: true });
const Above = relation('HuntAbove', { d: 'u8' }, { acyclic: true });
const Owns = relation('HuntOwns', undefined, { cascade: true });
const Likes = relation('HuntLikes', { a: 'f64' });
const kinds = [Pos, Arr, Flag, Score, Mark] as const;

const INDEX = 0x1fffff;
const same = (a: Uint8Array, b: Uint8Array | undefined) => b !== undefined && a.length === b.length && a.every((x, i) => x === b[i]);

function live(world: World): Entity[] {
    return [...world.query({}).entities()].sort((a, b) => a - b);
}

/**
 * Registers every component and relation used here before the first checkpoint (one variant of
 * the random histories registers them on first use instead, between checkpoints).
 */
function register(world: World): void {
    const a = world.spawn(Pos, Arr, Flag, Score, Mark);
    const b = world.spawn();
    world.addPair(a, Holds, b);
    world.addPair(a, Above, b);
    world.addPair(a, Owns, b);
    world.addPair(a, Likes, b);
    world.setParent(a, b);
    world.despawn(b); // ChildOf and Owns cascade: a goes too
}

type Op = readonly [number, number, number, number, number];

/** One random API call, its entities picked from the live ones (so a replay picks the same). */
function apply(world: World, [k, a, b, c, d]: Op): void {
    const all = live(world);
    const pick = (n: number) => (all.length ? all[n % all.length] : undefined);
    const e = pick(a);
    const f = pick(b);
    const g = pick(c);
    const cycleOk = (fn: () => void) => {
        try {
            fn();
        } catch (error) {
            if ((error as { code?: string }).code !== 'CYCLE') throw error;
        }
    };
    switch (k % 22) {
        case 0:
        case 1: {
            const items: any[] = kinds
                .filter((_, i) => (a >> i) & 1)
                .map((K) => (K === Pos ? Pos({ x: b, y: -c }) : K === Score ? Score({ v: d }) : K));
            if (d % 3 === 0 && f !== undefined) items.push(ChildOf(f));
            if (d % 5 === 1 && g !== undefined) items.push(Holds(g, { d: a }));
            world.spawn(...items);
            break;
        }
        case 2:
            if (e !== undefined) world.despawn(e);
            break;
        case 3:
            if (e !== undefined) world.add(e, kinds[b % 5]!);
            break;
        case 4:
            if (e !== undefined) world.remove(e, kinds[b % 5]!);
            break;
        case 5:
            if (e !== undefined && world.has(e, Pos)) world.set(e, Pos, { x: b, y: c });
            break;
        case 6:
            if (e !== undefined && world.has(e, Score)) world.set(e, Score, { v: b });
            else if (e !== undefined) world.add(e, Score({ v: c }));
            break;
        case 7:
            if (e !== undefined) world.addPair(e, Holds, f!, { d: c });
            break;
        case 8:
            if (e !== undefined) cycleOk(() => world.addPair(e, Above, f!, { d: c & 255 }));
            break;
        case 9:
            if (e !== undefined) world.addPair(e, Owns, f!);
            break;
        case 10:
            if (e !== undefined) world.addPair(e, Likes, f!, { a: c / 7 });
            break;
        case 11:
            if (e !== undefined && world.hasPair(e, Likes, f!)) world.setPair(e, Likes, f!, 'a', d);
            else if (e !== undefined) {
                const t = world.targets(e, Holds);
                if (t.length) world.setPair(e, Holds, t[0]!, { d });
            }
            break;
        case 12:
            if (e !== undefined) world.removePair(e, [Holds, Above, Owns, Likes][c % 4]!, f!);
            break;
        case 13:
            if (e !== undefined) cycleOk(() => world.setParent(e, f!));
            break;
        case 14:
            if (e !== undefined) {
                const p = world.parentOf(e);
                if (p !== undefined) {
                    const siblings = world.childrenOf(p);
                    const before = siblings[c % siblings.length]!;
                    if (before !== e) world.setParent(e, p, before);
                }
            }
            break;
        case 15:
            if (e !== undefined) world.setParent(e, undefined);
            break;
        case 16: {
            // Closed after: an open query names Pos, which keeps a registration a rewind would
            // take back (README).
            const query = world.query({ all: [Pos], writes: [Pos] });
            for (const chunk of query) {
                const x = chunk.column(Pos, 'x');
                for (let i = a % 3; i < chunk.count; i += 2) x[i]! += 1;
            }
            query.close();
            break;
        }
        case 17: {
            let n = 0;
            const query = world.query({ all: [Pos] });
            for (const chunk of query) {
                for (let i = 0; i < chunk.count && n < 3; i++, n++) {
                    world.spawn(Pos({ x: n }), Flag);
                    if (n === b % 3) world.despawn(chunk.entities[i]!);
                }
            }
            query.close();
            break;
        }
        case 18:
            world.spawnMany(1 + (a % 5), Pos({ y: c }), ...(b & 1 ? [Mark] : []));
            break;
        case 19:
            if (all.length > 3) world.despawnMany(all.filter((_, i) => (i + a) % 4 === 0));
            break;
        case 20:
            if (e !== undefined) world.remove(e, [Holds, Likes, ChildOf][c % 3]!);
            break;
        default:
            if (e !== undefined && world.has(e, Arr)) world.set(e, Arr, { v: [a & 0x7fff, -(b & 0x7fff)] });
    }
}

/** Everything a replica must share with its source about these entities (README, "What the replica equals"). */
function observe(world: World, entities: readonly Entity[] = live(world)): string {
    return JSON.stringify(
        entities.map((e) => {
            const o: Record<string, unknown> = { e };
            for (const K of [Pos, Arr, Score]) if (world.has(e, K)) o[K.name] = world.get(e, K as typeof Pos);
            for (const K of [Flag, Mark]) if (world.has(e, K)) o[K.name] = true;
            for (const R of [Holds, Above, Likes]) {
                const t = world.targets(e, R);
                if (t.length) o[R.name] = t.map((x) => [x, world.getPair(e, R as typeof Likes, x)]);
            }
            const owns = world.targets(e, Owns);
            if (owns.length) o.owns = owns;
            const parent = world.parentOf(e);
            if (parent !== undefined) o.parent = parent;
            const children = world.childrenOf(e);
            if (children.length) o.children = children;
            return o;
        }),
    );
}

const op = fc.tuple(fc.nat(21), fc.nat(999), fc.nat(999), fc.nat(999), fc.nat(999));
type Step = { op: Op } | { checkpoint: true } | { rewind: number } | { reclaim: true } | { stop: true };
const step: fc.Arbitrary<Step> = fc.oneof(
    { weight: 16, arbitrary: op.map((o) => ({ op: o }) as Step) },
    { weight: 3, arbitrary: fc.constant({ checkpoint: true } as Step) },
    { weight: 2, arbitrary: fc.nat(1000).map((n) => ({ rewind: n }) as Step) },
    { weight: 1, arbitrary: fc.constant({ reclaim: true } as Step) },
    { weight: 1, arbitrary: fc.constant({ stop: true } as Step) },
);

/**
 * README: "`world.rewind(n)` returns the world to checkpoint `n` exactly ... so the frames
 * simulated again spawn the handles they spawned the first time, and `world.snapshot()` and
 * `world.hash()` are those of the checkpoint. Checkpoint `n` stays kept (rewind to it again as
 * often as needed); newer ones go, and the next `checkpoint()` is `n + 1`."
 * Each rewind is checked byte for byte, then the calls made since are replayed and must end at
 * the bytes the first run ended at (same handles), then rewound again.
 */
async function rollbackHistory(
    steps: Step[],
    options: { checkpoints: number; minFreeIndices: number },
    registered: 'up front' | 'on first use' = 'up front',
): Promise<void> {
    const world = await createWorld(options);
    try {
        if (registered === 'up front') register(world);
        const kept = new Map<number, { bytes: Uint8Array; ops: Op[] }>();
        for (const s of steps) {
            if ('op' in s) {
                apply(world, s.op);
                if (world.checkpoints) kept.get(world.checkpoints.newest)!.ops.push(s.op);
            } else if ('checkpoint' in s) {
                const n = world.checkpoint();
                kept.set(n, { bytes: world.snapshot(), ops: [] });
                for (const key of [...kept.keys()]) if (key < world.checkpoints!.oldest) kept.delete(key);
                expect(world.checkpoints!.newest).toBe(n);
            } else if ('rewind' in s) {
                if (!world.checkpoints) {
                    expectError(() => world.rewind(1), 'NO_CHECKPOINT');
                    continue;
                }
                const { oldest, newest } = world.checkpoints;
                const to = oldest + (s.rewind % (newest - oldest + 1));
                const replay = [...kept.entries()].filter(([key]) => key >= to).flatMap(([, v]) => v.ops);
                const end = world.snapshot();
                world.rewind(to);
                world.validate();
                expect(same(world.snapshot(), kept.get(to)!.bytes), `rewind(${to}) gives the checkpoint's bytes`).toBe(true);
                for (const o of replay) apply(world, o);
                expect(same(world.snapshot(), end), `replay after rewind(${to}) ends where the first run did`).toBe(true);
                world.rewind(to);
                expect(same(world.snapshot(), kept.get(to)!.bytes), `second rewind(${to})`).toBe(true);
                for (const key of [...kept.keys()]) if (key > to) kept.delete(key);
                kept.get(to)!.ops = [];
                expect(world.checkpoints).toEqual({ oldest, newest: to });
            } else if ('reclaim' in s) {
                // README: "`reclaimArchetypes()` and `world.stopRollback()` drop them" (tested on its own below).
                if (world.reclaimArchetypes() > 0) {
                    expect(world.checkpoints).toBeNull();
                    kept.clear();
                }
            } else {
                world.stopRollback();
                expect(world.checkpoints).toBeNull();
                kept.clear();
            }
            world.validate();
        }
    } finally {
        world.destroy();
    }
}

describe('rollback', () => {
    // README: "a rewind to before its registration takes the registration back when nothing uses
    // it any more, so a frame predicted wrong that used a component first leaves no trace in
    // `snapshot()` and `hash()`, and the ids come again in the order the frames simulated again
    // register them."
    test('random histories rewind byte for byte and replay to the same handles (components registered on first use)', async () => {
        await fc.assert(
            fc.asyncProperty(fc.array(step, { minLength: 20, maxLength: 160 }), fc.integer({ min: 1, max: 5 }), (steps, depth) =>
                rollbackHistory(steps, { checkpoints: depth, minFreeIndices: 1 }, 'on first use'),
            ),
            { numRuns: 60, seed: 11 },
        );
    });

    test('random histories rewind byte for byte and replay to the same handles (free indices reused late)', async () => {
        await fc.assert(
            fc.asyncProperty(fc.array(step, { minLength: 20, maxLength: 160 }), fc.integer({ min: 1, max: 5 }), (steps, depth) =>
                rollbackHistory(steps, { checkpoints: depth, minFreeIndices: 4096 }),
            ),
            { numRuns: 60, seed: 7 },
        );
    });

    test('random histories rewind byte for byte and replay to the same handles (free indices reused at once)', async () => {
        await fc.assert(
            fc.asyncProperty(fc.array(step, { minLength: 20, maxLength: 300 }), fc.integer({ min: 1, max: 5 }), (steps, depth) =>
                rollbackHistory(steps, { checkpoints: depth, minFreeIndices: 1 }),
            ),
            { numRuns: 300, seed: 11 },
        );
    });

    // A source despawned after a checkpoint whose index a new entity takes, which then pairs with
    // the same target: the rewind once kept the new (dead) handle's pair as the old one's, left it
    // in the target's source list and the target twice in the old source's list (CORRUPT).
    test.each([
        ['ChildOf', (w: World, s: Entity, t: Entity) => w.setParent(s, t)],
        ['a plain relation', (w: World, s: Entity, t: Entity) => w.addPair(s, Likes, t, { a: 1 })],
        ['an exclusive relation', (w: World, s: Entity, t: Entity) => w.addPair(s, Holds, t, { d: 1 })],
        ['a cascading relation', (w: World, s: Entity, t: Entity) => w.addPair(s, Owns, t)],
    ])('rewind undoes a pair of %s made by a new entity on a reused source index', async (_, link) => {
        // README: "`world.rewind(n)` returns the world to checkpoint `n` exactly: the same
        // entities and handles ..., pairs with their data and order, ... and `world.snapshot()`
        // and `world.hash()` are those of the checkpoint."
        const world = await newWorld({ minFreeIndices: 1 });
        register(world);
        const parent = world.spawn(Pos);
        const child = world.spawn(Pos);
        link(world, child, parent);
        const n = world.checkpoint();
        const bytes = world.snapshot();
        world.despawn(child);
        let reused = world.spawn(Pos);
        for (let i = 0; i < 50 && (reused & INDEX) !== (child & INDEX); i++) {
            world.despawn(reused);
            reused = world.spawn(Pos);
        }
        expect(reused & INDEX).toBe(child & INDEX);
        link(world, reused, parent);
        world.rewind(n);
        expect(world.isAlive(reused)).toBe(false);
        expect(world.isAlive(child)).toBe(true);
        if (_ === 'ChildOf') expect(world.childrenOf(parent)).toEqual([child]);
        if (_ === 'a plain relation') {
            expect(world.sources(Likes, parent)).toEqual([child]);
            expect(world.targets(child, Likes)).toEqual([parent]);
        }
        expect(() => world.validate()).not.toThrow();
        expect(same(world.snapshot(), bytes)).toBe(true);
    });

    test('a component first used after a checkpoint leaves no trace in snapshot() / hash() once rewound', async () => {
        // README: "`world.snapshot()` and `world.hash()` are those of the checkpoint"; "Two worlds
        // with equal snapshots have equal hashes, so peers of a deterministic simulation (lockstep,
        // rollback netcode) can compare it every tick"; "a rewind to before its registration takes
        // the registration back when nothing uses it any more".
        const Bullet = component('HuntBullet', { t: 'u16' });
        const world = await newWorld();
        const peer = await newWorld(); // never mispredicted
        const a = world.spawn(Pos({ x: 1 }));
        peer.spawn(Pos({ x: 1 }));
        const n = world.checkpoint();
        const bytes = world.snapshot();
        world.add(a, Bullet({ t: 5 })); // a predicted frame that turns out wrong
        world.rewind(n);
        expect(world.has(a, Bullet)).toBe(false);
        world.validate();
        expect(world.hash()).toBe(peer.hash());
        expect(same(world.snapshot(), bytes)).toBe(true);
    });

    test('reclaimArchetypes() drops the checkpoints when it frees an archetype, and only then', async () => {
        // README: "`reclaimArchetypes()` too when it frees an archetype (the checkpoints name
        // archetypes)".
        const world = await newWorld();
        const e = world.spawn(Pos);
        world.checkpoint();
        expect(world.reclaimArchetypes()).toBe(0);
        expect(world.checkpoints).toEqual({ oldest: 1, newest: 1 });
        world.add(e, Flag);
        world.remove(e, Flag); // the archetype (Pos, Flag) is empty now
        expect(world.reclaimArchetypes()).toBe(1);
        expect(world.checkpoints).toBeNull();
    });

    test('600 despawns and spawns on one index with a checkpoint each: every kept one rewinds exactly', async () => {
        // README: "a number not kept throws `NO_CHECKPOINT` and changes nothing"; rewind exactness as above.
        const world = await newWorld({ minFreeIndices: 1, checkpoints: 4 });
        let e = world.spawn(Pos({ x: 1 }));
        world.spawn(Pos({ x: 2 }));
        const first = world.checkpoint();
        const firstBytes = world.snapshot();
        const run = () => {
            const handles: Entity[] = [];
            let x = e;
            for (let i = 0; i < 600; i++) {
                world.despawn(x);
                x = world.spawn(Pos({ x: i }));
                handles.push(x);
            }
            return handles;
        };
        const straight = run();
        const end = world.snapshot();
        expect(new Set(straight.map((h) => h >>> 21)).size).toBeGreaterThan(300); // generations wrapped
        world.rewind(first);
        expect(same(world.snapshot(), firstBytes)).toBe(true);
        expect(run()).toEqual(straight);
        expect(same(world.snapshot(), end)).toBe(true);
        world.rewind(first);
        const kept = new Map<number, Uint8Array>();
        let x = e;
        for (let i = 0; i < 600; i++) {
            kept.set(world.checkpoint(), world.snapshot());
            world.despawn(x);
            x = world.spawn(Pos({ x: i }));
        }
        const { oldest, newest } = world.checkpoints!;
        expect(newest - oldest).toBe(3);
        const before = world.snapshot();
        expectError(() => world.rewind(oldest - 1), 'NO_CHECKPOINT');
        expect(same(world.snapshot(), before)).toBe(true);
        for (const to of [newest, newest - 1, newest - 1, oldest]) {
            world.rewind(to);
            expect(same(world.snapshot(), kept.get(to))).toBe(true);
            world.validate();
        }
        e = x;
    });

    test('300k entities: a rewind over despawns, marked column writes and spawns is exact', async () => {
        // README: "writes through column views are rewound when they are marked (a query's `writes` ...)".
        const world = await newWorld({ checkpoints: 2 });
        const xs = Float32Array.from({ length: 300_000 }, (_, i) => i);
        const es = world.spawnMany(300_000, Pos.columns({ x: xs, y: 1 }));
        for (let i = 0; i < es.length; i += 7) world.add(es[i]!, Score({ v: i }));
        const n = world.checkpoint();
        const bytes = world.snapshot();
        const hash = world.hash();
        world.despawnMany(es.filter((_, i) => i % 3 === 0));
        for (const chunk of world.query({ all: [Pos], writes: [Pos] })) {
            const x = chunk.column(Pos, 'x');
            for (let i = 0; i < chunk.count; i++) x[i] = -x[i]!;
        }
        world.spawnMany(100_000, Pos, Score);
        world.checkpoint();
        world.rewind(n);
        expect(world.hash()).toBe(hash);
        expect(same(world.snapshot(), bytes)).toBe(true);
        world.validate();
    });
});

describe('subscriptions across rewinds', () => {
    test('random histories: every drain reports each net difference, only live holders, once', async () => {
        // README: "Queries, subscriptions, systems and replicators see a rewind as changes, once,
        // at their next run: an entity put back in another place or state counts as added, a
        // value written back over a different one as changed, what the rewind takes away as
        // removed." and "Every handle in `changes.entities` ... is alive and has the component".
        const state = (world: World, K: (typeof kinds)[number]) => {
            const m = new Map<Entity, string>();
            for (const e of live(world)) if (world.has(e, K)) m.set(e, K.isTag ? '1' : JSON.stringify(world.get(e, K as typeof Pos)));
            return m;
        };
        const pairState = (world: World) => {
            const m = new Map<string, string>();
            for (const [s, t] of world.pairs(Likes)) m.set(`${s}>${t}`, JSON.stringify(world.getPair(s, Likes, t)));
            return m;
        };
        const item = fc.oneof(
            { weight: 6, arbitrary: op.map((o) => ({ op: o as Op })) },
            { weight: 2, arbitrary: fc.constant({ checkpoint: true }) },
            { weight: 2, arbitrary: fc.nat(1000).map((n) => ({ rewind: n })) },
            { weight: 1, arbitrary: fc.constant({ tick: true }) },
            { weight: 3, arbitrary: fc.constant({ drain: true }) },
        );
        await fc.assert(
            fc.asyncProperty(fc.array(item, { minLength: 10, maxLength: 150 }), async (items) => {
                const world = await createWorld({ checkpoints: 5 });
                try {
                    register(world);
                    const subs = [Pos, Score, Mark, Arr].map((K) => ({
                        K,
                        addRemove: world.subscribe({ added: [K], removed: [K] }),
                        changed: world.subscribe({ changed: [K] }),
                        last: state(world, K),
                    }));
                    const pairSub = world.subscribe({ pairs: [Likes] });
                    for (const s of subs) {
                        s.addRemove.drain();
                        s.changed.drain();
                    }
                    pairSub.drain();
                    let pairsLast = pairState(world);
                    for (const it of items) {
                        if ('op' in it) apply(world, it.op);
                        else if ('checkpoint' in it) world.checkpoint();
                        else if ('rewind' in it) {
                            if (!world.checkpoints) continue;
                            const { oldest, newest } = world.checkpoints;
                            world.rewind(oldest + (it.rewind % (newest - oldest + 1)));
                        } else if ('tick' in it) world.tick();
                        else {
                            for (const s of subs) {
                                const a = s.addRemove.drain();
                                const c = s.changed.drain();
                                const now = state(world, s.K);
                                const reported = new Set([...a.entities, ...c.entities]);
                                expect(new Set(a.entities).size).toBe(a.entities.length);
                                expect(new Set(c.entities).size).toBe(c.entities.length);
                                for (const e of reported) expect(now.has(e), `${s.K.name}: ${e} reported`).toBe(true);
                                for (const [e, v] of now)
                                    if (s.last.get(e) !== v) expect(reported.has(e), `${s.K.name}: ${e} differs`).toBe(true);
                                for (const [e] of s.last) if (!now.has(e)) expect([...a.removed]).toContain(e);
                                expect(s.addRemove.drain().entities.length + s.changed.drain().entities.length).toBe(0);
                                s.last = now;
                            }
                            const events = pairSub.drain().pairEvents;
                            const lastKind = new Map<string, string>();
                            for (const ev of events) lastKind.set(`${ev.source}>${ev.target}`, ev.kind);
                            const now = pairState(world);
                            for (const [k, v] of now) if (pairsLast.get(k) !== v) expect(lastKind.has(k), `pair ${k}`).toBe(true);
                            for (const [k] of pairsLast) if (!now.has(k)) expect(lastKind.get(k), `pair ${k}`).toBe('removed');
                            for (const [k, kind] of lastKind) expect(now.has(k), `pair ${k} ${kind}`).toBe(kind !== 'removed');
                            pairsLast = now;
                        }
                        world.validate();
                    }
                } finally {
                    world.destroy();
                }
            }),
            { numRuns: 40, seed: 3 },
        );
    });
});

describe('replication', () => {
    type Fate = 'deliver' | 'lose' | 'swap' | 'duplicate';
    const tickArb = fc.record({
        ops: fc.array(op, { minLength: 1, maxLength: 6 }),
        source: fc.constantFrom('none', 'none', 'none', 'checkpoint', 'rewind'),
        pick: fc.nat(1000),
        fate: fc.constantFrom<Fate>('deliver', 'deliver', 'lose', 'swap', 'duplicate'),
        replicaRewind: fc.boolean(),
    });
    type Tick = typeof tickArb extends fc.Arbitrary<infer T> ? T : never;

    /**
     * README: "After applying the delta of tick T, the replica holds what the source's core held
     * at T: the same entities at the same handles, the same replicated components, the same bytes
     * in them ..., the same pairs and child order." "Deltas may be lost (the next one covers
     * them ...), late (ignored) or reordered." `applyDelta` "returns false when the delta is not
     * newer than replicaTick (late or repeated; nothing changed)". "A replica can rewind too ...:
     * its `replicaTick` goes back to the checkpoint's, so a delta built on a later tick is refused
     * (`DELTA_BASELINE`, nothing changed) and the keyframe it then asks for (`peer.reset()`) brings
     * it back to the source." Sources rewind too ("a replica ... follows a world that rewinds").
     */
    async function replicate(ticks: Tick[], changedFields: boolean, rewinds: boolean): Promise<void> {
        const source = await createWorld({ checkpoints: 4 });
        const replica = await createWorld({ checkpoints: 6 });
        try {
            register(source);
            const peer = source.replicator({ changedFields, history: 8 }).peer();
            const sent: { bytes: Uint8Array; tick: number; state: string }[] = [];
            const replicaKept = new Map<number, { bytes: Uint8Array; tick: number }>();
            const deliver = (i: number) => {
                const m = sent[i]!;
                const before = replica.snapshot();
                const tick = replica.replicaTick;
                let applied: boolean;
                try {
                    applied = replica.applyDelta(m.bytes);
                } catch (error) {
                    expect((error as { code?: string }).code).toBe('DELTA_BASELINE');
                    expect(same(replica.snapshot(), before)).toBe(true);
                    expect(replica.replicaTick).toBe(tick);
                    peer.reset();
                    return;
                }
                if (!applied) {
                    expect(m.tick).toBeLessThanOrEqual(tick); // only late or repeated ones are ignored
                    expect(same(replica.snapshot(), before)).toBe(true);
                    return;
                }
                expect(m.tick).toBeGreaterThan(tick); // never applied over newer state
                replica.validate();
                expect(replica.replicaTick).toBe(m.tick);
                expect(observe(replica)).toBe(m.state);
                peer.ack(replica.replicaTick);
                if (rewinds) replicaKept.set(replica.checkpoint(), { bytes: replica.snapshot(), tick: replica.replicaTick });
            };
            for (const t of ticks) {
                for (const o of t.ops) apply(source, o);
                if (rewinds && t.source === 'checkpoint') source.checkpoint();
                if (rewinds && t.source === 'rewind' && source.checkpoints) {
                    const { oldest, newest } = source.checkpoints;
                    source.rewind(oldest + (t.pick % (newest - oldest + 1)));
                }
                const delta = peer.encode();
                sent.push({ bytes: delta.bytes.slice(), tick: delta.tick, state: observe(source) });
                source.tick();
                const last = sent.length - 1;
                if (t.fate === 'deliver') deliver(last);
                else if (t.fate === 'swap' && last > 0) {
                    deliver(last);
                    deliver(last - 1);
                } else if (t.fate === 'duplicate') {
                    deliver(last);
                    deliver(last);
                    deliver(Math.max(0, last - 2));
                }
                if (rewinds && t.replicaRewind && replica.checkpoints && t.pick % 3 === 0) {
                    const { oldest, newest } = replica.checkpoints;
                    const to = oldest + (t.pick % (newest - oldest + 1));
                    replica.rewind(to);
                    expect(same(replica.snapshot(), replicaKept.get(to)!.bytes)).toBe(true);
                    expect(replica.replicaTick).toBe(replicaKept.get(to)!.tick);
                    replica.validate();
                }
            }
            // Then a clean link: the replica ends equal.
            for (let i = 0; i < 3; i++) {
                const delta = peer.encode();
                sent.push({ bytes: delta.bytes.slice(), tick: delta.tick, state: observe(source) });
                source.tick();
                deliver(sent.length - 1);
            }
            expect(observe(replica)).toBe(observe(source));
        } finally {
            source.destroy();
            replica.destroy();
        }
    }

    test('lost, late, duplicated and reordered deltas, with source and replica rewinds', async () => {
        await fc.assert(
            fc.asyncProperty(fc.array(tickArb, { minLength: 5, maxLength: 60 }), (ticks) => replicate(ticks, false, true)),
            { numRuns: 40, seed: 5 },
        );
    });

    test('the same with changedFields', async () => {
        // README: "`changedFields: true` sends only the fields whose values changed".
        await fc.assert(
            fc.asyncProperty(fc.array(tickArb, { minLength: 5, maxLength: 60 }), (ticks) => replicate(ticks, true, true)),
            { numRuns: 40, seed: 6 },
        );
    });

    test('explicit visibility: the replica holds exactly the shown live entities; a budget delivers all in the end', async () => {
        // README: "Entities shown arrive whole; hidden or despawned ones are removed from that
        // replica" and "Under a budget ... the rest wait for the next delta, and nothing waits forever".
        const values = (world: World, entities: Entity[]) =>
            JSON.stringify(
                entities.map((e) => [
                    e,
                    world.has(e, Pos) && world.get(e, Pos),
                    world.has(e, Score) && world.get(e, Score),
                    world.has(e, Flag),
                    world.has(e, Mark),
                ]),
            );
        const arb = fc.record({
            budget: fc.constantFrom(0, 0, 40, 200),
            ticks: fc.array(
                fc.record({
                    ops: fc.array(op, { minLength: 1, maxLength: 5 }),
                    vis: fc.array(fc.tuple(fc.nat(1000), fc.nat(3)), { maxLength: 4 }),
                    lose: fc.boolean(),
                    rewind: fc.nat(9),
                }),
                { minLength: 5, maxLength: 50 },
            ),
        });
        await fc.assert(
            fc.asyncProperty(arb, async ({ budget, ticks }) => {
                const source = await createWorld({ checkpoints: 3 });
                const replica = await createWorld();
                try {
                    register(source);
                    const peer = source.replicator({ components: [Pos, Score, Flag, Mark] }).peer({ visibility: 'explicit', budget });
                    for (const t of ticks) {
                        for (const o of t.ops) apply(source, o);
                        const all = live(source);
                        for (const [i, how] of t.vis) {
                            if (!all.length) break;
                            const e = all[i % all.length]!;
                            if (how) peer.show(e, how);
                            else peer.hide(e);
                        }
                        if (t.rewind === 0) source.checkpoint();
                        else if (t.rewind === 1 && source.checkpoints) source.rewind(source.checkpoints.oldest);
                        const delta = peer.encode();
                        const bytes = delta.bytes.slice();
                        const visible = live(source).filter((e) => peer.sees(e));
                        const expected = values(source, visible);
                        source.tick();
                        if (t.lose && budget === 0) continue;
                        expect(replica.applyDelta(bytes)).toBe(true);
                        peer.ack(replica.replicaTick);
                        replica.validate();
                        const held = live(replica);
                        if (budget === 0) {
                            expect(held).toEqual(visible);
                            expect(values(replica, held)).toBe(expected);
                        } else for (const e of held) expect(visible).toContain(e);
                    }
                    for (let i = 0; i < 300; i++) {
                        expect(replica.applyDelta(peer.encode().bytes.slice())).toBe(true);
                        peer.ack(replica.replicaTick);
                        source.tick();
                    }
                    const visible = live(source).filter((e) => peer.sees(e));
                    expect(live(replica)).toEqual(visible);
                    expect(values(replica, visible)).toBe(values(source, visible));
                } finally {
                    source.destroy();
                    replica.destroy();
                }
            }),
            { numRuns: 30, seed: 9 },
        );
    });
});

describe('bad bytes change nothing', () => {
    test('flipped, overwritten or truncated deltas and keyframes throw and leave the replica as it was', async () => {
        // README: "Bad bytes throw `BAD_DELTA` / `SNAPSHOT_VERSION` / `DELTA_SCHEMA` ... and
        // change nothing"; "a failed call leaves the world exactly as it was (its snapshot is the same bytes)".
        const source = await newWorld();
        const replica = await newWorld({ checkpoints: 3 });
        register(source);
        const peer = source.replicator({ quantize: [[Pos, { x: 0.5, y: 0.25 }]], changedFields: true }).peer();
        await fc.assert(
            fc.asyncProperty(
                fc.array(op, { minLength: 1, maxLength: 8 }),
                fc.array(fc.tuple(fc.constantFrom('flip', 'byte', 'cut'), fc.nat(), fc.nat(255)), { minLength: 1, maxLength: 8 }),
                async (ops, damage) => {
                    for (const o of ops) apply(source, o);
                    const delta = peer.encode();
                    const good = delta.bytes.slice();
                    replica.checkpoint();
                    for (const [how, at, value] of damage) {
                        let bad = good.slice();
                        const i = at % bad.length;
                        if (how === 'flip') bad[i]! ^= 1 << (value % 8);
                        else if (how === 'byte') {
                            if (bad[i] === value) continue;
                            bad[i] = value;
                        } else bad = bad.subarray(0, i);
                        const before = replica.snapshot();
                        const tick = replica.replicaTick;
                        expect(() => replica.applyDelta(bad)).toThrow();
                        expect(same(replica.snapshot(), before)).toBe(true);
                        expect(replica.replicaTick).toBe(tick);
                        replica.validate();
                    }
                    expect(replica.applyDelta(good)).toBe(true);
                    peer.ack(replica.replicaTick);
                    source.tick();
                },
            ),
            { numRuns: 60, seed: 13 },
        );
    });

    test('corrupted or truncated snapshots make no world', async () => {
        // README: "Truncated or corrupted bytes throw `BAD_SNAPSHOT`, bytes of another format version `SNAPSHOT_VERSION`, and make no world."
        const world = await newWorld();
        register(world);
        for (let i = 0; i < 80; i++) apply(world, [i % 22, (i * 37) % 1000, (i * 91) % 1000, (i * 13) % 1000, (i * 7) % 1000]);
        const bytes = world.snapshot();
        await fc.assert(
            fc.asyncProperty(fc.nat(), fc.nat(7), fc.boolean(), async (at, bit, cut) => {
                const bad = bytes.slice();
                const i = at % bad.length;
                bad[i]! ^= 1 << bit;
                let made: World | undefined;
                try {
                    made = await createWorld({ snapshot: cut ? bytes.subarray(0, i) : bad });
                } catch (error) {
                    expect(['BAD_SNAPSHOT', 'SNAPSHOT_VERSION']).toContain((error as { code?: string }).code);
                }
                made?.destroy();
                expect(made).toBeUndefined();
            }),
            { numRuns: 200, seed: 17 },
        );
    });
});
