/* Arrays by entity index, a page at a time: the entity table, the replicators' index stamps,
 * sparse maps and relation lists (internal.h has the reasons). */
#include "internal.h"
#include "sort.h"

static size_t page_bytes(uint32_t elem) {
    return (size_t)TESI_PAGE_SIZE * elem;
}

uint32_t tesi_paged_missing(const tesi_paged_t *p, uint32_t first, uint32_t end) {
    uint32_t missing = 0;
    for (uint32_t page = first >> TESI_PAGE_BITS;
         first < end && page <= (end - 1) >> TESI_PAGE_BITS; page++) {
        missing += page >= p->page_slots || !p->pages[page];
    }
    return missing;
}

tes_result_t tesi_paged_cover(tes_world_t *world, tesi_paged_t *p, uint32_t end) {
    if (end > TESI_INDEX_LIMIT) end = TESI_INDEX_LIMIT; /* no index reaches it */
    if (!end || ((end - 1) >> TESI_PAGE_BITS) < p->page_slots) return TES_OK;
    uint32_t slots = p->page_slots ? p->page_slots : 16;
    while (slots <= (end - 1) >> TESI_PAGE_BITS)
        slots *= 2;
    if (slots > TESI_PAGE_LIMIT) slots = TESI_PAGE_LIMIT;
    uint8_t **pages = tesi_alloc(world, (size_t)slots * sizeof *pages);
    if (!pages) return TES_ERR_OUT_OF_MEMORY;
    memset(pages, 0, (size_t)slots * sizeof *pages);
    if (p->pages) {
        memcpy(pages, p->pages, (size_t)p->page_slots * sizeof *pages);
        tesi_free(world, p->pages, (size_t)p->page_slots * sizeof *pages);
    }
    p->pages = pages;
    p->page_slots = slots;
    return TES_OK;
}

tes_result_t tesi_paged_reserve(tes_world_t *world, tesi_paged_t *p, uint32_t first, uint32_t end,
                                uint32_t elem) {
    if (end > TESI_INDEX_LIMIT) end = TESI_INDEX_LIMIT;
    if (first >= end) return TES_OK;
    /* The directory first (pointers only), then each missing page: a page allocated before a
     * later one fails stays, zeroed and unused, which changes nothing anyone can see. */
    tes_result_t result = tesi_paged_cover(world, p, end);
    if (result != TES_OK) return result;
    for (uint32_t page = first >> TESI_PAGE_BITS; page <= (end - 1) >> TESI_PAGE_BITS; page++) {
        if (p->pages[page]) continue;
        uint8_t *fresh = tesi_alloc(world, page_bytes(elem));
        if (!fresh) return TES_ERR_OUT_OF_MEMORY;
        memset(fresh, 0, page_bytes(elem));
        p->pages[page] = fresh;
        p->page_count++;
    }
    return TES_OK;
}

void tesi_paged_fini(tes_world_t *world, tesi_paged_t *p, uint32_t elem) {
    for (uint32_t page = 0; page < p->page_slots; page++)
        tesi_free(world, p->pages[page], page_bytes(elem));
    tesi_free(world, p->pages, (size_t)p->page_slots * sizeof *p->pages);
    *p = (tesi_paged_t){0};
}

/* Sorts entity indices: a few dozen in place (the counting passes cost their 2048 buckets
 * whatever n), more by tesi_radix_sort. */
void tesi_sort_indices(uint32_t *indices, uint32_t *spare, uint32_t n) {
    if (n <= 64) {
        for (uint32_t i = 1; i < n; i++) {
            uint32_t v = indices[i], j = i;
            for (; j && indices[j - 1] > v; j--)
                indices[j] = indices[j - 1];
            indices[j] = v;
        }
        return;
    }
    tesi_radix_sort((uint8_t *)indices, (uint8_t *)spare, n, sizeof *indices, 0);
}
