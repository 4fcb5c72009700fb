// The JS-side benchmark (BENCHMARKS.md §1 and §2): tessera, the peers from npm and the raw
// typed-array limit, case by case, in one Node process. `npm run bench` builds and runs it.
//
//   node bench/js/run.mjs [--quick] [--check] [--runs N] [--target-ms M]
//                         [--cases a,b] [--contenders x,y] [--no-write] [--render]
//
// Per case: every contender's setup runs (untimed), then each calibrates a batch of ops until
// one batch takes >= target (500 ms; --quick: 50 ms and 3 runs), then the runs interleave the
// contenders (A B C, B C A, C A B, ...), one timed batch each. Reported: median, min and max
// of the per-op time over the runs, as op/s (suite cases) or ms per tick (scenarios), and the
// speed relative to the best peer and to raw (>1: faster). After timing, each contender's
// check() verifies the state after the exact number of ops it ran; a failed check fails the
// run. --check: no timing, every case's setup + one op + check, exit 1 on any failure.
// Writes bench/results/latest.json and latest.md (not with --check, --no-write or filters).
// --render: only rewrite latest.md from latest.json.
// Each case runs in its own Node process (--worker, with --expose-gc): V8 shares feedback
// between closures of one function literal, so a case run after another of a different size
// can be slowed by the earlier one's type feedback (seen: raw particles_100k 0.26 ms/tick
// alone, 0.66 after particles_10k). Within a case, the contenders share the process.
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { root, resultsDir, benchEnv, parseBenchArgs } from './node-env.mjs';
import { contenders } from './contenders/index.js';
import { CASES, baseCase } from './shared.js';
import { benchCase as measureCase, entriesOf as caseEntries, fmtNum, tableLines, markdownTable, textTable } from './measure.js';

const opts = parseBenchArgs(process.argv.slice(2), import.meta.url, { lists: ['cases', 'contenders'], flags: ['render'] });
const gc = globalThis.gc ?? (() => {});

function versionOf(c) {
    if (c.version) return c.version;
    try {
        return JSON.parse(readFileSync(path.join(root, 'node_modules', c.pkg, 'package.json'), 'utf8')).version;
    } catch {
        return '?';
    }
}
const tesseraVersion = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')).version;
for (const c of contenders) c.version = c.name === 'tessera' ? tesseraVersion : versionOf(c);

for (const name of opts.contenders ?? []) if (!contenders.some((c) => c.name === name)) throw new Error(`unknown contender ${name}`);
for (const name of opts.cases ?? [])
    if (!CASES.includes(baseCase(name))) throw new Error(`unknown case ${name} (cases: ${CASES.join(', ')})`);
const chosen = contenders.filter((c) => !opts.contenders || opts.contenders.includes(c.name));
const caseNames = CASES.filter((c) => !opts.cases || opts.cases.some((x) => baseCase(x) === c));

const entriesOf = (caseName) => caseEntries(chosen, caseName, opts.cases);

async function checkMode() {
    let failed = 0;
    for (const caseName of caseNames) {
        for (const e of entriesOf(caseName)) {
            let inst;
            try {
                inst = await e.contender.cases[e.key]();
                inst.op();
                inst.check(1);
                console.log(`ok    ${e.key.padEnd(34)} ${e.contender.name}`);
            } catch (err) {
                failed++;
                console.log(`FAIL  ${e.key.padEnd(34)} ${e.contender.name}: ${err.message}`);
            } finally {
                try {
                    inst?.dispose?.();
                } catch {
                    /* ignore */
                }
            }
            gc();
        }
    }
    console.log(failed ? `${failed} check(s) failed` : 'all checks passed');
    process.exit(failed ? 1 : 0);
}

const benchCase = (caseName) => measureCase(caseName, { chosen, filter: opts.cases, runs: opts.runs, targetMs: opts.targetMs, gc });

