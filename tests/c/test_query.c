/* Queries: matching (all / none / any) and its cache, dense and filtered iteration, the
 * Added / Changed filters and their windows, swap-remove and move hygiene, late consumers,
 * the removal log and its pruning, columns. */
#include "fixtures.h"

static const tes_field_desc_t value_fields[] = {{"v", TES_F64, 0}, {"n", TES_I32, 0}};
static const tes_field_desc_t wide_fields[] = {{"w", TES_F32, 3}};

typedef struct scene_t {
    tes_world_t *world;
    tes_component_t a, b, c, d, t1, t2;
} scene_t;

static scene_t make_scene(const tes_world_desc_t *desc) {
    scene_t s;
    s.world = fx_world(desc);
    s.a = fx_component(s.world, "A", value_fields, 2);
    s.b = fx_component(s.world, "B", value_fields, 2);
    s.c = fx_component(s.world, "C", wide_fields, 1);
    s.d = fx_component(s.world, "D", value_fields, 1);
    s.t1 = fx_tag(s.world, "T1");
    s.t2 = fx_tag(s.world, "T2");
    return s;
}

static tes_query_t *changed_query(scene_t *s, tes_component_t c) {
    return fx_query(s->world, &(tes_query_desc_t){.changed = &c, .changed_count = 1});
}

static tes_query_t *added_query(scene_t *s, tes_component_t c) {
    return fx_query(s->world, &(tes_query_desc_t){.added = &c, .added_count = 1});
}

static tes_query_t *removed_query(scene_t *s, tes_component_t c) {
    return fx_query(s->world, &(tes_query_desc_t){.removed = &c, .removed_count = 1});
}

static void mark(scene_t *s, tes_entity_t e, tes_component_t c) {
    CHECK_OK(tes_mark_changed(s->world, e, c));
}

static uint32_t row_of(scene_t *s, tes_entity_t e) {
    return fx_check_location(s->world, e).row;
}

/* One run of a query that has `removed` components: what tes_iter_removed gives for each of
 * components[0..n-1] (outs[i]), read before the first chunk and checked to stay the same
 * while the run goes on. */
static void run_removed_n(scene_t *s, tes_query_t *q, const tes_component_t *components,
                          fx_entities_t **outs, uint32_t n) {
    tes_iter_t it;
    CHECK_OK(tes_query_iter(s->world, q, &it));
    for (uint32_t i = 0; i < n; i++) {
        const tes_entity_t *entities = NULL;
        uint32_t count = 12345;
        CHECK_OK(tes_iter_removed(&it, components[i], &entities, &count));
        CHECK(count == 0 || entities != NULL);
        outs[i] = fx_entities_new();
        for (uint32_t k = 0; k < count; k++)
            fx_entities_push(outs[i], entities[k]);
    }
    bool first = true;
    while (tes_iter_next(&it)) {
        FX_CHECK_ITER_CHUNK(s->world, &it);
        if (!first) continue;
        first = false;
        for (uint32_t i = 0; i < n; i++) {
            const tes_entity_t *entities = NULL;
            uint32_t count = 12345;
            CHECK_OK(tes_iter_removed(&it, components[i], &entities, &count));
            CHECK_EQ(count, outs[i]->count);
            for (uint32_t k = 0; k < count; k++)
                CHECK_EQ(entities[k], outs[i]->items[k]);
        }
    }
}

static fx_entities_t *run_removed(scene_t *s, tes_query_t *q, tes_component_t c) {
    fx_entities_t *out = NULL;
    run_removed_n(s, q, &c, &out, 1);
    return out;
}

/* Exactly these entities, in this order. */
#define CHECK_SEQUENCE(list, ...)                                         \
    do {                                                                  \
        const tes_entity_t expected_[] = {__VA_ARGS__};                   \
        uint32_t n_ = (uint32_t)(sizeof expected_ / sizeof expected_[0]); \
        const fx_entities_t *list_ = (list);                              \
        CHECK_EQ(list_->count, n_);                                       \
        for (uint32_t i_ = 0; i_ < n_; i_++)                              \
            CHECK_EQ(list_->items[i_], expected_[i_]);                    \
    } while (0)

/* ---------------------------------------------------------------------------------------- */
/* Matching                                                                                  */
/* ---------------------------------------------------------------------------------------- */

static uint32_t mask_to_list(const scene_t *s, uint32_t mask, tes_component_t *out) {
    const tes_component_t all[6] = {s->a, s->b, s->c, s->d, s->t1, s->t2};
    uint32_t n = 0;
    for (uint32_t i = 0; i < 6; i++) {
        if (mask & (1u << i)) out[n++] = all[i];
    }
    return n;
}

static bool mask_matches(uint32_t mask, uint32_t all, uint32_t none, uint32_t any) {
    return (mask & all) == all && (mask & none) == 0 && (any == 0 || (mask & any) != 0);
}

TEST(all_none_any_match_across_many_archetypes) {
    scene_t s = make_scene(NULL);
    tes_entity_t entities[64 * 2];
    uint32_t masks[64 * 2];
    for (uint32_t mask = 0; mask < 64; mask++) {
        tes_component_t set[6];
        uint32_t n = mask_to_list(&s, mask, set);
        for (uint32_t k = 0; k < 2; k++) {
            entities[mask * 2 + k] = fx_spawn(s.world, set, n);
            masks[mask * 2 + k] = mask;
        }
    }
    fx_rng_t rng = {2024};
    for (int round = 0; round < 300; round++) {
        /* Each component lands in at most one of the three lists. */
        fx_term_masks_t terms_ = fx_random_terms(&rng, 6, 5);
        uint32_t all = terms_.all, none = terms_.none, any = terms_.any;
        tes_component_t all_list[6], none_list[6], any_list[6];
        tes_query_desc_t desc = {0};
        desc.all = all_list;
        desc.all_count = mask_to_list(&s, all, all_list);
        desc.none = none_list;
        desc.none_count = mask_to_list(&s, none, none_list);
        desc.any = any_list;
        desc.any_count = mask_to_list(&s, any, any_list);
        tes_query_t *q = fx_query(s.world, &desc);
        tes_entity_t expected[64 * 2];
        uint32_t n = 0;
        for (uint32_t i = 0; i < 64 * 2; i++) {
            if (mask_matches(masks[i], all, none, any)) expected[n++] = entities[i];
        }
        fx_entities_t *got = fx_entities_new();
        for (int twice = 0; twice < 2; twice++) {
            fx_run_into(s.world, q, got);
            if (got->count != n) {
                printf("  all %#x none %#x any %#x\n", all, none, any);
            }
            FX_CHECK_SAME_ENTITIES(got, expected, n);
        }
        tes_query_destroy(s.world, q);
    }
    CHECK_EQ(fx_stats(s.world).query_count, 0);
}

TEST(query_chunks_belong_to_matching_archetypes) {
    scene_t s = make_scene(NULL);
    for (uint32_t mask = 0; mask < 64; mask++) {
        tes_component_t set[6];
        uint32_t n = mask_to_list(&s, mask, set);
        fx_spawn(s.world, set, n);
    }
    tes_query_t *q = fx_query(
        s.world,
        &(tes_query_desc_t){.all = FX_IDS(s.b), .none = FX_IDS(s.t1), .any = FX_IDS(s.c, s.t2)});
    tes_iter_t it;
    uint32_t chunks = 0;
    CHECK_OK(tes_query_iter(s.world, q, &it));
    while (tes_iter_next(&it)) {
        FX_CHECK_ITER_CHUNK(s.world, &it);
        tes_archetype_info_t info = fx_archetype(s.world, it.archetype);
        bool has_b = false, has_t1 = false, has_any = false;
        for (uint32_t i = 0; i < info.component_count; i++) {
            has_b |= info.components[i] == s.b;
            has_t1 |= info.components[i] == s.t1;
            has_any |= info.components[i] == s.c || info.components[i] == s.t2;
        }
        CHECK(has_b && !has_t1 && has_any);
        chunks++;
    }
    CHECK_EQ(chunks, 12); /* B, not T1, then C or T2 or both (3 of 4), times A and D: 3*4 */
}

