/**
 * Loads `tessera.wasm` and hands out its raw exports: the `tes_*` functions of
 * `src/tessera.h`, compiled with `-sSTANDALONE_WASM --no-entry`.
 *
 * The raw API speaks wasm32 C: every pointer, `size_t` and `uint32_t` is a JS number, `bool`
 * is 0 or 1, and structs live in `memory` (write them through `tes_malloc`ed blocks). Exports
 * return `i32`, so a pointer or `uint32_t` above 2^31 arrives negative: normalise with `>>> 0`.
 * Memory may grow during any call that allocates; every typed-array view made before then is
 * detached (`byteLength === 0`). Re-derive views when `view.buffer !== memory.buffer`.
 *
 * Every structure's size and member offsets, and every constant, are in `abi.js` (bindings/abi.ts,
 * written from the C build by tools/abi.c): the layouts named below are its exports.
 *
 * @module
 */
import { LIMITS, MODULE_MEMORY } from './abi.js';
import { TesseraError, describeValue } from './errors.js';

/** Address in the module's linear memory (byte offset). 0 is NULL. */
export type Pointer = number;

/**
 * A `WebAssembly.Memory`, as the API hands it out: declared here with the members of the DOM
 * lib's `WebAssembly.Memory`, so that the package's types compile where no lib declares
 * `WebAssembly` (Node with `@types/node` and no `"DOM"` lib). Either type is assignable to the
 * other.
 */
export interface WasmMemory {
    /** The memory's bytes; a new `ArrayBuffer` after each growth (views over the old one detach). */
    readonly buffer: ArrayBuffer;
    /** Grows the memory by `delta` 64 KiB pages; returns the previous size in pages. */
    grow(delta: number): number;
}

/**
 * The bytes of a wasm module: an `ArrayBuffer`, or a view of one (a `Uint8Array`, a Node
 * `Buffer`), not shared. The DOM lib's `BufferSource`, declared without it.
 */
export type WasmBytes = ArrayBuffer | ArrayBufferView;

/** `TES_MAX_COMPONENTS`: component ids of a world are below it (cache keys combine them). */
export const TES_MAX_COMPONENTS = LIMITS.max_components;

/**
 * The raw exports of `tessera.wasm`, one per `TES_API` function of `src/tessera.h` (see the
 * header for the meaning of each). `tes_result_t` results are numbers, 0 = `TES_OK`, in the
 * order of the header's `TES_RESULTS` list.
 */
export interface TesseraExports {
    /** Runs the C runtime's constructors. Called once by {@link loadTessera}. */
    _initialize(): void;

    /** `const char *tes_result_name(tes_result_t)`: pointer to a NUL-terminated string. */
    tes_result_name(result: number): Pointer;
    /** `const char *tes_result_message(tes_result_t)`: pointer to a NUL-terminated string. */
    tes_result_message(result: number): Pointer;

    /** `tes_world_create(const tes_world_desc_t *desc, tes_world_t **out_world)`. */
    tes_world_create(desc: Pointer, outWorld: Pointer): number;
    /** `tes_world_destroy(tes_world_t *world)`. */
    tes_world_destroy(world: Pointer): void;
    /** `tes_world_stats(const tes_world_t *world, tes_world_stats_t *out)` (layout: `WORLD_STATS`). */
    tes_world_stats(world: Pointer, out: Pointer): number;
    /** `tes_world_validate(const tes_world_t *world)`. */
    tes_world_validate(world: Pointer): number;

