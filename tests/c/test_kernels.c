/* Kernels: tes_query_apply over dense and filtered runs; every op on f32 and f64 scalars and
 * arrays, and on every integer type (saturating at its range), across several chunks; change
 * marking; SUB_COLLECT's list of crossing entities; every check leaving the world as it was;
 * out of memory; the wasm32 layout of tes_op_t. */
#include "fixtures.h"

#include <math.h>
#include <stddef.h>

/* Body and Src share this layout, so every Body field has a Src twin for ADD_SCALED. */
enum { F, D, FA, DA, I, G, I8, U8, I16, U16, U32, UA, FIELD_COUNT };
static const tes_field_desc_t body_fields[] = {
    {"f", TES_F32, 0},   {"d", TES_F64, 0},   {"fa", TES_F32, 3},  {"da", TES_F64, 2},
    {"i", TES_I32, 0},   {"g", TES_F32, 0},   {"i8", TES_I8, 0},   {"u8", TES_U8, 0},
    {"i16", TES_I16, 0}, {"u16", TES_U16, 0}, {"u32", TES_U32, 0}, {"ua", TES_U8, 3}};
static const uint32_t field_length[FIELD_COUNT] = {1, 1, 3, 2, 1, 1, 1, 1, 1, 1, 1, 3};
static const tes_type_t field_type[FIELD_COUNT] = {TES_F32, TES_F64, TES_F32, TES_F64,
                                                   TES_I32, TES_F32, TES_I8,  TES_U8,
                                                   TES_I16, TES_U16, TES_U32, TES_U8};
static const uint32_t int_fields[] = {I, I8, U8, I16, U16, U32, UA};

/* The range of an integer type. */
static void type_range(tes_type_t type, double *lo, double *hi) {
    switch (type) {
    case TES_I8:
        *lo = INT8_MIN, *hi = INT8_MAX;
        return;
    case TES_U8:
        *lo = 0, *hi = UINT8_MAX;
        return;
    case TES_I16:
        *lo = INT16_MIN, *hi = INT16_MAX;
        return;
    case TES_U16:
        *lo = 0, *hi = UINT16_MAX;
        return;
    case TES_I32:
        *lo = INT32_MIN, *hi = INT32_MAX;
        return;
    case TES_U32:
        *lo = 0, *hi = UINT32_MAX;
        return;
    default:
        *lo = -INFINITY, *hi = INFINITY;
        return;
    }
}

static bool is_integral(tes_type_t type) {
    return type != TES_F32 && type != TES_F64;
}
static const tes_field_desc_t other_fields[] = {{"o", TES_F32, 0}};

#define MAX_ENTITIES 400
#define MAX_ELEMENTS 3

typedef struct scene_t {
    tes_world_t *world;
    tes_component_t body, src, tag, other;
    tes_query_t *plain; /* all {Body, Src}: matches {Body, Src} and {Body, Src, Tag} */
    /* Every entity, the matched ones first. */
    tes_entity_t entities[MAX_ENTITIES];
    uint32_t count, matched;
    uint32_t capacity; /* of {Body, Src} */
} scene_t;

/* The value an element starts with: integers in [-9, 9], exact in every type; integer fields
 * take [0, 18] if unsigned, and one entity in four starts within 18 of the type's top (or, if
 * signed, bottom), where kernels saturate. */
static double start_value(uint32_t i, uint32_t comp, uint32_t field, uint32_t element) {
    double v = (double)((int)((i * 7u + comp * 5u + field * 3u + element * 11u) % 19u) - 9);
    if (!is_integral(field_type[field])) return v;
    double lo, hi;
    type_range(field_type[field], &lo, &hi);
    if (i % 4 == 1) return hi - (v + 9);
    if (i % 4 == 3 && lo < 0) return lo + (v + 9);
    return lo < 0 ? v : v + 9;
}

static bool has(scene_t *s, uint32_t i, tes_component_t c) {
    return fx_has(s->world, s->entities[i], c);
}

static void set_start_values(scene_t *s) {
    const tes_component_t comps[2] = {s->body, s->src};
    for (uint32_t i = 0; i < s->count; i++) {
        for (uint32_t c = 0; c < 2; c++) {
            if (!has(s, i, comps[c])) continue;
            for (uint32_t f = 0; f < FIELD_COUNT; f++) {
                for (uint32_t e = 0; e < field_length[f]; e++) {
                    CHECK_OK(tes_set_number(s->world, s->entities[i], comps[c], f, e,
                                            start_value(i, c, f, e)));
                }
            }
        }
    }
}

static void spawn_into(scene_t *s, const tes_component_t *set, uint32_t set_count, uint32_t n) {
    CHECK(s->count + n <= MAX_ENTITIES);
    CHECK_OK(tes_spawn_batch(s->world, set, set_count, n, s->entities + s->count));
    s->count += n;
}

/* {Body, Src}: three full chunks and a partial one; {Body, Src, Tag}: a full chunk and a
 * partial one; then unmatched {Body} and {Src, Other}. */
static scene_t make_scene(const tes_world_desc_t *desc) {
    scene_t s = {0};
    tes_world_desc_t d = desc ? *desc : (tes_world_desc_t){0};
    if (!d.chunk_bytes) d.chunk_bytes = 4096;
    s.world = fx_world(&d);
    s.body = fx_component(s.world, "Body", body_fields, FIELD_COUNT);
    s.src = fx_component(s.world, "Src", body_fields, FIELD_COUNT);
    s.tag = fx_tag(s.world, "Tag");
    s.other = fx_component(s.world, "Other", other_fields, 1);
    tes_archetype_t bs;
    CHECK_OK(tes_archetype_find(s.world, FX_IDS(s.body, s.src), &bs));
    s.capacity = fx_archetype(s.world, bs).capacity;
    CHECK(s.capacity >= 8);
    spawn_into(&s, FX_IDS(s.body, s.src), 3 * s.capacity + s.capacity / 2 + 1);
    spawn_into(&s, FX_IDS(s.body, s.src, s.tag), s.capacity + 3);
    s.matched = s.count;
    spawn_into(&s, FX_IDS(s.body), 5);
    spawn_into(&s, FX_IDS(s.src, s.other), 5);
    CHECK_EQ(fx_archetype(s.world, bs).chunk_count, 4);
    set_start_values(&s);
    s.plain = fx_query(s.world, &(tes_query_desc_t){.all = FX_IDS(s.body, s.src)});
    return s;
}

/* Every float value of Body and Src of every entity (0 where the entity lacks it). */
typedef struct values_t {
    double v[MAX_ENTITIES][2][FIELD_COUNT][MAX_ELEMENTS];
} values_t;

static values_t *read_values(scene_t *s) {
    values_t *values = fx_malloc(sizeof *values);
    const tes_component_t comps[2] = {s->body, s->src};
    for (uint32_t i = 0; i < s->count; i++) {
        for (uint32_t c = 0; c < 2; c++) {
            if (!has(s, i, comps[c])) continue;
            for (uint32_t f = 0; f < FIELD_COUNT; f++) {
                for (uint32_t e = 0; e < field_length[f]; e++)
                    values->v[i][c][f][e] = fx_get_number(s->world, s->entities[i], comps[c], f, e);
            }
        }
    }
    return values;
}

/* What the op makes of a (b: the source element), rounded to the field's type. The test values
 * keep every result exact, so the order of operations cannot matter. */
