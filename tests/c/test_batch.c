/* Batch operations: spawn_batch, despawn_batch (all or nothing), archetype_add/remove (whole
 * chunks change owner when only tags differ). */
#include "fixtures.h"

static const tes_field_desc_t position_fields[] = {{"x", TES_F32, 0}, {"y", TES_F32, 0}};
static const tes_field_desc_t id_fields[] = {{"v", TES_U32, 0}, {"bits", TES_U8, 3}};

typedef struct scene_t {
    tes_world_t *world;
    tes_component_t position, id, frozen, player;
} scene_t;

static scene_t make_scene(uint32_t chunk_bytes) {
    tes_world_desc_t desc = {.chunk_bytes = chunk_bytes};
    scene_t s;
    s.world = fx_world(&desc);
    s.position = fx_component(s.world, "Position", position_fields, 2);
    s.id = fx_component(s.world, "Id", id_fields, 2);
    s.frozen = fx_tag(s.world, "Frozen");
    s.player = fx_tag(s.world, "Player");
    return s;
}

static tes_archetype_t find(scene_t *s, const tes_component_t *set, uint32_t count) {
    tes_archetype_t a = UINT32_MAX;
    CHECK_OK(tes_archetype_find(s->world, set, count, &a));
    return a;
}

static void fill(scene_t *s, tes_entity_t e, uint32_t k) {
    if (fx_has(s->world, e, s->position)) {
        CHECK_OK(tes_set_number(s->world, e, s->position, 0, 0, k * 0.5));
        CHECK_OK(tes_set_number(s->world, e, s->position, 1, 0, -(double)k));
    }
    if (fx_has(s->world, e, s->id)) {
        CHECK_OK(tes_set_number(s->world, e, s->id, 0, 0, k));
        for (uint32_t i = 0; i < 3; i++)
            CHECK_OK(tes_set_number(s->world, e, s->id, 1, i, (k + i) & 255));
    }
}

/* Spawns n entities of set in one batch into e, filled with the seeds 0, 1, ... */
static void spawn_batch_filled(scene_t *s, const tes_component_t *set, uint32_t count, uint32_t n,
                               tes_entity_t *e) {
    CHECK_OK(tes_spawn_batch(s->world, set, count, n, e));
    for (uint32_t i = 0; i < n; i++)
        fill(s, e[i], i);
}

static void check_data(scene_t *s, tes_entity_t e, uint32_t k) {
    if (fx_has(s->world, e, s->position)) {
        CHECK_NUM_EQ(fx_get_number(s->world, e, s->position, 0, 0), k * 0.5);
        CHECK_NUM_EQ(fx_get_number(s->world, e, s->position, 1, 0), -(double)k);
    }
    if (fx_has(s->world, e, s->id)) {
        CHECK_NUM_EQ(fx_get_number(s->world, e, s->id, 0, 0), k);
        for (uint32_t i = 0; i < 3; i++)
            CHECK_NUM_EQ(fx_get_number(s->world, e, s->id, 1, i), (k + i) & 255);
    }
}

static void check_id_zero(scene_t *s, tes_entity_t e) {
    CHECK_NUM_EQ(fx_get_number(s->world, e, s->id, 0, 0), 0);
    for (uint32_t i = 0; i < 3; i++)
        CHECK_NUM_EQ(fx_get_number(s->world, e, s->id, 1, i), 0);
}

/* Leaves recycled chunk blocks full of non-zero bytes, to catch data that is not zeroed. */
static void dirty_the_pool(scene_t *s, uint32_t n) {
    tes_component_t set[] = {s->position, s->id};
    tes_entity_t *e = (tes_entity_t *)malloc(n * sizeof *e);
    CHECK(e != NULL);
    tes_result_t r = tes_spawn_batch(s->world, set, 2, n, e);
    for (uint32_t i = 0; r == TES_OK && i < n; i++) {
        void *p;
        r = tes_field_ptr(s->world, e[i], s->id, 0, &p);
        if (r == TES_OK) memset(p, 0xee, 4);
        if (r == TES_OK) r = tes_field_ptr(s->world, e[i], s->position, 0, &p);
        if (r == TES_OK) memset(p, 0xee, 4);
    }
    if (r == TES_OK) r = tes_despawn_batch(s->world, e, n);
    free(e);
    CHECK_OK(r);
}

