/*
 * The harness shared by the C core benchmarks (core.c, changes.c): checked calls, the clock,
 * calibration, the timed runs, command-line options and the output lines.
 *
 * A program defines BENCH_PROGRAM (its name, for messages) and includes this header first.
 * Each of its cases has a loop `body(arg, iters)`; the harness calibrates an iteration count
 * until one call takes at least --target-ms (or takes --iters), times --runs calls through
 * bench_measure() and prints min / median / max per op:
 *   case label                                  median  min  max  ns/<per>
 *   RESULT {"case":..., "kind":"time", "median":..., "samples":[...]}
 *
 * Untimed work inside a loop (e.g. preparing the next op): wrap it in bench_untimed(fn, arg).
 * Its time is subtracted from the call's, and under callgrind --toggle-collect=bench_exclude
 * (beside --toggle-collect=bench_measure) its instructions are not counted either. What stays
 * counted of an untimed section is about one clock read.
 */
#ifndef TES_BENCH_H
#define TES_BENCH_H

#define _POSIX_C_SOURCE 199309L

#include "tessera.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef BENCH_PROGRAM
#error "define BENCH_PROGRAM (the program's name) before including bench.h"
#endif

#define BENCH_UNUSED __attribute__((unused))
/* Kept as one real function under its own name (no inlining, no specialised clones such as
 * bench_measure.constprop.0, which callgrind --toggle-collect would not match). */
#if defined(__clang__)
#define BENCH_KEEP __attribute__((noinline))
#else
#define BENCH_KEEP __attribute__((noinline, noipa))
#endif

/* Results of timed loops go here, so the compiler cannot drop the work. */
static volatile uint64_t sink BENCH_UNUSED;
static volatile double sink_number BENCH_UNUSED;

static void fail(int line, const char *what, tes_result_t result) {
    fprintf(stderr, BENCH_PROGRAM ": line %d: %s -> %s (%s)\n", line, what, tes_result_name(result),
            tes_result_message(result));
    exit(1);
}

/* Every core call is checked, also in the timed loops: users check results too. */
#define CHECK(call)                                                        \
    do {                                                                   \
        tes_result_t check_result_ = (call);                               \
        if (check_result_ != TES_OK) fail(__LINE__, #call, check_result_); \
    } while (0)

#define EXPECT(cond)                                                                         \
    do {                                                                                     \
        if (!(cond)) {                                                                       \
            fprintf(stderr, BENCH_PROGRAM ": line %d: check failed: %s\n", __LINE__, #cond); \
            exit(1);                                                                         \
        }                                                                                    \
    } while (0)

static inline double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* xorshift64: the same sequence in every build. */
static uint64_t rng_state BENCH_UNUSED = 0x9E3779B97F4A7C15ull;
static inline uint32_t rng_next(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 32);
}

/* ---------------------------------------------------------------------------------------- */
/* Options                                                                                   */
/* ---------------------------------------------------------------------------------------- */

typedef struct options {
    int runs;
    double target_ns;
    uint64_t fixed_iters; /* 0 = calibrate */
    const char *only;     /* comma-separated case names, NULL = all */
    uint32_t chunk_bytes; /* nonzero: overrides every case's chunk size (exploration) */
    bool memory;
    bool list; /* --list: print the cases and exit */
} options;

/* Parses the options every program takes; exits with a usage message on anything else. */
static inline options bench_options(int argc, char **argv) {
    options opt = {.runs = 7, .target_ns = 100e6, .memory = true};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--runs") == 0 && v) {
            opt.runs = atoi(v), i++;
        } else if (strcmp(a, "--target-ms") == 0 && v) {
            opt.target_ns = atof(v) * 1e6, i++;
        } else if (strcmp(a, "--iters") == 0 && v) {
            opt.fixed_iters = strtoull(v, NULL, 10), i++;
        } else if (strcmp(a, "--only") == 0 && v) {
            opt.only = v, i++;
        } else if (strcmp(a, "--chunk-bytes") == 0 && v) {
            opt.chunk_bytes = (uint32_t)strtoul(v, NULL, 10), i++;
        } else if (strcmp(a, "--no-memory") == 0) {
            opt.memory = false;
        } else if (strcmp(a, "--list") == 0) {
            opt.list = true;
        } else {
            fprintf(stderr, "usage: " BENCH_PROGRAM " [--runs N] [--target-ms N] [--iters N] "
                            "[--only a,b] [--chunk-bytes N] [--no-memory] [--list]\n");
            exit(2);
        }
    }
    if (opt.runs < 1) opt.runs = 1;
    return opt;
}

