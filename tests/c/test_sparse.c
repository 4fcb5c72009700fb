/* Sparse components (TES_COMPONENT_SPARSE): the same calls as chunk components (add, remove,
 * has, get, set, the number forms, init, field_ptr, mark_changed, ticks) with storage outside
 * the chunks, so adding or removing one moves nothing, creates no archetype and leaves
 * tes_world_layout alone; spawn lists may name them; despawns drop membership; the chunk and
 * archetype calls refuse them (TES_ERR_SPARSE_COMPONENT); queries check them per row (all,
 * none, any, the Added / Changed / Removed filters); structural calls during a live run are
 * deferred like any other; pruning by tes_tick. Written from tessera.h alone. */
#include "fixtures.h"

static const tes_field_desc_t value_fields[] = {{"v", TES_F64, 0}, {"n", TES_I32, 0}};
static const tes_field_desc_t vec_fields[] = {{"xyz", TES_F32, 3}, {"k", TES_U8, 0}};

/* Chunk components A, B (data) and Tag; sparse S (data), M (a sparse marker, no fields) and
 * W (array data). */
typedef struct scene_t {
    tes_world_t *world;
    tes_component_t a, b, tag, s, m, w;
} scene_t;

static scene_t make_scene(const tes_world_desc_t *desc) {
    scene_t s;
    s.world = fx_world(desc);
    s.a = fx_component(s.world, "A", value_fields, 2);
    s.b = fx_component(s.world, "B", value_fields, 2);
    s.tag = fx_tag(s.world, "Tag");
    s.s = fx_sparse(s.world, "S", value_fields, 2);
    s.m = fx_sparse(s.world, "M", NULL, 0);
    s.w = fx_sparse(s.world, "W", vec_fields, 2);
    return s;
}

static tes_archetype_t archetype_of_set(scene_t *s, const tes_component_t *set, uint32_t n) {
    tes_archetype_t a = UINT32_MAX;
    CHECK_OK(tes_archetype_find(s->world, set, n, &a));
    return a;
}

static void validate(scene_t *s) {
    CHECK_OK(tes_world_validate(s->world));
}

static tes_tracking_t tracking(const tes_world_t *world, tes_component_t c) {
    tes_tracking_t level = (tes_tracking_t)99;
    CHECK_OK(tes_component_tracking(world, c, &level));
    return level;
}

/* One run of a removals query: what tes_iter_removed gives for c. */
static fx_entities_t *run_removed(scene_t *s, tes_query_t *q, tes_component_t c) {
    fx_entities_t *out = fx_entities_new();
    tes_iter_t it;
    CHECK_OK(tes_query_iter(s->world, q, &it));
    const tes_entity_t *entities = NULL;
    uint32_t count = 12345;
    CHECK_OK(tes_iter_removed(&it, c, &entities, &count));
    CHECK(count == 0 || entities != NULL);
    for (uint32_t i = 0; i < count; i++)
        fx_entities_push(out, entities[i]);
    while (tes_iter_next(&it)) {
        FX_CHECK_ITER_CHUNK(s->world, &it);
    }
    return out;
}

/* ---------------------------------------------------------------------------------------- */
/* Registration                                                                              */
/* ---------------------------------------------------------------------------------------- */

TEST(sparse_components_register_with_their_flags) {
    scene_t s = make_scene(NULL);
    tes_component_info_t info;
    CHECK_OK(tes_component_info(s.world, s.s, &info));
    CHECK_EQ(info.flags, TES_COMPONENT_SPARSE);
    CHECK_EQ(info.field_count, 2);
    CHECK_EQ(info.row_bytes, 12);
    CHECK(strcmp(info.name, "S") == 0);
    CHECK_OK(tes_component_info(s.world, s.m, &info));
    CHECK_EQ(info.flags, TES_COMPONENT_SPARSE);
    CHECK_EQ(info.field_count, 0);
    CHECK_EQ(info.row_bytes, 0);
    CHECK_OK(tes_component_info(s.world, s.w, &info));
    CHECK_EQ(info.row_bytes, 13);
    CHECK_OK(tes_component_info(s.world, s.a, &info));
    CHECK_EQ(info.flags, 0);
    tes_component_t found = 99;
    CHECK_OK(tes_component_lookup(s.world, "W", &found));
    CHECK_EQ(found, s.w);
    uint32_t field = 99;
    CHECK_OK(tes_field_lookup(s.world, s.w, "k", &field));
    CHECK_EQ(field, 1);
    tes_field_info_t finfo;
    CHECK_OK(tes_field_info(s.world, s.w, 0, &finfo));
    CHECK_EQ(finfo.type, TES_F32);
    CHECK_EQ(finfo.length, 3);
    CHECK_EQ(finfo.bytes, 12);
    /* Sparse components start untracked like any other. */
    CHECK_EQ(tracking(s.world, s.s), TES_UNTRACKED);
    CHECK_EQ(fx_stats(s.world).component_count, 6);
}

TEST(relation_flags_on_a_sparse_component_are_a_bad_schema) {
    scene_t s = make_scene(NULL);
    const uint32_t bad[] = {TES_COMPONENT_SPARSE | TES_RELATION_EXCLUSIVE,
                            TES_COMPONENT_SPARSE | TES_RELATION_CASCADE,
                            TES_COMPONENT_SPARSE | TES_RELATION_EXCLUSIVE | TES_RELATION_ACYCLIC,
                            TES_COMPONENT_SPARSE | 256u, /* unknown (64 is CHANGE_BY_VALUE) */
                            128u,
                            0x80000000u};
    fx_snapshot_t *before = fx_snapshot_of(s.world);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tes_component_desc_t desc = {
            .name = "Bad", .fields = value_fields, .field_count = 2, .flags = bad[i]};
        tes_component_t c = 77;
        CHECK_ERR(tes_component_register(s.world, &desc, &c), TES_ERR_BAD_SCHEMA);
        FX_CHECK_UNCHANGED(before, s.world);
    }
    /* The name was not taken by the failed calls. */
    tes_component_t c = fx_sparse(s.world, "Bad", value_fields, 2);
    CHECK_EQ(c, 6);
}

/* ---------------------------------------------------------------------------------------- */
/* Adding and removing moves nothing                                                         */
/* ---------------------------------------------------------------------------------------- */

TEST(add_and_remove_move_nothing_and_create_no_archetype) {
    scene_t s = make_scene(&(tes_world_desc_t){.chunk_bytes = 1024});
    tes_entity_t e[40];
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.a, s.tag), 40, e));
    tes_location_t before[40];
    for (int i = 0; i < 40; i++)
        before[i] = fx_check_location(s.world, e[i]);
    uint32_t archetypes = tes_archetype_count(s.world);
    uint32_t layout = tes_world_layout(s.world);
    tes_world_stats_t stats = fx_stats(s.world);
    for (int i = 0; i < 40; i += 2) {
        CHECK_OK(tes_add(s.world, e[i], s.s));
        CHECK_OK(tes_add(s.world, e[i], s.m));
        if (i % 4 == 0) CHECK_OK(tes_add(s.world, e[i], s.w));
        validate(&s);
    }
    for (int i = 0; i < 40; i++) {
        tes_location_t now = fx_check_location(s.world, e[i]);
        CHECK_EQ(now.archetype, before[i].archetype);
        CHECK_EQ(now.chunk, before[i].chunk);
        CHECK_EQ(now.row, before[i].row);
        CHECK_EQ(fx_has(s.world, e[i], s.s), i % 2 == 0);
        CHECK_EQ(fx_has(s.world, e[i], s.m), i % 2 == 0);
        CHECK_EQ(fx_has(s.world, e[i], s.w), i % 4 == 0);
        CHECK(fx_has(s.world, e[i], s.a) && fx_has(s.world, e[i], s.tag));
        CHECK(!fx_has(s.world, e[i], s.b));
    }
    CHECK_EQ(tes_archetype_count(s.world), archetypes);
    CHECK_EQ(tes_world_layout(s.world), layout);
    tes_world_stats_t after = fx_stats(s.world);
    CHECK_EQ(after.graph_generation, stats.graph_generation);
    CHECK_EQ(after.chunk_count, stats.chunk_count);
    /* The archetype does not list them. */
    tes_archetype_info_t info = fx_archetype(s.world, before[0].archetype);
    CHECK_EQ(info.component_count, 2);
    for (uint32_t i = 0; i < info.component_count; i++) {
        CHECK(info.components[i] != s.s && info.components[i] != s.m && info.components[i] != s.w);
    }
    for (int i = 0; i < 40; i += 2) {
        CHECK_OK(tes_remove(s.world, e[i], s.s));
        CHECK_OK(tes_remove(s.world, e[i], s.m));
        CHECK_OK(tes_remove(s.world, e[i], s.w)); /* half of them lack it: nothing happens */
        validate(&s);
    }
    for (int i = 0; i < 40; i++) {
        tes_location_t now = fx_check_location(s.world, e[i]);
        CHECK_EQ(now.archetype, before[i].archetype);
        CHECK_EQ(now.row, before[i].row);
        CHECK(!fx_has(s.world, e[i], s.s) && !fx_has(s.world, e[i], s.m));
        CHECK(!fx_has(s.world, e[i], s.w));
    }
    CHECK_EQ(tes_archetype_count(s.world), archetypes);
    CHECK_EQ(tes_world_layout(s.world), layout);
    fx_check_all_packed(s.world);
}

