/* Queries: all / none / any terms over archetypes (matches cached, refreshed by looking only at
 * archetypes created since), Added / Changed filters walked through the first filter's dirty
 * lists, removal windows, and the runs (iterations) that make a query a consumer. */
#include "internal.h"

typedef struct visit_t {
    const tesi_chunk_t *chunk;
    uint32_t first; /* in rows */
    uint32_t count;
} visit_t;

typedef struct filter_t {
    tes_component_t component;
    bool added; /* else changed */
} filter_t;

struct tes_query_t {
    tes_component_t *terms; /* one allocation: all, none, any, removed */
    uint32_t term_count;
    const tes_component_t *all, *none, *any, *removed;
    uint32_t all_count, none_count, any_count, removed_count;
    filter_t *filters; /* the first one drives iteration */
    uint32_t filter_count;
    const tesi_tracker_t **filter_trackers; /* per chunk, one per filter */
    tesi_archetype_t **matched;
    uint32_t matched_count;
    uint32_t matched_slots;
    uint8_t *match_flags; /* by archetype id < archetypes_seen: 1 when it matches */
    uint32_t match_slots;
    uint32_t archetypes_seen;
    /* A filtered run's visits, collected when it starts: (chunk, its rows in `rows`). */
    struct visit_t *visits;
    uint32_t visit_count;
    uint32_t visit_slots;
    uint32_t *rows;
    uint32_t row_slots;
    uint32_t visit_rows; /* rows of all visits */
    /* What tes_query_collect and tes_query_apply hand out, valid until the next run. */
    tes_entity_t *output;
    uint32_t output_slots;
    uint32_t *removed_counts;
    uint32_t removed_count_slots;
    uint64_t last_run;
    uint32_t live;  /* iterations in progress */
    uint32_t index; /* in world->queries */
};

static tes_result_t collect_visits(tes_world_t *world, tes_query_t *q, uint64_t this_run);

static bool is_consumer(const tes_query_t *q) {
    return q->filter_count || q->removed_count;
}

static bool contains(const tes_component_t *list, uint32_t n, tes_component_t c) {
    for (uint32_t i = 0; i < n; i++) {
        if (list[i] == c) return true;
    }
    return false;
}

/* ---- consumers and levels ---------------------------------------------------------------- */

uint64_t tesi_min_last_run(const tes_world_t *world, tes_component_t component, bool removal) {
    uint64_t min = UINT64_MAX;
    for (uint32_t i = 0; i < world->query_count; i++) {
        const tes_query_t *q = world->queries[i];
        bool consumes = removal ? contains(q->removed, q->removed_count, component)
                                : q->filter_count && q->filters[0].component == component;
        if (consumes && q->last_run < min) min = q->last_run;
    }
    return min;
}

/* Adds (sign = +1) or takes back (-1) the query's demands on tracking levels and logs. */
static void count_consumers(tes_world_t *world, const tes_query_t *q, int sign) {
    for (uint32_t i = 0; i < q->filter_count; i++) {
        tes_component_t c = q->filters[i].component;
        bool seen = false;
        for (uint32_t j = 0; j < i; j++)
            seen |= q->filters[j].component == c;
        if (seen) continue;
        tesi_component_t *comp = &world->components[c];
        if (c == q->filters[0].component) {
            comp->dirty_consumers += (uint32_t)sign;
        } else {
            comp->tick_consumers += (uint32_t)sign;
        }
    }
    for (uint32_t i = 0; i < q->removed_count; i++) {
        tesi_component_t *comp = &world->components[q->removed[i]];
        bool was_logged = comp->removal_consumers > 0;
        comp->removal_consumers += (uint32_t)sign;
        world->logged_components += (comp->removal_consumers > 0) - was_logged;
    }
}

/* Applies the levels the counts now ask for. Lowering never fails; raising may run out of
 * memory, and is then undone by the caller taking the counts back and calling this again. */
static tes_result_t apply_levels(tes_world_t *world, const tes_query_t *q, bool reseed) {
    tes_result_t result = TES_OK;
    for (uint32_t i = 0; i < q->filter_count && result == TES_OK; i++) {
        result = tesi_tracking_update(world, q->filters[i].component, reseed && i == 0);
    }
    return result;
}

/* ---- creation -------------------------------------------------------------------------- */

static tes_result_t check_ids(const tes_world_t *world, const tes_component_t *list, uint32_t n) {
    if (n && !list) return TES_ERR_INVALID_ARGUMENT;
    for (uint32_t i = 0; i < n; i++) {
        if (list[i] >= world->component_count) return TES_ERR_UNKNOWN_COMPONENT;
    }
    return TES_OK;
}

