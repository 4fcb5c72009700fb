/* Checkpoints and rewinds: after a rewind the world is the world of the checkpoint, byte for
 * byte as a snapshot sees it (entities, handles, values, sparse members, pairs and their order,
 * row order, the free queue), it validates, and the spawns that follow hand out the handles a
 * restored copy of the checkpoint would. Randomized over every kind of change (per entity, in
 * batches, whole archetypes, deferred in a run), with checkpoints and rewinds at random. */
#include "fixtures.h"

typedef fx_mixed_t world_t;

typedef struct kept_t {
    uint32_t number;
    uint8_t *bytes;
    uint32_t size;
} kept_t;

static void free_bytes(void *p) {
    free(p);
}

static kept_t keep(tes_world_t *world, uint32_t number) {
    const uint8_t *bytes = NULL;
    uint32_t size = 0;
    CHECK_OK(tes_snapshot(world, &bytes, &size));
    uint8_t *copy = malloc(size);
    CHECK(copy != NULL);
    memcpy(copy, bytes, size);
    harness_defer(free_bytes, copy);
    return (kept_t){number, copy, size};
}

static void check_snapshot_is(tes_world_t *world, const kept_t *k) {
    const uint8_t *bytes = NULL;
    uint32_t size = 0;
    CHECK_OK(tes_snapshot(world, &bytes, &size));
    CHECK_EQ(size, k->size);
    CHECK(memcmp(bytes, k->bytes, size) == 0);
}

/* Changes the random history makes besides fx_mixed_change's: batches, whole-archetype moves,
 * and structural calls deferred inside a run. */
static void batch_change(const world_t *w, fx_rng_t *rng, fx_live_t *live) {
    uint32_t op = fx_rng_below(rng, 8);
    if (op == 0 && live->n + 8 <= 512) {
        tes_component_t set[] = {w->body, w->tag};
        CHECK_OK(tes_spawn_batch(w->world, set, 1 + fx_rng_below(rng, 2), 8, live->e + live->n));
        live->n += 8;
    } else if (op == 1 && live->n >= 3) {
        tes_entity_t some[3];
        for (int i = 0; i < 3; i++)
            some[i] = live->e[live->n - 1 - i];
        tes_result_t r = tes_despawn_batch(w->world, some, 3);
        CHECK(r == TES_OK || r == TES_ERR_STALE_ENTITY);
    } else if (op == 2 && live->n) {
        tes_location_t at;
        CHECK_OK(tes_location(w->world, live->e[fx_rng_below(rng, live->n)], &at));
        tes_result_t r = fx_rng_chance(rng, 50)
                             ? tes_archetype_add(w->world, at.archetype, w->vel)
                             : tes_archetype_remove(w->world, at.archetype, w->tag);
        CHECK(r == TES_OK);
    } else if (op == 3 && live->n) {
        /* A run that spawns, despawns and adds while it iterates: applied at its end. */
        tes_query_desc_t desc = {.all = &w->body, .all_count = 1};
        tes_query_t *q;
        CHECK_OK(tes_query_create(w->world, &desc, &q));
        tes_iter_t it;
        CHECK_OK(tes_query_iter(w->world, q, &it));
        uint32_t done = 0;
        while (tes_iter_next(&it) && done < 3) {
            tes_entity_t spawned;
            CHECK_OK(tes_spawn(w->world, &w->vel, 1, &spawned));
            if (live->n < 512) live->e[live->n++] = spawned;
            CHECK_OK(tes_add(w->world, it.entities[0], w->tag));
            if (it.count > 1) CHECK_OK(tes_despawn(w->world, it.entities[1]));
            done++;
        }
        tes_iter_fini(&it);
        tes_query_destroy(w->world, q);
    } else if (op == 4 && live->n) {
        /* A pair with a value by item: a change when the pair is there already. */
        tes_entity_t e = live->e[fx_rng_below(rng, live->n)];
        tes_entity_t f = live->e[fx_rng_below(rng, live->n)];
        tes_item_t item = {w->likes, f};
        tes_value_t value = {0, 0, 0, 0};
        double number = fx_rng_below(rng, 1000) * 0.5;
        tes_items_t items = {&item, 1, &value, 1, &number, 1};
        CHECK_OK(tes_add_items(w->world, &e, 1, &items, NULL));
    } else if (op == 5 && live->n) {
        /* An initial value written to an old entity: no change for change tracking. */
        tes_entity_t e = live->e[fx_rng_below(rng, live->n)];
        if (fx_has(w->world, e, w->body)) {
            CHECK_OK(tes_init_number(w->world, e, w->body, 0, 0, fx_rng_below(rng, 1000)));
        }
    } else if (op == 6 && live->n) {
        /* Same columns: whole chunks change hands (and the target's chunks shift). */
        tes_location_t at;
        CHECK_OK(tes_location(w->world, live->e[fx_rng_below(rng, live->n)], &at));
        CHECK_OK(fx_rng_chance(rng, 50) ? tes_archetype_add(w->world, at.archetype, w->tag)
                                        : tes_archetype_remove(w->world, at.archetype, w->tag));
    } else if (op == 7 && live->n + 4 <= 512) {
        tes_item_t item = {w->body, 0};
        tes_value_t value = {0, 0, 0, 1}; /* x, one per entity */
        double numbers[4] = {1, 2, 3, fx_rng_below(rng, 9)};
        tes_items_t items = {&item, 1, &value, 1, numbers, 4};
        CHECK_OK(tes_spawn_items(w->world, &items, 4, live->e + live->n, NULL));
        live->n += 4;
    }
    uint32_t kept = 0;
    for (uint32_t i = 0; i < live->n; i++) {
        if (tes_is_alive(w->world, live->e[i])) live->e[kept++] = live->e[i];
    }
    live->n = kept;
}

