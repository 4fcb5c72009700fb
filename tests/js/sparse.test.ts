// Sparse components: component(..., { storage: 'sparse' }) and sparse tags. Adding and removing
// them moves no row and makes no archetype; they work with every per-entity call, with every
// query term and filter, with subscriptions and with deferral; chunk-level calls refuse them.
import { describe, expect, test } from 'vitest';

import { component, isComponent, tag, type Chunk, type Entity, type Query, type World } from '../../dist/index.js';
import { expectError, snapshot, sorted, worldPerTest } from './support.js';

const newWorld = worldPerTest();

const Position = component('Position', { x: 'f32', y: 'f32' });
const Frozen = tag('Frozen');
const Selected = tag('Selected', { storage: 'sparse' });
const Damage = component('Damage', { amount: 'f32', from: 'u32', history: ['i16', 3] }, { storage: 'sparse' });
const Marked = tag('Marked', { storage: 'sparse' });

/** Where each entity sits (archetype, chunk, row), found by iterating a plain query. */
function locations(world: World, entities: readonly Entity[]): string[] {
    const at = new Map<Entity, string>();
    const q = world.query({ all: [Position] });
    for (const chunk of q) chunk.entities.forEach((e, row) => at.set(e, `${chunk.archetype}/${chunk.index}/${row}`));
    q.close();
    return entities.map((e) => at.get(e) ?? 'none');
}

/** The entities a run visits (rows of `slots`), in visit order. */
function visited(query: Query): Entity[] {
    const out: Entity[] = [];
    for (const chunk of query) for (const row of chunk.rows) out.push(chunk.entities[row]!);
    return out;
}

describe('definitions', () => {
    test('storage is table by default and sparse on request, for components and tags', () => {
        expect(Position.storage).toBe('table');
        expect(Frozen.storage).toBe('table');
        expect(Selected.storage).toBe('sparse');
        expect(Damage.storage).toBe('sparse');
        expect(Damage.isTag).toBe(false);
        expect(Selected.isTag).toBe(true);
        expect(isComponent(Damage)).toBe(true);
        expect(component('Explicit', { v: 'u8' }, { storage: 'table' }).storage).toBe('table');
    });

    test('bad options are BAD_SCHEMA', () => {
        expectError(() => component('Bad', { v: 'u8' }, { storage: 'heap' as never }), 'BAD_SCHEMA', { component: 'Bad' });
        expectError(() => component('Bad', { v: 'u8' }, { sparse: true } as never), 'BAD_SCHEMA', { component: 'Bad' });
        expectError(() => tag('Bad', 'sparse' as never), 'BAD_SCHEMA', { component: 'Bad' });
        expectError(() => tag('Bad', { storage: 1 as never }), 'BAD_SCHEMA');
    });
});

