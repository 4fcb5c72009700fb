/*
 * The randomized model test: a seeded sequence of operations runs against the world and
 * against a naive reference model (plain arrays of entities, component masks and field bytes).
 * After every step, every live entity's component set and every field value must match the
 * model, locations must agree with chunks, the entity count must match, stale handles must be
 * rejected, and tes_world_validate must pass. On failure the seed, step and operation are
 * printed; rerun the case to reproduce.
 */
#include "fixtures.h"

#include <math.h>

#define STEPS           100000
#define TARGET_LIVE     100 /* the population stays within [TARGET/2, 2*TARGET] */
#define MAX_LIVE        4096
#define COMPONENTS      6
#define DATA_COMPONENTS 4 /* ids 0..3 carry data, 4 and 5 are tags */
#define MAX_FIELDS      3
#define MAX_ROW         32
#define STALE_RING      64
#define INDEX_SLOTS     (1u << TES_INDEX_BITS)
#define GENERATIONS     (1u << TES_GENERATION_BITS)

static const tes_field_desc_t pos_fields[] = {{"x", TES_F32, 0}, {"y", TES_F32, 0}};
static const tes_field_desc_t vel_fields[] = {{"dx", TES_F64, 0}};
static const tes_field_desc_t stats_fields[] = {
    {"hp", TES_I32, 0}, {"level", TES_U8, 0}, {"flags", TES_U16, 0}};
static const tes_field_desc_t buf_fields[] = {
    {"data", TES_I16, 6}, {"k", TES_U32, 0}, {"m", TES_I8, 3}};

static const struct {
    const char *name;
    const tes_field_desc_t *fields;
    uint32_t field_count;
} schema[COMPONENTS] = {{"Pos", pos_fields, 2}, {"Vel", vel_fields, 1}, {"Stats", stats_fields, 3},
                        {"Buf", buf_fields, 3}, {"TagA", NULL, 0},      {"TagB", NULL, 0}};

typedef struct field_layout_t {
    tes_type_t type;
    uint32_t length;
    uint32_t bytes;
    uint32_t offset; /* in the model's row of the component */
} field_layout_t;

static field_layout_t layout[COMPONENTS][MAX_FIELDS];

typedef struct model_entity_t {
    tes_entity_t handle;
    uint32_t mask;
    unsigned char data[DATA_COMPONENTS][MAX_ROW];
} model_entity_t;

typedef struct queued_index_t {
    uint32_t index;
    uint64_t group; /* slots freed by one despawn_batch share a group: their order is free */
} queued_index_t;

typedef struct model_t {
    tes_world_t *world;
    fx_rng_t rng;
    uint64_t seed;
    uint32_t step;
    const char *op;
    uint32_t min_free;
    model_entity_t *live;
    uint32_t live_count;
    int32_t *slot_of_index;  /* live slot in `live`, or -1 */
    uint16_t *generation_of; /* last generation handed out for an index */
    uint8_t *index_used;     /* the index was handed out before */
    queued_index_t *queue;   /* the free queue as the header defines it (FIFO) */
    uint32_t queue_length;
    uint64_t next_group;
    tes_entity_t stale[STALE_RING];
    uint32_t stale_count;
    uint32_t stale_next;
    uint64_t operations;
} model_t;

static model_t *current_model; /* for the failure report */

static void report_context(void *unused) {
    (void)unused;
    if (harness_case_failed() && current_model != NULL) {
        printf("  model: seed %llu, step %u of %u, operation %s, %u live entities\n",
               (unsigned long long)current_model->seed, current_model->step, STEPS,
               current_model->op ? current_model->op : "?", current_model->live_count);
    }
    current_model = NULL;
}

static void compute_layout(void) {
    for (int c = 0; c < DATA_COMPONENTS; c++) {
        uint32_t offset = 0;
        for (uint32_t f = 0; f < schema[c].field_count; f++) {
            field_layout_t *l = &layout[c][f];
            l->type = schema[c].fields[f].type;
            l->length = schema[c].fields[f].length ? schema[c].fields[f].length : 1;
            l->bytes = tes_type_size(l->type) * l->length;
            l->offset = offset;
            offset += l->bytes;
        }
    }
}

/* ---------------------------------------------------------------------------------------- */
/* The reference model                                                                       */
/* ---------------------------------------------------------------------------------------- */

static bool model_alive(const model_t *m, tes_entity_t h) {
    if (h == 0 || h >= (1u << (TES_INDEX_BITS + TES_GENERATION_BITS))) return false;
    int32_t slot = m->slot_of_index[tes_entity_index(h)];
    return slot >= 0 && m->live[slot].handle == h;
}

/* A handle the world must reject: dead (and not aliased by a recycled slot), or never made. */
static tes_entity_t pick_stale(model_t *m) {
    for (int tries = 0; tries < 4 && m->stale_count > 0; tries++) {
        tes_entity_t h = m->stale[fx_rng_below(&m->rng, m->stale_count)];
        if (!model_alive(m, h)) return h;
    }
    const tes_entity_t bogus[] = {0, INDEX_SLOTS - 1, 0x3fffffffu, 0x40000001u, 0xffffffffu};
    tes_entity_t h = bogus[fx_rng_below(&m->rng, 5)];
    return model_alive(m, h) ? 0 : h;
}

/* The world handed out `h` for an entity with `mask`: check it against the FIFO rules and
 * record it. */
static void model_spawned(model_t *m, tes_entity_t h, uint32_t mask) {
    CHECK(h != 0);
    CHECK(h < (1u << (TES_INDEX_BITS + TES_GENERATION_BITS)));
    uint32_t index = tes_entity_index(h);
    CHECK(index != 0);
    CHECK(m->slot_of_index[index] < 0); /* not a live entity's slot */
    if (m->index_used[index]) {
        /* A recycled slot: the next generation, from the oldest group of the queue, and only
         * with at least min_free_indices waiting. */
        CHECK_EQ(tes_entity_generation(h), (m->generation_of[index] + 1u) % GENERATIONS);
        CHECK(m->queue_length >= m->min_free);
        uint32_t at = UINT32_MAX;
        for (uint32_t i = 0; i < m->queue_length && m->queue[i].group == m->queue[0].group; i++) {
            if (m->queue[i].index == index) at = i;
        }
        if (at == UINT32_MAX) {
            harness_fail(__FILE__, __LINE__, "slot %u reused out of FIFO order", (unsigned)index);
        }
        memmove(&m->queue[at], &m->queue[at + 1], (m->queue_length - at - 1) * sizeof m->queue[0]);
        m->queue_length--;
    } else {
        /* A fresh slot: only while too few wait to reuse one. */
        CHECK(m->queue_length <= m->min_free);
    }
    m->index_used[index] = 1;
    m->generation_of[index] = (uint16_t)tes_entity_generation(h);
    CHECK(m->live_count < MAX_LIVE);
    model_entity_t *e = &m->live[m->live_count];
    memset(e, 0, sizeof *e);
    e->handle = h;
    e->mask = mask;
    m->slot_of_index[index] = (int32_t)m->live_count;
    m->live_count++;
}

static void model_despawned(model_t *m, uint32_t slot, uint64_t group) {
    tes_entity_t h = m->live[slot].handle;
    uint32_t index = tes_entity_index(h);
    m->slot_of_index[index] = -1;
    m->live_count--;
    if (slot != m->live_count) {
        m->live[slot] = m->live[m->live_count];
        m->slot_of_index[tes_entity_index(m->live[slot].handle)] = (int32_t)slot;
    }
    m->queue[m->queue_length].index = index;
    m->queue[m->queue_length].group = group;
    m->queue_length++;
    m->stale[m->stale_next] = h;
    m->stale_next = (m->stale_next + 1) % STALE_RING;
    if (m->stale_count < STALE_RING) m->stale_count++;
}

static void model_add(model_entity_t *e, uint32_t c) {
    if (e->mask & (1u << c)) return;
    e->mask |= 1u << c;
    if (c < DATA_COMPONENTS) memset(e->data[c], 0, MAX_ROW);
}

static void model_remove(model_entity_t *e, uint32_t c) {
    e->mask &= ~(1u << c);
}

/* ---------------------------------------------------------------------------------------- */
/* The full check after every step                                                           */
/* ---------------------------------------------------------------------------------------- */

