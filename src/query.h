/* The private structure of queries, shared by query.c (creation, matching, consumers, runs,
 * event windows, collecting) and visits.c (what a run visits: filters, row terms, sparse
 * drivers, chunk walks, rows carried past a run ended early). */
#ifndef TESSERA_QUERY_H
#define TESSERA_QUERY_H

#include "internal.h"

typedef struct visit_t {
    const tesi_chunk_t *chunk;
    uint32_t first; /* in rows */
    uint32_t count;
} visit_t;

typedef struct filter_t {
    tes_component_t component;
    bool added;  /* else changed */
    bool sparse; /* its ticks are in the component's sparse set, not in chunk trackers */
} filter_t;

/* A term checked per entity: membership of a sparse component (or a relation to any target,
 * target 0), or a pair (component = relation, target). */
typedef struct row_term_t {
    tes_component_t component;
    tes_entity_t target;
    uint32_t op; /* TES_TERM_ALL / NONE / ANY */
} row_term_t;

/* An entity a run found through a sparse driver, grouped by chunk before visiting. */
typedef struct candidate_t {
    tesi_chunk_t *chunk;
    uint32_t row;
} candidate_t;

/* match_flags values: the archetype matches; or it matches when one of the row terms of the
 * any list holds for the row (its own components satisfy none of `any`). */
#define MATCH     1u
#define MATCH_ANY 2u

struct tes_query_t {
    /* One allocation: all, none, any, removed, in that order. Sized for every term given; sparse
     * ones go to row_terms and repeats are dropped, so the lists may fill less than term_slots
     * (past them the memory is not a term). */
    tes_component_t *terms;
    uint32_t term_slots;
    const tes_component_t *all, *none, *any, *removed;
    uint32_t all_count, none_count, any_count, removed_count;
    filter_t *filters; /* the first one drives iteration */
    uint32_t filter_count;
    row_term_t *row_terms;
    uint32_t row_term_count;
    uint32_t row_term_slots;
    bool row_any;                  /* some row term is in the any list */
    tes_component_t *pair_changes; /* relations whose pair events the query reports */
    uint32_t pair_change_count;
    uint32_t pair_change_slots;
    candidate_t *candidates;
    uint32_t candidate_slots;
    tes_pair_event_t *event_output; /* tes_query_collect's pair events */
    uint32_t event_output_slots;
    const uint64_t **filter_ticks; /* per chunk, one per filter: its tick column (visits.c) */
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
    /* What a run ended early did not hand out (issue 16, rule 5): the entities of the visits
     * after the last one handed out, reported by the next run if they still pass, checked
     * against the window they were found in (carried_since). Right after the early end they
     * sit in rows[0..carried_count) (the run needs its rows no more); the next run's prepare
     * moves them here before its walk reuses rows. */
    tes_entity_t *carried;
    uint32_t carried_slots;
    uint32_t carried_count;
    bool carried_in_rows;
    uint64_t carried_since;
    uint64_t run_since; /* the live run's oldest window start: carried_since or last_run */
    uint64_t last_run;
    /* The tick the consumer was made at. Changes, removals and pair events stamped at or before
     * it happened before it existed and are not its; what exists then is (Added filters keep
     * last_run 0 as their window's start, so the first run reports every entity as added). */
    uint64_t born;
    uint32_t live;  /* iterations in progress */
    uint32_t index; /* in world->queries */
};

/* Where a consumer's window of events (changes, removals, pair events) starts when its
 * previous run was `since`: never before the consumer was made, so that what a late consumer
 * reports does not depend on which other consumers happened to keep history for it. */
static inline uint64_t tesi_events_after(const tes_query_t *q, uint64_t since) {
    return since > q->born ? since : q->born;
}

/* ---- visits.c ------------------------------------------------------------------------------ */

/* Decides what a collecting run (filters, row terms) visits: q->visits and q->rows, with the
 * rows a run ended early left to carry. Everything that can fail happens here, before the run
 * starts. */
tes_result_t tesi_collect_visits(tes_world_t *world, tes_query_t *q, uint64_t this_run);
/* The row terms, for an entity of an archetype with match flag `match`. */
bool tesi_row_terms_hold(const tes_world_t *world, const tes_query_t *q, tes_entity_t e,
                         uint8_t match);
/* A filtered run ends after handing out `handed_out` visits: the rest is carried. */
void tesi_carry_unvisited(tes_query_t *q, uint32_t handed_out);

#endif
