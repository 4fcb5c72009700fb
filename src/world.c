/* Worlds: creation, destruction, the allocator every other file goes through, statistics, the
 * invariant checker, and the result names. */
#include "internal.h"

#include <stdlib.h>

/* ---- results --------------------------------------------------------------------------- */

static const char *const result_names[] = {
#define TES_RESULT_NAME(name, message) #name,
    TES_RESULTS(TES_RESULT_NAME)
#undef TES_RESULT_NAME
};

static const char *const result_messages[] = {
#define TES_RESULT_MESSAGE(name, message) message,
    TES_RESULTS(TES_RESULT_MESSAGE)
#undef TES_RESULT_MESSAGE
};

const char *tes_result_name(tes_result_t result) {
    return (unsigned)result < TES_RESULT_COUNT ? result_names[result] : "TES_ERR_UNKNOWN_RESULT";
}

const char *tes_result_message(tes_result_t result) {
    return (unsigned)result < TES_RESULT_COUNT ? result_messages[result] : "unknown result code";
}

/* ---- memory ---------------------------------------------------------------------------- */

/* The run reserve (tes_run_reserve). In wasm the C heap is dlmalloc: once the room is made, its
 * footprint limit (what it may take from the system) is set to what it holds, so it never grows
 * memory, and what is freed is reused as always. Natively there is no memory to keep still (the
 * tests run there): a byte budget stands in, each allocation costing its size plus
 * RESERVE_OVERHEAD and frees giving nothing back, which is stricter. */
#ifdef __EMSCRIPTEN__
size_t malloc_footprint(void);
size_t malloc_set_footprint_limit(size_t bytes);
int mallopt(int param, int value);
#define DLMALLOC_TRIM_THRESHOLD (-1) /* dlmalloc's M_TRIM_THRESHOLD; -1: never */
#endif
#define RESERVE_OVERHEAD 64u
typedef struct reserve_t {
    bool held;
    uint32_t lifted; /* tesi_reserve_lift depth: the reserve does not apply */
    size_t refused;  /* the largest allocation refused under it */
    size_t budget;   /* native stand-in: room, and what was taken of it */
    size_t taken;
} reserve_t;
static reserve_t reserve;

/* Keeps the heap from taking more memory from the system (hold) or lets it (!hold). */
static void hold_memory(bool hold) {
#ifdef __EMSCRIPTEN__
    malloc_set_footprint_limit(hold ? malloc_footprint() : SIZE_MAX);
#else
    (void)hold;
#endif
}

void tesi_reserve_lift(bool lift) {
    if (!reserve.held) return;
    if (lift ? reserve.lifted++ == 0 : --reserve.lifted == 0) hold_memory(!lift);
}

static void *heap_alloc(size_t size) {
    /* aligned_alloc wants a multiple of the alignment; chunk columns rely on 16 bytes. */
    size_t rounded = (size + TESI_ALIGN - 1) & ~(size_t)(TESI_ALIGN - 1);
    bool held = reserve.held && !reserve.lifted;
#ifndef __EMSCRIPTEN__
    if (held) {
        size_t cost = rounded + RESERVE_OVERHEAD;
        if (cost < rounded || cost > reserve.budget - reserve.taken) {
            if (size > reserve.refused) reserve.refused = size;
            return NULL;
        }
        reserve.taken += cost;
    }
#endif
    void *block = rounded >= size ? aligned_alloc(TESI_ALIGN, rounded) : NULL;
    if (!block && held && size > reserve.refused) reserve.refused = size;
    return block;
}

static void *default_alloc(size_t size, void *user) {
    (void)user;
    return heap_alloc(size);
}

tes_result_t tes_run_reserve(size_t bytes) {
    if (!bytes || reserve.held) return TES_ERR_INVALID_ARGUMENT;
    if (bytes > SIZE_MAX - TESI_ALIGN) return TES_ERR_OUT_OF_MEMORY;
        /* Taken and given back at once: the heap then has that much room in one piece (a freed
         * block is never returned to the system: wasm memory does not shrink). */
#ifdef __EMSCRIPTEN__
    /* dlmalloc would give a large free block at the top back to the system (its footprint
     * shrinks, memory does not: wasm memory never shrinks), taking the room away again. */
    mallopt(DLMALLOC_TRIM_THRESHOLD, -1);
#endif
    static void *volatile room; /* volatile: a malloc whose block is only freed is elided */
    room = aligned_alloc(TESI_ALIGN, (bytes + TESI_ALIGN - 1) & ~(size_t)(TESI_ALIGN - 1));
    if (!room) return TES_ERR_OUT_OF_MEMORY;
    free(room);
    room = NULL;
    reserve = (reserve_t){.held = true, .budget = bytes};
    hold_memory(true);
    return TES_OK;
}

