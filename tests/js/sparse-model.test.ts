// A randomized model test of sparse components and relations through the public API (the
// chunk components have theirs in model.test.ts).
// Random spawns (with sparse components and pairs), despawns (cascading through K and ChildOf,
// cleaning up L and X), sparse adds / removes / sets, relate / unrelate / remove-all-pairs,
// pair data writes, deferred changes inside a loop, drains and ticks, against a plain JS model;
// after every step: has / get of the sparse components, targets / sources (in order) and pair
// data of every relation, the results of queries with sparse and pair terms, what two
// subscriptions report (pair events, added / removed on S and L), world.validate().
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';

import { ChildOf, component, createWorld, relation, tag, type Entity, type Subscription, type World } from '../../dist/index.js';
import { expectError, sorted } from './support.js';

/** An index into the live entities (taken modulo their number). */
const pick = fc.nat();

const MP = component('MP', { v: 'i32' });
const S = component('S', { n: 'i16', arr: ['u8', 2] }, { storage: 'sparse' });
const M = tag('M', { storage: 'sparse' });
const L = relation('L', { w: 'i32' });
const X = relation('X', {}, { exclusive: true });
const K = relation('K', {}, { cascade: true }); // cascading, cycles allowed
const relations = { L, X, K, ChildOf } as const;
type RelName = keyof typeof relations;
const relNames = Object.keys(relations) as RelName[];

interface PairRecord {
    readonly id: number;
    readonly s: Entity;
    readonly t: Entity;
    w: number;
    /** The drain epoch of its latest changed event (one per pair between two drains). */
    changedIn: number;
}
interface RelEntity {
    mp: boolean;
    s: { n: number; arr: number[] } | undefined;
    m: boolean;
}
type PairEventTuple = [string, Entity, Entity, string];

class RelModel {
    readonly entities = new Map<Entity, RelEntity>();
    readonly pairs: Record<RelName, PairRecord[]> = { L: [], X: [], K: [], ChildOf: [] };
    readonly dead: Entity[] = [];
    nextId = 0;
    epoch = 0;
    /** Subscription 0: pair events of L, X, ChildOf. */
    events: PairEventTuple[] = [];
    /** Subscription 1: added S (live, still has it), removed S and L. */
    addedS = new Set<Entity>();
    removedS: Entity[] = [];
    removedL: Entity[] = [];

    live(pick: number): Entity | undefined {
        const list = [...this.entities.keys()];
        return list.length ? list[pick % list.length] : undefined;
    }
    targets(s: Entity, r: RelName): Entity[] {
        return this.pairs[r].filter((p) => p.s === s).map((p) => p.t);
    }
    sources(r: RelName, t: Entity): Entity[] {
        return this.pairs[r].filter((p) => p.t === t).map((p) => p.s);
    }
    hasRel(s: Entity, r: RelName): boolean {
        return this.pairs[r].some((p) => p.s === s);
    }
    /** True when `a` is `b` or one of b's ancestors under ChildOf. */
    ancestorOrSelf(a: Entity, b: Entity): boolean {
        for (let x: Entity | undefined = b; x !== undefined; x = this.targets(x, 'ChildOf')[0]) if (x === a) return true;
        return false;
    }
    log(kind: string, p: PairRecord, r: RelName): void {
        if (r !== 'K') this.events.push([kind, p.s, p.t, r]);
    }

