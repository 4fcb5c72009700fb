// Rollback from JS: world.checkpoint() / world.rewind(n) over random histories of every kind of
// change the API makes (per entity, relations, sparse, Field writes, column writes a query marks,
// structural changes inside loops), checked byte for byte against the snapshot taken at the
// checkpoint; the handles spawned after a rewind are a restored copy's; Field handles and spawn
// plans keep working across the archetypes a rewind frees; subscriptions see the net difference
// once; errors name the problem and change nothing.
import { describe, expect, test } from 'vitest';

import { component, relation, tag, type Entity, type World } from '../../dist/index.js';
import { expectError, randomChanges, rng, worldPerTest } from './support.js';

const newWorld = worldPerTest();

const Body = component('RbBody', { x: 'f32', hp: 'i16', tags: ['u8', 3], mass: 'f64' });
const Vel = component('RbVel', { x: 'f32' });
const Frozen = tag('RbFrozen');
const Weight = component('RbWeight', { w: 'f64' }, { storage: 'sparse' });
const Marked = tag('RbMarked', { storage: 'sparse' });
const Likes = relation('RbLikes', { amount: 'f32' });
const Hot = tag('RbHot');

const kinds = { Body, Vel, Frozen, Weight, Marked, Likes };

/** Changes the README teaches besides randomChanges': Field writes, marked column writes, a loop that spawns and despawns. */
function moreChanges(world: World, below: (n: number) => number, live: Entity[]): void {
    const op = below(3);
    if (op === 0 && live.length) {
        const hp = world.field(Body, 'hp');
        for (let i = 0; i < 5; i++) {
            const e = live[below(live.length)]!;
            if (world.has(e, Body)) hp.set(e, below(500));
        }
    } else if (op === 1) {
        for (const chunk of world.query({ all: [Body], writes: [Body] })) {
            const x = chunk.column(Body, 'x');
            for (let i = 0; i < chunk.count; i += 3) x[i]! += 1;
        }
    } else {
        let n = 0;
        for (const chunk of world.query({ all: [Vel] })) {
            for (let i = 0; i < chunk.count && n < 4; i++, n++) {
                const spawned = world.spawn(Body({ x: n }), Hot);
                live.push(spawned);
                if (n === 2) world.despawn(chunk.entities[i]!);
            }
        }
    }
    live.splice(0, live.length, ...live.filter((e) => world.isAlive(e)));
}

function everyEntity(world: World): Entity[] {
    return [...world.query({}).entities()];
}

