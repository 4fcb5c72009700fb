/* libFuzzer target for the snapshot decoder (tes_world_restore).
 *
 * Input: one byte of mode, then the candidate snapshot. Mode bit 0 set: the header's size and
 * CRC-32 are rewritten to match before decoding, so the fuzzer reaches the body's parser
 * instead of stopping at the checksum (the checksum path itself is what mode 0 exercises).
 *
 * Checks: decoding never crashes or leaks (ASan/UBSan/LeakSanitizer), and a snapshot that
 * decodes is a valid world whose own snapshot is the same bytes: anything the decoder accepts
 * is exactly what tes_snapshot would write. What decoding allocates is bounded by the input
 * (counted_bound) plus the entity table the bytes describe: 16 bytes for each index that is
 * live or free in it (runs let a few bytes describe many), at most 2^21 of them whatever the
 * bytes claim. */
#include "../crc32_reference.h"
#include "counting_alloc.h"
#include "tessera.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1 || size > (1u << 24)) return 0;
    uint8_t mode = data[0];
    size_t n = size - 1;
    uint8_t *bytes = (uint8_t *)malloc(n ? n : 1);
    if (!bytes) return 0;
    memcpy(bytes, data + 1, n);
    if ((mode & 1) && n >= 16) {
        crc32_reseal(bytes, (uint32_t)n);
    }
    tes_world_t *world = NULL;
    counted_reset_peak();
    size_t held = counted_live;
    tes_result_t r = tes_world_restore(&(tes_world_desc_t){.allocator = counted_allocator}, bytes,
                                       (uint32_t)n, &world);
    size_t table = (size_t)16 << TES_INDEX_BITS; /* what a refused table may have claimed */
    if (r == TES_OK) {
        tes_world_stats_t stats;
        if (tes_world_stats(world, &stats) != TES_OK) abort();
        table = 16 * ((size_t)stats.entity_count + stats.free_queue_length + 1);
    }
    if (counted_peak - held > counted_bound(n) + table) abort();
    if (r == TES_OK) {
        if (tes_world_validate(world) != TES_OK) abort();
        const uint8_t *again = NULL;
        uint32_t again_size = 0;
        if (tes_snapshot(world, &again, &again_size) != TES_OK) abort();
        if (again_size != n || memcmp(again, bytes, n) != 0) abort();
        tes_world_destroy(world);
    } else if (world != NULL || (r != TES_ERR_BAD_SNAPSHOT && r != TES_ERR_SNAPSHOT_VERSION &&
                                 r != TES_ERR_OUT_OF_MEMORY)) {
        abort();
    }
    free(bytes);
    return 0;
}
