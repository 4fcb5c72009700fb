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
 * Measured against the one-call design in one process (both builds loaded, interleaved, 100k
 * entities, every 10th by handle; docs/architecture.md has the table): a field handle's read and
 * write take half the time, `world.get` / `world.set` two thirds; a tracked write about 12% more
 * (its level is read first). An earlier JS walk measured slower than the call because every
 * step went through getters, helper frames, a switch per type and the layout's numbers read
 * from abi.ts's objects on every call; this one keeps its views, the archetype's column and the
 * address of the component's tracking level in the Field, and the layout numbers as constants.
 *
 * @module
 */
import { ARCHETYPE, CHUNK, COLUMN, COMPONENT, COMPONENT_FLAGS, LIMITS, TRACKING, WORLD } from './abi.js';
import { placedRecord, RECORD_CHUNK, RECORD_ROW } from './record.js';
import type { Heap } from './heap.js';
import type { Pointer } from './load.js';
import type { Registry } from './registry.js';
import { fieldsOf, isDefinition, isRelation, isSparse } from './definitions.js';
import type { Component, Definition, FieldMeta, FieldType, TypedArrayOf } from './schema.js';

/**
 * The layout numbers the hot paths use, as plain constants: read from abi.ts's objects on every
 * call they cost a load each (measured: the tracking test's two loads took 5 ns).
 */
