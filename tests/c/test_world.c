/* Worlds: creation, defaults, descriptor options, stats, allocators, independence. */
#include "fixtures.h"

static const tes_field_desc_t position_fields[] = {{"x", TES_F32, 0}, {"y", TES_F32, 0}};
static const tes_field_desc_t health_fields[] = {{"hp", TES_I32, 0}, {"armor", TES_U8, 3}};

TEST(world_create_with_null_desc_uses_defaults) {
    tes_world_t *world = fx_world(NULL);
    tes_world_stats_t s = fx_stats(world);
    CHECK_EQ(s.entity_count, 0);
    CHECK_EQ(s.free_queue_length, 0);
    CHECK_EQ(s.component_count, 0);
    CHECK_EQ(s.archetype_count, 1);
    CHECK_EQ(s.chunk_count, 0);
    CHECK_EQ(s.chunk_bytes, 65536);
    CHECK_EQ(s.edge_count, 0);
    CHECK(s.entity_capacity >= 1);
    CHECK(s.bytes_allocated > 0);
    CHECK_EQ(tes_archetype_count(world), 1);
    tes_archetype_info_t empty = fx_archetype(world, TES_EMPTY_ARCHETYPE);
    CHECK_EQ(empty.component_count, 0);
    CHECK_EQ(empty.entity_count, 0);
    CHECK_EQ(empty.chunk_count, 0);
    CHECK_OK(tes_world_validate(world));
}

TEST(world_create_with_zeroed_desc_equals_null_desc) {
    tes_world_desc_t desc;
    memset(&desc, 0, sizeof desc);
    tes_world_t *a = fx_world(NULL);
    tes_world_t *b = fx_world(&desc);
    fx_snapshot_t *sa = fx_snapshot_of(a), *sb = fx_snapshot_of(b);
    char message[160];
    if (!fx_snapshot_equal_ex(sa, sb, true, message, sizeof message)) {
        harness_fail(__FILE__, __LINE__, "NULL desc and zeroed desc differ: %s", message);
    }
    /* The default min_free_indices (4096) applies to both: checked in test_entity.c. */
}

TEST(world_create_rejects_null_out_pointer) {
    CHECK_ERR(tes_world_create(NULL, NULL), TES_ERR_INVALID_ARGUMENT);
}

TEST(world_destroy_ignores_null) {
    tes_world_destroy(NULL);
}

TEST(world_create_and_destroy_many_times_leaks_nothing) {
    fx_alloc_t counter;
    fx_alloc_init(&counter);
    tes_world_desc_t desc = {.allocator = fx_allocator(&counter)};
    for (int i = 0; i < 100; i++) {
        tes_world_t *world = NULL;
        CHECK_OK(tes_world_create(&desc, &world));
        if (i % 2) {
            tes_component_t c = fx_component(world, "Position", position_fields, 2);
            tes_entity_t e;
            CHECK_OK(tes_spawn(world, &c, 1, &e));
        }
        tes_world_destroy(world);
        FX_CHECK_ALLOC_CLEAN(&counter);
    }
}

TEST(worlds_side_by_side_are_independent) {
    tes_world_t *a = fx_world(NULL);
    tes_world_t *b = fx_world(NULL);
    tes_component_t pa = fx_component(a, "Position", position_fields, 2);
    tes_component_t hb = fx_component(b, "Health", health_fields, 2);
    tes_component_t pb = fx_component(b, "Position", position_fields, 2);
    CHECK_EQ(pa, 0);
    CHECK_EQ(hb, 0);
    CHECK_EQ(pb, 1);
    tes_component_t found;
    CHECK_ERR(tes_component_lookup(a, "Health", &found), TES_ERR_UNKNOWN_COMPONENT);
    CHECK_OK(tes_component_lookup(b, "Position", &found));
    CHECK_EQ(found, pb);

    tes_entity_t ea[10], eb[10];
    for (int i = 0; i < 10; i++) {
        CHECK_OK(tes_spawn(a, &pa, 1, &ea[i]));
        CHECK_OK(tes_set_number(a, ea[i], pa, 0, 0, 100 + i));
    }
    for (int i = 0; i < 10; i++) {
        CHECK_OK(tes_spawn(b, &pb, 1, &eb[i]));
        CHECK_OK(tes_set_number(b, eb[i], pb, 0, 0, 200 + i));
    }
    /* Handles are per world: the same numbers may name different entities in each. */
    CHECK_OK(tes_despawn(a, ea[3]));
    CHECK(!tes_is_alive(a, ea[3]));
    for (int i = 0; i < 10; i++) {
        CHECK(tes_is_alive(b, eb[i]));
        CHECK_NUM_EQ(fx_get_number(b, eb[i], pb, 0, 0), 200 + i);
    }
    tes_world_stats_t sa = fx_stats(a), sb = fx_stats(b);
    CHECK_EQ(sa.entity_count, 9);
    CHECK_EQ(sb.entity_count, 10);
    CHECK_EQ(sa.component_count, 1);
    CHECK_EQ(sb.component_count, 2);
    /* Destroying one leaves the other working. */
    tes_world_t *c = NULL;
    CHECK_OK(tes_world_create(NULL, &c));
    tes_component_t pc = fx_component(c, "Position", position_fields, 2);
    tes_entity_t ec;
    CHECK_OK(tes_spawn(c, &pc, 1, &ec));
    tes_world_destroy(c);
    for (int i = 0; i < 10; i++) {
        if (i != 3) CHECK_NUM_EQ(fx_get_number(a, ea[i], pa, 0, 0), 100 + i);
    }
    CHECK_OK(tes_world_validate(a));
    CHECK_OK(tes_world_validate(b));
}

