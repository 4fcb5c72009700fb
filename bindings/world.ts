/**
 * `World`: entities and their components, queries, subscriptions, systems. One world is one
 * `tes_world_t` of the C core; every method is a thin, validated call into wasm.
 *
 * @module
 */
import { TesseraError, describeEntity, type ErrorCode } from './errors.js';
import { Heap } from './heap.js';
import { TES_MAX_COMPONENTS, type Pointer } from './load.js';
import { Query, type ChunkIterator, type QueryDesc } from './query.js';
import { forgetWorld, watchWorld, WorldLink } from './lifetime.js';
import {
    arrayTypes,
    ChildOf,
    FLAGS,
    fieldOf,
    fieldsOf,
    isDefinition,
    isRelation,
    isSparse,
    splitItem,
    typeCode,
    valueProblem,
    describeValue,
    type Component,
    type ComponentItem,
    type Definition,
    type FieldMeta,
    type FieldName,
    type FieldValue,
    type Pair,
    type Relation,
    type Schema,
    type Values,
    type ValuesInput,
    type FieldInput,
} from './schema.js';
import { Replicator, type ReplicatorOptions } from './replicate.js';
import { Subscription, type SubscriptionDesc } from './subscription.js';
import { Scheduler, type Stage, type System, type SystemDesc } from './system.js';

/**
 * An entity handle: a plain number below 2^30 (21-bit index, 9-bit generation). 0 is never an
 * entity. A handle whose entity was despawned is stale: every call that takes it throws
 * `STALE_ENTITY` and touches nothing.
 */
export type Entity = number;

/** Options of a world; every field is optional. */
export interface WorldOptions {
    /** Bytes of one chunk block (default 65536, rounded up to a multiple of 64, at least 1024). */
    readonly chunkBytes?: number;
    /**
     * Freed entity slots are reused only while more than this many wait (default 4096, at
     * least 1), which delays a stale handle aliasing a new entity (see the README).
     */
    readonly minFreeIndices?: number;
    /**
     * Debug mode: column views are wrapped so that touching one after memory growth detached
     * it throws `VIEW_DETACHED` instead of reading `undefined` and dropping writes. Slow; for
     * development and tests.
     */
    readonly debug?: boolean;
    /**
     * Bytes from {@link World.snapshot}: the new world is that world again, with the same
     * entity handles, components, values, sparse components and pairs (docs/format.md).
     * Components are matched by name when this world first uses them, and must have the same
     * schema. Truncated, corrupted or foreign bytes throw `BAD_SNAPSHOT` (another format
     * version: `SNAPSHOT_VERSION`) and make no world.
     */
    readonly snapshot?: Uint8Array;
}

/** Counters of a world (`tes_world_stats_t`). */
export interface WorldStats {
    readonly entityCount: number;
    readonly entityCapacity: number;
    readonly freeQueueLength: number;
    readonly componentCount: number;
    readonly archetypeCount: number;
    readonly chunkCount: number;
    readonly pooledChunkCount: number;
    readonly chunkBytes: number;
    readonly edgeCount: number;
    readonly graphGeneration: number;
    /** Bytes the world holds from its allocator. */
    readonly bytesAllocated: number;
    /** The tick the next write is stamped with. */
    readonly changeTick: number;
    /** `tick()` calls so far. */
    readonly frame: number;
    readonly queryCount: number;
    /** Deferred commands dropped at a flush because their entity was gone. */
    readonly commandsSkipped: number;
}

/**
 * A world: entities, their components, queries over them, change subscriptions and systems.
 * Make one with `createWorld()`; free it with {@link World.destroy}.
 *
 * @example
 * const world = await createWorld();
 * const e = world.spawn(Position({ x: 1, y: 2 }), Velocity);
 * world.set(e, Velocity, { x: 0.5 });
 * world.get(e, Position); // { x: 1, y: 2 }
 */
export class World {
    /** @internal */
    readonly heap: Heap;
    /** @internal The `tes_world_t *`; 0 after destroy. */
    pointer: Pointer;
    /** @internal */
    readonly debug: boolean;
    /**
     * Made from a snapshot, or a replica: the C world has components (registered from the
     * bytes) that definitions claim by name on first use (see `claim`).
     */
    private restored: boolean;
    /**
     * @internal Byte offset of a column from its chunk's start, by archetype, component and
     * field: the same in every chunk of an archetype, and archetypes never change layout.
     */
    readonly columnOffsets = new Map<number, number>();
    /** @internal Live iterations started from JS: the first entries of `iterations`. */
    liveIterations = 0;
    /**
     * @internal The live iterations of this world, oldest first, in `[0, liveIterations)`:
     * `tick()` ends those a program abandoned, `destroy()` ends them all. A stack with its own
     * count, so that starting and ending a run stores a slot and changes no array length (a
     * push and a pop per run cost more, measured on replayed runs); an ended run's slot is
     * cleared, so only live ones are held.
     */
    readonly iterations: (ChunkIterator | undefined)[] = [];
    /** @internal What the finalizers of the world and of its queries share (lifetime.ts). */
    readonly link: WorldLink;
    /**
     * @internal Adds with values to placed entities deferred by the live iterations, as
     * `entity * TES_MAX_COMPONENTS + id`: a `set` of such a component in the same loop joins
     * the add's initial values (tes_init) instead of failing with MISSING_COMPONENT. Cleared
     * when the last iteration ends.
     */
    readonly deferredAdds = new Set<number>();

    /** C component id by component key (the definition's process-wide number). */
    private readonly ids: number[] = [];
    /** Components and relations by C id. */
    private readonly components: Definition[] = [];
    private readonly scheduler: Scheduler;

    /** @internal Use `createWorld()`. */
    constructor(heap: Heap, options: WorldOptions = {}) {
        // The published types hide this constructor's parameters (they are internal).
        if (!(heap instanceof Heap)) {
            throw new TesseraError('INVALID_ARGUMENT', 'new World', 'make worlds with createWorld() or module.createWorld()');
        }
        this.heap = heap;
        this.debug = options.debug === true;
        const operation = 'createWorld';
        const desc = heap.scratch;
        const u32 = heap.u32;
        u32.fill(0, desc >>> 2, (desc >>> 2) + 8);
        // In C, 0 means "the default": here the default is an absent option, and 0 is refused
        // rather than silently meaning something else.
        u32[desc >>> 2] = positive(options.chunkBytes, operation, 'chunkBytes');
        u32[(desc >>> 2) + 1] = positive(options.minFreeIndices, operation, 'minFreeIndices');
        const out = desc + 32;
        this.pointer = 0;
        this.restored = options.snapshot !== undefined;
        if (options.snapshot !== undefined) {
            this.pointer = restore(heap, desc, options.snapshot, operation);
        } else {
            this.check(heap.exports.tes_world_create(desc, out), operation);
            this.pointer = heap.u32At(out);
        }
        this.link = new WorldLink(heap, this.pointer);
        watchWorld(this, this.link);
        this.scheduler = new Scheduler(this);
    }

    /**
     * The whole world as bytes (docs/format.md): entities with their handles, components and
     * values, sparse components, relations and their pairs. `createWorld({ snapshot })` makes
     * it again. Change-detection state, queries, subscriptions and systems are not included.
     * Not inside a loop over the world (its deferred changes are in no state yet).
     * @returns a fresh copy: keep it as long as you like.
     */
    snapshot(): Uint8Array {
        const operation = 'world.snapshot';
        const world = this.live(operation);
        if (this.liveIterations > 0) {
            throw new TesseraError('INVALID_ARGUMENT', operation, 'not inside a loop over the world: its deferred changes are not applied yet');
        }
        const heap = this.heap;
        const out = heap.scratch;
        this.check(heap.exports.tes_snapshot(world, out, out + 4), operation);
        const bytes = heap.u32At(out);
        return heap.u8.slice(bytes, bytes + heap.u32At(out + 4));
    }

    /**
     * A replicator: the sending side of replication. It encodes what changed in this world
     * since a replica's acknowledged tick into one buffer (docs/format.md, "Deltas"), walking
     * only what changed; `replica.applyDelta(bytes)` makes another world (a client, a worker, a
     * replay) equal to this one. See {@link Replicator} and {@link Replicator.peer}.
     *
     * @example
     * const replicator = world.replicator();
     * const peer = replicator.peer();
     * // every frame, on the source:
     * const delta = peer.encode();
     * channel.send(delta.bytes.slice());
     * // on the replica, then acknowledged back:
     * replica.applyDelta(bytes);
     * peer.ack(replica.replicaTick);
     */
    replicator(options: ReplicatorOptions = {}): Replicator {
        return new Replicator(this, options);
    }

