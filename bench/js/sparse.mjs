// The sparse-vs-archetype trade-off (issue 7), side by side: the same work with a component
// stored in archetype chunks (the default, `storage: 'table'`) and in a sparse set
// (`storage: 'sparse'`). `npm run bench:sparse` runs it (build first: `npm run build`).
//
//   node bench/js/sparse.mjs [--quick] [--check] [--runs N] [--target-ms M] [--groups a,b] [--no-write]
//
// Groups (each in its own Node process started with --expose-gc; the rows of a group share it,
// interleaved run by run, through measure.js benchCase as `npm run bench` does):
// - add_remove tag / add_remove data: BENCHMARKS.md §1 add_remove (1,000 entities with A; one
//   op adds B to every A, then removes B from every B, per entity through world.add /
//   world.remove inside query loops), with B a tag (`component(name, {})`) or B = { v: f32 },
//   stored as archetype or sparse. "(handles)" rows: the same adds / removes over the spawned
//   handles outside any query loop (nothing deferred); "(batch API)": qA.addAll(B), qB.removeAll(B).
// - iter P%: 100,000 entities with Position {x,y: f32} and Velocity {x,y: f32}; P% of them
//   (a seeded random choice, M added in random order) also have the tag M. One op: one run of
//   { all: [Position, Velocity, M] }, x[i] += vx[i] * dt over the rows the chunk gives (every row
//   of an unfiltered chunk; chunk.rows when filtered, as a sparse term makes it). Rows: M an
//   archetype tag, M sparse, the baseline { all: [Position, Velocity] } over all 100,000, M sparse
//   added in spawn order (the sparse set already in chunk order), and M sparse queried as
//   { all: [Position, Velocity], any: [M] } (the same entities, found by checking every row).
// - none 10%: the same with { all: [Position, Velocity], none: [M] }, M on 10%.
// Per row: setup (untimed), calibration to >= target ms per batch (500; --quick: 50 and 3
// runs), runs interleaved (5), median / min / max. After timing every row checks the state for
// the exact number of ops it ran (counts, every entity's x, has(B)); a failed check fails the run.
// --check: setup + one op + check per row, no timing. Writes bench/results/sparse.json and
// sparse.md (not with --check, --no-write or --groups).
import { spawnSync } from 'node:child_process';
import { writeFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { root, resultsDir, benchEnv, parseBenchArgs } from './node-env.mjs';
import { benchCase, fmtNum, fmtRatio } from './measure.js';
import { assert, mulberry32 } from './shared.js';
import { createWorld, component } from '../../dist/index.js';

// ---------------------------------------------------------------------------------------------
// Components: each storage its own definition (a definition is registered once per world).

const V = { value: 'i32' };
const A = component('sparse_bench_A', V);
const B = {
    tag: {
        archetype: component('sparse_bench_Btag', {}),
        sparse: component('sparse_bench_Btag_sparse', {}, { storage: 'sparse' }),
    },
    data: {
        archetype: component('sparse_bench_Bdata', { v: 'f32' }),
        sparse: component('sparse_bench_Bdata_sparse', { v: 'f32' }, { storage: 'sparse' }),
    },
};
const Position = component('sparse_bench_Position', { x: 'f32', y: 'f32' });
const Velocity = component('sparse_bench_Velocity', { x: 'f32', y: 'f32' });
const M = {
    archetype: component('sparse_bench_M', {}),
    sparse: component('sparse_bench_M_sparse', {}, { storage: 'sparse' }),
};

const ADD_N = 1000;
const ITER_N = 100_000;
// dt and vx (1..4) keep every x exact in f32: x = ops * vx * dt while below 2^24.
const DT = 0.5;
const vxOf = (i) => 1 + (i % 4);

// ---------------------------------------------------------------------------------------------
// add_remove: the suite's case (bench/js/contenders/tessera.js), with B of either storage.
// The removal loop visits the rows the chunk gives: chunk.rows when filtered (a sparse term
// makes the run collect its rows), else 0..count-1, as the existing case does.

// mode: 'loops' (the suite case), 'handles' (world.add / world.remove over the spawned handles,
// outside any query loop: nothing deferred), 'batch' (addAll / removeAll).
function addRemove(Bc, mode) {
    return async () => {
        const world = await createWorld();
        const handles = world.spawnMany(ADD_N, A);
        const qA = world.query({ all: [A] }),
            qB = world.query({ all: [Bc] });
        let removed = 0;
        const perEntity = () => {
            for (const chunk of qA) {
                let ids = chunk.entities;
                for (let i = 0, n = chunk.count; i < n; i++) {
                    if (ids.length === 0) ids = chunk.entities; // memory grew while recording
                    world.add(ids[i], Bc);
                }
            }
            removed = 0;
            for (const chunk of qB) {
                let ids = chunk.entities;
                if (chunk.filtered) {
                    let rows = chunk.rows;
                    for (let k = 0, n = rows.length; k < n; k++) {
                        if (ids.length === 0 || rows.length === 0) {
                            ids = chunk.entities;
                            rows = chunk.rows;
                        }
                        world.remove(ids[rows[k]], Bc);
                        removed++;
                    }
                } else {
                    for (let i = 0, n = chunk.count; i < n; i++) {
                        if (ids.length === 0) ids = chunk.entities;
                        world.remove(ids[i], Bc);
                        removed++;
                    }
                }
            }
        };
        const batched = () => {
            qA.addAll(Bc);
            removed = qB.count();
            qB.removeAll(Bc);
        };
        const direct = () => {
            for (let i = 0; i < ADD_N; i++) world.add(handles[i], Bc);
            removed = 0;
            for (let i = 0; i < ADD_N; i++) {
                world.remove(handles[i], Bc);
                removed++;
            }
        };
        return {
            op: mode === 'batch' ? batched : mode === 'handles' ? direct : perEntity,
            check() {
                assert(removed === ADD_N, `add_remove removed ${removed}`);
                assert(qA.count() === ADD_N && qB.count() === 0, `add_remove counts A ${qA.count()} B ${qB.count()}`);
                const ids = qA.entities();
                for (const e of ids) assert(!world.has(e, Bc), 'add_remove: B left on an entity');
                if (!Bc.isTag) {
                    // The data is really stored: a value written is read back, and goes with the remove.
                    world.add(ids[7], Bc({ v: 2.5 }));
                    assert(world.get(ids[7], Bc, 'v') === 2.5 && qB.count() === 1, 'add_remove data value');
                    world.remove(ids[7], Bc);
                    assert(qB.count() === 0 && !world.has(ids[7], Bc), 'add_remove data remove');
                }
            },
            dispose: () => world.destroy(),
        };
    };
}

// ---------------------------------------------------------------------------------------------
// Iteration of a query with (or without) an M term.

// A seeded permutation of 0..n-1 (mulberry32 + Fisher-Yates): the M entities and their order.
function permutation(n, seed) {
    const rand = mulberry32(seed);
    const p = new Uint32Array(n);
    for (let i = 0; i < n; i++) p[i] = i;
    for (let i = n - 1; i > 0; i--) {
        const j = Math.floor(rand() * (i + 1));
        const t = p[i];
        p[i] = p[j];
        p[j] = t;
    }
    return p;
}

// One run: x += vx * dt over the rows each chunk gives. Returns the rows visited.
function integrate(q) {
    let visited = 0;
    for (const chunk of q) {
        const x = chunk.column(Position, 'x'),
            vx = chunk.column(Velocity, 'x');
        if (chunk.filtered) {
            const rows = chunk.rows;
            const n = rows.length;
            for (let k = 0; k < n; k++) {
                const i = rows[k];
                x[i] += vx[i] * DT;
            }
            visited += n;
        } else {
            const n = chunk.count;
            for (let i = 0; i < n; i++) x[i] += vx[i] * DT;
            visited += n;
        }
    }
    return visited;
}

// storage: 'archetype' | 'sparse' | null (no M at all: the baseline). term: 'all' | 'none' |
// 'any' ({ all: [Position, Velocity], any: [M] }: the same entities as 'all').
// inOrder: M added in spawn order (the same entities), so the sparse set lists them in chunk
// order; else in the permutation's (random) order.
function iterate(p, storage, term, inOrder = false) {
    return async () => {
        const world = await createWorld();
        const ids = world.spawnMany(ITER_N, Position, Velocity);
        for (let i = 0; i < ITER_N; i++) world.set(ids[i], Velocity, 'x', vxOf(i));
        const members = Math.round(p * ITER_N);
        const isMember = new Uint8Array(ITER_N);
        let q;
        if (storage) {
            const Mc = M[storage];
            const order = permutation(ITER_N, 0x5eed + members);
            for (let k = 0; k < members; k++) isMember[order[k]] = 1;
            if (inOrder) {
                for (let i = 0; i < ITER_N; i++) if (isMember[i]) world.add(ids[i], Mc);
            } else {
                for (let k = 0; k < members; k++) world.add(ids[order[k]], Mc);
            }
            q = world.query(term === 'all' ? { all: [Position, Velocity, Mc] } : { all: [Position, Velocity], [term]: [Mc] });
        } else {
            q = world.query({ all: [Position, Velocity] });
        }
        // The entities each run must visit.
        const visits = (i) => (!storage ? true : term === 'none' ? isMember[i] === 0 : isMember[i] === 1);
        let want = 0;
        for (let i = 0; i < ITER_N; i++) if (visits(i)) want++;
        let visited = -1;
        return {
            visitsPerOp: want,
            op() {
                visited = integrate(q);
            },
            check(k) {
                assert(visited === want, `visited ${visited} rows, expected ${want}`);
                for (let i = 0; i < ITER_N; i++) {
                    const expect = visits(i) ? k * vxOf(i) * DT : 0;
                    const x = world.get(ids[i], Position, 'x');
                    assert(x === expect, `entity ${i}: x ${x}, expected ${expect} after ${k} runs`);
                }
            },
            dispose: () => world.destroy(),
        };
    };
}

// ---------------------------------------------------------------------------------------------
// Groups: each a "case" for measure.js, its rows pseudo-contenders (archetype, sparse, baseline).

const ITER_PS = [0.01, 0.1, 0.5, 1];
const pct = (p) => `${+(p * 100).toFixed(2)}%`;

const GROUPS = {};
for (const kind of ['tag', 'data']) {
    GROUPS[`add_remove ${kind}`] = {
        kind: 'add_remove',
        b: kind,
        rows: {
            archetype: {
                [`add_remove ${kind}`]: addRemove(B[kind].archetype, 'loops'),
                [`add_remove ${kind} (handles)`]: addRemove(B[kind].archetype, 'handles'),
                [`add_remove ${kind} (batch API)`]: addRemove(B[kind].archetype, 'batch'),
            },
            sparse: {
                [`add_remove ${kind}`]: addRemove(B[kind].sparse, 'loops'),
                [`add_remove ${kind} (handles)`]: addRemove(B[kind].sparse, 'handles'),
                [`add_remove ${kind} (batch API)`]: addRemove(B[kind].sparse, 'batch'),
            },
        },
    };
}
for (const p of ITER_PS) {
    const name = `iter ${pct(p)}`;
    GROUPS[name] = {
        kind: 'iter',
        term: 'all',
        p,
        rows: {
            archetype: { [name]: iterate(p, 'archetype', 'all') },
            sparse: { [name]: iterate(p, 'sparse', 'all') },
            baseline: { [name]: iterate(p, null, 'all') },
            'sparse, M added in spawn order': { [name]: iterate(p, 'sparse', 'all', true) },
            'sparse, as any: [M]': { [name]: iterate(p, 'sparse', 'any') },
        },
    };
}
GROUPS['none 10%'] = {
    kind: 'iter',
    term: 'none',
    p: 0.1,
    rows: {
        archetype: { 'none 10%': iterate(0.1, 'archetype', 'none') },
        sparse: { 'none 10%': iterate(0.1, 'sparse', 'none') },
        baseline: { 'none 10%': iterate(0.1, null, 'none') },
    },
};

const contendersOf = (group) => Object.entries(GROUPS[group].rows).map(([name, cases]) => ({ name, version: '', kind: 'self', cases }));

// ---------------------------------------------------------------------------------------------

const opts = parseBenchArgs(process.argv.slice(2), import.meta.url, { lists: ['groups'] });
for (const g of opts.groups ?? []) if (!GROUPS[g]) throw new Error(`unknown group ${g} (groups: ${Object.keys(GROUPS).join(', ')})`);
const groupNames = Object.keys(GROUPS).filter((g) => !opts.groups || opts.groups.includes(g));
const gc = globalThis.gc ?? (() => {});

if (opts.check) {
    let failed = 0;
    for (const g of groupNames) {
        for (const c of contendersOf(g)) {
            for (const [key, setup] of Object.entries(c.cases)) {
                let inst;
                try {
                    inst = await setup();
                    inst.op();
                    inst.check(1);
                    console.log(`ok    ${key.padEnd(34)} ${c.name}`);
                } catch (err) {
                    failed++;
                    console.log(`FAIL  ${key.padEnd(34)} ${c.name}: ${err.message}`);
                } finally {
                    try {
                        inst?.dispose?.();
                    } catch {
                        /* ignore */
                    }
                }
            }
        }
    }
    console.log(failed ? `${failed} check(s) failed` : 'all checks passed');
    process.exit(failed ? 1 : 0);
}

if (opts.worker) {
    const group = groupNames[0];
    const { rows } = await benchCase(group, { chosen: contendersOf(group), runs: opts.runs, targetMs: opts.targetMs, gc });
    for (const r of rows) {
        r.storage = r.contender;
        r.api = r.key.endsWith('(batch API)') ? 'batch' : r.key.endsWith('(handles)') ? 'handles' : 'per entity';
    }
    process.stdout.write(JSON.stringify(rows));
    process.exit(0);
}

function runWorker(group) {
    const args = [
        '--expose-gc',
        fileURLToPath(import.meta.url),
        '--worker',
        '--groups',
        group,
        '--runs',
        String(opts.runs),
        '--target-ms',
        String(opts.targetMs),
    ];
    const r = spawnSync(process.execPath, args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 64 << 20 });
    if (r.status !== 0) throw new Error(`worker for ${group} exited with ${r.status ?? r.signal}`);
    return JSON.parse(r.stdout);
}

