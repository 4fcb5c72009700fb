// TesseraError: its code and context for each kind of mistake, and a world left exactly as it
// was by every failed call (every entity's components and values, the entity count, validate()).
import { describe, expect, test } from 'vitest';

import { ChildOf, component, describeEntity, relation, tag, TesseraError, type Entity, type World } from '../../dist/index.js';
import { expectError, snapshot, worldPerTest, type Expected } from './support.js';
import type { ErrorCode } from '../../dist/index.js';

const newWorld = worldPerTest();

const Position = component('Position', { x: 'f32', y: 'f32' });
const Stats = component('Stats', { hp: 'i32', level: 'u8', id: 'u32', small: 'i8' });
const Inventory = component('Inventory', { items: ['u16', 4] });
const Frozen = tag('Frozen');
const Unused = component('Unused', { v: 'f64' });
const components = [Position, Stats, Inventory, Frozen, Unused];

/** A small world with a dead handle among its entities. */
async function populated(): Promise<{ world: World; entities: Entity[]; live: Entity; dead: Entity }> {
    const world = await newWorld();
    const live = world.spawn(Position({ x: 1, y: 2 }), Stats({ hp: 10, level: 3, id: 7, small: -1 }), Inventory({ items: [1, 2, 3, 4] }));
    const other = world.spawn(Position({ x: 5 }), Frozen);
    const dead = world.spawn(Position({ x: 9 }));
    world.despawn(dead);
    world.spawnMany(20, Stats({ hp: 1 }));
    return { world, entities: [live, other, dead], live, dead };
}

/** `fn` must fail with `code` and leave every entity, the count and the invariants as they were. */
function expectNoChange(world: World, entities: Entity[], fn: () => unknown, code: ErrorCode, expected: Expected = {}) {
    const before = snapshot(world, entities, components);
    const error = expectError(fn, code, expected);
    expect(snapshot(world, entities, components)).toEqual(before);
    world.validate();
    return error;
}

describe('TesseraError', () => {
    test('is an Error with a stable code and a message naming the operation, entity, component, field', async () => {
        const { world, live } = await populated();
        const error = expectError(() => world.get(live, Stats, 'nope' as never), 'UNKNOWN_FIELD');
        expect(error).toBeInstanceOf(Error);
        expect(error.name).toBe('TesseraError');
        expect(error.operation).toBe('world.get');
        expect(error.component).toBe('Stats');
        expect(error.field).toBe('nope');
        expect(error.entity).toBe(live);
        expect(error.message).toBe(
            `tessera: world.get failed for ${describeEntity(live)}, Stats.nope: Stats has no field "nope" (fields: hp, level, id, small)`,
        );
        const stale = expectError(() => world.get(0x12345, Stats), 'STALE_ENTITY');
        expect(stale.entity).toBe(0x12345);
        expect(stale.message).toContain(describeEntity(0x12345));
        expect(describeEntity((3 << 21) | 42)).toBe(`entity ${(3 << 21) | 42} (index 42, generation 3)`);
        const plain = new TesseraError('BAD_VALUE', 'op', 'problem');
        expect(plain.message).toBe('tessera: op failed: problem');
        expect([plain.entity, plain.component, plain.field]).toEqual([undefined, undefined, undefined]);
    });
});

