/*
 * tessera — an archetype + chunk Entity Component System, C core.
 *
 * This header is the manual of the core. Everything public is prefixed `tes_`.
 *
 * MEMORY AND LIFETIMES
 *   - A world owns all its memory. tes_world_destroy() frees everything the world ever
 *     allocated (entities, archetypes, chunks, names). Several worlds may live side by side.
 *   - Component data lives in chunks: fixed-size blocks holding up to `capacity` entities of
 *     one archetype, one 16-byte aligned column per field. A pointer into a chunk (from
 *     tes_field_ptr() or tes_chunk_info()) stays valid until the next structural change of the
 *     world (spawn, despawn, add, remove, batch forms): those may move entities between slots.
 *   - All allocations go through the world's allocator (tes_world_desc_t.allocator, default
 *     malloc/free). Out of memory is reported as TES_ERR_OUT_OF_MEMORY and leaves the world as
 *     it was before the call.
 *
 * ERRORS
 *   Every function that can fail returns a tes_result_t. TES_OK is 0; every other value comes
 *   from the TES_RESULTS X-macro below and has a stable name (tes_result_name) and message
 *   (tes_result_message). User mistakes never abort the process. A failed call leaves every
 *   entity, component and field value exactly as it was, and never corrupts anything. It may
 *   keep internal capacity it grew before failing, and a call that ran out of memory part way
 *   may keep an archetype it created for the call (empty, usable like any other). Only
 *   tes_world_stats and tes_archetype_count can tell.
 *
 * ENTITY HANDLES
 *   A tes_entity_t is a 30-bit number: the low TES_INDEX_BITS bits are a slot index in the
 *   world's entity table, the next TES_GENERATION_BITS bits count how often that slot was
 *   recycled. Every handle is below 2^30, so JavaScript engines keep it as a small integer.
 *   Handle 0 is never a live entity. A handle whose entity was despawned is "stale": every call
 *   that takes it fails with TES_ERR_STALE_ENTITY and touches nothing. Slots are recycled first
 *   in, first out, and only while more than `min_free_indices` slots wait in the free queue. A
 *   world holds at most TES_MAX_ENTITIES - min_free_indices live (and pending) entities
 *   (2,093,055 with the default), so that the queue always holds more than min_free_indices
 *   slots when no fresh one is left: at every population, a slot is reused only after more than
 *   min_free_indices others were freed after it, and a stale handle can alias a newer entity
 *   only after its slot went through 2^9 = 512 recycles, that is after at least
 *   512 * (min_free_indices + 1) despawns (2.1 million with the default).
 */
#ifndef TESSERA_H
#define TESSERA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__EMSCRIPTEN__)
#define TES_API __attribute__((used, visibility("default")))
#else
#define TES_API __attribute__((visibility("default")))
#endif

/* ---------------------------------------------------------------------------------------- */
/* Results                                                                                   */
/* ---------------------------------------------------------------------------------------- */

/* X(name, message). The order is the ABI: append only. */
#define TES_RESULTS(X)                                                                             \
    X(TES_OK, "ok")                                                                                \
    X(TES_ERR_INVALID_ARGUMENT, "invalid argument")                                                \
    X(TES_ERR_OUT_OF_MEMORY, "out of memory")                                                      \
    X(TES_ERR_STALE_ENTITY, "entity is not alive (despawned, or never spawned)")                   \
    X(TES_ERR_TOO_MANY_ENTITIES, "entity table is full")                                           \
    X(TES_ERR_DUPLICATE_ENTITY, "the same entity appears twice in one batch")                      \
    X(TES_ERR_UNKNOWN_COMPONENT, "no component with this id in this world")                        \
    X(TES_ERR_TOO_MANY_COMPONENTS, "component table is full")                                      \
    X(TES_ERR_DUPLICATE_NAME, "a component with this name already exists")                         \
    X(TES_ERR_BAD_SCHEMA, "invalid component schema")                                              \
    X(TES_ERR_UNKNOWN_FIELD, "the component has no field with this index or name")                 \
    X(TES_ERR_ELEMENT_OUT_OF_RANGE, "array element index out of range")                            \
    X(TES_ERR_MISSING_COMPONENT, "the entity does not have this component")                        \
    X(TES_ERR_TAG_HAS_NO_DATA, "the component is a tag and has no field data")                     \
    X(TES_ERR_BAD_SIZE, "value size does not match the field's size")                              \
    X(TES_ERR_BAD_VALUE, "value cannot be stored in the field's type without loss")                \
    X(TES_ERR_UNKNOWN_ARCHETYPE, "no archetype with this id in this world")                        \
    X(TES_ERR_ROW_TOO_LARGE,                                                                       \
      "one entity of this component set needs about 8 MiB or more (8 rows must fit 64 MiB)")       \
    X(TES_ERR_CORRUPT, "internal invariant violated (tes_world_validate)")                         \
    X(TES_ERR_PENDING_ENTITY, "entity is spawned by a deferred command, not placed yet")           \
    X(TES_ERR_UNKNOWN_STAGE, "no stage with this id in this world")                                \
    X(TES_ERR_QUERY_IN_USE, "this consumer query already has a live run")                          \
    X(TES_ERR_BAD_FIELD_TYPE, "the operation does not support this field's type")                  \
    X(TES_ERR_SPARSE_COMPONENT, "the component is not stored in chunks (sparse or relation)")      \
    X(TES_ERR_NOT_A_RELATION, "the component is not a relation")                                   \
    X(TES_ERR_NEEDS_TARGET, "a relation is used per pair: name its target")                        \
    X(TES_ERR_CYCLE, "the pair would close a cycle in an acyclic relation")                        \
    X(TES_ERR_BAD_SNAPSHOT, "the bytes are not a valid snapshot (truncated or corrupted)")         \
    X(TES_ERR_SNAPSHOT_VERSION, "the snapshot was written by another version of the format")       \
    X(TES_ERR_BAD_DELTA, "the bytes are not a valid delta (truncated, corrupted or inconsistent)") \
    X(TES_ERR_DELTA_SCHEMA, "the delta's components differ from this world's")                     \
    X(TES_ERR_DELTA_BASELINE, "the replica lacks the delta's baseline tick: it needs a keyframe")  \
    X(TES_ERR_NO_CHECKPOINT,                                                                       \
      "no checkpoint with this number is kept (not taken, or out of the ring)")

typedef enum tes_result_t {
#define TES_RESULT_ENUM(name, message) name,
    TES_RESULTS(TES_RESULT_ENUM)
#undef TES_RESULT_ENUM
        TES_RESULT_COUNT
} tes_result_t;

/* Stable identifier of a result, e.g. "TES_ERR_STALE_ENTITY". Never NULL. */
TES_API const char *tes_result_name(tes_result_t result);
/* Human-readable message of a result. Never NULL. */
TES_API const char *tes_result_message(tes_result_t result);

/* ---------------------------------------------------------------------------------------- */
/* Handles and limits                                                                        */
/* ---------------------------------------------------------------------------------------- */

typedef uint32_t tes_entity_t;    /* 0 = no entity */
typedef uint32_t tes_component_t; /* dense, 0 .. component_count-1 */
typedef uint32_t tes_archetype_t; /* dense, 0 = the empty archetype */

#define TES_INDEX_BITS       21u
#define TES_GENERATION_BITS  9u
#define TES_MAX_ENTITIES     ((1u << TES_INDEX_BITS) - 1u) /* entity indices 1..2,097,151 */
#define TES_MAX_COMPONENTS   4096u                         /* component types per world */
#define TES_MAX_FIELDS       64u                           /* fields per component */
#define TES_MAX_ARRAY_LENGTH 256u                          /* elements per array field */
#define TES_MAX_NAME_LENGTH  127u                          /* bytes, component and field names */
#define TES_MAX_CHECKPOINTS  1024u                         /* checkpoints a world keeps */
#define TES_EMPTY_ARCHETYPE  0u

/* Index and generation of a handle (no validity check). */
static inline uint32_t tes_entity_index(tes_entity_t e) {
    return e & ((1u << TES_INDEX_BITS) - 1u);
}
static inline uint32_t tes_entity_generation(tes_entity_t e) {
    return e >> TES_INDEX_BITS;
}

/* ---------------------------------------------------------------------------------------- */
/* Worlds                                                                                    */
/* ---------------------------------------------------------------------------------------- */

typedef struct tes_world_t tes_world_t;

/* Custom allocator. Both functions receive `user`. alloc must return 16-byte aligned memory
 * or NULL; free receives the size that was asked for. */
typedef struct tes_allocator_t {
    void *(*alloc)(size_t size, void *user);
    void (*free)(void *ptr, size_t size, void *user);
    void *user;
} tes_allocator_t;

/* Zero means "default" for every field. */
typedef struct tes_world_desc_t {
    /* Bytes of one chunk block (entity column + field columns). Default 65536; rounded up to a
     * multiple of 64, at least 1024, at most 64 MiB (TES_ERR_INVALID_ARGUMENT). An archetype
     * whose rows are so wide that fewer than 8 fit gets blocks of a larger power-of-two multiple
     * of this size, or 64 MiB, whichever is smaller; those are freed when empty instead of
     * pooled. */
    uint32_t chunk_bytes;
    /* Freed entity slots are reused only while more than this many wait in the FIFO free
     * queue; the world holds at most TES_MAX_ENTITIES - min_free_indices entities. Default
     * 4096; at most 2^20 - 1 (TES_ERR_INVALID_ARGUMENT). Larger delays aliasing of stale
     * handles further. */
    uint32_t min_free_indices;
    /* Allocator for everything the world owns. Default: malloc/free. */
    tes_allocator_t allocator;
    /* How many checkpoints tes_checkpoint keeps (the ring tes_rewind can go back through).
     * Default 16; at most TES_MAX_CHECKPOINTS (TES_ERR_INVALID_ARGUMENT). */
    uint32_t checkpoints;
} tes_world_desc_t;

/* Creates a world. `desc` may be NULL for defaults. */
TES_API tes_result_t tes_world_create(const tes_world_desc_t *desc, tes_world_t **out_world);
/* Frees the world and everything in it. NULL is ignored. */
TES_API void tes_world_destroy(tes_world_t *world);

