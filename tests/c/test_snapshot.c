/* Snapshots: randomized worlds round-trip (same handles, values, sparse sets and pairs, the same
 * bytes written again, the same handles spawned next); every truncation, every flipped bit,
 * another version and hostile bytes with a valid checksum are refused without a world and
 * without a leak. */
#include "../crc32_reference.h"
#include "fixtures.h"

typedef fx_mixed_t world_t;

/* A world after a random history: spawns, despawns (so the free queue and generations
 * matter), adds and removes, values, sparse members, pairs with data, reordered children. */
static world_t random_world(uint64_t seed, uint32_t steps) {
    world_t w = fx_mixed(&(tes_world_desc_t){.chunk_bytes = 1024, .min_free_indices = 8}, false);
    fx_rng_t rng = {seed};
    fx_live_t live = {.n = 0};
    fx_mixed_changes(&w, &rng, &live, steps, 0);
    CHECK_OK(tes_world_validate(w.world));
    return w;
}

/* The world's snapshot, copied (its buffer is reused by the world's next snapshot). */
static uint8_t *snapshot_copy(tes_world_t *world, uint32_t *size) {
    const uint8_t *bytes = NULL;
    CHECK_OK(tes_snapshot(world, &bytes, size));
    CHECK(*size >= 16 && bytes != NULL);
    uint8_t *copy = (uint8_t *)fx_malloc(*size);
    memcpy(copy, bytes, *size);
    return copy;
}

static uint8_t *copy_n(const uint8_t *bytes, uint32_t size) {
    uint8_t *copy = (uint8_t *)fx_malloc(size);
    memcpy(copy, bytes, size);
    return copy;
}

static tes_world_t *restore(const uint8_t *bytes, uint32_t size) {
    tes_world_t *copy = NULL;
    /* The description random_world uses: the stats compared include the chunk size. */
    tes_world_desc_t desc = {.chunk_bytes = 1024, .min_free_indices = 8};
    CHECK_OK(tes_world_restore(&desc, bytes, size, &copy));
    harness_defer(fx_destroy_world, copy);
    return copy;
}

/* Every live entity of `a` is live in `b` with the same components, values and pairs. */
static void check_same_content(tes_world_t *a, tes_world_t *b, const world_t *w) {
    fx_snapshot_t *sa = fx_snapshot_full_of(a);
    fx_snapshot_t *sb = fx_snapshot_full_of(b);
    char message[160];
    if (!fx_snapshot_equal(sa, sb, message, sizeof message)) {
        harness_fail(__FILE__, __LINE__, "restored world differs: %s", message);
    }
    tes_world_stats_t x = fx_stats(a), y = fx_stats(b);
    CHECK_EQ(x.entity_count, y.entity_count);
    CHECK_EQ(x.entity_capacity, y.entity_capacity);
    CHECK_EQ(x.free_queue_length, y.free_queue_length);
    (void)w;
}

/* Restoring must fail with `expected` and leave nothing allocated. */
static void check_refused(const uint8_t *bytes, uint32_t size, tes_result_t expected) {
    fx_alloc_t *alloc = fx_alloc_new();
    tes_world_desc_t desc = {.allocator = fx_allocator(alloc)};
    tes_world_t *world = NULL;
    CHECK_ERR(tes_world_restore(&desc, bytes, size, &world), expected);
    CHECK(world == NULL);
    FX_CHECK_ALLOC_CLEAN(alloc);
}

TEST(random_worlds_round_trip_to_the_same_bytes_handles_and_values) {
    for (uint64_t seed = 1; seed <= 6; seed++) {
        world_t w = random_world(seed, 1500);
        uint32_t size = 0;
        uint8_t *bytes = snapshot_copy(w.world, &size);
        tes_world_t *copy = restore(bytes, size);
        CHECK_OK(tes_world_validate(copy));
        check_same_content(w.world, copy, &w);
        uint32_t again_size = 0;
        uint8_t *again = snapshot_copy(copy, &again_size);
        CHECK_EQ(again_size, size);
        CHECK(memcmp(again, bytes, size) == 0);
        /* The same handles come next, in both. */
        for (int i = 0; i < 20; i++) {
            tes_entity_t x = fx_spawn(w.world, FX_IDS(w.body));
            tes_entity_t y = fx_spawn(copy, FX_IDS(w.body));
            CHECK_EQ(x, y);
        }
    }
}

