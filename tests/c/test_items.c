/* Item lists: tes_spawn_items, tes_add_items, tes_set_items, tes_remove_items. Every call is all
 * or nothing (a refused one leaves the world byte for byte as it was, and says which item, value,
 * number and entity it was about), values follow tes_set_number's rules, and a call recorded
 * inside an iteration applies in order, with its values, as what it is at the flush. */
#include "fixtures.h"

static const tes_field_desc_t value_fields[] = {{"v", TES_I32, 0}};
static const tes_field_desc_t bytes_fields[] = {{"n", TES_I32, 0}, {"b", TES_U8, 3}};

typedef struct scene_t {
    tes_world_t *world;
    tes_component_t a, b, bytes, tag, s, m, likes, tree;
} scene_t;

static scene_t make_scene(const tes_world_desc_t *desc) {
    scene_t s;
    s.world = fx_world(desc);
    s.a = fx_component(s.world, "A", value_fields, 1);
    s.b = fx_component(s.world, "B", value_fields, 1);
    s.bytes = fx_component(s.world, "Bytes", bytes_fields, 2);
    s.tag = fx_tag(s.world, "Tag");
    s.s = fx_sparse(s.world, "S", value_fields, 1);
    s.m = fx_sparse(s.world, "M", NULL, 0);
    s.likes = fx_relation(s.world, "Likes", value_fields, 1, 0);
    s.tree = fx_relation(s.world, "ChildOf", NULL, 0,
                         TES_RELATION_EXCLUSIVE | TES_RELATION_ACYCLIC | TES_RELATION_CASCADE);
    return s;
}

static void check_fault(const tes_fault_t *f, uint32_t item, uint32_t value, uint32_t number,
                        tes_entity_t entity) {
    CHECK_EQ(f->item, item);
    CHECK_EQ(f->value, value);
    CHECK_EQ(f->number, number);
    CHECK_EQ(f->entity, entity);
}

static uint64_t changed_tick(tes_world_t *world, tes_entity_t e, tes_component_t c) {
    uint64_t added = 0, changed = 0;
    CHECK_OK(tes_ticks(world, e, c, &added, &changed));
    return changed;
}

static uint64_t added_tick(tes_world_t *world, tes_entity_t e, tes_component_t c) {
    uint64_t added = 0, changed = 0;
    CHECK_OK(tes_ticks(world, e, c, &added, &changed));
    return added;
}

/* A consumer that makes every component of the scene tracked (added and changed ticks). */
static tes_query_t *track(scene_t *s, const tes_component_t *changed, uint32_t n) {
    return fx_query(s->world, &(tes_query_desc_t){.changed = changed, .changed_count = n});
}

static double pair_value(tes_world_t *world, tes_entity_t source, tes_component_t relation,
                         tes_entity_t target) {
    double v = -1;
    CHECK_OK(tes_pair_get_number(world, source, relation, target, 0, 0, &v));
    return v;
}

TEST(spawn_items_gives_components_sparse_members_pairs_and_initial_values) {
    scene_t s = make_scene(NULL);
    track(&s, FX_IDS(s.a, s.s));
    tes_entity_t parent = fx_spawn(s.world, FX_IDS(s.b));
    fx_list_t *l = fx_list_new();
    fx_list_item(l, s.a, 0);
    fx_list_value1(l, 0, -5);
    fx_list_item(fx_list_item(l, s.tag, 0), s.s, 0);
    fx_list_value1(l, 0, 7);
    fx_list_item(fx_list_item(l, s.m, 0), s.likes, parent);
    fx_list_value1(l, 0, 2);
    fx_list_item(l, s.tree, parent);
    tes_entity_t e[3];
    tes_fault_t fault;
    CHECK_OK(tes_spawn_items(s.world, &l->x, 3, e, &fault));
    check_fault(&fault, TES_NO_FAULT, TES_NO_FAULT, TES_NO_FAULT, 0);
    for (int i = 0; i < 3; i++) {
        CHECK(fx_has(s.world, e[i], s.a) && fx_has(s.world, e[i], s.tag));
        CHECK(fx_has(s.world, e[i], s.s) && fx_has(s.world, e[i], s.m));
        CHECK(fx_pair_has(s.world, e[i], s.likes, parent));
        CHECK(fx_pair_has(s.world, e[i], s.tree, parent));
        CHECK_NUM_EQ(fx_get_number(s.world, e[i], s.a, 0, 0), -5);
        CHECK_NUM_EQ(fx_get_number(s.world, e[i], s.s, 0, 0), 7);
        CHECK_NUM_EQ(pair_value(s.world, e[i], s.likes, parent), 2);
        /* Initial values: part of the spawn, not a change. */
        CHECK(added_tick(s.world, e[i], s.a) > 0);
        CHECK_EQ(changed_tick(s.world, e[i], s.a), 0);
        CHECK_EQ(changed_tick(s.world, e[i], s.s), 0);
    }
    /* Without out_entities the spawn still happens, values and all. */
    CHECK_OK(tes_spawn_items(s.world, &l->x, 2, NULL, NULL));
    CHECK_EQ(fx_stats(s.world).entity_count, 6);
    CHECK_OK(tes_world_validate(s.world));
}

TEST(add_items_writes_values_of_held_items_as_changes_and_of_new_ones_as_initial_values) {
    scene_t s = make_scene(NULL);
    tes_query_t *changes = track(&s, FX_IDS(s.a));
    track(&s, FX_IDS(s.b)); /* B and S tracked too: their ticks are kept */
    track(&s, FX_IDS(s.s));
    tes_entity_t target = fx_spawn(s.world, NULL, 0);
    tes_entity_t e = fx_spawn(s.world, FX_IDS(s.a));
    CHECK_OK(tes_set_number(s.world, e, s.a, 0, 0, 1));
    CHECK_OK(tes_pair_add(s.world, e, s.likes, target));
    fx_run(s.world, changes); /* sees e, then last_run moves past it */
    fx_list_t *l = fx_list_new();
    fx_list_item(l, s.a, 0);
    fx_list_value1(l, 0, 9);
    fx_list_item(l, s.b, 0);
    fx_list_value1(l, 0, 3);
    fx_list_item(l, s.s, 0);
    fx_list_value1(l, 0, 4);
    fx_list_item(l, s.likes, target);
    fx_list_value1(l, 0, 6);
    CHECK_OK(tes_add_items(s.world, &e, 1, &l->x, NULL));
    CHECK_NUM_EQ(fx_get_number(s.world, e, s.a, 0, 0), 9);
    CHECK_NUM_EQ(fx_get_number(s.world, e, s.b, 0, 0), 3);
    CHECK_NUM_EQ(fx_get_number(s.world, e, s.s, 0, 0), 4);
    CHECK_NUM_EQ(pair_value(s.world, e, s.likes, target), 6);
    CHECK(changed_tick(s.world, e, s.a) > 0); /* held: a change */
    CHECK_EQ(changed_tick(s.world, e, s.b), 0);
    CHECK_EQ(changed_tick(s.world, e, s.s), 0);
    fx_entities_t *seen = fx_run(s.world, changes);
    FX_CHECK_VISITED(seen, e); /* A changed (B and S were added: no change) */
    CHECK_OK(tes_world_validate(s.world));
}