TEST(spawn_batch_handles_are_alive_and_distinct) {
    scene_t s = make_scene(1024);
    tes_component_t set[] = {s.position, s.id};
    enum { N = 5000 };
    tes_entity_t *e = (tes_entity_t *)fx_malloc(N * sizeof *e);
    CHECK_OK(tes_spawn_batch(s.world, set, 2, N, e));
    unsigned char *seen = (unsigned char *)fx_malloc(1u << TES_INDEX_BITS);
    for (int i = 0; i < N; i++) {
        CHECK(e[i] != 0);
        CHECK(tes_is_alive(s.world, e[i]));
        CHECK(!seen[tes_entity_index(e[i])]);
        seen[tes_entity_index(e[i])] = 1;
        CHECK(fx_has(s.world, e[i], s.position));
        CHECK(fx_has(s.world, e[i], s.id));
    }
    CHECK_EQ(fx_stats(s.world).entity_count, N);
    fx_check_all_packed(s.world);
    CHECK_OK(tes_world_validate(s.world));
}

TEST(spawn_batch_fills_chunks_contiguously) {
    scene_t s = make_scene(1024);
    tes_component_t set[] = {s.position, s.id};
    tes_archetype_t a = find(&s, set, 2);
    uint32_t cap = fx_archetype(s.world, a).capacity;
    tes_entity_t first[5];
    CHECK_OK(tes_spawn_batch(s.world, set, 2, 5, first));
    uint32_t n = cap * 2 + 7;
    tes_entity_t *e = (tes_entity_t *)fx_malloc(n * sizeof *e);
    CHECK_OK(tes_spawn_batch(s.world, set, 2, n, e));
    for (uint32_t i = 0; i < n; i++) {
        tes_location_t loc = fx_check_location(s.world, e[i]);
        CHECK_EQ(loc.archetype, a);
        CHECK_EQ(loc.chunk, (5 + i) / cap);
        CHECK_EQ(loc.row, (5 + i) % cap);
    }
    tes_archetype_info_t info = fx_archetype(s.world, a);
    CHECK_EQ(info.entity_count, n + 5);
    CHECK_EQ(info.chunk_count, (n + 5 + cap - 1) / cap);
    fx_check_packed(s.world, a);
}

TEST(spawn_batch_data_starts_zeroed) {
    scene_t s = make_scene(1024);
    dirty_the_pool(&s, 500);
    tes_component_t set[] = {s.position, s.id};
    enum { N = 700 };
    tes_entity_t e[N];
    CHECK_OK(tes_spawn_batch(s.world, set, 2, N, e));
    for (int i = 0; i < N; i++) {
        check_id_zero(&s, e[i]);
        CHECK_NUM_EQ(fx_get_number(s.world, e[i], s.position, 0, 0), 0);
        CHECK_NUM_EQ(fx_get_number(s.world, e[i], s.position, 1, 0), 0);
    }
}

TEST(spawn_batch_accepts_null_out_entities) {
    scene_t s = make_scene(1024);
    CHECK_OK(tes_spawn_batch(s.world, &s.frozen, 1, 300, NULL));
    CHECK_EQ(fx_stats(s.world).entity_count, 300);
    CHECK_EQ(fx_archetype(s.world, find(&s, &s.frozen, 1)).entity_count, 300);
    fx_check_all_packed(s.world);
}

TEST(spawn_batch_of_zero_spawns_nothing) {
    scene_t s = make_scene(1024);
    tes_entity_t e[1] = {0};
    CHECK_OK(tes_spawn_batch(s.world, &s.position, 1, 0, e));
    CHECK_OK(tes_spawn_batch(s.world, NULL, 0, 0, NULL));
    CHECK_EQ(fx_stats(s.world).entity_count, 0);
}

TEST(spawn_batch_rejects_bad_sets_and_spawns_none) {
    scene_t s = make_scene(1024);
    CHECK_OK(tes_spawn_batch(s.world, &s.position, 1, 10, NULL));
    fx_snapshot_t *before = fx_snapshot_of(s.world);
    tes_entity_t e[100];
    tes_component_t dup[] = {s.id, s.frozen, s.id};
    tes_component_t unknown[] = {s.id, s.player + 1};
    CHECK_ERR(tes_spawn_batch(s.world, dup, 3, 100, e), TES_ERR_INVALID_ARGUMENT);
    CHECK_ERR(tes_spawn_batch(s.world, unknown, 2, 100, e), TES_ERR_UNKNOWN_COMPONENT);
    CHECK_ERR(tes_spawn_batch(s.world, NULL, 2, 100, e), TES_ERR_INVALID_ARGUMENT);
    FX_CHECK_UNCHANGED(before, s.world);
}

