// Sizes, limits, lifetimes and errors, attacked from README.md ("Limits", "Errors", "Memory and
// lifetime rules", debug mode) and the .d.ts files only. "Until 2026-11-28" marks a test that
// failed then (a defect, fixed that day).
import { describe, expect, test } from 'vitest';

import { component, createWorld, init, relation, tag, TesseraError, type World } from '../../dist/index.js';
import { caught, expectError, worldPerTest } from './support.js';

const newWorld = worldPerTest();

const same = (a: Uint8Array, b: Uint8Array) => a.length === b.length && Buffer.compare(a, b) === 0;

function describeValue(value: unknown): string {
    if (typeof value === 'symbol') return 'Symbol()';
    if (typeof value === 'bigint') return `${value}n`;
    if (typeof value === 'function') return 'function';
    if (value !== null && typeof value === 'object' && Object.getPrototypeOf(value) === null) return 'Object.create(null)';
    try {
        return JSON.stringify(value) ?? String(value);
    } catch {
        return String(value);
    }
}

const P = component('LP_P', { x: 'f32', a: ['u8', 2] });
const Flag = tag('LP_Flag');
const Likes = relation('LP_Likes', { amount: 'f32' });
const Sparse = component('LP_Sparse', { v: 'u8' }, { storage: 'sparse' });
/** 2 KiB a row: a few ten thousand of them make memory grow. */
const Fat = component('LP_Fat', { y: ['f64', 256] });

// ---------------------------------------------------------------------------------------------
describe('world options at and beyond their limits', () => {
    // world-options.d.ts: chunkBytes "rounded up to a multiple of 64, at least 1024"; README:
    // "`minFreeIndices` up to 1,048,575"; checkpoints "default 16, at most 1024". Values that a
    // 32-bit store would wrap into range (2^32 + k) must be refused, not wrapped.
    test('edges accepted and rounded; one past, wrapping, non-finite and non-number values refused as INVALID_ARGUMENT', async () => {
        for (const [chunkBytes, expected] of [
            [1, 1024],
            [1024, 1024],
            [1025, 1088],
            [65536, 65536],
        ] as const) {
            const world = await newWorld({ chunkBytes });
            expect(world.stats().chunkBytes).toBe(expected);
        }
        await newWorld({ checkpoints: 1 });
        for (const options of [
            { minFreeIndices: 1_048_576 },
            { minFreeIndices: 2 ** 32 + 4096 },
            { minFreeIndices: 2 ** 32 + 1 },
            { minFreeIndices: Infinity },
            { minFreeIndices: NaN },
            { chunkBytes: 2 ** 32 },
            { chunkBytes: 2 ** 32 + 65536 },
            { chunkBytes: Infinity },
            { chunkBytes: NaN },
            { chunkBytes: -1024 },
            { checkpoints: 0 },
            { checkpoints: 1025 },
            { checkpoints: 2 ** 32 + 16 },
            { checkpoints: 2.5 },
            { checkpoints: '16' },
            { debug: 'yes' },
            { debug: 1 },
            { snapshot: [1, 2, 3] },
            { snapshot: 'bytes' },
        ]) {
            await expect(createWorld(options as never), JSON.stringify(options)).rejects.toMatchObject({
                name: 'TesseraError',
                code: 'INVALID_ARGUMENT',
                operation: 'createWorld',
            });
        }
    });
});

