/* Change tracking: per chunk, per tracked component, a tracker with the added and changed tick
 * of every row, a dirty bitmap and a deduplicated dirty list; per component a removal log.
 * Levels follow the consumers (queries with filters or removed terms): an untracked component
 * has no trackers at all, so its writes cost one branch. Also the public calls that mark and
 * read the trackers (tes_mark_changed, tes_chunk_mark_changed, tes_ticks). */
#include "internal.h"

/* ---- one tracker ----------------------------------------------------------------------- */

static uint32_t words_for(uint32_t capacity) {
    return (capacity + 63u) / 64u;
}

static tesi_tracker_t *tracker_new(tes_world_t *world, tesi_chunk_t *chunk, uint32_t type) {
    uint32_t capacity = chunk->archetype->capacity;
    tes_component_t component = chunk->archetype->components[type];
    tesi_component_t *comp = &world->components[component];
    /* The dirty set must be able to hold every tracker of the component. */
    if (tesi_reserve(world, (void **)&comp->dirty_set, &comp->dirty_set_slots,
                     comp->tracker_count + 1, sizeof *comp->dirty_set, 16) != TES_OK) {
        return NULL;
    }
    size_t header = (sizeof(tesi_tracker_t) + 15u) & ~(size_t)15u;
    size_t bytes =
        header + (size_t)capacity * 16u + (size_t)words_for(capacity) * 8u + (size_t)capacity * 4u;
    uint8_t *block = tesi_alloc(world, bytes);
    if (!block) return NULL;
    memset(block, 0, bytes);
    tesi_tracker_t *t = (tesi_tracker_t *)(void *)block;
    t->chunk = chunk;
    t->component = component;
    t->listed_at = TESI_UNLISTED;
    t->added = (uint64_t *)(void *)(block + header);
    t->changed = t->added + capacity;
    t->bits = t->changed + capacity;
    t->dirty = (uint32_t *)(void *)(t->bits + words_for(capacity));
    t->bytes = (uint32_t)bytes;
    comp->tracker_count++;
    return t;
}

/* Takes the tracker out of its component's dirty set (it has no dirty entries left). */
static void unlist(tes_world_t *world, tesi_tracker_t *t) {
    if (t->listed_at == TESI_UNLISTED) return;
    tesi_component_t *comp = &world->components[t->component];
    tesi_tracker_t *moved = comp->dirty_set[--comp->dirty_set_count];
    comp->dirty_set[t->listed_at] = moved;
    moved->listed_at = t->listed_at;
    t->listed_at = TESI_UNLISTED;
}

static void tracker_free(tes_world_t *world, tesi_tracker_t *t) {
    if (!t) return;
    unlist(world, t);
    world->components[t->component].tracker_count--;
    tesi_free(world, t, t->bytes);
}

/* Appends the row to the dirty list unless its bit says it is listed already; a tracker's
 * first entry puts it in its component's dirty set. */
static inline void list_row(tes_world_t *world, tesi_tracker_t *t, uint32_t row) {
    uint64_t mask = 1ull << (row & 63u);
    if (t->bits[row >> 6] & mask) return;
    t->bits[row >> 6] |= mask;
    if (t->listed_at == TESI_UNLISTED) {
        tesi_component_t *comp = &world->components[t->component];
        t->listed_at = comp->dirty_set_count;
        comp->dirty_set[comp->dirty_set_count++] = t;
    }
    t->dirty[t->dirty_count++] = row;
}

static inline bool is_listed(const tesi_tracker_t *t, uint32_t row) {
    return (t->bits[row >> 6] >> (row & 63u)) & 1u;
}

static tes_tracking_t level_at(const tes_world_t *world, const tesi_archetype_t *a, uint32_t type) {
    return world->components[a->components[type]].level;
}

/* ---- chunks ---------------------------------------------------------------------------- */

