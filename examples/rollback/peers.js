// @ts-check
// The rollback example's netcode, GGPO-style: two peers in one process, each with its own world
// running the game (game.js), joined by a link that delivers each message after a random number
// of ticks (so out of order too). Each tick a peer sends its player's input for a frame
// `inputDelay` ahead and simulates the current frame at once: the other player's input, when
// it has not arrived yet, is predicted to be the last one known. A world checkpoint is taken
// after every frame, so when an input arrives that differs from the one predicted for its
// frame, the peer rewinds to the state before that frame and simulates it and every frame after
// again with what it knows now. A frame is confirmed when both players' inputs for it and every
// earlier frame are known: its state is then final, and both peers must hash it alike.
//
// Works in Node and in a browser: nothing here but the game and the world. Everything random
// (the players' inputs, the latencies) comes from seeded generators, so runs are repeatable.
import { createGame, INPUTS, mulberry32 } from './game.js';

/** @typedef {import('../../dist/index.js').World} World */
/** @typedef {import('../../dist/index.js').TesseraModule} TesseraModule */
/** @typedef {{ frame: number, input: number }} InputMessage */

/**
 * A player's inputs, tick after tick: it holds one for a while (1 tick in 6 it picks another at
 * random), as a player holds a key; predicting "the same as before" is then mostly right.
 * @param {number} seed
 * @param {number} player
 * @returns {() => number}
 */
export function inputStream(seed, player) {
    const next = mulberry32(Math.imul(seed, 0x9e3779b9) ^ (player + 1));
    let input = 0;
    return () => {
        if (next() % 6 === 0) input = next() % INPUTS;
        return input;
    };
}

/** One direction of the connection: each message arrives 1 to `maxLatency` ticks after it is sent. */
export class Link {
    /** @type {{ due: number, message: InputMessage }[]} */
    inFlight = [];

    /** @param {number} seed @param {number} maxLatency */
    constructor(seed, maxLatency) {
        this.latency = mulberry32(seed);
        this.maxLatency = maxLatency;
    }

    /** @param {number} now @param {InputMessage} message */
    send(now, message) {
        this.inFlight.push({ due: now + 1 + (this.latency() % this.maxLatency), message });
    }

    /** The messages due by `now`, in the order they were sent. @param {number} now */
    receive(now) {
        const due = this.inFlight.filter((m) => m.due <= now);
        this.inFlight = this.inFlight.filter((m) => m.due > now);
        return due.map((m) => m.message);
    }
}

export class Peer {
    /** What happened here so far. */
    counters = { rollbacks: 0, resimulated: 0, maxDepth: 0, mispredictions: 0 };
    /** @type {bigint[]} `confirmedHashes[f]`: world.hash() after frame f, once f is confirmed (then final). */
    confirmedHashes = [];
    /** Frames simulated: the world holds the state after frames 0 to frame - 1. */
    frame = 0;

    /**
     * @param {World} world an empty world; the peer fills it and owns it
     * @param {object} options
     * @param {0 | 1} options.player the player whose input this peer makes (the other is remote)
     * @param {Link} options.inbox the link from the other peer
     * @param {Link} options.outbox the link to the other peer
     * @param {number} [options.seed] the game's and the inputs' seed, the same on both peers
     * @param {number} [options.inputDelay] frames between making an input and simulating it
     * @param {number} [options.asteroids]
     * @param {boolean} [options.rollback] false: predictions are never corrected (for the
     *   control test: the peers' worlds part)
     */
    constructor(world, { player, inbox, outbox, seed = 1, inputDelay = 2, asteroids = 200, rollback = true }) {
        this.world = world;
        this.game = createGame(world, { seed, asteroids });
        this.player = player;
        this.remote = 1 - player;
        this.inbox = inbox;
        this.outbox = outbox;
        this.inputDelay = inputDelay;
        this.rollback = rollback;
        this.nextInput = inputStream(seed, player);
        /** @type {number[][]} `inputs[p][f]`: player p's input for frame f, once known here (the first `inputDelay` frames: 0, no input). */
        this.inputs = [Array(inputDelay).fill(0), Array(inputDelay).fill(0)];
        /** Remote inputs are known for every frame below this one. */
        this.remoteKnown = inputDelay;
        /** @type {number[]} `used[f]`: the remote input frame f was last simulated with (known or predicted). */
        this.used = [];
        /** @type {bigint[]} `hashAfter[f]`: the world's hash after frame f as last simulated (maybe on a prediction). */
        this.hashAfter = [];
        /** `checkpointOf[f]`: the world's checkpoint of the state before frame f. */
        this.checkpointOf = [world.checkpoint()];
    }