    spawn(e: Entity, data: RelEntity): void {
        this.entities.set(e, data);
        if (data.s) this.addedS.add(e);
    }
    addS(e: Entity, values: { n?: number; arr?: number[] } | undefined): void {
        const entity = this.entities.get(e)!;
        if (entity.s) {
            if (values) Object.assign(entity.s, structuredClone(values));
            return;
        }
        entity.s = { n: 0, arr: [0, 0], ...structuredClone(values ?? {}) };
        this.addedS.add(e);
    }
    removeS(e: Entity): void {
        const entity = this.entities.get(e)!;
        if (!entity.s) return;
        entity.s = undefined;
        this.addedS.delete(e);
        this.removedS.push(e);
    }
    relate(s: Entity, r: RelName, t: Entity, w: number | undefined): void {
        const list = this.pairs[r];
        const existing = list.find((p) => p.s === s && p.t === t);
        if (existing) {
            if (w !== undefined) this.write(existing, r, w);
            return;
        }
        if (r === 'X' || r === 'ChildOf') {
            const old = list.find((p) => p.s === s);
            if (old) this.unrelate(s, r, old.t);
        }
        const record: PairRecord = { id: this.nextId++, s, t, w: r === 'L' ? (w ?? 0) : 0, changedIn: -1 };
        list.push(record);
        this.log('added', record, r);
    }
    write(p: PairRecord, r: RelName, w: number): void {
        p.w = w;
        if (p.changedIn !== this.epoch) {
            p.changedIn = this.epoch;
            this.log('changed', p, r);
        }
    }
    unrelate(s: Entity, r: RelName, t: Entity): void {
        const list = this.pairs[r];
        const at = list.findIndex((p) => p.s === s && p.t === t);
        if (at < 0) return;
        const [record] = list.splice(at, 1);
        this.log('removed', record!, r);
        if (r === 'L' && !this.hasRel(s, 'L')) this.removedL.push(s);
    }
    despawn(e: Entity): void {
        const doomed = new Set([e]);
        const queue = [e];
        while (queue.length) {
            const x = queue.pop()!;
            for (const r of ['K', 'ChildOf'] as const) {
                for (const p of this.pairs[r]) if (p.t === x && !doomed.has(p.s)) (doomed.add(p.s), queue.push(p.s));
            }
        }
        for (const d of doomed) {
            for (const r of relNames) {
                for (const p of [...this.pairs[r]]) if (p.s === d || p.t === d) this.unrelate(p.s, r, p.t);
            }
        }
        for (const d of doomed) {
            this.removeS(d);
            this.addedS.delete(d);
            this.entities.delete(d);
            this.dead.push(d);
        }
    }
    /** What subscription 0 and 1 report now; clears them. */
    drain(): { events: PairEventTuple[]; addedS: number[]; removedS: number[]; removedL: number[] } {
        const out = {
            events: sortedEvents(this.events),
            addedS: sorted(this.addedS),
            removedS: sorted(this.removedS),
            removedL: sorted(this.removedL),
        };
        this.events = [];
        this.addedS.clear();
        this.removedS = [];
        this.removedL = [];
        this.epoch++;
        return out;
    }
}

function sortedEvents(list: readonly PairEventTuple[]): PairEventTuple[] {
    return [...list].sort((a, b) => a.join().localeCompare(b.join()));
}

const relCommand = fc.oneof(
    {
        weight: 6,
        arbitrary: fc.record({
            kind: fc.constant('spawn' as const),
            mp: fc.boolean(),
            s: fc.oneof(fc.constant(null), fc.constant('bare' as const), fc.record({ n: fc.integer({ min: -300, max: 300 }) })),
            m: fc.boolean(),
            pairs: fc.array(
                fc.record({ rel: fc.constantFrom(...relNames), pick, w: fc.option(fc.integer({ min: -9, max: 9 }), { nil: undefined }) }),
                { maxLength: 2 },
            ),
        }),
    },
    { weight: 3, arbitrary: fc.record({ kind: fc.constant('despawn' as const), pick }) },
    {
        weight: 4,
        arbitrary: fc.record({
            kind: fc.constant('addSparse' as const),
            pick,
            which: fc.constantFrom('S', 'M'),
            values: fc.option(
                fc.record(
                    {
                        n: fc.integer({ min: -300, max: 300 }),
                        arr: fc.array(fc.integer({ min: 0, max: 255 }), { minLength: 2, maxLength: 2 }),
                    },
                    { requiredKeys: [] },
                ),
                { nil: undefined },
            ),
        }),
    },
    { weight: 3, arbitrary: fc.record({ kind: fc.constant('removeSparse' as const), pick, which: fc.constantFrom('S', 'M') }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('setSparse' as const), pick, n: fc.integer({ min: -300, max: 300 }) }) },
    {
        weight: 8,
        arbitrary: fc.record({
            kind: fc.constant('relate' as const),
            pick,
            rel: fc.constantFrom(...relNames),
            target: pick,
            w: fc.option(fc.integer({ min: -9, max: 9 }), { nil: undefined }),
            viaAdd: fc.boolean(),
        }),
    },
    {
        weight: 4,
        arbitrary: fc.record({
            kind: fc.constant('unrelate' as const),
            pick,
            rel: fc.constantFrom(...relNames),
            which: fc.nat(),
            viaRemove: fc.boolean(),
        }),
    },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('removeRel' as const), pick, rel: fc.constantFrom(...relNames) }) },
    { weight: 3, arbitrary: fc.record({ kind: fc.constant('setPair' as const), which: fc.nat(), w: fc.integer({ min: -9, max: 9 }) }) },
    { weight: 3, arbitrary: fc.record({ kind: fc.constant('drain' as const) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('tick' as const) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('loop' as const), n: fc.integer({ min: -300, max: 300 }) }) },
);
type RelCommand = typeof relCommand extends fc.Arbitrary<infer C> ? C : never;

