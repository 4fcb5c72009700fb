/* Entities: the table from handle index to (chunk, row), generations, the FIFO free queue
 * (a list linked through the free records themselves, so despawn never allocates), and every
 * per-entity structural operation (spawn, despawn, add, remove; field values are field.c's).
 * Each public function validates everything and reserves every byte it may need before it
 * changes anything, so a failed call leaves the world as it was. */
#include "internal.h"
#include "row.h"

/* ---- the entity table ------------------------------------------------------------------ */

/* Room in index_dirty for every index of the record pages (plus `more` pages): each index is
 * listed at most once, so stamping never allocates. */
static tes_result_t dirty_reserve(tes_world_t *world, uint32_t more) {
    uint64_t needed = ((uint64_t)world->records.page_count + more) * TESI_PAGE_SIZE;
    return tesi_reserve(world, (void **)&world->index_dirty, &world->index_dirty_slots,
                        (uint32_t)needed, sizeof *world->index_dirty, TESI_PAGE_SIZE);
}

/* Stamp pages for the record pages of [first, end), while stamping. */
static tes_result_t stamps_reserve(tes_world_t *world, uint32_t first, uint32_t end) {
    if (!world->index_stamping) return TES_OK;
    tes_result_t result = dirty_reserve(world, tesi_paged_missing(&world->records, first, end));
    if (result == TES_OK) {
        result = tesi_paged_reserve(world, &world->index_ticks, first, end, sizeof(uint64_t));
    }
    return result;
}

static void stamps_free(tes_world_t *world) {
    tesi_paged_fini(world, &world->index_ticks, sizeof(uint64_t));
    tesi_free(world, world->index_dirty,
              (size_t)world->index_dirty_slots * sizeof *world->index_dirty);
    world->index_dirty = NULL;
    world->index_dirty_count = world->index_dirty_slots = 0;
    world->index_stamping = false;
}

tes_result_t tesi_index_ticks(tes_world_t *world, bool on) {
    if (on == world->index_stamping) return TES_OK;
    if (!on) {
        stamps_free(world);
        return TES_OK;
    }
    /* A stamp page for every record page. */
    tes_result_t result = dirty_reserve(world, 0);
    for (uint32_t page = 0; page < world->records.page_slots && result == TES_OK; page++) {
        if (!world->records.pages[page]) continue;
        uint32_t first = page << TESI_PAGE_BITS;
        result = tesi_paged_reserve(world, &world->index_ticks, first, first + 1, sizeof(uint64_t));
    }
    if (result != TES_OK) {
        stamps_free(world);
        return result;
    }
    world->index_stamping = true;
    return TES_OK;
}

void tesi_index_prune(tes_world_t *world, uint64_t min) {
    uint32_t kept = 0;
    for (uint32_t k = 0; k < world->index_dirty_count; k++) {
        uint32_t index = world->index_dirty[k];
        uint64_t *tick = tesi_paged_at(&world->index_ticks, index, sizeof *tick);
        if ((*tick & ~TESI_INDEX_LISTED) > min) {
            world->index_dirty[kept++] = index;
        } else {
            *tick &= ~TESI_INDEX_LISTED;
        }
    }
    world->index_dirty_count = kept;
}

void tesi_mark_skipped(tes_world_t *world, uint32_t first, uint32_t end) {
    for (uint32_t index = first; index < end; index++) {
        tesi_record_t *record = tesi_record_find(world, index);
        if (!record) {
            index |= TESI_PAGE_MASK; /* an unallocated page reads as skipped already */
            continue;
        }
        tesi_touch(world, index);
        *record = (tesi_record_t){.row = TESI_ROW_SKIPPED};
    }
}

tes_result_t tesi_table_reserve(tes_world_t *world, uint32_t first, uint32_t end) {
    if (end > TESI_INDEX_LIMIT) end = TESI_INDEX_LIMIT;
    if (first >= end || !tesi_paged_missing(&world->records, first, end)) return TES_OK;
    /* The replicators' stamps get their pages first: both or neither. */
    tes_result_t result = stamps_reserve(world, first, end);
    if (result == TES_OK) result = tesi_rollback_table(world, first, end);
    if (result != TES_OK) return result;
    /* Page by page, so that a new page below record_count has its indices marked skipped. */
    for (uint32_t page = first >> TESI_PAGE_BITS; page <= (end - 1) >> TESI_PAGE_BITS; page++) {
        uint32_t base = page << TESI_PAGE_BITS;
        if (tesi_record_find(world, base)) continue;
        result = tesi_paged_reserve(world, &world->records, base, base + 1, sizeof(tesi_record_t));
        if (result != TES_OK) return result;
        if (base < world->record_count) {
            uint32_t below = base + TESI_PAGE_SIZE < world->record_count ? base + TESI_PAGE_SIZE
                                                                         : world->record_count;
            tesi_mark_skipped(world, base ? base : 1, below); /* index 0 is no entity's */
        }
    }
    return TES_OK;
}