    /**
     * One tick: take in what arrived, roll back if a prediction was wrong, then (unless
     * `simulate` is false: the link is only drained) send this player's next input and simulate
     * the current frame.
     * @param {number} now the tick
     */
    tick(now, simulate = true) {
        let wrong = Infinity; // the first frame simulated with a wrong remote input
        for (const { frame, input } of this.inbox.receive(now)) {
            this.inputs[this.remote][frame] = input;
            if (frame < this.frame && this.used[frame] !== input) {
                this.counters.mispredictions++;
                wrong = Math.min(wrong, frame);
            }
        }
        while (this.inputs[this.remote][this.remoteKnown] !== undefined) this.remoteKnown++;
        if (wrong < this.frame && this.rollback) this.rollBackTo(wrong);
        if (simulate) {
            const input = this.nextInput();
            const frame = this.frame + this.inputDelay;
            this.inputs[this.player][frame] = input;
            this.outbox.send(now, { frame, input });
            this.advance();
        }
        // Every frame up to the confirmed one was simulated with the inputs both players sent.
        const confirmed = Math.min(this.remoteKnown, this.frame);
        while (this.confirmedHashes.length < confirmed) this.confirmedHashes.push(this.hashAfter[this.confirmedHashes.length]);
    }

    /** The remote input for a frame not yet known: the latest one known before it. @param {number} frame */
    predict(frame) {
        for (let f = frame - 1; f >= 0; f--) {
            const input = this.inputs[this.remote][f];
            if (input !== undefined) return input;
        }
        return 0;
    }

    /** Simulates the next frame with the inputs known or predicted now, then checkpoints and hashes it. */
    advance() {
        const frame = this.frame;
        const local = this.inputs[this.player][frame];
        if (local === undefined) throw new Error(`peer ${this.player}: no local input for frame ${frame}`);
        const remote = this.inputs[this.remote][frame] ?? this.predict(frame);
        this.used[frame] = remote;
        this.game.step(frame, this.player === 0 ? [local, remote] : [remote, local]);
        this.frame = frame + 1;
        this.checkpointOf[this.frame] = this.world.checkpoint();
        this.hashAfter[frame] = this.world.hash();
    }

    /** Rewinds to the state before `frame` and simulates again up to the current frame. @param {number} frame */
    rollBackTo(frame) {
        const depth = this.frame - frame;
        const checkpoint = this.checkpointOf[frame];
        const kept = this.world.checkpoints;
        // The ring must reach back as far as the latest input can be late: else it is too small
        // for the link (maxLatency - inputDelay frames), a bug of the settings, never ignored.
        if (checkpoint === undefined || !kept || checkpoint < kept.oldest) {
            throw new Error(
                `peer ${this.player}: a rollback of ${depth} frames needs checkpoint ${checkpoint}, kept: ${JSON.stringify(kept)}`,
            );
        }
        this.world.rewind(checkpoint);
        const end = this.frame;
        this.frame = frame;
        this.checkpointOf.length = frame + 1;
        while (this.frame < end) this.advance();
        this.counters.rollbacks++;
        this.counters.resimulated += depth;
        this.counters.maxDepth = Math.max(this.counters.maxDepth, depth);
    }
}

