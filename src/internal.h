/*
 * Private umbrella header: every .c in src/ includes it first. Names shared between files
 * are prefixed `tesi_`; file-local helpers are `static` without prefix.
 *
 * The storage in one paragraph: a world owns component schemas, archetypes and an entity
 * table. An archetype (one sorted component set) owns a list of chunks; every chunk but the
 * last is full, so an archetype of n entities holds ceil(n / capacity) chunks. A chunk is one
 * fixed-size block: the entity column at offset 0, then one 16-byte aligned column per field.
 * The entity table maps an index to (chunk, row); a chunk knows its archetype. The archetype
 * graph caches "+C" and "-C" transitions in a flat array per archetype, indexed by component.
 */
#ifndef TESSERA_INTERNAL_H
#define TESSERA_INTERNAL_H

#include "tessera.h"

#include <float.h>
#include <math.h>
#include <string.h>

#define TESI_ALIGN               16u
#define TESI_INDEX_MASK          ((1u << TES_INDEX_BITS) - 1u)
#define TESI_GENERATION_MASK     ((1u << TES_GENERATION_BITS) - 1u)
#define TESI_INDEX_LIMIT         (1u << TES_INDEX_BITS) /* indices are 1 .. TESI_INDEX_LIMIT-1 */
#define TESI_NO_TYPE             0xFFFFu     /* type_index entry of an absent component */
#define TESI_ROW_MARK            0x80000000u /* temporary mark on a record's row */
#define TESI_ROW_PENDING         0x40000000u /* row of a deferred spawn: | its archetype */
#define TESI_ROW_SKIPPED         0x20000000u /* row of an index a delta jumped over */
/* Row of an index handed out for a spawn the host will record (tes_defer_handouts): pending
 * with an archetype id no archetype has, until the host writes its spawn's. */
#define TESI_ROW_HANDOUT         (TESI_ROW_PENDING | 0x1fffffffu)
/* Indices a run hands out at a time to a host that records its own spawns. */
#define TESI_HANDOUTS            64u
#define TESI_DEFAULT_CHUNK_BYTES 65536u
#define TESI_DEFAULT_MIN_FREE    4096u
#define TESI_DEFAULT_CHECKPOINTS 16u
#define TESI_MIN_CAPACITY        8u /* fewer rows than this: use a larger block */
#define TESI_MAX_BLOCK_BYTES     (64u * 1024u * 1024u)
#define TESI_SPAWN_CACHE_IDS     8u /* longest component list the spawn cache keeps */

/* p + n where p is NULL when n is 0 (an empty array is never allocated): NULL + 0 is undefined
 * behaviour in C, which clang's UBSan reports. */
#define TESI_PAST(p, n) ((n) ? (p) + (n) : (p))

/* A delta's header (docs/format.md): its u16 flags are the upper half of the second u32 word,
 * at byte 6, and bit 0 of them makes it a keyframe. bindings/abi.ts carries both for JS. */
#define TESI_DELTA_FLAGS_BYTE 6u
#define TESI_DELTA_KEYFRAME   1u
#define TESI_DELTA_EMPTY      2u /* no gone entry, record or pair event: nothing for the replica */

static inline uint32_t tesi_align_up(uint32_t n, uint32_t a) {
    return (n + a - 1u) & ~(a - 1u);
}

/* ---- numbers ---------------------------------------------------------------------------- */

/* One element of a field as a double (exact for every type), and back: the conversions of
 * tes_get_number / tes_set_number, inline because they are on the per-entity paths. */
static inline double tesi_decode_number(tes_type_t type, const uint8_t *ptr) {
    double out = 0;
    switch (type) {
    case TES_F32:
        out = *(const float *)(const void *)ptr;
        break;
    case TES_F64:
        out = *(const double *)(const void *)ptr;
        break;
    case TES_I8:
        out = *(const int8_t *)ptr;
        break;
    case TES_U8:
        out = *ptr;
        break;
    case TES_I16:
        out = *(const int16_t *)(const void *)ptr;
        break;
    case TES_U16:
        out = *(const uint16_t *)(const void *)ptr;
        break;
    case TES_I32:
        out = *(const int32_t *)(const void *)ptr;
        break;
    case TES_U32:
        out = *(const uint32_t *)(const void *)ptr;
        break;
    }
    return out;
}

/* True when v is a whole number in [lo, hi] (false for NaN). */
static inline bool tesi_integral_within(double v, double lo, double hi) {
    return v >= lo && v <= hi && (double)(int64_t)v == v;
}

/* Writes `value` as one scalar of `type` to `out`; false (nothing written) when the type cannot
 * hold it without loss. */
static inline bool tesi_encode_number(tes_type_t type, double value, uint8_t *out) {
    /* Each case stores with a constant size: one store, no memcpy call. */
#define STORE(T, x)                  \
    do {                             \
        T v_ = (T)(x);               \
        memcpy(out, &v_, sizeof v_); \
    } while (0)
    switch (type) {
    case TES_F32:
        /* Finite values beyond float's range would become infinity: that is loss, not rounding. */
        if (!((value >= -FLT_MAX && value <= FLT_MAX) || value != value || value == INFINITY ||
              value == -INFINITY)) {
            return false;
        }
        STORE(float, value);
        return true;
    case TES_F64:
        STORE(double, value);
        return true;
    case TES_I8:
        if (!tesi_integral_within(value, INT8_MIN, INT8_MAX)) return false;
        STORE(int8_t, value);
        return true;
    case TES_U8:
        if (!tesi_integral_within(value, 0, UINT8_MAX)) return false;
        STORE(uint8_t, value);
        return true;
    case TES_I16:
        if (!tesi_integral_within(value, INT16_MIN, INT16_MAX)) return false;
        STORE(int16_t, value);
        return true;
    case TES_U16:
        if (!tesi_integral_within(value, 0, UINT16_MAX)) return false;
        STORE(uint16_t, value);
        return true;
    case TES_I32:
        if (!tesi_integral_within(value, INT32_MIN, INT32_MAX)) return false;
        STORE(int32_t, value);
        return true;
    case TES_U32:
        if (!tesi_integral_within(value, 0, UINT32_MAX)) return false;
        STORE(uint32_t, value);
        return true;
    }
#undef STORE
    return false;
}

/* ---- arrays by entity index (paged.c) ------------------------------------------------------ */

/* Every array indexed by entity index (the entity table, the replicators' index stamps, sparse
 * maps, relation lists) is paged, as Flecs pages its entity index: a page of TESI_PAGE_SIZE
 * elements is allocated when an index in it is first reserved, and a page never allocated reads
 * as zeroed elements. So memory follows the indices in use, not the highest one (a replica sent
 * one entity at index 2^21 - 1 allocates one page, not 24 MiB), and an element never moves
 * once allocated (growing copies page pointers, never the elements). */
#define TESI_PAGE_BITS  10u
#define TESI_PAGE_SIZE  (1u << TESI_PAGE_BITS)
#define TESI_PAGE_MASK  (TESI_PAGE_SIZE - 1u)
#define TESI_PAGE_LIMIT (TESI_INDEX_LIMIT >> TESI_PAGE_BITS) /* pages an index can fall in */

typedef struct tesi_paged_t {
    uint8_t **pages;     /* by index >> TESI_PAGE_BITS; NULL: never allocated (reads as zeros) */
    uint32_t page_slots; /* length of pages */
    uint32_t page_count; /* pages allocated */
} tesi_paged_t;

/* Element `index` (of `elem` bytes), or NULL when its page was never allocated. */
static inline void *tesi_paged_find(const tesi_paged_t *p, uint32_t index, uint32_t elem) {
    uint32_t page = index >> TESI_PAGE_BITS;
    if (page >= p->page_slots || !p->pages[page]) return NULL;
    return p->pages[page] + (size_t)(index & TESI_PAGE_MASK) * elem;
}
/* Element `index` of a page known to be allocated (reserved before). */
static inline void *tesi_paged_at(const tesi_paged_t *p, uint32_t index, uint32_t elem) {
    return p->pages[index >> TESI_PAGE_BITS] + (size_t)(index & TESI_PAGE_MASK) * elem;
}
/* Pages of indices [first, end) not allocated yet. */
uint32_t tesi_paged_missing(const tesi_paged_t *p, uint32_t first, uint32_t end);
/* Grows the directory (only) to have a slot for every page of indices below `end`. */
tes_result_t tesi_paged_cover(tes_world_t *world, tesi_paged_t *p, uint32_t end);
/* Allocates (zeroed) every missing page of indices [first, end). On failure the pages it did
 * allocate stay (zeroed, as unallocated ones read). */
tes_result_t tesi_paged_reserve(tes_world_t *world, tesi_paged_t *p, uint32_t first, uint32_t end,
                                uint32_t elem);
void tesi_paged_fini(tes_world_t *world, tesi_paged_t *p, uint32_t elem);
/* Sorts n entity indices ascending, in O(n) through `spare` (n more): walking what changed in
 * index order walks the pages, and usually the rows, in order. */
void tesi_sort_indices(uint32_t *indices, uint32_t *spare, uint32_t n);

/* ---- components ------------------------------------------------------------------------ */

typedef struct tesi_field_t {
    char *name;
    tes_type_t type;
    uint32_t length; /* elements per entity */
    uint32_t bytes;  /* bytes per entity */
    uint32_t offset; /* in a row of sparse or pair data (fields one after another) */
    /* The component's TES_COMPONENT_CHANGE_BY_VALUE, beside the type that tes_set_number loads
     * anyway: testing it there costs a bit test, not a lookup of the component. */
    bool by_value;
} tesi_field_t;