static double expected_value(const tes_op_t *op, tes_type_t type, double a, double b) {
    double r = a;
    switch (op->kind) {
    case TES_OP_FILL:
        r = op->k;
        break;
    case TES_OP_ADD:
        r = a + op->k;
        break;
    case TES_OP_SCALE:
        r = a * op->k;
        break;
    case TES_OP_ADD_SCALED:
        r = a + b * op->k;
        break;
    case TES_OP_CLAMP:
        r = a < op->lo ? op->lo : a > op->hi ? op->hi : a;
        break;
    case TES_OP_SUB_COLLECT:
        r = a - op->k;
        break;
    default:
        CHECK(false);
    }
    if (is_integral(type)) {
        /* Saturation: held to the type's range. */
        double lo, hi;
        type_range(type, &lo, &hi);
        return r < lo ? lo : r > hi ? hi : r;
    }
    return type == TES_F32 ? (double)(float)r : r;
}

static uint32_t comp_slot(scene_t *s, tes_component_t c) {
    CHECK(c == s->body || c == s->src);
    return c == s->body ? 0 : 1;
}

static bool listed(const tes_entity_t *list, uint32_t n, tes_entity_t e) {
    for (uint32_t i = 0; i < n; i++) {
        if (list[i] == e) return true;
    }
    return false;
}

/* Applies `op` through `q`, which must visit exactly targets[0..n-1], and checks every value
 * of every entity (only the targets' op field changed, as the op says) and the collected list
 * (exactly the targets that crossed, each once). */
static void check_apply(scene_t *s, tes_query_t *q, const tes_op_t *op, const tes_entity_t *targets,
                        uint32_t n) {
    values_t *before = read_values(s);
    uint32_t ca = comp_slot(s, op->component);
    uint32_t cb = op->kind == TES_OP_ADD_SCALED ? comp_slot(s, op->src_component) : 0;
    fx_entities_t *crossing = fx_entities_new();
    for (uint32_t i = 0; i < s->count; i++) {
        if (!listed(targets, n, s->entities[i]) || op->kind != TES_OP_SUB_COLLECT) continue;
        bool crossed = false;
        for (uint32_t e = 0; e < field_length[op->field]; e++) {
            double a = before->v[i][ca][op->field][e];
            crossed |= a > 0 && expected_value(op, field_type[op->field], a, 0) <= 0;
        }
        if (crossed) fx_entities_push(crossing, s->entities[i]);
    }

    const tes_entity_t *collected = (const tes_entity_t *)(uintptr_t)1;
    uint32_t collected_count = 12345;
    CHECK_OK(tes_query_apply(s->world, q, op, &collected, &collected_count));
    fx_entities_t *got = fx_entities_new();
    CHECK(collected_count == 0 ? collected == NULL : collected != NULL);
    for (uint32_t i = 0; i < collected_count; i++)
        fx_entities_push(got, collected[i]);
    FX_CHECK_SAME_ENTITIES(got, crossing->items, crossing->count);

    values_t *after = read_values(s);
    for (uint32_t i = 0; i < s->count; i++) {
        bool target = listed(targets, n, s->entities[i]);
        for (uint32_t c = 0; c < 2; c++) {
            for (uint32_t f = 0; f < FIELD_COUNT; f++) {
                for (uint32_t e = 0; e < field_length[f]; e++) {
                    double want = before->v[i][c][f][e];
                    if (target && c == ca && f == op->field) {
                        double b =
                            op->kind == TES_OP_ADD_SCALED ? before->v[i][cb][op->src_field][e] : 0;
                        want = expected_value(op, field_type[f], want, b);
                    }
                    if (after->v[i][c][f][e] != want) {
                        harness_fail(__FILE__, __LINE__,
                                     "op %u on field %u: entity #%u comp %u field %u [%u] = %g, "
                                     "expected %g (was %g)",
                                     op->kind, op->field, i, c, f, e, after->v[i][c][f][e], want,
                                     before->v[i][c][f][e]);
                    }
                }
            }
        }
    }
    CHECK_OK(tes_world_validate(s->world));
}

static tes_op_t make_op(uint32_t kind, tes_component_t component, uint32_t field, double k) {
    return (tes_op_t){.k = k,
                      .lo = -2,
                      .hi = 3.5,
                      .kind = kind,
                      .component = component,
                      .field = field,
                      .src_component = component,
                      .src_field = field};
}

static const uint32_t float_fields[] = {F, D, FA, DA};

/* ---------------------------------------------------------------------------------------- */
/* Dense runs                                                                                */
/* ---------------------------------------------------------------------------------------- */

TEST(every_op_on_f32_and_f64_scalars_and_arrays_over_several_chunks) {
    scene_t s = make_scene(NULL);
    for (uint32_t kind = TES_OP_FILL; kind <= TES_OP_LAST; kind++) {
        for (uint32_t i = 0; i < 4; i++) {
            uint32_t field = float_fields[i];
            tes_op_t op = make_op(kind, s.body, field, kind == TES_OP_SUB_COLLECT ? 2 : 1.5);
            op.src_component = s.src;
            check_apply(&s, s.plain, &op, s.entities, s.matched);
            /* Negative and fractional operands too. */
            op.k = -0.25;
            check_apply(&s, s.plain, &op, s.entities, s.matched);
            set_start_values(&s);
        }
    }
}

/* Integer operands of every kind: small, negative (signed types), the type's extremes; clamp
 * bounds inside the range and the whole range. Results beyond the range saturate. */
TEST(every_op_on_integer_fields_saturates_at_the_type_range) {
    scene_t s = make_scene(NULL);
    for (uint32_t kind = TES_OP_FILL; kind <= TES_OP_LAST; kind++) {
        for (uint32_t i = 0; i < sizeof int_fields / sizeof *int_fields; i++) {
            uint32_t field = int_fields[i];
            double lo, hi;
            type_range(field_type[field], &lo, &hi);
            const double operands[] = {3, lo < 0 ? -3 : 0, hi, lo, lo < 0 ? -1 : 2};
            for (uint32_t j = 0; j < 5; j++) {
                tes_op_t op = make_op(kind, s.body, field, operands[j]);
                op.src_component = s.src;
                op.lo = j == 4 ? lo : lo < 0 ? -5.0 + j : j;
                op.hi = j == 4 ? hi : op.lo + 7 * j;
                check_apply(&s, s.plain, &op, s.entities, s.matched);
                set_start_values(&s);
            }
        }
    }
    /* a += a * k on an integer field: the same saturation. */
    tes_op_t op = make_op(TES_OP_ADD_SCALED, s.body, I16, 300);
    check_apply(&s, s.plain, &op, s.entities, s.matched);
}

