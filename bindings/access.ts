/**
 * Per-entity reads and writes by handle: `world.get` / `world.set` of one field, and
 * `world.field(C, f)`, a handle on one field made once for hot per-entity code.
 *
 * JS finds the entity's cell itself, in wasm memory, with the layout bindings/abi.ts describes
 * (generated from the C sources): the paged entity table, the record's chunk and row, and the
 * archetype's column. A read is then a typed-array load, a write to a component nobody tracks a
 * store and nothing else. What a Field keeps between calls (the component's id, whether it is
 * tracked, the latest archetype's column) holds while the core's access epoch
 * (tes_world_t.access_epoch) does: the core bumps it on every registration, tracking level and
 * freed archetype, so a call checks one number where it would check each; memory growth is
 * the length of its detached view, 0 (see Heap's views). The core stays the owner of every rule
 * that changes state: a write to a tracked component is a store after one call that stamps the
 * change (tes_mark_changed), and everything JS does not address itself (sparse storage, array
 * fields, change by value) is one call. Whatever is not a placed, live entity with the component
 * (not an integer handle, stale, pending, missing, a destroyed world), and any value JS does not
 * take as it stands, goes down the checked path (World's error-reporting calls), which answers
 * or throws exactly as the core says; a refused call has changed nothing, so making it again
 * there is safe.
 *
 * Measured (bench/results/latest.md, and one process at 100k entities, every 10th by handle):
 * the walk alone, written inline, costs 5-7 ns a write; a field handle's write 8.4 ns in
 * set_heavy, more once any ArrayBuffer of the process was detached (as wasm memory growth
 * does: V8 then checks every typed-array access for a detached buffer, in all code). The hot
 * methods are kept small (one `cell` call site each, slow ways out of line) so that V8 inlines
 * them into the caller's loop; a second call site of `cell` in `write` kept it out, and cost
 * 2-5 ns a call. What a Field keeps is stored once where it can be (see `learnId`): V8 then
 * compiles it as a constant into code that holds the Field in a `const`.
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
const WORLD_ACCESS_EPOCH = WORLD.access_epoch;
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

/** `Object.prototype.hasOwnProperty`, held here: the values of a whole-component write are own keys only. */
const hasOwnProperty = Object.prototype.hasOwnProperty;

/** A component's Field objects in one world, in schema order. @internal */
export class FieldSet {
    private readonly names: readonly string[];
    /** True when JS addresses every field (scalars of chunk storage, changed by any write) and there is one. */
    private readonly direct: boolean;
    /**
     * An object with every field, in schema order: a read copies it and overwrites each field
     * (measured: 8 of 71 ns less than adding the fields one by one to an empty object).
     */
    private readonly template: Record<string, number>;
    /** A whole-component write's keys and values as read, and the chosen fields' cells (reused). */
    private readonly keys: string[] = [];
    private readonly values: unknown[] = [];
    private readonly chosen: Field<any>[] = [];
    private readonly cells: number[] = [];
    private readonly numbers: number[] = [];

    constructor(
        readonly component: Component<any>,
        readonly list: readonly Field<any>[],
    ) {
        this.names = list.map((access) => access.name);
        this.direct = list.length !== 0 && list.every(addressed);
        const template: Record<string, number> = {};
        for (const name of this.names) template[name] = 0;
        this.template = template;
    }

    /**
     * `world.get(e, C)` found and read in JS: every field into a fresh object; undefined when the
     * checked path must answer (a field JS does not address, or an entity it did not find
     * placed and live with the component). A read changes nothing, so the checked path may
     * read again.
     */
    read(entity: number): Record<string, number> | undefined {
        if (!this.direct) return undefined;
        const list = this.list;
        const names = this.names;
        const values = { ...this.template };
        for (let i = 0; i < list.length; i++) {
            const value = list[i]!.read(entity);
            if (value === undefined) return undefined;
            values[names[i]!] = value;
        }
        return values;
    }

