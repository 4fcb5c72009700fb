/* Change tracking: which components pay for it (levels follow consumers), what each write
 * stamps (added vs changed ticks), the world's change tick, the tick-0 sentinel and the dirty
 * list's deduplication. */
#include "../../src/internal.h" /* access_epoch: what the bindings check before a store */
#include "fixtures.h"

static const tes_field_desc_t value_fields[] = {{"v", TES_F64, 0}, {"n", TES_I32, 0}};

typedef fx_scene_t scene_t;

static scene_t make_scene(const tes_world_desc_t *desc) {
    return fx_scene(desc, value_fields, 2);
}

static tes_tracking_t tracking(const tes_world_t *world, tes_component_t c) {
    tes_tracking_t level = (tes_tracking_t)99;
    CHECK_OK(tes_component_tracking(world, c, &level));
    return level;
}

static uint64_t added_tick(const tes_world_t *world, tes_entity_t e, tes_component_t c) {
    uint64_t added = 777, changed = 777;
    CHECK_OK(tes_ticks(world, e, c, &added, &changed));
    return added;
}

static uint64_t changed_tick(const tes_world_t *world, tes_entity_t e, tes_component_t c) {
    uint64_t added = 777, changed = 777;
    CHECK_OK(tes_ticks(world, e, c, &added, &changed));
    return changed;
}

static uint64_t change_tick(const tes_world_t *world) {
    return fx_stats(world).change_tick;
}

/* ---------------------------------------------------------------------------------------- */
/* Levels follow consumers                                                                   */
/* ---------------------------------------------------------------------------------------- */

TEST(components_start_untracked) {
    scene_t s = make_scene(NULL);
    CHECK_EQ(tracking(s.world, s.a), TES_UNTRACKED);
    CHECK_EQ(tracking(s.world, s.b), TES_UNTRACKED);
    CHECK_EQ(tracking(s.world, s.tag), TES_UNTRACKED);
    fx_spawn(s.world, FX_IDS(s.a, s.b, s.tag));
    CHECK_EQ(tracking(s.world, s.a), TES_UNTRACKED);
}

TEST(plain_query_tracks_nothing) {
    scene_t s = make_scene(NULL);
    fx_query(s.world, &(tes_query_desc_t){
                          .all = FX_IDS(s.a), .none = FX_IDS(s.b), .any = FX_IDS(s.c, s.tag)});
    CHECK_EQ(tracking(s.world, s.a), TES_UNTRACKED);
    CHECK_EQ(tracking(s.world, s.b), TES_UNTRACKED);
    CHECK_EQ(tracking(s.world, s.c), TES_UNTRACKED);
    CHECK_EQ(fx_stats(s.world).query_count, 1);
}

TEST(removed_list_alone_does_not_track_ticks) {
    /* A removal log is not a filter: "TES_UNTRACKED nobody filters on it". */
    scene_t s = make_scene(NULL);
    fx_query(s.world, &(tes_query_desc_t){.removed = FX_IDS(s.a)});
    CHECK_EQ(tracking(s.world, s.a), TES_UNTRACKED);
}

TEST(changed_filter_makes_component_dirty_tracked) {
    scene_t s = make_scene(NULL);
    fx_query(s.world, &(tes_query_desc_t){.changed = FX_IDS(s.a)});
    CHECK_EQ(tracking(s.world, s.a), TES_TRACK_DIRTY);
    CHECK_EQ(tracking(s.world, s.b), TES_UNTRACKED);
    CHECK_EQ(tracking(s.world, s.c), TES_UNTRACKED);
}

TEST(added_filter_makes_component_dirty_tracked) {
    scene_t s = make_scene(NULL);
    fx_query(s.world, &(tes_query_desc_t){.added = FX_IDS(s.b)});
    CHECK_EQ(tracking(s.world, s.b), TES_TRACK_DIRTY);
    CHECK_EQ(tracking(s.world, s.a), TES_UNTRACKED);
}

TEST(second_filter_component_is_ticks_tracked) {
    scene_t s = make_scene(NULL);
    fx_query(s.world, &(tes_query_desc_t){.changed = FX_IDS(s.a, s.b)});
    CHECK_EQ(tracking(s.world, s.a), TES_TRACK_DIRTY);
    CHECK_EQ(tracking(s.world, s.b), TES_TRACK_TICKS);
    CHECK_EQ(tracking(s.world, s.c), TES_UNTRACKED);
}

TEST(destroying_the_query_drops_tracking_back) {
    scene_t s = make_scene(NULL);
    tes_query_t *q = fx_query(s.world, &(tes_query_desc_t){.changed = FX_IDS(s.a, s.b)});
    CHECK_EQ(fx_stats(s.world).query_count, 1);
    tes_query_destroy(s.world, q);
    CHECK_EQ(tracking(s.world, s.a), TES_UNTRACKED);
    CHECK_EQ(tracking(s.world, s.b), TES_UNTRACKED);
    CHECK_EQ(fx_stats(s.world).query_count, 0);
    tes_query_destroy(s.world, NULL); /* ignored */
}

