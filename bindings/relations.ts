/**
 * Relations: pairs (source, relation, target) by handle. Adding and writing pairs are item
 * calls (item-calls.ts); reads, removals, lists and placement are calls of their own. The C
 * core checks the source, then the relation, then the target, with the same codes for both
 * entities: the errors here say which side a stale or pending handle was.
 *
 * @module
 */
import { TesseraError, describeCycle, describeEntity, describePair, type ErrorCode } from './errors.js';
import type { Pointer } from './load.js';
import { fieldOf, fieldsOf, isRelation } from './definitions.js';
import { handle, isPending, requireAlive } from './entities.js';
import type { Definition, FieldMeta, Pair, Relation, Schema, ValuesInput } from './schema.js';
import type { Entity, World } from './world.js';

/** The pair an item names, if it is one (`R(target)`), else undefined. */
export function pairOf(item: unknown): Pair<any> | undefined {
    return typeof item === 'object' && item !== null && typeof (item as Pair<any>).relation === 'function'
        ? (item as Pair<any>)
        : undefined;
}

/** world.addPair: one item call, so values, handles and cycles are checked before anything changes. */
export function addPair<S extends Schema>(
    world: World,
    source: Entity,
    relation: Relation<S>,
    target: Entity,
    values?: ValuesInput<S>,
): void {
    const operation = 'world.addPair';
    const pointer = world.live(operation);
    handle(source, operation, 'source');
    const list = world.items.empty();
    list.add(relation, handle(target, operation, 'target'), values, operation, source);
    world.items.entityCall(list, source, operation, (x, fault, entities) =>
        world.heap.exports.tes_add_items(pointer, entities, 1, x, fault),
    );
}

/** world.removePair: nothing happens when the pair is not there. */
export function removePair(world: World, source: Entity, relation: Relation<any>, target: Entity): void {
    const operation = 'world.removePair';
    const id = readRelation(world, relation, operation, source, target);
    if (id === undefined) return;
    pairCheck(
        world,
        world.heap.exports.tes_pair_remove(
            world.live(operation),
            handle(source, operation, 'source'),
            id,
            handle(target, operation, 'target'),
        ),
        operation,
        source,
        relation,
        target,
    );
}

/** world.getPair: the pair's data, or one field of it. */
export function getPair(world: World, source: Entity, relation: Relation<any>, target: Entity, field?: string): unknown {
    const operation = 'world.getPair';
    handle(source, operation, 'source');
    handle(target, operation, 'target');
    if (field !== undefined) fieldOf(relation, field, operation, source);
    const id = readRelation(world, relation, operation, source, target);
    if (id === undefined) throw pairError(world, 'MISSING_COMPONENT', operation, source, relation, target);
    if (field !== undefined) {
        return readPairField(world, source, relation, id, target, fieldOf(relation, field, operation, source), operation);
    }
    if (relation.isTag) {
        pairHas(world, source, relation, target, operation); // stale handles first
        throw new TesseraError('TAG_HAS_NO_DATA', operation, `the pairs of ${relation.name} have no data`, {
            entity: source,
            component: relation.name,
        });
    }
    // A missing pair is the whole pair's error, naming no field (as world.get of a component).
    if (!pairHas(world, source, relation, target, operation))
        throw pairError(world, 'MISSING_COMPONENT', operation, source, relation, target);
    const values: Record<string, unknown> = {};
    for (const meta of fieldsOf(relation)) values[meta.name] = readPairField(world, source, relation, id, target, meta, operation);
    return values;
}

/** world.setPair: some fields (or one) of a pair's data, as a change; all or nothing. */
export function setPair(
    world: World,
    source: Entity,
    relation: Relation<any>,
    target: Entity,
    fieldOrValues: unknown,
    value?: unknown,
): void {
    const operation = 'world.setPair';
    const pointer = world.live(operation);
    handle(source, operation, 'source');
    handle(target, operation, 'target');
    const list = world.items.empty();
    if (typeof fieldOrValues === 'string') {
        list.add(relation, target, undefined, operation, source);
        list.addValue(0, fieldOf(relation, fieldOrValues, operation, source), value, operation, source);
    } else {
        list.add(relation, target, fieldOrValues, operation, source);
    }
    if (list.valueCount === 0) {
        // Nothing to write still checks the handles and the pair.
        if (!pairHas(world, source, relation, target, operation)) {
            throw pairError(world, 'MISSING_COMPONENT', operation, source, relation, target);
        }
        return;
    }
    world.items.entityCall(list, source, operation, (x, fault, entities) =>
        world.heap.exports.tes_set_items(pointer, entities, 1, x, fault),
    );
}