tes_result_t tesi_trackers_attach(tes_world_t *world, tesi_chunk_t *chunk) {
    const tesi_archetype_t *a = chunk->archetype;
    if (!a->tracked_count) return TES_OK;
    if (!chunk->trackers) {
        size_t bytes = a->component_count * sizeof *chunk->trackers;
        chunk->trackers = tesi_alloc(world, bytes);
        if (!chunk->trackers) return TES_ERR_OUT_OF_MEMORY;
        memset(chunk->trackers, 0, bytes);
    }
    for (uint32_t i = 0; i < a->component_count; i++) {
        if (level_at(world, a, i) == TES_UNTRACKED || chunk->trackers[i]) continue;
        chunk->trackers[i] = tracker_new(world, chunk, i);
        if (!chunk->trackers[i]) return TES_ERR_OUT_OF_MEMORY;
    }
    return TES_OK;
}

void tesi_trackers_detach(tes_world_t *world, tesi_chunk_t *chunk) {
    if (!chunk->trackers) return;
    const tesi_archetype_t *a = chunk->archetype;
    for (uint32_t i = 0; i < a->component_count; i++)
        tracker_free(world, chunk->trackers[i]);
    tesi_free(world, chunk->trackers, a->component_count * sizeof *chunk->trackers);
    chunk->trackers = NULL;
}

void tesi_trackers_stamp_added(tes_world_t *world, tesi_chunk_t *chunk, uint32_t row, uint32_t n) {
    const tesi_archetype_t *a = chunk->archetype;
    if (!a->tracked_count) return;
    for (uint32_t i = 0; i < a->component_count; i++) {
        tesi_tracker_t *t = chunk->trackers[i];
        if (!t) continue;
        bool dirty = level_at(world, a, i) == TES_TRACK_DIRTY;
        world->components[a->components[i]].stamped = world->change_tick;
        for (uint32_t r = row; r < row + n; r++) {
            t->added[r] = world->change_tick;
            t->changed[r] = 0;
            if (dirty) list_row(world, t, r);
        }
    }
}

void tesi_trackers_copy(tes_world_t *world, tesi_chunk_t *dst, uint32_t dst_row,
                        const tesi_chunk_t *src, uint32_t src_row, uint32_t n) {
    const tesi_archetype_t *da = dst->archetype, *sa = src->archetype;
    if (!da->tracked_count) return;
    for (uint32_t i = 0; i < da->component_count; i++) {
        tesi_tracker_t *t = dst->trackers[i];
        if (!t) continue;
        bool dirty = level_at(world, da, i) == TES_TRACK_DIRTY;
        uint32_t j = da == sa ? i : tesi_type_index(sa, da->components[i]);
        const tesi_tracker_t *from = j != TESI_NO_TYPE && src->trackers ? src->trackers[j] : NULL;
        for (uint32_t k = 0; k < n; k++) {
            uint32_t r = dst_row + k;
            if (from) {
                /* A kept component keeps its ticks, and its dirty entry (the swap-remove rule:
                 * a moved row that was dirty must stay visible at its new row). */
                t->added[r] = from->added[src_row + k];
                t->changed[r] = from->changed[src_row + k];
                if (dirty && is_listed(from, src_row + k)) list_row(world, t, r);
            } else if (j != TESI_NO_TYPE) {
                t->added[r] = t->changed[r] = 0; /* was untracked there: no history */
            } else {
                t->added[r] = world->change_tick; /* gained by this move */
                t->changed[r] = 0;
                world->components[da->components[i]].stamped = world->change_tick;
                if (dirty) list_row(world, t, r);
            }
        }
    }
}

void tesi_trackers_clear_row(tesi_chunk_t *chunk, uint32_t row) {
    const tesi_archetype_t *a = chunk->archetype;
    if (!a->tracked_count) return;
    for (uint32_t i = 0; i < a->component_count; i++) {
        tesi_tracker_t *t = chunk->trackers[i];
        if (t) t->added[row] = t->changed[row] = 0;
    }
}