/* Removals of one component, oldest first: parallel arrays, so a window of it is a plain
 * entity array. Ticks never decrease along the log. */
typedef struct tesi_removal_log_t {
    tes_entity_t *entities;
    uint64_t *ticks;
    uint32_t count;
    uint32_t slots;
} tesi_removal_log_t;

/* ---- sparse sets (sparse.c) ------------------------------------------------------------ */

#define TESI_SLOT_MASK   0x7FFFFFFFu
#define TESI_SLOT_LISTED 0x80000000u /* on slot_of: the index is on the dirty list */

/* The storage of a sparse component (and the membership of a relation's sources): a dense
 * array of members with their data rows and ticks, and a map from entity index to dense slot.
 * Removing swaps the last member into the hole. Ticks are stamped only while the component is
 * tracked, as for chunk rows. The dirty list holds entity indices, each once (TESI_SLOT_LISTED
 * on its slot_of entry, which outlives the membership, so an index is never listed twice);
 * readers check membership and ticks, pruning drops what every consumer saw. */
typedef struct tesi_sparse_t {
    tesi_paged_t slot_of; /* by entity index, uint32_t: dense slot + 1 (0: not a member) | LISTED */
    tes_entity_t *entities; /* members */
    uint8_t *data;          /* rows of the component's row_bytes; NULL when it has none */
    uint64_t *added;        /* per member */
    uint64_t *changed;      /* per member */
    uint32_t count;
    uint32_t slots;
    uint32_t *dirty; /* entity indices; as many slots as slot_of's pages hold, so listing never
                      * allocates */
    uint32_t dirty_count;
    uint32_t dirty_slots;
} tesi_sparse_t;

/* ---- relations (relation.c) --------------------------------------------------------------- */

/* The two lists a pair is on: its source's pairs (TESI_OUT, the targets of the source) and its
 * target's pairs (TESI_IN, the sources of the target). */
#define TESI_OUT 0
#define TESI_IN  1

/* One pair, on two doubly linked lists, one per side. Links are pair ids + 1 (0: none); ids are
 * stable while the pair lives, and freed ids are reused through a free list linked by
 * next[TESI_OUT]. */
typedef struct tesi_pair_t {
    tes_entity_t source; /* 0 while the id is free */
    tes_entity_t target;
    uint32_t next[2], prev[2]; /* by side */
    uint64_t changed; /* tick of the last data write: one changed event per pair per tick */
} tesi_pair_t;

/* The entity whose list of `side` the pair is on (the source for TESI_OUT), and the other end. */
static inline tes_entity_t tesi_pair_owner(const tesi_pair_t *p, int side) {
    return side == TESI_OUT ? p->source : p->target;
}
static inline tes_entity_t tesi_pair_other(const tesi_pair_t *p, int side) {
    return side == TESI_OUT ? p->target : p->source;
}

typedef struct tesi_list_t {
    uint32_t first, last; /* pair ids + 1 */
    uint32_t count;
} tesi_list_t;

typedef struct tesi_relation_t {
    tesi_pair_t *pairs;
    uint8_t *data; /* row_bytes per pair id */
    uint32_t pair_slots;
    uint32_t pair_used;    /* ids handed out so far */
    uint32_t pair_count;   /* live pairs */
    uint32_t free_pairs;   /* first free id + 1 */
    tesi_paged_t lists[2]; /* by side, by entity index, tesi_list_t: its pairs as a source / a
                            * target */
    /* Pair events, oldest first, while some query names the relation in pair_changes. */
    tes_pair_event_t *events;
    uint64_t *event_ticks;
    uint32_t event_count;
    uint32_t event_slots;
    uint32_t event_consumers;
} tesi_relation_t;

typedef struct tesi_component_t {
    char *name;
    uint32_t flags; /* TES_COMPONENT_* and TES_RELATION_* */
    tesi_field_t *fields;
    uint32_t field_count;
    uint32_t row_bytes;
    uint32_t stride; /* bytes of a sparse member's or a pair's row: fields aligned to their type */
    tes_tracking_t level;       /* from the consumers below (tracker.c) */
    uint32_t dirty_consumers;   /* queries whose first filter is this component */
    uint32_t tick_consumers;    /* queries that filter on it otherwise */
    uint32_t removal_consumers; /* queries that report its removals */
    tesi_removal_log_t log;
    /* Its trackers that hold dirty entries: filtered runs and pruning walk only these, so
     * their cost follows what changed, not how many chunks exist. Sized for every tracker of
     * the component, so listing one never allocates. */
    struct tesi_tracker_t **dirty_set;
    uint32_t dirty_set_count;
    uint32_t dirty_set_slots;
    uint32_t tracker_count;
    /* The floor its dirty lists (chunk and sparse) were last pruned to. Pruning to the same
     * floor again would walk them for nothing: what was listed since carries a newer tick (or
     * that very tick, kept harmlessly until the floor moves, as a run's window skips it). */
    uint64_t dirty_pruned_to;
    /* The tick of the latest stamp written in its chunk trackers or sparse set (added or
     * changed): none is above it, so a prune to a floor at or past it drops every listed row
     * without reading a stamp (after a consumer's run when nothing was written since it started,
     * after a checkpoint's). */
    uint64_t stamped;
    tesi_sparse_t sparse;     /* sparse components and relations */
    tesi_relation_t relation; /* relations */
} tesi_component_t;

#define TESI_OFF_CHUNK (TES_COMPONENT_SPARSE | TES_COMPONENT_RELATION)

/* True for a component stored outside chunks (a sparse component or a relation). */
static inline bool tesi_is_sparse(const tesi_component_t *c) {
    return (c->flags & TESI_OFF_CHUNK) != 0;
}
static inline bool tesi_is_relation(const tesi_component_t *c) {
    return (c->flags & TES_COMPONENT_RELATION) != 0;
}

/* ---- archetypes and chunks ------------------------------------------------------------- */

typedef struct tesi_archetype_t tesi_archetype_t;

/* One field column inside a chunk block. An archetype's columns are sorted by (component,
 * field), so two archetypes can be matched column by column in one merge walk. */
typedef struct tesi_column_t {
    uint32_t offset; /* from the start of the block; 16-byte aligned */
    uint32_t bytes;  /* per entity */
    uint32_t key;    /* component << 8 | field (fields < 256): the sort order */
} tesi_column_t;

/* Where one destination cell of a row gets its data. */
typedef struct tesi_move_t {
    uint32_t dst_offset;
    uint32_t src_offset; /* TESI_NEW_COLUMN: the source lacks it, the cell is zeroed */
    uint32_t bytes;
} tesi_move_t;

#define TESI_NEW_COLUMN 0xFFFFFFFFu

/* How a row's cells go from one chunk layout to another: an edge's move (computed once per
 * cached edge) or an archetype's own layout (swap-remove). The cells are grouped by size: n4 of
 * 4 bytes, then n8 of 8, then `other` of other sizes, then `zero` destination cells the source
 * lacks. A row then moves in fixed-size copies with its byte offset computed once per group,
 * instead of a multiply and a size test per cell (callgrind: 8 instructions a 4-byte cell
 * against 26 for the per-column walk). One allocation: this header, then the moves. */
typedef struct tesi_move_plan_t {
    uint16_t n4, n8, other, zero;
    /* 1 when any cell is past the 4-byte group (n8, other or zero): one test for a row of
     * 4-byte fields, the common one, where three loads and two ors were (4 instructions a row). */
    uint16_t wide;
    tesi_move_t moves[];
} tesi_move_plan_t;

/* A cached transition from an archetype by one component: "+C" when the archetype lacks C,
 * "-C" when it has it (membership says which, so one slot per component id suffices). */
typedef struct tesi_edge_t {
    tesi_archetype_t *target; /* NULL: not cached yet */
    tesi_move_plan_t *plan;   /* NULL when its memory could not be had: the general copy */
} tesi_edge_t;

/* Component ids below this have flat per-archetype tables (type index, edges): one load, and
 * a small world's ids are all below it. Ids above are searched (the set, sorted) or hashed
 * (edges), so an archetype's memory follows its own components and cached edges, not the
 * number of types the world knows (a world of 4,000 types). */
#define TESI_DIRECT_IDS 64u
#define TESI_FAR_EMPTY  0xFFFFFFFFu

/* An edge by a component id >= TESI_DIRECT_IDS, in an archetype's open-addressing table. */
typedef struct tesi_far_edge_t {
    tes_component_t component; /* TESI_FAR_EMPTY: a free slot */
    tesi_edge_t edge;
} tesi_far_edge_t;

/* Change tracker of one component in one chunk (tracker.c). One allocation: this header, then
 * the arrays, all sized by the archetype's capacity. A row's dirty bit is set exactly when the
 * row is in the dirty list; entries may be stale (row vacated or ticks already seen), which
 * readers filter by ticks and pruning removes. */
typedef struct tesi_tracker_t {
    struct tesi_chunk_t *chunk;
    tes_component_t component;
    uint32_t listed_at; /* position in the component's dirty_set, or TESI_UNLISTED */
    uint64_t *added;    /* per row: tick the component was added (0 = never) */
    uint64_t *changed;  /* per row: tick it was last changed (0 = never) */
    uint64_t *bits;     /* dirty bitmap */
    uint32_t *dirty;    /* dirty rows, each once */
    uint32_t dirty_count;
    uint32_t bytes; /* of the allocation */
} tesi_tracker_t;

