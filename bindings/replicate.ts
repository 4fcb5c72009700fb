/**
 * Replication, the sending side: a `Replicator` encodes what changed in its world since a
 * replica's acknowledged tick, a `Peer` keeps one replica's acknowledgements, a `Delta` is one
 * encode's bytes (a view of wasm memory until the next encode).
 *
 * @module
 */
import { DELTA_HEADER, PEER_FLAGS, QUANTUM, REPLICATOR_DESC, REPLICATOR_FLAGS } from './abi.js';
import { fieldsOf } from './definitions.js';
import { TesseraError, describeValue } from './errors.js';
import { handle } from './entities.js';
import { guardView, viewProblem } from './heap.js';
import { forgetReplicator, watchReplicator } from './lifetime.js';
import { checkKeys } from './options.js';
import { Query, type Term } from './query.js';
import { checkOutsideRun } from './snapshot.js';
import type { Component, Relation } from './schema.js';
import type { Entity, World } from './world.js';

const REPLICATOR_KEYS = ['components', 'scope', 'history', 'quantize', 'changedFields'] as const;
const SCOPE_KEYS = ['all', 'none', 'any'] as const;
const PEER_KEYS = ['visibility', 'budget'] as const;

/** Options of {@link World.replicator}. */
export interface ReplicatorOptions {
    /**
     * The components and relations whose state travels. Default: every one the world has
     * registered when the replicator is made, except those defined with `replicate: false`.
     */
    readonly components?: readonly (Component<any> | Relation<any>)[];
    /**
     * Only the entities these terms match travel (`all` / `none` / `any`, as in a query). An
     * entity that leaves the scope is despawned on the replicas; one that enters it arrives
     * with every value.
     */
    readonly scope?: { readonly all?: readonly Term[]; readonly none?: readonly Term[]; readonly any?: readonly Term[] };
    /**
     * How many of its latest encodes the replicator keeps the changes of, per peer (default
     * 64): with P peers each encoding once a frame, P x history encodes, so about `history`
     * frames. A replica whose acknowledged tick is older gets a keyframe instead; it never
     * holds back the world's change history longer.
     */
    readonly history?: number;
    /**
     * Fields sent quantized: per component, a step per f32 or f64 field (array fields: every
     * element). A value travels as the integer `Math.round(value / step)` (halves away from 0),
     * in as many bits as the spread of the delta's values needs (17 for values in [0, 1000) at
     * 0.01, instead of 32 or 64), and the replica holds that multiple of the step (as an f32 for
     * an f32 field); NaN, infinities and values beyond 2^53 steps travel exactly.
     * The source keeps its exact values: precision is the wire's, so replicators of one world
     * may differ. `quantize: [[Position, { x: 0.01, y: 0.01 }]]`. Each component must be
     * replicated by this replicator (and not a relation), each step finite and above 0.
     */
    readonly quantize?: readonly (readonly [Component<any>, Readonly<Record<string, number>>])[];
    /**
     * Send only the fields whose values changed (default false: every field of a component
     * that changed). A component with several fields, of which a write changed one (a Transform
     * whose rotation stayed), costs that field and a byte of mask, not the whole component. To
     * tell which changed, the replicator keeps a copy of those components' values per entity
     * and a tick per field (their bytes and 8 per field, for each entity it encoded).
     */
    readonly changedFields?: boolean;
}

/** One quantized field as the options name it. */
interface Quantum {
    readonly component: Component<any>;
    readonly id: number;
    readonly field: string;
    readonly index: number;
    readonly type: string;
    readonly step: number;
}

/** `quantize` resolved to field indices: unknown field names and steps that are not numbers
 *  are refused here, every other rule is C's. */
