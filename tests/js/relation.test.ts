// Relations: relation(name, schema, { exclusive, acyclic, cascade }), pairs R(target) in spawn /
// add / remove / has, the pair methods of World (addPair ... pairs), pair data, exclusive
// replacement, cleanup and cascades on despawn, pair terms in queries, pair events in
// subscriptions, deferral inside loops, and the errors of all of it.
import { describe, expect, test } from 'vitest';

import {
    ChildOf,
    component,
    isComponent,
    isPair,
    isRelation,
    relation,
    tag,
    type Changes,
    type Entity,
    type Query,
    type World,
} from '../../dist/index.js';
import { expectError, snapshot, sorted, worldPerTest } from './support.js';

const newWorld = worldPerTest();

const Position = component('Position', { x: 'f32', y: 'f32' });
const Frozen = tag('Frozen');
const Likes = relation('Likes', { amount: 'f32', tags: ['u8', 2] });
const Owns = relation('Owns');
const Targets = relation('Targets', {}, { exclusive: true });
const Follows = relation('Follows', {}, { cascade: true }); // cascading, cycles allowed
const Sparse = tag('SparseMark', { storage: 'sparse' });

/** The entities a run visits, sorted. */
function visit(query: Query): number[] {
    const out: Entity[] = [];
    for (const chunk of query) for (const row of chunk.rows) out.push(chunk.entities[row]!);
    return sorted(out);
}

/** Pair events as compact tuples, in order. */
function events(changes: Changes): [string, Entity, Entity, string][] {
    return changes.pairEvents.map((e) => [e.kind, e.source, e.target, e.relation.name]);
}

describe('definitions', () => {
    test('a relation carries its name, schema, fields and options; calling it makes a pair', () => {
        expect(Likes.name).toBe('Likes');
        expect(Likes.isRelation).toBe(true);
        expect(Likes.fields.map((f) => [f.name, f.type, f.length])).toEqual([
            ['amount', 'f32', 1],
            ['tags', 'u8', 2],
        ]);
        expect(Owns.isTag).toBe(true);
        expect([Owns.exclusive, Owns.acyclic, Owns.cascade]).toEqual([false, false, false]);
        expect([Targets.exclusive, Targets.acyclic, Targets.cascade]).toEqual([true, false, false]);
        expect([Follows.exclusive, Follows.acyclic, Follows.cascade]).toEqual([false, false, true]);
        expect([ChildOf.exclusive, ChildOf.acyclic, ChildOf.cascade]).toEqual([true, true, true]);
        const pair = Likes(5, { amount: 2 });
        expect(pair).toEqual({ relation: Likes, target: 5, values: { amount: 2 } });
        expect(Owns(3).values).toBeUndefined();
        expect([isRelation(Likes), isRelation(Position), isRelation(pair)]).toEqual([true, false, false]);
        expect([isComponent(Likes), isComponent(Position)]).toEqual([false, true]);
        expect([isPair(pair), isPair(Likes), isPair(Position({ x: 1 }))]).toEqual([true, false, false]);
        expect(String(Likes)).toBe('Likes');
    });

    test('acyclic implies exclusive; contradictions and bad options are BAD_SCHEMA', () => {
        const Above = relation('Above', {}, { acyclic: true });
        expect([Above.exclusive, Above.acyclic]).toEqual([true, true]);
        expectError(() => relation('Bad', {}, { acyclic: true, exclusive: false }), 'BAD_SCHEMA', {
            operation: 'relation',
            component: 'Bad',
        });
        expectError(() => relation('Bad', {}, { exclusive: 1 as never }), 'BAD_SCHEMA', { component: 'Bad' });
        expectError(() => relation('Bad', {}, { cascading: true } as never), 'BAD_SCHEMA', { component: 'Bad' });
        expectError(() => relation('Bad', { exclusive: true } as never), 'BAD_SCHEMA', { component: 'Bad' });
        expectError(() => relation('', {}), 'BAD_SCHEMA');
        expectError(() => relation('Bad', { v: 'f16' as never }), 'BAD_SCHEMA', { field: 'v' });
    });

    test('a pair needs an entity handle as its target, and an object of values', () => {
        expectError(() => Likes(-1), 'INVALID_ARGUMENT', { component: 'Likes' });
        expectError(() => Likes(1.5), 'INVALID_ARGUMENT');
        expectError(() => Likes('2' as never), 'INVALID_ARGUMENT');
        expectError(() => Likes(2, 3 as never), 'BAD_VALUE', { component: 'Likes' });
    });
});