    /** `uint32_t tes_type_size(tes_type_t type)`. */
    tes_type_size(type: number): number;
    /**
     * `tes_component_register(world, const tes_component_desc_t *desc, tes_component_t *out)`.
     * Layouts: `COMPONENT_DESC`, then `FIELD_DESC` per field; flags: `COMPONENT_FLAGS`.
     */
    tes_component_register(world: Pointer, desc: Pointer, outComponent: Pointer): number;
    /** `tes_component_unregister(world, component)`: takes back the latest, unused registration. */
    tes_component_unregister(world: Pointer, component: number): number;
    /** `tes_component_lookup(world, const char *name, tes_component_t *out)`. */
    tes_component_lookup(world: Pointer, name: Pointer, outComponent: Pointer): number;
    /** `tes_component_info(world, component, tes_component_info_t *out)` (layout: `COMPONENT_INFO`). */
    tes_component_info(world: Pointer, component: number, out: Pointer): number;
    /** `tes_field_info(world, component, field, tes_field_info_t *out)`. */
    tes_field_info(world: Pointer, component: number, field: number, out: Pointer): number;
    /** `tes_field_lookup(world, component, const char *name, uint32_t *out_field)`. */
    tes_field_lookup(world: Pointer, component: number, name: Pointer, outField: Pointer): number;

    /** `tes_spawn(world, const tes_component_t *components, count, tes_entity_t *out)`. */
    tes_spawn(world: Pointer, components: Pointer, count: number, outEntity: Pointer): number;
    /** `tes_spawn_batch(world, components, count, n, tes_entity_t *out_entities)`. */
    tes_spawn_batch(world: Pointer, components: Pointer, count: number, n: number, outEntities: Pointer): number;
    /** `tes_despawn(world, entity)`. */
    tes_despawn(world: Pointer, entity: number): number;
    /** `tes_despawn_batch(world, const tes_entity_t *entities, n)`. */
    tes_despawn_batch(world: Pointer, entities: Pointer, n: number): number;
    /** `bool tes_is_alive(world, entity)`: 1 or 0. */
    tes_is_alive(world: Pointer, entity: number): number;

    /** `tes_add(world, entity, component)`. */
    tes_add(world: Pointer, entity: number, component: number): number;
    /** `tes_remove(world, entity, component)`. */
    tes_remove(world: Pointer, entity: number, component: number): number;
    /** `tes_has(world, entity, component, bool *out_has)` (1 byte). */
    tes_has(world: Pointer, entity: number, component: number, outHas: Pointer): number;

    /** `tes_get(world, entity, component, field, void *out, size_t size)`. */
    tes_get(world: Pointer, entity: number, component: number, field: number, out: Pointer, size: number): number;
    /** `tes_set(world, entity, component, field, const void *value, size_t size)`. */
    tes_set(world: Pointer, entity: number, component: number, field: number, value: Pointer, size: number): number;
    /** `tes_get_number(world, entity, component, field, element, double *out)`. */
    tes_get_number(world: Pointer, entity: number, component: number, field: number, element: number, out: Pointer): number;
    /** `tes_set_number(world, entity, component, field, element, double value)`. */
    tes_set_number(world: Pointer, entity: number, component: number, field: number, element: number, value: number): number;
    /** `tes_field_ptr(world, entity, component, field, void **out_ptr)`. */
    tes_field_ptr(world: Pointer, entity: number, component: number, field: number, outPtr: Pointer): number;
    /**
     * `tes_spawn_items(world, const tes_items_t *items, n, tes_entity_t *out_entities,
     * tes_fault_t *out_fault)`: see "Item lists" in src/tessera.h for the layouts.
     */
    tes_spawn_items(world: Pointer, items: Pointer, n: number, outEntities: Pointer, outFault: Pointer): number;
    /** `tes_add_items(world, const tes_entity_t *entities, n, const tes_items_t *items, tes_fault_t *out_fault)`. */
    tes_add_items(world: Pointer, entities: Pointer, n: number, items: Pointer, outFault: Pointer): number;
    /** `tes_set_items(world, entities, n, items, out_fault)`. */
    tes_set_items(world: Pointer, entities: Pointer, n: number, items: Pointer, outFault: Pointer): number;
    /** `tes_remove_items(world, entities, n, items, out_fault)`. */
    tes_remove_items(world: Pointer, entities: Pointer, n: number, items: Pointer, outFault: Pointer): number;
    /** `tes_query_add_items(world, query, items, out_fault)`. */
    tes_query_add_items(world: Pointer, query: Pointer, items: Pointer, outFault: Pointer): number;
    /** `tes_query_remove_items(world, query, items, out_fault)`. */
    tes_query_remove_items(world: Pointer, query: Pointer, items: Pointer, outFault: Pointer): number;
    /** `tes_query_despawn(world, query)`: despawns every entity a plain query visits. */
    tes_query_despawn(world: Pointer, query: Pointer): number;
    /** `tes_location(world, entity, tes_location_t *out)` (layout: `LOCATION`). */
    tes_location(world: Pointer, entity: number, out: Pointer): number;