TEST(an_entity_with_only_sparse_components_stays_in_the_empty_archetype) {
    scene_t s = make_scene(NULL);
    tes_entity_t e = fx_spawn(s.world, NULL, 0);
    CHECK_OK(tes_add(s.world, e, s.s));
    CHECK_OK(tes_add(s.world, e, s.m));
    CHECK_EQ(fx_archetype_of(s.world, e), TES_EMPTY_ARCHETYPE);
    CHECK_EQ(tes_archetype_count(s.world), 1);
    tes_entity_t f = fx_spawn(s.world, FX_IDS(s.s, s.m));
    CHECK_EQ(fx_archetype_of(s.world, f), TES_EMPTY_ARCHETYPE);
    CHECK(fx_has(s.world, f, s.s) && fx_has(s.world, f, s.m));
    CHECK_EQ(tes_archetype_count(s.world), 1);
    CHECK_EQ(fx_archetype(s.world, TES_EMPTY_ARCHETYPE).entity_count, 2);
    validate(&s);
}

TEST(adding_twice_keeps_the_values_and_removing_an_absent_one_does_nothing) {
    scene_t s = make_scene(NULL);
    tes_entity_t e = fx_spawn(s.world, FX_IDS(s.a));
    CHECK_OK(tes_remove(s.world, e, s.s)); /* absent */
    CHECK(!fx_has(s.world, e, s.s));
    CHECK_OK(tes_add(s.world, e, s.s));
    CHECK_NUM_EQ(fx_get_number(s.world, e, s.s, 0, 0), 0); /* starts zeroed */
    CHECK_NUM_EQ(fx_get_number(s.world, e, s.s, 1, 0), 0);
    CHECK_OK(tes_set_number(s.world, e, s.s, 0, 0, 2.5));
    CHECK_OK(tes_add(s.world, e, s.s)); /* already there */
    CHECK_NUM_EQ(fx_get_number(s.world, e, s.s, 0, 0), 2.5);
    CHECK_OK(tes_remove(s.world, e, s.s));
    CHECK_OK(tes_add(s.world, e, s.s)); /* back: zeroed again */
    CHECK_NUM_EQ(fx_get_number(s.world, e, s.s, 0, 0), 0);
    validate(&s);
}

TEST(values_survive_moves_of_the_entity_between_archetypes) {
    scene_t s = make_scene(&(tes_world_desc_t){.chunk_bytes = 1024});
    tes_entity_t e[30];
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.a), 30, e));
    for (int i = 0; i < 30; i++) {
        CHECK_OK(tes_add(s.world, e[i], s.s));
        CHECK_OK(tes_set_number(s.world, e[i], s.s, 0, 0, 100 + i));
        CHECK_OK(tes_set_number(s.world, e[i], s.s, 1, 0, -i));
    }
    /* Chunk moves: tes_add / tes_remove of chunk components, archetype bulk forms, despawns
     * that swap rows. */
    for (int i = 0; i < 30; i += 3)
        CHECK_OK(tes_add(s.world, e[i], s.b));
    CHECK_OK(tes_despawn(s.world, e[1]));
    tes_archetype_t ab = archetype_of_set(&s, FX_IDS(s.a, s.b));
    CHECK_OK(tes_archetype_add(s.world, ab, s.tag));
    CHECK_OK(tes_archetype_remove(s.world, archetype_of_set(&s, FX_IDS(s.a)), s.a));
    validate(&s);
    for (int i = 0; i < 30; i++) {
        if (i == 1) continue;
        CHECK(fx_has(s.world, e[i], s.s));
        CHECK_NUM_EQ(fx_get_number(s.world, e[i], s.s, 0, 0), 100 + i);
        CHECK_NUM_EQ(fx_get_number(s.world, e[i], s.s, 1, 0), -i);
    }
    fx_check_all_packed(s.world);
}

/* ---------------------------------------------------------------------------------------- */
/* Field data                                                                                */
/* ---------------------------------------------------------------------------------------- */

TEST(get_set_and_number_forms_on_sparse_fields) {
    scene_t s = make_scene(NULL);
    tes_entity_t e = fx_spawn(s.world, FX_IDS(s.a, s.s, s.w));
    double v = 7.25;
    int32_t n = -40;
    CHECK_OK(tes_set(s.world, e, s.s, 0, &v, sizeof v));
    CHECK_OK(tes_set(s.world, e, s.s, 1, &n, sizeof n));
    double v2 = 0;
    int32_t n2 = 0;
    CHECK_OK(tes_get(s.world, e, s.s, 0, &v2, sizeof v2));
    CHECK_OK(tes_get(s.world, e, s.s, 1, &n2, sizeof n2));
    CHECK_NUM_EQ(v2, 7.25);
    CHECK_EQ(n2, -40);
    CHECK_NUM_EQ(fx_get_number(s.world, e, s.s, 1, 0), -40);
    /* Arrays: element by element, and whole. */
    CHECK_OK(tes_set_number(s.world, e, s.w, 0, 2, 1.5));
    CHECK_OK(tes_set_number(s.world, e, s.w, 1, 0, 255));
    float xyz[3] = {-1, -1, -1};
    CHECK_OK(tes_get(s.world, e, s.w, 0, xyz, sizeof xyz));
    CHECK_NUM_EQ(xyz[0], 0);
    CHECK_NUM_EQ(xyz[1], 0);
    CHECK_NUM_EQ(xyz[2], 1.5);
    const float put[3] = {4, 5, 6};
    CHECK_OK(tes_set(s.world, e, s.w, 0, put, sizeof put));
    CHECK_NUM_EQ(fx_get_number(s.world, e, s.w, 0, 1), 5);
    CHECK_NUM_EQ(fx_get_number(s.world, e, s.w, 1, 0), 255);
    /* The same checks as for chunk fields, nothing written. */
    fx_snapshot_t *before = fx_snapshot_full_of(s.world);
    CHECK_ERR(tes_set_number(s.world, e, s.s, 1, 0, 0.5), TES_ERR_BAD_VALUE);
    CHECK_ERR(tes_set_number(s.world, e, s.w, 1, 0, 256), TES_ERR_BAD_VALUE);
    CHECK_ERR(tes_set_number(s.world, e, s.w, 0, 3, 1), TES_ERR_ELEMENT_OUT_OF_RANGE);
    CHECK_ERR(tes_set_number(s.world, e, s.s, 2, 0, 1), TES_ERR_UNKNOWN_FIELD);
    CHECK_ERR(tes_set(s.world, e, s.s, 0, &n, sizeof n), TES_ERR_BAD_SIZE);
    CHECK_ERR(tes_get(s.world, e, s.s, 0, &n, sizeof n), TES_ERR_BAD_SIZE);
    CHECK_ERR(tes_set_number(s.world, e, 99, 0, 0, 1), TES_ERR_UNKNOWN_COMPONENT);
    FX_CHECK_UNCHANGED_FULL_STRICT(before, s.world);
    validate(&s);
}

TEST(many_entities_keep_their_own_values_through_removals) {
    scene_t s = make_scene(&(tes_world_desc_t){.chunk_bytes = 1024});
    tes_entity_t e[200];
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.s, s.b), 200, e));
    for (int i = 0; i < 200; i++) {
        CHECK_OK(tes_set_number(s.world, e[i], s.s, 0, 0, i * 0.5));
        CHECK_OK(tes_set_number(s.world, e[i], s.s, 1, 0, 1000 - i));
    }
    /* Remove from the middle, the front and the back of whatever dense order is used. */
    for (int i = 0; i < 200; i += 3)
        CHECK_OK(tes_remove(s.world, e[i], s.s));
    CHECK_OK(tes_remove(s.world, e[199], s.s));
    CHECK_OK(tes_remove(s.world, e[1], s.s));
    validate(&s);
    for (int i = 0; i < 200; i++) {
        bool kept = i % 3 != 0 && i != 199 && i != 1;
        CHECK_EQ(fx_has(s.world, e[i], s.s), kept);
        if (!kept) continue;
        CHECK_NUM_EQ(fx_get_number(s.world, e[i], s.s, 0, 0), i * 0.5);
        CHECK_NUM_EQ(fx_get_number(s.world, e[i], s.s, 1, 0), 1000 - i);
    }
    /* Added back: zeroed; the others untouched. */
    CHECK_OK(tes_add(s.world, e[3], s.s));
    CHECK_NUM_EQ(fx_get_number(s.world, e[3], s.s, 0, 0), 0);
    CHECK_NUM_EQ(fx_get_number(s.world, e[4], s.s, 0, 0), 2);
    CHECK_NUM_EQ(fx_get_number(s.world, e[197], s.s, 1, 0), 803);
}

TEST(field_ptr_points_at_the_entity_s_sparse_field) {
    scene_t s = make_scene(NULL);
    tes_entity_t e = fx_spawn(s.world, FX_IDS(s.a, s.w));
    tes_entity_t f = fx_spawn(s.world, FX_IDS(s.w));
    void *p = NULL;
    CHECK_OK(tes_field_ptr(s.world, e, s.w, 0, &p));
    CHECK(p != NULL);
    float *xyz = (float *)p;
    xyz[0] = 1;
    xyz[1] = 2;
    xyz[2] = 3;
    CHECK_NUM_EQ(fx_get_number(s.world, e, s.w, 0, 2), 3);
    CHECK_NUM_EQ(fx_get_number(s.world, f, s.w, 0, 0), 0); /* not f's */
    CHECK_OK(tes_field_ptr(s.world, f, s.w, 1, &p));
    *(uint8_t *)p = 9;
    CHECK_NUM_EQ(fx_get_number(s.world, f, s.w, 1, 0), 9);
    CHECK_NUM_EQ(fx_get_number(s.world, e, s.w, 1, 0), 0);
    CHECK_ERR(tes_field_ptr(s.world, e, s.s, 0, &p), TES_ERR_MISSING_COMPONENT);
    CHECK_ERR(tes_field_ptr(s.world, e, s.m, 0, &p), TES_ERR_TAG_HAS_NO_DATA);
    CHECK_ERR(tes_field_ptr(s.world, e, s.w, 2, &p), TES_ERR_UNKNOWN_FIELD);
}