interface RelRun {
    readonly world: World;
    readonly model: RelModel;
    readonly subs: [Subscription, Subscription];
}

function relStep({ world, model, subs }: RelRun, c: RelCommand): void {
    switch (c.kind) {
        case 'spawn': {
            const items: Parameters<World['spawn']> = [];
            if (c.mp) items.push(MP);
            if (c.s === 'bare') items.push(S);
            else if (c.s) items.push(S(c.s));
            if (c.m) items.push(M);
            const pairs: [RelName, Entity, number | undefined][] = [];
            for (const p of c.pairs) {
                const t = model.live(p.pick);
                if (t === undefined) continue;
                if (pairs.some(([r, tt]) => r === p.rel && (tt === t || p.rel === 'X' || p.rel === 'ChildOf'))) continue;
                const w = p.rel === 'L' ? p.w : undefined;
                pairs.push([p.rel, t, w]);
                items.push(w === undefined ? relations[p.rel](t) : L(t, { w }));
            }
            const e = world.spawn(...items);
            model.spawn(e, { mp: c.mp, s: c.s === null ? undefined : { n: 0, arr: [0, 0], ...(c.s === 'bare' ? {} : c.s) }, m: c.m });
            for (const [r, t, w] of pairs) model.relate(e, r, t, w);
            break;
        }
        case 'despawn': {
            const e = model.live(c.pick);
            if (e === undefined) break;
            world.despawn(e);
            model.despawn(e);
            break;
        }
        case 'addSparse': {
            const e = model.live(c.pick);
            if (e === undefined) break;
            if (c.which === 'M') {
                world.add(e, M);
                model.entities.get(e)!.m = true;
            } else {
                world.add(e, c.values === undefined ? S : S(c.values));
                model.addS(e, c.values);
            }
            break;
        }
        case 'removeSparse': {
            const e = model.live(c.pick);
            if (e === undefined) break;
            world.remove(e, c.which === 'M' ? M : S);
            if (c.which === 'M') model.entities.get(e)!.m = false;
            else model.removeS(e);
            break;
        }
        case 'setSparse': {
            const e = model.live(c.pick);
            if (e === undefined) break;
            const entity = model.entities.get(e)!;
            if (!entity.s) {
                expectError(() => world.set(e, S, 'n', c.n), 'MISSING_COMPONENT', { entity: e, component: 'S' });
                break;
            }
            world.set(e, S, 'n', c.n);
            entity.s.n = c.n;
            break;
        }
        case 'relate': {
            const s = model.live(c.pick);
            const t = model.live(c.target);
            if (s === undefined || t === undefined) break;
            const w = c.rel === 'L' ? c.w : undefined;
            const R = relations[c.rel];
            const act = () => {
                if (c.viaAdd) world.add(s, w === undefined ? R(t) : L(t, { w }));
                else if (w === undefined) world.addPair(s, R, t);
                else world.addPair(s, L, t, { w });
            };
            if (c.rel === 'ChildOf' && model.ancestorOrSelf(s, t)) {
                expectError(act, 'CYCLE', { entity: s, component: 'ChildOf' });
                break;
            }
            act();
            model.relate(s, c.rel, t, w);
            break;
        }
        case 'unrelate': {
            const s = model.live(c.pick);
            if (s === undefined) break;
            const targets = model.targets(s, c.rel);
            // Mostly an existing pair; sometimes one that is not there.
            const t = targets.length && c.which % 4 !== 0 ? targets[c.which % targets.length]! : model.live(c.which);
            if (t === undefined) break;
            if (c.viaRemove) world.remove(s, relations[c.rel](t));
            else world.removePair(s, relations[c.rel], t);
            model.unrelate(s, c.rel, t);
            break;
        }
        case 'removeRel': {
            const s = model.live(c.pick);
            if (s === undefined) break;
            world.remove(s, relations[c.rel]);
            for (const t of model.targets(s, c.rel)) model.unrelate(s, c.rel, t);
            break;
        }
        case 'setPair': {
            const list = model.pairs.L;
            if (list.length === 0) break;
            const p = list[c.which % list.length]!;
            world.setPair(p.s, L, p.t, { w: c.w });
            model.write(p, 'L', c.w);
            break;
        }
        case 'drain': {
            const expected = model.drain();
            const pairs = subs[0].drain();
            expect(sortedEvents(pairs.pairEvents.map((e) => [e.kind, e.source, e.target, e.relation.name])), 'pair events').toEqual(
                expected.events,
            );
            const changes = subs[1].drain();
            expect(sorted(changes.entities), 'added S').toEqual(expected.addedS);
            expect(sorted(changes.removedOf(S)), 'removed S').toEqual(expected.removedS);
            expect(sorted(changes.removedOf(L)), 'removed L').toEqual(expected.removedL);
            break;
        }
        case 'tick':
            world.tick();
            break;
        case 'loop': {
            // Inside a loop over MP: the first visited entity gets a new child (spawned with S
            // values), every visited one gets M and an L pair to the first live entity. Pairs
            // between placed entities apply at once, the rest at the end of the loop.
            const anchor = model.live(0);
            if (anchor === undefined) break;
            const visited: Entity[] = [];
            let child: Entity | undefined;
            const q = world.query({ all: [MP] });
            for (const chunk of q) {
                for (const row of chunk.rows) {
                    const e = chunk.entities[row]!;
                    visited.push(e);
                    if (child === undefined) {
                        child = world.spawn(S({ n: c.n }), ChildOf(e));
                        world.addPair(child, L, anchor, { w: 1 });
                    }
                    world.add(e, M);
                    world.addPair(e, L, anchor);
                }
            }
            q.close();
            expect(sorted(visited)).toEqual(sorted([...model.entities].filter(([, d]) => d.mp).map(([e]) => e)));
            for (const e of visited) model.entities.get(e)!.m = true;
            for (const e of visited) model.relate(e, 'L', anchor, undefined);
            if (child !== undefined) {
                model.spawn(child, { mp: false, s: { n: c.n, arr: [0, 0] }, m: false });
                model.relate(child, 'ChildOf', visited[0]!, undefined);
                model.relate(child, 'L', anchor, 1);
            }
            break;
        }
    }
}

