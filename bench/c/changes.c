/*
 * Change-detection benchmark of the C core: what observers, tracked writes and filtered
 * queries cost, natively (gcc -O3) and as wasm (emcc -O3 -msimd128), with the harness of
 * core.c (bench.h: calibration, --runs timed runs, min / median / max, RESULT lines).
 *
 *   observers_*   BENCHMARKS.md "observers": N entities (Position, Velocity, Health); per tick
 *                 tes_set_number Health on 100 random distinct entities, tag X added to 10 and
 *                 removed from the 10 that got it 8 ticks ago, tag Y the same (so 10 lose Y),
 *                 then tes_tick runs 3 systems: changed:[Health] (sums hp of its rows),
 *                 added:[X] (sums hp), removed:[Y] (reads hp of each entity that lost Y).
 *                 One op = one whole tick. observers_base_* does the same writes without the
 *                 systems: the difference is what observing costs. The tick time should follow
 *                 the 100 dirty entities, not N.
 *   tax_*         ns per tes_set_number / tes_mark_changed on random entities of 100k while
 *                 Health is untracked, tracked by ticks only (second changed filter of a
 *                 query), or dirty-tracked (first filter). Every 1024 writes the consumer
 *                 system runs in a tes_tick outside the timing, so the writes keep taking
 *                 the first-write path (a row already listed costs less).
 *   iterate_*     a plain query over 1M (Position, Velocity), x += vx via tes_iter_column,
 *                 alone and while changed:[Position] queries exist with dirty entries.
 *   filtered_*    one run of a changed:[Health] query over 100k entities when 0 / 100 /
 *                 1,000 / 10,000 of them changed, plus the tes_tick that prunes: ns per
 *                 visited entity (per run for 0). The writes are outside the timing.
 *                 filtered_100_of_10k / _1m: 100 changed in 10k / 1M, for the part of a run
 *                 that follows N (the chunks walked) rather than what changed.
 *   checkpoint,   rollback, which reuses change tracking (bench/js/rollback.mjs natively): 100k
 *   rewind_*      (Position, Velocity), a sparse marker on 1%; a tick reads every entity, moves
 *                 1,000 random ones (Position.x), despawns and spawns 10 and moves 10 markers.
 *                 checkpoint: one tes_checkpoint after a tick (the tick untimed). rewind_k: one
 *                 tes_rewind by k checkpoints; the k ticks are then simulated again untimed, each
 *                 with its checkpoint, so the ring (17) is as deep for the next.
 *
 * Every case checks its work while it runs (each observer visits exactly what changed, with
 * the values written; each consumer sees each window's distinct writes) and after (values,
 * tracking levels, tes_world_validate), and aborts on any mismatch.
 *
 * Options as bench_core (bench.h): --runs, --target-ms, --iters (callgrind:
 * --toggle-collect=bench_measure --toggle-collect=bench_exclude), --only, --chunk-bytes,
 * --list; --no-memory is accepted and ignored.
 */
#define BENCH_PROGRAM "bench_changes"
#include "bench.h"

enum {
    OBSERVED_SETS = 100,       /* Health writes per observers tick */
    TAG_MOVES = 10,            /* entities gaining X (and Y) per tick, and losing them */
    TAG_DELAY = 8,             /* ticks an entity keeps X or Y */
    WORLD_POPULATION = 100000, /* tax_* and filtered_* */
    TAX_WINDOW = 1024,         /* tax_*: writes between two consumer runs */
    RANDOM_COUNT = 1 << 16,    /* random handles cycled by the tax cases */
    ITERATE_POPULATION = 1000000,
    ITERATE_MARKED = 1000, /* iterate_filters_exist: dirty Position entries left in place */
    ROLLBACK_MOVED = 1000, /* rollback: entities moved per tick (1% of WORLD_POPULATION) */
    ROLLBACK_CHURN = 10,   /* rollback: despawns, spawns and marker moves per tick */
};

/* ---------------------------------------------------------------------------------------- */
/* Per-case state                                                                            */
/* ---------------------------------------------------------------------------------------- */

typedef struct bench_state {
    tes_world_t *world;
    uint32_t chunk_bytes; /* 0 = the core's default */
    uint32_t population;  /* entities the case spawns */
    uint32_t param;       /* filtered_*: changed entities per run */
    uint32_t variant;     /* the case's flavour (see each setup) */
    tes_component_t position, velocity, health, tag_x, tag_y;
    tes_entity_t *entities; /* the population */
    uint32_t entity_count;
    uint32_t *order; /* a random permutation of 0..entity_count-1: slices are distinct */
    tes_entity_t *random_entities;
    uint32_t window_distinct[RANDOM_COUNT / TAX_WINDOW]; /* tax_*: distinct entities per window */
    tes_query_t *query;    /* filtered_*, iterate_*: the query the loop runs */
    tes_query_t *extra[2]; /* iterate_filters_exist: the filtered queries that only exist */
    uint64_t counter;      /* ops so far, over every loop call (ticks, writes, runs) */
    uint64_t ops_per_iter;
    uint64_t last_iters;
    uint64_t passes; /* iterate_*: passes over all entities so far */
    /* What the observers / consumers saw in their latest run. */
    uint64_t changed_rows, added_rows, removed_rows;
    double changed_sum, visited_sum;
    double value; /* the value of the latest writes */
    uint32_t expected_rows;
    bool checking; /* verify every tick / run (off during the setup's warm-up) */
    uint64_t checked, failures;
} bench_state;

