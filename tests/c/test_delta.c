/* Deltas: a replica that applies a keyframe and then a delta per tick equals the source after
 * every tick (randomized worlds with chunk, sparse and local components, relations with data,
 * ChildOf with cascades and reordered children); lost, late and reordered deltas follow the
 * baseline rules; a replica older than the history gets a keyframe and never pins the source's
 * logs; a scope query limits the entities; a delta costs what changed; bad bytes are refused
 * with the replica untouched; out of memory leaves a valid replica that a keyframe repairs. */
#include "../crc32_reference.h"
#include "fixtures.h"

#include <math.h>

typedef fx_mixed_t world_t;
typedef fx_live_t live_t;

static world_t make(void) {
    return fx_mixed(&(tes_world_desc_t){.chunk_bytes = 1024, .min_free_indices = 8}, true);
}

static int compare_index(const void *a, const void *b) {
    uint32_t x = *(const tes_entity_t *)a & 0x1FFFFFu, y = *(const tes_entity_t *)b & 0x1FFFFFu;
    return (x > y) - (x < y);
}

static void put_values(fx_snapshot_t *s, tes_world_t *world, tes_entity_t e, tes_component_t c) {
    tes_component_info_t info;
    CHECK_OK(tes_component_info(world, c, &info));
    for (uint32_t f = 0; f < info.field_count; f++) {
        unsigned char value[64];
        tes_field_info_t field;
        CHECK_OK(tes_field_info(world, c, f, &field));
        CHECK_OK(tes_get(world, e, c, f, value, field.bytes));
        fx_snapshot_put(s, value, field.bytes);
    }
}

/* Not released with the case: the caller deletes it (tests keep many). */
static fx_snapshot_t *dump_new(void) {
    fx_snapshot_t *s = (fx_snapshot_t *)calloc(1, sizeof *s);
    CHECK(s != NULL);
    return s;
}

/* Every live entity, by index (malloc'd). */
static tes_entity_t *live_by_index(tes_world_t *world, uint32_t *out_n) {
    tes_world_stats_t stats = fx_stats(world);
    tes_entity_t *all = (tes_entity_t *)malloc((stats.entity_count + 1) * sizeof *all);
    CHECK(all != NULL);
    uint32_t n = 0;
    for (tes_archetype_t a = 0; a < stats.archetype_count; a++) {
        tes_archetype_info_t info = fx_archetype(world, a);
        for (uint32_t k = 0; k < info.chunk_count; k++) {
            tes_chunk_info_t chunk;
            CHECK_OK(tes_chunk_info(world, a, k, &chunk));
            memcpy(all + n, chunk.entities, chunk.count * sizeof *all);
            n += chunk.count;
        }
    }
    CHECK_EQ(n, stats.entity_count);
    qsort(all, n, sizeof *all, compare_index);
    *out_n = n;
    return all;
}

/* An entity's handle and its replicated components with their values. */
static void put_entity(fx_snapshot_t *s, const world_t *w, tes_entity_t e) {
    const tes_component_t comps[] = {w->body, w->vel, w->tag, w->sparse, w->marker};
    fx_snapshot_put_u32(s, e);
    for (uint32_t k = 0; k < 5; k++) {
        bool has = fx_has(w->world, e, comps[k]);
        fx_snapshot_put_u32(s, has);
        if (has) put_values(s, w->world, e, comps[k]);
    }
}

/* The replicated state, independent of storage order: live entities by index with their handles,
 * replicated components and values, and every pair list in order with the pairs' data (`local`
 * values are left out: they are not replicated). */
static fx_snapshot_t *dump(const world_t *w) {
    tes_world_t *world = w->world;
    fx_snapshot_t *s = dump_new();
    uint32_t n;
    tes_entity_t *all = live_by_index(world, &n);
    for (uint32_t i = 0; i < n; i++) {
        tes_entity_t e = all[i];
        put_entity(s, w, e);
        tes_entity_t list[512];
        uint32_t count = 0;
        CHECK_OK(tes_pair_targets(world, e, w->likes, list, 512, &count));
        fx_snapshot_put_u32(s, count);
        for (uint32_t k = 0; k < count; k++) {
            double v = 0;
            fx_snapshot_put_u32(s, list[k]);
            CHECK_OK(tes_pair_get_number(world, e, w->likes, list[k], 0, 0, &v));
            fx_snapshot_put(s, &v, sizeof v);
            CHECK_OK(tes_pair_get_number(world, e, w->likes, list[k], 1, 0, &v));
            fx_snapshot_put(s, &v, sizeof v);
        }
        CHECK_OK(tes_pair_sources(world, w->likes, e, list, 512, &count));
        fx_snapshot_put_u32(s, count);
        fx_snapshot_put(s, list, count * sizeof *list);
        tes_entity_t parent = 0;
        CHECK_OK(tes_pair_target(world, e, w->child, &parent));
        fx_snapshot_put_u32(s, parent);
        CHECK_OK(tes_pair_sources(world, w->child, e, list, 512, &count));
        fx_snapshot_put_u32(s, count);
        fx_snapshot_put(s, list, count * sizeof *list);
    }
    free(all);
    return s;
}

static void check_equal_dumps(fx_snapshot_t *a, fx_snapshot_t *b, const char *what, uint32_t at) {
    char message[160];
    if (!fx_snapshot_equal(a, b, message, sizeof message)) {
        harness_fail(__FILE__, __LINE__, "%s (step %u): %s", what, (unsigned)at, message);
    }
}

static void check_same(const world_t *source, const world_t *replica, uint32_t at) {
    fx_snapshot_t *a = dump(source), *b = dump(replica);
    check_equal_dumps(a, b, "replica differs from the source", at);
    fx_snapshot_delete(a);
    fx_snapshot_delete(b);
    CHECK_OK(tes_world_validate(replica->world));
}

typedef struct delta_copy_t {
    uint8_t *bytes;
    uint32_t size;
    uint64_t tick;
} delta_copy_t;

/* Encodes since `baseline` and copies the bytes (the replicator reuses its buffer). */
static delta_copy_t encode(tes_replicator_t *rep, uint64_t baseline) {
    const uint8_t *bytes = NULL;
    delta_copy_t d = {NULL, 0, 0};
    CHECK_OK(tes_delta_encode(rep, baseline, &bytes, &d.size, &d.tick));
    d.bytes = (uint8_t *)malloc(d.size); /* the caller frees it */
    CHECK(d.bytes != NULL);
    memcpy(d.bytes, bytes, d.size);
    return d;
}

static bool is_keyframe(const delta_copy_t *d) {
    return (d->bytes[6] & 1) != 0;
}

static tes_replicator_t *replicator_with(tes_world_t *world, tes_query_t *scope, uint32_t history,
                                         uint32_t flags) {
    tes_replicator_t *rep = NULL;
    tes_replicator_desc_t desc = {.scope = scope, .history = history, .flags = flags};
    CHECK_OK(tes_replicator_create(world, &desc, &rep));
    return rep;
}

static tes_replicator_t *replicator(tes_world_t *world, tes_query_t *scope, uint32_t history) {
    tes_replicator_t *rep = NULL;
    tes_replicator_desc_t desc = {.scope = scope, .history = history};
    CHECK_OK(tes_replicator_create(world, &desc, &rep));
    return rep;
}

static void apply(const world_t *replica, const delta_copy_t *d, bool expect_applied) {
    bool applied = !expect_applied;
    CHECK_OK(tes_delta_apply(replica->world, d->bytes, d->size, &applied));
    CHECK_EQ(applied, expect_applied);
    if (expect_applied) CHECK_EQ(tes_replica_tick(replica->world), d->tick);
}

/* The delta since the replica's tick, applied: the replica then equals the source (tick `tick`);
 * the source ticks after, so pruning runs between deltas. */
static void deliver(tes_replicator_t *rep, const world_t *source, const world_t *replica,
                    uint32_t tick) {
    delta_copy_t d = encode(rep, tes_replica_tick(replica->world));
    CHECK(!is_keyframe(&d));
    apply(replica, &d, true);
    check_same(source, replica, tick);
    free(d.bytes);
    CHECK_OK(tes_tick(source->world));
}

/* With TES_REPLICATOR_CHANGED_FIELDS too: records then carry only the fields that changed. */
static void check_a_delta_per_tick(uint32_t flags) {
    for (uint64_t seed = 1; seed <= 6; seed++) {
        world_t source = make(), replica = make();
        tes_replicator_t *rep = replicator_with(source.world, NULL, 0, flags);
        fx_rng_t rng = {seed};
        live_t live = {.n = 0};
        for (uint32_t i = 0; i < 40; i++)
            fx_mixed_change(&source, &rng, &live, i);
        delta_copy_t key = encode(rep, 0);
        CHECK(is_keyframe(&key));
        apply(&replica, &key, true);
        check_same(&source, &replica, 0);
        free(key.bytes);
        for (uint32_t tick = 1; tick <= 60; tick++) {
            uint32_t changes = 1 + fx_rng_below(&rng, 8);
            for (uint32_t k = 0; k < changes; k++)
                fx_mixed_change(&source, &rng, &live, tick * 10 + k);
            deliver(rep, &source, &replica, tick);
        }
        CHECK_OK(tes_world_validate(source.world));
    }
}

TEST(a_keyframe_then_a_delta_per_tick_keep_the_replica_equal) {
    check_a_delta_per_tick(0);
    check_a_delta_per_tick(TES_REPLICATOR_CHANGED_FIELDS);
}

/* A delta that places an entity at an index waiting in the replica's free queue takes it out
 * of the queue, whose links are then rebuilt before their next use: the replica's own spawns
 * after it walk the whole queue and never take that index, live again. */
/* The delta since the replica's tick, applied (the replica holds entities of its own too);
 * then the source ticks. */
static void send_to(tes_replicator_t *rep, tes_world_t *source, tes_world_t *replica) {
    const uint8_t *bytes = NULL;
    uint32_t size = 0;
    uint64_t at = 0;
    bool applied = false;
    CHECK_OK(tes_delta_encode(rep, tes_replica_tick(replica), &bytes, &size, &at));
    CHECK_OK(tes_delta_apply(replica, bytes, size, &applied));
    CHECK(applied);
    CHECK_OK(tes_tick(source));
}

static uint32_t index_of(tes_entity_t e) {
    return e & ((1u << TES_INDEX_BITS) - 1);
}

/* The replica's own entities beside the source's (a world without sparse storage, so that its
 * spawns and despawns take the lean paths): a delta places the source's entity at an index
 * waiting in the replica's free queue, its head or its tail as `at_head` says, which takes it
 * out of the queue; the queue's links are rebuilt before their next use. The replica's own
 * despawn then links no live record, and its spawns walk the whole queue and never take the
 * placed index. */
static void check_own_entities_beside_a_placed_one(bool at_head) {
    tes_world_desc_t desc = {.chunk_bytes = 1024, .min_free_indices = 1};
    tes_world_t *source = fx_world(&desc), *replica = fx_world(&desc);
    tes_component_t body = fx_component(source, "Body", fx_body_fields, 4);
    fx_component(replica, "Body", fx_body_fields, 4);
    tes_component_t vel = fx_component(replica, "Vel", fx_body_fields, 1);
    tes_replicator_t *rep = NULL;
    tes_replicator_desc_t rep_desc = {.components = &body, .component_count = 1};
    CHECK_OK(tes_replicator_create(source, &rep_desc, &rep));
    enum { N = 6 };
    tes_entity_t made[N], mine[N + 2];
    for (uint32_t i = 0; i < N; i++)
        CHECK_OK(tes_spawn(source, &body, 1, &made[i]));
    send_to(rep, source, replica);
    /* Two of the replica's own, on fresh indices (the source reuses its freed ones from here
     * on): room in their archetype, so that the spawns below need no new chunk. */
    CHECK_OK(tes_spawn(replica, &vel, 1, &mine[0]));
    CHECK_OK(tes_spawn(replica, &vel, 1, &mine[1]));
    /* The replica's queue lists them from the top index down: despawned from the top, the
     * source's oldest freed index is the replica's head; from the bottom, its tail. */
    for (uint32_t k = 0; k < N; k++)
        CHECK_OK(tes_despawn(source, made[at_head ? N - 1 - k : k]));
    send_to(rep, source, replica);
    tes_entity_t placed;
    CHECK_OK(tes_spawn(source, &body, 1, &placed));
    CHECK_OK(tes_set_number(source, placed, body, 0, 0, 42));
    send_to(rep, source, replica);
    CHECK(tes_is_alive(replica, placed));
    CHECK_OK(tes_despawn(replica, mine[0]));
    for (uint32_t i = 2; i < N + 2; i++) {
        CHECK_OK(tes_spawn(replica, &vel, 1, &mine[i]));
        CHECK(index_of(mine[i]) != index_of(placed));
        for (uint32_t k = 1; k < i; k++)
            CHECK(index_of(mine[k]) != index_of(mine[i]));
    }
    double x = 0;
    CHECK_OK(tes_get_number(replica, placed, body, 0, 0, &x));
    CHECK_EQ(x, 42);
    CHECK_OK(tes_world_validate(replica));
    tes_replicator_destroy(rep);
}

TEST(the_replicas_own_entities_never_touch_an_index_a_delta_placed) {
    check_own_entities_beside_a_placed_one(true);
    check_own_entities_beside_a_placed_one(false);
}

/* A world with no sparse component or relation registered despawns, spawns and moves rows on
 * its lean paths; each of them still stamps what a delta must carry. Random changes, a delta
 * per tick; the replica holds exactly the source's entities, components and values. */
TEST(a_world_without_sparse_storage_replicates_every_change) {
    for (uint64_t seed = 1; seed <= 6; seed++) {
        tes_world_t *worlds[2];
        tes_component_t body = 0, vel = 0, tag = 0;
        for (int k = 0; k < 2; k++) {
            worlds[k] = fx_world(&(tes_world_desc_t){.chunk_bytes = 1024, .min_free_indices = 2});
            body = fx_component(worlds[k], "Body", fx_body_fields, 4);
            vel = fx_component(worlds[k], "Vel", fx_body_fields, 1);
            tag = fx_tag(worlds[k], "Tag");
        }
        tes_world_t *source = worlds[0], *replica = worlds[1];
        const tes_component_t kinds[] = {body, vel, tag};
        tes_replicator_t *rep = NULL;
        CHECK_OK(tes_replicator_create(source, &(tes_replicator_desc_t){0}, &rep));
        fx_rng_t rng = {seed};
        tes_entity_t live[200], dead[400];
        uint32_t n = 0, gone = 0;
        for (uint32_t tick = 0; tick < 80; tick++) {
            for (uint32_t c = 0; c < 1 + fx_rng_below(&rng, 8); c++) {
                uint32_t op = fx_rng_below(&rng, 5);
                uint32_t i = n ? fx_rng_below(&rng, n) : 0;
                if ((op == 0 || n < 4) && n < 200) {
                    CHECK_OK(tes_spawn(source, kinds, 1 + fx_rng_below(&rng, 3), &live[n++]));
                } else if (op == 1 && gone < 400) {
                    CHECK_OK(tes_despawn(source, live[i]));
                    dead[gone++] = live[i];
                    live[i] = live[--n];
                } else if (op == 2) {
                    CHECK_OK(tes_add(source, live[i], kinds[1 + fx_rng_below(&rng, 2)]));
                } else if (op == 3) {
                    CHECK_OK(tes_remove(source, live[i], kinds[1 + fx_rng_below(&rng, 2)]));
                } else {
                    CHECK_OK(tes_set_number(source, live[i], body, 0, 0, tick * 10 + c));
                }
            }
            send_to(rep, source, replica);
            CHECK_EQ(fx_stats(replica).entity_count, n);
            for (uint32_t k = 0; k < gone; k++)
                CHECK(!tes_is_alive(replica, dead[k]));
            for (uint32_t k = 0; k < n; k++) {
                for (uint32_t m = 0; m < 3; m++)
                    CHECK_EQ(fx_has(replica, live[k], kinds[m]), fx_has(source, live[k], kinds[m]));
                double x = 0, y = 0;
                CHECK_OK(tes_get_number(source, live[k], body, 0, 0, &x));
                CHECK_OK(tes_get_number(replica, live[k], body, 0, 0, &y));
                CHECK_EQ(x, y);
            }
            CHECK_OK(tes_world_validate(replica));
        }
        tes_replicator_destroy(rep);
    }
}

/* A replicator of no component still replicates entities: a despawn stamps its index even
 * where no removal is logged. */
TEST(a_replicator_of_no_component_carries_spawns_and_despawns) {
    tes_world_t *source = fx_world(NULL), *replica = fx_world(NULL);
    tes_component_t body = fx_component(source, "Body", fx_body_fields, 4);
    fx_component(replica, "Body", fx_body_fields, 4);
    tes_replicator_t *rep = NULL;
    tes_replicator_desc_t desc = {.components = &body, .component_count = 0};
    CHECK_OK(tes_replicator_create(source, &desc, &rep));
    tes_entity_t e[4];
    for (uint32_t i = 0; i < 4; i++)
        CHECK_OK(tes_spawn(source, &body, 1, &e[i]));
    for (uint32_t step = 0; step < 3; step++) {
        if (step == 1) CHECK_OK(tes_despawn(source, e[1]));
        if (step == 2) CHECK_OK(tes_despawn(source, e[3]));
        send_to(rep, source, replica);
        for (uint32_t i = 0; i < 4; i++)
            CHECK_EQ(tes_is_alive(replica, e[i]), tes_is_alive(source, e[i]));
        CHECK_OK(tes_world_validate(replica));
    }
    tes_replicator_destroy(rep);
}

/* Forty random changes on the source, then its keyframe applied to the replica. */
static void start_pair(tes_replicator_t *rep, world_t *source, const world_t *replica,
                       fx_rng_t *rng, live_t *live) {
    for (uint32_t i = 0; i < 40; i++)
        fx_mixed_change(source, rng, live, i);
    delta_copy_t key = encode(rep, 0);
    apply(replica, &key, true);
    free(key.bytes);
}

/* A source that takes a checkpoint every tick and now and then rewinds a few and simulates
 * again (rollback netcode): a rewind is a change like any other, so each delta carries the net
 * difference and the replica equals the source after every tick. */
TEST(a_replica_follows_a_source_that_rewinds) {
    for (uint64_t seed = 1; seed <= 8; seed++) {
        world_t source = make(), replica = make();
        tes_replicator_t *rep = replicator(source.world, NULL, 0);
        fx_rng_t rng = {seed};
        live_t live = {.n = 0};
        start_pair(rep, &source, &replica, &rng, &live);
        uint32_t rewinds = 0;
        for (uint32_t tick = 1; tick <= 80; tick++) {
            uint32_t number = 0;
            CHECK_OK(tes_checkpoint(source.world, &number));
            if (number > 4 && fx_rng_chance(&rng, 25)) {
                CHECK_OK(tes_rewind(source.world, number - 1 - fx_rng_below(&rng, 4)));
                CHECK_OK(tes_world_validate(source.world));
                rewinds++;
                /* The live list after a rewind: every entity the world has. */
                uint32_t n;
                tes_entity_t *all = live_by_index(source.world, &n);
                live.n = n < 512 ? n : 512;
                memcpy(live.e, all, live.n * sizeof *all);
                free(all);
            }
            uint32_t changes = 1 + fx_rng_below(&rng, 8);
            for (uint32_t k = 0; k < changes; k++)
                fx_mixed_change(&source, &rng, &live, tick * 10 + k);
            deliver(rep, &source, &replica, tick);
        }
        CHECK(rewinds > 5);
    }
}