/* The skipped indices join the free queue (index order, generation 0), their pages allocated:
 * a world out of fresh indices takes them as its own. Its own spawns only: never on input. */
static tes_result_t take_skipped(tes_world_t *world) {
    tes_result_t result = tesi_table_reserve(world, 1, world->record_count);
    if (result != TES_OK) return result;
    for (uint32_t index = 1; index < world->record_count; index++) {
        tesi_record_t *record = tesi_record_at(world, index);
        if (!(record->row & TESI_ROW_SKIPPED)) continue;
        tesi_touch(world, index);
        record->row = 0;
    }
    world->free_length += world->skipped_count;
    world->skipped_count = 0;
    world->free_stale = true; /* relinked, with the skipped ones, before the next use */
    return TES_OK;
}

tes_result_t tesi_entities_reserve(tes_world_t *world, uint32_t n) {
    /* Handed-out indices waiting are taken first (tesi_take_index); they count in use. */
    uint32_t waiting = world->handout_count - world->handout_next;
    if (n <= waiting) return TES_OK;
    n -= waiting;
    /* Indices in use (live and pending) stay at most the table's less min_free: then more than
     * min_free indices wait whenever the table is full, and an index is always reused after
     * more than min_free others that were freed after it, at every population. */
    if ((uint64_t)tesi_indices_in_use(world) + n > tesi_max_entities(world)) {
        return TES_ERR_TOO_MANY_ENTITIES;
    }
    uint32_t fresh_left = TESI_INDEX_LIMIT - world->record_count;
    uint32_t reusable =
        world->free_length > world->min_free ? world->free_length - world->min_free : 0;
    if ((uint64_t)fresh_left + reusable < n && world->skipped_count) {
        tes_result_t result = take_skipped(world);
        if (result != TES_OK) return result;
        reusable = world->free_length > world->min_free ? world->free_length - world->min_free : 0;
    }
    uint32_t fresh = n > reusable ? n - reusable : 0;
    if (fresh > fresh_left) fresh = fresh_left;
    return tesi_table_reserve(world, world->record_count, world->record_count + fresh);
}

/* The index for a new entity, following the rule tesi_entities_reserve planned for: reuse the
 * oldest freed index once more than min_free wait (or when no fresh index is left). */
uint32_t tesi_take_index(tes_world_t *world, tesi_record_t **out_record) {
    if (world->handout_next < world->handout_count) { /* the allocator's next, taken already */
        uint32_t index = world->handouts[world->handout_next++];
        *out_record = tesi_record_at(world, index);
        return index;
    }
    /* With the table full, more than min_free wait (tesi_entities_reserve's cap). */
    if (world->free_length > world->min_free || world->record_count == TESI_INDEX_LIMIT) {
        tesi_free_queue(world);
        uint32_t index = world->free_head;
        tesi_touch(world, index);
        tesi_record_t *record = tesi_record_at(world, index);
        world->free_head = record->row;
        world->free_length--;
        *out_record = record;
        return index;
    }
    uint32_t index = world->record_count++;
    tesi_touch(world, index);
    tesi_record_t *record = tesi_record_at(world, index);
    *record = (tesi_record_t){0};
    *out_record = record;
    return index;
}

/* For checkpoints: a freed index, and the queue's former tail, whose link may name it now (a
 * touched index that did not change costs a checkpoint nothing but a look). Out of line, and
 * last: the despawn path carries one test and a jump. */
static __attribute__((noinline, cold)) void touch_release(tes_world_t *world, uint32_t index,
                                                          uint32_t tail) {
    tesi_rollback_touch(world->rollback, index);
    if (tail) tesi_rollback_touch(world->rollback, tail);
}

/* Frees a record's index to the free queue's tail. `plain`: the caller knows that nobody
 * stamps indices, no checkpoint is kept and the queue's links are current; a constant, so that
 * the hot path carries no test of them. */
static inline __attribute__((always_inline)) void
release_record_as(tes_world_t *world, tesi_record_t *record, uint32_t index, bool plain) {
    uint32_t tail = world->free_tail;
    record->chunk = NULL;
    record->generation = (tesi_generation(record) + 1) & TESI_GENERATION_MASK;
    record->row = 0;
    if (!plain) tesi_index_stamp(world, index);
    /* A stale queue is relinked from the records before its next use: no link to keep now. */
    if (!plain && world->free_stale) {
        world->free_length++;
    } else if (world->free_length++) {
        tesi_record_at(world, tail)->row = index;
    } else {
        world->free_head = index;
    }
    world->free_tail = index;
    if (!plain && __builtin_expect(world->rollback != NULL, 0)) touch_release(world, index, tail);
}