/* The handles the next spawns get, in a restored copy of the kept bytes and in the world: the
 * same (the world then has them: the history goes on from there). */
static void check_next_handles(const world_t *w, const kept_t *k) {
    tes_world_t *copy = NULL;
    CHECK_OK(tes_world_restore(&(tes_world_desc_t){.chunk_bytes = 1024, .min_free_indices = 8},
                               k->bytes, k->size, &copy));
    harness_defer(fx_destroy_world, copy);
    tes_entity_t a[5], b[5];
    CHECK_OK(tes_spawn_batch(copy, NULL, 0, 5, a));
    CHECK_OK(tes_spawn_batch(w->world, NULL, 0, 5, b));
    for (int i = 0; i < 5; i++)
        CHECK_EQ(a[i], b[i]);
    CHECK_OK(tes_despawn_batch(w->world, b, 5));
}

static void random_history(uint64_t seed, uint32_t depth, uint32_t steps) {
    world_t w = fx_mixed(
        &(tes_world_desc_t){.chunk_bytes = 1024, .min_free_indices = 8, .checkpoints = depth},
        false);
    fx_rng_t rng = {seed};
    fx_live_t live = {.n = 0};
    fx_mixed_changes(&w, &rng, &live, 150, 0);
    kept_t kept[64];
    uint32_t kept_count = 0, rewinds = 0, ring = 0; /* ring: checkpoints the world keeps */
    uint32_t differed = 0;                          /* rewinds that had something to undo */
    for (uint32_t step = 0; step < steps; step++) {
        uint32_t roll = fx_rng_below(&rng, 100);
        if (roll < 12) {
            uint32_t n = 0;
            CHECK_OK(tes_checkpoint(w.world, &n));
            CHECK_EQ(n, kept_count ? kept[kept_count - 1].number + 1 : 1);
            if (kept_count == 64) {
                memmove(kept, kept + 1, 63 * sizeof *kept);
                kept_count--;
            }
            kept[kept_count++] = keep(w.world, n);
            if (ring < depth) ring++;
        } else if (roll < 17 && kept_count) {
            uint32_t oldest, newest;
            CHECK_OK(tes_checkpoints(w.world, &oldest, &newest));
            CHECK_EQ(newest, kept[kept_count - 1].number);
            CHECK_EQ(newest - oldest + 1, ring);
            CHECK_EQ(tes_rewind(w.world, oldest - 1), TES_ERR_NO_CHECKPOINT);
            CHECK_EQ(tes_rewind(w.world, newest + 1), TES_ERR_NO_CHECKPOINT);
            uint32_t to = oldest + fx_rng_below(&rng, newest - oldest + 1);
            const uint8_t *now = NULL;
            uint32_t now_size = 0;
            CHECK_OK(tes_snapshot(w.world, &now, &now_size));
            uint32_t at = 0;
            while (kept[at].number != to)
                at++;
            differed += now_size != kept[at].size || memcmp(now, kept[at].bytes, now_size);
            CHECK_OK(tes_rewind(w.world, to));
            ring -= newest - to;
            rewinds++;
            while (kept[kept_count - 1].number != to)
                kept_count--;
            check_snapshot_is(w.world, &kept[kept_count - 1]);
            CHECK_OK(tes_world_validate(w.world));
            uint32_t o2, n2;
            CHECK_OK(tes_checkpoints(w.world, &o2, &n2));
            CHECK_EQ(o2, oldest);
            CHECK_EQ(n2, to);
            /* The live list is the model's: what the world has now. */
            live.n = 0;
            tes_query_desc_t every = {0};
            tes_query_t *q;
            CHECK_OK(tes_query_create(w.world, &every, &q));
            tes_iter_t it;
            CHECK_OK(tes_query_iter(w.world, q, &it));
            while (tes_iter_next(&it)) {
                for (uint32_t i = 0; i < it.count && live.n < 512; i++)
                    live.e[live.n++] = it.entities[i];
            }
            tes_query_destroy(w.world, q);
            if (fx_rng_chance(&rng, 30)) check_next_handles(&w, &kept[kept_count - 1]);
        } else if (roll < 25) {
            batch_change(&w, &rng, &live);
        } else {
            fx_mixed_change(&w, &rng, &live, step);
        }
        CHECK_OK(tes_world_validate(w.world));
    }
    CHECK(differed * 2 > rewinds);
}

TEST(a_rewind_returns_the_world_to_the_checkpoint_byte_for_byte) {
    for (uint64_t seed = 1; seed <= 12; seed++)
        random_history(seed, 8, 700);
}

TEST(a_ring_of_two_and_a_ring_of_one_rewind_as_far_as_they_keep) {
    for (uint64_t seed = 20; seed <= 24; seed++) {
        random_history(seed, 2, 400);
        random_history(seed + 100, 1, 300);
    }
}

