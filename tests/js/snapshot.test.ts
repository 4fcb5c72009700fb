// Snapshots from JS: world.snapshot() and createWorld({ snapshot }) round-trip randomized worlds
// (handles, values, sparse components, pairs with data, child order, the next spawned handles,
// the same bytes again); components are matched by name and schema; bad bytes are refused with
// BAD_SNAPSHOT / SNAPSHOT_VERSION and make no world. world.hash() is XXH64 of the snapshot's body
// (checked against a plain BigInt XXH64 here), equal for equal states, changed by any write.
import { describe, expect, test } from 'vitest';

import { ChildOf, component, relation, tag, type Entity, type World } from '../../dist/index.js';
import { expectError, expectRejection, observeMixed, randomChanges, rng, worldPerTest } from './support.js';

const newWorld = worldPerTest();

const Body = component('SnapBody', { x: 'f32', hp: 'i16', tags: ['u8', 3], mass: 'f64' });
const Vel = component('SnapVel', { x: 'f32' });
const Frozen = tag('SnapFrozen');
const Weight = component('SnapWeight', { w: 'f64' }, { storage: 'sparse' });
const Marked = tag('SnapMarked', { storage: 'sparse' });
const Likes = relation('SnapLikes', { amount: 'f32' });

const kinds = { Body, Vel, Frozen, Weight, Marked, Likes };

/** A world after a random history; returns every handle it ever handed out. */
function randomHistory(world: World, seed: number, steps: number): Entity[] {
    const all: Entity[] = [];
    randomChanges(world, kinds, rng(seed), steps, all, []);
    return all;
}

/** Everything observable about the handles in both worlds, pairs and child order included. */
function observe(world: World, handles: readonly Entity[]): unknown {
    return {
        ...(observeMixed(world, kinds, handles) as object),
        stats: (({ entityCount, entityCapacity, freeQueueLength }) => ({ entityCount, entityCapacity, freeQueueLength }))(world.stats()),
    };
}

describe('snapshots', () => {
    test('random worlds round-trip: the same handles, values, pairs, order and bytes', async () => {
        for (const seed of [1, 2, 3, 4]) {
            const world = await newWorld({ minFreeIndices: 8 });
            const handles = randomHistory(world, seed, 600);
            const bytes = world.snapshot();
            expect(bytes).toBeInstanceOf(Uint8Array);
            const copy = await newWorld({ minFreeIndices: 8, snapshot: bytes });
            expect(observe(copy, handles)).toEqual(observe(world, handles));
            expect(copy.snapshot()).toEqual(bytes);
            // The next handles are the same in both.
            for (let i = 0; i < 10; i++) expect(copy.spawn(Body)).toBe(world.spawn(Body));
            // Queries see the same entities (sparse terms and pair terms included).
            const ids = (w: World) => [...w.query({ all: [Marked], none: [ChildOf] }).entities()].sort((a, b) => a - b);
            expect(ids(copy)).toEqual(ids(world));
        }
    });

    test('the snapshot is a copy: later changes do not reach it', async () => {
        const world = await newWorld();
        const e = world.spawn(Body({ x: 1 }));
        const bytes = world.snapshot();
        const again = bytes.slice();
        world.set(e, Body, { x: 2 });
        world.snapshot();
        expect(bytes).toEqual(again);
        const copy = await newWorld({ snapshot: bytes });
        expect(copy.get(e, Body).x).toBe(1);
    });

    test('a component with the same name and another schema is refused', async () => {
        const world = await newWorld();
        world.spawn(Body);
        const copy = await newWorld({ snapshot: world.snapshot() });
        const Imposter = component('SnapBody', { y: 'f32' });
        expectError(() => copy.spawn(Imposter), 'BAD_SCHEMA', { component: 'SnapBody' });
        const SparseImposter = component('SnapBody', { x: 'f32', hp: 'i16', tags: ['u8', 3], mass: 'f64' }, { storage: 'sparse' });
        expectError(() => copy.spawn(SparseImposter), 'BAD_SCHEMA');
        expect(copy.spawn(Body)).toBeGreaterThan(0); // the real definition is matched
    });

    test('not inside a loop', async () => {
        const world = await newWorld();
        world.spawn(Body);
        for (const _ of world.query({ all: [Body] })) {
            expectError(() => world.snapshot(), 'INVALID_ARGUMENT', { operation: 'world.snapshot' });
        }
        expect(world.snapshot().length).toBeGreaterThan(16);
    });

    test('a snapshot after a peak costs what is live, and restores the same next handles', async () => {
        // Version 1 wrote 8 bytes for every index ever used: 20,000 live after a peak of 1M
        // came to 8,160,090 bytes against 320,090 for a world that never held more.
        const Point = component('SnapPoint', { x: 'f32', y: 'f32' });
        const fresh = await newWorld();
        fresh.spawnMany(20_000, Point);
        const peaked = await newWorld();
        const all = peaked.spawnMany(1_000_000, Point);
        peaked.despawnMany(all.subarray(20_000));
        const bytes = peaked.snapshot();
        expect(bytes.length).toBeLessThan(fresh.snapshot().length + 32);
        const copy = await newWorld({ snapshot: bytes });
        for (let i = 0; i < 5; i++) expect(copy.spawn(Point)).toBe(peaked.spawn(Point));
    });

    test('bad bytes make no world: truncated, corrupted, another version, not bytes', async () => {
        const world = await newWorld();
        randomHistory(world, 9, 120);
        const bytes = world.snapshot();
        const before = world.stats().bytesAllocated;
        for (const cut of [0, 3, 15, 16, 40, bytes.length - 1]) {
            await expectRejection(newWorld({ snapshot: bytes.subarray(0, cut) }), 'BAD_SNAPSHOT', { operation: 'createWorld' });
        }
        for (const at of [0, 9, 13, 20, bytes.length >> 1, bytes.length - 1]) {
            const bad = bytes.slice();
            bad[at]! ^= 0x10;
            await expectRejection(newWorld({ snapshot: bad }), 'BAD_SNAPSHOT');
        }
        const future = bytes.slice();
        future[4] = 9;
        await expectRejection(newWorld({ snapshot: future }), 'SNAPSHOT_VERSION');
        await expectRejection(newWorld({ snapshot: [1, 2, 3] as unknown as Uint8Array }), 'INVALID_ARGUMENT');
        expect(world.stats().bytesAllocated).toBe(before);
        expect((await newWorld({ snapshot: bytes })).stats().entityCount).toBe(world.stats().entityCount);
    });

    test('world.hash() is XXH64 of the snapshot body, equal for equal states, changed by any write', async () => {
        // The reference itself first: xxHash's published values.
        expect(xxh64(new Uint8Array(0))).toBe(0xef46db3751d8e999n);
        expect(xxh64(new TextEncoder().encode('abc'))).toBe(0x44bc2cf5ad770999n);
        for (const seed of [5, 6]) {
            const world = await newWorld({ minFreeIndices: 8 });
            randomHistory(world, seed, 400);
            const hash = world.hash();
            expect(typeof hash).toBe('bigint');
            expect(hash).toBe(xxh64(world.snapshot().subarray(16)));
            const copy = await newWorld({ minFreeIndices: 8, snapshot: world.snapshot() });
            expect(copy.hash()).toBe(hash);
        }
        // A write through a column view reaches the hash too (it reads memory, not a log).
        const world = await newWorld();
        const e = world.spawn(Body({ x: 1 }));
        const before = world.hash();
        for (const chunk of world.query({ all: [Body] })) chunk.column(Body, 'x')[0] = 2;
        expect(world.get(e, Body, 'x')).toBe(2);
        expect(world.hash()).not.toBe(before);
        world.set(e, Body, 'x', 1);
        expect(world.hash()).toBe(before);
        for (const _ of world.query({ all: [Body] })) {
            expectError(() => world.hash(), 'INVALID_ARGUMENT', { operation: 'world.hash' });
        }
    });
});

