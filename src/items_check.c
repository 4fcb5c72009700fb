/* The check phase of the item calls (tessera.h, "Item lists"): the items, values and
 * entities of a call, against the world as it is, before anything is planned or changed; the
 * scratch the calls share (world->edit). */
#include "items.h"

/* The longest item list: far more than any component set (4096 components) plus pairs. */
#define MAX_ITEMS (1u << 16)

tes_result_t tesi_items_fail(const call_t *call, tes_result_t result, uint32_t item, uint32_t value,
                             uint32_t number, tes_entity_t entity) {
    if (call->fault) *call->fault = (tes_fault_t){item, value, number, entity};
    return result;
}

static tes_result_t entity_fail(const call_t *call, tes_result_t result, tes_entity_t entity) {
    return tesi_items_fail(call, result, TES_NO_FAULT, TES_NO_FAULT, TES_NO_FAULT, entity);
}

/* ---- scratch ------------------------------------------------------------------------------ */

void tesi_edit_fini(tes_world_t *world) {
    tesi_edit_t *e = &world->edit;
    tesi_free(world, e->seen, (size_t)e->seen_slots * sizeof *e->seen);
    tesi_free(world, e->table, (size_t)e->table_slots * sizeof *e->table);
    tesi_free(world, e->pairs, (size_t)e->pair_slots * sizeof *e->pairs);
    tesi_free(world, e->had, (size_t)e->had_slots * sizeof *e->had);
    tesi_free(world, e->plans, (size_t)e->plan_slots * sizeof *e->plans);
    tesi_free(world, e->entities, (size_t)e->entity_slots * sizeof *e->entities);
}

static tes_result_t reserve_scratch(tes_world_t *world, uint32_t items) {
    tesi_edit_t *e = &world->edit;
    uint32_t old = e->seen_slots;
    tes_result_t result = tesi_reserve(world, (void **)&e->seen, &e->seen_slots,
                                       world->component_count + 1, sizeof *e->seen, 64);
    if (result != TES_OK) return result;
    /* Fresh slots must not look seen in this epoch. */
    if (e->seen_slots != old)
        memset(e->seen + old, 0, (size_t)(e->seen_slots - old) * sizeof *e->seen);
    result =
        tesi_reserve(world, (void **)&e->table, &e->table_slots, items + 1, sizeof *e->table, 16);
    /* Pairs are sorted with a merge sort that needs as much room again. */
    if (result == TES_OK) {
        result = tesi_reserve(world, (void **)&e->pairs, &e->pair_slots, 2 * items + 2,
                              sizeof *e->pairs, 16);
    }
    if (result == TES_OK) {
        result =
            tesi_reserve(world, (void **)&e->had, &e->had_slots, items + 1, sizeof *e->had, 16);
    }
    return result;
}

/* ---- check -------------------------------------------------------------------------------- */

static uint64_t pair_key(const tes_item_t *item) {
    return (uint64_t)item->component << 32 | item->target;
}

/* Sorts item indices by pair key (relation, target): a bottom-up merge sort through `tmp`. */
static void sort_pairs(const tes_item_t *items, uint32_t *list, uint32_t *tmp, uint32_t n) {
    for (uint32_t width = 1; width < n; width *= 2) {
        for (uint32_t lo = 0; lo < n; lo += 2 * width) {
            uint32_t mid = lo + width < n ? lo + width : n;
            uint32_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            uint32_t a = lo, b = mid, k = lo;
            while (a < mid && b < hi)
                tmp[k++] =
                    pair_key(&items[list[b]]) < pair_key(&items[list[a]]) ? list[b++] : list[a++];
            while (a < mid)
                tmp[k++] = list[a++];
            while (b < hi)
                tmp[k++] = list[b++];
        }
        memcpy(list, tmp, (size_t)n * sizeof *list);
    }
}

/* A pair's target: alive, or (while recording) pending. */
static tes_result_t check_target(const call_t *call, tes_entity_t target) {
    const tes_world_t *world = call->world;
    if (tesi_record_of(world, target)) return TES_OK;
    if (call->deferring && tesi_pending_record(world, target)) return TES_OK;
    return tesi_not_alive(world, target);
}

