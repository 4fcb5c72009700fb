// @ts-check
// The demo page: loads tessera, builds the particle scenario, runs one tick and draws one
// frame per requestAnimationFrame, sends each tick's delta to the mirror (a replica world in a
// worker, drawn on the second canvas), and publishes `window.demo` (the contract the browser
// test and demo/measure.mjs drive the page through; see demo/README.md).
import { init } from '../dist/index.js';
import { Mirror } from './mirror.js';
import { RENDER_PATHS, Renderer } from './render.js';
import { Scenario } from './scenario.js';
import { Controls, MIRROR_FORMATS, StatsView, showError } from './ui.js';

/**
 * @typedef {object} DemoSettings
 * @property {number} count particles kept alive
 * @property {number} emitRate particles expiring and respawning per tick, on average
 * @property {import('./scenario.js').Mode} mode 'js' loops or 'wasm' kernels
 * @property {boolean} paused
 * @property {boolean} mirror the second canvas mirrors the world through deltas
 */

/**
 * What `window.demo.stats()` returns. Times are of the latest tick (ms); the page shows
 * rolling medians of the same.
 * @typedef {object} DemoStats
 * @property {number} fps frames ticked and drawn in the last second
 * @property {number} simMs the tick: every system plus world.tick()
 * @property {number} renderMs plotting the particles and handing the pixels to the canvas
 * @property {number} frameMs all the work of the frame: tick, mirror encode, render and the
 *   page update
 * @property {number} entities live entities (world.stats().entityCount)
 * @property {number} targetCount
 * @property {number} emitRate
 * @property {'js' | 'wasm'} mode
 * @property {boolean} paused
 * @property {number} archetypes
 * @property {number} chunks
 * @property {number} memoryBytes the wasm memory's size
 * @property {number} changedThisTick entities the Bounce subscription reported in the latest tick
 * @property {number} frame ticks so far (world.frame)
 * @property {import('./render.js').RenderPath} renderPath
 * @property {import('./mirror.js').MirrorStats} mirror the mirror's latest delta and replica
 */

const MAX_COUNT = 2_000_000;
/** Frames the on-page medians are taken over. */
const WINDOW = 60;

const params = new URLSearchParams(location.search);

/** @type {DemoSettings} */
const settings = {
    count: integerParam('count', 20_000, 0, MAX_COUNT),
    emitRate: integerParam('emit', 100, 0, MAX_COUNT),
    mode: params.get('mode') === 'js' ? 'js' : 'wasm',
    paused: params.get('paused') === '1',
    mirror: params.get('mirror') !== '0',
};
const renderParam = params.get('render');
/** @type {import('./render.js').RenderPath} */
const initialPath = RENDER_PATHS.find((path) => path === renderParam) ?? RENDER_PATHS[0] ?? 'add+lighter';

/**
 * A whole-number URL parameter, clamped.
 * @param {string} name @param {number} fallback @param {number} min @param {number} max
 */
function integerParam(name, fallback, min, max) {
    const value = Number(params.get(name) ?? fallback);
    return Number.isFinite(value) ? Math.min(max, Math.max(min, Math.round(value))) : fallback;
}

/** The median of the latest values pushed. */
class Rolling {
    constructor() {
        /** @type {number[]} */
        this.values = [];
        this.latest = 0;
    }

    /** @param {number} value */
    push(value) {
        this.latest = value;
        this.values.push(value);
        if (this.values.length > WINDOW) this.values.shift();
    }

    get median() {
        if (this.values.length === 0) return 0;
        const sorted = [...this.values].sort((a, b) => a - b);
        return sorted[sorted.length >> 1] ?? 0;
    }
}

/** @type {(value?: unknown) => void} */
let resolveReady = () => {};
/** @type {(reason: unknown) => void} */
let rejectReady = () => {};
const ready = new Promise((resolve, reject) => {
    resolveReady = resolve;
    rejectReady = reject;
});
// A failed start is reported by fail(); awaiting `ready` still rejects.
ready.catch(() => {});