TEST(matching_cache_sees_archetypes_created_after_the_query) {
    scene_t s = make_scene(NULL);
    tes_query_t *q =
        fx_query(s.world, &(tes_query_desc_t){.all = FX_IDS(s.a), .none = FX_IDS(s.t2)});
    tes_query_t *f = changed_query(&s, s.a);
    tes_entity_t e1 = fx_spawn(s.world, FX_IDS(s.a));
    FX_CHECK_VISITED(fx_run(s.world, q), e1);
    uint32_t generation = fx_stats(s.world).graph_generation;
    tes_entity_t e2 = fx_spawn(s.world, FX_IDS(s.a, s.b));
    tes_entity_t e3 = fx_spawn(s.world, FX_IDS(s.a, s.t1));
    tes_entity_t e4 = fx_spawn(s.world, FX_IDS(s.a, s.t2));
    tes_entity_t e5 = fx_spawn(s.world, FX_IDS(s.b));
    CHECK(fx_stats(s.world).graph_generation > generation);
    FX_CHECK_VISITED(fx_run(s.world, q), e1, e2, e3);
    /* A move into an archetype the graph makes on the way. */
    CHECK_OK(tes_add(s.world, e5, s.a));
    CHECK_OK(tes_add(s.world, e5, s.c));
    FX_CHECK_VISITED(fx_run(s.world, q), e1, e2, e3, e5);
    CHECK_OK(tes_add(s.world, e1, s.t2));
    FX_CHECK_VISITED(fx_run(s.world, q), e2, e3, e5);
    /* An archetype with no entity adds no chunk. */
    tes_archetype_t empty;
    CHECK_OK(tes_archetype_find(s.world, FX_IDS(s.a, s.d), &empty));
    FX_CHECK_VISITED(fx_run(s.world, q), e2, e3, e5);
    /* The filtered query's cache too. */
    fx_run(s.world, f);
    tes_entity_t e6 = fx_spawn(s.world, FX_IDS(s.a, s.d, s.t1));
    mark(&s, e6, s.a);
    mark(&s, e4, s.a);
    FX_CHECK_VISITED(fx_run(s.world, f), e6, e4);
}

TEST(dense_iteration_visits_every_row) {
    scene_t s = make_scene(&(tes_world_desc_t){.chunk_bytes = 1024});
    tes_entity_t *e = (tes_entity_t *)fx_malloc(800 * sizeof *e);
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.a), 500, e));
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.a, s.b), 300, e + 500));
    fx_spawn(s.world, FX_IDS(s.b));
    tes_query_t *q = fx_query(s.world, &(tes_query_desc_t){.all = FX_IDS(s.a)});
    tes_iter_t it;
    uint32_t chunks = 0, rows = 0;
    CHECK_OK(tes_query_iter(s.world, q, &it));
    while (tes_iter_next(&it)) {
        FX_CHECK_ITER_CHUNK(s.world, &it);
        CHECK(it.rows == NULL);
        CHECK_EQ(it.row_count, it.count);
        chunks++;
        rows += it.count;
    }
    CHECK(chunks > 2);
    CHECK_EQ(rows, 800);
    FX_CHECK_SAME_ENTITIES(fx_run(s.world, q), e, 800);
}

TEST(query_matching_nothing_ends_at_once) {
    scene_t s = make_scene(NULL);
    tes_query_t *q = fx_query(s.world, &(tes_query_desc_t){.all = FX_IDS(s.a)});
    tes_iter_t it;
    CHECK_OK(tes_query_iter(s.world, q, &it));
    CHECK(!tes_iter_next(&it));
    tes_iter_fini(&it); /* harmless after the end */
    fx_spawn(s.world, FX_IDS(s.b));
    CHECK_EQ(fx_run(s.world, q)->count, 0);
    tes_query_t *everything = fx_query(s.world, &(tes_query_desc_t){0});
    CHECK_EQ(fx_run(s.world, everything)->count, 1);
}

TEST(removals_only_query_matches_like_a_query_without_terms) {
    /* "every list may be empty. A matching entity has every `all` component, none of `none`,
     * and at least one of `any` (when `any` is not empty)": `removed` is not a term. */
    scene_t s = make_scene(NULL);
    tes_query_t *q = removed_query(&s, s.a);
    tes_entity_t e = fx_spawn(s.world, FX_IDS(s.a));
    tes_entity_t f = fx_spawn(s.world, FX_IDS(s.b, s.t1));
    tes_entity_t g = fx_spawn(s.world, NULL, 0);
    FX_CHECK_VISITED(fx_run(s.world, q), e, f, g);
}

TEST(empty_entities_match_a_query_without_terms) {
    scene_t s = make_scene(NULL);
    tes_entity_t e = fx_spawn(s.world, NULL, 0);
    tes_entity_t f = fx_spawn(s.world, FX_IDS(s.t1));
    tes_query_t *q = fx_query(s.world, &(tes_query_desc_t){0});
    FX_CHECK_VISITED(fx_run(s.world, q), e, f);
    tes_query_t *none = fx_query(s.world, &(tes_query_desc_t){.none = FX_IDS(s.t1)});
    FX_CHECK_VISITED(fx_run(s.world, none), e);
}

/* ---------------------------------------------------------------------------------------- */
/* Added and Changed filters                                                                 */
/* ---------------------------------------------------------------------------------------- */

TEST(added_filter_sees_spawns_and_adds_once) {
    scene_t s = make_scene(NULL);
    tes_query_t *q = added_query(&s, s.a);
    tes_entity_t e1 = fx_spawn(s.world, FX_IDS(s.a));
    tes_entity_t e2 = fx_spawn(s.world, FX_IDS(s.b));
    tes_entity_t e3 = fx_spawn(s.world, FX_IDS(s.b));
    CHECK_OK(tes_add(s.world, e2, s.a));
    FX_CHECK_VISITED(fx_run(s.world, q), e1, e2);
    CHECK_EQ(fx_run(s.world, q)->count, 0);
    CHECK_OK(tes_add(s.world, e3, s.a));
    tes_entity_t batch[4];
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.a, s.b), 4, batch));
    FX_CHECK_VISITED(fx_run(s.world, q), e3, batch[0], batch[1], batch[2], batch[3]);
    CHECK_EQ(fx_run(s.world, q)->count, 0);
    /* Writes are not additions. */
    mark(&s, e1, s.a);
    CHECK_OK(tes_set_number(s.world, e2, s.a, 0, 0, 3));
    CHECK_EQ(fx_run(s.world, q)->count, 0);
}

TEST(added_filter_on_a_tag) {
    scene_t s = make_scene(NULL);
    tes_query_t *q = added_query(&s, s.t1);
    tes_entity_t e = fx_spawn(s.world, FX_IDS(s.a));
    tes_entity_t f = fx_spawn(s.world, FX_IDS(s.t1, s.b));
    CHECK_OK(tes_add(s.world, e, s.t1));
    FX_CHECK_VISITED(fx_run(s.world, q), e, f);
    CHECK_EQ(fx_run(s.world, q)->count, 0);
}

TEST(changed_filter_sees_writes_once) {
    scene_t s = make_scene(NULL);
    tes_query_t *q = changed_query(&s, s.a);
    tes_entity_t e[4];
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.a), 4, e));
    CHECK_EQ(fx_run(s.world, q)->count, 0); /* spawning is not changing */
    double v = 1.5;
    CHECK_OK(tes_set(s.world, e[0], s.a, 0, &v, sizeof v));
    CHECK_OK(tes_set_number(s.world, e[1], s.a, 1, 0, 9));
    mark(&s, e[2], s.a);
    FX_CHECK_VISITED(fx_run(s.world, q), e[0], e[1], e[2]);
    CHECK_EQ(fx_run(s.world, q)->count, 0);
    tes_location_t loc = fx_check_location(s.world, e[0]);
    CHECK_OK(tes_chunk_mark_changed(s.world, loc.archetype, loc.chunk, s.a, NULL, 0));
    FX_CHECK_SAME_ENTITIES(fx_run(s.world, q), e, 4);
    CHECK_EQ(fx_run(s.world, q)->count, 0);
    /* A write to another component is not a change of A. */
    tes_entity_t f = fx_spawn(s.world, FX_IDS(s.a, s.b));
    mark(&s, f, s.b);
    CHECK_EQ(fx_run(s.world, q)->count, 0);
}

TEST(added_and_changed_are_independent) {
    scene_t s = make_scene(NULL);
    tes_query_t *qa = added_query(&s, s.a);
    tes_query_t *qc = changed_query(&s, s.a);
    tes_entity_t e = fx_spawn(s.world, FX_IDS(s.a));
    CHECK_OK(tes_set_number(s.world, e, s.a, 0, 0, 1));
    FX_CHECK_VISITED(fx_run(s.world, qa), e);
    FX_CHECK_VISITED(fx_run(s.world, qc), e);
    CHECK_OK(tes_set_number(s.world, e, s.a, 0, 0, 2));
    CHECK_EQ(fx_run(s.world, qa)->count, 0);
    FX_CHECK_VISITED(fx_run(s.world, qc), e);
    tes_entity_t f = fx_spawn(s.world, FX_IDS(s.a));
    FX_CHECK_VISITED(fx_run(s.world, qa), f);
    CHECK_EQ(fx_run(s.world, qc)->count, 0);
}