static void check_world_matches_model(model_t *m) {
    tes_world_t *w = m->world;
    tes_world_stats_t stats = fx_stats(w);
    CHECK_EQ(stats.entity_count, m->live_count);
    CHECK_EQ(stats.free_queue_length, m->queue_length);
    for (uint32_t i = 0; i < m->live_count; i++) {
        const model_entity_t *e = &m->live[i];
        CHECK(tes_is_alive(w, e->handle));
        for (uint32_t c = 0; c < COMPONENTS; c++) {
            bool has = !(e->mask & (1u << c));
            CHECK_OK(tes_has(w, e->handle, c, &has));
            if (has != ((e->mask >> c) & 1u)) {
                harness_fail(__FILE__, __LINE__, "entity %u: has(%s) = %d, model says %d",
                             (unsigned)e->handle, schema[c].name, has, !has);
            }
        }
        tes_location_t loc;
        tes_chunk_info_t chunk;
        CHECK_OK(tes_location(w, e->handle, &loc));
        CHECK_OK(tes_chunk_info(w, loc.archetype, loc.chunk, &chunk));
        CHECK(loc.row < chunk.count);
        CHECK_EQ(chunk.entities[loc.row], e->handle);
        for (uint32_t c = 0; c < DATA_COMPONENTS; c++) {
            if (!(e->mask & (1u << c))) continue;
            for (uint32_t f = 0; f < schema[c].field_count; f++) {
                const field_layout_t *l = &layout[c][f];
                unsigned char value[MAX_ROW];
                CHECK_OK(tes_get(w, e->handle, c, f, value, l->bytes));
                if (memcmp(value, e->data[c] + l->offset, l->bytes) != 0) {
                    harness_fail(__FILE__, __LINE__, "entity %u: %s.%s differs from the model",
                                 (unsigned)e->handle, schema[c].name, schema[c].fields[f].name);
                }
            }
        }
    }
    for (uint32_t i = 0; i < m->stale_count; i++) {
        if (!model_alive(m, m->stale[i])) CHECK(!tes_is_alive(w, m->stale[i]));
    }
    CHECK_OK(tes_world_validate(w));
}

/* ---------------------------------------------------------------------------------------- */
/* Operations                                                                                */
/* ---------------------------------------------------------------------------------------- */

static uint32_t random_mask(model_t *m) {
    uint32_t mask = 0;
    for (uint32_t c = 0; c < COMPONENTS; c++) {
        if (fx_rng_chance(&m->rng, 45)) mask |= 1u << c;
    }
    return mask;
}

/* The components of `mask` in a random order. */
static uint32_t shuffled_set(model_t *m, uint32_t mask, tes_component_t *set) {
    uint32_t n = 0;
    for (uint32_t c = 0; c < COMPONENTS; c++) {
        if (mask & (1u << c)) set[n++] = c;
    }
    for (uint32_t i = n; i > 1; i--) {
        uint32_t j = fx_rng_below(&m->rng, i);
        tes_component_t t = set[i - 1];
        set[i - 1] = set[j];
        set[j] = t;
    }
    return n;
}

static model_entity_t *random_live(model_t *m) {
    return m->live_count ? &m->live[fx_rng_below(&m->rng, m->live_count)] : NULL;
}

static void op_spawn(model_t *m) {
    m->op = "spawn";
    uint32_t mask = fx_rng_chance(&m->rng, 10) ? 0 : random_mask(m);
    tes_component_t set[COMPONENTS];
    uint32_t n = shuffled_set(m, mask, set);
    tes_entity_t h = 0;
    CHECK_OK(tes_spawn(m->world, n ? set : NULL, n, &h));
    model_spawned(m, h, mask);
}

static void op_spawn_batch(model_t *m) {
    m->op = "spawn_batch";
    uint32_t mask = random_mask(m);
    tes_component_t set[COMPONENTS];
    uint32_t n = shuffled_set(m, mask, set);
    uint32_t count = 1 + fx_rng_below(&m->rng, 32);
    tes_entity_t handles[32];
    CHECK_OK(tes_spawn_batch(m->world, set, n, count, handles));
    for (uint32_t i = 0; i < count; i++)
        model_spawned(m, handles[i], mask);
}

/* A random archetype id, with its info; false when that archetype was reclaimed (then calls
 * naming it are refused as unknown and change nothing). */
static bool pick_archetype(model_t *m, tes_archetype_t *a, tes_archetype_info_t *info) {
    *a = fx_rng_below(&m->rng, tes_archetype_count(m->world));
    tes_result_t result = tes_archetype_info(m->world, *a, info);
    if (result == TES_OK) return true;
    CHECK_EQ(result, TES_ERR_UNKNOWN_ARCHETYPE);
    tes_entity_t e;
    uint32_t live = fx_stats(m->world).entity_count;
    CHECK_EQ(tes_archetype_spawn(m->world, *a, 1, &e), TES_ERR_UNKNOWN_ARCHETYPE);
    CHECK_EQ(tes_archetype_add(m->world, *a, 0), TES_ERR_UNKNOWN_ARCHETYPE);
    CHECK_EQ(fx_stats(m->world).entity_count, live);
    return false;
}

/* tes_archetype_spawn into a random existing archetype. */
static void op_archetype_spawn(model_t *m) {
    m->op = "archetype_spawn";
    tes_archetype_t a;
    tes_archetype_info_t info;
    if (!pick_archetype(m, &a, &info)) return;
    uint32_t mask = 0;
    for (uint32_t i = 0; i < info.component_count; i++)
        mask |= 1u << info.components[i];
    uint32_t count = 1 + fx_rng_below(&m->rng, 32);
    tes_entity_t handles[32];
    CHECK_OK(tes_archetype_spawn(m->world, a, count, handles));
    for (uint32_t i = 0; i < count; i++) {
        model_spawned(m, handles[i], mask);
        CHECK_EQ(fx_archetype_of(m->world, handles[i]), a);
    }
}

static void op_spawn_bad_set(model_t *m) {
    m->op = "spawn with a duplicate or unknown component";
    tes_component_t set[COMPONENTS + 1];
    uint32_t n = shuffled_set(m, random_mask(m) | 1u, set);
    tes_entity_t h;
    if (fx_rng_chance(&m->rng, 50)) {
        set[n] = set[fx_rng_below(&m->rng, n)];
        CHECK_ERR(tes_spawn(m->world, set, n + 1, &h), TES_ERR_INVALID_ARGUMENT);
    } else {
        set[n] = COMPONENTS + fx_rng_below(&m->rng, 100);
        CHECK_ERR(tes_spawn_batch(m->world, set, n + 1, 5, NULL), TES_ERR_UNKNOWN_COMPONENT);
    }
}

static void op_despawn(model_t *m) {
    m->op = "despawn";
    if (m->live_count == 0) return;
    uint32_t slot = fx_rng_below(&m->rng, m->live_count);
    CHECK_OK(tes_despawn(m->world, m->live[slot].handle));
    model_despawned(m, slot, m->next_group++);
}

static void op_despawn_batch(model_t *m) {
    m->op = "despawn_batch";
    if (m->live_count == 0) return;
    uint32_t want = 1 + fx_rng_below(&m->rng, m->live_count < 24 ? m->live_count : 24);
    tes_entity_t list[25];
    uint32_t n = 0;
    for (uint32_t tries = 0; n < want && tries < 100; tries++) {
        tes_entity_t h = m->live[fx_rng_below(&m->rng, m->live_count)].handle;
        bool listed = false;
        for (uint32_t i = 0; i < n; i++)
            listed = listed || list[i] == h;
        if (!listed) list[n++] = h;
    }
    uint32_t roll = fx_rng_below(&m->rng, 100);
    if (roll < 10) {
        m->op = "despawn_batch with a stale entry";
        tes_entity_t stale = pick_stale(m);
        list[fx_rng_below(&m->rng, n)] = stale;
        CHECK_ERR(tes_despawn_batch(m->world, list, n), TES_ERR_STALE_ENTITY);
        return;
    }
    if (roll < 20) {
        m->op = "despawn_batch with a duplicate entry";
        list[n] = list[fx_rng_below(&m->rng, n)];
        uint32_t at = fx_rng_below(&m->rng, n + 1);
        tes_entity_t t = list[at];
        list[at] = list[n];
        list[n] = t;
        CHECK_ERR(tes_despawn_batch(m->world, list, n + 1), TES_ERR_DUPLICATE_ENTITY);
        return;
    }
    CHECK_OK(tes_despawn_batch(m->world, list, n));
    uint64_t group = m->next_group++;
    for (uint32_t i = 0; i < n; i++) {
        model_despawned(m, (uint32_t)m->slot_of_index[tes_entity_index(list[i])], group);
    }
}

static void op_add(model_t *m) {
    m->op = "add";
    model_entity_t *e = random_live(m);
    if (e == NULL) return;
    uint32_t c = fx_rng_below(&m->rng, COMPONENTS);
    CHECK_OK(tes_add(m->world, e->handle, c));
    model_add(e, c);
}