// ---------------------------------------------------------------------------------------------
describe('schema limits at definition', () => {
    // schema.d.ts: "`[type, length]` for a fixed array of `length` (2..256) scalars"; README:
    // "64 fields per component ... names of up to 127 UTF-8 bytes". Every size is checked when
    // the component is defined, naming the component and the field.
    test('array lengths 2 and 256 define; 1, 257, 0, negative, fractional, NaN and wrapping lengths are BAD_SCHEMA naming component and field', () => {
        expect(component('LP_A2', { a: ['f64', 2] }).fields[0]!.length).toBe(2);
        expect(component('LP_A256', { a: ['u8', 256] }).fields[0]!.length).toBe(256);
        for (const length of [1, 257, 0, -1, -256, 1.5, NaN, Infinity, 2 ** 32 + 2, 2 ** 32 + 256, 2 ** 53]) {
            const error = expectError(() => component('LP_Abad', { arr: ['u8', length] }), 'BAD_SCHEMA', {
                component: 'LP_Abad',
                field: 'arr',
            });
            expect(error.operation).toBe('component');
        }
        const fields65 = Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`f${i}`, 'u8' as const]));
        expectError(() => component('LP_F65', fields65), 'BAD_SCHEMA', { component: 'LP_F65' });
        expectError(() => relation('LP_R65', fields65), 'BAD_SCHEMA', { component: 'LP_R65' });
        const long = 'é'.repeat(64); // 128 UTF-8 bytes, 64 UTF-16 units
        expectError(() => component('LP_Long', { [long]: 'u8' }), 'BAD_SCHEMA', { component: 'LP_Long' });
        expectError(() => tag(long), 'BAD_SCHEMA');
        expectError(() => relation(long), 'BAD_SCHEMA');
        expect(component('LP_F127', { ['y'.repeat(127)]: 'u8' }).fields[0]!.name.length).toBe(127);
    });
});

