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
import { FAULT, ITEM, ITEMS, LIMITS, VALUE } from './abi.js';
import { TesseraError, describeCycle, describePair, describeValue, type ErrorCode } from './errors.js';
import { MAX_BLOCK_BYTES, type Heap } from './heap.js';
import type { Pointer } from './load.js';
import { fieldOf } from './definitions.js';
import type { Definition, FieldMeta } from './schema.js';

/** `TES_NO_FAULT`: no item, value or number of the list. */
const NO_FAULT = LIMITS.no_fault;

/**
 * One value of the list: a field of one item, where its numbers start, and its stride (0: the
 * same numbers for every entity; else the numbers per entity, entity after entity).
 */
interface ValueRef {
    item: number;
    meta: FieldMeta;
    number: number;
    stride: number;
}

/** Where a call's list, fault and entities sit in wasm memory. */
export interface WrittenList {
    /** The `tes_items_t`. */
    readonly items: Pointer;
    /** The `tes_fault_t` the call fills when it fails. */
    readonly fault: Pointer;
    /** Room for the call's entities (`entityRoom` of them, u32). */
    readonly entities: Pointer;
    /** The list's numbers (f64). */
    readonly numbers: Pointer;
}

/**
 * A list under construction, reused call after call (one per world): building it allocates
 * nothing once its arrays have grown to the sizes a game uses. Its arrays keep their length
 * (entries past the counts are stale, to be overwritten): shortening an array per call cost
 * more than the rest of a set.
 */
export class ItemList {
    /** The items' definitions, in order: the first `size`. */
    readonly definitions: Definition[] = [];
    /** Each item's pair target (0 for a component): the first `size`. */
    readonly targets: number[] = [];
    /** The items' C ids, filled by the call that writes the list. */
    readonly ids: number[] = [];
    /** The values, in order: the first `valueCount`. */
    private readonly values: ValueRef[] = [];
    private numberList = new Float64Array(64);
    private numberCount = 0;
    private itemCount = 0;
    /** Values in the list. */
    valueCount = 0;
    private readonly written = { items: 0, fault: 0, entities: 0, numbers: 0 };

    /** Empties the list. */
    clear(): this {
        this.itemCount = 0;
        this.valueCount = 0;
        this.numberCount = 0;
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
        this.definitions[item] = definition;
        this.targets[item] = target;
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
            if (typeof value !== 'number') {
                // An array for a scalar field is most likely meant as values per entity.
                const hint =
                    typeof value === 'object' && value !== null && 'length' in value
                        ? ` (values per entity: ${definition.name}.columns(...) with spawnMany)`
                        : '';
                throw badValue(operation, definition, meta, `expected a number, got ${describeValue(value)}${hint}`, entity);
            }
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
        this.pushValue(item, meta, start, 0);
    }

    /**
     * Adds a component with values per entity (`C.columns(...)`) for a call of `count`
     * entities: each field a column of `count × length` numbers, entity after entity, or (a
     * scalar field) one number for all. Each column is read once, its length checked before
     * anything is copied; the C core checks every number against the field's type.
     */
    addColumns(definition: Definition, columns: unknown, count: number, operation: string): void {
        const item = this.itemCount++;
        this.definitions[item] = definition;
        this.targets[item] = 0;
        if (typeof columns !== 'object' || columns === null) {
            throw new TesseraError('BAD_VALUE', operation, `expected an object of columns, got ${describeValue(columns)}`, {
                component: definition.name,
            });
        }
        for (const field in columns) {
            if (!Object.hasOwn(columns, field)) continue;
            const column: unknown = (columns as Record<string, unknown>)[field]; // the one read
            if (column === undefined) continue;
            const meta = fieldOf(definition, field, operation);
            if (typeof column === 'number' && meta.length === 1) {
                this.addValue(item, meta, column, operation);
            } else {
                this.addColumn(item, meta, column, count, operation);
            }
        }
    }

    /**
     * Writes the list (with these C ids for its definitions) into the heap's temporary block,
     * followed by room for `entityRoom` entities. Nothing is read from the caller any more.
     */
    write(heap: Heap, entityRoom: number, operation: string): WrittenList {
        return this.writeAt(heap, heap.tempBlock(this.bytes(entityRoom), operation), entityRoom);
    }

    /** Bytes the written list takes (see {@link ItemList.writeAt}). */
    bytes(entityRoom: number): number {
        return ((this.head(entityRoom) + 7) & ~7) + this.numberCount * 8;
    }

    /** Bytes of the list's header, fault, entities, items and values (the numbers follow, 8-aligned). */
    private head(entityRoom: number): number {
        return ITEMS.size + FAULT.size + entityRoom * 4 + this.itemCount * ITEM.size + this.valueCount * VALUE.size;
    }

