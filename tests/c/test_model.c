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

/* tes_archetype_spawn into a random existing archetype. */
static void op_archetype_spawn(model_t *m) {
    m->op = "archetype_spawn";
    tes_archetype_t a = fx_rng_below(&m->rng, tes_archetype_count(m->world));
    tes_archetype_info_t info = fx_archetype(m->world, a);
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
    uint32_t count = tes_archetype_count(m->world);
    tes_archetype_t a = fx_rng_below(&m->rng, count);
    tes_archetype_info_t info = fx_archetype(m->world, a);
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