/** Queries checked after every step, with what the model says they match. */
const relQueries: [
    Parameters<World['query']>[0] | ((anchor: Entity) => Parameters<World['query']>[0]),
    (m: RelModel, e: Entity, d: RelEntity, anchor: Entity) => boolean,
][] = [
    [{ all: [S] }, (_m, _e, d) => d.s !== undefined],
    [{ all: [MP], none: [S] }, (_m, _e, d) => d.mp && !d.s],
    [{ all: [L] }, (m, e) => m.hasRel(e, 'L')],
    [{ any: [M, X] }, (m, e, d) => d.m || m.hasRel(e, 'X')],
    [{ all: [MP], none: [ChildOf] }, (m, e, d) => d.mp && !m.hasRel(e, 'ChildOf')],
    [(anchor) => ({ all: [L(anchor)] }), (m, e, _d, anchor) => m.targets(e, 'L').includes(anchor)],
    [
        (anchor) => ({ all: [S, K(0)], none: [X(anchor)] }),
        (m, e, d, anchor) => !!d.s && m.hasRel(e, 'K') && !m.targets(e, 'X').includes(anchor),
    ],
    [(anchor) => ({ any: [ChildOf(anchor), M] }), (m, e, d, anchor) => d.m || m.targets(e, 'ChildOf').includes(anchor)],
];

