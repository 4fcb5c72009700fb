// The in-browser benchmark (web/bench/) in headless Chromium: builds the page with the
// repository's Vite into a temp dir, serves it on 127.0.0.1 (web/serve.mjs), runs it
// (web/chromium.mjs; fails at the first page error), prints the table and writes
// bench/results/browser.json + browser.md. `npm run bench:browser` builds dist/ first.
//
//   node bench/js/run-browser.mjs [--quick] [--runs N] [--target-ms M]
//                                 [--cases a,b] [--contenders x,y] [--no-write] [--timeout-s S]
//                                 [--screenshot page.png] [--render]
//
// Defaults (the page's): 3 runs of >= 200 ms batches; --quick: 50 ms. Each case runs in its own
// module worker. Writes the results only for unfiltered runs (not with --cases, --contenders or
// --no-write), as run.mjs does. --render: only rewrite browser.md from browser.json.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile, mkdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { serve } from '../../web/serve.mjs';
import { launchChromium, watchPage } from '../../web/chromium.mjs';
import { tableLines, markdownTable, textTable } from './measure.js';
import { root, resultsDir, cpuModel, osName, gitState, printUsage } from './node-env.mjs';
const run = promisify(execFile);

function parseArgs(argv) {
    const o = { quick: false, runs: null, targetMs: null, cases: null, contenders: null, write: true, timeoutS: 900 };
    for (let i = 0; i < argv.length; i++) {
        const a = argv[i];
        const next = () => {
            if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
            return argv[++i];
        };
        if (a === '--quick') o.quick = true;
        else if (a === '--runs') o.runs = Number(next());
        else if (a === '--target-ms') o.targetMs = Number(next());
        else if (a === '--cases') o.cases = next();
        else if (a === '--contenders') o.contenders = next();
        else if (a === '--no-write') o.write = false;
        else if (a === '--timeout-s') o.timeoutS = Number(next());
        else if (a === '--screenshot') o.screenshot = next();
        else if (a === '--render') o.render = true;
        else if (a === '--help' || a === '-h') printUsage(import.meta.url);
        else throw new Error(`unknown argument ${a}`);
    }
    return o;
}

const opts = parseArgs(process.argv.slice(2));
const query = new URLSearchParams({ autorun: '1' });
if (opts.quick) query.set('quick', '1');
if (opts.runs != null) query.set('runs', String(opts.runs));
if (opts.targetMs != null) query.set('target', String(opts.targetMs));
if (opts.cases) query.set('cases', opts.cases);
if (opts.contenders) query.set('contenders', opts.contenders);

function markdown(env, rows, missing) {
    const L = [];
    L.push('# JS ECS benchmark in the browser: tessera, peers and the typed-array limit (`npm run bench:browser`)', '');
    L.push(`${env.date} · Chromium ${env.chromium} (headless) · ${env.cpu} (${env.cores} cores) · ${env.os} · tessera at ${env.git}`, '');
    L.push('Versions: ' + env.contenders.map((c) => `${c.name} ${c.version}`).join(' · '), '');
    if (env.filter) L.push(`Filtered run: ${env.filter}.`, '');
    L.push(
        `The cases of bench/results/latest.md (the same bench/js/ modules, bundled by Vite) run by the page web/bench/ ` +
            `in headless Chromium. ${env.runs} timed runs per row, each one batch of ops calibrated to take >= ${env.targetMs} ms, ` +
            'contenders interleaved run by run (rotating order); each case runs in a fresh module worker (its own V8 isolate, ' +
            "so no case inherits another's JIT feedback), all contenders of a case in that one worker; setup is not timed. " +
            'Suite cases in op/s, higher is better; scenarios in ms per tick, lower is better. median, min and max are over the runs. ' +
            '"vs best peer" and "vs raw" are speed ratios of medians. After timing, every row\'s state was checked against the exact ' +
            'number of ops it ran (a failed check shows FAILED). A dash: the contender cannot express the case (see latest.md). ' +
            'Timer: performance.now() in a page that is not cross-origin isolated (coarsened to 0.1 ms; negligible against the batch time). ' +
            'Ratios are only meaningful within this one run; the machine is shared and noisy.',
        '',
    );
    L.push(...markdownTable(tableLines(rows, missing)));
    L.push('');
    return L.join('\n');
}