    /** `uint32_t tes_archetype_count(world)`. */
    tes_archetype_count(world: Pointer): number;
    /** `tes_archetype_info(world, archetype, tes_archetype_info_t *out)` (layout: `ARCHETYPE_INFO`). */
    tes_archetype_info(world: Pointer, archetype: number, out: Pointer): number;
    /** `tes_archetype_find(world, const tes_component_t *components, count, *out)`. */
    tes_archetype_find(world: Pointer, components: Pointer, count: number, outArchetype: Pointer): number;
    /** `tes_chunk_info(world, archetype, chunk, tes_chunk_info_t *out)` (layout: `CHUNK_INFO`). */
    tes_chunk_info(world: Pointer, archetype: number, chunk: number, out: Pointer): number;
    /** `tes_chunk_column(world, archetype, chunk, component, field, void **out_column)`. */
    tes_chunk_column(world: Pointer, archetype: number, chunk: number, component: number, field: number, outColumn: Pointer): number;
    /** `tes_archetypes_reclaim(world, uint32_t *out_reclaimed)`. */
    tes_archetypes_reclaim(world: Pointer, outReclaimed: Pointer): number;
    /** `tes_archetype_spawn(world, archetype, n, tes_entity_t *out_entities)`. */
    tes_archetype_spawn(world: Pointer, archetype: number, n: number, outEntities: Pointer): number;
    /** `tes_archetype_add(world, archetype, component)`. */
    tes_archetype_add(world: Pointer, archetype: number, component: number): number;
    /** `tes_archetype_remove(world, archetype, component)`. */
    tes_archetype_remove(world: Pointer, archetype: number, component: number): number;

    /** `tes_component_tracking(world, component, tes_tracking_t *out)`. */
    tes_component_tracking(world: Pointer, component: number, out: Pointer): number;
    /** `tes_ticks(world, entity, component, uint64_t *added, uint64_t *changed)`. */
    tes_ticks(world: Pointer, entity: number, component: number, outAdded: Pointer, outChanged: Pointer): number;
    /** `tes_mark_changed(world, entity, component)`. */
    tes_mark_changed(world: Pointer, entity: number, component: number): number;
    /** `tes_chunk_mark_changed(world, archetype, chunk, component, const uint32_t *rows, n)`. */
    tes_chunk_mark_changed(world: Pointer, archetype: number, chunk: number, component: number, rows: Pointer, n: number): number;

