// What the Node runners (run.mjs, run-browser.mjs, sparse.mjs, snapshot.mjs) share: the
// repository's paths, the machine and git state their results record, --help (a script's
// leading comment block), and the timing runners' command line.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const resultsDir = path.join(root, 'bench/results');

export const cpuModel = () => os.cpus()[0]?.model?.trim() ?? '?';
export const osName = () => `${os.type()} ${os.release()}`;

// The commit the results were measured at, flagged when src/ or bindings/ have uncommitted changes.
export function gitState() {
    try {
        const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim();
        const dirty = execFileSync('git', ['status', '--porcelain', '--', 'src', 'bindings'], { cwd: root, encoding: 'utf8' }).trim();
        return dirty ? `${head} + uncommitted changes in src/ or bindings/` : head;
    } catch {
        return '?';
    }
}

// Where a benchmark ran and with what options: the env record of a results file.
export function benchEnv(opts) {
    return {
        date: new Date().toISOString(),
        node: process.version,
        cpu: cpuModel(),
        cores: os.cpus().length,
        os: osName(),
        runs: opts.runs,
        targetMs: opts.targetMs,
        quick: opts.quick,
        git: gitState(),
    };
}

// The same as the one line a results file starts with: date · CPU (cores) · Node · commit.
export const envLine = () =>
    `${new Date().toISOString()} · ${cpuModel()} (${os.cpus().length} cores) · Node ${process.version} · tessera at ${gitState()}`;

// Prints the leading `//` comment block of the script at `moduleUrl` (its usage) and exits.
export function printUsage(moduleUrl) {
    const lines = readFileSync(fileURLToPath(moduleUrl), 'utf8').split('\n');
    const end = lines.findIndex((l) => !l.startsWith('//'));
    console.log(lines.slice(0, end < 0 ? lines.length : end).join('\n'));
    process.exit(0);
}

// The timing runners' command line: --quick, --check, --runs N, --target-ms N, --no-write,
// --worker, --help, plus the script's own `lists` (--name a,b,c: an array) and `flags` (no
// value). Runs and batch length default to 5 x 500 ms, or 3 x 50 ms with --quick.
export function parseBenchArgs(argv, moduleUrl, { lists = [], flags = [] } = {}) {
    const key = (name) => name.replace(/-(.)/g, (_, c) => c.toUpperCase());
    const o = { quick: false, check: false, runs: null, targetMs: null, write: true, worker: false };
    for (const name of lists) o[key(name)] = null;
    for (const name of flags) o[key(name)] = false;
    for (let i = 0; i < argv.length; i++) {
        const a = argv[i];
        const next = () => {
            if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
            return argv[++i];
        };
        const name = a.slice(2);
        if (a === '--quick') o.quick = true;
        else if (a === '--check') o.check = true;
        else if (a === '--runs') o.runs = Number(next());
        else if (a === '--target-ms') o.targetMs = Number(next());
        else if (a === '--no-write') o.write = false;
        else if (a === '--worker') o.worker = true;
        else if (a === '--help' || a === '-h') printUsage(moduleUrl);
        else if (lists.includes(name))
            o[key(name)] = next()
                .split(',')
                .map((s) => s.trim())
                .filter(Boolean);
        else if (flags.includes(name)) o[key(name)] = true;
        else throw new Error(`unknown argument ${a}`);
    }
    o.runs ??= o.quick ? 3 : 5;
    o.targetMs ??= o.quick ? 50 : 500;
    return o;
}