void tesi_release_record(tes_world_t *world, tesi_record_t *record, uint32_t index) {
    release_record_as(world, record, index, false);
}

void tesi_free_queue(tes_world_t *world) {
    if (!world->free_stale) return;
    world->free_stale = false;
    uint32_t length = 0;
    for (uint32_t index = 1; index < world->record_count; index++) {
        tesi_record_t *record = tesi_record_find(world, index);
        if (!record) {
            index |= TESI_PAGE_MASK; /* skipped, all of the page */
            continue;
        }
        if (record->chunk || (record->row & (TESI_ROW_PENDING | TESI_ROW_SKIPPED))) continue;
        tesi_touch(world, index);
        record->row = 0;
        if (length++) {
            tesi_record_at(world, world->free_tail)->row = index;
        } else {
            world->free_head = index;
        }
        world->free_tail = index;
    }
    world->free_length = length;
}

void tesi_entities_fini(tes_world_t *world) {
    tesi_index_ticks(world, false);
    tesi_paged_fini(world, &world->records, sizeof(tesi_record_t));
}

bool tes_is_alive(const tes_world_t *world, tes_entity_t entity) {
    return world && tesi_record_of(world, entity) != NULL;
}

/* ---- spawn and despawn ----------------------------------------------------------------- */

/* Room in the entity table for n more indices (a page for each fresh one, below the cap),
 * seen without a call. Pages above record_count are only ever reserved from it up, so the
 * last one tells. False: tesi_entities_reserve decides. */
static inline bool table_has_room(const tes_world_t *world, uint32_t n) {
    uint64_t last = (uint64_t)world->record_count + n - 1;
    return n && last < TESI_INDEX_LIMIT && tesi_record_find(world, (uint32_t)last) &&
           (uint64_t)tesi_indices_in_use(world) + n <= tesi_max_entities(world);
}

/* One spawn's common case, doing only what this row needs: no run defers it (so no handout
 * waits: the flush gives them back), nobody stamps or touches indices (no index consumer, no
 * checkpoint), the index is the free queue's head (its links current) or a fresh one the table
 * has room for, and the row is the archetype's last chunk's or a pooled block's
 * (tesi_row_take). It takes its index as tesi_take_index would, without the tests this case
 * has passed (measured: calling it cost 16 instructions a spawn + despawn). False, with nothing
 * changed: the general path decides. */
static inline __attribute__((always_inline)) bool spawn_one(tes_world_t *world, tesi_archetype_t *a,
                                                            tes_entity_t *out) {
    if (tesi_deferring(world) || world->index_stamping || world->rollback || !a->self) return false;
    /* Which index, decided before anything changes. */
    bool reuse = world->free_length > world->min_free;
    if (reuse ? world->free_stale : !table_has_room(world, 1)) return false;
    uint32_t row;
    tesi_chunk_t *chunk = tesi_row_take(world, a, &row);
    if (!chunk) return false;
    uint32_t index = reuse ? world->free_head : world->record_count++;
    tesi_record_t *record = tesi_record_at(world, index);
    if (reuse) {
        world->free_head = record->row;
        world->free_length--;
    } else {
        record->generation = 0;
    }
    world->entity_count++;
    tesi_zero_row(chunk, row);
    if (a->tracked_count) tesi_trackers_stamp_added(world, chunk, row, 1);
    record->chunk = chunk;
    record->row = row;
    tes_entity_t e = tesi_make_handle(index, tesi_generation(record));
    tesi_chunk_entities(chunk)[row] = e;
    if (out) *out = e;
    return true;
}

static tes_result_t spawn_rows(tes_world_t *world, tesi_archetype_t *a, uint32_t n,
                               tes_entity_t *out_entities);

/* Spawns n zeroed entities into an archetype. A single one takes spawn_one's path when it
 * can; the general one is out of line, so that it does not pay for the general's registers. */
static inline __attribute__((always_inline)) tes_result_t
spawn_into(tes_world_t *world, tesi_archetype_t *a, uint32_t n, tes_entity_t *out_entities) {
    if (n == 1 && spawn_one(world, a, out_entities)) return TES_OK;
    return spawn_rows(world, a, n, out_entities);
}

tes_result_t tesi_spawn_rows(tes_world_t *world, tesi_archetype_t *a, uint32_t n,
                             tes_entity_t *out_entities) {
    return spawn_into(world, a, n, out_entities);
}

/* Places n entities in an archetype whose chunks have room for them (tesi_chunks_reserve), a
 * chunk run at a time: rows zeroed and stamped added, records and entity column written. Their
 * indices are taken from the allocator (given NULL), or are those of reserved handles: the
 * first at `given`, the next every `stride` bytes on (a recorded run's commands). Inline, so
 * that each caller's loop is its own. */