/* A u8 timer counted down: it stops at 0 and is collected once, on the call that reaches 0. */
TEST(an_unsigned_countdown_stops_at_zero_and_collects_each_entity_once) {
    scene_t s = make_scene(NULL);
    for (uint32_t i = 0; i < s.count; i++) {
        if (has(&s, i, s.body))
            CHECK_OK(tes_set_number(s.world, s.entities[i], s.body, U8, 0, i % 4));
    }
    tes_op_t op = make_op(TES_OP_SUB_COLLECT, s.body, U8, 1);
    uint32_t total = 0;
    for (int call = 0; call < 5; call++) {
        const tes_entity_t *crossed = NULL;
        uint32_t n = 0;
        CHECK_OK(tes_query_apply(s.world, s.plain, &op, &crossed, &n));
        /* Call c collects the rows that held c + 1: about a quarter each time, then none. */
        for (uint32_t k = 0; k < n; k++) {
            uint32_t i = 0;
            while (s.entities[i] != crossed[k])
                i++;
            CHECK_EQ(i % 4, (uint32_t)call + 1);
        }
        if (call >= 3) CHECK_EQ(n, 0);
        total += n;
    }
    uint32_t ticking = 0;
    for (uint32_t i = 0; i < s.matched; i++) {
        ticking += i % 4 != 0;
        CHECK_NUM_EQ(fx_get_number(s.world, s.entities[i], s.body, U8, 0), 0);
    }
    CHECK_EQ(total, ticking);
}

TEST(ops_on_the_source_component_and_same_component_sources) {
    scene_t s = make_scene(NULL);
    /* The target may be any component of the query, here Src. */
    tes_op_t op = make_op(TES_OP_SCALE, s.src, DA, -3);
    check_apply(&s, s.plain, &op, s.entities, s.matched);
    /* b from another field of the same component: Body.f += Body.g * k. */
    op = make_op(TES_OP_ADD_SCALED, s.body, F, 0.5);
    op.src_field = G;
    check_apply(&s, s.plain, &op, s.entities, s.matched);
    /* b is a itself: a += a * k, scalar and array, f32 and f64. */
    for (uint32_t i = 0; i < 4; i++) {
        op = make_op(TES_OP_ADD_SCALED, s.body, float_fields[i], 2);
        check_apply(&s, s.plain, &op, s.entities, s.matched);
    }
    /* src fields are ignored by every op but ADD_SCALED. */
    op = make_op(TES_OP_ADD, s.body, F, 1);
    op.src_component = 999;
    op.src_field = 999;
    check_apply(&s, s.plain, &op, s.entities, s.matched);
}

TEST(queries_with_none_any_and_tags_apply_to_what_they_match) {
    scene_t s = make_scene(NULL);
    /* Body and Src, without Tag: only the {Body, Src} archetype. */
    tes_query_t *q =
        fx_query(s.world, &(tes_query_desc_t){.all = FX_IDS(s.body, s.src), .none = FX_IDS(s.tag)});
    uint32_t n = 3 * s.capacity + s.capacity / 2 + 1;
    tes_op_t op = make_op(TES_OP_ADD, s.body, FA, 4);
    check_apply(&s, q, &op, s.entities, n);
    /* all = {Body}: {Body} alone too, and Src is not guaranteed. */
    tes_query_t *body_only = fx_query(s.world, &(tes_query_desc_t){.all = FX_IDS(s.body)});
    tes_entity_t targets[MAX_ENTITIES];
    uint32_t t = 0;
    for (uint32_t i = 0; i < s.count; i++) {
        if (has(&s, i, s.body)) targets[t++] = s.entities[i];
    }
    op = make_op(TES_OP_CLAMP, s.body, D, 0);
    check_apply(&s, body_only, &op, targets, t);
    op = make_op(TES_OP_ADD_SCALED, s.body, D, 1);
    op.src_component = s.src;
    CHECK_ERR(tes_query_apply(s.world, body_only, &op, NULL, NULL), TES_ERR_MISSING_COMPONENT);
    /* A query that matches nothing applies to nothing. */
    tes_query_t *none = fx_query(
        s.world, &(tes_query_desc_t){.all = FX_IDS(s.body, s.other), .none = FX_IDS(s.src)});
    uint32_t count = 99;
    op = make_op(TES_OP_SUB_COLLECT, s.body, F, 100);
    fx_snapshot_t *before = fx_snapshot_of(s.world);
    CHECK_OK(tes_query_apply(s.world, none, &op, NULL, &count));
    CHECK_EQ(count, 0);
    FX_CHECK_UNCHANGED(before, s.world);
}

TEST(clamp_keeps_nan_and_fill_takes_infinity) {
    scene_t s = make_scene(NULL);
    tes_entity_t e = s.entities[0];
    CHECK_OK(tes_set_number(s.world, e, s.body, F, 0, NAN));
    CHECK_OK(tes_set_number(s.world, e, s.body, DA, 1, NAN));
    tes_op_t op = make_op(TES_OP_CLAMP, s.body, F, 0);
    CHECK_OK(tes_query_apply(s.world, s.plain, &op, NULL, NULL));
    op.field = DA;
    CHECK_OK(tes_query_apply(s.world, s.plain, &op, NULL, NULL));
    CHECK(isnan(fx_get_number(s.world, e, s.body, F, 0)));
    CHECK(isnan(fx_get_number(s.world, e, s.body, DA, 1)));
    CHECK_NUM_EQ(fx_get_number(s.world, s.entities[1], s.body, F, 0),
                 expected_value(&op, TES_F32, start_value(1, 0, F, 0), 0));
    /* Infinity is not a loss (tes_set_number takes it too); an equal lo and hi is a FILL. */
    op = make_op(TES_OP_FILL, s.body, F, INFINITY);
    CHECK_OK(tes_query_apply(s.world, s.plain, &op, NULL, NULL));
    CHECK_NUM_EQ(fx_get_number(s.world, e, s.body, F, 0), INFINITY);
    op = make_op(TES_OP_CLAMP, s.body, FA, 0);
    op.lo = op.hi = -1.5;
    CHECK_OK(tes_query_apply(s.world, s.plain, &op, NULL, NULL));
    CHECK_NUM_EQ(fx_get_number(s.world, s.entities[s.matched - 1], s.body, FA, 2), -1.5);
    /* f64 takes what f32 cannot. */
    op = make_op(TES_OP_FILL, s.body, D, 1e300);
    CHECK_OK(tes_query_apply(s.world, s.plain, &op, NULL, NULL));
    CHECK_NUM_EQ(fx_get_number(s.world, e, s.body, D, 0), 1e300);
}

TEST(f32_ops_compute_in_float) {
    scene_t s = make_scene(NULL);
    /* 0.1 is not a float: the op uses (float)0.1 and float arithmetic throughout. */
    tes_op_t op = make_op(TES_OP_FILL, s.body, F, 1);
    CHECK_OK(tes_query_apply(s.world, s.plain, &op, NULL, NULL));
    op = make_op(TES_OP_ADD, s.body, F, 0.1);
    for (int i = 0; i < 3; i++)
        CHECK_OK(tes_query_apply(s.world, s.plain, &op, NULL, NULL));
    volatile float want = 1.0f;
    for (int i = 0; i < 3; i++)
        want = want + (float)0.1;
    CHECK((double)want != 1.0 + 0.1 + 0.1 + 0.1); /* so the check below tells the two apart */
    for (uint32_t i = 0; i < s.matched; i++)
        CHECK_NUM_EQ(fx_get_number(s.world, s.entities[i], s.body, F, 0), want);
}

/* ---------------------------------------------------------------------------------------- */
/* SUB_COLLECT                                                                               */
/* ---------------------------------------------------------------------------------------- */

static const tes_field_desc_t life_fields[] = {
    {"t", TES_F32, 0}, {"t3", TES_F32, 3}, {"d", TES_F64, 0}, {"d3", TES_F64, 3}};

/* Elements across the vector blocks of one big chunk: a row whose elements straddle a block
 * boundary is collected once, rows already <= 0 are not, the first and last rows are. */
