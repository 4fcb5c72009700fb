/**
 * Per-entity reads and writes by handle: `world.get` / `world.set` of one field, and
 * `world.field(C, f)`, a handle on one field made once for hot per-entity code.
 *
 * JS finds the entity's cell itself, in wasm memory, with the layout bindings/abi.ts describes
 * (generated from the C sources): the paged entity table, the record's chunk and row, and the
 * archetype's column (learned once per archetype: a layout never changes). A read is then a
 * typed-array load, a write to a chunk that does not track the component a store and nothing
 * else. The core stays the owner of every rule that changes state: a write to a chunk that
 * tracks the component is one call (tes_set_number, which stores and stamps the change), and so
 * is everything JS does not address itself (sparse storage, array fields, change by value).
 * Whatever is not a placed, live entity with the component (not an integer handle, stale,
 * pending, missing, a destroyed world), and any value JS does not take as it stands, goes down
 * the checked path (World's error-reporting calls), which answers or throws exactly as the core
 * says; a refused call has changed nothing, so making it again there is safe.
 *
 * Measured interleaved in one process (100k entities, every 10th by handle; docs/architecture.md
 * has the history): a field handle's read 12 ns and write 14 ns this way, against 18 and 19
 * through one call into wasm each. An earlier JS walk measured slower than the call because
 * every step went through getters, helper frames and a switch per type; this one keeps its
 * views and the archetype's column in the Field and tests only what decides the answer.
 *
 * @module
 */
import { ARCHETYPE, CHUNK, COLUMN, COMPONENT, COMPONENT_FLAGS, LIMITS, RECORD, TRACKING, TYPES, WORLD } from './abi.js';
import type { Heap } from './heap.js';
import type { Pointer } from './load.js';
import type { Registry } from './registry.js';
import { fieldsOf, isDefinition, isRelation, isSparse } from './definitions.js';
import type { Component, Definition, FieldMeta, FieldType, TypedArrayOf } from './schema.js';

const INDEX_MASK = (1 << LIMITS.index_bits) - 1;
const PAGE_MASK = (1 << LIMITS.page_bits) - 1;
/** A record's members as u32 indices from its start. */
const RECORD_CHUNK = RECORD.chunk >>> 2;
const RECORD_ROW = RECORD.row >>> 2;
const RECORD_GENERATION = RECORD.generation >>> 2;
/** The largest finite float: a number beyond it would become infinity in an f32 (loss). */
const F32_MAX = (2 - 2 ** -23) * 2 ** 127;
/** What `Field.address` answers when it finds no cell: the checked path answers, or one call does. */
const NOT_HERE = -1;
const CROSS = -2;

/** A component's Field objects in one world, in schema order. @internal */
export class FieldSet {
    private readonly names: readonly string[];

    constructor(
        readonly component: Component<any>,
        readonly list: readonly Field<any>[],
    ) {
        this.names = list.map((access) => access.name);
    }

    /**
     * The Field of that name. A scan: components have few fields, and comparing a name with
     * the same string (a literal at the call site) is one compare, where a Map costs a hash.
     */
    named(name: string): Field<any> | undefined {
        const names = this.names;
        for (let i = 0; i < names.length; i++) if (names[i] === name) return this.list[i];
        return undefined;
    }
}

/**
 * One world's FieldSets, by definition key, made on first use: what `world.get` / `world.set`
 * of one field and `world.field` find their Field through. @internal
 */
export class WorldFields {
    private readonly sets: (FieldSet | undefined)[] = [];
    /**
     * The latest component asked for and its set: per-entity code asks for one component over
     * and over, and comparing it costs less than reading its key (measured: 9 ns of a 25 ns
     * `world.get`).
     */
    private latest: unknown = undefined;
    private latestSet: FieldSet | undefined = undefined;

    constructor(private readonly owner: FieldOwner) {}

    /** A component's Field objects; undefined for what is not a component (the checked path says why). */
    of(component: unknown): FieldSet | undefined {
        if (component === this.latest) return this.latestSet;
        const key = typeof component === 'function' ? (component as Definition).key : undefined;
        if (key === undefined) return undefined;
        let set = this.sets[key];
        if (set === undefined || set.component !== component) {
            if (!isDefinition(component) || isRelation(component)) return undefined;
            const list = fieldsOf(component).map((meta) => new Field<any>(this.owner, component as Component<any>, meta));
            set = new FieldSet(component as Component<any>, list);
            this.sets[key] = set;
        }
        this.latest = component;
        this.latestSet = set;
        return set;
    }
}

