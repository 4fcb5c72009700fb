/* The sending side of replication (docs/format.md, "tessera delta format"): a replicator
 * encodes what changed in its world since a baseline tick by walking the dirty lists, removal
 * logs, pair event logs and the spawn/despawn stamps of entity indices (replica.c applies it).
 *
 * A replicator is a consumer like any query: it owns one internal query per component it watches
 * (each replicated component, and each component its scope query tests), whose first filter
 * makes the component dirty-tracked and whose removed (and pair_changes) terms keep its logs.
 * Those queries never run; their last_run is held at the oldest baseline the replicator still
 * serves (the tick of its `history`-th latest encode), so pruning drops everything older and a
 * replica that fell further behind gets a keyframe instead. */
#include "delta.h"

#include <stdlib.h>

#define DEFAULT_HISTORY 64u

/* ---- the replicator --------------------------------------------------------------------- */

/* The tick of the latest encode (0: none yet). */
static uint64_t newest_of(const tes_replicator_t *rep) {
    if (!rep->history_count) return 0;
    return rep->history[(rep->history_next + rep->history_slots - 1) % rep->history_slots];
}

/* The oldest baseline a delta can start from: older changes may be pruned. */
static uint64_t floor_of(const tes_replicator_t *rep) {
    if (!rep->history_count) return rep->created;
    uint32_t oldest = rep->history_count < rep->history_slots ? 0 : rep->history_next;
    uint64_t floor = rep->history[oldest];
    return rep->released > floor ? rep->released : floor;
}

/* Holds the consumer queries at the floor: what pruning may drop. */
static void hold(tes_replicator_t *rep) {
    for (uint32_t i = 0; i < rep->watched_count; i++)
        tesi_query_hold(rep->watched[i].query, floor_of(rep));
}

tes_result_t tes_replicator_release(tes_replicator_t *rep, uint64_t tick) {
    if (!rep) return TES_ERR_INVALID_ARGUMENT;
    uint64_t newest = newest_of(rep);
    /* Never past the newest encode: its baseline is what the next delta starts from. */
    if (tick > newest) tick = newest;
    if (tick > rep->released) rep->released = tick;
    hold(rep);
    return TES_OK;
}

uint64_t tesi_replicators_floor(const tes_world_t *world) {
    uint64_t min = UINT64_MAX;
    for (uint32_t i = 0; i < world->replicator_count; i++) {
        uint64_t f = floor_of(world->replicators[i]);
        if (f < min) min = f;
    }
    return min;
}

tes_world_t *tesi_replicator_world(const tes_replicator_t *rep) {
    return rep->world;
}

/* Room in the history for `peers` peers' encodes: a server updating each of its P clients every
 * frame encodes P times a frame, so a ring of `history` encodes would hold history / P frames
 * (64 encodes, 40 clients: acknowledgements 2 frames late got keyframes). The ring grows, its
 * entries kept in order; it never shrinks. */
static tes_result_t history_reserve(tes_replicator_t *rep, uint32_t peers) {
    uint64_t wanted = (uint64_t)rep->history_per_peer * (peers ? peers : 1);
    if (wanted <= rep->history_slots) return TES_OK;
    if (wanted > UINT32_MAX / sizeof *rep->history) return TES_ERR_OUT_OF_MEMORY;
    uint64_t *ring = tesi_alloc(rep->world, (size_t)wanted * sizeof *ring);
    if (!ring) return TES_ERR_OUT_OF_MEMORY;
    uint32_t oldest = rep->history_count < rep->history_slots ? 0 : rep->history_next;
    for (uint32_t i = 0; i < rep->history_count; i++)
        ring[i] = rep->history[(oldest + i) % rep->history_slots];
    tesi_free(rep->world, rep->history, rep->history_slots * sizeof *rep->history);
    rep->history = ring;
    rep->history_slots = (uint32_t)wanted;
    rep->history_next = rep->history_count;
    return TES_OK;
}

tes_result_t tesi_replicator_add_peer(tes_replicator_t *rep, tes_peer_t *peer) {
    tes_result_t result = tesi_reserve(rep->world, (void **)&rep->peers, &rep->peer_slots,
                                       rep->peer_count + 1, sizeof *rep->peers, 4);
    if (result == TES_OK) result = history_reserve(rep, rep->peer_count + 1);
    if (result == TES_OK) rep->peers[rep->peer_count++] = peer;
    return result;
}

void tesi_replicator_remove_peer(tes_replicator_t *rep, tes_peer_t *peer) {
    for (uint32_t i = 0; i < rep->peer_count; i++) {
        if (rep->peers[i] == peer) {
            rep->peers[i] = rep->peers[--rep->peer_count];
            return;
        }
    }
}

