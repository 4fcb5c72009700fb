/**
 * `Chunk`: one chunk of a run, handed to the loop body. Its views (`column`, `entities`,
 * `rows`) point straight into wasm memory; writes through them are marked here (`markChanged`,
 * deduplicated in JS) and flushed by the iterator when it moves past the chunk.
 *
 * @module
 */
import { ARCHETYPE_INFO, ITER, LIMITS } from './abi.js';
import { TesseraError, describeValue } from './errors.js';
import { guardView, viewProblem } from './heap.js';
import type { Pointer } from './load.js';
import { fieldOf, isDefinition, isSparse } from './definitions.js';
import type { Query } from './query.js';
import { arrayTypes, type ColumnArray, type ColumnOf, type Component, type Definition, type FieldName, type Schema } from './schema.js';
import type { World } from './world.js';

/** Identity rows 0..n-1, shared: `chunk.rows` of unfiltered chunks is a subarray of it. */
let identity = new Uint32Array(0);
function identityRows(count: number): Uint32Array {
    if (identity.length < count) {
        identity = new Uint32Array(Math.max(count, identity.length * 2, 1024));
        for (let i = 0; i < identity.length; i++) identity[i] = i;
    }
    return identity.subarray(0, count);
}

/**
 * Rows marked changed by hand in the current chunk, per component: a JS-side bitmap keeps the
 * list free of duplicates, so it never outgrows the chunk and is flushed in one call.
 */
export class MarkList {
    bits = new Uint8Array(0);
    rows = new Uint32Array(0);
    length = 0;
    whole = false;

    prepare(capacity: number): void {
        if (this.bits.length < capacity) {
            this.bits = new Uint8Array(capacity);
            this.rows = new Uint32Array(capacity);
        }
    }

    clear(): void {
        for (let i = 0; i < this.length; i++) this.bits[this.rows[i]!] = 0;
        this.length = 0;
        this.whole = false;
    }
}

/**
 * One chunk of an iteration: up to a few thousand entities of one archetype, stored as
 * parallel columns. Valid until the iteration moves on.
 *
 * Views (`column`, `entities`, `rows`) point straight into wasm memory. They stay valid for
 * this chunk until a call that may allocate: structural calls inside the loop (spawn, despawn,
 * add, remove, their batch forms) are deferred and may grow memory, which detaches every view.
 * After such a call, ask the chunk again; it is cheap and always answers with live views. In a
 * debug world every view is guarded: using one after growth throws `VIEW_DETACHED`, after
 * the world was destroyed `DESTROYED`. A chunk used after its iteration moved on (or was
 * ended by `world.tick()`) throws `CHUNK_EXPIRED`; after `world.destroy()`, `DESTROYED`.
 */
export class Chunk {
    /** The archetype's id. */
    readonly archetype: number;
    /** The chunk's index in its archetype. */
    readonly index: number;
    /** Occupied rows of the chunk. */
    readonly count: number;
    /** Rows this iteration visits: `count`, or the dirty rows' number when filtered. */
    readonly rowCount: number;
    /** True when only some rows are visited (`rows` lists them). */
    readonly filtered: boolean;

    /** @internal The iteration's row list (`tes_iter_t.rows`), 0 when every row is visited. */
    readonly rowsPointer: Pointer;

    private readonly query: Query;
    private readonly entitiesPointer: Pointer;
    /**
     * Column views handed out: the typed array, and what the caller got (a guard in debug
     * worlds). A few entries per chunk: a list is cheaper to make and search than a Map.
     */
    private readonly views: { component: Definition; field: string; raw: ColumnArray; view: ColumnArray }[] = [];
    /**
     * `entities` and `rows`, made once per chunk (loops read them per row): the typed array,
     * and what the caller got (the same array, or a guard in debug worlds).
     */
    private entitiesRaw: Uint32Array | undefined;
    private entitiesView: Uint32Array | undefined;
    private rowsRaw: Uint32Array | undefined;
    private rowsView: Uint32Array | undefined;
    private readonly marks: Map<number, MarkList>;
    private expired = false;
    /** The component of the latest markChanged and its list: the per-row fast path. */
    private lastMarked: Definition | undefined;
    private lastMarks: MarkList | undefined;

    /** @internal */
    constructor(query: Query, block: Pointer, marks: Map<number, MarkList>) {
        const heap = query.world.heap;
        const u32 = heap.u32;
        this.query = query;
        this.marks = marks;
        this.archetype = u32[(block + ITER.archetype) >>> 2]!;
        this.index = u32[(block + ITER.chunk) >>> 2]!;
        this.count = u32[(block + ITER.count) >>> 2]!;
        this.entitiesPointer = u32[(block + ITER.entities) >>> 2]!;
        this.rowsPointer = u32[(block + ITER.rows) >>> 2]!;
        this.rowCount = u32[(block + ITER.row_count) >>> 2]!;
        this.filtered = this.rowsPointer !== 0;
    }

