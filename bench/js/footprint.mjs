// Memory per entity and bundle size, tessera beside the peers (issue 6 asks for both).
//
//   npm run build && node bench/js/footprint.mjs
//
// Memory: each contender sets up the particles_100k case (100,000 entities of Position,
// Velocity, Lifetime and Color: 24 bytes of fields) in its own Node process; the bytes it holds
// afterwards (V8 heap + array buffers + wasm memory, after a full gc) minus the bytes before,
// per entity. tessera also reports what its world holds from its allocator (world.stats()).
// Bundle: `import * as lib from '<package>'` built by the repository's Vite (minified), JS and
// wasm bytes, raw and gzipped. Writes bench/results/footprint.md and footprint.json.
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';

const run = promisify(execFile);
const repo = fileURLToPath(new URL('../..', import.meta.url));
const ENTITIES = 100_000;
const FIELD_BYTES = 24; // Position {x,y} f32, Velocity {x,y} f32, Lifetime f32, Color u32

if (process.argv[2] === '--measure') {
    // Child: one contender, a clean heap.
    const { contenders } = await import('./contenders/index.js');
    const contender = contenders.find((c) => c.name === process.argv[3]);
    const held = () => {
        globalThis.gc();
        globalThis.gc();
        const usage = process.memoryUsage();
        return usage.heapUsed + usage.arrayBuffers;
    };
    // Load the library (and tessera's module) before the baseline, so code is not counted.
    const warm = await contender.cases.particles_10k();
    warm.dispose?.();
    const before = held();
    const instance = await contender.cases.particles_100k();
    const after = held();
    const stats = contender.name === 'tessera' && instance.world ? instance.world.stats() : undefined;
    process.stdout.write(JSON.stringify({ bytes: after - before, allocated: stats?.bytesAllocated ?? null }));
    process.exit(0);
}

const { contenders } = await import('./contenders/index.js');
const memory = [];
for (const contender of contenders) {
    if (!contender.cases.particles_100k) continue;
    const { stdout } = await run(process.execPath, ['--expose-gc', fileURLToPath(import.meta.url), '--measure', contender.name], {
        cwd: repo,
        maxBuffer: 1 << 20,
    });
    const { bytes, allocated } = JSON.parse(stdout);
    // A wasm memory grows in pages and never shrinks: what the process holds says little about
    // tessera (its 256 MiB initial memory may hold all of it); what its world allocated does.
    const perEntity = (allocated ?? bytes) / ENTITIES;
    memory.push({ contender: contender.name, bytesPerEntity: perEntity, heldPerEntity: bytes / ENTITIES });
    console.log(`${contender.name.padEnd(9)} ${perEntity.toFixed(1)} bytes per entity`);
}

const packages = [
    { name: 'tessera', entry: path.join(repo, 'dist/index.js') },
    ...['bitecs', 'piecs', 'koota', 'miniplex'].map((name) => ({ name, entry: name })),
];
const bundles = [];
// Inside the repository, so that bare imports resolve from its node_modules (.cache/ is ignored).
await mkdir(path.join(repo, '.cache'), { recursive: true });
const temp = await mkdtemp(path.join(repo, '.cache', 'footprint-'));
try {
    for (const { name, entry } of packages) {
        const app = path.join(temp, name);
        await mkdir(app, { recursive: true });
        await writeFile(path.join(app, 'index.html'), '<!doctype html><script type="module" src="./main.js"></script>\n');
        await writeFile(path.join(app, 'main.js'), `import * as lib from ${JSON.stringify(entry)};\nglobalThis.lib = lib;\n`);
        await run(process.execPath, [path.join(repo, 'node_modules/vite/bin/vite.js'), 'build', app, '--logLevel', 'error'], {
            cwd: repo,
        });
        const assets = path.join(app, 'dist', 'assets');
        const sizes = { js: 0, jsGzip: 0, wasm: 0, wasmGzip: 0 };
        for (const file of await readdir(assets)) {
            const bytes = await readFile(path.join(assets, file));
            const kind = file.endsWith('.wasm') ? 'wasm' : file.endsWith('.js') ? 'js' : undefined;
            if (!kind) continue;
            sizes[kind] += bytes.length;
            sizes[`${kind}Gzip`] += gzipSync(bytes, { level: 9 }).length;
        }
        bundles.push({ package: name, ...sizes });
        console.log(`${name.padEnd(9)} js ${sizes.js} (${sizes.jsGzip} gz), wasm ${sizes.wasm} (${sizes.wasmGzip} gz)`);
    }
} finally {
    await rm(temp, { recursive: true, force: true });
}

const kb = (bytes) => (bytes ? `${(bytes / 1000).toFixed(1)} kB` : '—');
const lines = [
    '# Memory per entity and bundle size (`node bench/js/footprint.mjs`)',
    '',
    `${new Date().toISOString().slice(0, 10)}, Node ${process.version}. Memory: the particles_100k case's setup (${ENTITIES.toLocaleString('en-US')} entities;`,
    `${FIELD_BYTES} bytes of fields each) in a fresh process per contender: V8 heap + array buffers (wasm memory`,
    'included) held after a full gc, minus before, per entity. For tessera, what its world allocated',
    '(`world.stats().bytesAllocated`: chunks, trackers, entity table, archetypes): its wasm memory grows in',
    '64 KiB pages from a 256 MiB start (pages nobody wrote are not backed) and never shrinks, so the process-level figure mostly measures that.',
    '',
    '| contender | bytes per entity | fields (raw) | ratio to raw |',
    '|---|--:|--:|--:|',
    ...memory.map(
        (m) => `| ${m.contender} | ${m.bytesPerEntity.toFixed(1)} | ${FIELD_BYTES} | ${(m.bytesPerEntity / FIELD_BYTES).toFixed(2)} |`,
    ),
    '',
    'Bundle: `import * as lib from <package>` built by Vite (minified); tessera also ships its `.wasm`.',
    '',
    '| package | JS | JS gzipped | wasm | wasm gzipped | total gzipped |',
    '|---|--:|--:|--:|--:|--:|',
    ...bundles.map(
        (b) => `| ${b.package} | ${kb(b.js)} | ${kb(b.jsGzip)} | ${kb(b.wasm)} | ${kb(b.wasmGzip)} | ${kb(b.jsGzip + b.wasmGzip)} |`,
    ),
    '',
];
await writeFile(path.join(repo, 'bench/results/footprint.md'), lines.join('\n'));
await writeFile(path.join(repo, 'bench/results/footprint.json'), JSON.stringify({ entities: ENTITIES, memory, bundles }, null, 2) + '\n');
console.log('wrote bench/results/footprint.md and footprint.json');
