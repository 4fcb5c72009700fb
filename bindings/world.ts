/**
 * `World`: entities and their components, queries, subscriptions, systems. One world is one
 * `tes_world_t` of the C core; every method is a thin, validated call into wasm.
 *
 * @module
 */
import { Field, FieldSet } from './access.js';
import { TesseraError, describeEntity, type ErrorCode } from './errors.js';
import { Heap } from './heap.js';
import { ItemList, type WrittenList } from './items.js';
import type { Pointer } from './load.js';
import { Query, type ChunkIterator, type QueryDesc } from './query.js';
import { checkKeys } from './options.js';
import { Registry } from './registry.js';
import { forgetWorld, watchWorld, WorldLink } from './lifetime.js';
import {
    ChildOf,
    describeDefinition,
    describeValue,
    fieldOf,
    fieldsOf,
    isDefinition,
    isRelation,
    type Component,
    type ComponentColumns,
    type ComponentItem,
    type Definition,
    type FieldInput,
    type FieldMeta,
    type FieldName,
    type FieldValue,
    type Pair,
    type Relation,
    type Schema,
    type Values,
    type ValuesInput,
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
     * Debug mode: every view handed out (columns, `chunk.entities`, `chunk.slots`,
     * `delta.bytes`) is wrapped so that touching one after memory growth detached it throws
     * `VIEW_DETACHED`, and after the world was destroyed `DESTROYED`, instead of reading
     * `undefined` or freed memory. Slow; for development and tests.
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
    /** @internal The ids of this world's components and relations. */
    readonly registry: Registry;
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
    /** Each component's Field objects, by definition key (made on first use). */
    private readonly fieldSets: (FieldSet | undefined)[] = [];
    /** The item list of spawn/add/set/remove calls, reused call after call. */
    private readonly list = new ItemList();
    /** The registrations of the item call under way (taken back if it fails). */
    private readonly fresh: number[] = [];
    private readonly scheduler: Scheduler;

    /** @internal Use `createWorld()`. */
    constructor(heap: Heap, options: WorldOptions = {}) {
        // The published types hide this constructor's parameters (they are internal).
        if (!(heap instanceof Heap)) {
            throw new TesseraError('INVALID_ARGUMENT', 'new World', 'make worlds with createWorld() or module.createWorld()');
        }
        this.heap = heap;
        const operation = 'createWorld';
        checkWorldOptions(options, operation);
        this.debug = options.debug === true;
        const desc = heap.scratch;
        const u32 = heap.u32;
        u32.fill(0, desc >>> 2, (desc >>> 2) + 8);
        // In C, 0 means "the default": here the default is an absent option, and 0 is refused
        // rather than silently meaning something else.
        u32[desc >>> 2] = positive(options.chunkBytes, operation, 'chunkBytes');
        u32[(desc >>> 2) + 1] = positive(options.minFreeIndices, operation, 'minFreeIndices');
        const out = desc + 32;
        this.pointer = 0;
        this.registry = new Registry(heap, () => this.live('world'), options.snapshot !== undefined);
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
            throw new TesseraError(
                'INVALID_ARGUMENT',
                operation,
                'not inside a loop over the world: its deferred changes are not applied yet',
            );
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
            throw new TesseraError(
                'INVALID_ARGUMENT',
                operation,
                'not inside a loop over the world: its deferred changes are not applied yet',
            );
        }
        const heap = this.heap;
        const size = bytes.length;
        // The bytes may be a view of this module's memory (delta.bytes of a source world here).
        const block = heap.tempArray(bytes, 'u8', operation);
        const out = heap.scratch;
        heap.u32[out >>> 2] = 0;
        const result = heap.exports.tes_delta_apply(world, block, size, out);
        // A keyframe may have registered components: definitions claim them by name.
        this.registry.restored = true;
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
        forgetWorld(this);
        this.link.destroy();
        this.pointer = 0;
    }

    // ---- entities ------------------------------------------------------------------------

    /**
     * Spawns an entity with the given components, each a component, a tag, a component
     * called with initial values (`Position({ x: 1 })`), or a pair of a relation
     * (`ChildOf(parent)`, `Likes(bob, { amount: 2 })`). Fields without a value start at 0.
     * Everything is checked before anything happens: a refused spawn changes nothing.
     * Inside an iteration the entity is placed when the iteration ends; until then its handle
     * is pending (get and has throw `PENDING_ENTITY`; set, add, remove, despawn are recorded).
     * @returns the new entity's handle.
     */
    spawn(...items: ComponentItem[]): Entity {
        const operation = 'world.spawn';
        const world = this.live(operation);
        const list = this.listOf(items, operation, undefined, false);
        const written = this.callItems(list, 1, operation, undefined, (x, fault, entities) =>
            this.heap.exports.tes_spawn_items(world, x, 1, entities, fault),
        );
        return this.heap.u32At(written.entities);
    }

    /**
     * Spawns `count` entities with the same components and pairs, filling chunks contiguously:
     * one call into wasm. Initial values are the same for every entity (`Position({ y: 5 })`),
     * or each entity's own, given as columns (`Position.columns({ x: xs, y: ys })`: entity i
     * takes `xs[i]` and `ys[i]`; a field of `n` elements takes `n` numbers per entity, entity
     * after entity, as `chunk.column` lays them out; a scalar field may also be one number for
     * all). All or nothing: a column of the wrong length, or a value a field cannot hold at any
     * entity, refuses the whole call and spawns nothing (`BAD_VALUE` names the component, the
     * field, the value and the entity's `position` in the call). Inside an iteration the
     * spawn is recorded, columns and all, like any structural change.
     * @returns the new handles, in a fresh array.
     */
    spawnMany(count: number, ...items: (ComponentItem | ComponentColumns<any>)[]): Uint32Array {
        const operation = 'world.spawnMany';
        const world = this.live(operation);
        checkCount(count, operation, 'count');
        // More than a world can ever hold: refused before the handles' room is sized by it.
        if (count > TES_MAX_ENTITIES) throw this.error('TOO_MANY_ENTITIES', operation);
        const list = this.listOf(items, operation, undefined, false, count);
        const written = this.callItems(list, count, operation, undefined, (x, fault, entities) =>
            this.heap.exports.tes_spawn_items(world, x, count, entities, fault),
        );
        return this.heap.u32.slice(written.entities >>> 2, (written.entities >>> 2) + count);
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
        if (typeof entities !== 'object' || entities === null || typeof entities.length !== 'number') {
            throw new TesseraError('INVALID_ARGUMENT', operation, `expected an array of entity handles, got ${describeValue(entities)}`);
        }
        // Each handle is read once, into a copy that nothing else can change.
        const copy = new Uint32Array(entities.length);
        for (let i = 0; i < copy.length; i++) copy[i] = handle(entities[i], operation);
        const list = this.heap.tempU32(copy, operation);
        const result = this.heap.exports.tes_despawn_batch(world, list, copy.length);
        if (result !== 0) throw this.error(result, operation, this.culprit(copy));
    }

    /**
     * True when the value is the handle of a live (or pending) entity of this world; false for
     * anything else, whatever it is (a stale handle, a string, a bigint). Never throws but
     * `DESTROYED`.
     */
    isAlive(entity: Entity): boolean {
        const world = this.live('world.isAlive');
        if (typeof entity !== 'number' || entity >>> 0 !== entity) return false;
        // tes_is_alive answers for placed entities only.
        return this.heap.exports.tes_is_alive(world, entity) !== 0 || this.pending(entity);
    }

    /**
     * Adds components (or tags), each optionally with initial values, and pairs
     * (`world.add(e, Likes(bob))`: see {@link World.addPair}). Adding a component the entity
     * already has keeps its data, and then writes the given values as a change. All or
     * nothing: a refused add (a bad value, a stale target, a cycle, a row too large) adds none
     * of them. Inside an iteration the add is recorded like every structural change and applied
     * in order when the iteration ends, with its values, as what it is then (an add of a
     * component the entity has by then writes its values as a change).
     */
    add(entity: Entity, ...items: ComponentItem[]): void {
        const operation = 'world.add';
        const world = this.live(operation);
        const only = items.length === 1 ? items[0] : undefined;
        const id = typeof only === 'function' ? this.registry.known(only, operation) : undefined;
        if (id !== undefined) {
            // One registered component or tag without values, the common case (tes_add checks the handle).
            this.check(this.heap.exports.tes_add(world, handle(entity, operation), id), operation, entity, (only as Definition).name);
            return;
        }
        handle(entity, operation);
        if (items.length === 0) return this.requireAlive(entity, operation);
        this.entityCall(this.listOf(items, operation, entity, false), entity, operation, (x, fault, entities) =>
            this.heap.exports.tes_add_items(world, entities, 1, x, fault),
        );
    }

    /**
     * Removes components (or tags) and pairs. Removing one the entity does not have does
     * nothing. A bare relation removes every pair of the entity (as a source) of it:
     * `world.remove(e, Likes)`; a pair removes that pair: `world.remove(e, Likes(bob))`.
     */
    remove(entity: Entity, ...components: (Component<any> | Relation<any> | Pair<any>)[]): void {
        const operation = 'world.remove';
        const world = this.live(operation);
        const only = components.length === 1 ? components[0] : undefined;
        const id = typeof only === 'function' ? this.registry.known(only, operation) : undefined;
        if (id !== undefined) {
            this.check(this.heap.exports.tes_remove(world, handle(entity, operation), id), operation, entity, (only as Definition).name);
            return;
        }
        handle(entity, operation);
        const list = this.listOf(components, operation, entity, true);
        // A component this world never registered is on no entity: nothing to remove (and
        // nothing to register). What remains goes in one call.
        const kept = new ItemList();
        for (let i = 0; i < list.size; i++) {
            const definition = list.definitions[i]!;
            if (this.registry.known(definition, operation) !== undefined)
                kept.add(definition, list.targets[i]!, undefined, operation, entity);
        }
        if (kept.size === 0) return this.requireAlive(entity, operation);
        this.entityCall(kept, entity, operation, (x, fault, entities) => this.heap.exports.tes_remove_items(world, entities, 1, x, fault));
    }

    /**
     * True when the entity has the component. For a relation: when the entity is the source
     * of at least one of its pairs (`world.has(e, ChildOf)`), or of one pair
     * (`world.has(e, ChildOf(parent))`). Throws `STALE_ENTITY` for a dead entity.
     */
    has(entity: Entity, component: Component<any> | Relation<any> | Pair<any>): boolean {
        const operation = 'world.has';
        this.live(operation);
        const pair = pairOf(component);
        if (pair !== undefined) return this.pairHas(entity, pair.relation, pair.target, operation);
        const id = this.registry.known(component as Definition, operation);
        if (id !== undefined) return this.hasId(entity, id, component as Definition, operation);
        this.requireAlive(entity, operation); // no entity of this world has it
        return false;
    }

    /** All fields of an entity's component, copied into a fresh object. */
    get<S extends Schema>(entity: Entity, component: Component<S>): Values<S>;
    /** One field of an entity's component: a number, or a fresh array for array fields. */
    get<S extends Schema, K extends FieldName<S>>(entity: Entity, component: Component<S>, field: K): FieldValue<S[K]>;
    get(entity: Entity, component: Component<any>, field?: string): unknown {
        // One call into wasm (access.ts); the checked path for the rest and for errors.
        if (field !== undefined) {
            const value = this.fieldSet(component)?.named(field)?.read(entity);
            if (value !== undefined) return value;
        }
        return this.getChecked(entity, component, field, 'world.get');
    }

    /**
     * A field of a component, made once and then read and written per entity by handle in hot
     * code: `const hp = world.field(Health, 'value'); hp.set(e, hp.get(e) - damage)`. Its get
     * and set are `world.get(e, Health, 'value')` and `world.set(e, Health, 'value', v)`,
     * errors included, without naming the field on every call. Valid as long as the world.
     */
    field<S extends Schema, K extends FieldName<S>>(component: Component<S>, name: K): Field<FieldValue<S[K]>> {
        const operation = 'world.field';
        this.live(operation);
        if (isRelation(component)) throw this.needsTarget(operation, 0, component);
        fieldOf(component, name, operation);
        return this.fieldSet(component)!.named(name)! as Field<FieldValue<S[K]>>;
    }

    /** A component's Field objects; undefined for what is not a component (the checked path says why). */
    private fieldSet(component: unknown): FieldSet | undefined {
        const key = typeof component === 'function' ? (component as Definition).key : undefined;
        if (key === undefined) return undefined;
        const known = this.fieldSets[key];
        if (known !== undefined && known.component === component) return known;
        if (!isDefinition(component) || isRelation(component)) return undefined;
        const list = fieldsOf(component).map((meta) => new Field<any>(this, component as Component<any>, meta));
        const made = new FieldSet(component as Component<any>, list);
        this.fieldSets[key] = made;
        return made;
    }

    /** @internal The checked path of world.get (and of Field.get): every error, in full. */
    getChecked(entity: Entity, component: Component<any>, field: string | undefined, operation: string): unknown {
        this.live(operation);
        const id = this.componentId(entity, component, field, operation);
        if (field !== undefined) {
            const meta = fieldOf(component, field, operation, entity);
            return this.readField(this.fieldPointer(entity, component, id, meta, operation), meta);
        }
        if (component.isTag) {
            this.requireAlive(entity, operation);
            throw new TesseraError('TAG_HAS_NO_DATA', operation, `${component.name} is a tag`, {
                entity,
                component: component.name,
            });
        }
        const values: Record<string, unknown> = {};
        for (const meta of fieldsOf(component)) {
            values[meta.name] = this.readField(this.fieldPointer(entity, component, id, meta, operation), meta);
        }
        return values;
    }

    /**
     * Writes some fields of an entity's component and marks it changed. Every value is checked
     * first (integers must be integral and in range): a bad one throws `BAD_VALUE` and nothing
     * is written. Fields left out, or given as undefined, keep their value.
     */
    set<S extends Schema>(entity: Entity, component: Component<S>, values: ValuesInput<S>): void;
    /** Writes one field of an entity's component and marks it changed. */
    set<S extends Schema, K extends FieldName<S>>(entity: Entity, component: Component<S>, field: K, value: FieldInput<S[K]>): void;
    set(entity: Entity, component: Component<any>, fieldOrValues: unknown, value?: unknown): void {
        // One call into wasm (access.ts); the checked path for the rest and for errors.
        if (typeof fieldOrValues === 'string' && this.fieldSet(component)?.named(fieldOrValues)?.write(entity, value)) return;
        this.setChecked(entity, component, fieldOrValues, value, 'world.set');
    }

    /** @internal The checked path of world.set (and of Field.set): every error, in full. */
    setChecked(entity: Entity, component: Component<any>, fieldOrValues: unknown, value: unknown, operation: string): void {
        const world = this.live(operation);
        if (typeof fieldOrValues === 'string') {
            const meta = fieldOf(component, fieldOrValues, operation, entity);
            if (meta.length === 1) {
                // The hot path: one number, one call (the C core checks what the field can hold).
                if (typeof value !== 'number') {
                    throw new TesseraError('BAD_VALUE', operation, `expected a number, got ${describeValue(value)}`, {
                        entity,
                        component: component.name,
                        field: meta.name,
                    });
                }
                const id = this.componentId(entity, component, meta.name, operation);
                const result = this.heap.exports.tes_set_number(world, handle(entity, operation), id, meta.index, 0, value);
                if (result !== 0) throw this.valueError(result, operation, entity, component, meta, value);
                return;
            }
            const list = this.list.clear();
            list.add(component, 0, undefined, operation, entity);
            list.addValue(0, meta, value, operation, entity);
            return this.setList(list, entity, component, operation);
        }
        const list = this.list.clear();
        list.add(component, 0, fieldOrValues, operation, entity);
        this.setList(list, entity, component, operation);
    }

    /**
     * Marks an entity's component changed, after writing it through a view outside an
     * iteration. Deduplicated: marking twice between two runs of a consumer costs one entry.
     */
    markChanged(entity: Entity, component: Component<any>): void {
        const operation = 'world.markChanged';
        this.live(operation);
        const id = this.componentId(entity, component, undefined, operation);
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
        const world = this.live(operation);
        handle(source, operation);
        const list = this.list.clear();
        list.add(relation, handle(target, operation), values, operation, source);
        this.entityCall(list, source, operation, (x, fault, entities) => this.heap.exports.tes_add_items(world, entities, 1, x, fault));
    }

    /** Removes the pair; nothing happens when it is not there. */
    removePair(source: Entity, relation: Relation<any>, target: Entity): void {
        const operation = 'world.removePair';
        const id = this.readRelation(relation, operation, source, target);
        if (id === undefined) return;
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
    getPair<S extends Schema, K extends FieldName<S>>(source: Entity, relation: Relation<S>, target: Entity, field: K): FieldValue<S[K]>;
    getPair(source: Entity, relation: Relation<any>, target: Entity, field?: string): unknown {
        const operation = 'world.getPair';
        handle(source, operation);
        handle(target, operation);
        if (field !== undefined) fieldOf(relation, field, operation, source);
        const id = this.readRelation(relation, operation, source, target);
        if (id === undefined) throw this.pairError('MISSING_COMPONENT', operation, source, relation, target);
        if (field !== undefined)
            return this.readPairField(source, relation, id, target, fieldOf(relation, field, operation, source), operation);
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
        const world = this.live(operation);
        handle(source, operation);
        handle(target, operation);
        const list = this.list.clear();
        if (typeof fieldOrValues === 'string') {
            list.add(relation, target, undefined, operation, source);
            list.addValue(0, fieldOf(relation, fieldOrValues, operation, source), value, operation, source);
        } else {
            list.add(relation, target, fieldOrValues, operation, source);
        }
        if (list.valueCount === 0) {
            // Nothing to write still checks the handles and the pair.
            if (!this.pairHas(source, relation, target, operation))
                throw this.pairError('MISSING_COMPONENT', operation, source, relation, target);
            return;
        }
        this.entityCall(list, source, operation, (x, fault, entities) => this.heap.exports.tes_set_items(world, entities, 1, x, fault));
    }

    /** The targets of a source's pairs of a relation, in the order the pairs were added. */
    targets(source: Entity, relation: Relation<any>): Entity[] {
        const operation = 'world.targets';
        const world = this.live(operation);
        handle(source, operation);
        const id = this.readRelation(relation, operation, source);
        if (id === undefined) return [];
        const exports = this.heap.exports;
        return this.fetchList(
            operation,
            1,
            (out, capacity, count) => exports.tes_pair_targets(world, source, id, out, capacity, count),
            source,
            relation,
        )[0]!;
    }

    /**
     * The source's first target of a relation, or undefined when it has none: the one target of
     * an exclusive relation (`world.target(e, ChildOf)` is e's parent).
     */
    target(source: Entity, relation: Relation<any>): Entity | undefined {
        const operation = 'world.target';
        handle(source, operation);
        const id = this.readRelation(relation, operation, source);
        if (id === undefined) return undefined;
        const heap = this.heap;
        const out = heap.scratch;
        this.check(
            heap.exports.tes_pair_target(this.live(operation), handle(source, operation), id, out),
            operation,
            source,
            relation.name,
        );
        const target = heap.u32At(out);
        return target === 0 ? undefined : target;
    }

    /**
     * The sources of the pairs of a relation to a target, in their order: the order their
     * pairs were added in, or as {@link World.placePair} / {@link World.setParent} set it.
     */
    sources(relation: Relation<any>, target: Entity): Entity[] {
        const operation = 'world.sources';
        const world = this.live(operation);
        handle(target, operation);
        const id = this.readRelation(relation, operation, target);
        if (id === undefined) return [];
        const exports = this.heap.exports;
        return this.fetchList(
            operation,
            1,
            (out, capacity, count) => exports.tes_pair_sources(world, id, target, out, capacity, count),
            target,
            relation,
        )[0]!;
    }

    /** Every pair of a relation as `[source, target]`, source by source (sources in no promised order). */
    pairs(relation: Relation<any>): Array<[Entity, Entity]> {
        const operation = 'world.pairs';
        const world = this.live(operation);
        const id = this.readRelation(relation, operation);
        if (id === undefined) return [];
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
        handle(source, operation);
        handle(target, operation);
        if (before !== undefined) handle(before, operation);
        const id = this.readRelation(relation, operation, source, target, ...(before === undefined ? [] : [before]));
        if (id === undefined) throw this.pairError('MISSING_COMPONENT', operation, source, relation, target);
        const result = this.heap.exports.tes_pair_place(this.live(operation), source, id, target, before ?? 0);
        if (
            before !== undefined &&
            result !== 0 &&
            this.isAlive(source) &&
            this.isAlive(target) &&
            this.pairHas(source, relation, target, operation)
        ) {
            // The pair is there: the problem is `before` (stale, or not a source of target).
            throw this.pairError(result, operation, before, relation, target);
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
        const world = this.live(operation);
        handle(child, operation);
        const exports = this.heap.exports;
        if (parent === undefined || parent === 0) {
            if (before !== undefined) {
                throw new TesseraError('INVALID_ARGUMENT', operation, '`before` needs a parent', {
                    entity: child,
                    component: ChildOf.name,
                });
            }
            const known = this.readRelation(ChildOf, operation, child);
            // Removing a relation applies at once even inside a loop (as pair calls do), so a
            // later setParent in the same loop keeps the last word.
            if (known !== undefined) this.check(exports.tes_remove(world, child, known), operation, child, ChildOf.name);
            return;
        }
        const fresh: number[] = [];
        const ids: number[] = [];
        this.registry.resolve([ChildOf], 1, operation, fresh, ids);
        const id = ids[0]!;
        try {
            this.placeChild(child, id, parent, before, operation);
        } catch (error) {
            this.registry.takeBack(fresh);
            throw error;
        }
    }

    /** setParent with a parent: checks `before`, adds the pair, places it. */
    private placeChild(child: Entity, id: number, parent: Entity, before: Entity | undefined, operation: string): void {
        const world = this.live(operation);
        const exports = this.heap.exports;
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
     * With `added` / `changed` filters it visits only what changed since its last run (its
     * first run: what exists as added, and the changes made since it was made). List
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
     *
     * It starts when it is made: its first drain reports every entity that matches then as
     * added, and nothing that happened before (no earlier change, removal or pair event, even
     * one another subscription still holds).
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
     * One frame: first ends every iteration still live (an abandoned `chunks()` iterator, or
     * the loop this is called from), as `break` would; then runs every stage's due systems in
     * order (each system's deferred structural changes are applied when it returns), then
     * prunes change history every consumer has seen. When a system throws, the tick stops
     * there and the error propagates: later systems do not run, nothing is pruned and the
     * frame does not advance. Refused from inside a system.
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
        return this.registry.definition(id);
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
        const problem = number >= 0 ? heap.problem(number) : `unknown result ${String(result)}`;
        return new TesseraError(heap.codes[number] ?? 'CORRUPT', operation, problem, { entity, component, field });
    }

    /** @internal The C id of a component in this world, registering it on first use. */
    idOf(component: Definition, operation: string): number {
        this.live(operation);
        return this.registry.idOf(component, operation);
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

    // ---- item calls ------------------------------------------------------------------------

    /**
     * The world's item list, filled from spawn/add/remove arguments: each a component, a
     * component with values (`C(values)`), or a pair (`R(target, values?)`); for removals also
     * a bare relation; with `count` (spawnMany), also a component with values per entity
     * (`C.columns(...)`). Every value is read once (see items.ts). Anything else is refused here.
     */
    private listOf(items: readonly unknown[], operation: string, entity: Entity | undefined, removing: boolean, count?: number): ItemList {
        const list = this.list.clear();
        for (const item of items) {
            if (typeof item === 'function') {
                if (!isDefinition(item)) throw new TesseraError('INVALID_ARGUMENT', operation, describeDefinition(item));
                list.add(item, 0, undefined, operation, entity);
                continue;
            }
            if (typeof item === 'object' && item !== null) {
                const component: unknown = (item as { component?: unknown }).component;
                if (typeof component === 'function' && !removing) {
                    if (!isDefinition(component)) throw new TesseraError('INVALID_ARGUMENT', operation, describeDefinition(component));
                    const columns: unknown = (item as { columns?: unknown }).columns;
                    if (columns === undefined) {
                        list.add(component, 0, (item as { values?: unknown }).values, operation, entity);
                    } else if (count === undefined) {
                        throw new TesseraError(
                            'INVALID_ARGUMENT',
                            operation,
                            `${component.name}.columns(...) gives values per entity: only world.spawnMany takes it`,
                            {
                                entity,
                                component: component.name,
                            },
                        );
                    } else {
                        list.addColumns(component, columns, count, operation);
                    }
                    continue;
                }
                const relation: unknown = (item as { relation?: unknown }).relation;
                if (typeof relation === 'function') {
                    // A target on what is not a relation is the C core's NOT_A_RELATION, in item order.
                    if (!isDefinition(relation)) throw new TesseraError('INVALID_ARGUMENT', operation, describeDefinition(relation));
                    const target: unknown = (item as { target?: unknown }).target;
                    if (typeof target !== 'number' || target >>> 0 !== target) {
                        throw new TesseraError(
                            'INVALID_ARGUMENT',
                            operation,
                            `expected a pair's target entity, got ${describeValue(target)}`,
                            {
                                entity,
                                component: relation.name,
                            },
                        );
                    }
                    list.add(relation, target, removing ? undefined : (item as { values?: unknown }).values, operation, entity);
                    continue;
                }
            }
            const expected = removing
                ? 'a component, a relation or Relation(target)'
                : 'a component, Component(values) or Relation(target)';
            throw new TesseraError('INVALID_ARGUMENT', operation, `expected ${expected}, got ${describeValue(item)}`, { entity });
        }
        return list;
    }

    /**
     * Makes an item call: resolves the list's ids (registering first uses), writes the list with
     * room for `entityRoom` entities, calls `call`; when it fails, takes the registrations back
     * and throws the error the C core's fault describes.
     */
    private callItems(
        list: ItemList,
        entityRoom: number,
        operation: string,
        subject: Entity | undefined,
        call: (items: Pointer, fault: Pointer, entities: Pointer) => number,
        prepare?: (written: WrittenList) => void,
    ): WrittenList {
        const fresh = this.fresh;
        if (fresh.length !== 0) fresh.length = 0;
        try {
            this.registry.resolve(list.definitions, list.size, operation, fresh, list.ids);
            const written = list.write(this.heap, entityRoom, operation);
            prepare?.(written);
            const result = call(written.items, written.fault, written.entities);
            if (result !== 0) throw list.error(this.heap, result, written.fault, operation, subject);
            return written;
        } catch (error) {
            this.registry.takeBack(fresh);
            throw error;
        }
    }

    /** An item call for one entity (add, set, remove). */
    private entityCall(
        list: ItemList,
        entity: Entity,
        operation: string,
        call: (items: Pointer, fault: Pointer, entities: Pointer) => number,
    ): void {
        this.callItems(list, 1, operation, entity, call, (written) => {
            this.heap.u32[written.entities >>> 2] = entity;
        });
    }

    /** set with values: all written as a change, or none. */
    private setList(list: ItemList, entity: Entity, component: Component<any>, operation: string): void {
        const world = this.live(operation);
        if (isRelation(component)) throw this.needsTarget(operation, entity, component);
        if (this.registry.known(component, operation) === undefined) {
            this.requireAlive(entity, operation);
            throw this.error('MISSING_COMPONENT', operation, entity, component.name);
        }
        // Nothing to write still checks the handle.
        if (list.valueCount === 0) return this.requireAlive(entity, operation);
        this.entityCall(list, entity, operation, (x, fault, entities) => this.heap.exports.tes_set_items(world, entities, 1, x, fault));
    }

    /**
     * The id of a component a per-entity read or write names: a relation needs a target
     * (`NEEDS_TARGET`), and one this world never registered is on no entity
     * (`MISSING_COMPONENT`, once the handle is found alive).
     */
    private componentId(entity: Entity, component: Component<any>, field: string | undefined, operation: string): number {
        const id = this.registry.known(component, operation);
        if (id !== undefined && !isRelation(component)) return id;
        if (isRelation(component)) throw this.needsTarget(operation, entity, component);
        if (field !== undefined) fieldOf(component, field, operation, entity);
        this.requireAlive(entity, operation);
        throw this.error('MISSING_COMPONENT', operation, entity, component.name, field);
    }

    private needsTarget(operation: string, entity: Entity, relation: Definition): TesseraError {
        return new TesseraError(
            'NEEDS_TARGET',
            operation,
            `${relation.name} is a relation: its data is per pair (getPair / setPair with a target)`,
            { entity, component: relation.name },
        );
    }

    /** The TesseraError of a failed tes_set_number: a BAD_VALUE names the value and the type. */
    private valueError(
        result: number,
        operation: string,
        entity: Entity,
        component: Definition,
        meta: FieldMeta,
        value: number,
    ): TesseraError {
        if (result === this.heap.results.BAD_VALUE) {
            return new TesseraError('BAD_VALUE', operation, `${value} cannot be stored in ${meta.type} without loss`, {
                entity,
                component: component.name,
                field: meta.name,
            });
        }
        return this.error(result, operation, entity, component.name, meta.name);
    }

    /** @internal query.addAll / removeAll: the item for every entity the query matches. */
    queryItems(operation: string, query: Pointer, item: unknown, add: boolean): void {
        const world = this.live(operation);
        const exports = this.heap.exports;
        const call = add ? exports.tes_query_add_items : exports.tes_query_remove_items;
        this.callItems(this.listOf([item], operation, undefined, !add), 0, operation, undefined, (x, fault) =>
            call(world, query, x, fault),
        );
    }

    /**
     * The id of a relation for a call that reads or removes pairs; undefined when this world
     * never registered it (no entity has a pair of it), once the handles are found alive.
     */
    private readRelation(relation: Relation<any>, operation: string, ...entities: Entity[]): number | undefined {
        const id = this.registry.known(relation, operation);
        if (id !== undefined) return id;
        if (!isRelation(relation)) throw this.error('NOT_A_RELATION', operation, undefined, (relation as Definition).name);
        for (const entity of entities) this.requireAlive(entity, operation);
        return undefined;
    }

    /** Throws `STALE_ENTITY` unless the handle names a live or pending entity. */
    private requireAlive(entity: Entity, operation: string): void {
        if (!this.isAlive(handle(entity, operation))) {
            throw this.error('STALE_ENTITY', operation, entity);
        }
    }

    /** True when the handle names an entity spawned inside an iteration, not placed yet. */
    private pending(entity: Entity): boolean {
        const result = this.heap.exports.tes_location(this.pointer, entity, this.heap.scratch);
        return result === this.heap.results.PENDING_ENTITY;
    }

    private hasId(entity: Entity, id: number, component: Definition, operation: string): boolean {
        const heap = this.heap;
        const out = heap.scratch;
        this.check(heap.exports.tes_has(this.live(operation), handle(entity, operation), id, out), operation, entity, component.name);
        return heap.u8[out] !== 0;
    }

    private fieldPointer(entity: Entity, component: Component<any>, id: number, meta: FieldMeta, operation: string): Pointer {
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
        const message = number >= 0 ? heap.problem(number) : `unknown result ${String(result)}`;
        const context = { entity: source, component: relation.name, field };
        switch (code) {
            case 'STALE_ENTITY':
            case 'PENDING_ENTITY': {
                const sourceIsIt = code === 'STALE_ENTITY' ? !this.isAlive(source) : this.pending(source);
                const entity = sourceIsIt ? source : target;
                return new TesseraError(code, operation, `${sourceIsIt ? 'source' : 'target'}: ${message}`, { ...context, entity });
            }
            case 'MISSING_COMPONENT':
                return new TesseraError(
                    code,
                    operation,
                    `no pair (${describeEntity(source)}, ${relation.name}, ${describeEntity(target)})`,
                    context,
                );
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

    private readPairField(
        source: Entity,
        relation: Relation<any>,
        id: number,
        target: Entity,
        meta: FieldMeta,
        operation: string,
    ): number | number[] {
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

/** The pair an item names, if it is one (`R(target)`), else undefined. */
function pairOf(item: unknown): Pair<any> | undefined {
    return typeof item === 'object' && item !== null && typeof (item as Pair<any>).relation === 'function'
        ? (item as Pair<any>)
        : undefined;
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

/** The options a world knows (createWorld's `wasm` is the module's, passed along whole). */
const WORLD_OPTIONS = ['chunkBytes', 'minFreeIndices', 'debug', 'snapshot', 'wasm'] as const;

/** A misspelt option must not pass silently: every key must be one the world knows. */
function checkWorldOptions(options: unknown, operation: string): void {
    checkKeys(operation, 'world options', options, WORLD_OPTIONS);
    const debug = (options as WorldOptions).debug;
    if (debug !== undefined && typeof debug !== 'boolean') {
        throw new TesseraError('INVALID_ARGUMENT', operation, `debug must be true or false, got ${describeValue(debug)}`);
    }
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
        throw new TesseraError('INVALID_ARGUMENT', operation, `${name} must be a non-negative integer, got ${describeValue(value)}`);
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