#define TESI_UNLISTED 0xFFFFFFFFu

typedef struct tesi_chunk_t {
    uint8_t *data;             /* the block; entity column at offset 0 */
    tesi_tracker_t **trackers; /* by position in the archetype's set; NULL when none tracked */
    tesi_archetype_t *archetype;
    uint32_t count; /* rows 0 .. count-1 are occupied */
    uint32_t index; /* position in archetype->chunks */
    uint32_t visit; /* while a run's rows are grouped (query.c): its visit + 1; else 0 */
    uint32_t block_bytes;
} tesi_chunk_t;

struct tesi_archetype_t {
    tes_archetype_t id;
    uint64_t hash; /* of the sorted component set */
    tes_component_t *components;
    uint32_t component_count;
    uint16_t *type_index;   /* by component id < lookup_length: position in components */
    uint32_t lookup_length; /* highest member id below TESI_DIRECT_IDS + 1 (0: none) */
    uint16_t *first_column; /* by position in components: its first column */
    tesi_column_t *columns;
    uint32_t column_count;
    uint32_t capacity;      /* rows per chunk */
    uint32_t block_bytes;   /* world->chunk_bytes, or larger for very wide rows */
    tesi_move_plan_t *self; /* its own layout: the swap-remove copy of a row */
    tesi_chunk_t **chunks;
    uint32_t chunk_count;
    uint32_t chunk_slots; /* allocated length of chunks */
    uint32_t entity_count;
    tesi_edge_t *edges; /* by component id < edge_slots (<= TESI_DIRECT_IDS): flat, no hashing */
    uint32_t edge_slots;
    tesi_far_edge_t *far_edges; /* ids >= TESI_DIRECT_IDS: open addressing by id */
    uint32_t far_slots;         /* a power of two, or 0 */
    uint32_t far_count;
    uint32_t tracked_count; /* components of the set tracked at all: 0 = no tracker work */
    uint32_t plan;          /* during an item call (items.c): its plan entry + 1, else 0 */
    uint32_t value_bytes;   /* a row's values as rollback images pack them: the strides' sum */
};

/* ---- entity table ---------------------------------------------------------------------- */

typedef struct tesi_record_t {
    tesi_chunk_t *chunk; /* NULL while the index is free */
    uint32_t row;        /* while free: the next index in the free queue (0 = none) */
    /* The low TES_GENERATION_BITS; above them, while a run is live, the first command it
     * recorded that adds to this placed entity (TESI_RECORDED_SHIFT). Read through
     * tesi_generation. */
    uint32_t generation;
} tesi_record_t;

/* While a run is live, a placed entity's record notes in the high bits of its generation word
 * the first command the run recorded that adds a component to it: its index + 1, or
 * TESI_RECORDED_MAX when that is at or past TESI_RECORDED_MAX - 1 (still a bound: commands only
 * append). A write to the entity then knows whether recorded commands may touch what it writes, and
 * where they start, without scanning the whole buffer (tesi_recorded); and a host that reads the
 * entity table directly, comparing the whole word with a handle's generation, misses such an entity
 * and asks the core. tesi_flush clears the notes before it applies anything. */
#define TESI_RECORDED_SHIFT TES_GENERATION_BITS
#define TESI_RECORDED_MAX   ((1u << (32u - TESI_RECORDED_SHIFT)) - 1u)
static inline uint32_t tesi_generation(const tesi_record_t *record) {
    return record->generation & TESI_GENERATION_MASK;
}

/* ---- archetype graph (graph.c) --------------------------------------------------------- */

typedef struct tesi_graph_t {
    uint32_t *types;     /* archetype id + 1 per slot, 0 = empty; probed by set hash */
    uint32_t type_slots; /* power of two */
    uint32_t edge_count; /* cached transitions, over all archetypes */
    uint32_t generation; /* bumped on every new archetype */
} tesi_graph_t;

/* ---- item lists (items.c) ----------------------------------------------------------------- */

/* One source archetype of an item call: the entities of the call in it move to `to`. */
typedef struct tesi_plan_t {
    tesi_archetype_t *from, *to;
    const tesi_move_plan_t *moves; /* the edge's plan when one component differs, else NULL */
    uint32_t rows;                 /* the call's entities in `from` */
} tesi_plan_t;

/* Scratch of item calls, kept by the world so that a steady game allocates nothing per call. */
typedef struct tesi_edit_t {
    uint32_t *seen; /* by component id: the epoch of the call that listed it */
    uint32_t seen_slots;
    uint32_t epoch;
    tes_component_t *table; /* the call's chunk components, sorted */
    uint32_t table_slots;
    uint32_t *pairs; /* the call's pair items, sorted; twice the items, for the merge sort */
    uint32_t pair_slots;
    uint8_t *had; /* by item: the entity had it before the call */
    uint32_t had_slots;
    tesi_plan_t *plans;
    uint32_t plan_count;
    uint32_t plan_slots;
    tes_entity_t *entities; /* handles of a spawn whose caller wants none; a query's matches */
    uint32_t entity_slots;
} tesi_edit_t;

void tesi_edit_fini(tes_world_t *world);
/* A recorded item call's items and values (TESI_CMD_ITEMS data), as a tes_items_t. */
void tesi_items_view(const uint8_t *blob, tes_items_t *out);
/* What a recorded item call of this kind does to the items it names: 1 adds them, 0 removes
 * them, -1 neither (writes). */
int tesi_items_effect(uint32_t kind);
/* Applies a recorded item call (kind: items.c's edit_t) to one entity, at the flush: the
 * entity at `position` of the recorded call's list (values with a stride take its numbers). */
tes_result_t tesi_items_apply(tes_world_t *world, uint32_t kind, tes_entity_t entity,
                              uint32_t position, const tes_items_t *items);
/* Writes a recorded spawn's initial values (its command data, items of chunk components only,
 * checked when recorded) to the entity its spawn command has just placed, at `position` of the
 * recorded call's list. */
void tesi_items_init(tes_world_t *world, tes_entity_t entity, uint32_t position,
                     const uint8_t *blob);

/* ---- world ----------------------------------------------------------------------------- */

struct tes_world_t {
    tes_allocator_t allocator;
    uint64_t bytes_allocated;
    uint32_t chunk_bytes;
    uint32_t min_free;

    /* Moves only when a component is registered. */
    tesi_component_t *components;
    uint32_t component_count;
    uint32_t component_slots;
    /* Bumped whenever what the bindings keep between calls may be stale: a component
     * registered or taken back (ids, and this array's address), a component's tracking level
     * changed, an archetype freed (its address or id may come back with another layout). While
     * it holds, JS addresses cells with what it learned and writes untracked ones itself
     * (access.ts), and keeps its spawn plan and chunk column offsets (entities.ts, chunk.ts). */
    uint32_t access_epoch;

    /* An archetype keeps its address and layout while it lives (see access_epoch). */
    tesi_archetype_t **archetypes; /* by id; NULL: reclaimed (tes_archetypes_reclaim) */
    uint32_t archetype_count;
    uint32_t archetypes_reclaimed; /* ids whose archetype was freed */
    uint32_t archetype_slots;
    /* A byte of scratch by archetype id, reserved before each archetype is made: a call that
     * made archetypes and then failed frees them with no allocation (tesi_archetypes_undo). */
    uint8_t *undo_marks;
    uint32_t undo_mark_slots;
    tesi_graph_t graph;

    tesi_paged_t records;  /* by entity index, tesi_record_t; index 0 is never used */
    uint32_t record_count; /* indices handed out so far, + 1 for index 0 */
    uint32_t free_tail;    /* FIFO of despawned indices, linked through record.row */
    uint32_t free_head;
    uint32_t free_length;
    /* Indices below record_count that a delta jumped over (tesi_spawn_at): neither live nor
     * queued; their records are unallocated or carry TESI_ROW_SKIPPED. */
    uint32_t skipped_count;
    uint32_t entity_count;

    tesi_chunk_t **pool; /* empty standard chunks; as long as all chunks ever made */
    uint32_t pool_count;
    uint32_t pool_slots;
    uint32_t chunk_count; /* chunks that hold entities */
    uint32_t chunks_made; /* standard chunks alive (in use or pooled) */

    tes_component_t *scratch; /* a sorted component set being built */
    uint32_t scratch_slots;
    /* The last component list spawned by tes_spawn / tes_spawn_batch as the caller wrote it,
     * or by tes_spawn_items (its chunk components, sorted), and its archetype (chunk components
     * only): a game spawns a few lists over and over, and
     * a hit skips sorting, checking, hashing and probing. Reclaiming archetypes clears it, and
     * the ids of a set in use are never taken back, so it cannot go stale. */
    struct {
        tes_component_t ids[TESI_SPAWN_CACHE_IDS];
        uint32_t count;
        tesi_archetype_t *archetype; /* NULL: empty */
    } spawn_cache;

    /* Sparse components and relations, in id order: what a despawn looks at besides the row
     * (sparse_count 0: nothing), without a walk over every component. */
    tes_component_t *sparse_ids;
    uint32_t sparse_count;
    uint32_t sparse_slots;
    uint32_t relation_count; /* relations among them */
    uint32_t *doomed;        /* entity indices a despawn takes along (relation.c) */
    uint32_t doomed_slots;
    uint8_t *snapshot; /* the latest tes_snapshot (snapshot.c) */
    uint32_t snapshot_slots;
    /* The free queue's links are out of date (a delta placed entities at free indices): it is
     * rebuilt, in index order, before it is next used (tesi_free_queue). */
    bool free_stale;

