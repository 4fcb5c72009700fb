// @ts-check
// The page's controls and live statistics. The controls only call the demo's API
// (configure, step); the statistics are refreshed a few times a second from `stats()`, the
// mirror's every frame from `stats().mirror`.
import { MIRROR_MAX_COUNT } from './mirror.js';

/** @typedef {import('./main.js').DemoStats} DemoStats */
/** @typedef {import('./main.js').DemoSettings} DemoSettings */
/** @typedef {import('./render.js').RenderPath} RenderPath */

/**
 * What the controls drive.
 * @typedef {object} ControlActions
 * @property {(changes: Partial<DemoSettings>) => void} configure
 * @property {() => void} step
 * @property {(path: RenderPath) => void} setRenderPath
 */

/**
 * @template {HTMLElement} T
 * @param {string} id
 * @param {new () => T} type
 * @returns {T}
 */
function element(id, type) {
    const found = document.getElementById(id);
    if (!(found instanceof type)) throw new Error(`the page has no #${id}`);
    return found;
}

/**
 * Selects `value` in a select, adding an option for it when the list has none (a URL may ask
 * for any count or rate).
 * @param {HTMLSelectElement} select
 * @param {string} value
 * @param {string} label
 */
function choose(select, value, label) {
    if (![...select.options].some((option) => option.value === value)) {
        const option = new Option(label, value);
        const after = [...select.options].find((o) => Number(o.value) > Number(value));
        select.add(option, after);
    }
    select.value = value;
}

/**
 * True when the element keeps the keys typed in it: a list, a text area, an editable element,
 * or an input that takes text or numbers (not a checkbox, a radio button or a button).
 * @param {EventTarget | null} target
 */
function ownsKeys(target) {
    if (target instanceof HTMLSelectElement || target instanceof HTMLTextAreaElement) return true;
    if (target instanceof HTMLInputElement)
        return !['checkbox', 'radio', 'button', 'submit', 'reset', 'range', 'color'].includes(target.type);
    return target instanceof HTMLElement && target.isContentEditable;
}

/** The page's controls: #count, #emit, #mode, #render, #mirror, #pause, #step, and keyboard keys. */
export class Controls {
    /** @param {ControlActions} actions */
    constructor(actions) {
        this.count = element('count', HTMLSelectElement);
        this.emit = element('emit', HTMLSelectElement);
        this.mode = element('mode', HTMLSelectElement);
        this.render = element('render', HTMLSelectElement);
        this.mirror = element('mirror', HTMLSelectElement);
        this.pause = element('pause', HTMLButtonElement);
        this.stepButton = element('step', HTMLButtonElement);
        this.count.addEventListener('change', () => actions.configure({ count: Number(this.count.value) }));
        this.emit.addEventListener('change', () => actions.configure({ emitRate: Number(this.emit.value) }));
        this.mode.addEventListener('change', () => actions.configure({ mode: this.mode.value === 'js' ? 'js' : 'wasm' }));
        this.render.addEventListener('change', () => actions.setRenderPath(/** @type {RenderPath} */ (this.render.value)));
        this.mirror.addEventListener('change', () => actions.configure({ mirror: this.mirror.value === 'on' }));
        this.pause.addEventListener('click', () => actions.configure({ paused: this.pause.getAttribute('aria-pressed') !== 'true' }));
        this.stepButton.addEventListener('click', () => {
            actions.configure({ paused: true });
            actions.step();
        });
        // A choice made in a list with the mouse gives the page its keys back (the list keeps
        // focus otherwise, and its keys are its own); one made with the keyboard keeps focus there.
        for (const select of [this.count, this.emit, this.mode, this.render, this.mirror]) {
            let pointer = false;
            select.addEventListener('pointerdown', () => (pointer = true));
            select.addEventListener('keydown', () => (pointer = false));
            select.addEventListener('change', () => {
                if (pointer) select.blur();
                pointer = false;
            });
        }
        // The shortcuts work wherever the focus is (after a click on a button too), except in
        // the fields whose keys mean something there: lists, text and number inputs.
        document.addEventListener('keydown', (event) => {
            if (event.ctrlKey || event.metaKey || event.altKey || event.repeat) return;
            if (ownsKeys(event.target)) return;
            if (event.key === ' ') {
                // Not also the focused button's own press (Space clicks a focused button).
                event.preventDefault();
                this.pause.click();
            } else if (event.key === '.' || event.key === 'ArrowRight') {
                event.preventDefault();
                this.stepButton.click();
            } else if (event.key === 'm' || event.key === 'M') {
                actions.configure({ mode: this.mode.value === 'js' ? 'wasm' : 'js' });
            }
        });
    }

    /**
     * Shows the settings (after a change from the API or the keyboard).
     * @param {DemoSettings} settings
     * @param {RenderPath} renderPath
     */
    show(settings, renderPath) {
        choose(this.count, String(settings.count), settings.count.toLocaleString('en-US'));
        choose(this.emit, String(settings.emitRate), settings.emitRate.toLocaleString('en-US'));
        this.mode.value = settings.mode;
        this.render.value = renderPath;
        this.mirror.value = settings.mirror ? 'on' : 'off';
        this.pause.setAttribute('aria-pressed', String(settings.paused));
        this.pause.textContent = settings.paused ? 'Resume' : 'Pause';
    }
}

