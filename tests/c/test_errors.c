/* Errors: result names and messages, argument checks on every call, and the promise that a
 * failed call leaves the world exactly as it was. */
#include "fixtures.h"

#include <math.h>

#define NAME_OF(name, message)    #name,
#define MESSAGE_OF(name, message) message,
static const char *const expected_names[] = {TES_RESULTS(NAME_OF)};
static const char *const expected_messages[] = {TES_RESULTS(MESSAGE_OF)};
#undef NAME_OF
#undef MESSAGE_OF

static const tes_field_desc_t position_fields[] = {{"x", TES_F32, 0}, {"y", TES_F32, 0}};
static const tes_field_desc_t array_fields[] = {{"b", TES_U8, 5}, {"d", TES_F64, 0}};

TEST(ok_is_zero_and_results_are_numbered_in_table_order) {
    CHECK_EQ(TES_OK, 0);
    CHECK_EQ(TES_RESULT_COUNT, sizeof expected_names / sizeof expected_names[0]);
    /* Codes are the ABI and only ever appended: earlier ones keep their numbers. */
    CHECK_EQ(TES_ERR_STALE_ENTITY, 3);
    CHECK_EQ(TES_ERR_CORRUPT, 18);
    CHECK_EQ(TES_ERR_PENDING_ENTITY, 19);
    CHECK_EQ(TES_ERR_UNKNOWN_STAGE, 20);
    CHECK_EQ(TES_ERR_QUERY_IN_USE, 21);
    CHECK_EQ(TES_ERR_BAD_FIELD_TYPE, 22);
    CHECK_EQ(TES_ERR_SPARSE_COMPONENT, 23);
    CHECK_EQ(TES_ERR_NOT_A_RELATION, 24);
    CHECK_EQ(TES_ERR_NEEDS_TARGET, 25);
    CHECK_EQ(TES_ERR_CYCLE, 26);
    CHECK_EQ(TES_ERR_BAD_SNAPSHOT, 27);
    CHECK_EQ(TES_ERR_SNAPSHOT_VERSION, 28);
    CHECK_EQ(TES_ERR_BAD_DELTA, 29);
    CHECK_EQ(TES_ERR_DELTA_SCHEMA, 30);
    CHECK_EQ(TES_ERR_DELTA_BASELINE, 31);
    CHECK_EQ(TES_ERR_NO_CHECKPOINT, 32);
    CHECK_EQ(TES_ERR_NO_CHECKPOINT, TES_RESULT_COUNT - 1);
}

TEST(result_names_are_the_enum_names) {
    for (int r = 0; r < TES_RESULT_COUNT; r++) {
        const char *name = tes_result_name((tes_result_t)r);
        CHECK(name != NULL);
        if (strcmp(name, expected_names[r]) != 0) {
            harness_fail(__FILE__, __LINE__, "tes_result_name(%d) = \"%s\", expected \"%s\"", r,
                         name, expected_names[r]);
        }
    }
}

TEST(result_messages_are_the_table_messages) {
    for (int r = 0; r < TES_RESULT_COUNT; r++) {
        const char *message = tes_result_message((tes_result_t)r);
        CHECK(message != NULL);
        if (strcmp(message, expected_messages[r]) != 0) {
            harness_fail(__FILE__, __LINE__, "tes_result_message(%d) = \"%s\", expected \"%s\"", r,
                         message, expected_messages[r]);
        }
    }
}

TEST(result_names_and_messages_are_distinct) {
    for (int a = 0; a < TES_RESULT_COUNT; a++) {
        CHECK(strlen(tes_result_name((tes_result_t)a)) > 0);
        CHECK(strlen(tes_result_message((tes_result_t)a)) > 0);
        for (int b = a + 1; b < TES_RESULT_COUNT; b++) {
            CHECK(strcmp(tes_result_name((tes_result_t)a), tes_result_name((tes_result_t)b)) != 0);
            CHECK(strcmp(tes_result_message((tes_result_t)a),
                         tes_result_message((tes_result_t)b)) != 0);
        }
    }
}

