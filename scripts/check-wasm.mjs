// Checks the shipped module and prints its size.
//
//   node scripts/check-wasm.mjs <tessera.wasm> <tessera.exports.txt>
//
// tessera.exports.txt (written by CMake from the TES_API lines of src/tessera.h) lists the
// functions that must be exported. The imports allowed are the memory (env.memory, made by the
// loader) and env.emscripten_notify_memory_growth: anything else (WASI from stdio, emscripten
// JS library calls) would break the loader in bindings/load.ts. Exits 1 with a message on any
// problem.
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { gzipSync } from 'node:zlib';

const [wasmPath, exportsPath] = process.argv.slice(2);
if (!wasmPath || !exportsPath) {
    console.error('usage: node scripts/check-wasm.mjs <tessera.wasm> <tessera.exports.txt>');
    process.exit(2);
}

const bytes = readFileSync(wasmPath);
const module = new WebAssembly.Module(bytes);
const problems = [];

const allowed = new Map([
    ['env.memory', 'memory'],
    ['env.emscripten_notify_memory_growth', 'function'],
]);
const imports = WebAssembly.Module.imports(module).map((i) => ({ name: `${i.module}.${i.name}`, kind: i.kind }));
for (const { name, kind } of imports) {
    if (allowed.get(name) !== kind) problems.push(`unexpected import ${name} (${kind})`);
}
if (!imports.some((i) => i.name === 'env.memory')) problems.push('the memory is not imported (env.memory)');

const exported = new Map(WebAssembly.Module.exports(module).map((e) => [e.name, e.kind]));
const expected = readFileSync(exportsPath, 'utf8').split('\n').filter(Boolean);
for (const name of [...expected, '_initialize']) {
    if (exported.get(name) !== 'function') problems.push(`missing function export ${name}`);
}

if (problems.length) {
    console.error(`tessera: ${wasmPath} is not shippable:\n  ${problems.join('\n  ')}`);
    process.exit(1);
}

const gzipped = gzipSync(bytes, { level: 9 }).length;
console.log(
    `${basename(wasmPath)}: ${bytes.length} bytes, ${gzipped} gzipped ` +
        `(${expected.length} tes_* exports, imports: ${imports.map((i) => i.name).join(', ') || 'none'})`,
);
