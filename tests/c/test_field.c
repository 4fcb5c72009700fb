/* Field access: raw get/set with size checks, numbers of every type, conversion rules,
 * arrays, and the error for every wrong target. */
#include "fixtures.h"

#include <float.h>
#include <math.h>

static const tes_field_desc_t all_fields[] = {
    {"f32", TES_F32, 0}, {"f64", TES_F64, 0}, {"i8", TES_I8, 0},   {"u8", TES_U8, 0},
    {"i16", TES_I16, 0}, {"u16", TES_U16, 0}, {"i32", TES_I32, 0}, {"u32", TES_U32, 0}};
enum { F_F32, F_F64, F_I8, F_U8, F_I16, F_U16, F_I32, F_U32 };
static const tes_field_desc_t array_fields[] = {
    {"bytes", TES_U8, 5}, {"shorts", TES_I16, 3}, {"doubles", TES_F64, 4}, {"one", TES_F32, 1}};

typedef struct scene_t {
    tes_world_t *world;
    tes_component_t all, arrays, tag, absent;
    tes_entity_t e, neighbour_before, neighbour_after;
} scene_t;

static scene_t make_scene(void) {
    scene_t s;
    s.world = fx_world(NULL);
    s.all = fx_component(s.world, "All", all_fields, 8);
    s.arrays = fx_component(s.world, "Arrays", array_fields, 4);
    s.tag = fx_tag(s.world, "Tag");
    s.absent = fx_component(s.world, "Absent", all_fields, 2);
    tes_component_t set[] = {s.all, s.arrays, s.tag};
    CHECK_OK(tes_spawn(s.world, set, 3, &s.neighbour_before));
    CHECK_OK(tes_spawn(s.world, set, 3, &s.e));
    CHECK_OK(tes_spawn(s.world, set, 3, &s.neighbour_after));
    return s;
}

/* The neighbours in the same chunk still read all zeroes. */
static void check_neighbours_untouched(scene_t *s) {
    tes_entity_t n[2] = {s->neighbour_before, s->neighbour_after};
    for (int k = 0; k < 2; k++) {
        for (uint32_t f = 0; f < 8; f++)
            CHECK_NUM_EQ(fx_get_number(s->world, n[k], s->all, f, 0), 0);
        for (uint32_t i = 0; i < 5; i++)
            CHECK_NUM_EQ(fx_get_number(s->world, n[k], s->arrays, 0, i), 0);
        for (uint32_t i = 0; i < 4; i++)
            CHECK_NUM_EQ(fx_get_number(s->world, n[k], s->arrays, 2, i), 0);
    }
}

static void check_set_number_rejected(scene_t *s, uint32_t field, double value) {
    double before = fx_get_number(s->world, s->e, s->all, field, 0);
    tes_result_t r = tes_set_number(s->world, s->e, s->all, field, 0, value);
    if (r != TES_ERR_BAD_VALUE) {
        harness_fail(__FILE__, __LINE__,
                     "set_number(%s, %.17g): expected TES_ERR_BAD_VALUE, got %s",
                     all_fields[field].name, value, tes_result_name(r));
    }
    CHECK_NUM_EQ(fx_get_number(s->world, s->e, s->all, field, 0), before);
}

static void check_round_trip(scene_t *s, uint32_t field, double value) {
    tes_result_t r = tes_set_number(s->world, s->e, s->all, field, 0, value);
    if (r != TES_OK) {
        harness_fail(__FILE__, __LINE__, "set_number(%s, %.17g): %s", all_fields[field].name, value,
                     tes_result_name(r));
    }
    double got = fx_get_number(s->world, s->e, s->all, field, 0);
    if (!(got == value || (got != got && value != value))) {
        harness_fail(__FILE__, __LINE__, "%s: set %.17g, got %.17g", all_fields[field].name, value,
                     got);
    }
}