    /* Replication (replicator.c, replica.c). While replicators exist, every spawn and despawn
     * stamps its index with the change tick, and lists the index once (TESI_INDEX_LISTED on its
     * tick) on index_dirty, which pruning trims: the entity part of a delta in O(changed). The
     * stamps have a page for every page of records, and index_dirty a slot for every index of them,
     * so stamping never allocates. */
    struct tes_replicator_t **replicators;
    uint32_t replicator_count;
    uint32_t replicator_slots;
    bool index_stamping;
    tesi_paged_t index_ticks; /* uint64_t */
    uint32_t *index_dirty;
    uint32_t index_dirty_count;
    uint32_t index_dirty_slots;
    uint64_t replica_tick;   /* the source tick of the last delta applied here */
    uint32_t replica_source; /* its source (tes_replicator_desc_t.source); 0: none yet */
    uint32_t
        replicators_made; /* tells the sources this world makes apart (tes_replicator_create) */
    /* The source's component ids, as the last keyframe named them: the id here of each
     * (UINT32_MAX: not replicated), and the CRC of that schema section, which deltas repeat. */
    uint32_t *replica_ids;
    uint32_t replica_id_count;
    uint32_t replica_schema;
    /* The fields that keyframe said travel quantized, by (source id, field) (delta.h). */
    struct tesi_quantum_t *replica_quanta;
    uint32_t replica_quantum_count;

    /* Bumped whenever rows or chunks move (tes_world_layout): a plain query's chunk list is
     * unchanged while it holds. */
    uint32_t layout;

    uint64_t change_tick;       /* stamped on writes; advanced by every consumer run */
    uint32_t logged_components; /* components with removal consumers: 0 = no logging work */
    uint64_t frame;             /* tes_tick calls */
    tes_query_t **queries;
    uint32_t query_count;
    uint32_t query_slots;

    /* Deferred structural commands (commands.c), while iterations are live. */
    uint32_t defer_depth;
    /* A consumer's run ended: the history every consumer has seen is pruned once no run is
     * live (a live run may hold pointers into the logs that pruning moves). */
    bool prune_due;
    struct tesi_command_t *commands;
    uint32_t command_count;
    uint32_t command_slots;
    /* The records the live run noted an add on (TESI_RECORDED_SHIFT), for the flush to clear:
     * noted_slots >= command_slots, as each is noted at a command of its own, so a host that
     * records an add within command_slots has room to list its record. */
    tesi_record_t **noted_records;
    uint32_t noted;
    uint32_t noted_slots;
    uint8_t *command_data; /* raw values of deferred tes_set calls */
    uint32_t command_data_size;
    uint32_t command_data_slots;
    uint32_t commands_skipped;
    /* The allocator's next indices, taken while deferring for spawns the host records itself
     * (tes_defer_handouts): [handout_next, handout_count) wait, in the order the allocator
     * gave them; the core's own deferred spawns take them first, and the flush gives back the
     * ones left, so the indices spawns get are the same with or without them. */
    uint32_t handouts[TESI_HANDOUTS];
    uint64_t handouts_fresh; /* bit i: handouts[i] was a fresh index (record_count grew) */
    uint32_t handout_count;
    uint32_t handout_next;
    tesi_edit_t edit; /* item calls' scratch (items.c) */

    /* Rollback (checkpoint.c, rewind.c): NULL until the first checkpoint. */
    struct tesi_rollback_t *rollback;
    uint32_t checkpoint_depth; /* checkpoints kept (tes_world_desc_t) */

    /* Stages and systems (system.c). */
    char **stage_names;
    uint32_t stage_count;
    uint32_t stage_slots;
    tes_system_t **systems;
    uint32_t system_count;
    uint32_t system_slots;
};

/* ---- world.c: memory ------------------------------------------------------------------- */

void *tesi_alloc(tes_world_t *world, size_t size);
void tesi_free(tes_world_t *world, void *ptr, size_t size);
/* The spawn cache's archetype for this list of chunk components as written, or NULL. */
static inline tesi_archetype_t *
tesi_spawn_cached(const tes_world_t *world, const tes_component_t *components, uint32_t count) {
    tesi_archetype_t *a = world->spawn_cache.archetype;
    if (!a || count != world->spawn_cache.count || (count && !components)) return NULL;
    /* A few ids compared inline: a memcmp call cost more than the compares. */
    for (uint32_t i = 0; i < count; i++) {
        if (components[i] != world->spawn_cache.ids[i]) return NULL;
    }
    return a;
}
/* Notes a list of chunk components (as written) and its archetype in the spawn cache. */
static inline void tesi_spawn_remember(tes_world_t *world, const tes_component_t *components,
                                       uint32_t count, tesi_archetype_t *a) {
    if (count > TESI_SPAWN_CACHE_IDS) return;
    if (count) memcpy(world->spawn_cache.ids, components, count * sizeof *components);
    world->spawn_cache.count = count;
    world->spawn_cache.archetype = a;
}
/* tesi_reserve's growth, when the array is too small. */
tes_result_t tesi_reserve_grow(tes_world_t *world, void **array, uint32_t *slots, uint32_t needed,
                               size_t elem, uint32_t minimum);
/* Makes `*array` hold at least `needed` elements of `elem` bytes (doubling, from `minimum`).
 * On failure nothing changes. Inline: nearly every call finds room, and answers in a compare. */
static inline tes_result_t tesi_reserve(tes_world_t *world, void **array, uint32_t *slots,
                                        uint32_t needed, size_t elem, uint32_t minimum) {
    if (needed <= *slots) return TES_OK;
    return tesi_reserve_grow(world, array, slots, needed, elem, minimum);
}

/* ---- component.c ----------------------------------------------------------------------- */

void tesi_components_fini(tes_world_t *world);
/* The schema of field `field` of a registered component (the caller checked the id): the two
 * checks every field access makes, in their order, so each error code has one source. */
static inline tes_result_t tesi_field_of(const tesi_component_t *c, uint32_t field,
                                         const tesi_field_t **out) {
    if (!c->field_count) return TES_ERR_TAG_HAS_NO_DATA;
    if (field >= c->field_count) return TES_ERR_UNKNOWN_FIELD;
    *out = &c->fields[field];
    return TES_OK;
}
/* The checks of tes_component_register on a description alone (TES_ERR_BAD_SCHEMA). */
tes_result_t tesi_check_schema(const tes_component_desc_t *desc);
/* Copies `components` into world->scratch sorted ascending; rejects unknown ids and duplicates. */
tes_result_t tesi_sort_set(tes_world_t *world, const tes_component_t *components, uint32_t count);

/* ---- entity.c -------------------------------------------------------------------------- */

#define TESI_INDEX_LISTED (1ull << 63) /* on index_ticks: the index is on index_dirty */

/* A spawn or despawn at the index, for replicators (nothing when there are none). */
static inline void tesi_index_stamp(tes_world_t *world, uint32_t index) {
    if (!world->index_stamping) return;
    uint64_t *tick = tesi_paged_at(&world->index_ticks, index, sizeof *tick);
    if (!(*tick & TESI_INDEX_LISTED)) world->index_dirty[world->index_dirty_count++] = index;
    *tick = world->change_tick | TESI_INDEX_LISTED;
}
/* Starts (true) or stops stamping indices; starting allocates and may fail. */
tes_result_t tesi_index_ticks(tes_world_t *world, bool on);
/* Drops the listed indices stamped at or before `min`. */
void tesi_index_prune(tes_world_t *world, uint64_t min);
/* Brings the free queue's links up to date after a delta placed entities (see free_stale). */
void tesi_free_queue(tes_world_t *world);
/* Spawns `handle` at its index with the components (zeroed, stamped added), as tes_spawn would
 * spawn a new entity: the index must be free, skipped or beyond the table (the indices in
 * between become skipped: a delta's source may place entities there later, so this world's own
 * spawns never take them). All or nothing. */
tes_result_t tesi_spawn_at(tes_world_t *world, tes_entity_t handle,
                           const tes_component_t *components, uint32_t count);

static inline tes_entity_t tesi_make_handle(uint32_t index, uint32_t generation) {
    return index | (generation << TES_INDEX_BITS);
}

/* True when the core's writes to the component are changes only where they change its bytes
 * (TES_COMPONENT_CHANGE_BY_VALUE). */
static inline bool tesi_by_value(const tes_world_t *world, tes_component_t component) {
    return (world->components[component].flags & TES_COMPONENT_CHANGE_BY_VALUE) != 0;
}

/* The record of an index whose page is allocated: every index that is or was live, pending
 * or queued (only skipped ones may lack a page). */
static inline tesi_record_t *tesi_record_at(const tes_world_t *world, uint32_t index) {
    return (tesi_record_t *)tesi_paged_at(&world->records, index, sizeof(tesi_record_t));
}
/* The record of an index, or NULL when its page was never allocated (a skipped index). */
static inline tesi_record_t *tesi_record_find(const tes_world_t *world, uint32_t index) {
    return (tesi_record_t *)tesi_paged_find(&world->records, index, sizeof(tesi_record_t));
}

/* The record of a live entity, or NULL for anything else (0, stale, never spawned). Record 0
 * is never live, so handle 0 needs no test of its own; the directory has a slot for every page
 * below record_count (tesi_paged_cover), so one load finds the page. */