TEST(chunks_handed_over_between_archetypes_come_back_in_their_rows) {
    /* Whole chunks change hands only between archetypes of the same columns whose components
     * are untracked: tags. {A} fills two chunks and part of a third, {A, B} part of one:
     * adding B to every {A} entity hands the full chunks over ahead of the target's partial
     * chunk, whose rows then have other numbers though no record changed. */
    tes_world_t *world = fx_world(&(tes_world_desc_t){.chunk_bytes = 1024, .min_free_indices = 8});
    tes_component_t a = fx_tag(world, "A"), b = fx_tag(world, "B");
    tes_component_t both[] = {a, b};
    tes_entity_t e[610];
    CHECK_OK(tes_spawn_batch(world, both, 2, 10, e));
    CHECK_OK(tes_spawn_batch(world, &a, 1, 600, e + 10));
    tes_chunk_info_t info;
    tes_location_t at;
    CHECK_OK(tes_location(world, e[10], &at));
    CHECK_OK(tes_chunk_info(world, at.archetype, 0, &info));
    CHECK(600 / info.capacity >= 2 && 600 % info.capacity != 0 && 10 < info.capacity);
    uint32_t n;
    CHECK_OK(tes_checkpoint(world, &n));
    kept_t k = keep(world, n);
    CHECK_OK(tes_archetype_add(world, at.archetype, b));
    CHECK_OK(tes_world_validate(world));
    CHECK_OK(tes_rewind(world, n));
    check_snapshot_is(world, &k);
    CHECK_OK(tes_world_validate(world));
    /* And forth again, then back to before. */
    CHECK_OK(tes_archetype_add(world, at.archetype, b));
    CHECK_OK(tes_checkpoint(world, &n));
    tes_location_t tagged;
    CHECK_OK(tes_location(world, e[10], &tagged));
    CHECK_OK(tes_archetype_remove(world, tagged.archetype, b));
    CHECK_OK(tes_rewind(world, 1));
    check_snapshot_is(world, &k);
    CHECK_OK(tes_world_validate(world));
}

/* Rollback netcode's pattern: a checkpoint every frame, a few changes per frame, and now and
 * then a rewind of one to four frames (archetypes made since are freed, and made again, with the
 * same ids, by the frames that follow). */
TEST(a_checkpoint_per_frame_and_short_rewinds_stay_exact) {
    for (uint64_t seed = 1; seed <= 16; seed++) {
        world_t w = fx_mixed(
            &(tes_world_desc_t){.chunk_bytes = 1024, .min_free_indices = 8, .checkpoints = 6},
            false);
        fx_rng_t rng = {seed * 7919};
        fx_live_t live = {.n = 0};
        fx_mixed_changes(&w, &rng, &live, 40, 0);
        kept_t kept[6];
        for (uint32_t frame = 0; frame < 150; frame++) {
            uint32_t n = 0;
            CHECK_OK(tes_checkpoint(w.world, &n));
            kept[n % 6] = keep(w.world, n);
            if (n > 5 && fx_rng_chance(&rng, 30)) {
                uint32_t oldest, newest;
                CHECK_OK(tes_checkpoints(w.world, &oldest, &newest));
                CHECK_EQ(newest, n);
                uint32_t to = n - fx_rng_below(&rng, 5);
                if (to < oldest) to = oldest;
                CHECK_OK(tes_rewind(w.world, to));
                check_snapshot_is(w.world, &kept[to % 6]);
                CHECK_OK(tes_world_validate(w.world));
                live.n = 0;
                tes_query_t *q;
                CHECK_OK(tes_query_create(w.world, &(tes_query_desc_t){0}, &q));
                tes_iter_t it;
                CHECK_OK(tes_query_iter(w.world, q, &it));
                while (tes_iter_next(&it)) {
                    for (uint32_t i = 0; i < it.count && live.n < 512; i++)
                        live.e[live.n++] = it.entities[i];
                }
                tes_query_destroy(w.world, q);
            }
            uint32_t changes = 1 + fx_rng_below(&rng, 6);
            for (uint32_t k = 0; k < changes; k++) {
                if (fx_rng_chance(&rng, 20)) {
                    batch_change(&w, &rng, &live);
                } else {
                    fx_mixed_change(&w, &rng, &live, frame * 8 + k);
                }
            }
        }
    }
}

/* What consumers see of a rewind: the net difference at the rewind's tick, once. An entity put
 * back in another place or state counts as added, a value written back over a different one in
 * place as changed, an entity taken away as removed. */
