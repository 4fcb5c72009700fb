// A randomized model test through the public API: random command sequences (spawn, spawnMany,
// despawn, despawnMany, add, remove, set, errors on stale handles and missing components,
// subscription drains, ticks, view writes, kernels, deferred changes inside a loop) run against
// a world and a plain JS model, compared after every step: every live entity's components and
// values, the entity count, stale handles, what each subscription reports, world.validate().
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';

import {
    ChildOf,
    component,
    createWorld,
    relation,
    tag,
    type Component,
    type Entity,
    type Subscription,
    type World,
} from '../../dist/index.js';
import { expectError, sorted } from './support.js';

const A = component('A', { x: 'f32', n: 'i16' });
const B = component('B', { v: ['u8', 3], w: 'f64' });
const T = tag('T');
const components = [A, B, T] as const;
type Name = 'A' | 'B' | 'T';
const byName: Record<Name, Component<any>> = { A, B, T };

type AValues = { x?: number; n?: number };
type BValues = { v?: number[]; w?: number };
type Values = AValues | BValues;
/** An entity of the model: its components by name and their full values (`true` for T). */
type ModelEntity = Map<Name, Record<string, number | number[]> | true>;

const zero: Record<Name, () => Record<string, number | number[]> | true> = {
    A: () => ({ x: 0, n: 0 }),
    B: () => ({ v: [0, 0, 0], w: 0 }),
    T: () => true,
};

// ---- what subscriptions see, in the model -------------------------------------------------

interface SubscriptionModel {
    readonly desc: { added?: Name[]; changed?: Name[]; removed?: Name[]; none?: Name[] };
    /** Per live entity: components added / changed since this subscription's last drain. */
    readonly added: Map<Entity, Set<Name>>;
    readonly changed: Map<Entity, Set<Name>>;
    /** Removals since the last drain, per removed term. */
    readonly log: Map<Name, Entity[]>;
}

const subscriptionDescs: SubscriptionModel['desc'][] = [
    { added: ['A'], removed: ['A', 'T'] },
    { changed: ['A'], none: ['T'] },
    { added: ['B'], changed: ['B'] }, // both must hold
    { changed: ['B'], removed: ['B'] },
];

class Model {
    readonly entities = new Map<Entity, ModelEntity>();
    readonly dead: Entity[] = [];
    readonly subs: SubscriptionModel[] = subscriptionDescs.map((desc) => ({
        desc,
        added: new Map(),
        changed: new Map(),
        log: new Map((desc.removed ?? []).map((name) => [name, []])),
    }));

    spawn(e: Entity, parts: [Name, Values | undefined][]): void {
        this.entities.set(e, new Map());
        for (const [name, values] of parts) this.gain(e, name, values);
    }

    /** The entity gains a component: added, not changed (values written as part of the add). */
    gain(e: Entity, name: Name, values: Values | undefined): void {
        const data = zero[name]();
        if (data !== true && values) Object.assign(data, structuredClone(values));
        this.entities.get(e)!.set(name, data);
        for (const sub of this.subs) {
            set(sub.added, e).add(name);
            set(sub.changed, e).delete(name);
        }
    }

    lose(e: Entity, name: Name): void {
        if (!this.entities.get(e)!.delete(name)) return;
        for (const sub of this.subs) {
            sub.added.get(e)?.delete(name);
            sub.changed.get(e)?.delete(name);
            sub.log.get(name)?.push(e);
        }
    }

    change(e: Entity, name: Name, values: Values): void {
        const data = this.entities.get(e)!.get(name) as Record<string, unknown>;
        for (const [field, value] of Object.entries(values)) {
            if (value !== undefined) data[field] = structuredClone(value);
        }
        this.touch(e, name);
    }

    touch(e: Entity, name: Name): void {
        for (const sub of this.subs) set(sub.changed, e).add(name);
    }

    despawn(e: Entity): void {
        for (const name of [...this.entities.get(e)!.keys()]) this.lose(e, name);
        this.entities.delete(e);
        for (const sub of this.subs) {
            sub.added.delete(e);
            sub.changed.delete(e);
        }
        this.dead.push(e);
    }