static void world_make(bench_state *s) {
    s->world = bench_world(s->chunk_bytes, &s->position, &s->velocity, &s->health);
    bench_register(s->world, "X", NULL, 0, &s->tag_x);
    bench_register(s->world, "Y", NULL, 0, &s->tag_y);
}

static void state_free(bench_state *s) {
    /* Queries and systems belong to the world. */
    tes_world_destroy(s->world);
    free(s->entities);
    free(s->order);
    free(s->random_entities);
}

/* n entities of (Position, Velocity, Health), all zero, and a random permutation of them. */
static void spawn_population(bench_state *s, uint32_t n) {
    s->entity_count = n;
    s->entities = malloc((size_t)n * sizeof *s->entities);
    s->order = malloc((size_t)n * sizeof *s->order);
    EXPECT(s->entities != NULL && s->order != NULL);
    tes_component_t set[3] = {s->position, s->velocity, s->health};
    CHECK(tes_spawn_batch(s->world, set, 3, n, s->entities));
    for (uint32_t k = 0; k < n; k++)
        s->order[k] = k;
    for (uint32_t k = n - 1; k > 0; k--) {
        uint32_t j = rng_next() % (k + 1);
        uint32_t t = s->order[k];
        s->order[k] = s->order[j];
        s->order[j] = t;
    }
}

/* The b-th slice of `size` distinct entities of the permutation (cycling). */
static const uint32_t *distinct_batch(const bench_state *s, uint64_t b, uint32_t size) {
    uint64_t batches = s->entity_count / size;
    return s->order + (b % batches) * size;
}

/* Sums Health over the rows an iteration visits; returns the number of rows. */
static uint64_t visit_health(tes_iter_t *it, tes_component_t health, double *sum) {
    uint64_t rows = 0;
    double acc = 0;
    while (tes_iter_next(it)) {
        void *column;
        CHECK(tes_iter_column(it, health, 0, &column));
        const float *hp = column;
        if (it->rows) {
            for (uint32_t j = 0; j < it->row_count; j++)
                acc += hp[it->rows[j]];
        } else {
            for (uint32_t j = 0; j < it->count; j++)
                acc += hp[j];
        }
        rows += it->row_count;
    }
    *sum = acc;
    return rows;
}

static uint32_t create_stage(bench_state *s) {
    uint32_t stage;
    CHECK(tes_stage_create(s->world, "observers", &stage));
    return stage;
}

/* ---------------------------------------------------------------------------------------- */
/* 1. observers                                                                              */
/* ---------------------------------------------------------------------------------------- */

static void observe_changed(tes_iter_t *it, void *user) {
    bench_state *s = user;
    s->changed_rows = visit_health(it, s->health, &s->changed_sum);
}

static void observe_added(tes_iter_t *it, void *user) {
    bench_state *s = user;
    double sum;
    s->added_rows = visit_health(it, s->health, &sum);
    s->visited_sum += sum;
}

/* The entities that lost Y: their hp, read through the API (the rows moved elsewhere). */
static void observe_removed(tes_iter_t *it, void *user) {
    bench_state *s = user;
    const tes_entity_t *lost;
    uint32_t n;
    CHECK(tes_iter_removed(it, s->tag_y, &lost, &n));
    double sum = 0;
    for (uint32_t j = 0; j < n; j++) {
        double hp;
        CHECK(tes_get_number(s->world, lost[j], s->health, 0, 0, &hp));
        sum += hp;
    }
    s->removed_rows = n;
    s->visited_sum += sum;
    tes_iter_fini(it); /* the removals are all it wants: no walk over the matching chunks */
}

static uint32_t tag_slot(const bench_state *s, uint64_t tick, uint32_t j, uint32_t offset) {
    return (uint32_t)((tick * TAG_MOVES + j + offset) % s->entity_count);
}