TEST(sub_collect_returns_exactly_the_crossing_entities) {
    tes_world_t *world = fx_world(NULL);
    tes_component_t life = fx_component(world, "Life", life_fields, 4);
    enum { N = 1000 };
    tes_entity_t *e = fx_malloc(N * sizeof *e);
    CHECK_OK(tes_spawn_batch(world, &life, 1, N, e));
    CHECK_EQ(fx_stats(world).chunk_count, 1);
    tes_query_t *q = fx_query(world, &(tes_query_desc_t){.all = &life, .all_count = 1});
    for (uint32_t field = 0; field < 4; field++) {
        bool array = field == 1 || field == 3;
        tes_op_t fill = {.kind = TES_OP_FILL, .component = life, .field = field, .k = 5};
        CHECK_OK(tes_query_apply(world, q, &fill, NULL, NULL));
        /* Elements (row * length + element) 0, 511 and 512, 2999 / 999, plus ones at or below
         * 0 that must not count, and one that lands exactly on 0. */
        struct {
            uint32_t row, element;
            double value;
        } set[] = {{0, 0, 1},
                   {170, array ? 1 : 0, 0.5},
                   {170, array ? 2 : 0, 1},
                   {511, 0, 1},
                   {512, 0, 1.5},
                   {N - 1, array ? 2 : 0, 2},
                   {300, 0, 0},
                   {301, array ? 1 : 0, -3},
                   {302, 0, 2.5}};
        for (uint32_t i = 0; i < sizeof set / sizeof set[0]; i++)
            CHECK_OK(
                tes_set_number(world, e[set[i].row], life, field, set[i].element, set[i].value));
        tes_op_t op = {.kind = TES_OP_SUB_COLLECT, .component = life, .field = field, .k = 2};
        const tes_entity_t *got = NULL;
        uint32_t count = 0;
        CHECK_OK(tes_query_apply(world, q, &op, &got, &count));
        /* In visit order: ascending rows of the one chunk. */
        const tes_entity_t want[] = {e[0], e[170], e[511], e[512], e[N - 1]};
        CHECK_EQ(count, 5);
        for (uint32_t i = 0; i < 5; i++)
            CHECK_EQ(got[i], want[i]);
        CHECK_NUM_EQ(fx_get_number(world, e[300], life, field, 0), -2);
        CHECK_NUM_EQ(fx_get_number(world, e[302], life, field, 0), 0.5);
        CHECK_NUM_EQ(fx_get_number(world, e[N - 1], life, field, array ? 2 : 0), 0);
        CHECK_NUM_EQ(fx_get_number(world, e[7], life, field, 0), 3);
        /* Nothing crosses the second time: all that was > 0 and is now <= 0 went already. */
        op.k = 0.25;
        CHECK_OK(tes_query_apply(world, q, &op, &got, &count));
        CHECK_EQ(count, 0);
        CHECK(got == NULL);
    }
}

TEST(sub_collect_over_several_chunks_scalars_and_arrays) {
    scene_t s = make_scene(NULL);
    for (uint32_t i = 0; i < 4; i++) {
        tes_op_t op = make_op(TES_OP_SUB_COLLECT, s.body, float_fields[i], 3);
        check_apply(&s, s.plain, &op, s.entities, s.matched);
        check_apply(&s, s.plain, &op, s.entities, s.matched);
        op.k = -20; /* upward: nothing crosses */
        check_apply(&s, s.plain, &op, s.entities, s.matched);
    }
}

TEST(collected_list_belongs_to_the_query_until_its_next_run) {
    scene_t s = make_scene(NULL);
    tes_query_t *other = fx_query(s.world, &(tes_query_desc_t){.all = FX_IDS(s.body, s.src)});
    tes_op_t op = make_op(TES_OP_SUB_COLLECT, s.body, F, 1);
    const tes_entity_t *first = NULL, *second = NULL;
    uint32_t first_count = 0, second_count = 0;
    CHECK_OK(tes_query_apply(s.world, s.plain, &op, &first, &first_count));
    CHECK(first_count > 0);
    tes_entity_t copy[MAX_ENTITIES];
    memcpy(copy, first, first_count * sizeof *copy);
    /* Another query's apply does not touch this one's list. */
    CHECK_OK(tes_query_apply(s.world, other, &op, &second, &second_count));
    CHECK(second != first);
    for (uint32_t i = 0; i < first_count; i++)
        CHECK_EQ(first[i], copy[i]);
    /* Only out_count, only out_entities, neither. */
    second_count = 7;
    CHECK_OK(tes_query_apply(s.world, other, &op, NULL, &second_count));
    CHECK_OK(tes_query_apply(s.world, other, &op, &second, NULL));
    CHECK_OK(tes_query_apply(s.world, other, &op, NULL, NULL));
    /* Every other op reports nothing. */
    op.kind = TES_OP_ADD;
    second = copy;
    second_count = 7;
    CHECK_OK(tes_query_apply(s.world, other, &op, &second, &second_count));
    CHECK_EQ(second_count, 0);
    CHECK(second == NULL);
}

/* ---------------------------------------------------------------------------------------- */
/* Filtered runs and marking                                                                 */
/* ---------------------------------------------------------------------------------------- */

/* Marks Src changed on every third matched entity (across every chunk) and a few unmatched
 * ones; returns the matched ones. */
static uint32_t mark_some_src(scene_t *s, tes_entity_t *out, uint32_t offset) {
    uint32_t n = 0;
    for (uint32_t i = offset; i < s->matched; i += 3) {
        CHECK_OK(tes_mark_changed(s->world, s->entities[i], s->src));
        out[n++] = s->entities[i];
    }
    for (uint32_t i = s->count - 5; i < s->count; i++)
        CHECK_OK(tes_mark_changed(s->world, s->entities[i], s->src)); /* {Src, Other} */
    return n;
}

TEST(filtered_queries_apply_to_their_dirty_rows_only) {
    scene_t s = make_scene(NULL);
    tes_query_t *q =
        fx_query(s.world, &(tes_query_desc_t){.all = FX_IDS(s.body), .changed = FX_IDS(s.src)});
    for (uint32_t kind = TES_OP_FILL; kind <= TES_OP_LAST; kind++) {
        for (uint32_t i = 0; i < 4; i++) {
            /* Values that land on 0 and cross it, and a run that saw the reset. */
            set_start_values(&s);
            fx_run(s.world, q);
            tes_entity_t targets[MAX_ENTITIES];
            uint32_t n = mark_some_src(&s, targets, (kind + i) % 3);
            CHECK(n > 10);
            tes_op_t op =
                make_op(kind, s.body, float_fields[i], kind == TES_OP_SUB_COLLECT ? 1 : 2);
            op.src_component = s.src;
            uint64_t tick = fx_stats(s.world).change_tick;
            check_apply(&s, q, &op, targets, n);
            /* The apply was the query's run: the next one sees nothing. */
            CHECK_EQ(tes_query_last_run(q), tick);
            CHECK_EQ(fx_stats(s.world).change_tick, tick + 1);
            check_apply(&s, q, &op, NULL, 0);
        }
    }
}