function resolveQuanta(world: World, operation: string, quantize: unknown): Quantum[] {
    if (quantize === undefined) return [];
    if (!Array.isArray(quantize)) {
        throw new TesseraError(
            'INVALID_ARGUMENT',
            operation,
            `quantize must be an array of [component, steps], got ${describeValue(quantize)}`,
        );
    }
    const quanta: Quantum[] = [];
    for (const entry of quantize as unknown[]) {
        if (!Array.isArray(entry) || entry.length !== 2 || typeof entry[1] !== 'object' || entry[1] === null) {
            throw new TesseraError(
                'INVALID_ARGUMENT',
                operation,
                `each quantize entry must be [component, { field: step }], got ${describeValue(entry)}`,
            );
        }
        const component = entry[0] as Component<any>;
        const id = world.idOf(component, operation);
        const fields = fieldsOf(component);
        for (const [field, step] of Object.entries(entry[1] as Record<string, unknown>)) {
            const meta = fields.find((f) => f.name === field);
            if (meta === undefined) {
                throw new TesseraError('INVALID_ARGUMENT', operation, `quantize names a field the component does not have`, {
                    component: component.name,
                    field,
                });
            }
            if (typeof step !== 'number') {
                throw new TesseraError('INVALID_ARGUMENT', operation, `a quantization step must be a number, got ${describeValue(step)}`, {
                    component: component.name,
                    field,
                });
            }
            quanta.push({ component, id, field, index: meta.index, type: meta.type, step });
        }
    }
    return quanta;
}

/** Why the C core refused the quanta (INVALID_ARGUMENT), naming the first field at fault. */
function quantumProblem(quanta: readonly Quantum[], replicated: ReadonlySet<number> | undefined): TesseraError | undefined {
    const operation = 'world.replicator';
    for (const [i, q] of quanta.entries()) {
        const context = { component: q.component.name, field: q.field };
        let problem: string | undefined;
        if ((q.component as { isRelation?: boolean }).isRelation === true) {
            problem = "a relation's fields cannot be quantized (pair data travels exactly)";
        } else if (replicated ? !replicated.has(q.id) : !q.component.replicate) {
            problem = 'only the fields of components this replicator replicates can be quantized';
        } else if (q.type !== 'f32' && q.type !== 'f64') {
            problem = `only f32 and f64 fields can be quantized, this one is ${q.type}`;
        } else if (!(Number.isFinite(q.step) && q.step > 0)) {
            problem = `a quantization step must be finite and above 0, got ${describeValue(q.step)}`;
        } else if (quanta.slice(0, i).some((p) => p.id === q.id && p.index === q.index)) {
            problem = 'the field is quantized twice';
        }
        if (problem !== undefined) return new TesseraError('INVALID_ARGUMENT', operation, problem, context);
    }
    return undefined;
}

/** One encoded delta (or keyframe), as {@link Replicator.encode} hands it out. */
export interface Delta {
    /**
     * The bytes, as a view of wasm memory: no copy. Valid until the replicator encodes again
     * (or memory grows); send or copy them (`bytes.slice()`) right away. Reading it after the
     * next encode throws `VIEW_DETACHED`; after the replicator closed or its world was
     * destroyed, `DESTROYED`. In a debug world the view itself checks the same on every use,
     * and `VIEW_DETACHED` after memory grew (it is then a Proxy: copy it before
     * `postMessage`).
     */
    readonly bytes: Uint8Array;
    /** The source tick it brings a replica to: what the replica acknowledges. */
    readonly tick: number;
    /** True when it is a keyframe: the whole replicated state. */
    readonly keyframe: boolean;
    /**
     * True when it carries nothing for the replica (no removal, record or pair event; never a
     * keyframe): applying it only moves the replica's tick. A sender may leave it unsent, as
     * the sessions do: the next delta, from the same acknowledged tick, covers the same, as long
     * as that tick stays within the history (send one now and then).
     */
    readonly empty: boolean;
}

/**
 * The sending side of replication (see {@link World.replicator}): encodes what changed since a
 * replica's acknowledged tick, walking the world's dirty lists and logs, so a delta costs what
 * changed. Close it when done: while it lives, its components are change-tracked (a dropped
 * replicator is freed once the garbage collector finds it unreachable: a backstop that may
 * come late or never).
 */
export class Replicator {
    /** The world it encodes. */
    readonly world: World;
    /** @internal The `tes_replicator_t *`; 0 after close. */
    pointer: number;
    private readonly scope: Query | undefined;
    private encodes = 0;
    /** @internal The tick of the newest delta it encoded (0: none yet): what a replica may acknowledge. */
    newestTick = 0;
    /** @internal Its open peers: the oldest acknowledgement among them is released. */
    readonly peers = new Set<Peer>();

