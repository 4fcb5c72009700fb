/* The receiving side of replication, shared by its two files: replica_head.c (a delta's head and
 * schemas, checked, and the mapping of its components to the replica's) and replica.c (the
 * entities and pair events, checked, then applied). */
#ifndef TESSERA_REPLICA_H
#define TESSERA_REPLICA_H

#include "delta.h"

/* A replicated component as the delta names it. */
typedef struct replicated_t {
    tes_component_t source; /* the source's id, used in the bytes */
    tes_component_t local;  /* the replica's id (UINT32_MAX: registered when applying) */
    uint32_t flags, field_count, row_bytes;
    uint32_t schema_at;  /* keyframe: where its schema is in the bytes */
    const uint8_t *name; /* keyframe: its name in the bytes */
    uint32_t name_length;
    tesi_quantum_t
        *quanta; /* its fields that travel quantized, by field (with the delta's frames) */
    uint32_t quantum_count;
} replicated_t;

/* What the checking pass learns, for the applying pass. Allocated with room for `count`
 * replicated components and a record's worth of scratch. */
typedef struct delta_t {
    uint64_t from, to;
    bool keyframe;
    bool empty; /* flagged EMPTY: any gone entry, record or pair event is refused */
    bool late;  /* not a keyframe, and not newer than the replica: applying changes nothing */
    uint32_t schema_crc;
    uint32_t source; /* the replicator's (tes_replicator_desc_t.source) */
    uint32_t count;
    replicated_t *comps;
    uint16_t position[TES_MAX_COMPONENTS]; /* by source id: its place in comps + 1 (0: none) */
    uint32_t body;                         /* offset of the gone section */
    /* The record being read: its components and, for placing a new entity, their ids here. */
    struct listed_t *listed;
    tes_component_t *local;
    /* While checking a delta with an acyclic relation: the replica as the delta leaves it. */
    struct after_t *after;
    /* The gone indices, read from their gaps by the check (which the apply pass reads again). */
    uint32_t *gone;
    uint32_t gone_count;
    uint32_t plain; /* replicated components that are not relations: two bits each in a record */
    /* The records' plan (docs/format.md, "Records"), and where the bits are while reading them. */
    uint32_t gap_bits;
    uint32_t patterns; /* listed (0: each record carries its own) */
    uint32_t pattern_bytes;
    uint32_t index_bits;
    const uint8_t *pattern_list; /* in the bytes */
    uint8_t *pattern;            /* scratch: a record's own */
    uint64_t bit;
    /* A keyframe's quantized fields (the replica keeps them once it applied it). */
    tesi_quantum_t *quanta;
    uint32_t quantum_count;
} delta_t;

/* One component of the record being read. */
typedef struct listed_t {
    uint32_t at;     /* its place in comps */
    uint64_t values; /* the bit where they start in the bytes; 0 when none came */
    uint64_t mask;   /* the fields whose values came */
    bool init;       /* the entity just got it: the values are its initial ones */
} listed_t;

/* Reads and checks a delta's head (and a keyframe's schemas and quanta): the delta_t the
 * passes over its body use, NULL with r->result set when the bytes are refused. */
delta_t *tesi_read_head(tesi_reader_t *r, tes_world_t *world);
void tesi_delta_free(tes_world_t *world, delta_t *d);
/* A keyframe's components mapped to the replica's (registering those it lacks). */
tes_result_t tesi_map_components(tes_world_t *world, delta_t *d, const uint8_t *bytes,
                                 uint32_t size);

#endif