// ---------------------------------------------------------------------------------------------
describe('arguments from plain JavaScript: every refusal is a TesseraError and changes nothing', () => {
    const JUNK: readonly unknown[] = [
        undefined,
        null,
        {},
        [],
        -1,
        NaN,
        Infinity,
        1.5,
        'x',
        Symbol('s'),
        2 ** 53,
        -0,
        true,
        10n,
        () => 1,
        { length: 3 },
        ['1', 2.5],
        new Uint8Array(3),
    ];

    // README (Errors): "Every failure is a `TesseraError` with a stable `code`, the `operation`
    // ...; a failed call leaves the world exactly as it was (its snapshot is the same bytes)."
    test('junk in every argument position of ~80 calls: a TesseraError with an operation, the same snapshot, valid storage', async () => {
        const world = await newWorld();
        const es = world.spawnMany(6, P, Sparse);
        world.addPair(es[0]!, Likes, es[1]!);
        world.setParent(es[2]!, es[0]!);
        const e = es[0]!;
        const q = world.query({ all: [P] });
        const sub = world.subscribe({ added: [P], removed: [P] });
        const replicator = world.replicator();
        const peer = replicator.peer();
        const field = world.field(P, 'x');
        world.checkpoint();
        const w = world as any;
        const calls: Record<string, (j: any) => unknown> = {
            spawn: (j) => w.spawn(j),
            spawnManyCount: (j) => w.spawnMany(j, P),
            spawnManyItem: (j) => w.spawnMany(2, j),
            despawn: (j) => w.despawn(j),
            despawnMany: (j) => w.despawnMany(j),
            add: (j) => w.add(e, j),
            addTo: (j) => w.add(j, Flag),
            remove: (j) => w.remove(e, j),
            has: (j) => w.has(e, j),
            get: (j) => w.get(e, j),
            set: (j) => w.set(e, P, j),
            setField: (j) => w.set(e, P, 'x', j),
            setArray: (j) => w.set(e, P, 'a', j),
            setName: (j) => w.set(e, P, j, 1),
            markChanged: (j) => w.markChanged(e, j),
            fieldOf: (j) => w.field(j, 'x'),
            fieldGet: (j) => field.get(j),
            fieldSet: (j) => field.set(e, j),
            addPair: (j) => w.addPair(e, Likes, j),
            addPairValues: (j) => w.addPair(e, Likes, es[3], j),
            addPairRelation: (j) => w.addPair(e, j, es[3]),
            removePair: (j) => w.removePair(e, Likes, j),
            hasPair: (j) => w.hasPair(e, j, es[1]),
            setPair: (j) => w.setPair(e, Likes, es[1], j),
            setPairField: (j) => w.setPair(e, Likes, es[1], j, 1),
            setPairValue: (j) => w.setPair(e, Likes, es[1], 'amount', j),
            targets: (j) => w.targets(j, Likes),
            target: (j) => w.target(e, j),
            sources: (j) => w.sources(Likes, j),
            pairs: (j) => w.pairs(j),
            placePair: (j) => w.placePair(e, Likes, es[1], j),
            setParent: (j) => w.setParent(es[3], j),
            setParentBefore: (j) => w.setParent(es[3], es[0], j),
            parentOf: (j) => w.parentOf(j),
            childrenOf: (j) => w.childrenOf(j),
            descendants: (j) => w.descendants(e, j),
            walk: (j) => w.walk(e, j),
            walkRoot: (j) => w.walk(j, () => {}),
            query: (j) => w.query(j),
            queryAll: (j) => w.query({ all: j }),
            queryTerm: (j) => w.query({ all: [j] }),
            subscribe: (j) => w.subscribe(j),
            subscribeRemoved: (j) => w.subscribe({ removed: [j] }),
            stage: (j) => w.stage(j),
            system: (j) => w.system(j),
            systemInterval: (j) => w.system({ query: {}, run() {}, interval: j }),
            systemRun: (j) => w.system({ query: {}, run: j }),
            systemStage: (j) => w.system({ query: {}, run() {}, stage: j }),
            rewind: (j) => w.rewind(j),
            applyDelta: (j) => w.applyDelta(j),
            replicator: (j) => w.replicator(j),
            peer: (j) => replicator.peer(j),
            ack: (j) => peer.ack(j),
            show: (j) => peer.show(e, j),
            showEntity: (j) => peer.show(j),
            hide: (j) => peer.hide(j),
            fill: (j) => q.fill(P, 'x', j),
            fillField: (j) => q.fill(P, j, 1),
            fillComponent: (j) => q.fill(j, 'x', 1),
            addScaled: (j) => q.addScaled(P, 'x', P, 'a' as never, j),
            addScaledSource: (j) => q.addScaled(P, 'x', P, j, 1),
            clamp: (j) => q.clamp(P, 'x', j, 2),
            clampHigh: (j) => q.clamp(P, 'x', 0, j),
            countdown: (j) => q.countdown(P, 'x', j),
            countdownField: (j) => q.countdown(P, j, 1),
            addAll: (j) => q.addAll(j),
            removeAll: (j) => q.removeAll(j),
            removedOf: (j) => sub.drain().removedOf(j),
            spawnValues: (j) => w.spawn(P(j)),
            spawnValueX: (j) => w.spawn(P({ x: j })),
            spawnValueA: (j) => w.spawn(P({ a: j })),
            columns: (j) => w.spawnMany(2, P.columns(j)),
            columnX: (j) => w.spawnMany(2, P.columns({ x: j })),
            columnA: (j) => w.spawnMany(2, P.columns({ a: j })),
            pairTarget: (j) => w.spawn((Likes as any)(j)),
            pairValues: (j) => w.spawn((Likes as any)(e, j)),
            chunkColumn: (j) => {
                for (const c of q) c.column(P, j);
            },
            chunkColumnComponent: (j) => {
                for (const c of q) c.column(j, 'x');
            },
            chunkMarkComponent: (j) => {
                for (const c of q) c.markChanged(j);
            },
        };
        const wrong: string[] = [];
        for (const [name, call] of Object.entries(calls)) {
            for (const j of JUNK) {
                const before = world.snapshot();
                const thrown = caught(() => call(j));
                const what = `${name}(${describeValue(j)})`;
                if (thrown !== undefined && !(thrown instanceof TesseraError)) wrong.push(`${what}: ${String(thrown)}`);
                if (thrown instanceof TesseraError && !thrown.operation) wrong.push(`${what}: no operation`);
                if (thrown !== undefined && !same(before, world.snapshot())) wrong.push(`${what}: refused, but the snapshot changed`);
                try {
                    world.validate();
                } catch (error) {
                    wrong.push(`${what}: ${String(error)}`);
                }
            }
        }
        expect(wrong).toEqual([]);
        expect([...es].every((x) => world.isAlive(x))).toBe(true);
    });

    // README: "Every failure is a `TesseraError`"; despawnMany takes an `ArrayLike<Entity>`.
    // Until 2026-11-28 (fixed): despawnMany of an array-like whose length is negative or huge throws a RangeError from allocating a typed array, not a TesseraError.
    test('despawnMany of an array-like with a negative or huge length is a TesseraError, nothing despawned', async () => {
        const world = await newWorld();
        const es = world.spawnMany(4, P);
        for (const length of [-1, 2 ** 40]) {
            const before = world.snapshot();
            const thrown = caught(() => world.despawnMany({ length } as ArrayLike<number>));
            expect(thrown, `length ${length}: ${String(thrown)}`).toBeInstanceOf(TesseraError);
            expect(same(before, world.snapshot())).toBe(true);
        }
        expect([...es].every((x) => world.isAlive(x))).toBe(true);
    });

    // README: "Every failure is a `TesseraError` with a stable `code`, the `operation`, and the
    // entity, component and field involved"; "Arguments are checked as plain JavaScript passes them".
    // Until 2026-11-28 (fixed): a bigint or null-prototype field name makes world.get / world.field / world.getPair throw a TypeError (from building the message) instead of a TesseraError.
    test('a field name that is a bigint or a null-prototype object is refused with a TesseraError by get, field and getPair', async () => {
        const world = await newWorld();
        const [a, b] = world.spawnMany(2, P);
        world.addPair(a!, Likes, b!);
        const wrong: string[] = [];
        for (const name of [10n, Object.create(null)]) {
            for (const [operation, call] of [
                ['world.get', () => world.get(a!, P, name as never)],
                ['world.field', () => world.field(P, name as never)],
                ['world.getPair', () => world.getPair(a!, Likes, b!, name as never)],
            ] as const) {
                const thrown = caught(call);
                if (!(thrown instanceof TesseraError)) wrong.push(`${operation}(${describeValue(name)}): ${String(thrown)}`);
                else expect(thrown.operation).toBe(operation);
            }
        }
        expect(wrong).toEqual([]);
    });

    // README: "Every failure is a `TesseraError`"; chunk.markChanged(C, row) refuses a row that is
    // not a row of the chunk (INVALID_ARGUMENT "row -1 is not in 0..3" for numbers and strings).
    // Until 2026-11-28 (fixed): chunk.markChanged(C, row) with a bigint, a symbol or a null-prototype object as the row throws a TypeError, not a TesseraError.
    test('chunk.markChanged with a bigint, symbol or null-prototype row is a TesseraError and marks nothing', async () => {
        const world = await newWorld();
        world.spawnMany(4, P);
        const sub = world.subscribe({ changed: [P] });
        sub.drain();
        const q = world.query({ all: [P] });
        const wrong: string[] = [];
        for (const row of [3n, Symbol('row'), Object.create(null)]) {
            const thrown = caught(() => {
                for (const chunk of q) chunk.markChanged(P, row as never);
            });
            if (!(thrown instanceof TesseraError)) wrong.push(`markChanged(P, ${describeValue(row)}): ${String(thrown)}`);
        }
        expect(wrong).toEqual([]);
        expect(sub.drain().entities.length).toBe(0);
    });
});

