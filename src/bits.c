/* Bit streams: a delta's records are written and read as bits (docs/format.md, "Records"), low
 * bits first, by delta_write.c and replica.c. */
#include "delta.h"

void tesi_bits_put(tesi_bits_t *b, uint64_t v, uint32_t count) {
    while (count) {
        uint32_t take = count < 32 ? count : 32;
        b->acc |= (v & ((1ull << take) - 1)) << b->n;
        b->n += take;
        v >>= take;
        count -= take;
        if (b->n >= 32) {
            uint32_t word = (uint32_t)b->acc; /* little-endian, as every integer of the format */
            tesi_put(b->w, &word, sizeof word);
            b->acc >>= 32;
            b->n -= 32;
        }
    }
}
void tesi_bits_put_bytes(tesi_bits_t *b, const uint8_t *from, uint32_t n) {
    for (; n >= 4; n -= 4, from += 4) {
        uint32_t v;
        memcpy(&v, from, sizeof v);
        tesi_bits_put(b, v, 32);
    }
    for (; n; n--)
        tesi_bits_put(b, *from++, 8);
}
void tesi_bits_end(tesi_bits_t *b) {
    uint32_t word = (uint32_t)b->acc;
    tesi_put(b->w, &word, (b->n + 7u) / 8u);
    b->acc = 0;
    b->n = 0;
}

/* Up to 56 bits come from one 8-byte load where 8 bytes are left. */
uint64_t tesi_bits_get(tesi_reader_t *r, uint64_t *at, uint32_t count) {
    if (r->result != TES_OK) return 0;
    if (count > (uint64_t)r->size * 8u - *at) {
        tesi_fail(r, r->bad);
        return 0;
    }
    uint64_t byte = *at >> 3, v;
    uint32_t shift = (uint32_t)(*at & 7u);
    if (count <= 56 && byte + 8 <= r->size) {
        memcpy(&v, r->bytes + byte, sizeof v); /* little-endian, as every integer of the format */
        v = count ? (v >> shift) & (UINT64_MAX >> (64 - count)) : 0;
    } else {
        v = 0;
        for (uint32_t got = 0; got < count; byte++, shift = 0) {
            uint32_t take = 8u - shift < count - got ? 8u - shift : count - got;
            v |= (uint64_t)((r->bytes[byte] >> shift) & ((1u << take) - 1u)) << got;
            got += take;
        }
    }
    *at += count;
    return v;
}
void tesi_bits_get_bytes(tesi_reader_t *r, uint64_t *at, uint8_t *to, uint32_t n) {
    for (; n >= 4; n -= 4, to += 4) {
        uint32_t v = (uint32_t)tesi_bits_get(r, at, 32);
        memcpy(to, &v, sizeof v);
    }
    for (; n; n--)
        *to++ = (uint8_t)tesi_bits_get(r, at, 8);
}
void tesi_bits_skip(tesi_reader_t *r, uint64_t *at, uint64_t count) {
    if (r->result != TES_OK) return;
    if (count > (uint64_t)r->size * 8u - *at) {
        tesi_fail(r, r->bad);
        return;
    }
    *at += count;
}