typedef struct tes_world_stats_t {
    uint32_t entity_count;       /* live entities */
    uint32_t entity_capacity;    /* indices handed out + 1 (live, free, skipped, reserved 0) */
    uint32_t free_queue_length;  /* despawned slots waiting for reuse */
    uint32_t component_count;    /* registered component types */
    uint32_t archetype_count;    /* existing ones, the empty archetype included */
    uint32_t chunk_count;        /* chunks holding entities */
    uint32_t pooled_chunk_count; /* empty chunk blocks kept for reuse */
    uint32_t chunk_bytes;        /* bytes of one standard chunk block */
    uint32_t edge_count;         /* cached archetype graph transitions */
    uint32_t graph_generation;   /* bumped each time an archetype is created */
    uint64_t bytes_allocated;    /* everything the world holds from its allocator right now */
    uint64_t change_tick;        /* the next tick a write is stamped with (starts at 1) */
    uint64_t frame;              /* tes_tick calls so far */
    uint32_t query_count;        /* live queries (systems' included) */
    uint32_t commands_skipped;   /* deferred commands dropped at a flush: entity gone stale */
    uint32_t checkpoint_count;   /* checkpoints kept (tes_checkpoint) */
    uint64_t checkpoint_bytes;   /* what they hold: the states changed between them */
    uint64_t shadow_bytes;       /* the copy of the state at the newest checkpoint */
} tes_world_stats_t;

TES_API tes_result_t tes_world_stats(const tes_world_t *world, tes_world_stats_t *out);

/* Checks every storage invariant (locations, chunk packing, free queue, graph edges) in
 * O(entities + archetypes). Returns TES_OK or TES_ERR_CORRUPT. Meant for tests and debugging. */
TES_API tes_result_t tes_world_validate(const tes_world_t *world);

/* ---------------------------------------------------------------------------------------- */
/* Components                                                                                */
/* ---------------------------------------------------------------------------------------- */

typedef enum tes_type_t {
    TES_F32 = 1,
    TES_F64,
    TES_I8,
    TES_U8,
    TES_I16,
    TES_U16,
    TES_I32,
    TES_U32,
    TES_TYPE_LAST = TES_U32
} tes_type_t;

/* Size in bytes of one scalar of `type`, 0 for an invalid type. */
TES_API uint32_t tes_type_size(tes_type_t type);

typedef struct tes_field_desc_t {
    const char *name; /* unique within the component, 1..TES_MAX_NAME_LENGTH bytes */
    tes_type_t type;  /* scalar type */
    uint32_t length;  /* 0 or 1: a scalar; n > 1: a fixed array of n scalars per entity */
} tes_field_desc_t;

/* Storage and relation flags of a component (tes_component_desc_t.flags).
 *
 * SPARSE: the component lives in a sparse set (an index by entity, dense member and data
 * arrays) instead of the archetype's chunks. Adding or removing it moves nothing and creates no
 * archetype; iterating a query that needs it costs a lookup per candidate row. For markers that
 * come and go often (Selected, Damaged). It is used with the same calls and query terms as any
 * component, except those about chunks and archetypes (tes_archetype_find / add / remove,
 * tes_chunk_column, tes_iter_column, kernels): TES_ERR_SPARSE_COMPONENT.
 *
 * RELATION: the component is a relation: entity-to-entity pairs (source, relation, target) in a
 * side table (relation.c), never in the archetype, so a thousand targets make no new
 * archetype. Its fields are the data of each pair. As a component it is sparse: an entity
 * "has" the relation while it is the source of at least one pair, so the relation's id in the
 * all / none / any terms of a query means "has it to any target", and Added / Changed / Removed
 * on it report sources whose first pair came (Added only), whose pairs changed while they kept
 * the relation (another pair added or removed, an exclusive target replaced, pair data
 * written), and whose last pair went. Pairs themselves are added with tes_pair_add,
 * not tes_add (TES_ERR_NEEDS_TARGET); tes_remove removes every pair of the source.
 * EXCLUSIVE: a source has at most one target; adding another replaces it.
 * ACYCLIC (with EXCLUSIVE): a pair that would make a source its own ancestor is TES_ERR_CYCLE.
 * CASCADE: despawning a target despawns its sources (recursively; cycles are safe). Without it
 * the pairs to a despawned target are removed. Despawning a source always removes its pairs. */
#define TES_COMPONENT_SPARSE          1u
#define TES_COMPONENT_RELATION        2u
#define TES_RELATION_EXCLUSIVE        4u
#define TES_RELATION_ACYCLIC          8u
#define TES_RELATION_CASCADE          16u
/* LOCAL: not replicated. A replicator leaves it out of its deltas (see Deltas). */
#define TES_COMPONENT_LOCAL           32u
/* CHANGE_BY_VALUE: a write the core makes stamps the component changed only when it changes
 * the stored bytes: tes_set, tes_set_number, tes_set_items, the values of an add of a component
 * the entity has, and kernels (tes_query_apply marks only the rows whose bytes it changed).
 * Bytes, as a replica compares them (delta apply): writing 1 over 1 is no change, -0.0 over 0.0
 * is one, a NaN over the same NaN is none. Marks stay marks (tes_mark_changed,
 * tes_chunk_mark_changed: the core did not see the write). Not for tags or relations (nothing
 * to compare; pair writes travel as events): TES_ERR_BAD_SCHEMA. What it costs: a compare of
 * the written bytes, and a kernel over a tracked component runs element by element. */
#define TES_COMPONENT_CHANGE_BY_VALUE 64u

/* wasm32 layout: name 0, fields 4, field_count 8, flags 12; 16 bytes. */
typedef struct tes_component_desc_t {
    const char *name;               /* unique within the world, 1..TES_MAX_NAME_LENGTH bytes */
    const tes_field_desc_t *fields; /* may be NULL when field_count is 0 */
    uint32_t field_count;           /* 0 makes a tag: no fields, no storage */
    uint32_t flags;                 /* TES_COMPONENT_* and TES_RELATION_* (0: chunk storage) */
} tes_component_desc_t;

/* Registers a component type (or a tag when field_count == 0). Ids are dense, from 0. Flags
 * other than the ones above, or RELATION flags without TES_COMPONENT_RELATION, or ACYCLIC
 * without EXCLUSIVE, are TES_ERR_BAD_SCHEMA. */
TES_API tes_result_t tes_component_register(tes_world_t *world, const tes_component_desc_t *desc,
                                            tes_component_t *out_component);

/* Takes back the latest registration while nothing uses the component yet (no archetype, query,
 * member, pair or replica mapping names it): a host that registers on first use undoes the
 * registration of a call that then failed, so that a failed call leaves the world as it was.
 * TES_ERR_INVALID_ARGUMENT when it is not the latest or is in use. */
TES_API tes_result_t tes_component_unregister(tes_world_t *world, tes_component_t component);
/* Finds a component by name. TES_ERR_UNKNOWN_COMPONENT when there is none. */
TES_API tes_result_t tes_component_lookup(const tes_world_t *world, const char *name,
                                          tes_component_t *out_component);

typedef struct tes_component_info_t {
    const char *name;     /* owned by the world */
    uint32_t field_count; /* 0 for a tag */
    uint32_t row_bytes;   /* bytes per entity (per pair for a relation) over all fields */
    uint32_t flags;       /* as registered */
} tes_component_info_t;

TES_API tes_result_t tes_component_info(const tes_world_t *world, tes_component_t component,
                                        tes_component_info_t *out);

typedef struct tes_field_info_t {
    const char *name; /* owned by the world */
    tes_type_t type;
    uint32_t length; /* elements per entity (1 for a scalar) */
    uint32_t bytes;  /* bytes per entity: tes_type_size(type) * length */
} tes_field_info_t;

TES_API tes_result_t tes_field_info(const tes_world_t *world, tes_component_t component,
                                    uint32_t field, tes_field_info_t *out);
/* Finds a field by name. TES_ERR_UNKNOWN_FIELD when there is none. */
TES_API tes_result_t tes_field_lookup(const tes_world_t *world, tes_component_t component,
                                      const char *name, uint32_t *out_field);

/* ---------------------------------------------------------------------------------------- */
/* Entities                                                                                  */
/* ---------------------------------------------------------------------------------------- */

/* Spawns one entity straight into the archetype of `components` (any order, no duplicates;
 * count 0 gives an empty entity). Field data starts zeroed. Sparse components of the list are
 * added to the entity's sparse sets; a relation in it is TES_ERR_NEEDS_TARGET. */
TES_API tes_result_t tes_spawn(tes_world_t *world, const tes_component_t *components,
                               uint32_t count, tes_entity_t *out_entity);
/* Spawns `n` entities of one component set; writes their handles to out_entities[0..n-1]
 * (may be NULL). They fill chunks contiguously. All or nothing. */
TES_API tes_result_t tes_spawn_batch(tes_world_t *world, const tes_component_t *components,
                                     uint32_t count, uint32_t n, tes_entity_t *out_entities);
TES_API tes_result_t tes_despawn(tes_world_t *world, tes_entity_t entity);
/* Despawns every entity of the list. Fails, despawning none, if any is stale or listed twice. */
TES_API tes_result_t tes_despawn_batch(tes_world_t *world, const tes_entity_t *entities,
                                       uint32_t n);
/* True when the handle names a live entity. Never fails. */
TES_API bool tes_is_alive(const tes_world_t *world, tes_entity_t entity);

/* Adds a component (zeroed data) or tag. Adding one the entity already has does nothing. */
TES_API tes_result_t tes_add(tes_world_t *world, tes_entity_t entity, tes_component_t component);
/* Removes a component. Removing one the entity does not have does nothing. */
TES_API tes_result_t tes_remove(tes_world_t *world, tes_entity_t entity, tes_component_t component);
TES_API tes_result_t tes_has(const tes_world_t *world, tes_entity_t entity,
                             tes_component_t component, bool *out_has);

/* Copies one field of one entity (all its array elements: `size` must equal the field's
 * bytes per entity). */
TES_API tes_result_t tes_get(const tes_world_t *world, tes_entity_t entity,
                             tes_component_t component, uint32_t field, void *out, size_t size);
TES_API tes_result_t tes_set(tes_world_t *world, tes_entity_t entity, tes_component_t component,
                             uint32_t field, const void *value, size_t size);
/* One element of a field as a double (exact for every type). */
TES_API tes_result_t tes_get_number(const tes_world_t *world, tes_entity_t entity,
                                    tes_component_t component, uint32_t field, uint32_t element,
                                    double *out);
