/* Peers (tessera.h, "Peers"): what one replica alone gets from a replicator. A peer keeps, per
 * entity index it has met, a sight (shown or not, priority, owed by a budget), and a log of the
 * indices whose visibility changed, so an encode for it walks what changed and what entered or
 * left its view since its baseline (replicator.c), never every entity it sees. */
#include "delta.h"

#include <math.h>

void tesi_peer_free(tes_peer_t *peer) {
    tes_world_t *world = peer->world;
    tesi_free(world, peer->sights, peer->sight_slots * sizeof *peer->sights);
    tesi_free(world, peer->log_ticks,
              peer->log_slots * (sizeof *peer->log_ticks + sizeof *peer->log));
    tesi_free(world, peer->owed, peer->owed_slots * sizeof *peer->owed);
    tesi_free(world, peer, sizeof *peer);
}

tes_result_t tes_peer_create(tes_replicator_t *replicator, uint32_t flags, tes_peer_t **out_peer) {
    if (!replicator || !out_peer || (flags & ~TES_PEER_VISIBILITY)) {
        return TES_ERR_INVALID_ARGUMENT;
    }
    tes_world_t *world = tesi_replicator_world(replicator);
    tes_peer_t *peer = tesi_alloc(world, sizeof *peer);
    if (!peer) return TES_ERR_OUT_OF_MEMORY;
    memset(peer, 0, sizeof *peer);
    peer->replicator = replicator;
    peer->world = world;
    peer->flags = flags;
    tes_result_t result = tesi_replicator_add_peer(replicator, peer);
    if (result != TES_OK) {
        tesi_peer_free(peer);
        return result;
    }
    *out_peer = peer;
    return TES_OK;
}

void tes_peer_destroy(tes_peer_t *peer) {
    if (!peer) return;
    tesi_replicator_remove_peer(peer->replicator, peer);
    tesi_peer_free(peer);
}

/* ---- the table of sights ------------------------------------------------------------------ */

/* Room for `more` new sights: the table at most half full, rehashed into twice the slots. */
static tes_result_t sights_reserve(tes_peer_t *peer, uint32_t more) {
    uint64_t needed = 2 * ((uint64_t)peer->sight_count + more);
    if (needed <= peer->sight_slots) return TES_OK;
    uint64_t slots = peer->sight_slots ? peer->sight_slots : 16;
    while (slots < needed)
        slots *= 2;
    if (slots > UINT32_MAX / sizeof *peer->sights) return TES_ERR_OUT_OF_MEMORY;
    tesi_sight_t *table = tesi_alloc(peer->world, (size_t)slots * sizeof *table);
    if (!table) return TES_ERR_OUT_OF_MEMORY;
    memset(table, 0, (size_t)slots * sizeof *table);
    for (uint32_t i = 0; i < peer->sight_slots; i++) {
        const tesi_sight_t *s = &peer->sights[i];
        if (!s->index) continue;
        uint32_t h = tesi_sight_hash(s->index, (uint32_t)slots);
        while (table[h].index)
            h = (h + 1) & (uint32_t)(slots - 1);
        table[h] = *s;
    }
    tesi_free(peer->world, peer->sights, peer->sight_slots * sizeof *peer->sights);
    peer->sights = table;
    peer->sight_slots = (uint32_t)slots;
    return TES_OK;
}

/* The index's sight, made (all zeros but the index) when there is none: room reserved. */
static tesi_sight_t *sight_at(tes_peer_t *peer, uint32_t index) {
    tesi_sight_t *s = tesi_sight_find(peer, index);
    if (s) return s;
    uint32_t h = tesi_sight_hash(index, peer->sight_slots);
    while (peer->sights[h].index)
        h = (h + 1) & (peer->sight_slots - 1);
    peer->sights[h] = (tesi_sight_t){.index = index};
    peer->sight_count++;
    return &peer->sights[h];
}

/* Takes a sight out, shifting back the ones after it in its run (no tombstones). */
static void sight_remove(tes_peer_t *peer, tesi_sight_t *s) {
    uint32_t mask = peer->sight_slots - 1, hole = (uint32_t)(s - peer->sights);
    peer->sights[hole].index = 0;
    peer->sight_count--;
    for (uint32_t i = (hole + 1) & mask; peer->sights[i].index; i = (i + 1) & mask) {
        uint32_t home = tesi_sight_hash(peer->sights[i].index, peer->sight_slots);
        /* It may fill the hole unless its home lies cyclically in (hole, i]. */
        bool stays = hole <= i ? home > hole && home <= i : home > hole || home <= i;
        if (stays) continue;
        peer->sights[hole] = peer->sights[i];
        peer->sights[i].index = 0;
        hole = i;
    }
}

/* A sight that tells nothing any more: not shown, not owed, and its latest change of visibility
 * (if any) at or before the floor, where no baseline is served. */
static void sight_drop_if_idle(tes_peer_t *peer, tesi_sight_t *s) {
    if (s && !(s->flags & (SIGHT_SHOWN | SIGHT_OWED)) && s->since <= peer->floor) {
        sight_remove(peer, s);
    }
}

/* ---- showing and hiding ----------------------------------------------------------------- */

/* Logs a change of the index's visibility at the world's change tick (room reserved). */
static void log_change(tes_peer_t *peer, uint32_t index, tesi_sight_t *s) {
    s->since = peer->world->change_tick;
    peer->log[peer->log_count] = index;
    peer->log_ticks[peer->log_count++] = s->since;
}

