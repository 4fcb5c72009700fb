/*
 * How archetypes scale with the number of component types a world knows (issue 18, item 4).
 *
 * For T in 100, 1,000 and 4,000 tag types: 20,000 rounds of spawn an entity with 3 random
 * types, add a 4th, despawn it. Each round makes up to two archetypes that end up empty; the
 * run reports its time, the archetypes it made and the bytes the world holds per archetype
 * (tes_world_stats: bytes_allocated, archetype_count) beside a world of one archetype. A fixed
 * seed makes the rounds the same in every build. Prints a markdown table (npm run
 * bench:archetypes writes it to bench/results/archetypes.md).
 */
#define _POSIX_C_SOURCE 199309L
#include "tessera.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define ROUNDS 20000u

static void check(tes_result_t result, const char *what) {
    if (result == TES_OK) return;
    fprintf(stderr, "bench_archetypes: %s -> %s\n", what, tes_result_name(result));
    exit(1);
}

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static uint32_t next(uint64_t *state) { /* xorshift64* */
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    return (uint32_t)((*state * 2685821657736338717ull) >> 32);
}

typedef struct {
    double ms;
    uint32_t archetypes;
    double bytes_per_archetype;
    uint64_t bytes;
    double reclaim_ms;        /* tes_archetypes_reclaim after the rounds */
    uint32_t reclaimed;       /* archetypes it freed */
    uint64_t bytes_reclaimed; /* what the world held after the rounds beyond before, after it */
} run_t;

static run_t run(uint32_t types) {
    tes_world_t *world;
    check(tes_world_create(NULL, &world), "tes_world_create");
    tes_component_t *ids = malloc(types * sizeof *ids);
    if (!ids) exit(1);
    for (uint32_t i = 0; i < types; i++) {
        char name[16];
        snprintf(name, sizeof name, "T%u", i);
        tes_component_desc_t desc = {.name = name};
        check(tes_component_register(world, &desc, &ids[i]), "tes_component_register");
    }
    tes_world_stats_t before;
    check(tes_world_stats(world, &before), "tes_world_stats");
    uint64_t seed = 0x9E3779B97F4A7C15ull;
    double start = now_ms();
    for (uint32_t r = 0; r < ROUNDS; r++) {
        tes_component_t set[3];
        uint32_t k = 0;
        while (k < 3) {
            tes_component_t c = ids[next(&seed) % types];
            int seen = 0;
            for (uint32_t j = 0; j < k; j++)
                seen |= set[j] == c;
            if (!seen) set[k++] = c;
        }
        tes_component_t fourth;
        int clash;
        do {
            fourth = ids[next(&seed) % types];
            clash = fourth == set[0] || fourth == set[1] || fourth == set[2];
        } while (clash);
        tes_entity_t e;
        check(tes_spawn(world, set, 3, &e), "tes_spawn");
        check(tes_add(world, e, fourth), "tes_add");
        check(tes_despawn(world, e), "tes_despawn");
    }
    double ms = now_ms() - start;
    tes_world_stats_t after;
    check(tes_world_stats(world, &after), "tes_world_stats");
    check(tes_world_validate(world), "tes_world_validate");
    run_t out = {
        .ms = ms,
        .archetypes = after.archetype_count - before.archetype_count,
        .bytes = after.bytes_allocated - before.bytes_allocated,
    };
    out.bytes_per_archetype = out.archetypes ? (double)out.bytes / out.archetypes : 0;
    start = now_ms();
    check(tes_archetypes_reclaim(world, &out.reclaimed), "tes_archetypes_reclaim");
    out.reclaim_ms = now_ms() - start;
    check(tes_world_validate(world), "tes_world_validate");
    tes_world_stats_t reclaimed;
    check(tes_world_stats(world, &reclaimed), "tes_world_stats");
    out.bytes_reclaimed = reclaimed.bytes_allocated - before.bytes_allocated;
    tes_world_destroy(world);
    free(ids);
    return out;
}

int main(void) {
    static const uint32_t types[] = {100, 1000, 4000};
    run_t runs[3];
    for (int i = 0; i < 3; i++)
        runs[i] = run(types[i]);
    printf("| component types | rounds | time (ms) | vs 100 types | archetypes left | bytes left | "
           "bytes per archetype | reclaim (ms) | reclaimed | bytes left after |\n");
    printf("|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
    for (int i = 0; i < 3; i++) {
        printf("| %u | %u | %.1f | %.2fx | %u | %llu | %.0f | %.1f | %u | %llu |\n", types[i],
               ROUNDS, runs[i].ms, runs[i].ms / runs[0].ms, runs[i].archetypes,
               (unsigned long long)runs[i].bytes, runs[i].bytes_per_archetype, runs[i].reclaim_ms,
               runs[i].reclaimed, (unsigned long long)runs[i].bytes_reclaimed);
    }
    return 0;
}
