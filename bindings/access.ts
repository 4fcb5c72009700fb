/**
 * Per-entity reads and writes in JavaScript, over the C core's own memory layout (issue 17).
 *
 * A call into wasm costs more than the work of a per-entity get or set, so the common case does
 * not cross: the entity table, the chunk and its archetype's columns are read where the core
 * keeps them, with the layout bindings/abi.ts describes (generated from the C sources). What
 * the fast path cannot answer alone it leaves to the core, which stays the one owner of every
 * rule that changes state: a handle that is not a placed, live entity (stale, pending, not a
 * handle at all), a component the entity lacks, sparse storage, `changeDetection: 'value'`,
 * and any value the fast path does not accept as it stands. Those go down the checked path
 * (`World`'s calls into C), which answers or throws exactly as before; the fast path never
 * refuses and never writes part of anything.
 *
 * Values. The fast path accepts a number when the field stores it exactly (integers: the
 * typed-array round trip, which is the core's rule "integral and in range"), or rounds it as
 * the core does (f32: any number within float's range; f64: any number). Everything else
 * (NaN into an integer, 2.5 into i32, 1e39 into f32, a string) goes to the core, which stores
 * it or refuses it. This restates one rule of tesi_encode_number for the measured reason that
 * a crossing per write costs several times the write (bench/results/core.md); a property
 * test (tests/js/access.test.ts) holds both sides to the same answer on every edge value.
 *
 * Tracking. A write to a component nobody tracks in that chunk is a store and nothing else
 * (the chunk's tracker table, then the component's entry: two loads). A tracked write stamps
 * the change through the core (tes_mark_changed), which owns the tracker's rules.
 *
 * @module
 */
import { ARCHETYPE, CHUNK, COLUMN, LIMITS, RECORD, TYPES, WORLD } from './abi.js';
import type { Heap } from './heap.js';
import type { Pointer } from './load.js';
import { FLAGS, isSparse, type Component, type FieldMeta } from './schema.js';

const INDEX_MASK = (1 << LIMITS.index_bits) - 1;
const PAGE_MASK = (1 << LIMITS.page_bits) - 1;
/** The largest finite float: a number beyond it would become infinity in an f32 (loss). */
const F32_MAX = (2 - 2 ** -23) * 2 ** 127;

/** A component's Field objects in one world, in schema order and by name. @internal */
export interface FieldSet {
    readonly component: unknown;
    readonly list: readonly Field<any>[];
    readonly byName: ReadonlyMap<string, Field<any>>;
}

/** Where each field of a world's archetypes lies: shared by a world's Field objects. @internal */
export class Cells {
    /** The row of the entity the latest `locate` found. */
    row = 0;

    constructor(
        readonly heap: Heap,
        /** The `tes_world_t *` (0 once destroyed). */
        public world: Pointer,
    ) {}

    /**
     * The chunk of a placed, live entity (its row in `row`), or 0: not a handle, stale,
     * pending, or a destroyed world. Reads the paged entity table (src/paged.c) as the core's
     * tesi_record_of does.
     */
    locate(entity: number): Pointer {
        const world = this.world;
        if (world === 0 || typeof entity !== 'number' || entity >>> 0 !== entity) return 0;
        const u32 = this.heap.u32;
        const index = entity & INDEX_MASK;
        if (index >= u32[(world + WORLD.record_count) >>> 2]!) return 0;
        const page = u32[(u32[(world + WORLD.records_pages) >>> 2]! >>> 2) + (index >>> LIMITS.page_bits)]!;
        if (page === 0) return 0;
        const record = page + (index & PAGE_MASK) * RECORD.size;
        const chunk = u32[(record + RECORD.chunk) >>> 2]!;
        if (chunk === 0 || u32[(record + RECORD.generation) >>> 2] !== entity >>> LIMITS.index_bits) return 0;
        this.row = u32[(record + RECORD.row) >>> 2]!;
        return chunk;
    }

    /** The position of a component in an archetype's set, or -1 when it is not there. */
    typeIndex(archetype: Pointer, id: number): number {
        const u32 = this.heap.u32;
        if (id >= u32[(archetype + ARCHETYPE.lookup_length) >>> 2]!) return -1;
        const type = this.heap.u16[(u32[(archetype + ARCHETYPE.type_index) >>> 2]! >>> 1) + id]!;
        return type === LIMITS.no_type ? -1 : type;
    }

