/* The shadow (the design: rollback.h): each index's state at the newest checkpoint, the pages
 * it needs, and its updates for the indices whose place changed (a value that changed alone is
 * taken where its value image is written: checkpoint.c). */
#include "rollback.h"

tes_result_t tesi_page_for(tes_world_t *world, tesi_paged_t *p, uint32_t index, uint32_t elem) {
    if (tesi_paged_find(p, index, elem)) return TES_OK;
    return tesi_paged_reserve(world, p, index, index + 1, elem);
}

/* The shadow pages the current state of one index needs. */
static tes_result_t reserve_index(tes_world_t *world, tesi_rollback_t *rb, uint32_t index) {
    tes_result_t result = tesi_page_for(world, &rb->states, index, sizeof(tesi_shadow_state_t));
    const tesi_record_t *r = index < world->record_count ? tesi_record_find(world, index) : NULL;
    if (result == TES_OK && r && r->chunk) {
        const tesi_archetype_t *a = r->chunk->archetype;
        for (uint32_t i = 0; i < a->component_count && result == TES_OK; i++) {
            tes_component_t c = a->components[i];
            uint32_t bytes = tesi_value_bytes(&world->components[c]);
            if (bytes) result = tesi_page_for(world, &rb->values[c], index, bytes);
        }
    }
    for (uint32_t i = 0; i < world->sparse_count && result == TES_OK; i++) {
        tes_component_t c = world->sparse_ids[i];
        const tesi_component_t *comp = &world->components[c];
        if (tesi_sparse_slot(&comp->sparse, index)) {
            result = tesi_page_for(world, &rb->slots[c], index, sizeof(uint32_t));
            uint32_t bytes = tesi_value_bytes(comp);
            if (result == TES_OK && bytes)
                result = tesi_page_for(world, &rb->values[c], index, bytes);
        }
        if (result == TES_OK && tesi_is_relation(comp)) {
            const tesi_relation_t *rel = &comp->relation;
            if (tesi_list_of(rel, TESI_OUT, index)->count ||
                tesi_list_of(rel, TESI_IN, index)->count) {
                result =
                    tesi_page_for(world, &rb->pairs[c].lists[TESI_OUT], index, sizeof(tesi_list_t));
                if (result == TES_OK) {
                    result = tesi_page_for(world, &rb->pairs[c].lists[TESI_IN], index,
                                           sizeof(tesi_list_t));
                }
            }
        }
    }
    return result;
}

/* A relation's shadow table as large as the world's. */
static tes_result_t reserve_pairs(tes_world_t *world, tesi_shadow_pairs_t *sp,
                                  const tesi_component_t *c) {
    uint32_t slots = c->relation.pair_slots;
    if (slots <= sp->slots) return TES_OK;
    tesi_pair_t *pairs = tesi_alloc(world, (size_t)slots * sizeof *pairs);
    uint8_t *data = pairs && c->stride ? tesi_alloc(world, (size_t)slots * c->stride) : NULL;
    if (!pairs || (c->stride && !data)) {
        tesi_free(world, pairs, (size_t)slots * sizeof *pairs);
        return TES_ERR_OUT_OF_MEMORY;
    }
    memset(pairs, 0, (size_t)slots * sizeof *pairs);
    if (sp->slots) {
        memcpy(pairs, sp->pairs, (size_t)sp->slots * sizeof *pairs);
        if (c->stride) memcpy(data, sp->data, (size_t)sp->slots * c->stride);
    }
    tesi_free(world, sp->pairs, (size_t)sp->slots * sizeof *pairs);
    tesi_free(world, sp->data, (size_t)sp->slots * c->stride);
    sp->pairs = pairs;
    sp->data = data;
    sp->slots = slots;
    return TES_OK;
}

tes_result_t tesi_reserve_zeroed(tes_world_t *world, void **array, uint32_t *slots, uint32_t needed,
                                 size_t elem) {
    uint32_t old = *slots;
    tes_result_t result = tesi_reserve(world, array, slots, needed, elem, 16);
    if (result == TES_OK && *slots > old) {
        memset((uint8_t *)*array + (size_t)old * elem, 0, (size_t)(*slots - old) * elem);
    }
    return result;
}

tes_result_t tesi_shadow_reserve(tes_world_t *world, tesi_rollback_t *rb, uint32_t moved) {
    /* Zeroed: an archetype made and emptied between two checkpoints is never marked, and its
     * count at the newest checkpoint (0) is read from here. */
    tes_result_t result =
        tesi_reserve_zeroed(world, (void **)&rb->archetype_counts, &rb->archetype_slots,
                            world->archetype_count, sizeof *rb->archetype_counts);
    if (result == TES_OK) {
        result = tesi_reserve_zeroed(world, (void **)&rb->marks, &rb->mark_slots,
                                     world->archetype_count, 1);
    }
    for (uint32_t i = 0; i < world->sparse_count && result == TES_OK; i++) {
        tes_component_t c = world->sparse_ids[i];
        if (tesi_is_relation(&world->components[c])) {
            result = reserve_pairs(world, &rb->pairs[c], &world->components[c]);
        }
    }
    for (uint32_t i = 0; i < moved && result == TES_OK; i++)
        result = reserve_index(world, rb, rb->touched[i]);
    return result;
}