/** world.targets: a source's targets of a relation, in the order the pairs were added. */
export function targets(world: World, source: Entity, relation: Relation<any>): Entity[] {
    const operation = 'world.targets';
    const pointer = world.live(operation);
    handle(source, operation, 'source');
    const id = readRelation(world, relation, operation, source);
    if (id === undefined) return [];
    const exports = world.heap.exports;
    const call = (out: Pointer, capacity: number, count: Pointer) => exports.tes_pair_targets(pointer, source, id, out, capacity, count);
    return fetchList(world, operation, 1, call, source, relation)[0]!;
}

/** world.target: a source's first target of a relation, or undefined. */
export function target(world: World, source: Entity, relation: Relation<any>, operation = 'world.target'): Entity | undefined {
    handle(source, operation, 'source');
    const id = readRelation(world, relation, operation, source);
    if (id === undefined) return undefined;
    const heap = world.heap;
    const out = heap.scratch;
    world.check(
        heap.exports.tes_pair_target(world.live(operation), handle(source, operation, 'source'), id, out),
        operation,
        source,
        relation.name,
    );
    const found = heap.u32At(out);
    return found === 0 ? undefined : found;
}

/** world.sources: the sources of a relation's pairs to a target, in their order. */
export function sources(world: World, relation: Relation<any>, target: Entity, operation = 'world.sources'): Entity[] {
    const pointer = world.live(operation);
    handle(target, operation, 'target');
    const id = readRelation(world, relation, operation, target);
    if (id === undefined) return [];
    const exports = world.heap.exports;
    const call = (out: Pointer, capacity: number, count: Pointer) => exports.tes_pair_sources(pointer, id, target, out, capacity, count);
    return fetchList(world, operation, 1, call, target, relation)[0]!;
}

/** world.pairs: every pair of a relation as `[source, target]`. */
export function pairs(world: World, relation: Relation<any>): Array<[Entity, Entity]> {
    const operation = 'world.pairs';
    const pointer = world.live(operation);
    const id = readRelation(world, relation, operation);
    if (id === undefined) return [];
    const exports = world.heap.exports;
    const call = (out: Pointer, capacity: number, count: Pointer) =>
        exports.tes_relation_pairs(pointer, id, out, out + capacity * 4, capacity, count);
    const [sourceList, targetList] = fetchList(world, operation, 2, call, undefined, relation);
    return sourceList!.map((source, i) => [source, targetList![i]!]);
}

/** world.placePair: moves a pair in its target's list of sources. */
export function placePair(world: World, source: Entity, relation: Relation<any>, target: Entity, before?: Entity): void {
    const operation = 'world.placePair';
    handle(source, operation, 'source');
    handle(target, operation, 'target');
    if (before !== undefined) handle(before, operation, 'before');
    const id = readRelation(world, relation, operation, source, target, ...(before === undefined ? [] : [before]));
    if (id === undefined) throw pairError(world, 'MISSING_COMPONENT', operation, source, relation, target);
    const result = world.heap.exports.tes_pair_place(world.live(operation), source, id, target, before ?? 0);
    if (
        before !== undefined &&
        result !== 0 &&
        world.isAlive(source) &&
        world.isAlive(target) &&
        pairHas(world, source, relation, target, operation)
    ) {
        // The pair is there: the problem is `before` (stale, or not a source of target).
        throw pairError(world, result, operation, before, relation, target, undefined, 'before');
    }
    pairCheck(world, result, operation, source, relation, target);
}

/**
 * The id of a relation for a call that reads or removes pairs; undefined when this world
 * never registered it (no entity has a pair of it), once the handles are found alive.
 */