TEST(set_then_get_raw_bytes) {
    scene_t s = make_scene();
    float f = 3.5f;
    double d = -1e300;
    int16_t shorts[3] = {-32768, 7, 32767};
    uint8_t bytes[5] = {1, 2, 3, 254, 255};
    CHECK_OK(tes_set(s.world, s.e, s.all, F_F32, &f, sizeof f));
    CHECK_OK(tes_set(s.world, s.e, s.all, F_F64, &d, sizeof d));
    CHECK_OK(tes_set(s.world, s.e, s.arrays, 1, shorts, sizeof shorts));
    CHECK_OK(tes_set(s.world, s.e, s.arrays, 0, bytes, sizeof bytes));
    float f2 = 0;
    double d2 = 0;
    int16_t shorts2[3] = {0};
    uint8_t bytes2[5] = {0};
    CHECK_OK(tes_get(s.world, s.e, s.all, F_F32, &f2, sizeof f2));
    CHECK_OK(tes_get(s.world, s.e, s.all, F_F64, &d2, sizeof d2));
    CHECK_OK(tes_get(s.world, s.e, s.arrays, 1, shorts2, sizeof shorts2));
    CHECK_OK(tes_get(s.world, s.e, s.arrays, 0, bytes2, sizeof bytes2));
    CHECK(f2 == f);
    CHECK(d2 == d);
    CHECK(memcmp(shorts, shorts2, sizeof shorts) == 0);
    CHECK(memcmp(bytes, bytes2, sizeof bytes) == 0);
    CHECK_NUM_EQ(fx_get_number(s.world, s.e, s.arrays, 1, 0), -32768);
    CHECK_NUM_EQ(fx_get_number(s.world, s.e, s.arrays, 0, 3), 254);
    check_neighbours_untouched(&s);
}

TEST(get_and_set_reject_the_wrong_size) {
    scene_t s = make_scene();
    CHECK_OK(tes_set_number(s.world, s.e, s.arrays, 1, 2, 99));
    fx_snapshot_t *before = fx_snapshot_of(s.world);
    /* Exact-size heap buffers: a write past `size` is caught by the sanitizer. */
    int16_t *small = (int16_t *)malloc(4);
    int16_t *large = (int16_t *)malloc(8);
    CHECK(small && large);
    memset(small, 0x5a, 4);
    memset(large, 0x5a, 8);
    tes_result_t r1 = tes_get(s.world, s.e, s.arrays, 1, small, 4);
    tes_result_t r2 = tes_get(s.world, s.e, s.arrays, 1, large, 8);
    tes_result_t r3 = tes_set(s.world, s.e, s.arrays, 1, small, 4);
    tes_result_t r4 = tes_set(s.world, s.e, s.arrays, 1, large, 8);
    tes_result_t r5 = tes_set(s.world, s.e, s.all, F_F64, large, 4);
    tes_result_t r6 = tes_get(s.world, s.e, s.all, F_U8, large, 0);
    free(small);
    free(large);
    CHECK_ERR(r1, TES_ERR_BAD_SIZE);
    CHECK_ERR(r2, TES_ERR_BAD_SIZE);
    CHECK_ERR(r3, TES_ERR_BAD_SIZE);
    CHECK_ERR(r4, TES_ERR_BAD_SIZE);
    CHECK_ERR(r5, TES_ERR_BAD_SIZE);
    CHECK_ERR(r6, TES_ERR_BAD_SIZE);
    FX_CHECK_UNCHANGED(before, s.world);
}

TEST(get_and_set_reject_null_buffers) {
    scene_t s = make_scene();
    fx_snapshot_t *before = fx_snapshot_of(s.world);
    CHECK_ERR(tes_get(s.world, s.e, s.all, F_I32, NULL, 4), TES_ERR_INVALID_ARGUMENT);
    CHECK_ERR(tes_set(s.world, s.e, s.all, F_I32, NULL, 4), TES_ERR_INVALID_ARGUMENT);
    CHECK_ERR(tes_get_number(s.world, s.e, s.all, F_I32, 0, NULL), TES_ERR_INVALID_ARGUMENT);
    CHECK_ERR(tes_field_ptr(s.world, s.e, s.all, F_I32, NULL), TES_ERR_INVALID_ARGUMENT);
    FX_CHECK_UNCHANGED(before, s.world);
}