    /** @internal Use `world.replicator()`. */
    constructor(world: World, options: ReplicatorOptions) {
        const operation = 'world.replicator';
        const pointerOfWorld = world.live(operation);
        checkKeys(operation, 'replicator options', options, REPLICATOR_KEYS);
        const { components, scope, history, quantize, changedFields = false } = options;
        if (typeof changedFields !== 'boolean') {
            throw new TesseraError(
                'INVALID_ARGUMENT',
                operation,
                `changedFields must be true or false, got ${describeValue(changedFields)}`,
            );
        }
        // Only matching terms: filters and writes mean nothing for a scope.
        if (scope !== undefined) checkKeys(operation, 'scope', scope, SCOPE_KEYS);
        if (history !== undefined && !(Number.isInteger(history) && history > 0 && history <= 1 << 20)) {
            throw new TesseraError('INVALID_ARGUMENT', operation, `history must be a positive integer, got ${describeValue(history)}`);
        }
        if (components !== undefined && !Array.isArray(components)) {
            throw new TesseraError('INVALID_ARGUMENT', operation, `components must be an array, got ${describeValue(components)}`);
        }
        const ids = (components ?? []).map((c) => world.idOf(c, operation));
        const quanta = resolveQuanta(world, operation, quantize);
        this.world = world;
        // Owned: freed by close() or the replicator's finalizer, after the replicator.
        this.scope = scope === undefined ? undefined : new Query(world, scope, operation, true);
        const heap = world.heap;
        try {
            // A tes_replicator_desc_t, its component ids, then (8-aligned) its tes_quantum_t's.
            const idsEnd = REPLICATOR_DESC.size + ids.length * 4;
            const quantaAt = Math.ceil(idsEnd / 8) * 8;
            const block = heap.tempBlock(quantaAt + quanta.length * QUANTUM.size + 4, operation);
            const list = block + REPLICATOR_DESC.size;
            const u32 = heap.u32;
            const f64 = heap.f64;
            u32.set(ids, list >>> 2);
            for (const [i, q] of quanta.entries()) {
                const at = block + quantaAt + i * QUANTUM.size;
                u32[(at + QUANTUM.component) >>> 2] = q.id;
                u32[(at + QUANTUM.field) >>> 2] = q.index;
                f64[(at + QUANTUM.step) >>> 3] = q.step;
            }
            u32[(block + REPLICATOR_DESC.components) >>> 2] = components === undefined ? 0 : list;
            u32[(block + REPLICATOR_DESC.component_count) >>> 2] = ids.length;
            u32[(block + REPLICATOR_DESC.scope) >>> 2] = this.scope?.pointer ?? 0;
            u32[(block + REPLICATOR_DESC.history) >>> 2] = history ?? 0;
            u32[(block + REPLICATOR_DESC.quanta) >>> 2] = quanta.length ? block + quantaAt : 0;
            u32[(block + REPLICATOR_DESC.quantum_count) >>> 2] = quanta.length;
            u32[(block + REPLICATOR_DESC.flags) >>> 2] = changedFields ? REPLICATOR_FLAGS.changed_fields : 0;
            // Random, so that a restarted server's deltas (or another's) are not taken for this
            // one's by a replica that holds this one's keyframe; never 0 (the core's pick).
            u32[(block + REPLICATOR_DESC.source) >>> 2] = Math.floor(Math.random() * 0xffffffff) + 1;
            const out = heap.scratch;
            const result = heap.exports.tes_replicator_create(pointerOfWorld, block, out);
            if (result === heap.results.INVALID_ARGUMENT && components !== undefined) {
                const local = components.find((c) => !c.replicate);
                if (local) {
                    throw new TesseraError('INVALID_ARGUMENT', operation, 'the component is defined with replicate: false', {
                        component: local.name,
                    });
                }
            }
            if (result === heap.results.INVALID_ARGUMENT && quanta.length) {
                const replicated = components === undefined ? undefined : new Set(ids);
                const problem = quantumProblem(quanta, replicated);
                if (problem) throw problem;
            }
            world.check(result, operation);
            this.pointer = heap.u32At(out);
            watchReplicator(this, world.link, this.pointer, this.scope?.pointer ?? 0);
        } catch (error) {
            this.scope?.close();
            throw error;
        }
    }

