// A randomized model test through the public API: random command sequences (spawn, spawnMany,
// despawn, despawnMany, add, remove, set, errors on stale handles and missing components,
// subscription drains, ticks, view writes, kernels, deferred changes inside a loop; and from
// issue 16: adds with values, removes and sets recorded inside a loop, held components and
// pending spawns included; subscriptions closed and made again late; subscription loops broken
// off, by break or by tick) run against a world and a plain JS model, compared after every
// step: every live entity's components and values, the entity count, stale handles, what each
// subscription reports, world.validate().
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';

import { component, createWorld, tag, type Component, type Entity, type Subscription, type World } from '../../dist/index.js';
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
    { removed: ['A'] }, // beside 0: a late one must not see what 0 keeps
];
/** Subscriptions without removed terms: their chunks() loops may be broken off. */
const loopable = [1, 2];

/** A fresh subscription's model: it starts when it is made (issue 16, rule 3). */
function startSubscription(desc: SubscriptionModel['desc'], entities: ReadonlyMap<Entity, ModelEntity>): SubscriptionModel {
    const sub: SubscriptionModel = {
        desc,
        added: new Map(),
        changed: new Map(),
        log: new Map((desc.removed ?? []).map((name) => [name, []])),
    };
    // What exists counts as added; no change or removal from before is its.
    for (const [e, parts] of entities) for (const name of desc.added ?? []) if (parts.has(name)) set(sub.added, e).add(name);
    return sub;
}

/** A call recorded inside a loop, applied by the model when the loop ends. */
type Recorded =
    | { kind: 'spawn'; e: Entity; parts: [Name, Values | undefined][] }
    | { kind: 'add'; e: Entity; name: Name; values: Values | undefined }
    | { kind: 'remove'; e: Entity; name: Name }
    | { kind: 'set'; e: Entity; name: Name; values: Values };

class Model {
    readonly entities = new Map<Entity, ModelEntity>();
    readonly dead: Entity[] = [];
    readonly subs: SubscriptionModel[] = subscriptionDescs.map((desc) => startSubscription(desc, new Map()));
    /** Calls recorded in the loop in progress. */
    recorded: Recorded[] = [];
    /** How often the issue 16 paths were taken (the test requires each). */
    readonly counts = { carried: 0, heldAdds: 0, recordedSets: 0, lateSubscriptions: 0 };

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

    /** The entities a run of subscription `i` reports now. */
    due(i: number): number[] {
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
        return sorted(entities);
    }

    /** What a drain of subscription `i` reports, and the model's state after it. */
    drain(i: number): { entities: number[]; removed: Map<Name, number[]> } {
        const sub = this.subs[i]!;
        const entities = this.due(i);
        const removed = new Map([...sub.log].map(([name, list]) => [name, sorted(list)]));
        sub.added.clear();
        sub.changed.clear();
        for (const list of sub.log.values()) list.length = 0;
        return { entities, removed };
    }

    /**
     * A run of subscription `i` broken off after handing out `visited` (issue 16, rule 5): the
     * due entities it did not hand out stay pending, to be reported by the next run if they
     * still match; everything else of its window is used up.
     */
    brokenOff(i: number, due: readonly number[], visited: ReadonlySet<number>): void {
        const sub = this.subs[i]!;
        const carried = new Set(due.filter((e) => !visited.has(e)));
        this.counts.carried += carried.size;
        for (const map of [sub.added, sub.changed]) for (const e of [...map.keys()]) if (!carried.has(e)) map.delete(e);
    }

    /** Whether a (placed or pending) entity will have a component once the recorded calls apply. */
    willHave(e: Entity, name: Name): boolean {
        for (let i = this.recorded.length - 1; i >= 0; i--) {
            const call = this.recorded[i]!;
            if (call.e !== e) continue;
            if (call.kind === 'spawn') return call.parts.some(([n]) => n === name);
            if (call.kind === 'add' && call.name === name) return true;
            if (call.kind === 'remove' && call.name === name) return false;
        }
        return this.entities.get(e)?.has(name) ?? false;
    }

    /** Whether the last call recorded in this loop that adds or removes the entity's component adds it. */
    addedAgain(e: Entity, name: Name): boolean {
        for (let i = this.recorded.length - 1; i >= 0; i--) {
            const call = this.recorded[i]!;
            if (call.e === e && (call.kind === 'add' || call.kind === 'remove') && call.name === name) return call.kind === 'add';
        }
        return false;
    }

