/* Systems and stages: run order, intervals, filtered systems across frames, commands applied
 * between systems, pruning by tes_tick, destroying systems. */
#include "fixtures.h"

static const tes_field_desc_t value_fields[] = {{"v", TES_F64, 0}};

typedef fx_scene_t scene_t;

static scene_t make_scene(const tes_world_desc_t *desc) {
    return fx_scene(desc, value_fields, 1);
}

static uint32_t stage(scene_t *s, const char *name) {
    uint32_t id = UINT32_MAX;
    CHECK_OK(tes_stage_create(s->world, name, &id));
    return id;
}

/* What a probe system saw. Each run records its id in the shared journal, the frame it ran
 * in, its this_run, the entities it visited and (when `removed` is set) the removal window. */
typedef struct journal_t {
    int order[256];
    int count;
} journal_t;

typedef struct probe_t {
    tes_world_t *world;
    journal_t *journal;
    int id;
    uint32_t runs;
    uint64_t frames[256];
    uint64_t this_runs[256];
    fx_entities_t *seen;    /* the last run's visited entities */
    fx_entities_t *removed; /* the last run's removal window of removed_component */
    tes_component_t removed_component;
    bool has_removed;
    /* Optional extra work inside the run, on each visited entity. */
    void (*each)(struct probe_t *probe, tes_iter_t *it, tes_entity_t e);
    void *extra;
} probe_t;

static void probe_run(tes_iter_t *it, void *user) {
    probe_t *p = (probe_t *)user;
    if (p->journal && p->journal->count < 256) p->journal->order[p->journal->count++] = p->id;
    if (p->runs < 256) {
        p->frames[p->runs] = fx_stats(p->world).frame;
        p->this_runs[p->runs] = it->this_run;
    }
    p->runs++;
    p->seen->count = 0;
    p->removed->count = 0;
    if (p->has_removed) {
        const tes_entity_t *removed = NULL;
        uint32_t count = 0;
        CHECK_OK(tes_iter_removed(it, p->removed_component, &removed, &count));
        for (uint32_t i = 0; i < count; i++)
            fx_entities_push(p->removed, removed[i]);
    }
    while (tes_iter_next(it)) {
        FX_CHECK_ITER_CHUNK(p->world, it);
        for (uint32_t i = 0; i < it->row_count; i++) {
            tes_entity_t e = it->entities[fx_iter_row(it, i)];
            fx_entities_push(p->seen, e);
            if (p->each) p->each(p, it, e);
        }
    }
}

/* One tick from an empty journal, after which it holds the five ids of expected, in order. */
static void tick_and_check_order(scene_t *s, journal_t *journal, const int expected[5]) {
    journal->count = 0;
    CHECK_OK(tes_tick(s->world));
    CHECK_EQ(journal->count, 5);
    for (int i = 0; i < 5; i++)
        CHECK_EQ(journal->order[i], expected[i]);
}

static probe_t *probe_new(scene_t *s, journal_t *journal, int id) {
    probe_t *p = (probe_t *)fx_malloc(sizeof *p);
    p->world = s->world;
    p->journal = journal;
    p->id = id;
    p->seen = fx_entities_new();
    p->removed = fx_entities_new();
    return p;
}

static tes_system_t *add_system(scene_t *s, uint32_t stage_id, tes_query_desc_t query,
                                uint32_t interval, probe_t *probe) {
    tes_system_desc_t desc = {
        .stage = stage_id, .query = query, .run = probe_run, .user = probe, .interval = interval};
    tes_system_t *system = NULL;
    CHECK_OK(tes_system_create(s->world, &desc, &system));
    CHECK(system != NULL);
    return system;
}

static void mark(scene_t *s, tes_entity_t e, tes_component_t c) {
    CHECK_OK(tes_mark_changed(s->world, e, c));
}

/* ---------------------------------------------------------------------------------------- */
/* Order and intervals                                                                       */
/* ---------------------------------------------------------------------------------------- */

