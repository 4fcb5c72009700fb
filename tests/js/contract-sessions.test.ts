// Replication peers and sessions held to README.md's contract (a test-writing pass against the
// README): per-client visibility changing every tick, byte budgets, many peers (late, closed and
// reopened), acknowledgements lost, late, backwards or for ticks never sent, deltas lost, late,
// duplicated and reordered, empty deltas, argument checks, and sessions over in-memory links.
// Each test quotes the README sentence it asserts.
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';

import {
    ChildOf,
    component,
    createWorld,
    tag,
    ReplicationClient,
    ReplicationServer,
    type Entity,
    type Peer,
    type World,
} from '../../dist/index.js';
import { expectError, worldPerTest } from './support.js';

const newWorld = worldPerTest();

const Pos = component('CsPos', { x: 'f32', y: 'f32' });
const Hp = component('CsHp', { hp: 'i32' });
const Red = tag('CsRed');
const REPLICATED = [Pos, Hp, Red, ChildOf];

function live(world: World): Entity[] {
    return [...world.query({}).entities()].sort((a, b) => a - b);
}

/** What a replica seeing `visible` should hold: entity -> [Pos, Hp, Red, parent when visible]. */
function observe(world: World, entities: readonly Entity[], visible: (e: Entity) => boolean): string {
    const out: Record<number, unknown[]> = {};
    for (const e of [...entities].sort((a, b) => a - b)) {
        const parent = world.parentOf(e);
        out[e] = [
            world.has(e, Pos) ? world.get(e, Pos) : null,
            world.has(e, Hp) ? world.get(e, Hp, 'hp') : null,
            world.has(e, Red),
            parent !== undefined && visible(parent) ? parent : 0,
        ];
    }
    return JSON.stringify(out);
}
const expected = (source: World, peer: Peer) => {
    const sees = (e: Entity) => source.isAlive(e) && peer.sees(e);
    return observe(source, live(source).filter(sees), sees);
};
const held = (replica: World) => observe(replica, live(replica), () => true);

// ---------------------------------------------------------------- random schedules (peers)

const worldOp = fc.oneof(
    fc.record({
        k: fc.constant('spawn' as const),
        x: fc.integer({ min: -50, max: 50 }),
        hp: fc.option(fc.nat(99)),
        red: fc.boolean(),
        parent: fc.option(fc.nat()),
    }),
    fc.record({ k: fc.constant('despawn' as const), e: fc.nat() }),
    fc.record({ k: fc.constant('set' as const), e: fc.nat(), x: fc.integer({ min: -50, max: 50 }) }),
    fc.record({ k: fc.constant('hp' as const), e: fc.nat(), hp: fc.nat(99) }),
    fc.record({ k: fc.constant('red' as const), e: fc.nat() }),
    fc.record({ k: fc.constant('parent' as const), e: fc.nat(), p: fc.option(fc.nat()) }),
);
type WorldOp = typeof worldOp extends fc.Arbitrary<infer T> ? T : never;
const sightOp = fc.record({
    peer: fc.nat(2),
    e: fc.nat(),
    how: fc.constantFrom('show', 'show', 'hide', 'show+hide', 'hide+show', 'hide+despawn' as const),
    priority: fc.integer({ min: 1, max: 4 }),
});
const fate = fc.constantFrom('deliver', 'deliver', 'deliver', 'lose', 'late', 'duplicate' as const);
const tickArb = fc.record({
    ops: fc.array(worldOp, { minLength: 1, maxLength: 5 }),
    sights: fc.array(sightOp, { maxLength: 5 }),
    fates: fc.tuple(fate, fate, fate),
    held: fc.tuple(fc.boolean(), fc.boolean(), fc.boolean()), // messages held back a tick
    ackLost: fc.tuple(fc.boolean(), fc.boolean(), fc.boolean()),
    reopen: fc.option(fc.record({ peer: fc.nat(2), fresh: fc.boolean() }), { freq: 8 }),
});
type Tick = typeof tickArb extends fc.Arbitrary<infer T> ? T : never;
/** Busier ticks, for budgets: more records due than fit, acknowledgements lost often. */
const busyTickArb = fc.record({
    ops: fc.array(worldOp, { minLength: 3, maxLength: 8 }),
    sights: fc.array(sightOp, { maxLength: 5 }),
    fates: fc.tuple(fate, fate, fate),
    held: fc.tuple(fc.boolean(), fc.boolean(), fc.boolean()),
    ackLost: fc.tuple(fc.boolean(), fc.boolean(), fc.boolean()),
    reopen: fc.constant(null),
});