/* Stores a double into one element. Integer fields take only integral values in range, and
 * every field rejects NaN into an integer: TES_ERR_BAD_VALUE, nothing written. f32 rounds to
 * nearest; a finite value whose magnitude exceeds FLT_MAX is rejected the same way. */
TES_API tes_result_t tes_set_number(tes_world_t *world, tes_entity_t entity,
                                    tes_component_t component, uint32_t field, uint32_t element,
                                    double value);
/* tes_set and tes_set_number for initial values: the write is part of the spawn or add that
 * gave the entity the component, not a change (Changed filters do not see it; Added ones see
 * the row with its values). While deferring, a write to an entity that lacks the component
 * now (a pending entity, or one whose add is recorded too) is recorded after checking the
 * component, field and value, and applied at the flush after the commands before it. A pending
 * entity is checked against the components it will have (TES_ERR_MISSING_COMPONENT when none
 * of its recorded commands gives it this one); a recorded write is skipped (commands_skipped)
 * when the entity is gone, or lacks the component, by the time it applies. */
TES_API tes_result_t tes_init(tes_world_t *world, tes_entity_t entity, tes_component_t component,
                              uint32_t field, const void *value, size_t size);
TES_API tes_result_t tes_init_number(tes_world_t *world, tes_entity_t entity,
                                     tes_component_t component, uint32_t field, uint32_t element,
                                     double value);
/* Address of an entity's field (its `length` elements are contiguous). Valid until the next
 * structural change. */
TES_API tes_result_t tes_field_ptr(tes_world_t *world, tes_entity_t entity,
                                   tes_component_t component, uint32_t field, void **out_ptr);

typedef struct tes_location_t {
    tes_archetype_t archetype;
    uint32_t chunk; /* index in the archetype's chunk list */
    uint32_t row;   /* slot within the chunk */
} tes_location_t;

TES_API tes_result_t tes_location(const tes_world_t *world, tes_entity_t entity,
                                  tes_location_t *out);

/* ---------------------------------------------------------------------------------------- */
/* Item lists: several components, pairs and values in one call, all or nothing              */
/* ---------------------------------------------------------------------------------------- */
/*
 * An item is a component (or tag), or a pair: a relation with its target. A value gives one
 * field of one item all its elements (the field's length of them), as doubles converted by
 * tes_set_number's rules: the same numbers for every entity of the call, or (a value with a
 * stride) numbers of their own for each entity, e.g. every spawned bullet its own position in
 * one call. The calls below take a list of items with values and check every
 * item, value and entity, and reserve every byte they may need, before they change anything:
 * a failed call changes nothing (as everywhere, it may keep capacity it grew, and an archetype
 * it created on the way), and *out_fault (may be NULL) says what it was about.
 *
 * Item checks, in order, for each item: an unregistered id is TES_ERR_UNKNOWN_COMPONENT; a
 * relation without a target where a pair is needed TES_ERR_NEEDS_TARGET; a target on a
 * component that is not a relation TES_ERR_NOT_A_RELATION; a component or pair listed twice,
 * or (when adding) two pairs of one EXCLUSIVE relation, TES_ERR_INVALID_ARGUMENT; a target that
 * is not alive TES_ERR_STALE_ENTITY (pending while deferring is fine). Then each value: its
 * item index out of range TES_ERR_INVALID_ARGUMENT, an item without data TES_ERR_TAG_HAS_NO_DATA,
 * an unknown field TES_ERR_UNKNOWN_FIELD, numbers out of range (for a value with a stride: the
 * numbers of any of the call's entities) TES_ERR_INVALID_ARGUMENT, a number the field's type
 * cannot hold TES_ERR_BAD_VALUE (every entity's numbers are checked before anything changes;
 * the fault's `number` says which: entity (number - value.number) / stride of the call). Then
 * each entity: not alive
 * TES_ERR_STALE_ENTITY (or TES_ERR_PENDING_ENTITY where a pending one cannot be used), listed
 * twice TES_ERR_DUPLICATE_ENTITY, a pair that would close a cycle TES_ERR_CYCLE.
 *
 * While an iteration is live (see tes_query_iter) these calls are recorded, with their items
 * and values, after the checks above, and applied in order when the last iteration ends: what
 * they do is decided then (an add of a component the entity has by then writes its values as
 * a change, else as initial values). A recorded call whose entity is gone by then is skipped,
 * and so is a recorded tes_add_items whose pair cannot apply by then (its target gone, or a
 * cycle): whole, as the call made then would be refused. A recorded tes_spawn_items spawns in
 * any case: only its pairs whose target is gone by then are skipped, each counted.
 * What moves no row happens at once when every entity (and pair target) is placed, as
 * tes_pair_add and tes_set do: a call of pairs only, and tes_set_items to items the entities
 * have now (to an item a recorded add brings, it is recorded after that add).
 *
 * wasm32 layouts: tes_item_t component 0, target 4 (8 bytes); tes_value_t item 0, field 4,
 * number 8, stride 12 (16 bytes); tes_items_t items 0, item_count 4, values 8, value_count 12,
 * numbers 16, number_count 20 (24 bytes); tes_fault_t item 0, value 4, number 8, entity 12
 * (16 bytes); bindings/abi.ts has them from the build (tools/abi.c). */
typedef struct tes_item_t {
    tes_component_t component; /* a component or tag; or a relation, with its target */
    tes_entity_t target;       /* a pair's target; 0 for a component */
} tes_item_t;

typedef struct tes_value_t {
    uint32_t item;   /* index in tes_items_t.items */
    uint32_t field;  /* field index of the item's component (a pair: of the relation's data) */
    uint32_t number; /* index in tes_items_t.numbers of its first element */
    /* 0: every entity of the call takes the numbers at `number`. Otherwise numbers per entity:
     * entity i of the call (the i-th spawned, or entities[i]) takes the field's elements at
     * number + i * stride (stride = the field's length: one block per entity, entity-major as
     * in a column). The calls over a query refuse it (TES_ERR_INVALID_ARGUMENT): they have no
     * order a caller could line numbers up with. */
    uint32_t stride;
} tes_value_t;

typedef struct tes_items_t {
    const tes_item_t *items;
    uint32_t item_count;
    const tes_value_t *values; /* may be NULL when value_count is 0 */
    uint32_t value_count;
    const double *numbers;
    uint32_t number_count;
} tes_items_t;

#define TES_NO_FAULT 0xFFFFFFFFu

/* What a failed item call was about: indices into its lists (TES_NO_FAULT: none), and the
 * entity at fault (one of the call's entities, or a pair's target; 0: none). */
typedef struct tes_fault_t {
    uint32_t item;
    uint32_t value;
    uint32_t number;
    tes_entity_t entity;
} tes_fault_t;

/* Spawns `n` entities with the items: their components (zeroed), their pairs (a relation
 * needs its target) and the values as initial values (part of the spawn, not a change).
 * out_entities (may be NULL) receives the handles. */
TES_API tes_result_t tes_spawn_items(tes_world_t *world, const tes_items_t *items, uint32_t n,
                                     tes_entity_t *out_entities, tes_fault_t *out_fault);
/* Adds the items to every listed entity. An item the entity has already stays as it is (its
 * data kept) and its values are written as a change; a new one gets its values as initial
 * values. Adding a pair of an EXCLUSIVE relation replaces the entity's other pair of it. */
TES_API tes_result_t tes_add_items(tes_world_t *world, const tes_entity_t *entities, uint32_t n,
                                   const tes_items_t *items, tes_fault_t *out_fault);
/* Writes the values, as a change, to every listed entity, which must have every item that has
 * a value (TES_ERR_MISSING_COMPONENT); a pending entity (while deferring) must be going to have
 * it once its recorded commands apply, as for tes_set. Items without values are ignored. */
TES_API tes_result_t tes_set_items(tes_world_t *world, const tes_entity_t *entities, uint32_t n,
                                   const tes_items_t *items, tes_fault_t *out_fault);
/* Removes the items (values are not allowed) from every listed entity: components and tags,
 * pairs, and every pair of a relation given without a target. Items an entity lacks are
 * skipped. */
TES_API tes_result_t tes_remove_items(tes_world_t *world, const tes_entity_t *entities, uint32_t n,
                                      const tes_items_t *items, tes_fault_t *out_fault);

/* ---------------------------------------------------------------------------------------- */
/* Archetypes and chunks (introspection and bulk operations)                                 */
/* ---------------------------------------------------------------------------------------- */

typedef struct tes_archetype_info_t {
    const tes_component_t *components; /* sorted ascending, owned by the world */
    uint32_t component_count;
    uint32_t entity_count;
    uint32_t chunk_count; /* every chunk but the last is full */
    uint32_t capacity;    /* entities per chunk */
} tes_archetype_info_t;

/* The bound of archetype ids: ids are 0 .. count-1 and not reused while the world lives, but for
 * the archetypes a rewind frees (made since its checkpoint) and those a call that failed made
 * (freed again): their ids are handed out again. An id whose archetype was reclaimed
 * (tes_archetypes_reclaim) answers TES_ERR_UNKNOWN_ARCHETYPE; tes_world_stats counts the
 * archetypes that exist. */
TES_API uint32_t tes_archetype_count(const tes_world_t *world);
/* Frees every archetype that holds no entity (the empty set's aside), with its cached edges and
 * move plans; queries forget it. A world that makes many component sets for a while (random
 * loadouts, status effects, a level's own types) otherwise keeps one archetype per set it ever
 * made, and a query walks every one it matched. Call it where a pause costs nothing (a level
 * change, a loading screen): it takes O(archetypes + cached edges + queries' matches), and a
 * set spawned again afterwards makes its archetype (a new id) again; when it frees any, the
 * checkpoints go (they name archetypes by id). Refused while a run is live
 * (TES_ERR_INVALID_ARGUMENT: pending entities and runs name archetypes); out of memory frees
 * nothing. `out_reclaimed` (may be NULL): how many were freed. */
TES_API tes_result_t tes_archetypes_reclaim(tes_world_t *world, uint32_t *out_reclaimed);
TES_API tes_result_t tes_archetype_info(const tes_world_t *world, tes_archetype_t archetype,
                                        tes_archetype_info_t *out);
