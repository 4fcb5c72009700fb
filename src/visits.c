/* What a run visits, decided when it starts (the runs themselves are in query.c): the rows whose
 * filter ticks are in the run's window and whose row terms hold, found from the first filter's
 * dirty lists, from a sparse driver (a sparse set or a target's sources), or by walking the
 * matched chunks; grouped by chunk, each chunk one visit; and the rows a run ended early did
 * not hand out, carried to the next run (issue 16, rule 5). */
#include "internal.h"
#include "query.h"

static bool in_window(uint64_t tick, uint64_t last_run, uint64_t this_run) {
    return tick > last_run && tick <= this_run;
}

static bool term_holds(const tes_world_t *world, const row_term_t *t, tes_entity_t e) {
    if (!t->target) {
        return tesi_sparse_slot(&world->components[t->component].sparse, e & TESI_INDEX_MASK) != 0;
    }
    return tesi_pair_find(world, t->component, e, t->target) != 0;
}

bool tesi_row_terms_hold(const tes_world_t *world, const tes_query_t *q, tes_entity_t e,
                         uint8_t match) {
    bool any = match != MATCH_ANY;
    for (uint32_t i = 0; i < q->row_term_count; i++) {
        const row_term_t *t = &q->row_terms[i];
        if (t->op == TES_TERM_ANY) {
            if (!any) any = term_holds(world, t, e);
        } else if (term_holds(world, t, e) != (t->op == TES_TERM_ALL)) {
            return false;
        }
    }
    return any;
}

/* Every filter, for one row of a chunk whose tick columns are in q->filter_ticks, in its
 * window: after `after_added` for added filters, `after_changed` for changed ones (a run's
 * last_run, or the carried rows' carried_since, and tesi_events_after of it). Inline, with the
 * columns and windows found once per chunk: called per row, this was 30 of the 111
 * instructions a changed row cost a run (callgrind, bench_changes filtered_10000). */
static inline __attribute__((always_inline)) bool
filters_hold(const tes_world_t *world, const tes_query_t *q, tes_entity_t e, uint32_t row,
             uint64_t after_added, uint64_t after_changed, uint64_t this_run) {
    for (uint32_t f = 0; f < q->filter_count; f++) {
        const filter_t *filter = &q->filters[f];
        const uint64_t *ticks = q->filter_ticks[f];
        uint64_t tick;
        if (!ticks) { /* a sparse component's */
            const tesi_sparse_t *s = &world->components[filter->component].sparse;
            uint32_t slot1 = tesi_sparse_slot(s, e & TESI_INDEX_MASK);
            if (!slot1) return false;
            tick = filter->added ? s->added[slot1 - 1] : s->changed[slot1 - 1];
        } else {
            tick = ticks[row];
        }
        if (!in_window(tick, filter->added ? after_added : after_changed, this_run)) return false;
    }
    return true;
}

/* The tick column of each filter in this chunk (NULL for a sparse component's). */
static void load_ticks(tes_query_t *q, const tesi_chunk_t *chunk) {
    const tesi_archetype_t *a = chunk->archetype;
    for (uint32_t f = 0; f < q->filter_count; f++) {
        const filter_t *filter = &q->filters[f];
        if (filter->sparse) {
            q->filter_ticks[f] = NULL;
            continue;
        }
        const tesi_tracker_t *t = chunk->trackers[tesi_type_index(a, filter->component)];
        q->filter_ticks[f] = filter->added ? t->added : t->changed;
    }
}

/* Writes to `out` the rows of the chunk (from `list`, or every row when list is NULL) that pass
 * every filter (in the window after `since`) and row term; returns how many. */
