// The packed tarball, installed into an empty project (see install.ts), as Node sees it: the
// file list, the exports map, quickstart.mjs, the raw loader, the wasm file and the types.
import { execFile } from 'node:child_process';
import { copyFile, mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, inject, test } from 'vitest';

const run = promisify(execFile);
const install = inject('install');

/** Runs node (this one) in the temp project; rejects with its output on a non-zero exit. */
async function node(args: string[], cwd = install.project): Promise<{ stdout: string; stderr: string }> {
    try {
        return await run(process.execPath, args, { cwd });
    } catch (error) {
        const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string };
        throw new Error(`node ${args.join(' ')} failed:\n${stdout}\n${stderr}`, { cause: error });
    }
}

/** Every file below `dir` (relative paths, '/' separators). */
async function walk(dir: string, prefix = ''): Promise<string[]> {
    const found: string[] = [];
    for (const entry of await readdir(dir, { withFileTypes: true })) {
        const relative = `${prefix}${entry.name}`;
        if (entry.isDirectory()) found.push(...(await walk(path.join(dir, entry.name), `${relative}/`)));
        else found.push(relative);
    }
    return found;
}

/** The string targets of an exports map, keyed by subpath (conditions joined with ':'). */
function exportTargets(value: unknown, key: string): [string, string][] {
    if (typeof value === 'string') return [[key, value]];
    if (value === null || typeof value !== 'object') return [];
    return Object.entries(value).flatMap(([k, v]) => exportTargets(v, key === '' ? k : `${key}:${k}`));
}