/** What a Field needs of its world. @internal */
export interface FieldOwner {
    /** The `tes_world_t *`; 0 once destroyed. */
    readonly pointer: Pointer;
    readonly heap: Heap;
    readonly registry: Registry;
    /** The checked path: answers or throws exactly as the C core's result says. */
    getChecked(entity: number, component: Component<any>, field: string, operation: string): unknown;
    setChecked(entity: number, component: Component<any>, field: string, value: unknown, operation: string): void;
}

/**
 * One field of one component in one world, read and written per entity by handle:
 * `world.field(Health, 'value')`. Made once, used in hot per-entity code (damage, targeting,
 * UI): `health.get(e)`, `health.set(e, v)` behave exactly as `world.get(e, Health, 'value')` and
 * `world.set(e, Health, 'value', v)`, errors included, without looking the field up by name.
 * Valid as long as its world.
 */
export class Field<V = number> {
    /** The component's id in the world; -1 while it is not registered there. */
    private id = -1;
    /** The registry's generation when `id` was looked up (ids can be taken back). */
    private registrations = -1;
    /**
     * True when JS may address the field itself: a scalar of chunk storage, changed by any
     * write. Array fields, sparse storage and change by value are the core's every time.
     */
    private readonly direct: boolean;
    /** What the field's type holds: integers from low to high, or floats within low and high. */
    private readonly integral: boolean;
    private readonly low: number;
    private readonly high: number;
    /** log2 of the element's bytes: an address >>> shift indexes the field's typed array. */
    private readonly shift: number;
    /** Views of the whole memory, u32 and the field's own type; empty once memory grew. */
    private u32: Uint32Array;
    private view: TypedArrayOf[FieldType];
    /** The latest archetype met and the field's column offset in its chunks (-1: lacks it). */
    private archetype = 0;
    private offset = -1;
    /** The component's position in that archetype's set: its tracker table's index. */
    private type = 0;
    /** The world's registry (the owner's, held here: one load less per call). */
    private readonly registry: Registry;
    /** Bytes of the field's cell. */
    private readonly bytes: number;

    /** @internal Use `world.field(component, name)`. */
    constructor(
        private readonly owner: FieldOwner,
        /** The component. */
        readonly component: Component<any>,
        /** @internal */
        readonly meta: FieldMeta,
    ) {
        this.direct = meta.length === 1 && !isSparse(component) && (component.flags & COMPONENT_FLAGS.change_by_value) === 0;
        const bits = meta.bytesPerElement * 8;
        const kind = meta.type[0];
        this.integral = kind !== 'f';
        this.high = meta.type === 'f32' ? F32_MAX : meta.type === 'f64' ? Infinity : 2 ** (kind === 'i' ? bits - 1 : bits) - 1;
        this.low = this.integral && kind === 'u' ? 0 : -this.high - (kind === 'i' ? 1 : 0);
        this.registry = owner.registry;
        this.bytes = meta.bytesPerElement;
        this.shift = Math.log2(meta.bytesPerElement);
        this.u32 = owner.heap.u32;
        this.view = owner.heap.typed(meta.type);
    }

    /** The field's name. */
    get name(): string {
        return this.meta.name;
    }

    /** The entity's value of this field (a fresh array for array fields). */
    get(entity: number): V {
        const value = this.read(entity);
        return (value !== undefined ? value : this.owner.getChecked(entity, this.component, this.meta.name, 'field.get')) as V;
    }

    /** Writes the entity's value of this field, a change for whoever watches the component. */
    set(entity: number, value: V): void {
        if (!this.write(entity, value)) this.owner.setChecked(entity, this.component, this.meta.name, value, 'field.set');
    }

    /** @internal The value; undefined when the checked path must answer. */
    read(entity: number): number | undefined {
        const address = this.address(entity, false);
        if (address >= 0) return this.view[address >>> this.shift];
        if (address === CROSS) return this.readThrough(entity);
        return undefined;
    }

    /** @internal Writes a number the field holds; false: refused or not answered, nothing written. */
    write(entity: number, value: unknown): boolean {
        if (typeof value !== 'number') return false;
        const address = this.address(entity, true);
        if (address >= 0 && this.accepts(value)) {
            this.view[address >>> this.shift] = value;
            return true;
        }
        // Tracked, or a value the core judges: one call, which stores and stamps, or refuses.
        if (address !== NOT_HERE) return this.writeThrough(entity, value);
        return false;
    }

