/**
 * The hierarchy: parents and children through the built-in `ChildOf` relation (exclusive,
 * acyclic, cascading: the C core keeps those rules), its order among siblings, and depth-first
 * walks of any relation.
 *
 * @module
 */
import { TesseraError, describeEntity } from './errors.js';
import type { Pointer } from './load.js';
import { ChildOf } from './definitions.js';
import { handle, requireAlive } from './entities.js';
import { fetchList, pairCheck, pairError, pairHas, readRelation } from './relations.js';
import type { Relation } from './schema.js';
import type { Entity, World } from './world.js';

/** world.setParent: `parent` 0 or undefined makes `child` a root. */
export function setParent(world: World, child: Entity, parent: Entity | undefined, before?: Entity): void {
    const operation = 'world.setParent';
    const pointer = world.live(operation);
    handle(child, operation, 'child');
    if (parent === undefined || parent === 0) {
        if (before !== undefined) {
            throw new TesseraError('INVALID_ARGUMENT', operation, '`before` needs a parent', { entity: child, component: ChildOf.name });
        }
        const known = readRelation(world, ChildOf, operation, child);
        // Removing a relation applies at once even inside a loop (as pair calls do), so a
        // later setParent in the same loop keeps the last word.
        if (known !== undefined) world.check(world.heap.exports.tes_remove(pointer, child, known), operation, child, ChildOf.name);
        return;
    }
    const fresh: number[] = [];
    const ids: number[] = [];
    world.registry.resolve([ChildOf], 1, operation, fresh, ids);
    try {
        placeChild(world, child, ids[0]!, parent, before, operation);
    } catch (error) {
        world.registry.takeBack(fresh);
        throw error;
    }
}

/** The descendants of `root` depth first, with their depths (tes_relation_walk). */
export function walkList(world: World, root: Entity, relation: Relation<any>, operation: string): [Entity[], number[]] {
    const pointer = world.live(operation);
    handle(root, operation, 'root');
    // A read never registers: a relation this world never used has no descendants.
    const id = readRelation(world, relation, operation, root);
    if (id === undefined) return [[], []];
    const exports = world.heap.exports;
    const call = (out: Pointer, capacity: number, count: Pointer) =>
        exports.tes_relation_walk(pointer, id, root, out, out + capacity * 4, capacity, count);
    const [entities, depths] = fetchList(world, operation, 2, call, root, relation);
    return [entities!, depths!];
}

/** world.walk: `visit` per descendant, parents first; the list is taken before the first call. */
export function walk(
    world: World,
    root: Entity,
    visit: (entity: Entity, depth: number, parent: Entity) => void,
    relation: Relation<any>,
): void {
    const operation = 'world.walk';
    if (typeof visit !== 'function') throw new TesseraError('INVALID_ARGUMENT', operation, 'expected a function to call per entity');
    const [entities, depths] = walkList(world, root, relation, operation);
    const stack: Entity[] = [root];
    for (let i = 0; i < entities.length; i++) {
        const entity = entities[i]!;
        const depth = depths[i]!;
        stack[depth] = entity;
        visit(entity, depth, stack[depth - 1]!);
    }
}

/** setParent with a parent: checks `before`, adds the pair, places it. */
function placeChild(world: World, child: Entity, id: number, parent: Entity, before: Entity | undefined, operation: string): void {
    const pointer = world.live(operation);
    const exports = world.heap.exports;
    handle(parent, operation, 'parent');
    if (before !== undefined) {
        // `before` must be a child of parent already (the child itself included: then it stays).
        handle(before, operation, 'before');
        requireAlive(world, child, operation); // the child's mistakes are reported first
        if (!world.isAlive(before)) throw pairError(world, 'STALE_ENTITY', operation, before, ChildOf, parent, undefined, 'before');
        if (!pairHas(world, before, ChildOf, parent, operation)) {
            throw new TesseraError(
                'MISSING_COMPONENT',
                operation,
                `before: ${describeEntity(before)} is not a child of ${describeEntity(parent)}`,
                {
                    entity: before,
                    component: ChildOf.name,
                },
            );
        }
    }
    pairCheck(world, exports.tes_pair_add(pointer, child, id, parent), operation, child, ChildOf, parent);
    if (before !== undefined && before !== child) {
        pairCheck(world, exports.tes_pair_place(pointer, child, id, parent, before), operation, child, ChildOf, parent);
    }
}
