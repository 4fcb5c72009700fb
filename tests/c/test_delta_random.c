/*
 * Randomized delta round trips (format version 5, docs/format.md). Each seed makes a random
 * schema: 1..20 replicated components that are not relations (tags, components of 1..6 scalar
 * fields of every type, array fields, sparse storage), maybe a relation with data, and components
 * the replicator leaves out (LOCAL, or not in its list); a replicator with random options (every
 * component or a list, quantized f32 / f64 fields at random steps, CHANGED_FIELDS, a short
 * history) and sometimes a peer with a byte budget; and a world whose entities come in many
 * component sets, at indices spread apart and reused, with values that include NaN payloads,
 * infinities, subnormals, huge and negative numbers and integer extremes. Each tick makes random
 * changes (values, adds, removes, spawns, despawns, pairs), encodes from the replica's
 * acknowledged tick (some deltas are lost, some applied twice) and applies: the replica must hold
 * exactly the source's live entities, each with exactly its replicated components, exact fields
 * bit for bit and quantized ones as the nearest multiple of their step (the exact bits when the
 * step cannot hold the value), and the same pairs in the same order with the same data (under
 * a budget in any order: a withheld record's pairs join the end of the lists when it goes).
 * Keyframes to fresh replicas (registered like the source, in another order, or not at all) are
 * checked the same way. The deltas' heads are read to prove that both ways of writing patterns
 * happened (listed: P >= 1; each record its own: P = 0, more than 64 patterns in one delta), also
 * with component counts that are not multiples of four. A failure names the seed and the tick.
 */
#include "fixtures.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>

#define MAX_COMPONENTS 20
#define MAX_FIELDS     6
#define MAX_LIVE       4096
#define LIST_CAP       4096 /* pairs of one list the checks read */
#define PUSH_MAX       30000
#define NO_ID          UINT32_MAX
#define DELTA_MAGIC    0x544C4454u

static const tes_type_t TYPES[8] = {TES_F32, TES_F64, TES_I8,  TES_U8,
                                    TES_I16, TES_U16, TES_I32, TES_U32};
static const double STEPS[8] = {0.5, 0.01, 1e-3, 7.0, 0.25, 1.0, 1e-6, 3.0};

/* One component as both worlds register it, and how it travels. */
typedef struct spec_t {
    char name[16];
    char field_names[MAX_FIELDS][12];
    tes_field_desc_t fields[MAX_FIELDS];
    double steps[MAX_FIELDS]; /* 0: exact */
    uint32_t field_count;
    uint32_t flags;
    bool replicated;
} spec_t;

/* What a case asks of a seed. */
typedef struct setup_t {
    uint32_t plain;      /* replicated components that are not relations: k */
    uint32_t population; /* the live entities the world stays around */
    uint32_t ticks;
    bool many_sets; /* mostly tags, churned in bursts: more than 64 patterns in a delta */
    int peer;       /* 0: none, 1: a peer without budget, 2: a peer with a budget, -1: random */
    int push;       /* spawn and despawn thousands to spread the indices: 1 yes, 0 no, -1 random */
} setup_t;

/* What the heads of a case's deltas showed. */
typedef struct stats_t {
    uint32_t encodes, keyframes, empty, with_records;
    uint32_t listed_one, listed_many; /* P = 1, P >= 2 */
    uint32_t own_delta, own_keyframe; /* P = 0 */
    uint32_t own_odd;                 /* P = 0 with k not a multiple of 4 */
    uint32_t k_seen, k_own;           /* bit k: records with k components, P = 0 with k */
    uint32_t owed;                    /* deltas after a tick's that a budget still had to send */
} stats_t;

/* A delta's head, as far as the records' plan (docs/format.md, "Header", "Entities"). */
typedef struct head_t {
    bool keyframe, empty;
    uint64_t to, span;
    uint32_t size, gone, records, gap_bits, patterns;
} head_t;

typedef struct run_t {
    uint64_t seed;
    uint32_t tick;
    const char *doing;
    fx_rng_t rng;
    setup_t setup;
    spec_t specs[MAX_COMPONENTS];
    uint32_t count;           /* registered components */
    tes_component_t relation; /* NO_ID: none */
    tes_world_t *source, *replica;
    tes_replicator_t *rep;
    tes_peer_t *peer;
    uint32_t budget;
    uint32_t rep_flags, history;
    tes_entity_t live[MAX_LIVE]; /* the source's live entities (and some dead: pruned lazily) */
    uint32_t live_count;
    head_t head; /* the latest encode's */
    stats_t *stats;
} run_t;

static tes_entity_t scratch[PUSH_MAX];
static tes_entity_t source_live[MAX_LIVE], replica_live[MAX_LIVE];
static tes_entity_t list_a[LIST_CAP], list_b[LIST_CAP];

static void run_fail(const run_t *r, int line, const char *format, ...)
    __attribute__((format(printf, 3, 4), noreturn));

static void run_fail(const run_t *r, int line, const char *format, ...) {
    char message[512];
    va_list args;
    va_start(args, format);
    vsnprintf(message, sizeof message, format, args);
    va_end(args);
    const head_t *h = &r->head;
    harness_fail(__FILE__, line,
                 "seed %llu, tick %u, %s (latest delta: %s to %llu span %llu, %u bytes, k %u, "
                 "%u gone, %u records, gap bits %u, %u patterns; peer %s, budget %u, flags %u, "
                 "history %u): %s",
                 (unsigned long long)r->seed, r->tick, r->doing,
                 h->keyframe ? "keyframe"
                 : h->empty  ? "empty"
                             : "delta",
                 (unsigned long long)h->to, (unsigned long long)h->span, h->size, r->setup.plain,
                 h->gone, h->records, h->gap_bits, h->patterns, r->peer ? "yes" : "no", r->budget,
                 r->rep_flags, r->history, message);
}

#define RUN_FAIL(r, ...) run_fail(r, __LINE__, __VA_ARGS__)

static uint32_t below(run_t *r, uint32_t n) {
    return fx_rng_below(&r->rng, n);
}

static bool chance(run_t *r, uint32_t percent) {
    return fx_rng_chance(&r->rng, percent);
}

static uint32_t length_of(const tes_field_desc_t *f) {
    return f->length ? f->length : 1;
}

static uint32_t bytes_of(const tes_field_desc_t *f) {
    return tes_type_size(f->type) * length_of(f);
}

static bool is_relation(const spec_t *s) {
    return (s->flags & TES_COMPONENT_RELATION) != 0;
}

/* ---- values ------------------------------------------------------------------------------ */

static uint32_t f32_bits(float f) {
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    return b;
}

static uint64_t f64_bits(double d) {
    uint64_t b;
    memcpy(&b, &d, sizeof b);
    return b;
}

/* An f32 as its bits (so that NaN payloads stay as they are): ordinary numbers, multiples of the
 * step and ties, values around 2^53 steps, huge ones, NaNs, infinities, zeros, subnormals,
 * extremes and random bits. */