    /** Byte offset, from its chunk's start, of a field's column in an archetype that has it. */
    columnOffset(archetype: Pointer, type: number, field: number): number {
        const heap = this.heap;
        const u32 = heap.u32;
        const column = heap.u16[(u32[(archetype + ARCHETYPE.first_column) >>> 2]! >>> 1) + type]! + field;
        return u32[(u32[(archetype + ARCHETYPE.columns) >>> 2]! + column * COLUMN.size + COLUMN.offset) >>> 2]!;
    }

    /** True when the entity is placed, live and its archetype has the component. */
    has(entity: number, id: number): boolean | undefined {
        const chunk = this.locate(entity);
        if (chunk === 0) return undefined;
        return this.typeIndex(this.heap.u32[(chunk + CHUNK.archetype) >>> 2]!, id) >= 0;
    }
}

/**
 * One field of one component in one world, read and written per entity by handle:
 * `world.field(Health, 'value')`. Made once, used in hot per-entity code (damage, targeting,
 * UI): `health.get(e)`, `health.set(e, v)` behave exactly as `world.get(e, Health, 'value')` and
 * `world.set(e, Health, 'value', v)`, errors included, without looking the field up by name.
 * Valid as long as its world: it follows every structural change by itself.
 */
export class Field<V = number> {
    /** The component's id in the world when the cache below was made; -1: not yet. */
    private id = -1;
    private registrations = -1;
    /**
     * By archetype id: the field's column offset from the chunk's start + 1 (0: not looked up
     * yet; -1: the archetype lacks the component), and the component's type index there.
     * Archetypes never change layout, so an entry stays true.
     */
    private offsets = new Int32Array(8);
    private types = new Uint16Array(8);
    /** The chunk and type index of the latest `address` (for `stamp`). */
    private chunk = 0;
    private type = 0;
    private readonly code: number;
    private readonly shift: number;
    private readonly stride: number;
    private readonly direct: boolean;

    /** @internal Use `world.field(component, name)`. */
    constructor(
        private readonly cells: Cells,
        private readonly registered: () => number | undefined,
        private readonly generation: () => number,
        private readonly fallback: {
            get(entity: number, field: Field<any>, operation: string): unknown;
            set(entity: number, field: Field<any>, value: unknown, operation: string): void;
        },
        /** The component. */
        readonly component: Component<any>,
        /** @internal */
        readonly meta: FieldMeta,
    ) {
        this.code = TYPES[meta.type];
        this.shift = Math.log2(meta.bytesPerElement);
        this.stride = meta.bytesPerElement * meta.length;
        // Sparse storage and by-value change detection are the core's to handle, every time.
        this.direct = !isSparse(component) && (component.flags & FLAGS.byValue) === 0;
    }

    /** The field's name. */
    get name(): string {
        return this.meta.name;
    }

    /** The entity's value of this field (a fresh array for array fields). */
    get(entity: number): V {
        const value = this.read(entity);
        return (value !== undefined ? value : this.fallback.get(entity, this, 'field.get')) as V;
    }

    /** Writes the entity's value of this field, a change for whoever watches the component. */
    set(entity: number, value: V): void {
        if (!this.write(entity, value)) this.fallback.set(entity, this, value, 'field.set');
    }

    /** @internal The value, or undefined when the checked path must answer. */
    read(entity: number): number | number[] | undefined {
        const address = this.address(entity);
        if (address < 0) return undefined;
        if (this.meta.length !== 1) {
            const typed = this.cells.heap.typed(this.meta.type);
            const at = address >>> this.shift;
            return Array.from(typed.subarray(at, at + this.meta.length));
        }
        const heap = this.cells.heap;
        // One typed array per case: each access site sees one element kind (monomorphic).
        switch (this.code) {
            case TYPES.f32:
                return heap.f32[address >>> 2]!;
            case TYPES.f64:
                return heap.f64[address >>> 3]!;
            case TYPES.i32:
                return heap.i32[address >>> 2]!;
            case TYPES.u32:
                return heap.u32[address >>> 2]!;
            case TYPES.u8:
                return heap.u8[address]!;
            case TYPES.i8:
                return heap.i8[address]!;
            case TYPES.u16:
                return heap.u16[address >>> 1]!;
            default:
                return heap.i16[address >>> 1]!;
        }
    }

