/*
 * Micro-benchmark of the storage core: nanoseconds per operation, the same source built
 * natively (gcc -O3) and to wasm (emcc -O3 -msimd128) so the two can be compared side by side.
 *
 * Every case builds its own world (setup is not timed), calibrates an iteration count until
 * one run takes at least --target-ms, then times --runs runs and reports min / median / max.
 * After the runs, the case checks that the work really happened (values read back equal the
 * values written, entity counts, tes_world_validate) and aborts on any mismatch.
 *
 * Output: a human table on stdout, and one machine-readable line per case:
 *   RESULT {"case":"spawn_despawn", "per":"spawn+despawn", "median":12.3, ...}
 *   RESULT {"case":"memory_1m_16k", "kind":"memory", "bytes_per_entity":21.4, ...}
 * bench/run-core.mjs runs native and wasm builds alternately and merges those lines. The
 * harness (calibration, timed runs, options, output lines) is bench.h, shared with changes.c.
 *
 * Options: --runs N (default 7); --target-ms N (default 100); --only a,b* (case names, a
 * trailing * matches a prefix); --iters N (fixed iteration count instead of calibration, for
 * callgrind: --toggle-collect=bench_measure then counts exactly the timed runs);
 * --chunk-bytes N (every case at this chunk size, to explore); --no-memory; --list.
 */
#define BENCH_PROGRAM "bench_core"
#include "bench.h"
#include "internal.h" /* recorded_cycle writes commands as bindings/record.ts does */

enum {
    SMALL_POPULATION = 1024,   /* entities already in the archetype of the single-entity cases */
    WORLD_POPULATION = 100000, /* set/get and archetype-batch cases */
    ITERATE_POPULATION = 1000000,
    SPAWN_BATCH = 10000,
    RANDOM_COUNT = 1 << 16, /* random handles cycled by the set/get cases */
    CHUNK_16K = 16384,
    CHUNK_64K = 65536,
};

/* ---------------------------------------------------------------------------------------- */
/* Per-case state                                                                            */
/* ---------------------------------------------------------------------------------------- */

typedef struct bench_state {
    tes_world_t *world;
    uint32_t chunk_bytes; /* 0 = the core's default */
    tes_component_t position, velocity, health, mass, frozen;
    tes_component_t moved;  /* what the add/remove cases toggle */
    tes_component_t set[4]; /* component set of the population */
    uint32_t set_count;
    tes_archetype_t from, to; /* population archetype, and it plus `moved` */
    tes_entity_t *entities;   /* the population, entities[k] has Position.x == k */
    uint32_t entity_count;
    tes_entity_t *batch; /* handles of one spawn batch */
    tes_entity_t *random_entities;
    uint32_t *random_indices; /* random_entities[j] == entities[random_indices[j]] */
    float *raw[4];            /* plain-array limit: x, y, vx, vy */
    uint64_t ops_per_iter;
    uint64_t passes;     /* iteration cases: passes over all entities so far */
    uint64_t last_iters; /* iterations of the latest loop call */
    double last_sum;     /* get cases: sum read by the latest loop call */
} bench_state;

static void world_make(bench_state *s) {
    s->world = bench_world(s->chunk_bytes, &s->position, &s->velocity, &s->health);
    static const tes_field_desc_t kg[] = {{"kg", TES_F32, 1}};
    bench_register(s->world, "Mass", kg, 1, &s->mass);
    bench_register(s->world, "Frozen", NULL, 0, &s->frozen);
}

static void state_free(bench_state *s) {
    tes_world_destroy(s->world);
    free(s->entities);
    free(s->batch);
    free(s->random_entities);
    free(s->random_indices);
    for (int i = 0; i < 4; i++)
        free(s->raw[i]);
}

