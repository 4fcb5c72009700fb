// Spawns, despawns, adds and removes inside a run, recorded by JS in the core's command list
// (bindings/record.ts) without a call each: the same commands, in the same order, as the core
// records, applied when the run ends, and spawns get the handles the core would have given;
// everything else still goes to the core.
import { describe, expect, test } from 'vitest';
import { component, relation, tag, type Entity, type World } from '../../dist/index.js';
import { countCalls, expectError, worldPerTest } from './support.js';

const newWorld = worldPerTest();

const Position = component('Position', { x: 'f32', y: 'f32' });
const Health = component('Health', { value: 'i32' });
const Marked = tag('Marked');
const Flag = tag('Flag', { storage: 'sparse' });
const Likes = relation('Likes');

const structural = ['tes_add', 'tes_remove', 'tes_despawn', 'tes_spawn_items', 'tes_archetype_spawn'];

/**
 * A world with `n` entities of Position, whose command list exists (the core makes it at the
 * first command it records) and which knows Marked.
 */
async function worldWith(n: number): Promise<{ world: World; entities: Entity[] }> {
    const world = await newWorld();
    const entities = Array.from(world.spawnMany(n, Position));
    insideRun(world, () => world.add(entities[0]!, Marked));
    world.remove(entities[0]!, Marked);
    return { world, entities };
}

/** The structural calls made while `body` runs inside one run of a query over Position. */
function insideRun(world: World, body: (entities: Entity[]) => void): string[] {
    const query = world.query({ all: [Position] });
    const counter = countCalls(world);
    try {
        for (const chunk of query) {
            body(Array.from(chunk.entities.subarray(0, chunk.count)));
            break;
        }
    } finally {
        counter.restore();
        query.close();
    }
    return counter.calls.filter((name) => structural.includes(name));
}