// ---------------------------------------------------------------------------------------------
describe('a destroyed world', () => {
    // world.d.ts destroy(): "any later use of them, of the world, of a chunk, an iterator or a
    // delta of it throws `DESTROYED`". These calls are not in errors.test.ts / contract-limits.
    test('relation, hierarchy, kernel and bulk calls throw DESTROYED', async () => {
        const world = await createWorld();
        const [a, b, c] = world.spawnMany(3, P);
        world.addPair(a!, Likes, b!);
        world.setParent(c!, a!);
        const q = world.query({ all: [P] });
        const sub = world.subscribe({ pairs: [Likes] });
        world.destroy();
        const uses: Record<string, () => unknown> = {
            addPair: () => world.addPair(a!, Likes, c!),
            removePair: () => world.removePair(a!, Likes, b!),
            hasPair: () => world.hasPair(a!, Likes, b!),
            getPair: () => world.getPair(a!, Likes, b!),
            setPair: () => world.setPair(a!, Likes, b!, { amount: 1 }),
            targets: () => world.targets(a!, Likes),
            target: () => world.target(a!, Likes),
            sources: () => world.sources(Likes, b!),
            pairs: () => world.pairs(Likes),
            placePair: () => world.placePair(a!, Likes, b!),
            setParent: () => world.setParent(b!, a!),
            parentOf: () => world.parentOf(c!),
            childrenOf: () => world.childrenOf(a!),
            descendants: () => world.descendants(a!),
            walk: () => world.walk(a!, () => {}),
            stopRollback: () => world.stopRollback(),
            checkpoints: () => world.checkpoints,
            replicaTick: () => world.replicaTick,
            offset: () => q.offset(P, 'x', 1),
            scale: () => q.scale(P, 'x', 2),
            addScaled: () => q.addScaled(P, 'x', P, 'x', 1),
            clamp: () => q.clamp(P, 'x', 0, 1),
            countdown: () => q.countdown(P, 'x', 1),
            removeAll: () => q.removeAll(P),
            despawnAll: () => q.despawnAll(),
            entities: () => q.entities(),
            subscriptionChunks: () => [...sub.chunks()],
            remove: () => world.remove(a!, Likes),
        };
        const wrong: string[] = [];
        for (const [name, use] of Object.entries(uses)) {
            const thrown = caught(use);
            if (!(thrown instanceof TesseraError) || thrown.code !== 'DESTROYED') wrong.push(`${name}: ${String(thrown)}`);
        }
        expect(wrong).toEqual([]);
    });

    // world.d.ts destroy(): "any later use of them, of the world, ... throws `DESTROYED`".
    // (world.checkpoints and world.replicaTick do throw it; world.destroyed is the one answer left.)
    // Until 2026-11-28 (fixed): world.componentById(id) and world.frame still answer after destroy() (a component of the freed world, and 0) instead of throwing DESTROYED.
    test('componentById and frame of a destroyed world throw DESTROYED', async () => {
        const world = await createWorld();
        world.spawn(P);
        world.tick();
        world.destroy();
        expect(world.destroyed).toBe(true);
        const wrong: string[] = [];
        for (const [name, use] of [
            ['componentById', () => world.componentById(0)],
            ['componentById', () => world.componentById(1)],
            ['frame', () => world.frame],
        ] as const) {
            const thrown = caught(use);
            if (!(thrown instanceof TesseraError) || thrown.code !== 'DESTROYED')
                wrong.push(`${name}: ${thrown === undefined ? 'answered' : String(thrown)}`);
        }
        expect(wrong).toEqual([]);
    });

    // README: "world.destroy() always succeeds"; "their iterators and chunks throw DESTROYED".
    test('destroy() from inside a system ends the tick with DESTROYED; later systems do not run on freed memory', async () => {
        const world = await createWorld();
        world.spawnMany(10, P);
        let later = 0;
        world.system({
            query: { all: [P], writes: [P] },
            run(query, w) {
                for (const chunk of query) {
                    chunk.column(P, 'x')[0] = 1;
                    w.destroy();
                }
            },
        });
        world.system({ query: { all: [P] }, run: () => void later++ });
        expectError(() => world.tick(), 'DESTROYED');
        expect(world.destroyed).toBe(true);
        expect(later).toBe(0);
        world.destroy();
    });
});

