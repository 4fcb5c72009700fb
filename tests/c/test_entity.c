/* Entities: spawn, despawn, handles, stale detection, generations, FIFO slot recycling. */
#include "fixtures.h"

static const tes_field_desc_t position_fields[] = {{"x", TES_F32, 0}, {"y", TES_F32, 0}};
static const tes_field_desc_t id_fields[] = {{"v", TES_U32, 0}};

#define HANDLE_LIMIT (1u << (TES_INDEX_BITS + TES_GENERATION_BITS))

/* Every call that takes an entity rejects `h` with TES_ERR_STALE_ENTITY and changes nothing.
 * `data` is a data component (field 0 is a 4-byte scalar), `tag` a tag. */
static void check_rejected_everywhere(tes_world_t *world, tes_entity_t h, tes_component_t data,
                                      tes_component_t tag) {
    fx_snapshot_t *before = fx_snapshot_of(world);
    bool has;
    float value = 1.0f;
    double number;
    void *ptr;
    tes_location_t loc;
    CHECK(!tes_is_alive(world, h));
    CHECK_ERR(tes_despawn(world, h), TES_ERR_STALE_ENTITY);
    CHECK_ERR(tes_add(world, h, tag), TES_ERR_STALE_ENTITY);
    CHECK_ERR(tes_add(world, h, data), TES_ERR_STALE_ENTITY);
    CHECK_ERR(tes_remove(world, h, data), TES_ERR_STALE_ENTITY);
    CHECK_ERR(tes_remove(world, h, tag), TES_ERR_STALE_ENTITY);
    CHECK_ERR(tes_has(world, h, data, &has), TES_ERR_STALE_ENTITY);
    CHECK_ERR(tes_get(world, h, data, 0, &value, sizeof value), TES_ERR_STALE_ENTITY);
    CHECK_ERR(tes_set(world, h, data, 0, &value, sizeof value), TES_ERR_STALE_ENTITY);
    CHECK_ERR(tes_get_number(world, h, data, 0, 0, &number), TES_ERR_STALE_ENTITY);
    CHECK_ERR(tes_set_number(world, h, data, 0, 0, 42.0), TES_ERR_STALE_ENTITY);
    CHECK_ERR(tes_field_ptr(world, h, data, 0, &ptr), TES_ERR_STALE_ENTITY);
    CHECK_ERR(tes_location(world, h, &loc), TES_ERR_STALE_ENTITY);
    CHECK_ERR(tes_despawn_batch(world, &h, 1), TES_ERR_STALE_ENTITY);
    FX_CHECK_UNCHANGED(before, world);
}

TEST(spawn_empty_entity_lives_in_empty_archetype) {
    tes_world_t *world = fx_world(NULL);
    tes_entity_t e = 0;
    CHECK_OK(tes_spawn(world, NULL, 0, &e));
    CHECK(e != 0);
    CHECK(tes_is_alive(world, e));
    tes_location_t loc = fx_check_location(world, e);
    CHECK_EQ(loc.archetype, TES_EMPTY_ARCHETYPE);
    CHECK_EQ(fx_archetype(world, TES_EMPTY_ARCHETYPE).entity_count, 1);
    CHECK_EQ(fx_stats(world).entity_count, 1);
    CHECK_OK(tes_world_validate(world));
}

TEST(spawn_gives_distinct_nonzero_handles_below_2_30) {
    tes_world_t *world = fx_world(NULL);
    tes_component_t p = fx_component(world, "Position", position_fields, 2);
    enum { N = 20000 };
    tes_entity_t *e = (tes_entity_t *)fx_malloc(N * sizeof *e);
    unsigned char *seen = (unsigned char *)fx_malloc(1u << TES_INDEX_BITS);
    for (uint32_t i = 0; i < N; i++) {
        CHECK_OK(tes_spawn(world, i % 2 ? &p : NULL, i % 2, &e[i]));
        CHECK(e[i] != 0);
        CHECK(e[i] < HANDLE_LIMIT);
        CHECK(tes_entity_index(e[i]) != 0); /* slot 0 is reserved */
        CHECK(!seen[tes_entity_index(e[i])]);
        seen[tes_entity_index(e[i])] = 1;
    }
    for (uint32_t i = 0; i < N; i++)
        CHECK(tes_is_alive(world, e[i]));
    CHECK_EQ(fx_stats(world).entity_count, N);
}