    /**
     * Applies a delta or keyframe from a {@link Replicator} (of this world's components, by
     * name: a keyframe registers those this world lacks). Bad bytes throw `BAD_DELTA`,
     * `SNAPSHOT_VERSION` or `DELTA_SCHEMA`, a delta whose baseline this world lacks throws
     * `DELTA_BASELINE` (ask the source for a keyframe: acknowledge 0); then nothing changed.
     * Entities are placed at the source's handles. Not inside a loop over the world.
     * @returns false when the delta is not newer than {@link World.replicaTick} (late or
     *   repeated; nothing changed), true when applied.
     */
    applyDelta(bytes: Uint8Array): boolean {
        const operation = 'world.applyDelta';
        const world = this.live(operation);
        if (!(bytes instanceof Uint8Array)) {
            throw new TesseraError('INVALID_ARGUMENT', operation, `bytes: expected a Uint8Array, got ${describeValue(bytes)}`);
        }
        if (this.liveIterations > 0) {
            throw new TesseraError('INVALID_ARGUMENT', operation, 'not inside a loop over the world: its deferred changes are not applied yet');
        }
        const heap = this.heap;
        const size = bytes.length;
        // The bytes may be a view of this module's memory (delta.bytes of a source world here).
        const block = heap.tempArray(bytes, 'u8', operation);
        const out = heap.scratch;
        heap.u32[out >>> 2] = 0;
        const result = heap.exports.tes_delta_apply(world, block, size, out);
        // A keyframe may have registered components: definitions claim them by name.
        this.restored = true;
        this.check(result, operation);
        return heap.u8[out] !== 0;
    }

    /** The source tick of the last delta applied here (0: none, or after a failed one). */
    get replicaTick(): number {
        return Number(this.heap.exports.tes_replica_tick(this.live('world.replicaTick')));
    }

    /** True after {@link World.destroy}. */
    get destroyed(): boolean {
        return this.pointer === 0;
    }

    /**
     * Frees the world and everything in it. Its queries, subscriptions, replicators and
     * systems die with it; any later use of them, of the world, of a chunk, an iterator or a
     * delta of it throws `DESTROYED`. Always succeeds: iterations still live end with the
     * world (their deferred changes are dropped with it). Calling it again does nothing.
     */
    destroy(): void {
        if (this.pointer === 0) return;
        // The C world goes whole, its runs and deferred commands with it: no call ends them.
        const live = this.iterations;
        for (let i = 0; i < this.liveIterations; i++) live[i]!.abandon();
        live.length = 0;
        this.liveIterations = 0;
        this.deferredAdds.clear();
        forgetWorld(this);
        this.link.destroy();
        this.pointer = 0;
    }

    // ---- entities ------------------------------------------------------------------------

    /**
     * Spawns an entity with the given components, each a component, a tag, a component
     * called with initial values (`Position({ x: 1 })`), or a pair of a relation
     * (`ChildOf(parent)`, `Likes(bob, { amount: 2 })`). Fields without a value start at 0.
     * Inside an iteration the entity is placed when the iteration ends; until then its handle
     * is pending (get and has throw `PENDING_ENTITY`; set, add, remove, despawn are deferred).
     * @returns the new entity's handle.
     */
    spawn(...items: ComponentItem[]): Entity {
        const operation = 'world.spawn';
        const set = this.componentSet(items, operation);
        const heap = this.heap;
        const list = heap.tempU32(set.ids, operation);
        const out = heap.scratch;
        if (set.pairs.length !== 0) this.checkTargets(set.pairs, operation);
        this.check(heap.exports.tes_spawn(this.live(operation), list, set.ids.length, out), operation);
        const entity = heap.u32At(out);
        set.values.forEach((values, i) => values && this.writeInitial(entity, set.components[i]!, values, operation));
        if (set.pairs.length !== 0) this.addNewPairs([entity], set.pairs, operation);
        return entity;
    }

    /**
     * Spawns `count` entities with the same components and initial values, filling chunks
     * contiguously (one call into wasm, values written column by column).
     * @returns the new handles, in a fresh array.
     */
    spawnMany(count: number, ...items: ComponentItem[]): Uint32Array {
        const operation = 'world.spawnMany';
        checkCount(count, operation, 'count');
        const set = this.componentSet(items, operation);
        if (set.pairs.length !== 0) this.checkTargets(set.pairs, operation);
        const heap = this.heap;
        const block = heap.tempBlock((count + set.ids.length) * 4 + 4, operation);
        const list = block + count * 4;
        heap.u32.set(set.ids, list >>> 2);
        this.check(
            heap.exports.tes_spawn_batch(this.live(operation), list, set.ids.length, count, block),
            operation,
        );
        const entities = heap.u32.slice(block >>> 2, (block >>> 2) + count);
        if (count > 0 && set.values.some((values) => values !== undefined)) this.fillInitial(entities, set, operation);
        if (count > 0 && set.pairs.length !== 0) this.addNewPairs(entities, set.pairs, operation);
        return entities;
    }

    /** Despawns an entity: its components are removed and its handle becomes stale. */
    despawn(entity: Entity): void {
        const operation = 'world.despawn';
        this.check(this.heap.exports.tes_despawn(this.live(operation), handle(entity, operation)), operation, entity);
    }

    /** Despawns every entity of the list, or none of them when one is stale or listed twice. */
    despawnMany(entities: ArrayLike<Entity>): void {
        const operation = 'world.despawnMany';
        const world = this.live(operation);
        for (let i = 0; i < entities.length; i++) handle(entities[i], operation);
        const list = this.heap.tempU32(entities, operation);
        const result = this.heap.exports.tes_despawn_batch(world, list, entities.length);
        if (result !== 0) throw this.error(result, operation, this.culprit(entities));
    }

    /** True when the handle names a live (or pending) entity. Never throws for a number. */
    isAlive(entity: Entity): boolean {
        const world = this.live('world.isAlive');
        if ((entity >>> 0) !== entity) return false;
        // tes_is_alive answers for placed entities only.
        return this.heap.exports.tes_is_alive(world, entity) !== 0 || this.pending(entity);
    }

    /**
     * Adds components (or tags), each optionally with initial values, and pairs
     * (`world.add(e, Likes(bob))`: see {@link World.addPair}). Adding a component the
     * entity already has keeps its data, and then writes the given values as a change. Inside
     * an iteration the add is deferred like every structural change; its values are written
     * when the iteration ends (after the deferred commands, as part of the add).
     */
    add(entity: Entity, ...items: ComponentItem[]): void {
        const operation = 'world.add';
        const only = items.length === 1 ? items[0] : undefined;
        if (typeof only === 'function') {
            // One component or tag without values, the common case (tes_add checks the handle).
            const id = this.idOf(only, operation);
            this.check(this.heap.exports.tes_add(this.live(operation), handle(entity, operation), id), operation, entity, only.name);
            return;
        }
        const set = this.componentSet(items, operation);
        const world = this.live(operation);
        if (items.length === 0 || set.pairs.length !== 0) this.requireAlive(entity, operation);
        else handle(entity, operation);
        if (set.pairs.length !== 0) {
            // Every pair is checked before anything is added: a cycle found by the C core after
            // the components went in would leave them there.
            this.checkTargets(set.pairs, operation);
            for (const { relation, id, target } of set.pairs) {
                if (relation.acyclic && this.wouldCycle(entity, id, target)) throw this.pairError('CYCLE', operation, entity, relation, target);
            }
        }
        const exports = this.heap.exports;
        // Which components with values the entity has already, asked before anything is added
        // (a pending entity has none placed yet).
        const withValues = set.values.some((values) => values !== undefined);
        const pending = withValues && this.liveIterations > 0 && this.pending(entity);
        const had = set.values.map(
            (values, i) => values !== undefined && !pending && this.hasId(entity, set.ids[i]!, set.components[i]!, operation),
        );
        for (let i = 0; i < set.ids.length; i++) {
            const id = set.ids[i]!;
            const component = set.components[i]!;
            const values = set.values[i];
            this.check(exports.tes_add(world, entity, id), operation, entity, component.name);
            if (values === undefined) continue;
            if (had[i]) this.writeValues(entity, component, id, values, operation);
            else {
                if (this.liveIterations > 0 && !pending) this.deferredAdds.add(entity * TES_MAX_COMPONENTS + id);
                this.writeInitial(entity, component, values, operation);
            }
        }
        for (const pair of set.pairs) this.addPairItem(entity, pair.relation, pair.id, pair.target, pair.values, operation);
    }

