// Delta cost (replication): what one tick's delta costs when K of N entities changed, beside a
// full snapshot and a keyframe of the same world. The aim: a delta costs O(changed), not
// O(entities). Same world as snapshot.mjs: Position {x, y: f32} and Velocity {x, y: f32} on
// every entity, a sparse marker on 1%, ChildOf pairs on 1%. Each tick: world.set(e, Position)
// on K entities picked at random (untimed), world.tick() (timed apart: with no systems it is
// the pruning of change-tracking state), then timed: peer.encode() plus the copy a sender
// sends (bytes.slice()), and replica.applyDelta() on a replica kept in sync (it got a keyframe
// first; every tick it is acknowledged). Rows marked "no world.tick()" skip the tick, as a
// server that runs no systems would. At the end of each row the replica is checked against
// the source (entity count, every Position and Velocity, markers, parents); a mismatch throws.
//   node bench/js/delta.mjs [--quick] [--runs N] [--target-ms N] [--no-write]
// --quick: 3 runs x 50 ms per measurement (default 5 x 500 ms), and no 1M-entity rows.
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { component, init, tag } from '../../dist/index.js';
import { fmtNum, median } from './measure.js';
import { envLine, parseBenchArgs, resultsDir } from './node-env.mjs';
import { mulberry32 } from './shared.js';

const args = parseBenchArgs(process.argv.slice(2), import.meta.url);
if (args.check || args.worker) throw new Error('delta bench: --check and --worker mean nothing here');
const { runs, targetMs } = args;

const Position = component('Position', { x: 'f32', y: 'f32' });
const Velocity = component('Velocity', { x: 'f32', y: 'f32' });
const Marked = tag('Marked', { storage: 'sparse' });

/** (N, K) rows: K scaling at 100k, N scaling at K = 100. */
const ROWS = [
    { n: 10_000, k: 100, tick: true },
    { n: 100_000, k: 100, tick: true },
    { n: 100_000, k: 1_000, tick: true },
    { n: 100_000, k: 10_000, tick: true },
    { n: 100_000, k: 100, tick: false },
    ...(args.quick
        ? []
        : [
              { n: 1_000_000, k: 100, tick: true },
              { n: 1_000_000, k: 1_000, tick: true },
              { n: 1_000_000, k: 100, tick: false },
          ]),
];

/** Seeded choices: an integer in [0, n). */
function rng(seed) {
    const next = mulberry32(seed);
    return (n) => Math.floor(next() * n);
}

/**
 * Warm-up (one untimed run), then `runs` runs of about targetMs each (at least 3 calls). `step()`
 * does one call and returns its samples ({ name: ms or bytes }), timing what it times itself.
 * Returns per name: median (of the runs' medians), min and max of the runs' medians.
 */
function measure(step) {
    const run = () => {
        const samples = {};
        const end = performance.now() + targetMs;
        for (let calls = 0; calls < 3 || performance.now() < end; calls++) {
            for (const [k, v] of Object.entries(step())) (samples[k] ??= []).push(v);
        }
        return samples;
    };
    run();
    const medians = {};
    for (let r = 0; r < runs; r++) {
        for (const [k, v] of Object.entries(run())) (medians[k] ??= []).push(median(v));
    }
    const out = {};
    for (const [k, v] of Object.entries(medians)) out[k] = { median: median(v), min: Math.min(...v), max: Math.max(...v) };
    return out;
}

const loadAtStart = os.loadavg()[0];
const tessera = await init();

function buildWorld(n) {
    const world = tessera.createWorld();
    const ids = world.spawnMany(n, Position({ x: 1, y: 2 }), Velocity({ x: 3, y: 4 }));
    for (let i = 0; i < n; i += 100) {
        world.add(ids[i], Marked);
        world.setParent(ids[i + 1], ids[i]);
    }
    return { world, ids };
}

