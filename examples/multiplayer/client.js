// The multiplayer example's browser client: a world that is a replica of the server's, fed over
// a WebSocket by a ReplicationClient, drawn on a canvas every animation frame. It shares the
// component definitions (components.js): the first delta, a keyframe, maps them by name.
import { createWorld, ReplicationClient } from '../../dist/index.js';
import { Hue, Position } from './components.js';

const world = await createWorld();
const socket = new WebSocket(`${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/multiplayer`);
socket.binaryType = 'arraybuffer';
const session = new ReplicationClient(world, socket);
let received = 0;
socket.onmessage = (event) => {
    received += event.data.byteLength;
    session.receive(new Uint8Array(event.data));
};
socket.onclose = () => (document.getElementById('stats').textContent = 'disconnected');

const canvas = document.getElementById('arena');
const context = canvas.getContext('2d');
const stats = document.getElementById('stats');
const query = world.query({ all: [Position, Hue] });
let last = performance.now(),
    lastReceived = 0;
function draw(now) {
    context.clearRect(0, 0, canvas.width, canvas.height);
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
        stats.textContent = `tick ${session.tick} · ${((received - lastReceived) / 1024 / ((now - last) / 1000)).toFixed(1)} KiB/s received · ${world.stats().entityCount} entities`;
        last = now;
        lastReceived = received;
    }
    requestAnimationFrame(draw);
}
requestAnimationFrame(draw);