    /**
     * Removes components (or tags) and pairs. Removing one the entity does not have does
     * nothing. A bare relation removes every pair of the entity (as a source) of it:
     * `world.remove(e, Likes)`; a pair removes that pair: `world.remove(e, Likes(bob))`.
     */
    remove(entity: Entity, ...components: (Component<any> | Relation<any> | Pair<any>)[]): void {
        const operation = 'world.remove';
        const world = this.live(operation);
        if (components.length === 0) this.requireAlive(entity, operation);
        else handle(entity, operation);
        const only = components.length === 1 ? components[0] : undefined;
        if (typeof only === 'function') {
            this.check(this.heap.exports.tes_remove(world, entity, this.idOf(only, operation)), operation, entity, only.name);
            return;
        }
        // Everything is resolved and checked before anything is removed.
        const ids = components.map((item) => this.idOf(pairOf(item)?.relation ?? (item as Definition), operation));
        const pairs: PairItem[] = [];
        components.forEach((item, i) => {
            const pair = pairOf(item);
            if (pair !== undefined) pairs.push({ relation: pair.relation, id: ids[i]!, target: handle(pair.target, operation), values: undefined });
        });
        if (pairs.length !== 0) {
            this.requireAlive(entity, operation);
            this.checkTargets(pairs, operation);
        }
        const exports = this.heap.exports;
        for (let i = 0; i < ids.length; i++) {
            const item = components[i]!;
            const pair = pairOf(item);
            if (pair === undefined) {
                this.check(exports.tes_remove(world, entity, ids[i]!), operation, entity, (item as Definition).name);
            } else {
                this.pairCheck(exports.tes_pair_remove(world, entity, ids[i]!, pair.target), operation, entity, pair.relation, pair.target);
            }
        }
    }

    /**
     * True when the entity has the component. For a relation: when the entity is the source
     * of at least one of its pairs (`world.has(e, ChildOf)`), or of one pair
     * (`world.has(e, ChildOf(parent))`). Throws `STALE_ENTITY` for a dead entity.
     */
    has(entity: Entity, component: Component<any> | Relation<any> | Pair<any>): boolean {
        const operation = 'world.has';
        const pair = pairOf(component);
        if (pair !== undefined) return this.pairHas(entity, pair.relation, pair.target, operation);
        const id = this.knownId(component as Definition, operation);
        if (id !== undefined) return this.hasId(entity, id, component as Definition, operation);
        this.requireAlive(entity, operation); // no entity of this world has it
        return false;
    }

    /** All fields of an entity's component, copied into a fresh object. */
    get<S extends Schema>(entity: Entity, component: Component<S>): Values<S>;
    /** One field of an entity's component: a number, or a fresh array for array fields. */
    get<S extends Schema, K extends FieldName<S>>(
        entity: Entity,
        component: Component<S>,
        field: K,
    ): FieldValue<S[K]>;
    get(entity: Entity, component: Component<any>, field?: string): unknown {
        const operation = 'world.get';
        const id = this.knownId(component, operation);
        if (id === undefined) {
            // Never used in this world, so no entity has it: say so without registering it.
            if (field !== undefined) fieldOf(component, field, operation, entity);
            this.requireAlive(entity, operation);
            throw this.error('MISSING_COMPONENT', operation, entity, component.name, field);
        }
        if (field !== undefined) {
            const meta = fieldOf(component, field, operation, entity);
            return this.readField(this.fieldPointer(entity, component, id, meta, operation), meta);
        }
        if (component.isTag) {
            throw new TesseraError('TAG_HAS_NO_DATA', operation, `${component.name} is a tag`, {
                entity,
                component: component.name,
            });
        }
        const values: Record<string, unknown> = {};
        for (const meta of fieldsOf(component)) {
            values[meta.name] = this.readField(
                this.fieldPointer(entity, component, id, meta, operation),
                meta,
            );
        }
        return values;
    }

    /**
     * Writes some fields of an entity's component and marks it changed. Every value is checked
     * first (integers must be integral and in range): a bad one throws `BAD_VALUE` and nothing
     * is written.
     */
    set<S extends Schema>(entity: Entity, component: Component<S>, values: ValuesInput<S>): void;
    /** Writes one field of an entity's component and marks it changed. */
    set<S extends Schema, K extends FieldName<S>>(
        entity: Entity,
        component: Component<S>,
        field: K,
        value: FieldInput<S[K]>,
    ): void;
    set(entity: Entity, component: Component<any>, fieldOrValues: unknown, value?: unknown): void {
        const operation = 'world.set';
        const id = this.idOf(component, operation);
        // Every value is checked before anything is written.
        let meta: FieldMeta | undefined;
        if (typeof fieldOrValues === 'string') {
            meta = fieldOf(component, fieldOrValues, operation, entity);
            this.checkValue(component, meta, value, operation, entity);
        } else {
            this.checkValues(component, fieldOrValues as ValuesInput<any>, operation, entity);
        }
        if (this.deferredAdds.size !== 0 && this.joinedDeferredAdd(entity, component, id, meta, fieldOrValues, value)) return;
        if (meta !== undefined) {
            this.writeField(entity, component, id, meta, value, operation);
            return;
        }
        let written = false;
        for (const [field, fieldValue] of Object.entries(fieldOrValues as ValuesInput<any>)) {
            if (fieldValue === undefined) continue;
            this.writeField(entity, component, id, fieldOf(component, field, operation), fieldValue, operation);
            written = true;
        }
        if (!written) this.requireAlive(entity, operation); // nothing to write still checks the handle
    }

    /**
     * Marks an entity's component changed, after writing it through a view outside an
     * iteration. Deduplicated: marking twice between two runs of a consumer costs one entry.
     */
    markChanged(entity: Entity, component: Component<any>): void {
        const operation = 'world.markChanged';
        const id = this.idOf(component, operation);
        this.check(
            this.heap.exports.tes_mark_changed(this.live(operation), handle(entity, operation), id),
            operation,
            entity,
            component.name,
        );
    }

    // ---- relations: pairs (source, relation, target) -------------------------------------

    /**
     * Adds the pair (source, relation, target), with initial values for its data (fields
     * without one start at 0; initial values are not a change). Already there: the values, if
     * any, are written as a change. An exclusive relation replaces the source's other pair.
     * Throws `STALE_ENTITY` naming the source or the target, `CYCLE` for an acyclic relation
     * when the target is the source or one of its descendants, `NOT_A_RELATION` for a
     * component. Inside a loop it applies at once, unless the source or the target is pending
     * (spawned in the loop): then it is applied with the spawn, when the loop ends.
     */
    addPair<S extends Schema>(source: Entity, relation: Relation<S>, target: Entity, values?: ValuesInput<S>): void {
        const operation = 'world.addPair';
        const id = this.idOf(relation, operation);
        handle(source, operation);
        handle(target, operation);
        if (values !== undefined) this.checkValues(relation, values, operation, source);
        this.addPairItem(source, relation, id, target, values, operation);
    }

    /** Removes the pair; nothing happens when it is not there. */
    removePair(source: Entity, relation: Relation<any>, target: Entity): void {
        const operation = 'world.removePair';
        const id = this.idOf(relation, operation);
        this.pairCheck(
            this.heap.exports.tes_pair_remove(this.live(operation), handle(source, operation), id, handle(target, operation)),
            operation,
            source,
            relation,
            target,
        );
    }

    /** True when the pair (source, relation, target) exists. */
    hasPair(source: Entity, relation: Relation<any>, target: Entity): boolean {
        return this.pairHas(source, relation, target, 'world.hasPair');
    }

