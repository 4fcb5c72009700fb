/* The delta format's constants (docs/format.md, "tessera delta format"), shared by the side
 * that writes deltas (replicator.c) and the side that reads them (replica.c). */
#ifndef TESSERA_DELTA_H
#define TESSERA_DELTA_H

#include "internal.h"

#define DELTA_MAGIC   0x544C4454u /* "TDLT" little-endian */
/* 1: fixed-width records and events; 2: without quantized fields; 3: records in whole bytes;
 * 4: without the source. None is read. */
#define DELTA_VERSION 5u
#define KEYFRAME      TESI_DELTA_KEYFRAME /* the whole state; what it lacks is despawned */
#define EMPTY         TESI_DELTA_EMPTY    /* not a keyframe, and nothing in it */
#define HEADER_BYTES  12u                 /* magic, version and flags, CRC of the rest */
/* A record's two bits per replicated component (relations aside), in id order. */
#define ABSENT        0u
#define PRESENT_STATE 1u
#define SOME_VALUES   2u     /* present, a field mask and the values of those fields follow */
#define WITH_VALUES   3u     /* present, and its values follow */
#define DATA          0x100u /* on a pair event's kind: the pair's data follows */
/* A quantized element's code: 0 escapes (a length and zigzag(q), or the exact bits, follow),
 * else q - base + 1. */
#define ESCAPE        0u
#define LENGTH_BITS   6u  /* an escape's length of zigzag(q) */
#define EXACT         63u /* that length: the exact bits follow instead */
/* The largest |value / step| sent as an integer: every q up to it is exact in a double. */
#define QUANTUM_LIMIT 0x1p53
/* The widest code: q - base + 1 for |q|, |base| <= 2^53. */
#define WIDTH_MAX     55u
/* A record's gap is a Rice code (docs/format.md): a quotient this long escapes to 21 bits. */
#define GAP_ESCAPE    16u
#define GAP_BITS_MAX  (TES_INDEX_BITS - 1u)
/* The patterns (states and whole bit) a delta lists at most; with more, each record carries
 * its own. */
#define PATTERNS_MAX  64u

/* A pattern's bits: two a component (`plain` of them), then the whole bit, at bit 2 * plain. */
static inline uint32_t tesi_pattern_bits(uint32_t plain) {
    return 2u * plain + 1u;
}
/* The bytes of a pattern, padded with zero bits. */
static inline uint32_t tesi_pattern_bytes(uint32_t plain) {
    return (tesi_pattern_bits(plain) + 7u) / 8u;
}
/* Whether a pattern says its record is whole. */
static inline bool tesi_pattern_whole(const uint8_t *pattern, uint32_t plain) {
    return (pattern[2u * plain / 8u] >> (2u * plain % 8u)) & 1u;
}
/* The bits to tell n things apart (0 for one). */
static inline uint32_t tesi_bits_for(uint64_t n) {
    return n > 1 ? 64u - (uint32_t)__builtin_clzll(n - 1) : 0; /* per quantized element */
}

/* Bits appended to a writer, low bits first (bit i of the stream is bit i % 8 of its byte
 * i / 8): a delta's records (bits.c). `acc` holds the `n` (< 32) bits not yet written. */
typedef struct tesi_bits_t {
    tesi_writer_t *w;
    uint64_t acc;
    uint32_t n;
} tesi_bits_t;

/* The low `count` bits of v (count <= 64). */
void tesi_bits_put(tesi_bits_t *b, uint64_t v, uint32_t count);
/* n bytes as bits, in memory order (a little-endian value's bits, low first). */
void tesi_bits_put_bytes(tesi_bits_t *b, const uint8_t *from, uint32_t n);
/* The pending bits, padded with zeros to a whole byte. */
void tesi_bits_end(tesi_bits_t *b);
/* The stream's size in bits so far. */
static inline uint64_t tesi_bits_size(const tesi_bits_t *b) {
    return (uint64_t)b->w->size * 8u + b->n;
}
/* `count` (<= 64) bits at bit `*at` of the reader's bytes, checked: past the end is `bad`
 * (and 0). */
uint64_t tesi_bits_get(tesi_reader_t *r, uint64_t *at, uint32_t count);
/* n bytes from the bits (what tesi_bits_put_bytes wrote). */
void tesi_bits_get_bytes(tesi_reader_t *r, uint64_t *at, uint8_t *to, uint32_t n);
/* Past `count` bits, checked. */
void tesi_bits_skip(tesi_reader_t *r, uint64_t *at, uint64_t count);

/* A field that travels quantized (tes_quantum_t), with what reading and writing it needs. Kept
 * sorted by (component, field): a replicator's by its own ids, a replica's by the source's. */