TEST(consumers_see_a_rewind_as_the_changes_it_makes) {
    tes_world_t *world = fx_world(NULL);
    static const tes_field_desc_t xy[] = {{"x", TES_F32, 0}, {"y", TES_F32, 0}};
    tes_component_t p = fx_component(world, "P", xy, 2);
    tes_query_t *added, *changed, *removed;
    CHECK_OK(tes_query_create(world, &(tes_query_desc_t){.added = &p, .added_count = 1}, &added));
    CHECK_OK(
        tes_query_create(world, &(tes_query_desc_t){.changed = &p, .changed_count = 1}, &changed));
    CHECK_OK(
        tes_query_create(world, &(tes_query_desc_t){.removed = &p, .removed_count = 1}, &removed));
    tes_entity_t a, b, c, d;
    CHECK_OK(tes_spawn(world, &p, 1, &a)); /* rows: a 0, b 1, c 2 */
    CHECK_OK(tes_spawn(world, &p, 1, &b));
    CHECK_OK(tes_spawn(world, &p, 1, &c));
    CHECK_OK(tes_set_number(world, a, p, 0, 0, 1));
    tes_collect_t seen;
    CHECK_OK(tes_query_collect(world, added, &seen));
    CHECK_OK(tes_query_collect(world, changed, &seen));
    CHECK_OK(tes_query_collect(world, removed, &seen));
    uint32_t n;
    CHECK_OK(tes_checkpoint(world, &n));
    CHECK_OK(tes_set_number(world, a, p, 0, 0, 5));
    CHECK_OK(tes_despawn(world, b));   /* c moves to row 1 */
    CHECK_OK(tes_remove(world, c, p)); /* c leaves from the end: a stays at row 0 */
    CHECK_OK(tes_spawn(world, &p, 1, &d));
    CHECK_OK(tes_query_collect(world, added, &seen)); /* d */
    CHECK_EQ(seen.count, 1);
    CHECK_OK(tes_query_collect(world, changed, &seen)); /* a */
    CHECK_EQ(seen.count, 1);
    CHECK_OK(tes_query_collect(world, removed, &seen)); /* b, c */
    CHECK_EQ(seen.removed_total, 2);

    CHECK_OK(tes_rewind(world, n));
    CHECK_NUM_EQ(fx_get_number(world, a, p, 0, 0), 1);
    CHECK(tes_is_alive(world, b) && fx_has(world, c, p) && !tes_is_alive(world, d));
    CHECK_OK(tes_query_collect(world, added, &seen));
    CHECK_EQ(seen.count, 2); /* b and c, put back */
    CHECK(seen.entities[0] != a && seen.entities[1] != a);
    CHECK_OK(tes_query_collect(world, changed, &seen));
    CHECK_EQ(seen.count, 1); /* a, written back in place */
    CHECK_EQ(seen.entities[0], a);
    CHECK_OK(tes_query_collect(world, removed, &seen));
    CHECK_EQ(seen.removed_total, 1); /* d, taken away */
    CHECK_EQ(seen.removed[0], d);
    /* Once: nothing more at the next runs. */
    CHECK_OK(tes_query_collect(world, added, &seen));
    CHECK_EQ(seen.count, 0);
    CHECK_OK(tes_query_collect(world, changed, &seen));
    CHECK_EQ(seen.count, 0);
    CHECK_OK(tes_query_collect(world, removed, &seen));
    CHECK_EQ(seen.removed_total, 0);
    /* A rewind to where the world is already changes nothing anyone sees. */
    CHECK_OK(tes_rewind(world, n));
    CHECK_OK(tes_query_collect(world, added, &seen));
    CHECK_EQ(seen.count, 0);
    CHECK_OK(tes_query_collect(world, changed, &seen));
    CHECK_EQ(seen.count, 0);
}

TEST(bad_calls_are_refused_and_change_nothing) {
    tes_world_t *world = fx_world(&(tes_world_desc_t){.checkpoints = 3});
    uint32_t n = 7, oldest = 7, newest = 7;
    CHECK_ERR(tes_checkpoint(NULL, &n), TES_ERR_INVALID_ARGUMENT);
    CHECK_ERR(tes_checkpoint(world, NULL), TES_ERR_INVALID_ARGUMENT);
    CHECK_ERR(tes_rewind(NULL, 1), TES_ERR_INVALID_ARGUMENT);
    CHECK_ERR(tes_rewind(world, 1), TES_ERR_NO_CHECKPOINT); /* none taken */
    CHECK_OK(tes_checkpoints(world, &oldest, &newest));
    CHECK_EQ(oldest, 0);
    CHECK_EQ(newest, 0);
    tes_world_t *bad = NULL;
    CHECK_ERR(tes_world_create(&(tes_world_desc_t){.checkpoints = TES_MAX_CHECKPOINTS + 1}, &bad),
              TES_ERR_INVALID_ARGUMENT);
    tes_component_t p = fx_tag(world, "T");
    for (uint32_t i = 1; i <= 5; i++) {
        CHECK_OK(tes_checkpoint(world, &n));
        CHECK_EQ(n, i);
    }
    CHECK_OK(tes_checkpoints(world, &oldest, &newest));
    CHECK_EQ(oldest, 3); /* a ring of three */
    CHECK_EQ(newest, 5);
    CHECK_ERR(tes_rewind(world, 2), TES_ERR_NO_CHECKPOINT);
    CHECK_ERR(tes_rewind(world, 6), TES_ERR_NO_CHECKPOINT);
    /* Not inside a run. */
    tes_entity_t e;
    CHECK_OK(tes_spawn(world, &p, 1, &e));
    tes_query_t *q;
    CHECK_OK(tes_query_create(world, &(tes_query_desc_t){.all = &p, .all_count = 1}, &q));
    tes_iter_t it;
    CHECK_OK(tes_query_iter(world, q, &it));
    CHECK_ERR(tes_checkpoint(world, &n), TES_ERR_INVALID_ARGUMENT);
    CHECK_ERR(tes_rewind(world, 4), TES_ERR_INVALID_ARGUMENT);
    CHECK_ERR(tes_rollback_stop(world), TES_ERR_INVALID_ARGUMENT);
    tes_iter_fini(&it);
    CHECK(tes_is_alive(world, e)); /* the refused rewind did not run */
    /* A component registered after a checkpoint joins (and stays registered across a rewind);
     * its members come and go with the rewinds. */
    static const tes_field_desc_t v[] = {{"v", TES_I32, 0}};
    tes_component_t late = fx_component(world, "Late", v, 1);
    tes_component_t late_sparse = fx_sparse(world, "LateSparse", v, 1);
    CHECK_OK(tes_checkpoints(world, &oldest, &newest));
    CHECK_EQ(newest, 5);
    CHECK_OK(tes_add(world, e, late));
    CHECK_OK(tes_add(world, e, late_sparse));
    CHECK_OK(tes_set_number(world, e, late, 0, 0, 7));
    CHECK_OK(tes_checkpoint(world, &n));
    CHECK_EQ(n, 6);
    CHECK_OK(tes_set_number(world, e, late, 0, 0, 8));
    CHECK_OK(tes_remove(world, e, late_sparse));
    CHECK_OK(tes_rewind(world, 6));
    CHECK_NUM_EQ(fx_get_number(world, e, late, 0, 0), 7);
    CHECK(fx_has(world, e, late_sparse));
    CHECK_OK(tes_rewind(world, 5));
    CHECK(!tes_is_alive(world, e)); /* spawned after checkpoint 5 */
    CHECK_OK(tes_world_validate(world));
    /* tes_rollback_stop drops them. */
    CHECK_OK(tes_rollback_stop(world));
    CHECK_OK(tes_checkpoints(world, &oldest, &newest));
    CHECK_EQ(newest, 0);
    tes_world_stats_t stats = fx_stats(world);
    CHECK_EQ(stats.checkpoint_count, 0);
    CHECK_EQ(stats.shadow_bytes, 0);
}

