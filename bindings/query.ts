/**
 * Queries and chunk iteration. A query walks the chunks of every archetype it matches; each
 * chunk hands out typed-array views of its columns straight over wasm memory, so a loop body
 * makes no call into wasm and allocates nothing per entity.
 *
 * @module
 */
import { TesseraError } from './errors.js';
import { guardView, viewProblem } from './heap.js';
import { forgetQuery, watchQuery } from './lifetime.js';
import { TES_MAX_COMPONENTS, type Pointer } from './load.js';
import { checkKeys } from './options.js';
import {
    arrayTypes,
    describeDefinition,
    describeValue,
    fieldOf,
    isDefinition,
    isRelation,
    isSparse,
    type ColumnArray,
    type ColumnOf,
    type Component,
    type Definition,
    type FieldLike,
    type FieldName,
    type Pair,
    type Relation,
    type Schema,
} from './schema.js';
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

/** `tes_query_desc_t` (wasm32): six (pointer, count) lists, then pairs and pair_changes. */
const QUERY_DESC_BYTES = 64;
/** `tes_pair_term_t` (wasm32): relation 0, target 4, op 8. */
const PAIR_TERM_BYTES = 12;

/** Byte offsets in `tes_iter_t` (wasm32). */
const ITER = { archetype: 0, chunk: 4, count: 8, entities: 12, rows: 16, rowCount: 20 } as const;
/** `tes_op_kind_t` values. */
const OP = { fill: 1, add: 2, scale: 3, addScaled: 4, clamp: 5, subCollect: 6 } as const;
/** `tes_op_t` (wasm32): k 0, lo 8, hi 16, kind 24, component 28, field 32, src 36, src field 40. */
const OP_BYTES = 48;

/** Identity rows 0..n-1, shared: `chunk.slots` of unfiltered chunks is a subarray of it. */
let identity = new Uint32Array(0);
function identityRows(count: number): Uint32Array {
    if (identity.length < count) {
        identity = new Uint32Array(Math.max(count, identity.length * 2, 1024));
        for (let i = 0; i < identity.length; i++) identity[i] = i;
    }
    return identity.subarray(0, count);
}

/**
 * Rows marked changed by hand in the current chunk, per component: a JS-side bitmap keeps the
 * list free of duplicates, so it never outgrows the chunk and is flushed in one call.
 */
class MarkList {
    bits = new Uint8Array(0);
    rows = new Uint32Array(0);
    length = 0;
    whole = false;

    prepare(capacity: number): void {
        if (this.bits.length < capacity) {
            this.bits = new Uint8Array(capacity);
            this.rows = new Uint32Array(capacity);
        }
    }

