// The installed tarball (see ../package/install.ts) in headless Chromium: a Vite build of a
// page that imports 'tessera-ecs', and a plain page importing dist/ by relative path without a
// bundler; each on the main thread and in a module worker. Pages are served by web/serve.mjs.
import { execFile } from 'node:child_process';
import { cp, readdir } from 'node:fs/promises';
import type { Server } from 'node:http';
import path from 'node:path';
import { promisify } from 'node:util';
import type { BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
// @ts-expect-error: a plain ES module without type declarations
import { serve } from '../../web/serve.mjs';
// @ts-expect-error: a plain ES module without type declarations
import { launchChromium, watchPage } from '../../web/chromium.mjs';

const run = promisify(execFile);
const install = inject('install');
let server: Server | undefined;
let baseUrl: string;
let context: BrowserContext | undefined;
let viteOutput: string;

beforeAll(async () => {
    // The pages live in the temp project, next to its node_modules/.
    for (const dir of ['shared', 'vite-app', 'plain']) {
        await cp(new URL(`./${dir}`, import.meta.url), path.join(install.project, dir), { recursive: true });
    }
    // The repository's vite, as a user's build would run it: root = the app, relative base.
    const vite = path.join(install.repo, 'node_modules', 'vite', 'bin', 'vite.js');
    const app = path.join(install.project, 'vite-app');
    try {
        const { stdout, stderr } = await run(process.execPath, [vite, 'build', app, '--base', './', '--emptyOutDir'], {
            cwd: install.project,
            env: { ...process.env, NO_COLOR: '1' },
        });
        viteOutput = `${stdout}\n${stderr}`;
    } catch (error) {
        const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string };
        throw new Error(`vite build failed:\n${stdout}\n${stderr}`, { cause: error });
    }
    ({ server, url: baseUrl } = await serve(install.project, 0));
    context = await launchChromium(install.temp);
});

afterAll(async () => {
    await context?.close();
    await new Promise<void>((done) => (server ? server.close(() => done()) : done()));
});

interface Outcome {
    ok: boolean;
    where: string;
    result?: unknown;
    error?: string;
}

/** Opens `pagePath`, waits for window.__result, and reports it with what went wrong on the way. */
async function visit(pagePath: string) {
    const page = await context!.newPage();
    const { errors, failed } = watchPage(page);
    const wasm: { url: string; status: number; type: string | undefined }[] = [];
    page.on('response', (response) => {
        if (new URL(response.url()).pathname.endsWith('.wasm')) {
            wasm.push({ url: response.url(), status: response.status(), type: response.headers()['content-type'] });
        }
    });
    try {
        await page.goto(new URL(pagePath, baseUrl).href);
        try {
            const done = page.waitForFunction(() => (window as { __result?: unknown }).__result !== undefined, undefined, {
                timeout: 20_000,
            });
            await Promise.race([done, failed]);
        } catch (error) {
            // Usually a module that failed to load: what the page logged says which.
            await new Promise((settle) => setTimeout(settle, 200)); // let the rest of the story arrive
            throw new Error(`${pagePath} reported no result: ${String(error)}\n${errors.join('\n')}`, { cause: error });
        }
        const outcome = (await page.evaluate(() => (window as { __result?: unknown }).__result)) as Outcome;
        return { outcome, errors, wasm };
    } finally {
        await page.close();
    }
}

/** What shared/scenario.js reports when the package works (see there for the steps). */
const expectedResult = {
    columnType: 'Float32Array',
    firstChanged: ['e'],
    afterOne: { x: 4, y: 2 },
    secondChangedCount: 50_001,
    bulkX: 100_000,
    bulkY: 50_000,
    frozen: { x: 10, y: 20 },
    stale: 'STALE_ENTITY',
    aliveAfterDespawn: false,
};

describe('a Vite build of a page importing tessera-ecs', () => {
    test('bundles the module as an asset next to the JS', async () => {
        const assets = await readdir(path.join(install.project, 'vite-app', 'dist', 'assets'));
        expect(assets.filter((file) => file.endsWith('.wasm'))).toHaveLength(1);
        expect(viteOutput).not.toMatch(/error/i);
        // No warnings either: e.g. a static import('node:fs/promises') in the loader makes Vite
        // warn about externalizing it in every user's build.
        expect(viteOutput).not.toMatch(/warn|externalized/i);
    });

    for (const mode of ['main', 'worker'] as const) {
        test(`runs in headless Chromium (${mode === 'main' ? 'main thread' : 'module worker'})`, async () => {
            const { outcome, errors, wasm } = await visit(`vite-app/dist/index.html?mode=${mode}`);
            expect(outcome.error).toBeUndefined();
            expect(outcome).toEqual({ ok: true, where: mode, result: expectedResult });
            expect(errors).toEqual([]);
            expect(wasm).toHaveLength(1);
            expect(wasm[0]).toMatchObject({ status: 200, type: 'application/wasm' });
            expect(new URL(wasm[0]!.url).pathname).toMatch(/^\/vite-app\/dist\/assets\/[^/]+\.wasm$/);
        });
    }
});

describe('a plain page importing dist/ by relative path (no bundler)', () => {
    for (const mode of ['main', 'worker'] as const) {
        test(`runs in headless Chromium (${mode === 'main' ? 'main thread' : 'module worker'})`, async () => {
            const { outcome, errors, wasm } = await visit(`plain/index.html?mode=${mode}`);
            expect(outcome.error).toBeUndefined();
            expect(outcome).toEqual({ ok: true, where: mode, result: expectedResult });
            expect(errors).toEqual([]);
            expect(wasm).toEqual([
                { url: new URL('node_modules/tessera-ecs/dist/tessera.wasm', baseUrl).href, status: 200, type: 'application/wasm' },
            ]);
        });
    }
});
