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
#define SOME_VALUES   2u     /* present, a field mask and the values of those fields follow */
#define WITH_VALUES   3u     /* present, and its values follow */
#define DATA          0x100u /* on a pair event's kind: the pair's data follows */
/* Up to this many such components, a record's states ride in its head varint (above its whole
 * bit, below its gap) instead of bytes of their own. */
#define HEAD_STATES   5u
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

/* ---- peers (peer.c) ---------------------------------------------------------------------- */

/* What a peer knows of one entity index, in a paged array by index (zeros: nothing). */
typedef struct tesi_sight_t {
    uint32_t generation; /* of the entity shown (SHOWN) */
    uint32_t flags;      /* SIGHT_* */
    float priority;      /* shown: its priority (tes_peer_show) */
    uint32_t waited;     /* owed: the encodes it was withheld from */
    uint64_t since;      /* the change tick its visibility last changed (0: never) */
    uint64_t sent;       /* owed: the first delta that carried it since it was withheld (0: none) */
} tesi_sight_t;

#define SIGHT_SHOWN 1u /* shown to the peer (the entity of `generation`) */
#define SIGHT_OWED  2u /* withheld by a budget, and not acknowledged whole since */

struct tes_peer_t {
    tes_replicator_t *replicator;
    tes_world_t *world;
    uint32_t flags;      /* TES_PEER_* */
    tesi_paged_t sights; /* by entity index, tesi_sight_t */
    /* The indices whose visibility changed, with the change ticks (ascending), back to the
     * replicator's floor: what an encode walks for entities that entered or left the view. */
    uint64_t *log_ticks; /* one block: the ticks, then the indices (`log`) */
    uint32_t *log;
    uint32_t log_count;
    uint32_t log_slots;
    uint32_t *owed; /* indices marked SIGHT_OWED, each once (others are dropped lazily) */
    uint32_t owed_count;
    uint32_t owed_slots;
};

/* The peer's sight of an index; NULL when it knows nothing of it. */
static inline tesi_sight_t *tesi_sight_find(const tes_peer_t *peer, uint32_t index) {
    return (tesi_sight_t *)tesi_paged_find(&peer->sights, index, sizeof(tesi_sight_t));
}
/* Whether a live entity is one the peer sees (the replicator's scope aside). */
static inline bool tesi_peer_visible(const tes_peer_t *peer, tes_entity_t e) {
    if (!(peer->flags & TES_PEER_VISIBILITY)) return true;
    const tesi_sight_t *s = tesi_sight_find(peer, e & TESI_INDEX_MASK);
    return s && (s->flags & SIGHT_SHOWN) && s->generation == e >> TES_INDEX_BITS;
}
/* Whether the replica may hold an entity at the index that the peer no longer sees there: it
 * was shown, or its visibility changed since the baseline. Without visibility, always. */
static inline bool tesi_peer_may_hold(const tes_peer_t *peer, uint32_t index, uint64_t baseline) {
    if (!(peer->flags & TES_PEER_VISIBILITY)) return true;
    const tesi_sight_t *s = tesi_sight_find(peer, index);
    return s && ((s->flags & SIGHT_SHOWN) || s->since > baseline);
}
/* Drops the visibility changes at or before `floor` (no baseline before it is served). */
void tesi_peer_prune(tes_peer_t *peer, uint64_t floor);
/* Room for `more` owed indices and a sight for each index in `indices` (n of them): what
 * settling needs, reserved before an encode writes anything. */
tes_result_t tesi_peer_reserve(tes_peer_t *peer, const uint32_t *indices, uint32_t n,
                               uint32_t more);
/* A due record's score: its priority times one more than the encodes it waited. */
float tesi_peer_score(const tes_peer_t *peer, uint32_t index);
/* After an encode at `now`: the record of an owed index went (it stays owed until a baseline
 * at or after `now` is acknowledged: a lost delta cannot lose it). */
void tesi_peer_sent(tes_peer_t *peer, uint32_t index, uint64_t now);
/* The record at the index was withheld (its sight and a place in the owed list reserved). */
void tesi_peer_withhold(tes_peer_t *peer, uint32_t index);
/* An owed index that needs no more sending (the replica acknowledged it, or it is gone); its
 * place in the owed list goes at the next encode. */
void tesi_peer_forgive(tes_peer_t *peer, uint32_t index);
/* The replicator's world, and its list of peers (replicator.c). */
tes_world_t *tesi_replicator_world(const tes_replicator_t *rep);
tes_result_t tesi_replicator_add_peer(tes_replicator_t *rep, tes_peer_t *peer);
void tesi_replicator_remove_peer(tes_replicator_t *rep, tes_peer_t *peer);
void tesi_peer_free(tes_peer_t *peer);

_Static_assert(TESI_DELTA_FLAGS_BYTE == sizeof(uint32_t) + sizeof(uint16_t),
               "a delta's flags are the upper half of its header's second word");

#endif
