// A static file server for tessera's browser pages (the demo, the benchmark page, browser
// tests). Loopback only, no dependencies, and the MIME types pages need: browsers compile
// WebAssembly by streaming only when it is served as application/wasm.
//
//   node web/serve.mjs [root] [port]     (defaults: the repository root, 8080; 0 = any port)
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const MIME_TYPES = {
    '.html': 'text/html; charset=utf-8',
    '.js': 'text/javascript; charset=utf-8',
    '.mjs': 'text/javascript; charset=utf-8',
    '.css': 'text/css; charset=utf-8',
    '.json': 'application/json; charset=utf-8',
    '.wasm': 'application/wasm',
    '.png': 'image/png',
    '.svg': 'image/svg+xml',
    '.map': 'application/json; charset=utf-8',
    '.txt': 'text/plain; charset=utf-8',
};

/**
 * A server for the files below `root`. Directories serve their index.html. Paths that leave
 * `root` (after decoding) are refused, so nothing outside it can be read.
 * @param {string} root
 * @returns {http.Server}
 */
export function createStaticServer(root) {
    const base = path.resolve(root);
    return http.createServer(async (request, response) => {
        const reply = (status, text) => {
            response.writeHead(status, { 'content-type': 'text/plain; charset=utf-8' });
            response.end(text);
        };
        if (request.method !== 'GET' && request.method !== 'HEAD') return reply(405, 'GET only');
        let pathname;
        try {
            pathname = decodeURIComponent(new URL(request.url ?? '/', 'http://x').pathname);
        } catch {
            return reply(400, 'bad URL');
        }
        let file = path.resolve(base, `.${pathname}`);
        if (file !== base && !file.startsWith(base + path.sep)) return reply(403, 'outside root');
        try {
            if ((await stat(file)).isDirectory()) file = path.join(file, 'index.html');
            const info = await stat(file);
            response.writeHead(200, {
                'content-type': MIME_TYPES[path.extname(file)] ?? 'application/octet-stream',
                'content-length': info.size,
                'cache-control': 'no-store',
            });
            if (request.method === 'HEAD') return response.end();
            createReadStream(file).pipe(response);
        } catch {
            reply(404, 'not found');
        }
    });
}

/**
 * Starts a server on 127.0.0.1 and resolves with it and its URL.
 * @param {string} root
 * @param {number} [port] 0 picks a free port
 * @returns {Promise<{ server: http.Server, url: string }>}
 */
export function serve(root, port = 0) {
    const server = createStaticServer(root);
    return new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, '127.0.0.1', () => {
            const address = server.address();
            resolve({ server, url: `http://127.0.0.1:${address.port}/` });
        });
    });
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
    const root = process.argv[2] ?? path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
    const { url } = await serve(root, Number(process.argv[3] ?? 8080));
    console.log(`serving ${path.resolve(root)} at ${url}`);
}
