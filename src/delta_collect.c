/* Encoding, what changed and for whom (replicator.c runs an encode): the entity indices touched
 * since a baseline, from the dirty lists, removal logs and spawn/despawn stamps of the watched
 * components (and, for a peer, its visibility log and what it is owed), sorted and marked present
 * or gone; and under a peer's budget, which of the due records go. */
#include "delta.h"

#include <stdlib.h>

/* Room to list every entity index once, twice (touched and spare share one block). */
tes_result_t tesi_touched_reserve(tes_replicator_t *rep, uint32_t n) {
    if (n <= rep->touched_slots) return TES_OK;
    uint32_t slots = rep->touched_slots ? rep->touched_slots : 1024;
    while (slots < n)
        slots *= 2;
    uint32_t *block = tesi_alloc(rep->world, 2 * (size_t)slots * sizeof *block);
    if (!block) return TES_ERR_OUT_OF_MEMORY;
    tesi_free(rep->world, rep->touched, 2 * (size_t)rep->touched_slots * sizeof *block);
    rep->touched = block;
    rep->spare = block + slots;
    rep->touched_slots = slots;
    return TES_OK;
}

static void touch(tes_replicator_t *rep, uint32_t index, uint8_t how) {
    uint8_t *mark = &rep->marks[index];
    if (!*mark) rep->touched[rep->touched_count++] = index;
    *mark |= TOUCHED | how;
}

/* Every index touched since `baseline` through watched component k. */
static void collect_component(tes_replicator_t *rep, uint32_t k, uint64_t baseline) {
    const tes_world_t *world = rep->world;
    const tesi_component_t *c = &world->components[rep->watched[k].component];
    bool term = rep->watched[k].term;
    /* A relation's membership matters only to the scope; its pairs go as events. */
    if (tesi_is_relation(c) && !term) return;
    if (tesi_is_sparse(c)) {
        const tesi_sparse_t *s = &c->sparse;
        for (uint32_t i = 0; i < s->dirty_count; i++) {
            uint32_t slot1 = tesi_sparse_slot(s, s->dirty[i]);
            if (!slot1) continue; /* removed: in the removal log */
            bool added = s->added[slot1 - 1] > baseline;
            if (added || s->changed[slot1 - 1] > baseline) {
                touch(rep, s->dirty[i], term && added ? WHOLE : 0);
            }
        }
    } else {
        for (uint32_t t = 0; t < c->dirty_set_count; t++) {
            const tesi_tracker_t *tracker = c->dirty_set[t];
            const tesi_chunk_t *chunk = tracker->chunk;
            for (uint32_t i = 0; i < tracker->dirty_count; i++) {
                uint32_t row = tracker->dirty[i];
                if (row >= chunk->count) continue; /* vacated */
                bool added = tracker->added[row] > baseline;
                if (added || tracker->changed[row] > baseline) {
                    touch(rep, tesi_chunk_entities(chunk)[row] & TESI_INDEX_MASK,
                          term && added ? WHOLE : 0);
                }
            }
        }
    }
    const tesi_removal_log_t *log = &c->log;
    for (uint32_t i = tesi_log_after(log->ticks, log->count, baseline); i < log->count; i++)
        touch(rep, log->entities[i] & TESI_INDEX_MASK, term ? WHOLE : 0);
}

/* Whether the live entity is in the replicator's scope. */
tes_result_t tesi_in_scope(tes_replicator_t *rep, tes_entity_t e, bool *out) {
    if (!rep->scope) {
        *out = true;
        return TES_OK;
    }
    return tesi_query_matches(rep->world, rep->scope, e, out);
}

/* The peer's own: the indices whose visibility changed since the baseline (whole: they may
 * have entered its view), and those it is owed (forgiven once a baseline at or after the delta
 * that carried them is acknowledged). */
static void collect_peer(tes_replicator_t *rep, uint64_t baseline) {
    tes_peer_t *peer = rep->peer;
    for (uint32_t i = tesi_log_after(peer->log_ticks, peer->log_count, baseline);
         i < peer->log_count; i++)
        touch(rep, peer->log[i], WHOLE);
    uint32_t kept = 0;
    for (uint32_t i = 0; i < peer->owed_count; i++) {
        uint32_t index = peer->owed[i];
        const tesi_sight_t *s = tesi_sight_find(peer, index);
        if (!s || !(s->flags & SIGHT_OWED)) continue; /* forgiven (its sight maybe gone) */
        if (s->sent && baseline >= s->sent) {
            tesi_peer_forgive(peer, index);
            continue;
        }
        peer->owed[kept++] = index;
        touch(rep, index, OWED);
    }
    peer->owed_count = kept;
}

/* Sorts the touched indices and marks PRESENT each that holds a live entity in scope (and in
 * the peer's view). */
static tes_result_t settle_touched(tes_replicator_t *rep) {
    tes_world_t *world = rep->world;
    tesi_sort_indices(rep->touched, rep->spare, rep->touched_count);
    for (uint32_t i = 0; i < rep->touched_count; i++) {
        uint32_t index = rep->touched[i];
        const tesi_record_t *record = tesi_record_find(world, index);
        if (!record || !record->chunk) continue;
        tes_entity_t e = tesi_make_handle(index, tesi_generation(record));
        if (rep->peer && !tesi_peer_visible(rep->peer, e)) continue;
        bool present;
        tes_result_t result = tesi_in_scope(rep, e, &present);
        if (result != TES_OK) return result;
        if (present) rep->marks[index] |= PRESENT;
    }
    return TES_OK;
}