    /**
     * Encodes the changes since `baseline`, a tick a replica acknowledged ({@link Delta.tick}
     * of the last delta it applied); a keyframe when the baseline is 0 (a new replica) or
     * older than the history. Like a system run, it advances the world's change tick. Not
     * inside a loop over the world.
     */
    encode(baseline = 0): Delta {
        const operation = 'replicator.encode';
        this.live(operation);
        if (!(Number.isSafeInteger(baseline) && baseline >= 0)) {
            throw new TesseraError(
                'INVALID_ARGUMENT',
                operation,
                `baseline must be a tick (a non-negative integer), got ${describeValue(baseline)}`,
            );
        }
        const heap = this.world.heap;
        const out = heap.scratch;
        checkOutsideRun(this.world, heap.exports.tes_delta_encode(this.pointer, BigInt(baseline), out, out + 4, out + 8), operation);
        return this.delta(out);
    }

    /** @internal The Delta an encode left at `out` (bytes pointer, size, tick). */
    delta(out: number): Delta {
        const heap = this.world.heap;
        const pointer = heap.u32At(out),
            size = heap.u32At(out + 4),
            tick = heap.u64At(out + 8);
        const generation = ++this.encodes;
        if (tick > this.newestTick) this.newestTick = tick;
        const flags = heap.u8[pointer + DELTA_HEADER.flags]!;
        const keyframe = (flags & DELTA_HEADER.keyframe) !== 0;
        const empty = (flags & DELTA_HEADER.empty) !== 0;
        // The buffer is the replicator's: gone at its next encode, its close, its world's end.
        const problem = (operation: string): TesseraError | undefined => {
            if (this.closed) {
                const gone = this.world.destroyed ? 'the world was destroyed' : 'the replicator was closed';
                return new TesseraError('DESTROYED', operation, `${gone}: copy a delta's bytes before that`);
            }
            if (this.encodes !== generation) {
                return new TesseraError(
                    'VIEW_DETACHED',
                    operation,
                    "the replicator encoded again: copy a delta's bytes before the next encode",
                );
            }
            return undefined;
        };
        const debug = this.world.debug;
        return {
            get bytes(): Uint8Array {
                const error = problem('delta.bytes');
                if (error !== undefined) throw error;
                const view = new Uint8Array(heap.current, pointer, size);
                if (!debug) return view;
                return guardView(
                    view,
                    () => problem('bytes view') ?? viewProblem(view, () => false, 'bytes view', 'read delta.bytes again'),
                );
            },
            tick,
            keyframe,
            empty,
        };
    }

    /**
     * A replica's bookkeeping: it encodes against the newest tick the replica acknowledged,
     * so a lost delta is covered by the next one, and a replica that fell behind the history
     * gets a keyframe.
     */
    peer(options: PeerOptions = {}): Peer {
        const operation = 'replicator.peer';
        this.live(operation);
        checkKeys(operation, 'peer options', options, PEER_KEYS);
        const { visibility = 'all', budget = 0 } = options;
        if (visibility !== 'all' && visibility !== 'explicit') {
            throw new TesseraError(
                'INVALID_ARGUMENT',
                operation,
                `visibility must be 'all' or 'explicit', got ${describeValue(visibility)}`,
            );
        }
        const heap = this.world.heap;
        const out = heap.scratch;
        this.world.check(heap.exports.tes_peer_create(this.pointer, visibility === 'explicit' ? PEER_FLAGS.visibility : 0, out), operation);
        const peer = new Peer(this, heap.u32At(out), visibility === 'explicit');
        try {
            peer.budget = budget;
        } catch (error) {
            peer.close();
            throw error;
        }
        this.peers.add(peer);
        return peer;
    }

    /**
     * @internal Before a peer encodes: no open peer needs changes older than the oldest tick it
     * may still acknowledge ({@link Peer.holds}: its acknowledgement, or the first delta sent to
     * a peer that has acknowledged nothing yet), so the world may prune them. Then an encode
     * walks what changed since then, not the whole history. (Releasing past a new peer's first
     * keyframe made its acknowledgement of it too old: a keyframe again, one per update.)
     */
    releaseAcknowledged(): void {
        let oldest = Infinity;
        for (const peer of this.peers) {
            const held = peer.holds;
            if (held > 0 && held < oldest) oldest = held;
        }
        if (oldest !== Infinity) {
            this.world.check(this.world.heap.exports.tes_replicator_release(this.pointer, BigInt(oldest)), 'replicator.encode');
        }
    }

