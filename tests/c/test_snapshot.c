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
    bytes[4] = 1; /* version 1: a u32 per index (refused by name, not misread) */
    check_refused(bytes, size, TES_ERR_SNAPSHOT_VERSION);
    bytes[4] = 3;
    check_refused(bytes, size, TES_ERR_SNAPSHOT_VERSION);
    bytes[4] = 2;
    bytes[0] = 'X';
    check_refused(bytes, size, TES_ERR_BAD_SNAPSHOT);
    bytes[0] = 'T';
    check_refused(bytes, 3, TES_ERR_BAD_SNAPSHOT);
    CHECK_ERR(tes_world_restore(NULL, NULL, 10, &(tes_world_t *){NULL}), TES_ERR_INVALID_ARGUMENT);
    CHECK_ERR(tes_world_restore(NULL, bytes, size, NULL), TES_ERR_INVALID_ARGUMENT);
}

/* Offsets of a tiny world's snapshot, as docs/format.md lays it out: components, then the
 * entity table (varints: record count 3, one live run of 2 at generation 0, free length 0),
 * then archetypes. */
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
    const uint8_t table[] = {3, 2 << 2 | 1, 0, 0};
    CHECK(memcmp(t.bytes + t.table, table, sizeof table) == 0);
    t.archetype = t.table + (uint32_t)sizeof table + 4; /* after the archetype count */
    CHECK_EQ(t.size, t.archetype + 4 + 4 + 4 + 2 * 4 + 2 * 4);
    return t;
}

/* A copy of t with `old` bytes at `at` replaced by `with` (n bytes), resealed. */
static tiny_t splice(const tiny_t *t, uint32_t at, uint32_t old, const uint8_t *with, uint32_t n) {
    tiny_t copy = *t;
    copy.size = t->size - old + n;
    copy.bytes = (uint8_t *)fx_malloc(copy.size);
    memcpy(copy.bytes, t->bytes, at);
    memcpy(copy.bytes + at, with, n);
    memcpy(copy.bytes + at + n, t->bytes + at + old, t->size - at - old);
    crc32_reseal(copy.bytes, copy.size);
    return copy;
}

static void check_hostile(const tiny_t *copy, const char *what) {
    tes_world_t *world = NULL;
    tes_result_t r = tes_world_restore(NULL, copy->bytes, copy->size, &world);
    if (r != TES_ERR_BAD_SNAPSHOT) {
        harness_fail(__FILE__, __LINE__, "%s: %s, expected BAD_SNAPSHOT", what, tes_result_name(r));
    }
    check_refused(copy->bytes, copy->size, TES_ERR_BAD_SNAPSHOT);
}

