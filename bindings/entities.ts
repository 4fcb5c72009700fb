/**
 * Entities: handles, liveness, membership, and the entity calls too rare or too varied to sit
 * in `World` itself (batch despawns, removals of several items). The hot calls (`spawn`,
 * `despawn`, `add`, `remove` of one registered component, `has`, `isAlive`) stay in world.ts,
 * one frame each, and use the helpers here only on their slow or failing paths.
 *
 * @module
 */
import { CHUNK, COMPONENT_FLAGS as FLAGS, LIMITS, RECORD, WORLD } from './abi.js';
import { addressed, columnOffset, type Field } from './access.js';
import { TesseraError, describeValue } from './errors.js';
import { ItemList } from './items.js';
import { SCRATCH_BYTES, type Heap } from './heap.js';
import type { Pointer } from './load.js';
import { placedRecord } from './record.js';
import type { Component, ComponentItem, Definition, FieldType, Pair, Relation, TypedArrayOf } from './schema.js';
import type { Entity, World } from './world.js';

/**
 * Checks that a value is an entity handle (a uint32) before it reaches wasm: an i32 parameter
 * would truncate 1.5 into another entity's handle.
 */
export function handle(entity: unknown, operation: string, argument?: string): Entity {
    if (typeof entity !== 'number' || entity >>> 0 !== entity) {
        // Calls that take several handles (a pair's source and target) say which one is wrong.
        const which = argument === undefined ? '' : `${argument}: `;
        throw new TesseraError(
            'INVALID_ARGUMENT',
            operation,
            `${which}expected an entity handle (a non-negative integer), got ${describeValue(entity)}`,
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
export function requireAlive(world: World, entity: Entity, operation: string, component?: string): void {
    if (!world.isAlive(handle(entity, operation))) {
        throw world.error('STALE_ENTITY', operation, entity, component);
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
    // Sized by the caller's length: checked first. More handles than a world can hold cannot
    // all be live and distinct.
    const count = checkCount(entities.length, operation, 'entities.length');
    if (count > LIMITS.max_entities) {
        throw new TesseraError(
            'INVALID_ARGUMENT',
            operation,
            `${count} handles are more than a world can hold (at most ${LIMITS.max_entities} live entities): one is stale or listed twice`,
        );
    }
    // Each handle is read once, into a copy that nothing else can change.
    const copy = new Uint32Array(count);
    for (let i = 0; i < copy.length; i++) copy[i] = handle(entities[i], operation);
    const list = world.heap.tempU32(copy, operation);
    const result = world.heap.exports.tes_despawn_batch(pointer, list, copy.length);
    if (result !== 0) throw world.error(result, operation, culprit(world, copy));
}

/**
 * world.add of anything but one registered component: the items (values, pairs, several
 * components) in one call. Apart from World.add, whose common path then captures nothing (a
 * closure there would make every call allocate its context).
 */
export function addItems(world: World, entity: Entity, items: readonly ComponentItem[]): void {
    const operation = 'world.add';
    const pointer = world.live(operation);
    handle(entity, operation);
    if (items.length === 0) return requireAlive(world, entity, operation);
    world.items.entityCall(world.items.listOf(items, operation, entity, false), entity, operation, (x, fault, entities) =>
        world.heap.exports.tes_add_items(pointer, entities, 1, x, fault),
    );
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
    // None registered: nothing to remove, but a stale handle is still named, with what it named.
    if (kept.size === 0) return requireAlive(world, entity, operation, list.size === 1 ? list.definitions[0]!.name : undefined);
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
 * `Object.prototype.hasOwnProperty`, for the spawn plan's shape check: called on the key of a
 * `for...in` loop, V8 answers it from the loop's enum cache. Measured (entity_cycle's loop, both
 * versions in one process, interleaved, minimum of 20 runs): 4-15% less per spawn + despawn
 * than `Object.hasOwn`; imported from another module instead of held here, no gain (V8 does
 * not see through the import to the builtin).
 */
const hasOwnProperty = Object.prototype.hasOwnProperty;

/** The members of a record and a chunk a spawn outside a run reads, as u32 indices. */
const RECORD_CHUNK = RECORD.chunk >>> 2;
const RECORD_ROW = RECORD.row >>> 2;
const CHUNK_ARCHETYPE = CHUNK.archetype >>> 2;
const CHUNK_DATA = CHUNK.data >>> 2;

/**
 * The plan of the latest spawn's argument shape, so that the same shape again costs one call
 * and no list building: `spawn(Bullet, Position, Velocity)` or `spawn(B({ value: v }))` in a
 * loop resolves its components and fields once. A shape is the items in order, each a
 * component compared by identity, or a component called with values whose own keys (in their
 * order) are the same names; no pairs, no sparse storage, scalar fields only. The plan holds
 * while the core's access epoch does (a registration given or taken back, or a freed archetype,
 * moves it: the ids and the archetype it was made with may name others). Inside a run, a
 * planned spawn whose values its fields accept (Field.accepts) is recorded by JS with no call
 * (record.ts). Otherwise bare components spawn through `tes_archetype_spawn`; so do values
 * JS addresses (scalars of chunk storage changed by any write), which JS then writes into the
 * new row (spawnPlaced); other values go through `tes_spawn_items` with the plan's own item
 * list, written once into a block of wasm memory the plan keeps: a call writes only its numbers
 * there (measured: writing the whole list per call was a sixth of a spawn's time inside a
 * loop). Each value is read once: when a value read is not a number, the call goes on down the
 * general path with the values read. @internal
 */
export class SpawnPlan {
    /** Per item: its definition. */
    private readonly definitions: unknown[] = [];
    /** Per item: the field names given, in order, or undefined for a bare component. */
    private readonly names: (string[] | undefined)[] = [];
    /** The values read by the latest call, in order, when one is not a number. */
    private readonly read: unknown[] = [];
    /** The latest call's values when all are numbers, in order. */
    private numbers = new Float64Array(8);
    /** Per value: its component's id, its field's index and its Field (whose range it checks). */
    private valueIds = new Uint32Array(8);
    private valueFields = new Uint32Array(8);
    private readonly checks: Field[] = [];
    /** The item list of a plan with values (its numbers change per call). */
    private readonly list = new ItemList();
    /** The plan's block in wasm memory (grown, never shrunk; freed with the world) and its size. */
    private block: Pointer = 0;
    private blockBytes = 0;
    /** Where the written list's parts sit in the block; `numbers` as an f64 index. */
    private items: Pointer = 0;
    private fault: Pointer = 0;
    private entities: Pointer = 0;
    /** Where the written list's numbers start, as an f64 index. */
    private numbersAt = 0;
    private archetype = -1;
    private withValues = false;
    /** True when JS addresses the cell of every value (access.ts): a spawn outside a run writes them. */
    private direct = false;
    /** Per value: log2 of its field's element bytes, and its column's offset in the chunks of `placedIn`. */
    private readonly shifts: number[] = [];
    private readonly offsets: number[] = [];
    /** Per value, its type's array of the whole memory (empty until a spawn outside a run; detached once memory grew). */
    private arrays: TypedArrayOf[FieldType][] = [];
    /** The archetype (a pointer) whose column offsets `offsets` holds; 0: none yet. */
    private placedIn: Pointer = 0;
    private planned = false;
    /** The world's access epoch when the plan was made: ids and archetype hold while it does. */
    private epoch = -1;
    /**
     * A view of memory and the u32 index of the world's access epoch in it. Once memory grew the
     * view is detached, of length 0 (see Heap's views).
     */
    private u32: Uint32Array = new Uint32Array(0);
    private epochAt = 0;

    /**
     * Spawns these items as planned: the entity; or, when a value read is not a number, the
     * world's item list filled with the values read (the general path goes on with it and
     * throws the error it finds); or undefined when the items are not the planned shape (then
     * nothing was read).
     */
    spawn(world: World, items: readonly unknown[], operation: string): Entity | ItemList | undefined {
        if (!this.planned) return undefined;
        if ((this.u32.length === 0 || this.u32[this.epochAt] !== this.epoch) && !this.current(world)) return undefined;
        const definitions = this.definitions;
        if (items.length !== definitions.length) return undefined;
        const heap = world.heap;
        if (!this.withValues) {
            for (let i = 0; i < items.length; i++) if (items[i] !== definitions[i]) return undefined;
            const recorded = world.recorder.spawn(this.archetype, 0, this.valueIds, this.valueFields, this.numbers);
            if (recorded !== 0) return recorded;
            // A refusal (out of memory) goes down the general path, which says why.
            const scratch = heap.scratch;
            if (heap.exports.tes_archetype_spawn(world.pointer, this.archetype, 1, scratch) !== 0) return undefined;
            // The spawn may have grown memory (then the view is detached).
            const u32 = this.u32;
            return u32.length !== 0 ? u32[scratch >>> 2]! : heap.u32At(scratch);
        }
        // The shape first, from keys alone (no value is read).
        for (let i = 0; i < items.length; i++) {
            const item = items[i];
            const names = this.names[i];
            if (names === undefined) {
                if (item !== definitions[i]) return undefined;
                continue;
            }
            if (typeof item !== 'object' || item === null || (item as { component?: unknown }).component !== definitions[i])
                return undefined;
            const values: unknown = (item as { values?: unknown }).values;
            if (typeof values !== 'object' || values === null) return undefined;
            let k = 0;
            for (const key in values) {
                if (key !== names[k++] || !hasOwnProperty.call(values, key)) return undefined;
            }
            if (k !== names.length) return undefined;
        }
        // Then each value, read once: numbers into a typed array (no boxing), the values as
        // read once one is not a number (the general path judges them).
        const numbers = this.numbers;
        let v = 0,
            all = true;
        for (let i = 0; i < items.length; i++) {
            const names = this.names[i];
            if (names === undefined) continue;
            const values = (items[i] as { values: Record<string, unknown> }).values;
            for (let k = 0; k < names.length; k++, v++) {
                const value = values[names[k]!];
                if (typeof value === 'number' && all) numbers[v] = value;
                else {
                    if (all) for (let n = 0; n < v; n++) this.read[n] = numbers[n];
                    all = false;
                    this.read[v] = value;
                }
            }
        }
        if (!all) return this.general(world, operation);
        const checks = this.checks;
        let accepted = true;
        for (let n = 0; n < v && accepted; n++) accepted = checks[n]!.accepts(numbers[n]!);
        if (accepted) {
            // A refusal either way goes on to the core's call below, with the values as read.
            const done =
                this.direct && !world.recorder.deferring()
                    ? this.spawnPlaced(world, v)
                    : world.recorder.spawn(this.archetype, v, this.valueIds, this.valueFields, numbers);
            if (done !== 0) return done;
        }
        const f64 = heap.f64;
        for (let n = 0; n < v; n++) f64[this.numbersAt + n] = numbers[n]!;
        const result = heap.exports.tes_spawn_items(world.pointer, this.items, 1, this.entities, this.fault);
        if (result !== 0) {
            // The list's own numbers name the value at fault in the message.
            for (let n = 0; n < v; n++) this.list.setNumber(n, numbers[n]!);
            throw this.list.error(heap, result, this.fault, operation);
        }
        return heap.u32At(this.entities);
    }

    /**
     * Outside a run, with values JS addresses: the core places the entity in the plan's
     * archetype (one call), and JS writes its `count` initial values (each checked already)
     * into the row, as tes_init_number would: part of the spawn, not a change. The row is new,
     * so no consumer has seen it; the spawn stamped it added and told checkpoints and
     * replicators of its index. The row is found once, each value's column from the plan
     * (learned per archetype, whose layout never changes while it lives). A refusal (out of
     * memory) is 0: nothing was spawned.
     */
    private spawnPlaced(world: World, count: number): Entity {
        const heap = world.heap;
        const scratch = heap.scratch;
        if (heap.exports.tes_archetype_spawn(world.pointer, this.archetype, 1, scratch) !== 0) return 0;
        const typed = heap.arrays; // after the call: it may have grown memory
        const u32 = typed.u32;
        const entity = u32[scratch >>> 2]!;
        const pointer = world.pointer;
        const record = placedRecord(u32, (pointer + WORLD.record_count) >>> 2, (pointer + WORLD.records_pages) >>> 2, entity);
        if (record < 0) return this.initialize(world, entity, count); // not placed: never seen, but never a guess
        const chunk = u32[record + RECORD_CHUNK]! >>> 2;
        const archetype = u32[chunk + CHUNK_ARCHETYPE]!;
        if (archetype !== this.placedIn && !this.columns(typed, archetype, count)) return this.initialize(world, entity, count);
        const data = u32[chunk + CHUNK_DATA]!;
        const row = u32[record + RECORD_ROW]!;
        let arrays = this.arrays;
        if (arrays.length === 0 || arrays[0]!.length === 0) arrays = this.arraysOf(typed, count);
        const numbers = this.numbers;
        for (let n = 0; n < count; n++) arrays[n]![((data + this.offsets[n]!) >>> this.shifts[n]!) + row] = numbers[n]!;
        return entity;
    }

    /**
     * Each value's typed array of the whole memory, kept until memory grows (measured: looked
     * up by type name per value, the store cost 5 ns more).
     */
    private arraysOf(typed: Heap['arrays'], count: number): TypedArrayOf[FieldType][] {
        const arrays: TypedArrayOf[FieldType][] = [];
        for (let n = 0; n < count; n++) arrays.push(typed[this.checks[n]!.meta.type]);
        return (this.arrays = arrays);
    }

    /** The core writes each initial value (tes_init_number), as the recorded ones are applied. */
    private initialize(world: World, entity: Entity, count: number): Entity {
        for (let n = 0; n < count; n++) {
            const field = this.valueFields[n]!;
            world.check(
                world.heap.exports.tes_init_number(world.pointer, entity, this.valueIds[n]!, field, 0, this.numbers[n]!),
                'world.spawn',
                entity,
            );
        }
        return entity;
    }

    /**
     * Each value's column offset in the archetype (a pointer) the plan's spawns are placed in;
     * false when it lacks one (the plan's archetype never does: nothing is written by guess).
     */
    private columns(typed: Heap['arrays'], archetype: Pointer, count: number): boolean {
        this.placedIn = 0;
        for (let n = 0; n < count; n++) {
            const offset = columnOffset(typed.u32, typed.u16, archetype, this.valueIds[n]!, this.valueFields[n]!);
            if (offset < 0) return false;
            this.offsets[n] = offset;
        }
        this.placedIn = archetype;
        return true;
    }

    /** After an epoch that read otherwise: a fresh view, and whether the plan still holds. */
    private current(world: World): boolean {
        this.u32 = world.heap.u32;
        this.epochAt = (world.pointer + WORLD.access_epoch) >>> 2;
        return this.u32[this.epochAt] === this.epoch;
    }

    /** Frees the plan's block (its world is going). */
    release(heap: Heap): void {
        if (this.block !== 0) heap.exports.tes_free(this.block);
        this.block = 0;
        this.blockBytes = 0;
        this.planned = false;
    }

    /**
     * The world's list for a planned shape whose values were read but are not all numbers: the
     * items, and each value read (undefined ones left out), checked as the general path checks.
     */
    private general(world: World, operation: string): ItemList {
        const list = world.items.empty();
        const planned = this.list;
        for (let i = 0; i < this.definitions.length; i++) list.add(this.definitions[i] as Definition, 0, undefined, operation);
        for (let v = 0; v < planned.valueCount; v++) {
            const value = this.read[v];
            if (value !== undefined) list.addValue(planned.valueItem(v), planned.valueMeta(v), value, operation);
        }
        return list;
    }

    /**
     * Plans these items after a spawn of them succeeded with `list` (the world's list, ids
     * resolved); left unplanned unless every item is a bare component or one with values of
     * scalar fields. A bare plan's archetype comes from the core (tes_archetype_find), so a
     * spawn inside a loop, whose entity is still pending, plans the next ones too.
     */
    learn(world: World, items: readonly unknown[], list: ItemList): void {
        this.planned = false;
        const names = this.names;
        names.length = 0;
        for (const item of items) {
            const definition = typeof item === 'function' ? item : (item as { component?: unknown } | null)?.component;
            if (typeof definition !== 'function' || ((definition as Definition).flags & (FLAGS.sparse | FLAGS.relation)) !== 0) return;
            if (definition === item) {
                names.push(undefined);
                continue;
            }
            if ((item as { columns?: unknown }).columns !== undefined) return;
            names.push([]);
        }
        for (let v = 0; v < list.valueCount; v++) {
            const meta = list.valueMeta(v);
            if (meta.length !== 1) return;
            names[list.valueItem(v)]!.push(meta.name);
        }
        this.withValues = names.some((given) => given !== undefined);
        const heap = world.heap;
        const at = heap.scratch;
        // The archetype from the core (tes_archetype_find): the ids after the answer's slot, in
        // the scratch block (a longer list stays unplanned).
        if ((items.length + 1) * 4 > SCRATCH_BYTES) return;
        const u32 = heap.u32;
        for (let i = 0; i < items.length; i++) u32[(at >>> 2) + 1 + i] = list.ids[i]!;
        if (heap.exports.tes_archetype_find(world.pointer, at + 4, items.length, at) !== 0) return;
        this.archetype = heap.u32At(at);
        const count = list.valueCount;
        if (count > this.numbers.length) {
            this.numbers = new Float64Array(count);
            this.valueIds = new Uint32Array(count);
            this.valueFields = new Uint32Array(count);
        }
        this.checks.length = 0;
        for (let v = 0; v < count; v++) {
            const item = list.valueItem(v);
            const meta = list.valueMeta(v);
            this.valueIds[v] = list.ids[item]!;
            this.valueFields[v] = meta.index;
            this.checks.push(world.field(list.definitions[item] as Component<any>, meta.name as never) as Field);
        }
        this.direct = this.checks.every(addressed);
        this.shifts.length = this.offsets.length = 0;
        for (const field of this.checks) this.shifts.push(Math.log2(field.meta.bytesPerElement));
        this.placedIn = 0;
        this.arrays = [];
        if (this.withValues) {
            const plan = this.list;
            plan.copyShape(list);
            if (!this.place(world.heap, plan.bytes(1))) return;
            const written = plan.writeAt(world.heap, this.block, 1);
            this.items = written.items;
            this.fault = written.fault;
            this.entities = written.entities;
            this.numbersAt = written.numbers >>> 3;
        }
        this.definitions.length = 0;
        for (let i = 0; i < items.length; i++) {
            const item = items[i];
            this.definitions.push(typeof item === 'function' ? item : (item as { component: unknown }).component);
        }
        this.epoch = world.accessEpoch();
        this.planned = true;
    }

    /** A block of at least `bytes` for the plan's list; false (left unplanned) when memory is short. */
    private place(heap: Heap, bytes: number): boolean {
        if (bytes <= this.blockBytes) return true;
        const size = Math.max(bytes, 256);
        let block: Pointer;
        try {
            block = heap.malloc(size, 'world.spawn');
        } catch {
            return false; // the spawn itself succeeded: only the plan is given up
        }
        this.release(heap);
        this.block = block;
        this.blockBytes = size;
        return true;
    }
}
