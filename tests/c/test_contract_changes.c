/*
 * Black-box contract tests of change detection, queries and systems, written from tessera.h and
 * README.md alone: consumers across moves, despawns with index reuse, archetype reclaim, late
 * and destroyed consumers, nested and abandoned iterations, pair terms, and a randomized model
 * of what every consumer must see (each change exactly once) checked after every step.
 */
#include "model_support.h"

static const tes_field_desc_t x_fields[] = {{"x", TES_F32, 0}};
static const tes_field_desc_t n_fields[] = {{"n", TES_I32, 0}};

/* A world of A {x f32}, B {n i32}, tag T, sparse S {n i32}, sparse tag M, relation R {n i32}. */
typedef struct cw_t {
    tes_world_t *world;
    tes_component_t a, b, t, s, m, r;
} cw_t;

static cw_t cw_make(uint32_t chunk_bytes, uint32_t min_free, uint32_t b_flags) {
    cw_t w;
    tes_world_desc_t desc = {.chunk_bytes = chunk_bytes, .min_free_indices = min_free};
    w.world = fx_world(&desc);
    w.a = fx_component(w.world, "A", x_fields, 1);
    w.b = fx_component_flags(w.world, "B", n_fields, 1, b_flags);
    w.t = fx_tag(w.world, "T");
    w.s = fx_sparse(w.world, "S", n_fields, 1);
    w.m = fx_sparse(w.world, "M", NULL, 0);
    w.r = fx_relation(w.world, "R", n_fields, 1, 0);
    return w;
}

static tes_query_t *q_changed(tes_world_t *world, tes_component_t c) {
    tes_query_desc_t d = {.changed = &c, .changed_count = 1};
    return fx_query(world, &d);
}

static tes_query_t *q_added(tes_world_t *world, tes_component_t c) {
    tes_query_desc_t d = {.added = &c, .added_count = 1};
    return fx_query(world, &d);
}

static tes_query_t *q_removed(tes_world_t *world, tes_component_t c) {
    tes_query_desc_t d = {.removed = &c, .removed_count = 1};
    return fx_query(world, &d);
}

/* One tes_query_collect: the entities, and the removals of its first removed term. */
static fx_entities_t *collect(tes_world_t *world, tes_query_t *q, fx_entities_t **removed) {
    tes_collect_t out;
    CHECK_OK(tes_query_collect(world, q, &out));
    fx_entities_t *l = fx_entities_new();
    for (uint32_t i = 0; i < out.count; i++)
        fx_entities_push(l, out.entities[i]);
    if (removed) {
        *removed = fx_entities_new();
        for (uint32_t i = 0; i < out.removed_total; i++)
            fx_entities_push(*removed, out.removed[i]);
    }
    return l;
}

static uint64_t change_tick(const tes_world_t *world) {
    return fx_stats(world).change_tick;
}