TEST(several_filters_are_an_and) {
    scene_t s = make_scene(NULL);
    tes_query_t *ab = fx_query(s.world, &(tes_query_desc_t){.changed = FX_IDS(s.a, s.b)});
    tes_query_t *ba = fx_query(s.world, &(tes_query_desc_t){.changed = FX_IDS(s.b, s.a)});
    tes_entity_t e[4];
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.a, s.b), 4, e));
    tes_entity_t only_a = fx_spawn(s.world, FX_IDS(s.a));
    mark(&s, e[0], s.a);
    mark(&s, e[1], s.b);
    mark(&s, e[2], s.a);
    mark(&s, e[2], s.b);
    mark(&s, only_a, s.a);
    FX_CHECK_VISITED(fx_run(s.world, ab), e[2]);
    FX_CHECK_VISITED(fx_run(s.world, ba), e[2]);
    /* e[0]'s change of A was in the last window: B alone now is not enough. */
    mark(&s, e[0], s.b);
    CHECK_EQ(fx_run(s.world, ab)->count, 0);
    CHECK_EQ(fx_run(s.world, ba)->count, 0);
    mark(&s, e[3], s.b);
    mark(&s, e[3], s.a);
    FX_CHECK_VISITED(fx_run(s.world, ab), e[3]);
    FX_CHECK_VISITED(fx_run(s.world, ba), e[3]);
}

TEST(added_and_changed_filters_combine) {
    scene_t s = make_scene(NULL);
    tes_query_t *q =
        fx_query(s.world, &(tes_query_desc_t){.added = FX_IDS(s.a), .changed = FX_IDS(s.b)});
    tes_entity_t set_b = fx_spawn(s.world, FX_IDS(s.a, s.b));
    tes_entity_t untouched = fx_spawn(s.world, FX_IDS(s.a, s.b));
    tes_entity_t old = fx_spawn(s.world, FX_IDS(s.b));
    CHECK_OK(tes_set_number(s.world, set_b, s.b, 0, 0, 4));
    mark(&s, old, s.b);
    FX_CHECK_VISITED(fx_run(s.world, q), set_b);
    (void)untouched;
    CHECK_OK(tes_add(s.world, old, s.a));
    CHECK_EQ(fx_run(s.world, q)->count, 0); /* old's B change was seen already */
    CHECK_OK(tes_remove(s.world, old, s.a));
    CHECK_OK(tes_add(s.world, old, s.a));
    mark(&s, old, s.b);
    FX_CHECK_VISITED(fx_run(s.world, q), old);
}

TEST(filters_respect_the_other_terms) {
    scene_t s = make_scene(NULL);
    tes_query_t *q = fx_query(
        s.world,
        &(tes_query_desc_t){.none = FX_IDS(s.t1), .any = FX_IDS(s.b, s.c), .changed = FX_IDS(s.a)});
    tes_entity_t e1 = fx_spawn(s.world, FX_IDS(s.a, s.b));
    tes_entity_t e2 = fx_spawn(s.world, FX_IDS(s.a, s.c, s.t1));
    tes_entity_t e3 = fx_spawn(s.world, FX_IDS(s.a));
    tes_entity_t e4 = fx_spawn(s.world, FX_IDS(s.a, s.c));
    tes_entity_t e5 = fx_spawn(s.world, FX_IDS(s.b, s.c));
    mark(&s, e1, s.a);
    mark(&s, e2, s.a);
    mark(&s, e3, s.a);
    mark(&s, e4, s.a);
    mark(&s, e5, s.b);
    FX_CHECK_VISITED(fx_run(s.world, q), e1, e4);
    /* e2's change fell in a window where e2 did not match: matching later does not bring it
     * back. A change made while it matches shows. */
    CHECK_OK(tes_remove(s.world, e2, s.t1));
    CHECK_EQ(fx_run(s.world, q)->count, 0);
    mark(&s, e2, s.a);
    FX_CHECK_VISITED(fx_run(s.world, q), e2);
}

/* ---------------------------------------------------------------------------------------- */
/* Windows: (last_run, this_run]                                                             */
/* ---------------------------------------------------------------------------------------- */

TEST(last_run_is_zero_then_the_runs_tick) {
    scene_t s = make_scene(NULL);
    tes_query_t *q = changed_query(&s, s.a);
    CHECK_EQ(tes_query_last_run(q), 0);
    uint64_t this_run = fx_run_into(s.world, q, fx_entities_new());
    CHECK_EQ(tes_query_last_run(q), this_run);
    uint64_t next = fx_run_into(s.world, q, fx_entities_new());
    CHECK_EQ(next, this_run + 1); /* the only consumer: one tick per run */
    CHECK_EQ(tes_query_last_run(q), next);
}

TEST(write_after_a_run_is_seen_next_run_once) {
    scene_t s = make_scene(NULL);
    tes_query_t *q = changed_query(&s, s.a);
    tes_entity_t e = fx_spawn(s.world, FX_IDS(s.a));
    for (int frame = 0; frame < 4; frame++) {
        CHECK_EQ(fx_run(s.world, q)->count, 0);
        mark(&s, e, s.a); /* after the run, in the same frame */
        CHECK_OK(tes_tick(s.world));
        FX_CHECK_VISITED(fx_run(s.world, q), e);
        CHECK_EQ(fx_run(s.world, q)->count, 0);
        CHECK_OK(tes_tick(s.world));
    }
    /* Without frames in between. */
    mark(&s, e, s.a);
    FX_CHECK_VISITED(fx_run(s.world, q), e);
    mark(&s, e, s.a);
    FX_CHECK_VISITED(fx_run(s.world, q), e);
    CHECK_EQ(fx_run(s.world, q)->count, 0);
}

TEST(write_before_a_run_is_seen_by_that_run_only) {
    scene_t s = make_scene(NULL);
    tes_query_t *q = changed_query(&s, s.a);
    tes_entity_t e = fx_spawn(s.world, FX_IDS(s.a));
    mark(&s, e, s.a);
    FX_CHECK_VISITED(fx_run(s.world, q), e);
    for (int frame = 0; frame < 5; frame++) {
        CHECK_OK(tes_tick(s.world));
        CHECK_EQ(fx_run(s.world, q)->count, 0);
    }
}

/* 200 entities of {A} over several chunks, the even ones changed; then one run of the
 * changed:[A] consumer that, after its first chunk, writes A of the entities `write_mask`
 * selects (odd: 1, even: 2). Returns what the run visited. */
static fx_entities_t *run_writing_during(scene_t *s, tes_query_t *q, tes_entity_t *e,
                                         int write_mask) {
    CHECK_OK(tes_spawn_batch(s->world, &s->a, 1, 200, e));
    CHECK(fx_archetype(s->world, fx_archetype_of(s->world, e[0])).chunk_count >= 3);
    for (int i = 0; i < 200; i += 2)
        mark(s, e[i], s->a);
    fx_entities_t *seen = fx_entities_new();
    tes_iter_t it;
    CHECK_OK(tes_query_iter(s->world, q, &it));
    bool wrote = false;
    while (tes_iter_next(&it)) {
        FX_CHECK_ITER_CHUNK(s->world, &it);
        for (uint32_t i = 0; i < it.row_count; i++)
            fx_entities_push(seen, it.entities[fx_iter_row(&it, i)]);
        if (!wrote) {
            for (int i = 0; i < 200; i++) {
                if (write_mask & (i % 2 ? 1 : 2))
                    CHECK_OK(tes_set_number(s->world, e[i], s->a, 1, 0, i));
            }
            wrote = true;
        }
    }
    return seen;
}

TEST(write_during_a_run_is_seen_next_run_once) {
    scene_t s = make_scene(&(tes_world_desc_t){.chunk_bytes = 1024});
    tes_query_t *q = changed_query(&s, s.a);
    tes_entity_t e[200], even[100], odd[100];
    /* Writes to the odd entities, in chunks the run has not reached yet too. */
    fx_entities_t *seen = run_writing_during(&s, q, e, 1);
    for (int i = 0; i < 100; i++) {
        even[i] = e[2 * i];
        odd[i] = e[2 * i + 1];
    }
    FX_CHECK_SAME_ENTITIES(seen, even, 100);
    FX_CHECK_SAME_ENTITIES(fx_run(s.world, q), odd, 100);
    CHECK_EQ(fx_run(s.world, q)->count, 0);
}

