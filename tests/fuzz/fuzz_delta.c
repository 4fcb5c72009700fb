/* libFuzzer target for the delta decoder (tes_delta_apply).
 *
 * Input: one byte of mode, then the candidate delta. Mode bit 0 set: the header's size and
 * CRC-32 are rewritten to match before applying, so the fuzzer reaches the body's parser instead
 * of stopping at the checksum. Mode bits 1-2 pick the replica it is applied to:
 *   0: components registered in the source's order (plus LOCAL ones), at the source's keyframe;
 *   1: the same components in another order after a replica-only one, so every id differs
 *      from the source's (the keyframe maps them by name), at the keyframe;
 *   2: a world without components (the keyframe registers them), at the keyframe;
 *   3: as 0, but no keyframe applied yet (replica tick 0: only keyframes apply).
 * The keyframe comes from a small deterministic source world built once (source_create), the
 * same one tests/fuzz/make_delta_seeds.c runs forward to write the seeds (deltas from the
 * keyframe's tick, later keyframes), so the seeds apply to the replica for real.
 *
 * Checks (besides ASan/UBSan/LeakSanitizer):
 * - refused (BAD_DELTA, SNAPSHOT_VERSION, DELTA_SCHEMA, DELTA_BASELINE): the replica is exactly
 *   as before (its snapshot bytes and its replica tick);
 * - TES_OK: a valid world; applied, its replica tick is the delta's and applying the same bytes
 *   again is TES_OK, not applied, and changes nothing; not applied, nothing changed;
 * - CYCLE or OUT_OF_MEMORY (applying failed partway): a valid world at replica tick 0;
 * - anything else is a failure;
 * - whatever the outcome, applying allocated at most counted_bound(n) bytes more than the
 *   replica held: allocation follows the bytes, never an index or a count they name. */
#include "../crc32_reference.h"
#include "counting_alloc.h"
#include "tessera.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- the source world (shared with make_delta_seeds.c) ---------------------------------- */

static const tes_field_desc_t body_fields[] = {
    {"x", TES_F32, 0}, {"hp", TES_I16, 0}, {"tags", TES_U8, 3}};
static const tes_field_desc_t vel_fields[] = {{"dx", TES_F32, 0}, {"dy", TES_F64, 0}};
static const tes_field_desc_t local_fields[] = {{"v", TES_I32, 0}};
static const tes_field_desc_t weight_fields[] = {{"w", TES_F64, 0}, {"k", TES_U8, 0}};
static const tes_field_desc_t likes_fields[] = {{"amount", TES_F32, 0}, {"since", TES_U16, 0}};

/* Registration order of the source (LOCAL in the middle: replicated ids are not contiguous). */
enum { BODY, VEL, FROZEN, LOCAL, WEIGHT, MARKED, LIKES, CHILD_OF, COMPONENTS };
static const tes_component_desc_t schemas[COMPONENTS] = {
    [BODY] = {"Body", body_fields, 3, 0},
    [VEL] = {"Vel", vel_fields, 2, 0},
    [FROZEN] = {"Frozen", NULL, 0, 0},
    [LOCAL] = {"Local", local_fields, 1, TES_COMPONENT_LOCAL},
    [WEIGHT] = {"Weight", weight_fields, 2, TES_COMPONENT_SPARSE},
    [MARKED] = {"Marked", NULL, 0, TES_COMPONENT_SPARSE},
    [LIKES] = {"Likes", likes_fields, 2, TES_COMPONENT_RELATION},
    [CHILD_OF] = {"ChildOf", NULL, 0,
                  TES_COMPONENT_RELATION | TES_RELATION_EXCLUSIVE | TES_RELATION_ACYCLIC |
                      TES_RELATION_CASCADE},
};

#define MAX_LIVE 96u

typedef struct source_t {
    tes_world_t *world;
    tes_component_t c[COMPONENTS];
    tes_replicator_t *rep;
    tes_entity_t live[MAX_LIVE];
    uint32_t n;
    uint32_t rng;
} source_t;

static void must(tes_result_t r) {
    if (r != TES_OK) abort();
}

static uint32_t below(source_t *s, uint32_t n) {
    s->rng ^= s->rng << 13;
    s->rng ^= s->rng >> 17;
    s->rng ^= s->rng << 5;
    return s->rng % n;
}

static tes_entity_t any_live(source_t *s) {
    return s->n ? s->live[below(s, s->n)] : 0;
}

