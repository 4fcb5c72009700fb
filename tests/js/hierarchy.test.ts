// Hierarchies: the built-in ChildOf relation (exclusive, acyclic, cascade) and the World methods
// on it: setParent (with `before`), parentOf, childrenOf (ordered), descendants and walk
// (depth-first pre-order, with depths and parents), cascading despawns, cycles refused, pairs of
// entities spawned inside a loop, and the README's transform propagation.
import { readFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';

import { ChildOf, component, createWorld, tag, type Entity, type World } from '../../dist/index.js';
import { expectError, snapshot, sorted, worldPerTest } from './support.js';

const newWorld = worldPerTest();

const Position = component('Position', { x: 'f32', y: 'f32' });
const Frozen = tag('Frozen');

/**
 * A tree from nested arrays: [name, ...children]. Returns the entities by name, spawned in
 * pre-order with ChildOf(parent).
 */
type Tree = [string, ...Tree[]];
function build(world: World, tree: Tree, parent?: Entity, out = new Map<string, Entity>()): Map<string, Entity> {
    const [name, ...children] = tree;
    const entity = parent === undefined ? world.spawn(Position) : world.spawn(Position, ChildOf(parent));
    out.set(name, entity);
    for (const child of children) build(world, child, entity, out);
    return out;
}

const shape: Tree = ['root', ['a', ['a1'], ['a2', ['a2x']]], ['b'], ['c', ['c1', ['c1x', ['c1xy']]]]];

describe('parents and children', () => {
    test('setParent, parentOf, childrenOf in order; re-parenting; clearing', async () => {
        const world = await newWorld();
        const [p, q, a, b, c] = world.spawnMany(5, Position);
        world.setParent(a!, p!);
        world.setParent(b!, p!);
        world.setParent(c!, p!);
        expect(world.childrenOf(p!)).toEqual([a!, b!, c!]);
        expect(world.parentOf(b!)).toBe(p!);
        expect(world.parentOf(p!)).toBeUndefined();
        expect(world.has(b!, ChildOf)).toBe(true);
        expect(world.has(b!, ChildOf(p!))).toBe(true);
        world.setParent(b!, p!); // the same parent: keeps its place
        expect(world.childrenOf(p!)).toEqual([a!, b!, c!]);
        world.setParent(a!, q!); // moves: last of its new parent, gone from the old one
        expect(world.childrenOf(p!)).toEqual([b!, c!]);
        expect(world.childrenOf(q!)).toEqual([a!]);
        expect(world.parentOf(a!)).toBe(q!);
        expect(world.targets(a!, ChildOf)).toEqual([q!]); // exclusive
        world.setParent(c!, undefined);
        world.setParent(b!, 0);
        expect(world.childrenOf(p!)).toEqual([]);
        expect(world.parentOf(c!)).toBeUndefined();
        expect(world.has(c!, ChildOf)).toBe(false);
        world.setParent(c!, undefined); // a root already: nothing
        world.validate();
    });

    test('before: a child goes in front of a sibling; placePair reorders; errors change nothing', async () => {
        const world = await newWorld();
        const [p, other, a, b, c, d] = world.spawnMany(6, Position);
        world.setParent(a!, p!);
        world.setParent(b!, p!);
        world.setParent(c!, p!, a!); // new child, in front of a
        expect(world.childrenOf(p!)).toEqual([c!, a!, b!]);
        world.setParent(b!, p!, c!); // a child already: moves in front of c
        expect(world.childrenOf(p!)).toEqual([b!, c!, a!]);
        world.setParent(d!, other!);
        world.setParent(d!, p!, a!); // from another parent, straight into place
        expect(world.childrenOf(p!)).toEqual([b!, c!, d!, a!]);
        expect(world.childrenOf(other!)).toEqual([]);
        world.placePair(b!, ChildOf, p!); // to the end
        expect(world.childrenOf(p!)).toEqual([c!, d!, a!, b!]);
        world.placePair(a!, ChildOf, p!, c!);
        expect(world.childrenOf(p!)).toEqual([a!, c!, d!, b!]);
        world.setParent(c!, p!, c!); // before itself: stays
        expect(world.childrenOf(p!)).toEqual([a!, c!, d!, b!]);
        const before = [world.childrenOf(p!), world.childrenOf(other!), world.parentOf(other!)];
        expectError(() => world.setParent(other!, p!, other!), 'MISSING_COMPONENT', { entity: other!, component: 'ChildOf' });
        world.setParent(a!, other!);
        expectError(() => world.setParent(b!, p!, a!), 'MISSING_COMPONENT', {
            operation: 'world.setParent',
            entity: a!,
            component: 'ChildOf',
        });
        expectError(() => world.placePair(b!, ChildOf, p!, a!), 'MISSING_COMPONENT', { entity: a!, component: 'ChildOf' });
        expectError(() => world.placePair(other!, ChildOf, p!), 'MISSING_COMPONENT', { entity: other!, component: 'ChildOf' });
        expectError(() => world.setParent(b!, undefined, c!), 'INVALID_ARGUMENT', { entity: b! });
        world.setParent(a!, p!, c!);
        expect([world.childrenOf(p!), world.childrenOf(other!), world.parentOf(other!)]).toEqual(before);
        world.validate();
    });

    test('a parent cannot become its own descendant: CYCLE, nothing changes', async () => {
        const world = await newWorld();
        const tree = build(world, shape);
        const e = (name: string) => tree.get(name)!;
        const state = () => [...tree.values()].map((x) => [world.parentOf(x), world.childrenOf(x)]);
        const before = state();
        expectError(() => world.setParent(e('root'), e('c1xy')), 'CYCLE', {
            operation: 'world.setParent',
            entity: e('root'),
            component: 'ChildOf',
        });
        expectError(() => world.setParent(e('a'), e('a2x')), 'CYCLE', { entity: e('a') });
        expectError(() => world.setParent(e('b'), e('b')), 'CYCLE', { entity: e('b') });
        expectError(() => world.setParent(e('a'), e('a2'), e('a1')), 'MISSING_COMPONENT', { entity: e('a1') }); // before is checked first
        expectError(() => world.add(e('root'), ChildOf(e('a1'))), 'CYCLE', { entity: e('root') });
        expectError(() => world.add(e('a'), Frozen, ChildOf(e('a2x'))), 'CYCLE', { operation: 'world.add', entity: e('a') });
        expect(world.has(e('a'), Frozen)).toBe(false); // the cycle is found before anything is added
        expectError(() => world.addPair(e('c'), ChildOf, e('c1x')), 'CYCLE', { operation: 'world.addPair', entity: e('c') });
        expect(state()).toEqual(before);
        // Across branches is fine.
        world.setParent(e('c'), e('a2x'));
        expect(world.descendants(e('a'))).toEqual(['a1', 'a2', 'a2x', 'c', 'c1', 'c1x', 'c1xy'].map(e));
        world.validate();
    });

    test('stale children, parents and siblings are named', async () => {
        const world = await newWorld();
        const [p, a] = world.spawnMany(2, Position);
        const dead = world.spawn(Position);
        world.despawn(dead);
        world.setParent(a!, p!);
        expectError(() => world.setParent(dead, p!), 'STALE_ENTITY', { entity: dead, component: 'ChildOf' });
        expectError(() => world.setParent(a!, dead), 'STALE_ENTITY', { entity: dead, component: 'ChildOf' });
        expectError(() => world.setParent(a!, p!, dead), 'STALE_ENTITY', { entity: dead });
        expectError(() => world.setParent(dead, undefined), 'STALE_ENTITY', { entity: dead });
        expectError(() => world.parentOf(dead), 'STALE_ENTITY', { entity: dead });
        expectError(() => world.childrenOf(dead), 'STALE_ENTITY', { entity: dead });
        expectError(() => world.descendants(dead), 'STALE_ENTITY', { entity: dead });
        expectError(() => world.walk(dead, () => {}), 'STALE_ENTITY', { entity: dead });
        expectError(() => world.walk(p!, 3 as never), 'INVALID_ARGUMENT');
        expectError(() => world.setParent(a!, -2), 'INVALID_ARGUMENT');
        expect(world.parentOf(a!)).toBe(p!);
    });
});

describe('walking down', () => {
    test('descendants: depth first, pre-order, children in order; walk gives depths and parents', async () => {
        const world = await newWorld();
        const tree = build(world, shape);
        const name = new Map([...tree].map(([n, e]) => [e, n]));
        const names = (list: Entity[]) => list.map((e) => name.get(e));
        expect(names(world.descendants(tree.get('root')!))).toEqual(['a', 'a1', 'a2', 'a2x', 'b', 'c', 'c1', 'c1x', 'c1xy']);
        expect(names(world.descendants(tree.get('c')!))).toEqual(['c1', 'c1x', 'c1xy']);
        expect(world.descendants(tree.get('b')!)).toEqual([]);
        const visits: [string | undefined, number, string | undefined][] = [];
        world.walk(tree.get('root')!, (entity, depth, parent) => visits.push([name.get(entity), depth, name.get(parent)]));
        expect(visits).toEqual([
            ['a', 1, 'root'],
            ['a1', 2, 'a'],
            ['a2', 2, 'a'],
            ['a2x', 3, 'a2'],
            ['b', 1, 'root'],
            ['c', 1, 'root'],
            ['c1', 2, 'c'],
            ['c1x', 3, 'c1'],
            ['c1xy', 4, 'c1x'],
        ]);
        // Reordering children reorders the walk.
        world.setParent(tree.get('c')!, tree.get('root')!, tree.get('a')!);
        expect(names(world.descendants(tree.get('root')!))).toEqual(['c', 'c1', 'c1x', 'c1xy', 'a', 'a1', 'a2', 'a2x', 'b']);
    });

    test('walk takes its list first: visit may change the hierarchy', async () => {
        const world = await newWorld();
        const tree = build(world, shape);
        const seen: Entity[] = [];
        world.walk(tree.get('root')!, (entity) => {
            seen.push(entity);
            world.spawn(Position, ChildOf(entity));
        });
        expect(seen).toHaveLength(9);
        expect(world.descendants(tree.get('root')!)).toHaveLength(18);
    });

    test('wide and deep hierarchies: lists past any buffer size', async () => {
        const world = await newWorld();
        const root = world.spawn(Position);
        const children = [...world.spawnMany(3000, Position, ChildOf(root))];
        expect(world.childrenOf(root)).toEqual(children);
        let parent = children[1234]!;
        const chain: Entity[] = [];
        for (let i = 0; i < 2000; i++) chain.push((parent = world.spawn(Position, ChildOf(parent))));
        const all = world.descendants(root);
        expect(all).toHaveLength(5000);
        expect(all.slice(1235, 3235)).toEqual(chain);
        const depths: number[] = [];
        world.walk(root, (_, depth) => depths.push(depth));
        expect(Math.max(...depths)).toBe(2001);
        expect(world.descendants(chain[0]!)).toEqual(chain.slice(1));
    });
});

describe('despawning', () => {
    test('despawning a parent despawns its subtree (cascade), however deep; siblings stay', async () => {
        const world = await newWorld();
        const tree = build(world, shape);
        const e = (name: string) => tree.get(name)!;
        const outside = world.spawn(Position);
        world.despawn(e('a'));
        expect(['a', 'a1', 'a2', 'a2x'].map((n) => world.isAlive(e(n)))).toEqual([false, false, false, false]);
        expect(['root', 'b', 'c', 'c1xy'].map((n) => world.isAlive(e(n)))).toEqual([true, true, true, true]);
        expect(world.childrenOf(e('root'))).toEqual([e('b'), e('c')]);
        let parent = outside;
        const chain: Entity[] = [];
        for (let i = 0; i < 5000; i++) chain.push((parent = world.spawn(Position, ChildOf(parent))));
        world.despawn(outside);
        expect(chain.some((x) => world.isAlive(x))).toBe(false);
        expect(world.stats().entityCount).toBe(6); // root, b, c, c1, c1x, c1xy
        world.validate();
    });

    test('despawnMany with parents and children in one list', async () => {
        const world = await newWorld();
        const tree = build(world, shape);
        const e = (name: string) => tree.get(name)!;
        world.despawnMany([e('a2x'), e('a'), e('c1')]);
        expect(world.stats().entityCount).toBe(3); // root, b, c
        expect(world.descendants(e('root'))).toEqual([e('b'), e('c')]);
        world.validate();
    });

    test('a removal subscription hears of every entity of a despawned subtree', async () => {
        const world = await newWorld();
        const tree = build(world, shape);
        const sub = world.subscribe({ removed: [Position], pairs: [ChildOf] });
        world.despawn(tree.get('c')!);
        const changes = sub.drain();
        const subtree = ['c', 'c1', 'c1x', 'c1xy'].map((n) => tree.get(n)!);
        expect(sorted(changes.removedOf(Position))).toEqual(sorted(subtree));
        expect(sorted(changes.pairsRemoved.map((x) => x.source))).toEqual(sorted(subtree));
    });
});

describe('with loops, queries and subscriptions', () => {
    test('spawn a child inside a loop and parent it, both ways', async () => {
        const world = await newWorld();
        const parents = [...world.spawnMany(3, Position, Frozen)];
        const made: Entity[][] = [];
        for (const chunk of world.query({ all: [Frozen] })) {
            for (const parent of [...chunk.entities]) {
                const first = world.spawn(Position, ChildOf(parent));
                const second = world.spawn(Position);
                world.setParent(second, parent);
                const third = world.spawn(Position);
                world.add(third, ChildOf(parent));
                made.push([first, second, third]);
            }
            expect(world.childrenOf(parents[0]!)).toEqual([]); // not yet
        }
        parents.forEach((parent, i) => {
            const [first, second, third] = made[i]!;
            expect(world.childrenOf(parent)).toEqual([first!, second!, third!]);
        });
        world.despawn(parents[0]!);
        expect(made[0]!.some((e) => world.isAlive(e))).toBe(false);
        world.validate();
    });

    test('inside a loop, clearing a parent and setting another keeps the last word', async () => {
        const world = await newWorld();
        const [p, q, c, d] = world.spawnMany(4, Position);
        world.setParent(c!, p!);
        world.setParent(d!, p!);
        for (const _ of world.query({ all: [Position] })) {
            world.setParent(c!, undefined);
            world.setParent(c!, q!);
            world.remove(d!, ChildOf); // every pair of the relation
            world.setParent(d!, q!);
        }
        expect(world.parentOf(c!)).toBe(q!);
        expect(world.parentOf(d!)).toBe(q!);
        expect(world.childrenOf(q!)).toEqual([c!, d!]);
    });

    test('re-parenting inside a loop applies at once (no row moves)', async () => {
        const world = await newWorld();
        const [p, q] = world.spawnMany(2, Position, Frozen);
        const kids = [...world.spawnMany(4, Position, ChildOf(p!))];
        for (const chunk of world.query({ all: [Position], none: [Frozen] })) {
            for (const row of chunk.rows) world.setParent(chunk.entities[row]!, q!);
            expect(world.childrenOf(q!)).toHaveLength(chunk.rowCount);
        }
        expect(world.childrenOf(q!)).toEqual(kids);
        expect(world.childrenOf(p!)).toEqual([]);
    });

    test('queries: roots, children of one parent, entities with a parent', async () => {
        const world = await newWorld();
        const tree = build(world, shape);
        const e = (name: string) => tree.get(name)!;
        const roots = world.query({ all: [Position], none: [ChildOf] });
        expect([...roots.entities()]).toEqual([e('root')]);
        expect(sorted(world.query({ all: [Position, ChildOf(e('a'))] }).entities())).toEqual(sorted([e('a1'), e('a2')]));
        expect(world.query({ all: [ChildOf] }).count()).toBe(9);
        world.setParent(e('c'), undefined);
        expect(sorted(roots.entities())).toEqual(sorted([e('root'), e('c')]));
    });

    test('re-parenting gives a removed and an added pair event', async () => {
        const world = await newWorld();
        const [p, q, child] = world.spawnMany(3, Position);
        world.setParent(child!, p!);
        const sub = world.subscribe({ pairs: [ChildOf] });
        world.setParent(child!, q!);
        world.setParent(child!, undefined);
        expect(sub.drain().pairEvents.map((x) => [x.kind, x.source, x.target])).toEqual([
            ['removed', child!, p!],
            ['added', child!, q!],
            ['removed', child!, q!],
        ]);
    });

    test('ChildOf is registered per world on first use, like any component (reads do not register)', async () => {
        const world = await newWorld();
        const before = world.stats().componentCount;
        const e = world.spawn(Position);
        expect(world.parentOf(e)).toBeUndefined();
        expect(world.childrenOf(e)).toEqual([]);
        expect(world.stats().componentCount).toBe(before + 1);
        const other = await newWorld();
        const [a, b] = other.spawnMany(2, Position);
        const registered = other.stats().componentCount;
        other.setParent(b!, a!);
        expect(other.stats().componentCount).toBe(registered + 1);
        expect(other.childrenOf(a!)).toEqual([b!]);
        expect(snapshot(world, [e], [Position])).toEqual({ entities: [[e, { Position: { x: 0, y: 0 } }]], count: 1 });
    });
});

// ---- the README example, verbatim ---------------------------------------------------------

describe('transform propagation (the README example)', () => {
    test('world positions follow the hierarchy', async () => {
        // --- README: transform propagation ---
        const Local = component('Local', { x: 'f32', y: 'f32' }); // relative to the parent
        const Global = component('Global', { x: 'f32', y: 'f32' }); // in the world

        const world = await createWorld();
        const ship = world.spawn(Local({ x: 100, y: 50 }), Global);
        const turret = world.spawn(Local({ x: 10 }), Global, ChildOf(ship));
        const barrel = world.spawn(Local({ x: 5, y: 1 }), Global, ChildOf(turret));

        const roots = world.query({ all: [Local, Global], none: [ChildOf] });
        function propagate() {
            for (const root of roots.entities()) {
                world.set(root, Global, world.get(root, Local));
                world.walk(root, (entity, depth, parent) => {
                    const local = world.get(entity, Local);
                    const origin = world.get(parent, Global);
                    world.set(entity, Global, { x: origin.x + local.x, y: origin.y + local.y });
                });
            }
        }
        propagate();
        world.get(barrel, Global); // { x: 115, y: 51 }
        // --- end of the README example ---
        try {
            expect(world.get(barrel, Global)).toEqual({ x: 115, y: 51 });
            expect(world.get(turret, Global)).toEqual({ x: 110, y: 50 });
            world.set(ship, Local, { x: 0 });
            world.setParent(barrel, ship);
            propagate();
            expect(world.get(barrel, Global)).toEqual({ x: 5, y: 51 });
            expect(world.get(turret, Global)).toEqual({ x: 10, y: 50 });
            world.despawn(ship);
            expect([turret, barrel].map((x) => world.isAlive(x))).toEqual([false, false]);
        } finally {
            world.destroy();
        }
    });

    test('the README shows the same code as the test above', () => {
        const lines = (text: string) =>
            text
                .split('\n')
                .map((line) => line.trim())
                .filter((line) => line !== '');
        const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
        const start = readme.indexOf("const Local = component('Local'");
        const end = readme.indexOf('world.get(barrel, Global); // { x: 115, y: 51 }');
        expect(start).toBeGreaterThan(0);
        expect(end).toBeGreaterThan(start);
        const self = readFileSync(new URL(import.meta.url), 'utf8');
        const from = self.indexOf('// --- README: transform propagation ---');
        const to = self.indexOf('// --- end of the README example ---');
        const test = lines(self.slice(from, to)).slice(1); // without the marker line
        expect(lines(readme.slice(start, end)).concat(['world.get(barrel, Global); // { x: 115, y: 51 }'])).toEqual(test);
    });
});
