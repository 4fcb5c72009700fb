/* Calls and sequences checked against tessera.h's documented contract (written from the header,
 * not the code). Each test quotes the header sentence it relies on. */
#include "fixtures.h"

#include <float.h>
#include <math.h>

static const tes_field_desc_t v_fields[] = {{"v", TES_I32, 0}};
static const tes_field_desc_t arr_fields[] = {{"a", TES_I32, 3}};
static const tes_field_desc_t u32_fields[] = {{"u", TES_U32, 0}};
static const tes_field_desc_t i32_fields[] = {{"i", TES_I32, 0}};
static const tes_field_desc_t i8_fields[] = {{"b", TES_I8, 0}};

/* The snapshot bytes of the world (a copy released after the case). */
typedef struct hbytes_t {
    uint8_t *p;
    uint32_t n;
} hbytes_t;

static hbytes_t hsnap(tes_world_t *w) {
    const uint8_t *bytes = NULL;
    uint32_t size = 0;
    CHECK_OK(tes_snapshot(w, &bytes, &size));
    hbytes_t b = {fx_malloc(size), size};
    memcpy(b.p, bytes, size);
    return b;
}

#define CHECK_SAME_BYTES(b, w)                    \
    do {                                          \
        hbytes_t now_ = hsnap(w);                 \
        CHECK_EQ(now_.n, (b).n);                  \
        CHECK(memcmp(now_.p, (b).p, (b).n) == 0); \
    } while (0)

/* Restoring the snapshot gives a world whose snapshot is the same bytes. */
static void hroundtrip(tes_world_t *w) {
    CHECK_OK(tes_world_validate(w));
    hbytes_t b = hsnap(w);
    tes_world_t *r = NULL;
    CHECK_OK(tes_world_restore(NULL, b.p, b.n, &r));
    harness_defer(fx_destroy_world, r);
    CHECK_OK(tes_world_validate(r));
    CHECK_SAME_BYTES(b, r);
}

/* ---------------------------------------------------------------------------------------- */
/* Items: counts that wrap                                                                   */
/* ---------------------------------------------------------------------------------------- */

/* "numbers out of range (for a value with a stride: the numbers of any of the call's
 * entities) TES_ERR_INVALID_ARGUMENT" ... "a failed call changes nothing" */
TEST(items_stride_that_wraps_32_bits_is_out_of_range) {
    tes_world_t *w = fx_world(NULL);
    tes_component_t a = fx_component(w, "A", v_fields, 1);
    fx_spawn(w, FX_IDS(a));
    tes_item_t it[] = {{a, 0}};
    double numbers[] = {1, 2};
    /* entity 1 takes number 1 + 1 * 0xFFFFFFFF = 2^32: past number_count (2). */
    tes_value_t val[] = {{0, 0, 1, 0xFFFFFFFFu}};
    tes_items_t items = {it, 1, val, 1, numbers, 2};
    fx_snapshot_t *before = fx_snapshot_full_of(w);
    hbytes_t b = hsnap(w);
    tes_entity_t out[2] = {0, 0};
    tes_fault_t fault;
    CHECK_ERR(tes_spawn_items(w, &items, 2, out, &fault), TES_ERR_INVALID_ARGUMENT);
    FX_CHECK_UNCHANGED_FULL(before, w);
    CHECK_SAME_BYTES(b, w);
    /* stride 2^31 over 3 entities: entity 2 at 0 + 2 * 2^31 = 2^32. */
    tes_value_t val2[] = {{0, 0, 0, 0x80000000u}};
    tes_items_t items2 = {it, 1, val2, 1, numbers, 2};
    tes_entity_t out3[3] = {0, 0, 0};
    CHECK_ERR(tes_spawn_items(w, &items2, 3, out3, &fault), TES_ERR_INVALID_ARGUMENT);
    FX_CHECK_UNCHANGED_FULL(before, w);
    CHECK_SAME_BYTES(b, w);
}

/* The same for the element count: a value's numbers are number .. number + length - 1. */
TEST(items_number_index_that_wraps_with_the_field_length_is_out_of_range) {
    tes_world_t *w = fx_world(NULL);
    tes_component_t a = fx_component(w, "A", arr_fields, 1);
    tes_entity_t e = fx_spawn(w, FX_IDS(a));
    tes_item_t it[] = {{a, 0}};
    double numbers[] = {1, 2, 3};
    tes_value_t val[] = {{0, 0, 0xFFFFFFFEu, 0}}; /* + 3 wraps to 1 */
    tes_items_t items = {it, 1, val, 1, numbers, 3};
    fx_snapshot_t *before = fx_snapshot_full_of(w);
    tes_fault_t fault;
    CHECK_ERR(tes_set_items(w, &e, 1, &items, &fault), TES_ERR_INVALID_ARGUMENT);
    CHECK_ERR(tes_add_items(w, &e, 1, &items, &fault), TES_ERR_INVALID_ARGUMENT);
    tes_entity_t out = 0;
    CHECK_ERR(tes_spawn_items(w, &items, 1, &out, &fault), TES_ERR_INVALID_ARGUMENT);
    /* strided: entity 1 at 0xFFFFFFFD + 3 wraps to 0, its elements 0..2 would be in range */
    tes_value_t val2[] = {{0, 0, 0, 0xFFFFFFFDu}};
    tes_items_t items2 = {it, 1, val2, 1, numbers, 3};
    tes_entity_t out2[2];
    CHECK_ERR(tes_spawn_items(w, &items2, 2, out2, &fault), TES_ERR_INVALID_ARGUMENT);
    FX_CHECK_UNCHANGED_FULL(before, w);
    CHECK_OK(tes_world_validate(w));
}

/* "A world holds at most TES_MAX_ENTITIES - min_free_indices live (and pending) entities";
 * "a failed call changes nothing". */
TEST(items_spawn_of_uint32_max_entities_is_refused) {
    tes_world_t *w = fx_world(NULL);
    tes_component_t a = fx_component(w, "A", v_fields, 1);
    tes_item_t it[] = {{a, 0}};
    double numbers[] = {1};
    tes_value_t val[] = {{0, 0, 0, 1}};
    tes_items_t items = {it, 1, val, 1, numbers, 1};
    fx_snapshot_t *before = fx_snapshot_full_of(w);
    tes_result_t r = tes_spawn_items(w, &items, UINT32_MAX, NULL, NULL);
    CHECK(r != TES_OK);
    tes_items_t plain = {it, 1, NULL, 0, NULL, 0};
    r = tes_spawn_items(w, &plain, UINT32_MAX, NULL, NULL);
    CHECK_ERR(r, TES_ERR_TOO_MANY_ENTITIES);
    CHECK_ERR(tes_spawn_batch(w, &a, 1, UINT32_MAX, NULL), TES_ERR_TOO_MANY_ENTITIES);
    tes_archetype_t arch = 0;
    CHECK_OK(tes_archetype_find(w, &a, 1, &arch));
    CHECK_ERR(tes_archetype_spawn(w, arch, UINT32_MAX, NULL), TES_ERR_TOO_MANY_ENTITIES);
    FX_CHECK_UNCHANGED_FULL(before, w);
    CHECK_OK(tes_world_validate(w));
}

/* "a value ... its item index out of range TES_ERR_INVALID_ARGUMENT" */
TEST(items_value_item_index_uint32_max_is_refused) {
    tes_world_t *w = fx_world(NULL);
    tes_component_t a = fx_component(w, "A", v_fields, 1);
    tes_entity_t e = fx_spawn(w, FX_IDS(a));
    tes_item_t it[] = {{a, 0}};
    double numbers[] = {1};
    tes_value_t val[] = {{UINT32_MAX, 0, 0, 0}};
    tes_items_t items = {it, 1, val, 1, numbers, 1};
    fx_snapshot_t *before = fx_snapshot_full_of(w);
    tes_fault_t fault;
    CHECK_ERR(tes_set_items(w, &e, 1, &items, &fault), TES_ERR_INVALID_ARGUMENT);
    CHECK_EQ(fault.value, 0);
    tes_value_t val2[] = {{0, UINT32_MAX, 0, 0}};
    tes_items_t items2 = {it, 1, val2, 1, numbers, 1};
    CHECK_ERR(tes_set_items(w, &e, 1, &items2, &fault), TES_ERR_UNKNOWN_FIELD);
    FX_CHECK_UNCHANGED_FULL(before, w);
}

/* "listed twice TES_ERR_DUPLICATE_ENTITY" for every item call, and nothing changes. */
TEST(items_calls_refuse_a_duplicate_entity_far_apart) {
    tes_world_t *w = fx_world(NULL);
    tes_component_t a = fx_component(w, "A", v_fields, 1);
    tes_component_t b = fx_component(w, "B", v_fields, 1);
    tes_entity_t list[600];
    CHECK_OK(tes_spawn_batch(w, &a, 1, 599, list));
    list[599] = list[3];
    tes_item_t it[] = {{b, 0}};
    double numbers[] = {7};
    tes_value_t val[] = {{0, 0, 0, 0}};
    tes_items_t items = {it, 1, val, 1, numbers, 1};
    fx_snapshot_t *before = fx_snapshot_full_of(w);
    tes_fault_t fault;
    CHECK_ERR(tes_add_items(w, list, 600, &items, &fault), TES_ERR_DUPLICATE_ENTITY);
    CHECK_EQ(fault.entity, list[3]);
    FX_CHECK_UNCHANGED_FULL(before, w);
    tes_items_t rm = {it, 1, NULL, 0, NULL, 0};
    CHECK_ERR(tes_remove_items(w, list, 600, &rm, &fault), TES_ERR_DUPLICATE_ENTITY);
    tes_item_t ita[] = {{a, 0}};
    tes_items_t seta = {ita, 1, val, 1, numbers, 1};
    CHECK_ERR(tes_set_items(w, list, 600, &seta, &fault), TES_ERR_DUPLICATE_ENTITY);
    FX_CHECK_UNCHANGED_FULL(before, w);
    CHECK_OK(tes_world_validate(w));
}

/* ---------------------------------------------------------------------------------------- */
/* Batches                                                                                   */
/* ---------------------------------------------------------------------------------------- */

/* "CASCADE: despawning a target despawns its sources" and tes_despawn_batch "Despawns every
 * entity of the list": a list naming a parent and then its child (both alive when called). */
TEST(despawn_batch_of_a_parent_and_its_cascaded_child) {
    tes_world_t *w = fx_world(NULL);
    tes_component_t a = fx_component(w, "A", v_fields, 1);
    tes_component_t child =
        fx_relation(w, "ChildOf", NULL, 0,
                    TES_RELATION_EXCLUSIVE | TES_RELATION_ACYCLIC | TES_RELATION_CASCADE);
    tes_entity_t p = fx_spawn(w, FX_IDS(a));
    tes_entity_t c = fx_spawn(w, FX_IDS(a));
    tes_entity_t g = fx_spawn(w, FX_IDS(a));
    tes_entity_t keep = fx_spawn(w, FX_IDS(a));
    CHECK_OK(tes_pair_add(w, c, child, p));
    CHECK_OK(tes_pair_add(w, g, child, c));
    tes_entity_t list[] = {p, g, c};
    CHECK_OK(tes_despawn_batch(w, list, 3));
    CHECK(!tes_is_alive(w, p));
    CHECK(!tes_is_alive(w, c));
    CHECK(!tes_is_alive(w, g));
    CHECK(tes_is_alive(w, keep));
    CHECK_EQ(fx_stats(w).entity_count, 1);
    hroundtrip(w);
}

/* The same through a sparse-storage cycle of a non-acyclic cascade relation. */
TEST(despawn_batch_of_a_cascade_cycle_listing_every_member) {
    tes_world_t *w = fx_world(NULL);
    tes_component_t s = fx_sparse(w, "S", v_fields, 1);
    tes_component_t r = fx_relation(w, "R", v_fields, 1, TES_RELATION_CASCADE);
    tes_entity_t e[4];
    for (int i = 0; i < 4; i++)
        e[i] = fx_spawn(w, FX_IDS(s));
    for (int i = 0; i < 4; i++)
        CHECK_OK(tes_pair_add(w, e[i], r, e[(i + 1) % 4]));
    CHECK_OK(tes_pair_add(w, e[2], r, e[2]));
    tes_entity_t other = fx_spawn(w, FX_IDS(s));
    CHECK_OK(tes_pair_add(w, other, r, other));
    tes_entity_t list[] = {e[3], e[0], e[1], e[2]};
    CHECK_OK(tes_despawn_batch(w, list, 4));
    for (int i = 0; i < 4; i++)
        CHECK(!tes_is_alive(w, e[i]));
    CHECK(tes_is_alive(w, other));
    CHECK_EQ(fx_stats(w).entity_count, 1);
    hroundtrip(w);
}