// Rows visited per run of each iteration row (known from the group's definition).
function visitsOf(group, storage) {
    const g = GROUPS[group];
    if (storage === 'baseline') return ITER_N;
    // archetype, sparse, sparse in spawn order and any: [M] visit the same entities.
    const members = Math.round(g.p * ITER_N);
    return g.term === 'all' ? members : ITER_N - members;
}

const env = benchEnv(opts);
console.log(
    `sparse vs archetype · Node ${env.node} · ${env.cpu} (${env.cores} cores) · ${opts.runs} runs of >= ${opts.targetMs} ms batches`,
);

const results = [];
const started = performance.now();
for (const group of groupNames) {
    const t0 = performance.now();
    const rows = runWorker(group);
    for (const r of rows) {
        r.group = group;
        if (GROUPS[group].kind === 'iter' && r.msMedian != null) {
            r.visits = visitsOf(group, r.storage);
            r.nsPerVisit = (r.msMedian * 1e6) / r.visits;
        }
        results.push(r);
    }
    const summary = rows
        .map(
            (r) =>
                `${r.label} ${r.msMedian == null ? 'FAILED' : GROUPS[group].kind === 'iter' ? fmtNum(r.msMedian) + ' ms' : fmtNum(r.median) + ' op/s'}`,
        )
        .join(', ');
    console.log(`  ${group} (${((performance.now() - t0) / 1000).toFixed(1)} s): ${summary}`);
}
console.log(`\n(${((performance.now() - started) / 1000).toFixed(0)} s)\n`);

