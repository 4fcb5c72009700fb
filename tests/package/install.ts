// Vitest global setup for the install tests: what a maintainer and then a user do. A clean
// checkout of the repository (the files git tracks, and new ones it does not ignore, copied into
// a temp dir: no dist/, no build/, nothing ignored, as a fresh clone holds them), where `npm pack`
// builds what it ships (the `prepack` script: the wasm and the tsc output); then `npm install` of
// the tarball into an empty project. The tests (package.test.ts here, ../browser/browser.test.ts)
// get the paths through inject('install'); the temp dir goes when the run ends (TES_KEEP_TMP=1
// keeps it to look at).
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
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
    /** The clean checkout that was packed (its dist/ built by `npm pack`'s prepack). */
    checkout: string;
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

/** Runs a command; the error names it and carries its output. */
async function command(file: string, args: string[], cwd: string): Promise<string> {
    try {
        const { stdout } = await run(file, args, { cwd, maxBuffer: 64 << 20 });
        return stdout;
    } catch (error) {
        const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string };
        throw new Error(`${file} ${args.join(' ')} failed in ${cwd}:\n${stdout}\n${stderr}`, { cause: error });
    }
}

const npm = (args: string[], cwd: string) => command('npm', args, cwd);

/**
 * Copies the files of the repository's working tree that a commit would hold (tracked, or new
 * and not ignored; deleted ones left out) into `dir`, and links node_modules: the dev
 * dependencies, which a maintainer's fresh clone gets from the lockfile with `npm ci`.
 */
async function cleanCheckout(dir: string): Promise<void> {
    const listed = await command('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], repo);
    const files = [...new Set(listed.split('\0').filter((file) => file !== ''))];
    for (const file of files) {
        const from = path.join(repo, file);
        if (!existsSync(from)) continue; // deleted in the working tree
        await mkdir(path.dirname(path.join(dir, file)), { recursive: true });
        await copyFile(from, path.join(dir, file));
    }
    if (existsSync(path.join(dir, 'dist')) || existsSync(path.join(dir, 'build'))) {
        throw new Error('tessera install tests: the clean checkout holds dist/ or build/: are they ignored by git?');
    }
    await symlink(path.join(repo, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
    const temp = await mkdtemp(path.join(tmpdir(), 'tessera-install-'));
    const teardown = async () => {
        if (process.env.TES_KEEP_TMP) console.log(`tessera install tests: kept ${temp}`);
        else await rm(temp, { recursive: true, force: true });
    };
    try {
        const checkout = path.join(temp, 'checkout');
        await cleanCheckout(checkout);
        // A private cache, and --offline: the package has no dependencies, so installing it must
        // not need the registry (and must not touch the user's cache).
        const common = ['--cache', path.join(temp, 'npm-cache'), '--no-update-notifier', '--loglevel=error'];
        // `npm pack` runs prepack, whose build (cmake, emcc, tsc) also writes to stdout: the
        // JSON report is the last thing printed, from its last line that opens an array.
        const stdout = await npm(['pack', '--json', '--pack-destination', temp, ...common], checkout);
        const report = stdout.slice(stdout.lastIndexOf('\n[\n') + 1);
        const [packed] = JSON.parse(report) as {
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
            checkout,
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
