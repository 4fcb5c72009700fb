/* Out of memory: an allocator that fails the k-th allocation, for every k. Each call of a
 * fixed sequence must then succeed or report TES_ERR_OUT_OF_MEMORY, and a failed call must
 * leave a valid world exactly as it was; nothing may leak. */
#include "fixtures.h"

static const tes_field_desc_t position_fields[] = {{"x", TES_F32, 0}, {"y", TES_F32, 0}};
static const tes_field_desc_t array_fields[] = {{"b", TES_U8, 5}, {"d", TES_F64, 0}};
static const tes_field_desc_t value_fields[] = {{"v", TES_I32, 0}};

typedef struct oom_run_t {
    fx_alloc_t *alloc;
    tes_world_t *world;
    fx_snapshot_t *before;
    bool sticky;     /* every allocation after the first failure fails too */
    bool stopped;    /* sticky: the first failed call ends the sequence */
    uint32_t failed; /* calls that reported TES_ERR_OUT_OF_MEMORY */
    int failed_line; /* where */
} oom_run_t;

/* Runs `call`; on TES_ERR_OUT_OF_MEMORY checks the world is valid and unchanged, then either
 * stops (sticky) or retries once, when the allocator works again. */
#define STEP(call)                                            \
    do {                                                      \
        if (run->stopped) return;                             \
        fx_snapshot_take_full(run->before, run->world);       \
        uint64_t failures_before = run->alloc->failures;      \
        tes_result_t step_r = (call);                         \
        if (step_r == TES_ERR_OUT_OF_MEMORY) {                \
            CHECK(run->alloc->failures > failures_before);    \
            CHECK_OK(tes_world_validate(run->world));         \
            FX_CHECK_UNCHANGED_FULL(run->before, run->world); \
            run->failed++;                                    \
            run->failed_line = __LINE__;                      \
            if (run->sticky) {                                \
                run->stopped = true;                          \
                return;                                       \
            }                                                 \
            step_r = (call);                                  \
        }                                                     \
        CHECK_OK(step_r);                                     \
    } while (0)

static tes_component_t reg_flags(oom_run_t *run, const char *name, const tes_field_desc_t *fields,
                                 uint32_t count, uint32_t flags, tes_result_t *result) {
    tes_component_desc_t desc = {name, fields, count, flags};
    tes_component_t id = UINT32_MAX;
    *result = tes_component_register(run->world, &desc, &id);
    return id;
}

static tes_component_t reg(oom_run_t *run, const char *name, const tes_field_desc_t *fields,
                           uint32_t count, tes_result_t *result) {
    return reg_flags(run, name, fields, count, 0, result);
}

static void sparse_and_relations(oom_run_t *run, tes_component_t p, tes_entity_t e0,
                                 tes_entity_t *batch);
static void item_calls(oom_run_t *run, tes_component_t p);
static void rollback(oom_run_t *run);