/* Finds (creating if needed) the archetype of a component set, any order, no duplicates. */
TES_API tes_result_t tes_archetype_find(tes_world_t *world, const tes_component_t *components,
                                        uint32_t count, tes_archetype_t *out_archetype);

typedef struct tes_chunk_info_t {
    const tes_entity_t *entities; /* entities[0..count-1], in slot order */
    uint32_t count;
    uint32_t capacity;
} tes_chunk_info_t;

TES_API tes_result_t tes_chunk_info(const tes_world_t *world, tes_archetype_t archetype,
                                    uint32_t chunk, tes_chunk_info_t *out);
/* Address of a field column in a chunk: capacity * length elements, 16-byte aligned. */
TES_API tes_result_t tes_chunk_column(tes_world_t *world, tes_archetype_t archetype, uint32_t chunk,
                                      tes_component_t component, uint32_t field, void **out_column);

/* Spawns `n` entities into an archetype (from tes_archetype_find or tes_location): the same as
 * tes_spawn_batch without resolving the component set, for hosts that spawn one set often. */
TES_API tes_result_t tes_archetype_spawn(tes_world_t *world, tes_archetype_t archetype, uint32_t n,
                                         tes_entity_t *out_entities);

/* Adds `component` to every entity of `archetype` (they all move to archetype + component).
 * When only tags differ between the two archetypes, whole chunks change owner without copying
 * a byte of field data. Doing nothing when the archetype already has the component. */
TES_API tes_result_t tes_archetype_add(tes_world_t *world, tes_archetype_t archetype,
                                       tes_component_t component);
/* Removes `component` from every entity of `archetype`; the same chunk rule applies. */
TES_API tes_result_t tes_archetype_remove(tes_world_t *world, tes_archetype_t archetype,
                                          tes_component_t component);

/* ---------------------------------------------------------------------------------------- */
/* Change detection                                                                          */
/* ---------------------------------------------------------------------------------------- */
/*
 * TICKS. The world has a change tick (starting at 1). Every write is stamped with the current
 * change tick; every consumer run (a query iteration, a system run) takes the current tick as
 * its `this_run` and advances the world's tick by one, so that anything written during or after
 * the run carries a newer tick. A consumer sees what was stamped in (last_run, this_run], then
 * sets last_run = this_run (which equals the world's tick - 1). So each consumer sees each
 * add, change and remove exactly once, on its first run after it, whatever the order of writes
 * and runs. Tick 0 means "never". Ticks are 64-bit.
 *
 * A CONSUMER STARTS WHEN IT IS MADE. tes_query_create advances the change tick for a consumer,
 * as a run does, and the consumer's first run reports the world from then on: under an Added
 * filter every entity that has the component (what exists counts as added, as on a Bevy
 * system's first run or for a Flecs observer with yield_existing), and under a Changed filter,
 * a removed term or pair_changes only what happened after it was made. Nothing from before is
 * its, whatever other consumers kept: a late removed term reports no removal from before it
 * even while another consumer keeps the log, so what a consumer reports never depends on
 * which others happen to exist (tes_query_last_run stays 0 until the first run).
 *
 * WHAT IS TRACKED. Added and Changed are independent: spawning or adding a component stamps
 * its added tick; tes_set, tes_set_number, tes_mark_changed and tes_chunk_mark_changed stamp
 * its changed tick. Writes through raw pointers (tes_field_ptr, tes_chunk_column, views) are
 * not seen until marked. Each component is tracked at the level its consumers need:
 *   TES_UNTRACKED     nobody filters on it: writes do nothing extra (one branch);
 *   TES_TRACK_TICKS   a consumer checks it as a second filter: per-row ticks only;
 *   TES_TRACK_DIRTY   a consumer's first filter: ticks plus a per-chunk deduplicated dirty list
 *                     that filtered iteration walks, so its cost follows what changed.
 * When tracking starts, every entity that has the component counts as added at that tick, so
 * a consumer's first run sees all existing entities as added once. A consumer whose first
 * filter is Added re-seeds the dirty lists from the ticks, so it finds every entity even after
 * pruning dropped the rows others had seen.
 *
 * REMOVALS. Components named in a query's `removed` list get a removal log: (entity, tick) for
 * every removal of the component, despawns included. tes_iter_removed hands out the entities
 * of the current run's window. The log exists while some query names the component; a new
 * removal consumer sees the removals made after it was created, whatever the log still holds
 * for the others.
 *
 * MOVES. An entity keeps the added and changed ticks of every component it keeps. A component
 * it gains (tes_add, or back after a tes_remove) counts as added at that tick, changed 0.
 *
 * PRUNING. Dirty-list entries and log entries that every consumer of the component has seen
 * are dropped when tes_tick ends, and when a consumer's run ends (tes_iter_fini, the last
 * tes_iter_next, tes_query_collect) while no other run is live; a consumer run that ends inside
 * another run leaves it to the end of the outermost. So a program that never calls tes_tick
 * keeps only what some consumer has not seen. A destroyed query no longer holds anything back.
 */

typedef enum tes_tracking_t {
    TES_UNTRACKED = 0,
    TES_TRACK_TICKS = 1,
    TES_TRACK_DIRTY = 2
} tes_tracking_t;

TES_API tes_result_t tes_component_tracking(const tes_world_t *world, tes_component_t component,
                                            tes_tracking_t *out);
/* The added and changed ticks of an entity's component (0 when never stamped or untracked). */
TES_API tes_result_t tes_ticks(const tes_world_t *world, tes_entity_t entity,
                               tes_component_t component, uint64_t *out_added,
                               uint64_t *out_changed);
/* Stamps the component changed (after writing it through a pointer or view). Deduplicated:
 * marking one entity many times between two runs costs one dirty-list entry. */
TES_API tes_result_t tes_mark_changed(tes_world_t *world, tes_entity_t entity,
                                      tes_component_t component);
/* Marks rows of one chunk changed: `rows[0..n-1]`, or every occupied row when rows is NULL. */
TES_API tes_result_t tes_chunk_mark_changed(tes_world_t *world, tes_archetype_t archetype,
                                            uint32_t chunk, tes_component_t component,
                                            const uint32_t *rows, uint32_t n);

/* ---------------------------------------------------------------------------------------- */
/* Relations                                                                                 */
/* ---------------------------------------------------------------------------------------- */
/*
 * A pair (source, relation, target) links two live entities through a component registered with
 * TES_COMPONENT_RELATION. Pairs live in the relation's side table: a pool of pair records, each
 * on two ordered lists, the source's targets and the target's sources. So "targets of a
 * source", "sources of a target" and "has this pair" cost what those lists hold, and no pair
 * ever changes an archetype. The sources of a target keep the order their pairs were added in
 * (children in order), and tes_pair_place reorders them.
 *
 * Errors name the side they are about: the source is checked first, then the relation
 * (TES_ERR_UNKNOWN_COMPONENT, TES_ERR_NOT_A_RELATION), then the target. A stale source or
 * target is TES_ERR_STALE_ENTITY; nothing changes.
 *
 * While an iteration is live, tes_pair_add and tes_pair_remove (and tes_remove of a relation,
 * which removes pairs) apply at once (they move no rows; a live run keeps the rows it chose
 * when it started), except when the source or the target is pending (spawned by a deferred
 * command): then they are recorded and applied at the flush, with tes_pair_init_number values
 * recorded after them. Despawns stay deferred, so the cleanup of a despawned entity's pairs happens
 * at the flush. A recorded pair of an ACYCLIC relation that would close a cycle when it applies
 * (its ends' other pairs may be recorded too) is skipped then and counted in commands_skipped,
 * like a command whose entity is gone; a pair of an entity to itself is TES_ERR_CYCLE at once.
 *
 * Change detection: the relation's pairs are tracked per source (see TES_COMPONENT_RELATION),
 * and a query that names the relation in its `pair_changes` list gets every pair event in its
 * run's window (tes_collect_t.pair_events): added, removed, data changed (once per pair per
 * tick), and moved among its target's sources (tes_pair_place). The events are logged only while
 * such a query exists. Like a removal log, the log is shared by its consumers, and a new one
 * sees only the events logged after it was made, whatever earlier consumers kept.
 */

/* A pair event: kind TES_PAIR_ADDED, TES_PAIR_REMOVED, TES_PAIR_CHANGED (data written) or
 * TES_PAIR_MOVED (tes_pair_place changed its place among the target's sources).
 * The source and target may be dead by the time a consumer reads a removed event.
 * wasm32 layout: source 0, target 4, relation 8, kind 12; 16 bytes. */
#define TES_PAIR_ADDED   1u
#define TES_PAIR_REMOVED 2u
#define TES_PAIR_CHANGED 3u
#define TES_PAIR_MOVED   4u
typedef struct tes_pair_event_t {
    tes_entity_t source;
    tes_entity_t target;
    tes_component_t relation;
    uint32_t kind;
} tes_pair_event_t;

/* Adds the pair. Already there: nothing happens. An EXCLUSIVE relation first removes the
 * source's other pair, if any (a removed and an added event). Data starts zeroed. */
TES_API tes_result_t tes_pair_add(tes_world_t *world, tes_entity_t source, tes_component_t relation,
                                  tes_entity_t target);
/* Removes the pair; not there: nothing happens. */
TES_API tes_result_t tes_pair_remove(tes_world_t *world, tes_entity_t source,
                                     tes_component_t relation, tes_entity_t target);
TES_API tes_result_t tes_pair_has(const tes_world_t *world, tes_entity_t source,
                                  tes_component_t relation, tes_entity_t target, bool *out_has);
/* The source's targets in the order their pairs were added: writes up to `capacity` of them to
 * out (may be NULL when capacity is 0) and the total to *out_count, so a second call with a
 * larger buffer gets the rest. */
TES_API tes_result_t tes_pair_targets(const tes_world_t *world, tes_entity_t source,
                                      tes_component_t relation, tes_entity_t *out,
                                      uint32_t capacity, uint32_t *out_count);
/* The sources of a target in their order (insertion, or as tes_pair_place set it); the same
 * capacity rule. */
TES_API tes_result_t tes_pair_sources(const tes_world_t *world, tes_component_t relation,
                                      tes_entity_t target, tes_entity_t *out, uint32_t capacity,
                                      uint32_t *out_count);
