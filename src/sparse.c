/* Sparse components: a sparse set per component (an index from entity index to dense slot, and
 * dense member, data and tick arrays), so adding or removing one moves no row and makes no
 * archetype. Relations keep the membership of their sources here too. Change tracking follows
 * the component's level exactly as chunk trackers do: ticks while TICKS or DIRTY, a
 * deduplicated dirty list of entity indices while DIRTY. */
#include "internal.h"

/* Bytes of a member's row: a relation's fields are per pair (relation.c), not per source. */
static uint32_t member_bytes(const tesi_component_t *c) {
    return tesi_is_relation(c) ? 0 : c->stride;
}

/* Replaces `*array` (old_slots elements) by one of `slots`, keeping the contents. */
static void regrow(tes_world_t *world, void **array, void *bigger, uint32_t old_slots,
                   size_t elem) {
    if (!elem) return;
    if (*array) {
        memcpy(bigger, *array, (size_t)old_slots * elem);
        tesi_free(world, *array, (size_t)old_slots * elem);
    }
    *array = bigger;
}

/* Allocates arrays[i] of slots * elems[i] bytes (none for 0), all or none. */
static bool alloc_all(tes_world_t *world, void **arrays, const size_t *elems, uint32_t n,
                      uint32_t slots) {
    for (uint32_t i = 0; i < n; i++) {
        arrays[i] = NULL;
        if (!elems[i]) continue;
        /* A member row can be 128 KiB (64 fields of 256 f64): the product may pass size_t. */
        arrays[i] = (uint64_t)slots * elems[i] <= SIZE_MAX
                        ? tesi_alloc(world, (size_t)slots * elems[i])
                        : NULL;
        if (arrays[i]) continue;
        while (i-- > 0) {
            if (arrays[i]) tesi_free(world, arrays[i], (size_t)slots * elems[i]);
        }
        return false;
    }
    return true;
}

/* Map pages for indices [first, end). The dirty list holds an index at most once, and only
 * indices of allocated pages (its mark is on the map), so with a slot for every index of them
 * it never grows when listing. */
static tes_result_t grow_index(tes_world_t *world, tesi_sparse_t *s, uint32_t first, uint32_t end) {
    uint32_t missing = tesi_paged_missing(&s->slot_of, first, end);
    if (!missing) return TES_OK;
    uint64_t listable = ((uint64_t)s->slot_of.page_count + missing) * TESI_PAGE_SIZE;
    tes_result_t result = tesi_reserve(world, (void **)&s->dirty, &s->dirty_slots,
                                       (uint32_t)listable, sizeof *s->dirty, TESI_PAGE_SIZE);
    if (result != TES_OK) return result;
    return tesi_paged_reserve(world, &s->slot_of, first, end, sizeof(uint32_t));
}

/* The map entry of an index whose page is allocated. */
static uint32_t *slot_at(const tesi_sparse_t *s, uint32_t index) {
    return tesi_paged_at(&s->slot_of, index, sizeof(uint32_t));
}

tes_result_t tesi_sparse_reserve(tes_world_t *world, tes_component_t component, uint32_t n,
                                 uint32_t first, uint32_t end) {
    tesi_component_t *c = &world->components[component];
    tesi_sparse_t *s = &c->sparse;
    tes_result_t result = grow_index(world, s, first, end);
    if (result != TES_OK) return result;
    if ((uint64_t)s->count + n <= s->slots) return TES_OK;
    uint64_t want = s->slots ? s->slots : 64;
    while (want < (uint64_t)s->count + n)
        want *= 2;
    if (want > TESI_INDEX_LIMIT) want = TESI_INDEX_LIMIT;
    if ((uint64_t)s->count + n > want) return TES_ERR_OUT_OF_MEMORY;
    uint32_t slots = (uint32_t)want;
    void *arrays[4];
    const size_t elems[4] = {sizeof *s->entities, member_bytes(c), sizeof *s->added,
                             sizeof *s->changed};
    if (!alloc_all(world, arrays, elems, 4, slots)) return TES_ERR_OUT_OF_MEMORY;
    regrow(world, (void **)&s->entities, arrays[0], s->slots, elems[0]);
    regrow(world, (void **)&s->data, arrays[1], s->slots, elems[1]);
    regrow(world, (void **)&s->added, arrays[2], s->slots, elems[2]);
    regrow(world, (void **)&s->changed, arrays[3], s->slots, elems[3]);
    s->slots = slots;
    return TES_OK;
}

