/* Reclaiming empty archetypes (tes_archetypes_reclaim): what holds no entity is freed with its
 * edges and move plans, queries forget it, its id answers UNKNOWN_ARCHETYPE and is never given
 * again; everything that lives is untouched; refused inside a run; out of memory frees nothing.
 * Written from tessera.h alone. */
#include "fixtures.h"

static const tes_field_desc_t xy_fields[] = {{"x", TES_F32, 0}, {"y", TES_F32, 0}};

enum { TAGS = 200 }; /* ids past 64 too: far edges and searched type indexes */

typedef struct scene_t {
    tes_world_t *world;
    tes_component_t position;
    tes_component_t tags[TAGS];
} scene_t;

static scene_t make_scene(const tes_world_desc_t *desc) {
    scene_t s;
    s.world = fx_world(desc);
    s.position = fx_component(s.world, "Position", xy_fields, 2);
    for (uint32_t i = 0; i < TAGS; i++) {
        char name[16];
        snprintf(name, sizeof name, "T%u", i);
        s.tags[i] = fx_tag(s.world, name);
    }
    return s;
}

static uint32_t reclaim(tes_world_t *world) {
    uint32_t n = UINT32_MAX;
    CHECK_OK(tes_archetypes_reclaim(world, &n));
    CHECK_OK(tes_world_validate(world));
    return n;
}

/* Spawns an entity of Position and the tags at `picks`, with x = its number. */
static tes_entity_t spawn_with(scene_t *s, const uint32_t *picks, uint32_t n, float x) {
    tes_component_t set[8] = {s->position};
    for (uint32_t i = 0; i < n; i++)
        set[i + 1] = s->tags[picks[i]];
    tes_entity_t e;
    CHECK_OK(tes_spawn(s->world, set, n + 1, &e));
    CHECK_OK(tes_set_number(s->world, e, s->position, 0, 0, x));
    return e;
}

/* The archetypes that exist, by asking each id. */
static uint32_t existing(const tes_world_t *world) {
    uint32_t n = 0;
    for (tes_archetype_t a = 0; a < tes_archetype_count(world); a++) {
        tes_archetype_info_t info;
        tes_result_t result = tes_archetype_info(world, a, &info);
        CHECK(result == TES_OK || result == TES_ERR_UNKNOWN_ARCHETYPE);
        n += result == TES_OK;
    }
    return n;
}

TEST(reclaim_frees_every_empty_archetype_and_keeps_the_rest) {
    fx_alloc_t *alloc = fx_alloc_new();
    tes_world_desc_t desc = {.allocator = fx_allocator(alloc)};
    scene_t s = make_scene(&desc);
    uint64_t seed = 7;
    tes_entity_t kept[50];
    float kept_x[50];
    uint32_t kept_count = 0;
    for (uint32_t round = 0; round < 2000; round++) {
        uint32_t picks[4];
        for (uint32_t k = 0; k < 4; k++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            picks[k] = (uint32_t)(seed >> 33) % TAGS;
        }
        bool distinct = picks[0] != picks[1] && picks[0] != picks[2] && picks[1] != picks[2];
        if (!distinct) continue;
        tes_entity_t e = spawn_with(&s, picks, 3, (float)round);
        bool fourth = picks[3] != picks[0] && picks[3] != picks[1] && picks[3] != picks[2];
        if (fourth) CHECK_OK(tes_add(s.world, e, s.tags[picks[3]]));
        if (round % 40 == 0 && kept_count < 50) {
            kept_x[kept_count] = (float)round;
            kept[kept_count++] = e; /* lives on, in its archetype */
        } else {
            CHECK_OK(tes_despawn(s.world, e));
        }
    }
    tes_world_stats_t before = fx_stats(s.world);
    CHECK(before.archetype_count > 1000);
    CHECK_EQ(existing(s.world), before.archetype_count);
    uint32_t reclaimed = reclaim(s.world);
    tes_world_stats_t after = fx_stats(s.world);
    /* What is left: the empty set's archetype and one per kept entity's archetype at most. */
    CHECK(after.archetype_count <= 1 + kept_count);
    CHECK_EQ(after.archetype_count + reclaimed, before.archetype_count);
    CHECK_EQ(existing(s.world), after.archetype_count);
    CHECK_EQ(tes_archetype_count(s.world), tes_archetype_count(s.world)); /* ids: a bound */
    /* Each held its struct, set, columns, move plans and edges (about 850 bytes measured); the
     * kept entities' chunks (64 KiB blocks) are most of what is left. */
    CHECK(before.bytes_allocated - after.bytes_allocated >= (uint64_t)reclaimed * 256);
    CHECK_EQ(after.bytes_allocated, alloc->live_bytes);
    for (uint32_t i = 0; i < kept_count; i++) {
        double x;
        CHECK_OK(tes_get_number(s.world, kept[i], s.position, 0, 0, &x));
        CHECK_EQ(x, (double)kept_x[i]);
    }
    CHECK_EQ(reclaim(s.world), 0); /* nothing more to free */
}

