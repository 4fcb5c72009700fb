/* An allocator for the fuzz targets' worlds that keeps the bytes live and their peak, so that
 * a target can check what decoding its input allocated against a bound: allocation follows
 * the input (and what the input describes), never a size the input merely names. */
#ifndef TESSERA_FUZZ_COUNTING_ALLOC_H
#define TESSERA_FUZZ_COUNTING_ALLOC_H

#include "tessera.h"

#include <stdlib.h>

static size_t counted_live, counted_peak;

static void *counted_alloc(size_t size, void *user) {
    (void)user;
    /* aligned_alloc wants a multiple of the alignment; chunk columns rely on 16 bytes. */
    void *p = aligned_alloc(16, size ? (size + 15) & ~(size_t)15 : 16);
    if (p) {
        counted_live += size;
        if (counted_live > counted_peak) counted_peak = counted_live;
    }
    return p;
}

static void counted_free(void *ptr, size_t size, void *user) {
    (void)user;
    if (!ptr) return;
    counted_live -= size;
    free(ptr);
}

static const tes_allocator_t counted_allocator = {counted_alloc, counted_free, NULL};

/* Starts measuring a peak from what is live now. */
static inline void counted_reset_peak(void) {
    counted_peak = counted_live;
}

/* A linear bound on what decoding n bytes may add: a fixed 2 MiB (the world's own tables),
 * then 16 KiB a byte (a record of 8 bytes may take a page of each per-index array and a chunk,
 * and a table run of 2 bytes the two partial pages it ends in). */
static inline size_t counted_bound(size_t n) {
    return ((size_t)2 << 20) + (size_t)16384 * n;
}

#endif /* TESSERA_FUZZ_COUNTING_ALLOC_H */
