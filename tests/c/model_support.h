/* What the randomized change-detection models (test_changes_model.c, test_sparse_changes_model.c)
 * share: limits, component bits, removal lists grouped by call, a growing array. */
#ifndef TESSERA_MODEL_SUPPORT_H
#define TESSERA_MODEL_SUPPORT_H

#include "fixtures.h"

#include <time.h>

#define BIT(c)    (1u << (c))
#define INDEX_CAP (1u << 16) /* entity indices a model maps */
#define MAX_LIVE  4096       /* live entities a model holds */

/* One expected removal; removals made by one call share a group, whose order is free. */
typedef struct rentry_t {
    tes_entity_t entity;
    uint64_t group;
} rentry_t;

typedef struct rlist_t {
    rentry_t *items;
    uint32_t count;
    uint32_t capacity;
} rlist_t;

static inline void *grow(void *items, uint32_t *capacity, uint32_t need, size_t size) {
    if (need <= *capacity) return items;
    uint32_t n = *capacity ? *capacity : 16;
    while (n < need)
        n *= 2;
    void *p = realloc(items, (size_t)n * size);
    CHECK(p != NULL);
    *capacity = n;
    return p;
}

static inline void rlist_push(rlist_t *l, tes_entity_t e, uint64_t group) {
    l->items = (rentry_t *)grow(l->items, &l->capacity, l->count + 1, sizeof *l->items);
    l->items[l->count].entity = e;
    l->items[l->count].group = group;
    l->count++;
}

/* Where `got` (as many entries as `want`) differs from `want` taken group by group, each group a
 * multiset in its place: the entry of `want` counted differently, its group's bounds and both
 * counts. found is false when they agree. */
typedef struct rdiff_t {
    bool found;
    uint32_t first, end; /* the group: got[first..end) */
    tes_entity_t entity;
    uint32_t in_got, in_want;
} rdiff_t;

static inline rdiff_t rlist_diff_groups(const rlist_t *want, const tes_entity_t *got) {
    uint32_t count = want->count;
    for (uint32_t i = 0; i < count;) {
        uint32_t j = i;
        while (j < count && want->items[j].group == want->items[i].group)
            j++;
        for (uint32_t x = i; x < j; x++) {
            uint32_t in_got = 0, in_want = 0;
            for (uint32_t y = i; y < j; y++) {
                in_got += got[y] == want->items[x].entity;
                in_want += want->items[y].entity == want->items[x].entity;
            }
            if (in_got != in_want)
                return (rdiff_t){true, i, j, want->items[x].entity, in_got, in_want};
        }
        i = j;
    }
    return (rdiff_t){0};
}

#endif