/** XXH64 with seed 0, written plainly with BigInt (the reference the core's hash is held to). */
function xxh64(bytes: Uint8Array): bigint {
    const M = (1n << 64n) - 1n;
    const [P1, P2, P3, P4, P5] = [0x9e3779b185ebca87n, 0xc2b2ae3d27d4eb4fn, 0x165667b19e3779f9n, 0x85ebca77c2b2ae63n, 0x27d4eb2f165667c5n];
    const rotl = (x: bigint, r: bigint) => ((x << r) | (x >> (64n - r))) & M;
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const round = (acc: bigint, input: bigint) => (rotl((acc + input * P2) & M, 31n) * P1) & M;
    const n = bytes.length;
    let at = 0;
    let h: bigint;
    if (n >= 32) {
        const v = [(P1 + P2) & M, P2, 0n, (M + 1n - P1) & M];
        for (; n - at >= 32; at += 32) for (let l = 0; l < 4; l++) v[l] = round(v[l]!, view.getBigUint64(at + 8 * l, true));
        h = (rotl(v[0]!, 1n) + rotl(v[1]!, 7n) + rotl(v[2]!, 12n) + rotl(v[3]!, 18n)) & M;
        for (const lane of v) h = ((((h ^ round(0n, lane)) * P1) & M) + P4) & M;
    } else {
        h = P5;
    }
    h = (h + BigInt(n)) & M;
    for (; n - at >= 8; at += 8) h = (((rotl(h ^ round(0n, view.getBigUint64(at, true)), 27n) * P1) & M) + P4) & M;
    if (n - at >= 4) {
        h = (((rotl(h ^ ((BigInt(view.getUint32(at, true)) * P1) & M), 23n) * P2) & M) + P3) & M;
        at += 4;
    }
    for (; at < n; at++) h = (rotl(h ^ ((BigInt(bytes[at]!) * P5) & M), 11n) * P1) & M;
    h = ((h ^ (h >> 33n)) * P2) & M;
    h = ((h ^ (h >> 29n)) * P3) & M;
    return h ^ (h >> 32n);
}
