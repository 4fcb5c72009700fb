// The particle demo (demo/) in headless Chromium, served from the repository like `npm start`
// serves it: it draws, it moves, its stats say what it runs, its controls work, its mirror (a
// replica world in a worker, fed by deltas only) equals the world, and nothing is logged as an
// error or warning. A screenshot is kept in test-results/demo.png (not committed).
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { describe, expect, test } from 'vitest';
// @ts-expect-error: a plain ES module without type declarations
import { watchPage } from '../../web/chromium.mjs';
import { repo, servedChromium } from './served.js';

/** What web/chromium.mjs's watchPage returns. */
interface PageWatch {
    readonly errors: string[];
    readonly failed: Promise<never>;
}

const artifacts = path.join(repo, 'test-results');

/** What `window.demo.stats().mirror` holds (demo/mirror.js). */
interface MirrorStats {
    enabled: boolean;
    wanted: boolean;
    held: boolean;
    available: boolean;
    deltaBytes: number;
    deltaBytesAvg: number;
    snapshotBytes: number;
    deltas: number;
    keyframes: number;
    skipped: number;
    sourceTick: number;
    sourceFrame: number;
    replicaTick: number;
    replicaEntities: number;
    acked: number;
    inFlight: number;
    encodeMs: number;
    applyMs: number;
    renderMs: number;
}

/** What `window.demo.mirrorSample(n)` resolves to: x, y pairs of the same handles. */
interface MirrorSample {
    tick: number;
    replicaTick: number;
    handles: number[];
    source: number[];
    replica: number[];
}

/** What `window.demo.stats()` returns (demo/README.md). */
interface DemoStats {
    fps: number;
    simMs: number;
    renderMs: number;
    frameMs: number;
    entities: number;
    targetCount: number;
    emitRate: number;
    mode: 'js' | 'wasm';
    paused: boolean;
    archetypes: number;
    chunks: number;
    memoryBytes: number;
    changedThisTick: number;
    frame: number;
    renderPath: string;
    mirror: MirrorStats;
}

interface DemoHandle {
    ready: Promise<void>;
    configure(options: Partial<{ count: number; emitRate: number; mode: 'js' | 'wasm'; paused: boolean; mirror: boolean }>): void;
    step(): void;
    stats(): DemoStats;
    mirrorSample(count: number, timeoutMs?: number): Promise<MirrorSample>;
}

declare global {
    interface Window {
        demo?: DemoHandle;
    }
}

const site = servedChromium('demo');

/** Opens the demo with URL parameters and waits until it is ready; fails at the first error. */
async function open(query: string): Promise<{ page: Page; watch: PageWatch }> {
    const page = await site.context.newPage();
    await page.setViewportSize({ width: 1280, height: 720 });
    const watch = watchPage(page, { warnings: true });
    await page.goto(new URL(`demo/?${query}`, site.baseUrl).href);
    const ready = page
        .waitForFunction(() => window.demo !== undefined, undefined, { timeout: 20_000 })
        .then(() => page.evaluate(() => window.demo!.ready));
    await Promise.race([ready, watch.failed]);
    return { page, watch };
}

const stats = (page: Page) => page.evaluate(() => window.demo!.stats());

/** Waits until the demo has drawn `frames` more frames (or fails at the first page error). */
async function frames(page: Page, watch: PageWatch, count: number): Promise<DemoStats> {
    const start = (await stats(page)).frame;
    const done = page.waitForFunction((target) => window.demo!.stats().frame >= target, start + count, {
        timeout: 30_000,
        polling: 50,
    });
    await Promise.race([done, watch.failed]);
    return stats(page);
}

/** Waits until `predicate(stats)` holds in the page (or fails at the first page error). */
async function until(page: Page, watch: PageWatch, predicate: string): Promise<DemoStats> {
    const done = page.waitForFunction((body) => new Function('s', `return ${body}`)(window.demo!.stats()) as boolean, predicate, {
        timeout: 30_000,
        polling: 50,
    });
    await Promise.race([done, watch.failed]);
    return stats(page);
}

/**
 * The mirror's sample (source and replica at one tick), given as long as the other waits here:
 * the page's own 10 s default is for people, and a loaded test machine can take longer.
 */
const sampleMirror = (page: Page) => page.evaluate(() => window.demo!.mirrorSample(64, 30_000));

/**
 * An element's text once `accept` takes it, read every 50 ms for as long as the other waits
 * here (a fixed pause before one read failed on a loaded machine); the last text read if never.
 */
