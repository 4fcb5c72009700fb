// @ts-check
// The mirror, page side: a replicator over the simulated world encodes, once per tick, what
// changed since the tick the replica last acknowledged; the bytes go to a worker
// (demo/replica-worker.js) that applies them to a world of its own and draws it on the second
// canvas. Nothing else crosses: no setup, no component definitions, no snapshot.
//
// Only Position and Color travel (the replicator's `components`): they are all the mirror
// draws. Velocity, Lifetime and Bounce are the simulation's business, and Lifetime and
// Velocity change on every row every tick, so replicating them would roughly double each
// delta (and make the replicator track two more columns' changes).
import { Color, Position } from './scenario.js';

/** @typedef {import('../dist/index.js').World} World */
/** @typedef {import('../dist/index.js').Replicator} Replicator */
/** @typedef {import('../dist/index.js').Peer} Peer */
/** @typedef {import('./render.js').RenderPath} RenderPath */

/**
 * What `window.demo.stats().mirror` holds (bytes, ticks, ms).
 * @typedef {object} MirrorStats
 * @property {boolean} enabled the mirror is on (the replicator exists)
 * @property {boolean} wanted switched on (by the control or `mirror=0` in the URL)
 * @property {boolean} held on hold: more than MIRROR_MAX_COUNT particles
 * @property {boolean} available this browser can run it (module workers, OffscreenCanvas)
 * @property {number} deltaBytes the latest delta's size
 * @property {number} deltaBytesAvg the mean size of the last AVERAGE_OVER deltas
 * @property {number} snapshotBytes `world.snapshot().length`, refreshed every few seconds and when the population changed
 * @property {number} deltas deltas sent since the page loaded
 * @property {number} keyframes of them, keyframes (the first, and one after each switch on)
 * @property {number} skipped ticks not encoded because the worker was behind
 * @property {number} sourceTick the tick of the latest delta sent (the source's change tick)
 * @property {number} sourceFrame `world.frame` when it was encoded
 * @property {number} replicaTick the latest tick the worker acknowledged
 * @property {number} replicaEntities live entities in the replica at that tick
 * @property {number} acked the tick the next delta is encoded against (0: a keyframe)
 * @property {number} inFlight deltas posted and not yet acknowledged
 * @property {number} encodeMs the latest encode and copy, on the page's thread
 * @property {number} applyMs the latest apply, in the worker
 * @property {number} renderMs the worker's latest frame
 */

/**
 * Replica positions of sampled entities next to the source's, at the same tick.
 * @typedef {object} MirrorSample
 * @property {number} tick the source tick both are at
 * @property {number} replicaTick what the worker reported
 * @property {number[]} handles
 * @property {number[]} source x, y pairs
 * @property {number[]} replica x, y pairs (NaN where the replica lacks the entity)
 */

/**
 * Above this many particles the mirror holds (closes its replicator) until the count comes
 * back down: every particle moves every tick, so every delta carries every position, and
 * encoding costs about 0.1 us per particle on this thread (1.9 ms at 20k, 4.8 ms at 50k;
 * demo/results.md). Above the limit the page runs as without a mirror.
 */
export const MIRROR_MAX_COUNT = 50_000;
/** Deltas the page lets the worker lag behind; beyond that it skips ticks (see send). */
const MAX_IN_FLIGHT = 2;
/** Deltas the average size is taken over: a quarter second at 60 fps. */
const AVERAGE_OVER = 15;
/** How often the snapshot is taken for comparison: it copies the whole world. */
const SNAPSHOT_EVERY_MS = 5000;
/** ... and at once when the population moved by more than this share since the last one. */
const SNAPSHOT_RETAKE_SHARE = 0.02;