    /** Writes the list at `block` (of at least {@link ItemList.bytes} bytes). */
    writeAt(heap: Heap, block: Pointer, entityRoom: number): WrittenList {
        const ids = this.ids;
        const items = this.itemCount,
            values = this.valueCount,
            numbers = this.numberCount;
        const head = this.head(entityRoom);
        const u32 = heap.u32;
        const fault = block + ITEMS.size;
        const entities = fault + FAULT.size;
        const itemAt = entities + entityRoom * 4;
        const valueAt = itemAt + items * ITEM.size;
        const numberAt = block + ((head + 7) & ~7);
        u32[(block + ITEMS.items) >>> 2] = itemAt;
        u32[(block + ITEMS.item_count) >>> 2] = items;
        u32[(block + ITEMS.values) >>> 2] = valueAt;
        u32[(block + ITEMS.value_count) >>> 2] = values;
        u32[(block + ITEMS.numbers) >>> 2] = numberAt;
        u32[(block + ITEMS.number_count) >>> 2] = numbers;
        u32[(fault + FAULT.item) >>> 2] = NO_FAULT;
        u32[(fault + FAULT.value) >>> 2] = NO_FAULT;
        u32[(fault + FAULT.number) >>> 2] = NO_FAULT;
        u32[(fault + FAULT.entity) >>> 2] = 0;
        for (let i = 0, at = itemAt; i < items; i++, at += ITEM.size) {
            u32[(at + ITEM.component) >>> 2] = ids[i]!;
            u32[(at + ITEM.target) >>> 2] = this.targets[i]!;
        }
        for (let v = 0, at = valueAt; v < values; v++, at += VALUE.size) {
            const value = this.values[v]!;
            u32[(at + VALUE.item) >>> 2] = value.item;
            u32[(at + VALUE.field) >>> 2] = value.meta.index;
            u32[(at + VALUE.number) >>> 2] = value.number;
            u32[(at + VALUE.stride) >>> 2] = value.stride;
        }
        const f64 = heap.f64,
            list = this.numberList;
        // A loop for the usual few numbers: a subarray to copy them with would be an allocation.
        if (numbers > 64) f64.set(list.subarray(0, numbers), numberAt >>> 3);
        else for (let i = 0, at = numberAt >>> 3; i < numbers; i++) f64[at + i] = list[i]!;
        const written = this.written;
        written.items = block;
        written.fault = fault;
        written.entities = entities;
        written.numbers = numberAt;
        return written;
    }