static void list_index(tesi_sparse_t *s, uint32_t index) {
    uint32_t *slot = slot_at(s, index);
    if (*slot & TESI_SLOT_LISTED) return;
    *slot |= TESI_SLOT_LISTED;
    s->dirty[s->dirty_count++] = index;
}

static void stamp(tes_world_t *world, tesi_component_t *c, uint32_t slot, bool added) {
    if (c->level == TES_UNTRACKED) return;
    tesi_sparse_t *s = &c->sparse;
    c->stamped = world->change_tick;
    if (added) {
        s->added[slot] = world->change_tick;
        s->changed[slot] = 0;
    } else {
        s->changed[slot] = world->change_tick;
    }
    if (c->level == TES_TRACK_DIRTY) list_index(s, s->entities[slot] & TESI_INDEX_MASK);
}

void tesi_sparse_stamp(tes_world_t *world, tes_component_t component, uint32_t slot, bool added) {
    stamp(world, &world->components[component], slot, added);
}

void tesi_sparse_insert(tes_world_t *world, tes_component_t component, tes_entity_t e) {
    tesi_component_t *c = &world->components[component];
    tesi_sparse_t *s = &c->sparse;
    uint32_t index = e & TESI_INDEX_MASK;
    if (tesi_sparse_slot(s, index)) return;
    tesi_touch(world, index);
    uint32_t slot = s->count++;
    s->entities[slot] = e;
    uint32_t bytes = member_bytes(c);
    if (bytes) memset(s->data + (size_t)slot * bytes, 0, bytes);
    s->added[slot] = 0;
    s->changed[slot] = 0;
    *slot_at(s, index) = (*slot_at(s, index) & TESI_SLOT_LISTED) | (slot + 1);
    stamp(world, c, slot, true);
}

void tesi_sparse_erase(tes_world_t *world, tes_component_t component, tes_entity_t e) {
    tesi_component_t *c = &world->components[component];
    tesi_sparse_t *s = &c->sparse;
    uint32_t index = e & TESI_INDEX_MASK;
    uint32_t slot1 = tesi_sparse_slot(s, index);
    if (!slot1) return;
    tesi_log_removal(world, component, e);
    tesi_touch(world, index);
    uint32_t slot = slot1 - 1, last = --s->count;
    if (slot != last) {
        tes_entity_t moved = s->entities[last];
        tesi_touch(world, moved & TESI_INDEX_MASK);
        s->entities[slot] = moved;
        uint32_t bytes = member_bytes(c);
        if (bytes) memcpy(s->data + (size_t)slot * bytes, s->data + (size_t)last * bytes, bytes);
        s->added[slot] = s->added[last];
        s->changed[slot] = s->changed[last];
        uint32_t *moved_slot = slot_at(s, moved & TESI_INDEX_MASK);
        *moved_slot = (*moved_slot & TESI_SLOT_LISTED) | (slot + 1);
    }
    *slot_at(s, index) &= TESI_SLOT_LISTED;
}

void tesi_sparse_mark(tes_world_t *world, tes_component_t component, uint32_t slot) {
    stamp(world, &world->components[component], slot, false);
}

