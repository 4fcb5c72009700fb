/* Components: registration, dense ids, lookups, field info, schema errors, limits. */
#include "fixtures.h"

static const tes_field_desc_t position_fields[] = {{"x", TES_F32, 0}, {"y", TES_F32, 1}};

/* A registration that must fail with `expected` and change nothing. */
static void check_register_fails(tes_world_t *world, const tes_component_desc_t *desc,
                                 tes_result_t expected) {
    fx_snapshot_t *before = fx_snapshot_of(world);
    tes_component_t out = 777;
    CHECK_ERR(tes_component_register(world, desc, &out), expected);
    FX_CHECK_UNCHANGED(before, world);
}

TEST(component_ids_are_dense_from_zero) {
    tes_world_t *world = fx_world(NULL);
    CHECK_EQ(fx_component(world, "Position", position_fields, 2), 0);
    CHECK_EQ(fx_tag(world, "Frozen"), 1);
    CHECK_EQ(fx_component(world, "Velocity", position_fields, 2), 2);
    CHECK_EQ(fx_tag(world, "Player"), 3);
    CHECK_EQ(fx_stats(world).component_count, 4);
}

TEST(component_lookup_finds_by_name) {
    tes_world_t *world = fx_world(NULL);
    tes_component_t p = fx_component(world, "Position", position_fields, 2);
    tes_component_t t = fx_tag(world, "Frozen");
    tes_component_t found = 999;
    CHECK_OK(tes_component_lookup(world, "Position", &found));
    CHECK_EQ(found, p);
    CHECK_OK(tes_component_lookup(world, "Frozen", &found));
    CHECK_EQ(found, t);
}

TEST(component_lookup_unknown_name_fails) {
    tes_world_t *world = fx_world(NULL);
    fx_component(world, "Position", position_fields, 2);
    tes_component_t found = 999;
    CHECK_ERR(tes_component_lookup(world, "position", &found), TES_ERR_UNKNOWN_COMPONENT);
    CHECK_ERR(tes_component_lookup(world, "Pos", &found), TES_ERR_UNKNOWN_COMPONENT);
    CHECK_ERR(tes_component_lookup(world, "Positions", &found), TES_ERR_UNKNOWN_COMPONENT);
    CHECK_ERR(tes_component_lookup(world, "", &found), TES_ERR_UNKNOWN_COMPONENT);
}

TEST(component_names_are_case_sensitive_and_distinct) {
    tes_world_t *world = fx_world(NULL);
    tes_component_t a = fx_tag(world, "Pos");
    tes_component_t b = fx_tag(world, "pos");
    tes_component_t c = fx_tag(world, "Pos2");
    tes_component_t found;
    CHECK_OK(tes_component_lookup(world, "pos", &found));
    CHECK_EQ(found, b);
    CHECK_OK(tes_component_lookup(world, "Pos", &found));
    CHECK_EQ(found, a);
    CHECK_OK(tes_component_lookup(world, "Pos2", &found));
    CHECK_EQ(found, c);
}

TEST(component_info_reports_name_fields_and_row_bytes) {
    tes_world_t *world = fx_world(NULL);
    static const tes_field_desc_t fields[] = {
        {"a", TES_F64, 0}, {"b", TES_U8, 1}, {"c", TES_I16, 5}, {"d", TES_U32, 0}};
    tes_component_t c = fx_component(world, "Mixed", fields, 4);
    tes_component_info_t info;
    CHECK_OK(tes_component_info(world, c, &info));
    CHECK(strcmp(info.name, "Mixed") == 0);
    CHECK_EQ(info.field_count, 4);
    CHECK_EQ(info.row_bytes, 8 + 1 + 10 + 4);
}

TEST(component_info_unknown_id_fails) {
    tes_world_t *world = fx_world(NULL);
    fx_tag(world, "Frozen");
    tes_component_info_t info;
    CHECK_ERR(tes_component_info(world, 1, &info), TES_ERR_UNKNOWN_COMPONENT);
    CHECK_ERR(tes_component_info(world, 12345, &info), TES_ERR_UNKNOWN_COMPONENT);
    CHECK_ERR(tes_component_info(world, UINT32_MAX, &info), TES_ERR_UNKNOWN_COMPONENT);
}