describe('failed calls change nothing', () => {
    test('stale handles', async () => {
        const { world, entities, dead } = await populated();
        const context = { entity: dead };
        expectNoChange(world, entities, () => world.get(dead, Position), 'STALE_ENTITY', { ...context, operation: 'world.get' });
        expectNoChange(world, entities, () => world.set(dead, Position, { x: 3 }), 'STALE_ENTITY', { ...context, operation: 'world.set' });
        expectNoChange(world, entities, () => world.add(dead, Frozen, Stats({ hp: 1 })), 'STALE_ENTITY', context);
        expectNoChange(world, entities, () => world.remove(dead, Position), 'STALE_ENTITY', context);
        expectNoChange(world, entities, () => world.despawn(dead), 'STALE_ENTITY', context);
        expectNoChange(world, entities, () => world.despawnMany([entities[0]!, dead]), 'STALE_ENTITY', context);
        expectNoChange(world, entities, () => world.markChanged(dead, Position), 'STALE_ENTITY', context);
        expectNoChange(world, entities, () => world.has(dead, Position), 'STALE_ENTITY', context);
    });

    test('things that are not components', async () => {
        const { world, entities, live } = await populated();
        snapshot(world, entities, components); // registers every real one
        const registered = world.stats().componentCount;
        const fake = [{}, 'Position', null, () => 0, Position({ x: 1 })];
        for (const thing of fake) {
            const notComponent = thing as never;
            expectNoChange(world, entities, () => world.get(live, notComponent), 'INVALID_ARGUMENT', { operation: 'world.get' });
            expectNoChange(world, entities, () => world.set(live, notComponent, { x: 1 }), 'INVALID_ARGUMENT');
            expectNoChange(world, entities, () => world.remove(live, Frozen, notComponent), 'INVALID_ARGUMENT');
            expectNoChange(world, entities, () => world.has(live, notComponent), 'INVALID_ARGUMENT');
            expectNoChange(world, entities, () => world.query({ all: [notComponent] }), 'INVALID_ARGUMENT');
            const positions = world.query({ all: [Position] });
            expectNoChange(world, entities, () => positions.fill(notComponent, 'x' as never, 1), 'INVALID_ARGUMENT', {
                operation: 'query.fill',
            });
            expectNoChange(world, entities, () => positions.addScaled(Position, 'x', notComponent, 'x' as never, 1), 'INVALID_ARGUMENT');
            for (const chunk of positions) {
                expectNoChange(world, entities, () => chunk.column(notComponent, 'x' as never), 'INVALID_ARGUMENT', {
                    operation: 'chunk.column',
                });
                expectNoChange(world, entities, () => chunk.markChanged(notComponent, 0), 'INVALID_ARGUMENT');
            }
            positions.close();
        }
        for (const thing of [{}, 'Position', null, 7]) {
            const notItem = thing as never;
            expectNoChange(world, entities, () => world.spawn(Position, notItem), 'INVALID_ARGUMENT', { operation: 'world.spawn' });
            expectNoChange(world, entities, () => world.spawnMany(3, notItem), 'INVALID_ARGUMENT');
            expectNoChange(world, entities, () => world.add(live, Frozen, notItem), 'INVALID_ARGUMENT');
        }
        expectNoChange(world, entities, () => world.spawn(Position, Position({ x: 1 })), 'INVALID_ARGUMENT', { component: 'Position' });
        expectNoChange(world, entities, () => world.add(live, Frozen, Frozen), 'INVALID_ARGUMENT');
        expect(world.stats().componentCount).toBe(registered); // nothing registered on the way
    });

    test('not entity handles', async () => {
        const { world, entities } = await populated();
        for (const handle of [-1, 1.5, NaN, '1', 2 ** 32]) {
            const notHandle = handle as never;
            expectNoChange(world, entities, () => world.despawn(notHandle), 'INVALID_ARGUMENT', { operation: 'world.despawn' });
            expectNoChange(world, entities, () => world.get(notHandle, Position), 'INVALID_ARGUMENT');
            expectNoChange(world, entities, () => world.add(notHandle, Frozen), 'INVALID_ARGUMENT');
            expectNoChange(world, entities, () => world.despawnMany([entities[0]!, notHandle]), 'INVALID_ARGUMENT');
        }
        for (const count of [-1, 1.5, '2', NaN]) {
            expectNoChange(world, entities, () => world.spawnMany(count as never, Position), 'INVALID_ARGUMENT');
        }
    });

    test('wrong field names', async () => {
        const { world, entities, live } = await populated();
        const ctx = { component: 'Position', field: 'z', entity: live };
        expectNoChange(world, entities, () => world.get(live, Position, 'z' as never), 'UNKNOWN_FIELD', ctx);
        expectNoChange(world, entities, () => world.set(live, Position, 'z' as never, 1 as never), 'UNKNOWN_FIELD', ctx);
        expectNoChange(world, entities, () => world.set(live, Position, { x: 3, z: 1 } as never), 'UNKNOWN_FIELD', ctx);
        expectNoChange(world, entities, () => world.spawn(Position({ x: 3, z: 1 } as never)), 'UNKNOWN_FIELD', { field: 'z' });
        expectNoChange(world, entities, () => world.add(live, Frozen, Unused({ w: 1 } as never)), 'UNKNOWN_FIELD', { field: 'w' });
        expectNoChange(world, entities, () => world.get(live, Frozen, 'x' as never), 'TAG_HAS_NO_DATA', { component: 'Frozen' });
    });

    test('wrong value types: nothing of the call is written', async () => {
        const { world, entities, live } = await populated();
        const bad: [Parameters<typeof Stats>[0] | Record<string, unknown>, string][] = [
            [{ hp: '5' }, 'hp'],
            [{ hp: 1.5 }, 'hp'],
            [{ hp: 2 ** 31 }, 'hp'],
            [{ hp: NaN }, 'hp'],
            [{ level: 300 }, 'level'],
            [{ level: -1 }, 'level'],
            [{ id: -1 }, 'id'],
            [{ id: 2 ** 32 }, 'id'],
            [{ small: 128 }, 'small'],
            [{ hp: 1, level: 256 }, 'level'], // the valid hp must not be written either
            [{ hp: null }, 'hp'],
            [{ hp: [1] }, 'hp'],
        ];
        for (const [values, field] of bad) {
            const context = { component: 'Stats', field };
            expectNoChange(world, entities, () => world.set(live, Stats, values as never), 'BAD_VALUE', { ...context, entity: live });
            expectNoChange(world, entities, () => world.spawn(Position, Stats(values as never)), 'BAD_VALUE', context);
            expectNoChange(world, entities, () => world.spawnMany(5, Stats(values as never)), 'BAD_VALUE', context);
            expectNoChange(world, entities, () => world.add(entities[1]!, Frozen, Stats(values as never)), 'BAD_VALUE', context);
        }
        expectNoChange(world, entities, () => world.set(live, Position, { x: 1, y: 1e39 }), 'BAD_VALUE', { field: 'y' });
        expectNoChange(world, entities, () => world.set(live, Position, 'x', 'a' as never), 'BAD_VALUE', { field: 'x' });
        expectNoChange(world, entities, () => world.set(live, Position, 5 as never), 'BAD_VALUE', { component: 'Position' });
    });

    test('wrong array values', async () => {
        const { world, entities, live } = await populated();
        const context = { component: 'Inventory', field: 'items' };
        for (const items of [[1, 2, 3], [1, 2, 3, 4, 5], 7, 'abcd', [1, 2, 3, 70000], [1, 2, -1, 4], [1, 2, 0.5, 4], null]) {
            expectNoChange(world, entities, () => world.set(live, Inventory, { items } as never), 'BAD_VALUE', {
                ...context,
                entity: live,
            });
            expectNoChange(world, entities, () => world.set(live, Inventory, 'items', items as never), 'BAD_VALUE', context);
            expectNoChange(world, entities, () => world.spawn(Inventory({ items } as never)), 'BAD_VALUE', context);
        }
    });

    test('missing components', async () => {
        const { world, entities } = await populated();
        const other = entities[1]!;
        const ctx = { entity: other, component: 'Stats' };
        expectNoChange(world, entities, () => world.get(other, Stats), 'MISSING_COMPONENT', ctx);
        expectNoChange(world, entities, () => world.set(other, Stats, { hp: 1 }), 'MISSING_COMPONENT', ctx);
        expectNoChange(world, entities, () => world.markChanged(other, Stats), 'MISSING_COMPONENT', ctx);
    });

    test('duplicate entities in a batch', async () => {
        const { world, entities, live } = await populated();
        expectNoChange(world, entities, () => world.despawnMany([live, entities[1]!, live]), 'DUPLICATE_ENTITY', { entity: live });
    });
});

