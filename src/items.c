/* Item lists (tessera.h, "Item lists"): spawning, adding, writing and removing several
 * components, pairs and values in one call, all or nothing. Every call runs in three phases:
 *   check   the items, values and entities, against the world as it is (items_check.c);
 *   plan    the target archetype of each source archetype (created when missing) and every
 *           byte the commit will need: chunk rows, sparse and pair room, removal logs, pair
 *           events, or command room when the call is recorded;
 *   commit  which cannot fail.
 * While deferring, a call is recorded whole (TESI_CMD_ITEMS with a copy of its items and values)
 * and the flush applies it through the same code, so what it does is decided then: an add of a
 * component the entity has by then is a change, as it would be outside a loop. The calls over a
 * query are items_query.c's. */
#include "items.h"
#include "row.h"

/* ---- plan ----------------------------------------------------------------------------------- */

void tesi_items_unplan(tes_world_t *world) {
    tesi_edit_t *e = &world->edit;
    for (uint32_t p = 0; p < e->plan_count; p++)
        e->plans[p].from->plan = 0;
    e->plan_count = 0;
}

/* The set `from` becomes with the call's table components added or removed, into
 * world->scratch; *out_count 0 changes means `from` itself (nothing written). */
static tes_result_t target_set(const call_t *call, const tesi_archetype_t *from,
                               uint32_t *out_changes, uint32_t *out_last, uint32_t *out_count) {
    tes_world_t *world = call->world;
    bool removing = call->kind == EDIT_REMOVE;
    uint32_t changes = 0, last = 0;
    for (uint32_t k = 0; k < call->table_count; k++) {
        if ((tesi_type_index(from, call->table[k]) != TESI_NO_TYPE) == removing) {
            changes++;
            last = call->table[k];
        }
    }
    *out_changes = changes;
    *out_last = last;
    *out_count = 0;
    if (changes == 0) return TES_OK;
    tes_result_t result =
        tesi_reserve(world, (void **)&world->scratch, &world->scratch_slots,
                     from->component_count + call->table_count + 1, sizeof *world->scratch, 32);
    if (result != TES_OK) return result;
    /* Merge from's set with the table components (both ascending). */
    uint32_t n = 0, a = 0, b = 0;
    while (a < from->component_count || b < call->table_count) {
        tes_component_t ca = a < from->component_count ? from->components[a] : UINT32_MAX;
        tes_component_t cb = b < call->table_count ? call->table[b] : UINT32_MAX;
        if (ca < cb) {
            world->scratch[n++] = ca;
            a++;
        } else if (cb < ca) {
            if (!removing) world->scratch[n++] = cb;
            b++;
        } else {
            if (!removing) world->scratch[n++] = ca;
            a++;
            b++;
        }
    }
    *out_count = n;
    return TES_OK;
}

/* Whether `from`'s target exists or could be made (TES_ERR_ROW_TOO_LARGE), creating nothing:
 * every target of a call is checked before the first is made. */
tes_result_t tesi_items_target_fits(const call_t *call, const tesi_archetype_t *from) {
    uint32_t changes, last, n;
    tes_result_t result = target_set(call, from, &changes, &last, &n);
    if (result != TES_OK || changes == 0) return result;
    const tes_component_t *set = call->world->scratch;
    if (tesi_graph_find(call->world, set, n, tesi_hash_set(set, n))) return TES_OK;
    return tesi_archetype_fits(call->world, set, n);
}

/* The archetype `from` becomes with the call's table components added or removed. */
tes_result_t tesi_items_target_of(const call_t *call, tesi_archetype_t *from,
                                  tesi_archetype_t **out, const tesi_move_plan_t **out_moves) {
    *out = from;
    *out_moves = NULL;
    uint32_t changes, last, n;
    tes_result_t result = target_set(call, from, &changes, &last, &n);
    if (result != TES_OK || changes == 0) return result;
    /* One component: the cached edge, with its move plan. */
    if (changes == 1) {
        return tesi_graph_step(call->world, from, last, call->kind == EDIT_REMOVE, out, out_moves);
    }
    return tesi_archetype_ensure(call->world, n, out);
}

