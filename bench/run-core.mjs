// Runs the C core's micro-benchmarks natively and as wasm, alternating (native, wasm, native,
// wasm, ...) so the machine's noise hits both, pools the samples of every round per case, and
// writes one report per program. Expects the programs built (bench/run-core.sh does it).
//   bench_core     storage: spawn, add/remove, set/get, batches, iteration, memory
//                  -> bench/results/core.md + core.json
//   bench_changes  change detection: observers, write-path tax, iteration with filters
//                  -> bench/results/changes.md + changes.json
//
//   node bench/run-core.mjs [--rounds N] [--quick] [--callgrind] [--programs core,changes]
//                           [-- <program args>]
//
// --quick: one round of 3 short runs (smoke test). --callgrind: also count instructions per op
// of the native build (valgrind, fixed iteration count). --programs: which programs (default
// both). Arguments after -- go to every program (e.g. --only 'iterate*': each runs the cases
// it has of that name; a program with none keeps its previous report).
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const resultsDir = path.join(root, 'bench/results');

const FLECS_NOTE = 'Flecs on a fast laptop: ≈ 10 ns per create+delete, ≈ 15 ns per tag add or remove ' + '(≈ 30 ns per add+remove pair).';

// Per program: the binaries, the report's name and title, and the callgrind cases as
// [case, iterations]: enough that one-time costs vanish, few enough for valgrind's ~50x.
const PROGRAMS = {
    core: {
        binary: 'bench_core',
        title: 'tessera core micro-benchmark (`npm run bench:core`)',
        callgrind: [
            ['spawn_despawn', 200000],
            ['archetype_spawn_despawn', 200000],
            ['add_remove_tag', 200000],
            ['add_remove_component', 200000],
            ['set_number', 200000],
            ['set_raw', 200000],
            ['get_number', 200000],
            ['get_raw', 200000],
            ['spawn_batch', 20],
            ['archetype_tag', 200],
            ['archetype_component', 4],
            ['iterate', 3],
            ['iterate_64k', 3],
            ['iterate_raw', 3],
        ],
        notes: coreNotes,
    },
    changes: {
        binary: 'bench_changes',
        title: 'tessera change detection benchmark (`npm run bench:core`)',
        intro:
            'Source: bench/c/changes.c (its header says exactly what each case does). The observers ' +
            'scenario is BENCHMARKS.md §2: per tick, tes_set_number Health on 100 random distinct ' +
            'entities, tag X added to 10 and removed from 10, tag Y added to 10 and removed from 10, ' +
            'then tes_tick runs three systems — changed:[Health] (sums hp of its rows), added:[X] ' +
            '(sums hp), removed:[Y] (reads hp of each entity that lost Y) — and prunes. One op is the ' +
            'whole tick; every tick is checked (each observer sees exactly 100 / 10 / 10, with the ' +
            'values written). "no systems" rows do the same writes without observers. The tax rows ' +
            'run the consumer (a system, in tes_tick) every 1024 writes outside the timing, so each ' +
            'write is a first write since the last run. The filtered rows time one query run plus ' +
            'the tes_tick that prunes; the writes before each run are outside the timing. The rollback ' +
            'rows are bench/js/rollback.mjs in C: one tes_checkpoint after a tick, one tes_rewind by 1 ' +
            'or 8 checkpoints (the ticks around them untimed).',
        callgrind: [
            ['observers_10k', 4000],
            ['observers_100k', 4000],
            ['observers_1m', 4000],
            ['observers_base_10k', 4000],
            ['observers_base_100k', 4000],
            ['observers_base_1m', 4000],
            ['tax_set_untracked', 200000],
            ['tax_set_ticks', 200000],
            ['tax_set_dirty', 200000],
            ['tax_mark_untracked', 200000],
            ['tax_mark_ticks', 200000],
            ['tax_mark_dirty', 200000],
            ['iterate_plain', 3],
            ['iterate_filters_exist', 3],
            ['filtered_0', 20000],
            ['filtered_100', 4000],
            ['filtered_1000', 1000],
            ['filtered_10000', 100],
            ['filtered_100_of_10k', 4000],
            ['filtered_100_of_1m', 4000],
            ['checkpoint', 20],
            ['rewind_1', 20],
            ['rewind_8', 10],
        ],
        notes: changesNotes,
    },
};