describe('pairs', () => {
    test('addPair, hasPair, targets, sources, target, pairs, removePair', async () => {
        const world = await newWorld();
        const [alice, bob, carol, dave] = world.spawnMany(4, Position);
        world.addPair(alice!, Likes, bob!);
        world.addPair(alice!, Likes, carol!);
        world.addPair(dave!, Likes, bob!);
        world.addPair(carol!, Likes, bob!);
        world.addPair(alice!, Likes, bob!); // already there: nothing, its place kept
        expect(world.hasPair(alice!, Likes, bob!)).toBe(true);
        expect(world.hasPair(bob!, Likes, alice!)).toBe(false);
        expect(world.hasPair(alice!, Owns, bob!)).toBe(false);
        expect(world.targets(alice!, Likes)).toEqual([bob!, carol!]);
        expect(world.target(alice!, Likes)).toBe(bob!);
        expect(world.target(bob!, Likes)).toBeUndefined();
        expect(world.targets(bob!, Likes)).toEqual([]);
        expect(world.sources(Likes, bob!)).toEqual([alice!, dave!, carol!]);
        expect(world.sources(Likes, alice!)).toEqual([]);
        expect(sorted(world.pairs(Likes).map(([s, t]) => s * 1000 + t))).toEqual(
            sorted(
                [
                    [alice!, bob!],
                    [alice!, carol!],
                    [dave!, bob!],
                    [carol!, bob!],
                ].map(([s, t]) => s! * 1000 + t!),
            ),
        );
        expect(world.pairs(Owns)).toEqual([]);
        world.removePair(dave!, Likes, bob!);
        world.removePair(dave!, Likes, bob!); // not there: nothing
        expect(world.sources(Likes, bob!)).toEqual([alice!, carol!]);
        world.removePair(alice!, Likes, bob!);
        expect(world.targets(alice!, Likes)).toEqual([carol!]);
        expect(world.target(alice!, Likes)).toBe(carol!);
        world.validate();
    });

    test('pairs never move rows nor make archetypes, however many targets', async () => {
        const world = await newWorld();
        const [source] = world.spawnMany(1, Position);
        const targets = [...world.spawnMany(500, Position)];
        const archetypes = world.stats().archetypeCount;
        const q = world.query({ all: [Position] });
        const where = () => q.entities().indexOf(source!);
        const at = where();
        for (const t of targets) world.addPair(source!, Owns, t);
        for (const t of targets) world.addPair(t, Owns, source!);
        expect(world.stats().archetypeCount).toBe(archetypes);
        expect(where()).toBe(at);
        expect(world.targets(source!, Owns)).toEqual(targets); // past the first buffer size
        expect(world.sources(Owns, source!)).toEqual(targets);
        expect(world.pairs(Owns)).toHaveLength(1000);
        world.validate();
    });

    test('spawn, add, remove and has take pairs; the bare relation means any target', async () => {
        const world = await newWorld();
        const [bob, carol] = world.spawnMany(2, Position);
        const alice = world.spawn(Position({ x: 1 }), Likes(bob!, { amount: 3 }), Owns(carol!), Owns(bob!));
        expect(world.get(alice, Position, 'x')).toBe(1);
        expect(world.getPair(alice, Likes, bob!)).toEqual({ amount: 3, tags: [0, 0] });
        expect(world.targets(alice, Owns)).toEqual([carol!, bob!]);
        expect(world.has(alice, Likes(bob!))).toBe(true);
        expect(world.has(alice, Likes(carol!))).toBe(false);
        expect(world.has(alice, Likes)).toBe(true);
        expect(world.has(bob!, Likes)).toBe(false);
        world.add(bob!, Frozen, Likes(carol!, { tags: [1, 2] }), Likes(alice));
        expect(world.has(bob!, Frozen)).toBe(true);
        expect(world.targets(bob!, Likes)).toEqual([carol!, alice]);
        expect(world.getPair(bob!, Likes, carol!, 'tags')).toEqual([1, 2]);
        world.remove(bob!, Likes(carol!), Frozen);
        expect(world.targets(bob!, Likes)).toEqual([alice]);
        expect(world.has(bob!, Frozen)).toBe(false);
        world.remove(alice, Owns); // every pair of the relation
        expect(world.targets(alice, Owns)).toEqual([]);
        expect(world.has(alice, Owns)).toBe(false);
        expect(world.has(alice, Likes)).toBe(true);
        const many = world.spawnMany(3, Position, Owns(carol!, undefined));
        expect(world.sources(Owns, carol!)).toEqual([...many]);
        world.validate();
    });

    test('pair data: initial values, getPair, setPair, arrays; initial values are not changes', async () => {
        const world = await newWorld();
        const [a, b] = world.spawnMany(2, Position);
        const sub = world.subscribe({ pairs: [Likes] });
        world.addPair(a!, Likes, b!, { amount: 1.5, tags: [3, 4] });
        expect(world.getPair(a!, Likes, b!)).toEqual({ amount: 1.5, tags: [3, 4] });
        expect(events(sub.drain())).toEqual([['added', a!, b!, 'Likes']]);
        world.setPair(a!, Likes, b!, { amount: 2 });
        world.setPair(a!, Likes, b!, 'tags', [5, 6]);
        expect(world.getPair(a!, Likes, b!, 'amount')).toBe(2);
        expect(world.getPair(a!, Likes, b!)).toEqual({ amount: 2, tags: [5, 6] });
        expect(events(sub.drain())).toEqual([['changed', a!, b!, 'Likes']]); // once per pair
        // Adding a pair that is there writes the values as a change.
        world.add(a!, Likes(b!, { amount: 9 }));
        expect(world.getPair(a!, Likes, b!, 'amount')).toBe(9);
        expect(events(sub.drain())).toEqual([['changed', a!, b!, 'Likes']]);
        // Data belongs to the pair: a new pair starts at 0.
        world.removePair(a!, Likes, b!);
        world.addPair(a!, Likes, b!);
        expect(world.getPair(a!, Likes, b!)).toEqual({ amount: 0, tags: [0, 0] });
        world.validate();
    });

    test('pair data errors: missing pair, tags, unknown fields, bad values; nothing written', async () => {
        const world = await newWorld();
        const [a, b, c] = world.spawnMany(3, Position);
        world.addPair(a!, Likes, b!, { amount: 1 });
        world.addPair(a!, Owns, b!);
        expectError(() => world.getPair(a!, Likes, c!), 'MISSING_COMPONENT', {
            operation: 'world.getPair',
            entity: a!,
            component: 'Likes',
        });
        expectError(() => world.setPair(a!, Likes, c!, { amount: 1 }), 'MISSING_COMPONENT', { entity: a!, component: 'Likes' });
        expectError(() => world.setPair(a!, Likes, c!, {}), 'MISSING_COMPONENT', { entity: a!, component: 'Likes' });
        expectError(() => world.getPair(a!, Owns, b!), 'TAG_HAS_NO_DATA', { component: 'Owns' });
        expectError(() => world.getPair(a!, Likes, b!, 'nope' as never), 'UNKNOWN_FIELD', { component: 'Likes', field: 'nope' });
        expectError(() => world.setPair(a!, Likes, b!, { amount: 2, tags: [1, 256] }), 'BAD_VALUE', { field: 'tags', entity: a! });
        expectError(() => world.setPair(a!, Likes, b!, 'tags', [1]), 'BAD_VALUE', { field: 'tags' });
        expectError(() => world.addPair(a!, Likes, c!, { amount: 'x' as never }), 'BAD_VALUE', { field: 'amount' });
        expectError(() => world.spawn(Likes(b!, { nope: 1 } as never)), 'UNKNOWN_FIELD', { component: 'Likes', field: 'nope' });
        expect(world.getPair(a!, Likes, b!)).toEqual({ amount: 1, tags: [0, 0] });
        expect(world.hasPair(a!, Likes, c!)).toBe(false);
        expect(world.stats().entityCount).toBe(3);
    });

    test('exclusive: adding another target replaces the old pair (removed, then added)', async () => {
        const world = await newWorld();
        const [hunter, deer, boar] = world.spawnMany(3, Position);
        const sub = world.subscribe({ pairs: [Targets] });
        world.addPair(hunter!, Targets, deer!);
        world.addPair(hunter!, Targets, boar!);
        expect(world.targets(hunter!, Targets)).toEqual([boar!]);
        expect(world.target(hunter!, Targets)).toBe(boar!);
        expect(world.sources(Targets, deer!)).toEqual([]);
        expect(events(sub.drain())).toEqual([
            ['added', hunter!, deer!, 'Targets'],
            ['removed', hunter!, deer!, 'Targets'],
            ['added', hunter!, boar!, 'Targets'],
        ]);
        world.add(hunter!, Targets(deer!));
        expect(world.targets(hunter!, Targets)).toEqual([deer!]);
        // Two pairs of one exclusive relation in one list is a mistake.
        expectError(() => world.spawn(Targets(deer!), Targets(boar!)), 'INVALID_ARGUMENT', { component: 'Targets' });
        expectError(() => world.spawn(Likes(deer!), Likes(deer!)), 'INVALID_ARGUMENT', { component: 'Likes' });
        expect(world.stats().entityCount).toBe(3);
    });

    test('despawning a target removes its pairs (no cascade); the sources live on', async () => {
        const world = await newWorld();
        const [a, b, target, other] = world.spawnMany(4, Position);
        world.addPair(a!, Likes, target!);
        world.addPair(a!, Likes, other!);
        world.addPair(b!, Likes, target!);
        world.addPair(target!, Likes, a!);
        const sub = world.subscribe({ pairs: [Likes], removed: [Likes] });
        world.despawn(target!);
        expect(world.isAlive(a!)).toBe(true);
        expect(world.isAlive(b!)).toBe(true);
        expect(world.targets(a!, Likes)).toEqual([other!]);
        expect(world.targets(b!, Likes)).toEqual([]);
        expect(world.has(b!, Likes)).toBe(false);
        expect(world.sources(Likes, a!)).toEqual([]);
        expect(world.pairs(Likes)).toEqual([[a!, other!]]);
        const changes = sub.drain();
        expect(sorted(changes.pairsRemoved.map((e) => e.source))).toEqual(sorted([a!, b!, target!]));
        expect(changes.pairsAdded).toEqual([]);
        // b lost its last pair, target died: both lost the relation.
        expect(sorted(changes.removedOf(Likes))).toEqual(sorted([b!, target!]));
        world.validate();
    });

    test('cascade: despawning a target despawns its sources, recursively, cycles included', async () => {
        const world = await newWorld();
        const [leader, a, b, c, outsider] = world.spawnMany(5, Position);
        world.addPair(a!, Follows, leader!);
        world.addPair(b!, Follows, a!);
        world.addPair(c!, Follows, b!);
        world.addPair(leader!, Follows, c!); // a cycle
        world.addPair(outsider!, Likes, a!); // not cascading: only the pair goes
        world.despawn(b!);
        for (const e of [leader, a, b, c]) expect(world.isAlive(e!)).toBe(false);
        expect(world.isAlive(outsider!)).toBe(true);
        expect(world.targets(outsider!, Likes)).toEqual([]);
        expect(world.pairs(Follows)).toEqual([]);
        expect(world.stats().entityCount).toBe(1);
        // A self pair is a cycle of one.
        const self = world.spawn(Follows(outsider!));
        world.addPair(self, Follows, self);
        world.despawn(outsider!);
        expect(world.isAlive(self)).toBe(false);
        expect(world.stats().entityCount).toBe(0);
        world.validate();
    });

    test('despawning a source removes its pairs', async () => {
        const world = await newWorld();
        const [a, b, c] = world.spawnMany(3, Position);
        world.addPair(a!, Likes, b!);
        world.addPair(c!, Likes, b!);
        world.addPair(a!, Follows, c!);
        world.despawn(a!);
        expect(world.sources(Likes, b!)).toEqual([c!]);
        expect(world.sources(Follows, c!)).toEqual([]);
        expect(world.isAlive(c!)).toBe(true);
        world.despawnMany([c!]);
        expect(world.sources(Likes, b!)).toEqual([]);
        world.validate();
    });
});