/* One index's shadow from the world (its pages reserved). */
static void update_index(tes_world_t *world, tesi_rollback_t *rb, uint32_t index) {
    tesi_shadow_state_t *shadow = tesi_paged_at(&rb->states, index, sizeof *shadow);
    tesi_state_t *state = &shadow->state;
    *state = tesi_state_now(world, index);
    if (state->archetype) {
        const tesi_record_t *r = tesi_record_at(world, index);
        const tesi_archetype_t *a = r->chunk->archetype;
        for (uint32_t i = 0; i < a->component_count; i++) {
            const tesi_component_t *c = &world->components[a->components[i]];
            if (!tesi_value_bytes(c)) continue;
            uint8_t *v = tesi_paged_at(&rb->values[a->components[i]], index, c->stride);
            for (uint32_t f = 0; f < c->field_count; f++) {
                tesi_copy_cell(v + c->fields[f].offset,
                               tesi_cell(r->chunk, tesi_column_of(a, i, f), r->row),
                               c->fields[f].bytes);
            }
        }
    }
    for (uint32_t i = 0; i < world->sparse_count; i++) {
        tes_component_t id = world->sparse_ids[i];
        const tesi_component_t *c = &world->components[id];
        uint32_t slot1 = tesi_sparse_slot(&c->sparse, index);
        uint32_t *slot = slot1 ? tesi_paged_at(&rb->slots[id], index, sizeof *slot)
                               : tesi_paged_find(&rb->slots[id], index, sizeof *slot);
        if (slot) *slot = slot1;
        uint32_t bytes = tesi_value_bytes(c);
        if (slot1 && bytes) {
            memcpy(tesi_paged_at(&rb->values[id], index, bytes),
                   c->sparse.data + (size_t)(slot1 - 1) * bytes, bytes);
        }
        if (!tesi_is_relation(c)) continue;
        const tesi_relation_t *rel = &c->relation;
        tesi_shadow_pairs_t *sp = &rb->pairs[id];
        for (int side = TESI_OUT; side <= TESI_IN; side++) {
            const tesi_list_t *now = tesi_list_of(rel, side, index);
            tesi_list_t *copy = tesi_paged_find(&sp->lists[side], index, sizeof *copy);
            if (!copy) continue; /* no pairs then, none now (reserve_index) */
            *copy = *now;
            for (uint32_t p = now->first; p; p = rel->pairs[p - 1].next[side]) {
                sp->pairs[p - 1] = rel->pairs[p - 1];
                if (c->stride) {
                    memcpy(sp->data + (size_t)(p - 1) * c->stride,
                           rel->data + (size_t)(p - 1) * c->stride, c->stride);
                }
            }
        }
    }
    shadow->sets = world->sparse_count ? tesi_put_sets(world, rb, index, NULL) - 8 : 0;
}

void tesi_shadow_update(tes_world_t *world, tesi_rollback_t *rb, uint32_t end) {
    for (uint32_t i = 0; i < end; i++)
        update_index(world, rb, rb->touched[i]);
    for (uint32_t a = 0; a < world->archetype_count; a++) {
        if (!rb->marks[a]) continue;
        rb->marks[a] = 0;
        rb->archetype_counts[a] = world->archetypes[a]->entity_count;
    }
}

tes_result_t tesi_rollback_validate(const tes_world_t *world) {
    const tesi_rollback_t *rb = world->rollback;
    if (!rb) return TES_OK;
    /* Every shadow state's sets size is what its sparse slots and pair lists take: whole images
     * are sized by it, without walking them. */
    for (uint32_t page = 0; page < rb->states.page_slots; page++) {
        if (!rb->states.pages[page]) continue;
        for (uint32_t k = 0; k < TESI_PAGE_SIZE; k++) {
            uint32_t index = (page << TESI_PAGE_BITS) | k;
            const tesi_shadow_state_t *s = tesi_shadow_of(rb, index);
            uint32_t sets = world->sparse_count ? tesi_put_sets(world, rb, index, NULL) - 8 : 0;
            if (s->sets != sets) return TES_ERR_CORRUPT;
        }
    }
    /* A fresh component's dirty rows were stamped after the newest checkpoint, or belong to a
     * listed index (the dirty walk then reads no stamp). */
    for (uint32_t w = 0; w < rb->watch_count; w++) {
        const tesi_component_t *c = &world->components[rb->watches[w].component];
        if (!tesi_rollback_fresh(c, rb->base)) continue;
        const tesi_sparse_t *s = &c->sparse;
        for (uint32_t i = 0; tesi_is_sparse(c) && i < s->dirty_count; i++) {
            uint32_t slot1 = tesi_sparse_slot(s, s->dirty[i]);
            if (slot1 && s->changed[slot1 - 1] <= rb->base && !tesi_listed(rb, s->dirty[i])) {
                return TES_ERR_CORRUPT;
            }
        }
        for (uint32_t t = 0; t < c->dirty_set_count; t++) {
            const tesi_tracker_t *tracker = c->dirty_set[t];
            const tesi_chunk_t *chunk = tracker->chunk;
            for (uint32_t i = 0; i < tracker->dirty_count; i++) {
                uint32_t row = tracker->dirty[i];
                if (row >= chunk->count || tracker->changed[row] > rb->base) continue;
                if (!tesi_listed(rb, tesi_chunk_entities(chunk)[row] & TESI_INDEX_MASK)) {
                    return TES_ERR_CORRUPT;
                }
            }
        }
    }
    /* The listed bits say what the list's positions say (the dirty walk trusts the bits). */
    for (uint32_t page = 0; page < rb->where.page_slots; page++) {
        if (!rb->where.pages[page]) continue;
        for (uint32_t k = 0; k < TESI_PAGE_SIZE; k++) {
            uint32_t index = (page << TESI_PAGE_BITS) | k;
            bool at = *(const uint32_t *)tesi_paged_at(&rb->where, index, sizeof(uint32_t)) != 0;
            if (index / 64 >= rb->listed_words || at != tesi_listed(rb, index)) {
                return TES_ERR_CORRUPT;
            }
        }
    }
    return TES_OK;
}
