// Despawns, adds and removes inside a run, recorded by JS in the core's command list
// (bindings/record.ts) without a call each: the same commands, in the same order, as the core
// records, applied when the run ends; everything else still goes to the core.
import { describe, expect, test } from 'vitest';
import { component, relation, tag, type Entity, type World } from '../../dist/index.js';
import { countCalls, expectError, worldPerTest } from './support.js';

const newWorld = worldPerTest();

const Position = component('Position', { x: 'f32', y: 'f32' });
const Marked = tag('Marked');
const Flag = tag('Flag', { storage: 'sparse' });
const Likes = relation('Likes');

const structural = ['tes_add', 'tes_remove', 'tes_despawn'];

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
        expect(calls).toEqual(['tes_add']);
        expect(world.get(a!, Position)).toEqual({ x: 7, y: 8 });
        expect(world.get(b!, Position)).toEqual({ x: 1, y: 2 });
        expect(world.has(b!, Marked)).toBe(false);
        expect(world.has(spawned, Marked)).toBe(true);
        world.validate();
    });

    test('sparse components, relations and stale handles go to the core, which answers as before', async () => {
        const { world, entities } = await worldWith(3);
        const [a, b, c] = entities;
        world.add(a!, Flag);
        world.add(a!, Likes(c!));
        world.despawn(b!);
        const calls = insideRun(world, () => {
            expectError(() => world.add(a!, Likes as never), 'NEEDS_TARGET', { entity: a! }); // a relation: the core's
            world.remove(a!, Likes); // every pair of a: the core's
            world.remove(a!, Flag); // sparse: the core's
            expectError(() => world.add(b!, Marked), 'STALE_ENTITY', { entity: b! });
            expectError(() => world.remove(b!, Position), 'STALE_ENTITY', { entity: b! });
            expectError(() => world.despawn(b!), 'STALE_ENTITY', { entity: b! });
        });
        expect(calls).toEqual(['tes_add', 'tes_remove', 'tes_remove', 'tes_add', 'tes_remove', 'tes_despawn']);
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