TEST(stages_run_in_creation_order) {
    scene_t s = make_scene(NULL);
    uint32_t first = stage(&s, "first"), second = stage(&s, "second"), third = stage(&s, "third");
    CHECK(first != second && second != third && first != third);
    journal_t *journal = (journal_t *)fx_malloc(sizeof *journal);
    /* Created out of stage order. */
    add_system(&s, third, (tes_query_desc_t){0}, 0, probe_new(&s, journal, 1));
    add_system(&s, first, (tes_query_desc_t){0}, 0, probe_new(&s, journal, 2));
    add_system(&s, second, (tes_query_desc_t){0}, 0, probe_new(&s, journal, 3));
    add_system(&s, first, (tes_query_desc_t){0}, 0, probe_new(&s, journal, 4));
    add_system(&s, third, (tes_query_desc_t){0}, 0, probe_new(&s, journal, 5));
    const int expected[] = {2, 4, 3, 1, 5};
    for (int frame = 0; frame < 3; frame++)
        tick_and_check_order(&s, journal, expected);
}

TEST(systems_in_a_stage_run_in_creation_order) {
    scene_t s = make_scene(NULL);
    uint32_t update = stage(&s, "update");
    journal_t *journal = (journal_t *)fx_malloc(sizeof *journal);
    tes_system_t *systems[6];
    for (int i = 0; i < 5; i++)
        systems[i] = add_system(&s, update, (tes_query_desc_t){0}, 1, probe_new(&s, journal, i));
    const int created[] = {0, 1, 2, 3, 4};
    tick_and_check_order(&s, journal, created);
    tes_system_destroy(s.world, systems[2]);
    systems[5] = add_system(&s, update, (tes_query_desc_t){0}, 1, probe_new(&s, journal, 5));
    const int expected[] = {0, 1, 3, 4, 5};
    tick_and_check_order(&s, journal, expected);
}

TEST(interval_runs_a_system_every_nth_tick) {
    scene_t s = make_scene(NULL);
    uint32_t update = stage(&s, "update");
    const uint32_t intervals[] = {0, 1, 2, 3, 5, 7};
    probe_t *probes[6];
    for (int i = 0; i < 6; i++) {
        probes[i] = probe_new(&s, NULL, i);
        add_system(&s, update, (tes_query_desc_t){0}, intervals[i], probes[i]);
    }
    enum { FRAMES = 210 }; /* a multiple of every interval: the phase does not matter */
    for (int f = 0; f < FRAMES; f++)
        CHECK_OK(tes_tick(s.world));
    CHECK_EQ(fx_stats(s.world).frame, FRAMES);
    for (int i = 0; i < 6; i++) {
        uint32_t n = intervals[i] ? intervals[i] : 1;
        CHECK_EQ(probes[i]->runs, FRAMES / n);
        for (uint32_t r = 1; r < probes[i]->runs; r++)
            CHECK_EQ(probes[i]->frames[r] - probes[i]->frames[r - 1], n);
    }
}

TEST(tick_counts_frames_without_systems) {
    scene_t s = make_scene(NULL);
    for (int f = 1; f <= 5; f++) {
        CHECK_OK(tes_tick(s.world));
        CHECK_EQ(fx_stats(s.world).frame, f);
    }
    stage(&s, "empty");
    CHECK_OK(tes_tick(s.world));
    CHECK_EQ(fx_stats(s.world).frame, 6);
}

TEST(system_body_iterates_its_query) {
    scene_t s = make_scene(NULL);
    uint32_t update = stage(&s, "update");
    probe_t *p = probe_new(&s, NULL, 0);
    add_system(&s, update, (tes_query_desc_t){.all = FX_IDS(s.a), .none = FX_IDS(s.tag)}, 1, p);
    tes_entity_t e1 = fx_spawn(s.world, FX_IDS(s.a));
    tes_entity_t e2 = fx_spawn(s.world, FX_IDS(s.a, s.b));
    fx_spawn(s.world, FX_IDS(s.a, s.tag));
    fx_spawn(s.world, FX_IDS(s.b));
    CHECK_OK(tes_tick(s.world));
    CHECK_EQ(p->runs, 1);
    FX_CHECK_VISITED(p->seen, e1, e2);
}

TEST(each_filtered_system_run_takes_its_own_tick) {
    scene_t s = make_scene(NULL);
    uint32_t update = stage(&s, "update");
    probe_t *p1 = probe_new(&s, NULL, 1), *p2 = probe_new(&s, NULL, 2);
    add_system(&s, update, (tes_query_desc_t){.changed = FX_IDS(s.a)}, 1, p1);
    add_system(&s, update, (tes_query_desc_t){.added = FX_IDS(s.b)}, 1, p2);
    for (int f = 0; f < 4; f++) {
        uint64_t before = fx_stats(s.world).change_tick;
        CHECK_OK(tes_tick(s.world));
        CHECK_EQ(p1->this_runs[f], before);
        CHECK_EQ(p2->this_runs[f], before + 1);
        CHECK(fx_stats(s.world).change_tick >= before + 2);
    }
}

