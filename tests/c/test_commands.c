/* Deferred commands: structural calls made while an iteration is live are recorded and applied,
 * in order, when the last live iteration ends; spawned handles are pending until then; commands
 * on entities gone by then are skipped and counted. */
#include "fixtures.h"

static const tes_field_desc_t value_fields[] = {{"v", TES_F64, 0}, {"n", TES_I32, 0}};

typedef struct scene_t {
    tes_world_t *world;
    tes_component_t a, b, tag;
} scene_t;

static scene_t make_scene(const tes_world_desc_t *desc) {
    scene_t s;
    s.world = fx_world(desc);
    s.a = fx_component(s.world, "A", value_fields, 2);
    s.b = fx_component(s.world, "B", value_fields, 2);
    s.tag = fx_tag(s.world, "Tag");
    return s;
}

static tes_query_t *all_of(scene_t *s, tes_component_t c) {
    return fx_query(s->world, &(tes_query_desc_t){.all = &c, .all_count = 1});
}

/* A run over the entities with c, inside its first chunk: structural calls are deferred from
 * here until the run ends. Returns the run's query. */
static tes_query_t *enter_run(scene_t *s, tes_component_t c, tes_iter_t *it) {
    tes_query_t *q = all_of(s, c);
    CHECK_OK(tes_query_iter(s->world, q, it));
    CHECK(tes_iter_next(it));
    return q;
}

static uint32_t live_count(scene_t *s) {
    return fx_stats(s->world).entity_count;
}

static uint32_t skipped(scene_t *s) {
    return fx_stats(s->world).commands_skipped;
}

/* ---------------------------------------------------------------------------------------- */
/* The two loops games write                                                                 */
/* ---------------------------------------------------------------------------------------- */

TEST(spawn_for_each_entity_during_iteration) {
    scene_t s = make_scene(NULL);
    tes_entity_t parent[5], child[5];
    for (int i = 0; i < 5; i++) {
        parent[i] = fx_spawn(s.world, FX_IDS(s.a));
        CHECK_OK(tes_set_number(s.world, parent[i], s.a, 0, 0, 100 + i));
    }
    /* The children have A too: the run must not visit them. */
    tes_query_t *q = all_of(&s, s.a);
    tes_iter_t it;
    uint32_t visited = 0;
    CHECK_OK(tes_query_iter(s.world, q, &it));
    while (tes_iter_next(&it)) {
        FX_CHECK_ITER_CHUNK(s.world, &it);
        double *v = NULL;
        CHECK_OK(tes_iter_column(&it, s.a, 0, (void **)&v));
        for (uint32_t i = 0; i < it.row_count; i++) {
            uint32_t row = fx_iter_row(&it, i);
            int k = (int)v[row] - 100;
            CHECK(k >= 0 && k < 5);
            CHECK_EQ(it.entities[row], parent[k]);
            CHECK_OK(tes_spawn(s.world, FX_IDS(s.a, s.b), &child[k]));
            CHECK(child[k] != 0);
            CHECK_OK(tes_set_number(s.world, child[k], s.b, 0, 0, v[row]));
            CHECK_OK(tes_set_number(s.world, child[k], s.a, 1, 0, -k));
            visited++;
        }
    }
    CHECK_EQ(visited, 5);
    CHECK_EQ(live_count(&s), 10);
    for (int k = 0; k < 5; k++) {
        CHECK(tes_is_alive(s.world, child[k]));
        CHECK(fx_has(s.world, child[k], s.a) && fx_has(s.world, child[k], s.b));
        CHECK_NUM_EQ(fx_get_number(s.world, child[k], s.b, 0, 0), 100 + k);
        CHECK_NUM_EQ(fx_get_number(s.world, child[k], s.a, 1, 0), -k);
        CHECK_NUM_EQ(fx_get_number(s.world, child[k], s.a, 0, 0), 0); /* starts zeroed */
        fx_check_location(s.world, child[k]);
    }
    CHECK_EQ(fx_run(s.world, q)->count, 10);
    CHECK_EQ(skipped(&s), 0);
    CHECK_OK(tes_world_validate(s.world));
}

TEST(despawn_every_entity_while_iterating_them) {
    scene_t s = make_scene(&(tes_world_desc_t){.chunk_bytes = 1024});
    tes_entity_t e[300];
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.b), 300, e));
    tes_entity_t other = fx_spawn(s.world, FX_IDS(s.a));
    tes_query_t *q = all_of(&s, s.b);
    fx_entities_t *visited = fx_entities_new();
    tes_iter_t it;
    CHECK_OK(tes_query_iter(s.world, q, &it));
    while (tes_iter_next(&it)) {
        FX_CHECK_ITER_CHUNK(s.world, &it);
        for (uint32_t i = 0; i < it.row_count; i++) {
            tes_entity_t x = it.entities[fx_iter_row(&it, i)];
            fx_entities_push(visited, x);
            CHECK_OK(tes_despawn(s.world, x));
            CHECK(tes_is_alive(s.world, x)); /* until the run ends */
        }
    }
    FX_CHECK_SAME_ENTITIES(visited, e, 300); /* every one, once: nothing moved under the run */
    CHECK_EQ(live_count(&s), 1);
    for (int i = 0; i < 300; i++)
        CHECK(!tes_is_alive(s.world, e[i]));
    CHECK(tes_is_alive(s.world, other));
    CHECK_EQ(fx_run(s.world, q)->count, 0);
    CHECK_EQ(skipped(&s), 0);
    CHECK_OK(tes_world_validate(s.world));
}

TEST(add_and_remove_during_iteration_apply_at_the_end) {
    scene_t s = make_scene(&(tes_world_desc_t){.chunk_bytes = 1024});
    tes_entity_t e[200];
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.a, s.b), 200, e));
    tes_query_t *q = all_of(&s, s.a);
    fx_entities_t *visited = fx_entities_new();
    tes_iter_t it;
    CHECK_OK(tes_query_iter(s.world, q, &it));
    while (tes_iter_next(&it)) {
        FX_CHECK_ITER_CHUNK(s.world, &it);
        for (uint32_t i = 0; i < it.row_count; i++) {
            tes_entity_t x = it.entities[fx_iter_row(&it, i)];
            fx_entities_push(visited, x);
            CHECK_OK(tes_add(s.world, x, s.tag));
            CHECK_OK(tes_remove(s.world, x, s.b));
            CHECK(!fx_has(s.world, x, s.tag)); /* not yet */
            CHECK(fx_has(s.world, x, s.b));
        }
    }
    FX_CHECK_SAME_ENTITIES(visited, e, 200);
    for (int i = 0; i < 200; i++) {
        CHECK(fx_has(s.world, e[i], s.tag));
        CHECK(!fx_has(s.world, e[i], s.b));
        CHECK(fx_has(s.world, e[i], s.a));
    }
    fx_check_all_packed(s.world);
}

/* ---------------------------------------------------------------------------------------- */
/* Pending handles                                                                           */
/* ---------------------------------------------------------------------------------------- */