describe('commands recorded by JS inside a run', () => {
    test('adds, removes and despawns of placed entities make no call and apply in order at the end', async () => {
        const { world, entities } = await worldWith(3);
        const [a, b, c] = entities;
        world.add(a!, Marked);
        const calls = insideRun(world, () => {
            world.remove(a!, Marked);
            world.add(a!, Marked);
            world.add(b!, Marked);
            world.remove(b!, Marked);
            world.despawn(c!);
            world.add(c!, Marked); // recorded: c is placed until the end; applied, it is skipped
            // Nothing moved yet.
            expect(world.has(b!, Marked)).toBe(false);
            expect(world.isAlive(c!)).toBe(true);
        });
        expect(calls).toEqual([]);
        expect(world.has(a!, Marked)).toBe(true);
        expect(world.has(b!, Marked)).toBe(false);
        expect(world.isAlive(c!)).toBe(false);
        expect(world.stats().commandsSkipped).toBe(1);
        world.validate();
    });

    test('interleaved with commands the core records (values, pending entities), the order holds', async () => {
        const { world, entities } = await worldWith(2);
        const [a, b] = entities;
        for (const e of entities) world.add(e, Marked);
        let spawned = 0;
        const calls = insideRun(world, () => {
            world.remove(a!, Position); // JS
            world.add(a!, Position({ x: 7, y: 8 })); // the core: an add with values
            world.add(b!, Position({ x: 1, y: 2 })); // the core: b has Position, a change
            world.remove(b!, Marked); // JS, after the core's command
            spawned = world.spawn(Position);
            world.add(spawned, Marked); // pending: the core's
        });
        expect(calls).toEqual(['tes_spawn_items', 'tes_add']); // the spawn's shape is new: the core's
        expect(world.get(a!, Position)).toEqual({ x: 7, y: 8 });
        expect(world.get(b!, Position)).toEqual({ x: 1, y: 2 });
        expect(world.has(b!, Marked)).toBe(false);
        expect(world.has(spawned, Marked)).toBe(true);
        world.validate();
    });

    test('sparse components are recorded too; relations and stale handles go to the core, which answers as before', async () => {
        const { world, entities } = await worldWith(3);
        const [a, b, c] = entities;
        world.add(a!, Flag);
        world.add(a!, Likes(c!));
        world.despawn(b!);
        const calls = insideRun(world, () => {
            expectError(() => world.add(a!, Likes as never), 'NEEDS_TARGET', { entity: a! }); // a relation: the core's
            world.remove(a!, Likes); // every pair of a: the core's
            world.remove(a!, Flag); // sparse: recorded all the same
            expect(world.has(a!, Flag)).toBe(true); // applied at the end, in order
            world.add(c!, Flag);
            world.remove(c!, Flag);
            world.add(c!, Flag);
            expect(world.has(c!, Flag)).toBe(false);
            expectError(() => world.add(b!, Marked), 'STALE_ENTITY', { entity: b! });
            expectError(() => world.add(b!, Flag), 'STALE_ENTITY', { entity: b! });
            expectError(() => world.remove(b!, Position), 'STALE_ENTITY', { entity: b! });
            expectError(() => world.despawn(b!), 'STALE_ENTITY', { entity: b! });
        });
        expect(calls).toEqual(['tes_add', 'tes_remove', 'tes_add', 'tes_add', 'tes_remove', 'tes_despawn']);
        expect(world.has(c!, Flag)).toBe(true);
        expect(world.has(a!, Flag)).toBe(false);
        expect(world.has(a!, Likes)).toBe(false);
        expect(world.stats().commandsSkipped).toBe(0);
        world.validate();
    });

    test('a full command list grows through the core, and every command still applies', async () => {
        const { world, entities } = await worldWith(20_000);
        const calls = insideRun(world, () => {
            for (const e of entities) world.add(e, Marked);
            for (let i = 0; i < entities.length; i += 2) world.remove(entities[i]!, Marked);
        });
        // The list doubles: a call each time it is full, no more.
        expect(calls.length).toBeGreaterThan(0);
        expect(calls.length).toBeLessThan(20);
        expect(world.query({ all: [Marked] }).count()).toBe(10_000);
        for (let i = 0; i < 10; i++) expect(world.has(entities[i]!, Marked)).toBe(i % 2 === 1);
        world.validate();
    });

    // A recorded remove and add of a component the entity holds re-add it zeroed when the run
    // ends; a set made after them (by world.set or a field handle, which write placed cells
    // themselves) must land after that add, not before it (until 2026-11-28 it was written at
    // once and the re-add zeroed it). The recorder notes each add on the entity's record, so the
    // JS write sees it and asks the core, which records the write; the notes, listed as the
    // command list grows, are gone once the run ends (validate checks both).
    test('a set after recorded removes and adds of a held component lands after them, however long the list', async () => {
        const world = await newWorld();
        const entities = Array.from(world.spawnMany(5000, Position, Health));
        const hp = world.field(Health, 'value');
        const calls = insideRun(world, () => {
            entities.forEach((e, i) => {
                world.remove(e, Health);
                world.add(e, Health);
                if (i % 2) world.set(e, Health, 'value', i);
                else hp.set(e, i);
                world.set(e, Position, 'x', i); // nothing recorded names Position: at once
                expect(world.get(e, Position, 'x')).toBe(i);
            });
            world.validate();
        });
        expect(calls.filter((name) => name === 'tes_add' || name === 'tes_remove').length).toBeLessThan(20);
        entities.forEach((e, i) => expect(world.get(e, Health, 'value')).toBe(i));
        world.validate();
        expect(hp.get(entities[7]!)).toBe(7); // the handle's own lookup works again after the run
    });

    test('after memory grew between runs, recording reads the new memory', async () => {
        const { world, entities } = await worldWith(1);
        const a = entities[0]!;
        world.add(a, Marked);
        insideRun(world, () => world.remove(a, Marked));
        const memory = (world as unknown as { heap: { memory: WebAssembly.Memory } }).heap.memory;
        const before = memory.buffer;
        memory.grow(1); // as a growing allocation does: every earlier view detaches
        expect(before.byteLength).toBe(0);
        const calls = insideRun(world, () => world.add(a, Marked));
        expect(calls).toEqual([]);
        expect(world.has(a, Marked)).toBe(true);
    });

    test('outside a run, the calls are the core’s, made at once', async () => {
        const world = await newWorld();
        const [a] = Array.from(world.spawnMany(1, Position));
        world.add(a!, Marked);
        const counter = countCalls(world);
        world.remove(a!, Marked);
        world.add(a!, Marked);
        world.despawn(a!);
        counter.restore();
        expect(counter.calls.filter((name) => structural.includes(name))).toEqual(['tes_remove', 'tes_add', 'tes_despawn']);
        expect(world.isAlive(a!)).toBe(false);
    });
});