    /** The data of a pair, copied into a fresh object. `MISSING_COMPONENT` when there is no such pair. */
    getPair<S extends Schema>(source: Entity, relation: Relation<S>, target: Entity): Values<S>;
    /** One field of a pair's data. */
    getPair<S extends Schema, K extends FieldName<S>>(
        source: Entity,
        relation: Relation<S>,
        target: Entity,
        field: K,
    ): FieldValue<S[K]>;
    getPair(source: Entity, relation: Relation<any>, target: Entity, field?: string): unknown {
        const operation = 'world.getPair';
        const id = this.idOf(relation, operation);
        handle(source, operation);
        handle(target, operation);
        if (field !== undefined) return this.readPairField(source, relation, id, target, fieldOf(relation, field, operation, source), operation);
        if (relation.isTag) {
            this.pairHas(source, relation, target, operation); // stale handles first
            throw new TesseraError('TAG_HAS_NO_DATA', operation, `the pairs of ${relation.name} have no data`, {
                entity: source,
                component: relation.name,
            });
        }
        const values: Record<string, unknown> = {};
        for (const meta of fieldsOf(relation)) values[meta.name] = this.readPairField(source, relation, id, target, meta, operation);
        return values;
    }

    /**
     * Writes some fields of a pair's data, as a change (a `changed` pair event, and the source's
     * relation counts as changed). Every value is checked before anything is written.
     */
    setPair<S extends Schema>(source: Entity, relation: Relation<S>, target: Entity, values: ValuesInput<S>): void;
    /** Writes one field of a pair's data, as a change. */
    setPair<S extends Schema, K extends FieldName<S>>(
        source: Entity,
        relation: Relation<S>,
        target: Entity,
        field: K,
        value: FieldInput<S[K]>,
    ): void;
    setPair(source: Entity, relation: Relation<any>, target: Entity, fieldOrValues: unknown, value?: unknown): void {
        const operation = 'world.setPair';
        const id = this.idOf(relation, operation);
        handle(source, operation);
        handle(target, operation);
        let values: ValuesInput<any>;
        if (typeof fieldOrValues === 'string') {
            const meta = fieldOf(relation, fieldOrValues, operation, source);
            this.checkValue(relation, meta, value, operation, source);
            values = { [fieldOrValues]: value } as ValuesInput<any>;
        } else {
            this.checkValues(relation, fieldOrValues as ValuesInput<any>, operation, source);
            values = fieldOrValues as ValuesInput<any>;
        }
        if (!this.writePairValues(source, relation, id, target, values, false, operation)) {
            // Nothing to write still checks the handles and the pair.
            if (!this.pairHas(source, relation, target, operation)) throw this.pairError('MISSING_COMPONENT', operation, source, relation, target);
        }
    }

    /** The targets of a source's pairs of a relation, in the order the pairs were added. */
    targets(source: Entity, relation: Relation<any>): Entity[] {
        const operation = 'world.targets';
        const id = this.idOf(relation, operation);
        const world = this.live(operation);
        handle(source, operation);
        const exports = this.heap.exports;
        return this.fetchList(operation, 1, (out, capacity, count) => exports.tes_pair_targets(world, source, id, out, capacity, count), source, relation)[0]!;
    }

    /**
     * The source's first target of a relation, or undefined when it has none: the one target of
     * an exclusive relation (`world.target(e, ChildOf)` is e's parent).
     */
    target(source: Entity, relation: Relation<any>): Entity | undefined {
        const operation = 'world.target';
        const id = this.idOf(relation, operation);
        const heap = this.heap;
        const out = heap.scratch;
        this.check(heap.exports.tes_pair_target(this.live(operation), handle(source, operation), id, out), operation, source, relation.name);
        const target = heap.u32At(out);
        return target === 0 ? undefined : target;
    }

    /**
     * The sources of the pairs of a relation to a target, in their order: the order their
     * pairs were added in, or as {@link World.placePair} / {@link World.setParent} set it.
     */
    sources(relation: Relation<any>, target: Entity): Entity[] {
        const operation = 'world.sources';
        const id = this.idOf(relation, operation);
        const world = this.live(operation);
        handle(target, operation);
        const exports = this.heap.exports;
        return this.fetchList(operation, 1, (out, capacity, count) => exports.tes_pair_sources(world, id, target, out, capacity, count), target, relation)[0]!;
    }

    /** Every pair of a relation as `[source, target]`, source by source (sources in no promised order). */
    pairs(relation: Relation<any>): Array<[Entity, Entity]> {
        const operation = 'world.pairs';
        const id = this.idOf(relation, operation);
        const world = this.live(operation);
        const exports = this.heap.exports;
        const [sources, targets] = this.fetchList(
            operation,
            2,
            (out, capacity, count) => exports.tes_relation_pairs(world, id, out, out + capacity * 4, capacity, count),
            undefined,
            relation,
        );
        return sources!.map((source, i) => [source, targets![i]!]);
    }

    /**
     * Moves the pair (source, relation, target) in the target's list of sources to just before
     * the pair of `before` (another source of the same target), or to the end when `before` is
     * left out. `MISSING_COMPONENT` when either pair does not exist.
     */
    placePair(source: Entity, relation: Relation<any>, target: Entity, before?: Entity): void {
        const operation = 'world.placePair';
        const id = this.idOf(relation, operation);
        handle(source, operation);
        handle(target, operation);
        if (before !== undefined) handle(before, operation);
        const result = this.heap.exports.tes_pair_place(this.live(operation), source, id, target, before ?? 0);
        if (result === this.heap.results.MISSING_COMPONENT && before !== undefined && this.pairHas(source, relation, target, operation)) {
            throw this.pairError('MISSING_COMPONENT', operation, before, relation, target);
        }
        this.pairCheck(result, operation, source, relation, target);
    }

    // ---- hierarchy: the built-in ChildOf relation ----------------------------------------

    /**
     * Makes `parent` the parent of `child` (the pair (child, ChildOf, parent)), replacing its
     * old parent; `parent` 0 or undefined makes it a root. A new child goes after its siblings,
     * or just before `before` (one of parent's children) when given; a child that stays with
     * its parent keeps its place unless `before` is given. Throws `CYCLE` when `parent` is
     * `child` or one of its descendants, and changes nothing.
     */
    setParent(child: Entity, parent: Entity | undefined, before?: Entity): void {
        const operation = 'world.setParent';
        const id = this.idOf(ChildOf, operation);
        const world = this.live(operation);
        handle(child, operation);
        const exports = this.heap.exports;
        if (parent === undefined || parent === 0) {
            if (before !== undefined) {
                throw new TesseraError('INVALID_ARGUMENT', operation, '`before` needs a parent', { entity: child, component: ChildOf.name });
            }
            // Removing a relation applies at once even inside a loop (as pair calls do), so a
            // later setParent in the same loop keeps the last word.
            this.check(exports.tes_remove(world, child, id), operation, child, ChildOf.name);
            return;
        }
        handle(parent, operation);
        if (before !== undefined) {
            // `before` must be a child of parent already (the child itself included: then it stays).
            handle(before, operation);
            this.requireAlive(child, operation); // the child's mistakes are reported first
            if (!this.pairHas(before, ChildOf, parent, operation)) {
                throw new TesseraError(
                    'MISSING_COMPONENT',
                    operation,
                    `before: ${describeEntity(before)} is not a child of ${describeEntity(parent)}`,
                    { entity: before, component: ChildOf.name },
                );
            }
        }
        this.pairCheck(exports.tes_pair_add(world, child, id, parent), operation, child, ChildOf, parent);
        if (before !== undefined && before !== child) {
            this.pairCheck(exports.tes_pair_place(world, child, id, parent, before), operation, child, ChildOf, parent);
        }
    }

    /** The parent of `child`, or undefined for a root. */
    parentOf(child: Entity): Entity | undefined {
        return this.target(child, ChildOf);
    }

    /** The children of `parent`, in order (see {@link World.setParent}). */
    childrenOf(parent: Entity): Entity[] {
        return this.sources(ChildOf, parent);
    }

    /**
     * The descendants of `root` (root excluded), depth first, pre-order: each entity comes after
     * its parent and before its next sibling, children in order. `relation` defaults to
     * ChildOf; with another relation, "children" are the sources of an entity's pairs, and an
     * entity reached twice is listed once, at its first visit.
     */
    descendants(root: Entity, relation: Relation<any> = ChildOf): Entity[] {
        return this.walkList(root, relation, 'world.descendants')[0];
    }

    /**
     * Calls `visit(entity, depth, parent)` for every descendant of `root` in the order of
     * {@link World.descendants}: depth 1 for root's children, and `parent` the entity it was
     * reached from (root for depth 1). Parents are visited before their children, which is what
     * transform propagation needs. The list is taken before the first call: entities spawned by
     * `visit` are not visited, and despawned ones still are.
     */
    walk(root: Entity, visit: (entity: Entity, depth: number, parent: Entity) => void, relation: Relation<any> = ChildOf): void {
        const operation = 'world.walk';
        if (typeof visit !== 'function') throw new TesseraError('INVALID_ARGUMENT', operation, 'expected a function to call per entity');
        const [entities, depths] = this.walkList(root, relation, operation);
        const stack: Entity[] = [root];
        for (let i = 0; i < entities.length; i++) {
            const entity = entities[i]!;
            const depth = depths[i]!;
            stack[depth] = entity;
            visit(entity, depth, stack[depth - 1]!);
        }
    }

