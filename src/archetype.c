/* Archetypes: one per distinct component set. Creation lays out the chunk block (columns and
 * capacity); bulk add/remove moves every entity of an archetype at once, handing whole chunks
 * over when the two archetypes have the same columns. */
#include "internal.h"

/* Bytes a block needs for `capacity` rows: the entity column, then each column 16-aligned. */
static uint64_t block_size(const tesi_archetype_t *a, uint32_t capacity) {
    uint64_t size = tesi_align_up(capacity * (uint32_t)sizeof(tes_entity_t), TESI_ALIGN);
    for (uint32_t i = 0; i < a->column_count; i++) {
        size += ((uint64_t)a->columns[i].bytes * capacity + TESI_ALIGN - 1) & ~(uint64_t)15;
    }
    return size;
}

/* Chooses the block size and the most rows that fit in it, then places the columns. Blocks
 * are world->chunk_bytes unless fewer than TESI_MIN_CAPACITY rows would fit: such wide rows
 * get a larger block of their own size class (not pooled). */
static tes_result_t layout(const tes_world_t *world, tesi_archetype_t *a) {
    uint64_t row = sizeof(tes_entity_t);
    for (uint32_t i = 0; i < a->column_count; i++)
        row += a->columns[i].bytes;
    uint32_t block = world->chunk_bytes;
    while (block_size(a, TESI_MIN_CAPACITY) > block) {
        if (block >= TESI_MAX_BLOCK_BYTES) return TES_ERR_ROW_TOO_LARGE;
        /* Doubled, but never past the largest block (chunk_bytes need not be a power of 2). */
        block = block > TESI_MAX_BLOCK_BYTES / 2 ? TESI_MAX_BLOCK_BYTES : block * 2;
    }
    uint32_t capacity = (uint32_t)(block / row);
    while (block_size(a, capacity) > block)
        capacity--;
    a->capacity = capacity;
    a->block_bytes = block;
    uint32_t offset = tesi_align_up(capacity * (uint32_t)sizeof(tes_entity_t), TESI_ALIGN);
    for (uint32_t i = 0; i < a->column_count; i++) {
        a->columns[i].offset = offset;
        offset += tesi_align_up(a->columns[i].bytes * capacity, TESI_ALIGN);
    }
    return TES_OK;
}

tes_result_t tesi_archetype_fits(const tes_world_t *world, const tes_component_t *set,
                                 uint32_t count) {
    /* layout()'s test: the rows must fit TESI_MIN_CAPACITY times in the largest block. */
    uint64_t size = tesi_align_up(TESI_MIN_CAPACITY * (uint32_t)sizeof(tes_entity_t), TESI_ALIGN);
    for (uint32_t i = 0; i < count; i++) {
        const tesi_component_t *c = &world->components[set[i]];
        for (uint32_t f = 0; f < c->field_count; f++)
            size += ((uint64_t)c->fields[f].bytes * TESI_MIN_CAPACITY + TESI_ALIGN - 1) & ~15ull;
    }
    return size > TESI_MAX_BLOCK_BYTES ? TES_ERR_ROW_TOO_LARGE : TES_OK;
}

uint32_t tesi_type_search(const tesi_archetype_t *archetype, tes_component_t component) {
    const tes_component_t *set = archetype->components;
    uint32_t lo = 0, hi = archetype->component_count;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (set[mid] < component)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < archetype->component_count && set[lo] == component ? lo : TESI_NO_TYPE;
}

static void archetype_free(tes_world_t *world, tesi_archetype_t *a) {
    world->access_epoch++;
    tesi_move_plan_free(world, a->self);
    tesi_free(world, a->components, (size_t)a->component_count * sizeof *a->components);
    tesi_free(world, a->type_index, (size_t)a->lookup_length * sizeof *a->type_index);
    tesi_free(world, a->first_column, (size_t)a->component_count * sizeof *a->first_column);
    tesi_free(world, a->columns, (size_t)a->column_count * sizeof *a->columns);
    tesi_free(world, a->chunks, (size_t)a->chunk_slots * sizeof *a->chunks);
    tesi_free(world, a, sizeof *a);
}

