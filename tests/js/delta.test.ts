// Deltas from JS: a replica fed by world.replicator() deltas equals the source after every tick
// (randomized worlds: spawns, despawns with cascades, components, sparse components, pairs with
// data, reordered children); lost, late and reordered deltas follow the baseline rules through a
// Peer; `replicate: false` components stay out and the replica's own stay; a scope limits the
// entities; the replica's subscriptions see the changes; bad bytes are refused and change
// nothing; the delta's bytes are a view that a later encode invalidates; `quantize` sends chosen
// float fields as multiples of a step, in fewer bytes.
import { describe, expect, test } from 'vitest';

import { ChildOf, component, relation, tag, type Entity, type World } from '../../dist/index.js';
import { expectError, observeMixed, randomChanges, rng, worldPerTest } from './support.js';

const newWorld = worldPerTest();

const Body = component('DeltaBody', { x: 'f32', hp: 'i16', tags: ['u8', 3], mass: 'f64' });
const Vel = component('DeltaVel', { x: 'f32' });
const Frozen = tag('DeltaFrozen');
const Weight = component('DeltaWeight', { w: 'f64' }, { storage: 'sparse' });
const Marked = tag('DeltaMarked', { storage: 'sparse' });
const Likes = relation('DeltaLikes', { amount: 'f32' });
const Sprite = component('DeltaSprite', { frame: 'u16' }, { replicate: false });

const kinds = { Body, Vel, Frozen, Weight, Marked, Likes, extra: [Sprite] };
const Pos = component('DeltaPos', { x: 'f32', y: 'f32', hp: 'i16', path: ['f64', 2] });

/** Everything replicated about the handles: components, values, pairs, child order. */
function observe(world: World, handles: readonly Entity[]): unknown {
    return observeMixed(world, kinds, handles);
}

/** A source (indices reused early) and an empty replica, a seeded generator, and the lists randomChanges keeps. */
async function pair(seed: number) {
    return {
        source: await newWorld({ minFreeIndices: 8 }),
        replica: await newWorld(),
        below: rng(seed),
        all: [] as Entity[],
        live: [] as Entity[],
    };
}