function applyOp(world: World, o: WorldOp): void {
    const all = live(world);
    const at = (i: number) => all[i % all.length]!;
    if (o.k === 'spawn' || all.length < 3) {
        const s = o as Extract<WorldOp, { k: 'spawn' }>;
        const parent = all.length && s.parent !== null && s.parent !== undefined ? at(s.parent) : 0;
        world.spawn(
            Pos({ x: s.x ?? 1, y: -(s.x ?? 1) / 4 }),
            ...(s.hp !== null && s.hp !== undefined ? [Hp({ hp: s.hp })] : []),
            ...(s.red ? [Red] : []),
            ...(parent ? [ChildOf(parent)] : []),
        );
        return;
    }
    const e = at((o as { e: number }).e);
    if (o.k === 'despawn') world.despawn(e);
    else if (o.k === 'set') world.set(e, Pos, { x: o.x, y: o.x / 8 });
    else if (o.k === 'hp') world.has(e, Hp) ? world.set(e, Hp, 'hp', o.hp) : world.add(e, Hp({ hp: o.hp }));
    else if (o.k === 'red') world.has(e, Red) ? world.remove(e, Red) : world.add(e, Red);
    else if (o.k === 'parent') {
        if (o.p === null) world.setParent(e, undefined);
        else {
            const p = at(o.p);
            if (p !== e && !world.descendants(e).includes(p)) world.setParent(e, p);
        }
    }
}

interface Client {
    peer: Peer;
    world: World;
    budget: number;
    /** Messages on their way down, and what the source held for this peer at each tick. */
    down: Uint8Array[];
    late: Uint8Array[];
    sent: Map<number, string>;
}

/**
 * Three peers of one replicator, each with its own visibility (two explicit, one all), budget
 * (`budgets`) and lossy link. With budget 0, every applied delta must leave the replica exactly
 * as the source was, for that peer, at the delta's tick; under a budget the replica may lag but
 * must hold only what that peer saw; after a clean stretch every replica equals the source.
 */