async function readout(page: Page, selector: string, accept: (text: string) => boolean): Promise<string> {
    const deadline = Date.now() + 30_000;
    for (;;) {
        const text = await page.$eval(selector, (element) => element.textContent ?? '');
        if (accept(text) || Date.now() > deadline) return text;
        await page.waitForTimeout(50);
    }
}

/** A byte count as the page shows it ("812 B", "469.6 KiB", "31.5 MiB"). */
function parseBytes(text: string): number {
    const match = /^([\d,.]+) (B|KiB|MiB)$/.exec(text.trim());
    if (!match) throw new Error(`not a byte count: ${JSON.stringify(text)}`);
    const scale = { B: 1, KiB: 1024, MiB: 1048576 }[match[2] as 'B' | 'KiB' | 'MiB'];
    return Number(match[1]!.replace(/,/g, '')) * scale;
}

/** A canvas (the first: the world) as pixels: how many are lit, and a hash to tell two frames apart. */
async function canvasPixels(page: Page, selector = 'canvas'): Promise<{ lit: number; total: number; hash: number }> {
    return page.evaluate((selector) => {
        const canvas = document.querySelector<HTMLCanvasElement>(selector)!;
        const copy = document.createElement('canvas');
        copy.width = canvas.width;
        copy.height = canvas.height;
        const context = copy.getContext('2d')!;
        context.drawImage(canvas, 0, 0);
        const data = context.getImageData(0, 0, copy.width, copy.height).data;
        let lit = 0;
        let hash = 2166136261;
        for (let i = 0; i < data.length; i += 4) {
            if (data[i]! + data[i + 1]! + data[i + 2]! > 60) lit++;
            hash = Math.imul(hash ^ (data[i]! | (data[i + 1]! << 8) | (data[i + 2]! << 16)), 16777619);
        }
        return { lit, total: data.length / 4, hash };
    }, selector);
}

