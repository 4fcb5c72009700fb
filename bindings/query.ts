/**
 * Queries: which entities a loop visits (`all` / `none` / `any`, pairs, `added` / `changed`
 * filters), the helpers over a run (`count`, `entities`), bulk structural changes and kernels
 * over everything a query matches. A run is a `ChunkIterator` (chunk-iterator.ts) handing out
 * `Chunk`s (chunk.ts).
 *
 * @module
 */
import { OP_KIND, PAIR_TERM, QUERY_DESC, TERM } from './abi.js';
import type { Chunk, MarkList } from './chunk.js';
import { ChunkIterator } from './chunk-iterator.js';
import { TesseraError, describeValue } from './errors.js';
import { runKernel, type KernelField, type SourceField } from './kernels.js';
import { forgetQuery, watchQuery } from './lifetime.js';
import type { Pointer } from './load.js';
import { checkKeys } from './options.js';
import { describeDefinition, isDefinition, isRelation, isSparse } from './definitions.js';
import type { Component, Definition, FieldName, Pair, Relation, Schema } from './schema.js';
import type { Entity, World } from './world.js';

/**
 * A term of `all` / `none` / `any`: a component, a relation (the entity is the source of a pair
 * of it, to any target) or a pair (`ChildOf(parent)`: the entity is the source of that pair;
 * `R(0)` is the same as `R`).
 */
export type Term = Component<any> | Relation<any> | Pair<any>;

/** The terms of a query. Every list is optional. */
export interface QueryDesc {
    /** Entities must have every one of these. */
    readonly all?: readonly Term[];
    /** Entities must have none of these. */
    readonly none?: readonly Term[];
    /** Entities must have at least one of these (when the list is not empty). */
    readonly any?: readonly Term[];
    /**
     * Filter: only entities that gained one of these since the query's last run (implies all).
     * For a relation: entities whose first pair of it came.
     */
    readonly added?: readonly (Component<any> | Relation<any>)[];
    /**
     * Filter: only entities whose component changed since the query's last run (implies all).
     * For a relation: entities whose pairs of it changed (added, removed, data written).
     */
    readonly changed?: readonly (Component<any> | Relation<any>)[];
    /**
     * Components the loop writes through views: when the iteration moves past a chunk, they
     * are marked changed for every row it visited (one call into wasm per chunk and
     * component, deduplicated per row). Each must be in `all`, `added` or `changed`. Only
     * loops mark: `count()`, `entities()`, `addAll()`, `removeAll()` and `despawnAll()` hand out
     * no views and mark nothing.
     */
    readonly writes?: readonly Component<any>[];
}

/** The keys of a query description (`removed` and `pairs` only for subscriptions: see there). */
const QUERY_KEYS = ['all', 'none', 'any', 'added', 'changed', 'writes', 'removed', 'pairs'] as const;

/** Where each term list goes in `tes_query_desc_t`: all, none, any, added, changed, removed. */
const TERM_LISTS = [
    [QUERY_DESC.all, QUERY_DESC.all_count],
    [QUERY_DESC.none, QUERY_DESC.none_count],
    [QUERY_DESC.any, QUERY_DESC.any_count],
    [QUERY_DESC.added, QUERY_DESC.added_count],
    [QUERY_DESC.changed, QUERY_DESC.changed_count],
    [QUERY_DESC.removed, QUERY_DESC.removed_count],
] as const;
/** The `tes_pair_term_t.op` of a pair in all, none and any. */
const PAIR_OPS = [TERM.all, TERM.none, TERM.any] as const;

/**
 * A query over a world. Iterate it with `for (const chunk of query)`. A query with `added` or
 * `changed` filters (or `removed` terms) is a consumer: each iteration is one run that sees
 * what happened since its previous run, exactly once.
 */