static inline __attribute__((always_inline)) void
place_rows(tes_world_t *world, tesi_archetype_t *a, uint32_t n, const tes_entity_t *given,
           size_t stride, tes_entity_t *out_entities) {
    const uint8_t *next = (const uint8_t *)given;
    for (uint32_t done = 0; done < n;) {
        tesi_chunk_t *chunk;
        uint32_t row;
        uint32_t run = tesi_chunk_take_rows(world, a, n - done, &chunk, &row);
        if (run == 1 && a->self) {
            tesi_zero_row(chunk, row); /* a single spawn: inline */
        } else {
            tesi_zero_rows(chunk, row, run);
        }
        if (a->tracked_count) tesi_trackers_stamp_added(world, chunk, row, run);
        for (uint32_t k = 0; k < run; k++) {
            tesi_record_t *record;
            uint32_t index;
            if (given) {
                index = *(const tes_entity_t *)(const void *)next & TESI_INDEX_MASK;
                next += stride;
                record = tesi_record_at(world, index);
            } else {
                index = tesi_take_index(world, &record);
            }
            tesi_index_stamp(world, index);
            record->chunk = chunk;
            record->row = row + k;
            tes_entity_t e = tesi_make_handle(index, tesi_generation(record));
            tesi_chunk_entities(chunk)[row + k] = e;
            if (out_entities) out_entities[done + k] = e;
        }
        done += run;
    }
    world->entity_count += n;
}

/* Spawns n zeroed entities into an archetype, filling its chunks a run at a time. */
static __attribute__((noinline)) tes_result_t spawn_rows(tes_world_t *world, tesi_archetype_t *a,
                                                         uint32_t n, tes_entity_t *out_entities) {
    if (tesi_deferring(world)) return tesi_defer_spawn(world, a, n, out_entities);
    tes_result_t result = table_has_room(world, n) ? TES_OK : tesi_entities_reserve(world, n);
    if (result == TES_OK) result = tesi_chunks_reserve(world, a, n);
    if (result != TES_OK) return result;
    place_rows(world, a, n, NULL, 0, out_entities);
    return TES_OK;
}

tes_result_t tesi_spawn_pending(tes_world_t *world, tesi_archetype_t *a, uint32_t n,
                                const tes_entity_t *first, size_t stride) {
    tes_result_t result = tesi_chunks_reserve(world, a, n);
    if (result == TES_OK) place_rows(world, a, n, first, stride, NULL);
    return result;
}

tes_result_t tesi_spawn_reserved(tes_world_t *world, uint32_t index, tesi_archetype_t *a) {
    tes_result_t result = tesi_chunks_reserve(world, a, 1);
    if (result != TES_OK) return result;
    tesi_chunk_t *chunk;
    uint32_t row;
    tesi_chunk_take_rows(world, a, 1, &chunk, &row);
    if (a->self) {
        tesi_zero_row(chunk, row); /* inline, as a single spawn's */
    } else {
        tesi_zero_rows(chunk, row, 1);
    }
    tesi_trackers_stamp_added(world, chunk, row, 1);
    tesi_record_t *record = tesi_record_at(world, index);
    record->chunk = chunk;
    record->row = row;
    tesi_index_stamp(world, index);
    tesi_chunk_entities(chunk)[row] = tesi_make_handle(index, tesi_generation(record));
    world->entity_count++;
    return TES_OK;
}

tes_result_t tes_archetype_spawn(tes_world_t *world, tes_archetype_t archetype, uint32_t n,
                                 tes_entity_t *out_entities) {
    if (!world) return TES_ERR_INVALID_ARGUMENT;
    if (archetype >= world->archetype_count || !world->archetypes[archetype]) {
        return TES_ERR_UNKNOWN_ARCHETYPE;
    }
    if (n >= TESI_INDEX_LIMIT) return TES_ERR_TOO_MANY_ENTITIES;
    return tesi_spawn_rows(world, world->archetypes[archetype], n, out_entities);
}

/* Moves the sparse components of the sorted set in world->scratch to its end (their order
 * kept) and returns how many chunk components come first. */
static uint32_t partition_set(tes_world_t *world, uint32_t count, tes_result_t *result) {
    tes_component_t *set = world->scratch;
    uint32_t table = 0;
    for (uint32_t i = 0; i < count; i++) {
        const tesi_component_t *c = &world->components[set[i]];
        if (tesi_is_relation(c)) *result = TES_ERR_NEEDS_TARGET;
        if (!tesi_is_sparse(c)) {
            tes_component_t id = set[i];
            memmove(set + table + 1, set + table, (i - table) * sizeof *set);
            set[table++] = id;
        }
    }
    return table;
}

/* Spawns n entities with sparse components too: the sparse sets (or the command buffer) get
 * room for every member first, so the spawn stays all or nothing. */