tes_result_t tesi_sparse_step(tes_world_t *world, tes_entity_t entity, tes_component_t component,
                              bool removing) {
    const tesi_component_t *c = &world->components[component];
    if (tesi_is_relation(c) && !removing) return TES_ERR_NEEDS_TARGET;
    /* Removing a relation removes pairs, which apply at once like tes_pair_remove (a pending
     * source's are recorded with its other commands), so the two keep their order. */
    bool placed_source = tesi_is_relation(c) && tesi_record_of(world, entity);
    if (tesi_deferring(world) && !placed_source) {
        if (!tesi_record_of(world, entity) && !tesi_pending_record(world, entity)) {
            return TES_ERR_STALE_ENTITY;
        }
        tes_result_t result = tesi_defer(world, removing ? TESI_CMD_REMOVE : TESI_CMD_ADD, entity,
                                         component, 0, 0, 0, NULL, 0);
        if (result == TES_OK && !removing)
            tesi_note_add_at(world, entity, world->command_count - 1);
        return result;
    }
    if (!tesi_record_of(world, entity)) return TES_ERR_STALE_ENTITY;
    if (tesi_is_relation(c)) return tesi_pairs_clear(world, entity, component);
    uint32_t index = entity & TESI_INDEX_MASK;
    bool member = tesi_sparse_slot(&c->sparse, index) != 0;
    if (member != removing) return TES_OK;
    if (removing) {
        tes_result_t result = tesi_log_reserve(world, component, 1);
        if (result != TES_OK) return result;
        tesi_sparse_erase(world, component, entity);
        return TES_OK;
    }
    tes_result_t result = tesi_sparse_reserve(world, component, 1, index, index + 1);
    if (result != TES_OK) return result;
    tesi_sparse_insert(world, component, entity);
    return TES_OK;
}

/* A run of recorded adds (or removes) of one sparse component, applied as tesi_sparse_step
 * would apply each (a dead entity's command fails, a member's add and a non-member's remove do
 * nothing), with the room for the whole run reserved once instead of per command. False when
 * that room cannot be had: nothing was applied, and the caller applies them one by one. */
bool tesi_sparse_apply_run(tes_world_t *world, tes_component_t component, bool removing,
                           const tesi_command_t *commands, uint32_t n, uint32_t *out_failed) {
    tesi_sparse_t *s = &world->components[component].sparse;
    tes_result_t result = removing ? tesi_log_reserve(world, component, n)
                                   : tesi_sparse_reserve(world, component, n, 0, 0);
    if (result != TES_OK) return false;
    uint32_t failed = 0;
    for (uint32_t k = 0; k < n; k++) {
        tes_entity_t entity = commands[k].entity;
        uint32_t index = entity & TESI_INDEX_MASK;
        if (!tesi_record_of(world, entity)) {
            failed++;
        } else if ((tesi_sparse_slot(s, index) != 0) != removing) {
            continue; /* already as asked */
        } else if (removing) {
            tesi_sparse_erase(world, component, entity);
        } else if (grow_index(world, s, index, index + 1) == TES_OK) {
            tesi_sparse_insert(world, component, entity);
        } else {
            failed++; /* out of memory for this one's page, as tesi_sparse_step fails it */
        }
    }
    *out_failed = failed;
    return true;
}

/* ---- tracking ---------------------------------------------------------------------------- */

static void clear_dirty(tesi_sparse_t *s) {
    for (uint32_t i = 0; i < s->dirty_count; i++)
        *slot_at(s, s->dirty[i]) &= TESI_SLOT_MASK;
    s->dirty_count = 0;
}

void tesi_sparse_tracking(tes_world_t *world, tes_component_t component, tes_tracking_t old,
                          bool reseed) {
    tesi_component_t *c = &world->components[component];
    tesi_sparse_t *s = &c->sparse;
    if (c->level == TES_UNTRACKED) {
        clear_dirty(s);
        return;
    }
    if (old == TES_UNTRACKED) {
        /* Tracking starts now: what exists counts as added now. */
        for (uint32_t i = 0; i < s->count; i++) {
            s->added[i] = world->change_tick;
            s->changed[i] = 0;
        }
        c->stamped = world->change_tick;
    }
    if (c->level != TES_TRACK_DIRTY) {
        clear_dirty(s);
        return;
    }
    (void)reseed; /* every stamped member is listed, as a new consumer needs */
    for (uint32_t i = 0; i < s->count; i++) {
        if (s->added[i] || s->changed[i]) list_index(s, s->entities[i] & TESI_INDEX_MASK);
    }
}