/* ---------------------------------------------------------------------------------------- */
/* Filtered systems across frames                                                            */
/* ---------------------------------------------------------------------------------------- */

TEST(changed_system_sees_each_change_once_across_ticks) {
    scene_t s = make_scene(NULL);
    uint32_t update = stage(&s, "update");
    probe_t *p = probe_new(&s, NULL, 0);
    add_system(&s, update, (tes_query_desc_t){.changed = FX_IDS(s.a)}, 1, p);
    tes_entity_t e[8];
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.a), 8, e));
    CHECK_OK(tes_tick(s.world));
    CHECK_EQ(p->seen->count, 0);
    mark(&s, e[1], s.a);
    mark(&s, e[5], s.a);
    CHECK_OK(tes_tick(s.world));
    FX_CHECK_VISITED(p->seen, e[1], e[5]);
    CHECK_OK(tes_tick(s.world));
    CHECK_EQ(p->seen->count, 0);
    for (int i = 0; i < 20; i++)
        mark(&s, e[3], s.a);
    CHECK_OK(tes_set_number(s.world, e[7], s.a, 0, 0, 2));
    CHECK_OK(tes_tick(s.world));
    FX_CHECK_VISITED(p->seen, e[3], e[7]);
    CHECK_EQ(p->runs, 4);
}

/* A writer in the middle stage writes A of the entities listed for the frame. */
typedef struct writer_t {
    tes_world_t *world;
    tes_component_t a;
    const tes_entity_t *targets;
    uint32_t target_count;
} writer_t;

static void writer_run(tes_iter_t *it, void *user) {
    writer_t *w = (writer_t *)user;
    while (tes_iter_next(it)) {
    }
    for (uint32_t i = 0; i < w->target_count; i++)
        CHECK_OK(tes_set_number(w->world, w->targets[i], w->a, 0, 0, i));
}

TEST(writes_by_a_system_are_seen_once_by_systems_before_and_after_it) {
    scene_t s = make_scene(NULL);
    uint32_t early = stage(&s, "early"), middle = stage(&s, "middle"), late = stage(&s, "late");
    probe_t *before = probe_new(&s, NULL, 1), *after = probe_new(&s, NULL, 2);
    add_system(&s, early, (tes_query_desc_t){.changed = FX_IDS(s.a)}, 1, before);
    writer_t *w = (writer_t *)fx_malloc(sizeof *w);
    w->world = s.world;
    w->a = s.a;
    tes_system_desc_t desc = {
        .stage = middle, .query = {.all = FX_IDS(s.b)}, .run = writer_run, .user = w};
    tes_system_t *writer = NULL;
    CHECK_OK(tes_system_create(s.world, &desc, &writer));
    add_system(&s, late, (tes_query_desc_t){.changed = FX_IDS(s.a)}, 1, after);
    tes_entity_t e[6];
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.a), 6, e));
    tes_entity_t previous[6];
    uint32_t previous_count = 0;
    fx_rng_t rng = {5};
    for (int frame = 0; frame < 40; frame++) {
        tes_entity_t targets[6];
        uint32_t n = 0;
        for (int i = 0; i < 6; i++) {
            if (fx_rng_chance(&rng, 40)) targets[n++] = e[i];
        }
        w->targets = targets;
        w->target_count = n;
        CHECK_OK(tes_tick(s.world));
        /* The late system sees this frame's writes; the early one the previous frame's. */
        FX_CHECK_SAME_ENTITIES(after->seen, targets, n);
        FX_CHECK_SAME_ENTITIES(before->seen, previous, previous_count);
        memcpy(previous, targets, n * sizeof *targets);
        previous_count = n;
    }
}