TEST(component_names_are_copied_by_the_world) {
    tes_world_t *world = fx_world(NULL);
    char name[16], field_name[16];
    strcpy(name, "Temp");
    strcpy(field_name, "value");
    tes_field_desc_t field = {field_name, TES_I32, 0};
    tes_component_t c = fx_component(world, name, &field, 1);
    memset(name, 'x', sizeof name - 1);
    memset(field_name, 'y', sizeof field_name - 1);
    tes_component_info_t info;
    CHECK_OK(tes_component_info(world, c, &info));
    CHECK(strcmp(info.name, "Temp") == 0);
    tes_field_info_t finfo;
    CHECK_OK(tes_field_info(world, c, 0, &finfo));
    CHECK(strcmp(finfo.name, "value") == 0);
    tes_component_t found;
    CHECK_OK(tes_component_lookup(world, "Temp", &found));
    CHECK_EQ(found, c);
    uint32_t f;
    CHECK_OK(tes_field_lookup(world, c, "value", &f));
    CHECK_EQ(f, 0);
}

TEST(tag_has_no_fields_and_no_row_bytes) {
    tes_world_t *world = fx_world(NULL);
    tes_component_t t = fx_tag(world, "Frozen");
    tes_component_info_t info;
    CHECK_OK(tes_component_info(world, t, &info));
    CHECK_EQ(info.field_count, 0);
    CHECK_EQ(info.row_bytes, 0);
    tes_field_info_t field;
    CHECK_ERR(tes_field_info(world, t, 0, &field), TES_ERR_UNKNOWN_FIELD);
    uint32_t f;
    CHECK_ERR(tes_field_lookup(world, t, "x", &f), TES_ERR_UNKNOWN_FIELD);
}

TEST(tag_with_non_null_fields_pointer_is_a_tag) {
    tes_world_t *world = fx_world(NULL);
    tes_component_t t = fx_component(world, "Frozen", position_fields, 0);
    tes_component_info_t info;
    CHECK_OK(tes_component_info(world, t, &info));
    CHECK_EQ(info.field_count, 0);
}

TEST(field_info_reports_type_length_and_bytes) {
    tes_world_t *world = fx_world(NULL);
    static const tes_field_desc_t fields[] = {
        {"f32", TES_F32, 0}, {"f64", TES_F64, 1},   {"i8", TES_I8, 2},   {"u8", TES_U8, 3},
        {"i16", TES_I16, 4}, {"u16", TES_U16, 256}, {"i32", TES_I32, 7}, {"u32", TES_U32, 0}};
    static const uint32_t lengths[] = {1, 1, 2, 3, 4, 256, 7, 1};
    static const uint32_t bytes[] = {4, 8, 2, 3, 8, 512, 28, 4};
    tes_component_t c = fx_component(world, "AllTypes", fields, 8);
    uint32_t row = 0;
    for (uint32_t f = 0; f < 8; f++) {
        tes_field_info_t info;
        CHECK_OK(tes_field_info(world, c, f, &info));
        CHECK(strcmp(info.name, fields[f].name) == 0);
        CHECK_EQ(info.type, fields[f].type);
        CHECK_EQ(info.length, lengths[f]);
        CHECK_EQ(info.bytes, bytes[f]);
        CHECK_EQ(info.bytes, tes_type_size(info.type) * info.length);
        row += info.bytes;
    }
    tes_component_info_t cinfo;
    CHECK_OK(tes_component_info(world, c, &cinfo));
    CHECK_EQ(cinfo.row_bytes, row);
}