    /**
     * `tes_query_create(world, const tes_query_desc_t *desc, tes_query_t **out)`. Layouts:
     * `QUERY_DESC` (six (pointer, count) component lists, then pair terms and the relations
     * whose pair changes it reports), `PAIR_TERM` (ops: `TERM`).
     */
    tes_query_create(world: Pointer, desc: Pointer, outQuery: Pointer): number;
    /** `tes_query_destroy(world, query)`. */
    tes_query_destroy(world: Pointer, query: Pointer): void;
    /** `uint64_t tes_query_last_run(query)`: a 64-bit result, so a BigInt. */
    tes_query_last_run(query: Pointer): bigint;
    /** `tes_query_iter(world, query, tes_iter_t *out)` (`ITER.size` bytes, the private part included). */
    tes_query_iter(world: Pointer, query: Pointer, outIter: Pointer): number;
    /** `bool tes_iter_next(tes_iter_t *iter)`: 1 while there is a chunk, 0 at the end. */
    tes_iter_next(iter: Pointer): number;
    /** `tes_iter_fini(tes_iter_t *iter)`. */
    tes_iter_fini(iter: Pointer): void;
    /** `tes_init(world, entity, component, field, const void *value, size)`: not a change. */
    tes_init(world: Pointer, entity: number, component: number, field: number, value: Pointer, size: number): number;
    /** `tes_init_number(world, entity, component, field, element, double)`: not a change. */
    tes_init_number(world: Pointer, entity: number, component: number, field: number, element: number, value: number): number;
    /** `tes_defer_begin(world)`: defer structural calls as a live iteration does. */
    tes_defer_begin(world: Pointer): number;
    /** `tes_defer_end(world)`: the outermost end applies the deferred commands. */
    tes_defer_end(world: Pointer): number;
    /** `tes_defer_handouts(world, &count)`: indices waiting for spawns JS records (record.ts). */
    tes_defer_handouts(world: Pointer, outCount: Pointer): number;
    /** `uint32_t tes_world_layout(world)`: changes whenever rows or chunks move. */
    tes_world_layout(world: Pointer): number;
    /** `tes_iter_column(iter, component, field, void **out_column)`. */
    tes_iter_column(iter: Pointer, component: number, field: number, outColumn: Pointer): number;
    /** `tes_iter_removed(iter, component, const tes_entity_t **out, uint32_t *out_count)`. */
    tes_iter_removed(iter: Pointer, component: number, outEntities: Pointer, outCount: Pointer): number;
    /** `tes_snapshot(world, const uint8_t **out_bytes, uint32_t *out_size)`: a buffer the world owns. */
    tes_snapshot(world: Pointer, outBytes: Pointer, outSize: Pointer): number;
    /** `tes_world_hash(world, uint64_t *out_hash)`: XXH64 of the snapshot's body. */
    tes_world_hash(world: Pointer, outHash: Pointer): number;
    /** `tes_checkpoint(world, uint32_t *out_checkpoint)`. */
    tes_checkpoint(world: Pointer, outCheckpoint: Pointer): number;
    /** `tes_rewind(world, uint32_t checkpoint)`. */
    tes_rewind(world: Pointer, checkpoint: number): number;
    /** `tes_checkpoints(world, uint32_t *out_oldest, uint32_t *out_newest)`. */
    tes_checkpoints(world: Pointer, outOldest: Pointer, outNewest: Pointer): number;
    /** `tes_rollback_stop(world)`. */
    tes_rollback_stop(world: Pointer): number;
    /** `tes_world_restore(const tes_world_desc_t *desc, const uint8_t *bytes, uint32_t size, tes_world_t **out)`. */
    tes_world_restore(desc: Pointer, bytes: Pointer, size: number, outWorld: Pointer): number;
    /** `tes_replicator_create(world, const tes_replicator_desc_t *desc, tes_replicator_t **out)`. */
    tes_replicator_create(world: Pointer, desc: Pointer, outReplicator: Pointer): number;
    /** `tes_replicator_destroy(replicator)`. */
    tes_replicator_destroy(replicator: Pointer): void;
    /**
     * `tes_delta_encode(replicator, uint64_t baseline, const uint8_t **out_bytes, uint32_t
     * *out_size, uint64_t *out_tick)`: the bytes belong to the replicator until its next encode.
     */
    tes_delta_encode(replicator: Pointer, baseline: bigint, outBytes: Pointer, outSize: Pointer, outTick: Pointer): number;
    /** `tes_replicator_release(replicator, uint64_t tick)`: no replica needs an older baseline. */
    tes_replicator_release(replicator: Pointer, tick: bigint): number;
    /** `tes_peer_create(replicator, flags, tes_peer_t **out)`. */
    tes_peer_create(replicator: Pointer, flags: number, out: Pointer): number;
    /** `tes_peer_destroy(peer)`. */
    tes_peer_destroy(peer: Pointer): void;
    /** `tes_peer_show(peer, entity, float priority)`. */
    tes_peer_show(peer: Pointer, entity: number, priority: number): number;
    /** `tes_peer_hide(peer, entity)`. */
    tes_peer_hide(peer: Pointer, entity: number): number;
    /** `tes_peer_sees(peer, entity)`: 1 or 0. */
    tes_peer_sees(peer: Pointer, entity: number): number;
    /** `tes_peer_encode(peer, uint64_t baseline, budget, const uint8_t **out_bytes, uint32_t *out_size, uint64_t *out_tick)`. */
    tes_peer_encode(peer: Pointer, baseline: bigint, budget: number, outBytes: Pointer, outSize: Pointer, outTick: Pointer): number;
    /** `tes_run_reserve(size_t bytes)`: room in the C heap that nothing outgrows until tes_run_release. */
    tes_run_reserve(bytes: number): number;
    /** `size_t tes_run_release(void)`: ends the reserve; returns the bytes taken under it. */
    tes_run_release(): number;
    /** `tes_delta_apply(world, const uint8_t *bytes, uint32_t size, bool *out_applied)`. */
    tes_delta_apply(world: Pointer, bytes: Pointer, size: number, outApplied: Pointer): number;
    /** `uint64_t tes_replica_tick(world)`: a BigInt. */
    tes_replica_tick(world: Pointer): bigint;
    /** `tes_iter_pair_events(iter, relation, const tes_pair_event_t **out, uint32_t *out_count)`. */
    tes_iter_pair_events(iter: Pointer, relation: number, outEvents: Pointer, outCount: Pointer): number;

