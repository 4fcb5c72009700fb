/* Kernels: column operations over the rows one run of a query visits (tes_query_apply). An
 * unfiltered chunk is one contiguous range of its column, count * length elements, so its loop
 * is a plain `restrict` loop that clang vectorises (f32x4 / f64x2 in the -msimd128 build); a
 * filtered chunk is processed row by row. Every check happens before the run starts, and the
 * collected list is reserved for every row the run visits, so nothing can fail once values are
 * being written.
 *
 * Integer fields share one engine (int_chunk): elements are widened to int64 a block at a time,
 * computed exactly, held to the type's range (saturation) and narrowed back. Per-type loops for
 * all six integer types, as the float types have, made the module 29 KB larger (13.6 KB even
 * without vectorising them); the engine costs a few KB. */
#include "internal.h"

/* ADD_SCALED with b the very column of a: restrict would be a lie, so it has its own loop. */
#define OP_ADD_SCALED_SELF (TES_OP_LAST + 1)

/* SUB_COLLECT tests this many elements for a crossing before subtracting them with the plain
 * loop; only a block that holds one is redone element by element. Small enough to stay in L1
 * between the two passes. */
#define COLLECT_BLOCK 512u

/* Vectorised, not unrolled: unrolling these loops made the module 3.3 KB larger (0.7 KB
 * gzipped) for no measurable speed (they stream a column; 1M entities, wasm, this machine). */
#ifdef __clang__
#define VECTOR_LOOP _Pragma("clang loop unroll(disable)")
#else
#define VECTOR_LOOP
#endif

/* Everything a chunk needs, resolved once per call. The operands as float (f32 fields), double
 * (f64) or integers (the integer types, with the type's range in min..max). */
typedef struct kernel_t {
    uint32_t kind;
    tes_type_t type;
    uint32_t length; /* elements per row */
    tes_component_t component, src_component;
    uint32_t field, src_field;
    float kf, lof, hif;
    double kd, lod, hid;
    int64_t ki, loi, hii, min, max;
} kernel_t;

/* range_<T>: one operation over a[0..n) (and b[0..n)); SUB_COLLECT there is the plain
 * subtraction of a range known to hold no crossing. sub_collect_<T>: SUB_COLLECT over rows
 * [0, count) of a column, appending the entity of every row with a crossing (each once) to
 * `out`. rows_<T>: any operation over the listed rows of a column, collecting likewise. Both
 * return how many entities they appended. */