TEST(tracking_level_is_the_highest_any_consumer_needs) {
    scene_t s = make_scene(NULL);
    tes_query_t *q1 = fx_query(s.world, &(tes_query_desc_t){.changed = FX_IDS(s.a)});
    tes_query_t *q2 = fx_query(s.world, &(tes_query_desc_t){.changed = FX_IDS(s.b, s.a)});
    CHECK_EQ(tracking(s.world, s.a), TES_TRACK_DIRTY); /* first of q1, second of q2 */
    CHECK_EQ(tracking(s.world, s.b), TES_TRACK_DIRTY);
    tes_query_destroy(s.world, q1);
    CHECK_EQ(tracking(s.world, s.a), TES_TRACK_TICKS); /* only q2's second filter is left */
    CHECK_EQ(tracking(s.world, s.b), TES_TRACK_DIRTY);
    tes_query_t *q3 = fx_query(s.world, &(tes_query_desc_t){.changed = FX_IDS(s.c, s.a)});
    CHECK_EQ(tracking(s.world, s.a), TES_TRACK_TICKS);
    CHECK_EQ(tracking(s.world, s.c), TES_TRACK_DIRTY);
    tes_query_destroy(s.world, q2);
    CHECK_EQ(tracking(s.world, s.a), TES_TRACK_TICKS); /* q3 still checks it */
    CHECK_EQ(tracking(s.world, s.b), TES_UNTRACKED);
    tes_query_destroy(s.world, q3);
    CHECK_EQ(tracking(s.world, s.a), TES_UNTRACKED);
    CHECK_EQ(tracking(s.world, s.c), TES_UNTRACKED);
}

TEST(two_consumers_of_one_component_keep_it_until_both_close) {
    scene_t s = make_scene(NULL);
    tes_query_t *q1 = fx_query(s.world, &(tes_query_desc_t){.changed = FX_IDS(s.a)});
    tes_query_t *q2 = fx_query(s.world, &(tes_query_desc_t){.added = FX_IDS(s.a)});
    tes_query_destroy(s.world, q1);
    CHECK_EQ(tracking(s.world, s.a), TES_TRACK_DIRTY);
    tes_query_destroy(s.world, q2);
    CHECK_EQ(tracking(s.world, s.a), TES_UNTRACKED);
}

static void noop_system(tes_iter_t *it, void *user) {
    (void)user;
    while (tes_iter_next(it)) {
    }
}

TEST(system_filters_set_tracking_and_destroy_drops_it) {
    scene_t s = make_scene(NULL);
    uint32_t stage;
    CHECK_OK(tes_stage_create(s.world, "update", &stage));
    tes_system_desc_t desc = {
        .stage = stage, .query = {.changed = FX_IDS(s.a, s.b)}, .run = noop_system};
    tes_system_t *sys = NULL;
    CHECK_OK(tes_system_create(s.world, &desc, &sys));
    CHECK(sys != NULL);
    CHECK_EQ(tracking(s.world, s.a), TES_TRACK_DIRTY);
    CHECK_EQ(tracking(s.world, s.b), TES_TRACK_TICKS);
    CHECK_EQ(fx_stats(s.world).query_count, 1); /* systems' queries count */
    tes_system_destroy(s.world, sys);
    CHECK_EQ(tracking(s.world, s.a), TES_UNTRACKED);
    CHECK_EQ(tracking(s.world, s.b), TES_UNTRACKED);
    CHECK_EQ(fx_stats(s.world).query_count, 0);
}

/* ---------------------------------------------------------------------------------------- */
/* What writes stamp                                                                         */
/* ---------------------------------------------------------------------------------------- */

TEST(untracked_component_writes_no_ticks) {
    scene_t s = make_scene(NULL);
    tes_entity_t e = fx_spawn(s.world, FX_IDS(s.a, s.b));
    uint64_t added = 5, changed = 5;
    CHECK_OK(tes_ticks(s.world, e, s.a, &added, &changed));
    CHECK_EQ(added, 0);
    CHECK_EQ(changed, 0);
    double v = 2.5;
    CHECK_OK(tes_set(s.world, e, s.a, 0, &v, sizeof v));
    CHECK_OK(tes_set_number(s.world, e, s.a, 1, 0, 7));
    CHECK_OK(tes_mark_changed(s.world, e, s.a));
    tes_location_t loc = fx_check_location(s.world, e);
    CHECK_OK(tes_chunk_mark_changed(s.world, loc.archetype, loc.chunk, s.a, NULL, 0));
    CHECK_OK(tes_add(s.world, e, s.c));
    CHECK_OK(tes_ticks(s.world, e, s.a, &added, &changed));
    CHECK_EQ(added, 0);
    CHECK_EQ(changed, 0);
    CHECK_OK(tes_ticks(s.world, e, s.c, &added, &changed));
    CHECK_EQ(added, 0);
    CHECK_EQ(changed, 0);
    /* The writes themselves happened. */
    CHECK_NUM_EQ(fx_get_number(s.world, e, s.a, 0, 0), 2.5);
    CHECK_NUM_EQ(fx_get_number(s.world, e, s.a, 1, 0), 7);
}

TEST(ticks_read_zero_once_tracking_is_dropped) {
    scene_t s = make_scene(NULL);
    tes_query_t *q = fx_query(s.world, &(tes_query_desc_t){.changed = FX_IDS(s.a)});
    tes_entity_t e = fx_spawn(s.world, FX_IDS(s.a));
    CHECK_OK(tes_mark_changed(s.world, e, s.a));
    CHECK(added_tick(s.world, e, s.a) > 0);
    CHECK(changed_tick(s.world, e, s.a) > 0);
    tes_query_destroy(s.world, q);
    CHECK_EQ(added_tick(s.world, e, s.a), 0);
    CHECK_EQ(changed_tick(s.world, e, s.a), 0);
}