TEST(filtered_integer_ops_apply_to_their_dirty_rows_only) {
    scene_t s = make_scene(NULL);
    tes_query_t *q =
        fx_query(s.world, &(tes_query_desc_t){.all = FX_IDS(s.body), .changed = FX_IDS(s.src)});
    for (uint32_t kind = TES_OP_FILL; kind <= TES_OP_LAST; kind++) {
        for (uint32_t i = 0; i < sizeof int_fields / sizeof *int_fields; i++) {
            set_start_values(&s);
            fx_run(s.world, q);
            tes_entity_t targets[MAX_ENTITIES];
            uint32_t n = mark_some_src(&s, targets, (kind + i) % 3);
            CHECK(n > 10);
            double lo, hi;
            type_range(field_type[int_fields[i]], &lo, &hi);
            tes_op_t op = make_op(kind, s.body, int_fields[i], kind == TES_OP_FILL ? hi : 20);
            op.src_component = s.src;
            op.lo = 1;
            op.hi = 9;
            check_apply(&s, q, &op, targets, n);
            check_apply(&s, q, &op, NULL, 0);
        }
    }
}

/* Integer kernels mark what they write as float kernels do: every visited row, or (by value)
 * the rows whose bytes changed, which leaves out rows that saturated where they were. */
TEST(integer_kernels_mark_like_float_kernels) {
    scene_t s = make_scene(NULL);
    tes_query_t *watcher = fx_query(s.world, &(tes_query_desc_t){.changed = FX_IDS(s.body)});
    fx_run(s.world, watcher);
    tes_op_t op = make_op(TES_OP_ADD, s.body, U16, 1);
    CHECK_OK(tes_query_apply(s.world, s.plain, &op, NULL, NULL));
    FX_CHECK_SAME_ENTITIES(fx_run(s.world, watcher), s.entities, s.matched);
    tes_query_t *filtered =
        fx_query(s.world, &(tes_query_desc_t){.all = FX_IDS(s.body), .changed = FX_IDS(s.src)});
    fx_run(s.world, filtered);
    tes_entity_t targets[MAX_ENTITIES];
    uint32_t n = mark_some_src(&s, targets, 2);
    op = make_op(TES_OP_SUB_COLLECT, s.body, I8, 7);
    CHECK_OK(tes_query_apply(s.world, filtered, &op, NULL, NULL));
    FX_CHECK_SAME_ENTITIES(fx_run(s.world, watcher), targets, n);

    static const tes_field_desc_t count_fields[] = {{"c", TES_U8, 0}};
    tes_component_t counter =
        fx_component_flags(s.world, "Counter", count_fields, 1, TES_COMPONENT_CHANGE_BY_VALUE);
    tes_entity_t e[300];
    CHECK_OK(tes_spawn_batch(s.world, FX_IDS(counter), 300, e));
    for (int i = 0; i < 300; i++)
        CHECK_OK(tes_set_number(s.world, e[i], counter, 0, 0, i % 3 ? 254 : 255));
    tes_query_t *counted = fx_query(s.world, &(tes_query_desc_t){.changed = FX_IDS(counter)});
    fx_run(s.world, counted);
    tes_query_t *all = fx_query(s.world, &(tes_query_desc_t){.all = FX_IDS(counter)});
    tes_op_t add = {.kind = TES_OP_ADD, .component = counter, .k = 1};
    CHECK_OK(tes_query_apply(s.world, all, &add, NULL, NULL));
    fx_entities_t *changed = fx_run(s.world, counted);
    CHECK_EQ(changed->count, 200); /* the 254s: 255 stays 255 */
    for (int i = 0; i < 300; i++)
        CHECK_NUM_EQ(fx_get_number(s.world, e[i], counter, 0, 0), 255);
    CHECK_OK(tes_query_apply(s.world, all, &add, NULL, NULL));
    CHECK_EQ(fx_run(s.world, counted)->count, 0);
    CHECK_OK(tes_world_validate(s.world));
}

TEST(apply_marks_exactly_the_rows_it_writes) {
    scene_t s = make_scene(NULL);
    tes_query_t *watcher = fx_query(s.world, &(tes_query_desc_t){.changed = FX_IDS(s.body)});
    tes_query_t *watch_src = fx_query(s.world, &(tes_query_desc_t){.changed = FX_IDS(s.src)});
    tes_query_t *filtered =
        fx_query(s.world, &(tes_query_desc_t){.all = FX_IDS(s.body), .changed = FX_IDS(s.src)});
    CHECK_EQ(fx_run_count(s.world, watcher), 0);
    fx_run(s.world, filtered);
    fx_run(s.world, watch_src);

    /* Unfiltered: every matched row, not {Body} alone, not the source component. */
    tes_op_t op = make_op(TES_OP_ADD_SCALED, s.body, FA, 1);
    op.src_component = s.src;
    CHECK_OK(tes_query_apply(s.world, s.plain, &op, NULL, NULL));
    FX_CHECK_SAME_ENTITIES(fx_run(s.world, watcher), s.entities, s.matched);
    CHECK_EQ(fx_run_count(s.world, watch_src), 0);
    CHECK_EQ(fx_run_count(s.world, watcher), 0);

    /* Filtered: the dirty rows only. */
    tes_entity_t targets[MAX_ENTITIES];
    uint32_t n = mark_some_src(&s, targets, 1);
    CHECK_OK(tes_query_apply(s.world, filtered, &op, NULL, NULL));
    FX_CHECK_SAME_ENTITIES(fx_run(s.world, watcher), targets, n);

    /* Ticks: the marks are newer than the applying run. */
    uint64_t added, changed;
    CHECK_OK(tes_ticks(s.world, targets[0], s.body, &added, &changed));
    CHECK_EQ(changed, tes_query_last_run(filtered) + 1);
}

TEST(a_query_filtered_on_its_target_sees_its_own_writes_next_run) {
    scene_t s = make_scene(NULL);
    tes_query_t *q = fx_query(s.world, &(tes_query_desc_t){.changed = FX_IDS(s.body)});
    fx_run(s.world, q);
    tes_entity_t targets[3] = {s.entities[0], s.entities[s.capacity + 1], s.entities[s.count - 7]};
    for (uint32_t i = 0; i < 3; i++)
        CHECK_OK(tes_mark_changed(s.world, targets[i], s.body));
    tes_op_t op = make_op(TES_OP_ADD, s.body, D, 1);
    check_apply(&s, q, &op, targets, 3);
    check_apply(&s, q, &op, targets, 3); /* its own marks, as any write during a run */
    fx_run(s.world, q);                  /* a plain run does not write: done */
    check_apply(&s, q, &op, NULL, 0);
}

