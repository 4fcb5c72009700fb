/**
 * Replication sessions over any transport: a `ReplicationServer` owns one replicator and a
 * connection per client, and frames what travels (deltas one way; acknowledgements, keyframe
 * requests and goodbyes the other); a `ReplicationClient` applies what its server sends to its
 * world and answers. Neither knows the network: a transport is anything with `send(bytes)`
 * (a WebSocket, an RTCDataChannel, a MessagePort, a worker), and the program hands each
 * message it receives to `receive(bytes)`. Messages may be lost, late, duplicated or
 * reordered: every delta is computed from the newest tick the client acknowledged, so the
 * next one covers what a lost one carried, and a late one changes nothing.
 *
 * A message is one type byte, then its body:
 *
 * | type | direction | body |
 * |--:|---|---|
 * | 1 `delta` | server → client | a delta or keyframe (docs/format.md) |
 * | 2 `ack` | client → server | the tick the client's world is at (f64, little-endian) |
 * | 3 `reset` | client → server | none: the client lacks a delta's baseline (it restarted, or a keyframe never arrived); the next delta is a keyframe |
 * | 4 `bye` | client → server | none: the client leaves; the server forgets it |
 *
 * @module
 */
import { TesseraError, describeValue } from './errors.js';
import type { Peer, PeerOptions, Replicator, ReplicatorOptions } from './replicate.js';
import type { World } from './world.js';

/** Where a session's messages go: anything with `send`. */
export interface Transport {
    /** Sends one message: fresh bytes, the transport's to keep (a queue may hold them). */
    send(bytes: Uint8Array): void;
}

/** The type byte of each message. */
export const MESSAGE = Object.freeze({ delta: 1, ack: 2, reset: 3, bye: 4 } as const);

/** The server side: one replicator over its world, one connection per client. */
export class ReplicationServer {
    /** The replicator every connection encodes with. */
    readonly replicator: Replicator;
    private readonly connections = new Set<Connection>();
    /**
     * @internal Updates in a row a client may get nothing when nothing changed for it: a
     * quarter of the history, so its acknowledged tick stays well within it.
     */
    readonly quiet: number;

    /**
     * A server over `world`: `options` are the replicator's (components, scope, history). Close
     * it when done: while it lives, the replicated components are change-tracked.
     */
    constructor(
        readonly world: World,
        options: ReplicatorOptions = {},
    ) {
        this.replicator = world.replicator(options);
        this.quiet = Math.floor((options.history ?? 64) / 4);
    }

    /**
     * A new client, sent to over `transport`: its first delta is a keyframe. `options` are its
     * peer's: `visibility: 'explicit'` to show it only what the game shows it
     * (`connection.peer.show(e)`), `budget` to cap the bytes of records per delta.
     */
    connect(transport: Transport, options: PeerOptions = {}): Connection {
        this.replicator.live('server.connect');
        if (typeof transport !== 'object' || transport === null || typeof transport.send !== 'function') {
            throw new TesseraError(
                'INVALID_ARGUMENT',
                'server.connect',
                `expected a transport with send(bytes), got ${describeValue(transport)}`,
            );
        }
        const connection = new Connection(this, transport, this.replicator.peer(options));
        this.connections.add(connection);
        return connection;
    }

    /** The open connections. */
    get clients(): number {
        return this.connections.size;
    }

    /**
     * Sends every client what changed since the tick it acknowledged (a keyframe to a new one,
     * or to one that asked, or fell more than `history` updates behind). A client for which
     * nothing changed gets nothing, but for an empty delta every `history / 4` updates. Call it
     * once a frame, after the frame's changes.
     */
    update(): void {
        this.replicator.live('server.update');
        for (const connection of this.connections) connection.update();
    }

    /** Closes every connection and the replicator. Idempotent. */
    close(): void {
        for (const connection of this.connections) connection.close();
        if (!this.replicator.closed) this.replicator.close();
    }

    /** @internal */
    forget(connection: Connection): void {
        this.connections.delete(connection);
    }
}

/** One client as the server sees it: what it acknowledged, and where its messages go. */
export class Connection {
    private open = true;
    /** Empty deltas left unsent since the last message. */
    private skipped = 0;

    /** @internal Use `server.connect(transport)`. */
    constructor(
        private readonly server: ReplicationServer,
        readonly transport: Transport,
        /** The client's peer: what it sees (`show` / `hide`) and its byte budget. */
        readonly peer: Peer,
    ) {}

    /** The newest tick the client acknowledged (0: none yet). */
    get acked(): number {
        return this.peer.acked;
    }

    /** False once the client left or was closed. */
    get connected(): boolean {
        return this.open;
    }