TEST(field_info_unknown_field_or_component_fails) {
    tes_world_t *world = fx_world(NULL);
    tes_component_t p = fx_component(world, "Position", position_fields, 2);
    tes_field_info_t info;
    CHECK_ERR(tes_field_info(world, p, 2, &info), TES_ERR_UNKNOWN_FIELD);
    CHECK_ERR(tes_field_info(world, p, UINT32_MAX, &info), TES_ERR_UNKNOWN_FIELD);
    CHECK_ERR(tes_field_info(world, p + 1, 0, &info), TES_ERR_UNKNOWN_COMPONENT);
}

TEST(field_lookup_finds_by_name) {
    tes_world_t *world = fx_world(NULL);
    static const tes_field_desc_t fields[] = {
        {"x", TES_F32, 0}, {"y", TES_F32, 0}, {"xy", TES_F32, 0}, {"z", TES_F64, 4}};
    tes_component_t c = fx_component(world, "V", fields, 4);
    static const char *names[] = {"x", "y", "xy", "z"};
    for (uint32_t i = 0; i < 4; i++) {
        uint32_t f = 99;
        CHECK_OK(tes_field_lookup(world, c, names[i], &f));
        CHECK_EQ(f, i);
    }
    uint32_t f = 99;
    CHECK_ERR(tes_field_lookup(world, c, "w", &f), TES_ERR_UNKNOWN_FIELD);
    CHECK_ERR(tes_field_lookup(world, c, "X", &f), TES_ERR_UNKNOWN_FIELD);
    CHECK_ERR(tes_field_lookup(world, c, "", &f), TES_ERR_UNKNOWN_FIELD);
    CHECK_ERR(tes_field_lookup(world, c + 1, "x", &f), TES_ERR_UNKNOWN_COMPONENT);
}

TEST(type_size_of_every_type) {
    CHECK_EQ(tes_type_size(TES_F32), 4);
    CHECK_EQ(tes_type_size(TES_F64), 8);
    CHECK_EQ(tes_type_size(TES_I8), 1);
    CHECK_EQ(tes_type_size(TES_U8), 1);
    CHECK_EQ(tes_type_size(TES_I16), 2);
    CHECK_EQ(tes_type_size(TES_U16), 2);
    CHECK_EQ(tes_type_size(TES_I32), 4);
    CHECK_EQ(tes_type_size(TES_U32), 4);
    CHECK_EQ(tes_type_size((tes_type_t)0), 0);
    CHECK_EQ(tes_type_size((tes_type_t)(TES_TYPE_LAST + 1)), 0);
    CHECK_EQ(tes_type_size((tes_type_t)-1), 0);
    CHECK_EQ(tes_type_size((tes_type_t)1000), 0);
}

TEST(register_rejects_empty_component_name) {
    tes_world_t *world = fx_world(NULL);
    tes_component_desc_t desc = {"", position_fields, 2};
    check_register_fails(world, &desc, TES_ERR_BAD_SCHEMA);
    tes_component_desc_t tag = {"", NULL, 0};
    check_register_fails(world, &tag, TES_ERR_BAD_SCHEMA);
}

TEST(register_component_name_length_limit) {
    tes_world_t *world = fx_world(NULL);
    char name[TES_MAX_NAME_LENGTH + 2];
    memset(name, 'n', TES_MAX_NAME_LENGTH + 1);
    name[TES_MAX_NAME_LENGTH + 1] = '\0'; /* 128 bytes: one too many */
    tes_component_desc_t desc = {name, position_fields, 2};
    check_register_fails(world, &desc, TES_ERR_BAD_SCHEMA);
    name[TES_MAX_NAME_LENGTH] = '\0'; /* 127 bytes: allowed */
    tes_component_t c = fx_component(world, name, position_fields, 2);
    tes_component_info_t info;
    CHECK_OK(tes_component_info(world, c, &info));
    CHECK_EQ(strlen(info.name), TES_MAX_NAME_LENGTH);
    tes_component_t found;
    CHECK_OK(tes_component_lookup(world, name, &found));
    CHECK_EQ(found, c);
}

