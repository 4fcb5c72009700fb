// The measuring and reporting shared by the Node runner (run.mjs) and the browser page
// (web/bench/): which rows a case has, calibration + interleaved timed runs + checks, the
// speed ratios, and the table cells. Plain ES module, no Node-only APIs.
import { baseCase, isScenario } from './shared.js';

export function timeBatch(op, n) {
    const t0 = performance.now();
    for (let i = 0; i < n; i++) op();
    return performance.now() - t0;
}

export const fmtNum = (x) => {
    if (!Number.isFinite(x)) return String(x);
    const a = Math.abs(x);
    if (a >= 1e6) return (x / 1e6).toFixed(a >= 1e7 ? 1 : 2) + 'M';
    if (a >= 1e4) return (x / 1e3).toFixed(a >= 1e5 ? 0 : 1) + 'k';
    if (a >= 100) return x.toFixed(0);
    if (a >= 10) return x.toFixed(1);
    if (a >= 1) return x.toFixed(2);
    return x.toPrecision(3);
};
export const fmtRatio = (r) => (r == null ? '—' : r >= 10 ? r.toFixed(1) : r >= 0.1 ? r.toFixed(2) : r.toPrecision(2));
export const median = (xs) => {
    const s = [...xs].sort((a, b) => a - b);
    const m = s.length >> 1;
    return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

// The rows of one case: every (contender, key) whose key is the case or a variant of it.
// `filter`: the --cases list (case names or full keys), or null for all.
export function entriesOf(chosen, caseName, filter) {
    const out = [];
    for (const c of chosen) {
        for (const key of Object.keys(c.cases)) {
            if (baseCase(key) !== caseName) continue;
            if (filter && !filter.includes(caseName) && !filter.includes(key)) continue;
            const variant = key === caseName ? '' : key.slice(caseName.length + 1);
            out.push({ contender: c, key, label: variant ? `${c.name} ${variant}` : c.name, kind: c.kind });
        }
    }
    return out;
}

// One case, all its rows: setup (untimed), calibration to >= targetMs per batch (the warm-up),
// `runs` interleaved timed batches (rotating order), each row's check(ops), then medians and
// ratios. Returns { rows, missing } (rows still carry `samples`, ms per op). `progress(text)`
// is told each stage (the browser page shows it).
export async function benchCase(caseName, { chosen, filter = null, runs, targetMs, gc = () => {}, progress = () => {} }) {
    const entries = entriesOf(chosen, caseName, filter);
    const scenario = isScenario(caseName);
    const rows = [];
    for (const e of entries) {
        const row = {
            case: caseName,
            key: e.key,
            contender: e.contender.name,
            label: e.label,
            kind: e.kind,
            unit: scenario ? 'ms/tick' : 'op/s',
        };
        rows.push(row);
        try {
            const t0 = performance.now();
            row.inst = await e.contender.cases[e.key]();
            row.setupMs = performance.now() - t0;
            row.ops = 0;
        } catch (err) {
            row.error = `setup: ${err.message}`;
        }
    }
    const live = rows.filter((r) => !r.error);
    progress(`${caseName}: calibrating ${live.length} row(s)`);
    // Calibrate (also the warm-up): grow the batch until one batch takes >= target.
    for (const r of live) {
        try {
            let n = 1,
                t = 0;
            for (;;) {
                t = timeBatch(r.inst.op, n);
                r.ops += n;
                if (t >= targetMs) break;
                const grow = t > 0 ? (targetMs * 1.15) / t : 100;
                n = Math.max(n + 1, Math.ceil(n * Math.min(100, Math.max(1.5, grow))));
            }
            r.batch = n;
            r.samples = [];
        } catch (err) {
            r.error = `op: ${err.message}`;
        }
    }
    const timed = live.filter((r) => !r.error);
    for (let run = 0; run < runs; run++) {
        progress(`${caseName}: run ${run + 1} of ${runs}`);
        for (let j = 0; j < timed.length; j++) {
            const r = timed[(j + run) % timed.length];
            if (r.error) continue;
            try {
                const t = timeBatch(r.inst.op, r.batch);
                r.ops += r.batch;
                r.samples.push(t / r.batch);
            } catch (err) {
                r.error = `op: ${err.message}`;
            }
        }
    }
    for (const r of live) {
        if (!r.error) {
            try {
                r.inst.check(r.ops);
                r.check = 'ok';
            } catch (err) {
                r.error = err.message;
                r.check = 'failed';
            }
        }
        try {
            r.inst.dispose?.();
        } catch {
            /* ignore */
        }
        delete r.inst;
    }
    gc();
    for (const r of rows) {
        if (r.error || !r.samples?.length) continue;
        const ms = r.samples;
        r.msMedian = median(ms);
        r.msMin = Math.min(...ms);
        r.msMax = Math.max(...ms);
        if (scenario) {
            r.median = r.msMedian;
            r.min = r.msMin;
            r.max = r.msMax;
        } else {
            r.median = 1000 / r.msMedian;
            r.min = 1000 / r.msMax;
            r.max = 1000 / r.msMin;
        }
    }
    const ok = rows.filter((r) => r.msMedian != null);
    const peers = ok.filter((r) => r.kind === 'peer');
    const best = peers.length ? peers.reduce((a, b) => (a.msMedian <= b.msMedian ? a : b)) : null;
    const raw = ok.find((r) => r.kind === 'limit');
    for (const r of ok) {
        r.vsBestPeer = best ? best.msMedian / r.msMedian : null;
        r.bestPeer = best?.label ?? null;
        r.vsRaw = raw ? raw.msMedian / r.msMedian : null;
    }
    const missing = chosen
        .filter((c) => !Object.keys(c.cases).some((k) => baseCase(k) === caseName))
        .map((c) => ({ case: caseName, contender: c.name, reason: c.missing?.[caseName] ?? 'not expressible' }));
    return { rows, missing };
}

export const TABLE_HEAD = ['case', 'contender', 'unit', 'median', 'min', 'max', 'vs best peer', 'vs raw'];

// The table's lines (header first): one per row, a dash line per contender missing the case.
export function tableLines(rows, missing) {
    const lines = [TABLE_HEAD];
    let lastCase = null;
    for (const [i, r] of rows.entries()) {
        const c = r.case === lastCase ? '' : r.case;
        lastCase = r.case;
        if (r.median == null) lines.push([c, r.label, r.unit, 'FAILED', r.error ?? '', '', '', '']);
        else lines.push([c, r.label, r.unit, fmtNum(r.median), fmtNum(r.min), fmtNum(r.max), fmtRatio(r.vsBestPeer), fmtRatio(r.vsRaw)]);
        const next = rows[i + 1];
        if (!next || next.case !== r.case) {
            for (const m of missing.filter((x) => x.case === r.case)) lines.push(['', m.contender, '', '—', '', '', '', '']);
        }
    }
    return lines;
}

// The markdown form of tableLines().
export function markdownTable(lines) {
    const L = ['| ' + lines[0].join(' | ') + ' |', '|---|---|---|--:|--:|--:|--:|--:|'];
    for (const l of lines.slice(1)) L.push('| ' + l.map((v) => String(v).replace(/\|/g, '\\|')).join(' | ') + ' |');
    return L;
}

// Plain-text columns, as the runners print them.
export function textTable(lines) {
    const widths = lines[0].map((_, i) => Math.max(...lines.map((l) => String(l[i]).length)));
    const right = new Set([3, 4, 5, 6, 7]);
    const out = [];
    for (const [k, l] of lines.entries()) {
        out.push(l.map((v, i) => (right.has(i) ? String(v).padStart(widths[i]) : String(v).padEnd(widths[i]))).join('  '));
        if (k === 0) out.push(widths.map((w) => '-'.repeat(w)).join('  '));
    }
    return out;
}