struct tesi_quantum_t {
    tes_component_t component;
    uint32_t field;
    uint32_t offset; /* in the component's packed row (its fields one after another) */
    uint32_t size;   /* of an element: 4 (f32) or 8 (f64) */
    uint32_t length; /* elements */
    double step;
    /* The frame of the delta being written or read: codes 1 .. 2^width - 1 are base + code - 1
     * (docs/format.md, "Quantized values"); `top`, the largest q in it, for the writer. */
    int64_t base, top;
    uint32_t width;
};
typedef struct tesi_quantum_t tesi_quantum_t;

/* ---- the replicator (replicator.c), and an encode (delta_collect.c, delta_write.c) -------- */

/* Marks on entity indices while an encode collects them. */
#define TOUCHED  1u
#define WHOLE    2u  /* every value goes: the entity was spawned, or may have entered the scope */
#define PRESENT  4u  /* alive and in scope now: a record, else a gone entry */
#define ORDERED  8u  /* a target whose sources' order goes (a moved event) */
#define OWED     16u /* the peer is owed its record: it goes whole */
#define WITHHELD 32u /* present, but its record did not fit the peer's budget */

/* A component the replicator keeps the changes of, and the query that keeps them. */
typedef struct watch_t {
    tes_component_t component;
    bool term; /* the scope tests it */
    tes_query_t *query;
} watch_t;

/* What a delta's records share, learned in a pass over them before they are written
 * (docs/format.md, "Records"): the gap code's parameter, the distinct patterns (states and whole
 * bit) when there are at most PATTERNS_MAX, and each quantized field's frame (in the quanta). */
typedef struct tesi_records_plan_t {
    uint32_t count;         /* records */
    uint32_t plain;         /* replicated components that are not relations: 2 bits each */
    uint32_t gap_bits;      /* the Rice parameter */
    uint32_t pattern_bytes; /* of one pattern */
    uint32_t patterns;      /* listed (0: each record carries its own) */
    uint32_t index_bits;    /* of a pattern's index in the list */
} tesi_records_plan_t;

struct tes_replicator_t {
    tes_world_t *world;
    tes_component_t *components; /* replicated, ascending */
    uint32_t component_count;
    /* Without a list of components: every one without TES_COMPONENT_LOCAL, those registered
     * later too (adopted by the next encode, which is then a keyframe for every replica). */
    bool every;
    uint32_t seen; /* components looked at so far */
    tes_query_t *scope;
    uint32_t source; /* tes_replicator_desc_t.source, or the core's pick: never 0 */
    /* One consumer query per watched component (replicated or a scope term). */
    struct watch_t *watched;
    uint32_t watched_count;
    /* Ticks of the latest encodes, a ring of `history_slots`: `history_per_peer` encodes for each
     * peer (at least one), as each peer's encode is one. */
    uint64_t *history;
    uint32_t history_per_peer;
    uint32_t history_slots;
    uint32_t history_count;
    uint32_t history_next;
    uint64_t created;  /* the change tick when tracking started */
    uint64_t released; /* no replica needs a baseline before it (tes_replicator_release) */
    uint8_t *bytes;    /* the latest delta */
    uint32_t byte_slots;
    uint32_t *ids;  /* a record's component ids while it is written */
    uint8_t *marks; /* by entity index */
    uint32_t mark_slots;
    uint32_t *touched; /* indices marked TOUCHED, each once */
    uint32_t *spare;   /* as long as touched, in the same block: for sorting */
    uint32_t touched_slots;
    uint32_t touched_count;
    tes_entity_t *ordered; /* targets marked ORDERED */
    uint32_t ordered_slots;
    /* The replicated components' schemas as a keyframe writes them, and the CRC every delta
     * carries (of the ids and these bytes): a replica maps ids by name once, at a keyframe. */
    uint8_t *schema;
    uint32_t schema_size;
    uint32_t ids_size; /* the schema's first bytes: the ids, as every delta writes them */
    uint32_t schema_slots;
    uint32_t schema_crc;
    uint32_t flags; /* TES_REPLICATOR_* */
    /* CHANGED_FIELDS: by component id, the shadows of its entities' values (see observe), and a
     * record's field masks while it is written; the tick the encode writes. */
    tesi_paged_t *shadows;
    uint32_t shadow_slots;
    uint64_t *masks;
    uint64_t now;
    tes_peer_t **peers; /* its peers (peer.c), destroyed with it */
    uint32_t peer_count;
    uint32_t peer_slots;
    tes_peer_t *peer; /* the peer an encode is for (NULL: none) */
    /* A budgeted encode's due records, and one record written aside to learn its size. */
    struct due_t *due;
    uint32_t due_slots;
    uint8_t *aside;
    uint32_t aside_slots;
    /* The fields sent quantized, by (component, field); written in the schema too. */
    tesi_quantum_t *quanta;
    uint32_t quantum_count;
    /* An encode's patterns (tesi_records_plan_t), and room for one more: a record's. */
    uint8_t *patterns;
    uint32_t pattern_slots;
    /* An encode's quantized values by size, one histogram per quantum (tesi_plan_records). */
    struct tesi_histogram_t *histograms;
    uint32_t histogram_slots;
    /* The plan tesi_choose made of every due record, kept for the write when it withheld none
     * (the same records: planning them again gave the same plan). */
    tesi_records_plan_t plan;
    bool planned;
};