TEST(rewrite_during_a_run_of_a_row_not_visited_yet_is_seen_by_both_runs) {
    /* An even entity changed before the run and again during it, before the run reached its
     * chunk: the first change's first run after it is this run, the second's is the next
     * ("each consumer sees each ... change exactly once, on its first run after it"). */
    scene_t s = make_scene(&(tes_world_desc_t){.chunk_bytes = 1024});
    tes_query_t *q = changed_query(&s, s.a);
    tes_entity_t e[200], even[100];
    fx_entities_t *seen = run_writing_during(&s, q, e, 2);
    for (int i = 0; i < 100; i++)
        even[i] = e[2 * i];
    FX_CHECK_SAME_ENTITIES(seen, even, 100);
    FX_CHECK_SAME_ENTITIES(fx_run(s.world, q), even, 100);
    CHECK_EQ(fx_run(s.world, q)->count, 0);
}

TEST(consumers_see_each_change_once_independently) {
    scene_t s = make_scene(NULL);
    tes_query_t *q1 = changed_query(&s, s.a);
    tes_query_t *q2 = changed_query(&s, s.a);
    tes_entity_t e = fx_spawn(s.world, FX_IDS(s.a));
    tes_entity_t f = fx_spawn(s.world, FX_IDS(s.a));
    mark(&s, e, s.a);
    FX_CHECK_VISITED(fx_run(s.world, q1), e);
    mark(&s, f, s.a);
    FX_CHECK_VISITED(fx_run(s.world, q2), e, f);
    FX_CHECK_VISITED(fx_run(s.world, q1), f);
    CHECK_EQ(fx_run(s.world, q2)->count, 0);
    CHECK_EQ(fx_run(s.world, q1)->count, 0);
    CHECK_OK(tes_tick(s.world));
    mark(&s, e, s.a);
    CHECK_OK(tes_tick(s.world));
    FX_CHECK_VISITED(fx_run(s.world, q2), e);
    CHECK_OK(tes_tick(s.world));
    FX_CHECK_VISITED(fx_run(s.world, q1), e);
}

TEST(consumer_every_third_frame_sees_every_change_once) {
    enum { N = 60, FRAMES = 90 };
    scene_t s = make_scene(&(tes_world_desc_t){.chunk_bytes = 1024});
    tes_query_t *fast = changed_query(&s, s.a);
    tes_query_t *slow = changed_query(&s, s.a);
    tes_entity_t e[N];
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.a), N, e));
    bool pending_fast[N] = {false}, pending_slow[N] = {false};
    fx_rng_t rng = {77};
    fx_entities_t *got = fx_entities_new();
    for (int frame = 1; frame <= FRAMES; frame++) {
        for (int k = 0; k < 8; k++) {
            uint32_t i = fx_rng_below(&rng, N);
            mark(&s, e[i], s.a);
            pending_fast[i] = pending_slow[i] = true;
        }
        fx_run_into(s.world, fast, got);
        for (uint32_t i = 0; i < N; i++) {
            CHECK_EQ(fx_entities_contains(got, e[i]), pending_fast[i]);
            pending_fast[i] = false;
        }
        /* Writes after the fast consumer's run, in the same frame. */
        uint32_t late = fx_rng_below(&rng, N);
        mark(&s, e[late], s.a);
        pending_fast[late] = pending_slow[late] = true;
        if (frame % 3 == 0) {
            fx_run_into(s.world, slow, got);
            for (uint32_t i = 0; i < N; i++) {
                CHECK_EQ(fx_entities_contains(got, e[i]), pending_slow[i]);
                pending_slow[i] = false;
            }
        }
        CHECK_OK(tes_tick(s.world)); /* prunes what both have seen */
    }
    CHECK_EQ(fx_stats(s.world).frame, FRAMES);
}

/* ---------------------------------------------------------------------------------------- */
/* Swap-remove, stale entries, moves                                                         */
/* ---------------------------------------------------------------------------------------- */

/* Ten entities of {A, B} in rows 0..9 of one chunk, and a changed:[A] consumer that has run,
 * with the dirty lists pruned after it. */
typedef struct row_scene_t {
    scene_t s;
    tes_query_t *q;
    tes_entity_t e[10];
} row_scene_t;

static row_scene_t make_rows(void) {
    row_scene_t r;
    r.s = make_scene(NULL);
    r.q = changed_query(&r.s, r.s.a);
    CHECK_OK(tes_spawn_batch(r.s.world, FX_IDS(r.s.a, r.s.b), 10, r.e));
    for (uint32_t i = 0; i < 10; i++)
        CHECK_EQ(row_of(&r.s, r.e[i]), i);
    CHECK_EQ(fx_run(r.s.world, r.q)->count, 0);
    CHECK_OK(tes_tick(r.s.world)); /* prunes the spawns' entries: the dirty list is empty */
    return r;
}

TEST(swap_remove_keeps_a_moved_dirty_entity) {
    row_scene_t r = make_rows();
    mark(&r.s, r.e[9], r.s.a);
    CHECK_OK(tes_despawn(r.s.world, r.e[2]));
    CHECK_EQ(row_of(&r.s, r.e[9]), 2);
    FX_CHECK_VISITED(fx_run(r.s.world, r.q), r.e[9]);
    CHECK_EQ(fx_run(r.s.world, r.q)->count, 0);
}

TEST(swap_remove_does_not_report_a_clean_entity_moved_into_a_dirty_row) {
    row_scene_t r = make_rows();
    mark(&r.s, r.e[2], r.s.a);
    CHECK_OK(tes_despawn(r.s.world, r.e[2]));
    CHECK_EQ(row_of(&r.s, r.e[9]), 2);
    CHECK_EQ(fx_run(r.s.world, r.q)->count, 0);
}

TEST(swap_remove_reports_a_dirty_entity_moved_into_a_dirty_row_once) {
    row_scene_t r = make_rows();
    mark(&r.s, r.e[2], r.s.a);
    mark(&r.s, r.e[9], r.s.a);
    CHECK_OK(tes_despawn(r.s.world, r.e[2]));
    tes_iter_t it;
    CHECK_OK(tes_query_iter(r.s.world, r.q, &it));
    CHECK(tes_iter_next(&it));
    FX_CHECK_ITER_CHUNK(r.s.world, &it);
    CHECK_EQ(it.row_count, 1);
    CHECK_EQ(it.entities[fx_iter_row(&it, 0)], r.e[9]);
    CHECK(!tes_iter_next(&it));
}

TEST(swap_remove_then_marking_again_reports_once) {
    row_scene_t r = make_rows();
    mark(&r.s, r.e[9], r.s.a);
    CHECK_OK(tes_despawn(r.s.world, r.e[2]));
    mark(&r.s, r.e[9], r.s.a); /* now at row 2 */
    mark(&r.s, r.e[8], r.s.a);
    CHECK_OK(tes_despawn(r.s.world, r.e[8])); /* the last row: nothing moves */
    FX_CHECK_VISITED(fx_run(r.s.world, r.q), r.e[9]);
}

TEST(swap_remove_leaves_other_dirty_rows_alone) {
    row_scene_t r = make_rows();
    mark(&r.s, r.e[3], r.s.a);
    mark(&r.s, r.e[0], r.s.a);
    CHECK_OK(tes_despawn(r.s.world, r.e[5]));
    FX_CHECK_VISITED(fx_run(r.s.world, r.q), r.e[0], r.e[3]);
}

TEST(swap_remove_by_a_move_to_another_archetype) {
    row_scene_t r = make_rows();
    mark(&r.s, r.e[9], r.s.a);
    mark(&r.s, r.e[8], r.s.a);
    CHECK_OK(tes_remove(r.s.world, r.e[2], r.s.b)); /* e2 leaves, e9 moves to row 2 */
    CHECK_OK(tes_add(r.s.world, r.e[4], r.s.t1));   /* e4 leaves, e8 moves to row 4 */
    CHECK_EQ(row_of(&r.s, r.e[9]), 2);
    CHECK_EQ(row_of(&r.s, r.e[8]), 4);
    FX_CHECK_VISITED(fx_run(r.s.world, r.q), r.e[9], r.e[8]);
}