/* The world is created by the caller; this is everything after. */
static void sequence(oom_run_t *run) {
    tes_world_t *w = run->world;
    tes_result_t r;
    tes_component_t p = 0, arr = 0, t = 0, q = 0, extra = 0;
    STEP((p = reg(run, "Position", position_fields, 2, &r), r));
    STEP((arr = reg(run, "Arrays", array_fields, 2, &r), r));
    STEP((t = reg(run, "Frozen", NULL, 0, &r), r));
    STEP((q = reg(run, "Value", value_fields, 1, &r), r));
    tes_component_t pa[] = {p, arr}, pat[] = {p, arr, t}, qt[] = {q, t};
    tes_entity_t e0 = 0, e1 = 0, batch[300], more[50], queue[200];

    STEP(tes_spawn(w, &p, 1, &e0));
    CHECK_OK(tes_set_number(w, e0, p, 0, 0, 1.5));
    STEP(tes_spawn(w, pat, 3, &e1));
    CHECK_OK(tes_set_number(w, e1, arr, 1, 0, -2.25));
    STEP(tes_spawn_batch(w, pa, 2, 300, batch));
    for (uint32_t i = 0; i < 300; i++) {
        CHECK_OK(tes_set_number(w, batch[i], p, 1, 0, i));
        CHECK_OK(tes_set_number(w, batch[i], arr, 0, i % 5, i % 256));
    }
    STEP(tes_add(w, e0, q));
    STEP(tes_add(w, batch[5], t));
    STEP(tes_remove(w, batch[7], p));
    tes_archetype_t a_pa = 0, a_pat = 0, a_qt = 0;
    STEP(tes_archetype_find(w, pa, 2, &a_pa));
    STEP(tes_archetype_add(w, a_pa, t)); /* onto {P,A,T}, which holds e1 and batch[5] */
    STEP(tes_archetype_find(w, pat, 3, &a_pat));
    STEP(tes_archetype_remove(w, a_pat, arr)); /* to a new archetype {P,T} */
    STEP(tes_despawn_batch(w, batch + 100, 100));
    STEP(tes_despawn(w, e1));
    for (int i = 0; i < 50; i++)
        STEP(tes_spawn(w, &q, 1, &more[i]));
    STEP(tes_archetype_find(w, qt, 2, &a_qt));
    STEP(tes_spawn_batch(w, &q, 1, 200, queue));
    STEP(tes_archetype_spawn(w, a_qt, 150, NULL));
    STEP((extra = reg(run, "Extra", array_fields, 2, &r), r));
    STEP(tes_add(w, e0, extra));
    STEP(tes_remove(w, e0, q));
    STEP(tes_archetype_add(w, fx_archetype_of(w, queue[0]), extra));
    STEP(tes_despawn_batch(w, queue, 200));
    STEP(tes_spawn_batch(w, pat, 3, 120, NULL));
    CHECK_NUM_EQ(fx_get_number(w, e0, p, 0, 0), 1.5);
    CHECK_NUM_EQ(fx_get_number(w, batch[299], p, 1, 0), 299); /* Arrays was removed from it */
    CHECK_NUM_EQ(fx_get_number(w, batch[7], arr, 0, 2), 7);   /* {Arrays} since P was removed */
    CHECK_OK(tes_world_validate(w));
    sparse_and_relations(run, p, e0, batch);
    item_calls(run, p);
}

/* Checkpoints (the first copies the world) and rewinds over every kind of change. A failed
 * checkpoint or rewind leaves the world and the kept checkpoints as they were; a rewind gives
 * back the world of its checkpoint. */
static void rollback(oom_run_t *run) {
    tes_world_t *w = run->world;
    tes_result_t r;
    tes_component_t p = 0, sp = 0, likes = 0, mk = 0;
    STEP((p = reg(run, "Position", position_fields, 2, &r), r));
    STEP((sp = reg_flags(run, "Sparse", value_fields, 1, TES_COMPONENT_SPARSE, &r), r));
    STEP((mk = reg_flags(run, "Marker", NULL, 0, TES_COMPONENT_SPARSE, &r), r));
    STEP((likes = reg_flags(run, "Likes", value_fields, 1, TES_COMPONENT_RELATION, &r), r));
    tes_component_t tag = 0;
    STEP((tag = reg(run, "Tag", NULL, 0, &r), r));
    tes_entity_t base[300];
    tes_component_t tagged[] = {p, tag};
    STEP(tes_spawn_batch(w, &p, 1, 200, base));
    STEP(tes_spawn_batch(w, tagged, 2, 100, base + 200));
    for (int i = 0; i < 10; i++) {
        STEP(tes_add(w, base[i], sp));
        STEP(tes_pair_add(w, base[i], likes, base[i + 10]));
    }
    STEP(tes_despawn_batch(w, base + 30, 10));
    fx_snapshot_t *at_first = fx_snapshot_new(), *at_second = fx_snapshot_new();
    uint32_t first = 0, second = 0, oldest = 0, newest = 0;
    fx_snapshot_take_full(at_first, w);
    STEP(tes_checkpoint(w, &first));
    CHECK_EQ(first, 1);
    tes_entity_t e[20];
    STEP(tes_spawn_batch(w, &p, 1, 20, e));
    for (int i = 0; i < 20; i++)
        CHECK_OK(tes_set_number(w, e[i], p, 0, 0, i));
    STEP(tes_add(w, e[0], sp));
    STEP(tes_add(w, e[1], mk));
    STEP(tes_pair_add(w, e[2], likes, e[3]));
    fx_snapshot_take_full(at_second, w);
    STEP(tes_checkpoint(w, &second));
    CHECK_EQ(second, 2);
    STEP(tes_despawn_batch(w, e, 5));
    STEP(tes_despawn_batch(w, base + 50, 240)); /* two archetypes to grow back: chunks, trackers */
    STEP(tes_pair_add(w, e[6], likes, e[7]));
    CHECK_OK(tes_set_number(w, e[9], p, 0, 0, -1));
    STEP(tes_rewind(w, second));
    FX_CHECK_UNCHANGED_FULL(at_second, w);
    STEP(tes_despawn(w, e[2]));
    STEP(tes_rewind(w, first));
    FX_CHECK_UNCHANGED_FULL(at_first, w);
    CHECK_OK(tes_checkpoints(w, &oldest, &newest));
    CHECK_EQ(oldest, 1);
    CHECK_EQ(newest, 1);
    CHECK_OK(tes_world_validate(w));
}

