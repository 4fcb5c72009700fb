/* Writes the seed corpus of fuzz_delta (tests/fuzz/corpus/delta/), natively, from the same
 * deterministic source world the fuzz target takes its replica's keyframe from (it includes
 * fuzz_delta.c): after that keyframe, 20 ticks of random changes, each followed by a delta from
 * the keyframe's tick (so it carries everything since, and applies to the fuzz target's replica),
 * plus later keyframes (the last after the entities past the first one's went) and a few deltas
 * chained from the previous tick (refused with DELTA_BASELINE: raw material for the mutator).
 * Each seed is one mode byte (see fuzz_delta.c) and a delta, named <what>-<tick>-m<mode>. Every
 * seed is checked to apply (or be a no-op, or be refused) as intended, and to pass the fuzz
 * target's checks.
 *
 * The generated seeds are only valid for the current delta format and encoder; whenever either
 * changes, regenerate them with the commands below.
 *
 *   cmake --preset fuzz && cmake --build --preset fuzz --target make_delta_seeds
 *   build/fuzz/make_delta_seeds tests/fuzz/corpus/delta          # (re)write the seeds
 *   build/fuzz/make_delta_seeds --check tests/fuzz/corpus/delta  # ctest fuzz.delta.seeds
 *
 * --check fails when a committed seed differs from what this writes now (the delta format or
 * the encoder changed): regenerate them then. Other files in the folder (inputs the fuzzer
 * found) are left alone. */
#include "fuzz_delta.c"

#include <stdio.h>

typedef enum expect_t { APPLIES, NO_OP, BASELINE } expect_t;

typedef struct seed_t {
    char name[64];
    uint8_t *bytes; /* mode byte, then the delta */
    uint32_t size;
    expect_t expect;
} seed_t;

static seed_t seeds[128];
static uint32_t seed_count;

static void add(const char *what, uint32_t step, uint8_t mode, const uint8_t *delta, uint32_t size,
                expect_t expect) {
    if (seed_count == sizeof seeds / sizeof *seeds) abort();
    seed_t *s = &seeds[seed_count++];
    snprintf(s->name, sizeof s->name, "%s-%02u-m%u", what, step, mode);
    s->size = size + 1;
    s->bytes = malloc(s->size);
    if (!s->bytes) abort();
    s->bytes[0] = mode;
    memcpy(s->bytes + 1, delta, size);
    s->expect = expect;
}

/* Applies as intended to a fresh replica of its variant, and passes the fuzz target. */
static bool works(const seed_t *s) {
    tes_world_t *w = replica_create((s->bytes[0] >> 1) & 3);
    bool applied = false;
    tes_result_t r = tes_delta_apply(w, s->bytes + 1, s->size - 1, &applied);
    tes_world_destroy(w);
    bool ok = s->expect == APPLIES ? r == TES_OK && applied
              : s->expect == NO_OP ? r == TES_OK && !applied
                                   : r == TES_ERR_DELTA_BASELINE;
    if (!ok) fprintf(stderr, "%s: %s, applied %d\n", s->name, tes_result_name(r), applied);
    LLVMFuzzerTestOneInput(s->bytes, s->size);
    return ok;
}

/* Whether the file holds exactly the seed. */
static bool same_file(const char *path, const seed_t *s) {
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    uint8_t *got = malloc(s->size + 1);
    if (!got) abort();
    size_t n = fread(got, 1, s->size + 1, f);
    fclose(f);
    bool same = n == s->size && memcmp(got, s->bytes, n) == 0;
    free(got);
    return same;
}