/* A replica that keeps checkpoints and rewinds (a client that predicts and rolls back what the
 * source sent): after a rewind it is the replica it was at that checkpoint, byte for byte and
 * with the replica tick it had then, so the next delta (since that tick, which the source's
 * history still holds) brings it back to the source. Its entities sit at the source's handles,
 * so its entity table has skipped indices a rewind must put back too. */
TEST(a_replica_that_rewinds_is_its_checkpoint_and_the_next_delta_catches_it_up) {
    typedef struct {
        uint32_t number;
        uint64_t tick;
        uint8_t *bytes;
        uint32_t size;
    } kept_t;
    for (uint64_t seed = 1; seed <= 6; seed++) {
        world_t source = make(), replica = make();
        tes_replicator_t *rep = replicator(source.world, NULL, 40);
        fx_rng_t rng = {seed};
        live_t live = {.n = 0};
        start_pair(rep, &source, &replica, &rng, &live);
        kept_t kept[16];
        uint32_t kept_count = 0, rewinds = 0;
        for (uint32_t tick = 1; tick <= 60; tick++) {
            uint32_t changes = 1 + fx_rng_below(&rng, 8);
            for (uint32_t k = 0; k < changes; k++)
                fx_mixed_change(&source, &rng, &live, tick * 10 + k);
            /* Since the replica's tick: a delta, or after a rewind a keyframe when the source
             * has pruned the logs that baseline needs. */
            delta_copy_t d = encode(rep, tes_replica_tick(replica.world));
            apply(&replica, &d, true);
            free(d.bytes);
            check_same(&source, &replica, tick);
            CHECK_OK(tes_tick(source.world));
            uint32_t number = 0;
            CHECK_OK(tes_checkpoint(replica.world, &number));
            if (kept_count == 16) { /* the ring's default depth: the oldest went */
                memmove(kept, kept + 1, 15 * sizeof *kept);
                kept_count--;
            }
            const uint8_t *bytes = NULL;
            uint32_t size = 0;
            CHECK_OK(tes_snapshot(replica.world, &bytes, &size));
            kept_t *k = &kept[kept_count++];
            *k = (kept_t){number, tes_replica_tick(replica.world), malloc(size), size};
            CHECK(k->bytes != NULL);
            memcpy(k->bytes, bytes, size);
            harness_defer(free, k->bytes);
            if (kept_count < 3 || !fx_rng_chance(&rng, 25)) continue;
            uint32_t at = kept_count - 2 - fx_rng_below(&rng, kept_count - 1);
            CHECK_OK(tes_rewind(replica.world, kept[at].number));
            CHECK_OK(tes_snapshot(replica.world, &bytes, &size));
            CHECK_EQ(size, kept[at].size);
            CHECK(memcmp(bytes, kept[at].bytes, size) == 0);
            CHECK_EQ(tes_replica_tick(replica.world), kept[at].tick);
            CHECK_OK(tes_world_validate(replica.world));
            kept_count = at + 1;
            rewinds++;
        }
        CHECK(rewinds > 5);
    }
}

static void check_baseline_rules(uint32_t flags) {
    enum { TICKS = 80, LAG = 3 };
    for (uint64_t seed = 11; seed <= 14; seed++) {
        world_t source = make(), replica = make();
        tes_replicator_t *rep = replicator_with(source.world, NULL, 32, flags);
        fx_rng_t rng = {seed};
        live_t live = {.n = 0};
        delta_copy_t sent[TICKS];
        fx_snapshot_t *states[TICKS];
        uint64_t acked[TICKS]; /* what the source had heard back when it encoded */
        for (uint32_t t = 0; t < TICKS; t++) {
            for (uint32_t k = 0, n = 1 + fx_rng_below(&rng, 6); k < n; k++)
                fx_mixed_change(&source, &rng, &live, t * 10 + k);
            /* Acknowledgements come back LAG ticks late. */
            acked[t] = t >= LAG ? acked[t - 1] : 0;
            if (t >= LAG && tes_replica_tick(replica.world) > acked[t]) {
                acked[t] = tes_replica_tick(replica.world);
            }
            sent[t] = encode(rep, acked[t]);
            states[t] = dump(&source);
            CHECK_OK(tes_tick(source.world));
            /* The channel: a third are lost, the rest arrive now or swapped with the next. */
            uint32_t fate = fx_rng_below(&rng, 3);
            if (fate == 0) continue;
            uint32_t deliver[2], count = 0;
            if (fate == 1 || t == 0) {
                deliver[count++] = t;
            } else {
                deliver[count++] = t;
                deliver[count++] = t - 1; /* the earlier one arrives late */
            }
            for (uint32_t i = 0; i < count; i++) {
                const delta_copy_t *d = &sent[deliver[i]];
                uint64_t before = tes_replica_tick(replica.world);
                bool applied = false;
                tes_result_t r = tes_delta_apply(replica.world, d->bytes, d->size, &applied);
                if (d->tick <= before) {
                    CHECK_OK(r);
                    CHECK(!applied); /* late: nothing new */
                } else if (!is_keyframe(d) && acked[deliver[i]] > before) {
                    CHECK_ERR(r, TES_ERR_DELTA_BASELINE);
                } else {
                    CHECK_OK(r);
                    CHECK(applied);
                    CHECK_EQ(tes_replica_tick(replica.world), d->tick);
                    fx_snapshot_t *now = dump(&replica);
                    check_equal_dumps(states[deliver[i]], now, "replica differs", deliver[i]);
                    fx_snapshot_delete(now);
                }
            }
        }
        for (uint32_t t = 0; t < TICKS; t++) {
            free(sent[t].bytes);
            fx_snapshot_delete(states[t]);
        }
        CHECK_OK(tes_world_validate(replica.world));
    }
}

TEST(lost_late_and_reordered_deltas_follow_the_baseline_rules) {
    check_baseline_rules(0);
    check_baseline_rules(TES_REPLICATOR_CHANGED_FIELDS);
}

/* Another source's keyframe is never late: a replica at a tick of another source (one that
 * restarted, its ticks starting again) takes the new source's keyframe, and the deltas that
 * follow, instead of skipping the keyframe, acknowledging its old tick and taking deltas on a
 * baseline it never had. */
TEST(a_replica_kept_across_a_restart_of_its_source_takes_the_new_keyframe) {
    world_t old = make(), replica = make();
    tes_replicator_t *rep = replicator(old.world, NULL, 8);
    fx_rng_t rng = {23};
    live_t live = {.n = 0};
    fx_mixed_changes(&old, &rng, &live, 40, 0);
    for (uint32_t t = 0; t < 30; t++) { /* the old source runs ahead */
        fx_mixed_change(&old, &rng, &live, 100 + t);
        delta_copy_t d = encode(rep, tes_replica_tick(replica.world));
        apply(&replica, &d, true);
        free(d.bytes);
        CHECK_OK(tes_tick(old.world));
    }
    uint64_t old_tick = tes_replica_tick(replica.world);
    world_t fresh = make(); /* the restart: other entities, ticks from the start */
    tes_replicator_t *again = replicator(fresh.world, NULL, 8);
    live_t fresh_live = {.n = 0};
    fx_mixed_changes(&fresh, &rng, &fresh_live, 12, 500);
    delta_copy_t key = encode(again, 0);
    CHECK(is_keyframe(&key) && key.tick < old_tick);
    bool applied = false;
    CHECK_OK(tes_delta_apply(replica.world, key.bytes, key.size, &applied));
    CHECK(applied);
    CHECK_EQ(tes_replica_tick(replica.world), key.tick);
    check_same(&fresh, &replica, 0);
    for (uint32_t t = 0; t < 10; t++) { /* and it follows the new source's deltas */
        fx_mixed_change(&fresh, &rng, &fresh_live, 600 + t);
        delta_copy_t d = encode(again, tes_replica_tick(replica.world));
        CHECK(!is_keyframe(&d));
        apply(&replica, &d, true);
        free(d.bytes);
        check_same(&fresh, &replica, t + 1);
    }
    /* The same keyframe again is late: of the source the replica holds now. */
    uint64_t now = tes_replica_tick(replica.world);
    CHECK_OK(tes_delta_apply(replica.world, key.bytes, key.size, &applied));
    CHECK(!applied);
    CHECK_EQ(tes_replica_tick(replica.world), now);
    check_same(&fresh, &replica, 11);
    free(key.bytes);
    CHECK_OK(tes_world_validate(replica.world));
}

/* Two sources at the same ticks: a replica takes deltas only from the source of its keyframe.
 * Another's delta on the same baseline tick is refused (DELTA_BASELINE, nothing changed), where
 * it merged the other world's records into this one; a rewind to before a keyframe takes the
 * replica back to the source it held then. */
TEST(a_replica_takes_deltas_only_from_the_source_of_its_keyframe) {
    world_t a = make(), b = make(), replica = make();
    tes_replicator_t *rep_a = replicator(a.world, NULL, 8), *rep_b = replicator(b.world, NULL, 8);
    fx_rng_t rng = {31};
    live_t live_a = {.n = 0}, live_b = {.n = 0};
    fx_mixed_changes(&a, &rng, &live_a, 20, 0);
    fx_mixed_changes(&b, &rng, &live_b, 20, 0);
    delta_copy_t key_a = encode(rep_a, 0), key_b = encode(rep_b, 0);
    CHECK_EQ(key_a.tick, key_b.tick); /* the same ticks: only the source tells them apart */
    apply(&replica, &key_a, true);
    fx_mixed_change(&b, &rng, &live_b, 100);
    delta_copy_t from_b = encode(rep_b, key_b.tick);
    CHECK(!is_keyframe(&from_b) && from_b.tick > key_a.tick);
    fx_snapshot_t *before = fx_snapshot_full_of(replica.world);
    CHECK_ERR(tes_delta_apply(replica.world, from_b.bytes, from_b.size, NULL),
              TES_ERR_DELTA_BASELINE);
    FX_CHECK_UNCHANGED_FULL(before, replica.world);
    CHECK_EQ(tes_replica_tick(replica.world), key_a.tick);
    check_same(&a, &replica, 0);
    /* Its own source's deltas go on; b's keyframe switches it to b. */
    uint32_t checkpoint = 0;
    CHECK_OK(tes_checkpoint(replica.world, &checkpoint));
    fx_mixed_change(&a, &rng, &live_a, 200);
    delta_copy_t from_a = encode(rep_a, key_a.tick);
    apply(&replica, &from_a, true);
    check_same(&a, &replica, 1);
    delta_copy_t key_b2 = encode(rep_b, 0);
    apply(&replica, &key_b2, true);
    check_same(&b, &replica, 2);
    /* Back to the checkpoint: a's state, a's tick, and a's deltas again, not b's. */
    CHECK_OK(tes_rewind(replica.world, checkpoint));
    CHECK_EQ(tes_replica_tick(replica.world), key_a.tick);
    fx_mixed_change(&b, &rng, &live_b, 300);
    delta_copy_t from_b2 = encode(rep_b, key_a.tick);
    CHECK_ERR(tes_delta_apply(replica.world, from_b2.bytes, from_b2.size, NULL),
              TES_ERR_DELTA_BASELINE);
    delta_copy_t from_a2 = encode(rep_a, key_a.tick);
    apply(&replica, &from_a2, true);
    check_same(&a, &replica, 3);
    delta_copy_t *all[] = {&key_a, &key_b, &from_b, &from_a, &key_b2, &from_b2, &from_a2};
    for (uint32_t i = 0; i < sizeof all / sizeof *all; i++)
        free(all[i]->bytes);
}

TEST(a_baseline_older_than_the_history_gets_a_keyframe_that_repairs_the_replica) {
    world_t source = make(), replica = make();
    tes_replicator_t *rep = replicator(source.world, NULL, 4);
    fx_rng_t rng = {7};
    live_t live = {.n = 0};
    fx_mixed_changes(&source, &rng, &live, 30, 0);
    delta_copy_t first = encode(rep, 0);
    apply(&replica, &first, true);
    uint64_t baseline = first.tick;
    free(first.bytes);
    for (uint32_t t = 0; t < 3; t++) {
        fx_mixed_change(&source, &rng, &live, 100 + t);
        delta_copy_t d = encode(rep, baseline);
        CHECK(!is_keyframe(&d)); /* still within the history of 4 */
        free(d.bytes);
    }
    for (uint32_t t = 0; t < 6; t++) {
        fx_mixed_change(&source, &rng, &live, 200 + t);
        free(encode(rep, baseline).bytes);
        CHECK_OK(tes_tick(source.world));
    }
    delta_copy_t late = encode(rep, baseline);
    CHECK(is_keyframe(&late));
    apply(&replica, &late, true);
    check_same(&source, &replica, 0);
    free(late.bytes);
    /* Released: no replica needs a baseline before the latest encode, so older ones get a
     * keyframe although they are within the history. */
    delta_copy_t a = encode(rep, late.tick), b = encode(rep, a.tick);
    CHECK(!is_keyframe(&a) && !is_keyframe(&b));
    CHECK_OK(tes_replicator_release(rep, b.tick));
    delta_copy_t older = encode(rep, a.tick), newest = encode(rep, b.tick);
    CHECK(is_keyframe(&older) && !is_keyframe(&newest));
    free(a.bytes);
    free(b.bytes);
    free(older.bytes);
    free(newest.bytes);
    /* A baseline the replicator never handed out (in the future) is a keyframe too. */
    delta_copy_t future = encode(rep, UINT64_MAX / 2);
    CHECK(is_keyframe(&future));
    free(future.bytes);
}

/* With or without tes_tick (a server that runs no systems): each encode prunes what its
 * components' consumers have all seen. */
static void check_logs_stay_flat(bool ticking) {
    world_t source = make();
    tes_replicator_t *rep = replicator(source.world, NULL, 8);
    free(encode(rep, 0).bytes);
    uint64_t settled = 0;
    for (uint32_t t = 0; t < 600; t++) {
        /* Churn that fills every log: spawns, pair events, despawns. */
        tes_entity_t a, b;
        tes_component_t set[] = {source.body, source.sparse};
        CHECK_OK(tes_spawn(source.world, set, 2, &a));
        CHECK_OK(tes_spawn(source.world, set, 1, &b));
        CHECK_OK(tes_pair_add(source.world, a, source.likes, b));
        CHECK_OK(tes_pair_set_number(source.world, a, source.likes, b, 0, 0, t));
        CHECK_OK(tes_despawn(source.world, b));
        CHECK_OK(tes_despawn(source.world, a));
        free(encode(rep, 1).bytes); /* nobody ever acknowledges */
        if (ticking) CHECK_OK(tes_tick(source.world));
        if (t == 100) settled = fx_stats(source.world).bytes_allocated;
    }
    /* Memory stays flat: what is older than the history is pruned. */
    CHECK(fx_stats(source.world).bytes_allocated <= settled + 4096);
    tes_replicator_destroy(rep);
    CHECK_OK(tes_world_validate(source.world));
}

TEST(a_lost_replica_never_pins_the_logs_of_the_source) {
    check_logs_stay_flat(true);
}

TEST(a_world_that_never_ticks_is_pruned_by_its_encodes) {
    check_logs_stay_flat(false);
}

TEST(a_delta_costs_what_changed) {
    world_t source = make(), replica = make();
    tes_replicator_t *rep = replicator(source.world, NULL, 0);
    tes_component_t set[] = {source.body, source.vel};
    tes_entity_t *all = (tes_entity_t *)fx_malloc(20000 * sizeof *all);
    CHECK_OK(tes_spawn_batch(source.world, set, 2, 20000, all));
    delta_copy_t key = encode(rep, 0);
    CHECK(key.size > 20000u * 20);
    apply(&replica, &key, true);
    free(key.bytes);
    for (uint32_t i = 0; i < 10; i++)
        CHECK_OK(tes_set_number(source.world, all[i * 1999], source.body, 0, 0, i + 0.5));
    delta_copy_t d = encode(rep, tes_replica_tick(replica.world));
    /* 10 records of an index gap (2 bytes: 1,999 apart), the states of 5 components (2 bytes)
     * and Body's 17 bytes; and the fixed parts. */
    CHECK(d.size <= 60 + 4 * 7 + 8 + 10 * (2 + 2 + 17) + 8);
    apply(&replica, &d, true);
    check_same(&source, &replica, 0);
    free(d.bytes);
    /* Nothing changed: no records at all. */
    delta_copy_t none = encode(rep, tes_replica_tick(replica.world));
    CHECK(none.size <= 60 + 4 * 7 + 8 + 8);
    free(none.bytes);
}

TEST(local_components_stay_out_and_the_replicas_own_components_stay) {
    world_t source = make(), replica = make();
    tes_replicator_t *rep = replicator(source.world, NULL, 0);
    tes_entity_t e;
    tes_component_t set[] = {source.body, source.local};
    CHECK_OK(tes_spawn(source.world, set, 2, &e));
    CHECK_OK(tes_set_number(source.world, e, source.local, 0, 0, 42));
    delta_copy_t key = encode(rep, 0);
    apply(&replica, &key, true);
    CHECK(fx_has(replica.world, e, replica.body));
    CHECK(!fx_has(replica.world, e, replica.local));
    /* The replica's own component on a replicated entity survives later deltas. */
    CHECK_OK(tes_add(replica.world, e, replica.local));
    CHECK_OK(tes_set_number(replica.world, e, replica.local, 0, 0, 7));
    CHECK_OK(tes_set_number(source.world, e, source.body, 0, 0, 3));
    CHECK_OK(tes_set_number(source.world, e, source.local, 0, 0, 43));
    delta_copy_t d = encode(rep, key.tick);
    apply(&replica, &d, true);
    CHECK_EQ(fx_get_number(replica.world, e, replica.body, 0, 0), 3);
    CHECK_EQ(fx_get_number(replica.world, e, replica.local, 0, 0), 7);
    free(key.bytes);
    free(d.bytes);
    /* Naming a local component is refused. */
    tes_replicator_t *bad = NULL;
    tes_replicator_desc_t desc = {.components = &source.local, .component_count = 1};
    CHECK_ERR(tes_replicator_create(source.world, &desc, &bad), TES_ERR_INVALID_ARGUMENT);
    /* A chosen subset: only Vel travels. */
    tes_replicator_t *only = NULL;
    desc = (tes_replicator_desc_t){.components = &source.vel, .component_count = 1};
    CHECK_OK(tes_replicator_create(source.world, &desc, &only));
    world_t other = make();
    CHECK_OK(tes_add(source.world, e, source.vel));
    delta_copy_t k2 = encode(only, 0);
    apply(&other, &k2, true);
    CHECK(fx_has(other.world, e, other.vel) && !fx_has(other.world, e, other.body));
    free(k2.bytes);
}