/* Item lists: spawns, adds, writes and removes of components, sparse members and pairs with
 * values, for lists of entities and over queries, at once and recorded inside a run. */
static void item_calls(oom_run_t *run, tes_component_t p) {
    tes_world_t *w = run->world;
    tes_result_t r;
    tes_component_t v = 0, sv = 0, link = 0;
    STEP((v = reg(run, "ItemValue", value_fields, 1, &r), r));
    STEP((sv = reg_flags(run, "ItemSparse", value_fields, 1, TES_COMPONENT_SPARSE, &r), r));
    STEP((link = reg_flags(run, "ItemLink", value_fields, 1, TES_COMPONENT_RELATION, &r), r));
    tes_entity_t hub = 0, made[40];
    STEP(tes_spawn(w, &p, 1, &hub));
    const tes_item_t items[] = {{p, 0}, {v, 0}, {sv, 0}, {link, 0}};
    const tes_value_t values[] = {{1, 0, 0}, {2, 0, 1}, {3, 0, 2}};
    const double numbers[] = {3, 4, 5};
    tes_item_t spawn_items[] = {items[0], items[1], items[2], {link, 0}};
    spawn_items[3].target = hub;
    tes_items_t spawn = {spawn_items, 4, values, 3, numbers, 3};
    STEP(tes_spawn_items(w, &spawn, 40, made, NULL));
    tes_items_t adds = {spawn_items + 1, 1, (const tes_value_t[]){{0, 0, 0}}, 1, numbers, 1};
    STEP(tes_add_items(w, made, 10, &adds, NULL)); /* held: a change */
    tes_items_t removes = {items + 1, 3, NULL, 0, NULL, 0};
    STEP(tes_remove_items(w, made + 10, 10, &removes, NULL));
    STEP(tes_add_items(w, made + 10, 10, &spawn, NULL)); /* back, with values */
    tes_items_t writes = {spawn_items + 2, 1, (const tes_value_t[]){{0, 0, 2}}, 1, numbers, 3};
    STEP(tes_set_items(w, made, 5, &writes, NULL));
    tes_query_t *with_v = NULL;
    STEP(tes_query_create(w, &(tes_query_desc_t){.all = &v, .all_count = 1}, &with_v));
    tes_items_t tag_list = {(const tes_item_t[]){{p, 0}}, 1, NULL, 0, NULL, 0};
    STEP(tes_query_remove_items(w, with_v, &tag_list, NULL)); /* whole archetypes */
    STEP(tes_query_add_items(w, with_v, &spawn, NULL));       /* row by row, with values */
    tes_iter_t it;
    STEP(tes_query_iter(w, with_v, &it));
    CHECK(tes_iter_next(&it));
    /* Recorded calls: refused whole (nothing recorded) when out of memory. */
#define RECORDED(call)                               \
    do {                                             \
        if (run->stopped) break;                     \
        fx_snapshot_take_full(run->before, w);       \
        tes_result_t rec_r = (call);                 \
        if (rec_r == TES_ERR_OUT_OF_MEMORY) {        \
            FX_CHECK_UNCHANGED_FULL(run->before, w); \
            run->failed++;                           \
            run->stopped = run->sticky;              \
            if (run->sticky) break;                  \
            rec_r = (call);                          \
        }                                            \
        CHECK_OK(rec_r);                             \
    } while (0)
    tes_entity_t pending[3];
    RECORDED(tes_remove_items(w, made + 20, 5, &removes, NULL));
    RECORDED(tes_spawn_items(w, &spawn, 3, pending, NULL));
    RECORDED(tes_add_items(w, made + 20, 5, &spawn, NULL));
#undef RECORDED
    tes_iter_fini(&it); /* the flush: out of memory skips what cannot be applied */
    CHECK_OK(tes_world_validate(w));
}