static void query_free(tes_world_t *world, tes_query_t *q) {
    tesi_free(world, q->terms, q->term_count * sizeof *q->terms);
    tesi_free(world, q->filters, q->filter_count * sizeof *q->filters);
    tesi_free(world, q->filter_trackers, q->filter_count * sizeof *q->filter_trackers);
    tesi_free(world, q->matched, q->matched_slots * sizeof *q->matched);
    tesi_free(world, q->match_flags, q->match_slots);
    tesi_free(world, q->rows, q->row_slots * sizeof *q->rows);
    tesi_free(world, q->visits, q->visit_slots * sizeof *q->visits);
    tesi_free(world, q->output, q->output_slots * sizeof *q->output);
    tesi_free(world, q->removed_counts, q->removed_count_slots * sizeof *q->removed_counts);
    tesi_free(world, q, sizeof *q);
}

tes_result_t tes_query_create(tes_world_t *world, const tes_query_desc_t *desc,
                              tes_query_t **out_query) {
    if (!world || !desc || !out_query) return TES_ERR_INVALID_ARGUMENT;
    const tes_component_t *lists[] = {desc->all,   desc->none,    desc->any,
                                      desc->added, desc->changed, desc->removed};
    const uint32_t counts[] = {desc->all_count,   desc->none_count,    desc->any_count,
                               desc->added_count, desc->changed_count, desc->removed_count};
    uint64_t total = 0;
    for (int i = 0; i < 6; i++) {
        tes_result_t result = check_ids(world, lists[i], counts[i]);
        if (result != TES_OK) return result;
        total += counts[i];
    }
    if (total > 4u * TES_MAX_COMPONENTS) return TES_ERR_INVALID_ARGUMENT;
    tes_result_t result = tesi_reserve(world, (void **)&world->queries, &world->query_slots,
                                       world->query_count + 1, sizeof *world->queries, 8);
    if (result != TES_OK) return result;

    tes_query_t *q = tesi_alloc(world, sizeof *q);
    if (!q) return TES_ERR_OUT_OF_MEMORY;
    *q = (tes_query_t){0};
    /* all = desc.all plus every filter component (a filter implies presence), deduplicated. */
    uint32_t filters = desc->added_count + desc->changed_count;
    q->term_count =
        desc->all_count + filters + desc->none_count + desc->any_count + desc->removed_count;
    q->filter_count = filters;
    bool ok = true;
    if (q->term_count) ok = (q->terms = tesi_alloc(world, q->term_count * sizeof *q->terms));
    if (ok && filters) {
        ok = (q->filters = tesi_alloc(world, filters * sizeof *q->filters)) &&
             (q->filter_trackers = tesi_alloc(world, filters * sizeof *q->filter_trackers));
    }
    if (!ok) {
        query_free(world, q);
        return TES_ERR_OUT_OF_MEMORY;
    }
    tes_component_t *t = q->terms;
    q->all = t;
    for (uint32_t i = 0; i < desc->all_count; i++) {
        if (!contains(q->all, q->all_count, desc->all[i])) t[q->all_count++] = desc->all[i];
    }
    for (uint32_t i = 0; i < filters; i++) {
        bool added = i < desc->added_count;
        tes_component_t c = added ? desc->added[i] : desc->changed[i - desc->added_count];
        q->filters[i] = (filter_t){c, added};
        if (!contains(q->all, q->all_count, c)) t[q->all_count++] = c;
    }
    t += q->all_count;
    q->none = t;
    q->none_count = desc->none_count;
    if (desc->none_count) memcpy(t, desc->none, desc->none_count * sizeof *t);
    t += q->none_count;
    q->any = t;
    q->any_count = desc->any_count;
    if (desc->any_count) memcpy(t, desc->any, desc->any_count * sizeof *t);
    t += q->any_count;
    q->removed = t;
    for (uint32_t i = 0; i < desc->removed_count; i++) {
        if (!contains(q->removed, q->removed_count, desc->removed[i])) {
            t[q->removed_count++] = desc->removed[i];
        }
    }

    count_consumers(world, q, +1);
    result = apply_levels(world, q, true);
    if (result != TES_OK) {
        count_consumers(world, q, -1);
        apply_levels(world, q, false);
        query_free(world, q);
        return result;
    }
    q->index = world->query_count;
    world->queries[world->query_count++] = q;
    *out_query = q;
    return TES_OK;
}