// ---------------------------------------------------------------------------------------------
// Tables.

const find = (group, storage, api = 'per entity') => results.find((r) => r.group === group && r.storage === storage && r.api === api);
const cell = (r, unit) => {
    if (!r) return '—';
    if (r.msMedian == null) return `FAILED (${r.error})`;
    return unit === 'op/s'
        ? `${fmtNum(r.median)} (${fmtNum(r.min)}–${fmtNum(r.max)})`
        : `${fmtNum(r.msMedian)} (${fmtNum(r.msMin)}–${fmtNum(r.msMax)})`;
};
const ok = (...rs) => rs.every((r) => r && r.msMedian != null);

function addRemoveLines() {
    const head = [
        'B',
        'API',
        'archetype op/s',
        'sparse op/s',
        'sparse/archetype (speed)',
        'archetype ns per add+remove',
        'sparse ns per add+remove',
    ];
    const lines = [head];
    for (const kind of ['tag', 'data']) {
        const group = `add_remove ${kind}`;
        if (!groupNames.includes(group)) continue;
        for (const api of ['per entity', 'handles', 'batch']) {
            const a = find(group, 'archetype', api),
                s = find(group, 'sparse', api);
            const perPair = (r) => (ok(r) ? fmtNum((r.msMedian * 1e6) / ADD_N) : '—');
            lines.push([
                kind === 'tag' ? 'tag `{}`' : 'data `{ v: f32 }`',
                {
                    'per entity': 'per entity in query loops (the suite case)',
                    handles: 'per entity over the handles, no loop',
                    batch: 'batch: addAll / removeAll',
                }[api],
                cell(a, 'op/s'),
                cell(s, 'op/s'),
                ok(a, s) ? fmtRatio(a.msMedian / s.msMedian) : '—',
                perPair(a),
                perPair(s),
            ]);
        }
    }
    return lines;
}