describe('messages name what the call named, and say what would be right', () => {
    test('a whole-component read or write names the component, not a field it did not ask for', async () => {
        const { world, entities, live, dead } = await populated();
        const other = entities[1]!;
        const stale = expectError(() => world.get(dead, Position), 'STALE_ENTITY', {
            operation: 'world.get',
            entity: dead,
            component: 'Position',
            field: undefined,
        });
        expect(stale.message).toBe(
            `tessera: world.get failed for ${describeEntity(dead)}, Position: entity is not alive (despawned, or never spawned)`,
        );
        // One field asked for: that field is named.
        expectError(() => world.get(dead, Position, 'x'), 'STALE_ENTITY', { component: 'Position', field: 'x' });
        const missing = expectError(() => world.get(other, Stats), 'MISSING_COMPONENT', {
            entity: other,
            component: 'Stats',
            field: undefined,
        });
        expect(missing.message).not.toContain('Stats.hp');
        // set with values: the component is missing, not a field of the values at fault.
        const set = expectError(() => world.set(other, Stats, { level: 1 }), 'MISSING_COMPONENT', { component: 'Stats', field: undefined });
        expect(set.message).not.toContain('Stats.level');
        // A tag read on a dead entity names the tag, as every other component read does.
        expectError(() => world.get(dead, Frozen), 'STALE_ENTITY', { component: 'Frozen' });
        expectError(() => world.has(dead, Unused), 'STALE_ENTITY', { component: 'Unused' });
        expect(live).toBeTypeOf('number');
    });

    test("chunk.column / chunk.markChanged of a component the chunk lacks: the chunk's archetype, named, not an entity", async () => {
        const { world } = await populated();
        const Velocity = component('Velocity', { x: 'f32', y: 'f32' });
        world.spawn(Velocity); // registered, on no Position entity
        const q = world.query({ all: [Position] });
        let chunks = 0;
        for (const chunk of q) {
            if (world.has(chunk.entities[0]!, Frozen)) continue;
            chunks++;
            for (const call of [() => chunk.column(Velocity, 'x'), () => chunk.markChanged(Velocity)]) {
                const error = expectError(call, 'MISSING_COMPONENT', { component: 'Velocity', entity: undefined });
                expect(error.message).not.toContain('the entity');
                expect(error.message).toContain("this chunk's archetype has no Velocity");
                expect(error.message).toMatch(/its components: Position\b/);
            }
            expect(chunk.column(Position, 'x')).toBeInstanceOf(Float32Array);
        }
        expect(chunks).toBeGreaterThan(0);
        q.close();
    });

    test('tag() given fields: a tag has no fields, and component() is for data', () => {
        const loose = tag as unknown as (name: string, options: unknown) => unknown;
        const error = expectError(() => loose('T', { a: 'f32' }), 'BAD_SCHEMA', { operation: 'tag', component: 'T', field: 'a' });
        expect(error.message).not.toContain('unknown option');
        expect(error.message).toContain('a tag has no fields');
        expect(error.message).toContain('component("T", { a: "f32" })');
        expectError(() => loose('T', { items: ['u8', 4] }), 'BAD_SCHEMA', { field: 'items' });
        // A misspelt option is still an unknown option.
        const option = expectError(() => loose('T', { storge: 'sparse' }), 'BAD_SCHEMA', { component: 'T' });
        expect(option.message).toContain('unknown option "storge" (expected storage, replicate)');
        expect(loose('T', { storage: 'sparse' })).toBeTypeOf('function');
    });

    test('calls taking several handles say which is wrong; hierarchy calls name themselves', async () => {
        const { world, live, dead } = await populated();
        const Likes = relation('Likes');
        const loose = world as unknown as Record<string, (...args: unknown[]) => unknown>;
        const target = expectError(() => loose.getPair!(live, Likes), 'INVALID_ARGUMENT', { operation: 'world.getPair' });
        expect(target.message).toContain('target: expected an entity handle');
        const source = expectError(() => loose.addPair!('a', Likes, live), 'INVALID_ARGUMENT');
        expect(source.message).toContain('source: expected an entity handle');
        expect(expectError(() => loose.setParent!(live, -1), 'INVALID_ARGUMENT').message).toContain('parent: expected');
        expectError(() => world.childrenOf(dead), 'STALE_ENTITY', { operation: 'world.childrenOf', entity: dead });
        expectError(() => world.parentOf(dead), 'STALE_ENTITY', { operation: 'world.parentOf', entity: dead });
        expect(world.childrenOf(live)).toEqual([]);
        expect(ChildOf.name).toBe('ChildOf');
    });

    test('spawnMany of more than a world can hold says so, not that the table is full', async () => {
        const { world } = await populated();
        const error = expectError(() => world.spawnMany(2 ** 30, Position), 'TOO_MANY_ENTITIES', { operation: 'world.spawnMany' });
        expect(error.message).toContain(`count ${2 ** 30} is more than a world can hold`);
    });
});