TEST(a_scope_query_limits_the_entities_and_entering_ones_arrive_whole) {
    world_t source = make(), replica = make();
    tes_query_t *scope = NULL;
    tes_query_desc_t qd = {.all = &source.vel, .all_count = 1};
    CHECK_OK(tes_query_create(source.world, &qd, &scope));
    tes_replicator_t *rep = replicator(source.world, scope, 0);
    tes_entity_t in, out;
    tes_component_t with[] = {source.body, source.vel}, without[] = {source.body};
    CHECK_OK(tes_spawn(source.world, with, 2, &in));
    CHECK_OK(tes_spawn(source.world, without, 1, &out));
    CHECK_OK(tes_add(source.world, out, source.sparse));
    CHECK_OK(tes_set_number(source.world, out, source.sparse, 0, 0, 9.5));
    CHECK_OK(tes_set_number(source.world, out, source.body, 1, 0, 77));
    CHECK_OK(tes_pair_add(source.world, in, source.likes, out)); /* out of scope: not sent */
    CHECK_OK(tes_pair_set_number(source.world, in, source.likes, out, 0, 0, 2.5));
    delta_copy_t key = encode(rep, 0);
    apply(&replica, &key, true);
    CHECK(tes_is_alive(replica.world, in) && !tes_is_alive(replica.world, out));
    /* `out` enters the scope: it arrives with every value, even those set long ago. */
    CHECK_OK(tes_add(source.world, out, source.vel));
    delta_copy_t d1 = encode(rep, key.tick);
    apply(&replica, &d1, true);
    CHECK(tes_is_alive(replica.world, out));
    CHECK_EQ(fx_get_number(replica.world, out, replica.sparse, 0, 0), 9.5);
    CHECK_EQ(fx_get_number(replica.world, out, replica.body, 1, 0), 77);
    /* ... and with its pairs to entities in scope, added before it entered. */
    bool has = false;
    CHECK_OK(tes_pair_has(replica.world, in, replica.likes, out, &has));
    CHECK(has);
    double amount = 0;
    CHECK_OK(tes_pair_get_number(replica.world, in, replica.likes, out, 0, 0, &amount));
    CHECK_EQ(amount, 2.5);
    /* `in` leaves it: despawned on the replica. */
    CHECK_OK(tes_remove(source.world, in, source.vel));
    delta_copy_t d2 = encode(rep, d1.tick);
    apply(&replica, &d2, true);
    CHECK(!tes_is_alive(replica.world, in) && tes_is_alive(replica.world, out));
    free(key.bytes);
    free(d1.bytes);
    free(d2.bytes);
    tes_replicator_destroy(rep);
    tes_query_destroy(source.world, scope);
}

static int compare_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* What a replica limited to some entities holds (`keep`; NULL: all): those entities with their
 * replicated components and values, and the pairs between them (as a sorted set: an entity
 * entering the scope brings its pairs after the others). */
typedef bool (*keep_fn)(const world_t *w, tes_entity_t e, const void *context);

static bool keep_kept(keep_fn keep, const world_t *w, tes_entity_t e, const void *context) {
    return !keep || keep(w, e, context);
}

static fx_snapshot_t *dump_kept(const world_t *w, keep_fn keep, const void *context) {
    tes_world_t *world = w->world;
    fx_snapshot_t *s = dump_new();
    uint32_t n, pair_count = 0;
    tes_entity_t *all = live_by_index(world, &n);
    uint64_t *pairs = (uint64_t *)malloc((n * 4 + 1) * sizeof *pairs);
    CHECK(pairs != NULL);
    for (uint32_t i = 0; i < n; i++) {
        tes_entity_t e = all[i];
        if (!keep_kept(keep, w, e, context)) continue;
        put_entity(s, w, e);
        tes_entity_t targets[512];
        uint32_t count = 0;
        for (int rel = 0; rel < 2; rel++) {
            tes_component_t r = rel ? w->child : w->likes;
            CHECK_OK(tes_pair_targets(world, e, r, targets, 512, &count));
            for (uint32_t k = 0; k < count; k++) {
                if (keep_kept(keep, w, targets[k], context)) {
                    pairs[pair_count++] = (uint64_t)rel << 63 | (uint64_t)e << 32 | targets[k];
                }
            }
        }
    }
    qsort(pairs, pair_count, sizeof *pairs, compare_u64);
    fx_snapshot_put_u32(s, pair_count);
    if (pair_count) fx_snapshot_put(s, pairs, pair_count * sizeof *pairs);
    free(all);
    free(pairs);
    return s;
}

static bool has_vel(const world_t *w, tes_entity_t e, const void *context) {
    (void)context;
    return fx_has(w->world, e, w->vel);
}

TEST(a_scoped_replica_holds_exactly_the_entities_in_scope_after_every_tick) {
    for (uint64_t seed = 41; seed <= 44; seed++) {
        world_t source = make(), replica = make();
        tes_query_t *scope = NULL;
        tes_query_desc_t qd = {.all = &source.vel, .all_count = 1};
        CHECK_OK(tes_query_create(source.world, &qd, &scope));
        tes_replicator_t *rep = replicator(source.world, scope, 0);
        fx_rng_t rng = {seed};
        live_t live = {.n = 0};
        for (uint32_t tick = 0; tick < 60; tick++) {
            for (uint32_t k = 0, n = 1 + fx_rng_below(&rng, 8); k < n; k++)
                fx_mixed_change(&source, &rng, &live, tick * 10 + k);
            /* Vel comes and goes: entities enter and leave the scope. */
            if (live.n) {
                tes_entity_t e = live.e[fx_rng_below(&rng, live.n)];
                if (fx_rng_chance(&rng, 50)) {
                    CHECK_OK(tes_add(source.world, e, source.vel));
                } else {
                    CHECK_OK(tes_remove(source.world, e, source.vel));
                }
            }
            delta_copy_t d = encode(rep, tes_replica_tick(replica.world));
            apply(&replica, &d, true);
            free(d.bytes);
            fx_snapshot_t *a = dump_kept(&source, has_vel, NULL),
                          *b = dump_kept(&replica, NULL, NULL);
            check_equal_dumps(a, b, "scoped replica differs", tick);
            fx_snapshot_delete(a);
            fx_snapshot_delete(b);
            /* And it holds nothing else. */
            CHECK_EQ(fx_stats(replica.world).entity_count,
                     (uint32_t)fx_run_count(source.world, scope));
            CHECK_OK(tes_world_validate(replica.world));
            CHECK_OK(tes_tick(source.world));
        }
    }
}

/* Applying must fail with a checked error and leave the replica exactly as it was. */
static void check_refused(const world_t *replica, const uint8_t *bytes, uint32_t size,
                          const fx_snapshot_t *before, uint64_t tick) {
    bool applied = true;
    tes_result_t r = tes_delta_apply(replica->world, bytes, size, &applied);
    CHECK(r == TES_ERR_BAD_DELTA || r == TES_ERR_SNAPSHOT_VERSION || r == TES_ERR_DELTA_SCHEMA ||
          r == TES_ERR_DELTA_BASELINE);
    CHECK(!applied);
    CHECK_EQ(tes_replica_tick(replica->world), tick);
    FX_CHECK_UNCHANGED_FULL(before, replica->world);
}

TEST(bad_bytes_are_refused_and_leave_the_replica_as_it_was) {
    world_t source = make(), replica = make();
    tes_replicator_t *rep = replicator(source.world, NULL, 0);
    fx_rng_t rng = {21};
    live_t live = {.n = 0};
    fx_mixed_changes(&source, &rng, &live, 30, 0);
    delta_copy_t key = encode(rep, 0);
    apply(&replica, &key, true);
    fx_mixed_changes(&source, &rng, &live, 12, 100);
    delta_copy_t d = encode(rep, key.tick);
    fx_snapshot_t *before = fx_snapshot_full_of(replica.world);
    for (uint32_t n = 0; n < d.size; n++)
        check_refused(&replica, d.bytes, n, before, key.tick); /* every truncation */
    uint8_t *copy = (uint8_t *)fx_malloc(d.size);
    for (uint32_t bit = 0; bit < d.size * 8; bit++) { /* every flipped bit */
        memcpy(copy, d.bytes, d.size);
        copy[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        check_refused(&replica, copy, d.size, before, key.tick);
    }
    /* Random corruption behind a valid checksum: refused, or applied to a valid world. */
    for (uint32_t round = 0; round < 3000; round++) {
        memcpy(copy, d.bytes, d.size);
        for (uint32_t k = 0, n = 1 + fx_rng_below(&rng, 4); k < n; k++)
            copy[12 + fx_rng_below(&rng, d.size - 12)] = (uint8_t)fx_rng_next(&rng);
        crc32_reseal_delta(copy, d.size);
        world_t probe = make();
        CHECK_OK(tes_delta_apply(probe.world, key.bytes, key.size, NULL));
        fx_snapshot_t *probe_before = fx_snapshot_full_of(probe.world);
        bool applied = false;
        tes_result_t r = tes_delta_apply(probe.world, copy, d.size, &applied);
        if (r == TES_OK) {
            CHECK_OK(tes_world_validate(probe.world));
        } else {
            check_refused(&probe, copy, d.size, probe_before, key.tick);
        }
        fx_world_destroy_now(probe.world);
    }
    /* Versions 1 (fixed-width records), 2 (no quantized fields), 3 (records in whole bytes) and
     * 4 (no source), no longer read; another schema, a baseline the replica lacks. */
    for (uint8_t version = 1; version <= 4; version++) {
        memcpy(copy, d.bytes, d.size);
        copy[4] = version;
        crc32_reseal_delta(copy, d.size);
        CHECK_ERR(tes_delta_apply(replica.world, copy, d.size, NULL), TES_ERR_SNAPSHOT_VERSION);
    }
    /* A source of 0, which no replicator writes. */
    memcpy(copy, d.bytes, d.size);
    uint32_t at = 12;
    for (uint32_t varints = 0; varints < 2; at++)
        varints += !(copy[at] & 0x80); /* to, span */
    memset(copy + at + 4, 0, 4);       /* after the schema CRC */
    crc32_reseal_delta(copy, d.size);
    CHECK_ERR(tes_delta_apply(replica.world, copy, d.size, NULL), TES_ERR_BAD_DELTA);
    world_t fresh = make();
    CHECK_ERR(tes_delta_apply(fresh.world, d.bytes, d.size, NULL), TES_ERR_DELTA_BASELINE);
    tes_world_t *stranger = fx_world(NULL);
    fx_component(stranger, "Body", fx_weight_fields, 2);
    CHECK_ERR(tes_delta_apply(stranger, key.bytes, key.size, NULL), TES_ERR_DELTA_SCHEMA);
    FX_CHECK_UNCHANGED_FULL(before, replica.world);
    /* The real thing still applies, once. */
    apply(&replica, &d, true);
    check_same(&source, &replica, 0);
    apply(&replica, &d, false);
    free(key.bytes);
    free(d.bytes);
}

/* Delta bytes (format version 5, docs/format.md) read and written again by the tests, to make
 * deltas a source could write but no test world can reach. */
typedef struct cursor_t {
    const uint8_t *bytes;
    uint32_t at;
} cursor_t;

static uint32_t take_u32(cursor_t *c) {
    uint32_t v;
    memcpy(&v, c->bytes + c->at, 4);
    c->at += 4;
    return v;
}

static uint64_t take_varint64(cursor_t *c) {
    uint64_t v = 0;
    for (uint32_t shift = 0;; shift += 7) {
        uint8_t b = c->bytes[c->at++];
        v |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80)) return v;
    }
}

static uint32_t take_varint(cursor_t *c) {
    return (uint32_t)take_varint64(c);
}

typedef struct out_t {
    uint8_t *bytes;
    uint32_t size;
} out_t;

static void put_bytes(out_t *o, const void *p, uint32_t n) {
    o->bytes = (uint8_t *)realloc(o->bytes, o->size + n);
    CHECK(o->bytes != NULL);
    memcpy(o->bytes + o->size, p, n);
    o->size += n;
}

static void put_varint64(out_t *o, uint64_t v) {
    uint8_t b[10];
    uint32_t n = 0;
    for (; v >= 0x80; v >>= 7)
        b[n++] = (uint8_t)(v | 0x80);
    b[n++] = (uint8_t)v;
    put_bytes(o, b, n);
}

static void put_varint(out_t *o, uint32_t v) {
    put_varint64(o, v);
}

/* Bits of a delta's records (docs/format.md, "Records"): low bits first. */
typedef struct bits_in_t {
    const uint8_t *bytes;
    uint64_t at; /* in bits */
} bits_in_t;

static uint64_t take_bits(bits_in_t *in, uint32_t count) {
    uint64_t v = 0;
    for (uint32_t i = 0; i < count; i++, in->at++)
        v |= (uint64_t)((in->bytes[in->at / 8] >> (in->at % 8)) & 1u) << i;
    return v;
}

/* A record's gap: a Rice code with parameter k, 16 ones escaping to 21 bits. */
static uint32_t take_gap(bits_in_t *in, uint32_t k) {
    uint32_t quotient = 0;
    while (quotient < 16 && take_bits(in, 1))
        quotient++;
    if (quotient == 16) return (uint32_t)take_bits(in, 21) + 1;
    return (uint32_t)((quotient << k | take_bits(in, k)) + 1);
}

typedef struct bits_out_t {
    out_t *o;
    uint8_t byte;
    uint32_t n;
} bits_out_t;

static void put_bits(bits_out_t *b, uint64_t v, uint32_t count) {
    for (uint32_t i = 0; i < count; i++) {
        b->byte |= (uint8_t)(((v >> i) & 1u) << b->n);
        if (++b->n == 8) {
            put_bytes(b->o, &b->byte, 1);
            b->byte = 0;
            b->n = 0;
        }
    }
}

static void bits_end(bits_out_t *b) {
    if (b->n) put_bytes(b->o, &b->byte, 1);
    b->byte = 0;
    b->n = 0;
}

static void put_gap_bits(bits_out_t *b, uint32_t gap, uint32_t k) {
    uint32_t g = gap - 1;
    if ((g >> k) < 16) {
        put_bits(b, (1ull << (g >> k)) - 1, (g >> k) + 1);
        put_bits(b, g, k);
    } else {
        put_bits(b, 0xFFFF, 16);
        put_bits(b, g, 21);
    }
}

/* A delta's records as a reader finds them (docs/format.md, "Entities"), for a replicator of
 * every component without TES_COMPONENT_LOCAL and no quantized field: the plan, and where the
 * records' bits start. */
typedef struct records_view_t {
    uint32_t records;
    uint32_t gap_bits, patterns, pattern_bytes;
    const uint8_t *list;           /* the listed patterns */
    uint32_t plain;                /* replicated components that are not relations, */
    tes_component_info_t info[24]; /* their schemas, in id order */
    uint32_t relations;
    uint64_t bits; /* the first record's first bit */
} records_view_t;

static records_view_t view_records(const world_t *source, const delta_copy_t *d) {
    records_view_t v;
    memset(&v, 0, sizeof v);
    for (tes_component_t id = 0; id < fx_stats(source->world).component_count; id++) {
        tes_component_info_t info;
        CHECK_OK(tes_component_info(source->world, id, &info));
        if (info.flags & TES_COMPONENT_LOCAL) continue;
        if (info.flags & TES_COMPONENT_RELATION) {
            v.relations++;
        } else {
            CHECK(v.plain < 24);
            v.info[v.plain++] = info;
        }
    }
    cursor_t c = {d->bytes, 12};
    take_varint64(&c), take_varint64(&c), take_u32(&c), take_u32(&c); /* to, span, schema, source */
    if (is_keyframe(d)) {
        uint32_t count = take_varint(&c);
        CHECK_EQ(count, v.plain + v.relations);
        for (uint32_t i = 0; i < count; i++)
            take_varint(&c); /* ids */
        for (uint32_t i = 0; i < count; i++) {
            take_u32(&c);         /* flags */
            c.at += take_u32(&c); /* name */
            for (uint32_t f = 0, fields = take_u32(&c); f < fields; f++) {
                c.at += take_u32(&c);
                c.at += 8; /* type, length */
            }
        }
        CHECK_EQ(take_varint(&c), 0); /* quanta */
    }
    for (uint32_t gone = take_varint(&c); gone; gone--)
        take_varint(&c);
    v.records = take_varint(&c);
    v.pattern_bytes = (2 * v.plain + 1 + 7) / 8;
    if (v.records) {
        v.gap_bits = d->bytes[c.at++];
        v.patterns = take_varint(&c);
        v.list = d->bytes + c.at;
        c.at += v.patterns * v.pattern_bytes;
    }
    v.bits = (uint64_t)c.at * 8;
    return v;
}

/* `count` bits at the reader, within the delta's `size` bytes. */
static uint64_t take_bits_of(bits_in_t *in, uint32_t count, uint32_t size) {
    CHECK(in->at + count <= (uint64_t)size * 8);
    return take_bits(in, count);
}

/* The bits of gap code of `gap` with parameter k: a quotient below 16 in unary and a zero, and
 * the k low bits; or 16 ones and 21 bits. */
static uint32_t gap_code_bits(uint32_t gap, uint32_t k) {
    uint32_t quotient = (gap - 1) >> k;
    return quotient < 16 ? quotient + 1 + k : 16 + 21;
}

/* A delta's records walked bit by bit (no field masks: no CHANGED_FIELDS): each record's index,
 * with its generation when whole (its handle then); how many gaps escaped (each checked to need
 * it), how many were 1; and the byte after the records, whose padding bits were 0. */
typedef struct walked_t {
    tes_entity_t *at; /* malloc'd, one per record */
    uint32_t escapes, neighbours, whole, end;
} walked_t;

static walked_t walk_records(const records_view_t *v, const delta_copy_t *d) {
    walked_t w = {(tes_entity_t *)fx_malloc((v->records + 1) * sizeof *w.at), 0, 0, 0, 0};
    uint32_t index_bits = 0;
    while (v->patterns > 1 && (v->patterns - 1) >> index_bits)
        index_bits++;
    bits_in_t in = {d->bytes, v->bits};
    uint32_t index = 0;
    for (uint32_t r = 0; r < v->records; r++) {
        uint32_t quotient = 0, gap;
        while (quotient < 16 && take_bits_of(&in, 1, d->size))
            quotient++;
        if (quotient == 16) {
            gap = (uint32_t)take_bits_of(&in, 21, d->size) + 1;
            CHECK((gap - 1) >> v->gap_bits >= 16);
            w.escapes++;
        } else {
            gap = (quotient << v->gap_bits | (uint32_t)take_bits_of(&in, v->gap_bits, d->size)) + 1;
        }
        w.neighbours += gap == 1;
        index += gap;
        uint8_t own[8] = {0};
        const uint8_t *pattern = own;
        if (v->patterns > 1) {
            uint32_t p = (uint32_t)take_bits_of(&in, index_bits, d->size);
            CHECK(p < v->patterns);
            pattern = v->list + p * v->pattern_bytes;
        } else if (v->patterns == 1) {
            pattern = v->list;
        } else {
            CHECK(v->pattern_bytes <= sizeof own);
            for (uint32_t bit = 0; bit < 2 * v->plain + 1; bit++)
                own[bit / 8] |= (uint8_t)(take_bits_of(&in, 1, d->size) << (bit % 8));
        }
        w.at[r] = index;
        if ((pattern[2 * v->plain / 8] >> (2 * v->plain % 8)) & 1u) {
            w.at[r] |= (uint32_t)take_bits_of(&in, 9, d->size) << TES_INDEX_BITS;
            w.whole++;
        }
        for (uint32_t j = 0; j < v->plain; j++) {
            uint32_t state = (pattern[j / 4] >> (2 * (j % 4))) & 3u;
            CHECK(state != 2u);
            uint32_t value_bits = state == 3u ? 8 * v->info[j].row_bytes : 0;
            CHECK(in.at + value_bits <= (uint64_t)d->size * 8);
            in.at += value_bits; /* its values */
        }
    }
    CHECK_EQ(take_bits_of(&in, (uint32_t)(-in.at & 7u), d->size), 0);
    w.end = (uint32_t)(in.at / 8);
    return w;
}

static tes_entity_t renamed(tes_entity_t e, const tes_entity_t *from, const tes_entity_t *to,
                            uint32_t n) {
    for (uint32_t i = 0; i < n; i++) {
        if (e == from[i]) return to[i];
    }
    return e;
}

/* A delta of `source`'s replicator with the handles in `from` renamed to those in `to` (records
 * must stay in index order), checksum resealed. */
