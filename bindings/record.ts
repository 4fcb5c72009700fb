/**
 * Despawns, adds and removes recorded by JS inside a run: appended to the core's recorded
 * command list in place, without a call.
 *
 * Recording is the core's own step done in place: for a placed, live entity and a chunk
 * component, tes_despawn / tes_add / tes_remove inside a run check exactly that and append one
 * command (commands.c, tesi_defer), which the run's end applies in order with every other
 * recorded command. Everything else (not deferring, a pending or stale handle, sparse
 * components and relations, a full command list that must grow) is the core's call, which
 * answers exactly as before. So the order of commands, pending semantics and errors stay the
 * core's; what JS saves is the crossing and the core's checks before the append (measured in
 * docs/architecture.md). The layout numbers are generated from C (abi.ts).
 *
 * @module
 */
import { COMMAND, COMMAND_KIND, COMPONENT, COMPONENT_FLAGS, LIMITS, RECORD, WORLD } from './abi.js';
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
/** A record's size and members in u32 words (its members are u32s). */
const RECORD_WORDS = RECORD.size >>> 2;
const RECORD_CHUNK = RECORD.chunk >>> 2;
const RECORD_GENERATION = RECORD.generation >>> 2;
/** A command's size and members in u32 words (the kind, a byte, is written as its word). */
const COMMAND_WORDS = COMMAND.size >>> 2;
const COMMAND_KIND_WORD = COMMAND.kind >>> 2;
const COMMAND_ENTITY = COMMAND.entity >>> 2;
const COMMAND_A = COMMAND.a >>> 2;
/** The kinds this file records, and the component record's layout it reads, as local consts. */
const DESPAWN = COMMAND_KIND.despawn;
const ADD = COMMAND_KIND.add;
const REMOVE = COMMAND_KIND.remove;
const COMPONENT_SIZE = COMPONENT.size;
const COMPONENT_FLAGS_AT = COMPONENT.flags;
/** Components stored off the chunks: their commands are the core's (sparse.c, relation.c). */
const OFF_CHUNK = COMPONENT_FLAGS.sparse | COMPONENT_FLAGS.relation;

/**
 * The u32 index of a placed, live entity's record, as tesi_record_of finds it; -1 for
 * anything else (stale, pending, never spawned). `countAt` and `pagesAt` are the u32 indices
 * of the world's record count and page table; `entity` is a u32. access.ts's Field keeps its
 * own copy of this walk inline: calling this function from it measured 15-25% slower per
 * field get and set (one process, interleaved), as V8 did not inline it there.
 */
function placedRecord(u32: Uint32Array, countAt: number, pagesAt: number, entity: number): number {
    const index = entity & INDEX_MASK;
    if (index >= u32[countAt]!) return -1;
    const page = u32[(u32[pagesAt]! >>> 2) + (index >>> PAGE_BITS)]!;
    if (page === 0) return -1;
    const record = (page >>> 2) + (index & PAGE_MASK) * RECORD_WORDS;
    if (u32[record + RECORD_CHUNK] === 0 || u32[record + RECORD_GENERATION] !== entity >>> INDEX_BITS) return -1;
    return record;
}

/** Appends deferred commands to one world's recorded list. @internal */
export class Recorder {
    private u32: Uint32Array;
    private readonly countAt: number;
    private readonly pagesAt: number;
    private readonly deferAt: number;
    private readonly componentsAt: number;
    private readonly commandsAt: number;
    private readonly commandCountAt: number;
    private readonly commandSlotsAt: number;

    constructor(
        private readonly heap: Heap,
        world: Pointer,
    ) {
        this.u32 = heap.u32;
        this.countAt = (world + WORLD.record_count) >>> 2;
        this.pagesAt = (world + WORLD.records_pages) >>> 2;
        this.deferAt = (world + WORLD.defer_depth) >>> 2;
        this.componentsAt = (world + WORLD.components) >>> 2;
        this.commandsAt = (world + WORLD.commands) >>> 2;
        this.commandCountAt = (world + WORLD.command_count) >>> 2;
        this.commandSlotsAt = (world + WORLD.command_slots) >>> 2;
    }

    /**
     * Records a despawn, or an add or remove of a registered component id, for a u32 handle,
     * as the core would inside a run; false when the core must take the call (nothing was
     * written). The world is live.
     */
    despawn(entity: number): boolean {
        return this.record(DESPAWN, entity, 0);
    }
    add(entity: number, component: number): boolean {
        return this.record(ADD, entity, component);
    }
    remove(entity: number, component: number): boolean {
        return this.record(REMOVE, entity, component);
    }

    private record(kind: number, entity: number, component: number): boolean {
        let u32 = this.u32;
        if (u32.length === 0) u32 = this.u32 = this.heap.u32; // memory grew: the view detached
        if (u32[this.deferAt] === 0) return false;
        if (placedRecord(u32, this.countAt, this.pagesAt, entity) < 0) return false;
        if (
            kind !== DESPAWN &&
            (u32[(u32[this.componentsAt]! + component * COMPONENT_SIZE + COMPONENT_FLAGS_AT) >>> 2]! & OFF_CHUNK) !== 0
        ) {
            return false;
        }
        const count = u32[this.commandCountAt]!;
        if (count >= u32[this.commandSlotsAt]!) return false;
        const at = (u32[this.commandsAt]! >>> 2) + count * COMMAND_WORDS;
        // The three members these kinds have (the kind's word zeroes its padding); the core
        // reads no other member of a despawn, add or remove (commands.c).
        u32[at + COMMAND_KIND_WORD] = kind;
        u32[at + COMMAND_ENTITY] = entity;
        u32[at + COMMAND_A] = component;
        u32[this.commandCountAt] = count + 1;
        return true;
    }
}