static inline tesi_record_t *tesi_record_of(const tes_world_t *world, tes_entity_t entity) {
    uint32_t index = entity & TESI_INDEX_MASK;
    if (index >= world->record_count) return NULL;
    uint8_t *page = world->records.pages[index >> TESI_PAGE_BITS];
    if (!page) return NULL;
    tesi_record_t *record = (tesi_record_t *)(void *)page + (index & TESI_PAGE_MASK);
    if (!record->chunk || tesi_generation(record) != (entity >> TES_INDEX_BITS)) return NULL;
    return record;
}
/* Notes that the live run recorded command `i`, which adds a component, for `entity` when it is
 * placed (TESI_RECORDED_SHIFT); the first such command is the bound. Adds alone:
 * a write must follow the last add of its component, and a remove or despawn recorded after
 * that add is after the bound too. */
static inline void tesi_note_add_record(tes_world_t *world, tesi_record_t *record, uint32_t i) {
    if (record->generation >> TESI_RECORDED_SHIFT) return;
    uint32_t first = i < TESI_RECORDED_MAX - 1 ? i + 1 : TESI_RECORDED_MAX;
    record->generation |= first << TESI_RECORDED_SHIFT;
    world->noted_records[world->noted++] = record;
}
static inline void tesi_note_add_at(tes_world_t *world, tes_entity_t entity, uint32_t i) {
    tesi_record_t *record = tesi_record_of(world, entity);
    if (record) tesi_note_add_record(world, record, i);
}
/* Whether an index below record_count is skipped (see skipped_count). */
static inline bool tesi_index_skipped(const tes_world_t *world, uint32_t index) {
    const tesi_record_t *record = tesi_record_find(world, index);
    return !record || (record->row & TESI_ROW_SKIPPED);
}
void tesi_entities_fini(tes_world_t *world);

/* ---- checkpoint.c, rewind.c: rollback ---------------------------------------------------- */

typedef struct tesi_rollback_t tesi_rollback_t;
void tesi_rollback_touch(tesi_rollback_t *rb, uint32_t index);
/* While checkpoints are kept: notes that the index's record, row, sparse slots or pairs are
 * changing (before or after the change: the state a checkpoint keeps comes from its shadow).
 * Every place that changes them calls it; nothing when no checkpoint was taken. Never allocates:
 * every index with a record page has room (tesi_rollback_table). */
static inline void tesi_touch(tes_world_t *world, uint32_t index) {
    if (world->rollback) tesi_rollback_touch(world->rollback, index);
}
/* Room to touch the indices [first, end) (the entity table grows its pages). */
tes_result_t tesi_rollback_table(tes_world_t *world, uint32_t first, uint32_t end);
/* Drops every checkpoint (reclaiming archetypes, tes_rollback_stop). */
void tesi_rollback_forget(tes_world_t *world);
/* A component is being registered with id `c`: room for it in the checkpoints' arrays (then
 * tesi_rollback_add_component, once it is). */
tes_result_t tesi_rollback_reserve_component(tes_world_t *world, tes_component_t c);
void tesi_rollback_add_component(tes_world_t *world);
void tesi_rollback_drop_component(tes_world_t *world, tes_component_t c);
/* tes_component_unregister: takes back the latest registration when nothing uses it (no
 * archetype, member, pair, consumer, query or replica mapping); false, nothing changed, else. */
bool tesi_component_take_back(tes_world_t *world, tes_component_t component);
/* A rewind's parts in other files. Room for `adds` pairs and `events` pair events. */
tes_result_t tesi_pairs_restore_reserve(tes_world_t *world, tes_component_t relation, uint64_t adds,
                                        uint64_t events);
/* Removes the index's pairs as a source but those of `source` (the image's handle; 0: none)
 * whose target is among `outs` (a checkpoint's image: n x (u32 target, the relation's data)),
 * with removed events, and a change of the relation for a member that lost one. */
void tesi_pairs_keep(tes_world_t *world, tes_component_t relation, uint32_t index,
                     tes_entity_t source, const uint8_t *outs, uint32_t n);
/* Adds the image's pairs the source lacks, writes their data, and orders its targets as the
 * image does (added and changed events; a change of the relation for the source). */
void tesi_pairs_put(tes_world_t *world, tes_component_t relation, tes_entity_t source,
                    const uint8_t *outs, uint32_t n);
/* Orders the target's sources as `ins` (n handles) does (moved events); all are its sources. */
void tesi_pairs_order_sources(tes_world_t *world, tes_component_t relation, tes_entity_t target,
                              const uint8_t *ins, uint32_t n);
/* Stamps a sparse member added (or changed) as a write would. */
void tesi_sparse_stamp(tes_world_t *world, tes_component_t component, uint32_t slot, bool added);
/* Frees the archetypes with ids from `count` on (all empty) and makes count the next id;
 * `doomed` has a byte per archetype id. */
void tesi_archetypes_truncate(tes_world_t *world, uint32_t count, uint8_t *doomed);
/* A call that made archetypes (ids from `count` on) and then failed frees them again, with no
 * allocation, so that the world is as it was (and a registration the call made can be taken
 * back). */
void tesi_archetypes_undo(tes_world_t *world, uint32_t count);
/* Queries forget that they saw archetypes from id `count` on. */
void tesi_queries_unsee(tes_world_t *world, uint32_t count);
/* Checkpoints kept and the bytes they and the shadow hold (tes_world_stats). */
void tesi_rollback_stats(const tes_world_t *world, uint32_t *count, uint64_t *ring_bytes,
                         uint64_t *shadow_bytes);

/* ---- archetype.c ----------------------------------------------------------------------- */

/* Whether an archetype of the sorted set could be made: TES_ERR_ROW_TOO_LARGE when its rows are
 * too wide for any block. Nothing is allocated. */
tes_result_t tesi_archetype_fits(const tes_world_t *world, const tes_component_t *set,
                                 uint32_t count);
/* The archetype of the set in world->scratch[0..count-1] (sorted), created if missing. */
tes_result_t tesi_archetype_ensure(tes_world_t *world, uint32_t count, tesi_archetype_t **out);
/* tes_archetypes_reclaim's parts, for the archetypes whose ids are marked in `doomed`: the
 * graph drops the edges leading to them and its map of sets forgets them (graph.c); queries
 * drop them from their matches (query.c). Neither allocates. */
void tesi_graph_forget(tes_world_t *world, const uint8_t *doomed);
void tesi_queries_forget(tes_world_t *world, const uint8_t *doomed);
void tesi_archetypes_fini(tes_world_t *world);
/* Position of `component` in the archetype's set, or TESI_NO_TYPE. */
uint32_t tesi_type_search(const tesi_archetype_t *archetype, tes_component_t component);
static inline uint32_t tesi_type_index(const tesi_archetype_t *archetype,
                                       tes_component_t component) {
    if (component < archetype->lookup_length) return archetype->type_index[component];
    /* Above the flat index: absent when past the set's last member (one compare), else a
     * binary search of the set (worlds with many types). */
    uint32_t n = archetype->component_count;
    if (component < TESI_DIRECT_IDS || !n || component > archetype->components[n - 1]) {
        return TESI_NO_TYPE;
    }
    return tesi_type_search(archetype, component);
}
/* The archetype's cached edge by `component`, NULL when none is cached. */
tesi_edge_t *tesi_far_edge(const tesi_archetype_t *archetype, tes_component_t component);
static inline tesi_edge_t *tesi_edge_of(const tesi_archetype_t *archetype,
                                        tes_component_t component) {
    if (component < archetype->edge_slots) {
        tesi_edge_t *edge = &archetype->edges[component];
        return edge->target ? edge : NULL;
    }
    return archetype->far_count ? tesi_far_edge(archetype, component) : NULL;
}
/* The column of field `field` of the component at position `type` in the archetype's set. */
static inline const tesi_column_t *tesi_column_of(const tesi_archetype_t *archetype, uint32_t type,
                                                  uint32_t field) {
    return &archetype->columns[archetype->first_column[type] + field];
}
/* Room for tesi_archetype_move_all(from, to): after it, the move cannot fail. */
tes_result_t tesi_archetype_move_reserve(tes_world_t *world, tesi_archetype_t *from,
                                         tesi_archetype_t *to);
/* Moves every entity of `from` into `to` (which differs by one component). */
tes_result_t tesi_archetype_move_all(tes_world_t *world, tesi_archetype_t *from,
                                     tesi_archetype_t *to);

/* ---- chunk.c --------------------------------------------------------------------------- */

static inline tes_entity_t *tesi_chunk_entities(const tesi_chunk_t *chunk) {
    return (tes_entity_t *)(void *)chunk->data;
}
static inline uint8_t *tesi_cell(const tesi_chunk_t *chunk, const tesi_column_t *column,
                                 uint32_t row) {
    return chunk->data + column->offset + (size_t)row * column->bytes;
}
/* Copies one cell. Single rows are the hot case (every add, remove and swap-remove, a rewind's
 * rows): most fields are 4 bytes, which becomes one load and one store. */
static inline void tesi_copy_cell(uint8_t *dst, const uint8_t *src, uint32_t bytes) {
    if (bytes == 4) {
        memcpy(dst, src, 4);
    } else if (bytes == 8) {
        memcpy(dst, src, 8);
    } else {
        memcpy(dst, src, bytes);
    }
}
/* Appends one empty chunk to the archetype from the pool when nothing else is needed (no
 * tracker, a standard block, room in its chunk list); false otherwise (tesi_chunks_reserve). */