void tesi_mark_changed(tes_world_t *world, tesi_chunk_t *chunk, uint32_t type, uint32_t row) {
    tesi_tracker_t *t = chunk->trackers ? chunk->trackers[type] : NULL;
    if (!t) return;
    tesi_component_t *c = &world->components[chunk->archetype->components[type]];
    c->stamped = t->changed[row] = world->change_tick;
    if (c->level == TES_TRACK_DIRTY) list_row(world, t, row);
}

void tesi_mark_rows(tes_world_t *world, tesi_chunk_t *chunk, uint32_t type, const uint32_t *rows,
                    uint32_t n) {
    tesi_tracker_t *t = chunk->trackers ? chunk->trackers[type] : NULL;
    if (!t) return; /* untracked here */
    uint64_t tick = world->change_tick;
    tesi_component_t *c = &world->components[chunk->archetype->components[type]];
    c->stamped = tick;
    bool dirty = c->level == TES_TRACK_DIRTY;
    if (rows) {
        for (uint32_t i = 0; i < n; i++) {
            t->changed[rows[i]] = tick;
            if (dirty) list_row(world, t, rows[i]);
        }
        return;
    }
    /* Rows 0..n-1: what hosts mark after writing a whole chunk, every frame. The tick stores
     * are a straight loop; 64 rows whose bits are all set already (the steady state of a
     * chunk written every frame) cost one word compare instead of 64 bit tests. */
    for (uint32_t i = 0; i < n; i++)
        t->changed[i] = tick;
    if (!dirty) return;
    for (uint32_t word = 0; word * 64u < n; word++) {
        uint32_t rows_here = n - word * 64u < 64u ? n - word * 64u : 64u;
        uint64_t want = rows_here == 64u ? ~0ull : (1ull << rows_here) - 1u;
        if ((t->bits[word] & want) == want) continue;
        for (uint32_t r = word * 64u; r < word * 64u + rows_here; r++)
            list_row(world, t, r);
    }
}

/* ---- removal logs ---------------------------------------------------------------------- */

tes_result_t tesi_ticked_reserve(tes_world_t *world, void **entries, size_t entry_bytes,
                                 uint64_t **ticks, uint32_t *slots, uint32_t count, uint64_t n) {
    if (count + n <= *slots) return TES_OK;
    uint64_t want = *slots ? *slots : 64;
    while (want < count + n)
        want *= 2;
    /* Both arrays' bytes must fit a size_t (wasm32) and the counts a uint32_t. */
    if (want > UINT32_MAX || want > SIZE_MAX / 16) return TES_ERR_OUT_OF_MEMORY;
    void *grown = tesi_alloc(world, (size_t)want * entry_bytes);
    uint64_t *grown_ticks = grown ? tesi_alloc(world, (size_t)want * sizeof *grown_ticks) : NULL;
    if (!grown_ticks) {
        tesi_free(world, grown, (size_t)want * entry_bytes);
        return TES_ERR_OUT_OF_MEMORY;
    }
    if (count) {
        memcpy(grown, *entries, count * entry_bytes);
        memcpy(grown_ticks, *ticks, count * sizeof *grown_ticks);
    }
    tesi_free(world, *entries, *slots * entry_bytes);
    tesi_free(world, *ticks, *slots * sizeof **ticks);
    *entries = grown;
    *ticks = grown_ticks;
    *slots = (uint32_t)want;
    return TES_OK;
}

void tesi_ticked_prune(void *entries, size_t entry_bytes, uint64_t *ticks, uint32_t *count,
                       uint64_t min) {
    uint32_t drop = tesi_log_after(ticks, *count, min);
    if (!drop) return;
    *count -= drop;
    memmove(entries, (uint8_t *)entries + (size_t)drop * entry_bytes, *count * entry_bytes);
    memmove(ticks, ticks + drop, *count * sizeof *ticks);
}

static tes_result_t log_reserve(tes_world_t *world, tesi_removal_log_t *log, uint32_t n) {
    return tesi_ticked_reserve(world, (void **)&log->entities, sizeof *log->entities, &log->ticks,
                               &log->slots, log->count, n);
}