export class Query {
    /** The world the query belongs to. */
    readonly world: World;
    /** True when the query has added/changed filters or removed terms. */
    readonly consumer: boolean;
    /** True when the query has added/changed filters (iterations visit dirty rows only). */
    readonly filtered: boolean;
    /** @internal The `tes_query_t *`; 0 after close. */
    pointer: Pointer;
    /** @internal Removed terms in the order the C core reports them. */
    readonly removedComponents: readonly Definition[];
    /**
     * @internal False when a term is sparse, a relation or a pair: what the query visits then
     * changes without rows moving (tes_world_layout), so runs are never replayed, and
     * archetype-wide bulk changes would reach rows the query does not visit.
     */
    readonly stable: boolean;
    /** @internal Relations whose pair events the query reports (subscriptions' `pairs`). */
    readonly pairChanges: readonly Relation<any>[];
    /** @internal */
    readonly writeIds: readonly number[];
    /** @internal Hand-marked rows per component id of the current chunk of the outermost run. */
    readonly marks = new Map<number, MarkList>();
    /** @internal Live iterations of this query. */
    runs = 0;
    /** @internal Components every visited entity has (all, added, changed). */
    readonly required: ReadonlySet<Definition>;
    /**
     * @internal The chunks of the latest complete run of a plain query, with the views they
     * handed out, and the world layout they belong to (`tes_world_layout`). While the layout
     * is the same, the next outermost run replays them without asking the C core.
     */
    cachedChunks: Chunk[] | undefined;
    /** @internal */
    cachedLayout = 0;