TEST(untracked_components_get_no_marks_and_ticks_level_gets_ticks) {
    scene_t s = make_scene(NULL);
    tes_tracking_t level;
    CHECK_OK(tes_component_tracking(s.world, s.body, &level));
    CHECK_EQ(level, TES_UNTRACKED);
    fx_run(s.world, s.plain); /* its matching cache */
    uint64_t bytes = fx_stats(s.world).bytes_allocated;
    tes_op_t op = make_op(TES_OP_SCALE, s.body, F, 2);
    CHECK_OK(tes_query_apply(s.world, s.plain, &op, NULL, NULL));
    CHECK_EQ(fx_stats(s.world).bytes_allocated, bytes);
    uint64_t added = 9, changed = 9;
    CHECK_OK(tes_ticks(s.world, s.entities[0], s.body, &added, &changed));
    CHECK_EQ(changed, 0);
    /* A consumer that comes later saw no change of Body. */
    tes_query_t *watcher = fx_query(s.world, &(tes_query_desc_t){.changed = FX_IDS(s.body)});
    CHECK_EQ(fx_run_count(s.world, watcher), 0);
    tes_query_destroy(s.world, watcher);

    /* Body as a second filter: ticks only, still stamped. */
    tes_query_t *second = fx_query(s.world, &(tes_query_desc_t){.changed = FX_IDS(s.src, s.body)});
    CHECK_OK(tes_component_tracking(s.world, s.body, &level));
    CHECK_EQ(level, TES_TRACK_TICKS);
    fx_run(s.world, second);
    uint64_t tick = fx_stats(s.world).change_tick;
    CHECK_OK(tes_query_apply(s.world, s.plain, &op, NULL, NULL));
    for (uint32_t i = 0; i < s.count; i++) {
        if (!has(&s, i, s.body)) continue;
        CHECK_OK(tes_ticks(s.world, s.entities[i], s.body, &added, &changed));
        CHECK_EQ(changed, i < s.matched ? tick : 0);
    }
    CHECK_OK(tes_mark_changed(s.world, s.entities[2], s.src));
    FX_CHECK_VISITED(fx_run(s.world, second), s.entities[2]);
}

TEST(apply_is_one_run_of_the_query) {
    scene_t s = make_scene(NULL);
    tes_query_t *added = fx_query(s.world, &(tes_query_desc_t){.added = FX_IDS(s.body)});
    uint64_t tick = fx_stats(s.world).change_tick;
    CHECK_EQ(tes_query_last_run(added), 0);
    /* A plain query's apply is no consumer run: nothing advances. */
    tes_op_t op = make_op(TES_OP_ADD, s.body, F, 1);
    CHECK_OK(tes_query_apply(s.world, s.plain, &op, NULL, NULL));
    CHECK_EQ(fx_stats(s.world).change_tick, tick);
    CHECK_EQ(tes_query_last_run(s.plain), 0);
    /* The added query's first run: every Body entity (tracking started with the query). */
    tes_entity_t targets[MAX_ENTITIES];
    uint32_t n = 0;
    for (uint32_t i = 0; i < s.count; i++) {
        if (has(&s, i, s.body)) targets[n++] = s.entities[i];
    }
    op = make_op(TES_OP_FILL, s.body, DA, -4);
    check_apply(&s, added, &op, targets, n);
    CHECK_EQ(tes_query_last_run(added), tick);
    CHECK_EQ(fx_stats(s.world).change_tick, tick + 1);
    check_apply(&s, added, &op, NULL, 0);
    tes_entity_t e = fx_spawn(s.world, FX_IDS(s.body, s.tag));
    check_apply(&s, added, &op, NULL, 0); /* e only, which is not one of s.entities */
    CHECK_NUM_EQ(fx_get_number(s.world, e, s.body, DA, 1), -4);
    CHECK_EQ(fx_run_count(s.world, added), 0); /* the apply consumed it */
}

/* A system body may apply a kernel with another query: a run inside a run. */
typedef struct nested_t {
    tes_world_t *world;
    tes_query_t *query;
    tes_op_t op;
    tes_result_t result;
    uint32_t count;
} nested_t;

static void apply_in_system(tes_iter_t *it, void *user) {
    nested_t *n = user;
    n->result = tes_query_apply(n->world, n->query, &n->op, NULL, &n->count);
    while (tes_iter_next(it)) {
    }
}

TEST(apply_inside_a_system_and_query_in_use) {
    scene_t s = make_scene(NULL);
    tes_query_t *q = fx_query(s.world, &(tes_query_desc_t){.added = FX_IDS(s.body)});
    uint32_t stage;
    CHECK_OK(tes_stage_create(s.world, "update", &stage));
    nested_t nested = {
        .world = s.world, .query = q, .op = make_op(TES_OP_SUB_COLLECT, s.body, F, 100)};
    tes_system_t *system;
    CHECK_OK(tes_system_create(s.world,
                               &(tes_system_desc_t){.stage = stage,
                                                    .query = {.all = FX_IDS(s.src)},
                                                    .run = apply_in_system,
                                                    .user = &nested},
                               &system));
    CHECK_OK(tes_tick(s.world));
    CHECK_OK(nested.result);
    CHECK(nested.count > 0);

    /* The consumer's own live run refuses an apply, and nothing changes. */
    tes_iter_t it;
    CHECK_OK(tes_query_iter(s.world, q, &it));
    fx_snapshot_t *before = fx_snapshot_of(s.world);
    uint64_t last_run = tes_query_last_run(q);
    tes_op_t op = make_op(TES_OP_FILL, s.body, F, 7);
    uint32_t count = 5;
    CHECK_ERR(tes_query_apply(s.world, q, &op, NULL, &count), TES_ERR_QUERY_IN_USE);
    CHECK_EQ(count, 5);
    FX_CHECK_UNCHANGED_STRICT(before, s.world);
    CHECK_EQ(fx_stats(s.world).change_tick, before->stats.change_tick);
    CHECK_EQ(tes_query_last_run(q), last_run);
    /* A plain query may run inside its own run (it has no state to share). */
    tes_iter_t plain_it;
    CHECK_OK(tes_query_iter(s.world, s.plain, &plain_it));
    CHECK_OK(tes_query_apply(s.world, s.plain, &op, NULL, NULL));
    tes_iter_fini(&plain_it);
    tes_iter_fini(&it);
    CHECK_NUM_EQ(fx_get_number(s.world, s.entities[0], s.body, F, 0), 7);
    CHECK_OK(tes_world_validate(s.world));
}

/* ---------------------------------------------------------------------------------------- */
/* Checks                                                                                    */
/* ---------------------------------------------------------------------------------------- */