/* Groups the entities by archetype and finds each group's target (creating it when missing). */
static tes_result_t plan_moves(const call_t *call, const tes_entity_t *entities, uint32_t n) {
    tes_world_t *world = call->world;
    tesi_edit_t *e = &world->edit;
    e->plan_count = 0;
    if (!call->table_count) return TES_OK;
    tes_result_t result = TES_OK;
    for (uint32_t i = 0; i < n && result == TES_OK; i++) {
        const tesi_record_t *record = tesi_record_of(world, entities[i]);
        if (!record) continue; /* pending */
        tesi_archetype_t *from = record->chunk->archetype;
        if (!from->plan) {
            result = tesi_reserve(world, (void **)&e->plans, &e->plan_slots, e->plan_count + 1,
                                  sizeof *e->plans, 8);
            if (result != TES_OK) break;
            e->plans[e->plan_count] = (tesi_plan_t){.from = from};
            from->plan = ++e->plan_count;
        }
        e->plans[from->plan - 1].rows++;
    }
    for (uint32_t p = 0; p < e->plan_count && result == TES_OK; p++)
        result = tesi_items_target_fits(call, e->plans[p].from);
    for (uint32_t p = 0; p < e->plan_count && result == TES_OK; p++) {
        tesi_plan_t *plan = &e->plans[p];
        result = tesi_items_target_of(call, plan->from, &plan->to, &plan->moves);
    }
    return result;
}

/* Gives back the empty chunks reserve_rows added (a packed archetype has none), when a later
 * reservation failed. */
void tesi_items_unreserve_rows(const call_t *call) {
    tesi_edit_t *e = &call->world->edit;
    for (uint32_t p = 0; p < e->plan_count; p++)
        tesi_chunks_trim(call->world, e->plans[p].to);
}

/* Chunk rows in every target (a target of several groups gets all their rows). The last
 * reservation of a call, as it leaves empty chunks behind until rows fill them. */
static tes_result_t reserve_rows(const call_t *call) {
    tesi_edit_t *e = &call->world->edit;
    for (uint32_t p = 0; p < e->plan_count; p++) {
        tesi_plan_t *plan = &e->plans[p];
        if (plan->to == plan->from) continue;
        uint64_t rows = 0;
        bool first = true;
        for (uint32_t q = 0; q < e->plan_count; q++) {
            if (e->plans[q].to != plan->to || e->plans[q].to == e->plans[q].from) continue;
            if (q < p) first = false;
            rows += e->plans[q].rows;
        }
        if (!first) continue;
        tes_result_t result = rows > UINT32_MAX
                                  ? TES_ERR_OUT_OF_MEMORY
                                  : tesi_chunks_reserve(call->world, plan->to, (uint32_t)rows);
        if (result != TES_OK) {
            tesi_items_unreserve_rows(call);
            return result;
        }
    }
    return TES_OK;
}

/* The highest entity index of the call, + 1 (spawns: the indices they may take). */
static uint32_t index_limit(const call_t *call, const tes_entity_t *entities, uint32_t n) {
    const tes_world_t *world = call->world;
    uint64_t limit = 0;
    if (call->kind == EDIT_SPAWN) {
        limit = (uint64_t)world->record_count + n;
    } else {
        for (uint32_t i = 0; i < n; i++) {
            uint32_t index = entities[i] & TESI_INDEX_MASK;
            if (index + 1 > limit) limit = index + 1;
        }
    }
    for (uint32_t k = 0; k < call->pair_count; k++) {
        uint32_t index = call->x->items[call->pairs[k]].target & TESI_INDEX_MASK;
        if (index + 1 > limit) limit = index + 1;
    }
    return limit > TESI_INDEX_LIMIT ? TESI_INDEX_LIMIT : (uint32_t)limit;
}