describe('after world.destroy()', () => {
    test('every call throws DESTROYED; destroy again does nothing', async () => {
        const { world, live } = await populated();
        const query = world.query({ all: [Position] });
        const consumer = world.query({ changed: [Position] });
        const sub = world.subscribe({ removed: [Position] });
        const system = world.system({ query: {}, run() {} });
        world.destroy();
        expect(world.destroyed).toBe(true);
        world.destroy();
        const calls: [string, () => unknown][] = [
            ['world.spawn', () => world.spawn()],
            ['world.spawn', () => world.spawn(Position)],
            ['world.spawnMany', () => world.spawnMany(2, Position)],
            ['world.despawn', () => world.despawn(live)],
            ['world.despawnMany', () => world.despawnMany([live])],
            ['world.isAlive', () => world.isAlive(live)],
            ['world.add', () => world.add(live, Frozen)],
            ['world.remove', () => world.remove(live, Position)],
            ['world.has', () => world.has(live, Position)],
            ['world.get', () => world.get(live, Position)],
            ['world.get', () => world.get(live, Unused)], // never registered
            ['world.set', () => world.set(live, Position, { x: 1 })],
            ['world.markChanged', () => world.markChanged(live, Position)],
            ['world.query', () => world.query({ all: [Position] })],
            ['world.subscribe', () => world.subscribe({ added: [Position] })],
            ['world.stage', () => world.stage('late')],
            ['world.system', () => world.system({ query: {}, run() {} })],
            ['world.tick', () => world.tick()],
            ['world.stats', () => world.stats()],
            ['world.validate', () => world.validate()],
            ['query.chunks', () => [...query]],
            ['query.count', () => query.count()],
            ['query.fill', () => query.fill(Position, 'x', 1)],
            ['query.addAll', () => query.addAll(Frozen)],
            ['query.entities', () => consumer.entities()],
            ['subscription.drain', () => sub.drain()],
        ];
        for (const [operation, call] of calls) expectError(call, 'DESTROYED', { operation });
        expect(query.closed && consumer.closed && sub.closed && system.query.closed).toBe(true);
        query.close();
        sub.close();
        system.destroy();
    });
});