TEST(tracking_restarted_later_starts_a_fresh_history) {
    scene_t s = make_scene(NULL);
    tes_query_t *q1 = fx_query(s.world, &(tes_query_desc_t){.changed = FX_IDS(s.a)});
    tes_entity_t e = fx_spawn(s.world, FX_IDS(s.a));
    CHECK_OK(tes_mark_changed(s.world, e, s.a));
    tes_query_destroy(s.world, q1);              /* untracked: the history is gone */
    CHECK_OK(tes_mark_changed(s.world, e, s.a)); /* not seen by anyone */
    fx_run(s.world, fx_query(s.world, &(tes_query_desc_t){.removed = FX_IDS(s.b)}));
    uint64_t tick = change_tick(s.world);
    tes_query_t *changed = fx_query(s.world, &(tes_query_desc_t){.changed = FX_IDS(s.a)});
    tes_query_t *added = fx_query(s.world, &(tes_query_desc_t){.added = FX_IDS(s.a)});
    CHECK_EQ(added_tick(s.world, e, s.a), tick);
    CHECK_EQ(changed_tick(s.world, e, s.a), 0);
    CHECK_EQ(fx_run(s.world, changed)->count, 0);
    FX_CHECK_VISITED(fx_run(s.world, added), e);
}

TEST(tracking_start_counts_existing_entities_as_added) {
    scene_t s = make_scene(NULL);
    tes_entity_t e[3];
    for (int i = 0; i < 3; i++)
        e[i] = fx_spawn(s.world, FX_IDS(s.a));
    CHECK_OK(tes_set_number(s.world, e[0], s.a, 0, 0, 1)); /* untracked: stamps nothing */
    uint64_t tick = change_tick(s.world);
    tes_query_t *q = fx_query(s.world, &(tes_query_desc_t){.added = FX_IDS(s.a)});
    /* A consumer starts at its creation: the tick moves on, so that writes after it are its. */
    CHECK_EQ(change_tick(s.world), tick + 1);
    for (int i = 0; i < 3; i++) {
        CHECK_EQ(added_tick(s.world, e[i], s.a), tick);
        CHECK_EQ(changed_tick(s.world, e[i], s.a), 0);
    }
    /* The first run sees every existing entity as added, once. */
    FX_CHECK_VISITED(fx_run(s.world, q), e[0], e[1], e[2]);
    CHECK_EQ(fx_run(s.world, q)->count, 0);
}

TEST(spawn_stamps_added_not_changed) {
    scene_t s = make_scene(NULL);
    fx_query(s.world, &(tes_query_desc_t){.changed = FX_IDS(s.a, s.b)});
    uint64_t tick = change_tick(s.world);
    CHECK_EQ(tick, 2); /* a fresh world's 1, and the consumer's start */
    tes_entity_t e = fx_spawn(s.world, FX_IDS(s.b, s.a, s.c));
    CHECK_EQ(added_tick(s.world, e, s.a), tick);
    CHECK_EQ(changed_tick(s.world, e, s.a), 0);
    CHECK_EQ(added_tick(s.world, e, s.b), tick); /* ticks-level components are stamped too */
    CHECK_EQ(changed_tick(s.world, e, s.b), 0);
    CHECK_EQ(added_tick(s.world, e, s.c), 0); /* untracked */
    tes_entity_t batch[5];
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.a), 5, batch));
    for (int i = 0; i < 5; i++) {
        CHECK_EQ(added_tick(s.world, batch[i], s.a), tick);
        CHECK_EQ(changed_tick(s.world, batch[i], s.a), 0);
    }
    tes_archetype_t arch = fx_archetype_of(s.world, batch[0]);
    tes_entity_t more[3];
    CHECK_OK(tes_archetype_spawn(s.world, arch, 3, more));
    for (int i = 0; i < 3; i++) {
        CHECK_EQ(added_tick(s.world, more[i], s.a), tick);
        CHECK_EQ(changed_tick(s.world, more[i], s.a), 0);
    }
}

TEST(add_stamps_added_not_changed) {
    scene_t s = make_scene(NULL);
    tes_query_t *q = fx_query(s.world, &(tes_query_desc_t){.changed = FX_IDS(s.a)});
    tes_entity_t e = fx_spawn(s.world, FX_IDS(s.b));
    fx_run(s.world, q); /* moves the tick on */
    uint64_t tick = change_tick(s.world);
    CHECK(tick > 1);
    CHECK_OK(tes_add(s.world, e, s.a));
    CHECK_EQ(added_tick(s.world, e, s.a), tick);
    CHECK_EQ(changed_tick(s.world, e, s.a), 0);
}

TEST(adding_a_component_already_there_stamps_nothing) {
    scene_t s = make_scene(NULL);
    tes_query_t *q = fx_query(s.world, &(tes_query_desc_t){.added = FX_IDS(s.a)});
    tes_entity_t e = fx_spawn(s.world, FX_IDS(s.a));
    uint64_t spawned = added_tick(s.world, e, s.a);
    FX_CHECK_VISITED(fx_run(s.world, q), e);
    CHECK_OK(tes_add(s.world, e, s.a)); /* does nothing */
    CHECK_EQ(added_tick(s.world, e, s.a), spawned);
    CHECK_EQ(fx_run(s.world, q)->count, 0);
}

TEST(set_stamps_changed_not_added) {
    scene_t s = make_scene(NULL);
    tes_query_t *q = fx_query(s.world, &(tes_query_desc_t){.changed = FX_IDS(s.a)});
    tes_entity_t e = fx_spawn(s.world, FX_IDS(s.a));
    uint64_t added = added_tick(s.world, e, s.a);
    fx_run(s.world, q);
    uint64_t tick = change_tick(s.world);
    CHECK(tick > added);
    int32_t n = 42;
    CHECK_OK(tes_set(s.world, e, s.a, 1, &n, sizeof n));
    CHECK_EQ(changed_tick(s.world, e, s.a), tick);
    CHECK_EQ(added_tick(s.world, e, s.a), added);
}