    /** What a drain of subscription `i` reports, and the model's state after it. */
    drain(i: number): { entities: number[]; removed: Map<Name, number[]> } {
        const sub = this.subs[i]!;
        const { added = [], changed = [], none = [] } = sub.desc;
        const entities: number[] = [];
        if (added.length + changed.length > 0) {
            for (const [e, parts] of this.entities) {
                if (![...added, ...changed].every((name) => parts.has(name))) continue;
                if (none.some((name) => parts.has(name))) continue;
                if (!added.every((name) => sub.added.get(e)?.has(name))) continue;
                if (!changed.every((name) => sub.changed.get(e)?.has(name))) continue;
                entities.push(e);
            }
        }
        const removed = new Map([...sub.log].map(([name, list]) => [name, sorted(list)]));
        sub.added.clear();
        sub.changed.clear();
        for (const list of sub.log.values()) list.length = 0;
        return { entities: sorted(entities), removed };
    }
}

function set(map: Map<Entity, Set<Name>>, e: Entity): Set<Name> {
    let found = map.get(e);
    if (found === undefined) map.set(e, (found = new Set()));
    return found;
}

// ---- commands --------------------------------------------------------------------------------

const f32 = fc.integer({ min: -4000, max: 4000 }).map((i) => i / 4); // exact in f32 and its sums
const aValues = fc.record({ x: f32, n: fc.integer({ min: -32768, max: 32767 }) }, { requiredKeys: [] });
const bValues = fc.record(
    { v: fc.array(fc.integer({ min: 0, max: 255 }), { minLength: 3, maxLength: 3 }), w: fc.double({ noNaN: true }) },
    { requiredKeys: [] },
);
const nonEmpty = <V extends object>(arb: fc.Arbitrary<V>) => arb.filter((v) => Object.keys(v).length > 0);
/** A component in a spawn: absent, bare, or with values. */
const part = (values: fc.Arbitrary<Values>) => fc.oneof(fc.constant(null), fc.constant('bare' as const), values);
const spawnParts = fc.record({ A: part(aValues), B: part(bValues), T: fc.boolean() });
const pick = fc.nat();
const dataName = fc.constantFrom<'A' | 'B'>('A', 'B');
const anyName = fc.constantFrom<Name>('A', 'B', 'T');

const command = fc.oneof(
    { weight: 6, arbitrary: fc.record({ kind: fc.constant('spawn' as const), parts: spawnParts }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('spawnMany' as const), count: fc.integer({ min: 0, max: 6 }), parts: spawnParts }) },
    { weight: 4, arbitrary: fc.record({ kind: fc.constant('despawn' as const), pick }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('despawnMany' as const), picks: fc.array(pick, { minLength: 1, maxLength: 4 }), stale: fc.boolean() }) },
    {
        weight: 5,
        arbitrary: fc.record({
            kind: fc.constant('add' as const),
            pick,
            name: anyName,
            a: fc.option(aValues, { nil: undefined }),
            b: fc.option(bValues, { nil: undefined }),
        }),
    },
    { weight: 4, arbitrary: fc.record({ kind: fc.constant('remove' as const), pick, name: anyName }) },
    {
        weight: 6,
        arbitrary: fc.record({
            kind: fc.constant('set' as const),
            pick,
            name: dataName,
            a: nonEmpty(aValues),
            b: nonEmpty(bValues),
            oneField: fc.boolean(),
        }),
    },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('stale' as const), pick, name: dataName }) },
    { weight: 5, arbitrary: fc.record({ kind: fc.constant('drain' as const), sub: fc.integer({ min: 0, max: subscriptionDescs.length - 1 }) }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('tick' as const) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('writeLoop' as const), x: f32 }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('offset' as const), k: f32 }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('countdown' as const), k: f32 }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('loopDeferred' as const), x: f32 }) },
);
type Command = typeof command extends fc.Arbitrary<infer C> ? C : never;