tes_result_t tesi_logs_reserve(tes_world_t *world, const tesi_archetype_t *archetype, uint32_t n) {
    uint32_t count = archetype ? archetype->component_count : world->component_count;
    for (uint32_t i = 0; i < count; i++) {
        tesi_component_t *c = &world->components[archetype ? archetype->components[i] : i];
        if (!c->removal_consumers) continue;
        tes_result_t result = log_reserve(world, &c->log, n);
        if (result != TES_OK) return result;
    }
    return TES_OK;
}

tes_result_t tesi_log_reserve(tes_world_t *world, tes_component_t component, uint32_t n) {
    tesi_component_t *c = &world->components[component];
    return c->removal_consumers ? log_reserve(world, &c->log, n) : TES_OK;
}

void tesi_log_removal(tes_world_t *world, tes_component_t component, tes_entity_t e) {
    tesi_component_t *c = &world->components[component];
    if (!c->removal_consumers) return;
    c->log.entities[c->log.count] = e;
    c->log.ticks[c->log.count++] = world->change_tick;
}

void tesi_log_removals(tes_world_t *world, const tesi_archetype_t *archetype, tes_entity_t e) {
    for (uint32_t i = 0; i < archetype->component_count; i++) {
        tesi_log_removal(world, archetype->components[i], e);
    }
}

void tesi_logs_fini(tes_world_t *world) {
    for (uint32_t i = 0; i < world->component_count; i++) {
        tesi_removal_log_t *log = &world->components[i].log;
        tesi_free(world, log->entities, log->slots * sizeof *log->entities);
        tesi_free(world, log->ticks, log->slots * sizeof *log->ticks);
    }
}

/* ---- levels ---------------------------------------------------------------------------- */

/* Re-seeds a chunk's dirty list from its ticks: every occupied row with any history. */
static void reseed(tes_world_t *world, tesi_tracker_t *t, uint32_t count) {
    for (uint32_t r = 0; r < count; r++) {
        if (t->added[r] || t->changed[r]) list_row(world, t, r);
    }
}

static void clear_list(tes_world_t *world, tesi_tracker_t *t, uint32_t capacity) {
    memset(t->bits, 0, words_for(capacity) * sizeof *t->bits);
    t->dirty_count = 0;
    unlist(world, t);
}

/* Frees every tracker of the component (its level dropped to untracked, or a failed start). */
static void untrack(tes_world_t *world, tes_component_t component) {
    for (uint32_t k = 0; k < world->archetype_count; k++) {
        tesi_archetype_t *a = world->archetypes[k];
        uint32_t type = a ? tesi_type_index(a, component) : TESI_NO_TYPE;
        if (type == TESI_NO_TYPE) continue;
        for (uint32_t c = 0; c < a->chunk_count; c++) {
            tesi_chunk_t *chunk = a->chunks[c];
            if (!chunk->trackers) continue;
            tracker_free(world, chunk->trackers[type]);
            chunk->trackers[type] = NULL;
        }
    }
}

/* Makes the component untracked: frees its trackers, and lowers tracked_count of the first
 * `raised` archetypes (those counted as tracking it); chunks left with nothing tracked lose
 * their tracker arrays. Serves both the way down and the undo of a start that ran out of
 * memory part way. */
static void stop_tracking(tes_world_t *world, tes_component_t component, uint32_t raised) {
    world->components[component].level = TES_UNTRACKED;
    untrack(world, component);
    for (uint32_t m = 0; m < raised; m++) {
        tesi_archetype_t *a = world->archetypes[m];
        if (!a || tesi_type_index(a, component) == TESI_NO_TYPE) continue;
        if (--a->tracked_count) continue;
        for (uint32_t c = 0; c < a->chunk_count; c++)
            tesi_trackers_detach(world, a->chunks[c]);
    }
}