TEST(numbers_round_trip_exactly_for_every_type) {
    scene_t s = make_scene();
    const double f32_values[] = {0,        -0.0,      1,        -1,       0.5,
                                 16777216, -16777216, FLT_MAX,  -FLT_MAX, FLT_MIN,
                                 0x1p-149, INFINITY,  -INFINITY};
    const double f64_values[] = {
        0, 1.0 / 3, -1e300, DBL_MAX, DBL_MIN, 0x1p-1074, 9007199254740993.0, INFINITY, -INFINITY};
    const double i8_values[] = {-128, -1, 0, 1, 127};
    const double u8_values[] = {0, 1, 128, 255};
    const double i16_values[] = {-32768, -1, 0, 12345, 32767};
    const double u16_values[] = {0, 1, 40000, 65535};
    const double i32_values[] = {-2147483648.0, -1, 0, 123456789, 2147483647.0};
    const double u32_values[] = {0, 1, 2147483648.0, 4000000000.0, 4294967295.0};
#define ROUND_TRIP(field, values)                                 \
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) \
    check_round_trip(&s, field, values[i])
    ROUND_TRIP(F_F32, f32_values);
    ROUND_TRIP(F_F64, f64_values);
    ROUND_TRIP(F_I8, i8_values);
    ROUND_TRIP(F_U8, u8_values);
    ROUND_TRIP(F_I16, i16_values);
    ROUND_TRIP(F_U16, u16_values);
    ROUND_TRIP(F_I32, i32_values);
    ROUND_TRIP(F_U32, u32_values);
#undef ROUND_TRIP
    check_neighbours_untouched(&s);
}

TEST(set_number_stores_the_types_bit_pattern) {
    scene_t s = make_scene();
    CHECK_OK(tes_set_number(s.world, s.e, s.all, F_I8, 0, -2));
    CHECK_OK(tes_set_number(s.world, s.e, s.all, F_U16, 0, 65534));
    CHECK_OK(tes_set_number(s.world, s.e, s.all, F_I32, 0, -5));
    CHECK_OK(tes_set_number(s.world, s.e, s.all, F_F32, 0, 0.1));
    int8_t i8;
    uint16_t u16;
    int32_t i32;
    float f32;
    CHECK_OK(tes_get(s.world, s.e, s.all, F_I8, &i8, 1));
    CHECK_OK(tes_get(s.world, s.e, s.all, F_U16, &u16, 2));
    CHECK_OK(tes_get(s.world, s.e, s.all, F_I32, &i32, 4));
    CHECK_OK(tes_get(s.world, s.e, s.all, F_F32, &f32, 4));
    CHECK_EQ(i8, -2);
    CHECK_EQ(u16, 65534);
    CHECK_EQ(i32, -5);
    CHECK(f32 == 0.1f);
}

TEST(set_number_rounds_to_f32) {
    scene_t s = make_scene();
    const double values[] = {0.1, 1.0 / 3, 16777217.0, -2.7182818284590452, 1e-40, 3.4e38};
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        CHECK_OK(tes_set_number(s.world, s.e, s.all, F_F32, 0, values[i]));
        CHECK_NUM_EQ(fx_get_number(s.world, s.e, s.all, F_F32, 0), (double)(float)values[i]);
    }
}

/* "a finite value beyond its range is rejected the same way (it would become infinity)" */
TEST(set_number_rejects_finite_values_beyond_f32_range) {
    scene_t s = make_scene();
    CHECK_OK(tes_set_number(s.world, s.e, s.all, F_F32, 0, 2.5));
    check_set_number_rejected(&s, F_F32, 1e39);
    check_set_number_rejected(&s, F_F32, -1e39);
    check_set_number_rejected(&s, F_F32, DBL_MAX);
    check_set_number_rejected(&s, F_F32, -DBL_MAX);
    check_set_number_rejected(&s, F_F32, 2.0 * FLT_MAX);
    CHECK_NUM_EQ(fx_get_number(s.world, s.e, s.all, F_F32, 0), 2.5);
    /* The largest float itself and infinities are stored as they are. */
    check_round_trip(&s, F_F32, FLT_MAX);
    check_round_trip(&s, F_F32, -FLT_MAX);
    check_round_trip(&s, F_F32, INFINITY);
    /* f64 takes everything. */
    check_round_trip(&s, F_F64, DBL_MAX);
    check_round_trip(&s, F_F64, -INFINITY);
}