/* The source's first target, or 0 when it has none: the parent under an EXCLUSIVE relation. */
TES_API tes_result_t tes_pair_target(const tes_world_t *world, tes_entity_t source,
                                     tes_component_t relation, tes_entity_t *out_target);
/* Every pair of the relation, source by source (sources in no promised order, each source's
 * targets in order): up to `capacity` into out_sources / out_targets, the total in *out_count. */
TES_API tes_result_t tes_relation_pairs(const tes_world_t *world, tes_component_t relation,
                                        tes_entity_t *out_sources, tes_entity_t *out_targets,
                                        uint32_t capacity, uint32_t *out_count);
/* Moves the pair (source, relation, target) in the target's list of sources to just before the
 * pair of `before` (another source of the same target), or to the end when before is 0; a pair
 * there already does not move (no TES_PAIR_MOVED event).
 * TES_ERR_STALE_ENTITY when source, target or before is not alive (checked in that order),
 * TES_ERR_MISSING_COMPONENT when either pair does not exist. While an iteration is live, a
 * place with a pending source, target or before is recorded (after the pair add it follows)
 * and applied in order when the run ends, skipped and counted when it cannot apply then. */
TES_API tes_result_t tes_pair_place(tes_world_t *world, tes_entity_t source,
                                    tes_component_t relation, tes_entity_t target,
                                    tes_entity_t before);
/* Depth-first, pre-order walk down a relation from `root`: the sources of root (in order), each
 * followed by its own sources, and so on. Writes up to `capacity` entities (never the root, even
 * when a cycle leads back to it) and their depths (1 = a source of root; out_depths may be NULL)
 * and the total to *out_count. An entity reached twice (a cycle, or several targets) is listed
 * once, at its first visit. */
TES_API tes_result_t tes_relation_walk(tes_world_t *world, tes_component_t relation,
                                       tes_entity_t root, tes_entity_t *out, uint32_t *out_depths,
                                       uint32_t capacity, uint32_t *out_count);

/* Pair data: the relation's fields, per pair. The same checks and conversions as tes_get_number /
 * tes_set_number / tes_init_number, TES_ERR_MISSING_COMPONENT when the pair does not exist. A
 * set stamps the source's relation changed and logs a changed pair event; an init (the value
 * the pair starts with) does neither. */
TES_API tes_result_t tes_pair_get_number(const tes_world_t *world, tes_entity_t source,
                                         tes_component_t relation, tes_entity_t target,
                                         uint32_t field, uint32_t element, double *out);
TES_API tes_result_t tes_pair_set_number(tes_world_t *world, tes_entity_t source,
                                         tes_component_t relation, tes_entity_t target,
                                         uint32_t field, uint32_t element, double value);
TES_API tes_result_t tes_pair_init_number(tes_world_t *world, tes_entity_t source,
                                          tes_component_t relation, tes_entity_t target,
                                          uint32_t field, uint32_t element, double value);

/* ---------------------------------------------------------------------------------------- */
/* Queries                                                                                   */
/* ---------------------------------------------------------------------------------------- */

typedef struct tes_query_t tes_query_t;

/* A pair term of a query: the entity is (TES_TERM_ALL), is not (NONE), or may be as one of the
 * any terms (ANY) the source of (relation, target). target 0 means any target, the same as
 * naming the relation in all / none / any. wasm32 layout: relation 0, target 4, op 8; 12 bytes. */
#define TES_TERM_ALL  0u
#define TES_TERM_NONE 1u
#define TES_TERM_ANY  2u
typedef struct tes_pair_term_t {
    tes_component_t relation;
    tes_entity_t target;
    uint32_t op;
} tes_pair_term_t;

/* Terms of a query; every list may be empty. A matching entity has every `all` component,
 * none of `none`, and at least one of `any` (when `any` is not empty; any pair terms with op
 * ANY count among them). `added` and `changed` are filters (AND), each implying `all`: the
 * query then visits only entities whose component was added / changed since the query's last
 * run. `removed` names components whose removals the query reports through tes_iter_removed.
 * `pair_changes` names relations whose pair events the query reports (tes_collect_t). A query
 * with filters, removals or pair changes is a consumer with its own last_run; one without is a
 * plain, stateless view of the world.
 *
 * Sparse components and pair terms are checked per row: a run of a query that has them visits
 * each chunk with `rows` listing the rows that pass (tes_iter_t), each once. They are found
 * from the first filter's sparse set when it is on a sparse component, else from the smallest
 * sparse set or target's source list among the `all` terms when it holds under a quarter of the
 * rows the matching archetypes hold (rows then come grouped by chunk, in that set's order),
 * else by checking every row of the matching archetypes. A plain query with them is not
 * layout-stable: adding a sparse component changes what it visits without changing
 * tes_world_layout.
 *
 * wasm32 layout: twelve (pointer, count) words in the order below, then pairs 48, pair_count 52,
 * pair_changes 56, pair_change_count 60; 64 bytes. */
typedef struct tes_query_desc_t {
    const tes_component_t *all;
    uint32_t all_count;
    const tes_component_t *none;
    uint32_t none_count;
    const tes_component_t *any;
    uint32_t any_count;
    const tes_component_t *added;
    uint32_t added_count;
    const tes_component_t *changed;
    uint32_t changed_count;
    const tes_component_t *removed;
    uint32_t removed_count;
    const tes_pair_term_t *pairs;
    uint32_t pair_count;
    const tes_component_t *pair_changes; /* relations */
    uint32_t pair_change_count;
} tes_query_desc_t;

TES_API tes_result_t tes_query_create(tes_world_t *world, const tes_query_desc_t *desc,
                                      tes_query_t **out_query);
/* Closes the query: it stops holding back pruning and tracking levels. NULL is ignored. Not
 * while one of its iterations is live. */
TES_API void tes_query_destroy(tes_world_t *world, tes_query_t *query);
/* The query's last_run (0 before its first run). Only consumers have runs that count: a query
 * without filters or removed terms never advances the change tick nor its last_run. From
 * JavaScript this 64-bit result is a BigInt (the module does not split 64-bit values). */
TES_API uint64_t tes_query_last_run(const tes_query_t *query);

/* An iteration: one run of a query, chunk by chunk. The public fields describe the current
 * chunk after tes_iter_next returned true. */
typedef struct tes_iter_t {
    tes_archetype_t archetype;
    uint32_t chunk;               /* index in the archetype's chunk list */
    uint32_t count;               /* occupied rows of the chunk */
    const tes_entity_t *entities; /* entities[0..count-1] */
    /* Filtered queries: the rows to visit, each once, in dirty-list order. NULL: every row
     * 0..count-1. */
    const uint32_t *rows;
    uint32_t row_count; /* entries of rows, or count when rows is NULL */
    uint64_t this_run;  /* the run's tick: writes stamped <= this_run are this run's */
    /* Private. */
    tes_world_t *world_;
    tes_query_t *query_;
    uint32_t archetype_index_;
    uint32_t chunk_index_;
    bool done_;
} tes_iter_t;

/* Starts a run of the query. While any iteration is live, structural changes (spawn, despawn,
 * add, remove and their batch forms) are recorded and applied, in order, when the last live
 * iteration ends; tes_spawn then hands out a handle that is TES_ERR_PENDING_ENTITY until
 * then. tes_add, tes_remove, tes_despawn, the item calls and the writes (tes_set,
 * tes_set_number, tes_init*) on such a pending entity are recorded like any other command, and
 * checked when recorded against the components the entity will have (the sparse ones included:
 * its spawn's and its recorded adds and removes). A write to a placed entity happens at once
 * when the entity has the component now, unless the last recorded command that adds or removes
 * it adds it (an add with values of the component it holds, a remove and an add): then, as
 * when it lacks the component but a recorded command adds it, the write is recorded after that
 * command (tes_set* as a change, tes_init* see there), so the add's values never land over a
 * later write. A command
 * whose entity is gone by then (or that runs out of memory) is skipped and counted in
 * commands_skipped. A recorded call makes the archetype it needs when it is recorded, not when
 * it is applied: archetype ids (and a snapshot's archetype order) follow the calls as they are
 * made, so the same calls made inside and outside a run may number new archetypes otherwise;
 * the entities, values and handles are the same. A consumer query has one live run at a time
 * (else TES_ERR_QUERY_IN_USE). */
TES_API tes_result_t tes_query_iter(tes_world_t *world, tes_query_t *query, tes_iter_t *out_iter);
/* Moves to the next chunk with something to visit. Returns false at the end, after which the
 * run is over: the query's last_run becomes this_run and deferred commands are applied. */
TES_API bool tes_iter_next(tes_iter_t *iter);
/* Ends a run early, with the same effects as reaching the end, but for what a filtered run did
 * not hand out: the rows of the visits after the last tes_iter_next that returned true are kept
 * for the query's next run (tes_query_iter, tes_query_collect, tes_query_apply), which reports
 * them once more if they still pass its terms and filters (checked against the window they
 * were found in, merged with its own rows: each entity once, each chunk one visit). The visit
 * handed out last counts as seen. Removal and pair-event windows are the run's whole, read or
 * not. Harmless after the end. */
TES_API void tes_iter_fini(tes_iter_t *iter);
/* Defers structural changes as a live iteration does, for code that walks chunks it found
 * earlier (the bindings' cached chunk lists): begin/end pairs nest with iterations, and the
 * end of the outermost applies the deferred commands. tes_defer_end without a begin is
 * TES_ERR_INVALID_ARGUMENT. */
TES_API tes_result_t tes_defer_begin(tes_world_t *world);
TES_API tes_result_t tes_defer_end(tes_world_t *world);
/* For a host that records its own spawns in the command list while deferring (the bindings:
 * bindings/record.ts; the layout is internal): makes the allocator's next indices wait in the
 * world's handout block, up to a block of them and no more than the world may still hold, and
 * sets *out_count to how many wait (0: the spawn must be the core's call, which says why).
 * The core's own spawns take waiting indices first, and the outermost end gives back the ones
 * left, so a spawn gets the index it would have had without them. TES_ERR_INVALID_ARGUMENT
 * when not deferring. */
TES_API tes_result_t tes_defer_handouts(tes_world_t *world, uint32_t *out_count);
/* A number that changes whenever rows or chunks move: every spawn, despawn, add, remove (and
 * batch form) that moves rows, and every new archetype. While it stays the same, a plain
 * query visits the same chunks with the same rows, so their column addresses still hold.
 * Wraps around; compare for equality only. */