TEST(set_number_stamps_changed) {
    scene_t s = make_scene(NULL);
    tes_query_t *q = fx_query(s.world, &(tes_query_desc_t){.changed = FX_IDS(s.a)});
    tes_entity_t e = fx_spawn(s.world, FX_IDS(s.a));
    fx_run(s.world, q);
    uint64_t tick = change_tick(s.world);
    CHECK_OK(tes_set_number(s.world, e, s.a, 0, 0, -3.5));
    CHECK_EQ(changed_tick(s.world, e, s.a), tick);
    fx_run(s.world, q);
    CHECK_OK(tes_set_number(s.world, e, s.a, 0, 0, -3.5)); /* same value: still a write */
    CHECK_EQ(changed_tick(s.world, e, s.a), tick + 1);
}

TEST(mark_changed_stamps_changed) {
    scene_t s = make_scene(NULL);
    tes_query_t *q = fx_query(s.world, &(tes_query_desc_t){.changed = FX_IDS(s.a)});
    tes_entity_t e = fx_spawn(s.world, FX_IDS(s.a, s.b));
    fx_run(s.world, q);
    fx_run(s.world, q);
    uint64_t tick = change_tick(s.world);
    void *ptr = NULL;
    CHECK_OK(tes_field_ptr(s.world, e, s.a, 0, &ptr));
    *(double *)ptr = 9.0; /* a raw write is not seen until marked */
    CHECK_EQ(changed_tick(s.world, e, s.a), 0);
    CHECK_OK(tes_mark_changed(s.world, e, s.a));
    CHECK_EQ(changed_tick(s.world, e, s.a), tick);
    CHECK_NUM_EQ(fx_get_number(s.world, e, s.a, 0, 0), 9.0);
}

TEST(chunk_mark_changed_stamps_the_given_rows) {
    scene_t s = make_scene(NULL);
    tes_query_t *q = fx_query(s.world, &(tes_query_desc_t){.changed = FX_IDS(s.a)});
    tes_entity_t e[6];
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.a), 6, e));
    fx_run(s.world, q);
    uint64_t tick = change_tick(s.world);
    tes_location_t loc = fx_check_location(s.world, e[0]);
    tes_chunk_info_t chunk;
    CHECK_OK(tes_chunk_info(s.world, loc.archetype, loc.chunk, &chunk));
    CHECK_EQ(chunk.count, 6);
    const uint32_t rows[] = {1, 4};
    CHECK_OK(tes_chunk_mark_changed(s.world, loc.archetype, loc.chunk, s.a, rows, 2));
    for (uint32_t row = 0; row < 6; row++) {
        uint64_t expected = (row == 1 || row == 4) ? tick : 0;
        CHECK_EQ(changed_tick(s.world, chunk.entities[row], s.a), expected);
    }
    FX_CHECK_VISITED(fx_run(s.world, q), chunk.entities[1], chunk.entities[4]);
}

TEST(chunk_mark_changed_without_rows_stamps_every_row) {
    scene_t s = make_scene(NULL);
    tes_query_t *q = fx_query(s.world, &(tes_query_desc_t){.changed = FX_IDS(s.a)});
    tes_entity_t e[6];
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.a), 6, e));
    tes_entity_t other = fx_spawn(s.world, FX_IDS(s.a, s.b)); /* another archetype */
    fx_run(s.world, q);
    uint64_t tick = change_tick(s.world);
    tes_location_t loc = fx_check_location(s.world, e[0]);
    CHECK_OK(tes_chunk_mark_changed(s.world, loc.archetype, loc.chunk, s.a, NULL, 0));
    for (int i = 0; i < 6; i++)
        CHECK_EQ(changed_tick(s.world, e[i], s.a), tick);
    CHECK_EQ(changed_tick(s.world, other, s.a), 0);
    FX_CHECK_SAME_ENTITIES(fx_run(s.world, q), e, 6);
}

TEST(failed_write_stamps_nothing) {
    static const tes_field_desc_t int_fields[] = {{"n", TES_I32, 0}};
    scene_t s = make_scene(NULL);
    tes_component_t counter = fx_component(s.world, "Counter", int_fields, 1);
    tes_query_t *q = fx_query(s.world, &(tes_query_desc_t){.changed = FX_IDS(counter)});
    tes_entity_t e = fx_spawn(s.world, FX_IDS(counter));
    fx_run(s.world, q);
    CHECK_ERR(tes_set_number(s.world, e, counter, 0, 0, 0.5), TES_ERR_BAD_VALUE);
    int16_t small = 1;
    CHECK_ERR(tes_set(s.world, e, counter, 0, &small, sizeof small), TES_ERR_BAD_SIZE);
    CHECK_ERR(tes_set_number(s.world, e, counter, 3, 0, 1), TES_ERR_UNKNOWN_FIELD);
    CHECK_EQ(changed_tick(s.world, e, counter), 0);
    CHECK_EQ(fx_run(s.world, q)->count, 0);
}

/* ---------------------------------------------------------------------------------------- */
/* The change tick                                                                           */
/* ---------------------------------------------------------------------------------------- */

TEST(change_tick_starts_at_one) {
    scene_t s = make_scene(NULL);
    tes_world_stats_t stats = fx_stats(s.world);
    CHECK_EQ(stats.change_tick, 1);
    CHECK_EQ(stats.frame, 0);
    CHECK_EQ(stats.query_count, 0);
    CHECK_EQ(stats.commands_skipped, 0);
}