static tes_result_t spawn_with_sparse(tes_world_t *world, tesi_archetype_t *a,
                                      const tes_component_t *sparse, uint32_t sparse_count,
                                      uint32_t n, tes_entity_t *out_entities) {
    tes_entity_t *handles = out_entities;
    if (!handles && n) {
        handles = tesi_alloc(world, (size_t)n * sizeof *handles);
        if (!handles) return TES_ERR_OUT_OF_MEMORY;
    }
    tes_result_t result = TES_OK;
    bool deferring = tesi_deferring(world);
    if (deferring) {
        uint64_t commands = (uint64_t)n * (1 + sparse_count);
        result = commands > UINT32_MAX / 2 ? TES_ERR_OUT_OF_MEMORY
                                           : tesi_commands_reserve(world, (uint32_t)commands, 0);
    } else {
        result = tesi_entities_reserve(world, n);
        /* New indices are below record_count + n (reused ones below record_count). */
        uint32_t limit = world->record_count + n;
        for (uint32_t i = 0; i < sparse_count && result == TES_OK; i++) {
            result = tesi_sparse_reserve(world, sparse[i], n, 1, limit);
        }
    }
    if (result == TES_OK) result = tesi_spawn_rows(world, a, n, handles);
    /* Room was made above: neither the adds nor the recorded adds can fail now. */
    for (uint32_t k = 0; result == TES_OK && k < n; k++) {
        for (uint32_t i = 0; i < sparse_count; i++) {
            if (deferring) {
                tesi_defer(world, TESI_CMD_ADD, handles[k], sparse[i], 0, 0, 0, NULL, 0);
            } else {
                tesi_sparse_insert(world, sparse[i], handles[k]);
            }
        }
    }
    if (handles != out_entities) tesi_free(world, handles, (size_t)n * sizeof *handles);
    return result;
}

/* A spawn whose set the spawn cache does not hold: its archetype is found (or made) first. */
static __attribute__((noinline)) tes_result_t spawn_uncached(tes_world_t *world,
                                                             const tes_component_t *components,
                                                             uint32_t count, uint32_t n,
                                                             tes_entity_t *out_entities) {
    tesi_archetype_t *a;
    uint32_t archetypes = world->archetype_count;
    tes_result_t result = tesi_sort_set(world, components, count);
    uint32_t table = count;
    if (result == TES_OK && world->sparse_count) table = partition_set(world, count, &result);
    if (result == TES_OK) result = tesi_archetype_ensure(world, table, &a);
    if (result != TES_OK) return result;
    if (table == count) {
        tesi_spawn_remember(world, components, count, a);
        result = tesi_spawn_rows(world, a, n, out_entities);
    } else {
        /* The sparse ids stay at the end of the scratch set: nothing on the spawn path (entity
         * table, chunks, trackers, sparse sets, command buffer) builds sets. */
        result =
            spawn_with_sparse(world, a, world->scratch + table, count - table, n, out_entities);
    }
    if (result != TES_OK) tesi_archetypes_undo(world, archetypes);
    return result;
}

static inline __attribute__((always_inline)) tes_result_t
spawn_batch(tes_world_t *world, const tes_component_t *components, uint32_t count, uint32_t n,
            tes_entity_t *out_entities) {
    if (!world) return TES_ERR_INVALID_ARGUMENT;
    /* More than the table can ever hold: refused before anything is sized by n. */
    if (n >= TESI_INDEX_LIMIT) return TES_ERR_TOO_MANY_ENTITIES;
    tesi_archetype_t *a = tesi_spawn_cached(world, components, count);
    if (a) return spawn_into(world, a, n, out_entities);
    return spawn_uncached(world, components, count, n, out_entities);
}

tes_result_t tes_spawn_batch(tes_world_t *world, const tes_component_t *components, uint32_t count,
                             uint32_t n, tes_entity_t *out_entities) {
    return spawn_batch(world, components, count, n, out_entities);
}

tes_result_t tes_spawn(tes_world_t *world, const tes_component_t *components, uint32_t count,
                       tes_entity_t *out_entity) {
    if (!out_entity) return TES_ERR_INVALID_ARGUMENT;
    return spawn_batch(world, components, count, 1, out_entity);
}