/* One tick of the scenario. */
static void observers_tick(bench_state *s) {
    tes_world_t *w = s->world;
    const tes_entity_t *entities = s->entities;
    const uint64_t t = s->counter++;
    const double value = (double)((t & 1023u) + 1u);

    const uint32_t *batch = distinct_batch(s, t, OBSERVED_SETS);
    for (uint32_t j = 0; j < OBSERVED_SETS; j++)
        CHECK(tes_set_number(w, entities[batch[j]], s->health, 0, 0, value));
    const uint32_t y_offset = s->entity_count / 2;
    for (uint32_t j = 0; j < TAG_MOVES; j++) {
        if (t >= TAG_DELAY) {
            CHECK(tes_remove(w, entities[tag_slot(s, t - TAG_DELAY, j, 0)], s->tag_x));
            CHECK(tes_remove(w, entities[tag_slot(s, t - TAG_DELAY, j, y_offset)], s->tag_y));
        }
        CHECK(tes_add(w, entities[tag_slot(s, t, j, 0)], s->tag_x));
        CHECK(tes_add(w, entities[tag_slot(s, t, j, y_offset)], s->tag_y));
    }

    s->changed_rows = s->added_rows = s->removed_rows = UINT64_MAX; /* "did not run" */
    CHECK(tes_tick(w));

    if (s->checking && s->variant == 1) {
        s->checked++;
        if (s->changed_rows != OBSERVED_SETS || s->changed_sum != OBSERVED_SETS * value ||
            s->added_rows != TAG_MOVES || s->removed_rows != TAG_MOVES) {
            if (s->failures++ == 0) {
                fprintf(stderr,
                        BENCH_PROGRAM ": observers tick %" PRIu64 ": changed %" PRIu64
                                      " (sum %.0f, want %d x %.0f), added %" PRIu64
                                      ", removed %" PRIu64 " (want %d)\n",
                        t, s->changed_rows, s->changed_sum, OBSERVED_SETS, value, s->added_rows,
                        s->removed_rows, TAG_MOVES);
            }
        }
    }
}

/* variant 1: the three observer systems; variant 0: the same writes, no systems. */
static void setup_observers(bench_state *s) {
    world_make(s);
    spawn_population(s, s->population);
    if (s->variant == 1) {
        uint32_t stage = create_stage(s);
        tes_system_t *system;
        CHECK(tes_system_create(
            s->world,
            &(tes_system_desc_t){.stage = stage,
                                 .query = {.changed = &s->health, .changed_count = 1},
                                 .run = observe_changed,
                                 .user = s},
            &system));
        CHECK(tes_system_create(
            s->world,
            &(tes_system_desc_t){
                .stage = stage,
                .query = {.all = &s->health, .all_count = 1, .added = &s->tag_x, .added_count = 1},
                .run = observe_added,
                .user = s},
            &system));
        CHECK(tes_system_create(
            s->world,
            &(tes_system_desc_t){.stage = stage,
                                 .query = {.removed = &s->tag_y, .removed_count = 1},
                                 .run = observe_removed,
                                 .user = s},
            &system));
    }
    /* Warm-up: the first runs see the initial state, and Y has no removals before tick 8. */
    for (int k = 0; k < 2 * TAG_DELAY; k++)
        observers_tick(s);
    s->checking = true;
    s->ops_per_iter = 1;
}

static void loop_observers(bench_state *s, uint64_t iters) {
    for (uint64_t i = 0; i < iters; i++)
        observers_tick(s);
    sink_number = s->visited_sum;
}

static void check_observers(bench_state *s) {
    EXPECT(s->failures == 0);
    if (s->variant == 1) EXPECT(s->checked > 0);
    tes_tracking_t level;
    CHECK(tes_component_tracking(s->world, s->health, &level));
    EXPECT(level == (s->variant == 1 ? TES_TRACK_DIRTY : TES_UNTRACKED));
    /* The latest tick's Health writes are in place, and who has X / Y follows the schedule. */
    const uint64_t t = s->counter - 1;
    const uint32_t *batch = distinct_batch(s, t, OBSERVED_SETS);
    for (uint32_t j = 0; j < OBSERVED_SETS; j++) {
        double hp;
        CHECK(tes_get_number(s->world, s->entities[batch[j]], s->health, 0, 0, &hp));
        EXPECT(hp == (double)((t & 1023u) + 1u));
    }
    tes_world_stats_t stats;
    CHECK(tes_world_stats(s->world, &stats));
    EXPECT(stats.entity_count == s->entity_count);
    for (uint32_t j = 0; j < TAG_MOVES; j++) {
        bool has;
        CHECK(tes_has(s->world, s->entities[tag_slot(s, t, j, 0)], s->tag_x, &has));
        EXPECT(has);
        CHECK(tes_has(s->world, s->entities[tag_slot(s, t - TAG_DELAY, j, 0)], s->tag_x, &has));
        EXPECT(!has);
    }
}

/* ---------------------------------------------------------------------------------------- */
/* 2. write-path tax                                                                         */
/* ---------------------------------------------------------------------------------------- */

static void consumer_run(tes_iter_t *it, void *user) {
    bench_state *s = user;
    s->changed_rows = visit_health(it, s->health, &s->changed_sum);
}

/* Between two windows (untimed): the consumer's run and pruning, and its check. */
static void tax_consume(void *arg) {
    bench_state *s = arg;
    s->changed_rows = UINT64_MAX;
    CHECK(tes_tick(s->world));
    if (s->variant == TES_UNTRACKED) return;
    const uint64_t window = (s->counter / TAX_WINDOW - 1) % (RANDOM_COUNT / TAX_WINDOW);
    /* Dirty: the window's distinct entities. Ticks: the query walks Position's (empty) list. */
    uint64_t want = s->variant == TES_TRACK_DIRTY ? s->window_distinct[window] : 0;
    s->checked++;
    if (s->changed_rows != want && s->failures++ == 0) {
        fprintf(stderr,
                BENCH_PROGRAM ": tax window %" PRIu64 ": consumer saw %" PRIu64
                              " rows, want %" PRIu64 "\n",
                window, s->changed_rows, want);
    }
}