TEST(a_reclaimed_id_is_unknown_and_never_given_again) {
    scene_t s = make_scene(NULL);
    tes_component_t set[] = {s.position, s.tags[3]};
    tes_archetype_t old;
    CHECK_OK(tes_archetype_find(s.world, set, 2, &old));
    uint32_t bound = tes_archetype_count(s.world);
    CHECK_EQ(reclaim(s.world), 1);
    tes_archetype_info_t info;
    tes_chunk_info_t chunk;
    tes_entity_t e;
    CHECK_EQ(tes_archetype_info(s.world, old, &info), TES_ERR_UNKNOWN_ARCHETYPE);
    CHECK_EQ(tes_chunk_info(s.world, old, 0, &chunk), TES_ERR_UNKNOWN_ARCHETYPE);
    CHECK_EQ(tes_archetype_spawn(s.world, old, 1, &e), TES_ERR_UNKNOWN_ARCHETYPE);
    CHECK_EQ(tes_archetype_add(s.world, old, s.tags[4]), TES_ERR_UNKNOWN_ARCHETYPE);
    CHECK_EQ(fx_stats(s.world).entity_count, 0);
    tes_archetype_t again;
    CHECK_OK(tes_archetype_find(s.world, set, 2, &again));
    CHECK(again != old && again >= bound);
    CHECK_OK(tes_spawn(s.world, set, 2, &e));
    CHECK_EQ(fx_archetype_of(s.world, e), again);
    CHECK_OK(tes_world_validate(s.world));
}

/* The empty set's archetype stays: every spawn passes through it. */
TEST(the_empty_archetype_is_never_reclaimed) {
    scene_t s = make_scene(NULL);
    CHECK_EQ(reclaim(s.world), 0);
    tes_archetype_info_t info;
    CHECK_OK(tes_archetype_info(s.world, TES_EMPTY_ARCHETYPE, &info));
    tes_entity_t e;
    CHECK_OK(tes_spawn(s.world, NULL, 0, &e));
    CHECK_EQ(fx_archetype_of(s.world, e), TES_EMPTY_ARCHETYPE);
}

/* Queries made before drop what was reclaimed and still find what is made after, once each. */
TEST(queries_forget_reclaimed_archetypes_and_match_new_ones) {
    scene_t s = make_scene(NULL);
    tes_query_t *all = fx_query(s.world, &(tes_query_desc_t){.all = &s.position, .all_count = 1});
    tes_query_t *changed =
        fx_query(s.world, &(tes_query_desc_t){.changed = &s.position, .changed_count = 1});
    CHECK_EQ(fx_run_count(s.world, changed), 0);
    tes_entity_t gone[10], live[10];
    for (uint32_t i = 0; i < 10; i++) {
        uint32_t a = i, b = 10 + i;
        gone[i] = spawn_with(&s, &a, 1, 1.0f);
        live[i] = spawn_with(&s, &b, 1, 2.0f);
    }
    /* Both have matched the archetypes about to go. */
    CHECK_EQ(fx_run_count(s.world, all), 20);
    CHECK_EQ(fx_run_count(s.world, changed), 20);
    for (uint32_t i = 0; i < 10; i++)
        CHECK_OK(tes_despawn(s.world, gone[i]));
    CHECK_OK(tes_set_number(s.world, live[0], s.position, 0, 0, 5.0));
    CHECK_EQ(reclaim(s.world), 10);
    CHECK_EQ(fx_run_count(s.world, all), 10);
    CHECK_EQ(fx_run_count(s.world, changed), 1);
    /* The same sets again: new archetypes, which both queries find. */
    for (uint32_t i = 0; i < 10; i++) {
        uint32_t a = i;
        gone[i] = spawn_with(&s, &a, 1, 3.0f);
    }
    CHECK_EQ(fx_run_count(s.world, all), 20);
    CHECK_EQ(fx_run_count(s.world, changed), 10); /* the new ones' values were set */
    CHECK_OK(tes_set_number(s.world, live[4], s.position, 0, 0, 9.0));
    CHECK_EQ(fx_run_count(s.world, changed), 1);
    /* A query made after the reclaim walks the ids with holes in them. */
    tes_query_t *late = fx_query(s.world, &(tes_query_desc_t){.all = &s.position, .all_count = 1});
    CHECK_EQ(fx_run_count(s.world, late), 20);
    CHECK_OK(tes_world_validate(s.world));
}

