/* Relations: pairs (source, relation, target) in a side table per relation, never in the
 * archetype. A pair record sits on two doubly linked lists, its source's targets ("out") and its
 * target's sources ("in"), whose heads are arrays by entity index; ids are stable and reused
 * through a free list. The relation's membership ("source of at least one pair") is the
 * relation component's sparse set, so queries, Added / Changed / Removed and tes_has treat a
 * relation like any sparse component. Pair events are logged per relation while a query asks
 * for them. Despawns go through tesi_despawn_all: the closure over CASCADE relations, then every
 * pair and sparse membership of the doomed entities is taken away before their rows. */
#include "internal.h"

/* ---- lookups ---------------------------------------------------------------------------- */

static tes_result_t relation_of(const tes_world_t *world, tes_component_t relation,
                                tesi_component_t **out) {
    if (relation >= world->component_count) return TES_ERR_UNKNOWN_COMPONENT;
    tesi_component_t *c = &world->components[relation];
    if (!tesi_is_relation(c)) return TES_ERR_NOT_A_RELATION;
    *out = c;
    return TES_OK;
}

/* Checks a source, the relation and a target in that order (alive; or, when `pending_ok`, a
 * deferred spawn too). */
static tes_result_t check_pair(const tes_world_t *world, tes_entity_t source,
                               tes_component_t relation, tes_entity_t target, bool pending_ok,
                               tesi_component_t **out) {
    if (!world) return TES_ERR_INVALID_ARGUMENT;
    if (!tesi_record_of(world, source) && !(pending_ok && tesi_pending_record(world, source))) {
        return tesi_not_alive(world, source);
    }
    tes_result_t result = relation_of(world, relation, out);
    if (result != TES_OK) return result;
    if (!tesi_record_of(world, target) && !(pending_ok && tesi_pending_record(world, target))) {
        return tesi_not_alive(world, target);
    }
    return TES_OK;
}

uint32_t tesi_pair_find(const tes_world_t *world, tes_component_t relation, tes_entity_t source,
                        tes_entity_t target) {
    const tesi_relation_t *r = &world->components[relation].relation;
    /* The shorter of the two lists; handles are compared whole, so a stale one finds nothing. */
    int side = tesi_list_of(r, TESI_OUT, source)->count <= tesi_list_of(r, TESI_IN, target)->count
                   ? TESI_OUT
                   : TESI_IN;
    for (uint32_t id = tesi_list_of(r, side, side == TESI_OUT ? source : target)->first; id;
         id = r->pairs[id - 1].next[side]) {
        const tesi_pair_t *p = &r->pairs[id - 1];
        if (p->source == source && p->target == target) return id;
    }
    return 0;
}

/* ---- storage ------------------------------------------------------------------------------ */

/* List heads of both sides for indices [first, end). */
static tes_result_t lists_reserve(tes_world_t *world, tesi_relation_t *r, uint32_t first,
                                  uint32_t end) {
    tes_result_t result =
        tesi_paged_reserve(world, &r->lists[TESI_OUT], first, end, sizeof(tesi_list_t));
    if (result == TES_OK) {
        result = tesi_paged_reserve(world, &r->lists[TESI_IN], first, end, sizeof(tesi_list_t));
    }
    return result;
}

/* The list of `side` of an index whose page is allocated. */
static tesi_list_t *list_at(const tesi_relation_t *r, int side, uint32_t index) {
    return tesi_paged_at(&r->lists[side], index, sizeof(tesi_list_t));
}

/* Room for `n` more pairs without allocating. */
static tes_result_t pairs_reserve(tes_world_t *world, tesi_component_t *c, uint32_t n) {
    tesi_relation_t *r = &c->relation;
    uint64_t needed = (uint64_t)r->pair_count + n;
    if (needed <= r->pair_slots) return TES_OK;
    uint64_t slots = r->pair_slots ? (uint64_t)r->pair_slots * 2 : 64;
    while (slots < needed)
        slots *= 2;
    if (slots * (sizeof(tesi_pair_t) + c->stride) > SIZE_MAX / 2) return TES_ERR_OUT_OF_MEMORY;
    tesi_pair_t *pairs = tesi_alloc(world, (size_t)slots * sizeof *pairs);
    uint8_t *data = NULL;
    if (pairs && c->stride) data = tesi_alloc(world, (size_t)slots * c->stride);
    if (!pairs || (c->stride && !data)) {
        tesi_free(world, pairs, (size_t)slots * sizeof *pairs);
        return TES_ERR_OUT_OF_MEMORY;
    }
    if (r->pair_slots) {
        memcpy(pairs, r->pairs, (size_t)r->pair_used * sizeof *pairs);
        tesi_free(world, r->pairs, (size_t)r->pair_slots * sizeof *pairs);
        if (c->stride) {
            memcpy(data, r->data, (size_t)r->pair_used * c->stride);
            tesi_free(world, r->data, (size_t)r->pair_slots * c->stride);
        }
    }
    r->pairs = pairs;
    r->data = data;
    r->pair_slots = (uint32_t)slots;
    return TES_OK;
}

static tes_result_t events_reserve(tes_world_t *world, tesi_relation_t *r, uint64_t n) {
    if (!r->event_consumers) return TES_OK;
    return tesi_ticked_reserve(world, (void **)&r->events, sizeof *r->events, &r->event_ticks,
                               &r->event_slots, r->event_count, n);
}

static void log_event(tes_world_t *world, tes_component_t relation, const tesi_pair_t *p,
                      uint32_t kind) {
    tesi_relation_t *r = &world->components[relation].relation;
    if (!r->event_consumers) return;
    r->events[r->event_count] = (tes_pair_event_t){p->source, p->target, relation, kind};
    r->event_ticks[r->event_count++] = world->change_tick;
}

