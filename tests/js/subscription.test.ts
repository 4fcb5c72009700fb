// Subscriptions: subscribe({ added | changed | removed }) + drain(), removedOf, the chunks()
// variant, each event exactly once, close().
import { describe, expect, test } from 'vitest';

import { Changes, component, relation, tag } from '../../dist/index.js';
import { expectError, sorted, worldPerTest } from './support.js';

const newWorld = worldPerTest();

const Position = component('Position', { x: 'f32', y: 'f32' });
const Health = component('Health', { value: 'i32' });
const A = tag('A');
const B = tag('B');
const Likes = relation('Likes', { amount: 'f32' });

describe('drain', () => {
    test('added: existing entities once when tracking starts, then each new one once', async () => {
        const world = await newWorld();
        const old = world.spawnMany(3, Health);
        const sub = world.subscribe({ added: [Health] });
        const first = sub.drain();
        expect(first).toBeInstanceOf(Changes);
        expect(sorted(first.entities)).toEqual(sorted(old));
        expect(first.removed).toEqual(new Uint32Array(0));
        expect(sub.drain().empty).toBe(true);
        const e = world.spawn(Health({ value: 1 }));
        const f = world.spawn();
        world.add(f, Health);
        expect(sorted(sub.drain().entities)).toEqual(sorted([e, f]));
        expect(sub.drain().entities).toHaveLength(0);
    });

    test('changed: each changed entity once, however often it changed', async () => {
        const world = await newWorld({ chunkBytes: 1024 });
        const handles = world.spawnMany(400, Health);
        const sub = world.subscribe({ changed: [Health] });
        expect(sub.drain().empty).toBe(true);
        const picked = [handles[0]!, handles[123]!, handles[399]!];
        for (let round = 0; round < 5; round++) for (const e of picked) world.set(e, Health, { value: round });
        const changes = sub.drain();
        expect(changes.empty).toBe(false);
        expect(sorted(changes.entities)).toEqual(sorted(picked));
        expect(sub.drain().empty).toBe(true);
        world.set(handles[5]!, Health, 'value', 1);
        expect([...sub.drain().entities]).toEqual([handles[5]!]);
    });

    test('removed: removals and despawns, per component with removedOf, oldest first', async () => {
        const world = await newWorld();
        const [a, b, c, d] = world.spawnMany(4, Health, A);
        const sub = world.subscribe({ removed: [Health, A] });
        world.remove(a!, Health);
        world.despawn(b!); // loses both
        world.remove(c!, A);
        const changes = sub.drain();
        expect([...changes.removedOf(Health)]).toEqual([a!, b!]);
        expect([...changes.removedOf(A)]).toEqual([b!, c!]);
        expect(sorted(changes.removed)).toEqual(sorted([a!, b!, b!, c!]));
        expect(changes.entities).toHaveLength(0); // removals only: matching entities are not listed
        expect(changes.empty).toBe(false);
        expect(sub.drain().empty).toBe(true);
        expectError(() => changes.removedOf(B), 'INVALID_ARGUMENT', { operation: 'changes.removedOf', component: 'B' });
        world.despawn(d!);
        expect([...sub.drain().removedOf(Health)]).toEqual([d!]);
    });

    test('removed terms come in the order given, repeats dropped', async () => {
        const world = await newWorld();
        const e = world.spawn(Health, A, B);
        const sub = world.subscribe({ removed: [B, A, B] });
        world.remove(e, A);
        world.remove(e, B);
        const changes = sub.drain();
        expect([...changes.removedOf(B)]).toEqual([e]);
        expect([...changes.removedOf(A)]).toEqual([e]);
        expect([...changes.removed]).toEqual([e, e]);
    });

    test('one subscription reports changes and removals together', async () => {
        const world = await newWorld();
        const [a, b] = world.spawnMany(2, Health);
        const sub = world.subscribe({ changed: [Health], removed: [Health] });
        world.set(a!, Health, { value: 1 });
        world.remove(b!, Health);
        const changes = sub.drain();
        expect([...changes.entities]).toEqual([a!]);
        expect([...changes.removedOf(Health)]).toEqual([b!]);
    });

    test('a changed entity that is despawned before the drain is reported as removed only', async () => {
        const world = await newWorld();
        const [a, b] = world.spawnMany(2, Health);
        const sub = world.subscribe({ changed: [Health], removed: [Health] });
        world.set(a!, Health, { value: 1 });
        world.set(b!, Health, { value: 1 });
        world.despawn(a!);
        const changes = sub.drain();
        expect([...changes.entities]).toEqual([b!]);
        expect([...changes.removed]).toEqual([a!]);
    });

    // The decision (README, "Filtered queries and subscriptions"): added and changed report
    // what is there at the drain, so every handle in `entities` is alive and has the component;
    // an entity changed and then despawned (or stripped of the component) in the same frame is
    // reported by `removed` only. bitECS and koota also list it as changed: a stale handle there.
    test('added and changed report only live entities that still have the component: readable handles', async () => {
        const world = await newWorld();
        const [a, b, c, d] = world.spawnMany(4, Health);
        const both = world.subscribe({ changed: [Health], removed: [Health] });
        const changedOnly = world.subscribe({ changed: [Health] });
        const byChunks = world.subscribe({ changed: [Health] });
        const added = world.subscribe({ added: [Health], removed: [Health] });
        added.drain(); // the entities already there
        world.set(a!, Health, { value: 1 });
        world.despawn(a!); // changed, then despawned
        world.set(b!, Health, { value: 2 });
        world.remove(b!, Health); // changed, then lost the component
        world.set(c!, Health, { value: 3 });
        const brief = world.spawn(Health({ value: 4 }));
        world.set(brief, Health, { value: 5 });
        world.despawn(brief); // added, changed, despawned
        const reused = world.spawn(Health({ value: 6 })); // may take a freed index, never a handle
        world.set(reused, Health, { value: 7 });
        const changes = both.drain();
        expect(sorted(changes.entities)).toEqual(sorted([c!, reused]));
        expect(sorted(changes.removed)).toEqual(sorted([a!, b!, brief]));
        for (const e of changes.entities) expect(world.get(e, Health).value).toBeGreaterThan(0); // each one readable
        const quiet = changedOnly.drain(); // no removed term: the despawned ones are not heard of
        expect(sorted(quiet.entities)).toEqual(sorted([c!, reused]));
        const rows: number[] = [];
        for (const chunk of byChunks) for (const row of chunk.rows) rows.push(chunk.entities[row]!);
        expect(sorted(rows)).toEqual(sorted([c!, reused])); // the chunk form agrees: dead rows have no chunk
        const arrivals = added.drain();
        expect([...arrivals.entities]).toEqual([reused]); // brief came and went: removed only
        expect(sorted(arrivals.removed)).toEqual(sorted([a!, b!, brief]));
        expect(world.isAlive(d!)).toBe(true);
    });

    test('all / none / any narrow added and changed reports', async () => {
        const world = await newWorld();
        const plain = world.spawn(Health);
        const withA = world.spawn(Health, A);
        const withB = world.spawn(Health, B);
        const none = world.subscribe({ changed: [Health], none: [A] });
        const any = world.subscribe({ changed: [Health], any: [A, B] });
        const all = world.subscribe({ changed: [Health], all: [B] });
        for (const e of [plain, withA, withB]) world.set(e, Health, { value: 1 });
        expect(sorted(none.drain().entities)).toEqual(sorted([plain, withB]));
        expect(sorted(any.drain().entities)).toEqual(sorted([withA, withB]));
        expect([...all.drain().entities]).toEqual([withB]);
    });

    test('the arrays are copies: later drains and changes do not touch them', async () => {
        const world = await newWorld();
        const [a, b] = world.spawnMany(2, Health);
        const sub = world.subscribe({ changed: [Health], removed: [Health] });
        world.set(a!, Health, { value: 1 });
        world.remove(b!, Health);
        const kept = sub.drain();
        world.add(b!, Health);
        world.set(b!, Health, { value: 1 });
        world.remove(a!, Health);
        const next = sub.drain();
        expect([...kept.entities]).toEqual([a!]);
        expect([...kept.removed]).toEqual([b!]);
        expect([...next.entities]).toEqual([b!]);
        expect([...next.removed]).toEqual([a!]);
    });

    test('subscriptions are independent of each other and of queries', async () => {
        const world = await newWorld();
        const [a, b] = world.spawnMany(2, Health);
        const one = world.subscribe({ changed: [Health] });
        const two = world.subscribe({ changed: [Health] });
        const query = world.query({ changed: [Health] });
        world.set(a!, Health, { value: 1 });
        expect([...one.drain().entities]).toEqual([a!]);
        world.set(b!, Health, { value: 1 });
        expect(query.entities()).toHaveLength(2);
        expect(sorted(two.drain().entities)).toEqual(sorted([a!, b!]));
        expect([...one.drain().entities]).toEqual([b!]);
    });

    test('ticks in between lose nothing', async () => {
        const world = await newWorld();
        const [a] = world.spawnMany(1, Health);
        const sub = world.subscribe({ changed: [Health], removed: [Health] });
        world.set(a!, Health, { value: 1 });
        for (let i = 0; i < 5; i++) world.tick();
        world.remove(a!, Health);
        world.tick();
        const changes = sub.drain();
        expect(changes.entities).toHaveLength(0); // it lost Health: nothing to report as changed
        expect([...changes.removed]).toEqual([a!]);
    });

    test('a subscription needs something to report', async () => {
        const world = await newWorld();
        expectError(() => world.subscribe({ all: [Health] }), 'INVALID_ARGUMENT', { operation: 'world.subscribe' });
        expectError(() => world.subscribe({}), 'INVALID_ARGUMENT');
        expectError(() => world.subscribe(null as never), 'INVALID_ARGUMENT');
    });
});