static void op_remove(model_t *m) {
    m->op = "remove";
    model_entity_t *e = random_live(m);
    if (e == NULL) return;
    uint32_t c = fx_rng_below(&m->rng, COMPONENTS);
    CHECK_OK(tes_remove(m->world, e->handle, c));
    model_remove(e, c);
}

/* A value for set_number and what the field must hold after it (or that it must be
 * rejected). */
static double random_number(model_t *m, tes_type_t type, bool *valid) {
    static const double limits[][2] = {[TES_I8] = {-128, 127},
                                       [TES_U8] = {0, 255},
                                       [TES_I16] = {-32768, 32767},
                                       [TES_U16] = {0, 65535},
                                       [TES_I32] = {-2147483648.0, 2147483647.0},
                                       [TES_U32] = {0, 4294967295.0}};
    *valid = true;
    if (type == TES_F32 || type == TES_F64) {
        switch (fx_rng_below(&m->rng, 6)) {
        case 0:
            return (double)(int32_t)fx_rng_next(&m->rng);
        case 1:
            return ((double)(fx_rng_next(&m->rng) >> 11) / 9007199254740992.0 - 0.5) * 1e6;
        case 2:
            return ldexp((double)(fx_rng_next(&m->rng) >> 11), -(int)fx_rng_below(&m->rng, 200));
        case 3:
            return fx_rng_chance(&m->rng, 50) ? INFINITY : -INFINITY;
        case 4:
            return NAN;
        default:
            return (double)fx_rng_below(&m->rng, 1000) / 8.0;
        }
    }
    double lo = limits[type][0], hi = limits[type][1];
    if (fx_rng_chance(&m->rng, 80)) {
        uint64_t span = (uint64_t)(hi - lo) + 1;
        uint32_t pick = fx_rng_below(&m->rng, 4);
        if (pick == 0) return lo;
        if (pick == 1) return hi;
        return lo + (double)(fx_rng_next(&m->rng) % span);
    }
    *valid = false;
    switch (fx_rng_below(&m->rng, 6)) {
    case 0:
        return lo - 1;
    case 1:
        return hi + 1;
    case 2:
        return lo + 0.5;
    case 3:
        return NAN;
    case 4:
        return fx_rng_chance(&m->rng, 50) ? INFINITY : -INFINITY;
    default:
        return 1e20;
    }
}

static void store_number(unsigned char *at, tes_type_t type, double v) {
    switch (type) {
    case TES_F32: {
        float x = (float)v;
        memcpy(at, &x, 4);
        break;
    }
    case TES_F64:
        memcpy(at, &v, 8);
        break;
    case TES_I8: {
        int8_t x = (int8_t)v;
        memcpy(at, &x, 1);
        break;
    }
    case TES_U8: {
        uint8_t x = (uint8_t)v;
        memcpy(at, &x, 1);
        break;
    }
    case TES_I16: {
        int16_t x = (int16_t)v;
        memcpy(at, &x, 2);
        break;
    }
    case TES_U16: {
        uint16_t x = (uint16_t)v;
        memcpy(at, &x, 2);
        break;
    }
    case TES_I32: {
        int32_t x = (int32_t)v;
        memcpy(at, &x, 4);
        break;
    }
    case TES_U32: {
        uint32_t x = (uint32_t)v;
        memcpy(at, &x, 4);
        break;
    }
    }
}

static void op_set_number(model_t *m) {
    m->op = "set_number";
    model_entity_t *e = random_live(m);
    if (e == NULL) return;
    uint32_t c = fx_rng_below(&m->rng, COMPONENTS);
    uint32_t f = c < DATA_COMPONENTS ? fx_rng_below(&m->rng, schema[c].field_count) : 0;
    if (c >= DATA_COMPONENTS) {
        tes_result_t expected =
            (e->mask & (1u << c)) ? TES_ERR_TAG_HAS_NO_DATA : TES_ERR_MISSING_COMPONENT;
        tes_result_t r = tes_set_number(m->world, e->handle, c, 0, 0, 1);
        /* On a tag the entity lacks, either answer is fair. */
        if (!(e->mask & (1u << c)) && r == TES_ERR_TAG_HAS_NO_DATA) return;
        CHECK_ERR(r, expected);
        return;
    }
    const field_layout_t *l = &layout[c][f];
    uint32_t element = fx_rng_below(&m->rng, l->length + (fx_rng_chance(&m->rng, 5) ? 2 : 0));
    bool valid;
    double v = random_number(m, l->type, &valid);
    tes_result_t r = tes_set_number(m->world, e->handle, c, f, element, v);
    if (!(e->mask & (1u << c))) {
        CHECK_ERR(r, TES_ERR_MISSING_COMPONENT);
    } else if (element >= l->length) {
        CHECK_ERR(r, TES_ERR_ELEMENT_OUT_OF_RANGE);
    } else if (!valid) {
        if (r != TES_ERR_BAD_VALUE) {
            harness_fail(__FILE__, __LINE__, "set_number(%s.%s, %.17g): expected BAD_VALUE, got %s",
                         schema[c].name, schema[c].fields[f].name, v, tes_result_name(r));
        }
    } else {
        CHECK_OK(r);
        store_number(e->data[c] + l->offset + element * tes_type_size(l->type), l->type, v);
        double back;
        CHECK_OK(tes_get_number(m->world, e->handle, c, f, element, &back));
        double expected = l->type == TES_F32 ? (double)(float)v : v;
        CHECK_NUM_EQ(back, expected);
    }
}

static void op_set_raw(model_t *m) {
    m->op = "set";
    model_entity_t *e = random_live(m);
    if (e == NULL) return;
    uint32_t c = fx_rng_below(&m->rng, DATA_COMPONENTS);
    uint32_t f = fx_rng_below(&m->rng, schema[c].field_count);
    const field_layout_t *l = &layout[c][f];
    unsigned char bytes[MAX_ROW + 1];
    for (uint32_t i = 0; i <= MAX_ROW; i++)
        bytes[i] = (unsigned char)fx_rng_next(&m->rng);
    bool wrong_size = fx_rng_chance(&m->rng, 5);
    size_t size = wrong_size ? l->bytes + 1 : l->bytes;
    tes_result_t r = tes_set(m->world, e->handle, c, f, bytes, size);
    if (!(e->mask & (1u << c))) {
        CHECK_ERR(r, TES_ERR_MISSING_COMPONENT);
    } else if (wrong_size) {
        CHECK_ERR(r, TES_ERR_BAD_SIZE);
    } else {
        CHECK_OK(r);
        memcpy(e->data[c] + l->offset, bytes, l->bytes);
    }
}

static void op_write_through_pointer(model_t *m) {
    m->op = "field_ptr write";
    model_entity_t *e = random_live(m);
    if (e == NULL) return;
    uint32_t c = fx_rng_below(&m->rng, DATA_COMPONENTS);
    if (!(e->mask & (1u << c))) return;
    uint32_t f = fx_rng_below(&m->rng, schema[c].field_count);
    const field_layout_t *l = &layout[c][f];
    void *ptr;
    CHECK_OK(tes_field_ptr(m->world, e->handle, c, f, &ptr));
    for (uint32_t i = 0; i < l->bytes; i++) {
        unsigned char b = (unsigned char)fx_rng_next(&m->rng);
        ((unsigned char *)ptr)[i] = b;
        e->data[c][l->offset + i] = b;
    }
}

static void op_archetype_bulk(model_t *m) {
    m->op = "archetype_add / _remove";
    tes_archetype_t a;
    tes_archetype_info_t info;
    if (!pick_archetype(m, &a, &info)) return;
    uint32_t mask = 0;
    for (uint32_t i = 0; i < info.component_count; i++)
        mask |= 1u << info.components[i];
    uint32_t c = fx_rng_below(&m->rng, COMPONENTS);
    bool add = fx_rng_chance(&m->rng, 50);
    if (add) {
        m->op = "archetype_add";
        CHECK_OK(tes_archetype_add(m->world, a, c));
    } else {
        m->op = "archetype_remove";
        CHECK_OK(tes_archetype_remove(m->world, a, c));
    }
    CHECK_EQ(fx_archetype(m->world, a).entity_count,
             (mask & (1u << c)) == (add ? (1u << c) : 0) ? info.entity_count : 0);
    for (uint32_t i = 0; i < m->live_count; i++) {
        if (m->live[i].mask != mask) continue;
        if (add) {
            model_add(&m->live[i], c);
        } else {
            model_remove(&m->live[i], c);
        }
    }
}

/* Frees the empty archetypes: nothing the model sees may change (every step checks it). */
static void op_reclaim(model_t *m) {
    m->op = "reclaim empty archetypes";
    uint32_t before = fx_stats(m->world).archetype_count, freed = 0;
    CHECK_OK(tes_archetypes_reclaim(m->world, &freed));
    CHECK_EQ(fx_stats(m->world).archetype_count + freed, before);
}