TEST(out_of_range_results_get_a_non_null_name_and_message) {
    const int values[] = {TES_RESULT_COUNT, TES_RESULT_COUNT + 1, 1000, -1, 0x7fffffff};
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        const char *name = tes_result_name((tes_result_t)values[i]);
        const char *message = tes_result_message((tes_result_t)values[i]);
        CHECK(name != NULL);
        CHECK(message != NULL);
        CHECK(strlen(name) > 0);
        CHECK(strlen(message) > 0);
        /* Never mistaken for a real result. */
        for (int r = 0; r < TES_RESULT_COUNT; r++)
            CHECK(strcmp(name, expected_names[r]) != 0);
    }
}

TEST(null_world_is_rejected_by_every_call) {
    tes_world_stats_t stats;
    tes_component_desc_t desc = {"P", position_fields, 2};
    tes_component_t c;
    tes_component_info_t cinfo;
    tes_field_info_t finfo;
    uint32_t f;
    tes_entity_t e = 1;
    bool has;
    float v = 0;
    double d;
    void *ptr;
    tes_location_t loc;
    tes_archetype_info_t ainfo;
    tes_archetype_t a;
    tes_chunk_info_t chunk;
    const tes_result_t bad = TES_ERR_INVALID_ARGUMENT;
    CHECK_ERR(tes_world_stats(NULL, &stats), bad);
    CHECK_ERR(tes_world_validate(NULL), bad);
    CHECK_ERR(tes_component_register(NULL, &desc, &c), bad);
    CHECK_ERR(tes_component_lookup(NULL, "P", &c), bad);
    CHECK_ERR(tes_component_info(NULL, 0, &cinfo), bad);
    CHECK_ERR(tes_field_info(NULL, 0, 0, &finfo), bad);
    CHECK_ERR(tes_field_lookup(NULL, 0, "x", &f), bad);
    CHECK_ERR(tes_spawn(NULL, NULL, 0, &e), bad);
    CHECK_ERR(tes_spawn_batch(NULL, NULL, 0, 1, NULL), bad);
    CHECK_ERR(tes_despawn(NULL, e), bad);
    CHECK_ERR(tes_despawn_batch(NULL, &e, 1), bad);
    CHECK(!tes_is_alive(NULL, e));
    CHECK_ERR(tes_add(NULL, e, 0), bad);
    CHECK_ERR(tes_remove(NULL, e, 0), bad);
    CHECK_ERR(tes_has(NULL, e, 0, &has), bad);
    CHECK_ERR(tes_get(NULL, e, 0, 0, &v, sizeof v), bad);
    CHECK_ERR(tes_set(NULL, e, 0, 0, &v, sizeof v), bad);
    CHECK_ERR(tes_get_number(NULL, e, 0, 0, 0, &d), bad);
    CHECK_ERR(tes_set_number(NULL, e, 0, 0, 0, 1), bad);
    CHECK_ERR(tes_field_ptr(NULL, e, 0, 0, &ptr), bad);
    CHECK_ERR(tes_location(NULL, e, &loc), bad);
    CHECK_EQ(tes_archetype_count(NULL), 0);
    CHECK_ERR(tes_archetype_info(NULL, 0, &ainfo), bad);
    CHECK_ERR(tes_archetype_find(NULL, NULL, 0, &a), bad);
    CHECK_ERR(tes_chunk_info(NULL, 0, 0, &chunk), bad);
    CHECK_ERR(tes_chunk_column(NULL, 0, 0, 0, 0, &ptr), bad);
    CHECK_ERR(tes_archetype_add(NULL, 0, 0), bad);
    CHECK_ERR(tes_archetype_remove(NULL, 0, 0), bad);
    CHECK_ERR(tes_archetype_spawn(NULL, 0, 1, &e), bad);
}