TEST(change_tick_advances_once_per_consumer_run) {
    scene_t s = make_scene(NULL);
    tes_query_t *changed = fx_query(s.world, &(tes_query_desc_t){.changed = FX_IDS(s.a)});
    tes_query_t *removed = fx_query(s.world, &(tes_query_desc_t){.removed = FX_IDS(s.b)});
    tes_entity_t e[40];
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.a, s.b), 40, e));
    for (int round = 0; round < 5; round++) {
        for (int i = 0; i < 40; i++)
            CHECK_OK(tes_mark_changed(s.world, e[i], s.a));
        uint64_t before = change_tick(s.world);
        tes_iter_t it;
        CHECK_OK(tes_query_iter(s.world, changed, &it));
        CHECK_EQ(it.this_run, before);
        CHECK_EQ(change_tick(s.world), before + 1); /* taken at the start of the run */
        uint32_t chunks = 0;
        while (tes_iter_next(&it)) {
            chunks++;
            CHECK_EQ(it.this_run, before);
        }
        CHECK_EQ(chunks, 1);
        CHECK_EQ(change_tick(s.world), before + 1); /* once per run, not per chunk */
        CHECK_EQ(tes_query_last_run(changed), before);
        /* A run with nothing to visit is a run too. */
        CHECK_EQ(fx_run_count(s.world, changed), 0);
        CHECK_EQ(change_tick(s.world), before + 2);
        /* So is a removal consumer's. */
        fx_run(s.world, removed);
        CHECK_EQ(change_tick(s.world), before + 3);
        CHECK_EQ(tes_query_last_run(removed), before + 2);
    }
}

TEST(run_ended_early_still_advances_once) {
    scene_t s = make_scene(&(tes_world_desc_t){.chunk_bytes = 1024});
    tes_query_t *q = fx_query(s.world, &(tes_query_desc_t){.changed = FX_IDS(s.a)});
    tes_entity_t e[200];
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.a), 200, e));
    for (int i = 0; i < 200; i++)
        CHECK_OK(tes_mark_changed(s.world, e[i], s.a));
    uint64_t before = change_tick(s.world);
    tes_iter_t it;
    CHECK_OK(tes_query_iter(s.world, q, &it));
    CHECK(tes_iter_next(&it));
    tes_iter_fini(&it);
    tes_iter_fini(&it); /* harmless */
    CHECK_EQ(change_tick(s.world), before + 1);
    CHECK_EQ(tes_query_last_run(q), before);
}

TEST(writes_during_a_run_carry_a_newer_tick) {
    scene_t s = make_scene(NULL);
    tes_query_t *q = fx_query(s.world, &(tes_query_desc_t){.changed = FX_IDS(s.a)});
    tes_entity_t e = fx_spawn(s.world, FX_IDS(s.a));
    CHECK_OK(tes_mark_changed(s.world, e, s.a));
    tes_iter_t it;
    CHECK_OK(tes_query_iter(s.world, q, &it));
    CHECK_EQ(changed_tick(s.world, e, s.a), it.this_run); /* stamped before: inside (0, this] */
    while (tes_iter_next(&it)) {
        for (uint32_t i = 0; i < it.row_count; i++) {
            tes_entity_t x = it.entities[fx_iter_row(&it, i)];
            CHECK_OK(tes_set_number(s.world, x, s.a, 0, 0, 1));
            CHECK_EQ(changed_tick(s.world, x, s.a), it.this_run + 1);
        }
    }
}

TEST(tick_zero_is_never_seen) {
    scene_t s = make_scene(NULL);
    tes_query_t *q = fx_query(s.world, &(tes_query_desc_t){.changed = FX_IDS(s.a)});
    CHECK_EQ(tes_query_last_run(q), 0);
    tes_entity_t e[10];
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.a), 10, e));
    for (int i = 0; i < 10; i++)
        CHECK_EQ(changed_tick(s.world, e[i], s.a), 0);
    /* last_run 0 and changed tick 0: never inside (0, this_run]. */
    CHECK_EQ(fx_run(s.world, q)->count, 0);
    CHECK_EQ(tes_query_last_run(q), 2); /* tick 1, then 2 from the consumer's start */
    CHECK_OK(tes_mark_changed(s.world, e[3], s.a));
    FX_CHECK_VISITED(fx_run(s.world, q), e[3]);
}

/* ---------------------------------------------------------------------------------------- */
/* Deduplication                                                                             */
/* ---------------------------------------------------------------------------------------- */

TEST(marking_one_entity_many_times_visits_it_once) {
    scene_t s = make_scene(NULL);
    tes_query_t *q = fx_query(s.world, &(tes_query_desc_t){.changed = FX_IDS(s.a)});
    tes_entity_t e[10];
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.a), 10, e));
    tes_location_t loc = fx_check_location(s.world, e[3]);
    for (int i = 0; i < 100; i++) {
        CHECK_OK(tes_mark_changed(s.world, e[3], s.a));
        CHECK_OK(tes_set_number(s.world, e[3], s.a, 1, 0, i));
        CHECK_OK(tes_chunk_mark_changed(s.world, loc.archetype, loc.chunk, s.a, &loc.row, 1));
    }
    tes_iter_t it;
    uint32_t chunks = 0;
    CHECK_OK(tes_query_iter(s.world, q, &it));
    while (tes_iter_next(&it)) {
        FX_CHECK_ITER_CHUNK(s.world, &it);
        chunks++;
        CHECK_EQ(it.row_count, 1);
        CHECK_EQ(fx_iter_row(&it, 0), loc.row);
        CHECK_EQ(it.entities[loc.row], e[3]);
    }
    CHECK_EQ(chunks, 1);
    CHECK_EQ(fx_run(s.world, q)->count, 0);
}

