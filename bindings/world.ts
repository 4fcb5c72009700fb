/**
 * `World`: the facade of the API. Every public method is here with its documentation, but those
 * that take the world as a whole (bytes, checkpoints, replication, upkeep), which it inherits
 * from `WorldState` (world-state.ts); each delegates to the module of its concept (entities,
 * values, relations, hierarchy, item calls, queries, systems), as koota's world does. The per-entity hot calls (`get` / `set`
 * of one field, `has`, `isAlive`, `spawn`, `despawn`, `add`, `remove`) keep their bodies here,
 * so that they cost no frame more than the crossing needs.
 *
 * @module
 */
import { Field, WorldFields } from './access.js';
import { ChildOf, fieldOf, isRelation } from './definitions.js';
import { addItems, checkCount, despawnMany, handle, hasComponent, isPending, removeItems, requireAlive, SpawnPlan } from './entities.js';
import { TesseraError, type ErrorCode } from './errors.js';
import { Heap } from './heap.js';
import { walk, walkList, setParent } from './hierarchy.js';
import { ItemCalls } from './item-calls.js';
import type { Pointer } from './load.js';
import { LIMITS, WORLD } from './abi.js';
import { forgetWorld, watchWorld, WorldLink } from './lifetime.js';
import { Query, type QueryDesc } from './query.js';
import { Recorder } from './record.js';
import type { ChunkIterator } from './chunk-iterator.js';
import { Registry } from './registry.js';
import * as relations from './relations.js';
import type {
    Component,
    ComponentColumns,
    ComponentItem,
    Definition,
    FieldInput,
    FieldName,
    FieldValue,
    Pair,
    Relation,
    Schema,
    Values,
    ValuesInput,
} from './schema.js';
import { type CheckpointRange, checkpoints } from './rollback.js';
import { Subscription, type SubscriptionDesc } from './subscription.js';
import { Scheduler, type Stage, type System, type SystemDesc } from './system.js';
import { getChecked, markChanged, needsTarget, setChecked } from './values.js';
import { checkWorldOptions, createCWorld, type WorldOptions } from './world-options.js';
import { WorldState } from './world-state.js';

export type { WorldOptions } from './world-options.js';
export type { WorldStats } from './world-stats.js';

/**
 * An entity handle: a plain number below 2^30 (21-bit index, 9-bit generation). 0 is never an
 * entity. A handle whose entity was despawned is stale: every call that takes it throws
 * `STALE_ENTITY` and touches nothing.
 */
export type Entity = number;

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
export class World extends WorldState {
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
     * field: the same in every chunk of an archetype, and archetypes never change layout. Kept
     * while the access epoch is `columnOffsetsEpoch` (an archetype id can come back after a
     * rewind, naming another set).
     */
    readonly columnOffsets = new Map<number, number>();
    /** @internal The access epoch `columnOffsets` holds for. */
    columnOffsetsEpoch = -1;
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
    /** @internal Each component's Field objects (access.ts). */
    readonly fields: WorldFields;
    /** @internal Spawn, add, set and remove calls of several items (item-calls.ts). */
    readonly items: ItemCalls;
    /** @internal Appends spawns, despawns, adds and removes inside runs to the core's command list (record.ts). */
    readonly recorder: Recorder;
    /** The latest spawn's shape, resolved to its archetype and fields (entities.ts). */
    private readonly spawnPlan = new SpawnPlan();
    private readonly scheduler: Scheduler;

    /** @internal Use `createWorld()`. */
    constructor(heap: Heap, options: WorldOptions = {}) {
        // The published types hide this constructor's parameters (they are internal).
        if (!(heap instanceof Heap)) {
            throw new TesseraError('INVALID_ARGUMENT', 'new World', 'make worlds with createWorld() or module.createWorld()');
        }
        super();
        this.heap = heap;
        const operation = 'createWorld';
        checkWorldOptions(options, operation);
        this.debug = options.debug === true;
        this.pointer = 0;
        this.registry = new Registry(heap, () => this.live('world'), options.snapshot !== undefined);
        this.pointer = createCWorld(heap, options, operation);
        this.link = new WorldLink(heap, this.pointer);
        watchWorld(this, this.link);
        this.fields = new WorldFields(this);
        this.recorder = new Recorder(heap, this.pointer);
        this.items = new ItemCalls(this);
        this.scheduler = new Scheduler(this);
    }

