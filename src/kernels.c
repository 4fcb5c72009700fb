/* Kernels: column operations over the rows one run of a query visits (tes_query_apply). An
 * unfiltered chunk is one contiguous range of its column, count * length elements, so its loop
 * is a plain `restrict` loop that clang vectorises (f32x4 / f64x2 in the -msimd128 build); a
 * filtered chunk is processed row by row. Every check happens before the run starts, and the
 * collected list is reserved for every row the run visits, so nothing can fail once values are
 * being written. */
#include "internal.h"

#include <float.h>
#include <math.h>

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

/* Everything a chunk needs, resolved once per call. */
typedef struct kernel_t {
    uint32_t kind;
    tes_type_t type;
    uint32_t length; /* elements per row */
    tes_component_t component, src_component;
    uint32_t field, src_field;
    float kf, lof, hif;
    double kd, lod, hid;
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
    if (f->type != TES_F32 && f->type != TES_F64) return TES_ERR_BAD_FIELD_TYPE;
    *out = f;
    return TES_OK;
}

/* A finite double beyond float's range would become infinity: loss, as tes_set_number says. */
static bool fits_f32(double v) {
    return !isfinite(v) || fabs(v) <= FLT_MAX;
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
    if (a->type == TES_F32 && (clamp ? !fits_f32(op->lo) || !fits_f32(op->hi) : !fits_f32(op->k))) {
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
    /* Only the operands the op uses were checked to fit a float. */
    if (a->type == TES_F32 && clamp) {
        kn->lof = (float)op->lo;
        kn->hif = (float)op->hi;
    } else if (a->type == TES_F32) {
        kn->kf = (float)op->k;
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
    uint32_t *changed = by_value ? out + (collecting ? rows : 0) : NULL;

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