    /**
     * `world.set(e, C, values)` done in JS, all or nothing: true when written. Otherwise nothing
     * was written, and the checked path must answer: with the caller's values when they were
     * not read (undefined: not a handle, fields JS does not address), or with the returned
     * object, the values as read (each own key's value is read once, as the checked path reads
     * them, so a getter is not run twice). Every value must be a number its field takes and the
     * entity placed and live with the component; a tracked component is stamped changed once
     * (tes_mark_changed), before the stores.
     */
    write(entity: number, values: object): true | Record<string, unknown> | undefined {
        if (!this.direct || !isHandle(entity)) return undefined;
        const keys = this.keys;
        const read = this.values;
        let n = 0;
        for (const key in values) {
            if (!hasOwnProperty.call(values, key)) continue;
            keys[n] = key;
            read[n++] = (values as Record<string, unknown>)[key];
        }
        const chosen = this.chosen;
        const cells = this.cells;
        let m = 0;
        for (let i = 0; i < n; i++) {
            const value = read[i];
            if (value === undefined) continue; // keeps its value
            const field = this.named(keys[i]!);
            if (field === undefined || typeof value !== 'number' || !field.accepts(value)) return this.asRead(n);
            const cell = field.address(entity);
            if (cell < 0) return this.asRead(n);
            chosen[m] = field;
            this.numbers[m] = value;
            cells[m++] = cell;
        }
        // Nothing to write still checks the handle (the checked path's).
        if (m === 0 || !chosen[0]!.stamp(entity)) return this.asRead(n);
        for (let i = 0; i < m; i++) chosen[i]!.put(cells[i]!, this.numbers[i]!);
        return true;
    }