/* Despawns cascade down ChildOf: keep the live handles only. */
static void refresh(source_t *s) {
    uint32_t kept = 0;
    for (uint32_t i = 0; i < s->n; i++) {
        if (tes_is_alive(s->world, s->live[i])) s->live[kept++] = s->live[i];
    }
    s->n = kept;
}

static bool has(source_t *s, tes_entity_t e, uint32_t k) {
    bool out = false;
    must(tes_has(s->world, e, s->c[k], &out));
    return out;
}

static void spawn_one(source_t *s, uint32_t step) {
    if (s->n == MAX_LIVE) return;
    static const uint32_t pick[] = {BODY, VEL, FROZEN, LOCAL, WEIGHT, MARKED};
    uint32_t mask = below(s, 64), count = 0;
    tes_component_t set[6];
    for (uint32_t k = 0; k < 6; k++) {
        if (mask & (1u << k)) set[count++] = s->c[pick[k]];
    }
    tes_entity_t e;
    must(tes_spawn(s->world, set, count, &e));
    s->live[s->n++] = e;
    tes_world_t *w = s->world;
    if (has(s, e, BODY)) {
        must(tes_init_number(w, e, s->c[BODY], 0, 0, step * 0.5));
        must(tes_init_number(w, e, s->c[BODY], 1, 0, -(double)(step % 9)));
        must(tes_init_number(w, e, s->c[BODY], 2, step % 3, step % 256));
    }
    if (has(s, e, VEL)) must(tes_init_number(w, e, s->c[VEL], 1, 0, step * 0.25));
    if (has(s, e, WEIGHT)) must(tes_init_number(w, e, s->c[WEIGHT], 0, 0, step + 0.5));
    if (has(s, e, LOCAL)) must(tes_init_number(w, e, s->c[LOCAL], 0, 0, step));
}

/* One random change: spawns, despawns (cascading), adds and removes, values, sparse members,
 * pairs with data, ChildOf links and reordered children. Only make_delta_seeds.c calls it. */
static void source_change(source_t *s, uint32_t step) __attribute__((unused));
static void source_change(source_t *s, uint32_t step) {
    tes_world_t *w = s->world;
    uint32_t op = below(s, 13);
    tes_entity_t e = any_live(s), f = any_live(s);
    if (op < 2 || s->n < 4) {
        spawn_one(s, step);
    } else if (op == 2) {
        must(tes_despawn(w, e));
    } else if (op == 3) {
        must(tes_add(w, e, s->c[below(s, 2) ? VEL : FROZEN]));
    } else if (op == 4) {
        must(tes_remove(w, e, s->c[below(s, 2) ? BODY : FROZEN]));
    } else if (op == 5) {
        uint32_t k = below(s, 2) ? WEIGHT : MARKED;
        if (below(s, 3)) {
            must(tes_add(w, e, s->c[k]));
            if (k == WEIGHT) must(tes_set_number(w, e, s->c[k], 1, 0, step % 200));
        } else {
            must(tes_remove(w, e, s->c[k]));
        }
    } else if (op == 6) {
        must(tes_pair_add(w, e, s->c[LIKES], f));
        must(tes_pair_set_number(w, e, s->c[LIKES], f, 0, 0, step * 1.5));
    } else if (op == 7) {
        must(tes_pair_remove(w, e, s->c[LIKES], f));
    } else if (op == 8) {
        bool there = false;
        must(tes_pair_has(w, e, s->c[LIKES], f, &there));
        if (there) must(tes_pair_set_number(w, e, s->c[LIKES], f, 1, 0, step));
    } else if (op == 9) {
        tes_result_t r = tes_pair_add(w, e, s->c[CHILD_OF], f);
        if (r != TES_OK && r != TES_ERR_CYCLE) abort();
    } else if (op == 10) {
        tes_entity_t parent = 0, first = 0;
        uint32_t count = 0;
        must(tes_pair_target(w, e, s->c[CHILD_OF], &parent));
        if (parent) must(tes_pair_sources(w, s->c[CHILD_OF], parent, &first, 1, &count));
        if (count && first != e) must(tes_pair_place(w, e, s->c[CHILD_OF], parent, first));
    } else if (op == 11) {
        if (has(s, e, LOCAL)) must(tes_set_number(w, e, s->c[LOCAL], 0, 0, step));
        if (has(s, e, VEL)) must(tes_set_number(w, e, s->c[VEL], 0, 0, step * 0.125));
    } else if (has(s, e, BODY)) {
        must(tes_set_number(w, e, s->c[BODY], 0, 0, -(double)step));
        must(tes_set_number(w, e, s->c[BODY], 2, 1, (step * 7) % 256));
    }
    refresh(s);
}

