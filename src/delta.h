/* The delta format's constants (docs/format.md, "tessera delta format"), shared by the side
 * that writes deltas (replicator.c) and the side that reads them (replica.c). */
#ifndef TESSERA_DELTA_H
#define TESSERA_DELTA_H

#include "internal.h"

#define DELTA_MAGIC   0x544C4454u /* "TDLT" little-endian */
/* 1: fixed-width records and events; 2: without quantized fields. Neither is read. */
#define DELTA_VERSION 3u
#define KEYFRAME      TESI_DELTA_KEYFRAME /* the whole state; what it lacks is despawned */
#define HEADER_BYTES  16u
/* A record's two bits per replicated component (relations aside), in id order. */
#define ABSENT        0u
#define PRESENT_STATE 1u
#define WITH_VALUES   3u     /* present, and its values follow */
#define DATA          0x100u /* on a pair event's kind: the pair's data follows */
/* A quantized element's varint: 0 escapes (the exact bytes follow), else zigzag(q) + 1. */
#define ESCAPE        0u
/* The largest |value / step| sent as an integer: every q up to it is exact in a double. */
#define QUANTUM_LIMIT 0x1p53

/* A field that travels quantized (tes_quantum_t), with what reading and writing it needs. Kept
 * sorted by (component, field): a replicator's by its own ids, a replica's by the source's. */
struct tesi_quantum_t {
    tes_component_t component;
    uint32_t field;
    uint32_t offset; /* in the component's packed row (its fields one after another) */
    uint32_t size;   /* of an element: 4 (f32) or 8 (f64) */
    uint32_t length; /* elements */
    double step;
};
typedef struct tesi_quantum_t tesi_quantum_t;

_Static_assert(TESI_DELTA_FLAGS_BYTE == sizeof(uint32_t) + sizeof(uint16_t),
               "a delta's flags are the upper half of its header's second word");

#endif