    clear(): void {
        for (let i = 0; i < this.length; i++) this.bits[this.rows[i]!] = 0;
        this.length = 0;
        this.whole = false;
    }
}

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
                pairTerms.push({ relation: pair.relation as Relation<any>, target: pair.target, op });
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
        const desc64 = heap.tempBlock(QUERY_DESC_BYTES + pairTerms.length * PAIR_TERM_BYTES + total * 4, operation);
        const u32 = heap.u32;
        const base = desc64 >>> 2;
        let next = desc64 + QUERY_DESC_BYTES;
        const list = (slot: number, values: readonly number[]) => {
            u32[base + slot] = values.length ? next : 0;
            u32[base + slot + 1] = values.length;
            u32.set(values, next >>> 2);
            next += values.length * 4;
        };
        ids.forEach((values, term) => list(term * 2, values));
        list(14, changeIds);
        u32[base + 12] = pairTerms.length ? next : 0;
        u32[base + 13] = pairTerms.length;
        pairTerms.forEach((term, i) => {
            u32[(next >>> 2) + i * 3] = pairIds[i]!;
            u32[(next >>> 2) + i * 3 + 1] = term.target;
            u32[(next >>> 2) + i * 3 + 2] = term.op;
        });
        const out = heap.scratch;
        world.check(heap.exports.tes_query_create(pointerOfWorld, desc64, out), operation);
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
            const part = chunk.filtered ? selectRows(chunk.entities, chunk.slots) : chunk.entities.slice();
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
        const entities = this.entities();
        this.world.despawnMany(entities);
    }

    // ---- kernels: column math inside wasm, SIMD, marking what they write -----------------
    // Any field type. The operands must be values of the field's type (an integer field takes
    // whole numbers in its range: BAD_VALUE otherwise); integer results saturate at the type's
    // range (a u8 at 250 plus 10 is 255, a u16 timer counted down past 0 stays at 0).

    /** `a = value` for one field of every visited entity (all elements of array fields). */
    fill<S extends Schema>(component: Component<S>, field: FieldName<S>, value: number): void {
        this.apply('query.fill', OP.fill, component, field, ['value', value]);
    }

    /** `a += value` (integer fields: saturating at the type's range). */
    offset<S extends Schema>(component: Component<S>, field: FieldName<S>, value: number): void {
        this.apply('query.offset', OP.add, component, field, ['value', value]);
    }

    /** `a *= factor` (integer fields: saturating; the factor a value of the field's type). */
    scale<S extends Schema>(component: Component<S>, field: FieldName<S>, factor: number): void {
        this.apply('query.scale', OP.scale, component, field, ['factor', factor]);
    }

    /**
     * `a += b * factor`, e.g. `moving.addScaled(Position, 'x', Velocity, 'x', dt)`. Both
     * fields must have the same type and length (integer fields: saturating).
     */
    addScaled<S extends Schema, K extends FieldName<S>, T extends Schema>(
        component: Component<S>,
        field: K,
        source: Component<T>,
        sourceField: FieldLike<T, S[K]>,
        factor: number,
    ): void {
        this.apply('query.addScaled', OP.addScaled, component, field, ['factor', factor], undefined, { source, sourceField });
    }

    /** `a = min(max(a, min), max)`. */
    clamp<S extends Schema>(component: Component<S>, field: FieldName<S>, min: number, max: number): void {
        this.apply('query.clamp', OP.clamp, component, field, undefined, [min, max]);
    }

    /**
     * `a -= amount`, returning the entities whose value went from above 0 to 0 or below in this
     * call (timers, lifetimes, health), in a fresh array. An unsigned field stops at 0, so an
     * entity is returned once, by the call that brings it to 0.
     */
    countdown<S extends Schema>(component: Component<S>, field: FieldName<S>, amount: number): Uint32Array {
        return this.apply('query.countdown', OP.subCollect, component, field, ['amount', amount]);
    }

    /**
     * Closes the query: a consumer stops holding back change history. Idempotent. A query the
     * program drops without closing is freed after the garbage collector finds it unreachable
     * (a backstop: that may come late or never, and until then a consumer holds history).
     */
    close(): void {
        if (this.pointer === 0) return;
        if (this.runs > 0) {
            throw new TesseraError('QUERY_IN_USE', 'query.close', 'an iteration of this query is live');
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
        this.world.queryItems(operation, this.pointer, item, add);
    }

    /**
     * Runs a kernel. Every number is the caller's, checked here (none has a default: a left-out
     * `max` must not clamp to 0): `scalar` is the kernel's k with its name, `range` clamp's
     * bounds, `source` addScaled's other field.
     */
    private apply(
        operation: string,
        kind: number,
        component: Component<any>,
        field: string,
        scalar: readonly [name: string, value: number] | undefined,
        range?: readonly [min: number, max: number],
        source?: { readonly source: Component<any>; readonly sourceField: string },
    ): Uint32Array {
        const world = this.live(operation);
        if (this.runs > 0) {
            throw new TesseraError('QUERY_IN_USE', operation, 'an iteration of this query is live');
        }
        const heap = this.world.heap;
        // The field before the id: a misspelt field must not register the component.
        const meta = fieldOf(component, fieldName(field, operation, component), operation);
        const id = this.world.idOf(component, operation);
        let sourceId = 0;
        let sourceIndex = 0;
        if (source !== undefined) {
            sourceIndex = fieldOf(source.source, fieldName(source.sourceField, operation, source.source), operation).index;
            sourceId = this.world.idOf(source.source, operation);
        }
        const numbers: [string, unknown][] = [];
        if (scalar !== undefined) numbers.push([scalar[0], scalar[1]]);
        if (range !== undefined) numbers.push(['min', range[0]], ['max', range[1]]);
        for (const [name, value] of numbers) {
            if (typeof value !== 'number') {
                throw new TesseraError('BAD_VALUE', operation, `${name} must be a number, got ${describeValue(value)}`, {
                    component: component.name,
                    field,
                });
            }
        }
        const op = heap.tempBlock(OP_BYTES, operation);
        const f64 = heap.f64;
        f64[op >>> 3] = scalar?.[1] ?? 0;
        f64[(op >>> 3) + 1] = range?.[0] ?? 0;
        f64[(op >>> 3) + 2] = range?.[1] ?? 0;
        const u32 = heap.u32;
        u32.set([kind, id, meta.index, sourceId, sourceIndex], (op + 24) >>> 2);
        const out = heap.scratch;
        const result = heap.exports.tes_query_apply(world, this.pointer, op, out, out + 4);
        if (result === heap.results.BAD_VALUE) {
            // The operands the core refused, named: only C says what a type may hold.
            const given = numbers.map(([name, value]) => `${name} ${String(value)}`).join(', ');
            throw new TesseraError(
                'BAD_VALUE',
                operation,
                `${given}: not a value of ${meta.type} (integer fields take whole numbers in their range)`,
                {
                    component: component.name,
                    field,
                },
            );
        }
        this.world.check(result, operation, undefined, component.name, field);
        const count = heap.u32At(out + 4);
        const entities = heap.u32At(out);
        return count ? heap.u32.slice(entities >>> 2, (entities >>> 2) + count) : new Uint32Array(0);
    }
}