function parseArgs(argv) {
    const opts = {
        rounds: 2,
        quick: false,
        callgrind: false,
        programs: Object.keys(PROGRAMS),
        benchArgs: [],
    };
    for (let i = 0; i < argv.length; i++) {
        const a = argv[i];
        if (a === '--') {
            opts.benchArgs = argv.slice(i + 1);
            break;
        } else if (a === '--rounds') opts.rounds = Math.max(1, Number(argv[++i]));
        else if (a === '--quick') opts.quick = true;
        else if (a === '--callgrind') opts.callgrind = true;
        else if (a === '--programs') opts.programs = String(argv[++i]).split(',').filter(Boolean);
        else throw new Error(`bench: unknown option ${a}`);
    }
    for (const p of opts.programs) {
        if (!PROGRAMS[p]) throw new Error(`bench: unknown program ${p} (${Object.keys(PROGRAMS)})`);
    }
    if (opts.quick) {
        opts.rounds = 1;
        opts.benchArgs = ['--runs', '3', '--target-ms', '20', ...opts.benchArgs];
    }
    return opts;
}

function programPath(name, platform) {
    const { binary } = PROGRAMS[name];
    return platform === 'native' ? path.join(root, 'build/release/bench', binary) : path.join(root, 'build/wasm/bench', `${binary}.cjs`);
}

/** Runs one program, echoes its output, returns its INFO and RESULT records. */
function runBench(name, platform, args) {
    const program = programPath(name, platform);
    const [cmd, cmdArgs] = platform === 'native' ? [program, args] : [process.execPath, [program, ...args]];
    console.log(`\n## ${platform}: ${path.relative(root, program)} ${args.join(' ')}`);
    const run = spawnSync(cmd, cmdArgs, { encoding: 'utf8', maxBuffer: 64 << 20 });
    process.stdout.write(run.stdout ?? '');
    process.stderr.write(run.stderr ?? '');
    if (run.status !== 0) throw new Error(`bench: ${name} ${platform} run failed (exit ${run.status})`);
    const records = { info: null, results: [] };
    for (const line of run.stdout.split('\n')) {
        if (line.startsWith('INFO ')) records.info = JSON.parse(line.slice(5));
        else if (line.startsWith('RESULT ')) records.results.push(JSON.parse(line.slice(7)));
    }
    return records;
}

function stats(samples) {
    const s = [...samples].sort((a, b) => a - b);
    const mid = s.length >> 1;
    const median = s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
    return { median, min: s[0], max: s[s.length - 1], samples: s.length };
}

// Instructions per op of the timed loop (bench_measure), untimed sections (bench_exclude) out.
function callgrindInstructions(name, caseName, iters) {
    const out = path.join(os.tmpdir(), `tessera-callgrind-${process.pid}-${caseName}.out`);
    const run = spawnSync(
        'valgrind',
        [
            '--tool=callgrind',
            '--toggle-collect=bench_measure',
            '--toggle-collect=bench_exclude',
            `--callgrind-out-file=${out}`,
            programPath(name, 'native'),
            '--only',
            caseName,
            '--iters',
            String(iters),
            '--runs',
            '1',
            '--no-memory',
        ],
        { encoding: 'utf8', maxBuffer: 64 << 20 },
    );
    if (run.status !== 0) throw new Error(`bench: callgrind ${caseName} failed:\n${run.stderr}`);
    const result = run.stdout.split('\n').find((l) => l.startsWith('RESULT '));
    const opsPerIter = JSON.parse(result.slice(7)).ops_per_iter;
    const text = readFileSync(out, 'utf8');
    rmSync(out, { force: true });
    const totals = /^(?:totals|summary): (\d+)/m.exec(text);
    return Number(totals[1]) / (iters * opsPerIter);
}