    /** The loop ended: the recorded calls apply in order, each as what it is then. */
    flush(): void {
        for (const call of this.recorded.splice(0)) {
            if (call.kind === 'spawn') {
                this.spawn(call.e, call.parts);
                continue;
            }
            const parts = this.entities.get(call.e)!;
            if (call.kind === 'add') {
                if (parts.has(call.name) && call.values !== undefined) this.counts.heldAdds++;
                this.add(call.e, call.name, call.values);
            } else if (call.kind === 'remove') this.lose(call.e, call.name);
            else if (parts.has(call.name)) {
                this.counts.recordedSets++;
                this.change(call.e, call.name, call.values);
            }
        }
    }

    /** An add: the component gained with its values, or, held, its values written as a change. */
    add(e: Entity, name: Name, values: Values | undefined): void {
        if (!this.entities.get(e)!.has(name)) this.gain(e, name, values);
        else if (values !== undefined && Object.values(values).some((v) => v !== undefined)) this.change(e, name, values);
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
    {
        weight: 2,
        arbitrary: fc.record({ kind: fc.constant('spawnMany' as const), count: fc.integer({ min: 0, max: 6 }), parts: spawnParts }),
    },
    { weight: 4, arbitrary: fc.record({ kind: fc.constant('despawn' as const), pick }) },
    {
        weight: 1,
        arbitrary: fc.record({
            kind: fc.constant('despawnMany' as const),
            picks: fc.array(pick, { minLength: 1, maxLength: 4 }),
            stale: fc.boolean(),
        }),
    },
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
    {
        weight: 5,
        arbitrary: fc.record({ kind: fc.constant('drain' as const), sub: fc.integer({ min: 0, max: subscriptionDescs.length - 1 }) }),
    },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('tick' as const) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('writeLoop' as const), x: f32 }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('offset' as const), k: f32 }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('countdown' as const), k: f32 }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('loopDeferred' as const), x: f32 }) },
    {
        weight: 2,
        arbitrary: fc.record({
            kind: fc.constant('loopCalls' as const),
            calls: fc.array(
                fc.record({
                    op: fc.constantFrom('add', 'add', 'remove', 'set', 'spawn'),
                    pick,
                    pending: fc.boolean(),
                    // A spawn made twice: the second is of the shape just planned, which JS
                    // records itself (record.ts, with a handle from the core's handouts).
                    twice: fc.boolean(),
                    name: anyName,
                    a: fc.option(aValues, { nil: undefined }),
                    b: fc.option(bValues, { nil: undefined }),
                    parts: spawnParts,
                }),
                { minLength: 1, maxLength: 8 },
            ),
        }),
    },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('resubscribe' as const), sub: fc.constantFrom(0, 3, 4) }) },
    {
        weight: 2,
        arbitrary: fc.record({
            kind: fc.constant('brokenLoop' as const),
            sub: fc.constantFrom(...loopable),
            chunks: fc.integer({ min: 0, max: 2 }),
            viaTick: fc.boolean(),
        }),
    },
);
type Command = typeof command extends fc.Arbitrary<infer C> ? C : never;

// ---- running a command on both ---------------------------------------------------------------

interface Run {
    readonly world: World;
    readonly model: Model;
    readonly subs: Subscription[];
}

