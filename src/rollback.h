/* The rollback subsystem's private header (checkpoint.c, rewind.c): checkpoints in O(changed).
 *
 * The design in one paragraph. The first checkpoint copies the state of every entity index into
 * a *shadow* (its record with positions as numbers, its component values, sparse slots and
 * pairs) and makes every component with fields dirty-tracked. From then on the core notes every
 * index whose record, row, sparse slot or pairs change (tesi_touch, at the ~20 places that change
 * them) and change tracking notes the values written. A checkpoint writes, for each index noted
 * since the previous one, its *image* as the shadow has it (its state at the previous checkpoint)
 * into that checkpoint's ring entry, then brings the shadow up to date for those indices alone.
 * A rewind to checkpoint k gathers the images of every index changed since k (the earliest image
 * after k wins; indices changed only since the newest checkpoint take the shadow's) and writes
 * them back: archetype sizes, rows, records, free queue, sparse slots and pairs. Indices nobody
 * touched are where they were at k, so nothing else moves. */
#ifndef TESSERA_ROLLBACK_H
#define TESSERA_ROLLBACK_H

#include "internal.h"

/* An index's record as a checkpoint saw it, positions by number: it is written back into chunks
 * that may be other blocks by then. */
typedef struct tesi_state_t {
    uint32_t archetype; /* archetype id + 1 of a live entity; 0: not live */
    uint32_t row;       /* live: row in the archetype (chunk * capacity + row); else record.row */
    uint32_t generation;
} tesi_state_t;

/* The shadow's state of an index, with the bytes its image's sparse and pair parts take beyond
 * their two counts (0 for most: no sparse member, no pair), so that writing an image of an index
 * whose values alone changed does not walk every sparse component and relation to learn it. */
typedef struct tesi_shadow_state_t {
    tesi_state_t state;
    uint32_t sets;
} tesi_shadow_state_t;

/* The entity table's own numbers at a checkpoint, and the replica tick (the source tick of the
 * deltas the world held then: a rewound replica asks for the deltas since that one). */
typedef struct tesi_scalars_t {
    uint32_t record_count, free_head, free_tail, free_length, skipped_count, entity_count;
    uint32_t archetype_count;
    uint32_t component_count; /* a rewind takes back the registrations since, when unused */
    bool free_stale;
    uint64_t replica_tick;
    uint32_t replica_source;
} tesi_scalars_t;

/* One checkpoint: the world's numbers then, and the images (the state then) of every index that
 * changed before the next checkpoint, with the entity counts then of the archetypes whose count
 * changed. The newest checkpoint's images are not written yet: the shadow holds them. */
typedef struct tesi_entry_t {
    uint32_t number;
    tesi_scalars_t at;
    uint32_t *sparse_counts; /* by position in world->sparse_ids: members then */
    uint32_t sparse_known;   /* sparse components then (the ones after had none) */
    uint32_t sparse_slots;
    uint8_t *images; /* index images, one after another (image layout in checkpoint.c) */
    uint32_t size;
    uint32_t slots;
    uint32_t *counts;    /* (archetype id, entity count then) pairs */
    uint32_t count_size; /* u32s used */
    uint32_t count_slots;
} tesi_entry_t;

/* A relation's pairs at the newest checkpoint: its pair table (by the world's pair ids) and
 * list heads, copied for the indices that changed. */
typedef struct tesi_shadow_pairs_t {
    tesi_pair_t *pairs;
    uint8_t *data; /* stride per pair */
    uint32_t slots;
    tesi_paged_t lists[2]; /* tesi_list_t by index, by side */
} tesi_shadow_pairs_t;

/* A consumer query that keeps a component dirty-tracked since the newest checkpoint. */
typedef struct tesi_watch_t {
    tes_component_t component;
    tes_query_t *query;
} tesi_watch_t;

