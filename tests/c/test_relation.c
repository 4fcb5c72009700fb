/* Relations (TES_COMPONENT_RELATION): pairs (source, relation, target) in a side table. The
 * tes_pair_* calls, flag validation, EXCLUSIVE replacement, ACYCLIC refusal, CASCADE despawns
 * (deep, wide, cyclic) and the cleanup without it, the order of targets and sources and
 * tes_pair_place, the depth-first walk, pair data, the relation as a component (tes_add /
 * tes_remove / tes_has, query terms, Added / Changed / Removed), pair terms in queries, pair
 * change events, pair calls during a live iteration, and bad input changing nothing. Written
 * from tessera.h alone. */
#include "fixtures.h"

static const tes_field_desc_t value_fields[] = {{"v", TES_F64, 0}, {"n", TES_I32, 0}};
static const tes_field_desc_t weight_fields[] = {
    {"w", TES_F64, 0}, {"n", TES_I32, 0}, {"rgb", TES_U8, 3}};
static const tes_field_desc_t slot_fields[] = {{"slot", TES_U16, 0}};

/* Chunk component A, tag T, sparse S; relations:
 *   ChildOf  EXCLUSIVE | ACYCLIC | CASCADE, no fields (the parent / child hierarchy)
 *   Likes    plain, with pair data (w f64, n i32, rgb u8[3])
 *   Owns     CASCADE, not exclusive, not acyclic, no fields
 *   Next     EXCLUSIVE, not acyclic, with pair data (slot u16) */
typedef struct scene_t {
    tes_world_t *world;
    tes_component_t a, t, s;
    tes_component_t child_of, likes, owns, next;
} scene_t;

static scene_t make_scene(const tes_world_desc_t *desc) {
    scene_t s;
    s.world = fx_world(desc);
    s.a = fx_component(s.world, "A", value_fields, 2);
    s.t = fx_tag(s.world, "T");
    s.s = fx_sparse(s.world, "S", value_fields, 2);
    s.child_of = fx_relation(s.world, "ChildOf", NULL, 0,
                             TES_RELATION_EXCLUSIVE | TES_RELATION_ACYCLIC | TES_RELATION_CASCADE);
    s.likes = fx_relation(s.world, "Likes", weight_fields, 3, 0);
    s.owns = fx_relation(s.world, "Owns", NULL, 0, TES_RELATION_CASCADE);
    s.next = fx_relation(s.world, "Next", slot_fields, 1, TES_RELATION_EXCLUSIVE);
    return s;
}

static void validate(scene_t *s) {
    CHECK_OK(tes_world_validate(s->world));
}

static void pair_add(scene_t *s, tes_entity_t source, tes_component_t r, tes_entity_t target) {
    CHECK_OK(tes_pair_add(s->world, source, r, target));
}

static tes_entity_t pair_target(scene_t *s, tes_entity_t source, tes_component_t r) {
    tes_entity_t t = 0xdeadu;
    CHECK_OK(tes_pair_target(s->world, source, r, &t));
    return t;
}

static double pair_get(scene_t *s, tes_entity_t source, tes_component_t r, tes_entity_t target,
                       uint32_t field, uint32_t element) {
    double v = -12345;
    CHECK_OK(tes_pair_get_number(s->world, source, r, target, field, element, &v));
    return v;
}

static tes_entity_t *spawn_n(scene_t *s, const tes_component_t *set, uint32_t count, uint32_t n) {
    tes_entity_t *e = (tes_entity_t *)fx_malloc((n + 1) * sizeof *e);
    CHECK_OK(tes_spawn_batch(s->world, set, count, n, e));
    return e;
}

/* The walk from root: entities and depths, checking the capacity rule on the way. */
typedef struct walk_t {
    fx_entities_t *entities;
    uint32_t depths[4096];
} walk_t;

static walk_t *walk(scene_t *s, tes_component_t r, tes_entity_t root) {
    walk_t *w = (walk_t *)fx_malloc(sizeof *w);
    w->entities = fx_entities_new();
    uint32_t total = UINT32_MAX;
    CHECK_OK(tes_relation_walk(s->world, r, root, NULL, NULL, 0, &total));
    CHECK(total <= 4096);
    tes_entity_t *out = (tes_entity_t *)fx_malloc((total + 1) * sizeof *out);
    uint32_t again = 0;
    out[total] = 0xdeadbeefu;
    if (total < 4096) w->depths[total] = 0xdeadbeefu;
    CHECK_OK(tes_relation_walk(s->world, r, root, out, w->depths, total, &again));
    CHECK_EQ(again, total);
    CHECK_EQ(out[total], 0xdeadbeefu);
    if (total < 4096) CHECK_EQ(w->depths[total], 0xdeadbeefu);
    for (uint32_t i = 0; i < total; i++)
        fx_entities_push(w->entities, out[i]);
    /* Without depths: the same entities. */
    uint32_t third = 0;
    tes_entity_t *plain = (tes_entity_t *)fx_malloc((total + 1) * sizeof *plain);
    CHECK_OK(tes_relation_walk(s->world, r, root, plain, NULL, total, &third));
    CHECK_EQ(third, total);
    for (uint32_t i = 0; i < total; i++)
        CHECK_EQ(plain[i], out[i]);
    return w;
}

/* ---------------------------------------------------------------------------------------- */
/* Pair events                                                                               */
/* ---------------------------------------------------------------------------------------- */

typedef struct events_t {
    tes_pair_event_t items[256];
    uint32_t count;
} events_t;

/* tes_query_collect's pair events, checking the shape of the answer. */
static events_t *collect_events(scene_t *s, tes_query_t *q) {
    events_t *ev = (events_t *)fx_malloc(sizeof *ev);
    tes_collect_t out;
    memset(&out, 0xAB, sizeof out);
    CHECK_OK(tes_query_collect(s->world, q, &out));
    CHECK(out.pair_event_count == 0 ? out.pair_events == NULL : out.pair_events != NULL);
    CHECK(out.pair_event_count <= 256);
    for (uint32_t i = 0; i < out.pair_event_count; i++)
        ev->items[i] = out.pair_events[i];
    ev->count = out.pair_event_count;
    return ev;
}

/* One run by hand: tes_iter_pair_events of `r`, read before the first chunk and checked to stay
 * the same while the run goes on. */
static events_t *iter_events(scene_t *s, tes_query_t *q, tes_component_t r) {
    events_t *ev = (events_t *)fx_malloc(sizeof *ev);
    tes_iter_t it;
    CHECK_OK(tes_query_iter(s->world, q, &it));
    const tes_pair_event_t *items = NULL;
    uint32_t count = 12345;
    CHECK_OK(tes_iter_pair_events(&it, r, &items, &count));
    CHECK(count == 0 || items != NULL);
    CHECK(count <= 256);
    for (uint32_t i = 0; i < count; i++)
        ev->items[i] = items[i];
    ev->count = count;
    bool first = true;
    while (tes_iter_next(&it)) {
        FX_CHECK_ITER_CHUNK(s->world, &it);
        if (!first) continue;
        first = false;
        CHECK_OK(tes_iter_pair_events(&it, r, &items, &count));
        CHECK_EQ(count, ev->count);
        for (uint32_t i = 0; i < count; i++) {
            CHECK_EQ(items[i].source, ev->items[i].source);
            CHECK_EQ(items[i].kind, ev->items[i].kind);
        }
    }
    return ev;
}

static void check_events_at(int line, const events_t *got, const tes_pair_event_t *want,
                            uint32_t n) {
    static const char *const kinds[] = {"?", "ADDED", "REMOVED", "CHANGED"};
    bool same = got->count == n;
    for (uint32_t i = 0; same && i < n; i++) {
        same = got->items[i].source == want[i].source && got->items[i].target == want[i].target &&
               got->items[i].relation == want[i].relation && got->items[i].kind == want[i].kind;
    }
    if (same) return;
    for (uint32_t i = 0; i < got->count; i++) {
        const tes_pair_event_t *e = &got->items[i];
        printf("  got[%u]  = (%u, r%u, %u) %s\n", (unsigned)i, (unsigned)e->source,
               (unsigned)e->relation, (unsigned)e->target, e->kind <= 3 ? kinds[e->kind] : "?");
    }
    for (uint32_t i = 0; i < n; i++) {
        printf("  want[%u] = (%u, r%u, %u) %s\n", (unsigned)i, (unsigned)want[i].source,
               (unsigned)want[i].relation, (unsigned)want[i].target,
               want[i].kind <= 3 ? kinds[want[i].kind] : "?");
    }
    harness_fail(__FILE__, line, "pair events: got %u, expected %u (listed above)",
                 (unsigned)got->count, (unsigned)n);
}
/* CHECK_EVENTS(events, EV(s, r, t, KIND), ...): exactly these, in this order. */
#define EV(source, relation, target, kind) \
    ((tes_pair_event_t){(source), (target), (relation), TES_PAIR_##kind})
#define CHECK_EVENTS(events, ...)                                  \
    check_events_at(                                               \
        __LINE__, events, (const tes_pair_event_t[]){__VA_ARGS__}, \
        (uint32_t)(sizeof((tes_pair_event_t[]){__VA_ARGS__}) / sizeof(tes_pair_event_t)))
#define CHECK_NO_EVENTS(events) check_events_at(__LINE__, events, NULL, 0)

static tes_query_t *pair_consumer(scene_t *s, tes_component_t r) {
    return fx_query(s->world, &(tes_query_desc_t){.pair_changes = &r, .pair_change_count = 1});
}

/* One run of a removals query: what tes_iter_removed gives for c. */
static fx_entities_t *run_removed(scene_t *s, tes_query_t *q, tes_component_t c) {
    fx_entities_t *out = fx_entities_new();
    tes_iter_t it;
    CHECK_OK(tes_query_iter(s->world, q, &it));
    const tes_entity_t *entities = NULL;
    uint32_t count = 12345;
    CHECK_OK(tes_iter_removed(&it, c, &entities, &count));
    for (uint32_t i = 0; i < count; i++)
        fx_entities_push(out, entities[i]);
    while (tes_iter_next(&it)) {
    }
    return out;
}

/* ---------------------------------------------------------------------------------------- */
/* Registration                                                                              */
/* ---------------------------------------------------------------------------------------- */

TEST(relations_register_with_their_flags) {
    scene_t s = make_scene(NULL);
    tes_component_info_t info;
    CHECK_OK(tes_component_info(s.world, s.child_of, &info));
    CHECK_EQ(info.flags, TES_COMPONENT_RELATION | TES_RELATION_EXCLUSIVE | TES_RELATION_ACYCLIC |
                             TES_RELATION_CASCADE);
    CHECK_EQ(info.field_count, 0);
    CHECK_OK(tes_component_info(s.world, s.likes, &info));
    CHECK_EQ(info.flags, TES_COMPONENT_RELATION);
    CHECK_EQ(info.field_count, 3);
    CHECK_EQ(info.row_bytes, 8 + 4 + 3); /* per pair */
    CHECK_OK(tes_component_info(s.world, s.owns, &info));
    CHECK_EQ(info.flags, TES_COMPONENT_RELATION | TES_RELATION_CASCADE);
    CHECK_OK(tes_component_info(s.world, s.next, &info));
    CHECK_EQ(info.flags, TES_COMPONENT_RELATION | TES_RELATION_EXCLUSIVE);
    tes_component_t found = 99;
    CHECK_OK(tes_component_lookup(s.world, "Likes", &found));
    CHECK_EQ(found, s.likes);
    uint32_t field = 99;
    CHECK_OK(tes_field_lookup(s.world, s.likes, "rgb", &field));
    CHECK_EQ(field, 2);
}

TEST(relation_flags_are_validated) {
    scene_t s = make_scene(NULL);
    const uint32_t bad[] = {
        TES_RELATION_EXCLUSIVE,
        TES_RELATION_ACYCLIC,
        TES_RELATION_CASCADE,
        TES_RELATION_EXCLUSIVE | TES_RELATION_ACYCLIC,
        TES_RELATION_EXCLUSIVE | TES_RELATION_CASCADE,
        TES_RELATION_EXCLUSIVE | TES_RELATION_ACYCLIC | TES_RELATION_CASCADE,
        TES_COMPONENT_RELATION | TES_RELATION_ACYCLIC, /* ACYCLIC without EXCLUSIVE */
        TES_COMPONENT_RELATION | TES_RELATION_ACYCLIC | TES_RELATION_CASCADE,
        TES_COMPONENT_RELATION | TES_COMPONENT_CHANGE_BY_VALUE, /* pair writes are events */
        TES_COMPONENT_RELATION | TES_RELATION_EXCLUSIVE | 0x100u,
        128u, /* unknown */
        0xffffffffu,
    };
    fx_snapshot_t *before = fx_snapshot_of(s.world);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        for (uint32_t fields = 0; fields <= 1; fields++) {
            tes_component_desc_t desc = {.name = "Rel",
                                         .fields = fields ? slot_fields : NULL,
                                         .field_count = fields,
                                         .flags = bad[i]};
            tes_component_t c = 77;
            tes_result_t r = tes_component_register(s.world, &desc, &c);
            if (r != TES_ERR_BAD_SCHEMA) {
                harness_fail(__FILE__, __LINE__, "flags %#x (%u fields): %s, expected BAD_SCHEMA",
                             (unsigned)bad[i], (unsigned)fields, tes_result_name(r));
            }
            FX_CHECK_UNCHANGED(before, s.world);
        }
    }
    /* Every valid combination registers. */
    const uint32_t good[] = {
        TES_COMPONENT_RELATION,
        TES_COMPONENT_RELATION | TES_RELATION_EXCLUSIVE,
        TES_COMPONENT_RELATION | TES_RELATION_CASCADE,
        TES_COMPONENT_RELATION | TES_RELATION_EXCLUSIVE | TES_RELATION_CASCADE,
        TES_COMPONENT_RELATION | TES_RELATION_EXCLUSIVE | TES_RELATION_ACYCLIC,
    };
    char name[16];
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        snprintf(name, sizeof name, "Rel%u", (unsigned)i);
        tes_component_t c = fx_relation(s.world, name, slot_fields, 1, 0);
        (void)c;
        snprintf(name, sizeof name, "Good%u", (unsigned)i);
        c = fx_component_flags(s.world, name, NULL, 0, good[i]);
        tes_component_info_t info;
        CHECK_OK(tes_component_info(s.world, c, &info));
        CHECK_EQ(info.flags, good[i]);
    }
}