TEST(world_stats_track_entities_components_archetypes_chunks) {
    tes_world_desc_t desc = {.chunk_bytes = 1024};
    tes_world_t *world = fx_world(&desc);
    tes_world_stats_t s0 = fx_stats(world);
    tes_component_t p = fx_component(world, "Position", position_fields, 2);
    tes_component_t h = fx_component(world, "Health", health_fields, 2);
    tes_component_t t = fx_tag(world, "Frozen");
    tes_world_stats_t s = fx_stats(world);
    CHECK_EQ(s.component_count, 3);
    CHECK_EQ(s.archetype_count, s0.archetype_count);

    tes_component_t ph[] = {p, h};
    tes_archetype_t a;
    CHECK_OK(tes_archetype_find(world, ph, 2, &a));
    tes_archetype_info_t info = fx_archetype(world, a);
    uint32_t n = info.capacity * 2 + 1; /* three chunks */
    CHECK_OK(tes_spawn_batch(world, ph, 2, n, NULL));
    tes_entity_t e;
    CHECK_OK(tes_spawn(world, NULL, 0, &e));
    s = fx_stats(world);
    CHECK_EQ(s.entity_count, n + 1);
    CHECK_EQ(s.archetype_count, 2);
    CHECK_EQ(s.archetype_count, tes_archetype_count(world));
    CHECK_EQ(s.chunk_count, 3 + 1);
    CHECK_EQ(s.chunk_bytes, 1024);
    CHECK_EQ(s.graph_generation, s0.graph_generation + 1);

    CHECK_OK(tes_add(world, e, t));
    s = fx_stats(world);
    CHECK_EQ(s.archetype_count, 3);
    CHECK_EQ(s.graph_generation, s0.graph_generation + 2);
    CHECK(s.edge_count > 0);
    CHECK_EQ(s.chunk_count, 4); /* the empty archetype's chunk emptied, {Frozen} got one */

    CHECK_OK(tes_despawn(world, e));
    s = fx_stats(world);
    CHECK_EQ(s.entity_count, n);
    CHECK_EQ(s.free_queue_length, 1);
    CHECK_EQ(s.chunk_count, 3);
    CHECK_OK(tes_world_validate(world));
}

TEST(world_entity_capacity_counts_live_free_and_reserved_slots) {
    tes_world_t *world = fx_world(NULL);
    tes_entity_t e[100];
    tes_world_stats_t s = fx_stats(world);
    CHECK_EQ(s.entity_capacity, s.entity_count + s.free_queue_length + 1);
    CHECK_OK(tes_spawn_batch(world, NULL, 0, 100, e));
    s = fx_stats(world);
    CHECK_EQ(s.entity_capacity, 101);
    for (int i = 0; i < 100; i += 3)
        CHECK_OK(tes_despawn(world, e[i]));
    s = fx_stats(world);
    CHECK_EQ(s.entity_count, 66);
    CHECK_EQ(s.free_queue_length, 34);
    CHECK_EQ(s.entity_capacity, s.entity_count + s.free_queue_length + 1);
}

