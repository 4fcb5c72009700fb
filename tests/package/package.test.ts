// The packed tarball, installed into an empty project (see install.ts), as Node sees it: the
// file list, the exports map, the README and changelog it ships, quickstart.mjs, the raw loader,
// the wasm file, require() from CommonJS, and the types under the compiler settings users have.
import { execFile } from 'node:child_process';
import { copyFile, mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import ts from 'typescript';
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
    test('holds exactly package.json, README.md, CHANGELOG.md, LICENSE, tessera.wasm and the tsc output of bindings/', async () => {
        const sources = (await walk(path.join(install.repo, 'bindings'))).filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts'));
        expect(sources).toContain('load.ts');
        // Packed from a clean checkout (no dist/): the build is prepack's.
        const expected = [
            'CHANGELOG.md',
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
        expect(wasm?.size).toBe((await readFile(path.join(install.checkout, 'dist', 'tessera.wasm'))).length);
        // A bloat guard on the gzipped tarball (the wasm is about 78 KB of it, the README 15):
        // 191 KB at 0.1.0's first cut, 203 KB with reclaiming, delta v2 and sessions, 212 KB
        // with quantized deltas and peers (the wasm 215 -> 227 KB: peers 7, quantizing 4, qsort 1.5),
        // 220.0 KB with JS-recorded commands (record.ts and its declarations, the ABI's new tables),
        // 225.7 KB with recorded spawns (handouts, the flush's batch paths, tes_query_despawn:
        // the wasm +6.4 KB, 2 KB gzipped; record.ts, entities.ts and their declarations),
        // 231.4 KB with delta format 4 and the world's hash (XXH64 and tes_world_hash: the wasm
        // +2.9 KB, 0.7 KB gzipped; the README's section), 246.6 KB with rollback (checkpoints and
        // rewinds: the wasm 254 -> 285 KB, 92.5 -> 104.3 KB gzipped; rollback.ts; the README's
        // section, 3.7 KB), 251.3 KB with the fixes of nine defects (CHANGELOG and README text,
        // world-state.ts split from world.ts, the registration take-back: about 4.7 KB), 260.1 KB
        // with the core-owned access epoch and rollback's value images (the wasm 289.6 -> 294.5 KB,
        // 106.0 -> 107.8 KB gzipped: value images, the moved bitmap, the rewind's sort by index),
        // 264.7 KB with the imported memory, 267.7 KB with whole-component get and set and
        // placed spawns in JS and recorded spawns placed as a batch (access.ts and entities.ts
        // +2.7 KB gzipped, the wasm +1.1 KB; SpawnPlan's declaration marked internal, -1.5 KB),
        // 270.0 KB with two defects fixed (a set after a recorded add of a held component is
        // ordered after it; a keyframe's pairs applied by state) and sparse runs applied together
        // at the flush (the wasm 303,958 -> 308,184 bytes, 111.4 -> 112.9 KB gzipped; the text),
        // 270.7 KB with five more (refused kernels and chunk reads registering nothing,
        // arguments that threw a TypeError, two members live after destroy), 271.0 KB with two
        // more (a replica's child order after re-entry, a recorded setParent with `before`).
        expect(install.size).toBeLessThan(272_000);
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

    test('its README links only to what resolves on the registry: no relative links or images', async () => {
        const readme = await readFile(path.join(install.installed, 'README.md'), 'utf8');
        expect(readme).toMatch(/## Quickstart/);
        // Inline links and images, [text](target) / ![alt](target), and reference definitions.
        const targets = [
            ...[...readme.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]*)/g)].map((m) => m[1]!),
            ...[...readme.matchAll(/^ {0,3}\[[^\]]+\]:\s*<?(\S*?)>?(\s|$)/gm)].map((m) => m[1]!),
            ...[...readme.matchAll(/<(?:a|img)\s[^>]*(?:href|src)\s*=\s*["']([^"']*)["']/gi)].map((m) => m[1]!),
        ];
        const relative = targets.filter((target) => !/^(https?:\/\/|#)/.test(target));
        expect(relative).toEqual([]);
    });

    test('its CHANGELOG.md (Keep a Changelog) has an entry for the version it ships', async () => {
        const [changelog, manifest] = await Promise.all([
            readFile(path.join(install.installed, 'CHANGELOG.md'), 'utf8'),
            readFile(path.join(install.installed, 'package.json'), 'utf8').then((text) => JSON.parse(text) as { version: string }),
        ]);
        expect(changelog).toMatch(/^# Changelog\n/);
        expect(changelog).toContain('https://keepachangelog.com/');
        const version = manifest.version.replace(/\./g, '\\.');
        expect(changelog).toMatch(new RegExp(`^## \\[${version}\\]( - \\d{4}-\\d{2}-\\d{2}| - Unreleased)?$`, 'm'));
    });
});

describe('from CommonJS', () => {
    // The package is ESM only (one copy of its module state: a component of one copy is refused
    // by another, so no second, CommonJS build). require() of it needs Node's require(esm), on by
    // default from 20.19 and 22.12: the engines field states exactly those.
    test('engines.node is the Node versions whose require() loads ES modules, and this Node is one', async () => {
        const manifest = JSON.parse(await readFile(path.join(install.installed, 'package.json'), 'utf8')) as {
            engines: { node: string };
        };
        expect(manifest.engines.node).toBe('^20.19.0 || >=22.12.0');
        const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
        expect(major === 20 ? minor >= 19 : major >= 22 && (major > 22 || minor >= 12)).toBe(true);
    });

    test("a CommonJS project require()s 'tessera-ecs' and 'tessera-ecs/raw' and makes a world", async () => {
        const dir = path.join(install.project, 'cjs');
        await mkdir(dir, { recursive: true });
        await writeFile(path.join(dir, 'package.json'), JSON.stringify({ name: 'cjs-check', private: true, type: 'commonjs' }));
        await writeFile(
            path.join(dir, 'main.js'),
            `const { createWorld, component } = require('tessera-ecs');
            const { loadTessera } = require('tessera-ecs/raw');
            const Position = component('Position', { x: 'f32', y: 'f32' });
            (async () => {
                const world = await createWorld();
                const e = world.spawn(Position({ x: 1, y: 2 }));
                const raw = await loadTessera();
                console.log(JSON.stringify({ position: world.get(e, Position), f32: raw.exports.tes_type_size(1) }));
                world.destroy();
            })();`,
        );
        const { stdout, stderr } = await node(['main.js'], dir);
        expect(JSON.parse(stdout)).toEqual({ position: { x: 1, y: 2 }, f32: 4 });
        expect(stderr).toBe('');
        // Without require(esm) (Node before 20.19 / 22.12), the same file fails: what engines is for.
        await expect(node(['--no-experimental-require-module', 'main.js'], dir)).rejects.toThrow(/ERR_REQUIRE_ESM/);
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
        // The installed module is the one prepack built in the clean checkout, byte for byte.
        const [installed, built] = await Promise.all([
            readFile(path.join(install.installed, 'dist', 'tessera.wasm')),
            readFile(path.join(install.checkout, 'dist', 'tessera.wasm')),
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

    // types-check.ts compiled against the installed package (tsc --noEmit, skipLibCheck off) in
    // the settings users have; each must resolve both entry points to the installed files.
    const typeSettings: [name: string, options: Record<string, unknown>][] = [
        [
            'NodeNext with the DOM lib (a browser or bundler project)',
            { module: 'NodeNext', moduleResolution: 'NodeNext', lib: ['ES2022', 'DOM'], types: [] },
        ],
        [
            // No lib declares WebAssembly or BufferSource here: the types must not need them.
            'NodeNext in Node only: @types/node, no DOM lib',
            {
                module: 'NodeNext',
                moduleResolution: 'NodeNext',
                lib: ['ES2022'],
                types: ['node'],
                typeRoots: [path.join(install.repo, 'node_modules', '@types')],
            },
        ],
        // No exports map under node10: 'tessera-ecs/raw' resolves through typesVersions.
        ['moduleResolution node10 (no exports map)', { module: 'ES2022', moduleResolution: 'node10', lib: ['ES2022', 'DOM'], types: [] }],
    ];
    test.each(typeSettings)('the types compile and resolve under %s', async (name, options) => {
        const dir = path.join(install.project, `types-${name.replace(/\W+/g, '-')}`);
        await mkdir(dir, { recursive: true });
        await copyFile(new URL('./types-check.ts', import.meta.url), path.join(dir, 'check.ts'));
        await writeFile(
            path.join(dir, 'tsconfig.json'),
            JSON.stringify({
                compilerOptions: { target: 'ES2022', ...options, strict: true, noEmit: true, skipLibCheck: false },
                files: ['check.ts'],
            }),
        );
        const tsc = path.join(install.repo, 'node_modules', 'typescript', 'bin', 'tsc');
        const { stdout } = await node([tsc, '-p', dir, '--traceResolution'], dir);
        // Resolved through the installed package, not through the repository.
        const resolved = (specifier: string) =>
            stdout.match(new RegExp(`Module name '${specifier}' was successfully resolved to '([^']*)'`))?.[1];
        expect(resolved('tessera-ecs')).toBe(path.join(install.installed, 'dist', 'index.d.ts'));
        expect(resolved('tessera-ecs/raw')).toBe(path.join(install.installed, 'dist', 'load.d.ts'));
    });

    test('value types read as plain objects, and kernel type errors say what a field must be', () => {
        // The compiler's own text, as an editor shows it on hover and in an error.
        const source = `
            import { component, tag, type Query, type World } from 'tessera-ecs';
            const Position = component('Position', { x: 'f32', y: 'f32', path: ['f32', 4] });
            const Health = component('Health', { value: 'i32' });
            const Frozen = tag('Frozen');
            declare const world: World;
            declare const q: Query;
            export const position = world.get(world.spawn(Position), Position);
            export const expired = q.countdown(Health, 'value', 1);
            q.addScaled(Position, 'x', Health, 'value', 1);
            q.fill(Frozen, 'value', 1);
            q.clamp(Position, 'z', 0, 1);
        `;
        const file = path.join(install.project, 'hover.ts');
        const options: ts.CompilerOptions = {
            target: ts.ScriptTarget.ES2022,
            module: ts.ModuleKind.NodeNext,
            moduleResolution: ts.ModuleResolutionKind.NodeNext,
            lib: ['lib.es2022.d.ts', 'lib.dom.d.ts'],
            types: [],
            strict: true,
            noEmit: true,
        };
        const host = ts.createCompilerHost(options);
        const readFile = host.readFile.bind(host);
        host.readFile = (name) => (name === file ? source : readFile(name));
        const fileExists = host.fileExists.bind(host);
        host.fileExists = (name) => name === file || fileExists(name);
        const program = ts.createProgram([file], options, host);
        const checker = program.getTypeChecker();
        const sourceFile = program.getSourceFile(file)!;
        const shown = (name: string) => {
            const statement = sourceFile.statements.find(
                (node): node is ts.VariableStatement =>
                    ts.isVariableStatement(node) && node.declarationList.declarations[0]!.name.getText() === name,
            )!;
            return checker.typeToString(checker.getTypeAtLocation(statement.declarationList.declarations[0]!.name));
        };
        expect(shown('position')).toBe('{ x: number; y: number; path: number[]; }');
        expect(shown('expired')).toMatch(/^Uint32Array\b/);
        const errors = ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
        // countdown takes an i32 field (kernels take every field type); the three others fail, each naming what fits.
        expect(errors).toEqual([
            `Argument of type '"value"' is not assignable to parameter of type '"tessera: addScaled needs a source field of the target's type, f32, and the source component has none"'.`,
            `Argument of type '"value"' is not assignable to parameter of type '"tessera: this component has no fields (a tag); kernels take a field of a component"'.`,
            `Argument of type '"z"' is not assignable to parameter of type '"x" | "y" | "path"'.`,
        ]);
    });
});