/* ---------------------------------------------------------------------------------------- */
/* Adding, removing, asking                                                                  */
/* ---------------------------------------------------------------------------------------- */

TEST(pair_add_has_remove) {
    scene_t s = make_scene(NULL);
    tes_entity_t a = fx_spawn(s.world, FX_IDS(s.a));
    tes_entity_t b = fx_spawn(s.world, FX_IDS(s.a));
    tes_entity_t c = fx_spawn(s.world, NULL, 0);
    CHECK(!fx_has(s.world, a, s.likes));
    CHECK(!fx_pair_has(s.world, a, s.likes, b));
    pair_add(&s, a, s.likes, b);
    CHECK(fx_pair_has(s.world, a, s.likes, b));
    CHECK(!fx_pair_has(s.world, b, s.likes, a)); /* pairs have a direction */
    CHECK(!fx_pair_has(s.world, a, s.likes, c));
    CHECK(!fx_pair_has(s.world, a, s.owns, b)); /* and a relation */
    CHECK(fx_has(s.world, a, s.likes));
    CHECK(!fx_has(s.world, b, s.likes)); /* a target does not have the relation */
    /* Already there: nothing happens, the data stays. */
    CHECK_OK(tes_pair_set_number(s.world, a, s.likes, b, 0, 0, 1.5));
    pair_add(&s, a, s.likes, b);
    CHECK_EQ(fx_targets(s.world, a, s.likes)->count, 1);
    CHECK_NUM_EQ(pair_get(&s, a, s.likes, b, 0, 0), 1.5);
    pair_add(&s, a, s.likes, c);
    FX_CHECK_ORDER(fx_targets(s.world, a, s.likes), b, c);
    CHECK_OK(tes_pair_remove(s.world, a, s.likes, b));
    CHECK(!fx_pair_has(s.world, a, s.likes, b));
    CHECK(fx_has(s.world, a, s.likes));
    CHECK_OK(tes_pair_remove(s.world, a, s.likes, b)); /* not there: nothing happens */
    CHECK_OK(tes_pair_remove(s.world, a, s.likes, c));
    CHECK(!fx_has(s.world, a, s.likes));
    FX_CHECK_EMPTY(fx_targets(s.world, a, s.likes));
    FX_CHECK_EMPTY(fx_sources(s.world, s.likes, b));
    CHECK_EQ(pair_target(&s, a, s.likes), 0);
    /* Back: zeroed data. */
    pair_add(&s, a, s.likes, b);
    CHECK_NUM_EQ(pair_get(&s, a, s.likes, b, 0, 0), 0);
    validate(&s);
}

TEST(pairs_move_nothing_and_create_no_archetype) {
    scene_t s = make_scene(&(tes_world_desc_t){.chunk_bytes = 1024});
    tes_entity_t *e = spawn_n(&s, FX_IDS(s.a), 200);
    tes_entity_t hub = fx_spawn(s.world, FX_IDS(s.t));
    tes_location_t loc[200];
    for (int i = 0; i < 200; i++)
        loc[i] = fx_check_location(s.world, e[i]);
    uint32_t archetypes = tes_archetype_count(s.world);
    uint32_t layout = tes_world_layout(s.world);
    uint32_t generation = fx_stats(s.world).graph_generation;
    for (int i = 0; i < 200; i++) {
        pair_add(&s, e[i], s.likes, hub);
        pair_add(&s, hub, s.likes, e[i]); /* a thousand targets make no archetype */
        if (i > 0) pair_add(&s, e[i], s.child_of, e[i - 1]);
        if (i % 3 == 0) pair_add(&s, e[i], s.owns, e[(i * 7 + 1) % 200]);
    }
    CHECK_EQ(tes_archetype_count(s.world), archetypes);
    CHECK_EQ(tes_world_layout(s.world), layout);
    CHECK_EQ(fx_stats(s.world).graph_generation, generation);
    for (int i = 0; i < 200; i++) {
        tes_location_t now = fx_check_location(s.world, e[i]);
        CHECK_EQ(now.archetype, loc[i].archetype);
        CHECK_EQ(now.chunk, loc[i].chunk);
        CHECK_EQ(now.row, loc[i].row);
    }
    CHECK_EQ(fx_targets(s.world, hub, s.likes)->count, 200);
    CHECK_EQ(fx_sources(s.world, s.likes, hub)->count, 200);
    for (int i = 0; i < 200; i += 2)
        CHECK_OK(tes_pair_remove(s.world, hub, s.likes, e[i]));
    CHECK_OK(tes_remove(s.world, e[5], s.likes));
    CHECK_EQ(tes_archetype_count(s.world), archetypes);
    CHECK_EQ(tes_world_layout(s.world), layout);
    validate(&s);
    fx_check_all_packed(s.world);
}

TEST(targets_keep_their_add_order_and_sources_theirs) {
    scene_t s = make_scene(NULL);
    tes_entity_t *e = spawn_n(&s, FX_IDS(s.a), 8);
    tes_entity_t a = e[0], b = e[1], c = e[2], d = e[3], x = e[4], y = e[5], z = e[6];
    pair_add(&s, a, s.likes, d);
    pair_add(&s, a, s.likes, b);
    pair_add(&s, a, s.likes, c);
    FX_CHECK_ORDER(fx_targets(s.world, a, s.likes), d, b, c);
    CHECK_EQ(pair_target(&s, a, s.likes), d); /* the first */
    CHECK_OK(tes_pair_remove(s.world, a, s.likes, b));
    FX_CHECK_ORDER(fx_targets(s.world, a, s.likes), d, c);
    pair_add(&s, a, s.likes, b);
    FX_CHECK_ORDER(fx_targets(s.world, a, s.likes), d, c, b);
    CHECK_OK(tes_pair_remove(s.world, a, s.likes, d));
    CHECK_EQ(pair_target(&s, a, s.likes), c);
    pair_add(&s, z, s.likes, d);
    pair_add(&s, x, s.likes, d);
    pair_add(&s, y, s.likes, d);
    FX_CHECK_ORDER(fx_sources(s.world, s.likes, d), z, x, y);
    CHECK_OK(tes_pair_remove(s.world, x, s.likes, d));
    FX_CHECK_ORDER(fx_sources(s.world, s.likes, d), z, y);
    pair_add(&s, x, s.likes, d);
    pair_add(&s, a, s.likes, d);
    FX_CHECK_ORDER(fx_sources(s.world, s.likes, d), z, y, x, a);
    FX_CHECK_ORDER(fx_sources(s.world, s.likes, c), a);
    /* Relations are separate tables. */
    pair_add(&s, y, s.owns, d);
    pair_add(&s, y, s.next, d);
    FX_CHECK_ORDER(fx_sources(s.world, s.owns, d), y);
    FX_CHECK_ORDER(fx_sources(s.world, s.likes, d), z, y, x, a);
    CHECK_OK(tes_pair_remove(s.world, y, s.owns, d));
    CHECK(fx_pair_has(s.world, y, s.likes, d) && fx_pair_has(s.world, y, s.next, d));
}

TEST(lists_follow_the_capacity_rule) {
    scene_t s = make_scene(NULL);
    tes_entity_t *e = spawn_n(&s, FX_IDS(s.a), 7);
    for (int i = 1; i < 6; i++)
        pair_add(&s, e[0], s.likes, e[i]);
    for (int i = 1; i < 6; i++)
        pair_add(&s, e[i], s.owns, e[6]);
    tes_entity_t out[8];
    uint32_t count = 0;
    for (int i = 0; i < 8; i++)
        out[i] = 0xabcdu;
    CHECK_OK(tes_pair_targets(s.world, e[0], s.likes, out, 2, &count));
    CHECK_EQ(count, 5);
    CHECK_EQ(out[0], e[1]);
    CHECK_EQ(out[1], e[2]);
    CHECK_EQ(out[2], 0xabcdu);
    CHECK_OK(tes_pair_targets(s.world, e[0], s.likes, out, 8, &count));
    CHECK_EQ(count, 5);
    CHECK_EQ(out[4], e[5]);
    CHECK_EQ(out[5], 0xabcdu);
    CHECK_OK(tes_pair_targets(s.world, e[0], s.likes, NULL, 0, &count));
    CHECK_EQ(count, 5);
    CHECK_OK(tes_pair_targets(s.world, e[1], s.likes, NULL, 0, &count));
    CHECK_EQ(count, 0);
    for (int i = 0; i < 8; i++)
        out[i] = 0xabcdu;
    CHECK_OK(tes_pair_sources(s.world, s.owns, e[6], out, 3, &count));
    CHECK_EQ(count, 5);
    CHECK_EQ(out[2], e[3]);
    CHECK_EQ(out[3], 0xabcdu);
    CHECK_OK(tes_pair_sources(s.world, s.owns, e[6], NULL, 0, &count));
    CHECK_EQ(count, 5);
    tes_entity_t src[8], dst[8];
    CHECK_OK(tes_relation_pairs(s.world, s.owns, src, dst, 2, &count));
    CHECK_EQ(count, 5);
    CHECK_OK(tes_relation_pairs(s.world, s.owns, NULL, NULL, 0, &count));
    CHECK_EQ(count, 5);
    tes_entity_t walked[8];
    uint32_t depths[8];
    CHECK_OK(tes_relation_walk(s.world, s.owns, e[6], walked, depths, 1, &count));
    CHECK_EQ(count, 5);
    CHECK_EQ(walked[0], e[1]);
    CHECK_EQ(depths[0], 1);
}

/* ---------------------------------------------------------------------------------------- */
/* EXCLUSIVE and ACYCLIC                                                                     */
/* ---------------------------------------------------------------------------------------- */

TEST(exclusive_add_replaces_the_target) {
    scene_t s = make_scene(NULL);
    tes_entity_t *e = spawn_n(&s, FX_IDS(s.a), 4);
    tes_entity_t c = e[0], p1 = e[1], p2 = e[2];
    pair_add(&s, c, s.next, p1);
    CHECK_OK(tes_pair_set_number(s.world, c, s.next, p1, 0, 0, 9));
    pair_add(&s, c, s.next, p1); /* the same pair: nothing happens */
    CHECK_NUM_EQ(pair_get(&s, c, s.next, p1, 0, 0), 9);
    pair_add(&s, c, s.next, p2);
    FX_CHECK_ORDER(fx_targets(s.world, c, s.next), p2);
    CHECK(!fx_pair_has(s.world, c, s.next, p1));
    FX_CHECK_EMPTY(fx_sources(s.world, s.next, p1));
    FX_CHECK_ORDER(fx_sources(s.world, s.next, p2), c);
    CHECK_NUM_EQ(pair_get(&s, c, s.next, p2, 0, 0), 0); /* a new pair: zeroed */
    CHECK_EQ(pair_target(&s, c, s.next), p2);
    CHECK(fx_has(s.world, c, s.next));
    /* ChildOf is exclusive too: re-parenting. */
    pair_add(&s, c, s.child_of, p1);
    pair_add(&s, c, s.child_of, p2);
    pair_add(&s, c, s.child_of, e[3]);
    FX_CHECK_ORDER(fx_targets(s.world, c, s.child_of), e[3]);
    FX_CHECK_EMPTY(fx_sources(s.world, s.child_of, p1));
    FX_CHECK_EMPTY(fx_sources(s.world, s.child_of, p2));
    /* Another relation of the source is untouched. */
    pair_add(&s, c, s.likes, p1);
    pair_add(&s, c, s.likes, p2);
    pair_add(&s, c, s.next, p1);
    FX_CHECK_ORDER(fx_targets(s.world, c, s.likes), p1, p2);
    validate(&s);
}

TEST(acyclic_refuses_self_and_ancestors_and_keeps_the_old_parent) {
    scene_t s = make_scene(NULL);
    tes_entity_t *e = spawn_n(&s, FX_IDS(s.a), 6);
    tes_entity_t root = e[0], a = e[1], b = e[2], c = e[3], other = e[4];
    pair_add(&s, a, s.child_of, root);
    pair_add(&s, b, s.child_of, a);
    pair_add(&s, c, s.child_of, b);
    fx_snapshot_t *before = fx_snapshot_full_of(s.world);
    CHECK_ERR(tes_pair_add(s.world, other, s.child_of, other), TES_ERR_CYCLE);
    CHECK_ERR(tes_pair_add(s.world, a, s.child_of, a), TES_ERR_CYCLE);
    CHECK_ERR(tes_pair_add(s.world, a, s.child_of, c), TES_ERR_CYCLE);
    CHECK_ERR(tes_pair_add(s.world, a, s.child_of, b), TES_ERR_CYCLE);
    CHECK_ERR(tes_pair_add(s.world, root, s.child_of, c), TES_ERR_CYCLE);
    CHECK_ERR(tes_pair_add(s.world, b, s.child_of, c), TES_ERR_CYCLE);
    FX_CHECK_UNCHANGED_FULL_STRICT(before, s.world);
    CHECK_EQ(pair_target(&s, a, s.child_of), root); /* not replaced by the refused pair */
    /* Not cycles: moving a subtree elsewhere, making a child a sibling. */
    pair_add(&s, root, s.child_of, other);
    pair_add(&s, c, s.child_of, a);
    FX_CHECK_ORDER(fx_sources(s.world, s.child_of, a), b, c);
    pair_add(&s, b, s.child_of, c); /* c is no longer below b */
    FX_CHECK_ORDER(fx_sources(s.world, s.child_of, c), b);
    CHECK_ERR(tes_pair_add(s.world, a, s.child_of, b), TES_ERR_CYCLE);
    CHECK_ERR(tes_pair_add(s.world, other, s.child_of, b), TES_ERR_CYCLE);
    /* A not-acyclic exclusive relation takes cycles. */
    pair_add(&s, a, s.next, b);
    pair_add(&s, b, s.next, a);
    pair_add(&s, c, s.next, c);
    CHECK(fx_pair_has(s.world, c, s.next, c));
    validate(&s);
}