/* Without relations a rewind keeps the shadow of what changed only since the newest checkpoint
 * as it is (it is that state already): the same exactness, on its own path. */
/* Without relations, and for odd seeds without sparse components either: a world with neither
 * spawns, despawns and moves rows on its lean paths, which must keep the checkpoints too. */
TEST(a_world_without_relations_rewinds_exactly_too) {
    for (uint64_t seed = 1; seed <= 10; seed++) {
        tes_world_t *world =
            fx_world(&(tes_world_desc_t){.chunk_bytes = 1024, .min_free_indices = 8});
        tes_component_t body = fx_component(world, "Body", fx_body_fields, 4);
        tes_component_t vel = fx_component(world, "Vel", fx_body_fields, 1);
        tes_component_t tag = fx_tag(world, "Tag");
        /* Without one, a fourth tag in its place. */
        tes_component_t fourth =
            seed % 2 ? fx_tag(world, "Tag2") : fx_sparse(world, "Sparse", fx_weight_fields, 2);
        const tes_component_t kinds[] = {body, vel, tag, fourth};
        fx_rng_t rng = {seed};
        tes_entity_t live[300];
        uint32_t n = 0;
        kept_t kept[16];
        for (uint32_t frame = 0; frame < 200; frame++) {
            uint32_t number;
            CHECK_OK(tes_checkpoint(world, &number));
            kept[number % 16] = keep(world, number);
            if (number > 3 && fx_rng_chance(&rng, 25)) {
                uint32_t oldest, newest;
                CHECK_OK(tes_checkpoints(world, &oldest, &newest));
                uint32_t to = newest - fx_rng_below(&rng, 4);
                if (to < oldest) to = oldest;
                CHECK_OK(tes_rewind(world, to));
                check_snapshot_is(world, &kept[to % 16]);
                CHECK_OK(tes_world_validate(world));
                uint32_t k = 0;
                for (uint32_t i = 0; i < n; i++) {
                    if (tes_is_alive(world, live[i])) live[k++] = live[i];
                }
                n = k;
            }
            for (uint32_t c = 0; c < 1 + fx_rng_below(&rng, 6); c++) {
                uint32_t op = fx_rng_below(&rng, 6);
                tes_entity_t e = n ? live[fx_rng_below(&rng, n)] : 0;
                if ((op == 0 || n < 5) && n < 300) {
                    tes_component_t set[4];
                    uint32_t count = 0;
                    for (uint32_t k = 0; k < 4; k++) {
                        if (fx_rng_chance(&rng, 50)) set[count++] = kinds[k];
                    }
                    CHECK_OK(tes_spawn(world, set, count, &live[n++]));
                } else if (op == 1 && n) {
                    CHECK_OK(tes_despawn(world, e));
                } else if (op == 2 && n) {
                    CHECK_OK(tes_add(world, e, kinds[fx_rng_below(&rng, 4)]));
                } else if (op == 3 && n) {
                    CHECK_OK(tes_remove(world, e, kinds[fx_rng_below(&rng, 4)]));
                } else if (n && fx_has(world, e, body)) {
                    CHECK_OK(tes_set_number(world, e, body, 3, 0, fx_rng_below(&rng, 100)));
                } else if (n && seed % 2 == 0 && fx_has(world, e, fourth)) {
                    CHECK_OK(tes_set_number(world, e, fourth, 0, 0, fx_rng_below(&rng, 100)));
                }
                uint32_t k = 0;
                for (uint32_t i = 0; i < n; i++) {
                    if (tes_is_alive(world, live[i])) live[k++] = live[i];
                }
                n = k;
            }
        }
    }
}

/* An archetype made and emptied between two checkpoints (a bullet fired and gone in one frame)
 * is empty at both: a rewind to the second after spawning into it leaves it empty. (Its count
 * at the checkpoint was read from memory the shadow never wrote; found by the rollback example.) */
TEST(an_archetype_made_and_emptied_between_checkpoints_is_empty_after_a_rewind) {
    fx_alloc_t *alloc = fx_alloc_new(); /* new blocks hold garbage */
    tes_world_t *world = fx_world(&(tes_world_desc_t){.allocator = fx_allocator(alloc)});
    static const tes_field_desc_t f[] = {{"v", TES_I32, 0}};
    tes_component_t p = fx_component(world, "P", f, 1), r = fx_component(world, "R", f, 1);
    tes_component_t b = fx_component(world, "B", f, 1);
    tes_component_t pr[] = {p, r}, pb[] = {p, b};
    tes_entity_t e;
    CHECK_OK(tes_spawn(world, pr, 2, &e));
    uint32_t n;
    CHECK_OK(tes_checkpoint(world, &n));
    CHECK_OK(tes_spawn(world, pb, 2, &e));
    CHECK_OK(tes_despawn(world, e));
    CHECK_OK(tes_checkpoint(world, &n));
    kept_t k = keep(world, n);
    CHECK_OK(tes_spawn(world, pb, 2, &e));
    CHECK_OK(tes_rewind(world, n));
    check_snapshot_is(world, &k);
    CHECK_OK(tes_world_validate(world));
    CHECK(!tes_is_alive(world, e));
}