#define DEFINE_KERNELS(T, S)                                                                      \
    static void range_##S(uint32_t kind, T *restrict a, const T *restrict b, size_t n, T k, T lo, \
                          T hi) {                                                                 \
        switch (kind) {                                                                           \
        case TES_OP_FILL:                                                                         \
            VECTOR_LOOP for (size_t i = 0; i < n; i++) a[i] = k;                                  \
            break;                                                                                \
        case TES_OP_ADD:                                                                          \
            VECTOR_LOOP for (size_t i = 0; i < n; i++) a[i] += k;                                 \
            break;                                                                                \
        case TES_OP_SCALE:                                                                        \
            VECTOR_LOOP for (size_t i = 0; i < n; i++) a[i] *= k;                                 \
            break;                                                                                \
        case TES_OP_ADD_SCALED:                                                                   \
            VECTOR_LOOP for (size_t i = 0; i < n; i++) a[i] += b[i] * k;                          \
            break;                                                                                \
        case OP_ADD_SCALED_SELF:                                                                  \
            VECTOR_LOOP for (size_t i = 0; i < n; i++) a[i] += a[i] * k;                          \
            break;                                                                                \
        case TES_OP_CLAMP:                                                                        \
            /* Compare-and-select vectorises (unlike fminf / fmaxf); NaN fails both tests and     \
             * stays. */                                                                          \
            VECTOR_LOOP for (size_t i = 0; i < n; i++) {                                          \
                T v = a[i] < lo ? lo : a[i];                                                      \
                a[i] = v > hi ? hi : v;                                                           \
            }                                                                                     \
            break;                                                                                \
        case TES_OP_SUB_COLLECT: /* no crossing in this range (sub_collect_##S checked) */        \
            VECTOR_LOOP for (size_t i = 0; i < n; i++) a[i] -= k;                                 \
            break;                                                                                \
        default:                                                                                  \
            break;                                                                                \
        }                                                                                         \
    }                                                                                             \
                                                                                                  \
    static bool crosses_##S(const T *restrict a, size_t n, T k) {                                 \
        int hit = 0;                                                                              \
        VECTOR_LOOP for (size_t i = 0; i < n; i++) hit |= (a[i] > 0) & (a[i] - k <= 0);           \
        return hit != 0;                                                                          \
    }                                                                                             \
                                                                                                  \
    static uint32_t sub_collect_##S(T *restrict a, uint32_t length, uint32_t count, T k,          \
                                    const tes_entity_t *entities, tes_entity_t *out) {            \
        size_t n = (size_t)count * length;                                                        \
        uint32_t found = 0, last = UINT32_MAX; /* rows ascend: `last` keeps each row once */      \
        for (size_t start = 0; start < n; start += COLLECT_BLOCK) {                               \
            size_t end = n - start < COLLECT_BLOCK ? n : start + COLLECT_BLOCK;                   \
            if (!crosses_##S(a + start, end - start, k)) {                                        \
                range_##S(TES_OP_SUB_COLLECT, a + start, NULL, end - start, k, 0, 0);             \
                continue;                                                                         \
            }                                                                                     \
            for (size_t i = start; i < end; i++) {                                                \
                T old = a[i];                                                                     \
                a[i] = old - k;                                                                   \
                if (!(old > 0) || !(a[i] <= 0)) continue;                                         \
                uint32_t row = (uint32_t)(i / length);                                            \
                if (row != last) out[found++] = entities[row];                                    \
                last = row;                                                                       \
            }                                                                                     \
        }                                                                                         \
        return found;                                                                             \
    }                                                                                             \
                                                                                                  \
    static uint32_t rows_##S(uint32_t kind, uint32_t length, T *a, const T *b,                    \
                             const uint32_t *rows, uint32_t row_count, T k, T lo, T hi,           \
                             const tes_entity_t *entities, tes_entity_t *out) {                   \
        uint32_t found = 0;                                                                       \
        for (uint32_t r = 0; r < row_count; r++) {                                                \
            T *row = a + (size_t)rows[r] * length;                                                \
            if (kind != TES_OP_SUB_COLLECT) {                                                     \
                range_##S(kind, row, b ? b + (size_t)rows[r] * length : NULL, length, k, lo, hi); \
                continue;                                                                         \
            }                                                                                     \
            bool crossed = false;                                                                 \
            for (uint32_t i = 0; i < length; i++) {                                               \
                T old = row[i];                                                                   \
                row[i] = old - k;                                                                 \
                crossed |= old > 0 && row[i] <= 0;                                                \
            }                                                                                     \
            if (crossed) out[found++] = entities[rows[r]];                                        \
        }                                                                                         \
        return found;                                                                             \
    }

DEFINE_KERNELS(float, f32)
DEFINE_KERNELS(double, f64)

/* compare_<T>: any operation over the listed rows of a column (every row 0..count-1 when rows is
 * NULL), element by element, for a component whose changes are by value: appends each row
 * whose bytes it changed to `changed` (returning how many) and, for SUB_COLLECT, each row's
 * entity that crossed to `out` (counting in *found). The same arithmetic as the loops above,
 * one element at a time, so the values written are the same. */