TEST(add_items_moves_each_entity_once_whatever_archetype_it_starts_in) {
    /* {A} and {A, Tag} both end in {A, Tag, B}: the target gets the rows of both groups. */
    scene_t s = make_scene(&(tes_world_desc_t){.chunk_bytes = 1024});
    tes_entity_t list[300];
    for (int i = 0; i < 300; i++) {
        list[i] = i % 2 ? fx_spawn(s.world, FX_IDS(s.a)) : fx_spawn(s.world, FX_IDS(s.a, s.tag));
        CHECK_OK(tes_set_number(s.world, list[i], s.a, 0, 0, i));
    }
    fx_list_t *l = fx_list_new();
    fx_list_item(fx_list_item(l, s.tag, 0), s.b, 0);
    fx_list_value1(l, 0, 77);
    CHECK_OK(tes_add_items(s.world, list, 300, &l->x, NULL));
    tes_archetype_t target;
    CHECK_OK(tes_archetype_find(s.world, FX_IDS(s.a, s.b, s.tag), &target));
    CHECK_EQ(fx_archetype(s.world, target).entity_count, 300);
    for (int i = 0; i < 300; i++) {
        CHECK_NUM_EQ(fx_get_number(s.world, list[i], s.a, 0, 0), i);
        CHECK_NUM_EQ(fx_get_number(s.world, list[i], s.b, 0, 0), 77);
    }
    fx_check_all_packed(s.world);
    CHECK_OK(tes_world_validate(s.world));
}

/* Runs a call that must fail with `expected`, and checks the world did not change. */
#define CHECK_REFUSED(s, call, expected)                         \
    do {                                                         \
        fx_snapshot_t *before_ = fx_snapshot_full_of((s).world); \
        CHECK_ERR((call), (expected));                           \
        FX_CHECK_UNCHANGED_FULL(before_, (s).world);             \
        CHECK_OK(tes_world_validate((s).world));                 \
    } while (0)

TEST(every_bad_item_value_and_entity_is_refused_with_its_place_and_nothing_changes) {
    scene_t s = make_scene(NULL);
    tes_entity_t e = fx_spawn(s.world, FX_IDS(s.a, s.bytes));
    tes_entity_t other = fx_spawn(s.world, FX_IDS(s.a));
    tes_entity_t dead = fx_spawn(s.world, NULL, 0);
    CHECK_OK(tes_despawn(s.world, dead));
    tes_fault_t f;
    fx_list_t *l;

    l = fx_list_item(fx_list_item(fx_list_new(), s.b, 0), 4096, 0);
    CHECK_REFUSED(s, tes_add_items(s.world, &e, 1, &l->x, &f), TES_ERR_UNKNOWN_COMPONENT);
    check_fault(&f, 1, TES_NO_FAULT, TES_NO_FAULT, 0);

    l = fx_list_item(fx_list_item(fx_list_new(), s.b, 0), s.likes, 0);
    CHECK_REFUSED(s, tes_add_items(s.world, &e, 1, &l->x, &f), TES_ERR_NEEDS_TARGET);
    check_fault(&f, 1, TES_NO_FAULT, TES_NO_FAULT, 0);

    l = fx_list_item(fx_list_item(fx_list_new(), s.b, 0), s.tag, other);
    CHECK_REFUSED(s, tes_add_items(s.world, &e, 1, &l->x, &f), TES_ERR_NOT_A_RELATION);
    check_fault(&f, 1, TES_NO_FAULT, TES_NO_FAULT, 0);

    l = fx_list_item(fx_list_item(fx_list_item(fx_list_new(), s.b, 0), s.tag, 0), s.b, 0);
    CHECK_REFUSED(s, tes_add_items(s.world, &e, 1, &l->x, &f), TES_ERR_INVALID_ARGUMENT);
    check_fault(&f, 2, TES_NO_FAULT, TES_NO_FAULT, 0);

    l = fx_list_item(fx_list_item(fx_list_item(fx_list_new(), s.likes, other), s.b, 0), s.likes,
                     other);
    CHECK_REFUSED(s, tes_add_items(s.world, &e, 1, &l->x, &f), TES_ERR_INVALID_ARGUMENT);
    check_fault(&f, 2, TES_NO_FAULT, TES_NO_FAULT, 0);

    tes_entity_t third = fx_spawn(s.world, NULL, 0);
    l = fx_list_item(fx_list_item(fx_list_new(), s.tree, other), s.tree,
                     third); /* exclusive: one target */
    CHECK_REFUSED(s, tes_add_items(s.world, &e, 1, &l->x, &f), TES_ERR_INVALID_ARGUMENT);
    check_fault(&f, 1, TES_NO_FAULT, TES_NO_FAULT, 0);

    l = fx_list_item(fx_list_item(fx_list_new(), s.b, 0), s.likes, dead);
    CHECK_REFUSED(s, tes_add_items(s.world, &e, 1, &l->x, &f), TES_ERR_STALE_ENTITY);
    check_fault(&f, 1, TES_NO_FAULT, TES_NO_FAULT, dead);

    /* Values: the item index, data, field, numbers, and the value itself. */
    l = fx_list_item(fx_list_new(), s.b, 0);
    l->values[0] = (tes_value_t){1, 0, 0};
    l->x.value_count = 1;
    l->x.number_count = 1;
    CHECK_REFUSED(s, tes_add_items(s.world, &e, 1, &l->x, &f), TES_ERR_INVALID_ARGUMENT);
    check_fault(&f, TES_NO_FAULT, 0, TES_NO_FAULT, 0);

    l = fx_list_value1(fx_list_item(fx_list_item(fx_list_new(), s.b, 0), s.tag, 0), 0, 1);
    CHECK_REFUSED(s, tes_add_items(s.world, &e, 1, &l->x, &f), TES_ERR_TAG_HAS_NO_DATA);
    check_fault(&f, 1, 0, TES_NO_FAULT, 0);

    l = fx_list_value1(fx_list_item(fx_list_new(), s.b, 0), 1, 1);
    CHECK_REFUSED(s, tes_add_items(s.world, &e, 1, &l->x, &f), TES_ERR_UNKNOWN_FIELD);
    check_fault(&f, 0, 0, TES_NO_FAULT, 0);

    l = fx_list_values(fx_list_item(fx_list_new(), s.bytes, 0), 1, 0, 2,
                       (const double[]){1, 2}); /* b has 3 */
    CHECK_REFUSED(s, tes_add_items(s.world, &e, 1, &l->x, &f), TES_ERR_INVALID_ARGUMENT);
    check_fault(&f, 0, 0, TES_NO_FAULT, 0);

    /* The first value is fine: the second's last element is not. Nothing is written. */
    l = fx_list_value1(fx_list_item(fx_list_new(), s.bytes, 0), 0, 5);
    fx_list_values(l, 1, 0, 3, (const double[]){1, 2, 300});
    CHECK_REFUSED(s, tes_add_items(s.world, &e, 1, &l->x, &f), TES_ERR_BAD_VALUE);
    check_fault(&f, 0, 1, 3, 0);
    CHECK_REFUSED(s, tes_set_items(s.world, &e, 1, &l->x, &f), TES_ERR_BAD_VALUE);
    CHECK_REFUSED(s, tes_spawn_items(s.world, &l->x, 1, NULL, &f), TES_ERR_BAD_VALUE);

    l = fx_list_value1(fx_list_item(fx_list_new(), s.a, 0), 0, 1.5);
    CHECK_REFUSED(s, tes_add_items(s.world, &e, 1, &l->x, &f), TES_ERR_BAD_VALUE);
    check_fault(&f, 0, 0, 0, 0);

    /* Entities. */
    l = fx_list_item(fx_list_new(), s.b, 0);
    tes_entity_t stale_list[] = {e, dead};
    CHECK_REFUSED(s, tes_add_items(s.world, stale_list, 2, &l->x, &f), TES_ERR_STALE_ENTITY);
    check_fault(&f, TES_NO_FAULT, TES_NO_FAULT, TES_NO_FAULT, dead);
    tes_entity_t twice[] = {e, other, e};
    CHECK_REFUSED(s, tes_add_items(s.world, twice, 3, &l->x, &f), TES_ERR_DUPLICATE_ENTITY);
    check_fault(&f, TES_NO_FAULT, TES_NO_FAULT, TES_NO_FAULT, e);
    CHECK_REFUSED(s, tes_remove_items(s.world, twice, 3, &l->x, &f), TES_ERR_DUPLICATE_ENTITY);

    /* Values where there are none to take. */
    l = fx_list_value1(fx_list_item(fx_list_new(), s.b, 0), 0, 1);
    CHECK_REFUSED(s, tes_remove_items(s.world, &e, 1, &l->x, &f), TES_ERR_INVALID_ARGUMENT);
    CHECK_REFUSED(s, tes_set_items(s.world, &other, 1, &l->x, &f), TES_ERR_MISSING_COMPONENT);
    check_fault(&f, 0, 0, TES_NO_FAULT, other);
    CHECK_REFUSED(s, tes_add_items(s.world, &e, 1, NULL, &f), TES_ERR_INVALID_ARGUMENT);
}