static void op_stale_call(model_t *m) {
    m->op = "call with a stale handle";
    tes_entity_t h = pick_stale(m);
    if (h == 0 && fx_rng_chance(&m->rng, 50)) return;
    uint32_t c = fx_rng_below(&m->rng, DATA_COMPONENTS);
    unsigned char bytes[MAX_ROW] = {0};
    bool has;
    double d;
    void *ptr;
    tes_location_t loc;
    tes_result_t r;
    switch (fx_rng_below(&m->rng, 11)) {
    case 0:
        r = tes_despawn(m->world, h);
        break;
    case 1:
        r = tes_add(m->world, h, fx_rng_below(&m->rng, COMPONENTS));
        break;
    case 2:
        r = tes_remove(m->world, h, fx_rng_below(&m->rng, COMPONENTS));
        break;
    case 3:
        r = tes_has(m->world, h, c, &has);
        break;
    case 4:
        r = tes_get(m->world, h, c, 0, bytes, layout[c][0].bytes);
        break;
    case 5:
        r = tes_set(m->world, h, c, 0, bytes, layout[c][0].bytes);
        break;
    case 6:
        r = tes_get_number(m->world, h, c, 0, 0, &d);
        break;
    case 7:
        r = tes_set_number(m->world, h, c, 0, 0, 0);
        break;
    case 8:
        r = tes_field_ptr(m->world, h, c, 0, &ptr);
        break;
    case 9:
        r = tes_location(m->world, h, &loc);
        break;
    default:
        r = tes_despawn_batch(m->world, &h, 1);
        break;
    }
    if (r != TES_ERR_STALE_ENTITY) {
        harness_fail(__FILE__, __LINE__, "stale handle %u accepted: %s", (unsigned)h,
                     tes_result_name(r));
    }
    CHECK(!tes_is_alive(m->world, h));
}

/* ---------------------------------------------------------------------------------------- */
/* The run                                                                                   */
/* ---------------------------------------------------------------------------------------- */

static void release_model(void *p) {
    model_t *m = (model_t *)p;
    free(m->live);
    free(m->slot_of_index);
    free(m->generation_of);
    free(m->index_used);
    free(m->queue);
    free(m);
}

static void run_model(uint64_t seed, uint32_t chunk_bytes, uint32_t min_free_indices) {
    compute_layout();
    model_t *m = (model_t *)calloc(1, sizeof *m);
    CHECK(m != NULL);
    harness_defer(release_model, m);
    m->live = (model_entity_t *)calloc(MAX_LIVE, sizeof *m->live);
    m->slot_of_index = (int32_t *)malloc(INDEX_SLOTS * sizeof *m->slot_of_index);
    m->generation_of = (uint16_t *)calloc(INDEX_SLOTS, sizeof *m->generation_of);
    m->index_used = (uint8_t *)calloc(INDEX_SLOTS, 1);
    m->queue = (queued_index_t *)calloc(INDEX_SLOTS, sizeof *m->queue);
    CHECK(m->live && m->slot_of_index && m->generation_of && m->index_used && m->queue);
    for (uint32_t i = 0; i < INDEX_SLOTS; i++)
        m->slot_of_index[i] = -1;
    m->seed = seed;
    m->rng.state = seed;
    tes_world_desc_t desc = {.chunk_bytes = chunk_bytes, .min_free_indices = min_free_indices};
    m->world = fx_world(&desc);
    m->min_free = min_free_indices ? min_free_indices : 4096;
    current_model = m;
    harness_defer(report_context, NULL);

    m->op = "register";
    for (uint32_t c = 0; c < COMPONENTS; c++) {
        CHECK_EQ(fx_component(m->world, schema[c].name, schema[c].fields, schema[c].field_count),
                 c);
    }
    for (m->step = 1; m->step <= STEPS; m->step++) {
        uint32_t roll = fx_rng_below(&m->rng, 100);
        bool crowded = m->live_count > 2 * TARGET_LIVE;
        bool sparse = m->live_count < TARGET_LIVE / 2;
        if (roll < 14) {
            crowded ? op_despawn(m) : op_spawn(m);
        } else if (roll < 16) {
            crowded ? op_despawn_batch(m) : op_spawn_batch(m);
        } else if (roll < 17) {
            crowded ? op_despawn_batch(m) : op_archetype_spawn(m);
        } else if (roll < 29) {
            sparse ? op_spawn(m) : op_despawn(m);
        } else if (roll < 33) {
            sparse ? op_spawn_batch(m) : op_despawn_batch(m);
        } else if (roll < 47) {
            op_add(m);
        } else if (roll < 59) {
            op_remove(m);
        } else if (roll < 74) {
            op_set_number(m);
        } else if (roll < 82) {
            op_set_raw(m);
        } else if (roll < 85) {
            op_write_through_pointer(m);
        } else if (roll < 88) {
            op_archetype_bulk(m);
        } else if (roll < 99) {
            op_stale_call(m);
        } else if (fx_rng_chance(&m->rng, 25)) {
            op_reclaim(m);
        } else {
            op_spawn_bad_set(m);
        }
        m->operations++;
        check_world_matches_model(m);
    }
    m->op = "end";
    printf("  seed %llu: %llu operations, %u live at the end, %u archetypes\n",
           (unsigned long long)seed, (unsigned long long)m->operations, m->live_count,
           tes_archetype_count(m->world));
}

TEST(model_seed_1_default_world) {
    run_model(1, 0, 0);
}

TEST(model_seed_2_small_chunks_fast_recycling) {
    run_model(0x5eed0002u, 1024, 1);
}

TEST(model_seed_3_small_chunks) {
    run_model(0x5eed0003u, 1024, 16);
}

TEST(model_seed_4_mid_chunks) {
    run_model(0xdecafbadull, 4096, 64);
}

/* ---------------------------------------------------------------------------------------- */
/* The sparse-and-relations model                                                            */
/* ---------------------------------------------------------------------------------------- */
/*
 * A second seeded model, for what lives outside the chunks: sparse components (in spawn lists,
 * added, removed, written) and three relations (ChildOf: exclusive, acyclic, cascade; Likes:
 * plain, with pair data; Owns: cascade, cycles allowed). The reference keeps per entity its
 * component bits and values, and per relation a flat list of pairs with two order keys (the
 * source's targets in add order, the target's sources in add order or as tes_pair_place set
 * it). Despawns compute the cascade closure. After every step every live entity's membership,
 * values, location (sparse components never reach the archetype), targets, sources and pair
 * data must match; every few steps a walk and a set of plain queries with sparse terms and
 * pair terms are compared too. Hub entities are only ever targets, so they live through the
 * run and pair terms can name them.
 */

#define SM_STEPS     15000
#define SM_TARGET    60
#define SM_MAX_LIVE  1024
#define SM_MAX_PAIRS 4096
#define SM_HUBS      3
#define SM_RELATIONS 3
#define SM_QUERIES   7

enum { SM_POS, SM_TAG, SM_HP, SM_SEL, SM_CHILD_OF, SM_LIKES, SM_OWNS, SM_COMPONENTS };
#define SM_BIT(c) (1u << (c))
#define SM_TABLE  (SM_BIT(SM_POS) | SM_BIT(SM_TAG))

static const tes_field_desc_t sm_pos_fields[] = {{"x", TES_F32, 0}, {"y", TES_F32, 0}};
static const tes_field_desc_t sm_hp_fields[] = {{"hp", TES_I32, 0}, {"regen", TES_F64, 0}};
static const tes_field_desc_t sm_likes_fields[] = {{"w", TES_F64, 0}};
static const char *const sm_names[SM_COMPONENTS] = {"Pos",     "Tag",   "Hp",  "Sel",
                                                    "ChildOf", "Likes", "Owns"};

typedef struct sm_entity_t {
    tes_entity_t handle;
    uint32_t mask; /* SM_POS .. SM_SEL */
    double pos[2], hp[2];
    bool hub;
} sm_entity_t;

typedef struct sm_pair_t {
    tes_entity_t source, target;
    uint64_t seq;   /* the source's targets: ascending */
    uint64_t order; /* the target's sources: ascending */
    double w;
} sm_pair_t;

typedef struct sm_model_t {
    tes_world_t *world;
    fx_rng_t rng;
    uint64_t seed;
    uint32_t step;
    const char *op;
    sm_entity_t live[SM_MAX_LIVE];
    uint32_t live_count;
    int32_t *slot_of_index;
    sm_pair_t pairs[SM_RELATIONS][SM_MAX_PAIRS];
    uint32_t pair_count[SM_RELATIONS];
    uint64_t counter;
    tes_entity_t hubs[SM_HUBS];
    tes_entity_t stale[STALE_RING];
    uint32_t stale_count, stale_next;
    tes_query_t *queries[SM_QUERIES];
    bool dying[SM_MAX_LIVE];
    fx_entities_t want, want_depths, got; /* scratch lists of the checks */
    uint64_t pair_ops, cascaded, cycles_refused;
} sm_model_t;