/* "Fails, despawning none, if any is stale or listed twice." Handle 0 is never live. */
TEST(despawn_batch_with_handle_zero_or_out_of_table_index_despawns_none) {
    tes_world_t *w = fx_world(NULL);
    tes_component_t a = fx_component(w, "A", v_fields, 1);
    tes_entity_t e[3];
    CHECK_OK(tes_spawn_batch(w, &a, 1, 3, e));
    fx_snapshot_t *before = fx_snapshot_full_of(w);
    tes_entity_t l1[] = {e[0], 0, e[1]};
    CHECK_ERR(tes_despawn_batch(w, l1, 3), TES_ERR_STALE_ENTITY);
    tes_entity_t l2[] = {e[0], TES_MAX_ENTITIES, e[1]};
    CHECK_ERR(tes_despawn_batch(w, l2, 3), TES_ERR_STALE_ENTITY);
    tes_entity_t l3[] = {e[0], 0xFFFFFFFFu, e[1]};
    CHECK_ERR(tes_despawn_batch(w, l3, 3), TES_ERR_STALE_ENTITY);
    tes_entity_t l4[] = {e[0], e[1] | (5u << TES_INDEX_BITS), e[1]};
    CHECK_ERR(tes_despawn_batch(w, l4, 3), TES_ERR_STALE_ENTITY);
    FX_CHECK_UNCHANGED_FULL(before, w);
    CHECK(!tes_is_alive(w, 0xFFFFFFFFu));
    CHECK(!tes_is_alive(w, e[0] | (1u << 30)));
    CHECK_ERR(tes_despawn(w, e[0] | (1u << 30)), TES_ERR_STALE_ENTITY);
    FX_CHECK_UNCHANGED_FULL(before, w);
}

/* ---------------------------------------------------------------------------------------- */
/* Archetype bulk operations                                                                 */
/* ---------------------------------------------------------------------------------------- */

/* "Adds `component` to every entity of `archetype` (they all move to archetype + component).
 * When only tags differ ... whole chunks change owner" — onto a destination whose last chunk is
 * partly full; "every chunk but the last is full". */
TEST(archetype_add_tag_onto_partial_destination_keeps_chunks_packed_and_values) {
    tes_world_desc_t desc = {.chunk_bytes = 1024};
    tes_world_t *w = fx_world(&desc);
    tes_component_t a = fx_component(w, "A", v_fields, 1);
    tes_component_t tag = fx_tag(w, "Tag");
    tes_component_t tag2 = fx_tag(w, "Tag2");
    tes_entity_t x[300], y[7];
    CHECK_OK(tes_spawn_batch(w, FX_IDS(a, tag2), 300, x));
    CHECK_OK(tes_spawn_batch(w, FX_IDS(a, tag, tag2), 7, y));
    for (int i = 0; i < 300; i++)
        CHECK_OK(tes_set_number(w, x[i], a, 0, 0, i));
    for (int i = 0; i < 7; i++)
        CHECK_OK(tes_set_number(w, y[i], a, 0, 0, 1000 + i));
    tes_archetype_t ax = fx_archetype_of(w, x[0]);
    CHECK_OK(tes_archetype_add(w, ax, tag));
    CHECK_OK(tes_world_validate(w));
    fx_check_all_packed(w);
    for (int i = 0; i < 300; i++) {
        CHECK(fx_has(w, x[i], tag));
        CHECK_NUM_EQ(fx_get_number(w, x[i], a, 0, 0), i);
    }
    for (int i = 0; i < 7; i++)
        CHECK_NUM_EQ(fx_get_number(w, y[i], a, 0, 0), 1000 + i);
    /* and back, onto a destination that is empty now? no: onto {A, Tag2} which is empty */
    tes_archetype_t ay = fx_archetype_of(w, y[0]);
    tes_entity_t z[5];
    CHECK_OK(tes_spawn_batch(w, FX_IDS(a, tag2), 5, z));
    CHECK_OK(tes_archetype_remove(w, ay, tag));
    CHECK_OK(tes_world_validate(w));
    fx_check_all_packed(w);
    for (int i = 0; i < 300; i++)
        CHECK_NUM_EQ(fx_get_number(w, x[i], a, 0, 0), i);
    CHECK_EQ(fx_archetype(w, fx_archetype_of(w, z[0])).entity_count, 312);
    hroundtrip(w);
}

/* tes_archetype_add / remove of a sparse component or relation: TES_ERR_SPARSE_COMPONENT, and
 * "A failed call leaves every entity ... exactly as it was". */
TEST(archetype_add_remove_refuse_sparse_and_relation_and_change_nothing) {
    tes_world_t *w = fx_world(NULL);
    tes_component_t a = fx_component(w, "A", v_fields, 1);
    tes_component_t s = fx_sparse(w, "S", v_fields, 1);
    tes_component_t r = fx_relation(w, "R", NULL, 0, 0);
    tes_entity_t e = fx_spawn(w, FX_IDS(a, s));
    tes_archetype_t ae = fx_archetype_of(w, e);
    fx_snapshot_t *before = fx_snapshot_full_of(w);
    CHECK_ERR(tes_archetype_add(w, ae, s), TES_ERR_SPARSE_COMPONENT);
    CHECK_ERR(tes_archetype_remove(w, ae, s), TES_ERR_SPARSE_COMPONENT);
    CHECK_ERR(tes_archetype_add(w, ae, r), TES_ERR_SPARSE_COMPONENT);
    CHECK_ERR(tes_archetype_add(w, 9999, a), TES_ERR_UNKNOWN_ARCHETYPE);
    CHECK_ERR(tes_archetype_add(w, UINT32_MAX, a), TES_ERR_UNKNOWN_ARCHETYPE);
    CHECK_ERR(tes_archetype_add(w, ae, UINT32_MAX), TES_ERR_UNKNOWN_COMPONENT);
    FX_CHECK_UNCHANGED_FULL(before, w);
}

/* ---------------------------------------------------------------------------------------- */
/* Relations                                                                                 */
/* ---------------------------------------------------------------------------------------- */

/* "ACYCLIC (with EXCLUSIVE): a pair that would make a source its own ancestor is
 * TES_ERR_CYCLE." through a chain of 5000, and "nothing changes". */
TEST(acyclic_refuses_a_cycle_through_a_long_chain) {
    tes_world_t *w = fx_world(NULL);
    tes_component_t c =
        fx_relation(w, "ChildOf", v_fields, 1, TES_RELATION_EXCLUSIVE | TES_RELATION_ACYCLIC);
    enum { N = 5000 };
    tes_entity_t *e = fx_malloc(N * sizeof *e);
    CHECK_OK(tes_spawn_batch(w, NULL, 0, N, e));
    for (int i = 1; i < N; i++)
        CHECK_OK(tes_pair_add(w, e[i], c, e[i - 1]));
    CHECK_OK(tes_pair_set_number(w, e[1], c, e[0], 0, 0, 42));
    fx_snapshot_t *before = fx_snapshot_full_of(w);
    CHECK_ERR(tes_pair_add(w, e[0], c, e[N - 1]), TES_ERR_CYCLE);
    /* re-parenting a middle node under its own descendant: replacement must not go first */
    CHECK_ERR(tes_pair_add(w, e[1], c, e[N - 1]), TES_ERR_CYCLE);
    CHECK_ERR(tes_pair_add(w, e[N / 2], c, e[N / 2]), TES_ERR_CYCLE);
    FX_CHECK_UNCHANGED_FULL(before, w);
    CHECK_NUM_EQ(0, 0);
    double v = 0;
    CHECK_OK(tes_pair_get_number(w, e[1], c, e[0], 0, 0, &v));
    CHECK_NUM_EQ(v, 42);
    /* a legal re-parent: the middle of the chain under the root */
    CHECK_OK(tes_pair_add(w, e[N / 2], c, e[0]));
    CHECK_OK(tes_world_validate(w));
    hroundtrip(w);
}

/* "CASCADE: despawning a target despawns its sources (recursively; cycles are safe)": a deep
 * chain must not exhaust the stack. */
TEST(cascade_despawns_a_very_deep_chain) {
    tes_world_t *w = fx_world(NULL);
    tes_component_t c =
        fx_relation(w, "ChildOf", NULL, 0,
                    TES_RELATION_EXCLUSIVE | TES_RELATION_ACYCLIC | TES_RELATION_CASCADE);
    enum { N = 300000 };
    tes_entity_t *e = fx_malloc(N * sizeof *e);
    CHECK_OK(tes_spawn_batch(w, NULL, 0, N, e));
    for (int i = 1; i < N; i++)
        CHECK_OK(tes_pair_add(w, e[i], c, e[i - 1]));
    tes_entity_t *walk = fx_malloc(N * sizeof *walk);
    uint32_t count = 0;
    CHECK_OK(tes_relation_walk(w, c, e[0], walk, NULL, N, &count));
    CHECK_EQ(count, N - 1);
    CHECK_OK(tes_despawn(w, e[0]));
    CHECK_EQ(fx_stats(w).entity_count, 0);
    CHECK_OK(tes_world_validate(w));
}

/* A non-exclusive cascade relation: a DAG where an entity is a source of several targets. */
TEST(cascade_through_a_diamond_despawns_each_once) {
    tes_world_t *w = fx_world(NULL);
    tes_component_t r = fx_relation(w, "DependsOn", v_fields, 1, TES_RELATION_CASCADE);
    tes_component_t s = fx_sparse(w, "S", v_fields, 1);
    tes_entity_t e[64];
    CHECK_OK(tes_spawn_batch(w, &s, 1, 64, e));
    for (int i = 1; i < 64; i++) {
        CHECK_OK(tes_pair_add(w, e[i], r, e[i - 1]));
        if (i >= 2) CHECK_OK(tes_pair_add(w, e[i], r, e[i - 2]));
        if (i >= 3) CHECK_OK(tes_pair_add(w, e[i - 3], r, e[i])); /* cycles too */
    }
    CHECK_OK(tes_despawn(w, e[10]));
    CHECK_EQ(fx_stats(w).entity_count, 0);
    CHECK_OK(tes_world_validate(w));
    hroundtrip(w);
}

/* tes_pair_place: "TES_ERR_MISSING_COMPONENT when either pair does not exist", nothing changes. */
TEST(pair_place_before_a_non_source_or_the_source_itself) {
    tes_world_t *w = fx_world(NULL);
    tes_component_t r = fx_relation(w, "R", NULL, 0, 0);
    tes_entity_t t = fx_spawn(w, NULL, 0);
    tes_entity_t a = fx_spawn(w, NULL, 0), b = fx_spawn(w, NULL, 0), c = fx_spawn(w, NULL, 0);
    tes_entity_t stranger = fx_spawn(w, NULL, 0);
    CHECK_OK(tes_pair_add(w, a, r, t));
    CHECK_OK(tes_pair_add(w, b, r, t));
    CHECK_OK(tes_pair_add(w, c, r, t));
    CHECK_OK(tes_pair_add(w, stranger, r, a)); /* a pair of stranger, but to another target */
    fx_snapshot_t *before = fx_snapshot_full_of(w);
    CHECK_ERR(tes_pair_place(w, a, r, t, stranger), TES_ERR_MISSING_COMPONENT);
    CHECK_ERR(tes_pair_place(w, stranger, r, t, a), TES_ERR_MISSING_COMPONENT);
    FX_CHECK_UNCHANGED_FULL(before, w);
    /* before == source: the pair goes "just before" itself: nothing may break */
    tes_result_t res = tes_pair_place(w, b, r, t, b);
    CHECK(res == TES_OK || res == TES_ERR_INVALID_ARGUMENT);
    CHECK_OK(tes_world_validate(w));
    fx_entities_t *src = fx_sources(w, r, t);
    CHECK_EQ(src->count, 3);
    FX_CHECK_ORDER(src, a, b, c);
    CHECK_OK(tes_pair_place(w, a, r, t, 0));
    FX_CHECK_ORDER(fx_sources(w, r, t), b, c, a);
    CHECK_OK(tes_pair_place(w, a, r, t, b));
    FX_CHECK_ORDER(fx_sources(w, r, t), a, b, c);
    hroundtrip(w);
}

/* Exclusive replacement through tes_add_items: "Adding a pair of an EXCLUSIVE relation replaces
 * the entity's other pair of it"; with data: the new pair's value is the listed one. */
TEST(add_items_exclusive_replacement_with_data_and_acyclic_check) {
    tes_world_t *w = fx_world(NULL);
    tes_component_t c =
        fx_relation(w, "ChildOf", v_fields, 1, TES_RELATION_EXCLUSIVE | TES_RELATION_ACYCLIC);
    tes_entity_t p1 = fx_spawn(w, NULL, 0), p2 = fx_spawn(w, NULL, 0), k = fx_spawn(w, NULL, 0);
    CHECK_OK(tes_pair_add(w, k, c, p1));
    CHECK_OK(tes_pair_set_number(w, k, c, p1, 0, 0, 5));
    CHECK_OK(tes_pair_add(w, p2, c, k)); /* p2 is k's child */
    tes_item_t it[] = {{c, p2}};
    double numbers[] = {9};
    tes_value_t val[] = {{0, 0, 0, 0}};
    tes_items_t items = {it, 1, val, 1, numbers, 1};
    fx_snapshot_t *before = fx_snapshot_full_of(w);
    tes_fault_t fault;
    CHECK_ERR(tes_add_items(w, &k, 1, &items, &fault), TES_ERR_CYCLE);
    FX_CHECK_UNCHANGED_FULL(before, w);
    CHECK_OK(tes_pair_remove(w, p2, c, k));
    CHECK_OK(tes_add_items(w, &k, 1, &items, &fault));
    CHECK(!fx_pair_has(w, k, c, p1));
    CHECK(fx_pair_has(w, k, c, p2));
    double v = 0;
    CHECK_OK(tes_pair_get_number(w, k, c, p2, 0, 0, &v));
    CHECK_NUM_EQ(v, 9);
    hroundtrip(w);
}

/* ---------------------------------------------------------------------------------------- */
/* Stale handles and the entity table                                                        */
/* ---------------------------------------------------------------------------------------- */

/* "a stale handle can alias a newer entity only after its slot went through 2^9 = 512
 * recycles"; "Every handle is below 2^30"; "Handle 0 is never a live entity". */