TES_API uint32_t tes_world_layout(const tes_world_t *world);
/* The current chunk's column of a component field (the query's archetypes all have it). */
TES_API tes_result_t tes_iter_column(tes_iter_t *iter, tes_component_t component, uint32_t field,
                                     void **out_column);
/* The entities that lost `component` (one of the query's `removed`) in this run's window,
 * oldest first; they may be dead. Callable from tes_query_iter until the run ends (so before
 * the tes_iter_next that returns false); the array stays valid until then. */
TES_API tes_result_t tes_iter_removed(tes_iter_t *iter, tes_component_t component,
                                      const tes_entity_t **out_entities, uint32_t *out_count);
/* The pair events of `relation` (one of the query's pair_changes) in this run's window, oldest
 * first; the same lifetime as tes_iter_removed's array. */
TES_API tes_result_t tes_iter_pair_events(tes_iter_t *iter, tes_component_t relation,
                                          const tes_pair_event_t **out_events, uint32_t *out_count);

/* ---------------------------------------------------------------------------------------- */
/* Collecting a run                                                                          */
/* ---------------------------------------------------------------------------------------- */

/* What one run of a consumer query saw, for hosts that drain a subscription with one call.
 * wasm32 layout: entities 0, count 4, removed 8, removed_counts 12, removed_total 16,
 * pair_events 20, pair_event_count 24; 28 bytes. */
typedef struct tes_collect_t {
    /* The entities the run visits (added / changed filters), chunk by chunk in visit order,
     * each once; NULL when count is 0. */
    const tes_entity_t *entities;
    uint32_t count;
    /* The run's removals, term after term in the query's removed order (below), each term's
     * oldest first; they may be dead. NULL when removed_total is 0. */
    const tes_entity_t *removed;
    /* removed_counts[i]: entries of removed term i (one per removed term; NULL for none). */
    const uint32_t *removed_counts;
    uint32_t removed_total; /* sum of removed_counts */
    /* The run's pair events of the query's pair_changes relations, relation after relation,
     * each oldest first. NULL when pair_event_count is 0. */
    const tes_pair_event_t *pair_events;
    uint32_t pair_event_count;
} tes_collect_t;

/* Runs `query` to its end, as tes_query_iter + tes_iter_next until false would, and collects
 * what the run saw: the entities it visits and, for each removed term, what tes_iter_removed
 * would hand out. The query must be a consumer (added / changed filters or removed terms), else
 * TES_ERR_INVALID_ARGUMENT. A query without added / changed filters visits no entities here
 * (count 0, whatever it matches): a removals-only subscription does not walk the world.
 *
 * The removed terms come in the order the query stores them: the order of
 * tes_query_desc_t.removed with repeated ids dropped (the first occurrence kept). So for
 * removed = {B, A, B}, removed_counts[0] counts B's removals and removed_counts[1] A's.
 *
 * The arrays are owned by the query and stay valid until its next run (tes_query_iter,
 * tes_query_collect, tes_query_apply) or destruction. They are reserved before the run starts:
 * out of memory returns TES_ERR_OUT_OF_MEMORY before anything is consumed (last_run, the
 * change tick and every value stay as they were; the next call sees the same events).
 * TES_ERR_QUERY_IN_USE while the query has a live run. */
TES_API tes_result_t tes_query_collect(tes_world_t *world, tes_query_t *query, tes_collect_t *out);

/* tes_add_items and tes_remove_items for every entity a plain query visits (a consumer query is
 * TES_ERR_INVALID_ARGUMENT: a run would use up what it reports), all or nothing. Without row
 * terms, item lists of chunk components only and no values move whole archetypes: chunks change
 * owner (see tes_archetype_add), so the cost follows chunks, not entities. While an iteration is
 * live, the call is recorded per entity visited now. */
TES_API tes_result_t tes_query_add_items(tes_world_t *world, tes_query_t *query,
                                         const tes_items_t *items, tes_fault_t *out_fault);
TES_API tes_result_t tes_query_remove_items(tes_world_t *world, tes_query_t *query,
                                            const tes_items_t *items, tes_fault_t *out_fault);
/* tes_despawn_batch of every entity a plain query visits (a consumer query is
 * TES_ERR_INVALID_ARGUMENT), in one call: recorded per entity while an iteration is live. */
TES_API tes_result_t tes_query_despawn(tes_world_t *world, tes_query_t *query);

/* ---------------------------------------------------------------------------------------- */
/* Kernels                                                                                   */
/* ---------------------------------------------------------------------------------------- */
/*
 * Column operations run inside the library over every row a query visits, so per-frame math
 * needs no per-entity loop in the host. Unfiltered chunks are processed as one contiguous range
 * of the column (SIMD in the wasm build); filtered runs touch their dirty rows only. Fields of
 * every type; an array field is processed element by element. f32 fields compute in float: k,
 * lo and hi are converted once per call (rounding to nearest).
 *
 * Integer fields (i8 u8 i16 u16 i32 u32) saturate: each result is computed exactly (in a wider
 * type) and held to the field's range, so a u8 at 250 plus 10 is 255, a u16 timer counted down
 * past 0 stays 0, and nothing wraps. That is the integer counterpart of float overflow giving
 * infinity: a per-frame kernel that meets one entity at its limit does not fail the frame. The
 * operands must be values of the field's type (tes_set_number's rule: whole numbers in range;
 * TES_ERR_BAD_VALUE otherwise), so results are whole and SUB_COLLECT on an unsigned field
 * collects an entity once, on the call that brings it to 0.
 */

typedef enum tes_op_kind_t {
    TES_OP_FILL = 1,    /* a = k */
    TES_OP_ADD,         /* a += k (integers: saturating, as every op below) */
    TES_OP_SCALE,       /* a *= k */
    TES_OP_ADD_SCALED,  /* a += b * k   (b: src_component.src_field, same type and length as a) */
    TES_OP_CLAMP,       /* a = min(max(a, lo), hi); NaN elements stay NaN */
    TES_OP_SUB_COLLECT, /* a -= k, and collect the entities for which some element of a went
                           from > 0 to <= 0 in this operation (timers, lifetimes, health) */
    TES_OP_LAST = TES_OP_SUB_COLLECT
} tes_op_kind_t;

/* One operation on a field `a` = component.field. wasm32 layout (JS writes it): k 0, lo 8,
 * hi 16, kind 24, component 28, field 32, src_component 36, src_field 40; 48 bytes, 8-aligned. */
typedef struct tes_op_t {
    double k;                      /* the operand (unused by CLAMP) */
    double lo, hi;                 /* CLAMP only: lo <= hi */
    uint32_t kind;                 /* tes_op_kind_t */
    tes_component_t component;     /* the target a */
    uint32_t field;                /* field index in component */
    tes_component_t src_component; /* b, TES_OP_ADD_SCALED only (ignored otherwise) */
    uint32_t src_field;
} tes_op_t;

/* Applies `op` to every row one run of `query` visits: every row of every matched chunk, or,
 * for a query with added / changed filters, the rows that run reports. The apply IS one run of
 * the query: a consumer's last_run advances and the change tick moves on, like any other run.
 *
 * Marks the target component changed for exactly the rows written (every row of a chunk when
 * unfiltered), as tes_chunk_mark_changed does: free for an untracked component. The marks are
 * newer than the run, so a query filtered on changed(target), the applying query included,
 * sees those rows on its next run.
 *
 * TES_OP_SUB_COLLECT returns the entities whose value crossed from > 0 to <= 0 (each once, in
 * visit order) through out_entities / out_count: an array owned by the query, valid until its
 * next run or destruction. Entities already <= 0 before the call are not collected. For every
 * other op *out_count is 0. out_entities and out_count may be NULL.
 *
 * Every check happens before anything is written, in this order:
 *   world, query or op NULL, or kind not a tes_op_kind_t   TES_ERR_INVALID_ARGUMENT
 *   component (or src_component) not registered            TES_ERR_UNKNOWN_COMPONENT
 *   it is a tag                                             TES_ERR_TAG_HAS_NO_DATA
 *   no such field                                           TES_ERR_UNKNOWN_FIELD
 *   ADD_SCALED: src type differs from the target's          TES_ERR_BAD_FIELD_TYPE
 *   ADD_SCALED: src length differs from the target's        TES_ERR_BAD_SIZE
 *   the component is not in the query's all, added or
 *   changed terms (a matched archetype might lack it)       TES_ERR_MISSING_COMPONENT
 *   CLAMP with lo > hi or either NaN                        TES_ERR_INVALID_ARGUMENT
 *   k (lo and hi for CLAMP) not a value of the field's type
 *   (f32: finite beyond float's range; integers: not whole,
 *   NaN, infinite or out of the type's range)               TES_ERR_BAD_VALUE
 *   a consumer query with a live run                        TES_ERR_QUERY_IN_USE
 *   no memory for the run (its visits, the collected list)  TES_ERR_OUT_OF_MEMORY
 * On any of these nothing is written and nothing is consumed. The collected list is reserved for
 * every row the run visits before the first write, so out of memory never leaves an operation
 * half applied. */
TES_API tes_result_t tes_query_apply(tes_world_t *world, tes_query_t *query, const tes_op_t *op,
                                     const tes_entity_t **out_entities, uint32_t *out_count);

/* ---------------------------------------------------------------------------------------- */
/* Systems and stages                                                                        */
/* ---------------------------------------------------------------------------------------- */

typedef struct tes_system_t tes_system_t;

/* A system's body: called once per run with the run's iteration; it loops tes_iter_next. */
typedef void (*tes_system_fn)(tes_iter_t *iter, void *user);

typedef struct tes_system_desc_t {
    uint32_t stage;         /* from tes_stage_create */
    tes_query_desc_t query; /* the system's own query (a consumer when it has filters) */
    tes_system_fn run;
    void *user;
    uint32_t interval; /* runs when the world's frame is a multiple of it (0 or 1: every tick) */
} tes_system_desc_t;

/* Stages run in creation order in tes_tick; systems in a stage in creation order. */
TES_API tes_result_t tes_stage_create(tes_world_t *world, const char *name, uint32_t *out_stage);
TES_API tes_result_t tes_system_create(tes_world_t *world, const tes_system_desc_t *desc,
                                       tes_system_t **out_system);
