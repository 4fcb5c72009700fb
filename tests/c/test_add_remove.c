/* Adding and removing components on one entity: moves between archetypes, data kept or zeroed,
 * swap-remove of the hole left behind, no-op cases, has. */
#include "fixtures.h"

static const tes_field_desc_t position_fields[] = {{"x", TES_F32, 0}, {"y", TES_F32, 0}};
static const tes_field_desc_t stats_fields[] = {
    {"hp", TES_I32, 0}, {"slots", TES_U8, 7}, {"speed", TES_F64, 0}, {"marks", TES_I16, 3}};

typedef struct scene_t {
    tes_world_t *world;
    tes_component_t position, stats, frozen, player;
} scene_t;

static scene_t make_scene(const tes_world_desc_t *desc) {
    scene_t s;
    s.world = fx_world(desc);
    s.position = fx_component(s.world, "Position", position_fields, 2);
    s.stats = fx_component(s.world, "Stats", stats_fields, 4);
    s.frozen = fx_tag(s.world, "Frozen");
    s.player = fx_tag(s.world, "Player");
    return s;
}

/* Deterministic distinct values per entity seed k. */
static void fill(scene_t *s, tes_entity_t e, int k) {
    if (fx_has(s->world, e, s->position)) {
        CHECK_OK(tes_set_number(s->world, e, s->position, 0, 0, k + 0.25));
        CHECK_OK(tes_set_number(s->world, e, s->position, 1, 0, -k - 0.5));
    }
    if (fx_has(s->world, e, s->stats)) {
        CHECK_OK(tes_set_number(s->world, e, s->stats, 0, 0, k * 1000 - 7));
        for (uint32_t i = 0; i < 7; i++) {
            CHECK_OK(tes_set_number(s->world, e, s->stats, 1, i, (k + i) % 256));
        }
        CHECK_OK(tes_set_number(s->world, e, s->stats, 2, 0, k / 3.0));
        for (uint32_t i = 0; i < 3; i++) {
            CHECK_OK(tes_set_number(s->world, e, s->stats, 3, i, -(k % 1000) - (int)i));
        }
    }
}

/* Spawns n entities of set into e, filled with the seeds first, first + 1, ... */
static void spawn_filled(scene_t *s, const tes_component_t *set, uint32_t count, tes_entity_t *e,
                         int n, int first) {
    for (int i = 0; i < n; i++) {
        CHECK_OK(tes_spawn(s->world, set, count, &e[i]));
        fill(s, e[i], first + i);
    }
}

static void check_position(scene_t *s, tes_entity_t e, int k) {
    CHECK_NUM_EQ(fx_get_number(s->world, e, s->position, 0, 0), k + 0.25);
    CHECK_NUM_EQ(fx_get_number(s->world, e, s->position, 1, 0), -k - 0.5);
}

static void check_stats(scene_t *s, tes_entity_t e, int k) {
    CHECK_NUM_EQ(fx_get_number(s->world, e, s->stats, 0, 0), k * 1000 - 7);
    for (uint32_t i = 0; i < 7; i++) {
        CHECK_NUM_EQ(fx_get_number(s->world, e, s->stats, 1, i), (k + i) % 256);
    }
    CHECK_NUM_EQ(fx_get_number(s->world, e, s->stats, 2, 0), k / 3.0);
    for (uint32_t i = 0; i < 3; i++) {
        CHECK_NUM_EQ(fx_get_number(s->world, e, s->stats, 3, i), -(k % 1000) - (int)i);
    }
}

static void check_stats_zero(scene_t *s, tes_entity_t e) {
    unsigned char bytes[16];
    static const unsigned char zero[16];
    for (uint32_t f = 0; f < 4; f++) {
        tes_field_info_t info;
        CHECK_OK(tes_field_info(s->world, s->stats, f, &info));
        CHECK_OK(tes_get(s->world, e, s->stats, f, bytes, info.bytes));
        CHECK(memcmp(bytes, zero, info.bytes) == 0);
    }
}