TEST(spawned_handle_is_pending_until_the_run_ends) {
    scene_t s = make_scene(NULL);
    fx_spawn(s.world, FX_IDS(s.b));
    tes_entity_t p = 0;
    tes_iter_t it;
    enter_run(&s, s.b, &it);
    CHECK_OK(tes_spawn(s.world, FX_IDS(s.a), &p));
    CHECK(p != 0);
    CHECK(!tes_is_alive(s.world, p));
    double d = 0;
    bool has = false;
    tes_location_t loc;
    int32_t n = 0;
    CHECK_ERR(tes_get_number(s.world, p, s.a, 0, 0, &d), TES_ERR_PENDING_ENTITY);
    CHECK_ERR(tes_get(s.world, p, s.a, 1, &n, sizeof n), TES_ERR_PENDING_ENTITY);
    CHECK_ERR(tes_has(s.world, p, s.a, &has), TES_ERR_PENDING_ENTITY);
    CHECK_ERR(tes_location(s.world, p, &loc), TES_ERR_PENDING_ENTITY);
    CHECK_OK(tes_set_number(s.world, p, s.a, 0, 0, 4.25)); /* recorded */
    n = -9;
    CHECK_OK(tes_set(s.world, p, s.a, 1, &n, sizeof n)); /* recorded */
    CHECK_ERR(tes_get_number(s.world, p, s.a, 0, 0, &d), TES_ERR_PENDING_ENTITY);
    CHECK_EQ(live_count(&s), 1);
    CHECK(!tes_iter_next(&it));
    CHECK(tes_is_alive(s.world, p));
    CHECK_NUM_EQ(fx_get_number(s.world, p, s.a, 0, 0), 4.25);
    CHECK_NUM_EQ(fx_get_number(s.world, p, s.a, 1, 0), -9);
    fx_check_location(s.world, p);
    CHECK_EQ(live_count(&s), 2);
}

TEST(structural_calls_on_a_pending_entity_are_recorded_in_order) {
    scene_t s = make_scene(NULL);
    fx_spawn(s.world, FX_IDS(s.b));
    tes_entity_t p = 0, gone = 0;
    tes_iter_t it;
    enter_run(&s, s.b, &it);
    CHECK_OK(tes_spawn(s.world, FX_IDS(s.a), &p));
    CHECK_OK(tes_add(s.world, p, s.tag));
    CHECK_OK(tes_add(s.world, p, s.b));
    CHECK_OK(tes_set_number(s.world, p, s.b, 0, 0, 3));
    CHECK_OK(tes_remove(s.world, p, s.a));
    CHECK_OK(tes_spawn(s.world, FX_IDS(s.a), &gone));
    CHECK_OK(tes_despawn(s.world, gone)); /* never placed for anyone to see */
    tes_iter_fini(&it);
    CHECK(tes_is_alive(s.world, p));
    CHECK(fx_has(s.world, p, s.tag) && fx_has(s.world, p, s.b) && !fx_has(s.world, p, s.a));
    CHECK_NUM_EQ(fx_get_number(s.world, p, s.b, 0, 0), 3);
    CHECK(!tes_is_alive(s.world, gone));
    CHECK_ERR(tes_despawn(s.world, gone), TES_ERR_STALE_ENTITY);
    CHECK_EQ(live_count(&s), 2);
    CHECK_EQ(skipped(&s), 0);
    CHECK_OK(tes_world_validate(s.world));
}

TEST(commands_apply_in_the_order_they_were_made) {
    scene_t s = make_scene(NULL);
    tes_entity_t e = fx_spawn(s.world, FX_IDS(s.a));
    tes_entity_t f = fx_spawn(s.world, FX_IDS(s.a));
    CHECK_OK(tes_set_number(s.world, f, s.a, 0, 0, 5));
    tes_iter_t it;
    enter_run(&s, s.a, &it);
    CHECK_OK(tes_add(s.world, e, s.tag));
    CHECK_OK(tes_remove(s.world, e, s.tag)); /* e has no Tag yet: still recorded, in order */
    CHECK_OK(tes_remove(s.world, f, s.a));
    CHECK_OK(tes_add(s.world, f, s.a)); /* f has A now: still recorded, in order */
    CHECK_OK(tes_add(s.world, e, s.b));
    tes_iter_fini(&it);
    CHECK(!fx_has(s.world, e, s.tag));
    CHECK(fx_has(s.world, e, s.b));
    CHECK(fx_has(s.world, f, s.a));
    CHECK_NUM_EQ(fx_get_number(s.world, f, s.a, 0, 0), 0); /* removed, then added zeroed */
}

TEST(writes_to_live_entities_during_iteration_happen_at_once) {
    scene_t s = make_scene(NULL);
    tes_entity_t e = fx_spawn(s.world, FX_IDS(s.a));
    tes_entity_t other = fx_spawn(s.world, FX_IDS(s.b));
    tes_iter_t it;
    enter_run(&s, s.a, &it);
    CHECK_OK(tes_set_number(s.world, e, s.a, 0, 0, 8));
    CHECK_NUM_EQ(fx_get_number(s.world, e, s.a, 0, 0), 8);
    double v = 6;
    CHECK_OK(tes_set(s.world, other, s.b, 0, &v, sizeof v));
    CHECK_NUM_EQ(fx_get_number(s.world, other, s.b, 0, 0), 6);
    CHECK_OK(tes_despawn(s.world, e));
    /* e is still alive until the end: writing it still works, at once. */
    CHECK_OK(tes_set_number(s.world, e, s.a, 0, 0, 9));
    CHECK_NUM_EQ(fx_get_number(s.world, e, s.a, 0, 0), 9);
    CHECK(!tes_iter_next(&it));
    CHECK(!tes_is_alive(s.world, e));
    CHECK_EQ(skipped(&s), 0);
}

/* A write made after a recorded add of a component the entity holds (with values, or again
 * after a recorded remove) is recorded after that add: the add's values, written when the run
 * ends, must not land over it. Writes to entities whose recorded commands name other components,
 * or whose last one removes the component, happen at once as before. The notes that find those
 * commands are gone when the run ends (tes_world_validate checks both states). */
TEST(a_write_after_a_recorded_add_of_a_held_component_lands_after_it) {
    scene_t s = make_scene(NULL);
    tes_entity_t held = fx_spawn(s.world, FX_IDS(s.a, s.b));
    tes_entity_t again = fx_spawn(s.world, FX_IDS(s.a, s.b));
    tes_entity_t other = fx_spawn(s.world, FX_IDS(s.a, s.b));
    tes_entity_t gone = fx_spawn(s.world, FX_IDS(s.a, s.b));
    tes_iter_t it;
    enter_run(&s, s.a, &it);
    fx_list_t *five = fx_list_value1(fx_list_item(fx_list_new(), s.b, 0), 0, 5);
    CHECK_OK(tes_add_items(s.world, &held, 1, &five->x, NULL));
    double v = 7;
    CHECK_OK(tes_set(s.world, held, s.b, 0, &v, sizeof v));
    CHECK_NUM_EQ(fx_get_number(s.world, held, s.b, 0, 0), 0); /* recorded, not written */
    CHECK_OK(tes_remove(s.world, again, s.b));
    CHECK_OK(tes_add_items(s.world, &again, 1, &five->x, NULL));
    CHECK_OK(tes_set_number(s.world, again, s.b, 0, 0, 8));
    CHECK_OK(tes_add(s.world, other, s.tag)); /* another component: writes stay at once */
    CHECK_OK(tes_set_number(s.world, other, s.b, 0, 0, 9));
    CHECK_NUM_EQ(fx_get_number(s.world, other, s.b, 0, 0), 9);
    CHECK_OK(tes_add(s.world, gone, s.b)); /* held: a no-op add, but an add */
    CHECK_OK(tes_remove(s.world, gone, s.b));
    CHECK_OK(tes_set_number(s.world, gone, s.b, 0, 0, 4)); /* the last one removes: at once */
    CHECK_NUM_EQ(fx_get_number(s.world, gone, s.b, 0, 0), 4);
    CHECK_OK(tes_world_validate(s.world)); /* the notes, while the run is live */
    CHECK(!tes_iter_next(&it));
    CHECK_NUM_EQ(fx_get_number(s.world, held, s.b, 0, 0), 7);
    CHECK_NUM_EQ(fx_get_number(s.world, again, s.b, 0, 0), 8);
    CHECK_NUM_EQ(fx_get_number(s.world, other, s.b, 0, 0), 9);
    CHECK(fx_has(s.world, other, s.tag) && !fx_has(s.world, gone, s.b));
    CHECK_EQ(skipped(&s), 0);
    CHECK_OK(tes_world_validate(s.world)); /* no note left */
}