tes_result_t tesi_tracking_update(tes_world_t *world, tes_component_t component, bool reseed_now) {
    tesi_component_t *comp = &world->components[component];
    tes_tracking_t old = comp->level;
    tes_tracking_t level = comp->dirty_consumers  ? TES_TRACK_DIRTY
                           : comp->tick_consumers ? TES_TRACK_TICKS
                                                  : TES_UNTRACKED;
    if (level == old && !(reseed_now && level == TES_TRACK_DIRTY)) return TES_OK;
    world->access_epoch++; /* every way on changes the level, or tries to and puts it back */
    if (tesi_is_sparse(comp)) {
        /* The sparse set keeps its tick arrays at every level: nothing to allocate. */
        comp->level = level;
        tesi_sparse_tracking(world, component, old, reseed_now);
        return TES_OK;
    }
    if (level == TES_UNTRACKED) {
        stop_tracking(world, component, world->archetype_count);
        return TES_OK;
    }
    comp->level = level;
    for (uint32_t k = 0; k < world->archetype_count; k++) {
        tesi_archetype_t *a = world->archetypes[k];
        uint32_t type = a ? tesi_type_index(a, component) : TESI_NO_TYPE;
        if (type == TESI_NO_TYPE) continue;
        if (old == TES_UNTRACKED) a->tracked_count++;
        for (uint32_t c = 0; c < a->chunk_count; c++) {
            tesi_chunk_t *chunk = a->chunks[c];
            if (old == TES_UNTRACKED && tesi_trackers_attach(world, chunk) != TES_OK) {
                stop_tracking(world, component, k + 1);
                return TES_ERR_OUT_OF_MEMORY;
            }
            tesi_tracker_t *t = chunk->trackers[type];
            if (old == TES_UNTRACKED) {
                /* Tracking starts now: what exists counts as added now. */
                for (uint32_t r = 0; r < chunk->count; r++)
                    t->added[r] = world->change_tick;
                comp->stamped = world->change_tick;
            }
            if (level == TES_TRACK_DIRTY) {
                reseed(world, t, chunk->count);
            } else {
                clear_list(world, t, a->capacity);
            }
        }
    }
    return TES_OK;
}

/* ---- pruning --------------------------------------------------------------------------- */

/* Keeps the entries some consumer has not seen yet: an occupied row with a tick above min. */
/* Drops the dirty rows every consumer has seen (stamps up to `min`). With `all`, every stamp is
 * (min is the current tick): the rows go without reading their stamps, two cache misses a row in
 * a world of many chunks. */
static void prune_tracker(tesi_tracker_t *t, uint32_t count, uint64_t min, bool all) {
    uint32_t kept = 0;
    if (all) {
        for (uint32_t i = 0; i < t->dirty_count; i++)
            t->bits[t->dirty[i] >> 6] = 0;
        t->dirty_count = 0;
        return;
    }
    for (uint32_t i = 0; i < t->dirty_count; i++) {
        uint32_t r = t->dirty[i];
        if (r < count && (t->added[r] > min || t->changed[r] > min)) {
            t->dirty[kept++] = r;
        } else {
            t->bits[r >> 6] &= ~(1ull << (r & 63u));
        }
    }
    t->dirty_count = kept;
}

void tesi_prune_component(tes_world_t *world, tes_component_t c) {
    tesi_component_t *comp = &world->components[c];
    if (comp->removal_consumers) {
        tesi_ticked_prune(comp->log.entities, sizeof *comp->log.entities, comp->log.ticks,
                          &comp->log.count, tesi_min_last_run(world, c, TESI_REMOVED));
    }
    if (comp->relation.event_consumers) {
        tesi_relation_prune(world, c, tesi_min_last_run(world, c, TESI_PAIR_CHANGES));
    }
    if (comp->level != TES_TRACK_DIRTY) return;
    bool sparse = tesi_is_sparse(comp);
    if (sparse ? !comp->sparse.dirty_count : !comp->dirty_set_count) return;
    uint64_t min = tesi_min_last_run(world, c, TESI_FIRST_FILTER);
    if (min == comp->dirty_pruned_to) return;
    comp->dirty_pruned_to = min;
    if (sparse) {
        tesi_sparse_prune(world, c, min);
        return;
    }
    /* Backwards: a tracker that empties is swapped out with the set's last one. No stamp is
     * above `stamped`, so a floor at or past it drops every row unread. */
    bool all = min >= comp->stamped;
    for (uint32_t i = comp->dirty_set_count; i-- > 0;) {
        tesi_tracker_t *t = comp->dirty_set[i];
        prune_tracker(t, t->chunk->count, min, all);
        if (!t->dirty_count) unlist(world, t);
    }
}