TEST(null_out_pointers_and_inputs_are_rejected) {
    tes_world_t *world = fx_world(NULL);
    tes_component_t p = fx_component(world, "P", position_fields, 2);
    tes_entity_t e[3];
    CHECK_OK(tes_spawn_batch(world, &p, 1, 3, e));
    tes_archetype_t a = fx_archetype_of(world, e[0]);
    fx_snapshot_t *before = fx_snapshot_of(world);
    tes_component_desc_t desc = {"Q", position_fields, 2};
    tes_component_t c;
    uint32_t f;
    const tes_result_t bad = TES_ERR_INVALID_ARGUMENT;
    CHECK_ERR(tes_world_stats(world, NULL), bad);
    CHECK_ERR(tes_component_register(world, &desc, NULL), bad);
    CHECK_ERR(tes_component_register(world, NULL, &c), bad);
    CHECK_ERR(tes_component_lookup(world, "P", NULL), bad);
    CHECK_ERR(tes_component_lookup(world, NULL, &c), bad);
    CHECK_ERR(tes_component_info(world, p, NULL), bad);
    CHECK_ERR(tes_field_info(world, p, 0, NULL), bad);
    CHECK_ERR(tes_field_lookup(world, p, "x", NULL), bad);
    CHECK_ERR(tes_field_lookup(world, p, NULL, &f), bad);
    CHECK_ERR(tes_spawn(world, &p, 1, NULL), bad);
    CHECK_ERR(tes_spawn(world, NULL, 1, &e[0]), bad);
    CHECK_ERR(tes_spawn_batch(world, NULL, 1, 5, NULL), bad);
    CHECK_ERR(tes_despawn_batch(world, NULL, 3), bad);
    CHECK_ERR(tes_has(world, e[0], p, NULL), bad);
    CHECK_ERR(tes_get(world, e[0], p, 0, NULL, 4), bad);
    CHECK_ERR(tes_set(world, e[0], p, 0, NULL, 4), bad);
    CHECK_ERR(tes_get_number(world, e[0], p, 0, 0, NULL), bad);
    CHECK_ERR(tes_field_ptr(world, e[0], p, 0, NULL), bad);
    CHECK_ERR(tes_location(world, e[0], NULL), bad);
    CHECK_ERR(tes_archetype_info(world, a, NULL), bad);
    CHECK_ERR(tes_archetype_find(world, &p, 1, NULL), bad);
    CHECK_ERR(tes_archetype_find(world, NULL, 1, &a), bad);
    CHECK_ERR(tes_chunk_info(world, a, 0, NULL), bad);
    CHECK_ERR(tes_chunk_column(world, a, 0, p, 0, NULL), bad);
    FX_CHECK_UNCHANGED(before, world);
    CHECK_OK(tes_world_validate(world));
}

/* Runs `call`, which must fail with `code`, and checks that nothing observable changed. */
#define EXPECT_FAILS(call, code)             \
    do {                                     \
        fx_snapshot_take(before, world);     \
        CHECK_ERR(call, code);               \
        FX_CHECK_UNCHANGED(before, world);   \
        CHECK_OK(tes_world_validate(world)); \
    } while (0)