function iterLines() {
    const head = [
        'query',
        'M on',
        'rows visited',
        'archetype ms/run',
        'sparse ms/run',
        'archetype ns/row',
        'sparse ns/row',
        'sparse/archetype (time)',
        'baseline ms/run (all 100k rows)',
        'baseline ns/row',
        'sparse/baseline (time)',
    ];
    const lines = [head];
    for (const group of groupNames) {
        const g = GROUPS[group];
        if (g.kind !== 'iter') continue;
        const a = find(group, 'archetype'),
            s = find(group, 'sparse'),
            b = find(group, 'baseline');
        const ns = (r) => (ok(r) ? fmtNum(r.nsPerVisit) : '—');
        lines.push([
            g.term === 'all' ? '`all: [P, V, M]`' : '`all: [P, V], none: [M]`',
            pct(g.p),
            visitsOf(group, 'archetype').toLocaleString('en-US'),
            cell(a, 'ms'),
            cell(s, 'ms'),
            ns(a),
            ns(s),
            ok(a, s) ? fmtRatio(s.msMedian / a.msMedian) : '—',
            cell(b, 'ms'),
            ns(b),
            ok(s, b) ? fmtRatio(s.msMedian / b.msMedian) : '—',
        ]);
    }
    return lines;
}

// The sparse rows of the `all` groups: M added in random order vs in spawn (chunk) order, and
// the same entities found by `any: [M]` (every row checked).
function orderLines() {
    const head = [
        'M on',
        'rows visited',
        '`all`, random order ms/run',
        '`all`, spawn order ms/run',
        '`any: [M]` ms/run',
        'random ns/row',
        'spawn order ns/row',
        '`any` ns/row',
        'random/spawn order (time)',
        '`any`/random (time)',
    ];
    const lines = [head];
    for (const group of groupNames) {
        const g = GROUPS[group];
        if (g.kind !== 'iter' || g.term !== 'all') continue;
        const s = find(group, 'sparse'),
            o = find(group, 'sparse, M added in spawn order'),
            y = find(group, 'sparse, as any: [M]');
        const ns = (r) => (ok(r) ? fmtNum(r.nsPerVisit) : '—');
        lines.push([
            pct(g.p),
            visitsOf(group, 'sparse').toLocaleString('en-US'),
            cell(s, 'ms'),
            cell(o, 'ms'),
            cell(y, 'ms'),
            ns(s),
            ns(o),
            ns(y),
            ok(s, o) ? fmtRatio(s.msMedian / o.msMedian) : '—',
            ok(s, y) ? fmtRatio(y.msMedian / s.msMedian) : '—',
        ]);
    }
    return lines;
}