if (opts.render) {
    const json = JSON.parse(await readFile(path.join(resultsDir, 'browser.json'), 'utf8'));
    await writeFile(path.join(resultsDir, 'browser.md'), markdown(json.env, json.results, json.missing));
    console.log('wrote bench/results/browser.md from browser.json');
    process.exit(0);
}

const temp = await mkdtemp(path.join(os.tmpdir(), 'tessera-bench-browser-'));
let server, context;
let exitCode = 0;
try {
    const outDir = path.join(temp, 'site');
    const vite = path.join(root, 'node_modules', 'vite', 'bin', 'vite.js');
    try {
        await run(process.execPath, [vite, 'build', path.join(root, 'web/bench'), '--base', './', '--outDir', outDir, '--emptyOutDir'], {
            cwd: root,
            env: { ...process.env, NO_COLOR: '1' },
        });
    } catch (error) {
        throw new Error(`vite build failed:\n${error.stdout ?? ''}\n${error.stderr ?? ''}`, { cause: error });
    }
    let base;
    ({ server, url: base } = await serve(outDir, 0));
    const url = `${base}?${query}`;
    context = await launchChromium(temp);
    const chromiumVersion = context.browser()?.version() ?? '?';
    const page = await context.newPage();
    const { failed } = watchPage(page);
    page.on('console', (m) => {
        if (m.type() === 'log' || m.type() === 'info') console.log(`[page] ${m.text()}`);
    });
    console.log(`JS ECS benchmark in headless Chromium ${chromiumVersion} · ${url}`);
    await page.goto(url);
    // Echo the page's progress line while it runs.
    let last = '';
    const ticker = setInterval(async () => {
        try {
            const text = await page.locator('#progress').textContent();
            if (text && text !== last) {
                last = text;
                console.log(`  ${text}`);
            }
        } catch {
            /* page closing */
        }
    }, 1000);
    try {
        await Promise.race([
            page.waitForFunction(() => window.__benchDone === true, undefined, { timeout: opts.timeoutS * 1000, polling: 500 }),
            failed,
        ]);
    } finally {
        clearInterval(ticker);
    }
    const result = await page.evaluate(() => window.__benchResults);
    if (opts.screenshot) await page.screenshot({ path: path.resolve(opts.screenshot), fullPage: true });
    const filter = [opts.cases && `cases ${opts.cases}`, opts.contenders && `contenders ${opts.contenders}`].filter(Boolean).join(', ');
    const env = { ...result.env, chromium: chromiumVersion, os: osName(), cpu: cpuModel(), git: gitState(), filter: filter || null };
    const json = { env, results: result.results, missing: result.missing };
    console.log('');
    for (const l of textTable(tableLines(json.results, json.missing))) console.log(l);
    if (opts.write && !opts.cases && !opts.contenders) {
        await mkdir(resultsDir, { recursive: true });
        await writeFile(path.join(resultsDir, 'browser.json'), JSON.stringify(json, null, 2) + '\n');
        await writeFile(path.join(resultsDir, 'browser.md'), markdown(env, json.results, json.missing));
        console.log('\nwrote bench/results/browser.json and bench/results/browser.md');
    }
    const bad = json.results.filter((r) => r.median == null);
    if (bad.length) {
        console.error(`\n${bad.length} row(s) failed: ${bad.map((r) => `${r.case}/${r.label}: ${r.error}`).join('; ')}`);
        exitCode = 1;
    }
} finally {
    await context?.close().catch(() => {});
    await new Promise((done) => (server ? server.close(() => done()) : done()));
    await rm(temp, { recursive: true, force: true });
}
process.exit(exitCode);