static uint32_t random_f32(fx_rng_t *rng, double step) {
    double s = step > 0 ? step : 0.01, sign = fx_rng_below(rng, 2) ? -1.0 : 1.0;
    uint32_t sign_bit = sign < 0 ? 0x80000000u : 0;
    switch (fx_rng_below(rng, 20)) {
    case 0:
    case 1:
    case 2:
    case 3:
    case 4:
        return f32_bits((float)(((double)fx_rng_below(rng, 2000000000u) - 1e9) / 1e6 + 1.0 / 3.0));
    case 5:
        return f32_bits((float)(sign * ldexp((double)fx_rng_next(rng), -64) * 0x1p53 * s));
    case 6:
        return f32_bits((float)(sign * fx_rng_below(rng, 1000) * 1e-6));
    case 7:
        return f32_bits((float)(((double)fx_rng_below(rng, 2000001u) - 1e6) * s));
    case 8:
        return f32_bits((float)(((double)fx_rng_below(rng, 2001u) - 1000.0 + 0.5) * s));
    case 9:
        return f32_bits((float)(sign * ldexp(1.0 + fx_rng_below(rng, 1000) / 1000.0,
                                             20 + (int)fx_rng_below(rng, 107))));
    case 10:
        return f32_bits(
            (float)(sign * 0x1p53 * s * (1.0 + ((double)fx_rng_below(rng, 201u) - 100.0) * 1e-7)));
    case 11:
        return f32_bits((float)(sign * 0x1p53 * s));
    case 12:
        return 0x7F800000u | (1u + fx_rng_below(rng, 0x7FFFFFu)) | sign_bit; /* NaN */
    case 13:
        return 0x7F800000u | sign_bit; /* infinity */
    case 14:
        return sign_bit; /* zero */
    case 15:
        return (1u + fx_rng_below(rng, 0x7FFFFFu)) | sign_bit; /* subnormal */
    case 16:
        return f32_bits(fx_rng_below(rng, 2) ? (float)sign * FLT_MAX : (float)sign * FLT_MIN);
    default:
        return (uint32_t)fx_rng_next(rng);
    }
}

static uint64_t random_f64(fx_rng_t *rng, double step) {
    double s = step > 0 ? step : 0.01, sign = fx_rng_below(rng, 2) ? -1.0 : 1.0;
    uint64_t sign_bit = sign < 0 ? 0x8000000000000000ull : 0;
    switch (fx_rng_below(rng, 20)) {
    case 0:
    case 1:
    case 2:
    case 3:
        return f64_bits(((double)fx_rng_below(rng, 2000000000u) - 1e9) / 1e6 + 1.0 / 3.0);
    case 4:
        return f64_bits(((double)fx_rng_below(rng, 2000000000u) - 1e9) * 1e3 + 0.1);
    case 5:
        return f64_bits(sign * ldexp((double)(fx_rng_next(rng) >> 11), -53) * 0x1p53 * s);
    case 6:
        return f64_bits(sign * fx_rng_below(rng, 1000) * 1e-9);
    case 7:
        return f64_bits(((double)fx_rng_below(rng, 2000001u) - 1e6) * s);
    case 8:
        return f64_bits(((double)fx_rng_below(rng, 2001u) - 1000.0 + 0.5) * s);
    case 9:
        return f64_bits(sign * ldexp(1.0 + fx_rng_below(rng, 1000) / 1000.0,
                                     20 + (int)fx_rng_below(rng, 1000)));
    case 10:
        return f64_bits(sign * 0x1p53 * s *
                        (1.0 + ((double)fx_rng_below(rng, 201u) - 100.0) * 1e-15));
    case 11:
        return f64_bits(sign * 0x1p53 * s);
    case 12: /* NaN */
        return 0x7FF0000000000000ull | (1u + (fx_rng_next(rng) & 0xFFFFFFFFFFFFEull)) | sign_bit;
    case 13:
        return 0x7FF0000000000000ull | sign_bit; /* infinity */
    case 14:
        return sign_bit; /* zero */
    case 15:
        return (1u + (fx_rng_next(rng) & 0xFFFFFFFFFFFFEull)) | sign_bit; /* subnormal */
    case 16:
        return f64_bits(fx_rng_below(rng, 2) ? sign * DBL_MAX : sign * DBL_MIN);
    default:
        return fx_rng_next(rng);
    }
}

/* One element of a type, in its bytes (little-endian, as the worlds hold it). */
static void random_element(fx_rng_t *rng, tes_type_t type, double step, uint8_t *out) {
    uint32_t size = tes_type_size(type);
    if (type == TES_F32) {
        uint32_t bits = random_f32(rng, step);
        memcpy(out, &bits, 4);
        return;
    }
    if (type == TES_F64) {
        uint64_t bits = random_f64(rng, step);
        memcpy(out, &bits, 8);
        return;
    }
    bool is_signed = type == TES_I8 || type == TES_I16 || type == TES_I32;
    uint64_t top = 1ull << (8 * size - 1), v = fx_rng_next(rng);
    switch (fx_rng_below(rng, 8)) {
    case 0:
        v = 0;
        break;
    case 1:
        v = UINT64_MAX; /* -1, or the unsigned maximum */
        break;
    case 2:
        v = is_signed ? top : 0; /* the minimum */
        break;
    case 3:
        v = is_signed ? top - 1 : UINT64_MAX; /* the maximum */
        break;
    default:
        break;
    }
    memcpy(out, &v, size);
}

/* An element's value as a double (exact for every type). */
static double element_number(tes_type_t type, const uint8_t *p) {
    switch (type) {
    case TES_F32: {
        float f;
        memcpy(&f, p, 4);
        return f;
    }
    case TES_F64: {
        double d;
        memcpy(&d, p, 8);
        return d;
    }
    case TES_I8:
        return (int8_t)p[0];
    case TES_U8:
        return p[0];
    case TES_I16: {
        int16_t v;
        memcpy(&v, p, 2);
        return v;
    }
    case TES_U16: {
        uint16_t v;
        memcpy(&v, p, 2);
        return v;
    }
    case TES_I32: {
        int32_t v;
        memcpy(&v, p, 4);
        return v;
    }
    default: {
        uint32_t v;
        memcpy(&v, p, 4);
        return v;
    }
    }
}

/* What the replica holds of a quantized element (docs/format.md, "Quantized values"): q * step
 * for q = llround(v / step) when v / step is finite and |v / step| <= 2^53; else v's bits. */
static void quantized_element(tes_type_t type, double step, uint8_t *element) {
    if (type == TES_F32) {
        float v;
        memcpy(&v, element, 4);
        double scaled = (double)v / step;
        if (!isfinite(scaled) || fabs(scaled) > 0x1p53) return;
        float q = (float)((double)llround(scaled) * step);
        memcpy(element, &q, 4);
    } else {
        double v;
        memcpy(&v, element, 8);
        double scaled = v / step;
        if (!isfinite(scaled) || fabs(scaled) > 0x1p53) return;
        double q = (double)llround(scaled) * step;
        memcpy(element, &q, 8);
    }
}