/* Sparse, pair, log and event room for the commit of n entities. */
static tes_result_t reserve_extras(const call_t *call, const tes_entity_t *entities, uint32_t n) {
    tes_world_t *world = call->world;
    const tes_items_t *x = call->x;
    uint32_t limit = index_limit(call, entities, n);
    tes_result_t result = TES_OK;
    for (uint32_t i = 0; i < x->item_count && result == TES_OK; i++) {
        tes_component_t id = x->items[i].component;
        const tesi_component_t *c = &world->components[id];
        if (tesi_is_relation(c)) continue;
        if (tesi_is_sparse(c)) {
            result = call->kind == EDIT_REMOVE       ? tesi_log_reserve(world, id, n)
                     : tesi_items_adding(call->kind) ? tesi_sparse_reserve(world, id, n, 1, limit)
                                                     : TES_OK;
        } else if (call->kind == EDIT_REMOVE) {
            result = tesi_log_reserve(world, id, n);
        }
    }
    /* Pairs, a relation at a time (they are sorted by relation). */
    for (uint32_t k = 0; k < call->pair_count && result == TES_OK;) {
        tes_component_t relation = x->items[call->pairs[k]].component;
        uint64_t pairs = 0;
        for (; k < call->pair_count && x->items[call->pairs[k]].component == relation; k++) {
            if (x->items[call->pairs[k]].target || call->kind != EDIT_REMOVE) {
                pairs += n;
                continue;
            }
            /* A bare relation removes every pair of the entity as a source. */
            const tesi_relation_t *r = &world->components[relation].relation;
            for (uint32_t i = 0; i < n; i++)
                pairs += tesi_list_of(r, TESI_OUT, entities[i])->count;
        }
        if (tesi_items_adding(call->kind)) {
            result = tesi_pair_reserve(world, relation, pairs, 1, limit);
        } else {
            /* Writes log one changed event per pair; removals an event each, and a removal per
             * source that loses its last pair. */
            result =
                tesi_pair_unlink_reserve(world, relation, pairs, call->kind == EDIT_REMOVE ? n : 0);
        }
    }
    return result;
}

/* ---- commit --------------------------------------------------------------------------------- */

/* Writes the call's values to one entity, all placed now; `had[i]` says whether item i was
 * there before the call (its values are then a change when adding). */
static void write_values(const call_t *call, tes_entity_t entity, uint32_t position,
                         const uint8_t *had) {
    tes_world_t *world = call->world;
    const tes_items_t *x = call->x;
    /* Writing values moves no row: the entity's record is found once. */
    const tesi_record_t *record = tesi_record_of(world, entity);
    tesi_touch(world, entity & TESI_INDEX_MASK); /* initial values are no change to track */
    for (uint32_t v = 0; v < x->value_count; v++) {
        const tes_value_t *value = &x->values[v];
        /* In range for every position: check_items saw each. */
        const double *numbers =
            x->numbers + value->number + (call->first + position) * value->stride;
        const tes_item_t *item = &x->items[value->item];
        tesi_component_t *c = &world->components[item->component];
        const tesi_field_t *f = &c->fields[value->field];
        bool change = call->kind == EDIT_SET || (call->kind == EDIT_ADD && had[value->item]);
        uint8_t *cell;
        uint32_t pair = 0, slot = 0, type = 0;
        if (tesi_is_relation(c)) {
            pair = tesi_pair_find(world, item->component, entity, item->target);
            cell = c->relation.data + (size_t)(pair - 1) * c->stride + f->offset;
        } else if (tesi_is_sparse(c)) {
            slot = tesi_sparse_slot(&c->sparse, entity & TESI_INDEX_MASK) - 1;
            cell = c->sparse.data + (size_t)slot * c->stride + f->offset;
        } else {
            const tesi_archetype_t *a = record->chunk->archetype;
            type = tesi_type_index(a, item->component);
            cell = tesi_cell(record->chunk, tesi_column_of(a, type, value->field), record->row);
        }
        uint32_t size = tes_type_size(f->type);
        if (change && (c->flags & TES_COMPONENT_CHANGE_BY_VALUE)) {
            /* A change only where the bytes differ (TES_COMPONENT_CHANGE_BY_VALUE). */
            change = false;
            for (uint32_t k = 0; k < f->length; k++) {
                uint8_t bytes[8];
                tesi_encode_number(f->type, numbers[k], bytes);
                change |= memcmp(cell + (size_t)k * size, bytes, size) != 0;
                memcpy(cell + (size_t)k * size, bytes, size);
            }
        } else {
            for (uint32_t k = 0; k < f->length; k++)
                tesi_encode_number(f->type, numbers[k], cell + (size_t)k * size);
        }
        if (!change) continue;
        if (pair) {
            tesi_pair_mark(world, item->component, pair);
        } else if (tesi_is_sparse(c)) {
            tesi_sparse_mark(world, item->component, slot);
        } else if (record->chunk->trackers) {
            tesi_mark_changed(world, record->chunk, type, record->row);
        }
    }
}

