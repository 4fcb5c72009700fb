// Replication sessions (ReplicationServer / ReplicationClient) over in-memory links that lose,
// delay, duplicate and reorder messages: the clients' worlds end up equal to the server's.
import { describe, expect, test } from 'vitest';
import { ChildOf, component, tag, MESSAGE, ReplicationClient, ReplicationServer, type World } from '../../dist/index.js';
import { expectError, random, worldPerTest } from './support.js';

const newWorld = worldPerTest();

const Position = component('SessionPosition', { x: 'f32', y: 'f32' });
const Health = component('SessionHealth', { hp: 'i32' });
const Marked = tag('SessionMarked');

/** One direction of a connection: messages arrive after `delay` frames, or never. */
class Link {
    private queue: { at: number; bytes: Uint8Array }[] = [];
    sent = 0;
    constructor(
        private readonly rnd: () => number,
        public loss = 0,
        private readonly maxDelay = 0,
    ) {}
    frame = 0;
    send(bytes: Uint8Array): void {
        this.sent++;
        const copies = this.rnd() < 0.05 && this.loss > 0 ? 2 : 1; // a lossy link duplicates too
        for (let i = 0; i < copies; i++) {
            if (this.rnd() < this.loss) continue;
            this.queue.push({ at: this.frame + Math.floor(this.rnd() * (this.maxDelay + 1)), bytes: bytes.slice() });
        }
    }
    /** Hands over what is due, in a shuffled order when the link reorders. */
    deliver(to: (bytes: Uint8Array) => void): void {
        const due = this.queue.filter((m) => m.at <= this.frame);
        this.queue = this.queue.filter((m) => m.at > this.frame);
        if (this.maxDelay > 0) due.sort(() => this.rnd() - 0.5);
        for (const m of due) to(m.bytes);
        this.frame++;
    }
}

/** A client over a pair of links. */
function attach(server: ReplicationServer, world: World, rnd: () => number, loss = 0, delay = 0) {
    const down = new Link(rnd, loss, delay),
        up = new Link(rnd, loss, delay);
    const client = new ReplicationClient(world, up);
    const connection = server.connect(down);
    const counts = { delivered: 0, unchanged: 0 };
    return {
        client,
        connection,
        down,
        up,
        counts,
        /** One frame of traffic both ways. */
        pump() {
            down.deliver((bytes) => {
                counts.delivered++;
                if (!client.receive(bytes)) counts.unchanged++; // late, repeated, or a reset asked
            });
            up.deliver((bytes) => connection.receive(bytes));
        },
    };
}

/** Everything replicated, as plain data: entity -> [position, health, marked, parent]. */
function state(world: World): Map<number, unknown[]> {
    const out = new Map<number, unknown[]>();
    for (const e of world.query({ any: [Position, Health, Marked] }).entities()) {
        out.set(e, [
            world.has(e, Position) ? world.get(e, Position) : null,
            world.has(e, Health) ? world.get(e, Health, 'hp') : null,
            world.has(e, Marked),
            world.parentOf(e) ?? 0,
        ]);
    }
    return out;
}

/** A random frame of game changes on the server's world. */
function change(world: World, rnd: () => number, live: number[]): void {
    for (let k = 0; k < 8; k++) {
        const roll = rnd();
        const e = live.length ? live[Math.floor(rnd() * live.length)]! : 0;
        if (roll < 0.25 || live.length < 5) {
            live.push(world.spawn(Position({ x: rnd() * 100, y: rnd() * 100 }), Health({ hp: Math.floor(rnd() * 100) })));
        } else if (roll < 0.35) {
            world.despawn(e);
            live.splice(live.indexOf(e), 1);
            for (let i = live.length - 1; i >= 0; i--) if (!world.isAlive(live[i]!)) live.splice(i, 1); // cascades
        } else if (roll < 0.7) {
            world.set(e, Position, { x: rnd() * 100, y: rnd() * 100 });
        } else if (roll < 0.8) {
            world.set(e, Health, 'hp', Math.floor(rnd() * 100));
        } else if (roll < 0.9) {
            if (world.has(e, Marked)) world.remove(e, Marked);
            else world.add(e, Marked);
        } else {
            const parent = live[Math.floor(rnd() * live.length)]!;
            if (parent !== e && !world.descendants(e).includes(parent)) world.setParent(e, parent);
        }
    }
}

