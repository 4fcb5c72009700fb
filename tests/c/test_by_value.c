/* Change detection by value (TES_COMPONENT_CHANGE_BY_VALUE, issue 16, rule 6): a write the core
 * makes is a change only where it changes the stored bytes, for every path that writes values
 * (tes_set, tes_set_number, item calls, recorded writes, kernels), table and sparse alike; marks
 * stay marks; the flag is refused where there is nothing to compare; and a source whose
 * component compares by value agrees with its replica on what a change is. */
#include "fixtures.h"

#include <math.h>

static const tes_field_desc_t value_fields[] = {{"v", TES_F32, 0}, {"n", TES_I32, 0}};
static const tes_field_desc_t pair_fields[] = {{"p", TES_F64, 2}};

typedef struct scene_t {
    tes_world_t *world;
    tes_component_t by_value, sparse, plain, tag;
    tes_query_t *changed, *sparse_changed, *plain_changed;
} scene_t;

static scene_t make_scene(void) {
    scene_t s;
    s.world = fx_world(&(tes_world_desc_t){.chunk_bytes = 1024});
    s.by_value =
        fx_component_flags(s.world, "ByValue", value_fields, 2, TES_COMPONENT_CHANGE_BY_VALUE);
    s.sparse = fx_component_flags(s.world, "SparseByValue", value_fields, 2,
                                  TES_COMPONENT_SPARSE | TES_COMPONENT_CHANGE_BY_VALUE);
    s.plain = fx_component(s.world, "Plain", value_fields, 2);
    s.tag = fx_tag(s.world, "Tag");
    s.changed = fx_query(s.world, &(tes_query_desc_t){.changed = FX_IDS(s.by_value)});
    s.sparse_changed = fx_query(s.world, &(tes_query_desc_t){.changed = FX_IDS(s.sparse)});
    s.plain_changed = fx_query(s.world, &(tes_query_desc_t){.changed = FX_IDS(s.plain)});
    return s;
}

TEST(the_flag_is_refused_where_there_is_nothing_to_compare) {
    tes_world_t *w = fx_world(NULL);
    tes_component_t id;
    tes_component_desc_t tag = {"Tag", NULL, 0, TES_COMPONENT_CHANGE_BY_VALUE};
    CHECK_ERR(tes_component_register(w, &tag, &id), TES_ERR_BAD_SCHEMA);
    tes_component_desc_t relation = {"Likes", pair_fields, 1,
                                     TES_COMPONENT_RELATION | TES_COMPONENT_CHANGE_BY_VALUE};
    CHECK_ERR(tes_component_register(w, &relation, &id), TES_ERR_BAD_SCHEMA);
    tes_component_desc_t unknown = {"Next", value_fields, 2, 128};
    CHECK_ERR(tes_component_register(w, &unknown, &id), TES_ERR_BAD_SCHEMA);
    CHECK_EQ(fx_stats(w).component_count, 0);
    id = fx_component_flags(w, "Ok", value_fields, 2, TES_COMPONENT_CHANGE_BY_VALUE);
    tes_component_info_t info;
    CHECK_OK(tes_component_info(w, id, &info));
    CHECK_EQ(info.flags, TES_COMPONENT_CHANGE_BY_VALUE);
}