TEST(spawn_into_set_in_any_order_gives_one_archetype) {
    tes_world_t *world = fx_world(NULL);
    tes_component_t p = fx_component(world, "Position", position_fields, 2);
    tes_component_t id = fx_component(world, "Id", id_fields, 1);
    tes_component_t t = fx_tag(world, "Frozen");
    tes_component_t orders[6][3] = {{p, id, t}, {p, t, id}, {id, p, t},
                                    {id, t, p}, {t, p, id}, {t, id, p}};
    tes_archetype_t first = 0;
    for (int i = 0; i < 6; i++) {
        tes_entity_t e;
        CHECK_OK(tes_spawn(world, orders[i], 3, &e));
        tes_archetype_t a = fx_check_location(world, e).archetype;
        if (i == 0) first = a;
        CHECK_EQ(a, first);
        CHECK(fx_has(world, e, p));
        CHECK(fx_has(world, e, id));
        CHECK(fx_has(world, e, t));
    }
    CHECK(first != TES_EMPTY_ARCHETYPE);
    CHECK_EQ(tes_archetype_count(world), 2);
    tes_archetype_info_t info = fx_archetype(world, first);
    CHECK_EQ(info.entity_count, 6);
    CHECK_EQ(info.component_count, 3);
}

TEST(spawn_rejects_duplicate_components) {
    tes_world_t *world = fx_world(NULL);
    tes_component_t p = fx_component(world, "Position", position_fields, 2);
    tes_component_t t = fx_tag(world, "Frozen");
    fx_snapshot_t *before = fx_snapshot_of(world);
    tes_component_t dup1[] = {p, p};
    tes_component_t dup2[] = {t, p, t};
    tes_entity_t e;
    CHECK_ERR(tes_spawn(world, dup1, 2, &e), TES_ERR_INVALID_ARGUMENT);
    CHECK_ERR(tes_spawn(world, dup2, 3, &e), TES_ERR_INVALID_ARGUMENT);
    FX_CHECK_UNCHANGED(before, world);
}

TEST(spawn_rejects_unknown_component) {
    tes_world_t *world = fx_world(NULL);
    tes_component_t p = fx_component(world, "Position", position_fields, 2);
    fx_snapshot_t *before = fx_snapshot_of(world);
    tes_component_t set[] = {p, p + 1};
    tes_entity_t e;
    CHECK_ERR(tes_spawn(world, set, 2, &e), TES_ERR_UNKNOWN_COMPONENT);
    tes_component_t huge[] = {UINT32_MAX};
    CHECK_ERR(tes_spawn(world, huge, 1, &e), TES_ERR_UNKNOWN_COMPONENT);
    FX_CHECK_UNCHANGED(before, world);
}

TEST(spawn_rejects_missing_component_list_or_out_pointer) {
    tes_world_t *world = fx_world(NULL);
    fx_component(world, "Position", position_fields, 2);
    fx_snapshot_t *before = fx_snapshot_of(world);
    tes_entity_t e;
    CHECK_ERR(tes_spawn(world, NULL, 1, &e), TES_ERR_INVALID_ARGUMENT);
    CHECK_ERR(tes_spawn(world, NULL, 0, NULL), TES_ERR_INVALID_ARGUMENT);
    FX_CHECK_UNCHANGED(before, world);
}