static void describe_element(tes_type_t type, const uint8_t *p, char *out, size_t size) {
    if (type == TES_F32) {
        uint32_t bits;
        memcpy(&bits, p, 4);
        snprintf(out, size, "%.9g (0x%08x)", element_number(type, p), (unsigned)bits);
    } else if (type == TES_F64) {
        uint64_t bits;
        memcpy(&bits, p, 8);
        snprintf(out, size, "%.17g (0x%016llx)", element_number(type, p), (unsigned long long)bits);
    } else {
        snprintf(out, size, "%.0f", element_number(type, p));
    }
}

/* ---- the schema -------------------------------------------------------------------------- */

static void random_fields(run_t *r, spec_t *s, uint32_t count, bool arrays) {
    s->field_count = count;
    uint32_t array_at = arrays && count && chance(r, 35) ? below(r, count) : MAX_FIELDS;
    for (uint32_t f = 0; f < count; f++) {
        snprintf(s->field_names[f], sizeof s->field_names[f], "f%u", (unsigned)f);
        s->fields[f].name = s->field_names[f];
        s->fields[f].type = TYPES[below(r, 8)];
        s->fields[f].length = f == array_at ? 2 + below(r, 3) : below(r, 2); /* 0 or 1: scalar */
    }
}

/* k replicated components that are not relations (`tags` of them tags), maybe a relation, and
 * up to three components the replicator leaves out, in a random order of ids. */
static void make_schema(run_t *r) {
    uint32_t plain = r->setup.plain, tags;
    if (r->setup.many_sets) {
        uint32_t data = plain <= 4 ? 1 : plain <= 7 ? 3 : 2 + below(r, 3);
        tags = plain - data;
    } else {
        tags = below(r, plain / 2 + 1);
    }
    uint32_t room = MAX_COMPONENTS - plain;
    bool relation = room && chance(r, 45);
    room -= relation;
    uint32_t extra = room ? below(r, (room < 3 ? room : 3) + 1) : 0;
    bool subset = chance(r, extra ? 50 : 25);
    bool relation_replicated = !subset || chance(r, 70);
    /* Kinds: 0 replicated tag, 1 replicated data, 2 relation, 3 left out. */
    uint32_t kinds[MAX_COMPONENTS], n = 0;
    for (uint32_t i = 0; i < plain; i++)
        kinds[n++] = i < tags ? 0 : 1;
    if (relation) kinds[n++] = 2;
    for (uint32_t i = 0; i < extra; i++)
        kinds[n++] = 3;
    for (uint32_t i = n; i > 1; i--) {
        uint32_t j = below(r, i), t = kinds[i - 1];
        kinds[i - 1] = kinds[j];
        kinds[j] = t;
    }
    r->count = n;
    r->relation = NO_ID;
    for (uint32_t c = 0; c < n; c++) {
        spec_t *s = &r->specs[c];
        memset(s, 0, sizeof *s);
        snprintf(s->name, sizeof s->name, "C%u", (unsigned)c);
        switch (kinds[c]) {
        case 0:
            s->flags = chance(r, 25) ? TES_COMPONENT_SPARSE : 0;
            s->replicated = true;
            break;
        case 1:
            random_fields(r, s, 1 + below(r, MAX_FIELDS), true);
            s->flags = chance(r, 25) ? TES_COMPONENT_SPARSE : 0;
            if (chance(r, 10)) s->flags |= TES_COMPONENT_CHANGE_BY_VALUE;
            s->replicated = true;
            for (uint32_t f = 0; f < s->field_count; f++) {
                tes_type_t t = s->fields[f].type;
                if ((t == TES_F32 || t == TES_F64) && chance(r, 45))
                    s->steps[f] = STEPS[below(r, 8)];
            }
            break;
        case 2: {
            static const uint32_t flags[5] = {
                0, TES_RELATION_EXCLUSIVE, TES_RELATION_EXCLUSIVE | TES_RELATION_ACYCLIC,
                TES_RELATION_CASCADE, TES_RELATION_EXCLUSIVE | TES_RELATION_CASCADE};
            random_fields(r, s, below(r, 3), false);
            s->flags = TES_COMPONENT_RELATION | flags[below(r, 5)];
            s->replicated = relation_replicated;
            r->relation = c;
            break;
        }
        default:
            random_fields(r, s, below(r, 4), true);
            s->flags =
                (chance(r, 25) ? TES_COMPONENT_SPARSE : 0) | (subset ? 0 : TES_COMPONENT_LOCAL);
            s->replicated = false;
            break;
        }
    }
    r->rep_flags = chance(r, 50) ? TES_REPLICATOR_CHANGED_FIELDS : 0;
    static const uint32_t histories[5] = {0, 0, 1, 2, 5};
    r->history = histories[below(r, 5)];
    /* The replicator's list (when a subset) and quanta, both in a random order. */
    tes_component_t list[MAX_COMPONENTS];
    tes_quantum_t quanta[MAX_COMPONENTS * MAX_FIELDS];
    uint32_t listed = 0, quantum_count = 0;
    for (uint32_t c = 0; c < n; c++) {
        const spec_t *s = &r->specs[c];
        if (!s->replicated) continue;
        list[listed++] = c;
        for (uint32_t f = 0; f < s->field_count; f++) {
            if (s->steps[f] > 0) quanta[quantum_count++] = (tes_quantum_t){c, f, s->steps[f]};
        }
    }
    for (uint32_t i = listed; i > 1; i--) {
        uint32_t j = below(r, i);
        tes_component_t t = list[i - 1];
        list[i - 1] = list[j];
        list[j] = t;
    }
    for (uint32_t i = quantum_count; i > 1; i--) {
        uint32_t j = below(r, i);
        tes_quantum_t t = quanta[i - 1];
        quanta[i - 1] = quanta[j];
        quanta[j] = t;
    }
    /* Registered in both worlds in the same order: the ids match. */
    for (uint32_t c = 0; c < n; c++) {
        const spec_t *s = &r->specs[c];
        tes_component_t a = fx_component_flags(r->source, s->name, s->fields, s->field_count,
                                               s->flags),
                        b = fx_component_flags(r->replica, s->name, s->fields, s->field_count,
                                               s->flags);
        CHECK_EQ(a, c);
        CHECK_EQ(b, c);
    }
    tes_replicator_desc_t desc = {.components = subset ? list : NULL,
                                  .component_count = subset ? listed : 0,
                                  .history = r->history,
                                  .quanta = quantum_count ? quanta : NULL,
                                  .quantum_count = quantum_count,
                                  .flags = r->rep_flags};
    CHECK_OK(tes_replicator_create(r->source, &desc, &r->rep));
}

/* ---- changes to the source --------------------------------------------------------------- */

static bool pick_live(run_t *r, tes_entity_t *out) {
    while (r->live_count) {
        uint32_t i = below(r, r->live_count);
        if (tes_is_alive(r->source, r->live[i])) {
            *out = r->live[i];
            return true;
        }
        r->live[i] = r->live[--r->live_count];
    }
    return false;
}

static void prune_live(run_t *r) {
    uint32_t kept = 0;
    for (uint32_t i = 0; i < r->live_count; i++) {
        if (tes_is_alive(r->source, r->live[i])) r->live[kept++] = r->live[i];
    }
    r->live_count = kept;
}

