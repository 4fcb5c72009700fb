/**
 * Item lists: what `spawn`, `add`, `set` and `remove` hand the C core in one call
 * (`tes_items_t`, "Item lists" in src/tessera.h). A list holds components, pairs and their
 * values. Every value the caller gives is read exactly once, here, checked for what only
 * JavaScript can get wrong (a number where a number belongs, an array of the field's length),
 * and copied; the C core then checks what each number may hold and applies the whole call or
 * nothing. So a getter that answers differently on a second read, a view that memory growth
 * detaches, or a value that fails late can never write half a call.
 *
 * @module
 */
import { TesseraError, describeEntity, type ErrorCode } from './errors.js';
import type { Heap } from './heap.js';
import type { Pointer } from './load.js';
import { describeValue, fieldOf, type Definition, type FieldMeta } from './schema.js';

/** `TES_NO_FAULT`: no item, value or number of the list. */
const NO_FAULT = 0xffffffff;

/*
 * wasm32 layouts (src/tessera.h): tes_items_t items 0, item_count 4, values 8, value_count 12,
 * numbers 16, number_count 20 (24 bytes); tes_fault_t item 0, value 4, number 8, entity 12
 * (16 bytes); tes_item_t 8 bytes; tes_value_t 12 bytes.
 */
const ITEMS_BYTES = 24;
const FAULT_BYTES = 16;

/** One value of the list: a field of one item and where its numbers start. */
interface ValueRef {
    readonly item: number;
    readonly meta: FieldMeta;
    readonly number: number;
}

/** Where a call's list, fault and entities sit in wasm memory. */
export interface WrittenList {
    /** The `tes_items_t`. */
    readonly items: Pointer;
    /** The `tes_fault_t` the call fills when it fails. */
    readonly fault: Pointer;
    /** Room for the call's entities (`entityRoom` of them, u32). */
    readonly entities: Pointer;
}

/**
 * A list under construction, reused call after call (one per world): building it allocates
 * nothing once its arrays have grown to the sizes a game uses.
 */
export class ItemList {
    /** The items' definitions, in order. */
    readonly definitions: Definition[] = [];
    /** Each item's pair target (0 for a component). */
    targets: number[] = [];
    /** The values, in order. */
    readonly values: ValueRef[] = [];
    private numberList = new Float64Array(64);
    private numberCount = 0;
    private valueCount = 0;
    private itemCount = 0;

    /** Empties the list. */
    clear(): this {
        this.itemCount = 0;
        this.valueCount = 0;
        this.numberCount = 0;
        this.definitions.length = 0;
        this.targets.length = 0;
        this.values.length = 0;
        return this;
    }

    get size(): number {
        return this.itemCount;
    }

    /** The numbers given, by index. */
    number(index: number): number {
        return this.numberList[index]!;
    }

    /**
     * Adds an item (a component, or a relation with its target) and the values given for it,
     * reading each once. `values` must be an object of fields (undefined ones are left out).
     */
    add(definition: Definition, target: number, values: unknown, operation: string, entity?: number): void {
        const item = this.itemCount++;
        this.definitions.push(definition);
        this.targets.push(target);
        if (values === undefined) return;
        if (typeof values !== 'object' || values === null) {
            throw new TesseraError('BAD_VALUE', operation, `expected an object of field values, got ${describeValue(values)}`, {
                entity,
                component: definition.name,
            });
        }
        for (const field in values) {
            if (!Object.hasOwn(values, field)) continue;
            const value: unknown = (values as Record<string, unknown>)[field]; // the one read
            if (value === undefined) continue;
            this.addValue(item, fieldOf(definition, field, operation, entity), value, operation, entity);
        }
    }

    /** Adds a value for one field of item `item` (read already: `value` is the caller's copy). */
    addValue(item: number, meta: FieldMeta, value: unknown, operation: string, entity?: number): void {
        const definition = this.definitions[item]!;
        const start = this.numberCount;
        if (meta.length === 1) {
            if (typeof value !== 'number') throw badValue(operation, definition, meta, `expected a number, got ${describeValue(value)}`, entity);
            this.pushNumber(value);
        } else {
            const list = value as ArrayLike<unknown> | null;
            const length = typeof list === 'object' && list !== null ? list.length : undefined;
            if (length !== meta.length) {
                throw badValue(operation, definition, meta, `expected ${meta.length} values, got ${describeValue(value)}`, entity);
            }
            for (let i = 0; i < length; i++) {
                const element: unknown = list![i];
                if (typeof element !== 'number') {
                    this.numberCount = start;
                    throw badValue(operation, definition, meta, `element ${i}: expected a number, got ${describeValue(element)}`, entity);
                }
                this.pushNumber(element);
            }
        }
        this.values.push({ item, meta, number: start });
        this.valueCount++;
    }