/* ---------------------------------------------------------------------------------------- */
/* Despawns: CASCADE and cleanup                                                             */
/* ---------------------------------------------------------------------------------------- */

TEST(cascade_despawns_a_deep_chain) {
    scene_t s = make_scene(&(tes_world_desc_t){.chunk_bytes = 1024});
    enum { N = 3000 };
    tes_entity_t *e = spawn_n(&s, FX_IDS(s.a), N);
    for (int i = 1; i < N; i++)
        pair_add(&s, e[i], s.child_of, e[i - 1]);
    tes_entity_t bystander = fx_spawn(s.world, FX_IDS(s.a));
    pair_add(&s, bystander, s.likes, e[N - 1]);
    CHECK_EQ(walk(&s, s.child_of, e[0])->entities->count, N - 1);
    /* Cut the chain in the middle first: the lower half goes, the upper half stays. */
    CHECK_OK(tes_despawn(s.world, e[N / 2]));
    for (int i = 0; i < N; i++)
        CHECK_EQ(tes_is_alive(s.world, e[i]), i < N / 2);
    CHECK_EQ(fx_stats(s.world).entity_count, N / 2 + 1);
    CHECK(!fx_has(s.world, bystander, s.likes)); /* its only target died */
    FX_CHECK_EMPTY(fx_sources(s.world, s.child_of, e[N / 2 - 1]));
    validate(&s);
    CHECK_OK(tes_despawn(s.world, e[0]));
    CHECK_EQ(fx_stats(s.world).entity_count, 1);
    CHECK(tes_is_alive(s.world, bystander));
    validate(&s);
    fx_check_all_packed(s.world);
}

TEST(cascade_despawns_a_wide_tree_and_spares_the_rest) {
    scene_t s = make_scene(&(tes_world_desc_t){.chunk_bytes = 1024});
    tes_entity_t root = fx_spawn(s.world, FX_IDS(s.a));
    tes_entity_t sibling = fx_spawn(s.world, FX_IDS(s.a));
    tes_entity_t *kids = spawn_n(&s, FX_IDS(s.a, s.t), 400);
    tes_entity_t *grandkids = spawn_n(&s, FX_IDS(s.s), 1200);
    for (int i = 0; i < 400; i++) {
        pair_add(&s, kids[i], s.child_of, root);
        for (int k = 0; k < 3; k++)
            pair_add(&s, grandkids[i * 3 + k], s.child_of, kids[i]);
    }
    /* Other links in and out of the tree. */
    tes_entity_t fan = fx_spawn(s.world, FX_IDS(s.a));
    pair_add(&s, fan, s.likes, kids[7]);
    pair_add(&s, fan, s.likes, sibling);
    pair_add(&s, grandkids[5], s.likes, sibling);
    pair_add(&s, sibling, s.child_of, fan);
    CHECK_EQ(walk(&s, s.child_of, root)->entities->count, 1600);
    tes_query_t *removed = fx_query(s.world, &(tes_query_desc_t){.removed = FX_IDS(s.child_of)});
    CHECK_OK(tes_despawn(s.world, root));
    for (int i = 0; i < 400; i++)
        CHECK(!tes_is_alive(s.world, kids[i]));
    for (int i = 0; i < 1200; i++)
        CHECK(!tes_is_alive(s.world, grandkids[i]));
    CHECK(tes_is_alive(s.world, sibling) && tes_is_alive(s.world, fan));
    CHECK_EQ(fx_stats(s.world).entity_count, 2);
    FX_CHECK_ORDER(fx_targets(s.world, fan, s.likes), sibling);
    FX_CHECK_ORDER(fx_sources(s.world, s.likes, sibling), fan);
    CHECK(fx_pair_has(s.world, sibling, s.child_of, fan));
    uint32_t count = 99;
    CHECK_OK(tes_relation_pairs(s.world, s.child_of, NULL, NULL, 0, &count));
    CHECK_EQ(count, 1);
    /* Every despawned child lost ChildOf: 1600 removals. */
    CHECK_EQ(run_removed(&s, removed, s.child_of)->count, 1600);
    validate(&s);
    fx_check_all_packed(s.world);
}

TEST(cascade_through_a_cycle_terminates_and_despawns_every_member) {
    scene_t s = make_scene(NULL);
    tes_entity_t *e = spawn_n(&s, FX_IDS(s.a), 8);
    tes_entity_t a = e[0], b = e[1], c = e[2], d = e[3], keep = e[4], x = e[5];
    /* a -> b -> c -> a (source -> target), d hangs below c, x owns both c and keep. */
    pair_add(&s, a, s.owns, b);
    pair_add(&s, b, s.owns, c);
    pair_add(&s, c, s.owns, a);
    pair_add(&s, d, s.owns, c);
    pair_add(&s, keep, s.likes, a);
    pair_add(&s, x, s.owns, keep);
    CHECK_OK(tes_despawn(s.world, a));
    CHECK(!tes_is_alive(s.world, a) && !tes_is_alive(s.world, b) && !tes_is_alive(s.world, c));
    CHECK(!tes_is_alive(s.world, d));
    CHECK(tes_is_alive(s.world, keep));
    CHECK(!fx_has(s.world, keep, s.likes));
    CHECK(tes_is_alive(s.world, x)); /* x is a source of keep, not of the cycle */
    validate(&s);
    /* A self pair is a cycle too. */
    pair_add(&s, e[6], s.owns, e[6]);
    pair_add(&s, e[7], s.owns, e[6]);
    CHECK_OK(tes_despawn(s.world, e[6]));
    CHECK(!tes_is_alive(s.world, e[6]) && !tes_is_alive(s.world, e[7]));
    /* A source with two targets dies with either; the other target loses it. */
    tes_entity_t t1 = fx_spawn(s.world, NULL, 0), t2 = fx_spawn(s.world, NULL, 0);
    tes_entity_t both = fx_spawn(s.world, NULL, 0);
    pair_add(&s, both, s.owns, t1);
    pair_add(&s, both, s.owns, t2);
    CHECK_OK(tes_despawn(s.world, t1));
    CHECK(!tes_is_alive(s.world, both));
    CHECK(tes_is_alive(s.world, t2));
    FX_CHECK_EMPTY(fx_sources(s.world, s.owns, t2));
    CHECK_EQ(fx_stats(s.world).entity_count, 3); /* keep, x, t2 */
    validate(&s);
}

TEST(cascade_follows_only_cascade_relations) {
    scene_t s = make_scene(NULL);
    tes_entity_t *e = spawn_n(&s, FX_IDS(s.a), 6);
    tes_entity_t t = e[0], child = e[1], fan = e[2], follower = e[3], grandchild = e[4];
    pair_add(&s, child, s.child_of, t);
    pair_add(&s, grandchild, s.child_of, child);
    pair_add(&s, fan, s.likes, t);
    pair_add(&s, follower, s.next, child);
    pair_add(&s, child, s.likes, fan); /* the dying child's own pairs go too */
    CHECK_OK(tes_despawn(s.world, t));
    CHECK(!tes_is_alive(s.world, child) && !tes_is_alive(s.world, grandchild));
    CHECK(tes_is_alive(s.world, fan) && tes_is_alive(s.world, follower));
    CHECK(!fx_has(s.world, fan, s.likes));
    CHECK(!fx_has(s.world, follower, s.next));
    FX_CHECK_EMPTY(fx_sources(s.world, s.likes, fan));
    uint32_t count = 99;
    CHECK_OK(tes_relation_pairs(s.world, s.likes, NULL, NULL, 0, &count));
    CHECK_EQ(count, 0);
    validate(&s);
}

TEST(despawn_batch_cascades_and_cleans_up) {
    scene_t s = make_scene(NULL);
    tes_entity_t *e = spawn_n(&s, FX_IDS(s.a), 10);
    pair_add(&s, e[1], s.child_of, e[0]);
    pair_add(&s, e[2], s.child_of, e[1]);
    pair_add(&s, e[4], s.child_of, e[3]);
    pair_add(&s, e[5], s.likes, e[3]);
    pair_add(&s, e[5], s.likes, e[6]);
    /* e[1] is both listed and a cascade victim of e[0]. */
    tes_entity_t list[3] = {e[0], e[3], e[1]};
    CHECK_OK(tes_despawn_batch(s.world, list, 3));
    for (int i = 0; i < 5; i++)
        CHECK(!tes_is_alive(s.world, e[i]));
    for (int i = 5; i < 10; i++)
        CHECK(tes_is_alive(s.world, e[i]));
    FX_CHECK_ORDER(fx_targets(s.world, e[5], s.likes), e[6]);
    CHECK_EQ(fx_stats(s.world).entity_count, 5);
    validate(&s);
}

TEST(despawned_target_loses_its_pairs_and_sources_lose_the_relation_with_the_last) {
    scene_t s = make_scene(NULL);
    tes_entity_t *e = spawn_n(&s, FX_IDS(s.a), 5);
    tes_entity_t a = e[0], b = e[1], t = e[2], u = e[3];
    tes_query_t *removed = fx_query(s.world, &(tes_query_desc_t){.removed = FX_IDS(s.likes)});
    pair_add(&s, a, s.likes, t);
    pair_add(&s, a, s.likes, u);
    pair_add(&s, b, s.likes, t);
    pair_add(&s, t, s.likes, u); /* t is a source too */
    CHECK_OK(tes_pair_set_number(s.world, a, s.likes, u, 0, 0, 5));
    CHECK_OK(tes_despawn(s.world, t));
    CHECK(tes_is_alive(s.world, a) && tes_is_alive(s.world, b)); /* no cascade */
    FX_CHECK_ORDER(fx_targets(s.world, a, s.likes), u);
    CHECK_NUM_EQ(pair_get(&s, a, s.likes, u, 0, 0), 5);
    CHECK(fx_has(s.world, a, s.likes));
    FX_CHECK_EMPTY(fx_targets(s.world, b, s.likes));
    CHECK(!fx_has(s.world, b, s.likes));
    FX_CHECK_ORDER(fx_sources(s.world, s.likes, u), a);
    /* Removed on the relation: b lost its last pair, t (a source) died; a kept one. */
    fx_entities_t *got = run_removed(&s, removed, s.likes);
    FX_CHECK_SAME_ENTITIES(got, ((tes_entity_t[]){b, t}), 2);
    tes_entity_t src[4], dst[4];
    uint32_t count = 0;
    CHECK_OK(tes_relation_pairs(s.world, s.likes, src, dst, 4, &count));
    CHECK_EQ(count, 1);
    CHECK_EQ(src[0], a);
    CHECK_EQ(dst[0], u);
    validate(&s);
}

TEST(despawned_source_loses_its_pairs) {
    scene_t s = make_scene(NULL);
    tes_entity_t *e = spawn_n(&s, FX_IDS(s.a), 5);
    pair_add(&s, e[0], s.likes, e[1]);
    pair_add(&s, e[2], s.likes, e[1]);
    pair_add(&s, e[0], s.child_of, e[3]);
    pair_add(&s, e[0], s.next, e[3]);
    pair_add(&s, e[4], s.likes, e[1]);
    CHECK_OK(tes_despawn(s.world, e[0]));
    FX_CHECK_ORDER(fx_sources(s.world, s.likes, e[1]), e[2], e[4]);
    FX_CHECK_EMPTY(fx_sources(s.world, s.child_of, e[3]));
    FX_CHECK_EMPTY(fx_sources(s.world, s.next, e[3]));
    CHECK(tes_is_alive(s.world, e[3]));
    validate(&s);
}

TEST(a_recycled_slot_starts_without_the_old_entity_s_pairs) {
    scene_t s = make_scene(&(tes_world_desc_t){.min_free_indices = 1});
    tes_entity_t a = fx_spawn(s.world, NULL, 0);
    tes_entity_t t = fx_spawn(s.world, NULL, 0);
    tes_entity_t filler = fx_spawn(s.world, NULL, 0);
    pair_add(&s, a, s.likes, t);
    pair_add(&s, t, s.likes, a);
    CHECK_OK(tes_despawn(s.world, a));
    CHECK_OK(tes_despawn(s.world, filler));
    tes_entity_t reused = 0;
    for (int i = 0; i < 8 && !reused; i++) {
        tes_entity_t x = fx_spawn(s.world, NULL, 0);
        if (tes_entity_index(x) == tes_entity_index(a)) reused = x;
    }
    CHECK(reused != 0);
    CHECK(!fx_has(s.world, reused, s.likes));
    FX_CHECK_EMPTY(fx_targets(s.world, reused, s.likes));
    FX_CHECK_EMPTY(fx_sources(s.world, s.likes, reused));
    CHECK(!fx_pair_has(s.world, t, s.likes, reused));
    CHECK(!fx_has(s.world, t, s.likes));
    validate(&s);
}

/* ---------------------------------------------------------------------------------------- */
/* The relation as a component                                                               */
/* ---------------------------------------------------------------------------------------- */