bool tesi_chunk_add_pooled(tes_world_t *world, tesi_archetype_t *archetype);
/* Makes room for `rows` more entities in the archetype: allocates (or takes from the pool)
 * every chunk needed and appends the empty ones to its list. All or nothing. */
tes_result_t tesi_chunks_grow(tes_world_t *world, tesi_archetype_t *archetype, uint32_t rows);
/* Room for `rows` more rows in the archetype's chunks: inline when its chunks have it already
 * (the common single spawn or move, without a call), else tesi_chunks_grow (chunk.c). */
static inline tes_result_t tesi_chunks_reserve(tes_world_t *world, tesi_archetype_t *archetype,
                                               uint32_t rows) {
    if ((uint64_t)archetype->chunk_count * archetype->capacity - archetype->entity_count >= rows) {
        return TES_OK;
    }
    return tesi_chunks_grow(world, archetype, rows);
}
/* Takes up to `want` consecutive free rows of the first non-full chunk (after
 * tesi_chunks_reserve made room) and returns how many it took (at least 1). The caller fills
 * them. */
uint32_t tesi_chunk_take_rows(tes_world_t *world, tesi_archetype_t *archetype, uint32_t want,
                              tesi_chunk_t **out_chunk, uint32_t *out_row);
/* Copies `n` rows of every column `dst` shares with `src` (and the entities); zeroes dst
 * columns that src lacks; carries the rows' change tracking. Records are not touched. */
void tesi_copy_rows(tes_world_t *world, tesi_chunk_t *dst, uint32_t dst_row,
                    const tesi_chunk_t *src, uint32_t src_row, uint32_t n);
/* The plan that moves rows of `src` into the layout of `dst` (src == dst: the archetype's own
 * plan), or NULL when out of memory. Freed with tesi_move_plan_free. */
tesi_move_plan_t *tesi_move_plan_make(tes_world_t *world, const tesi_archetype_t *dst,
                                      const tesi_archetype_t *src);
void tesi_move_plan_free(tes_world_t *world, tesi_move_plan_t *plan);
void tesi_zero_rows(tesi_chunk_t *chunk, uint32_t row, uint32_t n);
/* Inline in src/row.h: one row's moves (tesi_move_row, tesi_remove_row), one row taken
 * (tesi_row_take), an emptied chunk given back (tesi_chunk_release, tesi_chunk_drop_last). */
/* Drops empty chunks at the end of the archetype's list (back to the pool). */
void tesi_chunks_trim(tes_world_t *world, tesi_archetype_t *archetype);
void tesi_chunk_destroy(tes_world_t *world, tesi_chunk_t *chunk);

/* ---- tracker.c: change tracking ---------------------------------------------------------- */

tes_result_t tesi_trackers_attach(tes_world_t *world, tesi_chunk_t *chunk);
void tesi_trackers_detach(tes_world_t *world, tesi_chunk_t *chunk);
/* New rows (spawn): added = now, changed = 0, listed when dirty-tracked. */
void tesi_trackers_stamp_added(tes_world_t *world, tesi_chunk_t *chunk, uint32_t row, uint32_t n);
/* Rows copied from src: ticks and dirty bits of the components both have; components only dst
 * has count as added now. */
void tesi_trackers_copy(tes_world_t *world, tesi_chunk_t *dst, uint32_t dst_row,
                        const tesi_chunk_t *src, uint32_t src_row, uint32_t n);
/* A row that was vacated: its ticks go back to 0 (its dirty entry, if any, becomes stale). */
void tesi_trackers_clear_row(tesi_chunk_t *chunk, uint32_t row);
void tesi_mark_changed(tes_world_t *world, tesi_chunk_t *chunk, uint32_t type, uint32_t row);
/* Marks rows[0..n-1] of the chunk changed (rows 0..n-1 when rows is NULL); one branch when the
 * component is untracked. */
void tesi_mark_rows(tes_world_t *world, tesi_chunk_t *chunk, uint32_t type, const uint32_t *rows,
                    uint32_t n);
/* Room for `n` more entries in the removal log of every component of the archetype that has
 * removal consumers (any archetype when NULL). */
tes_result_t tesi_logs_reserve(tes_world_t *world, const tesi_archetype_t *archetype, uint32_t n);
/* The same for one component (nothing when it has no removal consumers). */
tes_result_t tesi_log_reserve(tes_world_t *world, tes_component_t component, uint32_t n);
/* Logs of entries with ticks (removal logs, pair event logs) are parallel arrays, oldest first:
 * room for n more entries (all or nothing), and dropping the entries ticked <= min. */
tes_result_t tesi_ticked_reserve(tes_world_t *world, void **entries, size_t entry_bytes,
                                 uint64_t **ticks, uint32_t *slots, uint32_t count, uint64_t n);
void tesi_ticked_prune(void *entries, size_t entry_bytes, uint64_t *ticks, uint32_t *count,
                       uint64_t min);
static inline bool tesi_logging(const tes_world_t *world) {
    return world->logged_components > 0;
}
/* Logs the removal of every logged component of the archetype for entity e (after reserve). */
void tesi_log_removals(tes_world_t *world, const tesi_archetype_t *archetype, tes_entity_t e);
void tesi_log_removal(tes_world_t *world, tes_component_t component, tes_entity_t e);
/* Consumers came or went: recompute the component's tracking level and apply it. */
tes_result_t tesi_tracking_update(tes_world_t *world, tes_component_t component, bool reseed);
void tesi_prune(tes_world_t *world);
/* The part of tesi_prune for one component (its dirty lists and logs). */
void tesi_prune_component(tes_world_t *world, tes_component_t component);
tes_result_t tesi_trackers_validate(const tes_world_t *world, const tesi_chunk_t *chunk);
void tesi_logs_fini(tes_world_t *world);

/* ---- query.c, system.c, commands.c -------------------------------------------------------- */

void tesi_queries_fini(tes_world_t *world);
/* A run in two steps, for calls that reserve their output in between (tes_query_collect,
 * tes_query_apply). prepare does every check and allocation of tes_query_iter (QUERY_IN_USE,
 * matching, a filtered run's visits) without starting the run or changing anything
 * observable, and gives the exact number of rows the run will visit when out_rows is not NULL
 * (for an unfiltered run that costs a walk over the matched archetypes). start begins the
 * prepared run, as tes_query_iter does; it cannot fail. Nothing may happen in between but
 * allocations. */
tes_result_t tesi_query_prepare(tes_world_t *world, tes_query_t *q, uint64_t *out_rows);
void tesi_query_start(tes_world_t *world, tes_query_t *q, tes_iter_t *out_iter);
/* Whether the query's terms (all, none, any, row terms; not filters) hold for a live entity.
 * Refreshes the query's archetype matches, which may run out of memory. */
tes_result_t tesi_query_matches(tes_world_t *world, tes_query_t *q, tes_entity_t e, bool *out);
/* The query's component terms (all, none, any; row terms included) into out (up to capacity
 * ids), the number of them as the result. */
uint32_t tesi_query_terms(const tes_query_t *q, tes_component_t *out, uint32_t capacity);
/* Whether any term, filter, removed term or pair change of the query names the component. */
bool tesi_query_names(const tes_query_t *q, tes_component_t component);
/* Sets the query's last_run: what a consumer has seen, so what pruning may drop. */
void tesi_query_hold(tes_query_t *q, uint64_t last_run);
/* True for a consumer: a run uses up what it reports (filters, removed terms, pair changes). */
bool tesi_query_consumes(const tes_query_t *q);
/* True when the query has row terms (sparse components, relations, pairs): it may visit part of
 * an archetype. */
bool tesi_query_by_rows(const tes_query_t *q);
/* True when every archetype the query matches has the component (all, added, changed terms). */
bool tesi_query_requires(const tes_query_t *q, tes_component_t component);
/* The query's output array (valid until its next run), with room for n entities. */
tes_result_t tesi_query_output(tes_world_t *world, tes_query_t *q, uint64_t n, tes_entity_t **out);
void tesi_systems_fini(tes_world_t *world);
/* The lowest last_run of the queries that consume a component: as first filter, as removed
 * term, or as a pair_changes relation; UINT64_MAX when none. */
typedef enum tesi_consumer_t { TESI_FIRST_FILTER, TESI_REMOVED, TESI_PAIR_CHANGES } tesi_consumer_t;
uint64_t tesi_min_last_run(const tes_world_t *world, tes_component_t component,
                           tesi_consumer_t kind);
/* While iterations are live, structural calls go to the command buffer. */
static inline bool tesi_deferring(const tes_world_t *world) {
    return world->defer_depth > 0;
}
tes_result_t tesi_defer_spawn(tes_world_t *world, tesi_archetype_t *archetype, uint32_t n,
                              tes_entity_t *out_entities);
tes_result_t tesi_defer(tes_world_t *world, uint8_t kind, tes_entity_t entity, uint32_t a,
                        uint32_t b, uint32_t c, double value, const void *data, uint32_t size);
/* Room for n more commands (and `data` bytes of values) before recording a batch. */
tes_result_t tesi_commands_reserve(tes_world_t *world, uint32_t n, uint32_t data);
void tesi_flush(tes_world_t *world);
/* Ends one level of deferral (a run, or tes_defer_begin's scope). The last applies the recorded
 * commands, and prunes what every consumer has seen when a consumer's run ended meanwhile. */