describe('the tarball', () => {
    test('holds exactly package.json, README.md, LICENSE, tessera.wasm and the tsc output of bindings/', async () => {
        const sources = (await walk(path.join(install.repo, 'bindings'))).filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts'));
        expect(sources).toContain('load.ts');
        const expected = [
            'LICENSE',
            'README.md',
            'package.json',
            'dist/tessera.wasm',
            ...sources.flatMap((file) => [`dist/${file.slice(0, -3)}.js`, `dist/${file.slice(0, -3)}.d.ts`]),
        ].sort();
        const packed = install.files.map((file) => file.path);
        expect(packed).toEqual(expected);
        // Spelled out, whatever bindings/ holds: no tests, no sources, no source maps.
        for (const file of packed) {
            expect(file, file).not.toMatch(/(^|\/)tests?\/|\.test\.|\.spec\.|\.map$|\.tsbuildinfo$|\.c$|\.h$/);
            expect(file, file).not.toMatch(/(?<!\.d)\.ts$/);
        }
        const wasm = install.files.find((file) => file.path === 'dist/tessera.wasm');
        expect(wasm?.size).toBe((await readFile(path.join(install.repo, 'dist', 'tessera.wasm'))).length);
        expect(install.size).toBeLessThan(200_000);
    });

    test('installs every target of its exports map, and no install-time scripts', async () => {
        const manifest = JSON.parse(await readFile(path.join(install.installed, 'package.json'), 'utf8')) as {
            type?: string;
            main?: string;
            types?: string;
            exports: Record<string, unknown>;
            scripts?: Record<string, string>;
        };
        expect(manifest.type).toBe('module');
        expect(Object.keys(manifest.exports)).toEqual(['.', './raw', './tessera.wasm', './package.json']);
        const targets = [...exportTargets(manifest.exports, ''), ['main', manifest.main ?? ''], ['types', manifest.types ?? '']];
        const installedFiles = new Set(await walk(install.installed));
        for (const [key, target] of targets) {
            expect(target, key).toMatch(/^\.\//);
            expect(installedFiles.has(target!.slice(2)), `${key} -> ${target}`).toBe(true);
        }
        for (const hook of ['preinstall', 'install', 'postinstall', 'prepare', 'preprepare', 'postprepare']) {
            expect(manifest.scripts?.[hook], hook).toBeUndefined();
        }
    });
});

describe('installed into an empty project, in Node', () => {
    test('quickstart.mjs runs', async () => {
        await copyFile(new URL('./quickstart.mjs', import.meta.url), path.join(install.project, 'quickstart.mjs'));
        const { stdout } = await node(['quickstart.mjs']);
        expect(stdout).toMatch(/^quickstart: ok/m);
    });

    test("the README's quickstart runs as pasted and prints what its comments say", async () => {
        // The README block and examples/quickstart.mjs are the same text: one is run here.
        const example = await readFile(new URL('../../examples/quickstart.mjs', import.meta.url), 'utf8');
        const readme = await readFile(new URL('../../README.md', import.meta.url), 'utf8');
        const block = /## Quickstart[\s\S]*?```js\n([\s\S]*?)```/.exec(readme)?.[1];
        expect(block).toBe(example);
        const dir = path.join(install.project, 'readme');
        await mkdir(dir, { recursive: true });
        await writeFile(path.join(dir, 'quickstart.mjs'), example);
        const { stdout } = await node(['quickstart.mjs'], dir);
        const promised = [...example.matchAll(/^console\.log\(.*\); \/\/ (.*)$/gm)].map((m) => m[1]);
        expect(promised).toHaveLength(2);
        expect(stdout.trim().split('\n')).toEqual(promised);
    });

    test("import('tessera-ecs/raw') loads the module from node_modules/tessera-ecs/dist/tessera.wasm", async () => {
        const script = `
            const raw = await import('tessera-ecs/raw');
            const { exports, memory } = await raw.loadTessera();
            console.log(JSON.stringify({
                f32: exports.tes_type_size(1),
                memory: memory instanceof WebAssembly.Memory,
                wasm: import.meta.resolve('tessera-ecs/tessera.wasm'),
                raw: import.meta.resolve('tessera-ecs/raw'),
            }));`;
        const { stdout } = await node(['--input-type=module', '-e', script]);
        const result = JSON.parse(stdout) as { f32: number; memory: boolean; wasm: string; raw: string };
        expect(result.f32).toBe(4);
        expect(result.memory).toBe(true);
        expect(new URL(result.wasm).pathname).toBe(path.join(install.installed, 'dist', 'tessera.wasm'));
        expect(new URL(result.raw).pathname).toBe(path.join(install.installed, 'dist', 'load.js'));
        // The installed module is the one built here, byte for byte.
        const [installed, built] = await Promise.all([
            readFile(path.join(install.installed, 'dist', 'tessera.wasm')),
            readFile(path.join(install.repo, 'dist', 'tessera.wasm')),
        ]);
        expect(installed.equals(built)).toBe(true);
    });

    test('files outside the exports map are not importable', async () => {
        const script = `
            try { await import('tessera-ecs/dist/load.js'); console.log('imported'); }
            catch (error) { console.log(error.code); }`;
        const { stdout } = await node(['--input-type=module', '-e', script]);
        expect(stdout.trim()).toBe('ERR_PACKAGE_PATH_NOT_EXPORTED');
    });

    test('the types resolve under moduleResolution NodeNext (tsc --noEmit, lib check on)', async () => {
        const dir = path.join(install.project, 'types-check');
        await mkdir(dir, { recursive: true });
        await copyFile(new URL('./types-check.ts', import.meta.url), path.join(dir, 'check.ts'));
        await writeFile(
            path.join(dir, 'tsconfig.json'),
            JSON.stringify({
                compilerOptions: {
                    target: 'ES2022',
                    module: 'NodeNext',
                    moduleResolution: 'NodeNext',
                    lib: ['ES2022', 'DOM'],
                    types: [],
                    strict: true,
                    noEmit: true,
                    skipLibCheck: false,
                },
                files: ['check.ts'],
            }),
        );
        const tsc = path.join(install.repo, 'node_modules', 'typescript', 'bin', 'tsc');
        const { stdout } = await node([tsc, '-p', dir, '--traceResolution'], dir);
        // Resolved through the installed package's exports map, not through the repository.
        const resolved = (specifier: string) =>
            stdout.match(new RegExp(`Module name '${specifier}' was successfully resolved to '([^']*)'`))?.[1];
        expect(resolved('tessera-ecs')).toBe(path.join(install.installed, 'dist', 'index.d.ts'));
        expect(resolved('tessera-ecs/raw')).toBe(path.join(install.installed, 'dist', 'load.d.ts'));
    });
});