/** The iterator result at the end of every run. */
const DONE: IteratorResult<Chunk, undefined> = Object.freeze({ done: true, value: undefined });

/**
 * One iteration of a query. `for...of` drives it; leaving the loop early ends it. A chunk is
 * valid until the iterator moves on. `world.tick()` ends an iteration still live (an
 * abandoned iterator, or the loop `tick()` was called from, unless from inside a system: that
 * tick is refused): its `next()` is done from then on. `world.destroy()` ends it too: its
 * `next()` throws `DESTROYED` from then on.
 *
 * The outermost run of a plain query records its chunks (and the views they hand out); while
 * no row or chunk has moved since (`tes_world_layout` is the same), the next outermost run
 * replays that list: no call into wasm per chunk and no new views, which is most of what a
 * run costs when chunks are few and small. Replaying runs defer structural calls through
 * `tes_defer_begin`/`tes_defer_end`, as a C iteration does.
 */
export class ChunkIterator implements IterableIterator<Chunk> {
    private readonly query: Query;
    /** The C iterator (`tes_iter_t`), or 0 when replaying `replay`. */
    private block: Pointer = 0;
    private replay: readonly Chunk[] | undefined;
    /** The chunks this run visits, kept as the query's cache when the run completes. */
    private recording: Chunk[] | undefined;
    private layout = 0;
    private position = 0;
    /** Hand-marked rows of the current chunk per component id (see the constructor). */
    private readonly marks: Map<number, MarkList>;
    private current: Chunk | undefined;
    private done = false;
    /**
     * False for the query helpers' runs: their chunks never reach the caller, so the query's
     * `writes` are not marked (a read must not report every entity changed).
     */
    private readonly marking: boolean;

