/* The CRC-32 of the snapshot and delta formats (docs/format.md), written out bit by bit: the tests
 * and the fuzz targets seal bytes with it, independently of the core's table-driven one. */
#ifndef TESSERA_TEST_CRC32_REFERENCE_H
#define TESSERA_TEST_CRC32_REFERENCE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline uint32_t crc32_reference(const uint8_t *bytes, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= bytes[i];
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
    }
    return ~c;
}

/* Makes bytes in either format (snapshot or delta: the same 16-byte header) claim their size and
 * carry a valid checksum, so that a reader gets past the header to whatever they hold. */
static inline void crc32_reseal(uint8_t *bytes, uint32_t size) {
    uint32_t crc = crc32_reference(bytes + 16, size - 16);
    memcpy(bytes + 8, &size, 4);
    memcpy(bytes + 12, &crc, 4);
}

/* The same for a delta, whose header is 12 bytes: magic, version and flags, the checksum. */
static inline void crc32_reseal_delta(uint8_t *bytes, uint32_t size) {
    uint32_t crc = crc32_reference(bytes + 12, size - 12);
    memcpy(bytes + 8, &crc, 4);
}

#endif /* TESSERA_TEST_CRC32_REFERENCE_H */