TEST(a_sparse_marker_has_no_data) {
    scene_t s = make_scene(NULL);
    tes_entity_t e = fx_spawn(s.world, FX_IDS(s.m));
    double d;
    void *p;
    CHECK_ERR(tes_get_number(s.world, e, s.m, 0, 0, &d), TES_ERR_TAG_HAS_NO_DATA);
    CHECK_ERR(tes_set_number(s.world, e, s.m, 0, 0, 1), TES_ERR_TAG_HAS_NO_DATA);
    CHECK_ERR(tes_get(s.world, e, s.m, 0, &d, sizeof d), TES_ERR_TAG_HAS_NO_DATA);
    CHECK_ERR(tes_field_ptr(s.world, e, s.m, 0, &p), TES_ERR_TAG_HAS_NO_DATA);
    CHECK(fx_has(s.world, e, s.m));
}

TEST(calls_on_a_sparse_component_the_entity_lacks_are_missing_component) {
    scene_t s = make_scene(NULL);
    tes_entity_t e = fx_spawn(s.world, FX_IDS(s.a, s.m));
    double d = 0;
    void *p = NULL;
    uint64_t added = 0, changed = 0;
    fx_snapshot_t *before = fx_snapshot_full_of(s.world);
    CHECK_ERR(tes_get(s.world, e, s.s, 0, &d, sizeof d), TES_ERR_MISSING_COMPONENT);
    CHECK_ERR(tes_set(s.world, e, s.s, 0, &d, sizeof d), TES_ERR_MISSING_COMPONENT);
    CHECK_ERR(tes_get_number(s.world, e, s.s, 0, 0, &d), TES_ERR_MISSING_COMPONENT);
    CHECK_ERR(tes_set_number(s.world, e, s.s, 0, 0, 1), TES_ERR_MISSING_COMPONENT);
    CHECK_ERR(tes_init_number(s.world, e, s.s, 0, 0, 1), TES_ERR_MISSING_COMPONENT);
    CHECK_ERR(tes_init(s.world, e, s.s, 0, &d, sizeof d), TES_ERR_MISSING_COMPONENT);
    CHECK_ERR(tes_field_ptr(s.world, e, s.s, 0, &p), TES_ERR_MISSING_COMPONENT);
    CHECK_ERR(tes_mark_changed(s.world, e, s.s), TES_ERR_MISSING_COMPONENT);
    CHECK_ERR(tes_ticks(s.world, e, s.s, &added, &changed), TES_ERR_MISSING_COMPONENT);
    FX_CHECK_UNCHANGED_FULL_STRICT(before, s.world);
}

TEST(init_writes_are_part_of_the_add_not_a_change) {
    scene_t s = make_scene(NULL);
    tes_query_t *added = fx_query(s.world, &(tes_query_desc_t){.added = FX_IDS(s.s)});
    tes_query_t *changed = fx_query(s.world, &(tes_query_desc_t){.changed = FX_IDS(s.s)});
    tes_entity_t e = fx_spawn(s.world, FX_IDS(s.a, s.s));
    CHECK_OK(tes_init_number(s.world, e, s.s, 0, 0, 3.5));
    const int32_t n = 12;
    CHECK_OK(tes_init(s.world, e, s.s, 1, &n, sizeof n));
    tes_entity_t f = fx_spawn(s.world, FX_IDS(s.a));
    CHECK_OK(tes_add(s.world, f, s.s));
    CHECK_OK(tes_init_number(s.world, f, s.s, 0, 0, -1));
    CHECK_ERR(tes_init_number(s.world, f, s.s, 1, 0, 0.25), TES_ERR_BAD_VALUE);
    CHECK_NUM_EQ(fx_get_number(s.world, e, s.s, 0, 0), 3.5);
    CHECK_NUM_EQ(fx_get_number(s.world, e, s.s, 1, 0), 12);
    CHECK_NUM_EQ(fx_get_number(s.world, f, s.s, 0, 0), -1);
    FX_CHECK_VISITED(fx_run(s.world, added), e, f);
    CHECK_EQ(fx_run(s.world, changed)->count, 0);
    uint64_t a_tick = 0, c_tick = 1;
    CHECK_OK(tes_ticks(s.world, e, s.s, &a_tick, &c_tick));
    CHECK(a_tick > 0);
    CHECK_EQ(c_tick, 0);
    /* A set afterwards is a change. */
    CHECK_OK(tes_set_number(s.world, e, s.s, 0, 0, 4));
    FX_CHECK_VISITED(fx_run(s.world, changed), e);
    CHECK_EQ(fx_run(s.world, added)->count, 0);
}

/* ---------------------------------------------------------------------------------------- */
/* Spawning and despawning                                                                   */
/* ---------------------------------------------------------------------------------------- */

TEST(spawn_lists_may_name_sparse_components) {
    scene_t s = make_scene(NULL);
    tes_entity_t e = fx_spawn(s.world, FX_IDS(s.s, s.a, s.m));
    tes_archetype_t a_only = archetype_of_set(&s, FX_IDS(s.a));
    CHECK_EQ(fx_archetype_of(s.world, e), a_only);
    CHECK(fx_has(s.world, e, s.s) && fx_has(s.world, e, s.m) && fx_has(s.world, e, s.a));
    CHECK(!fx_has(s.world, e, s.w));
    CHECK_NUM_EQ(fx_get_number(s.world, e, s.s, 0, 0), 0);
    /* The same set in another order, and a duplicate. */
    tes_entity_t f = fx_spawn(s.world, FX_IDS(s.m, s.a, s.s));
    CHECK_EQ(fx_archetype_of(s.world, f), a_only);
    fx_snapshot_t *before = fx_snapshot_full_of(s.world);
    tes_entity_t g = 0;
    CHECK_ERR(tes_spawn(s.world, FX_IDS(s.s, s.a, s.s), &g), TES_ERR_INVALID_ARGUMENT);
    CHECK_ERR(tes_spawn_batch(s.world, FX_IDS(s.m, s.m), 3, NULL), TES_ERR_INVALID_ARGUMENT);
    FX_CHECK_UNCHANGED_FULL(before, s.world);
    /* No archetype ever lists a sparse component. */
    for (tes_archetype_t a = 0; a < tes_archetype_count(s.world); a++) {
        tes_archetype_info_t info = fx_archetype(s.world, a);
        for (uint32_t i = 0; i < info.component_count; i++) {
            CHECK(info.components[i] != s.s && info.components[i] != s.m);
        }
    }
    validate(&s);
}

TEST(spawn_batch_with_sparse_components_gives_each_entity_its_own_membership) {
    scene_t s = make_scene(&(tes_world_desc_t){.chunk_bytes = 1024});
    tes_entity_t e[150];
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.w, s.a, s.b, s.m), 150, e));
    tes_archetype_t ab = archetype_of_set(&s, FX_IDS(s.a, s.b));
    CHECK_EQ(fx_archetype(s.world, ab).entity_count, 150);
    for (int i = 0; i < 150; i++) {
        CHECK_EQ(fx_archetype_of(s.world, e[i]), ab);
        CHECK(fx_has(s.world, e[i], s.w) && fx_has(s.world, e[i], s.m));
        CHECK(!fx_has(s.world, e[i], s.s));
        CHECK_OK(tes_set_number(s.world, e[i], s.w, 0, 1, i));
    }
    for (int i = 0; i < 150; i++)
        CHECK_NUM_EQ(fx_get_number(s.world, e[i], s.w, 0, 1), i);
    /* Only sparse components: the empty archetype. */
    tes_entity_t f[5];
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.s), 5, f));
    for (int i = 0; i < 5; i++) {
        CHECK_EQ(fx_archetype_of(s.world, f[i]), TES_EMPTY_ARCHETYPE);
        CHECK(fx_has(s.world, f[i], s.s));
    }
    /* tes_archetype_spawn into a location's archetype gives the chunk components only. */
    tes_entity_t g[3];
    CHECK_OK(tes_archetype_spawn(s.world, ab, 3, g));
    for (int i = 0; i < 3; i++) {
        CHECK(!fx_has(s.world, g[i], s.w) && !fx_has(s.world, g[i], s.m));
        CHECK(fx_has(s.world, g[i], s.a));
    }
    tes_query_t *q = fx_query(s.world, &(tes_query_desc_t){.all = FX_IDS(s.m)});
    CHECK_EQ(fx_run_count(s.world, q), 150);
    validate(&s);
    fx_check_all_packed(s.world);
}