    /** @internal */
    constructor(query: Query, world: Pointer, operation: string, marking: boolean) {
        this.query = query;
        this.marking = marking;
        const owner = query.world;
        const exports = owner.heap.exports;
        owner.link.beginRun(operation);
        try {
            this.start(query, world, operation);
        } catch (error) {
            owner.link.endRun();
            throw error;
        }
        // A nested run of the same (plain) query must not flush the outer run's marks into its
        // own chunk: only a run started while none is live uses the query's reusable lists.
        this.marks = query.runs === 0 ? query.marks : new Map();
        query.runs++;
        owner.iterations[owner.liveIterations++] = this;
    }

    /** Starts the run in the C core, or as a replay of the query's latest. */
    private start(query: Query, world: Pointer, operation: string): void {
        const owner = query.world;
        const exports = owner.heap.exports;
        if (!query.consumer && query.runs === 0 && query.stable) {
            this.layout = exports.tes_world_layout(world);
            if (query.cachedChunks !== undefined && query.cachedLayout === this.layout) {
                this.replay = query.cachedChunks;
                owner.check(exports.tes_defer_begin(world), operation);
            } else {
                this.recording = [];
            }
        }
        if (this.replay === undefined) {
            this.block = owner.takeIterBlock(operation);
            const result = exports.tes_query_iter(world, query.pointer, this.block);
            if (result !== 0) {
                owner.returnIterBlock(this.block);
                owner.check(result, operation);
            }
        }
    }

    [Symbol.iterator](): this {
        return this;
    }

    next(): IteratorResult<Chunk, undefined> {
        if (this.done) return this.ended();
        try {
            this.finishChunk();
        } catch (error) {
            this.end();
            throw error;
        }
        let chunk: Chunk;
        const replay = this.replay;
        if (replay !== undefined) {
            if (this.position === replay.length) {
                this.end();
                return DONE;
            }
            chunk = replay[this.position++]!;
            chunk.revive();
        } else {
            if (this.query.world.heap.exports.tes_iter_next(this.block) === 0) {
                // Complete: the next run may replay it (tes_iter_next has applied deferred
                // commands by now; if they moved rows, the layout no longer matches).
                if (this.recording !== undefined) {
                    this.query.cachedChunks = this.recording;
                    this.query.cachedLayout = this.layout;
                }
                this.end();
                return DONE;
            }
            chunk = new Chunk(this.query, this.block, this.marks);
            this.recording?.push(chunk);
        }
        this.current = chunk;
        return { done: false, value: chunk };
    }

    /** Ends the iteration early (what `break` does): marks, then applies deferred changes. */
    return(): IteratorResult<Chunk, undefined> {
        if (!this.done) {
            try {
                this.finishChunk();
            } finally {
                this.end();
            }
        }
        return DONE;
    }

    /** Marks what the current chunk wrote: hand-marked rows, then the query's `writes`. */
    private finishChunk(): void {
        const chunk = this.current;
        if (chunk === undefined) return;
        this.current = undefined;
        chunk.expire();
        const query = this.query;
        if (!this.marking || (this.marks.size === 0 && query.writeIds.length === 0)) return;
        const world = query.world;
        const heap = world.heap;
        const mark = (id: number, rows: Pointer, count: number, operation: string) =>
            world.check(heap.exports.tes_chunk_mark_changed(world.pointer, chunk.archetype, chunk.index, id, rows, count), operation);
        for (const [id, marks] of this.marks) {
            if (marks.whole) mark(id, chunk.rowsPointer, chunk.rowCount, 'chunk.markChanged');
            else if (marks.length) {
                mark(id, heap.tempU32(marks.rows.subarray(0, marks.length), 'chunk.markChanged'), marks.length, 'chunk.markChanged');
            }
            marks.clear();
        }
        for (const id of query.writeIds) mark(id, chunk.rowsPointer, chunk.rowCount, 'query writes');
    }