async function schedule(ticks: Tick[], budgets: readonly number[], history: number, cleanTicks: number): Promise<void> {
    const source = await createWorld();
    const worlds: World[] = [];
    try {
        const replicator = source.replicator({ components: REPLICATED, history });
        const open = async (i: number, world?: World): Promise<Client> => {
            if (!world) worlds.push((world = await createWorld()));
            const peer = replicator.peer({ visibility: i === 2 ? 'all' : 'explicit', budget: budgets[i]! });
            return { peer, world, budget: budgets[i]!, down: [], late: [], sent: new Map() };
        };
        const clients: Client[] = [];
        for (let i = 0; i < 3; i++) clients.push(await open(i));
        const receive = (c: Client, bytes: Uint8Array, where: string) => {
            const before = c.world.replicaTick;
            let applied: boolean;
            try {
                applied = c.world.applyDelta(bytes);
            } catch (error) {
                // README: "a delta for a baseline the replica lacks `DELTA_BASELINE` (acknowledge 0
                // to get a keyframe), and change nothing".
                expect((error as { code?: string }).code, where).toBe('DELTA_BASELINE');
                expect(c.world.replicaTick).toBe(before);
                return 'reset' as const;
            }
            if (!applied) return undefined;
            c.world.validate();
            const want = c.sent.get(c.world.replicaTick);
            if (want === undefined) return c.world.replicaTick;
            if (c.budget === 0) {
                // README: "After applying the delta of tick T, the replica holds what the source's
                // core held at T" (for a peer, of the entities it sees: "Entities shown arrive
                // whole; hidden or despawned ones are removed from that replica").
                expect(held(c.world), `${where}, tick ${c.world.replicaTick}`).toBe(want);
            } else {
                // Under a budget "the rest wait for the next delta": held entities are a subset.
                const shown = Object.keys(JSON.parse(want) as object);
                for (const e of live(c.world)) expect(shown, `${where}: holds ${e}`).toContain(String(e));
            }
            return c.world.replicaTick;
        };
        for (const [n, t] of ticks.entries()) {
            for (const o of t.ops) applyOp(source, o);
            for (const s of t.sights) {
                const c = clients[s.peer]!;
                const all = live(source);
                if (!c.peer.explicit || all.length === 0) continue;
                const e = all[s.e % all.length]!;
                if (s.how === 'show') c.peer.show(e, s.priority);
                else if (s.how === 'hide') c.peer.hide(e);
                else if (s.how === 'show+hide') (c.peer.show(e), c.peer.hide(e));
                else if (s.how === 'hide+show') (c.peer.hide(e), c.peer.show(e, s.priority));
                else (c.peer.hide(e), source.despawn(e));
            }
            if (t.reopen) {
                // A replica disconnects and another connection opens: "Close a peer when its
                // replica disconnects"; a new peer's first delta is a keyframe.
                const i = t.reopen.peer;
                clients[i]!.peer.close();
                clients[i] = await open(i, t.reopen.fresh ? undefined : clients[i]!.world);
            }
            for (const [i, c] of clients.entries()) {
                const delta = c.peer.encode();
                c.sent.set(delta.tick, expected(source, c.peer));
                const bytes = delta.bytes.slice();
                const f = t.fates[i]!;
                if (f === 'deliver') c.down.push(bytes);
                else if (f === 'late') c.late.push(bytes);
                else if (f === 'duplicate') c.down.push(bytes, bytes);
            }
            source.tick();
            for (const [i, c] of clients.entries()) {
                const due = t.held[i] ? [] : c.down.splice(0);
                if (!t.held[i]) due.push(...c.late.splice(0).reverse()); // late ones after newer ones
                const acks: (number | 'reset')[] = [];
                for (const bytes of due) {
                    const r = receive(c, bytes, `tick ${n}, peer ${i}`);
                    if (r !== undefined) acks.push(r);
                }
                if (t.ackLost[i]) continue;
                for (const a of acks) a === 'reset' ? c.peer.reset() : c.peer.ack(a);
            }
        }
        // A clean link: "nothing waits forever"; every replica ends equal to the source.
        for (let k = 0; k < cleanTicks; k++) {
            for (const c of clients) {
                const delta = c.peer.encode();
                c.sent.set(delta.tick, expected(source, c.peer));
                const r = receive(c, delta.bytes.slice(), `clean ${k}`);
                if (r === 'reset') c.peer.reset();
                else if (r !== undefined) c.peer.ack(r);
            }
            source.tick();
        }
        for (const [i, c] of clients.entries())
            expect(JSON.parse(held(c.world)), `peer ${i} at the end`).toEqual(JSON.parse(expected(source, c.peer)));
    } finally {
        source.destroy();
        for (const w of worlds) w.destroy();
    }
}