TEST(an_empty_world_round_trips) {
    world_t w = fx_mixed(NULL, false);
    uint32_t size = 0;
    uint8_t *bytes = snapshot_copy(w.world, &size);
    tes_world_t *copy = restore(bytes, size);
    CHECK_EQ(fx_stats(copy).entity_count, 0);
    CHECK_EQ(fx_stats(copy).component_count, 7);
    tes_component_info_t info;
    CHECK_OK(tes_component_info(copy, w.child, &info));
    CHECK_EQ(info.flags, TES_COMPONENT_RELATION | TES_RELATION_EXCLUSIVE | TES_RELATION_ACYCLIC |
                             TES_RELATION_CASCADE);
    CHECK(strcmp(info.name, "ChildOf") == 0);
}

TEST(restored_values_pairs_and_order_are_the_originals) {
    world_t w = fx_mixed(NULL, false);
    tes_entity_t root = fx_spawn(w.world, FX_IDS(w.body));
    tes_entity_t a = fx_spawn(w.world, FX_IDS(w.body, w.sparse));
    tes_entity_t b = fx_spawn(w.world, FX_IDS(w.marker));
    tes_entity_t c = fx_spawn(w.world, FX_IDS(w.vel));
    CHECK_OK(tes_set_number(w.world, a, w.body, 2, 1, 77));
    CHECK_OK(tes_set_number(w.world, a, w.sparse, 0, 0, 2.5));
    CHECK_OK(tes_pair_add(w.world, a, w.child, root));
    CHECK_OK(tes_pair_add(w.world, b, w.child, root));
    CHECK_OK(tes_pair_add(w.world, c, w.child, root));
    CHECK_OK(tes_pair_place(w.world, c, w.child, root, a)); /* children: c, a, b */
    CHECK_OK(tes_pair_add(w.world, a, w.likes, b));
    CHECK_OK(tes_pair_set_number(w.world, a, w.likes, b, 0, 0, -4.5));
    uint32_t size = 0;
    uint8_t *bytes = snapshot_copy(w.world, &size);
    tes_world_t *copy = restore(bytes, size);
    CHECK_NUM_EQ(fx_get_number(copy, a, w.body, 2, 1), 77);
    CHECK_NUM_EQ(fx_get_number(copy, a, w.sparse, 0, 0), 2.5);
    CHECK(fx_has(copy, b, w.marker));
    fx_entities_t *children = fx_sources(copy, w.child, root);
    FX_CHECK_ORDER(children, c, a, b);
    double v = 0;
    CHECK_OK(tes_pair_get_number(copy, a, w.likes, b, 0, 0, &v));
    CHECK_NUM_EQ(v, -4.5);
    /* Cascades and exclusivity work on the restored relation. */
    CHECK_OK(tes_despawn(copy, root));
    CHECK(!tes_is_alive(copy, a) && !tes_is_alive(copy, b) && !tes_is_alive(copy, c));
    CHECK_OK(tes_world_validate(copy));
}

TEST(no_snapshot_during_a_live_iteration) {
    world_t w = fx_mixed(NULL, false);
    fx_spawn(w.world, FX_IDS(w.body));
    tes_query_t *q = fx_query(w.world, &(tes_query_desc_t){.all = FX_IDS(w.body)});
    tes_iter_t it;
    CHECK_OK(tes_query_iter(w.world, q, &it));
    const uint8_t *bytes;
    uint32_t size;
    CHECK_ERR(tes_snapshot(w.world, &bytes, &size), TES_ERR_INVALID_ARGUMENT);
    tes_iter_fini(&it);
    CHECK_OK(tes_snapshot(w.world, &bytes, &size));
}