/* Puts pair `id` on its list of `side` just before pair `before`, or at the end when before is
 * 0. */
static void insert(tes_world_t *world, tesi_relation_t *r, int side, uint32_t id, uint32_t before) {
    tesi_pair_t *p = &r->pairs[id - 1];
    tesi_touch(world, tesi_pair_owner(p, side) & TESI_INDEX_MASK);
    tesi_list_t *list = list_at(r, side, tesi_pair_owner(p, side) & TESI_INDEX_MASK);
    p->next[side] = before;
    p->prev[side] = before ? r->pairs[before - 1].prev[side] : list->last;
    if (p->prev[side]) {
        r->pairs[p->prev[side] - 1].next[side] = id;
    } else {
        list->first = id;
    }
    if (before) {
        r->pairs[before - 1].prev[side] = id;
    } else {
        list->last = id;
    }
    list->count++;
}

/* Takes pair `id` off its list of `side`. */
static void take_out(tes_world_t *world, tesi_relation_t *r, int side, uint32_t id) {
    tesi_pair_t *p = &r->pairs[id - 1];
    tesi_touch(world, tesi_pair_owner(p, side) & TESI_INDEX_MASK);
    tesi_list_t *list = list_at(r, side, tesi_pair_owner(p, side) & TESI_INDEX_MASK);
    if (p->prev[side]) {
        r->pairs[p->prev[side] - 1].next[side] = p->next[side];
    } else {
        list->first = p->next[side];
    }
    if (p->next[side]) {
        r->pairs[p->next[side] - 1].prev[side] = p->prev[side];
    } else {
        list->last = p->prev[side];
    }
    list->count--;
}

/* A new pair at the end of both lists (room reserved), data zeroed. Returns its id + 1. */
static uint32_t link(tes_world_t *world, tesi_component_t *c, tes_entity_t source,
                     tes_entity_t target) {
    tesi_relation_t *r = &c->relation;
    uint32_t id = r->free_pairs;
    if (id) {
        r->free_pairs = r->pairs[id - 1].next[TESI_OUT];
    } else {
        id = ++r->pair_used;
    }
    r->pairs[id - 1] = (tesi_pair_t){.source = source, .target = target};
    insert(world, r, TESI_OUT, id, 0);
    insert(world, r, TESI_IN, id, 0);
    if (c->stride) memset(r->data + (size_t)(id - 1) * c->stride, 0, c->stride);
    r->pair_count++;
    return id;
}

/* Takes the pair off both lists and frees its id. */
static void unlink(tes_world_t *world, tesi_relation_t *r, uint32_t id) {
    take_out(world, r, TESI_OUT, id);
    take_out(world, r, TESI_IN, id);
    r->pairs[id - 1] = (tesi_pair_t){.next = {r->free_pairs, 0}};
    r->free_pairs = id;
    r->pair_count--;
}

/* Removes a pair with its effects: a removed event, and for the source either the loss of the
 * relation (its last pair: a removal, logged) or a change. The logs were reserved. */
static void remove_pair(tes_world_t *world, tes_component_t relation, uint32_t id) {
    tesi_component_t *c = &world->components[relation];
    tesi_relation_t *r = &c->relation;
    tes_entity_t source = r->pairs[id - 1].source;
    log_event(world, relation, &r->pairs[id - 1], TES_PAIR_REMOVED);
    unlink(world, r, id);
    if (tesi_list_of(r, TESI_OUT, source)->count == 0) {
        tesi_sparse_erase(world, relation, source);
    } else {
        tesi_sparse_mark(world, relation,
                         tesi_sparse_slot(&c->sparse, source & TESI_INDEX_MASK) - 1);
    }
}

/* ---- adding and removing pairs ------------------------------------------------------------- */

static bool pending(const tes_world_t *world, tes_entity_t e) {
    return tesi_pending_record(world, e) != NULL;
}

bool tesi_pair_closes_cycle(const tes_world_t *world, tes_component_t relation, tes_entity_t source,
                            tes_entity_t target) {
    const tesi_relation_t *r = &world->components[relation].relation;
    /* A source that is nobody's target has no descendants, so only itself can close a cycle:
     * building a hierarchy top down (each new child under a deep parent) never walks. */
    if (source != target && tesi_list_of(r, TESI_IN, source)->count == 0) return false;
    tes_entity_t e = target;
    for (uint32_t steps = 0; steps <= world->entity_count; steps++) {
        if (e == source) return true;
        const tesi_list_t *out = tesi_list_of(r, TESI_OUT, e);
        if (!out->count) return false;
        e = r->pairs[out->first - 1].target;
    }
    return true; /* longer than the world: a cycle that is already there */
}

/* What tes_pair_add and tes_pair_remove do first: the checks, then, while deferring with a
 * pending end, recording the call as command `kind` (*recorded: nothing else to do). */
static tes_result_t begin_pair_call(tes_world_t *world, uint8_t kind, tes_entity_t source,
                                    tes_component_t relation, tes_entity_t target,
                                    tesi_component_t **out, bool *recorded) {
    *recorded = false;
    bool deferring = world && tesi_deferring(world);
    tes_result_t result = check_pair(world, source, relation, target, deferring, out);
    /* A pair of an entity to itself is a cycle whether or not the entity is placed yet: refused
     * now, not recorded to be skipped at the flush. */
    if (result == TES_OK && kind == TESI_CMD_PAIR_ADD && source == target &&
        ((*out)->flags & TES_RELATION_ACYCLIC)) {
        return TES_ERR_CYCLE;
    }
    if (result != TES_OK || !deferring || !(pending(world, source) || pending(world, target))) {
        return result;
    }
    *recorded = true;
    return tesi_defer(world, kind, source, relation, target, 0, 0, NULL, 0);
}