/* variant: the tracking level Health gets (TES_UNTRACKED, TES_TRACK_TICKS, TES_TRACK_DIRTY). */
static void setup_tax(bench_state *s) {
    world_make(s);
    spawn_population(s, s->population);
    s->random_entities = malloc(RANDOM_COUNT * sizeof *s->random_entities);
    uint8_t *seen = calloc(s->population, 1);
    EXPECT(s->random_entities != NULL && seen != NULL);
    for (uint32_t w = 0; w < RANDOM_COUNT / TAX_WINDOW; w++) {
        memset(seen, 0, s->population);
        for (uint32_t j = w * TAX_WINDOW; j < (w + 1) * TAX_WINDOW; j++) {
            uint32_t k = rng_next() % s->population;
            s->random_entities[j] = s->entities[k];
            s->window_distinct[w] += !seen[k];
            seen[k] = 1;
        }
    }
    free(seen);
    if (s->variant != TES_UNTRACKED) {
        tes_component_t ticks_filters[2] = {s->position, s->health};
        tes_query_desc_t query =
            s->variant == TES_TRACK_DIRTY
                ? (tes_query_desc_t){.changed = &s->health, .changed_count = 1}
                : (tes_query_desc_t){.changed = ticks_filters, .changed_count = 2};
        tes_system_t *system;
        CHECK(tes_system_create(
            s->world,
            &(tes_system_desc_t){
                .stage = create_stage(s), .query = query, .run = consumer_run, .user = s},
            &system));
    }
    CHECK(tes_tick(s->world)); /* the consumer's first run: everything that existed */
    tes_tracking_t level;
    CHECK(tes_component_tracking(s->world, s->health, &level));
    EXPECT(level == (tes_tracking_t)s->variant);
    s->ops_per_iter = 1;
}

/* Values stay below 2^20, so f32 stores them exactly. */
#define WRITTEN_VALUE(i) ((i)&0xFFFFFu)

static void loop_tax_set(bench_state *s, uint64_t iters) {
    tes_world_t *w = s->world;
    const tes_entity_t *random = s->random_entities;
    const tes_component_t health = s->health;
    uint64_t op = s->counter;
    for (uint64_t i = 0; i < iters; i++, op++) {
        CHECK(tes_set_number(w, random[op & (RANDOM_COUNT - 1)], health, 0, 0,
                             (double)WRITTEN_VALUE(op)));
        if ((op & (TAX_WINDOW - 1)) == TAX_WINDOW - 1) {
            s->counter = op + 1;
            bench_untimed(tax_consume, s);
        }
    }
    s->counter = op;
}

static void loop_tax_mark(bench_state *s, uint64_t iters) {
    tes_world_t *w = s->world;
    const tes_entity_t *random = s->random_entities;
    const tes_component_t health = s->health;
    uint64_t op = s->counter;
    for (uint64_t i = 0; i < iters; i++, op++) {
        CHECK(tes_mark_changed(w, random[op & (RANDOM_COUNT - 1)], health));
        if ((op & (TAX_WINDOW - 1)) == TAX_WINDOW - 1) {
            s->counter = op + 1;
            bench_untimed(tax_consume, s);
        }
    }
    s->counter = op;
}

static void check_tax(bench_state *s, bool values) {
    EXPECT(s->failures == 0);
    if (s->variant != TES_UNTRACKED) EXPECT(s->checked > 0);
    if (values) { /* the latest write: nothing later can have overwritten it */
        uint64_t op = s->counter - 1;
        double hp;
        CHECK(tes_get_number(s->world, s->random_entities[op & (RANDOM_COUNT - 1)], s->health, 0, 0,
                             &hp));
        EXPECT(hp == (double)WRITTEN_VALUE(op));
    }
    tes_tracking_t level;
    CHECK(tes_component_tracking(s->world, s->health, &level));
    EXPECT(level == (tes_tracking_t)s->variant);
    if (s->variant != TES_UNTRACKED) { /* writes are stamped: the latest with the current tick */
        uint64_t added, changed;
        CHECK(tes_ticks(s->world, s->random_entities[(s->counter - 1) & (RANDOM_COUNT - 1)],
                        s->health, &added, &changed));
        EXPECT(changed > 0);
    }
}

static void check_tax_set(bench_state *s) {
    check_tax(s, true);
}

static void check_tax_mark(bench_state *s) {
    check_tax(s, false);
}

/* ---------------------------------------------------------------------------------------- */
/* 3. unfiltered iteration: x += vx, y += vy over (Position, Velocity) with a plain query    */
/* ---------------------------------------------------------------------------------------- */