#define DEFINE_COMPARING(T, S)                                                                    \
    static uint32_t compare_##S(uint32_t kind, uint32_t length, T *a, const T *b,                 \
                                const uint32_t *rows, uint32_t row_count, T k, T lo, T hi,        \
                                const tes_entity_t *entities, tes_entity_t *out, uint32_t *found, \
                                uint32_t *changed) {                                              \
        uint32_t n = 0;                                                                           \
        for (uint32_t r = 0; r < row_count; r++) {                                                \
            uint32_t row = rows ? rows[r] : r;                                                    \
            T *cell = a + (size_t)row * length;                                                   \
            const T *src = b ? b + (size_t)row * length : NULL;                                   \
            bool differs = false, crossed = false;                                                \
            for (uint32_t i = 0; i < length; i++) {                                               \
                T old = cell[i], v = old;                                                         \
                switch (kind) {                                                                   \
                case TES_OP_FILL:                                                                 \
                    v = k;                                                                        \
                    break;                                                                        \
                case TES_OP_ADD:                                                                  \
                    v = old + k;                                                                  \
                    break;                                                                        \
                case TES_OP_SCALE:                                                                \
                    v = old * k;                                                                  \
                    break;                                                                        \
                case TES_OP_ADD_SCALED:                                                           \
                    v = old + src[i] * k;                                                         \
                    break;                                                                        \
                case OP_ADD_SCALED_SELF:                                                          \
                    v = old + old * k;                                                            \
                    break;                                                                        \
                case TES_OP_CLAMP:                                                                \
                    v = old < lo ? lo : old;                                                      \
                    v = v > hi ? hi : v;                                                          \
                    break;                                                                        \
                case TES_OP_SUB_COLLECT:                                                          \
                    v = old - k;                                                                  \
                    crossed |= old > 0 && v <= 0;                                                 \
                    break;                                                                        \
                default:                                                                          \
                    break;                                                                        \
                }                                                                                 \
                differs |= memcmp(&old, &v, sizeof v) != 0;                                       \
                cell[i] = v;                                                                      \
            }                                                                                     \
            if (crossed) out[(*found)++] = entities[row];                                         \
            if (differs) changed[n++] = row;                                                      \
        }                                                                                         \
        return n;                                                                                 \
    }

DEFINE_COMPARING(float, f32)
DEFINE_COMPARING(double, f64)

/* ---- integer fields ---------------------------------------------------------------------- */

/* Elements widened per step: the block stays in L1 next to the column. */
#define INT_BLOCK 256u

static void widen(tes_type_t type, const void *from, int64_t *to, size_t n) {
#define WIDEN(T)                      \
    for (size_t i = 0; i < n; i++)    \
        to[i] = ((const T *)from)[i]; \
    break
    switch (type) {
    case TES_I8:
        WIDEN(int8_t);
    case TES_U8:
        WIDEN(uint8_t);
    case TES_I16:
        WIDEN(int16_t);
    case TES_U16:
        WIDEN(uint16_t);
    case TES_I32:
        WIDEN(int32_t);
    case TES_U32:
        WIDEN(uint32_t);
    default:
        break;
    }
#undef WIDEN
}

/* Every value is within the type's range already (int_result saturates). */
static void narrow(tes_type_t type, const int64_t *from, void *to, size_t n) {
#define NARROW(T)                  \
    for (size_t i = 0; i < n; i++) \
        ((T *)to)[i] = (T)from[i]; \
    break
    switch (type) {
    case TES_I8:
        NARROW(int8_t);
    case TES_U8:
        NARROW(uint8_t);
    case TES_I16:
        NARROW(int16_t);
    case TES_U16:
        NARROW(uint16_t);
    case TES_I32:
        NARROW(int32_t);
    case TES_U32:
        NARROW(uint32_t);
    default:
        break;
    }
#undef NARROW
}

/* x * k held to +-(max - min), the widest difference of two values of the type: a product
 * beyond it leaves the range whatever it is added to, so a + that stays exact where it matters.
 * Signed types (at most 32 bits) multiply exactly in int64; unsigned ones have x, k >= 0, whose
 * product (below 2^64) is exact in uint64. */
static inline int64_t span_product(int64_t x, int64_t k, int64_t span, bool is_unsigned) {
    if (is_unsigned) {
        uint64_t p = (uint64_t)x * (uint64_t)k;
        return p > (uint64_t)span ? span : (int64_t)p;
    }
    int64_t p = x * k;
    return p > span ? span : p < -span ? -span : p;
}

/* One op over w[0..m) (v: the source elements), each result saturated to [lo, hi], the type's
 * range. A loop per op, so that each is a plain loop. */
