/**
 * `World`: entities and their components, queries, subscriptions, systems. One world is one
 * `tes_world_t` of the C core; every method is a thin, validated call into wasm.
 *
 * @module
 */
import { TesseraError, type ErrorCode } from './errors.js';
import { Heap } from './heap.js';
import { TES_MAX_COMPONENTS, type Pointer, type TesseraExports } from './load.js';
import { Query, type QueryDesc } from './query.js';
import {
    arrayTypes,
    fieldOf,
    fieldsOf,
    isComponent,
    splitItem,
    typeCode,
    valueProblem,
    describeValue,
    type Component,
    type ComponentItem,
    type FieldMeta,
    type FieldName,
    type FieldValue,
    type Schema,
    type Values,
    type ValuesInput,
    type FieldInput,
} from './schema.js';
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

const worldsToFree = new FinalizationRegistry<{ exports: TesseraExports; pointer: Pointer }>(
    ({ exports, pointer }) => exports.tes_world_destroy(pointer),
);

/** Where an iteration block (`tes_iter_t`, 56 bytes) comes from and goes back to. */
const ITER_BYTES = 56;

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
     * @internal Byte offset of a column from its chunk's start, by archetype, component and
     * field: the same in every chunk of an archetype, and archetypes never change layout.
     */
    readonly columnOffsets = new Map<number, number>();
    /** @internal Live iterations started from JS. */
    liveIterations = 0;
    /**
     * @internal Adds with values to placed entities deferred by the live iterations, as
     * `entity * TES_MAX_COMPONENTS + id`: a `set` of such a component in the same loop joins
     * the add's initial values (tes_init) instead of failing with MISSING_COMPONENT. Cleared
     * when the last iteration ends.
     */
    readonly deferredAdds = new Set<number>();

    /** C component id by component key (the definition's process-wide number). */
    private readonly ids: number[] = [];
    /** Components by C id. */
    private readonly components: Component<any>[] = [];
    private readonly freeIterBlocks: Pointer[] = [];
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
        this.check(heap.exports.tes_world_create(desc, out), operation);
        this.pointer = heap.u32At(out);
        worldsToFree.register(this, { exports: heap.exports, pointer: this.pointer }, this);
        this.scheduler = new Scheduler(this);
    }

    /** True after {@link World.destroy}. */
    get destroyed(): boolean {
        return this.pointer === 0;
    }

    /**
     * Frees the world and everything in it. Its queries, subscriptions and systems die with
     * it; any later use of them or of the world throws `DESTROYED`. Calling it again does
     * nothing. Not while an iteration of the world is live.
     */
    destroy(): void {
        if (this.pointer === 0) return;
        if (this.liveIterations > 0) {
            throw new TesseraError(
                'QUERY_IN_USE',
                'world.destroy',
                'an iteration of this world is still live: end the loop first',
            );
        }
        worldsToFree.unregister(this);
        this.heap.exports.tes_world_destroy(this.pointer);
        this.pointer = 0;
        for (const block of this.freeIterBlocks) this.heap.exports.tes_free(block);
        this.freeIterBlocks.length = 0;
    }

    // ---- entities ------------------------------------------------------------------------

    /**
     * Spawns an entity with the given components, each a component, a tag, or a component
     * called with initial values (`Position({ x: 1 })`). Fields without a value start at 0.
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
        this.check(heap.exports.tes_spawn(this.live(operation), list, set.ids.length, out), operation);
        const entity = heap.u32At(out);
        set.values.forEach((values, i) => values && this.writeInitial(entity, set.components[i]!, values, operation));
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
     * Adds components (or tags), each optionally with initial values. Adding a component the
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
        if (items.length === 0) this.requireAlive(entity, operation);
        else handle(entity, operation);
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
    }

    /** Removes components (or tags). Removing one the entity does not have does nothing. */
    remove(entity: Entity, ...components: Component<any>[]): void {
        const operation = 'world.remove';
        const world = this.live(operation);
        if (components.length === 0) this.requireAlive(entity, operation);
        else handle(entity, operation);
        const ids = components.length === 1 ? [this.idOf(components[0]!, operation)] : components.map((c) => this.idOf(c, operation));
        for (let i = 0; i < ids.length; i++) {
            this.check(this.heap.exports.tes_remove(world, entity, ids[i]!), operation, entity, components[i]!.name);
        }
    }

    /** True when the entity has the component. Throws `STALE_ENTITY` for a dead entity. */
    has(entity: Entity, component: Component<any>): boolean {
        const operation = 'world.has';
        const id = this.knownId(component, operation);
        if (id !== undefined) return this.hasId(entity, id, component, operation);
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

    /** The component registered under a C id in this world, if any. */
    componentById(id: number): Component<any> | undefined {
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
    private knownId(component: Component<any>, operation: string): number | undefined {
        this.live(operation);
        if (!isComponent(component)) return this.register(component, operation); // throws
        return this.ids[component.key];
    }

    /** @internal The C id of a component in this world, registering it on first use. */
    idOf(component: Component<any>, operation: string): number {
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

    /** @internal A 56-byte `tes_iter_t` block. */
    takeIterBlock(operation: string): Pointer {
        return this.freeIterBlocks.pop() ?? this.heap.malloc(ITER_BYTES, operation);
    }

    /** @internal */
    returnIterBlock(block: Pointer): void {
        if (this.pointer === 0) this.heap.exports.tes_free(block);
        else this.freeIterBlocks.push(block);
    }

    private register(component: Component<any>, operation: string): number {
        const world = this.live(operation);
        if (!isComponent(component)) {
            throw new TesseraError(
                'INVALID_ARGUMENT',
                operation,
                `expected a component made by component() or tag(), got ${describeValue(component)}`,
            );
        }
        const heap = this.heap;
        const fields = fieldsOf(component);
        const strings: Pointer[] = [];
        try {
            strings.push(heap.newString(component.name, operation));
            for (const meta of fields) strings.push(heap.newString(meta.name, operation));
            // tes_component_desc_t {name, fields, field_count} then tes_field_desc_t
            // {name, type, length} per field: 12 bytes each.
            const desc = heap.tempBlock(12 + 12 * fields.length, operation);
            const u32 = heap.u32;
            const base = desc >>> 2;
            u32[base] = strings[0]!;
            u32[base + 1] = fields.length ? desc + 12 : 0;
            u32[base + 2] = fields.length;
            fields.forEach((meta, i) => {
                u32[base + 3 + i * 3] = strings[i + 1]!;
                u32[base + 4 + i * 3] = typeCode(meta.type);
                u32[base + 5 + i * 3] = meta.length;
            });
            const out = heap.scratch;
            const result = heap.exports.tes_component_register(world, desc, out);
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

    /** Resolves spawn/add items, rejecting duplicates and checking initial values up front. */
    private componentSet(items: readonly ComponentItem[], operation: string): ComponentSet {
        const ids: number[] = [];
        const components: Component<any>[] = [];
        const values: (ValuesInput<any> | undefined)[] = [];
        for (const item of items) {
            // Components and Component(values) first, without a tuple per item (idOf checks
            // that the component is one); splitItem explains anything else.
            let component: Component<any>;
            let initial: ValuesInput<any> | undefined;
            if (typeof item === 'function') component = item;
            else if (typeof item === 'object' && item !== null && typeof item.component === 'function') {
                component = item.component;
                initial = item.values;
            } else [component, initial] = splitItem(item, operation);
            const id = this.idOf(component, operation);
            if (ids.includes(id)) {
                throw new TesseraError('INVALID_ARGUMENT', operation, 'a component is listed twice', {
                    component: component.name,
                });
            }
            if (initial !== undefined) this.checkValues(component, initial, operation);
            ids.push(id);
            components.push(component);
            values.push(initial);
        }
        return { ids, components, values };
    }

    /** Throws `UNKNOWN_FIELD` / `BAD_VALUE` for the first field value that cannot be stored. */
    private checkValues(
        component: Component<any>,
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
    private checkValue(component: Component<any>, meta: FieldMeta, value: unknown, operation: string, entity?: Entity): void {
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

    private hasId(entity: Entity, id: number, component: Component<any>, operation: string): boolean {
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

    /** Initial values of a batch: the new rows are contiguous, so fill column ranges. */
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
                if (values === undefined) continue;
                const component = set.components[i]!;
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

/** Spawn/add items resolved: C ids, components and initial values, side by side. */
interface ComponentSet {
    readonly ids: number[];
    readonly components: Component<any>[];
    readonly values: (ValuesInput<any> | undefined)[];
}


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