TEST(an_add_that_makes_a_row_too_large_adds_nothing_else) {
    /* 63 components of 64 fields of [f64, 256] fill an entity to just under the largest row; a
     * 64th is too many. Adding it with a tag must not leave the tag added. */
    tes_world_t *world = fx_world(NULL);
    static tes_field_desc_t wide_fields[64];
    static char names[64][8];
    for (int f = 0; f < 64; f++) {
        snprintf(names[f], sizeof names[f], "f%d", f);
        wide_fields[f] = (tes_field_desc_t){names[f], TES_F64, 256};
    }
    tes_component_t wide[64];
    for (int i = 0; i < 64; i++) {
        char name[16];
        snprintf(name, sizeof name, "W%d", i);
        wide[i] = fx_component(world, name, wide_fields, 64);
    }
    tes_component_t frozen = fx_tag(world, "Frozen");
    tes_entity_t big;
    CHECK_OK(tes_spawn(world, wide, 63, &big));
    fx_list_t *l = fx_list_item(fx_list_item(fx_list_new(), frozen, 0), wide[63], 0);
    tes_fault_t f;
    fx_snapshot_t *before = fx_snapshot_full_of(world);
    CHECK_ERR(tes_add_items(world, &big, 1, &l->x, &f), TES_ERR_ROW_TOO_LARGE);
    FX_CHECK_UNCHANGED_FULL(before, world);
    CHECK(!fx_has(world, big, frozen));
    CHECK_OK(tes_world_validate(world));
}

TEST(remove_items_takes_components_sparse_members_one_pair_or_all_pairs_and_logs_them) {
    scene_t s = make_scene(NULL);
    tes_query_t *gone =
        fx_query(s.world, &(tes_query_desc_t){.removed = FX_IDS(s.a, s.s, s.likes, s.tree)});
    tes_entity_t x = fx_spawn(s.world, NULL, 0), y = fx_spawn(s.world, NULL, 0);
    tes_entity_t e = fx_spawn(s.world, FX_IDS(s.a, s.b, s.s, s.m));
    CHECK_OK(tes_pair_add(s.world, e, s.likes, x));
    CHECK_OK(tes_pair_add(s.world, e, s.likes, y));
    CHECK_OK(tes_pair_add(s.world, e, s.tree, x));
    tes_collect_t c;
    CHECK_OK(tes_query_collect(s.world, gone, &c));
    fx_list_t *l =
        fx_list_item(fx_list_item(fx_list_item(fx_list_new(), s.a, 0), s.s, 0), s.likes, 0);
    fx_list_item(fx_list_item(l, s.tree, y), s.tag, 0); /* not there: skipped */
    CHECK_OK(tes_remove_items(s.world, &e, 1, &l->x, NULL));
    CHECK(!fx_has(s.world, e, s.a) && fx_has(s.world, e, s.b));
    CHECK(!fx_has(s.world, e, s.s) && fx_has(s.world, e, s.m));
    CHECK(!fx_has(s.world, e, s.likes));
    CHECK(fx_pair_has(s.world, e, s.tree, x));
    CHECK_OK(tes_query_collect(s.world, gone, &c));
    CHECK_EQ(c.removed_total, 3); /* A, S, Likes: one each */
    l = fx_list_item(fx_list_new(), s.tree, x);
    CHECK_OK(tes_remove_items(s.world, &e, 1, &l->x, NULL));
    CHECK(!fx_has(s.world, e, s.tree));
    CHECK_OK(tes_world_validate(s.world));
}

TEST(set_items_writes_every_value_as_a_change_or_nothing) {
    scene_t s = make_scene(NULL);
    tes_query_t *changes = track(&s, FX_IDS(s.bytes));
    tes_entity_t e = fx_spawn(s.world, FX_IDS(s.bytes, s.s));
    fx_run(s.world, changes);
    fx_list_t *l = fx_list_value1(fx_list_item(fx_list_new(), s.bytes, 0), 0, -3);
    fx_list_values(l, 1, 0, 3, (const double[]){1, 2, 3});
    fx_list_item(l, s.s, 0);
    fx_list_value1(l, 0, 8);
    CHECK_OK(tes_set_items(s.world, &e, 1, &l->x, NULL));
    CHECK_NUM_EQ(fx_get_number(s.world, e, s.bytes, 0, 0), -3);
    CHECK_NUM_EQ(fx_get_number(s.world, e, s.bytes, 1, 2), 3);
    CHECK_NUM_EQ(fx_get_number(s.world, e, s.s, 0, 0), 8);
    fx_entities_t *seen = fx_run(s.world, changes);
    FX_CHECK_VISITED(seen, e);
}