    /**
     * Writes the list (with these C ids for its definitions) into the heap's temporary block,
     * followed by room for `entityRoom` entities. Nothing is read from the caller any more.
     */
    write(heap: Heap, ids: readonly number[], entityRoom: number, operation: string): WrittenList {
        const items = this.itemCount, values = this.valueCount, numbers = this.numberCount;
        const head = ITEMS_BYTES + FAULT_BYTES + entityRoom * 4 + items * 8 + values * 12;
        const bytes = ((head + 7) & ~7) + numbers * 8;
        const block = heap.tempBlock(bytes, operation);
        const u32 = heap.u32;
        const fault = block + ITEMS_BYTES;
        const entities = fault + FAULT_BYTES;
        const itemAt = entities + entityRoom * 4;
        const valueAt = itemAt + items * 8;
        const numberAt = block + ((head + 7) & ~7);
        let at = block >>> 2;
        u32[at] = itemAt;
        u32[at + 1] = items;
        u32[at + 2] = valueAt;
        u32[at + 3] = values;
        u32[at + 4] = numberAt;
        u32[at + 5] = numbers;
        u32.fill(NO_FAULT, fault >>> 2, (fault >>> 2) + 3);
        u32[(fault >>> 2) + 3] = 0;
        at = itemAt >>> 2;
        for (let i = 0; i < items; i++, at += 2) {
            u32[at] = ids[i]!;
            u32[at + 1] = this.targets[i]!;
        }
        at = valueAt >>> 2;
        for (let v = 0; v < values; v++, at += 3) {
            const value = this.values[v]!;
            u32[at] = value.item;
            u32[at + 1] = value.meta.index;
            u32[at + 2] = value.number;
        }
        if (numbers) heap.f64.set(this.numberList.subarray(0, numbers), numberAt >>> 3);
        return { items: block, fault, entities };
    }

    /**
     * The TesseraError of a failed call, from its result and the C core's fault: which item,
     * value, number and entity it was about. `subject` is the entity the call was for.
     */
    error(heap: Heap, result: number, fault: Pointer, operation: string, subject?: number): TesseraError {
        const code: ErrorCode = heap.codes[result] ?? 'CORRUPT';
        const message = heap.problem(result);
        const u32 = heap.u32;
        const item = u32[fault >>> 2]!, value = u32[(fault >>> 2) + 1]!, number = u32[(fault >>> 2) + 2]!;
        const faultEntity = u32[(fault >>> 2) + 3]!;
        // A fault about an entity alone still names the item when there is only one.
        const definition = item !== NO_FAULT ? this.definitions[item] : this.itemCount === 1 ? this.definitions[0] : undefined;
        const target = item !== NO_FAULT ? (this.targets[item] ?? 0) : 0;
        const meta = value !== NO_FAULT ? this.values[value]?.meta : undefined;
        const context = { entity: faultEntity || subject, component: definition?.name, field: meta?.name };
        const isTarget = faultEntity !== 0 && faultEntity === target && faultEntity !== subject;
        switch (code) {
            case 'BAD_VALUE': {
                const element = meta !== undefined && meta.length > 1 ? ` (element ${number - this.values[value]!.number})` : '';
                return new TesseraError(code, operation, `${this.number(number)}${element} cannot be stored in ${meta?.type ?? 'the field'} without loss`, context);
            }
            case 'INVALID_ARGUMENT':
                if (definition !== undefined && value === NO_FAULT) {
                    const exclusive = target !== 0 && this.definitions.some((d, i) => i !== item && d === definition && this.targets[i] !== target);
                    return new TesseraError(
                        code,
                        operation,
                        exclusive
                            ? `${definition.name} is exclusive (one target per source), and two of its pairs are listed`
                            : `${definition.name}${target ? `(${target})` : ''} is listed twice`,
                        context,
                    );
                }
                break;
            case 'STALE_ENTITY':
            case 'PENDING_ENTITY':
                if (isTarget) return new TesseraError(code, operation, `target: ${message}`, context);
                break;
            case 'CYCLE':
                return new TesseraError(code, operation, `${message}: the target, ${describeEntity(target)}, is the source or one of its descendants`, context);
            case 'MISSING_COMPONENT':
                if (target) return new TesseraError(code, operation, `no pair (${describeEntity(context.entity ?? 0)}, ${definition?.name}, ${describeEntity(target)})`, context);
                break;
        }
        return new TesseraError(code, operation, message, context);
    }

    private pushNumber(value: number): void {
        if (this.numberCount === this.numberList.length) {
            const grown = new Float64Array(this.numberList.length * 2);
            grown.set(this.numberList);
            this.numberList = grown;
        }
        this.numberList[this.numberCount++] = value;
    }
}

function badValue(operation: string, definition: Definition, meta: FieldMeta, problem: string, entity?: number): TesseraError {
    return new TesseraError('BAD_VALUE', operation, problem, { entity, component: definition.name, field: meta.name });
}
