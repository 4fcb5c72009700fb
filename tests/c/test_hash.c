/* tes_world_hash: XXH64 of the snapshot's body. The hasher matches the reference library's
 * outputs however its input is cut; a world's hash is the hash of its snapshot body, equal for
 * equal states (the same history, a restored copy) and different after any change a snapshot
 * sees: a value, a component, a generation, the free queue's order, a sparse member, a pair's
 * place in its list. Refused inside an iteration; allocates nothing. */
#include "../../src/internal.h" /* tesi_hash_*: the hasher is tested on its own first */
#include "fixtures.h"

typedef fx_mixed_t world_t;

/* 5,000 bytes of a fixed LCG, and XXH64 (seed 0) of their prefixes as libxxhash 0.8.1 computes
 * them (XXH64(data, n, 0), checked once by calling the library: not computed by our code). */
static const uint8_t *lcg_bytes(void) {
    static uint8_t data[5000];
    uint32_t s = 1;
    for (int i = 0; i < 5000; i++) {
        s = s * 1103515245u + 12345u;
        data[i] = (uint8_t)(s >> 16);
    }
    return data;
}

static const struct {
    uint32_t n;
    uint64_t xxh64;
} VECTORS[] = {
    {0, 0xef46db3751d8e999ull},   {1, 0xd2da77930f69647cull},    {3, 0xf7c331cf2042b940ull},
    {4, 0x1b042f821fc4a793ull},   {7, 0x41d39023940006c8ull},    {8, 0xef7823fce4ad9afbull},
    {9, 0x81cf88e9d8340150ull},   {31, 0x68c3dbb752f3fa97ull},   {32, 0xad7dc5a569bb047cull},
    {33, 0x475b642ac692e380ull},  {63, 0xc18c4743de1b99a8ull},   {64, 0x06872c5d6370de25ull},
    {100, 0xc6bd897b47ffa277ull}, {1000, 0x7ad5b044fb6fa81dull}, {4999, 0x020c74642c5fcb9bull},
};

static uint64_t hash_of(const uint8_t *bytes, size_t n, size_t piece) {
    tesi_hash_t h;
    tesi_hash_init(&h);
    for (size_t at = 0; at < n;) {
        size_t k = piece < n - at ? piece : n - at;
        tesi_hash_put(&h, bytes + at, k);
        at += k;
        piece = piece * 7 % 41 + 1; /* pieces of every size, across stripe boundaries */
    }
    return tesi_hash_final(&h);
}

TEST(xxh64_matches_the_reference_library_however_the_input_is_cut) {
    const uint8_t *data = lcg_bytes();
    for (size_t v = 0; v < sizeof VECTORS / sizeof *VECTORS; v++) {
        CHECK_EQ(hash_of(data, VECTORS[v].n, SIZE_MAX), VECTORS[v].xxh64);
        for (size_t piece = 1; piece <= 40; piece += 3)
            CHECK_EQ(hash_of(data, VECTORS[v].n, piece), VECTORS[v].xxh64);
    }
    /* xxHash's own published value for "abc". */
    CHECK_EQ(hash_of((const uint8_t *)"abc", 3, 3), 0x44bc2cf5ad770999ull);
}

static world_t random_world(uint64_t seed, uint32_t steps) {
    world_t w = fx_mixed(&(tes_world_desc_t){.chunk_bytes = 1024, .min_free_indices = 8}, false);
    fx_rng_t rng = {seed};
    fx_live_t live = {.n = 0};
    fx_mixed_changes(&w, &rng, &live, steps, 0);
    return w;
}

static uint64_t world_hash(tes_world_t *world) {
    uint64_t h = 0;
    CHECK_OK(tes_world_hash(world, &h));
    return h;
}

TEST(a_world_hash_is_xxh64_of_its_snapshot_body) {
    for (uint64_t seed = 1; seed <= 4; seed++) {
        world_t w = random_world(seed, 1200);
        uint64_t h = world_hash(w.world);
        const uint8_t *bytes = NULL;
        uint32_t size = 0;
        CHECK_OK(tes_snapshot(w.world, &bytes, &size));
        CHECK_EQ(h, hash_of(bytes + 16, size - 16, SIZE_MAX));
    }
}

TEST(equal_states_hash_equal) {
    for (uint64_t seed = 1; seed <= 4; seed++) {
        /* The same history twice, and a copy restored from a snapshot. */
        world_t a = random_world(seed, 1500), b = random_world(seed, 1500);
        CHECK_EQ(world_hash(a.world), world_hash(b.world));
        const uint8_t *bytes = NULL;
        uint32_t size = 0;
        CHECK_OK(tes_snapshot(a.world, &bytes, &size));
        tes_world_t *copy = NULL;
        tes_world_desc_t desc = {.chunk_bytes = 1024, .min_free_indices = 8};
        CHECK_OK(tes_world_restore(&desc, bytes, size, &copy));
        harness_defer(fx_destroy_world, copy);
        CHECK_EQ(world_hash(copy), world_hash(a.world));
        /* Hashing twice changes nothing. */
        CHECK_EQ(world_hash(a.world), world_hash(a.world));
    }
}