export class Mirror {
    /**
     * @param {World} world the simulated world
     * @param {HTMLCanvasElement} canvas the second canvas (its control moves to the worker)
     * @param {{ enabled: boolean, path: RenderPath, onError: (error: unknown) => void }} options
     */
    constructor(world, canvas, { enabled, path, onError }) {
        this.world = world;
        this.onError = onError;
        this.wanted = enabled;
        this.held = false;
        this.available = typeof Worker === 'function' && typeof canvas.transferControlToOffscreen === 'function';
        /** @type {Replicator | undefined} */
        this.replicator = undefined;
        /** @type {Peer | undefined} */
        this.peer = undefined;
        /**
         * Bumped at every switch on: acknowledgements of an earlier replicator's deltas (still
         * in flight when it closed) must not count for the new one.
         */
        this.epoch = 0;
        this.workerReady = false;
        this.inFlight = 0;
        /** @type {number[]} */
        this.sizes = [];
        this.counts = { deltas: 0, keyframes: 0, skipped: 0 };
        this.sent = { bytes: 0, tick: 0, frame: -1 };
        this.replica = { tick: 0, entities: 0, applyMs: 0, renderMs: 0 };
        this.encodeMs = 0;
        this.snapshotBytes = 0;
        this.snapshotAt = -Infinity;
        /** The entity count when the snapshot was taken. */
        this.snapshotEntities = 0;
        /** @type {Map<number, (message: { tick: number, positions: Float64Array }) => void>} */
        this.pendingSamples = new Map();
        this.sampleId = 0;
        /** @type {Worker | undefined} */
        this.worker = undefined;
        if (!this.available) return;
        const worker = new Worker(new URL('./replica-worker.js', import.meta.url), { type: 'module' });
        this.worker = worker;
        worker.addEventListener('message', (event) => this.receive(event.data));
        // A module that fails to load reports here, with no more than a message.
        worker.addEventListener('error', (event) => onError(new Error(`mirror worker: ${event.message || 'failed to load'}`)));
        const offscreen = canvas.transferControlToOffscreen();
        worker.postMessage({ type: 'init', canvas: offscreen, path }, [offscreen]);
    }

    /** @returns {boolean} */
    get enabled() {
        return this.replicator !== undefined;
    }

    /**
     * Switches the mirror on or off. Off closes the replicator, so the world stops tracking
     * Position and Color changes for it and the simulation costs what it did without a mirror;
     * on makes a new one, whose first delta is a keyframe.
     * @param {boolean} on
     */
    setEnabled(on) {
        this.wanted = on;
        this.update();
    }

    /**
     * Holds the mirror (as if off) while the population is above MIRROR_MAX_COUNT.
     * @param {number} count the target population
     */
    holdAbove(count) {
        const held = count > MIRROR_MAX_COUNT;
        if (held === this.held) return;
        this.held = held;
        this.update();
    }

    /** Makes or closes the replicator to match the switch, the hold and the worker. */
    update() {
        const on = this.wanted && !this.held;
        if (on && !this.replicator && this.workerReady) {
            this.epoch++;
            this.replicator = this.world.replicator({ components: [Position, Color] });
            this.peer = this.replicator.peer();
        } else if (!on && this.replicator) {
            this.replicator.close();
            this.replicator = undefined;
            this.peer = undefined;
            // The readouts say what a delta costs now: nothing.
            this.sizes = [];
            this.sent = { ...this.sent, bytes: 0 };
            this.worker?.postMessage({ type: 'off' });
        }
    }

    /** @param {RenderPath} path */
    setPath(path) {
        this.worker?.postMessage({ type: 'path', path });
    }

    /**
     * After a tick: encodes what changed since the replica's acknowledged tick and posts it,
     * the copy's buffer transferred rather than cloned. Once per tick, after the simulation:
     * an encode advances the world's change tick like a system run. When the worker lags
     * MAX_IN_FLIGHT deltas behind, the tick is skipped rather than queued: the next delta,
     * encoded against the acknowledged tick, covers it, and a slow replica drops frames
     * instead of falling further behind.
     */
    send() {
        if (!this.peer || !this.worker) return;
        this.refreshSnapshot();
        // A keyframe on its way is the whole state: a second one would be as big, and the
        // first acknowledgement makes the next delta a small one.
        if (this.inFlight >= MAX_IN_FLIGHT || (this.inFlight > 0 && this.peer.acked === 0)) {
            this.counts.skipped++;
            return;
        }
        const started = performance.now();
        const delta = this.peer.encode();
        // The bytes are a view of wasm memory, valid until the next encode: copy them out.
        const bytes = delta.bytes.slice();
        this.encodeMs = performance.now() - started;
        this.counts.deltas++;
        if (delta.keyframe) this.counts.keyframes++;
        this.sent = { bytes: bytes.length, tick: delta.tick, frame: this.world.frame };
        this.sizes.push(bytes.length);
        if (this.sizes.length > AVERAGE_OVER) this.sizes.shift();
        // Transferred, so `bytes` is empty from here on.
        this.worker.postMessage({ type: 'delta', epoch: this.epoch, bytes: bytes.buffer }, [bytes.buffer]);
        this.inFlight++;
    }