    /** Ends the run in the C core (applying deferred commands when it is the last). */
    private end(): void {
        if (this.done) return;
        this.done = true;
        this.current?.expire();
        this.current = undefined;
        this.query.runs--;
        const world = this.query.world;
        // Runs mostly end newest first: then this is the top of the stack; else the newer ones
        // move down a slot, keeping the order.
        const live = world.iterations;
        const top = --world.liveIterations;
        if (live[top] !== this) {
            const at = live.indexOf(this);
            live.copyWithin(at, at + 1, top + 1);
        }
        live[top] = undefined;
        const exports = world.heap.exports;
        if (this.replay !== undefined) exports.tes_defer_end(world.pointer);
        else {
            exports.tes_iter_fini(this.block); // harmless after tes_iter_next ended the run
            world.returnIterBlock(this.block);
        }
        world.link.endRun();
    }

    /**
     * @internal The world is being destroyed: the run ends with it, without a call into C (the
     * C world, its run and its deferred commands go whole; the block goes back with the
     * world's). From now on the iterator and its chunks throw `DESTROYED`.
     */
    abandon(): void {
        if (this.done) return;
        this.done = true;
        this.current?.expire();
        this.current = undefined;
        this.query.runs--;
        this.query.world.link.endRun();
    }

    /** `next()` after the end: done (its end, break, tick()), or DESTROYED (world.destroy()). */
    private ended(): IteratorResult<Chunk, undefined> {
        if (this.query.world.pointer === 0) throw new TesseraError('DESTROYED', 'iterator.next', 'the world was destroyed');
        return DONE;
    }
}

/**
 * One chunk of an iteration: up to a few thousand entities of one archetype, stored as
 * parallel columns. Valid until the iteration moves on.
 *
 * Views (`column`, `entities`, `slots`) point straight into wasm memory. They stay valid for
 * this chunk until a call that may allocate: structural calls inside the loop (spawn, despawn,
 * add, remove, their batch forms) are deferred and may grow memory, which detaches every view.
 * After such a call, ask the chunk again; it is cheap and always answers with live views. In a
 * debug world every view is guarded: using one after growth throws `VIEW_DETACHED`, after
 * the world was destroyed `DESTROYED`. A chunk used after its iteration moved on (or was
 * ended by `world.tick()`) throws `CHUNK_EXPIRED`; after `world.destroy()`, `DESTROYED`.
 */
export class Chunk {
    /** The archetype's id. */
    readonly archetype: number;
    /** The chunk's index in its archetype. */
    readonly index: number;
    /** Occupied rows of the chunk. */
    readonly count: number;
    /** Rows this iteration visits: `count`, or the dirty rows' number when filtered. */
    readonly rowCount: number;
    /** True when only some rows are visited (`slots` lists them). */
    readonly filtered: boolean;

    /** @internal The iteration's row list (`tes_iter_t.rows`), 0 when every row is visited. */
    readonly rowsPointer: Pointer;

    private readonly query: Query;
    private readonly entitiesPointer: Pointer;
    /**
     * Column views handed out: the typed array, and what the caller got (a guard in debug
     * worlds). A few entries per chunk: a list is cheaper to make and search than a Map.
     */
    private readonly views: { component: Definition; field: string; raw: ColumnArray; view: ColumnArray }[] = [];
    /**
     * `entities` and `slots`, made once per chunk (loops read them per row): the typed array,
     * and what the caller got (the same array, or a guard in debug worlds).
     */
    private entitiesRaw: Uint32Array | undefined;
    private entitiesView: Uint32Array | undefined;
    private slotsRaw: Uint32Array | undefined;
    private slotsView: Uint32Array | undefined;
    private readonly marks: Map<number, MarkList>;
    private expired = false;
    /** The component of the latest markChanged and its list: the per-row fast path. */
    private lastMarked: Definition | undefined;
    private lastMarks: MarkList | undefined;