static delta_copy_t rename_handles(const world_t *source, const delta_copy_t *d,
                                   const tes_entity_t *from, const tes_entity_t *to, uint32_t n) {
    cursor_t c = {d->bytes, 12};
    out_t o = {NULL, 0};
    uint64_t to_tick = take_varint64(&c);
    take_varint64(&c);       /* to - from */
    take_u32(&c);            /* schema CRC */
    take_u32(&c);            /* source */
    CHECK(d->bytes[6] & 1u); /* a keyframe: only keyframes name their components */
    uint32_t count = take_varint(&c);
    tes_component_t ids[16];
    CHECK(count <= 16);
    for (uint32_t i = 0; i < count; i++)
        ids[i] = (i ? ids[i - 1] : 0) + take_varint(&c);
    if (d->bytes[6] & 1u) { /* keyframe: the schemas */
        for (uint32_t i = 0; i < count; i++) {
            take_u32(&c);
            c.at += take_u32(&c);
            uint32_t fields = take_u32(&c);
            for (uint32_t f = 0; f < fields; f++) {
                c.at += take_u32(&c);
                c.at += 8;
            }
        }
        uint32_t quanta = take_varint(&c); /* (place, field, f64 step) each */
        for (uint32_t q = 0; q < quanta; q++) {
            take_varint(&c);
            take_varint(&c);
            c.at += 8;
        }
    }
    put_bytes(&o, d->bytes, c.at);
    tes_component_info_t info[16];
    uint32_t plain = 0;
    for (uint32_t i = 0; i < count; i++) {
        CHECK_OK(tes_component_info(source->world, ids[i], &info[i]));
        plain += !(info[i].flags & TES_COMPONENT_RELATION);
    }
    uint32_t gone = take_varint(&c);
    put_varint(&o, gone);
    for (uint32_t i = 0; i < gone; i++)
        put_varint(&o, take_varint(&c)); /* (no renamed entity is gone) */
    uint32_t records = take_varint(&c);
    put_varint(&o, records);
    if (records) {
        /* The plan, kept: the gap parameter, the patterns (no quantized fields here). */
        uint32_t gap_bits = d->bytes[c.at++];
        uint32_t patterns = take_varint(&c);
        uint32_t pattern_bytes = (2 * plain + 1 + 7) / 8;
        const uint8_t *list = d->bytes + c.at;
        c.at += patterns * pattern_bytes;
        put_bytes(&o, d->bytes + c.at - patterns * pattern_bytes - 1 - 1,
                  patterns * pattern_bytes + 1 + 1); /* (patterns < 128: one varint byte) */
        CHECK(patterns < 128);
        uint32_t index_bits = 0;
        while (patterns > 1 && (patterns - 1) >> index_bits)
            index_bits++;
        bits_in_t in = {d->bytes, (uint64_t)c.at * 8};
        bits_out_t bits = {&o, 0, 0};
        uint32_t index = 0, written = 0;
        for (uint32_t r = 0; r < records; r++) {
            index += take_gap(&in, gap_bits);
            uint8_t own[8] = {0};
            const uint8_t *pattern = own;
            if (patterns > 1) {
                pattern = list + take_bits(&in, index_bits) * pattern_bytes;
            } else if (patterns == 1) {
                pattern = list;
            } else {
                CHECK(pattern_bytes <= sizeof own);
                for (uint32_t bit = 0; bit < 2 * plain + 1; bit++)
                    own[bit / 8] |= (uint8_t)(take_bits(&in, 1) << (bit % 8));
            }
            CHECK((pattern[2 * plain / 8] >> (2 * plain % 8)) & 1u); /* renamed: whole records */
            tes_entity_t e =
                renamed(index | (uint32_t)take_bits(&in, 9) << TES_INDEX_BITS, from, to, n);
            uint32_t at = e & ((1u << TES_INDEX_BITS) - 1);
            CHECK(at > written);
            put_gap_bits(&bits, at - written, gap_bits);
            written = at;
            if (patterns > 1) {
                put_bits(&bits, (uint64_t)(pattern - list) / pattern_bytes, index_bits);
            } else if (patterns == 0) {
                for (uint32_t bit = 0; bit < 2 * plain + 1; bit++)
                    put_bits(&bits, (uint64_t)(own[bit / 8] >> (bit % 8)) & 1u, 1);
            }
            put_bits(&bits, e >> TES_INDEX_BITS, 9);
            for (uint32_t i = 0, j = 0; i < count; i++) {
                if (info[i].flags & TES_COMPONENT_RELATION) continue;
                uint32_t state = (pattern[j / 4] >> (2 * (j % 4))) & 3u;
                j++;
                CHECK(state != 2u); /* (no field masks in a keyframe) */
                for (uint32_t byte = 0; state == 3u && byte < info[i].row_bytes; byte++)
                    put_bits(&bits, take_bits(&in, 8), 8);
            }
        }
        bits_end(&bits);
        c.at = (uint32_t)((in.at + 7) / 8);
    }
    for (uint32_t i = 0; i < count; i++) {
        if (!(info[i].flags & TES_COMPONENT_RELATION)) continue;
        uint32_t events = take_u32(&c);
        put_bytes(&o, &events, 4);
        for (uint32_t k = 0; k < events; k++) {
            uint32_t kind = take_varint(&c);
            put_varint(&o, kind);
            put_varint(&o, renamed(take_varint(&c), from, to, n));
            put_varint(&o, renamed(take_varint(&c), from, to, n));
            put_varint(&o, take_varint(&c));
            if (kind & 0x100u) {
                put_bytes(&o, d->bytes + c.at, info[i].row_bytes);
                c.at += info[i].row_bytes;
            }
        }
    }
    CHECK_EQ(c.at, d->size);
    crc32_reseal_delta(o.bytes, o.size);
    return (delta_copy_t){o.bytes, o.size, to_tick};
}

/* Where `n` bytes are in the delta after its header, or 0. */
static uint32_t find_bytes(const uint8_t *bytes, uint32_t size, const uint8_t *pattern,
                           uint32_t n) {
    for (uint32_t at = 12; at + n <= size; at++) {
        if (!memcmp(bytes + at, pattern, n)) return at;
    }
    return 0;
}

/* A record that is not whole (the entity was there at the baseline) names the replica's entity
 * at its index: where the replica holds none, the delta is refused and changes nothing. */
TEST(a_record_for_an_entity_the_replica_lacks_is_refused) {
    world_t source = make(), replica = make();
    tes_replicator_t *rep = replicator(source.world, NULL, 0);
    tes_entity_t e[3];
    CHECK_OK(tes_spawn_batch(source.world, &source.body, 1, 3, e));
    delta_copy_t key = encode(rep, 0);
    apply(&replica, &key, true);
    CHECK_OK(tes_set_number(source.world, e[1], source.body, 0, 0, 7.5));
    delta_copy_t d = encode(rep, key.tick);
    /* The replica lost e1 on its own (a host's despawn): the record has no entity to name. */
    CHECK_OK(tes_despawn(replica.world, e[1]));
    fx_snapshot_t *before = fx_snapshot_full_of(replica.world);
    CHECK_EQ(tes_delta_apply(replica.world, d.bytes, d.size, NULL), TES_ERR_BAD_DELTA);
    CHECK_EQ(tes_replica_tick(replica.world), key.tick);
    FX_CHECK_UNCHANGED_FULL(before, replica.world);
    free(key.bytes);
    free(d.bytes);
}

TEST(a_delta_that_would_close_a_cycle_is_refused_before_anything_changes) {
    world_t source = make(), replica = make();
    tes_replicator_t *rep = replicator(source.world, NULL, 0);
    tes_entity_t e[4];
    CHECK_OK(tes_spawn_batch(source.world, &source.body, 1, 4, e));
    CHECK_OK(tes_pair_add(source.world, e[0], source.child, e[1]));
    CHECK_OK(tes_pair_add(source.world, e[2], source.child, e[3]));
    delta_copy_t key = encode(rep, 0);
    /* A keyframe saying e1 -> e0 beside e0 -> e1: a cycle no source can write. (Events are
     * varints: these small handles take a byte each.) */
    CHECK(e[3] < 0x80);
    uint8_t pattern[3] = {TES_PAIR_ADDED, (uint8_t)e[2], (uint8_t)e[3]};
    uint32_t at = find_bytes(key.bytes, key.size, pattern, 3);
    CHECK(at != 0);
    uint8_t cycle[2] = {(uint8_t)e[1], (uint8_t)e[0]};
    memcpy(key.bytes + at + 1, cycle, 2);
    crc32_reseal_delta(key.bytes, key.size);
    fx_snapshot_t *before = fx_snapshot_full_of(replica.world);
    check_refused(&replica, key.bytes, key.size, before, 0);
    free(key.bytes);
    /* The same in a delta: e1 -> e0 while the replica has e0 -> e1. */
    delta_copy_t good = encode(rep, 0);
    apply(&replica, &good, true);
    CHECK_OK(tes_pair_remove(source.world, e[2], source.child, e[3]));
    CHECK_OK(tes_pair_add(source.world, e[2], source.child, e[1]));
    delta_copy_t d = encode(rep, good.tick);
    pattern[2] = (uint8_t)e[1];
    at = find_bytes(d.bytes, d.size, pattern, 3);
    CHECK(at != 0);
    memcpy(d.bytes + at + 1, cycle, 2);
    crc32_reseal_delta(d.bytes, d.size);
    fx_snapshot_take_full(before, replica.world);
    check_refused(&replica, d.bytes, d.size, before, good.tick);
    free(good.bytes);
    free(d.bytes);
}

TEST(no_encode_or_apply_inside_a_live_iteration) {
    world_t source = make(), replica = make();
    tes_replicator_t *rep = replicator(source.world, NULL, 0);
    tes_entity_t e;
    CHECK_OK(tes_spawn(source.world, &source.body, 1, &e));
    delta_copy_t key = encode(rep, 0);
    tes_query_t *q = NULL;
    tes_query_desc_t qd = {.all = &source.body, .all_count = 1};
    CHECK_OK(tes_query_create(source.world, &qd, &q));
    tes_iter_t it;
    CHECK_OK(tes_query_iter(source.world, q, &it));
    const uint8_t *bytes;
    uint32_t size;
    CHECK_ERR(tes_delta_encode(rep, 0, &bytes, &size, NULL), TES_ERR_INVALID_ARGUMENT);
    while (tes_iter_next(&it)) {
    }
    tes_query_t *rq = NULL;
    qd = (tes_query_desc_t){.all = &replica.body, .all_count = 1};
    CHECK_OK(tes_query_create(replica.world, &qd, &rq));
    CHECK_OK(tes_spawn(replica.world, &replica.body, 1, &e));
    CHECK_OK(tes_query_iter(replica.world, rq, &it));
    CHECK_ERR(tes_delta_apply(replica.world, key.bytes, key.size, NULL), TES_ERR_INVALID_ARGUMENT);
    while (tes_iter_next(&it)) {
    }
    apply(&replica, &key, true); /* and the keyframe replaced the replica's own entity */
    check_same(&source, &replica, 0);
    free(key.bytes);
}

TEST(out_of_memory_leaves_a_valid_replica_that_a_keyframe_repairs) {
    world_t source = make();
    tes_replicator_t *rep = replicator(source.world, NULL, 0);
    fx_rng_t rng = {31};
    live_t live = {.n = 0};
    fx_mixed_changes(&source, &rng, &live, 40, 0);
    delta_copy_t key = encode(rep, 0);
    fx_mixed_changes(&source, &rng, &live, 20, 100);
    delta_copy_t d = encode(rep, key.tick);
    for (int64_t fail = 0;; fail++) {
        fx_alloc_t *alloc = fx_alloc_new();
        world_t replica = fx_mixed(&(tes_world_desc_t){.allocator = fx_allocator(alloc)}, true);
        CHECK_OK(tes_delta_apply(replica.world, key.bytes, key.size, NULL));
        alloc->fail_after = (int64_t)alloc->allocs + fail;
        alloc->fail_once = true;
        tes_result_t r = tes_delta_apply(replica.world, d.bytes, d.size, NULL);
        bool failed = alloc->failures > 0;
        CHECK_OK(tes_world_validate(replica.world));
        if (r != TES_OK && tes_replica_tick(replica.world) == key.tick) {
            /* Failed before changing anything (while checking): the delta still applies. */
            CHECK_ERR(r, TES_ERR_OUT_OF_MEMORY);
            CHECK_OK(tes_delta_apply(replica.world, d.bytes, d.size, NULL));
            check_same(&source, &replica, (uint32_t)fail);
        } else if (r != TES_OK) {
            CHECK_ERR(r, TES_ERR_OUT_OF_MEMORY);
            CHECK_EQ(tes_replica_tick(replica.world), 0);
            /* Only a keyframe applies now, and it brings the replica back. */
            CHECK_ERR(tes_delta_apply(replica.world, d.bytes, d.size, NULL),
                      TES_ERR_DELTA_BASELINE);
            delta_copy_t again = encode(rep, 0);
            CHECK_OK(tes_delta_apply(replica.world, again.bytes, again.size, NULL));
            check_same(&source, &replica, (uint32_t)fail);
            free(again.bytes);
        } else {
            check_same(&source, &replica, (uint32_t)fail);
        }
        fx_world_destroy_now(replica.world);
        FX_CHECK_ALLOC_CLEAN(alloc);
        if (!failed) break;
    }
    /* Encoding out of memory fails without consuming anything. */
    free(key.bytes);
    free(d.bytes);
}

/* Replaces every occurrence of the handle `from` in the bytes by `to`. */
TEST(a_keyframe_at_the_highest_indices_allocates_pages_not_the_table) {
    /* Entities with chunk and sparse components and pairs, at the three highest indices a
     * handle can name: a source that held them would write exactly these bytes. The replica's
     * allocation follows the indices it is sent (a page each of the table, the sparse maps and
     * the relation lists), not the highest one: it used to grow everything to 2^21 indices
     * (24 MiB of entity table alone) from a keyframe of a few hundred bytes. */
    world_t source = make(), replica = make();
    tes_replicator_t *rep = replicator(source.world, NULL, 0);
    tes_entity_t old[12], e[3];
    CHECK_OK(tes_spawn_batch(source.world, &source.body, 1, 12, old));
    CHECK_OK(tes_despawn_batch(source.world, old, 12)); /* 4 above min_free */
    /* Reused indices, generation 1: handles no other word of the bytes looks like. */
    CHECK_OK(tes_spawn_batch(source.world, FX_IDS(source.body, source.sparse), 3, e));
    qsort(e, 3, sizeof *e, compare_index);
    CHECK_OK(tes_set_number(source.world, e[1], source.body, 0, 0, 42.5));
    CHECK_OK(tes_pair_add(source.world, e[0], source.likes, e[2]));
    CHECK_OK(tes_pair_add(source.world, e[1], source.child, e[2]));
    delta_copy_t key = encode(rep, 0);
    tes_entity_t high[3];
    for (uint32_t k = 0; k < 3; k++) {
        CHECK(tes_entity_generation(e[k]) == 1);
        high[k] = ((1u << TES_INDEX_BITS) - 3 + k) | (1u << TES_INDEX_BITS);
    }
    delta_copy_t renamed_key = rename_handles(&source, &key, e, high, 3);
    free(key.bytes);
    key = renamed_key;
    uint64_t before = fx_stats(replica.world).bytes_allocated;
    apply(&replica, &key, true);
    uint64_t grown = fx_stats(replica.world).bytes_allocated - before;
    CHECK_OK(tes_world_validate(replica.world));
    if (grown > 512 * 1024) {
        harness_fail(__FILE__, __LINE__, "grew by %llu bytes", (unsigned long long)grown);
    }
    double x = 0;
    CHECK_OK(tes_get_number(replica.world, high[1], replica.body, 0, 0, &x));
    CHECK(x == 42.5);
    bool has = false;
    CHECK_OK(tes_pair_has(replica.world, high[0], replica.likes, high[2], &has));
    CHECK(has);
    CHECK_OK(tes_pair_has(replica.world, high[1], replica.child, high[2], &has));
    CHECK(has);
    /* The indices below them were skipped: neither live nor queued. */
    tes_world_stats_t stats = fx_stats(replica.world);
    CHECK_EQ(stats.entity_count, 3);
    CHECK_EQ(stats.free_queue_length, 0);
    /* Its snapshot says so in a few bytes, and restores without the table either. */
    const uint8_t *bytes = NULL;
    uint32_t size = 0;
    CHECK_OK(tes_snapshot(replica.world, &bytes, &size));
    CHECK(size < 1024);
    fx_alloc_t *alloc = fx_alloc_new();
    tes_world_t *copy = NULL;
    CHECK_OK(tes_world_restore(&(tes_world_desc_t){.allocator = fx_allocator(alloc)}, bytes, size,
                               &copy));
    CHECK_OK(tes_world_validate(copy));
    CHECK(fx_stats(copy).bytes_allocated < 512 * 1024);
    const uint8_t *again = NULL;
    uint32_t again_size = 0;
    CHECK_OK(tes_snapshot(copy, &again, &again_size));
    CHECK(again_size == size && !memcmp(again, bytes, size));
    tes_world_destroy(copy);
    FX_CHECK_ALLOC_CLEAN(alloc);
    /* The replica's own spawns: the table holds no fresh index, so they take skipped ones. */
    tes_entity_t mine = fx_spawn(replica.world, FX_IDS(replica.body));
    CHECK((mine & ((1u << TES_INDEX_BITS) - 1)) < (1u << TES_INDEX_BITS) - 3);
    CHECK_OK(tes_world_validate(replica.world));
    CHECK_EQ(fx_stats(replica.world).entity_count, 4);
    free(key.bytes);
}

/* ---- peers: visibility and budgets ------------------------------------------------------ */

static delta_copy_t peer_encode(tes_peer_t *peer, uint64_t baseline, uint32_t budget) {
    const uint8_t *bytes = NULL;
    delta_copy_t d = {NULL, 0, 0};
    CHECK_OK(tes_peer_encode(peer, baseline, budget, &bytes, &d.size, &d.tick));
    d.bytes = (uint8_t *)malloc(d.size); /* the caller frees it */
    CHECK(d.bytes != NULL);
    memcpy(d.bytes, bytes, d.size);
    return d;
}

static tes_peer_t *peer_of(tes_replicator_t *rep, uint32_t flags) {
    tes_peer_t *peer = NULL;
    CHECK_OK(tes_peer_create(rep, flags, &peer));
    return peer;
}

static bool seen_by(const world_t *w, tes_entity_t e, const void *context) {
    (void)w;
    return tes_peer_sees((const tes_peer_t *)context, e);
}

static void check_holds_what_it_sees(const world_t *source, const tes_peer_t *peer,
                                     const world_t *replica, uint32_t at) {
    fx_snapshot_t *a = dump_kept(source, seen_by, peer), *b = dump_kept(replica, NULL, NULL);
    check_equal_dumps(a, b, "the replica differs from what its peer sees", at);
    fx_snapshot_delete(a);
    fx_snapshot_delete(b);
    CHECK_OK(tes_world_validate(replica->world));
}

/* Shows and hides at random: a few live entities shown (random priorities), a few hidden. */
static void change_sight(tes_peer_t *peer, fx_rng_t *rng, const live_t *live) {
    for (uint32_t k = 0; live->n && k < 4; k++) {
        tes_entity_t e = live->e[fx_rng_below(rng, live->n)];
        if (fx_rng_chance(rng, 65)) {
            CHECK_OK(tes_peer_show(peer, e, (float)(1 + fx_rng_below(rng, 8))));
            CHECK(tes_peer_sees(peer, e));
        } else {
            CHECK_OK(tes_peer_hide(peer, e));
            CHECK(!tes_peer_sees(peer, e));
        }
    }
}