TEST(a_cycle_anywhere_in_the_list_refuses_the_whole_add) {
    scene_t s = make_scene(NULL);
    tes_entity_t root = fx_spawn(s.world, NULL, 0), child = fx_spawn(s.world, NULL, 0);
    CHECK_OK(tes_pair_add(s.world, child, s.tree, root));
    fx_list_t *l = fx_list_item(fx_list_item(fx_list_new(), s.b, 0), s.tree, child);
    tes_fault_t f;
    CHECK_REFUSED(s, tes_add_items(s.world, &root, 1, &l->x, &f), TES_ERR_CYCLE);
    check_fault(&f, 1, TES_NO_FAULT, TES_NO_FAULT, root);
    CHECK(!fx_has(s.world, root, s.b));
}

TEST(a_deep_chain_builds_and_still_refuses_the_cycle_at_its_bottom) {
    /* Top down, every new child has no children of its own: no walk up the chain is needed. */
    scene_t s = make_scene(NULL);
    enum { DEPTH = 80000 };
    tes_entity_t *chain = fx_malloc(DEPTH * sizeof *chain);
    CHECK_OK(tes_spawn_batch(s.world, NULL, 0, DEPTH, chain));
    for (int i = 1; i < DEPTH; i++)
        CHECK_OK(tes_pair_add(s.world, chain[i], s.tree, chain[i - 1]));
    CHECK_ERR(tes_pair_add(s.world, chain[0], s.tree, chain[DEPTH - 1]), TES_ERR_CYCLE);
    CHECK_ERR(tes_pair_add(s.world, chain[0], s.tree, chain[0]), TES_ERR_CYCLE);
    fx_list_t *l = fx_list_item(fx_list_new(), s.tree, chain[DEPTH - 1]);
    CHECK_ERR(tes_add_items(s.world, &chain[10], 1, &l->x, NULL), TES_ERR_CYCLE);
    CHECK_OK(tes_world_validate(s.world));
}

TEST(a_spawn_of_more_entities_than_a_table_holds_is_refused_before_anything_is_sized) {
    scene_t s = make_scene(NULL);
    fx_list_t *l = fx_list_item(fx_list_item(fx_list_new(), s.a, 0), s.s, 0);
    fx_snapshot_t *before = fx_snapshot_full_of(s.world);
    uint64_t bytes = fx_stats(s.world).bytes_allocated;
    const uint32_t counts[] = {1u << 30, 1u << 31, UINT32_MAX, TES_MAX_ENTITIES + 1};
    for (int i = 0; i < 4; i++) {
        CHECK_ERR(tes_spawn_items(s.world, &l->x, counts[i], NULL, NULL),
                  TES_ERR_TOO_MANY_ENTITIES);
        CHECK_ERR(tes_spawn_batch(s.world, FX_IDS(s.a, s.s), counts[i], NULL),
                  TES_ERR_TOO_MANY_ENTITIES);
        CHECK_ERR(tes_spawn_batch(s.world, FX_IDS(s.a), counts[i], NULL),
                  TES_ERR_TOO_MANY_ENTITIES);
    }
    FX_CHECK_UNCHANGED_FULL(before, s.world);
    CHECK(fx_stats(s.world).bytes_allocated <= bytes + 4096);
    CHECK_OK(tes_world_validate(s.world));
}

/* ---- inside an iteration ------------------------------------------------------------------ */

typedef struct loop_t {
    tes_iter_t it;
} loop_t;

/* Starts a run of a plain query over everything, so that structural calls are recorded. */
static void loop_begin(scene_t *s, loop_t *loop) {
    tes_query_t *all = fx_query(s->world, &(tes_query_desc_t){0});
    CHECK_OK(tes_query_iter(s->world, all, &loop->it));
    CHECK(tes_iter_next(&loop->it));
}

static void loop_end(loop_t *loop) {
    tes_iter_fini(&loop->it);
}

TEST(recorded_item_calls_apply_in_order_with_their_values_as_what_they_are_then) {
    scene_t s = make_scene(NULL);
    tes_query_t *changed = track(&s, FX_IDS(s.b));
    tes_query_t *added = fx_query(s.world, &(tes_query_desc_t){.added = FX_IDS(s.b)});
    tes_entity_t e = fx_spawn(s.world, FX_IDS(s.a, s.b));
    tes_entity_t f = fx_spawn(s.world, FX_IDS(s.a, s.b));
    tes_entity_t g = fx_spawn(s.world, FX_IDS(s.a));
    CHECK_OK(tes_set_number(s.world, e, s.b, 0, 0, 1));
    fx_run(s.world, changed);
    fx_run(s.world, added);
    loop_t loop;
    loop_begin(&s, &loop);
    /* (a) remove then add with a value: the value survives the remove it follows. */
    fx_list_t *l = fx_list_item(fx_list_new(), s.b, 0);
    CHECK_OK(tes_remove_items(s.world, &e, 1, &l->x, NULL));
    fx_list_value1(l, 0, 5);
    CHECK_OK(tes_add_items(s.world, &e, 1, &l->x, NULL));
    CHECK_NUM_EQ(fx_get_number(s.world, e, s.b, 0, 0), 1); /* nothing applied yet */
    /* (b) an add of a held component with a value, then a set: the set follows the add (it is
     * recorded after it), so the add's value, written when the loop ends, does not land over
     * it; until then f reads as it was. */
    fx_list_t *seven = fx_list_value1(fx_list_item(fx_list_new(), s.b, 0), 0, 7);
    CHECK_OK(tes_add_items(s.world, &f, 1, &seven->x, NULL));
    CHECK_OK(tes_set_number(s.world, f, s.b, 0, 0, 8));
    CHECK_NUM_EQ(fx_get_number(s.world, f, s.b, 0, 0), 0);
    /* (c) two adds to an entity that lacks B: the second one's value is a change then. */
    fx_list_t *one = fx_list_value1(fx_list_item(fx_list_new(), s.b, 0), 0, 1);
    fx_list_t *two = fx_list_value1(fx_list_item(fx_list_new(), s.b, 0), 0, 2);
    CHECK_OK(tes_add_items(s.world, &g, 1, &one->x, NULL));
    CHECK_OK(tes_add_items(s.world, &g, 1, &two->x, NULL));
    /* A set of B on g follows the recorded adds, as a change. */
    CHECK_OK(tes_set_number(s.world, g, s.b, 0, 0, 3));
    loop_end(&loop);
    CHECK_NUM_EQ(fx_get_number(s.world, e, s.b, 0, 0), 5);
    CHECK_NUM_EQ(fx_get_number(s.world, f, s.b, 0, 0), 8);
    CHECK_NUM_EQ(fx_get_number(s.world, g, s.b, 0, 0), 3);
    FX_CHECK_VISITED(fx_run(s.world, added), e, g);   /* e lost B and got it back */
    FX_CHECK_VISITED(fx_run(s.world, changed), f, g); /* f: 7 then 8; g: 2, 3 */
    CHECK_EQ(fx_stats(s.world).commands_skipped, 0);
    CHECK_OK(tes_world_validate(s.world));
}