void tes_query_destroy(tes_world_t *world, tes_query_t *query) {
    if (!world || !query || query->live) return;
    world->queries[query->index] = world->queries[--world->query_count];
    world->queries[query->index]->index = query->index;
    count_consumers(world, query, -1);
    apply_levels(world, query, false);
    query_free(world, query);
}

uint64_t tes_query_last_run(const tes_query_t *query) {
    return query ? query->last_run : 0;
}

void tesi_queries_fini(tes_world_t *world) {
    for (uint32_t i = 0; i < world->query_count; i++)
        query_free(world, world->queries[i]);
    tesi_free(world, world->queries, world->query_slots * sizeof *world->queries);
}

/* ---- matching -------------------------------------------------------------------------- */

static bool matches(const tes_query_t *q, const tesi_archetype_t *a) {
    for (uint32_t i = 0; i < q->all_count; i++) {
        if (tesi_type_index(a, q->all[i]) == TESI_NO_TYPE) return false;
    }
    for (uint32_t i = 0; i < q->none_count; i++) {
        if (tesi_type_index(a, q->none[i]) != TESI_NO_TYPE) return false;
    }
    if (!q->any_count) return true;
    for (uint32_t i = 0; i < q->any_count; i++) {
        if (tesi_type_index(a, q->any[i]) != TESI_NO_TYPE) return true;
    }
    return false;
}

/* Looks only at archetypes created since the last refresh (ids are dense and never reused). */
static tes_result_t refresh(tes_world_t *world, tes_query_t *q) {
    if (q->archetypes_seen == world->archetype_count) return TES_OK;
    tes_result_t result = tesi_reserve(world, (void **)&q->match_flags, &q->match_slots,
                                       world->archetype_count, 1, 64);
    if (result != TES_OK) return result;
    for (; q->archetypes_seen < world->archetype_count; q->archetypes_seen++) {
        tesi_archetype_t *a = world->archetypes[q->archetypes_seen];
        q->match_flags[a->id] = 0;
        if (!matches(q, a)) continue;
        result = tesi_reserve(world, (void **)&q->matched, &q->matched_slots, q->matched_count + 1,
                              sizeof *q->matched, 8);
        if (result != TES_OK) return result;
        q->matched[q->matched_count++] = a;
        q->match_flags[a->id] = 1;
    }
    return TES_OK;
}

/* ---- runs ------------------------------------------------------------------------------ */

/* A run is prepared (everything that can fail) and then started (nothing can fail), so that
 * tes_query_collect and tes_query_apply can reserve their output in between and fail without
 * consuming the run. */
tes_result_t tesi_query_prepare(tes_world_t *world, tes_query_t *q, uint64_t *out_rows) {
    /* One live run per consumer: a second would share its visits and move last_run back. */
    if (q->live && is_consumer(q)) return TES_ERR_QUERY_IN_USE;
    tes_result_t result = refresh(world, q);
    if (result == TES_OK && q->filter_count) result = collect_visits(world, q, world->change_tick);
    if (result != TES_OK || !out_rows) return result;
    uint64_t rows = q->visit_rows;
    if (!q->filter_count) {
        rows = 0;
        for (uint32_t i = 0; i < q->matched_count; i++)
            rows += q->matched[i]->entity_count;
    }
    *out_rows = rows;
    return TES_OK;
}

void tesi_query_start(tes_world_t *world, tes_query_t *q, tes_iter_t *out_iter) {
    *out_iter = (tes_iter_t){.this_run = world->change_tick, .world_ = world, .query_ = q};
    /* A consumer's run takes the current tick; writes from now on carry a newer one. */
    if (is_consumer(q)) world->change_tick++;
    q->live++;
    world->defer_depth++;
}

tes_result_t tes_query_iter(tes_world_t *world, tes_query_t *query, tes_iter_t *out_iter) {
    if (!world || !query || !out_iter) return TES_ERR_INVALID_ARGUMENT;
    tes_result_t result = tesi_query_prepare(world, query, NULL);
    if (result == TES_OK) tesi_query_start(world, query, out_iter);
    return result;
}

bool tesi_query_requires(const tes_query_t *q, tes_component_t component) {
    return contains(q->all, q->all_count, component);
}