    // ---- queries, subscriptions, systems -------------------------------------------------

    /**
     * A query: the entities with every `all` component, none of `none`, and one of `any`.
     * With `added` / `changed` filters it visits only what changed since its last run. List
     * the components you write through views in `writes`: they are marked changed for every
     * row visited when the iteration moves past a chunk.
     */
    query(desc: QueryDesc): Query {
        return new Query(this, desc, 'world.query');
    }

    /**
     * A change subscription: the entities whose `added` / `changed` components were added or
     * changed, and the entities that lost a `removed` component, since the last drain. Each
     * subscription has its own watermark; close it when done so it stops holding history.
     */
    subscribe(desc: SubscriptionDesc): Subscription {
        return new Subscription(this, desc);
    }

    /** Creates (or returns) a stage. Stages run in creation order in {@link World.tick}. */
    stage(name: string): Stage {
        this.live('world.stage');
        return this.scheduler.stage(name);
    }

    /** Registers a system: a query and a function run with it on every due tick. */
    system(desc: SystemDesc): System {
        this.live('world.system');
        return this.scheduler.system(desc);
    }

    /**
     * One frame: runs every stage's due systems in order (each system's deferred structural
     * changes are applied when it returns), then prunes change history every consumer has seen.
     * When a system throws, the tick stops there and the error propagates: later systems do not
     * run, nothing is pruned and the frame does not advance.
     */
    tick(): void {
        this.live('world.tick');
        this.scheduler.tick();
    }

    /** `tick()` calls so far. */
    get frame(): number {
        return this.scheduler.frame;
    }

    /** Counters: entities, archetypes, chunks, bytes, ticks. */
    stats(): WorldStats {
        const operation = 'world.stats';
        const heap = this.heap;
        const out = heap.scratch;
        this.check(heap.exports.tes_world_stats(this.live(operation), out), operation);
        const u32 = (i: number) => heap.u32At(out + i * 4);
        return {
            entityCount: u32(0),
            entityCapacity: u32(1),
            freeQueueLength: u32(2),
            componentCount: u32(3),
            archetypeCount: u32(4),
            chunkCount: u32(5),
            pooledChunkCount: u32(6),
            chunkBytes: u32(7),
            edgeCount: u32(8),
            graphGeneration: u32(9),
            bytesAllocated: heap.u64At(out + 40),
            changeTick: heap.u64At(out + 48),
            frame: heap.u64At(out + 56),
            queryCount: u32(16),
            commandsSkipped: u32(17),
        };
    }

    /** Checks every storage invariant of the C core; throws `CORRUPT` when one is broken. */
    validate(): void {
        const operation = 'world.validate';
        this.check(this.heap.exports.tes_world_validate(this.live(operation)), operation);
    }

    /** The component or relation registered under a C id in this world, if any. */
    componentById(id: number): Component<any> | Relation<any> | undefined {
        return this.components[id];
    }

    // ---- internals shared with queries, subscriptions and systems ------------------------

    /** @internal The world pointer, or `DESTROYED`. */
    live(operation: string): Pointer {
        if (this.pointer === 0) {
            throw new TesseraError('DESTROYED', operation, 'the world was destroyed');
        }
        return this.pointer;
    }

    /**
     * @internal Throws the TesseraError of a non-zero C result. The context comes as plain
     * arguments, so a call that succeeds (per entity, per chunk) allocates nothing for it.
     */
    check(result: number, operation: string, entity?: Entity, component?: string, field?: string): void {
        if (result !== 0) throw this.error(result, operation, entity, component, field);
    }

    /** @internal The TesseraError of a C result (a number, or the code's name). */
    error(result: number | ErrorCode, operation: string, entity?: Entity, component?: string, field?: string): TesseraError {
        const heap = this.heap;
        const number = typeof result === 'number' ? result : (heap.results[result] ?? -1);
        const problem = heap.messages[number] ?? `unknown result ${String(result)}`;
        return new TesseraError(heap.codes[number] ?? 'CORRUPT', operation, problem, { entity, component, field });
    }

    /** The C id of a component if this world registered it already (reads need not register). */
    private knownId(component: Definition, operation: string): number | undefined {
        this.live(operation);
        if (!isDefinition(component)) return this.register(component, operation); // throws
        // A world restored from a snapshot has components no definition has claimed yet.
        return this.ids[component.key] ?? (this.restored ? this.claim(component, operation) : undefined);
    }

    /** @internal The C id of a component in this world, registering it on first use. */
    idOf(component: Definition, operation: string): number {
        if (typeof component === 'function') {
            const id = this.ids[component.key];
            if (id !== undefined && this.pointer !== 0) return id;
        }
        return this.register(component, operation);
    }

    /** @internal True when the archetype's component set contains the C id. */
    archetypeHas(archetype: number, id: number): boolean {
        const heap = this.heap;
        const out = heap.scratch;
        this.check(heap.exports.tes_archetype_info(this.pointer, archetype, out), 'archetype');
        const components = heap.u32At(out) >>> 2;
        return heap.u32.subarray(components, components + heap.u32At(out + 4)).includes(id);
    }

    /**
     * @internal Ends every live iteration, newest first, as `break` would: its current chunk is
     * marked and expires, and the deferred changes are applied when the last one ends. Every
     * one is ended even when one fails; then the first failure is thrown.
     */
    endIterations(): void {
        let failure: unknown;
        let failed = false;
        for (const iteration of this.iterations.slice(0, this.liveIterations).reverse()) {
            try {
                iteration!.return();
            } catch (error) {
                if (!failed) failure = error;
                failed = true;
            }
        }
        if (failed) throw failure;
    }

    /**
     * @internal A 56-byte `tes_iter_t` block for a run, from the module's pool. It is lent: if
     * the world goes before the run ends, the block goes back to the pool with it.
     */
    takeIterBlock(operation: string): Pointer {
        const block = this.heap.takeIterBlock(operation);
        this.link.lentBlocks.push(block);
        return block;
    }

    /** @internal A run ended: its block goes back to the module's pool. */
    returnIterBlock(block: Pointer): void {
        const lent = this.link.lentBlocks;
        const at = lent.lastIndexOf(block);
        if (at < 0) return; // the world went first and gave it back
        lent[at] = lent[lent.length - 1]!;
        lent.pop();
        this.heap.returnIterBlock(block);
    }

    private register(component: Definition, operation: string): number {
        const world = this.live(operation);
        if (!isDefinition(component)) {
            throw new TesseraError(
                'INVALID_ARGUMENT',
                operation,
                `expected a component made by component(), tag() or relation(), got ${describeValue(component)}`,
            );
        }
        const heap = this.heap;
        const fields = fieldsOf(component);
        const strings: Pointer[] = [];
        try {
            strings.push(heap.newString(component.name, operation));
            for (const meta of fields) strings.push(heap.newString(meta.name, operation));
            // tes_component_desc_t {name, fields, field_count, flags} then tes_field_desc_t
            // {name, type, length} per field: 12 bytes each.
            const desc = heap.tempBlock(16 + 12 * fields.length, operation);
            const u32 = heap.u32;
            const base = desc >>> 2;
            u32[base] = strings[0]!;
            u32[base + 1] = fields.length ? desc + 16 : 0;
            u32[base + 2] = fields.length;
            u32[base + 3] = component.flags;
            fields.forEach((meta, i) => {
                u32[base + 4 + i * 3] = strings[i + 1]!;
                u32[base + 5 + i * 3] = typeCode(meta.type);
                u32[base + 6 + i * 3] = meta.length;
            });
            const out = heap.scratch;
            const result = heap.exports.tes_component_register(world, desc, out);
            const restored = result === heap.results.DUPLICATE_NAME ? this.claim(component, operation) : undefined;
            if (restored !== undefined) return restored;
            if (result === this.heap.results.DUPLICATE_NAME) {
                throw new TesseraError(
                    'DUPLICATE_NAME',
                    operation,
                    'another component with this name is registered in this world (component names must be unique per world)',
                    { component: component.name },
                );
            }
            this.check(result, operation, undefined, component.name);
            const id = heap.u32At(out);
            this.ids[component.key] = id;
            this.components[id] = component;
            return id;
        } finally {
            for (const pointer of strings) heap.exports.tes_free(pointer);
        }
    }