describe('arguments from plain JavaScript', () => {
    const Velocity = component('Velocity', { x: 'f32', y: 'f32' });

    test('kernels: a left-out number is BAD_VALUE, never 0; a left-out component or field INVALID_ARGUMENT', async () => {
        const { world, entities } = await populated();
        world.add(entities[0]!, Velocity({ x: 1 }));
        const q = world.query({ all: [Position, Velocity] });
        const anything = q as unknown as Record<string, (...args: unknown[]) => unknown>;
        const position = { component: 'Position', field: 'y' };
        expectNoChange(world, entities, () => anything.clamp!(Position, 'y', -10), 'BAD_VALUE', { ...position, operation: 'query.clamp' });
        expectNoChange(world, entities, () => anything.clamp!(Position, 'y'), 'BAD_VALUE', position);
        expectNoChange(world, entities, () => anything.clamp!(Position, 'y', undefined, 10), 'BAD_VALUE', position);
        expectNoChange(world, entities, () => anything.fill!(Position, 'y'), 'BAD_VALUE', position);
        expectNoChange(world, entities, () => anything.offset!(Position, 'y', null), 'BAD_VALUE', position);
        expectNoChange(world, entities, () => anything.scale!(Position, 'y'), 'BAD_VALUE', position);
        expectNoChange(world, entities, () => anything.countdown!(Position, 'y'), 'BAD_VALUE', position);
        expectNoChange(world, entities, () => anything.addScaled!(Position, 'x', Velocity, 'x'), 'BAD_VALUE', {
            operation: 'query.addScaled',
        });
        expectNoChange(world, entities, () => anything.addScaled!(Position, 'x'), 'INVALID_ARGUMENT', { operation: 'query.addScaled' });
        expectNoChange(world, entities, () => anything.addScaled!(Position, 'x', Velocity, undefined, 1), 'INVALID_ARGUMENT', {
            component: 'Velocity',
        });
        expectNoChange(world, entities, () => anything.scale!(Position, undefined, 2), 'INVALID_ARGUMENT', { component: 'Position' });
        expectNoChange(world, entities, () => anything.fill!(), 'INVALID_ARGUMENT', { operation: 'query.fill' });
        for (const chunk of q)
            expectError(() => (chunk.column as (...args: unknown[]) => unknown)(Position), 'INVALID_ARGUMENT', {
                operation: 'chunk.column',
            });
        const error = expectError(() => anything.clamp!(Position, 'y', -10), 'BAD_VALUE');
        expect(error.message).toContain('max must be a number, got undefined');
        q.close();
    });

    test('descriptions must be objects with known keys: a misspelt key is refused, named', async () => {
        const { world, entities } = await populated();
        const queries = world.stats().queryCount;
        const refuse = (call: () => unknown, operation: string, key?: string) => {
            const error = expectNoChange(world, entities, call, 'INVALID_ARGUMENT', { operation });
            if (key !== undefined) expect(error.message).toContain(`unknown key ${JSON.stringify(key)}`);
        };
        const loose = world as unknown as Record<string, (...args: unknown[]) => unknown>;
        refuse(() => loose.query!([Position]), 'world.query');
        refuse(() => loose.query!({ alll: [Position] }), 'world.query', 'alll');
        refuse(() => loose.query!({ all: [Position], write: [Position] }), 'world.query', 'write');
        refuse(() => loose.subscribe!([Position]), 'world.subscribe');
        refuse(() => loose.subscribe!({ chnaged: [Position] }), 'world.subscribe', 'chnaged');
        refuse(() => loose.subscribe!({ changed: [Position], writes: [Position] }), 'world.subscribe', 'writes');
        refuse(() => loose.replicator!([]), 'world.replicator');
        refuse(() => loose.replicator!({ histroy: 3 }), 'world.replicator', 'histroy');
        refuse(() => loose.replicator!({ scope: Position }), 'world.replicator');
        refuse(() => loose.replicator!({ scope: [Position] }), 'world.replicator');
        refuse(() => loose.replicator!({ scope: { added: [Position] } }), 'world.replicator', 'added');
        const run = () => {};
        refuse(() => loose.system!({ query: {}, run, intervall: 2 }), 'world.system', 'intervall');
        refuse(() => loose.system!({ query: { alll: [Position] }, run }), 'world.system', 'alll');
        refuse(() => loose.system!({ query: [Position], run }), 'world.system');
        refuse(() => loose.system!({ run }), 'world.system');
        refuse(() => loose.system!({ query: {}, run, stage: null }), 'world.system');
        refuse(() => loose.system!({ query: {}, run, stage: Position }), 'world.system');
        refuse(() => loose.system!({ query: {}, run, name: 5 }), 'world.system');
        refuse(() => loose.system!([{ query: {}, run }]), 'world.system');
        expect(world.stats().queryCount).toBe(queries); // nothing made on the way
        let runs = 0;
        const order: string[] = [];
        world.tick();
        world.system({ query: {}, run: () => void order.push('late'), stage: world.stage('late'), name: 'counter' });
        world.system({ query: {}, run: () => void (runs++, order.push('update')) });
        world.tick();
        expect(runs).toBe(1); // the refused systems were never registered
        expect(order).toEqual(['late', 'update']); // nor was their stage: 'update' came after 'late'
    });
});

describe('createWorld options', () => {
    test('bad options are refused', async () => {
        for (const options of [
            { chunkBytes: -1 },
            { chunkBytes: 1.5 },
            { minFreeIndices: -2 },
            { chunkBytes: '4096' },
            { minFreeIndices: 0 },
            { chunkBytes: 0 },
        ]) {
            await expect(newWorld(options as never)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', operation: 'createWorld' });
        }
    });
});