TEST(world_custom_allocator_is_used_for_everything) {
    fx_alloc_t *counter = fx_alloc_new();
    tes_world_desc_t desc = {.chunk_bytes = 2048, .allocator = fx_allocator(counter)};
    tes_world_t *world = fx_world(&desc);
    CHECK(counter->allocs > 0);
    CHECK_EQ(fx_stats(world).bytes_allocated, counter->live_bytes);

    tes_component_t p = fx_component(world, "Position", position_fields, 2);
    tes_component_t h = fx_component(world, "Health", health_fields, 2);
    tes_component_t t = fx_tag(world, "Frozen");
    uint64_t before_spawn = counter->allocs;
    tes_component_t ph[] = {p, h};
    static tes_entity_t entities[5000];
    CHECK_OK(tes_spawn_batch(world, ph, 2, 5000, entities));
    CHECK(counter->allocs > before_spawn);
    CHECK_EQ(fx_stats(world).bytes_allocated, counter->live_bytes);
    for (int i = 0; i < 5000; i += 2)
        CHECK_OK(tes_add(world, entities[i], t));
    for (int i = 0; i < 5000; i += 3)
        CHECK_OK(tes_remove(world, entities[i], h));
    CHECK_EQ(fx_stats(world).bytes_allocated, counter->live_bytes);
    for (int i = 0; i < 5000; i += 5)
        CHECK_OK(tes_despawn(world, entities[i]));
    CHECK_EQ(fx_stats(world).bytes_allocated, counter->live_bytes);
    CHECK_OK(tes_world_validate(world));
    CHECK_EQ(counter->misaligned, 0);
    CHECK_EQ(counter->bad_frees, 0);
    fx_world_destroy_now(world);
    FX_CHECK_ALLOC_CLEAN(counter);
}

TEST(world_chunk_bytes_default_and_rounding) {
    static const uint32_t asked[] = {0, 1, 64, 1000, 1024, 1025, 5000, 16384, 65536, 65537};
    static const uint32_t got[] = {65536, 1024, 1024, 1024, 1024, 1088, 5056, 16384, 65536, 65600};
    for (size_t i = 0; i < sizeof asked / sizeof asked[0]; i++) {
        tes_world_desc_t desc = {.chunk_bytes = asked[i]};
        tes_world_t *world = NULL;
        CHECK_OK(tes_world_create(&desc, &world));
        tes_world_stats_t s;
        tes_result_t r = tes_world_stats(world, &s);
        tes_world_destroy(world);
        CHECK_OK(r);
        CHECK_EQ(s.chunk_bytes, got[i]);
    }
}

TEST(world_chunk_bytes_bounds_capacity) {
    static const uint32_t sizes[] = {1024, 4096, 16384, 65536};
    uint32_t previous_capacity = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        tes_world_desc_t desc = {.chunk_bytes = sizes[i]};
        tes_world_t *world = fx_world(&desc);
        tes_component_t p = fx_component(world, "Position", position_fields, 2);
        tes_component_t h = fx_component(world, "Health", health_fields, 2);
        tes_component_t ph[] = {p, h};
        tes_archetype_t a;
        CHECK_OK(tes_archetype_find(world, ph, 2, &a));
        tes_archetype_info_t info = fx_archetype(world, a);
        uint32_t row = 4 /* entity handle */ + 8 /* Position */ + 7 /* Health */;
        CHECK(info.capacity >= 1);
        CHECK(info.capacity * row <= sizes[i]);
        /* A budget four times larger holds more entities. */
        CHECK(info.capacity > previous_capacity);
        previous_capacity = info.capacity;
    }
}

TEST(world_validate_passes_on_fresh_and_busy_worlds) {
    tes_world_t *world = fx_world(NULL);
    CHECK_OK(tes_world_validate(world));
    tes_component_t p = fx_component(world, "Position", position_fields, 2);
    tes_component_t t = fx_tag(world, "Frozen");
    tes_entity_t e[300];
    CHECK_OK(tes_spawn_batch(world, &p, 1, 300, e));
    for (int i = 0; i < 300; i += 7)
        CHECK_OK(tes_add(world, e[i], t));
    for (int i = 0; i < 300; i += 11)
        CHECK_OK(tes_despawn(world, e[i]));
    CHECK_OK(tes_world_validate(world));
}

