/* Collecting a run: tes_query_collect reports what one run of a consumer query sees (added and
 * changed entities across chunks, removals term by term in the query's order, despawns
 * included), each event once; removals-only queries walk nothing; refused calls and out of
 * memory consume nothing. A twin query with the same terms, iterated by hand, is the model. */
#include "fixtures.h"

static const tes_field_desc_t xy_fields[] = {{"x", TES_F32, 0}, {"y", TES_F32, 0}};
static const tes_field_desc_t hp_fields[] = {{"hp", TES_F64, 0}};

#define MAX_TERMS 4

typedef struct scene_t {
    tes_world_t *world;
    tes_component_t a, b, c, tag;
    uint32_t capacity; /* of {A} */
} scene_t;

static scene_t make_scene(fx_alloc_t *alloc) {
    scene_t s;
    tes_world_desc_t desc = {.chunk_bytes = 1024};
    if (alloc) desc.allocator = fx_allocator(alloc);
    s.world = fx_world(&desc);
    s.a = fx_component(s.world, "A", xy_fields, 2);
    s.b = fx_component(s.world, "B", hp_fields, 1);
    s.c = fx_component(s.world, "C", hp_fields, 1);
    s.tag = fx_tag(s.world, "Tag");
    tes_archetype_t a;
    CHECK_OK(tes_archetype_find(s.world, &s.a, 1, &a));
    s.capacity = fx_archetype(s.world, a).capacity;
    return s;
}

/* What a run saw: its entities in visit order, and per removed term its removals. */
typedef struct seen_t {
    fx_entities_t *entities;
    fx_entities_t *removed[MAX_TERMS];
    uint32_t terms;
} seen_t;

static seen_t seen_new(uint32_t terms) {
    seen_t seen = {.entities = fx_entities_new(), .terms = terms};
    for (uint32_t i = 0; i < terms; i++)
        seen.removed[i] = fx_entities_new();
    return seen;
}

/* tes_query_collect, checking the shape of its answer. `terms`: the query's removed count. */
static seen_t collect(scene_t *s, tes_query_t *q, uint32_t terms) {
    seen_t seen = seen_new(terms);
    tes_collect_t out;
    memset(&out, 0xAB, sizeof out);
    CHECK_OK(tes_query_collect(s->world, q, &out));
    CHECK(out.count == 0 ? out.entities == NULL : out.entities != NULL);
    CHECK(out.removed_total == 0 ? out.removed == NULL : out.removed != NULL);
    CHECK(terms == 0 ? out.removed_counts == NULL : out.removed_counts != NULL);
    for (uint32_t i = 0; i < out.count; i++)
        fx_entities_push(seen.entities, out.entities[i]);
    uint32_t at = 0;
    for (uint32_t t = 0; t < terms; t++) {
        for (uint32_t i = 0; i < out.removed_counts[t]; i++)
            fx_entities_push(seen.removed[t], out.removed[at++]);
    }
    CHECK_EQ(at, out.removed_total);
    return seen;
}

/* The model: one run of a twin query by hand (removals read before the first chunk). A query
 * without filters walks every matched entity; tes_query_collect reports none, so neither does
 * this unless `filtered`. */
static seen_t run_twin(scene_t *s, tes_query_t *twin, const tes_component_t *terms, uint32_t n,
                       bool filtered) {
    seen_t seen = seen_new(n);
    tes_iter_t it;
    CHECK_OK(tes_query_iter(s->world, twin, &it));
    for (uint32_t t = 0; t < n; t++) {
        const tes_entity_t *removed;
        uint32_t count;
        CHECK_OK(tes_iter_removed(&it, terms[t], &removed, &count));
        for (uint32_t i = 0; i < count; i++)
            fx_entities_push(seen.removed[t], removed[i]);
    }
    while (tes_iter_next(&it)) {
        FX_CHECK_ITER_CHUNK(s->world, &it);
        for (uint32_t i = 0; filtered && i < it.row_count; i++)
            fx_entities_push(seen.entities, it.entities[fx_iter_row(&it, i)]);
    }
    return seen;
}