TEST(marking_a_whole_chunk_many_times_visits_each_row_once) {
    scene_t s = make_scene(NULL);
    tes_query_t *q = fx_query(s.world, &(tes_query_desc_t){.changed = FX_IDS(s.a)});
    tes_entity_t e[10];
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.a), 10, e));
    tes_location_t loc = fx_check_location(s.world, e[0]);
    for (int i = 0; i < 50; i++) {
        CHECK_OK(tes_chunk_mark_changed(s.world, loc.archetype, loc.chunk, s.a, NULL, 0));
        CHECK_OK(tes_mark_changed(s.world, e[i % 10], s.a));
    }
    tes_iter_t it;
    CHECK_OK(tes_query_iter(s.world, q, &it));
    CHECK(tes_iter_next(&it));
    FX_CHECK_ITER_CHUNK(s.world, &it);
    CHECK_EQ(it.row_count, 10);
    CHECK(!tes_iter_next(&it));
    CHECK_EQ(fx_run(s.world, q)->count, 0);
}

TEST(marking_a_whole_chunk_over_partly_dirty_words_lists_each_row_once) {
    /* 150 rows: two full bitmap words and a partial one; some rows dirty beforehand, so the
     * word-at-a-time skip meets full, partly set and empty words. */
    scene_t s = make_scene(NULL);
    tes_query_t *q = fx_query(s.world, &(tes_query_desc_t){.changed = FX_IDS(s.a)});
    tes_entity_t e[150];
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.a), 150, e));
    tes_location_t loc = fx_check_location(s.world, e[0]);
    uint32_t first[] = {3, 64, 149};
    CHECK_OK(tes_chunk_mark_changed(s.world, loc.archetype, loc.chunk, s.a, first, 3));
    for (uint32_t r = 0; r < 64; r++) /* word 0 complete before the whole-chunk mark */
        CHECK_OK(tes_mark_changed(s.world, e[r], s.a));
    for (int i = 0; i < 2; i++)
        CHECK_OK(tes_chunk_mark_changed(s.world, loc.archetype, loc.chunk, s.a, NULL, 0));
    tes_iter_t it;
    CHECK_OK(tes_query_iter(s.world, q, &it));
    CHECK(tes_iter_next(&it));
    CHECK_EQ(it.row_count, 150);
    bool seen[150] = {false};
    for (uint32_t i = 0; i < it.row_count; i++) {
        CHECK(it.rows[i] < 150);
        CHECK(!seen[it.rows[i]]);
        seen[it.rows[i]] = true;
        CHECK_EQ(changed_tick(s.world, e[it.rows[i]], s.a), it.this_run);
    }
    CHECK(!tes_iter_next(&it));
    CHECK_EQ(fx_run(s.world, q)->count, 0);
}

/* ---------------------------------------------------------------------------------------- */
/* Runs ended early (issue 16, rule 5)                                                       */
/* ---------------------------------------------------------------------------------------- */

/* A run of `q` that hands out `chunks` visits and ends (tes_iter_fini), appending what it
 * visited to `out`. */
static void run_partly(scene_t *s, tes_query_t *q, uint32_t chunks, fx_entities_t *out) {
    tes_iter_t it;
    CHECK_OK(tes_query_iter(s->world, q, &it));
    for (uint32_t c = 0; c < chunks && tes_iter_next(&it); c++) {
        FX_CHECK_ITER_CHUNK(s->world, &it);
        for (uint32_t i = 0; i < it.row_count; i++)
            fx_entities_push(out, it.entities[fx_iter_row(&it, i)]);
    }
    tes_iter_fini(&it);
}

/* Every entity of `list` once, in `a` or in `b`. */
static void check_split(const fx_entities_t *a, const fx_entities_t *b, const tes_entity_t *list,
                        uint32_t n) {
    fx_entities_t *both = fx_entities_new();
    for (uint32_t i = 0; i < a->count; i++)
        fx_entities_push(both, a->items[i]);
    for (uint32_t i = 0; i < b->count; i++)
        fx_entities_push(both, b->items[i]);
    FX_CHECK_SAME_ENTITIES(both, list, n);
}

TEST(a_run_ended_early_leaves_the_rows_it_did_not_hand_out_to_the_next_run) {
    scene_t s = make_scene(&(tes_world_desc_t){.chunk_bytes = 1024});
    tes_query_t *q = fx_query(s.world, &(tes_query_desc_t){.changed = FX_IDS(s.a)});
    tes_entity_t e[200];
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.a), 200, e));
    for (int i = 0; i < 200; i++)
        CHECK_OK(tes_mark_changed(s.world, e[i], s.a));
    fx_entities_t *first = fx_entities_new();
    run_partly(&s, q, 1, first);
    CHECK(first->count > 0 && first->count < 200);
    check_split(first, fx_run(s.world, q), e, 200);
    CHECK_EQ(fx_run(s.world, q)->count, 0);
    /* Nothing handed out: everything waits, through pruning too. */
    for (int i = 0; i < 200; i += 3)
        CHECK_OK(tes_mark_changed(s.world, e[i], s.a));
    fx_entities_t *none = fx_entities_new();
    run_partly(&s, q, 0, none);
    CHECK_EQ(none->count, 0);
    for (int i = 0; i < 3; i++)
        CHECK_OK(tes_tick(s.world));
    CHECK_EQ(fx_run(s.world, q)->count, 67);
    CHECK_OK(tes_world_validate(s.world));
}