    /**
     * A component a snapshot registered (same name, not yet used from JS): mapped to this
     * definition when flags and fields match; BAD_SCHEMA when they do not. Undefined when the
     * name belongs to a definition already.
     */
    private claim(component: Definition, operation: string): number | undefined {
        const heap = this.heap;
        const name = heap.newString(component.name, operation);
        let found: number;
        try {
            found = heap.exports.tes_component_lookup(this.pointer, name, heap.scratch);
        } finally {
            heap.exports.tes_free(name);
        }
        if (found !== 0) return undefined; // no component of that name
        const id = heap.u32At(heap.scratch);
        if (this.components[id] !== undefined) return undefined;
        const out = heap.scratch;
        this.check(heap.exports.tes_component_info(this.pointer, id, out), operation, undefined, component.name);
        const fields = fieldsOf(component);
        let same = heap.u32At(out + 4) === fields.length && heap.u32At(out + 12) === component.flags;
        fields.forEach((meta, index) => {
            if (!same) return;
            this.check(heap.exports.tes_field_info(this.pointer, id, index, out), operation, undefined, component.name);
            same = heap.string(heap.u32At(out)) === meta.name && heap.u32At(out + 4) === typeCode(meta.type) && heap.u32At(out + 8) === meta.length;
        });
        if (!same) {
            throw new TesseraError('BAD_SCHEMA', operation, 'the world (restored from a snapshot) has a component of this name with another schema or storage', {
                component: component.name,
            });
        }
        this.ids[component.key] = id;
        this.components[id] = component;
        return id;
    }

    /**
     * Resolves spawn/add items, rejecting duplicates and checking initial values up front.
     * Pairs are kept apart (their targets are checked by checkTargets).
     */
    private componentSet(items: readonly ComponentItem[], operation: string): ComponentSet {
        const ids: number[] = [];
        const components: Component<any>[] = [];
        const values: (ValuesInput<any> | undefined)[] = [];
        let pairs: PairItem[] | undefined; // most spawns have none: no array for them
        for (const item of items) {
            // Components and Component(values) first, without a tuple per item (idOf checks
            // that the component is one); splitItem explains anything else.
            let component: Definition;
            let initial: ValuesInput<any> | undefined;
            if (typeof item === 'function') component = item;
            else if (typeof item === 'object' && item !== null && typeof (item as { component?: unknown }).component === 'function') {
                component = (item as { component: Component<any> }).component;
                initial = (item as { values: ValuesInput<any> }).values;
            } else if (typeof item === 'object' && item !== null && typeof (item as { relation?: unknown }).relation === 'function') {
                pairs ??= [];
                pairs.push(this.pairItem(item as Pair<any>, pairs, operation));
                continue;
            } else [component, initial] = splitItem(item, operation);
            const id = this.idOf(component, operation);
            if ((component.flags & FLAGS.relation) !== 0) {
                // (idOf checked that it is a definition: its flags are there.)
                throw new TesseraError('NEEDS_TARGET', operation, `${this.heap.messages[this.heap.results.NEEDS_TARGET!]}: ${component.name}(target)`, {
                    component: component.name,
                });
            }
            if (ids.includes(id)) {
                throw new TesseraError('INVALID_ARGUMENT', operation, 'a component is listed twice', {
                    component: component.name,
                });
            }
            if (initial !== undefined) this.checkValues(component, initial, operation);
            ids.push(id);
            components.push(component as Component<any>);
            values.push(initial);
        }
        return { ids, components, values, pairs: pairs ?? NO_PAIRS };
    }

    /** A pair of a spawn/add list, checked: a relation, a handle, no repeat, its values. */
    private pairItem(pair: Pair<any>, earlier: readonly PairItem[], operation: string): PairItem {
        const { relation, target, values } = pair;
        const id = this.idOf(relation, operation);
        if (!isRelation(relation)) throw this.error('NOT_A_RELATION', operation, undefined, (relation as Definition).name);
        handle(target, operation);
        for (const other of earlier) {
            if (other.id !== id) continue;
            if (other.target === target) {
                throw new TesseraError('INVALID_ARGUMENT', operation, `the pair ${relation.name}(${target}) is listed twice`, {
                    component: relation.name,
                });
            }
            if (relation.exclusive) {
                throw new TesseraError(
                    'INVALID_ARGUMENT',
                    operation,
                    `${relation.name} is exclusive (one target per source), and two of its pairs are listed`,
                    { component: relation.name },
                );
            }
        }
        if (values !== undefined) this.checkValues(relation, values, operation);
        return { relation, id, target, values };
    }

    /** Throws `UNKNOWN_FIELD` / `BAD_VALUE` for the first field value that cannot be stored. */
    private checkValues(
        component: Definition,
        values: ValuesInput<any>,
        operation: string,
        entity?: Entity,
    ): void {
        if (typeof values !== 'object' || values === null) {
            throw new TesseraError('BAD_VALUE', operation, `expected an object of field values, got ${describeValue(values)}`, {
                entity,
                component: component.name,
            });
        }
        for (const field in values) {
            if (!Object.hasOwn(values, field)) continue;
            const meta = fieldOf(component, field, operation, entity);
            this.checkValue(component, meta, (values as Record<string, unknown>)[field], operation, entity);
        }
    }

    /** Throws `BAD_VALUE` when a field's value (undefined: none) cannot be stored without loss. */
    private checkValue(component: Definition, meta: FieldMeta, value: unknown, operation: string, entity?: Entity): void {
        if (value === undefined) return;
        let problem: string | undefined;
        if (meta.length === 1) {
            problem = valueProblem(meta.type, value);
        } else {
            const list = value as ArrayLike<unknown>;
            if (typeof list !== 'object' || list === null || list.length !== meta.length) {
                problem = `expected ${meta.length} values, got ${describeValue(value)}`;
            } else {
                for (let i = 0; i < meta.length && problem === undefined; i++) {
                    const element = valueProblem(meta.type, list[i]);
                    if (element !== undefined) problem = `element ${i}: ${element}`;
                }
            }
        }
        if (problem !== undefined) {
            throw new TesseraError('BAD_VALUE', operation, problem, { entity, component: component.name, field: meta.name });
        }
    }

    /** Throws `STALE_ENTITY` unless the handle names a live or pending entity. */
    private requireAlive(entity: Entity, operation: string): void {
        if (!this.isAlive(handle(entity, operation))) {
            throw this.error('STALE_ENTITY', operation, entity);
        }
    }

    /**
     * A `set` of a component whose add with values is deferred in this loop joins the add's
     * initial values (recorded after them); true when it did. Kept out of `set`, the hot path.
     */
    private joinedDeferredAdd(
        entity: Entity,
        component: Component<any>,
        id: number,
        meta: FieldMeta | undefined,
        fieldOrValues: unknown,
        value: unknown,
    ): boolean {
        if (!this.deferredAdds.has(entity * TES_MAX_COMPONENTS + id)) return false;
        const values = meta === undefined ? fieldOrValues : { [meta.name]: value };
        this.writeInitial(entity, component, values as ValuesInput<any>, 'world.set');
        return true;
    }

    /** True when the handle names an entity spawned inside an iteration, not placed yet. */
    private pending(entity: Entity): boolean {
        const result = this.heap.exports.tes_location(this.pointer, entity, this.heap.scratch);
        return result === this.heap.results.PENDING_ENTITY;
    }

    private hasId(entity: Entity, id: number, component: Definition, operation: string): boolean {
        const heap = this.heap;
        const out = heap.scratch;
        this.check(
            heap.exports.tes_has(this.live(operation), handle(entity, operation), id, out),
            operation,
            entity,
            component.name,
        );
        return heap.u8[out] !== 0;
    }

    private fieldPointer(
        entity: Entity,
        component: Component<any>,
        id: number,
        meta: FieldMeta,
        operation: string,
    ): Pointer {
        const heap = this.heap;
        const out = heap.scratch;
        this.check(
            heap.exports.tes_field_ptr(this.live(operation), handle(entity, operation), id, meta.index, out),
            operation,
            entity,
            component.name,
            meta.name,
        );
        return heap.u32At(out);
    }