// ---- running a command on both ---------------------------------------------------------------

interface Run {
    readonly world: World;
    readonly model: Model;
    readonly subs: Subscription[];
}

function items(parts: Command & { kind: 'spawn' | 'spawnMany' }): { list: Parameters<World['spawn']>; model: [Name, Values | undefined][] } {
    const list: Parameters<World['spawn']> = [];
    const model: [Name, Values | undefined][] = [];
    for (const name of ['A', 'B'] as const) {
        const p = parts.parts[name];
        if (p === null) continue;
        list.push(p === 'bare' ? byName[name] : byName[name](p));
        model.push([name, p === 'bare' ? undefined : p]);
    }
    if (parts.parts.T) {
        list.push(T);
        model.push(['T', undefined]);
    }
    return { list, model };
}

function live(model: Model, index: number): Entity | undefined {
    const list = [...model.entities.keys()];
    return list.length ? list[index % list.length] : undefined;
}

function step({ world, model, subs }: Run, c: Command): void {
    switch (c.kind) {
        case 'spawn': {
            const { list, model: parts } = items(c);
            model.spawn(world.spawn(...list), parts);
            break;
        }
        case 'spawnMany': {
            const { list, model: parts } = items(c);
            for (const e of world.spawnMany(c.count, ...list)) model.spawn(e, parts);
            break;
        }
        case 'despawn': {
            const e = live(model, c.pick);
            if (e === undefined) break;
            world.despawn(e);
            model.despawn(e);
            break;
        }
        case 'despawnMany': {
            const list = c.picks.map((p) => live(model, p)).filter((e) => e !== undefined);
            if (c.stale && model.dead.length) list.push(model.dead[c.picks[0]! % model.dead.length]!);
            if (list.length === 0) break;
            const duplicate = new Set(list).size !== list.length;
            const stale = list.some((e) => !model.entities.has(e));
            if (stale || duplicate) {
                // With both mistakes in one list, either may be reported first.
                let code: string | undefined;
                try {
                    world.despawnMany(list);
                } catch (error) {
                    code = (error as { code?: string }).code;
                }
                expect([stale && 'STALE_ENTITY', duplicate && 'DUPLICATE_ENTITY']).toContain(code);
                break;
            }
            world.despawnMany(list);
            for (const e of list) model.despawn(e);
            break;
        }
        case 'add': {
            const e = live(model, c.pick);
            if (e === undefined) break;
            const values = c.name === 'A' ? c.a : c.name === 'B' ? c.b : undefined;
            const component = byName[c.name];
            world.add(e, values === undefined ? component : component(values));
            const parts = model.entities.get(e)!;
            if (!parts.has(c.name)) model.gain(e, c.name, values);
            else if (values !== undefined && Object.values(values).some((v) => v !== undefined)) model.change(e, c.name, values);
            break;
        }
        case 'remove': {
            const e = live(model, c.pick);
            if (e === undefined) break;
            world.remove(e, byName[c.name]);
            model.lose(e, c.name);
            break;
        }
        case 'set': {
            const e = live(model, c.pick);
            if (e === undefined) break;
            let values: Values = c.name === 'A' ? c.a : c.b;
            if (c.oneField) values = Object.fromEntries([Object.entries(values)[0]!]);
            const component = byName[c.name];
            if (!model.entities.get(e)!.has(c.name)) {
                expectError(() => world.set(e, component, values), 'MISSING_COMPONENT', { entity: e });
                break;
            }
            if (c.oneField) {
                const [field, value] = Object.entries(values)[0]!;
                world.set(e, component, field, value);
            } else {
                world.set(e, component, values);
            }
            model.change(e, c.name, values);
            break;
        }
        case 'stale': {
            if (model.dead.length === 0) break;
            const e = model.dead[c.pick % model.dead.length]!;
            expectError(() => world.set(e, A, { x: 1 }), 'STALE_ENTITY', { entity: e });
            expectError(() => world.get(e, byName[c.name]), 'STALE_ENTITY', { entity: e });
            expectError(() => world.add(e, T), 'STALE_ENTITY', { entity: e });
            expectError(() => world.despawn(e), 'STALE_ENTITY', { entity: e });
            break;
        }
        case 'drain': {
            const changes = subs[c.sub]!.drain();
            const expected = model.drain(c.sub);
            expect(sorted(changes.entities), `entities of subscription ${c.sub}`).toEqual(expected.entities);
            for (const [name, list] of expected.removed) {
                expect(sorted(changes.removedOf(byName[name])), `removed ${name} of subscription ${c.sub}`).toEqual(list);
            }
            expect(changes.removed).toHaveLength([...expected.removed.values()].reduce((n, l) => n + l.length, 0));
            break;
        }
        case 'tick':
            world.tick();
            break;
        case 'writeLoop': {
            const query = world.query({ all: [A], writes: [A] });
            for (const chunk of query) chunk.column(A, 'x').fill(c.x);
            query.close();
            for (const [e, parts] of model.entities) if (parts.has('A')) model.change(e, 'A', { x: c.x });
            break;
        }
        case 'offset': {
            const query = world.query({ all: [B] });
            query.offset(B, 'w', c.k);
            query.close();
            for (const [e, parts] of model.entities) {
                const b = parts.get('B') as { w: number } | undefined;
                if (b) model.change(e, 'B', { w: b.w + c.k });
            }
            break;
        }
        case 'countdown': {
            const query = world.query({ all: [A] });
            const crossed = query.countdown(A, 'x', c.k);
            query.close();
            const expected: number[] = [];
            for (const [e, parts] of model.entities) {
                const a = parts.get('A') as { x: number } | undefined;
                if (!a) continue;
                if (a.x > 0 && a.x - c.k <= 0) expected.push(e);
                model.change(e, 'A', { x: a.x - c.k });
            }
            expect(sorted(crossed)).toEqual(sorted(expected));
            break;
        }
        case 'loopDeferred': {
            // Inside a loop over T: despawn everything visited, spawn one entity per chunk. All
            // of it is applied when the loop ends.
            const visited: Entity[] = [];
            const spawned: Entity[] = [];
            const query = world.query({ all: [T] });
            for (const chunk of query) {
                for (const e of chunk.entities) {
                    visited.push(e);
                    world.despawn(e);
                }
                spawned.push(world.spawn(A({ x: c.x })));
                expect(world.stats().entityCount).toBe(model.entities.size);
            }
            query.close();
            const tagged = [...model.entities].filter(([, parts]) => parts.has('T')).map(([e]) => e);
            expect(sorted(visited)).toEqual(sorted(tagged));
            for (const e of visited) model.despawn(e);
            // Values given to a spawn inside a loop are part of the spawn (added, not changed).
            for (const e of spawned) model.spawn(e, [['A', { x: c.x }]]);
            break;
        }
    }
}