TEST(despawn_batch_despawns_all_listed_and_keeps_the_rest) {
    scene_t s = make_scene(1024);
    tes_component_t set[] = {s.position, s.id};
    enum { N = 1000 };
    tes_entity_t e[N], list[N];
    spawn_batch_filled(&s, set, 2, N, e);
    /* A mix of archetypes in the list too. */
    for (uint32_t i = 0; i < N; i += 5)
        CHECK_OK(tes_add(s.world, e[i], s.frozen));
    uint32_t n = 0;
    fx_rng_t rng = {7};
    bool listed[N] = {false};
    for (uint32_t i = 0; i < N; i++) {
        if (fx_rng_chance(&rng, 40)) {
            list[n++] = e[i];
            listed[i] = true;
        }
    }
    CHECK_OK(tes_despawn_batch(s.world, list, n));
    CHECK_EQ(fx_stats(s.world).entity_count, N - n);
    for (uint32_t i = 0; i < N; i++) {
        CHECK_EQ(tes_is_alive(s.world, e[i]), !listed[i]);
        if (!listed[i]) {
            fx_check_location(s.world, e[i]);
            check_data(&s, e[i], i);
        }
    }
    fx_check_all_packed(s.world);
    CHECK_OK(tes_world_validate(s.world));
}

TEST(query_despawn_despawns_what_the_query_visits_and_nothing_else) {
    scene_t s = make_scene(1024);
    tes_component_t set[] = {s.position, s.id};
    enum { N = 600 };
    tes_entity_t e[N];
    spawn_batch_filled(&s, set, 2, N, e);
    for (uint32_t i = 0; i < N; i += 3)
        CHECK_OK(tes_add(s.world, e[i], s.frozen));
    for (uint32_t i = 1; i < N; i += 3)
        CHECK_OK(tes_add(s.world, e[i], s.player));
    /* Position without Player: two archetypes, visited whole. */
    tes_query_t *q =
        fx_query(s.world, &(tes_query_desc_t){.all = FX_IDS(s.position), .none = FX_IDS(s.player)});
    /* A consumer's run would use up what it reports: refused, nothing despawned. */
    tes_query_t *consumer = fx_query(s.world, &(tes_query_desc_t){.changed = FX_IDS(s.id)});
    CHECK_ERR(tes_query_despawn(s.world, consumer), TES_ERR_INVALID_ARGUMENT);
    CHECK_ERR(tes_query_despawn(NULL, q), TES_ERR_INVALID_ARGUMENT);
    CHECK_EQ(fx_stats(s.world).entity_count, N);
    tes_query_t *gone = fx_query(s.world, &(tes_query_desc_t){.removed = FX_IDS(s.frozen)});
    CHECK_OK(tes_query_despawn(s.world, q));
    CHECK_EQ(fx_stats(s.world).entity_count, N / 3);
    /* Despawns are removals: the Frozen ones reach the log, each once. */
    tes_iter_t run;
    CHECK_OK(tes_query_iter(s.world, gone, &run));
    const tes_entity_t *removed = NULL;
    uint32_t count = 0;
    CHECK_OK(tes_iter_removed(&run, s.frozen, &removed, &count));
    CHECK_EQ(count, N / 3);
    for (uint32_t i = 0; i < count; i++) {
        uint32_t j = 0;
        while (j < N && e[j] != removed[i])
            j++;
        CHECK(j < N && j % 3 == 0);
    }
    tes_iter_fini(&run);
    for (uint32_t i = 0; i < N; i++) {
        CHECK_EQ(tes_is_alive(s.world, e[i]), i % 3 == 1);
        if (i % 3 == 1) check_data(&s, e[i], i);
    }
    /* Inside a run, recorded: applied when it ends. */
    tes_query_t *players = fx_query(s.world, &(tes_query_desc_t){.all = FX_IDS(s.player)});
    tes_iter_t it;
    CHECK_OK(tes_query_iter(s.world, players, &it));
    CHECK(tes_iter_next(&it));
    CHECK_OK(tes_query_despawn(s.world, players));
    CHECK_EQ(fx_stats(s.world).entity_count, N / 3);
    tes_iter_fini(&it);
    CHECK_EQ(fx_stats(s.world).entity_count, 0);
    fx_check_all_packed(s.world);
    CHECK_OK(tes_world_validate(s.world));
}