tes_result_t tesi_spawn_at(tes_world_t *world, tes_entity_t handle,
                           const tes_component_t *components, uint32_t count) {
    uint32_t index = handle & TESI_INDEX_MASK;
    tesi_archetype_t *a;
    tes_result_t result = tesi_sort_set(world, components, count);
    uint32_t table = count;
    if (result == TES_OK && world->sparse_count) table = partition_set(world, count, &result);
    if (result == TES_OK) result = tesi_archetype_ensure(world, table, &a);
    /* Everything is reserved first (the sparse ids stay at the end of the scratch set). */
    const tes_component_t *sparse = world->scratch + table;
    for (uint32_t i = 0; i < count - table && result == TES_OK; i++)
        result = tesi_sparse_reserve(world, sparse[i], 1, index, index + 1);
    if (result == TES_OK) result = tesi_chunks_reserve(world, a, 1);
    /* One page for the index, whatever the indices below it (a high index costs no more). */
    if (result == TES_OK) result = tesi_table_reserve(world, index, index + 1);
    if (result != TES_OK) return result;
    tesi_record_t *record = tesi_record_at(world, index);
    tesi_touch(world, index);
    if (index >= world->record_count) {
        /* The indices before it were never used here: skipped, not queued. */
        tesi_mark_skipped(world, world->record_count, index);
        world->skipped_count += index - world->record_count;
        world->record_count = index + 1;
    } else if (record->row & TESI_ROW_SKIPPED) {
        world->skipped_count--;
    } else {
        /* A queued index leaves the free queue: relinked before its next use. */
        world->free_stale = true;
        world->free_length--;
    }
    *record = (tesi_record_t){.generation = handle >> TES_INDEX_BITS};
    tesi_spawn_reserved(world, index, a); /* cannot fail: its chunk room is reserved */
    for (uint32_t i = 0; i < count - table; i++)
        tesi_sparse_insert(world, sparse[i], handle);
    return TES_OK;
}

void tesi_despawn_record(tes_world_t *world, tesi_record_t *record) {
    tes_entity_t e = tesi_chunk_entities(record->chunk)[record->row];
    if (tesi_logging(world)) tesi_log_removals(world, record->chunk->archetype, e);
    tesi_remove_row(world, record->chunk, record->row);
    tesi_release_record(world, record, e & TESI_INDEX_MASK);
    world->entity_count--;
}

void tesi_despawn_archetype(tes_world_t *world, tesi_archetype_t *a) {
    bool logging = tesi_logging(world);
    for (uint32_t c = 0; c < a->chunk_count; c++) {
        const tesi_chunk_t *chunk = a->chunks[c];
        const tes_entity_t *entities = tesi_chunk_entities(chunk);
        for (uint32_t row = 0; row < chunk->count; row++) {
            tes_entity_t e = entities[row];
            if (logging) tesi_log_removals(world, a, e);
            tesi_release_record(world, tesi_record_at(world, e & TESI_INDEX_MASK),
                                e & TESI_INDEX_MASK);
        }
    }
    world->entity_count -= a->entity_count;
    while (a->entity_count) {
        tesi_chunk_t *last = a->chunks[a->chunk_count - 1];
        tesi_remove_row(world, last, last->count - 1);
    }
}

/* Alive, or pending (spawned by a deferred command): what a deferred command may name. */
static tes_result_t check_deferrable(const tes_world_t *world, tes_entity_t entity) {
    return tesi_record_of(world, entity) || tesi_pending_record(world, entity)
               ? TES_OK
               : TES_ERR_STALE_ENTITY;
}

/* Every despawn but the lean one: deferred, or with pairs, sparse memberships, cascades, logs,
 * index stamps or checkpoints to keep. Out of line, so that the lean one does not pay for its
 * registers (measured: 6 fewer instructions a spawn + despawn). */
static __attribute__((noinline)) tes_result_t despawn_general(tes_world_t *world,
                                                              tes_entity_t entity) {
    if (tesi_deferring(world)) {
        tes_result_t result = check_deferrable(world, entity);
        return result != TES_OK ? result
                                : tesi_defer(world, TESI_CMD_DESPAWN, entity, 0, 0, 0, 0, NULL, 0);
    }
    tesi_record_t *record = tesi_record_of(world, entity);
    if (!record) return TES_ERR_STALE_ENTITY;
    /* Pairs, sparse memberships and cascades: the general path. */
    if (world->sparse_count) return tesi_despawn_all(world, &entity, 1, true);
    if (tesi_logging(world)) {
        tes_result_t result = tesi_logs_reserve(world, record->chunk->archetype, 1);
        if (result != TES_OK) return result;
    }
    tesi_despawn_record(world, record);
    return TES_OK;
}

tes_result_t tes_despawn(tes_world_t *world, tes_entity_t entity) {
    if (!world) return TES_ERR_INVALID_ARGUMENT;
    /* The common case, in line: no run, no pair, sparse member or cascade, nothing to log,
     * nobody stamping indices, no checkpoint, the free queue's links current. */
    tesi_record_t *record;
    if (!(world->defer_depth | world->sparse_count | world->logged_components |
          world->index_stamping | world->free_stale) &&
        !world->rollback && (record = tesi_record_of(world, entity))) {
        tesi_remove_row_as(world, record->chunk, record->row, false);
        release_record_as(world, record, entity & TESI_INDEX_MASK, true);
        world->entity_count--;
        return TES_OK;
    }
    return despawn_general(world, entity);
}