/* How many of a quantum's codes have each bit length of zigzag(q), and their least and largest
 * q: what a plan chooses a frame from (the frame that costs the fewest bits, escaping what lies
 * far out). */
#define HISTOGRAM_BINS (WIDTH_MAX + 1u)
typedef struct tesi_histogram_t {
    uint32_t count[HISTOGRAM_BINS];
    int64_t low[HISTOGRAM_BINS], high[HISTOGRAM_BINS];
    uint32_t values; /* all elements, those that escape whatever the frame included */
} tesi_histogram_t;

/* A record due in a budgeted encode: which goes is decided by score. */
typedef struct due_t {
    float score;
    uint32_t index;
    uint32_t size;
    uint32_t order; /* its place in the touched list: ties go in index order */
} due_t;

/* Room to list every entity index once (touched and spare share one block). */
tes_result_t tesi_touched_reserve(tes_replicator_t *rep, uint32_t n);
/* What changed since `baseline` (for the encode's peer too): the touched indices, sorted, marked
 * PRESENT where a live entity in scope (and in the peer's view) is. */
tes_result_t tesi_collect(tes_replicator_t *rep, uint64_t baseline);
/* A peer's keyframe: every live entity listed so, and what the peer is owed. */
tes_result_t tesi_collect_all(tes_replicator_t *rep, uint64_t baseline);
/* Whether the live entity is in the replicator's scope. */
tes_result_t tesi_in_scope(tes_replicator_t *rep, tes_entity_t e, bool *out);
/* Under a budget: marks WITHHELD the due records that do not fit, their sights reserved. */
tes_result_t tesi_choose(tes_replicator_t *rep, uint64_t baseline, bool keyframe, uint32_t budget);
/* After a peer's delta was written: withheld owed, owed sent, gone forgiven. */
void tesi_settle_peer(tes_replicator_t *rep, uint64_t now);
/* The plan of the records of the touched indices marked PRESENT and not WITHHELD. */
tes_result_t tesi_plan_records(tes_replicator_t *rep, uint64_t baseline, bool keyframe,
                               tesi_records_plan_t *plan);
/* One entity's record (docs/format.md, "Records"), as bits by the plan. */
void tesi_put_record(tesi_bits_t *b, tes_replicator_t *rep, const tesi_records_plan_t *plan,
                     tes_entity_t e, uint64_t baseline, bool whole, uint32_t *previous);
/* A whole delta, its records those of the touched indices. */
tes_result_t tesi_write_delta(tesi_writer_t *w, tes_replicator_t *rep, uint64_t baseline,
                              uint64_t now, bool keyframe);
/* The bytes of a component's shadow of one entity (CHANGED_FIELDS). */
uint32_t tesi_shadow_size(const tesi_component_t *c);

/* ---- peers (peer.c) ---------------------------------------------------------------------- */

/* What a peer knows of one entity index: a slot of its table of sights (by index). */
typedef struct tesi_sight_t {
    uint32_t index;      /* the entity index (0: an empty slot) */
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
    uint32_t flags; /* TES_PEER_* */
    /* Its sights: an open-addressing table by entity index (linear probing, a power of two, at
     * most half full), so a peer costs what it was shown and owes, not the world's indices (a
     * paged array took a page per 1,024 indices: 3 MB a peer that sees 1.5% of 100k). */
    tesi_sight_t *sights;
    uint32_t sight_slots;
    uint32_t sight_count;
    uint64_t floor; /* the replicator's floor at the latest prune */
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

/* Where an index's sight is, or would go, in a table of `slots` (a power of two). */
static inline uint32_t tesi_sight_hash(uint32_t index, uint32_t slots) {
    return (index * 2654435761u) & (slots - 1);
}
/* The peer's sight of an index; NULL when it knows nothing of it. A pointer into the table: an
 * insertion (tesi_peer_reserve's room used) or a removal may move it. */
static inline tesi_sight_t *tesi_sight_find(const tes_peer_t *peer, uint32_t index) {
    if (!peer->sight_count) return NULL;
    for (uint32_t h = tesi_sight_hash(index, peer->sight_slots);;
         h = (h + 1) & (peer->sight_slots - 1)) {
        tesi_sight_t *s = &peer->sights[h];
        if (s->index == index) return s;
        if (!s->index) return NULL;
    }
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
/* Room for `more` owed indices, and sights for as many: what settling needs, reserved before an
 * encode writes anything. */
tes_result_t tesi_peer_reserve(tes_peer_t *peer, uint32_t more);
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