static float velocity_of(tes_entity_t e) {
    return (float)(tes_entity_index(e) & 7u);
}

/* Visits every row of an iteration of the plain query, with a check of what it visits. */
static void fill_velocity(bench_state *s) {
    tes_iter_t it;
    uint64_t seen = 0;
    CHECK(tes_query_iter(s->world, s->query, &it));
    while (tes_iter_next(&it)) {
        void *vx, *vy;
        EXPECT(it.rows == NULL && it.row_count == it.count);
        CHECK(tes_iter_column(&it, s->velocity, 0, &vx));
        CHECK(tes_iter_column(&it, s->velocity, 1, &vy));
        for (uint32_t j = 0; j < it.count; j++) {
            ((float *)vx)[j] = velocity_of(it.entities[j]);
            ((float *)vy)[j] = 1.0f;
        }
        seen += it.count;
    }
    EXPECT(seen == ITERATE_POPULATION);
}

/* Runs a filtered query to its end; returns the rows it visited. */
static uint64_t drain(bench_state *s, tes_query_t *query) {
    tes_iter_t it;
    uint64_t rows = 0;
    CHECK(tes_query_iter(s->world, query, &it));
    while (tes_iter_next(&it))
        rows += it.row_count;
    return rows;
}

/* variant 0: the plain query alone. 1: changed:[Position] and changed:[Position, Velocity]
 * queries exist too (Position dirty-tracked, Velocity ticks), with ITERATE_MARKED dirty
 * Position entries waiting (those queries never run in the loop). */
static void setup_iterate(bench_state *s) {
    world_make(s);
    tes_component_t set[2] = {s->position, s->velocity};
    CHECK(tes_spawn_batch(s->world, set, 2, ITERATE_POPULATION, NULL));
    CHECK(tes_query_create(s->world, &(tes_query_desc_t){.all = set, .all_count = 2}, &s->query));
    fill_velocity(s);
    if (s->variant == 1) {
        CHECK(tes_query_create(s->world,
                               &(tes_query_desc_t){.changed = &s->position, .changed_count = 1},
                               &s->extra[0]));
        CHECK(tes_query_create(s->world, &(tes_query_desc_t){.changed = set, .changed_count = 2},
                               &s->extra[1]));
        drain(s, s->extra[0]); /* their first runs see what exists; then it is pruned */
        drain(s, s->extra[1]);
        CHECK(tes_tick(s->world));
        /* Dirty entries: Position of ITERATE_MARKED entities marked changed (distinct ones, one
         * per 1000 rows of the query's order). */
        tes_iter_t it;
        uint32_t marked = 0, row = 0;
        CHECK(tes_query_iter(s->world, s->query, &it));
        while (tes_iter_next(&it)) {
            for (uint32_t j = 0; j < it.count; j++, row++) {
                if (row % (ITERATE_POPULATION / ITERATE_MARKED) == 0) {
                    CHECK(tes_mark_changed(s->world, it.entities[j], s->position));
                    marked++;
                }
            }
        }
        EXPECT(marked == ITERATE_MARKED);
        tes_tracking_t level;
        CHECK(tes_component_tracking(s->world, s->position, &level));
        EXPECT(level == TES_TRACK_DIRTY);
        CHECK(tes_component_tracking(s->world, s->velocity, &level));
        EXPECT(level == TES_TRACK_TICKS);
    }
    s->ops_per_iter = ITERATE_POPULATION;
}

static void loop_iterate(bench_state *s, uint64_t iters) {
    tes_world_t *w = s->world;
    tes_query_t *q = s->query;
    const tes_component_t position = s->position, velocity = s->velocity;
    for (uint64_t i = 0; i < iters; i++) {
        tes_iter_t it;
        CHECK(tes_query_iter(w, q, &it));
        while (tes_iter_next(&it)) {
            void *x, *y, *vx, *vy;
            CHECK(tes_iter_column(&it, position, 0, &x));
            CHECK(tes_iter_column(&it, position, 1, &y));
            CHECK(tes_iter_column(&it, velocity, 0, &vx));
            CHECK(tes_iter_column(&it, velocity, 1, &vy));
            bench_integrate(x, y, vx, vy, it.count);
        }
    }
    s->passes += iters;
}

static void check_iterate(bench_state *s) {
    tes_iter_t it;
    uint64_t seen = 0;
    CHECK(tes_query_iter(s->world, s->query, &it));
    while (tes_iter_next(&it)) {
        void *x, *y;
        CHECK(tes_iter_column(&it, s->position, 0, &x));
        CHECK(tes_iter_column(&it, s->position, 1, &y));
        for (uint32_t j = 0; j < it.count; j++) {
            EXPECT(((float *)x)[j] == (float)s->passes * velocity_of(it.entities[j]));
            EXPECT(((float *)y)[j] == (float)s->passes);
        }
        seen += it.count;
    }
    EXPECT(seen == ITERATE_POPULATION);
    if (s->variant == 1) { /* the dirty entries were there all along, untouched */
        EXPECT(drain(s, s->extra[0]) == ITERATE_MARKED);
        EXPECT(drain(s, s->extra[1]) == 0); /* Velocity never changed */
    }
}