static tes_result_t archetype_create(tes_world_t *world, uint32_t count, uint64_t hash,
                                     tesi_archetype_t **out) {
    const tes_component_t *set = world->scratch;
    tesi_archetype_t *a = tesi_alloc(world, sizeof *a);
    if (!a) return TES_ERR_OUT_OF_MEMORY;
    *a = (tesi_archetype_t){.id = world->archetype_count, .hash = hash, .component_count = count};
    /* The flat type index covers the members below TESI_DIRECT_IDS (the rest are searched):
     * its size follows the set, not how many types the world knows. */
    for (uint32_t i = 0; i < count && set[i] < TESI_DIRECT_IDS; i++)
        a->lookup_length = set[i] + 1;
    for (uint32_t i = 0; i < count; i++) {
        a->column_count += world->components[set[i]].field_count;
        a->value_bytes += world->components[set[i]].stride; /* no relation is a member */
    }

    bool ok = true;
    if (count) {
        a->components = tesi_alloc(world, count * sizeof *a->components);
        a->first_column = tesi_alloc(world, count * sizeof *a->first_column);
        a->type_index =
            a->lookup_length ? tesi_alloc(world, a->lookup_length * sizeof *a->type_index) : NULL;
        ok = a->components && a->first_column && (a->type_index || !a->lookup_length);
    }
    if (ok && a->column_count) {
        a->columns = tesi_alloc(world, a->column_count * sizeof *a->columns);
        ok = a->columns != NULL;
    }
    if (!ok) {
        archetype_free(world, a);
        return TES_ERR_OUT_OF_MEMORY;
    }
    if (count) {
        memcpy(a->components, set, count * sizeof *a->components);
        if (a->lookup_length) memset(a->type_index, 0xFF, a->lookup_length * sizeof *a->type_index);
    }
    uint32_t column = 0;
    for (uint32_t i = 0; i < count; i++) {
        const tesi_component_t *c = &world->components[set[i]];
        if (set[i] < a->lookup_length) a->type_index[set[i]] = (uint16_t)i;
        a->tracked_count += c->level != TES_UNTRACKED;
        a->first_column[i] = (uint16_t)column;
        for (uint32_t f = 0; f < c->field_count; f++) {
            a->columns[column++] = (tesi_column_t){0, c->fields[f].bytes, set[i] << 8 | f};
        }
    }
    tes_result_t result = layout(world, a);
    if (result == TES_OK) {
        a->self = tesi_move_plan_make(world, a, a);
        if (!a->self) result = TES_ERR_OUT_OF_MEMORY;
    }
    if (result != TES_OK) {
        archetype_free(world, a);
        return result;
    }
    *out = a;
    return TES_OK;
}

tes_result_t tesi_archetype_ensure(tes_world_t *world, uint32_t count, tesi_archetype_t **out) {
    uint64_t hash = tesi_hash_set(world->scratch, count);
    tesi_archetype_t *found = tesi_graph_find(world, world->scratch, count, hash);
    if (found) {
        *out = found;
        return TES_OK;
    }
    /* Everything that can fail happens before the archetype becomes visible. */
    if (count > 0xFFFFu) return TES_ERR_INVALID_ARGUMENT;
    tes_result_t result = tesi_reserve(world, (void **)&world->undo_marks, &world->undo_mark_slots,
                                       world->archetype_count + 1, 1, 16);
    if (result == TES_OK)
        result = tesi_reserve(world, (void **)&world->archetypes, &world->archetype_slots,
                              world->archetype_count + 1, sizeof *world->archetypes, 16);
    if (result == TES_OK) result = tesi_graph_reserve(world);
    tesi_archetype_t *a = NULL;
    if (result == TES_OK) result = archetype_create(world, count, hash, &a);
    if (result != TES_OK) return result;
    world->archetypes[world->archetype_count++] = a;
    world->layout++; /* queries may match it */
    tesi_graph_insert(world, a);
    *out = a;
    return TES_OK;
}