static sm_model_t *sm_current;

static void sm_report_context(void *unused) {
    (void)unused;
    if (harness_case_failed() && sm_current != NULL) {
        printf("  sparse/relation model: seed %llu, step %u of %u, operation %s, %u live\n",
               (unsigned long long)sm_current->seed, sm_current->step, SM_STEPS,
               sm_current->op ? sm_current->op : "?", sm_current->live_count);
    }
    sm_current = NULL;
}

static void sm_release(void *p) {
    sm_model_t *m = (sm_model_t *)p;
    free(m->slot_of_index);
    free(m->want.items);
    free(m->want_depths.items);
    free(m->got.items);
    free(m);
}

static tes_component_t sm_relation(uint32_t r) {
    return SM_CHILD_OF + r;
}

static int32_t sm_slot(const sm_model_t *m, tes_entity_t h) {
    if (h == 0 || h >= (1u << (TES_INDEX_BITS + TES_GENERATION_BITS))) return -1;
    int32_t slot = m->slot_of_index[tes_entity_index(h)];
    return slot >= 0 && m->live[slot].handle == h ? slot : -1;
}

static void sm_spawned(sm_model_t *m, tes_entity_t h, uint32_t mask) {
    CHECK(h != 0);
    CHECK(sm_slot(m, h) < 0);
    CHECK(m->slot_of_index[tes_entity_index(h)] < 0);
    CHECK(m->live_count < SM_MAX_LIVE);
    sm_entity_t *e = &m->live[m->live_count];
    memset(e, 0, sizeof *e);
    e->handle = h;
    e->mask = mask;
    m->slot_of_index[tes_entity_index(h)] = (int32_t)m->live_count;
    m->live_count++;
}

/* ---- pairs ---- */

static int32_t sm_find_pair(const sm_model_t *m, uint32_t r, tes_entity_t s, tes_entity_t t) {
    for (uint32_t i = 0; i < m->pair_count[r]; i++) {
        if (m->pairs[r][i].source == s && m->pairs[r][i].target == t) return (int32_t)i;
    }
    return -1;
}

static void sm_drop_pair(sm_model_t *m, uint32_t r, uint32_t i) {
    m->pairs[r][i] = m->pairs[r][--m->pair_count[r]];
}

static void sm_put_pair(sm_model_t *m, uint32_t r, tes_entity_t s, tes_entity_t t) {
    CHECK(m->pair_count[r] < SM_MAX_PAIRS);
    sm_pair_t *p = &m->pairs[r][m->pair_count[r]++];
    p->source = s;
    p->target = t;
    p->seq = p->order = ++m->counter;
    p->w = 0;
}

static bool sm_has_relation(const sm_model_t *m, uint32_t r, tes_entity_t s) {
    for (uint32_t i = 0; i < m->pair_count[r]; i++) {
        if (m->pairs[r][i].source == s) return true;
    }
    return false;
}

/* Indices of the pairs with this source (by seq) or this target (by order). */
static uint32_t sm_pairs_of(const sm_model_t *m, uint32_t r, tes_entity_t e, bool as_source,
                            uint32_t *out) {
    uint32_t n = 0;
    for (uint32_t i = 0; i < m->pair_count[r]; i++) {
        const sm_pair_t *p = &m->pairs[r][i];
        if ((as_source ? p->source : p->target) == e) out[n++] = i;
    }
    for (uint32_t i = 1; i < n; i++) { /* insertion sort on the key */
        uint32_t x = out[i], j = i;
        uint64_t key = as_source ? m->pairs[r][x].seq : m->pairs[r][x].order;
        while (j > 0 &&
               (as_source ? m->pairs[r][out[j - 1]].seq : m->pairs[r][out[j - 1]].order) > key) {
            out[j] = out[j - 1];
            j--;
        }
        out[j] = x;
    }
    return n;
}

/* True when `ancestor` is reached going up ChildOf from `e` (e itself included). */
static bool sm_is_ancestor(const sm_model_t *m, tes_entity_t ancestor, tes_entity_t e) {
    for (uint32_t hops = 0; e != 0 && hops <= m->live_count; hops++) {
        if (e == ancestor) return true;
        tes_entity_t parent = 0;
        for (uint32_t i = 0; i < m->pair_count[0]; i++) {
            if (m->pairs[0][i].source == e) parent = m->pairs[0][i].target;
        }
        e = parent;
    }
    return false;
}

/* Despawns the entities of `list` and, through CASCADE relations (ChildOf, Owns), their
 * sources, recursively; every pair touching a dead entity goes. */
static void sm_despawn_all(sm_model_t *m, const tes_entity_t *list, uint32_t n) {
    memset(m->dying, 0, sizeof m->dying);
    uint32_t *work = (uint32_t *)malloc(SM_MAX_LIVE * sizeof *work);
    CHECK(work != NULL);
    uint32_t top = 0;
    for (uint32_t i = 0; i < n; i++) {
        int32_t slot = sm_slot(m, list[i]);
        CHECK(slot >= 0);
        if (!m->dying[slot]) {
            m->dying[slot] = true;
            work[top++] = (uint32_t)slot;
        }
    }
    while (top > 0) {
        tes_entity_t x = m->live[work[--top]].handle;
        const uint32_t cascade[2] = {0, 2}; /* ChildOf, Owns */
        for (uint32_t k = 0; k < 2; k++) {
            uint32_t r = cascade[k];
            for (uint32_t i = 0; i < m->pair_count[r]; i++) {
                if (m->pairs[r][i].target != x) continue;
                int32_t s = sm_slot(m, m->pairs[r][i].source);
                CHECK(s >= 0);
                if (!m->dying[s]) {
                    m->dying[s] = true;
                    work[top++] = (uint32_t)s;
                    m->cascaded++;
                }
            }
        }
    }
    free(work);
    for (uint32_t r = 0; r < SM_RELATIONS; r++) {
        for (uint32_t i = 0; i < m->pair_count[r];) {
            int32_t s = sm_slot(m, m->pairs[r][i].source), t = sm_slot(m, m->pairs[r][i].target);
            if (m->dying[s] || m->dying[t]) {
                sm_drop_pair(m, r, i);
            } else {
                i++;
            }
        }
    }
    for (uint32_t slot = m->live_count; slot-- > 0;) {
        if (!m->dying[slot]) continue;
        CHECK(!m->live[slot].hub);
        tes_entity_t h = m->live[slot].handle;
        m->slot_of_index[tes_entity_index(h)] = -1;
        m->live_count--;
        if (slot != m->live_count) {
            m->live[slot] = m->live[m->live_count];
            m->dying[slot] = m->dying[m->live_count];
            m->slot_of_index[tes_entity_index(m->live[slot].handle)] = (int32_t)slot;
        }
        m->stale[m->stale_next] = h;
        m->stale_next = (m->stale_next + 1) % STALE_RING;
        if (m->stale_count < STALE_RING) m->stale_count++;
    }
}

/* ---- picks ---- */

static sm_entity_t *sm_pick(sm_model_t *m, bool allow_hub) {
    for (int tries = 0; tries < 16 && m->live_count; tries++) {
        sm_entity_t *e = &m->live[fx_rng_below(&m->rng, m->live_count)];
        if (allow_hub || !e->hub) return e;
    }
    return NULL;
}

static tes_entity_t sm_pick_stale(sm_model_t *m) {
    if (m->stale_count && fx_rng_chance(&m->rng, 80)) {
        tes_entity_t h = m->stale[fx_rng_below(&m->rng, m->stale_count)];
        if (sm_slot(m, h) < 0) return h;
    }
    return fx_rng_chance(&m->rng, 50) ? 0 : 0x3fffffffu;
}

static uint32_t sm_random_mask(sm_model_t *m) {
    uint32_t mask = 0;
    for (uint32_t c = 0; c <= SM_SEL; c++) {
        if (fx_rng_chance(&m->rng, 45)) mask |= SM_BIT(c);
    }
    return mask;
}

static uint32_t sm_list(sm_model_t *m, uint32_t mask, tes_component_t *out) {
    uint32_t n = 0;
    for (uint32_t c = 0; c <= SM_SEL; c++) {
        if (mask & SM_BIT(c)) out[n++] = c;
    }
    for (uint32_t i = n; i > 1; i--) {
        uint32_t j = fx_rng_below(&m->rng, i);
        tes_component_t t = out[i - 1];
        out[i - 1] = out[j];
        out[j] = t;
    }
    return n;
}