TEST(generations_wrap_after_512_recycles_and_never_give_handle_zero) {
    tes_world_desc_t desc = {.min_free_indices = 1};
    tes_world_t *w = fx_world(&desc);
    tes_component_t s = fx_sparse(w, "S", v_fields, 1);
    tes_entity_t first = fx_spawn(w, NULL, 0);
    tes_entity_t second = fx_spawn(w, NULL, 0);
    tes_entity_t third = fx_spawn(w, NULL, 0);
    (void)third;
    CHECK_OK(tes_despawn(w, first));
    CHECK_OK(tes_despawn(w, second));
    /* queue [first, second]: spawns cycle through them */
    uint32_t seen = 0;
    for (uint32_t i = 0; i < 3000; i++) {
        tes_entity_t e = 0;
        CHECK_OK(tes_spawn(w, NULL, 0, &e));
        CHECK(e != 0);
        CHECK(e < (1u << 30));
        if (tes_entity_index(e) == tes_entity_index(first)) {
            seen++;
            if (seen < 512) CHECK(e != first);
            if (e == first) break;
        }
        if (e != first) CHECK(!tes_is_alive(w, first));
        CHECK_OK(tes_add(w, e, s));
        CHECK_OK(tes_set_number(w, e, s, 0, 0, i));
        CHECK_OK(tes_despawn(w, e));
    }
    CHECK_EQ(seen, 512);
    CHECK_OK(tes_world_validate(w));
    hroundtrip(w);
}

/* "at most 2^20 - 1 (TES_ERR_INVALID_ARGUMENT)" */
TEST(min_free_indices_bounds) {
    tes_world_t *w = NULL;
    tes_world_desc_t desc = {.min_free_indices = 1u << 20};
    CHECK_ERR(tes_world_create(&desc, &w), TES_ERR_INVALID_ARGUMENT);
    desc.min_free_indices = UINT32_MAX;
    CHECK_ERR(tes_world_create(&desc, &w), TES_ERR_INVALID_ARGUMENT);
    desc.min_free_indices = (1u << 20) - 1;
    w = fx_world(&desc);
    /* "the world holds at most TES_MAX_ENTITIES - min_free_indices entities" */
    uint32_t limit = TES_MAX_ENTITIES - desc.min_free_indices;
    CHECK_ERR(tes_spawn_batch(w, NULL, 0, limit + 1, NULL), TES_ERR_TOO_MANY_ENTITIES);
    CHECK_EQ(fx_stats(w).entity_count, 0);
    tes_entity_t *e = fx_malloc((size_t)limit * sizeof *e);
    CHECK_OK(tes_spawn_batch(w, NULL, 0, limit, e));
    tes_entity_t x = 0;
    CHECK_ERR(tes_spawn(w, NULL, 0, &x), TES_ERR_TOO_MANY_ENTITIES);
    CHECK_OK(tes_despawn(w, e[5]));
    CHECK_OK(tes_spawn(w, NULL, 0, &x));
    CHECK(x != e[5]);
    CHECK(x != 0 && x < (1u << 30));
    CHECK_ERR(tes_spawn(w, NULL, 0, &x), TES_ERR_TOO_MANY_ENTITIES);
    CHECK_OK(tes_world_validate(w));
}

/* "every call that takes it fails with TES_ERR_STALE_ENTITY and touches nothing": a stale
 * handle whose slot holds a new entity with sparse data and pairs. */
TEST(stale_handle_on_a_recycled_slot_touches_nothing) {
    tes_world_desc_t desc = {.min_free_indices = 1};
    tes_world_t *w = fx_world(&desc);
    tes_component_t a = fx_component(w, "A", v_fields, 1);
    tes_component_t s = fx_sparse(w, "S", v_fields, 1);
    tes_component_t r = fx_relation(w, "R", v_fields, 1, 0);
    tes_entity_t old = fx_spawn(w, FX_IDS(a, s));
    tes_entity_t pad = fx_spawn(w, NULL, 0);
    tes_entity_t t = fx_spawn(w, NULL, 0);
    CHECK_OK(tes_despawn(w, old));
    CHECK_OK(tes_despawn(w, pad));
    tes_entity_t fresh = fx_spawn(w, FX_IDS(a, s));
    CHECK_EQ(tes_entity_index(fresh), tes_entity_index(old));
    CHECK_OK(tes_set_number(w, fresh, a, 0, 0, 11));
    CHECK_OK(tes_set_number(w, fresh, s, 0, 0, 12));
    CHECK_OK(tes_pair_add(w, fresh, r, t));
    CHECK_OK(tes_pair_add(w, t, r, fresh));
    fx_snapshot_t *before = fx_snapshot_full_of(w);
    bool has = false;
    double v = 0;
    CHECK_ERR(tes_set_number(w, old, a, 0, 0, 1), TES_ERR_STALE_ENTITY);
    CHECK_ERR(tes_set_number(w, old, s, 0, 0, 1), TES_ERR_STALE_ENTITY);
    CHECK_ERR(tes_init_number(w, old, s, 0, 0, 1), TES_ERR_STALE_ENTITY);
    CHECK_ERR(tes_get_number(w, old, s, 0, 0, &v), TES_ERR_STALE_ENTITY);
    CHECK_ERR(tes_has(w, old, s, &has), TES_ERR_STALE_ENTITY);
    CHECK_ERR(tes_remove(w, old, s), TES_ERR_STALE_ENTITY);
    CHECK_ERR(tes_remove(w, old, r), TES_ERR_STALE_ENTITY);
    CHECK_ERR(tes_add(w, old, a), TES_ERR_STALE_ENTITY);
    CHECK_ERR(tes_mark_changed(w, old, a), TES_ERR_STALE_ENTITY);
    CHECK_ERR(tes_pair_add(w, old, r, t), TES_ERR_STALE_ENTITY);
    CHECK_ERR(tes_pair_remove(w, old, r, t), TES_ERR_STALE_ENTITY);
    CHECK_ERR(tes_pair_remove(w, t, r, old), TES_ERR_STALE_ENTITY);
    CHECK_ERR(tes_pair_set_number(w, old, r, t, 0, 0, 3), TES_ERR_STALE_ENTITY);
    CHECK_ERR(tes_pair_set_number(w, t, r, old, 0, 0, 3), TES_ERR_STALE_ENTITY);
    CHECK_ERR(tes_pair_place(w, t, r, old, 0), TES_ERR_STALE_ENTITY);
    CHECK_ERR(tes_despawn(w, old), TES_ERR_STALE_ENTITY);
    tes_item_t it[] = {{r, 0}};
    tes_items_t rm = {it, 1, NULL, 0, NULL, 0};
    CHECK_ERR(tes_remove_items(w, &old, 1, &rm, NULL), TES_ERR_STALE_ENTITY);
    tes_item_t it2[] = {{r, old}};
    tes_items_t rm2 = {it2, 1, NULL, 0, NULL, 0};
    CHECK_ERR(tes_remove_items(w, &t, 1, &rm2, NULL), TES_ERR_STALE_ENTITY);
    uint32_t n = 0;
    CHECK_ERR(tes_pair_targets(w, old, r, NULL, 0, &n), TES_ERR_STALE_ENTITY);
    CHECK_ERR(tes_pair_sources(w, r, old, NULL, 0, &n), TES_ERR_STALE_ENTITY);
    CHECK_ERR(tes_relation_walk(w, r, old, NULL, NULL, 0, &n), TES_ERR_STALE_ENTITY);
    FX_CHECK_UNCHANGED_FULL(before, w);
}

/* ---------------------------------------------------------------------------------------- */
/* Kernels                                                                                   */
/* ---------------------------------------------------------------------------------------- */

static tes_query_t *hquery(tes_world_t *w, tes_component_t c) {
    tes_query_t *q = NULL;
    tes_query_desc_t d = {.all = &c, .all_count = 1};
    CHECK_OK(tes_query_create(w, &d, &q));
    return q;
}

/* "Integer fields (i8 u8 i16 u16 i32 u32) saturate: each result is computed exactly (in a
 * wider type) and held to the field's range" — u32 * u32 exceeds int64. */
TEST(kernel_u32_scale_and_add_scaled_by_uint32_max_saturate) {
    tes_world_t *w = fx_world(NULL);
    tes_component_t u = fx_component(w, "U", u32_fields, 1);
    tes_component_t src = fx_component(w, "Src", u32_fields, 1);
    tes_entity_t e = fx_spawn(w, FX_IDS(u, src));
    tes_entity_t f = fx_spawn(w, FX_IDS(u, src));
    CHECK_OK(tes_set_number(w, e, u, 0, 0, 4294967295.0));
    CHECK_OK(tes_set_number(w, f, u, 0, 0, 3));
    CHECK_OK(tes_set_number(w, e, src, 0, 0, 4294967295.0));
    CHECK_OK(tes_set_number(w, f, src, 0, 0, 4294967295.0));
    tes_query_t *q = NULL;
    tes_query_desc_t qd = {.all = FX_IDS(u, src)};
    CHECK_OK(tes_query_create(w, &qd, &q));
    tes_op_t op = {.kind = TES_OP_SCALE, .k = 4294967295.0, .component = u, .field = 0};
    CHECK_OK(tes_query_apply(w, q, &op, NULL, NULL));
    CHECK_NUM_EQ(fx_get_number(w, e, u, 0, 0), 4294967295.0);
    CHECK_NUM_EQ(fx_get_number(w, f, u, 0, 0), 4294967295.0);
    CHECK_OK(tes_set_number(w, f, u, 0, 0, 3));
    tes_op_t op2 = {.kind = TES_OP_ADD_SCALED,
                    .k = 4294967295.0,
                    .component = u,
                    .field = 0,
                    .src_component = src,
                    .src_field = 0};
    CHECK_OK(tes_query_apply(w, q, &op2, NULL, NULL));
    CHECK_NUM_EQ(fx_get_number(w, e, u, 0, 0), 4294967295.0);
    CHECK_NUM_EQ(fx_get_number(w, f, u, 0, 0), 4294967295.0);
    tes_query_destroy(w, q);
}

TEST(kernel_i32_and_i8_extremes_saturate) {
    tes_world_t *w = fx_world(NULL);
    tes_component_t i = fx_component(w, "I", i32_fields, 1);
    tes_component_t b = fx_component(w, "B", i8_fields, 1);
    tes_entity_t e = fx_spawn(w, FX_IDS(i, b));
    CHECK_OK(tes_set_number(w, e, i, 0, 0, -2147483648.0));
    CHECK_OK(tes_set_number(w, e, b, 0, 0, -128));
    tes_query_t *q = hquery(w, i);
    tes_op_t op = {.kind = TES_OP_SCALE, .k = -2147483648.0, .component = i, .field = 0};
    CHECK_OK(tes_query_apply(w, q, &op, NULL, NULL));
    CHECK_NUM_EQ(fx_get_number(w, e, i, 0, 0), 2147483647.0);
    op.k = -1;
    CHECK_OK(tes_query_apply(w, q, &op, NULL, NULL));
    CHECK_NUM_EQ(fx_get_number(w, e, i, 0, 0), -2147483647.0);
    tes_op_t sub = {.kind = TES_OP_SUB_COLLECT, .k = 2147483647.0, .component = i, .field = 0};
    const tes_entity_t *out = NULL;
    uint32_t n = 99;
    CHECK_OK(tes_query_apply(w, q, &sub, &out, &n));
    CHECK_EQ(n, 0); /* already <= 0 */
    CHECK_NUM_EQ(fx_get_number(w, e, i, 0, 0), -2147483648.0);
    tes_query_t *qb = hquery(w, b);
    tes_op_t sb = {.kind = TES_OP_SCALE, .k = -1, .component = b, .field = 0};
    CHECK_OK(tes_query_apply(w, qb, &sb, NULL, NULL));
    CHECK_NUM_EQ(fx_get_number(w, e, b, 0, 0), 127);
    tes_op_t sb2 = {.kind = TES_OP_SUB_COLLECT, .k = -128, .component = b, .field = 0};
    CHECK_OK(tes_query_apply(w, qb, &sb2, &out, &n));
    CHECK_EQ(n, 0);
    CHECK_NUM_EQ(fx_get_number(w, e, b, 0, 0), 127);
    tes_op_t sb3 = {.kind = TES_OP_SUB_COLLECT, .k = 127, .component = b, .field = 0};
    CHECK_OK(tes_query_apply(w, qb, &sb3, &out, &n));
    CHECK_EQ(n, 1);
    CHECK_EQ(out[0], e);
    tes_query_destroy(w, q);
    tes_query_destroy(w, qb);
}

/* Kernel on a sparse component: "(tes_archetype_find / add / remove, tes_chunk_column,
 * tes_iter_column, kernels): TES_ERR_SPARSE_COMPONENT". */
TEST(kernel_on_a_sparse_component_is_refused) {
    tes_world_t *w = fx_world(NULL);
    tes_component_t s = fx_sparse(w, "S", v_fields, 1);
    tes_entity_t e = fx_spawn(w, FX_IDS(s));
    CHECK_OK(tes_set_number(w, e, s, 0, 0, 3));
    tes_query_t *q = hquery(w, s);
    fx_snapshot_t *before = fx_snapshot_full_of(w);
    tes_op_t op = {.kind = TES_OP_ADD, .k = 1, .component = s, .field = 0};
    CHECK_ERR(tes_query_apply(w, q, &op, NULL, NULL), TES_ERR_SPARSE_COMPONENT);
    FX_CHECK_UNCHANGED_FULL(before, w);
    tes_query_destroy(w, q);
}

