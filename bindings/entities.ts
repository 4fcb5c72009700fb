/**
 * Entities: handles, liveness, membership, and the entity calls too rare or too varied to sit
 * in `World` itself (batch despawns, removals of several items). The hot calls (`spawn`,
 * `despawn`, `add`, `remove` of one registered component, `has`, `isAlive`) stay in world.ts,
 * one frame each, and use the helpers here only on their slow or failing paths.
 *
 * @module
 */
import { COMPONENT_FLAGS as FLAGS, LOCATION } from './abi.js';
import { TesseraError, describeValue } from './errors.js';
import { ItemList } from './items.js';
import type { Component, Definition, Pair, Relation } from './schema.js';
import type { Entity, World } from './world.js';

/**
 * Checks that a value is an entity handle (a uint32) before it reaches wasm: an i32 parameter
 * would truncate 1.5 into another entity's handle.
 */
export function handle(entity: unknown, operation: string): Entity {
    if (typeof entity !== 'number' || entity >>> 0 !== entity) {
        throw new TesseraError(
            'INVALID_ARGUMENT',
            operation,
            `expected an entity handle (a non-negative integer), got ${describeValue(entity)}`,
        );
    }
    return entity;
}

/** Checks a count or size argument: an integer in 0..2^32-1. */
export function checkCount(value: unknown, operation: string, name: string): number {
    if (typeof value !== 'number' || value >>> 0 !== value) {
        throw new TesseraError('INVALID_ARGUMENT', operation, `${name} must be a non-negative integer, got ${describeValue(value)}`);
    }
    return value;
}

/** Throws `STALE_ENTITY` unless the handle names a live or pending entity. */
export function requireAlive(world: World, entity: Entity, operation: string): void {
    if (!world.isAlive(handle(entity, operation))) {
        throw world.error('STALE_ENTITY', operation, entity);
    }
}

/** True when the handle names an entity spawned inside an iteration, not placed yet. */
export function isPending(world: World, entity: Entity): boolean {
    const heap = world.heap;
    return heap.exports.tes_location(world.pointer, entity, heap.scratch) === heap.results.PENDING_ENTITY;
}

/** tes_has: whether a live entity has a registered component (errors name both). */
export function hasComponent(world: World, entity: Entity, id: number, component: Definition, operation: string): boolean {
    const heap = world.heap;
    const out = heap.scratch;
    world.check(heap.exports.tes_has(world.live(operation), handle(entity, operation), id, out), operation, entity, component.name);
    return heap.u8[out] !== 0;
}

/** world.despawnMany: every entity of the list, or none when one is stale or listed twice. */
export function despawnMany(world: World, entities: ArrayLike<Entity>): void {
    const operation = 'world.despawnMany';
    const pointer = world.live(operation);
    if (typeof entities !== 'object' || entities === null || typeof entities.length !== 'number') {
        throw new TesseraError('INVALID_ARGUMENT', operation, `expected an array of entity handles, got ${describeValue(entities)}`);
    }
    // Each handle is read once, into a copy that nothing else can change.
    const copy = new Uint32Array(entities.length);
    for (let i = 0; i < copy.length; i++) copy[i] = handle(entities[i], operation);
    const list = world.heap.tempU32(copy, operation);
    const result = world.heap.exports.tes_despawn_batch(pointer, list, copy.length);
    if (result !== 0) throw world.error(result, operation, culprit(world, copy));
}

/**
 * world.remove of anything but one registered component: the items this world registered, in
 * one call. One it never registered is on no entity: nothing to remove, nothing to register.
 */
export function removeItems(world: World, entity: Entity, components: readonly (Component<any> | Relation<any> | Pair<any>)[]): void {
    const operation = 'world.remove';
    const pointer = world.live(operation);
    handle(entity, operation);
    const list = world.items.listOf(components, operation, entity, true);
    const kept = new ItemList();
    for (let i = 0; i < list.size; i++) {
        const definition = list.definitions[i]!;
        if (world.registry.known(definition, operation) !== undefined) kept.add(definition, list.targets[i]!, undefined, operation, entity);
    }
    if (kept.size === 0) return requireAlive(world, entity, operation);
    world.items.entityCall(kept, entity, operation, (x, fault, entities) =>
        world.heap.exports.tes_remove_items(pointer, entities, 1, x, fault),
    );
}

/** The first entity of a failed batch that is stale or listed twice (for the message). */
function culprit(world: World, entities: ArrayLike<Entity>): Entity | undefined {
    const seen = new Set<number>();
    for (let i = 0; i < entities.length; i++) {
        const entity = entities[i]!;
        if (seen.has(entity) || !world.isAlive(entity)) return entity;
        seen.add(entity);
    }
    return undefined;
}

/**
 * The archetype of the latest spawn of bare components (no values, no pairs, no sparse
 * storage), so that the same list again is one call (`tes_archetype_spawn`) without an item
 * list: `spawn(Bullet, Position, Velocity)` in a loop resolves its set once. The list is
 * compared by identity, in order; the plan is dropped when a registration is given or taken
 * back (the ids it was resolved with may have changed). Archetypes are never reclaimed, so an
 * archetype id stays what it was.
 */
export class SpawnPlan {
    private readonly definitions: unknown[] = [];
    private archetype = -1;
    private registrations = -1;

    /** The archetype for these items, or -1 when they are not the planned list. */
    archetypeFor(items: readonly unknown[], registrations: number): number {
        const definitions = this.definitions;
        if (this.archetype < 0 || registrations !== this.registrations || items.length !== definitions.length) return -1;
        for (let i = 0; i < items.length; i++) if (items[i] !== definitions[i]) return -1;
        return this.archetype;
    }

    /** Plans these items after a spawn that placed `entity` (left unplanned unless all are bare). */
    learn(world: World, items: readonly unknown[], entity: Entity): void {
        this.archetype = -1;
        for (const item of items) {
            if (typeof item !== 'function' || ((item as Definition).flags & (FLAGS.sparse | FLAGS.relation)) !== 0) return;
        }
        const heap = world.heap;
        // A pending entity (spawned inside a loop) has no archetype to read yet: planned next time.
        if (heap.exports.tes_location(world.pointer, entity, heap.scratch) !== 0) return;
        this.definitions.length = 0;
        for (const item of items) this.definitions.push(item);
        this.archetype = heap.u32At(heap.scratch + LOCATION.archetype);
        this.registrations = world.registry.generation;
    }
}
