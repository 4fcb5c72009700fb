// Measures the particle demo in headless Chromium: for 10k, 100k and 1M particles, with JS
// systems and with wasm kernels, the simulation and render time per tick, and the frame rate,
// with the mirror off (mirror=0: the simulation alone); then, with the mirror on, what each
// tick's delta weighs and costs. Writes demo/results.md and demo/results.json.
//
//   npm run build && node demo/measure.mjs [--frames 120] [--counts 10000,100000,1000000]
//                                          [--mirror-counts 10000,20000,50000]
//
// Headless Chromium paces requestAnimationFrame at 60 Hz, so fps tops out at 60: the sim and
// render times say how much room is left.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { launchChromium, watchPage } from '../web/chromium.mjs';
import { serve } from '../web/serve.mjs';

const { values } = parseArgs({
    options: {
        frames: { type: 'string', default: '120' },
        counts: { type: 'string', default: '10000,100000,1000000' },
        'mirror-counts': { type: 'string', default: '10000,20000,50000' },
        out: { type: 'string', default: 'demo/results' },
    },
});
const FRAMES = Number(values.frames);
const COUNTS = values.counts.split(',').map(Number);
const MIRROR_COUNTS = values['mirror-counts'].split(',').filter(Boolean).map(Number);
const MODES = ['js', 'wasm'];
const repo = fileURLToPath(new URL('..', import.meta.url));

const median = (list) => [...list].sort((a, b) => a - b)[list.length >> 1];

const temp = await mkdtemp(path.join(tmpdir(), 'tessera-demo-measure-'));
const { server, url } = await serve(repo, 0);
const context = await launchChromium(temp);
const rows = [];
const mirrorRows = [];
let userAgent = '';

/**
 * Opens the demo with `query`, warms up, and returns the stats of FRAMES frames in a row.
 * @param {string} query
 */
async function sampleFrames(query) {
    const page = await context.newPage();
    await page.setViewportSize({ width: 1280, height: 720 });
    const watch = watchPage(page);
    await page.goto(new URL(`demo/?${query}`, url).href);
    await Promise.race([page.waitForFunction(() => window.demo !== undefined, undefined, { timeout: 60_000 }), watch.failed]);
    await Promise.race([page.evaluate(() => window.demo.ready), watch.failed]);
    userAgent ||= await page.evaluate(() => navigator.userAgent);
    // Warm up (JIT, memory growth), then sample every frame's stats in the page.
    const samples = await Promise.race([
        watch.failed,
        page.evaluate(
            ({ warmup, frames }) =>
                new Promise((resolve) => {
                    const seen = [];
                    let last = -1;
                    const start = performance.now();
                    const poll = () => {
                        const s = window.demo.stats();
                        if (s.frame !== last) {
                            last = s.frame;
                            if (s.frame > warmup) seen.push({ ...s, at: performance.now() - start });
                        }
                        if (seen.length >= frames) resolve(seen);
                        else requestAnimationFrame(poll);
                    };
                    poll();
                }),
            { warmup: 30, frames: FRAMES },
        ),
    ]);
    if (watch.errors.length) throw new Error(`the demo logged errors:\n${watch.errors.join('\n')}`);
    await page.close();
    const elapsed = (samples.at(-1).at - samples[0].at) / 1000;
    const frameSpan = samples.at(-1).frame - samples[0].frame;
    return { samples, fps: frameSpan / elapsed };
}