tes_result_t tesi_query_output(tes_world_t *world, tes_query_t *q, uint64_t n, tes_entity_t **out) {
    /* Doubling may ask for up to 2n: keep that within size_t (wasm32). */
    if (n > UINT32_MAX || n * 2u * sizeof *q->output > SIZE_MAX) return TES_ERR_OUT_OF_MEMORY;
    tes_result_t result = tesi_reserve(world, (void **)&q->output, &q->output_slots, (uint32_t)n,
                                       sizeof *q->output, 64);
    if (result == TES_OK) *out = q->output;
    return result;
}

static bool in_window(uint64_t tick, uint64_t last_run, uint64_t this_run) {
    return tick > last_run && tick <= this_run;
}

/* Writes to `out` the chunk's rows that pass every filter; returns how many. */
static uint32_t filter_rows(tes_query_t *q, const tesi_chunk_t *chunk, uint64_t this_run,
                            uint32_t *out) {
    const tesi_archetype_t *a = chunk->archetype;
    for (uint32_t f = 0; f < q->filter_count; f++) {
        q->filter_trackers[f] = chunk->trackers[tesi_type_index(a, q->filters[f].component)];
    }
    const tesi_tracker_t *primary = q->filter_trackers[0];
    uint32_t n = 0;
    for (uint32_t d = 0; d < primary->dirty_count; d++) {
        uint32_t row = primary->dirty[d];
        if (row >= chunk->count) continue; /* vacated since it was listed */
        bool pass = true;
        for (uint32_t f = 0; f < q->filter_count && pass; f++) {
            const tesi_tracker_t *t = q->filter_trackers[f];
            uint64_t tick = q->filters[f].added ? t->added[row] : t->changed[row];
            pass = in_window(tick, q->last_run, this_run);
        }
        if (pass) out[n++] = row;
    }
    return n;
}

/* A filtered run decides what it visits when it starts: the rows whose ticks are in the window
 * now. A row written again during the run, before the run reached it, is then still reported
 * by this run for the earlier write, and by the next run for the new one. Walks only the
 * first filter's trackers that hold dirty entries. */
static tes_result_t collect_visits(tes_world_t *world, tes_query_t *q, uint64_t this_run) {
    const tesi_component_t *comp = &world->components[q->filters[0].component];
    uint64_t most = 0;
    for (uint32_t i = 0; i < comp->dirty_set_count; i++)
        most += comp->dirty_set[i]->dirty_count;
    if (most > UINT32_MAX) return TES_ERR_OUT_OF_MEMORY;
    tes_result_t result = tesi_reserve(world, (void **)&q->visits, &q->visit_slots,
                                       comp->dirty_set_count, sizeof *q->visits, 16);
    if (result == TES_OK) {
        result = tesi_reserve(world, (void **)&q->rows, &q->row_slots, (uint32_t)most,
                              sizeof *q->rows, 64);
    }
    if (result != TES_OK) return result;
    uint32_t used = 0;
    q->visit_count = 0;
    for (uint32_t i = 0; i < comp->dirty_set_count; i++) {
        const tesi_chunk_t *chunk = comp->dirty_set[i]->chunk;
        if (!q->match_flags[chunk->archetype->id]) continue;
        uint32_t n = filter_rows(q, chunk, this_run, q->rows + used);
        if (!n) continue;
        q->visits[q->visit_count++] = (visit_t){chunk, used, n};
        used += n;
    }
    q->visit_rows = used;
    return TES_OK;
}

static void finish(tes_iter_t *it) {
    if (it->done_) return;
    it->done_ = true;
    tes_query_t *q = it->query_;
    tes_world_t *world = it->world_;
    if (is_consumer(q)) q->last_run = it->this_run;
    q->live--;
    if (--world->defer_depth == 0) tesi_flush(world);
}

/* Sets the iterator's public fields to a chunk and its rows (NULL: all of them). */
static bool visit(tes_iter_t *it, const tesi_chunk_t *chunk, const uint32_t *rows,
                  uint32_t row_count) {
    it->archetype = chunk->archetype->id;
    it->chunk = chunk->index;
    it->count = chunk->count;
    it->entities = tesi_chunk_entities(chunk);
    it->rows = rows;
    it->row_count = row_count;
    return true;
}