TEST(float_fields_accept_nan) {
    scene_t s = make_scene();
    CHECK_OK(tes_set_number(s.world, s.e, s.all, F_F32, 0, NAN));
    CHECK_OK(tes_set_number(s.world, s.e, s.all, F_F64, 0, NAN));
    double a = fx_get_number(s.world, s.e, s.all, F_F32, 0);
    double b = fx_get_number(s.world, s.e, s.all, F_F64, 0);
    CHECK(a != a);
    CHECK(b != b);
}

TEST(set_number_rejects_non_integral_values_into_integers) {
    scene_t s = make_scene();
    for (uint32_t f = F_I8; f <= F_U32; f++) {
        CHECK_OK(tes_set_number(s.world, s.e, s.all, f, 0, 5));
        check_set_number_rejected(&s, f, 0.5);
        check_set_number_rejected(&s, f, 1.0000001);
        check_set_number_rejected(&s, f, 4.9e-324);
        check_set_number_rejected(&s, f, 100.25);
        CHECK_NUM_EQ(fx_get_number(s.world, s.e, s.all, f, 0), 5);
    }
    check_set_number_rejected(&s, F_I8, -0.5);
    check_set_number_rejected(&s, F_I32, -2147483647.5);
    check_set_number_rejected(&s, F_U32, 4294967294.5);
}

TEST(set_number_rejects_out_of_range_integers) {
    scene_t s = make_scene();
    check_set_number_rejected(&s, F_I8, -129);
    check_set_number_rejected(&s, F_I8, 128);
    check_set_number_rejected(&s, F_U8, -1);
    check_set_number_rejected(&s, F_U8, 256);
    check_set_number_rejected(&s, F_I16, -32769);
    check_set_number_rejected(&s, F_I16, 32768);
    check_set_number_rejected(&s, F_U16, -1);
    check_set_number_rejected(&s, F_U16, 65536);
    check_set_number_rejected(&s, F_I32, -2147483649.0);
    check_set_number_rejected(&s, F_I32, 2147483648.0);
    check_set_number_rejected(&s, F_U32, -1);
    check_set_number_rejected(&s, F_U32, 4294967296.0);
    for (uint32_t f = F_I8; f <= F_U32; f++) {
        check_set_number_rejected(&s, f, 1e300);
        check_set_number_rejected(&s, f, -1e300);
        check_set_number_rejected(&s, f, 9223372036854775808.0);  /* 2^63 */
        check_set_number_rejected(&s, f, 18446744073709551616.0); /* 2^64 */
    }
    check_neighbours_untouched(&s);
}

TEST(set_number_rejects_nan_and_infinity_into_integers) {
    scene_t s = make_scene();
    for (uint32_t f = F_I8; f <= F_U32; f++) {
        CHECK_OK(tes_set_number(s.world, s.e, s.all, f, 0, 7));
        check_set_number_rejected(&s, f, NAN);
        check_set_number_rejected(&s, f, -NAN);
        check_set_number_rejected(&s, f, INFINITY);
        check_set_number_rejected(&s, f, -INFINITY);
        CHECK_NUM_EQ(fx_get_number(s.world, s.e, s.all, f, 0), 7);
    }
}

TEST(negative_zero_is_an_integral_value) {
    scene_t s = make_scene();
    for (uint32_t f = F_I8; f <= F_U32; f++) {
        CHECK_OK(tes_set_number(s.world, s.e, s.all, f, 0, 9));
        CHECK_OK(tes_set_number(s.world, s.e, s.all, f, 0, -0.0));
        CHECK_NUM_EQ(fx_get_number(s.world, s.e, s.all, f, 0), 0);
    }
}