void tesi_sparse_prune(tes_world_t *world, tes_component_t component, uint64_t min) {
    tesi_sparse_t *s = &world->components[component].sparse;
    /* No stamp above the floor (internal.h, `stamped`): the members go without reading their
     * stamps, as a chunk tracker's rows do (tracker.c). */
    bool all = min >= world->components[component].stamped;
    uint32_t kept = 0;
    for (uint32_t i = 0; i < s->dirty_count; i++) {
        uint32_t index = s->dirty[i];
        uint32_t slot1 = all ? 0 : tesi_sparse_slot(s, index);
        if (slot1 && (s->added[slot1 - 1] > min || s->changed[slot1 - 1] > min)) {
            s->dirty[kept++] = index;
        } else {
            *slot_at(s, index) &= TESI_SLOT_MASK;
        }
    }
    s->dirty_count = kept;
}

/* ---- validation and teardown --------------------------------------------------------------- */

#define CHECK(cond)                          \
    do {                                     \
        if (!(cond)) return TES_ERR_CORRUPT; \
    } while (0)

tes_result_t tesi_sparse_validate(const tes_world_t *world, tes_component_t component) {
    const tesi_component_t *c = &world->components[component];
    const tesi_sparse_t *s = &c->sparse;
    CHECK(s->count <= s->slots);
    for (uint32_t i = 0; i < s->count; i++) {
        tes_entity_t e = s->entities[i];
        CHECK(tesi_record_of(world, e) != NULL);
        CHECK(tesi_sparse_slot(s, e & TESI_INDEX_MASK) == i + 1);
    }
    uint32_t members = 0, listed = 0;
    for (uint32_t index = 0; index < TESI_INDEX_LIMIT; index++) {
        const uint32_t *slot = tesi_paged_find(&s->slot_of, index, sizeof *slot);
        if (!slot) {
            index |= TESI_PAGE_MASK; /* an unallocated page: no member, nothing listed */
            continue;
        }
        members += (*slot & TESI_SLOT_MASK) != 0;
        listed += (*slot & TESI_SLOT_LISTED) != 0;
    }
    CHECK(members == s->count);
    CHECK(listed == s->dirty_count);
    CHECK(s->dirty_count <= s->dirty_slots);
    CHECK(c->level == TES_TRACK_DIRTY || s->dirty_count == 0);
    for (uint32_t i = 0; i < s->count; i++) /* no stamp above the latest */
        CHECK(s->added[i] <= c->stamped && s->changed[i] <= c->stamped);
    for (uint32_t i = 0; i < s->dirty_count; i++) {
        const uint32_t *slot = tesi_paged_find(&s->slot_of, s->dirty[i], sizeof *slot);
        CHECK(slot && (*slot & TESI_SLOT_LISTED));
    }
    return TES_OK;
}

void tesi_sparse_fini(tes_world_t *world, tesi_component_t *c) {
    tesi_sparse_t *s = &c->sparse;
    tesi_paged_fini(world, &s->slot_of, sizeof(uint32_t));
    tesi_free(world, s->entities, (size_t)s->slots * sizeof *s->entities);
    if (member_bytes(c)) tesi_free(world, s->data, (size_t)s->slots * member_bytes(c));
    tesi_free(world, s->added, (size_t)s->slots * sizeof *s->added);
    tesi_free(world, s->changed, (size_t)s->slots * sizeof *s->changed);
    tesi_free(world, s->dirty, (size_t)s->dirty_slots * sizeof *s->dirty);
}