TEST(every_check_leaves_the_world_unchanged) {
    scene_t s = make_scene(NULL);
    tes_query_t *q = fx_query(s.world, &(tes_query_desc_t){.all = FX_IDS(s.body),
                                                           .changed = FX_IDS(s.src),
                                                           .any = FX_IDS(s.other, s.tag)});
    /* Run once so the caches exist: a refused call must then not allocate at all. */
    fx_run(s.world, q);
    tes_op_t op;
    uint32_t tagged = 3 * s.capacity + s.capacity / 2 + 1; /* the first of {Body, Src, Tag} */
    CHECK_OK(tes_mark_changed(s.world, s.entities[tagged], s.src));
    fx_snapshot_t *before = fx_snapshot_of(s.world);
    uint64_t last_run = tes_query_last_run(q);
    const tes_entity_t sentinel[1] = {77};
    struct {
        tes_op_t op;
        tes_result_t expected;
    } cases[] = {
        {{.kind = 0, .component = s.body, .field = F}, TES_ERR_INVALID_ARGUMENT},
        {{.kind = TES_OP_LAST + 1, .component = s.body, .field = F}, TES_ERR_INVALID_ARGUMENT},
        {{.kind = 0xFFFFFFFFu, .component = s.body, .field = F}, TES_ERR_INVALID_ARGUMENT},
        {{.kind = TES_OP_ADD, .component = 99, .field = F}, TES_ERR_UNKNOWN_COMPONENT},
        {{.kind = TES_OP_ADD, .component = s.tag, .field = 0}, TES_ERR_TAG_HAS_NO_DATA},
        {{.kind = TES_OP_ADD, .component = s.body, .field = FIELD_COUNT}, TES_ERR_UNKNOWN_FIELD},
        /* Integer fields take operands of their type only. */
        {{.kind = TES_OP_ADD, .component = s.body, .field = I, .k = 1.5}, TES_ERR_BAD_VALUE},
        {{.kind = TES_OP_FILL, .component = s.body, .field = I, .k = NAN}, TES_ERR_BAD_VALUE},
        {{.kind = TES_OP_FILL, .component = s.body, .field = I, .k = INFINITY}, TES_ERR_BAD_VALUE},
        {{.kind = TES_OP_ADD, .component = s.body, .field = I, .k = 2147483648.0},
         TES_ERR_BAD_VALUE},
        {{.kind = TES_OP_SCALE, .component = s.body, .field = I8, .k = -129}, TES_ERR_BAD_VALUE},
        {{.kind = TES_OP_ADD, .component = s.body, .field = U8, .k = -1}, TES_ERR_BAD_VALUE},
        {{.kind = TES_OP_SUB_COLLECT, .component = s.body, .field = UA, .k = 256},
         TES_ERR_BAD_VALUE},
        {{.kind = TES_OP_SCALE, .component = s.body, .field = U16, .k = 0.5}, TES_ERR_BAD_VALUE},
        {{.kind = TES_OP_CLAMP, .component = s.body, .field = U16, .lo = -1, .hi = 3},
         TES_ERR_BAD_VALUE},
        {{.kind = TES_OP_CLAMP, .component = s.body, .field = U32, .lo = 0, .hi = 4294967296.0},
         TES_ERR_BAD_VALUE},
        {{.kind = TES_OP_CLAMP, .component = s.body, .field = I16, .lo = 0.5, .hi = 3},
         TES_ERR_BAD_VALUE},
        {{.kind = TES_OP_ADD_SCALED,
          .component = s.body,
          .field = U8,
          .src_component = s.src,
          .src_field = I8,
          .k = 1},
         TES_ERR_BAD_FIELD_TYPE},
        {{.kind = TES_OP_ADD_SCALED, .component = s.body, .field = F, .src_component = 99},
         TES_ERR_UNKNOWN_COMPONENT},
        {{.kind = TES_OP_ADD_SCALED, .component = s.body, .field = F, .src_component = s.tag},
         TES_ERR_TAG_HAS_NO_DATA},
        {{.kind = TES_OP_ADD_SCALED,
          .component = s.body,
          .field = F,
          .src_component = s.src,
          .src_field = 40},
         TES_ERR_UNKNOWN_FIELD},
        {{.kind = TES_OP_ADD_SCALED,
          .component = s.body,
          .field = F,
          .src_component = s.src,
          .src_field = I},
         TES_ERR_BAD_FIELD_TYPE},
        {{.kind = TES_OP_ADD_SCALED,
          .component = s.body,
          .field = F,
          .src_component = s.src,
          .src_field = D},
         TES_ERR_BAD_FIELD_TYPE},
        {{.kind = TES_OP_ADD_SCALED,
          .component = s.body,
          .field = F,
          .src_component = s.src,
          .src_field = FA},
         TES_ERR_BAD_SIZE},
        {{.kind = TES_OP_ADD_SCALED,
          .component = s.body,
          .field = DA,
          .src_component = s.body,
          .src_field = D},
         TES_ERR_BAD_SIZE},
        /* Other is in `any`, so some matched archetypes may lack it. */
        {{.kind = TES_OP_ADD, .component = s.other, .field = 0}, TES_ERR_MISSING_COMPONENT},
        {{.kind = TES_OP_ADD_SCALED,
          .component = s.body,
          .field = F,
          .src_component = s.other,
          .src_field = 0},
         TES_ERR_MISSING_COMPONENT},
        {{.kind = TES_OP_ADD_SCALED,
          .component = s.other,
          .field = 0,
          .src_component = s.body,
          .src_field = F},
         TES_ERR_MISSING_COMPONENT},
        {{.kind = TES_OP_CLAMP, .component = s.body, .field = F, .lo = 2, .hi = 1},
         TES_ERR_INVALID_ARGUMENT},
        {{.kind = TES_OP_CLAMP, .component = s.body, .field = D, .lo = NAN, .hi = 1},
         TES_ERR_INVALID_ARGUMENT},
        {{.kind = TES_OP_CLAMP, .component = s.body, .field = D, .lo = 0, .hi = NAN},
         TES_ERR_INVALID_ARGUMENT},
        {{.kind = TES_OP_FILL, .component = s.body, .field = F, .k = 1e39}, TES_ERR_BAD_VALUE},
        {{.kind = TES_OP_SUB_COLLECT, .component = s.body, .field = FA, .k = -1e39},
         TES_ERR_BAD_VALUE},
        {{.kind = TES_OP_ADD_SCALED,
          .component = s.body,
          .field = F,
          .src_component = s.src,
          .src_field = G,
          .k = 3.5e38},
         TES_ERR_BAD_VALUE},
        {{.kind = TES_OP_CLAMP, .component = s.body, .field = F, .lo = -1e39, .hi = 0},
         TES_ERR_BAD_VALUE},
        {{.kind = TES_OP_CLAMP, .component = s.body, .field = FA, .lo = 0, .hi = 1e39},
         TES_ERR_BAD_VALUE},
    };
    for (uint32_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const tes_entity_t *entities = sentinel;
        uint32_t count = 5;
        tes_result_t r = tes_query_apply(s.world, q, &cases[i].op, &entities, &count);
        if (r != cases[i].expected) {
            harness_fail(__FILE__, __LINE__, "case %u: expected %s, got %s", i,
                         tes_result_name(cases[i].expected), tes_result_name(r));
        }
        CHECK(entities == sentinel);
        CHECK_EQ(count, 5);
        FX_CHECK_UNCHANGED_STRICT(before, s.world);
        CHECK_EQ(fx_stats(s.world).change_tick, before->stats.change_tick);
        CHECK_EQ(tes_query_last_run(q), last_run);
    }
    op = make_op(TES_OP_ADD, s.body, F, 1);
    CHECK_ERR(tes_query_apply(NULL, q, &op, NULL, NULL), TES_ERR_INVALID_ARGUMENT);
    CHECK_ERR(tes_query_apply(s.world, NULL, &op, NULL, NULL), TES_ERR_INVALID_ARGUMENT);
    CHECK_ERR(tes_query_apply(s.world, q, NULL, NULL, NULL), TES_ERR_INVALID_ARGUMENT);
    FX_CHECK_UNCHANGED_STRICT(before, s.world);
    /* The lifted limits: the same ops are fine on f64, and the run still sees its change. */
    op = (tes_op_t){.kind = TES_OP_FILL, .component = s.body, .field = D, .k = 1e39};
    CHECK_OK(tes_query_apply(s.world, q, &op, NULL, NULL));
    CHECK_NUM_EQ(fx_get_number(s.world, s.entities[tagged], s.body, D, 0), 1e39);
    CHECK_NUM_EQ(fx_get_number(s.world, s.entities[tagged + 1], s.body, D, 0),
                 start_value(tagged + 1, 0, D, 0));
}

/* ---------------------------------------------------------------------------------------- */
/* Out of memory                                                                             */
/* ---------------------------------------------------------------------------------------- */

/* A world of the counting allocator with entities in two archetypes over several chunks, a
 * fresh query (its first run allocates its caches and the collected list) and what it must
 * visit. */
