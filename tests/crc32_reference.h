/* The snapshot format's CRC-32 (docs/format.md), written out bit by bit: the tests and the fuzz
 * target seal bytes with it, independently of the core's table-driven one. */
#ifndef TESSERA_TEST_CRC32_REFERENCE_H
#define TESSERA_TEST_CRC32_REFERENCE_H

#include <stddef.h>
#include <stdint.h>

static inline uint32_t crc32_reference(const uint8_t *bytes, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= bytes[i];
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
    }
    return ~c;
}

#endif /* TESSERA_TEST_CRC32_REFERENCE_H */