/* The earliest image of a value wins, whichever kind. `a`'s value changes alone, then `a`
 * moves: its value comes back from the value image, not from the whole image written when it
 * moved. `b` moves, then its value changes alone: the later value image does not go over the
 * earlier whole image. `c`'s value changes in every interval: the earliest of its value images
 * wins. `d`'s value changes and changes back: consumers see no change of it. Chunk and sparse
 * values alike. */
TEST(the_earliest_image_of_a_value_comes_back_whichever_kind_it_is) {
    tes_world_t *world = fx_world(NULL);
    static const tes_field_desc_t f[] = {{"v", TES_I32, 0}};
    tes_component_t p = fx_component(world, "P", f, 1), s = fx_sparse(world, "S", f, 1);
    tes_component_t t = fx_tag(world, "T");
    tes_query_t *changed[2];
    for (int i = 0; i < 2; i++) {
        tes_component_t which = i ? s : p;
        CHECK_OK(tes_query_create(world, &(tes_query_desc_t){.changed = &which, .changed_count = 1},
                                  &changed[i]));
    }
    tes_entity_t e[4]; /* a, b, c, d: in rows 2, 3, 0, 1, so that a and b leave from the end */
    for (int i = 0; i < 4; i++)
        CHECK_OK(tes_spawn(world, &p, 1, &e[(i + 2) % 4]));
    for (int i = 0; i < 4; i++) {
        CHECK_OK(tes_add(world, e[i], s));
        CHECK_OK(tes_set_number(world, e[i], p, 0, 0, 1));
        CHECK_OK(tes_set_number(world, e[i], s, 0, 0, 1));
    }
    tes_collect_t seen;
    for (int i = 0; i < 2; i++)
        CHECK_OK(tes_query_collect(world, changed[i], &seen));
    uint32_t k, n;
    CHECK_OK(tes_checkpoint(world, &k));
    kept_t at_k = keep(world, k);
    const double first[4] = {5, 5, 2, 6}, second[4] = {7, 9, 3, 6}, since[4] = {8, 9, 4, 1};
    for (int i = 0; i < 4; i++) {
        CHECK_OK(tes_set_number(world, e[i], p, 0, 0, first[i]));
        CHECK_OK(tes_set_number(world, e[i], s, 0, 0, first[i]));
    }
    CHECK_OK(tes_add(world, e[1], t)); /* b moves in the first interval */
    CHECK_OK(tes_checkpoint(world, &n));
    for (int i = 0; i < 4; i++) {
        CHECK_OK(tes_set_number(world, e[i], p, 0, 0, second[i]));
        CHECK_OK(tes_set_number(world, e[i], s, 0, 0, second[i]));
    }
    CHECK_OK(tes_add(world, e[0], t)); /* a moves in the second */
    CHECK_OK(tes_checkpoint(world, &n));
    for (int i = 0; i < 4; i++) { /* since the newest checkpoint */
        CHECK_OK(tes_set_number(world, e[i], p, 0, 0, since[i]));
        CHECK_OK(tes_set_number(world, e[i], s, 0, 0, since[i]));
    }
    CHECK_OK(tes_remove(world, e[1], t));
    for (int i = 0; i < 2; i++)
        CHECK_OK(tes_query_collect(world, changed[i], &seen));
    CHECK_OK(tes_rewind(world, k));
    CHECK_OK(tes_world_validate(world));
    check_snapshot_is(world, &at_k);
    for (int i = 0; i < 4; i++) {
        CHECK_NUM_EQ(fx_get_number(world, e[i], p, 0, 0), 1);
        CHECK_NUM_EQ(fx_get_number(world, e[i], s, 0, 0), 1);
        CHECK(!fx_has(world, e[i], t));
    }
    /* c's values written back in place are a change; d's, the same as before, are none. */
    for (int i = 0; i < 2; i++) {
        CHECK_OK(tes_query_collect(world, changed[i], &seen));
        bool saw_c = false, saw_d = false;
        for (uint32_t j = 0; j < seen.count; j++) {
            saw_c |= seen.entities[j] == e[2];
            saw_d |= seen.entities[j] == e[3];
        }
        CHECK(saw_c);
        CHECK(!saw_d);
    }
}

/* A value that changed alone reaches the shadow at the next checkpoint, from its column, so that
 * the value image of its next change holds it: a rewind to that checkpoint writes it back. Every
 * field of three components, one of 4-byte fields only (copied a word at a time), one of fields
 * narrower than that and one of mixed widths, over several chunks whose neighbouring rows hold
 * other values. */