    /** @internal Writes a number the field holds as the core would; false: not done, not touched. */
    write(entity: number, value: unknown): boolean {
        if (typeof value !== 'number' || !this.accepts(value)) return false;
        const address = this.address(entity);
        if (address < 0) return false;
        this.store(address, value);
        this.stamp(entity);
        return true;
    }

    /**
     * @internal True when the core would store this number in this field as the typed array
     * does (see the module comment); false leaves the number to the core, to store or refuse.
     */
    accepts(value: number): boolean {
        if (this.meta.length !== 1) return false;
        switch (this.code) {
            case TYPES.f32:
                return !(value > F32_MAX || value < -F32_MAX) || value === Infinity || value === -Infinity;
            case TYPES.f64:
                return true;
            case TYPES.i32:
                return (value | 0) === value;
            case TYPES.u32:
                return value >>> 0 === value;
            case TYPES.u8:
                return (value & 0xff) === value;
            case TYPES.i8:
                return (value << 24) >> 24 === value;
            case TYPES.u16:
                return (value & 0xffff) === value;
            default:
                return (value << 16) >> 16 === value;
        }
    }

    /** @internal Stores an accepted number at an address `address` gave. */
    store(address: number, value: number): void {
        const heap = this.cells.heap;
        // One typed array per case: each access site sees one element kind (monomorphic).
        switch (this.code) {
            case TYPES.f32:
                heap.f32[address >>> 2] = value;
                return;
            case TYPES.f64:
                heap.f64[address >>> 3] = value;
                return;
            case TYPES.i32:
                heap.i32[address >>> 2] = value;
                return;
            case TYPES.u32:
                heap.u32[address >>> 2] = value;
                return;
            case TYPES.u8:
                heap.u8[address] = value;
                return;
            case TYPES.i8:
                heap.i8[address] = value;
                return;
            case TYPES.u16:
                heap.u16[address >>> 1] = value;
                return;
            default:
                heap.i16[address >>> 1] = value;
        }
    }

    /**
     * @internal After a write to the cell the latest `address` found: the change, stamped by the
     * core when that chunk tracks this component (its tracker table, then the component's entry).
     */
    stamp(entity: number): void {
        const cells = this.cells;
        const u32 = cells.heap.u32;
        const trackers = u32[(this.chunk + CHUNK.trackers) >>> 2]!;
        if (trackers !== 0 && u32[(trackers >>> 2) + this.type] !== 0) {
            cells.heap.exports.tes_mark_changed(cells.world, entity, this.id);
        }
    }

    /**
     * @internal The byte address of the entity's cell of this field, or -1 when the checked path
     * must answer (see the module comment). Notes the chunk and type index for `stamp`.
     */
    address(entity: number): number {
        if (!this.direct) return -1;
        if (this.registrations !== this.generation()) this.resolve();
        if (this.id < 0) return -1;
        const cells = this.cells;
        const chunk = cells.locate(entity);
        if (chunk === 0) return -1;
        const u32 = cells.heap.u32;
        const archetype = u32[(chunk + CHUNK.archetype) >>> 2]!;
        const id = u32[(archetype + ARCHETYPE.id) >>> 2]!;
        let offset = id < this.offsets.length ? this.offsets[id]! : 0;
        if (offset === 0) offset = this.learn(archetype, id);
        if (offset < 0) return -1;
        this.chunk = chunk;
        this.type = this.types[id]!;
        return u32[(chunk + CHUNK.data) >>> 2]! + offset - 1 + cells.row * this.stride;
    }

    /** Looks the field up in an archetype met for the first time (its layout never changes). */
    private learn(archetype: Pointer, id: number): number {
        if (id >= this.offsets.length) {
            const size = Math.max(id + 1, this.offsets.length * 2);
            const offsets = new Int32Array(size);
            offsets.set(this.offsets);
            const types = new Uint16Array(size);
            types.set(this.types);
            this.offsets = offsets;
            this.types = types;
        }
        const cells = this.cells;
        const type = cells.typeIndex(archetype, this.id);
        const offset = type < 0 ? -1 : cells.columnOffset(archetype, type, this.meta.index) + 1;
        this.offsets[id] = offset;
        this.types[id] = type < 0 ? 0 : type;
        return offset;
    }

    /** The component's id now (registrations can be taken back by a failed call). */
    private resolve(): void {
        const id = this.registered();
        this.registrations = this.generation();
        if (id === this.id) return;
        this.id = id ?? -1;
        this.offsets.fill(0);
    }
}
