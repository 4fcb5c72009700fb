/**
 * Spawns, despawns, adds and removes recorded by JS inside a run: appended to the core's
 * recorded command list in place, without a call.
 *
 * Recording is the core's own step done in place: for a placed, live entity and a component
 * that is not a relation (chunk or sparse storage), tes_despawn / tes_add / tes_remove inside a
 * run check exactly that and append one command (commands.c, tesi_defer; sparse.c's
 * tesi_sparse_step for sparse ones), which the run's end applies in order with every other
 * recorded command. Everything else (not deferring, a pending or stale handle, relations,
 * whose removal applies at once, a full command list that must grow) is the core's call, which
 * answers exactly as before. So the order of commands, pending semantics and errors stay the
 * core's; what JS saves is the crossing and the core's checks before the append (measured in
 * docs/architecture.md). The layout numbers are generated from C (abi.ts).
 *
 * A spawn is tesi_defer_spawn done in place: its index comes from the world's handout block,
 * the allocator's next indices that tes_defer_handouts made wait (one call per block), so a
 * spawn gets the index the core would have given it. Its record becomes pending with the
 * archetype it will have, and a SPAWN command follows, then one INIT_NUMBER per initial value
 * (tes_init_number at the flush: the value is part of the spawn, not a change), all checked by
 * the caller first (the plan's shape and each value's range: entities.ts).
 *
 * @module
 */
import { COMMAND, COMMAND_KIND, COMPONENT, COMPONENT_FLAGS, LIMITS, RECORD, RECORDED, ROW, WORLD } from './abi.js';
import type { Heap } from './heap.js';
import type { Pointer } from './load.js';

/**
 * The entity table's layout as plain constants of this module. access.ts defines the same for
 * its Field: importing them from here measured 25-40% slower per field get and set (one
 * process, interleaved; V8 loads an imported binding where a module's own const is folded).
 */
const INDEX_MASK = (1 << LIMITS.index_bits) - 1;
const PAGE_MASK = (1 << LIMITS.page_bits) - 1;
const PAGE_BITS = LIMITS.page_bits;
const INDEX_BITS = LIMITS.index_bits;
/** The generation's bits of a record's generation word (a run notes commands above them). */
const GENERATION_MASK = (1 << LIMITS.generation_bits) - 1;
/** A record's size and members in u32 words (its members are u32s). */
const RECORD_WORDS = RECORD.size >>> 2;
const RECORD_CHUNK = RECORD.chunk >>> 2;
const RECORD_GENERATION = RECORD.generation >>> 2;
/** A command's size and members in u32 words (the kind, a byte, is written as its word). */
const COMMAND_WORDS = COMMAND.size >>> 2;
const COMMAND_KIND_WORD = COMMAND.kind >>> 2;
const COMMAND_ENTITY = COMMAND.entity >>> 2;
const COMMAND_A = COMMAND.a >>> 2;
const COMMAND_B = COMMAND.b >>> 2;
const COMMAND_C = COMMAND.c >>> 2;
const COMMAND_DATA_SIZE = COMMAND.data_size >>> 2;
/** The f64 member, in bytes: commands are 8-aligned (their `value` is a double). */
const COMMAND_VALUE = COMMAND.value;
const RECORD_ROW = RECORD.row >>> 2;
/** The kinds this file records, and the component record's layout it reads, as local consts. */
const SPAWN = COMMAND_KIND.spawn;
const INIT_NUMBER = COMMAND_KIND.init_number;
const DESPAWN = COMMAND_KIND.despawn;
const ADD = COMMAND_KIND.add;
const REMOVE = COMMAND_KIND.remove;
const COMPONENT_SIZE = COMPONENT.size;
const COMPONENT_FLAGS_AT = COMPONENT.flags;
/** Relations: their adds need a target and their removals apply at once (relation.c). */
const RELATION = COMPONENT_FLAGS.relation;
const PENDING = ROW.pending;
/** A placed entity's note of its first recorded add in the live run, above its generation bits. */
const RECORDED_SHIFT = RECORDED.shift;
const RECORDED_MAX = RECORDED.max;
const UNNOTED = 1 << RECORDED_SHIFT;

