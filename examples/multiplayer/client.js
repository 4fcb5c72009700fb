// The multiplayer example's browser client: a world that is a replica of the server's, fed over
// a WebSocket by a ReplicationClient, drawn on a canvas every animation frame. It shares the
// component definitions (components.js): the first delta, a keyframe, maps them by name.
//
// `?loss=0.3` simulates a bad link in the transport wrapper: that share of the messages, both
// ways, is dropped, and as many again arrive late (out of order). `?view=150` asks the server
// for only the dots within 150 units of the pointer (`&budget=300`: at most 300 bytes of
// records a tick, closest first); the circle shows the view. `window.arena` is a handle
// for tests and the console: the world, the session, the replicated dots, the link.
import { createWorld, ReplicationClient } from '../../dist/index.js';
import { Hue, Position } from './components.js';

const world = await createWorld();
const params = new URLSearchParams(location.search);
const view = Number(params.get('view') ?? 0);
const interest = view > 0 ? `?view=${view}&budget=${Number(params.get('budget') ?? 0)}` : '';
const socket = new WebSocket(`${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/multiplayer${interest}`);
socket.binaryType = 'arraybuffer';
const link = { loss: Number(params.get('loss') ?? 0), dropped: 0, received: 0 };
/** Runs `action` now, later (reordered) or never, as the simulated link decides. */
const carry = (action) => {
    if (link.loss > 0 && Math.random() < link.loss) link.dropped++;
    else if (link.loss > 0 && Math.random() < link.loss) setTimeout(action, Math.random() * 100);
    else action();
};
const session = new ReplicationClient(world, {
    send: (bytes) => carry(() => socket.readyState === WebSocket.OPEN && socket.send(bytes)),
});
socket.onmessage = (event) => {
    link.received += event.data.byteLength;
    carry(() => session.receive(new Uint8Array(event.data)));
};
socket.onclose = () => (document.getElementById('stats').textContent = 'disconnected');

const query = world.query({ all: [Position, Hue] });

/** Every replicated dot: [handle, x, y, hue], by handle. */
function dots() {
    const out = [];
    for (const chunk of query) {
        const x = chunk.column(Position, 'x'),
            y = chunk.column(Position, 'y'),
            hue = chunk.column(Hue, 'h');
        for (let i = 0; i < chunk.count; i++) out.push([chunk.entities[i], x[i], y[i], hue[i]]);
    }
    return out.sort((a, b) => a[0] - b[0]);
}
window.arena = { world, session, link, dots, connected: new Promise((done) => (socket.onopen = done)) };

const canvas = document.getElementById('arena');
const context = canvas.getContext('2d');
/** The viewer's focus, in arena units: sent to the server (a text message) as the pointer moves. */
const focus = { x: canvas.width / 2, y: canvas.height / 2 };
canvas.addEventListener('pointermove', (event) => {
    const box = canvas.getBoundingClientRect();
    focus.x = ((event.clientX - box.left) / box.width) * canvas.width;
    focus.y = ((event.clientY - box.top) / box.height) * canvas.height;
    if (view > 0 && socket.readyState === WebSocket.OPEN) socket.send(`${focus.x},${focus.y}`);
});
const stats = document.getElementById('stats');
let last = performance.now(),
    lastReceived = 0;
function draw(now) {
    context.clearRect(0, 0, canvas.width, canvas.height);
    if (view > 0) {
        context.strokeStyle = '#555';
        context.beginPath();
        context.arc(focus.x, focus.y, view, 0, 2 * Math.PI);
        context.stroke();
    }
    for (const chunk of query) {
        const x = chunk.column(Position, 'x'),
            y = chunk.column(Position, 'y'),
            hue = chunk.column(Hue, 'h');
        for (let i = 0; i < chunk.count; i++) {
            context.fillStyle = `hsl(${hue[i]} 80% 60%)`;
            context.fillRect(x[i] - 1.5, y[i] - 1.5, 3, 3);
        }
    }
    if (now - last > 1000) {
        const rate = (link.received - lastReceived) / 1024 / ((now - last) / 1000);
        stats.textContent = `tick ${session.tick} · ${rate.toFixed(1)} KiB/s received · ${world.stats().entityCount} entities`;
        last = now;
        lastReceived = link.received;
    }
    requestAnimationFrame(draw);
}
requestAnimationFrame(draw);
