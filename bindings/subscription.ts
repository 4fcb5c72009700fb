/**
 * Change subscriptions: a consumer query drained once per frame in one call into wasm. The
 * cost follows what changed (the C core walks dirty lists and removal logs), never the number
 * of entities.
 *
 * @module
 */
import { COLLECT, PAIR_EVENT, PAIR_EVENT_KIND } from './abi.js';
import { TesseraError } from './errors.js';
import { checkKeys } from './options.js';
import type { ChunkIterator } from './chunk-iterator.js';
import { Query, type QueryDesc } from './query.js';
import type { Component, Definition, Relation } from './schema.js';
import type { Entity, World } from './world.js';

/**
 * What a subscription reports: the terms of a query without `writes`. `added` / `changed`
 * name what to report (entities whose component was added / changed), `removed` the components
 * whose removals to report (despawns included), `pairs` the relations whose pair events to
 * report; `all` / `none` / `any` narrow the added and changed reports. At least one of
 * `added`, `changed`, `removed`, `pairs` is required.
 */
export interface SubscriptionDesc extends Omit<QueryDesc, 'writes'> {
    /**
     * Report the entities that lost one of these components (despawns included); for a
     * relation, the entities whose last pair of it went.
     */
    readonly removed?: readonly (Component<any> | Relation<any>)[];
    /**
     * Report every pair of these relations that was added, removed, moved, or whose data was
     * written (`changes.pairEvents`), whatever the other terms say.
     */
    readonly pairs?: readonly Relation<any>[];
}

/**
 * What happened to a pair: added, removed, its data written (`setPair`), or moved among its
 * target's sources (`placePair`, `setParent` with `before`).
 */
export type PairEventKind = keyof typeof PAIR_EVENT_KIND;

/**
 * One pair event of a drain. The source and the target of a removed pair may be dead by now
 * (despawning either removes the pair).
 */
export interface PairEvent {
    readonly kind: PairEventKind;
    readonly source: Entity;
    readonly target: Entity;
    readonly relation: Relation<any>;
}

/** The keys of a subscription description: a query's, without `writes` (it writes nothing). */
const SUBSCRIPTION_KEYS = ['all', 'none', 'any', 'added', 'changed', 'removed', 'pairs'] as const;
/** The kind of a pair event by its `tes_pair_event_t.kind`. */
const PAIR_KINDS: readonly (PairEventKind | undefined)[] = kindsByValue();
const NO_EVENTS: readonly PairEvent[] = Object.freeze([]);

/** What one drain saw. The arrays are fresh copies: keep them as long as you like. */
export class Changes {
    /**
     * Entities whose `added` / `changed` components were added / changed since the previous
     * drain, each once, chunk by chunk. Empty for a removed-only subscription. Each is alive
     * and has the component at the drain: one changed and then despawned (or stripped of the
     * component) since the previous drain is in `removed` only, never here as a stale handle.
     */
    readonly entities: Uint32Array;
    /** Entities that lost any of the `removed` components, term by term (may be dead now). */
    readonly removed: Uint32Array;
    /**
     * The pair events of the `pairs` relations since the previous drain, relation after
     * relation (in the order of `pairs`), each relation's oldest first. Every event is reported
     * once; a pair added and removed between two drains gives both events. Replacing the
     * target of an exclusive relation gives a `removed` then an `added` event.
     */
    readonly pairEvents: readonly PairEvent[];
    private readonly removedTerms: ReadonlyMap<Definition, Uint32Array>;

    /** @internal */
    constructor(
        entities: Uint32Array,
        removed: Uint32Array,
        terms: ReadonlyMap<Definition, Uint32Array>,
        pairEvents: readonly PairEvent[] = NO_EVENTS,
    ) {
        this.entities = entities;
        this.removed = removed;
        this.removedTerms = terms;
        this.pairEvents = pairEvents;
    }

    /** The pairs added since the previous drain (`pairEvents` of kind `'added'`). */
    get pairsAdded(): PairEvent[] {
        return this.pairEvents.filter((event) => event.kind === 'added');
    }

    /** The pairs removed since the previous drain (explicitly, by replacement, or by a despawn). */
    get pairsRemoved(): PairEvent[] {
        return this.pairEvents.filter((event) => event.kind === 'removed');
    }

    /** The pairs whose data was written (`setPair`) since the previous drain, once per pair and tick. */
    get pairsChanged(): PairEvent[] {
        return this.pairEvents.filter((event) => event.kind === 'changed');
    }

    /** The entities that lost one component (one of the subscription's `removed`), oldest first. */
    removedOf(component: Component<any> | Relation<any>): Uint32Array {
        const list = this.removedTerms.get(component);
        if (list === undefined) {
            throw new TesseraError('INVALID_ARGUMENT', 'changes.removedOf', "not one of the subscription's removed components", {
                component: String(component?.name),
            });
        }
        return list;
    }

    /** True when nothing was reported. */
    get empty(): boolean {
        return this.entities.length === 0 && this.removed.length === 0 && this.pairEvents.length === 0;
    }
}