bool tes_iter_next(tes_iter_t *it) {
    if (!it || it->done_) return false;
    tes_query_t *q = it->query_;
    if (q->filter_count) {
        /* Sparse path: the visits collected when the run started. */
        if (it->chunk_index_ < q->visit_count) {
            const visit_t *v = &q->visits[it->chunk_index_++];
            return visit(it, v->chunk, q->rows + v->first, v->count);
        }
        finish(it);
        return false;
    }
    /* Dense path: every row of every chunk of every matching archetype. */
    while (it->archetype_index_ < q->matched_count) {
        const tesi_archetype_t *a = q->matched[it->archetype_index_];
        if (it->chunk_index_ >= a->chunk_count) {
            it->archetype_index_++;
            it->chunk_index_ = 0;
            continue;
        }
        const tesi_chunk_t *chunk = a->chunks[it->chunk_index_++];
        if (chunk->count) return visit(it, chunk, NULL, chunk->count);
    }
    finish(it);
    return false;
}

void tes_iter_fini(tes_iter_t *it) {
    if (it) finish(it);
}

tes_result_t tes_iter_column(tes_iter_t *it, tes_component_t component, uint32_t field,
                             void **out_column) {
    if (!it || it->done_ || !it->entities) return TES_ERR_INVALID_ARGUMENT;
    return tes_chunk_column(it->world_, it->archetype, it->chunk, component, field, out_column);
}

/* First index of the log whose tick is above `tick` (ticks never decrease along the log). */
static uint32_t log_after(const tesi_removal_log_t *log, uint64_t tick) {
    uint32_t lo = 0, hi = log->count;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (log->ticks[mid] <= tick) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

tes_result_t tes_iter_removed(tes_iter_t *it, tes_component_t component,
                              const tes_entity_t **out_entities, uint32_t *out_count) {
    if (!it || it->done_ || !out_entities || !out_count) return TES_ERR_INVALID_ARGUMENT;
    const tes_query_t *q = it->query_;
    if (!contains(q->removed, q->removed_count, component)) return TES_ERR_INVALID_ARGUMENT;
    const tesi_removal_log_t *log = &it->world_->components[component].log;
    uint32_t begin = log_after(log, q->last_run), end = log_after(log, it->this_run);
    *out_entities = log->entities + begin;
    *out_count = end - begin;
    return TES_OK;
}

/* ---- collecting a run ------------------------------------------------------------------ */

tes_result_t tes_query_collect(tes_world_t *world, tes_query_t *query, tes_collect_t *out) {
    if (!world || !query || !out || !is_consumer(query)) return TES_ERR_INVALID_ARGUMENT;
    /* Only a filtered run has entities to report: the dense path would walk the world. */
    uint64_t rows = 0;
    tes_result_t result = tesi_query_prepare(world, query, query->filter_count ? &rows : NULL);
    if (result != TES_OK) return result;
    /* The windows the run will have: this_run is the tick the start takes. */
    uint64_t this_run = world->change_tick, removed_total = 0;
    for (uint32_t i = 0; i < query->removed_count; i++) {
        const tesi_removal_log_t *log = &world->components[query->removed[i]].log;
        removed_total += log_after(log, this_run) - log_after(log, query->last_run);
    }
    result = tesi_reserve(world, (void **)&query->removed_counts, &query->removed_count_slots,
                          query->removed_count, sizeof *query->removed_counts, 4);
    tes_entity_t *output = NULL;
    if (result == TES_OK) result = tesi_query_output(world, query, rows + removed_total, &output);
    if (result != TES_OK) return result;

    tes_iter_t it;
    tesi_query_start(world, query, &it);
    /* Removals first, while the run is live (its end may flush deferred commands). They go
     * after the run's `rows` entities. */
    uint32_t r = (uint32_t)rows;
    for (uint32_t i = 0; i < query->removed_count; i++) {
        const tesi_removal_log_t *log = &world->components[query->removed[i]].log;
        uint32_t begin = log_after(log, query->last_run), end = log_after(log, this_run);
        if (end > begin) memcpy(output + r, log->entities + begin, (end - begin) * sizeof *output);
        query->removed_counts[i] = end - begin;
        r += end - begin;
    }
    uint32_t n = 0;
    if (query->filter_count) {
        while (tes_iter_next(&it)) {
            for (uint32_t i = 0; i < it.row_count; i++)
                output[n++] = it.entities[it.rows ? it.rows[i] : i];
        }
    }
    tes_iter_fini(&it);
    *out = (tes_collect_t){.entities = n ? output : NULL,
                           .count = n,
                           .removed = removed_total ? output + rows : NULL,
                           .removed_counts = query->removed_count ? query->removed_counts : NULL,
                           .removed_total = (uint32_t)removed_total};
    return TES_OK;
}

/* ---- marking and introspection --------------------------------------------------------- */

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

tes_result_t tes_mark_changed(tes_world_t *world, tes_entity_t entity, tes_component_t component) {
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