TEST(interval_system_sees_changes_of_the_frames_it_skipped) {
    scene_t s = make_scene(NULL);
    uint32_t update = stage(&s, "update");
    probe_t *p = probe_new(&s, NULL, 0);
    add_system(&s, update, (tes_query_desc_t){.changed = FX_IDS(s.a)}, 3, p);
    probe_t *every = probe_new(&s, NULL, 1); /* keeps pruning going every frame */
    add_system(&s, update, (tes_query_desc_t){.changed = FX_IDS(s.a)}, 1, every);
    enum { N = 30 };
    tes_entity_t e[N];
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.a), N, e));
    bool pending[N] = {false};
    fx_rng_t rng = {11};
    uint32_t runs = 0;
    for (int frame = 0; frame < 60; frame++) {
        for (int k = 0; k < 4; k++) {
            uint32_t i = fx_rng_below(&rng, N);
            mark(&s, e[i], s.a);
            pending[i] = true;
        }
        CHECK_OK(tes_tick(s.world));
        if (p->runs == runs) continue;
        runs = p->runs;
        for (uint32_t i = 0; i < N; i++) {
            CHECK_EQ(fx_entities_contains(p->seen, e[i]), pending[i]);
            pending[i] = false;
        }
    }
    CHECK_EQ(runs, 20);
}

TEST(removed_system_sees_each_removal_once) {
    scene_t s = make_scene(NULL);
    uint32_t update = stage(&s, "update");
    probe_t *p[2];
    const uint32_t intervals[2] = {1, 3};
    for (int k = 0; k < 2; k++) {
        p[k] = probe_new(&s, NULL, k);
        p[k]->has_removed = true;
        p[k]->removed_component = s.a;
        add_system(&s, update, (tes_query_desc_t){.all = FX_IDS(s.c), .removed = FX_IDS(s.a)},
                   intervals[k], p[k]);
    }
    fx_entities_t *pending[2] = {fx_entities_new(), fx_entities_new()};
    uint32_t runs[2] = {0, 0};
    for (int frame = 0; frame < 30; frame++) {
        tes_entity_t e[3];
        CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.a, s.b), 3, e));
        CHECK_OK(tes_remove(s.world, e[0], s.a));
        CHECK_OK(tes_despawn(s.world, e[1]));
        CHECK_OK(tes_add(s.world, e[0], s.a));
        CHECK_OK(tes_despawn(s.world, e[0])); /* e[0] loses A a second time */
        const tes_entity_t order[3] = {e[0], e[1], e[0]};
        for (int k = 0; k < 2; k++) {
            for (int i = 0; i < 3; i++)
                fx_entities_push(pending[k], order[i]);
        }
        CHECK_OK(tes_tick(s.world));
        for (int k = 0; k < 2; k++) {
            if (p[k]->runs == runs[k]) continue;
            runs[k] = p[k]->runs;
            CHECK_EQ(p[k]->removed->count, pending[k]->count);
            for (uint32_t i = 0; i < pending[k]->count; i++)
                CHECK_EQ(p[k]->removed->items[i], pending[k]->items[i]); /* oldest first */
            pending[k]->count = 0;
        }
    }
    CHECK_EQ(runs[0], 30);
    CHECK_EQ(runs[1], 10);
}

/* ---------------------------------------------------------------------------------------- */
/* Commands between systems                                                                  */
/* ---------------------------------------------------------------------------------------- */

/* For each visited entity (of A), spawn one of B carrying A's value. */
static void spawn_b_for_each(probe_t *p, tes_iter_t *it, tes_entity_t e) {
    (void)it;
    const tes_component_t *b = (const tes_component_t *)p->extra;
    tes_entity_t child = 0;
    CHECK_OK(tes_spawn(p->world, b, 1, &child));
    CHECK(!tes_is_alive(p->world, child)); /* pending until the run ends */
    double v = fx_get_number(p->world, e, b[1], 0, 0);
    CHECK_OK(tes_set_number(p->world, child, b[0], 0, 0, v));
}

