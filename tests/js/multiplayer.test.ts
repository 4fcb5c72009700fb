// The multiplayer example over real WebSockets on 127.0.0.1 (the `ws` package): its server
// (examples/multiplayer/arena.mjs) and Node clients, one of them behind a link that drops and
// delays messages both ways. Every client's world ends up equal to the server's.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import WebSocket from 'ws';
import { createWorld, ReplicationClient, type World } from '../../dist/index.js';
import { random } from './support.js';
// @ts-expect-error: a plain ES module without type declarations
import { startArena } from '../../examples/multiplayer/arena.mjs';
// @ts-expect-error: a plain ES module without type declarations
import { Hue, Position, Velocity } from '../../examples/multiplayer/components.js';

type Arena = {
    url: string;
    world: World;
    stats: { clients: number; bytesSent: number };
    tick(): void;
    update(): void;
    close(): Promise<void>;
};

let arena: Arena;
beforeAll(async () => {
    arena = await startArena({ root: '.', port: 0, entities: 500, tickMs: 0 });
});
afterAll(async () => arena.close());

const pause = (ms: number) => new Promise((done) => setTimeout(done, ms));

/** A client over a WebSocket; `loss` (changeable) drops and delays messages both ways. */
async function connect(url: string, seed = 0, interest = '') {
    const world = await createWorld();
    const socket = new WebSocket(url.replace('http', 'ws') + 'multiplayer' + interest);
    const rnd = random(seed);
    const link = { loss: 0, received: 0, dropped: 0 };
    const deliver = (action: () => void) => {
        if (link.loss > 0 && rnd() < link.loss) {
            link.dropped++;
            return;
        }
        if (link.loss > 0 && rnd() < 0.3)
            setTimeout(action, 1 + rnd() * 20); // late: reordered
        else action();
    };
    const session = new ReplicationClient(world, {
        send: (bytes: Uint8Array) => deliver(() => socket.readyState === WebSocket.OPEN && socket.send(bytes)),
    });
    socket.on('message', (data: Buffer) => {
        const bytes = new Uint8Array(data);
        deliver(() => {
            link.received++;
            session.receive(bytes);
        });
    });
    await new Promise((done, fail) => {
        socket.once('open', done);
        socket.once('error', fail);
    });
    return { world, socket, session, link };
}

/** Every replicated dot: handle -> [x, y, hue]. */
function dots(world: World): Map<number, number[]> {
    const out = new Map<number, number[]>();
    for (const chunk of world.query({ all: [Position, Hue] })) {
        const x = chunk.column(Position, 'x'),
            y = chunk.column(Position, 'y'),
            h = chunk.column(Hue, 'h');
        for (let i = 0; i < chunk.count; i++) out.set(chunk.entities[i]!, [x[i]!, y[i]!, h[i]!]);
    }
    return out;
}

/** Whether two sets of dots are equal (in any order: a replica's chunks may order them otherwise). */
function same(a: Map<number, number[]>, b: Map<number, number[]>): boolean {
    return a.size === b.size && [...a].every(([e, dot]) => JSON.stringify(b.get(e)) === JSON.stringify(dot));
}

/**
 * Waits (up to 10 s, no ticks) until the client's world equals the server's (or the part of it
 * `keep` says the client sees); the last difference.
 */
async function settled(world: World, keep: (dot: number[]) => boolean = () => true): Promise<void> {
    const expected = () => new Map([...dots(arena.world)].filter(([, dot]) => keep(dot)));
    for (let waited = 0; waited < 10_000; waited += 20) {
        if (same(dots(world), expected())) return;
        await pause(20);
    }
    expect(dots(world)).toEqual(expected());
}

/**
 * Ticks the arena `n` times, letting the sockets carry the traffic between ticks; then `still`
 * updates without simulating (what a byte budget held back goes then).
 */
async function run(n: number, still = 0) {
    for (let i = 0; i < n + still; i++) {
        if (i < n) arena.tick();
        else arena.update();
        await pause(5);
    }
}

describe('the multiplayer example over WebSockets', () => {
    test('two clients, one on a link that drops and reorders, then a late one: all equal the server', async () => {
        const clean = await connect(arena.url, 1);
        const lossy = await connect(arena.url, 2);
        lossy.link.loss = 0.3;
        await pause(20);
        expect(arena.stats.clients).toBe(2);
        await run(60);
        expect(lossy.link.dropped).toBeGreaterThan(0);
        await settled(clean.world); // nothing lost: at the latest tick
        const late = await connect(arena.url, 3);
        lossy.link.loss = 0; // the link heals
        await run(10);
        for (const client of [clean, lossy, late]) {
            await settled(client.world);
            expect(dots(client.world).size).toBe(500);
            // The server never sent the velocities (replicate: false).
            expect(client.world.query({ all: [Velocity] }).count()).toBe(0);
        }
        expect(arena.stats.clients).toBe(3);
        for (const client of [clean, lossy, late]) client.socket.close();
        for (let waited = 0; waited < 5000 && arena.stats.clients > 0; waited += 20) await pause(20);
        expect(arena.stats.clients).toBe(0);
    });

    test('a client with a view holds exactly the dots near its focus, under a byte budget', async () => {
        const viewer = await connect(arena.url, 4, '?view=120&budget=200');
        const everything = await connect(arena.url, 5);
        viewer.socket.send('200,300'); // its focus: a text message
        await pause(20);
        await run(40, 10);
        const near = ([x, y]: number[]) => Math.hypot(x! - 200, y! - 300) <= 120;
        // The dots within 120 units at the last tick, and nothing else; the other client sees all.
        await settled(viewer.world, near);
        await settled(everything.world);
        const seen = dots(viewer.world).size;
        expect(seen).toBeGreaterThan(5);
        expect(seen).toBeLessThan(250);
        // Moving the focus: the dots near the new one arrive, the old ones leave.
        viewer.socket.send('600,600');
        await pause(20);
        await run(30, 10);
        await settled(viewer.world, ([x, y]) => Math.hypot(x! - 600, y! - 600) <= 120);
        for (const client of [viewer, everything]) client.socket.close();
        for (let waited = 0; waited < 5000 && arena.stats.clients > 0; waited += 20) await pause(20);
    });
});