size_t tes_run_release(void) {
    size_t refused = reserve.refused;
    if (reserve.held && !reserve.lifted) hold_memory(false);
    reserve = (reserve_t){0};
    return refused;
}

static void default_free(void *ptr, size_t size, void *user) {
    (void)size;
    (void)user;
    free(ptr);
}

void *tesi_alloc(tes_world_t *world, size_t size) {
    void *ptr = world->allocator.alloc(size, world->allocator.user);
    if (ptr) world->bytes_allocated += size;
    return ptr;
}

void tesi_free(tes_world_t *world, void *ptr, size_t size) {
    if (!ptr) return;
    world->allocator.free(ptr, size, world->allocator.user);
    world->bytes_allocated -= size;
}

tes_result_t tesi_reserve_grow(tes_world_t *world, void **array, uint32_t *slots, uint32_t needed,
                               size_t elem, uint32_t minimum) {
    uint64_t grown = *slots ? (uint64_t)*slots * 2u : minimum;
    while (grown < needed)
        grown *= 2u;
    if (grown > UINT32_MAX) grown = needed;
    /* size_t is 32 bits in wasm: a product past it would wrap to a small block. */
    if ((uint64_t)needed * elem > SIZE_MAX) return TES_ERR_OUT_OF_MEMORY;
    if (grown * elem > SIZE_MAX) grown = needed;
    void *fresh = tesi_alloc(world, (size_t)grown * elem);
    if (!fresh) return TES_ERR_OUT_OF_MEMORY;
    if (*array) {
        memcpy(fresh, *array, (size_t)*slots * elem);
        tesi_free(world, *array, (size_t)*slots * elem);
    }
    *array = fresh;
    *slots = (uint32_t)grown;
    return TES_OK;
}

void *tes_malloc(size_t size) {
    return heap_alloc(size ? size : 1);
}

void tes_free(void *ptr) {
    free(ptr);
}

/* ---- lifetime -------------------------------------------------------------------------- */

tes_result_t tes_world_create(const tes_world_desc_t *desc, tes_world_t **out_world) {
    if (!out_world) return TES_ERR_INVALID_ARGUMENT;
    *out_world = NULL;
    tes_world_desc_t d = desc ? *desc : (tes_world_desc_t){0};
    if (!d.allocator.alloc != !d.allocator.free) return TES_ERR_INVALID_ARGUMENT;
    if (!d.allocator.alloc) d.allocator = (tes_allocator_t){default_alloc, default_free, NULL};
    if (d.chunk_bytes > TESI_MAX_BLOCK_BYTES) return TES_ERR_INVALID_ARGUMENT;
    d.chunk_bytes = d.chunk_bytes ? tesi_align_up(d.chunk_bytes, 64) : TESI_DEFAULT_CHUNK_BYTES;
    if (d.chunk_bytes < 1024) d.chunk_bytes = 1024;
    if (!d.min_free_indices) d.min_free_indices = TESI_DEFAULT_MIN_FREE;
    /* Half the indices at most may be held back from reuse (see tesi_max_entities). */
    if (d.min_free_indices >= TESI_INDEX_LIMIT / 2) return TES_ERR_INVALID_ARGUMENT;
    if (d.checkpoints > TES_MAX_CHECKPOINTS) return TES_ERR_INVALID_ARGUMENT;
    if (!d.checkpoints) d.checkpoints = TESI_DEFAULT_CHECKPOINTS;

    tes_world_t *world = d.allocator.alloc(sizeof *world, d.allocator.user);
    if (!world) return TES_ERR_OUT_OF_MEMORY;
    *world = (tes_world_t){
        .allocator = d.allocator,
        .chunk_bytes = d.chunk_bytes,
        .min_free = d.min_free_indices,
        .checkpoint_depth = d.checkpoints,
        .record_count = 1, /* index 0 is reserved so that handle 0 is never alive */
        .change_tick = 1,  /* 0 means "never" */
    };
    world->bytes_allocated = sizeof *world;

    /* The scratch set is sized up front, so that rejecting a bad component set (up to 63
     * ids) never allocates. */
    tesi_archetype_t *empty;
    tes_result_t result = tesi_reserve(world, (void **)&world->scratch, &world->scratch_slots, 64,
                                       sizeof *world->scratch, 64);
    if (result == TES_OK) result = tesi_archetype_ensure(world, 0, &empty);
    /* The records' directory covers record_count from the start (tesi_record_of). */
    if (result == TES_OK) result = tesi_paged_cover(world, &world->records, world->record_count);
    if (result != TES_OK) {
        tes_world_destroy(world);
        return result;
    }
    *out_world = world;
    return TES_OK;
}

