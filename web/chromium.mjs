// Headless Chromium for the browser tests, the demo measurement and the benchmark page:
// Debian's chromium driven by playwright-core (see the toolchain notes), and a watcher that turns
// whatever a page does wrong into a list of errors and a promise that rejects at the first one.
import { mkdtemp } from 'node:fs/promises';
import path from 'node:path';
import { chromium } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';

// playwright adds --headless itself, and the profile is a fresh temp dir.
const CHROMIUM_FLAGS = [
    '--no-sandbox',
    '--disable-gpu',
    '--disable-quic',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
];

/**
 * A headless Chromium with a fresh profile under `tempDir`. Close it when done.
 * @param {string} tempDir
 * @returns {Promise<import('playwright-core').BrowserContext>}
 */
export async function launchChromium(tempDir) {
    return chromium.launchPersistentContext(await mkdtemp(path.join(tempDir, 'chromium-profile-')), {
        executablePath: CHROMIUM,
        headless: true,
        args: CHROMIUM_FLAGS,
    });
}

/**
 * @typedef {object} PageWatch
 * @property {string[]} errors console errors (and warnings when asked), page errors, failed
 *   requests, HTTP >= 400, as they happen
 * @property {Promise<never>} failed rejects at the first error, so a waiting caller fails fast
 */

/**
 * Starts collecting a page's errors (call it before the page navigates).
 * @param {import('playwright-core').Page} page
 * @param {{ warnings?: boolean }} [options] count console warnings as errors too
 * @returns {PageWatch}
 */
export function watchPage(page, { warnings = false } = {}) {
    /** @type {string[]} */
    const errors = [];
    /** @type {(reason: Error) => void} */
    let fail = () => {};
    /** @type {Promise<never>} */
    const failed = new Promise((_, reject) => (fail = reject));
    failed.catch(() => {});
    /** @param {string} what */
    const report = (what) => {
        errors.push(what);
        fail(new Error(`${page.url()}: ${what}`));
    };
    /** @param {string} type */
    const bad = (type) => type === 'error' || (warnings && type === 'warning');
    page.on('console', (message) => {
        if (bad(message.type())) report(`console ${message.type()}: ${message.text()}`);
    });
    page.on('pageerror', (error) => report(`pageerror: ${error.message}`));
    page.on('worker', (worker) =>
        worker.on('console', (message) => {
            if (bad(message.type())) report(`worker console ${message.type()}: ${message.text()}`);
        }),
    );
    page.on('requestfailed', (request) => report(`requestfailed: ${request.url()} ${request.failure()?.errorText}`));
    page.on('response', (response) => {
        if (response.status() >= 400) report(`HTTP ${response.status()}: ${response.url()}`);
    });
    return { errors, failed };
}