tes_result_t tes_pair_add(tes_world_t *world, tes_entity_t source, tes_component_t relation,
                          tes_entity_t target) {
    tesi_component_t *c;
    bool recorded;
    tes_result_t result =
        begin_pair_call(world, TESI_CMD_PAIR_ADD, source, relation, target, &c, &recorded);
    if (result != TES_OK || recorded) return result;
    if (tesi_pair_find(world, relation, source, target)) return TES_OK;
    if ((c->flags & TES_RELATION_ACYCLIC) &&
        tesi_pair_closes_cycle(world, relation, source, target)) {
        return TES_ERR_CYCLE;
    }
    /* Each end's index on its own: pages follow the two indices, not the range between. */
    uint32_t si = source & TESI_INDEX_MASK, ti = target & TESI_INDEX_MASK;
    result = tesi_pair_reserve(world, relation, 1, si, si + 1);
    if (result == TES_OK) result = tesi_pair_reserve(world, relation, 0, ti, ti + 1);
    if (result != TES_OK) return result;
    tesi_pair_link(world, relation, source, target);
    return TES_OK;
}

tes_result_t tesi_pair_reserve(tes_world_t *world, tes_component_t relation, uint64_t n,
                               uint32_t first, uint32_t end) {
    tesi_component_t *c = &world->components[relation];
    if (n > UINT32_MAX / 2) return TES_ERR_OUT_OF_MEMORY;
    tes_result_t result = pairs_reserve(world, c, (uint32_t)n);
    if (result == TES_OK) result = lists_reserve(world, &c->relation, first, end);
    if (result == TES_OK) result = tesi_sparse_reserve(world, relation, (uint32_t)n, first, end);
    if (result == TES_OK) result = events_reserve(world, &c->relation, 2 * n);
    return result;
}

uint32_t tesi_pair_link(tes_world_t *world, tes_component_t relation, tes_entity_t source,
                        tes_entity_t target) {
    tesi_component_t *c = &world->components[relation];
    tesi_relation_t *r = &c->relation;
    uint32_t si = source & TESI_INDEX_MASK;
    /* An exclusive relation's other pair goes first; the source keeps the relation throughout. */
    if ((c->flags & TES_RELATION_EXCLUSIVE) && list_at(r, TESI_OUT, si)->count) {
        uint32_t old = list_at(r, TESI_OUT, si)->first;
        log_event(world, relation, &r->pairs[old - 1], TES_PAIR_REMOVED);
        unlink(world, r, old);
    }
    uint32_t id = link(world, c, source, target);
    log_event(world, relation, &r->pairs[id - 1], TES_PAIR_ADDED);
    uint32_t slot1 = tesi_sparse_slot(&c->sparse, si);
    if (slot1) {
        tesi_sparse_mark(world, relation, slot1 - 1);
    } else {
        tesi_sparse_insert(world, relation, source);
    }
    return id;
}

tes_result_t tesi_pair_unlink_reserve(tes_world_t *world, tes_component_t relation, uint64_t pairs,
                                      uint32_t sources) {
    tes_result_t result = events_reserve(world, &world->components[relation].relation, pairs);
    if (result == TES_OK) result = tesi_log_reserve(world, relation, sources);
    return result;
}

void tesi_pair_unlink(tes_world_t *world, tes_component_t relation, uint32_t id) {
    remove_pair(world, relation, id);
}

tes_result_t tes_pair_remove(tes_world_t *world, tes_entity_t source, tes_component_t relation,
                             tes_entity_t target) {
    tesi_component_t *c;
    bool recorded;
    tes_result_t result =
        begin_pair_call(world, TESI_CMD_PAIR_REMOVE, source, relation, target, &c, &recorded);
    if (result != TES_OK || recorded) return result;
    uint32_t id = tesi_pair_find(world, relation, source, target);
    if (!id) return TES_OK;
    result = events_reserve(world, &c->relation, 1);
    if (result == TES_OK) result = tesi_log_reserve(world, relation, 1);
    if (result != TES_OK) return result;
    remove_pair(world, relation, id);
    return TES_OK;
}

tes_result_t tesi_pairs_clear(tes_world_t *world, tes_entity_t source, tes_component_t relation) {
    tesi_relation_t *r = &world->components[relation].relation;
    const tesi_list_t *out = tesi_list_of(r, TESI_OUT, source);
    if (!out->count) return TES_OK;
    tes_result_t result = events_reserve(world, r, out->count);
    if (result == TES_OK) result = tesi_log_reserve(world, relation, 1);
    if (result != TES_OK) return result;
    while (out->count)
        remove_pair(world, relation, out->first);
    return TES_OK;
}

tes_result_t tes_pair_has(const tes_world_t *world, tes_entity_t source, tes_component_t relation,
                          tes_entity_t target, bool *out_has) {
    tesi_component_t *c;
    tes_result_t result = check_pair(world, source, relation, target, false, &c);
    if (result != TES_OK) return result;
    if (!out_has) return TES_ERR_INVALID_ARGUMENT;
    *out_has = tesi_pair_find(world, relation, source, target) != 0;
    return TES_OK;
}

/* ---- reading the lists ------------------------------------------------------------------- */