static bool room_for(run_t *r, uint32_t n) {
    if (r->live_count + n > MAX_LIVE) prune_live(r);
    return r->live_count + n <= MAX_LIVE;
}

/* Writes one field: all its elements (tes_set, or tes_init for a component the entity just
 * got), or one element as a number (tes_set_number / tes_init_number). */
static void write_field(run_t *r, tes_entity_t e, tes_component_t c, uint32_t f, bool init) {
    const tes_field_desc_t *field = &r->specs[c].fields[f];
    double step = r->specs[c].steps[f];
    uint32_t size = tes_type_size(field->type);
    uint8_t bytes[MAX_FIELDS * 8];
    if (chance(r, 50)) {
        for (uint32_t i = 0; i < length_of(field); i++)
            random_element(&r->rng, field->type, step, bytes + i * size);
        if (init) {
            CHECK_OK(tes_init(r->source, e, c, f, bytes, bytes_of(field)));
        } else {
            CHECK_OK(tes_set(r->source, e, c, f, bytes, bytes_of(field)));
        }
        return;
    }
    uint32_t element = below(r, length_of(field));
    random_element(&r->rng, field->type, step, bytes);
    double v = element_number(field->type, bytes);
    if (init) {
        CHECK_OK(tes_init_number(r->source, e, c, f, element, v));
    } else {
        CHECK_OK(tes_set_number(r->source, e, c, f, element, v));
    }
}

/* Values for some fields of a component the entity has (every field when `all`). */
static void write_values(run_t *r, tes_entity_t e, tes_component_t c, bool init, bool all) {
    const spec_t *s = &r->specs[c];
    if (!s->field_count) return;
    if (all) {
        for (uint32_t f = 0; f < s->field_count; f++)
            write_field(r, e, c, f, init);
        return;
    }
    for (uint32_t k = 1 + below(r, 2); k; k--)
        write_field(r, e, c, below(r, s->field_count), init);
}

/* A random set of the components that are not relations: tags half the time each when the
 * seed wants many sets. */
static uint32_t random_set(run_t *r, tes_component_t *out) {
    uint32_t n = 0;
    for (tes_component_t c = 0; c < r->count; c++) {
        const spec_t *s = &r->specs[c];
        if (is_relation(s)) continue;
        uint32_t percent = r->setup.many_sets && !s->field_count ? 50 : 35;
        if (chance(r, percent)) out[n++] = c;
    }
    return n;
}

static void spawn_one(run_t *r) {
    if (!room_for(r, 1)) return;
    tes_component_t set[MAX_COMPONENTS];
    uint32_t n = random_set(r, set);
    tes_entity_t e = fx_spawn(r->source, set, n);
    r->live[r->live_count++] = e;
    for (uint32_t i = 0; i < n; i++) {
        if (chance(r, 70)) write_values(r, e, set[i], chance(r, 50), chance(r, 50));
    }
}

static void spawn_some(run_t *r) {
    uint32_t n = 2 + below(r, 20);
    if (!room_for(r, n)) return;
    tes_component_t set[MAX_COMPONENTS];
    uint32_t count = random_set(r, set);
    CHECK_OK(tes_spawn_batch(r->source, set, count, n, scratch));
    for (uint32_t i = 0; i < n; i++) {
        r->live[r->live_count++] = scratch[i];
        for (uint32_t k = 0; k < count; k++) {
            if (chance(r, 50)) write_values(r, scratch[i], set[k], chance(r, 50), false);
        }
    }
}

/* Spawns n entities and despawns all but a few, in a random order: the indices go up, and the
 * next spawns reuse freed ones all over the range. */
static void push_indices(run_t *r, uint32_t n) {
    tes_component_t set[MAX_COMPONENTS];
    uint32_t count = random_set(r, set), keep = 1 + below(r, 3);
    if (!room_for(r, keep)) return;
    CHECK_OK(tes_spawn_batch(r->source, set, count, n, scratch));
    for (uint32_t i = n; i > 1; i--) {
        uint32_t j = below(r, i);
        tes_entity_t t = scratch[i - 1];
        scratch[i - 1] = scratch[j];
        scratch[j] = t;
    }
    for (uint32_t i = 0; i < keep; i++) {
        r->live[r->live_count++] = scratch[i];
        for (uint32_t k = 0; k < count; k++)
            write_values(r, scratch[i], set[k], false, true);
    }
    CHECK_OK(tes_despawn_batch(r->source, scratch + keep, n - keep));
}

static void add_component(run_t *r, tes_entity_t e) {
    tes_component_t c = below(r, r->count);
    if (c == r->relation) return;
    bool had = fx_has(r->source, e, c);
    CHECK_OK(tes_add(r->source, e, c));
    if (chance(r, 60)) write_values(r, e, c, !had && chance(r, 50), chance(r, 40));
}

static void remove_component(run_t *r, tes_entity_t e) {
    tes_component_t c = below(r, r->count);
    if (c == r->relation && !chance(r, 20)) return; /* every pair of e */
    CHECK_OK(tes_remove(r->source, e, c));
}

static void set_values(run_t *r, tes_entity_t e) {
    for (uint32_t tries = 0; tries < 4; tries++) {
        tes_component_t c = below(r, r->count);
        if (c == r->relation || !r->specs[c].field_count || !fx_has(r->source, e, c)) continue;
        write_values(r, e, c, false, chance(r, 20));
        return;
    }
}

/* A number a field of the relation can hold (pair data is written as numbers). */
static double pair_number(run_t *r, uint32_t f) {
    uint8_t bytes[8];
    random_element(&r->rng, r->specs[r->relation].fields[f].type, 0, bytes);
    return element_number(r->specs[r->relation].fields[f].type, bytes);
}

static void pair_op(run_t *r) {
    tes_component_t rel = r->relation;
    const spec_t *s = &r->specs[rel];
    tes_entity_t source, target;
    if (!pick_live(r, &source) || !pick_live(r, &target)) return;
    uint32_t pick = below(r, 10), count = 0;
    if (pick < 5) {
        bool had = fx_pair_has(r->source, source, rel, target);
        tes_result_t result = tes_pair_add(r->source, source, rel, target);
        if (result == TES_ERR_CYCLE) return;
        CHECK_OK(result);
        for (uint32_t f = 0; f < s->field_count; f++) {
            if (!chance(r, 60)) continue;
            uint32_t element = below(r, length_of(&s->fields[f]));
            if (!had && chance(r, 50)) {
                CHECK_OK(tes_pair_init_number(r->source, source, rel, target, f, element,
                                              pair_number(r, f)));
            } else {
                CHECK_OK(tes_pair_set_number(r->source, source, rel, target, f, element,
                                             pair_number(r, f)));
            }
        }
        return;
    }
    if (pick < 9) {
        CHECK_OK(tes_pair_targets(r->source, source, rel, list_a, LIST_CAP, &count));
        if (!count) return;
        target = list_a[below(r, count)];
        if (pick < 7) {
            CHECK_OK(tes_pair_remove(r->source, source, rel, target));
        } else if (s->field_count) {
            uint32_t f = below(r, s->field_count);
            CHECK_OK(tes_pair_set_number(r->source, source, rel, target, f,
                                         below(r, length_of(&s->fields[f])), pair_number(r, f)));
        }
        return;
    }
    CHECK_OK(tes_pair_sources(r->source, rel, target, list_a, LIST_CAP, &count));
    if (count < 2) return;
    uint32_t i = below(r, count), j = below(r, count);
    CHECK_OK(tes_pair_place(r->source, list_a[i], rel, target, i == j ? 0 : list_a[j]));
}