static uint32_t pass_rows(const tes_world_t *world, tes_query_t *q, const tesi_chunk_t *chunk,
                          const uint32_t *list, uint32_t n, uint64_t since, uint64_t this_run,
                          uint32_t *out) {
    if (q->filter_count) load_ticks(q, chunk);
    uint64_t after_changed = tesi_events_after(q, since);
    uint32_t count = chunk->count, kept = 0;
    if (q->filter_count == 1 && q->filter_ticks[0] && !q->row_term_count) {
        /* The common run (one added or changed filter on a chunk component, no row terms): its
         * tick column and window in locals, no entity read. Per changed row, 56 instructions
         * of the general loop below became 10 (callgrind, a drain of 10k changed rows). */
        const uint64_t *ticks = q->filter_ticks[0];
        uint64_t after = q->filters[0].added ? since : after_changed;
        for (uint32_t i = 0; i < n; i++) {
            uint32_t row = list ? list[i] : i;
            if (row < count && in_window(ticks[row], after, this_run)) out[kept++] = row;
        }
        return kept;
    }
    uint8_t match = q->match_flags[chunk->archetype->id];
    const tes_entity_t *entities = tesi_chunk_entities(chunk);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t row = list ? list[i] : i;
        if (row >= count) continue; /* vacated since it was listed */
        tes_entity_t e = entities[row];
        if (q->filter_count && !filters_hold(world, q, e, row, since, after_changed, this_run)) {
            continue;
        }
        if (q->row_term_count && !tesi_row_terms_hold(world, q, e, match)) continue;
        out[kept++] = row;
    }
    return kept;
}

/* The sparse driver of a run: the entity indices to look at, when a run can start from a
 * sparse set rather than from chunks (the first filter on a sparse component: its dirty list;
 * else the smallest sparse set or target's source list among the `all` row terms). */
typedef struct driver_t {
    const row_term_t *term; /* NULL: the first filter's dirty list */
    uint32_t count;
} driver_t;

/* Checking a row in its chunk costs a few loads; finding a candidate's row through its record
 * is a cache miss or two. A set is worth driving from only when it is this much smaller than
 * the rows the query's archetypes hold (measured: bench/results/sparse.md). */
#define DRIVER_RATIO 4u

static bool pick_driver(const tes_world_t *world, const tes_query_t *q, driver_t *out) {
    if (q->filter_count) {
        /* A filtered run stays O(dirty): its first filter drives, whatever the sizes. */
        if (!q->filters[0].sparse) return false;
        *out = (driver_t){NULL, world->components[q->filters[0].component].sparse.dirty_count};
        return true;
    }
    bool found = false;
    for (uint32_t i = 0; i < q->row_term_count; i++) {
        const row_term_t *t = &q->row_terms[i];
        if (t->op != TES_TERM_ALL) continue;
        const tesi_component_t *c = &world->components[t->component];
        uint32_t n = c->sparse.count;
        if (t->target) n = tesi_list_of(&c->relation, TESI_IN, t->target)->count;
        if (!found || n < out->count) *out = (driver_t){t, n};
        found = true;
    }
    if (!found) return false;
    uint64_t rows = 0;
    for (uint32_t i = 0; i < q->matched_count; i++)
        rows += q->matched[i]->entity_count;
    return (uint64_t)out->count * DRIVER_RATIO < rows;
}

/* The driver's k-th entity, or 0 when that entry names none. */
static tes_entity_t driver_entity(const tes_world_t *world, const tes_query_t *q, const driver_t *d,
                                  uint32_t k, uint32_t *pair_cursor) {
    if (!d->term) {
        const tesi_sparse_t *s = &world->components[q->filters[0].component].sparse;
        uint32_t slot1 = tesi_sparse_slot(s, s->dirty[k]);
        return slot1 ? s->entities[slot1 - 1] : 0;
    }
    const tesi_component_t *c = &world->components[d->term->component];
    if (!d->term->target) return c->sparse.entities[k];
    /* A target's sources: followed along the list, one per call. */
    const tesi_relation_t *r = &c->relation;
    uint32_t id = k == 0 ? tesi_list_of(r, TESI_IN, d->term->target)->first : *pair_cursor;
    *pair_cursor = r->pairs[id - 1].next[TESI_IN];
    return r->pairs[id - 1].target == d->term->target ? r->pairs[id - 1].source : 0;
}

/* Makes the visits of the run from q->candidates[0..n): each chunk one visit, in the order
 * its first candidate comes, with its rows in candidate order. A counting pass: a chunk's
 * visit is marked on the chunk itself while grouping, so the cost is O(n). Needs room for n
 * visits and n rows. */