void tesi_archetypes_fini(tes_world_t *world) {
    for (uint32_t i = 0; i < world->archetype_count; i++) {
        tesi_archetype_t *a = world->archetypes[i];
        if (!a) continue;
        for (uint32_t c = 0; c < a->chunk_count; c++) {
            tesi_chunk_destroy(world, a->chunks[c]);
        }
        tesi_edges_fini(world, a);
        archetype_free(world, a);
    }
    tesi_free(world, world->archetypes, (size_t)world->archetype_slots * sizeof *world->archetypes);
    tesi_free(world, world->undo_marks, world->undo_mark_slots);
}

/* ---- bulk moves ------------------------------------------------------------------------ */

static bool same_columns(const tesi_archetype_t *a, const tesi_archetype_t *b) {
    if (a->column_count != b->column_count || a->block_bytes != b->block_bytes) return false;
    for (uint32_t i = 0; i < a->column_count; i++) {
        if (a->columns[i].key != b->columns[i].key) return false;
    }
    return true; /* same columns in the same order: same capacity and offsets */
}

/* Inserts a chunk into `to`'s list before its first non-full chunk, so the packing invariant
 * holds. The chunk must be full, unless `to` has no partly filled chunk (then it goes last). */
/* Entities whose archetype or row number changes without a record write: a checkpoint keeps
 * positions by number. */
static void touch_rows(tes_world_t *world, const tesi_chunk_t *chunk) {
    if (!world->rollback) return;
    for (uint32_t row = 0; row < chunk->count; row++)
        tesi_touch(world, tesi_chunk_entities(chunk)[row] & TESI_INDEX_MASK);
}

static void adopt_chunk(tes_world_t *world, tesi_archetype_t *to, tesi_chunk_t *chunk) {
    uint32_t at = to->entity_count / to->capacity;
    touch_rows(world, chunk);
    for (uint32_t i = to->chunk_count; i > at; i--) {
        to->chunks[i] = to->chunks[i - 1];
        to->chunks[i]->index = i;
        touch_rows(world, to->chunks[i]);
    }
    to->chunks[at] = chunk;
    to->chunk_count++;
    chunk->archetype = to;
    chunk->index = at;
    to->entity_count += chunk->count;
}

/* Copies every row of `src` (a chunk of another archetype) into `to`, a run at a time, and
 * points the moved entities' records at their new rows. Room was reserved by the caller. */
static void move_rows_out(tes_world_t *world, tesi_chunk_t *src, tesi_archetype_t *to) {
    uint32_t row = 0;
    while (row < src->count) {
        tesi_chunk_t *dst;
        uint32_t dst_row;
        uint32_t run = tesi_chunk_take_rows(world, to, src->count - row, &dst, &dst_row);
        tesi_copy_rows(world, dst, dst_row, src, row, run);
        for (uint32_t k = 0; k < run; k++) {
            uint32_t index = tesi_chunk_entities(dst)[dst_row + k] & TESI_INDEX_MASK;
            tesi_touch(world, index);
            tesi_record_t *r = tesi_record_at(world, index);
            r->chunk = dst;
            r->row = dst_row + k;
        }
        row += run;
    }
    src->archetype->entity_count -= src->count;
    src->count = 0;
}

/* Handing chunks over keeps their trackers indexed by the old set: only untracked ones. */
static bool hands_over(const tesi_archetype_t *from, const tesi_archetype_t *to) {
    return same_columns(from, to) && !from->tracked_count && !to->tracked_count;
}

/* When both archetypes end in a partly filled chunk, from's is copied row by row (chunks
 * handed over must be full, but for the last). */
