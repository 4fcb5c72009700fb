// Systems and stages: order, intervals, destroy, tick rules, deferred changes between systems.
import { describe, expect, test } from 'vitest';

import { component, tag, type TesseraError } from '../../dist/index.js';
import { expectError, sorted, worldPerTest } from './support.js';

const newWorld = worldPerTest();

const Position = component('Position', { x: 'f32', y: 'f32' });
const Velocity = component('Velocity', { x: 'f32', y: 'f32' });
const Health = component('Health', { value: 'i32' });
const Spawned = tag('Spawned');

describe('order', () => {
    test('stages run in creation order, systems in a stage in creation order', async () => {
        const world = await newWorld();
        const log: string[] = [];
        const early = world.stage('early');
        const late = world.stage('late');
        expect(world.stage('early')).toBe(early); // stage() returns the existing one
        const record = (name: string) => () => void log.push(name);
        world.system({ name: 'late-1', stage: late, query: {}, run: record('late-1') });
        world.system({ name: 'early-1', stage: 'early', query: {}, run: record('early-1') });
        world.system({ name: 'default-1', query: {}, run: record('default-1') }); // creates 'update' now
        world.system({ name: 'late-2', stage: 'late', query: {}, run: record('late-2') });
        world.system({ name: 'early-2', stage: early, query: {}, run: record('early-2') });
        const first = world.stage('first-named-last'); // created last: runs last
        world.system({ stage: first, query: {}, run: record('last') });
        world.system({ stage: 'update', query: {}, run: record('default-2') });
        world.tick();
        expect(log).toEqual(['early-1', 'early-2', 'late-1', 'late-2', 'default-1', 'default-2', 'last']);
        log.length = 0;
        world.tick();
        expect(log).toHaveLength(7);
    });

    test('a system has a name, its stage and its query; run gets the query and the world', async () => {
        const world = await newWorld();
        world.spawn(Position);
        const seen: unknown[] = [];
        const named = world.system({
            name: 'mover',
            query: { all: [Position] },
            run: (query, w) => seen.push(query, w, query.count()),
        });
        expect(named.name).toBe('mover');
        expect(named.stage.name).toBe('update');
        function fromFunction() {}
        expect(world.system({ query: {}, run: fromFunction }).name).toBe('fromFunction');
        world.tick();
        expect(seen).toEqual([named.query, world, 1]);
    });

    test('bad stage names and system descriptions are refused', async () => {
        const world = await newWorld();
        expectError(() => world.stage(''), 'INVALID_ARGUMENT', { operation: 'world.stage' });
        expectError(() => world.system({ query: {} } as never), 'INVALID_ARGUMENT', { operation: 'world.system' });
        for (const interval of [0, -1, 1.5, NaN]) {
            expectError(() => world.system({ query: {}, interval, run() {} }), 'INVALID_ARGUMENT');
        }
    });
});

describe('intervals and frames', () => {
    test('a system runs when frame % interval === 0; frame counts ticks', async () => {
        const world = await newWorld();
        const frames: Record<string, number[]> = { every: [], third: [] };
        world.system({ query: {}, run: (_, w) => void frames.every!.push(w.frame) });
        world.system({ query: {}, interval: 3, run: (_, w) => void frames.third!.push(w.frame) });
        expect(world.frame).toBe(0);
        for (let i = 0; i < 7; i++) world.tick();
        expect(world.frame).toBe(7);
        expect(world.stats().frame).toBe(7);
        expect(frames.every).toEqual([0, 1, 2, 3, 4, 5, 6]);
        expect(frames.third).toEqual([0, 3, 6]);
    });
});

describe('destroy', () => {
    test('a destroyed system no longer runs and its query is closed; destroy is idempotent', async () => {
        const world = await newWorld();
        let runs = 0;
        const system = world.system({ query: { changed: [Health] }, run: () => void runs++ });
        const queries = world.stats().queryCount;
        world.tick();
        system.destroy();
        system.destroy();
        expect(system.query.closed).toBe(true);
        expect(world.stats().queryCount).toBe(queries - 1);
        world.tick();
        expect(runs).toBe(1);
    });

    test('destroy from inside its own live iteration fails whole: the system stays registered', async () => {
        const world = await newWorld();
        world.spawn(Health);
        let runs = 0;
        let failure: TesseraError | undefined;
        const system = world.system({
            query: { all: [Health] },
            run: (query) => {
                runs++;
                for (const _ of query) {
                    try {
                        system.destroy();
                    } catch (error) {
                        failure = error as TesseraError;
                    }
                }
            },
        });
        world.tick();
        expect(failure?.code).toBe('QUERY_IN_USE');
        expect(system.query.closed).toBe(false);
        world.tick();
        expect(runs).toBe(2); // still registered
        system.destroy(); // outside the iteration: fine
        world.tick();
        expect(runs).toBe(2);
        expect(system.query.closed).toBe(true);
    });

    test('a system destroyed by an earlier one in the same tick does not run', async () => {
        const world = await newWorld();
        const log: string[] = [];
        let victim: { destroy(): void } | undefined;
        world.system({ query: {}, run: () => (log.push('killer'), victim!.destroy()) });
        victim = world.system({ query: {}, run: () => void log.push('victim') });
        world.system({ query: {}, run: () => void log.push('after') });
        world.tick();
        world.tick();
        expect(log).toEqual(['killer', 'after', 'killer', 'after']);
    });
});