void tesi_defer_end(tes_world_t *world);
/* Lifts the run reserve (tes_run_reserve) while a world's deferred commands apply, and puts it
 * back: world.c. The flush comes when the world's last run ends, so none of that world's views
 * is out, and a command must not be skipped for want of room the reserve held back (a flush
 * that grows memory detaches only views of another world's run still live around it). */
void tesi_reserve_lift(bool lift);
void tesi_commands_fini(tes_world_t *world);
/* A record reserved by a deferred spawn (not alive yet), or NULL. Its row holds
 * TESI_ROW_PENDING | the archetype it will have once the deferred commands so far apply. */
tesi_record_t *tesi_pending_record(const tes_world_t *world, tes_entity_t entity);
/* Why a handle names no live entity: pending (a deferred spawn) or stale. */
static inline tes_result_t tesi_not_alive(const tes_world_t *world, tes_entity_t entity) {
    return tesi_pending_record(world, entity) ? TES_ERR_PENDING_ENTITY : TES_ERR_STALE_ENTITY;
}
/* What the recorded commands do to an entity's component or pair (target 0: the component, or
 * any pair of a relation): 1 when the last of them adds it, 0 when it removes it (or despawns
 * the entity), -1 when none names it. A scan of the buffer, from a placed entity's first recorded
 * add (TESI_RECORDED_SHIFT; none noted: -1 at once). */
int tesi_recorded(const tes_world_t *world, tes_entity_t entity, tes_component_t component,
                  tes_entity_t target);
/* Whether a pending entity will have a sparse component once its recorded commands apply. */
static inline bool tesi_pending_sparse(const tes_world_t *world, tes_entity_t entity,
                                       tes_component_t component) {
    return tesi_recorded(world, entity, component, 0) == 1;
}
static inline tesi_archetype_t *tesi_pending_archetype(const tes_world_t *world,
                                                       const tesi_record_t *record) {
    return world->archetypes[record->row & ~(TESI_ROW_PENDING | TESI_ROW_MARK)];
}
/* The chunk of an archetype, checking both ids. */
tes_result_t tesi_chunk_lookup(const tes_world_t *world, tes_archetype_t archetype, uint32_t chunk,
                               tesi_chunk_t **out);
/* Spawns n zeroed entities into an archetype (recorded while deferring), all or nothing. */
tes_result_t tesi_spawn_rows(tes_world_t *world, tesi_archetype_t *archetype, uint32_t n,
                             tes_entity_t *out_entities);
/* Places a reserved entity (flush). */
tes_result_t tesi_spawn_reserved(tes_world_t *world, uint32_t index, tesi_archetype_t *archetype);
/* Places n pending entities in an archetype as one batch (flush): their handles at `first` and
 * every `stride` bytes on, each pending there (tesi_pending_record). Rows and handles end as n
 * tesi_spawn_reserved calls in that order would place them; all or nothing (OUT_OF_MEMORY
 * when the archetype's chunks cannot grow to hold them). */
tes_result_t tesi_spawn_pending(tes_world_t *world, tesi_archetype_t *archetype, uint32_t n,
                                const tes_entity_t *first, size_t stride);
/* Takes the index for a new entity (and gives its record), as tesi_entities_reserve planned. */
uint32_t tesi_take_index(tes_world_t *world, tesi_record_t **out_record);
/* Removes a live entity's row and frees its index (its pairs and sparse memberships are gone
 * already, and its removals' log room reserved). */
void tesi_despawn_record(tes_world_t *world, tesi_record_t *record);
/* Despawns every entity of an archetype as despawns one by one in row order would: the same
 * removals logged and indices freed, in that order; the rows go from the end, so none moves.
 * The removal logs' room is reserved, and the world has no sparse components or relations
 * (their despawns have more to do: tesi_despawn_all). */
void tesi_despawn_archetype(tes_world_t *world, tesi_archetype_t *archetype);
/* Frees an index (its record given): next generation, to the back of the free queue. */
void tesi_release_record(tes_world_t *world, tesi_record_t *record, uint32_t index);
static inline void tesi_release_index(tes_world_t *world, uint32_t index) {
    tesi_release_record(world, tesi_record_at(world, index), index);
}
/* Makes sure `n` more entities can get an index without allocating: TES_ERR_TOO_MANY_ENTITIES
 * past tesi_max_entities. */
tes_result_t tesi_entities_reserve(tes_world_t *world, uint32_t n);
/* Live and pending entities a world can hold: every index but min_free of them. */
static inline uint32_t tesi_max_entities(const tes_world_t *world) {
    return TESI_INDEX_LIMIT - 1 - world->min_free;
}
/* Marks the allocated records of indices [first, end) skipped (unallocated ones read so). */
void tesi_mark_skipped(tes_world_t *world, uint32_t first, uint32_t end);
/* Allocates the record pages of indices [first, end); indices of a new page below record_count
 * are marked skipped (as unallocated ones read). */
tes_result_t tesi_table_reserve(tes_world_t *world, uint32_t first, uint32_t end);
/* Indices in use: live and pending entities. */
static inline uint32_t tesi_indices_in_use(const tes_world_t *world) {
    return world->record_count - 1 - world->free_length - world->skipped_count;
}

enum tesi_command_kind {
    TESI_CMD_SPAWN,            /* entity (reserved), a = archetype; b = its position in the
                                * recorded call and data = initial values, when it has some */
    TESI_CMD_DESPAWN,          /* entity */
    TESI_CMD_ADD,              /* entity, a = component */
    TESI_CMD_REMOVE,           /* entity, a = component */
    TESI_CMD_SET,              /* entity, a = component, b = field, data */
    TESI_CMD_SET_NUMBER,       /* entity, a = component, b = field, c = element, value */
    TESI_CMD_INIT,             /* as TESI_CMD_SET, not a change (tes_init) */
    TESI_CMD_INIT_NUMBER,      /* as TESI_CMD_SET_NUMBER, not a change (tes_init_number) */
    TESI_CMD_ARCHETYPE_ADD,    /* a = archetype, b = component */
    TESI_CMD_ARCHETYPE_REMOVE, /* a = archetype, b = component */
    TESI_CMD_PAIR_ADD,         /* entity = source, a = relation, b = target */
    TESI_CMD_PAIR_REMOVE,      /* entity = source, a = relation, b = target */
    TESI_CMD_PAIR_INIT_NUMBER, /* as PAIR_ADD, c = field, d = element, value */
    TESI_CMD_ITEMS,            /* entity, a = the call's kind (items.c), data = its items */
    TESI_CMD_PAIR_PLACE,       /* entity = source, a = relation, b = target, c = before (0: last) */
};

/* 32 bytes: a command carries a number or bytes (SET, INIT, ITEMS), never both. A run's
 * recorded commands live in the C heap under the host's run reserve, so their size is how many
 * a loop body can record without memory growing. */
typedef struct tesi_command_t {
    uint8_t kind;
    tes_entity_t entity;
    uint32_t a, b, c, d;
    union {
        double value;
        struct {
            uint32_t data_offset, data_size;
        };
    };
} tesi_command_t;

/* ---- sparse.c -------------------------------------------------------------------------- */

/* Dense slot + 1 of the entity index in the set, 0 when it is not a member. */
static inline uint32_t tesi_sparse_slot(const tesi_sparse_t *s, uint32_t index) {
    const uint32_t *slot = tesi_paged_find(&s->slot_of, index, sizeof *slot);
    return slot ? *slot & TESI_SLOT_MASK : 0;
}
/* Applies `n` recorded adds (or removes) of one sparse component that is not a relation, in
 * order, the room reserved once; the commands that failed (dead entities) in *out_failed. False:
 * no room, nothing applied. */
bool tesi_sparse_apply_run(tes_world_t *world, tes_component_t component, bool removing,
                           const tesi_command_t *commands, uint32_t n, uint32_t *out_failed);
/* Room for `n` more members whose indices are in [first, end). */
tes_result_t tesi_sparse_reserve(tes_world_t *world, tes_component_t component, uint32_t n,
                                 uint32_t first, uint32_t end);
/* Makes the entity a member (zeroed data, stamped added) after tesi_sparse_reserve. */
void tesi_sparse_insert(tes_world_t *world, tes_component_t component, tes_entity_t e);
/* Takes a member out (logging the removal when logged; the log was reserved). */
void tesi_sparse_erase(tes_world_t *world, tes_component_t component, tes_entity_t e);
/* Stamps a member (dense slot) changed. */
void tesi_sparse_mark(tes_world_t *world, tes_component_t component, uint32_t slot);
/* tes_add / tes_remove of a sparse component (deferral included). */
tes_result_t tesi_sparse_step(tes_world_t *world, tes_entity_t entity, tes_component_t component,
                              bool removing);
void tesi_sparse_tracking(tes_world_t *world, tes_component_t component, tes_tracking_t old,
                          bool reseed);
void tesi_sparse_prune(tes_world_t *world, tes_component_t component, uint64_t min);
tes_result_t tesi_sparse_validate(const tes_world_t *world, tes_component_t component);
void tesi_sparse_fini(tes_world_t *world, tesi_component_t *c);

/* ---- relation.c ------------------------------------------------------------------------ */

/* Despawns entities[0..n-1] (alive, distinct) and, through CASCADE relations when `cascade`,
 * every source that depends on them (a replica's deltas list those themselves); removes their pairs
 * and sparse memberships first. All or nothing. */