uint32_t tesi_next_ordered_target(const tesi_relation_t *r, uint32_t index) {
    /* A page of lists at a time, an unallocated page in one step: a lookup per index was most of
     * a relation's share of a snapshot. */
    while (index < TESI_INDEX_LIMIT) {
        uint32_t end = (index | TESI_PAGE_MASK) + 1;
        const tesi_list_t *in = tesi_paged_find(&r->lists[TESI_IN], index, sizeof *in);
        for (; in && index < end; index++, in++)
            if (in->count > 1) return index;
        index = end;
    }
    return TESI_INDEX_LIMIT;
}

static tes_result_t check_one(const tes_world_t *world, tes_entity_t e, tes_component_t relation,
                              bool entity_first, tesi_component_t **out) {
    if (!world) return TES_ERR_INVALID_ARGUMENT;
    if (entity_first && !tesi_record_of(world, e)) return tesi_not_alive(world, e);
    tes_result_t result = relation_of(world, relation, out);
    if (result == TES_OK && !entity_first && !tesi_record_of(world, e)) {
        result = tesi_not_alive(world, e);
    }
    return result;
}

/* tes_pair_targets (`outgoing`: e is the source) and tes_pair_sources (e is the target): the
 * other side of every pair on e's list, up to `capacity`, and the total. */
static tes_result_t list_other_side(const tes_world_t *world, tes_entity_t e,
                                    tes_component_t relation, bool outgoing, tes_entity_t *out,
                                    uint32_t capacity, uint32_t *out_count) {
    tesi_component_t *c;
    tes_result_t result = check_one(world, e, relation, outgoing, &c);
    if (result != TES_OK) return result;
    if (!out_count || (capacity && !out)) return TES_ERR_INVALID_ARGUMENT;
    const tesi_relation_t *r = &c->relation;
    int side = outgoing ? TESI_OUT : TESI_IN;
    uint32_t n = 0;
    for (uint32_t id = tesi_list_of(r, side, e)->first; id; id = r->pairs[id - 1].next[side]) {
        if (n < capacity) out[n] = tesi_pair_other(&r->pairs[id - 1], side);
        n++;
    }
    *out_count = n;
    return TES_OK;
}

tes_result_t tes_pair_targets(const tes_world_t *world, tes_entity_t source,
                              tes_component_t relation, tes_entity_t *out, uint32_t capacity,
                              uint32_t *out_count) {
    return list_other_side(world, source, relation, true, out, capacity, out_count);
}

tes_result_t tes_pair_sources(const tes_world_t *world, tes_component_t relation,
                              tes_entity_t target, tes_entity_t *out, uint32_t capacity,
                              uint32_t *out_count) {
    return list_other_side(world, target, relation, false, out, capacity, out_count);
}

tes_result_t tes_pair_target(const tes_world_t *world, tes_entity_t source,
                             tes_component_t relation, tes_entity_t *out_target) {
    tesi_component_t *c;
    tes_result_t result = check_one(world, source, relation, true, &c);
    if (result != TES_OK) return result;
    if (!out_target) return TES_ERR_INVALID_ARGUMENT;
    uint32_t first = tesi_list_of(&c->relation, TESI_OUT, source)->first;
    *out_target = first ? c->relation.pairs[first - 1].target : 0;
    return TES_OK;
}

tes_result_t tes_relation_pairs(const tes_world_t *world, tes_component_t relation,
                                tes_entity_t *out_sources, tes_entity_t *out_targets,
                                uint32_t capacity, uint32_t *out_count) {
    if (!world) return TES_ERR_INVALID_ARGUMENT;
    tesi_component_t *c;
    tes_result_t result = relation_of(world, relation, &c);
    if (result != TES_OK) return result;
    if (!out_count || (capacity && (!out_sources || !out_targets))) {
        return TES_ERR_INVALID_ARGUMENT;
    }
    const tesi_relation_t *r = &c->relation;
    uint32_t n = 0;
    for (uint32_t m = 0; m < c->sparse.count; m++) {
        for (uint32_t id = tesi_list_of(r, TESI_OUT, c->sparse.entities[m])->first; id;
             id = r->pairs[id - 1].next[TESI_OUT]) {
            if (n < capacity) {
                out_sources[n] = r->pairs[id - 1].source;
                out_targets[n] = r->pairs[id - 1].target;
            }
            n++;
        }
    }
    *out_count = n;
    return TES_OK;
}

tes_result_t tes_pair_place(tes_world_t *world, tes_entity_t source, tes_component_t relation,
                            tes_entity_t target, tes_entity_t before) {
    tesi_component_t *c;
    bool deferring = world && tesi_deferring(world);
    tes_result_t result = check_pair(world, source, relation, target, deferring, &c);
    if (result != TES_OK) return result;
    bool before_pending = before && deferring && pending(world, before);
    if (before && !before_pending && !tesi_record_of(world, before)) {
        return tesi_not_alive(world, before);
    }
    /* With a pending end (its pair is recorded too), the place is recorded after it and applied
     * in order at the flush, as tes_pair_add is; the pairs it needs are checked then (a place
     * that cannot apply is skipped and counted). */
    if (before_pending || (deferring && (pending(world, source) || pending(world, target)))) {
        return tesi_defer(world, TESI_CMD_PAIR_PLACE, source, relation, target, before, 0, NULL, 0);
    }
    uint32_t id = tesi_pair_find(world, relation, source, target);
    uint32_t next = before ? tesi_pair_find(world, relation, before, target) : 0;
    if (!id || (before && !next)) return TES_ERR_MISSING_COMPONENT;
    /* Before itself, or where it is already (right before `before`, or last): no move, no
     * event. */
    if (id == next || c->relation.pairs[id - 1].next[TESI_IN] == next) return TES_OK;
    result = events_reserve(world, &c->relation, 1);
    if (result != TES_OK) return result;
    take_out(world, &c->relation, TESI_IN, id);
    insert(world, &c->relation, TESI_IN, id, next);
    log_event(world, relation, &c->relation.pairs[id - 1], TES_PAIR_MOVED);
    return TES_OK;
}