TEST(despawn_drops_sparse_membership) {
    scene_t s = make_scene(&(tes_world_desc_t){.min_free_indices = 1});
    tes_entity_t e = fx_spawn(s.world, FX_IDS(s.a, s.s, s.m));
    CHECK_OK(tes_set_number(s.world, e, s.s, 0, 0, 5));
    tes_entity_t keep = fx_spawn(s.world, FX_IDS(s.s));
    CHECK_OK(tes_set_number(s.world, keep, s.s, 0, 0, 6));
    tes_query_t *q = fx_query(s.world, &(tes_query_desc_t){.all = FX_IDS(s.s)});
    CHECK_EQ(fx_run_count(s.world, q), 2);
    tes_entity_t filler = fx_spawn(s.world, FX_IDS(s.b));
    CHECK_OK(tes_despawn(s.world, e));
    CHECK_OK(tes_despawn(s.world, filler)); /* two waiting: more than min_free_indices */
    validate(&s);
    bool has = true;
    CHECK_ERR(tes_has(s.world, e, s.s, &has), TES_ERR_STALE_ENTITY);
    FX_CHECK_VISITED(fx_run(s.world, q), keep);
    CHECK_NUM_EQ(fx_get_number(s.world, keep, s.s, 0, 0), 6);
    /* Spawn until e's slot is reused: the new entity has none of e's sparse components. */
    tes_entity_t reused = 0;
    for (int i = 0; i < 8 && !reused; i++) {
        tes_entity_t x = fx_spawn(s.world, FX_IDS(s.a));
        if (tes_entity_index(x) == tes_entity_index(e)) reused = x;
    }
    CHECK(reused != 0);
    CHECK(!fx_has(s.world, reused, s.s) && !fx_has(s.world, reused, s.m));
    CHECK_OK(tes_add(s.world, reused, s.s));
    CHECK_NUM_EQ(fx_get_number(s.world, reused, s.s, 0, 0), 0);
    /* Batch despawn too. */
    tes_entity_t list[2] = {keep, reused};
    CHECK_OK(tes_despawn_batch(s.world, list, 2));
    CHECK_EQ(fx_run_count(s.world, q), 0);
    validate(&s);
}

TEST(stale_handles_are_rejected_by_every_sparse_call) {
    scene_t s = make_scene(NULL);
    tes_entity_t dead = fx_spawn(s.world, FX_IDS(s.a, s.s));
    fx_spawn(s.world, FX_IDS(s.a, s.s));
    CHECK_OK(tes_despawn(s.world, dead));
    const tes_entity_t stale[] = {dead, 0, 0x3fffffffu};
    fx_snapshot_t *before = fx_snapshot_full_of(s.world);
    for (size_t i = 0; i < sizeof stale / sizeof stale[0]; i++) {
        tes_entity_t h = stale[i];
        bool has;
        double d = 0;
        void *p;
        uint64_t added, changed;
        const tes_result_t x = TES_ERR_STALE_ENTITY;
        CHECK_ERR(tes_add(s.world, h, s.s), x);
        CHECK_ERR(tes_add(s.world, h, s.m), x);
        CHECK_ERR(tes_remove(s.world, h, s.s), x);
        CHECK_ERR(tes_has(s.world, h, s.s, &has), x);
        CHECK_ERR(tes_get(s.world, h, s.s, 0, &d, sizeof d), x);
        CHECK_ERR(tes_set(s.world, h, s.s, 0, &d, sizeof d), x);
        CHECK_ERR(tes_get_number(s.world, h, s.s, 0, 0, &d), x);
        CHECK_ERR(tes_set_number(s.world, h, s.s, 0, 0, 1), x);
        CHECK_ERR(tes_init(s.world, h, s.s, 0, &d, sizeof d), x);
        CHECK_ERR(tes_init_number(s.world, h, s.s, 0, 0, 1), x);
        CHECK_ERR(tes_field_ptr(s.world, h, s.s, 0, &p), x);
        CHECK_ERR(tes_mark_changed(s.world, h, s.s), x);
        CHECK_ERR(tes_ticks(s.world, h, s.s, &added, &changed), x);
        CHECK_ERR(tes_despawn(s.world, h), x);
    }
    FX_CHECK_UNCHANGED_FULL_STRICT(before, s.world);
    validate(&s);
}

/* ---------------------------------------------------------------------------------------- */
/* Calls about chunks and archetypes refuse sparse components                                */
/* ---------------------------------------------------------------------------------------- */

TEST(archetype_calls_refuse_sparse_components) {
    scene_t s = make_scene(NULL);
    tes_entity_t e = fx_spawn(s.world, FX_IDS(s.a, s.s));
    tes_archetype_t a = fx_archetype_of(s.world, e);
    fx_snapshot_t *before = fx_snapshot_full_of(s.world);
    tes_archetype_t out = 77;
    CHECK_ERR(tes_archetype_find(s.world, FX_IDS(s.a, s.s), &out), TES_ERR_SPARSE_COMPONENT);
    CHECK_ERR(tes_archetype_find(s.world, FX_IDS(s.m), &out), TES_ERR_SPARSE_COMPONENT);
    CHECK_ERR(tes_archetype_add(s.world, a, s.m), TES_ERR_SPARSE_COMPONENT);
    CHECK_ERR(tes_archetype_add(s.world, a, s.s), TES_ERR_SPARSE_COMPONENT);
    CHECK_ERR(tes_archetype_remove(s.world, a, s.s), TES_ERR_SPARSE_COMPONENT);
    CHECK_ERR(tes_archetype_remove(s.world, a, s.m), TES_ERR_SPARSE_COMPONENT);
    void *column = NULL;
    CHECK_ERR(tes_chunk_column(s.world, a, 0, s.s, 0, &column), TES_ERR_SPARSE_COMPONENT);
    CHECK_ERR(tes_chunk_column(s.world, a, 0, s.w, 1, &column), TES_ERR_SPARSE_COMPONENT);
    FX_CHECK_UNCHANGED_FULL_STRICT(before, s.world);
    CHECK(fx_has(s.world, e, s.s));
}

TEST(iter_column_refuses_a_sparse_component) {
    scene_t s = make_scene(NULL);
    tes_entity_t e = fx_spawn(s.world, FX_IDS(s.a, s.s));
    tes_query_t *q = fx_query(s.world, &(tes_query_desc_t){.all = FX_IDS(s.a, s.s)});
    tes_iter_t it;
    CHECK_OK(tes_query_iter(s.world, q, &it));
    CHECK(tes_iter_next(&it));
    FX_CHECK_ITER_CHUNK(s.world, &it);
    CHECK_EQ(it.row_count, 1);
    CHECK_EQ(it.entities[fx_iter_row(&it, 0)], e);
    void *column = NULL;
    CHECK_ERR(tes_iter_column(&it, s.s, 0, &column), TES_ERR_SPARSE_COMPONENT);
    CHECK_OK(tes_iter_column(&it, s.a, 0, &column));
    CHECK(column != NULL);
    CHECK(!tes_iter_next(&it));
}

TEST(query_apply_refuses_a_sparse_target_and_writes_nothing) {
    scene_t s = make_scene(NULL);
    tes_entity_t e = fx_spawn(s.world, FX_IDS(s.a, s.s));
    CHECK_OK(tes_set_number(s.world, e, s.s, 0, 0, 1));
    CHECK_OK(tes_set_number(s.world, e, s.a, 0, 0, 1));
    tes_query_t *plain = fx_query(s.world, &(tes_query_desc_t){.all = FX_IDS(s.a, s.s)});
    tes_query_t *consumer = fx_query(s.world, &(tes_query_desc_t){.added = FX_IDS(s.s)});
    fx_snapshot_t *before = fx_snapshot_full_of(s.world);
    tes_op_t op = {.kind = TES_OP_ADD, .k = 2, .component = s.s, .field = 0};
    uint32_t count = 99;
    CHECK_ERR(tes_query_apply(s.world, plain, &op, NULL, &count), TES_ERR_SPARSE_COMPONENT);
    CHECK_ERR(tes_query_apply(s.world, consumer, &op, NULL, NULL), TES_ERR_SPARSE_COMPONENT);
    /* A sparse source of ADD_SCALED too. */
    tes_op_t scaled = {.kind = TES_OP_ADD_SCALED,
                       .k = 1,
                       .component = s.a,
                       .field = 0,
                       .src_component = s.s,
                       .src_field = 0};
    CHECK_ERR(tes_query_apply(s.world, plain, &scaled, NULL, NULL), TES_ERR_SPARSE_COMPONENT);
    FX_CHECK_UNCHANGED_FULL(before, s.world);
    /* Nothing consumed: the consumer still sees the add. */
    FX_CHECK_VISITED(fx_run(s.world, consumer), e);
    /* The chunk component of the same query works, over the rows that pass. */
    tes_entity_t other = fx_spawn(s.world, FX_IDS(s.a));
    op.component = s.a;
    CHECK_OK(tes_query_apply(s.world, plain, &op, NULL, NULL));
    CHECK_NUM_EQ(fx_get_number(s.world, e, s.a, 0, 0), 3);
    CHECK_NUM_EQ(fx_get_number(s.world, other, s.a, 0, 0), 0);
}

/* ---------------------------------------------------------------------------------------- */
/* Queries                                                                                   */
/* ---------------------------------------------------------------------------------------- */

/* Components of the matching test, by bit: A B Tag S M. */
static uint32_t mask_to_list(const scene_t *s, uint32_t mask, tes_component_t *out) {
    const tes_component_t ids[5] = {s->a, s->b, s->tag, s->s, s->m};
    uint32_t n = 0;
    for (uint32_t i = 0; i < 5; i++) {
        if (mask & (1u << i)) out[n++] = ids[i];
    }
    return n;
}

static bool mask_matches(uint32_t mask, uint32_t all, uint32_t none, uint32_t any) {
    return (mask & all) == all && (mask & none) == 0 && (any == 0 || (mask & any) != 0);
}