/* ---------------------------------------------------------------------------------------- */
/* 4. filtered iteration: a changed:[Health] run over 100k when param of them changed        */
/* ---------------------------------------------------------------------------------------- */

/* Untimed: the next batch of param distinct entities gets Health = the next value. */
static void filtered_write(void *arg) {
    bench_state *s = arg;
    const uint32_t *batch = distinct_batch(s, s->counter, s->param ? s->param : 1);
    s->value = (double)((s->counter & 1023u) + 1u);
    for (uint32_t j = 0; j < s->param; j++)
        CHECK(tes_set_number(s->world, s->entities[batch[j]], s->health, 0, 0, s->value));
}

static void setup_filtered(bench_state *s) {
    world_make(s);
    spawn_population(s, s->population);
    CHECK(tes_query_create(s->world, &(tes_query_desc_t){.changed = &s->health, .changed_count = 1},
                           &s->query));
    drain(s, s->query); /* the first run: everything tracked before it */
    CHECK(tes_tick(s->world));
    s->ops_per_iter = s->param ? s->param : 1;
}

static void loop_filtered(bench_state *s, uint64_t iters) {
    tes_world_t *w = s->world;
    for (uint64_t i = 0; i < iters; i++) {
        bench_untimed(filtered_write, s);
        s->counter++;
        tes_iter_t it;
        double sum;
        CHECK(tes_query_iter(w, s->query, &it));
        uint64_t rows = visit_health(&it, s->health, &sum);
        CHECK(tes_tick(w)); /* prunes what the run has seen */
        s->checked++;
        if ((rows != s->param || sum != s->param * s->value) && s->failures++ == 0) {
            fprintf(stderr,
                    BENCH_PROGRAM ": filtered run: %" PRIu64 " rows (sum %.0f), want %u"
                                  " x %.0f\n",
                    rows, sum, s->param, s->value);
        }
        s->visited_sum += sum;
    }
    sink_number = s->visited_sum;
}

static void check_filtered(bench_state *s) {
    EXPECT(s->failures == 0 && s->checked > 0);
    EXPECT(drain(s, s->query) == 0); /* nothing changed since the last run */
    tes_tracking_t level;
    CHECK(tes_component_tracking(s->world, s->health, &level));
    EXPECT(level == TES_TRACK_DIRTY);
}

/* ---------------------------------------------------------------------------------------- */
/* 5. rollback: a checkpoint, and rewinds by 1 and 8 checkpoints, as bench/js/rollback.mjs     */
/* ---------------------------------------------------------------------------------------- */

/* One tick of bench/js/rollback.mjs: a read pass over every entity (x * vx summed), then
 * ROLLBACK_MOVED random entities moved (Position.x), ROLLBACK_CHURN despawned and spawned with
 * values, as many markers moved. */
static void rollback_tick(bench_state *s) {
    tes_world_t *w = s->world;
    tes_entity_t *live = s->entities;
    const uint32_t n = s->entity_count;
    tes_iter_t it;
    double sum = 0;
    CHECK(tes_query_iter(w, s->query, &it));
    while (tes_iter_next(&it)) {
        void *px, *vx;
        CHECK(tes_iter_column(&it, s->position, 0, &px));
        CHECK(tes_iter_column(&it, s->velocity, 0, &vx));
        for (uint32_t j = 0; j < it.count; j++)
            sum += (double)((const float *)px)[j] * ((const float *)vx)[j];
    }
    sink_number = sum;
    for (uint32_t k = 0; k < ROLLBACK_MOVED; k++) {
        tes_entity_t e = live[rng_next() % n];
        double x;
        CHECK(tes_get_number(w, e, s->position, 0, 0, &x));
        CHECK(tes_set_number(w, e, s->position, 0, 0, x + 0.5));
    }
    tes_component_t set[2] = {s->position, s->velocity};
    for (uint32_t k = 0; k < ROLLBACK_CHURN; k++) {
        uint32_t at = rng_next() % n;
        CHECK(tes_despawn(w, live[at]));
        CHECK(tes_spawn(w, set, 2, &live[at]));
        CHECK(tes_set_number(w, live[at], s->position, 0, 0, k));
        CHECK(tes_set_number(w, live[at], s->velocity, 1, 0, k));
        tes_entity_t m = live[rng_next() % n];
        bool has;
        CHECK(tes_has(w, m, s->tag_x, &has));
        CHECK(has ? tes_remove(w, m, s->tag_x) : tes_add(w, m, s->tag_x));
    }
}

static void rollback_tick_untimed(void *arg) {
    rollback_tick(arg);
}

static void rollback_step(void *arg) {
    bench_state *s = arg;
    rollback_tick(s);
    uint32_t number;
    CHECK(tes_checkpoint(s->world, &number));
}

