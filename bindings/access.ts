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
 * offset of the component's tracking level in the Field, and the layout numbers as constants.
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
const PAGE_BITS = LIMITS.page_bits;
const INDEX_BITS = LIMITS.index_bits;
const RECORD_SIZE = RECORD.size;
const CHUNK_ARCHETYPE = CHUNK.archetype >>> 2;
const CHUNK_DATA = CHUNK.data >>> 2;
/** A record's members as u32 indices from its start. */
const RECORD_CHUNK = RECORD.chunk >>> 2;
const RECORD_ROW = RECORD.row >>> 2;
const RECORD_GENERATION = RECORD.generation >>> 2;
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
    /** The latest two fields asked for by name (`named`), with their components and names. */
    private component0: unknown = undefined;
    private name0 = '';
    private field0: Field<any> | undefined = undefined;
    private component1: unknown = undefined;
    private name1 = '';
    private field1: Field<any> | undefined = undefined;
    private older = 0;

    constructor(private readonly owner: FieldOwner) {}

    /**
     * Archetypes were reclaimed: a freed archetype's address may come back as another one's,
     * so every Field forgets the archetype it learned.
     */
    forgetArchetypes(): void {
        for (const set of this.sets) if (set !== undefined) for (const field of set.list) field.forgetArchetype();
    }

    /**
     * A component's field by name, for `world.get` / `world.set` of one field: the latest one
     * asked for is remembered with its component and name, since per-entity code asks for the
     * same one over and over. undefined when there is none (the checked path says why).
     */
    named(component: unknown, name: string): Field<any> | undefined {
        if (name === this.name0 && component === this.component0) return this.field0;
        if (name === this.name1 && component === this.component1) return this.field1;
        const field = this.of(component)?.named(name);
        if (field === undefined) return undefined;
        // Two remembered (x and y read in turn both stay), the older one replaced.
        if (this.older === 0) {
            this.component0 = component;
            this.name0 = name;
            this.field0 = field;
        } else {
            this.component1 = component;
            this.name1 = name;
            this.field1 = field;
        }
        this.older ^= 1;
        return field;
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
            // The set it replaces leaves `sets`, and with it forgetArchetypes' reach: nothing
            // may hand out its Fields again.
            this.component0 = this.component1 = undefined;
            this.field0 = this.field1 = undefined;
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
    /** False for array fields: they go down the checked path (a number each is no answer). */
    private readonly scalar: boolean;
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
    /** The world's registry (the owner's, held here: one load less per call). */
    private readonly registry: Registry;
    /**
     * Where the component's tracking level is in the core's component array: its byte offset
     * from the array's start. The array itself is read from the world each time: the core moves
     * it when it registers a component, also one JS never asked for (a keyframe's, in
     * applyDelta), so an address kept here could name freed memory.
     */
    private level = 0;
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
        this.scalar = meta.length === 1;
        this.direct = this.scalar && !isSparse(component) && (component.flags & COMPONENT_FLAGS.change_by_value) === 0;
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

    /** @internal Forgets the archetype learned (see {@link WorldFields.forgetArchetypes}). */
    forgetArchetype(): void {
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
        if (typeof entity !== 'number' || entity >>> 0 !== entity) return undefined;
        const id = this.resolve();
        const world = this.owner.pointer;
        if (id < 0 || world === 0) return undefined;
        if (this.direct) {
            const address = this.cell(entity, id, world);
            return address >= 0 ? this.view[address >>> this.shift] : undefined;
        }
        // Storage JS does not address: one call.
        if (!this.scalar) return undefined;
        const heap = this.owner.heap;
        const out = heap.scratch;
        if (heap.exports.tes_get_number(world, entity, id, this.meta.index, 0, out) !== 0) return undefined;
        return heap.f64[out >>> 3]!;
    }

    /** @internal Writes a number the field holds; false: refused or not answered, nothing written. */
    write(entity: number, value: unknown): boolean {
        // An i32 parameter would truncate 1.5 into another entity's handle, and coerce '5'.
        if (typeof value !== 'number' || typeof entity !== 'number' || entity >>> 0 !== entity) return false;
        const id = this.resolve();
        const world = this.owner.pointer;
        if (id < 0 || world === 0) return false;
        // A component nobody tracks (its level in the core's component record: no chunk has a
        // tracker for it), in storage JS addresses: a store, when the value is one the field
        // holds as it stands.
        if (this.direct && !this.tracked(world)) {
            const address = this.cell(entity, id, world);
            if (address < 0) return false;
            if (this.accepts(value)) {
                this.view[address >>> this.shift] = value;
                return true;
            }
        }
        // Tracked (the core stores and stamps the change: it owns the tracker's rules), other
        // storage, or a value the core judges: one call, which stores or refuses.
        return this.scalar && this.owner.heap.exports.tes_set_number(world, entity, id, this.meta.index, 0, value) === 0;
    }

    /**
     * The byte address of a placed, live entity's cell, found in JS over the core's layout
     * (abi.ts) as tesi_record_of and tes_set_number find it: the paged entity table, the
     * record's chunk and row, the archetype's column. -1 when the checked path must answer
     * (stale, pending, never spawned, the entity lacks the component).
     */
    private cell(entity: number, id: number, world: Pointer): number {
        const u32 = this.memory();
        const index = entity & INDEX_MASK;
        if (index >= u32[(world + WORLD_RECORD_COUNT) >>> 2]!) return -1;
        const page = u32[(u32[(world + WORLD_RECORDS_PAGES) >>> 2]! >>> 2) + (index >>> PAGE_BITS)]!;
        if (page === 0) return -1;
        const record = (page + (index & PAGE_MASK) * RECORD_SIZE) >>> 2;
        const chunk = u32[record + RECORD_CHUNK]!;
        if (chunk === 0 || u32[record + RECORD_GENERATION] !== entity >>> INDEX_BITS) return -1;
        const archetype = u32[(chunk >>> 2) + CHUNK_ARCHETYPE]!;
        if (archetype !== this.archetype) this.learn(archetype, id);
        if (this.offset < 0) return -1;
        return u32[(chunk >>> 2) + CHUNK_DATA]! + this.offset + u32[record + RECORD_ROW]! * this.bytes;
    }

    /** True when someone tracks the component: its level in the core's component record. */
    private tracked(world: Pointer): boolean {
        const u32 = this.memory();
        return u32[(u32[(world + WORLD_COMPONENTS) >>> 2]! + this.level) >>> 2] !== UNTRACKED;
    }

    /** Finds the field's column in an archetype (its layout never changes while it lives). */
    private learn(archetype: Pointer, id: number): void {
        const u32 = this.u32;
        const u16 = this.owner.heap.typed('u16');
        this.archetype = archetype;
        this.offset = -1;
        if (id >= u32[(archetype + ARCHETYPE.lookup_length) >>> 2]!) return;
        const type = u16[(u32[(archetype + ARCHETYPE.type_index) >>> 2]! >>> 1) + id]!;
        if (type === LIMITS.no_type) return;
        const column = u16[(u32[(archetype + ARCHETYPE.first_column) >>> 2]! >>> 1) + type]! + this.meta.index;
        this.offset = u32[(u32[(archetype + ARCHETYPE.columns) >>> 2]! + column * COLUMN.size + COLUMN.offset) >>> 2]!;
    }

    /** The u32 view of memory, made again when memory grew (a detached view has length 0). */
    private memory(): Uint32Array {
        const u32 = this.u32;
        return u32.length !== 0 ? u32 : this.refresh();
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
     * Also the check of the initial values a spawn records in a run (entities.ts). @internal
     */
    accepts(value: number): boolean {
        if (this.integral) return value >= this.low && value <= this.high && Math.floor(value) === value;
        return !(value > this.high || value < this.low) || value === Infinity || value === -Infinity;
    }

    /** The component's id now, -1 when this world has none (a registration can be taken back). */
    private resolve(): number {
        const registry = this.registry;
        if (this.registrations !== registry.generation) {
            const id = registry.fast(this.component) ?? -1;
            if (id !== this.id) this.archetype = 0;
            this.id = id;
            this.registrations = registry.generation;
            this.level = id * COMPONENT_SIZE + COMPONENT_LEVEL;
        }
        return this.id;
    }
}