/* ---- walking --------------------------------------------------------------------------- */

static tes_result_t push_index(tes_world_t *world, uint32_t **array, uint32_t *count,
                               uint32_t *slots, uint32_t value) {
    tes_result_t result =
        tesi_reserve(world, (void **)array, slots, *count + 1, sizeof **array, 64);
    if (result == TES_OK) (*array)[(*count)++] = value;
    return result;
}

static void unmark(tes_world_t *world, const uint32_t *indices, uint32_t n) {
    for (uint32_t i = 0; i < n; i++)
        tesi_record_at(world, indices[i])->row &= ~TESI_ROW_MARK;
}

tes_result_t tes_relation_walk(tes_world_t *world, tes_component_t relation, tes_entity_t root,
                               tes_entity_t *out, uint32_t *out_depths, uint32_t capacity,
                               uint32_t *out_count) {
    tesi_component_t *c;
    tes_result_t result = check_one(world, root, relation, false, &c);
    if (result != TES_OK) return result;
    if (!out_count || (capacity && !out)) return TES_ERR_INVALID_ARGUMENT;
    const tesi_relation_t *r = &c->relation;
    /* Visited entities are marked on their records (world->doomed lists them to unmark); the
     * stack holds, per depth, the next pair of that level's list of sources. */
    uint32_t seen = 0, depth = 0, stack_slots = 0, n = 0, *stack = NULL;
    result = push_index(world, &world->doomed, &seen, &world->doomed_slots, root & TESI_INDEX_MASK);
    if (result == TES_OK) {
        /* Marked only once listed, so that the unmarking below finds every mark. */
        tesi_record_at(world, root & TESI_INDEX_MASK)->row |= TESI_ROW_MARK;
        result =
            push_index(world, &stack, &depth, &stack_slots, tesi_list_of(r, TESI_IN, root)->first);
    }
    while (result == TES_OK && depth) {
        uint32_t id = stack[depth - 1];
        if (!id) {
            depth--;
            continue;
        }
        const tesi_pair_t *p = &r->pairs[id - 1];
        stack[depth - 1] = p->next[TESI_IN];
        tesi_record_t *record = tesi_record_at(world, p->source & TESI_INDEX_MASK);
        if (record->row & TESI_ROW_MARK) continue;
        record->row |= TESI_ROW_MARK;
        result = push_index(world, &world->doomed, &seen, &world->doomed_slots,
                            p->source & TESI_INDEX_MASK);
        if (result != TES_OK) {
            record->row &= ~TESI_ROW_MARK;
            break;
        }
        if (n < capacity) {
            out[n] = p->source;
            if (out_depths) out_depths[n] = depth;
        }
        n++;
        result = push_index(world, &stack, &depth, &stack_slots,
                            tesi_list_of(r, TESI_IN, p->source)->first);
    }
    unmark(world, world->doomed, seen);
    tesi_free(world, stack, (size_t)stack_slots * sizeof *stack);
    if (result == TES_OK) *out_count = n;
    return result;
}

/* ---- pair data --------------------------------------------------------------------------- */

/* The pair's field, after every check; `element` and the value are the caller's. */
static tes_result_t pair_field(const tes_world_t *world, tes_entity_t source,
                               tes_component_t relation, tes_entity_t target, uint32_t field,
                               uint32_t element, bool pending_ok, tesi_component_t **out_c,
                               const tesi_field_t **out_field, uint32_t *out_id) {
    tes_result_t result = check_pair(world, source, relation, target, pending_ok, out_c);
    if (result == TES_OK) result = tesi_field_of(*out_c, field, out_field);
    if (result != TES_OK) return result;
    if (element >= (*out_field)->length) return TES_ERR_ELEMENT_OUT_OF_RANGE;
    *out_id = tesi_pair_find(world, relation, source, target);
    return TES_OK;
}

static uint8_t *pair_cell(const tesi_component_t *c, uint32_t id, const tesi_field_t *f,
                          uint32_t element) {
    return c->relation.data + (size_t)(id - 1) * c->stride + f->offset +
           (size_t)element * tes_type_size(f->type);
}

tes_result_t tes_pair_get_number(const tes_world_t *world, tes_entity_t source,
                                 tes_component_t relation, tes_entity_t target, uint32_t field,
                                 uint32_t element, double *out) {
    tesi_component_t *c;
    const tesi_field_t *f;
    uint32_t id;
    tes_result_t result =
        pair_field(world, source, relation, target, field, element, false, &c, &f, &id);
    if (result != TES_OK) return result;
    if (!id) return TES_ERR_MISSING_COMPONENT;
    if (!out) return TES_ERR_INVALID_ARGUMENT;
    *out = tesi_decode_number(f->type, pair_cell(c, id, f, element));
    return TES_OK;
}

/* A data write (not an init) of pair `id` logs one changed event per pair per tick, and stamps the
 * source's relation changed: room for the event first, then the marks. */
static tes_result_t reserve_write(tes_world_t *world, tesi_relation_t *r, uint32_t id) {
    return r->pairs[id - 1].changed != world->change_tick ? events_reserve(world, r, 1) : TES_OK;
}

void tesi_pair_mark(tes_world_t *world, tes_component_t relation, uint32_t id) {
    tesi_component_t *c = &world->components[relation];
    tesi_pair_t *p = &c->relation.pairs[id - 1];
    if (p->changed != world->change_tick) {
        p->changed = world->change_tick;
        log_event(world, relation, p, TES_PAIR_CHANGED);
    }
    tesi_sparse_mark(world, relation,
                     tesi_sparse_slot(&c->sparse, p->source & TESI_INDEX_MASK) - 1);
}