    /**
     * The TesseraError of a failed call, from its result and the C core's fault: which item,
     * value, number and entity it was about. `subject` is the entity the call was for.
     */
    error(heap: Heap, result: number, fault: Pointer, operation: string, subject?: number): TesseraError {
        const code: ErrorCode = heap.codes[result] ?? 'CORRUPT';
        const message = heap.problem(result);
        const u32 = heap.u32;
        const item = u32[(fault + FAULT.item) >>> 2]!,
            value = u32[(fault + FAULT.value) >>> 2]!;
        const number = u32[(fault + FAULT.number) >>> 2]!;
        const faultEntity = u32[(fault + FAULT.entity) >>> 2]!;
        // A fault about an entity alone still names the item when there is only one.
        const definition = item !== NO_FAULT ? this.definitions[item] : this.itemCount === 1 ? this.definitions[0] : undefined;
        const target = item !== NO_FAULT ? (this.targets[item] ?? 0) : 0;
        // The field only where a value is at fault: a missing component or a dead entity is
        // about the component and the entity, whatever values the call carried.
        const valueFault = code !== 'MISSING_COMPONENT' && code !== 'STALE_ENTITY' && code !== 'PENDING_ENTITY';
        const meta = value !== NO_FAULT && valueFault ? this.values[value]?.meta : undefined;
        const context = { entity: faultEntity || subject, component: definition?.name, field: meta?.name };
        const isTarget = faultEntity !== 0 && faultEntity === target && faultEntity !== subject;
        switch (code) {
            case 'BAD_VALUE': {
                const ref = value !== NO_FAULT ? this.values[value] : undefined;
                let offset = ref !== undefined ? number - ref.number : 0;
                // Numbers per entity: which entity of the call, and which of its elements.
                const position = ref !== undefined && ref.stride > 0 ? Math.floor(offset / ref.stride) : undefined;
                if (position !== undefined) offset -= position * ref!.stride;
                const element = meta !== undefined && meta.length > 1 ? ` (element ${offset})` : '';
                return new TesseraError(
                    code,
                    operation,
                    `${this.number(number)}${element} cannot be stored in ${meta?.type ?? 'the field'} without loss`,
                    {
                        ...context,
                        position,
                    },
                );
            }
            case 'INVALID_ARGUMENT':
                if (definition !== undefined && value === NO_FAULT) {
                    const exclusive =
                        target !== 0 &&
                        this.definitions.some((d, i) => i < this.itemCount && i !== item && d === definition && this.targets[i] !== target);
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
                return new TesseraError(code, operation, describeCycle(message, target), context);
            case 'MISSING_COMPONENT':
                if (target) return new TesseraError(code, operation, describePair(context.entity ?? 0, definition?.name, target), context);
                break;
        }
        return new TesseraError(code, operation, message, context);
    }

    /** A column of numbers per entity for one field (see {@link ItemList.addColumns}). */
    private addColumn(item: number, meta: FieldMeta, column: unknown, count: number, operation: string): void {
        const definition = this.definitions[item]!;
        const expected = count * meta.length; // at most 2^21 × 256: exact
        const length: unknown = typeof column === 'object' && column !== null ? (column as ArrayLike<unknown>).length : undefined;
        if (length !== expected) {
            const got = typeof length === 'number' ? `${length} numbers` : describeValue(column);
            const shape = meta.length > 1 ? ` (${count} entities × ${meta.length} elements)` : '';
            throw badValue(operation, definition, meta, `expected a column of ${expected} numbers${shape}, one per entity, got ${got}`);
        }
        // Every size from the caller's counts is checked before anything grows to it.
        if ((this.numberCount + expected) * 8 > MAX_BLOCK_BYTES) {
            throw new TesseraError('OUT_OF_MEMORY', operation, `${this.numberCount + expected} numbers do not fit in one call`, {
                component: definition.name,
                field: meta.name,
            });
        }
        const start = this.numberCount;
        this.reserveNumbers(expected);
        const list = column as ArrayLike<unknown>;
        if (isNumberView(list)) {
            // One read of each element, by the engine; a view that shrank since is refused.
            const view = list.subarray(0, expected);
            if (view.length !== expected)
                throw badValue(operation, definition, meta, `the column shrank to ${view.length} numbers while being read`);
            this.numberList.set(view, start);
        } else {
            for (let i = 0; i < expected; i++) {
                const element: unknown = list[i]; // the one read
                if (typeof element !== 'number') {
                    throw new TesseraError('BAD_VALUE', operation, `element ${i}: expected a number, got ${describeValue(element)}`, {
                        component: definition.name,
                        field: meta.name,
                        position: Math.floor(i / meta.length),
                    });
                }
                this.numberList[start + i] = element;
            }
        }
        this.numberCount = start + expected;
        this.pushValue(item, meta, start, meta.length);
    }

    /**
     * Makes this list the same items and values as `other` (ids included), numbers aside: a
     * plan made once, whose numbers `setNumber` changes call after call (entities.ts).
     */
    copyShape(other: ItemList): void {
        this.clear();
        for (let i = 0; i < other.itemCount; i++) {
            this.definitions[i] = other.definitions[i]!;
            this.targets[i] = other.targets[i]!;
            this.ids[i] = other.ids[i]!;
        }
        this.itemCount = other.itemCount;
        for (let v = 0; v < other.valueCount; v++) {
            const ref = other.values[v]!;
            this.pushValue(ref.item, ref.meta, ref.number, ref.stride);
        }
        this.reserveNumbers(other.numberCount);
        this.numberCount = other.numberCount;
    }

    /** Value `v`'s item and field. */
    valueItem(v: number): number {
        return this.values[v]!.item;
    }
    valueMeta(v: number): FieldMeta {
        return this.values[v]!.meta;
    }

    /** Sets number `index` (of a list whose shape is planned). */
    setNumber(index: number, value: number): void {
        this.numberList[index] = value;
    }

    /** Notes a value (a reused record: none is allocated per call once the list has grown). */
    private pushValue(item: number, meta: FieldMeta, number: number, stride: number): void {
        const ref = this.values[this.valueCount];
        if (ref === undefined) this.values[this.valueCount] = { item, meta, number, stride };
        else {
            ref.item = item;
            ref.meta = meta;
            ref.number = number;
            ref.stride = stride;
        }
        this.valueCount++;
    }

    private reserveNumbers(count: number): void {
        if (this.numberCount + count <= this.numberList.length) return;
        const grown = new Float64Array(Math.max(this.numberCount + count, this.numberList.length * 2));
        grown.set(this.numberList.subarray(0, this.numberCount));
        this.numberList = grown;
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

/** A typed array of numbers (not bigints, not a DataView): copied with one `set`. */
function isNumberView(value: ArrayLike<unknown>): value is Float64Array {
    return (
        ArrayBuffer.isView(value) &&
        !(value instanceof DataView) &&
        !(value instanceof BigInt64Array) &&
        !(value instanceof BigUint64Array) &&
        typeof (value as Float64Array).subarray === 'function'
    );
}

function badValue(operation: string, definition: Definition, meta: FieldMeta, problem: string, entity?: number): TesseraError {
    return new TesseraError('BAD_VALUE', operation, problem, { entity, component: definition.name, field: meta.name });
}