TEST(array_elements_are_independent) {
    scene_t s = make_scene();
    for (uint32_t i = 0; i < 5; i++)
        CHECK_OK(tes_set_number(s.world, s.e, s.arrays, 0, i, 10 + i));
    for (uint32_t i = 0; i < 3; i++)
        CHECK_OK(tes_set_number(s.world, s.e, s.arrays, 1, i, -100 * (int)i));
    for (uint32_t i = 0; i < 4; i++)
        CHECK_OK(tes_set_number(s.world, s.e, s.arrays, 2, i, i / 7.0));
    CHECK_OK(tes_set_number(s.world, s.e, s.arrays, 3, 0, 1.5));
    for (uint32_t i = 0; i < 5; i++)
        CHECK_NUM_EQ(fx_get_number(s.world, s.e, s.arrays, 0, i), 10 + i);
    for (uint32_t i = 0; i < 3; i++)
        CHECK_NUM_EQ(fx_get_number(s.world, s.e, s.arrays, 1, i), -100 * (int)i);
    for (uint32_t i = 0; i < 4; i++)
        CHECK_NUM_EQ(fx_get_number(s.world, s.e, s.arrays, 2, i), i / 7.0);
    CHECK_NUM_EQ(fx_get_number(s.world, s.e, s.arrays, 3, 0), 1.5);
    double raw[4];
    CHECK_OK(tes_get(s.world, s.e, s.arrays, 2, raw, sizeof raw));
    for (int i = 0; i < 4; i++)
        CHECK_NUM_EQ(raw[i], i / 7.0);
    check_neighbours_untouched(&s);
}

TEST(array_element_out_of_range_is_rejected) {
    scene_t s = make_scene();
    fx_snapshot_t *before = fx_snapshot_of(s.world);
    double v;
    CHECK_ERR(tes_get_number(s.world, s.e, s.arrays, 0, 5, &v), TES_ERR_ELEMENT_OUT_OF_RANGE);
    CHECK_ERR(tes_set_number(s.world, s.e, s.arrays, 0, 5, 1), TES_ERR_ELEMENT_OUT_OF_RANGE);
    CHECK_ERR(tes_set_number(s.world, s.e, s.arrays, 2, 4, 1), TES_ERR_ELEMENT_OUT_OF_RANGE);
    CHECK_ERR(tes_set_number(s.world, s.e, s.arrays, 3, 1, 1), TES_ERR_ELEMENT_OUT_OF_RANGE);
    CHECK_ERR(tes_get_number(s.world, s.e, s.all, F_U32, 1, &v), TES_ERR_ELEMENT_OUT_OF_RANGE);
    CHECK_ERR(tes_set_number(s.world, s.e, s.all, F_U32, 1, 1), TES_ERR_ELEMENT_OUT_OF_RANGE);
    CHECK_ERR(tes_set_number(s.world, s.e, s.all, F_F64, UINT32_MAX, 1),
              TES_ERR_ELEMENT_OUT_OF_RANGE);
    FX_CHECK_UNCHANGED(before, s.world);
}

TEST(tag_field_access_reports_tag_has_no_data) {
    scene_t s = make_scene();
    fx_snapshot_t *before = fx_snapshot_of(s.world);
    int32_t v = 1;
    double d;
    void *ptr;
    CHECK_ERR(tes_get(s.world, s.e, s.tag, 0, &v, sizeof v), TES_ERR_TAG_HAS_NO_DATA);
    CHECK_ERR(tes_set(s.world, s.e, s.tag, 0, &v, sizeof v), TES_ERR_TAG_HAS_NO_DATA);
    CHECK_ERR(tes_get_number(s.world, s.e, s.tag, 0, 0, &d), TES_ERR_TAG_HAS_NO_DATA);
    CHECK_ERR(tes_set_number(s.world, s.e, s.tag, 0, 0, 1), TES_ERR_TAG_HAS_NO_DATA);
    CHECK_ERR(tes_field_ptr(s.world, s.e, s.tag, 0, &ptr), TES_ERR_TAG_HAS_NO_DATA);
    FX_CHECK_UNCHANGED(before, s.world);
}

TEST(missing_component_is_reported) {
    scene_t s = make_scene();
    fx_snapshot_t *before = fx_snapshot_of(s.world);
    float v = 1;
    double d;
    void *ptr;
    CHECK_ERR(tes_get(s.world, s.e, s.absent, 0, &v, sizeof v), TES_ERR_MISSING_COMPONENT);
    CHECK_ERR(tes_set(s.world, s.e, s.absent, 0, &v, sizeof v), TES_ERR_MISSING_COMPONENT);
    CHECK_ERR(tes_get_number(s.world, s.e, s.absent, 0, 0, &d), TES_ERR_MISSING_COMPONENT);
    CHECK_ERR(tes_set_number(s.world, s.e, s.absent, 0, 0, 1), TES_ERR_MISSING_COMPONENT);
    CHECK_ERR(tes_field_ptr(s.world, s.e, s.absent, 0, &ptr), TES_ERR_MISSING_COMPONENT);
    FX_CHECK_UNCHANGED(before, s.world);
}