TEST(system_commands_apply_before_the_next_system) {
    scene_t s = make_scene(NULL);
    uint32_t update = stage(&s, "update");
    probe_t *spawner = probe_new(&s, NULL, 1);
    tes_component_t *ids = (tes_component_t *)fx_malloc(2 * sizeof *ids);
    ids[0] = s.b; /* spawn set */
    ids[1] = s.a; /* source of the value */
    spawner->each = spawn_b_for_each;
    spawner->extra = ids;
    add_system(&s, update, (tes_query_desc_t){.added = FX_IDS(s.a)}, 1, spawner);
    probe_t *counter = probe_new(&s, NULL, 2);
    add_system(&s, update, (tes_query_desc_t){.all = FX_IDS(s.b)}, 1, counter);
    probe_t *added = probe_new(&s, NULL, 3);
    add_system(&s, update, (tes_query_desc_t){.added = FX_IDS(s.b)}, 1, added);
    tes_entity_t e[3];
    for (int i = 0; i < 3; i++) {
        e[i] = fx_spawn(s.world, FX_IDS(s.a));
        CHECK_OK(tes_set_number(s.world, e[i], s.a, 0, 0, 10 + i));
    }
    CHECK_OK(tes_tick(s.world));
    CHECK_EQ(spawner->seen->count, 3);
    CHECK_EQ(counter->seen->count, 3); /* same tick, next system */
    CHECK_EQ(added->seen->count, 3);
    double sum = 0;
    for (uint32_t i = 0; i < counter->seen->count; i++)
        sum += fx_get_number(s.world, counter->seen->items[i], s.b, 0, 0);
    CHECK_NUM_EQ(sum, 10 + 11 + 12);
    CHECK_OK(tes_tick(s.world));
    CHECK_EQ(spawner->seen->count, 0);
    CHECK_EQ(counter->seen->count, 3);
    CHECK_EQ(added->seen->count, 0);
}

static void stop_after_one_chunk(tes_iter_t *it, void *user) {
    uint32_t *runs = (uint32_t *)user;
    (*runs)++;
    (void)tes_iter_next(it); /* returns without reaching the end */
}

TEST(system_body_that_stops_early_still_ends_its_run) {
    scene_t s = make_scene(&(tes_world_desc_t){.chunk_bytes = 1024});
    uint32_t update = stage(&s, "update");
    uint32_t *runs = (uint32_t *)fx_malloc(sizeof *runs);
    tes_system_desc_t desc = {.stage = update,
                              .query = {.changed = FX_IDS(s.a)},
                              .run = stop_after_one_chunk,
                              .user = runs};
    tes_system_t *system = NULL;
    CHECK_OK(tes_system_create(s.world, &desc, &system));
    tes_query_t *observer = fx_query(s.world, &(tes_query_desc_t){.changed = FX_IDS(s.a)});
    tes_entity_t e[300];
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.a), 300, e));
    for (int i = 0; i < 300; i++)
        mark(&s, e[i], s.a);
    CHECK_OK(tes_tick(s.world));
    CHECK_EQ(*runs, 1);
    /* The run is over: structural calls act at once again, and the world ticks on. */
    tes_entity_t x = fx_spawn(s.world, FX_IDS(s.a));
    CHECK(tes_is_alive(s.world, x));
    CHECK_EQ(fx_run_count(s.world, observer), 300);
    CHECK_OK(tes_tick(s.world));
    CHECK_EQ(*runs, 2);
}

/* ---------------------------------------------------------------------------------------- */
/* Pruning and destroying                                                                    */
/* ---------------------------------------------------------------------------------------- */

/* Spawns and despawns n entities of {A} per frame; tes_tick each frame. */
static void churn(scene_t *s, uint32_t n, uint32_t frames) {
    tes_entity_t e[64];
    CHECK(n <= 64);
    for (uint32_t f = 0; f < frames; f++) {
        CHECK_OK(tes_spawn_batch(s->world, &s->a, 1, n, e));
        for (uint32_t i = 0; i < n; i++)
            CHECK_OK(tes_set_number(s->world, e[i], s->a, 0, 0, i));
        CHECK_OK(tes_despawn_batch(s->world, e, n));
        CHECK_OK(tes_tick(s->world));
    }
}

TEST(tick_prunes_so_memory_stays_flat) {
    scene_t s = make_scene(&(tes_world_desc_t){.min_free_indices = 16});
    uint32_t update = stage(&s, "update");
    probe_t *p = probe_new(&s, NULL, 0);
    p->has_removed = true;
    p->removed_component = s.a;
    add_system(&s, update, (tes_query_desc_t){.changed = FX_IDS(s.a), .removed = FX_IDS(s.a)}, 1,
               p);
    churn(&s, 50, 100);
    CHECK_EQ(p->removed->count, 50);
    uint64_t warm = fx_stats(s.world).bytes_allocated;
    churn(&s, 50, 1000);
    CHECK(fx_stats(s.world).bytes_allocated <= warm);
}