describe('replication sessions', () => {
    test('two clients, one over a link that loses, delays, duplicates and reorders, end up equal to the server', async () => {
        const world = await newWorld();
        const server = new ReplicationServer(world, { components: [Position, Health, Marked, ChildOf] });
        const rnd = random(20261126);
        const clean = attach(server, await newWorld(), rnd);
        const lossy = attach(server, await newWorld(), rnd, 0.3, 3);
        const live: number[] = [];
        for (let frame = 0; frame < 300; frame++) {
            change(world, rnd, live);
            server.update();
            clean.pump();
            lossy.pump();
            // The clean client is at the server's latest tick every frame.
            if (frame % 50 === 0) expect(state(clean.client.world)).toEqual(state(world));
        }
        // The lossy link lost some deltas and brought others late (applied after newer ones,
        // they change nothing); the clean one applied every one.
        expect(lossy.down.sent).toBe(300);
        expect(lossy.counts.delivered).toBeLessThan(300);
        expect(lossy.counts.unchanged).toBeGreaterThan(0);
        expect(clean.counts).toEqual({ delivered: 300, unchanged: 0 });
        // The link heals: a few frames without changes bring the lossy client up to date.
        lossy.down.loss = lossy.up.loss = 0;
        for (let frame = 0; frame < 10; frame++) {
            server.update();
            clean.pump();
            lossy.pump();
        }
        expect(state(clean.client.world)).toEqual(state(world));
        expect(state(lossy.client.world)).toEqual(state(world));
        // (Each connection's encode takes its own tick: the two clients' ticks differ.)
        expect(lossy.connection.acked).toBe(lossy.client.tick);
        expect(clean.connection.acked).toBe(clean.client.tick);
        server.close();
    });

    test('a client that joins late gets a keyframe: everything in its first message', async () => {
        const world = await newWorld();
        const server = new ReplicationServer(world);
        const rnd = random(7);
        const first = attach(server, await newWorld(), rnd);
        const live: number[] = [];
        for (let frame = 0; frame < 20; frame++) {
            change(world, rnd, live);
            server.update();
            first.pump();
        }
        const late = attach(server, await newWorld(), rnd);
        server.update();
        late.pump();
        expect(state(late.client.world)).toEqual(state(world));
        expect(late.connection.acked).toBe(late.client.tick);
        server.close();
    });

    test('a client that leaves is forgotten: nothing more is sent to it', async () => {
        const world = await newWorld();
        const server = new ReplicationServer(world);
        const rnd = random(3);
        const staying = attach(server, await newWorld(), rnd);
        const leaving = attach(server, await newWorld(), rnd);
        world.spawn(Position({ x: 1, y: 2 }));
        server.update();
        staying.pump();
        leaving.pump();
        expect(server.clients).toBe(2);
        leaving.client.leave();
        leaving.pump(); // the goodbye arrives
        expect(leaving.connection.connected).toBe(false);
        expect(server.clients).toBe(1);
        const sent = leaving.down.sent;
        world.spawn(Position({ x: 3, y: 4 }));
        server.update();
        expect(leaving.down.sent).toBe(sent);
        staying.pump();
        expect(state(staying.client.world)).toEqual(state(world));
        // A message that arrives after the goodbye is ignored.
        leaving.connection.receive(Uint8Array.of(MESSAGE.reset));
        expect(server.clients).toBe(1);
        server.close();
    });

    test('a client kept across a restart of its server takes the state of the new one', async () => {
        // The old server ran long: the client's world is at a tick the new one reaches late.
        const rnd = random(29);
        const old = await newWorld();
        const first = new ReplicationServer(old, { components: [Position, Health, Marked, ChildOf] });
        const kept = await newWorld();
        const before = attach(first, kept, rnd);
        const oldLive: number[] = [];
        for (let frame = 0; frame < 40; frame++) {
            change(old, rnd, oldLive);
            first.update();
            before.pump();
        }
        first.close();
        const oldTick = kept.replicaTick;
        // The restart: another world, its ticks from the start; the same client object, its
        // transport reconnected (as a reconnecting socket does).
        const world = await newWorld();
        const server = new ReplicationServer(world, { components: [Position, Health, Marked, ChildOf] });
        const connection = server.connect(before.down);
        const live: number[] = [];
        for (let frame = 0; frame < 12; frame++) {
            change(world, rnd, live);
            server.update();
            before.down.deliver((bytes) => before.client.receive(bytes));
            before.up.deliver((bytes) => connection.receive(bytes));
            // Its first keyframe is older than the world's tick and still applies, and every
            // frame after the world equals the new server's (the old state never comes back).
            expect(state(kept)).toEqual(state(world));
        }
        expect(connection.acked).toBeLessThan(oldTick);
        server.close();
    });

    test('a client whose world restarted asks for a keyframe and catches up', async () => {
        const world = await newWorld();
        // The components named: a default replicator adopts components registered later with a
        // keyframe for everyone, which would hide the reset.
        const server = new ReplicationServer(world, { components: [Position, Health, Marked, ChildOf] });
        const rnd = random(11);
        const link = attach(server, await newWorld(), rnd);
        const live: number[] = [];
        for (let frame = 0; frame < 5; frame++) {
            change(world, rnd, live);
            server.update();
            link.pump();
        }
        // The same connection, a fresh world behind it (a reload): the next delta's baseline is
        // one it lacks, so it answers with a reset instead of an ack.
        const fresh = new ReplicationClient(await newWorld(), link.up);
        change(world, rnd, live);
        server.update();
        link.down.deliver((bytes) => expect(fresh.receive(bytes)).toBe(false));
        link.up.deliver((bytes) => {
            expect(bytes[0]).toBe(MESSAGE.reset);
            link.connection.receive(bytes);
        });
        expect(link.connection.acked).toBe(0);
        server.update();
        link.down.deliver((bytes) => expect(fresh.receive(bytes)).toBe(true));
        expect(state(fresh.world)).toEqual(state(world));
        server.close();
    });

    test('a client whose host edited a replicated entity gets BAD_DELTA once, then a keyframe heals it', async () => {
        const world = await newWorld();
        const server = new ReplicationServer(world, { components: [Position, Health, Marked, ChildOf] });
        const rnd = random(5);
        const link = attach(server, await newWorld(), rnd);
        const e = world.spawn(Position({ x: 1, y: 2 }), Health({ hp: 3 }));
        server.update();
        link.pump();
        link.client.world.despawn(e); // the host's own edit: the server never hears of it
        world.set(e, Position, { x: 5, y: 6 });
        server.update();
        let refused: unknown;
        link.down.deliver((bytes) => {
            try {
                link.client.receive(bytes);
            } catch (error) {
                refused = error;
            }
        });
        expect((refused as { code?: string }).code).toBe('BAD_DELTA');
        link.up.deliver((bytes) => {
            expect(bytes[0]).toBe(MESSAGE.reset);
            link.connection.receive(bytes);
        });
        server.update();
        link.pump();
        expect(state(link.client.world)).toEqual(state(world));
        server.close();
    });

    test('malformed messages are refused and change nothing', async () => {
        const world = await newWorld();
        const server = new ReplicationServer(world);
        const connection = server.connect({ send() {} });
        const client = new ReplicationClient(await newWorld(), { send() {} });
        for (const bytes of [new Uint8Array(0), Uint8Array.of(9), Uint8Array.of(MESSAGE.ack, 1, 2), Uint8Array.of(MESSAGE.delta, 1)]) {
            expectError(() => connection.receive(bytes), 'INVALID_ARGUMENT');
        }
        const nan = new Uint8Array(9);
        nan[0] = MESSAGE.ack;
        new DataView(nan.buffer).setFloat64(1, -1, true);
        expectError(() => connection.receive(nan), 'INVALID_ARGUMENT');
        expect(connection.acked).toBe(0);
        expectError(() => client.receive(Uint8Array.of(MESSAGE.ack, 0)), 'INVALID_ARGUMENT');
        expectError(() => client.receive(Uint8Array.of(MESSAGE.delta, 1, 2, 3)), 'BAD_DELTA');
        expect(client.tick).toBe(0);
        expectError(() => server.connect({} as never), 'INVALID_ARGUMENT');
        server.close();
    });
});