    /** The entity handles of the chunk, by row (`entities[0..count-1]`). */
    get entities(): Uint32Array {
        this.alive('chunk.entities');
        // A view detached by growth has length 0 (a visited chunk has rows): make it again.
        if (this.entitiesRaw === undefined || this.entitiesRaw.length === 0) {
            const start = this.entitiesPointer >>> 2;
            const raw = this.query.world.heap.u32.subarray(start, start + this.count);
            this.entitiesRaw = raw;
            this.entitiesView = this.guard(raw, 'entities view', 'read chunk.entities again');
        }
        return this.entitiesView!;
    }

    /**
     * The rows to visit, as row numbers into `entities` and the columns: the dirty rows (each
     * once) of a filtered chunk, else `0..count-1`. `for (const row of chunk.rows)` works for
     * both. (Rows, not entity slots: an entity handle's index is another number.)
     */
    get rows(): Uint32Array {
        this.alive('chunk.rows');
        if (this.rowsRaw === undefined || this.rowsRaw.length === 0) {
            const start = this.rowsPointer >>> 2;
            // Unfiltered: rows 0..count-1 from a shared JS array, which growth cannot detach.
            const raw = this.filtered ? this.query.world.heap.u32.subarray(start, start + this.rowCount) : identityRows(this.count);
            this.rowsRaw = raw;
            this.rowsView = this.guard(raw, 'rows view', 'read chunk.rows again');
        }
        return this.rowsView!;
    }

    /**
     * The same array as {@link Chunk.rows}, under its former name.
     * @deprecated Use `chunk.rows`: "slot" also means an entity's index, which this is not.
     */
    get slots(): Uint32Array {
        return this.rows;
    }

    /**
     * A typed-array view of one field over the chunk's rows: element `row` (or
     * `row * length + k` for array fields). Its type follows the schema (`f32` gives a
     * `Float32Array`). Writes through it are not seen by change detection until marked: list
     * the component in the query's `writes`, or call {@link Chunk.markChanged}.
     */
    column<S extends Schema, K extends FieldName<S>>(component: Component<S>, field: K): ColumnOf<S, K> {
        // The views handed out before, found by identity: no lookups when a loop (or a replayed
        // run) asks again. A live chunk implies a live world (destroy expires every chunk).
        // A detached view has length 0 (a visited chunk has rows): memory grew, make it again.
        const views = this.views;
        if (!this.expired) {
            for (let i = 0; i < views.length; i++) {
                const cached = views[i]!;
                if (cached.component === component && cached.field === field && cached.raw.length !== 0) {
                    return cached.view as ColumnOf<S, K>;
                }
            }
        }
        return this.newColumn(component, field);
    }

    /**
     * A view {@link Chunk.column} has not handed out yet (or one memory growth detached). Apart,
     * so that the common path stays small enough for V8 to inline into the caller's loop.
     */
    private newColumn<S extends Schema, K extends FieldName<S>>(component: Component<S>, field: K): ColumnOf<S, K> {
        const views = this.views;
        const operation = 'chunk.column';
        this.alive(operation);
        const world = this.query.world;
        const heap = world.heap;
        const meta = fieldOf(component, fieldName(field, operation, component), operation);
        // A component this world never registered is in no chunk: refused without registering
        // it (a read never registers); a sparse one has no column at all.
        const id = world.registry.known(component, operation);
        if (id === undefined) {
            if (isSparse(component)) throw world.error('SPARSE_COMPONENT', operation, undefined, component.name);
            throw missingFromChunk(world, this.archetype, operation, component, field);
        }
        // A column sits at the same offset from the chunk's start (its entity column) in every
        // chunk of an archetype, so only an archetype's first chunk asks the C core.
        const offsetKey = (this.archetype * LIMITS.max_components + id) * LIMITS.max_fields + meta.index;
        const epoch = world.accessEpoch();
        if (world.columnOffsetsEpoch !== epoch) {
            world.columnOffsets.clear();
            world.columnOffsetsEpoch = epoch;
        }
        let offset = world.columnOffsets.get(offsetKey);
        if (offset === undefined) {
            const out = heap.scratch;
            const result = heap.exports.tes_chunk_column(world.pointer, this.archetype, this.index, id, meta.index, out);
            if (result === heap.results.MISSING_COMPONENT) throw missingFromChunk(world, this.archetype, operation, component, field);
            world.check(result, operation, undefined, component.name, field);
            offset = heap.u32At(out) - this.entitiesPointer;
            world.columnOffsets.set(offsetKey, offset);
        }
        const raw: ColumnArray = new arrayTypes[meta.type](heap.current, this.entitiesPointer + offset, this.count * meta.length);
        const view = this.guard(raw, 'column view', 'call chunk.column() again', component.name, field);
        const entry = { component, field, raw, view };
        const detached = views.findIndex((v) => v.component === component && v.field === field);
        if (detached >= 0) views[detached] = entry;
        else views.push(entry);
        return view as ColumnOf<S, K>;
    }