/* Spawns n entities of the component set with Position.x = their index in s->entities. */
static void spawn_population(bench_state *s, uint32_t n, const tes_component_t *set,
                             uint32_t set_count) {
    memcpy(s->set, set, set_count * sizeof *set);
    s->set_count = set_count;
    s->entity_count = n;
    s->entities = malloc((size_t)n * sizeof *s->entities);
    EXPECT(s->entities != NULL);
    CHECK(tes_spawn_batch(s->world, set, set_count, n, s->entities));
    for (uint32_t k = 0; k < n; k++)
        CHECK(tes_set_number(s->world, s->entities[k], s->position, 0, 0, (double)k));
    CHECK(tes_archetype_find(s->world, set, set_count, &s->from));
}

static void expect_population_intact(bench_state *s) {
    tes_world_stats_t stats;
    CHECK(tes_world_stats(s->world, &stats));
    EXPECT(stats.entity_count == s->entity_count);
    for (uint32_t k = 0; k < s->entity_count; k++) {
        double x;
        CHECK(tes_get_number(s->world, s->entities[k], s->position, 0, 0, &x));
        EXPECT(x == (double)k);
    }
}

static void make_random(bench_state *s) {
    s->random_entities = malloc(RANDOM_COUNT * sizeof *s->random_entities);
    s->random_indices = malloc(RANDOM_COUNT * sizeof *s->random_indices);
    EXPECT(s->random_entities != NULL && s->random_indices != NULL);
    for (uint32_t j = 0; j < RANDOM_COUNT; j++) {
        s->random_indices[j] = rng_next() % s->entity_count;
        s->random_entities[j] = s->entities[s->random_indices[j]];
    }
}

/* ---------------------------------------------------------------------------------------- */
/* 1. spawn + despawn                                                                        */
/* ---------------------------------------------------------------------------------------- */

static void setup_spawn_despawn(bench_state *s) {
    world_make(s);
    spawn_population(s, SMALL_POPULATION, &s->position, 1);
    s->ops_per_iter = 1;
}

static void loop_spawn_despawn(bench_state *s, uint64_t iters) {
    tes_world_t *w = s->world;
    const tes_component_t *set = s->set;
    uint64_t acc = 0;
    for (uint64_t i = 0; i < iters; i++) {
        tes_entity_t e;
        CHECK(tes_spawn(w, set, 1, &e));
        CHECK(tes_despawn(w, e));
        acc += e;
    }
    sink += acc;
}

/* The same through tes_archetype_spawn: no component-set resolution per spawn. */
static void loop_archetype_spawn_despawn(bench_state *s, uint64_t iters) {
    tes_world_t *w = s->world;
    const tes_archetype_t archetype = s->from;
    uint64_t acc = 0;
    for (uint64_t i = 0; i < iters; i++) {
        tes_entity_t e;
        CHECK(tes_archetype_spawn(w, archetype, 1, &e));
        CHECK(tes_despawn(w, e));
        acc += e;
    }
    sink += acc;
}

/* What a JS loop body does (the entity_cycle case of the JS benchmark): inside a run, spawn
 * 1,000 entities with Health given a value each (recorded, applied when the run ends), then in
 * another run despawn them (recorded likewise). One op: one spawn with a value + one despawn. */
enum { CYCLE = 1000 };

/* A population of Position entities, and room for `n` handles: one op per handle. */
static void setup_batch_of(bench_state *s, uint32_t n) {
    world_make(s);
    spawn_population(s, SMALL_POPULATION, &s->position, 1);
    s->batch = malloc(n * sizeof *s->batch);
    EXPECT(s->batch != NULL);
    s->ops_per_iter = n;
}

static void setup_deferred_cycle(bench_state *s) {
    setup_batch_of(s, CYCLE);
}

