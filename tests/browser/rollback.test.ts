// The rollback example's page (examples/rollback/) in headless Chromium, served from the
// repository root as `npm start` serves it: the two peers run live, one tick per animation
// frame, rewinding on late inputs, and agree on every tick both confirmed; with `?rollback=0`
// (predictions never corrected) they part. Nothing is logged as an error.
import { describe, expect, test } from 'vitest';
// @ts-expect-error: a plain ES module without type declarations
import { watchPage } from '../../web/chromium.mjs';
import { servedChromium } from './served.js';

interface RollbackPeer {
    confirmedHashes: bigint[];
    counters: { rollbacks: number };
}

declare global {
    interface Window {
        rollback?: { peers: RollbackPeer[] };
    }
}

const site = servedChromium('rollback');

/** Opens the page and waits until both peers confirmed at least `ticks` ticks. */
async function run(query: string, ticks: number) {
    const page = await site.context.newPage();
    const watch = watchPage(page, { warnings: true });
    await page.goto(new URL(`examples/rollback/${query}`, site.baseUrl).href);
    await page.waitForFunction(() => window.rollback !== undefined, undefined, { timeout: 20_000 });
    await page.waitForFunction((n) => window.rollback!.peers.every((peer) => peer.confirmedHashes.length >= n), ticks, { timeout: 30_000 });
    // Hashes as strings: a bigint does not cross the page boundary.
    const state = await page.evaluate((n) => {
        const [a, b] = window.rollback!.peers;
        return {
            a: a!.confirmedHashes.slice(0, n).map(String),
            b: b!.confirmedHashes.slice(0, n).map(String),
            rollbacks: a!.counters.rollbacks + b!.counters.rollbacks,
        };
    }, ticks);
    await page.close();
    return { ...state, errors: watch.errors as string[] };
}

describe('the rollback example in Chromium', () => {
    test('the peers rewind on late inputs and agree on every tick both confirmed', async () => {
        const { a, b, rollbacks, errors } = await run('', 120);
        expect(a.length).toBe(120);
        expect(a).toEqual(b);
        expect(rollbacks).toBeGreaterThan(5);
        expect(errors).toEqual([]);
    });

    test('without rollback the peers part', async () => {
        const { a, b, errors } = await run('?rollback=0', 120);
        expect(a).not.toEqual(b);
        expect(errors).toEqual([]);
    });
});