/* Many entities change their tags and values at once: records of many patterns. */
static void burst(run_t *r) {
    for (uint32_t n = 60 + below(r, 160); n; n--) {
        tes_entity_t e;
        if (!pick_live(r, &e)) return;
        for (uint32_t k = below(r, 4); k; k--) {
            tes_component_t c = below(r, r->count);
            if (c == r->relation) continue;
            if (fx_has(r->source, e, c)) {
                CHECK_OK(tes_remove(r->source, e, c));
            } else {
                CHECK_OK(tes_add(r->source, e, c));
            }
        }
        if (chance(r, 50)) set_values(r, e);
    }
}

static void random_changes(run_t *r, uint32_t n) {
    for (; n; n--) {
        uint32_t pick = below(r, 100);
        if (r->live_count < r->setup.population / 2) pick = 60;
        if (r->live_count > 2 * r->setup.population) pick = 75;
        tes_entity_t e;
        if (pick >= 60 && pick < 72) {
            spawn_one(r);
        } else if (pick >= 95) {
            spawn_some(r);
        } else if (pick >= 80 && r->relation != NO_ID) {
            pair_op(r);
        } else if (pick_live(r, &e)) {
            if (pick < 35 || pick >= 80) {
                set_values(r, e);
            } else if (pick < 50) {
                add_component(r, e);
            } else if (pick < 60) {
                remove_component(r, e);
            } else {
                CHECK_OK(tes_despawn(r->source, e)); /* (a cascade may take others) */
            }
        }
    }
}

/* ---- the deltas -------------------------------------------------------------------------- */

typedef struct reader_t {
    const run_t *r;
    const uint8_t *bytes;
    uint32_t size, at;
} reader_t;

static const uint8_t *take(reader_t *c, uint32_t n) {
    if (n > c->size - c->at) RUN_FAIL(c->r, "the head is cut short at byte %u", c->at);
    const uint8_t *p = c->bytes + c->at;
    c->at += n;
    return p;
}

static uint32_t take_u32(reader_t *c) {
    uint32_t v;
    memcpy(&v, take(c, 4), 4);
    return v;
}

static uint64_t take_varint(reader_t *c) {
    uint64_t v = 0;
    for (uint32_t shift = 0; shift < 64; shift += 7) {
        uint8_t b = *take(c, 1);
        v |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80)) return v;
    }
    RUN_FAIL(c->r, "a varint runs past 64 bits at byte %u", c->at);
}

static void expect_name(reader_t *c, const char *name, const char *what) {
    uint32_t length = take_u32(c);
    const uint8_t *p = take(c, length);
    if (length != strlen(name) || memcmp(p, name, length)) {
        RUN_FAIL(c->r, "the keyframe names %s %.*s, not %s", what, (int)length, (const char *)p,
                 name);
    }
}

/* Reads the head of a delta up to its records' plan; a keyframe's components and quanta must be
 * the replicator's (ids ascending, schemas, quanta by place and field). */
static head_t read_head(run_t *r, const uint8_t *bytes, uint32_t size) {
    head_t h;
    memset(&h, 0, sizeof h);
    h.size = size;
    reader_t c = {r, bytes, size, 0};
    if (take_u32(&c) != DELTA_MAGIC) RUN_FAIL(r, "not a delta's magic");
    uint32_t version = take_u32(&c), flags = version >> 16;
    if ((version & 0xFFFF) != 5 || (flags & ~3u)) RUN_FAIL(r, "version word 0x%08x", version);
    h.keyframe = flags & 1u;
    h.empty = flags & 2u;
    take_u32(&c); /* checksum */
    h.to = take_varint(&c);
    h.span = take_varint(&c);
    take_u32(&c); /* schema CRC */
    if (take_u32(&c) == 0) RUN_FAIL(r, "a delta without a source");
    if (h.keyframe) {
        uint32_t count = (uint32_t)take_varint(&c), expected = 0;
        tes_component_t ids[MAX_COMPONENTS];
        for (tes_component_t id = 0; id < r->count; id++) {
            if (r->specs[id].replicated) ids[expected++] = id;
        }
        if (count != expected) RUN_FAIL(r, "a keyframe of %u components, not %u", count, expected);
        for (uint32_t i = 0, id = 0; i < count; i++) {
            uint32_t gap = (uint32_t)take_varint(&c);
            id = i ? id + gap : gap;
            if (id != ids[i]) RUN_FAIL(r, "the keyframe's id %u is %u, not %u", i, id, ids[i]);
        }
        for (uint32_t i = 0; i < count; i++) {
            const spec_t *s = &r->specs[ids[i]];
            if (take_u32(&c) != s->flags) RUN_FAIL(r, "the keyframe's flags of %s", s->name);
            expect_name(&c, s->name, "a component");
            if (take_u32(&c) != s->field_count) RUN_FAIL(r, "the fields of %s", s->name);
            for (uint32_t f = 0; f < s->field_count; f++) {
                expect_name(&c, s->field_names[f], "a field");
                uint32_t type = take_u32(&c), length = take_u32(&c);
                if (type != (uint32_t)s->fields[f].type || length != length_of(&s->fields[f])) {
                    RUN_FAIL(r, "the keyframe's %s.%s", s->name, s->field_names[f]);
                }
            }
        }
        uint32_t quanta = (uint32_t)take_varint(&c);
        for (uint32_t place = 0, q = 0; place < count; place++) {
            const spec_t *s = &r->specs[ids[place]];
            for (uint32_t f = 0; f < s->field_count; f++) {
                if (!(s->steps[f] > 0)) continue;
                if (q++ >= quanta) RUN_FAIL(r, "the keyframe lacks the quantum of %s", s->name);
                uint32_t at = (uint32_t)take_varint(&c), field = (uint32_t)take_varint(&c);
                double step;
                memcpy(&step, take(&c, 8), 8);
                if (at != place || field != f || step != s->steps[f]) {
                    RUN_FAIL(r, "the keyframe's quantum %u: (%u, %u, %g), not (%u, %u, %g)", q - 1,
                             at, field, step, place, f, s->steps[f]);
                }
            }
            if (place + 1 == count && q != quanta) RUN_FAIL(r, "%u quanta, not %u", quanta, q);
        }
    }
    h.gone = (uint32_t)take_varint(&c);
    for (uint32_t i = 0; i < h.gone; i++)
        take_varint(&c);
    h.records = (uint32_t)take_varint(&c);
    if (h.records) {
        h.gap_bits = *take(&c, 1);
        h.patterns = (uint32_t)take_varint(&c);
        if (h.gap_bits > 20 || h.patterns > 64) RUN_FAIL(r, "a plan out of range");
    }
    return h;
}

