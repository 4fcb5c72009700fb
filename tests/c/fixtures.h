/*
 * Shared helpers for the tessera C tests (header-only: CMake links each test file with
 * harness.c and the library only). Everything here uses the public API and standard C.
 *
 *   fx_world           a world destroyed after the case, pass or fail
 *   fx_component/tag   registration that must succeed
 *   fx_scene           a world with components A, B, C and the tag Tag
 *   fx_alloc_t         counting allocator: live blocks and bytes, size checks, injected failure
 *   fx_snapshot_t      everything observable about a world, to prove a call changed nothing
 *   fx_check_*         invariants checked through the public API
 *   FX_IDS, fx_spawn   component lists written inline, spawning that must succeed
 *   fx_entities_t      growable entity lists; FX_CHECK_VISITED / FX_CHECK_SAME_ENTITIES
 *   fx_query, fx_run   queries, and whole runs that check every chunk's shape
 *   fx_rng_t           splitmix64, reproducible from a printed seed
 */
#ifndef TESSERA_TEST_FIXTURES_H
#define TESSERA_TEST_FIXTURES_H

#include "harness.h"
#include "tessera.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------- */
/* Worlds and components                                                                     */
/* ---------------------------------------------------------------------------------------- */

static inline void fx_destroy_world(void *world) {
    tes_world_destroy((tes_world_t *)world);
}

static inline tes_world_t *fx_world(const tes_world_desc_t *desc) {
    tes_world_t *world = NULL;
    CHECK_OK(tes_world_create(desc, &world));
    CHECK(world != NULL);
    harness_defer(fx_destroy_world, world);
    return world;
}

/* Destroys a world made by fx_world now (to check what its destruction gives back). */
static inline void fx_world_destroy_now(tes_world_t *world) {
    harness_run_deferred_now(fx_destroy_world, world);
}

static inline tes_component_t fx_component(tes_world_t *world, const char *name,
                                           const tes_field_desc_t *fields, uint32_t field_count) {
    tes_component_desc_t desc = {.name = name, .fields = fields, .field_count = field_count};
    tes_component_t id = UINT32_MAX;
    CHECK_OK(tes_component_register(world, &desc, &id));
    return id;
}

static inline tes_component_t fx_tag(tes_world_t *world, const char *name) {
    return fx_component(world, name, NULL, 0);
}

/* malloc that is released after the case. */
static inline void *fx_malloc(size_t size) {
    void *p = calloc(1, size ? size : 1);
    CHECK(p != NULL);
    harness_defer(free, p);
    return p;
}

/* The scene several files start from: data components A, B and C, all with the same fields,
 * then the tag Tag, registered in that order. */
typedef struct fx_scene_t {
    tes_world_t *world;
    tes_component_t a, b, c, tag;
} fx_scene_t;

static inline fx_scene_t fx_scene(const tes_world_desc_t *desc, const tes_field_desc_t *fields,
                                  uint32_t field_count) {
    fx_scene_t s;
    s.world = fx_world(desc);
    s.a = fx_component(s.world, "A", fields, field_count);
    s.b = fx_component(s.world, "B", fields, field_count);
    s.c = fx_component(s.world, "C", fields, field_count);
    s.tag = fx_tag(s.world, "Tag");
    return s;
}

/* ---------------------------------------------------------------------------------------- */
/* Counting allocator                                                                        */
/* ---------------------------------------------------------------------------------------- */

#define FX_ALLOC_MAGIC 0x7e55e7a11c0c0a11ull
#define FX_LIVE_MAGIC  0x11fe11fe11fe11feull
#define FX_DEAD_MAGIC  0xdeaddeaddeaddeadull

typedef struct fx_alloc_t {
    uint64_t magic;
    uint64_t allocs;      /* successful alloc calls */
    uint64_t frees;       /* free calls with a non-NULL pointer */
    uint64_t failures;    /* alloc calls answered with NULL */
    uint64_t live_blocks; /* allocs - frees */
    uint64_t live_bytes;  /* sum of sizes of live blocks */
    uint64_t bad_frees;   /* wrong size, unknown or already freed pointer */
    uint64_t misaligned;  /* never expected: our own blocks are 16-byte aligned */
    int64_t fail_after;   /* < 0: never fail; else allocations after this many successes fail */
    bool fail_once;       /* only the first injected failure fails, then allocations succeed */
} fx_alloc_t;

/* Each block carries its size and a state word in front of it. */
typedef struct fx_block_header_t {
    uint64_t size;
    uint64_t state;
} fx_block_header_t;

static inline void *fx_alloc_fn(size_t size, void *user) {
    fx_alloc_t *a = (fx_alloc_t *)user;
    if (a == NULL || a->magic != FX_ALLOC_MAGIC) return NULL;
    if (a->fail_after >= 0 && a->allocs >= (uint64_t)a->fail_after) {
        a->failures++;
        if (a->fail_once) a->fail_after = -1;
        return NULL;
    }
    size_t total = (sizeof(fx_block_header_t) + size + 15u) & ~(size_t)15u;
    fx_block_header_t *h = (fx_block_header_t *)aligned_alloc(16, total);
    if (h == NULL) return NULL;
    h->size = size;
    h->state = FX_LIVE_MAGIC;
    a->allocs++;
    a->live_blocks++;
    a->live_bytes += size;
    void *p = h + 1;
    if (((uintptr_t)p & 15u) != 0) a->misaligned++;
    memset(p, 0xA5, size); /* never zeros: a read of memory nobody wrote shows */
    return p;
}

static inline void fx_free_fn(void *ptr, size_t size, void *user) {
    fx_alloc_t *a = (fx_alloc_t *)user;
    if (ptr == NULL) return;
    if (a == NULL || a->magic != FX_ALLOC_MAGIC) return; /* leaks: reported by the test */
    fx_block_header_t *h = (fx_block_header_t *)ptr - 1;
    if (h->state != FX_LIVE_MAGIC) {
        a->bad_frees++;
        return;
    }
    if (h->size != size) a->bad_frees++;
    h->state = FX_DEAD_MAGIC;
    a->frees++;
    a->live_blocks--;
    a->live_bytes -= h->size;
    free(h);
}