int main(int argc, char **argv) {
    bool check = argc == 3 && strcmp(argv[1], "--check") == 0;
    if (argc != 2 && !check) {
        fprintf(stderr, "usage: %s [--check] <corpus dir>\n", argv[0]);
        return 2;
    }
    const char *dir = argv[argc - 1];

    source_t s;
    const uint8_t *bytes;
    uint32_t size;
    uint64_t keyframe_tick, last, tick;
    source_create(&s, &bytes, &size, &keyframe_tick);
    uint32_t top = 0; /* the keyframe's highest entity index */
    for (uint32_t i = 0; i < s.n; i++) {
        if (tes_entity_index(s.live[i]) > top) top = tes_entity_index(s.live[i]);
    }
    add("keyframe", 0, 7, bytes, size, APPLIES); /* to a replica at tick 0 */
    add("keyframe", 0, 1, bytes, size, NO_OP);   /* to one at its tick already */
    last = keyframe_tick;
    for (uint32_t step = 1; step <= 20; step++) {
        uint32_t changes = 2 + below(&s, 4);
        for (uint32_t i = 0; i < changes; i++)
            source_change(&s, step * 10 + i);
        if (step >= 2 && step <= 4) {
            must(tes_delta_encode(s.rep, last, &bytes, &size, &tick));
            add("chained", step, 1, bytes, size, BASELINE);
        }
        must(tes_delta_encode(s.rep, keyframe_tick, &bytes, &size, &last));
        add("delta", step, 1, bytes, size, APPLIES);
        if (step % 4 == 1) add("delta", step, 3, bytes, size, APPLIES);
        if (step % 5 == 0) add("delta", step, 5, bytes, size, APPLIES);
        if (step == 20) add("delta", step, 0, bytes, size, APPLIES);
        if (step % 7 == 0 || step == 20) {
            must(tes_delta_encode(s.rep, 0, &bytes, &size, &tick));
            add("keyframe", step, 1, bytes, size, APPLIES);
            if (step == 20) add("keyframe", step, 7, bytes, size, APPLIES);
        }
    }
    /* Every entity at or past the keyframe's highest index goes: keyframe-21 then lacks
     * entities the replica (at the first keyframe) has past its last record. */
    for (uint32_t i = 0; i < s.n; i++) {
        if (tes_entity_index(s.live[i]) >= top && tes_is_alive(s.world, s.live[i])) {
            must(tes_despawn(s.world, s.live[i]));
        }
    }
    must(tes_delta_encode(s.rep, keyframe_tick, &bytes, &size, &tick));
    add("delta", 21, 1, bytes, size, APPLIES);
    must(tes_delta_encode(s.rep, 0, &bytes, &size, &tick));
    add("keyframe", 21, 1, bytes, size, APPLIES);
    /* Three entities at the highest indices a handle can name (the table filled, then all but
     * them despawned), with a sparse member and pairs: a keyframe whose replica must allocate
     * pages for those indices, not the table below them. */
    tes_world_stats_t stats;
    must(tes_world_stats(s.world, &stats));
    /* Every fresh index, and the queued ones past min_free (2) that spawns take first. */
    uint32_t fill = TES_MAX_ENTITIES + 1 - stats.entity_capacity +
                    (stats.free_queue_length > 2 ? stats.free_queue_length - 2 : 0);
    tes_entity_t *filled = malloc((size_t)fill * sizeof *filled);
    if (!filled) abort();
    must(tes_spawn_batch(s.world, &s.c[BODY], 1, fill, filled));
    tes_entity_t *high = filled + fill - 3;
    must(tes_despawn_batch(s.world, filled, fill - 3));
    must(tes_add(s.world, high[0], s.c[WEIGHT]));
    must(tes_pair_add(s.world, high[1], s.c[LIKES], high[2]));
    must(tes_pair_add(s.world, high[2], s.c[CHILD_OF], high[0]));
    must(tes_delta_encode(s.rep, 0, &bytes, &size, &tick));
    add("keyframe-high", 22, 1, bytes, size, APPLIES);
    free(filled);
    tes_world_destroy(s.world);

    int failures = 0;
    uint32_t total = 0;
    for (uint32_t i = 0; i < seed_count; i++) {
        const seed_t *seed = &seeds[i];
        total += seed->size;
        if (!works(seed)) failures++;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, seed->name);
        if (check) {
            if (!same_file(path, seed)) {
                fprintf(stderr, "%s differs from what make_delta_seeds writes now\n", path);
                failures++;
            }
            continue;
        }
        FILE *f = fopen(path, "wb");
        if (!f || fwrite(seed->bytes, 1, seed->size, f) != seed->size || fclose(f) != 0) {
            fprintf(stderr, "cannot write %s\n", path);
            return 1;
        }
    }
    if (failures && check) {
        fprintf(stderr, "regenerate: build/fuzz/make_delta_seeds tests/fuzz/corpus/delta\n");
    }
    printf("%s %u seeds (%u bytes) %s %s: %d failure(s)\n", check ? "checked" : "wrote", seed_count,
           total, check ? "in" : "to", dir, failures);
    for (uint32_t i = 0; i < seed_count; i++)
        free(seeds[i].bytes);
    free(keyframe_bytes);
    return failures ? 1 : 0;
}