void tesi_prune(tes_world_t *world) {
    world->prune_due = false;
    if (world->index_dirty_count) tesi_index_prune(world, tesi_replicators_floor(world));
    for (tes_component_t c = 0; c < world->component_count; c++)
        tesi_prune_component(world, c);
}

/* ---- marking and introspection (the public API over the trackers) ----------------------- */

/* The record of a live entity having `component`, and the component's position. */
static tes_result_t locate(const tes_world_t *world, tes_entity_t entity, tes_component_t component,
                           tesi_record_t **out, uint32_t *out_type) {
    if (!world) return TES_ERR_INVALID_ARGUMENT;
    tesi_record_t *record = tesi_record_of(world, entity);
    if (!record) return tesi_not_alive(world, entity);
    if (component >= world->component_count) return TES_ERR_UNKNOWN_COMPONENT;
    uint32_t type = tesi_type_index(record->chunk->archetype, component);
    if (type == TESI_NO_TYPE) return TES_ERR_MISSING_COMPONENT;
    *out = record;
    *out_type = type;
    return TES_OK;
}

/* The dense slot of a sparse component's member (`component` valid, entity alive). */
static tes_result_t sparse_member(const tes_world_t *world, tes_entity_t entity,
                                  tes_component_t component, uint32_t *out_slot) {
    uint32_t slot1 =
        tesi_sparse_slot(&world->components[component].sparse, entity & TESI_INDEX_MASK);
    if (!slot1) return TES_ERR_MISSING_COMPONENT;
    *out_slot = slot1 - 1;
    return TES_OK;
}

static bool sparse_id(const tes_world_t *world, tes_entity_t entity, tes_component_t component) {
    return world && component < world->component_count &&
           tesi_is_sparse(&world->components[component]) && tesi_record_of(world, entity);
}

tes_result_t tes_mark_changed(tes_world_t *world, tes_entity_t entity, tes_component_t component) {
    if (sparse_id(world, entity, component)) {
        uint32_t slot;
        tes_result_t result = sparse_member(world, entity, component, &slot);
        if (result == TES_OK) tesi_sparse_mark(world, component, slot);
        return result;
    }
    tesi_record_t *record;
    uint32_t type;
    tes_result_t result = locate(world, entity, component, &record, &type);
    if (result == TES_OK) tesi_mark_changed(world, record->chunk, type, record->row);
    return result;
}

tes_result_t tes_chunk_mark_changed(tes_world_t *world, tes_archetype_t archetype, uint32_t chunk,
                                    tes_component_t component, const uint32_t *rows, uint32_t n) {
    tesi_chunk_t *c;
    tes_result_t result = tesi_chunk_lookup(world, archetype, chunk, &c);
    if (result != TES_OK) return result;
    if (component >= world->component_count) return TES_ERR_UNKNOWN_COMPONENT;
    if (tesi_is_sparse(&world->components[component])) return TES_ERR_SPARSE_COMPONENT;
    uint32_t type = tesi_type_index(c->archetype, component);
    if (type == TESI_NO_TYPE) return TES_ERR_MISSING_COMPONENT;
    if (rows) {
        for (uint32_t i = 0; i < n; i++) {
            if (rows[i] >= c->count) return TES_ERR_INVALID_ARGUMENT;
        }
    }
    tesi_mark_rows(world, c, type, rows, rows ? n : c->count);
    return TES_OK;
}