/** Throws unless the replica holds what the source holds for every handle in `ids`. */
function verify(source, replica, ids, label) {
    const fail = (what) => {
        throw new Error(`delta bench ${label}: the replica differs from the source: ${what}`);
    };
    const a = source.stats().entityCount,
        b = replica.stats().entityCount;
    if (a !== b) fail(`entity count ${b}, source ${a}`);
    for (let i = 0; i < ids.length; i++) {
        const e = ids[i];
        if (!replica.isAlive(e)) fail(`entity ${e} is not alive`);
        const p = source.get(e, Position),
            q = replica.get(e, Position);
        if (p.x !== q.x || p.y !== q.y) fail(`Position of ${e}: ${JSON.stringify(q)}, source ${JSON.stringify(p)}`);
        const v = source.get(e, Velocity),
            w = replica.get(e, Velocity);
        if (v.x !== w.x || v.y !== w.y) fail(`Velocity of ${e}: ${JSON.stringify(w)}, source ${JSON.stringify(v)}`);
        if (source.has(e, Marked) !== replica.has(e, Marked)) fail(`Marked on ${e}`);
        if (source.parentOf(e) !== replica.parentOf(e)) fail(`parent of ${e}`);
    }
}

const fullRows = []; // per N: snapshot and keyframe
const deltaRows = []; // per (N, K)
let built = null;
for (const { n, k, tick: ticking } of ROWS) {
    const t0 = performance.now();
    // A row without world.tick() gets a world that was never ticked (nothing pruned yet).
    if (built?.n !== n || !ticking) {
        built?.world.destroy();
        built = { n, ...buildWorld(n), full: fullRows.find((f) => f.n === n) };
    }
    if (!built.full) {
        const { world } = built;

        // The full snapshot: write (C writes, JS copies out) and restore (createWorld + destroy).
        let snap;
        const s = measure(() => {
            let t = performance.now();
            snap = world.snapshot();
            const write = performance.now() - t;
            t = performance.now();
            tessera.createWorld({ snapshot: snap }).destroy();
            return { write, restore: performance.now() - t };
        });
        // The keyframe (baseline 0): encode + the sender's copy, and apply into a fresh replica
        // (createWorld + applyDelta + destroy, as restore). Its own replicator, closed after.
        const keyRep = world.replicator();
        let key;
        const kf = measure(() => {
            let t = performance.now();
            const d = keyRep.encode(0);
            key = d.bytes.slice();
            const encode = performance.now() - t;
            if (!d.keyframe) throw new Error('delta bench: encode(0) was not a keyframe');
            t = performance.now();
            const fresh = tessera.createWorld();
            if (!fresh.applyDelta(key)) throw new Error('delta bench: keyframe not applied');
            fresh.destroy();
            return { encode, apply: performance.now() - t };
        });
        keyRep.close();
        built.full = {
            n,
            snapshotBytes: snap.length,
            write: s.write.median,
            restore: s.restore.median,
            keyframeBytes: key.length,
            keyEncode: kf.encode.median,
            keyApply: kf.apply.median,
        };
        fullRows.push(built.full);
        console.log(
            `${n} entities: snapshot ${snap.length} bytes, write ${fmtNum(s.write.median)} ms, restore ${fmtNum(s.restore.median)} ms; ` +
                `keyframe ${key.length} bytes, encode ${fmtNum(kf.encode.median)} ms, apply (fresh) ${fmtNum(kf.apply.median)} ms`,
        );
    }
    const { world, ids, full } = built;

    // Steady state: a replica that got the keyframe, then one delta per tick.
    const replicator = world.replicator();
    const peer = replicator.peer();
    const replica = tessera.createWorld();
    const first = peer.encode();
    if (!first.keyframe || !replica.applyDelta(first.bytes.slice())) throw new Error('delta bench: first keyframe failed');
    peer.ack(replica.replicaTick);

    const below = rng(n * 31 + k);
    const stamp = new Uint32Array(n); // tick an index was last picked: K distinct per tick
    const picked = new Uint32Array(k);
    let tick = 0;
    const d = measure(() => {
        tick++;
        for (let j = 0; j < k;) {
            const i = below(n);
            if (stamp[i] === tick) continue;
            stamp[i] = tick;
            picked[j] = i;
            world.set(ids[i], Position, { x: tick + j * 0.5, y: -tick - j });
            j++;
        }
        let t = performance.now();
        if (ticking) world.tick();
        const pruning = performance.now() - t;
        t = performance.now();
        const delta = peer.encode();
        const bytes = delta.bytes.slice();
        const encode = performance.now() - t;
        t = performance.now();
        const applied = replica.applyDelta(bytes);
        const apply = performance.now() - t;
        if (delta.keyframe || !applied) throw new Error(`delta bench: tick ${tick} was ${delta.keyframe ? 'a keyframe' : 'not applied'}`);
        peer.ack(replica.replicaTick);
        return { bytes: bytes.length, pruning, encode, apply, total: encode + apply };
    });

    // Correctness: every entity, after the last tick.
    const label = `N=${n} K=${k}${ticking ? '' : ' no world.tick()'}`;
    verify(world, replica, ids, label);
    const lastPicked = Array.from(picked, (i) => ids[i]);
    verify(world, replica, lastPicked, `${label} (last tick)`);
    replica.destroy();
    replicator.close();

    const row = {
        n,
        k,
        ticking,
        pruning: d.pruning.median,
        ticks: tick,
        bytes: d.bytes.median,
        encode: d.encode.median,
        apply: d.apply.median,
        total: d.total.median,
        totalMin: d.total.min,
        totalMax: d.total.max,
        bytesRatio: full.snapshotBytes / d.bytes.median,
        timeRatio: (full.write + full.restore) / d.total.median,
    };
    deltaRows.push(row);
    console.log(
        `${label}: ${row.bytes} bytes/tick (${(row.bytes / k).toFixed(1)} per change), tick ${fmtNum(row.pruning * 1e3)} µs, encode ${fmtNum(row.encode * 1e3)} µs, ` +
            `apply ${fmtNum(row.apply * 1e3)} µs, total ${fmtNum(row.total * 1e3)} µs (${fmtNum(row.totalMin * 1e3)}–${fmtNum(row.totalMax * 1e3)}); ` +
            `snapshot/delta: bytes ${fmtNum(row.bytesRatio)}x, time ${fmtNum(row.timeRatio)}x; ${tick} ticks, ${((performance.now() - t0) / 1000).toFixed(1)} s; replica checked`,
    );
}
built?.world.destroy();