TEST(all_none_any_with_sparse_terms_visit_exactly_the_passing_rows) {
    scene_t s = make_scene(&(tes_world_desc_t){.chunk_bytes = 1024});
    enum { N = 700 };
    tes_entity_t *entities = (tes_entity_t *)fx_malloc(N * sizeof *entities);
    uint32_t *masks = (uint32_t *)fx_malloc(N * sizeof *masks);
    fx_rng_t rng = {77};
    for (uint32_t i = 0; i < N; i++) {
        uint32_t mask = fx_rng_below(&rng, 32);
        /* Sparse membership added after the spawn for some, in the spawn list for others. */
        tes_component_t set[5];
        bool later = fx_rng_chance(&rng, 50);
        uint32_t n = mask_to_list(&s, later ? (mask & 7u) : mask, set);
        entities[i] = fx_spawn(s.world, set, n);
        if (later && (mask & 8u)) CHECK_OK(tes_add(s.world, entities[i], s.s));
        if (later && (mask & 16u)) CHECK_OK(tes_add(s.world, entities[i], s.m));
        masks[i] = mask;
    }
    validate(&s);
    for (int round = 0; round < 300; round++) {
        fx_term_masks_t terms_ = fx_random_terms(&rng, 5, 5);
        uint32_t all = terms_.all, none = terms_.none, any = terms_.any;
        tes_component_t all_list[5], none_list[5], any_list[5];
        tes_query_desc_t desc = {0};
        desc.all = all_list;
        desc.all_count = mask_to_list(&s, all, all_list);
        desc.none = none_list;
        desc.none_count = mask_to_list(&s, none, none_list);
        desc.any = any_list;
        desc.any_count = mask_to_list(&s, any, any_list);
        tes_query_t *q = fx_query(s.world, &desc);
        tes_entity_t *expected = (tes_entity_t *)malloc(N * sizeof *expected);
        CHECK(expected != NULL);
        uint32_t n = 0;
        for (uint32_t i = 0; i < N; i++) {
            if (mask_matches(masks[i], all, none, any)) expected[n++] = entities[i];
        }
        fx_entities_t *got = fx_entities_new();
        fx_run_into(s.world, q, got);
        if (got->count != n) printf("  all %#x none %#x any %#x (A B Tag S M)\n", all, none, any);
        fx_check_same_entities_at(__FILE__, __LINE__, got, expected, n);
        free(expected);
        tes_query_destroy(s.world, q);
    }
    /* Membership changes: the same queries follow at once. */
    for (uint32_t i = 0; i < N; i += 5) {
        if (masks[i] & 8u) {
            CHECK_OK(tes_remove(s.world, entities[i], s.s));
        } else {
            CHECK_OK(tes_add(s.world, entities[i], s.s));
        }
        masks[i] ^= 8u;
    }
    tes_query_t *q =
        fx_query(s.world, &(tes_query_desc_t){.all = FX_IDS(s.a, s.s), .none = FX_IDS(s.m)});
    fx_entities_t *got = fx_run(s.world, q);
    fx_entities_t *want = fx_entities_new();
    for (uint32_t i = 0; i < N; i++) {
        if (mask_matches(masks[i], 1u | 8u, 16u, 0)) fx_entities_push(want, entities[i]);
    }
    FX_CHECK_SAME_ENTITIES(got, want->items, want->count);
    validate(&s);
}

TEST(iteration_lists_the_passing_rows_of_each_chunk) {
    scene_t s = make_scene(&(tes_world_desc_t){.chunk_bytes = 1024});
    tes_entity_t e[120];
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.a), 120, e));
    for (int i = 0; i < 120; i++) {
        if (i % 7 == 3 || i == 0 || i == 119) CHECK_OK(tes_add(s.world, e[i], s.m));
    }
    tes_query_t *q = fx_query(s.world, &(tes_query_desc_t){.all = FX_IDS(s.a, s.m)});
    tes_iter_t it;
    uint32_t visited = 0, chunks = 0;
    CHECK_OK(tes_query_iter(s.world, q, &it));
    while (tes_iter_next(&it)) {
        FX_CHECK_ITER_CHUNK(s.world, &it);
        chunks++;
        /* Every row of the chunk that passes is listed, and only those. */
        uint32_t passing = 0;
        for (uint32_t row = 0; row < it.count; row++)
            passing += fx_has(s.world, it.entities[row], s.m);
        CHECK_EQ(it.row_count, passing);
        for (uint32_t i = 0; i < it.row_count; i++)
            CHECK(fx_has(s.world, it.entities[fx_iter_row(&it, i)], s.m));
        visited += it.row_count;
    }
    CHECK_EQ(visited, 2 + 17);
    CHECK(chunks >= 2);
    /* A chunk with no passing row is not visited at all. */
    tes_entity_t lonely = fx_spawn(s.world, FX_IDS(s.b));
    tes_query_t *qb = fx_query(s.world, &(tes_query_desc_t){.all = FX_IDS(s.b, s.m)});
    CHECK_EQ(fx_run_count(s.world, qb), 0);
    CHECK_OK(tes_add(s.world, lonely, s.m));
    FX_CHECK_VISITED(fx_run(s.world, qb), lonely);
}

TEST(plain_query_with_sparse_terms_follows_membership_without_a_layout_change) {
    scene_t s = make_scene(NULL);
    tes_entity_t e[4];
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.a), 4, e));
    tes_query_t *with = fx_query(s.world, &(tes_query_desc_t){.all = FX_IDS(s.m)});
    tes_query_t *without =
        fx_query(s.world, &(tes_query_desc_t){.all = FX_IDS(s.a), .none = FX_IDS(s.m)});
    CHECK_EQ(fx_run_count(s.world, with), 0);
    uint32_t layout = tes_world_layout(s.world);
    CHECK_OK(tes_add(s.world, e[2], s.m));
    CHECK_EQ(tes_world_layout(s.world), layout);
    FX_CHECK_VISITED(fx_run(s.world, with), e[2]);
    FX_CHECK_VISITED(fx_run(s.world, without), e[0], e[1], e[3]);
    CHECK_OK(tes_remove(s.world, e[2], s.m));
    CHECK_EQ(tes_world_layout(s.world), layout);
    CHECK_EQ(fx_run_count(s.world, with), 0);
    CHECK_EQ(fx_run_count(s.world, without), 4);
    /* A plain query never advances the change tick. */
    CHECK_EQ(tes_query_last_run(with), 0);
}

/* ---------------------------------------------------------------------------------------- */
/* Added / Changed / Removed                                                                 */
/* ---------------------------------------------------------------------------------------- */

TEST(added_filter_on_a_sparse_component_sees_each_add_once_per_consumer) {
    scene_t s = make_scene(&(tes_world_desc_t){.chunk_bytes = 1024});
    tes_query_t *q1 = fx_query(s.world, &(tes_query_desc_t){.added = FX_IDS(s.m)});
    CHECK_EQ(tracking(s.world, s.m), TES_TRACK_DIRTY);
    tes_entity_t e[100];
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.a), 100, e));
    tes_entity_t born = fx_spawn(s.world, FX_IDS(s.b, s.m));
    for (int i = 0; i < 100; i += 9)
        CHECK_OK(tes_add(s.world, e[i], s.m));
    tes_query_t *q2 = fx_query(s.world, &(tes_query_desc_t){.added = FX_IDS(s.m)});
    fx_entities_t *want = fx_entities_new();
    fx_entities_push(want, born);
    for (int i = 0; i < 100; i += 9)
        fx_entities_push(want, e[i]);
    FX_CHECK_SAME_ENTITIES(fx_run(s.world, q1), want->items, want->count);
    CHECK_EQ(fx_run(s.world, q1)->count, 0);
    /* A consumer created after the adds still sees them (tracking started earlier). */
    FX_CHECK_SAME_ENTITIES(fx_run(s.world, q2), want->items, want->count);
    CHECK_EQ(fx_run(s.world, q2)->count, 0);
    /* Adding again what is there is no add; removing and adding back is. */
    CHECK_OK(tes_add(s.world, e[0], s.m));
    CHECK_OK(tes_remove(s.world, e[9], s.m));
    CHECK_OK(tes_add(s.world, e[9], s.m));
    FX_CHECK_VISITED(fx_run(s.world, q1), e[9]);
    FX_CHECK_VISITED(fx_run(s.world, q2), e[9]);
    /* Added then removed before the run: not reported. */
    CHECK_OK(tes_add(s.world, e[1], s.m));
    CHECK_OK(tes_remove(s.world, e[1], s.m));
    CHECK_EQ(fx_run(s.world, q1)->count, 0);
    validate(&s);
}

TEST(tracking_started_late_counts_existing_sparse_members_as_added) {
    scene_t s = make_scene(NULL);
    tes_entity_t e = fx_spawn(s.world, FX_IDS(s.a, s.s));
    tes_entity_t f = fx_spawn(s.world, FX_IDS(s.s));
    fx_spawn(s.world, FX_IDS(s.a));
    tes_query_t *q = fx_query(s.world, &(tes_query_desc_t){.added = FX_IDS(s.s)});
    FX_CHECK_VISITED(fx_run(s.world, q), e, f);
    CHECK_EQ(fx_run(s.world, q)->count, 0);
}