static inline void fx_alloc_init(fx_alloc_t *a) {
    memset(a, 0, sizeof *a);
    a->magic = FX_ALLOC_MAGIC;
    a->fail_after = -1;
}

/* A counting allocator that outlives every world of the case (register it before them). */
static inline fx_alloc_t *fx_alloc_new(void) {
    fx_alloc_t *a = (fx_alloc_t *)fx_malloc(sizeof *a);
    fx_alloc_init(a);
    return a;
}

static inline tes_allocator_t fx_allocator(fx_alloc_t *a) {
    tes_allocator_t allocator = {.alloc = fx_alloc_fn, .free = fx_free_fn, .user = a};
    return allocator;
}

/* Everything handed out came back, each with the size that was asked for. */
#define FX_CHECK_ALLOC_CLEAN(a)            \
    do {                                   \
        CHECK_EQ((a)->live_blocks, 0);     \
        CHECK_EQ((a)->live_bytes, 0);      \
        CHECK_EQ((a)->bad_frees, 0);       \
        CHECK_EQ((a)->allocs, (a)->frees); \
    } while (0)

/* ---------------------------------------------------------------------------------------- */
/* Snapshots: everything observable through the public API                                  */
/* ---------------------------------------------------------------------------------------- */

typedef struct fx_snapshot_t {
    tes_world_stats_t stats;
    unsigned char *bytes;
    size_t length;
    size_t capacity;
} fx_snapshot_t;

static inline void fx_snapshot_release(fx_snapshot_t *s) {
    free(s->bytes);
    s->bytes = NULL;
    s->length = s->capacity = 0;
}

static inline void fx_snapshot_delete(void *snapshot) {
    fx_snapshot_release((fx_snapshot_t *)snapshot);
    free(snapshot);
}

static inline void fx_snapshot_take(fx_snapshot_t *s, const tes_world_t *world);

/* A snapshot on the heap, released after the case; take() may refresh it any number of times. */
static inline fx_snapshot_t *fx_snapshot_new(void) {
    fx_snapshot_t *s = (fx_snapshot_t *)calloc(1, sizeof *s);
    CHECK(s != NULL);
    harness_defer(fx_snapshot_delete, s);
    return s;
}

static inline fx_snapshot_t *fx_snapshot_of(const tes_world_t *world) {
    fx_snapshot_t *s = fx_snapshot_new();
    fx_snapshot_take(s, world);
    return s;
}

static inline void fx_snapshot_put(fx_snapshot_t *s, const void *data, size_t n) {
    if (s->length + n > s->capacity) {
        size_t capacity = s->capacity ? s->capacity : 4096;
        while (capacity < s->length + n)
            capacity *= 2;
        unsigned char *bytes = (unsigned char *)realloc(s->bytes, capacity);
        CHECK(bytes != NULL);
        s->bytes = bytes;
        s->capacity = capacity;
    }
    memcpy(s->bytes + s->length, data, n);
    s->length += n;
}

static inline void fx_snapshot_put_u32(fx_snapshot_t *s, uint32_t v) {
    fx_snapshot_put(s, &v, sizeof v);
}

static inline void fx_snapshot_put_string(fx_snapshot_t *s, const char *text) {
    CHECK(text != NULL);
    size_t n = strlen(text);
    fx_snapshot_put_u32(s, (uint32_t)n);
    fx_snapshot_put(s, text, n);
}

/* Records: stats, the component registry, every archetype (components, counts), every chunk
 * (entities in slot order) and, per entity, its location and every field of every component
 * it has. Uses only const calls, so taking a snapshot changes nothing. */
static inline void fx_snapshot_take(fx_snapshot_t *s, const tes_world_t *world) {
    s->length = 0;
    CHECK_OK(tes_world_stats(world, &s->stats));
    for (tes_component_t c = 0; c < s->stats.component_count; c++) {
        tes_component_info_t info;
        CHECK_OK(tes_component_info(world, c, &info));
        fx_snapshot_put_string(s, info.name);
        fx_snapshot_put_u32(s, info.field_count);
        fx_snapshot_put_u32(s, info.row_bytes);
        for (uint32_t f = 0; f < info.field_count; f++) {
            tes_field_info_t field;
            CHECK_OK(tes_field_info(world, c, f, &field));
            fx_snapshot_put_string(s, field.name);
            fx_snapshot_put_u32(s, (uint32_t)field.type);
            fx_snapshot_put_u32(s, field.length);
            fx_snapshot_put_u32(s, field.bytes);
        }
    }
    /* Empty archetypes are internal structure (a call that ran out of memory may keep one it
     * created, see tessera.h "ERRORS"): only archetypes holding entities are compared here;
     * the strict check compares archetype_count. */
    uint32_t archetype_count = tes_archetype_count(world);
    for (tes_archetype_t a = 0; a < archetype_count; a++) {
        tes_archetype_info_t info;
        tes_result_t result = tes_archetype_info(world, a, &info);
        if (result == TES_ERR_UNKNOWN_ARCHETYPE) continue; /* reclaimed */
        CHECK_OK(result);
        if (info.entity_count == 0) continue;
        fx_snapshot_put_u32(s, a);
        fx_snapshot_put_u32(s, info.component_count);
        if (info.component_count > 0) {
            fx_snapshot_put(s, info.components, info.component_count * sizeof(tes_component_t));
        }
        fx_snapshot_put_u32(s, info.entity_count);
        fx_snapshot_put_u32(s, info.chunk_count);
        fx_snapshot_put_u32(s, info.capacity);
        for (uint32_t k = 0; k < info.chunk_count; k++) {
            tes_chunk_info_t chunk;
            CHECK_OK(tes_chunk_info(world, a, k, &chunk));
            fx_snapshot_put_u32(s, chunk.count);
            fx_snapshot_put_u32(s, chunk.capacity);
            for (uint32_t row = 0; row < chunk.count; row++) {
                tes_entity_t e = chunk.entities[row];
                tes_location_t loc;
                fx_snapshot_put_u32(s, e);
                fx_snapshot_put_u32(s, tes_is_alive(world, e) ? 1u : 0u);
                CHECK_OK(tes_location(world, e, &loc));
                fx_snapshot_put(s, &loc, sizeof loc);
                for (uint32_t i = 0; i < info.component_count; i++) {
                    tes_component_info_t component;
                    CHECK_OK(tes_component_info(world, info.components[i], &component));
                    for (uint32_t f = 0; f < component.field_count; f++) {
                        unsigned char value[TES_MAX_ARRAY_LENGTH * 8];
                        tes_field_info_t field;
                        CHECK_OK(tes_field_info(world, info.components[i], f, &field));
                        CHECK(field.bytes <= sizeof value);
                        CHECK_OK(tes_get(world, e, info.components[i], f, value, field.bytes));
                        fx_snapshot_put(s, value, field.bytes);
                    }
                }
            }
        }
    }
}