const us = (ms) => fmtNum(ms * 1e3);
const command = `node bench/js/delta.mjs${args.quick ? ' --quick' : ''}`;
const find = (n, k, ticking = true) => deltaRows.find((r) => r.n === n && r.k === k && r.ticking === ticking);
const x = (a, b) => `${fmtNum(a / b)}×`;
const fullOf = (n) => fullRows.find((f) => f.n === n);

// What the rows show, in numbers (only the sentences whose rows ran).
const summary = [];
const [small, mid, big] = [find(10_000, 100), find(100_000, 100), find(1_000_000, 100)];
const far = big ?? mid;
if (small && far && far !== small) {
    summary.push(
        `At ${small.k} changes per tick, ${x(far.n, small.n)} the entities (${small.n.toLocaleString('en')} → ${far.n.toLocaleString('en')}) leave the delta at ` +
            `${far.bytes.toLocaleString('en')} bytes (${(far.bytes / far.k).toFixed(1)} per changed entity) and take encode + apply from ` +
            `${us(small.total)} to ${us(far.total)} µs (${x(far.total, small.total)}; world.tick() ${us(small.pruning)} → ${us(far.pruning)} µs), ` +
            `while the full snapshot grows ${x(fullOf(far.n).snapshotBytes, fullOf(small.n).snapshotBytes)} in bytes and ` +
            `${x(fullOf(far.n).write + fullOf(far.n).restore, fullOf(small.n).write + fullOf(small.n).restore)} in write + restore time.`,
    );
}
const many = find(100_000, 10_000);
if (mid && many) {
    summary.push(
        `At ${mid.n.toLocaleString('en')} entities, ${x(many.k, mid.k)} the changes (${mid.k} → ${many.k.toLocaleString('en')}) cost ` +
            `${x(many.bytes, mid.bytes)} the bytes and ${x(many.total, mid.total)} the encode + apply time: the delta scales with what changed. ` +
            `Against a snapshot, a ${mid.k}-change delta is ${fmtNum(mid.bytesRatio)}× smaller and ${fmtNum(mid.timeRatio)}× faster; ` +
            `at ${many.k.toLocaleString('en')} changes (10% of the world) it is still ${fmtNum(many.bytesRatio)}× smaller and ${fmtNum(many.timeRatio)}× faster.`,
    );
}
const [lazyMid, lazyBig] = [find(100_000, 100, false), find(1_000_000, 100, false)];
if (lazyMid) {
    const pairs = [
        [mid, lazyMid],
        [big, lazyBig],
    ].filter(([a, b]) => a && b);
    // Each encode prunes what its components' consumers have all seen, so a world that never
    // ticks should cost what a ticking one does; the prose says which it measured.
    const worst = Math.max(...pairs.map(([a, b]) => b.encode / a.encode));
    summary.push(
        'Without world.tick() (a world that runs no systems, so only the encodes prune the change-tracking lists): ' +
            pairs
                .map(([a, b]) => `${us(b.encode)} µs encode at ${b.n.toLocaleString('en')} entities (${us(a.encode)} µs with the tick)`)
                .join(', ') +
            ` for the same ${lazyMid.k} changes` +
            (worst < 1.5
                ? ': the same cost, O(changed).'
                : `: up to ${fmtNum(worst)}× slower, so something still grows with the entities.`),
    );
}
const kf = fullRows.find((f) => f.n === 100_000);
if (kf) {
    summary.push(
        `A keyframe of ${kf.n.toLocaleString('en')} entities is ${x(kf.keyframeBytes, kf.snapshotBytes)} the snapshot's bytes, ` +
            `${x(kf.keyEncode, kf.write)} its write time and ${x(kf.keyApply, kf.restore)} its restore time.`,
    );
}