/* ---------------------------------------------------------------------------------------- */
/* Skipped commands                                                                          */
/* ---------------------------------------------------------------------------------------- */

TEST(commands_on_an_entity_despawned_earlier_are_skipped_and_counted) {
    scene_t s = make_scene(NULL);
    tes_entity_t e = fx_spawn(s.world, FX_IDS(s.a, s.b));
    tes_entity_t f = fx_spawn(s.world, FX_IDS(s.a));
    tes_iter_t it;
    tes_query_t *q = enter_run(&s, s.a, &it);
    CHECK_OK(tes_despawn(s.world, e));
    CHECK_OK(tes_add(s.world, e, s.tag));  /* skipped */
    CHECK_OK(tes_remove(s.world, e, s.b)); /* skipped */
    CHECK_OK(tes_despawn(s.world, e));     /* skipped */
    CHECK_OK(tes_add(s.world, f, s.tag));  /* applied */
    tes_entity_t batch[2] = {f, e};
    CHECK_OK(tes_despawn_batch(s.world, batch, 1)); /* f only: applied */
    while (tes_iter_next(&it)) {
    }
    CHECK_EQ(skipped(&s), 3);
    CHECK(!tes_is_alive(s.world, e));
    CHECK(!tes_is_alive(s.world, f));
    CHECK_EQ(live_count(&s), 0);
    /* Cumulative over flushes. */
    tes_entity_t g = fx_spawn(s.world, FX_IDS(s.a));
    CHECK_OK(tes_query_iter(s.world, q, &it));
    CHECK(tes_iter_next(&it));
    CHECK_OK(tes_despawn(s.world, g));
    CHECK_OK(tes_add(s.world, g, s.b));
    tes_iter_fini(&it);
    CHECK_EQ(skipped(&s), 4);
    CHECK_OK(tes_world_validate(s.world));
}

TEST(stale_handles_fail_at_once_during_iteration) {
    scene_t s = make_scene(NULL);
    tes_entity_t dead = fx_spawn(s.world, FX_IDS(s.a));
    CHECK_OK(tes_despawn(s.world, dead));
    tes_entity_t e = fx_spawn(s.world, FX_IDS(s.a));
    tes_iter_t it;
    enter_run(&s, s.a, &it);
    CHECK_ERR(tes_despawn(s.world, dead), TES_ERR_STALE_ENTITY);
    CHECK_ERR(tes_add(s.world, dead, s.tag), TES_ERR_STALE_ENTITY);
    CHECK_ERR(tes_remove(s.world, dead, s.a), TES_ERR_STALE_ENTITY);
    CHECK_ERR(tes_set_number(s.world, dead, s.a, 0, 0, 1), TES_ERR_STALE_ENTITY);
    tes_entity_t list[2] = {e, dead};
    CHECK_ERR(tes_despawn_batch(s.world, list, 2), TES_ERR_STALE_ENTITY); /* none recorded */
    CHECK(!tes_iter_next(&it));
    CHECK(tes_is_alive(s.world, e));
    CHECK_EQ(skipped(&s), 0);
}

/* ---------------------------------------------------------------------------------------- */
/* When the flush happens                                                                    */
/* ---------------------------------------------------------------------------------------- */

TEST(nested_iterations_flush_only_when_the_outermost_ends) {
    scene_t s = make_scene(NULL);
    tes_entity_t a = fx_spawn(s.world, FX_IDS(s.a));
    tes_entity_t b = fx_spawn(s.world, FX_IDS(s.b));
    tes_query_t *qa = all_of(&s, s.a), *qb = all_of(&s, s.b);
    tes_query_t *filtered = fx_query(s.world, &(tes_query_desc_t){.added = FX_IDS(s.b)});
    tes_entity_t p = 0;
    tes_iter_t outer, inner, innermost;
    CHECK_OK(tes_query_iter(s.world, qa, &outer));
    CHECK(tes_iter_next(&outer));
    CHECK_OK(tes_query_iter(s.world, qb, &inner));
    while (tes_iter_next(&inner)) {
        CHECK_OK(tes_spawn(s.world, FX_IDS(s.a, s.b), &p));
        CHECK_OK(tes_despawn(s.world, b));
        CHECK_OK(tes_query_iter(s.world, filtered, &innermost));
        CHECK(tes_iter_next(&innermost));
        CHECK_OK(tes_add(s.world, a, s.tag));
        tes_iter_fini(&innermost);
    }
    /* The inner runs are over, the outer one is not. */
    CHECK(!tes_is_alive(s.world, p));
    CHECK(tes_is_alive(s.world, b));
    CHECK(!fx_has(s.world, a, s.tag));
    double d;
    CHECK_ERR(tes_get_number(s.world, p, s.a, 0, 0, &d), TES_ERR_PENDING_ENTITY);
    CHECK(!tes_iter_next(&outer));
    CHECK(tes_is_alive(s.world, p));
    CHECK(!tes_is_alive(s.world, b));
    CHECK(fx_has(s.world, a, s.tag));
    CHECK_EQ(live_count(&s), 2);
}

TEST(iter_fini_ends_the_run_and_applies_the_commands) {
    scene_t s = make_scene(&(tes_world_desc_t){.chunk_bytes = 1024});
    tes_entity_t e[300];
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.a), 300, e));
    tes_entity_t p = 0;
    tes_iter_t it;
    enter_run(&s, s.a, &it);
    CHECK_OK(tes_spawn(s.world, FX_IDS(s.b), &p));
    CHECK_OK(tes_despawn(s.world, e[0]));
    tes_iter_fini(&it); /* early: other chunks remain */
    CHECK(tes_is_alive(s.world, p));
    CHECK(!tes_is_alive(s.world, e[0]));
    CHECK_EQ(live_count(&s), 300);
    tes_iter_fini(&it); /* harmless: nothing applied twice */
    CHECK(!tes_iter_next(&it));
    CHECK_EQ(live_count(&s), 300);
    CHECK_EQ(skipped(&s), 0);
    /* Structural calls act at once again. */
    tes_entity_t now = fx_spawn(s.world, FX_IDS(s.b));
    CHECK(tes_is_alive(s.world, now));
}