static void count_head(run_t *r, const head_t *h) {
    stats_t *s = r->stats;
    uint32_t k = r->setup.plain;
    s->encodes++;
    s->keyframes += h->keyframe;
    s->empty += h->empty;
    if (!h->records) return;
    s->with_records++;
    s->k_seen |= 1u << k;
    if (h->patterns == 1) s->listed_one++;
    if (h->patterns > 1) s->listed_many++;
    if (h->patterns) return;
    s->k_own |= 1u << k;
    s->own_odd += k % 4 != 0;
    if (h->keyframe) {
        s->own_keyframe++;
    } else {
        s->own_delta++;
    }
}

/* Encodes from the replica's tick (through the peer when there is one) and applies it unless
 * the delta is lost; sometimes applies it twice (the second time changes nothing). */
static head_t send_delta(run_t *r, bool lose) {
    const uint8_t *bytes = NULL;
    uint32_t size = 0;
    uint64_t tick = 0, acked = tes_replica_tick(r->replica);
    if (r->peer) {
        CHECK_OK(tes_peer_encode(r->peer, acked, r->budget, &bytes, &size, &tick));
    } else {
        CHECK_OK(tes_delta_encode(r->rep, acked, &bytes, &size, &tick));
    }
    r->head = read_head(r, bytes, size);
    count_head(r, &r->head);
    if (r->head.to != tick) RUN_FAIL(r, "the delta's tick is not the encode's");
    if (!r->head.keyframe && r->head.to - r->head.span != acked) RUN_FAIL(r, "another baseline");
    if (lose) return r->head;
    for (uint32_t times = chance(r, 8) ? 2 : 1, i = 0; i < times; i++) {
        bool applied = false;
        tes_result_t result = tes_delta_apply(r->replica, bytes, size, &applied);
        if (result != TES_OK) RUN_FAIL(r, "applying: %s", tes_result_name(result));
        if (applied != (i == 0)) RUN_FAIL(r, "applied %d at the %u. apply", applied, i + 1);
        if (tes_replica_tick(r->replica) != tick) RUN_FAIL(r, "the replica's tick");
    }
    return r->head;
}

/* Under a budget: encodes and applies until a delta has nothing (nothing withheld or owed). */
static void converge(run_t *r) {
    r->doing = "converging";
    for (uint32_t round = 0; !send_delta(r, false).empty; round++) {
        if (round == 20000) RUN_FAIL(r, "20000 deltas and still not everything sent");
        r->stats->owed++;
    }
}

/* ---- checks ------------------------------------------------------------------------------ */

static int compare_index(const void *a, const void *b) {
    uint32_t x = tes_entity_index(*(const tes_entity_t *)a),
             y = tes_entity_index(*(const tes_entity_t *)b);
    return (x > y) - (x < y);
}

static int compare_handle(const void *a, const void *b) {
    tes_entity_t x = *(const tes_entity_t *)a, y = *(const tes_entity_t *)b;
    return (x > y) - (x < y);
}

static uint32_t live_by_index(const run_t *r, const tes_world_t *world, tes_entity_t *out) {
    uint32_t n = 0;
    for (tes_archetype_t a = 0; a < tes_archetype_count(world); a++) {
        tes_archetype_info_t info;
        if (tes_archetype_info(world, a, &info) != TES_OK) continue;
        for (uint32_t k = 0; k < info.chunk_count; k++) {
            tes_chunk_info_t chunk;
            CHECK_OK(tes_chunk_info(world, a, k, &chunk));
            if (n + chunk.count > MAX_LIVE) RUN_FAIL(r, "more than %u entities", MAX_LIVE);
            memcpy(out + n, chunk.entities, chunk.count * sizeof *out);
            n += chunk.count;
        }
    }
    qsort(out, n, sizeof *out, compare_index);
    return n;
}

static void check_values(const run_t *r, tes_world_t *replica, tes_component_t rc, tes_entity_t e,
                         tes_component_t c) {
    const spec_t *s = &r->specs[c];
    for (uint32_t f = 0; f < s->field_count; f++) {
        const tes_field_desc_t *field = &s->fields[f];
        uint32_t size = tes_type_size(field->type);
        uint8_t want[MAX_FIELDS * 8], got[MAX_FIELDS * 8], was[8];
        CHECK_OK(tes_get(r->source, e, c, f, want, bytes_of(field)));
        CHECK_OK(tes_get(replica, e, rc, f, got, bytes_of(field)));
        for (uint32_t i = 0; i < length_of(field); i++) {
            uint8_t *w = want + i * size;
            memcpy(was, w, size);
            if (s->steps[f] > 0) quantized_element(field->type, s->steps[f], w);
            if (!memcmp(w, got + i * size, size)) continue;
            char source[64], expected[64], held[64];
            describe_element(field->type, was, source, sizeof source);
            describe_element(field->type, w, expected, sizeof expected);
            describe_element(field->type, got + i * size, held, sizeof held);
            RUN_FAIL(r,
                     "entity %u (index %u, generation %u) %s.%s[%u] (step %g): the source has %s, "
                     "the replica %s, expected %s",
                     e, tes_entity_index(e), tes_entity_generation(e), s->name, s->field_names[f],
                     i, s->steps[f], source, held, expected);
        }
    }
}

static uint32_t pair_list(const run_t *r, tes_world_t *world, tes_component_t rel, tes_entity_t e,
                          bool targets, tes_entity_t *out) {
    uint32_t count = 0;
    if (targets) {
        CHECK_OK(tes_pair_targets(world, e, rel, out, LIST_CAP, &count));
    } else {
        CHECK_OK(tes_pair_sources(world, rel, e, out, LIST_CAP, &count));
    }
    if (count > LIST_CAP) RUN_FAIL(r, "a list of %u pairs", count);
    return count;
}

static void check_pairs(const run_t *r, tes_world_t *replica, tes_component_t rr, tes_entity_t e) {
    tes_component_t rel = r->relation;
    const spec_t *s = &r->specs[rel];
    for (int side = 0; side < 2; side++) {
        bool targets = side == 0;
        uint32_t n = s->replicated ? pair_list(r, r->source, rel, e, targets, list_a) : 0;
        uint32_t m = pair_list(r, replica, rr, e, targets, list_b);
        if (r->budget && n == m) {
            /* A record a budget withheld brings its pairs when it goes, at the end of the
             * replica's lists (as an entity entering a scope does): the same pairs, but not
             * necessarily in the same order. */
            qsort(list_a, n, sizeof *list_a, compare_handle);
            qsort(list_b, m, sizeof *list_b, compare_handle);
        }
        if (n != m || memcmp(list_a, list_b, n * sizeof *list_a)) {
            RUN_FAIL(r,
                     "entity %u: the source has %u %s of %s (first %u), the replica %u (first %u)",
                     e, n, targets ? "targets" : "sources", s->name, n ? list_a[0] : 0, m,
                     m ? list_b[0] : 0);
        }
        for (uint32_t i = 0; targets && i < n; i++) {
            for (uint32_t f = 0; f < s->field_count; f++) {
                for (uint32_t k = 0; k < length_of(&s->fields[f]); k++) {
                    double a = 0, b = 0;
                    CHECK_OK(tes_pair_get_number(r->source, e, rel, list_a[i], f, k, &a));
                    CHECK_OK(tes_pair_get_number(replica, e, rr, list_a[i], f, k, &b));
                    if (f64_bits(a) != f64_bits(b)) {
                        RUN_FAIL(
                            r, "pair (%u, %s, %u) %s[%u]: the source has %.17g, the replica %.17g",
                            e, s->name, list_a[i], s->field_names[f], k, a, b);
                    }
                }
            }
        }
    }
}