TEST(every_truncation_is_refused_without_a_world_or_a_leak) {
    world_t w = random_world(11, 300);
    uint32_t size = 0;
    uint8_t *bytes = snapshot_copy(w.world, &size);
    for (uint32_t n = 0; n < size; n++) {
        check_refused(bytes, n, TES_ERR_BAD_SNAPSHOT);
    }
    /* And a truncation that claims its own size and checksum: the body ends too early. */
    for (uint32_t n = 16; n < size; n += 1 + n / 8) {
        uint8_t *cut = copy_n(bytes, n);
        crc32_reseal(cut, n);
        check_refused(cut, n, TES_ERR_BAD_SNAPSHOT);
    }
}

TEST(every_flipped_bit_is_refused) {
    world_t w = random_world(12, 200);
    uint32_t size = 0;
    uint8_t *bytes = snapshot_copy(w.world, &size);
    for (uint32_t i = 0; i < size; i++) {
        for (int bit = 0; bit < 8; bit += 3) {
            bytes[i] ^= (uint8_t)(1u << bit);
            tes_world_t *world = NULL;
            tes_result_t r = tes_world_restore(NULL, bytes, size, &world);
            /* A flip in the version field is "another version"; anywhere else, bad bytes. */
            CHECK(r == (i == 4 || i == 5 ? TES_ERR_SNAPSHOT_VERSION : TES_ERR_BAD_SNAPSHOT));
            CHECK(world == NULL);
            bytes[i] ^= (uint8_t)(1u << bit);
        }
    }
    tes_world_t *world = restore(bytes, size); /* unchanged again: fine */
    CHECK_OK(tes_world_validate(world));
}

TEST(another_version_and_other_magic_are_named) {
    world_t w = fx_mixed(NULL, false);
    uint32_t size = 0;
    uint8_t *bytes = snapshot_copy(w.world, &size);
    bytes[4] = 2;
    check_refused(bytes, size, TES_ERR_SNAPSHOT_VERSION);
    bytes[4] = 1;
    bytes[0] = 'X';
    check_refused(bytes, size, TES_ERR_BAD_SNAPSHOT);
    bytes[0] = 'T';
    check_refused(bytes, 3, TES_ERR_BAD_SNAPSHOT);
    CHECK_ERR(tes_world_restore(NULL, NULL, 10, &(tes_world_t *){NULL}), TES_ERR_INVALID_ARGUMENT);
    CHECK_ERR(tes_world_restore(NULL, bytes, size, NULL), TES_ERR_INVALID_ARGUMENT);
}

/* Offsets of a tiny world's snapshot, as docs/format.md lays it out: components, then the
 * entity table (record count, one entry per index from 1, the free queue), then archetypes. */
typedef struct tiny_t {
    uint8_t *bytes;
    uint32_t size;
    uint32_t table;     /* the record count */
    uint32_t archetype; /* the first archetype section's component count */
} tiny_t;

static tiny_t tiny(void) {
    /* One component "P" {x: f32}: count 4, flags 4, name 4 + 1, field count 4, field name
     * 4 + 1, type 4, length 4: 30 bytes. */
    tes_world_t *world = fx_world(NULL);
    const tes_field_desc_t x[] = {{"x", TES_F32, 0}};
    tes_component_t p = fx_component(world, "P", x, 1);
    fx_spawn(world, FX_IDS(p));
    fx_spawn(world, FX_IDS(p));
    tiny_t t;
    t.bytes = snapshot_copy(world, &t.size);
    t.table = 16 + 30;
    t.archetype = t.table + 4 + 2 * 4 + 4 + 4; /* count, 2 entries, free length 0, sections */
    CHECK_EQ(t.size, t.archetype + 4 + 4 + 4 + 2 * 4 + 2 * 4);
    return t;
}

static void poke(tiny_t *t, uint32_t at, uint32_t value) {
    memcpy(t->bytes + at, &value, 4);
    crc32_reseal(t->bytes, t->size);
}