static void int_range(const kernel_t *kn, uint32_t kind, int64_t *restrict w,
                      const int64_t *restrict v, size_t m) {
    int64_t k = kn->ki, lo = kn->min, hi = kn->max, span = hi - lo;
    bool is_unsigned = lo == 0;
#define SATURATE(x) ((x) < lo ? lo : (x) > hi ? hi : (x))
    switch (kind) {
    case TES_OP_FILL:
        for (size_t i = 0; i < m; i++)
            w[i] = k;
        break;
    case TES_OP_ADD:
        for (size_t i = 0; i < m; i++)
            w[i] = SATURATE(w[i] + k);
        break;
    case TES_OP_SUB_COLLECT:
        for (size_t i = 0; i < m; i++)
            w[i] = SATURATE(w[i] - k);
        break;
    case TES_OP_SCALE:
        for (size_t i = 0; i < m; i++) {
            int64_t x = span_product(w[i], k, span, is_unsigned);
            w[i] = SATURATE(x);
        }
        break;
    case TES_OP_ADD_SCALED:
        for (size_t i = 0; i < m; i++) {
            int64_t x = w[i] + span_product(v[i], k, span, is_unsigned);
            w[i] = SATURATE(x);
        }
        break;
    case OP_ADD_SCALED_SELF:
        for (size_t i = 0; i < m; i++) {
            int64_t x = w[i] + span_product(w[i], k, span, is_unsigned);
            w[i] = SATURATE(x);
        }
        break;
    case TES_OP_CLAMP:
        for (size_t i = 0; i < m; i++)
            w[i] = w[i] < kn->loi ? kn->loi : w[i] > kn->hii ? kn->hii : w[i];
        break;
    default:
        break;
    }
#undef SATURATE
}

/* apply_chunk for an integer field: the chunk's rows (every row when it->rows is NULL) a block
 * at a time. Appends the entity of each row with an element that crossed from > 0 to <= 0 to
 * `out` (when collecting) and, with `changed`, each row whose values changed (integers: values
 * and bytes agree) to `changed`, counting them in *changed_count. */
static uint32_t int_chunk(const kernel_t *kn, uint32_t kind, uint8_t *a, const uint8_t *b,
                          const tes_iter_t *it, tes_entity_t *out, uint32_t *changed,
                          uint32_t *changed_count) {
    int64_t w[INT_BLOCK], v[INT_BLOCK], old[INT_BLOCK];
    size_t size = tes_type_size(kn->type);
    uint32_t length = kn->length, found = 0, listed = 0;
    uint32_t segments = it->rows ? it->row_count : 1;
    bool detect = out || changed;
    for (uint32_t s = 0; s < segments; s++) {
        /* A filtered row is one segment of `length` elements; a dense chunk is one segment. */
        size_t first = it->rows ? (size_t)it->rows[s] * length : 0;
        size_t n = it->rows ? length : (size_t)it->count * length;
        uint32_t last_found = UINT32_MAX, last_listed = UINT32_MAX;
        for (size_t start = 0; start < n; start += INT_BLOCK) {
            size_t m = n - start < INT_BLOCK ? n - start : INT_BLOCK;
            size_t at = (first + start) * size;
            widen(kn->type, a + at, w, m);
            if (b) widen(kn->type, b + at, v, m);
            if (detect) memcpy(old, w, m * sizeof *w);
            int_range(kn, kind, w, v, m);
            for (size_t i = 0; detect && i < m; i++) {
                bool crossed = out && old[i] > 0 && w[i] <= 0;
                if (!crossed && (!changed || w[i] == old[i])) continue;
                uint32_t row = (uint32_t)((first + start + i) / length);
                if (crossed && row != last_found) out[found++] = it->entities[last_found = row];
                if (changed && w[i] != old[i] && row != last_listed) {
                    changed[listed++] = last_listed = row;
                }
            }
            narrow(kn->type, w, a + at, m);
        }
    }
    if (changed) *changed_count = listed;
    return found;
}

/* The column of field `field` of the component at position `type` in the chunk's archetype. */
static void *column_of(const tesi_chunk_t *chunk, uint32_t type, uint32_t field) {
    return chunk->data + tesi_column_of(chunk->archetype, type, field)->offset;
}

/* Applies the kernel to the iterator's current chunk, whose archetype holds the target at
 * position `type`; returns the entities appended to out. With `changed` (a component whose
 * changes are by value, tracked here), it goes element by element and lists the rows whose
 * bytes changed there, their number in *changed_count; without, the caller marks every row. */