describe('quiet clients', () => {
    test('a client for which nothing changed gets a message only every history / 4 updates', async () => {
        const world = await newWorld();
        const server = new ReplicationServer(world, { components: [Position] });
        const rnd = random(3);
        const client = attach(server, await newWorld(), rnd);
        const e = world.spawn(Position({ x: 1, y: 2 }));
        for (let frame = 0; frame < 3; frame++) {
            server.update();
            client.pump();
        }
        const before = client.down.sent;
        for (let frame = 0; frame < 100; frame++) {
            server.update();
            client.pump();
        }
        // 64 / 4 = 16 empty deltas left unsent, then one sent: one message in 17 updates.
        const quiet = client.down.sent - before;
        expect(quiet).toBeGreaterThanOrEqual(5);
        expect(quiet).toBeLessThanOrEqual(6);
        expect(client.connection.acked).toBeGreaterThan(0);
        world.set(e, Position, { x: 5, y: 6 });
        server.update();
        client.pump();
        expect(client.client.world.get(e, Position)).toEqual({ x: 5, y: 6 });
        expect(client.down.sent - before).toBe(quiet + 1);
    });
});

describe('many clients', () => {
    test('forty clients whose acknowledgements come back three frames late get deltas, not keyframes', async () => {
        const world = await newWorld();
        const server = new ReplicationServer(world, { components: [Position, Health, Marked, ChildOf] });
        const rnd = random(20261128);
        const clients = [];
        for (let i = 0; i < 40; i++) clients.push(attach(server, await newWorld(), rnd, 0, 3));
        // Keyframes sent to a client that acknowledged one already (until then each update sends
        // one): a keyframe has the flag in its header (after the type byte).
        let keyframes = 0;
        for (const client of clients) {
            const send = client.down.send.bind(client.down);
            client.down.send = (bytes: Uint8Array) => {
                const keyframe = bytes[0] === MESSAGE.delta && (bytes[1 + 6]! & 1) !== 0;
                if (keyframe && client.connection.acked > 0) keyframes++;
                send(bytes);
            };
        }
        const live: number[] = [];
        for (let frame = 0; frame < 60; frame++) {
            change(world, rnd, live);
            server.update();
            for (const client of clients) client.pump();
        }
        for (let frame = 0; frame < 8; frame++) {
            server.update();
            for (const client of clients) client.pump();
        }
        for (const client of clients) expect(state(client.client.world)).toEqual(state(world));
        // None: a replicator that kept 64 encodes (1.6 frames of 40 clients) sent only keyframes.
        expect(keyframes).toBe(0);
    });
});