tes_result_t tes_despawn_batch(tes_world_t *world, const tes_entity_t *entities, uint32_t n) {
    if (!world || (n && !entities)) return TES_ERR_INVALID_ARGUMENT;
    /* Validate first: a mark bit on each record's row finds duplicates without memory. While
     * deferring, entities a deferred spawn has not placed yet may be listed too. */
    bool deferring = tesi_deferring(world);
    tes_result_t result = TES_OK;
    uint32_t marked = 0;
    for (; marked < n; marked++) {
        tesi_record_t *record = tesi_record_of(world, entities[marked]);
        if (!record && deferring) record = tesi_pending_record(world, entities[marked]);
        if (!record) {
            result = TES_ERR_STALE_ENTITY;
            break;
        }
        if (record->row & TESI_ROW_MARK) {
            result = TES_ERR_DUPLICATE_ENTITY;
            break;
        }
        record->row |= TESI_ROW_MARK;
    }
    /* The common case: every record's mark comes off just before its despawn. A row that
     * swap-remove moves gets its new row number without the mark: that entity was checked. */
    if (result == TES_OK && !deferring && !world->sparse_count && !tesi_logging(world)) {
        for (uint32_t i = n; i-- > 0;) {
            tesi_record_t *record = tesi_record_at(world, entities[i] & TESI_INDEX_MASK);
            record->row &= ~TESI_ROW_MARK;
            tesi_despawn_record(world, record);
        }
        return TES_OK;
    }
    for (uint32_t i = 0; i < marked; i++) {
        tesi_record_at(world, entities[i] & TESI_INDEX_MASK)->row &= ~TESI_ROW_MARK;
    }
    if (result == TES_OK && deferring) {
        result = tesi_commands_reserve(world, n, 0); /* all recorded, or none */
        /* Back to front, as the call made at once despawns (below): the freed indices join
         * the free queue in the same order, and so do the handles spawned later. */
        for (uint32_t i = n; i-- > 0 && result == TES_OK;) {
            result = tesi_defer(world, TESI_CMD_DESPAWN, entities[i], 0, 0, 0, 0, NULL, 0);
        }
        return result;
    }
    if (result == TES_OK && world->sparse_count) return tesi_despawn_all(world, entities, n, true);
    if (result == TES_OK && tesi_logging(world)) result = tesi_logs_reserve(world, NULL, n);
    if (result != TES_OK) return result;
    /* Back to front: despawning a list in the order it was spawned then removes rows from
     * the archetype's end, where swap-remove has nothing to move. */
    for (uint32_t i = n; i-- > 0;) {
        tesi_despawn_record(world, tesi_record_at(world, entities[i] & TESI_INDEX_MASK));
    }
    return TES_OK;
}

/* ---- add and remove -------------------------------------------------------------------- */

/* The common add or remove, along a cached edge: a live entity, nothing to log, room in the
 * target; the caller has checked that no run defers it. Everything this path skips it also does not
 * need: an edge exists only for chunk components (sparse ones never join a set) and only after its
 * target was made, so no id, set or archetype is checked again. False: the general path decides. */
static inline bool step_cached(tes_world_t *world, tes_entity_t entity, tes_component_t component,
                               bool removing) {
    tesi_record_t *record = tesi_record_of(world, entity);
    /* Logged removals and checkpoints: the general path does their part. */
    if (!record || world->logged_components || world->rollback) return false;
    tesi_chunk_t *chunk = record->chunk;
    tesi_archetype_t *from = chunk->archetype;
    const tesi_edge_t *edge = tesi_edge_of(from, component);
    if (!edge) return false;
    tesi_archetype_t *to = edge->target;
    /* The edge of a component the entity has is "-C", else "+C": a no-op goes the long way. */
    if (!edge->plan || (to->component_count < from->component_count) != removing) return false;
    uint32_t row = record->row, dst_row;
    tesi_chunk_t *dst = tesi_row_take(world, to, &dst_row);
    if (!dst) return false;
    tesi_move_row(world, dst, dst_row, chunk, row, edge->plan);
    record->chunk = dst;
    record->row = dst_row;
    tesi_remove_row_as(world, chunk, row, false);
    return true;
}

/* Moves the entity to the archetype one component away: a row is taken in the target, the
 * shared columns are copied, and the old row is swap-removed. Everything step_cached does not
 * take; out of line, so that the cached path does not pay for its registers (a call's
 * prologue and epilogue were 37 instructions of an add's 310, callgrind). */