    /** Stops the change tracking the replicator asked for. Idempotent. */
    close(): void {
        if (this.pointer === 0) return;
        forgetReplicator(this);
        if (!this.world.destroyed) this.world.heap.exports.tes_replicator_destroy(this.pointer);
        this.pointer = 0;
        this.scope?.close();
    }

    /** True after {@link Replicator.close} (or when its world was destroyed). */
    get closed(): boolean {
        return this.pointer === 0 || this.world.destroyed;
    }

    /** @internal The world pointer, or `DESTROYED` when the replicator or its world is gone. */
    live(operation: string): number {
        const world = this.world.live(operation);
        if (this.pointer === 0) throw new TesseraError('DESTROYED', operation, 'the replicator was closed');
        return world;
    }
}

/** Options of {@link Replicator.peer}. */
export interface PeerOptions {
    /**
     * What the replica sees: `'all'` (default), every entity in the replicator's scope;
     * `'explicit'`, only the entities {@link Peer.show} showed it (a game shows each client
     * what is near it). An entity shown arrives whole with its pairs; one hidden or despawned
     * is removed from the replica.
     */
    readonly visibility?: 'all' | 'explicit';
    /** Bytes of entity records per delta (see {@link Peer.budget}); 0, the default: no limit. */
    readonly budget?: number;
}

/**
 * One replica as the sending side sees it: the newest tick it acknowledged, what it sees, and
 * its byte budget.
 */
export class Peer {
    /** The replicator it encodes with. */
    readonly replicator: Replicator;
    /** @internal The `tes_peer_t *` (freed with its replicator). */
    readonly pointer: number;
    /** True when it sees only what {@link Peer.show} showed it. */
    readonly explicit: boolean;
    private ackedTick = 0;
    /** While nothing is acknowledged: the tick of the first delta sent since (0: none yet). */
    private firstSent = 0;
    private budgetBytes = 0;
    private closed = false;

    /** @internal Use `replicator.peer()`. */
    constructor(replicator: Replicator, pointer: number, explicit: boolean) {
        this.replicator = replicator;
        this.pointer = pointer;
        this.explicit = explicit;
    }

    /** The newest tick the replica acknowledged (0: none yet, so the next encode is a keyframe). */
    get acked(): number {
        return this.ackedTick;
    }

    /**
     * Bytes of entity records per delta; 0: no limit. When the records due do not fit, those
     * with the highest score go: the entity's priority ({@link Peer.show}; 1 otherwise) times
     * one more than the deltas it waited, so the rest go later and nothing waits forever. The
     * record with the highest score always goes. A withheld record is sent whole, again in
     * each delta until the replica acknowledges one that carried it. The head, removals and
     * relation events are never withheld.
     */
    get budget(): number {
        return this.budgetBytes;
    }

    set budget(bytes: number) {
        if (!(Number.isInteger(bytes) && bytes >= 0 && bytes <= 0xffffffff)) {
            throw new TesseraError(
                'INVALID_ARGUMENT',
                'peer.budget',
                `budget must be a whole number of bytes (0: none), got ${describeValue(bytes)}`,
            );
        }
        this.budgetBytes = bytes;
    }

    /**
     * Records that the replica applied the delta of `tick`. Acknowledgements may arrive late
     * or out of order: only a newer tick counts. A tick newer than every delta its replicator
     * encoded acknowledges nothing this source sent (a replica of another source, or a bad
     * message): it is refused, where taking it would make keyframes until the source's tick
     * passed it.
     */
    ack(tick: number): void {
        this.live('peer.ack');
        if (!(Number.isSafeInteger(tick) && tick >= 0)) {
            throw new TesseraError('INVALID_ARGUMENT', 'peer.ack', `tick must be a non-negative integer, got ${describeValue(tick)}`);
        }
        const newest = this.replicator.newestTick;
        if (tick > newest) {
            throw new TesseraError('INVALID_ARGUMENT', 'peer.ack', `tick ${tick} was never sent (the newest delta is of tick ${newest})`);
        }
        if (tick > this.ackedTick) this.ackedTick = tick;
    }