describe('per-client interest and budgets', () => {
    /** The replicated state a client of the region should hold: its entities, parents it also sees. */
    function stateIn(world: World, inside: (e: number) => boolean): Map<number, unknown[]> {
        const out = new Map<number, unknown[]>();
        for (const [e, value] of state(world)) {
            if (!inside(e)) continue;
            const parent = value[3] as number;
            out.set(e, [...value.slice(0, 3), parent !== 0 && inside(parent) ? parent : 0]);
        }
        return out;
    }

    test('each client holds exactly what the game shows it, one of them under a byte budget over a lossy link', async () => {
        const world = await newWorld();
        const server = new ReplicationServer(world, { components: [Position, Health, Marked, ChildOf] });
        const rnd = random(20261127);
        const west = attach(server, await newWorld(), rnd);
        const east = attach(server, await newWorld(), rnd, 0.3, 2);
        // The halves of the map, decided per client the way a game decides what is near it.
        const left = (e: number) => world.has(e, Position) && world.get(e, Position, 'x') < 50;
        const right = (e: number) => world.has(e, Position) && !left(e);
        const regions = [
            { client: west, inside: left, options: { visibility: 'explicit' as const } },
            { client: east, inside: right, options: { visibility: 'explicit' as const, budget: 120 } },
        ];
        const connections = regions.map((r) => server.connect({ send: (bytes) => r.client.down.send(bytes) }, r.options));
        // attach() connected a peer that sees everything: drop it, the clients talk to the new ones.
        for (const r of regions) r.client.connection.close();
        const pump = (r: (typeof regions)[number], i: number) => {
            r.client.down.deliver((bytes) => r.client.client.receive(bytes));
            r.client.up.deliver((bytes) => connections[i]!.receive(bytes));
        };
        const live: number[] = [];
        for (let frame = 0; frame < 400; frame++) {
            if (frame < 250) change(world, rnd, live);
            regions.forEach((r, i) => {
                for (const e of live) {
                    if (r.inside(e)) connections[i]!.peer.show(e, 1 + (e % 4));
                    else connections[i]!.peer.hide(e);
                }
            });
            server.update();
            regions.forEach(pump);
            if (frame === 100) expect(stateIn(west.client.world, () => true)).toEqual(stateIn(world, left));
        }
        for (const [i, r] of regions.entries()) {
            expect(
                stateIn(r.client.client.world, () => true),
                `client ${i}`,
            ).toEqual(stateIn(world, r.inside));
        }
        expect(west.client.world.stats().entityCount).toBeGreaterThan(5);
        expect(east.client.world.stats().entityCount).toBeGreaterThan(5);
    });

    test('an entity enters, leaves and re-enters a view while its deltas are in flight', async () => {
        const world = await newWorld();
        const replicator = world.replicator({ components: [Position] });
        const peer = replicator.peer({ visibility: 'explicit' });
        const ids = world.spawnMany(10, Position);
        const replica = await newWorld();
        peer.show(ids[0]!);
        const key = peer.encode();
        expect(replica.applyDelta(key.bytes.slice())).toBe(true);
        peer.ack(key.tick);
        const e = ids[5]!;
        const copy = () => {
            const d = peer.encode();
            return { bytes: d.bytes.slice(), tick: d.tick };
        };
        peer.show(e);
        const entered = copy(); // in flight
        peer.hide(e);
        const left = copy(); // in flight
        world.set(e, Position, { x: 7, y: 8 });
        peer.show(e);
        const back = copy();
        // They arrive out of order: the one that left first, then the late one, then the newest.
        expect(replica.applyDelta(left.bytes)).toBe(true);
        peer.ack(left.tick);
        expect(replica.isAlive(e)).toBe(false);
        expect(replica.applyDelta(entered.bytes)).toBe(false); // late: changes nothing
        expect(replica.isAlive(e)).toBe(false);
        expect(replica.applyDelta(back.bytes)).toBe(true);
        expect(replica.get(e, Position)).toEqual({ x: 7, y: 8 });
        peer.ack(back.tick);
        peer.hide(e);
        const gone = peer.encode();
        expect(gone.keyframe).toBe(false);
        expect(replica.applyDelta(gone.bytes.slice())).toBe(true);
        expect(replica.isAlive(e)).toBe(false);
        expect(replica.stats().entityCount).toBe(1);
    });

    test('under a budget no entity starves, and the higher priorities go more often', async () => {
        const world = await newWorld();
        const peer = world.replicator({ components: [Position] }).peer({ visibility: 'explicit', budget: 60 });
        const ids = world.spawnMany(30, Position);
        ids.forEach((e, i) => peer.show(e, 1 + i)); // priorities 1 to 30
        const replica = await newWorld();
        const lastSeen = new Array<number>(30).fill(-1);
        const sent = new Array<number>(30).fill(0);
        for (let tick = 0; tick < 400; tick++) {
            for (const e of ids) world.set(e, Position, { x: tick, y: e });
            const d = peer.encode();
            expect(replica.applyDelta(d.bytes.slice())).toBe(true);
            peer.ack(d.tick);
            ids.forEach((e, i) => {
                if (replica.isAlive(e) && replica.get(e, Position, 'x') === tick) {
                    lastSeen[i] = tick;
                    sent[i]!++;
                }
            });
        }
        // About 4 records fit a delta (14 bytes each, owed ones whole): priority p goes about every
        // 465 / (4 p) ticks (the priorities sum to 465). Every entity went in the last stretch, the
        // lowest priority too, and less often than the highest.
        for (const tick of lastSeen) expect(tick).toBeGreaterThan(400 - 250);
        expect(sent[0]!).toBeGreaterThan(0);
        expect(sent[29]!).toBeGreaterThan(sent[0]! * 3);
    });

    test('a peer shows, hides and budgets; bad arguments are refused clearly and change nothing', async () => {
        const world = await newWorld();
        const replicator = world.replicator({ components: [Position] });
        const all = replicator.peer();
        const some = replicator.peer({ visibility: 'explicit', budget: 30 });
        const ids = world.spawnMany(50, Position);
        expectError(() => all.show(ids[0]!), 'INVALID_ARGUMENT', { operation: 'peer.show' });
        expectError(() => some.show(ids[0]!, 0), 'INVALID_ARGUMENT', { operation: 'peer.show', entity: ids[0] });
        expectError(() => some.show(ids[0]!, Infinity), 'INVALID_ARGUMENT', { operation: 'peer.show' });
        // Finite as a double but infinity as the float the core keeps, and not numbers: each
        // refusal says what a priority must be.
        for (const bad of [1e308, -1e-300, NaN, '2' as unknown as number]) {
            const error = expectError(() => some.show(ids[0]!, bad), 'INVALID_ARGUMENT', { operation: 'peer.show', entity: ids[0] });
            expect(error.message).toMatch(/priority must be above 0 and finite as a 32-bit float/);
        }
        expect(some.sees(ids[0]!)).toBe(false);
        expectError(() => replicator.peer({ visibility: 'some' as 'all' }), 'INVALID_ARGUMENT', { operation: 'replicator.peer' });
        expectError(() => replicator.peer({ budget: -1 }), 'INVALID_ARGUMENT', { operation: 'peer.budget' });
        expectError(() => replicator.peer({ visible: 'all' } as never), 'INVALID_ARGUMENT', { operation: 'replicator.peer' });
        const dead = world.spawn(Position);
        world.despawn(dead);
        expectError(() => some.show(dead), 'STALE_ENTITY', { operation: 'peer.show', entity: dead });
        expect(some.sees(ids[0]!)).toBe(false);
        for (const e of ids.slice(0, 10)) some.show(e);
        some.show(ids[9]!, 50); // the highest score goes first under the budget
        expect(some.sees(ids[3]!)).toBe(true);
        expect(all.sees(ids[3]!)).toBe(true);
        const replica = await newWorld();
        const first = some.encode();
        replica.applyDelta(first.bytes.slice());
        some.ack(first.tick);
        // 30 bytes of records: the first delta brings the entity of priority 50 and few others.
        expect(replica.isAlive(ids[9]!)).toBe(true);
        const count = replica.stats().entityCount;
        expect(count).toBeLessThan(10);
        for (let i = 0; i < 10; i++) {
            const d = some.encode();
            replica.applyDelta(d.bytes.slice());
            some.ack(d.tick);
        }
        expect(replica.stats().entityCount).toBe(10);
        some.hide(ids[3]!);
        expect(some.sees(ids[3]!)).toBe(false);
        const d = some.encode();
        replica.applyDelta(d.bytes.slice());
        expect(replica.isAlive(ids[3]!)).toBe(false);
        expect(replica.stats().entityCount).toBe(9);
        some.close();
        expectError(() => some.show(ids[0]!), 'DESTROYED', { operation: 'peer.show' });
        replicator.close();
        expectError(() => all.sees(ids[0]!), 'DESTROYED', { operation: 'peer.sees' });
    });
});