const NOTES = [
    'Cases: bench/js/shared.js. entity_cycle spawns one B per A, as BENCHMARKS.md defines it (the original ecs-benchmark spawned two), so its numbers are not comparable with published ones. observers: per tick, Health set on 100 distinct pseudo-random entities, tag X added to 10 and removed from 10, tag Y likewise; the three observers (changed Health: sum of the values; added X; removed Y) must see exactly 100 / 10 / 10. particles: whole-tick lifetimes, exactly 100 expire and 100 respawn per tick, population constant. set_heavy: one set per entity on 10% of 100k. get_heavy: one read per entity on 10% of 100k, summed. churn: per tick a tag added to 1,000 and removed from 1,000, 1,000 oldest despawned and 1,000 spawned.',
    'tessera: public API only (dist/). Loops over chunks with columns and count in locals. Per-entity rows use world.spawn / despawn / add / remove (inside a query loop they are deferred to the loop\'s end; views taken in the loop stay valid through them); "(batch API)" rows use spawnMany / despawnMany / addAll / removeAll / despawnAll (entity_cycle batch spawns the Bs with A\'s values as columns, B.columns({ value })); "(kernels)" uses addScaled + countdown in wasm. Observers are subscriptions drained each tick, then world.tick(). set_heavy and observers write through world.set(e, C, field, v), get_heavy reads through world.get(e, C, field); "(field)" rows use a handle made once, world.field(C, field), with its get(e) / set(e, v); "set_heavy (tracked)" writes a component a changed subscription watches (drained each tick). Each set_heavy / get_heavy row has an op function of its own, as a game\'s systems are (V8 shares type feedback between the closures of one function literal).',
    'raw: plain typed arrays, no ECS, each field in the best layout for the loop (one contiguous array where an ECS splits it by archetype; particles dense with swap-remove): the limit for iteration. Its observers are a hand-written dirty list with a dedup bitmap (the cheapest possible), its set_heavy a plain array store.',
    "bitecs 0.4: our own SoA typed arrays indexed by entity id, query(world, terms) per system call; addEntity + addComponent, removeEntity, removeComponent. Observers: setComponent with an onSet observer that writes the store and feeds a deduplicated dirty list, onAdd(X) / onRemove(Y) observers feeding lists. set_heavy writes the store array (bitecs' way to set a field).",
    "piecs 0.4: bring-your-own typed arrays indexed by entity id; entity systems run by world.update(), iterating backwards (as the ecs-benchmark piecs cases); prefabs for spawning; add_remove uses transformEntity between two prefabs as piecs' own benchmark case does; churn uses addComponent / removeComponent. set_heavy writes the array.",
    'koota 0.6: SoA traits (plain JS arrays), hot loops through query.useStores with entities[i].id() (its documented fast path), cached queries; world.spawn, entity.add / remove / destroy / set; Changed / Added / Removed query modifiers for observers. Values kept i32 with `| 0` (plain-number stores). koota extends Number.prototype; it is loaded in every case process.',
    'miniplex 2: object entities, world.with(...) queries walked backwards over query.entities, world.add / remove / addComponent / removeComponent; values mutated in place (`| 0` keeps them i32).',
    "Not timed: setup, and each row's check. No per-op allocation rule is imposed: every library does what its API needs (e.g. koota/miniplex allocate objects on spawn, tessera allocates the init object of world.spawn(B({ value }))). gc is not forced between runs (GC pauses of allocating libraries show in their max).",
    "The contenders of a case share its process, and with it V8's state: once any ArrayBuffer of a process has been detached (a wasm memory's growth detaches its old buffer), V8 tests every typed-array access of all code for it, from then on. tessera's memory starts at 256 MiB and no case's rows grow it (checked case by case, each row's setup and 200 ops), so no contender runs with that test; up to 2026-11-27 tessera's memory grew at its first loop and every contender of every case ran with it.",
];

function markdown(env, rows, missing) {
    const L = [];
    L.push('# JS ECS benchmark: tessera, peers and the typed-array limit (`npm run bench`)', '');
    L.push(`${env.date} · ${env.cpu} (${env.cores} cores) · ${env.os} · Node ${env.node} · tessera at ${env.git}`, '');
    L.push('Versions: ' + env.contenders.map((c) => `${c.name} ${c.version}`).join(' · '), '');
    L.push(
        `${env.runs} timed runs per row, each one batch of ops calibrated to take >= ${env.targetMs} ms, ` +
            'contenders interleaved run by run (rotating order); each case runs in a fresh Node process ' +
            "(so no case inherits another's JIT feedback), all contenders of a case in that one process; setup is not timed. " +
            'Suite cases (BENCHMARKS.md §1) in op/s, higher is better; scenarios (§2) in ms per tick, lower is better. ' +
            'median, min and max are over the runs. "vs best peer" and "vs raw" are speed ratios of medians ' +
            '(>1: faster than the best of bitecs/piecs/koota/miniplex in that case, or than the raw typed-array loop). ' +
            "After timing, every row's state was checked against the exact number of ops it ran (a failed check shows FAILED). Rows in parentheses are other ways to do the same work " +
            "(tessera's batch API, its wasm kernels). A dash: the contender cannot express the case (reasons below). " +
            'Source: bench/js/ (shared.js defines the cases; contenders/*.js one file per library). ' +
            'Ratios are only meaningful within this one run; the machine is shared and noisy.',
        '',
    );
    L.push(...markdownTable(tableLines(rows, missing)));
    L.push('');
    // Compact view: tessera's best row per case beside each peer and raw.
    const names = env.contenders.map((c) => c.name);
    L.push('## Medians side by side', '');
    L.push('tessera: its per-entity / JS-loop row first, then its best other row in parentheses.', '');
    L.push('| case | unit | ' + names.join(' | ') + ' |');
    L.push('|---|---|' + names.map(() => '--:').join('|') + '|');
    for (const caseName of [...new Set(rows.map((r) => r.case))]) {
        const rs = rows.filter((r) => r.case === caseName);
        const unit = rs[0].unit;
        const cells = names.map((n) => {
            const mine = rs.filter((r) => r.contender === n && r.median != null);
            if (!mine.length) return rs.some((r) => r.contender === n) ? 'FAILED' : '—';
            const base = mine.find((r) => r.key === caseName) ?? mine[0];
            const others = mine.filter((r) => r !== base);
            let s = fmtNum(base.median);
            if (others.length) {
                const better = others.reduce((a, b) => (a.msMedian <= b.msMedian ? a : b));
                s += ` (${fmtNum(better.median)} ${better.key.slice(caseName.length + 2, -1)})`;
            }
            return s;
        });
        L.push(`| ${caseName} | ${unit} | ${cells.join(' | ')} |`);
    }
    L.push('');
    L.push('## How each contender does the work', '');
    for (const n of NOTES) L.push(`- ${n}`);
    L.push('');
    if (missing.length) {
        L.push('## Not expressible', '');
        const byC = {};
        for (const m of missing) (byC[`${m.contender}: ${m.reason}`] ??= []).push(m.case);
        for (const [k, cs] of Object.entries(byC)) L.push(`- ${k} (${cs.join(', ')})`);
        L.push('');
    }
    return L.join('\n');
}