TEST(changed_filter_on_a_sparse_component_sees_each_write_once) {
    scene_t s = make_scene(&(tes_world_desc_t){.chunk_bytes = 1024});
    tes_entity_t e[300];
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.a, s.s), 300, e));
    tes_query_t *q = fx_query(s.world, &(tes_query_desc_t){.changed = FX_IDS(s.s)});
    CHECK_EQ(tracking(s.world, s.s), TES_TRACK_DIRTY);
    CHECK_EQ(fx_run(s.world, q)->count, 0);
    /* set, set_number, mark_changed, many times each: each entity once. */
    fx_entities_t *want = fx_entities_new();
    for (int i = 0; i < 300; i += 7) {
        double v = i;
        for (int k = 0; k < 3; k++) {
            switch ((i / 7 + k) % 3) {
            case 0:
                CHECK_OK(tes_set(s.world, e[i], s.s, 0, &v, sizeof v));
                break;
            case 1:
                CHECK_OK(tes_set_number(s.world, e[i], s.s, 1, 0, i));
                break;
            default:
                CHECK_OK(tes_mark_changed(s.world, e[i], s.s));
            }
        }
        fx_entities_push(want, e[i]);
    }
    /* Unmarked raw writes are not seen. */
    void *p;
    CHECK_OK(tes_field_ptr(s.world, e[1], s.s, 0, &p));
    *(double *)p = 42;
    FX_CHECK_SAME_ENTITIES(fx_run(s.world, q), want->items, want->count);
    CHECK_EQ(fx_run(s.world, q)->count, 0);
    CHECK_NUM_EQ(fx_get_number(s.world, e[1], s.s, 0, 0), 42);
    /* Changed then removed: not reported; changed then despawned: not reported. */
    CHECK_OK(tes_mark_changed(s.world, e[2], s.s));
    CHECK_OK(tes_remove(s.world, e[2], s.s));
    CHECK_OK(tes_mark_changed(s.world, e[3], s.s));
    CHECK_OK(tes_despawn(s.world, e[3]));
    CHECK_OK(tes_mark_changed(s.world, e[4], s.s));
    FX_CHECK_VISITED(fx_run(s.world, q), e[4]);
    /* Removed and added back: added, not changed. */
    CHECK_OK(tes_mark_changed(s.world, e[5], s.s));
    CHECK_OK(tes_remove(s.world, e[5], s.s));
    CHECK_OK(tes_add(s.world, e[5], s.s));
    CHECK_EQ(fx_run(s.world, q)->count, 0);
    validate(&s);
}

TEST(a_sparse_second_filter_is_ticks_tracked_and_combines_with_the_first) {
    scene_t s = make_scene(NULL);
    tes_query_t *q = fx_query(s.world, &(tes_query_desc_t){.changed = FX_IDS(s.a, s.s)});
    CHECK_EQ(tracking(s.world, s.a), TES_TRACK_DIRTY);
    CHECK_EQ(tracking(s.world, s.s), TES_TRACK_TICKS);
    tes_entity_t e[4];
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.a, s.s), 4, e));
    CHECK_OK(tes_mark_changed(s.world, e[0], s.a));
    CHECK_OK(tes_mark_changed(s.world, e[1], s.s));
    CHECK_OK(tes_mark_changed(s.world, e[2], s.a));
    CHECK_OK(tes_mark_changed(s.world, e[2], s.s));
    FX_CHECK_VISITED(fx_run(s.world, q), e[2]);
    tes_query_destroy(s.world, q);
    CHECK_EQ(tracking(s.world, s.s), TES_UNTRACKED);
    /* Sparse first, chunk second. */
    q = fx_query(s.world, &(tes_query_desc_t){.changed = FX_IDS(s.s), .added = FX_IDS(s.b)});
    CHECK(tracking(s.world, s.s) != TES_UNTRACKED);
    tes_entity_t f = fx_spawn(s.world, FX_IDS(s.s, s.b));
    tes_entity_t g = fx_spawn(s.world, FX_IDS(s.s, s.b));
    CHECK_OK(tes_mark_changed(s.world, f, s.s));
    CHECK_OK(tes_mark_changed(s.world, e[3], s.s)); /* no B */
    FX_CHECK_VISITED(fx_run(s.world, q), f);
    CHECK_OK(tes_mark_changed(s.world, g, s.s)); /* g's add of B was consumed */
    CHECK_EQ(fx_run(s.world, q)->count, 0);
}

TEST(filters_on_sparse_components_respect_the_other_terms) {
    scene_t s = make_scene(NULL);
    tes_query_t *q = fx_query(s.world, &(tes_query_desc_t){.added = FX_IDS(s.s),
                                                           .all = FX_IDS(s.a),
                                                           .none = FX_IDS(s.m),
                                                           .any = FX_IDS(s.tag, s.w)});
    tes_entity_t yes1 = fx_spawn(s.world, FX_IDS(s.a, s.s, s.tag));
    tes_entity_t yes2 = fx_spawn(s.world, FX_IDS(s.a, s.s, s.w));
    fx_spawn(s.world, FX_IDS(s.a, s.s));             /* no any */
    fx_spawn(s.world, FX_IDS(s.a, s.s, s.tag, s.m)); /* none */
    fx_spawn(s.world, FX_IDS(s.b, s.s, s.tag));      /* no all */
    tes_entity_t late = fx_spawn(s.world, FX_IDS(s.a, s.tag, s.m));
    CHECK_OK(tes_add(s.world, late, s.s));
    FX_CHECK_VISITED(fx_run(s.world, q), yes1, yes2);
    /* It had S added when M kept it out: that add was consumed by the run. */
    CHECK_OK(tes_remove(s.world, late, s.m));
    CHECK_EQ(fx_run(s.world, q)->count, 0);
}

TEST(ticks_of_a_sparse_component) {
    scene_t s = make_scene(NULL);
    tes_entity_t e = fx_spawn(s.world, FX_IDS(s.s));
    uint64_t added = 9, changed = 9;
    CHECK_OK(tes_ticks(s.world, e, s.s, &added, &changed));
    CHECK_EQ(added, 0); /* untracked */
    CHECK_EQ(changed, 0);
    tes_query_t *q = fx_query(s.world, &(tes_query_desc_t){.changed = FX_IDS(s.s)});
    fx_run(s.world, q);
    uint64_t tick = fx_stats(s.world).change_tick;
    tes_entity_t f = fx_spawn(s.world, FX_IDS(s.a));
    CHECK_OK(tes_add(s.world, f, s.s));
    CHECK_OK(tes_ticks(s.world, f, s.s, &added, &changed));
    CHECK_EQ(added, tick);
    CHECK_EQ(changed, 0);
    fx_run(s.world, q);
    CHECK_OK(tes_set_number(s.world, f, s.s, 0, 0, 1));
    CHECK_OK(tes_ticks(s.world, f, s.s, &added, &changed));
    CHECK_EQ(added, tick);
    CHECK_EQ(changed, tick + 1);
    CHECK_EQ(changed, fx_stats(s.world).change_tick);
}

TEST(removed_filter_on_a_sparse_component_logs_removes_and_despawns_once) {
    scene_t s = make_scene(NULL);
    tes_query_t *q1 = fx_query(s.world, &(tes_query_desc_t){.removed = FX_IDS(s.m)});
    tes_query_t *q2 = fx_query(s.world, &(tes_query_desc_t){.removed = FX_IDS(s.m)});
    tes_entity_t e[6];
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.a, s.m), 6, e));
    tes_entity_t bare = fx_spawn(s.world, FX_IDS(s.a));
    CHECK_OK(tes_remove(s.world, e[3], s.m));
    CHECK_OK(tes_remove(s.world, bare, s.m)); /* had none: no removal */
    CHECK_OK(tes_despawn(s.world, e[1]));
    CHECK_OK(tes_despawn(s.world, bare));
    CHECK_OK(tes_remove(s.world, e[0], s.m));
    tes_entity_t batch[2] = {e[4], e[5]};
    CHECK_OK(tes_despawn_batch(s.world, batch, 2));
    fx_entities_t *got = run_removed(&s, q1, s.m);
    CHECK_EQ(got->count, 5);
    FX_CHECK_ORDER(got, e[3], e[1], e[0], got->items[3], got->items[4]);
    FX_CHECK_SAME_ENTITIES(got, ((tes_entity_t[]){e[3], e[1], e[0], e[4], e[5]}), 5);
    CHECK_EQ(run_removed(&s, q1, s.m)->count, 0);
    CHECK_EQ(run_removed(&s, q2, s.m)->count, 5);
    /* Removed again after being added back: logged again. */
    CHECK_OK(tes_add(s.world, e[3], s.m));
    CHECK_OK(tes_remove(s.world, e[3], s.m));
    FX_CHECK_ORDER(run_removed(&s, q1, s.m), e[3]);
    FX_CHECK_ORDER(run_removed(&s, q2, s.m), e[3]);
    validate(&s);
}