/* Two worlds with one small difference each; `change(w, k)` makes world k's. */
typedef void (*change_t)(const world_t *w, tes_entity_t *e, int k);

static void value(const world_t *w, tes_entity_t *e, int k) {
    CHECK_OK(tes_set_number(w->world, e[1], w->body, 0, 0, k ? 1.5 : 1.0));
}
static void component(const world_t *w, tes_entity_t *e, int k) {
    if (k) CHECK_OK(tes_add(w->world, e[2], w->tag));
}
static void free_queue_order(const world_t *w, tes_entity_t *e, int k) {
    CHECK_OK(tes_despawn(w->world, e[k ? 1 : 2]));
    CHECK_OK(tes_despawn(w->world, e[k ? 2 : 1]));
}
static void spawned_and_despawned(const world_t *w, tes_entity_t *e, int k) {
    /* Both end with e[3] dead and the same live set; one spawned and despawned once more. */
    CHECK_OK(tes_despawn(w->world, e[3]));
    if (k) CHECK_OK(tes_despawn(w->world, fx_spawn(w->world, FX_IDS(w->body))));
}
static void sparse_member(const world_t *w, tes_entity_t *e, int k) {
    if (k) CHECK_OK(tes_add(w->world, e[0], w->marker));
}
static void sparse_value(const world_t *w, tes_entity_t *e, int k) {
    CHECK_OK(tes_add(w->world, e[0], w->sparse));
    CHECK_OK(tes_set_number(w->world, e[0], w->sparse, 0, 0, k ? -2 : 2));
}
static void child_order(const world_t *w, tes_entity_t *e, int k) {
    CHECK_OK(tes_pair_add(w->world, e[1], w->child, e[0]));
    CHECK_OK(tes_pair_add(w->world, e[2], w->child, e[0]));
    if (k) CHECK_OK(tes_pair_place(w->world, e[2], w->child, e[0], e[1]));
}
static void pair_value(const world_t *w, tes_entity_t *e, int k) {
    CHECK_OK(tes_pair_add(w->world, e[1], w->likes, e[2]));
    CHECK_OK(tes_pair_set_number(w->world, e[1], w->likes, e[2], 0, 0, k ? 3 : 4));
}

TEST(every_change_a_snapshot_sees_changes_the_hash) {
    const change_t changes[] = {
        value,         component,    free_queue_order, spawned_and_despawned,
        sparse_member, sparse_value, child_order,      pair_value};
    for (size_t c = 0; c < sizeof changes / sizeof *changes; c++) {
        uint64_t h[2];
        for (int k = 0; k < 2; k++) {
            world_t w = fx_mixed(NULL, false);
            tes_entity_t e[4];
            for (int i = 0; i < 4; i++)
                e[i] = fx_spawn(w.world, FX_IDS(w.body));
            changes[c](&w, e, k);
            CHECK_OK(tes_world_validate(w.world));
            h[k] = world_hash(w.world);
        }
        if (h[0] == h[1]) harness_fail(__FILE__, __LINE__, "change %zu left the hash as it was", c);
    }
}

TEST(refused_inside_an_iteration_and_without_a_world_or_an_out) {
    world_t w = fx_mixed(NULL, false);
    fx_spawn(w.world, FX_IDS(w.body));
    uint64_t before = world_hash(w.world), h = 1;
    CHECK_ERR(tes_world_hash(NULL, &h), TES_ERR_INVALID_ARGUMENT);
    CHECK_EQ(h, 0);
    CHECK_ERR(tes_world_hash(w.world, NULL), TES_ERR_INVALID_ARGUMENT);
    CHECK_OK(tes_defer_begin(w.world));
    fx_spawn(w.world, FX_IDS(w.body));
    h = 1;
    CHECK_ERR(tes_world_hash(w.world, &h), TES_ERR_INVALID_ARGUMENT);
    CHECK_EQ(h, 0);
    CHECK_OK(tes_defer_end(w.world));
    CHECK(world_hash(w.world) != before); /* the deferred spawn, applied */
}

TEST(hashing_allocates_nothing) {
    world_t w = random_world(9, 800);
    uint64_t before = fx_stats(w.world).bytes_allocated;
    (void)world_hash(w.world);
    CHECK_EQ(fx_stats(w.world).bytes_allocated, before);
}