const integer = new Intl.NumberFormat('en-US');
const decimal = new Intl.NumberFormat('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 });

/** @param {number} bytes */
function mebibytes(bytes) {
    return `${(bytes / 1048576).toFixed(1)} MiB`;
}

/**
 * A byte count: whole bytes below 10 KiB, then KiB, then MiB.
 * @param {number} bytes
 */
function byteSize(bytes) {
    if (bytes < 10 * 1024) return `${integer.format(Math.round(bytes))} B`;
    if (bytes < 10 * 1048576) return `${(bytes / 1024).toFixed(1)} KiB`;
    return mebibytes(bytes);
}

/** @param {number} ms */
function milliseconds(ms) {
    return `${decimal.format(ms)} ms`;
}

/**
 * How each statistic reads on the page; the keys are the `data-stat` names.
 * @type {Record<string, (stats: any) => string>}
 */
const FORMATS = {
    fps: (s) => integer.format(Math.round(s.fps)),
    frameMs: (s) => milliseconds(s.frameMs),
    simMs: (s) => milliseconds(s.simMs),
    renderMs: (s) => milliseconds(s.renderMs),
    motionMs: (s) => milliseconds(Number(s.motionMs)),
    entities: (s) => integer.format(s.entities),
    targetCount: (s) => integer.format(s.targetCount),
    emitRate: (s) => `${integer.format(s.emitRate)} / tick`,
    spawned: (s) => integer.format(Number(s.spawned)),
    mode: (s) => (s.mode === 'wasm' ? 'wasm kernels' : 'JS loops'),
    paused: (s) => (s.paused ? 'paused' : 'running'),
    archetypes: (s) => integer.format(s.archetypes),
    chunks: (s) => integer.format(s.chunks),
    memoryBytes: (s) => mebibytes(s.memoryBytes),
    changedThisTick: (s) => integer.format(s.changedThisTick),
    frame: (s) => integer.format(s.frame),
    renderPath: (s) => s.renderPath,
};

/**
 * The mirror's statistics (`stats().mirror`, see demo/mirror.js), under their own `data-stat`
 * names in the mirror's parts of the page.
 * @type {Record<string, (stats: import('./mirror.js').MirrorStats) => string>}
 */
export const MIRROR_FORMATS = {
    mirrorState: (s) => {
        if (!s.available) return 'unavailable in this browser';
        if (s.enabled) return 'on';
        if (s.wanted && s.held) return `held above ${integer.format(MIRROR_MAX_COUNT)} particles`;
        return s.wanted ? 'starting' : 'off';
    },
    deltaBytes: (s) => byteSize(s.deltaBytes),
    deltaBytesAvg: (s) => byteSize(s.deltaBytesAvg),
    snapshotBytes: (s) => byteSize(s.snapshotBytes),
    deltaShare: (s) => (s.snapshotBytes ? `${Math.round((100 * s.deltaBytesAvg) / s.snapshotBytes)}%` : '–'),
    keyframes: (s) => integer.format(s.keyframes),
    deltas: (s) => integer.format(s.deltas),
    skipped: (s) => integer.format(s.skipped),
    sourceTick: (s) => integer.format(s.sourceTick),
    replicaTick: (s) => integer.format(s.replicaTick),
    replicaEntities: (s) => integer.format(s.replicaEntities),
    inFlight: (s) => integer.format(s.inFlight),
    encodeMs: (s) => milliseconds(s.encodeMs),
    applyMs: (s) => milliseconds(s.applyMs),
};

/**
 * Statistics on the page: every element with a `data-stat` inside the elements `scope`
 * selects (`#stats`, the `<dl>` of the panel; `.mirror-stats`, the mirror's list and the
 * caption under its canvas), formatted by `formats`.
 */
export class StatsView {
    /**
     * @param {string} scope a CSS selector
     * @param {Record<string, (stats: any) => string>} [formats]
     */
    constructor(scope, formats = FORMATS) {
        /** @type {[HTMLElement, (stats: any) => string][]} */
        this.fields = [];
        for (const cell of document.querySelectorAll(`${scope} [data-stat]`)) {
            const format = formats[/** @type {HTMLElement} */ (cell).dataset.stat ?? ''];
            if (format && cell instanceof HTMLElement) this.fields.push([cell, format]);
        }
        if (this.fields.length === 0) throw new Error(`the page has no statistics in ${scope}`);
    }

    /** @param {object} stats */
    show(stats) {
        for (const [cell, format] of this.fields) {
            const text = format(stats);
            if (cell.textContent !== text) cell.textContent = text;
        }
    }
}

/**
 * Shows an error in the page's error box (and keeps the first ones).
 * @param {unknown} error
 */
export function showError(error) {
    const box = document.getElementById('error');
    if (!box) return;
    const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    const line = document.createElement('pre');
    line.textContent = text;
    box.append(line);
    box.hidden = false;
}