TES_API void tes_system_destroy(tes_world_t *world, tes_system_t *system);
/* One frame: every stage's due systems in order, then pruning. Deferred commands of a system
 * are applied when its run ends, before the next system. Not from inside a run
 * (TES_ERR_INVALID_ARGUMENT). */
TES_API tes_result_t tes_tick(tes_world_t *world);

/* ---------------------------------------------------------------------------------------- */
/* Snapshots                                                                                 */
/* ---------------------------------------------------------------------------------------- */
/*
 * A snapshot is a whole world as bytes (the format is docs/format.md: little-endian, a header
 * with magic, version, size and a CRC-32 of the rest): component schemas, the entity table
 * (generations, which indices are live, free or skipped, the free queue in order; as runs, so
 * its size follows what is live and the shape of the history, not the indices ever used), every
 * archetype's entities
 * and columns, sparse components with their data, and relations with their pairs, pair data and
 * the order of every list. Change-detection state (ticks, dirty lists, logs), queries, systems
 * and stages are not part of it. tes_world_restore builds a new world from it in which every
 * handle names the same entity with the same components and values, spawns hand out the same
 * handles as they would in the original, and tes_snapshot writes the same bytes again.
 */

/* Writes the world's snapshot into a buffer the world owns: valid until the next tes_snapshot
 * or the world's destruction. Not while an iteration is live (TES_ERR_INVALID_ARGUMENT):
 * deferred commands are not part of any state. */
TES_API tes_result_t tes_snapshot(tes_world_t *world, const uint8_t **out_bytes,
                                  uint32_t *out_size);
/* Creates a world from a snapshot (`desc` as for tes_world_create; NULL for defaults). Bytes
 * that are not a snapshot this version wrote, whole and unchanged, give
 * TES_ERR_BAD_SNAPSHOT (wrong magic, size or checksum, truncated, or inconsistent: a handle
 * named twice, an unknown id, a cycle in an acyclic relation, an encoding tes_snapshot would not
 * write, ...) or TES_ERR_SNAPSHOT_VERSION, and no world: nothing is left allocated and no
 * existing world is touched. What restoring allocates is the world the bytes describe: its
 * entity table holds a record for every live and free index (12 bytes each, at most 2^21), none
 * for skipped ones. */
TES_API tes_result_t tes_world_restore(const tes_world_desc_t *desc, const uint8_t *bytes,
                                       uint32_t size, tes_world_t **out_world);
/* A 64-bit hash of the world's state: XXH64 (seed 0) of the snapshot's body, the bytes
 * tes_snapshot writes after its 16-byte header, computed without writing them anywhere (no
 * allocation). Two worlds with the same snapshot have the same hash; peers of a deterministic
 * simulation compare it tick by tick to find the first tick they differ. Not while an
 * iteration is live (TES_ERR_INVALID_ARGUMENT), as tes_snapshot. */
TES_API tes_result_t tes_world_hash(tes_world_t *world, uint64_t *out_hash);

/* ---------------------------------------------------------------------------------------- */
/* Rollback                                                                                  */
/* ---------------------------------------------------------------------------------------- */
/*
 * Checkpoints and rewinding, for prediction and rollback netcode: take a checkpoint every
 * simulated frame; when a late input shows a frame was simulated wrong, rewind to that frame's
 * checkpoint, apply the input and simulate again up to now.
 *
 * A rewind returns the world exactly to the checkpoint's state: the same entities and handles
 * (despawned ones alive again with their data, entities spawned since gone), components, values,
 * sparse components, pairs with their data and order, the rows' order in every archetype and
 * the free queue, so the spawns that follow hand out the handles they handed out the first time
 * and the snapshot's bytes (and tes_world_hash) equal the ones taken at the checkpoint.
 * Archetypes made since are freed. A replica's tes_replica_tick goes back too, to the delta it had
 * applied at the checkpoint: a delta on a later baseline is then refused (TES_ERR_DELTA_BASELINE),
 * and one since that tick, or a keyframe, brings it back to the source.
 *
 * Cost follows what changed, not the world. The first checkpoint copies the world's state (its
 * "shadow", about the size of its component data) and makes every component with fields
 * dirty-tracked; each later one walks what changed since the previous (dirty lists, and the
 * entity indices whose place changed) and keeps, for those alone, their state at the previous
 * checkpoint. A rewind writes back the state of what changed since the checkpoint. What it
 * restores is what change detection sees: writes through column views reach it when marked (a
 * query's `writes`, tes_chunk_mark_changed), as for replication.
 *
 * Consumers across a rewind: ticks never go back. A rewind is a change at the current tick:
 * every entity it puts back in another place or state counts as added (each component of it),
 * a value it writes back over a different one as changed, and what it takes away as removed
 * (logged for removal consumers, pair events for pair_changes). Queries, subscriptions, systems
 * and replicators see the net difference once, at their next run, like any other change.
 * Simulation systems that must run identically on every peer should therefore not depend on
 * Added/Changed/removed filters across a rewind (a peer that rewound sees the rewind as changes;
 * one that did not, does not).
 *
 * A component registered after a checkpoint joins them; its members and values come and go with
 * it. A rewind to a checkpoint before its registration takes the registration back when nothing
 * uses it any more (no query, consumer or replicator made since names it, nor a delta applied
 * since, whose ids a replica keeps): ids are taken back newest first, so one still used keeps
 * those registered before it since the checkpoint. Then the snapshot and the hash are the
 * checkpoint's, and registering again hands out the same ids. tes_rollback_stop drops every
 * checkpoint, and so does tes_archetypes_reclaim when it frees an archetype (and unregistering a
 * component older than the newest checkpoint); the next tes_checkpoint starts again with a copy
 * of the world. Neither call is allowed while an
 * iteration is live (TES_ERR_INVALID_ARGUMENT), and both are all or nothing: out of memory
 * leaves the world and the checkpoints as they were.
 */

/* Takes a checkpoint of the world as it is now and gives its number: 1 for a world's first, then
 * one more than the newest kept (after tes_rewind(k), the next is k + 1). The world keeps the
 * latest `checkpoints` of them (tes_world_desc_t), dropping the oldest. */
TES_API tes_result_t tes_checkpoint(tes_world_t *world, uint32_t *out_checkpoint);
/* Returns the world to the state it had at checkpoint `checkpoint`, which stays kept (a rewind to
 * it again is possible); newer checkpoints are dropped. TES_ERR_NO_CHECKPOINT (nothing changed)
 * when it is not kept. */
TES_API tes_result_t tes_rewind(tes_world_t *world, uint32_t checkpoint);
/* The oldest and newest checkpoint kept (both 0 when none). */
TES_API tes_result_t tes_checkpoints(const tes_world_t *world, uint32_t *out_oldest,
                                     uint32_t *out_newest);
/* Drops every checkpoint and the shadow, and stops the dirty tracking the first checkpoint
 * started (components other consumers track stay tracked). */
TES_API tes_result_t tes_rollback_stop(tes_world_t *world);

/* ---------------------------------------------------------------------------------------- */
/* Deltas                                                                                    */
/* ---------------------------------------------------------------------------------------- */
/*
 * A delta carries what changed in a world since a baseline tick, for a replica world that is at
 * that tick (docs/format.md, "Deltas"). A replicator, on the source world, is a consumer of its
 * replicated components: while one exists, those components are dirty-tracked, their removals
 * and pair events logged, and entity spawns and despawns stamped per entity index, so encoding
 * walks only what changed (dirty lists, logs), never every entity.
 *
 * A delta describes, for every entity index touched since the baseline, its state now: empty
 * (or out of scope), or a handle with its set of replicated components and the values of those
 * added or changed since the baseline; and, per replicated relation, the pair events since the
 * baseline with their ticks. Applying it to a replica at any tick between the baseline and the
 * delta's tick gives the source's state at the delta's tick: the entity states are absolute,
 * and the replica replays only the pair events newer than its own tick. So a replica can
 * acknowledge ticks late, a lost delta is covered by the next one (computed from the last
 * acknowledged baseline), and a late delta (its tick not newer than the replica's) is skipped.
 * Each delta names its source (tes_replicator_desc_t.source): a replica takes deltas only from the
 * source of the keyframe it applied last (another's are TES_ERR_DELTA_BASELINE, whatever their
 * ticks), and a keyframe of another source is never late: a replica kept across a source's
 * restart, or a world that was another source's replica, takes the new source's first keyframe
 * whatever its tick, instead of holding the old state.
 *
 * History: a replicator keeps the changes of its last `history` encodes, times the number of its
 * peers when it has several (each peer's encode is one: a server updating P clients a frame
 * encodes P times a frame, so `history` counts frames for it). A baseline older than
 * that (or 0, a new replica) gets a keyframe instead: every entity in scope with every value,
 * and every pair, after which the replica holds exactly those (entities it has and the keyframe
 * lacks are despawned). So a slow or lost replica never holds back pruning. The history is a ring
 * of 8 bytes an encode: a `history` whose ring would pass 4 GiB is TES_ERR_OUT_OF_MEMORY.
 *
 * Scope: the replicated components are `components` (NULL: every component without
 * TES_COMPONENT_LOCAL); components a replica has that the delta does not replicate are left as
 * they are. With a `scope` query (all / none / any terms), only the entities it matches are
 * replicated; an entity leaving the scope is despawned on the replica, one entering it arrives
 * whole, and pairs are replicated between entities in scope.
 *
 * Precision: values travel exactly (their bits), unless the replicator lists the field in
 * `quanta` (tes_quantum_t): then each element travels as the nearest multiple of a step, in as
 * few bits as the delta's values need (17 for values in [0, 1000) at 0.01), and the replica holds
 * that multiple. The steps are part of the delta's schema (a keyframe carries them; format
 * version 5, docs/format.md).
 */
typedef struct tes_replicator_t tes_replicator_t;

/* A replicated f32 or f64 field the replicator's deltas carry quantized: each element (every
 * element of an array field) travels as the integer q = llround(value / step), in a code of the
 * bits the spread of the delta's values needs, and the replica holds (float)(q * step) (or the
 * double), whatever the other values of the delta were; a value
 * that is not finite or is too far from 0 (|value / step| > 2^53) travels exactly. Precision is
 * the wire's, not the storage's: the source keeps its exact values, and another replicator of
 * the same world may send them at another precision. The steps are part of the replicated
 * schema: a replica whose keyframe had other steps refuses the deltas (TES_ERR_DELTA_SCHEMA)
 * until a keyframe comes.
 * wasm32 layout: component 0, field 4, step 8; 16 bytes. */