TEST(carried_rows_are_checked_again_each_once_each_chunk_once) {
    scene_t s = make_scene(&(tes_world_desc_t){.chunk_bytes = 1024});
    tes_query_t *q =
        fx_query(s.world, &(tes_query_desc_t){.changed = FX_IDS(s.a), .none = FX_IDS(s.tag)});
    tes_entity_t e[200];
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.a), 200, e));
    for (int i = 0; i < 200; i++)
        CHECK_OK(tes_mark_changed(s.world, e[i], s.a));
    fx_entities_t *first = fx_entities_new();
    run_partly(&s, q, 1, first);
    /* Four entities the run did not reach: gone, without A, excluded, moved (still a match);
     * and one changed again (the next run reports it once). */
    tes_entity_t rest[200];
    uint32_t n = 0;
    for (int i = 0; i < 200; i++) {
        bool seen = false;
        for (uint32_t k = 0; k < first->count; k++)
            seen |= first->items[k] == e[i];
        if (!seen) rest[n++] = e[i];
    }
    CHECK(n >= 6);
    CHECK_OK(tes_despawn(s.world, rest[0]));
    CHECK_OK(tes_remove(s.world, rest[1], s.a));
    CHECK_OK(tes_add(s.world, rest[2], s.tag));
    CHECK_OK(tes_add(s.world, rest[3], s.b));
    CHECK_OK(tes_mark_changed(s.world, rest[4], s.a));
    fx_entities_t *next = fx_entities_new();
    tes_iter_t it;
    CHECK_OK(tes_query_iter(s.world, q, &it));
    uint32_t chunks = 0;
    struct {
        tes_archetype_t archetype;
        uint32_t chunk;
    } seen[64];
    while (tes_iter_next(&it)) {
        FX_CHECK_ITER_CHUNK(s.world, &it);
        for (uint32_t c = 0; c < chunks; c++)
            CHECK(seen[c].archetype != it.archetype || seen[c].chunk != it.chunk);
        CHECK(chunks < 64);
        seen[chunks].archetype = it.archetype;
        seen[chunks++].chunk = it.chunk;
        for (uint32_t i = 0; i < it.row_count; i++)
            fx_entities_push(next, it.entities[fx_iter_row(&it, i)]);
    }
    FX_CHECK_SAME_ENTITIES(next, rest + 3, n - 3);
    CHECK_EQ(fx_run(s.world, q)->count, 0);
}

TEST(carried_rows_join_the_next_runs_own_and_survive_another_early_end) {
    scene_t s = make_scene(&(tes_world_desc_t){.chunk_bytes = 1024});
    tes_query_t *q = fx_query(s.world, &(tes_query_desc_t){.added = FX_IDS(s.a)});
    tes_entity_t e[300];
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.a), 200, e));
    fx_entities_t *got = fx_entities_new();
    run_partly(&s, q, 1, got);
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.a, s.b), 100, e + 200));
    run_partly(&s, q, 2, got);
    tes_collect_t collected;
    CHECK_OK(tes_query_collect(s.world, q, &collected));
    for (uint32_t i = 0; i < collected.count; i++)
        fx_entities_push(got, collected.entities[i]);
    FX_CHECK_SAME_ENTITIES(got, e, 300);
    CHECK_OK(tes_query_collect(s.world, q, &collected));
    CHECK_EQ(collected.count, 0);
}

TEST(a_sparse_driven_run_ended_early_carries_too) {
    scene_t s = make_scene(&(tes_world_desc_t){.chunk_bytes = 1024});
    tes_component_t sparse = fx_sparse(s.world, "S", value_fields, 2);
    tes_query_t *q = fx_query(s.world, &(tes_query_desc_t){.changed = FX_IDS(sparse)});
    tes_entity_t e[150];
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.a, sparse), 150, e));
    for (int i = 0; i < 150; i++)
        CHECK_OK(tes_mark_changed(s.world, e[i], sparse));
    fx_entities_t *first = fx_entities_new();
    run_partly(&s, q, 1, first);
    CHECK(first->count > 0 && first->count < 150);
    CHECK_OK(tes_tick(s.world)); /* prunes the sparse dirty list: the carried list holds them */
    check_split(first, fx_run(s.world, q), e, 150);
}

static void stop_after_one_chunk(tes_iter_t *it, void *user) {
    fx_entities_t *out = (fx_entities_t *)user;
    if (!tes_iter_next(it)) return;
    for (uint32_t i = 0; i < it->row_count; i++)
        fx_entities_push(out, it->entities[fx_iter_row(it, i)]);
}

TEST(a_system_that_stops_early_sees_the_rest_at_its_next_run) {
    scene_t s = make_scene(&(tes_world_desc_t){.chunk_bytes = 1024});
    fx_entities_t *got = fx_entities_new();
    uint32_t stage = 0;
    CHECK_OK(tes_stage_create(s.world, "update", &stage));
    tes_system_t *system;
    CHECK_OK(tes_system_create(s.world,
                               &(tes_system_desc_t){.stage = stage,
                                                    .query = {.added = FX_IDS(s.a)},
                                                    .run = stop_after_one_chunk,
                                                    .user = got},
                               &system));
    tes_entity_t e[200];
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.a), 200, e));
    for (int i = 0; i < 20 && got->count < 200; i++)
        CHECK_OK(tes_tick(s.world));
    FX_CHECK_SAME_ENTITIES(got, e, 200);
}

/* ---------------------------------------------------------------------------------------- */
/* Errors                                                                                    */
/* ---------------------------------------------------------------------------------------- */