    private readField(pointer: Pointer, meta: FieldMeta): number | number[] {
        const memory = this.heap.typed(meta.type);
        const at = pointer / meta.bytesPerElement;
        return meta.length === 1 ? memory[at]! : Array.from(memory.subarray(at, at + meta.length));
    }

    /** Writes already-checked values as a change (tes_set*, which also works when deferred). */
    private writeValues(
        entity: Entity,
        component: Component<any>,
        id: number,
        values: ValuesInput<any>,
        operation: string,
    ): void {
        for (const [field, value] of Object.entries(values)) {
            if (value !== undefined) this.writeField(entity, component, id, fieldOf(component, field, operation), value, operation);
        }
    }

    /**
     * Writes one already-checked field value as a change: one call into wasm, which checks the
     * handle and stamps the change (and records it when the entity is pending).
     */
    private writeField(entity: Entity, component: Component<any>, id: number, meta: FieldMeta, value: unknown, operation: string): void {
        const heap = this.heap;
        const world = this.live(operation);
        handle(entity, operation);
        let result: number;
        if (meta.length === 1) {
            result = heap.exports.tes_set_number(world, entity, id, meta.index, 0, value as number);
        } else {
            const bytes = meta.length * meta.bytesPerElement;
            const block = heap.tempBlock(bytes, operation);
            heap.typed(meta.type).set(value as ArrayLike<number>, block / meta.bytesPerElement);
            result = heap.exports.tes_set(world, entity, id, meta.index, block, bytes);
        }
        this.check(result, operation, entity, component.name, meta.name);
    }

    /**
     * Writes the initial values of a new component (already checked): part of the spawn or add,
     * not a change (tes_init*). While an iteration is live and the entity is pending or its add
     * deferred, the C core records them after the add and writes them when it applies it.
     */
    private writeInitial(entity: Entity, component: Component<any>, values: ValuesInput<any>, operation: string): void {
        const heap = this.heap;
        const exports = heap.exports;
        const id = this.idOf(component, operation);
        for (const field in values) {
            const value = (values as Record<string, unknown>)[field];
            if (value === undefined || !Object.hasOwn(values, field)) continue;
            const meta = fieldOf(component, field, operation);
            let result: number;
            if (meta.length === 1) {
                result = exports.tes_init_number(this.pointer, entity, id, meta.index, 0, value as number);
            } else {
                const bytes = meta.length * meta.bytesPerElement;
                const block = heap.tempBlock(bytes, operation);
                heap.typed(meta.type).set(value as ArrayLike<number>, block / meta.bytesPerElement);
                result = exports.tes_init(this.pointer, entity, id, meta.index, block, bytes);
            }
            this.check(result, operation, entity, component.name, field);
        }
    }

    /**
     * Initial values of a batch: the new rows are contiguous, so fill column ranges. Sparse
     * components have no columns: their values are written entity by entity.
     */
    private fillInitial(entities: Uint32Array, set: ComponentSet, operation: string): void {
        const heap = this.heap;
        const exports = heap.exports;
        const out = heap.scratch;
        const location = exports.tes_location(this.pointer, entities[0]!, out);
        if (location === this.heap.results.PENDING_ENTITY) {
            for (const entity of entities) {
                set.values.forEach((values, i) => values && this.writeInitial(entity, set.components[i]!, values, operation));
            }
            return;
        }
        let table = false;
        set.values.forEach((values, i) => {
            const component = set.components[i]!;
            if (values === undefined) return;
            if (!isSparse(component)) {
                table = true;
                return;
            }
            for (const entity of entities) this.writeInitial(entity, component, values, operation);
        });
        if (!table) return;
        this.check(location, operation, entities[0]!);
        const archetype = heap.u32At(out);
        let chunk = heap.u32At(out + 4);
        let row = heap.u32At(out + 8);
        let done = 0;
        while (done < entities.length) {
            this.check(exports.tes_chunk_info(this.pointer, archetype, chunk, out), operation);
            const take = Math.min(heap.u32At(out + 4) - row, entities.length - done);
            for (let i = 0; i < set.ids.length; i++) {
                const values = set.values[i];
                const component = set.components[i]!;
                if (values === undefined || isSparse(component)) continue;
                const id = set.ids[i]!;
                for (const [field, value] of Object.entries(values)) {
                    if (value === undefined) continue;
                    const meta = fieldOf(component, field, operation);
                    this.check(exports.tes_chunk_column(this.pointer, archetype, chunk, id, meta.index, out), operation);
                    const column = new arrayTypes[meta.type](
                        heap.current,
                        heap.u32At(out),
                        (row + take) * meta.length,
                    );
                    if (meta.length === 1) {
                        column.fill(value as number, row, row + take);
                        continue;
                    }
                    const pattern = value as ArrayLike<number>;
                    for (let r = row; r < row + take; r++) column.set(pattern, r * meta.length);
                }
            }
            done += take;
            chunk++;
            row = 0;
        }
    }

    // ---- pair internals --------------------------------------------------------------------

    /** tes_pair_has, with errors naming the side they are about. */
    private pairHas(source: Entity, relation: Relation<any>, target: Entity, operation: string): boolean {
        const id = this.idOf(relation, operation);
        const heap = this.heap;
        const out = heap.scratch;
        this.pairCheck(
            heap.exports.tes_pair_has(this.live(operation), handle(source, operation), id, handle(target, operation), out),
            operation,
            source,
            relation,
            target,
        );
        return heap.u8[out] !== 0;
    }

    /** Throws the TesseraError of a non-zero result of a pair call. */
    private pairCheck(result: number, operation: string, source: Entity, relation: Definition, target: Entity, field?: string): void {
        if (result !== 0) throw this.pairError(result, operation, source, relation, target, field);
    }

    /**
     * The TesseraError of a failed pair call. The C core checks the source first, then the
     * relation, then the target, with the same codes for both entities: a stale or pending
     * handle is put down to the source when the source is the one that is stale or pending.
     */
    private pairError(
        result: number | ErrorCode,
        operation: string,
        source: Entity,
        relation: Definition,
        target: Entity,
        field?: string,
    ): TesseraError {
        const heap = this.heap;
        const number = typeof result === 'number' ? result : (heap.results[result] ?? -1);
        const code = heap.codes[number] ?? 'CORRUPT';
        const message = heap.messages[number] ?? `unknown result ${String(result)}`;
        const context = { entity: source, component: relation.name, field };
        switch (code) {
            case 'STALE_ENTITY':
            case 'PENDING_ENTITY': {
                const sourceIsIt = code === 'STALE_ENTITY' ? !this.isAlive(source) : this.pending(source);
                const entity = sourceIsIt ? source : target;
                return new TesseraError(code, operation, `${sourceIsIt ? 'source' : 'target'}: ${message}`, { ...context, entity });
            }
            case 'MISSING_COMPONENT':
                return new TesseraError(code, operation, `no pair (${describeEntity(source)}, ${relation.name}, ${describeEntity(target)})`, context);
            case 'CYCLE':
                return new TesseraError(
                    code,
                    operation,
                    `${message}: the target, ${describeEntity(target)}, is the source or one of its descendants`,
                    context,
                );
            default:
                return new TesseraError(code, operation, `${message} (target ${describeEntity(target)})`, context);
        }
    }

    /**
     * Adds a pair (values already checked): a new pair gets its values as initial ones; an
     * existing one gets them written as a change, as `add` does for components.
     */
    private addPairItem(
        source: Entity,
        relation: Relation<any>,
        id: number,
        target: Entity,
        values: ValuesInput<any> | undefined,
        operation: string,
    ): void {
        const world = this.live(operation);
        // Whether the pair is there already is asked first (a pending side cannot have it yet).
        const had =
            values !== undefined &&
            !(this.liveIterations > 0 && (this.pending(source) || this.pending(target))) &&
            this.pairHas(source, relation, target, operation);
        this.pairCheck(this.heap.exports.tes_pair_add(world, source, id, target), operation, source, relation, target);
        if (values !== undefined) this.writePairValues(source, relation, id, target, values, !had, operation);
    }