/* The initial values of n entities just spawned into one archetype, all of chunk components:
 * write_values for each, a column at a time (each value's column is found once). */
static void init_columns(const call_t *call, const tesi_archetype_t *a, const tes_entity_t *handles,
                         uint32_t n) {
    tes_world_t *world = call->world;
    const tes_items_t *x = call->x;
    for (uint32_t v = 0; v < x->value_count; v++) {
        const tes_value_t *value = &x->values[v];
        tes_component_t component = x->items[value->item].component;
        const tesi_field_t *f = &world->components[component].fields[value->field];
        const tesi_column_t *column =
            tesi_column_of(a, tesi_type_index(a, component), value->field);
        uint32_t size = tes_type_size(f->type);
        for (uint32_t i = 0; i < n; i++) {
            const tesi_record_t *record = tesi_record_at(world, handles[i] & TESI_INDEX_MASK);
            const double *numbers = x->numbers + value->number + (call->first + i) * value->stride;
            uint8_t *cell = tesi_cell(record->chunk, column, record->row);
            /* In range for every position: check_items saw each. */
            for (uint32_t k = 0; k < f->length; k++)
                tesi_encode_number(f->type, numbers[k], cell + (size_t)k * size);
        }
    }
}

/* Moves one placed entity along its plan (a swap-remove behind it). */
static void move_entity(const call_t *call, tesi_record_t *record, tes_entity_t entity,
                        const tesi_plan_t *plan) {
    tes_world_t *world = call->world;
    if (call->kind == EDIT_REMOVE && tesi_logging(world)) {
        for (uint32_t k = 0; k < call->table_count; k++) {
            if (tesi_type_index(plan->from, call->table[k]) != TESI_NO_TYPE) {
                tesi_log_removal(world, call->table[k], entity);
            }
        }
    }
    tesi_chunk_t *chunk = record->chunk, *dst;
    uint32_t row = record->row, dst_row;
    tesi_chunk_take_rows(world, plan->to, 1, &dst, &dst_row);
    tesi_move_row(world, dst, dst_row, chunk, row, plan->moves);
    tesi_touch(world, entity & TESI_INDEX_MASK);
    record->chunk = dst;
    record->row = dst_row;
    tesi_remove_row(world, chunk, row);
}

/* Everything but the archetype move, for one entity (at `position` of the call's list):
 * sparse components, pairs, values. */
static void commit_rest(const call_t *call, tes_entity_t entity, uint32_t position,
                        const uint8_t *had) {
    tes_world_t *world = call->world;
    const tes_items_t *x = call->x;
    for (uint32_t i = 0; i < x->item_count; i++) {
        const tes_item_t *item = &x->items[i];
        const tesi_component_t *c = &world->components[item->component];
        if (!tesi_is_sparse(c) || call->kind == EDIT_SET) continue;
        if (tesi_is_relation(c)) {
            const tesi_relation_t *r = &c->relation;
            if (tesi_items_adding(call->kind)) {
                if (!tesi_pair_find(world, item->component, entity, item->target)) {
                    tesi_pair_link(world, item->component, entity, item->target);
                }
            } else if (item->target) {
                uint32_t id = tesi_pair_find(world, item->component, entity, item->target);
                if (id) tesi_pair_unlink(world, item->component, id);
            } else {
                const tesi_list_t *out = tesi_list_of(r, TESI_OUT, entity);
                while (out->count)
                    tesi_pair_unlink(world, item->component, out->first);
            }
        } else if (tesi_items_adding(call->kind)) {
            tesi_sparse_insert(world, item->component, entity); /* a member stays as it is */
        } else {
            tesi_sparse_erase(world, item->component, entity);
        }
    }
    if (x->value_count) write_values(call, entity, position, had);
}