TEST(despawn_batch_with_a_stale_entry_despawns_none) {
    scene_t s = make_scene(1024);
    tes_entity_t e[50];
    CHECK_OK(tes_spawn_batch(s.world, &s.position, 1, 50, e));
    for (uint32_t i = 0; i < 50; i++)
        fill(&s, e[i], i);
    tes_entity_t dead = e[49];
    CHECK_OK(tes_despawn(s.world, dead));
    fx_snapshot_t *before = fx_snapshot_of(s.world);
    tes_entity_t list[10];
    for (int i = 0; i < 10; i++)
        list[i] = e[i * 3];
    const tes_entity_t bad[] = {dead, 0, e[0] + (1u << TES_INDEX_BITS), 0x3fffffffu};
    for (int b = 0; b < 4; b++) {
        for (int at = 0; at < 10; at += 9) { /* first and last */
            tes_entity_t saved = list[at];
            list[at] = bad[b];
            CHECK_ERR(tes_despawn_batch(s.world, list, 10), TES_ERR_STALE_ENTITY);
            FX_CHECK_UNCHANGED(before, s.world);
            list[at] = saved;
        }
    }
    for (int i = 0; i < 49; i++)
        check_data(&s, e[i], (uint32_t)i);
}

TEST(despawn_batch_with_a_duplicate_entry_despawns_none) {
    scene_t s = make_scene(1024);
    tes_entity_t e[50];
    CHECK_OK(tes_spawn_batch(s.world, &s.position, 1, 50, e));
    fx_snapshot_t *before = fx_snapshot_of(s.world);
    tes_entity_t first_last[] = {e[4], e[1], e[2], e[3], e[4]};
    tes_entity_t adjacent[] = {e[7], e[7]};
    tes_entity_t many[40];
    for (int i = 0; i < 40; i++)
        many[i] = e[i];
    many[39] = e[20];
    CHECK_ERR(tes_despawn_batch(s.world, first_last, 5), TES_ERR_DUPLICATE_ENTITY);
    FX_CHECK_UNCHANGED(before, s.world);
    CHECK_ERR(tes_despawn_batch(s.world, adjacent, 2), TES_ERR_DUPLICATE_ENTITY);
    FX_CHECK_UNCHANGED(before, s.world);
    CHECK_ERR(tes_despawn_batch(s.world, many, 40), TES_ERR_DUPLICATE_ENTITY);
    FX_CHECK_UNCHANGED(before, s.world);
    /* The same list without the duplicate works. */
    CHECK_OK(tes_despawn_batch(s.world, many, 39));
    CHECK_EQ(fx_stats(s.world).entity_count, 11);
    CHECK_OK(tes_world_validate(s.world));
}

TEST(despawn_batch_of_zero_is_a_no_op) {
    scene_t s = make_scene(1024);
    tes_entity_t e[3];
    CHECK_OK(tes_spawn_batch(s.world, &s.position, 1, 3, e));
    fx_snapshot_t *before = fx_snapshot_of(s.world);
    CHECK_OK(tes_despawn_batch(s.world, e, 0));
    CHECK_OK(tes_despawn_batch(s.world, NULL, 0));
    FX_CHECK_UNCHANGED(before, s.world);
    CHECK_ERR(tes_despawn_batch(s.world, NULL, 2), TES_ERR_INVALID_ARGUMENT);
    FX_CHECK_UNCHANGED(before, s.world);
}

typedef struct chunk_record_t {
    void *columns[3]; /* Position.x, Position.y, Id.v */
    tes_entity_t entities[1024];
    uint32_t count;
} chunk_record_t;