// Issue 16, rule 3. Before, a late `removed` subscription reported removals from before it
// existed only while another one kept the log ([] alone, [e] beside one), and late `changed`
// ones reported whatever changes others kept.
describe('a subscription made late starts when it is made', () => {
    test('what exists is added; changes, removals and pair events from before are not its, whoever else kept them', async () => {
        const world = await newWorld();
        const keeper = world.subscribe({ changed: [Health], removed: [Health, A] });
        const [a, b, c, d] = world.spawnMany(4, Health, A);
        keeper.drain();
        world.set(a!, Health, { value: 1 });
        world.remove(b!, Health);
        world.despawn(c!);
        world.tick();
        const late = world.subscribe({ added: [Health], removed: [Health] });
        const lateChanged = world.subscribe({ changed: [Health], removed: [A] });
        const alone = world.subscribe({ removed: [Position] });
        let first = late.drain();
        expect(sorted(first.entities)).toEqual(sorted([a!, d!])); // what has Health now
        expect([...first.removed]).toEqual([]);
        first = lateChanged.drain();
        expect([...first.entities]).toEqual([]);
        expect([...first.removed]).toEqual([]);
        // The keeper still gets everything it had not seen.
        const kept = keeper.drain();
        expect([...kept.entities]).toEqual([a!]);
        expect(sorted(kept.removedOf(Health))).toEqual(sorted([b!, c!]));
        expect([...kept.removedOf(A)]).toEqual([c!]);
        // From now on every subscription sees every event once, late or not.
        world.set(d!, Health, { value: 2 });
        world.despawn(a!);
        const e = world.spawn(Position);
        world.despawn(e);
        const after = late.drain();
        expect([...after.entities]).toEqual([]);
        expect([...after.removed]).toEqual([a!]);
        const afterChanged = lateChanged.drain();
        expect([...afterChanged.entities]).toEqual([d!]);
        expect([...afterChanged.removed]).toEqual([a!]);
        expect([...alone.drain().removed]).toEqual([e]);
        expect([...keeper.drain().removedOf(Health)]).toEqual([a!]);
    });

    test('pair events from before a pairs subscription are not its, even within the same tick', async () => {
        const world = await newWorld();
        const keeper = world.subscribe({ pairs: [Likes] });
        const [a, b] = world.spawnMany(2, Position);
        world.addPair(a!, Likes, b!, { amount: 1 });
        world.setPair(a!, Likes, b!, 'amount', 2);
        const late = world.subscribe({ pairs: [Likes] });
        // A second write in the same frame is logged again for it (one changed event per pair
        // and tick: the late subscription's start is a tick of its own).
        world.setPair(a!, Likes, b!, 'amount', 3);
        expect(late.drain().pairEvents.map((e) => e.kind)).toEqual(['changed']);
        expect(keeper.drain().pairEvents.map((e) => e.kind)).toEqual(['added', 'changed', 'changed']);
    });

    test('a closed subscription made again starts again: nothing from while it was closed', async () => {
        const world = await newWorld();
        const [a, b] = world.spawnMany(2, Health);
        let sub = world.subscribe({ changed: [Health], removed: [Health] });
        const other = world.subscribe({ changed: [Health], removed: [Health] });
        sub.close();
        world.set(a!, Health, { value: 1 });
        world.despawn(b!);
        sub = world.subscribe({ changed: [Health], removed: [Health] });
        expect(sub.drain().empty).toBe(true);
        const seen = other.drain();
        expect([...seen.entities, ...seen.removed]).toEqual([a!, b!]);
    });
});