/* ---------------------------------------------------------------------------------------- */
/* Queries                                                                                   */
/* ---------------------------------------------------------------------------------------- */

static uint32_t hcount(tes_world_t *w, tes_query_t *q) {
    tes_iter_t it;
    uint32_t n = 0;
    CHECK_OK(tes_query_iter(w, q, &it));
    while (tes_iter_next(&it))
        n += it.row_count;
    return n;
}

/* The rows a query of `d` visits in one run (the query made for it and destroyed). */
static uint32_t hmatches(tes_world_t *w, const tes_query_desc_t *d) {
    tes_query_t *q = NULL;
    CHECK_OK(tes_query_create(w, d, &q));
    uint32_t n = hcount(w, q);
    tes_query_destroy(w, q);
    return n;
}

/* "A matching entity has every `all` component, none of `none`": contradictory terms match
 * nothing, sparse or not. */
TEST(contradictory_query_terms_match_nothing) {
    tes_world_t *w = fx_world(NULL);
    tes_component_t a = fx_component(w, "A", v_fields, 1);
    tes_component_t s = fx_sparse(w, "S", v_fields, 1);
    tes_component_t r = fx_relation(w, "R", NULL, 0, 0);
    tes_entity_t e = fx_spawn(w, FX_IDS(a, s));
    CHECK_OK(tes_pair_add(w, e, r, e));
    CHECK_EQ(
        hmatches(w, &(tes_query_desc_t){.all = &a, .all_count = 1, .none = &a, .none_count = 1}),
        0);
    CHECK_EQ(
        hmatches(w, &(tes_query_desc_t){.all = &s, .all_count = 1, .none = &s, .none_count = 1}),
        0);
    tes_pair_term_t pt[] = {{r, e, TES_TERM_ALL}, {r, 0, TES_TERM_NONE}};
    CHECK_EQ(hmatches(w, &(tes_query_desc_t){.pairs = pt, .pair_count = 2}), 0);
    tes_pair_term_t pt2[] = {{r, e, TES_TERM_ALL}, {r, e, TES_TERM_NONE}};
    CHECK_EQ(hmatches(w, &(tes_query_desc_t){.pairs = pt2, .pair_count = 2}), 0);
    CHECK_EQ(
        hmatches(w,
                 &(tes_query_desc_t){.added = &a, .added_count = 1, .none = &a, .none_count = 1}),
        0);
    CHECK_EQ(
        hmatches(w, &(tes_query_desc_t){.any = &s, .any_count = 1, .none = &s, .none_count = 1}),
        0);
}

/* ---------------------------------------------------------------------------------------- */
/* Deferred commands                                                                         */
/* ---------------------------------------------------------------------------------------- */

/* Recorded pair adds with a pending endpoint "are recorded and applied at the flush"; "A recorded
 * pair of an ACYCLIC relation that would close a cycle when it applies (its ends' other pairs may
 * be recorded too) is skipped then and counted in commands_skipped". */
TEST(recorded_pairs_that_close_a_cycle_at_the_flush) {
    tes_world_t *w = fx_world(NULL);
    tes_component_t a = fx_component(w, "A", v_fields, 1);
    tes_component_t c =
        fx_relation(w, "ChildOf", NULL, 0, TES_RELATION_EXCLUSIVE | TES_RELATION_ACYCLIC);
    tes_entity_t x = fx_spawn(w, FX_IDS(a));
    tes_query_t *q = hquery(w, a);
    tes_iter_t it;
    CHECK_OK(tes_query_iter(w, q, &it));
    tes_entity_t p = 0;
    CHECK_OK(tes_spawn(w, NULL, 0, &p));
    CHECK_OK(tes_pair_add(w, p, c, x));
    CHECK_OK(tes_pair_add(w, x, c, p)); /* x under p, p under x: known at the flush */
    uint32_t skipped = fx_stats(w).commands_skipped;
    while (tes_iter_next(&it)) {
    }
    CHECK_OK(tes_world_validate(w));
    CHECK(fx_pair_has(w, p, c, x));
    CHECK(!fx_pair_has(w, x, c, p));
    CHECK_EQ(fx_stats(w).commands_skipped, skipped + 1);
    hroundtrip(w);
    tes_query_destroy(w, q);
}

/* The same with a pending entity as its own parent. */
TEST(recorded_self_pair_of_a_pending_entity_in_an_acyclic_relation) {
    tes_world_t *w = fx_world(NULL);
    tes_component_t a = fx_component(w, "A", v_fields, 1);
    tes_component_t c =
        fx_relation(w, "ChildOf", NULL, 0, TES_RELATION_EXCLUSIVE | TES_RELATION_ACYCLIC);
    fx_spawn(w, FX_IDS(a));
    tes_query_t *q = hquery(w, a);
    tes_iter_t it;
    CHECK_OK(tes_query_iter(w, q, &it));
    tes_entity_t p = 0;
    CHECK_OK(tes_spawn(w, NULL, 0, &p));
    tes_result_t r0 = tes_pair_add(w, p, c, p);
    tes_entity_t p2 = 0;
    CHECK_OK(tes_spawn(w, NULL, 0, &p2));
    CHECK_OK(tes_pair_add(w, p2, c, p));
    tes_result_t r3 = tes_pair_add(w, p, c, p2);
    CHECK(r3 == TES_OK || r3 == TES_ERR_CYCLE);
    while (tes_iter_next(&it)) {
    }
    CHECK_OK(tes_world_validate(w));
    CHECK(!fx_pair_has(w, p, c, p));
    CHECK(!(fx_pair_has(w, p, c, p2) && fx_pair_has(w, p2, c, p)));
    hroundtrip(w);
    /* "a pair that would make a source its own ancestor is TES_ERR_CYCLE" */
    CHECK_ERR(r0, TES_ERR_CYCLE);
    tes_query_destroy(w, q);
}

/* "tes_add, tes_remove, tes_despawn, the item calls and the writes ... on such a pending entity
 * are recorded like any other command" and applied in order. */
TEST(a_pending_entity_lives_through_a_sequence_of_recorded_commands) {
    tes_world_t *w = fx_world(NULL);
    tes_component_t a = fx_component(w, "A", v_fields, 1);
    tes_component_t b = fx_component(w, "B", arr_fields, 1);
    tes_component_t s = fx_sparse(w, "S", v_fields, 1);
    tes_component_t r = fx_relation(w, "R", v_fields, 1, 0);
    tes_entity_t x = fx_spawn(w, FX_IDS(a));
    tes_query_t *q = hquery(w, a);
    tes_iter_t it;
    CHECK_OK(tes_query_iter(w, q, &it));
    tes_entity_t p = 0, p2 = 0;
    CHECK_OK(tes_spawn(w, FX_IDS(a), &p));
    CHECK_OK(tes_set_number(w, p, a, 0, 0, 1));
    CHECK_OK(tes_add(w, p, b));
    CHECK_OK(tes_set_number(w, p, b, 0, 2, 7));
    CHECK_OK(tes_add(w, p, s));
    CHECK_OK(tes_set_number(w, p, s, 0, 0, 8));
    CHECK_OK(tes_pair_add(w, p, r, x));
    CHECK_OK(tes_pair_init_number(w, p, r, x, 0, 0, 9));
    CHECK_OK(tes_remove(w, p, a));
    CHECK_ERR(tes_set_number(w, p, a, 0, 0, 2), TES_ERR_MISSING_COMPONENT);
    CHECK_OK(tes_add(w, p, a));
    CHECK_OK(tes_set_number(w, p, a, 0, 0, 3));
    CHECK_OK(tes_spawn(w, FX_IDS(s), &p2));
    CHECK_OK(tes_pair_add(w, p2, r, p));
    CHECK_OK(tes_despawn(w, p2));
    CHECK_OK(tes_remove(w, p, s));
    CHECK_OK(tes_add(w, p, s));
    while (tes_iter_next(&it)) {
    }
    CHECK(tes_is_alive(w, p));
    CHECK(!tes_is_alive(w, p2));
    CHECK_NUM_EQ(fx_get_number(w, p, a, 0, 0), 3);
    CHECK_NUM_EQ(fx_get_number(w, p, b, 0, 2), 7);
    CHECK(fx_has(w, p, s));
    CHECK_NUM_EQ(fx_get_number(w, p, s, 0, 0), 0); /* removed then added: zeroed */
    CHECK(fx_pair_has(w, p, r, x));
    double v = 0;
    CHECK_OK(tes_pair_get_number(w, p, r, x, 0, 0, &v));
    CHECK_NUM_EQ(v, 9);
    uint32_t n = 0;
    CHECK_OK(tes_pair_sources(w, r, p, NULL, 0, &n));
    CHECK_EQ(n, 0);
    CHECK_EQ(fx_stats(w).commands_skipped, 0);
    hroundtrip(w);
    tes_query_destroy(w, q);
}

/* ---------------------------------------------------------------------------------------- */
/* Worlds and schemas                                                                        */
/* ---------------------------------------------------------------------------------------- */

/* "chunk_bytes: Default 65536; rounded up to a multiple of 64, at least 1024": a value whose
 * rounding does not fit 32 bits cannot be honoured (stats.chunk_bytes is 32-bit). */
TEST(chunk_bytes_near_uint32_max_is_not_silently_wrapped) {
    uint32_t values[] = {UINT32_MAX, 0xFFFFFFC1u};
    for (int i = 0; i < 2; i++) {
        tes_world_desc_t desc = {.chunk_bytes = values[i]};
        tes_world_t *w = NULL;
        tes_result_t r = tes_world_create(&desc, &w);
        if (r == TES_OK) {
            harness_defer(fx_destroy_world, w);
            tes_world_stats_t st = fx_stats(w);
            CHECK(st.chunk_bytes >= values[i]);
        }
    }
}

/* "ROW_TOO_LARGE: one entity of this component set needs about 8 MiB or more (8 rows must fit
 * 64 MiB)": a row 8 bytes short of 8 MiB is made, and its blocks (up to 64 MiB) hold its rows
 * without overflow; exactly 8 MiB is refused, and so is an add that would pass it, changing
 * nothing. */
TEST(rows_just_under_8_mib_work_and_8_mib_is_refused) {
    tes_world_t *w = fx_world(NULL);
    tes_field_desc_t fields[64];
    char names[64][8];
    for (int f = 0; f < 64; f++) {
        snprintf(names[f], sizeof names[f], "f%d", f);
        fields[f] = (tes_field_desc_t){names[f], TES_F64, 256}; /* 2 KiB */
    }
    tes_component_t big[64]; /* 128 KiB each */
    for (int i = 0; i < 64; i++) {
        char name[16];
        snprintf(name, sizeof name, "Big%d", i);
        big[i] = fx_component(w, name, fields, 64);
    }
    fields[63].length = 255; /* 8 bytes less */
    tes_component_t short_one = fx_component(w, "Short", fields, 64);
    tes_component_t under[64];
    memcpy(under, big, sizeof big);
    under[63] = short_one;
    tes_entity_t e[9];
    CHECK_OK(tes_spawn_batch(w, under, 64, 9, e));
    for (int i = 0; i < 9; i++)
        CHECK_OK(tes_set_number(w, e[i], short_one, 63, 254, i + 0.5));
    for (int i = 0; i < 9; i++)
        CHECK_NUM_EQ(fx_get_number(w, e[i], short_one, 63, 254), i + 0.5);
    fx_snapshot_t *before = fx_snapshot_full_of(w);
    tes_entity_t x = 0;
    CHECK_ERR(tes_spawn(w, big, 64, &x), TES_ERR_ROW_TOO_LARGE); /* exactly 8 MiB */
    CHECK_ERR(tes_add(w, e[0], big[63]), TES_ERR_ROW_TOO_LARGE); /* 16 MiB */
    FX_CHECK_UNCHANGED_FULL(before, w);
    CHECK_OK(tes_world_validate(w));
}

/* ---------------------------------------------------------------------------------------- */
/* Replicators                                                                               */
/* ---------------------------------------------------------------------------------------- */

/* "A quantum ... whose step is not finite and above 0, or that names a (component, field)
 * another quantum names, is TES_ERR_INVALID_ARGUMENT" */