/* Which items a placed entity has before the call changes it. */
static void note_had(const call_t *call, tes_entity_t entity, uint8_t *had) {
    const tes_world_t *world = call->world;
    const tesi_record_t *record = tesi_record_of(world, entity);
    uint32_t pair;
    for (uint32_t i = 0; i < call->x->item_count; i++)
        had[i] = tesi_items_has(world, record, entity, &call->x->items[i], &pair);
}

static void commit_placed(const call_t *call, const tes_entity_t *entities, uint32_t n) {
    tes_world_t *world = call->world;
    tesi_edit_t *e = &world->edit;
    bool rest = call->sparse_count || call->pair_count || call->x->value_count;
    for (uint32_t i = 0; i < n; i++) {
        tes_entity_t entity = entities[i];
        tesi_record_t *record = tesi_record_of(world, entity);
        if (call->x->value_count && call->kind == EDIT_ADD) note_had(call, entity, e->had);
        tesi_archetype_t *from = record->chunk->archetype;
        if (from->plan) {
            const tesi_plan_t *plan = &e->plans[from->plan - 1];
            if (plan->to != from) move_entity(call, record, entity, plan);
        }
        if (rest) commit_rest(call, entity, i, e->had);
    }
}

/* ---- recording ------------------------------------------------------------------------------ */

/* A recorded call's items and values in the command data: a header of counts, then the three
 * arrays (numbers 8-aligned). */
typedef struct blob_t {
    uint32_t item_count, value_count, number_count, pad;
} blob_t;

static uint64_t blob_bytes(const tes_items_t *x) {
    uint64_t head = sizeof(blob_t) + (uint64_t)x->item_count * sizeof(tes_item_t) +
                    (uint64_t)x->value_count * sizeof(tes_value_t);
    return ((head + 7) & ~(uint64_t)7) + (uint64_t)x->number_count * sizeof(double);
}

void tesi_items_view(const uint8_t *blob, tes_items_t *out) {
    blob_t head;
    memcpy(&head, blob, sizeof head);
    const uint8_t *at = blob + sizeof head;
    out->items = (const tes_item_t *)(const void *)at;
    out->item_count = head.item_count;
    at += (size_t)head.item_count * sizeof(tes_item_t);
    out->values = (const tes_value_t *)(const void *)at;
    out->value_count = head.value_count;
    at += (size_t)head.value_count * sizeof(tes_value_t);
    at = blob + (((size_t)(at - blob) + 7) & ~(size_t)7);
    out->numbers = (const double *)(const void *)at;
    out->number_count = head.number_count;
}

/* The pending entities' archetypes follow their recorded table changes, so that later writes
 * to them are checked against what they will have. Targets are found (or made) for all first. */
static tes_result_t plan_pending(const call_t *call, const tes_entity_t *entities, uint32_t n,
                                 bool commit) {
    tes_world_t *world = call->world;
    if (!call->table_count || call->kind == EDIT_SET) return TES_OK;
    for (uint32_t i = 0; i < n && !commit; i++) {
        tesi_record_t *pending = tesi_pending_record(world, entities[i]);
        tes_result_t result =
            pending ? tesi_items_target_fits(call, tesi_pending_archetype(world, pending)) : TES_OK;
        if (result != TES_OK) return result;
    }
    for (uint32_t i = 0; i < n; i++) {
        tesi_record_t *pending = tesi_pending_record(world, entities[i]);
        if (!pending) continue;
        tesi_archetype_t *to;
        const tesi_move_plan_t *moves;
        tes_result_t result =
            tesi_items_target_of(call, tesi_pending_archetype(world, pending), &to, &moves);
        if (result != TES_OK) return result;
        if (commit) pending->row = TESI_ROW_PENDING | to->id;
    }
    return TES_OK;
}