tes_result_t tesi_items_check(call_t *call) {
    tes_world_t *world = call->world;
    const tes_items_t *x = call->x;
    if (!x || x->item_count > MAX_ITEMS)
        return tesi_items_fail(call, TES_ERR_INVALID_ARGUMENT, 0, 0, 0, 0);
    if ((x->item_count && !x->items) || (x->value_count && !x->values) ||
        (x->number_count && !x->numbers)) {
        return tesi_items_fail(call, TES_ERR_INVALID_ARGUMENT, TES_NO_FAULT, TES_NO_FAULT,
                               TES_NO_FAULT, 0);
    }
    if (call->kind == EDIT_REMOVE && x->value_count) {
        return tesi_items_fail(call, TES_ERR_INVALID_ARGUMENT, x->values[0].item, 0, TES_NO_FAULT,
                               0);
    }
    tes_result_t result = reserve_scratch(world, x->item_count);
    if (result != TES_OK) return result;
    tesi_edit_t *e = &world->edit;
    if (++e->epoch == 0) {
        memset(e->seen, 0, (size_t)e->seen_slots * sizeof *e->seen);
        e->epoch = 1;
    }
    uint32_t table = 0, pairs = 0, sparse = 0;
    for (uint32_t i = 0; i < x->item_count; i++) {
        const tes_item_t *item = &x->items[i];
        if (item->component >= world->component_count) {
            return tesi_items_fail(call, TES_ERR_UNKNOWN_COMPONENT, i, TES_NO_FAULT, TES_NO_FAULT,
                                   0);
        }
        const tesi_component_t *c = &world->components[item->component];
        if (tesi_is_relation(c)) {
            /* A bare relation names every pair of the entity: only removing can do that. */
            if (!item->target && call->kind != EDIT_REMOVE) {
                return tesi_items_fail(call, TES_ERR_NEEDS_TARGET, i, TES_NO_FAULT, TES_NO_FAULT,
                                       0);
            }
            if (item->target && (result = check_target(call, item->target)) != TES_OK) {
                return tesi_items_fail(call, result, i, TES_NO_FAULT, TES_NO_FAULT, item->target);
            }
            e->pairs[pairs++] = i;
            continue;
        }
        if (item->target) {
            return tesi_items_fail(call, TES_ERR_NOT_A_RELATION, i, TES_NO_FAULT, TES_NO_FAULT, 0);
        }
        if (e->seen[item->component] == e->epoch) {
            return tesi_items_fail(call, TES_ERR_INVALID_ARGUMENT, i, TES_NO_FAULT, TES_NO_FAULT,
                                   0);
        }
        e->seen[item->component] = e->epoch;
        if (tesi_is_sparse(c)) {
            sparse++;
            continue;
        }
        /* Insertion: component sets are short and usually come sorted. */
        uint32_t at = table++;
        while (at > 0 && e->table[at - 1] > item->component) {
            e->table[at] = e->table[at - 1];
            at--;
        }
        e->table[at] = item->component;
    }
    sort_pairs(x->items, e->pairs, e->pairs + pairs, pairs);
    for (uint32_t k = 1; k < pairs; k++) {
        const tes_item_t *a = &x->items[e->pairs[k - 1]], *b = &x->items[e->pairs[k]];
        bool twice = pair_key(a) == pair_key(b);
        bool exclusive = a->component == b->component && tesi_items_adding(call->kind) &&
                         (world->components[a->component].flags & TES_RELATION_EXCLUSIVE);
        if (twice || exclusive) {
            uint32_t later = e->pairs[k - 1] > e->pairs[k] ? e->pairs[k - 1] : e->pairs[k];
            return tesi_items_fail(call, TES_ERR_INVALID_ARGUMENT, later, TES_NO_FAULT,
                                   TES_NO_FAULT, 0);
        }
    }
    for (uint32_t v = 0; v < x->value_count; v++) {
        const tes_value_t *value = &x->values[v];
        if (value->item >= x->item_count) {
            return tesi_items_fail(call, TES_ERR_INVALID_ARGUMENT, TES_NO_FAULT, v, TES_NO_FAULT,
                                   0);
        }
        const tesi_component_t *c = &world->components[x->items[value->item].component];
        const tesi_field_t *f;
        if ((result = tesi_field_of(c, value->field, &f)) != TES_OK) {
            return tesi_items_fail(call, result, value->item, v, TES_NO_FAULT, 0);
        }
        /* Positions whose numbers are read: one block, or one per entity with a stride. */
        uint64_t first = value->stride ? call->first : 0;
        uint64_t last = value->stride ? first + call->n : 1; /* exclusive; < 2^33 */
        if (value->stride && call->n == 0) continue;         /* no entity reads anything */
        /* last - 1 <= number_count < 2^32 keeps the products below 2^64. */
        if (last - 1 > x->number_count ||
            (uint64_t)value->number + (last - 1) * value->stride + f->length > x->number_count) {
            return tesi_items_fail(call, TES_ERR_INVALID_ARGUMENT, value->item, v, TES_NO_FAULT, 0);
        }
        uint8_t cell[8];
        for (uint64_t i = first; i < last; i++) {
            uint32_t at = value->number + (uint32_t)i * value->stride;
            for (uint32_t k = 0; k < f->length; k++) {
                if (!tesi_encode_number(f->type, x->numbers[at + k], cell)) {
                    return tesi_items_fail(call, TES_ERR_BAD_VALUE, value->item, v, at + k, 0);
                }
            }
        }
    }
    call->table = e->table;
    call->table_count = table;
    call->pairs = e->pairs;
    call->pair_count = pairs;
    call->sparse_count = sparse;
    return TES_OK;
}