static void loop_deferred_cycle(bench_state *s, uint64_t iters) {
    tes_world_t *w = s->world;
    const tes_item_t item = {s->health, 0};
    const tes_value_t value = {0, 0, 0, 0};
    for (uint64_t i = 0; i < iters; i++) {
        CHECK(tes_defer_begin(w));
        for (uint32_t k = 0; k < CYCLE; k++) {
            double number = k;
            const tes_items_t items = {&item, 1, &value, 1, &number, 1};
            tes_fault_t fault;
            CHECK(tes_spawn_items(w, &items, 1, &s->batch[k], &fault));
        }
        CHECK(tes_defer_end(w));
        CHECK(tes_defer_begin(w));
        for (uint32_t k = 0; k < CYCLE; k++)
            CHECK(tes_despawn(w, s->batch[k]));
        CHECK(tes_defer_end(w));
    }
}

/* The same cycle as JS records it (bindings/record.ts): each spawn takes its index from the
 * world's handouts, makes its record pending and appends a SPAWN and an INIT_NUMBER command in
 * place, without a call; the despawns are tes_despawn's (JS appends the same command). */
static tes_entity_t record_spawn(tes_world_t *w, tes_archetype_t archetype, tes_component_t c,
                                 double value) {
    if (w->handout_next == w->handout_count) {
        uint32_t n;
        CHECK(tes_defer_handouts(w, &n));
        EXPECT(n > 0);
    }
    if (w->command_count + 2 > w->command_slots) CHECK(tesi_commands_reserve(w, 2, 0));
    uint32_t index = w->handouts[w->handout_next++];
    tesi_record_t *record = tesi_record_at(w, index);
    record->row = TESI_ROW_PENDING | archetype;
    tes_entity_t e = tesi_make_handle(index, record->generation);
    tesi_command_t *cmd = &w->commands[w->command_count];
    cmd[0] = (tesi_command_t){.kind = TESI_CMD_SPAWN, .entity = e, .a = archetype};
    cmd[1] = (tesi_command_t){.kind = TESI_CMD_INIT_NUMBER, .entity = e, .a = c, .value = value};
    w->command_count += 2;
    return e;
}

static void loop_recorded_cycle(bench_state *s, uint64_t iters) {
    tes_world_t *w = s->world;
    tes_archetype_t archetype;
    CHECK(tes_archetype_find(w, &s->health, 1, &archetype));
    for (uint64_t i = 0; i < iters; i++) {
        CHECK(tes_defer_begin(w));
        for (uint32_t k = 0; k < CYCLE; k++)
            s->batch[k] = record_spawn(w, archetype, s->health, k);
        CHECK(tes_defer_end(w));
        CHECK(tes_defer_begin(w));
        for (uint32_t k = 0; k < CYCLE; k++)
            CHECK(tes_despawn(w, s->batch[k]));
        CHECK(tes_defer_end(w));
    }
}

/* The JS add_remove case: inside a run, a tag added to each of 1,000 entities (recorded,
 * applied when the run ends), then removed from each in another run. One op: an add + a remove. */
static void setup_deferred_add_remove(bench_state *s) {
    world_make(s);
    spawn_population(s, CYCLE, &s->position, 1);
    s->moved = s->frozen;
    s->ops_per_iter = CYCLE;
}

static void loop_deferred_add_remove(bench_state *s, uint64_t iters) {
    tes_world_t *w = s->world;
    for (uint64_t i = 0; i < iters; i++) {
        CHECK(tes_defer_begin(w));
        for (uint32_t k = 0; k < CYCLE; k++)
            CHECK(tes_add(w, s->entities[k], s->moved));
        CHECK(tes_defer_end(w));
        CHECK(tes_defer_begin(w));
        for (uint32_t k = 0; k < CYCLE; k++)
            CHECK(tes_remove(w, s->entities[k], s->moved));
        CHECK(tes_defer_end(w));
    }
}

/* The same with a sparse tag: each recorded add or remove is a sparse-set insert or erase. */
static void setup_deferred_sparse(bench_state *s) {
    setup_deferred_add_remove(s);
    CHECK(tes_component_register(
        s->world, &(tes_component_desc_t){"Selected", NULL, 0, TES_COMPONENT_SPARSE}, &s->moved));
}