/**
 * The u32 index of a placed, live entity's record, as tesi_record_of finds it; -1 for
 * anything else (stale, pending, never spawned). `countAt` and `pagesAt` are the u32 indices
 * of the world's record count and page table; `entity` is a u32. Also how a spawn outside a
 * run finds the row it writes (entities.ts). access.ts's Field keeps its own copy of this walk
 * inline: calling this function from it measured 15-25% slower per
 * field get and set (one process, interleaved), as V8 did not inline it there. @internal
 */
export function placedRecord(u32: Uint32Array, countAt: number, pagesAt: number, entity: number): number {
    const index = entity & INDEX_MASK;
    if (index >= u32[countAt]!) return -1;
    const page = u32[(u32[pagesAt]! >>> 2) + (index >>> PAGE_BITS)]!;
    if (page === 0) return -1;
    const record = (page >>> 2) + (index & PAGE_MASK) * RECORD_WORDS;
    if (u32[record + RECORD_CHUNK] === 0 || (u32[record + RECORD_GENERATION]! & GENERATION_MASK) !== entity >>> INDEX_BITS) return -1;
    return record;
}

/** Appends deferred commands to one world's recorded list. @internal */
export class Recorder {
    /**
     * Views of the whole memory. Once memory grew both are detached, of length 0 (see Heap's
     * views): the u32 view's length is tested first.
     */
    private u32: Uint32Array;
    private f64: Float64Array;
    private readonly countAt: number;
    private readonly pagesAt: number;
    private readonly deferAt: number;
    private readonly componentsAt: number;
    private readonly commandsAt: number;
    private readonly commandCountAt: number;
    private readonly commandSlotsAt: number;
    private readonly notedAt: number;
    private readonly notedRecordsAt: number;
    private readonly handoutsAt: number;
    private readonly handoutCountAt: number;
    private readonly handoutNextAt: number;

    constructor(
        private readonly heap: Heap,
        private readonly world: Pointer,
    ) {
        this.u32 = heap.u32;
        this.f64 = heap.f64;
        this.countAt = (world + WORLD.record_count) >>> 2;
        this.pagesAt = (world + WORLD.records_pages) >>> 2;
        this.deferAt = (world + WORLD.defer_depth) >>> 2;
        this.componentsAt = (world + WORLD.components) >>> 2;
        this.commandsAt = (world + WORLD.commands) >>> 2;
        this.commandCountAt = (world + WORLD.command_count) >>> 2;
        this.commandSlotsAt = (world + WORLD.command_slots) >>> 2;
        this.notedAt = (world + WORLD.noted) >>> 2;
        this.notedRecordsAt = (world + WORLD.noted_records) >>> 2;
        this.handoutsAt = (world + WORLD.handouts) >>> 2;
        this.handoutCountAt = (world + WORLD.handout_count) >>> 2;
        this.handoutNextAt = (world + WORLD.handout_next) >>> 2;
    }

    /**
     * Records a spawn into an archetype (an id the core gave for a set of chunk components)
     * with `count` initial values: value v is `values[v]` for field `fields[v]` of component id
     * `components[v]`, each a number its field accepts. The pending handle; 0 when the core
     * must take the call (not deferring, no room, no index left: nothing was written).
     */
    spawn(archetype: number, count: number, components: Uint32Array, fields: Uint32Array, values: Float64Array): number {
        let u32 = this.u32;
        if (u32.length === 0) u32 = this.views(); // memory grew
        if (u32[this.deferAt] === 0) return 0;
        const commands = u32[this.commandCountAt]!;
        if (commands + 1 + count > u32[this.commandSlotsAt]!) return 0;
        let next = u32[this.handoutNextAt]!;
        if (next === u32[this.handoutCountAt]) {
            // A block of the allocator's next indices (its record pages allocated, which can
            // grow memory); none left means the core's call, which says why.
            const heap = this.heap;
            if (heap.exports.tes_defer_handouts(this.world, heap.scratch) !== 0) return 0;
            u32 = this.u32;
            if (u32.length === 0) u32 = this.views();
            if (u32[heap.scratch >>> 2] === 0) return 0;
            next = u32[this.handoutNextAt]!;
        }
        const index = u32[this.handoutsAt + next]!;
        u32[this.handoutNextAt] = next + 1;
        const record = (u32[(u32[this.pagesAt]! >>> 2) + (index >>> PAGE_BITS)]! >>> 2) + (index & PAGE_MASK) * RECORD_WORDS;
        u32[record + RECORD_ROW] = PENDING | archetype;
        const entity = (index | (u32[record + RECORD_GENERATION]! << INDEX_BITS)) >>> 0;
        let at = (u32[this.commandsAt]! >>> 2) + commands * COMMAND_WORDS;
        u32[at + COMMAND_KIND_WORD] = SPAWN;
        u32[at + COMMAND_ENTITY] = entity;
        u32[at + COMMAND_A] = archetype;
        u32[at + COMMAND_DATA_SIZE] = 0; // values follow as their own commands, not as data
        if (count !== 0) {
            const f64 = this.f64;
            for (let v = 0; v < count; v++) {
                at += COMMAND_WORDS;
                u32[at + COMMAND_KIND_WORD] = INIT_NUMBER;
                u32[at + COMMAND_ENTITY] = entity;
                u32[at + COMMAND_A] = components[v]!;
                u32[at + COMMAND_B] = fields[v]!;
                u32[at + COMMAND_C] = 0; // element 0: scalar fields only
                f64[(at * 4 + COMMAND_VALUE) >>> 3] = values[v]!;
            }
        }
        u32[this.commandCountAt] = commands + 1 + count;
        return entity;
    }