TEST(add_names_no_target_and_remove_takes_every_pair) {
    scene_t s = make_scene(NULL);
    tes_entity_t *e = spawn_n(&s, FX_IDS(s.a), 5);
    fx_snapshot_t *before = fx_snapshot_full_of(s.world);
    CHECK_ERR(tes_add(s.world, e[0], s.likes), TES_ERR_NEEDS_TARGET);
    CHECK_ERR(tes_add(s.world, e[0], s.child_of), TES_ERR_NEEDS_TARGET);
    tes_entity_t x = 0;
    CHECK_ERR(tes_spawn(s.world, FX_IDS(s.a, s.likes), &x), TES_ERR_NEEDS_TARGET);
    CHECK_ERR(tes_spawn_batch(s.world, FX_IDS(s.owns), 4, NULL), TES_ERR_NEEDS_TARGET);
    FX_CHECK_UNCHANGED_FULL(before, s.world);
    pair_add(&s, e[0], s.likes, e[1]);
    pair_add(&s, e[0], s.likes, e[2]);
    pair_add(&s, e[0], s.next, e[2]);
    pair_add(&s, e[3], s.likes, e[0]);
    CHECK(fx_has(s.world, e[0], s.likes));
    CHECK_OK(tes_remove(s.world, e[0], s.likes));
    CHECK(!fx_has(s.world, e[0], s.likes));
    FX_CHECK_EMPTY(fx_targets(s.world, e[0], s.likes));
    FX_CHECK_EMPTY(fx_sources(s.world, s.likes, e[1]));
    FX_CHECK_EMPTY(fx_sources(s.world, s.likes, e[2]));
    CHECK(fx_pair_has(s.world, e[0], s.next, e[2]));  /* another relation */
    CHECK(fx_pair_has(s.world, e[3], s.likes, e[0])); /* e[0] as a target */
    CHECK_OK(tes_remove(s.world, e[0], s.likes));     /* has none: nothing happens */
    CHECK_OK(tes_remove(s.world, e[1], s.child_of));
    validate(&s);
}

TEST(relation_field_calls_without_a_target_fail_and_change_nothing) {
    scene_t s = make_scene(NULL);
    tes_entity_t a = fx_spawn(s.world, FX_IDS(s.a));
    tes_entity_t b = fx_spawn(s.world, FX_IDS(s.a));
    pair_add(&s, a, s.likes, b);
    fx_snapshot_t *before = fx_snapshot_full_of(s.world);
    double d = 0;
    void *p = NULL;
    CHECK(tes_get_number(s.world, a, s.likes, 0, 0, &d) != TES_OK);
    CHECK(tes_set_number(s.world, a, s.likes, 0, 0, 1) != TES_OK);
    CHECK(tes_set(s.world, a, s.likes, 0, &d, sizeof d) != TES_OK);
    CHECK(tes_init_number(s.world, a, s.likes, 0, 0, 1) != TES_OK);
    CHECK(tes_field_ptr(s.world, a, s.likes, 0, &p) != TES_OK);
    FX_CHECK_UNCHANGED_FULL_STRICT(before, s.world);
}

TEST(chunk_and_archetype_calls_refuse_relations) {
    scene_t s = make_scene(NULL);
    tes_entity_t a = fx_spawn(s.world, FX_IDS(s.a));
    tes_entity_t b = fx_spawn(s.world, FX_IDS(s.a));
    pair_add(&s, a, s.likes, b);
    tes_archetype_t arch = fx_archetype_of(s.world, a);
    fx_snapshot_t *before = fx_snapshot_full_of(s.world);
    tes_archetype_t out;
    void *column;
    CHECK(tes_archetype_find(s.world, FX_IDS(s.a, s.likes), &out) != TES_OK);
    CHECK(tes_archetype_add(s.world, arch, s.likes) != TES_OK);
    CHECK(tes_archetype_remove(s.world, arch, s.likes) != TES_OK);
    CHECK_ERR(tes_chunk_column(s.world, arch, 0, s.likes, 0, &column), TES_ERR_SPARSE_COMPONENT);
    FX_CHECK_UNCHANGED_FULL_STRICT(before, s.world);
    tes_query_t *q = fx_query(s.world, &(tes_query_desc_t){.all = FX_IDS(s.a, s.likes)});
    tes_iter_t it;
    CHECK_OK(tes_query_iter(s.world, q, &it));
    CHECK(tes_iter_next(&it));
    CHECK_EQ(it.row_count, 1);
    CHECK_ERR(tes_iter_column(&it, s.likes, 0, &column), TES_ERR_SPARSE_COMPONENT);
    tes_iter_fini(&it);
    tes_op_t op = {.kind = TES_OP_FILL, .k = 1, .component = s.likes, .field = 0};
    CHECK_ERR(tes_query_apply(s.world, q, &op, NULL, NULL), TES_ERR_SPARSE_COMPONENT);
    CHECK_NUM_EQ(pair_get(&s, a, s.likes, b, 0, 0), 0);
}

TEST(not_a_relation_is_refused_by_every_pair_call) {
    scene_t s = make_scene(NULL);
    tes_entity_t a = fx_spawn(s.world, FX_IDS(s.a, s.s));
    tes_entity_t b = fx_spawn(s.world, FX_IDS(s.a));
    pair_add(&s, a, s.likes, b);
    fx_snapshot_t *before = fx_snapshot_full_of(s.world);
    const tes_component_t not_relations[] = {s.a, s.t, s.s};
    for (size_t i = 0; i < 3; i++) {
        tes_component_t c = not_relations[i];
        const tes_result_t x = TES_ERR_NOT_A_RELATION;
        bool has;
        uint32_t count;
        tes_entity_t out[4];
        double d;
        CHECK_ERR(tes_pair_add(s.world, a, c, b), x);
        CHECK_ERR(tes_pair_remove(s.world, a, c, b), x);
        CHECK_ERR(tes_pair_has(s.world, a, c, b, &has), x);
        CHECK_ERR(tes_pair_targets(s.world, a, c, out, 4, &count), x);
        CHECK_ERR(tes_pair_sources(s.world, c, b, out, 4, &count), x);
        CHECK_ERR(tes_pair_target(s.world, a, c, out), x);
        CHECK_ERR(tes_relation_pairs(s.world, c, out, out, 4, &count), x);
        CHECK_ERR(tes_pair_place(s.world, a, c, b, 0), x);
        CHECK_ERR(tes_relation_walk(s.world, c, b, out, NULL, 4, &count), x);
        CHECK_ERR(tes_pair_get_number(s.world, a, c, b, 0, 0, &d), x);
        CHECK_ERR(tes_pair_set_number(s.world, a, c, b, 0, 0, 1), x);
        CHECK_ERR(tes_pair_init_number(s.world, a, c, b, 0, 0, 1), x);
    }
    FX_CHECK_UNCHANGED_FULL_STRICT(before, s.world);
}

TEST(pair_call_errors_name_the_source_then_the_relation_then_the_target) {
    scene_t s = make_scene(NULL);
    tes_entity_t a = fx_spawn(s.world, FX_IDS(s.a));
    tes_entity_t b = fx_spawn(s.world, FX_IDS(s.a));
    tes_entity_t dead = fx_spawn(s.world, FX_IDS(s.a));
    pair_add(&s, a, s.likes, b);
    pair_add(&s, dead, s.likes, b);
    CHECK_OK(tes_despawn(s.world, dead));
    fx_snapshot_t *before = fx_snapshot_full_of(s.world);
    const tes_entity_t stale[] = {dead, 0, 0x3fffffffu};
    const tes_result_t S = TES_ERR_STALE_ENTITY, U = TES_ERR_UNKNOWN_COMPONENT,
                       N = TES_ERR_NOT_A_RELATION;
    for (size_t i = 0; i < 3; i++) {
        tes_entity_t x = stale[i];
        bool has;
        uint32_t count;
        tes_entity_t out[4];
        double d;
        /* A bad source wins over everything. */
        CHECK_ERR(tes_pair_add(s.world, x, 999, x), S);
        CHECK_ERR(tes_pair_add(s.world, x, s.a, b), S);
        CHECK_ERR(tes_pair_add(s.world, x, s.likes, b), S);
        CHECK_ERR(tes_pair_remove(s.world, x, s.likes, b), S);
        CHECK_ERR(tes_pair_has(s.world, x, s.likes, b, &has), S);
        CHECK_ERR(tes_pair_targets(s.world, x, s.likes, out, 4, &count), S);
        CHECK_ERR(tes_pair_target(s.world, x, s.likes, out), S);
        CHECK_ERR(tes_pair_place(s.world, x, s.likes, b, 0), S);
        CHECK_ERR(tes_pair_get_number(s.world, x, s.likes, b, 0, 0, &d), S);
        CHECK_ERR(tes_pair_set_number(s.world, x, s.likes, b, 0, 0, 1), S);
        CHECK_ERR(tes_pair_init_number(s.world, x, s.likes, b, 0, 0, 1), S);
        /* Then the relation. */
        CHECK_ERR(tes_pair_add(s.world, a, 999, x), U);
        CHECK_ERR(tes_pair_add(s.world, a, s.a, x), N);
        CHECK_ERR(tes_pair_has(s.world, a, 999, x, &has), U);
        CHECK_ERR(tes_pair_sources(s.world, 999, x, out, 4, &count), U);
        CHECK_ERR(tes_pair_sources(s.world, s.t, x, out, 4, &count), N);
        CHECK_ERR(tes_relation_walk(s.world, 999, x, out, NULL, 4, &count), U);
        CHECK_ERR(tes_relation_walk(s.world, s.s, x, out, NULL, 4, &count), N);
        /* Then the target. */
        CHECK_ERR(tes_pair_add(s.world, a, s.likes, x), S);
        CHECK_ERR(tes_pair_add(s.world, a, s.child_of, x), S);
        CHECK_ERR(tes_pair_remove(s.world, a, s.likes, x), S);
        CHECK_ERR(tes_pair_has(s.world, a, s.likes, x, &has), S);
        CHECK_ERR(tes_pair_sources(s.world, s.likes, x, out, 4, &count), S);
        CHECK_ERR(tes_relation_walk(s.world, s.likes, x, out, NULL, 4, &count), S);
        CHECK_ERR(tes_pair_place(s.world, a, s.likes, x, 0), S);
        CHECK_ERR(tes_pair_get_number(s.world, a, s.likes, x, 0, 0, &d), S);
        CHECK_ERR(tes_pair_set_number(s.world, a, s.likes, x, 0, 0, 1), S);
        CHECK_ERR(tes_pair_init_number(s.world, a, s.likes, x, 0, 0, 1), S);
    }
    uint32_t count;
    tes_entity_t out[4];
    double d;
    CHECK_ERR(tes_relation_pairs(s.world, 999, out, out, 4, &count), U);
    /* NULL world and NULL outputs. */
    bool has;
    const tes_result_t I = TES_ERR_INVALID_ARGUMENT;
    CHECK_ERR(tes_pair_add(NULL, a, s.likes, b), I);
    CHECK_ERR(tes_pair_remove(NULL, a, s.likes, b), I);
    CHECK_ERR(tes_pair_has(NULL, a, s.likes, b, &has), I);
    CHECK_ERR(tes_pair_has(s.world, a, s.likes, b, NULL), I);
    CHECK_ERR(tes_pair_targets(NULL, a, s.likes, out, 4, &count), I);
    CHECK_ERR(tes_pair_targets(s.world, a, s.likes, out, 4, NULL), I);
    CHECK_ERR(tes_pair_targets(s.world, a, s.likes, NULL, 4, &count), I);
    CHECK_ERR(tes_pair_sources(NULL, s.likes, b, out, 4, &count), I);
    CHECK_ERR(tes_pair_sources(s.world, s.likes, b, out, 4, NULL), I);
    CHECK_ERR(tes_pair_target(NULL, a, s.likes, out), I);
    CHECK_ERR(tes_pair_target(s.world, a, s.likes, NULL), I);
    CHECK_ERR(tes_relation_pairs(NULL, s.likes, out, out, 4, &count), I);
    CHECK_ERR(tes_relation_pairs(s.world, s.likes, out, out, 4, NULL), I);
    CHECK_ERR(tes_relation_walk(NULL, s.likes, b, out, NULL, 4, &count), I);
    CHECK_ERR(tes_relation_walk(s.world, s.likes, b, out, NULL, 4, NULL), I);
    CHECK_ERR(tes_pair_place(NULL, a, s.likes, b, 0), I);
    CHECK_ERR(tes_pair_get_number(NULL, a, s.likes, b, 0, 0, &d), I);
    CHECK_ERR(tes_pair_get_number(s.world, a, s.likes, b, 0, 0, NULL), I);
    CHECK_ERR(tes_pair_set_number(NULL, a, s.likes, b, 0, 0, 1), I);
    CHECK_ERR(tes_pair_init_number(NULL, a, s.likes, b, 0, 0, 1), I);
    FX_CHECK_UNCHANGED_FULL_STRICT(before, s.world);
    validate(&s);
}

/* ---------------------------------------------------------------------------------------- */
/* tes_pair_place, tes_relation_walk, tes_relation_pairs                                     */
/* ---------------------------------------------------------------------------------------- */

/* Inside a run, a place whose source, target or `before` is pending is recorded after the pair
 * add it follows and applied in order at the flush (it used to be refused: PENDING_ENTITY); one
 * that cannot apply then is skipped and counted; a stale `before` is refused at once. */
TEST(pair_place_with_a_pending_end_is_recorded_and_applied_in_order) {
    scene_t s = make_scene(NULL);
    tes_entity_t *e = spawn_n(&s, FX_IDS(s.a), 4);
    tes_entity_t t = e[0], a = e[1], b = e[2], gone = e[3];
    pair_add(&s, a, s.child_of, t);
    pair_add(&s, b, s.child_of, t);
    CHECK_OK(tes_despawn(s.world, gone));
    tes_query_t *q = fx_query(s.world, &(tes_query_desc_t){.all = FX_IDS(s.a)});
    tes_iter_t it;
    CHECK_OK(tes_query_iter(s.world, q, &it));
    CHECK(tes_iter_next(&it));
    tes_entity_t kid = 0, late = 0;
    CHECK_OK(tes_spawn(s.world, FX_IDS(s.a), &kid));
    CHECK_OK(tes_spawn(s.world, FX_IDS(s.a), &late));
    CHECK_OK(tes_pair_add(s.world, kid, s.child_of, t));
    CHECK_OK(tes_pair_place(s.world, kid, s.child_of, t, b)); /* recorded */
    CHECK_ERR(tes_pair_place(s.world, kid, s.child_of, t, gone), TES_ERR_STALE_ENTITY);
    CHECK_OK(tes_pair_place(s.world, late, s.child_of, t, 0)); /* no pair then: skipped */
    FX_CHECK_ORDER(fx_sources(s.world, s.child_of, t), a, b);  /* nothing applied yet */
    tes_iter_fini(&it);
    FX_CHECK_ORDER(fx_sources(s.world, s.child_of, t), a, kid, b);
    CHECK_EQ(fx_stats(s.world).commands_skipped, 1);
    CHECK_OK(tes_world_validate(s.world));
}