if (opts.check) await checkMode();
if (opts.render) {
    const json = JSON.parse(readFileSync(path.join(resultsDir, 'latest.json'), 'utf8'));
    writeFileSync(path.join(resultsDir, 'latest.md'), markdown(json.env, json.results, json.missing));
    console.log('wrote bench/results/latest.md from latest.json');
    process.exit(0);
}

const env = {
    ...benchEnv(opts),
    gc: 'each case runs in a worker process started with --expose-gc; gc() after the case',
    contenders: chosen.map((c) => ({ name: c.name, version: c.version, kind: c.kind })),
};
if (!opts.worker)
    console.log(
        `JS ECS benchmark · Node ${env.node} · ${env.cpu} (${env.cores} cores) · ${opts.runs} runs of >= ${opts.targetMs} ms batches`,
    );
if (!opts.worker) console.log('contenders: ' + env.contenders.map((c) => `${c.name} ${c.version}`).join(', '));
if (opts.worker) {
    const out = await benchCase(caseNames[0]);
    process.stdout.write(JSON.stringify(out));
    process.exit(0);
}

function runWorker(caseName) {
    const names = opts.cases?.filter((x) => baseCase(x) === caseName) ?? [caseName];
    const args = [
        '--expose-gc',
        fileURLToPath(import.meta.url),
        '--worker',
        '--cases',
        names.join(','),
        '--runs',
        String(opts.runs),
        '--target-ms',
        String(opts.targetMs),
    ];
    if (opts.contenders) args.push('--contenders', opts.contenders.join(','));
    const r = spawnSync(process.execPath, args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 64 << 20 });
    if (r.status !== 0) throw new Error(`worker for ${caseName} exited with ${r.status ?? r.signal}`);
    return JSON.parse(r.stdout);
}

const allRows = [],
    allMissing = [];
const started = performance.now();
for (const caseName of caseNames) {
    const t0 = performance.now();
    const { rows, missing } = runWorker(caseName);
    allRows.push(...rows);
    allMissing.push(...missing);
    const summary = rows.map((r) => `${r.label} ${r.median == null ? 'FAILED' : fmtNum(r.median)}`).join(', ');
    console.log(`  ${caseName} (${((performance.now() - t0) / 1000).toFixed(1)} s): ${summary}`);
}
console.log(`\n(${((performance.now() - started) / 1000).toFixed(0)} s)\n`);
for (const l of textTable(tableLines(allRows, allMissing))) console.log(l);
const failed = allRows.filter((r) => r.median == null);
if (opts.write && !opts.cases && !opts.contenders) {
    mkdirSync(resultsDir, { recursive: true });
    const json = {
        env,
        results: allRows.map(({ samples, ...r }) => ({ ...r, samplesMsPerOp: samples })),
        missing: allMissing,
    };
    writeFileSync(path.join(resultsDir, 'latest.json'), JSON.stringify(json, null, 2) + '\n');
    writeFileSync(path.join(resultsDir, 'latest.md'), markdown(env, allRows, allMissing));
    console.log('\nwrote bench/results/latest.json and bench/results/latest.md');
}
if (failed.length) {
    console.error(`\n${failed.length} row(s) failed: ${failed.map((r) => `${r.case}/${r.label}: ${r.error}`).join('; ')}`);
    process.exit(1);
}
