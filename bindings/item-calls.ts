/**
 * Item calls: one call into the C core for a spawn, add, set or remove of several components,
 * pairs and values (items.ts writes the list). Here: turning a call's arguments into the
 * world's reusable list, registering first uses and taking them back when the call fails.
 *
 * @module
 */
import { TesseraError, describeValue } from './errors.js';
import { ItemList, type WrittenList } from './items.js';
import type { Pointer } from './load.js';
import { describeDefinition, isDefinition } from './definitions.js';
import type { Entity, World } from './world.js';

/** What an item call does with the written list: returns the C result. */
export type ItemCall = (items: Pointer, fault: Pointer, entities: Pointer) => number;

/** One world's item calls: its list, reused call after call, and the registrations under way. */
export class ItemCalls {
    /** The item list of spawn/add/set/remove calls, reused call after call. */
    private readonly list = new ItemList();
    /** The registrations of the item call under way (taken back if it fails). */
    private readonly fresh: number[] = [];

    constructor(private readonly world: World) {}

    /** The world's list, emptied, for a call that fills it itself (set, setPair, addPair). */
    empty(): ItemList {
        return this.list.clear();
    }

    /**
     * The world's item list, filled from spawn/add/remove arguments: each a component, a
     * component with values (`C(values)`), or a pair (`R(target, values?)`); for removals also
     * a bare relation; with `count` (spawnMany), also a component with values per entity
     * (`C.columns(...)`). Every value is read once (see items.ts). Anything else is refused here.
     */
    listOf(items: readonly unknown[], operation: string, entity: Entity | undefined, removing: boolean, count?: number): ItemList {
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
                            { entity, component: component.name },
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
    call(
        list: ItemList,
        entityRoom: number,
        operation: string,
        subject: Entity | undefined,
        call: ItemCall,
        prepare?: (written: WrittenList) => void,
    ): WrittenList {
        const world = this.world;
        const fresh = this.fresh;
        if (fresh.length !== 0) fresh.length = 0;
        try {
            world.registry.resolve(list.definitions, list.size, operation, fresh, list.ids);
            const written = list.write(world.heap, entityRoom, operation);
            prepare?.(written);
            const result = call(written.items, written.fault, written.entities);
            if (result !== 0) throw list.error(world.heap, result, written.fault, operation, subject);
            return written;
        } catch (error) {
            world.registry.takeBack(fresh);
            throw error;
        }
    }

    /** An item call for one entity (add, set, remove). */
    entityCall(list: ItemList, entity: Entity, operation: string, call: ItemCall): void {
        this.call(list, 1, operation, entity, call, (written) => {
            this.world.heap.u32[written.entities >>> 2] = entity;
        });
    }

    /** query.addAll / removeAll: the item for every entity the query matches. */
    queryItems(operation: string, query: Pointer, item: unknown, add: boolean): void {
        const world = this.world;
        const pointer = world.live(operation);
        const exports = world.heap.exports;
        const call = add ? exports.tes_query_add_items : exports.tes_query_remove_items;
        this.call(this.listOf([item], operation, undefined, !add), 0, operation, undefined, (x, fault) => call(pointer, query, x, fault));
    }
}