/* Copies the call's items and values into the command data (room was reserved): the offset. */
static uint32_t store_blob(tes_world_t *world, const tes_items_t *x, uint32_t bytes) {
    uint32_t offset = (world->command_data_size + 7u) & ~7u;
    uint8_t *blob = world->command_data + offset;
    blob_t head = {x->item_count, x->value_count, x->number_count, 0};
    memcpy(blob, &head, sizeof head);
    tes_items_t view;
    tesi_items_view(blob, &view);
    if (x->item_count) memcpy((void *)view.items, x->items, x->item_count * sizeof *x->items);
    if (x->value_count) memcpy((void *)view.values, x->values, x->value_count * sizeof *x->values);
    if (x->number_count) {
        memcpy((void *)view.numbers, x->numbers, x->number_count * sizeof *x->numbers);
    }
    world->command_data_size = offset + bytes;
    return offset;
}

/* Records the call for the flush: one command per entity, sharing one copy of the items. */
static tes_result_t record_call(const call_t *call, const tes_entity_t *entities, uint32_t n) {
    tes_world_t *world = call->world;
    uint64_t bytes = blob_bytes(call->x);
    /* Command data offsets are 8-aligned for the numbers: up to 7 bytes of padding first. */
    if (bytes + 8 > UINT32_MAX / 2) return TES_ERR_OUT_OF_MEMORY;
    tes_result_t result = plan_pending(call, entities, n, false);
    if (result == TES_OK) result = tesi_commands_reserve(world, n, (uint32_t)bytes + 8);
    if (result != TES_OK) return result;
    plan_pending(call, entities, n, true);
    uint32_t offset = store_blob(world, call->x, (uint32_t)bytes);
    bool adds = tesi_items_effect(call->kind) == 1;
    for (uint32_t i = 0; i < n; i++) {
        if (adds) tesi_note_add_at(world, entities[i], world->command_count);
        world->commands[world->command_count++] = (tesi_command_t){
            .kind = TESI_CMD_ITEMS,
            .entity = entities[i],
            .a = call->kind,
            .b = call->first + i, /* its position: values with a stride take its numbers */
            .data_offset = offset,
            .data_size = (uint32_t)bytes,
        };
    }
    return TES_OK;
}

void tesi_items_init(tes_world_t *world, tes_entity_t entity, uint32_t position,
                     const uint8_t *blob) {
    tes_items_t x;
    tesi_items_view(blob, &x);
    const call_t call = {.world = world, .kind = EDIT_INIT, .x = &x};
    write_values(&call, entity, position, NULL);
}

/* ---- the calls ------------------------------------------------------------------------------ */

/* Add, init, set or remove for a list of entities that exist (placed, or pending while
 * recording). */
tes_result_t tesi_items_edit(tes_world_t *world, edit_t kind, const tes_entity_t *entities,
                             uint32_t n, uint32_t first, const tes_items_t *x, tes_fault_t *fault) {
    if (fault) *fault = (tes_fault_t){TES_NO_FAULT, TES_NO_FAULT, TES_NO_FAULT, 0};
    if (!world) return TES_ERR_INVALID_ARGUMENT;
    call_t call = {.world = world,
                   .kind = kind,
                   .x = x,
                   .fault = fault,
                   .first = first,
                   .n = n,
                   .deferring = tesi_deferring(world)};
    tes_result_t result = tesi_items_check(&call);
    if (result == TES_OK) result = tesi_items_check_entities(&call, entities, n);
    if (result == TES_OK) result = tesi_items_check_placed(&call, entities, n);
    if (result != TES_OK) return result;
    if (call.deferring) {
        /* What moves no row happens now when every entity is placed, as tes_set and
         * tes_pair_add do: writes, and pairs whose ends are placed. */
        bool now = !call.record && (kind == EDIT_SET || (!call.table_count && !call.sparse_count));
        for (uint32_t i = 0; i < n && now; i++)
            now = tesi_record_of(world, entities[i]) != NULL;
        for (uint32_t k = 0; k < call.pair_count && now; k++) {
            tes_entity_t target = x->items[call.pairs[k]].target;
            now = !target || tesi_record_of(world, target) != NULL;
        }
        if (!now) return record_call(&call, entities, n);
    }
    result = plan_moves(&call, entities, n);
    if (result == TES_OK) result = reserve_extras(&call, entities, n);
    if (result == TES_OK) result = reserve_rows(&call);
    if (result == TES_OK) commit_placed(&call, entities, n);
    tesi_items_unplan(world);
    return result;
}