/* Spawns (and despawns) fillers until a spawn lands on `index`; returns that entity. */
static tes_entity_t spawn_on_index(tes_world_t *world, uint32_t index, const tes_component_t *set,
                                   uint32_t n) {
    for (int i = 0; i < 64; i++) {
        tes_entity_t e = fx_spawn(world, set, n);
        if (tes_entity_index(e) == index) return e;
        CHECK_OK(tes_despawn(world, e));
    }
    CHECK(!"the index was never reused");
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Consumers across moves, despawns, index reuse and reclaim                                 */
/* ---------------------------------------------------------------------------------------- */

/* A run broken off after its first chunk keeps the other chunks' rows for the next run; those
 * entities then move out of the archetype (which is reclaimed): still reported, once. */
TEST(carried_rows_survive_a_move_and_the_reclaim_of_their_archetype) {
    cw_t w = cw_make(1024, 0, 0);
    tes_entity_t es[200];
    CHECK_OK(tes_spawn_batch(w.world, FX_IDS(w.a, w.t), 200, es));
    tes_query_t *q = q_changed(w.world, w.a);
    CHECK_EQ(collect(w.world, q, NULL)->count, 0);
    for (int i = 0; i < 200; i++)
        CHECK_OK(tes_mark_changed(w.world, es[i], w.a));
    tes_iter_t it;
    CHECK_OK(tes_query_iter(w.world, q, &it));
    CHECK(tes_iter_next(&it));
    fx_entities_t *first = fx_entities_new();
    for (uint32_t i = 0; i < it.row_count; i++)
        fx_entities_push(first, it.entities[fx_iter_row(&it, i)]);
    CHECK(first->count < 200);
    tes_archetype_t old = it.archetype;
    tes_iter_fini(&it);
    CHECK_OK(tes_archetype_remove(w.world, old, w.t));
    uint32_t reclaimed = 0;
    CHECK_OK(tes_archetypes_reclaim(w.world, &reclaimed));
    CHECK(reclaimed >= 1);
    tes_archetype_info_t info;
    CHECK_ERR(tes_archetype_info(w.world, old, &info), TES_ERR_UNKNOWN_ARCHETYPE);
    CHECK_OK(tes_world_validate(w.world));
    fx_entities_t *next = collect(w.world, q, NULL);
    CHECK_EQ(next->count, 200 - first->count);
    for (uint32_t i = 0; i < next->count; i++)
        CHECK(!fx_entities_contains(first, next->items[i]));
    CHECK_EQ(collect(w.world, q, NULL)->count, 0);
}

/* Carried rows whose entities are despawned and whose rows (and indices) are taken by new
 * entities report nothing to a changed consumer; an added consumer reports the newcomers once. */
TEST(carried_rows_of_despawned_entities_do_not_report_the_rows_new_owners) {
    cw_t w = cw_make(1024, 1, 0);
    tes_entity_t es[200];
    CHECK_OK(tes_spawn_batch(w.world, FX_IDS(w.a), 200, es));
    tes_query_t *q = q_changed(w.world, w.a);
    tes_query_t *qa = q_added(w.world, w.a);
    CHECK_EQ(collect(w.world, qa, NULL)->count, 200);
    for (int i = 0; i < 200; i++)
        CHECK_OK(tes_mark_changed(w.world, es[i], w.a));
    tes_iter_t it;
    CHECK_OK(tes_query_iter(w.world, q, &it));
    CHECK(tes_iter_next(&it));
    uint32_t handed = it.row_count;
    fx_entities_t *rest = fx_entities_new();
    for (int i = 0; i < 200; i++) {
        bool in_first = false;
        for (uint32_t r = 0; r < it.count; r++)
            in_first |= it.entities[r] == es[i];
        if (!in_first) fx_entities_push(rest, es[i]);
    }
    tes_iter_fini(&it);
    CHECK_EQ(rest->count, 200 - handed);
    CHECK_OK(tes_despawn_batch(w.world, rest->items, rest->count));
    tes_entity_t fresh[200];
    CHECK_OK(tes_spawn_batch(w.world, FX_IDS(w.a), rest->count, fresh));
    uint32_t reused = 0;
    for (uint32_t i = 0; i < rest->count; i++)
        for (uint32_t j = 0; j < rest->count; j++)
            reused += tes_entity_index(fresh[i]) == tes_entity_index(rest->items[j]);
    CHECK(reused > 0); /* the test is about reuse */
    CHECK_EQ(collect(w.world, q, NULL)->count, 0);
    FX_CHECK_SAME_ENTITIES(collect(w.world, qa, NULL), fresh, rest->count);
    CHECK_EQ(collect(w.world, qa, NULL)->count, 0);
}

/* A despawned entity's change state (chunk, sparse, relation) does not pass to the entity that
 * gets its index. */
TEST(index_reuse_does_not_inherit_change_state) {
    cw_t w = cw_make(0, 1, 0);
    tes_entity_t other = fx_spawn(w.world, FX_IDS(w.a));
    tes_entity_t e1 = fx_spawn(w.world, FX_IDS(w.a, w.s));
    CHECK_OK(tes_pair_add(w.world, e1, w.r, other));
    tes_query_t *qc = q_changed(w.world, w.s);
    tes_query_t *qca = q_changed(w.world, w.a);
    tes_query_t *qcr = q_changed(w.world, w.r);
    tes_query_t *qa = q_added(w.world, w.s);
    tes_query_t *qrm = q_removed(w.world, w.s);
    tes_query_t *qrr = q_removed(w.world, w.r);
    FX_CHECK_VISITED(collect(w.world, qa, NULL), e1);
    CHECK_OK(tes_set_number(w.world, e1, w.s, 0, 0, 5));
    CHECK_OK(tes_set_number(w.world, e1, w.a, 0, 0, 5));
    CHECK_OK(tes_pair_set_number(w.world, e1, w.r, other, 0, 0, 5));
    CHECK_OK(tes_despawn(w.world, e1));
    tes_entity_t filler = fx_spawn(w.world, FX_IDS(w.a));
    CHECK_OK(tes_despawn(w.world, filler));
    tes_entity_t e2 = spawn_on_index(w.world, tes_entity_index(e1), FX_IDS(w.a, w.s));
    CHECK_OK(tes_pair_add(w.world, e2, w.r, other));
    CHECK_NE(e1, e2);
    CHECK_EQ(collect(w.world, qc, NULL)->count, 0);
    CHECK_EQ(collect(w.world, qca, NULL)->count, 0);
    CHECK_EQ(collect(w.world, qcr, NULL)->count, 0);
    FX_CHECK_VISITED(collect(w.world, qa, NULL), e2);
    fx_entities_t *rm = NULL;
    collect(w.world, qrm, &rm);
    FX_CHECK_VISITED(rm, e1);
    collect(w.world, qrr, &rm);
    FX_CHECK_VISITED(rm, e1);
    uint64_t added = 0, changed = 99;
    CHECK_OK(tes_ticks(w.world, e2, w.s, &added, &changed));
    CHECK(added > 0);
    CHECK_EQ(changed, 0);
}

/* A pair term names a handle: a new entity on the target's index is another target. */
TEST(pair_term_target_is_a_handle_not_an_index) {
    cw_t w = cw_make(0, 1, 0);
    tes_entity_t s = fx_spawn(w.world, FX_IDS(w.a));
    tes_entity_t t = fx_spawn(w.world, FX_IDS(w.a));
    CHECK_OK(tes_pair_add(w.world, s, w.r, t));
    tes_pair_term_t all = {w.r, t, TES_TERM_ALL}, none = {w.r, t, TES_TERM_NONE};
    tes_query_desc_t d_all = {.all = &w.a, .all_count = 1, .pairs = &all, .pair_count = 1};
    tes_query_desc_t d_none = {.all = &w.a, .all_count = 1, .pairs = &none, .pair_count = 1};
    tes_query_t *q_all = fx_query(w.world, &d_all);
    tes_query_t *q_none = fx_query(w.world, &d_none);
    FX_CHECK_VISITED(fx_run(w.world, q_all), s);
    FX_CHECK_VISITED(fx_run(w.world, q_none), t);
    CHECK_OK(tes_despawn(w.world, t));
    CHECK_EQ(fx_run(w.world, q_all)->count, 0);
    tes_entity_t f = fx_spawn(w.world, NULL, 0);
    CHECK_OK(tes_despawn(w.world, f));
    tes_entity_t t2 = spawn_on_index(w.world, tes_entity_index(t), FX_IDS(w.a));
    CHECK_OK(tes_pair_add(w.world, s, w.r, t2));
    CHECK_EQ(fx_run(w.world, q_all)->count, 0);
    FX_CHECK_VISITED(fx_run(w.world, q_none), s, t2);
}

/* Removals logged before a reclaim are still reported after it. */
TEST(reclaim_keeps_removal_logs_and_pending_adds) {
    cw_t w = cw_make(1024, 0, 0);
    tes_query_t *qr = q_removed(w.world, w.a);
    tes_query_t *qa = q_added(w.world, w.a);
    tes_entity_t es[100];
    CHECK_OK(tes_spawn_batch(w.world, FX_IDS(w.a, w.t), 100, es));
    CHECK_OK(tes_despawn_batch(w.world, es, 50));
    for (int i = 50; i < 100; i++)
        CHECK_OK(tes_remove(w.world, es[i], w.t));
    uint32_t n = 0;
    CHECK_OK(tes_archetypes_reclaim(w.world, &n));
    CHECK(n >= 1);
    fx_entities_t *rm = NULL;
    collect(w.world, qr, &rm);
    FX_CHECK_SAME_ENTITIES(rm, es, 50);
    FX_CHECK_SAME_ENTITIES(collect(w.world, qa, NULL), es + 50, 50);
    CHECK_OK(tes_world_validate(w.world));
}

/* ---------------------------------------------------------------------------------------- */
/* Late, nested and destroyed consumers                                                      */
/* ---------------------------------------------------------------------------------------- */

/* "A CONSUMER STARTS WHEN IT IS MADE ... a removed term or pair_changes only what happened
 * after it was made. Nothing from before is its, whatever other consumers kept". */
TEST(late_pair_changes_consumer_reports_no_earlier_event) {
    cw_t w = cw_make(0, 0, 0);
    tes_query_desc_t d = {.pair_changes = &w.r, .pair_change_count = 1};
    tes_query_t *q1 = fx_query(w.world, &d);
    tes_entity_t s = fx_spawn(w.world, FX_IDS(w.a)), t = fx_spawn(w.world, FX_IDS(w.a));
    CHECK_OK(tes_pair_add(w.world, s, w.r, t));
    tes_query_t *q2 = fx_query(w.world, &d);
    tes_collect_t out;
    CHECK_OK(tes_query_collect(w.world, q2, &out));
    CHECK_EQ(out.pair_event_count, 0);
    CHECK_OK(tes_query_collect(w.world, q1, &out));
    CHECK_EQ(out.pair_event_count, 1);
}

/* Two consumers, one run inside the other's: each sees each change once. */
TEST(nested_runs_of_two_consumers_each_see_each_write_once) {
    cw_t w = cw_make(0, 0, 0);
    tes_entity_t e1 = fx_spawn(w.world, FX_IDS(w.a)), e2 = fx_spawn(w.world, FX_IDS(w.a, w.t));
    tes_entity_t e3 = fx_spawn(w.world, FX_IDS(w.a, w.b));
    tes_query_t *q1 = q_changed(w.world, w.a), *q2 = q_changed(w.world, w.a);
    CHECK_OK(tes_mark_changed(w.world, e1, w.a));
    tes_iter_t it;
    CHECK_OK(tes_query_iter(w.world, q1, &it));
    CHECK_OK(tes_set_number(w.world, e2, w.a, 0, 0, 2));
    FX_CHECK_VISITED(collect(w.world, q2, NULL), e1, e2);
    CHECK_OK(tes_set_number(w.world, e3, w.a, 0, 0, 3));
    fx_entities_t *seen = fx_entities_new();
    while (tes_iter_next(&it))
        for (uint32_t i = 0; i < it.row_count; i++)
            fx_entities_push(seen, it.entities[fx_iter_row(&it, i)]);
    FX_CHECK_VISITED(seen, e1);
    FX_CHECK_VISITED(collect(w.world, q1, NULL), e2, e3);
    FX_CHECK_VISITED(collect(w.world, q2, NULL), e3);
    CHECK_EQ(collect(w.world, q1, NULL)->count, 0);
}

/* A consumer made while a run is live sees, on its first run, what exists then as added,
 * including what the deferred commands made. */
TEST(consumer_created_inside_a_run_sees_deferred_spawns_as_added_once) {
    cw_t w = cw_make(0, 0, 0);
    tes_entity_t e1 = fx_spawn(w.world, FX_IDS(w.a));
    tes_query_desc_t plain = {.all = &w.a, .all_count = 1};
    tes_query_t *p = fx_query(w.world, &plain);
    tes_iter_t it;
    CHECK_OK(tes_query_iter(w.world, p, &it));
    CHECK(tes_iter_next(&it));
    tes_query_t *q = q_added(w.world, w.a);
    tes_query_t *qs = q_added(w.world, w.s);
    tes_entity_t e2 = 0;
    CHECK_OK(tes_spawn(w.world, FX_IDS(w.a, w.s), &e2));
    CHECK_OK(tes_add(w.world, e1, w.s));
    CHECK(!tes_iter_next(&it));
    FX_CHECK_VISITED(collect(w.world, q, NULL), e1, e2);
    FX_CHECK_VISITED(collect(w.world, qs, NULL), e1, e2);
    CHECK_EQ(collect(w.world, q, NULL)->count, 0);
    CHECK_EQ(collect(w.world, qs, NULL)->count, 0);
}

/* Destroying a consumer while another's run is live leaves the world and that run sound. */
TEST(consumer_destroyed_during_another_run) {
    cw_t w = cw_make(1024, 0, 0);
    tes_entity_t es[100];
    CHECK_OK(tes_spawn_batch(w.world, FX_IDS(w.a), 100, es));
    tes_query_t *q1 = q_changed(w.world, w.a);
    tes_component_t rm[] = {w.a};
    tes_query_desc_t d2 = {.changed = &w.a, .changed_count = 1, .removed = rm, .removed_count = 1};
    tes_query_t *q2 = fx_query(w.world, &d2);
    for (int i = 0; i < 100; i += 2)
        CHECK_OK(tes_mark_changed(w.world, es[i], w.a));
    tes_iter_t it;
    CHECK_OK(tes_query_iter(w.world, q1, &it));
    CHECK(tes_iter_next(&it));
    tes_query_destroy(w.world, q2);
    CHECK_OK(tes_despawn(w.world, es[0]));
    CHECK_OK(tes_mark_changed(w.world, es[1], w.a));
    uint32_t seen = it.row_count;
    while (tes_iter_next(&it))
        seen += it.row_count;
    CHECK_EQ(seen, 50);
    CHECK(!tes_is_alive(w.world, es[0]));
    CHECK_OK(tes_world_validate(w.world));
    FX_CHECK_VISITED(collect(w.world, q1, NULL), es[1]);
    tes_tracking_t level;
    CHECK_OK(tes_component_tracking(w.world, w.a, &level));
    CHECK_EQ(level, TES_TRACK_DIRTY);
    CHECK_EQ(fx_stats(w.world).query_count, 1);
}

/* ---------------------------------------------------------------------------------------- */
/* Iteration rules                                                                           */
/* ---------------------------------------------------------------------------------------- */

/* An abandoned iteration keeps the world deferring; the documented refusals apply and change
 * nothing; tes_iter_fini ends it and applies what was recorded. */
TEST(abandoned_iteration_refusals_change_nothing_until_fini) {
    cw_t w = cw_make(0, 0, 0);
    tes_entity_t e1 = fx_spawn(w.world, FX_IDS(w.a)), e2 = fx_spawn(w.world, FX_IDS(w.a));
    tes_query_t *qc = q_changed(w.world, w.a);
    tes_query_desc_t plain = {.all = &w.a, .all_count = 1};
    tes_query_t *p = fx_query(w.world, &plain);
    CHECK_OK(tes_mark_changed(w.world, e1, w.a));
    tes_iter_t it;
    CHECK_OK(tes_query_iter(w.world, p, &it));
    CHECK(tes_iter_next(&it));
    /* dropped here: still live */
    CHECK_OK(tes_despawn(w.world, e2));
    CHECK(tes_is_alive(w.world, e2));
    tes_world_stats_t before = fx_stats(w.world);
    uint64_t last = tes_query_last_run(qc);
    CHECK_ERR(tes_tick(w.world), TES_ERR_INVALID_ARGUMENT);
    uint32_t n = 7;
    CHECK_ERR(tes_archetypes_reclaim(w.world, &n), TES_ERR_INVALID_ARGUMENT);
    const uint8_t *bytes;
    uint32_t size;
    CHECK_ERR(tes_snapshot(w.world, &bytes, &size), TES_ERR_INVALID_ARGUMENT);
    uint64_t hash;
    CHECK_ERR(tes_world_hash(w.world, &hash), TES_ERR_INVALID_ARGUMENT);
    uint32_t cp;
    CHECK_ERR(tes_checkpoint(w.world, &cp), TES_ERR_INVALID_ARGUMENT);
    tes_world_stats_t after = fx_stats(w.world);
    CHECK_EQ(after.frame, before.frame);
    CHECK_EQ(after.change_tick, before.change_tick);
    CHECK_EQ(after.entity_count, before.entity_count);
    CHECK_EQ(tes_query_last_run(qc), last);
    /* a consumer may run while a plain iteration is live */
    FX_CHECK_VISITED(collect(w.world, qc, NULL), e1);
    tes_iter_fini(&it);
    CHECK(!tes_is_alive(w.world, e2));
    tes_iter_fini(&it); /* harmless after the end */
    CHECK_OK(tes_tick(w.world));
    CHECK_EQ(fx_stats(w.world).frame, before.frame + 1);
    CHECK_OK(tes_world_hash(w.world, &hash));
}

/* A consumer has one live run: a second iter, a collect or an apply is QUERY_IN_USE and
 * consumes nothing. */
TEST(second_run_of_a_live_consumer_is_refused_and_consumes_nothing) {
    cw_t w = cw_make(0, 0, 0);
    tes_entity_t e1 = fx_spawn(w.world, FX_IDS(w.a));
    tes_query_t *q = q_changed(w.world, w.a);
    CHECK_OK(tes_mark_changed(w.world, e1, w.a));
    tes_iter_t it, it2;
    CHECK_OK(tes_query_iter(w.world, q, &it));
    uint64_t tick = change_tick(w.world);
    CHECK_ERR(tes_query_iter(w.world, q, &it2), TES_ERR_QUERY_IN_USE);
    tes_collect_t out;
    CHECK_ERR(tes_query_collect(w.world, q, &out), TES_ERR_QUERY_IN_USE);
    tes_op_t op = {.kind = TES_OP_FILL, .component = w.a, .field = 0, .k = 1};
    CHECK_ERR(tes_query_apply(w.world, q, &op, NULL, NULL), TES_ERR_QUERY_IN_USE);
    CHECK_EQ(change_tick(w.world), tick);
    fx_entities_t *seen = fx_entities_new();
    while (tes_iter_next(&it))
        for (uint32_t i = 0; i < it.row_count; i++)
            fx_entities_push(seen, it.entities[fx_iter_row(&it, i)]);
    FX_CHECK_VISITED(seen, e1);
    CHECK_NUM_EQ(fx_get_number(w.world, e1, w.a, 0, 0), 0);
}

/* A plain query may have several live iterations; recorded commands apply when the last one
 * ends, whichever order they end in. */
TEST(plain_query_iterations_nest_and_the_last_to_end_applies) {
    cw_t w = cw_make(0, 0, 0);
    tes_entity_t e1 = fx_spawn(w.world, FX_IDS(w.a)), e2 = fx_spawn(w.world, FX_IDS(w.a));
    tes_query_desc_t plain = {.all = &w.a, .all_count = 1};
    tes_query_t *p = fx_query(w.world, &plain);
    tes_iter_t outer, inner;
    CHECK_OK(tes_query_iter(w.world, p, &outer));
    CHECK(tes_iter_next(&outer));
    CHECK_OK(tes_query_iter(w.world, p, &inner));
    CHECK(tes_iter_next(&inner));
    CHECK_EQ(inner.count, 2);
    CHECK_OK(tes_despawn(w.world, e1));
    tes_iter_fini(&outer);
    CHECK(tes_is_alive(w.world, e1));
    CHECK(!tes_iter_next(&inner));
    CHECK(!tes_is_alive(w.world, e1));
    CHECK(tes_is_alive(w.world, e2));
    CHECK_OK(tes_world_validate(w.world));
}

/* tes_collect of a plain query is INVALID_ARGUMENT and consumes nothing. */
TEST(collect_of_a_plain_query_is_refused) {
    cw_t w = cw_make(0, 0, 0);
    fx_spawn(w.world, FX_IDS(w.a));
    tes_query_desc_t plain = {.all = &w.a, .all_count = 1};
    tes_query_t *p = fx_query(w.world, &plain);
    uint64_t tick = change_tick(w.world);
    tes_collect_t out;
    CHECK_ERR(tes_query_collect(w.world, p, &out), TES_ERR_INVALID_ARGUMENT);
    CHECK_EQ(change_tick(w.world), tick);
    CHECK_EQ(tes_query_last_run(p), 0);
    fx_run(w.world, p);
    CHECK_EQ(change_tick(w.world), tick); /* a plain run never advances the tick */
    CHECK_EQ(tes_query_last_run(p), 0);
}

/* ---------------------------------------------------------------------------------------- */
/* Systems                                                                                   */
/* ---------------------------------------------------------------------------------------- */

typedef struct tick_probe_t {
    tes_world_t *world;
    tes_result_t inner;
    uint32_t runs;
} tick_probe_t;

static void tick_from_body(tes_iter_t *it, void *user) {
    tick_probe_t *p = (tick_probe_t *)user;
    p->runs++;
    p->inner = tes_tick(p->world);
    while (tes_iter_next(it)) {
    }
}

TEST(tick_from_inside_a_system_is_refused) {
    cw_t w = cw_make(0, 0, 0);
    fx_spawn(w.world, FX_IDS(w.a));
    uint32_t stage;
    CHECK_OK(tes_stage_create(w.world, "s", &stage));
    tick_probe_t probe = {w.world, TES_OK, 0};
    tes_system_desc_t sd = {.stage = stage, .run = tick_from_body, .user = &probe};
    sd.query.all = &w.a;
    sd.query.all_count = 1;
    tes_system_t *sys;
    CHECK_OK(tes_system_create(w.world, &sd, &sys));
    CHECK_OK(tes_tick(w.world));
    CHECK_EQ(probe.runs, 1);
    CHECK_ERR(probe.inner, TES_ERR_INVALID_ARGUMENT);
    CHECK_EQ(fx_stats(w.world).frame, 1);
}

/* ---------------------------------------------------------------------------------------- */
/* A randomized model: chunk, by-value, tag, sparse and relation components; consumers with    */
/* random all / none / any / pair terms, filters and removed terms, made and destroyed at      */
/* random; runs by collect, by hand (with writes, deferred commands and nested collects of     */
/* other consumers inside, sometimes broken off), and by tes_query_apply; archetype reclaim;   */
/* fast index reuse. Every run must report exactly what the model predicts.                    */
/* ---------------------------------------------------------------------------------------- */

#define MN        6 /* A B T S M R */
#define MA        0u
#define MB        1u
#define MT        2u
#define MS        3u
#define MM        4u
#define MR        5u
#define MK        8 /* consumer slots */
#define MAXE      1024
#define MAXP      2048
#define MAXCMD    256
#define MALLK     0xffu
#define MSTORABLE 0x1fu /* A B T S M: what tes_spawn / tes_add take */

static const char *const mnames[MN] = {"A", "B", "T", "S", "M", "R"};

typedef struct me_t {
    tes_entity_t h;
    uint32_t mask; /* A B T S M; R is derived from the pairs */
    int32_t aval, bval;
    uint8_t added_pend[MN], changed_pend[MN];
    uint8_t carried; /* consumers that keep this entity from a run broken off */
} me_t;

typedef struct mk_t {
    bool open;
    tes_query_t *q;
    uint32_t all, none, any, added, changed;
    uint32_t removed[MN], removed_count;
    bool has_pair;
    tes_pair_term_t pair;
    rlist_t rlog[MN];
} mk_t;

typedef struct mcmd_t {
    int kind; /* 0 spawn, 1 despawn, 2 add, 3 remove, 4 add B with value, 5 set (c, v) */
    tes_entity_t e;
    uint32_t c, mask;
    int32_t v;
} mcmd_t;

typedef struct mm_t {
    tes_world_t *world;
    tes_component_t id[MN];
    fx_rng_t rng;
    uint64_t seed;
    uint32_t step;
    const char *op;
    me_t ents[MAXE];
    uint32_t n;
    tes_entity_t ps[MAXP], pt[MAXP]; /* pairs (source, target) */
    uint32_t np;
    mk_t k[MK];
    uint64_t group;
    mcmd_t cmds[MAXCMD];
    uint32_t ncmd;
    bool deferring;
    uint64_t skipped;
    tes_query_t *plain_a, *plain_b;
    uint64_t runs, reported, removals;
    uint64_t by_filter[MN]; /* expected entities of runs filtered on each component */
} mm_t;

static mm_t *mm_current;

static void mm_report(void *unused) {
    (void)unused;
    mm_t *m = mm_current;
    if (harness_case_failed() && m)
        printf("  model: seed %llu, step %u, op %s, %u live\n", (unsigned long long)m->seed,
               m->step, m->op ? m->op : "?", m->n);
    mm_current = NULL;
}

static void mm_free(void *p) {
    mm_t *m = (mm_t *)p;
    for (int k = 0; k < MK; k++)
        for (int c = 0; c < MN; c++)
            free(m->k[k].rlog[c].items);
    free(m);
}

static int32_t mm_find(const mm_t *m, tes_entity_t h) {
    for (uint32_t i = 0; i < m->n; i++)
        if (m->ents[i].h == h) return (int32_t)i;
    return -1;
}

static uint32_t mm_pairs_of(const mm_t *m, tes_entity_t s) {
    uint32_t n = 0;
    for (uint32_t i = 0; i < m->np; i++)
        n += m->ps[i] == s;
    return n;
}

static bool mm_pair(const mm_t *m, tes_entity_t s, tes_entity_t t) {
    for (uint32_t i = 0; i < m->np; i++)
        if (m->ps[i] == s && m->pt[i] == t) return true;
    return false;
}

static uint32_t mm_mask(const mm_t *m, const me_t *e) {
    return e->mask | (mm_pairs_of(m, e->h) ? BIT(MR) : 0);
}

static void mm_log_removal(mm_t *m, tes_entity_t h, uint32_t c) {
    for (int k = 0; k < MK; k++) {
        mk_t *q = &m->k[k];
        if (!q->open) continue;
        for (uint32_t i = 0; i < q->removed_count; i++)
            if (q->removed[i] == c) rlist_push(&q->rlog[c], h, m->group);
    }
}

static void mm_gain(mm_t *m, me_t *e, uint32_t c) {
    (void)m;
    e->added_pend[c] = 0xff;
    e->changed_pend[c] = 0;
}

static void mm_change(mm_t *m, me_t *e, uint32_t c) {
    (void)m;
    e->changed_pend[c] = 0xff;
}

static void mm_lose(mm_t *m, me_t *e, uint32_t c) {
    e->added_pend[c] = e->changed_pend[c] = 0;
    /* a carried row is checked against its filters: losing one ends it */
    for (int k = 0; k < MK; k++)
        if ((m->k[k].added | m->k[k].changed) & BIT(c)) e->carried &= (uint8_t) ~(1u << k);
    mm_log_removal(m, e->h, c);
}

/* Removes pair i; the source's relation changes, or goes with its last pair. */
static void mm_pair_drop(mm_t *m, uint32_t i) {
    tes_entity_t s = m->ps[i];
    m->np--;
    m->ps[i] = m->ps[m->np];
    m->pt[i] = m->pt[m->np];
    int32_t si = mm_find(m, s);
    CHECK(si >= 0);
    if (mm_pairs_of(m, s) == 0) {
        mm_lose(m, &m->ents[si], MR);
    } else {
        mm_change(m, &m->ents[si], MR);
    }
}

static void mm_despawn(mm_t *m, uint32_t i) {
    me_t *e = &m->ents[i];
    tes_entity_t h = e->h;
    uint32_t mask = mm_mask(m, e);
    for (uint32_t c = 0; c < MN; c++)
        if (mask & BIT(c)) mm_lose(m, e, c);
    for (uint32_t p = 0; p < m->np;) {
        if (m->ps[p] == h) {
            m->np--;
            m->ps[p] = m->ps[m->np];
            m->pt[p] = m->pt[m->np];
        } else {
            p++;
        }
    }
    for (uint32_t p = 0; p < m->np;) {
        if (m->pt[p] == h) {
            mm_pair_drop(m, p);
        } else {
            p++;
        }
    }
    i = (uint32_t)mm_find(m, h);
    m->ents[i] = m->ents[--m->n];
}

static void mm_spawned(mm_t *m, tes_entity_t h, uint32_t mask) {
    CHECK(m->n < MAXE);
    CHECK(mm_find(m, h) < 0);
    me_t *e = &m->ents[m->n++];
    memset(e, 0, sizeof *e);
    e->h = h;
    e->mask = mask;
    for (uint32_t c = 0; c < MN; c++)
        if (mask & BIT(c)) mm_gain(m, e, c);
}

static bool mm_matches(const mm_t *m, const mk_t *q, const me_t *e) {
    uint32_t mask = mm_mask(m, e);
    uint32_t all = q->all | q->added | q->changed;
    if ((mask & all) != all || (mask & q->none)) return false;
    bool any_ok = q->any == 0 || (mask & q->any);
    if (q->has_pair) {
        bool has = q->pair.target == 0 ? (mask & BIT(MR)) != 0 : mm_pair(m, e->h, q->pair.target);
        if (q->pair.op == TES_TERM_ALL && !has) return false;
        if (q->pair.op == TES_TERM_NONE && has) return false;
        if (q->pair.op == TES_TERM_ANY) any_ok = (q->any && (mask & q->any)) || has;
    }
    return any_ok;
}

static bool mm_expected(const mm_t *m, int k, const me_t *e) {
    const mk_t *q = &m->k[k];
    if (!mm_matches(m, q, e)) return false;
    if (e->carried & (1u << k)) return true;
    for (uint32_t c = 0; c < MN; c++) {
        if ((q->added & BIT(c)) && !(e->added_pend[c] & (1u << k))) return false;
        if ((q->changed & BIT(c)) && !(e->changed_pend[c] & (1u << k))) return false;
    }
    return true;
}

/* Starts a run of consumer k in the model: marks its expected entities in `want` (by model
 * position, as handles), consumes its pending bits and hands back its removal windows. */
static uint32_t mm_begin(mm_t *m, int k, tes_entity_t *want, rlist_t *windows) {
    mk_t *q = &m->k[k];
    uint32_t n = 0;
    bool filtered = q->added || q->changed;
    for (uint32_t i = 0; i < m->n; i++) {
        me_t *e = &m->ents[i];
        if (filtered && mm_expected(m, k, e)) {
            want[n++] = e->h;
            for (uint32_t c = 0; c < MN; c++)
                if ((q->added | q->changed) & BIT(c)) m->by_filter[c]++;
        }
        for (uint32_t c = 0; c < MN; c++) {
            e->added_pend[c] &= (uint8_t) ~(1u << k);
            e->changed_pend[c] &= (uint8_t) ~(1u << k);
        }
        e->carried &= (uint8_t) ~(1u << k);
    }
    for (uint32_t c = 0; c < MN; c++) {
        windows[c] = q->rlog[c];
        memset(&q->rlog[c], 0, sizeof q->rlog[c]);
    }
    m->runs++;
    return n;
}

static void mm_check_window(const mm_t *m, const tes_entity_t *got, uint32_t count,
                            const rlist_t *want, uint32_t c) {
    if (count != want->count)
        harness_fail(__FILE__, __LINE__, "removed %s: %u reported, model %u (seed %llu step %u)",
                     mnames[c], count, want->count, (unsigned long long)m->seed, m->step);
    rdiff_t d = rlist_diff_groups(want, got);
    if (d.found)
        harness_fail(__FILE__, __LINE__,
                     "removed %s: entity %u reported %u times in group %u..%u, model %u "
                     "(seed %llu step %u)",
                     mnames[c], d.entity, d.in_got, d.first, d.end, d.in_want,
                     (unsigned long long)m->seed, m->step);
}

static void mm_check_set(const mm_t *m, const tes_entity_t *got, uint32_t count,
                         const tes_entity_t *want, uint32_t n, const char *how) {
    uint32_t bad_got = 0, bad_want = 0;
    for (uint32_t i = 0; i < count; i++) {
        uint32_t occ = 0, exp = 0;
        for (uint32_t j = 0; j < count; j++)
            occ += got[j] == got[i];
        for (uint32_t j = 0; j < n; j++)
            exp += want[j] == got[i];
        if (occ != 1 || exp != 1) bad_got = got[i];
    }
    for (uint32_t j = 0; j < n; j++) {
        bool found = false;
        for (uint32_t i = 0; i < count; i++)
            found |= got[i] == want[j];
        if (!found) bad_want = want[j];
    }
    if (count != n || bad_got || bad_want)
        harness_fail(__FILE__, __LINE__,
                     "%s run: %u reported, model %u; unexpected %u, missing %u (seed %llu step "
                     "%u)",
                     how, count, n, bad_got, bad_want, (unsigned long long)m->seed, m->step);
}

static void mm_free_windows(rlist_t *windows) {
    for (uint32_t c = 0; c < MN; c++)
        free(windows[c].items);
}

static void mm_collect(mm_t *m, int k) {
    tes_entity_t want[MAXE];
    rlist_t windows[MN];
    m->op = "collect";
    uint32_t n = mm_begin(m, k, want, windows);
    tes_collect_t out;
    tes_result_t r = tes_query_collect(m->world, m->k[k].q, &out);
    if (r != TES_OK) mm_free_windows(windows);
    CHECK_OK(r);
    mm_check_set(m, out.entities, out.count, want, n, "collect");
    m->reported += out.count;
    const mk_t *q = &m->k[k];
    uint32_t at = 0;
    for (uint32_t t = 0; t < q->removed_count; t++) {
        uint32_t c = q->removed[t];
        mm_check_window(m, out.removed ? out.removed + at : NULL, out.removed_counts[t],
                        &windows[c], c);
        at += out.removed_counts[t];
        m->removals += out.removed_counts[t];
    }
    CHECK_EQ(at, out.removed_total);
    mm_free_windows(windows);
}

/* ---- operations ---- */

static me_t *mm_pick(mm_t *m) {
    return m->n ? &m->ents[fx_rng_below(&m->rng, m->n)] : NULL;
}

static uint32_t mm_random_mask(mm_t *m) {
    uint32_t mask = 0;
    for (uint32_t c = 0; c < 5; c++)
        if (fx_rng_chance(&m->rng, 45)) mask |= BIT(c);
    return mask;
}

static void mm_ids(const mm_t *m, uint32_t mask, tes_component_t *out, uint32_t *count) {
    *count = 0;
    for (uint32_t c = 0; c < 5; c++)
        if (mask & BIT(c)) out[(*count)++] = m->id[c];
}

static void mm_spawn(mm_t *m, uint32_t count) {
    if (m->n + count + m->ncmd >= MAXE - 8) return;
    m->op = "spawn";
    uint32_t mask = mm_random_mask(m);
    tes_component_t ids[5];
    uint32_t nids;
    mm_ids(m, mask, ids, &nids);
    tes_entity_t hs[32];
    if (count == 1) {
        CHECK_OK(tes_spawn(m->world, ids, nids, &hs[0]));
    } else {
        CHECK_OK(tes_spawn_batch(m->world, ids, nids, count, hs));
    }
    for (uint32_t i = 0; i < count; i++) {
        if (m->deferring) {
            CHECK(m->ncmd < MAXCMD);
            m->cmds[m->ncmd++] = (mcmd_t){.kind = 0, .e = hs[i], .mask = mask};
        } else {
            mm_spawned(m, hs[i], mask);
        }
    }
}

static void mm_record(mm_t *m, mcmd_t cmd) {
    CHECK(m->ncmd < MAXCMD);
    m->cmds[m->ncmd++] = cmd;
}

static void mm_apply_add_b(mm_t *m, me_t *e, int32_t v) {
    if (e->mask & BIT(MB)) {
        if (e->bval != v) mm_change(m, e, MB);
    } else {
        e->mask |= BIT(MB);
        mm_gain(m, e, MB);
    }
    e->bval = v;
}

static void mm_apply_add(mm_t *m, me_t *e, uint32_t c) {
    if (e->mask & BIT(c)) return;
    e->mask |= BIT(c);
    mm_gain(m, e, c);
    if (c == MA) e->aval = 0;
    if (c == MB) e->bval = 0;
}

static void mm_apply_remove(mm_t *m, me_t *e, uint32_t c) {
    if (!(e->mask & BIT(c))) return;
    e->mask &= ~BIT(c);
    mm_lose(m, e, c);
}

/* A write of component c (MA, MB by value, MS): its value and its change. */
static void mm_apply_set(mm_t *m, me_t *e, uint32_t c, int32_t v) {
    if (c == MB && e->bval == v) return;
    if (c == MA) e->aval = v;
    if (c == MB) e->bval = v;
    mm_change(m, e, c);
}

/* "A write to a placed entity happens at once when the entity has the component now, unless
 * the last recorded command that adds or removes it adds it": then it is recorded after it. */
static bool mm_readded(const mm_t *m, tes_entity_t h, uint32_t c) {
    for (uint32_t i = m->ncmd; i-- > 0;) {
        const mcmd_t *cmd = &m->cmds[i];
        if (cmd->e != h) continue;
        if (cmd->kind == 1) return false;
        if ((cmd->kind == 2 || cmd->kind == 3) && cmd->c == c) return cmd->kind == 2;
        if (cmd->kind == 4 && c == MB) return true;
    }
    return false;
}

/* A set of component c to v: at once, or after the recorded add it follows. */
static void mm_set(mm_t *m, me_t *e, uint32_t c, int32_t v) {
    CHECK_OK(tes_set_number(m->world, e->h, m->id[c], 0, 0, v));
    if (m->deferring && mm_readded(m, e->h, c)) {
        mm_record(m, (mcmd_t){.kind = 5, .e = e->h, .c = c, .v = v});
    } else {
        mm_apply_set(m, e, c, v);
    }
}

static void mm_flush(mm_t *m) {
    for (uint32_t i = 0; i < m->ncmd; i++) {
        mcmd_t *cmd = &m->cmds[i];
        m->group++;
        if (cmd->kind == 0) {
            mm_spawned(m, cmd->e, cmd->mask);
            continue;
        }
        int32_t at = mm_find(m, cmd->e);
        if (at < 0) {
            m->skipped++;
            continue;
        }
        me_t *e = &m->ents[at];
        if (cmd->kind == 1) mm_despawn(m, (uint32_t)at);
        if (cmd->kind == 2) mm_apply_add(m, e, cmd->c);
        if (cmd->kind == 3) mm_apply_remove(m, e, cmd->c);
        if (cmd->kind == 4) mm_apply_add_b(m, e, cmd->v);
        if (cmd->kind == 5) mm_apply_set(m, e, cmd->c, cmd->v);
    }
    m->ncmd = 0;
}

static void mm_add_b_values(mm_t *m, me_t *e, int32_t v) {
    tes_item_t item = {m->id[MB], 0};
    tes_value_t value = {0, 0, 0, 0};
    double number = v;
    tes_items_t items = {&item, 1, &value, 1, &number, 1};
    CHECK_OK(tes_add_items(m->world, &e->h, 1, &items, NULL));
    if (m->deferring) {
        mm_record(m, (mcmd_t){.kind = 4, .e = e->h, .v = v});
    } else {
        m->group++;
        mm_apply_add_b(m, e, v);
    }
}

/* A structural change: at once, or recorded while deferring. */
static void mm_structural(mm_t *m, const tes_entity_t *protect, uint32_t nprotect) {
    (void)protect;
    (void)nprotect;
    me_t *e = mm_pick(m);
    if (!e) return;
    uint32_t roll = fx_rng_below(&m->rng, 10);
    uint32_t c = fx_rng_below(&m->rng, 5);
    if (roll < 2) {
        m->op = "despawn";
        CHECK_OK(tes_despawn(m->world, e->h));
        if (m->deferring) {
            mm_record(m, (mcmd_t){.kind = 1, .e = e->h});
        } else {
            m->group++;
            mm_despawn(m, (uint32_t)(e - m->ents));
        }
    } else if (roll < 5) {
        m->op = "add";
        CHECK_OK(tes_add(m->world, e->h, m->id[c]));
        if (m->deferring) {
            mm_record(m, (mcmd_t){.kind = 2, .e = e->h, .c = c});
        } else {
            m->group++;
            mm_apply_add(m, e, c);
        }
    } else if (roll < 8) {
        m->op = "remove";
        CHECK_OK(tes_remove(m->world, e->h, m->id[c]));
        if (m->deferring) {
            mm_record(m, (mcmd_t){.kind = 3, .e = e->h, .c = c});
        } else {
            m->group++;
            mm_apply_remove(m, e, c);
        }
    } else {
        m->op = "add_items B";
        mm_add_b_values(m, e, (int32_t)fx_rng_below(&m->rng, 3));
    }
}

static bool mm_protected(const tes_entity_t *protect, uint32_t n, tes_entity_t h) {
    for (uint32_t i = 0; i < n; i++)
        if (protect[i] == h) return true;
    return false;
}

/* A write that moves nothing (applies at once, also while deferring). Entities in `protect`
 * (rows a live run still has to hand out) are left alone. */
static void mm_write(mm_t *m, const tes_entity_t *protect, uint32_t nprotect) {
    me_t *e = mm_pick(m);
    if (!e || mm_protected(protect, nprotect, e->h)) return;
    uint32_t roll = fx_rng_below(&m->rng, 12);
    int32_t v = (int32_t)fx_rng_below(&m->rng, 3);
    if (roll < 2 && (e->mask & BIT(MA))) {
        m->op = "set A";
        mm_set(m, e, MA, v);
    } else if (roll < 4 && (e->mask & BIT(MB))) {
        m->op = "set B by value";
        mm_set(m, e, MB, v);
    } else if (roll < 5 && (e->mask & BIT(MS))) {
        m->op = "set S";
        mm_set(m, e, MS, v);
    } else if (roll < 6) {
        uint32_t c = (uint32_t[]){MA, MB, MS}[fx_rng_below(&m->rng, 3)];
        if (!(e->mask & BIT(c))) return;
        m->op = "mark";
        CHECK_OK(tes_mark_changed(m->world, e->h, m->id[c]));
        mm_change(m, e, c);
    } else if (roll < 7) {
        uint32_t c = fx_rng_below(&m->rng, 2) ? MA : MB;
        if (!(e->mask & BIT(c))) return;
        m->op = "chunk mark";
        tes_location_t loc;
        CHECK_OK(tes_location(m->world, e->h, &loc));
        tes_chunk_info_t info;
        CHECK_OK(tes_chunk_info(m->world, loc.archetype, loc.chunk, &info));
        for (uint32_t r = 0; r < info.count; r++)
            if (mm_protected(protect, nprotect, info.entities[r])) return;
        CHECK_OK(tes_chunk_mark_changed(m->world, loc.archetype, loc.chunk, m->id[c], NULL, 0));
        for (uint32_t r = 0; r < info.count; r++) {
            int32_t at = mm_find(m, info.entities[r]);
            CHECK(at >= 0);
            mm_change(m, &m->ents[at], c);
        }
    } else if (roll < 10) {
        me_t *t = mm_pick(m);
        if (t == e) return;
        m->op = "pair add";
        bool had = mm_pair(m, e->h, t->h);
        if (mm_protected(protect, nprotect, t->h)) return;
        CHECK_OK(tes_pair_add(m->world, e->h, m->id[MR], t->h));
        if (!had) {
            CHECK(m->np < MAXP);
            uint32_t before = mm_pairs_of(m, e->h);
            m->ps[m->np] = e->h;
            m->pt[m->np++] = t->h;
            if (before == 0) {
                mm_gain(m, e, MR);
            } else {
                mm_change(m, e, MR);
            }
        }
    } else if (roll < 11) {
        if (m->np == 0) return;
        uint32_t p = fx_rng_below(&m->rng, m->np);
        int32_t si = mm_find(m, m->ps[p]);
        if (mm_protected(protect, nprotect, m->ps[p])) return;
        m->group++;
        if (fx_rng_chance(&m->rng, 30)) {
            m->op = "pair set";
            CHECK_OK(tes_pair_set_number(m->world, m->ps[p], m->id[MR], m->pt[p], 0, 0, v));
            mm_change(m, &m->ents[si], MR);
        } else {
            m->op = "pair remove";
            CHECK_OK(tes_pair_remove(m->world, m->ps[p], m->id[MR], m->pt[p]));
            mm_pair_drop(m, p);
        }
    } else {
        if (mm_pairs_of(m, e->h) == 0) return;
        m->op = "remove R";
        m->group++;
        CHECK_OK(tes_remove(m->world, e->h, m->id[MR]));
        for (uint32_t p = 0; p < m->np;) {
            if (m->ps[p] == e->h) {
                mm_pair_drop(m, p);
            } else {
                p++;
            }
        }
    }
}

static void mm_kernel(mm_t *m) {
    if (fx_rng_below(&m->rng, 2)) {
        m->op = "kernel add A";
        tes_op_t op = {.kind = TES_OP_ADD, .k = 1, .component = m->id[MA]};
        CHECK_OK(tes_query_apply(m->world, m->plain_a, &op, NULL, NULL));
        for (uint32_t i = 0; i < m->n; i++)
            if (m->ents[i].mask & BIT(MA)) {
                m->ents[i].aval += 1;
                mm_change(m, &m->ents[i], MA);
            }
    } else {
        int32_t v = (int32_t)fx_rng_below(&m->rng, 3);
        m->op = "kernel fill B";
        tes_op_t op = {.kind = TES_OP_FILL, .k = v, .component = m->id[MB]};
        CHECK_OK(tes_query_apply(m->world, m->plain_b, &op, NULL, NULL));
        for (uint32_t i = 0; i < m->n; i++)
            if (m->ents[i].mask & BIT(MB)) {
                if (m->ents[i].bval != v) mm_change(m, &m->ents[i], MB);
                m->ents[i].bval = v;
            }
    }
}

static uint32_t mm_random_bits(mm_t *m, uint32_t from, uint32_t percent) {
    uint32_t b = 0;
    for (uint32_t c = 0; c < MN; c++)
        if ((from & BIT(c)) && fx_rng_chance(&m->rng, percent)) b |= BIT(c);
    return b;
}

static void mm_terms(mm_t *m, uint32_t mask, tes_component_t *out, uint32_t *n) {
    *n = 0;
    for (uint32_t c = 0; c < MN; c++)
        if (mask & BIT(c)) out[(*n)++] = m->id[c];
}

static void mm_open(mm_t *m, int k) {
    mk_t *q = &m->k[k];
    for (uint32_t c = 0; c < MN; c++) {
        free(q->rlog[c].items);
        memset(&q->rlog[c], 0, sizeof q->rlog[c]);
    }
    fx_term_masks_t t = fx_random_terms(&m->rng, MN, 12);
    q->all = t.all;
    q->none = t.none;
    q->any = t.any;
    q->added = mm_random_bits(m, 0x3f, 10);
    q->changed = mm_random_bits(m, BIT(MA) | BIT(MB) | BIT(MS) | BIT(MR), 25);
    q->removed_count = 0;
    uint32_t rm = mm_random_bits(m, 0x3f, 20);
    if (!q->added && !q->changed && !rm) q->changed = BIT(fx_rng_below(&m->rng, 2));
    for (uint32_t i = 0; i < MN; i++) {
        uint32_t c = (i + k) % MN; /* an order of its own */
        if (rm & BIT(c)) q->removed[q->removed_count++] = c;
    }
    q->has_pair = fx_rng_chance(&m->rng, 25);
    if (q->has_pair) {
        me_t *target = mm_pick(m);
        q->pair.relation = m->id[MR];
        q->pair.target = target && fx_rng_chance(&m->rng, 70) ? target->h : 0;
        q->pair.op = fx_rng_below(&m->rng, 3);
    }
    tes_component_t all[MN], none[MN], any[MN], added[MN], changed[MN], removed[MN + 1];
    uint32_t na, nn, ny, nad, nch;
    mm_terms(m, q->all, all, &na);
    mm_terms(m, q->none, none, &nn);
    mm_terms(m, q->any, any, &ny);
    mm_terms(m, q->added, added, &nad);
    mm_terms(m, q->changed, changed, &nch);
    for (uint32_t i = 0; i < q->removed_count; i++)
        removed[i] = m->id[q->removed[i]];
    uint32_t nrm = q->removed_count;
    if (nrm && fx_rng_chance(&m->rng, 30)) removed[nrm++] = removed[0]; /* dropped repeat */
    tes_query_desc_t d = {all,  na,      none, nn,      any, ny,       added,
                          nad,  changed, nch,  removed, nrm, &q->pair, q->has_pair ? 1u : 0u,
                          NULL, 0};
    q->q = fx_query(m->world, &d);
    q->open = true;
    for (uint32_t i = 0; i < m->n; i++) {
        me_t *e = &m->ents[i];
        uint32_t mask = mm_mask(m, e);
        for (uint32_t c = 0; c < MN; c++) {
            if (mask & BIT(c)) {
                e->added_pend[c] |= (uint8_t)(1u << k);
            } else {
                e->added_pend[c] &= (uint8_t) ~(1u << k);
            }
            e->changed_pend[c] &= (uint8_t) ~(1u << k);
        }
        e->carried &= (uint8_t) ~(1u << k);
    }
}

static void mm_close(mm_t *m, int k) {
    tes_query_destroy(m->world, m->k[k].q);
    m->k[k].open = false;
    m->k[k].q = NULL;
}

static int mm_random_open(mm_t *m, int except) {
    int open[MK], n = 0;
    for (int k = 0; k < MK; k++)
        if (m->k[k].open && k != except) open[n++] = k;
    return n ? open[fx_rng_below(&m->rng, (uint32_t)n)] : -1;
}

static bool mm_single_filter(const mk_t *q) {
    uint32_t f = q->added | q->changed;
    return f && !(f & (f - 1)) && !(q->added & q->changed);
}

/* A run by hand, with calls between its chunks; maybe broken off. */
static void mm_iterate(mm_t *m, int k) {
    tes_entity_t want[MAXE];
    rlist_t windows[MN];
    m->op = "iterate";
    mk_t *q = &m->k[k];
    uint32_t n = mm_begin(m, k, want, windows);
    tes_iter_t it;
    CHECK_OK(tes_query_iter(m->world, q->q, &it));
    m->deferring = true;
    for (uint32_t t = 0; t < q->removed_count; t++) {
        uint32_t c = q->removed[t];
        const tes_entity_t *got = NULL;
        uint32_t count = 0;
        CHECK_OK(tes_iter_removed(&it, m->id[c], &got, &count));
        mm_check_window(m, got, count, &windows[c], c);
    }
    mm_free_windows(windows);
    bool filtered = q->added || q->changed;
    bool may_break = mm_single_filter(q) && fx_rng_chance(&m->rng, 30);
    tes_entity_t got[MAXE];
    uint32_t ngot = 0;
    bool broke = false, wrote = false;
    if (!filtered) { /* a removals-only consumer visits every entity its terms match */
        n = 0;
        for (uint32_t i = 0; i < m->n; i++)
            if (mm_matches(m, q, &m->ents[i])) want[n++] = m->ents[i].h;
    }
    while (tes_iter_next(&it)) {
        for (uint32_t i = 0; i < it.row_count; i++) {
            CHECK(ngot < MAXE);
            got[ngot++] = it.entities[fx_iter_row(&it, i)];
        }
        /* what this run has still to hand out */
        tes_entity_t rest[MAXE];
        uint32_t nrest = 0;
        for (uint32_t j = 0; j < n; j++) {
            bool seen = false;
            for (uint32_t i = 0; i < ngot && !seen; i++)
                seen = got[i] == want[j];
            if (!seen) rest[nrest++] = want[j];
        }
        uint32_t calls = fx_rng_below(&m->rng, 4);
        for (uint32_t c = 0; c < calls; c++) {
            uint32_t roll = fx_rng_below(&m->rng, 10);
            if (roll < 4) {
                mm_write(m, rest, nrest);
                wrote = true; /* pairs apply at once: membership may change */
            } else if (roll < 7) {
                mm_structural(m, rest, nrest);
            } else if (roll < 8) {
                mm_spawn(m, 1);
            } else {
                int k2 = mm_random_open(m, k);
                if (k2 >= 0) mm_collect(m, k2);
            }
        }
        m->op = "iterate";
        if (may_break && fx_rng_chance(&m->rng, 40)) {
            for (uint32_t j = 0; j < nrest; j++) {
                int32_t at = mm_find(m, rest[j]);
                CHECK(at >= 0); /* despawns are still recorded */
                m->ents[at].carried |= (uint8_t)(1u << k);
            }
            tes_iter_fini(&it);
            broke = true;
            break;
        }
    }
    m->deferring = false;
    if (filtered && !broke) mm_check_set(m, got, ngot, want, n, "iterate");
    if (!filtered && !broke && !wrote) mm_check_set(m, got, ngot, want, n, "unfiltered");
    m->reported += ngot;
    mm_flush(m);
}

/* A run by tes_query_apply (ADD 1 to A): the same rows a run reports, each written once. */
static void mm_apply(mm_t *m, int k) {
    mk_t *q = &m->k[k];
    if (!(q->added || q->changed)) return;
    m->op = "apply";
    tes_op_t op = {.kind = TES_OP_ADD, .k = 1, .component = m->id[MA]};
    if (!((q->all | q->added | q->changed) & BIT(MA))) {
        uint64_t last = tes_query_last_run(q->q), tick = change_tick(m->world);
        CHECK_ERR(tes_query_apply(m->world, q->q, &op, NULL, NULL), TES_ERR_MISSING_COMPONENT);
        CHECK_EQ(tes_query_last_run(q->q), last);
        CHECK_EQ(change_tick(m->world), tick);
        return;
    }
    tes_entity_t want[MAXE];
    rlist_t windows[MN];
    uint32_t n = mm_begin(m, k, want, windows);
    mm_free_windows(windows);
    uint32_t count = 99;
    CHECK_OK(tes_query_apply(m->world, q->q, &op, NULL, &count));
    CHECK_EQ(count, 0);
    for (uint32_t j = 0; j < n; j++) {
        me_t *e = &m->ents[mm_find(m, want[j])];
        e->aval += 1;
        mm_change(m, e, MA);
    }
}

static void mm_check_world(mm_t *m) {
    m->op = "check";
    CHECK_OK(tes_world_validate(m->world));
    tes_world_stats_t st = fx_stats(m->world);
    CHECK_EQ(st.entity_count, m->n);
    CHECK_EQ(st.commands_skipped, m->skipped);
    for (uint32_t i = 0; i < m->n; i++) {
        me_t *e = &m->ents[i];
        CHECK(tes_is_alive(m->world, e->h));
        for (uint32_t c = 0; c < MN; c++) {
            bool has = fx_has(m->world, e->h, m->id[c]);
            if (has != ((mm_mask(m, e) & BIT(c)) != 0))
                harness_fail(__FILE__, __LINE__, "entity %u has %s: %d (seed %llu step %u)", e->h,
                             mnames[c], has, (unsigned long long)m->seed, m->step);
        }
        if (e->mask & BIT(MA))
            CHECK_NUM_EQ(fx_get_number(m->world, e->h, m->id[MA], 0, 0), e->aval);
        if (e->mask & BIT(MB))
            CHECK_NUM_EQ(fx_get_number(m->world, e->h, m->id[MB], 0, 0), e->bval);
    }
}

static void mm_run(uint64_t seed, uint32_t steps, uint32_t chunk_bytes, uint32_t target) {
    mm_t *m = (mm_t *)calloc(1, sizeof *m);
    CHECK(m != NULL);
    harness_defer(mm_free, m);
    m->seed = seed;
    m->rng.state = seed;
    tes_world_desc_t desc = {.chunk_bytes = chunk_bytes, .min_free_indices = 1};
    m->world = fx_world(&desc);
    m->id[MA] = fx_component(m->world, "A", x_fields, 1);
    m->id[MB] = fx_component_flags(m->world, "B", n_fields, 1, TES_COMPONENT_CHANGE_BY_VALUE);
    m->id[MT] = fx_tag(m->world, "T");
    m->id[MS] = fx_sparse(m->world, "S", n_fields, 1);
    m->id[MM] = fx_sparse(m->world, "M", NULL, 0);
    m->id[MR] = fx_relation(m->world, "R", n_fields, 1, 0);
    mm_current = m;
    harness_defer(mm_report, NULL);
    tes_query_desc_t da = {.all = &m->id[MA], .all_count = 1};
    tes_query_desc_t db = {.all = &m->id[MB], .all_count = 1};
    m->plain_a = fx_query(m->world, &da);
    m->plain_b = fx_query(m->world, &db);
    for (int k = 0; k < MK; k++)
        if (fx_rng_chance(&m->rng, 70)) mm_open(m, k);
    for (m->step = 0; m->step < steps; m->step++) {
        uint32_t roll = fx_rng_below(&m->rng, 100);
        if (roll < 12) {
            if (m->n < target)
                mm_spawn(m, 1 + fx_rng_below(&m->rng, 12));
            else
                mm_structural(m, NULL, 0);
        } else if (roll < 30) {
            mm_structural(m, NULL, 0);
        } else if (roll < 52) {
            mm_write(m, NULL, 0);
        } else if (roll < 55) {
            mm_kernel(m);
        } else if (roll < 57) {
            m->op = "reclaim";
            CHECK_OK(tes_archetypes_reclaim(m->world, NULL));
        } else if (roll < 61) {
            int k = (int)fx_rng_below(&m->rng, MK);
            m->op = "toggle";
            if (m->k[k].open)
                mm_close(m, k);
            else
                mm_open(m, k);
        } else if (roll < 63) {
            m->op = "tick";
            CHECK_OK(tes_tick(m->world));
        } else if (roll < 65) {
            int k = mm_random_open(m, -1);
            if (k >= 0) mm_apply(m, k);
        } else if (roll < 82) {
            int k = mm_random_open(m, -1);
            if (k >= 0) mm_collect(m, k);
        } else if (roll < 88) {
            if (m->n > target) {
                m->op = "despawn batch";
                uint32_t cnt = 1 + fx_rng_below(&m->rng, 10);
                tes_entity_t hs[16];
                for (uint32_t i = 0; i < cnt; i++)
                    hs[i] = m->ents[i].h;
                CHECK_OK(tes_despawn_batch(m->world, hs, cnt));
                m->group++;
                for (uint32_t i = 0; i < cnt; i++)
                    mm_despawn(m, (uint32_t)mm_find(m, hs[i]));
            }
        } else {
            int k = mm_random_open(m, -1);
            if (k >= 0) mm_iterate(m, k);
        }
        mm_check_world(m);
    }
    printf("  seed %llu: %llu runs, %llu reported, %llu removals\n", (unsigned long long)seed,
           (unsigned long long)m->runs, (unsigned long long)m->reported,
           (unsigned long long)m->removals);
    printf("  by filter: A %llu B %llu T %llu S %llu M %llu R %llu\n",
           (unsigned long long)m->by_filter[0], (unsigned long long)m->by_filter[1],
           (unsigned long long)m->by_filter[2], (unsigned long long)m->by_filter[3],
           (unsigned long long)m->by_filter[4], (unsigned long long)m->by_filter[5]);
    if (steps >= 5000) { /* the long runs must have exercised every filter */
        CHECK(m->by_filter[MA] > 0 && m->by_filter[MB] > 0);
        CHECK(m->by_filter[MS] > 0 && m->by_filter[MR] > 0);
    }
    CHECK(m->reported > 20);
    CHECK(m->removals > 20);
}

TEST(changes_contract_model_seed_11) {
    mm_run(11, 6000, 1024, 200);
}

TEST(changes_contract_model_seed_12_default_chunks) {
    mm_run(12, 5000, 0, 300);
}

TEST(changes_contract_model_seed_13_small_population) {
    mm_run(13, 6000, 1024, 80);
}

TEST(changes_contract_model_many_short_seeds) {
    for (uint64_t seed = 100; seed < 112; seed++)
        mm_run(seed, 1500, 1024, 60 + (uint32_t)(seed % 5) * 40);
}

/* ---------------------------------------------------------------------------------------- */
/* Ticks, deferral and consumers                                                             */
/* ---------------------------------------------------------------------------------------- */

/* "tes_query_create advances the change tick for a consumer, as a run does"; a plain query
 * never does; last_run is 0 until the first run, then this_run = the world's tick - 1. */
TEST(consumer_creation_and_runs_advance_the_tick_plain_queries_never) {
    cw_t w = cw_make(0, 0, 0);
    fx_spawn(w.world, FX_IDS(w.a));
    uint64_t t0 = change_tick(w.world);
    tes_query_desc_t plain = {.all = &w.a, .all_count = 1};
    tes_query_t *p = fx_query(w.world, &plain);
    CHECK_EQ(change_tick(w.world), t0);
    tes_query_t *q = q_removed(w.world, w.s);
    CHECK_EQ(change_tick(w.world), t0 + 1);
    CHECK_EQ(tes_query_last_run(q), 0);
    fx_run(w.world, p);
    CHECK_EQ(change_tick(w.world), t0 + 1);
    tes_iter_t it;
    CHECK_OK(tes_query_iter(w.world, q, &it));
    CHECK_EQ(it.this_run, t0 + 1);
    CHECK_EQ(change_tick(w.world), t0 + 2);
    while (tes_iter_next(&it)) {
    }
    CHECK_EQ(tes_query_last_run(q), t0 + 1);
}

/* "A component it gains (tes_add, or back after a tes_remove) counts as added at that tick,
 * changed 0": sparse components and relations too. */
TEST(ticks_of_regained_sparse_and_relation_components) {
    cw_t w = cw_make(0, 0, 0);
    q_changed(w.world, w.s);
    q_changed(w.world, w.r);
    tes_entity_t e = fx_spawn(w.world, FX_IDS(w.a, w.s)), t = fx_spawn(w.world, NULL, 0);
    CHECK_OK(tes_pair_add(w.world, e, w.r, t));
    CHECK_OK(tes_set_number(w.world, e, w.s, 0, 0, 1));
    CHECK_OK(tes_pair_set_number(w.world, e, w.r, t, 0, 0, 1));
    uint64_t added, changed;
    CHECK_OK(tes_ticks(w.world, e, w.s, &added, &changed));
    CHECK(changed >= added && changed > 0);
    CHECK_OK(tes_ticks(w.world, e, w.r, &added, &changed));
    CHECK(changed >= added && changed > 0);
    CHECK_OK(tes_remove(w.world, e, w.s));
    CHECK_OK(tes_pair_remove(w.world, e, w.r, t));
    tes_query_t *bump = q_removed(w.world, w.a); /* moves the tick on */
    (void)bump;
    uint64_t now = change_tick(w.world);
    CHECK_OK(tes_add(w.world, e, w.s));
    CHECK_OK(tes_pair_add(w.world, e, w.r, t));
    CHECK_OK(tes_ticks(w.world, e, w.s, &added, &changed));
    CHECK_EQ(added, now);
    CHECK_EQ(changed, 0);
    CHECK_OK(tes_ticks(w.world, e, w.r, &added, &changed));
    CHECK_EQ(added, now);
    CHECK_EQ(changed, 0);
}

/* tes_defer_begin / end defer like an iteration: removals and adds show at the end. */
TEST(defer_begin_end_holds_structural_changes_from_consumers) {
    cw_t w = cw_make(0, 0, 0);
    tes_entity_t e = fx_spawn(w.world, FX_IDS(w.a));
    tes_query_t *qr = q_removed(w.world, w.a);
    tes_query_t *qa = q_added(w.world, w.b);
    CHECK_ERR(tes_defer_end(w.world), TES_ERR_INVALID_ARGUMENT);
    CHECK_OK(tes_defer_begin(w.world));
    CHECK_OK(tes_defer_begin(w.world));
    CHECK_OK(tes_add(w.world, e, w.b));
    tes_entity_t f = 0;
    CHECK_OK(tes_spawn(w.world, FX_IDS(w.a), &f));
    CHECK_OK(tes_despawn(w.world, f));
    CHECK_OK(tes_despawn(w.world, e));
    fx_entities_t *rm = NULL;
    CHECK_EQ(collect(w.world, qr, &rm)->count, 0);
    CHECK_EQ(rm->count, 0);
    CHECK_EQ(collect(w.world, qa, NULL)->count, 0);
    CHECK_OK(tes_defer_end(w.world));
    CHECK(tes_is_alive(w.world, e));
    CHECK_OK(tes_defer_end(w.world));
    CHECK(!tes_is_alive(w.world, e));
    collect(w.world, qr, &rm);
    CHECK_EQ(rm->count, 2);
    CHECK(fx_entities_contains(rm, e) && fx_entities_contains(rm, f));
    CHECK_EQ(collect(w.world, qa, NULL)->count, 0); /* added then despawned: reported by nothing */
    CHECK_EQ(fx_stats(w.world).commands_skipped, 0);
}

/* ---------------------------------------------------------------------------------------- */
/* Defects these tests found (each failed before its fix)                                    */
/* ---------------------------------------------------------------------------------------- */

/* tes_query_apply over a query that visits no row, on a CHANGE_BY_VALUE component some
 * consumer watches, did pointer arithmetic on NULL (UBSan: "applying zero offset to null
 * pointer"; the sanitized process aborted). tessera.h: "User mistakes never abort the process";
 * this is not even a mistake, and the call is TES_OK. */
TEST(kernel_fill_over_no_row_of_a_watched_by_value_component) {
    tes_world_t *w = fx_world(NULL);
    tes_component_t b = fx_component_flags(w, "B", n_fields, 1, TES_COMPONENT_CHANGE_BY_VALUE);
    q_changed(w, b);
    tes_query_desc_t pd = {.all = &b, .all_count = 1};
    tes_query_t *p = fx_query(w, &pd);
    tes_op_t op = {.kind = TES_OP_FILL, .k = 1, .component = b};
    CHECK_OK(tes_query_apply(w, p, &op, NULL, NULL));
}

/* The same with an archetype that has held entities and is empty now. */
TEST(kernel_fill_over_an_emptied_archetype_of_a_watched_by_value_component) {
    tes_world_t *w = fx_world(NULL);
    tes_component_t b = fx_component_flags(w, "B", n_fields, 1, TES_COMPONENT_CHANGE_BY_VALUE);
    tes_query_t *qc = q_changed(w, b);
    tes_entity_t e = fx_spawn(w, &b, 1);
    CHECK_OK(tes_despawn(w, e));
    tes_op_t op = {.kind = TES_OP_FILL, .k = 1, .component = b};
    CHECK_OK(tes_query_apply(w, qc, &op, NULL, NULL));
}