TEST(swap_remove_across_chunks_keeps_dirty_rows) {
    scene_t s = make_scene(&(tes_world_desc_t){.chunk_bytes = 1024});
    tes_query_t *q = changed_query(&s, s.a);
    tes_entity_t e[300];
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.a), 300, e));
    tes_archetype_info_t info = fx_archetype(s.world, fx_archetype_of(s.world, e[0]));
    CHECK(info.chunk_count >= 3);
    fx_run(s.world, q);
    CHECK_OK(tes_tick(s.world)); /* an empty dirty list: only the moves can list rows */
    /* The last entity is dirty and moves into chunk 0 (a clean row); then a dirty entity of
     * chunk 0 is despawned and the (clean) new last entity takes its row. */
    mark(&s, e[299], s.a);
    mark(&s, e[5], s.a);
    mark(&s, e[150], s.a);
    CHECK_OK(tes_despawn(s.world, e[3]));
    tes_location_t loc = fx_check_location(s.world, e[299]);
    CHECK_EQ(loc.chunk, 0);
    CHECK_EQ(loc.row, 3);
    CHECK_OK(tes_despawn(s.world, e[5]));
    CHECK_EQ(row_of(&s, e[298]), 5);
    FX_CHECK_VISITED(fx_run(s.world, q), e[299], e[150]);
    CHECK_EQ(fx_run(s.world, q)->count, 0);
}

TEST(changed_then_despawned_is_not_reported) {
    row_scene_t r = make_rows();
    mark(&r.s, r.e[3], r.s.a);
    mark(&r.s, r.e[9], r.s.a);
    CHECK_OK(tes_despawn(r.s.world, r.e[3]));
    CHECK_OK(tes_despawn(r.s.world, r.e[9]));
    CHECK_EQ(fx_run(r.s.world, r.q)->count, 0);
}

TEST(row_of_a_despawned_dirty_entity_reused_by_a_spawn_is_clean) {
    row_scene_t r = make_rows();
    mark(&r.s, r.e[9], r.s.a);
    CHECK_OK(tes_despawn(r.s.world, r.e[9])); /* the last row: a stale dirty entry */
    tes_entity_t fresh = fx_spawn(r.s.world, FX_IDS(r.s.a, r.s.b));
    CHECK_EQ(row_of(&r.s, fresh), 9);
    uint64_t added = 0, changed = 99;
    CHECK_OK(tes_ticks(r.s.world, fresh, r.s.a, &added, &changed));
    CHECK_EQ(changed, 0);
    CHECK_EQ(fx_run(r.s.world, r.q)->count, 0);
    tes_entity_t moved_in = fx_spawn(r.s.world, FX_IDS(r.s.a));
    mark(&r.s, moved_in, r.s.a);
    fx_run(r.s.world, r.q);
    mark(&r.s, r.e[8], r.s.a);
    CHECK_OK(tes_despawn(r.s.world, r.e[8]));
    CHECK_OK(tes_despawn(r.s.world, fresh));       /* rows 8 and 9 free again */
    CHECK_OK(tes_add(r.s.world, moved_in, r.s.b)); /* arrives at row 8, changed long ago */
    CHECK_EQ(row_of(&r.s, moved_in), 8);
    CHECK_EQ(fx_run(r.s.world, r.q)->count, 0);
}

TEST(component_removed_then_added_back_is_added_not_changed) {
    scene_t s = make_scene(NULL);
    tes_query_t *qa = added_query(&s, s.a);
    tes_query_t *qc = changed_query(&s, s.a);
    tes_entity_t e = fx_spawn(s.world, FX_IDS(s.a, s.b));
    fx_run(s.world, qa);
    fx_run(s.world, qc);
    /* Changed, removed and added back within one window of both consumers. */
    mark(&s, e, s.a);
    CHECK_OK(tes_remove(s.world, e, s.a));
    mark(&s, e, s.b);
    CHECK_OK(tes_add(s.world, e, s.a));
    uint64_t added = 0, changed = 99;
    CHECK_OK(tes_ticks(s.world, e, s.a, &added, &changed));
    CHECK(added > 0);
    CHECK_EQ(changed, 0); /* a fresh component: never written */
    FX_CHECK_VISITED(fx_run(s.world, qa), e);
    CHECK_EQ(fx_run(s.world, qc)->count, 0);
}

TEST(moves_keep_changed_ticks_of_kept_components) {
    scene_t s = make_scene(NULL);
    tes_query_t *q = changed_query(&s, s.a);
    tes_entity_t e = fx_spawn(s.world, FX_IDS(s.a));
    tes_entity_t other = fx_spawn(s.world, FX_IDS(s.a));
    fx_run(s.world, q);
    CHECK_OK(tes_tick(s.world)); /* an empty dirty list */
    mark(&s, e, s.a);
    uint64_t added0, changed0, added1, changed1;
    CHECK_OK(tes_ticks(s.world, e, s.a, &added0, &changed0));
    CHECK_OK(tes_add(s.world, e, s.t1));
    CHECK_OK(tes_add(s.world, e, s.b));
    CHECK_OK(tes_remove(s.world, e, s.t1));
    CHECK_OK(tes_ticks(s.world, e, s.a, &added1, &changed1));
    CHECK_EQ(added1, added0);
    CHECK_EQ(changed1, changed0);
    FX_CHECK_VISITED(fx_run(s.world, q), e);
    CHECK_EQ(fx_run(s.world, q)->count, 0);
    /* A move after the run does not make it new again. */
    CHECK_OK(tes_add(s.world, e, s.t2));
    CHECK_EQ(fx_run(s.world, q)->count, 0);
    (void)other;
}

TEST(moves_keep_added_ticks_of_kept_components) {
    scene_t s = make_scene(NULL);
    tes_query_t *q = added_query(&s, s.a);
    tes_entity_t e = fx_spawn(s.world, FX_IDS(s.a));
    CHECK_OK(tes_add(s.world, e, s.t1));
    CHECK_OK(tes_add(s.world, e, s.c));
    FX_CHECK_VISITED(fx_run(s.world, q), e);
    CHECK_OK(tes_remove(s.world, e, s.t1));
    CHECK_EQ(fx_run(s.world, q)->count, 0);
}

TEST(archetype_add_and_remove_keep_ticks) {
    scene_t s = make_scene(NULL);
    tes_query_t *q = changed_query(&s, s.a);
    tes_query_t *qb = added_query(&s, s.b);
    tes_entity_t e[10];
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.a), 10, e));
    fx_run(s.world, q);
    fx_run(s.world, qb);
    CHECK_OK(tes_tick(s.world)); /* empty dirty lists */
    mark(&s, e[3], s.a);
    mark(&s, e[7], s.a);
    /* A tag (whole chunks may change owner). */
    CHECK_OK(tes_archetype_add(s.world, fx_archetype_of(s.world, e[0]), s.t1));
    FX_CHECK_VISITED(fx_run(s.world, q), e[3], e[7]);
    mark(&s, e[1], s.a);
    CHECK_OK(tes_archetype_remove(s.world, fx_archetype_of(s.world, e[0]), s.t1));
    /* A data component: rows are copied. */
    mark(&s, e[9], s.a);
    CHECK_OK(tes_archetype_add(s.world, fx_archetype_of(s.world, e[0]), s.b));
    FX_CHECK_VISITED(fx_run(s.world, q), e[1], e[9]);
    CHECK_EQ(fx_run(s.world, q)->count, 0);
    FX_CHECK_SAME_ENTITIES(fx_run(s.world, qb), e, 10); /* B was added to all */
}

TEST(archetype_add_of_a_tag_stamps_it_added) {
    scene_t s = make_scene(NULL);
    tes_query_t *q = added_query(&s, s.t1);
    tes_entity_t e[6];
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.a), 6, e));
    CHECK_EQ(fx_run(s.world, q)->count, 0);
    CHECK_OK(tes_archetype_add(s.world, fx_archetype_of(s.world, e[0]), s.t1));
    FX_CHECK_SAME_ENTITIES(fx_run(s.world, q), e, 6);
    CHECK_EQ(fx_run(s.world, q)->count, 0);
}

/* ---------------------------------------------------------------------------------------- */
/* Late consumers                                                                            */
/* ---------------------------------------------------------------------------------------- */

/* Issue 16, rule 3: a consumer starts at its creation. Changes from before it are not its,
 * whether or not another consumer kept them; what exists is, as added (re-seeded from the ticks
 * after pruning). */
TEST(new_consumer_starts_at_its_creation_and_sees_what_exists_as_added) {
    scene_t s = make_scene(NULL);
    tes_query_t *q1 = changed_query(&s, s.a);
    tes_entity_t e = fx_spawn(s.world, FX_IDS(s.a));
    tes_entity_t f = fx_spawn(s.world, FX_IDS(s.a));
    tes_entity_t g = fx_spawn(s.world, FX_IDS(s.a));
    mark(&s, e, s.a);
    FX_CHECK_VISITED(fx_run(s.world, q1), e);
    mark(&s, g, s.a); /* q1 has not seen this one: the dirty list keeps it */
    for (int i = 0; i < 3; i++)
        CHECK_OK(tes_tick(s.world)); /* prunes e's entry: q1 saw it */
    tes_query_t *q2 = changed_query(&s, s.a);
    tes_query_t *added = fx_query(s.world, &(tes_query_desc_t){.added = FX_IDS(s.a)});
    CHECK_EQ(fx_run(s.world, q2)->count, 0);
    FX_CHECK_VISITED(fx_run(s.world, added), e, f, g);
    mark(&s, f, s.a);
    FX_CHECK_VISITED(fx_run(s.world, q2), f);
    FX_CHECK_VISITED(fx_run(s.world, q1), f, g);
    CHECK_EQ(fx_run(s.world, added)->count, 0);
}