TEST(register_rejects_empty_field_name) {
    tes_world_t *world = fx_world(NULL);
    tes_field_desc_t fields[] = {{"x", TES_F32, 0}, {"", TES_F32, 0}};
    tes_component_desc_t desc = {"Position", fields, 2};
    check_register_fails(world, &desc, TES_ERR_BAD_SCHEMA);
}

TEST(register_field_name_length_limit) {
    tes_world_t *world = fx_world(NULL);
    char name[TES_MAX_NAME_LENGTH + 2];
    memset(name, 'f', TES_MAX_NAME_LENGTH + 1);
    name[TES_MAX_NAME_LENGTH + 1] = '\0';
    tes_field_desc_t fields[] = {{"x", TES_F32, 0}, {name, TES_F32, 0}};
    tes_component_desc_t desc = {"Position", fields, 2};
    check_register_fails(world, &desc, TES_ERR_BAD_SCHEMA);
    name[TES_MAX_NAME_LENGTH] = '\0';
    tes_component_t c = fx_component(world, "Position", fields, 2);
    uint32_t f;
    CHECK_OK(tes_field_lookup(world, c, name, &f));
    CHECK_EQ(f, 1);
}

TEST(register_rejects_duplicate_field_names) {
    tes_world_t *world = fx_world(NULL);
    tes_field_desc_t fields[] = {{"x", TES_F32, 0}, {"y", TES_F32, 0}, {"x", TES_I32, 0}};
    tes_component_desc_t desc = {"Position", fields, 3};
    check_register_fails(world, &desc, TES_ERR_BAD_SCHEMA);
}

TEST(register_rejects_bad_field_type) {
    tes_world_t *world = fx_world(NULL);
    static const int bad_types[] = {0, TES_TYPE_LAST + 1, -1, 1000};
    for (size_t i = 0; i < sizeof bad_types / sizeof bad_types[0]; i++) {
        tes_field_desc_t fields[] = {{"x", TES_F32, 0}, {"y", (tes_type_t)bad_types[i], 0}};
        tes_component_desc_t desc = {"Position", fields, 2};
        check_register_fails(world, &desc, TES_ERR_BAD_SCHEMA);
    }
}

TEST(register_field_count_limit) {
    tes_world_t *world = fx_world(NULL);
    static tes_field_desc_t fields[TES_MAX_FIELDS + 1];
    static char names[TES_MAX_FIELDS + 1][8];
    for (uint32_t i = 0; i <= TES_MAX_FIELDS; i++) {
        snprintf(names[i], sizeof names[i], "f%u", (unsigned)i);
        fields[i].name = names[i];
        fields[i].type = (tes_type_t)(TES_F32 + i % TES_TYPE_LAST);
        fields[i].length = i % 3;
    }
    tes_component_desc_t desc = {"Wide", fields, TES_MAX_FIELDS + 1};
    check_register_fails(world, &desc, TES_ERR_BAD_SCHEMA);
    tes_component_t c = fx_component(world, "Wide", fields, TES_MAX_FIELDS);
    tes_component_info_t info;
    CHECK_OK(tes_component_info(world, c, &info));
    CHECK_EQ(info.field_count, TES_MAX_FIELDS);
    uint32_t f;
    CHECK_OK(tes_field_lookup(world, c, "f63", &f));
    CHECK_EQ(f, 63);
}

TEST(register_array_length_limit) {
    tes_world_t *world = fx_world(NULL);
    tes_field_desc_t too_long[] = {{"v", TES_U8, TES_MAX_ARRAY_LENGTH + 1}};
    tes_component_desc_t desc = {"Bytes", too_long, 1};
    check_register_fails(world, &desc, TES_ERR_BAD_SCHEMA);
    tes_field_desc_t huge[] = {{"v", TES_U8, UINT32_MAX}};
    desc.fields = huge;
    check_register_fails(world, &desc, TES_ERR_BAD_SCHEMA);
    tes_field_desc_t longest[] = {{"v", TES_F64, TES_MAX_ARRAY_LENGTH}};
    tes_component_t c = fx_component(world, "Bytes", longest, 1);
    tes_field_info_t info;
    CHECK_OK(tes_field_info(world, c, 0, &info));
    CHECK_EQ(info.length, TES_MAX_ARRAY_LENGTH);
    CHECK_EQ(info.bytes, 8 * TES_MAX_ARRAY_LENGTH);
}