tes_result_t tesi_pair_write(tes_world_t *world, tes_component_t relation, uint32_t id,
                             const uint8_t *packed, bool init) {
    tesi_component_t *c = &world->components[relation];
    tes_result_t result = init ? TES_OK : reserve_write(world, &c->relation, id);
    if (result != TES_OK) return result;
    uint8_t *row = tesi_row_at(c->relation.data, id - 1, c->stride);
    tesi_touch(world, c->relation.pairs[id - 1].source & TESI_INDEX_MASK);
    for (uint32_t f = 0; f < c->field_count; f++) {
        memcpy(row + c->fields[f].offset, packed, c->fields[f].bytes);
        packed += c->fields[f].bytes;
    }
    if (!init) tesi_pair_mark(world, relation, id);
    return TES_OK;
}

static tes_result_t write_pair(tes_world_t *world, tes_entity_t source, tes_component_t relation,
                               tes_entity_t target, uint32_t field, uint32_t element, double value,
                               bool init) {
    tesi_component_t *c;
    const tesi_field_t *f;
    uint32_t id;
    bool deferring = world && tesi_deferring(world);
    tes_result_t result =
        pair_field(world, source, relation, target, field, element, deferring, &c, &f, &id);
    if (result != TES_OK) return result;
    uint8_t scratch[8];
    if (!tesi_encode_number(f->type, value, scratch)) return TES_ERR_BAD_VALUE;
    if (deferring && (pending(world, source) || pending(world, target))) {
        /* With its recorded pair add, applied after it at the flush: the pair is new then, so
         * a set is its initial value too. */
        result = tesi_defer(world, TESI_CMD_PAIR_INIT_NUMBER, source, relation, target, field,
                            value, NULL, 0);
        if (result == TES_OK) world->commands[world->command_count - 1].d = element;
        return result;
    }
    if (!id) return TES_ERR_MISSING_COMPONENT;
    if (!init && (result = reserve_write(world, &c->relation, id)) != TES_OK) return result;
    tesi_touch(world, source & TESI_INDEX_MASK);
    memcpy(pair_cell(c, id, f, element), scratch, tes_type_size(f->type));
    if (!init) tesi_pair_mark(world, relation, id);
    return TES_OK;
}

tes_result_t tes_pair_set_number(tes_world_t *world, tes_entity_t source, tes_component_t relation,
                                 tes_entity_t target, uint32_t field, uint32_t element,
                                 double value) {
    return write_pair(world, source, relation, target, field, element, value, false);
}

tes_result_t tes_pair_init_number(tes_world_t *world, tes_entity_t source, tes_component_t relation,
                                  tes_entity_t target, uint32_t field, uint32_t element,
                                  double value) {
    return write_pair(world, source, relation, target, field, element, value, true);
}

/* ---- despawning -------------------------------------------------------------------------- */

/* Pairs of an entity, as a source and as a target, in one relation. */
static uint32_t pairs_of(const tesi_relation_t *r, uint32_t index) {
    return tesi_list_of(r, TESI_OUT, index)->count + tesi_list_of(r, TESI_IN, index)->count;
}

/* Adds to world->doomed every source that depends on doomed[from..] through a CASCADE relation,
 * marking each once; the caller unmarks. */
static tes_result_t close_over_cascades(tes_world_t *world, uint32_t *count) {
    for (uint32_t k = 0; k < *count; k++) {
        uint32_t index = world->doomed[k];
        for (uint32_t s = 0; s < world->sparse_count; s++) {
            const tesi_component_t *c = &world->components[world->sparse_ids[s]];
            if (!(c->flags & TES_RELATION_CASCADE)) continue;
            const tesi_relation_t *r = &c->relation;
            for (uint32_t id = tesi_list_of(r, TESI_IN, index)->first; id;
                 id = r->pairs[id - 1].next[TESI_IN]) {
                uint32_t source = r->pairs[id - 1].source & TESI_INDEX_MASK;
                tesi_record_t *record = tesi_record_at(world, source);
                if (record->row & TESI_ROW_MARK) continue;
                tes_result_t result =
                    push_index(world, &world->doomed, count, &world->doomed_slots, source);
                if (result != TES_OK) return result;
                record->row |= TESI_ROW_MARK;
            }
        }
    }
    return TES_OK;
}

/* Everything the doomed entities' despawn will log, reserved up front. */
static tes_result_t reserve_for(tes_world_t *world, uint32_t count) {
    if (tesi_logging(world)) {
        tes_result_t result = tesi_logs_reserve(world, NULL, count);
        if (result != TES_OK) return result;
    }
    for (uint32_t s = 0; s < world->sparse_count; s++) {
        tes_component_t rel = world->sparse_ids[s];
        tesi_component_t *c = &world->components[rel];
        if (!tesi_is_relation(c)) continue;
        uint64_t pairs = 0;
        for (uint32_t k = 0; k < count; k++)
            pairs += pairs_of(&c->relation, world->doomed[k]);
        if (!pairs) continue;
        /* Every pair gives an event; every source that loses its last pair, a removal. */
        tes_result_t result = events_reserve(world, &c->relation, pairs);
        if (result == TES_OK && pairs > UINT32_MAX / 2) result = TES_ERR_OUT_OF_MEMORY;
        if (result == TES_OK) result = tesi_log_reserve(world, rel, (uint32_t)pairs);
        if (result != TES_OK) return result;
    }
    return TES_OK;
}

