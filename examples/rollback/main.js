// @ts-check
// The rollback example's page: the two peers of peers.js run live, one tick per animation frame,
// and each canvas draws one peer's world as that peer sees it now (the other player's ship moves
// on predictions, and jumps when a rollback corrects it). Under each: its counters and the hash
// of its latest confirmed tick; the line above says whether the peers agree on every tick both
// confirmed so far.
//
// `?seed=3`, `?latency=10` (the longest a message takes, in ticks; at most delay + 15),
// `?delay=0` (input delay, in frames), `?rollback=0` (never correct a prediction: the worlds
// part, and the line above turns red). `window.rollback` is the session, for the console.
import { init } from '../../dist/index.js';
import { Asteroid, Bullet, HEIGHT, Position, Ship, WIDTH } from './game.js';
import { connectPeers } from './peers.js';

/** @typedef {import('./peers.js').Peer} Peer */

const params = new URLSearchParams(location.search);
const tessera = await init();
const session = connectPeers({
    tessera,
    seed: Number(params.get('seed') ?? 1),
    inputDelay: Number(params.get('delay') ?? 2),
    maxLatency: Number(params.get('latency') ?? 6),
    rollback: params.get('rollback') !== '0',
});
Object.assign(window, { rollback: session });

/** The player colours: each peer's own ship is the one it steers. */
const COLOURS = ['#4af', '#fa4'];
const views = session.peers.map((peer) => {
    const canvas = /** @type {HTMLCanvasElement} */ (document.getElementById(`peer-${peer.player}`));
    canvas.width = WIDTH;
    canvas.height = HEIGHT;
    return {
        peer,
        context: /** @type {CanvasRenderingContext2D} */ (canvas.getContext('2d')),
        stats: /** @type {HTMLElement} */ (document.getElementById(`stats-${peer.player}`)),
        rocks: peer.world.query({ all: [Position, Asteroid] }),
        bullets: peer.world.query({ all: [Position, Bullet] }),
        ships: peer.world.query({ all: [Position, Ship] }),
    };
});
const agreement = /** @type {HTMLElement} */ (document.getElementById('agreement'));
/** Confirmed ticks compared so far, and the first where the peers' hashes differ (-1: none). */
let compared = 0,
    parted = -1;

/** @param {(typeof views)[number]} view */
function draw({ context, rocks, bullets, ships }) {
    context.fillStyle = '#000';
    context.fillRect(0, 0, WIDTH, HEIGHT);
    context.fillStyle = '#666';
    for (const chunk of rocks) {
        const x = chunk.column(Position, 'x'),
            y = chunk.column(Position, 'y'),
            radius = chunk.column(Asteroid, 'radius');
        for (let i = 0; i < chunk.count; i++) {
            context.beginPath();
            context.arc(x[i], y[i], radius[i], 0, 2 * Math.PI);
            context.fill();
        }
    }
    for (const chunk of bullets) {
        const x = chunk.column(Position, 'x'),
            y = chunk.column(Position, 'y'),
            owner = chunk.column(Bullet, 'owner');
        for (let i = 0; i < chunk.count; i++) {
            context.fillStyle = COLOURS[owner[i]] ?? '#fff';
            context.fillRect(x[i] - 1.5, y[i] - 1.5, 3, 3);
        }
    }
    for (const chunk of ships) {
        const x = chunk.column(Position, 'x'),
            y = chunk.column(Position, 'y');
        const player = chunk.column(Ship, 'player'),
            aimX = chunk.column(Ship, 'aimX'),
            aimY = chunk.column(Ship, 'aimY');
        for (let i = 0; i < chunk.count; i++) {
            context.strokeStyle = context.fillStyle = COLOURS[player[i]] ?? '#fff';
            context.fillRect(x[i] - 5, y[i] - 5, 10, 10);
            context.beginPath();
            context.moveTo(x[i], y[i]);
            context.lineTo(x[i] + aimX[i] * 12, y[i] + aimY[i] * 12);
            context.stroke();
        }
    }
}

/** @param {Peer} peer */
function describe(peer) {
    const { rollbacks, resimulated, maxDepth, mispredictions } = peer.counters;
    const confirmed = peer.confirmedHashes.length;
    const hash = confirmed ? (peer.confirmedHashes[confirmed - 1] ?? 0n).toString(16).padStart(16, '0') : '-';
    const scores = peer.game.ships.map((ship) => peer.world.get(ship, Ship, 'score')).join(' : ');
    return (
        `frame ${peer.frame} · score ${scores}\n` +
        `${rollbacks} rollbacks (deepest ${maxDepth}) · ${resimulated} frames re-simulated · ${mispredictions} mispredictions\n` +
        `confirmed tick ${confirmed - 1}: ${hash}`
    );
}

function frame() {
    session.step();
    const [a, b] = session.peers.map((peer) => peer.confirmedHashes);
    const both = Math.min(a.length, b.length);
    for (; compared < both; compared++) if (parted < 0 && a[compared] !== b[compared]) parted = compared;
    agreement.textContent =
        parted < 0 ? `the peers agree on all ${both} ticks both confirmed` : `the peers parted at tick ${parted} (no rollback)`;
    agreement.style.color = parted < 0 ? '#6c6' : '#f66';
    for (const view of views) {
        draw(view);
        view.stats.textContent = describe(view.peer);
    }
    requestAnimationFrame(frame);
}
requestAnimationFrame(frame);