/* --only takes comma-separated case names; a trailing '*' matches a prefix ("iterate*"). */
static inline bool selected(const options *opt, const char *name) {
    if (opt->only == NULL) return true;
    const char *p = opt->only;
    while (*p) {
        size_t len = strcspn(p, ",");
        if (len > 0 && p[len - 1] == '*') {
            if (strncmp(p, name, len - 1) == 0) return true;
        } else if (len > 0 && strlen(name) == len && strncmp(p, name, len) == 0) {
            return true;
        }
        p += len;
        if (*p == ',') p++;
    }
    return false;
}

/* The INFO line and the table header. */
static inline void bench_print_header(const options *opt) {
#if defined(__EMSCRIPTEN__)
    const char *platform = "wasm";
#else
    const char *platform = "native";
#endif
    printf("INFO {\"platform\":\"%s\",\"compiler\":\"%s\",\"runs\":%d,\"target_ms\":%.0f,"
           "\"fixed_iters\":%" PRIu64 "}\n",
           platform, __VERSION__, opt->runs, opt->target_ns / 1e6, opt->fixed_iters);
    printf("%-52s %9s %9s %9s  (%s, %d runs)\n", "case", "median", "min", "max", platform,
           opt->runs);
}

/* ---------------------------------------------------------------------------------------- */
/* Timing                                                                                    */
/* ---------------------------------------------------------------------------------------- */

/* One loop call: `iters` iterations of a case's op. */
typedef void (*bench_body_fn)(void *arg, uint64_t iters);

static double bench_excluded_ns; /* untimed time inside the current loop call */
static bool bench_measuring;     /* inside bench_measure */

/* Untimed sections while measuring run through here: callgrind --toggle-collect=bench_exclude
 * switches counting off inside (it is on inside bench_measure). External and noinline so the
 * symbol survives -O3 under its own name. */
void bench_exclude(void (*fn)(void *), void *arg);
BENCH_KEEP void bench_exclude(void (*fn)(void *), void *arg) {
    fn(arg);
}

/* Runs fn(arg) inside a loop call without counting its time. */
static inline BENCH_UNUSED void bench_untimed(void (*fn)(void *), void *arg) {
    double t0 = now_ns();
    if (bench_measuring) {
        bench_exclude(fn, arg);
    } else {
        fn(arg);
    }
    bench_excluded_ns += now_ns() - t0;
}

static inline double time_loop(bench_body_fn body, void *arg, uint64_t iters) {
    bench_excluded_ns = 0;
    double t0 = now_ns();
    body(arg, iters);
    return now_ns() - t0 - bench_excluded_ns;
}

/* The timed runs go through here and nowhere else: callgrind --toggle-collect=bench_measure.
 * External and noinline so the symbol survives -O3 under its own name. */
double bench_measure(bench_body_fn body, void *arg, uint64_t iters);
BENCH_KEEP double bench_measure(bench_body_fn body, void *arg, uint64_t iters) {
    bench_measuring = true;
    double t = time_loop(body, arg, iters);
    bench_measuring = false;
    return t;
}

/* The iteration count of the timed runs: --iters after a short warm-up, or doubled-ish until
 * one call takes at least --target-ms. */