function mdTable(lines, align) {
    const L = ['| ' + lines[0].join(' | ') + ' |', '|' + align.map((a) => (a === 'r' ? '--:' : '---')).join('|') + '|'];
    for (const l of lines.slice(1)) L.push('| ' + l.map((v) => String(v).replace(/\|/g, '\\|')).join(' | ') + ' |');
    return L;
}
function textTable(lines) {
    const widths = lines[0].map((_, i) => Math.max(...lines.map((l) => String(l[i]).length)));
    return lines.map(
        (l, k) =>
            l.map((v, i) => (i < 2 ? String(v).padEnd(widths[i]) : String(v).padStart(widths[i]))).join('  ') +
            (k === 0 ? '\n' + widths.map((w) => '-'.repeat(w)).join('  ') : ''),
    );
}

const ar = addRemoveLines(),
    it = iterLines(),
    ord = orderLines();
for (const t of [ar, it, ord]) {
    if (t.length < 2) continue;
    for (const l of textTable(t)) console.log(l);
    console.log('');
}

function markdown() {
    const L = [];
    L.push('# Sparse-set vs archetype storage (`npm run bench:sparse`)', '');
    L.push(`${env.date} · ${env.cpu} (${env.cores} cores) · ${env.os} · Node ${env.node} · tessera at ${env.git}`, '');
    L.push(
        `Source: bench/js/sparse.mjs (its header says exactly what each op does); tessera's public API from dist/. ` +
            `Each group runs in a fresh Node process; within it the archetype, sparse (and baseline) rows share the process, ` +
            `${env.runs} timed runs each, interleaved run by run (rotating order), each run one batch of ops calibrated to take >= ${env.targetMs} ms ` +
            `(bench/js/measure.js, as \`npm run bench\`). A cell is the median over the runs, then min–max. Setup is not timed. ` +
            `After timing, every row's state was checked for the exact number of ops it ran (a failed check shows FAILED). ` +
            `Ratios are of medians and only meaningful within this one run; the machine is shared and noisy.`,
        '',
    );
    L.push('## add_remove: B stored as archetype vs sparse', '');
    L.push(
        `BENCHMARKS.md §1 add_remove: ${ADD_N.toLocaleString('en-US')} entities with A (i32); one op adds B to every A, then removes B from every B. ` +
            "Per entity: world.add / world.remove inside the query loops (deferred to each loop's end), as the suite's tessera case; " +
            'the removal loop visits `chunk.rows` when the chunk is filtered (the sparse B query) and 0..count-1 otherwise. ' +
            '"over the handles, no loop": the same adds and removes over the array spawnMany returned, outside any query loop, so nothing is deferred. ' +
            'Batch: `qA.addAll(B)`, `qB.count()`, `qB.removeAll(B)`. Data B is added zeroed (`world.add(e, B)`). ' +
            'Checked: 1,000 removed, counts of both queries, no entity left with B, and (data) a value written is read back. ' +
            'op/s, higher is better; "sparse/archetype (speed)" > 1: sparse is faster. ns per add+remove = time per op / 1,000.',
        '',
    );
    L.push(...mdTable(ar, ['l', 'l', 'r', 'r', 'r', 'r', 'r']), '');
    L.push('## Iterating a query with an M term: M an archetype tag vs a sparse tag', '');
    L.push(
        `${ITER_N.toLocaleString('en-US')} entities with Position {x, y: f32} and Velocity {x, y: f32}; M, a tag, on a seeded random ` +
            `choice of them, added in random order (one world per row: M an archetype tag, M sparse, and a world without M for the baseline). ` +
            'One op: one run of the query, `x[i] += vx[i] * dt` over the rows each chunk gives (0..count-1 for an unfiltered chunk, ' +
            '`chunk.rows` for a filtered one: a sparse term makes every chunk filtered), column views and count in locals, no `writes`. ' +
            'The baseline is `{ all: [Position, Velocity] }` over all 100,000 rows (one archetype), measured in the same process as the pair. ' +
            "Checked: rows visited per run, and every entity's x (exactly runs × vx × dt for the visited ones, 0 for the others). " +
            'ms per run, lower is better; ns/row = per visited row; "sparse/archetype (time)" > 1: sparse is slower; ' +
            '"sparse/baseline" < 1: the sparse query costs less than touching every row.',
        '',
    );
    L.push(...mdTable(it, ['l', 'l', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r']), '');
    L.push('### Sparse M: how the run finds its rows', '');
    L.push(
        'The same entities, the same loop and checks, M sparse in every column. "`all`, random order": the sparse row of the table above. ' +
            '"`all`, spawn order": M added to the same entities in ascending spawn order, so the sparse set already lists them in chunk order ' +
            'and the rows of one chunk come together (fewer cache misses on records and chunks). "`any: [M]`": `{ all: [Position, Velocity], any: [M] }` ' +
            '(the same entities when M is the only `any` term), which the core cannot drive from the sparse set: it walks every row of the ' +
            'matching chunks and checks membership. Same processes and interleaving as the table above (rows 4 and 5 of each group).',
        '',
    );
    L.push(...mdTable(ord, ['l', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r']), '');
    L.push('## How the C core runs these (src/query.c)', '');
    L.push(
        '- A query whose `all` holds a sparse term is driven by the smallest such sparse set when that set holds fewer than a quarter of ' +
            "the rows the query's archetypes hold: each member's record gives its chunk and row, and the survivors are grouped by chunk in one " +
            'counting pass, so each chunk is visited once with its row list (`chunk.rows`). Otherwise (the 50% and 100% rows) it walks every row ' +
            'of the matching chunks and checks membership, as for `any`. Such a query is never replayed (its visits change without rows moving), ' +
            'so every run calls into wasm per chunk.',
    );
    L.push('- A sparse term in `none` (or `any`) cannot drive: every row of every matching chunk is checked against the sparse set.');
    L.push(
        "- world.add / world.remove inside a query loop are deferred to the loop's end for either storage; over a handle array outside loops they apply at once.",
    );
    L.push(
        '- An archetype tag splits the entities into two archetypes; the query matches the one with (or without) M and visits all its rows densely; a plain query replays its chunk list while nothing moved.',
    );
    L.push(
        "- Adding or removing an archetype component moves the entity's row to another archetype (copying its columns); a sparse one inserts into / removes from the sparse set and moves no row.",
    );
    L.push('');
    return L.join('\n');
}

const failed = results.filter((r) => r.msMedian == null);
if (opts.write && !opts.groups) {
    mkdirSync(resultsDir, { recursive: true });
    const json = {
        env,
        // ms per op for every row (msMedian, msMin, msMax, samplesMsPerOp); op/s too for add_remove.
        results: results.map(({ samples, min, max, median, unit, vsBestPeer, bestPeer, vsRaw, kind, ...r }) => ({
            ...r,
            ...(GROUPS[r.group].kind === 'add_remove' && median != null ? { opsPerSec: median, opsPerSecMin: min, opsPerSecMax: max } : {}),
            samplesMsPerOp: samples,
        })),
    };
    writeFileSync(path.join(resultsDir, 'sparse.json'), JSON.stringify(json, null, 2) + '\n');
    writeFileSync(path.join(resultsDir, 'sparse.md'), markdown());
    console.log('\nwrote bench/results/sparse.json and bench/results/sparse.md');
}
if (failed.length) {
    console.error(`\n${failed.length} row(s) failed: ${failed.map((r) => `${r.group}/${r.label}: ${r.error}`).join('; ')}`);
    process.exit(1);
}