    /**
     * `tes_query_collect(world, query, tes_collect_t *out)`: one whole run of a consumer query.
     * Layouts: `COLLECT`, `PAIR_EVENT` (kinds: `PAIR_EVENT_KIND`); the arrays belong to the
     * query until its next run.
     */
    tes_query_collect(world: Pointer, query: Pointer, out: Pointer): number;
    /**
     * `tes_query_apply(world, query, const tes_op_t *op, const tes_entity_t **out_entities,
     * uint32_t *out_count)`: one run of the query applying a column operation.
     * Layout: `OP` (k, lo, hi as f64; the rest u32); kinds: `OP_KIND`.
     */
    tes_query_apply(world: Pointer, query: Pointer, op: Pointer, outEntities: Pointer, outCount: Pointer): number;

    /** `tes_pair_add(world, source, relation, target)`: an EXCLUSIVE relation replaces. */
    tes_pair_add(world: Pointer, source: number, relation: number, target: number): number;
    /** `tes_pair_remove(world, source, relation, target)`. */
    tes_pair_remove(world: Pointer, source: number, relation: number, target: number): number;
    /** `tes_pair_has(world, source, relation, target, bool *out_has)` (1 byte). */
    tes_pair_has(world: Pointer, source: number, relation: number, target: number, outHas: Pointer): number;
    /** `tes_pair_targets(world, source, relation, tes_entity_t *out, capacity, uint32_t *out_count)`. */
    tes_pair_targets(world: Pointer, source: number, relation: number, out: Pointer, capacity: number, outCount: Pointer): number;
    /** `tes_pair_sources(world, relation, target, tes_entity_t *out, capacity, uint32_t *out_count)`. */
    tes_pair_sources(world: Pointer, relation: number, target: number, out: Pointer, capacity: number, outCount: Pointer): number;
    /** `tes_pair_target(world, source, relation, tes_entity_t *out_target)`: 0 when none. */
    tes_pair_target(world: Pointer, source: number, relation: number, outTarget: Pointer): number;
    /** `tes_relation_pairs(world, relation, out_sources, out_targets, capacity, uint32_t *out_count)`. */
    tes_relation_pairs(
        world: Pointer,
        relation: number,
        outSources: Pointer,
        outTargets: Pointer,
        capacity: number,
        outCount: Pointer,
    ): number;
    /** `tes_pair_place(world, source, relation, target, before)`: reorders the target's sources. */
    tes_pair_place(world: Pointer, source: number, relation: number, target: number, before: number): number;
    /** `tes_relation_walk(world, relation, root, out, uint32_t *out_depths, capacity, uint32_t *out_count)`. */
    tes_relation_walk(
        world: Pointer,
        relation: number,
        root: number,
        out: Pointer,
        outDepths: Pointer,
        capacity: number,
        outCount: Pointer,
    ): number;
    /** `tes_pair_get_number(world, source, relation, target, field, element, double *out)`. */
    tes_pair_get_number(
        world: Pointer,
        source: number,
        relation: number,
        target: number,
        field: number,
        element: number,
        out: Pointer,
    ): number;
    /** `tes_pair_set_number(world, source, relation, target, field, element, double value)`: a change. */
    tes_pair_set_number(
        world: Pointer,
        source: number,
        relation: number,
        target: number,
        field: number,
        element: number,
        value: number,
    ): number;
    /** `tes_pair_init_number(world, source, relation, target, field, element, double value)`: not a change. */
    tes_pair_init_number(
        world: Pointer,
        source: number,
        relation: number,
        target: number,
        field: number,
        element: number,
        value: number,
    ): number;