static uint32_t apply_chunk(const kernel_t *kn, const tesi_chunk_t *chunk, uint32_t type,
                            const tes_iter_t *it, tes_entity_t *out, uint32_t *changed,
                            uint32_t *changed_count) {
    void *a = column_of(chunk, type, kn->field);
    const void *b = NULL;
    if (kn->kind == TES_OP_ADD_SCALED) {
        b = column_of(chunk, tesi_type_index(chunk->archetype, kn->src_component), kn->src_field);
    }
    uint32_t kind = kn->kind == TES_OP_ADD_SCALED && a == b ? OP_ADD_SCALED_SELF : kn->kind;
    if (kind == OP_ADD_SCALED_SELF) b = NULL;
    if (kn->type != TES_F32 && kn->type != TES_F64) {
        return int_chunk(kn, kind, a, b, it, out, changed, changed_count);
    }
    bool f32 = kn->type == TES_F32;
    if (changed) {
        uint32_t found = 0;
        *changed_count = f32 ? compare_f32(kind, kn->length, a, b, it->rows, it->row_count, kn->kf,
                                           kn->lof, kn->hif, it->entities, out, &found, changed)
                             : compare_f64(kind, kn->length, a, b, it->rows, it->row_count, kn->kd,
                                           kn->lod, kn->hid, it->entities, out, &found, changed);
        return found;
    }
    if (it->rows) {
        return f32 ? rows_f32(kind, kn->length, a, b, it->rows, it->row_count, kn->kf, kn->lof,
                              kn->hif, it->entities, out)
                   : rows_f64(kind, kn->length, a, b, it->rows, it->row_count, kn->kd, kn->lod,
                              kn->hid, it->entities, out);
    }
    if (kind == TES_OP_SUB_COLLECT) {
        return f32 ? sub_collect_f32(a, kn->length, it->count, kn->kf, it->entities, out)
                   : sub_collect_f64(a, kn->length, it->count, kn->kd, it->entities, out);
    }
    size_t n = (size_t)it->count * kn->length;
    if (f32) {
        range_f32(kind, a, b, n, kn->kf, kn->lof, kn->hif);
    } else {
        range_f64(kind, a, b, n, kn->kd, kn->lod, kn->hid);
    }
    return 0;
}

/* A target or source field the kernels can work on. */
static tes_result_t check_field(const tes_world_t *world, tes_component_t component, uint32_t field,
                                const tesi_field_t **out) {
    if (component >= world->component_count) return TES_ERR_UNKNOWN_COMPONENT;
    if (tesi_is_sparse(&world->components[component])) return TES_ERR_SPARSE_COMPONENT;
    const tesi_field_t *f;
    tes_result_t result = tesi_field_of(&world->components[component], field, &f);
    if (result != TES_OK) return result;
    if (f->type < TES_F32 || f->type > TES_TYPE_LAST) return TES_ERR_BAD_FIELD_TYPE;
    *out = f;
    return TES_OK;
}

/* An operand must be a value of the field's type, by tes_set_number's rule (tesi_encode_number):
 * a finite double beyond float's range would become infinity, an integer field takes whole
 * numbers in its range. */
static bool fits(tes_type_t type, double v) {
    uint8_t cell[8];
    return tesi_encode_number(type, v, cell);
}

/* The range of an integer type. */
static void type_range(tes_type_t type, int64_t *min, int64_t *max) {
    switch (type) {
    case TES_I8:
        *min = INT8_MIN, *max = INT8_MAX;
        return;
    case TES_U8:
        *min = 0, *max = UINT8_MAX;
        return;
    case TES_I16:
        *min = INT16_MIN, *max = INT16_MAX;
        return;
    case TES_U16:
        *min = 0, *max = UINT16_MAX;
        return;
    case TES_I32:
        *min = INT32_MIN, *max = INT32_MAX;
        return;
    default:
        *min = 0, *max = UINT32_MAX;
        return;
    }
}