TEST(spawn_data_starts_zeroed_even_in_reused_slots) {
    tes_world_desc_t desc = {.min_free_indices = 1};
    tes_world_t *world = fx_world(&desc);
    tes_component_t p = fx_component(world, "Position", position_fields, 2);
    for (int round = 0; round < 5; round++) {
        tes_entity_t e[10];
        for (int i = 0; i < 10; i++) {
            CHECK_OK(tes_spawn(world, &p, 1, &e[i]));
            CHECK_NUM_EQ(fx_get_number(world, e[i], p, 0, 0), 0);
            CHECK_NUM_EQ(fx_get_number(world, e[i], p, 1, 0), 0);
            CHECK_OK(tes_set_number(world, e[i], p, 0, 0, 1.5 + i));
            CHECK_OK(tes_set_number(world, e[i], p, 1, 0, -2.5 - i));
        }
        for (int i = 0; i < 10; i++)
            CHECK_OK(tes_despawn(world, e[i]));
    }
}

TEST(despawn_kills_only_that_entity) {
    tes_world_t *world = fx_world(NULL);
    tes_component_t p = fx_component(world, "Position", position_fields, 2);
    tes_entity_t e[50];
    for (int i = 0; i < 50; i++) {
        CHECK_OK(tes_spawn(world, &p, 1, &e[i]));
        CHECK_OK(tes_set_number(world, e[i], p, 0, 0, i));
    }
    for (int i = 0; i < 50; i += 4) {
        CHECK_OK(tes_despawn(world, e[i]));
        CHECK(!tes_is_alive(world, e[i]));
    }
    for (int i = 0; i < 50; i++) {
        if (i % 4 == 0) continue;
        CHECK(tes_is_alive(world, e[i]));
        CHECK_NUM_EQ(fx_get_number(world, e[i], p, 0, 0), i);
        fx_check_location(world, e[i]);
    }
    tes_world_stats_t s = fx_stats(world);
    CHECK_EQ(s.entity_count, 50 - 13);
    CHECK_EQ(s.free_queue_length, 13);
    fx_check_all_packed(world);
    CHECK_OK(tes_world_validate(world));
}

TEST(despawned_handle_is_rejected_by_every_call) {
    tes_world_t *world = fx_world(NULL);
    tes_component_t p = fx_component(world, "Position", position_fields, 2);
    tes_component_t t = fx_tag(world, "Frozen");
    tes_component_t pt[] = {p, t};
    tes_entity_t a, b, d;
    CHECK_OK(tes_spawn(world, pt, 2, &a));
    CHECK_OK(tes_spawn(world, pt, 2, &d));
    CHECK_OK(tes_spawn(world, &p, 1, &b));
    CHECK_OK(tes_set_number(world, a, p, 0, 0, 1));
    CHECK_OK(tes_set_number(world, d, p, 0, 0, 2));
    CHECK_OK(tes_set_number(world, b, p, 0, 0, 3));
    CHECK_OK(tes_despawn(world, d));
    check_rejected_everywhere(world, d, p, t);
    CHECK_NUM_EQ(fx_get_number(world, a, p, 0, 0), 1);
    CHECK_NUM_EQ(fx_get_number(world, b, p, 0, 0), 3);
}

TEST(stale_handle_of_a_reused_slot_is_rejected_by_every_call) {
    tes_world_desc_t desc = {.min_free_indices = 1};
    tes_world_t *world = fx_world(&desc);
    tes_component_t p = fx_component(world, "Position", position_fields, 2);
    tes_component_t t = fx_tag(world, "Frozen");
    tes_entity_t old, other, fresh = 0;
    CHECK_OK(tes_spawn(world, &p, 1, &old));
    CHECK_OK(tes_spawn(world, &p, 1, &other));
    CHECK_OK(tes_set_number(world, old, p, 0, 0, 13));
    CHECK_OK(tes_despawn(world, old));
    CHECK_OK(tes_despawn(world, other));
    /* Two wait, more than min_free_indices = 1: the next spawn takes the oldest, old's slot. */
    CHECK_OK(tes_spawn(world, &p, 1, &fresh));
    CHECK_EQ(tes_entity_index(fresh), tes_entity_index(old));
    CHECK(fresh != 0);
    CHECK(fresh != old);
    CHECK_NUM_EQ(fx_get_number(world, fresh, p, 0, 0), 0); /* not old's 13 */
    CHECK_OK(tes_set_number(world, fresh, p, 0, 0, 77));
    check_rejected_everywhere(world, old, p, t);
    CHECK(tes_is_alive(world, fresh));
    CHECK_NUM_EQ(fx_get_number(world, fresh, p, 0, 0), 77);
    CHECK(!fx_has(world, fresh, t));
}

