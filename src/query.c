/* Queries: all / none / any terms over archetypes (matches cached, refreshed by looking only at
 * archetypes created since), row terms (sparse components and pairs, checked per entity),
 * Added / Changed filters, consumers and the tracking levels they ask for, removal and pair
 * event windows, and the runs (iterations) that make a query a consumer. What a run visits is
 * decided in visits.c; the structure both share is in query.h. */
#include "query.h"
#include "internal.h"

static bool is_consumer(const tes_query_t *q) {
    return q->filter_count || q->removed_count || q->pair_change_count;
}

/* Where the window of events of a consumer's next run starts. */
static uint64_t events_since(const tes_query_t *q) {
    return tesi_events_after(q, q->last_run);
}

/* A run that decides its rows when it starts (filters, row terms) rather than walking chunks. */
static bool collects(const tes_query_t *q) {
    return q->filter_count || q->row_term_count;
}

static bool contains(const tes_component_t *list, uint32_t n, tes_component_t c) {
    for (uint32_t i = 0; i < n; i++) {
        if (list[i] == c) return true;
    }
    return false;
}

/* ---- consumers and levels ---------------------------------------------------------------- */

uint64_t tesi_min_last_run(const tes_world_t *world, tes_component_t component,
                           tesi_consumer_t kind) {
    uint64_t min = UINT64_MAX;
    for (uint32_t i = 0; i < world->query_count; i++) {
        const tes_query_t *q = world->queries[i];
        bool consumes = kind == TESI_REMOVED ? contains(q->removed, q->removed_count, component)
                        : kind == TESI_PAIR_CHANGES
                            ? contains(q->pair_changes, q->pair_change_count, component)
                            : q->filter_count && q->filters[0].component == component;
        if (!consumes) continue;
        /* What a consumer still needs: events from its last run on, never from before it was
         * made; an Added first filter, the rows of everything that exists. */
        uint64_t since =
            kind == TESI_FIRST_FILTER && q->filters[0].added ? q->last_run : events_since(q);
        if (since < min) min = since;
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
    for (uint32_t i = 0; i < q->pair_change_count; i++) {
        tesi_relation_t *r = &world->components[q->pair_changes[i]].relation;
        r->event_consumers += (uint32_t)sign;
        if (!r->event_consumers) r->event_count = 0; /* nobody reads them any more */
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
    tesi_free(world, q->terms, q->term_slots * sizeof *q->terms);
    tesi_free(world, q->filters, q->filter_count * sizeof *q->filters);
    tesi_free(world, q->filter_ticks, q->filter_count * sizeof *q->filter_ticks);
    tesi_free(world, q->matched, q->matched_slots * sizeof *q->matched);
    tesi_free(world, q->match_flags, q->match_slots);
    tesi_free(world, q->rows, q->row_slots * sizeof *q->rows);
    tesi_free(world, q->visits, q->visit_slots * sizeof *q->visits);
    tesi_free(world, q->output, q->output_slots * sizeof *q->output);
    tesi_free(world, q->removed_counts, q->removed_count_slots * sizeof *q->removed_counts);
    tesi_free(world, q->row_terms, q->row_term_slots * sizeof *q->row_terms);
    tesi_free(world, q->pair_changes, q->pair_change_slots * sizeof *q->pair_changes);
    tesi_free(world, q->candidates, q->candidate_slots * sizeof *q->candidates);
    tesi_free(world, q->event_output, q->event_output_slots * sizeof *q->event_output);
    tesi_free(world, q->carried, q->carried_slots * sizeof *q->carried);
    tesi_free(world, q, sizeof *q);
}

static tes_result_t check_relations(const tes_world_t *world, const tes_query_desc_t *desc) {
    if ((desc->pair_count && !desc->pairs) || (desc->pair_change_count && !desc->pair_changes)) {
        return TES_ERR_INVALID_ARGUMENT;
    }
    for (uint32_t i = 0; i < desc->pair_count + desc->pair_change_count; i++) {
        bool term = i < desc->pair_count;
        tes_component_t c =
            term ? desc->pairs[i].relation : desc->pair_changes[i - desc->pair_count];
        if (c >= world->component_count) return TES_ERR_UNKNOWN_COMPONENT;
        if (!tesi_is_relation(&world->components[c])) return TES_ERR_NOT_A_RELATION;
        if (term && desc->pairs[i].op > TES_TERM_ANY) return TES_ERR_INVALID_ARGUMENT;
    }
    return TES_OK;
}

/* Adds a term: a chunk component to its list (`list`, deduplicated when `dedup`), a sparse one or
 * a pair to the row terms. */
static void add_term(const tes_world_t *world, tes_query_t *q, tes_component_t *list,
                     uint32_t *count, bool dedup, tes_component_t c, tes_entity_t target,
                     uint32_t op) {
    if (target || tesi_is_sparse(&world->components[c])) {
        for (uint32_t i = 0; i < q->row_term_count; i++) {
            const row_term_t *t = &q->row_terms[i];
            if (t->component == c && t->target == target && t->op == op) return;
        }
        q->row_terms[q->row_term_count++] = (row_term_t){c, target, op};
        q->row_any |= op == TES_TERM_ANY;
        return;
    }
    if (dedup && contains(list, *count, c)) return;
    list[(*count)++] = c;
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
    tes_result_t result = check_relations(world, desc);
    if (result != TES_OK) return result;
    total += (uint64_t)desc->pair_count + desc->pair_change_count;
    if (total > 4u * TES_MAX_COMPONENTS) return TES_ERR_INVALID_ARGUMENT;
    result = tesi_reserve(world, (void **)&world->queries, &world->query_slots,
                          world->query_count + 1, sizeof *world->queries, 8);
    if (result != TES_OK) return result;

    tes_query_t *q = tesi_alloc(world, sizeof *q);
    if (!q) return TES_ERR_OUT_OF_MEMORY;
    *q = (tes_query_t){0};
    /* all = desc.all plus every filter component (a filter implies presence), deduplicated. */
    uint32_t filters = desc->added_count + desc->changed_count;
    uint32_t row_slots =
        desc->all_count + filters + desc->none_count + desc->any_count + desc->pair_count;
    q->term_slots =
        desc->all_count + filters + desc->none_count + desc->any_count + desc->removed_count;
    q->filter_count = filters;
    q->row_term_slots = row_slots;
    q->pair_change_slots = desc->pair_change_count;
    bool ok = true;
    if (q->term_slots) ok = (q->terms = tesi_alloc(world, q->term_slots * sizeof *q->terms));
    if (ok && filters) {
        ok = (q->filters = tesi_alloc(world, filters * sizeof *q->filters)) &&
             (q->filter_ticks = tesi_alloc(world, filters * sizeof *q->filter_ticks));
    }
    /* Sized for every term that may turn out to be a row term. */
    if (ok && row_slots) ok = (q->row_terms = tesi_alloc(world, row_slots * sizeof *q->row_terms));
    if (ok && desc->pair_change_count) {
        ok = (q->pair_changes =
                  tesi_alloc(world, desc->pair_change_count * sizeof *q->pair_changes));
    }
    if (!ok) {
        query_free(world, q);
        return TES_ERR_OUT_OF_MEMORY;
    }
    tes_component_t *t = q->terms;
    q->all = t;
    for (uint32_t i = 0; i < desc->all_count; i++) {
        add_term(world, q, t, &q->all_count, true, desc->all[i], 0, TES_TERM_ALL);
    }
    for (uint32_t i = 0; i < filters; i++) {
        bool added = i < desc->added_count;
        tes_component_t c = added ? desc->added[i] : desc->changed[i - desc->added_count];
        q->filters[i] = (filter_t){c, added, tesi_is_sparse(&world->components[c])};
        add_term(world, q, t, &q->all_count, true, c, 0, TES_TERM_ALL);
    }
    t = TESI_PAST(t, q->all_count);
    q->none = t;
    for (uint32_t i = 0; i < desc->none_count; i++) {
        add_term(world, q, t, &q->none_count, false, desc->none[i], 0, TES_TERM_NONE);
    }
    t = TESI_PAST(t, q->none_count);
    q->any = t;
    for (uint32_t i = 0; i < desc->any_count; i++) {
        add_term(world, q, t, &q->any_count, false, desc->any[i], 0, TES_TERM_ANY);
    }
    t = TESI_PAST(t, q->any_count);
    for (uint32_t i = 0; i < desc->pair_count; i++) {
        const tes_pair_term_t *p = &desc->pairs[i];
        add_term(world, q, NULL, NULL, false, p->relation, p->target, p->op);
    }
    q->removed = t;
    for (uint32_t i = 0; i < desc->removed_count; i++) {
        if (!contains(q->removed, q->removed_count, desc->removed[i])) {
            t[q->removed_count++] = desc->removed[i];
        }
    }
    for (uint32_t i = 0; i < desc->pair_change_count; i++) {
        if (!contains(q->pair_changes, q->pair_change_count, desc->pair_changes[i])) {
            q->pair_changes[q->pair_change_count++] = desc->pair_changes[i];
        }
    }

    count_consumers(world, q, +1);
    /* An Added first filter reports every entity that exists, so its dirty list is re-seeded
     * from the ticks (pruning may have dropped rows others had seen); a Changed one starts now
     * and needs nothing from before. */
    result = apply_levels(world, q, filters && q->filters[0].added);
    if (result != TES_OK) {
        count_consumers(world, q, -1);
        apply_levels(world, q, false);
        query_free(world, q);
        return result;
    }
    q->index = world->query_count;
    world->queries[world->query_count++] = q;
    if (is_consumer(q)) {
        /* A consumer starts now: what was stamped so far is not its, what comes is. The tick
         * moves on, as at a run, so that the two never share a stamp (a write deduplicated
         * within one tick, like a pair's changed event, would otherwise be lost to it). */
        q->born = world->change_tick++;
    }
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

/* 0, MATCH or MATCH_ANY (see there). */
static uint8_t matches(const tes_query_t *q, const tesi_archetype_t *a) {
    for (uint32_t i = 0; i < q->all_count; i++) {
        if (tesi_type_index(a, q->all[i]) == TESI_NO_TYPE) return 0;
    }
    for (uint32_t i = 0; i < q->none_count; i++) {
        if (tesi_type_index(a, q->none[i]) != TESI_NO_TYPE) return 0;
    }
    if (!q->any_count && !q->row_any) return MATCH;
    for (uint32_t i = 0; i < q->any_count; i++) {
        if (tesi_type_index(a, q->any[i]) != TESI_NO_TYPE) return MATCH;
    }
    return q->row_any ? MATCH_ANY : 0;
}

/* Looks only at archetypes created since the last refresh (ids are never reused). */
static tes_result_t refresh(tes_world_t *world, tes_query_t *q) {
    if (q->archetypes_seen == world->archetype_count) return TES_OK;
    tes_result_t result = tesi_reserve(world, (void **)&q->match_flags, &q->match_slots,
                                       world->archetype_count, 1, 64);
    if (result != TES_OK) return result;
    for (; q->archetypes_seen < world->archetype_count; q->archetypes_seen++) {
        tesi_archetype_t *a = world->archetypes[q->archetypes_seen];
        q->match_flags[q->archetypes_seen] = 0;
        uint8_t match = a ? matches(q, a) : 0; /* NULL: reclaimed */
        if (!match) continue;
        result = tesi_reserve(world, (void **)&q->matched, &q->matched_slots, q->matched_count + 1,
                              sizeof *q->matched, 8);
        if (result != TES_OK) return result;
        q->matched[q->matched_count++] = a;
        q->match_flags[a->id] = match;
    }
    return TES_OK;
}

void tesi_queries_forget(tes_world_t *world, const uint8_t *doomed) {
    for (uint32_t i = 0; i < world->query_count; i++) {
        tes_query_t *q = world->queries[i];
        uint32_t kept = 0;
        for (uint32_t k = 0; k < q->matched_count; k++) {
            tesi_archetype_t *a = q->matched[k];
            if (doomed[a->id]) {
                q->match_flags[a->id] = 0;
            } else {
                q->matched[kept++] = a; /* in creation order still */
            }
        }
        q->matched_count = kept;
    }
}

void tesi_queries_unsee(tes_world_t *world, uint32_t count) {
    for (uint32_t i = 0; i < world->query_count; i++) {
        tes_query_t *q = world->queries[i];
        if (q->archetypes_seen > count) q->archetypes_seen = count;
    }
}

tes_result_t tesi_query_matches(tes_world_t *world, tes_query_t *q, tes_entity_t e, bool *out) {
    tes_result_t result = refresh(world, q);
    if (result != TES_OK) return result;
    const tesi_record_t *record = tesi_record_of(world, e);
    uint8_t match = record ? q->match_flags[record->chunk->archetype->id] : 0;
    *out = match && tesi_row_terms_hold(world, q, e, match);
    return TES_OK;
}

uint32_t tesi_query_terms(const tes_query_t *q, tes_component_t *out, uint32_t capacity) {
    uint32_t n = 0, chunk_terms = q->all_count + q->none_count + q->any_count;
    /* all, none and any are consecutive in q->terms. */
    for (uint32_t i = 0; i < chunk_terms; i++) {
        if (n < capacity) out[n] = q->all[i];
        n++;
    }
    for (uint32_t i = 0; i < q->row_term_count; i++) {
        if (n < capacity) out[n] = q->row_terms[i].component;
        n++;
    }
    return n;
}

bool tesi_query_names(const tes_query_t *q, tes_component_t component) {
    /* terms holds all (with the filters), none, any and removed, one after the other; filters
     * name their own. */
    uint32_t terms = q->all_count + q->none_count + q->any_count + q->removed_count;
    if (contains(q->terms, terms, component)) return true;
    for (uint32_t i = 0; i < q->row_term_count; i++) {
        if (q->row_terms[i].component == component) return true;
    }
    return contains(q->pair_changes, q->pair_change_count, component);
}

void tesi_query_hold(tes_query_t *q, uint64_t last_run) {
    /* The holder (a replicator) decides the window itself, from its baselines. */
    q->last_run = last_run;
    q->born = 0;
}

/* ---- runs ------------------------------------------------------------------------------ */

/* A run is prepared (everything that can fail) and then started (nothing can fail), so that
 * tes_query_collect and tes_query_apply can reserve their output in between and fail without
 * consuming the run. */
tes_result_t tesi_query_prepare(tes_world_t *world, tes_query_t *q, uint64_t *out_rows) {
    /* One live run per consumer: a second would share its visits and move last_run back. */
    if (q->live && is_consumer(q)) return TES_ERR_QUERY_IN_USE;
    tes_result_t result = refresh(world, q);
    if (result == TES_OK && q->carried_in_rows) {
        /* The rows an early end left to carry: out of the way of this run's walk. */
        result = tesi_reserve(world, (void **)&q->carried, &q->carried_slots, q->carried_count,
                              sizeof *q->carried, 16);
        if (result == TES_OK) {
            memcpy(q->carried, q->rows, (size_t)q->carried_count * sizeof *q->carried);
            q->carried_in_rows = false;
        }
    }
    if (result == TES_OK && collects(q)) result = tesi_collect_visits(world, q, world->change_tick);
    if (result != TES_OK || !out_rows) return result;
    uint64_t rows = q->visit_rows;
    if (!collects(q)) {
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
    /* The carried rows are this run's visits now (collected in prepare). */
    q->run_since = q->carried_count ? q->carried_since : q->last_run;
    q->carried_count = 0;
    q->live++;
    world->defer_depth++;
}

tes_result_t tes_query_iter(tes_world_t *world, tes_query_t *query, tes_iter_t *out_iter) {
    if (!world || !query || !out_iter) return TES_ERR_INVALID_ARGUMENT;
    tes_result_t result = tesi_query_prepare(world, query, NULL);
    if (result == TES_OK) tesi_query_start(world, query, out_iter);
    return result;
}

bool tesi_query_consumes(const tes_query_t *q) {
    return q->filter_count || q->removed_count || q->pair_change_count;
}

bool tesi_query_by_rows(const tes_query_t *q) {
    return q->row_term_count != 0;
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

static void finish(tes_iter_t *it) {
    if (it->done_) return;
    it->done_ = true;
    tes_query_t *q = it->query_;
    tes_world_t *world = it->world_;
    if (is_consumer(q)) {
        q->last_run = it->this_run;
        if (q->filter_count) tesi_carry_unvisited(q, it->chunk_index_);
        world->prune_due = true;
    }
    q->live--;
    tesi_defer_end(world);
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
    if (collects(q)) {
        /* The visits collected when the run started. */
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

uint32_t tesi_log_after(const uint64_t *ticks, uint32_t count, uint64_t tick) {
    uint32_t lo = 0, hi = count;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (ticks[mid] <= tick) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

static uint32_t log_after(const tesi_removal_log_t *log, uint64_t tick) {
    return tesi_log_after(log->ticks, log->count, tick);
}

/* The window (last_run, this_run] of a relation's pair events. */
static void event_window(const tesi_relation_t *r, uint64_t last_run, uint64_t this_run,
                         uint32_t *begin, uint32_t *end) {
    *begin = tesi_log_after(r->event_ticks, r->event_count, last_run);
    *end = tesi_log_after(r->event_ticks, r->event_count, this_run);
}

tes_result_t tes_iter_removed(tes_iter_t *it, tes_component_t component,
                              const tes_entity_t **out_entities, uint32_t *out_count) {
    if (!it || it->done_ || !out_entities || !out_count) return TES_ERR_INVALID_ARGUMENT;
    const tes_query_t *q = it->query_;
    if (!contains(q->removed, q->removed_count, component)) return TES_ERR_INVALID_ARGUMENT;
    const tesi_removal_log_t *log = &it->world_->components[component].log;
    uint32_t begin = log_after(log, events_since(q)), end = log_after(log, it->this_run);
    *out_entities = TESI_PAST(log->entities, begin);
    *out_count = end - begin;
    return TES_OK;
}

tes_result_t tes_iter_pair_events(tes_iter_t *it, tes_component_t relation,
                                  const tes_pair_event_t **out_events, uint32_t *out_count) {
    if (!it || it->done_ || !out_events || !out_count) return TES_ERR_INVALID_ARGUMENT;
    const tes_query_t *q = it->query_;
    if (!contains(q->pair_changes, q->pair_change_count, relation)) {
        return TES_ERR_INVALID_ARGUMENT;
    }
    const tesi_relation_t *r = &it->world_->components[relation].relation;
    uint32_t begin, end;
    event_window(r, events_since(q), it->this_run, &begin, &end);
    *out_events = TESI_PAST(r->events, begin);
    *out_count = end - begin;
    return TES_OK;
}

/* ---- collecting a run ------------------------------------------------------------------ */

tes_result_t tes_query_collect(tes_world_t *world, tes_query_t *query, tes_collect_t *out) {
    if (!world || !query || !out || !is_consumer(query)) return TES_ERR_INVALID_ARGUMENT;
    /* Only a filtered run has entities to report: the dense path would walk the world. */
    uint64_t rows = 0;
    tes_result_t result = tesi_query_prepare(world, query, query->filter_count ? &rows : NULL);
    if (!query->filter_count) rows = 0;
    if (result != TES_OK) return result;
    /* The windows the run will have: this_run is the tick the start takes. */
    uint64_t this_run = world->change_tick, removed_total = 0;
    for (uint32_t i = 0; i < query->removed_count; i++) {
        const tesi_removal_log_t *log = &world->components[query->removed[i]].log;
        removed_total += log_after(log, this_run) - log_after(log, events_since(query));
    }
    result = tesi_reserve(world, (void **)&query->removed_counts, &query->removed_count_slots,
                          query->removed_count, sizeof *query->removed_counts, 4);
    uint64_t events = 0;
    for (uint32_t i = 0; i < query->pair_change_count; i++) {
        uint32_t begin, end;
        event_window(&world->components[query->pair_changes[i]].relation, events_since(query),
                     this_run, &begin, &end);
        events += end - begin;
    }
    if (result == TES_OK && events) {
        result =
            events > UINT32_MAX / 2
                ? TES_ERR_OUT_OF_MEMORY
                : tesi_reserve(world, (void **)&query->event_output, &query->event_output_slots,
                               (uint32_t)events, sizeof *query->event_output, 16);
    }
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
        uint32_t begin = log_after(log, events_since(query)), end = log_after(log, this_run);
        if (end > begin) memcpy(output + r, log->entities + begin, (end - begin) * sizeof *output);
        query->removed_counts[i] = end - begin;
        r += end - begin;
    }
    uint32_t e = 0;
    for (uint32_t i = 0; i < query->pair_change_count; i++) {
        const tesi_relation_t *rel = &world->components[query->pair_changes[i]].relation;
        uint32_t begin, end;
        event_window(rel, events_since(query), this_run, &begin, &end);
        if (end > begin) {
            memcpy(query->event_output + e, rel->events + begin,
                   (end - begin) * sizeof *rel->events);
        }
        e += end - begin;
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
                           .removed_total = (uint32_t)removed_total,
                           .pair_events = e ? query->event_output : NULL,
                           .pair_event_count = e};
    return TES_OK;
}