// ---------------------------------------------------------------------------------------------
describe('two worlds in one module', () => {
    // README: "stale entity handles are detected on every call and never touch another entity's
    // data"; a world's handles mean nothing in another world.
    test("world A's handles used in world B are STALE_ENTITY everywhere and change nothing in B; B's field handle refuses A's entities", async () => {
        const A = await newWorld();
        const B = await newWorld();
        B.spawnMany(3, P({ x: 5 }));
        const mine = A.spawnMany(20, P({ x: 1 }), Flag);
        const foreign = mine[19]!; // index 19: B never had it
        const bSnapshot = B.snapshot();
        const [b0] = B.query({ all: [P] }).entities();
        for (const [operation, call] of [
            ['world.get', () => B.get(foreign, P)],
            ['world.set', () => B.set(foreign, P, { x: 9 })],
            ['world.despawn', () => B.despawn(foreign)],
            ['world.add', () => B.add(foreign, Flag)],
            ['world.despawnMany', () => B.despawnMany([b0!, foreign])],
            ['world.addPair', () => B.addPair(b0!, Likes, foreign)],
            ['field.get', () => B.field(P, 'x').get(foreign)],
            ['field.set', () => B.field(P, 'x').set(foreign, 3)],
        ] as const) {
            expectError(call, 'STALE_ENTITY', { operation, entity: foreign });
        }
        expect(B.isAlive(foreign)).toBe(false);
        expect(same(B.snapshot(), bSnapshot)).toBe(true);
        expect(A.get(foreign, P, 'x')).toBe(1);
        expect(A.componentById(B.stats().componentCount + 5)).toBeUndefined();
    });
});