TEST(batch_forms_are_deferred_too) {
    scene_t s = make_scene(NULL);
    tes_entity_t e[6];
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.a), 6, e));
    tes_archetype_t arch = fx_archetype_of(s.world, e[0]);
    tes_entity_t spawned[4], more[3];
    tes_iter_t it;
    enter_run(&s, s.a, &it);
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.b), 4, spawned));
    CHECK_OK(tes_archetype_spawn(s.world, arch, 3, more));
    CHECK_OK(tes_despawn_batch(s.world, e, 2));
    CHECK_OK(tes_archetype_add(s.world, arch, s.tag));
    for (int i = 0; i < 4; i++)
        CHECK(!tes_is_alive(s.world, spawned[i]));
    for (int i = 0; i < 3; i++)
        CHECK(!tes_is_alive(s.world, more[i]));
    CHECK(tes_is_alive(s.world, e[0]));
    CHECK(!fx_has(s.world, e[3], s.tag));
    CHECK_EQ(fx_archetype(s.world, arch).entity_count, 6);
    CHECK(!tes_iter_next(&it));
    for (int i = 0; i < 4; i++)
        CHECK(tes_is_alive(s.world, spawned[i]));
    CHECK(!tes_is_alive(s.world, e[0]) && !tes_is_alive(s.world, e[1]));
    /* archetype_add came after the archetype spawn: the 3 new ones got the tag too. */
    for (int i = 2; i < 6; i++)
        CHECK(fx_has(s.world, e[i], s.tag));
    for (int i = 0; i < 3; i++) {
        CHECK(tes_is_alive(s.world, more[i]));
        CHECK(fx_has(s.world, more[i], s.tag));
    }
    CHECK_EQ(live_count(&s), 4 + 4 + 3);
    CHECK_EQ(skipped(&s), 0);
    fx_check_all_packed(s.world);
}

/* ---------------------------------------------------------------------------------------- */
/* Commands and change detection                                                             */
/* ---------------------------------------------------------------------------------------- */

TEST(deferred_spawns_are_added_for_the_next_run) {
    scene_t s = make_scene(NULL);
    tes_query_t *q = fx_query(s.world, &(tes_query_desc_t){.added = FX_IDS(s.a)});
    fx_entities_t *previous = fx_entities_new();
    for (int i = 0; i < 3; i++)
        fx_entities_push(previous, fx_spawn(s.world, FX_IDS(s.a)));
    for (int round = 0; round < 4; round++) {
        fx_entities_t *seen = fx_entities_new(), *spawned = fx_entities_new();
        tes_iter_t it;
        CHECK_OK(tes_query_iter(s.world, q, &it));
        uint64_t this_run = it.this_run;
        while (tes_iter_next(&it)) {
            FX_CHECK_ITER_CHUNK(s.world, &it);
            for (uint32_t i = 0; i < it.row_count; i++) {
                fx_entities_push(seen, it.entities[fx_iter_row(&it, i)]);
                tes_entity_t child;
                CHECK_OK(tes_spawn(s.world, FX_IDS(s.a), &child));
                fx_entities_push(spawned, child);
            }
        }
        FX_CHECK_SAME_ENTITIES(seen, previous->items, previous->count);
        for (uint32_t i = 0; i < spawned->count; i++) {
            uint64_t added = 0, changed = 0;
            CHECK_OK(tes_ticks(s.world, spawned->items[i], s.a, &added, &changed));
            CHECK_EQ(added, this_run + 1); /* placed after the run's tick */
            CHECK_EQ(changed, 0);
        }
        previous = spawned;
    }
}

TEST(deferred_despawns_reach_the_removal_log) {
    scene_t s = make_scene(NULL);
    tes_query_t *q =
        fx_query(s.world, &(tes_query_desc_t){.all = FX_IDS(s.a), .removed = FX_IDS(s.a)});
    tes_entity_t e[5];
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.a), 5, e));
    tes_iter_t it;
    CHECK_OK(tes_query_iter(s.world, q, &it));
    while (tes_iter_next(&it)) {
        for (uint32_t i = 0; i < it.row_count; i++)
            CHECK_OK(tes_despawn(s.world, it.entities[fx_iter_row(&it, i)]));
    }
    CHECK_EQ(live_count(&s), 0);
    CHECK_OK(tes_query_iter(s.world, q, &it));
    const tes_entity_t *removed = NULL;
    uint32_t count = 0;
    CHECK_OK(tes_iter_removed(&it, s.a, &removed, &count));
    fx_entities_t *got = fx_entities_new();
    for (uint32_t i = 0; i < count; i++)
        fx_entities_push(got, removed[i]);
    tes_iter_fini(&it);
    FX_CHECK_SAME_ENTITIES(got, e, 5);
}

TEST(deferred_writes_to_pending_entities_count_as_changes) {
    scene_t s = make_scene(NULL);
    tes_query_t *changed = fx_query(s.world, &(tes_query_desc_t){.changed = FX_IDS(s.b)});
    tes_entity_t parent = fx_spawn(s.world, FX_IDS(s.a));
    tes_entity_t written = 0, plain = 0;
    tes_iter_t it;
    enter_run(&s, s.a, &it);
    CHECK_OK(tes_spawn(s.world, FX_IDS(s.b), &written));
    CHECK_OK(tes_set_number(s.world, written, s.b, 0, 0, 1));
    CHECK_OK(tes_spawn(s.world, FX_IDS(s.b), &plain));
    tes_iter_fini(&it);
    FX_CHECK_VISITED(fx_run(s.world, changed), written);
    (void)parent;
}

/* tes_init / tes_init_number: initial values are part of the add, at once or deferred. */
TEST(initial_values_are_part_of_the_add_not_a_change) {
    scene_t s = make_scene(NULL);
    tes_query_t *added = fx_query(s.world, &(tes_query_desc_t){.added = FX_IDS(s.b)});
    tes_query_t *changed = fx_query(s.world, &(tes_query_desc_t){.changed = FX_IDS(s.b)});
    tes_entity_t now = fx_spawn(s.world, FX_IDS(s.b));
    CHECK_OK(tes_init_number(s.world, now, s.b, 0, 0, 1.5));
    int32_t n = 7;
    CHECK_OK(tes_init(s.world, now, s.b, 1, &n, sizeof n));
    tes_entity_t parent = fx_spawn(s.world, FX_IDS(s.a)), pending = 0;
    tes_iter_t it;
    enter_run(&s, s.a, &it);
    CHECK_OK(tes_spawn(s.world, FX_IDS(s.a), &pending));
    CHECK_OK(tes_add(s.world, pending, s.b));
    CHECK_OK(tes_init_number(s.world, pending, s.b, 0, 0, 2.5)); /* recorded with the spawn */
    CHECK_OK(tes_add(s.world, parent, s.b));                     /* a placed entity's add... */
    CHECK_OK(tes_init_number(s.world, parent, s.b, 0, 0, 3.5));  /* ...and its value: recorded */
    CHECK_OK(tes_init(s.world, parent, s.b, 1, &n, sizeof n));
    CHECK(!fx_has(s.world, parent, s.b));
    tes_iter_fini(&it);
    CHECK_NUM_EQ(fx_get_number(s.world, now, s.b, 0, 0), 1.5);
    CHECK_NUM_EQ(fx_get_number(s.world, now, s.b, 1, 0), 7);
    CHECK_NUM_EQ(fx_get_number(s.world, pending, s.b, 0, 0), 2.5);
    CHECK_NUM_EQ(fx_get_number(s.world, parent, s.b, 0, 0), 3.5);
    CHECK_NUM_EQ(fx_get_number(s.world, parent, s.b, 1, 0), 7);
    FX_CHECK_VISITED(fx_run(s.world, added), now, pending, parent);
    CHECK_EQ(fx_run(s.world, changed)->count, 0u);
    CHECK_EQ(fx_stats(s.world).commands_skipped, 0u);
}