static tesi_chunk_t *leftover_of(const tesi_archetype_t *from, const tesi_archetype_t *to) {
    tesi_chunk_t *tail = from->chunks[from->chunk_count - 1];
    bool to_partial = to->entity_count % to->capacity != 0;
    return tail->count < from->capacity && to_partial ? tail : NULL;
}

tes_result_t tesi_archetype_move_reserve(tes_world_t *world, tesi_archetype_t *from,
                                         tesi_archetype_t *to) {
    if (from == to || from->entity_count == 0) return TES_OK;
    if (!hands_over(from, to)) return tesi_chunks_reserve(world, to, from->entity_count);
    tesi_chunk_t *leftover = leftover_of(from, to);
    tes_result_t result =
        tesi_reserve(world, (void **)&to->chunks, &to->chunk_slots,
                     to->chunk_count + from->chunk_count + 1, sizeof *to->chunks, 4);
    if (result == TES_OK && leftover) result = tesi_chunks_reserve(world, to, leftover->count);
    return result;
}

tes_result_t tesi_archetype_move_all(tes_world_t *world, tesi_archetype_t *from,
                                     tesi_archetype_t *to) {
    tes_result_t result = tesi_archetype_move_reserve(world, from, to);
    if (result != TES_OK || from == to || from->entity_count == 0) return result;
    world->layout++; /* chunks may change owner and index */
    if (!hands_over(from, to)) {
        for (uint32_t c = 0; c < from->chunk_count; c++)
            move_rows_out(world, from->chunks[c], to);
        tesi_chunks_trim(world, from);
        return TES_OK;
    }
    /* Same columns: chunks change owner. A record names its chunk and row, so no record
     * changes. Rows are copied only when both archetypes end in a partly filled chunk: the
     * rows of from's partial chunk then fill to's. */
    tesi_chunk_t *leftover = leftover_of(from, to);
    uint32_t full = leftover ? from->chunk_count - 1 : from->chunk_count;
    for (uint32_t c = 0; c < full; c++)
        adopt_chunk(world, to, from->chunks[c]);
    if (leftover) {
        from->chunks[0] = leftover;
        leftover->index = 0;
        from->chunk_count = 1;
        from->entity_count = leftover->count;
        move_rows_out(world, leftover, to);
    } else {
        from->chunk_count = 0;
        from->entity_count = 0;
    }
    tesi_chunks_trim(world, from);
    tesi_chunks_trim(world, to);
    return TES_OK;
}

/* ---- public ---------------------------------------------------------------------------- */

static tes_result_t archetype_get(const tes_world_t *world, tes_archetype_t archetype,
                                  tesi_archetype_t **out) {
    if (!world) return TES_ERR_INVALID_ARGUMENT;
    if (archetype >= world->archetype_count || !world->archetypes[archetype]) {
        return TES_ERR_UNKNOWN_ARCHETYPE;
    }
    *out = world->archetypes[archetype];
    return TES_OK;
}

/* ---- reclaiming ------------------------------------------------------------------------ */

/* Frees the archetypes marked in `doomed` (empty, without chunks): the graph's edges to them and
 * its map of sets forget them, queries drop them from their matches, the spawn cache too. */
static void free_doomed(tes_world_t *world, const uint8_t *doomed) {
    tesi_graph_forget(world, doomed);
    tesi_queries_forget(world, doomed);
    tesi_archetype_t *cached = world->spawn_cache.archetype;
    if (cached && doomed[cached->id]) world->spawn_cache.archetype = NULL;
    for (uint32_t i = 0; i < world->archetype_count; i++) {
        if (!doomed[i]) continue;
        tesi_edges_fini(world, world->archetypes[i]);
        archetype_free(world, world->archetypes[i]);
        world->archetypes[i] = NULL;
    }
    world->layout++; /* hosts' lists of chunks and columns are stale */
}