/* Writes the first difference into message; true when equal. What tessera.h lets a failed
 * call keep (grown capacity, pooled chunks, an archetype created on the way, its cached
 * edges, bytes_allocated) is compared only when `strict` is set. */
static inline bool fx_snapshot_equal_ex(const fx_snapshot_t *a, const fx_snapshot_t *b, bool strict,
                                        char *message, size_t message_size) {
#define FX_STAT(field)                                                                    \
    if (a->stats.field != b->stats.field) {                                               \
        snprintf(message, message_size, "stats." #field " %llu -> %llu",                  \
                 (unsigned long long)a->stats.field, (unsigned long long)b->stats.field); \
        return false;                                                                     \
    }
    FX_STAT(entity_count)
    FX_STAT(entity_capacity)
    FX_STAT(free_queue_length)
    FX_STAT(component_count)
    FX_STAT(chunk_count)
    FX_STAT(chunk_bytes)
    if (strict) {
        FX_STAT(archetype_count)
        FX_STAT(pooled_chunk_count)
        FX_STAT(edge_count)
        FX_STAT(graph_generation)
        FX_STAT(bytes_allocated)
    }
#undef FX_STAT
    size_t n = a->length < b->length ? a->length : b->length;
    for (size_t i = 0; i < n; i++) {
        if (a->bytes[i] != b->bytes[i]) {
            snprintf(message, message_size, "registry/archetype/entity data differ at byte %zu", i);
            return false;
        }
    }
    if (a->length != b->length) {
        snprintf(message, message_size, "snapshot length %zu -> %zu", a->length, b->length);
        return false;
    }
    return true;
}

static inline bool fx_snapshot_equal(const fx_snapshot_t *a, const fx_snapshot_t *b, char *message,
                                     size_t message_size) {
    return fx_snapshot_equal_ex(a, b, false, message, message_size);
}

/* Fails (at the caller's line) unless the world looks exactly like `before`. */
typedef void (*fx_snapshot_fn)(fx_snapshot_t *s, const tes_world_t *world);

static inline void fx_check_unchanged_at(const char *file, int line, const fx_snapshot_t *before,
                                         const tes_world_t *world, bool strict,
                                         fx_snapshot_fn take) {
    fx_snapshot_t after;
    char message[160];
    memset(&after, 0, sizeof after);
    take(&after, world);
    bool same = fx_snapshot_equal_ex(before, &after, strict, message, sizeof message);
    fx_snapshot_release(&after);
    if (!same) harness_fail(file, line, "world changed: %s", message);
}
/* Entities, components, field values and the archetypes that hold entities: what a failed
 * call must leave exactly as it was. */
#define FX_CHECK_UNCHANGED(before, world) \
    fx_check_unchanged_at(__FILE__, __LINE__, before, world, false, fx_snapshot_take)
/* Everything, internal structure and bytes_allocated included: what bad input (as opposed to
 * running out of memory) must leave as it was. */
#define FX_CHECK_UNCHANGED_STRICT(before, world) \
    fx_check_unchanged_at(__FILE__, __LINE__, before, world, true, fx_snapshot_take)

/* ---------------------------------------------------------------------------------------- */
/* Invariants through the public API                                                         */
/* ---------------------------------------------------------------------------------------- */

/* The entity's location names a slot whose chunk holds the entity's handle. */
static inline tes_location_t fx_check_location(const tes_world_t *world, tes_entity_t e) {
    tes_location_t loc;
    tes_archetype_info_t archetype;
    tes_chunk_info_t chunk;
    CHECK_OK(tes_location(world, e, &loc));
    CHECK_OK(tes_archetype_info(world, loc.archetype, &archetype));
    CHECK(loc.chunk < archetype.chunk_count);
    CHECK_OK(tes_chunk_info(world, loc.archetype, loc.chunk, &chunk));
    CHECK(loc.row < chunk.count);
    CHECK_EQ(chunk.entities[loc.row], e);
    return loc;
}

/* Every chunk but the last is full, none is empty, counts add up, every slot's entity is
 * alive and located there. */
static inline void fx_check_packed(const tes_world_t *world, tes_archetype_t archetype) {
    tes_archetype_info_t info;
    CHECK_OK(tes_archetype_info(world, archetype, &info));
    CHECK(info.capacity >= 1);
    uint32_t total = 0;
    for (uint32_t k = 0; k < info.chunk_count; k++) {
        tes_chunk_info_t chunk;
        CHECK_OK(tes_chunk_info(world, archetype, k, &chunk));
        CHECK_EQ(chunk.capacity, info.capacity);
        CHECK(chunk.count >= 1);
        if (k + 1 < info.chunk_count) CHECK_EQ(chunk.count, chunk.capacity);
        CHECK(chunk.count <= chunk.capacity);
        for (uint32_t row = 0; row < chunk.count; row++) {
            tes_location_t loc;
            CHECK(tes_is_alive(world, chunk.entities[row]));
            CHECK_OK(tes_location(world, chunk.entities[row], &loc));
            CHECK_EQ(loc.archetype, archetype);
            CHECK_EQ(loc.chunk, k);
            CHECK_EQ(loc.row, row);
        }
        total += chunk.count;
    }
    CHECK_EQ(total, info.entity_count);
}