describe('peers: visibility changing every tick, lossy links, many peers', () => {
    test('without a budget every applied delta is exact for its peer (small history, peers reopened)', async () => {
        await fc.assert(
            fc.asyncProperty(fc.array(tickArb, { minLength: 5, maxLength: 40 }), fc.constantFrom(3, 8, 64), (ticks, history) =>
                schedule(ticks, [0, 0, 0], history, 3),
            ),
            { numRuns: 25, seed: 4242 },
        );
    });

    test('under byte budgets replicas hold only what they see, and equal the source after a clean stretch', async () => {
        // README: "Under a budget the records that fit go by score ..., the rest wait for the
        // next delta, and nothing waits forever; a withheld record is resent until a delta
        // carrying it is acknowledged." docs/format.md: "the replica then holds the same pairs".
        await fc.assert(
            fc.asyncProperty(fc.array(busyTickArb, { minLength: 10, maxLength: 50 }), fc.constantFrom(1, 12, 40), (ticks, budget) =>
                schedule(ticks, [budget, 0, budget], 64, 60),
            ),
            { numRuns: 40, seed: 2, endOnFailure: true },
        );
    });
});

// ---------------------------------------------------------------- budgets, deterministic

describe('budgets', () => {
    test('a parent removed while its child is owed under a budget is removed on the replica too', async () => {
        // README: "a withheld record is resent until a delta carrying it is acknowledged" and
        // "The replica ends up equal to the source at `delta.tick`: same handles, components,
        // values and pairs." docs/format.md (Peers): "the replica then holds the same pairs".
        const source = await newWorld();
        const replica = await newWorld();
        const peer = source.replicator({ components: [Pos, ChildOf] }).peer();
        const [a, b] = source.spawnMany(2, Pos) as unknown as [Entity, Entity];
        const d0 = peer.encode();
        replica.applyDelta(d0.bytes.slice());
        peer.ack(d0.tick);
        peer.budget = 1; // one record per delta
        source.set(a, Pos, 'x', 1);
        source.set(b, Pos, 'x', 2);
        source.setParent(b, a);
        replica.applyDelta(peer.encode().bytes.slice()); // not acknowledged (yet)
        replica.applyDelta(peer.encode().bytes.slice());
        expect(replica.parentOf(b)).toBe(a);
        source.setParent(b, undefined);
        for (let i = 0; i < 5; i++) {
            const d = peer.encode();
            replica.applyDelta(d.bytes.slice());
            peer.ack(d.tick);
        }
        expect(source.parentOf(b)).toBeUndefined();
        expect(replica.parentOf(b)).toBeUndefined(); // the replica once kept b's parent for good
        expect(replica.get(b, Pos)).toEqual(source.get(b, Pos));
    });
});

// ---------------------------------------------------------------- visibility, deterministic

describe('explicit visibility', () => {
    async function pair() {
        const source = await newWorld();
        const replica = await newWorld();
        const peer = source.replicator({ components: REPLICATED }).peer({ visibility: 'explicit' });
        const step = () => {
            const d = peer.encode();
            expect(replica.applyDelta(d.bytes.slice())).toBe(true);
            peer.ack(d.tick);
            expect(held(replica)).toBe(expected(source, peer));
            return d;
        };
        return { source, replica, peer, step };
    }

    test('a child shown while its parent is hidden arrives without the pair; showing the parent brings it', async () => {
        // README: "near.peer.show(enemy, ...);   // shown: arrives whole with its pairs" and
        // docs/format.md: "with every pair it has with entities the peer sees".
        const { source, replica, peer, step } = await pair();
        const parent = source.spawn(Pos({ x: 1, y: 1 }));
        const child = source.spawn(Pos({ x: 2, y: 2 }), ChildOf(parent));
        peer.show(child);
        step();
        expect(replica.isAlive(parent)).toBe(false);
        expect(replica.parentOf(child)).toBeUndefined();
        peer.show(parent);
        step();
        expect(replica.parentOf(child)).toBe(parent);
        peer.hide(parent); // the pair goes with it
        step();
        expect(replica.isAlive(child)).toBe(true);
        expect(replica.parentOf(child)).toBeUndefined();
        peer.show(parent);
        source.setParent(child, undefined);
        step();
        expect(replica.parentOf(child)).toBeUndefined();
    });

    test('hide then despawn, hide and show in one tick, despawn of a shown entity, index reuse', async () => {
        // README: "Entities shown arrive whole; hidden or despawned ones are removed from that replica".
        const { source, replica, peer, step } = await pair();
        const ids = source.spawnMany(4, Pos);
        for (const e of ids) peer.show(e);
        step();
        peer.hide(ids[0]!);
        source.despawn(ids[0]!);
        peer.hide(ids[1]!);
        peer.show(ids[1]!);
        source.set(ids[1]!, Pos, 'x', 9);
        source.despawn(ids[2]!);
        step();
        expect(replica.isAlive(ids[0]!)).toBe(false);
        expect(replica.get(ids[1]!, Pos, 'x')).toBe(9);
        // Shown and hidden between acknowledgements, with deltas lost in between.
        peer.hide(ids[3]!);
        peer.encode(); // lost
        peer.show(ids[3]!);
        source.set(ids[3]!, Pos, 'y', 5);
        peer.encode(); // lost
        step();
        expect(replica.get(ids[3]!, Pos, 'y')).toBe(5);
        expect(live(replica)).toEqual([ids[1]!, ids[3]!]);
    });
});

