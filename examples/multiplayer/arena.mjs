// The multiplayer example's server side, importable (the test starts it on any port): a world of
// dots bouncing in an arena, simulated at 20 ticks a second, replicated to every browser (or
// Node) client that connects to /multiplayer over a WebSocket (the `ws` package), through a
// ReplicationServer. The repository root is served over HTTP beside it, so the browser client
// (examples/multiplayer/index.html) and the package's dist/ load from the same origin.
import { WebSocketServer } from 'ws';

import { init, ReplicationServer } from '../../dist/index.js';
import { serve } from '../../web/serve.mjs';
import { Hue, Position, SIZE, Velocity } from './components.js';

export { Hue, Position, SIZE };

/**
 * Starts the arena: `entities` dots, HTTP on `port` (0: any) serving `root`, WebSockets on
 * /multiplayer. Returns its URL, the world, the server, a counter of bytes sent, and
 * `close()`. `tick()` runs one simulation step and update by hand when `tickMs` is 0.
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
    const stats = { bytesSent: 0, clients: 0 };
    const { server: http, url } = await serve(root, port);
    const sockets = new WebSocketServer({ server: http, path: '/multiplayer' });
    sockets.on('connection', (socket) => {
        const client = sessions.connect({
            send(bytes) {
                stats.bytesSent += bytes.length;
                socket.send(bytes);
            },
        });
        stats.clients = sessions.clients;
        socket.on('message', (data) => client.receive(new Uint8Array(data)));
        socket.on('close', () => {
            client.close();
            stats.clients = sessions.clients;
        });
    });
    const tick = () => {
        simulate();
        sessions.update();
    };
    const timer = tickMs > 0 ? setInterval(tick, tickMs) : undefined;
    return {
        url,
        world,
        sessions,
        stats,
        tick,
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