TEST(new_consumer_upgrading_a_ticks_level_component_reseeds) {
    scene_t s = make_scene(NULL);
    tes_query_t *q1 = fx_query(s.world, &(tes_query_desc_t){.changed = FX_IDS(s.b, s.a)});
    tes_entity_t e[5];
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.a, s.b), 5, e));
    mark(&s, e[1], s.a);
    mark(&s, e[4], s.a);
    CHECK_EQ(fx_run(s.world, q1)->count, 0);
    CHECK_OK(tes_tick(s.world));
    /* A: ticks -> dirty. Its list is seeded from the ticks: every row is there as added. */
    tes_query_t *q2 = fx_query(s.world, &(tes_query_desc_t){.added = FX_IDS(s.a)});
    tes_tracking_t level;
    CHECK_OK(tes_component_tracking(s.world, s.a, &level));
    CHECK_EQ(level, TES_TRACK_DIRTY);
    FX_CHECK_VISITED(fx_run(s.world, q2), e[0], e[1], e[2], e[3], e[4]);
    CHECK_EQ(fx_run(s.world, q2)->count, 0);
    /* The marks from before are not a later consumer's. */
    tes_query_t *q3 = changed_query(&s, s.a);
    CHECK_EQ(fx_run(s.world, q3)->count, 0);
    mark(&s, e[2], s.a);
    FX_CHECK_VISITED(fx_run(s.world, q3), e[2]);
}

TEST(new_added_consumer_sees_every_existing_entity) {
    scene_t s = make_scene(NULL);
    tes_query_t *q1 = added_query(&s, s.a);
    tes_entity_t e[5];
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.a), 5, e));
    FX_CHECK_SAME_ENTITIES(fx_run(s.world, q1), e, 5);
    CHECK_OK(tes_tick(s.world));
    CHECK_OK(tes_tick(s.world));
    tes_query_t *q2 = added_query(&s, s.a);
    FX_CHECK_SAME_ENTITIES(fx_run(s.world, q2), e, 5);
    CHECK_EQ(fx_run(s.world, q2)->count, 0);
    CHECK_EQ(fx_run(s.world, q1)->count, 0);
}

/* ---------------------------------------------------------------------------------------- */
/* The removal log                                                                           */
/* ---------------------------------------------------------------------------------------- */

TEST(removed_reports_remove_and_despawn_once_oldest_first) {
    scene_t s = make_scene(NULL);
    tes_query_t *q = removed_query(&s, s.a);
    tes_entity_t e1 = fx_spawn(s.world, FX_IDS(s.a, s.b));
    tes_entity_t e2 = fx_spawn(s.world, FX_IDS(s.a, s.b));
    tes_entity_t e3 = fx_spawn(s.world, FX_IDS(s.a, s.b));
    tes_entity_t e4 = fx_spawn(s.world, FX_IDS(s.b));
    CHECK_OK(tes_remove(s.world, e2, s.a));
    CHECK_OK(tes_despawn(s.world, e1));
    CHECK_OK(tes_remove(s.world, e4, s.a)); /* does not have it: nothing removed */
    CHECK_OK(tes_despawn(s.world, e4));     /* had no A */
    CHECK_OK(tes_remove(s.world, e3, s.b)); /* another component */
    CHECK_SEQUENCE(run_removed(&s, q, s.a), e2, e1);
    CHECK_EQ(run_removed(&s, q, s.a)->count, 0);
    CHECK_OK(tes_despawn(s.world, e3));
    CHECK_OK(tes_despawn(s.world, e2)); /* lost A already */
    CHECK_SEQUENCE(run_removed(&s, q, s.a), e3);
}

TEST(removed_lists_an_entity_again_when_it_lost_the_component_again) {
    scene_t s = make_scene(NULL);
    tes_query_t *q = removed_query(&s, s.a);
    tes_entity_t e = fx_spawn(s.world, FX_IDS(s.a));
    tes_entity_t f = fx_spawn(s.world, FX_IDS(s.a));
    CHECK_OK(tes_remove(s.world, e, s.a));
    CHECK_OK(tes_remove(s.world, f, s.a));
    CHECK_OK(tes_add(s.world, e, s.a));
    CHECK_OK(tes_remove(s.world, e, s.a));
    CHECK_SEQUENCE(run_removed(&s, q, s.a), e, f, e);
}

TEST(removed_windows_are_per_consumer) {
    scene_t s = make_scene(NULL);
    tes_query_t *q1 = removed_query(&s, s.a);
    tes_query_t *q2 = removed_query(&s, s.a);
    tes_entity_t e1 = fx_spawn(s.world, FX_IDS(s.a));
    tes_entity_t e2 = fx_spawn(s.world, FX_IDS(s.a));
    CHECK_OK(tes_remove(s.world, e1, s.a));
    CHECK_SEQUENCE(run_removed(&s, q1, s.a), e1);
    CHECK_OK(tes_despawn(s.world, e2));
    CHECK_OK(tes_tick(s.world));
    CHECK_SEQUENCE(run_removed(&s, q2, s.a), e1, e2);
    CHECK_SEQUENCE(run_removed(&s, q1, s.a), e2);
    CHECK_EQ(run_removed(&s, q2, s.a)->count, 0);
    CHECK_EQ(run_removed(&s, q1, s.a)->count, 0);
}

TEST(removed_keeps_one_log_per_component) {
    scene_t s = make_scene(NULL);
    tes_component_t watched[2] = {s.a, s.t1};
    tes_query_t *q = fx_query(s.world, &(tes_query_desc_t){.removed = watched, .removed_count = 2});
    tes_entity_t e1 = fx_spawn(s.world, FX_IDS(s.a, s.t1));
    tes_entity_t e2 = fx_spawn(s.world, FX_IDS(s.t1));
    tes_entity_t e3 = fx_spawn(s.world, FX_IDS(s.a));
    CHECK_OK(tes_despawn(s.world, e1));
    CHECK_OK(tes_remove(s.world, e2, s.t1));
    CHECK_OK(tes_remove(s.world, e3, s.a));
    fx_entities_t *logs[2];
    run_removed_n(&s, q, watched, logs, 2);
    CHECK_SEQUENCE(logs[0], e1, e3);
    CHECK_SEQUENCE(logs[1], e1, e2);
}

TEST(removed_from_batch_despawn_and_archetype_remove) {
    scene_t s = make_scene(NULL);
    tes_query_t *q = removed_query(&s, s.t1);
    tes_entity_t e[8];
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.a, s.t1), 8, e));
    CHECK_OK(tes_despawn_batch(s.world, e, 3));
    FX_CHECK_SAME_ENTITIES(run_removed(&s, q, s.t1), e, 3);
    CHECK_OK(tes_archetype_remove(s.world, fx_archetype_of(s.world, e[3]), s.t1));
    FX_CHECK_SAME_ENTITIES(run_removed(&s, q, s.t1), e + 3, 5);
    CHECK_EQ(run_removed(&s, q, s.t1)->count, 0);
}

TEST(removed_entities_may_be_dead_handles) {
    scene_t s = make_scene(&(tes_world_desc_t){.min_free_indices = 1});
    tes_query_t *q = removed_query(&s, s.a);
    tes_entity_t e = fx_spawn(s.world, FX_IDS(s.a));
    CHECK_OK(tes_despawn(s.world, e));
    for (int i = 0; i < 4; i++)
        fx_spawn(s.world, FX_IDS(s.a)); /* may recycle e's slot with a new generation */
    fx_entities_t *got = run_removed(&s, q, s.a);
    CHECK_SEQUENCE(got, e);
    CHECK(!tes_is_alive(s.world, got->items[0]));
}