TEST(a_recorded_spawn_with_items_is_pending_then_placed_with_its_values) {
    scene_t s = make_scene(NULL);
    tes_entity_t parent = fx_spawn(s.world, NULL, 0);
    loop_t loop;
    loop_begin(&s, &loop);
    fx_list_t *l = fx_list_value1(fx_list_item(fx_list_new(), s.a, 0), 0, 4);
    fx_list_item(l, s.s, 0);
    fx_list_value1(l, 0, 6);
    fx_list_item(l, s.likes, parent);
    fx_list_value1(l, 0, 9);
    tes_entity_t e[2];
    CHECK_OK(tes_spawn_items(s.world, &l->x, 2, e, NULL));
    bool has;
    CHECK_ERR(tes_has(s.world, e[0], s.a, &has), TES_ERR_PENDING_ENTITY);
    /* Writes to the pending entity are checked against what it will have. */
    CHECK_OK(tes_set_number(s.world, e[1], s.s, 0, 0, 10));
    CHECK_ERR(tes_set_number(s.world, e[1], s.b, 0, 0, 10), TES_ERR_MISSING_COMPONENT);
    /* A recorded add to a pending entity joins what it will have. */
    fx_list_t *b = fx_list_value1(fx_list_item(fx_list_new(), s.b, 0), 0, 2);
    CHECK_OK(tes_add_items(s.world, &e[1], 1, &b->x, NULL));
    CHECK_OK(tes_set_number(s.world, e[1], s.b, 0, 0, 12));
    loop_end(&loop);
    for (int i = 0; i < 2; i++) {
        CHECK_NUM_EQ(fx_get_number(s.world, e[i], s.a, 0, 0), 4);
        CHECK_NUM_EQ(pair_value(s.world, e[i], s.likes, parent), 9);
    }
    CHECK_NUM_EQ(fx_get_number(s.world, e[0], s.s, 0, 0), 6);
    CHECK_NUM_EQ(fx_get_number(s.world, e[1], s.s, 0, 0), 10);
    CHECK_NUM_EQ(fx_get_number(s.world, e[1], s.b, 0, 0), 12);
    CHECK(!fx_has(s.world, e[0], s.b));
    CHECK_EQ(fx_stats(s.world).commands_skipped, 0);
    CHECK_OK(tes_world_validate(s.world));
}

/* Issue 16, bug 2 (c): the values of an add of a component that a recorded spawn gives the
 * entity are a change when applied, for chunk and sparse components alike. */
TEST(an_add_of_a_component_a_pending_spawn_has_is_a_change) {
    scene_t s = make_scene(NULL);
    tes_query_t *changed = track(&s, FX_IDS(s.b));
    tes_query_t *added = fx_query(s.world, &(tes_query_desc_t){.added = FX_IDS(s.b)});
    tes_query_t *sparse_changed = track(&s, FX_IDS(s.s));
    fx_spawn(s.world, NULL, 0); /* something for the loop to visit */
    loop_t loop;
    loop_begin(&s, &loop);
    fx_list_t *born = fx_list_value1(
        fx_list_item(fx_list_value1(fx_list_item(fx_list_new(), s.b, 0), 0, 1), s.s, 0), 0, 1);
    tes_entity_t e;
    CHECK_OK(tes_spawn_items(s.world, &born->x, 1, &e, NULL));
    fx_list_t *again = fx_list_value1(
        fx_list_item(fx_list_value1(fx_list_item(fx_list_new(), s.b, 0), 0, 4), s.s, 0), 0, 4);
    CHECK_OK(tes_add_items(s.world, &e, 1, &again->x, NULL));
    loop_end(&loop);
    CHECK_NUM_EQ(fx_get_number(s.world, e, s.b, 0, 0), 4);
    CHECK_NUM_EQ(fx_get_number(s.world, e, s.s, 0, 0), 4);
    FX_CHECK_VISITED(fx_run(s.world, added), e);
    FX_CHECK_VISITED(fx_run(s.world, changed), e);
    FX_CHECK_VISITED(fx_run(s.world, sparse_changed), e);
    CHECK_EQ(fx_stats(s.world).commands_skipped, 0);
    CHECK_OK(tes_world_validate(s.world));
}

/* Found by the JS model of issue 16: a set with values of an item a pending entity would not
 * have was recorded and then skipped at the flush, where tes_set refuses it at once. */
TEST(a_set_of_an_item_a_pending_entity_will_not_have_is_refused_at_once) {
    scene_t s = make_scene(NULL);
    tes_entity_t parent = fx_spawn(s.world, NULL, 0);
    loop_t loop;
    loop_begin(&s, &loop);
    fx_list_t *spawn = fx_list_value1(fx_list_item(fx_list_new(), s.a, 0), 0, 1);
    fx_list_item(spawn, s.s, 0);
    tes_entity_t e;
    CHECK_OK(tes_spawn_items(s.world, &spawn->x, 1, &e, NULL));
    tes_fault_t fault;
    fx_list_t *b = fx_list_value1(fx_list_item(fx_list_new(), s.b, 0), 0, 2);
    CHECK_ERR(tes_set_items(s.world, &e, 1, &b->x, &fault), TES_ERR_MISSING_COMPONENT);
    check_fault(&fault, 0, 0, TES_NO_FAULT, e);
    CHECK_OK(tes_set_items(s.world, &e, 1,
                           &fx_list_value1(fx_list_item(fx_list_new(), s.s, 0), 0, 3)->x, NULL));
    fx_list_t *pair = fx_list_value1(fx_list_item(fx_list_new(), s.likes, parent), 0, 4);
    CHECK_ERR(tes_set_items(s.world, &e, 1, &pair->x, NULL), TES_ERR_MISSING_COMPONENT);
    /* What its recorded commands bring may be written: a table component, a pair. */
    CHECK_OK(tes_add_items(s.world, &e, 1, &fx_list_item(fx_list_new(), s.b, 0)->x, NULL));
    CHECK_OK(tes_set_items(s.world, &e, 1, &b->x, NULL));
    CHECK_OK(tes_pair_add(s.world, e, s.likes, parent));
    CHECK_OK(tes_set_items(s.world, &e, 1, &pair->x, NULL));
    CHECK_OK(tes_remove_items(s.world, &e, 1, &fx_list_item(fx_list_new(), s.s, 0)->x, NULL));
    CHECK_ERR(tes_set_items(s.world, &e, 1,
                            &fx_list_value1(fx_list_item(fx_list_new(), s.s, 0), 0, 5)->x, NULL),
              TES_ERR_MISSING_COMPONENT);
    loop_end(&loop);
    CHECK_NUM_EQ(fx_get_number(s.world, e, s.b, 0, 0), 2);
    CHECK_NUM_EQ(pair_value(s.world, e, s.likes, parent), 4);
    CHECK(!fx_has(s.world, e, s.s));
    CHECK_EQ(fx_stats(s.world).commands_skipped, 0);
    CHECK_OK(tes_world_validate(s.world));
}

TEST(a_recorded_call_whose_entity_is_gone_at_the_flush_is_skipped) {
    scene_t s = make_scene(NULL);
    tes_entity_t e = fx_spawn(s.world, FX_IDS(s.a));
    loop_t loop;
    loop_begin(&s, &loop);
    CHECK_OK(tes_despawn(s.world, e));
    fx_list_t *l = fx_list_value1(fx_list_item(fx_list_new(), s.b, 0), 0, 2);
    CHECK_OK(tes_add_items(s.world, &e, 1, &l->x, NULL));
    loop_end(&loop);
    CHECK(!tes_is_alive(s.world, e));
    CHECK_EQ(fx_stats(s.world).commands_skipped, 1);
    CHECK_OK(tes_world_validate(s.world));
}