/**
 * One history of spawns in and out of runs over a world with a free queue the allocator reuses:
 * `spawn` makes each spawn inside the runs (the planned spawn JS records, or spawnMany of one,
 * which is always the core's). Returns every handle spawned, in order, and each one's Health.
 */
async function spawnHistory(spawn: (world: World, value: number) => Entity): Promise<[Entity, number][]> {
    const world = await newWorld({ minFreeIndices: 2 });
    const first = Array.from(world.spawnMany(12, Position));
    for (let i = 0; i < 8; i++) world.despawn(first[i]!);
    const out: Entity[] = [];
    for (let round = 0; round < 3; round++) {
        insideRun(world, () => {
            for (let i = 0; i < 5; i++) out.push(spawn(world, round * 10 + i));
            // The core's own spawn in between takes the next index as well.
            out.push(world.spawnMany(1, Health({ value: -1 }))[0]!);
        });
    }
    for (let i = 0; i < 4; i++) out.push(world.spawn(Health({ value: 100 + i })));
    world.validate();
    return out.map((e) => [e, world.get(e, Health, 'value')]);
}

describe('spawns recorded by JS inside a run', () => {
    test('each gets the handle the core would have given it, free queue and all, and its values', async () => {
        const recorded = await spawnHistory((world, value) => world.spawn(Health({ value })));
        const core = await spawnHistory((world, value) => world.spawnMany(1, Health({ value }))[0]!);
        expect(recorded).toEqual(core);
        expect(recorded.slice(0, 6).map(([, value]) => value)).toEqual([0, 1, 2, 3, 4, -1]);
    });

    test('no call per spawn, with values and without, while the command list has room', async () => {
        const { world } = await worldWith(1);
        const spawned: Entity[] = [];
        const calls = insideRun(world, () => {
            for (let i = 0; i < 20; i++) spawned.push(world.spawn(Health({ value: i })));
            for (let i = 0; i < 20; i++) spawned.push(world.spawn(Health, Marked));
        });
        // The first of each shape is the core's (it plans the shape); the rest are recorded.
        expect(calls).toEqual(['tes_spawn_items', 'tes_spawn_items']);
        expect(new Set(spawned).size).toBe(40);
        for (let i = 0; i < 20; i++) expect(world.get(spawned[i]!, Health, 'value')).toBe(i);
        for (let i = 20; i < 40; i++) {
            expect(world.get(spawned[i]!, Health, 'value')).toBe(0);
            expect(world.has(spawned[i]!, Marked)).toBe(true);
        }
        world.validate();
    });

    test('pending until the run ends; writes, adds and despawns of it are recorded after its spawn', async () => {
        const { world } = await worldWith(1);
        let e = 0,
            gone = 0;
        insideRun(world, () => {
            world.spawn(Health({ value: 1 })); // plans the shape
            e = world.spawn(Health({ value: 3 }));
            gone = world.spawn(Health({ value: 4 }));
            expect(world.isAlive(e)).toBe(true); // pending counts as alive (world.isAlive)
            // The index after it waits in the handout block: no entity's, stale to every call.
            const waiting = gone + 1;
            expect(world.isAlive(waiting)).toBe(false);
            expectError(() => world.get(waiting, Health, 'value'), 'STALE_ENTITY', { entity: waiting });
            expectError(() => world.despawn(waiting), 'STALE_ENTITY', { entity: waiting });
            expectError(() => world.get(e, Health, 'value'), 'PENDING_ENTITY', { entity: e });
            expectError(() => world.has(e, Health), 'PENDING_ENTITY', { entity: e });
            world.set(e, Health, 'value', 9);
            world.add(e, Marked);
            world.despawn(gone);
            expectError(() => world.set(e, Position, 'x', 1), 'MISSING_COMPONENT', { entity: e });
        });
        expect(world.get(e, Health, 'value')).toBe(9);
        expect(world.has(e, Marked)).toBe(true);
        expect(world.isAlive(gone)).toBe(false);
        expect(world.stats().commandsSkipped).toBe(0);
        world.validate();
    });

    test('a value its field cannot hold throws at the call and records nothing', async () => {
        const { world } = await worldWith(1);
        const Speed = component('RecordedSpeed', { v: 'f32' });
        let after: Entity[] = [];
        insideRun(world, () => {
            world.spawn(Health({ value: 1 }));
            const before = world.spawn(Health({ value: 2 }));
            expectError(() => world.spawn(Health({ value: 2 ** 40 })), 'BAD_VALUE');
            expectError(() => world.spawn(Health({ value: 1.5 })), 'BAD_VALUE');
            expectError(() => world.spawn(Health({ value: Number.NaN })), 'BAD_VALUE');
            expectError(() => world.spawn(Health({ value: 'x' as never })), 'BAD_VALUE');
            const next = world.spawn(Health({ value: 5 }));
            expect(next).toBe(before + 1); // no index was taken by the refused ones
            world.spawn(Speed({ v: 1 }));
            const inf = world.spawn(Speed({ v: Infinity })); // f32 holds infinities
            expectError(() => world.spawn(Speed({ v: 1e39 })), 'BAD_VALUE'); // but no finite number beyond its range
            after = [next, inf];
        });
        expect(world.query({ all: [Health] }).count()).toBe(3);
        expect(world.query({ all: [Speed] }).count()).toBe(2);
        expect(world.get(after[0]!, Health, 'value')).toBe(5);
        expect(world.get(after[1]!, Speed, 'v')).toBe(Infinity);
        world.validate();
    });

    test('initial values are part of the spawn: added sees the entities, changed does not', async () => {
        const { world } = await worldWith(1);
        const added = world.subscribe({ added: [Health] });
        const changed = world.subscribe({ changed: [Health] });
        const spawned: Entity[] = [];
        insideRun(world, () => {
            for (let i = 0; i < 5; i++) spawned.push(world.spawn(Health({ value: i + 1 })));
        });
        expect(Array.from(added.drain().entities).sort()).toEqual(spawned.slice().sort());
        expect(changed.drain().entities).toEqual(new Uint32Array([]));
    });

    test('an exception mid-loop ends the run: the spawns recorded are placed, the indices left given back', async () => {
        const run = async (spawn: (world: World, value: number) => Entity): Promise<Entity[]> => {
            const { world } = await worldWith(4);
            const out: Entity[] = [];
            expect(() =>
                insideRun(world, () => {
                    for (let i = 0; i < 3; i++) out.push(spawn(world, i));
                    throw new Error('game code fails');
                }),
            ).toThrow('game code fails');
            out.push(world.spawn(Position));
            for (let i = 0; i < 3; i++) expect(world.get(out[i]!, Health, 'value')).toBe(i);
            world.validate();
            return out;
        };
        const recorded = await run((world, value) => world.spawn(Health({ value })));
        const core = await run((world, value) => world.spawnMany(1, Health({ value }))[0]!);
        expect(recorded).toEqual(core);
    });

    test('nested runs: the spawns of the inner run are placed when the outermost ends', async () => {
        const { world } = await worldWith(2);
        const outer = world.query({ all: [Position] });
        const spawned: Entity[] = [];
        for (const _ of outer) {
            for (const __ of world.query({ all: [Position] })) {
                for (let i = 0; i < 3; i++) spawned.push(world.spawn(Health({ value: 7 })));
            }
            for (const e of spawned) expectError(() => world.has(e, Health), 'PENDING_ENTITY');
        }
        expect(spawned.every((e) => world.get(e, Health, 'value') === 7)).toBe(true);
        world.validate();
    });

    test('100,000 spawns in one loop, with a column written every row: every spawn and write lands', async () => {
        const world = await newWorld();
        const rows = Array.from(world.spawnMany(5_000, Position));
        const spawned: Entity[] = [];
        for (const chunk of world.query({ all: [Position] })) {
            const x = chunk.column(Position, 'x');
            for (let i = 0; i < chunk.count; i++) {
                for (let k = 0; k < 20; k++) spawned.push(world.spawn(Health({ value: spawned.length })));
                x[i] = i + 1;
            }
        }
        expect(spawned.length).toBe(100_000);
        let kept = 0;
        for (const e of rows) kept += world.get(e, Position, 'x') !== 0 ? 1 : 0;
        expect(kept).toBe(5_000);
        for (let i = 0; i < spawned.length; i += 997) expect(world.get(spawned[i]!, Health, 'value')).toBe(i);
        expect(world.query({ all: [Health] }).count()).toBe(100_000);
        world.validate();
    });
});
