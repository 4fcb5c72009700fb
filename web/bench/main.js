// The in-browser benchmark page: the cases of bench/js/ (the same contender modules as
// `npm run bench`), one module worker per case, the table of bench/results/latest.md and a bar
// chart, filled in as cases complete. When done: window.__benchResults (latest.json's shape:
// { env, results, missing }, env with userAgent) and window.__benchDone = true.
// bench/js/run-browser.mjs builds this page with Vite and runs it in headless Chromium.
import { CASES, baseCase } from '../../bench/js/shared.js';
import { fmtNum, tableLines, TABLE_HEAD } from '../../bench/js/measure.js';

/* global __BENCH_VERSIONS__ */
const VERSIONS = typeof __BENCH_VERSIONS__ === 'object' ? __BENCH_VERSIONS__ : {};

const params = new URLSearchParams(location.search);
const list = (name) =>
    params
        .get(name)
        ?.split(',')
        .map((s) => s.trim())
        .filter(Boolean) ?? null;
const quick = params.has('quick');
const opts = {
    cases: list('cases'),
    contenders: list('contenders'),
    runs: Number(params.get('runs') ?? (quick ? 3 : 3)),
    targetMs: Number(params.get('target') ?? (quick ? 50 : 200)),
    quick,
};

const $ = (id) => document.getElementById(id);
const progress = (text) => ($('progress').textContent = text);
$('settings').textContent =
    `${opts.runs} timed runs per row, batches of >= ${opts.targetMs} ms` +
    (opts.cases ? ` · cases: ${opts.cases.join(', ')}` : ' · all cases') +
    (opts.contenders ? ` · contenders: ${opts.contenders.join(', ')}` : ' · all contenders');

const newWorker = () => new Worker(new URL('./worker.js', import.meta.url), { type: 'module' });

// Sends one message to a fresh worker and resolves with its final answer (progress messages
// go to the progress line); the worker is terminated either way.
function ask(message) {
    const worker = newWorker();
    return new Promise((resolve, reject) => {
        worker.onmessage = ({ data }) => {
            if (data.progress) return progress(data.progress);
            if (data.error) reject(new Error(data.error));
            else resolve(data);
        };
        worker.onerror = (event) => reject(new Error(`worker: ${event.message ?? 'failed to load'}`));
        worker.postMessage(message);
    }).finally(() => worker.terminate());
}