/* ---- over a query ------------------------------------------------------------------------- */

TEST(query_add_items_is_all_or_nothing_over_every_archetype_it_matches) {
    /* Two archetypes match; adding a component makes one of them too large. Nothing moves. */
    tes_world_t *world = fx_world(NULL);
    static tes_field_desc_t wide_fields[64];
    static char names[64][8];
    for (int f = 0; f < 64; f++) {
        snprintf(names[f], sizeof names[f], "f%d", f);
        wide_fields[f] = (tes_field_desc_t){names[f], TES_F64, 256};
    }
    tes_component_t wide[64];
    for (int i = 0; i < 64; i++) {
        char name[16];
        snprintf(name, sizeof name, "W%d", i);
        wide[i] = fx_component(world, name, wide_fields, 64);
    }
    tes_component_t mark = fx_tag(world, "Mark");
    fx_spawn(world, FX_IDS(wide[0], mark));
    fx_spawn(world, wide, 63);
    /* Both have W0; {W0, Mark} + W63 fits, {W0..W62} + W63 does not. */
    tes_query_t *q = fx_query(world, &(tes_query_desc_t){.all = FX_IDS(wide[0])});
    fx_list_t *l = fx_list_item(fx_list_new(), wide[63], 0);
    fx_snapshot_t *before = fx_snapshot_full_of(world);
    CHECK_ERR(tes_query_add_items(world, q, &l->x, NULL), TES_ERR_ROW_TOO_LARGE);
    FX_CHECK_UNCHANGED_FULL(before, world);
    CHECK_OK(tes_world_validate(world));
}

TEST(query_add_and_remove_items_move_whole_archetypes_or_rows_with_their_values) {
    scene_t s = make_scene(&(tes_world_desc_t){.chunk_bytes = 1024});
    tes_query_t *gone = fx_query(s.world, &(tes_query_desc_t){.removed = FX_IDS(s.tag)});
    tes_entity_t list[500];
    for (int i = 0; i < 500; i++) {
        list[i] = i % 3 ? fx_spawn(s.world, FX_IDS(s.a)) : fx_spawn(s.world, FX_IDS(s.a, s.b));
        CHECK_OK(tes_set_number(s.world, list[i], s.a, 0, 0, i));
    }
    tes_query_t *q = fx_query(s.world, &(tes_query_desc_t){.all = FX_IDS(s.a)});
    fx_list_t *tag = fx_list_item(fx_list_new(), s.tag, 0);
    CHECK_OK(tes_query_add_items(s.world, q, &tag->x, NULL));
    for (int i = 0; i < 500; i++) {
        CHECK(fx_has(s.world, list[i], s.tag));
        CHECK_NUM_EQ(fx_get_number(s.world, list[i], s.a, 0, 0), i);
    }
    fx_check_all_packed(s.world);
    /* With a value and a sparse member: row by row. */
    fx_list_t *more = fx_list_value1(fx_list_item(fx_list_new(), s.b, 0), 0, 3);
    fx_list_item(more, s.m, 0);
    CHECK_OK(tes_query_add_items(s.world, q, &more->x, NULL));
    for (int i = 0; i < 500; i++) {
        CHECK_NUM_EQ(fx_get_number(s.world, list[i], s.b, 0, 0), 3);
        CHECK(fx_has(s.world, list[i], s.m));
    }
    tes_collect_t c;
    CHECK_OK(tes_query_collect(s.world, gone, &c));
    CHECK_OK(tes_query_remove_items(s.world, q, &tag->x, NULL));
    CHECK_OK(tes_query_collect(s.world, gone, &c));
    CHECK_EQ(c.removed_total, 500);
    for (int i = 0; i < 500; i++)
        CHECK(!fx_has(s.world, list[i], s.tag));
    /* A consumer's run would use up what it reports. */
    tes_query_t *filtered = track(&s, FX_IDS(s.a));
    CHECK_ERR(tes_query_add_items(s.world, filtered, &tag->x, NULL), TES_ERR_INVALID_ARGUMENT);
    fx_check_all_packed(s.world);
    CHECK_OK(tes_world_validate(s.world));
}

TEST(query_items_inside_an_iteration_are_recorded_for_the_entities_matched_now) {
    scene_t s = make_scene(NULL);
    tes_entity_t e = fx_spawn(s.world, FX_IDS(s.a));
    tes_query_t *q = fx_query(s.world, &(tes_query_desc_t){.all = FX_IDS(s.a)});
    loop_t loop;
    loop_begin(&s, &loop);
    fx_list_t *l = fx_list_value1(fx_list_item(fx_list_new(), s.b, 0), 0, 4);
    CHECK_OK(tes_query_add_items(s.world, q, &l->x, NULL));
    tes_entity_t late = fx_spawn(s.world, FX_IDS(s.a)); /* pending: not matched now */
    CHECK(!fx_has(s.world, e, s.b));
    loop_end(&loop);
    CHECK_NUM_EQ(fx_get_number(s.world, e, s.b, 0, 0), 4);
    CHECK(!fx_has(s.world, late, s.b));
    CHECK_OK(tes_world_validate(s.world));
}

/* ---- numbers per entity (tes_value_t.stride) ------------------------------------------------ */

/* A value of the latest item: `count` numbers from `first` on (first, first + step, ...). */
static void wide_value(fx_list_t *w, uint32_t field, uint32_t stride, uint32_t count, double first,
                       double step) {
    w->values[w->x.value_count++] =
        (tes_value_t){w->x.item_count - 1, field, w->x.number_count, stride};
    CHECK(w->x.number_count + count <= 4096);
    for (uint32_t i = 0; i < count; i++)
        w->numbers[w->x.number_count++] = first + step * i;
}