    /**
     * The whole world's snapshot size, for comparison: taken now and then, as it copies
     * everything, and again as soon as the population changed (a new count), so that the
     * figure describes the world the deltas come from.
     */
    refreshSnapshot() {
        const now = performance.now();
        const entities = this.world.stats().entityCount;
        const moved = Math.abs(entities - this.snapshotEntities) > SNAPSHOT_RETAKE_SHARE * Math.max(entities, this.snapshotEntities);
        if (!moved && now - this.snapshotAt < SNAPSHOT_EVERY_MS) return;
        this.snapshotAt = now;
        this.snapshotEntities = entities;
        this.snapshotBytes = this.world.snapshot().length;
    }

    /**
     * A message from the worker.
     * @param {any} message
     */
    receive(message) {
        try {
            if (message.type === 'ready') {
                this.workerReady = true;
                this.update();
            } else if (message.type === 'applied' || message.type === 'resync') {
                this.inFlight = Math.max(0, this.inFlight - 1);
                if (message.epoch !== this.epoch || !this.peer) return;
                if (message.type === 'resync') {
                    // The replica lacked a delta's baseline: start it over from a keyframe.
                    this.peer.reset();
                    return;
                }
                this.peer.ack(message.tick);
                this.replica = {
                    tick: message.tick,
                    entities: message.entities,
                    applyMs: message.applyMs,
                    renderMs: message.renderMs,
                };
            } else if (message.type === 'sample') {
                const resolve = this.pendingSamples.get(message.id);
                this.pendingSamples.delete(message.id);
                resolve?.(message);
            } else if (message.type === 'error') {
                this.onError(new Error(`mirror worker: ${message.message}`));
            }
        } catch (error) {
            this.onError(error);
        }
    }

    /** @returns {MirrorStats} */
    stats() {
        const sizes = this.sizes;
        return {
            enabled: this.enabled,
            wanted: this.wanted,
            held: this.held,
            available: this.available,
            deltaBytes: this.sent.bytes,
            deltaBytesAvg: sizes.length ? sizes.reduce((sum, size) => sum + size, 0) / sizes.length : 0,
            snapshotBytes: this.snapshotBytes,
            deltas: this.counts.deltas,
            keyframes: this.counts.keyframes,
            skipped: this.counts.skipped,
            sourceTick: this.sent.tick,
            sourceFrame: this.sent.frame,
            replicaTick: this.replica.tick,
            replicaEntities: this.replica.entities,
            acked: this.peer?.acked ?? 0,
            inFlight: this.inFlight,
            encodeMs: this.encodeMs,
            applyMs: this.replica.applyMs,
            renderMs: this.replica.renderMs,
        };
    }

    /**
     * Positions of `count` entities picked across the world, in the source and in the
     * replica, at the same tick: it waits until the latest tick was sent and the worker has
     * acknowledged it, then reads the source and asks the worker in the same turn (the worker
     * answers messages in order, so it answers from that tick, whatever is sent after).
     * @param {number} count
     * @param {number} [timeoutMs]
     * @returns {Promise<MirrorSample>}
     */
    sample(count, timeoutMs = 10_000) {
        const deadline = performance.now() + timeoutMs;
        return new Promise((resolve, reject) => {
            const attempt = () => {
                const settled =
                    this.worker &&
                    this.peer &&
                    this.inFlight === 0 &&
                    this.sent.frame === this.world.frame &&
                    this.replica.tick === this.sent.tick;
                if (!settled) {
                    if (performance.now() > deadline) reject(new Error('the mirror did not catch up with the source'));
                    else setTimeout(attempt, 10);
                    return;
                }
                const query = this.world.query({ all: [Position] });
                const all = query.entities();
                query.close();
                const handles = new Uint32Array(Math.min(count, all.length));
                for (let i = 0; i < handles.length; i++) handles[i] = all[Math.floor((i * all.length) / handles.length)] ?? 0;
                /** @type {number[]} */
                const source = [];
                for (const entity of handles) {
                    const p = /** @type {{ x: number, y: number }} */ (this.world.get(entity, Position));
                    source.push(p.x, p.y);
                }
                const id = ++this.sampleId;
                const tick = this.sent.tick;
                this.pendingSamples.set(id, (reply) =>
                    resolve({ tick, replicaTick: reply.tick, handles: [...handles], source, replica: [...reply.positions] }),
                );
                this.worker?.postMessage({ type: 'sample', id, handles });
            };
            attempt();
        });
    }
}