TEST(deferred_initial_values_check_at_once_and_drop_when_the_component_never_comes) {
    scene_t s = make_scene(NULL);
    tes_entity_t placed = fx_spawn(s.world, FX_IDS(s.a)), pending = 0;
    CHECK_OK(tes_set_number(s.world, placed, s.a, 0, 0, 4));
    tes_iter_t it;
    enter_run(&s, s.a, &it);
    CHECK_OK(tes_spawn(s.world, FX_IDS(s.a), &pending));
    fx_snapshot_t *before = fx_snapshot_of(s.world);
    /* Checked when recorded, against what the entity will have (pending) or the schema. */
    CHECK_ERR(tes_init_number(s.world, pending, s.b, 0, 0, 1), TES_ERR_MISSING_COMPONENT);
    CHECK_ERR(tes_init_number(s.world, placed, s.b, 1, 0, 0.5), TES_ERR_BAD_VALUE);
    CHECK_ERR(tes_init_number(s.world, placed, s.b, 2, 0, 1), TES_ERR_UNKNOWN_FIELD);
    CHECK_ERR(tes_init_number(s.world, placed, s.b, 0, 1, 1), TES_ERR_ELEMENT_OUT_OF_RANGE);
    CHECK_ERR(tes_init_number(s.world, placed, s.tag, 0, 0, 1), TES_ERR_TAG_HAS_NO_DATA);
    CHECK_ERR(tes_init_number(s.world, pending + (1u << TES_INDEX_BITS), s.a, 0, 0, 1),
              TES_ERR_STALE_ENTITY);
    FX_CHECK_UNCHANGED(before, s.world);
    /* No add of B is recorded for `placed`: the value is dropped at the flush, and counted. */
    CHECK_OK(tes_init_number(s.world, placed, s.b, 0, 0, 9));
    /* A component it has: written at once, as outside a run. */
    CHECK_OK(tes_init_number(s.world, placed, s.a, 0, 0, 5));
    CHECK_NUM_EQ(fx_get_number(s.world, placed, s.a, 0, 0), 5);
    tes_iter_fini(&it);
    CHECK(!fx_has(s.world, placed, s.b));
    CHECK_EQ(fx_stats(s.world).commands_skipped, 1u);
    CHECK_OK(tes_world_validate(s.world));
}

/* ---------------------------------------------------------------------------------------- */
/* Errors, validation, teardown                                                              */
/* ---------------------------------------------------------------------------------------- */

TEST(despawn_batch_with_a_duplicate_fails_during_iteration_too) {
    /* "Fails, despawning none, if any is stale or listed twice." */
    scene_t s = make_scene(NULL);
    tes_entity_t e[3];
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.a), 3, e));
    tes_iter_t it;
    enter_run(&s, s.a, &it);
    tes_entity_t twice[3] = {e[0], e[1], e[0]};
    CHECK_ERR(tes_despawn_batch(s.world, twice, 3), TES_ERR_DUPLICATE_ENTITY);
    tes_iter_fini(&it);
    for (int i = 0; i < 3; i++)
        CHECK(tes_is_alive(s.world, e[i]));
    CHECK_EQ(skipped(&s), 0);
}

TEST(bad_writes_to_a_pending_entity_fail_at_once) {
    /* A recorded write that cannot succeed is a caller's mistake the call can see: it must
     * not return TES_OK and then vanish at the flush. */
    static const tes_field_desc_t int_fields[] = {{"i", TES_I16, 0}};
    scene_t s = make_scene(NULL);
    tes_component_t small = fx_component(s.world, "Small", int_fields, 1);
    fx_spawn(s.world, FX_IDS(s.b));
    tes_entity_t p = 0;
    tes_iter_t it;
    enter_run(&s, s.b, &it);
    CHECK_OK(tes_spawn(s.world, FX_IDS(s.a, small), &p));
    double v = 1;
    CHECK_ERR(tes_set_number(s.world, p, s.a, 5, 0, 1), TES_ERR_UNKNOWN_FIELD);
    CHECK_ERR(tes_set_number(s.world, p, s.b, 0, 0, 1), TES_ERR_MISSING_COMPONENT);
    CHECK_ERR(tes_set_number(s.world, p, 999, 0, 0, 1), TES_ERR_UNKNOWN_COMPONENT);
    CHECK_ERR(tes_set_number(s.world, p, small, 0, 0, 0.5), TES_ERR_BAD_VALUE);
    CHECK_ERR(tes_set_number(s.world, p, small, 0, 0, 1e9), TES_ERR_BAD_VALUE);
    CHECK_ERR(tes_set_number(s.world, p, s.a, 0, 3, 1), TES_ERR_ELEMENT_OUT_OF_RANGE);
    CHECK_ERR(tes_set(s.world, p, s.a, 0, &v, 4), TES_ERR_BAD_SIZE);
    CHECK_ERR(tes_set_number(s.world, p, s.tag, 0, 0, 1), TES_ERR_MISSING_COMPONENT);
    tes_iter_fini(&it);
    CHECK(tes_is_alive(s.world, p));
    CHECK_EQ(skipped(&s), 0);
}

TEST(validate_passes_while_commands_are_pending) {
    scene_t s = make_scene(NULL);
    tes_entity_t e[4];
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.a), 4, e));
    tes_iter_t it;
    enter_run(&s, s.a, &it);
    tes_entity_t p[3];
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.b), 3, p));
    CHECK_OK(tes_despawn(s.world, e[1]));
    CHECK_OK(tes_world_validate(s.world));
    tes_iter_fini(&it);
    CHECK_OK(tes_world_validate(s.world));
}

TEST(defer_begin_end_defer_like_an_iteration_and_nest_with_one) {
    scene_t s = make_scene(NULL);
    tes_entity_t e = fx_spawn(s.world, FX_IDS(s.a));
    CHECK_OK(tes_defer_begin(s.world));
    tes_entity_t p = fx_spawn(s.world, FX_IDS(s.b));
    CHECK_OK(tes_despawn(s.world, e));
    CHECK(tes_is_alive(s.world, e)); /* recorded, not applied */
    CHECK_ERR(tes_location(s.world, p, &(tes_location_t){0}), TES_ERR_PENDING_ENTITY);
    tes_iter_t it;
    enter_run(&s, s.a, &it); /* nests: ending the run applies nothing yet */
    tes_iter_fini(&it);
    CHECK(tes_is_alive(s.world, e));
    CHECK_OK(tes_defer_end(s.world)); /* the outermost end applies, in order */
    CHECK(!tes_is_alive(s.world, e));
    CHECK(fx_has(s.world, p, s.b));
    CHECK_ERR(tes_defer_end(s.world), TES_ERR_INVALID_ARGUMENT); /* no begin left */
    CHECK_ERR(tes_defer_begin(NULL), TES_ERR_INVALID_ARGUMENT);
    CHECK_OK(tes_world_validate(s.world));
}

/* What the bindings' chunk-list cache relies on: every call that moves rows or chunks, or
 * makes an archetype, changes tes_world_layout; writes and iterations do not. */
