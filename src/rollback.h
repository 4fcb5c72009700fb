/* The rollback subsystem's private header (checkpoint.c, shadow.c, rewind.c): checkpoints in
 * O(changed).
 *
 * The design in one paragraph. The first checkpoint copies the state of every entity index into
 * a *shadow* (its record with positions as numbers, its component values, sparse slots and
 * pairs) and makes every component with fields dirty-tracked. From then on the core notes every
 * index whose record, row, sparse slot or pairs change (tesi_touch, at the ~20 places that change
 * them: the index *moved*) and change tracking notes the values written. A checkpoint writes into
 * the previous checkpoint's ring entry what the shadow holds (the state then) of what changed
 * since: a *whole image* of each index that moved, and a *value image* of each component value
 * that changed alone (one per dirty row, of that component only); then it brings the shadow up to
 * date for those alone. A rewind to checkpoint k gathers the images written since k (and, for what
 * changed since the newest checkpoint, the shadow's) and writes back the earliest of each: whole
 * images by index (archetype sizes, rows, records, free queue, sparse slots and pairs), value
 * images by index and component, over the whole image when they are earlier. Indices nobody
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

/* The shadow's state of an index, with the bytes its whole image's sparse and pair parts take
 * beyond their two counts (0 for most: no sparse member, no pair), so that sizing and writing the
 * image of an index without any does not walk every sparse component and relation to learn it. */
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

/* One checkpoint: the world's numbers then, and the images (the state then) of what changed
 * before the next checkpoint, with the entity counts then of the archetypes whose count changed.
 * The newest checkpoint's images are not written yet: the shadow holds them. */
typedef struct tesi_entry_t {
    uint32_t number;
    tesi_scalars_t at;
    uint32_t *sparse_counts; /* by position in world->sparse_ids: members then */
    uint32_t sparse_known;   /* sparse components then (the ones after had none) */
    uint32_t sparse_slots;
    uint8_t *images; /* whole images, one after another (layouts in checkpoint.c) */
    uint32_t size;
    uint32_t slots;
    uint8_t *values; /* value images, by component */
    uint32_t values_size;
    uint32_t value_slots;
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
    /* A bit per index: listed. `where` says the same, but its pages are 4 bytes an index, and
     * the dirty walk asks it of every changed row: the bitmap stays in cache (12.5 KB for 100k
     * indices), where's pages do not (a third of a checkpoint's time, measured). */
    uint64_t *listed;
    uint32_t listed_words;

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
/* Appends to `entry` what the shadow holds of what changed since the newest checkpoint, as a
 * checkpoint would write it (whole images of the touched indices, value images of the changed
 * rows of the others), and leaves the shadow as it is (uses the sort's spare: not while a sort of
 * the list is under way). */
tes_result_t tesi_images_write(tes_world_t *world, tesi_rollback_t *rb, tesi_entry_t *entry);
/* One whole image, read in place: the index, its state, and where its three parts start. */
typedef struct tesi_image_t {
    uint32_t index;
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
/* Reads the whole image at byte `at` of `images`. */
void tesi_image_read(const tes_world_t *world, const uint8_t *images, uint32_t at,
                     tesi_image_t *out);
/* A walk over an entry's value images (layout in checkpoint.c): tesi_value_next gives each. */
typedef struct tesi_value_walk_t {
    const tes_world_t *world;
    const uint8_t *at, *end;
    uint32_t left;  /* value images left in the current component's group */
    uint32_t bytes; /* of the group's values */
    tes_component_t component;
    uint32_t index;
    const uint8_t *value;
} tesi_value_walk_t;
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
/* Whether every row on a component's dirty lists was stamped after tick `base` or belongs to a
 * listed index: its last prune dropped every row stamped up to `base`. */
static inline bool tesi_rollback_fresh(const tesi_component_t *c, uint64_t base) {
    return c->dirty_pruned_to >= base;
}
static inline bool tesi_listed(const tesi_rollback_t *rb, uint32_t index) {
    return (rb->listed[index >> 6] >> (index & 63u)) & 1u;
}
static inline tesi_value_walk_t tesi_value_walk(const tes_world_t *world,
                                                const tesi_entry_t *entry) {
    return (tesi_value_walk_t){
        .world = world, .at = entry->values, .end = TESI_PAST(entry->values, entry->values_size)};
}
/* The next value image (component, index, value); false after the last. */
static inline bool tesi_value_next(tesi_value_walk_t *w) {
    while (!w->left) {
        if (w->at >= w->end) return false;
        w->component = tesi_load_u32(w->at);
        w->left = tesi_load_u32(w->at + 4);
        w->bytes = tesi_value_bytes(&w->world->components[w->component]);
        w->at += 8;
    }
    w->index = tesi_load_u32(w->at);
    w->value = w->at + 4;
    w->at += 4 + w->bytes;
    w->left--;
    return true;
}
/* How many value images an entry holds (its groups' counts, read without a walk). */
static inline uint32_t tesi_value_count(const tes_world_t *world, const tesi_entry_t *entry) {
    uint32_t count = 0;
    tesi_value_walk_t w = tesi_value_walk(world, entry);
    while (w.at < w.end) {
        uint32_t n = tesi_load_u32(w.at + 4);
        count += n;
        w.at += 8 + (size_t)n * (4 + tesi_value_bytes(&world->components[tesi_load_u32(w.at)]));
    }
    return count;
}
/* tesi_reserve with the new slots zeroed. */
tes_result_t tesi_reserve_zeroed(tes_world_t *world, void **array, uint32_t *slots, uint32_t needed,
                                 size_t elem);
/* The page of `index` in a paged array, allocated when missing. */
tes_result_t tesi_page_for(tes_world_t *world, tesi_paged_t *p, uint32_t index, uint32_t elem);
/* The shadow's tables (archetype counts, relation tables as large as the world's) and pages for
 * the current state of the first `moved` touched indices (0: the tables alone). Then
 * tesi_shadow_update cannot fail. */
tes_result_t tesi_shadow_reserve(tes_world_t *world, tesi_rollback_t *rb, uint32_t moved);
/* Brings the shadow up to the world's state for the touched indices before `end`, and the
 * archetype counts for the archetypes in `marks`. */
void tesi_shadow_update(tes_world_t *world, tesi_rollback_t *rb, uint32_t end);
/* Sorts the touched list by index: the passes over it then walk pages and rows in order. */
void tesi_sort_touched(tesi_rollback_t *rb);
/* Takes an index off the list's marks (not off the list itself). */
void tesi_untouch(tesi_rollback_t *rb, uint32_t index);
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