void tes_world_destroy(tes_world_t *world) {
    if (!world) return;
    tesi_systems_fini(world);
    tesi_rollback_forget(world);  /* before the queries: it owns some */
    tesi_replicators_fini(world); /* before the queries: each owns some */
    tesi_queries_fini(world);
    tesi_commands_fini(world);
    tesi_edit_fini(world);
    tesi_logs_fini(world);
    tesi_archetypes_fini(world);
    for (uint32_t i = 0; i < world->pool_count; i++) {
        tesi_chunk_destroy(world, world->pool[i]);
    }
    tesi_free(world, world->pool, (size_t)world->pool_slots * sizeof *world->pool);
    tesi_graph_fini(world);
    tesi_entities_fini(world);
    tesi_components_fini(world);
    tesi_free(world, world->scratch, (size_t)world->scratch_slots * sizeof *world->scratch);
    tesi_free(world, world->doomed, (size_t)world->doomed_slots * sizeof *world->doomed);
    tesi_snapshot_fini(world);
    tesi_replica_fini(world);
    tes_allocator_t allocator = world->allocator;
    allocator.free(world, sizeof *world, allocator.user);
}

/* ---- introspection --------------------------------------------------------------------- */

tes_result_t tes_world_stats(const tes_world_t *world, tes_world_stats_t *out) {
    if (!world || !out) return TES_ERR_INVALID_ARGUMENT;
    *out = (tes_world_stats_t){
        .entity_count = world->entity_count,
        .entity_capacity = world->record_count,
        .free_queue_length = world->free_length,
        .component_count = world->component_count,
        .archetype_count = world->archetype_count - world->archetypes_reclaimed,
        .chunk_count = world->chunk_count,
        .pooled_chunk_count = world->pool_count,
        .chunk_bytes = world->chunk_bytes,
        .edge_count = world->graph.edge_count,
        .graph_generation = world->graph.generation,
        .bytes_allocated = world->bytes_allocated,
        .change_tick = world->change_tick,
        .frame = world->frame,
        .query_count = world->query_count,
        .commands_skipped = world->commands_skipped,
    };
    tesi_rollback_stats(world, &out->checkpoint_count, &out->checkpoint_bytes, &out->shadow_bytes);
    return TES_OK;
}

#define CHECK(cond)                          \
    do {                                     \
        if (!(cond)) return TES_ERR_CORRUPT; \
    } while (0)

static tes_result_t validate_archetype(const tes_world_t *world, const tesi_archetype_t *a,
                                       uint32_t *chunks_seen) {
    uint32_t entities = 0;
    for (uint32_t c = 0; c < a->chunk_count; c++) {
        const tesi_chunk_t *chunk = a->chunks[c];
        CHECK(chunk->archetype == a && chunk->index == c);
        /* Packing: every chunk but the last is full, and no chunk is empty. */
        CHECK(chunk->count >= 1 && chunk->count <= a->capacity);
        CHECK(c + 1 == a->chunk_count || chunk->count == a->capacity);
        CHECK(chunk->block_bytes == a->block_bytes);
        CHECK(tesi_trackers_validate(world, chunk) == TES_OK);
        for (uint32_t row = 0; row < chunk->count; row++) {
            const tesi_record_t *record = tesi_record_of(world, tesi_chunk_entities(chunk)[row]);
            CHECK(record && record->chunk == chunk && record->row == row);
        }
        entities += chunk->count;
    }
    CHECK(entities == a->entity_count);
    uint32_t tracked = 0, value_bytes = 0;
    for (uint32_t i = 0; i < a->component_count; i++) {
        tracked += world->components[a->components[i]].level != TES_UNTRACKED;
        value_bytes += world->components[a->components[i]].stride;
    }
    CHECK(tracked == a->tracked_count && value_bytes == a->value_bytes);
    for (uint32_t i = 0; i < a->component_count; i++) {
        CHECK(i == 0 || a->components[i - 1] < a->components[i]);
        CHECK(tesi_type_index(a, a->components[i]) == i);
    }
    for (uint32_t i = 0; i < a->column_count; i++) {
        const tesi_column_t *col = &a->columns[i];
        CHECK(col->offset % TESI_ALIGN == 0);
        CHECK(col->offset + (uint64_t)col->bytes * a->capacity <= a->block_bytes);
    }
    *chunks_seen += a->chunk_count;
    return TES_OK;
}

