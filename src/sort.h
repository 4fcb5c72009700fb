/* Sorting by entity index: the radix sort the passes over thousands of touched indices use (a
 * checkpoint's, a rewind's, a replicator's), inline so that each caller's item size and key are
 * constants (a plain list of indices, or records that carry one). */
#ifndef TESSERA_SORT_H
#define TESSERA_SORT_H

#include "internal.h"

static inline uint32_t tesi_sort_key(const uint8_t *item, size_t key) {
    uint32_t k;
    memcpy(&k, item + key, sizeof k);
    return k;
}

/* Sorts `n` items of `size` bytes by the entity index (below 2^21) in the u32 at byte `key` of
 * each, stably, in two counting passes of 11 bits through `spare` (room for n items): O(n), where
 * a comparison sort of the thousands of indices a busy tick touches cost more than writing their
 * records. The passes cost their 2048 buckets whatever n. */
static inline __attribute__((always_inline)) void
tesi_radix_sort(uint8_t *items, uint8_t *spare, uint32_t n, size_t size, size_t key) {
    _Static_assert(TES_INDEX_BITS <= 22, "two passes of 11 bits");
    uint8_t *from = items, *to = spare;
    for (uint32_t shift = 0; shift < TES_INDEX_BITS; shift += 11) {
        uint32_t counts[2048] = {0};
        for (uint32_t i = 0; i < n; i++)
            counts[(tesi_sort_key(from + (size_t)i * size, key) >> shift) & 2047]++;
        for (uint32_t b = 0, sum = 0; b < 2048; b++) {
            uint32_t c = counts[b];
            counts[b] = sum;
            sum += c;
        }
        for (uint32_t i = 0; i < n; i++) {
            const uint8_t *item = from + (size_t)i * size;
            uint32_t at = counts[(tesi_sort_key(item, key) >> shift) & 2047]++;
            memcpy(to + (size_t)at * size, item, size);
        }
        uint8_t *t = from;
        from = to;
        to = t;
    }
    if (from != items) memcpy(items, from, (size_t)n * size);
}

#endif