/** @type {Scenario | undefined} */
let scenario;
/** @type {Renderer | undefined} */
let renderer;
/** @type {Mirror | undefined} */
let mirror;
/** @type {import('../dist/index.js').TesseraModule | undefined} */
let tessera;
/** @type {Partial<DemoSettings>} changes waiting for the next tick */
let pending = {};
/** Timestamps of the frames drawn in about the last second. */
const frameTimes = /** @type {number[]} */ ([]);
const times = { sim: new Rolling(), render: new Rolling(), frame: new Rolling(), motion: new Rolling() };
let failed = false;
/** @type {Controls | undefined} */
let controls;
/** @type {StatsView | undefined} */
let statsView;
/** @type {StatsView | undefined} */
let mirrorView;
let lastShown = 0;

/**
 * Changes settings: count, rate and mode take effect at the next tick, `paused` and `mirror`
 * at once.
 * @param {Partial<DemoSettings>} changes
 */
function configure(changes) {
    const next = { ...changes };
    if (next.count !== undefined) next.count = clampCount(next.count, 'count');
    if (next.emitRate !== undefined) next.emitRate = clampCount(next.emitRate, 'emitRate');
    if (next.mode !== undefined && next.mode !== 'js' && next.mode !== 'wasm') {
        throw new TypeError(`mode must be 'js' or 'wasm', got ${String(next.mode)}`);
    }
    if (next.paused !== undefined) {
        settings.paused = Boolean(next.paused);
        delete next.paused;
    }
    if (next.mirror !== undefined) {
        settings.mirror = Boolean(next.mirror);
        delete next.mirror;
        mirror?.setEnabled(settings.mirror);
    }
    pending = { ...pending, ...next };
    Object.assign(settings, next);
    controls?.show(settings, renderer?.path ?? initialPath);
    showStats(true);
}

/** @param {unknown} value @param {string} name */
function clampCount(value, name) {
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
        throw new TypeError(`${name} must be a number >= 0, got ${String(value)}`);
    }
    return Math.min(MAX_COUNT, Math.round(value));
}

/**
 * One tick (with the pending settings applied first), its delta sent to the mirror, and the
 * frame drawn after it.
 */
function tickAndDraw() {
    if (!scenario || !renderer) throw new Error('the demo is not ready yet: await window.demo.ready');
    const started = performance.now();
    if (Object.keys(pending).length > 0) {
        scenario.configure(pending);
        mirror?.holdAbove(scenario.count);
        pending = {};
    }
    const report = scenario.tick();
    const ticked = performance.now();
    // Before the render, so that the worker applies and draws while this thread draws.
    mirror?.send();
    const sent = performance.now();
    renderer.draw(scenario.visible, scenario.count, scenario.sparks, scenario.sparkCount);
    const drawn = performance.now();
    times.sim.push(ticked - started);
    times.motion.push(report.motionMs);
    times.render.push(drawn - sent);
    frameTimes.push(drawn);
    showStats(false);
    times.frame.push(performance.now() - started);
}

/** The `stats()` object (times of the latest tick). */
function stats() {
    const now = performance.now();
    while (frameTimes.length > 0 && (frameTimes[0] ?? 0) < now - 1000) frameTimes.shift();
    const world = scenario?.world;
    const counters = world && !world.destroyed ? world.stats() : undefined;
    /** @type {DemoStats} */
    const result = {
        fps: frameTimes.length,
        simMs: times.sim.latest,
        renderMs: times.render.latest,
        frameMs: times.frame.latest,
        entities: counters?.entityCount ?? 0,
        targetCount: settings.count,
        emitRate: settings.emitRate,
        mode: settings.mode,
        paused: settings.paused,
        archetypes: counters?.archetypeCount ?? 0,
        chunks: counters?.chunkCount ?? 0,
        memoryBytes: tessera?.memory.buffer.byteLength ?? 0,
        changedThisTick: scenario?.report.changed ?? 0,
        frame: world?.frame ?? 0,
        renderPath: renderer?.path ?? initialPath,
        mirror: mirror?.stats() ?? NO_MIRROR,
    };
    return result;
}