    /** The checkpoints kept (`{ oldest, newest }`), or null when none is. */
    get checkpoints(): CheckpointRange | null {
        return checkpoints(this);
    }

    /**
     * The source tick of the last delta applied here: 0 for none, or after an apply that ran out
     * of memory partway (a refused delta changes nothing, this tick included).
     */
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
        this.fields.forget();
        this.spawnPlan.release(this.heap);
        this.link.destroy();
        this.pointer = 0;
    }

    // ---- entities (entities.ts) -----------------------------------------------------------

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
        const heap = this.heap;
        // The same shape as the latest spawn: one call, no list building (entities.ts).
        const planned = this.spawnPlan.spawn(this, items, operation);
        if (typeof planned === 'number') return planned;
        const list = planned ?? this.items.listOf(items, operation, undefined, false);
        const written = this.items.call(list, 1, operation, undefined, (x, fault, entities) =>
            heap.exports.tes_spawn_items(world, x, 1, entities, fault),
        );
        const entity = heap.u32At(written.entities);
        this.spawnPlan.learn(this, items, list);
        return entity;
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
        if (count > LIMITS.max_entities) {
            throw new TesseraError(
                'TOO_MANY_ENTITIES',
                operation,
                `count ${count} is more than a world can hold (at most ${LIMITS.max_entities} − minFreeIndices live entities)`,
            );
        }
        const list = this.items.listOf(items, operation, undefined, false, count);
        const written = this.items.call(list, count, operation, undefined, (x, fault, entities) =>
            this.heap.exports.tes_spawn_items(world, x, count, entities, fault),
        );
        return this.heap.u32.slice(written.entities >>> 2, (written.entities >>> 2) + count);
    }

    /** Despawns an entity: its components are removed and its handle becomes stale. */
    despawn(entity: Entity): void {
        const operation = 'world.despawn';
        const world = this.live(operation);
        if (this.recorder.despawn(handle(entity, operation))) return;
        this.check(this.heap.exports.tes_despawn(world, entity), operation, entity);
    }

    /** Despawns every entity of the list, or none of them when one is stale or listed twice. */
    despawnMany(entities: ArrayLike<Entity>): void {
        despawnMany(this, entities);
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
        return this.heap.exports.tes_is_alive(world, entity) !== 0 || isPending(this, entity);
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
        if (id === undefined) return addItems(this, entity, items);
        // One registered component or tag without values, the common case: recorded in place
        // inside a run (record.ts), else one call (tes_add checks the handle).
        if (this.recorder.add(handle(entity, operation), id)) return;
        const result = this.heap.exports.tes_add(world, entity, id);
        if (result !== 0) throw this.error(result, operation, entity, (only as Definition).name);
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
            if (this.recorder.remove(handle(entity, operation), id)) return;
            // The name only for an error: reading it costs a load on every call.
            const result = this.heap.exports.tes_remove(world, entity, id);
            if (result !== 0) throw this.error(result, operation, entity, (only as Definition).name);
            return;
        }
        removeItems(this, entity, components);
    }

    /**
     * True when the entity has the component. For a relation: when the entity is the source
     * of at least one of its pairs (`world.has(e, ChildOf)`), or of one pair
     * (`world.has(e, ChildOf(parent))`). Throws `STALE_ENTITY` for a dead entity.
     */
    has(entity: Entity, component: Component<any> | Relation<any> | Pair<any>): boolean {
        const operation = 'world.has';
        this.live(operation);
        const pair = relations.pairOf(component);
        if (pair !== undefined) return relations.pairHas(this, entity, pair.relation, pair.target, operation);
        const id = this.registry.known(component as Definition, operation);
        if (id !== undefined) return hasComponent(this, entity, id, component as Definition, operation);
        requireAlive(this, entity, operation, (component as Definition).name); // no entity of this world has it
        return false;
    }

    // ---- values (access.ts for one field, found in JS; values.ts for the rest) ---------------

    /** All fields of an entity's component, copied into a fresh object. */
    get<S extends Schema>(entity: Entity, component: Component<S>): Values<S>;
    /** One field of an entity's component: a number, or a fresh array for array fields. */
    get<S extends Schema, K extends FieldName<S>>(entity: Entity, component: Component<S>, field: K): FieldValue<S[K]>;
    get(entity: Entity, component: Component<any>, field?: string): unknown {
        // Found and read in JS (access.ts); the checked path for the rest and for errors.
        const value = field !== undefined ? this.fields.named(component, field)?.read(entity) : this.fields.of(component)?.read(entity);
        return value !== undefined ? value : getChecked(this, entity, component, field, 'world.get');
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
        if (isRelation(component)) throw needsTarget(operation, 0, component);
        fieldOf(component, name, operation);
        return this.fields.of(component)!.named(name)! as Field<FieldValue<S[K]>>;
    }

    /** @internal The checked path of world.get (and of Field.get): every error, in full. */
    getChecked(entity: Entity, component: Component<any>, field: string | undefined, operation: string): unknown {
        return getChecked(this, entity, component, field, operation);
    }

    /**
     * Writes some fields of an entity's component and marks it changed. Every value is checked
     * first (integers must be integral and in range): a bad one throws `BAD_VALUE` and nothing
     * is written. Fields left out, or given as undefined, keep their value. Inside a loop it
     * writes at once, unless the entity is pending or a call recorded in the loop adds this
     * component to it (again): then it is recorded after that add, so it lands last.
     */
    set<S extends Schema>(entity: Entity, component: Component<S>, values: ValuesInput<S>): void;
    /** Writes one field of an entity's component and marks it changed. */
    set<S extends Schema, K extends FieldName<S>>(entity: Entity, component: Component<S>, field: K, value: FieldInput<S[K]>): void;
    set(entity: Entity, component: Component<any>, fieldOrValues: unknown, value?: unknown): void {
        // Found and written in JS, or one call (access.ts); the checked path for the rest and for errors.
        if (typeof fieldOrValues === 'string') {
            if (this.fields.named(component, fieldOrValues)?.write(entity, value)) return;
        } else if (typeof fieldOrValues === 'object' && fieldOrValues !== null && this.pointer !== 0) {
            // (A destroyed world throws before any value is read, as the checked path does.)
            const written = this.fields.of(component)?.write(entity, fieldOrValues);
            if (written === true) return;
            // Values read go on as read (a getter is not run twice).
            if (written !== undefined) fieldOrValues = written;
        }
        setChecked(this, entity, component, fieldOrValues, value, 'world.set');
    }

    /** @internal The checked path of world.set (and of Field.set): every error, in full. */
    setChecked(entity: Entity, component: Component<any>, fieldOrValues: unknown, value: unknown, operation: string): void {
        setChecked(this, entity, component, fieldOrValues, value, operation);
    }

    /**
     * Marks an entity's component changed, after writing it through a view outside an
     * iteration. Deduplicated: marking twice between two runs of a consumer costs one entry.
     */
    markChanged(entity: Entity, component: Component<any>): void {
        markChanged(this, entity, component);
    }

    // ---- relations: pairs (source, relation, target) (relations.ts) ----------------------

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
        relations.addPair(this, source, relation, target, values);
    }

    /** Removes the pair; nothing happens when it is not there. */
    removePair(source: Entity, relation: Relation<any>, target: Entity): void {
        relations.removePair(this, source, relation, target);
    }

    /** True when the pair (source, relation, target) exists. */
    hasPair(source: Entity, relation: Relation<any>, target: Entity): boolean {
        return relations.pairHas(this, source, relation, target, 'world.hasPair');
    }

    /** The data of a pair, copied into a fresh object. `MISSING_COMPONENT` when there is no such pair. */
    getPair<S extends Schema>(source: Entity, relation: Relation<S>, target: Entity): Values<S>;
    /** One field of a pair's data. */
    getPair<S extends Schema, K extends FieldName<S>>(source: Entity, relation: Relation<S>, target: Entity, field: K): FieldValue<S[K]>;
    getPair(source: Entity, relation: Relation<any>, target: Entity, field?: string): unknown {
        return relations.getPair(this, source, relation, target, field);
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
        relations.setPair(this, source, relation, target, fieldOrValues, value);
    }

    /** The targets of a source's pairs of a relation, in the order the pairs were added. */
    targets(source: Entity, relation: Relation<any>): Entity[] {
        return relations.targets(this, source, relation);
    }

    /**
     * The source's first target of a relation, or undefined when it has none: the one target of
     * an exclusive relation (`world.target(e, ChildOf)` is e's parent).
     */
    target(source: Entity, relation: Relation<any>): Entity | undefined {
        return relations.target(this, source, relation);
    }

    /**
     * The sources of the pairs of a relation to a target, in their order: the order their
     * pairs were added in, or as {@link World.placePair} / {@link World.setParent} set it.
     */
    sources(relation: Relation<any>, target: Entity): Entity[] {
        return relations.sources(this, relation, target);
    }

    /** Every pair of a relation as `[source, target]`, source by source (sources in no promised order). */
    pairs(relation: Relation<any>): Array<[Entity, Entity]> {
        return relations.pairs(this, relation);
    }

    /**
     * Moves the pair (source, relation, target) in the target's list of sources to just before
     * the pair of `before` (another source of the same target), or to the end when `before` is
     * left out. `MISSING_COMPONENT` when either pair does not exist.
     */
    placePair(source: Entity, relation: Relation<any>, target: Entity, before?: Entity): void {
        relations.placePair(this, source, relation, target, before);
    }

    // ---- hierarchy: the built-in ChildOf relation (hierarchy.ts) -------------------------

    /**
     * Makes `parent` the parent of `child` (the pair (child, ChildOf, parent)), replacing its
     * old parent; `parent` 0 or undefined makes it a root. A new child goes after its siblings,
     * or just before `before` (one of parent's children) when given; a child that stays with
     * its parent keeps its place unless `before` is given. Throws `CYCLE` when `parent` is
     * `child` or one of its descendants, and changes nothing.
     */
    setParent(child: Entity, parent: Entity | undefined, before?: Entity): void {
        setParent(this, child, parent, before);
    }

    /** The parent of `child`, or undefined for a root. */
    parentOf(child: Entity): Entity | undefined {
        return relations.target(this, child, ChildOf, 'world.parentOf');
    }

    /** The children of `parent`, in order (see {@link World.setParent}). */
    childrenOf(parent: Entity): Entity[] {
        return relations.sources(this, ChildOf, parent, 'world.childrenOf');
    }

    /**
     * The descendants of `root` (root excluded), depth first, pre-order: each entity comes after
     * its parent and before its next sibling, children in order. `relation` defaults to
     * ChildOf; with another relation, "children" are the sources of an entity's pairs, and an
     * entity reached twice is listed once, at its first visit.
     */
    descendants(root: Entity, relation: Relation<any> = ChildOf): Entity[] {
        return walkList(this, root, relation, 'world.descendants')[0];
    }

    /**
     * Calls `visit(entity, depth, parent)` for every descendant of `root` in the order of
     * {@link World.descendants}: depth 1 for root's children, and `parent` the entity it was
     * reached from (root for depth 1). Parents are visited before their children, which is what
     * transform propagation needs. The list is taken before the first call: entities spawned by
     * `visit` are not visited, and despawned ones still are.
     */
    walk(root: Entity, visit: (entity: Entity, depth: number, parent: Entity) => void, relation: Relation<any> = ChildOf): void {
        walk(this, root, visit, relation);
    }

    // ---- queries, subscriptions, systems (query.ts, subscription.ts, system.ts) ------------

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

    /** `tick()` calls so far (a rewind does not take them back: systems' intervals count on). */
    get frame(): number {
        this.live('world.frame');
        return this.scheduler.frame;
    }

    /** The component or relation registered under a C id in this world, if any. */
    componentById(id: number): Component<any> | Relation<any> | undefined {
        this.live('world.componentById');
        return this.registry.definition(id);
    }

    // ---- internals shared by the concept modules ----------------------------------------

    /**
     * @internal The core's access epoch (tes_world_t.access_epoch): it moves whenever what JS
     * learned about the world's layout may be stale (a registration given or taken back, a
     * tracking level, a freed archetype, whose id or address may come back naming another).
     * Everything JS keeps about archetypes and ids is kept with the epoch it was learned at.
     */
    accessEpoch(): number {
        return this.heap.u32[(this.pointer + WORLD.access_epoch) >>> 2]!;
    }

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
}