struct tesi_rollback_t {
    /* The indices touched since the newest checkpoint (a rewind adds those to restore). */
    tesi_paged_t where; /* uint32_t by index: its position in `touched` + 1, 0: not listed */
    uint32_t *touched;
    uint32_t touched_count;
    uint32_t touched_slots; /* one per index of where's pages: touching never allocates */
    uint32_t *spare;        /* touched_slots more, for sorting the list */

    tesi_entry_t *ring; /* depth entries, the oldest at `first` */
    uint32_t depth;
    uint32_t first;
    uint32_t count;
    uint64_t base; /* the change tick the newest checkpoint saw up to */

    tesi_watch_t *watches; /* one per component with fields: keeps it dirty-tracked */
    uint32_t watch_count;
    uint32_t watched_below; /* components with an id below it have their watch if they need one */
    /* The arrays by component (values, slots, pairs, and watches) cover component_count ids and
     * have room for component_slots: a component registered after the first checkpoint joins. */
    uint32_t component_count;
    uint32_t component_slots;
    uint32_t components_settled; /* components registered at the newest checkpoint */

    /* The shadow: the state at the newest checkpoint. */
    tesi_paged_t states;        /* tesi_shadow_state_t by index */
    tesi_paged_t *values;       /* by component: its values by index (value_bytes each) */
    tesi_paged_t *slots;        /* by component (sparse): slot + 1 by index, 0: no member */
    tesi_shadow_pairs_t *pairs; /* by component (relations) */
    uint32_t *archetype_counts; /* by archetype id: entity count */
    uint32_t archetype_slots;

    tesi_entry_t scratch; /* a rewind's images of what changed since the newest checkpoint */
    uint8_t *marks;       /* by archetype id: listed in the entry being written */
    uint32_t mark_slots;
};

/* Bytes of one component's value in the shadow and in images: a chunk component's row (fields
 * packed), a sparse component's member row; nothing for tags and relations (pairs have theirs). */
uint32_t tesi_value_bytes(const tesi_component_t *c);
/* The ring entry `i` places from the oldest. */
static inline tesi_entry_t *tesi_entry_at(tesi_rollback_t *rb, uint32_t i) {
    return &rb->ring[(rb->first + i) % rb->depth];
}
/* An index's current record as a state. */
tesi_state_t tesi_state_now(const tes_world_t *world, uint32_t index);
/* Lists the indices whose values changed since the newest checkpoint (its dirty lists). */
void tesi_touch_changed(tes_world_t *world, tesi_rollback_t *rb);
/* Appends the images of every touched index as the shadow has them to `entry`, those from
 * position `moved` on flagged values-only (uses the sort's spare: not while a sort of the list is
 * under way). */
tes_result_t tesi_images_write(tes_world_t *world, tesi_rollback_t *rb, tesi_entry_t *entry,
                               uint32_t moved);
/* In an image's index word: the index's values alone changed in the image's interval (its place,
 * sparse slots and pairs did not). Indices are below 2^TES_INDEX_BITS. */
#define TESI_IMAGE_VALUES_ONLY 0x80000000u
/* One image, read in place: the index, its state, and where its three parts start. */
typedef struct tesi_image_t {
    uint32_t index;
    bool values_only; /* TESI_IMAGE_VALUES_ONLY */
    tesi_state_t state;
    const uint8_t *values; /* a live state's: its archetype's components in order, packed */
    const uint8_t *sparse; /* u32 n, then n x (u32 component, u32 slot, the member's value) */
    const uint8_t *pairs;  /* u32 n, then n x (u32 relation, u32 outs, outs x (u32 target, data),
                            * u32 ins, ins x u32 source) */
    uint32_t end;          /* the byte after it */
} tesi_image_t;
/* The sparse and pair parts of an index's image as the shadow has them, written at `out` when it
 * is not NULL; their size. */
uint32_t tesi_put_sets(const tes_world_t *world, const tesi_rollback_t *rb, uint32_t index,
                       uint8_t *out);
/* The image of an index whose values alone changed since the newest checkpoint, written at `out`
 * (its sets part `sets` bytes), and its shadow values brought up to date in the same walk; the
 * byte after the image. */