TEST(a_value_changed_alone_comes_back_as_the_checkpoint_after_it_saw_it) {
    tes_world_t *world = fx_world(&(tes_world_desc_t){.chunk_bytes = 1024, .checkpoints = 4});
    static const tes_field_desc_t xy[] = {{"x", TES_F32, 0}, {"y", TES_I32, 0}};
    static const tes_field_desc_t small[] = {{"a", TES_U8, 0}, {"b", TES_I16, 0}};
    tes_component_t all[] = {fx_component(world, "Pos", xy, 2),
                             fx_component(world, "Small", small, 2),
                             fx_component(world, "Body", fx_body_fields, 4)};
    /* (component, field, element) of every number the three hold */
    static const uint32_t cells[][3] = {{0, 0, 0}, {0, 1, 0}, {1, 0, 0}, {1, 1, 0}, {2, 0, 0},
                                        {2, 1, 0}, {2, 2, 0}, {2, 2, 1}, {2, 2, 2}, {2, 3, 0}};
    enum { N = 60, CELLS = sizeof cells / sizeof cells[0] };
    tes_entity_t e[N];
    CHECK_OK(tes_spawn_batch(world, all, 3, N, e));
    tes_location_t first, last;
    CHECK_OK(tes_location(world, e[0], &first));
    CHECK_OK(tes_location(world, e[N - 1], &last));
    CHECK(first.chunk != last.chunk);
    uint32_t number[3];
    kept_t kept[3];
    for (uint32_t step = 0; step < 4; step++) {
        /* Each step's values differ from the last step's, and from the neighbouring rows'. */
        for (uint32_t i = 0; i < N; i++) {
            for (uint32_t k = 0; k < CELLS; k++) {
                double value = (step * 61 + i * 7 + k) % 200 + 1;
                CHECK_OK(
                    tes_set_number(world, e[i], all[cells[k][0]], cells[k][1], cells[k][2], value));
            }
        }
        if (step == 3) break; /* changed since the newest checkpoint */
        CHECK_OK(tes_checkpoint(world, &number[step]));
        kept[step] = keep(world, number[step]);
    }
    for (int back = 1; back >= 0; back--) {
        CHECK_OK(tes_rewind(world, number[back]));
        CHECK_OK(tes_world_validate(world));
        check_snapshot_is(world, &kept[back]);
        for (uint32_t i = 0; i < N; i++) {
            for (uint32_t k = 0; k < CELLS; k++) {
                double value = (back * 61 + i * 7 + k) % 200 + 1;
                CHECK_NUM_EQ(fx_get_number(world, e[i], all[cells[k][0]], cells[k][1], cells[k][2]),
                             value);
            }
        }
    }
}

/* An index reused since the checkpoint: its new entity's pair to the target the old one had is
 * not the old pair (a pair is its source's handle and its target's, and the handles differ in
 * generation), so the rewind takes it away and puts the old one back. Each relation kind, with
 * data, and with the reused entity on either side. */
TEST(a_pair_of_an_entity_on_a_reused_index_is_not_its_predecessors_after_a_rewind) {
    static const tes_field_desc_t w8[] = {{"w", TES_F32, 0}};
    const uint32_t kinds[] = {0, TES_RELATION_EXCLUSIVE,
                              TES_RELATION_EXCLUSIVE | TES_RELATION_ACYCLIC, TES_RELATION_CASCADE};
    for (uint32_t kind = 0; kind < 4; kind++) {
        for (int reused_is_source = 0; reused_is_source < 2; reused_is_source++) {
            /* A cascading pair's source dies with its target: no pair to the reused one. */
            if (kinds[kind] & TES_RELATION_CASCADE && !reused_is_source) continue;
            tes_world_t *world = fx_world(&(tes_world_desc_t){.min_free_indices = 1});
            tes_component_t r = fx_relation(world, "R", w8, 1, kinds[kind]);
            tes_entity_t p, c, d, y;
            CHECK_OK(tes_spawn(world, NULL, 0, &p));
            CHECK_OK(tes_spawn(world, NULL, 0, &c));
            CHECK_OK(reused_is_source ? tes_pair_add(world, c, r, p)
                                      : tes_pair_add(world, p, r, c));
            CHECK_OK(tes_spawn(world, NULL, 0, &d));
            CHECK_OK(tes_despawn(world, d));
            uint32_t n;
            CHECK_OK(tes_checkpoint(world, &n));
            kept_t k = keep(world, n);
            CHECK_OK(tes_despawn(world, c));
            for (int i = 0; i < 4; i++) { /* d's index first, then c's, the next generation */
                CHECK_OK(tes_spawn(world, NULL, 0, &y));
                if (tes_entity_index(y) == tes_entity_index(c)) break;
                CHECK_OK(tes_despawn(world, y));
            }
            CHECK_EQ(tes_entity_index(y), tes_entity_index(c));
            CHECK(y != c);
            CHECK_OK(reused_is_source ? tes_pair_add(world, y, r, p)
                                      : tes_pair_add(world, p, r, y));
            CHECK_OK(tes_rewind(world, n));
            CHECK_OK(tes_world_validate(world));
            check_snapshot_is(world, &k);
            bool has;
            CHECK_OK(reused_is_source ? tes_pair_has(world, c, r, p, &has)
                                      : tes_pair_has(world, p, r, c, &has));
            CHECK(has);
            CHECK(!tes_is_alive(world, y));
        }
    }
}

/* Components registered since the checkpoint (bindings register on first use, so a frame that a
 * peer predicted wrong may be the first to use one) are taken back by a rewind when nothing uses
 * them any more: the snapshot and the hash are the checkpoint's, and the ids come again in the
 * order the straight run registers them. One a query made since names stays, and so do the
 * ones registered before it (ids are taken back newest first). */