// ---------------------------------------------------------------- acknowledgements

describe('acknowledgements', () => {
    test('acks going backwards or repeated leave the replica exact, and one of a tick never sent is refused', async () => {
        // Peer.ack: "Acknowledgements may arrive late or out of order: only a newer tick counts."
        // README: "Deltas may be lost (the next one covers them: it is computed from the last
        // acknowledged tick), late (ignored) or reordered."
        const source = await newWorld();
        const replica = await newWorld();
        const peer = source.replicator({ components: REPLICATED }).peer();
        const ids = source.spawnMany(3, Pos);
        const ticks: number[] = [];
        for (let i = 0; i < 6; i++) {
            source.set(ids[i % 3]!, Pos, 'x', i);
            const d = peer.encode();
            expect(replica.applyDelta(d.bytes.slice())).toBe(true);
            ticks.push(d.tick);
            peer.ack(d.tick);
            peer.ack(ticks[0]!); // backwards: ignored
            expect(peer.acked).toBe(d.tick);
            expect(held(replica)).toBe(expected(source, peer));
        }
        // A tick never sent acknowledges nothing: refused, and what comes next is still right.
        expectError(() => peer.ack(ticks.at(-1)! + 1000), 'INVALID_ARGUMENT', { operation: 'peer.ack' });
        expect(peer.acked).toBe(ticks.at(-1));
        for (let i = 0; i < 5; i++) {
            source.set(ids[i % 3]!, Pos, 'y', i);
            if (i === 2) source.despawn(ids[2]!);
            const d = peer.encode();
            replica.applyDelta(d.bytes.slice());
            peer.ack(replica.replicaTick);
            expect(held(replica)).toBe(expected(source, peer));
        }
    });
});

// ---------------------------------------------------------------- empty deltas

describe('empty deltas', () => {
    test('changes to what a client does not see leave its delta empty', async () => {
        // README: "changes to entities a client does not see cost its deltas nothing" and "a
        // delta with nothing for its client says so (`delta.empty`)". docs/format.md (Peers):
        // "Changes to entities the peer does not see write nothing (no gone entry either: the
        // replica never held them)."
        const source = await newWorld();
        const replica = await newWorld();
        const Local = component('CsLocal', { v: 'i32' }, { replicate: false });
        const peer = source.replicator({ components: [Pos, ChildOf] }).peer({ visibility: 'explicit' });
        const [a, b] = source.spawnMany(2, Pos) as unknown as [Entity, Entity];
        source.add(a, Local({ v: 1 }));
        peer.show(a);
        const send = () => {
            const d = peer.encode();
            const bytes = d.bytes.slice();
            expect(replica.applyDelta(bytes)).toBe(true);
            peer.ack(d.tick);
            return { empty: d.empty, size: bytes.length };
        };
        send();
        const quiet = send();
        expect(quiet.empty).toBe(true);
        source.set(b, Pos, 'x', 5); // hidden
        expect(send()).toEqual(quiet);
        source.spawn(Pos, ChildOf(b)); // hidden
        expect(send()).toEqual(quiet);
        source.set(a, Local, 'v', 2); // not replicated
        expect(send()).toEqual(quiet);
        peer.hide(b); // never shown
        expect(send()).toEqual(quiet);
        // docs/format.md: "An entity shown and hidden again since the baseline costs a gone entry
        // (the peer keeps when visibility changed, not what it was at each baseline)": the
        // replica, which never held it, drops nothing, and the delta after is quiet again.
        peer.show(b);
        peer.hide(b);
        const blink = send();
        expect(blink.empty).toBe(false);
        expect(replica.isAlive(b)).toBe(false);
        expect(replica.isAlive(a)).toBe(true);
        expect(send()).toEqual(quiet);
    });
});