    /** `tes_stage_create(world, const char *name, uint32_t *out_stage)`. */
    tes_stage_create(world: Pointer, name: Pointer, outStage: Pointer): number;
    /** `tes_system_create(world, const tes_system_desc_t *desc, tes_system_t **out)`. */
    tes_system_create(world: Pointer, desc: Pointer, outSystem: Pointer): number;
    /** `tes_system_destroy(world, system)`. */
    tes_system_destroy(world: Pointer, system: Pointer): void;
    /** `tes_tick(world)`: runs the due systems stage by stage, then prunes. */
    tes_tick(world: Pointer): number;

    /** `void *tes_malloc(size_t size)`: 16-byte aligned, 0 on failure. */
    tes_malloc(size: number): Pointer;
    /** `void tes_free(void *ptr)`. */
    tes_free(ptr: Pointer): void;
}

/** A loaded, initialised tessera module. */
export interface Tessera {
    /** The raw `tes_*` exports. */
    readonly exports: TesseraExports;
    /** The module's linear memory (made by {@link loadTessera}, imported by the module). */
    readonly memory: WasmMemory;
}

/** Where {@link loadTessera} gets the module from. */
export interface LoadOptions {
    /** The bytes of `tessera.wasm`; when given, `url` is ignored. */
    bytes?: WasmBytes;
    /**
     * Location of `tessera.wasm`. Default: `tessera.wasm` next to this file
     * (`new URL('./tessera.wasm', import.meta.url)`). In Node, `file:` URLs and plain paths are
     * read from disk; anything else is fetched.
     */
    url?: string | URL;
    /**
     * Bytes of the module's memory at start, rounded up to whole 64 KiB pages: from the least
     * the module declares (16 MiB) to 4 GiB. Default {@link DEFAULT_MEMORY_BYTES} (256 MiB), or
     * that least where the platform will not give so much at once. Memory grows past it when
     * the worlds need more, but size it so that it does not: once any `ArrayBuffer` of the page
     * has been detached (a wasm memory's growth detaches its old buffer), V8 tests every
     * typed-array access of all code, the game's own included, for a detached buffer, from then
     * on (measured: loops over typed arrays 20-40% slower). Pages nobody writes cost no
     * physical memory.
     */
    memory?: number;
}

/** The module's memory at start when {@link LoadOptions.memory} does not say: 256 MiB. */
export const DEFAULT_MEMORY_BYTES = 256 * 1024 * 1024;

/** Bytes of a wasm page, and the pages of the largest wasm32 memory (4 GiB). */
const PAGE_BYTES = 64 * 1024;
const MAX_PAGES = 65536;

/**
 * The module's memory, `bytes` long (rounded up to pages) or by default 256 MiB, falling back
 * to the module's least where the platform refuses the default (a 32-bit browser): the default
 * is for speed, not a need. A size asked for and refused is an error.
 */