/* Sparse sets, pairs, their logs (consumers of each kind exist) and cascading despawns. */
static void sparse_and_relations(oom_run_t *run, tes_component_t p, tes_entity_t e0,
                                 tes_entity_t *batch) {
    tes_world_t *w = run->world;
    tes_result_t r;
    const uint32_t tree_flags = TES_COMPONENT_RELATION | TES_RELATION_EXCLUSIVE |
                                TES_RELATION_ACYCLIC | TES_RELATION_CASCADE;
    uint32_t entities_before = fx_stats(w).entity_count;
    tes_component_t sp = 0, mk = 0, likes = 0, tree = 0;
    STEP((sp = reg_flags(run, "Sparse", value_fields, 1, TES_COMPONENT_SPARSE, &r), r));
    STEP((mk = reg_flags(run, "Marker", NULL, 0, TES_COMPONENT_SPARSE, &r), r));
    STEP((likes = reg_flags(run, "Likes", value_fields, 1, TES_COMPONENT_RELATION, &r), r));
    STEP((tree = reg_flags(run, "ChildOf", NULL, 0, tree_flags, &r), r));
    tes_query_t *events = NULL, *changed = NULL, *children = NULL;
    tes_component_t relations[] = {likes, tree}, gone[] = {sp, mk, likes};
    STEP(tes_query_create(
        w,
        &(tes_query_desc_t){
            .pair_changes = relations, .pair_change_count = 2, .removed = gone, .removed_count = 3},
        &events));
    STEP(tes_query_create(w, &(tes_query_desc_t){.changed = &sp, .changed_count = 1}, &changed));
    for (int i = 0; i < 40; i++)
        STEP(tes_add(w, batch[i], mk));
    STEP(tes_add(w, e0, sp));
    CHECK_OK(tes_set_number(w, e0, sp, 0, 0, 7));
    tes_component_t psm[] = {p, sp, mk};
    tes_entity_t kids[30];
    STEP(tes_spawn_batch(w, psm, 3, 30, kids));
    for (int i = 0; i < 30; i++) /* a binary tree under e0 */
        STEP(tes_pair_add(w, kids[i], tree, i ? kids[(i - 1) / 2] : e0));
    for (int i = 0; i < 20; i++) {
        STEP(tes_pair_add(w, batch[i], likes, batch[i + 1]));
        STEP(tes_pair_add(w, batch[i], likes, batch[i + 2]));
        CHECK_OK(tes_pair_init_number(w, batch[i], likes, batch[i + 1], 0, 0, i));
    }
    STEP(tes_pair_set_number(w, batch[0], likes, batch[1], 0, 0, 5));
    tes_pair_term_t under = {tree, e0, TES_TERM_ALL};
    STEP(tes_query_create(
        w, &(tes_query_desc_t){.all = &mk, .all_count = 1, .pairs = &under, .pair_count = 1},
        &children));
    tes_collect_t collected;
    STEP(tes_query_collect(w, events, &collected));
    STEP(tes_query_collect(w, changed, &collected));
    /* A run ended before handing anything out carries its rows; the next run takes them in
     * (moving them aside, grouping them with its own) or fails having consumed nothing. */
    for (int i = 0; i < 30; i++)
        STEP(tes_mark_changed(w, kids[i], sp));
    tes_iter_t early;
    STEP(tes_query_iter(w, changed, &early));
    tes_iter_fini(&early);
    CHECK_OK(tes_mark_changed(w, kids[3], sp));
    STEP(tes_query_collect(w, changed, &collected));
    CHECK_EQ(collected.count, 30);
    tes_entity_t walked[64];
    uint32_t depths[64], walked_count = 0;
    STEP(tes_relation_walk(w, tree, e0, walked, depths, 64, &walked_count));
    CHECK_EQ(walked_count, 30);
    tes_iter_t it;
    STEP(tes_query_iter(w, children, &it));
    uint32_t visited = 0;
    while (tes_iter_next(&it))
        visited += it.row_count;
    CHECK_EQ(visited, 1); /* kids[0], the one child of e0 */
    STEP(tes_remove(w, batch[3], mk));
    STEP(tes_remove(w, batch[2], likes)); /* both of its pairs */
    STEP(tes_despawn(w, kids[1]));        /* and its subtree */
    STEP(tes_despawn_batch(w, batch + 10, 5));
    STEP(tes_despawn(w, e0)); /* the rest of the tree */
    STEP(tes_query_collect(w, events, &collected));
    /* 30 spawned; gone: 5 of the batch, e0 and the 30 of its tree. */
    CHECK_EQ(fx_stats(w).entity_count, entities_before + 30 - 36);
    /* Runs of recorded sparse adds and removes: the flush reserves each run's room once, and
     * out of memory skips what cannot be applied. */
    CHECK_OK(tes_defer_begin(w));
    for (int i = 0; i < 12 && !run->stopped; i++) {
        for (int tries = 0; tries < 2; tries++) {
            tes_result_t rec =
                i < 7 ? tes_add(w, batch[50 + i], mk) : tes_remove(w, batch[i - 3], mk);
            if (rec == TES_OK) break;
            CHECK_EQ(rec, TES_ERR_OUT_OF_MEMORY); /* the recording: refused whole */
            run->failed++;
            run->stopped = run->sticky;
            if (run->stopped) break;
        }
    }
    CHECK_OK(tes_defer_end(w));
    CHECK_OK(tes_world_validate(w));

    /* Replication: a replicator (its consumer queries, the index stamps), a keyframe, a delta
     * after spawns, pair changes and a reordered child, a peer's, and one after a new component. */
    tes_replicator_t *rep = NULL;
    /* (Sending only changed fields: the shadows of values are allocated while encoding.) */
    STEP(tes_replicator_create(
        w, &(tes_replicator_desc_t){.history = 4, .flags = TES_REPLICATOR_CHANGED_FIELDS}, &rep));
    const uint8_t *bytes = NULL;
    uint32_t size = 0;
    uint64_t tick = 0, keyframe_tick = 0;
    STEP(tes_delta_encode(rep, 0, &bytes, &size, &keyframe_tick));
    tes_entity_t parent, more[3];
    STEP(tes_spawn(w, psm, 3, &parent));
    STEP(tes_spawn_batch(w, psm, 2, 3, more));
    for (int i = 0; i < 3; i++)
        STEP(tes_pair_add(w, more[i], tree, parent));
    STEP(tes_pair_place(w, more[2], tree, parent, more[0]));
    STEP(tes_pair_set_number(w, batch[0], likes, batch[1], 0, 0, 6));
    STEP(tes_despawn(w, more[1]));
    STEP(tes_delta_encode(rep, keyframe_tick, &bytes, &size, &tick));
    /* A peer with visibility: its sights, its log, its owed list, a budgeted keyframe. */
    tes_peer_t *peer = NULL;
    STEP(tes_peer_create(rep, TES_PEER_VISIBILITY, &peer));
    STEP(tes_peer_show(peer, parent, 2.0f));
    STEP(tes_peer_show(peer, more[0], 1.0f));
    STEP(tes_peer_show(peer, more[2], 1.0f));
    uint64_t seen = 0;
    STEP(tes_peer_encode(peer, 0, 8, &bytes, &size, &seen)); /* withholds all but one */
    STEP(tes_peer_hide(peer, more[0]));
    STEP(tes_peer_encode(peer, seen, 8, &bytes, &size, &seen));
    tes_component_t late = 0;
    STEP((late = reg(run, "Late", value_fields, 1, &r), r));
    STEP(tes_add(w, parent, late));
    STEP(tes_delta_encode(rep, tick, &bytes, &size, &tick));
    CHECK(bytes[6] & 1); /* a keyframe: the replicated set grew */
    tes_replicator_destroy(rep);
    CHECK_OK(tes_world_validate(w));
}