    /**
     * Writes already-checked pair values, element by element: as initial values
     * (tes_pair_init_number) or as a change. False when there was nothing to write.
     */
    private writePairValues(
        source: Entity,
        relation: Relation<any>,
        id: number,
        target: Entity,
        values: ValuesInput<any>,
        initial: boolean,
        operation: string,
    ): boolean {
        const exports = this.heap.exports;
        const write = initial ? exports.tes_pair_init_number : exports.tes_pair_set_number;
        const world = this.live(operation);
        let written = false;
        for (const field in values) {
            const value = (values as Record<string, unknown>)[field];
            if (value === undefined || !Object.hasOwn(values, field)) continue;
            const meta = fieldOf(relation, field, operation, source);
            for (let element = 0; element < meta.length; element++) {
                const number = meta.length === 1 ? (value as number) : (value as ArrayLike<number>)[element]!;
                this.pairCheck(write(world, source, id, target, meta.index, element, number), operation, source, relation, target, field);
            }
            written = true;
        }
        return written;
    }

    private readPairField(source: Entity, relation: Relation<any>, id: number, target: Entity, meta: FieldMeta, operation: string): number | number[] {
        const heap = this.heap;
        const world = this.live(operation);
        const out = heap.scratch;
        const read = (element: number) => {
            this.pairCheck(
                heap.exports.tes_pair_get_number(world, source, id, target, meta.index, element, out),
                operation,
                source,
                relation,
                target,
                meta.name,
            );
            return heap.f64[out >>> 3]!;
        };
        if (meta.length === 1) return read(0);
        const list: number[] = [];
        for (let element = 0; element < meta.length; element++) list.push(read(element));
        return list;
    }

    /** Spawn/add pairs: every target must be a live (or pending) entity, checked before anything changes. */
    private checkTargets(pairs: readonly PairItem[], operation: string): void {
        for (const { relation, target } of pairs) {
            if (!this.isAlive(target)) {
                throw new TesseraError('STALE_ENTITY', operation, `target: ${this.heap.messages[this.heap.results.STALE_ENTITY!]}`, {
                    entity: target,
                    component: relation.name,
                });
            }
        }
    }

    /**
     * True when the pair (source, relation, target) would close a cycle: source is target or
     * one of its ancestors (targets up the exclusive relation). A pending entity ends the walk
     * (its pairs are not placed yet; the C core checks again when they are).
     */
    private wouldCycle(source: Entity, id: number, target: Entity): boolean {
        const exports = this.heap.exports;
        const out = this.heap.scratch;
        // At most one step per entity: an acyclic relation has no cycle to loop in.
        for (let at = target, steps = 0; at !== 0 && steps <= TES_MAX_ENTITIES; at = this.heap.u32At(out), steps++) {
            if (at === source) return true;
            if (exports.tes_pair_target(this.pointer, at, id, out) !== 0) return false;
        }
        return false;
    }

    /** The pairs of new entities (spawn, spawnMany); a failure despawns them again. */
    private addNewPairs(entities: ArrayLike<Entity>, pairs: readonly PairItem[], operation: string): void {
        const exports = this.heap.exports;
        try {
            for (let i = 0; i < entities.length; i++) {
                const entity = entities[i]!;
                for (const { relation, id, target, values } of pairs) {
                    this.pairCheck(exports.tes_pair_add(this.pointer, entity, id, target), operation, entity, relation, target);
                    if (values !== undefined) this.writePairValues(entity, relation, id, target, values, true, operation);
                }
            }
        } catch (error) {
            exports.tes_despawn_batch(this.pointer, this.heap.tempU32(entities, operation), entities.length);
            throw error;
        }
    }

    /**
     * A list call of the C core (`out`, `capacity`, `*out_count`) made with the temporary
     * block, and made again with a larger one when the total did not fit. `arrays` parallel
     * arrays share the block: the second starts at `out + capacity * 4`. Copies of them.
     */
    private fetchList(
        operation: string,
        arrays: number,
        call: (out: Pointer, capacity: number, count: Pointer) => number,
        entity: Entity | undefined,
        relation: Definition,
    ): Entity[][] {
        const heap = this.heap;
        const count = heap.scratch;
        let capacity = Math.max(64, Math.floor(heap.tempSize / (4 * arrays)));
        for (;;) {
            const block = heap.tempBlock(capacity * 4 * arrays, operation);
            capacity = Math.floor(heap.tempSize / (4 * arrays));
            this.check(call(block, capacity, count), operation, entity, relation.name);
            const total = heap.u32At(count);
            if (total <= capacity) {
                const u32 = heap.u32; // the call may have grown memory
                const lists: Entity[][] = [];
                for (let a = 0; a < arrays; a++) {
                    const start = (block >>> 2) + a * capacity;
                    lists.push(Array.from(u32.subarray(start, start + total)));
                }
                return lists;
            }
            capacity = total;
        }
    }

    /** tes_relation_walk: the descendants of root and their depths. */
    private walkList(root: Entity, relation: Relation<any>, operation: string): [Entity[], number[]] {
        const id = this.idOf(relation, operation);
        const world = this.live(operation);
        handle(root, operation);
        const exports = this.heap.exports;
        const [entities, depths] = this.fetchList(
            operation,
            2,
            (out, capacity, count) => exports.tes_relation_walk(world, id, root, out, out + capacity * 4, capacity, count),
            root,
            relation,
        );
        return [entities!, depths!];
    }

    /** The first entity of a failed batch that is stale or listed twice (for the message). */
    private culprit(entities: ArrayLike<Entity>): Entity | undefined {
        const seen = new Set<number>();
        for (let i = 0; i < entities.length; i++) {
            const entity = entities[i]!;
            if (seen.has(entity) || !this.isAlive(entity)) return entity;
            seen.add(entity);
        }
        return undefined;
    }
}

/** Spawn/add items resolved: C ids, components and initial values, side by side; pairs apart. */
interface ComponentSet {
    readonly ids: number[];
    readonly components: Component<any>[];
    readonly values: (ValuesInput<any> | undefined)[];
    readonly pairs: readonly PairItem[];
}

const NO_PAIRS: readonly PairItem[] = Object.freeze([]);

/** A pair of a spawn/add list, resolved. */
interface PairItem {
    readonly relation: Relation<any>;
    readonly id: number;
    readonly target: Entity;
    readonly values: ValuesInput<any> | undefined;
}

/** The pair an item names, if it is one (`R(target)`), else undefined. */
function pairOf(item: unknown): Pair<any> | undefined {
    return typeof item === 'object' && item !== null && typeof (item as Pair<any>).relation === 'function' ? (item as Pair<any>) : undefined;
}


/** `TES_MAX_ENTITIES`: live entities per world. */
const TES_MAX_ENTITIES = 2_097_151;

/** Checks that a value is an entity handle (a uint32) before it reaches wasm. */
function handle(entity: unknown, operation: string): Entity {
    if (typeof entity !== 'number' || entity >>> 0 !== entity) {
        throw new TesseraError(
            'INVALID_ARGUMENT',
            operation,
            `expected an entity handle (a non-negative integer), got ${describeValue(entity)}`,
        );
    }
    return entity;
}

/** An optional option that must be an integer in 1..2^32-1; 0 (the C default) when absent. */
function positive(value: unknown, operation: string, name: string): number {
    if (value === undefined) return 0;
    if (checkCount(value, operation, name) === 0) {
        throw new TesseraError('INVALID_ARGUMENT', operation, `${name} must be at least 1 (leave it out for the default)`);
    }
    return value as number;
}

/** Checks a count or size option: an integer in 0..2^32-1. */
function checkCount(value: unknown, operation: string, name: string): number {
    if (typeof value !== 'number' || value >>> 0 !== value) {
        throw new TesseraError(
            'INVALID_ARGUMENT',
            operation,
            `${name} must be a non-negative integer, got ${describeValue(value)}`,
        );
    }
    return value;
}



/** tes_world_restore with the description at `desc` (filled) and the bytes copied into wasm. */
function restore(heap: Heap, desc: Pointer, snapshot: Uint8Array, operation: string): Pointer {
    if (!(snapshot instanceof Uint8Array)) {
        throw new TesseraError('INVALID_ARGUMENT', operation, `snapshot: expected a Uint8Array, got ${describeValue(snapshot)}`);
    }
    const size = snapshot.length;
    // The bytes may be a view of this module's memory: newArray copies them safely.
    const bytes = heap.newArray(snapshot, 'u8', operation);
    try {
        const out = desc + 32;
        const result = heap.exports.tes_world_restore(desc, bytes, size, out);
        if (result !== 0) {
            const code = heap.codes[result]!;
            throw new TesseraError(code, operation, `snapshot: ${heap.messages[result]}`);
        }
        return heap.u32At(out);
    } finally {
        heap.exports.tes_free(bytes);
    }
}