    /**
     * @internal Use `world.query()`. `owned`: a system or a replicator frees the query, so it
     * gets no finalizer of its own (see lifetime.ts).
     */
    constructor(world: World, desc: QueryDesc, operation: string, owned = false) {
        // The published types hide this constructor's parameters (they are internal).
        if (typeof (world as Partial<World> | undefined)?.live !== 'function') {
            throw new TesseraError('INVALID_ARGUMENT', 'new Query', 'make queries with world.query()');
        }
        this.world = world;
        const pointerOfWorld = world.live(operation);
        // An array (`world.query([Position])`) or a misspelt key would otherwise match everything.
        checkKeys(operation, 'query description', desc, QUERY_KEYS);
        const withRemovals = desc as QueryDesc & {
            readonly removed?: readonly (Component<any> | Relation<any>)[];
            readonly pairs?: readonly Relation<any>[];
        };
        if (withRemovals.removed?.length && operation !== 'world.subscribe') {
            // A loop over chunks has no place to hand removals out, and its run would use them up.
            throw new TesseraError(
                'INVALID_ARGUMENT',
                operation,
                'removals are reported by subscriptions: world.subscribe({ removed: [...] }) and drain()',
            );
        }
        if (withRemovals.pairs?.length && operation !== 'world.subscribe') {
            throw new TesseraError(
                'INVALID_ARGUMENT',
                operation,
                'pair events are reported by subscriptions: world.subscribe({ pairs: [...] }) and drain()',
            );
        }
        const terms = ['all', 'none', 'any', 'added', 'changed', 'removed'] as const;
        // all / none / any take pairs too (tes_pair_term_t with the op of their list).
        const pairTerms: { relation: Relation<any>; target: number; op: number }[] = [];
        const lists = terms.map((term, op) => {
            const list = componentList(withRemovals[term], `${operation} ${term}`);
            return list.filter((item) => {
                if (isDefinition(item)) return true;
                const pair = item as Partial<Pair<any>> | null;
                if (op > 2 || typeof pair !== 'object' || pair === null || !isDefinition(pair.relation)) {
                    throw new TesseraError(
                        'INVALID_ARGUMENT',
                        `${operation} ${term}`,
                        op > 2 && isDefinition(pair?.relation)
                            ? `${term} takes components and relations, not pairs (use ${pair!.relation!.name}, or the pair in all)`
                            : typeof item === 'function'
                              ? describeDefinition(item)
                              : `expected a component${op > 2 ? ' or a relation' : ', a relation or a pair'}, got ${describeValue(item)}`,
                    );
                }
                if (typeof pair.target !== 'number' || pair.target >>> 0 !== pair.target) {
                    throw new TesseraError(
                        'INVALID_ARGUMENT',
                        `${operation} ${term}`,
                        `expected a pair's target entity, got ${describeValue(pair.target)}`,
                        {
                            component: pair.relation.name,
                        },
                    );
                }
                pairTerms.push({ relation: pair.relation as Relation<any>, target: pair.target, op: PAIR_OPS[op]! });
                return false;
            }) as Definition[];
        });
        const pairChanges = componentList(withRemovals.pairs, `${operation} pairs`) as Relation<any>[];
        for (const relation of pairChanges) {
            if (!isDefinition(relation)) {
                throw new TesseraError('INVALID_ARGUMENT', `${operation} pairs`, `expected a relation, got ${describeValue(relation)}`);
            }
            if (!isRelation(relation)) throw world.error('NOT_A_RELATION', `${operation} pairs`, undefined, (relation as Definition).name);
        }
        this.pairChanges = pairChanges;
        const writes = componentList(desc.writes, `${operation} writes`) as Definition[];
        this.required = new Set([...lists[0]!, ...lists[3]!, ...lists[4]!]);
        for (const component of writes) {
            if (!this.required.has(component)) {
                throw new TesseraError(
                    'INVALID_ARGUMENT',
                    operation,
                    `writes lists ${component?.name}, which is not in all, added or changed`,
                    { component: String(component?.name) },
                );
            }
            if (isSparse(component)) {
                throw world.error('SPARSE_COMPONENT', `${operation} writes`, undefined, component.name);
            }
        }
        this.stable = pairTerms.length === 0 && !lists.some((list) => list.some(isSparse));
        const ids = lists.map((list) => list.map((c) => world.idOf(c, operation)));
        const pairIds = pairTerms.map((term) => world.idOf(term.relation, operation));
        const changeIds = pairChanges.map((relation) => world.idOf(relation, operation));
        this.writeIds = writes.map((c) => world.idOf(c, operation));
        this.filtered = ids[3]!.length + ids[4]!.length > 0;
        this.consumer = this.filtered || ids[5]!.length > 0 || changeIds.length > 0;
        // The C core keeps removed terms in order, without duplicates.
        this.removedComponents = [...new Set(lists[5]!)];

        const heap = world.heap;
        const total = ids.reduce((n, list) => n + list.length, 0) + changeIds.length;
        const block = heap.tempBlock(QUERY_DESC.size + pairTerms.length * PAIR_TERM.size + total * 4, operation);
        const u32 = heap.u32;
        u32.fill(0, block >>> 2, (block + QUERY_DESC.size) >>> 2);
        let next = block + QUERY_DESC.size;
        const list = ([at, countAt]: readonly [number, number], values: readonly number[]) => {
            u32[(block + at) >>> 2] = values.length ? next : 0;
            u32[(block + countAt) >>> 2] = values.length;
            u32.set(values, next >>> 2);
            next += values.length * 4;
        };
        TERM_LISTS.forEach((where, term) => list(where, ids[term]!));
        list([QUERY_DESC.pair_changes, QUERY_DESC.pair_change_count], changeIds);
        u32[(block + QUERY_DESC.pairs) >>> 2] = pairTerms.length ? next : 0;
        u32[(block + QUERY_DESC.pair_count) >>> 2] = pairTerms.length;
        pairTerms.forEach((term, i) => {
            const at = next + i * PAIR_TERM.size;
            u32[(at + PAIR_TERM.relation) >>> 2] = pairIds[i]!;
            u32[(at + PAIR_TERM.target) >>> 2] = term.target;
            u32[(at + PAIR_TERM.op) >>> 2] = term.op;
        });
        const out = heap.scratch;
        world.check(heap.exports.tes_query_create(pointerOfWorld, block, out), operation);
        this.pointer = heap.u32At(out);
        if (!owned) watchQuery(this, world.link, this.pointer);
    }

    /** True after {@link Query.close} (or when its world was destroyed). */
    get closed(): boolean {
        return this.pointer === 0 || this.world.destroyed;
    }