static inline void fx_check_all_packed(const tes_world_t *world) {
    uint32_t count = tes_archetype_count(world);
    for (tes_archetype_t a = 0; a < count; a++) {
        tes_archetype_info_t info;
        if (tes_archetype_info(world, a, &info) == TES_ERR_UNKNOWN_ARCHETYPE)
            continue; /* reclaimed */
        fx_check_packed(world, a);
    }
}

static inline tes_world_stats_t fx_stats(const tes_world_t *world) {
    tes_world_stats_t stats;
    CHECK_OK(tes_world_stats(world, &stats));
    return stats;
}

static inline tes_archetype_info_t fx_archetype(const tes_world_t *world, tes_archetype_t a) {
    tes_archetype_info_t info;
    CHECK_OK(tes_archetype_info(world, a, &info));
    return info;
}

static inline tes_archetype_t fx_archetype_of(const tes_world_t *world, tes_entity_t e) {
    tes_location_t loc;
    CHECK_OK(tes_location(world, e, &loc));
    return loc.archetype;
}

static inline bool fx_has(const tes_world_t *world, tes_entity_t e, tes_component_t c) {
    bool has = false;
    CHECK_OK(tes_has(world, e, c, &has));
    return has;
}

static inline double fx_get_number(const tes_world_t *world, tes_entity_t e, tes_component_t c,
                                   uint32_t field, uint32_t element) {
    double value = -12345.0;
    CHECK_OK(tes_get_number(world, e, c, field, element, &value));
    return value;
}

/* ---------------------------------------------------------------------------------------- */
/* Item lists (tes_items_t) built inline                                                     */
/* ---------------------------------------------------------------------------------------- */

/* Items, their values and the numbers, with room for numbers per entity (strides). */
typedef struct fx_list_t {
    tes_item_t items[32];
    tes_value_t values[32];
    double numbers[4096];
    tes_items_t x;
} fx_list_t;

static inline fx_list_t *fx_list_new(void) {
    fx_list_t *l = (fx_list_t *)fx_malloc(sizeof *l);
    memset(l, 0, sizeof *l);
    l->x = (tes_items_t){l->items, 0, l->values, 0, l->numbers, 0};
    return l;
}

static inline fx_list_t *fx_list_item(fx_list_t *l, tes_component_t component,
                                      tes_entity_t target) {
    CHECK(l->x.item_count < 32);
    l->items[l->x.item_count++] = (tes_item_t){component, target};
    return l;
}

/* A value of the latest item: `n` numbers, `stride` as tes_value_t's. */
static inline fx_list_t *fx_list_values(fx_list_t *l, uint32_t field, uint32_t stride, uint32_t n,
                                        const double *numbers) {
    CHECK(l->x.value_count < 32 && l->x.number_count + n <= 4096);
    l->values[l->x.value_count++] =
        (tes_value_t){l->x.item_count - 1, field, l->x.number_count, stride};
    for (uint32_t i = 0; i < n; i++)
        l->numbers[l->x.number_count++] = numbers[i];
    return l;
}

static inline fx_list_t *fx_list_value1(fx_list_t *l, uint32_t field, double number) {
    return fx_list_values(l, field, 0, 1, &number);
}

/* ---------------------------------------------------------------------------------------- */
/* Component lists, entity lists, query runs                                                 */
/* ---------------------------------------------------------------------------------------- */

/* A component list and its length, for a (pointer, count) pair of parameters or fields:
 *     fx_spawn(world, FX_IDS(a, b))
 *     (tes_query_desc_t){.all = FX_IDS(a), .changed = FX_IDS(b, c)}
 * (in a designated initializer the count fills the member after the pointer: `*_count`). */
#define FX_IDS(...)                         \
    (const tes_component_t[]){__VA_ARGS__}, \
        (uint32_t)(sizeof((tes_component_t[]){__VA_ARGS__}) / sizeof(tes_component_t))

static inline tes_entity_t fx_spawn(tes_world_t *world, const tes_component_t *components,
                                    uint32_t count) {
    tes_entity_t e = 0;
    CHECK_OK(tes_spawn(world, components, count, &e));
    CHECK(e != 0);
    return e;
}

/* A growable list of entities, freed after the case. */
typedef struct fx_entities_t {
    tes_entity_t *items;
    uint32_t count;
    uint32_t capacity;
} fx_entities_t;

static inline void fx_entities_delete(void *list) {
    fx_entities_t *l = (fx_entities_t *)list;
    free(l->items);
    free(l);
}

static inline fx_entities_t *fx_entities_new(void) {
    fx_entities_t *l = (fx_entities_t *)calloc(1, sizeof *l);
    CHECK(l != NULL);
    harness_defer(fx_entities_delete, l);
    return l;
}

static inline void fx_entities_push(fx_entities_t *l, tes_entity_t e) {
    if (l->count == l->capacity) {
        uint32_t capacity = l->capacity ? l->capacity * 2 : 64;
        tes_entity_t *items = (tes_entity_t *)realloc(l->items, capacity * sizeof *items);
        CHECK(items != NULL);
        l->items = items;
        l->capacity = capacity;
    }
    l->items[l->count++] = e;
}

static inline uint32_t fx_entities_occurrences(const fx_entities_t *l, tes_entity_t e) {
    uint32_t n = 0;
    for (uint32_t i = 0; i < l->count; i++)
        n += l->items[i] == e;
    return n;
}