TEST(sparse_removal_log_is_pruned_by_tick_once_every_consumer_saw_it) {
    scene_t s = make_scene(NULL);
    tes_query_t *q1 = fx_query(s.world, &(tes_query_desc_t){.removed = FX_IDS(s.s)});
    tes_query_t *pin = fx_query(s.world, &(tes_query_desc_t){.removed = FX_IDS(s.s)});
    tes_entity_t e = fx_spawn(s.world, FX_IDS(s.s));
    tes_entity_t f = fx_spawn(s.world, FX_IDS(s.s));
    CHECK_OK(tes_remove(s.world, e, s.s));
    FX_CHECK_ORDER(run_removed(&s, q1, s.s), e);
    CHECK_OK(tes_tick(s.world));
    /* pin has not seen it, so the log keeps it; a consumer made now starts now. */
    tes_query_t *late = fx_query(s.world, &(tes_query_desc_t){.removed = FX_IDS(s.s)});
    CHECK_EQ(run_removed(&s, late, s.s)->count, 0);
    FX_CHECK_ORDER(run_removed(&s, pin, s.s), e);
    CHECK_OK(tes_tick(s.world));
    tes_query_t *later = fx_query(s.world, &(tes_query_desc_t){.removed = FX_IDS(s.s)});
    CHECK_EQ(run_removed(&s, later, s.s)->count, 0);
    /* Pruning does not lose what some consumer has not seen yet. */
    CHECK_OK(tes_remove(s.world, f, s.s));
    FX_CHECK_ORDER(run_removed(&s, q1, s.s), f);
    CHECK_OK(tes_tick(s.world));
    CHECK_OK(tes_tick(s.world));
    FX_CHECK_ORDER(run_removed(&s, pin, s.s), f);
    FX_CHECK_ORDER(run_removed(&s, late, s.s), f);
    FX_CHECK_ORDER(run_removed(&s, later, s.s), f);
    validate(&s);
}

TEST(changed_sparse_rows_across_chunks_and_ticks_are_reported_exactly) {
    scene_t s = make_scene(&(tes_world_desc_t){.chunk_bytes = 1024});
    enum { N = 400 };
    tes_entity_t e[N];
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.a), N, e));
    fx_rng_t rng = {5};
    bool member[N];
    for (int i = 0; i < N; i++) {
        member[i] = fx_rng_chance(&rng, 60);
        if (member[i]) CHECK_OK(tes_add(s.world, e[i], s.s));
    }
    tes_query_t *q = fx_query(s.world, &(tes_query_desc_t){.changed = FX_IDS(s.s)});
    tes_query_t *slow = fx_query(s.world, &(tes_query_desc_t){.changed = FX_IDS(s.s)});
    bool slow_pending[N] = {0};
    for (int round = 0; round < 30; round++) {
        fx_entities_t *want = fx_entities_new();
        for (int i = 0; i < N; i++) {
            if (!fx_rng_chance(&rng, 10)) continue;
            if (member[i]) {
                CHECK_OK(tes_mark_changed(s.world, e[i], s.s));
                fx_entities_push(want, e[i]);
                slow_pending[i] = true;
            } else {
                CHECK_OK(tes_add(s.world, e[i], s.s)); /* an add, not a change */
                member[i] = true;
            }
        }
        for (int i = 0; i < N; i++) {
            if (member[i] && fx_rng_chance(&rng, 3)) {
                CHECK_OK(tes_remove(s.world, e[i], s.s));
                member[i] = false;
                slow_pending[i] = false;
                for (uint32_t k = 0; k < want->count; k++) {
                    if (want->items[k] == e[i]) want->items[k] = want->items[--want->count];
                }
            }
        }
        FX_CHECK_SAME_ENTITIES(fx_run(s.world, q), want->items, want->count);
        if (round % 4 == 3) {
            fx_entities_t *slow_want = fx_entities_new();
            for (int i = 0; i < N; i++) {
                if (slow_pending[i]) fx_entities_push(slow_want, e[i]);
                slow_pending[i] = false;
            }
            FX_CHECK_SAME_ENTITIES(fx_run(s.world, slow), slow_want->items, slow_want->count);
        }
        if (round % 2) CHECK_OK(tes_tick(s.world));
        validate(&s);
    }
}

/* ---------------------------------------------------------------------------------------- */
/* Deferral inside a live iteration                                                          */
/* ---------------------------------------------------------------------------------------- */

TEST(sparse_add_and_remove_during_iteration_apply_when_the_run_ends) {
    scene_t s = make_scene(&(tes_world_desc_t){.chunk_bytes = 1024});
    tes_entity_t e[100];
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.a, s.m), 100, e));
    tes_query_t *q = fx_query(s.world, &(tes_query_desc_t){.all = FX_IDS(s.a, s.m)});
    tes_query_t *removed = fx_query(s.world, &(tes_query_desc_t){.removed = FX_IDS(s.m)});
    fx_entities_t *visited = fx_entities_new();
    tes_iter_t it;
    CHECK_OK(tes_query_iter(s.world, q, &it));
    while (tes_iter_next(&it)) {
        FX_CHECK_ITER_CHUNK(s.world, &it);
        for (uint32_t i = 0; i < it.row_count; i++) {
            tes_entity_t x = it.entities[fx_iter_row(&it, i)];
            fx_entities_push(visited, x);
            CHECK_OK(tes_remove(s.world, x, s.m));
            CHECK_OK(tes_add(s.world, x, s.s));
            CHECK(fx_has(s.world, x, s.m)); /* not yet */
            CHECK(!fx_has(s.world, x, s.s));
        }
    }
    /* Every row once: the removals did not change what the live run visits. */
    FX_CHECK_SAME_ENTITIES(visited, e, 100);
    for (int i = 0; i < 100; i++) {
        CHECK(!fx_has(s.world, e[i], s.m));
        CHECK(fx_has(s.world, e[i], s.s));
    }
    CHECK_EQ(run_removed(&s, removed, s.m)->count, 100);
    CHECK_EQ(fx_run_count(s.world, q), 0);
    CHECK_EQ(fx_stats(s.world).commands_skipped, 0);
    validate(&s);
}

TEST(sparse_commands_on_pending_entities_apply_in_order_at_the_flush) {
    scene_t s = make_scene(NULL);
    tes_entity_t host = fx_spawn(s.world, FX_IDS(s.b));
    tes_entity_t live = fx_spawn(s.world, FX_IDS(s.a, s.s));
    tes_query_t *changed = fx_query(s.world, &(tes_query_desc_t){.changed = FX_IDS(s.s)});
    tes_query_t *added = fx_query(s.world, &(tes_query_desc_t){.added = FX_IDS(s.s)});
    fx_run(s.world, changed);
    fx_run(s.world, added);
    tes_query_t *q = fx_query(s.world, &(tes_query_desc_t){.all = FX_IDS(s.b)});
    tes_iter_t it;
    CHECK_OK(tes_query_iter(s.world, q, &it));
    CHECK(tes_iter_next(&it));
    tes_entity_t p = 0, p2 = 0;
    CHECK_OK(tes_spawn(s.world, FX_IDS(s.a, s.s), &p));
    CHECK(!tes_is_alive(s.world, p));
    bool has;
    CHECK_ERR(tes_has(s.world, p, s.s, &has), TES_ERR_PENDING_ENTITY);
    CHECK_OK(tes_set_number(s.world, p, s.s, 0, 0, 8)); /* recorded */
    CHECK_ERR(tes_set_number(s.world, p, s.s, 1, 0, 0.5), TES_ERR_BAD_VALUE);
    CHECK_OK(tes_add(s.world, p, s.w));
    CHECK_OK(tes_init_number(s.world, p, s.w, 0, 1, 2.5)); /* checked against the future set */
    CHECK_OK(tes_remove(s.world, p, s.s));
    CHECK_OK(tes_spawn(s.world, FX_IDS(s.m), &p2));
    /* A placed entity: its sparse add is recorded, an init after it too; a set is at once. */
    CHECK_OK(tes_set_number(s.world, live, s.s, 0, 0, 4));
    CHECK_NUM_EQ(fx_get_number(s.world, live, s.s, 0, 0), 4);
    CHECK_OK(tes_add(s.world, host, s.w));
    CHECK(!fx_has(s.world, host, s.w));
    CHECK_OK(tes_init_number(s.world, host, s.w, 1, 0, 7));
    CHECK_ERR(tes_get_number(s.world, host, s.w, 1, 0, &(double){0}), TES_ERR_MISSING_COMPONENT);
    CHECK_OK(tes_despawn(s.world, live));
    CHECK(fx_has(s.world, live, s.s)); /* still, until the end */
    CHECK(!tes_iter_next(&it));
    CHECK(tes_is_alive(s.world, p) && tes_is_alive(s.world, p2));
    CHECK(!fx_has(s.world, p, s.s));
    CHECK(fx_has(s.world, p, s.w) && fx_has(s.world, p, s.a));
    CHECK_NUM_EQ(fx_get_number(s.world, p, s.w, 0, 1), 2.5);
    CHECK(fx_has(s.world, p2, s.m));
    CHECK(fx_has(s.world, host, s.w));
    CHECK_NUM_EQ(fx_get_number(s.world, host, s.w, 1, 0), 7);
    CHECK(!tes_is_alive(s.world, live));
    CHECK_EQ(fx_stats(s.world).commands_skipped, 0);
    /* The write to live was a change (it died since: not reported); the inits were not. */
    CHECK_EQ(fx_run(s.world, changed)->count, 0);
    CHECK_EQ(fx_run(s.world, added)->count, 0); /* p lost S again before anyone saw it */
    validate(&s);
}