/* One run with the (k+1)-th allocation failing (or every one after it when sticky). Returns
 * the number of failed calls; leaves the final state in `final` when given. */
typedef void (*sequence_fn)(oom_run_t *run);

static uint32_t run_once(sequence_fn sequence, fx_alloc_t *alloc, fx_snapshot_t *scratch, int64_t k,
                         bool sticky, fx_snapshot_t *final) {
    oom_run_t run_state = {.alloc = alloc, .before = scratch, .sticky = sticky};
    oom_run_t *run = &run_state;
    fx_alloc_init(alloc);
    alloc->fail_after = k;
    alloc->fail_once = !sticky;
    tes_world_desc_t desc = {
        .chunk_bytes = 1024, .min_free_indices = 4, .allocator = fx_allocator(alloc)};
    tes_world_t *world = NULL;
    tes_result_t r = tes_world_create(&desc, &world);
    if (r == TES_ERR_OUT_OF_MEMORY) {
        CHECK_EQ(alloc->live_blocks, 0);
        CHECK_EQ(alloc->bad_frees, 0);
        if (sticky) return 1;
        run->failed++;
        r = tes_world_create(&desc, &world);
    }
    CHECK_OK(r);
    harness_defer(fx_destroy_world, world);
    run->world = world;
    sequence(run);
    if (final != NULL && !run->stopped) fx_snapshot_take_full(final, world);
    fx_world_destroy_now(world);
    FX_CHECK_ALLOC_CLEAN(alloc);
    return run->failed;
}