TEST(pair_place_reorders_the_sources_of_a_target) {
    scene_t s = make_scene(NULL);
    tes_entity_t *e = spawn_n(&s, FX_IDS(s.a), 7);
    tes_entity_t t = e[0], a = e[1], b = e[2], c = e[3], d = e[4], other = e[5];
    pair_add(&s, a, s.child_of, t);
    pair_add(&s, b, s.child_of, t);
    pair_add(&s, c, s.child_of, t);
    pair_add(&s, d, s.child_of, t);
    pair_add(&s, other, s.child_of, e[6]);
    CHECK_OK(tes_pair_place(s.world, d, s.child_of, t, a));
    FX_CHECK_ORDER(fx_sources(s.world, s.child_of, t), d, a, b, c);
    CHECK_OK(tes_pair_place(s.world, a, s.child_of, t, 0));
    FX_CHECK_ORDER(fx_sources(s.world, s.child_of, t), d, b, c, a);
    CHECK_OK(tes_pair_place(s.world, b, s.child_of, t, c)); /* already there */
    FX_CHECK_ORDER(fx_sources(s.world, s.child_of, t), d, b, c, a);
    CHECK_OK(tes_pair_place(s.world, c, s.child_of, t, b));
    FX_CHECK_ORDER(fx_sources(s.world, s.child_of, t), d, c, b, a);
    CHECK_OK(tes_pair_place(s.world, d, s.child_of, t, a));
    FX_CHECK_ORDER(fx_sources(s.world, s.child_of, t), c, b, d, a);
    /* The walk follows the order. */
    FX_CHECK_ORDER(walk(&s, s.child_of, t)->entities, c, b, d, a);
    /* Missing pairs: the moved one or `before`'s. */
    fx_snapshot_t *before = fx_snapshot_full_of(s.world);
    CHECK_ERR(tes_pair_place(s.world, other, s.child_of, t, 0), TES_ERR_MISSING_COMPONENT);
    CHECK_ERR(tes_pair_place(s.world, a, s.child_of, t, other), TES_ERR_MISSING_COMPONENT);
    CHECK_ERR(tes_pair_place(s.world, a, s.likes, t, 0), TES_ERR_MISSING_COMPONENT);
    CHECK_ERR(tes_pair_place(s.world, t, s.child_of, a, 0), TES_ERR_MISSING_COMPONENT);
    FX_CHECK_UNCHANGED_FULL_STRICT(before, s.world);
    /* Ordering the sources of a non-exclusive relation's target. */
    pair_add(&s, a, s.likes, other);
    pair_add(&s, b, s.likes, other);
    pair_add(&s, a, s.likes, e[6]);
    CHECK_OK(tes_pair_place(s.world, b, s.likes, other, a));
    FX_CHECK_ORDER(fx_sources(s.world, s.likes, other), b, a);
    FX_CHECK_ORDER(fx_targets(s.world, a, s.likes), other, e[6]); /* targets untouched */
    /* A removed and re-added pair goes to the end. */
    CHECK_OK(tes_pair_remove(s.world, c, s.child_of, t));
    pair_add(&s, c, s.child_of, t);
    FX_CHECK_ORDER(fx_sources(s.world, s.child_of, t), b, d, a, c);
    validate(&s);
}

TEST(walk_is_depth_first_pre_order_with_depths) {
    scene_t s = make_scene(NULL);
    tes_entity_t *e = spawn_n(&s, FX_IDS(s.a), 10);
    tes_entity_t r = e[0], c1 = e[1], c2 = e[2], c3 = e[3], g1 = e[4], g2 = e[5], g3 = e[6],
                 h = e[7];
    pair_add(&s, c1, s.child_of, r);
    pair_add(&s, c2, s.child_of, r);
    pair_add(&s, g3, s.child_of, c2);
    pair_add(&s, c3, s.child_of, r);
    pair_add(&s, g1, s.child_of, c1);
    pair_add(&s, h, s.child_of, g3);
    pair_add(&s, g2, s.child_of, c1);
    walk_t *w = walk(&s, s.child_of, r);
    FX_CHECK_ORDER(w->entities, c1, g1, g2, c2, g3, h, c3);
    const uint32_t depths[] = {1, 2, 2, 1, 2, 3, 1};
    for (int i = 0; i < 7; i++)
        CHECK_EQ(w->depths[i], depths[i]);
    /* From inside the tree: depths count from that root. */
    w = walk(&s, s.child_of, c2);
    FX_CHECK_ORDER(w->entities, g3, h);
    CHECK_EQ(w->depths[0], 1);
    CHECK_EQ(w->depths[1], 2);
    FX_CHECK_EMPTY(walk(&s, s.child_of, h)->entities);
    FX_CHECK_EMPTY(walk(&s, s.likes, r)->entities);
    /* A short buffer gets the first entries of the same order. */
    tes_entity_t out[3] = {0, 0, 0};
    uint32_t d3[3] = {0, 0, 0}, count = 0;
    CHECK_OK(tes_relation_walk(s.world, s.child_of, r, out, d3, 3, &count));
    CHECK_EQ(count, 7);
    CHECK_EQ(out[0], c1);
    CHECK_EQ(out[1], g1);
    CHECK_EQ(out[2], g2);
    CHECK_EQ(d3[2], 2);
    /* Re-parenting moves a subtree: it comes last among its new siblings. */
    pair_add(&s, c1, s.child_of, c3);
    w = walk(&s, s.child_of, r);
    FX_CHECK_ORDER(w->entities, c2, g3, h, c3, c1, g1, g2);
    const uint32_t depths2[] = {1, 2, 3, 1, 2, 3, 3};
    for (int i = 0; i < 7; i++)
        CHECK_EQ(w->depths[i], depths2[i]);
}

TEST(walk_lists_each_entity_once_through_cycles_and_shared_sources) {
    scene_t s = make_scene(NULL);
    tes_entity_t *e = spawn_n(&s, FX_IDS(s.a), 10);
    tes_entity_t a = e[0], b = e[1], c = e[2];
    /* Sources of a: b; of b: c; of c: a (a cycle back to the root). */
    pair_add(&s, b, s.likes, a);
    pair_add(&s, c, s.likes, b);
    pair_add(&s, a, s.likes, c);
    walk_t *w = walk(&s, s.likes, a);
    FX_CHECK_ORDER(w->entities, b, c); /* the root is not listed */
    CHECK_EQ(w->depths[0], 1);
    CHECK_EQ(w->depths[1], 2);
    /* A self pair. */
    pair_add(&s, e[3], s.likes, e[3]);
    FX_CHECK_EMPTY(walk(&s, s.likes, e[3])->entities);
    /* A diamond: z is a source of both x and y, x and y of d. Listed at its first visit. */
    tes_entity_t d = e[4], x = e[5], y = e[6], z = e[7], z2 = e[8];
    pair_add(&s, x, s.likes, d);
    pair_add(&s, y, s.likes, d);
    pair_add(&s, z, s.likes, x);
    pair_add(&s, z, s.likes, y);
    pair_add(&s, z2, s.likes, z);
    pair_add(&s, d, s.likes, z2); /* and a cycle on top */
    w = walk(&s, s.likes, d);
    FX_CHECK_ORDER(w->entities, x, z, z2, y);
    const uint32_t depths[] = {1, 2, 3, 1};
    for (int i = 0; i < 4; i++)
        CHECK_EQ(w->depths[i], depths[i]);
}

TEST(relation_pairs_lists_every_pair_once_grouped_by_source) {
    scene_t s = make_scene(NULL);
    tes_entity_t *e = spawn_n(&s, FX_IDS(s.a), 12);
    fx_rng_t rng = {31};
    bool want[12][12] = {{false}};
    uint32_t total = 0;
    for (int k = 0; k < 60; k++) {
        uint32_t i = fx_rng_below(&rng, 12), j = fx_rng_below(&rng, 12);
        if (fx_rng_chance(&rng, 70)) {
            pair_add(&s, e[i], s.likes, e[j]);
            total += !want[i][j];
            want[i][j] = true;
        } else {
            CHECK_OK(tes_pair_remove(s.world, e[i], s.likes, e[j]));
            total -= want[i][j];
            want[i][j] = false;
        }
    }
    tes_entity_t src[144], dst[144];
    uint32_t count = 0;
    CHECK_OK(tes_relation_pairs(s.world, s.likes, src, dst, 144, &count));
    CHECK_EQ(count, total);
    bool seen[12][12] = {{false}};
    for (uint32_t k = 0; k < count; k++) {
        int i = -1, j = -1;
        for (int x = 0; x < 12; x++) {
            if (e[x] == src[k]) i = x;
            if (e[x] == dst[k]) j = x;
        }
        CHECK(i >= 0 && j >= 0);
        CHECK(want[i][j]);
        CHECK(!seen[i][j]);
        seen[i][j] = true;
        /* Source by source: a source's pairs are together, in its targets' order. */
        if (k > 0 && src[k - 1] != src[k]) {
            for (uint32_t m = 0; m + 1 < k; m++)
                CHECK(src[m] != src[k]);
        }
    }
    for (int i = 0; i < 12; i++) {
        fx_entities_t *targets = fx_targets(s.world, e[i], s.likes);
        fx_entities_t *listed = fx_entities_new();
        for (uint32_t k = 0; k < count; k++) {
            if (src[k] == e[i]) fx_entities_push(listed, dst[k]);
        }
        fx_check_sequence_at(__FILE__, __LINE__, listed, targets->items, targets->count);
    }
}

/* ---------------------------------------------------------------------------------------- */
/* Pair data                                                                                 */
/* ---------------------------------------------------------------------------------------- */

TEST(pair_data_get_set_init_per_pair) {
    scene_t s = make_scene(NULL);
    tes_entity_t *e = spawn_n(&s, FX_IDS(s.a), 6);
    tes_entity_t a = e[0], b = e[1], c = e[2], d = e[3];
    pair_add(&s, a, s.likes, b);
    pair_add(&s, a, s.likes, c);
    pair_add(&s, a, s.likes, d);
    pair_add(&s, b, s.likes, a);
    for (uint32_t el = 0; el < 3; el++)
        CHECK_NUM_EQ(pair_get(&s, a, s.likes, c, 2, el), 0);
    CHECK_OK(tes_pair_set_number(s.world, a, s.likes, b, 0, 0, 1.25));
    CHECK_OK(tes_pair_set_number(s.world, a, s.likes, c, 0, 0, 2.5));
    CHECK_OK(tes_pair_set_number(s.world, a, s.likes, d, 0, 0, 3.75));
    CHECK_OK(tes_pair_set_number(s.world, a, s.likes, c, 1, 0, -7));
    CHECK_OK(tes_pair_set_number(s.world, a, s.likes, c, 2, 2, 200));
    CHECK_OK(tes_pair_init_number(s.world, b, s.likes, a, 0, 0, 9));
    CHECK_NUM_EQ(pair_get(&s, a, s.likes, b, 0, 0), 1.25);
    CHECK_NUM_EQ(pair_get(&s, a, s.likes, c, 0, 0), 2.5);
    CHECK_NUM_EQ(pair_get(&s, a, s.likes, c, 1, 0), -7);
    CHECK_NUM_EQ(pair_get(&s, a, s.likes, c, 2, 2), 200);
    CHECK_NUM_EQ(pair_get(&s, a, s.likes, c, 2, 1), 0);
    CHECK_NUM_EQ(pair_get(&s, a, s.likes, d, 0, 0), 3.75);
    CHECK_NUM_EQ(pair_get(&s, b, s.likes, a, 0, 0), 9);
    /* Removing one pair leaves the others' data in place. */
    CHECK_OK(tes_pair_remove(s.world, a, s.likes, b));
    CHECK_NUM_EQ(pair_get(&s, a, s.likes, c, 0, 0), 2.5);
    CHECK_NUM_EQ(pair_get(&s, a, s.likes, c, 2, 2), 200);
    CHECK_NUM_EQ(pair_get(&s, a, s.likes, d, 0, 0), 3.75);
    CHECK_NUM_EQ(pair_get(&s, b, s.likes, a, 0, 0), 9);
    CHECK_OK(tes_despawn(s.world, c));
    CHECK_NUM_EQ(pair_get(&s, a, s.likes, d, 0, 0), 3.75);
    /* The same checks as tes_set_number; nothing written. */
    fx_snapshot_t *before = fx_snapshot_full_of(s.world);
    double v = 0;
    CHECK_ERR(tes_pair_set_number(s.world, a, s.likes, d, 1, 0, 0.5), TES_ERR_BAD_VALUE);
    CHECK_ERR(tes_pair_set_number(s.world, a, s.likes, d, 2, 0, 256), TES_ERR_BAD_VALUE);
    CHECK_ERR(tes_pair_set_number(s.world, a, s.likes, d, 2, 0, -1), TES_ERR_BAD_VALUE);
    CHECK_ERR(tes_pair_init_number(s.world, a, s.likes, d, 1, 0, 1e10), TES_ERR_BAD_VALUE);
    CHECK_ERR(tes_pair_set_number(s.world, a, s.likes, d, 2, 3, 1), TES_ERR_ELEMENT_OUT_OF_RANGE);
    CHECK_ERR(tes_pair_get_number(s.world, a, s.likes, d, 0, 1, &v), TES_ERR_ELEMENT_OUT_OF_RANGE);
    CHECK_ERR(tes_pair_set_number(s.world, a, s.likes, d, 3, 0, 1), TES_ERR_UNKNOWN_FIELD);
    CHECK_ERR(tes_pair_get_number(s.world, a, s.likes, d, 3, 0, &v), TES_ERR_UNKNOWN_FIELD);
    /* Absent pairs: the other direction, a target never added, a removed one. */
    CHECK_ERR(tes_pair_get_number(s.world, d, s.likes, a, 0, 0, &v), TES_ERR_MISSING_COMPONENT);
    CHECK_ERR(tes_pair_set_number(s.world, d, s.likes, a, 0, 0, 1), TES_ERR_MISSING_COMPONENT);
    CHECK_ERR(tes_pair_init_number(s.world, a, s.likes, b, 0, 0, 1), TES_ERR_MISSING_COMPONENT);
    CHECK_ERR(tes_pair_get_number(s.world, a, s.likes, e[4], 0, 0, &v), TES_ERR_MISSING_COMPONENT);
    FX_CHECK_UNCHANGED_FULL_STRICT(before, s.world);
    /* A relation without fields. */
    pair_add(&s, e[4], s.child_of, e[5]);
    before = fx_snapshot_full_of(s.world);
    CHECK_ERR(tes_pair_get_number(s.world, e[4], s.child_of, e[5], 0, 0, &v),
              TES_ERR_TAG_HAS_NO_DATA);
    CHECK_ERR(tes_pair_set_number(s.world, e[4], s.child_of, e[5], 0, 0, 1),
              TES_ERR_TAG_HAS_NO_DATA);
    FX_CHECK_UNCHANGED_FULL_STRICT(before, s.world);
    /* f32-style rounding rules apply through the relation's types: u16 slot. */
    pair_add(&s, a, s.next, d);
    CHECK_OK(tes_pair_set_number(s.world, a, s.next, d, 0, 0, 65535));
    CHECK_NUM_EQ(pair_get(&s, a, s.next, d, 0, 0), 65535);
    CHECK_ERR(tes_pair_set_number(s.world, a, s.next, d, 0, 0, 65536), TES_ERR_BAD_VALUE);
    validate(&s);
}