TEST(peers_with_visibility_hold_exactly_what_they_are_shown_after_every_tick) {
    for (uint64_t seed = 51; seed <= 54; seed++) {
        world_t source = make(), replicas[2] = {make(), make()};
        tes_replicator_t *rep = replicator(source.world, NULL, 0);
        tes_peer_t *peers[2] = {peer_of(rep, TES_PEER_VISIBILITY),
                                peer_of(rep, TES_PEER_VISIBILITY)};
        fx_rng_t rng = {seed};
        live_t live = {.n = 0};
        for (uint32_t tick = 0; tick < 60; tick++) {
            fx_mixed_changes(&source, &rng, &live, 1 + fx_rng_below(&rng, 8), tick * 10);
            for (int p = 0; p < 2; p++) {
                change_sight(peers[p], &rng, &live);
                delta_copy_t d = peer_encode(peers[p], tes_replica_tick(replicas[p].world), 0);
                apply(&replicas[p], &d, true);
                free(d.bytes);
                check_holds_what_it_sees(&source, peers[p], &replicas[p], tick);
            }
            CHECK_OK(tes_tick(source.world));
        }
    }
}

/* Under a budget, with lost deltas: while the world changes the replica lags, and once it stops
 * changing, encodes that fit the budget bring the replica to exactly what the peer sees. A record
 * owed by the budget must not be lost with a delta that carried it. */
static void check_budget_converges(uint32_t flags, uint32_t budget, uint64_t seed) {
    world_t source = make(), replica = make();
    /* Odd seeds send only the changed fields: withheld records go whole all the same. */
    tes_replicator_t *rep =
        replicator_with(source.world, NULL, 0, seed % 2 ? TES_REPLICATOR_CHANGED_FIELDS : 0);
    tes_peer_t *peer = peer_of(rep, flags);
    fx_rng_t rng = {seed};
    live_t live = {.n = 0};
    uint64_t acked = 0;
    uint32_t over = 0;
    for (uint32_t tick = 0; tick < 160; tick++) {
        bool changing = tick < 60;
        if (changing) fx_mixed_changes(&source, &rng, &live, 1 + fx_rng_below(&rng, 12), tick * 10);
        if (changing && (flags & TES_PEER_VISIBILITY)) change_sight(peer, &rng, &live);
        delta_copy_t d = peer_encode(peer, acked, budget);
        /* Records beyond the budget wait: a delta is its head, gone entries and events, and
         * records within the budget (or the one with the highest score). */
        over += d.size > budget + 600;
        if (!changing || fx_rng_chance(&rng, 70)) {
            bool applied = false;
            CHECK_OK(tes_delta_apply(replica.world, d.bytes, d.size, &applied));
            if (applied) acked = d.tick;
        }
        free(d.bytes);
        CHECK_OK(tes_world_validate(replica.world));
        CHECK_OK(tes_tick(source.world));
    }
    CHECK_EQ(over, 0);
    check_holds_what_it_sees(&source, peer, &replica, 160);
}

TEST(a_budget_withholds_records_and_everything_arrives_once_the_world_is_still) {
    for (uint64_t seed = 61; seed <= 63; seed++) {
        check_budget_converges(0, 200, seed);
        check_budget_converges(TES_PEER_VISIBILITY, 120, seed);
    }
}

/* The number of records in a delta (after the head, the ids and the gone entries). */
static uint32_t records_of(const delta_copy_t *d) {
    cursor_t c = {d->bytes, 12};
    take_varint64(&c), take_varint64(&c), take_u32(&c),
        take_u32(&c); /* schema, source (a delta: no ids) */
    CHECK(!is_keyframe(d));
    uint32_t gone = take_varint(&c);
    for (uint32_t i = 0; i < gone; i++)
        take_varint(&c);
    return take_varint(&c);
}

TEST(a_budget_sends_the_highest_priority_first_and_starves_nothing) {
    world_t source = make(), replica = make();
    tes_replicator_t *rep = replicator(source.world, NULL, 0);
    tes_peer_t *peer = peer_of(rep, TES_PEER_VISIBILITY);
    tes_entity_t e[40];
    for (uint32_t i = 0; i < 40; i++) {
        CHECK_OK(tes_spawn(source.world, &source.body, 1, &e[i]));
        CHECK_OK(tes_peer_show(peer, e[i], i == 29 ? 1000.0f : 1.0f));
    }
    delta_copy_t d = peer_encode(peer, 0, 0);
    apply(&replica, &d, true);
    uint64_t acked = d.tick;
    free(d.bytes);
    /* Every entity changes every tick; the budget fits about two records. */
    uint32_t last_seen[40] = {0};
    for (uint32_t tick = 1; tick <= 200; tick++) {
        for (uint32_t i = 0; i < 40; i++)
            CHECK_OK(tes_set_number(source.world, e[i], source.body, 1, 0, tick));
        d = peer_encode(peer, acked, 50); /* a record is 23 bytes with the gap allowance */
        CHECK(records_of(&d) >= 1 && records_of(&d) <= 3);
        apply(&replica, &d, true);
        acked = d.tick;
        free(d.bytes);
        for (uint32_t i = 0; i < 40; i++) {
            double v = 0;
            CHECK_OK(tes_get_number(replica.world, e[i], replica.body, 1, 0, &v));
            if (v == tick) last_seen[i] = tick;
        }
        /* The high-priority entity goes every time: its score beats waiting 999 encodes. */
        CHECK_EQ(last_seen[29], tick);
        CHECK_OK(tes_tick(source.world));
    }
    /* The others still go: each waited at most long enough for its score to reach the top. */
    for (uint32_t i = 0; i < 40; i++)
        CHECK(last_seen[i] > 150);
}

TEST(changes_a_peer_does_not_see_cost_its_deltas_nothing) {
    world_t source = make(), replica = make();
    tes_replicator_t *rep = replicator(source.world, NULL, 0);
    tes_peer_t *peer = peer_of(rep, TES_PEER_VISIBILITY);
    tes_entity_t e[300];
    for (uint32_t i = 0; i < 300; i++)
        CHECK_OK(tes_spawn(source.world, &source.body, 1, &e[i]));
    for (uint32_t i = 0; i < 300; i += 30)
        CHECK_OK(tes_peer_show(peer, e[i], 1.0f));
    delta_copy_t d = peer_encode(peer, 0, 0);
    apply(&replica, &d, true);
    CHECK_EQ(fx_stats(replica.world).entity_count, 10);
    uint64_t acked = d.tick;
    free(d.bytes);
    d = peer_encode(peer, acked, 0);
    uint32_t empty = d.size;
    apply(&replica, &d, true);
    acked = d.tick;
    free(d.bytes);
    for (uint32_t i = 0; i < 300; i++)
        if (i % 30) CHECK_OK(tes_set_number(source.world, e[i], source.body, 0, 0, 7));
    d = peer_encode(peer, acked, 0);
    CHECK_EQ(d.size, empty);
    CHECK_EQ(records_of(&d), 0);
    free(d.bytes);
}

TEST(showing_refuses_what_is_not_a_live_entity_and_changes_nothing) {
    world_t source = make();
    tes_replicator_t *rep = replicator(source.world, NULL, 0);
    tes_peer_t *all = peer_of(rep, 0), *some = peer_of(rep, TES_PEER_VISIBILITY);
    tes_peer_t *none = NULL;
    CHECK_EQ(tes_peer_create(rep, 2, &none), TES_ERR_INVALID_ARGUMENT);
    CHECK(none == NULL);
    tes_entity_t e, dead;
    CHECK_OK(tes_spawn(source.world, &source.body, 1, &e));
    CHECK_OK(tes_spawn(source.world, &source.body, 1, &dead));
    CHECK_OK(tes_despawn(source.world, dead));
    CHECK_EQ(tes_peer_show(some, dead, 1.0f), TES_ERR_STALE_ENTITY);
    CHECK_EQ(tes_peer_show(some, 0, 1.0f), TES_ERR_STALE_ENTITY);
    CHECK_EQ(tes_peer_show(some, e, 0.0f), TES_ERR_INVALID_ARGUMENT);
    CHECK_EQ(tes_peer_show(some, e, -1.0f), TES_ERR_INVALID_ARGUMENT);
    CHECK_EQ(tes_peer_show(some, e, NAN), TES_ERR_INVALID_ARGUMENT);
    CHECK_EQ(tes_peer_show(some, e, INFINITY), TES_ERR_INVALID_ARGUMENT);
    CHECK_EQ(tes_peer_show(all, e, 1.0f), TES_ERR_INVALID_ARGUMENT);
    CHECK_EQ(tes_peer_hide(all, e), TES_ERR_INVALID_ARGUMENT);
    CHECK(!tes_peer_sees(some, e));
    CHECK(tes_peer_sees(all, e));
    CHECK(!tes_peer_sees(all, dead));
    /* Pending: a deferred spawn. */
    CHECK_OK(tes_defer_begin(source.world));
    tes_entity_t pending;
    CHECK_OK(tes_spawn(source.world, &source.body, 1, &pending));
    CHECK_EQ(tes_peer_show(some, pending, 1.0f), TES_ERR_PENDING_ENTITY);
    CHECK_OK(tes_defer_end(source.world));
    CHECK_OK(tes_peer_show(some, e, 2.0f));
    CHECK(tes_peer_sees(some, e));
    CHECK_OK(tes_peer_hide(some, e));
    CHECK_OK(tes_peer_hide(some, e)); /* not shown: nothing to do */
    CHECK(!tes_peer_sees(some, e));
    tes_peer_destroy(some);
    tes_peer_destroy(NULL);
    /* `all` is destroyed with its replicator (the world's destruction). */
}

TEST(an_owed_record_stays_owed_until_a_delta_that_carried_it_is_acknowledged) {
    world_t source = make(), replica = make();
    tes_replicator_t *rep = replicator(source.world, NULL, 0);
    tes_peer_t *peer = peer_of(rep, 0);
    tes_entity_t e[3];
    for (uint32_t i = 0; i < 3; i++)
        CHECK_OK(tes_spawn(source.world, &source.body, 1, &e[i]));
    delta_copy_t d = peer_encode(peer, 0, 0);
    apply(&replica, &d, true);
    uint64_t acked = d.tick;
    free(d.bytes);
    for (uint32_t i = 0; i < 3; i++)
        CHECK_OK(tes_set_number(source.world, e[i], source.body, 1, 0, 10 + i));
    d = peer_encode(peer, acked, 1); /* one record: two are owed */
    CHECK_EQ(records_of(&d), 1);
    apply(&replica, &d, true);
    acked = d.tick;
    free(d.bytes);
    d = peer_encode(peer, acked, 0); /* carries the two owed: lost */
    CHECK_EQ(records_of(&d), 2);
    free(d.bytes);
    d = peer_encode(peer, acked, 0); /* the same baseline: they are still owed */
    CHECK_EQ(records_of(&d), 2);
    apply(&replica, &d, true);
    acked = d.tick;
    free(d.bytes);
    for (uint32_t i = 0; i < 3; i++) {
        double v = 0;
        CHECK_OK(tes_get_number(replica.world, e[i], replica.body, 1, 0, &v));
        CHECK_EQ(v, 10 + i);
    }
    d = peer_encode(peer, acked, 0); /* acknowledged: owed no more */
    CHECK_EQ(records_of(&d), 0);
    free(d.bytes);
}

/* ---- quantized fields --------------------------------------------------------------------- */

/* A world for quantization: Pos {x, y: f32}, sparse Wide {d: f64}, Arr {id: u16, v: f32[4],
 * n: i32} (a quantized array between exact fields), a LOCAL component and a relation. */
typedef struct qworld_t {
    tes_world_t *world;
    tes_component_t pos, wide, arr, local, likes;
} qworld_t;

static const tes_field_desc_t q_pos_fields[] = {{"x", TES_F32, 0}, {"y", TES_F32, 0}};
static const tes_field_desc_t q_wide_fields[] = {{"d", TES_F64, 0}};
static const tes_field_desc_t q_arr_fields[] = {
    {"id", TES_U16, 0}, {"v", TES_F32, 4}, {"n", TES_I32, 0}};
static const tes_field_desc_t q_local_fields[] = {{"v", TES_F32, 0}};
static const tes_field_desc_t q_likes_fields[] = {{"w", TES_F32, 0}};

static qworld_t qworld(void) {
    qworld_t q = {fx_world(NULL), 0, 0, 0, 0, 0};
    q.pos = fx_component(q.world, "Pos", q_pos_fields, 2);
    q.wide = fx_sparse(q.world, "Wide", q_wide_fields, 1);
    q.arr = fx_component(q.world, "Arr", q_arr_fields, 3);
    q.local = fx_component_flags(q.world, "Local", q_local_fields, 1, TES_COMPONENT_LOCAL);
    q.likes = fx_relation(q.world, "Likes", q_likes_fields, 1, 0);
    return q;
}

static void qapply(const qworld_t *q, const delta_copy_t *d, bool expect_applied) {
    world_t w = {.world = q->world};
    apply(&w, d, expect_applied);
}

static tes_replicator_t *quantized(const qworld_t *q, const tes_quantum_t *quanta, uint32_t n) {
    tes_replicator_t *rep = NULL;
    tes_replicator_desc_t desc = {.quanta = quanta, .quantum_count = n};
    CHECK_OK(tes_replicator_create(q->world, &desc, &rep));
    return rep;
}

/* What the replica of a quantized value holds: the nearest multiple of the step. */
static float nearest_f32(float v, double step) {
    return (float)((double)llround((double)v / step) * step);
}

static double nearest_f64(double v, double step) {
    return (double)llround(v / step) * step;
}

static float get_f32(tes_world_t *world, tes_entity_t e, tes_component_t c, uint32_t field,
                     uint32_t element) {
    float values[4];
    tes_field_info_t info;
    CHECK_OK(tes_field_info(world, c, field, &info));
    CHECK_OK(tes_get(world, e, c, field, values, info.bytes));
    return values[element];
}

static void check_same_bits(const void *a, const void *b, size_t n, tes_entity_t e,
                            const char *what) {
    if (memcmp(a, b, n)) harness_fail(__FILE__, __LINE__, "entity %u: %s differs", e, what);
}

/* The steps the tests send with: x to 0.01, y to 0.5, Wide.d to 0.001, every Arr.v to 0.25. */
static const double STEP_X = 0.01, STEP_Y = 0.5, STEP_D = 0.001, STEP_V = 0.25;

static tes_replicator_t *quantized_all(const qworld_t *q) {
    tes_quantum_t quanta[] = {{q->arr, 1, STEP_V},
                              {q->pos, 1, STEP_Y},
                              {q->wide, 0, STEP_D},
                              {q->pos, 0, STEP_X}}; /* any order */
    return quantized(q, quanta, 4);
}

/* Every entity of the list: the replica's quantized values are the source's to the nearest step,
 * and the exact fields are equal. */
static void check_quantized(const qworld_t *source, const qworld_t *replica, const tes_entity_t *e,
                            uint32_t n) {
    for (uint32_t i = 0; i < n; i++) {
        tes_world_t *s = source->world, *r = replica->world;
        float want = nearest_f32(get_f32(s, e[i], source->pos, 0, 0), STEP_X);
        float got = get_f32(r, e[i], replica->pos, 0, 0);
        check_same_bits(&want, &got, 4, e[i], "Pos.x");
        want = nearest_f32(get_f32(s, e[i], source->pos, 1, 0), STEP_Y);
        got = get_f32(r, e[i], replica->pos, 1, 0);
        check_same_bits(&want, &got, 4, e[i], "Pos.y");
        double d = nearest_f64(fx_get_number(s, e[i], source->wide, 0, 0), STEP_D);
        double dr = fx_get_number(r, e[i], replica->wide, 0, 0);
        check_same_bits(&d, &dr, 8, e[i], "Wide.d");
        for (uint32_t k = 0; k < 4; k++) {
            want = nearest_f32(get_f32(s, e[i], source->arr, 1, k), STEP_V);
            got = get_f32(r, e[i], replica->arr, 1, k);
            check_same_bits(&want, &got, 4, e[i], "Arr.v");
        }
        CHECK_EQ(fx_get_number(r, e[i], replica->arr, 0, 0),
                 fx_get_number(s, e[i], source->arr, 0, 0));
        CHECK_EQ(fx_get_number(r, e[i], replica->arr, 2, 0),
                 fx_get_number(s, e[i], source->arr, 2, 0));
    }
}

/* A value in about [-1000, 1000) with a fraction no step divides, negative half the time. */
static double random_value(fx_rng_t *rng) {
    return ((double)fx_rng_below(rng, 2000000000u) - 1e9) / 1e6 + 1.0 / 3.0;
}

static void set_random(const qworld_t *q, fx_rng_t *rng, tes_entity_t e) {
    CHECK_OK(tes_set_number(q->world, e, q->pos, 0, 0, random_value(rng)));
    CHECK_OK(tes_set_number(q->world, e, q->pos, 1, 0, random_value(rng)));
    CHECK_OK(tes_set_number(q->world, e, q->wide, 0, 0, random_value(rng) * 1e3));
    for (uint32_t k = 0; k < 4; k++)
        CHECK_OK(tes_set_number(q->world, e, q->arr, 1, k, random_value(rng)));
    CHECK_OK(tes_set_number(q->world, e, q->arr, 0, 0, fx_rng_below(rng, 65536)));
    CHECK_OK(tes_set_number(q->world, e, q->arr, 2, 0, (double)fx_rng_below(rng, 2000) - 1000));
}

TEST(quantized_fields_arrive_as_the_nearest_multiple_of_their_step) {
    qworld_t source = qworld(), replica = qworld(), exact_replica = qworld();
    tes_replicator_t *rep = quantized_all(&source);
    tes_replicator_t *exact = quantized(&source, NULL, 0);
    enum { N = 300 };
    tes_entity_t e[N];
    CHECK_OK(tes_spawn_batch(source.world, FX_IDS(source.pos, source.wide, source.arr), N, e));
    fx_rng_t rng = {51};
    for (uint32_t i = 0; i < N; i++)
        set_random(&source, &rng, e[i]);
    /* Large values still quantized (|v / step| up to 2^53), and the extremes of the range. */
    CHECK_OK(tes_set_number(source.world, e[0], source.pos, 0, 0, -9.0e13));
    CHECK_OK(tes_set_number(source.world, e[1], source.wide, 0, 0, 9.0e12));
    CHECK_OK(tes_set_number(source.world, e[2], source.pos, 1, 0, -0.25)); /* a tie: away from 0 */
    delta_copy_t key = encode(rep, 0), exact_key = encode(exact, 0);
    CHECK(is_keyframe(&key));
    qapply(&replica, &key, true);
    qapply(&exact_replica, &exact_key, true);
    check_quantized(&source, &replica, e, N);
    CHECK_EQ(get_f32(replica.world, e[2], replica.pos, 1, 0), -0.5f);
    /* Keyframes are quantized too: x 3 bytes, y and each v 2, d 5 instead of 4, 4, 4 and 8. */
    CHECK(key.size + N * 12 < exact_key.size);
    free(key.bytes);
    free(exact_key.bytes);
    /* Deltas: the replica decodes with the steps of its keyframe. */
    for (uint32_t round = 0; round < 3; round++) {
        for (uint32_t i = round; i < N; i += 3)
            set_random(&source, &rng, e[i]);
        delta_copy_t d = encode(rep, tes_replica_tick(replica.world));
        delta_copy_t x = encode(exact, tes_replica_tick(exact_replica.world));
        CHECK(!is_keyframe(&d));
        qapply(&replica, &d, true);
        qapply(&exact_replica, &x, true);
        check_quantized(&source, &replica, e, N);
        CHECK(d.size + (N / 3) * 12 < x.size);
        free(d.bytes);
        free(x.bytes);
    }
    CHECK_OK(tes_world_validate(replica.world));
}