/* Edges into reclaimed archetypes go, low ids (flat edges) and high ids (far tables, where a
 * deletion shifts the probe cluster behind it) alike; the edges that stay still lead where
 * they did. */
TEST(edges_into_reclaimed_archetypes_go_and_the_rest_still_work) {
    scene_t s = make_scene(NULL);
    tes_entity_t mover = spawn_with(&s, NULL, 0, 1.0f);
    tes_entity_t holders[TAGS];
    uint32_t held = 0;
    for (uint32_t t = 0; t < TAGS; t++) {
        CHECK_OK(tes_add(s.world, mover, s.tags[t]));
        CHECK_OK(tes_remove(s.world, mover, s.tags[t]));
        /* Every third neighbour keeps an entity: its archetype and both edges stay. */
        if (t % 3 == 0) holders[held++] = spawn_with(&s, &t, 1, (float)t);
    }
    uint32_t edges = fx_stats(s.world).edge_count;
    CHECK(edges >= 2 * TAGS);
    CHECK_EQ(reclaim(s.world), TAGS - held);
    CHECK_EQ(fx_stats(s.world).edge_count, 2 * held); /* {P} <-> {P, Tt} for the held */
    tes_archetype_t base = fx_archetype_of(s.world, mover);
    for (uint32_t t = 0; t < TAGS; t++) {
        CHECK_OK(tes_add(s.world, mover, s.tags[t]));
        if (t % 3 == 0)
            CHECK_EQ(fx_archetype_of(s.world, mover), fx_archetype_of(s.world, holders[t / 3]));
        CHECK_OK(tes_remove(s.world, mover, s.tags[t]));
        CHECK_EQ(fx_archetype_of(s.world, mover), base);
    }
    CHECK_EQ(fx_stats(s.world).edge_count, edges);
    CHECK_OK(tes_world_validate(s.world));
}

/* Far edges whose ids share a home slot (ids 16 apart, in a table of 16 slots) form one probe
 * cluster: deleting from its middle must leave the entries behind findable. */
TEST(far_edge_clusters_stay_findable_after_deletions) {
    scene_t s = make_scene(NULL);
    tes_entity_t mover = spawn_with(&s, NULL, 0, 1.0f);
    uint32_t picks[7], n = 0;
    for (uint32_t t = 0; t < TAGS && n < 7; t++) {
        if (s.tags[t] >= 64 && (s.tags[t] - 64) % 16 == 0) picks[n++] = t;
    }
    CHECK_EQ(n, 7);
    tes_entity_t holders[7];
    for (uint32_t k = 0; k < n; k++) {
        CHECK_OK(tes_add(s.world, mover, s.tags[picks[k]]));
        CHECK_OK(tes_remove(s.world, mover, s.tags[picks[k]]));
        if (k % 2) holders[k] = spawn_with(&s, &picks[k], 1, 0.0f); /* odd ones stay */
    }
    CHECK_EQ(reclaim(s.world), 4); /* validate: every far edge left is findable from its home */
    tes_archetype_t base = fx_archetype_of(s.world, mover);
    for (uint32_t k = 0; k < n; k++) {
        CHECK_OK(tes_add(s.world, mover, s.tags[picks[k]]));
        if (k % 2) CHECK_EQ(fx_archetype_of(s.world, mover), fx_archetype_of(s.world, holders[k]));
        CHECK_OK(tes_remove(s.world, mover, s.tags[picks[k]]));
        CHECK_EQ(fx_archetype_of(s.world, mover), base);
    }
    CHECK_OK(tes_world_validate(s.world));
}