TEST(pair_data_survives_heavy_churn) {
    scene_t s = make_scene(NULL);
    enum { N = 40 };
    tes_entity_t *e = spawn_n(&s, FX_IDS(s.a), N);
    static double value[N][N];
    static bool has[N][N];
    memset(has, 0, sizeof has);
    fx_rng_t rng = {99};
    for (int step = 0; step < 4000; step++) {
        uint32_t i = fx_rng_below(&rng, N), j = fx_rng_below(&rng, N);
        uint32_t roll = fx_rng_below(&rng, 10);
        if (roll < 4) {
            pair_add(&s, e[i], s.likes, e[j]);
            if (!has[i][j]) value[i][j] = 0;
            has[i][j] = true;
        } else if (roll < 7) {
            CHECK_OK(tes_pair_remove(s.world, e[i], s.likes, e[j]));
            has[i][j] = false;
        } else if (has[i][j]) {
            double v = (double)fx_rng_below(&rng, 100000) / 4;
            CHECK_OK(tes_pair_set_number(s.world, e[i], s.likes, e[j], 0, 0, v));
            value[i][j] = v;
        }
        if (step % 200 == 199) {
            for (int x = 0; x < N; x++) {
                for (int y = 0; y < N; y++) {
                    CHECK_EQ(fx_pair_has(s.world, e[x], s.likes, e[y]), has[x][y]);
                    if (has[x][y])
                        CHECK_NUM_EQ(pair_get(&s, e[x], s.likes, e[y], 0, 0), value[x][y]);
                }
            }
            validate(&s);
        }
    }
}

/* ---------------------------------------------------------------------------------------- */
/* Queries                                                                                   */
/* ---------------------------------------------------------------------------------------- */

TEST(relation_id_in_all_none_any_means_to_any_target) {
    scene_t s = make_scene(NULL);
    tes_entity_t *e = spawn_n(&s, FX_IDS(s.a), 6);
    tes_entity_t tagged = fx_spawn(s.world, FX_IDS(s.a, s.t));
    pair_add(&s, e[0], s.likes, e[5]);
    pair_add(&s, e[1], s.likes, e[0]);
    pair_add(&s, e[1], s.likes, e[2]);
    tes_query_t *all = fx_query(s.world, &(tes_query_desc_t){.all = FX_IDS(s.a, s.likes)});
    tes_query_t *none =
        fx_query(s.world, &(tes_query_desc_t){.all = FX_IDS(s.a), .none = FX_IDS(s.likes)});
    tes_query_t *any = fx_query(s.world, &(tes_query_desc_t){.any = FX_IDS(s.t, s.likes)});
    tes_query_t *only = fx_query(s.world, &(tes_query_desc_t){.all = FX_IDS(s.likes)});
    FX_CHECK_VISITED(fx_run(s.world, all), e[0], e[1]);
    FX_CHECK_VISITED(fx_run(s.world, only), e[0], e[1]);
    FX_CHECK_VISITED(fx_run(s.world, none), e[2], e[3], e[4], e[5], tagged);
    FX_CHECK_VISITED(fx_run(s.world, any), e[0], e[1], tagged);
    CHECK_OK(tes_pair_remove(s.world, e[0], s.likes, e[5]));
    pair_add(&s, tagged, s.likes, e[3]);
    FX_CHECK_VISITED(fx_run(s.world, all), e[1], tagged);
    FX_CHECK_VISITED(fx_run(s.world, any), e[1], tagged);
    CHECK_OK(tes_despawn(s.world, e[2]));
    CHECK_OK(tes_despawn(s.world, e[0]));
    FX_CHECK_VISITED(fx_run(s.world, all), tagged); /* e[1] lost both targets */
}

/* Components of the pair-term test, by bit: A T Likes Owns. */
static uint32_t rel_mask_to_list(const scene_t *s, uint32_t mask, tes_component_t *out) {
    const tes_component_t ids[4] = {s->a, s->t, s->likes, s->owns};
    uint32_t n = 0;
    for (uint32_t i = 0; i < 4; i++) {
        if (mask & (1u << i)) out[n++] = ids[i];
    }
    return n;
}

TEST(pair_terms_all_none_any_match_exactly) {
    scene_t s = make_scene(&(tes_world_desc_t){.chunk_bytes = 1024});
    enum { N = 400, TARGETS = 4 };
    tes_entity_t targets[TARGETS];
    for (int k = 0; k < TARGETS; k++)
        targets[k] = fx_spawn(s.world, FX_IDS(s.a));
    tes_entity_t *e = (tes_entity_t *)fx_malloc(N * sizeof *e);
    uint32_t *mask = (uint32_t *)fx_malloc(N * sizeof *mask);   /* bits A T */
    uint32_t *likes = (uint32_t *)fx_malloc(N * sizeof *likes); /* target bits */
    uint32_t *owns = (uint32_t *)fx_malloc(N * sizeof *owns);
    fx_rng_t rng = {4242};
    for (uint32_t i = 0; i < N; i++) {
        mask[i] = fx_rng_below(&rng, 4);
        tes_component_t set[2];
        e[i] = fx_spawn(s.world, set, rel_mask_to_list(&s, mask[i], set));
        likes[i] = fx_rng_chance(&rng, 40) ? fx_rng_below(&rng, 1u << TARGETS) : 0;
        owns[i] = fx_rng_chance(&rng, 30) ? fx_rng_below(&rng, 1u << TARGETS) : 0;
        for (int k = 0; k < TARGETS; k++) {
            if (likes[i] & (1u << k)) pair_add(&s, e[i], s.likes, targets[k]);
            if (owns[i] & (1u << k)) pair_add(&s, e[i], s.owns, targets[k]);
        }
    }
    for (int round = 0; round < 300; round++) {
        fx_term_masks_t terms_ = fx_random_terms(&rng, 4, 6);
        uint32_t all = terms_.all, none = terms_.none, any = terms_.any;
        tes_pair_term_t terms[4];
        uint32_t term_count = fx_rng_below(&rng, 5);
        for (uint32_t k = 0; k < term_count; k++) {
            terms[k].relation = fx_rng_chance(&rng, 70) ? s.likes : s.owns;
            uint32_t pick = fx_rng_below(&rng, TARGETS + 1);
            terms[k].target = pick == TARGETS ? 0 : targets[pick];
            terms[k].op = fx_rng_below(&rng, 3);
        }
        tes_component_t all_list[4], none_list[4], any_list[4];
        tes_query_desc_t desc = {0};
        desc.all = all_list;
        desc.all_count = rel_mask_to_list(&s, all, all_list);
        desc.none = none_list;
        desc.none_count = rel_mask_to_list(&s, none, none_list);
        desc.any = any_list;
        desc.any_count = rel_mask_to_list(&s, any, any_list);
        desc.pairs = terms;
        desc.pair_count = term_count;
        tes_query_t *q = fx_query(s.world, &desc);
        fx_entities_t *want = fx_entities_new();
        for (uint32_t i = 0; i < N + TARGETS; i++) {
            bool target_entity = i >= N;
            uint32_t m = target_entity ? 1u : mask[i];
            uint32_t lk = target_entity ? 0 : likes[i], ow = target_entity ? 0 : owns[i];
            m |= (lk ? 4u : 0) | (ow ? 8u : 0);
            bool ok = (m & all) == all && !(m & none);
            bool any_hit = (m & any) != 0, has_any = any != 0;
            for (uint32_t k = 0; k < term_count && ok; k++) {
                uint32_t set = terms[k].relation == s.likes ? lk : ow;
                bool is = false;
                if (terms[k].target == 0) {
                    is = set != 0;
                } else {
                    for (int t = 0; t < TARGETS; t++)
                        if (targets[t] == terms[k].target) is = (set >> t) & 1u;
                }
                if (terms[k].op == TES_TERM_ALL) ok = is;
                if (terms[k].op == TES_TERM_NONE) ok = !is;
                if (terms[k].op == TES_TERM_ANY) {
                    has_any = true;
                    any_hit |= is;
                }
            }
            if (ok && (!has_any || any_hit))
                fx_entities_push(want, target_entity ? targets[i - N] : e[i]);
        }
        fx_entities_t *got = fx_run(s.world, q);
        if (got->count != want->count) {
            printf("  all %#x none %#x any %#x (A T Likes Owns); pair terms:", all, none, any);
            for (uint32_t k = 0; k < term_count; k++)
                printf(" (%s, %u, op %u)", terms[k].relation == s.likes ? "Likes" : "Owns",
                       (unsigned)terms[k].target, (unsigned)terms[k].op);
            printf("\n");
        }
        FX_CHECK_SAME_ENTITIES(got, want->items, want->count);
        tes_query_destroy(s.world, q);
    }
}

TEST(pair_terms_follow_pairs_and_despawned_targets) {
    scene_t s = make_scene(NULL);
    tes_entity_t *e = spawn_n(&s, FX_IDS(s.a), 6);
    tes_entity_t parent = e[0], other = e[1];
    pair_add(&s, e[2], s.child_of, parent);
    pair_add(&s, e[3], s.child_of, parent);
    pair_add(&s, e[4], s.child_of, other);
    tes_query_t *children = fx_query(
        s.world,
        &(tes_query_desc_t){.pairs = (tes_pair_term_t[]){{s.child_of, parent, TES_TERM_ALL}},
                            .pair_count = 1});
    tes_query_t *not_children = fx_query(
        s.world,
        &(tes_query_desc_t){.all = FX_IDS(s.a),
                            .pairs = (tes_pair_term_t[]){{s.child_of, parent, TES_TERM_NONE}},
                            .pair_count = 1});
    tes_query_t *either = fx_query(
        s.world,
        &(tes_query_desc_t){.pairs = (tes_pair_term_t[]){{s.child_of, parent, TES_TERM_ANY},
                                                         {s.child_of, other, TES_TERM_ANY}},
                            .pair_count = 2});
    tes_query_t *with_any_parent = fx_query(
        s.world, &(tes_query_desc_t){.pairs = (tes_pair_term_t[]){{s.child_of, 0, TES_TERM_ALL}},
                                     .pair_count = 1});
    FX_CHECK_VISITED(fx_run(s.world, children), e[2], e[3]);
    FX_CHECK_VISITED(fx_run(s.world, not_children), e[0], e[1], e[4], e[5]);
    FX_CHECK_VISITED(fx_run(s.world, either), e[2], e[3], e[4]);
    FX_CHECK_VISITED(fx_run(s.world, with_any_parent), e[2], e[3], e[4]);
    /* Re-parenting (exclusive) moves e[3]. */
    uint32_t layout = tes_world_layout(s.world);
    pair_add(&s, e[3], s.child_of, other);
    CHECK_EQ(tes_world_layout(s.world), layout);
    FX_CHECK_VISITED(fx_run(s.world, children), e[2]);
    FX_CHECK_VISITED(fx_run(s.world, either), e[2], e[3], e[4]);
    /* The parent's death takes its children (cascade): nothing is a child of it now. */
    CHECK_OK(tes_despawn(s.world, parent));
    CHECK_EQ(fx_run_count(s.world, children), 0);
    FX_CHECK_VISITED(fx_run(s.world, either), e[3], e[4]);
    FX_CHECK_VISITED(fx_run(s.world, not_children), e[1], e[3], e[4], e[5]);
    validate(&s);
}