describe('tick rules', () => {
    test('tick() from inside a system is an error; the outer tick completes', async () => {
        const world = await newWorld();
        let inner: TesseraError | undefined;
        world.system({
            query: {},
            run: (_, w) => {
                try {
                    w.tick();
                } catch (error) {
                    inner = error as TesseraError;
                }
            },
        });
        world.tick();
        expect(inner?.code).toBe('INVALID_ARGUMENT');
        expect(inner?.operation).toBe('world.tick');
        expect(world.frame).toBe(1);
    });

    test("tick() inside a system's loop is QUERY_IN_USE; outside, it ends the iteration left live", async () => {
        const world = await newWorld();
        world.spawn(Position);
        let inner: TesseraError | undefined;
        world.system({
            query: { all: [Position] },
            run: (query, w) => {
                for (const _ of query) {
                    try {
                        w.tick();
                    } catch (error) {
                        inner = error as TesseraError;
                    }
                }
            },
        });
        world.tick();
        expect(inner?.code).toBe('QUERY_IN_USE');
        expect(inner?.operation).toBe('world.tick');
        const it = world.query({ all: [Position] }).chunks();
        it.next();
        world.tick();
        expect(it.next().done).toBe(true);
        expect(world.frame).toBe(2);
    });

    test('a system that throws: the tick throws, the frame does not advance, the world goes on', async () => {
        const world = await newWorld();
        world.spawnMany(3, Position);
        let fail = true;
        let despawned = 0;
        world.system({
            query: { all: [Position] },
            run: (query, w) => {
                for (const chunk of query) {
                    despawned = chunk.entities[0]!;
                    w.despawn(despawned);
                    if (fail) throw new Error('system failed');
                }
            },
        });
        expect(() => world.tick()).toThrow('system failed');
        expect(world.frame).toBe(0);
        expect(world.isAlive(despawned)).toBe(false); // the run ended, its commands applied
        fail = false;
        world.tick();
        expect(world.frame).toBe(1);
        world.validate();
    });
});

describe('changes between systems', () => {
    test('deferred changes of a system are applied before the next system runs', async () => {
        const world = await newWorld();
        world.spawnMany(4, Position({ x: 1 }), Velocity({ x: 2 }));
        const seenBySecond: number[][] = [];
        world.system({
            name: 'spawner',
            query: { all: [Velocity] },
            run: (query, w) => {
                for (const chunk of query) {
                    for (let i = 0; i < chunk.count; i++) w.spawn(Spawned, Health({ value: i }));
                    w.despawn(chunk.entities[0]!);
                }
            },
        });
        world.system({
            name: 'reader',
            query: { all: [Spawned] },
            run: (query, w) => {
                const values: number[] = [];
                for (const chunk of query) for (const e of chunk.entities) values.push(w.get(e, Health, 'value'));
                seenBySecond.push(values.sort());
            },
        });
        world.tick();
        expect(seenBySecond).toEqual([[0, 1, 2, 3]]);
        expect(world.query({ all: [Velocity] }).count()).toBe(3);
        world.validate();
    });

    test('a writer system and a consumer system: each change seen once, the same tick', async () => {
        const world = await newWorld();
        const handles = world.spawnMany(5, Position, Velocity({ x: 1 }));
        const seen: number[][] = [];
        world.system({
            query: { all: [Position, Velocity], writes: [Position] },
            interval: 2,
            run: (query) => {
                for (const chunk of query) {
                    const x = chunk.column(Position, 'x');
                    const vx = chunk.column(Velocity, 'x');
                    for (let i = 0; i < chunk.count; i++) x[i]! += vx[i]!;
                }
            },
        });
        world.system({
            query: { changed: [Position] },
            run: (query) => void seen.push(sorted(query.entities())),
        });
        for (let i = 0; i < 4; i++) world.tick();
        // The writer ran on frames 0 and 2; the observer saw its writes those frames only.
        expect(seen).toEqual([sorted(handles), [], sorted(handles), []]);
        for (const e of handles) expect(world.get(e, Position, 'x')).toBe(2);
    });
});