TEST(hostile_bytes_with_a_valid_checksum_are_refused) {
    tiny_t t = tiny();
    uint32_t entity_a, entity_b;
    memcpy(&entity_a, t.bytes + t.archetype + 12, 4);
    memcpy(&entity_b, t.bytes + t.archetype + 16, 4);
    tes_world_t *ok = restore(t.bytes, t.size);
    CHECK(tes_is_alive(ok, entity_a) && tes_is_alive(ok, entity_b));
    /* u32 fields. */
    struct {
        uint32_t at, value;
    } cases[] = {
        {16, TES_MAX_COMPONENTS + 1},        /* component count */
        {16 + 8, 200},                       /* name length */
        {16 + 13, 99},                       /* field count */
        {16 + 22, 0},                        /* field type */
        {16 + 26, TES_MAX_ARRAY_LENGTH + 9}, /* field length */
        {16 + 26, 0},                 /* a length of 0 (read as 1: not what the writer writes) */
        {t.archetype, 2},             /* a component id that is not there */
        {t.archetype + 4, 7},         /* an unknown component id */
        {t.archetype + 8, 3},         /* more entities than listed */
        {t.archetype + 8, 0},         /* an archetype section without entities */
        {t.archetype + 12, entity_b}, /* the same handle twice */
        {t.archetype + 12, entity_a + (1u << TES_INDEX_BITS)}, /* another generation */
        {t.archetype + 12, 0},                                 /* handle 0 */
        {t.archetype - 4, 2},                                  /* archetype count */
    };
    for (uint32_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint8_t value[4];
        memcpy(value, &cases[i].value, 4);
        tiny_t copy = splice(&t, cases[i].at, 4, value, 4);
        char what[64];
        snprintf(what, sizeof what, "case %u (offset %u)", i, cases[i].at);
        check_hostile(&copy, what);
    }
    /* The entity table's varints: each replaces the 4 bytes {3, live run of 2, generation 0,
     * free length 0}. */
    struct {
        const char *what;
        uint8_t bytes[8];
        uint32_t n;
    } tables[] = {
        {"record count 0", {0, 2 << 2 | 1, 0, 0}, 4},
        {"record count beyond the table", {0x80, 0x80, 0x80, 0x01, 2 << 2 | 1, 0, 0}, 7},
        {"a varint longer than it needs", {0x83, 0x00, 2 << 2 | 1, 0, 0}, 5},
        {"a varint past 32 bits", {0x83, 0x80, 0x80, 0x80, 0x10, 2 << 2 | 1, 0, 0}, 8},
        {"a generation beyond 9 bits", {3, 2 << 2 | 1, 0xD8, 0x04, 0}, 5},
        {"a run past the table", {3, 3 << 2 | 1, 0, 0}, 4},
        {"a run of none", {3, 0 << 2 | 1, 0, 2 << 2 | 1, 0, 0}, 6},
        {"a fourth state", {3, 2 << 2 | 3, 0, 0}, 4},
        {"two runs alike (not as long as it goes)", {3, 1 << 2 | 1, 0, 1 << 2 | 1, 0, 0}, 6},
        {"live indices said free", {3, 2 << 2 | 0, 0, 0}, 4},
        {"live indices said skipped", {3, 2 << 2 | 2, 0}, 3},
        {"a free queue where nothing is free", {3, 2 << 2 | 1, 0, 1, 2, 0}, 6},
    };
    for (uint32_t i = 0; i < sizeof tables / sizeof tables[0]; i++) {
        tiny_t copy = splice(&t, t.table, 4, tables[i].bytes, tables[i].n);
        check_hostile(&copy, tables[i].what);
    }
}

/* A world whose free queue holds runs: indices 1..40 spawned, then despawned as 11..20 (one
 * ascending run), 30..25 (descending), 7, 3 (single ones); min_free keeps them all queued. */
static uint8_t *queue_world(uint32_t *size, uint32_t *table) {
    tes_world_t *world = fx_world(&(tes_world_desc_t){.min_free_indices = 64});
    const tes_field_desc_t x[] = {{"x", TES_F32, 0}};
    tes_component_t p = fx_component(world, "P", x, 1);
    tes_entity_t e[41];
    for (int i = 1; i <= 40; i++)
        e[i] = fx_spawn(world, FX_IDS(p));
    for (int i = 11; i <= 20; i++)
        CHECK_OK(tes_despawn(world, e[i]));
    for (int i = 30; i >= 25; i--)
        CHECK_OK(tes_despawn(world, e[i]));
    CHECK_OK(tes_despawn(world, e[7]));
    CHECK_OK(tes_despawn(world, e[3]));
    uint8_t *bytes = snapshot_copy(world, size);
    *table = 16 + 30;
    /* Record count 41; runs (length << 2 | state, generation): live 1-2, free 3, live 4-6,
     * free 7, live 8-10, free 11-20, live 21-24, free 25-30, live 31-40; free length 18; the
     * queue's runs (zigzag step from the last run's end, length - 1 << 1 | descending): 11..20,
     * 30..25, 7, 3. */
    const uint8_t expected[] = {41, 9,  0, 4,  1, 13, 0,  4,  1,  13, 0,  40, 1, 17,
                                0,  24, 1, 41, 0, 18, 22, 18, 20, 11, 35, 0,  7, 0};
    CHECK(memcmp(bytes + *table, expected, sizeof expected) == 0);
    return bytes;
}