/* ---- operations ---- */

static void sm_op_spawn(sm_model_t *m) {
    tes_component_t set[5];
    uint32_t mask = sm_random_mask(m);
    uint32_t n = sm_list(m, mask, set);
    if (fx_rng_chance(&m->rng, 70)) {
        m->op = "spawn";
        tes_entity_t h = 0;
        CHECK_OK(tes_spawn(m->world, n ? set : NULL, n, &h));
        sm_spawned(m, h, mask);
    } else {
        m->op = "spawn_batch";
        tes_entity_t h[8];
        uint32_t count = 1 + fx_rng_below(&m->rng, 8);
        CHECK_OK(tes_spawn_batch(m->world, set, n, count, h));
        for (uint32_t i = 0; i < count; i++)
            sm_spawned(m, h[i], mask);
    }
    if (fx_rng_chance(&m->rng, 5)) {
        m->op = "spawn with a relation";
        set[n] = sm_relation(fx_rng_below(&m->rng, SM_RELATIONS));
        tes_entity_t h = 0;
        CHECK_ERR(tes_spawn(m->world, set, n + 1, &h), TES_ERR_NEEDS_TARGET);
    }
}

static void sm_op_despawn(sm_model_t *m) {
    tes_entity_t list[6];
    uint32_t n = 0, want = fx_rng_chance(&m->rng, 70) ? 1 : 1 + fx_rng_below(&m->rng, 6);
    for (int tries = 0; tries < 24 && n < want; tries++) {
        sm_entity_t *e = sm_pick(m, false);
        if (e == NULL) break;
        bool dup = false;
        for (uint32_t i = 0; i < n; i++)
            dup |= list[i] == e->handle;
        if (!dup) list[n++] = e->handle;
    }
    if (n == 0) return;
    if (n == 1 && fx_rng_chance(&m->rng, 60)) {
        m->op = "despawn";
        CHECK_OK(tes_despawn(m->world, list[0]));
    } else {
        m->op = "despawn_batch";
        CHECK_OK(tes_despawn_batch(m->world, list, n));
    }
    sm_despawn_all(m, list, n);
}

static void sm_op_add_remove(sm_model_t *m) {
    sm_entity_t *e = sm_pick(m, true);
    if (e == NULL) return;
    uint32_t c = fx_rng_below(&m->rng, 5); /* 4: a relation */
    bool add = fx_rng_chance(&m->rng, 50);
    if (c == 4) {
        uint32_t r = fx_rng_below(&m->rng, SM_RELATIONS);
        if (add) {
            m->op = "add a relation";
            CHECK_ERR(tes_add(m->world, e->handle, sm_relation(r)), TES_ERR_NEEDS_TARGET);
        } else {
            m->op = "remove a relation";
            CHECK_OK(tes_remove(m->world, e->handle, sm_relation(r)));
            for (uint32_t i = 0; i < m->pair_count[r];) {
                if (m->pairs[r][i].source == e->handle) {
                    sm_drop_pair(m, r, i);
                } else {
                    i++;
                }
            }
        }
        return;
    }
    if (add) {
        m->op = c >= SM_HP ? "add sparse" : "add";
        CHECK_OK(tes_add(m->world, e->handle, c));
        if (!(e->mask & SM_BIT(c))) {
            if (c == SM_POS) e->pos[0] = e->pos[1] = 0;
            if (c == SM_HP) e->hp[0] = e->hp[1] = 0;
        }
        e->mask |= SM_BIT(c);
    } else {
        m->op = c >= SM_HP ? "remove sparse" : "remove";
        CHECK_OK(tes_remove(m->world, e->handle, c));
        e->mask &= ~SM_BIT(c);
    }
}

static void sm_op_write(sm_model_t *m) {
    sm_entity_t *e = sm_pick(m, true);
    if (e == NULL) return;
    bool hp = fx_rng_chance(&m->rng, 60);
    tes_component_t c = hp ? SM_HP : SM_POS;
    uint32_t f = fx_rng_below(&m->rng, 2);
    double v = hp && f == 0 ? (double)((int32_t)fx_rng_below(&m->rng, 2000) - 1000)
                            : (double)fx_rng_below(&m->rng, 1 << 20) / 64.0;
    m->op = hp ? "set_number sparse" : "set_number";
    tes_result_t r;
    if (fx_rng_chance(&m->rng, 20)) {
        m->op = hp ? "init_number sparse" : "init_number";
        r = tes_init_number(m->world, e->handle, c, f, 0, v);
    } else {
        r = tes_set_number(m->world, e->handle, c, f, 0, v);
    }
    if (!(e->mask & SM_BIT(c))) {
        CHECK_ERR(r, TES_ERR_MISSING_COMPONENT);
        return;
    }
    CHECK_OK(r);
    if (hp) {
        e->hp[f] = v;
    } else {
        e->pos[f] = (double)(float)v;
    }
}

static void sm_op_pair_add(sm_model_t *m) {
    m->op = "pair_add";
    uint32_t r = fx_rng_below(&m->rng, SM_RELATIONS);
    sm_entity_t *se = sm_pick(m, false);
    sm_entity_t *te =
        fx_rng_chance(&m->rng, 25) ? &m->live[fx_rng_below(&m->rng, SM_HUBS)] : sm_pick(m, true);
    if (se == NULL || te == NULL) return;
    tes_entity_t s = se->handle;
    tes_entity_t t = fx_rng_chance(&m->rng, 5) ? s : te->handle;
    tes_result_t res = tes_pair_add(m->world, s, sm_relation(r), t);
    m->pair_ops++;
    if (r == 0 && sm_is_ancestor(m, s, t)) {
        CHECK_ERR(res, TES_ERR_CYCLE);
        m->cycles_refused++;
        return;
    }
    CHECK_OK(res);
    if (sm_find_pair(m, r, s, t) >= 0) return;
    if (r == 0) { /* exclusive */
        for (uint32_t i = 0; i < m->pair_count[r]; i++) {
            if (m->pairs[r][i].source == s) {
                sm_drop_pair(m, r, i);
                break;
            }
        }
    }
    sm_put_pair(m, r, s, t);
}

static void sm_op_pair_remove(sm_model_t *m) {
    m->op = "pair_remove";
    uint32_t r = fx_rng_below(&m->rng, SM_RELATIONS);
    tes_entity_t s, t;
    if (m->pair_count[r] && fx_rng_chance(&m->rng, 75)) {
        const sm_pair_t *p = &m->pairs[r][fx_rng_below(&m->rng, m->pair_count[r])];
        s = p->source;
        t = p->target;
    } else {
        sm_entity_t *a = sm_pick(m, true), *b = sm_pick(m, true);
        if (a == NULL || b == NULL) return;
        s = a->handle;
        t = b->handle;
    }
    CHECK_OK(tes_pair_remove(m->world, s, sm_relation(r), t));
    m->pair_ops++;
    int32_t i = sm_find_pair(m, r, s, t);
    if (i >= 0) sm_drop_pair(m, r, (uint32_t)i);
}

static void sm_op_pair_set(sm_model_t *m) {
    m->op = "pair_set_number";
    const uint32_t r = 1; /* Likes */
    if (m->pair_count[r] == 0) return;
    sm_pair_t *p = &m->pairs[r][fx_rng_below(&m->rng, m->pair_count[r])];
    double v = (double)fx_rng_below(&m->rng, 100000) / 8.0;
    if (fx_rng_chance(&m->rng, 20)) {
        m->op = "pair_init_number";
        CHECK_OK(tes_pair_init_number(m->world, p->source, SM_LIKES, p->target, 0, 0, v));
    } else {
        CHECK_OK(tes_pair_set_number(m->world, p->source, SM_LIKES, p->target, 0, 0, v));
    }
    p->w = v;
    /* A pair that is not there. */
    sm_entity_t *a = sm_pick(m, true);
    if (a != NULL && sm_find_pair(m, r, a->handle, p->source) < 0) {
        CHECK_ERR(tes_pair_set_number(m->world, a->handle, SM_LIKES, p->source, 0, 0, 1),
                  TES_ERR_MISSING_COMPONENT);
    }
}