    /**
     * @internal The oldest baseline this peer may still ask for: its acknowledged tick, or, while
     * it has acknowledged nothing, the first delta sent to it since (its first acknowledgement
     * is of that one or a later one: released past it, that would be a keyframe again); 0 for
     * nothing yet.
     */
    get holds(): number {
        return this.ackedTick > 0 ? this.ackedTick : this.firstSent;
    }

    /** Forgets the acknowledgements (a replica that restarted): the next encode is a keyframe. */
    reset(): void {
        this.live('peer.reset');
        this.ackedTick = 0;
        this.firstSent = 0;
    }

    /**
     * Shows a live entity to a peer with `visibility: 'explicit'` (from its next delta), or
     * changes its priority when it is shown already: a number above 0 that a 32-bit float holds
     * as a finite number, the weight of its records under a {@link Peer.budget} (e.g. higher
     * for what is closer).
     */
    show(entity: Entity, priority = 1): void {
        const operation = 'peer.show';
        this.live(operation);
        const e = handle(entity, operation);
        if (!this.explicit) throw notExplicit(operation);
        // The core judges the priority as the float it takes (1e308 is infinity there); a
        // number is checked here only because wasm would coerce anything else into one.
        const world = this.replicator.world;
        const result = typeof priority === 'number' ? world.heap.exports.tes_peer_show(this.pointer, e, priority) : -1;
        if (result === -1 || result === world.heap.results.INVALID_ARGUMENT) {
            throw new TesseraError(
                'INVALID_ARGUMENT',
                operation,
                `priority must be above 0 and finite as a 32-bit float, got ${describeValue(priority)}`,
                { entity: e },
            );
        }
        world.check(result, operation, e);
    }

    /** Hides an entity from the peer: its replica loses it at the next delta. Nothing when not shown. */
    hide(entity: Entity): void {
        const operation = 'peer.hide';
        this.live(operation);
        const e = handle(entity, operation);
        if (!this.explicit) throw notExplicit(operation);
        this.replicator.world.check(this.replicator.world.heap.exports.tes_peer_hide(this.pointer, e), operation, e);
    }

    /** Whether the peer sees the entity: alive, and shown when its visibility is explicit. */
    sees(entity: Entity): boolean {
        this.live('peer.sees');
        return this.replicator.world.heap.exports.tes_peer_sees(this.pointer, handle(entity, 'peer.sees')) !== 0;
    }

    /** The delta since the acknowledged tick (a keyframe when it is 0 or too old), for this peer. */
    encode(): Delta {
        // Before releasing: that calls into C with the replicator, which must still exist.
        const operation = 'peer.encode';
        this.live(operation);
        const replicator = this.replicator;
        replicator.releaseAcknowledged();
        const heap = replicator.world.heap;
        const out = heap.scratch;
        const result = heap.exports.tes_peer_encode(this.pointer, BigInt(this.ackedTick), this.budgetBytes, out, out + 4, out + 8);
        checkOutsideRun(replicator.world, result, operation);
        const delta = replicator.delta(out);
        if (this.ackedTick === 0 && this.firstSent === 0) this.firstSent = delta.tick;
        return delta;
    }

    /**
     * Forgets the replica (it disconnected): its acknowledgements stop holding back the
     * replicator's history. Idempotent.
     */
    close(): void {
        if (this.closed) return;
        this.replicator.peers.delete(this);
        this.closed = true;
        if (!this.replicator.closed) this.replicator.world.heap.exports.tes_peer_destroy(this.pointer);
    }

    /** `DESTROYED` when the peer was closed, or its replicator or world is gone. */
    private live(operation: string): void {
        this.replicator.live(operation);
        if (this.closed) throw new TesseraError('DESTROYED', operation, 'the peer was closed');
    }
}

function notExplicit(operation: string): TesseraError {
    return new TesseraError(
        'INVALID_ARGUMENT',
        operation,
        "the peer sees every entity: make it with { visibility: 'explicit' } to show and hide",
    );
}
