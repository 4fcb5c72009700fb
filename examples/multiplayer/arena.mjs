// The multiplayer example's server side, importable (the test starts it on any port): a world of
// dots bouncing in an arena, simulated at 20 ticks a second, replicated to every browser (or
// Node) client that connects to /multiplayer over a WebSocket (the `ws` package), through a
// ReplicationServer. The repository root is served over HTTP beside it, so the browser client
// (examples/multiplayer/index.html) and the package's dist/ load from the same origin.
//
// Interest: a client that connects to /multiplayer?view=R sees only the dots within R units of
// its focus (the centre, until it sends "x,y" as a text message), closer ones first under a
// byte budget (&budget=bytes per tick): each tick the game shows its peer what is near the
// focus and hides the rest, the way a game decides what each player needs.
import { WebSocketServer } from 'ws';

import { init, ReplicationServer } from '../../dist/index.js';
import { serve } from '../../web/serve.mjs';
import { Hue, Position, SIZE, Velocity } from './components.js';

export { Hue, Position, SIZE };

/**
 * Starts the arena: `entities` dots, HTTP on `port` (0: any) serving `root`, WebSockets on
 * /multiplayer. Returns its URL, the world, the server, a counter of bytes sent, and
 * `close()`. `tick()` runs one simulation step and update by hand when `tickMs` is 0; `update()`
 * sends without simulating (what a budget held back goes then).
 */
export async function startArena({ root = '.', port = 0, entities = 2000, tickMs = 50, seed = 1 } = {}) {
    const tessera = await init();
    const world = tessera.createWorld();
    let s = seed >>> 0;
    const random = () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32;
    for (let i = 0; i < entities; i++) {
        world.spawn(
            Position({ x: random() * SIZE, y: random() * SIZE }),
            Velocity({ x: (random() - 0.5) * 60, y: (random() - 0.5) * 60 }),
            Hue({ h: Math.floor(random() * 360) }),
        );
    }
    // Only a tenth of the dots move each tick: the deltas carry what changed, not the world.
    const moving = world.query({ all: [Position, Velocity], writes: [Position] });
    let frame = 0;
    const simulate = () => {
        const dt = tickMs > 0 ? tickMs / 1000 : 0.05;
        for (const chunk of moving) {
            const px = chunk.column(Position, 'x'),
                py = chunk.column(Position, 'y');
            const vx = chunk.column(Velocity, 'x'),
                vy = chunk.column(Velocity, 'y');
            for (let i = 0, n = chunk.count; i < n; i++) {
                if ((i + frame) % 10 !== 0) continue;
                px[i] += vx[i] * dt * 10;
                py[i] += vy[i] * dt * 10;
                if (px[i] < 0 || px[i] > SIZE) vx[i] = -vx[i];
                if (py[i] < 0 || py[i] > SIZE) vy[i] = -vy[i];
                px[i] = Math.min(SIZE, Math.max(0, px[i]));
                py[i] = Math.min(SIZE, Math.max(0, py[i]));
            }
        }
        frame++;
    };

    const sessions = new ReplicationServer(world, { components: [Position, Hue] });
    /** The clients with a view: their connection, focus and radius. */
    const viewers = new Set();
    const everyDot = world.query({ all: [Position] });
    /** Shows each viewer the dots within its radius (closer: a higher priority), hides the rest. */
    const look = () => {
        for (const viewer of viewers) {
            const { peer } = viewer.client;
            for (const chunk of everyDot) {
                const x = chunk.column(Position, 'x'),
                    y = chunk.column(Position, 'y');
                for (let i = 0, n = chunk.count; i < n; i++) {
                    const distance = Math.hypot(x[i] - viewer.x, y[i] - viewer.y);
                    if (distance <= viewer.radius) peer.show(chunk.entities[i], 1 + viewer.radius - distance);
                    else peer.hide(chunk.entities[i]);
                }
            }
        }
    };
    const stats = { bytesSent: 0, clients: 0 };
    const { server: http, url } = await serve(root, port);
    const sockets = new WebSocketServer({ server: http, path: '/multiplayer' });
    sockets.on('connection', (socket, request) => {
        const query = new URL(request.url, 'http://arena').searchParams;
        const radius = Number(query.get('view') ?? 0),
            budget = Number(query.get('budget') ?? 0);
        const options = radius > 0 ? { visibility: 'explicit', budget: Math.max(0, Math.floor(budget) || 0) } : {};
        const client = sessions.connect(
            {
                send(bytes) {
                    stats.bytesSent += bytes.length;
                    socket.send(bytes);
                },
            },
            options,
        );
        const viewer = radius > 0 ? { client, radius, x: SIZE / 2, y: SIZE / 2 } : undefined;
        if (viewer) viewers.add(viewer);
        stats.clients = sessions.clients;
        socket.on('message', (data, binary) => {
            if (binary) return client.receive(new Uint8Array(data));
            // A text message: the viewer's focus, "x,y" (ignored when malformed).
            const [x, y] = String(data).split(',').map(Number);
            if (viewer && Number.isFinite(x) && Number.isFinite(y)) Object.assign(viewer, { x, y });
        });
        socket.on('close', () => {
            viewers.delete(viewer);
            client.close();
            stats.clients = sessions.clients;
        });
    });
    /** Sends every client what changed (and what entered or left a viewer's view). */
    const update = () => {
        look();
        sessions.update();
    };
    const tick = () => {
        simulate();
        update();
    };
    const timer = tickMs > 0 ? setInterval(tick, tickMs) : undefined;
    return {
        url,
        world,
        sessions,
        stats,
        tick,
        update,
        async close() {
            clearInterval(timer);
            for (const socket of sockets.clients) socket.terminate();
            await new Promise((done) => sockets.close(() => done()));
            await new Promise((done) => http.close(() => done()));
            sessions.close();
            world.destroy();
        },
    };
}