/* What changed since `baseline`: the touched indices, sorted, marked. */
tes_result_t tesi_collect(tes_replicator_t *rep, uint64_t baseline) {
    tes_world_t *world = rep->world;
    for (uint32_t k = 0; k < rep->watched_count; k++)
        collect_component(rep, k, baseline);
    for (uint32_t i = 0; i < world->index_dirty_count; i++) {
        uint32_t index = world->index_dirty[i];
        const uint64_t *tick = tesi_paged_at(&world->index_ticks, index, sizeof *tick);
        if ((*tick & ~TESI_INDEX_LISTED) > baseline) touch(rep, index, WHOLE);
    }
    if (rep->peer) collect_peer(rep, baseline);
    return settle_touched(rep);
}

/* A keyframe: every live entity, listed like changes (so that a budget can choose among them),
 * and what the encode's peer is owed. */
tes_result_t tesi_collect_all(tes_replicator_t *rep, uint64_t baseline) {
    tes_world_t *world = rep->world;
    if (rep->peer) collect_peer(rep, baseline);
    for (uint32_t index = 1; index < world->record_count; index++) {
        const tesi_record_t *record = tesi_record_find(world, index);
        if (!record) {
            index |= TESI_PAGE_MASK; /* an unallocated page: no entity */
            continue;
        }
        if (record->chunk) touch(rep, index, WHOLE);
    }
    return settle_touched(rep);
}

/* ---- a budget: which records go ------------------------------------------------------- */

/* Higher scores first; ties in index order. */
static int by_score(const void *a, const void *b) {
    const due_t *x = a, *y = b;
    if (x->score != y->score) return x->score > y->score ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* Which due records go within the peer's budget (bytes of records): the highest scores first,
 * and the first always; the others are marked WITHHELD, with their sights and places in the
 * owed list reserved, so settling after the write cannot fail. A record's size is learned by
 * writing it aside by a plan of every due record, its gap from the due record before: the
 * write's plan, of fewer records, gives no pattern index or quantized code more bits, though a
 * gap over withheld neighbours may take a few more. */
tes_result_t tesi_choose(tes_replicator_t *rep, uint64_t baseline, bool keyframe, uint32_t budget) {
    tes_world_t *world = rep->world;
    /* Nothing is withheld yet: the plan of every due record, which counts them too. */
    tesi_records_plan_t plan;
    tes_result_t result = tesi_plan_records(rep, baseline, keyframe, &plan);
    if (result == TES_OK) {
        result = tesi_reserve(world, (void **)&rep->due, &rep->due_slots, plan.count,
                              sizeof *rep->due, 64);
    }
    if (result != TES_OK) return result;
    tesi_writer_t aside = {world, &rep->aside, &rep->aside_slots, 0, TES_OK};
    uint64_t total = 0;
    uint32_t previous = 0, n = 0;
    for (uint32_t i = 0; i < rep->touched_count; i++) {
        uint32_t index = rep->touched[i];
        uint8_t mark = rep->marks[index];
        if (!(mark & PRESENT)) continue;
        tes_entity_t e = tesi_make_handle(index, tesi_generation(tesi_record_at(world, index)));
        aside.size = 0;
        tesi_bits_t bits = {&aside, 0, 0};
        tesi_put_record(&bits, rep, &plan, e, baseline, keyframe || (mark & (WHOLE | OWED)),
                        &previous);
        if (aside.result != TES_OK) return aside.result;
        uint32_t size = (uint32_t)((tesi_bits_size(&bits) + 7) / 8);
        rep->due[n] = (due_t){tesi_peer_score(rep->peer, index), index, size, i};
        total += rep->due[n++].size;
    }
    if (total <= budget) {
        rep->plan = plan;
        rep->planned = true;
        return TES_OK;
    }
    qsort(rep->due, n, sizeof *rep->due, by_score);
    uint64_t used = 0;
    uint32_t withheld = 0;
    for (uint32_t k = 0; k < n; k++) {
        if (k == 0 || used + rep->due[k].size <= budget) {
            used += rep->due[k].size;
            continue;
        }
        rep->marks[rep->due[k].index] |= WITHHELD;
        withheld++;
    }
    return tesi_peer_reserve(rep->peer, withheld);
}

/* After a peer's delta was written: the withheld are owed, the owed that went are sent, and
 * the owed that are gone (or that a keyframe lacks) are forgiven. */
void tesi_settle_peer(tes_replicator_t *rep, uint64_t now) {
    for (uint32_t i = 0; i < rep->touched_count; i++) {
        uint32_t index = rep->touched[i];
        uint8_t mark = rep->marks[index];
        if (mark & WITHHELD) {
            tesi_peer_withhold(rep->peer, index);
        } else if (mark & PRESENT) {
            tesi_peer_sent(rep->peer, index, now);
        } else {
            tesi_peer_forgive(rep->peer, index);
        }
    }
}