TEST(world_layout_changes_with_every_row_move_and_only_then) {
    scene_t s = make_scene(NULL);
    uint32_t before = tes_world_layout(s.world);
#define MOVES(call)                                  \
    do {                                             \
        CHECK_OK(call);                              \
        CHECK_NE(tes_world_layout(s.world), before); \
        before = tes_world_layout(s.world);          \
    } while (0)
#define STAYS(call)                                  \
    do {                                             \
        CHECK_OK(call);                              \
        CHECK_EQ(tes_world_layout(s.world), before); \
    } while (0)
    tes_entity_t e[8];
    MOVES(tes_spawn_batch(s.world, FX_IDS(s.a), 8, e));
    MOVES(tes_spawn(s.world, FX_IDS(s.a), &e[0]));
    MOVES(tes_add(s.world, e[1], s.tag)); /* new archetype (A, Tag) */
    MOVES(tes_add(s.world, e[2], s.tag)); /* existing archetype */
    MOVES(tes_remove(s.world, e[2], s.tag));
    MOVES(tes_despawn(s.world, e[3]));
    MOVES(tes_despawn_batch(s.world, &e[4], 2));
    STAYS(tes_add(s.world, e[1], s.tag)); /* has it: nothing moves */
    STAYS(tes_set_number(s.world, e[1], s.a, 0, 0, 5));
    STAYS(tes_mark_changed(s.world, e[1], s.a));
    tes_archetype_t a = fx_archetype_of(s.world, e[6]);
    MOVES(tes_archetype_add(s.world, a, s.b)); /* whole archetype moves */
    tes_query_t *q = all_of(&s, s.a);
    tes_iter_t it;
    CHECK_OK(tes_query_iter(s.world, q, &it));
    while (tes_iter_next(&it))
        CHECK_EQ(tes_world_layout(s.world), before);
    /* Deferred calls move nothing until the flush. */
    CHECK_OK(tes_defer_begin(s.world));
    STAYS(tes_despawn(s.world, e[6]));
    MOVES(tes_defer_end(s.world));
#undef MOVES
#undef STAYS
    CHECK_EQ(tes_world_layout(NULL), 0u);
}

static void noop_body(tes_iter_t *it, void *user) {
    (void)it;
    (void)user;
}

TEST(world_destroy_frees_queries_systems_and_pending_commands) {
    fx_alloc_t *alloc = fx_alloc_new();
    tes_world_desc_t desc = {.allocator = fx_allocator(alloc)};
    scene_t s = make_scene(&desc);
    tes_entity_t e[50];
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.a, s.b), 50, e));
    tes_query_t *q = fx_query(
        s.world, &(tes_query_desc_t){.changed = FX_IDS(s.a, s.b), .removed = FX_IDS(s.a, s.tag)});
    fx_query(s.world, &(tes_query_desc_t){.added = FX_IDS(s.tag), .removed = FX_IDS(s.b)});
    uint32_t stage;
    CHECK_OK(tes_stage_create(s.world, "update", &stage));
    tes_system_t *system = NULL;
    tes_system_desc_t sd = {.stage = stage, .query = {.changed = FX_IDS(s.b)}, .run = noop_body};
    CHECK_OK(tes_system_create(s.world, &sd, &system));
    CHECK_OK(tes_tick(s.world));
    for (int i = 0; i < 50; i += 3)
        CHECK_OK(tes_despawn(s.world, e[i]));
    tes_iter_t it;
    CHECK_OK(tes_query_iter(s.world, q, &it));
    tes_entity_t p[20];
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.a), 20, p));
    CHECK_OK(tes_set_number(s.world, p[0], s.a, 0, 0, 1));
    CHECK_OK(tes_despawn(s.world, e[1]));
    /* The run is still live. */
    CHECK(alloc->live_blocks > 0);
    fx_world_destroy_now(s.world);
    FX_CHECK_ALLOC_CLEAN(alloc);
}

/* ---------------------------------------------------------------------------------------- */
/* A recorded run over a whole archetype applies as one move                                 */
/* ---------------------------------------------------------------------------------------- */

/* Two worlds built alike: in `loop`, `component` is added to (or removed from) every entity of
 * `from`'s archetype inside a run over it, in row order, so the flush finds one run that covers
 * the archetype (applied as one archetype move); in `calls`, the same entities take the same
 * calls one by one outside any run. The two must end byte for byte alike: rows, their order,
 * chunks, values, change ticks and the removal log. */
typedef struct twins_t {
    scene_t loop, calls;
    tes_query_t *tracked[2], *removed[2];
    tes_entity_t entities[2][300];
} twins_t;

static void twins_build(twins_t *t, uint32_t n, uint32_t already) {
    scene_t *worlds[2] = {&t->loop, &t->calls};
    for (int w = 0; w < 2; w++) {
        scene_t *s = worlds[w];
        *s = make_scene(&(tes_world_desc_t){.chunk_bytes = 1024});
        /* A consumer of B's changes (chunk trackers) and of the tag's removals (a log). */
        t->tracked[w] = fx_query(s->world, &(tes_query_desc_t){.changed = FX_IDS(s->b)});
        t->removed[w] = fx_query(s->world, &(tes_query_desc_t){.removed = FX_IDS(s->tag)});
        for (uint32_t i = 0; i < n; i++) {
            t->entities[w][i] = fx_spawn(s->world, FX_IDS(s->a));
            CHECK_OK(tes_set_number(s->world, t->entities[w][i], s->a, 0, 0, i));
        }
        /* Some already in the target, so its last chunk is partly filled. */
        for (uint32_t i = 0; i < already; i++)
            fx_spawn(s->world, FX_IDS(s->a, s->b, s->tag));
        tes_tick(s->world);
    }
}

/* The entities of an archetype, in row order. */
static fx_entities_t *archetype_rows(scene_t *s, tes_archetype_t a) {
    tes_archetype_info_t info = fx_archetype(s->world, a);
    fx_entities_t *rows = fx_entities_new();
    for (uint32_t k = 0; k < info.chunk_count; k++) {
        tes_chunk_info_t chunk;
        CHECK_OK(tes_chunk_info(s->world, a, k, &chunk));
        for (uint32_t row = 0; row < chunk.count; row++)
            fx_entities_push(rows, chunk.entities[row]);
    }
    return rows;
}

/* Every entity of the first entity's archetype, in row order, gains or loses B (which 0) or the
 * tag (which 1), in both worlds. */
static void twins_step_some(twins_t *t, bool removing, int which, uint32_t leave_out,
                            bool reversed) {
    scene_t *worlds[2] = {&t->loop, &t->calls};
    for (int w = 0; w < 2; w++) {
        scene_t *s = worlds[w];
        tes_component_t c = which == 0 ? s->b : s->tag;
        tes_archetype_t a = fx_archetype_of(s->world, t->entities[w][0]);
        fx_entities_t *rows = archetype_rows(s, a);
        CHECK(rows->count > 1);
        if (w == 0) CHECK_OK(tes_defer_begin(s->world));
        for (uint32_t i = 0; i + leave_out < rows->count; i++) {
            tes_entity_t e = rows->items[reversed ? rows->count - 1 - i : i];
            CHECK_OK(removing ? tes_remove(s->world, e, c) : tes_add(s->world, e, c));
        }
        if (w == 0) CHECK_OK(tes_defer_end(s->world));
    }
}

static void twins_step(twins_t *t, bool removing, int which) {
    twins_step_some(t, removing, which, 0, false);
}

/* The two worlds' bytes are the same (their snapshots). */
static void twins_same_bytes(twins_t *t) {
    fx_snapshot_t *a = fx_snapshot_of(t->loop.world), *b = fx_snapshot_of(t->calls.world);
    char message[256];
    if (!fx_snapshot_equal(a, b, message, sizeof message)) {
        harness_fail(__FILE__, __LINE__, "the two worlds differ: %s", message);
    }
}