describe('chunks()', () => {
    test('the same run chunk by chunk: dirty slots only, with column views', async () => {
        const world = await newWorld({ chunkBytes: 1024 });
        const handles = world.spawnMany(300, Health, Position);
        const sub = world.subscribe({ changed: [Health] });
        const picked = [handles[1]!, handles[2]!, handles[250]!];
        picked.forEach((e, i) => world.set(e, Health, { value: 10 + i }));
        const seen = new Map<number, number>();
        for (const chunk of sub.chunks()) {
            expect(chunk.filtered).toBe(true);
            const hp = chunk.column(Health, 'value');
            for (const row of chunk.rows) seen.set(chunk.entities[row]!, hp[row]!);
        }
        expect(seen).toEqual(new Map(picked.map((e, i) => [e, 10 + i])));
        // chunks() was the run: drain has nothing more.
        expect(sub.drain().empty).toBe(true);
        world.set(handles[3]!, Health, { value: 1 });
        const again: number[] = [];
        for (const chunk of sub) for (const row of chunk.rows) again.push(chunk.entities[row]!);
        expect(again).toEqual([handles[3]!]);
    });

    test('chunks() of a subscription with removed terms is refused (the loop would swallow the removals)', async () => {
        const world = await newWorld();
        const e = world.spawn(Health);
        const sub = world.subscribe({ changed: [Health], removed: [Health] });
        world.despawn(e);
        expectError(() => sub.chunks(), 'INVALID_ARGUMENT', { operation: 'subscription.chunks' });
        expect([...sub.drain().removed]).toEqual([e]); // still there for drain
    });

    test('drain while a chunks() run is live: QUERY_IN_USE', async () => {
        const world = await newWorld();
        world.spawn(Health);
        const sub = world.subscribe({ added: [Health] });
        for (const _ of sub) expectError(() => sub.drain(), 'QUERY_IN_USE', { operation: 'subscription.drain' });
        expect(sub.drain().empty).toBe(true);
    });
});

describe('close', () => {
    test('close stops the subscription; later use throws DESTROYED; close is idempotent', async () => {
        const world = await newWorld();
        const e = world.spawn(Health);
        const sub = world.subscribe({ changed: [Health], removed: [Health] });
        const queries = world.stats().queryCount;
        expect(sub.closed).toBe(false);
        sub.close();
        expect(sub.closed).toBe(true);
        expect(world.stats().queryCount).toBe(queries - 1);
        sub.close();
        expectError(() => sub.drain(), 'DESTROYED', { operation: 'subscription.drain' });
        expectError(() => sub.chunks(), 'DESTROYED');
        // The world goes on without it.
        world.set(e, Health, { value: 1 });
        world.despawn(e);
        world.tick();
        world.validate();
    });

    test('a subscription of a destroyed world is closed', async () => {
        const world = await newWorld();
        const sub = world.subscribe({ added: [Health] });
        world.destroy();
        expect(sub.closed).toBe(true);
        expectError(() => sub.drain(), 'DESTROYED');
        sub.close();
    });
});