static uint32_t record_chunks(scene_t *s, tes_archetype_t a, chunk_record_t *out, uint32_t max) {
    tes_archetype_info_t info = fx_archetype(s->world, a);
    CHECK(info.chunk_count <= max);
    for (uint32_t k = 0; k < info.chunk_count; k++) {
        tes_chunk_info_t chunk;
        CHECK_OK(tes_chunk_info(s->world, a, k, &chunk));
        CHECK(chunk.count <= 1024);
        out[k].count = chunk.count;
        memcpy(out[k].entities, chunk.entities, chunk.count * sizeof(tes_entity_t));
        CHECK_OK(tes_chunk_column(s->world, a, k, s->position, 0, &out[k].columns[0]));
        CHECK_OK(tes_chunk_column(s->world, a, k, s->position, 1, &out[k].columns[1]));
        CHECK_OK(tes_chunk_column(s->world, a, k, s->id, 0, &out[k].columns[2]));
    }
    return info.chunk_count;
}

/* Every full chunk of `before` is one chunk of `after`: same column addresses, same entities
 * in the same slots. */
static void check_full_chunks_moved(const chunk_record_t *before, uint32_t before_count,
                                    const chunk_record_t *after, uint32_t after_count,
                                    uint32_t capacity) {
    for (uint32_t k = 0; k < before_count; k++) {
        if (before[k].count != capacity) continue;
        bool found = false;
        for (uint32_t j = 0; j < after_count && !found; j++) {
            if (after[j].columns[2] != before[k].columns[2]) continue;
            found = true;
            CHECK(after[j].columns[0] == before[k].columns[0]);
            CHECK(after[j].columns[1] == before[k].columns[1]);
            CHECK_EQ(after[j].count, before[k].count);
            CHECK(memcmp(after[j].entities, before[k].entities,
                         before[k].count * sizeof(tes_entity_t)) == 0);
        }
        if (!found) {
            harness_fail(__FILE__, __LINE__, "full chunk %u was copied, not moved", (unsigned)k);
        }
    }
}

static void check_tag_batch_moves_whole_chunks(bool add) {
    scene_t s = make_scene(1024);
    tes_component_t plain[] = {s.position, s.id};
    tes_component_t tagged[] = {s.position, s.id, s.frozen};
    tes_archetype_t from = find(&s, add ? plain : tagged, add ? 2 : 3);
    tes_archetype_t to = find(&s, add ? tagged : plain, add ? 3 : 2);
    uint32_t cap = fx_archetype(s.world, from).capacity;
    CHECK_EQ(fx_archetype(s.world, to).capacity, cap);
    uint32_t n = cap * 4 + 5;
    tes_entity_t *e = (tes_entity_t *)fx_malloc(n * sizeof *e);
    CHECK_OK(tes_spawn_batch(s.world, add ? plain : tagged, add ? 2 : 3, n, e));
    for (uint32_t i = 0; i < n; i++)
        fill(&s, e[i], i);
    /* Some random despawns first: the chunks are packed but not in spawn order. */
    for (uint32_t i = 0; i < n; i += 17)
        CHECK_OK(tes_despawn(s.world, e[i]));
    static chunk_record_t before[8], after[8];
    uint32_t before_count = record_chunks(&s, from, before, 8);
    uint32_t live = fx_archetype(s.world, from).entity_count;
    CHECK_EQ(before_count, (live + cap - 1) / cap);
    CHECK(before_count >= 3);

    if (add) {
        CHECK_OK(tes_archetype_add(s.world, from, s.frozen));
    } else {
        CHECK_OK(tes_archetype_remove(s.world, from, s.frozen));
    }
    CHECK_EQ(fx_archetype(s.world, from).entity_count, 0);
    CHECK_EQ(fx_archetype(s.world, from).chunk_count, 0);
    CHECK_EQ(fx_archetype(s.world, to).entity_count, live);
    uint32_t after_count = record_chunks(&s, to, after, 8);
    check_full_chunks_moved(before, before_count, after, after_count, cap);
    for (uint32_t i = 0; i < n; i++) {
        if (i % 17 == 0) {
            CHECK(!tes_is_alive(s.world, e[i]));
            continue;
        }
        CHECK_EQ(fx_check_location(s.world, e[i]).archetype, to);
        CHECK_EQ(fx_has(s.world, e[i], s.frozen), add);
        check_data(&s, e[i], i);
    }
    fx_check_all_packed(s.world);
    CHECK_OK(tes_world_validate(s.world));
}

TEST(archetype_add_tag_moves_whole_chunks_without_copying) {
    check_tag_batch_moves_whole_chunks(true);
}

TEST(archetype_remove_tag_moves_whole_chunks_without_copying) {
    check_tag_batch_moves_whole_chunks(false);
}

