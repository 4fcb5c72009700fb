// Runs the core micro-benchmark natively and as wasm, alternating (native, wasm, native, wasm,
// ...) so the machine's noise hits both, pools the samples of every round per case, and writes
// bench/results/core.md + core.json. Expects the programs built (bench/run-core.sh does it).
//
//   node bench/run-core.mjs [--rounds N] [--quick] [--callgrind] [-- <bench_core args>]
//
// --quick: one round of 3 short runs (smoke test). --callgrind: also count instructions per op
// of the native build for the single-entity cases (valgrind, fixed iteration count).
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const nativeProgram = path.join(root, 'build/release/bench/bench_core');
const wasmProgram = path.join(root, 'build/wasm/bench/bench_core.cjs');
const resultsDir = path.join(root, 'bench/results');

const FLECS_NOTE =
  'Flecs on a fast laptop: ≈ 10 ns per create+delete, ≈ 15 ns per tag add or remove ' +
  '(≈ 30 ns per add+remove pair).';
// [case, iterations]: enough that one-time costs vanish, few enough for valgrind's ~50x.
const CALLGRIND_CASES = [
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
];

function parseArgs(argv) {
  const opts = { rounds: 2, quick: false, callgrind: false, benchArgs: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--') {
      opts.benchArgs = argv.slice(i + 1);
      break;
    } else if (a === '--rounds') opts.rounds = Math.max(1, Number(argv[++i]));
    else if (a === '--quick') opts.quick = true;
    else if (a === '--callgrind') opts.callgrind = true;
    else throw new Error(`bench: unknown option ${a}`);
  }
  if (opts.quick) {
    opts.rounds = 1;
    opts.benchArgs = ['--runs', '3', '--target-ms', '20', ...opts.benchArgs];
  }
  return opts;
}