static inline uint64_t bench_calibrate(bench_body_fn body, void *arg, const options *opt) {
    uint64_t iters = opt->fixed_iters;
    if (iters == 0) {
        iters = 1;
        for (;;) {
            double t = time_loop(body, arg, iters);
            if (t >= opt->target_ns) break;
            double scale = t > 0 ? opt->target_ns * 1.15 / t : 16.0;
            if (scale > 16.0) scale = 16.0;
            if (scale < 1.5) scale = 1.5;
            iters = (uint64_t)((double)iters * scale) + 1;
        }
    } else {
        time_loop(body, arg, iters / 8 + 1); /* warm-up, not counted by callgrind */
    }
    return iters;
}

/* Timed runs per case (at most 64). */
static inline int bench_runs(const options *opt) {
    return opt->runs > 64 ? 64 : opt->runs;
}

static int compare_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Prints a case's human line and RESULT line; samples are ns per op, in run order. */
static inline void bench_report(const char *name, const char *label, const char *per,
                                uint32_t chunk_bytes, uint64_t ops_per_iter, uint64_t iters,
                                int runs, const double *samples) {
    double sorted[64];
    memcpy(sorted, samples, (size_t)runs * sizeof *samples);
    qsort(sorted, (size_t)runs, sizeof *sorted, compare_double);
    double median = runs % 2 ? sorted[runs / 2] : (sorted[runs / 2 - 1] + sorted[runs / 2]) / 2;
    printf("%-52s %9.2f %9.2f %9.2f  ns/%s\n", label, median, sorted[0], sorted[runs - 1], per);
    printf("RESULT {\"case\":\"%s\",\"kind\":\"time\",\"label\":\"%s\",\"per\":\"%s\","
           "\"chunk_bytes\":%" PRIu32 ",\"ops_per_iter\":%" PRIu64 ",\"iters\":%" PRIu64
           ",\"runs\":%d,\"median\":%.4f,\"min\":%.4f,\"max\":%.4f,\"samples\":[",
           name, label, per, chunk_bytes, ops_per_iter, iters, runs, median, sorted[0],
           sorted[runs - 1]);
    for (int r = 0; r < runs; r++)
        printf("%s%.4f", r ? "," : "", samples[r]);
    printf("]}\n");
    fflush(stdout);
}

/* Chunk bytes of a world, for the report (0 without a world). */
static inline uint32_t bench_chunk_bytes(const tes_world_t *world) {
    if (!world) return 0;
    tes_world_stats_t stats;
    CHECK(tes_world_stats(world, &stats));
    return stats.chunk_bytes;
}

/* The components both programs start from: Position and Velocity (x, y) and Health (hp), f32. */
static const tes_field_desc_t bench_xy_fields[] BENCH_UNUSED = {{"x", TES_F32, 1},
                                                                {"y", TES_F32, 1}};
static const tes_field_desc_t bench_hp_fields[] BENCH_UNUSED = {{"hp", TES_F32, 1}};

static inline BENCH_UNUSED void bench_register(tes_world_t *world, const char *name,
                                               const tes_field_desc_t *fields, uint32_t field_count,
                                               tes_component_t *id) {
    CHECK(tes_component_register(world, &(tes_component_desc_t){name, fields, field_count}, id));
}

/* A world of chunk_bytes (0 = the core's default) with Position, Velocity and Health
 * registered, in that order. */
static inline BENCH_UNUSED tes_world_t *bench_world(uint32_t chunk_bytes, tes_component_t *position,
                                                    tes_component_t *velocity,
                                                    tes_component_t *health) {
    tes_world_desc_t desc = {.chunk_bytes = chunk_bytes};
    tes_world_t *world = NULL;
    CHECK(tes_world_create(&desc, &world));
    bench_register(world, "Position", bench_xy_fields, 2, position);
    bench_register(world, "Velocity", bench_xy_fields, 2, velocity);
    bench_register(world, "Health", bench_hp_fields, 1, health);
    return world;
}

/* x += vx, y += vy over n rows: the integrate step of the iteration cases. */
static inline BENCH_UNUSED void bench_integrate(float *restrict x, float *restrict y,
                                                const float *restrict vx, const float *restrict vy,
                                                uint32_t n) {
    for (uint32_t j = 0; j < n; j++) {
        x[j] += vx[j];
        y[j] += vy[j];
    }
}

#endif /* TES_BENCH_H */