TEST(the_free_queue_is_written_as_runs_and_read_only_so) {
    uint32_t size = 0, at = 0;
    uint8_t *bytes = queue_world(&size, &at);
    tes_world_t *ok = restore(bytes, size);
    CHECK_OK(tes_world_validate(ok));
    CHECK_EQ(fx_stats(ok).free_queue_length, 18);
    tiny_t t = {bytes, size, at, 0};
    uint32_t queue = at + 20; /* the queue's first run */
    struct {
        const char *what;
        uint8_t bytes[12];
        uint32_t n;
    } cases[] = {
        /* 11..14, then 15..20: the first run would have gone on. */
        {"a run that stops early", {22, 6, 2, 10, 20, 11, 35, 0, 7, 0}, 10},
        {"a run of one with a direction", {22, 18, 20, 11, 35, 1, 7, 0}, 8},
        {"a run at index 0", {22, 18, 20, 11, 35, 0, 13, 0}, 8},
        {"a run longer than the queue", {22, 36, 20, 11, 35, 0, 7, 0}, 8},
        {"an index queued twice", {22, 18, 20, 11, 35, 0, 0, 0}, 8},
        {"a live index queued", {22, 18, 20, 11, 35, 0, 3, 0}, 8},
    };
    for (uint32_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tiny_t copy = splice(&t, queue, 8, cases[i].bytes, cases[i].n);
        check_hostile(&copy, cases[i].what);
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

/* A copy of the bytes without n bytes at `at`, resealed. */
static uint8_t *cut(const uint8_t *bytes, uint32_t size, uint32_t at, uint32_t n) {
    uint8_t *copy = (uint8_t *)fx_malloc(size - n);
    memcpy(copy, bytes, at);
    memcpy(copy + at, bytes + at + n, size - at - n);
    crc32_reseal(copy, size - n);
    return copy;
}

TEST(a_target_left_out_of_the_order_list_is_refused) {
    /* ChildOf is the last relation: its order list ends the snapshot, {targets 1, root, 2, a, b}.
     * Left out (targets 0), the reader used to accept it and write back 16 more bytes. */
    world_t w = fx_mixed(NULL, false);
    tes_entity_t root = fx_spawn(w.world, FX_IDS(w.body));
    tes_entity_t a = fx_spawn(w.world, FX_IDS(w.body)), b = fx_spawn(w.world, FX_IDS(w.body));
    CHECK_OK(tes_pair_add(w.world, a, w.child, root));
    CHECK_OK(tes_pair_add(w.world, b, w.child, root));
    uint32_t size = 0;
    uint8_t *bytes = snapshot_copy(w.world, &size);
    const uint32_t tail[5] = {1, root, 2, a, b};
    CHECK(memcmp(bytes + size - 20, tail, 20) == 0);
    uint8_t *left_out = cut(bytes, size, size - 16, 16);
    memset(left_out + size - 20, 0, 4);
    crc32_reseal(left_out, size - 16);
    check_refused(left_out, size - 16, TES_ERR_BAD_SNAPSHOT);
    /* As written, it restores and writes back the same bytes. */
    tes_world_t *copy = restore(bytes, size);
    uint32_t again = 0;
    uint8_t *back = snapshot_copy(copy, &again);
    CHECK(again == size && memcmp(back, bytes, size) == 0);
}

TEST(the_empty_sets_archetype_listed_after_another_is_refused) {
    /* Every world's first archetype is the empty set's: a snapshot listing it second would
     * restore, then write back with it first. */
    tes_world_t *world = fx_world(NULL);
    const tes_field_desc_t x[] = {{"x", TES_F32, 0}};
    tes_component_t p = fx_component(world, "P", x, 1);
    tes_entity_t with_p = fx_spawn(world, FX_IDS(p));
    tes_entity_t bare = fx_spawn(world, NULL, 0);
    uint32_t size = 0;
    uint8_t *bytes = snapshot_copy(world, &size);
    /* The archetypes: {0 components, 1, bare} (12 bytes), then {1 component, P, 1, with_p, x}
     * (20 bytes), after the archetype count at size - 36. */
    const uint32_t empty[3] = {0, 1, bare};
    const uint32_t first_p[4] = {1, p, 1, with_p};
    CHECK(memcmp(bytes + size - 32, empty, 12) == 0);
    CHECK(memcmp(bytes + size - 20, first_p, 16) == 0);
    uint8_t *swapped = copy_n(bytes, size);
    memcpy(swapped + size - 32, bytes + size - 20, 20);
    memcpy(swapped + size - 12, bytes + size - 32, 12);
    crc32_reseal(swapped, size);
    check_refused(swapped, size, TES_ERR_BAD_SNAPSHOT);
}

/* Snapshot bytes of a world holding `live` entities of {x, y} after a peak of `peak`, its
 * despawns made in the order `order` gives (0: as despawnMany of the spawn list does, back to
 * front; 1: front to back; 2: in a random order). */
static uint32_t after_peak(uint32_t peak, uint32_t live, int order) {
    tes_world_t *world = fx_world(NULL);
    const tes_field_desc_t xy[] = {{"x", TES_F32, 0}, {"y", TES_F32, 0}};
    tes_component_t p = fx_component(world, "P", xy, 2);
    tes_entity_t *e = (tes_entity_t *)fx_malloc((size_t)peak * sizeof *e);
    CHECK_OK(tes_spawn_batch(world, &p, 1, peak, e));
    uint32_t gone = peak - live;
    if (order == 0) CHECK_OK(tes_despawn_batch(world, e + live, gone));
    for (uint32_t i = 0; order == 1 && i < gone; i++)
        CHECK_OK(tes_despawn(world, e[live + i]));
    if (order == 2) {
        fx_rng_t rng = {7};
        for (uint32_t i = gone; i > 1; i--) { /* Fisher-Yates over the doomed part */
            uint32_t j = fx_rng_below(&rng, i);
            tes_entity_t t = e[live + i - 1];
            e[live + i - 1] = e[live + j];
            e[live + j] = t;
        }
        for (uint32_t i = 0; i < gone; i++)
            CHECK_OK(tes_despawn(world, e[live + i]));
    }
    const uint8_t *bytes = NULL;
    uint32_t size = 0;
    CHECK_OK(tes_snapshot(world, &bytes, &size));
    /* And it restores to the same free queue: the same handles come next. */
    tes_world_t *copy = NULL;
    CHECK_OK(tes_world_restore(NULL, bytes, size, &copy));
    harness_defer(fx_destroy_world, copy);
    for (int i = 0; i < 8; i++)
        CHECK_EQ(fx_spawn(copy, FX_IDS(p)), fx_spawn(world, FX_IDS(p)));
    fx_world_destroy_now(world);
    return size;
}

TEST(a_snapshot_after_a_peak_costs_what_is_live) {
    /* 2,000 live after a peak of 100,000: the table and the queue as runs, a few bytes; a
     * world that only ever held 2,000 differs by those bytes. Version 1 wrote 8 bytes for each
     * index ever used: 784,000 more. */
    uint32_t fresh = after_peak(2000, 2000, 0);
    uint32_t back_to_front = after_peak(100000, 2000, 0);
    uint32_t front_to_back = after_peak(100000, 2000, 1);
    CHECK(back_to_front <= fresh + 16);
    CHECK(front_to_back <= fresh + 16);
    /* A random despawn order is a permutation the queue must keep: about 3 bytes an index
     * (varint steps between neighbours), not 8. */
    uint32_t shuffled = after_peak(100000, 2000, 2);
    CHECK(shuffled > fresh && shuffled - fresh < 98000u * 4);
}
