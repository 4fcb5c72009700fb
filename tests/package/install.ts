// Vitest global setup for the install tests: what a user does. `npm pack` the built package
// (run `npm run build` first), then `npm install` the tarball into an empty project in a temp
// dir. The tests (package.test.ts here, ../browser/browser.test.ts) get the paths through
// inject('install'); the temp dir goes when the run ends (TES_KEEP_TMP=1 keeps it to look at).
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { TestProject } from 'vitest/node';

export interface PackedFile {
    path: string;
    size: number;
}

export interface InstallInfo {
    /** The repository root. */
    repo: string;
    /** The temp dir: the tarball, the npm cache, the project. */
    temp: string;
    /** The tarball's absolute path. */
    tarball: string;
    /** Files in the tarball (paths relative to the package root), sorted. */
    files: PackedFile[];
    /** Tarball size in bytes (gzipped), and the sum of its files. */
    size: number;
    unpackedSize: number;
    /** The empty project the tarball was installed into ("type": "module"). */
    project: string;
    /** node_modules/tessera-ecs in that project. */
    installed: string;
}

declare module 'vitest' {
    export interface ProvidedContext {
        install: InstallInfo;
    }
}

const run = promisify(execFile);
const repo = fileURLToPath(new URL('../..', import.meta.url)).replace(/\/$/, '');

/** Runs npm with the given arguments; the error names the command and carries its output. */
async function npm(args: string[], cwd: string): Promise<string> {
    try {
        const { stdout } = await run('npm', args, { cwd, maxBuffer: 16 << 20 });
        return stdout;
    } catch (error) {
        const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string };
        throw new Error(`npm ${args.join(' ')} failed in ${cwd}:\n${stdout}\n${stderr}`, { cause: error });
    }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
    if (!existsSync(path.join(repo, 'dist', 'tessera.wasm'))) {
        throw new Error('tessera install tests: dist/ is not built: run `npm run build` first');
    }
    const temp = await mkdtemp(path.join(tmpdir(), 'tessera-install-'));
    const teardown = async () => {
        if (process.env.TES_KEEP_TMP) console.log(`tessera install tests: kept ${temp}`);
        else await rm(temp, { recursive: true, force: true });
    };
    try {
        // A private cache, and --offline: the package has no dependencies, so installing it must
        // not need the registry (and must not touch the user's cache).
        const common = ['--cache', path.join(temp, 'npm-cache'), '--no-update-notifier', '--loglevel=error'];
        const [packed] = JSON.parse(await npm(['pack', '--json', '--pack-destination', temp, ...common], repo)) as {
            filename: string;
            size: number;
            unpackedSize: number;
            files: PackedFile[];
        }[];
        if (!packed) throw new Error('npm pack reported no package');

        const projectDir = path.join(temp, 'project');
        await mkdir(projectDir);
        await writeFile(
            path.join(projectDir, 'package.json'),
            `${JSON.stringify({ name: 'tessera-install-check', version: '1.0.0', private: true, type: 'module' }, null, 2)}\n`,
        );
        const tarball = path.join(temp, path.basename(packed.filename));
        await npm(['install', tarball, '--offline', '--no-audit', '--no-fund', ...common], projectDir);

        project.provide('install', {
            repo,
            temp,
            tarball,
            files: packed.files.map(({ path, size }) => ({ path, size })).sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0)),
            size: packed.size,
            unpackedSize: packed.unpackedSize,
            project: projectDir,
            installed: path.join(projectDir, 'node_modules', 'tessera-ecs'),
        });
    } catch (error) {
        await teardown();
        throw error;
    }
    return teardown;
}