TEST(never_spawned_handles_are_rejected) {
    tes_world_t *world = fx_world(NULL);
    tes_component_t p = fx_component(world, "Position", position_fields, 2);
    tes_component_t t = fx_tag(world, "Frozen");
    tes_entity_t live;
    CHECK_OK(tes_spawn(world, &p, 1, &live));
    tes_world_stats_t s = fx_stats(world);
    const tes_entity_t bogus[] = {
        0,                                                     /* never an entity */
        s.entity_capacity + 5,                                 /* beyond the table */
        (1u << TES_INDEX_BITS) - 1,                            /* highest index, never used */
        live + (1u << TES_INDEX_BITS),                         /* live slot, next generation */
        live | (1u << (TES_INDEX_BITS + TES_GENERATION_BITS)), /* bits above 2^30 */
        live | 0x80000000u,
        UINT32_MAX,
    };
    for (size_t i = 0; i < sizeof bogus / sizeof bogus[0]; i++) {
        check_rejected_everywhere(world, bogus[i], p, t);
    }
    CHECK(tes_is_alive(world, live));
}

TEST(generation_bumps_when_a_slot_is_reused) {
    tes_world_desc_t desc = {.min_free_indices = 1};
    tes_world_t *world = fx_world(&desc);
    enum { SLOTS = 64 };
    uint32_t last_generation[SLOTS];
    bool seen[SLOTS] = {false};
    int reuses = 0;
    for (int i = 0; i < 200; i++) {
        tes_entity_t e;
        CHECK_OK(tes_spawn(world, NULL, 0, &e));
        uint32_t index = tes_entity_index(e);
        CHECK(index < SLOTS); /* min_free_indices = 1 keeps reusing a few slots */
        if (seen[index]) {
            CHECK_EQ(tes_entity_generation(e), (last_generation[index] + 1) % 512);
            reuses++;
        }
        seen[index] = true;
        last_generation[index] = tes_entity_generation(e);
        CHECK_OK(tes_despawn(world, e));
    }
    CHECK(reuses >= 100);
}

/* Waiting slots are reused first in, first out: every spawn here sees 5 waiting, more than
 * min_free_indices = 4, so each takes the oldest. */
TEST(free_queue_reuses_slots_first_in_first_out) {
    tes_world_desc_t desc = {.min_free_indices = 4};
    tes_world_t *world = fx_world(&desc);
    tes_entity_t e[10];
    CHECK_OK(tes_spawn_batch(world, NULL, 0, 10, e));
    const int order[] = {2, 6, 0, 4, 8};
    for (int i = 0; i < 5; i++)
        CHECK_OK(tes_despawn(world, e[order[i]]));
    CHECK_EQ(fx_stats(world).free_queue_length, 5);
    const int later[] = {9, 1, 3};
    for (int i = 0; i < 3; i++) {
        tes_entity_t r;
        CHECK_OK(tes_spawn(world, NULL, 0, &r));
        CHECK_EQ(tes_entity_index(r), tes_entity_index(e[order[i]]));
        CHECK_EQ(tes_entity_generation(r), (tes_entity_generation(e[order[i]]) + 1) % 512);
        CHECK_EQ(fx_stats(world).free_queue_length, 4);
        CHECK_OK(tes_despawn(world, e[later[i]]));
        CHECK_EQ(fx_stats(world).free_queue_length, 5);
    }
    /* Queue now: order[3], order[4], later[0..2]; 5 wait, so the oldest comes back. */
    tes_entity_t r;
    CHECK_OK(tes_spawn(world, NULL, 0, &r));
    CHECK_EQ(tes_entity_index(r), tes_entity_index(e[order[3]]));
    CHECK_OK(tes_world_validate(world));
}