TEST(hostile_bytes_with_a_valid_checksum_are_refused) {
    tiny_t t = tiny();
    uint32_t entity_a, entity_b;
    memcpy(&entity_a, t.bytes + t.archetype + 12, 4);
    memcpy(&entity_b, t.bytes + t.archetype + 16, 4);
    tes_world_t *ok = restore(t.bytes, t.size);
    CHECK(tes_is_alive(ok, entity_a) && tes_is_alive(ok, entity_b));
    struct {
        uint32_t at, value;
    } cases[] = {
        {16, TES_MAX_COMPONENTS + 1},        /* component count */
        {16 + 8, 200},                       /* name length */
        {16 + 13, 99},                       /* field count */
        {16 + 22, 0},                        /* field type */
        {16 + 26, TES_MAX_ARRAY_LENGTH + 9}, /* field length */
        {16 + 26, 0},        /* a length of 0 (read as 1: not what the writer writes) */
        {t.table, 0},        /* record count */
        {t.table, 1u << 22}, /* record count beyond the table */
        {t.table + 4, 0x80000000u | 600}, /* a generation beyond 9 bits */
        {t.table + 4, 0},                 /* a live entity's index marked free */
        {t.table + 12, 1},                /* a free queue where nothing is free */
        {t.archetype, 2},                 /* a component id that is not there */
        {t.archetype + 4, 7},             /* an unknown component id */
        {t.archetype + 8, 3},             /* more entities than listed */
        {t.archetype + 8, 0},             /* an archetype section without entities */
        {t.archetype + 12, entity_b},     /* the same handle twice */
        {t.archetype + 12, entity_a + (1u << TES_INDEX_BITS)}, /* another generation */
        {t.archetype + 12, 0},                                 /* handle 0 */
        {t.archetype - 4, 2},                                  /* archetype count */
    };
    for (uint32_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tiny_t copy = t;
        copy.bytes = copy_n(t.bytes, t.size);
        poke(&copy, cases[i].at, cases[i].value);
        tes_world_t *world = NULL;
        tes_result_t r = tes_world_restore(NULL, copy.bytes, copy.size, &world);
        if (r != TES_ERR_BAD_SNAPSHOT) {
            harness_fail(__FILE__, __LINE__, "case %u (offset %u): %s, expected BAD_SNAPSHOT", i,
                         cases[i].at, tes_result_name(r));
        }
        check_refused(copy.bytes, copy.size, TES_ERR_BAD_SNAPSHOT);
    }
}

TEST(random_corruption_with_a_valid_checksum_never_crashes) {
    /* Whatever the body says, a restore gives a valid world or BAD_SNAPSHOT, and no leak
     * (ASan and the counting allocator watch). */
    world_t w = random_world(13, 400);
    uint32_t size = 0;
    uint8_t *bytes = snapshot_copy(w.world, &size);
    fx_rng_t rng = {99};
    uint32_t accepted = 0;
    uint8_t *copy = copy_n(bytes, size);
    fx_alloc_t *alloc = fx_alloc_new();
    for (int round = 0; round < 3000; round++) {
        memcpy(copy, bytes, size);
        uint32_t flips = 1 + fx_rng_below(&rng, 4);
        for (uint32_t k = 0; k < flips; k++) {
            uint32_t at = 16 + fx_rng_below(&rng, size - 16);
            copy[at] = (uint8_t)(fx_rng_below(&rng, 3) == 0 ? 0xFF : fx_rng_below(&rng, 256));
        }
        crc32_reseal(copy, size);
        fx_alloc_init(alloc);
        tes_world_desc_t desc = {.allocator = fx_allocator(alloc)};
        tes_world_t *world = NULL;
        tes_result_t r = tes_world_restore(&desc, copy, size, &world);
        if (r == TES_OK) {
            accepted++; /* a field value or a generation may change and still be valid */
            CHECK_OK(tes_world_validate(world));
            tes_world_destroy(world);
        } else {
            CHECK_ERR(r, TES_ERR_BAD_SNAPSHOT);
            CHECK(world == NULL);
        }
        FX_CHECK_ALLOC_CLEAN(alloc);
    }
    CHECK(accepted < 3000);
}