describe('queries with relations and pairs', () => {
    async function scene() {
        const world = await newWorld();
        const [bob, carol] = world.spawnMany(2, Position);
        const fans = [...world.spawnMany(6, Position)];
        const frozenFans = [...world.spawnMany(3, Position, Frozen)];
        const likesBob = [fans[0]!, fans[1]!, fans[2]!, frozenFans[0]!];
        const likesCarol = [fans[2]!, fans[3]!, frozenFans[1]!];
        for (const e of likesBob) world.addPair(e, Likes, bob!);
        for (const e of likesCarol) world.addPair(e, Likes, carol!);
        const all = [bob!, carol!, ...fans, ...frozenFans];
        return { world, bob: bob!, carol: carol!, fans, frozenFans, likesBob, likesCarol, all };
    }

    test('pair terms in all / none / any; target 0 and the bare relation mean any target', async () => {
        const { world, bob, carol, frozenFans, likesBob, likesCarol, all } = await scene();
        const q = (desc: Parameters<World['query']>[0]) => {
            const query = world.query(desc);
            const found = sorted(query.entities());
            expect(query.count()).toBe(found.length);
            query.close();
            return found;
        };
        const either = [...new Set([...likesBob, ...likesCarol])];
        expect(q({ all: [Position, Likes(bob)] })).toEqual(sorted(likesBob));
        expect(q({ all: [Likes(bob), Likes(carol)] })).toEqual(sorted(likesBob.filter((e) => likesCarol.includes(e))));
        expect(q({ all: [Position], none: [Likes(bob)] })).toEqual(sorted(all.filter((e) => !likesBob.includes(e))));
        expect(q({ all: [Position], any: [Likes(bob), Likes(carol)] })).toEqual(sorted(either));
        expect(q({ all: [Position], any: [Likes(bob), Frozen] })).toEqual(sorted([...new Set([...likesBob, ...frozenFans])]));
        expect(q({ all: [Likes] })).toEqual(sorted(either));
        expect(q({ all: [Likes(0)] })).toEqual(sorted(either));
        expect(q({ all: [Position], none: [Likes] })).toEqual(sorted(all.filter((e) => !either.includes(e))));
        expect(q({ all: [Position], none: [Likes(0)] })).toEqual(sorted(all.filter((e) => !either.includes(e))));
        expect(q({ all: [Position, Frozen, Likes(carol)] })).toEqual([frozenFans[1]!]);
        expect(q({ all: [Position, Owns(bob)] })).toEqual([]);
    });

    test('pair terms are checked per row (chunk slots), and such queries are never replayed', async () => {
        const { world, bob, fans, likesBob } = await scene();
        const q = world.query({ all: [Position, Likes(bob)] });
        for (const chunk of q) {
            expect(chunk.filtered).toBe(true);
            for (const row of chunk.rows) expect(world.hasPair(chunk.entities[row]!, Likes, bob)).toBe(true);
        }
        expect(visit(q)).toEqual(sorted(likesBob));
        world.addPair(fans[5]!, Likes, bob); // moves no row
        expect(visit(q)).toEqual(sorted([...likesBob, fans[5]!]));
        world.removePair(fans[0]!, Likes, bob);
        world.despawn(fans[1]!);
        expect(visit(q)).toEqual(sorted([fans[2]!, likesBob[3]!, fans[5]!]));
        const bare = world.query({ all: [Position], none: [Likes] });
        const before = visit(bare);
        world.remove(fans[2]!, Likes);
        expect(visit(bare)).toEqual(sorted([...before, fans[2]!]));
    });

    test('added / changed / removed on a relation follow its sources', async () => {
        const world = await newWorld();
        const [a, b, c] = world.spawnMany(3, Position);
        const sub = world.subscribe({ added: [Likes], removed: [Likes] });
        const changed = world.query({ changed: [Likes] });
        expect(sub.drain().empty).toBe(true);
        expect(visit(changed)).toEqual([]);
        world.addPair(a!, Likes, b!); // a's first pair: added
        world.addPair(a!, Likes, c!);
        expect([...sub.drain().entities]).toEqual([a!]);
        world.setPair(a!, Likes, c!, { amount: 1 });
        expect(visit(changed)).toEqual([a!]);
        expect(visit(changed)).toEqual([]);
        world.removePair(a!, Likes, b!); // not the last: still has Likes
        expect(sub.drain().empty).toBe(true);
        world.removePair(a!, Likes, c!); // the last one
        expect([...sub.drain().removedOf(Likes)]).toEqual([a!]);
    });

    test('addAll and removeAll take pairs and relations', async () => {
        const { world, bob, carol, fans, frozenFans } = await scene();
        world.query({ all: [Frozen] }).addAll(Owns(bob));
        expect(world.sources(Owns, bob)).toEqual(frozenFans);
        world.query({ all: [Position], none: [Frozen] }).addAll(Likes(carol, { amount: 4 }));
        expect(world.getPair(fans[5]!, Likes, carol, 'amount')).toBe(4);
        world.query({ all: [Likes(bob)] }).removeAll(Likes(carol));
        expect(world.hasPair(fans[0]!, Likes, carol)).toBe(false);
        expect(world.hasPair(fans[5]!, Likes, carol)).toBe(true);
        world.query({ all: [Position] }).removeAll(Likes);
        expect(world.pairs(Likes)).toEqual([]);
        expectError(() => world.query({ all: [Position] }).addAll(Likes as never), 'NEEDS_TARGET', { component: 'Likes' });
        world.validate();
    });

    test('pairs are not filters', async () => {
        const { world, bob } = await scene();
        expectError(() => world.query({ added: [Likes(bob) as never] }), 'INVALID_ARGUMENT');
        expectError(() => world.query({ all: [Position], writes: [Likes as never] }), 'INVALID_ARGUMENT');
        expectError(() => world.query({ all: [{ relation: Likes, target: -1 } as never] }), 'INVALID_ARGUMENT', { component: 'Likes' });
    });
});