    /** Iterates the matching chunks (one run for a consumer). */
    [Symbol.iterator](): ChunkIterator {
        return this.chunks();
    }

    /**
     * Starts an iteration: the chunks with something to visit, one {@link Chunk} each. Run it
     * to the end or leave the loop with `break`/`return`/`throw` (which ends it too): while any
     * iteration is live, structural changes are deferred until the last one ends. A consumer
     * left early reports the chunks it did not reach on its next run (the chunk it was in
     * counts as seen).
     *
     * An iterator abandoned before its end (`query.chunks().next()`, then dropped) stays live
     * until `world.tick()`, which ends it as `break` would (its current chunk's writes are
     * marked, deferred changes applied; its `next()` is done from then on and its chunks throw
     * `CHUNK_EXPIRED`), or `world.destroy()` (then they throw `DESTROYED`). Until then the
     * world defers every structural change, and `snapshot`, `applyDelta` and `encode` refuse.
     */
    chunks(): ChunkIterator {
        return new ChunkIterator(this, this.live('query.chunks'), 'query.chunks', true);
    }

    /**
     * Number of entities the query matches. Not for consumers (that would consume a run).
     * Marks nothing, whatever the query `writes`: only a loop hands out views to write through.
     */
    count(): number {
        this.plainOnly('query.count');
        let total = 0;
        for (const chunk of this.reads('query.count')) total += chunk.rowCount;
        return total;
    }

    /**
     * The handles of the entities the query visits, in a fresh array (one run for a consumer).
     * Marks nothing, whatever the query `writes`.
     */
    entities(): Uint32Array {
        const parts: Uint32Array[] = [];
        let total = 0;
        for (const chunk of this.reads('query.entities')) {
            const part = chunk.filtered ? selectRows(chunk.entities, chunk.rows) : chunk.entities.slice();
            parts.push(part);
            total += part.length;
        }
        const all = new Uint32Array(total);
        let at = 0;
        for (const part of parts) {
            all.set(part, at);
            at += part.length;
        }
        return all;
    }

    // ---- bulk structural changes ---------------------------------------------------------

    /**
     * Adds a component (zeroed) or tag to every entity the query matches, a whole archetype at
     * a time (whole chunks change owner when only tags differ and nothing is tracked). A sparse
     * component, a pair (`ChildOf(group)`), or a query with sparse or pair terms goes entity
     * by entity.
     */
    addAll(component: Component<any> | Pair<any>): void {
        this.changeAll('query.addAll', component, true);
    }

    /**
     * Removes a component or tag from every entity the query matches; a relation removes all
     * their pairs of it, a pair that pair.
     */
    removeAll(component: Component<any> | Relation<any> | Pair<any>): void {
        this.changeAll('query.removeAll', component, false);
    }

    /** Despawns every entity the query matches. */
    despawnAll(): void {
        const operation = 'query.despawnAll';
        this.live(operation);
        this.plainOnly(operation);
        const world = this.world;
        world.check(world.heap.exports.tes_query_despawn(world.pointer, this.pointer), operation);
    }

    // ---- kernels: column math inside wasm, SIMD, marking what they write -----------------
    // Any field type. The operands must be values of the field's type (an integer field takes
    // whole numbers in its range: BAD_VALUE otherwise); integer results saturate at the type's
    // range (a u8 at 250 plus 10 is 255, a u16 timer counted down past 0 stays at 0).

    /** `a = value` for one field of every visited entity (all elements of array fields). */
    fill<S extends Schema>(component: Component<S>, field: KernelField<S>, value: number): void {
        runKernel(this, 'query.fill', OP_KIND.fill, component, field, ['value', value]);
    }

    /** `a += value` (integer fields: saturating at the type's range). */
    offset<S extends Schema>(component: Component<S>, field: KernelField<S>, value: number): void {
        runKernel(this, 'query.offset', OP_KIND.add, component, field, ['value', value]);
    }

