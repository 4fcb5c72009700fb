/* Item calls over a query (tessera.h, tes_query_add_items, tes_query_remove_items,
 * tes_query_despawn): whole archetypes at once when the query visits whole archetypes and the
 * items allow it (chunks change owner, O(chunks)), else the entities it visits, through the
 * item calls of items.c. */
#include "items.h"

/* The entities a plain query visits, into world->edit.entities (a run that defers nothing). */
static tes_result_t collect(tes_world_t *world, tes_query_t *query, uint32_t *out_n) {
    tesi_edit_t *e = &world->edit;
    tes_iter_t it;
    tes_result_t result = tes_query_iter(world, query, &it);
    if (result != TES_OK) return result;
    uint32_t n = 0;
    while (result == TES_OK && tes_iter_next(&it)) {
        result = tesi_reserve(world, (void **)&e->entities, &e->entity_slots, n + it.row_count,
                              sizeof *e->entities, 64);
        for (uint32_t i = 0; i < it.row_count && result == TES_OK; i++)
            e->entities[n++] = it.entities[it.rows ? it.rows[i] : i];
    }
    tes_iter_fini(&it);
    *out_n = n;
    return result;
}

/* The archetypes a plain query visits, each once, into world->edit.plans (`from` and `rows`
 * only; tesi_items_unplan() clears them). */
static tes_result_t gather_archetypes(tes_world_t *world, tes_query_t *query) {
    tesi_edit_t *e = &world->edit;
    tes_iter_t it;
    tes_result_t result = tes_query_iter(world, query, &it);
    if (result != TES_OK) return result;
    while (result == TES_OK && tes_iter_next(&it)) {
        tesi_archetype_t *a = world->archetypes[it.archetype];
        if (a->plan) continue;
        result = tesi_reserve(world, (void **)&e->plans, &e->plan_slots, e->plan_count + 1,
                              sizeof *e->plans, 8);
        if (result != TES_OK) break;
        e->plans[e->plan_count] = (tesi_plan_t){.from = a, .rows = a->entity_count};
        a->plan = ++e->plan_count;
    }
    tes_iter_fini(&it);
    return result;
}

/* The archetypes a plain query matches with entities, as plans of whole archetypes; false when
 * two of them would move to one target (then rows go one by one). */
static tes_result_t plan_archetypes(const call_t *call, tes_query_t *query, bool *out_whole) {
    tesi_edit_t *e = &call->world->edit;
    tes_result_t result = gather_archetypes(call->world, query);
    *out_whole = true;
    for (uint32_t p = 0; p < e->plan_count && result == TES_OK; p++)
        result = tesi_items_target_fits(call, e->plans[p].from);
    for (uint32_t p = 0; p < e->plan_count && result == TES_OK; p++) {
        tesi_plan_t *plan = &e->plans[p];
        result = tesi_items_target_of(call, plan->from, &plan->to, &plan->moves);
        for (uint32_t q = 0; q < p && result == TES_OK; q++) {
            const tesi_plan_t *other = &e->plans[q];
            if (plan->to != plan->from && other->to != other->from && other->to == plan->to) {
                *out_whole = false;
            }
        }
    }
    return result;
}