/* The live list again after a rewind: the handles the world has, by Position's query. */
static void rollback_relist(void *arg) {
    bench_state *s = arg;
    tes_iter_t it;
    uint32_t k = 0;
    CHECK(tes_query_iter(s->world, s->query, &it));
    while (tes_iter_next(&it)) {
        for (uint32_t j = 0; j < it.count; j++)
            s->entities[k++] = it.entities[j];
    }
    EXPECT(k == s->entity_count);
}

/* 100k entities of (Position, Velocity), a sparse marker (tag_x) on 1%, the first checkpoint
 * and 20 ticks with theirs: the ring is full and warm. */
static void setup_rollback(bench_state *s) {
    tes_world_desc_t desc = {.chunk_bytes = s->chunk_bytes, .checkpoints = 17};
    CHECK(tes_world_create(&desc, &s->world));
    bench_register(s->world, "Position", bench_xy_fields, 2, &s->position);
    bench_register(s->world, "Velocity", bench_xy_fields, 2, &s->velocity);
    CHECK(tes_component_register(
        s->world, &(tes_component_desc_t){"Marked", NULL, 0, TES_COMPONENT_SPARSE}, &s->tag_x));
    s->entity_count = s->population;
    s->entities = malloc((size_t)s->population * sizeof *s->entities);
    EXPECT(s->entities != NULL);
    tes_component_t set[2] = {s->position, s->velocity};
    CHECK(tes_spawn_batch(s->world, set, 2, s->population, s->entities));
    for (uint32_t k = 0; k < s->population; k += 100)
        CHECK(tes_add(s->world, s->entities[k], s->tag_x));
    CHECK(tes_query_create(s->world, &(tes_query_desc_t){.all = set, .all_count = 2}, &s->query));
    uint32_t number;
    CHECK(tes_checkpoint(s->world, &number));
    for (int i = 0; i < 20; i++)
        rollback_step(s);
    s->ops_per_iter = 1;
}

/* One op: a checkpoint after a tick (the tick untimed). */
static void loop_checkpoint(bench_state *s, uint64_t iters) {
    for (uint64_t i = 0; i < iters; i++) {
        bench_untimed(rollback_tick_untimed, s);
        uint32_t number;
        CHECK(tes_checkpoint(s->world, &number));
        s->checked++;
    }
}

/* One op: a rewind by `param` checkpoints; then (untimed) the handles relisted and as many
 * ticks simulated again, each with its checkpoint, so the ring is as deep for the next. */
static void simulate_again(void *arg) {
    bench_state *s = arg;
    rollback_relist(s);
    for (uint32_t i = 0; i < s->param; i++)
        rollback_step(s);
}

static void loop_rewind(bench_state *s, uint64_t iters) {
    for (uint64_t i = 0; i < iters; i++) {
        uint32_t oldest, newest;
        CHECK(tes_checkpoints(s->world, &oldest, &newest));
        CHECK(tes_rewind(s->world, newest - s->param));
        s->checked++;
        bench_untimed(simulate_again, s);
    }
}

static void check_rollback(bench_state *s) {
    EXPECT(s->checked > 0);
    uint32_t oldest, newest;
    CHECK(tes_checkpoints(s->world, &oldest, &newest));
    EXPECT(newest - oldest == 16);
    uint64_t before, after;
    CHECK(tes_world_hash(s->world, &before));
    CHECK(tes_rewind(s->world, newest)); /* nothing changed since: the same state */
    CHECK(tes_world_hash(s->world, &after));
    EXPECT(before == after);
}

/* ---------------------------------------------------------------------------------------- */
/* Cases and driver                                                                          */
/* ---------------------------------------------------------------------------------------- */

typedef struct bench_case {
    const char *name;  /* stable id, used by --only and in RESULT lines */
    const char *label; /* human description */
    const char *per;   /* what one op is */
    uint32_t population;
    uint32_t param;
    uint32_t variant;
    void (*setup)(bench_state *s);
    void (*loop)(bench_state *s, uint64_t iters);
    void (*check)(bench_state *s);
} bench_case;