    /** `a *= factor` (integer fields: saturating; the factor a value of the field's type). */
    scale<S extends Schema>(component: Component<S>, field: KernelField<S>, factor: number): void {
        runKernel(this, 'query.scale', OP_KIND.scale, component, field, ['factor', factor]);
    }

    /**
     * `a += b * factor`, e.g. `moving.addScaled(Position, 'x', Velocity, 'x', dt)`. Both
     * fields must have the same type and length (integer fields: saturating).
     */
    addScaled<S extends Schema, K extends FieldName<S>, T extends Schema>(
        component: Component<S>,
        field: [K] extends [never] ? KernelField<S> : K,
        source: Component<T>,
        sourceField: SourceField<T, S[K]>,
        factor: number,
    ): void {
        runKernel(this, 'query.addScaled', OP_KIND.add_scaled, component, field, ['factor', factor], undefined, { source, sourceField });
    }

    /** `a = min(max(a, min), max)`. */
    clamp<S extends Schema>(component: Component<S>, field: KernelField<S>, min: number, max: number): void {
        runKernel(this, 'query.clamp', OP_KIND.clamp, component, field, undefined, [min, max]);
    }

    /**
     * `a -= amount`, returning the entities whose value went from above 0 to 0 or below in this
     * call (timers, lifetimes, health), in a fresh array. An unsigned field stops at 0, so an
     * entity is returned once, by the call that brings it to 0.
     */
    countdown<S extends Schema>(component: Component<S>, field: KernelField<S>, amount: number): Uint32Array {
        return runKernel(this, 'query.countdown', OP_KIND.sub_collect, component, field, ['amount', amount]);
    }

    /**
     * Closes the query: a consumer stops holding back change history. Idempotent. A query the
     * program drops without closing is freed after the garbage collector finds it unreachable
     * (a backstop: that may come late or never, and until then a consumer holds history).
     */
    close(): void {
        this.closeAs('query.close');
    }

    /** @internal close(), its refusal naming the operation the program called. */
    closeAs(operation: string): void {
        if (this.pointer === 0) return;
        if (this.runs > 0) {
            throw new TesseraError('QUERY_IN_USE', operation, 'an iteration of this query is live');
        }
        forgetQuery(this);
        if (!this.world.destroyed) this.world.heap.exports.tes_query_destroy(this.world.pointer, this.pointer);
        this.pointer = 0;
    }

    /** @internal The world pointer, or `DESTROYED` when the query or its world is gone. */
    live(operation: string): Pointer {
        const world = this.world.live(operation);
        if (this.pointer === 0) throw new TesseraError('DESTROYED', operation, 'the query was closed');
        return world;
    }

    /**
     * A run for the helpers (count, entities, despawnAll): it hands no chunk to the caller, so
     * nothing can have been written through its views and its `writes` mark nothing.
     */
    private reads(operation: string): ChunkIterator {
        return new ChunkIterator(this, this.live(operation), operation, false);
    }

    private plainOnly(operation: string): void {
        if (this.consumer) {
            throw new TesseraError(
                'INVALID_ARGUMENT',
                operation,
                'not for a query with added/changed/removed terms (it would consume a run); use a plain query',
            );
        }
    }

    /**
     * addAll / removeAll: one call into wasm, all or nothing over every archetype the query
     * matches (whole archetypes move at once when they can; see tes_query_add_items).
     */
    private changeAll(operation: string, item: Component<any> | Relation<any> | Pair<any>, add: boolean): void {
        this.plainOnly(operation);
        this.live(operation);
        this.world.items.queryItems(operation, this.pointer, item, add);
    }
}

function componentList(list: unknown, operation: string): unknown[] {
    if (list === undefined) return [];
    if (!Array.isArray(list)) {
        throw new TesseraError('INVALID_ARGUMENT', operation, 'expected an array of components');
    }
    return list;
}

function selectRows(entities: Uint32Array, rows: Uint32Array): Uint32Array {
    const out = new Uint32Array(rows.length);
    for (let i = 0; i < rows.length; i++) out[i] = entities[rows[i]!]!;
    return out;
}

export type { Entity };