function fmt(x) {
    if (x === undefined || Number.isNaN(x)) return '—';
    if (x >= 100) return x.toFixed(0);
    if (x >= 10) return x.toFixed(1);
    return x >= 1 ? x.toFixed(2) : x.toPrecision(2);
}

function machine(infos) {
    const cpuinfo = readFileSync('/proc/cpuinfo', 'utf8');
    const model = /^model name\s*:\s*(.*)$/m.exec(cpuinfo)?.[1] ?? os.cpus()[0]?.model ?? '?';
    let emcc = '?';
    try {
        const version = execFileSync('emcc', ['--version'], { encoding: 'utf8' });
        emcc = `emcc ${/\d+\.\d+\.\d+/.exec(version)?.[0] ?? '?'}`;
    } catch {}
    return {
        date: new Date().toISOString(),
        cpu: model,
        cores: os.cpus().length,
        os: `${os.type()} ${os.release()}`,
        node: process.version,
        native_compiler: infos.native?.compiler,
        wasm_compiler: infos.wasm?.compiler,
        emcc,
    };
}

/** The pooled samples of one program: cases (time), memory rows, INFO per platform. */
function newCollection() {
    return {
        samples: { native: new Map(), wasm: new Map() }, // case -> number[]
        meta: new Map(), // case -> RESULT record (labels, per, ops_per_iter)
        memory: { native: new Map(), wasm: new Map() },
        infos: {},
    };
}

function collect(col, platform, { info, results }) {
    col.infos[platform] = info;
    for (const r of results) {
        if (r.kind === 'memory') {
            col.memory[platform].set(r.case, r);
            continue;
        }
        if (!col.meta.has(r.case)) col.meta.set(r.case, r);
        const list = col.samples[platform].get(r.case) ?? [];
        list.push(...r.samples);
        col.samples[platform].set(r.case, list);
    }
}

function summarise(col) {
    return [...col.meta.values()].map((r) => {
        const native = col.samples.native.has(r.case) ? stats(col.samples.native.get(r.case)) : undefined;
        const wasm = col.samples.wasm.has(r.case) ? stats(col.samples.wasm.get(r.case)) : undefined;
        return {
            case: r.case,
            label: r.label,
            per: r.per,
            chunk_bytes: r.chunk_bytes,
            ops_per_call: r.ops_per_iter,
            native,
            wasm,
            wasm_over_native: native && wasm ? wasm.median / native.median : undefined,
        };
    });
}

// ---- notes below each table ------------------------------------------------------------------

function coreNotes(cases) {
    const md = ['', FLECS_NOTE];
    const batches = cases.filter((c) => c.ops_per_call > 1 && c.native);
    if (batches.length) {
        md.push(
            '',
            'Per call (native median): ' +
                batches.map((c) => `${c.case} ${fmt((c.native.median * c.ops_per_call) / 1000)} µs`).join(', ') +
                '.',
        );
    }
    return md;
}