/* The tag's removal logs: the same entities, in the same order. Returns how many. */
static uint32_t twins_same_log(twins_t *t) {
    fx_entities_t *logs[2];
    scene_t *worlds[2] = {&t->loop, &t->calls};
    for (int w = 0; w < 2; w++) {
        tes_iter_t it;
        CHECK_OK(tes_query_iter(worlds[w]->world, t->removed[w], &it));
        const tes_entity_t *removed = NULL;
        uint32_t count = 0;
        CHECK_OK(tes_iter_removed(&it, worlds[w]->tag, &removed, &count));
        logs[w] = fx_entities_new();
        for (uint32_t i = 0; i < count; i++)
            fx_entities_push(logs[w], removed[i]);
        tes_iter_fini(&it);
    }
    CHECK_EQ(logs[0]->count, logs[1]->count);
    for (uint32_t i = 0; i < logs[0]->count; i++)
        CHECK_EQ(logs[0]->items[i], logs[1]->items[i]);
    return logs[0]->count;
}

static void twins_check(twins_t *t) {
    twins_same_bytes(t);
    for (uint32_t i = 0; i < 300; i++) {
        tes_entity_t e0 = t->entities[0][i], e1 = t->entities[1][i];
        CHECK_EQ(e0, e1);
        uint64_t added[2] = {0}, changed[2] = {0};
        if (fx_has(t->loop.world, e0, t->loop.b)) {
            CHECK_OK(tes_ticks(t->loop.world, e0, t->loop.b, &added[0], &changed[0]));
            CHECK_OK(tes_ticks(t->calls.world, e1, t->calls.b, &added[1], &changed[1]));
            CHECK_EQ(added[0], added[1]);
            CHECK_EQ(changed[0], changed[1]);
        }
    }
    twins_same_log(t);
    CHECK_OK(tes_world_validate(t->loop.world));
}

TEST(a_recorded_run_over_a_whole_archetype_ends_as_the_calls_one_by_one) {
    /* Into an empty target and into one whose last chunk is partly filled; a tracked data
     * component, then a logged tag, added and then removed. */
    for (uint32_t already = 0; already <= 7; already += 7) {
        twins_t *t = fx_malloc(sizeof *t);
        twins_build(t, 300, already);
        twins_step(t, false, 0); /* + B (tracked) */
        twins_check(t);
        twins_step(t, false, 1); /* + Tag */
        twins_check(t);
        twins_step(t, true, 1); /* - Tag (logged) */
        twins_check(t);
        twins_step(t, true, 0); /* - B */
        twins_check(t);
        /* Runs that are not an archetype's rows in order are applied call by call: one that
         * leaves the last row out, one in reverse order. */
        twins_step_some(t, false, 1, 1, false);
        twins_check(t);
        twins_step_some(t, false, 0, 0, true);
        twins_check(t);
    }
}

/* Every entity of the first entity's archetype despawned, in row order (or reversed), in both
 * worlds; then as many spawned again, whose handles show the free queue's order. */
static void twins_despawn(twins_t *t, bool reversed, tes_entity_t out[2][300]) {
    scene_t *worlds[2] = {&t->loop, &t->calls};
    for (int w = 0; w < 2; w++) {
        scene_t *s = worlds[w];
        tes_archetype_t a = fx_archetype_of(s->world, t->entities[w][0]);
        fx_entities_t *rows = archetype_rows(s, a);
        CHECK(rows->count == 300);
        if (w == 0) CHECK_OK(tes_defer_begin(s->world));
        for (uint32_t i = 0; i < rows->count; i++)
            CHECK_OK(tes_despawn(s->world, rows->items[reversed ? rows->count - 1 - i : i]));
        if (w == 0) CHECK_OK(tes_defer_end(s->world));
        CHECK_EQ(fx_archetype(s->world, a).entity_count, 0);
        for (uint32_t i = 0; i < 300; i++)
            out[w][i] = fx_spawn(s->world, FX_IDS(s->b));
    }
}

TEST(a_recorded_despawn_of_a_whole_archetype_ends_as_the_calls_one_by_one) {
    /* The removal log (of the tag the entities have), the freed indices' order (the handles
     * spawned next) and the world's bytes, with the run in row order (applied at once) and
     * reversed (call by call). */
    for (int reversed = 0; reversed <= 1; reversed++) {
        twins_t *t = fx_malloc(sizeof *t);
        twins_build(t, 300, 7);
        twins_step(t, false, 1); /* + Tag: the 300 in an archetype of their own */
        twins_check(t);
        tes_entity_t(*spawned)[300] = fx_malloc(2 * sizeof *spawned);
        twins_despawn(t, reversed, spawned);
        for (uint32_t i = 0; i < 300; i++)
            CHECK_EQ(spawned[0][i], spawned[1][i]);
        twins_same_bytes(t);
        CHECK_EQ(twins_same_log(t), 300);
        CHECK_OK(tes_world_validate(t->loop.world));
        CHECK_OK(tes_world_validate(t->calls.world));
    }
}

TEST(initial_values_recorded_after_a_spawn_land_whatever_their_storage) {
    /* Values of table components right after the spawn are written as its row is placed; one
     * of a sparse component its recorded add gives, and the ones after it, take the general
     * path; a value of a component the entity never gets is skipped. */
    scene_t s = make_scene(NULL);
    static const tes_field_desc_t f[] = {{"v", TES_U8, 2}};
    tes_component_t sparse = fx_component_flags(s.world, "Sparse", f, 1, TES_COMPONENT_SPARSE);
    fx_spawn(s.world, FX_IDS(s.b));
    tes_iter_t it;
    enter_run(&s, s.b, &it);
    tes_entity_t p = 0;
    CHECK_OK(tes_spawn(s.world, FX_IDS(s.a, s.b), &p));
    CHECK_OK(tes_init_number(s.world, p, s.a, 0, 0, 1.5));
    CHECK_OK(tes_init_number(s.world, p, s.b, 1, 0, -7));
    CHECK_OK(tes_add(s.world, p, sparse));
    CHECK_OK(tes_init_number(s.world, p, sparse, 0, 1, 200));
    CHECK_OK(tes_init_number(s.world, p, s.a, 1, 0, 3));
    tes_iter_fini(&it);
    CHECK_NUM_EQ(fx_get_number(s.world, p, s.a, 0, 0), 1.5);
    CHECK_NUM_EQ(fx_get_number(s.world, p, s.b, 1, 0), -7);
    CHECK_NUM_EQ(fx_get_number(s.world, p, sparse, 0, 1), 200);
    CHECK_NUM_EQ(fx_get_number(s.world, p, s.a, 1, 0), 3);
    CHECK_EQ(skipped(&s), 0);
    CHECK_OK(tes_world_validate(s.world));
}

/* ---------------------------------------------------------------------------------------- */
/* A recorded run of spawns is placed as one batch                                          */
/* ---------------------------------------------------------------------------------------- */

/* One world in which 300 spawns of {A, B} with two initial values each are recorded inside a
 * run, every 50th with one value only (another shape, which ends a run), and every 7th value of
 * B's `n` given as A's `v` (other fields than the run's). With `broken`, a command that changes
 * nothing (removing a tag the anchor lacks) follows each spawn, so that no two spawns are
 * consecutive and each is placed alone. With `starved`, every allocation fails from the flush
 * on. Handles go to out[0..300). */