    /** @internal */
    constructor(query: Query, block: Pointer, marks: Map<number, MarkList>) {
        const heap = query.world.heap;
        const base = block >>> 2;
        const u32 = heap.u32;
        this.query = query;
        this.marks = marks;
        this.archetype = u32[base]!;
        this.index = u32[base + ITER.chunk / 4]!;
        this.count = u32[base + ITER.count / 4]!;
        this.entitiesPointer = u32[base + ITER.entities / 4]!;
        this.rowsPointer = u32[base + ITER.rows / 4]!;
        this.rowCount = u32[base + ITER.rowCount / 4]!;
        this.filtered = this.rowsPointer !== 0;
    }

    /** The entity handles of the chunk, by row (`entities[0..count-1]`). */
    get entities(): Uint32Array {
        this.alive('chunk.entities');
        // A view detached by growth has length 0 (a visited chunk has rows): make it again.
        if (this.entitiesRaw === undefined || this.entitiesRaw.length === 0) {
            const start = this.entitiesPointer >>> 2;
            const raw = this.query.world.heap.u32.subarray(start, start + this.count);
            this.entitiesRaw = raw;
            this.entitiesView = this.guard(raw, 'entities view', 'read chunk.entities again');
        }
        return this.entitiesView!;
    }

    /**
     * The rows to visit: the dirty rows (each once) for a filtered query, else `0..count-1`.
     * `for (const i of chunk.slots)` works for both.
     */
    get slots(): Uint32Array {
        this.alive('chunk.slots');
        if (this.slotsRaw === undefined || this.slotsRaw.length === 0) {
            const start = this.rowsPointer >>> 2;
            // Unfiltered: rows 0..count-1 from a shared JS array, which growth cannot detach.
            const raw = this.filtered ? this.query.world.heap.u32.subarray(start, start + this.rowCount) : identityRows(this.count);
            this.slotsRaw = raw;
            this.slotsView = this.guard(raw, 'slots view', 'read chunk.slots again');
        }
        return this.slotsView!;
    }

    /**
     * A typed-array view of one field over the chunk's rows: element `row` (or
     * `row * length + k` for array fields). Its type follows the schema (`f32` gives a
     * `Float32Array`). Writes through it are not seen by change detection until marked: list
     * the component in the query's `writes`, or call {@link Chunk.markChanged}.
     */
    column<S extends Schema, K extends FieldName<S>>(component: Component<S>, field: K): ColumnOf<S, K> {
        // The views handed out before, found by identity: no lookups when a loop (or a replayed
        // run) asks again. A live chunk implies a live world (destroy expires every chunk).
        // A detached view has length 0 (a visited chunk has rows): memory grew, make it again.
        const views = this.views;
        if (!this.expired) {
            for (let i = 0; i < views.length; i++) {
                const cached = views[i]!;
                if (cached.component === component && cached.field === field && cached.raw.length !== 0) {
                    return cached.view as ColumnOf<S, K>;
                }
            }
        }
        const operation = 'chunk.column';
        this.alive(operation);
        const world = this.query.world;
        const heap = world.heap;
        const id = world.idOf(component, operation);
        const meta = fieldOf(component, fieldName(field, operation, component), operation);
        // A column sits at the same offset from the chunk's start (its entity column) in every
        // chunk of an archetype, so only an archetype's first chunk asks the C core.
        const offsetKey = (this.archetype * TES_MAX_COMPONENTS + id) * 64 + meta.index;
        let offset = world.columnOffsets.get(offsetKey);
        if (offset === undefined) {
            const out = heap.scratch;
            world.check(
                heap.exports.tes_chunk_column(world.pointer, this.archetype, this.index, id, meta.index, out),
                operation,
                undefined,
                component.name,
                field,
            );
            offset = heap.u32At(out) - this.entitiesPointer;
            world.columnOffsets.set(offsetKey, offset);
        }
        const raw: ColumnArray = new arrayTypes[meta.type](heap.current, this.entitiesPointer + offset, this.count * meta.length);
        const view = this.guard(raw, 'column view', 'call chunk.column() again', component.name, field);
        const entry = { component, field, raw, view };
        const detached = views.findIndex((v) => v.component === component && v.field === field);
        if (detached >= 0) views[detached] = entry;
        else views.push(entry);
        return view as ColumnOf<S, K>;
    }