TEST(failed_calls_leave_the_world_unchanged) {
    tes_world_desc_t wdesc = {.chunk_bytes = 1024, .min_free_indices = 2};
    tes_world_t *world = fx_world(&wdesc);
    tes_component_t p = fx_component(world, "Position", position_fields, 2);
    tes_component_t arr = fx_component(world, "Arrays", array_fields, 2);
    tes_component_t t = fx_tag(world, "Frozen");
    tes_component_t pa[] = {p, arr}, pt[] = {p, t}, pat[] = {p, arr, t};
    enum { N = 150 };
    tes_entity_t e[N];
    for (int i = 0; i < N; i++) {
        const tes_component_t *sets[] = {pa, pt, pat};
        const uint32_t counts[] = {2, 2, 3};
        CHECK_OK(tes_spawn(world, sets[i % 3], counts[i % 3], &e[i]));
        CHECK_OK(tes_set_number(world, e[i], p, 0, 0, i));
        if (i % 3 != 1) CHECK_OK(tes_set_number(world, e[i], arr, 0, 4, i % 256));
    }
    tes_entity_t dead = e[10];
    CHECK_OK(tes_despawn(world, dead));
    tes_entity_t live = e[0];   /* {P, Arrays} */
    tes_entity_t tagged = e[1]; /* {P, Frozen} */
    tes_archetype_t a_pa = fx_archetype_of(world, live);
    fx_snapshot_t *before = fx_snapshot_new();

    tes_component_desc_t dup = {"Position", position_fields, 2};
    tes_field_desc_t bad_fields[] = {{"x", (tes_type_t)0, 0}};
    tes_component_desc_t bad = {"Bad", bad_fields, 1};
    tes_component_t c;
    tes_entity_t out;
    tes_archetype_t a;
    bool has;
    float f = 1;
    double d;
    void *ptr;
    tes_location_t loc;
    uint8_t bytes[6] = {1, 2, 3, 4, 5, 6};
    tes_component_t unknown = t + 1;
    tes_component_t dup_set[] = {p, t, p};
    tes_component_t unknown_set[] = {p, unknown};
    tes_entity_t stale_list[] = {e[2], e[3], dead};
    tes_entity_t dup_list[] = {e[2], e[3], e[2]};

    EXPECT_FAILS(tes_component_register(world, &dup, &c), TES_ERR_DUPLICATE_NAME);
    EXPECT_FAILS(tes_component_register(world, &bad, &c), TES_ERR_BAD_SCHEMA);
    EXPECT_FAILS(tes_spawn(world, unknown_set, 2, &out), TES_ERR_UNKNOWN_COMPONENT);
    EXPECT_FAILS(tes_spawn(world, dup_set, 3, &out), TES_ERR_INVALID_ARGUMENT);
    EXPECT_FAILS(tes_spawn_batch(world, unknown_set, 2, 50, NULL), TES_ERR_UNKNOWN_COMPONENT);
    EXPECT_FAILS(tes_despawn(world, dead), TES_ERR_STALE_ENTITY);
    EXPECT_FAILS(tes_despawn_batch(world, stale_list, 3), TES_ERR_STALE_ENTITY);
    EXPECT_FAILS(tes_despawn_batch(world, dup_list, 3), TES_ERR_DUPLICATE_ENTITY);
    EXPECT_FAILS(tes_add(world, dead, t), TES_ERR_STALE_ENTITY);
    EXPECT_FAILS(tes_add(world, live, unknown), TES_ERR_UNKNOWN_COMPONENT);
    EXPECT_FAILS(tes_remove(world, dead, p), TES_ERR_STALE_ENTITY);
    EXPECT_FAILS(tes_remove(world, live, unknown), TES_ERR_UNKNOWN_COMPONENT);
    EXPECT_FAILS(tes_has(world, dead, p, &has), TES_ERR_STALE_ENTITY);
    EXPECT_FAILS(tes_get(world, live, arr, 0, bytes, 6), TES_ERR_BAD_SIZE);
    EXPECT_FAILS(tes_set(world, live, arr, 0, bytes, 6), TES_ERR_BAD_SIZE);
    EXPECT_FAILS(tes_set(world, live, arr, 0, bytes, 4), TES_ERR_BAD_SIZE);
    EXPECT_FAILS(tes_set(world, tagged, arr, 0, bytes, 5), TES_ERR_MISSING_COMPONENT);
    EXPECT_FAILS(tes_set(world, tagged, t, 0, bytes, 5), TES_ERR_TAG_HAS_NO_DATA);
    EXPECT_FAILS(tes_set(world, live, arr, 2, bytes, 5), TES_ERR_UNKNOWN_FIELD);
    EXPECT_FAILS(tes_set(world, dead, p, 0, &f, 4), TES_ERR_STALE_ENTITY);
    EXPECT_FAILS(tes_set_number(world, live, arr, 0, 0, 256), TES_ERR_BAD_VALUE);
    EXPECT_FAILS(tes_set_number(world, live, arr, 0, 0, 1.5), TES_ERR_BAD_VALUE);
    EXPECT_FAILS(tes_set_number(world, live, arr, 0, 0, NAN), TES_ERR_BAD_VALUE);
    EXPECT_FAILS(tes_set_number(world, live, arr, 0, 5, 1), TES_ERR_ELEMENT_OUT_OF_RANGE);
    EXPECT_FAILS(tes_set_number(world, live, unknown, 0, 0, 1), TES_ERR_UNKNOWN_COMPONENT);
    EXPECT_FAILS(tes_get_number(world, dead, p, 0, 0, &d), TES_ERR_STALE_ENTITY);
    EXPECT_FAILS(tes_field_ptr(world, dead, p, 0, &ptr), TES_ERR_STALE_ENTITY);
    EXPECT_FAILS(tes_field_ptr(world, tagged, t, 0, &ptr), TES_ERR_TAG_HAS_NO_DATA);
    EXPECT_FAILS(tes_location(world, dead, &loc), TES_ERR_STALE_ENTITY);
    EXPECT_FAILS(tes_archetype_find(world, dup_set, 3, &a), TES_ERR_INVALID_ARGUMENT);
    EXPECT_FAILS(tes_archetype_find(world, unknown_set, 2, &a), TES_ERR_UNKNOWN_COMPONENT);
    EXPECT_FAILS(tes_archetype_add(world, 999, t), TES_ERR_UNKNOWN_ARCHETYPE);
    EXPECT_FAILS(tes_archetype_add(world, a_pa, unknown), TES_ERR_UNKNOWN_COMPONENT);
    EXPECT_FAILS(tes_archetype_remove(world, 999, t), TES_ERR_UNKNOWN_ARCHETYPE);
    EXPECT_FAILS(tes_archetype_remove(world, a_pa, unknown), TES_ERR_UNKNOWN_COMPONENT);
    EXPECT_FAILS(tes_archetype_spawn(world, 999, 3, NULL), TES_ERR_UNKNOWN_ARCHETYPE);
    EXPECT_FAILS(tes_chunk_column(world, a_pa, 0, t, 0, &ptr), TES_ERR_MISSING_COMPONENT);
    tes_chunk_info_t chunk;
    EXPECT_FAILS(tes_chunk_info(world, 999, 0, &chunk), TES_ERR_UNKNOWN_ARCHETYPE);
    CHECK_NUM_EQ(fx_get_number(world, live, p, 0, 0), 0);
    CHECK_NUM_EQ(fx_get_number(world, e[3], arr, 0, 4), 3);
}