TEST(unknown_component_or_field_is_reported) {
    scene_t s = make_scene();
    fx_snapshot_t *before = fx_snapshot_of(s.world);
    float v = 1;
    double d;
    void *ptr;
    tes_component_t unknown = s.absent + 1;
    CHECK_ERR(tes_get(s.world, s.e, unknown, 0, &v, sizeof v), TES_ERR_UNKNOWN_COMPONENT);
    CHECK_ERR(tes_set(s.world, s.e, unknown, 0, &v, sizeof v), TES_ERR_UNKNOWN_COMPONENT);
    CHECK_ERR(tes_get_number(s.world, s.e, unknown, 0, 0, &d), TES_ERR_UNKNOWN_COMPONENT);
    CHECK_ERR(tes_set_number(s.world, s.e, unknown, 0, 0, 1), TES_ERR_UNKNOWN_COMPONENT);
    CHECK_ERR(tes_field_ptr(s.world, s.e, unknown, 0, &ptr), TES_ERR_UNKNOWN_COMPONENT);
    CHECK_ERR(tes_get(s.world, s.e, s.all, 8, &v, sizeof v), TES_ERR_UNKNOWN_FIELD);
    CHECK_ERR(tes_set(s.world, s.e, s.all, 8, &v, sizeof v), TES_ERR_UNKNOWN_FIELD);
    CHECK_ERR(tes_get_number(s.world, s.e, s.all, 8, 0, &d), TES_ERR_UNKNOWN_FIELD);
    CHECK_ERR(tes_set_number(s.world, s.e, s.all, UINT32_MAX, 0, 1), TES_ERR_UNKNOWN_FIELD);
    CHECK_ERR(tes_field_ptr(s.world, s.e, s.arrays, 4, &ptr), TES_ERR_UNKNOWN_FIELD);
    FX_CHECK_UNCHANGED(before, s.world);
}

TEST(field_ptr_writes_are_visible_through_get) {
    scene_t s = make_scene();
    void *ptr = NULL;
    CHECK_OK(tes_field_ptr(s.world, s.e, s.arrays, 2, &ptr));
    CHECK(ptr != NULL);
    CHECK_EQ((uintptr_t)ptr % 8, 0);
    double *d = (double *)ptr;
    for (int i = 0; i < 4; i++)
        d[i] = 0.5 * i - 3;
    for (uint32_t i = 0; i < 4; i++)
        CHECK_NUM_EQ(fx_get_number(s.world, s.e, s.arrays, 2, i), 0.5 * i - 3);
    CHECK_OK(tes_field_ptr(s.world, s.e, s.all, F_U16, &ptr));
    *(uint16_t *)ptr = 60000;
    CHECK_NUM_EQ(fx_get_number(s.world, s.e, s.all, F_U16, 0), 60000);
    /* And set is visible through the pointer. */
    CHECK_OK(tes_set_number(s.world, s.e, s.all, F_U16, 0, 42));
    CHECK_EQ(*(uint16_t *)ptr, 42);
    check_neighbours_untouched(&s);
}

TEST(writes_to_one_entity_leave_the_others_alone) {
    tes_world_t *world = fx_world(NULL);
    tes_component_t all = fx_component(world, "All", all_fields, 8);
    tes_entity_t e[64];
    CHECK_OK(tes_spawn_batch(world, &all, 1, 64, e));
    for (int i = 0; i < 64; i++) {
        for (uint32_t f = 0; f < 8; f++)
            CHECK_OK(tes_set_number(world, e[i], all, f, 0, i + f));
    }
    for (int i = 0; i < 64; i++) {
        for (uint32_t f = 0; f < 8; f++)
            CHECK_NUM_EQ(fx_get_number(world, e[i], all, f, 0), i + f);
    }
}