static inline bool fx_entities_contains(const fx_entities_t *l, tes_entity_t e) {
    return fx_entities_occurrences(l, e) > 0;
}

static inline int fx_entity_compare(const void *a, const void *b) {
    tes_entity_t x = *(const tes_entity_t *)a, y = *(const tes_entity_t *)b;
    return x < y ? -1 : x > y;
}

/* Fails at the caller's line unless `l` holds exactly the entities of expected[0..n-1], in
 * any order, each exactly as often. */
static inline void fx_check_same_entities_at(const char *file, int line, const fx_entities_t *l,
                                             const tes_entity_t *expected, uint32_t n) {
    tes_entity_t *a = (tes_entity_t *)malloc((l->count + 1) * sizeof *a);
    tes_entity_t *b = (tes_entity_t *)malloc((n + 1) * sizeof *b);
    if (a == NULL || b == NULL) {
        free(a);
        free(b);
        harness_fail(file, line, "out of memory");
    }
    if (l->count) memcpy(a, l->items, l->count * sizeof *a);
    if (n) memcpy(b, expected, n * sizeof *b);
    qsort(a, l->count, sizeof *a, fx_entity_compare);
    qsort(b, n, sizeof *b, fx_entity_compare);
    uint32_t i = 0, j = 0;
    tes_entity_t extra = 0, missing = 0;
    while (i < l->count || j < n) {
        if (j == n || (i < l->count && a[i] < b[j])) {
            if (!extra) extra = a[i];
            i++;
        } else if (i == l->count || b[j] < a[i]) {
            if (!missing) missing = b[j];
            j++;
        } else {
            i++;
            j++;
        }
    }
    free(a);
    free(b);
    if (extra || missing) {
        harness_fail(file, line,
                     "got %u entities, expected %u; first unexpected (or duplicate) %u, first "
                     "missing %u",
                     (unsigned)l->count, (unsigned)n, (unsigned)extra, (unsigned)missing);
    }
}
#define FX_CHECK_SAME_ENTITIES(list, expected, n) \
    fx_check_same_entities_at(__FILE__, __LINE__, list, expected, n)
/* FX_CHECK_VISITED(list, e1, e2, ...): exactly these entities (at least one). */
#define FX_CHECK_VISITED(list, ...)                                    \
    fx_check_same_entities_at(                                         \
        __FILE__, __LINE__, list, (const tes_entity_t[]){__VA_ARGS__}, \
        (uint32_t)(sizeof((tes_entity_t[]){__VA_ARGS__}) / sizeof(tes_entity_t)))

/* A query that must be created; the world frees it if the case does not destroy it. */
static inline tes_query_t *fx_query(tes_world_t *world, const tes_query_desc_t *desc) {
    tes_query_t *query = NULL;
    CHECK_OK(tes_query_create(world, desc, &query));
    CHECK(query != NULL);
    return query;
}

/* The shape every chunk of an iteration must have after tes_iter_next returned true:
 * something to visit, rows in range and each once (in dirty-list order, so not necessarily
 * ascending), or NULL with row_count == count; the same entities as the chunk itself, all
 * alive. */
static inline void fx_check_iter_chunk_at(const char *file, int line, const tes_world_t *world,
                                          const tes_iter_t *it) {
    if (it->count == 0 || it->entities == NULL || it->row_count == 0 || it->row_count > it->count) {
        harness_fail(file, line, "iteration chunk: count %u, row_count %u, entities %p",
                     (unsigned)it->count, (unsigned)it->row_count, (const void *)it->entities);
    }
    if (it->rows == NULL && it->row_count != it->count) {
        harness_fail(file, line, "iteration chunk: rows NULL but row_count %u != count %u",
                     (unsigned)it->row_count, (unsigned)it->count);
    }
    if (it->rows != NULL) {
        unsigned char *seen = (unsigned char *)calloc(it->count, 1);
        if (seen == NULL) harness_fail(file, line, "out of memory");
        for (uint32_t i = 0; i < it->row_count; i++) {
            uint32_t row = it->rows[i];
            bool bad = row >= it->count || seen[row];
            if (!bad) seen[row] = 1;
            if (bad) {
                free(seen);
                harness_fail(file, line, "iteration chunk: rows[%u] = %u (count %u) %s",
                             (unsigned)i, (unsigned)row, (unsigned)it->count,
                             row >= it->count ? "out of range" : "listed twice");
            }
        }
        free(seen);
    }
    tes_chunk_info_t chunk;
    tes_result_t r = tes_chunk_info(world, it->archetype, it->chunk, &chunk);
    if (r != TES_OK || chunk.count != it->count) {
        harness_fail(file, line, "iteration chunk (archetype %u, chunk %u): %s, count %u vs %u",
                     (unsigned)it->archetype, (unsigned)it->chunk, tes_result_name(r),
                     (unsigned)chunk.count, (unsigned)it->count);
    }
    for (uint32_t row = 0; row < it->count; row++) {
        if (chunk.entities[row] != it->entities[row]) {
            harness_fail(file, line, "iteration chunk: entities[%u] = %u, chunk says %u",
                         (unsigned)row, (unsigned)it->entities[row], (unsigned)chunk.entities[row]);
        }
        if (!tes_is_alive(world, it->entities[row])) {
            harness_fail(file, line, "iteration chunk: entity %u is not alive",
                         (unsigned)it->entities[row]);
        }
    }
}
#define FX_CHECK_ITER_CHUNK(world, it) fx_check_iter_chunk_at(__FILE__, __LINE__, world, it)

/* The row visited i-th in the current chunk. */
static inline uint32_t fx_iter_row(const tes_iter_t *it, uint32_t i) {
    return it->rows ? it->rows[i] : i;
}

/* One whole run of `query`: appends every visited entity to `out` (cleared first), in visit
 * order, checking each chunk's shape, a constant this_run, and that no entity is visited
 * twice. Returns this_run. */