    /**
     * A message from the client. A malformed one throws `INVALID_ARGUMENT` and changes
     * nothing; one for a closed connection is ignored (it may arrive after the goodbye).
     */
    receive(bytes: Uint8Array): void {
        const operation = 'connection.receive';
        if (!(bytes instanceof Uint8Array) || bytes.length === 0) {
            throw new TesseraError(
                'INVALID_ARGUMENT',
                operation,
                `expected a message (a non-empty Uint8Array), got ${describeValue(bytes)}`,
            );
        }
        if (!this.open) return;
        const type = bytes[0];
        if (type === MESSAGE.ack && bytes.length === 9) {
            const tick = new DataView(bytes.buffer, bytes.byteOffset + 1, 8).getFloat64(0, true);
            if (!(Number.isSafeInteger(tick) && tick >= 0)) throw malformed(operation, `an ack of tick ${tick}`);
            this.peer.ack(tick);
        } else if (type === MESSAGE.reset && bytes.length === 1) {
            this.peer.reset();
        } else if (type === MESSAGE.bye && bytes.length === 1) {
            this.close();
        } else {
            throw malformed(operation, `type ${type}, ${bytes.length} bytes`);
        }
    }

    /** @internal Encodes for this client and sends: a fresh message, the transport's to keep. */
    update(): void {
        const delta = this.peer.encode();
        // Nothing for this client: nothing sent (the next delta, from the same acknowledgement,
        // covers the same), but now and then the empty one, so that its tick moves on.
        if (delta.empty && this.skipped < this.server.quiet) {
            this.skipped++;
            return;
        }
        this.skipped = 0;
        const message = new Uint8Array(delta.bytes.length + 1);
        message[0] = MESSAGE.delta;
        message.set(delta.bytes, 1);
        this.transport.send(message);
    }

    /** Forgets the client (it left): it no longer holds back the replicator's history. Idempotent. */
    close(): void {
        if (!this.open) return;
        this.open = false;
        this.peer.close();
        this.server.forget(this);
    }
}

/** The client side: applies its server's deltas to `world` and acknowledges them. */
export class ReplicationClient {
    private left = false;

    /** A client whose world becomes the server's (any world: a keyframe registers the components). */
    constructor(
        readonly world: World,
        readonly transport: Transport,
    ) {
        if (typeof transport !== 'object' || transport === null || typeof transport.send !== 'function') {
            throw new TesseraError(
                'INVALID_ARGUMENT',
                'new ReplicationClient',
                `expected a transport with send(bytes), got ${describeValue(transport)}`,
            );
        }
    }

    /** The server tick the world is at (0: nothing applied yet). */
    get tick(): number {
        return this.world.replicaTick;
    }

    /**
     * A message from the server: a delta is applied and acknowledged (a late or repeated one
     * changes nothing, and the tick the world is at is acknowledged again); one whose baseline
     * the world lacks asks for a keyframe. True when the world changed. A malformed message
     * throws and changes nothing; a delta the world refuses (`BAD_DELTA`, `DELTA_SCHEMA`) throws
     * too, changes nothing, and asks for a keyframe, which brings the world back to the
     * server's.
     */
    receive(bytes: Uint8Array): boolean {
        const operation = 'client.receive';
        if (!(bytes instanceof Uint8Array) || bytes.length < 2 || bytes[0] !== MESSAGE.delta) {
            throw malformed(operation, bytes instanceof Uint8Array ? `type ${bytes[0]}, ${bytes.length} bytes` : describeValue(bytes));
        }
        if (this.left) return false;
        let applied: boolean;
        try {
            applied = this.world.applyDelta(bytes.subarray(1));
        } catch (error) {
            const code = error instanceof TesseraError ? error.code : undefined;
            // A keyframe heals a world that lacks the baseline, holds what the server never sent
            // (a host's own edits of replicated entities) or bytes that were corrupted: ask for
            // one. Only the missing baseline is the protocol's normal course; the rest throw.
            if (code === 'DELTA_BASELINE' || code === 'BAD_DELTA' || code === 'DELTA_SCHEMA') {
                this.transport.send(Uint8Array.of(MESSAGE.reset));
            }
            if (code === 'DELTA_BASELINE') return false;
            throw error;
        }
        const ack = new Uint8Array(9);
        ack[0] = MESSAGE.ack;
        new DataView(ack.buffer).setFloat64(1, this.world.replicaTick, true);
        this.transport.send(ack);
        return applied;
    }

    /** Tells the server the client leaves; later deltas are ignored. Idempotent. */
    leave(): void {
        if (this.left) return;
        this.left = true;
        this.transport.send(Uint8Array.of(MESSAGE.bye));
    }
}

function malformed(operation: string, what: string): TesseraError {
    return new TesseraError('INVALID_ARGUMENT', operation, `not a session message: ${what}`);
}