TEST(replicator_create_refuses_odd_quanta) {
    tes_world_t *w = fx_world(NULL);
    static const tes_field_desc_t pf[] = {{"x", TES_F32, 0}, {"n", TES_I32, 0}, {"d", TES_F64, 4}};
    tes_component_t p = fx_component(w, "P", pf, 3);
    tes_component_t loc = 0;
    tes_component_desc_t ld = {"L", pf, 1, TES_COMPONENT_LOCAL};
    CHECK_OK(tes_component_register(w, &ld, &loc));
    tes_replicator_t *rep = NULL;
    double bad_steps[] = {0, -1, NAN, INFINITY, -INFINITY, -0.0};
    for (int i = 0; i < 6; i++) {
        tes_quantum_t qu[] = {{p, 0, bad_steps[i]}};
        tes_replicator_desc_t d = {.quanta = qu, .quantum_count = 1};
        CHECK_ERR(tes_replicator_create(w, &d, &rep), TES_ERR_INVALID_ARGUMENT);
    }
    tes_quantum_t dup[] = {{p, 2, 0.5}, {p, 0, 0.1}, {p, 2, 0.25}};
    tes_replicator_desc_t d1 = {.quanta = dup, .quantum_count = 3};
    CHECK_ERR(tes_replicator_create(w, &d1, &rep), TES_ERR_INVALID_ARGUMENT);
    tes_quantum_t intf[] = {{p, 1, 1}};
    tes_replicator_desc_t d2 = {.quanta = intf, .quantum_count = 1};
    CHECK_ERR(tes_replicator_create(w, &d2, &rep), TES_ERR_INVALID_ARGUMENT);
    tes_quantum_t far[] = {{p, UINT32_MAX, 1}};
    tes_replicator_desc_t d3 = {.quanta = far, .quantum_count = 1};
    CHECK_ERR(tes_replicator_create(w, &d3, &rep), TES_ERR_INVALID_ARGUMENT);
    tes_quantum_t unk[] = {{UINT32_MAX, 0, 1}};
    tes_replicator_desc_t d4 = {.quanta = unk, .quantum_count = 1};
    CHECK_ERR(tes_replicator_create(w, &d4, &rep), TES_ERR_UNKNOWN_COMPONENT);
    tes_quantum_t lq[] = {{loc, 0, 1}};
    tes_replicator_desc_t d5 = {.quanta = lq, .quantum_count = 1};
    CHECK_ERR(tes_replicator_create(w, &d5, &rep), TES_ERR_INVALID_ARGUMENT);
    tes_replicator_desc_t d6 = {.components = &loc, .component_count = 1};
    CHECK_ERR(tes_replicator_create(w, &d6, &rep), TES_ERR_INVALID_ARGUMENT);
    tes_quantum_t nq[] = {{p, 0, 1}};
    tes_replicator_desc_t d7 = {
        .components = &p, .component_count = 0, .quanta = nq, .quantum_count = 1};
    tes_result_t r7 = tes_replicator_create(w, &d7, &rep);
    /* no components listed: p is not replicated */
    if (r7 == TES_OK) tes_replicator_destroy(rep);
    CHECK_ERR(r7, TES_ERR_INVALID_ARGUMENT);
    CHECK_EQ(fx_stats(w).query_count, 0);
}

/* ---------------------------------------------------------------------------------------- */
/* Batch 2                                                                                   */
/* ---------------------------------------------------------------------------------------- */

/* tes_query_despawn: "tes_despawn_batch of every entity a plain query visits": the query visits
 * a parent and its cascade children. */
TEST(query_despawn_over_parents_and_their_cascaded_children) {
    tes_world_t *w = fx_world(NULL);
    tes_component_t a = fx_component(w, "A", v_fields, 1);
    tes_component_t c =
        fx_relation(w, "ChildOf", NULL, 0,
                    TES_RELATION_EXCLUSIVE | TES_RELATION_ACYCLIC | TES_RELATION_CASCADE);
    tes_entity_t e[50];
    CHECK_OK(tes_spawn_batch(w, &a, 1, 50, e));
    for (int i = 1; i < 50; i++)
        CHECK_OK(tes_pair_add(w, e[i], c, e[(i - 1) / 2]));
    tes_entity_t keep = fx_spawn(w, NULL, 0);
    tes_query_t *q = hquery(w, a);
    CHECK_OK(tes_query_despawn(w, q));
    CHECK_EQ(fx_stats(w).entity_count, 1);
    CHECK(tes_is_alive(w, keep));
    CHECK_OK(tes_world_validate(w));
    /* and recorded during an iteration of the same query */
    CHECK_OK(tes_spawn_batch(w, &a, 1, 50, e));
    for (int i = 1; i < 50; i++)
        CHECK_OK(tes_pair_add(w, e[i], c, e[(i - 1) / 2]));
    tes_iter_t it;
    CHECK_OK(tes_query_iter(w, q, &it));
    CHECK(tes_iter_next(&it));
    CHECK_OK(tes_query_despawn(w, q));
    while (tes_iter_next(&it)) {
    }
    CHECK_EQ(fx_stats(w).entity_count, 1);
    CHECK_OK(tes_world_validate(w));
    hroundtrip(w);
    tes_query_destroy(w, q);
}

/* Exclusive replacement: "Data starts zeroed" for the new pair. */
TEST(exclusive_replacement_starts_the_new_pair_zeroed) {
    tes_world_t *w = fx_world(NULL);
    tes_component_t c = fx_relation(w, "ChildOf", arr_fields, 1, TES_RELATION_EXCLUSIVE);
    tes_entity_t p1 = fx_spawn(w, NULL, 0), p2 = fx_spawn(w, NULL, 0), k = fx_spawn(w, NULL, 0);
    CHECK_OK(tes_pair_add(w, k, c, p1));
    CHECK_OK(tes_pair_set_number(w, k, c, p1, 0, 2, 5));
    CHECK_OK(tes_pair_add(w, k, c, p2));
    double v = -1;
    CHECK_OK(tes_pair_get_number(w, k, c, p2, 0, 2, &v));
    CHECK_NUM_EQ(v, 0);
    CHECK_OK(tes_pair_add(w, k, c, p1));
    CHECK_OK(tes_pair_get_number(w, k, c, p1, 0, 2, &v));
    CHECK_NUM_EQ(v, 0);
    CHECK_ERR(tes_pair_get_number(w, k, c, p1, 0, 3, &v), TES_ERR_ELEMENT_OUT_OF_RANGE);
    CHECK_ERR(tes_pair_get_number(w, k, c, p1, 1, 0, &v), TES_ERR_UNKNOWN_FIELD);
    CHECK_ERR(tes_pair_get_number(w, k, c, p2, 0, 0, &v), TES_ERR_MISSING_COMPONENT);
    hroundtrip(w);
}

/* "a finite value whose magnitude exceeds FLT_MAX is rejected" by every path that takes
 * "tes_set_number's rules": tes_set_number, item values, pair data, kernels. */
TEST(values_just_above_flt_max_are_rejected_everywhere) {
    static const tes_field_desc_t ff[] = {{"f", TES_F32, 0}};
    tes_world_t *w = fx_world(NULL);
    tes_component_t f = fx_component(w, "F", ff, 1);
    tes_component_t s = fx_sparse(w, "S", ff, 1);
    tes_component_t r = fx_relation(w, "R", ff, 1, 0);
    tes_entity_t e = fx_spawn(w, FX_IDS(f, s));
    CHECK_OK(tes_pair_add(w, e, r, e));
    double above = nextafter((double)FLT_MAX, INFINITY);
    fx_snapshot_t *before = fx_snapshot_full_of(w);
    CHECK_ERR(tes_set_number(w, e, f, 0, 0, above), TES_ERR_BAD_VALUE);
    CHECK_ERR(tes_set_number(w, e, s, 0, 0, -above), TES_ERR_BAD_VALUE);
    CHECK_ERR(tes_init_number(w, e, f, 0, 0, above), TES_ERR_BAD_VALUE);
    CHECK_ERR(tes_pair_set_number(w, e, r, e, 0, 0, above), TES_ERR_BAD_VALUE);
    CHECK_ERR(tes_pair_init_number(w, e, r, e, 0, 0, above), TES_ERR_BAD_VALUE);
    tes_item_t it[] = {{f, 0}, {s, 0}, {r, e}};
    double numbers[] = {above};
    for (uint32_t i = 0; i < 3; i++) {
        tes_value_t val[] = {{i, 0, 0, 0}};
        tes_items_t items = {it, 3, val, 1, numbers, 1};
        tes_fault_t fault;
        CHECK_ERR(tes_set_items(w, &e, 1, &items, &fault), TES_ERR_BAD_VALUE);
        CHECK_ERR(tes_add_items(w, &e, 1, &items, &fault), TES_ERR_BAD_VALUE);
        tes_items_t items2 = {it, 3, val, 1, numbers, 1};
        tes_entity_t out = 0;
        tes_item_t it2[] = {{f, 0}, {s, 0}, {r, e}};
        items2.items = it2;
        CHECK_ERR(tes_spawn_items(w, &items2, 1, &out, &fault), TES_ERR_BAD_VALUE);
    }
    tes_query_t *q = hquery(w, f);
    tes_op_t op = {.kind = TES_OP_FILL, .k = above, .component = f};
    CHECK_ERR(tes_query_apply(w, q, &op, NULL, NULL), TES_ERR_BAD_VALUE);
    op.kind = TES_OP_CLAMP;
    op.lo = -above;
    op.hi = 0;
    CHECK_ERR(tes_query_apply(w, q, &op, NULL, NULL), TES_ERR_BAD_VALUE);
    FX_CHECK_UNCHANGED_FULL(before, w);
    /* FLT_MAX itself, and a double that rounds to it from below, are fine */
    CHECK_OK(tes_set_number(w, e, f, 0, 0, (double)FLT_MAX));
    tes_query_destroy(w, q);
}

/* tes_chunk_mark_changed: "Marks rows of one chunk changed: rows[0..n-1]": a row past the
 * chunk's count is bad input (an error, nothing marked, no stray write). */
TEST(chunk_mark_changed_with_rows_out_of_range) {
    tes_world_t *w = fx_world(NULL);
    tes_component_t a = fx_component(w, "A", v_fields, 1);
    tes_entity_t e[3];
    CHECK_OK(tes_spawn_batch(w, &a, 1, 3, e));
    tes_query_t *q = NULL;
    tes_query_desc_t d = {.changed = &a, .changed_count = 1};
    CHECK_OK(tes_query_create(w, &d, &q));
    tes_archetype_t arch = fx_archetype_of(w, e[0]);
    uint32_t rows[] = {1, 3};
    CHECK(tes_chunk_mark_changed(w, arch, 0, a, rows, 2) != TES_OK);
    uint32_t rows2[] = {UINT32_MAX};
    CHECK(tes_chunk_mark_changed(w, arch, 0, a, rows2, 1) != TES_OK);
    CHECK(tes_chunk_mark_changed(w, arch, 1, a, NULL, 0) != TES_OK);
    CHECK(tes_chunk_mark_changed(w, arch, UINT32_MAX, a, NULL, 0) != TES_OK);
    CHECK_EQ(hcount(w, q), 0);
    CHECK_OK(tes_world_validate(w));
    tes_query_destroy(w, q);
}

/* "tes_defer_end without a begin is TES_ERR_INVALID_ARGUMENT"; reclaim "Refused while a run is
 * live". */
TEST(defer_and_reclaim_misuse_is_refused) {
    tes_world_t *w = fx_world(NULL);
    tes_component_t a = fx_component(w, "A", v_fields, 1);
    tes_component_t b = fx_component(w, "B", v_fields, 1);
    tes_entity_t e = fx_spawn(w, FX_IDS(a, b));
    CHECK_OK(tes_remove(w, e, b));
    CHECK_ERR(tes_defer_end(w), TES_ERR_INVALID_ARGUMENT);
    CHECK_OK(tes_defer_begin(w));
    uint32_t n = 0;
    CHECK_ERR(tes_archetypes_reclaim(w, &n), TES_ERR_INVALID_ARGUMENT);
    tes_entity_t p = 0;
    CHECK_OK(tes_spawn(w, FX_IDS(a, b), &p));
    CHECK_OK(tes_defer_end(w));
    CHECK_ERR(tes_defer_end(w), TES_ERR_INVALID_ARGUMENT);
    CHECK(tes_is_alive(w, p));
    CHECK_OK(tes_world_validate(w));
}

/* tes_spawn: "(any order, no duplicates ...)": a sparse component listed twice is a duplicate
 * like a chunk one; "a relation in it is TES_ERR_NEEDS_TARGET". */
TEST(spawn_refuses_duplicate_sparse_ids_and_relations) {
    tes_world_t *w = fx_world(NULL);
    tes_component_t a = fx_component(w, "A", v_fields, 1);
    tes_component_t s = fx_sparse(w, "S", v_fields, 1);
    tes_component_t r = fx_relation(w, "R", NULL, 0, 0);
    fx_spawn(w, FX_IDS(a));
    fx_snapshot_t *before = fx_snapshot_full_of(w);
    tes_entity_t e = 0;
    CHECK_ERR(tes_spawn(w, FX_IDS(a, s, s), &e), TES_ERR_INVALID_ARGUMENT);
    CHECK_ERR(tes_spawn(w, FX_IDS(s, a, s), &e), TES_ERR_INVALID_ARGUMENT);
    CHECK_ERR(tes_spawn_batch(w, FX_IDS(s, s), 4, NULL), TES_ERR_INVALID_ARGUMENT);
    CHECK_ERR(tes_spawn(w, FX_IDS(a, r), &e), TES_ERR_NEEDS_TARGET);
    CHECK_ERR(tes_spawn_batch(w, FX_IDS(s, r), 3, NULL), TES_ERR_NEEDS_TARGET);
    tes_archetype_t arch;
    CHECK_ERR(tes_archetype_find(w, FX_IDS(a, s), &arch), TES_ERR_SPARSE_COMPONENT);
    FX_CHECK_UNCHANGED_FULL(before, w);
}

/* An allocator whose new blocks hold the u32 `fill` in every word: memory a world reads
 * before it writes it then says so (here: a component id). */
static void *filled_alloc(size_t size, void *user) {
    uint32_t *p = malloc(size ? size : 1);
    for (size_t i = 0; p && i < size / sizeof *p; i++)
        p[i] = *(const uint32_t *)user;
    return p;
}
static void filled_free(void *ptr, size_t size, void *user) {
    (void)size, (void)user;
    free(ptr);
}

/* A query's term list is sized for every term given, and a sparse term goes to its row terms:
 * the list's slot past its terms is memory the query never wrote. Whether the query names a
 * component read that slot too, so a component registered later whose id the memory happened
 * to hold stayed registered (unregister refused it; a rewind kept it, and snapshot() and hash()
 * differed from the checkpoint's: seen from JS only after other worlds had used the memory). */