TEST(tracking_calls_reject_bad_arguments) {
    scene_t s = make_scene(NULL);
    tes_entity_t e = fx_spawn(s.world, FX_IDS(s.a));
    tes_entity_t dead = fx_spawn(s.world, FX_IDS(s.a));
    CHECK_OK(tes_despawn(s.world, dead));
    tes_tracking_t level;
    uint64_t added, changed;
    CHECK_ERR(tes_component_tracking(NULL, s.a, &level), TES_ERR_INVALID_ARGUMENT);
    CHECK_ERR(tes_component_tracking(s.world, s.a, NULL), TES_ERR_INVALID_ARGUMENT);
    CHECK_ERR(tes_component_tracking(s.world, 99, &level), TES_ERR_UNKNOWN_COMPONENT);
    CHECK_ERR(tes_ticks(NULL, e, s.a, &added, &changed), TES_ERR_INVALID_ARGUMENT);
    CHECK_ERR(tes_ticks(s.world, dead, s.a, &added, &changed), TES_ERR_STALE_ENTITY);
    CHECK_ERR(tes_ticks(s.world, e, 99, &added, &changed), TES_ERR_UNKNOWN_COMPONENT);
    CHECK_ERR(tes_ticks(s.world, e, s.b, &added, &changed), TES_ERR_MISSING_COMPONENT);
    CHECK_ERR(tes_mark_changed(NULL, e, s.a), TES_ERR_INVALID_ARGUMENT);
    CHECK_ERR(tes_mark_changed(s.world, dead, s.a), TES_ERR_STALE_ENTITY);
    CHECK_ERR(tes_mark_changed(s.world, 0, s.a), TES_ERR_STALE_ENTITY);
    CHECK_ERR(tes_mark_changed(s.world, e, 99), TES_ERR_UNKNOWN_COMPONENT);
    CHECK_ERR(tes_mark_changed(s.world, e, s.b), TES_ERR_MISSING_COMPONENT);
    tes_location_t loc = fx_check_location(s.world, e);
    const uint32_t bad_row = 5;
    CHECK_ERR(tes_chunk_mark_changed(NULL, loc.archetype, loc.chunk, s.a, NULL, 0),
              TES_ERR_INVALID_ARGUMENT);
    CHECK_ERR(tes_chunk_mark_changed(s.world, 999, 0, s.a, NULL, 0), TES_ERR_UNKNOWN_ARCHETYPE);
    CHECK_ERR(tes_chunk_mark_changed(s.world, loc.archetype, loc.chunk + 1, s.a, NULL, 0),
              TES_ERR_INVALID_ARGUMENT);
    CHECK_ERR(tes_chunk_mark_changed(s.world, loc.archetype, loc.chunk, 99, NULL, 0),
              TES_ERR_UNKNOWN_COMPONENT);
    CHECK_ERR(tes_chunk_mark_changed(s.world, loc.archetype, loc.chunk, s.b, NULL, 0),
              TES_ERR_MISSING_COMPONENT);
    CHECK_ERR(tes_chunk_mark_changed(s.world, loc.archetype, loc.chunk, s.a, &bad_row, 1),
              TES_ERR_INVALID_ARGUMENT);
}

TEST(failed_tracking_calls_change_nothing) {
    scene_t s = make_scene(NULL);
    tes_query_t *q = fx_query(s.world, &(tes_query_desc_t){.changed = FX_IDS(s.a)});
    tes_entity_t e[4];
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.a), 4, e));
    fx_run(s.world, q);
    tes_location_t loc = fx_check_location(s.world, e[0]);
    /* One bad row fails the whole call: no row is stamped. */
    const uint32_t rows[] = {0, 1, 9};
    CHECK_ERR(tes_chunk_mark_changed(s.world, loc.archetype, loc.chunk, s.a, rows, 3),
              TES_ERR_INVALID_ARGUMENT);
    for (int i = 0; i < 4; i++)
        CHECK_EQ(changed_tick(s.world, e[i], s.a), 0);
    CHECK_EQ(fx_run(s.world, q)->count, 0);
}

/* The bindings store into untracked cells by what they learned of the layout (component ids,
 * tracking levels, archetypes' columns) while world->access_epoch holds still; a missed bump
 * would let a store skip a tracker, or land in a freed archetype's reused memory. */
TEST(access_epoch_moves_with_registrations_levels_and_freed_archetypes_only) {
    scene_t s = make_scene(NULL);
    uint32_t epoch = s.world->access_epoch;
#define EPOCH_MOVED(moved)                                 \
    do {                                                   \
        CHECK_EQ(s.world->access_epoch != epoch, (moved)); \
        epoch = s.world->access_epoch;                     \
    } while (0)
    tes_entity_t e = fx_spawn(s.world, FX_IDS(s.a));
    CHECK_OK(tes_add(s.world, e, s.b)); /* rows move, archetypes are made: nothing JS keeps */
    CHECK_OK(tes_remove(s.world, e, s.b));
    CHECK_OK(tes_set_number(s.world, e, s.a, 0, 0, 2.0));
    EPOCH_MOVED(false);
    tes_component_t d = fx_component(s.world, "D", value_fields, 2);
    EPOCH_MOVED(true);
    tes_query_t *q = fx_query(s.world, &(tes_query_desc_t){.changed = FX_IDS(s.a)});
    EPOCH_MOVED(true); /* A became tracked */
    tes_query_t *again = fx_query(s.world, &(tes_query_desc_t){.changed = FX_IDS(s.a)});
    EPOCH_MOVED(false); /* already tracked at that level */
    tes_query_destroy(s.world, again);
    EPOCH_MOVED(false);
    tes_query_destroy(s.world, q);
    EPOCH_MOVED(true); /* untracked again */
    CHECK_OK(tes_component_unregister(s.world, d));
    EPOCH_MOVED(true);
    uint32_t freed = 0;
    CHECK_OK(tes_archetypes_reclaim(s.world, &freed));
    CHECK(freed > 0); /* {A, B} held nobody */
    EPOCH_MOVED(true);
    CHECK_OK(tes_archetypes_reclaim(s.world, &freed));
    CHECK_EQ(freed, 0);
    EPOCH_MOVED(false);
#undef EPOCH_MOVED
}