/* Every listed entity alive (or, while recording, pending), none twice. */
tes_result_t tesi_items_check_entities(const call_t *call, const tes_entity_t *entities,
                                       uint32_t n) {
    tes_world_t *world = call->world;
    if (n && !entities) return entity_fail(call, TES_ERR_INVALID_ARGUMENT, 0);
    tes_result_t result = TES_OK;
    uint32_t marked = 0;
    for (; marked < n; marked++) {
        tes_entity_t entity = entities[marked];
        tesi_record_t *record = tesi_record_of(world, entity);
        if (!record && call->deferring) record = tesi_pending_record(world, entity);
        if (!record) {
            result = entity_fail(call, tesi_not_alive(world, entity), entity);
            break;
        }
        if (record->row & TESI_ROW_MARK) {
            result = entity_fail(call, TES_ERR_DUPLICATE_ENTITY, entity);
            break;
        }
        record->row |= TESI_ROW_MARK;
    }
    for (uint32_t i = 0; i < marked; i++)
        tesi_record_at(world, entities[i] & TESI_INDEX_MASK)->row &= ~TESI_ROW_MARK;
    return result;
}

/* Whether a placed entity has item i now, and where its pair is (id + 1). */
bool tesi_items_has(const tes_world_t *world, const tesi_record_t *record, tes_entity_t entity,
                    const tes_item_t *item, uint32_t *out_pair) {
    const tesi_component_t *c = &world->components[item->component];
    *out_pair = 0;
    if (tesi_is_relation(c)) {
        *out_pair = tesi_pair_find(world, item->component, entity, item->target);
        return *out_pair != 0;
    }
    if (tesi_is_sparse(c)) return tesi_sparse_slot(&c->sparse, entity & TESI_INDEX_MASK) != 0;
    return tesi_type_index(record->chunk->archetype, item->component) != TESI_NO_TYPE;
}

/* Whether a pending entity will have item `it` once its recorded commands apply: a table
 * component by the archetype its record follows, a sparse component or a pair of a relation by
 * the recorded commands. */
static bool pending_has_item(const tes_world_t *world, const tesi_record_t *pending,
                             tes_entity_t entity, const tes_item_t *it) {
    const tesi_component_t *c = &world->components[it->component];
    if (tesi_is_sparse(c)) return tesi_recorded(world, entity, it->component, it->target) == 1;
    return tesi_type_index(tesi_pending_archetype(world, pending), it->component) != TESI_NO_TYPE;
}

/* Checks of what the entities have: cycles (adding; a pending entity's when its commands
 * apply), missing items (writing: a pending entity's against what it will have, as tes_set
 * does, so that a write that could only be skipped at the flush is refused now). */
tes_result_t tesi_items_check_placed(call_t *call, const tes_entity_t *entities, uint32_t n) {
    const tes_world_t *world = call->world;
    const tes_items_t *x = call->x;
    for (uint32_t i = 0; i < n; i++) {
        tes_entity_t entity = entities[i];
        const tesi_record_t *record = tesi_record_of(world, entity);
        if (tesi_items_adding(call->kind)) {
            for (uint32_t k = 0; k < call->pair_count; k++) {
                const tes_item_t *item = &x->items[call->pairs[k]];
                /* A pair to itself closes a cycle, placed or pending (not recorded to be
                 * skipped at the flush); other cycles of a pending entity's are known then. */
                if ((world->components[item->component].flags & TES_RELATION_ACYCLIC) &&
                    (item->target == entity ||
                     (record && tesi_record_of(world, item->target) &&
                      tesi_pair_closes_cycle(world, item->component, entity, item->target)))) {
                    return tesi_items_fail(call, TES_ERR_CYCLE, call->pairs[k], TES_NO_FAULT,
                                           TES_NO_FAULT, entity);
                }
            }
        } else if (call->kind == EDIT_SET) {
            const tesi_record_t *pending = record ? NULL : tesi_pending_record(world, entity);
            for (uint32_t v = 0; v < x->value_count; v++) {
                uint32_t item = x->values[v].item, pair;
                const tes_item_t *it = &x->items[item];
                if (record ? tesi_items_has(world, record, entity, it, &pair)
                           : pending_has_item(world, pending, entity, it)) {
                    /* Present now, but added again by a recorded command: the write follows
                     * that add (as tes_set's does, field.c). */
                    if (record && call->deferring &&
                        tesi_recorded(world, entity, it->component, it->target) == 1) {
                        call->record = true;
                    }
                    continue;
                } else if (record && call->deferring &&
                           tesi_recorded(world, entity, it->component, it->target) == 1) {
                    /* Missing now, but brought by a recorded add: the write follows it. */
                    call->record = true;
                    continue;
                }
                return tesi_items_fail(call, TES_ERR_MISSING_COMPONENT, item, v, TES_NO_FAULT,
                                       entity);
            }
        }
    }
    return TES_OK;
}