TEST(archetype_add_data_component_keeps_fields_and_zeroes_the_new_one) {
    scene_t s = make_scene(1024);
    dirty_the_pool(&s, 800);
    tes_component_t set[] = {s.position, s.player};
    enum { N = 600 };
    tes_entity_t e[N];
    spawn_batch_filled(&s, set, 2, N, e);
    tes_archetype_t from = fx_archetype_of(s.world, e[0]);
    CHECK_OK(tes_archetype_add(s.world, from, s.id));
    CHECK_EQ(fx_archetype(s.world, from).entity_count, 0);
    for (uint32_t i = 0; i < N; i++) {
        CHECK(fx_has(s.world, e[i], s.id));
        CHECK(fx_has(s.world, e[i], s.player));
        CHECK_NUM_EQ(fx_get_number(s.world, e[i], s.position, 0, 0), i * 0.5);
        CHECK_NUM_EQ(fx_get_number(s.world, e[i], s.position, 1, 0), -(double)i);
        check_id_zero(&s, e[i]);
        fx_check_location(s.world, e[i]);
    }
    fx_check_all_packed(s.world);
    CHECK_OK(tes_world_validate(s.world));
}

TEST(archetype_remove_data_component_keeps_the_others) {
    scene_t s = make_scene(1024);
    tes_component_t set[] = {s.position, s.id, s.frozen};
    enum { N = 600 };
    tes_entity_t e[N];
    spawn_batch_filled(&s, set, 3, N, e);
    tes_archetype_t from = fx_archetype_of(s.world, e[0]);
    CHECK_OK(tes_archetype_remove(s.world, from, s.position));
    CHECK_EQ(fx_archetype(s.world, from).entity_count, 0);
    for (uint32_t i = 0; i < N; i++) {
        CHECK(!fx_has(s.world, e[i], s.position));
        CHECK(fx_has(s.world, e[i], s.frozen));
        check_data(&s, e[i], i);
        fx_check_location(s.world, e[i]);
    }
    fx_check_all_packed(s.world);
    CHECK_OK(tes_world_validate(s.world));
}

static void check_onto_populated(tes_component_t (*pick)(scene_t *)) {
    scene_t s = make_scene(1024);
    tes_component_t added = pick(&s);
    tes_component_t src_set[] = {s.position, s.frozen};
    tes_component_t dst_set[] = {s.position, s.frozen, added};
    enum { N = 500, M = 123 };
    tes_entity_t src[N], dst[M];
    CHECK_OK(tes_spawn_batch(s.world, dst_set, 3, M, dst));
    CHECK_OK(tes_spawn_batch(s.world, src_set, 2, N, src));
    for (uint32_t i = 0; i < M; i++)
        fill(&s, dst[i], 10000 + i);
    for (uint32_t i = 0; i < N; i++)
        fill(&s, src[i], i);
    tes_archetype_t from = fx_archetype_of(s.world, src[0]);
    tes_archetype_t to = fx_archetype_of(s.world, dst[0]);
    CHECK_OK(tes_archetype_add(s.world, from, added));
    CHECK_EQ(fx_archetype(s.world, from).entity_count, 0);
    CHECK_EQ(fx_archetype(s.world, to).entity_count, N + M);
    for (uint32_t i = 0; i < M; i++) {
        CHECK_EQ(fx_check_location(s.world, dst[i]).archetype, to);
        check_data(&s, dst[i], 10000 + i);
    }
    for (uint32_t i = 0; i < N; i++) {
        CHECK_EQ(fx_check_location(s.world, src[i]).archetype, to);
        CHECK(fx_has(s.world, src[i], added));
        if (added == s.id) {
            check_id_zero(&s, src[i]);
            CHECK_NUM_EQ(fx_get_number(s.world, src[i], s.position, 0, 0), i * 0.5);
        } else {
            check_data(&s, src[i], i);
        }
    }
    fx_check_all_packed(s.world);
    CHECK_OK(tes_world_validate(s.world));
}

static tes_component_t pick_tag(scene_t *s) {
    return s->player;
}
static tes_component_t pick_data(scene_t *s) {
    return s->id;
}

TEST(archetype_add_tag_onto_a_populated_destination) {
    check_onto_populated(pick_tag);
}

TEST(archetype_add_data_onto_a_populated_destination) {
    check_onto_populated(pick_data);
}