    /** True inside a run: structural calls are recorded (or deferred by the core). */
    deferring(): boolean {
        let u32 = this.u32;
        if (u32.length === 0) u32 = this.views(); // memory grew
        return u32[this.deferAt] !== 0;
    }

    /**
     * Records a despawn, or an add or remove of a registered component id, for a u32 handle,
     * as the core would inside a run; false when the core must take the call (nothing was
     * written). The world is live.
     */
    despawn(entity: number): boolean {
        return this.record(DESPAWN, entity, 0) >= 0;
    }
    add(entity: number, component: number): boolean {
        const record = this.record(ADD, entity, component);
        if (record < 0) return false;
        // An add's note, as tesi_note_add_record makes it: where this entity's adds start
        // (internal.h). A generation word below UNNOTED is the generation alone: no note yet.
        // (Here, not in `record`: that grew past what V8 inlines, and every recorded call
        // measured 4-5 ns slower.)
        if (this.u32[record + RECORD_GENERATION]! < UNNOTED) this.note(record, entity);
        return true;
    }
    remove(entity: number, component: number): boolean {
        return this.record(REMOVE, entity, component) >= 0;
    }

    /** The views of memory after it grew (the old ones detached). */
    private views(): Uint32Array {
        this.f64 = this.heap.f64;
        return (this.u32 = this.heap.u32);
    }

    /** The command appended, and the entity's record (a u32 index); -1: the core's call. */
    private record(kind: number, entity: number, component: number): number {
        let u32 = this.u32;
        if (u32.length === 0) u32 = this.views(); // memory grew
        if (u32[this.deferAt] === 0) return -1;
        const record = placedRecord(u32, this.countAt, this.pagesAt, entity);
        if (record < 0) return -1;
        if (
            kind !== DESPAWN &&
            (u32[(u32[this.componentsAt]! + component * COMPONENT_SIZE + COMPONENT_FLAGS_AT) >>> 2]! & RELATION) !== 0
        ) {
            return -1;
        }
        const count = u32[this.commandCountAt]!;
        if (count >= u32[this.commandSlotsAt]!) return -1;
        const at = (u32[this.commandsAt]! >>> 2) + count * COMMAND_WORDS;
        // The three members these kinds have (the kind's word zeroes its padding); the core
        // reads no other member of a despawn, add or remove (commands.c).
        u32[at + COMMAND_KIND_WORD] = kind;
        u32[at + COMMAND_ENTITY] = entity;
        u32[at + COMMAND_A] = component;
        u32[this.commandCountAt] = count + 1;
        return record;
    }

    /**
     * Notes the command just recorded, an add, on the record (a u32 index) of a placed entity
     * that has no note yet, and lists the record for the flush to clear (tesi_note_add_record:
     * the list has room for a record per command slot).
     */
    private note(record: number, entity: number): void {
        const u32 = this.u32;
        const first = u32[this.commandCountAt]!; // the add's index + 1
        u32[record + RECORD_GENERATION] = (entity >>> INDEX_BITS) | ((first < RECORDED_MAX ? first : RECORDED_MAX) << RECORDED_SHIFT);
        const noted = u32[this.notedAt]!;
        u32[(u32[this.notedRecordsAt]! >>> 2) + noted] = record << 2;
        u32[this.notedAt] = noted + 1;
    }
}