describe('rollback', () => {
    test('a rewind returns the world to the checkpoint byte for byte', async () => {
        for (const seed of [1, 2, 3]) {
            const world = await newWorld({ minFreeIndices: 8, checkpoints: 6 });
            const below = rng(seed);
            const live: Entity[] = [];
            randomChanges(world, kinds, below, 60, [], live);
            const kept = new Map<number, Uint8Array>();
            let rewinds = 0;
            for (let frame = 0; frame < 120; frame++) {
                const n = world.checkpoint();
                kept.set(n, world.snapshot());
                const range = world.checkpoints!;
                expect(range.newest).toBe(n);
                if (n > 4 && below(4) === 0) {
                    const to = Math.max(range.oldest, n - below(5));
                    world.rewind(to);
                    rewinds++;
                    expect(world.snapshot()).toEqual(kept.get(to));
                    world.validate();
                    live.splice(0, live.length, ...everyEntity(world));
                }
                if (below(3) === 0) moreChanges(world, below, live);
                randomChanges(world, kinds, below, 1 + below(5), [], live, frame * 8);
            }
            expect(rewinds).toBeGreaterThan(10);
        }
    });

    test('after a rewind the spawns hand out the handles a restored copy would', async () => {
        const world = await newWorld({ minFreeIndices: 4 });
        const live: Entity[] = [];
        randomChanges(world, kinds, rng(9), 200, [], live);
        const n = world.checkpoint();
        const bytes = world.snapshot();
        randomChanges(world, kinds, rng(10), 200, [], live);
        world.rewind(n);
        const copy = await newWorld({ minFreeIndices: 4, snapshot: bytes });
        for (let i = 0; i < 20; i++) expect(world.spawn(Vel({ x: i }))).toBe(copy.spawn(Vel({ x: i })));
    });

    test('Field handles and spawn plans keep working across archetypes a rewind frees', async () => {
        const world = await newWorld();
        const hp = world.field(Body, 'hp');
        const a = world.spawn(Body({ hp: 1 }));
        const n = world.checkpoint();
        // New archetypes, learned by the Field and the spawn plan, then freed by the rewind.
        const b = world.spawn(Body({ hp: 2 }), Frozen, Hot);
        hp.set(b, 3);
        world.add(a, Vel);
        hp.set(a, 4);
        world.rewind(n);
        expect(world.isAlive(b)).toBe(false);
        expect(hp.get(a)).toBe(1);
        hp.set(a, 5);
        expect(world.get(a, Body, 'hp')).toBe(5);
        // The same shapes again: archetypes made anew, with the ids the freed ones had.
        const c = world.spawn(Body({ hp: 6 }), Frozen, Hot);
        expect(hp.get(c)).toBe(6);
        expect(world.has(c, Hot)).toBe(true);
        world.validate();
    });

    test('a chunk loop reads right columns of an archetype whose id a rewind gave to another set', async () => {
        const world = await newWorld();
        world.despawn(world.spawn(Vel)); // Vel registered first: its columns come before Body's
        const q = world.query({ all: [Body] });
        const n = world.checkpoint();
        world.spawn(Body({ x: 1, mass: 2 }), Frozen); // a new archetype, {Body, Frozen}
        for (const chunk of q) expect(Array.from(chunk.column(Body, 'mass'))).toEqual([2]); // its column learned
        world.rewind(n); // that archetype freed, its id free again
        world.spawn(Vel({ x: 9 }), Body({ x: 3, mass: 4 })); // {Vel, Body} takes the id, Body's columns after Vel's
        for (const chunk of q) {
            expect(Array.from(chunk.column(Body, 'mass'))).toEqual([4]);
            expect(Array.from(chunk.column(Body, 'x'))).toEqual([3]);
            expect(Array.from(chunk.column(Vel, 'x'))).toEqual([9]);
        }
        world.validate();
    });

    test('subscriptions see a rewind as the changes it makes, once', async () => {
        const world = await newWorld();
        const a = world.spawn(Body({ x: 1 }));
        const b = world.spawn(Body({ x: 2 }));
        const added = world.subscribe({ added: [Body], removed: [Body] });
        const changed = world.subscribe({ changed: [Body] });
        added.drain();
        changed.drain();
        const n = world.checkpoint();
        world.set(a, Body, { x: 10 }); // a stays at row 0
        world.despawn(b);
        const c = world.spawn(Body({ x: 3 }));
        added.drain();
        changed.drain();
        world.rewind(n);
        const put = added.drain();
        expect([...put.entities]).toEqual([b]); // put back
        expect([...put.removed]).toEqual([c]); // taken away
        expect([...changed.drain().entities]).toEqual([a]); // written back in place
        expect(world.get(a, Body, 'x')).toBe(1);
        expect(added.drain().entities.length + changed.drain().entities.length).toBe(0);
    });

    test("a peer's interest is its connection's: a rewind keeps what it shows and hides, and its replica follows the world", async () => {
        const world = await newWorld();
        const replica = await newWorld();
        const peer = world.replicator({ components: [Body] }).peer({ visibility: 'explicit' });
        const send = () => {
            const delta = peer.encode();
            expect(replica.applyDelta(delta.bytes.slice())).toBe(true);
            peer.ack(delta.tick);
        };
        const [a, b, c] = [world.spawn(Body({ x: 1 })), world.spawn(Body({ x: 2 })), world.spawn(Body({ x: 3 }))];
        peer.show(a);
        peer.show(b);
        send();
        const n = world.checkpoint();
        peer.hide(a);
        peer.show(c);
        world.set(b, Body, 'x', 20);
        world.despawn(b);
        const d = world.spawn(Body({ x: 4 }));
        peer.show(d);
        send();
        expect([replica.isAlive(a), replica.isAlive(b), replica.isAlive(c), replica.isAlive(d)]).toEqual([false, false, true, true]);
        world.rewind(n);
        send();
        // The world is as at n (b alive with x 2, d gone); the interest is as the game left it
        // (a hidden, b, c and d shown): the replica holds what the peer sees of the rewound world.
        expect([replica.isAlive(a), replica.isAlive(b), replica.isAlive(c), replica.isAlive(d)]).toEqual([false, true, true, false]);
        expect(replica.get(b, Body, 'x')).toBe(2);
        expect(replica.get(c, Body, 'x')).toBe(3);
        // Simulated again, the spawn hands out d's handle, which the peer still shows.
        expect(world.spawn(Body({ x: 5 }))).toBe(d);
        send();
        expect(replica.get(d, Body, 'x')).toBe(5);
    });

    test('an archetype made and emptied between checkpoints is empty after a rewind', async () => {
        // Its count at the checkpoint was read from memory the shadow never wrote: garbage when
        // the allocator hands back a block used before (a destroyed world's, here). Found by the
        // rollback example (a bullet fired and gone in one frame).
        const P = component('RbP', { x: 'f32' });
        const R = component('RbR', { r: 'u8' });
        const B = component('RbB', { n: 'i32' });
        const before = await newWorld(); // leaves B counted 1 in memory it gives back
        before.spawn(P({ x: 0 }), R({ r: 1 }));
        before.checkpoint();
        before.spawn(P({ x: 1 }), B({ n: 1 }));
        before.checkpoint();
        before.destroy();
        const world = await newWorld();
        world.spawn(P({ x: 0 }), R({ r: 1 }));
        world.checkpoint();
        world.despawn(world.spawn(P({ x: 1 }), B({ n: 1 })));
        const k = world.checkpoint();
        const hash = world.hash();
        world.spawn(P({ x: 2 }), B({ n: 2 }));
        world.rewind(k);
        expect([...world.query({ all: [B] }).entities()]).toEqual([]);
        expect(world.hash()).toBe(hash);
        world.validate();
    });

    test('bad calls throw a TesseraError and change nothing', async () => {
        const world = await newWorld({ checkpoints: 2 });
        expect(world.checkpoints).toBeNull();
        expectError(() => world.rewind(1), 'NO_CHECKPOINT');
        const e = world.spawn(Body);
        world.checkpoint();
        world.checkpoint();
        world.checkpoint();
        expect(world.checkpoints).toEqual({ oldest: 2, newest: 3 });
        const error = expectError(() => world.rewind(1), 'NO_CHECKPOINT');
        expect(error.message).toContain('kept: 2 to 3');
        expectError(() => world.rewind(2.5), 'INVALID_ARGUMENT');
        expectError(() => world.rewind('2' as unknown as number), 'INVALID_ARGUMENT');
        for (const _ of world.query({ all: [Body] })) {
            expectError(() => world.checkpoint(), 'INVALID_ARGUMENT');
            expectError(() => world.rewind(2), 'INVALID_ARGUMENT');
        }
        expect(world.isAlive(e)).toBe(true);
        expect(world.checkpoints).toEqual({ oldest: 2, newest: 3 });
        await expect(newWorld({ checkpoints: 5000 })).rejects.toThrow(/checkpoints must be at most 1024/);
        // Stats say what the checkpoints hold; stopping drops them.
        const stats = world.stats();
        expect(stats.checkpointCount).toBe(2);
        expect(stats.shadowBytes).toBeGreaterThan(0);
        world.stopRollback();
        expect(world.checkpoints).toBeNull();
        expect(world.stats().shadowBytes).toBe(0);
    });
});
