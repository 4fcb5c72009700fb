// The multiplayer example (examples/multiplayer/) with its real server and two headless Chromium
// clients over WebSockets on 127.0.0.1, one of them behind a simulated bad link (`?loss=0.3`:
// messages dropped and reordered both ways, in the page's transport wrapper). Both replicas end
// up equal to the server's world; a client that closes is forgotten; a viewer (`?view=`) only
// ever holds the dots near its focus; nothing is logged as an error.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
// @ts-expect-error: a plain ES module without type declarations
import { launchChromium, watchPage } from '../../web/chromium.mjs';
// @ts-expect-error: a plain ES module without type declarations
import { startArena } from '../../examples/multiplayer/arena.mjs';
// @ts-expect-error: a plain ES module without type declarations
import { Hue, Position } from '../../examples/multiplayer/components.js';

interface Arena {
    url: string;
    world: { query(desc: unknown): Iterable<{ count: number; entities: Uint32Array; column(c: unknown, f: string): ArrayLike<number> }> };
    stats: { clients: number };
    tick(): void;
    update(): void;
    close(): Promise<void>;
}

declare global {
    interface Window {
        arena?: { dots(): number[][]; link: { loss: number; dropped: number }; connected: Promise<void> };
    }
}

const repo = fileURLToPath(new URL('../..', import.meta.url));
let arena: Arena;
let context: BrowserContext;
let temp: string;

beforeAll(async () => {
    temp = await mkdtemp(path.join(tmpdir(), 'tessera-multiplayer-test-'));
    arena = await startArena({ root: repo, port: 0, entities: 300, tickMs: 0 });
    context = await launchChromium(temp);
});

afterAll(async () => {
    await context?.close();
    await arena?.close();
    await rm(temp, { recursive: true, force: true });
});

const pause = (ms: number) => new Promise((done) => setTimeout(done, ms));

/** The server's dots as the page lists them: [handle, x, y, hue], by handle. */
function serverDots(): number[][] {
    const out: number[][] = [];
    for (const chunk of arena.world.query({ all: [Position, Hue] })) {
        const x = chunk.column(Position, 'x'),
            y = chunk.column(Position, 'y'),
            h = chunk.column(Hue, 'h');
        for (let i = 0; i < chunk.count; i++) out.push([chunk.entities[i]!, x[i]!, y[i]!, h[i]!]);
    }
    return out.sort((a, b) => a[0]! - b[0]!);
}

async function open(query = ''): Promise<{ page: Page; watch: { errors: string[] } }> {
    const page = await context.newPage();
    const watch = watchPage(page, { warnings: true });
    await page.goto(new URL(`examples/multiplayer/${query}`, arena.url).href);
    await page.waitForFunction(() => window.arena !== undefined, undefined, { timeout: 20_000 });
    await page.evaluate(() => window.arena!.connected);
    return { page, watch };
}

/** Waits (no ticks) until the page's replica equals the server's world (the dots `keep` keeps). */
async function settled(page: Page, keep: (dot: number[]) => boolean = () => true): Promise<void> {
    let dots: number[][] = [];
    for (let waited = 0; waited < 20_000; waited += 50) {
        dots = await page.evaluate(() => window.arena!.dots());
        if (JSON.stringify(dots) === JSON.stringify(serverDots().filter(keep))) return;
        await pause(50);
    }
    expect(dots).toEqual(serverDots().filter(keep));
}

describe('the multiplayer example in Chromium', () => {
    test('two browser clients, one on a bad link, end up equal to the server', async () => {
        const clean = await open();
        const lossy = await open('?loss=0.3');
        for (let i = 0; i < 20 && arena.stats.clients < 2; i++) await pause(50);
        expect(arena.stats.clients).toBe(2);
        for (let t = 0; t < 60; t++) {
            arena.tick();
            await pause(10);
        }
        await settled(clean.page);
        expect(await lossy.page.evaluate(() => window.arena!.link.dropped)).toBeGreaterThan(0);
        await lossy.page.evaluate(() => (window.arena!.link.loss = 0)); // the link heals
        for (let t = 0; t < 5; t++) {
            arena.tick();
            await pause(10);
        }
        await settled(clean.page);
        await settled(lossy.page);
        expect((await lossy.page.evaluate(() => window.arena!.dots())).length).toBe(300);
        await lossy.page.close();
        for (let i = 0; i < 100 && arena.stats.clients > 1; i++) await pause(50);
        expect(arena.stats.clients).toBe(1);
        expect(clean.watch.errors).toEqual([]);
        await clean.page.close();
    });

    test('a viewer on a bad link under a byte budget only ever holds the dots near its focus', async () => {
        // ?view=150: the dots within 150 units of its focus (the centre: no pointer moves here).
        const viewer = await open('?view=150&budget=300&loss=0.3');
        const near = ([, x, y]: number[]) => Math.hypot(x! - 400, y! - 400) <= 150 + 1e-3;
        for (let i = 0; i < 20 && arena.stats.clients < 1; i++) await pause(50);
        let seen = 0;
        for (let t = 0; t < 60; t++) {
            arena.tick();
            await pause(10);
            if (t % 10 !== 9) continue;
            // Each dot it holds was within the view at the tick it holds it from.
            const dots = await viewer.page.evaluate(() => window.arena!.dots());
            expect(dots.filter((dot) => !near(dot))).toEqual([]);
            seen = Math.max(seen, dots.length);
        }
        expect(seen).toBeGreaterThan(10);
        expect(seen).toBeLessThan(300);
        await viewer.page.evaluate(() => (window.arena!.link.loss = 0)); // the link heals
        for (let t = 0; t < 10; t++) {
            if (t < 3) arena.tick();
            else arena.update(); // what the budget held back goes
            await pause(20);
        }
        await settled(viewer.page, near);
        expect(viewer.watch.errors).toEqual([]);
        await viewer.page.close();
    });
});
