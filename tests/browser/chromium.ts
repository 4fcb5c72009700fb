// Headless Chromium for the browser tests and the demo measurement: Debian's chromium driven by
// playwright-core (TOOLCHAIN.md), and a watcher that turns whatever a page does wrong into a
// list of errors and a promise that rejects at the first one.
import { mkdtemp } from 'node:fs/promises';
import path from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';

// TOOLCHAIN.md; playwright adds --headless itself, and the profile is a fresh temp dir.
const CHROMIUM_FLAGS = [
    '--no-sandbox',
    '--disable-gpu',
    '--disable-quic',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
];

/** A headless Chromium with a fresh profile under `tempDir`. Close it when done. */
export async function launchChromium(tempDir: string): Promise<BrowserContext> {
    return chromium.launchPersistentContext(await mkdtemp(path.join(tempDir, 'chromium-profile-')), {
        executablePath: CHROMIUM,
        headless: true,
        args: CHROMIUM_FLAGS,
    });
}

/** What went wrong in a page, as it happens. */
export interface PageWatch {
    /** Console errors (and warnings when asked), page errors, failed requests, HTTP >= 400. */
    readonly errors: string[];
    /** Rejects at the first error, so a waiting test fails fast instead of timing out. */
    readonly failed: Promise<never>;
}

/** Starts collecting a page's errors (before it navigates). */
export function watchPage(page: Page, { warnings = false } = {}): PageWatch {
    const errors: string[] = [];
    let fail: (reason: Error) => void = () => {};
    const failed = new Promise<never>((_, reject) => (fail = reject));
    failed.catch(() => {});
    const report = (what: string) => {
        errors.push(what);
        fail(new Error(`${page.url()}: ${what}`));
    };
    const bad = (type: string) => type === 'error' || (warnings && type === 'warning');
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