TEST(free_queue_does_not_reuse_before_min_free_indices_wait) {
    tes_world_desc_t desc = {.min_free_indices = 4};
    tes_world_t *world = fx_world(&desc);
    tes_entity_t e[10];
    CHECK_OK(tes_spawn_batch(world, NULL, 0, 10, e));
    for (int i = 0; i < 3; i++)
        CHECK_OK(tes_despawn(world, e[i]));
    for (int k = 0; k < 20; k++) {
        tes_entity_t r;
        CHECK_OK(tes_spawn(world, NULL, 0, &r));
        for (int i = 0; i < 3; i++)
            CHECK(tes_entity_index(r) != tes_entity_index(e[i]));
        CHECK_EQ(fx_stats(world).free_queue_length, 3);
    }
}

/* Freed slots are reused only while more than min_free_indices wait: with exactly that many
 * waiting a fresh slot is used, with one more the oldest freed slot comes back. */
TEST(free_queue_reuses_only_when_more_than_min_free_indices_wait) {
    tes_world_desc_t desc = {.min_free_indices = 4};
    tes_world_t *world = fx_world(&desc);
    tes_entity_t e[10];
    CHECK_OK(tes_spawn_batch(world, NULL, 0, 10, e));
    for (int i = 0; i < 4; i++) {
        CHECK_OK(tes_despawn(world, e[i]));
    }
    tes_entity_t r;
    CHECK_OK(tes_spawn(world, NULL, 0, &r));
    for (int i = 0; i < 10; i++) {
        CHECK(tes_entity_index(r) != tes_entity_index(e[i]));
    }
    CHECK_EQ(fx_stats(world).free_queue_length, 4);
    CHECK_OK(tes_despawn(world, e[4]));
    CHECK_OK(tes_spawn(world, NULL, 0, &r));
    CHECK_EQ(tes_entity_index(r), tes_entity_index(e[0]));
    CHECK_EQ(fx_stats(world).free_queue_length, 4);
}

TEST(default_min_free_indices_is_4096) {
    tes_world_t *world = fx_world(NULL);
    enum { N = 4200 };
    tes_entity_t *e = (tes_entity_t *)fx_malloc(N * sizeof *e);
    CHECK_OK(tes_spawn_batch(world, NULL, 0, N, e));
    for (int i = 0; i < 4095; i++)
        CHECK_OK(tes_despawn(world, e[i]));
    tes_entity_t r;
    CHECK_OK(tes_spawn(world, NULL, 0, &r));
    CHECK(tes_entity_index(r) > tes_entity_index(e[N - 1]) ||
          tes_entity_index(r) < tes_entity_index(e[0])); /* a fresh slot */
    for (int i = 0; i < 4095; i++)
        CHECK(tes_entity_index(r) != tes_entity_index(e[i]));
    CHECK_OK(tes_despawn(world, e[4095]));
    CHECK_OK(tes_despawn(world, e[4096]));
    CHECK_EQ(fx_stats(world).free_queue_length, 4097);
    CHECK_OK(tes_spawn(world, NULL, 0, &r));
    CHECK_EQ(tes_entity_index(r), tes_entity_index(e[0]));
}