TEST(removal_during_a_run_is_seen_next_run) {
    scene_t s = make_scene(NULL);
    tes_query_t *q =
        fx_query(s.world, &(tes_query_desc_t){.all = FX_IDS(s.b), .removed = FX_IDS(s.a)});
    tes_entity_t e[4];
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.a, s.b), 4, e));
    tes_iter_t it;
    CHECK_OK(tes_query_iter(s.world, q, &it));
    while (tes_iter_next(&it)) {
        for (uint32_t i = 0; i < it.row_count; i++)
            CHECK_OK(tes_remove(s.world, it.entities[fx_iter_row(&it, i)], s.a)); /* deferred */
        const tes_entity_t *removed = NULL;
        uint32_t count = 99;
        CHECK_OK(tes_iter_removed(&it, s.a, &removed, &count));
        CHECK_EQ(count, 0);
    }
    CHECK(!fx_has(s.world, e[0], s.a));
    FX_CHECK_SAME_ENTITIES(run_removed(&s, q, s.a), e, 4);
    CHECK_EQ(run_removed(&s, q, s.a)->count, 0);
}

TEST(removal_log_pruned_once_every_consumer_saw_it) {
    scene_t s = make_scene(NULL);
    tes_query_t *q1 = removed_query(&s, s.a);
    tes_entity_t e = fx_spawn(s.world, FX_IDS(s.a));
    CHECK_OK(tes_remove(s.world, e, s.a));
    CHECK_SEQUENCE(run_removed(&s, q1, s.a), e);
    CHECK_OK(tes_tick(s.world));
    tes_query_t *q2 = removed_query(&s, s.a);
    CHECK_EQ(run_removed(&s, q2, s.a)->count, 0);
}

TEST(removal_log_kept_while_a_consumer_has_not_seen_it) {
    scene_t s = make_scene(NULL);
    tes_query_t *q1 = removed_query(&s, s.a);
    tes_query_t *pin = removed_query(&s, s.a);
    tes_entity_t e = fx_spawn(s.world, FX_IDS(s.a));
    CHECK_OK(tes_remove(s.world, e, s.a));
    CHECK_SEQUENCE(run_removed(&s, q1, s.a), e);
    CHECK_OK(tes_tick(s.world));
    CHECK_OK(tes_tick(s.world));
    /* The log still holds e for pin, but a consumer made since starts at its creation (issue
     * 16, rule 3: what it reports does not depend on the other consumers). */
    tes_query_t *q2 = removed_query(&s, s.a);
    CHECK_EQ(run_removed(&s, q2, s.a)->count, 0);
    CHECK_SEQUENCE(run_removed(&s, pin, s.a), e);
    CHECK_OK(tes_remove(s.world, fx_spawn(s.world, FX_IDS(s.a)), s.a));
    CHECK_EQ(run_removed(&s, q2, s.a)->count, 1);
}

TEST(destroyed_query_stops_pinning_the_removal_log) {
    scene_t s = make_scene(NULL);
    tes_query_t *q1 = removed_query(&s, s.a);
    tes_query_t *pin = removed_query(&s, s.a);
    tes_entity_t e = fx_spawn(s.world, FX_IDS(s.a));
    CHECK_OK(tes_remove(s.world, e, s.a));
    CHECK_SEQUENCE(run_removed(&s, q1, s.a), e);
    CHECK_OK(tes_tick(s.world));
    tes_query_destroy(s.world, pin);
    CHECK_OK(tes_tick(s.world));
    tes_query_t *q2 = removed_query(&s, s.a);
    CHECK_EQ(run_removed(&s, q2, s.a)->count, 0);
}

/* Spawns and despawns `n` entities of {A} per frame for `frames` frames, running `q` (a
 * removed:[A] consumer) each frame when it is not NULL, and ending each frame with tes_tick
 * unless `ticking` is false (a program with no systems). */
static void churn_frames(scene_t *s, tes_query_t *q, uint32_t n, uint32_t frames, bool ticking) {
    tes_entity_t e[64];
    CHECK(n <= 64);
    for (uint32_t f = 0; f < frames; f++) {
        CHECK_OK(tes_spawn_batch(s->world, &s->a, 1, n, e));
        for (uint32_t i = 0; i < n; i++)
            CHECK_OK(tes_despawn(s->world, e[i]));
        if (q != NULL) CHECK_EQ(fx_run_count(s->world, q), 0); /* matches nothing: no B */
        if (ticking) CHECK_OK(tes_tick(s->world));
    }
}

static void churn(scene_t *s, tes_query_t *q, uint32_t n, uint32_t frames) {
    churn_frames(s, q, n, frames, true);
}

TEST(removal_log_memory_stays_flat_while_consumers_keep_up) {
    scene_t s = make_scene(&(tes_world_desc_t){.min_free_indices = 16});
    tes_query_t *q =
        fx_query(s.world, &(tes_query_desc_t){.all = FX_IDS(s.b), .removed = FX_IDS(s.a)});
    churn(&s, q, 50, 100);
    uint64_t warm = fx_stats(s.world).bytes_allocated;
    churn(&s, q, 50, 1000);
    CHECK(fx_stats(s.world).bytes_allocated <= warm);
}

TEST(destroyed_query_stops_pinning_memory) {
    scene_t s = make_scene(&(tes_world_desc_t){.min_free_indices = 16});
    tes_query_t *q =
        fx_query(s.world, &(tes_query_desc_t){.all = FX_IDS(s.b), .removed = FX_IDS(s.a)});
    tes_query_t *pin = removed_query(&s, s.a); /* never runs */
    churn(&s, q, 50, 300);
    tes_query_destroy(s.world, pin);
    churn(&s, q, 50, 100);
    uint64_t after = fx_stats(s.world).bytes_allocated;
    churn(&s, q, 50, 1000);
    CHECK(fx_stats(s.world).bytes_allocated <= after);
}

/* A program that never calls tes_tick: the end of each consumer's run prunes what every
 * consumer has seen, so history does not grow without bound. */
TEST(a_world_that_never_ticks_is_pruned_by_its_consumers_runs) {
    scene_t s = make_scene(&(tes_world_desc_t){.min_free_indices = 16});
    tes_query_t *q =
        fx_query(s.world, &(tes_query_desc_t){.all = FX_IDS(s.b), .removed = FX_IDS(s.a)});
    churn_frames(&s, q, 50, 100, false);
    uint64_t warm = fx_stats(s.world).bytes_allocated;
    churn_frames(&s, q, 50, 1000, false);
    CHECK(fx_stats(s.world).bytes_allocated <= warm);
}

/* A consumer run only ever inside another run (a plain query's loop), never a tes_tick: its
 * pruning waits for the outermost run to end (pruning moves the logs, which a live run may
 * point into), and happens then. */
TEST(a_consumer_run_inside_another_run_is_pruned_when_the_outer_run_ends) {
    scene_t s = make_scene(&(tes_world_desc_t){.min_free_indices = 16});
    tes_query_t *q =
        fx_query(s.world, &(tes_query_desc_t){.all = FX_IDS(s.b), .removed = FX_IDS(s.a)});
    tes_query_t *plain = fx_query(s.world, &(tes_query_desc_t){.all = FX_IDS(s.d)});
    fx_spawn(s.world, FX_IDS(s.d));
    uint64_t warm = 0;
    for (uint32_t f = 0; f < 1100; f++) {
        tes_entity_t e[50];
        CHECK_OK(tes_spawn_batch(s.world, &s.a, 1, 50, e));
        for (uint32_t i = 0; i < 50; i++)
            CHECK_OK(tes_despawn(s.world, e[i]));
        tes_iter_t it;
        CHECK_OK(tes_query_iter(s.world, plain, &it));
        CHECK(tes_iter_next(&it));
        CHECK_EQ(fx_run_count(s.world, q), 0); /* the consumer's run, inside plain's */
        tes_iter_fini(&it);
        if (f == 100) warm = fx_stats(s.world).bytes_allocated;
    }
    CHECK(fx_stats(s.world).bytes_allocated <= warm);
}

/* ---------------------------------------------------------------------------------------- */
/* Columns                                                                                   */
/* ---------------------------------------------------------------------------------------- */