static scene_t recorded_spawns(bool broken, bool starved, fx_alloc_t *alloc, tes_entity_t *out) {
    tes_allocator_t allocator = fx_allocator(alloc);
    scene_t s = make_scene(&(tes_world_desc_t){.chunk_bytes = 1024, .allocator = allocator});
    tes_entity_t anchor = fx_spawn(s.world, FX_IDS(s.a));
    for (int i = 0; i < 5; i++) /* a last chunk with room: a starved flush places some */
        fx_spawn(s.world, FX_IDS(s.a, s.b));
    fx_query(s.world, &(tes_query_desc_t){.changed = FX_IDS(s.b)});
    fx_query(s.world, &(tes_query_desc_t){.added = FX_IDS(s.a)});
    tes_tick(s.world);
    CHECK_OK(tes_defer_begin(s.world));
    for (uint32_t i = 0; i < 300; i++) {
        CHECK_OK(tes_spawn(s.world, FX_IDS(s.a, s.b), &out[i]));
        CHECK_OK(tes_init_number(s.world, out[i], s.a, 0, 0, i + 0.5));
        if (i % 50 != 49) {
            bool other = i % 7 == 3;
            CHECK_OK(
                tes_init_number(s.world, out[i], other ? s.a : s.b, other ? 0 : 1, 0, -(double)i));
        }
        if (broken) CHECK_OK(tes_remove(s.world, anchor, s.tag));
    }
    if (starved) alloc->fail_after = (int64_t)alloc->allocs;
    CHECK_OK(tes_defer_end(s.world));
    alloc->fail_after = -1;
    CHECK_OK(tes_world_validate(s.world));
    return s;
}

TEST(a_recorded_run_of_spawns_ends_as_the_spawns_placed_one_by_one) {
    /* Rows, their order and chunks, values, added ticks, handles and skipped commands: the
     * same whether the spawns are placed as runs or each alone; and when the chunks cannot
     * grow, the same spawns are placed and the same ones skipped. */
    for (int starved = 0; starved <= 1; starved++) {
        fx_alloc_t *allocs[2] = {fx_alloc_new(), fx_alloc_new()};
        tes_entity_t(*handles)[300] = fx_malloc(2 * sizeof *handles);
        scene_t runs = recorded_spawns(false, starved, allocs[0], handles[0]);
        scene_t alone = recorded_spawns(true, starved, allocs[1], handles[1]);
        fx_snapshot_t *a = fx_snapshot_of(runs.world), *b = fx_snapshot_of(alone.world);
        char message[256];
        if (!fx_snapshot_equal(a, b, message, sizeof message)) {
            harness_fail(__FILE__, __LINE__, "the two worlds differ: %s", message);
        }
        CHECK_EQ(skipped(&runs), skipped(&alone));
        CHECK_EQ(live_count(&runs), live_count(&alone));
        uint32_t placed = 0;
        for (uint32_t i = 0; i < 300; i++) {
            CHECK_EQ(handles[0][i], handles[1][i]);
            bool alive = tes_is_alive(runs.world, handles[0][i]);
            CHECK_EQ(alive, tes_is_alive(alone.world, handles[1][i]));
            if (!alive) continue;
            placed++;
            CHECK_NUM_EQ(fx_get_number(runs.world, handles[0][i], runs.a, 0, 0),
                         i % 7 == 3 && i % 50 != 49 ? -(double)i : i + 0.5);
            if (i % 50 != 49 && i % 7 != 3) {
                CHECK_NUM_EQ(fx_get_number(runs.world, handles[0][i], runs.b, 1, 0), -(double)i);
            }
            uint64_t added[2], changed[2];
            CHECK_OK(tes_ticks(runs.world, handles[0][i], runs.b, &added[0], &changed[0]));
            CHECK_OK(tes_ticks(alone.world, handles[1][i], alone.b, &added[1], &changed[1]));
            CHECK_EQ(added[0], added[1]);
            CHECK_EQ(changed[0], 0); /* initial values are no change */
        }
        if (starved) {
            CHECK(placed < 300); /* some spawns found no row: the fallback ran */
            CHECK(placed > 0);   /* the last chunk's room was used */
        } else {
            CHECK_EQ(placed, 300);
        }
    }
}

/* ---------------------------------------------------------------------------------------- */
/* Handouts: indices waiting for spawns the host records itself (bindings/record.ts)         */
/* ---------------------------------------------------------------------------------------- */

/* One history of spawns and despawns, with a free queue the allocator reuses (min_free 2):
 * `handouts` says whether each run first makes indices wait. The handles spawned inside and
 * after the runs go to out[0..12). */
static void handout_history(bool handouts, tes_entity_t *out) {
    scene_t s = make_scene(&(tes_world_desc_t){.min_free_indices = 2});
    tes_entity_t e[8];
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.a), 8, e));
    for (int i = 0; i < 6; i++)
        CHECK_OK(tes_despawn(s.world, e[i]));
    uint32_t n = 0;
    for (int round = 0; round < 2; round++) {
        tes_iter_t it;
        enter_run(&s, s.a, &it);
        if (handouts) {
            CHECK_OK(tes_defer_handouts(s.world, &n));
            CHECK(n > 3);
            CHECK_OK(tes_defer_handouts(s.world, &n)); /* the same ones still wait */
            CHECK(n > 3);
        }
        /* The core's own deferred spawns take the waiting indices first. */
        CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.b), 3, out + round * 3));
        CHECK_OK(tes_world_validate(s.world));
        tes_iter_fini(&it);
        CHECK_OK(tes_world_validate(s.world));
    }
    /* The ones left went back as they were: the next spawns get what they would have. */
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(s.b), 6, out + 6));
    CHECK_OK(tes_world_validate(s.world));
}

TEST(handouts_leave_every_spawn_the_index_it_would_have_had) {
    tes_entity_t plain[12], handed[12];
    handout_history(false, plain);
    handout_history(true, handed);
    for (int i = 0; i < 12; i++)
        CHECK_EQ(handed[i], plain[i]);
}

TEST(a_waiting_handout_is_neither_alive_nor_pending) {
    scene_t s = make_scene(NULL);
    tes_entity_t e = fx_spawn(s.world, FX_IDS(s.a));
    CHECK_ERR(tes_defer_handouts(s.world, &(uint32_t){0}), TES_ERR_INVALID_ARGUMENT);
    tes_iter_t it;
    enter_run(&s, s.a, &it);
    uint32_t n = 0;
    CHECK_OK(tes_defer_handouts(s.world, &n));
    CHECK_EQ(n, 64);
    CHECK_ERR(tes_defer_handouts(s.world, NULL), TES_ERR_INVALID_ARGUMENT);
    /* The next index, with the generation a spawn would give it. */
    tes_entity_t next = e + 1;
    double d = 0;
    CHECK(!tes_is_alive(s.world, next));
    CHECK_ERR(tes_get_number(s.world, next, s.a, 0, 0, &d), TES_ERR_STALE_ENTITY);
    CHECK_ERR(tes_set_number(s.world, next, s.a, 0, 0, 1), TES_ERR_STALE_ENTITY);
    CHECK_ERR(tes_despawn(s.world, next), TES_ERR_STALE_ENTITY);
    CHECK_ERR(tes_add(s.world, next, s.b), TES_ERR_STALE_ENTITY);
    CHECK_OK(tes_world_validate(s.world));
    tes_iter_fini(&it);
    CHECK_EQ(live_count(&s), 1);
    CHECK_EQ(skipped(&s), 0);
    CHECK_EQ(fx_spawn(s.world, FX_IDS(s.b)), next); /* given back: the table shrank again */
    CHECK_OK(tes_world_validate(s.world));
}