static void replicator_free(tes_replicator_t *rep) {
    tes_world_t *world = rep->world;
    for (uint32_t i = 0; i < rep->peer_count; i++)
        tesi_peer_free(rep->peers[i]);
    tesi_free(world, rep->peers, rep->peer_slots * sizeof *rep->peers);
    tesi_free(world, rep->due, rep->due_slots * sizeof *rep->due);
    tesi_free(world, rep->aside, rep->aside_slots);
    tesi_free(world, rep->patterns, rep->pattern_slots);
    tesi_free(world, rep->histograms, rep->histogram_slots * sizeof *rep->histograms);
    for (uint32_t id = 0; id < rep->shadow_slots; id++)
        tesi_paged_fini(world, &rep->shadows[id], tesi_shadow_size(&world->components[id]));
    tesi_free(world, rep->shadows, rep->shadow_slots * sizeof *rep->shadows);
    tesi_free(world, rep->masks, TES_MAX_COMPONENTS * sizeof *rep->masks);
    for (uint32_t i = 0; i < rep->watched_count; i++)
        tes_query_destroy(world, rep->watched[i].query);
    uint32_t n = TES_MAX_COMPONENTS;
    tesi_free(world, rep->components, n * sizeof *rep->components);
    tesi_free(world, rep->watched, n * sizeof *rep->watched);
    tesi_free(world, rep->ids, n * sizeof *rep->ids);
    tesi_free(world, rep->history, rep->history_slots * sizeof *rep->history);
    tesi_free(world, rep->bytes, rep->byte_slots);
    tesi_free(world, rep->marks, rep->mark_slots);
    tesi_free(world, rep->touched, 2 * (size_t)rep->touched_slots * sizeof *rep->touched);
    tesi_free(world, rep->ordered, rep->ordered_slots * sizeof *rep->ordered);
    tesi_free(world, rep->schema, rep->schema_slots);
    tesi_free(world, rep->quanta, rep->quantum_count * sizeof *rep->quanta);
    tesi_free(world, rep, sizeof *rep);
}

/* Watches component c (once): a consumer query that keeps it dirty-tracked and logged. */
static tes_result_t watch(tes_replicator_t *rep, tes_component_t c, bool term) {
    for (uint32_t i = 0; i < rep->watched_count; i++) {
        if (rep->watched[i].component == c) {
            rep->watched[i].term |= term;
            return TES_OK;
        }
    }
    tes_world_t *world = rep->world;
    bool relation = tesi_is_relation(&world->components[c]);
    tes_query_desc_t desc = {.changed = &c,
                             .changed_count = 1,
                             .removed = &c,
                             .removed_count = 1,
                             .pair_changes = &c,
                             .pair_change_count = relation};
    tes_query_t *q;
    tes_result_t result = tes_query_create(world, &desc, &q);
    if (result != TES_OK) return result;
    tesi_query_hold(q, rep->created);
    rep->watched[rep->watched_count++] = (watch_t){c, term, q};
    return TES_OK;
}

/* The ids (the first as it is, then the gaps: they ascend), then the schemas and the quantized
 * fields as a keyframe writes them after the count (a delta writes the ids alone), and the CRC
 * every delta carries: a replica decodes with the steps of its keyframe, and other steps are
 * another schema. */
static tes_result_t write_schema(tes_replicator_t *rep) {
    tesi_writer_t w = {rep->world, &rep->schema, &rep->schema_slots, 0, TES_OK};
    for (uint32_t i = 0; i < rep->component_count; i++)
        tesi_put_varint(&w, rep->components[i] - (i ? rep->components[i - 1] : 0));
    rep->ids_size = w.size;
    for (uint32_t i = 0; i < rep->component_count; i++)
        tesi_put_schema(&w, &rep->world->components[rep->components[i]]);
    tesi_put_varint(&w, rep->quantum_count);
    for (uint32_t q = 0, i = 0; q < rep->quantum_count; q++) {
        const tesi_quantum_t *quantum = &rep->quanta[q];
        while (rep->components[i] != quantum->component) /* (every quantum's is replicated) */
            i++;
        tesi_put_varint(&w, i); /* its place among the ids */
        tesi_put_varint(&w, quantum->field);
        tesi_put(&w, &quantum->step, sizeof quantum->step);
    }
    if (w.result != TES_OK) return w.result;
    rep->schema_size = w.size;
    rep->schema_crc = w.size ? tesi_crc32(rep->schema, w.size) : 0;
    return TES_OK;
}

