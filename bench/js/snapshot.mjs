// Snapshot cost (issue 8): bytes, write time and restore time of a whole world, and the time of
// world.hash() (XXH64 of the same bytes, never written), at 10k, 100k and 1M entities, through
// the public API (world.snapshot(), createWorld({ snapshot }), world.hash()). Each
// world: Position {x, y: f32} and Velocity {x, y: f32} on every entity, a sparse marker on 1%,
// and ChildOf pairs on 1%. Deltas (what changed since a tick) are not built yet; when they
// are, their rows go beside these, as BENCHMARKS.md asks.
//   node bench/js/snapshot.mjs [--no-write]
import { writeFileSync } from 'node:fs';
import path from 'node:path';

import { component, init, tag } from '../../dist/index.js';
import { fmtNum, median } from './measure.js';
import { envLine, resultsDir } from './node-env.mjs';

const Position = component('Position', { x: 'f32', y: 'f32' });
const Velocity = component('Velocity', { x: 'f32', y: 'f32' });
const Marked = tag('Marked', { storage: 'sparse' });

/** The median ms per call of fn, called for about `ms` (at least 5 times). */
function time(fn, ms = 500) {
    const samples = [];
    const end = performance.now() + ms;
    while (samples.length < 5 || performance.now() < end) {
        const t = performance.now();
        fn();
        samples.push(performance.now() - t);
    }
    return median(samples);
}

const tessera = await init();
const rows = [];
for (const n of [10_000, 100_000, 1_000_000]) {
    const world = tessera.createWorld();
    const ids = world.spawnMany(n, Position({ x: 1, y: 2 }), Velocity({ x: 3, y: 4 }));
    for (let i = 0; i < n; i += 100) {
        world.add(ids[i], Marked);
        world.setParent(ids[i + 1], ids[i]);
    }
    let bytes;
    const write = time(() => {
        bytes = world.snapshot();
    });
    const restore = time(() => tessera.createWorld({ snapshot: bytes }).destroy());
    let hashed = 0n;
    const hash = time(() => {
        hashed = world.hash();
    });
    const copy = tessera.createWorld({ snapshot: bytes });
    // Checked: the copy has every entity, a value, a marker and a parent.
    if (copy.stats().entityCount !== n || copy.get(ids[n - 1], Velocity).y !== 4) throw new Error('snapshot bench: bad copy');
    if (!copy.has(ids[0], Marked) || copy.parentOf(ids[1]) !== ids[0]) throw new Error('snapshot bench: bad copy');
    if (copy.hash() !== hashed) throw new Error('snapshot bench: the copy hashes otherwise');
    copy.destroy();
    world.destroy();
    rows.push({ n, bytes: bytes.length, perEntity: bytes.length / n, write, restore, hash });
    console.log(
        `${n}: ${bytes.length} bytes (${(bytes.length / n).toFixed(2)} per entity), write ${write.toFixed(3)} ms, restore ${restore.toFixed(3)} ms, hash ${hash.toFixed(3)} ms`,
    );
}

if (!process.argv.includes('--no-write')) {
    const md = [
        '# Snapshot cost (`node bench/js/snapshot.mjs`)',
        '',
        envLine(),
        '',
        'Each world: Position {x, y: f32} and Velocity {x, y: f32} on every entity, a sparse marker on 1%, ChildOf pairs on 1%. ' +
            'Write: `world.snapshot()` (the C core writes the bytes, JS copies them out). Restore: `createWorld({ snapshot })` and ' +
            '`destroy()` of the new world. Hash: `world.hash()`, XXH64 of the snapshot body streamed in the core (nothing written or copied). Medians of at least 5 calls over 0.5 s. Raw field data is 16 bytes per entity.',
        '',
        '| entities | bytes | bytes per entity | write ms | restore ms | hash ms | write ns per entity | restore ns per entity | hash ns per entity |',
        '|--:|--:|--:|--:|--:|--:|--:|--:|--:|',
        ...rows.map(
            (r) =>
                `| ${r.n.toLocaleString('en')} | ${r.bytes.toLocaleString('en')} | ${r.perEntity.toFixed(2)} | ${fmtNum(r.write)} | ${fmtNum(r.restore)} | ${fmtNum(r.hash)} | ${fmtNum((r.write * 1e6) / r.n)} | ${fmtNum((r.restore * 1e6) / r.n)} | ${fmtNum((r.hash * 1e6) / r.n)} |`,
        ),
        '',
    ];
    writeFileSync(path.join(resultsDir, 'snapshot.md'), md.join('\n'));
    writeFileSync(path.join(resultsDir, 'snapshot.json'), JSON.stringify({ date: new Date().toISOString(), rows }, null, 2) + '\n');
    console.log('wrote bench/results/snapshot.md');
}