    /**
     * The byte address of the entity's cell, found in JS over the core's layout (abi.ts), as
     * tesi_record_of and tes_set_number find it: the paged entity table, the record's chunk and
     * row, the archetype's column. CROSS when the core must do the work (a write to a component
     * someone tracks: C stamps the change; sparse storage, array fields, change by value); NOT_HERE when
     * the checked path must answer (not an integer handle, stale, pending, never registered,
     * the entity lacks the component, a destroyed world).
     */
    private address(entity: number, write: boolean): number {
        if (typeof entity !== 'number' || entity >>> 0 !== entity) return NOT_HERE;
        const id = this.resolve();
        const world = this.owner.pointer;
        if (id < 0 || world === 0) return NOT_HERE;
        if (!this.direct) return CROSS;
        let u32 = this.u32;
        if (u32.length === 0) u32 = this.refresh();
        if (write && this.tracked(world, id)) return CROSS;
        const index = entity & INDEX_MASK;
        if (index >= u32[(world + WORLD.record_count) >>> 2]!) return NOT_HERE;
        const page = u32[(u32[(world + WORLD.records_pages) >>> 2]! >>> 2) + (index >>> LIMITS.page_bits)]!;
        if (page === 0) return NOT_HERE;
        const record = (page + (index & PAGE_MASK) * RECORD.size) >>> 2;
        const chunk = u32[record + RECORD_CHUNK]!;
        if (chunk === 0 || u32[record + RECORD_GENERATION] !== entity >>> LIMITS.index_bits) return NOT_HERE;
        const archetype = u32[(chunk + CHUNK.archetype) >>> 2]!;
        if (archetype !== this.archetype) this.learn(archetype, id);
        if (this.offset < 0) return NOT_HERE;
        return u32[(chunk + CHUNK.data) >>> 2]! + this.offset + u32[record + RECORD_ROW]! * this.bytes;
    }

    /**
     * True when someone tracks the component (its level in the core's component record; no
     * chunk has a tracker for an untracked one): such a write goes through the core, which owns
     * the tracker's rules. Tested before the cell is found, so a tracked write costs one call
     * and not a walk as well.
     */
    private tracked(world: Pointer, id: number): boolean {
        const u32 = this.u32;
        const components = u32[(world + WORLD.components) >>> 2]!;
        return u32[(components + id * COMPONENT.size + COMPONENT.level) >>> 2] !== TRACKING.untracked;
    }

    /** Finds the field's column in an archetype (its layout never changes while it lives). */
    private learn(archetype: Pointer, id: number): void {
        const u32 = this.u32;
        const u16 = this.owner.heap.typed('u16');
        this.archetype = archetype;
        this.offset = -1;
        this.type = 0;
        if (id >= u32[(archetype + ARCHETYPE.lookup_length) >>> 2]!) return;
        const type = u16[(u32[(archetype + ARCHETYPE.type_index) >>> 2]! >>> 1) + id]!;
        if (type === LIMITS.no_type) return;
        this.type = type;
        const column = u16[(u32[(archetype + ARCHETYPE.first_column) >>> 2]! >>> 1) + type]! + this.meta.index;
        this.offset = u32[(u32[(archetype + ARCHETYPE.columns) >>> 2]! + column * COLUMN.size + COLUMN.offset) >>> 2]!;
    }

    /** Views of memory after it grew (the old ones are detached). */
    private refresh(): Uint32Array {
        const heap = this.owner.heap;
        this.view = heap.typed(this.meta.type);
        return (this.u32 = heap.u32);
    }

    /**
     * True when the core would store this number in this field as the typed array does:
     * integers within the type's range, any number into f64, and into f32 any number but a
     * finite one beyond float's range (the core refuses that loss). Restates the rule of
     * tesi_encode_number for the measured reason that a crossing costs several times the store
     * (bench/results/latest.md); tests/js/access.test.ts holds both to the same answer on every
     * edge value and on random numbers. A number this refuses goes to the core, which judges.
     */
    private accepts(value: number): boolean {
        if (this.integral) return value >= this.low && value <= this.high && Math.floor(value) === value;
        return !(value > this.high || value < this.low) || value === Infinity || value === -Infinity;
    }

    /** The value in one call (tes_get_number); undefined when the checked path must answer. */
    private readThrough(entity: number): number | undefined {
        if (this.meta.length !== 1) return undefined;
        const heap = this.owner.heap;
        const out = heap.scratch;
        if (heap.exports.tes_get_number(this.owner.pointer, entity, this.id, this.meta.index, 0, out) !== 0) return undefined;
        return heap.f64[out >>> 3]!;
    }

    /** Writes in one call (tes_set_number), which stamps the change; false: refused, nothing written. */
    private writeThrough(entity: number, value: number): boolean {
        if (this.meta.length !== 1) return false;
        return this.owner.heap.exports.tes_set_number(this.owner.pointer, entity, this.id, this.meta.index, 0, value) === 0;
    }

    /** The component's id now, -1 when this world has none (a registration can be taken back). */
    private resolve(): number {
        const registry = this.registry;
        if (this.registrations !== registry.generation) {
            const id = registry.fast(this.component) ?? -1;
            if (id !== this.id) this.archetype = 0;
            this.id = id;
            this.registrations = registry.generation;
        }
        return this.id;
    }
}