static void check_population(bench_state *s) {
    expect_population_intact(s);
}

/* ---------------------------------------------------------------------------------------- */
/* 2./3. add + remove of a tag / of a data component on a 3-component entity                 */
/* ---------------------------------------------------------------------------------------- */

static void setup_add_remove_tag(bench_state *s) {
    world_make(s);
    spawn_population(s, SMALL_POPULATION, (tes_component_t[]){s->position, s->velocity, s->health},
                     3);
    s->moved = s->frozen;
    s->ops_per_iter = 1;
}

static void setup_add_remove_component(bench_state *s) {
    world_make(s);
    spawn_population(s, SMALL_POPULATION, (tes_component_t[]){s->position, s->health, s->mass}, 3);
    s->moved = s->velocity;
    s->ops_per_iter = 1;
}

static void loop_add_remove(bench_state *s, uint64_t iters) {
    tes_world_t *w = s->world;
    const tes_entity_t *entities = s->entities;
    const tes_component_t moved = s->moved;
    for (uint64_t i = 0; i < iters; i++) {
        tes_entity_t e = entities[i & (SMALL_POPULATION - 1)];
        CHECK(tes_add(w, e, moved));
        CHECK(tes_remove(w, e, moved));
    }
}

static void check_add_remove(bench_state *s) {
    expect_population_intact(s);
    tes_archetype_info_t info;
    CHECK(tes_archetype_info(s->world, s->from, &info));
    EXPECT(info.entity_count == s->entity_count);
    for (uint32_t k = 0; k < s->entity_count; k++) {
        bool has = true;
        CHECK(tes_has(s->world, s->entities[k], s->moved, &has));
        EXPECT(!has);
    }
}

/* ---------------------------------------------------------------------------------------- */
/* 4./5. set and get one f32 field on random entities                                        */
/* ---------------------------------------------------------------------------------------- */

static void setup_random_access(bench_state *s) {
    world_make(s);
    spawn_population(s, WORLD_POPULATION, (tes_component_t[]){s->position, s->velocity, s->health},
                     3);
    make_random(s);
    s->ops_per_iter = 1;
}

/* Values stay below 2^20, so f32 stores them exactly. */
#define WRITTEN_VALUE(i) ((i)&0xFFFFFu)

static void loop_set_number(bench_state *s, uint64_t iters) {
    tes_world_t *w = s->world;
    const tes_entity_t *random = s->random_entities;
    const tes_component_t position = s->position;
    for (uint64_t i = 0; i < iters; i++) {
        CHECK(tes_set_number(w, random[i & (RANDOM_COUNT - 1)], position, 0, 0,
                             (double)WRITTEN_VALUE(i)));
    }
    s->last_iters = iters;
}

static void loop_set_raw(bench_state *s, uint64_t iters) {
    tes_world_t *w = s->world;
    const tes_entity_t *random = s->random_entities;
    const tes_component_t position = s->position;
    for (uint64_t i = 0; i < iters; i++) {
        float value = (float)WRITTEN_VALUE(i);
        CHECK(tes_set(w, random[i & (RANDOM_COUNT - 1)], position, 0, &value, sizeof value));
    }
    s->last_iters = iters;
}

/* The last write of the latest loop call (no later write can have overwritten it). */
static void check_set(bench_state *s) {
    uint64_t i = s->last_iters - 1;
    double x;
    CHECK(tes_get_number(s->world, s->random_entities[i & (RANDOM_COUNT - 1)], s->position, 0, 0,
                         &x));
    EXPECT(x == (double)WRITTEN_VALUE(i));
}

static void loop_get_number(bench_state *s, uint64_t iters) {
    const tes_world_t *w = s->world;
    const tes_entity_t *random = s->random_entities;
    const tes_component_t position = s->position;
    double sum = 0;
    for (uint64_t i = 0; i < iters; i++) {
        double x;
        CHECK(tes_get_number(w, random[i & (RANDOM_COUNT - 1)], position, 0, 0, &x));
        sum += x;
    }
    sink_number = sum;
    s->last_iters = iters;
    s->last_sum = sum;
}