describe('per entity', () => {
    test('adding and removing a sparse component moves no row and makes no archetype', async () => {
        const world = await newWorld({ chunkBytes: 1024 });
        const entities = [...world.spawnMany(200, Position)];
        const before = locations(world, entities);
        const archetypes = world.stats().archetypeCount;
        for (const e of entities.slice(0, 120)) world.add(e, Selected);
        for (const e of entities.slice(50, 150)) world.add(e, Damage({ amount: e }));
        expect(locations(world, entities)).toEqual(before);
        expect(world.stats().archetypeCount).toBe(archetypes);
        expect(entities.map((e) => world.has(e, Selected))).toEqual(entities.map((_, i) => i < 120));
        expect(world.get(entities[60]!, Damage, 'amount')).toBe(entities[60]!);
        for (const e of entities.slice(0, 100)) world.remove(e, Selected, Damage);
        expect(locations(world, entities)).toEqual(before);
        expect(world.stats().archetypeCount).toBe(archetypes);
        expect(entities.filter((e) => world.has(e, Selected))).toEqual(entities.slice(100, 120));
        expect(entities.filter((e) => world.has(e, Damage))).toEqual(entities.slice(100, 150));
        // The measure works: a table tag does move rows and make an archetype.
        world.add(entities[0]!, Frozen);
        expect(world.stats().archetypeCount).toBe(archetypes + 1);
        expect(locations(world, entities)).not.toEqual(before);
        world.validate();
    });

    test('get, set, arrays and initial values, like any component', async () => {
        const world = await newWorld();
        const e = world.spawn(Position, Damage({ amount: 2.5, from: 7, history: [1, -2, 3] }));
        expect(world.get(e, Damage)).toEqual({ amount: 2.5, from: 7, history: [1, -2, 3] });
        world.set(e, Damage, { amount: 4 });
        world.set(e, Damage, 'history', [9, 8, 7]);
        expect(world.get(e, Damage)).toEqual({ amount: 4, from: 7, history: [9, 8, 7] });
        expect(world.get(e, Damage, 'history')).toEqual([9, 8, 7]);
        // Fields start at 0; data goes with the membership.
        const f = world.spawn(Position);
        world.add(f, Damage);
        expect(world.get(f, Damage)).toEqual({ amount: 0, from: 0, history: [0, 0, 0] });
        world.set(f, Damage, { from: 3 });
        world.remove(f, Damage);
        world.add(f, Damage({ amount: 1 }));
        expect(world.get(f, Damage)).toEqual({ amount: 1, from: 0, history: [0, 0, 0] });
        expect(world.get(e, Damage, 'from')).toBe(7); // untouched by f's coming and going
        // Adding it again keeps the data and writes the given values as a change.
        world.add(e, Damage({ from: 11 }));
        expect(world.get(e, Damage)).toEqual({ amount: 4, from: 11, history: [9, 8, 7] });
        world.validate();
    });

    test('spawnMany with sparse components and values', async () => {
        const world = await newWorld({ chunkBytes: 1024 });
        const handles = world.spawnMany(300, Position({ x: 2 }), Damage({ amount: 5, history: [1, 2, 3] }), Selected);
        for (const e of [handles[0]!, handles[150]!, handles[299]!]) {
            expect(world.get(e, Damage)).toEqual({ amount: 5, from: 0, history: [1, 2, 3] });
            expect(world.get(e, Position, 'x')).toBe(2);
            expect(world.has(e, Selected)).toBe(true);
        }
        const sparseOnly = world.spawnMany(3, Marked, Damage({ from: 9 }));
        expect([...sparseOnly].map((e) => world.get(e, Damage, 'from'))).toEqual([9, 9, 9]);
        expect(world.query({ all: [Damage] }).count()).toBe(303);
        world.validate();
    });

    test('despawning an entity takes its sparse components with it', async () => {
        const world = await newWorld();
        const [a, b] = world.spawnMany(2, Position, Selected, Damage);
        const sub = world.subscribe({ removed: [Selected, Damage] });
        world.despawn(a!);
        const changes = sub.drain();
        expect([...changes.removedOf(Selected)]).toEqual([a!]);
        expect([...changes.removedOf(Damage)]).toEqual([a!]);
        expect(world.query({ all: [Selected] }).entities()).toEqual(new Uint32Array([b!]));
        // A new entity in a's recycled slot does not inherit anything.
        const fresh = world.spawnMany(5000, Position);
        for (const e of fresh) expect(world.has(e, Selected)).toBe(false);
        world.validate();
    });

    test('errors: stale handles, missing sparse components; nothing changes', async () => {
        const world = await newWorld();
        const live = world.spawn(Position, Damage({ amount: 1 }));
        const other = world.spawn(Position);
        const dead = world.spawn(Position, Selected);
        world.despawn(dead);
        const state = () => snapshot(world, [live, other, dead], [Position, Damage, Selected]);
        const before = state();
        expectError(() => world.add(dead, Selected), 'STALE_ENTITY', { entity: dead, component: 'Selected' });
        expectError(() => world.get(dead, Damage), 'STALE_ENTITY', { entity: dead });
        expectError(() => world.has(dead, Selected), 'STALE_ENTITY', { entity: dead });
        expectError(() => world.get(other, Damage), 'MISSING_COMPONENT', { entity: other, component: 'Damage' });
        expectError(() => world.set(other, Damage, { amount: 1 }), 'MISSING_COMPONENT', { entity: other, component: 'Damage' });
        expectError(() => world.set(live, Damage, { amount: 1, from: -1 }), 'BAD_VALUE', { entity: live, field: 'from' });
        expectError(() => world.add(other, Damage({ history: [1, 2] })), 'BAD_VALUE', { component: 'Damage', field: 'history' });
        expect(state()).toEqual(before);
        world.validate();
    });
});