TEST(set_and_set_number_are_changes_only_where_the_bytes_differ) {
    scene_t s = make_scene();
    tes_entity_t e = fx_spawn(s.world, FX_IDS(s.by_value, s.plain, s.sparse));
    CHECK_OK(tes_set_number(s.world, e, s.by_value, 0, 0, 1.5));
    CHECK_OK(tes_set_number(s.world, e, s.sparse, 0, 0, 1.5));
    FX_CHECK_VISITED(fx_run(s.world, s.changed), e);
    FX_CHECK_VISITED(fx_run(s.world, s.sparse_changed), e);
    /* The same value again, in every form: no change (the default component: one). */
    CHECK_OK(tes_set_number(s.world, e, s.by_value, 0, 0, 1.5));
    CHECK_OK(tes_set_number(s.world, e, s.sparse, 0, 0, 1.5));
    float same = 1.5f;
    CHECK_OK(tes_set(s.world, e, s.by_value, 0, &same, sizeof same));
    CHECK_OK(tes_set_number(s.world, e, s.plain, 0, 0, 0));
    CHECK_EQ(fx_run(s.world, s.changed)->count, 0);
    CHECK_EQ(fx_run(s.world, s.sparse_changed)->count, 0);
    FX_CHECK_VISITED(fx_run(s.world, s.plain_changed), e);
    /* Bytes decide: f32 rounding first, -0 is not 0, NaN over the same NaN is no change. */
    CHECK_OK(tes_set_number(s.world, e, s.by_value, 0, 0, 0.1));
    FX_CHECK_VISITED(fx_run(s.world, s.changed), e);
    CHECK_OK(tes_set_number(s.world, e, s.by_value, 0, 0, (double)0.1f));
    CHECK_EQ(fx_run(s.world, s.changed)->count, 0);
    CHECK_OK(tes_set_number(s.world, e, s.by_value, 0, 0, 0.0));
    fx_run(s.world, s.changed);
    CHECK_OK(tes_set_number(s.world, e, s.by_value, 0, 0, -0.0));
    FX_CHECK_VISITED(fx_run(s.world, s.changed), e);
    CHECK_OK(tes_set_number(s.world, e, s.by_value, 0, 0, NAN));
    fx_run(s.world, s.changed);
    CHECK_OK(tes_set_number(s.world, e, s.by_value, 0, 0, NAN));
    CHECK_EQ(fx_run(s.world, s.changed)->count, 0);
    /* Another field differs: a change. */
    CHECK_OK(tes_set_number(s.world, e, s.by_value, 1, 0, 7));
    FX_CHECK_VISITED(fx_run(s.world, s.changed), e);
    /* A mark is a mark: the core did not see that write. */
    CHECK_OK(tes_mark_changed(s.world, e, s.by_value));
    FX_CHECK_VISITED(fx_run(s.world, s.changed), e);
    CHECK_OK(tes_world_validate(s.world));
}

static tes_items_t one_value(tes_item_t *item, tes_value_t *value, double *number,
                             tes_component_t c, uint32_t field, double n) {
    *item = (tes_item_t){c, 0};
    *value = (tes_value_t){0, field, 0};
    *number = n;
    return (tes_items_t){item, 1, value, 1, number, 1};
}

TEST(item_calls_adds_of_held_components_and_recorded_writes_compare_too) {
    scene_t s = make_scene();
    tes_query_t *added = fx_query(s.world, &(tes_query_desc_t){.added = FX_IDS(s.by_value)});
    tes_entity_t e = fx_spawn(s.world, FX_IDS(s.by_value));
    tes_entity_t f = fx_spawn(s.world, FX_IDS(s.plain));
    fx_run(s.world, added);
    tes_item_t item;
    tes_value_t value;
    double number;
    tes_items_t zero = one_value(&item, &value, &number, s.by_value, 1, 0);
    CHECK_OK(tes_set_items(s.world, &e, 1, &zero, NULL)); /* 0 over 0 */
    CHECK_OK(tes_add_items(s.world, &e, 1, &zero, NULL)); /* held: its value, the same */
    CHECK_EQ(fx_run(s.world, s.changed)->count, 0);
    tes_items_t three = one_value(&item, &value, &number, s.by_value, 1, 3);
    CHECK_OK(tes_add_items(s.world, &e, 1, &three, NULL));
    FX_CHECK_VISITED(fx_run(s.world, s.changed), e);
    /* An add of a component the entity lacks is an add, with or without new bytes. */
    CHECK_OK(tes_add_items(s.world, &f, 1, &zero, NULL));
    FX_CHECK_VISITED(fx_run(s.world, added), f);
    CHECK_EQ(fx_run(s.world, s.changed)->count, 0);
    /* Recorded inside a loop, decided when applied: 3 over 3 is no change then. */
    tes_iter_t it;
    CHECK_OK(tes_query_iter(s.world, fx_query(s.world, &(tes_query_desc_t){0}), &it));
    CHECK(tes_iter_next(&it));
    CHECK_OK(tes_add_items(s.world, &e, 1, &three, NULL));
    tes_entity_t g = 0;
    CHECK_OK(tes_spawn(s.world, NULL, 0, &g));
    CHECK_OK(tes_add(s.world, g, s.by_value));
    CHECK_OK(tes_set_number(s.world, g, s.by_value, 1, 0, 0)); /* over the add's 0 */
    tes_iter_fini(&it);
    CHECK_EQ(fx_run(s.world, s.changed)->count, 0);
    FX_CHECK_VISITED(fx_run(s.world, added), g);
    CHECK_EQ(fx_stats(s.world).commands_skipped, 0);
    CHECK_OK(tes_world_validate(s.world));
}