// ---------------------------------------------------------------- argument checks

describe('peer arguments', () => {
    test('bad acknowledgements and budgets throw INVALID_ARGUMENT and change nothing', async () => {
        // README: "Every failure is a TesseraError with a stable `code` ...; a failed call leaves
        // the world exactly as it was".
        const world = await newWorld();
        const replicator = world.replicator({ components: [Pos] });
        const peer = replicator.peer({ visibility: 'explicit', budget: 50 });
        const e = world.spawn(Pos);
        peer.show(e);
        const d = peer.encode();
        peer.ack(d.tick);
        for (const tick of [-1, 1.5, Number.NaN, Infinity, 2 ** 53, '3' as unknown as number]) {
            expectError(() => peer.ack(tick), 'INVALID_ARGUMENT', { operation: 'peer.ack' });
            expect(peer.acked).toBe(d.tick);
        }
        for (const budget of [-1, 0.5, Number.NaN, 2 ** 32, '9' as unknown as number]) {
            expectError(() => (peer.budget = budget), 'INVALID_ARGUMENT', { operation: 'peer.budget' });
            expect(peer.budget).toBe(50);
        }
        const dead = world.spawn(Pos);
        world.despawn(dead);
        expect(peer.sees(dead)).toBe(false);
        expectError(() => peer.show(dead), 'STALE_ENTITY', { operation: 'peer.show', entity: dead });
        expect(peer.sees(e)).toBe(true);
        peer.close();
        expectError(() => peer.ack(1), 'DESTROYED', { operation: 'peer.ack' });
        expectError(() => peer.encode(), 'DESTROYED', { operation: 'peer.encode' });
        expectError(() => peer.reset(), 'DESTROYED', { operation: 'peer.reset' });
    });
});

// ---------------------------------------------------------------- sessions

/** The `to` tick of a session's delta message: type byte, 12-byte header, then a varint. */
function messageTick(message: Uint8Array): number {
    let tick = 0,
        shift = 1;
    for (let i = 13; ; i++) {
        tick += (message[i]! & 0x7f) * shift;
        if (message[i]! < 0x80) return tick;
        shift *= 128;
    }
}