/** Everything the model knows, checked against the world. */
function check({ world, model }: Run): void {
    // One comparison of everything (one expect per entity would cost more than the world).
    const actual: unknown[] = [world.stats().entityCount];
    const expected: unknown[] = [model.entities.size];
    for (const [e, parts] of model.entities) {
        const has: Record<string, unknown> = {};
        for (const component of components) {
            if (!world.has(e, component)) continue;
            has[component.name] = component.isTag ? true : world.get(e, component);
        }
        actual.push([e, world.isAlive(e), has]);
        expected.push([e, true, Object.fromEntries(parts)]);
    }
    for (const e of model.dead.slice(-5)) {
        actual.push([e, world.isAlive(e)]);
        expected.push([e, false]);
    }
    expect(actual).toEqual(expected);
    world.validate();
}

describe('model', () => {
    test('random command sequences agree with a plain JS model after every step', async () => {
        const runs = { count: 0, steps: 0, drains: 0 };
        await fc.assert(
            fc.asyncProperty(fc.array(command, { minLength: 50, maxLength: 150, size: 'max' }), async (commands) => {
                // Slots are reused quickly, so stale handles sit next to new entities.
                const world = await createWorld({ minFreeIndices: 1, chunkBytes: 1024 });
                try {
                    const run: Run = {
                        world,
                        model: new Model(),
                        subs: subscriptionDescs.map((desc) =>
                            world.subscribe({
                                ...(desc.added && { added: desc.added.map((n) => byName[n]) }),
                                ...(desc.changed && { changed: desc.changed.map((n) => byName[n]) }),
                                ...(desc.removed && { removed: desc.removed.map((n) => byName[n]) }),
                                ...(desc.none && { none: desc.none.map((n) => byName[n]) }),
                            }),
                        ),
                    };
                    for (const c of commands) {
                        step(run, c);
                        check(run);
                        runs.steps++;
                        if (c.kind === 'drain') runs.drains++;
                    }
                    // Finally every subscription agrees too.
                    for (let i = 0; i < run.subs.length; i++) step(run, { kind: 'drain', sub: i });
                    runs.count++;
                } finally {
                    world.destroy();
                }
            }),
            { seed: 20261121, numRuns: 200 },
        );
        expect(runs.count).toBe(200);
        expect(runs.drains).toBeGreaterThan(1000);
        expect(runs.steps).toBeGreaterThan(200 * 80); // about 100 commands per run
    });
});