static void group_candidates(tes_query_t *q, uint32_t n) {
    q->visit_count = 0;
    for (uint32_t i = 0; i < n; i++) {
        tesi_chunk_t *chunk = q->candidates[i].chunk;
        if (!chunk->visit) {
            q->visits[q->visit_count++] = (visit_t){chunk, 0, 0};
            chunk->visit = q->visit_count;
        }
        q->visits[chunk->visit - 1].count++;
    }
    uint32_t used = 0;
    for (uint32_t v = 0; v < q->visit_count; v++) {
        q->visits[v].first = used;
        used += q->visits[v].count;
        q->visits[v].count = 0;
    }
    for (uint32_t i = 0; i < n; i++) {
        visit_t *v = &q->visits[q->candidates[i].chunk->visit - 1];
        q->rows[v->first + v->count++] = q->candidates[i].row;
    }
    for (uint32_t i = 0; i < n; i++)
        q->candidates[i].chunk->visit = 0;
    q->visit_rows = n;
}

/* Visits from a sparse driver: each candidate's row is found through its record and checked;
 * the survivors are grouped by chunk (a counting pass: each chunk gets a visit the first time
 * one of its rows passes, marked on the chunk), so each chunk is visited once, in the order
 * the driver first reached it, and the whole run costs O(candidates). */
static tes_result_t drive(tes_world_t *world, tes_query_t *q, const driver_t *d,
                          uint64_t this_run) {
    tes_result_t result = tesi_reserve(world, (void **)&q->candidates, &q->candidate_slots,
                                       d->count, sizeof *q->candidates, 64);
    if (result == TES_OK) {
        result = tesi_reserve(world, (void **)&q->visits, &q->visit_slots, d->count,
                              sizeof *q->visits, 16);
    }
    if (result == TES_OK) {
        result =
            tesi_reserve(world, (void **)&q->rows, &q->row_slots, d->count, sizeof *q->rows, 64);
    }
    if (result != TES_OK) return result;
    uint32_t n = 0, cursor = 0;
    for (uint32_t k = 0; k < d->count; k++) {
        tes_entity_t e = driver_entity(world, q, d, k, &cursor);
        const tesi_record_t *record = e ? tesi_record_of(world, e) : NULL;
        if (!record || !q->match_flags[record->chunk->archetype->id]) continue;
        tesi_chunk_t *chunk = record->chunk;
        uint32_t row = record->row;
        if (pass_rows(world, q, chunk, &row, 1, q->last_run, this_run, &row) != 1) continue;
        q->candidates[n++] = (candidate_t){chunk, row};
    }
    group_candidates(q, n);
    return TES_OK;
}

/* Visits from chunks: the first filter's trackers that hold dirty entries, or every chunk of the
 * matched archetypes (row terms without a sparse driver). */
static tes_result_t walk_chunks(tes_world_t *world, tes_query_t *q, uint64_t this_run) {
    const tesi_component_t *comp =
        q->filter_count ? &world->components[q->filters[0].component] : NULL;
    uint64_t most = 0, chunks = 0;
    if (comp) {
        for (uint32_t i = 0; i < comp->dirty_set_count; i++)
            most += comp->dirty_set[i]->dirty_count;
        chunks = comp->dirty_set_count;
    } else {
        for (uint32_t i = 0; i < q->matched_count; i++) {
            most += q->matched[i]->entity_count;
            chunks += q->matched[i]->chunk_count;
        }
    }
    if (most > UINT32_MAX || chunks > UINT32_MAX) return TES_ERR_OUT_OF_MEMORY;
    tes_result_t result = tesi_reserve(world, (void **)&q->visits, &q->visit_slots,
                                       (uint32_t)chunks, sizeof *q->visits, 16);
    if (result == TES_OK) {
        result = tesi_reserve(world, (void **)&q->rows, &q->row_slots, (uint32_t)most,
                              sizeof *q->rows, 64);
    }
    if (result != TES_OK) return result;
    uint32_t used = 0;
    q->visit_count = 0;
    for (uint32_t i = 0, a = 0, c = 0;; i++) {
        const tesi_chunk_t *chunk;
        const uint32_t *list = NULL;
        uint32_t n;
        if (comp) {
            if (i >= comp->dirty_set_count) break;
            const tesi_tracker_t *t = comp->dirty_set[i];
            chunk = t->chunk;
            if (!q->match_flags[chunk->archetype->id]) continue;
            list = t->dirty;
            n = t->dirty_count;
        } else {
            while (a < q->matched_count && c >= q->matched[a]->chunk_count) {
                a++;
                c = 0;
            }
            if (a >= q->matched_count) break;
            chunk = q->matched[a]->chunks[c++];
            n = chunk->count;
        }
        uint32_t kept = pass_rows(world, q, chunk, list, n, q->last_run, this_run, q->rows + used);
        if (!kept) continue;
        q->visits[q->visit_count++] = (visit_t){chunk, used, kept};
        used += kept;
    }
    q->visit_rows = used;
    return TES_OK;
}