static __attribute__((noinline)) tes_result_t
step_general(tes_world_t *world, tes_entity_t entity, tes_component_t component, bool removing) {
    if (component < world->component_count && tesi_is_sparse(&world->components[component])) {
        return tesi_sparse_step(world, entity, component, removing);
    }
    if (tesi_deferring(world)) {
        tesi_record_t *placed = tesi_record_of(world, entity);
        tesi_record_t *pending = placed ? NULL : tesi_pending_record(world, entity);
        tes_result_t result = placed || pending ? TES_OK : TES_ERR_STALE_ENTITY;
        if (result == TES_OK && component >= world->component_count) {
            result = TES_ERR_UNKNOWN_COMPONENT;
        }
        if (result == TES_OK && pending) {
            /* The pending entity's target archetype follows its recorded adds and removes, so
             * later writes to it are checked against what it will have. */
            tesi_archetype_t *from = tesi_pending_archetype(world, pending), *to = from;
            const tesi_move_plan_t *plan;
            if ((tesi_type_index(from, component) != TESI_NO_TYPE) == removing) {
                result = tesi_graph_step(world, from, component, removing, &to, &plan);
            }
            if (result == TES_OK) pending->row = TESI_ROW_PENDING | to->id;
        }
        uint8_t kind = removing ? TESI_CMD_REMOVE : TESI_CMD_ADD;
        if (result == TES_OK) result = tesi_defer(world, kind, entity, component, 0, 0, 0, NULL, 0);
        if (result == TES_OK && placed && !removing) {
            tesi_note_add_record(world, placed, world->command_count - 1);
        }
        return result;
    }
    tesi_record_t *record = tesi_record_of(world, entity);
    if (!record) return TES_ERR_STALE_ENTITY;
    if (component >= world->component_count) return TES_ERR_UNKNOWN_COMPONENT;
    tesi_archetype_t *from = record->chunk->archetype, *to;
    if ((tesi_type_index(from, component) != TESI_NO_TYPE) != removing) return TES_OK;
    const tesi_move_plan_t *plan;
    uint32_t archetypes = world->archetype_count;
    tes_result_t result = tesi_graph_step(world, from, component, removing, &to, &plan);
    if (result == TES_OK) result = tesi_chunks_reserve(world, to, 1);
    if (result == TES_OK && removing && tesi_logging(world) &&
        world->components[component].removal_consumers) {
        result = tesi_logs_reserve(world, from, 1);
    }
    if (result != TES_OK) {
        tesi_archetypes_undo(world, archetypes); /* the one the step made, if it did */
        return result;
    }
    tesi_chunk_t *chunk = record->chunk, *dst;
    uint32_t row = record->row, dst_row;
    if (removing && tesi_logging(world)) tesi_log_removal(world, component, entity);
    tesi_chunk_take_rows(world, to, 1, &dst, &dst_row);
    tesi_move_row(world, dst, dst_row, chunk, row, plan);
    tesi_touch(world, entity & TESI_INDEX_MASK);
    record->chunk = dst;
    record->row = dst_row;
    tesi_remove_row(world, chunk, row);
    return TES_OK;
}

static inline tes_result_t step(tes_world_t *world, tes_entity_t entity, tes_component_t component,
                                bool removing) {
    if (!world) return TES_ERR_INVALID_ARGUMENT;
    if (!tesi_deferring(world) && step_cached(world, entity, component, removing)) return TES_OK;
    return step_general(world, entity, component, removing);
}

tes_result_t tes_add(tes_world_t *world, tes_entity_t entity, tes_component_t component) {
    return step(world, entity, component, false);
}

tes_result_t tes_remove(tes_world_t *world, tes_entity_t entity, tes_component_t component) {
    return step(world, entity, component, true);
}

tes_result_t tes_has(const tes_world_t *world, tes_entity_t entity, tes_component_t component,
                     bool *out_has) {
    if (!world || !out_has) return TES_ERR_INVALID_ARGUMENT;
    const tesi_record_t *record = tesi_record_of(world, entity);
    if (!record) return tesi_not_alive(world, entity);
    if (component >= world->component_count) return TES_ERR_UNKNOWN_COMPONENT;
    const tesi_component_t *c = &world->components[component];
    *out_has = tesi_is_sparse(c)
                   ? tesi_sparse_slot(&c->sparse, entity & TESI_INDEX_MASK) != 0
                   : tesi_type_index(record->chunk->archetype, component) != TESI_NO_TYPE;
    return TES_OK;
}

tes_result_t tes_location(const tes_world_t *world, tes_entity_t entity, tes_location_t *out) {
    if (!world || !out) return TES_ERR_INVALID_ARGUMENT;
    const tesi_record_t *record = tesi_record_of(world, entity);
    if (!record) return tesi_not_alive(world, entity);
    *out = (tes_location_t){record->chunk->archetype->id, record->chunk->index, record->row};
    return TES_OK;
}