TEST(system_destroy_stops_its_runs_and_its_pinning) {
    scene_t s = make_scene(&(tes_world_desc_t){.min_free_indices = 16});
    uint32_t update = stage(&s, "update");
    probe_t *keeper = probe_new(&s, NULL, 0), *pinner = probe_new(&s, NULL, 1);
    keeper->has_removed = pinner->has_removed = true;
    keeper->removed_component = pinner->removed_component = s.a;
    add_system(&s, update, (tes_query_desc_t){.all = FX_IDS(s.c), .removed = FX_IDS(s.a)}, 1,
               keeper);
    tes_system_t *slow = add_system(
        &s, update, (tes_query_desc_t){.all = FX_IDS(s.c), .removed = FX_IDS(s.a)}, 100000, pinner);
    CHECK_EQ(fx_stats(s.world).query_count, 2);
    churn(&s, 50, 300); /* the slow system pins every removal since its run (if any) */
    uint32_t pinner_runs = pinner->runs; /* once at most: 0 or 1 depending on the phase */
    CHECK(pinner_runs <= 1);
    tes_system_destroy(s.world, slow);
    CHECK_EQ(fx_stats(s.world).query_count, 1);
    churn(&s, 50, 100);
    CHECK_EQ(pinner->runs, pinner_runs);
    uint64_t after = fx_stats(s.world).bytes_allocated;
    churn(&s, 50, 1000);
    CHECK(fx_stats(s.world).bytes_allocated <= after);
    /* A consumer created now sees nothing of the removals every live consumer has seen. */
    tes_query_t *late = fx_query(s.world, &(tes_query_desc_t){.removed = FX_IDS(s.a)});
    tes_iter_t it;
    CHECK_OK(tes_query_iter(s.world, late, &it));
    const tes_entity_t *removed = NULL;
    uint32_t count = 99;
    CHECK_OK(tes_iter_removed(&it, s.a, &removed, &count));
    CHECK_EQ(count, 0);
    tes_iter_fini(&it);
}

/* ---------------------------------------------------------------------------------------- */
/* Errors                                                                                    */
/* ---------------------------------------------------------------------------------------- */

static void never_run(tes_iter_t *it, void *user) {
    (void)it;
    (void)user;
    harness_fail(__FILE__, __LINE__, "a system that failed to be created ran");
}

TEST(system_and_stage_calls_reject_bad_arguments) {
    scene_t s = make_scene(NULL);
    uint32_t id = 77;
    CHECK_ERR(tes_stage_create(NULL, "x", &id), TES_ERR_INVALID_ARGUMENT);
    CHECK_ERR(tes_stage_create(s.world, NULL, &id), TES_ERR_INVALID_ARGUMENT);
    CHECK_ERR(tes_stage_create(s.world, "x", NULL), TES_ERR_INVALID_ARGUMENT);
    uint32_t update = stage(&s, "update");
    tes_system_t *system = NULL;
    tes_system_desc_t desc = {.stage = update, .run = never_run};
    CHECK_ERR(tes_system_create(NULL, &desc, &system), TES_ERR_INVALID_ARGUMENT);
    CHECK_ERR(tes_system_create(s.world, NULL, &system), TES_ERR_INVALID_ARGUMENT);
    CHECK_ERR(tes_system_create(s.world, &desc, NULL), TES_ERR_INVALID_ARGUMENT);
    desc.run = NULL;
    CHECK_ERR(tes_system_create(s.world, &desc, &system), TES_ERR_INVALID_ARGUMENT);
    desc.run = never_run;
    desc.stage = update + 1;
    CHECK_ERR(tes_system_create(s.world, &desc, &system), TES_ERR_UNKNOWN_STAGE);
    desc.stage = update;
    tes_component_t unknown = 999;
    desc.query.changed = &unknown;
    desc.query.changed_count = 1;
    CHECK_ERR(tes_system_create(s.world, &desc, &system), TES_ERR_UNKNOWN_COMPONENT);
    CHECK_EQ(fx_stats(s.world).query_count, 0);
    CHECK_OK(tes_tick(s.world)); /* none of them exists */
    CHECK_ERR(tes_tick(NULL), TES_ERR_INVALID_ARGUMENT);
}