uint8_t *tesi_image_and_values(tes_world_t *world, tesi_rollback_t *rb, uint32_t index,
                               uint32_t sets, uint8_t *out);
/* The shadow's values (chunk and sparse) of an index whose values alone changed. */
void tesi_shadow_values(tes_world_t *world, tesi_rollback_t *rb, uint32_t index);
/* Reads the image at byte `at` of `images`. */
void tesi_image_read(const tes_world_t *world, const uint8_t *images, uint32_t at,
                     tesi_image_t *out);
/* tesi_copy_cell telling whether the bytes differed (nothing written when they did not). */
static inline bool tesi_put_field(uint8_t *dst, const uint8_t *src, uint32_t bytes) {
    /* Constant sizes, one branch each: a size the compiler cannot see is a call to memcpy. */
    if (bytes == 4) {
        uint32_t a, b;
        memcpy(&a, dst, 4);
        memcpy(&b, src, 4);
        if (a == b) return false;
        memcpy(dst, src, 4);
        return true;
    }
    if (bytes == 8) {
        uint64_t a, b;
        memcpy(&a, dst, 8);
        memcpy(&b, src, 8);
        if (a == b) return false;
        memcpy(dst, src, 8);
        return true;
    }
    if (!memcmp(dst, src, bytes)) return false;
    memcpy(dst, src, bytes);
    return true;
}
/* An index's shadow state (zeros, no sets, when its page was never made). */
static inline const tesi_shadow_state_t *tesi_shadow_of(const tesi_rollback_t *rb, uint32_t index) {
    static const tesi_shadow_state_t none = {{0, 0, 0}, 0};
    const tesi_shadow_state_t *s = tesi_paged_find(&rb->states, index, sizeof *s);
    return s ? s : &none;
}

static inline const tesi_state_t *tesi_shadow_state(const tesi_rollback_t *rb, uint32_t index) {
    return &tesi_shadow_of(rb, index)->state;
}

static inline uint8_t *tesi_store_u32(uint8_t *out, uint32_t v) {
    memcpy(out, &v, sizeof v);
    return out + sizeof v;
}
static inline uint32_t tesi_load_u32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}
/* tesi_reserve with the new slots zeroed. */
tes_result_t tesi_reserve_zeroed(tes_world_t *world, void **array, uint32_t *slots, uint32_t needed,
                                 size_t elem);
/* The page of `index` in a paged array, allocated when missing. */
tes_result_t tesi_page_for(tes_world_t *world, tesi_paged_t *p, uint32_t index, uint32_t elem);
/* The shadow's tables (archetype counts, relation tables as large as the world's) and pages for
 * the current state of the first `moved` touched indices (the others changed values alone: their
 * pages are there). Then tesi_shadow_update cannot fail. */
tes_result_t tesi_shadow_reserve(tes_world_t *world, tesi_rollback_t *rb, uint32_t moved);
/* Brings the shadow up to the world's state for the touched indices before `end` (the first
 * `moved` whole, the others' values alone), and the archetype counts for the archetypes in
 * `marks`. */
void tesi_shadow_update(tes_world_t *world, tesi_rollback_t *rb, uint32_t moved, uint32_t end);
/* Sorts the touched list by index, the first `split` and the rest apart (so the list still tells
 * which were which): the passes over it then walk pages and rows in order. */
void tesi_sort_touched(tesi_rollback_t *rb, uint32_t split);
/* Empties the touched list. */
void tesi_untouch_all(tesi_rollback_t *rb);
/* The world's numbers now. */
tesi_scalars_t tesi_scalars_now(const tes_world_t *world);
/* Ends the watches (rollback's own consumers) of the components from `first` on: a rewind to
 * before their registration, which may take them back. */
void tesi_rollback_unwatch(tes_world_t *world, tesi_rollback_t *rb, tes_component_t first);
/* After a checkpoint or a rewind: the newest checkpoint has seen the world up to now. */
void tesi_rollback_settle(tes_world_t *world, tesi_rollback_t *rb);

#endif