int tesi_items_effect(uint32_t kind) {
    return kind == EDIT_REMOVE ? 0 : kind == EDIT_SET ? -1 : 1;
}

/* The rest of a recorded spawn without the pairs whose target is gone since it was recorded
 * (and their data): the spawn keeps its components and values (README: `despawn(p); spawn(B,
 * ChildOf(p))` spawns the B without a parent). Each pair dropped counts as a skipped command. */
static tes_result_t init_without_gone(tes_world_t *world, tes_entity_t entity, uint32_t position,
                                      const tes_items_t *x) {
    /* One block: the kept items, their values, and each item's place among the kept (or
     * TES_NO_FAULT: dropped). */
    size_t bytes = (size_t)x->item_count * (sizeof(tes_item_t) + sizeof(uint32_t)) +
                   (size_t)x->value_count * sizeof(tes_value_t) + 1;
    tes_item_t *items = tesi_alloc(world, bytes);
    if (!items) return TES_ERR_OUT_OF_MEMORY;
    tes_value_t *values = (tes_value_t *)(void *)(items + x->item_count);
    uint32_t *kept = (uint32_t *)(void *)(values + x->value_count);
    tes_items_t rest = {items, 0, values, 0, x->numbers, x->number_count};
    uint32_t dropped = 0;
    for (uint32_t i = 0; i < x->item_count; i++) {
        tes_entity_t target = x->items[i].target;
        kept[i] = target && !tesi_record_of(world, target) ? TES_NO_FAULT : rest.item_count;
        if (kept[i] == TES_NO_FAULT)
            dropped++;
        else
            items[rest.item_count++] = x->items[i];
    }
    for (uint32_t v = 0; v < x->value_count; v++) {
        if (x->values[v].item >= x->item_count || kept[x->values[v].item] == TES_NO_FAULT) continue;
        values[rest.value_count] = x->values[v];
        values[rest.value_count++].item = kept[x->values[v].item];
    }
    /* Nothing dropped: the stale entity was not a pair's target, and the call stays refused. */
    tes_result_t result = dropped
                              ? tesi_items_edit(world, EDIT_INIT, &entity, 1, position, &rest, NULL)
                              : TES_ERR_STALE_ENTITY;
    if (result == TES_OK) world->commands_skipped += dropped;
    tesi_free(world, items, bytes);
    return result;
}

tes_result_t tesi_items_apply(tes_world_t *world, uint32_t kind, tes_entity_t entity,
                              uint32_t position, const tes_items_t *x) {
    tes_result_t result = tesi_items_edit(world, (edit_t)kind, &entity, 1, position, x, NULL);
    if (result == TES_ERR_STALE_ENTITY && kind == EDIT_INIT && tesi_record_of(world, entity)) {
        result = init_without_gone(world, entity, position, x);
    }
    return result;
}

/* A structural item call: what it made goes again when it fails (tesi_archetypes_undo). */
static tes_result_t structural(tes_world_t *world, edit_t kind, const tes_entity_t *entities,
                               uint32_t n, const tes_items_t *items, tes_fault_t *out_fault) {
    uint32_t archetypes = world ? world->archetype_count : 0;
    tes_result_t result = tesi_items_edit(world, kind, entities, n, 0, items, out_fault);
    if (result != TES_OK && world) tesi_archetypes_undo(world, archetypes);
    return result;
}

tes_result_t tes_add_items(tes_world_t *world, const tes_entity_t *entities, uint32_t n,
                           const tes_items_t *items, tes_fault_t *out_fault) {
    return structural(world, EDIT_ADD, entities, n, items, out_fault);
}

tes_result_t tes_set_items(tes_world_t *world, const tes_entity_t *entities, uint32_t n,
                           const tes_items_t *items, tes_fault_t *out_fault) {
    return tesi_items_edit(world, EDIT_SET, entities, n, 0, items, out_fault);
}