void tesi_archetypes_truncate(tes_world_t *world, uint32_t count, uint8_t *doomed) {
    uint32_t n = world->archetype_count;
    if (count >= n) return;
    for (uint32_t i = 0; i < n; i++)
        doomed[i] = i >= count && world->archetypes[i];
    free_doomed(world, doomed);
    /* The ids are handed out again, in the order the history makes them. */
    world->archetype_count = count;
    tesi_queries_unsee(world, count);
}

void tesi_archetypes_undo(tes_world_t *world, uint32_t count) {
    uint32_t n = world->archetype_count;
    if (n <= count) return;
    for (uint32_t i = count; i < n; i++) {
        tesi_archetype_t *a = world->archetypes[i];
        if (a && a->entity_count) return;  /* not the failed call's alone */
        if (a) tesi_chunks_trim(world, a); /* the empty chunks it took, back to the pool */
    }
    tesi_archetypes_truncate(world, count, world->undo_marks);
}

tes_result_t tes_archetypes_reclaim(tes_world_t *world, uint32_t *out_reclaimed) {
    if (!world) return TES_ERR_INVALID_ARGUMENT;
    /* A live run holds chunks and visits; pending entities and commands name archetypes. */
    if (tesi_deferring(world)) return TES_ERR_INVALID_ARGUMENT;
    uint32_t n = world->archetype_count;
    uint8_t *doomed = tesi_alloc(world, n);
    if (!doomed) return TES_ERR_OUT_OF_MEMORY;
    uint32_t count = 0;
    for (uint32_t i = 0; i < n; i++) {
        const tesi_archetype_t *a = world->archetypes[i];
        /* Empty means no chunk either: the last row out hands its chunk back to the pool. The
         * empty set's archetype stays: every spawn and despawn passes through it. */
        doomed[i] = a && !a->entity_count && !a->chunk_count && a->component_count;
        count += doomed[i];
    }
    if (count) {
        /* Checkpoints name archetypes by id: they go (the next one copies the world again). */
        tesi_rollback_forget(world);
        free_doomed(world, doomed);
        world->archetypes_reclaimed += count;
    }
    tesi_free(world, doomed, n);
    if (out_reclaimed) *out_reclaimed = count;
    return TES_OK;
}

uint32_t tes_archetype_count(const tes_world_t *world) {
    return world ? world->archetype_count : 0;
}

tes_result_t tes_archetype_info(const tes_world_t *world, tes_archetype_t archetype,
                                tes_archetype_info_t *out) {
    tesi_archetype_t *a;
    tes_result_t result = archetype_get(world, archetype, &a);
    if (result != TES_OK) return result;
    if (!out) return TES_ERR_INVALID_ARGUMENT;
    *out = (tes_archetype_info_t){a->components, a->component_count, a->entity_count,
                                  a->chunk_count, a->capacity};
    return TES_OK;
}

tes_result_t tes_archetype_find(tes_world_t *world, const tes_component_t *components,
                                uint32_t count, tes_archetype_t *out_archetype) {
    if (!world || !out_archetype) return TES_ERR_INVALID_ARGUMENT;
    tes_result_t result = tesi_sort_set(world, components, count);
    for (uint32_t i = 0; i < count && result == TES_OK; i++) {
        if (tesi_is_sparse(&world->components[world->scratch[i]])) {
            result = TES_ERR_SPARSE_COMPONENT;
        }
    }
    tesi_archetype_t *a;
    if (result == TES_OK) result = tesi_archetype_ensure(world, count, &a);
    if (result == TES_OK) *out_archetype = a->id;
    return result;
}

tes_result_t tesi_chunk_lookup(const tes_world_t *world, tes_archetype_t archetype, uint32_t chunk,
                               tesi_chunk_t **out) {
    tesi_archetype_t *a;
    tes_result_t result = archetype_get(world, archetype, &a);
    if (result != TES_OK) return result;
    if (chunk >= a->chunk_count) return TES_ERR_INVALID_ARGUMENT;
    *out = a->chunks[chunk];
    return TES_OK;
}

