/**
 * Component values by handle, the checked path: every read and write `world.get` / `world.set`
 * and a `Field` cannot answer in one crossing (access.ts) comes here, as do whole-component
 * reads and writes of several fields, and every error of those calls in full. A failed fast
 * call changed nothing, so making it again here is safe.
 *
 * @module
 */
import { TesseraError, describeValue } from './errors.js';
import type { ItemList } from './items.js';
import type { Pointer } from './load.js';
import { fieldOf, fieldsOf, isRelation } from './definitions.js';
import { handle, requireAlive } from './entities.js';
import type { Component, Definition, FieldMeta } from './schema.js';
import type { Entity, World } from './world.js';

/** world.get (and Field.get) when one crossing could not answer: every error, in full. */
export function getChecked(world: World, entity: Entity, component: Component<any>, field: string | undefined, operation: string): unknown {
    world.live(operation);
    const id = componentId(world, entity, component, field, operation);
    if (field !== undefined) {
        const meta = fieldOf(component, field, operation, entity);
        return readField(world, fieldPointer(world, entity, component, id, meta, operation, meta.name), meta);
    }
    if (component.isTag) {
        requireAlive(world, entity, operation, component.name);
        throw new TesseraError('TAG_HAS_NO_DATA', operation, `${component.name} is a tag`, {
            entity,
            component: component.name,
        });
    }
    const values: Record<string, unknown> = {};
    // A whole-component read: an error names the component, not the field it was reading.
    for (const meta of fieldsOf(component)) {
        values[meta.name] = readField(world, fieldPointer(world, entity, component, id, meta, operation, undefined), meta);
    }
    return values;
}

/** world.set (and Field.set) when one crossing could not answer: every error, in full. */
export function setChecked(
    world: World,
    entity: Entity,
    component: Component<any>,
    fieldOrValues: unknown,
    value: unknown,
    operation: string,
): void {
    const pointer = world.live(operation);
    // First: a number that is not a handle (1.5, 2^32 + 1) would reach the core as another
    // entity's, and a string or boolean be coerced into one.
    handle(entity, operation);
    if (typeof fieldOrValues === 'string') {
        const meta = fieldOf(component, fieldOrValues, operation, entity);
        if (meta.length === 1) {
            // One number, one call (the C core checks what the field can hold).
            if (typeof value !== 'number') {
                throw new TesseraError('BAD_VALUE', operation, `expected a number, got ${describeValue(value)}`, {
                    entity,
                    component: component.name,
                    field: meta.name,
                });
            }
            const id = componentId(world, entity, component, meta.name, operation);
            const result = world.heap.exports.tes_set_number(pointer, entity, id, meta.index, 0, value);
            if (result !== 0) throw valueError(world, result, operation, entity, component, meta, value);
            return;
        }
        const list = world.items.empty();
        list.add(component, 0, undefined, operation, entity);
        list.addValue(0, meta, value, operation, entity);
        return setList(world, list, entity, component, operation);
    }
    const list = world.items.empty();
    list.add(component, 0, fieldOrValues, operation, entity);
    setList(world, list, entity, component, operation);
}

/** world.markChanged: after a write through a view outside an iteration. */
export function markChanged(world: World, entity: Entity, component: Component<any>): void {
    const operation = 'world.markChanged';
    world.live(operation);
    const id = componentId(world, entity, component, undefined, operation);
    world.check(
        world.heap.exports.tes_mark_changed(world.live(operation), handle(entity, operation), id),
        operation,
        entity,
        component.name,
    );
}

/** The NEEDS_TARGET of a relation named where a component belongs (its data is per pair). */
export function needsTarget(operation: string, entity: Entity, relation: Definition): TesseraError {
    return new TesseraError(
        'NEEDS_TARGET',
        operation,
        `${relation.name} is a relation: its data is per pair (getPair / setPair with a target)`,
        {
            entity,
            component: relation.name,
        },
    );
}

/** set with values: all written as a change, or none. */
function setList(world: World, list: ItemList, entity: Entity, component: Component<any>, operation: string): void {
    const pointer = world.live(operation);
    if (isRelation(component)) throw needsTarget(operation, entity, component);
    if (world.registry.known(component, operation) === undefined) {
        requireAlive(world, entity, operation, component.name);
        throw world.error('MISSING_COMPONENT', operation, entity, component.name);
    }
    // Nothing to write still checks the handle.
    if (list.valueCount === 0) return requireAlive(world, entity, operation, component.name);
    world.items.entityCall(list, entity, operation, (x, fault, entities) =>
        world.heap.exports.tes_set_items(pointer, entities, 1, x, fault),
    );
}

/**
 * The id of a component a per-entity read or write names: a relation needs a target
 * (`NEEDS_TARGET`), and one this world never registered is on no entity
 * (`MISSING_COMPONENT`, once the handle is found alive).
 */
function componentId(world: World, entity: Entity, component: Component<any>, field: string | undefined, operation: string): number {
    const id = world.registry.known(component, operation);
    if (id !== undefined && !isRelation(component)) return id;
    if (isRelation(component)) throw needsTarget(operation, entity, component);
    if (field !== undefined) fieldOf(component, field, operation, entity);
    requireAlive(world, entity, operation, component.name);
    throw world.error('MISSING_COMPONENT', operation, entity, component.name, field);
}

/** The TesseraError of a failed tes_set_number: a BAD_VALUE names the value and the type. */
function valueError(
    world: World,
    result: number,
    operation: string,
    entity: Entity,
    component: Definition,
    meta: FieldMeta,
    value: number,
): TesseraError {
    if (result === world.heap.results.BAD_VALUE) {
        return new TesseraError('BAD_VALUE', operation, `${value} cannot be stored in ${meta.type} without loss`, {
            entity,
            component: component.name,
            field: meta.name,
        });
    }
    return world.error(result, operation, entity, component.name, meta.name);
}

/**
 * Where the entity's field is in wasm memory (tes_field_ptr). Errors name the entity and the
 * component, and `named`: the field the caller asked for (none for a whole-component read).
 */
function fieldPointer(
    world: World,
    entity: Entity,
    component: Component<any>,
    id: number,
    meta: FieldMeta,
    operation: string,
    named: string | undefined,
): Pointer {
    const heap = world.heap;
    const out = heap.scratch;
    world.check(
        heap.exports.tes_field_ptr(world.live(operation), handle(entity, operation), id, meta.index, out),
        operation,
        entity,
        component.name,
        named,
    );
    return heap.u32At(out);
}

function readField(world: World, pointer: Pointer, meta: FieldMeta): number | number[] {
    const memory = world.heap.typed(meta.type);
    const at = pointer / meta.bytesPerElement;
    return meta.length === 1 ? memory[at]! : Array.from(memory.subarray(at, at + meta.length));
}