function makeMemory(bytes: unknown): WebAssembly.Memory {
    const least = MODULE_MEMORY.minimum;
    const most = MAX_PAGES * PAGE_BYTES;
    if (bytes !== undefined && (typeof bytes !== 'number' || !(bytes >= least && bytes <= most))) {
        const expected = `a number of bytes from ${least} (${least / 2 ** 20} MiB) to ${most} (4 GiB)`;
        throw new TesseraError('INVALID_ARGUMENT', 'init', `memory: expected ${expected}, got ${describeValue(bytes)}`);
    }
    const memory = (size: number) => new WebAssembly.Memory({ initial: Math.ceil(size / PAGE_BYTES), maximum: MAX_PAGES });
    try {
        return memory(bytes ?? DEFAULT_MEMORY_BYTES);
    } catch (error) {
        if (!(error instanceof RangeError)) throw error;
        if (bytes !== undefined) {
            throw new TesseraError(
                'OUT_OF_MEMORY',
                'init',
                `memory: the platform would not give ${bytes} bytes at once (${error.message})`,
            );
        }
    }
    return memory(least);
}

/**
 * Loads, instantiates and initialises `tessera.wasm`. Each call makes an independent module
 * instance with its own memory.
 *
 * @example
 * const { exports, memory } = await loadTessera();
 * const worldSlot = exports.tes_malloc(4);
 * exports.tes_world_create(0, worldSlot);
 */
export async function loadTessera(options: LoadOptions = {}): Promise<Tessera> {
    const memory = makeMemory(options.memory);
    const imports: WebAssembly.Imports = {
        env: {
            memory,
            // Memory growth needs no host action: views are re-derived by their users.
            emscripten_notify_memory_growth() {},
        },
    };
    let instance: WebAssembly.Instance;
    if (options.bytes !== undefined) {
        instance = (await WebAssembly.instantiate(options.bytes as BufferSource, imports)).instance;
    } else {
        const url = options.url ?? new URL('./tessera.wasm', import.meta.url);
        instance = await instantiateFrom(url, imports);
    }
    const exports = instance.exports as unknown as TesseraExports;
    if (typeof exports._initialize !== 'function') throw new Error('tessera: the module does not export _initialize');
    exports._initialize();
    return { exports, memory };
}

const isNode = typeof process === 'object' && typeof process.versions?.node === 'string';

async function instantiateFrom(url: string | URL, imports: WebAssembly.Imports): Promise<WebAssembly.Instance> {
    try {
        const diskPath = isNode ? toDiskPath(url) : undefined;
        if (diskPath !== undefined) {
            const { readFile } = await nodeFs();
            const bytes = await readFile(diskPath);
            return (await WebAssembly.instantiate(bytes, imports)).instance;
        }
        const response = await fetch(url);
        if (!response.ok) throw new Error(`HTTP ${response.status} ${response.statusText}`);
        if (typeof WebAssembly.instantiateStreaming === 'function') {
            try {
                return (await WebAssembly.instantiateStreaming(response.clone(), imports)).instance;
            } catch {
                // Usually a server without the application/wasm MIME type: compile from bytes.
            }
        }
        return (await WebAssembly.instantiate(await response.arrayBuffer(), imports)).instance;
    } catch (error) {
        throw new Error(`tessera: cannot load tessera.wasm from ${String(url)}: ${String(error)}`, {
            cause: error,
        });
    }
}

/**
 * Node's `fs/promises`, reached without a static `import('node:...')` that bundlers would try
 * to resolve for the browser (Vite warns about it in every build): Node 20.16+ hands it out
 * through `process.getBuiltinModule`; older Node 20 takes a specifier bundlers cannot see.
 */
async function nodeFs(): Promise<typeof import('node:fs/promises')> {
    const builtin = process.getBuiltinModule?.('node:fs/promises');
    if (builtin !== undefined) return builtin;
    const specifier = 'node:fs/promises';
    return (await import(/* @vite-ignore */ specifier)) as typeof import('node:fs/promises');
}

/** A `file:` URL, or a string that is not a URL (a filesystem path); undefined otherwise. */
function toDiskPath(url: string | URL): URL | string | undefined {
    if (url instanceof URL) return url.protocol === 'file:' ? url : undefined;
    if (!URL.canParse(url) || /^[a-zA-Z]:[\\/]/.test(url)) return url; // incl. C:\ paths
    const parsed = new URL(url);
    return parsed.protocol === 'file:' ? parsed : undefined;
}