TEST(stale_handle_does_not_alias_before_512_recycles) {
    tes_world_desc_t desc = {.min_free_indices = 1};
    tes_world_t *world = fx_world(&desc);
    tes_component_t p = fx_component(world, "Position", position_fields, 2);
    tes_component_t t = fx_tag(world, "Frozen");
    tes_entity_t original;
    CHECK_OK(tes_spawn(world, &p, 1, &original));
    CHECK_OK(tes_despawn(world, original));
    uint32_t index = tes_entity_index(original);
    uint32_t recycles = 0, spawns = 0;
    while (recycles < 512) {
        tes_entity_t x;
        CHECK_OK(tes_spawn(world, &p, 1, &x));
        spawns++;
        CHECK(spawns < 512 * 4); /* min_free_indices = 1 recycles every slot every few spawns */
        if (tes_entity_index(x) == index) {
            recycles++;
            CHECK_EQ(tes_entity_generation(x),
                     (tes_entity_generation(original) + recycles) % (1u << TES_GENERATION_BITS));
        }
        if (recycles < 512) {
            CHECK(x != original);
            CHECK(!tes_is_alive(world, original));
            tes_location_t loc;
            CHECK_ERR(tes_location(world, original, &loc), TES_ERR_STALE_ENTITY);
            if (recycles % 64 == 1 && tes_entity_index(x) == index) {
                check_rejected_everywhere(world, original, p, t);
            }
        } else {
            /* After 2^9 recycles the 9-bit generation wraps: the documented aliasing point. */
            CHECK_EQ(x, original);
            CHECK(tes_is_alive(world, original));
        }
        CHECK_OK(tes_despawn(world, x));
    }
    CHECK(spawns >= 512);
}

TEST(location_and_chunk_agree_for_every_entity) {
    tes_world_desc_t desc = {.chunk_bytes = 1024};
    tes_world_t *world = fx_world(&desc);
    tes_component_t p = fx_component(world, "Position", position_fields, 2);
    tes_component_t id = fx_component(world, "Id", id_fields, 1);
    tes_component_t both[] = {p, id};
    tes_entity_t e[600];
    for (int i = 0; i < 600; i++)
        CHECK_OK(tes_spawn(world, both, (uint32_t)(i % 3), &e[i]));
    for (int i = 0; i < 600; i += 5)
        CHECK_OK(tes_despawn(world, e[i]));
    for (int i = 0; i < 600; i++) {
        if (i % 5 != 0) fx_check_location(world, e[i]);
    }
    fx_check_all_packed(world);
    CHECK_OK(tes_world_validate(world));
}

TEST(million_live_entities_keep_their_data) {
    tes_world_t *world = fx_world(NULL);
    tes_component_t p = fx_component(world, "Position", position_fields, 2);
    tes_component_t id = fx_component(world, "Id", id_fields, 1);
    tes_component_t both[] = {p, id};
    enum { N = 1000000 };
    tes_entity_t *e = (tes_entity_t *)fx_malloc(N * sizeof *e);
    CHECK_OK(tes_spawn_batch(world, both, 2, N / 2, e));
    CHECK_OK(tes_spawn_batch(world, both, 2, N / 2, e + N / 2));
    CHECK_EQ(fx_stats(world).entity_count, N);
    unsigned char *seen = (unsigned char *)fx_malloc(1u << TES_INDEX_BITS);
    for (uint32_t i = 0; i < N; i++) {
        CHECK(e[i] != 0 && e[i] < HANDLE_LIMIT);
        CHECK(!seen[tes_entity_index(e[i])]);
        seen[tes_entity_index(e[i])] = 1;
        CHECK_OK(tes_set_number(world, e[i], id, 0, 0, i));
        CHECK_OK(tes_set_number(world, e[i], p, 1, 0, (double)(i % 4096) * 0.25));
    }
    for (uint32_t i = 0; i < N; i += 3)
        CHECK_OK(tes_despawn(world, e[i]));
    CHECK_EQ(fx_stats(world).entity_count, N - (N + 2) / 3);
    for (uint32_t i = 0; i < N; i++) {
        if (i % 3 == 0) {
            CHECK(!tes_is_alive(world, e[i]));
            continue;
        }
        CHECK_NUM_EQ(fx_get_number(world, e[i], id, 0, 0), i);
        CHECK_NUM_EQ(fx_get_number(world, e[i], p, 1, 0), (double)(i % 4096) * 0.25);
        CHECK_NUM_EQ(fx_get_number(world, e[i], p, 0, 0), 0);
    }
    fx_check_all_packed(world);
    CHECK_OK(tes_world_validate(world));
}