function relCheck({ world, model }: RelRun): void {
    const actual: unknown[] = [world.stats().entityCount];
    const expected: unknown[] = [model.entities.size];
    for (const [e, d] of model.entities) {
        actual.push([
            e,
            world.isAlive(e),
            world.has(e, S) ? world.get(e, S) : undefined,
            world.has(e, M),
            relNames.map((r) => [world.has(e, relations[r]), world.targets(e, relations[r]), world.sources(relations[r], e)]),
            world.targets(e, L).map((t) => world.getPair(e, L, t, 'w')),
            [world.parentOf(e), world.childrenOf(e)],
        ]);
        expected.push([
            e,
            true,
            d.s,
            d.m,
            relNames.map((r) => [model.hasRel(e, r), model.targets(e, r), model.sources(r, e)]),
            model.pairs.L.filter((p) => p.s === e).map((p) => p.w),
            [model.targets(e, 'ChildOf')[0], model.sources('ChildOf', e)],
        ]);
    }
    for (const e of model.dead.slice(-3)) {
        actual.push([e, world.isAlive(e)]);
        expected.push([e, false]);
    }
    const anchor = model.live(0) ?? 0;
    for (const [desc, matches] of relQueries) {
        const q = world.query(typeof desc === 'function' ? desc(anchor) : desc);
        actual.push(sorted(q.entities()));
        q.close();
        expected.push(sorted([...model.entities].filter(([e, d]) => matches(model, e, d, anchor)).map(([e]) => e)));
    }
    for (const r of relNames) {
        actual.push(sorted(world.pairs(relations[r]).map(([s, t]) => s * 2 ** 30 + t)));
        expected.push(sorted(model.pairs[r].map((p) => p.s * 2 ** 30 + p.t)));
    }
    expect(actual).toEqual(expected);
    world.validate();
}

describe('model: sparse components and relations', () => {
    test('random command sequences agree with a plain JS model after every step', async () => {
        const runs = { count: 0, steps: 0, drains: 0, cascades: 0 };
        await fc.assert(
            fc.asyncProperty(fc.array(relCommand, { minLength: 40, maxLength: 120, size: 'max' }), async (commands) => {
                const world = await createWorld({ minFreeIndices: 1, chunkBytes: 1024 });
                try {
                    const run: RelRun = {
                        world,
                        model: new RelModel(),
                        subs: [world.subscribe({ pairs: [L, X, ChildOf] }), world.subscribe({ added: [S], removed: [S, L] })],
                    };
                    for (const c of commands) {
                        const before = run.model.entities.size;
                        relStep(run, c);
                        if (c.kind === 'despawn' && before - run.model.entities.size > 1) runs.cascades++;
                        relCheck(run);
                        runs.steps++;
                        if (c.kind === 'drain') runs.drains++;
                    }
                    relStep(run, { kind: 'drain' });
                    runs.count++;
                } finally {
                    world.destroy();
                }
            }),
            { seed: 20261122, numRuns: 80 },
        );
        expect(runs.count).toBe(80);
        expect(runs.steps).toBeGreaterThan(80 * 60);
        expect(runs.drains).toBeGreaterThan(200);
        expect(runs.cascades).toBeGreaterThan(20);
    });
});