TEST(a_spawn_with_strides_gives_each_entity_its_own_numbers) {
    /* Small chunks: the 300 entities fill several, and each still gets its own numbers. */
    scene_t s = make_scene(&(tes_world_desc_t){.chunk_bytes = 1024});
    track(&s, FX_IDS(s.a, s.bytes, s.s));
    tes_entity_t parent = fx_spawn(s.world, NULL, 0);
    enum { N = 300 };
    fx_list_t *w = fx_list_new();
    fx_list_item(w, s.a, 0);
    wide_value(w, 0, 1, N, 1000, 1); /* A.v: 1000 + i */
    fx_list_item(w, s.bytes, 0);
    wide_value(w, 0, 0, 1, 7, 0);     /* Bytes.n: 7 for everyone */
    wide_value(w, 1, 3, 3 * N, 0, 1); /* Bytes.b[k]: (3i + k) mod 256 is written below */
    for (uint32_t k = 0; k < 3 * N; k++)
        w->numbers[w->values[2].number + k] = (3 * k) % 256;
    fx_list_item(w, s.s, 0);
    wide_value(w, 0, 1, N, -1, -1); /* S.v: -1 - i */
    fx_list_item(w, s.likes, parent);
    wide_value(w, 0, 1, N, 0, 2); /* the pair's data: 2i */
    tes_entity_t e[N];
    tes_fault_t fault;
    CHECK_OK(tes_spawn_items(s.world, &w->x, N, e, &fault));
    check_fault(&fault, TES_NO_FAULT, TES_NO_FAULT, TES_NO_FAULT, 0);
    for (uint32_t i = 0; i < N; i++) {
        CHECK_NUM_EQ(fx_get_number(s.world, e[i], s.a, 0, 0), 1000 + i);
        CHECK_NUM_EQ(fx_get_number(s.world, e[i], s.bytes, 0, 0), 7);
        for (uint32_t k = 0; k < 3; k++)
            CHECK_NUM_EQ(fx_get_number(s.world, e[i], s.bytes, 1, k), (3 * (3 * i + k)) % 256);
        CHECK_NUM_EQ(fx_get_number(s.world, e[i], s.s, 0, 0), -1.0 - i);
        CHECK_NUM_EQ(pair_value(s.world, e[i], s.likes, parent), 2.0 * i);
        /* Initial values, as without a stride: added, not changed. */
        CHECK(added_tick(s.world, e[i], s.a) > 0);
        CHECK_EQ(changed_tick(s.world, e[i], s.a), 0);
    }
    CHECK_OK(tes_world_validate(s.world));
}

TEST(a_bad_number_of_any_entity_refuses_the_whole_strided_call_with_its_place) {
    scene_t s = make_scene(NULL);
    fx_spawn(s.world, FX_IDS(s.a));
    tes_fault_t f;
    fx_list_t *w = fx_list_new();
    fx_list_item(w, s.b, 0);
    wide_value(w, 0, 0, 1, 1, 0);
    fx_list_item(w, s.a, 0);
    wide_value(w, 0, 1, 100, 0, 1); /* entity i: i; numbers 1..100 */
    w->numbers[1 + 57] = 1.5;       /* entity 57's: an i32 cannot hold it */
    CHECK_REFUSED(s, tes_spawn_items(s.world, &w->x, 100, NULL, &f), TES_ERR_BAD_VALUE);
    check_fault(&f, 1, 1, 1 + 57, 0);
    /* The number of entity 57 of the list, whichever call. */
    tes_entity_t list[100];
    for (int i = 0; i < 100; i++)
        list[i] = fx_spawn(s.world, FX_IDS(s.a, s.b));
    CHECK_REFUSED(s, tes_add_items(s.world, list, 100, &w->x, &f), TES_ERR_BAD_VALUE);
    check_fault(&f, 1, 1, 1 + 57, 0);
    CHECK_REFUSED(s, tes_set_items(s.world, list, 100, &w->x, &f), TES_ERR_BAD_VALUE);
    check_fault(&f, 1, 1, 1 + 57, 0);
    /* With fewer numbers than the entities need: refused before anything is sized. */
    w->numbers[1 + 57] = 57;
    w->x.number_count = 100; /* entity 99's number is missing */
    CHECK_REFUSED(s, tes_set_items(s.world, list, 100, &w->x, &f), TES_ERR_INVALID_ARGUMENT);
    check_fault(&f, 1, 1, TES_NO_FAULT, 0);
    CHECK_REFUSED(s, tes_spawn_items(s.world, &w->x, 100, NULL, &f), TES_ERR_INVALID_ARGUMENT);
    CHECK_OK(tes_spawn_items(s.world, &w->x, 99, NULL, &f));
    /* Sizes that would overflow: a huge count, a huge stride. */
    CHECK_REFUSED(s, tes_spawn_items(s.world, &w->x, UINT32_MAX, NULL, &f),
                  TES_ERR_INVALID_ARGUMENT);
    w->values[1].stride = UINT32_MAX;
    CHECK_REFUSED(s, tes_spawn_items(s.world, &w->x, 3, NULL, &f), TES_ERR_INVALID_ARGUMENT);
    /* One entity reads only the first block, whatever the stride. */
    CHECK_OK(tes_spawn_items(s.world, &w->x, 1, NULL, &f));
    /* No entity reads nothing. */
    CHECK_OK(tes_spawn_items(s.world, &w->x, 0, NULL, &f));
    CHECK_OK(tes_world_validate(s.world));
}

TEST(add_and_set_items_with_a_stride_write_entity_i_its_numbers) {
    scene_t s = make_scene(NULL);
    tes_query_t *changed = track(&s, FX_IDS(s.a));
    track(&s, FX_IDS(s.b));
    tes_entity_t list[4];
    for (int i = 0; i < 4; i++)
        list[i] = i % 2 ? fx_spawn(s.world, FX_IDS(s.a)) : fx_spawn(s.world, FX_IDS(s.a, s.tag));
    fx_run(s.world, changed);
    fx_list_t *w = fx_list_new();
    fx_list_item(w, s.b, 0);
    wide_value(w, 0, 1, 4, 10, 1);
    CHECK_OK(tes_add_items(s.world, list, 4, &w->x, NULL));
    fx_list_t *set = fx_list_new();
    fx_list_item(set, s.a, 0);
    wide_value(set, 0, 1, 4, 20, -1);
    CHECK_OK(tes_set_items(s.world, list, 4, &set->x, NULL));
    for (uint32_t i = 0; i < 4; i++) {
        CHECK_NUM_EQ(fx_get_number(s.world, list[i], s.b, 0, 0), 10 + i);
        CHECK_EQ(changed_tick(s.world, list[i], s.b), 0); /* new: initial values */
        CHECK_NUM_EQ(fx_get_number(s.world, list[i], s.a, 0, 0), 20.0 - i);
    }
    fx_entities_t *seen = fx_run(s.world, changed);
    FX_CHECK_VISITED(seen, list[0], list[1], list[2], list[3]);
    CHECK_OK(tes_world_validate(s.world));
}