describe('the particle demo', () => {
    test('draws particles that move, with stats for the requested count, and no errors', async () => {
        const { page, watch } = await open('count=20000&mode=wasm');
        try {
            const first = await frames(page, watch, 30);
            const a = await canvasPixels(page);
            await frames(page, watch, 10);
            const b = await canvasPixels(page);
            expect(a.lit).toBeGreaterThan(a.total * 0.01); // not blank
            expect(b.hash).not.toBe(a.hash); // it moves
            expect(first).toMatchObject({ mode: 'wasm', targetCount: 20_000, paused: false });
            // Steady population: expired particles respawn each tick.
            expect(first.entities).toBeGreaterThan(20_000 * 0.95);
            expect(first.entities).toBeLessThan(20_000 * 1.05);
            expect(first.fps).toBeGreaterThan(0);
            expect(first.simMs).toBeGreaterThan(0);
            expect(first.renderMs).toBeGreaterThan(0);
            expect(first.archetypes).toBeGreaterThan(0);
            expect(first.chunks).toBeGreaterThan(0);
            expect(first.memoryBytes).toBeGreaterThan(0);
            expect(first.changedThisTick).toBeGreaterThanOrEqual(0);
            expect(first.renderPath.length).toBeGreaterThan(0);
            // The page shows the same numbers.
            const shown = await page.$eval('[data-stat="entities"]', (element) => element.textContent ?? '');
            expect(Number(shown.replace(/[^0-9]/g, ''))).toBeGreaterThan(0);
            await mkdir(artifacts, { recursive: true });
            await page.screenshot({ path: path.join(artifacts, 'demo.png') });
            expect(watch.errors).toEqual([]);
        } finally {
            await page.close();
        }
    });

    test('switching between JS systems and wasm kernels keeps it running', async () => {
        const { page, watch } = await open('count=20000&mode=wasm');
        try {
            await frames(page, watch, 5);
            await page.evaluate(() => window.demo!.configure({ mode: 'js' }));
            const js = await frames(page, watch, 20);
            expect(js.mode).toBe('js');
            const a = await canvasPixels(page);
            await page.evaluate(() => window.demo!.configure({ mode: 'wasm' }));
            const wasm = await frames(page, watch, 20);
            expect(wasm.mode).toBe('wasm');
            const b = await canvasPixels(page);
            expect(b.lit).toBeGreaterThan(b.total * 0.01);
            expect(b.hash).not.toBe(a.hash);
            expect(wasm.entities).toBeGreaterThan(20_000 * 0.95);
            // The control in the page switches too.
            await page.selectOption('#mode', 'js');
            const toggled = await frames(page, watch, 5);
            expect(toggled.mode).toBe('js');
            expect(watch.errors).toEqual([]);
        } finally {
            await page.close();
        }
    });

    test('the particle count follows the control, up and down', async () => {
        const { page, watch } = await open('count=10000');
        try {
            await page.evaluate(() => window.demo!.configure({ count: 100_000 }));
            const up = await frames(page, watch, 10);
            expect(up.targetCount).toBe(100_000);
            expect(up.entities).toBeGreaterThan(100_000 * 0.95);
            await page.selectOption('#count', '1000'); // the control in the page
            const down = await frames(page, watch, 10);
            expect(down.targetCount).toBe(1_000);
            expect(down.entities).toBeGreaterThan(1_000 * 0.9);
            expect(down.entities).toBeLessThan(1_000 * 1.2);
            expect(watch.errors).toEqual([]);
        } finally {
            await page.close();
        }
    });

    test('pause holds the frame; step advances exactly one tick', async () => {
        const { page, watch } = await open('count=5000&paused=1');
        try {
            const held = await stats(page);
            expect(held.paused).toBe(true);
            await page.waitForTimeout(300);
            expect((await stats(page)).frame).toBe(held.frame);
            const before = await canvasPixels(page);
            await page.evaluate(() => window.demo!.step());
            const stepped = await stats(page);
            expect(stepped.frame).toBe(held.frame + 1);
            expect((await canvasPixels(page)).hash).not.toBe(before.hash);
            await page.click('#pause'); // the button resumes
            const running = await frames(page, watch, 5);
            expect(running.paused).toBe(false);
            expect(watch.errors).toEqual([]);
        } finally {
            await page.close();
        }
    });

    test('the keys work after a click on a button (not twice), after a choice in a list, and the page shows them', async () => {
        const { page, watch } = await open('count=5000&mode=wasm');
        try {
            await frames(page, watch, 3);
            await page.click('#step'); // pauses and steps; the button keeps the focus
            const held = await stats(page);
            expect(held.paused).toBe(true);
            expect(await page.evaluate(() => document.activeElement?.id)).toBe('step');
            await page.keyboard.press('ArrowRight');
            expect((await stats(page)).frame).toBe(held.frame + 1);
            await page.keyboard.press('.');
            expect((await stats(page)).frame).toBe(held.frame + 2);
            await page.keyboard.press('m');
            expect((await stats(page)).mode).toBe('js');
            await page.keyboard.press('Space');
            expect((await stats(page)).paused).toBe(false);
            // With the pause button focused, Space toggles once (not the key and the button's own press).
            await page.click('#pause');
            expect((await stats(page)).paused).toBe(true);
            await page.keyboard.press('Space');
            await page.waitForTimeout(100);
            expect((await stats(page)).paused).toBe(false);
            // A list chosen with the mouse gives the keys back; one with the focus keeps them.
            await page.focus('#emit');
            await page.keyboard.press('m');
            expect((await stats(page)).mode).toBe('js');
            await page.dispatchEvent('#emit', 'pointerdown');
            await page.selectOption('#emit', '30');
            expect(await page.evaluate(() => document.activeElement?.id ?? '')).not.toBe('emit');
            await page.keyboard.press('m');
            expect((await stats(page)).mode).toBe('wasm');
            const shortcuts = await page.$eval('#shortcuts', (element) => (element instanceof HTMLElement ? element.innerText : ''));
            for (const key of ['Space', '→', 'm']) expect(shortcuts).toContain(key);
            expect(watch.errors).toEqual([]);
        } finally {
            await page.close();
        }
    });

    test("the mirror's snapshot figure follows a new count at once", async () => {
        const { page, watch } = await open('count=20000');
        try {
            const before = await until(page, watch, 's.mirror.deltas >= 5 && s.mirror.snapshotBytes > 0');
            await page.evaluate(() => window.demo!.configure({ paused: true, count: 5000 }));
            await page.evaluate(() => window.demo!.step()); // the new count, reached in this tick
            await page.evaluate(() => window.demo!.step());
            const after = await stats(page);
            expect(after.entities).toBeLessThan(6000);
            // A snapshot's size follows the population: a quarter of the particles, about a quarter of the bytes.
            expect(after.mirror.snapshotBytes).toBeLessThan(before.mirror.snapshotBytes * 0.5);
            expect(after.mirror.snapshotBytes).toBeGreaterThan(0);
            // The page's readouts refresh every frame: read until one shows the new figure.
            const shown = await readout(
                page,
                '#mirror-stats [data-stat="snapshotBytes"]',
                (text) => parseBytes(text) < before.mirror.snapshotBytes * 0.5,
            );
            expect(parseBytes(shown)).toBeLessThan(before.mirror.snapshotBytes * 0.5);
            expect(watch.errors).toEqual([]);
        } finally {
            await page.close();
        }
    });

    test('the mirror: a worker rebuilds the world from deltas alone, and the page shows what they cost', async () => {
        const { page, watch } = await open('count=20000');
        try {
            await until(page, watch, 's.mirror.deltas >= 30');
            await page.evaluate(() => window.demo!.configure({ paused: true }));
            // Waits until the worker acknowledged the latest tick, then reads both worlds.
            const sample = await Promise.race([sampleMirror(page), watch.failed]);
            const held = await stats(page);
            const mirror = held.mirror;
            expect(mirror).toMatchObject({ enabled: true, available: true, keyframes: 1, inFlight: 0 });
            expect(mirror.sourceFrame).toBe(held.frame); // the latest tick was sent...
            expect(mirror.replicaTick).toBe(mirror.sourceTick); // ...and applied
            expect(mirror.replicaEntities).toBe(held.entities);
            expect(sample.replicaTick).toBe(sample.tick);
            expect(sample.handles).toHaveLength(64);
            expect(new Set(sample.handles).size).toBe(64);
            expect(sample.replica).toEqual(sample.source); // f32 values, copied bit for bit
            // Every particle moves every tick, so a delta carries every position: smaller than
            // the snapshot (Position and Color only, no Velocity, Lifetime, Bounce), not tiny.
            expect(mirror.deltaBytes).toBeGreaterThan(20_000 * 8);
            expect(mirror.deltaBytes).toBeLessThan(mirror.snapshotBytes);
            expect(mirror.deltaBytesAvg).toBeGreaterThan(0);
            // The page shows the same numbers.
            const shown = async (stat: string) => page.$eval(`#mirror-stats [data-stat="${stat}"]`, (element) => element.textContent ?? '');
            const bytesShown = parseBytes(await shown('deltaBytes'));
            expect(bytesShown).toBeGreaterThan(0);
            expect(bytesShown).toBeLessThan(parseBytes(await shown('snapshotBytes')));
            expect(Number((await shown('keyframes')).replace(/[^0-9]/g, ''))).toBe(1);
            expect(Number((await shown('replicaEntities')).replace(/[^0-9]/g, ''))).toBe(held.entities);
            // The second canvas draws the replica.
            const drawn = await canvasPixels(page, '#mirror-view');
            expect(drawn.lit).toBeGreaterThan(drawn.total * 0.01);

            // One step: one more delta, not a keyframe, and the replica follows exactly.
            await page.evaluate(() => window.demo!.step());
            const next = await Promise.race([sampleMirror(page), watch.failed]);
            expect(next.tick).toBeGreaterThan(sample.tick);
            expect(next.replica).toEqual(next.source);
            expect(next.source).not.toEqual(sample.source);
            expect((await stats(page)).mirror).toMatchObject({ keyframes: 1, deltas: mirror.deltas + 1 });

            // Off closes the replicator; on again starts over with a keyframe.
            await page.selectOption('#mirror', 'off'); // the control in the page
            const off = await stats(page);
            expect(off.mirror).toMatchObject({ enabled: false, deltaBytes: 0 });
            await page.evaluate(() => window.demo!.step());
            expect((await stats(page)).mirror.deltas).toBe(off.mirror.deltas);
            await page.evaluate(() => window.demo!.configure({ mirror: true, paused: false }));
            const again = await until(page, watch, 's.mirror.keyframes === 2 && s.mirror.deltas > ' + (off.mirror.deltas + 10));
            expect(again.mirror.enabled).toBe(true);
            await page.evaluate(() => window.demo!.configure({ paused: true }));
            const resumed = await Promise.race([sampleMirror(page), watch.failed]);
            expect(resumed.replica).toEqual(resumed.source);
            expect((await stats(page)).mirror.replicaEntities).toBe((await stats(page)).entities);

            // Above 50,000 particles the mirror holds (a delta would carry every position).
            await page.evaluate(() => window.demo!.configure({ count: 100_000 }));
            await page.evaluate(() => window.demo!.step());
            expect((await stats(page)).mirror).toMatchObject({ enabled: false, wanted: true, held: true });
            await page.evaluate(() => window.demo!.configure({ count: 20_000 }));
            await page.evaluate(() => window.demo!.step());
            expect((await stats(page)).mirror).toMatchObject({ enabled: true, held: false });
            expect(watch.errors).toEqual([]);
        } finally {
            await page.close();
        }
    });
});