/* The source at its first keyframe: a small hierarchy, pairs with data, sparse members, reused
 * indices. The keyframe's bytes stay valid until the next encode. */
static void source_create(source_t *s, const uint8_t **keyframe, uint32_t *size, uint64_t *tick) {
    memset(s, 0, sizeof *s);
    s->rng = 0x2545F491u;
    must(tes_world_create(&(tes_world_desc_t){.chunk_bytes = 1024, .min_free_indices = 2},
                          &s->world));
    for (uint32_t k = 0; k < COMPONENTS; k++)
        must(tes_component_register(s->world, &schemas[k], &s->c[k]));
    tes_world_t *w = s->world;
    for (uint32_t i = 0; i < 12; i++)
        spawn_one(s, i);
    tes_entity_t *e = s->live;
    for (uint32_t i = 1; i < 5; i++)
        must(tes_pair_add(w, e[i], s->c[CHILD_OF], e[0]));
    must(tes_pair_add(w, e[5], s->c[CHILD_OF], e[1]));
    must(tes_pair_place(w, e[4], s->c[CHILD_OF], e[0], e[1]));
    must(tes_pair_add(w, e[2], s->c[LIKES], e[3]));
    must(tes_pair_set_number(w, e[2], s->c[LIKES], e[3], 0, 0, 4.5));
    must(tes_pair_add(w, e[2], s->c[LIKES], e[0]));
    must(tes_pair_add(w, e[6], s->c[LIKES], e[6]));
    must(tes_add(w, e[7], s->c[WEIGHT]));
    must(tes_add(w, e[8], s->c[MARKED]));
    for (uint32_t i = 0; i < 4; i++) { /* generations above 0 at reused indices */
        tes_entity_t gone;
        must(tes_spawn(w, NULL, 0, &gone));
        must(tes_despawn(w, gone));
    }
    spawn_one(s, 12);
    /* Quantized fields: a scalar f32 and f64 (chunk) and a sparse f64, so the seeds carry
     * varint values and the schema's steps. */
    const tes_quantum_t quanta[] = {
        {s->c[BODY], 0, 0.25}, {s->c[VEL], 0, 0.01}, {s->c[VEL], 1, 0.5}, {s->c[WEIGHT], 0, 0.1}};
    /* Only the changed fields travel: seeds carry field masks (Body's writes change some). */
    must(tes_replicator_create(w,
                               &(tes_replicator_desc_t){.history = 256,
                                                        .quanta = quanta,
                                                        .quantum_count = 4,
                                                        .flags = TES_REPLICATOR_CHANGED_FIELDS,
                                                        /* fixed: the seeds are of this source */
                                                        .source = 0x5EED5EEDu},
                               &s->rep));
    must(tes_delta_encode(s->rep, 0, keyframe, size, tick));
}

/* ---- the replica ------------------------------------------------------------------------ */

static uint8_t *keyframe_bytes;
static uint32_t keyframe_size;
static tes_entity_t keyframe_live[MAX_LIVE];
static uint32_t keyframe_live_count;

static void init_once(void) {
    if (keyframe_bytes) return;
    source_t s;
    const uint8_t *bytes;
    source_create(&s, &bytes, &keyframe_size, &(uint64_t){0});
    keyframe_bytes = malloc(keyframe_size);
    if (!keyframe_bytes) abort();
    memcpy(keyframe_bytes, bytes, keyframe_size);
    memcpy(keyframe_live, s.live, sizeof s.live);
    keyframe_live_count = s.n;
    tes_world_destroy(s.world);
}

/* A replica of the given variant (mode bits 1-2), with state of its own that deltas leave alone
 * (values of LOCAL and replica-only components). */
