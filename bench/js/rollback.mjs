// Rollback cost (issue 21): checkpoints and rewinds against a whole snapshot and restore, at 100k
// entities with 1% of them changing per tick, through the public API (world.checkpoint(),
// world.rewind(n), world.snapshot(), createWorld({ snapshot })).
//
// The world: Position {x, y: f32} and Velocity {x, y: f32} on every entity, a sparse marker on
// 1%. A tick is a game's frame over that world: a read pass over every entity (a query summing
// positions: the AI, collision or culling scans a game does), 1,000 entities moved (1%:
// world.field writes, tracked), 10 despawned and 10 spawned with values, 10 markers moved.
//   node bench/js/rollback.mjs [--no-write]
import { writeFileSync } from 'node:fs';
import path from 'node:path';

import { component, init, tag } from '../../dist/index.js';
import { fmtNum, median } from './measure.js';
import { envLine, resultsDir } from './node-env.mjs';

const Position = component('Position', { x: 'f32', y: 'f32' });
const Velocity = component('Velocity', { x: 'f32', y: 'f32' });
const Marked = tag('Marked', { storage: 'sparse' });

const N = 100_000;
const CHANGED = N / 100;
const CHURN = 10;

/** splitmix32-ish: reproducible picks. */
function rng(seed) {
    let s = seed >>> 0;
    return (n) => {
        s = (s + 0x9e3779b9) >>> 0;
        let z = s;
        z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
        z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
        return ((z ^ (z >>> 16)) >>> 0) % n;
    };
}

const tessera = await init();
const world = tessera.createWorld({ checkpoints: 17 });
const live = [...world.spawnMany(N, Position({ x: 1, y: 2 }), Velocity({ x: 3, y: 4 }))];
for (let i = 0; i < N; i += 100) world.add(live[i], Marked);
const x = world.field(Position, 'x');
const everyone = world.query({ all: [Position, Velocity] });
const below = rng(7);
let sink = 0;

function tick() {
    // The read pass: every entity, every frame.
    for (const chunk of everyone) {
        const px = chunk.column(Position, 'x');
        const vx = chunk.column(Velocity, 'x');
        for (let i = 0; i < chunk.count; i++) sink += px[i] * vx[i];
    }
    // 1% moved.
    for (let k = 0; k < CHANGED; k++) {
        const e = live[below(live.length)];
        x.set(e, x.get(e) + 0.5);
    }
    // Churn: despawns and spawns, markers moved.
    for (let k = 0; k < CHURN; k++) {
        const at = below(live.length);
        world.despawn(live[at]);
        live[at] = world.spawn(Position({ x: k, y: 1 }), Velocity({ x: 1, y: k }));
        const m = live[below(live.length)];
        if (world.has(m, Marked)) world.remove(m, Marked);
        else world.add(m, Marked);
    }
}

/** The live list again after a rewind: the handles the world has. */
function relist() {
    live.length = 0;
    for (const e of everyone.entities()) live.push(e);
}

// Warm up: the first checkpoint copies the world (the shadow); timed on its own.
const first = performance.now();
world.checkpoint();
const firstMs = performance.now() - first;
for (let i = 0; i < 20; i++) {
    tick();
    world.checkpoint();
}

// A tick alone and a checkpoint alone, interleaved, medians.
const ticks = [];
const checkpoints = [];
for (let i = 0; i < 200; i++) {
    let t = performance.now();
    tick();
    ticks.push(performance.now() - t);
    t = performance.now();
    world.checkpoint();
    checkpoints.push(performance.now() - t);
}
const tickMs = median(ticks);
const checkpointMs = median(checkpoints);

// Rewinds by k, then the k frames simulated again (each with its checkpoint), so the ring is
// as deep again for the next round.
const rewinds = [];
for (const k of [1, 4, 8, 16]) {
    const back = [];
    const again = [];
    for (let round = 0; round < 30; round++) {
        const { newest } = world.checkpoints;
        let t = performance.now();
        world.rewind(newest - k);
        back.push(performance.now() - t);
        relist();
        t = performance.now();
        for (let i = 0; i < k; i++) {
            tick();
            world.checkpoint();
        }
        again.push(performance.now() - t);
    }
    rewinds.push({ k, rewind: median(back), resim: median(again) });
}