TEST(register_rejects_duplicate_component_name) {
    tes_world_t *world = fx_world(NULL);
    fx_component(world, "Position", position_fields, 2);
    fx_tag(world, "Frozen");
    tes_component_desc_t same_data = {"Position", position_fields, 2};
    check_register_fails(world, &same_data, TES_ERR_DUPLICATE_NAME);
    tes_component_desc_t data_named_like_tag = {"Frozen", position_fields, 1};
    check_register_fails(world, &data_named_like_tag, TES_ERR_DUPLICATE_NAME);
    tes_component_desc_t tag_named_like_data = {"Position", NULL, 0};
    check_register_fails(world, &tag_named_like_data, TES_ERR_DUPLICATE_NAME);
}

TEST(register_failure_keeps_ids_dense) {
    tes_world_t *world = fx_world(NULL);
    CHECK_EQ(fx_tag(world, "A"), 0);
    tes_component_desc_t dup = {"A", NULL, 0};
    check_register_fails(world, &dup, TES_ERR_DUPLICATE_NAME);
    tes_component_desc_t bad = {"", NULL, 0};
    check_register_fails(world, &bad, TES_ERR_BAD_SCHEMA);
    CHECK_EQ(fx_tag(world, "B"), 1);
    /* The failed names were not half-registered. */
    tes_component_t found;
    CHECK_ERR(tes_component_lookup(world, "", &found), TES_ERR_UNKNOWN_COMPONENT);
}

TEST(register_rejects_null_arguments) {
    tes_world_t *world = fx_world(NULL);
    tes_component_t c = 777;
    tes_component_desc_t desc = {"Position", position_fields, 2};
    CHECK_ERR(tes_component_register(world, NULL, &c), TES_ERR_INVALID_ARGUMENT);
    CHECK_ERR(tes_component_register(world, &desc, NULL), TES_ERR_INVALID_ARGUMENT);
    CHECK_ERR(tes_component_register(NULL, &desc, &c), TES_ERR_INVALID_ARGUMENT);
    CHECK_EQ(fx_stats(world).component_count, 0);
    /* The rejected calls did not register the name either. */
    CHECK_EQ(fx_component(world, "Position", position_fields, 2), 0);
}

/* Missing names or a missing field array: the header does not say which of the two codes;
 * either is a clean rejection, and nothing may change. */
TEST(register_rejects_missing_names_and_fields) {
    tes_world_t *world = fx_world(NULL);
    fx_snapshot_t *before = fx_snapshot_of(world);
    tes_component_t c = 777;
    tes_component_desc_t no_name = {NULL, position_fields, 2};
    tes_field_desc_t unnamed_field[] = {{NULL, TES_F32, 0}};
    tes_component_desc_t no_field_name = {"P", unnamed_field, 1};
    tes_component_desc_t no_fields = {"P", NULL, 2};
    const tes_component_desc_t *cases[] = {&no_name, &no_field_name, &no_fields};
    for (int i = 0; i < 3; i++) {
        tes_result_t r = tes_component_register(world, cases[i], &c);
        if (r != TES_ERR_BAD_SCHEMA && r != TES_ERR_INVALID_ARGUMENT) {
            harness_fail(__FILE__, __LINE__,
                         "case %d: expected BAD_SCHEMA or INVALID_ARGUMENT, got %s", i,
                         tes_result_name(r));
        }
        FX_CHECK_UNCHANGED(before, world);
    }
}