TEST(kernels_mark_only_the_rows_whose_bytes_they_changed) {
    scene_t s = make_scene();
    tes_entity_t e[300];
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.by_value, s.plain), 300, e));
    for (int i = 0; i < 300; i++) {
        CHECK_OK(tes_set_number(s.world, e[i], s.by_value, 0, 0, i % 10));
        CHECK_OK(tes_set_number(s.world, e[i], s.plain, 0, 0, i % 10));
    }
    fx_run(s.world, s.changed);
    fx_run(s.world, s.plain_changed);
    tes_query_t *all = fx_query(s.world, &(tes_query_desc_t){.all = FX_IDS(s.by_value, s.plain)});
    /* Clamp to [0, 7]: only the rows holding 8 or 9 change. */
    tes_op_t clamp = {.kind = TES_OP_CLAMP, .component = s.by_value, .lo = 0, .hi = 7};
    CHECK_OK(tes_query_apply(s.world, all, &clamp, NULL, NULL));
    fx_entities_t *changed = fx_run(s.world, s.changed);
    CHECK_EQ(changed->count, 60);
    for (uint32_t i = 0; i < changed->count; i++)
        CHECK(fx_get_number(s.world, changed->items[i], s.by_value, 0, 0) == 7);
    clamp.component = s.plain;
    CHECK_OK(tes_query_apply(s.world, all, &clamp, NULL, NULL));
    CHECK_EQ(fx_run(s.world, s.plain_changed)->count, 300); /* by write: every row */
    /* Fill with what 7 rows of 10 hold already... */
    tes_op_t fill = {.kind = TES_OP_FILL, .component = s.by_value, .k = 7};
    CHECK_OK(tes_query_apply(s.world, all, &fill, NULL, NULL));
    CHECK_EQ(fx_run(s.world, s.changed)->count, 210);
    /* ...adding 0 changes nothing, adding a scaled field of zeros neither. */
    tes_op_t add = {.kind = TES_OP_ADD, .component = s.by_value, .k = 0};
    CHECK_OK(tes_query_apply(s.world, all, &add, NULL, NULL));
    tes_op_t scaled = {.kind = TES_OP_ADD_SCALED,
                       .component = s.by_value,
                       .src_component = s.by_value,
                       .src_field = 0,
                       .k = 0};
    CHECK_OK(tes_query_apply(s.world, all, &scaled, NULL, NULL));
    CHECK_EQ(fx_run(s.world, s.changed)->count, 0);
    /* Countdown collects the crossings as before, and marks every row it moved. */
    for (int i = 0; i < 5; i++)
        CHECK_OK(tes_set_number(s.world, e[i], s.by_value, 0, 0, 0.5));
    fx_run(s.world, s.changed);
    tes_op_t countdown = {.kind = TES_OP_SUB_COLLECT, .component = s.by_value, .k = 1};
    const tes_entity_t *crossed = NULL;
    uint32_t crossed_count = 0;
    CHECK_OK(tes_query_apply(s.world, all, &countdown, &crossed, &crossed_count));
    CHECK_EQ(crossed_count, 5);
    CHECK_EQ(fx_run(s.world, s.changed)->count, 300);
    /* A filtered run's rows compare too. */
    CHECK_OK(tes_set_number(s.world, e[3], s.by_value, 0, 0, 100));
    CHECK_OK(tes_set_number(s.world, e[4], s.by_value, 0, 0, 6));
    tes_query_t *filtered = fx_query(s.world, &(tes_query_desc_t){.changed = FX_IDS(s.by_value)});
    fx_run(s.world, filtered);
    CHECK_OK(tes_set_number(s.world, e[3], s.by_value, 0, 0, 101));
    CHECK_OK(tes_set_number(s.world, e[4], s.by_value, 0, 0, 5));
    fx_run(s.world, s.changed);
    tes_op_t cap = {.kind = TES_OP_CLAMP, .component = s.by_value, .lo = 0, .hi = 50};
    CHECK_OK(tes_query_apply(s.world, filtered, &cap, NULL, NULL));
    FX_CHECK_VISITED(fx_run(s.world, s.changed), e[3]);
    CHECK_OK(tes_world_validate(s.world));
}