TEST(values_a_step_cannot_hold_travel_exactly) {
    qworld_t source = qworld(), replica = qworld();
    tes_replicator_t *rep = quantized_all(&source);
    tes_entity_t e[4];
    CHECK_OK(tes_spawn_batch(source.world, FX_IDS(source.pos, source.wide, source.arr), 4, e));
    uint32_t nan_bits = 0x7FC01234u; /* a NaN with a payload, bit for bit */
    float nan, inf = INFINITY, big = 1e30f;
    memcpy(&nan, &nan_bits, 4);
    float xs[4] = {nan, inf, -inf, big};
    float vs[4] = {-big, nan, inf, 5.25f}; /* an array with some escaped, some not */
    double ds[4] = {-INFINITY, 1e300, (double)NAN, 9.1e12}; /* 9.1e12 / 0.001 > 2^53 */
    for (uint32_t i = 0; i < 4; i++) {
        CHECK_OK(tes_set(source.world, e[i], source.pos, 0, &xs[i], 4));
        CHECK_OK(tes_set(source.world, e[i], source.pos, 1, &xs[3 - i], 4));
        CHECK_OK(tes_set(source.world, e[i], source.wide, 0, &ds[i], 8));
        CHECK_OK(tes_set(source.world, e[i], source.arr, 1, vs, sizeof vs));
    }
    delta_copy_t key = encode(rep, 0);
    qapply(&replica, &key, true);
    for (uint32_t i = 0; i < 4; i++) {
        float got[4];
        CHECK_OK(tes_get(replica.world, e[i], replica.pos, 0, got, 4));
        check_same_bits(&xs[i], got, 4, e[i], "Pos.x");
        CHECK_OK(tes_get(replica.world, e[i], replica.pos, 1, got, 4));
        check_same_bits(&xs[3 - i], got, 4, e[i], "Pos.y");
        double d;
        CHECK_OK(tes_get(replica.world, e[i], replica.wide, 0, &d, 8));
        check_same_bits(&ds[i], &d, 8, e[i], "Wide.d");
        CHECK_OK(tes_get(replica.world, e[i], replica.arr, 1, got, sizeof got));
        check_same_bits(vs, got, 12, e[i], "Arr.v"); /* the escaped ones */
        CHECK(got[3] == 5.25f);
    }
    free(key.bytes);
}

/* A value that quantizes to what the replica holds is no change there: the replica compares the
 * decoded value with its own. */
TEST(a_value_that_rounds_to_the_same_step_is_no_change_on_the_replica) {
    qworld_t source = qworld(), replica = qworld();
    tes_replicator_t *rep = quantized_all(&source);
    tes_entity_t e = fx_spawn(source.world, FX_IDS(source.pos));
    CHECK_OK(tes_set_number(source.world, e, source.pos, 0, 0, 1.001));
    tes_query_t *watch =
        fx_query(replica.world, &(tes_query_desc_t){.changed = FX_IDS(replica.pos)});
    (void)watch;
    delta_copy_t key = encode(rep, 0);
    qapply(&replica, &key, true);
    CHECK_OK(tes_tick(replica.world));
    uint64_t added, changed, changed_after;
    CHECK_OK(tes_ticks(replica.world, e, replica.pos, &added, &changed));
    CHECK_OK(tes_set_number(source.world, e, source.pos, 0, 0, 1.004)); /* still 1.00 */
    delta_copy_t d = encode(rep, key.tick);
    qapply(&replica, &d, true);
    CHECK_OK(tes_ticks(replica.world, e, replica.pos, &added, &changed_after));
    CHECK_EQ(changed_after, changed);
    CHECK_OK(tes_set_number(source.world, e, source.pos, 0, 0, 1.006)); /* 1.01 */
    delta_copy_t d2 = encode(rep, d.tick);
    qapply(&replica, &d2, true);
    CHECK_OK(tes_ticks(replica.world, e, replica.pos, &added, &changed_after));
    CHECK(changed_after > changed);
    CHECK(get_f32(replica.world, e, replica.pos, 0, 0) == nearest_f32(1.006f, STEP_X));
    free(key.bytes);
    free(d.bytes);
    free(d2.bytes);
}

static void check_quanta_refused(const qworld_t *q, const tes_component_t *components,
                                 uint32_t component_count, const tes_quantum_t *quanta,
                                 uint32_t quantum_count, tes_result_t expected) {
    fx_snapshot_t *before = fx_snapshot_full_of(q->world);
    uint64_t bytes = fx_stats(q->world).bytes_allocated;
    tes_replicator_t *rep = NULL;
    tes_replicator_desc_t desc = {.components = components,
                                  .component_count = component_count,
                                  .quanta = quanta,
                                  .quantum_count = quantum_count};
    CHECK_ERR(tes_replicator_create(q->world, &desc, &rep), expected);
    CHECK(rep == NULL);
    CHECK_EQ(fx_stats(q->world).bytes_allocated, bytes);
    FX_CHECK_UNCHANGED_FULL(before, q->world);
}

TEST(invalid_quanta_are_refused_and_change_nothing) {
    qworld_t q = qworld();
    tes_entity_t e = fx_spawn(q.world, FX_IDS(q.pos, q.arr));
    CHECK_OK(tes_set_number(q.world, e, q.pos, 0, 0, 1.5));
    tes_component_t both[] = {q.pos, q.arr};
    const tes_result_t INVALID = TES_ERR_INVALID_ARGUMENT;
    /* A count without a list. */
    check_quanta_refused(&q, NULL, 0, NULL, 1, INVALID);
    /* An unknown component. */
    check_quanta_refused(&q, NULL, 0, &(tes_quantum_t){q.likes + 1, 0, 0.1}, 1,
                         TES_ERR_UNKNOWN_COMPONENT);
    /* Not replicated: outside `components`, or LOCAL without a list. */
    check_quanta_refused(&q, both, 2, &(tes_quantum_t){q.wide, 0, 0.1}, 1, INVALID);
    check_quanta_refused(&q, NULL, 0, &(tes_quantum_t){q.local, 0, 0.1}, 1, INVALID);
    /* A relation (its data travels with the pair events). */
    check_quanta_refused(&q, NULL, 0, &(tes_quantum_t){q.likes, 0, 0.1}, 1, INVALID);
    /* A field index out of range; a field that is not f32 or f64 (u16, i32). */
    check_quanta_refused(&q, NULL, 0, &(tes_quantum_t){q.pos, 2, 0.1}, 1, INVALID);
    check_quanta_refused(&q, both, 2, &(tes_quantum_t){q.arr, 0, 0.1}, 1, INVALID);
    check_quanta_refused(&q, both, 2, &(tes_quantum_t){q.arr, 2, 0.1}, 1, INVALID);
    /* Steps that are not finite and above 0. */
    const double bad_steps[] = {0.0, -0.0, -0.01, INFINITY, -INFINITY, NAN};
    for (uint32_t i = 0; i < sizeof bad_steps / sizeof *bad_steps; i++)
        check_quanta_refused(&q, NULL, 0, &(tes_quantum_t){q.pos, 1, bad_steps[i]}, 1, INVALID);
    /* The same field twice (even with the same step), after a good one. */
    tes_quantum_t twice[] = {{q.pos, 0, 0.1}, {q.pos, 1, 0.1}, {q.pos, 0, 0.1}};
    check_quanta_refused(&q, NULL, 0, twice, 3, INVALID);
    /* A bad one after good ones: still nothing. */
    tes_quantum_t late[] = {{q.pos, 0, 0.1}, {q.arr, 1, 0.5}, {q.arr, 3, 0.5}};
    check_quanta_refused(&q, both, 2, late, 3, INVALID);
    /* And the same world accepts good ones: the smallest step a double holds, too. */
    late[2] = (tes_quantum_t){q.pos, 1, 5e-324};
    tes_replicator_t *rep = NULL;
    tes_replicator_desc_t desc = {
        .components = both, .component_count = 2, .quanta = late, .quantum_count = 3};
    CHECK_OK(tes_replicator_create(q.world, &desc, &rep));
    qworld_t replica = qworld();
    delta_copy_t key = encode(rep, 0);
    qapply(&replica, &key, true);
    CHECK_EQ(fx_get_number(replica.world, e, replica.pos, 0, 0), 1.5);
    free(key.bytes);
}

/* The delta of one entity whose Pos {x, y} changed: x 0.5 (q 50 at a step of 0.01), y 64 (q 128
 * at 0.5), each alone in its frame (base q, width 1: code 1). */
static delta_copy_t one_pos_delta(tes_replicator_t *rep, const qworld_t *source, tes_entity_t e,
                                  uint64_t baseline) {
    CHECK_OK(tes_set_number(source->world, e, source->pos, 0, 0, 0.5));
    CHECK_OK(tes_set_number(source->world, e, source->pos, 1, 0, 64.0));
    return encode(rep, baseline);
}

/* A field of a record's bits: the low `count` bits of `value`, low bit first. */
typedef struct bit_field_t {
    uint64_t value;
    uint32_t count;
} bit_field_t;

/* A list of bit fields as a function's two arguments (the fields, their count). */
#define BIT_FIELDS(...)                 \
    (const bit_field_t[]){__VA_ARGS__}, \
        (uint32_t)(sizeof((const bit_field_t[]){__VA_ARGS__}) / sizeof(bit_field_t))

/* The plan of a delta of the quantized world with Pos's x and y quantized (docs/format.md,
 * "Entities"), as given: so that it can say what no source writes. */
typedef struct pos_plan_t {
    uint32_t gap_bits;
    uint32_t patterns;
    const uint8_t *list; /* the patterns: Pos, Wide, Arr two bits each, then whole (a byte each) */
    int64_t base[2];     /* x's frame, y's */
    uint32_t width[2];
} pos_plan_t;

static uint64_t zigzag64(int64_t q) {
    return q >= 0 ? (uint64_t)q << 1 : (uint64_t)(-(q + 1)) << 1 | 1u;
}

/* A delta of the quantized world with `like`'s head (ticks and schema CRC): no gone entry, one
 * record (the plan, then the bit fields, zeros to the next byte), then Likes' section with no
 * event; its checksum resealed. */
static delta_copy_t pos_delta(const delta_copy_t *like, const pos_plan_t *plan,
                              const bit_field_t *fields, uint32_t n) {
    CHECK(!is_keyframe(like));
    cursor_t c = {like->bytes, 12};
    take_varint64(&c), take_varint64(&c), take_u32(&c), take_u32(&c); /* to, span, schema, source */
    out_t o = {NULL, 0};
    put_bytes(&o, like->bytes, c.at);
    put_varint(&o, 0); /* gone */
    put_varint(&o, 1); /* records */
    uint8_t gap_bits = (uint8_t)plan->gap_bits;
    put_bytes(&o, &gap_bits, 1);
    put_varint(&o, plan->patterns);
    if (plan->patterns) put_bytes(&o, plan->list, plan->patterns);
    for (uint32_t q = 0; q < 2; q++) {
        put_varint64(&o, zigzag64(plan->base[q]));
        uint8_t width = (uint8_t)plan->width[q];
        put_bytes(&o, &width, 1);
    }
    bits_out_t bits = {&o, 0, 0};
    for (uint32_t i = 0; i < n; i++)
        put_bits(&bits, fields[i].value, fields[i].count);
    bits_end(&bits);
    uint32_t events = 0;
    put_bytes(&o, &events, 4);
    crc32_reseal_delta(o.bytes, o.size);
    return (delta_copy_t){o.bytes, o.size, like->tick};
}

/* A replica at the keyframe, the delta whose head built ones take, and the replica's state. */
typedef struct pos_case_t {
    qworld_t replica;
    const delta_copy_t *key, *like;
    fx_snapshot_t *before;
    tes_entity_t e;
} pos_case_t;

/* Refused as a bad delta, the replica exactly as it was (`line`: the case's). */
static void pos_bytes_refused(const pos_case_t *t, const uint8_t *bytes, uint32_t size, int line) {
    bool applied = true;
    tes_result_t r = tes_delta_apply(t->replica.world, bytes, size, &applied);
    if (r != TES_ERR_BAD_DELTA || applied) {
        harness_fail(__FILE__, line, "not refused as a bad delta (result %d)", (int)r);
    }
    if (tes_replica_tick(t->replica.world) != t->key->tick) {
        harness_fail(__FILE__, line, "the replica's tick moved");
    }
    fx_check_unchanged_at(__FILE__, line, t->before, t->replica.world, false,
                          fx_snapshot_take_full);
}

static void pos_refused(const pos_case_t *t, const pos_plan_t *plan, const bit_field_t *fields,
                        uint32_t n, int line) {
    delta_copy_t d = pos_delta(t->like, plan, fields, n);
    pos_bytes_refused(t, d.bytes, d.size, line);
    free(d.bytes);
}

/* Applied to a new replica at the keyframe, which then holds exactly (bit for bit) x and y at
 * entity e. */
static void pos_bytes_apply(const pos_case_t *t, const uint8_t *bytes, uint32_t size,
                            tes_entity_t e, float x, float y, int line) {
    qworld_t probe = qworld();
    CHECK_OK(tes_delta_apply(probe.world, t->key->bytes, t->key->size, NULL));
    bool applied = false;
    tes_result_t r = tes_delta_apply(probe.world, bytes, size, &applied);
    if (r != TES_OK || !applied) harness_fail(__FILE__, line, "refused (result %d)", (int)r);
    CHECK_OK(tes_world_validate(probe.world));
    if (!tes_is_alive(probe.world, e)) harness_fail(__FILE__, line, "no entity %u", e);
    float got[2] = {get_f32(probe.world, e, probe.pos, 0, 0),
                    get_f32(probe.world, e, probe.pos, 1, 0)};
    float want[2] = {x, y};
    if (memcmp(got, want, sizeof got)) {
        harness_fail(__FILE__, line, "holds (%.9g, %.9g), not (%.9g, %.9g)", got[0], got[1], x, y);
    }
    fx_world_destroy_now(probe.world);
}

static void pos_applies(const pos_case_t *t, const pos_plan_t *plan, const bit_field_t *fields,
                        uint32_t n, tes_entity_t e, float x, float y, int line) {
    delta_copy_t d = pos_delta(t->like, plan, fields, n);
    pos_bytes_apply(t, d.bytes, d.size, e, x, y, line);
    free(d.bytes);
}

static uint32_t f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

