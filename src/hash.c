/* XXH64 (xxHash's 64-bit hash, seed 0), fed piece by piece: tes_world_hash streams a world's
 * snapshot body through it without writing the bytes anywhere. The pieces' boundaries do not
 * matter: the result is the hash of the bytes put, one after another, as one string. XXH64 was
 * chosen for its speed on 64-bit multiplies (wasm has them), its published test vectors
 * (tests/c/test_hash.c checks them), and implementations in every language a peer may use. */
#include "internal.h"

#define P1 0x9E3779B185EBCA87ull
#define P2 0xC2B2AE3D27D4EB4Full
#define P3 0x165667B19E3779F9ull
#define P4 0x85EBCA77C2B2AE63ull
#define P5 0x27D4EB2F165667C5ull

static inline uint64_t rotl(uint64_t x, unsigned r) {
    return x << r | x >> (64 - r);
}

/* Little-endian reads, as wasm and every tested host are (the snapshot format is too). */
static inline uint64_t read64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static inline uint32_t read32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static inline uint64_t round64(uint64_t acc, uint64_t input) {
    return rotl(acc + input * P2, 31) * P1;
}

static inline uint64_t merge(uint64_t h, uint64_t lane) {
    return (h ^ round64(0, lane)) * P1 + P4;
}

void tesi_hash_init(tesi_hash_t *h) {
    *h = (tesi_hash_t){.lanes = {P1 + P2, P2, 0, -P1}};
}

/* Four lanes of 8 bytes each per 32-byte stripe: independent multiplies, so the stripes of a
 * column run at the multiplier's throughput, not its latency. */
static const uint8_t *stripes(uint64_t lanes[4], const uint8_t *p, const uint8_t *end) {
    uint64_t a = lanes[0], b = lanes[1], c = lanes[2], d = lanes[3];
    for (; end - p >= 32; p += 32) {
        a = round64(a, read64(p));
        b = round64(b, read64(p + 8));
        c = round64(c, read64(p + 16));
        d = round64(d, read64(p + 24));
    }
    lanes[0] = a, lanes[1] = b, lanes[2] = c, lanes[3] = d;
    return p;
}

void tesi_hash_put(tesi_hash_t *h, const void *bytes, size_t n) {
    const uint8_t *p = bytes, *end = p + n;
    h->total += n;
    if (h->buffered) { /* finish the stripe begun by earlier pieces */
        size_t take = 32 - h->buffered < n ? 32 - h->buffered : n;
        memcpy(h->buffer + h->buffered, p, take);
        h->buffered += (uint32_t)take;
        p += take;
        if (h->buffered < 32) return;
        stripes(h->lanes, h->buffer, h->buffer + 32);
        h->buffered = 0;
    }
    p = stripes(h->lanes, p, end);
    memcpy(h->buffer, p, (size_t)(end - p));
    h->buffered = (uint32_t)(end - p);
}

uint64_t tesi_hash_final(const tesi_hash_t *h) {
    uint64_t v;
    if (h->total >= 32) {
        const uint64_t *l = h->lanes;
        v = rotl(l[0], 1) + rotl(l[1], 7) + rotl(l[2], 12) + rotl(l[3], 18);
        for (int i = 0; i < 4; i++)
            v = merge(v, l[i]);
    } else {
        v = P5; /* the seed, 0, plus P5 */
    }
    v += h->total;
    const uint8_t *p = h->buffer, *end = p + h->buffered;
    for (; end - p >= 8; p += 8)
        v = rotl(v ^ round64(0, read64(p)), 27) * P1 + P4;
    if (end - p >= 4) {
        v = rotl(v ^ (uint64_t)read32(p) * P1, 23) * P2 + P3;
        p += 4;
    }
    for (; p < end; p++)
        v = rotl(v ^ *p * P5, 11) * P1;
    v ^= v >> 33;
    v *= P2;
    v ^= v >> 29;
    v *= P3;
    return v ^ v >> 32;
}
