// A headless Chromium and the repository served as `npm start` serves it, for a browser test
// file: made before its tests, closed after them. The pages open through `site.context` and
// address the repository from `site.baseUrl`.
import { mkdtemp, rm } from 'node:fs/promises';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BrowserContext } from 'playwright-core';
import { afterAll, beforeAll } from 'vitest';
// @ts-expect-error: a plain ES module without type declarations
import { launchChromium } from '../../web/chromium.mjs';
// @ts-expect-error: a plain ES module without type declarations
import { serve } from '../../web/serve.mjs';

/** The repository's root directory. */
export const repo = fileURLToPath(new URL('../..', import.meta.url));

export interface ServedSite {
    /** The browser context, once the file's tests run. */
    readonly context: BrowserContext;
    /** The URL the repository's root is served at. */
    readonly baseUrl: string;
}

/** Registers the file's beforeAll / afterAll; `name` labels the browser's temporary profile. */
export function servedChromium(name: string): ServedSite {
    let server: Server | undefined;
    let temp = '';
    const site = { context: undefined as unknown as BrowserContext, baseUrl: '' };
    beforeAll(async () => {
        temp = await mkdtemp(path.join(tmpdir(), `tessera-${name}-test-`));
        let url: string;
        ({ server, url } = await serve(repo, 0));
        site.baseUrl = url;
        site.context = await launchChromium(temp);
    });
    afterAll(async () => {
        await site.context?.close();
        await new Promise<void>((done) => (server ? server.close(() => done()) : done()));
        if (temp) await rm(temp, { recursive: true, force: true });
    });
    return site;
}