static void sm_op_pair_place(sm_model_t *m) {
    m->op = "pair_place";
    uint32_t r = fx_rng_below(&m->rng, SM_RELATIONS);
    if (m->pair_count[r] == 0) return;
    tes_entity_t t = m->pairs[r][fx_rng_below(&m->rng, m->pair_count[r])].target;
    uint32_t *idx = (uint32_t *)malloc(SM_MAX_PAIRS * sizeof *idx);
    uint64_t *keys = (uint64_t *)malloc(SM_MAX_PAIRS * sizeof *keys);
    CHECK(idx != NULL && keys != NULL);
    uint32_t n = sm_pairs_of(m, r, t, false, idx);
    uint32_t from = fx_rng_below(&m->rng, n);
    uint32_t before = fx_rng_chance(&m->rng, 25) ? n : fx_rng_below(&m->rng, n);
    if (before == from) before = n;
    tes_entity_t s = m->pairs[r][idx[from]].source;
    tes_entity_t b = before == n ? 0 : m->pairs[r][idx[before]].source;
    tes_result_t res = tes_pair_place(m->world, s, sm_relation(r), t, b);
    if (res != TES_OK) {
        free(idx);
        free(keys);
        CHECK_OK(res);
    }
    for (uint32_t i = 0; i < n; i++)
        keys[i] = m->pairs[r][idx[i]].order;
    /* The new arrangement, then the same keys handed out in order. */
    uint32_t moved = idx[from];
    memmove(&idx[from], &idx[from + 1], (n - from - 1) * sizeof *idx);
    uint32_t at = n - 1;
    if (b != 0) {
        for (uint32_t i = 0; i < n - 1; i++) {
            if (m->pairs[r][idx[i]].source == b) at = i;
        }
    }
    memmove(&idx[at + 1], &idx[at], (n - 1 - at) * sizeof *idx);
    idx[at] = moved;
    for (uint32_t i = 0; i < n; i++)
        m->pairs[r][idx[i]].order = keys[i];
    free(idx);
    free(keys);
}

static void sm_op_stale(sm_model_t *m) {
    m->op = "pair call with a stale handle";
    tes_entity_t x = sm_pick_stale(m);
    sm_entity_t *e = sm_pick(m, true);
    if (e == NULL) return;
    tes_component_t r = sm_relation(fx_rng_below(&m->rng, SM_RELATIONS));
    bool source_side = fx_rng_chance(&m->rng, 50);
    tes_entity_t s = source_side ? x : e->handle, t = source_side ? e->handle : x;
    tes_entity_t out[4];
    uint32_t count;
    bool has;
    double d;
    tes_result_t res;
    switch (fx_rng_below(&m->rng, 8)) {
    case 0:
        res = tes_pair_add(m->world, s, r, t);
        break;
    case 1:
        res = tes_pair_remove(m->world, s, r, t);
        break;
    case 2:
        res = tes_pair_has(m->world, s, r, t, &has);
        break;
    case 3:
        res = tes_pair_targets(m->world, x, r, out, 4, &count);
        break;
    case 4:
        res = tes_pair_sources(m->world, r, x, out, 4, &count);
        break;
    case 5:
        res = tes_relation_walk(m->world, r, x, out, NULL, 4, &count);
        break;
    case 6:
        res = tes_pair_get_number(m->world, s, SM_LIKES, t, 0, 0, &d);
        break;
    default:
        res = tes_pair_set_number(m->world, s, SM_LIKES, t, 0, 0, 1);
        break;
    }
    if (res != TES_ERR_STALE_ENTITY) {
        harness_fail(__FILE__, __LINE__, "stale handle %u accepted: %s", (unsigned)x,
                     tes_result_name(res));
    }
}

/* ---- checks ---- */

static void sm_check_list_at(int line, const sm_model_t *m, uint32_t r, tes_entity_t e,
                             bool targets) {
    uint32_t idx[SM_MAX_PAIRS < 512 ? SM_MAX_PAIRS : 512];
    tes_entity_t got[512];
    uint32_t count = UINT32_MAX;
    if (targets) {
        CHECK_OK(tes_pair_targets(m->world, e, sm_relation(r), got, 512, &count));
    } else {
        CHECK_OK(tes_pair_sources(m->world, sm_relation(r), e, got, 512, &count));
    }
    uint32_t want = 0;
    for (uint32_t i = 0; i < m->pair_count[r]; i++) {
        want += (targets ? m->pairs[r][i].source : m->pairs[r][i].target) == e;
    }
    if (want > 512) harness_fail(__FILE__, line, "model list too long");
    sm_pairs_of(m, r, e, targets, idx);
    bool same = count == want;
    for (uint32_t i = 0; same && i < want; i++) {
        const sm_pair_t *p = &m->pairs[r][idx[i]];
        same = got[i] == (targets ? p->target : p->source);
    }
    if (!same) {
        harness_fail(__FILE__, line, "%s of %u under %s: %u entries, model %u (or order differs)",
                     targets ? "targets" : "sources", (unsigned)e, sm_names[sm_relation(r)],
                     (unsigned)count, (unsigned)want);
    }
}

static void sm_check_entities(sm_model_t *m) {
    tes_world_t *w = m->world;
    CHECK_EQ(fx_stats(w).entity_count, m->live_count);
    for (uint32_t i = 0; i < m->live_count; i++) {
        const sm_entity_t *e = &m->live[i];
        CHECK(tes_is_alive(w, e->handle));
        for (uint32_t c = 0; c < SM_COMPONENTS; c++) {
            bool has = false, want;
            CHECK_OK(tes_has(w, e->handle, c, &has));
            want = c <= SM_SEL ? (e->mask & SM_BIT(c)) != 0
                               : sm_has_relation(m, c - SM_CHILD_OF, e->handle);
            if (has != want) {
                harness_fail(__FILE__, __LINE__, "entity %u: has(%s) = %d, model says %d",
                             (unsigned)e->handle, sm_names[c], has, want);
            }
        }
        /* The archetype holds the chunk components only. */
        tes_archetype_info_t info = fx_archetype(w, fx_check_location(w, e->handle).archetype);
        uint32_t table = 0;
        for (uint32_t k = 0; k < info.component_count; k++)
            table |= SM_BIT(info.components[k]);
        CHECK_EQ(table, e->mask & SM_TABLE);
        for (uint32_t f = 0; f < 2; f++) {
            if (e->mask & SM_BIT(SM_POS))
                CHECK_NUM_EQ(fx_get_number(w, e->handle, SM_POS, f, 0), e->pos[f]);
            if (e->mask & SM_BIT(SM_HP))
                CHECK_NUM_EQ(fx_get_number(w, e->handle, SM_HP, f, 0), e->hp[f]);
        }
        for (uint32_t r = 0; r < SM_RELATIONS; r++) {
            sm_check_list_at(__LINE__, m, r, e->handle, true);
            sm_check_list_at(__LINE__, m, r, e->handle, false);
        }
        /* The parent, and Likes data per pair. */
        tes_entity_t parent = 0xdeadu, want_parent = 0;
        CHECK_OK(tes_pair_target(w, e->handle, SM_CHILD_OF, &parent));
        for (uint32_t k = 0; k < m->pair_count[0]; k++) {
            if (m->pairs[0][k].source == e->handle) want_parent = m->pairs[0][k].target;
        }
        CHECK_EQ(parent, want_parent);
    }
    for (uint32_t k = 0; k < m->pair_count[1]; k++) {
        const sm_pair_t *p = &m->pairs[1][k];
        double v = -1;
        CHECK_OK(tes_pair_get_number(w, p->source, SM_LIKES, p->target, 0, 0, &v));
        CHECK_NUM_EQ(v, p->w);
    }
    for (uint32_t r = 0; r < SM_RELATIONS; r++) {
        uint32_t count = UINT32_MAX;
        CHECK_OK(tes_relation_pairs(w, sm_relation(r), NULL, NULL, 0, &count));
        CHECK_EQ(count, m->pair_count[r]);
    }
    for (uint32_t i = 0; i < m->stale_count; i++) {
        if (sm_slot(m, m->stale[i]) < 0) CHECK(!tes_is_alive(w, m->stale[i]));
    }
    CHECK_OK(tes_world_validate(w));
}

/* The model's walk: pre-order over sources, each entity once, the root never. */
static void sm_walk_visit(const sm_model_t *m, uint32_t r, tes_entity_t x, uint32_t depth,
                          uint8_t *seen, fx_entities_t *out, fx_entities_t *depths) {
    uint32_t *idx = (uint32_t *)malloc(SM_MAX_PAIRS * sizeof *idx);
    CHECK(idx != NULL);
    uint32_t n = sm_pairs_of(m, r, x, false, idx);
    for (uint32_t i = 0; i < n; i++) {
        tes_entity_t s = m->pairs[r][idx[i]].source;
        int32_t slot = sm_slot(m, s);
        if (seen[slot]) continue;
        seen[slot] = 1;
        fx_entities_push(out, s);
        fx_entities_push(depths, depth);
        sm_walk_visit(m, r, s, depth + 1, seen, out, depths);
    }
    free(idx);
}