tes_result_t tes_ticks(const tes_world_t *world, tes_entity_t entity, tes_component_t component,
                       uint64_t *out_added, uint64_t *out_changed) {
    if (sparse_id(world, entity, component)) {
        uint32_t slot;
        tes_result_t result = sparse_member(world, entity, component, &slot);
        if (result != TES_OK) return result;
        const tesi_sparse_t *s = &world->components[component].sparse;
        bool tracked = world->components[component].level != TES_UNTRACKED;
        if (out_added) *out_added = tracked ? s->added[slot] : 0;
        if (out_changed) *out_changed = tracked ? s->changed[slot] : 0;
        return TES_OK;
    }
    tesi_record_t *record;
    uint32_t type;
    tes_result_t result = locate(world, entity, component, &record, &type);
    if (result != TES_OK) return result;
    const tesi_tracker_t *t = record->chunk->trackers ? record->chunk->trackers[type] : NULL;
    if (out_added) *out_added = t ? t->added[record->row] : 0;
    if (out_changed) *out_changed = t ? t->changed[record->row] : 0;
    return TES_OK;
}

tes_result_t tes_component_tracking(const tes_world_t *world, tes_component_t component,
                                    tes_tracking_t *out) {
    if (!world || !out) return TES_ERR_INVALID_ARGUMENT;
    if (component >= world->component_count) return TES_ERR_UNKNOWN_COMPONENT;
    *out = world->components[component].level;
    return TES_OK;
}

/* ---- checks ---------------------------------------------------------------------------- */

tes_result_t tesi_trackers_validate(const tes_world_t *world, const tesi_chunk_t *chunk) {
    const tesi_archetype_t *a = chunk->archetype;
    if (!a->tracked_count) return chunk->trackers ? TES_ERR_CORRUPT : TES_OK;
    if (!chunk->trackers) return TES_ERR_CORRUPT;
    for (uint32_t i = 0; i < a->component_count; i++) {
        const tesi_tracker_t *t = chunk->trackers[i];
        tes_tracking_t level = level_at(world, a, i);
        if ((t != NULL) != (level != TES_UNTRACKED)) return TES_ERR_CORRUPT;
        if (!t) continue;
        if (t->dirty_count > a->capacity) return TES_ERR_CORRUPT;
        if (level != TES_TRACK_DIRTY && t->dirty_count) return TES_ERR_CORRUPT;
        /* Bit set exactly for listed rows: count the bits, check each listed row's bit. */
        uint32_t bits = 0;
        for (uint32_t w = 0; w < words_for(a->capacity); w++) {
            bits += (uint32_t)__builtin_popcountll(t->bits[w]);
        }
        if (bits != t->dirty_count) return TES_ERR_CORRUPT;
        /* In the component's dirty set exactly while it has entries. */
        const tesi_component_t *comp = &world->components[t->component];
        if (t->chunk != chunk || t->component != a->components[i]) return TES_ERR_CORRUPT;
        if ((t->listed_at != TESI_UNLISTED) != (t->dirty_count > 0)) return TES_ERR_CORRUPT;
        if (t->dirty_count &&
            (t->listed_at >= comp->dirty_set_count || comp->dirty_set[t->listed_at] != t)) {
            return TES_ERR_CORRUPT;
        }
        for (uint32_t d = 0; d < t->dirty_count; d++) {
            if (t->dirty[d] >= a->capacity || !is_listed(t, t->dirty[d])) return TES_ERR_CORRUPT;
        }
        for (uint32_t r = 0; r < chunk->count; r++) { /* no stamp above the latest */
            if (t->added[r] > comp->stamped || t->changed[r] > comp->stamped)
                return TES_ERR_CORRUPT;
        }
        for (uint32_t r = chunk->count; r < a->capacity; r++) {
            if (t->added[r] || t->changed[r]) return TES_ERR_CORRUPT; /* vacated rows are 0 */
        }
    }
    return TES_OK;
}