static tes_result_t query_edit(tes_world_t *world, tes_query_t *query, edit_t kind,
                               const tes_items_t *x, tes_fault_t *fault) {
    if (fault) *fault = (tes_fault_t){TES_NO_FAULT, TES_NO_FAULT, TES_NO_FAULT, 0};
    if (!world || !query) return TES_ERR_INVALID_ARGUMENT;
    /* A consumer's run would use up what it reports. */
    if (tesi_query_consumes(query)) return TES_ERR_INVALID_ARGUMENT;
    call_t call = {
        .world = world, .kind = kind, .x = x, .fault = fault, .deferring = tesi_deferring(world)};
    tes_result_t result = tesi_items_check(&call);
    if (result != TES_OK) return result;
    /* Numbers per entity need an order of entities the caller knows: a query's is not one. */
    for (uint32_t v = 0; v < x->value_count; v++) {
        if (x->values[v].stride) {
            return tesi_items_fail(&call, TES_ERR_INVALID_ARGUMENT, x->values[v].item, v,
                                   TES_NO_FAULT, 0);
        }
    }
    bool whole = !call.deferring && !tesi_query_by_rows(query) && !call.sparse_count &&
                 !call.pair_count && !x->value_count;
    if (whole) {
        /* Whole archetypes: chunks may change owner, O(chunks) rather than O(entities). */
        result = plan_archetypes(&call, query, &whole);
        if (result == TES_OK && whole) {
            tesi_edit_t *e = &world->edit;
            uint64_t rows = 0;
            for (uint32_t p = 0; p < e->plan_count; p++)
                rows += e->plans[p].to != e->plans[p].from ? e->plans[p].rows : 0;
            for (uint32_t k = 0; k < call.table_count && result == TES_OK && kind == EDIT_REMOVE;
                 k++) {
                result = rows > UINT32_MAX ? TES_ERR_OUT_OF_MEMORY
                                           : tesi_log_reserve(world, call.table[k], (uint32_t)rows);
            }
            /* Last, as it may leave empty chunks until the moves fill them. */
            for (uint32_t p = 0; p < e->plan_count && result == TES_OK; p++)
                result = tesi_archetype_move_reserve(world, e->plans[p].from, e->plans[p].to);
            if (result != TES_OK) tesi_items_unreserve_rows(&call);
            /* Removals are logged per entity only when someone reads a removed component's
             * log: otherwise chunks change owner and no entity is visited (O(chunks)). */
            bool logging = false;
            for (uint32_t k = 0; k < call.table_count && kind == EDIT_REMOVE; k++)
                logging |= world->components[call.table[k]].removal_consumers != 0;
            for (uint32_t p = 0; p < e->plan_count && result == TES_OK; p++) {
                tesi_plan_t *plan = &e->plans[p];
                if (plan->to == plan->from) continue;
                for (uint32_t c = 0; logging && c < plan->from->chunk_count; c++) {
                    const tesi_chunk_t *chunk = plan->from->chunks[c];
                    for (uint32_t row = 0; row < chunk->count; row++) {
                        tes_entity_t entity = tesi_chunk_entities(chunk)[row];
                        for (uint32_t k = 0; k < call.table_count; k++) {
                            if (tesi_type_index(plan->from, call.table[k]) != TESI_NO_TYPE) {
                                tesi_log_removal(world, call.table[k], entity);
                            }
                        }
                    }
                }
                tesi_archetype_move_all(world, plan->from, plan->to); /* reserved: cannot fail */
            }
        }
        tesi_items_unplan(world);
        if (result != TES_OK || whole) return result;
    }
    uint32_t n = 0;
    result = collect(world, query, &n);
    if (result != TES_OK) return result;
    /* tesi_items_edit() reuses the scratch that holds the matches only for its own lists, not
     * entities. */
    return tesi_items_edit(world, kind, world->edit.entities, n, 0, x, fault);
}

/* tes_query_despawn when the query visits whole archetypes and despawns have nothing to do
 * beyond the rows: each archetype visited is emptied at once (tesi_despawn_archetype). */
static tes_result_t despawn_archetypes(tes_world_t *world, tes_query_t *query) {
    tesi_edit_t *e = &world->edit;
    tes_result_t result = gather_archetypes(world, query);
    uint64_t total = 0;
    for (uint32_t p = 0; p < e->plan_count; p++)
        total += e->plans[p].rows;
    if (result == TES_OK && tesi_logging(world)) {
        result = total > UINT32_MAX ? TES_ERR_OUT_OF_MEMORY
                                    : tesi_logs_reserve(world, NULL, (uint32_t)total);
    }
    for (uint32_t p = 0; p < e->plan_count && result == TES_OK; p++)
        tesi_despawn_archetype(world, e->plans[p].from);
    tesi_items_unplan(world);
    return result;
}

tes_result_t tes_query_despawn(tes_world_t *world, tes_query_t *query) {
    if (!world || !query) return TES_ERR_INVALID_ARGUMENT;
    if (tesi_query_consumes(query)) return TES_ERR_INVALID_ARGUMENT;
    if (!tesi_deferring(world) && !world->sparse_count && !tesi_query_by_rows(query)) {
        return despawn_archetypes(world, query);
    }
    uint32_t n = 0;
    tes_result_t result = collect(world, query, &n);
    /* tes_despawn_batch takes no scratch of world->edit: the list stays put. */
    return result == TES_OK ? tes_despawn_batch(world, world->edit.entities, n) : result;
}

tes_result_t tes_query_add_items(tes_world_t *world, tes_query_t *query, const tes_items_t *items,
                                 tes_fault_t *out_fault) {
    return query_edit(world, query, EDIT_ADD, items, out_fault);
}

tes_result_t tes_query_remove_items(tes_world_t *world, tes_query_t *query,
                                    const tes_items_t *items, tes_fault_t *out_fault) {
    return query_edit(world, query, EDIT_REMOVE, items, out_fault);
}
