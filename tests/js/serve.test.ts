import { request, type Server } from 'node:http';
import { mkdtemp, mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error: a plain ES module without type declarations
import { serve } from '../../web/serve.mjs';

let server: Server;
let url: string;
let root: string;

beforeAll(async () => {
    const parent = await mkdtemp(path.join(tmpdir(), 'tessera-serve-'));
    root = path.join(parent, 'site');
    await mkdir(path.join(root, 'pages'), { recursive: true });
    await writeFile(path.join(root, 'pages', 'index.html'), '<p>hello</p>');
    await writeFile(path.join(root, 'mod.wasm'), new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0]));
    await writeFile(path.join(parent, 'secret.txt'), 'outside the root');
    ({ server, url } = await serve(root, 0));
});

afterAll(() => new Promise<void>((done) => server.close(() => done())));

/** GET with the path exactly as given. */
function get(rawPath: string): Promise<{ status: number; body: string }> {
    return new Promise((resolve, reject) => {
        const req = request(new URL(url), { path: rawPath }, (res) => {
            let body = '';
            res.setEncoding('utf8');
            res.on('data', (chunk: string) => (body += chunk));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        });
        req.on('error', reject);
        req.end();
    });
}

describe('web/serve.mjs', () => {
    it('listens on loopback only', () => {
        expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
    });

    it('serves wasm as application/wasm, byte for byte', async () => {
        const response = await fetch(new URL('mod.wasm', url));
        expect(response.status).toBe(200);
        expect(response.headers.get('content-type')).toBe('application/wasm');
        expect([...new Uint8Array(await response.arrayBuffer())]).toEqual([0, 97, 115, 109, 1, 0, 0, 0]);
    });

    it('serves index.html for a directory', async () => {
        const response = await fetch(new URL('pages/', url));
        expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
        expect(await response.text()).toBe('<p>hello</p>');
    });

    it('answers 404 for a missing file', async () => {
        expect((await fetch(new URL('nope.js', url))).status).toBe(404);
    });

    it('never serves a file outside the root, however the path is spelled', async () => {
        // Raw request paths: node:http sends them as written (fetch would normalise them).
        for (const raw of ['/../secret.txt', '/%2e%2e/secret.txt', '/..%2fsecret.txt', '/pages/..%2f..%2fsecret.txt']) {
            const { status, body } = await get(raw);
            expect([403, 404], raw).toContain(status);
            expect(body, raw).not.toContain('outside the root');
        }
        // An encoded slash survives URL parsing and reaches the root check itself.
        expect((await get('/..%2fsecret.txt')).status).toBe(403);
    });
});