TEST(host_malloc_is_aligned_and_freeable) {
    static const size_t sizes[] = {1, 3, 16, 17, 100, 4096, 1 << 20};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        unsigned char *p = (unsigned char *)tes_malloc(sizes[i]);
        CHECK(p != NULL);
        CHECK_EQ((uintptr_t)p % 16, 0);
        memset(p, 0xab, sizes[i]);
        tes_free(p);
    }
    tes_free(NULL);
}

/* Pages of wasm memory now (64 KiB each); natively there is nothing to count. */
static size_t memory_pages(void) {
#ifdef __wasm__
    return __builtin_wasm_memory_size(0);
#else
    return 0;
#endif
}

static const tes_field_desc_t wide_fields[] = {{"v", TES_F32, 64}}; /* 256 bytes a row */

TEST(the_run_reserve_refuses_what_would_outgrow_it_and_memory_never_grows_under_it) {
    CHECK_ERR(tes_run_reserve(0), TES_ERR_INVALID_ARGUMENT);
    CHECK_EQ(tes_run_release(), 0); /* none held */
    tes_world_t *world = fx_world(NULL);
    tes_component_t w = fx_component(world, "Wide", wide_fields, 1);
    fx_spawn(world, FX_IDS(w));
    CHECK_OK(tes_run_reserve(1u << 20));
    CHECK_ERR(tes_run_reserve(1u << 20), TES_ERR_INVALID_ARGUMENT); /* one at a time */
    size_t pages = memory_pages();
    /* Spawns allocate chunks and table pages: the room runs out (in wasm, the heap's free room,
     * at least 1 MiB; natively the 1 MiB budget), and the spawn that needed more fails. */
    tes_result_t result = TES_OK;
    uint32_t spawned = 0;
    while (result == TES_OK && spawned < 1000000) {
        tes_entity_t e[64];
        result = tes_spawn_batch(world, &w, 1, 64, e);
        if (result == TES_OK) spawned += 64;
    }
    CHECK_ERR(result, TES_ERR_OUT_OF_MEMORY);
    CHECK(spawned > 1000);                               /* the room was there for a while */
    CHECK_EQ(fx_stats(world).entity_count, spawned + 1); /* the failed batch spawned none */
    CHECK_OK(tes_world_validate(world));
    CHECK_EQ(memory_pages(), pages); /* nothing grew under the reserve */
    /* The release reports the largest allocation refused, for sizing the next reserve. */
    CHECK(tes_run_release() > 0);
    CHECK_EQ(tes_run_release(), 0);
    /* Released: the same spawn goes through. */
    tes_entity_t e[64];
    CHECK_OK(tes_spawn_batch(world, &w, 1, 64, e));
    /* tes_malloc is held too; what is freed under the reserve is used again. */
    CHECK_OK(tes_run_reserve(4096));
    void *small = tes_malloc(100);
    CHECK(small != NULL);
    CHECK(tes_malloc(256u << 20) == NULL);
    CHECK_EQ(tes_run_release(), 256u << 20);
    tes_free(small);
    CHECK_ERR(tes_run_reserve(SIZE_MAX), TES_ERR_OUT_OF_MEMORY);
    CHECK_EQ(tes_run_release(), 0);
}

/* A run's deferred commands apply when it ends, under the reserve still held by the host: the
 * flush is not held back by it (a skipped spawn would be data lost), the recording is. */
TEST(deferred_commands_apply_in_full_when_they_need_more_room_than_the_reserve) {
    tes_world_t *world = fx_world(NULL);
    tes_component_t w = fx_component(world, "Wide", wide_fields, 1);
    fx_spawn(world, FX_IDS(w));
    CHECK_OK(tes_run_reserve(1u << 20));
    CHECK_OK(tes_defer_begin(world));
    /* 4,000 recorded spawns fit in 1 MiB as commands (40 bytes each, in an array that doubles)
     * and pending records; placed, their rows alone take more than 1 MiB. */
    uint32_t recorded = 0;
    for (; recorded < 4000; recorded++) {
        tes_entity_t e;
        CHECK_OK(tes_spawn(world, &w, 1, &e));
    }
    CHECK_OK(tes_defer_end(world));
    tes_world_stats_t stats;
    CHECK_OK(tes_world_stats(world, &stats));
    CHECK_EQ(stats.commands_skipped, 0);
    CHECK_EQ(stats.entity_count, recorded + 1);
    CHECK_OK(tes_world_validate(world));
    /* The reserve holds again once the flush is done. */
    CHECK(tes_malloc(256u << 20) == NULL);
    CHECK_EQ(tes_run_release(), 256u << 20);
}