TEST(a_query_names_only_its_terms_not_the_memory_past_them) {
    static uint32_t fill = 2; /* the id the next component gets */
    tes_world_desc_t desc = {
        .allocator = {.alloc = filled_alloc, .free = filled_free, .user = &fill}};
    tes_world_t *w = fx_world(&desc);
    tes_component_t a = fx_component(w, "A", v_fields, 1), s = fx_sparse(w, "S", v_fields, 1);
    tes_query_t *q = NULL;
    tes_query_desc_t d = {.all = &a, .all_count = 1, .any = &s, .any_count = 1};
    CHECK_OK(tes_query_create(w, &d, &q));
    tes_component_t late = fx_component(w, "Late", v_fields, 1);
    CHECK_EQ(late, fill);
    CHECK_OK(tes_component_unregister(w, late));
    CHECK_EQ(fx_stats(w).component_count, 2);
    /* What the query does name stays. */
    CHECK_ERR(tes_component_unregister(w, s), TES_ERR_INVALID_ARGUMENT);
    tes_query_destroy(w, q);
}

/* tes_component_unregister: "TES_ERR_INVALID_ARGUMENT when it is not the latest or is in use
 * (no archetype, query, member, pair or replica mapping names it)". */
TEST(unregister_refuses_a_component_in_use) {
    tes_world_t *w = fx_world(NULL);
    tes_component_t a = fx_component(w, "A", v_fields, 1);
    tes_entity_t e = fx_spawn(w, FX_IDS(a));
    tes_component_t s = fx_sparse(w, "S", v_fields, 1);
    CHECK_OK(tes_add(w, e, s));
    CHECK_ERR(tes_component_unregister(w, s), TES_ERR_INVALID_ARGUMENT);
    CHECK_OK(tes_remove(w, e, s));
    tes_query_t *q = NULL;
    tes_query_desc_t d = {.removed = &s, .removed_count = 1};
    CHECK_OK(tes_query_create(w, &d, &q));
    CHECK_ERR(tes_component_unregister(w, s), TES_ERR_INVALID_ARGUMENT);
    tes_query_destroy(w, q);
    CHECK_OK(tes_component_unregister(w, s));
    CHECK_EQ(fx_stats(w).component_count, 1);
    tes_component_t r = fx_relation(w, "R", NULL, 0, 0);
    CHECK_OK(tes_pair_add(w, e, r, e));
    CHECK_ERR(tes_component_unregister(w, r), TES_ERR_INVALID_ARGUMENT);
    CHECK_OK(tes_pair_remove(w, e, r, e));
    tes_component_t t = fx_tag(w, "T");
    tes_archetype_t arch;
    CHECK_OK(tes_archetype_find(w, &t, 1, &arch));
    CHECK_ERR(tes_component_unregister(w, t), TES_ERR_INVALID_ARGUMENT);
    CHECK_ERR(tes_component_unregister(w, r), TES_ERR_INVALID_ARGUMENT); /* not the latest */
    CHECK_OK(tes_world_validate(w));
    hroundtrip(w);
}

/* A rewind "returns the world exactly to the checkpoint's state ... the snapshot's bytes equal
 * the ones taken at the checkpoint", over random changes of every kind. */
TEST(rewinds_over_random_changes_give_back_the_checkpoint_bytes) {
    for (uint64_t seed = 1; seed <= 12; seed++) {
        tes_world_desc_t desc = {.checkpoints = 8, .min_free_indices = 2, .chunk_bytes = 1024};
        fx_mixed_t m = fx_mixed(&desc, seed & 1);
        fx_rng_t rng = {seed * 7919};
        fx_live_t *live = fx_malloc(sizeof *live);
        fx_mixed_changes(&m, &rng, live, 40, 0);
        hbytes_t at[8];
        uint32_t ids[8];
        for (int k = 0; k < 8; k++) {
            CHECK_OK(tes_checkpoint(m.world, &ids[k]));
            at[k] = hsnap(m.world);
            fx_mixed_changes(&m, &rng, live, 15, 100 + 20 * k);
        }
        for (int k = 7; k >= 0; k -= 3) {
            CHECK_OK(tes_rewind(m.world, ids[k]));
            CHECK_OK(tes_world_validate(m.world));
            CHECK_SAME_BYTES(at[k], m.world);
            live->n = 0;
            uint32_t archs = tes_archetype_count(m.world);
            for (tes_archetype_t ar = 0; ar < archs; ar++) {
                tes_archetype_info_t info;
                if (tes_archetype_info(m.world, ar, &info) != TES_OK) continue;
                for (uint32_t ch = 0; ch < info.chunk_count; ch++) {
                    tes_chunk_info_t ci;
                    CHECK_OK(tes_chunk_info(m.world, ar, ch, &ci));
                    for (uint32_t row = 0; row < ci.count && live->n < 512; row++)
                        live->e[live->n++] = ci.entities[row];
                }
            }
            fx_mixed_changes(&m, &rng, live, 10, 500);
        }
    }
}

/* The deferred flush with many recorded commands of every kind; the end state equals the same
 * calls made one by one without deferring (same snapshot bytes). */
static void hscript(tes_world_t *w, tes_component_t a, tes_component_t s, tes_component_t r,
                    tes_component_t c, tes_entity_t *base, uint32_t nbase) {
    tes_entity_t p[20];
    for (uint32_t i = 0; i < 20; i++) {
        CHECK_OK(tes_spawn(w, (i & 1) ? &a : NULL, (i & 1) ? 1 : 0, &p[i]));
        if (i & 1) CHECK_OK(tes_set_number(w, p[i], a, 0, 0, 100 + i));
        CHECK_OK(tes_add(w, p[i], s));
        CHECK_OK(tes_init_number(w, p[i], s, 0, 0, 200 + i));
        CHECK_OK(tes_pair_add(w, p[i], r, base[i % nbase]));
        CHECK_OK(tes_pair_init_number(w, p[i], r, base[i % nbase], 0, 0, 300 + i));
        if (i > 0) CHECK_OK(tes_pair_add(w, p[i], c, p[i - 1]));
    }
    CHECK_OK(tes_despawn(w, p[5]));    /* cascades p[6..] through ChildOf */
    CHECK_OK(tes_despawn(w, base[0])); /* removes R pairs to base[0] */
    CHECK_OK(tes_add(w, base[1], a));
    CHECK_OK(tes_set_number(w, base[1], a, 0, 0, 77));
    CHECK_OK(tes_remove(w, p[2], s));
    CHECK_OK(tes_pair_add(w, base[2], r, p[3]));
}

TEST(a_recorded_script_ends_as_the_same_calls_made_directly) {
    tes_world_t *ws[2];
    hbytes_t bytes[2];
    for (int mode = 0; mode < 2; mode++) {
        tes_world_t *w = fx_world(NULL);
        ws[mode] = w;
        tes_component_t a = fx_component(w, "A", v_fields, 1);
        tes_component_t s = fx_sparse(w, "S", v_fields, 1);
        tes_component_t r = fx_relation(w, "R", v_fields, 1, 0);
        tes_component_t c =
            fx_relation(w, "ChildOf", NULL, 0,
                        TES_RELATION_EXCLUSIVE | TES_RELATION_ACYCLIC | TES_RELATION_CASCADE);
        tes_entity_t base[4];
        CHECK_OK(tes_spawn_batch(w, &a, 1, 4, base));
        if (mode == 1) {
            tes_query_t *q = hquery(w, a);
            tes_iter_t it;
            CHECK_OK(tes_query_iter(w, q, &it));
            hscript(w, a, s, r, c, base, 4);
            while (tes_iter_next(&it)) {
            }
            tes_query_destroy(w, q);
        } else {
            hscript(w, a, s, r, c, base, 4);
        }
        CHECK_OK(tes_world_validate(w));
        bytes[mode] = hsnap(w);
    }
    CHECK_EQ(fx_stats(ws[0]).entity_count, fx_stats(ws[1]).entity_count);
    CHECK_EQ(bytes[0].n, bytes[1].n);
    CHECK(memcmp(bytes[0].p, bytes[1].p, bytes[0].n) == 0);
}

/* Out of memory at the k-th allocation of a cascade despawn, an exclusive replacement, an
 * archetype_add onto a populated destination and a restore: "Out of memory ... leaves the
 * world as it was before the call." */
TEST(oom_at_every_allocation_of_structural_calls_changes_nothing) {
    for (int64_t k = 0; k < 400; k++) {
        fx_alloc_t *al = fx_alloc_new();
        tes_world_desc_t desc = {.allocator = fx_allocator(al), .chunk_bytes = 1024};
        tes_world_t *w = fx_world(&desc);
        tes_component_t a = fx_component(w, "A", v_fields, 1);
        tes_component_t t = fx_tag(w, "T");
        tes_component_t s = fx_sparse(w, "S", v_fields, 1);
        tes_component_t c =
            fx_relation(w, "ChildOf", v_fields, 1,
                        TES_RELATION_EXCLUSIVE | TES_RELATION_ACYCLIC | TES_RELATION_CASCADE);
        tes_component_t r = fx_relation(w, "R", NULL, 0, 0);
        tes_entity_t e[200], f[30];
        CHECK_OK(tes_spawn_batch(w, FX_IDS(a, s), 200, e));
        CHECK_OK(tes_spawn_batch(w, FX_IDS(a, t), 30, f));
        for (int i = 1; i < 200; i++) {
            CHECK_OK(tes_pair_add(w, e[i], c, e[(i - 1) / 3]));
            CHECK_OK(tes_pair_add(w, e[i], r, f[i % 30]));
        }
        tes_query_t *q = NULL;
        tes_query_desc_t qd = {
            .removed = &s, .removed_count = 1, .pair_changes = &c, .pair_change_count = 1};
        CHECK_OK(tes_query_create(w, &qd, &q));
        fx_snapshot_t *before = fx_snapshot_full_of(w);
        al->fail_after = (int64_t)al->allocs + k;
        tes_result_t res;
        int which = (int)(k % 4);
        if (which == 0) {
            res = tes_despawn(w, e[1]);
        } else if (which == 1) {
            res = tes_pair_add(w, e[2], c, f[3]);
        } else if (which == 2) {
            res = tes_archetype_add(w, fx_archetype_of(w, e[0]), t);
        } else {
            res = tes_despawn_batch(w, f, 30);
        }
        al->fail_after = -1;
        CHECK(res == TES_OK || res == TES_ERR_OUT_OF_MEMORY);
        CHECK_OK(tes_world_validate(w));
        if (res == TES_ERR_OUT_OF_MEMORY) FX_CHECK_UNCHANGED_FULL(before, w);
        tes_query_destroy(w, q);
        fx_world_destroy_now(w);
        FX_CHECK_ALLOC_CLEAN(al);
    }
}

TEST(oom_at_every_allocation_of_restore_leaves_nothing) {
    fx_mixed_t m = fx_mixed(NULL, true);
    fx_rng_t rng = {99};
    fx_live_t *live = fx_malloc(sizeof *live);
    fx_mixed_changes(&m, &rng, live, 300, 0);
    hbytes_t b = hsnap(m.world);
    bool done = false;
    for (int64_t k = 0; !done && k < 5000; k++) {
        fx_alloc_t *al = fx_alloc_new();
        al->fail_after = k;
        tes_world_desc_t desc = {.allocator = fx_allocator(al)};
        tes_world_t *r = NULL;
        tes_result_t res = tes_world_restore(&desc, b.p, b.n, &r);
        if (res == TES_OK) {
            done = true;
            al->fail_after = -1;
            CHECK_OK(tes_world_validate(r));
            CHECK_SAME_BYTES(b, r);
            tes_world_destroy(r);
        } else {
            CHECK_ERR(res, TES_ERR_OUT_OF_MEMORY);
            CHECK(r == NULL);
        }
        FX_CHECK_ALLOC_CLEAN(al);
    }
    CHECK(done);
}

/* Rollback out of memory: "both are all or nothing: out of memory leaves the world and the
 * checkpoints as they were". */
TEST(oom_at_every_allocation_of_checkpoint_and_rewind) {
    for (int64_t k = 0; k < 300; k++) {
        fx_alloc_t *al = fx_alloc_new();
        tes_world_desc_t desc = {
            .allocator = fx_allocator(al), .checkpoints = 4, .chunk_bytes = 1024};
        fx_mixed_t m = fx_mixed(&desc, false);
        fx_rng_t rng = {5};
        fx_live_t *live = fx_malloc(sizeof *live);
        fx_mixed_changes(&m, &rng, live, 60, 0);
        uint32_t c1 = 0, c2 = 0;
        CHECK_OK(tes_checkpoint(m.world, &c1));
        hbytes_t at1 = hsnap(m.world);
        fx_mixed_changes(&m, &rng, live, 30, 100);
        hbytes_t now = hsnap(m.world);
        al->fail_after = (int64_t)al->allocs + k / 2;
        tes_result_t res = (k & 1) ? tes_rewind(m.world, c1) : tes_checkpoint(m.world, &c2);
        al->fail_after = -1;
        CHECK(res == TES_OK || res == TES_ERR_OUT_OF_MEMORY);
        CHECK_OK(tes_world_validate(m.world));
        if (res == TES_ERR_OUT_OF_MEMORY) {
            CHECK_SAME_BYTES(now, m.world);
            uint32_t oldest = 0, newest = 0;
            CHECK_OK(tes_checkpoints(m.world, &oldest, &newest));
            CHECK_EQ(oldest, c1);
            CHECK_EQ(newest, c1);
        }
        CHECK_OK(tes_rewind(m.world, c1));
        CHECK_SAME_BYTES(at1, m.world);
        fx_world_destroy_now(m.world);
        FX_CHECK_ALLOC_CLEAN(al);
    }
}