describe('subscriptions with pair events', () => {
    test('added, removed and changed pair events, each once, in order; a pairs-only subscription', async () => {
        const world = await newWorld();
        const [a, b, c] = world.spawnMany(3, Position);
        const sub = world.subscribe({ pairs: [Likes, Owns] });
        const likesOnly = world.subscribe({ pairs: [Likes] });
        expect(sub.drain().empty).toBe(true);
        world.addPair(a!, Likes, b!);
        world.addPair(a!, Owns, c!);
        world.setPair(a!, Likes, b!, 'amount', 1);
        world.setPair(a!, Likes, b!, 'amount', 2); // the same pair in the same tick: one event
        let changes = sub.drain();
        expect(changes.empty).toBe(false);
        expect(changes.entities).toHaveLength(0);
        expect(changes.pairsAdded.map((e) => [e.source, e.target, e.relation])).toEqual([
            [a!, b!, Likes],
            [a!, c!, Owns],
        ]);
        expect(changes.pairsChanged.map((e) => [e.source, e.target, e.relation])).toEqual([[a!, b!, Likes]]);
        expect(changes.pairsRemoved).toEqual([]);
        expect(sub.drain().empty).toBe(true);
        world.tick();
        world.setPair(a!, Likes, b!, 'amount', 3); // a new tick: a new event
        world.removePair(a!, Likes, b!);
        world.despawn(c!); // takes (a, Owns, c)
        changes = sub.drain();
        expect(events(changes)).toEqual([
            ['changed', a!, b!, 'Likes'],
            ['removed', a!, b!, 'Likes'],
            ['removed', a!, c!, 'Owns'],
        ]);
        expect(sub.drain().pairEvents).toEqual([]);
        // The other subscription has its own window, and only Likes.
        expect(events(likesOnly.drain())).toEqual([
            ['added', a!, b!, 'Likes'],
            ['changed', a!, b!, 'Likes'],
            ['changed', a!, b!, 'Likes'],
            ['removed', a!, b!, 'Likes'],
        ]);
        const event = changes.pairEvents[0]!;
        expect(Object.isFrozen(event)).toBe(true);
    });

    test('a pair added and removed between two drains gives both events', async () => {
        const world = await newWorld();
        const [a, b] = world.spawnMany(2, Position);
        const sub = world.subscribe({ pairs: [Owns] });
        world.addPair(a!, Owns, b!);
        world.removePair(a!, Owns, b!);
        expect(events(sub.drain())).toEqual([
            ['added', a!, b!, 'Owns'],
            ['removed', a!, b!, 'Owns'],
        ]);
    });

    test('pairs with other terms; what is refused', async () => {
        const world = await newWorld();
        const [a, b] = world.spawnMany(2, Position);
        const sub = world.subscribe({ added: [Position], pairs: [Likes] });
        world.addPair(a!, Likes, b!);
        const changes = sub.drain();
        expect(sorted(changes.entities)).toEqual(sorted([a!, b!]));
        expect(events(changes)).toEqual([['added', a!, b!, 'Likes']]);
        expectError(() => sub.chunks(), 'INVALID_ARGUMENT', { operation: 'subscription.chunks' });
        expectError(() => world.subscribe({ pairs: [Position as never] }), 'NOT_A_RELATION', { component: 'Position' });
        expectError(() => world.subscribe({ pairs: [Likes(b!) as never] }), 'INVALID_ARGUMENT');
        expectError(() => world.query({ pairs: [Likes] } as never), 'INVALID_ARGUMENT', { operation: 'world.query' });
        expectError(() => world.subscribe({ pairs: [] }), 'INVALID_ARGUMENT');
        sub.close();
    });
});