function items(parts: Command & { kind: 'spawn' | 'spawnMany' }): {
    list: Parameters<World['spawn']>;
    model: [Name, Values | undefined][];
} {
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
            model.add(e, c.name, values);
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
        case 'loopCalls': {
            // Adds (of held components too), removes, sets and spawns recorded inside a loop:
            // they apply in order when it ends, each as what it is then (issue 16, bug 2).
            const query = world.query({});
            const pending: Entity[] = [];
            for (const _ of query) {
                for (const call of c.calls) {
                    const placed = live(model, call.pick);
                    const e = call.pending && pending.length ? pending[call.pick % pending.length]! : placed;
                    if (call.op === 'spawn') {
                        const { list, model: parts } = items({ kind: 'spawn', parts: call.parts });
                        for (let k = call.twice ? 2 : 1; k > 0; k--) {
                            const spawned = world.spawn(...list);
                            expectError(() => world.get(spawned, A), 'PENDING_ENTITY');
                            pending.push(spawned);
                            model.recorded.push({ kind: 'spawn', e: spawned, parts });
                        }
                        continue;
                    }
                    if (e === undefined) continue;
                    const component = byName[call.name];
                    const values: Values | undefined = call.name === 'A' ? call.a : call.name === 'B' ? call.b : undefined;
                    if (call.op === 'add') {
                        world.add(e, values === undefined ? component : component(values));
                        model.recorded.push({ kind: 'add', e, name: call.name, values });
                    } else if (call.op === 'remove') {
                        world.remove(e, component);
                        model.recorded.push({ kind: 'remove', e, name: call.name });
                    } else if (call.name !== 'T' && values !== undefined && Object.keys(values).length > 0) {
                        if (model.entities.get(e)?.has(call.name) && !model.addedAgain(e, call.name)) {
                            world.set(e, component, values); // a placed component: at once
                            model.change(e, call.name, values);
                        } else if (model.willHave(e, call.name)) {
                            // After the recorded add that brings or rewrites it (a held one's
                            // values would otherwise land over this later write).
                            world.set(e, component, values);
                            model.recorded.push({ kind: 'set', e, name: call.name, values });
                        } else {
                            expectError(() => world.set(e, component, values), 'MISSING_COMPONENT', { entity: e });
                        }
                    }
                }
                break;
            }
            query.close();
            model.flush();
            break;
        }
        case 'resubscribe': {
            // Closed and made again: it starts now (issue 16, rule 3).
            subs[c.sub]!.close();
            subs[c.sub] = subscribe(world, subscriptionDescs[c.sub]!);
            model.subs[c.sub] = startSubscription(subscriptionDescs[c.sub]!, model.entities);
            model.counts.lateSubscriptions++;
            break;
        }
        case 'brokenLoop': {
            // A chunks() loop left after `chunks` chunks, by return() or by tick(): the rows of
            // the chunks it did not reach are the next run's (issue 16, rule 5).
            const due = model.due(c.sub);
            const iterator = subs[c.sub]!.chunks();
            const visited: number[] = [];
            for (let k = 0; k < c.chunks; k++) {
                const next = iterator.next();
                if (next.done) break;
                for (const row of next.value.rows) visited.push(next.value.entities[row]!);
            }
            if (c.viaTick) world.tick();
            else iterator.return();
            expect(new Set(visited).size).toBe(visited.length);
            for (const e of visited) expect(due).toContain(e);
            model.brokenOff(c.sub, due, new Set(visited));
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

function subscribe(world: World, desc: SubscriptionModel['desc']): Subscription {
    return world.subscribe({
        ...(desc.added && { added: desc.added.map((n) => byName[n]) }),
        ...(desc.changed && { changed: desc.changed.map((n) => byName[n]) }),
        ...(desc.removed && { removed: desc.removed.map((n) => byName[n]) }),
        ...(desc.none && { none: desc.none.map((n) => byName[n]) }),
    });
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
        const runs = { count: 0, steps: 0, drains: 0, carried: 0, heldAdds: 0, recordedSets: 0, lateSubscriptions: 0 };
        await fc.assert(
            fc.asyncProperty(fc.array(command, { minLength: 50, maxLength: 150, size: 'max' }), async (commands) => {
                // Slots are reused quickly, so stale handles sit next to new entities.
                const world = await createWorld({ minFreeIndices: 1, chunkBytes: 1024 });
                try {
                    const run: Run = {
                        world,
                        model: new Model(),
                        subs: subscriptionDescs.map((desc) => subscribe(world, desc)),
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
                    for (const key of ['carried', 'heldAdds', 'recordedSets', 'lateSubscriptions'] as const)
                        runs[key] += run.model.counts[key];
                } finally {
                    world.destroy();
                }
            }),
            { seed: 20261121, numRuns: 200 },
        );
        expect(runs.count).toBe(200);
        expect(runs.drains).toBeGreaterThan(1000);
        expect(runs.steps).toBeGreaterThan(200 * 80); // about 100 commands per run
        // Issue 16's paths: rows carried past broken-off loops, recorded adds of held
        // components and sets after recorded adds, subscriptions made again late.
        console.log('model: issue 16 paths taken', JSON.stringify(runs));
        expect(Math.min(runs.carried, runs.heldAdds, runs.recordedSets, runs.lateSubscriptions)).toBeGreaterThan(20);
    });
});