const md = [
    `# Delta cost (\`${command}\`)`,
    '',
    `${envLine()} · load average ${loadAtStart.toFixed(2)} at the start`,
    '',
    'Each world: Position {x, y: f32} and Velocity {x, y: f32} on every entity, a sparse marker on 1%, ChildOf pairs on 1% ' +
        '(the world of `snapshot.mjs`). Each tick, K entities picked at random get `world.set(e, Position, …)` (untimed), then ' +
        '`world.tick()` (no systems: it prunes the change-tracking lists; timed apart). Encode: `peer.encode()` (default replicator, ' +
        'history 64) plus `bytes.slice()`, the copy a sender sends. Apply: `replica.applyDelta(bytes)` on a replica that got a ' +
        'keyframe first and is acknowledged every tick. Rows marked "no tick" skip `world.tick()` on a fresh world. Snapshot write: ' +
        '`world.snapshot()`; restore: `createWorld({ snapshot })` + `destroy()`. Keyframe: `replicator.encode(0)` + copy; apply ' +
        'into a fresh `createWorld()` + `destroy()`. Per-call times: one warm-up run, then ' +
        `${runs} runs of ${targetMs} ms; the median of the runs' medians, and their min–max. ` +
        "After the timed ticks the replica is checked against the source (entity count; every entity's Position, Velocity, " +
        'marker and parent); the run fails if they differ.',
    '',
    summary.join(' '),
    '',
    '## Per tick: delta vs full snapshot',
    '',
    '| entities | changed per tick | delta bytes | bytes per change | world.tick() µs | encode µs | apply µs | encode + apply µs (min–max) | snapshot bytes | snapshot write + restore µs | snapshot / delta bytes | snapshot / delta time |',
    '|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|',
    ...deltaRows.map((r) => {
        const f = fullRows.find((y) => y.n === r.n);
        return (
            `| ${r.n.toLocaleString('en')} | ${r.k.toLocaleString('en')}${r.ticking ? '' : ' (no tick)'} | ${r.bytes.toLocaleString('en')} | ${(r.bytes / r.k).toFixed(1)} | ` +
            `${r.ticking ? us(r.pruning) : '—'} | ${us(r.encode)} | ${us(r.apply)} | ${us(r.total)} (${us(r.totalMin)}–${us(r.totalMax)}) | ${f.snapshotBytes.toLocaleString('en')} | ` +
            `${us(f.write + f.restore)} | ${fmtNum(r.bytesRatio)}× | ${fmtNum(r.timeRatio)}× |`
        );
    }),
    '',
    '## Whole state: snapshot vs keyframe',
    '',
    '| entities | snapshot bytes | write ms | restore ms | keyframe bytes | keyframe encode ms | keyframe apply (fresh replica) ms |',
    '|--:|--:|--:|--:|--:|--:|--:|',
    ...fullRows.map(
        (f) =>
            `| ${f.n.toLocaleString('en')} | ${f.snapshotBytes.toLocaleString('en')} | ${fmtNum(f.write)} | ${fmtNum(f.restore)} | ` +
            `${f.keyframeBytes.toLocaleString('en')} | ${fmtNum(f.keyEncode)} | ${fmtNum(f.keyApply)} |`,
    ),
    '',
];
console.log('\n' + md.join('\n'));
if (args.write) {
    writeFileSync(path.join(resultsDir, 'delta.md'), md.join('\n'));
    console.log('wrote bench/results/delta.md');
}