// ---------------------------------------------------------------------------------------------
describe('memory: lifetimes and views (each test on its own 16 MiB module, so growth is cheap to cause)', () => {
    const MIB = 2 ** 20;

    // README (Lifetimes): "`world.destroy()` frees everything and always succeeds"; a world left
    // with a live iteration, open queries, subscriptions, replicators and checkpoints too.
    test('300 worlds made, used and destroyed in a loop: module memory stops growing after the first', async () => {
        const module = await init({ memory: 16 * MIB });
        const sizes: number[] = [];
        for (let i = 0; i < 300; i++) {
            const world = module.createWorld({ debug: i % 2 === 0 });
            const es = world.spawnMany(3000, P({ x: 1 }), Sparse);
            world.addPair(es[0]!, Likes, es[1]!, { amount: 2 });
            world.setParent(es[2]!, es[0]!);
            const q = world.query({ all: [P], writes: [P] });
            for (const chunk of q) chunk.column(P, 'x')[0] = 2;
            const sub = world.subscribe({ changed: [P], removed: [P] });
            world.despawnMany(es.subarray(100, 600));
            sub.drain();
            world.checkpoint();
            world.set(es[700]!, P, { x: 9 });
            world.checkpoint();
            world.rewind(1);
            world.replicator().peer().encode();
            world.snapshot();
            q.chunks().next(); // left live
            if (i % 50 === 10) sizes.push(module.memory.buffer.byteLength);
            world.destroy();
        }
        expect(new Set(sizes).size, `memory by iteration: ${sizes.join(', ')}`).toBe(1);
    });

    // README (Memory and lifetime rules): "a view kept past its loop may be detached (reads give
    // `undefined`, writes are lost)"; "Debug mode ... touching one after memory grew throws
    // `VIEW_DETACHED`"; chunk.d.ts: "A chunk used after its iteration moved on ... throws `CHUNK_EXPIRED`".
    test('views kept past their loop after memory grew: VIEW_DETACHED in debug, undefined otherwise; the chunk is CHUNK_EXPIRED', async () => {
        for (const debug of [true, false]) {
            const module = await init({ memory: 16 * MIB });
            const world = module.createWorld({ debug });
            try {
                world.spawnMany(100, P({ x: 7 }));
                let column: Float32Array | undefined;
                let entities: Uint32Array | undefined;
                let kept: import('../../dist/index.js').Chunk | undefined;
                for (const chunk of world.query({ all: [P] })) {
                    column = chunk.column(P, 'x');
                    entities = chunk.entities;
                    kept = chunk;
                }
                const size = module.memory.buffer.byteLength;
                world.spawnMany(100_000, Fat);
                expect(module.memory.buffer.byteLength).toBeGreaterThan(size);
                if (debug) {
                    expectError(() => column![0], 'VIEW_DETACHED', { component: 'LP_P', field: 'x' });
                    expectError(() => {
                        column![0] = 1;
                    }, 'VIEW_DETACHED');
                    expectError(() => entities![0], 'VIEW_DETACHED');
                } else {
                    expect(column![0]).toBeUndefined();
                    column![0] = 1; // lost
                }
                expectError(() => kept!.column(P, 'x'), 'CHUNK_EXPIRED');
                const [first] = world.query({ all: [P] }).entities();
                expect(world.get(first!, P, 'x')).toBe(7);
            } finally {
                world.destroy();
            }
        }
    });

    // README: "A loop over one world nested in a loop over another is the exception: the inner
    // loop's changes apply when it ends, inside the outer loop, and may detach the outer loop's
    // views" + debug mode: such a view then throws VIEW_DETACHED; the chunk answers fresh views.
    test("debug: an inner loop over another world that grows memory makes the outer loop's views throw VIEW_DETACHED; fresh ones read right", async () => {
        const module = await init({ memory: 16 * MIB });
        const A = module.createWorld({ debug: true });
        const B = module.createWorld({ debug: true });
        try {
            A.spawnMany(10, P({ x: 7 }));
            B.spawnMany(10, P);
            let grew = false;
            for (const chunk of A.query({ all: [P] })) {
                const column = chunk.column(P, 'x');
                const size = module.memory.buffer.byteLength;
                for (const _ of B.query({ all: [P] })) B.spawnMany(100_000, Fat);
                grew = module.memory.buffer.byteLength > size;
                if (grew) expectError(() => column[0], 'VIEW_DETACHED');
                expect(chunk.column(P, 'x')[0]).toBe(7);
            }
            expect(grew).toBe(true);
            expect(B.stats().entityCount).toBe(100_010);
        } finally {
            A.destroy();
            B.destroy();
        }
    });

    // README: "While a loop over a query is live, memory does not grow"; "An iteration ... left
    // live ... holds the module's run reserve: a call that needs more room gets `OUT_OF_MEMORY`".
    test("inside a loop over world A, a plain call on world B that needs more than the reserve is OUT_OF_MEMORY: B unchanged, A's views intact", async () => {
        const module = await init({ memory: 16 * MIB });
        const A = module.createWorld({ debug: true });
        const B = module.createWorld({ debug: true });
        try {
            A.spawnMany(100, P({ x: 3 }));
            B.spawnMany(5, P);
            const before = B.snapshot();
            for (const chunk of A.query({ all: [P] })) {
                const column = chunk.column(P, 'x');
                const size = module.memory.buffer.byteLength;
                expectError(() => B.spawnMany(50_000, Fat), 'OUT_OF_MEMORY', { operation: 'world.spawnMany' });
                expect(module.memory.buffer.byteLength).toBe(size);
                expect(column[99]).toBe(3);
            }
            expect(same(B.snapshot(), before)).toBe(true);
            B.validate();
            expect(B.spawnMany(50_000, Fat).length).toBe(50_000); // outside the loop, memory may grow
        } finally {
            A.destroy();
            B.destroy();
        }
    });
});