/* Replicates the components registered since it last looked (without TES_COMPONENT_LOCAL). */
static tes_result_t adopt(tes_replicator_t *rep) {
    const tes_world_t *world = rep->world;
    tes_result_t result = TES_OK;
    while (rep->seen < world->component_count && result == TES_OK) {
        tes_component_t c = rep->seen;
        bool local = world->components[c].flags & TES_COMPONENT_LOCAL;
        if (!local) result = watch(rep, c, false);
        if (result != TES_OK) break; /* the next encode tries again */
        if (!local) rep->components[rep->component_count++] = c;
        rep->seen++;
    }
    return result == TES_OK ? write_schema(rep) : result;
}

/* A quantum tes_replicator_create accepts: a replicated component's f32 or f64 field, a step
 * finite and above 0, each (component, field) once. */
static tes_result_t check_quantum(const tes_world_t *world, const tes_replicator_desc_t *desc,
                                  uint32_t at) {
    const tes_quantum_t *q = &desc->quanta[at];
    if (q->component >= world->component_count) return TES_ERR_UNKNOWN_COMPONENT;
    const tesi_component_t *c = &world->components[q->component];
    bool replicated = !desc->components && !(c->flags & TES_COMPONENT_LOCAL);
    for (uint32_t i = 0; i < desc->component_count && !replicated; i++)
        replicated = desc->components[i] == q->component;
    /* (A relation's data travels with its pair events, exactly.) */
    if (!replicated || tesi_is_relation(c) || q->field >= c->field_count) {
        return TES_ERR_INVALID_ARGUMENT;
    }
    tes_type_t type = c->fields[q->field].type;
    if ((type != TES_F32 && type != TES_F64) || !isfinite(q->step) || !(q->step > 0)) {
        return TES_ERR_INVALID_ARGUMENT;
    }
    for (uint32_t i = 0; i < at; i++) {
        if (desc->quanta[i].component == q->component && desc->quanta[i].field == q->field) {
            return TES_ERR_INVALID_ARGUMENT;
        }
    }
    return TES_OK;
}

static bool quantum_before(const tesi_quantum_t *a, const tesi_quantum_t *b) {
    return a->component != b->component ? a->component < b->component : a->field < b->field;
}

/* The replicator's copy of the checked quanta, sorted by (component, field). */
static tes_result_t copy_quanta(tes_replicator_t *rep, const tes_replicator_desc_t *desc) {
    uint32_t n = desc->quantum_count;
    if (!n) return TES_OK;
    rep->quanta = tesi_alloc(rep->world, n * sizeof *rep->quanta);
    if (!rep->quanta) return TES_ERR_OUT_OF_MEMORY;
    rep->quantum_count = n;
    for (uint32_t i = 0; i < n; i++) {
        const tes_quantum_t *q = &desc->quanta[i];
        const tesi_field_t *f = &rep->world->components[q->component].fields[q->field];
        tesi_quantum_t quantum = {q->component,           q->field,  f->offset,
                                  tes_type_size(f->type), f->length, q->step};
        uint32_t at = i; /* insertion: a replicator names a few */
        for (; at && quantum_before(&quantum, &rep->quanta[at - 1]); at--)
            rep->quanta[at] = rep->quanta[at - 1];
        rep->quanta[at] = quantum;
    }
    return TES_OK;
}

/* A source id for a replicator made without one: a CRC of the world's address and its count of
 * replicators made, which no other replicator of the worlds alive in this process shares (the
 * CRC of two of them may still match, as any 32-bit mix may). Never 0 (a replica's "none
 * yet"). */
static uint32_t pick_source(tes_world_t *world) {
    uintptr_t seed[2] = {(uintptr_t)world, ++world->replicators_made};
    uint32_t source = tesi_crc32((const uint8_t *)seed, sizeof seed);
    return source ? source : 1;
}