static void sm_check_walk(sm_model_t *m) {
    m->op = "check walk";
    sm_entity_t *root = sm_pick(m, true);
    if (root == NULL) return;
    uint32_t r = fx_rng_below(&m->rng, SM_RELATIONS);
    uint8_t *seen = (uint8_t *)calloc(SM_MAX_LIVE, 1);
    CHECK(seen != NULL);
    fx_entities_t *want = &m->want, *want_depths = &m->want_depths;
    want->count = want_depths->count = 0;
    seen[sm_slot(m, root->handle)] = 1;
    sm_walk_visit(m, r, root->handle, 1, seen, want, want_depths);
    free(seen);
    tes_entity_t got[SM_MAX_LIVE];
    uint32_t depths[SM_MAX_LIVE];
    uint32_t count = UINT32_MAX;
    CHECK_OK(tes_relation_walk(m->world, sm_relation(r), root->handle, got, depths, want->count,
                               &count));
    CHECK_EQ(count, want->count);
    for (uint32_t i = 0; i < count; i++) {
        CHECK_EQ(got[i], want->items[i]);
        CHECK_EQ(depths[i], want_depths->items[i]);
    }
}

static bool sm_in_relation(const sm_model_t *m, uint32_t r, tes_entity_t s, tes_entity_t t) {
    return t == 0 ? sm_has_relation(m, r, s) : sm_find_pair(m, r, s, t) >= 0;
}

static bool sm_query_matches(const sm_model_t *m, uint32_t q, const sm_entity_t *e) {
    uint32_t mask = e->mask;
    tes_entity_t h = e->handle;
    bool likes = sm_has_relation(m, 1, h);
    switch (q) {
    case 0:
        return (mask & SM_BIT(SM_HP)) != 0;
    case 1:
        return (mask & SM_BIT(SM_POS)) && (mask & SM_BIT(SM_SEL));
    case 2:
        return !(mask & SM_BIT(SM_HP)) && ((mask & SM_BIT(SM_SEL)) || likes);
    case 3:
        return sm_in_relation(m, 0, h, 0);
    case 4:
        return sm_in_relation(m, 1, h, m->hubs[0]) && !(mask & SM_BIT(SM_TAG));
    case 5:
        return sm_has_relation(m, 2, h) && !sm_in_relation(m, 0, h, m->hubs[1]);
    default:
        return sm_in_relation(m, 2, h, m->hubs[0]) || sm_in_relation(m, 1, h, m->hubs[1]) ||
               (mask & SM_BIT(SM_SEL));
    }
}

static void sm_check_queries(sm_model_t *m) {
    m->op = "check queries";
    fx_entities_t *got = &m->got, *want = &m->want;
    for (uint32_t q = 0; q < SM_QUERIES; q++) {
        fx_run_into(m->world, m->queries[q], got);
        want->count = 0;
        for (uint32_t i = 0; i < m->live_count; i++) {
            if (sm_query_matches(m, q, &m->live[i])) fx_entities_push(want, m->live[i].handle);
        }
        if (got->count != want->count) printf("  query %u\n", (unsigned)q);
        FX_CHECK_SAME_ENTITIES(got, want->items, want->count);
    }
}

static void sm_make_queries(sm_model_t *m) {
    const tes_entity_t h0 = m->hubs[0], h1 = m->hubs[1];
    const tes_query_desc_t descs[SM_QUERIES] = {
        {.all = FX_IDS(SM_HP)},
        {.all = FX_IDS(SM_SEL, SM_POS)},
        {.none = FX_IDS(SM_HP), .any = FX_IDS(SM_SEL, SM_LIKES)},
        {.pairs = (const tes_pair_term_t[]){{SM_CHILD_OF, 0, TES_TERM_ALL}}, .pair_count = 1},
        {.none = FX_IDS(SM_TAG),
         .pairs = (const tes_pair_term_t[]){{SM_LIKES, h0, TES_TERM_ALL}},
         .pair_count = 1},
        {.all = FX_IDS(SM_OWNS),
         .pairs = (const tes_pair_term_t[]){{SM_CHILD_OF, h1, TES_TERM_NONE}},
         .pair_count = 1},
        {.any = FX_IDS(SM_SEL),
         .pairs =
             (const tes_pair_term_t[]){{SM_OWNS, h0, TES_TERM_ANY}, {SM_LIKES, h1, TES_TERM_ANY}},
         .pair_count = 2},
    };
    for (uint32_t q = 0; q < SM_QUERIES; q++)
        m->queries[q] = fx_query(m->world, &descs[q]);
}

static void run_sparse_relation_model(uint64_t seed, uint32_t chunk_bytes, uint32_t min_free) {
    sm_model_t *m = (sm_model_t *)calloc(1, sizeof *m);
    CHECK(m != NULL);
    harness_defer(sm_release, m);
    m->slot_of_index = (int32_t *)malloc(INDEX_SLOTS * sizeof *m->slot_of_index);
    CHECK(m->slot_of_index != NULL);
    for (uint32_t i = 0; i < INDEX_SLOTS; i++)
        m->slot_of_index[i] = -1;
    m->seed = seed;
    m->rng.state = seed;
    tes_world_desc_t desc = {.chunk_bytes = chunk_bytes, .min_free_indices = min_free};
    m->world = fx_world(&desc);
    sm_current = m;
    harness_defer(sm_report_context, NULL);
    m->op = "register";
    CHECK_EQ(fx_component(m->world, "Pos", sm_pos_fields, 2), SM_POS);
    CHECK_EQ(fx_tag(m->world, "Tag"), SM_TAG);
    CHECK_EQ(fx_sparse(m->world, "Hp", sm_hp_fields, 2), SM_HP);
    CHECK_EQ(fx_sparse(m->world, "Sel", NULL, 0), SM_SEL);
    CHECK_EQ(fx_relation(m->world, "ChildOf", NULL, 0,
                         TES_RELATION_EXCLUSIVE | TES_RELATION_ACYCLIC | TES_RELATION_CASCADE),
             SM_CHILD_OF);
    CHECK_EQ(fx_relation(m->world, "Likes", sm_likes_fields, 1, 0), SM_LIKES);
    CHECK_EQ(fx_relation(m->world, "Owns", NULL, 0, TES_RELATION_CASCADE), SM_OWNS);
    for (uint32_t i = 0; i < SM_HUBS; i++) {
        tes_component_t set[4];
        uint32_t mask = sm_random_mask(m);
        uint32_t n = sm_list(m, mask, set);
        tes_entity_t h = 0;
        CHECK_OK(tes_spawn(m->world, set, n, &h));
        sm_spawned(m, h, mask);
        m->live[m->live_count - 1].hub = true;
        m->hubs[i] = h;
    }
    sm_make_queries(m);
    for (m->step = 1; m->step <= SM_STEPS; m->step++) {
        uint32_t roll = fx_rng_below(&m->rng, 100);
        bool crowded = m->live_count > 2 * SM_TARGET, sparse = m->live_count < SM_TARGET / 2;
        if (roll < 12) {
            crowded ? sm_op_despawn(m) : sm_op_spawn(m);
        } else if (roll < 20) {
            sparse ? sm_op_spawn(m) : sm_op_despawn(m);
        } else if (roll < 36) {
            sm_op_add_remove(m);
        } else if (roll < 46) {
            sm_op_write(m);
        } else if (roll < 70) {
            sm_op_pair_add(m);
        } else if (roll < 80) {
            sm_op_pair_remove(m);
        } else if (roll < 87) {
            sm_op_pair_set(m);
        } else if (roll < 93) {
            sm_op_pair_place(m);
        } else {
            sm_op_stale(m);
        }
        sm_check_entities(m);
        if (m->step % 10 == 0) sm_check_walk(m);
        if (m->step % 25 == 0) sm_check_queries(m);
    }
    m->op = "end";
    for (uint32_t i = 0; i < SM_HUBS; i++)
        CHECK(tes_is_alive(m->world, m->hubs[i]));
    uint32_t pairs = m->pair_count[0] + m->pair_count[1] + m->pair_count[2];
    printf("  seed %llu: %llu pair operations, %llu cascaded despawns, %llu cycles refused, "
           "%u live and %u pairs at the end\n",
           (unsigned long long)seed, (unsigned long long)m->pair_ops,
           (unsigned long long)m->cascaded, (unsigned long long)m->cycles_refused, m->live_count,
           pairs);
}

TEST(sparse_relation_model_seed_1_default_world) {
    run_sparse_relation_model(1, 0, 0);
}

TEST(sparse_relation_model_seed_2_small_chunks_fast_recycling) {
    run_sparse_relation_model(0x5eed0012u, 1024, 1);
}

TEST(sparse_relation_model_seed_3_mid_chunks) {
    run_sparse_relation_model(0xfeedbeefull, 4096, 16);
}