/**
 * @typedef {object} PeersOptions
 * @property {TesseraModule} tessera the loaded module (`await init()`): it makes the worlds
 * @property {number} [seed] the game's, the inputs' and the link's seed
 * @property {number} [inputDelay] frames between making an input and simulating it (default 2)
 * @property {number} [maxLatency] the longest a message takes, in ticks (default 6); the
 *   deepest rollback is maxLatency - inputDelay frames
 * @property {number} [checkpoints] the worlds' checkpoint ring (default 16)
 * @property {number} [asteroids]
 * @property {boolean} [rollback] false: never rewind (predictions stay uncorrected)
 */

/**
 * Two peers, players 0 and 1, each with its own world, and the link between them. `step()`
 * runs one tick of both (in turn: a message takes at least a tick, so the order is fair);
 * `settle()` delivers what is in flight without simulating more, so both confirm every frame.
 * @param {PeersOptions} options
 */
export function connectPeers({ tessera, seed = 1, inputDelay = 2, maxLatency = 6, checkpoints = 16, asteroids = 200, rollback = true }) {
    /** @type {[Link, Link]} links[i]: the link to peer i */
    const links = [new Link(seed * 2 + 1, maxLatency), new Link(seed * 2 + 2, maxLatency)];
    /** @param {0 | 1} player */
    const peer = (player) =>
        new Peer(tessera.createWorld({ checkpoints }), {
            player,
            inbox: links[player],
            outbox: links[1 - player],
            seed,
            inputDelay,
            asteroids,
            rollback,
        });
    /** @type {[Peer, Peer]} */
    const peers = [peer(0), peer(1)];
    let now = 0;
    return {
        peers,
        links,
        get now() {
            return now;
        },
        step() {
            for (const peer of peers) peer.tick(now);
            now++;
        },
        settle() {
            while (links.some((link) => link.inFlight.length > 0)) {
                for (const peer of peers) peer.tick(now, false);
                now++;
            }
        },
        destroy() {
            for (const peer of peers) peer.world.destroy();
        },
    };
}

/**
 * Runs `ticks` ticks of two peers, lets the last inputs arrive, and returns each peer's
 * confirmed hashes (one per frame), how many frames they agree on, and the peers' counters
 * (also summed; `maxDepth` is the deepest of both).
 * @param {PeersOptions & { ticks?: number }} options
 */
export function runPeers({ ticks = 1000, ...options }) {
    const session = connectPeers(options);
    try {
        for (let t = 0; t < ticks; t++) session.step();
        session.settle();
        const [a, b] = session.peers.map((peer) => peer.confirmedHashes);
        const counters = session.peers.map((peer) => ({ ...peer.counters }));
        return {
            ticks,
            hashes: [a, b],
            agreeing: a.filter((hash, frame) => hash === b[frame]).length,
            peers: counters,
            rollbacks: counters[0].rollbacks + counters[1].rollbacks,
            resimulated: counters[0].resimulated + counters[1].resimulated,
            maxDepth: Math.max(counters[0].maxDepth, counters[1].maxDepth),
            mispredictions: counters[0].mispredictions + counters[1].mispredictions,
        };
    } finally {
        session.destroy();
    }
}

/**
 * The reference: one world simulated straight through with both players' true inputs, no
 * link, no prediction; its hash after every frame. What both peers confirm must equal it.
 * @param {{ tessera: TesseraModule, ticks?: number, seed?: number, inputDelay?: number, asteroids?: number }} options
 */
export function referenceHashes({ tessera, ticks = 1000, seed = 1, inputDelay = 2, asteroids = 200 }) {
    const world = tessera.createWorld();
    try {
        const game = createGame(world, { seed, asteroids });
        const streams = [inputStream(seed, 0), inputStream(seed, 1)];
        /** @type {number[][]} */
        const inputs = [Array(inputDelay).fill(0), Array(inputDelay).fill(0)];
        const hashes = [];
        for (let frame = 0; frame < ticks; frame++) {
            for (const player of [0, 1]) inputs[player].push(streams[player]());
            game.step(frame, [inputs[0][frame], inputs[1][frame]]);
            hashes.push(world.hash());
        }
        return hashes;
    } finally {
        world.destroy();
    }
}