tes_result_t tes_replicator_create(tes_world_t *world, const tes_replicator_desc_t *desc,
                                   tes_replicator_t **out_replicator) {
    if (!world || !desc || !out_replicator) return TES_ERR_INVALID_ARGUMENT;
    if (tesi_deferring(world)) return TES_ERR_INVALID_ARGUMENT;
    if (desc->component_count && !desc->components) return TES_ERR_INVALID_ARGUMENT;
    uint32_t n = world->component_count;
    for (uint32_t i = 0; i < desc->component_count; i++) {
        if (desc->components[i] >= n) return TES_ERR_UNKNOWN_COMPONENT;
        if (world->components[desc->components[i]].flags & TES_COMPONENT_LOCAL) {
            return TES_ERR_INVALID_ARGUMENT;
        }
    }
    if (desc->quantum_count && !desc->quanta) return TES_ERR_INVALID_ARGUMENT;
    if (desc->flags & ~TES_REPLICATOR_CHANGED_FIELDS) return TES_ERR_INVALID_ARGUMENT;
    /* More than a world has fields: some (component, field) twice. */
    if (desc->quantum_count > TES_MAX_COMPONENTS * TES_MAX_FIELDS) return TES_ERR_INVALID_ARGUMENT;
    for (uint32_t i = 0; i < desc->quantum_count; i++) {
        tes_result_t result = check_quantum(world, desc, i);
        if (result != TES_OK) return result;
    }
    uint32_t history = desc->history ? desc->history : DEFAULT_HISTORY;
    /* The ring's bytes must fit a size_t (wasm32), as history_reserve's do: 2^29 encodes and
     * more wrapped to a few bytes, and the encodes wrote past them. */
    if (history > UINT32_MAX / sizeof(uint64_t)) return TES_ERR_OUT_OF_MEMORY;
    tes_result_t result =
        tesi_reserve(world, (void **)&world->replicators, &world->replicator_slots,
                     world->replicator_count + 1, sizeof *world->replicators, 4);
    if (result != TES_OK) return result;
    tes_replicator_t *rep = tesi_alloc(world, sizeof *rep);
    if (!rep) return TES_ERR_OUT_OF_MEMORY;
    *rep = (tes_replicator_t){.world = world,
                              .scope = desc->scope,
                              .source = desc->source ? desc->source : pick_source(world),
                              .created = world->change_tick,
                              .flags = desc->flags};
    /* Per-component arrays with room for every id: components may come later. */
    uint32_t slots = TES_MAX_COMPONENTS;
    bool ok = (rep->components = tesi_alloc(world, slots * sizeof *rep->components)) &&
              (rep->watched = tesi_alloc(world, slots * sizeof *rep->watched)) &&
              (rep->ids = tesi_alloc(world, slots * sizeof *rep->ids));
    if (ok && (rep->history = tesi_alloc(world, history * sizeof *rep->history))) {
        rep->history_slots = rep->history_per_peer = history;
    }
    if (ok && (desc->flags & TES_REPLICATOR_CHANGED_FIELDS)) {
        ok = (rep->masks = tesi_alloc(world, slots * sizeof *rep->masks)) != NULL;
    }
    if (!ok || !rep->history || copy_quanta(rep, desc) != TES_OK) {
        replicator_free(rep);
        return TES_ERR_OUT_OF_MEMORY;
    }
    rep->every = !desc->components;
    if (!rep->every) {
        /* The replicated set, ascending and without duplicates. */
        for (tes_component_t c = 0; c < n; c++) {
            bool chosen = false;
            for (uint32_t i = 0; i < desc->component_count && !chosen; i++)
                chosen = desc->components[i] == c;
            if (chosen) rep->components[rep->component_count++] = c;
        }
        for (uint32_t i = 0; i < rep->component_count && result == TES_OK; i++)
            result = watch(rep, rep->components[i], false);
        rep->seen = n;
        if (result == TES_OK) result = write_schema(rep);
    } else {
        result = adopt(rep);
    }
    if (rep->scope && result == TES_OK) {
        uint32_t count = tesi_query_terms(rep->scope, NULL, 0);
        tes_component_t *terms = tesi_alloc(world, count * sizeof *terms);
        if (!terms && count) result = TES_ERR_OUT_OF_MEMORY;
        if (terms) tesi_query_terms(rep->scope, terms, count);
        for (uint32_t i = 0; i < count && result == TES_OK; i++)
            result = watch(rep, terms[i], true);
        tesi_free(world, terms, count * sizeof *terms);
    }
    if (result == TES_OK) result = tesi_index_ticks(world, true);
    if (result != TES_OK) {
        replicator_free(rep);
        if (!world->replicator_count) tesi_index_ticks(world, false);
        return result;
    }
    world->replicators[world->replicator_count++] = rep;
    *out_replicator = rep;
    return TES_OK;
}

void tes_replicator_destroy(tes_replicator_t *rep) {
    if (!rep) return;
    tes_world_t *world = rep->world;
    for (uint32_t i = 0; i < world->replicator_count; i++) {
        if (world->replicators[i] == rep) {
            world->replicators[i] = world->replicators[--world->replicator_count];
            break;
        }
    }
    replicator_free(rep);
    if (!world->replicator_count) tesi_index_ticks(world, false);
}