describe('inside a loop', () => {
    test('pairs between placed entities apply at once; pairs of pending entities at the end', async () => {
        const world = await newWorld();
        const [bob, carol] = world.spawnMany(2, Position);
        const spawned: Entity[] = [];
        for (const chunk of world.query({ all: [Position] })) {
            for (const e of [...chunk.entities]) if (e !== bob) world.addPair(e, Likes, bob!);
            expect(world.hasPair(carol!, Likes, bob!)).toBe(true); // at once: no row moves
            const child = world.spawn(Position, Likes(bob!, { amount: 7 }));
            const other = world.spawn(Position);
            world.addPair(other, Likes, carol!, { tags: [1, 1] });
            world.addPair(carol!, Owns, other); // a pending target
            spawned.push(child, other);
            expectError(() => world.getPair(child, Likes, bob!), 'PENDING_ENTITY', { entity: child });
        }
        const [child, other] = spawned;
        expect(world.getPair(child!, Likes, bob!)).toEqual({ amount: 7, tags: [0, 0] });
        expect(world.getPair(other!, Likes, carol!)).toEqual({ amount: 0, tags: [1, 1] });
        expect(world.targets(carol!, Owns)).toEqual([other!]);
        expect(world.sources(Likes, bob!)).toEqual([carol!, child!]);
        world.validate();
    });

    test('despawning a cascade target in a loop despawns its sources when the loop ends', async () => {
        const world = await newWorld();
        const [leader, a, b] = world.spawnMany(3, Position);
        world.addPair(a!, Follows, leader!);
        world.addPair(b!, Follows, a!);
        for (const _ of world.query({ all: [Position] })) {
            world.despawn(leader!);
            expect(world.isAlive(b!)).toBe(true);
        }
        expect([leader, a, b].map((e) => world.isAlive(e!))).toEqual([false, false, false]);
    });
});