/* The replica stamps a change where a delta's bytes differ from its own: a source whose
 * component compares by value reports exactly the same changes. */
TEST(a_source_by_value_and_its_replica_agree_on_every_change) {
    tes_world_t *source = fx_world(NULL), *replica = fx_world(NULL);
    tes_component_t c =
        fx_component_flags(source, "Health", value_fields, 2, TES_COMPONENT_CHANGE_BY_VALUE);
    tes_component_t plain = fx_component(source, "Plain", value_fields, 2);
    tes_query_t *watched = fx_query(source, &(tes_query_desc_t){.changed = FX_IDS(c)});
    tes_query_t *watched_plain = fx_query(source, &(tes_query_desc_t){.changed = FX_IDS(plain)});
    tes_replicator_t *rep = NULL;
    CHECK_OK(tes_replicator_create(source, &(tes_replicator_desc_t){0}, &rep));
    tes_entity_t e[4];
    CHECK_OK(tes_spawn_batch(source, FX_IDS(c, plain), 4, e));
    const uint8_t *bytes;
    uint32_t size;
    uint64_t tick;
    CHECK_OK(tes_delta_encode(rep, 0, &bytes, &size, &tick));
    CHECK_OK(tes_delta_apply(replica, bytes, size, NULL));
    tes_component_t rc = UINT32_MAX, rplain = UINT32_MAX;
    CHECK_OK(tes_component_lookup(replica, "Health", &rc));
    CHECK_OK(tes_component_lookup(replica, "Plain", &rplain));
    tes_component_info_t info;
    CHECK_OK(tes_component_info(replica, rc, &info));
    CHECK_EQ(info.flags, TES_COMPONENT_CHANGE_BY_VALUE); /* the keyframe brings the rule */
    tes_query_t *mirror = fx_query(replica, &(tes_query_desc_t){.changed = FX_IDS(rc)});
    tes_query_t *mirror_plain = fx_query(replica, &(tes_query_desc_t){.changed = FX_IDS(rplain)});
    fx_run(source, watched);
    fx_run(source, watched_plain);
    /* e0: the same value; e1: a new one; e2: -0 over 0; e3: untouched. Both components. */
    for (int k = 0; k < 2; k++) {
        tes_component_t x = k ? plain : c;
        CHECK_OK(tes_set_number(source, e[0], x, 0, 0, 0));
        CHECK_OK(tes_set_number(source, e[1], x, 0, 0, 4));
        CHECK_OK(tes_set_number(source, e[2], x, 0, 0, -0.0));
    }
    uint64_t baseline = tick;
    CHECK_OK(tes_delta_encode(rep, baseline, &bytes, &size, &tick));
    CHECK_OK(tes_delta_apply(replica, bytes, size, NULL));
    FX_CHECK_VISITED(fx_run(source, watched), e[1], e[2]);
    FX_CHECK_VISITED(fx_run(replica, mirror), e[1], e[2]);
    /* By write, the source counts the same-value write; the replica cannot see it. */
    FX_CHECK_VISITED(fx_run(source, watched_plain), e[0], e[1], e[2]);
    FX_CHECK_VISITED(fx_run(replica, mirror_plain), e[1], e[2]);
    CHECK_NUM_EQ(fx_get_number(replica, e[2], rc, 0, 0), 0);
    CHECK(signbit(fx_get_number(replica, e[2], rc, 0, 0)));
}