static inline uint64_t fx_run_into(tes_world_t *world, tes_query_t *query, fx_entities_t *out) {
    tes_iter_t it;
    out->count = 0;
    CHECK_OK(tes_query_iter(world, query, &it));
    uint64_t this_run = it.this_run;
    while (tes_iter_next(&it)) {
        FX_CHECK_ITER_CHUNK(world, &it);
        CHECK_EQ(it.this_run, this_run);
        for (uint32_t i = 0; i < it.row_count; i++)
            fx_entities_push(out, it.entities[fx_iter_row(&it, i)]);
    }
    if (out->count > 1) {
        tes_entity_t *sorted = (tes_entity_t *)malloc(out->count * sizeof *sorted);
        CHECK(sorted != NULL);
        memcpy(sorted, out->items, out->count * sizeof *sorted);
        qsort(sorted, out->count, sizeof *sorted, fx_entity_compare);
        tes_entity_t duplicate = 0;
        for (uint32_t i = 1; i < out->count; i++) {
            if (sorted[i] == sorted[i - 1]) duplicate = sorted[i];
        }
        free(sorted);
        if (duplicate)
            harness_fail(__FILE__, __LINE__, "entity %u visited twice in one run",
                         (unsigned)duplicate);
    }
    return this_run;
}

/* One whole run; the visited entities, in a list freed after the case. */
static inline fx_entities_t *fx_run(tes_world_t *world, tes_query_t *query) {
    fx_entities_t *list = fx_entities_new();
    fx_run_into(world, query, list);
    return list;
}

/* Number of entities one run visits. */
static inline uint32_t fx_run_count(tes_world_t *world, tes_query_t *query) {
    static fx_entities_t scratch; /* reused: still reachable at exit, so not a leak */
    fx_run_into(world, query, &scratch);
    return scratch.count;
}

/* ---------------------------------------------------------------------------------------- */
/* Reproducible randomness                                                                   */
/* ---------------------------------------------------------------------------------------- */

typedef struct fx_rng_t {
    uint64_t state;
} fx_rng_t;