TEST(a_cut_short_or_malformed_quantized_value_is_a_bad_delta) {
    qworld_t source = qworld();
    tes_quantum_t quanta[] = {{source.pos, 0, 0.01}, {source.pos, 1, 0.5}};
    tes_replicator_t *rep = quantized(&source, quanta, 2);
    tes_entity_t e = fx_spawn(source.world, FX_IDS(source.pos));
    CHECK_EQ(tes_entity_index(e), 1);
    delta_copy_t key = encode(rep, 0);
    pos_case_t t = {qworld(), &key, NULL, NULL, e};
    qapply(&t.replica, &key, true);
    delta_copy_t d = one_pos_delta(rep, &source, e, key.tick);
    t.like = &d;
    t.before = fx_snapshot_full_of(t.replica.world);
    /* The builder first writes the real delta byte for byte: the mean gap is 1 (gap_bits 0), one
     * pattern listed (Pos with values, not whole: no pattern bits), x's frame base 50, y's 128,
     * both of width 1; the record: gap 1 (a zero bit), x's code 1, y's code 1; 5 zero bits. */
    const uint8_t values = 3, whole = 3 | 1u << 6; /* Pos in state 3; Wide, Arr absent */
    const pos_plan_t real = {0, 1, &values, {50, 128}, {1, 1}};
    const bit_field_t gap = {0, 1}, x = {1, 1};
    delta_copy_t rebuilt = pos_delta(&d, &real, BIT_FIELDS(gap, x, {1, 1}));
    CHECK_EQ(rebuilt.size, d.size);
    CHECK(memcmp(rebuilt.bytes, d.bytes, d.size) == 0);
    free(rebuilt.bytes);
    const int64_t LIMIT = (int64_t)1 << 53; /* the largest |q| and |base| */
    const float TOP = (float)(0x1p53 * 0.5), BOTTOM = (float)(-0x1p53 * 0.5); /* y = +-2^53 q */
    pos_plan_t plan;

    /* The frames: |base| past 2^53 (y escapes, so only the base is wrong); +-2^53 are bases. */
    for (int sign = -1; sign <= 1; sign += 2) {
        plan = real;
        plan.base[1] = sign * (LIMIT + 1);
        pos_refused(&t, &plan, BIT_FIELDS(gap, x, {0, 1}, {9, 6}, {256, 9}), __LINE__);
        plan.base[1] = sign * LIMIT;
        pos_applies(&t, &plan, BIT_FIELDS(gap, x, {0, 1}, {9, 6}, {256, 9}), e, 0.5f, 64, __LINE__);
    }
    /* A width of 56; 55 is the widest. */
    plan = real;
    plan.width[1] = 56;
    pos_refused(&t, &plan, BIT_FIELDS(gap, x, {1, 56}), __LINE__);
    plan.width[1] = 55;
    pos_applies(&t, &plan, BIT_FIELDS(gap, x, {1, 55}), e, 0.5f, 64, __LINE__);

    /* Codes: q = base + code - 1. At base 2^53, code 2 is q = 2^53 + 1; code 1 is 2^53, a value.
     * A code is never below its base, so q = -2^53 - 1 takes a base below -2^53 (refused as a
     * base: above); at base -2^53, code 1 is q = -2^53, the widest code q = 3 * 2^53 - 2, and
     * code 2^53 + 1 (55 bits wide) q = 0, a value. */
    plan = real;
    plan.base[1] = LIMIT;
    plan.width[1] = 2;
    pos_refused(&t, &plan, BIT_FIELDS(gap, x, {2, 2}), __LINE__);
    pos_applies(&t, &plan, BIT_FIELDS(gap, x, {1, 2}), e, 0.5f, TOP, __LINE__);
    plan.base[1] = -LIMIT - 1;
    plan.width[1] = 1;
    pos_refused(&t, &plan, BIT_FIELDS(gap, x, {1, 1}), __LINE__);
    plan.base[1] = -LIMIT;
    pos_applies(&t, &plan, BIT_FIELDS(gap, x, {1, 1}), e, 0.5f, BOTTOM, __LINE__);
    plan.width[1] = 55;
    pos_refused(&t, &plan, BIT_FIELDS(gap, x, {(1ull << 55) - 1, 55}), __LINE__);
    pos_applies(&t, &plan, BIT_FIELDS(gap, x, {LIMIT + 1, 55}), e, 0.5f, 0.0f, __LINE__);

    /* Escapes (code 0, then a 6-bit length n and zigzag(q) in n bits): a length of 56 .. 62 is
     * none (63: the exact bits). */
    for (uint32_t n = 56; n <= 62; n++)
        pos_refused(&t, &real, BIT_FIELDS(gap, x, {0, 1}, {n, 6}, {1ull << (n - 1), n}), __LINE__);
    /* Not in its shortest form: the top bit of zigzag(q) is 0. n = 3 holding 1 (q = -1), n = 1
     * holding 0, n = 55 holding 2^53 (54 bits); n = 1 holding 1 and n = 0 (q = 0) are values. */
    pos_refused(&t, &real, BIT_FIELDS(gap, x, {0, 1}, {3, 6}, {1, 3}), __LINE__);
    pos_refused(&t, &real, BIT_FIELDS(gap, x, {0, 1}, {1, 6}, {0, 1}), __LINE__);
    pos_refused(&t, &real, BIT_FIELDS(gap, x, {0, 1}, {55, 6}, {1ull << 53, 55}), __LINE__);
    pos_applies(&t, &real, BIT_FIELDS(gap, x, {0, 1}, {1, 6}, {1, 1}), e, 0.5f, -0.5f, __LINE__);
    pos_applies(&t, &real, BIT_FIELDS(gap, x, {0, 1}, {0, 6}), e, 0.5f, 0.0f, __LINE__);
    /* |q| past 2^53: zigzag(2^53 + 1) = 2^54 + 2, zigzag(-2^53 - 1) = 2^54 + 1 (55 bits), and
     * q = -2^54; zigzag(2^53) = 2^54 (55 bits) and zigzag(-2^53) = 2^54 - 1 (54) are values. */
    pos_refused(&t, &real, BIT_FIELDS(gap, x, {0, 1}, {55, 6}, {(1ull << 54) + 2, 55}), __LINE__);
    pos_refused(&t, &real, BIT_FIELDS(gap, x, {0, 1}, {55, 6}, {(1ull << 54) + 1, 55}), __LINE__);
    pos_refused(&t, &real, BIT_FIELDS(gap, x, {0, 1}, {55, 6}, {(1ull << 55) - 1, 55}), __LINE__);
    pos_applies(&t, &real, BIT_FIELDS(gap, x, {0, 1}, {55, 6}, {1ull << 54, 55}), e, 0.5f, TOP,
                __LINE__);
    pos_applies(&t, &real, BIT_FIELDS(gap, x, {0, 1}, {54, 6}, {(1ull << 54) - 1, 54}), e, 0.5f,
                BOTTOM, __LINE__);
    /* n = 63: the element's exact 32 bits follow. Cut short (20 of them, then the padding and
     * Likes' section: the delta is short of what the bits need). */
    uint32_t nan_bits = 0x7FC01234u; /* a NaN with a payload: exact, bit for bit */
    float nan, odd = -3.3f;          /* no multiple of 0.5 */
    memcpy(&nan, &nan_bits, sizeof nan);
    pos_refused(&t, &real, BIT_FIELDS(gap, x, {0, 1}, {63, 6}, {f32_bits(odd), 20}), __LINE__);
    pos_applies(&t, &real, BIT_FIELDS(gap, x, {0, 1}, {63, 6}, {f32_bits(odd), 32}), e, 0.5f, odd,
                __LINE__);
    /* Both exact: 79 bits (10 bytes) of records. Cut anywhere after the plan (resealed), it is
     * refused; whole, it applies with both exact values. */
    delta_copy_t exact = pos_delta(
        &d, &real,
        BIT_FIELDS(gap, {0, 1}, {63, 6}, {nan_bits, 32}, {0, 1}, {63, 6}, {f32_bits(odd), 32}));
    pos_bytes_apply(&t, exact.bytes, exact.size, e, nan, odd, __LINE__);
    uint32_t bits_at = exact.size - 4 - 10;
    CHECK_EQ(bits_at, d.size - 4 - 1); /* the same plan as the real delta's */
    uint8_t *cut = (uint8_t *)fx_malloc(exact.size);
    for (uint32_t size = bits_at; size < exact.size; size++) {
        memcpy(cut, exact.bytes, size);
        crc32_reseal_delta(cut, size);
        pos_bytes_refused(&t, cut, size, __LINE__);
    }
    free(exact.bytes);
    /* A non-zero padding bit after the last record (the record takes 3 bits, 5 pad the byte). */
    for (uint32_t pad = 0; pad < 5; pad++)
        pos_refused(&t, &real, BIT_FIELDS(gap, x, {1, 1}, {0, pad}, {1, 1}), __LINE__);

    /* The gap parameter: 20 at most (gap 1 is then a zero bit and 20 zero bits). */
    plan = real;
    plan.gap_bits = 21;
    pos_refused(&t, &plan, BIT_FIELDS({0, 1}, {0, 21}, x, {1, 1}), __LINE__);
    plan.gap_bits = 20;
    pos_applies(&t, &plan, BIT_FIELDS({0, 1}, {0, 20}, x, {1, 1}), e, 0.5f, 64, __LINE__);
    /* The escape of a gap (16 one bits, then gap - 1 in 21 bits) only for a quotient of 16 or
     * more: not for gap 1, nor (whole records at new indices) gap 16, whose quotient is 15 at
     * gap_bits 0; gap 16 as 15 one bits and a zero, and gap 17 escaped, are right. */
    pos_refused(&t, &real, BIT_FIELDS({0xFFFF, 16}, {0, 21}, x, {1, 1}), __LINE__);
    plan = real;
    plan.list = &whole;
    const bit_field_t generation = {0, 9};
    pos_refused(&t, &plan, BIT_FIELDS({0xFFFF, 16}, {15, 21}, generation, x, {1, 1}), __LINE__);
    pos_applies(&t, &plan, BIT_FIELDS({0x7FFF, 15}, {0, 1}, generation, x, {1, 1}), 16, 0.5f, 64,
                __LINE__);
    pos_applies(&t, &plan, BIT_FIELDS({0xFFFF, 16}, {16, 21}, generation, x, {1, 1}), 17, 0.5f, 64,
                __LINE__);

    /* Patterns: 64 listed at most (the record's place in 6 bits then, 7 for 65). */
    uint8_t list[65] = {values};
    for (uint32_t p = 1; p < 65; p++)
        list[p] = (uint8_t)p; /* other patterns (7 bits each), unused */
    plan = real;
    plan.list = list;
    plan.patterns = 65;
    pos_refused(&t, &plan, BIT_FIELDS(gap, {0, 7}, x, {1, 1}), __LINE__);
    plan.patterns = 64;
    pos_applies(&t, &plan, BIT_FIELDS(gap, {0, 6}, x, {1, 1}), e, 0.5f, 64, __LINE__);
    /* A place past the list. Two patterns take 1 bit, which names one of them either way: three
     * (2 bits) have a place 3 that names none, five (3 bits) 5, 6 and 7. x's base is -2 here, so
     * that the bytes after the list (zigzag(-2) = 3, x's width 1, then y's base 256 as 0x80 0x02)
     * read as patterns would make records that decode: Pos with values (place 3 of 3, 5 of 5),
     * Pos without values (6), nothing (7); only the place is wrong. */
    const uint8_t few[5] = {1, 3 | 1u << 2, values, 1u << 4, 1u << 2};
    const float minus_two = (float)(-2 * 0.01); /* x: q = -2 */
    plan = real;
    plan.base[0] = -2;
    plan.list = few;
    plan.patterns = 2;
    pos_applies(&t, &plan, BIT_FIELDS(gap, {1, 1}, x, {1, 1}), e, minus_two, 64, __LINE__);
    plan.patterns = 3;
    pos_refused(&t, &plan, BIT_FIELDS(gap, {3, 2}, x, {1, 1}), __LINE__);
    pos_applies(&t, &plan, BIT_FIELDS(gap, {2, 2}, x, {1, 1}), e, minus_two, 64, __LINE__);
    plan.patterns = 5;
    pos_refused(&t, &plan, BIT_FIELDS(gap, {5, 3}, x, {1, 1}), __LINE__);
    pos_refused(&t, &plan, BIT_FIELDS(gap, {6, 3}), __LINE__);
    pos_refused(&t, &plan, BIT_FIELDS(gap, {7, 3}), __LINE__);
    pos_applies(&t, &plan, BIT_FIELDS(gap, {2, 3}, x, {1, 1}), e, minus_two, 64, __LINE__);
    /* (Pos kept as the keyframe brought it) */
    pos_applies(&t, &plan, BIT_FIELDS(gap, {0, 3}), e, 0.0f, 0.0f, __LINE__);
    /* A listed pattern with a bit past its whole bit (bit 7 of the 7 it has). */
    const uint8_t past = values | 1u << 7;
    plan = real;
    plan.list = &past;
    pos_refused(&t, &plan, BIT_FIELDS(gap, x, {1, 1}), __LINE__);

    /* The real thing applies, and the replica holds the nearest steps. */
    qapply(&t.replica, &d, true);
    CHECK(get_f32(t.replica.world, e, t.replica.pos, 0, 0) == 0.5f);
    CHECK(get_f32(t.replica.world, e, t.replica.pos, 1, 0) == 64.0f);
    free(key.bytes);
    free(d.bytes);
}

TEST(a_changed_step_is_another_schema_and_a_keyframe_brings_it) {
    qworld_t source = qworld(), replica = qworld();
    tes_quantum_t fine = {source.pos, 0, 0.01}, coarse = {source.pos, 0, 0.5};
    tes_entity_t e = fx_spawn(source.world, FX_IDS(source.pos));
    CHECK_OK(tes_set_number(source.world, e, source.pos, 0, 0, 3.14159));
    tes_replicator_t *b = quantized(&source, &coarse, 1), *a = quantized(&source, &fine, 1);
    tes_replicator_t *exact = quantized(&source, NULL, 0);
    delta_copy_t b_key = encode(b, 0), x_key = encode(exact, 0), a_key = encode(a, 0);
    qapply(&replica, &a_key, true);
    CHECK(get_f32(replica.world, e, replica.pos, 0, 0) == nearest_f32(3.14159f, 0.01));
    CHECK_OK(tes_set_number(source.world, e, source.pos, 0, 0, 2.71828));
    /* The same components at another step (or exact), from other replicators: the replica
     * holds none of their baselines (they are other sources), nor could it decode them. */
    delta_copy_t b_delta = encode(b, b_key.tick), x_delta = encode(exact, x_key.tick);
    fx_snapshot_t *before = fx_snapshot_full_of(replica.world);
    CHECK_ERR(tes_delta_apply(replica.world, b_delta.bytes, b_delta.size, NULL),
              TES_ERR_DELTA_BASELINE);
    CHECK_ERR(tes_delta_apply(replica.world, x_delta.bytes, x_delta.size, NULL),
              TES_ERR_DELTA_BASELINE);
    FX_CHECK_UNCHANGED_FULL(before, replica.world);
    CHECK_EQ(tes_replica_tick(replica.world), a_key.tick);
    /* Its own replicator's delta applies; then b's keyframe switches it to b's steps. */
    delta_copy_t a_delta = encode(a, a_key.tick);
    qapply(&replica, &a_delta, true);
    CHECK(get_f32(replica.world, e, replica.pos, 0, 0) == nearest_f32(2.71828f, 0.01));
    delta_copy_t b_again = encode(b, 0);
    qapply(&replica, &b_again, true);
    CHECK(get_f32(replica.world, e, replica.pos, 0, 0) == 2.5f);
    CHECK_OK(tes_set_number(source.world, e, source.pos, 0, 0, -1.3));
    delta_copy_t b_next = encode(b, b_again.tick);
    qapply(&replica, &b_next, true);
    CHECK(get_f32(replica.world, e, replica.pos, 0, 0) == -1.5f);
    /* and a's deltas are now another source's, of another schema. */
    delta_copy_t a_next = encode(a, a_delta.tick);
    CHECK_ERR(tes_delta_apply(replica.world, a_next.bytes, a_next.size, NULL),
              TES_ERR_DELTA_BASELINE);
    delta_copy_t *all[] = {&b_key,   &x_key,   &a_key,  &b_delta, &x_delta,
                           &a_delta, &b_again, &b_next, &a_next};
    for (uint32_t i = 0; i < sizeof all / sizeof *all; i++)
        free(all[i]->bytes);
}

/* Every truncation and flipped bit of a quantized delta and keyframe is refused with the replica
 * untouched, or (a flip inside a value) applied to a valid world. */
TEST(corrupt_quantized_deltas_are_refused_or_applied_whole) {
    qworld_t source = qworld(), replica = qworld();
    tes_replicator_t *rep = quantized_all(&source);
    tes_entity_t e[6];
    CHECK_OK(tes_spawn_batch(source.world, FX_IDS(source.pos, source.wide, source.arr), 6, e));
    fx_rng_t rng = {61};
    for (uint32_t i = 0; i < 6; i++)
        set_random(&source, &rng, e[i]);
    delta_copy_t key = encode(rep, 0);
    set_random(&source, &rng, e[2]);
    set_random(&source, &rng, e[5]);
    delta_copy_t d = encode(rep, key.tick);
    const delta_copy_t *both[] = {&key, &d};
    for (uint32_t which = 0; which < 2; which++) {
        const delta_copy_t *x = both[which];
        qworld_t probe = qworld();
        if (which) qapply(&probe, &key, true);
        uint64_t tick = tes_replica_tick(probe.world);
        fx_snapshot_t *before = fx_snapshot_full_of(probe.world);
        world_t as_world = {.world = probe.world};
        for (uint32_t n = 0; n < x->size; n++)
            check_refused(&as_world, x->bytes, n, before, tick);
        uint8_t *copy = (uint8_t *)fx_malloc(x->size);
        for (uint32_t bit = 16 * 8; bit < x->size * 8; bit++) {
            memcpy(copy, x->bytes, x->size);
            copy[bit / 8] ^= (uint8_t)(1u << (bit % 8));
            crc32_reseal_delta(copy, x->size);
            qworld_t fresh = qworld();
            if (which) qapply(&fresh, &key, true);
            fx_snapshot_t *fresh_before = fx_snapshot_full_of(fresh.world);
            tes_result_t r = tes_delta_apply(fresh.world, copy, x->size, NULL);
            if (r == TES_OK) {
                CHECK_OK(tes_world_validate(fresh.world));
            } else {
                world_t w = {.world = fresh.world};
                check_refused(&w, copy, x->size, fresh_before, tick);
            }
            fx_world_destroy_now(fresh.world);
        }
    }
    qapply(&replica, &key, true);
    qapply(&replica, &d, true);
    check_quantized(&source, &replica, e, 6);
    free(key.bytes);
    free(d.bytes);
}

/* ---- only the changed fields ------------------------------------------------------------ */

/* One entity with Body (x f32, hp i16, tags u8[3], mass f64) and a replica at the keyframe; the
 * delta after `hp` alone changed. */
typedef struct one_field_t {
    world_t source, replica;
    tes_entity_t e;
    delta_copy_t d;
} one_field_t;

static one_field_t one_field_changed(uint32_t flags) {
    one_field_t t = {make(), make(), 0, {NULL, 0, 0}};
    tes_replicator_t *rep = replicator_with(t.source.world, NULL, 0, flags);
    CHECK_OK(tes_spawn(t.source.world, &t.source.body, 1, &t.e));
    CHECK_OK(tes_set_number(t.source.world, t.e, t.source.body, 0, 0, 1.5));
    delta_copy_t key = encode(rep, 0);
    apply(&t.replica, &key, true);
    free(key.bytes);
    CHECK_OK(tes_set_number(t.source.world, t.e, t.source.body, 1, 0, 77));
    CHECK_OK(tes_set_number(t.source.world, t.e, t.source.body, 0, 0, 1.5)); /* the same value */
    t.d = encode(rep, key.tick);
    return t;
}

TEST(with_changed_fields_a_record_carries_only_the_fields_whose_values_changed) {
    one_field_t all = one_field_changed(0), some = one_field_changed(TES_REPLICATOR_CHANGED_FIELDS);
    records_view_t a = view_records(&all.source, &all.d), s = view_records(&some.source, &some.d);
    /* The same plan: one record of one listed pattern (no pattern bits), not whole, the same gap
     * parameter; the pattern's Body (the first component) in state 3 or 2, nothing else. */
    CHECK_EQ(a.records, 1);
    CHECK_EQ(s.records, 1);
    CHECK_EQ(a.patterns, 1);
    CHECK_EQ(s.patterns, 1);
    CHECK_EQ(a.gap_bits, s.gap_bits);
    CHECK_EQ(a.bits, s.bits);
    CHECK_EQ(a.pattern_bytes, 2);
    CHECK(a.list[0] == 3 && a.list[1] == 0);
    CHECK(s.list[0] == 2 && s.list[1] == 0);
    /* The record's bits: the gap code, then Body's values, all four fields (17 bytes: 136 bits),
     * or a mask of a bit per field (4) and hp's 2 bytes (16 bits); zeros to a byte, then the two
     * relations' sections (no event: 4 bytes each). */
    tes_component_info_t body;
    tes_field_info_t hp;
    CHECK_OK(tes_component_info(some.source.world, some.source.body, &body));
    CHECK_OK(tes_field_info(some.source.world, some.source.body, 1, &hp));
    CHECK_EQ(8 * body.row_bytes, 136);
    CHECK_EQ(body.field_count + 8 * hp.bytes, 4 + 16);
    uint32_t gap = gap_code_bits(tes_entity_index(some.e), s.gap_bits);
    uint32_t all_bits = gap + 8 * body.row_bytes, some_bits = gap + body.field_count + 8 * hp.bytes;
    CHECK_EQ(all.d.size, a.bits / 8 + (all_bits + 7) / 8 + 4 * a.relations);
    CHECK_EQ(some.d.size, s.bits / 8 + (some_bits + 7) / 8 + 4 * s.relations);
    CHECK_EQ(all.d.size - some.d.size, (gap + 136 + 7) / 8 - (gap + 20 + 7) / 8);
    apply(&some.replica, &some.d, true);
    check_same(&some.source, &some.replica, 1);
    double hp_value = 0;
    CHECK_OK(tes_get_number(some.replica.world, some.e, some.replica.body, 1, 0, &hp_value));
    CHECK_EQ(hp_value, 77);
    free(all.d.bytes);
    free(some.d.bytes);
}

/* The bit of the first record's first component mask (Body's: the first component) in a delta
 * with one record that is not whole, of the one pattern listed (so no pattern bits): right after
 * the gap code, which must give `e`'s index. */
static uint64_t first_mask_at(const world_t *source, const delta_copy_t *d, tes_entity_t e) {
    records_view_t v = view_records(source, d);
    CHECK(!is_keyframe(d));
    CHECK_EQ(v.records, 1);
    CHECK_EQ(v.patterns, 1);
    CHECK_EQ(v.list[0] & 3u, 2u);                                     /* Body: some values */
    CHECK_EQ((v.list[2 * v.plain / 8] >> (2 * v.plain % 8)) & 1u, 0); /* not whole */
    bits_in_t in = {d->bytes, v.bits};
    uint32_t quotient = 0;
    while (quotient < 16 && take_bits_of(&in, 1, d->size))
        quotient++;
    CHECK(quotient < 16);
    uint32_t low = (uint32_t)take_bits_of(&in, v.gap_bits, d->size);
    CHECK_EQ((quotient << v.gap_bits | low) + 1, tes_entity_index(e));
    return in.at;
}

/* The values of the fields of `mask` of Body of entity e, in field order, as bytes. */
static uint32_t body_values(const world_t *w, tes_entity_t e, uint32_t mask, uint8_t *out) {
    uint32_t n = 0;
    for (uint32_t f = 0; f < 4; f++) {
        tes_field_info_t info;
        CHECK_OK(tes_field_info(w->world, w->body, f, &info));
        if (mask >> f & 1u) CHECK_OK(tes_get(w->world, e, w->body, f, out + n, info.bytes));
        n += mask >> f & 1u ? info.bytes : 0;
    }
    return n;
}

/* `d` (one record, Body with some values last in it) with the record from its mask (at bit
 * `at`) on as given: the mask (4 bits), then the values' bytes as bits; zeros to a byte, then
 * the bytes after the record (the relations' sections, `tail` of them); resealed. */