// ---- sparse components and relations against a second model ---------------------------------
//
// Random spawns (with sparse components and pairs), despawns (cascading through K and ChildOf,
// cleaning up L and X), sparse adds / removes / sets, relate / unrelate / remove-all-pairs,
// pair data writes, deferred changes inside a loop, drains and ticks, against a plain JS model;
// after every step: has / get of the sparse components, targets / sources (in order) and pair
// data of every relation, the results of queries with sparse and pair terms, what two
// subscriptions report (pair events, added / removed on S and L), world.validate().

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
            pairs: fc.array(fc.record({ rel: fc.constantFrom(...relNames), pick, w: fc.option(fc.integer({ min: -9, max: 9 }), { nil: undefined }) }), { maxLength: 2 }),
        }),
    },
    { weight: 3, arbitrary: fc.record({ kind: fc.constant('despawn' as const), pick }) },
    {
        weight: 4,
        arbitrary: fc.record({
            kind: fc.constant('addSparse' as const),
            pick,
            which: fc.constantFrom('S', 'M'),
            values: fc.option(fc.record({ n: fc.integer({ min: -300, max: 300 }), arr: fc.array(fc.integer({ min: 0, max: 255 }), { minLength: 2, maxLength: 2 }) }, { requiredKeys: [] }), { nil: undefined }),
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
    { weight: 4, arbitrary: fc.record({ kind: fc.constant('unrelate' as const), pick, rel: fc.constantFrom(...relNames), which: fc.nat(), viaRemove: fc.boolean() }) },
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
            expect(sortedEvents(pairs.pairEvents.map((e) => [e.kind, e.source, e.target, e.relation.name])), 'pair events').toEqual(expected.events);
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
                for (const row of chunk.slots) {
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
const relQueries: [Parameters<World['query']>[0] | ((anchor: Entity) => Parameters<World['query']>[0]), (m: RelModel, e: Entity, d: RelEntity, anchor: Entity) => boolean][] = [
    [{ all: [S] }, (_m, _e, d) => d.s !== undefined],
    [{ all: [MP], none: [S] }, (_m, _e, d) => d.mp && !d.s],
    [{ all: [L] }, (m, e) => m.hasRel(e, 'L')],
    [{ any: [M, X] }, (m, e, d) => d.m || m.hasRel(e, 'X')],
    [{ all: [MP], none: [ChildOf] }, (m, e, d) => d.mp && !m.hasRel(e, 'ChildOf')],
    [(anchor) => ({ all: [L(anchor)] }), (m, e, _d, anchor) => m.targets(e, 'L').includes(anchor)],
    [(anchor) => ({ all: [S, K(0)], none: [X(anchor)] }), (m, e, d, anchor) => !!d.s && m.hasRel(e, 'K') && !m.targets(e, 'X').includes(anchor)],
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