static inline uint64_t fx_rng_next(fx_rng_t *rng) {
    uint64_t z = (rng->state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [0, n), n > 0. */
static inline uint32_t fx_rng_below(fx_rng_t *rng, uint32_t n) {
    return (uint32_t)(((fx_rng_next(rng) >> 32) * (uint64_t)n) >> 32);
}

/* Random query terms over n components (bit i = component i): each lands in at most one of
 * all / none / any, with chance 1/kinds each (kinds >= 3; the rest of the time in none of them). */
typedef struct fx_term_masks_t {
    uint32_t all, none, any;
} fx_term_masks_t;
static inline fx_term_masks_t fx_random_terms(fx_rng_t *rng, uint32_t n, uint32_t kinds) {
    fx_term_masks_t m = {0, 0, 0};
    for (uint32_t i = 0; i < n; i++) {
        uint32_t pick = fx_rng_below(rng, kinds);
        if (pick == 0) m.all |= 1u << i;
        if (pick == 1) m.none |= 1u << i;
        if (pick == 2) m.any |= 1u << i;
    }
    return m;
}

static inline bool fx_rng_chance(fx_rng_t *rng, uint32_t percent) {
    return fx_rng_below(rng, 100) < percent;
}

/* ---------------------------------------------------------------------------------------- */
/* Sparse components and relations                                                           */
/* ---------------------------------------------------------------------------------------- */

/* Registration with storage / relation flags that must succeed. */
static inline tes_component_t fx_component_flags(tes_world_t *world, const char *name,
                                                 const tes_field_desc_t *fields,
                                                 uint32_t field_count, uint32_t flags) {
    tes_component_desc_t desc = {
        .name = name, .fields = fields, .field_count = field_count, .flags = flags};
    tes_component_t id = UINT32_MAX;
    CHECK_OK(tes_component_register(world, &desc, &id));
    return id;
}

static inline tes_component_t fx_sparse(tes_world_t *world, const char *name,
                                        const tes_field_desc_t *fields, uint32_t field_count) {
    return fx_component_flags(world, name, fields, field_count, TES_COMPONENT_SPARSE);
}

/* A relation; `flags` adds TES_RELATION_* to TES_COMPONENT_RELATION. */
static inline tes_component_t fx_relation(tes_world_t *world, const char *name,
                                          const tes_field_desc_t *fields, uint32_t field_count,
                                          uint32_t flags) {
    return fx_component_flags(world, name, fields, field_count, TES_COMPONENT_RELATION | flags);
}

static inline bool fx_pair_has(const tes_world_t *world, tes_entity_t source,
                               tes_component_t relation, tes_entity_t target) {
    bool has = false;
    CHECK_OK(tes_pair_has(world, source, relation, target, &has));
    return has;
}

/* The source's targets / the target's sources, in order, into a list freed after the case;
 * checks that the count-only call and a short buffer agree with the full answer. */
static inline fx_entities_t *fx_pair_list(const tes_world_t *world, tes_component_t relation,
                                          tes_entity_t entity, bool targets) {
    uint32_t total = UINT32_MAX;
    if (targets) {
        CHECK_OK(tes_pair_targets(world, entity, relation, NULL, 0, &total));
    } else {
        CHECK_OK(tes_pair_sources(world, relation, entity, NULL, 0, &total));
    }
    CHECK(total != UINT32_MAX);
    fx_entities_t *l = fx_entities_new();
    tes_entity_t *items = (tes_entity_t *)fx_malloc((total + 1) * sizeof *items);
    uint32_t again = UINT32_MAX;
    items[total] = 0xdeadbeefu; /* must stay: nothing written past `capacity` */
    if (targets) {
        CHECK_OK(tes_pair_targets(world, entity, relation, items, total, &again));
    } else {
        CHECK_OK(tes_pair_sources(world, relation, entity, items, total, &again));
    }
    CHECK_EQ(again, total);
    CHECK_EQ(items[total], 0xdeadbeefu);
    for (uint32_t i = 0; i < total; i++)
        fx_entities_push(l, items[i]);
    return l;
}

static inline fx_entities_t *fx_targets(const tes_world_t *world, tes_entity_t source,
                                        tes_component_t relation) {
    return fx_pair_list(world, relation, source, true);
}

static inline fx_entities_t *fx_sources(const tes_world_t *world, tes_component_t relation,
                                        tes_entity_t target) {
    return fx_pair_list(world, relation, target, false);
}

/* Fails at the caller's line unless `l` is exactly expected[0..n-1], in this order. */
static inline void fx_check_sequence_at(const char *file, int line, const fx_entities_t *l,
                                        const tes_entity_t *expected, uint32_t n) {
    if (l->count != n) {
        harness_fail(file, line, "got %u entities, expected %u", (unsigned)l->count, (unsigned)n);
    }
    for (uint32_t i = 0; i < n; i++) {
        if (l->items[i] != expected[i]) {
            harness_fail(file, line, "entry %u is %u, expected %u", (unsigned)i,
                         (unsigned)l->items[i], (unsigned)expected[i]);
        }
    }
}
/* FX_CHECK_ORDER(list, e1, e2, ...): exactly these entities in this order; FX_CHECK_EMPTY. */
#define FX_CHECK_ORDER(list, ...)                                                       \
    fx_check_sequence_at(__FILE__, __LINE__, list, (const tes_entity_t[]){__VA_ARGS__}, \
                         (uint32_t)(sizeof((tes_entity_t[]){__VA_ARGS__}) / sizeof(tes_entity_t)))
#define FX_CHECK_EMPTY(list) fx_check_sequence_at(__FILE__, __LINE__, list, NULL, 0)

/* fx_snapshot_take plus what lives outside chunks: per live entity and per sparse component
 * whether it has it and its field bytes, per relation whether it has it, its targets in order
 * with every element of every pair field, and its sources in order. */
static inline void fx_snapshot_take_full(fx_snapshot_t *s, const tes_world_t *world) {
    fx_snapshot_take(s, world);
    uint32_t archetypes = tes_archetype_count(world);
    for (tes_component_t c = 0; c < s->stats.component_count; c++) {
        tes_component_info_t component;
        CHECK_OK(tes_component_info(world, c, &component));
        if (!(component.flags & (TES_COMPONENT_SPARSE | TES_COMPONENT_RELATION))) continue;
        fx_snapshot_put_u32(s, c);
        for (tes_archetype_t a = 0; a < archetypes; a++) {
            tes_archetype_info_t info;
            CHECK_OK(tes_archetype_info(world, a, &info));
            for (uint32_t k = 0; k < info.chunk_count; k++) {
                tes_chunk_info_t chunk;
                CHECK_OK(tes_chunk_info(world, a, k, &chunk));
                for (uint32_t row = 0; row < chunk.count; row++) {
                    tes_entity_t e = chunk.entities[row];
                    bool has = false;
                    CHECK_OK(tes_has(world, e, c, &has));
                    fx_snapshot_put_u32(s, e);
                    fx_snapshot_put_u32(s, has ? 1u : 0u);
                    if (!(component.flags & TES_COMPONENT_RELATION)) {
                        for (uint32_t f = 0; has && f < component.field_count; f++) {
                            unsigned char value[TES_MAX_ARRAY_LENGTH * 8];
                            tes_field_info_t field;
                            CHECK_OK(tes_field_info(world, c, f, &field));
                            CHECK_OK(tes_get(world, e, c, f, value, field.bytes));
                            fx_snapshot_put(s, value, field.bytes);
                        }
                        continue;
                    }
                    tes_entity_t list[256];
                    uint32_t n = 0;
                    CHECK_OK(tes_pair_targets(world, e, c, list, 256, &n));
                    CHECK(n <= 256);
                    fx_snapshot_put_u32(s, n);
                    for (uint32_t i = 0; i < n; i++) {
                        fx_snapshot_put_u32(s, list[i]);
                        for (uint32_t f = 0; f < component.field_count; f++) {
                            tes_field_info_t field;
                            CHECK_OK(tes_field_info(world, c, f, &field));
                            for (uint32_t el = 0; el < field.length; el++) {
                                double v = 0;
                                CHECK_OK(tes_pair_get_number(world, e, c, list[i], f, el, &v));
                                fx_snapshot_put(s, &v, sizeof v);
                            }
                        }
                    }
                    CHECK_OK(tes_pair_sources(world, c, e, list, 256, &n));
                    CHECK(n <= 256);
                    fx_snapshot_put_u32(s, n);
                    fx_snapshot_put(s, list, (n < 256 ? n : 256) * sizeof list[0]);
                }
            }
        }
    }
}

static inline fx_snapshot_t *fx_snapshot_full_of(const tes_world_t *world) {
    fx_snapshot_t *s = fx_snapshot_new();
    fx_snapshot_take_full(s, world);
    return s;
}

/* FX_CHECK_UNCHANGED / _STRICT against a snapshot from fx_snapshot_full_of: sparse sets and
 * pairs included. */
#define FX_CHECK_UNCHANGED_FULL(before, world) \
    fx_check_unchanged_at(__FILE__, __LINE__, before, world, false, fx_snapshot_take_full)
#define FX_CHECK_UNCHANGED_FULL_STRICT(before, world) \
    fx_check_unchanged_at(__FILE__, __LINE__, before, world, true, fx_snapshot_take_full)

/* ---------------------------------------------------------------------------------------- */
/* A world with every kind of component, changed at random (snapshots, deltas)             */
/* ---------------------------------------------------------------------------------------- */

static const tes_field_desc_t fx_body_fields[] = {
    {"x", TES_F32, 0}, {"hp", TES_I16, 0}, {"tags", TES_U8, 3}, {"mass", TES_F64, 0}};
static const tes_field_desc_t fx_weight_fields[] = {{"w", TES_F64, 0}, {"k", TES_U8, 0}};

typedef struct fx_mixed_t {
    tes_world_t *world;
    tes_component_t body, vel, tag, sparse, marker, likes, child, local;
} fx_mixed_t;

/* The world and its components; `local` (TES_COMPONENT_LOCAL, what deltas leave out) only when
 * asked for (UINT32_MAX otherwise). */
static inline fx_mixed_t fx_mixed(const tes_world_desc_t *desc, bool with_local) {
    fx_mixed_t w;
    w.world = fx_world(desc);
    w.body = fx_component(w.world, "Body", fx_body_fields, 4);
    w.vel = fx_component(w.world, "Vel", fx_body_fields, 1);
    w.tag = fx_tag(w.world, "Tag");
    w.sparse = fx_sparse(w.world, "Sparse", fx_weight_fields, 2);
    w.marker = fx_sparse(w.world, "Marker", NULL, 0);
    w.likes = fx_relation(w.world, "Likes", fx_weight_fields, 2, 0);
    w.child = fx_relation(w.world, "ChildOf", NULL, 0,
                          TES_RELATION_EXCLUSIVE | TES_RELATION_ACYCLIC | TES_RELATION_CASCADE);
    tes_component_desc_t local = {"Local", fx_weight_fields, 1, TES_COMPONENT_LOCAL};
    w.local = UINT32_MAX;
    if (with_local) CHECK_OK(tes_component_register(w.world, &local, &w.local));
    return w;
}

typedef struct fx_live_t {
    tes_entity_t e[512];
    uint32_t n;
} fx_live_t;

/* One random change to the world: spawns, despawns (cascading), adds and removes, values, sparse
 * members, local values, pairs with data, ChildOf links and reordered children. */
static inline void fx_mixed_change(const fx_mixed_t *w, fx_rng_t *rng, fx_live_t *live,
                                   uint32_t step) {
    uint32_t op = fx_rng_below(rng, 14);
    tes_entity_t e = live->n ? live->e[fx_rng_below(rng, live->n)] : 0;
    tes_entity_t f = live->n ? live->e[fx_rng_below(rng, live->n)] : 0;
    if (op < 3 || live->n < 4) {
        if (live->n == 512) return;
        const tes_component_t set[] = {w->body, w->vel, w->tag, w->sparse, w->marker, w->local};
        uint32_t kinds = w->local != UINT32_MAX ? 6 : 5;
        uint32_t mask = fx_rng_below(rng, 1u << kinds), count = 0;
        tes_component_t chosen[6];
        for (uint32_t k = 0; k < kinds; k++) {
            if (mask & (1u << k)) chosen[count++] = set[k];
        }
        CHECK_OK(tes_spawn(w->world, chosen, count, &live->e[live->n]));
        e = live->e[live->n++];
        if (fx_has(w->world, e, w->body)) {
            CHECK_OK(tes_init_number(w->world, e, w->body, 0, 0, (double)step * 0.5));
            CHECK_OK(tes_init_number(w->world, e, w->body, 2, step % 3, step % 256));
        }
    } else if (op == 3) {
        CHECK_OK(tes_despawn(w->world, e));
    } else if (op == 4) {
        CHECK_OK(tes_add(w->world, e, fx_rng_chance(rng, 50) ? w->vel : w->tag));
    } else if (op == 5) {
        CHECK_OK(tes_remove(w->world, e, fx_rng_chance(rng, 50) ? w->body : w->tag));
    } else if (op == 6) {
        tes_component_t s = fx_rng_chance(rng, 50) ? w->sparse : w->marker;
        if (fx_rng_chance(rng, 70)) {
            CHECK_OK(tes_add(w->world, e, s));
            if (s == w->sparse) CHECK_OK(tes_set_number(w->world, e, s, 0, 0, step + 0.25));
        } else {
            CHECK_OK(tes_remove(w->world, e, s));
        }
    } else if (op == 7 || op == 8) {
        CHECK_OK(tes_pair_add(w->world, e, w->likes, f));
        CHECK_OK(tes_pair_set_number(w->world, e, w->likes, f, 0, 0, step * 1.5));
    } else if (op == 9) {
        tes_result_t r = tes_pair_add(w->world, e, w->child, f);
        CHECK(r == TES_OK || r == TES_ERR_CYCLE);
    } else if (op == 10) {
        tes_entity_t parent = 0, siblings[512];
        CHECK_OK(tes_pair_target(w->world, e, w->child, &parent));
        uint32_t count = 0;
        if (parent) CHECK_OK(tes_pair_sources(w->world, w->child, parent, siblings, 512, &count));
        if (count) CHECK_OK(tes_pair_place(w->world, e, w->child, parent, siblings[0]));
    } else if (op == 11) {
        CHECK_OK(tes_pair_remove(w->world, e, w->likes, f));
    } else if (op == 12) {
        if (w->local != UINT32_MAX && fx_has(w->world, e, w->local)) {
            CHECK_OK(tes_set_number(w->world, e, w->local, 0, 0, step));
        }
    } else if (fx_has(w->world, e, w->body)) {
        CHECK_OK(tes_set_number(w->world, e, w->body, 1, 0, (double)(step % 1000)));
        CHECK_OK(tes_set_number(w->world, e, w->body, 3, 0, -(double)step));
    }
    uint32_t kept = 0; /* despawns cascade: keep the live handles */
    for (uint32_t i = 0; i < live->n; i++) {
        if (tes_is_alive(w->world, live->e[i])) live->e[kept++] = live->e[i];
    }
    live->n = kept;
}

/* n random changes, steps step0, step0 + 1, ... */
static inline void fx_mixed_changes(const fx_mixed_t *w, fx_rng_t *rng, fx_live_t *live, uint32_t n,
                                    uint32_t step0) {
    for (uint32_t i = 0; i < n; i++)
        fx_mixed_change(w, rng, live, step0 + i);
}

#endif /* TESSERA_TEST_FIXTURES_H */