/** @type {import('./mirror.js').MirrorStats} */
const NO_MIRROR = {
    enabled: false,
    wanted: false,
    held: false,
    available: false,
    deltaBytes: 0,
    deltaBytesAvg: 0,
    snapshotBytes: 0,
    deltas: 0,
    keyframes: 0,
    skipped: 0,
    sourceTick: 0,
    sourceFrame: -1,
    replicaTick: 0,
    replicaEntities: 0,
    acked: 0,
    inFlight: 0,
    encodeMs: 0,
    applyMs: 0,
    renderMs: 0,
};

/**
 * Refreshes the on-page statistics: the mirror's at every call (every frame), the others
 * (medians) at most four times a second unless forced.
 * @param {boolean} force
 */
function showStats(force) {
    if (!statsView || !scenario) return;
    if (mirror) mirrorView?.show(mirror.stats());
    const now = performance.now();
    if (!force && now - lastShown < 250) return;
    lastShown = now;
    const report = scenario.report;
    statsView.show({
        ...stats(),
        simMs: times.sim.median,
        renderMs: times.render.median,
        frameMs: times.frame.median,
        motionMs: times.motion.median,
        spawned: report.spawned,
    });
}

/**
 * Stops the demo after an error: shown on the page and in the console, and `ready` rejects
 * if it had not resolved yet.
 * @param {unknown} error
 */
function fail(error) {
    failed = true;
    console.error(error);
    showError(error);
    rejectReady(error);
}

/** @param {number} _time */
function frame(_time) {
    if (failed) return;
    try {
        if (!settings.paused) tickAndDraw();
        else showStats(false);
    } catch (error) {
        fail(error);
        return;
    }
    requestAnimationFrame(frame);
}

/** The API the tests and the measurement script use; see demo/README.md. */
const demo = {
    ready,
    configure,
    /** Runs exactly one tick and draws it; returns the stats after it. */
    step() {
        tickAndDraw();
        showStats(true);
        return stats();
    },
    stats,
    /**
     * Positions of `count` entities in the source and in the mirror's replica at the same
     * tick (waits until the worker has caught up, at most `timeoutMs`); see demo/mirror.js.
     * @param {number} count
     * @param {number} [timeoutMs]
     */
    mirrorSample(count, timeoutMs) {
        if (!mirror) return Promise.reject(new Error('the demo is not ready yet: await window.demo.ready'));
        return mirror.sample(count, timeoutMs);
    },
    /** The latest tick's report: each step's time (ms) and counts. */
    tickReport() {
        return scenario ? { ...scenario.report } : undefined;
    },
    /** @param {import('./render.js').RenderPath} path */
    setRenderPath(path) {
        if (!RENDER_PATHS.includes(path)) {
            throw new TypeError(`render path must be one of ${RENDER_PATHS.join(', ')}`);
        }
        renderer?.setPath(path);
        mirror?.setPath(path);
        controls?.show(settings, path);
        showStats(true);
    },
};
Object.assign(window, { demo });

window.addEventListener('error', (event) => showError(event.error ?? event.message));
window.addEventListener('unhandledrejection', (event) => showError(event.reason));

async function start() {
    tessera = await init();
    const world = tessera.createWorld();
    scenario = new Scenario(world, settings);
    const canvas = document.getElementById('view');
    if (!(canvas instanceof HTMLCanvasElement)) throw new Error('the page has no canvas#view');
    renderer = new Renderer(canvas, initialPath);
    const mirrorCanvas = document.getElementById('mirror-view');
    if (!(mirrorCanvas instanceof HTMLCanvasElement)) throw new Error('the page has no canvas#mirror-view');
    // It starts sending once its worker has loaded tessera: until then ticks are not mirrored.
    mirror = new Mirror(world, mirrorCanvas, { enabled: settings.mirror, path: initialPath, onError: fail });
    mirror.holdAbove(settings.count);
    controls = new Controls({ configure, step: () => demo.step(), setRenderPath: demo.setRenderPath });
    controls.show(settings, initialPath);
    statsView = new StatsView('#stats');
    mirrorView = new StatsView('.mirror-stats', MIRROR_FORMATS);
    // The first tick populates the world; the first frame shows it.
    tickAndDraw();
    showStats(true);
    resolveReady(undefined);
    requestAnimationFrame(frame);
}

start().catch(fail);