export function readRelation(world: World, relation: Relation<any>, operation: string, ...entities: Entity[]): number | undefined {
    const id = world.registry.known(relation, operation);
    if (id !== undefined) return id;
    if (!isRelation(relation)) throw world.error('NOT_A_RELATION', operation, undefined, (relation as Definition).name);
    // A stale handle is named with the relation, and for a pair with its side, as the core's
    // errors are when the relation is registered.
    for (const entity of entities) handle(entity, operation); // not a handle: INVALID_ARGUMENT first
    const [source, target] = entities;
    if (entities.length !== 2) {
        for (const entity of entities) requireAlive(world, entity, operation, relation.name);
    } else if (!(world.isAlive(source!) && world.isAlive(target!))) {
        throw pairError(world, 'STALE_ENTITY', operation, source!, relation, target!);
    }
    return undefined;
}

/** tes_pair_has, with errors naming the side they are about. */
export function pairHas(world: World, source: Entity, relation: Relation<any>, target: Entity, operation: string): boolean {
    // A read never registers: a relation this world never used has no pair.
    const id = readRelation(world, relation, operation, source, target);
    if (id === undefined) return false;
    const heap = world.heap;
    const out = heap.scratch;
    pairCheck(
        world,
        heap.exports.tes_pair_has(world.live(operation), handle(source, operation, 'source'), id, handle(target, operation, 'target'), out),
        operation,
        source,
        relation,
        target,
    );
    return heap.u8[out] !== 0;
}

/** Throws the TesseraError of a non-zero result of a pair call. */
export function pairCheck(
    world: World,
    result: number,
    operation: string,
    source: Entity,
    relation: Definition,
    target: Entity,
    field?: string,
): void {
    if (result !== 0) throw pairError(world, result, operation, source, relation, target, field);
}

/**
 * The TesseraError of a failed pair call. The C core checks the source first, then the
 * relation, then the target, with the same codes for both entities: a stale or pending
 * handle is put down to the source when the source is the one that is stale or pending.
 * `side` names the first entity in the message (`before` when it is the sibling placed before).
 */
export function pairError(
    world: World,
    result: number | ErrorCode,
    operation: string,
    source: Entity,
    relation: Definition,
    target: Entity,
    field?: string,
    side = 'source',
): TesseraError {
    const heap = world.heap;
    const number = typeof result === 'number' ? result : (heap.results[result] ?? -1);
    const code = heap.codes[number] ?? 'CORRUPT';
    const message = number >= 0 ? heap.problem(number) : `unknown result ${String(result)}`;
    const context = { entity: source, component: relation.name, field };
    switch (code) {
        case 'STALE_ENTITY':
        case 'PENDING_ENTITY': {
            const sourceIsIt = code === 'STALE_ENTITY' ? !world.isAlive(source) : isPending(world, source);
            const entity = sourceIsIt ? source : target;
            return new TesseraError(code, operation, `${sourceIsIt ? side : 'target'}: ${message}`, { ...context, entity });
        }
        case 'MISSING_COMPONENT':
            return new TesseraError(code, operation, describePair(source, relation.name, target), context);
        case 'CYCLE':
            return new TesseraError(code, operation, describeCycle(message, target), context);
        default:
            return new TesseraError(code, operation, `${message} (target ${describeEntity(target)})`, context);
    }
}

function readPairField(
    world: World,
    source: Entity,
    relation: Relation<any>,
    id: number,
    target: Entity,
    meta: FieldMeta,
    operation: string,
): number | number[] {
    const heap = world.heap;
    const pointer = world.live(operation);
    const out = heap.scratch;
    const read = (element: number) => {
        pairCheck(
            world,
            heap.exports.tes_pair_get_number(pointer, source, id, target, meta.index, element, out),
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
export function fetchList(
    world: World,
    operation: string,
    arrays: number,
    call: (out: Pointer, capacity: number, count: Pointer) => number,
    entity: Entity | undefined,
    relation: Definition,
): Entity[][] {
    const heap = world.heap;
    const count = heap.scratch;
    let capacity = Math.max(64, Math.floor(heap.tempSize / (4 * arrays)));
    for (;;) {
        const block = heap.tempBlock(capacity * 4 * arrays, operation);
        capacity = Math.floor(heap.tempSize / (4 * arrays));
        world.check(call(block, capacity, count), operation, entity, relation.name);
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