TEST(added_changed_removed_on_the_relation_as_a_component) {
    scene_t s = make_scene(NULL);
    tes_query_t *added = fx_query(s.world, &(tes_query_desc_t){.added = FX_IDS(s.likes)});
    tes_query_t *changed = fx_query(s.world, &(tes_query_desc_t){.changed = FX_IDS(s.likes)});
    tes_query_t *removed = fx_query(s.world, &(tes_query_desc_t){.removed = FX_IDS(s.likes)});
    tes_entity_t *e = spawn_n(&s, FX_IDS(s.a), 6);
    tes_entity_t a = e[0], b = e[1], t1 = e[2], t2 = e[3], t3 = e[4];
    fx_run(s.world, changed);
    /* First pairs: added. */
    pair_add(&s, a, s.likes, t1);
    pair_add(&s, b, s.likes, t1);
    FX_CHECK_VISITED(fx_run(s.world, added), a, b);
    CHECK_EQ(fx_run(s.world, added)->count, 0);
    fx_run(s.world, changed); /* whatever the first pairs stamped, consumed */
    /* A second pair is not an add, it is a change. */
    pair_add(&s, a, s.likes, t2);
    CHECK_EQ(fx_run(s.world, added)->count, 0);
    FX_CHECK_VISITED(fx_run(s.world, changed), a);
    /* Adding a pair that is there is nothing. */
    pair_add(&s, a, s.likes, t2);
    CHECK_EQ(fx_run(s.world, changed)->count, 0);
    /* A pair removed while others stay: a change. */
    CHECK_OK(tes_pair_remove(s.world, a, s.likes, t1));
    FX_CHECK_VISITED(fx_run(s.world, changed), a);
    /* Pair data written: a change; initialized: not. */
    CHECK_OK(tes_pair_set_number(s.world, b, s.likes, t1, 0, 0, 4));
    CHECK_OK(tes_pair_set_number(s.world, b, s.likes, t1, 0, 0, 5));
    FX_CHECK_VISITED(fx_run(s.world, changed), b);
    CHECK_OK(tes_pair_init_number(s.world, b, s.likes, t1, 0, 0, 6));
    CHECK_EQ(fx_run(s.world, changed)->count, 0);
    CHECK_EQ(run_removed(&s, removed, s.likes)->count, 0);
    /* The last pair goes: removed. tes_remove, a despawned target, a despawned source. */
    CHECK_OK(tes_pair_remove(s.world, a, s.likes, t2));
    FX_CHECK_ORDER(run_removed(&s, removed, s.likes), a);
    CHECK(!fx_has(s.world, a, s.likes));
    pair_add(&s, a, s.likes, t3);
    FX_CHECK_VISITED(fx_run(s.world, added), a); /* added again */
    CHECK_OK(tes_remove(s.world, a, s.likes));
    CHECK_OK(tes_despawn(s.world, t1)); /* b's only target */
    FX_CHECK_ORDER(run_removed(&s, removed, s.likes), a, b);
    pair_add(&s, b, s.likes, t3);
    pair_add(&s, b, s.likes, t2);
    CHECK_OK(tes_despawn(s.world, b));
    FX_CHECK_ORDER(run_removed(&s, removed, s.likes), b);
    CHECK_EQ(fx_run(s.world, changed)->count, 0); /* b is dead */
    validate(&s);
}

/* The relation's first pair is an add, not a change (as a component gained counts as added,
 * changed 0); replacing the target of an EXCLUSIVE relation is a change of the source, not a
 * removal and an add (the source never stops having the relation). */
TEST(first_pair_is_an_add_and_exclusive_replacement_a_change) {
    scene_t s = make_scene(NULL);
    const tes_component_t N = s.next;
    tes_query_t *added = fx_query(s.world, &(tes_query_desc_t){.added = FX_IDS(N)});
    tes_query_t *changed = fx_query(s.world, &(tes_query_desc_t){.changed = FX_IDS(N)});
    tes_query_t *removed = fx_query(s.world, &(tes_query_desc_t){.removed = FX_IDS(N)});
    tes_entity_t *e = spawn_n(&s, FX_IDS(s.a), 3);
    pair_add(&s, e[0], N, e[1]);
    FX_CHECK_VISITED(fx_run(s.world, added), e[0]);
    CHECK_EQ(fx_run(s.world, changed)->count, 0);
    pair_add(&s, e[0], N, e[2]);
    CHECK_EQ(fx_run(s.world, added)->count, 0);
    FX_CHECK_VISITED(fx_run(s.world, changed), e[0]);
    CHECK_EQ(run_removed(&s, removed, N)->count, 0);
    uint64_t added_tick = 0, changed_tick = 0;
    CHECK_OK(tes_ticks(s.world, e[0], N, &added_tick, &changed_tick));
    CHECK(added_tick > 0 && changed_tick > added_tick);
}

/* ---------------------------------------------------------------------------------------- */
/* Pair events                                                                               */
/* ---------------------------------------------------------------------------------------- */

TEST(pair_events_report_adds_removes_and_changes_once_each) {
    scene_t s = make_scene(NULL);
    tes_entity_t *e = spawn_n(&s, FX_IDS(s.a), 5);
    tes_entity_t a = e[0], b = e[1], c = e[2];
    tes_query_t *q1 = pair_consumer(&s, s.likes);
    tes_query_t *q2 = pair_consumer(&s, s.likes);
    const tes_component_t L = s.likes;
    pair_add(&s, a, L, b);
    pair_add(&s, a, L, c);
    pair_add(&s, a, L, b); /* there already: no event */
    CHECK_OK(tes_pair_set_number(s.world, a, L, c, 0, 0, 1));
    CHECK_OK(tes_pair_set_number(s.world, a, L, c, 1, 0, 2));  /* the same tick: deduplicated */
    CHECK_OK(tes_pair_init_number(s.world, a, L, b, 0, 0, 3)); /* not a change */
    CHECK_OK(tes_pair_remove(s.world, a, L, b));
    CHECK_OK(tes_pair_remove(s.world, a, L, b)); /* not there: no event */
    events_t *got = collect_events(&s, q1);
    CHECK_EVENTS(got, EV(a, L, b, ADDED), EV(a, L, c, ADDED), EV(a, L, c, CHANGED),
                 EV(a, L, b, REMOVED));
    CHECK_NO_EVENTS(collect_events(&s, q1));
    /* Changes in a later tick are new events; q2 sees both ticks' changes. */
    CHECK_OK(tes_pair_set_number(s.world, a, L, c, 0, 0, 4));
    CHECK_OK(tes_pair_set_number(s.world, a, L, c, 0, 0, 5));
    CHECK_EVENTS(collect_events(&s, q1), EV(a, L, c, CHANGED));
    got = iter_events(&s, q2, L);
    CHECK_EVENTS(got, EV(a, L, b, ADDED), EV(a, L, c, ADDED), EV(a, L, c, CHANGED),
                 EV(a, L, b, REMOVED), EV(a, L, c, CHANGED));
    CHECK_NO_EVENTS(iter_events(&s, q2, L));
    /* Writing a pair that was then removed: both events, in order. */
    CHECK_OK(tes_pair_set_number(s.world, a, L, c, 0, 0, 6));
    CHECK_OK(tes_remove(s.world, a, L));
    CHECK_EVENTS(collect_events(&s, q1), EV(a, L, c, CHANGED), EV(a, L, c, REMOVED));
    CHECK_EVENTS(collect_events(&s, q2), EV(a, L, c, CHANGED), EV(a, L, c, REMOVED));
}

TEST(pair_events_for_exclusive_replacement_and_despawns) {
    scene_t s = make_scene(NULL);
    tes_entity_t *e = spawn_n(&s, FX_IDS(s.a), 8);
    const tes_component_t N = s.next, C = s.child_of, L = s.likes;
    tes_query_t *q = fx_query(s.world, &(tes_query_desc_t){.pair_changes = FX_IDS(N, C, L)});
    pair_add(&s, e[0], N, e[1]);
    pair_add(&s, e[0], N, e[2]); /* replaces */
    CHECK_EVENTS(collect_events(&s, q), EV(e[0], N, e[1], ADDED), EV(e[0], N, e[1], REMOVED),
                 EV(e[0], N, e[2], ADDED));
    /* A despawned target (non-cascade), a despawned source. */
    pair_add(&s, e[3], L, e[2]);
    pair_add(&s, e[4], L, e[2]);
    pair_add(&s, e[2], L, e[5]);
    collect_events(&s, q);
    CHECK_OK(tes_despawn(s.world, e[2]));
    {
        events_t *got = collect_events(&s, q);
        /* One REMOVED per pair; the order within one despawn is not promised. */
        CHECK_EQ(got->count, 4);
        uint32_t n_pairs = 0;
        for (uint32_t i = 0; i < got->count; i++) {
            CHECK_EQ(got->items[i].kind, TES_PAIR_REMOVED);
            const tes_pair_event_t *ev = &got->items[i];
            n_pairs += (ev->source == e[0] && ev->relation == N && ev->target == e[2]) ||
                       (ev->source == e[3] && ev->relation == L && ev->target == e[2]) ||
                       (ev->source == e[4] && ev->relation == L && ev->target == e[2]) ||
                       (ev->source == e[2] && ev->relation == L && ev->target == e[5]);
        }
        CHECK_EQ(n_pairs, 4);
        /* Relation after relation in the query's order: Next's before Likes'. */
        CHECK_EQ(got->items[0].relation, N);
    }
    /* A cascade: the dying sources' pairs are reported removed. */
    pair_add(&s, e[6], C, e[5]);
    pair_add(&s, e[7], C, e[6]);
    collect_events(&s, q);
    CHECK_OK(tes_despawn(s.world, e[5]));
    CHECK(!tes_is_alive(s.world, e[6]) && !tes_is_alive(s.world, e[7]));
    events_t *got = collect_events(&s, q);
    uint32_t removed_child = 0;
    for (uint32_t i = 0; i < got->count; i++) {
        CHECK_EQ(got->items[i].kind, TES_PAIR_REMOVED);
        if (got->items[i].relation == C) removed_child++;
    }
    CHECK_EQ(removed_child, 2);
    CHECK_NO_EVENTS(collect_events(&s, q));
}

TEST(pair_events_come_relation_after_relation_in_the_query_s_order) {
    scene_t s = make_scene(NULL);
    tes_entity_t *e = spawn_n(&s, FX_IDS(s.a), 4);
    const tes_component_t L = s.likes, O = s.owns;
    tes_query_t *q = fx_query(s.world, &(tes_query_desc_t){.pair_changes = FX_IDS(O, L)});
    pair_add(&s, e[0], L, e[1]);
    pair_add(&s, e[0], O, e[1]);
    pair_add(&s, e[2], L, e[1]);
    pair_add(&s, e[2], O, e[3]);
    CHECK_EVENTS(collect_events(&s, q), EV(e[0], O, e[1], ADDED), EV(e[2], O, e[3], ADDED),
                 EV(e[0], L, e[1], ADDED), EV(e[2], L, e[1], ADDED));
    /* By hand, relation by relation. */
    pair_add(&s, e[3], L, e[0]);
    pair_add(&s, e[3], O, e[0]);
    tes_iter_t it;
    CHECK_OK(tes_query_iter(s.world, q, &it));
    const tes_pair_event_t *items = NULL;
    uint32_t count = 0;
    CHECK_OK(tes_iter_pair_events(&it, L, &items, &count));
    CHECK_EQ(count, 1);
    CHECK_EQ(items[0].source, e[3]);
    CHECK_EQ(items[0].relation, L);
    CHECK_OK(tes_iter_pair_events(&it, O, &items, &count));
    CHECK_EQ(count, 1);
    CHECK_EQ(items[0].relation, O);
    CHECK(tes_iter_pair_events(&it, s.next, &items, &count) != TES_OK); /* not one of them */
    CHECK(tes_iter_pair_events(&it, s.a, &items, &count) != TES_OK);
    CHECK_ERR(tes_iter_pair_events(&it, L, NULL, &count), TES_ERR_INVALID_ARGUMENT);
    while (tes_iter_next(&it)) {
    }
    CHECK_NO_EVENTS(collect_events(&s, q));
}

TEST(pair_events_are_logged_only_while_a_consumer_exists) {
    scene_t s = make_scene(NULL);
    tes_entity_t *e = spawn_n(&s, FX_IDS(s.a), 4);
    const tes_component_t L = s.likes;
    pair_add(&s, e[0], L, e[1]);
    CHECK_OK(tes_pair_set_number(s.world, e[0], L, e[1], 0, 0, 1));
    pair_add(&s, e[0], L, e[2]);
    CHECK_OK(tes_pair_remove(s.world, e[0], L, e[2]));
    /* Names other relations only: not a consumer of Likes. */
    tes_query_t *other = pair_consumer(&s, s.owns);
    pair_add(&s, e[1], L, e[2]);
    tes_query_t *q = pair_consumer(&s, L);
    CHECK_NO_EVENTS(collect_events(&s, q));
    CHECK_NO_EVENTS(collect_events(&s, other));
    pair_add(&s, e[2], L, e[3]);
    CHECK_EVENTS(collect_events(&s, q), EV(e[2], L, e[3], ADDED));
    /* Destroyed: logging stops; a new consumer starts from nothing. */
    tes_query_destroy(s.world, q);
    pair_add(&s, e[3], L, e[0]);
    CHECK_OK(tes_tick(s.world));
    q = pair_consumer(&s, L);
    CHECK_NO_EVENTS(collect_events(&s, q));
    /* A query with pair changes only is a consumer: it collects, visits nothing. */
    tes_collect_t out;
    pair_add(&s, e[3], L, e[1]);
    CHECK_OK(tes_query_collect(s.world, q, &out));
    CHECK_EQ(out.count, 0);
    CHECK_EQ(out.pair_event_count, 1);
    CHECK(tes_query_last_run(q) > 0);
}