tes_result_t tesi_despawn_all(tes_world_t *world, const tes_entity_t *entities, uint32_t n,
                              bool cascade);
/* tes_remove(e, relation): removes every pair of the source. */
tes_result_t tesi_pairs_clear(tes_world_t *world, tes_entity_t source, tes_component_t relation);
/* The pair (source, target), as an id + 1, or 0. */
uint32_t tesi_pair_find(const tes_world_t *world, tes_component_t relation, tes_entity_t source,
                        tes_entity_t target);
/* The list of `side` of an entity (an empty one when it never had a pair). */
static inline const tesi_list_t *tesi_list_of(const tesi_relation_t *r, int side, tes_entity_t e) {
    static const tesi_list_t empty = {0, 0, 0};
    const tesi_list_t *list = tesi_paged_find(&r->lists[side], e & TESI_INDEX_MASK, sizeof *list);
    return list ? list : &empty;
}
/* The first index from `index` on whose list of sources holds more than one: the targets
 * whose order a snapshot and a keyframe list. TESI_INDEX_LIMIT when there is none. */
uint32_t tesi_next_ordered_target(const tesi_relation_t *r, uint32_t index);
/* Whether adding (source, target) to an ACYCLIC relation would make source its own ancestor. */
bool tesi_pair_closes_cycle(const tes_world_t *world, tes_component_t relation, tes_entity_t source,
                            tes_entity_t target);
/* Room to add `n` pairs of the relation whose ends have indices in [first, end): pair records,
 * list heads, the sources' membership and two events per pair (an exclusive replacement). Ends
 * far apart reserve each end's index with its own call (n 0 for the second): list pages follow
 * the indices named, not the range between them. */
tes_result_t tesi_pair_reserve(tes_world_t *world, tes_component_t relation, uint64_t n,
                               uint32_t first, uint32_t end);
/* Adds a pair that is not there yet, after tesi_pair_reserve (an EXCLUSIVE relation's other pair
 * of the source is replaced): events, membership and marks. Returns its id + 1. */
uint32_t tesi_pair_link(tes_world_t *world, tes_component_t relation, tes_entity_t source,
                        tes_entity_t target);
/* Room to remove `pairs` pairs whose sources may lose their last pair (`sources` removals). */
tes_result_t tesi_pair_unlink_reserve(tes_world_t *world, tes_component_t relation, uint64_t pairs,
                                      uint32_t sources);
/* Removes pair `id` (id + 1) with its effects, after tesi_pair_unlink_reserve. */
void tesi_pair_unlink(tes_world_t *world, tes_component_t relation, uint32_t id);
/* A data write to pair `id` as a change: one changed event per pair per tick (room for it was
 * reserved: two events per pair), the source stamped changed. */
void tesi_pair_mark(tes_world_t *world, tes_component_t relation, uint32_t id);
/* Writes pair `id`'s fields from their packed form (a delta's); a write that is not an init is
 * a change (an event, the source stamped). */
tes_result_t tesi_pair_write(tes_world_t *world, tes_component_t relation, uint32_t id,
                             const uint8_t *packed, bool init);
void tesi_relation_prune(tes_world_t *world, tes_component_t relation, uint64_t min);
tes_result_t tesi_relation_validate(const tes_world_t *world, tes_component_t relation);
void tesi_relation_fini(tes_world_t *world, tesi_component_t *c);
/* First index of a ticked log whose tick is above `tick` (ticks never decrease). */
uint32_t tesi_log_after(const uint64_t *ticks, uint32_t count, uint64_t tick);

/* ---- snapshot.c, replicator.c, replica.c ------------------------------------------------ */

/* XXH64 (seed 0) of bytes fed piece by piece (hash.c): the same value however they are cut. */
typedef struct tesi_hash_t {
    uint64_t lanes[4];
    uint64_t total;     /* bytes fed */
    uint8_t buffer[32]; /* the part of a 32-byte stripe fed so far */
    uint32_t buffered;
} tesi_hash_t;
void tesi_hash_init(tesi_hash_t *h);
void tesi_hash_put(tesi_hash_t *h, const void *bytes, size_t n);
uint64_t tesi_hash_final(const tesi_hash_t *h);

/* Writing a byte format into a growing buffer of the world's allocator: the first failure is
 * kept in `result`, and every write after it does nothing. With `hash` set (and `slots`
 * pointing at a 0) the bytes go into the hash instead and no buffer is touched. */
typedef struct tesi_writer_t {
    tes_world_t *world;
    uint8_t **buffer;
    uint32_t *slots;
    uint32_t size;
    tes_result_t result;
    tesi_hash_t *hash;
} tesi_writer_t;
void tesi_put(tesi_writer_t *w, const void *bytes, size_t n);
void tesi_put_u32(tesi_writer_t *w, uint32_t v);
/* An unsigned LEB128 varint: 7 bits a byte, low bits first, the top bit set on all but the
 * last byte (1 byte below 128, at most 5 for 32 bits, TESI_VARINT_MAX for 64). */
#define TESI_VARINT_MAX 10u
void tesi_put_varint(tesi_writer_t *w, uint64_t v);
/* zigzag(q), an integer of either sign as an unsigned one: 2q for q >= 0, -2q - 1 below; and
 * back (the snapshot's free queue steps, a delta's quantized values). */
static inline uint64_t tesi_zigzag(int64_t q) {
    return (uint64_t)q << 1 ^ (q < 0 ? UINT64_MAX : 0);
}
static inline int64_t tesi_unzigzag(uint64_t u) {
    return (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
}
/* Reading one: every read checks the bytes left; the first problem is kept in `result` (`bad`
 * for bytes that end early) and every read after it returns zeros. */
typedef struct tesi_reader_t {
    const uint8_t *bytes;
    uint32_t size;
    uint32_t at;
    tes_result_t result;
    tes_result_t bad;
} tesi_reader_t;
bool tesi_take(tesi_reader_t *r, void *out, uint32_t n);
uint32_t tesi_get_u32(tesi_reader_t *r);
/* A varint in the shortest form tesi_put_varint writes; a longer form, or a value past 32
 * bits, is `bad` (one value, one encoding: what is read writes back the same). */
uint32_t tesi_get_varint(tesi_reader_t *r);
/* The same for 64 bits (ticks). */
uint64_t tesi_get_varint64(tesi_reader_t *r);
/* n items of `size` bytes without copying: a pointer into the bytes, NULL when not all there. */
const uint8_t *tesi_span(tesi_reader_t *r, uint32_t n, uint32_t size);
void tesi_fail(tesi_reader_t *r, tes_result_t result);
/* Row i of a sparse set's or a relation's data (NULL-safe for rows without fields). */
uint8_t *tesi_row_at(uint8_t *base, uint32_t i, uint32_t stride);
/* A sparse member's or a pair's fields, packed (no alignment padding), and back. */
void tesi_put_row(tesi_writer_t *w, const tesi_component_t *c, const uint8_t *row);
bool tesi_get_row(tesi_reader_t *r, const tesi_component_t *c, uint8_t *row);

void tesi_snapshot_fini(tes_world_t *world);
/* CRC-32 of n bytes (crc32.c). */
uint32_t tesi_crc32(const uint8_t *bytes, size_t n);
/* A component's schema as the formats write it (flags, name, fields), and read back into a
 * registration description. */
typedef struct tesi_schema_t {
    char name[TES_MAX_NAME_LENGTH + 1];
    char field_names[TES_MAX_FIELDS][TES_MAX_NAME_LENGTH + 1];
    tes_field_desc_t fields[TES_MAX_FIELDS];
    tes_component_desc_t desc;
} tesi_schema_t;
void tesi_put_schema(tesi_writer_t *w, const tesi_component_t *c);
void tesi_get_schema(tesi_reader_t *r, tesi_schema_t *out);
bool tesi_schema_equal(const tesi_component_t *c, const tes_component_desc_t *desc);
/* The lowest baseline the world's replicators still serve (UINT64_MAX: none). */
uint64_t tesi_replicators_floor(const tes_world_t *world);
void tesi_replicators_fini(tes_world_t *world);
/* Frees what applying deltas keeps (the replica's component mapping). */
void tesi_replica_fini(tes_world_t *world);

/* ---- graph.c --------------------------------------------------------------------------- */

uint64_t tesi_hash_set(const tes_component_t *components, uint32_t count);
/* The archetype whose set equals the given sorted set, or NULL. */
tesi_archetype_t *tesi_graph_find(const tes_world_t *world, const tes_component_t *components,
                                  uint32_t count, uint64_t hash);
/* Makes room in the type map for one more archetype. */
tes_result_t tesi_graph_reserve(tes_world_t *world);
void tesi_graph_insert(tes_world_t *world, tesi_archetype_t *archetype);
/* The archetype reached by adding (removing) `component`: the cached edge, else built from
 * the set and cached both ways. */
tes_result_t tesi_graph_step(tes_world_t *world, tesi_archetype_t *from, tes_component_t component,
                             bool removing, tesi_archetype_t **out,
                             const tesi_move_plan_t **out_plan);
tes_result_t tesi_graph_validate(const tes_world_t *world);
/* The rollback shadow's own invariants (shadow.c): each index's kept sets size is its sets'. */
tes_result_t tesi_rollback_validate(const tes_world_t *world);
/* Frees the archetype's edges and their move plans. */
void tesi_edges_fini(tes_world_t *world, tesi_archetype_t *archetype);
void tesi_graph_fini(tes_world_t *world);

#endif /* TESSERA_INTERNAL_H */