describe('sessions over lossy in-memory links', () => {
    test('explicit and full clients, messages lost, late, duplicated and reordered, reconnects: exact after every applied delta', async () => {
        // README: "Lost, late, duplicated and reordered messages are fine" and "After applying the
        // delta of tick T, the replica holds what the source's core held at T".
        const arb = fc.record({
            ticks: fc.array(
                fc.record({
                    ops: fc.array(worldOp, { minLength: 1, maxLength: 4 }),
                    sights: fc.array(sightOp, { maxLength: 4 }),
                    down: fc.tuple(fate, fate),
                    up: fc.tuple(fate, fate),
                    reconnect: fc.option(fc.nat(1), { freq: 10 }),
                }),
                { minLength: 5, maxLength: 40 },
            ),
        });
        let checked = 0;
        await fc.assert(
            fc.asyncProperty(arb, async ({ ticks }) => {
                const source = await createWorld();
                const worlds = [await createWorld(), await createWorld()];
                try {
                    const server = new ReplicationServer(source, { components: REPLICATED, history: 16 });
                    type Side = {
                        down: Uint8Array[];
                        up: Uint8Array[];
                        sent: Map<number, string>;
                        client: ReplicationClient;
                        connection: ReturnType<ReplicationServer['connect']>;
                    };
                    const connect = (i: number): Side => {
                        const side = { down: [], up: [], sent: new Map() } as unknown as Side;
                        const fates = { down: 'deliver', up: 'deliver' } as Record<'down' | 'up', string>;
                        const route = (queue: Uint8Array[], f: string, bytes: Uint8Array) => {
                            if (f === 'deliver') queue.push(bytes);
                            else if (f === 'late') queue.unshift(bytes);
                            else if (f === 'duplicate') queue.push(bytes, bytes);
                        };
                        side.connection = server.connect(
                            {
                                send: (bytes) => {
                                    const peer = side.connection.peer;
                                    side.sent.set(messageTick(bytes), expected(source, peer));
                                    route(side.down, fates.down, bytes);
                                },
                            },
                            { visibility: i === 0 ? 'explicit' : 'all' },
                        );
                        side.client = new ReplicationClient(worlds[i]!, { send: (bytes) => route(side.up, fates.up, bytes) });
                        (side as unknown as { fates: typeof fates }).fates = fates;
                        return side;
                    };
                    const sides = [connect(0), connect(1)];
                    const pump = (side: Side, where: string) => {
                        for (const m of side.down.splice(0)) {
                            if (side.client.receive(m)) {
                                checked++;
                                const want = side.sent.get(side.client.tick);
                                expect(held(side.client.world), `${where}, tick ${side.client.tick}`).toBe(want);
                            }
                        }
                        for (const m of side.up.splice(0)) side.connection.receive(m);
                    };
                    for (const [n, t] of ticks.entries()) {
                        for (const o of t.ops) applyOp(source, o);
                        for (const s of t.sights) {
                            const all = live(source);
                            const peer = sides[0]!.connection.peer;
                            if (!all.length) continue;
                            const e = all[s.e % all.length]!;
                            if (s.how === 'show' || s.how === 'hide+show') peer.show(e, s.priority);
                            else if (s.how === 'hide+despawn') (peer.hide(e), source.despawn(e));
                            else peer.hide(e);
                        }
                        if (t.reconnect !== null) {
                            const i = t.reconnect;
                            const shown = i === 0 ? live(source).filter((e) => sides[0]!.connection.peer.sees(e)) : [];
                            sides[i]!.client.leave();
                            sides[i]!.connection.close();
                            sides[i] = connect(i);
                            for (const e of shown) sides[i]!.connection.peer.show(e);
                        }
                        sides.forEach((side, i) => {
                            const f = side as unknown as { fates: Record<'down' | 'up', string> };
                            f.fates.down = t.down[i]!;
                            f.fates.up = t.up[i]!;
                        });
                        server.update();
                        source.tick();
                        sides.forEach((side, i) => pump(side, `tick ${n}, client ${i}`));
                    }
                    for (const side of sides)
                        Object.assign((side as unknown as { fates: Record<string, string> }).fates, { down: 'deliver', up: 'deliver' });
                    for (let k = 0; k < 4; k++) {
                        server.update();
                        source.tick();
                        sides.forEach((side, i) => pump(side, `clean ${k}, client ${i}`));
                    }
                    sides.forEach((side, i) =>
                        expect(held(side.client.world), `client ${i} at the end`).toBe(expected(source, side.connection.peer)),
                    );
                    server.close();
                } finally {
                    source.destroy();
                    for (const w of worlds) w.destroy();
                }
            }),
            { numRuns: 20, seed: 99 },
        );
        expect(checked).toBeGreaterThan(200); // the property compared what it claims to
    });
});