/* Room for one more logged change. The ticks and the indices share one block (ticks first),
 * so they grow together or not at all. */
static tes_result_t log_reserve(tes_peer_t *peer) {
    if (peer->log_count < peer->log_slots) return TES_OK;
    uint32_t slots = peer->log_slots ? 2 * peer->log_slots : 64;
    size_t entry = sizeof *peer->log_ticks + sizeof *peer->log;
    uint64_t *block = tesi_alloc(peer->world, slots * entry);
    if (!block) return TES_ERR_OUT_OF_MEMORY;
    uint32_t *indices = (uint32_t *)(void *)(block + slots);
    if (peer->log_count) {
        memcpy(block, peer->log_ticks, peer->log_count * sizeof *block);
        memcpy(indices, peer->log, peer->log_count * sizeof *indices);
    }
    tesi_free(peer->world, peer->log_ticks, peer->log_slots * entry);
    peer->log_ticks = block;
    peer->log = indices;
    peer->log_slots = slots;
    return TES_OK;
}

tes_result_t tes_peer_show(tes_peer_t *peer, tes_entity_t entity, float priority) {
    if (!peer || !(peer->flags & TES_PEER_VISIBILITY)) return TES_ERR_INVALID_ARGUMENT;
    if (!(priority > 0.0f) || priority == INFINITY) return TES_ERR_INVALID_ARGUMENT;
    tes_world_t *world = peer->world;
    if (!tesi_record_of(world, entity)) return tesi_not_alive(world, entity);
    uint32_t index = entity & TESI_INDEX_MASK, generation = entity >> TES_INDEX_BITS;
    tesi_sight_t *s = tesi_sight_find(peer, index);
    if (s && (s->flags & SIGHT_SHOWN) && s->generation == generation) {
        s->priority = priority;
        return TES_OK;
    }
    tes_result_t result = sights_reserve(peer, 1);
    if (result == TES_OK) result = log_reserve(peer);
    if (result != TES_OK) return result;
    s = sight_at(peer, index);
    s->flags |= SIGHT_SHOWN;
    s->generation = generation;
    s->priority = priority;
    log_change(peer, index, s);
    return TES_OK;
}

tes_result_t tes_peer_hide(tes_peer_t *peer, tes_entity_t entity) {
    if (!peer || !(peer->flags & TES_PEER_VISIBILITY)) return TES_ERR_INVALID_ARGUMENT;
    uint32_t index = entity & TESI_INDEX_MASK;
    tesi_sight_t *s = tesi_sight_find(peer, index);
    if (!s || !(s->flags & SIGHT_SHOWN) || s->generation != entity >> TES_INDEX_BITS) return TES_OK;
    tes_result_t result = log_reserve(peer);
    if (result != TES_OK) return result;
    s->flags &= ~SIGHT_SHOWN;
    log_change(peer, index, s);
    return TES_OK;
}

bool tes_peer_sees(const tes_peer_t *peer, tes_entity_t entity) {
    return peer && tesi_record_of(peer->world, entity) && tesi_peer_visible(peer, entity);
}

void tesi_peer_prune(tes_peer_t *peer, uint64_t floor) {
    if (floor > peer->floor) peer->floor = floor;
    uint32_t from = tesi_log_after(peer->log_ticks, peer->log_count, floor);
    if (!from) return;
    for (uint32_t i = 0; i < from; i++)
        sight_drop_if_idle(peer, tesi_sight_find(peer, peer->log[i]));
    peer->log_count -= from;
    memmove(peer->log, peer->log + from, peer->log_count * sizeof *peer->log);
    memmove(peer->log_ticks, peer->log_ticks + from, peer->log_count * sizeof *peer->log_ticks);
}

tes_result_t tesi_peer_reserve(tes_peer_t *peer, uint32_t more) {
    tes_result_t result = tesi_reserve(peer->world, (void **)&peer->owed, &peer->owed_slots,
                                       peer->owed_count + more, sizeof *peer->owed, 64);
    return result == TES_OK ? sights_reserve(peer, more) : result;
}

float tesi_peer_score(const tes_peer_t *peer, uint32_t index) {
    const tesi_sight_t *s = tesi_sight_find(peer, index);
    if (!s) return 1.0f;
    float priority = (peer->flags & TES_PEER_VISIBILITY) && s->priority > 0 ? s->priority : 1.0f;
    return priority * (float)((s->flags & SIGHT_OWED ? s->waited : 0) + 1u);
}

void tesi_peer_sent(tes_peer_t *peer, uint32_t index, uint64_t now) {
    tesi_sight_t *s = tesi_sight_find(peer, index);
    if (s && (s->flags & SIGHT_OWED) && !s->sent) s->sent = now;
}

void tesi_peer_withhold(tes_peer_t *peer, uint32_t index) {
    tesi_sight_t *s = sight_at(peer, index);
    if (!(s->flags & SIGHT_OWED)) {
        s->flags |= SIGHT_OWED;
        s->waited = 0;
        peer->owed[peer->owed_count++] = index;
    }
    s->sent = 0;
    if (s->waited < UINT32_MAX) s->waited++;
}

void tesi_peer_forgive(tes_peer_t *peer, uint32_t index) {
    tesi_sight_t *s = tesi_sight_find(peer, index);
    if (!s) return;
    s->flags &= ~SIGHT_OWED;
    s->waited = 0;
    s->sent = 0;
    sight_drop_if_idle(peer, s);
}