TEST(pair_event_log_is_pruned_once_every_consumer_saw_it) {
    scene_t s = make_scene(NULL);
    tes_entity_t *e = spawn_n(&s, FX_IDS(s.a), 4);
    const tes_component_t L = s.likes;
    tes_query_t *q1 = pair_consumer(&s, L);
    tes_query_t *pin = pair_consumer(&s, L);
    pair_add(&s, e[0], L, e[1]);
    CHECK_EVENTS(collect_events(&s, q1), EV(e[0], L, e[1], ADDED));
    CHECK_OK(tes_tick(s.world));
    CHECK_EVENTS(collect_events(&s, pin), EV(e[0], L, e[1], ADDED));
    CHECK_OK(tes_tick(s.world));
    /* Seen by both and pruned: nothing left for a newcomer. */
    tes_query_t *late = pair_consumer(&s, L);
    CHECK_NO_EVENTS(collect_events(&s, late));
    /* Not seen by pin yet: kept across ticks. */
    pair_add(&s, e[2], L, e[3]);
    CHECK_EVENTS(collect_events(&s, q1), EV(e[2], L, e[3], ADDED));
    CHECK_EVENTS(collect_events(&s, late), EV(e[2], L, e[3], ADDED));
    for (int i = 0; i < 3; i++)
        CHECK_OK(tes_tick(s.world));
    CHECK_EVENTS(collect_events(&s, pin), EV(e[2], L, e[3], ADDED));
    CHECK_NO_EVENTS(collect_events(&s, q1));
}

TEST(pair_events_made_during_a_run_are_seen_by_the_next_run) {
    scene_t s = make_scene(NULL);
    tes_entity_t *e = spawn_n(&s, FX_IDS(s.a), 4);
    const tes_component_t L = s.likes;
    tes_query_t *q = fx_query(
        s.world,
        &(tes_query_desc_t){.all = FX_IDS(s.a), .added = FX_IDS(s.a), .pair_changes = FX_IDS(L)});
    pair_add(&s, e[0], L, e[1]);
    tes_iter_t it;
    CHECK_OK(tes_query_iter(s.world, q, &it));
    const tes_pair_event_t *items;
    uint32_t count = 0;
    CHECK_OK(tes_iter_pair_events(&it, L, &items, &count));
    CHECK_EQ(count, 1);
    CHECK(tes_iter_next(&it));
    pair_add(&s, e[1], L, e[2]); /* at once, stamped after this run's tick */
    CHECK(fx_pair_has(s.world, e[1], L, e[2]));
    while (tes_iter_next(&it)) {
    }
    CHECK_EVENTS(collect_events(&s, q), EV(e[1], L, e[2], ADDED));
}

/* ---------------------------------------------------------------------------------------- */
/* Pair calls during a live iteration                                                        */
/* ---------------------------------------------------------------------------------------- */

TEST(pair_calls_during_iteration_apply_at_once) {
    scene_t s = make_scene(NULL);
    tes_entity_t *e = spawn_n(&s, FX_IDS(s.a), 5);
    tes_query_t *q = fx_query(s.world, &(tes_query_desc_t){.all = FX_IDS(s.a)});
    tes_query_t *with = fx_query(s.world, &(tes_query_desc_t){.all = FX_IDS(s.likes)});
    pair_add(&s, e[4], s.likes, e[0]);
    tes_iter_t it;
    CHECK_OK(tes_query_iter(s.world, q, &it));
    CHECK(tes_iter_next(&it));
    pair_add(&s, e[0], s.likes, e[1]);
    CHECK(fx_pair_has(s.world, e[0], s.likes, e[1]));
    CHECK(fx_has(s.world, e[0], s.likes));
    CHECK_OK(tes_pair_set_number(s.world, e[0], s.likes, e[1], 0, 0, 3));
    CHECK_NUM_EQ(pair_get(&s, e[0], s.likes, e[1], 0, 0), 3);
    pair_add(&s, e[2], s.child_of, e[3]);
    CHECK_OK(tes_pair_place(s.world, e[2], s.child_of, e[3], 0));
    CHECK_OK(tes_pair_remove(s.world, e[4], s.likes, e[0]));
    CHECK(!fx_has(s.world, e[4], s.likes));
    CHECK_ERR(tes_pair_add(s.world, e[3], s.child_of, e[2]), TES_ERR_CYCLE);
    /* Despawns stay deferred: the pairs of e[3] are still there until the end. */
    CHECK_OK(tes_despawn(s.world, e[1]));
    CHECK_OK(tes_despawn(s.world, e[3]));
    CHECK(fx_pair_has(s.world, e[0], s.likes, e[1]));
    CHECK(fx_pair_has(s.world, e[2], s.child_of, e[3]));
    /* A nested plain run sees the new pairs. */
    FX_CHECK_VISITED(fx_run(s.world, with), e[0]);
    tes_iter_fini(&it);
    CHECK(!tes_is_alive(s.world, e[1]) && !tes_is_alive(s.world, e[3]));
    CHECK(!tes_is_alive(s.world, e[2])); /* cascade at the flush */
    CHECK(!fx_has(s.world, e[0], s.likes));
    CHECK_EQ(fx_run_count(s.world, with), 0);
    CHECK_EQ(fx_stats(s.world).commands_skipped, 0);
    validate(&s);
}

TEST(removing_a_relation_during_iteration_applies_at_once) {
    scene_t s = make_scene(NULL);
    tes_entity_t *e = spawn_n(&s, FX_IDS(s.a), 4);
    const tes_component_t L = s.likes;
    pair_add(&s, e[0], L, e[1]);
    pair_add(&s, e[0], L, e[2]);
    pair_add(&s, e[3], L, e[0]);
    tes_query_t *events = pair_consumer(&s, L);
    tes_query_t *removed = fx_query(s.world, &(tes_query_desc_t){.removed = FX_IDS(L)});
    tes_query_t *q = fx_query(s.world, &(tes_query_desc_t){.all = FX_IDS(s.a)});
    tes_iter_t it;
    CHECK_OK(tes_query_iter(s.world, q, &it));
    CHECK(tes_iter_next(&it));
    CHECK_OK(tes_remove(s.world, e[0], L));
    CHECK(!fx_has(s.world, e[0], L));
    FX_CHECK_EMPTY(fx_targets(s.world, e[0], L));
    CHECK(fx_pair_has(s.world, e[3], L, e[0])); /* e[0] as a target keeps its source */
    pair_add(&s, e[0], L, e[3]);                /* at once too, after the removal */
    tes_iter_fini(&it);
    FX_CHECK_ORDER(fx_targets(s.world, e[0], L), e[3]);
    events_t *got = collect_events(&s, events);
    CHECK_EQ(got->count, 3);
    CHECK_EQ(got->items[0].kind, TES_PAIR_REMOVED);
    CHECK_EQ(got->items[1].kind, TES_PAIR_REMOVED);
    CHECK_EQ(got->items[2].kind, TES_PAIR_ADDED);
    CHECK_EQ(got->items[2].target, e[3]);
    FX_CHECK_ORDER(run_removed(&s, removed, L), e[0]);
    CHECK_EQ(fx_stats(s.world).commands_skipped, 0);
    validate(&s);
}

TEST(pair_calls_with_a_pending_endpoint_are_recorded_with_their_initial_values) {
    scene_t s = make_scene(NULL);
    tes_entity_t *e = spawn_n(&s, FX_IDS(s.a), 3);
    const tes_component_t L = s.likes;
    tes_query_t *events = pair_consumer(&s, L);
    tes_query_t *q = fx_query(s.world, &(tes_query_desc_t){.all = FX_IDS(s.a)});
    tes_iter_t it;
    CHECK_OK(tes_query_iter(s.world, q, &it));
    CHECK(tes_iter_next(&it));
    tes_entity_t p = 0, p2 = 0;
    CHECK_OK(tes_spawn(s.world, FX_IDS(s.a), &p));
    CHECK_OK(tes_spawn(s.world, NULL, 0, &p2));
    /* Pending source. */
    CHECK_OK(tes_pair_add(s.world, p, L, e[0]));
    CHECK_OK(tes_pair_init_number(s.world, p, L, e[0], 0, 0, 2.5));
    CHECK_OK(tes_pair_init_number(s.world, p, L, e[0], 2, 1, 17));
    /* Pending target, and both pending. */
    CHECK_OK(tes_pair_add(s.world, e[1], L, p));
    CHECK_OK(tes_pair_init_number(s.world, e[1], L, p, 1, 0, -4));
    CHECK_OK(tes_pair_add(s.world, p2, s.child_of, p));
    bool has = true;
    CHECK_ERR(tes_pair_has(s.world, p, L, e[0], &has), TES_ERR_PENDING_ENTITY);
    CHECK_ERR(tes_pair_has(s.world, e[1], L, p, &has), TES_ERR_PENDING_ENTITY);
    CHECK(!fx_has(s.world, e[1], L)); /* nothing placed yet */
    CHECK_EQ(fx_sources(s.world, L, e[0])->count, 0);
    /* Values are checked when recorded. */
    CHECK_ERR(tes_pair_init_number(s.world, p, L, e[0], 1, 0, 0.5), TES_ERR_BAD_VALUE);
    CHECK_ERR(tes_pair_init_number(s.world, p, L, e[0], 9, 0, 1), TES_ERR_UNKNOWN_FIELD);
    CHECK(!tes_iter_next(&it));
    CHECK(tes_is_alive(s.world, p) && tes_is_alive(s.world, p2));
    CHECK(fx_pair_has(s.world, p, L, e[0]));
    CHECK(fx_pair_has(s.world, e[1], L, p));
    CHECK(fx_pair_has(s.world, p2, s.child_of, p));
    CHECK_NUM_EQ(pair_get(&s, p, L, e[0], 0, 0), 2.5);
    CHECK_NUM_EQ(pair_get(&s, p, L, e[0], 2, 1), 17);
    CHECK_NUM_EQ(pair_get(&s, p, L, e[0], 1, 0), 0);
    CHECK_NUM_EQ(pair_get(&s, e[1], L, p, 1, 0), -4);
    CHECK_EQ(fx_stats(s.world).commands_skipped, 0);
    /* Initial values are no change. */
    CHECK_EVENTS(collect_events(&s, events), EV(p, L, e[0], ADDED), EV(e[1], L, p, ADDED));
    validate(&s);
}

TEST(recorded_pair_calls_on_an_entity_gone_by_the_flush_are_skipped) {
    scene_t s = make_scene(NULL);
    tes_entity_t *e = spawn_n(&s, FX_IDS(s.a), 2);
    tes_query_t *q = fx_query(s.world, &(tes_query_desc_t){.all = FX_IDS(s.a)});
    tes_iter_t it;
    CHECK_OK(tes_query_iter(s.world, q, &it));
    CHECK(tes_iter_next(&it));
    tes_entity_t p = 0;
    CHECK_OK(tes_spawn(s.world, NULL, 0, &p));
    CHECK_OK(tes_despawn(s.world, p));
    CHECK_OK(tes_pair_add(s.world, e[0], s.likes, p));
    tes_iter_fini(&it);
    CHECK(!tes_is_alive(s.world, p));
    CHECK(!fx_has(s.world, e[0], s.likes));
    CHECK(fx_stats(s.world).commands_skipped >= 1);
    uint32_t count = 9;
    CHECK_OK(tes_relation_pairs(s.world, s.likes, NULL, NULL, 0, &count));
    CHECK_EQ(count, 0);
    validate(&s);
}

/* ---------------------------------------------------------------------------------------- */
/* Bad input changes nothing                                                                 */
/* ---------------------------------------------------------------------------------------- */

TEST(refused_pair_calls_leave_the_world_exactly_as_it_was) {
    scene_t s = make_scene(NULL);
    tes_entity_t *e = spawn_n(&s, FX_IDS(s.a), 6);
    pair_add(&s, e[1], s.child_of, e[0]);
    pair_add(&s, e[2], s.child_of, e[1]);
    pair_add(&s, e[3], s.likes, e[0]);
    pair_add(&s, e[3], s.likes, e[2]);
    CHECK_OK(tes_pair_set_number(s.world, e[3], s.likes, e[2], 0, 0, 8));
    pair_add(&s, e[4], s.next, e[5]);
    tes_entity_t dead = fx_spawn(s.world, FX_IDS(s.a));
    CHECK_OK(tes_despawn(s.world, dead));
    tes_query_t *events = pair_consumer(&s, s.likes);
    collect_events(&s, events);
    fx_snapshot_t *before = fx_snapshot_full_of(s.world);
    CHECK_ERR(tes_pair_add(s.world, e[0], s.child_of, e[2]), TES_ERR_CYCLE);
    CHECK_ERR(tes_pair_add(s.world, e[3], s.likes, dead), TES_ERR_STALE_ENTITY);
    CHECK_ERR(tes_pair_add(s.world, dead, s.likes, e[3]), TES_ERR_STALE_ENTITY);
    CHECK_ERR(tes_pair_add(s.world, e[4], s.next, dead), TES_ERR_STALE_ENTITY); /* no replace */
    CHECK_ERR(tes_pair_remove(s.world, e[3], s.likes, dead), TES_ERR_STALE_ENTITY);
    CHECK_ERR(tes_pair_set_number(s.world, e[3], s.likes, e[2], 1, 0, 1.5), TES_ERR_BAD_VALUE);
    CHECK_ERR(tes_pair_set_number(s.world, e[3], s.likes, e[1], 0, 0, 1),
              TES_ERR_MISSING_COMPONENT);
    CHECK_ERR(tes_pair_place(s.world, e[3], s.likes, e[0], e[1]), TES_ERR_MISSING_COMPONENT);
    CHECK_ERR(tes_add(s.world, e[0], s.likes), TES_ERR_NEEDS_TARGET);
    CHECK_ERR(tes_remove(s.world, dead, s.likes), TES_ERR_STALE_ENTITY);
    CHECK_ERR(tes_despawn(s.world, dead), TES_ERR_STALE_ENTITY);
    tes_entity_t list[2] = {e[0], dead};
    CHECK_ERR(tes_despawn_batch(s.world, list, 2), TES_ERR_STALE_ENTITY); /* no cascade */
    FX_CHECK_UNCHANGED_FULL_STRICT(before, s.world);
    CHECK_NO_EVENTS(collect_events(&s, events));
    validate(&s);
}