const esc = (s) => String(s).replace(/[&<>"]/g, (ch) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[ch]);

function renderTable(rows, missing) {
    const lines = tableLines(rows, missing);
    const numeric = new Set([3, 4, 5, 6, 7]);
    const html = [
        '<thead><tr>' +
            TABLE_HEAD.map((h, i) => `<th${numeric.has(i) ? ' class="num"' : ''}>${esc(h)}</th>`).join('') +
            '</tr></thead><tbody>',
    ];
    // tableLines() has one line per row plus dash lines for missing contenders: walk both.
    let k = 0;
    for (const line of lines.slice(1)) {
        const isRow = line[3] !== '—';
        const row = isRow ? rows[k++] : null;
        const cls = row?.kind === 'self' ? ' class="self"' : '';
        html.push(
            `<tr${cls}>` +
                line
                    .map((v, i) => {
                        const c = [numeric.has(i) ? 'num' : '', v === 'FAILED' ? 'failed' : ''].filter(Boolean).join(' ');
                        return `<td${c ? ` class="${c}"` : ''}>${esc(v)}</td>`;
                    })
                    .join('') +
                '</tr>',
        );
    }
    html.push('</tbody>');
    $('table').innerHTML = html.join('');
}

function renderChart(rows) {
    const W = 720,
        LABEL = 200,
        BAR = 400,
        ROW = 18,
        GAP = 10,
        HEAD = 20;
    const cases = [...new Set(rows.map((r) => r.case))];
    let y = 0;
    const parts = [];
    for (const caseName of cases) {
        const rs = rows.filter((r) => r.case === caseName);
        const ok = rs.filter((r) => r.msMedian != null);
        const bestMs = Math.min(...ok.map((r) => r.msMedian));
        const unit = rs[0].unit;
        parts.push(
            `<text class="case" x="0" y="${y + 14}">${esc(caseName)} (${esc(unit)}, ${unit === 'op/s' ? 'higher' : 'lower'} is better)</text>`,
        );
        y += HEAD;
        for (const r of rs) {
            parts.push(`<text x="${LABEL - 6}" y="${y + 13}" text-anchor="end">${esc(r.label)}</text>`);
            if (r.msMedian == null) {
                parts.push(`<text x="${LABEL}" y="${y + 13}" fill="#b00020">FAILED</text>`);
            } else {
                const rel = bestMs / r.msMedian;
                const w = Math.max(1, rel * BAR);
                parts.push(
                    `<rect class="${esc(r.kind)}" x="${LABEL}" y="${y + 2}" width="${w.toFixed(1)}" height="${ROW - 4}"><title>${esc(r.label)}: ${fmtNum(r.median)} ${esc(unit)} (${rel.toFixed(2)} of the best)</title></rect>`,
                );
                parts.push(`<text x="${(LABEL + w + 6).toFixed(1)}" y="${y + 13}">${fmtNum(r.median)} · ${rel.toFixed(2)}</text>`);
            }
            y += ROW;
        }
        y += GAP;
    }
    $('chart').innerHTML =
        `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${y}" viewBox="0 0 ${W} ${y}" role="img" aria-label="benchmark chart">${parts.join('')}</svg>`;
}

let running = false;

async function run() {
    if (running) return;
    running = true;
    $('run').disabled = true;
    window.__benchDone = false;
    try {
        const { list: all } = await ask({ list: true });
        for (const name of opts.contenders ?? []) if (!all.some((c) => c.name === name)) throw new Error(`unknown contender ${name}`);
        for (const name of opts.cases ?? [])
            if (!CASES.includes(baseCase(name))) throw new Error(`unknown case ${name} (cases: ${CASES.join(', ')})`);
        const chosen = all.filter((c) => !opts.contenders || opts.contenders.includes(c.name));
        const caseNames = CASES.filter((c) => !opts.cases || opts.cases.some((x) => baseCase(x) === c));
        const env = {
            date: new Date().toISOString(),
            userAgent: navigator.userAgent,
            cores: navigator.hardwareConcurrency,
            runs: opts.runs,
            targetMs: opts.targetMs,
            quick: opts.quick,
            isolation: 'each case runs in a fresh module worker; no forced gc',
            contenders: chosen.map((c) => ({ name: c.name, version: VERSIONS[c.name] ?? c.version ?? '?', kind: c.kind })),
        };
        const rows = [],
            missing = [];
        const started = performance.now();
        for (const [i, caseName] of caseNames.entries()) {
            progress(`${caseName} (${i + 1} of ${caseNames.length}): setup`);
            const filter = opts.cases?.filter((x) => baseCase(x) === caseName) ?? null;
            const out = await ask({
                caseName,
                filter: filter?.includes(caseName) ? null : filter,
                contenders: chosen.map((c) => c.name),
                runs: opts.runs,
                targetMs: opts.targetMs,
            });
            rows.push(...out.rows);
            missing.push(...out.missing);
            renderTable(rows, missing);
            renderChart(rows);
        }
        const failed = rows.filter((r) => r.median == null);
        progress(
            `done in ${((performance.now() - started) / 1000).toFixed(0)} s` + (failed.length ? ` · ${failed.length} row(s) FAILED` : ''),
        );
        window.__benchResults = {
            env,
            results: rows.map(({ samples, ...r }) => ({ ...r, samplesMsPerOp: samples })),
            missing,
        };
        window.__benchDone = true;
    } catch (err) {
        progress(`error: ${err.message}`);
        console.error(err);
    } finally {
        running = false;
        $('run').disabled = false;
    }
}

$('run').addEventListener('click', run);
if (params.has('autorun')) run();