/* Every check of tes_query_apply that does not need the run; fills the kernel. */
static tes_result_t check_op(const tes_world_t *world, const tes_query_t *query, const tes_op_t *op,
                             kernel_t *kn) {
    if (op->kind < TES_OP_FILL || op->kind > TES_OP_LAST) return TES_ERR_INVALID_ARGUMENT;
    const tesi_field_t *a, *b;
    tes_result_t result = check_field(world, op->component, op->field, &a);
    if (result != TES_OK) return result;
    bool scaled = op->kind == TES_OP_ADD_SCALED;
    if (scaled) {
        result = check_field(world, op->src_component, op->src_field, &b);
        if (result != TES_OK) return result;
        if (b->type != a->type) return TES_ERR_BAD_FIELD_TYPE;
        if (b->length != a->length) return TES_ERR_BAD_SIZE;
    }
    if (!tesi_query_requires(query, op->component) ||
        (scaled && !tesi_query_requires(query, op->src_component))) {
        return TES_ERR_MISSING_COMPONENT;
    }
    bool clamp = op->kind == TES_OP_CLAMP;
    if (clamp && !(op->lo <= op->hi)) return TES_ERR_INVALID_ARGUMENT;
    if (clamp ? !fits(a->type, op->lo) || !fits(a->type, op->hi) : !fits(a->type, op->k)) {
        return TES_ERR_BAD_VALUE;
    }
    *kn = (kernel_t){.kind = op->kind,
                     .type = a->type,
                     .length = a->length,
                     .component = op->component,
                     .field = op->field,
                     .src_component = op->src_component,
                     .src_field = op->src_field,
                     .kd = op->k,
                     .lod = op->lo,
                     .hid = op->hi};
    /* Only the operands the op uses were checked to fit the type. */
    if (a->type == TES_F32 && clamp) {
        kn->lof = (float)op->lo;
        kn->hif = (float)op->hi;
    } else if (a->type == TES_F32) {
        kn->kf = (float)op->k;
    } else if (a->type != TES_F64) {
        type_range(a->type, &kn->min, &kn->max);
        kn->ki = clamp ? 0 : (int64_t)op->k;
        kn->loi = clamp ? (int64_t)op->lo : 0;
        kn->hii = clamp ? (int64_t)op->hi : 0;
    }
    return TES_OK;
}

tes_result_t tes_query_apply(tes_world_t *world, tes_query_t *query, const tes_op_t *op,
                             const tes_entity_t **out_entities, uint32_t *out_count) {
    if (!world || !query || !op) return TES_ERR_INVALID_ARGUMENT;
    kernel_t kn;
    tes_result_t result = check_op(world, query, op, &kn);
    if (result != TES_OK) return result;
    bool collecting = kn.kind == TES_OP_SUB_COLLECT;
    /* By value, each chunk lists the rows it changed: room for them beside the entities. */
    bool by_value = tesi_by_value(world, kn.component) &&
                    world->components[kn.component].level != TES_UNTRACKED;
    uint64_t rows = 0;
    result = tesi_query_prepare(world, query, collecting || by_value ? &rows : NULL);
    tes_entity_t *out = NULL;
    if (result == TES_OK && (collecting || by_value)) {
        result = tesi_query_output(world, query, (collecting + by_value) * rows, &out);
    }
    if (result != TES_OK) return result;
    uint32_t *changed = by_value ? TESI_PAST(out, collecting ? rows : 0) : NULL;

    tes_iter_t it;
    tesi_query_start(world, query, &it);
    uint32_t found = 0;
    while (tes_iter_next(&it)) {
        tesi_chunk_t *chunk = world->archetypes[it.archetype]->chunks[it.chunk];
        uint32_t type =
            tesi_type_index(chunk->archetype, kn.component); /* for the write and the mark */
        uint32_t marked = 0;
        bool compare = changed && chunk->trackers && chunk->trackers[type];
        found += apply_chunk(&kn, chunk, type, &it, collecting ? out + found : NULL,
                             compare ? changed : NULL, &marked);
        if (compare) {
            tesi_mark_rows(world, chunk, type, changed, marked);
        } else {
            tesi_mark_rows(world, chunk, type, it.rows, it.row_count);
        }
    }
    if (out_entities) *out_entities = found ? out : NULL;
    if (out_count) *out_count = found;
    return TES_OK;
}