static const bench_case cases[] = {
    {"observers_10k", "observers: tick, 10k entities", "tick", 10000, 0, 1, setup_observers,
     loop_observers, check_observers},
    {"observers_100k", "observers: tick, 100k entities", "tick", 100000, 0, 1, setup_observers,
     loop_observers, check_observers},
    {"observers_1m", "observers: tick, 1M entities", "tick", 1000000, 0, 1, setup_observers,
     loop_observers, check_observers},
    {"observers_base_10k", "observers' writes, no systems, 10k", "tick", 10000, 0, 0,
     setup_observers, loop_observers, check_observers},
    {"observers_base_100k", "observers' writes, no systems, 100k", "tick", 100000, 0, 0,
     setup_observers, loop_observers, check_observers},
    {"observers_base_1m", "observers' writes, no systems, 1M", "tick", 1000000, 0, 0,
     setup_observers, loop_observers, check_observers},
    {"tax_set_untracked", "tes_set_number, Health untracked, 100k", "set", WORLD_POPULATION, 0,
     TES_UNTRACKED, setup_tax, loop_tax_set, check_tax_set},
    {"tax_set_ticks", "tes_set_number, Health ticks-only, 100k", "set", WORLD_POPULATION, 0,
     TES_TRACK_TICKS, setup_tax, loop_tax_set, check_tax_set},
    {"tax_set_dirty", "tes_set_number, Health dirty-tracked, 100k", "set", WORLD_POPULATION, 0,
     TES_TRACK_DIRTY, setup_tax, loop_tax_set, check_tax_set},
    {"tax_mark_untracked", "tes_mark_changed, Health untracked, 100k", "mark", WORLD_POPULATION, 0,
     TES_UNTRACKED, setup_tax, loop_tax_mark, check_tax_mark},
    {"tax_mark_ticks", "tes_mark_changed, Health ticks-only, 100k", "mark", WORLD_POPULATION, 0,
     TES_TRACK_TICKS, setup_tax, loop_tax_mark, check_tax_mark},
    {"tax_mark_dirty", "tes_mark_changed, Health dirty-tracked, 100k", "mark", WORLD_POPULATION, 0,
     TES_TRACK_DIRTY, setup_tax, loop_tax_mark, check_tax_mark},
    {"iterate_plain", "plain query, 1M (Position, Velocity), alone", "entity", ITERATE_POPULATION,
     0, 0, setup_iterate, loop_iterate, check_iterate},
    {"iterate_filters_exist", "plain query, 1M, changed:[Position] queries exist", "entity",
     ITERATE_POPULATION, 0, 1, setup_iterate, loop_iterate, check_iterate},
    {"filtered_0", "changed:[Health] run + tick, 0 of 100k changed", "run", WORLD_POPULATION, 0, 0,
     setup_filtered, loop_filtered, check_filtered},
    {"filtered_100", "changed:[Health] run + tick, 100 of 100k changed", "entity", WORLD_POPULATION,
     100, 0, setup_filtered, loop_filtered, check_filtered},
    {"filtered_1000", "changed:[Health] run + tick, 1,000 of 100k changed", "entity",
     WORLD_POPULATION, 1000, 0, setup_filtered, loop_filtered, check_filtered},
    {"filtered_10000", "changed:[Health] run + tick, 10,000 of 100k changed", "entity",
     WORLD_POPULATION, 10000, 0, setup_filtered, loop_filtered, check_filtered},
    {"filtered_100_of_10k", "changed:[Health] run + tick, 100 of 10k changed", "entity", 10000, 100,
     0, setup_filtered, loop_filtered, check_filtered},
    {"filtered_100_of_1m", "changed:[Health] run + tick, 100 of 1M changed", "entity", 1000000, 100,
     0, setup_filtered, loop_filtered, check_filtered},
    {"checkpoint", "tes_checkpoint after a tick of 1% moved, 100k", "checkpoint", WORLD_POPULATION,
     0, 0, setup_rollback, loop_checkpoint, check_rollback},
    {"rewind_1", "tes_rewind by 1 checkpoint, 100k, 1% moved a tick", "rewind", WORLD_POPULATION, 1,
     0, setup_rollback, loop_rewind, check_rollback},
    {"rewind_8", "tes_rewind by 8 checkpoints, 100k, 1% moved a tick", "rewind", WORLD_POPULATION,
     8, 0, setup_rollback, loop_rewind, check_rollback},
};
enum { CASE_COUNT = sizeof cases / sizeof cases[0] };

typedef struct case_run {
    const bench_case *c;
    bench_state *s;
} case_run;

static void case_body(void *arg, uint64_t iters) {
    case_run *run = arg;
    run->c->loop(run->s, iters);
}

static void run_case(const bench_case *c, const options *opt) {
    bench_state *s = calloc(1, sizeof *s);
    EXPECT(s != NULL);
    s->chunk_bytes = opt->chunk_bytes;
    s->population = c->population;
    s->param = c->param;
    s->variant = c->variant;
    c->setup(s);
    case_run run = {c, s};
    uint64_t iters = bench_calibrate(case_body, &run, opt);

    double samples[64];
    int runs = bench_runs(opt);
    for (int r = 0; r < runs; r++) {
        s->last_iters = iters;
        samples[r] =
            bench_measure(case_body, &run, iters) / ((double)iters * (double)s->ops_per_iter);
    }
    c->check(s);
    CHECK(tes_world_validate(s->world));

    bench_report(c->name, c->label, c->per, bench_chunk_bytes(s->world), s->ops_per_iter, iters,
                 runs, samples);
    state_free(s);
    free(s);
}

int main(int argc, char **argv) {
    options opt = bench_options(argc, argv);
    if (opt.list) {
        for (int c = 0; c < CASE_COUNT; c++)
            printf("%s\t%s\n", cases[c].name, cases[c].label);
        return 0;
    }
    bench_print_header(&opt);
    for (int c = 0; c < CASE_COUNT; c++)
        if (selected(&opt, cases[c].name)) run_case(&cases[c], &opt);
    return 0;
}
