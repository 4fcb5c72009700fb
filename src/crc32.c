/* CRC-32 (IEEE 802.3, as zlib and PNG compute it): the seal of a snapshot's and a delta's body
 * and the check of a delta's component list (snapshot.c, replicator.c, replica_head.c). */
#include "internal.h"

/* Slicing-by-8: eight tables, eight bytes per step, about 5x the byte-at-a-time loop (which made
 * the checksum most of a snapshot's cost: ~2 ns per byte). Built on first use. */
static uint32_t crc_tables[8][256];

static void crc_init(void) {
    if (crc_tables[0][1]) return;
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_tables[0][n] = c;
    }
    for (uint32_t n = 0; n < 256; n++) {
        for (int t = 1; t < 8; t++) {
            uint32_t c = crc_tables[t - 1][n];
            crc_tables[t][n] = crc_tables[0][c & 0xFF] ^ (c >> 8);
        }
    }
}

/* The running CRC `c` (not inverted) over n more bytes. */
static uint32_t crc_update(uint32_t c, const uint8_t *bytes, size_t n) {
    crc_init();
    for (; n >= 8; n -= 8, bytes += 8) {
        uint32_t lo, hi;
        memcpy(&lo, bytes, 4); /* little-endian, as everywhere in the format */
        memcpy(&hi, bytes + 4, 4);
        lo ^= c;
        c = crc_tables[7][lo & 0xFF] ^ crc_tables[6][(lo >> 8) & 0xFF] ^
            crc_tables[5][(lo >> 16) & 0xFF] ^ crc_tables[4][lo >> 24] ^ crc_tables[3][hi & 0xFF] ^
            crc_tables[2][(hi >> 8) & 0xFF] ^ crc_tables[1][(hi >> 16) & 0xFF] ^
            crc_tables[0][hi >> 24];
    }
    while (n--)
        c = crc_tables[0][(c ^ *bytes++) & 0xFF] ^ (c >> 8);
    return c;
}

uint32_t tesi_crc32(const uint8_t *bytes, size_t n) {
    return crc_update(0xFFFFFFFFu, bytes, n) ^ 0xFFFFFFFFu;
}