/* Adds to the visits just collected the carried rows (what a run ended early did not hand out)
 * that still pass, checked against the window they were found in: each row once, each chunk
 * one visit. Only a run after an early end pays for this. */
static tes_result_t add_carried(tes_world_t *world, tes_query_t *q, uint64_t this_run) {
    uint32_t n = q->carried_count;
    uint64_t total = (uint64_t)q->visit_rows + n;
    if (total > UINT32_MAX / 2) return TES_ERR_OUT_OF_MEMORY;
    tes_result_t result = tesi_reserve(world, (void **)&q->candidates, &q->candidate_slots,
                                       (uint32_t)total, sizeof *q->candidates, 64);
    if (result == TES_OK) {
        result = tesi_reserve(world, (void **)&q->visits, &q->visit_slots, q->visit_count + n,
                              sizeof *q->visits, 16);
    }
    if (result == TES_OK) {
        result = tesi_reserve(world, (void **)&q->rows, &q->row_slots, (uint32_t)total,
                              sizeof *q->rows, 64);
    }
    if (result != TES_OK) return result;
    /* The carried entities still placed in a matching archetype are marked on their records;
     * a row the walk found takes its mark off, so what stays marked only the carried list
     * brings. */
    for (uint32_t i = 0; i < n; i++) {
        tesi_record_t *record = tesi_record_of(world, q->carried[i]);
        if (record && q->match_flags[record->chunk->archetype->id]) record->row |= TESI_ROW_MARK;
    }
    uint32_t k = 0;
    for (uint32_t v = 0; v < q->visit_count; v++) {
        const visit_t *visit = &q->visits[v];
        const tes_entity_t *entities = tesi_chunk_entities(visit->chunk);
        for (uint32_t i = 0; i < visit->count; i++) {
            uint32_t row = q->rows[visit->first + i];
            tesi_record_at(world, entities[row] & TESI_INDEX_MASK)->row &= ~TESI_ROW_MARK;
            q->candidates[k++] = (candidate_t){(tesi_chunk_t *)visit->chunk, row};
        }
    }
    uint32_t walked = k;
    for (uint32_t i = 0; i < n; i++) {
        tesi_record_t *record = tesi_record_of(world, q->carried[i]);
        if (!record || !(record->row & TESI_ROW_MARK)) continue;
        uint32_t row = record->row &= ~TESI_ROW_MARK;
        if (pass_rows(world, q, record->chunk, &row, 1, q->carried_since, this_run, &row) == 1) {
            q->candidates[k++] = (candidate_t){record->chunk, row};
        }
    }
    if (k > walked) group_candidates(q, k);
    return TES_OK;
}

/* A collecting run decides what it visits when it starts: the rows whose ticks are in the window
 * and whose row terms hold now. A row written again during the run, before the run reached it,
 * is then still reported by this run for the earlier write, and by the next run for the new
 * one. */
tes_result_t tesi_collect_visits(tes_world_t *world, tes_query_t *q, uint64_t this_run) {
    driver_t d;
    tes_result_t result =
        pick_driver(world, q, &d) ? drive(world, q, &d, this_run) : walk_chunks(world, q, this_run);
    return result == TES_OK && q->carried_count ? add_carried(world, q, this_run) : result;
}

/* A filtered run ended before handing out every visit (break, an exception, tes_iter_fini):
 * the entities of the visits it did not hand out are kept for the next run (issue 16, rule 5),
 * written over the front of q->rows, which the ended run needs no more. The visit handed out
 * last counts as seen, whatever part of it the caller looked at. Allocates nothing. */
void tesi_carry_unvisited(tes_query_t *q, uint32_t handed_out) {
    uint32_t n = 0;
    for (uint32_t v = handed_out; v < q->visit_count; v++) {
        const visit_t *visit = &q->visits[v];
        const tes_entity_t *entities = tesi_chunk_entities(visit->chunk);
        /* Visits lie in q->rows in order, so n never overtakes what is still to be read. */
        for (uint32_t i = 0; i < visit->count; i++)
            q->rows[n++] = entities[q->rows[visit->first + i]];
    }
    q->carried_count = n;
    q->carried_in_rows = n > 0;
    q->carried_since = q->run_since;
}