/* Takes every pair and sparse membership of a live entity away. */
static void detach(tes_world_t *world, tes_entity_t e) {
    uint32_t index = e & TESI_INDEX_MASK;
    for (uint32_t s = 0; s < world->sparse_count; s++) {
        tes_component_t id = world->sparse_ids[s];
        tesi_component_t *c = &world->components[id];
        if (tesi_is_relation(c) && pairs_of(&c->relation, index)) {
            for (int side = 0; side < 2; side++) {
                const tesi_list_t *list = list_at(&c->relation, side, index);
                while (list->count)
                    remove_pair(world, id, list->first);
            }
        }
        tesi_sparse_erase(world, id, e);
    }
}

tes_result_t tesi_despawn_all(tes_world_t *world, const tes_entity_t *entities, uint32_t n,
                              bool cascade) {
    uint32_t count = 0;
    tes_result_t result = tesi_reserve(world, (void **)&world->doomed, &world->doomed_slots, n,
                                       sizeof *world->doomed, 64);
    if (result != TES_OK) return result;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t index = entities[i] & TESI_INDEX_MASK;
        world->doomed[count++] = index;
        tesi_record_at(world, index)->row |= TESI_ROW_MARK;
    }
    if (world->relation_count && cascade) result = close_over_cascades(world, &count);
    unmark(world, world->doomed, count);
    if (result == TES_OK) result = reserve_for(world, count);
    if (result != TES_OK) return result;
    /* Back to front, as tes_despawn_batch does: a list in spawn order empties from the end. */
    for (uint32_t k = count; k-- > 0;) {
        tesi_record_t *record = tesi_record_at(world, world->doomed[k]);
        detach(world, tesi_make_handle(world->doomed[k], tesi_generation(record)));
    }
    for (uint32_t k = count; k-- > 0;)
        tesi_despawn_record(world, tesi_record_at(world, world->doomed[k]));
    return TES_OK;
}

/* ---- pruning, validation, teardown -------------------------------------------------------- */

void tesi_relation_prune(tes_world_t *world, tes_component_t relation, uint64_t min) {
    tesi_relation_t *r = &world->components[relation].relation;
    tesi_ticked_prune(r->events, sizeof *r->events, r->event_ticks, &r->event_count, min);
}

#define CHECK(cond)                          \
    do {                                     \
        if (!(cond)) return TES_ERR_CORRUPT; \
    } while (0)

/* Walks e's list of `side`, checking its links both ways, its count, and that every pair on it
 * names e on that side. */
static tes_result_t check_list(const tesi_relation_t *r, int side, tes_entity_t e) {
    const tesi_list_t *list = tesi_list_of(r, side, e);
    uint32_t n = 0, prev = 0;
    for (uint32_t id = list->first; id; id = r->pairs[id - 1].next[side]) {
        CHECK(id <= r->pair_used && n < r->pair_count);
        const tesi_pair_t *p = &r->pairs[id - 1];
        CHECK(tesi_pair_owner(p, side) == e);
        CHECK(p->prev[side] == prev);
        prev = id;
        n++;
    }
    CHECK(list->last == prev && list->count == n);
    return TES_OK;
}

tes_result_t tesi_relation_validate(const tes_world_t *world, tes_component_t relation) {
    const tesi_component_t *c = &world->components[relation];
    const tesi_relation_t *r = &c->relation;
    uint32_t live = 0;
    for (uint32_t id = 1; id <= r->pair_used; id++) {
        const tesi_pair_t *p = &r->pairs[id - 1];
        if (!p->source) continue;
        live++;
        CHECK(tesi_record_of(world, p->source) && tesi_record_of(world, p->target));
    }
    CHECK(live == r->pair_count);
    uint32_t outs = 0, ins = 0;
    for (uint32_t index = 0; index < TESI_INDEX_LIMIT; index++) {
        if (!tesi_paged_find(&r->lists[TESI_OUT], index, sizeof(tesi_list_t)) &&
            !tesi_paged_find(&r->lists[TESI_IN], index, sizeof(tesi_list_t))) {
            index |= TESI_PAGE_MASK; /* unallocated on both sides: no pairs */
            continue;
        }
        const tesi_list_t *out = tesi_list_of(r, TESI_OUT, index);
        const tesi_list_t *in = tesi_list_of(r, TESI_IN, index);
        outs += out->count;
        ins += in->count;
        bool member = tesi_sparse_slot(&c->sparse, index) != 0;
        CHECK(member == (out->count > 0));
        if (!out->count && !in->count) continue;
        const tesi_record_t *record =
            index < world->record_count ? tesi_record_find(world, index) : NULL;
        CHECK(record && record->chunk != NULL);
        tes_entity_t e = tesi_make_handle(index, tesi_generation(record));
        if (check_list(r, TESI_OUT, e) != TES_OK || check_list(r, TESI_IN, e) != TES_OK) {
            return TES_ERR_CORRUPT;
        }
        CHECK(!(c->flags & TES_RELATION_EXCLUSIVE) || out->count <= 1);
    }
    CHECK(outs == r->pair_count && ins == r->pair_count);
    for (uint32_t i = 1; i < r->event_count; i++)
        CHECK(r->event_ticks[i - 1] <= r->event_ticks[i]);
    return TES_OK;
}

void tesi_relation_fini(tes_world_t *world, tesi_component_t *c) {
    tesi_relation_t *r = &c->relation;
    tesi_free(world, r->pairs, (size_t)r->pair_slots * sizeof *r->pairs);
    if (c->stride) tesi_free(world, r->data, (size_t)r->pair_slots * c->stride);
    for (int side = 0; side < 2; side++)
        tesi_paged_fini(world, &r->lists[side], sizeof(tesi_list_t));
    tesi_free(world, r->events, r->event_slots * sizeof *r->events);
    tesi_free(world, r->event_ticks, r->event_slots * sizeof *r->event_ticks);
}