TEST(iter_column_gives_aligned_columns_with_entity_data) {
    scene_t s = make_scene(&(tes_world_desc_t){.chunk_bytes = 1024});
    tes_entity_t e[150];
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.a, s.c), 100, e));
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.a, s.c, s.t1), 30, e + 100));
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.a, s.c, s.b), 20, e + 130));
    for (int i = 0; i < 150; i++) {
        CHECK_OK(tes_set_number(s.world, e[i], s.a, 0, 0, i + 0.5));
        CHECK_OK(tes_set_number(s.world, e[i], s.a, 1, 0, -i));
        for (uint32_t k = 0; k < 3; k++)
            CHECK_OK(tes_set_number(s.world, e[i], s.c, 0, k, i * 10 + k));
    }
    tes_query_t *q = fx_query(s.world, &(tes_query_desc_t){.all = FX_IDS(s.c, s.a)});
    tes_iter_t it;
    uint32_t rows = 0;
    CHECK_OK(tes_query_iter(s.world, q, &it));
    while (tes_iter_next(&it)) {
        FX_CHECK_ITER_CHUNK(s.world, &it);
        void *v = NULL, *n = NULL, *w = NULL;
        CHECK_OK(tes_iter_column(&it, s.a, 0, &v));
        CHECK_OK(tes_iter_column(&it, s.a, 1, &n));
        CHECK_OK(tes_iter_column(&it, s.c, 0, &w));
        CHECK(((uintptr_t)v & 15u) == 0 && ((uintptr_t)n & 15u) == 0 && ((uintptr_t)w & 15u) == 0);
        void *same = NULL;
        CHECK_OK(tes_chunk_column(s.world, it.archetype, it.chunk, s.a, 0, &same));
        CHECK(same == v);
        for (uint32_t row = 0; row < it.count; row++) {
            tes_entity_t x = it.entities[row];
            CHECK_NUM_EQ(((double *)v)[row], fx_get_number(s.world, x, s.a, 0, 0));
            CHECK_NUM_EQ(((int32_t *)n)[row], fx_get_number(s.world, x, s.a, 1, 0));
            for (uint32_t k = 0; k < 3; k++)
                CHECK_NUM_EQ(((float *)w)[row * 3 + k], fx_get_number(s.world, x, s.c, 0, k));
        }
        rows += it.count;
    }
    CHECK_EQ(rows, 150);
}

TEST(filtered_rows_index_the_columns) {
    scene_t s = make_scene(&(tes_world_desc_t){.chunk_bytes = 1024});
    tes_query_t *q = changed_query(&s, s.a);
    tes_entity_t e[200];
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.a), 200, e));
    for (int i = 0; i < 200; i += 7)
        CHECK_OK(tes_set_number(s.world, e[i], s.a, 0, 0, 1000 + i));
    tes_iter_t it;
    uint32_t visited = 0;
    CHECK_OK(tes_query_iter(s.world, q, &it));
    while (tes_iter_next(&it)) {
        FX_CHECK_ITER_CHUNK(s.world, &it);
        double *v = NULL;
        CHECK_OK(tes_iter_column(&it, s.a, 0, (void **)&v));
        for (uint32_t i = 0; i < it.row_count; i++) {
            uint32_t row = fx_iter_row(&it, i);
            CHECK(v[row] >= 1000);
            CHECK_EQ(e[(int)v[row] - 1000], it.entities[row]);
            v[row] = -1; /* a raw write: not a change until marked */
            visited++;
        }
    }
    CHECK_EQ(visited, (200 + 6) / 7);
    CHECK_EQ(fx_run(s.world, q)->count, 0);
    CHECK_NUM_EQ(fx_get_number(s.world, e[7], s.a, 0, 0), -1);
}

TEST(filtered_iteration_skips_chunks_with_nothing_to_visit) {
    scene_t s = make_scene(&(tes_world_desc_t){.chunk_bytes = 1024});
    tes_query_t *q = changed_query(&s, s.a);
    tes_entity_t e[400];
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.a), 400, e));
    CHECK(fx_archetype(s.world, fx_archetype_of(s.world, e[0])).chunk_count >= 5);
    mark(&s, e[250], s.a);
    tes_location_t loc = fx_check_location(s.world, e[250]);
    tes_iter_t it;
    uint32_t chunks = 0;
    CHECK_OK(tes_query_iter(s.world, q, &it));
    while (tes_iter_next(&it)) {
        FX_CHECK_ITER_CHUNK(s.world, &it);
        CHECK_EQ(it.chunk, loc.chunk);
        CHECK_EQ(it.row_count, 1);
        CHECK_EQ(fx_iter_row(&it, 0), loc.row);
        chunks++;
    }
    CHECK_EQ(chunks, 1);
}

/* ---------------------------------------------------------------------------------------- */
/* Errors                                                                                    */
/* ---------------------------------------------------------------------------------------- */

TEST(query_create_rejects_bad_descriptions) {
    scene_t s = make_scene(NULL);
    tes_query_t *q = NULL;
    tes_query_desc_t ok = {.all = FX_IDS(s.a)};
    CHECK_ERR(tes_query_create(NULL, &ok, &q), TES_ERR_INVALID_ARGUMENT);
    CHECK_ERR(tes_query_create(s.world, NULL, &q), TES_ERR_INVALID_ARGUMENT);
    CHECK_ERR(tes_query_create(s.world, &ok, NULL), TES_ERR_INVALID_ARGUMENT);
    tes_component_t unknown = 4000;
    tes_query_desc_t bad[] = {
        {.all = &unknown, .all_count = 1},         {.none = &unknown, .none_count = 1},
        {.any = &unknown, .any_count = 1},         {.added = &unknown, .added_count = 1},
        {.changed = &unknown, .changed_count = 1}, {.removed = &unknown, .removed_count = 1},
    };
    for (uint32_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_ERR(tes_query_create(s.world, &bad[i], &q), TES_ERR_UNKNOWN_COMPONENT);
    CHECK_ERR(tes_query_create(s.world, &(tes_query_desc_t){.all = NULL, .all_count = 2}, &q),
              TES_ERR_INVALID_ARGUMENT);
    CHECK_ERR(
        tes_query_create(s.world, &(tes_query_desc_t){.changed = NULL, .changed_count = 1}, &q),
        TES_ERR_INVALID_ARGUMENT);
    CHECK_EQ(fx_stats(s.world).query_count, 0);
    tes_tracking_t level;
    CHECK_OK(tes_component_tracking(s.world, s.a, &level));
    CHECK_EQ(level, TES_UNTRACKED);
}

TEST(iteration_calls_reject_bad_arguments) {
    scene_t s = make_scene(NULL);
    tes_query_t *q =
        fx_query(s.world, &(tes_query_desc_t){.all = FX_IDS(s.a), .removed = FX_IDS(s.b)});
    fx_spawn(s.world, FX_IDS(s.a));
    tes_iter_t it;
    CHECK_ERR(tes_query_iter(NULL, q, &it), TES_ERR_INVALID_ARGUMENT);
    CHECK_ERR(tes_query_iter(s.world, NULL, &it), TES_ERR_INVALID_ARGUMENT);
    CHECK_ERR(tes_query_iter(s.world, q, NULL), TES_ERR_INVALID_ARGUMENT);
    CHECK_OK(tes_query_iter(s.world, q, &it));
    CHECK(tes_iter_next(&it));
    void *column = NULL;
    const tes_entity_t *removed = NULL;
    uint32_t count = 0;
    CHECK_ERR(tes_iter_column(&it, s.a, 0, NULL), TES_ERR_INVALID_ARGUMENT);
    CHECK_ERR(tes_iter_column(&it, s.a, 7, &column), TES_ERR_UNKNOWN_FIELD);
    CHECK(tes_iter_column(&it, s.d, 0, &column) != TES_OK); /* not in the chunk */
    CHECK_ERR(tes_iter_removed(&it, s.b, NULL, &count), TES_ERR_INVALID_ARGUMENT);
    CHECK(tes_iter_removed(&it, s.a, &removed, &count) != TES_OK); /* not one of `removed` */
    CHECK_OK(tes_iter_removed(&it, s.b, &removed, &count));
    CHECK_EQ(count, 0);
    tes_iter_fini(&it);
}

/* A consumer has one live run at a time: a second would share the first's collected rows and,
 * ending first, move last_run backwards so the next run reports entities again. A plain query
 * (no filters, no removed terms) has no last_run and may be iterated while iterated. */
TEST(second_live_run_of_a_consumer_is_refused) {
    scene_t s = make_scene(NULL);
    tes_entity_t e = fx_spawn(s.world, FX_IDS(s.a));
    tes_query_t *changed = changed_query(&s, s.a);
    tes_query_t *plain = fx_query(s.world, &(tes_query_desc_t){.all = &s.a, .all_count = 1});
    mark(&s, e, s.a);
    tes_iter_t outer, refused, plain1, plain2;
    CHECK_OK(tes_query_iter(s.world, changed, &outer));
    CHECK_ERR(tes_query_iter(s.world, changed, &refused), TES_ERR_QUERY_IN_USE);
    CHECK_OK(tes_query_iter(s.world, plain, &plain1));
    CHECK_OK(tes_query_iter(s.world, plain, &plain2)); /* nested plain runs are fine */
    tes_iter_fini(&plain2);
    tes_iter_fini(&plain1);
    CHECK(tes_iter_next(&outer));
    CHECK_EQ(outer.row_count, 1);
    CHECK(!tes_iter_next(&outer));
    /* The refused call changed nothing: the change was reported once, and only once. */
    CHECK_EQ(fx_run_count(s.world, changed), 0);
}