TEST(archetype_remove_onto_a_populated_destination) {
    scene_t s = make_scene(1024);
    tes_component_t src_set[] = {s.position, s.id, s.player};
    tes_component_t dst_set[] = {s.position, s.id};
    enum { N = 450, M = 77 };
    tes_entity_t src[N], dst[M];
    CHECK_OK(tes_spawn_batch(s.world, dst_set, 2, M, dst));
    CHECK_OK(tes_spawn_batch(s.world, src_set, 3, N, src));
    for (uint32_t i = 0; i < M; i++)
        fill(&s, dst[i], 5000 + i);
    for (uint32_t i = 0; i < N; i++)
        fill(&s, src[i], i);
    CHECK_OK(tes_archetype_remove(s.world, fx_archetype_of(s.world, src[0]), s.player));
    tes_archetype_t to = fx_archetype_of(s.world, dst[0]);
    CHECK_EQ(fx_archetype(s.world, to).entity_count, N + M);
    for (uint32_t i = 0; i < M; i++)
        check_data(&s, dst[i], 5000 + i);
    for (uint32_t i = 0; i < N; i++) {
        CHECK_EQ(fx_check_location(s.world, src[i]).archetype, to);
        CHECK(!fx_has(s.world, src[i], s.player));
        check_data(&s, src[i], i);
    }
    fx_check_all_packed(s.world);
    CHECK_OK(tes_world_validate(s.world));
}

TEST(archetype_add_existing_component_is_a_no_op) {
    scene_t s = make_scene(1024);
    tes_component_t set[] = {s.position, s.frozen};
    tes_entity_t e[200];
    spawn_batch_filled(&s, set, 2, 200, e);
    tes_archetype_t a = fx_archetype_of(s.world, e[0]);
    fx_snapshot_t *before = fx_snapshot_of(s.world);
    CHECK_OK(tes_archetype_add(s.world, a, s.frozen));
    CHECK_OK(tes_archetype_add(s.world, a, s.position));
    CHECK_OK(tes_archetype_remove(s.world, a, s.id));
    CHECK_OK(tes_archetype_remove(s.world, a, s.player));
    FX_CHECK_UNCHANGED(before, s.world);
}

TEST(archetype_add_on_an_archetype_without_entities) {
    scene_t s = make_scene(1024);
    tes_archetype_t a = find(&s, &s.position, 1);
    CHECK_OK(tes_archetype_add(s.world, a, s.frozen));
    CHECK_OK(tes_archetype_remove(s.world, a, s.position));
    CHECK_EQ(fx_stats(s.world).entity_count, 0);
    CHECK_EQ(fx_archetype(s.world, a).entity_count, 0);
    CHECK_OK(tes_world_validate(s.world));
}

TEST(archetype_add_on_the_empty_archetype) {
    scene_t s = make_scene(1024);
    enum { N = 700 };
    tes_entity_t e[N];
    CHECK_OK(tes_spawn_batch(s.world, NULL, 0, N, e));
    CHECK_OK(tes_archetype_add(s.world, TES_EMPTY_ARCHETYPE, s.id));
    CHECK_EQ(fx_archetype(s.world, TES_EMPTY_ARCHETYPE).entity_count, 0);
    for (int i = 0; i < N; i++) {
        CHECK(fx_has(s.world, e[i], s.id));
        check_id_zero(&s, e[i]);
        fill(&s, e[i], (uint32_t)i);
    }
    CHECK_OK(tes_archetype_remove(s.world, fx_archetype_of(s.world, e[0]), s.id));
    for (int i = 0; i < N; i++)
        CHECK_EQ(fx_check_location(s.world, e[i]).archetype, TES_EMPTY_ARCHETYPE);
    fx_check_all_packed(s.world);
    CHECK_OK(tes_world_validate(s.world));
}

TEST(archetype_add_unknown_component_is_rejected) {
    scene_t s = make_scene(1024);
    tes_entity_t e[10];
    CHECK_OK(tes_spawn_batch(s.world, &s.position, 1, 10, e));
    tes_archetype_t a = fx_archetype_of(s.world, e[0]);
    fx_snapshot_t *before = fx_snapshot_of(s.world);
    CHECK_ERR(tes_archetype_add(s.world, a, s.player + 1), TES_ERR_UNKNOWN_COMPONENT);
    CHECK_ERR(tes_archetype_remove(s.world, a, UINT32_MAX), TES_ERR_UNKNOWN_COMPONENT);
    FX_CHECK_UNCHANGED(before, s.world);
}