describe('errors', () => {
    test('stale sources and targets are named; not a relation; bare relations; nothing changes', async () => {
        const world = await newWorld();
        const [a, b, c] = world.spawnMany(3, Position);
        const dead = world.spawn(Position);
        world.despawn(dead);
        world.addPair(a!, Likes, b!, { amount: 1 });
        const state = () => [snapshot(world, [a!, b!, c!, dead], [Position, Frozen]), world.pairs(Likes), world.pairs(Owns)];
        const before = state();
        const ctx = (entity: Entity) => ({ entity, component: 'Likes' });
        expectError(() => world.addPair(dead, Likes, b!), 'STALE_ENTITY', { operation: 'world.addPair', ...ctx(dead) });
        const target = expectError(() => world.addPair(a!, Likes, dead), 'STALE_ENTITY', ctx(dead));
        expect(target.message).toContain('target');
        expectError(() => world.addPair(a!, Likes, 0), 'NEEDS_TARGET', { component: 'Likes' });
        expectError(() => world.removePair(a!, Likes, dead), 'STALE_ENTITY', ctx(dead));
        expectError(() => world.hasPair(dead, Likes, a!), 'STALE_ENTITY', ctx(dead));
        expectError(() => world.getPair(a!, Likes, dead), 'STALE_ENTITY', ctx(dead));
        expectError(() => world.setPair(dead, Likes, b!, { amount: 3 }), 'STALE_ENTITY', ctx(dead));
        expectError(() => world.targets(dead, Likes), 'STALE_ENTITY', ctx(dead));
        expectError(() => world.target(dead, Likes), 'STALE_ENTITY', ctx(dead));
        expectError(() => world.sources(Likes, dead), 'STALE_ENTITY', ctx(dead));
        expectError(() => world.spawn(Position, Likes(dead)), 'STALE_ENTITY', ctx(dead));
        expectError(() => world.spawnMany(5, Position, Likes(b!), Owns(dead)), 'STALE_ENTITY', { entity: dead, component: 'Owns' });
        expectError(() => world.add(c!, Frozen, Likes(dead)), 'STALE_ENTITY', ctx(dead));
        expectError(() => world.add(dead, Likes(b!)), 'STALE_ENTITY', { entity: dead });
        expectError(() => world.has(a!, Likes(dead)), 'STALE_ENTITY', ctx(dead));
        expectError(() => world.remove(a!, Likes(dead)), 'STALE_ENTITY', ctx(dead));
        world.add(c!, Frozen);
        expectError(() => world.remove(c!, Frozen, Likes(dead)), 'STALE_ENTITY', ctx(dead));
        expect(world.has(c!, Frozen)).toBe(true); // checked before anything was removed
        world.remove(c!, Frozen);
        // Not a relation, or a relation without a target.
        expectError(() => world.addPair(a!, Position as never, b!), 'NOT_A_RELATION', { entity: a!, component: 'Position' });
        expectError(() => world.targets(a!, Position as never), 'NOT_A_RELATION', { component: 'Position' });
        expectError(
            () => world.spawn(Position, Position({ x: 1 }) as never, { relation: Position, target: b! } as never),
            'INVALID_ARGUMENT',
        );
        expectError(() => world.spawn(Position, { relation: Position, target: b! } as never), 'NOT_A_RELATION', { component: 'Position' });
        expectError(() => world.spawn(Position, Likes as never), 'NEEDS_TARGET', { operation: 'world.spawn', component: 'Likes' });
        expectError(() => world.add(c!, Likes as never), 'NEEDS_TARGET', { entity: c!, component: 'Likes' });
        expectError(() => world.get(a!, Likes as never), 'NEEDS_TARGET', { entity: a!, component: 'Likes' });
        expectError(() => world.set(a!, Likes as never, { amount: 1 } as never), 'NEEDS_TARGET', { entity: a!, component: 'Likes' });
        expectError(() => world.addPair(a!, 'Likes' as never, b!), 'INVALID_ARGUMENT');
        expectError(() => world.addPair(a!, Likes, -1), 'INVALID_ARGUMENT');
        expectError(() => world.addPair(1.5, Likes, b!), 'INVALID_ARGUMENT');
        expect(state()).toEqual(before);
        world.validate();
    });

    test('a relation and its pairs live in their own world', async () => {
        const one = await newWorld();
        const two = await newWorld();
        const [a, b] = one.spawnMany(2, Position);
        const [c, d] = two.spawnMany(2, Position);
        one.addPair(a!, Likes, b!, { amount: 1 });
        two.addPair(c!, Likes, d!, { amount: 2 });
        expect(one.getPair(a!, Likes, b!, 'amount')).toBe(1);
        expect(two.getPair(c!, Likes, d!, 'amount')).toBe(2);
        expect(one.pairs(Likes)).toEqual([[a!, b!]]);
        expect(two.pairs(Likes)).toEqual([[c!, d!]]);
    });

    test('sparse components and relations together', async () => {
        const world = await newWorld();
        const [a, b] = world.spawnMany(2, Position);
        world.add(a!, Sparse, Likes(b!));
        const q = world.query({ all: [Sparse, Likes(b!)] });
        expect([...q.entities()]).toEqual([a!]);
        world.remove(a!, Sparse);
        expect([...q.entities()]).toEqual([]);
    });
});