static tes_world_t *replica_create(uint32_t variant) {
    init_once();
    tes_world_t *w;
    must(tes_world_create(&(tes_world_desc_t){.chunk_bytes = 1024, .allocator = counted_allocator},
                          &w));
    static const tes_field_desc_t extra_fields[] = {{"e", TES_U32, 2}};
    static const tes_component_desc_t extra = {"Extra", extra_fields, 1, 0};
    tes_component_t local = UINT32_MAX, extra_id = UINT32_MAX, id;
    if (variant == 1) {
        must(tes_component_register(w, &extra, &extra_id));
        for (uint32_t k = COMPONENTS; k-- > 0;) {
            must(tes_component_register(w, &schemas[k], &id));
            if (k == LOCAL) local = id;
        }
    } else if (variant != 2) {
        for (uint32_t k = 0; k < COMPONENTS; k++) {
            must(tes_component_register(w, &schemas[k], &id));
            if (k == LOCAL) local = id;
        }
    }
    if (variant == 3) return w;
    bool applied = false;
    must(tes_delta_apply(w, keyframe_bytes, keyframe_size, &applied));
    if (!applied) abort();
    for (uint32_t i = 0; i < keyframe_live_count; i += 2) {
        tes_entity_t e = keyframe_live[i];
        if (local != UINT32_MAX) {
            must(tes_add(w, e, local));
            must(tes_set_number(w, e, local, 0, 0, -(double)i));
        }
        if (extra_id != UINT32_MAX && i % 4 == 0) {
            must(tes_add(w, e, extra_id));
            must(tes_set_number(w, e, extra_id, 0, 1, i));
        }
    }
    return w;
}

/* The replica's snapshot, copied (the world reuses its buffer). */
static uint8_t *snapshot_copy(tes_world_t *w, uint32_t *size) {
    const uint8_t *bytes;
    must(tes_snapshot(w, &bytes, size));
    uint8_t *copy = malloc(*size ? *size : 1);
    if (!copy) abort();
    memcpy(copy, bytes, *size);
    return copy;
}

static void expect_unchanged(tes_world_t *w, const uint8_t *before, uint32_t before_size,
                             uint64_t tick) {
    uint32_t size;
    uint8_t *now = snapshot_copy(w, &size);
    if (size != before_size || memcmp(now, before, size) != 0) abort();
    if (tes_replica_tick(w) != tick) abort();
    free(now);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1 || size > (1u << 24)) return 0;
    uint8_t mode = data[0];
    uint32_t n = (uint32_t)(size - 1);
    uint8_t *bytes = malloc(n ? n : 1);
    if (!bytes) return 0;
    memcpy(bytes, data + 1, n);
    if ((mode & 1) && n >= 12) {
        crc32_reseal_delta(bytes, n);
    }
    tes_world_t *w = replica_create((mode >> 1) & 3);
    uint32_t before_size;
    uint8_t *before = snapshot_copy(w, &before_size);
    uint64_t tick = tes_replica_tick(w);
    bool applied = true;
    counted_reset_peak();
    size_t held = counted_live;
    tes_result_t r = tes_delta_apply(w, bytes, n, &applied);
    if (counted_peak - held > counted_bound(n)) abort();
    switch (r) {
    case TES_ERR_BAD_DELTA:
    case TES_ERR_SNAPSHOT_VERSION:
    case TES_ERR_DELTA_SCHEMA:
    case TES_ERR_DELTA_BASELINE:
        if (applied) abort();
        expect_unchanged(w, before, before_size, tick);
        if (tes_world_validate(w) != TES_OK) abort();
        break;
    case TES_OK:
        if (tes_world_validate(w) != TES_OK) abort();
        if (applied) {
            /* `to`: the varint after the 12-byte header (format version 5). */
            uint64_t to = 0;
            uint32_t at = 12;
            for (uint32_t shift = 0; at < n && shift < 64; shift += 7) {
                to |= (uint64_t)(bytes[at] & 0x7F) << shift;
                if (!(bytes[at++] & 0x80)) break;
            }
            if (tes_replica_tick(w) != to || to <= tick) abort();
            /* Not newer now: the same bytes are a valid delta that changes nothing. */
            free(before);
            before = snapshot_copy(w, &before_size);
            if (tes_delta_apply(w, bytes, n, &applied) != TES_OK || applied) abort();
            expect_unchanged(w, before, before_size, to);
        } else {
            expect_unchanged(w, before, before_size, tick);
        }
        break;
    case TES_ERR_CYCLE:
    case TES_ERR_OUT_OF_MEMORY:
        if (applied || tes_world_validate(w) != TES_OK || tes_replica_tick(w) != 0) abort();
        break;
    default:
        abort();
    }
    free(before);
    tes_world_destroy(w);
    free(bytes);
    return 0;
}