TEST(add_moves_entity_to_the_archetype_with_the_component) {
    scene_t s = make_scene(NULL);
    tes_entity_t e;
    CHECK_OK(tes_spawn(s.world, &s.position, 1, &e));
    tes_archetype_t from = fx_archetype_of(s.world, e);
    CHECK_OK(tes_add(s.world, e, s.stats));
    tes_archetype_t to = fx_check_location(s.world, e).archetype;
    CHECK(to != from);
    tes_component_t both[] = {s.stats, s.position};
    tes_archetype_t expected;
    CHECK_OK(tes_archetype_find(s.world, both, 2, &expected));
    CHECK_EQ(to, expected);
    CHECK(fx_has(s.world, e, s.position));
    CHECK(fx_has(s.world, e, s.stats));
    CHECK_EQ(fx_archetype(s.world, from).entity_count, 0);
    CHECK_EQ(fx_archetype(s.world, to).entity_count, 1);
    CHECK_OK(tes_world_validate(s.world));
}

TEST(add_keeps_every_field_of_kept_components) {
    scene_t s = make_scene(NULL);
    tes_component_t set[] = {s.position, s.stats};
    tes_entity_t e[10];
    spawn_filled(&s, set, 2, e, 10, 1);
    for (int i = 0; i < 10; i += 2)
        CHECK_OK(tes_add(s.world, e[i], s.frozen));
    for (int i = 0; i < 10; i += 3)
        CHECK_OK(tes_add(s.world, e[i], s.player));
    for (int i = 0; i < 10; i++) {
        check_position(&s, e[i], i + 1);
        check_stats(&s, e[i], i + 1);
        CHECK_EQ(fx_has(s.world, e[i], s.frozen), i % 2 == 0);
        CHECK_EQ(fx_has(s.world, e[i], s.player), i % 3 == 0);
    }
    fx_check_all_packed(s.world);
}

TEST(add_zeroes_the_new_component_data) {
    scene_t s = make_scene(NULL);
    tes_component_t set[] = {s.position, s.stats};
    /* Dirty the {Position, Stats} chunk slots first, then empty them again. */
    tes_entity_t dirty[8];
    spawn_filled(&s, set, 2, dirty, 8, 50);
    for (int i = 0; i < 8; i++)
        CHECK_OK(tes_despawn(s.world, dirty[i]));
    tes_entity_t e[8];
    for (int i = 0; i < 8; i++) {
        CHECK_OK(tes_spawn(s.world, &s.position, 1, &e[i]));
        fill(&s, e[i], i);
        CHECK_OK(tes_add(s.world, e[i], s.stats));
        check_stats_zero(&s, e[i]);
        check_position(&s, e[i], i);
    }
}

TEST(remove_keeps_data_of_remaining_components) {
    scene_t s = make_scene(NULL);
    tes_component_t set[] = {s.position, s.stats, s.frozen};
    tes_entity_t e[12];
    spawn_filled(&s, set, 3, e, 12, 100);
    for (int i = 0; i < 12; i += 2)
        CHECK_OK(tes_remove(s.world, e[i], s.position));
    for (int i = 0; i < 12; i += 3)
        CHECK_OK(tes_remove(s.world, e[i], s.frozen));
    for (int i = 0; i < 12; i++) {
        CHECK_EQ(fx_has(s.world, e[i], s.position), i % 2 != 0);
        CHECK_EQ(fx_has(s.world, e[i], s.frozen), i % 3 != 0);
        CHECK(fx_has(s.world, e[i], s.stats));
        check_stats(&s, e[i], 100 + i);
        if (i % 2) check_position(&s, e[i], 100 + i);
    }
    fx_check_all_packed(s.world);
    CHECK_OK(tes_world_validate(s.world));
}

TEST(remove_then_add_back_zeroes_the_data) {
    scene_t s = make_scene(NULL);
    tes_component_t set[] = {s.position, s.stats};
    tes_entity_t e;
    CHECK_OK(tes_spawn(s.world, set, 2, &e));
    fill(&s, e, 9);
    CHECK_OK(tes_remove(s.world, e, s.stats));
    CHECK_OK(tes_add(s.world, e, s.stats));
    check_stats_zero(&s, e);
    check_position(&s, e, 9);
}

TEST(add_existing_component_is_a_no_op) {
    scene_t s = make_scene(NULL);
    tes_component_t set[] = {s.position, s.stats, s.frozen};
    tes_entity_t e[3];
    spawn_filled(&s, set, 3, e, 3, 0);
    fx_snapshot_t *before = fx_snapshot_of(s.world);
    CHECK_OK(tes_add(s.world, e[0], s.position));
    CHECK_OK(tes_add(s.world, e[1], s.stats));
    CHECK_OK(tes_add(s.world, e[2], s.frozen));
    FX_CHECK_UNCHANGED(before, s.world);
    check_stats(&s, e[1], 1);
}