TEST(recorded_strided_calls_give_each_entity_its_numbers_in_order_at_the_flush) {
    scene_t s = make_scene(NULL);
    tes_entity_t parent = fx_spawn(s.world, NULL, 0);
    tes_entity_t placed[3];
    for (int i = 0; i < 3; i++)
        placed[i] = fx_spawn(s.world, FX_IDS(s.a));
    loop_t loop;
    loop_begin(&s, &loop);
    fx_list_t *w = fx_list_new();
    fx_list_item(w, s.a, 0);
    wide_value(w, 0, 1, 5, 100, 1);
    fx_list_item(w, s.s, 0);
    wide_value(w, 0, 1, 5, 200, 1);
    fx_list_item(w, s.likes, parent);
    wide_value(w, 0, 1, 5, 300, 1);
    tes_entity_t e[5];
    CHECK_OK(tes_spawn_items(s.world, &w->x, 5, e, NULL));
    /* Recorded after the spawn: applied after it. */
    CHECK_OK(tes_set_number(s.world, e[2], s.a, 0, 0, -2));
    CHECK_OK(tes_despawn(s.world, e[4]));
    /* An add with numbers per entity to placed entities: recorded, each with its own. */
    fx_list_t *b = fx_list_new();
    fx_list_item(b, s.b, 0);
    wide_value(b, 0, 1, 3, 50, 5);
    CHECK_OK(tes_add_items(s.world, placed, 3, &b->x, NULL));
    CHECK(!fx_has(s.world, placed[0], s.b));
    loop_end(&loop);
    for (uint32_t i = 0; i < 4; i++) {
        CHECK_NUM_EQ(fx_get_number(s.world, e[i], s.a, 0, 0), i == 2 ? -2.0 : 100.0 + i);
        CHECK_NUM_EQ(fx_get_number(s.world, e[i], s.s, 0, 0), 200 + i);
        CHECK_NUM_EQ(pair_value(s.world, e[i], s.likes, parent), 300 + i);
    }
    CHECK(!tes_is_alive(s.world, e[4]));
    for (uint32_t i = 0; i < 3; i++)
        CHECK_NUM_EQ(fx_get_number(s.world, placed[i], s.b, 0, 0), 50 + 5 * i);
    CHECK_EQ(fx_stats(s.world).commands_skipped, 0);
    CHECK_OK(tes_world_validate(s.world));
}

/* A recorded spawn of chunk components only carries its values on its spawn commands (issue 18):
 * placed with them at the flush, as initial values (not a change), before what was recorded
 * after it; scalar, per-entity and array values alike. */
TEST(a_recorded_spawn_of_chunk_components_is_placed_with_its_values_in_order) {
    scene_t s = make_scene(NULL);
    tes_query_t *tracked = track(&s, (tes_component_t[]){s.a}, 1);
    fx_spawn(s.world, NULL, 0); /* something for the loop to visit */
    loop_t loop;
    loop_begin(&s, &loop);
    fx_list_t *w = fx_list_new();
    fx_list_item(w, s.a, 0);
    wide_value(w, 0, 1, 4, 10, 1);
    fx_list_item(w, s.bytes, 0);
    wide_value(w, 0, 0, 1, 7, 0);
    wide_value(w, 1, 3, 12, 100, 1);
    fx_list_item(w, s.tag, 0);
    tes_entity_t e[4];
    CHECK_OK(tes_spawn_items(s.world, &w->x, 4, e, NULL));
    bool has;
    CHECK_ERR(tes_has(s.world, e[0], s.a, &has), TES_ERR_PENDING_ENTITY);
    /* Checked against what it will have, and applied after its spawn. */
    CHECK_OK(tes_set_number(s.world, e[1], s.a, 0, 0, -1));
    CHECK_ERR(tes_set_number(s.world, e[1], s.b, 0, 0, 1), TES_ERR_MISSING_COMPONENT);
    CHECK_OK(tes_despawn(s.world, e[3]));
    /* One spawn alone, with one value. */
    fx_list_t *one = fx_list_value1(fx_list_item(fx_list_new(), s.a, 0), 0, 55);
    tes_entity_t lone;
    CHECK_OK(tes_spawn_items(s.world, &one->x, 1, &lone, NULL));
    uint64_t tick = fx_stats(s.world).change_tick;
    loop_end(&loop);
    for (uint32_t i = 0; i < 3; i++) {
        CHECK_NUM_EQ(fx_get_number(s.world, e[i], s.a, 0, 0), i == 1 ? -1.0 : 10.0 + i);
        CHECK_NUM_EQ(fx_get_number(s.world, e[i], s.bytes, 0, 0), 7);
        for (uint32_t k = 0; k < 3; k++)
            CHECK_NUM_EQ(fx_get_number(s.world, e[i], s.bytes, 1, k), 100 + 3 * i + k);
        CHECK(fx_has(s.world, e[i], s.tag));
        CHECK_EQ(added_tick(s.world, e[i], s.a), tick);
        /* Initial values are part of the spawn; only the recorded set is a change. */
        CHECK_EQ(changed_tick(s.world, e[i], s.a), i == 1 ? tick : 0);
    }
    CHECK(!tes_is_alive(s.world, e[3]));
    CHECK_NUM_EQ(fx_get_number(s.world, lone, s.a, 0, 0), 55);
    CHECK_EQ(changed_tick(s.world, lone, s.a), 0);
    CHECK_EQ(fx_stats(s.world).commands_skipped, 0);
    CHECK_OK(tes_world_validate(s.world));
    (void)tracked;
}

TEST(query_items_refuse_numbers_per_entity) {
    scene_t s = make_scene(NULL);
    fx_spawn(s.world, FX_IDS(s.a));
    tes_query_t *q = fx_query(s.world, &(tes_query_desc_t){.all = FX_IDS(s.a)});
    fx_list_t *w = fx_list_new();
    fx_list_item(w, s.b, 0);
    wide_value(w, 0, 1, 8, 1, 1);
    tes_fault_t f;
    CHECK_REFUSED(s, tes_query_add_items(s.world, q, &w->x, &f), TES_ERR_INVALID_ARGUMENT);
    check_fault(&f, 0, 0, TES_NO_FAULT, 0);
}

/* ---- registration taken back -------------------------------------------------------------- */

TEST(the_latest_registration_can_be_taken_back_while_nothing_uses_it) {
    scene_t s = make_scene(NULL);
    uint32_t count = fx_stats(s.world).component_count;
    fx_snapshot_t *before = fx_snapshot_full_of(s.world);
    tes_component_t fresh = fx_sparse(s.world, "Fresh", value_fields, 1);
    CHECK_ERR(tes_component_unregister(s.world, s.a), TES_ERR_INVALID_ARGUMENT); /* not latest */
    CHECK_OK(tes_component_unregister(s.world, fresh));
    FX_CHECK_UNCHANGED_FULL(before, s.world);
    CHECK_EQ(fx_stats(s.world).component_count, count);
    CHECK_ERR(tes_component_unregister(s.world, fresh), TES_ERR_UNKNOWN_COMPONENT);
    /* The name and id can be had again. */
    CHECK_EQ(fx_sparse(s.world, "Fresh", value_fields, 1), fresh);
    /* In use: an archetype, a query, a member. */
    tes_component_t used = fx_component(s.world, "Used", value_fields, 1);
    tes_archetype_t a;
    CHECK_OK(tes_archetype_find(s.world, FX_IDS(used), &a));
    CHECK_ERR(tes_component_unregister(s.world, used), TES_ERR_INVALID_ARGUMENT);
    tes_component_t queried = fx_component(s.world, "Queried", value_fields, 1);
    fx_query(s.world, &(tes_query_desc_t){.none = FX_IDS(queried)});
    CHECK_ERR(tes_component_unregister(s.world, queried), TES_ERR_INVALID_ARGUMENT);
    tes_component_t member = fx_sparse(s.world, "Member", NULL, 0);
    tes_entity_t e = fx_spawn(s.world, NULL, 0);
    CHECK_OK(tes_add(s.world, e, member));
    CHECK_ERR(tes_component_unregister(s.world, member), TES_ERR_INVALID_ARGUMENT);
    CHECK_OK(tes_world_validate(s.world));
}