tes_result_t tes_remove_items(tes_world_t *world, const tes_entity_t *entities, uint32_t n,
                              const tes_items_t *items, tes_fault_t *out_fault) {
    return structural(world, EDIT_REMOVE, entities, n, items, out_fault);
}

static tes_result_t spawn_items(tes_world_t *world, const tes_items_t *items, uint32_t n,
                                tes_entity_t *out_entities, tes_fault_t *out_fault) {
    if (out_fault) *out_fault = (tes_fault_t){TES_NO_FAULT, TES_NO_FAULT, TES_NO_FAULT, 0};
    if (!world) return TES_ERR_INVALID_ARGUMENT;
    call_t call = {.world = world,
                   .kind = EDIT_SPAWN,
                   .x = items,
                   .fault = out_fault,
                   .n = n,
                   .deferring = tesi_deferring(world)};
    tes_result_t result = tesi_items_check(&call);
    if (result != TES_OK) return result;
    /* More than the table can ever hold: refused before anything is sized by n. */
    if (n >= TESI_INDEX_LIMIT) return TES_ERR_TOO_MANY_ENTITIES;
    tesi_archetype_t *a = tesi_spawn_cached(world, call.table, call.table_count);
    if (!a) {
        result = tesi_sort_set(world, call.table, call.table_count);
        if (result == TES_OK) result = tesi_archetype_ensure(world, call.table_count, &a);
        if (result != TES_OK) return result;
        tesi_spawn_remember(world, call.table, call.table_count, a);
    }
    bool rest = call.sparse_count || call.pair_count || items->value_count;
    tesi_edit_t *e = &world->edit;
    tes_entity_t *handles = out_entities;
    if (!handles && rest) {
        result = tesi_reserve(world, (void **)&e->entities, &e->entity_slots, n + 1,
                              sizeof *e->entities, 64);
        if (result != TES_OK) return result;
        handles = e->entities;
    }
    if (call.deferring && !n) return TES_OK; /* nothing to record */
    if (call.deferring) {
        /* Pending entities, placed by their spawn commands. Initial values of chunk components
         * ride on the spawn commands (written as the row is placed, checked now); sparse
         * components and pairs follow each spawn as a recorded item call. */
        bool along = rest && !call.sparse_count && !call.pair_count;
        uint64_t bytes = blob_bytes(items);
        if (rest && bytes + 8 > UINT32_MAX / 2) return TES_ERR_OUT_OF_MEMORY;
        result = tesi_commands_reserve(world, rest && !along ? 2 * n : n,
                                       rest ? (uint32_t)bytes + 8 : 0);
        if (result == TES_OK) result = tesi_defer_spawn(world, a, n, handles);
        if (result != TES_OK || !rest) return result;
        if (along) {
            uint32_t offset = store_blob(world, items, (uint32_t)bytes);
            tesi_command_t *spawns = world->commands + world->command_count - n;
            for (uint32_t i = 0; i < n; i++) {
                spawns[i].b = i;
                spawns[i].data_offset = offset;
                spawns[i].data_size = (uint32_t)bytes;
            }
            return TES_OK;
        }
        call.kind = EDIT_INIT;
        return record_call(&call, handles, n); /* cannot fail: room was reserved */
    }
    result = reserve_extras(&call, NULL, n);
    if (result == TES_OK) result = tesi_spawn_rows(world, a, n, handles);
    if (result != TES_OK || !rest) return result;
    /* New entities: nothing to move, nothing they had. */
    call.kind = EDIT_INIT;
    if (!call.sparse_count && !call.pair_count) {
        init_columns(&call, a, handles, n);
        return TES_OK;
    }
    memset(e->had, 0, items->item_count);
    for (uint32_t i = 0; i < n; i++)
        commit_rest(&call, handles[i], i, e->had);
    return TES_OK;
}

tes_result_t tes_spawn_items(tes_world_t *world, const tes_items_t *items, uint32_t n,
                             tes_entity_t *out_entities, tes_fault_t *out_fault) {
    uint32_t archetypes = world ? world->archetype_count : 0;
    tes_result_t result = spawn_items(world, items, n, out_entities, out_fault);
    if (result != TES_OK && world) tesi_archetypes_undo(world, archetypes);
    return result;
}