const WORLD_RECORD_COUNT = WORLD.record_count;
const WORLD_RECORDS_PAGES = WORLD.records_pages;
const WORLD_COMPONENTS = WORLD.components;
const COMPONENT_SIZE = COMPONENT.size;
const COMPONENT_LEVEL = COMPONENT.level;
const UNTRACKED = TRACKING.untracked;
const CHUNK_ARCHETYPE = CHUNK.archetype >>> 2;
const CHUNK_DATA = CHUNK.data >>> 2;
/** The largest finite float: a number beyond it would become infinity in an f32 (loss). */
const F32_MAX = (2 - 2 ** -23) * 2 ** 127;

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

    /**
     * Every Field forgets what it found: archetypes were reclaimed (a freed archetype's address
     * may come back as another one's), or the world is destroyed.
     */
    forget(): void {
        for (const set of this.sets) if (set !== undefined) for (const field of set.list) field.forget();
    }

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
    /**
     * True when JS may address the field itself: a scalar of chunk storage, changed by any
     * write. Array fields, sparse storage and change by value are the core's every time.
     */
    private readonly direct: boolean;
    /** False for array fields: they go down the checked path (a number each is no answer). */
    private readonly scalar: boolean;
    /** What the field's type holds: integers from low to high, or floats within low and high. */
    private readonly integral: boolean;
    private readonly low: number;
    private readonly high: number;
    /** log2 of the element's bytes: an address >>> shift indexes the field's typed array. */
    private readonly shift: number;
    /** The world's registry (the owner's, held here: one load less per call). */
    private readonly registry: Registry;
    /**
     * What the hot path needs, found by {@link prepare} and kept while nothing it depends on
     * moves: the registry's generation it was found at (-1: find again), the component's id,
     * the u32 indices of the world's entity count, of its table of record pages and of the
     * component's tracking level, the views of memory, and the latest archetype met with the
     * field's column offset in its chunks (-1: the archetype lacks the component).
     */
    private registrations = -1;
    private id = -1;
    private countAt = 0;
    private pagesAt = 0;
    private levelAt = 0;
    private u32: Uint32Array;
    private view: TypedArrayOf[FieldType];
    private archetype = 0;
    private offset = -1;

    /** @internal Use `world.field(component, name)`. */
    constructor(
        private readonly owner: FieldOwner,
        /** The component. */
        readonly component: Component<any>,
        /** @internal */
        readonly meta: FieldMeta,
    ) {
        this.scalar = meta.length === 1;
        this.direct = this.scalar && !isSparse(component) && (component.flags & COMPONENT_FLAGS.change_by_value) === 0;
        const bits = meta.bytesPerElement * 8;
        const kind = meta.type[0];
        this.integral = kind !== 'f';
        this.high = meta.type === 'f32' ? F32_MAX : meta.type === 'f64' ? Infinity : 2 ** (kind === 'i' ? bits - 1 : bits) - 1;
        this.low = this.integral && kind === 'u' ? 0 : -this.high - (kind === 'i' ? 1 : 0);
        this.registry = owner.registry;
        this.shift = Math.log2(meta.bytesPerElement);
        this.u32 = owner.heap.u32;
        this.view = owner.heap.typed(meta.type);
    }

    /**
     * @internal Forgets everything found (see {@link WorldFields.forget}): archetypes were
     * reclaimed (a freed one's address may come back as another's), or the world is destroyed.
     */
    forget(): void {
        this.registrations = -1;
        this.archetype = 0;
        this.offset = -1;
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
        if (this.registrations !== this.registry.generation && !this.prepare()) return undefined;
        if (this.u32.length === 0) this.refresh();
        if (this.direct) {
            const address = this.cell(entity);
            return address >= 0 ? this.view[address >>> this.shift] : undefined;
        }
        // Storage JS does not address: one call.
        if (!this.scalar || typeof entity !== 'number' || entity >>> 0 !== entity) return undefined;
        const heap = this.owner.heap;
        const out = heap.scratch;
        if (heap.exports.tes_get_number(this.owner.pointer, entity, this.id, this.meta.index, 0, out) !== 0) return undefined;
        return heap.f64[out >>> 3]!;
    }

    /** @internal Writes a number the field holds; false: refused or not answered, nothing written. */
    write(entity: number, value: unknown): boolean {
        // An i32 parameter would truncate 1.5 into another entity's handle, and coerce '5'.
        if (typeof value !== 'number') return false;
        if (this.registrations !== this.registry.generation && !this.prepare()) return false;
        if (this.u32.length === 0) this.refresh();
        // A component nobody tracks (its level in the core's component record: no chunk has a
        // tracker for it), in storage JS addresses: a store, when the value is one the field
        // holds as it stands.
        if (this.direct && this.u32[this.levelAt] === UNTRACKED && this.accepts(value)) {
            const address = this.cell(entity);
            if (address < 0) return false;
            this.view[address >>> this.shift] = value;
            return true;
        }
        // Tracked (the core stores and stamps the change: it owns the tracker's rules), other
        // storage, or a value the core judges: one call, which stores or refuses.
        if (!this.scalar || typeof entity !== 'number' || entity >>> 0 !== entity) return false;
        return this.owner.heap.exports.tes_set_number(this.owner.pointer, entity, this.id, this.meta.index, 0, value) === 0;
    }

    /**
     * The byte address of a placed, live entity's cell, found in JS over the core's layout
     * (abi.ts) as tesi_record_of and tes_set_number find it: the paged entity table, the
     * record's chunk and row, the archetype's column. -1 when the checked path must answer
     * (not a handle, stale, pending, never spawned, the entity lacks the component). The
     * caller has made the views again if memory grew (a detached view has length 0).
     */
    private cell(entity: number): number {
        const u32 = this.u32;
        // A handle is a u32; anything else (1.5, -1, '5', 2 ** 32) is the checked path's.
        if (typeof entity !== 'number' || entity >>> 0 !== entity) return -1;
        const record = placedRecord(u32, this.countAt, this.pagesAt, entity);
        if (record < 0) return -1;
        const chunk = u32[record + RECORD_CHUNK]! >>> 2;
        const archetype = u32[chunk + CHUNK_ARCHETYPE]!;
        if (archetype !== this.archetype) this.learn(archetype);
        const offset = this.offset;
        if (offset < 0) return -1;
        return u32[chunk + CHUNK_DATA]! + offset + (u32[record + RECORD_ROW]! << this.shift);
    }

    /** Finds the field's column in an archetype (its layout never changes while it lives). */
    private learn(archetype: Pointer): void {
        const u32 = this.u32;
        const u16 = this.owner.heap.typed('u16');
        const id = this.id;
        this.archetype = archetype;
        this.offset = -1;
        if (id >= u32[(archetype + ARCHETYPE.lookup_length) >>> 2]!) return;
        const type = u16[(u32[(archetype + ARCHETYPE.type_index) >>> 2]! >>> 1) + id]!;
        if (type === LIMITS.no_type) return;
        const column = u16[(u32[(archetype + ARCHETYPE.first_column) >>> 2]! >>> 1) + type]! + this.meta.index;
        this.offset = u32[(u32[(archetype + ARCHETYPE.columns) >>> 2]! + column * COLUMN.size + COLUMN.offset) >>> 2]!;
    }

    /** Views of memory after it grew (the old ones are detached, with length 0). */
    private refresh(): void {
        const heap = this.owner.heap;
        this.view = heap.typed(this.meta.type);
        this.u32 = heap.u32;
    }

    /**
     * Finds what the hot path needs after a registration (ids can be taken back, and the
     * component records move only when one is registered, which bumps the generation) or a
     * {@link forget}; false when the checked path must answer (the world has no such
     * component, or is destroyed).
     */
    private prepare(): boolean {
        const registry = this.registry;
        const world = this.owner.pointer;
        const id = world !== 0 ? (registry.fast(this.component) ?? -1) : -1;
        if (id < 0) return false;
        if (id !== this.id) this.archetype = 0;
        this.id = id;
        if (this.u32.length === 0) this.refresh();
        this.countAt = (world + WORLD_RECORD_COUNT) >>> 2;
        this.pagesAt = (world + WORLD_RECORDS_PAGES) >>> 2;
        this.levelAt = (this.u32[(world + WORLD_COMPONENTS) >>> 2]! + id * COMPONENT_SIZE + COMPONENT_LEVEL) >>> 2;
        this.registrations = registry.generation;
        return true;
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
}