/* The replica holds exactly the source's live entities, each with exactly its replicated
 * components (map: the replica's id of each source component, NO_ID when it has none) and their
 * values, and the same pairs in the same order with the same data. */
static void check_replica(run_t *r, tes_world_t *replica, const tes_component_t *map) {
    CHECK_OK(tes_world_validate(replica));
    uint32_t n = live_by_index(r, r->source, source_live);
    uint32_t m = live_by_index(r, replica, replica_live);
    for (uint32_t i = 0; i < n || i < m; i++) {
        tes_entity_t a = i < n ? source_live[i] : 0, b = i < m ? replica_live[i] : 0;
        if (a != b) {
            RUN_FAIL(r,
                     "the %u. live entity by index: the source's %u (index %u), the replica's %u "
                     "(index %u); %u and %u entities",
                     i + 1, a, tes_entity_index(a), b, tes_entity_index(b), n, m);
        }
    }
    for (uint32_t i = 0; i < n; i++) {
        tes_entity_t e = source_live[i];
        for (tes_component_t c = 0; c < r->count; c++) {
            const spec_t *s = &r->specs[c];
            if (map[c] == NO_ID) {
                if (s->replicated) RUN_FAIL(r, "the replica lacks component %s", s->name);
                continue;
            }
            if (is_relation(s)) {
                check_pairs(r, replica, map[c], e);
                continue;
            }
            bool want = s->replicated && fx_has(r->source, e, c), got = fx_has(replica, e, map[c]);
            if (want != got) {
                RUN_FAIL(r,
                         "entity %u (index %u, generation %u): %s is %s on the replica (%s on "
                         "the source, %s)",
                         e, tes_entity_index(e), tes_entity_generation(e), s->name,
                         got ? "present" : "absent", fx_has(r->source, e, c) ? "present" : "absent",
                         s->replicated ? "replicated" : "not replicated");
            }
            if (want) check_values(r, replica, map[c], e, c);
        }
    }
}

static const tes_component_t *same_ids(void) {
    static tes_component_t ids[MAX_COMPONENTS];
    for (uint32_t c = 0; c < MAX_COMPONENTS; c++)
        ids[c] = c;
    return ids;
}

/* A keyframe to a fresh replica that registered the components in the same order, in the
 * reverse order, or not at all (the keyframe registers what it lacks): mapped by name. */
static void check_keyframe(run_t *r) {
    r->doing = "a keyframe to a fresh replica";
    tes_world_t *fresh = fx_world(NULL);
    uint32_t how = below(r, 3);
    for (uint32_t i = 0; how != 2 && i < r->count; i++) {
        const spec_t *s = &r->specs[how == 0 ? i : r->count - 1 - i];
        fx_component_flags(fresh, s->name, s->fields, s->field_count, s->flags);
    }
    const uint8_t *bytes = NULL;
    uint32_t size = 0;
    uint64_t tick = 0;
    CHECK_OK(tes_delta_encode(r->rep, 0, &bytes, &size, &tick));
    head_t saved = r->head;
    r->head = read_head(r, bytes, size);
    count_head(r, &r->head);
    if (!r->head.keyframe) RUN_FAIL(r, "baseline 0 gave no keyframe");
    bool applied = false;
    tes_result_t result = tes_delta_apply(fresh, bytes, size, &applied);
    if (result != TES_OK || !applied) {
        RUN_FAIL(r, "applying the keyframe: %s, applied %d", tes_result_name(result), applied);
    }
    tes_component_t map[MAX_COMPONENTS];
    for (tes_component_t c = 0; c < r->count; c++) {
        if (tes_component_lookup(fresh, r->specs[c].name, &map[c]) != TES_OK) map[c] = NO_ID;
    }
    check_replica(r, fresh, map);
    fx_world_destroy_now(fresh);
    r->head = saved;
}

/* ---- a seed ------------------------------------------------------------------------------ */

static void run_seed(uint64_t seed, setup_t setup, stats_t *stats) {
    run_t *r = (run_t *)fx_malloc(sizeof *r);
    r->seed = seed;
    r->rng.state = seed;
    r->setup = setup;
    r->stats = stats;
    r->doing = "setting up";
    if (r->setup.peer < 0) {
        uint32_t pick = below(r, 100);
        r->setup.peer = pick < 55 ? 0 : pick < 70 ? 1 : 2;
    }
    if (r->setup.push < 0) r->setup.push = chance(r, 30);
    /* Small chunks: many component sets make many archetypes, each with chunks of its own. */
    tes_world_desc_t desc = {.chunk_bytes = chance(r, 50) ? 1024 : 2048,
                             .min_free_indices = chance(r, 70) ? 1 + below(r, 16) : 0};
    r->source = fx_world(&desc);
    r->replica = fx_world(&desc);
    make_schema(r);
    if (r->setup.peer) {
        CHECK_OK(tes_peer_create(r->rep, 0, &r->peer));
        if (r->setup.peer == 2) r->budget = 64 + below(r, 1937);
    }
    while (r->live_count < r->setup.population)
        spawn_one(r);
    uint32_t push_at = r->setup.push ? below(r, r->setup.ticks) : UINT32_MAX;
    for (r->tick = 0; r->tick < r->setup.ticks; r->tick++) {
        r->doing = "changing the source";
        if (r->tick) random_changes(r, 1 + below(r, r->setup.population / 3 + 1));
        if (r->setup.many_sets && chance(r, 50)) burst(r);
        if (r->tick == push_at || (r->setup.push && chance(r, 5))) {
            push_indices(r, 1000 + below(r, PUSH_MAX - 1000));
        }
        /* Under a budget the replica is checked every third tick, once everything went. */
        bool check = !r->budget || r->tick % 3 == 2 || r->tick + 1 == r->setup.ticks;
        bool lose = r->tick && !check && chance(r, 20);
        if (r->tick && !r->budget && chance(r, 12)) {
            check = false;
            lose = true;
        }
        r->doing = lose ? "encoding a lost delta" : "applying a delta";
        send_delta(r, lose);
        if (check) {
            if (r->budget) converge(r);
            r->doing = "checking the replica";
            check_replica(r, r->replica, same_ids());
        }
        if (r->tick % 5 == 4 || r->tick + 1 == r->setup.ticks) check_keyframe(r);
        CHECK_OK(tes_tick(r->source));
    }
    fx_world_destroy_now(r->replica);
    fx_world_destroy_now(r->source);
}