/* A deferred flush that runs out of memory: "A command whose entity is gone by then (or that
 * runs out of memory) is skipped and counted in commands_skipped" and the world stays valid. */
TEST(oom_during_a_flush_skips_commands_and_keeps_the_world_valid) {
    for (int64_t k = 0; k < 120; k++) {
        fx_alloc_t *al = fx_alloc_new();
        tes_world_desc_t desc = {.allocator = fx_allocator(al), .chunk_bytes = 1024};
        tes_world_t *w = fx_world(&desc);
        tes_component_t a = fx_component(w, "A", v_fields, 1);
        tes_component_t s = fx_sparse(w, "S", v_fields, 1);
        tes_component_t r = fx_relation(w, "R", v_fields, 1, 0);
        tes_component_t c =
            fx_relation(w, "ChildOf", NULL, 0,
                        TES_RELATION_EXCLUSIVE | TES_RELATION_ACYCLIC | TES_RELATION_CASCADE);
        tes_entity_t base[4];
        CHECK_OK(tes_spawn_batch(w, &a, 1, 4, base));
        tes_query_t *q = hquery(w, a);
        tes_iter_t it;
        CHECK_OK(tes_query_iter(w, q, &it));
        hscript(w, a, s, r, c, base, 4);
        al->fail_after = (int64_t)al->allocs + k;
        al->fail_once = (k & 1) != 0;
        while (tes_iter_next(&it)) {
        }
        al->fail_after = -1;
        CHECK_OK(tes_world_validate(w));
        hroundtrip(w);
        tes_query_destroy(w, q);
        fx_world_destroy_now(w);
        FX_CHECK_ALLOC_CLEAN(al);
    }
}

/* ---------------------------------------------------------------------------------------- */
/* Batch 3                                                                                   */
/* ---------------------------------------------------------------------------------------- */

/* Item calls on a pending entity: "Then each entity: ... a pair that would close a cycle
 * TES_ERR_CYCLE" and "these calls are recorded ... after the checks above". */
TEST(add_items_of_a_self_pair_to_a_pending_entity_is_a_cycle) {
    tes_world_t *w = fx_world(NULL);
    tes_component_t a = fx_component(w, "A", v_fields, 1);
    tes_component_t c =
        fx_relation(w, "ChildOf", NULL, 0, TES_RELATION_EXCLUSIVE | TES_RELATION_ACYCLIC);
    fx_spawn(w, FX_IDS(a));
    tes_query_t *q = hquery(w, a);
    tes_iter_t it;
    CHECK_OK(tes_query_iter(w, q, &it));
    tes_entity_t p = 0;
    CHECK_OK(tes_spawn(w, NULL, 0, &p));
    tes_item_t items_[] = {{c, p}};
    tes_items_t items = {items_, 1, NULL, 0, NULL, 0};
    tes_fault_t fault;
    tes_result_t r = tes_add_items(w, &p, 1, &items, &fault);
    while (tes_iter_next(&it)) {
    }
    CHECK(!fx_pair_has(w, p, c, p));
    CHECK_ERR(r, TES_ERR_CYCLE);
    tes_query_destroy(w, q);
}

/* A query of pair terms only, and a checkpoint with nothing changed since the previous one:
 * plain calls that once ran into undefined behaviour (NULL + 0 on arrays never allocated, which
 * clang's UBSan reports and gcc's does not). */
TEST(a_query_of_pair_terms_only_matches_its_pairs) {
    tes_world_t *w = fx_world(NULL);
    tes_component_t r = fx_relation(w, "R", NULL, 0, 0);
    tes_entity_t e = fx_spawn(w, NULL, 0);
    CHECK_OK(tes_pair_add(w, e, r, e));
    tes_pair_term_t pt[] = {{r, e, TES_TERM_ALL}};
    CHECK_EQ(hmatches(w, &(tes_query_desc_t){.pairs = pt, .pair_count = 1}), 1);
}

TEST(two_checkpoints_without_changes_and_rewinds_to_the_first) {
    tes_world_t *w = fx_world(NULL);
    tes_component_t a = fx_component(w, "A", v_fields, 1);
    tes_entity_t e = fx_spawn(w, FX_IDS(a));
    uint32_t c1, c2;
    CHECK_OK(tes_checkpoint(w, &c1));
    CHECK_OK(tes_checkpoint(w, &c2));
    CHECK_OK(tes_rewind(w, c1));
    CHECK_OK(tes_set_number(w, e, a, 0, 0, 3));
    CHECK_OK(tes_rewind(w, c1));
    CHECK_NUM_EQ(fx_get_number(w, e, a, 0, 0), 0);
}

/* history: "encodes whose changes stay available, per peer (0: 64)". A history whose ring does
 * not fit memory must be refused (OUT_OF_MEMORY or INVALID_ARGUMENT), never allocated short:
 * on wasm32, 0x20000001 * 8 bytes wraps to 8. The allocator refuses blocks over 256 MiB. */
static void *hcapped_alloc(size_t size, void *user) {
    if (size > (256u << 20)) return NULL;
    return fx_alloc_fn(size, user);
}

TEST(replicator_history_whose_ring_overflows_size_t_is_not_allocated_short) {
    fx_alloc_t *al = fx_alloc_new();
    tes_world_desc_t desc = {.allocator = {hcapped_alloc, fx_free_fn, al}};
    tes_world_t *w = fx_world(&desc);
    tes_component_t a = fx_component(w, "A", v_fields, 1);
    tes_entity_t e = fx_spawn(w, FX_IDS(a));
    uint32_t histories[] = {0x20000001u, 0x40000000u, UINT32_MAX};
    for (int h = 0; h < 3; h++) {
        tes_replicator_t *rep = NULL;
        tes_replicator_desc_t d = {.history = histories[h]};
        uint64_t bytes_before = fx_stats(w).bytes_allocated;
        tes_result_t r = tes_replicator_create(w, &d, &rep);
        if (r != TES_OK) {
            CHECK(r == TES_ERR_OUT_OF_MEMORY || r == TES_ERR_INVALID_ARGUMENT);
            continue;
        }
        /* accepted: it must hold a ring of `history` encodes */
        CHECK(fx_stats(w).bytes_allocated - bytes_before >= (uint64_t)histories[h] * 8u);
        const uint8_t *bytes;
        uint32_t size;
        uint64_t tick = 0;
        for (int i = 0; i < 8; i++) {
            CHECK_OK(tes_set_number(w, e, a, 0, 0, i));
            CHECK_OK(tes_delta_encode(rep, tick, &bytes, &size, &tick));
        }
        tes_replicator_destroy(rep);
    }
    CHECK_EQ(al->bad_frees, 0);
}

/* ---------------------------------------------------------------------------------------- */
/* Batch 4                                                                                   */
/* ---------------------------------------------------------------------------------------- */

/* tes_remove_items: "(values are not allowed)"; tes_peer_show: "a finite number > 0 ...
 * TES_ERR_INVALID_ARGUMENT for ... a priority that is not > 0"; tes_query_collect: "The query
 * must be a consumer ... else TES_ERR_INVALID_ARGUMENT"; CHANGE_BY_VALUE: "Not for tags or
 * relations ... TES_ERR_BAD_SCHEMA". */
TEST(misc_documented_refusals_change_nothing) {
    tes_world_t *w = fx_world(NULL);
    tes_component_t a = fx_component(w, "A", v_fields, 1);
    tes_entity_t e = fx_spawn(w, FX_IDS(a));
    tes_item_t it[] = {{a, 0}};
    double numbers[] = {1};
    tes_value_t val[] = {{0, 0, 0, 0}};
    tes_items_t items = {it, 1, val, 1, numbers, 1};
    fx_snapshot_t *before = fx_snapshot_full_of(w);
    CHECK_ERR(tes_remove_items(w, &e, 1, &items, NULL), TES_ERR_INVALID_ARGUMENT);
    tes_items_t none_items = {NULL, 0, val, 1, numbers, 1};
    CHECK_ERR(tes_set_items(w, &e, 1, &none_items, NULL), TES_ERR_INVALID_ARGUMENT);
    FX_CHECK_UNCHANGED_FULL(before, w);
    tes_replicator_t *rep = NULL;
    tes_replicator_desc_t rd = {0};
    CHECK_OK(tes_replicator_create(w, &rd, &rep));
    tes_peer_t *peer = NULL;
    CHECK_ERR(tes_peer_create(rep, 2, &peer), TES_ERR_INVALID_ARGUMENT);
    CHECK_OK(tes_peer_create(rep, TES_PEER_VISIBILITY, &peer));
    float bad[] = {0.0f, -0.0f, -1.0f, NAN, INFINITY};
    for (int i = 0; i < 5; i++)
        CHECK_ERR(tes_peer_show(peer, e, bad[i]), TES_ERR_INVALID_ARGUMENT);
    CHECK(!tes_peer_sees(peer, e));
    CHECK_OK(tes_peer_show(peer, e, 1e-30f));
    CHECK(tes_peer_sees(peer, e));
    tes_query_t *q = hquery(w, a);
    tes_collect_t col;
    CHECK_ERR(tes_query_collect(w, q, &col), TES_ERR_INVALID_ARGUMENT);
    tes_query_destroy(w, q);
    tes_component_t id;
    tes_component_desc_t tag = {"T", NULL, 0, TES_COMPONENT_CHANGE_BY_VALUE};
    CHECK_ERR(tes_component_register(w, &tag, &id), TES_ERR_BAD_SCHEMA);
    tes_component_desc_t rel = {"R", v_fields, 1,
                                TES_COMPONENT_RELATION | TES_COMPONENT_CHANGE_BY_VALUE};
    CHECK_ERR(tes_component_register(w, &rel, &id), TES_ERR_BAD_SCHEMA);
    tes_component_desc_t acy = {"R2", NULL, 0, TES_COMPONENT_RELATION | TES_RELATION_ACYCLIC};
    CHECK_ERR(tes_component_register(w, &acy, &id), TES_ERR_BAD_SCHEMA);
    tes_component_desc_t odd = {"R3", NULL, 0, 128};
    CHECK_ERR(tes_component_register(w, &odd, &id), TES_ERR_BAD_SCHEMA);
    tes_component_desc_t sp = {"R4", NULL, 0, TES_COMPONENT_SPARSE | TES_RELATION_CASCADE};
    CHECK_ERR(tes_component_register(w, &sp, &id), TES_ERR_BAD_SCHEMA);
    FX_CHECK_UNCHANGED_FULL(before, w);
    tes_replicator_destroy(rep);
}

/* tes_query_add_items / remove_items: "all or nothing" and "move whole archetypes" when some
 * matched archetypes already have the item (destinations populated and matched too). */
TEST(query_add_and_remove_items_with_populated_matched_destinations) {
    tes_world_desc_t desc = {.chunk_bytes = 1024};
    tes_world_t *w = fx_world(&desc);
    tes_component_t a = fx_component(w, "A", v_fields, 1);
    tes_component_t t = fx_tag(w, "T");
    tes_component_t u = fx_tag(w, "U");
    tes_entity_t x[100], y[37], z[5];
    CHECK_OK(tes_spawn_batch(w, FX_IDS(a), 100, x));
    CHECK_OK(tes_spawn_batch(w, FX_IDS(a, t), 37, y));
    CHECK_OK(tes_spawn_batch(w, FX_IDS(a, u), 5, z));
    for (int i = 0; i < 100; i++)
        CHECK_OK(tes_set_number(w, x[i], a, 0, 0, i));
    for (int i = 0; i < 37; i++)
        CHECK_OK(tes_set_number(w, y[i], a, 0, 0, 1000 + i));
    tes_query_t *q = hquery(w, a);
    tes_item_t it[] = {{t, 0}};
    tes_items_t items = {it, 1, NULL, 0, NULL, 0};
    CHECK_OK(tes_query_add_items(w, q, &items, NULL));
    CHECK_OK(tes_world_validate(w));
    fx_check_all_packed(w);
    for (int i = 0; i < 100; i++) {
        CHECK(fx_has(w, x[i], t));
        CHECK_NUM_EQ(fx_get_number(w, x[i], a, 0, 0), i);
    }
    for (int i = 0; i < 37; i++)
        CHECK_NUM_EQ(fx_get_number(w, y[i], a, 0, 0), 1000 + i);
    for (int i = 0; i < 5; i++)
        CHECK(fx_has(w, z[i], t) && fx_has(w, z[i], u));
    tes_item_t it2[] = {{t, 0}, {u, 0}};
    tes_items_t items2 = {it2, 2, NULL, 0, NULL, 0};
    CHECK_OK(tes_query_remove_items(w, q, &items2, NULL));
    CHECK_OK(tes_world_validate(w));
    fx_check_all_packed(w);
    CHECK_EQ(fx_archetype(w, fx_archetype_of(w, x[0])).entity_count, 142);
    for (int i = 0; i < 100; i++)
        CHECK_NUM_EQ(fx_get_number(w, x[i], a, 0, 0), i);
    hroundtrip(w);
    tes_query_destroy(w, q);
}

/* tes_relation_walk: "Writes up to `capacity` entities ... and the total to *out_count"; "An
 * entity reached twice ... is listed once"; never the root. */