describe('queries', () => {
    async function scene() {
        const world = await newWorld({ chunkBytes: 1024 });
        const plain = [...world.spawnMany(100, Position)];
        const frozen = [...world.spawnMany(100, Position, Frozen)];
        const selected = [...plain.slice(0, 30), ...frozen.slice(0, 10)];
        for (const e of selected) world.add(e, Selected);
        const damaged = [...plain.slice(20, 40), ...frozen.slice(90)];
        for (const e of damaged) world.add(e, Damage({ amount: 1 }));
        const loose = world.spawn(Selected); // no table component at all
        return { world, plain, frozen, selected, damaged, loose };
    }

    test('all / none / any with sparse terms', async () => {
        const { world, plain, frozen, selected, damaged, loose } = await scene();
        const everything = [...plain, ...frozen];
        const has = (list: Entity[]) => (e: Entity) => list.includes(e);
        const run = (desc: Parameters<World['query']>[0]) => {
            const q = world.query(desc);
            const entities = sorted(q.entities());
            expect(q.count()).toBe(entities.length);
            q.close();
            return entities;
        };
        expect(run({ all: [Position, Selected] })).toEqual(sorted(selected));
        expect(run({ all: [Selected] })).toEqual(sorted([...selected, loose]));
        expect(run({ all: [Position], none: [Selected] })).toEqual(sorted(everything.filter((e) => !selected.includes(e))));
        expect(run({ all: [Position, Frozen], none: [Selected] })).toEqual(sorted(frozen.slice(10)));
        expect(run({ all: [Position, Selected, Damage] })).toEqual(sorted(selected.filter(has(damaged))));
        expect(run({ all: [Position], any: [Selected, Damage] })).toEqual(
            sorted(everything.filter((e) => selected.includes(e) || damaged.includes(e))),
        );
        expect(run({ all: [Position], any: [Frozen, Damage] })).toEqual(
            sorted(everything.filter((e) => frozen.includes(e) || damaged.includes(e))),
        );
        expect(run({ all: [Position], none: [Selected, Damage] })).toEqual(
            sorted(everything.filter((e) => !selected.includes(e) && !damaged.includes(e))),
        );
        world.validate();
    });

    test('chunks list the rows that pass in slots; columns of table components work over them', async () => {
        const { world, selected } = await scene();
        const q = world.query({ all: [Position, Selected], writes: [Position] });
        const sub = world.subscribe({ changed: [Position] });
        sub.drain();
        let rows = 0;
        for (const chunk of q) {
            expect(chunk.filtered).toBe(true);
            expect(chunk.rowCount).toBe(chunk.rows.length);
            expect(chunk.rowCount).toBeLessThanOrEqual(chunk.count);
            const x = chunk.column(Position, 'x');
            for (const row of chunk.rows) {
                expect(world.has(chunk.entities[row]!, Selected)).toBe(true);
                x[row] = 7;
                rows++;
            }
        }
        expect(rows).toBe(selected.length);
        // writes marked the visited rows only.
        expect(sorted(sub.drain().entities)).toEqual(sorted(selected));
        for (const e of selected) expect(world.get(e, Position, 'x')).toBe(7);
        expect(
            world
                .query({ all: [Position] })
                .entities()
                .filter((e) => world.get(e, Position, 'x') === 7),
        ).toHaveLength(selected.length);
    });

    test('chunk-level calls refuse sparse components with SPARSE_COMPONENT naming them', async () => {
        const { world, damaged } = await scene();
        const q = world.query({ all: [Position, Damage] });
        let chunks = 0;
        for (const chunk of q) {
            chunks++;
            expectError(() => chunk.column(Damage, 'amount'), 'SPARSE_COMPONENT', {
                operation: 'chunk.column',
                component: 'Damage',
                field: 'amount',
            });
            expectError(() => chunk.markChanged(Damage, chunk.rows[0]), 'SPARSE_COMPONENT', { component: 'Damage' });
            expect(chunk.column(Position, 'x')).toBeInstanceOf(Float32Array);
        }
        expect(chunks).toBeGreaterThan(0);
        expectError(() => world.query({ all: [Position, Damage], writes: [Damage] }), 'SPARSE_COMPONENT', { component: 'Damage' });
        expectError(() => q.offset(Damage, 'amount', 1), 'SPARSE_COMPONENT', { operation: 'query.offset', component: 'Damage' });
        expect(world.get(damaged[0]!, Damage, 'amount')).toBe(1); // nothing written
        // Per entity, the data is there.
        for (const e of q.entities()) world.set(e, Damage, 'amount', 3);
        expect(damaged.map((e) => world.get(e, Damage, 'amount'))).toEqual(damaged.map(() => 3));
    });

    test('kernels on table fields of a query with a sparse term touch the visited rows only', async () => {
        const { world, selected, plain } = await scene();
        const q = world.query({ all: [Position, Selected] });
        q.offset(Position, 'x', 2);
        for (const e of selected) expect(world.get(e, Position, 'x')).toBe(2);
        expect(world.get(plain[50]!, Position, 'x')).toBe(0);
    });

    test('a query with a sparse term is never replayed: a sparse add between runs is seen', async () => {
        const world = await newWorld();
        const [a, b, c] = world.spawnMany(3, Position);
        const chosen = world.query({ all: [Position, Selected] });
        const others = world.query({ all: [Position], none: [Selected] });
        const either = world.query({ all: [Position], any: [Selected, Frozen] });
        world.add(a!, Selected);
        expect(visited(chosen)).toEqual([a!]);
        expect(visited(chosen)).toEqual([a!]);
        expect(sorted(visited(others))).toEqual(sorted([b!, c!]));
        expect(visited(either)).toEqual([a!]);
        const layout = world.stats().archetypeCount;
        world.add(b!, Selected); // no row moves
        world.remove(a!, Selected);
        expect(world.stats().archetypeCount).toBe(layout);
        expect(visited(chosen)).toEqual([b!]);
        expect(sorted(visited(others))).toEqual(sorted([a!, c!]));
        expect(visited(either)).toEqual([b!]);
        world.add(c!, Selected);
        expect(chosen.count()).toBe(2);
        // The chunk objects of a plain query without sparse terms are replayed (the same objects);
        // those of a query with one are made again every run.
        const chunksOf = (q: Query) => {
            const list: Chunk[] = [];
            for (const chunk of q) list.push(chunk);
            return list;
        };
        const plain = world.query({ all: [Position] });
        expect(chunksOf(plain)[0]).toBe(chunksOf(plain)[0]);
        expect(chunksOf(chosen)[0]).not.toBe(chunksOf(chosen)[0]);
    });

    test('added / changed filters and removed terms on sparse components: each once', async () => {
        const world = await newWorld();
        const [a, b, c] = world.spawnMany(3, Position);
        const added = world.query({ added: [Selected] });
        const changed = world.query({ all: [Position], changed: [Damage] });
        const sub = world.subscribe({ added: [Damage], removed: [Selected, Damage] });
        expect(visited(added)).toEqual([]);
        expect(visited(changed)).toEqual([]);
        expect(sub.drain().empty).toBe(true);
        world.add(a!, Selected);
        world.add(b!, Selected, Damage({ amount: 1 })); // initial values: added, not changed
        expect(sorted(visited(added))).toEqual(sorted([a!, b!]));
        expect(visited(added)).toEqual([]);
        expect(visited(changed)).toEqual([]);
        expect([...sub.drain().entities]).toEqual([b!]);
        world.set(b!, Damage, 'amount', 2);
        world.set(b!, Damage, 'amount', 3);
        world.add(c!, Damage);
        world.set(c!, Damage, { from: 1 });
        expect(sorted(visited(changed))).toEqual(sorted([b!, c!]));
        expect([...sub.drain().entities]).toEqual([c!]);
        expect(visited(changed)).toEqual([]);
        world.remove(a!, Selected);
        world.despawn(b!);
        world.remove(c!, Damage);
        world.remove(c!, Damage); // not there any more: nothing
        const changes = sub.drain();
        expect([...changes.entities]).toEqual([]); // c was added Damage, but lost it before the drain
        expect([...changes.removedOf(Selected)]).toEqual([a!, b!]);
        expect([...changes.removedOf(Damage)]).toEqual([b!, c!]);
        expect(sub.drain().empty).toBe(true);
        // Back again: added again.
        world.add(a!, Selected);
        expect(visited(added)).toEqual([a!]);
        world.validate();
    });

    test('addAll / removeAll: sparse components, and per entity for queries with sparse terms', async () => {
        const world = await newWorld({ chunkBytes: 1024 });
        const entities = [...world.spawnMany(150, Position)];
        const before = locations(world, entities);
        const archetypes = world.stats().archetypeCount;
        world.query({ all: [Position] }).addAll(Selected);
        expect(entities.every((e) => world.has(e, Selected))).toBe(true);
        expect(locations(world, entities)).toEqual(before);
        expect(world.stats().archetypeCount).toBe(archetypes);
        for (const e of entities.slice(0, 100)) world.remove(e, Selected);
        // A table tag through a query with a sparse term: only the entities it visits.
        world.query({ all: [Position, Selected] }).addAll(Frozen);
        expect(entities.filter((e) => world.has(e, Frozen))).toEqual(entities.slice(100));
        world.query({ all: [Frozen] }).removeAll(Selected);
        expect(entities.some((e) => world.has(e, Selected))).toBe(false);
        world.validate();
    });
});