/* The latest spawned list's archetype (the spawn cache) was reclaimed: the list spawns again. */
TEST(spawning_the_latest_list_again_after_its_archetype_went) {
    scene_t s = make_scene(NULL);
    tes_component_t set[] = {s.position, s.tags[70]};
    tes_entity_t e;
    CHECK_OK(tes_spawn(s.world, set, 2, &e));
    CHECK_OK(tes_despawn(s.world, e));
    CHECK_EQ(reclaim(s.world), 1);
    CHECK_OK(tes_spawn(s.world, set, 2, &e));
    tes_archetype_info_t info = fx_archetype(s.world, fx_archetype_of(s.world, e));
    CHECK_EQ(info.component_count, 2);
    CHECK_EQ(info.entity_count, 1);
    CHECK_OK(tes_world_validate(s.world));
}

TEST(reclaim_is_refused_inside_a_run_and_changes_nothing) {
    scene_t s = make_scene(NULL);
    uint32_t t = 5;
    tes_entity_t e = spawn_with(&s, &t, 1, 1.0f);
    tes_entity_t other = spawn_with(&s, NULL, 0, 2.0f);
    CHECK_OK(tes_despawn(s.world, e));
    tes_query_t *q = fx_query(s.world, &(tes_query_desc_t){.all = &s.position, .all_count = 1});
    uint32_t before = fx_stats(s.world).archetype_count;
    tes_iter_t it;
    CHECK_OK(tes_query_iter(s.world, q, &it));
    uint32_t n = 7;
    CHECK_EQ(tes_archetypes_reclaim(s.world, &n), TES_ERR_INVALID_ARGUMENT);
    CHECK_EQ(n, 7);
    CHECK_EQ(fx_stats(s.world).archetype_count, before);
    while (tes_iter_next(&it)) {
    }
    CHECK_EQ(reclaim(s.world), 1);
    tes_archetype_info_t info = fx_archetype(s.world, fx_archetype_of(s.world, other));
    CHECK_EQ(info.component_count, 1); /* {Position}, kept */
    CHECK_EQ(info.entity_count, 1);
    CHECK_EQ(tes_archetypes_reclaim(NULL, NULL), TES_ERR_INVALID_ARGUMENT);
}

TEST(reclaim_out_of_memory_frees_nothing) {
    fx_alloc_t *alloc = fx_alloc_new();
    tes_world_desc_t desc = {.allocator = fx_allocator(alloc)};
    scene_t s = make_scene(&desc);
    uint32_t t = 8;
    CHECK_OK(tes_despawn(s.world, spawn_with(&s, &t, 1, 1.0f)));
    tes_world_stats_t before = fx_stats(s.world);
    alloc->fail_after = (int64_t)alloc->allocs; /* the next allocation fails */
    uint32_t n = 7;
    CHECK_EQ(tes_archetypes_reclaim(s.world, &n), TES_ERR_OUT_OF_MEMORY);
    CHECK_EQ(n, 7);
    alloc->fail_after = -1;
    tes_world_stats_t after = fx_stats(s.world);
    CHECK_EQ(after.archetype_count, before.archetype_count);
    CHECK_EQ(after.edge_count, before.edge_count);
    CHECK_EQ(after.bytes_allocated, before.bytes_allocated);
    CHECK_OK(tes_world_validate(s.world));
    CHECK_EQ(reclaim(s.world), 1);
}

/* A snapshot of a world with reclaimed ids restores to the same world: its snapshot is the
 * same bytes. */
TEST(a_snapshot_after_reclaiming_restores_the_same_world) {
    scene_t s = make_scene(NULL);
    tes_entity_t e[12];
    for (uint32_t i = 0; i < 12; i++)
        e[i] = spawn_with(&s, &i, 1, (float)i);
    for (uint32_t i = 0; i < 12; i += 2)
        CHECK_OK(tes_despawn(s.world, e[i]));
    CHECK_EQ(reclaim(s.world), 6);
    const uint8_t *bytes;
    uint32_t size;
    CHECK_OK(tes_snapshot(s.world, &bytes, &size));
    uint8_t *copy = (uint8_t *)fx_malloc(size);
    memcpy(copy, bytes, size);
    tes_world_t *restored;
    CHECK_OK(tes_world_restore(NULL, copy, size, &restored));
    harness_defer(fx_destroy_world, restored);
    CHECK_OK(tes_world_validate(restored));
    const uint8_t *again;
    uint32_t again_size;
    CHECK_OK(tes_snapshot(restored, &again, &again_size));
    CHECK_EQ(again_size, size);
    CHECK(memcmp(again, copy, size) == 0);
    for (uint32_t i = 1; i < 12; i += 2) {
        double x;
        CHECK_OK(tes_get_number(restored, e[i], s.position, 0, 0, &x));
        CHECK_EQ(x, (double)i);
    }
}