/** Runs one program, echoes its output, returns its INFO and RESULT records. */
function runBench(platform, args) {
  const [cmd, cmdArgs] =
    platform === 'native' ? [nativeProgram, args] : [process.execPath, [wasmProgram, ...args]];
  const program = platform === 'native' ? nativeProgram : wasmProgram;
  console.log(`\n## ${platform}: ${path.relative(root, program)} ${args.join(' ')}`);
  const run = spawnSync(cmd, cmdArgs, { encoding: 'utf8', maxBuffer: 64 << 20 });
  process.stdout.write(run.stdout ?? '');
  process.stderr.write(run.stderr ?? '');
  if (run.status !== 0) throw new Error(`bench: ${platform} run failed (exit ${run.status})`);
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

function callgrindInstructions(name, iters) {
  const out = path.join(os.tmpdir(), `tessera-callgrind-${process.pid}-${name}.out`);
  const run = spawnSync(
    'valgrind',
    ['--tool=callgrind', '--toggle-collect=bench_measure', `--callgrind-out-file=${out}`,
      nativeProgram, '--only', name, '--iters', String(iters), '--runs', '1', '--no-memory'],
    { encoding: 'utf8', maxBuffer: 64 << 20 },
  );
  if (run.status !== 0) throw new Error(`bench: callgrind ${name} failed:\n${run.stderr}`);
  const result = run.stdout.split('\n').find((l) => l.startsWith('RESULT '));
  const opsPerIter = JSON.parse(result.slice(7)).ops_per_iter;
  const text = readFileSync(out, 'utf8');
  rmSync(out, { force: true });
  const totals = /^(?:totals|summary): (\d+)/m.exec(text);
  return Number(totals[1]) / (iters * opsPerIter);
}

function fmt(x) {
  if (x === undefined) return '—';
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

function main() {
  const opts = parseArgs(process.argv.slice(2));
  const samples = { native: new Map(), wasm: new Map() }; // case -> number[]
  const meta = new Map(); // case -> RESULT record (labels, per, ops_per_iter)
  const memory = { native: new Map(), wasm: new Map() };
  const infos = {};
  for (let round = 0; round < opts.rounds; round++) {
    for (const platform of ['native', 'wasm']) {
      const args = round === 0 ? opts.benchArgs : [...opts.benchArgs, '--no-memory'];
      const { info, results } = runBench(platform, args);
      infos[platform] = info;
      for (const r of results) {
        if (r.kind === 'memory') {
          memory[platform].set(r.case, r);
          continue;
        }
        if (!meta.has(r.case)) meta.set(r.case, r);
        const list = samples[platform].get(r.case) ?? [];
        list.push(...r.samples);
        samples[platform].set(r.case, list);
      }
    }
  }

  const cases = [...meta.values()].map((r) => {
    const native = samples.native.has(r.case) ? stats(samples.native.get(r.case)) : undefined;
    const wasm = samples.wasm.has(r.case) ? stats(samples.wasm.get(r.case)) : undefined;
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

  const instructions = [];
  if (opts.callgrind) {
    if (spawnSync('valgrind', ['--version']).status !== 0) {
      throw new Error('bench: --callgrind needs valgrind (apt-get install valgrind)');
    }
    for (const [name, iters] of CALLGRIND_CASES) {
      console.log(`callgrind ${name} (${iters} iterations)...`);
      instructions.push({ case: name, label: meta.get(name)?.label ?? name,
        instructions_per_op: callgrindInstructions(name, iters), iters });
    }
  }

  const info = machine(infos);
  const memoryRows = [...new Set([...memory.native.keys(), ...memory.wasm.keys()])].map((name) => ({
    case: name,
    entities: (memory.native.get(name) ?? memory.wasm.get(name)).entities,
    chunk_bytes: (memory.native.get(name) ?? memory.wasm.get(name)).chunk_bytes,
    native: memory.native.get(name),
    wasm: memory.wasm.get(name),
  }));

  const md = [];
  md.push('# tessera core micro-benchmark (`npm run bench:core`)', '');
  md.push(`${info.date} · ${info.cpu} (${info.cores} cores) · ${info.os} · Node ${info.node}`);
  md.push(`native: gcc ${info.native_compiler} -O3 · wasm: ${info.emcc} -O3 -msimd128`, '');
  const runs = infos.native?.runs ?? '?';
  md.push(`${opts.rounds} round(s), native and wasm alternating, ${runs} timed runs each; ` +
    'a cell is the median of all samples, then min–max, in ns per op ("per" says what one op ' +
    'is; batch and iteration cases are per entity). Setup is not timed. Ratios are only ' +
    'meaningful within this one run.', '');
  md.push('| case | per | native ns/op | wasm ns/op | wasm/native |', '|---|---|--:|--:|--:|');
  for (const c of cases) {
    const cell = (s) => (s ? `${fmt(s.median)} (${fmt(s.min)}–${fmt(s.max)})` : '—');
    md.push(`| ${c.label} | ${c.per} | ${cell(c.native)} | ${cell(c.wasm)} | ` +
      `${c.wasm_over_native ? c.wasm_over_native.toFixed(2) : '—'} |`);
  }
  md.push('', FLECS_NOTE);
  const batches = cases.filter((c) => c.ops_per_call > 1 && c.native);
  if (batches.length) {
    md.push('', 'Per call (native median): ' + batches.map((c) =>
      `${c.case} ${fmt((c.native.median * c.ops_per_call) / 1000)} µs`).join(', ') + '.');
  }
  md.push('');
  if (memoryRows.length) {
    md.push('## Memory: (Position{x,y}, Velocity{x,y}) archetype, spawned one by one', '');
    md.push('(stats.bytes_allocated after − before) / N, beside the 16 bytes of raw field data.', '');
    md.push('| entities | chunk bytes | native bytes/entity | wasm bytes/entity | raw | chunks × capacity |',
      '|--:|--:|--:|--:|--:|---|');
    for (const m of memoryRows) {
      const any = m.native ?? m.wasm;
      md.push(`| ${m.entities.toLocaleString('en-US')} | ${m.chunk_bytes} | ` +
        `${m.native ? m.native.bytes_per_entity.toFixed(2) : '—'} | ` +
        `${m.wasm ? m.wasm.bytes_per_entity.toFixed(2) : '—'} | 16 | ` +
        `${any.chunk_count} × ${any.chunk_capacity} |`);
    }
    md.push('');
  }
  if (instructions.length) {
    md.push('## Instructions per op (callgrind, native build, timed loop only)', '');
    md.push('Repeatable where wall-clock time is not; same "per" as above.', '');
    md.push('| case | per | instructions/op |', '|---|---|--:|');
    for (const i of instructions) {
      md.push(`| ${i.label} | ${meta.get(i.case)?.per ?? ''} | ${fmt(i.instructions_per_op)} |`);
    }
    md.push('');
  }

  mkdirSync(resultsDir, { recursive: true });
  writeFileSync(path.join(resultsDir, 'core.md'), md.join('\n'));
  writeFileSync(path.join(resultsDir, 'core.json'),
    JSON.stringify({ machine: info, rounds: opts.rounds, cases, memory: memoryRows,
      instructions }, null, 2) + '\n');
  console.log('\n' + md.join('\n'));
  console.log(`wrote ${path.relative(root, path.join(resultsDir, 'core.md'))} and core.json`);
}

main();