// The ratios the change-detection design is judged on, per platform (medians), and from the
// instruction counts when callgrind ran.
function changesNotes(cases, instructions) {
    const byCase = new Map(cases.map((c) => [c.case, c]));
    const counted = new Map(instructions.map((i) => [i.case, i.instructions_per_op]));
    const value = (name, platform) => (platform === 'instructions' ? counted.get(name) : byCase.get(name)?.[platform]?.median);
    const platforms = ['native', 'wasm', ...(instructions.length ? ['instructions'] : [])];
    const ratio = (a, b, platform) => {
        const x = value(a, platform),
            y = value(b, platform);
        return x !== undefined && y !== undefined ? x / y : undefined;
    };
    const diff = (a, b, platform) => {
        const x = value(a, platform),
            y = value(b, platform);
        return x !== undefined && y !== undefined ? x - y : undefined;
    };
    const r2 = (x) => (x === undefined ? '—' : `${x.toFixed(2)}×`);
    const rows = [
        [
            'observers tick, 100k / 10k (target ≤ 1.1×; dirty list reported ~1.3×, full scan ~9×)',
            (p) => r2(ratio('observers_100k', 'observers_10k', p)),
        ],
        ['observers tick, 1M / 100k', (p) => r2(ratio('observers_1m', 'observers_100k', p))],
        [
            'observing alone (tick − no-systems tick), 100k / 10k',
            (p) =>
                r2(
                    (() => {
                        const a = diff('observers_100k', 'observers_base_100k', p);
                        const b = diff('observers_10k', 'observers_base_10k', p);
                        return a !== undefined && b !== undefined ? a / b : undefined;
                    })(),
                ),
        ],
        [
            'observing alone, ns (instructions) per tick at 10k / 100k / 1M',
            (p) => ['10k', '100k', '1m'].map((n) => fmt(diff(`observers_${n}`, `observers_base_${n}`, p))).join(' / '),
        ],
        ['tes_set_number: ticks-only / untracked', (p) => r2(ratio('tax_set_ticks', 'tax_set_untracked', p))],
        ['tes_set_number: dirty / untracked', (p) => r2(ratio('tax_set_dirty', 'tax_set_untracked', p))],
        ['tes_mark_changed: ticks-only / untracked', (p) => r2(ratio('tax_mark_ticks', 'tax_mark_untracked', p))],
        ['tes_mark_changed: dirty / untracked', (p) => r2(ratio('tax_mark_dirty', 'tax_mark_untracked', p))],
        ['plain iteration 1M: with changed:[Position] queries / alone', (p) => r2(ratio('iterate_filters_exist', 'iterate_plain', p))],
        ['filtered run, per visited entity: 100 / 10,000 changed (1.0× = O(dirty))', (p) => r2(ratio('filtered_100', 'filtered_10000', p))],
        ['filtered run, per visited entity: 1,000 / 10,000 changed', (p) => r2(ratio('filtered_1000', 'filtered_10000', p))],
        [
            'filtered run, 100 changed: of 100k / of 10k (1.0× = independent of N)',
            (p) => r2(ratio('filtered_100', 'filtered_100_of_10k', p)),
        ],
        ['filtered run, 100 changed: of 1M / of 100k', (p) => r2(ratio('filtered_100_of_1m', 'filtered_100', p))],
    ];
    const md = [
        '',
        '## Key ratios',
        '',
        'Of the medians above (and of the callgrind instruction counts when they were taken: ' +
            'those are repeatable where wall-clock time on this shared machine is not).',
        '',
    ];
    md.push(`| ratio | ${platforms.join(' | ')} |`, `|---|${platforms.map(() => '--:').join('|')}|`);
    for (const [label, cell] of rows) md.push(`| ${label} | ${platforms.map(cell).join(' | ')} |`);
    return md;
}

// ---- the report of one program ----------------------------------------------------------------