describe('deltas', () => {
    test('a replica fed a delta per tick equals the source after every tick', async () => {
        for (const seed of [1, 2, 3]) {
            const { source, replica, below, all, live } = await pair(seed);
            randomChanges(source, kinds, below, 80, all, live, 0);
            const peer = source.replicator().peer();
            for (let tick = 0; tick < 40; tick++) {
                if (tick > 0) randomChanges(source, kinds, below, 1 + below(6), all, live, tick * 10);
                const delta = peer.encode();
                expect(delta.keyframe).toBe(tick === 0);
                expect(replica.applyDelta(delta.bytes)).toBe(true);
                expect(replica.replicaTick).toBe(delta.tick);
                peer.ack(replica.replicaTick);
                expect(observe(replica, all)).toEqual(observe(source, all));
                source.tick();
            }
            replica.validate();
        }
    });

    test('a replica that rewinds has its tick then: a later baseline is refused, and a keyframe catches it up', async () => {
        const { source, replica, below, all, live } = await pair(4);
        randomChanges(source, kinds, below, 80, all, live, 0);
        const peer = source.replicator().peer();
        const kept: { checkpoint: number; tick: number; bytes: Uint8Array }[] = [];
        for (let tick = 0; tick < 12; tick++) {
            if (tick > 0) randomChanges(source, kinds, below, 1 + below(6), all, live, tick * 10);
            expect(replica.applyDelta(peer.encode().bytes)).toBe(true);
            peer.ack(replica.replicaTick);
            source.tick();
            kept.push({ checkpoint: replica.checkpoint(), tick: replica.replicaTick, bytes: replica.snapshot().slice() });
        }
        const back = kept[6]!;
        replica.rewind(back.checkpoint);
        expect(replica.replicaTick).toBe(back.tick);
        expect(replica.snapshot()).toEqual(back.bytes);
        // The peer's baseline is the newest tick acknowledged: the replica no longer has it.
        randomChanges(source, kinds, below, 4, all, live, 500);
        const before = replica.snapshot().slice();
        expectError(() => replica.applyDelta(peer.encode().bytes), 'DELTA_BASELINE');
        expect(replica.snapshot()).toEqual(before);
        peer.reset();
        const key = peer.encode();
        expect(key.keyframe).toBe(true);
        expect(replica.applyDelta(key.bytes)).toBe(true);
        expect(observe(replica, all)).toEqual(observe(source, all));
        replica.validate();
    });

    test('lost, late and reordered deltas: the replica equals the source at the tick it applied', async () => {
        const { source, replica, below, all, live } = await pair(9);
        const peer = source.replicator({ history: 16 }).peer();
        const sent: { bytes: Uint8Array; tick: number; state: unknown }[] = [];
        const acks: number[] = []; // acknowledgements in flight, two ticks late
        let applied = 0;
        let late = 0;
        for (let t = 0; t < 60; t++) {
            randomChanges(source, kinds, below, 1 + below(5), all, live, t * 10);
            if (acks.length > 2) peer.ack(acks.shift()!);
            const delta = peer.encode();
            sent.push({ bytes: delta.bytes.slice(), tick: delta.tick, state: observe(source, all) });
            source.tick();
            const fate = below(3); // lost, delivered, or delivered after the next one
            if (fate === 0) continue;
            const order = fate === 2 && t > 0 ? [t, t - 1] : [t];
            for (const i of order) {
                const message = sent[i]!;
                const before = replica.replicaTick;
                if (message.tick <= before) {
                    expect(replica.applyDelta(message.bytes)).toBe(false);
                    late++;
                    continue;
                }
                try {
                    expect(replica.applyDelta(message.bytes)).toBe(true);
                } catch (error) {
                    // Encoded against an acknowledgement the replica had not reached: refused whole.
                    expect((error as { code: string }).code).toBe('DELTA_BASELINE');
                    expect(replica.replicaTick).toBe(before);
                    continue;
                }
                applied++;
                expect(observe(replica, all)).toEqual(message.state);
                acks.push(replica.replicaTick);
            }
        }
        expect(applied).toBeGreaterThan(20);
        expect(late).toBeGreaterThan(0);
    });

    test('a replica that never acknowledges gets a keyframe once it is older than the history', async () => {
        const source = await newWorld();
        const replica = await newWorld();
        const e = source.spawn(Body({ x: 1 }));
        const peer = source.replicator({ history: 4 }).peer();
        const first = peer.encode();
        expect(first.keyframe).toBe(true);
        replica.applyDelta(first.bytes);
        peer.ack(first.tick);
        const replicator = peer.replicator;
        const kinds: boolean[] = [];
        for (let i = 0; i < 6; i++) {
            source.set(e, Body, { x: i + 2 });
            kinds.push(replicator.encode(first.tick).keyframe);
        }
        expect(kinds).toEqual([false, false, false, false, true, true]);
        expect(replica.applyDelta(replicator.encode(first.tick).bytes)).toBe(true);
        expect(replica.get(e, Body).x).toBe(7);
    });

    test("peers release what every replica has: the slowest peer's baseline still gets deltas", async () => {
        const source = await newWorld();
        const e = source.spawn(Body({ x: 1 }));
        const replicator = source.replicator();
        const fast = replicator.peer(),
            slow = replicator.peer();
        const first = fast.encode();
        fast.ack(first.tick);
        slow.ack(first.tick);
        for (let i = 0; i < 5; i++) {
            source.set(e, Body, { x: i });
            fast.ack(fast.encode().tick);
            source.tick();
        }
        expect(slow.encode().keyframe).toBe(false); // its acknowledgement held the history
        slow.close();
        source.set(e, Body, { x: 9 });
        fast.ack(fast.encode().tick);
        source.tick();
        // Nobody needs the first baseline any more: a replica still at it gets a keyframe.
        expect(replicator.encode(first.tick).keyframe).toBe(true);
        expectError(() => slow.encode(), 'DESTROYED', { operation: 'peer.encode' });
    });

    test('a delta costs what changed', async () => {
        const source = await newWorld();
        const replica = await newWorld();
        const entities = source.spawnMany(10_000, Body, Vel);
        const peer = source.replicator().peer();
        const keyframe = peer.encode();
        const keyframeSize = keyframe.bytes.length;
        replica.applyDelta(keyframe.bytes);
        peer.ack(keyframe.tick);
        for (let i = 0; i < 10; i++) source.set(entities[i * 997]!, Body, { x: i });
        const delta = peer.encode();
        expect(delta.keyframe).toBe(false);
        // Ten records: an index gap (about 11 bits: 997 apart), Body's values; plus the fixed
        // parts (format version 4).
        expect(delta.bytes.length).toBeLessThan(10 * (2 + 1 + 17) + 80);
        expect(keyframeSize).toBeGreaterThan(10_000 * (17 + 4));
        replica.applyDelta(delta.bytes);
        expect(replica.get(entities[9 * 997]!, Body).x).toBe(9);
    });

    test('the replica sees the changes through its own subscriptions', async () => {
        const source = await newWorld();
        const replica = await newWorld();
        const [a, b, c] = source.spawnMany(3, Body);
        const peer = source.replicator().peer();
        replica.applyDelta(peer.encode().bytes);
        peer.ack(replica.replicaTick);
        const changes = replica.subscribe({ changed: [Body], removed: [Body] });
        changes.drain();
        source.set(b!, Body, { x: 5 });
        source.despawn(c!);
        replica.applyDelta(peer.encode().bytes);
        const seen = changes.drain();
        expect([...seen.entities]).toEqual([b]);
        expect([...seen.removedOf(Body)]).toEqual([c]);
        expect(replica.get(a!, Body).x).toBe(0);
    });

    // Issue 16, rule 6: what "the replica equals the source" promises, and the source-side
    // option that makes both agree on what a change is.
    test("the replica equals the source in state; with changeDetection: 'value' both report the same changes", async () => {
        const Hp = component('DeltaHp', { value: 'i32', max: 'f32' }, { changeDetection: 'value' });
        const source = await newWorld();
        const replica = await newWorld();
        const [a, b, c, d] = source.spawnMany(4, Hp, Vel);
        const peer = source.replicator().peer();
        replica.applyDelta(peer.encode().bytes);
        peer.ack(replica.replicaTick);
        const sourceHp = source.subscribe({ changed: [Hp] }),
            replicaHp = replica.subscribe({ changed: [Hp] });
        const sourceVel = source.subscribe({ changed: [Vel] }),
            replicaVel = replica.subscribe({ changed: [Vel] });
        const frame = () => {
            replica.applyDelta(peer.encode().bytes);
            peer.ack(replica.replicaTick);
            source.tick();
            const seen = (sub: { drain(): { entities: Uint32Array } }) => [...sub.drain().entities].sort((x, y) => x - y);
            return { hp: [seen(sourceHp), seen(replicaHp)], vel: [seen(sourceVel), seen(replicaVel)] };
        };
        frame();
        // The same value (a), a new one (b), -0 over 0 (c), untouched (d): by value, the two agree;
        // by write (Vel), the source counts the same-value write the replica never sees.
        for (const [C, field] of [
            [Hp, 'max'],
            [Vel, 'x'],
        ] as const) {
            source.set(a!, C as typeof Vel, field as 'x', 0);
            source.set(b!, C as typeof Vel, field as 'x', 4);
            source.set(c!, C as typeof Vel, field as 'x', -0);
        }
        let seen = frame();
        expect(seen.hp).toEqual([
            [b, c],
            [b, c],
        ]);
        expect(seen.vel).toEqual([
            [a, b, c],
            [b, c],
        ]);
        expect(Object.is(replica.get(c!, Hp, 'max'), -0)).toBe(true);
        // A value set and set back between two deltas: a change on the source, none on the
        // replica, which sees the net state of each delta.
        source.set(d!, Hp, 'value', 9);
        source.set(d!, Hp, 'value', 0);
        seen = frame();
        expect(seen.hp).toEqual([[d], []]);
        // A write through a view that is never marked reaches no consumer and no replica...
        for (const chunk of source.query({ all: [Hp] })) chunk.column(Hp, 'value').fill(7);
        seen = frame();
        expect(seen.hp).toEqual([[], []]);
        expect(replica.get(a!, Hp, 'value')).toBe(0);
        // ...until a later write of that component sends its values whole.
        source.set(a!, Hp, 'max', 1);
        seen = frame();
        expect(seen.hp).toEqual([[a], [a]]);
        expect(replica.get(a!, Hp)).toEqual({ value: 7, max: 1 });
        expect(replica.get(b!, Hp, 'value')).toBe(0); // b's unmarked 7 has not travelled
    });

    test('a delta from a late acknowledgement re-sends values without faking changes on the replica', async () => {
        const source = await newWorld();
        const replica = await newWorld();
        const [a, b] = source.spawnMany(2, Body);
        const replicator = source.replicator();
        const first = replicator.encode();
        replica.applyDelta(first.bytes);
        source.set(a!, Body, { x: 1 });
        replica.applyDelta(replicator.encode(first.tick).bytes);
        const changes = replica.subscribe({ changed: [Body] });
        changes.drain();
        source.set(b!, Body, { x: 2 });
        // The acknowledgement of the second delta has not arrived: still from the first baseline.
        const late = replicator.encode(first.tick);
        expect(replica.applyDelta(late.bytes)).toBe(true);
        expect([...changes.drain().entities]).toEqual([b]); // a came again, unchanged
        expect(replica.get(a!, Body).x).toBe(1);
    });

    test('replicate: false stays out; the replica keeps its own components', async () => {
        const source = await newWorld();
        const replica = await newWorld();
        const e = source.spawn(Body({ x: 1 }), Sprite({ frame: 3 }));
        const peer = source.replicator().peer();
        replica.applyDelta(peer.encode().bytes);
        peer.ack(replica.replicaTick);
        expect(replica.has(e, Body)).toBe(true);
        expect(replica.has(e, Sprite)).toBe(false);
        replica.add(e, Sprite({ frame: 9 }));
        source.set(e, Body, { x: 2 });
        source.set(e, Sprite, { frame: 4 });
        replica.applyDelta(peer.encode().bytes);
        expect(replica.get(e, Body).x).toBe(2);
        expect(replica.get(e, Sprite).frame).toBe(9);
        expectError(() => source.replicator({ components: [Sprite] }), 'INVALID_ARGUMENT', { component: 'DeltaSprite' });
        // Components first used after the replicator was made travel too (a keyframe brings them).
        const Late = component('DeltaLate', { v: 'u32' });
        source.add(e, Late({ v: 42 }));
        const delta = peer.encode();
        expect(delta.keyframe).toBe(true);
        replica.applyDelta(delta.bytes);
        expect(replica.get(e, Late).v).toBe(42);
    });

    test('a scope limits the entities; one entering it arrives whole, one leaving it goes', async () => {
        const source = await newWorld();
        const replica = await newWorld();
        const inside = source.spawn(Body({ x: 1 }), Vel);
        const outside = source.spawn(Body({ x: 2, hp: 7 }), Weight({ w: 3.5 }));
        const peer = source.replicator({ scope: { all: [Vel] } }).peer();
        const sync = () => {
            expect(replica.applyDelta(peer.encode().bytes)).toBe(true);
            peer.ack(replica.replicaTick);
        };
        sync();
        expect(replica.isAlive(inside)).toBe(true);
        expect(replica.isAlive(outside)).toBe(false);
        source.add(outside, Vel);
        sync();
        expect(replica.get(outside, Body)).toMatchObject({ x: 2, hp: 7 });
        expect(replica.get(outside, Weight).w).toBe(3.5);
        source.remove(inside, Vel);
        sync();
        expect(replica.isAlive(inside)).toBe(false);
    });

    test('bad bytes are refused and change nothing', async () => {
        const source = await newWorld();
        const replica = await newWorld();
        const below = rng(5);
        const all: Entity[] = [];
        const live: Entity[] = [];
        randomChanges(source, kinds, below, 60, all, live, 0);
        const peer = source.replicator().peer();
        const keyframe = peer.encode();
        replica.applyDelta(keyframe.bytes);
        const keyBytes = keyframe.bytes.slice();
        peer.ack(replica.replicaTick);
        randomChanges(source, kinds, below, 10, all, live, 1000);
        const delta = peer.encode().bytes.slice();
        const before = observe(replica, all);
        const tick = replica.replicaTick;
        for (const n of [0, 10, 16, delta.length >> 1, delta.length - 1]) {
            expectError(() => replica.applyDelta(delta.subarray(0, n)), 'BAD_DELTA', { operation: 'world.applyDelta' });
        }
        const flipped = delta.slice();
        flipped[delta.length >> 1]! ^= 4;
        expectError(() => replica.applyDelta(flipped), 'BAD_DELTA');
        const version = delta.slice();
        version[4] = 9;
        expectError(() => replica.applyDelta(version), 'SNAPSHOT_VERSION');
        expect(observe(replica, all)).toEqual(before);
        expect(replica.replicaTick).toBe(tick);
        // A fresh world lacks the baseline; a world with another DeltaBody is another schema.
        const fresh = await newWorld();
        expectError(() => fresh.applyDelta(delta), 'DELTA_BASELINE');
        const stranger = await newWorld();
        stranger.spawn(component('DeltaBody', { y: 'f64' }));
        expectError(() => stranger.applyDelta(keyBytes), 'DELTA_SCHEMA');
        expectError(() => replica.applyDelta('nope' as unknown as Uint8Array), 'INVALID_ARGUMENT');
        expect(replica.applyDelta(delta)).toBe(true);
        expect(replica.applyDelta(delta)).toBe(false); // repeated: nothing new
        expect(observe(replica, all)).toEqual(observe(source, all));
    });

    test("reordering children is a 'moved' pair event, and the order travels", async () => {
        const source = await newWorld();
        const replica = await newWorld();
        const parent = source.spawn();
        const [a, b, c] = source.spawnMany(3);
        for (const child of [a!, b!, c!]) source.setParent(child, parent);
        const peer = source.replicator().peer();
        replica.applyDelta(peer.encode().bytes);
        peer.ack(replica.replicaTick);
        const events = source.subscribe({ pairs: [ChildOf] });
        events.drain();
        source.setParent(c!, parent, a!);
        expect(events.drain().pairEvents.map((e) => [e.kind, e.source, e.target])).toEqual([['moved', c, parent]]);
        replica.applyDelta(peer.encode().bytes);
        expect(replica.childrenOf(parent)).toEqual([c, a, b]);
    });

    test("a delta's bytes are a view until the next encode; not inside a loop", async () => {
        const source = await newWorld();
        source.spawn(Body);
        const replicator = source.replicator();
        const first = replicator.encode();
        // A view into wasm memory, not a copy.
        expect(first.bytes.byteOffset).toBeGreaterThan(0);
        expect(first.bytes.buffer.byteLength).toBeGreaterThan(first.bytes.length);
        replicator.encode(first.tick);
        expectError(() => first.bytes, 'VIEW_DETACHED');
        for (const _ of source.query({ all: [Body] })) {
            expectError(() => replicator.encode(), 'INVALID_ARGUMENT', { operation: 'replicator.encode' });
            expectError(() => source.applyDelta(new Uint8Array(4)), 'INVALID_ARGUMENT');
        }
        replicator.close();
        expectError(() => replicator.encode(), 'DESTROYED');
        expect(replicator.closed).toBe(true);
        expectError(() => source.replicator({ history: 0 }), 'INVALID_ARGUMENT');
    });

    test('quantize: the replica holds the nearest multiple of the step, in fewer bytes', async () => {
        const source = await newWorld();
        const quantized = await newWorld();
        const exact = await newWorld();
        const below = rng(5);
        const value = (): number => (below(2_000_000) - 1_000_000) / 1000 + 1 / 3;
        const entities = source.spawnMany(1000, Pos);
        for (const e of entities) source.set(e, Pos, { x: value(), y: value(), hp: below(100), path: [value(), value()] });
        source.set(entities[0]!, Pos, { x: NaN, y: Infinity }); // travel exactly
        const steps = { x: 0.01, y: 0.5 };
        const q = source.replicator({ components: [Pos], quantize: [[Pos, { ...steps, path: 0.001 }]] }).peer();
        const x = source.replicator({ components: [Pos] }).peer();
        const near = (v: number, step: number): number => Math.fround(Math.round(v / step) * step);
        const check = (): void => {
            for (const e of entities.slice(1)) {
                const want = source.get(e, Pos);
                const got = quantized.get(e, Pos);
                // (Math.round rounds a tie up, the core away from 0: no value here is a tie.)
                expect(got.x).toBe(near(want.x, steps.x));
                expect(got.y).toBe(near(want.y, steps.y));
                expect(Math.abs(got.x - want.x)).toBeLessThanOrEqual(steps.x / 2 + 1e-4);
                expect(got.hp).toBe(want.hp);
                expect(got.path[0]).toBe(Math.round(want.path[0]! / 0.001) * 0.001);
            }
            expect(quantized.get(entities[0]!, Pos).x).toBeNaN();
            expect(quantized.get(entities[0]!, Pos).y).toBe(Infinity);
        };
        for (let tick = 0; tick < 3; tick++) {
            if (tick > 0) {
                for (let i = tick; i < entities.length; i += 10) source.set(entities[i]!, Pos, { x: value(), y: value() });
            }
            const xd = x.encode(); // (first: its baseline is then older than the quantized replica's)
            const qd = q.encode();
            expect(qd.keyframe).toBe(tick === 0);
            // x in 3 bytes, y in 2, each path element in 4 or less: 8+ bytes fewer an entity.
            expect(qd.bytes.length).toBeLessThan(xd.bytes.length - (tick === 0 ? 1000 : 100) * 8);
            expect(quantized.applyDelta(qd.bytes)).toBe(true);
            expect(exact.applyDelta(xd.bytes)).toBe(true);
            q.ack(qd.tick);
            x.ack(xd.tick);
            check();
        }
        expect(exact.get(entities[5]!, Pos)).toEqual(source.get(entities[5]!, Pos));
        // Deltas of the exact replicator (another source, of another schema) are refused.
        source.set(entities[1]!, Pos, { x: 1 });
        expectError(() => quantized.applyDelta(x.encode().bytes), 'DELTA_BASELINE');
    });

    test('quantize: bad options name the component and the field', async () => {
        const source = await newWorld();
        source.spawn(Pos, Body, Sprite);
        const refused = (options: Parameters<World['replicator']>[0], expected: { component?: string; field?: string }): string =>
            expectError(() => source.replicator(options), 'INVALID_ARGUMENT', { operation: 'world.replicator', ...expected }).message;
        // Checked in TS: a field the component lacks, a step that is not a number.
        expect(refused({ quantize: [[Pos, { z: 0.1 }]] }, { component: 'DeltaPos', field: 'z' })).toMatch(/does not have/);
        expect(refused({ quantize: [[Pos, { x: '0.1' as unknown as number }]] }, { component: 'DeltaPos', field: 'x' })).toMatch(
            /must be a number/,
        );
        expect(refused({ quantize: Pos as never }, {})).toMatch(/array/);
        // Refused by the core, named here.
        expect(refused({ quantize: [[Pos, { hp: 1 }]] }, { component: 'DeltaPos', field: 'hp' })).toMatch(/f32 and f64/);
        for (const step of [0, -1, NaN, Infinity]) {
            expect(refused({ quantize: [[Pos, { x: 0.5, y: step }]] }, { component: 'DeltaPos', field: 'y' })).toMatch(
                /finite and above 0/,
            );
        }
        expect(refused({ components: [Body], quantize: [[Pos, { x: 0.1 }]] }, { component: 'DeltaPos', field: 'x' })).toMatch(/replicates/);
        expect(refused({ quantize: [[Sprite, { frame: 1 }]] }, { component: 'DeltaSprite', field: 'frame' })).toMatch(/replicates/);
        expect(
            refused(
                {
                    quantize: [
                        [Pos, { x: 0.1 }],
                        [Pos, { x: 0.2 }],
                    ],
                },
                { component: 'DeltaPos', field: 'x' },
            ),
        ).toMatch(/twice/);
        expect(refused({ quantize: [[Likes as never, { amount: 0.1 }]] }, { component: 'DeltaLikes', field: 'amount' })).toMatch(
            /relation/,
        );
        // A refused replicator leaves nothing behind: a good one still works.
        const peer = source.replicator({ quantize: [[Pos, { x: 0.5, path: 1 }]] }).peer();
        const replica = await newWorld();
        expect(replica.applyDelta(peer.encode().bytes)).toBe(true);
    });

    test('changedFields: a component whose one field changed costs that field and a mask byte', async () => {
        const source = await newWorld();
        const entities = source.spawnMany(100, Pos);
        for (const [i, e] of entities.entries()) source.set(e, Pos, { x: i, y: -i, hp: i, path: [i, i] });
        const peers = [false, true].map((changedFields) => source.replicator({ components: [Pos], changedFields }).peer());
        const replicas = [await newWorld(), await newWorld()];
        const sizes: number[][] = [[], []];
        for (let tick = 0; tick < 4; tick++) {
            // Ten entities' hp change (a field of 2 bytes); the rest of Pos (24 bytes) stays.
            for (let i = tick; i < 100; i += 10) source.set(entities[i]!, Pos, 'hp', 1000 + tick);
            peers.forEach((peer, k) => {
                const d = peer.encode();
                sizes[k]!.push(d.bytes.length);
                expect(replicas[k]!.applyDelta(d.bytes.slice())).toBe(true);
                peer.ack(d.tick);
            });
            for (const e of entities) {
                expect(replicas[1]!.get(e, Pos)).toEqual(source.get(e, Pos));
                expect(replicas[0]!.get(e, Pos)).toEqual(source.get(e, Pos));
            }
        }
        // After the keyframes: 10 records of 26 value bytes (208 bits) against 10 of hp's 16 bits
        // and a 4-bit mask (records are bits; the rest of the two deltas is the same).
        for (let tick = 1; tick < 4; tick++) expect(sizes[0]![tick]! - sizes[1]![tick]!).toBe((10 * (26 * 8 - (16 + 4))) / 8);
        expectError(() => source.replicator({ changedFields: 'yes' as never }), 'INVALID_ARGUMENT', { operation: 'world.replicator' });
    });
});