static void loop_get_raw(bench_state *s, uint64_t iters) {
    const tes_world_t *w = s->world;
    const tes_entity_t *random = s->random_entities;
    const tes_component_t position = s->position;
    double sum = 0;
    for (uint64_t i = 0; i < iters; i++) {
        float x;
        CHECK(tes_get(w, random[i & (RANDOM_COUNT - 1)], position, 0, &x, sizeof x));
        sum += x;
    }
    sink_number = sum;
    s->last_iters = iters;
    s->last_sum = sum;
}

/* Position.x == index, so the expected sum is the sum of the indices read. */
static void check_get(bench_state *s) {
    double expected = 0;
    for (uint64_t i = 0; i < s->last_iters; i++)
        expected += (double)s->random_indices[i & (RANDOM_COUNT - 1)];
    EXPECT(s->last_sum == expected);
    expect_population_intact(s);
}

/* ---------------------------------------------------------------------------------------- */
/* 6. batch forms                                                                            */
/* ---------------------------------------------------------------------------------------- */

static void setup_spawn_batch(bench_state *s) {
    setup_batch_of(s, SPAWN_BATCH);
}

static void loop_spawn_batch(bench_state *s, uint64_t iters) {
    tes_world_t *w = s->world;
    for (uint64_t i = 0; i < iters; i++) {
        CHECK(tes_spawn_batch(w, s->set, 1, SPAWN_BATCH, s->batch));
        CHECK(tes_despawn_batch(w, s->batch, SPAWN_BATCH));
    }
    sink += s->batch[SPAWN_BATCH - 1];
}

static void check_spawn_batch(bench_state *s) {
    expect_population_intact(s);
    EXPECT(!tes_is_alive(s->world, s->batch[0]));
    EXPECT(!tes_is_alive(s->world, s->batch[SPAWN_BATCH - 1]));
}

/* The population archetype (Position.x == index) and the archetype it plus `moved` is. */
static void setup_archetype_batch(bench_state *s, const tes_component_t *set,
                                  tes_component_t moved) {
    spawn_population(s, WORLD_POPULATION, set, 3);
    s->moved = moved;
    tes_component_t with[4] = {set[0], set[1], set[2], moved};
    CHECK(tes_archetype_find(s->world, with, 4, &s->to));
    s->ops_per_iter = WORLD_POPULATION;
}

static void setup_archetype_tag(bench_state *s) {
    world_make(s);
    setup_archetype_batch(s, (tes_component_t[]){s->position, s->velocity, s->health}, s->frozen);
}

static void setup_archetype_component(bench_state *s) {
    world_make(s);
    setup_archetype_batch(s, (tes_component_t[]){s->position, s->health, s->mass}, s->velocity);
}

static void loop_archetype_add_remove(bench_state *s, uint64_t iters) {
    tes_world_t *w = s->world;
    for (uint64_t i = 0; i < iters; i++) {
        CHECK(tes_archetype_add(w, s->from, s->moved));
        CHECK(tes_archetype_remove(w, s->to, s->moved));
    }
}

static void check_archetype_batch(bench_state *s) {
    tes_archetype_info_t info;
    CHECK(tes_archetype_info(s->world, s->from, &info));
    EXPECT(info.entity_count == s->entity_count);
    CHECK(tes_archetype_info(s->world, s->to, &info));
    EXPECT(info.entity_count == 0);
    expect_population_intact(s);
}

/* ---------------------------------------------------------------------------------------- */
/* 7. iteration: x += vx, y += vy over (Position, Velocity) by walking chunks                */
/* ---------------------------------------------------------------------------------------- */

static float velocity_of(tes_entity_t e) {
    return (float)(tes_entity_index(e) & 7u);
}