TEST(remove_absent_component_is_a_no_op) {
    scene_t s = make_scene(NULL);
    tes_entity_t e[2];
    CHECK_OK(tes_spawn(s.world, &s.position, 1, &e[0]));
    CHECK_OK(tes_spawn(s.world, NULL, 0, &e[1]));
    fill(&s, e[0], 4);
    fx_snapshot_t *before = fx_snapshot_of(s.world);
    CHECK_OK(tes_remove(s.world, e[0], s.stats));
    CHECK_OK(tes_remove(s.world, e[0], s.frozen));
    CHECK_OK(tes_remove(s.world, e[1], s.position));
    CHECK_OK(tes_remove(s.world, e[1], s.player));
    FX_CHECK_UNCHANGED(before, s.world);
}

TEST(remove_last_component_goes_to_the_empty_archetype) {
    scene_t s = make_scene(NULL);
    tes_entity_t e;
    CHECK_OK(tes_spawn(s.world, &s.frozen, 1, &e));
    CHECK_OK(tes_remove(s.world, e, s.frozen));
    CHECK_EQ(fx_check_location(s.world, e).archetype, TES_EMPTY_ARCHETYPE);
    CHECK(tes_is_alive(s.world, e));
    CHECK_OK(tes_add(s.world, e, s.position));
    CHECK_NUM_EQ(fx_get_number(s.world, e, s.position, 0, 0), 0);
    CHECK_OK(tes_world_validate(s.world));
}

TEST(add_and_remove_round_trip_returns_to_the_same_archetype) {
    scene_t s = make_scene(NULL);
    tes_component_t set[] = {s.position, s.player};
    tes_entity_t e;
    CHECK_OK(tes_spawn(s.world, set, 2, &e));
    fill(&s, e, 3);
    tes_archetype_t home = fx_archetype_of(s.world, e);
    CHECK_OK(tes_add(s.world, e, s.frozen));
    CHECK_OK(tes_add(s.world, e, s.stats));
    CHECK_OK(tes_remove(s.world, e, s.frozen));
    CHECK_OK(tes_remove(s.world, e, s.stats));
    CHECK_EQ(fx_archetype_of(s.world, e), home);
    check_position(&s, e, 3);
}

/* The entity that fills the hole keeps its data and its location points at its new slot. */
static void check_hole_filled(scene_t *s, tes_entity_t *e, int n, int victim,
                              tes_result_t (*act)(scene_t *, tes_entity_t)) {
    tes_location_t last_before = fx_check_location(s->world, e[n - 1]);
    tes_location_t victim_before = fx_check_location(s->world, e[victim]);
    CHECK_EQ(last_before.chunk, victim_before.chunk);
    CHECK_OK(act(s, e[victim]));
    tes_location_t last_after = fx_check_location(s->world, e[n - 1]);
    CHECK_EQ(last_after.archetype, victim_before.archetype);
    CHECK_EQ(last_after.chunk, victim_before.chunk);
    CHECK_EQ(last_after.row, victim_before.row);
    tes_chunk_info_t chunk;
    CHECK_OK(tes_chunk_info(s->world, last_after.archetype, last_after.chunk, &chunk));
    CHECK_EQ(chunk.entities[last_after.row], e[n - 1]);
    CHECK_EQ(chunk.count, (uint32_t)(n - 1));
    for (int i = 0; i < n; i++) {
        if (i == victim) continue;
        fx_check_location(s->world, e[i]);
        check_position(s, e[i], i);
        check_stats(s, e[i], i);
    }
    fx_check_all_packed(s->world);
}

static tes_result_t act_add(scene_t *s, tes_entity_t e) {
    return tes_add(s->world, e, s->frozen);
}
static tes_result_t act_remove(scene_t *s, tes_entity_t e) {
    return tes_remove(s->world, e, s->position);
}
static tes_result_t act_despawn(scene_t *s, tes_entity_t e) {
    return tes_despawn(s->world, e);
}

TEST(swap_remove_filler_keeps_data_and_location_on_add) {
    scene_t s = make_scene(NULL);
    tes_component_t set[] = {s.position, s.stats};
    tes_entity_t e[6];
    spawn_filled(&s, set, 2, e, 6, 0);
    check_hole_filled(&s, e, 6, 1, act_add);
    check_position(&s, e[1], 1);
    check_stats(&s, e[1], 1);
}