    /**
     * Marks a component changed: one row (`markChanged(Health, i)`: no call into wasm,
     * duplicates dropped; about 8 ns per row all told), or every visited row
     * (`markChanged(Health)`). Applied in one call when the iteration moves past the chunk.
     */
    markChanged(component: Component<any>, row?: number): void {
        // The hot path: the same component as the previous call in this chunk, a valid row.
        const marks = this.lastMarks;
        if (component === this.lastMarked && marks !== undefined && row !== undefined && row >>> 0 === row && row < this.count) {
            if (marks.bits[row] === 0) {
                marks.bits[row] = 1;
                marks.rows[marks.length++] = row;
            }
            return;
        }
        this.markFirst(component, row);
    }

    /** markChanged's checks, done once per chunk and component. */
    private markFirst(component: Component<any>, row: number | undefined): void {
        const operation = 'chunk.markChanged';
        this.alive(operation);
        const world = this.query.world;
        const id = world.idOf(component, operation);
        if (isSparse(component)) {
            // No column to write through: world.set marks as it writes (world.markChanged for one entity).
            throw world.error('SPARSE_COMPONENT', operation, undefined, component.name);
        }
        if (!this.query.required.has(component) && !world.archetypeHas(this.archetype, id)) {
            throw world.error('MISSING_COMPONENT', operation, undefined, component.name);
        }
        let marks = this.marks.get(id);
        if (marks === undefined) {
            marks = new MarkList();
            this.marks.set(id, marks);
        }
        marks.prepare(this.count);
        this.lastMarked = component;
        this.lastMarks = marks;
        if (row === undefined) {
            marks.whole = true;
            return;
        }
        if (row >>> 0 !== row || row >= this.count) {
            throw new TesseraError('INVALID_ARGUMENT', operation, `row ${String(row)} is not in 0..${this.count - 1}`, {
                component: component.name,
            });
        }
        if (marks.bits[row] === 0) {
            marks.bits[row] = 1;
            marks.rows[marks.length++] = row;
        }
    }

    /** @internal A replaying run visits this chunk again (its views still hold). */
    revive(): void {
        this.expired = false;
    }

    /** @internal */
    expire(): void {
        this.expired = true;
        this.lastMarked = undefined; // so that marking through an expired chunk fails
        this.lastMarks = undefined;
    }

    private alive(operation: string): void {
        // The world first: destroying it expires the chunk too, and DESTROYED says why.
        this.query.world.live(operation);
        if (this.expired) {
            throw new TesseraError('CHUNK_EXPIRED', operation, 'the iteration has moved past this chunk');
        }
    }

    /**
     * What a view handed out is: the typed array itself, or in a debug world a guard that
     * throws `DESTROYED` once the world is destroyed and `VIEW_DETACHED` once memory grew.
     */
    private guard<T extends ColumnArray>(raw: T, operation: string, refresh: string, component?: string, field?: string): T {
        const world = this.query.world;
        if (!world.debug) return raw;
        const context = component === undefined ? {} : { component, field };
        return guardView(raw, () => viewProblem(raw, () => world.destroyed, operation, refresh, context));
    }
}

/** A field name from the caller, which plain JavaScript may have left out. */
function fieldName(field: unknown, operation: string, component: unknown): string {
    if (typeof field !== 'string') {
        const name = isDefinition(component) ? component.name : undefined;
        throw new TesseraError('INVALID_ARGUMENT', operation, `expected a field name, got ${describeValue(field)}`, { component: name });
    }
    return field;
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
