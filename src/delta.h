/* The delta format's constants (docs/format.md, "tessera delta format"), shared by the side
 * that writes deltas (replicator.c) and the side that reads them (replica.c). */
#ifndef TESSERA_DELTA_H
#define TESSERA_DELTA_H

#include "internal.h"

#define DELTA_MAGIC   0x544C4454u         /* "TDLT" little-endian */
#define DELTA_VERSION 2u                  /* 1: fixed-width records and events, no longer read */
#define KEYFRAME      TESI_DELTA_KEYFRAME /* the whole state; what it lacks is despawned */
#define HEADER_BYTES  16u
/* A record's two bits per replicated component (relations aside), in id order. */
#define ABSENT        0u
#define PRESENT_STATE 1u
#define WITH_VALUES   3u     /* present, and its values follow */
#define DATA          0x100u /* on a pair event's kind: the pair's data follows */

_Static_assert(TESI_DELTA_FLAGS_BYTE == sizeof(uint32_t) + sizeof(uint16_t),
               "a delta's flags are the upper half of its header's second word");

#endif