try {
    for (const count of COUNTS) {
        for (const mode of MODES) {
            const { samples, fps } = await sampleFrames(`count=${count}&mode=${mode}&mirror=0`);
            const row = {
                count,
                mode,
                entities: median(samples.map((s) => s.entities)),
                simMs: median(samples.map((s) => s.simMs)),
                renderMs: median(samples.map((s) => s.renderMs)),
                frameMs: median(samples.map((s) => s.frameMs)),
                fps,
                renderPath: samples[0].renderPath,
                memoryBytes: samples.at(-1).memoryBytes,
            };
            rows.push(row);
            console.log(
                `${count.toLocaleString().padStart(9)} ${mode.padEnd(4)}  sim ${row.simMs.toFixed(2)} ms  render ${row.renderMs.toFixed(2)} ms  ${row.fps.toFixed(1)} fps`,
            );
        }
    }
    for (const count of MIRROR_COUNTS) {
        const { samples, fps } = await sampleFrames(`count=${count}&mode=wasm&mirror=1`);
        // Frames whose tick was sent (the worker may make the page skip one now and then).
        const sent = samples.filter((s) => s.mirror.sourceFrame === s.frame);
        const row = {
            count,
            deltaBytes: median(sent.map((s) => s.mirror.deltaBytes)),
            snapshotBytes: samples.at(-1).mirror.snapshotBytes,
            encodeMs: median(sent.map((s) => s.mirror.encodeMs)),
            applyMs: median(samples.map((s) => s.mirror.applyMs)),
            simMs: median(samples.map((s) => s.simMs)),
            frameMs: median(samples.map((s) => s.frameMs)),
            fps,
            keyframes: samples.at(-1).mirror.keyframes,
            skipped: samples.at(-1).mirror.skipped - samples[0].mirror.skipped,
        };
        mirrorRows.push(row);
        console.log(
            `${count.toLocaleString().padStart(9)} mirror  delta ${row.deltaBytes} B  encode ${row.encodeMs.toFixed(2)} ms  apply ${row.applyMs.toFixed(2)} ms  ${row.fps.toFixed(1)} fps`,
        );
    }
} finally {
    await context.close();
    server.close();
    await rm(temp, { recursive: true, force: true });
}

const chromiumVersion = /Chrome\/([\d.]+)/.exec(userAgent)?.[1] ?? 'unknown';
const lines = [
    '# Particle demo in headless Chromium',
    '',
    `Measured by \`node demo/measure.mjs\` (${new Date().toISOString().slice(0, 10)}): ${FRAMES} frames per row after 30`,
    `frames of warm-up, medians per tick. Headless Chromium ${chromiumVersion} on this 2-core VM, software`,
    'compositing (`--disable-gpu`); requestAnimationFrame caps fps at 60.',
    '',
    '| particles | systems | sim ms | render ms | sim + render ms | fps | wasm memory |',
    '|--:|---|--:|--:|--:|--:|--:|',
    ...rows.map(
        (r) =>
            `| ${r.count.toLocaleString('en-US')} | ${r.mode === 'js' ? 'JS over column views' : 'wasm SIMD kernels'} | ${r.simMs.toFixed(2)} | ${r.renderMs.toFixed(2)} | ${(r.simMs + r.renderMs).toFixed(2)} | ${r.fps.toFixed(1)} | ${(r.memoryBytes / 2 ** 20).toFixed(0)} MiB |`,
    ),
    '',
    `Render path: ${rows[0]?.renderPath ?? '?'}. The mirror is off in these rows (\`mirror=0\`).`,
    '',
    '## The mirror: one delta per tick to a replica in a worker',
    '',
    'wasm kernels, the mirror on. *delta* and *encode* are medians over the frames whose tick was',
    "sent; *encode* is `peer.encode()` and the copy of its bytes, on the page's thread; *apply* is",
    "`applyDelta` in the worker; *frame* is all of the page's work per frame, the encode included.",
    '',
    '| particles | delta bytes | snapshot bytes | delta / snapshot | encode ms | apply ms (worker) | frame ms | fps | ticks skipped |',
    '|--:|--:|--:|--:|--:|--:|--:|--:|--:|',
    ...mirrorRows.map(
        (r) =>
            `| ${r.count.toLocaleString('en-US')} | ${r.deltaBytes.toLocaleString('en-US')} | ${r.snapshotBytes.toLocaleString('en-US')} | ${((100 * r.deltaBytes) / r.snapshotBytes).toFixed(0)}% | ${r.encodeMs.toFixed(2)} | ${r.applyMs.toFixed(2)} | ${r.frameMs.toFixed(2)} | ${r.fps.toFixed(1)} | ${r.skipped} |`,
    ),
    '',
];
await writeFile(`${values.out}.md`, lines.join('\n'));
await writeFile(`${values.out}.json`, JSON.stringify({ frames: FRAMES, chromium: chromiumVersion, rows, mirrorRows }, null, 2) + '\n');
console.log(`wrote ${values.out}.md and ${values.out}.json`);