// The whole-world alternative: a snapshot per frame, a restore to go back.
const snaps = [];
let bytes;
for (let i = 0; i < 20; i++) {
    const t = performance.now();
    bytes = world.snapshot();
    snaps.push(performance.now() - t);
}
const restores = [];
for (let i = 0; i < 20; i++) {
    const t = performance.now();
    tessera.createWorld({ snapshot: bytes }).destroy();
    restores.push(performance.now() - t);
}
const snapshotMs = median(snaps);
const restoreMs = median(restores);
const stats = world.stats();
if (stats.entityCount !== N || sink === 0) throw new Error('rollback bench: the world lost entities');

const r8 = rewinds.find((r) => r.k === 8);
console.log(
    `tick ${tickMs.toFixed(3)} ms, checkpoint ${checkpointMs.toFixed(4)} ms (${((checkpointMs / tickMs) * 100).toFixed(1)}% of a tick), first ${firstMs.toFixed(2)} ms`,
);
for (const r of rewinds) console.log(`rewind ${r.k}: ${r.rewind.toFixed(4)} ms, + re-simulation ${r.resim.toFixed(3)} ms`);
console.log(
    `snapshot ${snapshotMs.toFixed(3)} ms, restore ${restoreMs.toFixed(3)} ms; ring ${stats.checkpointBytes} bytes, shadow ${stats.shadowBytes} bytes`,
);

if (!process.argv.includes('--no-write')) {
    const pct = (a, b) => `${((a / b) * 100).toFixed(1)}%`;
    const md = [
        '# Rollback cost (`npm run bench:rollback`)',
        '',
        envLine(),
        '',
        `The world: ${N.toLocaleString('en')} entities with Position {x, y: f32} and Velocity {x, y: f32}, a sparse marker on 1%. ` +
            `A tick: a read pass over every entity (a query over both columns), ${CHANGED.toLocaleString('en')} entities moved (1%, \`world.field\` writes), ` +
            `${CHURN} despawned and ${CHURN} spawned with values, ${CHURN} markers added or removed. A checkpoint per tick (ring of 17). ` +
            'Rewind k: `world.rewind(newest - k)`; re-simulation: the k ticks again, each with its checkpoint. ' +
            'The whole-world alternative: `world.snapshot()` per tick, `createWorld({ snapshot })` to go back. Medians (ticks and checkpoints: 200 interleaved; rewinds: 30 rounds each; snapshots: 20).',
        '',
        '| what | ms | against |',
        '|---|--:|---|',
        `| tick (the game's own work) | ${fmtNum(tickMs)} | |`,
        `| checkpoint | ${fmtNum(checkpointMs)} | ${pct(checkpointMs, tickMs)} of a tick (target: at most 10%) |`,
        `| first checkpoint (copies the world) | ${fmtNum(firstMs)} | once |`,
        ...rewinds.map((r) => `| rewind ${r.k} | ${fmtNum(r.rewind)} | ${pct(r.rewind, restoreMs)} of a restore |`),
        ...rewinds.map(
            (r) =>
                `| rewind ${r.k} + re-simulate ${r.k} | ${fmtNum(r.rewind + r.resim)} | ${pct(r.rewind + r.resim, restoreMs)} of a restore |`,
        ),
        `| snapshot (whole world) | ${fmtNum(snapshotMs)} | ${pct(snapshotMs, tickMs)} of a tick |`,
        `| restore (whole world) | ${fmtNum(restoreMs)} | |`,
        '',
        `Memory: the ring of 17 checkpoints holds ${stats.checkpointBytes.toLocaleString('en')} bytes (the states of what changed between them: ` +
            `${fmtNum(stats.checkpointBytes / 16 / (CHANGED + 3 * CHURN))} bytes per changed entity and checkpoint); the shadow ${stats.shadowBytes.toLocaleString('en')} bytes ` +
            `(${fmtNum(stats.shadowBytes / N)} per entity: the state at the newest checkpoint); a snapshot ${bytes.length.toLocaleString('en')} bytes.`,
        '',
        `Target (issue 21): rewinding 8 and re-simulating them at most 10% of one restore: ${pct(r8.rewind + r8.resim, restoreMs)} here, of which the rewind is ${pct(r8.rewind, restoreMs)} and the 8 ticks re-simulated the rest.`,
        '',
    ];
    writeFileSync(path.join(resultsDir, 'rollback.md'), md.join('\n'));
    writeFileSync(
        path.join(resultsDir, 'rollback.json'),
        JSON.stringify(
            {
                date: new Date().toISOString(),
                tickMs,
                checkpointMs,
                firstMs,
                rewinds,
                snapshotMs,
                restoreMs,
                ringBytes: stats.checkpointBytes,
                shadowBytes: stats.shadowBytes,
            },
            null,
            2,
        ) + '\n',
    );
    console.log('wrote bench/results/rollback.md');
}