TEST(component_table_holds_max_components) {
    tes_world_t *world = fx_world(NULL);
    static const tes_field_desc_t value[] = {{"v", TES_I32, 0}};
    char name[32];
    for (uint32_t i = 0; i < TES_MAX_COMPONENTS; i++) {
        snprintf(name, sizeof name, "c%04u", (unsigned)i);
        tes_component_t c = i % 3 == 2 ? fx_tag(world, name) : fx_component(world, name, value, 1);
        CHECK_EQ(c, i);
    }
    CHECK_EQ(fx_stats(world).component_count, TES_MAX_COMPONENTS);
    tes_component_desc_t one_more = {"one_more", value, 1};
    check_register_fails(world, &one_more, TES_ERR_TOO_MANY_COMPONENTS);
    tes_component_desc_t one_more_tag = {"one_more_tag", NULL, 0};
    check_register_fails(world, &one_more_tag, TES_ERR_TOO_MANY_COMPONENTS);
    for (uint32_t i = 0; i < TES_MAX_COMPONENTS; i += 97) {
        tes_component_t found;
        snprintf(name, sizeof name, "c%04u", (unsigned)i);
        CHECK_OK(tes_component_lookup(world, name, &found));
        CHECK_EQ(found, i);
    }
    /* The highest ids work in archetypes like the lowest. */
    tes_component_t set[] = {TES_MAX_COMPONENTS - 1, 0, 1024, 2047, 4093};
    tes_entity_t e;
    CHECK_OK(tes_spawn(world, set, 5, &e));
    CHECK_OK(tes_set_number(world, e, 4093, 0, 0, -7));
    CHECK_OK(tes_set_number(world, e, 0, 0, 0, 11));
    CHECK_NUM_EQ(fx_get_number(world, e, 4093, 0, 0), -7);
    CHECK_NUM_EQ(fx_get_number(world, e, 0, 0, 0), 11);
    CHECK(fx_has(world, e, TES_MAX_COMPONENTS - 1));
    CHECK(!fx_has(world, e, TES_MAX_COMPONENTS - 2));
    CHECK_OK(tes_remove(world, e, 1024));
    CHECK(!fx_has(world, e, 1024));
    CHECK_NUM_EQ(fx_get_number(world, e, 4093, 0, 0), -7);
    bool has;
    CHECK_ERR(tes_has(world, e, TES_MAX_COMPONENTS, &has), TES_ERR_UNKNOWN_COMPONENT);
    CHECK_OK(tes_world_validate(world));
}

TEST(entity_can_hold_1024_components) {
    tes_world_t *world = fx_world(NULL);
    static const tes_field_desc_t value[] = {{"v", TES_I32, 0}};
    static tes_component_t all[1024];
    char name[32];
    for (uint32_t i = 0; i < 1024; i++) {
        snprintf(name, sizeof name, "c%u", (unsigned)i);
        all[1023 - i] = i % 4 == 3 ? fx_tag(world, name) : fx_component(world, name, value, 1);
    }
    tes_entity_t e[3];
    CHECK_OK(tes_spawn_batch(world, all, 1024, 3, e));
    for (uint32_t c = 0; c < 1024; c++) {
        if (c % 4 != 3) CHECK_OK(tes_set_number(world, e[1], c, 0, 0, (double)c * 3 + 1));
    }
    for (uint32_t c = 0; c < 1024; c++) {
        CHECK(fx_has(world, e[1], c));
        if (c % 4 != 3) CHECK_NUM_EQ(fx_get_number(world, e[1], c, 0, 0), (double)c * 3 + 1);
        if (c % 4 != 3) CHECK_NUM_EQ(fx_get_number(world, e[0], c, 0, 0), 0);
    }
    tes_archetype_info_t info = fx_archetype(world, fx_archetype_of(world, e[1]));
    CHECK_EQ(info.component_count, 1024);
    for (uint32_t i = 0; i < 1024; i++)
        CHECK_EQ(info.components[i], i);
    CHECK_OK(tes_remove(world, e[1], 512));
    CHECK_NUM_EQ(fx_get_number(world, e[1], 513, 0, 0), 513 * 3 + 1);
    CHECK_OK(tes_world_validate(world));
}