    /** The first n values as read, by key, for the checked path. */
    private asRead(n: number): Record<string, unknown> {
        const values: Record<string, unknown> = {};
        for (let i = 0; i < n; i++) values[this.keys[i]!] = this.values[i];
        return values;
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

    /** The world is destroyed: every Field learns again, and finds it gone. */
    forget(): void {
        for (const set of this.sets) if (set !== undefined) for (const field of set.list) field.forget();
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
            const list = fieldsOf(component).map((meta) => makeField(this.owner, component as Component<any>, meta));
            set = new FieldSet(component as Component<any>, list);
            // The set it replaces leaves `sets`, and with it forget's reach: nothing may hand
            // out its Fields again.
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

/** True for a number that may be a handle: a u32 (a bigint would throw in `>>>`). */
const isHandle = (entity: unknown): entity is number => typeof entity === 'number' && entity >>> 0 === entity;

/** `cell`'s answer when what the Field learned may be stale: learn again, then ask again. */
const STALE = -2;

/**
 * One field of one component in one world, read and written per entity by handle:
 * `world.field(Health, 'value')`. Made once, used in hot per-entity code (damage, targeting,
 * UI): `health.get(e)`, `health.set(e, v)` behave exactly as `world.get(e, Health, 'value')` and
 * `world.set(e, Health, 'value', v)`, errors included, without looking the field up by name.
 * Valid as long as its world.
 */
export class Field<V = number> {
    /**
     * The world's access epoch (tes_world_t.access_epoch) when this Field learned what follows;
     * -1, which no u32 equals, when it must learn first. The core bumps the epoch whenever any
     * of it may be stale (a registration, a tracking level, a freed archetype), so a call checks
     * one number where it would check each.
     */
    private epoch = -1;
    /** The world's `tes_world_t *` at that epoch. */
    private world: Pointer;
    /** The component's id in the world. */
    private id = -1;
    /** True when a write is a store alone: nobody tracks the component. */
    private plain = false;
    /** The latest archetype met that has the component, and the field's column offset in its chunks (0 and -1: none yet). */
    private archetype = 0;
    private offset = -1;
    /** False for array fields: they go down the checked path (a number each is no answer). */
    private readonly scalar: boolean;
    /** What the field's type holds: integers from low to high, or floats within low and high. */
    private readonly integral: boolean;
    private readonly low: number;
    private readonly high: number;
    /** log2 of the element's bytes: an address >>> shift indexes the field's typed array. */
    private readonly shift: number;
    /** Bytes of the field's cell. */
    private readonly bytes: number;
    /**
     * Views of the whole memory, u32 and the field's own type. Once memory grew they are
     * detached, of length 0: the next call learns.
     */
    private u32: Uint32Array;
    private view: TypedArrayOf[FieldType];
    private readonly exports: Heap['exports'];

    /** @internal Use `world.field(component, name)`. */
    constructor(
        private readonly owner: FieldOwner,
        /** The component. */
        readonly component: Component<any>,
        /** @internal */
        readonly meta: FieldMeta,
    ) {
        this.scalar = meta.length === 1;
        const bits = meta.bytesPerElement * 8;
        const kind = meta.type[0];
        this.integral = kind !== 'f';
        this.high = meta.type === 'f32' ? F32_MAX : meta.type === 'f64' ? Infinity : 2 ** (kind === 'i' ? bits - 1 : bits) - 1;
        this.low = this.integral && kind === 'u' ? 0 : -this.high - (kind === 'i' ? 1 : 0);
        this.bytes = meta.bytesPerElement;
        this.shift = Math.log2(meta.bytesPerElement);
        this.u32 = owner.heap.u32;
        this.view = owner.heap.typed(meta.type);
        this.world = owner.pointer;
        this.exports = owner.heap.exports;
    }

    /** @internal The world is gone: the next call learns, and finds it destroyed. */
    forget(): void {
        this.epoch = -1;
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
        const address = this.cell(entity);
        return address >= 0 ? this.view[address >>> this.shift] : this.readSlow(entity, address);
    }

    /** @internal Writes a number the field holds; false: refused or not answered, nothing written. */
    write(entity: number, value: unknown): boolean {
        // An i32 parameter would truncate 1.5 into another entity's handle, and coerce '5'.
        if (typeof value !== 'number') return false;
        const address = this.cell(entity);
        if (address >= 0 && this.accepts(value)) return this.store(entity, address, value);
        return this.writeSlow(entity, value, address);
    }

    /**
     * Stores a value the field holds in a live entity's cell. A component somebody tracks is
     * first stamped changed by the core (tes_mark_changed: the tracker's rules are its own), as
     * tes_set_number would after its store; the stamp cannot fail for the cell JS just found,
     * and were it refused nothing would be written. (Storing first, so that the store's cache
     * miss overlaps the call, took set_heavy's tracked row from 0.304-0.368 to 0.288-0.313 ms,
     * but put its untracked `world.set` row, in the same process, at 0.19-0.21 ms against
     * 0.107-0.111 in two of three processes: not kept.)
     */
    private store(entity: number, address: number, value: number): boolean {
        if (!this.plain && this.exports.tes_mark_changed(this.world, entity, this.id) !== 0) return false;
        this.view[address >>> this.shift] = value;
        return true;
    }

    /**
     * @internal For a write of several fields (FieldSet.write): the byte address of a placed,
     * live entity's cell, learning a new epoch first when needed; negative when the checked
     * path must answer.
     */
    address(entity: number): number {
        const address = this.cell(entity);
        return address === STALE && this.learn() ? this.cell(entity) : address;
    }

    /**
     * @internal Stamps the entity's component changed when somebody tracks it (once for a
     * write of several fields, whose cells `address` found); false: refused, nothing stamped.
     */
    stamp(entity: number): boolean {
        return this.plain || this.exports.tes_mark_changed(this.world, entity, this.id) === 0;
    }

    /**
     * @internal Stores a value `accepts` took at an address `address` gave, after `stamp`.
     * (`store` keeps its own two lines: calling these two from it measured the field write of
     * set_heavy 0.12-0.13 -> 0.17 ms a tick, twice, A/B in one session.)
     */
    put(address: number, value: number): void {
        this.view[address >>> this.shift] = value;
    }

    /*
     * The slow ways, out of line so that the fast ones stay small enough to inline into the
     * caller's loop (one cell each: measured, a second call site of cell kept it out).
     */

    /** A read whose cell was not found: learns a new epoch and looks again. */
    private readSlow(entity: number, address: number): number | undefined {
        if (address === STALE && this.learn()) {
            address = this.cell(entity);
            if (address >= 0) return this.view[address >>> this.shift];
        }
        return undefined;
    }

    /** A write whose cell was not found or whose value the core judges. */
    private writeSlow(entity: number, value: number, address: number): boolean {
        if (address === STALE) {
            if (!this.learn()) return false;
            address = this.cell(entity);
            if (address >= 0 && this.accepts(value)) return this.store(entity, address, value);
        }
        return this.writeCore(entity, value);
    }

    /**
     * The core's write, one call (the id is this epoch's), which stores or refuses: storage JS
     * does not address, an entity JS did not find placed (a pending one's write is recorded),
     * or a value the core judges.
     */
    private writeCore(entity: number, value: number): boolean {
        return this.scalar && isHandle(entity) && this.exports.tes_set_number(this.world, entity, this.id, this.meta.index, 0, value) === 0;
    }

    /**
     * The byte address of a placed, live entity's cell, found in JS over the core's layout
     * (abi.ts) as tesi_record_of and tes_set_number find it: the paged entity table, the
     * record's chunk and row, the archetype's column. STALE when the epoch moved on, memory
     * grew, or the field is one JS does not address (its epoch is never learned); -1 when the
     * checked path must answer (not a handle, stale, pending, never spawned, lacking the
     * component, or an entity the live run recorded commands for: its generation word carries
     * their note, TESI_RECORDED_SHIFT, and the core decides whether the write follows them).
     */
    private cell(entity: number): number {
        const u32 = this.u32;
        const world = this.world;
        if (u32.length === 0 || u32[(world + WORLD_ACCESS_EPOCH) >>> 2] !== this.epoch) return STALE;
        if (!isHandle(entity)) return -1;
        const index = entity & INDEX_MASK;
        if (index >= u32[(world + WORLD_RECORD_COUNT) >>> 2]!) return -1;
        const page = u32[(u32[(world + WORLD_RECORDS_PAGES) >>> 2]! >>> 2) + (index >>> PAGE_BITS)]!;
        if (page === 0) return -1;
        const record = (page + (index & PAGE_MASK) * RECORD_SIZE) >>> 2;
        const chunk = u32[record + RECORD_CHUNK]!;
        if (chunk === 0 || u32[record + RECORD_GENERATION] !== entity >>> INDEX_BITS) return -1;
        const archetype = u32[(chunk >>> 2) + CHUNK_ARCHETYPE]!;
        if (archetype !== this.archetype && !this.column(archetype)) return -1;
        return u32[(chunk >>> 2) + CHUNK_DATA]! + this.offset + u32[record + RECORD_ROW]! * this.bytes;
    }

    /**
     * Learns what the epoch vouches for: fresh views, the world, the component's id and whether
     * a write is a store. False for a destroyed world or a component without an id here: the
     * epoch stays unlearned, and the caller goes to the checked path.
     */
    private learn(): boolean {
        if (!this.learnId()) return false;
        const u32 = this.u32;
        const world = this.world;
        const level = u32[(u32[(world + WORLD_COMPONENTS) >>> 2]! + this.id * COMPONENT_SIZE + COMPONENT_LEVEL) >>> 2];
        this.plain = level === UNTRACKED;
        this.epoch = u32[(world + WORLD_ACCESS_EPOCH) >>> 2]!;
        return true;
    }

    /**
     * Fresh views, the world and the component's id; false when there is none. The views and
     * the world are stored only when they differ: V8 compiles a property stored once, and never
     * again (not even with the same value), as a constant into code that knows the object, such
     * as a handle a game holds in a `const`; one more store makes it an ordinary property of
     * every Field from then on. Measured (bench/js, one process each, A/B): a field handle's
     * write 11.4 -> 8.4 ns and read 9.6 -> 6.8 ns in set_heavy / get_heavy, with this and
     * tsconfig's useDefineForClassFields: false (docs/architecture.md, "What V8 folds").
     */
    private learnId(): boolean {
        const heap = this.owner.heap;
        const u32 = heap.u32;
        if (this.u32 !== u32) this.u32 = u32;
        const view = heap.typed(this.meta.type);
        if (this.view !== view) this.view = view;
        const world = this.owner.pointer;
        if (this.world !== world) this.world = world;
        this.epoch = -1;
        this.archetype = 0;
        this.offset = -1;
        // Unregistered until the checked path registers it (or claims it in a restored world).
        this.id = world === 0 ? -1 : (this.owner.registry.fast(this.component) ?? -1);
        return this.id >= 0;
    }

    /**
     * Finds the field's column in an archetype (its layout never changes while it lives) and
     * keeps it; false, keeping nothing, when the archetype lacks the component (so the hot path
     * tests the archetype alone).
     */
    private column(archetype: Pointer): boolean {
        const offset = columnOffset(this.u32, this.owner.heap.typed('u16'), archetype, this.id, this.meta.index);
        if (offset < 0) return false;
        this.archetype = archetype;
        this.offset = offset;
        return true;
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
}

/**
 * A field the core addresses every time (array fields, sparse storage, change by value): its
 * read and write are one call each (array fields go to the checked path), with the id it
 * learned, trusted while the access epoch it learned it at holds. A class of its own, so that
 * `Field`'s fast paths carry no branch for it; its state is its own (Field's stays private, out
 * of the published types).
 */
class CoreField<V = number> extends Field<V> {
    private readonly host: FieldOwner;
    /** The world, the component's id there and the access epoch it was learned at (-1: none). */
    private coreWorld: Pointer = 0;
    private coreId = -1;
    private known = -1;
    /** A view of memory (detached, of length 0, once memory grew). */
    private words: Uint32Array;

    constructor(owner: FieldOwner, component: Component<any>, meta: FieldMeta) {
        super(owner, component, meta);
        this.host = owner;
        this.words = owner.heap.u32;
    }

    /** @internal */
    override forget(): void {
        super.forget();
        this.known = -1;
    }

    /** @internal */
    override read(entity: number): number | undefined {
        if (this.meta.length !== 1 || !this.learned() || !isHandle(entity)) return undefined;
        const heap = this.host.heap;
        const out = heap.scratch;
        if (heap.exports.tes_get_number(this.coreWorld, entity, this.coreId, this.meta.index, 0, out) !== 0) return undefined;
        return heap.f64[out >>> 3]!;
    }

    /** @internal */
    override write(entity: number, value: unknown): boolean {
        if (typeof value !== 'number' || this.meta.length !== 1 || !this.learned() || !isHandle(entity)) return false;
        return this.host.heap.exports.tes_set_number(this.coreWorld, entity, this.coreId, this.meta.index, 0, value) === 0;
    }

    /** True when the id is this epoch's: learned at the epoch the world has now, or again now. */
    private learned(): boolean {
        const world = this.coreWorld;
        const words = this.words;
        if (world !== 0 && world === this.host.pointer && words.length !== 0 && words[(world + WORLD_ACCESS_EPOCH) >>> 2] === this.known) {
            return true;
        }
        const now = (this.coreWorld = this.host.pointer);
        this.words = this.host.heap.u32;
        // Unregistered until the checked path registers it (or claims it in a restored world).
        this.coreId = now === 0 ? -1 : (this.host.registry.fast(this.component) ?? -1);
        this.known = this.coreId >= 0 ? this.words[(now + WORLD_ACCESS_EPOCH) >>> 2]! : -1;
        return this.known !== -1;
    }
}

/**
 * The byte offset in an archetype's chunks (a pointer to it) of field `index` of component
 * `id`, as tesi_column_of finds it; -1 when the archetype lacks the component. @internal
 */
export function columnOffset(u32: Uint32Array, u16: Uint16Array, archetype: Pointer, id: number, index: number): number {
    if (id >= u32[(archetype + ARCHETYPE.lookup_length) >>> 2]!) return -1;
    const type = u16[(u32[(archetype + ARCHETYPE.type_index) >>> 2]! >>> 1) + id]!;
    if (type === LIMITS.no_type) return -1;
    const column = u16[(u32[(archetype + ARCHETYPE.first_column) >>> 2]! >>> 1) + type]! + index;
    return u32[(u32[(archetype + ARCHETYPE.columns) >>> 2]! + column * COLUMN.size + COLUMN.offset) >>> 2]!;
}

/** True for a Field whose cells JS finds and writes itself (the others are the core's every time). @internal */
export function addressed(field: Field<any>): boolean {
    return !(field instanceof CoreField);
}

/**
 * The Field of one component's field in one world: JS addresses a scalar of chunk storage
 * changed by any write; the core, everything else.
 */
function makeField(owner: FieldOwner, component: Component<any>, meta: FieldMeta): Field<any> {
    const direct = meta.length === 1 && !isSparse(component) && (component.flags & COMPONENT_FLAGS.change_by_value) === 0;
    return direct ? new Field<any>(owner, component, meta) : new CoreField<any>(owner, component, meta);
}