TEST(relation_walk_with_short_buffers_and_cycles_back_to_the_root) {
    tes_world_t *w = fx_world(NULL);
    tes_component_t r = fx_relation(w, "R", NULL, 0, 0);
    tes_entity_t e[6];
    CHECK_OK(tes_spawn_batch(w, NULL, 0, 6, e));
    /* sources of e0: e1, e2; of e1: e3, e0 (cycle); of e2: e3 (shared); of e3: e4, e5 */
    CHECK_OK(tes_pair_add(w, e[1], r, e[0]));
    CHECK_OK(tes_pair_add(w, e[2], r, e[0]));
    CHECK_OK(tes_pair_add(w, e[3], r, e[1]));
    CHECK_OK(tes_pair_add(w, e[0], r, e[1]));
    CHECK_OK(tes_pair_add(w, e[3], r, e[2]));
    CHECK_OK(tes_pair_add(w, e[4], r, e[3]));
    CHECK_OK(tes_pair_add(w, e[5], r, e[3]));
    tes_entity_t out[8];
    uint32_t depths[8];
    uint32_t n = 0;
    CHECK_OK(tes_relation_walk(w, r, e[0], out, depths, 8, &n));
    CHECK_EQ(n, 5);
    tes_entity_t expect[] = {e[1], e[3], e[4], e[5], e[2]};
    uint32_t expect_depth[] = {1, 2, 3, 3, 1};
    for (int i = 0; i < 5; i++) {
        CHECK_EQ(out[i], expect[i]);
        CHECK_EQ(depths[i], expect_depth[i]);
    }
    tes_entity_t small[3] = {0, 0, 0};
    uint32_t sd[3] = {0, 0, 0};
    tes_entity_t guard[2] = {0xdead, 0xbeef};
    (void)guard;
    CHECK_OK(tes_relation_walk(w, r, e[0], small, sd, 2, &n));
    CHECK_EQ(n, 5);
    CHECK_EQ(small[0], e[1]);
    CHECK_EQ(small[1], e[3]);
    CHECK_EQ(small[2], 0);
    CHECK_EQ(sd[2], 0);
    CHECK_OK(tes_relation_walk(w, r, e[0], NULL, NULL, 0, &n));
    CHECK_EQ(n, 5);
}

/* "spawns hand out the same handles as they would in the original" after a restore. */
TEST(a_restored_world_hands_out_the_same_handles) {
    tes_world_desc_t desc = {.min_free_indices = 3};
    fx_mixed_t m = fx_mixed(&desc, false);
    fx_rng_t rng = {4242};
    fx_live_t *live = fx_malloc(sizeof *live);
    fx_mixed_changes(&m, &rng, live, 400, 0);
    hbytes_t b = hsnap(m.world);
    tes_world_t *r = NULL;
    CHECK_OK(tes_world_restore(&desc, b.p, b.n, &r));
    harness_defer(fx_destroy_world, r);
    for (int i = 0; i < 50; i++) {
        tes_entity_t x = 0, y = 0;
        CHECK_OK(tes_spawn(m.world, NULL, 0, &x));
        CHECK_OK(tes_spawn(r, NULL, 0, &y));
        CHECK_EQ(x, y);
        if (i % 3 == 0) {
            CHECK_OK(tes_despawn(m.world, x));
            CHECK_OK(tes_despawn(r, y));
        }
    }
}

/* Reclaimed archetype ids: "An id whose archetype was reclaimed answers
 * TES_ERR_UNKNOWN_ARCHETYPE" from every call that takes it. */
TEST(reclaimed_archetype_ids_are_unknown_everywhere) {
    tes_world_t *w = fx_world(NULL);
    tes_component_t a = fx_component(w, "A", v_fields, 1);
    tes_component_t t = fx_tag(w, "T");
    tes_entity_t e = fx_spawn(w, FX_IDS(a, t));
    tes_archetype_t old = fx_archetype_of(w, e);
    CHECK_OK(tes_despawn(w, e));
    uint32_t n = 0;
    CHECK_OK(tes_archetypes_reclaim(w, &n));
    CHECK(n >= 1);
    fx_snapshot_t *before = fx_snapshot_full_of(w);
    tes_archetype_info_t info;
    tes_chunk_info_t chunk;
    void *col = NULL;
    CHECK_ERR(tes_archetype_info(w, old, &info), TES_ERR_UNKNOWN_ARCHETYPE);
    CHECK_ERR(tes_archetype_spawn(w, old, 3, NULL), TES_ERR_UNKNOWN_ARCHETYPE);
    CHECK_ERR(tes_archetype_add(w, old, a), TES_ERR_UNKNOWN_ARCHETYPE);
    CHECK_ERR(tes_archetype_remove(w, old, t), TES_ERR_UNKNOWN_ARCHETYPE);
    CHECK_ERR(tes_chunk_info(w, old, 0, &chunk), TES_ERR_UNKNOWN_ARCHETYPE);
    CHECK_ERR(tes_chunk_column(w, old, 0, a, 0, &col), TES_ERR_UNKNOWN_ARCHETYPE);
    CHECK_ERR(tes_chunk_mark_changed(w, old, 0, a, NULL, 0), TES_ERR_UNKNOWN_ARCHETYPE);
    FX_CHECK_UNCHANGED_FULL(before, w);
    tes_archetype_t again = 0;
    CHECK_OK(tes_archetype_find(w, FX_IDS(a, t), &again));
    CHECK(again != old);
    CHECK_OK(tes_archetype_spawn(w, again, 2, NULL));
    CHECK_OK(tes_world_validate(w));
    hroundtrip(w);
}

/* Bulk archetype moves inside an iteration: "While any iteration is live, structural changes
 * (spawn, despawn, add, remove and their batch forms) are recorded and applied, in order, when
 * the last live iteration ends". */
TEST(archetype_add_inside_an_iteration_with_a_pending_spawn) {
    tes_world_t *w = fx_world(NULL);
    tes_component_t a = fx_component(w, "A", v_fields, 1);
    tes_component_t t = fx_tag(w, "T");
    tes_entity_t e[10];
    CHECK_OK(tes_spawn_batch(w, &a, 1, 10, e));
    tes_archetype_t arch = fx_archetype_of(w, e[0]);
    tes_query_t *q = hquery(w, a);
    tes_iter_t it;
    CHECK_OK(tes_query_iter(w, q, &it));
    uint32_t visits = 0;
    tes_entity_t p = 0;
    CHECK_OK(tes_spawn(w, &a, 1, &p));
    CHECK_OK(tes_set_number(w, p, a, 0, 0, 5));
    tes_result_t r = tes_archetype_add(w, arch, t);
    CHECK(r == TES_OK || r == TES_ERR_INVALID_ARGUMENT);
    while (tes_iter_next(&it))
        visits += it.row_count;
    CHECK_EQ(visits, 10);
    CHECK_OK(tes_world_validate(w));
    CHECK(tes_is_alive(w, p));
    CHECK_NUM_EQ(fx_get_number(w, p, a, 0, 0), 5);
    if (r == TES_OK)
        for (int i = 0; i < 10; i++)
            CHECK(fx_has(w, e[i], t));
    hroundtrip(w);
    tes_query_destroy(w, q);
}

/* tes_replicator_create with a component list naming ids twice or unknown ids. */
TEST(replicator_component_lists_with_duplicates_and_unknown_ids) {
    tes_world_t *w = fx_world(NULL);
    tes_component_t a = fx_component(w, "A", v_fields, 1);
    tes_component_t b = fx_component(w, "B", v_fields, 1);
    tes_entity_t e = fx_spawn(w, FX_IDS(a, b));
    CHECK_OK(tes_set_number(w, e, b, 0, 0, 4));
    tes_replicator_t *rep = NULL;
    tes_component_t unk[] = {a, 77};
    tes_replicator_desc_t d0 = {.components = unk, .component_count = 2};
    CHECK_ERR(tes_replicator_create(w, &d0, &rep), TES_ERR_UNKNOWN_COMPONENT);
    tes_component_t dup[] = {b, a, b, b};
    tes_replicator_desc_t d = {.components = dup, .component_count = 4};
    CHECK_OK(tes_replicator_create(w, &d, &rep));
    const uint8_t *bytes;
    uint32_t size;
    uint64_t tick;
    CHECK_OK(tes_delta_encode(rep, 0, &bytes, &size, &tick));
    tes_world_t *replica = fx_world(NULL);
    bool applied = false;
    CHECK_OK(tes_delta_apply(replica, bytes, size, &applied));
    CHECK(applied);
    tes_component_t rb = 0;
    CHECK_OK(tes_component_lookup(replica, "B", &rb));
    CHECK_NUM_EQ(fx_get_number(replica, e, rb, 0, 0), 4);
    CHECK_OK(tes_world_validate(replica));
    tes_replicator_destroy(rep);
}

/* "ROW_TOO_LARGE: one entity of this component set needs more than 8 MiB"; blocks are "a larger
 * power-of-two multiple of this size (up to 64 MiB)". With chunk_bytes = 40 MiB a 10 MiB row
 * must still be refused (its block would be 80 MiB). */
TEST(a_large_chunk_bytes_does_not_lift_the_row_limit) {
    tes_world_desc_t desc = {.chunk_bytes = 40u << 20};
    tes_world_t *w = fx_world(&desc);
    tes_field_desc_t fields[64];
    char names[64][8];
    for (int f = 0; f < 64; f++) {
        snprintf(names[f], sizeof names[f], "f%d", f);
        fields[f] = (tes_field_desc_t){names[f], TES_F64, 256};
    }
    tes_component_t big[80];
    for (int i = 0; i < 80; i++) {
        char name[16];
        snprintf(name, sizeof name, "Big%d", i);
        big[i] = fx_component(w, name, fields, 64);
    }
    tes_entity_t e = 0;
    tes_result_t r = tes_spawn(w, big, 80, &e);
    if (r == TES_OK) {
        tes_archetype_info_t info = fx_archetype(w, fx_archetype_of(w, e));
        printf("    accepted a 10 MiB row: capacity %u, chunk bytes %llu\n", info.capacity,
               (unsigned long long)fx_stats(w).bytes_allocated);
    }
    CHECK_ERR(r, TES_ERR_ROW_TOO_LARGE);
}

/* "Every call is all or nothing: out of memory leaves the world as it was" — also for the
 * archetype a spawn or an add makes for a set no entity had yet: a call that fails for memory
 * after making it frees it again, so the world's snapshot is the same bytes, and the component
 * the call was the first to use can be unregistered (what the bindings do when a call that
 * registered it fails). Every allocation of each call fails in turn. */
TEST(a_call_that_fails_for_memory_leaves_no_new_archetype_behind) {
    static const tes_field_desc_t wide[] = {{"w", TES_F64, 64}};
    for (int call = 0; call < 4; call++) {
        for (int64_t k = 0;; k++) {
            fx_alloc_t *al = fx_alloc_new();
            tes_world_t *w = fx_world(&(tes_world_desc_t){.allocator = fx_allocator(al)});
            tes_component_t a = fx_component(w, "A", v_fields, 1);
            tes_entity_t e = fx_spawn(w, FX_IDS(a));
            tes_component_t fresh = fx_component(w, "Fresh", wide, 1);
            fx_snapshot_t *before = fx_snapshot_full_of(w);
            uint32_t archetypes = fx_stats(w).archetype_count;
            al->fail_after = (int64_t)al->allocs + k;
            tes_component_t set[] = {a, fresh};
            tes_item_t item = {fresh, 0};
            tes_items_t items = {&item, 1, NULL, 0, NULL, 0};
            tes_entity_t out[64];
            tes_result_t r = call == 0   ? tes_spawn_batch(w, set, 2, 64, out)
                             : call == 1 ? tes_spawn_items(w, &items, 64, out, NULL)
                             : call == 2 ? tes_add_items(w, &e, 1, &items, NULL)
                                         : tes_add(w, e, fresh);
            al->fail_after = -1;
            if (r == TES_OK) break; /* every failure point done */
            CHECK_ERR(r, TES_ERR_OUT_OF_MEMORY);
            CHECK_OK(tes_world_validate(w));
            CHECK_EQ(fx_stats(w).archetype_count, archetypes);
            FX_CHECK_UNCHANGED_FULL(before, w);
            CHECK_OK(tes_component_unregister(w, fresh));
        }
    }
}

/* chunk_bytes: "at most 64 MiB ... An archetype whose rows are so wide that fewer than 8 fit gets
 * blocks of a larger power-of-two multiple of this size, or 64 MiB, whichever is smaller". With
 * blocks of 40 MiB, rows of 6 MiB get a 64 MiB block (10 rows), not an 80 MiB one (13). */
TEST(a_wide_archetype_of_a_world_with_odd_chunk_bytes_stays_within_64_mib_blocks) {
    tes_world_t *w = fx_world(&(tes_world_desc_t){.chunk_bytes = 40u << 20});
    tes_field_desc_t fields[64];
    char names[64][8];
    for (int f = 0; f < 64; f++) {
        snprintf(names[f], sizeof names[f], "f%d", f);
        fields[f] = (tes_field_desc_t){names[f], TES_F64, 256}; /* 2 KiB */
    }
    tes_component_t wide[48]; /* 128 KiB each: 6 MiB a row */
    for (int i = 0; i < 48; i++) {
        char name[16];
        snprintf(name, sizeof name, "Wide%d", i);
        wide[i] = fx_component(w, name, fields, 64);
    }
    tes_archetype_t at;
    CHECK_OK(tes_archetype_find(w, wide, 48, &at));
    tes_archetype_info_t info;
    CHECK_OK(tes_archetype_info(w, at, &info));
    CHECK(info.capacity >= 8);
    CHECK((uint64_t)info.capacity * (6u << 20) <= (64u << 20));
}