TEST(writes_to_a_pending_entity_are_checked_against_its_future_sparse_set) {
    scene_t s = make_scene(NULL);
    fx_spawn(s.world, FX_IDS(s.b));
    tes_query_t *q = fx_query(s.world, &(tes_query_desc_t){.all = FX_IDS(s.b)});
    tes_iter_t it;
    CHECK_OK(tes_query_iter(s.world, q, &it));
    CHECK(tes_iter_next(&it));
    tes_entity_t p = 0;
    CHECK_OK(tes_spawn(s.world, FX_IDS(s.a, s.s), &p));
    const float xyz[3] = {1, 2, 3};
    /* W is not in p's future set: refused when recorded, as for a chunk component. */
    CHECK_ERR(tes_set_number(s.world, p, s.w, 0, 0, 1), TES_ERR_MISSING_COMPONENT);
    CHECK_ERR(tes_set(s.world, p, s.w, 0, xyz, sizeof xyz), TES_ERR_MISSING_COMPONENT);
    CHECK_ERR(tes_init_number(s.world, p, s.w, 0, 0, 1), TES_ERR_MISSING_COMPONENT);
    tes_result_t r = tes_set_number(s.world, p, s.m, 0, 0, 1); /* a tag it will lack */
    CHECK(r == TES_ERR_MISSING_COMPONENT || r == TES_ERR_TAG_HAS_NO_DATA);
    CHECK_ERR(tes_set_number(s.world, p, s.b, 0, 0, 1), TES_ERR_MISSING_COMPONENT);
    /* After a recorded remove of S, S is not in it either. */
    CHECK_OK(tes_set_number(s.world, p, s.s, 0, 0, 1));
    CHECK_OK(tes_remove(s.world, p, s.s));
    CHECK_ERR(tes_set_number(s.world, p, s.s, 0, 0, 2), TES_ERR_MISSING_COMPONENT);
    CHECK_OK(tes_add(s.world, p, s.w));
    CHECK_OK(tes_set(s.world, p, s.w, 0, xyz, sizeof xyz));
    tes_iter_fini(&it);
    CHECK_EQ(fx_stats(s.world).commands_skipped, 0);
    CHECK(!fx_has(s.world, p, s.s));
    CHECK_NUM_EQ(fx_get_number(s.world, p, s.w, 0, 2), 3);
    validate(&s);
}

TEST(sparse_commands_on_an_entity_gone_by_the_flush_are_skipped) {
    scene_t s = make_scene(NULL);
    tes_entity_t host = fx_spawn(s.world, FX_IDS(s.b));
    tes_entity_t e = fx_spawn(s.world, FX_IDS(s.a));
    tes_query_t *q = fx_query(s.world, &(tes_query_desc_t){.all = FX_IDS(s.b)});
    tes_iter_t it;
    CHECK_OK(tes_query_iter(s.world, q, &it));
    CHECK(tes_iter_next(&it));
    CHECK_OK(tes_despawn(s.world, e));
    CHECK_OK(tes_add(s.world, e, s.s));
    CHECK_OK(tes_add(s.world, e, s.m));
    tes_iter_fini(&it);
    CHECK(!tes_is_alive(s.world, e));
    CHECK_EQ(fx_stats(s.world).commands_skipped, 2);
    tes_query_t *qs = fx_query(s.world, &(tes_query_desc_t){.any = FX_IDS(s.s, s.m)});
    CHECK_EQ(fx_run_count(s.world, qs), 0);
    CHECK(tes_is_alive(s.world, host));
    validate(&s);
}

/* The flush applies a run of recorded adds (or removes) of one sparse component together, its
 * room reserved once: each command must still end as it would alone, in order (a dead entity's
 * is skipped, a second add and the remove of a non-member do nothing), and runs of the other
 * kind or of another component in between keep their place. */
TEST(runs_of_recorded_sparse_adds_and_removes_end_as_each_call_alone) {
    scene_t s = make_scene(NULL);
    tes_query_t *removed = fx_query(s.world, &(tes_query_desc_t){.removed = FX_IDS(s.m)});
    tes_entity_t host = fx_spawn(s.world, FX_IDS(s.b));
    tes_entity_t e[8];
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.a), 8, e));
    CHECK_OK(tes_add(s.world, e[2], s.m));
    tes_query_t *q = fx_query(s.world, &(tes_query_desc_t){.all = FX_IDS(s.b)});
    tes_iter_t it;
    CHECK_OK(tes_query_iter(s.world, q, &it));
    CHECK(tes_iter_next(&it));
    /* Dead by the time their commands apply (a handle already stale is refused when recorded). */
    CHECK_OK(tes_despawn(s.world, e[5]));
    CHECK_OK(tes_despawn(s.world, e[6]));
    const tes_entity_t adds[] = {e[0], e[1], e[2],
                                 e[5], e[0], e[3]}; /* a member, a dead one, twice */
    for (uint32_t i = 0; i < 6; i++)
        CHECK_OK(tes_add(s.world, adds[i], s.m));
    const tes_entity_t removes[] = {e[2], e[4], e[6], e[1]}; /* a non-member, a dead one */
    for (uint32_t i = 0; i < 4; i++)
        CHECK_OK(tes_remove(s.world, removes[i], s.m));
    CHECK_OK(tes_add(s.world, e[7], s.s)); /* another component between runs */
    CHECK_OK(tes_add(s.world, e[7], s.s));
    CHECK_OK(tes_remove(s.world, e[3], s.m));
    CHECK_OK(tes_add(s.world, e[4], s.m));
    CHECK(!fx_has(s.world, e[0], s.m)); /* nothing applied before the run ends */
    tes_iter_fini(&it);
    CHECK_EQ(fx_stats(s.world).commands_skipped, 2);
    const bool has_m[8] = {true, false, false, false, true, false, false, false};
    CHECK(!tes_is_alive(s.world, e[5]) && !tes_is_alive(s.world, e[6]));
    for (uint32_t i = 0; i < 8; i++) {
        if (i == 5 || i == 6) continue;
        CHECK_EQ(fx_has(s.world, e[i], s.m), has_m[i]);
        CHECK_EQ(fx_has(s.world, e[i], s.s), i == 7);
    }
    /* Each removal logged once, in the order made: e[2], e[1], e[3]. */
    fx_entities_t *got = run_removed(&s, removed, s.m);
    FX_CHECK_ORDER(got, e[2], e[1], e[3]);
    CHECK(tes_is_alive(s.world, host));
    validate(&s);
}

typedef struct system_ctx_t {
    scene_t *s;
    uint32_t seen;
} system_ctx_t;

static void mark_body(tes_iter_t *it, void *user) {
    system_ctx_t *ctx = (system_ctx_t *)user;
    while (tes_iter_next(it)) {
        for (uint32_t i = 0; i < it->row_count; i++) {
            tes_entity_t x = it->entities[fx_iter_row(it, i)];
            CHECK_OK(tes_add(ctx->s->world, x, ctx->s->m));
            CHECK(!fx_has(ctx->s->world, x, ctx->s->m));
            ctx->seen++;
        }
    }
}

static void count_body(tes_iter_t *it, void *user) {
    system_ctx_t *ctx = (system_ctx_t *)user;
    while (tes_iter_next(it))
        ctx->seen += it->row_count;
}

TEST(a_system_adding_sparse_markers_applies_them_before_the_next_system) {
    scene_t s = make_scene(NULL);
    tes_entity_t e[3];
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.a), 3, e));
    uint32_t stage;
    CHECK_OK(tes_stage_create(s.world, "update", &stage));
    system_ctx_t marker = {&s, 0}, counter = {&s, 0};
    tes_system_desc_t mark = {.stage = stage,
                              .query = {.all = FX_IDS(s.a), .none = FX_IDS(s.m)},
                              .run = mark_body,
                              .user = &marker};
    tes_system_desc_t count = {
        .stage = stage, .query = {.added = FX_IDS(s.m)}, .run = count_body, .user = &counter};
    tes_system_t *sys1 = NULL, *sys2 = NULL;
    CHECK_OK(tes_system_create(s.world, &mark, &sys1));
    CHECK_OK(tes_system_create(s.world, &count, &sys2));
    CHECK_OK(tes_tick(s.world));
    CHECK_EQ(marker.seen, 3);
    CHECK_EQ(counter.seen, 3); /* applied before the second system ran */
    for (int i = 0; i < 3; i++)
        CHECK(fx_has(s.world, e[i], s.m));
    CHECK_OK(tes_tick(s.world));
    CHECK_EQ(marker.seen, 3);
    CHECK_EQ(counter.seen, 3);
    validate(&s);
}

TEST(a_full_entity_table_still_spawns_with_sparse_components_into_freed_slots) {
    /* With the last indices handed out, "record count + n" passes the table's limit: the sparse
     * set must size its index map to the limit. Every index but min_free (8 here) is in use,
     * then 12 are freed and 12 spawned: 4 reuse freed ones, 8 take the table's last indices. */
    tes_world_desc_t desc = {.min_free_indices = 8};
    scene_t s = make_scene(&desc);
    const uint32_t limit = TES_MAX_ENTITIES - 8;
    CHECK_OK(tes_spawn_batch(s.world, NULL, 0, limit - 12, NULL));
    tes_entity_t e[12], f[12];
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.a), 12, e));
    for (int i = 0; i < 12; i++)
        CHECK_OK(tes_despawn(s.world, e[i]));
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.a, s.s), 12, f));
    for (int i = 0; i < 12; i++)
        CHECK(fx_has(s.world, f[i], s.s));
    for (int i = 0; i < 4; i++)
        CHECK_EQ(tes_entity_index(f[i]), tes_entity_index(e[i]));
    CHECK_EQ(fx_stats(s.world).entity_capacity, TES_MAX_ENTITIES + 1);
    tes_entity_t g;
    CHECK_ERR(tes_spawn(s.world, FX_IDS(s.s), &g), TES_ERR_TOO_MANY_ENTITIES);
    validate(&s);
}