typedef struct tes_quantum_t {
    tes_component_t component;
    uint32_t field; /* its index in the component's fields */
    double step;    /* finite and above 0 */
} tes_quantum_t;

/* Flags of a replicator (tes_replicator_desc_t.flags).
 *
 * CHANGED_FIELDS: a record carries only the fields of a component whose values changed since the
 * baseline (behind a field mask), not all of its fields. To tell which, the replicator keeps a
 * copy of the values of each replicated component with several fields, per entity, and a tick
 * per field: the component's bytes and 8 per field, for each entity it has encoded. */
#define TES_REPLICATOR_CHANGED_FIELDS 1u

/* wasm32 layout: components 0, component_count 4, scope 8, history 12, quanta 16,
 * quantum_count 20, flags 24; 28 bytes. */
typedef struct tes_replicator_desc_t {
    const tes_component_t *components; /* NULL: every component registered without LOCAL */
    uint32_t component_count;
    tes_query_t *scope;          /* NULL: every entity */
    uint32_t history;            /* encodes whose changes stay available, per peer (0: 64) */
    const tes_quantum_t *quanta; /* fields sent quantized (NULL: every field exact) */
    uint32_t quantum_count;
    uint32_t flags; /* TES_REPLICATOR_* */
    /* Tells this source's deltas from every other's: a replica takes deltas only from the
     * source of the keyframe it holds (another's are TES_ERR_DELTA_BASELINE). Random, so that a
     * server that restarts, or another server, differs (the bindings draw one from
     * Math.random); 0: the core mixes one from the world's address and its count of replicators
     * made, which tells the replicators of one process apart, not those of another process. */
    uint32_t source;
} tes_replicator_desc_t;

/* A component named in `components` that is TES_COMPONENT_LOCAL is TES_ERR_INVALID_ARGUMENT. A
 * quantum whose component is unknown is TES_ERR_UNKNOWN_COMPONENT; one whose component this
 * replicator does not replicate (not in `components`, or LOCAL when `components` is NULL) or is
 * a relation, whose field index is out of range or not an f32 or f64 field, whose step is not
 * finite and above 0, or that names a (component, field) another quantum names, is
 * TES_ERR_INVALID_ARGUMENT. */
TES_API tes_result_t tes_replicator_create(tes_world_t *world, const tes_replicator_desc_t *desc,
                                           tes_replicator_t **out_replicator);
/* Stops the tracking the replicator asked for. NULL is ignored. Destroying the world destroys
 * its replicators. */
TES_API void tes_replicator_destroy(tes_replicator_t *replicator);
/* Encodes the changes since `baseline` (a tick a replica acknowledged) into a buffer the
 * replicator owns, valid until its next encode or its destruction; a keyframe when the baseline
 * is 0 or older than the history. The delta's tick (what the replica acknowledges once it
 * applied it) goes to *out_tick. Like a consumer run, it advances the world's change tick. Not
 * while an iteration is live (TES_ERR_INVALID_ARGUMENT). */
TES_API tes_result_t tes_delta_encode(tes_replicator_t *replicator, uint64_t baseline,
                                      const uint8_t **out_bytes, uint32_t *out_size,
                                      uint64_t *out_tick);
/* Tells the replicator that no replica will ask for a delta from a baseline before `tick` (the
 * oldest tick its replicas acknowledged): the changes before it may be pruned at the next
 * tes_tick, so encoding walks only what changed since then, not its whole history. A baseline
 * before it gets a keyframe. Ticks past the latest encode count as that encode's. */
TES_API tes_result_t tes_replicator_release(tes_replicator_t *replicator, uint64_t tick);
/* Applies a delta to a replica world. Checked whole before anything changes: bytes that are not a
 * delta (magic, size, checksum, structure) are TES_ERR_BAD_DELTA, another format version
 * TES_ERR_SNAPSHOT_VERSION, components other than the delta's TES_ERR_DELTA_SCHEMA, a baseline
 * newer than the replica's tick TES_ERR_DELTA_BASELINE; then the world is as it was. A delta not
 * newer than the replica's tick changes nothing (*out_applied false), but for a keyframe of
 * another source than the replica's; a delta (not a keyframe) of another source is
 * TES_ERR_DELTA_BASELINE.
 * Entities are placed at the delta's handles, replacing whatever the replica has at those indices.
 * (Pairs an acyclic relation would refuse are found in the checking pass: TES_ERR_BAD_DELTA.)
 * Applying can still run out of memory (TES_ERR_OUT_OF_MEMORY): the world is then valid but
 * partway, and its replica tick goes back to 0 so that only a keyframe applies next. Not while an
 * iteration is live. out_applied may be NULL. */
TES_API tes_result_t tes_delta_apply(tes_world_t *world, const uint8_t *bytes, uint32_t size,
                                     bool *out_applied);
/* The source tick of the last delta applied to the world (0: none, or a failed apply). */
TES_API uint64_t tes_replica_tick(const tes_world_t *world);

/*
 * Peers: one replica as the sending side sees it, for what it alone gets (docs/format.md,
 * "Peers"). A peer's deltas come from its replicator, narrowed two ways:
 *
 * Visibility (TES_PEER_VISIBILITY): the peer sees only the entities tes_peer_show showed it
 * (and that are in the replicator's scope), as a game shows each client what is near it. One
 * shown since the baseline arrives whole with its pairs; one hidden, or despawned, goes as a
 * gone entry; changes to entities it does not see cost it nothing but the walk over what
 * changed. Showing and hiding are logged per peer, so an encode walks what changed and the
 * visibility changes since its baseline, never every entity or every shown one.
 *
 * Budget: tes_peer_encode's `budget` caps, about, the bytes of entity records in one delta (a
 * record's size is learned by a plan of all the due ones; docs/format.md, "Peers"). When the
 * records that are due do not fit, the ones with the highest score go, where the score is the
 * entity's priority (tes_peer_show's; 1 without visibility) times one more than the encodes it
 * has waited; the rest are owed and compete again in the next encode, with a higher score each
 * time, so everything is eventually sent. The record with the highest score always goes (a
 * budget smaller than one record still makes progress). An owed entity goes whole, and keeps
 * going whole in each delta until the peer acknowledges one that carried it (a lost delta
 * cannot lose it). Gone entries, the head and pair events are never withheld; an entity that
 * arrives whole is withheld with its pairs, which join the end of the replica's lists when it
 * goes (the same pairs, maybe in another order than the source's). 0: no budget.
 *
 * A peer belongs to its replicator: destroying the replicator destroys its peers.
 */
typedef struct tes_peer_t tes_peer_t;

#define TES_PEER_VISIBILITY 1u /* sees only the entities tes_peer_show shows it */

/* Flags other than TES_PEER_* are TES_ERR_INVALID_ARGUMENT. */
TES_API tes_result_t tes_peer_create(tes_replicator_t *replicator, uint32_t flags,
                                     tes_peer_t **out_peer);
/* NULL is ignored. */
TES_API void tes_peer_destroy(tes_peer_t *peer);
/* Shows a live entity to a peer with visibility, or changes its priority when it is shown
 * already (a finite number > 0; the score of its owed records). TES_ERR_STALE_ENTITY /
 * TES_ERR_PENDING_ENTITY for an entity that is not placed and alive; TES_ERR_INVALID_ARGUMENT
 * for a peer without visibility or a priority that is not > 0. */
TES_API tes_result_t tes_peer_show(tes_peer_t *peer, tes_entity_t entity, float priority);
/* Hides an entity the peer was shown (also one despawned since): its replica loses it at the
 * next delta. Hiding one it was not shown changes nothing. */
TES_API tes_result_t tes_peer_hide(tes_peer_t *peer, tes_entity_t entity);
/* Whether the peer sees the entity: alive, and shown to it when it has visibility (the
 * replicator's scope aside). */
TES_API bool tes_peer_sees(const tes_peer_t *peer, tes_entity_t entity);
/* tes_delta_encode for one peer: its visibility and its budget (bytes of records; 0: none). */
TES_API tes_result_t tes_peer_encode(tes_peer_t *peer, uint64_t baseline, uint32_t budget,
                                     const uint8_t **out_bytes, uint32_t *out_size,
                                     uint64_t *out_tick);

/* ---------------------------------------------------------------------------------------- */
/* Memory for hosts (JavaScript passes arrays through these)                                 */
/* ---------------------------------------------------------------------------------------- */

/* 16-byte aligned, from the C heap (not a world's allocator). NULL on failure. */
TES_API void *tes_malloc(size_t size);
TES_API void tes_free(void *ptr);

/*
 * THE RUN RESERVE. A host that hands out views of the module's memory (JavaScript's typed
 * arrays over wasm memory) loses every view when memory grows. While it has views out (a loop
 * over a query), tes_run_reserve(bytes) keeps growth from happening under them: it makes room
 * for `bytes` first (growing memory now, before any view is handed out), then, until
 * tes_run_release, the C heap (the default allocator of every world, and tes_malloc) takes no
 * more memory from the system: what does not fit in the room it holds fails with
 * TES_ERR_OUT_OF_MEMORY and, as every failure, changes nothing. What is freed meanwhile is
 * reused. A world's deferred commands apply (when its last run ends) with the reserve lifted:
 * none of its views is out then, and a command must not be lost for want of room. Worlds with
 * their own allocator are not concerned. One reserve at a time, for the whole module (its worlds
 * share its memory). In a native build, where memory does not move, a byte budget stands in:
 * allocations cost their size plus a fixed overhead and frees give nothing back.
 */
/* Makes room for `bytes` and starts the reserve. TES_ERR_OUT_OF_MEMORY when the room cannot be
 * had; TES_ERR_INVALID_ARGUMENT when a reserve is held already or bytes is 0. */
TES_API tes_result_t tes_run_reserve(size_t bytes);
/* Ends the reserve; returns the size of the largest allocation it refused (0 when none, or when
 * no reserve was held): a host makes the next reserve larger by it. */
TES_API size_t tes_run_release(void);

#ifdef __cplusplus
}
#endif

#endif /* TESSERA_H */