static void setup_iterate(bench_state *s) {
    world_make(s);
    tes_component_t set[2] = {s->position, s->velocity};
    CHECK(tes_spawn_batch(s->world, set, 2, ITERATE_POPULATION, NULL));
    CHECK(tes_archetype_find(s->world, set, 2, &s->from));
    tes_archetype_info_t info;
    CHECK(tes_archetype_info(s->world, s->from, &info));
    EXPECT(info.entity_count == ITERATE_POPULATION);
    for (uint32_t c = 0; c < info.chunk_count; c++) {
        tes_chunk_info_t chunk;
        void *vx, *vy;
        CHECK(tes_chunk_info(s->world, s->from, c, &chunk));
        CHECK(tes_chunk_column(s->world, s->from, c, s->velocity, 0, &vx));
        CHECK(tes_chunk_column(s->world, s->from, c, s->velocity, 1, &vy));
        for (uint32_t j = 0; j < chunk.count; j++) {
            ((float *)vx)[j] = velocity_of(chunk.entities[j]);
            ((float *)vy)[j] = 1.0f;
        }
    }
    s->ops_per_iter = ITERATE_POPULATION;
}

static void loop_iterate(bench_state *s, uint64_t iters) {
    tes_world_t *w = s->world;
    const tes_archetype_t a = s->from;
    const tes_component_t position = s->position, velocity = s->velocity;
    for (uint64_t i = 0; i < iters; i++) {
        tes_archetype_info_t info;
        CHECK(tes_archetype_info(w, a, &info));
        for (uint32_t c = 0; c < info.chunk_count; c++) {
            tes_chunk_info_t chunk;
            void *x, *y, *vx, *vy;
            CHECK(tes_chunk_info(w, a, c, &chunk));
            CHECK(tes_chunk_column(w, a, c, position, 0, &x));
            CHECK(tes_chunk_column(w, a, c, position, 1, &y));
            CHECK(tes_chunk_column(w, a, c, velocity, 0, &vx));
            CHECK(tes_chunk_column(w, a, c, velocity, 1, &vy));
            bench_integrate(x, y, vx, vy, chunk.count);
        }
    }
    s->passes += iters;
}

static void check_iterate(bench_state *s) {
    tes_archetype_info_t info;
    CHECK(tes_archetype_info(s->world, s->from, &info));
    uint32_t seen = 0;
    for (uint32_t c = 0; c < info.chunk_count; c++) {
        tes_chunk_info_t chunk;
        void *x, *y;
        CHECK(tes_chunk_info(s->world, s->from, c, &chunk));
        CHECK(tes_chunk_column(s->world, s->from, c, s->position, 0, &x));
        CHECK(tes_chunk_column(s->world, s->from, c, s->position, 1, &y));
        for (uint32_t j = 0; j < chunk.count; j++) {
            EXPECT(((float *)x)[j] == (float)s->passes * velocity_of(chunk.entities[j]));
            EXPECT(((float *)y)[j] == (float)s->passes);
        }
        seen += chunk.count;
    }
    EXPECT(seen == ITERATE_POPULATION);
}

/* The limit: the same loop over four plain arrays. */
static void setup_iterate_raw(bench_state *s) {
    for (int i = 0; i < 4; i++) {
        s->raw[i] = aligned_alloc(16, ITERATE_POPULATION * sizeof(float));
        EXPECT(s->raw[i] != NULL);
    }
    for (uint32_t j = 0; j < ITERATE_POPULATION; j++) {
        s->raw[0][j] = s->raw[1][j] = 0.0f;
        s->raw[2][j] = (float)(j & 7u);
        s->raw[3][j] = 1.0f;
    }
    s->ops_per_iter = ITERATE_POPULATION;
}

static void loop_iterate_raw(bench_state *s, uint64_t iters) {
    for (uint64_t i = 0; i < iters; i++)
        bench_integrate(s->raw[0], s->raw[1], s->raw[2], s->raw[3], ITERATE_POPULATION);
    s->passes += iters;
}