TEST(archetype_spawn_fills_the_archetype_contiguously_with_zeroed_data) {
    scene_t s = make_scene(1024);
    dirty_the_pool(&s, 400);
    tes_component_t set[] = {s.position, s.id, s.player};
    tes_archetype_t a = find(&s, set, 3);
    uint32_t cap = fx_archetype(s.world, a).capacity;
    tes_entity_t first[3];
    CHECK_OK(tes_archetype_spawn(s.world, a, 3, first));
    uint32_t n = cap * 2 + 5;
    tes_entity_t *e = (tes_entity_t *)fx_malloc(n * sizeof *e);
    CHECK_OK(tes_archetype_spawn(s.world, a, n, e));
    unsigned char *seen = (unsigned char *)fx_malloc(1u << TES_INDEX_BITS);
    for (uint32_t i = 0; i < n; i++) {
        CHECK(e[i] != 0);
        CHECK(!seen[tes_entity_index(e[i])]);
        seen[tes_entity_index(e[i])] = 1;
        tes_location_t loc = fx_check_location(s.world, e[i]);
        CHECK_EQ(loc.archetype, a);
        CHECK_EQ(loc.chunk, (3 + i) / cap);
        CHECK_EQ(loc.row, (3 + i) % cap);
        CHECK(fx_has(s.world, e[i], s.player));
        CHECK(!fx_has(s.world, e[i], s.frozen));
        check_id_zero(&s, e[i]);
        CHECK_NUM_EQ(fx_get_number(s.world, e[i], s.position, 0, 0), 0);
    }
    CHECK_EQ(fx_stats(s.world).entity_count, n + 3);
    CHECK_EQ(fx_archetype(s.world, a).entity_count, n + 3);
    fx_check_all_packed(s.world);
    CHECK_OK(tes_world_validate(s.world));
}

TEST(archetype_spawn_into_the_empty_archetype) {
    scene_t s = make_scene(1024);
    CHECK_OK(tes_archetype_spawn(s.world, TES_EMPTY_ARCHETYPE, 500, NULL));
    CHECK_EQ(fx_stats(s.world).entity_count, 500);
    CHECK_EQ(fx_archetype(s.world, TES_EMPTY_ARCHETYPE).entity_count, 500);
    fx_check_all_packed(s.world);
}

TEST(archetype_spawn_of_zero_spawns_nothing) {
    scene_t s = make_scene(1024);
    tes_archetype_t a = find(&s, &s.position, 1);
    fx_snapshot_t *before = fx_snapshot_of(s.world);
    CHECK_OK(tes_archetype_spawn(s.world, a, 0, NULL));
    FX_CHECK_UNCHANGED(before, s.world);
}

TEST(archetype_spawn_rejects_unknown_archetype) {
    scene_t s = make_scene(1024);
    CHECK_OK(tes_spawn_batch(s.world, &s.position, 1, 10, NULL));
    fx_snapshot_t *before = fx_snapshot_of(s.world);
    tes_entity_t e[4];
    CHECK_ERR(tes_archetype_spawn(s.world, tes_archetype_count(s.world), 4, e),
              TES_ERR_UNKNOWN_ARCHETYPE);
    CHECK_ERR(tes_archetype_spawn(s.world, UINT32_MAX, 4, e), TES_ERR_UNKNOWN_ARCHETYPE);
    FX_CHECK_UNCHANGED(before, s.world);
}

TEST(archetype_spawn_past_the_entity_limit_spawns_none) {
    scene_t s = make_scene(1024);
    tes_archetype_t a = find(&s, &s.frozen, 1);
    CHECK_OK(tes_archetype_spawn(s.world, a, 10, NULL));
    fx_snapshot_t *before = fx_snapshot_of(s.world);
    CHECK_ERR(tes_archetype_spawn(s.world, a, TES_MAX_ENTITIES, NULL), TES_ERR_TOO_MANY_ENTITIES);
    CHECK_ERR(tes_archetype_spawn(s.world, a, UINT32_MAX, NULL), TES_ERR_TOO_MANY_ENTITIES);
    FX_CHECK_UNCHANGED(before, s.world);
}