TEST(a_rewind_takes_back_the_registrations_made_since_when_nothing_uses_them) {
    static const tes_field_desc_t v[] = {{"v", TES_I32, 0}};
    tes_world_t *world = fx_world(NULL);
    tes_component_t p = fx_component(world, "P", v, 1);
    tes_entity_t e, f;
    CHECK_OK(tes_spawn(world, &p, 1, &e));
    uint32_t n, m;
    CHECK_OK(tes_checkpoint(world, &n));
    kept_t k = keep(world, n);
    uint64_t hash;
    CHECK_OK(tes_world_hash(world, &hash));
    /* Used every way: in an archetype, as a sparse member, as a relation with a pair. */
    tes_component_t bullet = fx_component(world, "Bullet", v, 1);
    tes_component_t mark = fx_sparse(world, "Mark", v, 1);
    tes_component_t aims = fx_relation(world, "Aims", NULL, 0, 0);
    tes_component_t set[] = {p, bullet};
    CHECK_OK(tes_spawn(world, set, 2, &f));
    CHECK_OK(tes_add(world, e, mark));
    CHECK_OK(tes_pair_add(world, f, aims, e));
    CHECK_OK(tes_checkpoint(world, &m)); /* they join the checkpoints: watched from here */
    CHECK_OK(tes_set_number(world, f, bullet, 0, 0, 3));
    CHECK_OK(tes_rewind(world, n));
    CHECK_OK(tes_world_validate(world));
    check_snapshot_is(world, &k);
    uint64_t again;
    CHECK_OK(tes_world_hash(world, &again));
    CHECK(again == hash);
    tes_component_t found;
    CHECK_EQ(tes_component_lookup(world, "Bullet", &found), TES_ERR_UNKNOWN_COMPONENT);
    CHECK_EQ(tes_component_lookup(world, "Aims", &found), TES_ERR_UNKNOWN_COMPONENT);
    /* The same registrations again: the same ids, and the history goes on as before. */
    CHECK_EQ(fx_component(world, "Bullet", v, 1), bullet);
    CHECK_EQ(fx_sparse(world, "Mark", v, 1), mark);
    CHECK_OK(tes_spawn(world, set, 2, &f));
    CHECK_OK(tes_set_number(world, f, bullet, 0, 0, 7));
    CHECK_OK(tes_checkpoint(world, &m));
    CHECK_OK(tes_set_number(world, f, bullet, 0, 0, 8));
    CHECK_OK(tes_rewind(world, m));
    CHECK_NUM_EQ(fx_get_number(world, f, bullet, 0, 0), 7);
    /* A query made since names Mark: Mark stays, and Bullet, registered before it, too. */
    tes_query_t *q;
    CHECK_OK(tes_query_create(world, &(tes_query_desc_t){.all = &mark, .all_count = 1}, &q));
    CHECK_OK(tes_rewind(world, n));
    CHECK_OK(tes_world_validate(world));
    CHECK_OK(tes_component_lookup(world, "Mark", &found));
    CHECK_EQ(found, mark);
    CHECK_OK(tes_component_lookup(world, "Bullet", &found));
    CHECK(!tes_is_alive(world, f));
    tes_query_destroy(world, q);
    CHECK_OK(tes_set_number(world, e, p, 0, 0, 5)); /* and the checkpoints go on */
    CHECK_OK(tes_checkpoint(world, &m));
    CHECK_EQ(m, n + 1);
    CHECK_OK(tes_rewind(world, n));
    check_snapshot_is(world, &k); /* nothing uses them now: taken back at last */
}

/* Unregistering (the bindings take a registration back when the call that made it fails): a
 * component registered since the newest checkpoint leaves the checkpoints as they are; an older
 * one, which they may hold, drops them. */
TEST(unregistering_a_component_keeps_or_drops_the_checkpoints_as_they_may_hold_it) {
    tes_world_t *world = fx_world(NULL);
    static const tes_field_desc_t v[] = {{"v", TES_I32, 0}};
    tes_component_t p = fx_component(world, "P", v, 1);
    tes_component_t old_tag = fx_tag(world, "Old");
    tes_entity_t e;
    CHECK_OK(tes_spawn(world, &p, 1, &e));
    uint32_t n, oldest, newest;
    CHECK_OK(tes_checkpoint(world, &n));
    kept_t k = keep(world, n);
    tes_component_t fresh = fx_component(world, "Fresh", v, 1);
    CHECK_OK(tes_component_unregister(world, fresh));
    CHECK_OK(tes_checkpoints(world, &oldest, &newest));
    CHECK_EQ(newest, n);
    CHECK_OK(tes_set_number(world, e, p, 0, 0, 9));
    CHECK_OK(tes_rewind(world, n));
    check_snapshot_is(world, &k);
    fresh = fx_component(world, "Fresh", v, 1); /* the id again, with nothing of the old one */
    CHECK_OK(tes_add(world, e, fresh));
    CHECK_OK(tes_set_number(world, e, fresh, 0, 0, 4));
    CHECK_OK(tes_checkpoint(world, &n));
    CHECK_OK(tes_set_number(world, e, fresh, 0, 0, 5));
    CHECK_OK(tes_rewind(world, n));
    CHECK_NUM_EQ(fx_get_number(world, e, fresh, 0, 0), 4);
    CHECK_OK(tes_rewind(world, n - 1)); /* before Fresh was registered: taken back */
    bool has;
    CHECK_EQ(tes_has(world, e, fresh, &has), TES_ERR_UNKNOWN_COMPONENT);
    CHECK_NUM_EQ(fx_get_number(world, e, p, 0, 0), 0);
    check_snapshot_is(world, &k);
    CHECK_EQ(fx_component(world, "Fresh", v, 1), fresh);
    /* A tag registered before the newest checkpoint, taken back: the checkpoints go. */
    tes_component_t late = fx_tag(world, "Late");
    CHECK_OK(tes_checkpoint(world, &n));
    CHECK_OK(tes_component_unregister(world, late));
    CHECK_OK(tes_checkpoints(world, &oldest, &newest));
    CHECK_EQ(newest, 0);
    CHECK_OK(tes_world_validate(world));
    (void)old_tag;
}