/* Bad input changes nothing at all, memory included. Running out of memory part way leaves
 * every entity and value as it was; what the call had reserved stays accounted for. */
TEST(bad_input_changes_nothing_and_out_of_memory_changes_no_data) {
    fx_alloc_t *alloc = fx_alloc_new();
    tes_world_desc_t desc = {.allocator = fx_allocator(alloc)};
    tes_world_t *world = fx_world(&desc);
    tes_component_t p = fx_component(world, "Position", position_fields, 2);
    tes_component_t t = fx_tag(world, "Frozen");
    fx_snapshot_t *before = fx_snapshot_of(world);
    tes_entity_t e;
    tes_archetype_t a;
    tes_component_t dup[] = {p, t, p, t, p, t, p, t, p, t, p, t};
    tes_component_t unknown[] = {p, t, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86};
    CHECK_ERR(tes_spawn(world, dup, 12, &e), TES_ERR_INVALID_ARGUMENT);
    FX_CHECK_UNCHANGED_STRICT(before, world);
    CHECK_ERR(tes_spawn(world, unknown, 12, &e), TES_ERR_UNKNOWN_COMPONENT);
    FX_CHECK_UNCHANGED_STRICT(before, world);
    CHECK_ERR(tes_archetype_find(world, dup, 12, &a), TES_ERR_INVALID_ARGUMENT);
    FX_CHECK_UNCHANGED_STRICT(before, world);
    /* Out of memory in the middle of a registration and of a spawn. */
    for (int64_t k = 0; k < 3; k++) {
        alloc->fail_after = (int64_t)alloc->allocs + k;
        alloc->fail_once = true;
        tes_component_t c;
        tes_component_desc_t cdesc = {"Late", array_fields, 2};
        tes_result_t r = tes_component_register(world, &cdesc, &c);
        if (r == TES_OK) break;
        CHECK_ERR(r, TES_ERR_OUT_OF_MEMORY);
        FX_CHECK_UNCHANGED(before, world);
        CHECK_EQ(fx_stats(world).bytes_allocated, alloc->live_bytes);
    }
    fx_snapshot_take(before, world);
    tes_component_t pt[] = {p, t};
    for (int64_t k = 0; k < 8; k++) {
        alloc->fail_after = (int64_t)alloc->allocs + k;
        alloc->fail_once = true;
        tes_result_t r = tes_spawn(world, pt, 2, &e);
        if (r == TES_OK) break;
        CHECK_ERR(r, TES_ERR_OUT_OF_MEMORY);
        FX_CHECK_UNCHANGED(before, world);
        CHECK_EQ(fx_stats(world).bytes_allocated, alloc->live_bytes);
    }
    alloc->fail_after = -1;
    CHECK_EQ(fx_stats(world).bytes_allocated, alloc->live_bytes);
}