tes_result_t tes_chunk_info(const tes_world_t *world, tes_archetype_t archetype, uint32_t chunk,
                            tes_chunk_info_t *out) {
    tesi_chunk_t *c;
    tes_result_t result = tesi_chunk_lookup(world, archetype, chunk, &c);
    if (result != TES_OK) return result;
    if (!out) return TES_ERR_INVALID_ARGUMENT;
    *out = (tes_chunk_info_t){tesi_chunk_entities(c), c->count, c->archetype->capacity};
    return TES_OK;
}

tes_result_t tes_chunk_column(tes_world_t *world, tes_archetype_t archetype, uint32_t chunk,
                              tes_component_t component, uint32_t field, void **out_column) {
    tesi_chunk_t *c;
    tes_result_t result = tesi_chunk_lookup(world, archetype, chunk, &c);
    if (result != TES_OK) return result;
    if (!out_column) return TES_ERR_INVALID_ARGUMENT;
    if (component >= world->component_count) return TES_ERR_UNKNOWN_COMPONENT;
    if (tesi_is_sparse(&world->components[component])) return TES_ERR_SPARSE_COMPONENT;
    uint32_t type = tesi_type_index(c->archetype, component);
    if (type == TESI_NO_TYPE) return TES_ERR_MISSING_COMPONENT;
    const tesi_field_t *f;
    result = tesi_field_of(&world->components[component], field, &f);
    if (result != TES_OK) return result;
    *out_column = c->data + tesi_column_of(c->archetype, type, field)->offset;
    return TES_OK;
}

static tes_result_t bulk_step(tes_world_t *world, tes_archetype_t archetype,
                              tes_component_t component, bool removing) {
    tesi_archetype_t *from, *to;
    tes_result_t result = archetype_get(world, archetype, &from);
    if (result != TES_OK) return result;
    if (component >= world->component_count) return TES_ERR_UNKNOWN_COMPONENT;
    if (tesi_is_sparse(&world->components[component])) return TES_ERR_SPARSE_COMPONENT;
    if (tesi_deferring(world)) {
        uint8_t kind = removing ? TESI_CMD_ARCHETYPE_REMOVE : TESI_CMD_ARCHETYPE_ADD;
        return tesi_defer(world, kind, 0, archetype, component, 0, 0, NULL, 0);
    }
    if ((tesi_type_index(from, component) != TESI_NO_TYPE) != removing) return TES_OK;
    const tesi_move_plan_t *plan;
    result = tesi_graph_step(world, from, component, removing, &to, &plan);
    bool logged = removing && world->components[component].removal_consumers;
    if (result == TES_OK && logged) result = tesi_logs_reserve(world, from, from->entity_count);
    if (result != TES_OK) return result;
    /* Logged from the source rows, and taken back if the move runs out of memory. */
    tesi_removal_log_t *log = &world->components[component].log;
    uint32_t logged_before = log->count;
    for (uint32_t c = 0; logged && c < from->chunk_count; c++) {
        const tesi_chunk_t *chunk = from->chunks[c];
        for (uint32_t row = 0; row < chunk->count; row++) {
            tesi_log_removal(world, component, tesi_chunk_entities(chunk)[row]);
        }
    }
    result = tesi_archetype_move_all(world, from, to);
    if (result != TES_OK && logged) log->count = logged_before;
    return result;
}

tes_result_t tes_archetype_add(tes_world_t *world, tes_archetype_t archetype,
                               tes_component_t component) {
    return bulk_step(world, archetype, component, false);
}

tes_result_t tes_archetype_remove(tes_world_t *world, tes_archetype_t archetype,
                                  tes_component_t component) {
    return bulk_step(world, archetype, component, true);
}