static delta_copy_t with_mask(const delta_copy_t *d, uint64_t at, uint32_t tail, uint32_t mask,
                              const uint8_t *values, uint32_t n) {
    out_t o = {NULL, 0};
    put_bytes(&o, d->bytes, (uint32_t)(at / 8));
    bits_out_t bits = {&o, (uint8_t)(d->bytes[at / 8] & ((1u << (at % 8)) - 1)),
                       (uint32_t)(at % 8)};
    put_bits(&bits, mask, 4);
    for (uint32_t i = 0; i < n; i++)
        put_bits(&bits, values[i], 8);
    bits_end(&bits);
    put_bytes(&o, d->bytes + d->size - tail, tail);
    crc32_reseal_delta(o.bytes, o.size);
    return (delta_copy_t){o.bytes, o.size, d->tick};
}

TEST(bad_field_masks_are_refused_and_leave_the_replica_as_it_was) {
    one_field_t t = one_field_changed(TES_REPLICATOR_CHANGED_FIELDS);
    uint64_t at = first_mask_at(&t.source, &t.d, t.e);
    bits_in_t in = {t.d.bytes, at};
    CHECK_EQ(take_bits_of(&in, 4, t.d.size), 1u << 1); /* hp */
    CHECK_EQ(take_bits_of(&in, 16, t.d.size), 77);
    uint32_t tail = t.d.size - (uint32_t)((in.at + 7) / 8); /* Likes' and ChildOf's sections */
    CHECK_EQ(tail, 8);
    /* The record rebuilt from its mask: the delta again, byte for byte. */
    uint8_t values[17];
    uint32_t n = body_values(&t.source, t.e, 1u << 1, values);
    delta_copy_t again = with_mask(&t.d, at, tail, 1u << 1, values, n);
    CHECK_EQ(again.size, t.d.size);
    CHECK(memcmp(again.bytes, t.d.bytes, t.d.size) == 0);
    free(again.bytes);
    fx_snapshot_t *before = fx_snapshot_new();
    fx_snapshot_take_full(before, t.replica.world);
    uint64_t tick = tes_replica_tick(t.replica.world);
    /* No field (and no value after it), and every field (that is state 3's) with their 17
     * bytes: only the mask is wrong. A field the component lacks (a mask bit past its fourth
     * field, as 0x12 was when masks were whole bytes) no longer has a place: the mask is
     * field_count bits, 4 for Body, and what follows them is the values. */
    const uint32_t bad[] = {0, 0xF};
    for (uint32_t i = 0; i < 2; i++) {
        n = body_values(&t.source, t.e, bad[i], values);
        delta_copy_t copy = with_mask(&t.d, at, tail, bad[i], values, n);
        CHECK_EQ(tes_delta_apply(t.replica.world, copy.bytes, copy.size, NULL), TES_ERR_BAD_DELTA);
        check_refused(&t.replica, copy.bytes, copy.size, before, tick);
        free(copy.bytes);
    }
    /* While another mask of some fields applies: x and mass sent, hp (changed on the source)
     * left as the keyframe brought it. */
    one_field_t u = one_field_changed(TES_REPLICATOR_CHANGED_FIELDS);
    CHECK_OK(tes_set_number(u.source.world, u.e, u.source.body, 3, 0, 2.25));
    n = body_values(&u.source, u.e, 0x9, values);
    CHECK_EQ(n, 4 + 8);
    delta_copy_t other = with_mask(&u.d, first_mask_at(&u.source, &u.d, u.e), tail, 0x9, values, n);
    apply(&u.replica, &other, true);
    CHECK_EQ(fx_get_number(u.replica.world, u.e, u.replica.body, 0, 0), 1.5);
    CHECK_EQ(fx_get_number(u.replica.world, u.e, u.replica.body, 3, 0), 2.25);
    CHECK_EQ(fx_get_number(u.replica.world, u.e, u.replica.body, 1, 0), 0);
    CHECK_OK(tes_world_validate(u.replica.world));
    free(other.bytes);
    free(u.d.bytes);
    /* Some values of a component the replica's entity lacks. */
    CHECK_OK(tes_remove(t.replica.world, t.e, t.replica.body));
    fx_snapshot_take_full(before, t.replica.world);
    CHECK_EQ(tes_delta_apply(t.replica.world, t.d.bytes, t.d.size, NULL), TES_ERR_BAD_DELTA);
    check_refused(&t.replica, t.d.bytes, t.d.size, before, tick);
    free(t.d.bytes);
}

/* ---- records in bits: gaps and patterns ------------------------------------------------- */

/* A component set. */
typedef struct set_t {
    tes_component_t c[8];
    uint32_t n;
} set_t;

/* Values of whatever replicated fields the entity has, from `salt`. */
static void set_shape_values(const world_t *w, tes_entity_t e, uint32_t salt) {
    if (fx_has(w->world, e, w->body)) {
        CHECK_OK(tes_set_number(w->world, e, w->body, 0, 0, salt * 0.25));
        CHECK_OK(tes_set_number(w->world, e, w->body, 1, 0, salt % 30000));
        CHECK_OK(tes_set_number(w->world, e, w->body, 2, salt % 3, salt % 256));
        CHECK_OK(tes_set_number(w->world, e, w->body, 3, 0, salt * 1.5));
    }
    if (fx_has(w->world, e, w->vel))
        CHECK_OK(tes_set_number(w->world, e, w->vel, 0, 0, -1.0 * salt));
    if (fx_has(w->world, e, w->sparse)) {
        CHECK_OK(tes_set_number(w->world, e, w->sparse, 0, 0, salt + 0.5));
        CHECK_OK(tes_set_number(w->world, e, w->sparse, 1, 0, salt % 200));
    }
}

/* In a new world: an entity of sets[k] at index at[k] (ascending; a new world hands out 1, 2, 3
 * ... in order), with values; placeholders at the indices between, despawned. */
static void spawn_at(const world_t *w, const uint32_t *at, const set_t *sets, uint32_t n,
                     tes_entity_t *out) {
    tes_entity_t *placeholders = (tes_entity_t *)fx_malloc(at[n - 1] * sizeof *placeholders);
    uint32_t count = 0;
    for (uint32_t index = 1, k = 0; k < n; index++) {
        tes_entity_t e;
        if (index == at[k]) {
            CHECK_OK(tes_spawn(w->world, sets[k].c, sets[k].n, &e));
            out[k++] = e;
        } else {
            CHECK_OK(tes_spawn(w->world, &w->vel, 1, &e));
            placeholders[count++] = e;
        }
        CHECK_EQ(tes_entity_index(e), index);
    }
    CHECK_OK(tes_despawn_batch(w->world, placeholders, count));
    for (uint32_t k = 0; k < n; k++)
        set_shape_values(w, out[k], k + 1);
}

/* A keyframe's records walked: `patterns` listed, a whole record per entity of `e` (ascending,
 * every live one) with its handle, `escapes` gaps escaped at least, and the relations' sections
 * (no pairs here) ending the bytes. */
static void check_keyframe_records(const world_t *source, const delta_copy_t *key,
                                   const tes_entity_t *e, uint32_t n, uint32_t patterns,
                                   uint32_t escapes) {
    CHECK(is_keyframe(key));
    records_view_t v = view_records(source, key);
    CHECK_EQ(v.records, n);
    CHECK_EQ(v.patterns, patterns);
    walked_t w = walk_records(&v, key);
    CHECK_EQ(w.whole, n);
    for (uint32_t k = 0; k < n; k++)
        CHECK_EQ(w.at[k], e[k]);
    CHECK(w.escapes >= escapes);
    CHECK_EQ(w.end + 4 * v.relations, key->size);
}

/* The extra tags agree on every live entity. */
static void check_same_tags(const world_t *source, const tes_component_t *tags,
                            const world_t *replica, const tes_component_t *replica_tags) {
    uint32_t n;
    tes_entity_t *all = live_by_index(source->world, &n);
    for (uint32_t i = 0; i < n; i++) {
        for (uint32_t k = 0; k < 7; k++)
            CHECK_EQ(fx_has(source->world, all[i], tags[k]),
                     fx_has(replica->world, all[i], replica_tags[k]));
    }
    free(all);
}

static const char *const SHAPE_TAGS[7] = {"T0", "T1", "T2", "T3", "T4", "T5", "T6"};

TEST(records_in_bits_round_trip_every_gap_and_pattern_shape) {
    /* Neighbours (gap 1), short gaps and far ones: 47 records up to index 20000, a mean gap of
     * 425 (gap_bits 8), so that the gaps of thousands escape (a quotient of 16 or more). */
    uint32_t at[47], n = 0;
    for (uint32_t index = 1; index <= 40; index++)
        at[n++] = index;
    const uint32_t far[] = {100, 101, 103, 5000, 5001, 19999, 20000};
    for (uint32_t i = 0; i < 7; i++)
        at[n++] = far[i];
    /* 1 .. 5 component sets, round robin: a keyframe lists as many patterns. */
    for (uint32_t kinds = 1; kinds <= 5; kinds++) {
        world_t source = make(), replica = make();
        tes_replicator_t *rep = replicator(source.world, NULL, 0);
        const set_t sets[5] = {{{source.body}, 1},
                               {{source.body, source.vel}, 2},
                               {{source.vel, source.tag}, 2},
                               {{source.sparse, source.marker}, 2},
                               {{source.body, source.tag, source.sparse}, 3}};
        set_t chosen[47];
        for (uint32_t k = 0; k < n; k++)
            chosen[k] = sets[k % kinds];
        tes_entity_t e[47];
        spawn_at(&source, at, chosen, n, e);
        delta_copy_t key = encode(rep, 0);
        records_view_t v = view_records(&source, &key);
        CHECK_EQ(v.gap_bits, 8);
        check_keyframe_records(&source, &key, e, n, kinds, 2);
        apply(&replica, &key, true);
        check_same(&source, &replica, kinds);
        /* Body changed on every entity of the first set and nothing else: records that all say
         * the same (not whole, Body with values), one pattern listed. */
        uint32_t changed = 0;
        for (uint32_t k = 0; k < n; k += kinds, changed++)
            CHECK_OK(tes_set_number(source.world, e[k], source.body, 0, 0, 100.0 + k));
        delta_copy_t same = encode(rep, key.tick);
        v = view_records(&source, &same);
        CHECK_EQ(v.records, changed);
        CHECK_EQ(v.patterns, 1);
        walked_t w = walk_records(&v, &same);
        CHECK_EQ(w.whole, 0);
        for (uint32_t r = 0; r < changed; r++)
            CHECK_EQ(w.at[r], tes_entity_index(e[r * kinds]));
        apply(&replica, &same, true);
        check_same(&source, &replica, kinds);
        /* Changes of every kind, side by side and far apart: values, a component added and one
         * removed, a despawn, a spawn at a freed index (whole). */
        const uint32_t touched[] = {0, 1, 2, 39, 44, 46};
        for (uint32_t i = 0; i < 6; i++)
            set_shape_values(&source, e[touched[i]], 1000 + i);
        if (fx_has(source.world, e[45], source.vel)) {
            CHECK_OK(tes_remove(source.world, e[45], source.vel));
        } else {
            CHECK_OK(tes_add(source.world, e[45], source.vel));
        }
        if (fx_has(source.world, e[3], source.body)) {
            CHECK_OK(tes_remove(source.world, e[3], source.body));
        } else {
            CHECK_OK(tes_add(source.world, e[3], source.body));
        }
        CHECK_OK(tes_despawn(source.world, e[41]));
        tes_entity_t fresh;
        CHECK_OK(tes_spawn(source.world, sets[kinds - 1].c, sets[kinds - 1].n, &fresh));
        set_shape_values(&source, fresh, 77);
        delta_copy_t mixed = encode(rep, same.tick);
        v = view_records(&source, &mixed);
        CHECK_EQ(v.records, 6 + 2 + 1);
        CHECK(v.patterns >= 2);
        w = walk_records(&v, &mixed);
        CHECK_EQ(w.whole, 1);
        bool found = false;
        for (uint32_t r = 0; r < v.records; r++)
            found = found || w.at[r] == fresh;
        CHECK(found); /* its handle, generation and all */
        apply(&replica, &mixed, true);
        check_same(&source, &replica, kinds);
        free(key.bytes);
        free(same.bytes);
        free(mixed.bytes);
    }
    /* More than 64 patterns: Body and 7 more tags in all 128 combinations, side by side, and Vel
     * alone far away. Each record carries its pattern (P = 0): 13 components (an eighth tag no
     * entity has), 27 bits: a pattern's bits are not its bytes' (32) less the padding of one
     * component count in four, which an encoder that wrote 8 * bytes - 7 bits got right. */
    world_t source = make(), replica = make();
    tes_component_t tags[7], replica_tags[7];
    for (uint32_t k = 0; k < 7; k++) {
        tags[k] = fx_tag(source.world, SHAPE_TAGS[k]);
        replica_tags[k] = fx_tag(replica.world, SHAPE_TAGS[k]);
    }
    fx_tag(source.world, "Unused");
    fx_tag(replica.world, "Unused");
    tes_replicator_t *rep = replicator(source.world, NULL, 0);
    uint32_t many_at[129];
    set_t many[129];
    for (uint32_t k = 0; k < 128; k++) {
        many_at[k] = k + 1;
        many[k] = (set_t){{source.body}, 1};
        for (uint32_t t = 0; t < 7; t++) {
            if (k >> t & 1u) many[k].c[many[k].n++] = tags[t];
        }
    }
    many_at[128] = 5000;
    many[128] = (set_t){{source.vel}, 1};
    tes_entity_t e[129];
    spawn_at(&source, many_at, many, 129, e);
    delta_copy_t key = encode(rep, 0);
    check_keyframe_records(&source, &key, e, 129, 0, 1);
    CHECK_EQ(view_records(&source, &key).pattern_bytes, 4);
    apply(&replica, &key, true);
    check_same(&source, &replica, 0);
    check_same_tags(&source, tags, &replica, replica_tags);
    /* Body changed on all of them: 129 patterns again (not whole now), none listed. */
    for (uint32_t k = 0; k < 129; k++)
        set_shape_values(&source, e[k], 500 + k);
    delta_copy_t d = encode(rep, key.tick);
    records_view_t v = view_records(&source, &d);
    CHECK_EQ(v.records, 129);
    CHECK_EQ(v.patterns, 0);
    walked_t w = walk_records(&v, &d);
    CHECK_EQ(w.whole, 0);
    CHECK(w.escapes >= 1);
    apply(&replica, &d, true);
    check_same(&source, &replica, 1);
    free(d.bytes);
    /* Three of them: three patterns listed, a place of 2 bits each. */
    const uint32_t three[] = {5, 6, 128};
    for (uint32_t i = 0; i < 3; i++)
        set_shape_values(&source, e[three[i]], 900 + i);
    uint64_t tick = tes_replica_tick(replica.world);
    d = encode(rep, tick);
    v = view_records(&source, &d);
    CHECK_EQ(v.records, 3);
    CHECK_EQ(v.patterns, 3);
    w = walk_records(&v, &d);
    CHECK(w.at[0] == 6 && w.at[1] == 7 && w.at[2] == 5000);
    apply(&replica, &d, true);
    check_same(&source, &replica, 2);
    free(d.bytes);
    /* Tags added and removed: the replica follows. */
    CHECK_OK(tes_add(source.world, e[2], tags[0]));
    CHECK_OK(tes_remove(source.world, e[3], tags[1]));
    CHECK_OK(tes_add(source.world, e[128], tags[6]));
    d = encode(rep, tes_replica_tick(replica.world));
    apply(&replica, &d, true);
    check_same(&source, &replica, 3);
    check_same_tags(&source, tags, &replica, replica_tags);
    free(d.bytes);
    free(key.bytes);
}

TEST(the_history_counts_each_peers_encodes_so_many_peers_lagging_a_little_get_deltas) {
    world_t source = make();
    tes_replicator_t *rep = replicator(source.world, NULL, 4); /* 4 encodes a peer */
    enum { PEERS = 10, LAG = 2 };
    tes_peer_t *peers[PEERS];
    uint64_t ticks[PEERS][LAG + 1] = {{0}};
    for (int p = 0; p < PEERS; p++)
        peers[p] = peer_of(rep, 0);
    fx_rng_t rng = {71};
    live_t live = {.n = 0};
    for (uint32_t tick = 0; tick < 20; tick++) {
        fx_mixed_changes(&source, &rng, &live, 3, tick * 10);
        for (int p = 0; p < PEERS; p++) {
            /* Each peer acknowledges the delta of LAG updates ago. */
            delta_copy_t d = peer_encode(peers[p], ticks[p][0], 0);
            CHECK_EQ(is_keyframe(&d), tick < LAG + 1);
            memmove(ticks[p], ticks[p] + 1, LAG * sizeof ticks[p][0]);
            ticks[p][LAG] = d.tick;
            free(d.bytes);
        }
        CHECK_OK(tes_tick(source.world));
    }
}

TEST(a_peer_costs_what_it_sees_and_owes_not_the_worlds_indices) {
    world_t source = make();
    tes_replicator_t *rep = replicator(source.world, NULL, 0);
    enum { N = 100000, SHOWN = 100 };
    tes_entity_t *all = (tes_entity_t *)malloc(N * sizeof *all);
    CHECK(all != NULL);
    CHECK_OK(tes_spawn_batch(source.world, &source.body, 1, N, all));
    uint64_t before = fx_stats(source.world).bytes_allocated;
    tes_peer_t *peer = peer_of(rep, TES_PEER_VISIBILITY);
    /* Spread over every page of 1,024 indices. */
    for (uint32_t i = 0; i < SHOWN; i++)
        CHECK_OK(tes_peer_show(peer, all[i * (N / SHOWN)], 1.0f));
    uint64_t grew = fx_stats(source.world).bytes_allocated - before;
    /* A table of 256 sights of 40 bytes, the log, the peer: about 12 KB; pages would be 3 MB. */
    CHECK(grew < 32 * 1024);
    free(all);
}

TEST(a_delta_with_nothing_for_the_replica_is_flagged_empty_and_the_flag_is_checked) {
    world_t source = make(), replica = make();
    tes_replicator_t *rep = replicator(source.world, NULL, 0);
    tes_entity_t e = fx_spawn(source.world, FX_IDS(source.body));
    delta_copy_t key = encode(rep, 0);
    CHECK_EQ(key.bytes[6] & 2, 0); /* a keyframe is never empty */
    apply(&replica, &key, true);
    delta_copy_t quiet = encode(rep, key.tick);
    CHECK_EQ(quiet.bytes[6] & 2, 2);
    apply(&replica, &quiet, true); /* applies: the replica is at its tick */
    CHECK_OK(tes_set_number(source.world, e, source.body, 0, 0, 3));
    delta_copy_t d = encode(rep, quiet.tick);
    CHECK_EQ(d.bytes[6] & 2, 0);
    /* The flag on a delta with a record is refused, and changes nothing. */
    fx_snapshot_t *before = fx_snapshot_new();
    fx_snapshot_take_full(before, replica.world);
    d.bytes[6] |= 2;
    crc32_reseal_delta(d.bytes, d.size);
    check_refused(&replica, d.bytes, d.size, before, quiet.tick);
    /* And on a keyframe. */
    key.bytes[6] |= 2;
    crc32_reseal_delta(key.bytes, key.size);
    check_refused(&replica, key.bytes, key.size, before, quiet.tick);
    free(key.bytes);
    free(quiet.bytes);
    free(d.bytes);
}