    /**
     * Marks a component changed: one row (`markChanged(Health, i)`: no call into wasm,
     * duplicates dropped; about 8 ns per row all told), or every visited row
     * (`markChanged(Health)`). Applied in one call when the iteration moves past the chunk.
     */
    markChanged(component: Component<any>, row?: number): void {
        // The hot path: the same component as the previous call in this chunk, a valid row.
        const marks = this.lastMarks;
        if (component === this.lastMarked && marks !== undefined && typeof row === 'number' && row >>> 0 === row && row < this.count) {
            if (marks.bits[row] === 0) {
                marks.bits[row] = 1;
                marks.rows[marks.length++] = row;
            }
            return;
        }
        this.markFirst(component, row);
    }

    /** markChanged's checks, done once per chunk and component. */
    private markFirst(component: Component<any>, row: number | undefined): void {
        const operation = 'chunk.markChanged';
        this.alive(operation);
        const world = this.query.world;
        // Never registered here (undefined): in no chunk, refused without registering it.
        const id = world.registry.known(component, operation);
        if (isSparse(component)) {
            // No column to write through: world.set marks as it writes (world.markChanged for one entity).
            throw world.error('SPARSE_COMPONENT', operation, undefined, component.name);
        }
        if (id === undefined) throw missingFromChunk(world, this.archetype, operation, component, undefined);
        if (!this.query.required.has(component) && !archetypeComponents(world, this.archetype).includes(id)) {
            throw missingFromChunk(world, this.archetype, operation, component, undefined);
        }
        let marks = this.marks.get(id);
        if (marks === undefined) {
            marks = new MarkList();
            this.marks.set(id, marks);
        }
        marks.prepare(this.count);
        this.lastMarked = component;
        this.lastMarks = marks;
        if (row === undefined) {
            marks.whole = true;
            return;
        }
        if (typeof row !== 'number' || row >>> 0 !== row || row >= this.count) {
            throw new TesseraError('INVALID_ARGUMENT', operation, `row ${describeValue(row)} is not in 0..${this.count - 1}`, {
                component: component.name,
            });
        }
        if (marks.bits[row] === 0) {
            marks.bits[row] = 1;
            marks.rows[marks.length++] = row;
        }
    }

    /** @internal A replaying run visits this chunk again (its views still hold). */
    revive(): void {
        this.expired = false;
    }

    /** @internal */
    expire(): void {
        this.expired = true;
        this.lastMarked = undefined; // so that marking through an expired chunk fails
        this.lastMarks = undefined;
    }

    private alive(operation: string): void {
        // The world first: destroying it expires the chunk too, and DESTROYED says why.
        this.query.world.live(operation);
        if (this.expired) {
            throw new TesseraError('CHUNK_EXPIRED', operation, 'the iteration has moved past this chunk');
        }
    }

    /**
     * What a view handed out is: the typed array itself, or in a debug world a guard that
     * throws `DESTROYED` once the world is destroyed and `VIEW_DETACHED` once memory grew.
     */
    private guard<T extends ColumnArray>(raw: T, operation: string, refresh: string, component?: string, field?: string): T {
        const world = this.query.world;
        if (!world.debug) return raw;
        const context = component === undefined ? {} : { component, field };
        return guardView(raw, () => viewProblem(raw, () => world.destroyed, operation, refresh, context));
    }
}

/** A field name from the caller, which plain JavaScript may have left out. */
export function fieldName(field: unknown, operation: string, component: unknown): string {
    if (typeof field !== 'string') {
        const name = isDefinition(component) ? component.name : undefined;
        throw new TesseraError('INVALID_ARGUMENT', operation, `expected a field name, got ${describeValue(field)}`, { component: name });
    }
    return field;
}

/** The C ids of the archetype's components (tes_archetype_info), a view of wasm memory. */
function archetypeComponents(world: World, archetype: number): Uint32Array {
    const heap = world.heap;
    const out = heap.scratch;
    world.check(heap.exports.tes_archetype_info(world.pointer, archetype, out), 'archetype');
    const components = heap.u32At(out + ARCHETYPE_INFO.components) >>> 2;
    return heap.u32.subarray(components, components + heap.u32At(out + ARCHETYPE_INFO.component_count));
}

/**
 * The MISSING_COMPONENT of a chunk whose archetype lacks the component: it is about the chunk
 * (no entity is named), and says which components the chunk does have.
 */
function missingFromChunk(
    world: World,
    archetype: number,
    operation: string,
    component: Definition,
    field: string | undefined,
): TesseraError {
    const names = Array.from(archetypeComponents(world, archetype), (id) => world.componentById(id)?.name ?? `#${id}`);
    return new TesseraError(
        'MISSING_COMPONENT',
        operation,
        `this chunk's archetype has no ${component.name} (its components: ${names.join(', ') || 'none'}); ` +
            `every chunk of a query has the components of its all, added and changed terms, others only where its archetype has them`,
        { component: component.name, field },
    );
}