static void check_every_failure_point(sequence_fn sequence, bool sticky) {
    fx_alloc_t *alloc = fx_alloc_new();
    fx_snapshot_t *scratch = fx_snapshot_new();
    fx_snapshot_t *reference = fx_snapshot_new();
    fx_snapshot_t *final = fx_snapshot_new();
    CHECK_EQ(run_once(sequence, alloc, scratch, -1, sticky, reference), 0);
    uint64_t total_allocations = alloc->allocs;
    CHECK(total_allocations > 20);
    int64_t k = 0;
    for (;; k++) {
        CHECK(k <= (int64_t)total_allocations + 1);
        uint32_t failed = run_once(sequence, alloc, scratch, k, sticky, final);
        if (alloc->failures == 0) break; /* the sequence needed no more than k allocations */
        CHECK(failed <= 1);
        if (!sticky) {
            /* Every failed call was undone, so the retried run ends where the clean one did. */
            char message[160];
            if (!fx_snapshot_equal(reference, final, message, sizeof message)) {
                harness_fail(__FILE__, __LINE__, "k = %lld: final state differs: %s", (long long)k,
                             message);
            }
        }
    }
    CHECK(k >= (int64_t)total_allocations);
    printf("  %lld failure points checked (%s)\n", (long long)k, sticky ? "sticky" : "once");
}

TEST(world_create_out_of_memory_leaks_nothing) {
    fx_alloc_t *alloc = fx_alloc_new();
    for (int64_t k = 0;; k++) {
        CHECK(k < 1000);
        fx_alloc_init(alloc);
        alloc->fail_after = k;
        tes_world_desc_t desc = {.allocator = fx_allocator(alloc)};
        tes_world_t *world = NULL;
        tes_result_t r = tes_world_create(&desc, &world);
        if (r == TES_OK) {
            CHECK(world != NULL);
            CHECK_OK(tes_world_validate(world));
            tes_world_destroy(world);
            FX_CHECK_ALLOC_CLEAN(alloc);
            CHECK(k > 0); /* a world needs at least one allocation */
            break;
        }
        CHECK_ERR(r, TES_ERR_OUT_OF_MEMORY);
        FX_CHECK_ALLOC_CLEAN(alloc);
    }
}

TEST(every_single_allocation_failure_is_reported_and_undone) {
    check_every_failure_point(sequence, false);
}

TEST(allocator_that_stays_broken_leaves_a_valid_world_and_no_leaks) {
    check_every_failure_point(sequence, true);
}

TEST(checkpoints_and_rewinds_out_of_memory_change_nothing) {
    check_every_failure_point(rollback, false);
    check_every_failure_point(rollback, true);
}

TEST(world_keeps_working_after_out_of_memory) {
    fx_alloc_t *alloc = fx_alloc_new();
    tes_world_desc_t desc = {.chunk_bytes = 1024, .allocator = fx_allocator(alloc)};
    tes_world_t *world = fx_world(&desc);
    tes_component_t p = fx_component(world, "Position", position_fields, 2);
    tes_entity_t e[400];
    CHECK_OK(tes_spawn_batch(world, &p, 1, 100, e));
    fx_snapshot_t *before = fx_snapshot_of(world);
    alloc->fail_after = (int64_t)alloc->allocs; /* everything fails from now on */
    CHECK_ERR(tes_spawn_batch(world, &p, 1, 300, e + 100), TES_ERR_OUT_OF_MEMORY);
    FX_CHECK_UNCHANGED(before, world);
    CHECK_OK(tes_world_validate(world));
    /* Calls that need no memory still work. */
    CHECK_OK(tes_set_number(world, e[50], p, 0, 0, 4));
    CHECK_OK(tes_despawn(world, e[99]));
    alloc->fail_after = -1;
    CHECK_OK(tes_spawn_batch(world, &p, 1, 300, e + 100));
    CHECK_EQ(fx_stats(world).entity_count, 399);
    CHECK_NUM_EQ(fx_get_number(world, e[50], p, 0, 0), 4);
    fx_check_all_packed(world);
    CHECK_OK(tes_world_validate(world));
}