static void check_iterate_raw(bench_state *s) {
    for (uint32_t j = 0; j < ITERATE_POPULATION; j++) {
        EXPECT(s->raw[0][j] == (float)s->passes * (float)(j & 7u));
        EXPECT(s->raw[1][j] == (float)s->passes);
    }
}

/* ---------------------------------------------------------------------------------------- */
/* Cases and driver                                                                          */
/* ---------------------------------------------------------------------------------------- */

typedef struct bench_case {
    const char *name;  /* stable id, used by --only and in RESULT lines */
    const char *label; /* human description */
    const char *per;   /* what one op is */
    uint32_t chunk_bytes;
    void (*setup)(bench_state *s);
    void (*loop)(bench_state *s, uint64_t iters);
    void (*check)(bench_state *s);
} bench_case;

static const bench_case cases[] = {
    {"spawn_despawn", "spawn + despawn, 1 data component", "spawn+despawn", 0, setup_spawn_despawn,
     loop_spawn_despawn, check_population},
    {"spawn_despawn_16k", "spawn + despawn, 1 data component, 16 KiB chunks", "spawn+despawn",
     CHUNK_16K, setup_spawn_despawn, loop_spawn_despawn, check_population},
    {"archetype_spawn_despawn", "tes_archetype_spawn(1) + despawn, 1 data component",
     "spawn+despawn", 0, setup_spawn_despawn, loop_archetype_spawn_despawn, check_population},
    {"deferred_cycle", "1k recorded spawns with a value, then 1k recorded despawns",
     "spawn+despawn", 0, setup_deferred_cycle, loop_deferred_cycle, check_population},
    {"recorded_cycle", "1k spawns with a value recorded as JS does, then 1k recorded despawns",
     "spawn+despawn", 0, setup_deferred_cycle, loop_recorded_cycle, check_population},
    {"deferred_add_remove", "1k recorded tag adds, then 1k recorded removes", "add+remove", 0,
     setup_deferred_add_remove, loop_deferred_add_remove, check_add_remove},
    {"deferred_sparse", "1k recorded sparse tag adds, then 1k recorded removes", "add+remove", 0,
     setup_deferred_sparse, loop_deferred_add_remove, check_add_remove},
    {"add_remove_tag", "add + remove tag on a 3-component entity", "add+remove", 0,
     setup_add_remove_tag, loop_add_remove, check_add_remove},
    {"add_remove_component", "add + remove Velocity on a 3-component entity", "add+remove", 0,
     setup_add_remove_component, loop_add_remove, check_add_remove},
    {"set_number", "tes_set_number f32, random of 100k", "set", 0, setup_random_access,
     loop_set_number, check_set},
    {"set_raw", "tes_set f32 bytes, random of 100k", "set", 0, setup_random_access, loop_set_raw,
     check_set},
    {"get_number", "tes_get_number f32, random of 100k", "get", 0, setup_random_access,
     loop_get_number, check_get},
    {"get_raw", "tes_get f32 bytes, random of 100k", "get", 0, setup_random_access, loop_get_raw,
     check_get},
    {"spawn_batch", "spawn_batch + despawn_batch of 10k", "entity", 0, setup_spawn_batch,
     loop_spawn_batch, check_spawn_batch},
    {"spawn_batch_16k", "spawn_batch + despawn_batch of 10k, 16 KiB chunks", "entity", CHUNK_16K,
     setup_spawn_batch, loop_spawn_batch, check_spawn_batch},
    {"archetype_tag", "archetype_add + _remove tag, 100k (chunk steal)", "entity", 0,
     setup_archetype_tag, loop_archetype_add_remove, check_archetype_batch},
    {"archetype_component", "archetype_add + _remove Velocity, 100k (copy)", "entity", 0,
     setup_archetype_component, loop_archetype_add_remove, check_archetype_batch},
    {"iterate", "iterate 1M (Position, Velocity), 16 KiB chunks", "entity", CHUNK_16K,
     setup_iterate, loop_iterate, check_iterate},
    {"iterate_64k", "iterate 1M (Position, Velocity), 64 KiB chunks", "entity", CHUNK_64K,
     setup_iterate, loop_iterate, check_iterate},
    {"iterate_raw", "iterate 1M, four plain float arrays (limit)", "entity", 0, setup_iterate_raw,
     loop_iterate_raw, check_iterate_raw},
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
    bench_state s = {.chunk_bytes = opt->chunk_bytes ? opt->chunk_bytes : c->chunk_bytes};
    c->setup(&s);
    case_run run = {c, &s};
    uint64_t iters = bench_calibrate(case_body, &run, opt);

    double samples[64];
    int runs = bench_runs(opt);
    for (int r = 0; r < runs; r++) {
        s.last_iters = iters;
        samples[r] =
            bench_measure(case_body, &run, iters) / ((double)iters * (double)s.ops_per_iter);
    }
    c->check(&s);
    if (s.world) CHECK(tes_world_validate(s.world));

    bench_report(c->name, c->label, c->per, bench_chunk_bytes(s.world), s.ops_per_iter, iters, runs,
                 samples);
    state_free(&s);
}