TEST(entity_table_full_reports_too_many_entities) {
    tes_world_t *world = fx_world(NULL);
    /* Every index but min_free_indices (default 4096) of them can be in use at once. */
    const uint32_t limit = TES_MAX_ENTITIES - 4096;
    tes_entity_t small[10];
    CHECK_OK(tes_spawn_batch(world, NULL, 0, 10, small));
    fx_snapshot_t *before = fx_snapshot_of(world);
    /* All or nothing: a batch that does not fit spawns none. */
    CHECK_ERR(tes_spawn_batch(world, NULL, 0, limit - 9, NULL), TES_ERR_TOO_MANY_ENTITIES);
    CHECK_ERR(tes_spawn_batch(world, NULL, 0, UINT32_MAX, NULL), TES_ERR_TOO_MANY_ENTITIES);
    FX_CHECK_UNCHANGED(before, world);

    CHECK_OK(tes_spawn_batch(world, NULL, 0, limit - 10, NULL));
    tes_world_stats_t s = fx_stats(world);
    CHECK_EQ(s.entity_count, limit);
    tes_entity_t e;
    CHECK_ERR(tes_spawn(world, NULL, 0, &e), TES_ERR_TOO_MANY_ENTITIES);
    CHECK_ERR(tes_spawn_batch(world, NULL, 0, 1, &e), TES_ERR_TOO_MANY_ENTITIES);
    CHECK_EQ(fx_stats(world).entity_count, limit);
    /* A despawn makes room for one; the freed index waits behind min_free others. */
    CHECK_OK(tes_despawn(world, small[3]));
    CHECK_OK(tes_spawn(world, NULL, 0, &e));
    CHECK(tes_entity_index(e) != tes_entity_index(small[3]));
    CHECK(!tes_is_alive(world, small[3]));
    CHECK_OK(tes_world_validate(world));
}

TEST(min_free_indices_of_half_the_table_or_more_is_refused) {
    tes_world_t *world = NULL;
    tes_world_desc_t desc = {.min_free_indices = (TES_MAX_ENTITIES + 1) / 2};
    CHECK_ERR(tes_world_create(&desc, &world), TES_ERR_INVALID_ARGUMENT);
    CHECK(world == NULL);
    desc.min_free_indices = (TES_MAX_ENTITIES + 1) / 2 - 1;
    world = fx_world(&desc);
    CHECK_OK(tes_world_validate(world));
}

TEST(a_stale_handle_never_aliases_before_512_recycles_of_min_free_despawns_even_when_full) {
    /* The promise at every population: with the table as full as it can be, one entity churned
     * over and over must not get a handle equal to an old, stale one before its index went
     * through 512 generations, each after more than min_free other despawns. */
    tes_world_desc_t desc = {.min_free_indices = 16};
    tes_world_t *world = fx_world(&desc);
    /* As many as the world takes. */
    for (uint32_t batch = 1u << 16; batch;) {
        tes_result_t result = tes_spawn_batch(world, NULL, 0, batch, NULL);
        if (result == TES_ERR_TOO_MANY_ENTITIES) {
            batch /= 2;
        } else {
            CHECK_OK(result);
        }
    }
    CHECK_EQ(fx_stats(world).entity_count, TES_MAX_ENTITIES - 16);
    tes_entity_t stale = 1; /* index 1, generation 0: the first entity spawned */
    CHECK(tes_is_alive(world, stale));
    CHECK_OK(tes_despawn(world, stale));
    uint64_t despawns = 1;
    for (uint32_t round = 0; round < 600 * 17; round++) {
        tes_entity_t e;
        CHECK_OK(tes_spawn(world, NULL, 0, &e));
        if (e == stale) break;
        CHECK(!tes_is_alive(world, stale));
        CHECK_OK(tes_despawn(world, e));
        despawns++;
    }
    CHECK(despawns >= 512ull * 17);
    CHECK_OK(tes_world_validate(world));
}