static void print_stats(const char *name, const stats_t *s) {
    printf("  %s: %u encodes (%u keyframes, %u empty, %u with records): P = 0 in %u deltas and "
           "%u keyframes (%u with k %% 4 != 0), P = 1 in %u, P >= 2 in %u; k with records 0x%x, "
           "k with P = 0 0x%x\n",
           name, s->encodes, s->keyframes, s->empty, s->with_records, s->own_delta, s->own_keyframe,
           s->own_odd, s->listed_one, s->listed_many, s->k_seen, s->k_own);
}

/* ---- cases ------------------------------------------------------------------------------- */

TEST(random_schemas_and_replicators_round_trip_every_tick) {
    stats_t stats;
    memset(&stats, 0, sizeof stats);
    for (uint64_t seed = 1; seed <= 20; seed++) {
        fx_rng_t rng = {seed * 7919};
        setup_t setup = {.plain = (uint32_t)(1 + (seed - 1) % 20), /* every k once */
                         .population = 40 + fx_rng_below(&rng, 160),
                         .ticks = 20,
                         .many_sets = seed % 3 == 0,
                         .peer = -1,
                         .push = -1};
        run_seed(seed, setup, &stats);
    }
    print_stats("every k", &stats);
    CHECK_EQ(stats.k_seen, 0x1FFFFE); /* k = 1 .. 20 */
    CHECK(stats.listed_one > 0);
    CHECK(stats.listed_many > 0);
    CHECK(stats.own_delta + stats.own_keyframe > 0);
    CHECK(stats.own_odd > 0);
}

TEST(more_than_64_patterns_in_one_delta_round_trip_whatever_the_component_count) {
    static const uint32_t ks[] = {5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 17, 18, 19};
    stats_t stats;
    memset(&stats, 0, sizeof stats);
    for (uint32_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
        uint32_t before = stats.own_delta + stats.own_keyframe;
        setup_t setup = {.plain = ks[i],
                         .population = 260,
                         .ticks = 10,
                         .many_sets = true,
                         .peer = i % 4 == 3 ? 2 : 0,
                         .push = i % 3 == 0};
        run_seed(100 + ks[i], setup, &stats);
        /* Each component count had a delta or keyframe of more than 64 patterns. */
        CHECK(stats.own_delta + stats.own_keyframe > before);
    }
    print_stats("many patterns", &stats);
    CHECK(stats.own_delta > 0);
    CHECK(stats.own_keyframe > 0);
    CHECK(stats.own_odd > 0);
    CHECK(stats.listed_one + stats.listed_many > 0);
}

TEST(budgeted_peers_round_trip_once_nothing_is_withheld) {
    stats_t stats;
    memset(&stats, 0, sizeof stats);
    for (uint64_t seed = 200; seed < 210; seed++) {
        fx_rng_t rng = {seed};
        setup_t setup = {.plain = 1 + fx_rng_below(&rng, 20),
                         .population = 40 + fx_rng_below(&rng, 120),
                         .ticks = 18,
                         .many_sets = seed % 2 == 0,
                         .peer = 2,
                         .push = -1};
        run_seed(seed, setup, &stats);
    }
    print_stats("budgets", &stats);
    printf("  budgets: %u deltas sent what earlier ones withheld\n", stats.owed);
    CHECK(stats.owed > 0);
    CHECK(stats.listed_one + stats.listed_many > 0);
}

TEST(indices_spread_far_apart_and_reused_round_trip) {
    stats_t stats;
    memset(&stats, 0, sizeof stats);
    for (uint64_t seed = 300; seed < 306; seed++) {
        fx_rng_t rng = {seed};
        setup_t setup = {.plain = 1 + fx_rng_below(&rng, 20),
                         .population = 30 + fx_rng_below(&rng, 200),
                         .ticks = 16,
                         .many_sets = seed % 2 == 1,
                         .peer = -1,
                         .push = 1};
        run_seed(seed, setup, &stats);
    }
    print_stats("spread indices", &stats);
}

/* Reduced from seed 16 of random_schemas_and_replicators_round_trip_every_tick (tick 13: a delta
 * of one added pair, no record, from a replicator with quantized fields). When a delta has no
 * record, the replica's applying pass still reads a records' plan where the relations' section
 * starts (src/replica.c, read_entities: `read_plan(r, d)` after `r->at = start`, where the
 * checking pass has `if (records) read_plan(r, d)`); when those bytes do not read as a plan (an
 * event count whose low byte is above 20, the gap parameter's limit, as here; or quantized
 * fields' frames that run into bytes out of range), the reader fails, read_body skips every
 * relation section, and tes_delta_apply still returns TES_OK with applied true: the pair events
 * are lost for good (later deltas from this tick do not carry them again). */
TEST(pair_events_of_a_delta_without_records_arrive) {
    static const tes_field_desc_t fields[] = {{"x", TES_F32, 0}};
    tes_world_t *source = fx_world(NULL), *replica = fx_world(NULL);
    tes_component_t pos = fx_component(source, "Pos", fields, 1);
    tes_component_t likes = fx_relation(source, "Likes", NULL, 0, 0);
    CHECK_EQ(fx_component(replica, "Pos", fields, 1), pos);
    CHECK_EQ(fx_relation(replica, "Likes", NULL, 0, 0), likes);
    tes_replicator_t *rep = NULL;
    tes_replicator_desc_t desc = {.components = NULL};
    CHECK_OK(tes_replicator_create(source, &desc, &rep));
    tes_entity_t e[22];
    CHECK_OK(tes_spawn_batch(source, &pos, 1, 22, e));
    for (uint32_t round = 0; round < 2; round++) {
        /* First the keyframe, then 21 pairs and nothing else: a delta without records whose
         * relation section starts with the count 21. */
        for (uint32_t i = 1; round == 1 && i < 22; i++)
            CHECK_OK(tes_pair_add(source, e[i], likes, e[0]));
        const uint8_t *bytes = NULL;
        uint32_t size = 0;
        uint64_t tick = 0;
        CHECK_OK(tes_delta_encode(rep, tes_replica_tick(replica), &bytes, &size, &tick));
        if (round == 1) {
            run_t *r = (run_t *)fx_malloc(sizeof *r);
            r->doing = "reading the head";
            head_t head = read_head(r, bytes, size); /* (not a keyframe: no schema to check) */
            CHECK(!head.keyframe);
            CHECK_EQ(head.records, 0);
            CHECK_EQ(bytes[size - 21 * 4 - 4], 21); /* the relation section: 21 events */
        }
        bool applied = false;
        CHECK_OK(tes_delta_apply(replica, bytes, size, &applied));
        CHECK(applied);
        CHECK_EQ(tes_replica_tick(replica), tick);
    }
    uint32_t count = 0;
    CHECK_OK(tes_pair_sources(source, likes, e[0], list_a, LIST_CAP, &count));
    CHECK_EQ(count, 21);
    CHECK_OK(tes_pair_sources(replica, likes, e[0], list_b, LIST_CAP, &count));
    CHECK_EQ(count, 21); /* fails: 0, and the replica is at the delta's tick */
    CHECK(!memcmp(list_a, list_b, 21 * sizeof *list_a));
}