static void check_sequence_at(int line, const char *what, const fx_entities_t *got,
                              const fx_entities_t *want) {
    if (got->count != want->count) {
        harness_fail(__FILE__, line, "%s: %u entities, expected %u", what, (unsigned)got->count,
                     (unsigned)want->count);
    }
    for (uint32_t i = 0; i < got->count; i++) {
        if (got->items[i] != want->items[i]) {
            harness_fail(__FILE__, line, "%s[%u] = %u, expected %u", what, (unsigned)i,
                         (unsigned)got->items[i], (unsigned)want->items[i]);
        }
    }
}

static void check_same_at(int line, const seen_t *got, const seen_t *want) {
    check_sequence_at(line, "entities", got->entities, want->entities);
    CHECK_EQ(got->terms, want->terms);
    for (uint32_t t = 0; t < got->terms; t++)
        check_sequence_at(line, "removed term", got->removed[t], want->removed[t]);
}
#define CHECK_SAME(got, want) check_same_at(__LINE__, got, want)

/* Exactly these entities (at least one), in this order. */
#define CHECK_LIST(list, ...)                                                              \
    do {                                                                                   \
        const tes_entity_t expected_[] = {0, __VA_ARGS__};                                 \
        fx_entities_t want_ = {(tes_entity_t *)expected_ + 1,                              \
                               (uint32_t)(sizeof expected_ / sizeof expected_[0]) - 1, 0}; \
        check_sequence_at(__LINE__, #list, list, &want_);                                  \
    } while (0)

static uint32_t spawn_n(scene_t *s, const tes_component_t *set, uint32_t count, uint32_t n,
                        tes_entity_t *out) {
    CHECK_OK(tes_spawn_batch(s->world, set, count, n, out));
    return n;
}

/* ---------------------------------------------------------------------------------------- */
/* Entities                                                                                  */
/* ---------------------------------------------------------------------------------------- */

TEST(collect_reports_added_entities_across_chunks_once) {
    scene_t s = make_scene(NULL);
    tes_query_desc_t desc = {.added = FX_IDS(s.a)};
    tes_query_t *q = fx_query(s.world, &desc), *twin = fx_query(s.world, &desc);
    tes_entity_t e[600];
    CHECK(4 * s.capacity + 7 <= 600);
    uint32_t n = spawn_n(&s, &s.a, 1, 3 * s.capacity + s.capacity / 2, e);
    n += spawn_n(&s, FX_IDS(s.a, s.b), 7, e + n);
    seen_t got = collect(&s, q, 0), want = run_twin(&s, twin, NULL, 0, true);
    CHECK_SAME(&got, &want);
    FX_CHECK_SAME_ENTITIES(got.entities, e, n);
    /* Each once: nothing new, nothing reported. */
    got = collect(&s, q, 0);
    CHECK_EQ(got.entities->count, 0);
    CHECK_EQ(fx_run_count(s.world, twin), 0);
    /* Gained by spawn, by tes_add, and by a whole archetype. */
    tes_entity_t b = fx_spawn(s.world, &s.b, 1), late = fx_spawn(s.world, &s.a, 1);
    CHECK_OK(tes_add(s.world, b, s.a));
    tes_entity_t c[3];
    spawn_n(&s, &s.c, 1, 3, c);
    tes_archetype_t only_c;
    CHECK_OK(tes_archetype_find(s.world, &s.c, 1, &only_c));
    CHECK_OK(tes_archetype_add(s.world, only_c, s.a));
    got = collect(&s, q, 0);
    want = run_twin(&s, twin, NULL, 0, true);
    CHECK_SAME(&got, &want);
    FX_CHECK_VISITED(got.entities, late, b, c[0], c[1], c[2]);
    CHECK_EQ(tes_query_last_run(q) + 1, tes_query_last_run(twin));
}

TEST(collect_reports_changed_entities_once_with_second_filters) {
    scene_t s = make_scene(NULL);
    tes_entity_t e[600];
    CHECK(3 * s.capacity + 5 <= 600);
    uint32_t n = spawn_n(&s, FX_IDS(s.a, s.b), 3 * s.capacity + 5, e);
    tes_query_desc_t desc = {.changed = FX_IDS(s.a, s.b)};
    tes_query_t *q = fx_query(s.world, &desc), *twin = fx_query(s.world, &desc);
    tes_query_desc_t one = {.changed = FX_IDS(s.a)};
    tes_query_t *qa = fx_query(s.world, &one), *twin_a = fx_query(s.world, &one);
    seen_t got = collect(&s, q, 0);
    CHECK_EQ(got.entities->count, 0); /* nothing changed since tracking started */
    CHECK_EQ(collect(&s, qa, 0).entities->count, 0);
    fx_run(s.world, twin);
    fx_run(s.world, twin_a);
    /* A changed everywhere in the middle and last chunks, B on some of them. */
    for (uint32_t i = s.capacity; i < n; i += 2) {
        CHECK_OK(tes_mark_changed(s.world, e[i], s.a));
        if (i % 3 == 0) CHECK_OK(tes_set_number(s.world, e[i], s.b, 0, 0, i));
    }
    CHECK_OK(tes_set_number(s.world, e[1], s.b, 0, 0, 1)); /* B only: not both */
    uint32_t both = 0, a_only = 0;
    for (uint32_t i = s.capacity; i < n; i++) {
        both += i % 6 == 0;
        a_only += i % 2 == 0;
    }
    got = collect(&s, q, 0);
    seen_t want = run_twin(&s, twin, NULL, 0, true);
    CHECK_SAME(&got, &want);
    CHECK_EQ(got.entities->count, both);
    got = collect(&s, qa, 0);
    want = run_twin(&s, twin_a, NULL, 0, true);
    CHECK_SAME(&got, &want);
    CHECK_EQ(got.entities->count, a_only);
    /* Once: a second collect sees nothing until the next change. */
    CHECK_EQ(collect(&s, q, 0).entities->count, 0);
    CHECK_EQ(collect(&s, qa, 0).entities->count, 0);
    CHECK_OK(tes_mark_changed(s.world, e[0], s.a));
    CHECK_LIST(collect(&s, qa, 0).entities, e[0]);
    CHECK_EQ(collect(&s, q, 0).entities->count, 0);
}

/* ---------------------------------------------------------------------------------------- */
/* Removals                                                                                  */
/* ---------------------------------------------------------------------------------------- */

TEST(collect_reports_removed_terms_in_the_query_order) {
    scene_t s = make_scene(NULL);
    /* removed = {B, A, B}: stored as {B, A}. */
    tes_query_desc_t desc = {.removed = FX_IDS(s.b, s.a, s.b)};
    tes_query_t *q = fx_query(s.world, &desc), *twin = fx_query(s.world, &desc);
    const tes_component_t terms[] = {s.b, s.a};
    tes_entity_t x[6];
    spawn_n(&s, FX_IDS(s.a, s.b), 6, x);
    CHECK_OK(tes_remove(s.world, x[1], s.a));
    CHECK_OK(tes_remove(s.world, x[2], s.b));
    CHECK_OK(tes_despawn(s.world, x[3]));     /* both */
    CHECK_OK(tes_remove(s.world, x[4], s.c)); /* has no C: nothing */
    seen_t got = collect(&s, q, 2), want = run_twin(&s, twin, terms, 2, false);
    CHECK_SAME(&got, &want);
    CHECK_EQ(got.entities->count, 0);
    CHECK_LIST(got.removed[0], x[2], x[3]);
    CHECK_LIST(got.removed[1], x[1], x[3]);
    /* Each once. */
    got = collect(&s, q, 2);
    CHECK_EQ(got.removed[0]->count, 0);
    CHECK_EQ(got.removed[1]->count, 0);
    /* Whole archetypes and batch despawns are removals too, oldest first. */
    tes_archetype_t ab;
    CHECK_OK(tes_archetype_find(s.world, FX_IDS(s.a, s.b), &ab));
    CHECK_OK(tes_despawn_batch(s.world, &x[5], 1));
    CHECK_OK(tes_archetype_remove(s.world, ab, s.b)); /* x0 and x4 */
    CHECK_OK(tes_despawn(s.world, x[1]));             /* {B} */
    CHECK_OK(tes_despawn(s.world, x[2]));             /* {A} */
    got = collect(&s, q, 2);
    want = run_twin(&s, twin, terms, 2, false);
    CHECK_SAME(&got, &want);
    FX_CHECK_VISITED(got.removed[0], x[5], x[0], x[4], x[1]);
    CHECK_EQ(got.removed[0]->items[0], x[5]);
    CHECK_EQ(got.removed[0]->items[3], x[1]);
    CHECK_LIST(got.removed[1], x[5], x[2]);
}

TEST(removed_only_queries_collect_no_entities) {
    scene_t s = make_scene(NULL);
    tes_entity_t e[300];
    spawn_n(&s, FX_IDS(s.a, s.b), 300, e);
    /* It matches every entity (all = {A}) but has no filter: no entity is reported. */
    tes_query_t *q =
        fx_query(s.world, &(tes_query_desc_t){.all = FX_IDS(s.a), .removed = FX_IDS(s.b)});
    CHECK_EQ(fx_run_count(s.world, fx_query(s.world, &(tes_query_desc_t){.all = FX_IDS(s.a)})),
             300);
    seen_t got = collect(&s, q, 1);
    CHECK_EQ(got.entities->count, 0);
    CHECK_EQ(got.removed[0]->count, 0);
    CHECK_OK(tes_remove(s.world, e[17], s.b));
    CHECK_OK(tes_despawn(s.world, e[200]));
    uint64_t bytes = fx_stats(s.world).bytes_allocated;
    got = collect(&s, q, 1);
    CHECK_EQ(got.entities->count, 0);
    CHECK_LIST(got.removed[0], e[17], e[200]);
    /* Its output had room for these two only, not one entry per entity. */
    CHECK(fx_stats(s.world).bytes_allocated - bytes < 300 * sizeof(tes_entity_t));
    CHECK_EQ(collect(&s, q, 1).removed[0]->count, 0);
}

TEST(filters_and_removed_terms_together) {
    scene_t s = make_scene(NULL);
    tes_query_desc_t desc = {.added = FX_IDS(s.a), .removed = FX_IDS(s.a, s.tag)};
    tes_query_t *q = fx_query(s.world, &desc), *twin = fx_query(s.world, &desc);
    const tes_component_t terms[] = {s.a, s.tag};
    tes_entity_t e[40];
    spawn_n(&s, FX_IDS(s.a, s.tag), 40, e);
    CHECK_OK(tes_despawn(s.world, e[3]));       /* added and removed before the run: both */
    CHECK_OK(tes_remove(s.world, e[4], s.tag)); /* still has A */
    seen_t got = collect(&s, q, 2), want = run_twin(&s, twin, terms, 2, true);
    CHECK_SAME(&got, &want);
    CHECK_EQ(got.entities->count, 39);
    CHECK(!fx_entities_contains(got.entities, e[3]));
    CHECK_LIST(got.removed[0], e[3]);
    CHECK_LIST(got.removed[1], e[3], e[4]);
    tes_entity_t f = fx_spawn(s.world, &s.a, 1);
    CHECK_OK(tes_remove(s.world, e[5], s.a));
    got = collect(&s, q, 2);
    want = run_twin(&s, twin, terms, 2, true);
    CHECK_SAME(&got, &want);
    CHECK_LIST(got.entities, f);
    CHECK_LIST(got.removed[0], e[5]);
    CHECK_EQ(got.removed[1]->count, 0);
}

/* ---------------------------------------------------------------------------------------- */
/* Inside runs, refusals, ownership                                                          */
/* ---------------------------------------------------------------------------------------- */

typedef struct in_system_t {
    scene_t *s;
    tes_query_t *q;
    tes_entity_t victim;
    uint32_t removed_seen;
} in_system_t;

/* Despawns (deferred: the system's run is live until its last tes_iter_next) and collects in
 * the same body. */
static void despawn_and_collect(tes_iter_t *it, void *user) {
    in_system_t *ctx = user;
    if (ctx->victim) {
        CHECK_OK(tes_despawn(ctx->s->world, ctx->victim));
        ctx->victim = 0;
    }
    tes_collect_t out;
    CHECK_OK(tes_query_collect(ctx->s->world, ctx->q, &out));
    ctx->removed_seen += out.removed_total;
    while (tes_iter_next(it)) {
    }
}

TEST(collect_inside_a_system_sees_deferred_removals_once_applied) {
    scene_t s = make_scene(NULL);
    tes_entity_t e[5];
    spawn_n(&s, FX_IDS(s.a, s.b), 5, e);
    in_system_t ctx = {.s = &s, .victim = e[2]};
    ctx.q = fx_query(s.world, &(tes_query_desc_t){.removed = FX_IDS(s.a)});
    uint32_t stage;
    CHECK_OK(tes_stage_create(s.world, "update", &stage));
    tes_system_t *system;
    CHECK_OK(tes_system_create(s.world,
                               &(tes_system_desc_t){.stage = stage,
                                                    .query = {.all = FX_IDS(s.b)},
                                                    .run = despawn_and_collect,
                                                    .user = &ctx},
                               &system));
    CHECK_OK(tes_tick(s.world));
    CHECK_EQ(ctx.removed_seen, 0); /* the despawn was still a command */
    CHECK(!tes_is_alive(s.world, e[2]));
    CHECK_OK(tes_tick(s.world));
    CHECK_EQ(ctx.removed_seen, 1);
    CHECK_OK(tes_tick(s.world));
    CHECK_EQ(ctx.removed_seen, 1);
    CHECK_OK(tes_world_validate(s.world));
}

TEST(collect_refuses_plain_queries_and_live_runs_changing_nothing) {
    scene_t s = make_scene(NULL);
    tes_entity_t e[10];
    spawn_n(&s, FX_IDS(s.a, s.b), 10, e);
    tes_query_t *plain = fx_query(s.world, &(tes_query_desc_t){.all = FX_IDS(s.a)});
    tes_query_t *q =
        fx_query(s.world, &(tes_query_desc_t){.added = FX_IDS(s.a), .removed = FX_IDS(s.b)});
    fx_run(s.world, plain);
    CHECK_OK(tes_remove(s.world, e[0], s.b));
    tes_iter_t it;
    CHECK_OK(tes_query_iter(s.world, q, &it));
    fx_snapshot_t *before = fx_snapshot_of(s.world);
    uint64_t last_run = tes_query_last_run(q);
    tes_collect_t out;
    memset(&out, 0x5A, sizeof out);
    tes_collect_t untouched = out;
    CHECK_ERR(tes_query_collect(s.world, q, &out), TES_ERR_QUERY_IN_USE);
    CHECK_ERR(tes_query_collect(s.world, plain, &out), TES_ERR_INVALID_ARGUMENT);
    CHECK_ERR(tes_query_collect(NULL, q, &out), TES_ERR_INVALID_ARGUMENT);
    CHECK_ERR(tes_query_collect(s.world, NULL, &out), TES_ERR_INVALID_ARGUMENT);
    CHECK_ERR(tes_query_collect(s.world, q, NULL), TES_ERR_INVALID_ARGUMENT);
    CHECK(memcmp(&out, &untouched, sizeof out) == 0);
    FX_CHECK_UNCHANGED_STRICT(before, s.world);
    CHECK_EQ(fx_stats(s.world).change_tick, before->stats.change_tick);
    CHECK_EQ(tes_query_last_run(q), last_run);
    /* The refused calls consumed nothing: the live run and the next one see it all. */
    const tes_entity_t *removed;
    uint32_t count;
    CHECK_OK(tes_iter_removed(&it, s.b, &removed, &count));
    CHECK_EQ(count, 1);
    uint32_t visited = 0;
    while (tes_iter_next(&it))
        visited += it.row_count;
    CHECK_EQ(visited, 10);
    CHECK_OK(tes_despawn(s.world, e[9]));
    seen_t got = collect(&s, q, 1);
    CHECK_EQ(got.entities->count, 0);
    CHECK_LIST(got.removed[0], e[9]);
}

TEST(collected_arrays_belong_to_the_query_until_its_next_run) {
    scene_t s = make_scene(NULL);
    tes_query_desc_t desc = {.added = FX_IDS(s.a), .removed = FX_IDS(s.a)};
    tes_query_t *q = fx_query(s.world, &desc), *other = fx_query(s.world, &desc);
    tes_entity_t e[50];
    spawn_n(&s, &s.a, 1, 50, e);
    tes_entity_t victim = e[7];
    CHECK_OK(tes_despawn(s.world, victim));
    tes_collect_t mine, theirs;
    CHECK_OK(tes_query_collect(s.world, q, &mine));
    CHECK_EQ(mine.count, 49);
    CHECK_EQ(mine.removed_total, 1);
    tes_entity_t copy[50];
    memcpy(copy, mine.entities, mine.count * sizeof *copy);
    /* Another query's collect, spawns, despawns, ticks: the arrays stay as they were. */
    CHECK_OK(tes_query_collect(s.world, other, &theirs));
    CHECK(theirs.entities != mine.entities);
    spawn_n(&s, &s.a, 1, 20, e);
    CHECK_OK(tes_despawn_batch(s.world, e, 20));
    CHECK_OK(tes_tick(s.world));
    for (uint32_t i = 0; i < mine.count; i++)
        CHECK_EQ(mine.entities[i], copy[i]);
    CHECK_EQ(mine.removed[0], victim);
    CHECK_EQ(mine.removed_counts[0], 1);
    /* The next run: only what happened since (the 20 were spawned and despawned). */
    CHECK_OK(tes_query_collect(s.world, q, &mine));
    CHECK_EQ(mine.count, 0);
    CHECK_EQ(mine.removed_total, 20);
}

/* ---------------------------------------------------------------------------------------- */
/* Out of memory                                                                             */
/* ---------------------------------------------------------------------------------------- */

/* A fresh consumer in a world of the counting allocator; its first collect allocates its
 * caches, its visits and its output. On out of memory nothing may be consumed. */
static bool oom_case(fx_alloc_t *alloc, int64_t k) {
    fx_alloc_init(alloc);
    scene_t s = make_scene(alloc);
    tes_entity_t e[120];
    spawn_n(&s, FX_IDS(s.a, s.b), 100, e);
    spawn_n(&s, FX_IDS(s.a, s.tag), 20, e + 100);
    tes_query_t *q = fx_query(
        s.world, &(tes_query_desc_t){.changed = FX_IDS(s.a), .removed = FX_IDS(s.tag, s.b)});
    for (uint32_t i = 0; i < 120; i += 3)
        CHECK_OK(tes_mark_changed(s.world, e[i], s.a));
    CHECK_OK(tes_despawn(s.world, e[1]));
    CHECK_OK(tes_remove(s.world, e[101], s.tag));
    fx_snapshot_t *before = fx_snapshot_of(s.world);
    uint64_t tick = fx_stats(s.world).change_tick;
    alloc->fail_after = (int64_t)alloc->allocs + k;
    alloc->fail_once = true;
    tes_collect_t out;
    tes_result_t r = tes_query_collect(s.world, q, &out);
    bool failed = alloc->failures > 0;
    if (r == TES_ERR_OUT_OF_MEMORY) {
        CHECK(failed);
        CHECK_OK(tes_world_validate(s.world));
        FX_CHECK_UNCHANGED(before, s.world);
        CHECK_EQ(fx_stats(s.world).change_tick, tick);
        CHECK_EQ(tes_query_last_run(q), 0);
        r = tes_query_collect(s.world, q, &out);
    }
    CHECK_OK(r);
    CHECK_EQ(out.count, 40);
    CHECK_EQ(out.removed_total, 2);
    CHECK_EQ(out.removed_counts[0], 1);
    CHECK_EQ(out.removed[0], e[101]);
    CHECK_EQ(out.removed_counts[1], 1);
    CHECK_EQ(out.removed[1], e[1]);
    CHECK_EQ(tes_query_last_run(q), tick);
    fx_world_destroy_now(s.world);
    FX_CHECK_ALLOC_CLEAN(alloc);
    return failed;
}

TEST(collect_out_of_memory_consumes_nothing) {
    fx_alloc_t *alloc = fx_alloc_new();
    int64_t k = 0;
    while (oom_case(alloc, k)) {
        k++;
        CHECK(k < 100);
    }
    CHECK(k >= 3); /* visits, rows, counts, output: several failure points were tried */
}

/* ---------------------------------------------------------------------------------------- */
/* Against the model                                                                         */
/* ---------------------------------------------------------------------------------------- */

TEST(collect_matches_a_twin_query_under_random_changes) {
    scene_t s = make_scene(NULL);
    enum { PAIRS = 4 };
    tes_query_desc_t descs[PAIRS] = {
        {.changed = FX_IDS(s.a), .removed = FX_IDS(s.b, s.a)},
        {.all = FX_IDS(s.c), .added = FX_IDS(s.b)},
        {.removed = FX_IDS(s.tag)},
        {.added = FX_IDS(s.a),
         .changed = FX_IDS(s.b),
         .none = FX_IDS(s.tag),
         .removed = FX_IDS(s.c)},
    };
    const tes_component_t terms[PAIRS][2] = {{s.b, s.a}, {0}, {s.tag}, {s.c}};
    const uint32_t term_count[PAIRS] = {2, 0, 1, 1};
    tes_query_t *q[PAIRS], *twin[PAIRS];
    for (uint32_t p = 0; p < PAIRS; p++) {
        q[p] = fx_query(s.world, &descs[p]);
        twin[p] = fx_query(s.world, &descs[p]);
    }
    const tes_component_t pool[] = {s.a, s.b, s.c, s.tag};
    fx_rng_t rng = {20240611};
    tes_entity_t live[600];
    uint32_t live_count = 0, reported[2] = {0, 0};
    for (int round = 0; round < 60; round++) {
        for (int step = 0; step < 40; step++) {
            uint32_t what = fx_rng_below(&rng, 7);
            tes_entity_t e = live_count ? live[fx_rng_below(&rng, live_count)] : 0;
            tes_component_t c = pool[fx_rng_below(&rng, 4)];
            if (what == 0 || !live_count) {
                uint32_t n = 1 + fx_rng_below(&rng, 30);
                if (live_count + n > 600) continue;
                tes_component_t set[4];
                uint32_t count = 0;
                for (uint32_t i = 0; i < 4; i++) {
                    if (fx_rng_chance(&rng, 50)) set[count++] = pool[i];
                }
                spawn_n(&s, set, count, n, live + live_count);
                live_count += n;
            } else if (what == 1) {
                CHECK_OK(tes_despawn(s.world, e));
                for (uint32_t i = 0; i < live_count; i++) {
                    if (live[i] == e) live[i] = live[--live_count];
                }
            } else if (what == 2) {
                CHECK_OK(tes_add(s.world, e, c));
            } else if (what == 3) {
                CHECK_OK(tes_remove(s.world, e, c));
            } else if (what == 4 && c != s.tag && fx_has(s.world, e, c)) {
                CHECK_OK(tes_mark_changed(s.world, e, c));
            } else if (what == 5) {
                tes_archetype_t a = fx_archetype_of(s.world, e);
                if (fx_rng_chance(&rng, 50)) {
                    CHECK_OK(tes_archetype_remove(s.world, a, c));
                } else {
                    CHECK_OK(tes_archetype_add(s.world, a, c));
                }
            } else if (what == 6 && fx_rng_chance(&rng, 30)) {
                CHECK_OK(tes_tick(s.world));
            }
        }
        for (uint32_t p = 0; p < PAIRS; p++) {
            if (fx_rng_chance(&rng, 20)) continue; /* both skip: windows stay equal */
            seen_t got = collect(&s, q[p], term_count[p]);
            bool filtered = descs[p].added_count || descs[p].changed_count;
            seen_t want = run_twin(&s, twin[p], terms[p], term_count[p], filtered);
            CHECK_SAME(&got, &want);
            reported[0] += got.entities->count;
            for (uint32_t t = 0; t < term_count[p]; t++)
                reported[1] += got.removed[t]->count;
        }
        CHECK_OK(tes_world_validate(s.world));
    }
    printf("  reported %u entities, %u removals\n", reported[0], reported[1]);
    CHECK(reported[0] > 500 && reported[1] > 500); /* the model had something to compare */
}
