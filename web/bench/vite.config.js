// Vite config of the benchmark page (root: web/bench). The contenders' versions are read from
// node_modules at build time (the page cannot read package.json files); the per-case worker is
// built as an ES module, like the page.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const versionOf = (pkg) => {
    try {
        return JSON.parse(readFileSync(path.join(root, 'node_modules', pkg, 'package.json'), 'utf8')).version;
    } catch {
        return '?';
    }
};
const versions = { tessera: JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')).version };
for (const pkg of ['bitecs', 'piecs', 'koota', 'miniplex']) versions[pkg] = versionOf(pkg);

export default {
    define: { __BENCH_VERSIONS__: JSON.stringify(versions) },
    worker: { format: 'es' },
    logLevel: 'warn',
};