describe('inside a loop', () => {
    test('sparse adds and removes are deferred to the end of the loop, spawns with sparse values too', async () => {
        const world = await newWorld();
        const entities = [...world.spawnMany(10, Position)];
        world.add(entities[0]!, Selected);
        const spawned: Entity[] = [];
        for (const chunk of world.query({ all: [Position] })) {
            for (const e of [...chunk.entities]) {
                if (world.has(e, Selected)) world.remove(e, Selected);
                else world.add(e, Selected, Damage({ amount: e }));
            }
            spawned.push(world.spawn(Position, Damage({ from: 4 }), Marked));
            expect(world.has(entities[0]!, Selected)).toBe(true); // not yet
            expect(world.has(entities[1]!, Selected)).toBe(false);
        }
        expect(world.has(entities[0]!, Selected)).toBe(false);
        for (const e of entities.slice(1)) {
            expect(world.has(e, Selected)).toBe(true);
            expect(world.get(e, Damage, 'amount')).toBe(e);
        }
        expect(spawned).toHaveLength(1);
        expect(world.get(spawned[0]!, Damage)).toEqual({ amount: 0, from: 4, history: [0, 0, 0] });
        expect(world.has(spawned[0]!, Marked)).toBe(true);
        world.validate();
    });

    test('a loop over a sparse query that removes the component as it goes visits every entity once', async () => {
        const world = await newWorld({ chunkBytes: 1024 });
        const entities = [...world.spawnMany(300, Position, Selected)];
        const seen: Entity[] = [];
        for (const chunk of world.query({ all: [Position, Selected] })) {
            for (const row of chunk.rows) {
                seen.push(chunk.entities[row]!);
                world.remove(chunk.entities[row]!, Selected);
            }
        }
        expect(sorted(seen)).toEqual(sorted(entities));
        expect(world.query({ all: [Selected] }).count()).toBe(0);
    });
});