/* 8. Bytes per entity of a (Position, Velocity) archetype, spawned one by one. */
static void run_memory(uint32_t chunk_bytes, uint32_t n, const char *name) {
    bench_state s = {.chunk_bytes = chunk_bytes};
    world_make(&s);
    tes_world_stats_t before, after;
    CHECK(tes_world_stats(s.world, &before));
    tes_component_t set[2] = {s.position, s.velocity};
    for (uint32_t i = 0; i < n; i++) {
        tes_entity_t e;
        CHECK(tes_spawn(s.world, set, 2, &e));
    }
    CHECK(tes_world_stats(s.world, &after));
    EXPECT(after.entity_count == n);
    tes_archetype_t a;
    tes_archetype_info_t info;
    CHECK(tes_archetype_find(s.world, set, 2, &a));
    CHECK(tes_archetype_info(s.world, a, &info));
    double per_entity = (double)(after.bytes_allocated - before.bytes_allocated) / n;
    printf("memory %-45s %9.2f bytes/entity (raw fields 16; %" PRIu32 " chunks of %" PRIu32
           " entities, %" PRIu32 "-slot entity table)\n",
           name, per_entity, info.chunk_count, info.capacity, after.entity_capacity);
    printf("RESULT {\"case\":\"%s\",\"kind\":\"memory\",\"entities\":%" PRIu32
           ",\"chunk_bytes\":%" PRIu32 ",\"bytes_per_entity\":%.4f,\"raw_bytes_per_entity\":16,"
           "\"bytes_before\":%" PRIu64 ",\"bytes_after\":%" PRIu64 ",\"chunk_count\":%" PRIu32
           ",\"chunk_capacity\":%" PRIu32 ",\"entity_capacity\":%" PRIu32 "}\n",
           name, n, after.chunk_bytes, per_entity, before.bytes_allocated, after.bytes_allocated,
           info.chunk_count, info.capacity, after.entity_capacity);
    fflush(stdout);
    state_free(&s);
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

    if (opt.memory && opt.fixed_iters == 0) {
        static const struct {
            uint32_t chunk_bytes, n;
            const char *name;
        } memory_cases[] = {
            {CHUNK_16K, 10000, "memory_10k_16k"},
            {CHUNK_16K, 1000000, "memory_1m_16k"},
            {CHUNK_64K, 10000, "memory_10k_64k"},
            {CHUNK_64K, 1000000, "memory_1m_64k"},
        };
        for (size_t m = 0; m < sizeof memory_cases / sizeof memory_cases[0]; m++)
            if (selected(&opt, memory_cases[m].name))
                run_memory(memory_cases[m].chunk_bytes, memory_cases[m].n, memory_cases[m].name);
    }
    return 0;
}