void tesi_replicators_fini(tes_world_t *world) {
    while (world->replicator_count)
        tes_replicator_destroy(world->replicators[0]);
    tesi_free(world, world->replicators, world->replicator_slots * sizeof *world->replicators);
}

/* tes_delta_encode, for a peer (NULL: the replicator's whole scope) within a budget (0: none). */
static tes_result_t encode(tes_replicator_t *rep, tes_peer_t *peer, uint64_t baseline,
                           uint32_t budget, const uint8_t **out_bytes, uint32_t *out_size,
                           uint64_t *out_tick) {
    tes_world_t *world = rep->world;
    if (tesi_deferring(world)) return TES_ERR_INVALID_ARGUMENT;
    uint64_t now = world->change_tick;
    uint64_t newest = newest_of(rep);
    /* A baseline this replicator can serve: one of its ticks, not pruned since, and close enough
     * for the events' 32-bit ages. */
    bool keyframe = baseline == 0 || baseline < floor_of(rep) || baseline > newest ||
                    now - baseline > UINT32_MAX;
    tes_result_t result = TES_OK;
    if (rep->every && rep->seen < world->component_count) {
        /* New components: the replicas need them whole, so every baseline is too old now. */
        result = adopt(rep);
        if (result != TES_OK) return result;
        rep->history_count = rep->history_next = 0;
        rep->created = now;
        keyframe = true;
    }
    /* What every consumer has seen goes first, as tes_tick would drop it: a world that never
     * ticks must not make each encode walk (and keep) every change since the first one. */
    for (uint32_t i = 0; i < rep->watched_count; i++)
        tesi_prune_component(world, rep->watched[i].component);
    if (world->index_dirty_count) tesi_index_prune(world, tesi_replicators_floor(world));
    if (peer) tesi_peer_prune(peer, floor_of(rep));
    rep->touched_count = 0;
    rep->peer = peer;
    rep->now = now;
    /* Records come from a list of touched indices (a keyframe's: every live entity). */
    uint32_t old = rep->mark_slots;
    result =
        tesi_reserve(world, (void **)&rep->marks, &rep->mark_slots, world->record_count, 1, 1024);
    if (result == TES_OK) {
        memset(rep->marks + old, 0, rep->mark_slots - old);
        result = tesi_touched_reserve(rep, world->record_count);
    }
    if (result == TES_OK)
        result = keyframe ? tesi_collect_all(rep, baseline) : tesi_collect(rep, baseline);
    rep->planned = false; /* tesi_choose's plan serves this encode's write only */
    if (result == TES_OK && peer && budget) result = tesi_choose(rep, baseline, keyframe, budget);
    tesi_writer_t w = {world, &rep->bytes, &rep->byte_slots, 0, TES_OK};
    if (result == TES_OK) result = tesi_write_delta(&w, rep, baseline, now, keyframe);
    if (result == TES_OK && peer) tesi_settle_peer(rep, now);
    for (uint32_t i = 0; i < rep->touched_count; i++)
        rep->marks[rep->touched[i]] = 0;
    rep->peer = NULL;
    if (result != TES_OK) return result;
    uint32_t crc = tesi_crc32(rep->bytes + HEADER_BYTES, w.size - HEADER_BYTES);
    memcpy(rep->bytes + 8, &crc, 4);
    /* Like a consumer run: later writes carry a newer tick than the delta's. */
    world->change_tick++;
    rep->history[rep->history_next] = now;
    rep->history_next = (rep->history_next + 1) % rep->history_slots;
    if (rep->history_count < rep->history_slots) rep->history_count++;
    hold(rep);
    *out_bytes = rep->bytes;
    *out_size = w.size;
    if (out_tick) *out_tick = now;
    return TES_OK;
}

tes_result_t tes_delta_encode(tes_replicator_t *rep, uint64_t baseline, const uint8_t **out_bytes,
                              uint32_t *out_size, uint64_t *out_tick) {
    if (!rep || !out_bytes || !out_size) return TES_ERR_INVALID_ARGUMENT;
    return encode(rep, NULL, baseline, 0, out_bytes, out_size, out_tick);
}

tes_result_t tes_peer_encode(tes_peer_t *peer, uint64_t baseline, uint32_t budget,
                             const uint8_t **out_bytes, uint32_t *out_size, uint64_t *out_tick) {
    if (!peer || !out_bytes || !out_size) return TES_ERR_INVALID_ARGUMENT;
    return encode(peer->replicator, peer, baseline, budget, out_bytes, out_size, out_tick);
}