TEST(swap_remove_filler_keeps_data_and_location_on_remove) {
    scene_t s = make_scene(NULL);
    tes_component_t set[] = {s.position, s.stats};
    tes_entity_t e[6];
    spawn_filled(&s, set, 2, e, 6, 0);
    tes_entity_t victim = e[2];
    check_hole_filled(&s, e, 6, 2, act_remove);
    check_stats(&s, victim, 2);
}

TEST(swap_remove_filler_keeps_data_and_location_on_despawn) {
    scene_t s = make_scene(NULL);
    tes_component_t set[] = {s.position, s.stats};
    tes_entity_t e[6];
    spawn_filled(&s, set, 2, e, 6, 0);
    check_hole_filled(&s, e, 6, 0, act_despawn);
}

TEST(removing_the_last_slot_moves_nobody) {
    scene_t s = make_scene(NULL);
    tes_component_t set[] = {s.position, s.stats};
    tes_entity_t e[4];
    spawn_filled(&s, set, 2, e, 4, 0);
    tes_location_t before[3];
    for (int i = 0; i < 3; i++)
        before[i] = fx_check_location(s.world, e[i]);
    CHECK_OK(tes_add(s.world, e[3], s.frozen));
    for (int i = 0; i < 3; i++) {
        tes_location_t after = fx_check_location(s.world, e[i]);
        CHECK_EQ(after.row, before[i].row);
        CHECK_EQ(after.chunk, before[i].chunk);
        check_stats(&s, e[i], i);
    }
    check_stats(&s, e[3], 3);
}

TEST(has_reports_components_and_tags) {
    scene_t s = make_scene(NULL);
    tes_component_t set[] = {s.stats, s.player};
    tes_entity_t e;
    CHECK_OK(tes_spawn(s.world, set, 2, &e));
    CHECK(!fx_has(s.world, e, s.position));
    CHECK(fx_has(s.world, e, s.stats));
    CHECK(!fx_has(s.world, e, s.frozen));
    CHECK(fx_has(s.world, e, s.player));
    bool has = true;
    CHECK_OK(tes_has(s.world, e, s.frozen, &has));
    CHECK(!has);
    has = false;
    CHECK_OK(tes_has(s.world, e, s.player, &has));
    CHECK(has);
}

TEST(unknown_component_is_rejected_by_add_remove_has) {
    scene_t s = make_scene(NULL);
    tes_entity_t e;
    CHECK_OK(tes_spawn(s.world, &s.position, 1, &e));
    fx_snapshot_t *before = fx_snapshot_of(s.world);
    bool has;
    const tes_component_t bad[] = {s.player + 1, 4096, UINT32_MAX};
    for (int i = 0; i < 3; i++) {
        CHECK_ERR(tes_add(s.world, e, bad[i]), TES_ERR_UNKNOWN_COMPONENT);
        CHECK_ERR(tes_remove(s.world, e, bad[i]), TES_ERR_UNKNOWN_COMPONENT);
        CHECK_ERR(tes_has(s.world, e, bad[i], &has), TES_ERR_UNKNOWN_COMPONENT);
    }
    CHECK_ERR(tes_has(s.world, e, s.position, NULL), TES_ERR_INVALID_ARGUMENT);
    FX_CHECK_UNCHANGED(before, s.world);
}

TEST(moves_across_many_chunks_keep_everything_consistent) {
    tes_world_desc_t desc = {.chunk_bytes = 1024};
    scene_t s = make_scene(&desc);
    tes_component_t set[] = {s.position, s.stats};
    enum { N = 500 };
    tes_entity_t e[N];
    CHECK_OK(tes_spawn_batch(s.world, set, 2, N, e));
    for (int i = 0; i < N; i++)
        fill(&s, e[i], i);
    fx_rng_t rng = {99};
    for (int step = 0; step < 3000; step++) {
        int i = (int)fx_rng_below(&rng, N);
        switch (fx_rng_below(&rng, 4)) {
        case 0:
            CHECK_OK(tes_add(s.world, e[i], s.frozen));
            break;
        case 1:
            CHECK_OK(tes_remove(s.world, e[i], s.frozen));
            break;
        case 2:
            CHECK_OK(tes_add(s.world, e[i], s.player));
            break;
        default:
            CHECK_OK(tes_remove(s.world, e[i], s.player));
            break;
        }
    }
    for (int i = 0; i < N; i++) {
        fx_check_location(s.world, e[i]);
        check_position(&s, e[i], i);
        check_stats(&s, e[i], i);
    }
    fx_check_all_packed(s.world);
    CHECK_OK(tes_world_validate(s.world));
}