tes_result_t tes_world_validate(const tes_world_t *world) {
    if (!world) return TES_ERR_INVALID_ARGUMENT;
    uint32_t entities = 0, chunks = 0, reclaimed = 0;
    for (uint32_t i = 0; i < world->archetype_count; i++) {
        const tesi_archetype_t *a = world->archetypes[i];
        if (!a) {
            reclaimed++;
            continue;
        }
        CHECK(a->id == i);
        tes_result_t result = validate_archetype(world, a, &chunks);
        if (result != TES_OK) return result;
        entities += a->entity_count;
    }
    CHECK(entities == world->entity_count && chunks == world->chunk_count);
    CHECK(reclaimed == world->archetypes_reclaimed && world->archetypes[0]);

    /* Entity table: every index is live (counted above), pending, waiting in the free queue or
     * skipped (in a page never allocated, or marked). */
    uint32_t live = 0, pending = 0, skipped = 0; /* pending: reserved by a deferred spawn */
    uint32_t noted = 0;                          /* records with a note of a recorded add */
    for (uint32_t i = 1; i < world->record_count; i++) {
        const tesi_record_t *record = tesi_record_find(world, i);
        if (!record) {
            uint32_t next = (i | TESI_PAGE_MASK) + 1;
            skipped += (next < world->record_count ? next : world->record_count) - i;
            i = next - 1;
            continue;
        }
        live += record->chunk != NULL;
        pending += !record->chunk && (record->row & TESI_ROW_PENDING);
        skipped += !record->chunk && (record->row & TESI_ROW_SKIPPED);
        CHECK(!(record->row & TESI_ROW_SKIPPED) || (!record->chunk && !tesi_generation(record)));
        /* Notes of recorded adds: on placed entities, at one of their adds, in a live run. */
        uint32_t note = record->generation >> TESI_RECORDED_SHIFT;
        if (note) {
            CHECK(tesi_deferring(world) && record->chunk && note - 1 < world->command_count);
            noted++;
            const tesi_command_t *add = &world->commands[note - 1];
            CHECK(note == TESI_RECORDED_MAX ||
                  ((add->entity & TESI_INDEX_MASK) == i &&
                   (add->kind == TESI_CMD_ADD || add->kind == TESI_CMD_ITEMS)));
        }
    }
    CHECK(skipped == world->skipped_count);
    CHECK(noted == world->noted && world->noted <= world->command_count &&
          world->noted_slots >= world->command_slots);
    for (uint32_t i = 0; i < world->noted; i++)
        CHECK(world->noted_records[i]->generation >> TESI_RECORDED_SHIFT);
    CHECK(((world->record_count - 1) >> TESI_PAGE_BITS) < world->records.page_slots);
    CHECK(live == world->entity_count);
    uint32_t logged = 0, sparse = 0, relations = 0;
    for (uint32_t c = 0; c < world->component_count; c++) {
        const tesi_component_t *comp = &world->components[c];
        logged += comp->removal_consumers > 0;
        if (tesi_is_sparse(comp))
            CHECK(sparse < world->sparse_count && world->sparse_ids[sparse++] == c);
        relations += tesi_is_relation(comp);
        if (tesi_is_sparse(comp) && tesi_sparse_validate(world, c) != TES_OK) {
            return TES_ERR_CORRUPT;
        }
        if (tesi_is_relation(comp) && tesi_relation_validate(world, c) != TES_OK) {
            return TES_ERR_CORRUPT;
        }
    }
    CHECK(logged == world->logged_components);
    CHECK(sparse == world->sparse_count && relations == world->relation_count);
    CHECK(live + pending + skipped + world->free_length + 1 == world->record_count);
    /* Pending entities and waiting handouts live only while deferring (the flush ends both). */
    CHECK(world->defer_depth || (!pending && !world->handout_count));
    CHECK(world->handout_next <= world->handout_count && world->handout_count <= TESI_HANDOUTS);
    uint32_t index = world->free_head;
    /* A stale queue has no links to check yet (tesi_free_queue relinks it). */
    for (uint32_t k = 0; k < world->free_length && !world->free_stale; k++) {
        CHECK(index >= 1 && index < world->record_count);
        const tesi_record_t *record = tesi_record_find(world, index);
        CHECK(record && !record->chunk && !(record->row & (TESI_ROW_PENDING | TESI_ROW_SKIPPED)));
        CHECK(k + 1 < world->free_length || index == world->free_tail);
        index = record->row;
    }
    CHECK(world->pool_count <= world->chunks_made && world->chunks_made <= world->pool_slots);
    CHECK(tesi_rollback_validate(world) == TES_OK);
    return tesi_graph_validate(world);
}