static void oom_case(fx_alloc_t *alloc, bool filtered, int64_t k, bool *failed_once) {
    fx_alloc_init(alloc);
    tes_world_desc_t desc = {.chunk_bytes = 1024, .allocator = fx_allocator(alloc)};
    tes_world_t *world = fx_world(&desc);
    tes_component_t life = fx_component(world, "Life", life_fields, 4);
    tes_component_t tag = fx_tag(world, "Tag");
    tes_entity_t e[300];
    CHECK_OK(tes_spawn_batch(world, &life, 1, 200, e));
    CHECK_OK(tes_spawn_batch(world, FX_IDS(life, tag), 100, e + 200));
    tes_query_t *q =
        fx_query(world, filtered ? &(tes_query_desc_t){.changed = &life, .changed_count = 1}
                                 : &(tes_query_desc_t){.all = &life, .all_count = 1});
    for (uint32_t i = 0; i < 300; i++)
        CHECK_OK(tes_set_number(world, e[i], life, 1, i % 3, i % 4 == 0 ? 1 : 5));
    /* A filtered query visits the even entities only (changed after its first run). */
    if (filtered) {
        fx_run(world, q);
        for (uint32_t i = 0; i < 300; i += 2)
            CHECK_OK(tes_mark_changed(world, e[i], life));
    }
    fx_snapshot_t *before = fx_snapshot_of(world);
    uint64_t tick = fx_stats(world).change_tick;
    tes_op_t op = {.kind = TES_OP_SUB_COLLECT, .component = life, .field = 1, .k = 2};
    alloc->fail_after = (int64_t)alloc->allocs + k;
    alloc->fail_once = true;
    const tes_entity_t *got = NULL;
    uint32_t count = 0;
    tes_result_t r = tes_query_apply(world, q, &op, &got, &count);
    *failed_once = alloc->failures > 0;
    if (r == TES_ERR_OUT_OF_MEMORY) {
        CHECK(*failed_once);
        CHECK_OK(tes_world_validate(world));
        FX_CHECK_UNCHANGED(before, world);
        CHECK_EQ(fx_stats(world).change_tick, tick);
        CHECK_EQ(tes_query_last_run(q), filtered ? tick - 1 : 0);
        r = tes_query_apply(world, q, &op, &got, &count);
    }
    CHECK_OK(r);
    /* Every fourth entity crossed (1 - 2); filtered: of the even ones, which is all of them. */
    CHECK_EQ(count, 75);
    fx_entities_t *list = fx_entities_new();
    for (uint32_t i = 0; i < count; i++)
        fx_entities_push(list, got[i]);
    tes_entity_t want[75];
    for (uint32_t i = 0; i < 75; i++)
        want[i] = e[i * 4];
    FX_CHECK_SAME_ENTITIES(list, want, 75);
    for (uint32_t i = 0; i < 300; i++) {
        double was = i % 4 == 0 ? 1 : 5;
        bool visited = !filtered || i % 2 == 0;
        CHECK_NUM_EQ(fx_get_number(world, e[i], life, 1, i % 3), visited ? was - 2 : was);
    }
    fx_world_destroy_now(world);
    FX_CHECK_ALLOC_CLEAN(alloc);
}

TEST(apply_out_of_memory_has_no_partial_effects) {
    fx_alloc_t *alloc = fx_alloc_new();
    for (int filtered = 0; filtered < 2; filtered++) {
        int64_t k = 0;
        for (bool failed = true; failed; k++) {
            CHECK(k < 100);
            oom_case(alloc, filtered, k, &failed);
        }
        CHECK(k >= 2); /* at least the collected list was allocated */
    }
}

/* ---------------------------------------------------------------------------------------- */
/* ABI                                                                                       */
/* ---------------------------------------------------------------------------------------- */

#if UINTPTR_MAX == 0xffffffff
/* The offsets bindings/ writes and reads (the header's wasm32 layouts). */
_Static_assert(sizeof(tes_op_t) == 48 && _Alignof(tes_op_t) == 8, "tes_op_t wasm32 size");
_Static_assert(offsetof(tes_op_t, kind) == 24 && offsetof(tes_op_t, src_field) == 40,
               "tes_op_t wasm32 layout");
_Static_assert(sizeof(tes_collect_t) == 28, "tes_collect_t wasm32 size");
_Static_assert(offsetof(tes_collect_t, removed_counts) == 12 &&
                   offsetof(tes_collect_t, removed_total) == 16 &&
                   offsetof(tes_collect_t, pair_events) == 20 &&
                   offsetof(tes_collect_t, pair_event_count) == 24,
               "tes_collect_t wasm32 layout");
_Static_assert(sizeof(tes_pair_event_t) == 16 && offsetof(tes_pair_event_t, kind) == 12,
               "tes_pair_event_t layout");
_Static_assert(sizeof(tes_pair_term_t) == 12 && offsetof(tes_pair_term_t, op) == 8,
               "tes_pair_term_t layout");
_Static_assert(sizeof(tes_query_desc_t) == 64 && offsetof(tes_query_desc_t, pairs) == 48 &&
                   offsetof(tes_query_desc_t, pair_changes) == 56,
               "tes_query_desc_t wasm32 layout");
_Static_assert(sizeof(tes_component_desc_t) == 16 && offsetof(tes_component_desc_t, flags) == 12,
               "tes_component_desc_t wasm32 layout");
#endif

TEST(op_and_collect_layouts_are_pinned) {
    /* tes_op_t holds no pointer: the same layout natively. */
    CHECK_EQ(offsetof(tes_op_t, k), 0);
    CHECK_EQ(offsetof(tes_op_t, lo), 8);
    CHECK_EQ(offsetof(tes_op_t, hi), 16);
    CHECK_EQ(offsetof(tes_op_t, kind), 24);
    CHECK_EQ(offsetof(tes_op_t, component), 28);
    CHECK_EQ(offsetof(tes_op_t, field), 32);
    CHECK_EQ(offsetof(tes_op_t, src_component), 36);
    CHECK_EQ(offsetof(tes_op_t, src_field), 40);
    CHECK_EQ(sizeof(tes_op_t), 48);
    CHECK_EQ(TES_OP_FILL, 1);
    CHECK_EQ(TES_OP_ADD, 2);
    CHECK_EQ(TES_OP_SCALE, 3);
    CHECK_EQ(TES_OP_ADD_SCALED, 4);
    CHECK_EQ(TES_OP_CLAMP, 5);
    CHECK_EQ(TES_OP_SUB_COLLECT, 6);
    CHECK_EQ(TES_OP_LAST, 6);
#if UINTPTR_MAX == 0xffffffff
    CHECK_EQ(offsetof(tes_collect_t, entities), 0);
    CHECK_EQ(offsetof(tes_collect_t, count), 4);
    CHECK_EQ(offsetof(tes_collect_t, removed), 8);
    CHECK_EQ(offsetof(tes_collect_t, removed_counts), 12);
    CHECK_EQ(offsetof(tes_collect_t, removed_total), 16);
    CHECK_EQ(offsetof(tes_collect_t, pair_events), 20);
    CHECK_EQ(offsetof(tes_collect_t, pair_event_count), 24);
    CHECK_EQ(sizeof(tes_collect_t), 28);
#else
    CHECK_EQ(offsetof(tes_collect_t, removed_total), 32);
#endif
}