function report(name, col, opts, instructions) {
    const program = PROGRAMS[name];
    const cases = summarise(col);
    const info = machine(col.infos);
    const memoryRows = [...new Set([...col.memory.native.keys(), ...col.memory.wasm.keys()])].map((m) => ({
        case: m,
        entities: (col.memory.native.get(m) ?? col.memory.wasm.get(m)).entities,
        chunk_bytes: (col.memory.native.get(m) ?? col.memory.wasm.get(m)).chunk_bytes,
        native: col.memory.native.get(m),
        wasm: col.memory.wasm.get(m),
    }));

    const md = [];
    md.push(`# ${program.title}`, '');
    md.push(`${info.date} · ${info.cpu} (${info.cores} cores) · ${info.os} · Node ${info.node}`);
    md.push(`native: gcc ${info.native_compiler} -O3 · wasm: ${info.emcc} -O3 -msimd128`, '');
    if (program.intro) md.push(program.intro, '');
    const runs = col.infos.native?.runs ?? '?';
    md.push(
        `${opts.rounds} round(s), native and wasm alternating, ${runs} timed runs each; ` +
            'a cell is the median of all samples, then min–max, in ns per op ("per" says what one op ' +
            'is; batch and iteration cases are per entity). Setup is not timed. Ratios are only ' +
            'meaningful within this one run.',
        '',
    );
    md.push('| case | per | native ns/op | wasm ns/op | wasm/native |', '|---|---|--:|--:|--:|');
    for (const c of cases) {
        const cell = (s) => (s ? `${fmt(s.median)} (${fmt(s.min)}–${fmt(s.max)})` : '—');
        md.push(
            `| ${c.label} | ${c.per} | ${cell(c.native)} | ${cell(c.wasm)} | ` +
                `${c.wasm_over_native ? c.wasm_over_native.toFixed(2) : '—'} |`,
        );
    }
    md.push(...program.notes(cases, instructions));
    md.push('');
    if (memoryRows.length) {
        md.push('## Memory: (Position{x,y}, Velocity{x,y}) archetype, spawned one by one', '');
        md.push('(stats.bytes_allocated after − before) / N, beside the 16 bytes of raw field data.', '');
        md.push(
            '| entities | chunk bytes | native bytes/entity | wasm bytes/entity | raw | chunks × capacity |',
            '|--:|--:|--:|--:|--:|---|',
        );
        for (const m of memoryRows) {
            const any = m.native ?? m.wasm;
            md.push(
                `| ${m.entities.toLocaleString('en-US')} | ${m.chunk_bytes} | ` +
                    `${m.native ? m.native.bytes_per_entity.toFixed(2) : '—'} | ` +
                    `${m.wasm ? m.wasm.bytes_per_entity.toFixed(2) : '—'} | 16 | ` +
                    `${any.chunk_count} × ${any.chunk_capacity} |`,
            );
        }
        md.push('');
    }
    if (instructions.length) {
        md.push('## Instructions per op (callgrind, native build, timed loop only)', '');
        md.push('Repeatable where wall-clock time is not; same "per" as above.', '');
        md.push('| case | per | instructions/op |', '|---|---|--:|');
        for (const i of instructions) {
            md.push(`| ${i.label} | ${col.meta.get(i.case)?.per ?? ''} | ${fmt(i.instructions_per_op)} |`);
        }
        md.push('');
    }

    mkdirSync(resultsDir, { recursive: true });
    writeFileSync(path.join(resultsDir, `${name}.md`), md.join('\n'));
    writeFileSync(
        path.join(resultsDir, `${name}.json`),
        JSON.stringify({ machine: info, rounds: opts.rounds, cases, memory: memoryRows, instructions }, null, 2) + '\n',
    );
    console.log('\n' + md.join('\n'));
    console.log(`wrote bench/results/${name}.md and ${name}.json`);
}

function main() {
    const opts = parseArgs(process.argv.slice(2));
    const collections = Object.fromEntries(opts.programs.map((p) => [p, newCollection()]));
    for (let round = 0; round < opts.rounds; round++) {
        for (const name of opts.programs) {
            for (const platform of ['native', 'wasm']) {
                const args = round === 0 ? opts.benchArgs : [...opts.benchArgs, '--no-memory'];
                collect(collections[name], platform, runBench(name, platform, args));
            }
        }
    }

    if (opts.callgrind && spawnSync('valgrind', ['--version']).status !== 0) {
        throw new Error('bench: --callgrind needs valgrind (apt-get install valgrind)');
    }
    for (const name of opts.programs) {
        const col = collections[name];
        if (col.meta.size === 0 && col.memory.native.size === 0 && col.memory.wasm.size === 0) {
            console.log(`\n${name}: no case selected, bench/results/${name}.md left as it was`);
            continue;
        }
        const instructions = [];
        if (opts.callgrind) {
            for (const [caseName, iters] of PROGRAMS[name].callgrind) {
                if (!col.meta.has(caseName)) continue; // not selected by --only
                console.log(`callgrind ${caseName} (${iters} iterations)...`);
                instructions.push({
                    case: caseName,
                    label: col.meta.get(caseName).label,
                    instructions_per_op: callgrindInstructions(name, caseName, iters),
                    iters,
                });
            }
        }
        report(name, col, opts, instructions);
    }
}

main();