/* ---- rollback (rewind.c) ------------------------------------------------------------------ */

tes_result_t tesi_pairs_restore_reserve(tes_world_t *world, tes_component_t relation, uint64_t adds,
                                        uint64_t events) {
    tesi_component_t *c = &world->components[relation];
    if (adds > UINT32_MAX / 2) return TES_ERR_OUT_OF_MEMORY;
    tes_result_t result = pairs_reserve(world, c, (uint32_t)adds);
    if (result == TES_OK) result = events_reserve(world, &c->relation, events);
    return result;
}

/* The target of an image's out pair k (u32 target, then the relation's data). */
static tes_entity_t out_target(const uint8_t *outs, uint32_t stride, uint32_t k) {
    tes_entity_t target;
    memcpy(&target, outs + (size_t)k * (4 + stride), sizeof target);
    return target;
}

/* A rewind changed the pairs of the member at `index` (it keeps the relation): a change of the
 * relation for it, as a call's would be; unless the rewind made it a member again just now,
 * which is its added. */
static void mark_member(tes_world_t *world, tes_component_t relation, uint32_t index) {
    tesi_sparse_t *s = &world->components[relation].sparse;
    uint32_t slot1 = tesi_sparse_slot(s, index);
    if (slot1 && s->added[slot1 - 1] != world->change_tick) {
        tesi_sparse_mark(world, relation, slot1 - 1);
    }
}

void tesi_pairs_keep(tes_world_t *world, tes_component_t relation, uint32_t index,
                     tes_entity_t source, const uint8_t *outs, uint32_t n) {
    tesi_component_t *c = &world->components[relation];
    tesi_relation_t *r = &c->relation;
    bool lost = false; /* a pair of `source` went */
    for (uint32_t id = tesi_list_of(r, TESI_OUT, index)->first; id;) {
        uint32_t next = r->pairs[id - 1].next[TESI_OUT];
        /* The index's pairs now may be another entity's: one spawned on it since, whose pair
         * to the same target is not the image's pair (tesi_pairs_put would add that again). */
        bool kept = false;
        for (uint32_t k = 0; k < n && !kept && r->pairs[id - 1].source == source; k++)
            kept = out_target(outs, c->stride, k) == r->pairs[id - 1].target;
        if (!kept) {
            lost |= r->pairs[id - 1].source == source;
            log_event(world, relation, &r->pairs[id - 1], TES_PAIR_REMOVED);
            unlink(world, r, id);
        }
        id = next;
    }
    if (lost) mark_member(world, relation, index);
}

void tesi_pairs_put(tes_world_t *world, tes_component_t relation, tes_entity_t source,
                    const uint8_t *outs, uint32_t n) {
    tesi_component_t *c = &world->components[relation];
    tesi_relation_t *r = &c->relation;
    /* A source's targets keep the order they were added in, and events add at the end only:
     * the pairs in their place stay, and from the first one out of place on, each goes to the
     * end. For a replica replaying the events those are removed and added again (and moved: it
     * rebuilds their target's order of sources, which does not change here). */
    uint32_t cursor = tesi_list_of(r, TESI_OUT, source)->first;
    bool appending = false, moved = false; /* moved: a pair added or put elsewhere */
    for (uint32_t k = 0; k < n; k++) {
        tes_entity_t target = out_target(outs, c->stride, k);
        const uint8_t *data = outs + (size_t)k * (4 + c->stride) + 4;
        uint32_t id = tesi_pair_find(world, relation, source, target);
        bool kept = id != 0, in_place = !appending && kept && id == cursor;
        if (in_place) cursor = r->pairs[id - 1].next[TESI_OUT];
        appending = !in_place;
        moved |= !in_place;
        if (!kept) {
            id = link(world, c, source, target);
            log_event(world, relation, &r->pairs[id - 1], TES_PAIR_ADDED);
        } else if (!in_place) {
            log_event(world, relation, &r->pairs[id - 1], TES_PAIR_REMOVED);
            log_event(world, relation, &r->pairs[id - 1], TES_PAIR_ADDED);
            log_event(world, relation, &r->pairs[id - 1], TES_PAIR_MOVED);
            take_out(world, r, TESI_OUT, id);
            insert(world, r, TESI_OUT, id, 0);
        }
        uint8_t *row = tesi_row_at(r->data, id - 1, c->stride);
        if (c->stride && memcmp(row, data, c->stride)) {
            memcpy(row, data, c->stride);
            if (in_place) tesi_pair_mark(world, relation, id);
        }
    }
    if (moved) mark_member(world, relation, source & TESI_INDEX_MASK);
}

void tesi_pairs_order_sources(tes_world_t *world, tes_component_t relation, tes_entity_t target,
                              const uint8_t *ins, uint32_t n) {
    tesi_relation_t *r = &world->components[relation].relation;
    uint32_t at = tesi_list_of(r, TESI_IN, target)->first;
    for (uint32_t k = 0; k < n; k++) {
        tes_entity_t source;
        memcpy(&source, ins + (size_t)k * 4, sizeof source);
        uint32_t id = tesi_pair_find(world, relation, source, target);
        if (id == at) { /* already in its place */
            at = r->pairs[id - 1].next[TESI_IN];
            continue;
        }
        take_out(world, r, TESI_IN, id);
        insert(world, r, TESI_IN, id, at);
        log_event(world, relation, &r->pairs[id - 1], TES_PAIR_MOVED);
    }
}