/**
 * A change subscription with its own watermark: each add, change and removal is reported
 * exactly once, by the first drain after it. It starts when it is made: its first drain
 * reports what matches then as added, and nothing that happened before it. A `chunks()` loop
 * left early leaves the chunks it did not reach to the next drain. Close it when done, or it
 * keeps history alive (a dropped subscription is freed once the garbage collector finds it
 * unreachable: a backstop that may come late or never, not a substitute for `close()`).
 *
 * @example
 * const hits = world.subscribe({ changed: [Health], removed: [Health] });
 * // each frame:
 * const changes = hits.drain();
 * for (const e of changes.entities) showDamage(e, world.get(e, Health, 'value'));
 *
 * @example
 * // Or the changed rows chunk by chunk, values from the columns (no removed / pairs terms):
 * const damaged = world.subscribe({ changed: [Health] });
 * for (const chunk of damaged) {
 *     const hp = chunk.column(Health, 'value');
 *     for (const row of chunk.rows) showDamage(chunk.entities[row], hp[row]);
 * }
 */
export class Subscription {
    /** The consumer query behind the subscription (its `writes` is empty). */
    readonly query: Query;

    /** @internal Use `world.subscribe()`. */
    constructor(world: World, desc: SubscriptionDesc) {
        const operation = 'world.subscribe';
        world.live(operation);
        checkKeys(operation, 'subscription description', desc, SUBSCRIPTION_KEYS);
        const reports = (desc.added?.length ?? 0) + (desc.changed?.length ?? 0) + (desc.removed?.length ?? 0) + (desc.pairs?.length ?? 0);
        if (reports === 0) {
            throw new TesseraError(
                'INVALID_ARGUMENT',
                operation,
                'name at least one component in added, changed or removed, or a relation in pairs',
            );
        }
        this.query = new Query(world, desc as QueryDesc, operation);
    }

    /** True after {@link Subscription.close}. */
    get closed(): boolean {
        return this.query.closed;
    }

    /** Everything since the previous drain (or since the subscription was made), in one call. */
    drain(): Changes {
        const operation = 'subscription.drain';
        const query = this.query;
        const world = query.live(operation);
        const owner = query.world;
        const heap = owner.heap;
        const out = heap.tempBlock(COLLECT.size, operation);
        // The C core refuses a second run of a consumer while one is live (QUERY_IN_USE).
        const result = heap.exports.tes_query_collect(world, query.pointer, out);
        if (result === heap.results.QUERY_IN_USE)
            throw new TesseraError('QUERY_IN_USE', operation, 'an iteration of this subscription is live');
        owner.check(result, operation);
        const copy = (pointer: number, count: number) =>
            count ? heap.u32.slice(pointer >>> 2, (pointer >>> 2) + count) : new Uint32Array(0);
        const entities = copy(heap.u32At(out + COLLECT.entities), heap.u32At(out + COLLECT.count));
        const removed = copy(heap.u32At(out + COLLECT.removed), heap.u32At(out + COLLECT.removed_total));
        const terms = new Map<Definition, Uint32Array>();
        const counts = heap.u32At(out + COLLECT.removed_counts) >>> 2;
        let at = 0;
        query.removedComponents.forEach((component, i) => {
            const n = heap.u32[counts + i]!;
            terms.set(component, removed.subarray(at, at + n));
            at += n;
        });
        const eventCount = heap.u32At(out + COLLECT.pair_event_count);
        if (eventCount === 0) return new Changes(entities, removed, terms);
        const events: PairEvent[] = [];
        const u32 = heap.u32;
        const first = heap.u32At(out + COLLECT.pair_events);
        for (let i = 0; i < eventCount; i++) {
            const at = first + i * PAIR_EVENT.size;
            events.push(
                Object.freeze({
                    kind: PAIR_KINDS[u32[(at + PAIR_EVENT.kind) >>> 2]!] ?? 'changed',
                    source: u32[(at + PAIR_EVENT.source) >>> 2]!,
                    target: u32[(at + PAIR_EVENT.target) >>> 2]!,
                    relation: owner.componentById(u32[(at + PAIR_EVENT.relation) >>> 2]!) as Relation<any>,
                }),
            );
        }
        return new Changes(entities, removed, terms, events);
    }

    /**
     * The same run as {@link Subscription.drain}, chunk by chunk, with column views: each
     * chunk's `rows` are the added / changed rows only. Not for subscriptions with `removed`
     * or `pairs` terms (the loop could not report them, and would consume them).
     */
    chunks(): ChunkIterator {
        this.query.live('subscription.chunks');
        if (this.query.removedComponents.length > 0 || this.query.pairChanges.length > 0) {
            // A chunk loop has no place to hand out removals or pair events, and its run would consume them.
            throw new TesseraError(
                'INVALID_ARGUMENT',
                'subscription.chunks',
                'this subscription reports removals or pair events: use drain(), or a separate subscription for them',
            );
        }
        return this.query.chunks();
    }

    [Symbol.iterator](): ChunkIterator {
        return this.chunks();
    }

    /** Stops the subscription: it no longer holds back pruning. Idempotent. */
    close(): void {
        this.query.closeAs('subscription.close');
    }
}

/** PairEventKind by `tes_pair_event_t.kind` value (PAIR_EVENT_KIND's keys are the kinds' names). */
function kindsByValue(): (PairEventKind | undefined)[] {
    const kinds: (PairEventKind | undefined)[] = [];
    for (const [name, value] of Object.entries(PAIR_EVENT_KIND)) kinds[value] = name as PairEventKind;
    return kinds;
}
