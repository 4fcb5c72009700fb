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

/* A delta's TES_PAIR_MOVED event moves the source to the end of the target's sources: a target
 * whose sources were reordered gets one per source, in order, at the end of the section. */
#define DEFAULT_HISTORY 64u

/* Marks on entity indices while an encode collects them. */
#define TOUCHED  1u
#define WHOLE    2u  /* every value goes: the entity was spawned, or may have entered the scope */
#define PRESENT  4u  /* alive and in scope now: a record, else a gone entry */
#define ORDERED  8u  /* a target whose sources' order goes (a moved event) */
#define OWED     16u /* the peer is owed its record: it goes whole */
#define WITHHELD 32u /* present, but its record did not fit the peer's budget */

/* A component the replicator keeps the changes of, and the query that keeps them. */
typedef struct watch_t {
    tes_component_t component;
    bool term; /* the scope tests it */
    tes_query_t *query;
} watch_t;

struct tes_replicator_t {
    tes_world_t *world;
    tes_component_t *components; /* replicated, ascending */
    uint32_t component_count;
    /* Without a list of components: every one without TES_COMPONENT_LOCAL, those registered
     * later too (adopted by the next encode, which is then a keyframe for every replica). */
    bool every;
    uint32_t seen; /* components looked at so far */
    tes_query_t *scope;
    /* One consumer query per watched component (replicated or a scope term). */
    struct watch_t *watched;
    uint32_t watched_count;
    /* Ticks of the latest encodes, a ring of `history_slots`: `history_per_peer` encodes for each
     * peer (at least one), as each peer's encode is one. */
    uint64_t *history;
    uint32_t history_per_peer;
    uint32_t history_slots;
    uint32_t history_count;
    uint32_t history_next;
    uint64_t created;  /* the change tick when tracking started */
    uint64_t released; /* no replica needs a baseline before it (tes_replicator_release) */
    uint8_t *bytes;    /* the latest delta */
    uint32_t byte_slots;
    uint32_t *ids;  /* a record's component ids while it is written */
    uint8_t *marks; /* by entity index */
    uint32_t mark_slots;
    uint32_t *touched; /* indices marked TOUCHED, each once */
    uint32_t *spare;   /* as long as touched, in the same block: for sorting */
    uint32_t touched_slots;
    uint32_t touched_count;
    tes_entity_t *ordered; /* targets marked ORDERED */
    uint32_t ordered_slots;
    /* The replicated components' schemas as a keyframe writes them, and the CRC every delta
     * carries (of the ids and these bytes): a replica maps ids by name once, at a keyframe. */
    uint8_t *schema;
    uint32_t schema_size;
    uint32_t ids_size; /* the schema's first bytes: the ids, as every delta writes them */
    uint32_t schema_slots;
    uint32_t schema_crc;
    uint32_t flags; /* TES_REPLICATOR_* */
    /* CHANGED_FIELDS: by component id, the shadows of its entities' values (see observe), and a
     * record's field masks while it is written; the tick the encode writes. */
    tesi_paged_t *shadows;
    uint32_t shadow_slots;
    uint64_t *masks;
    uint64_t now;
    tes_peer_t **peers; /* its peers (peer.c), destroyed with it */
    uint32_t peer_count;
    uint32_t peer_slots;
    tes_peer_t *peer; /* the peer an encode is for (NULL: none) */
    /* A budgeted encode's due records, and one record written aside to learn its size. */
    struct due_t *due;
    uint32_t due_slots;
    uint8_t *aside;
    uint32_t aside_slots;
    /* The fields sent quantized, by (component, field); written in the schema too. */
    tesi_quantum_t *quanta;
    uint32_t quantum_count;
};

/* A record due in a budgeted encode: which goes is decided by score. */
typedef struct due_t {
    float score;
    uint32_t index;
    uint32_t size;
    uint32_t order; /* its place in the touched list: ties go in index order */
} due_t;

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

/* A component's shadow of one entity (CHANGED_FIELDS): the entity's generation + 1 (0: none
 * yet), then per field the tick of the encode that first saw its current value, then the values
 * packed. */
static uint32_t shadow_size(const tesi_component_t *c) {
    return 8u + 8u * c->field_count + ((c->row_bytes + 7u) & ~7u);
}

static void replicator_free(tes_replicator_t *rep) {
    tes_world_t *world = rep->world;
    for (uint32_t i = 0; i < rep->peer_count; i++)
        tesi_peer_free(rep->peers[i]);
    tesi_free(world, rep->peers, rep->peer_slots * sizeof *rep->peers);
    tesi_free(world, rep->due, rep->due_slots * sizeof *rep->due);
    tesi_free(world, rep->aside, rep->aside_slots);
    for (uint32_t id = 0; id < rep->shadow_slots; id++)
        tesi_paged_fini(world, &rep->shadows[id], shadow_size(&world->components[id]));
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
    tes_result_t result =
        tesi_reserve(world, (void **)&world->replicators, &world->replicator_slots,
                     world->replicator_count + 1, sizeof *world->replicators, 4);
    if (result != TES_OK) return result;
    tes_replicator_t *rep = tesi_alloc(world, sizeof *rep);
    if (!rep) return TES_ERR_OUT_OF_MEMORY;
    *rep = (tes_replicator_t){
        .world = world, .scope = desc->scope, .created = world->change_tick, .flags = desc->flags};
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

/* ---- encoding: what changed ------------------------------------------------------------- */

/* Room to list every entity index once, twice (touched and spare share one block). */
static tes_result_t touched_reserve(tes_replicator_t *rep, uint32_t n) {
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

/* Sorts entity indices (below 2^21) in two counting passes of 11 bits through `spare`: O(n),
 * where a comparison sort of the thousands of indices a busy tick touches cost more than
 * writing their records. */
static void sort_indices(uint32_t *indices, uint32_t *spare, uint32_t n) {
    uint32_t *from = indices, *to = spare;
    for (uint32_t shift = 0; shift < TES_INDEX_BITS; shift += 11) {
        uint32_t counts[2048] = {0};
        for (uint32_t i = 0; i < n; i++)
            counts[(from[i] >> shift) & 2047]++;
        for (uint32_t b = 0, sum = 0; b < 2048; b++) {
            uint32_t c = counts[b];
            counts[b] = sum;
            sum += c;
        }
        for (uint32_t i = 0; i < n; i++)
            to[counts[(from[i] >> shift) & 2047]++] = from[i];
        uint32_t *t = from;
        from = to;
        to = t;
    }
    if (from != indices) memcpy(indices, from, n * sizeof *indices);
}

/* Whether the live entity is in the replicator's scope. */
static tes_result_t in_scope(tes_replicator_t *rep, tes_entity_t e, bool *out) {
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
        if (!(s->flags & SIGHT_OWED)) continue;
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
    sort_indices(rep->touched, rep->spare, rep->touched_count);
    for (uint32_t i = 0; i < rep->touched_count; i++) {
        uint32_t index = rep->touched[i];
        const tesi_record_t *record = tesi_record_find(world, index);
        if (!record || !record->chunk) continue;
        tes_entity_t e = tesi_make_handle(index, record->generation);
        if (rep->peer && !tesi_peer_visible(rep->peer, e)) continue;
        bool present;
        tes_result_t result = in_scope(rep, e, &present);
        if (result != TES_OK) return result;
        if (present) rep->marks[index] |= PRESENT;
    }
    return TES_OK;
}

/* What changed since `baseline`: the touched indices, sorted, marked. */
static tes_result_t collect(tes_replicator_t *rep, uint64_t baseline) {
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

/* A peer's keyframe: every live entity, listed like changes (so a budget can choose among
 * them), and what the peer is owed. */
static tes_result_t collect_all(tes_replicator_t *rep, uint64_t baseline) {
    tes_world_t *world = rep->world;
    collect_peer(rep, baseline);
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

/* ---- encoding: writing ------------------------------------------------------------------ */

/* A quantized field's elements at `out` (room for TESI_VARINT_MAX each): zigzag(q) + 1 with
 * q = llround(value / step), or ESCAPE and the exact bytes for a value that is not finite or too
 * far from 0. The byte after them. */
static uint8_t *put_quantized(uint8_t *out, const uint8_t *from, const tesi_quantum_t *quantum) {
    for (uint32_t i = 0; i < quantum->length; i++, from += quantum->size) {
        double value;
        if (quantum->size == sizeof(float)) {
            float f;
            memcpy(&f, from, sizeof f);
            value = f;
        } else {
            memcpy(&value, from, sizeof value);
        }
        double scaled = value / quantum->step;
        if (!isfinite(scaled) || fabs(scaled) > QUANTUM_LIMIT) {
            *out++ = ESCAPE;
            memcpy(out, from, quantum->size);
            out += quantum->size;
            continue;
        }
        /* llround without libm: the truncation and its remainder are exact below 2^53. */
        int64_t q = (int64_t)scaled;
        double rest = scaled - (double)q;
        q += rest >= 0.5 ? 1 : rest <= -0.5 ? -1 : 0;
        uint64_t zigzag = (uint64_t)q << 1 ^ (q < 0 ? UINT64_MAX : 0);
        out = tesi_varint_to(out, zigzag + 1);
    }
    return out;
}

/* Where field f of component `id` of a live entity is. */
static const uint8_t *field_cell(const tes_world_t *world, const tesi_record_t *record,
                                 tes_component_t id, uint32_t index, uint32_t f) {
    const tesi_component_t *c = &world->components[id];
    if (tesi_is_sparse(c)) {
        const uint8_t *row =
            tesi_row_at(c->sparse.data, tesi_sparse_slot(&c->sparse, index) - 1, c->stride);
        return row + c->fields[f].offset;
    }
    const tesi_archetype_t *a = record->chunk->archetype;
    return tesi_cell(record->chunk, tesi_column_of(a, tesi_type_index(a, id), f), record->row);
}

/* Every field of a component, as a mask. */
static uint64_t all_fields(const tesi_component_t *c) {
    return c->field_count >= 64 ? UINT64_MAX : (1ull << c->field_count) - 1;
}

/* CHANGED_FIELDS: the fields of component `id` of entity e that changed since the baseline (all
 * of them when `all`: the replica may lack the component). Compares the values with the
 * component's shadow of the entity, and stamps the fields that differ with the encode's tick:
 * every encode that writes a record compares, so a field's tick is that of the first encode that
 * saw its value, and a replica whose baseline is at or after it has the value. (A record written
 * for no one, withheld by a budget, goes whole when it goes.) 0 with w->result set when the
 * shadow's page cannot be allocated. */
static uint64_t observe(tesi_writer_t *w, tes_replicator_t *rep, tes_component_t id, tes_entity_t e,
                        const tesi_record_t *record, bool all, uint64_t baseline) {
    tes_world_t *world = rep->world;
    const tesi_component_t *c = &world->components[id];
    uint32_t index = e & TESI_INDEX_MASK, size = shadow_size(c);
    tes_result_t result = TES_OK;
    if (id >= rep->shadow_slots) {
        uint32_t old = rep->shadow_slots;
        result = tesi_reserve(world, (void **)&rep->shadows, &rep->shadow_slots, id + 1,
                              sizeof *rep->shadows, 8);
        if (result == TES_OK) {
            memset(rep->shadows + old, 0, (rep->shadow_slots - old) * sizeof *rep->shadows);
        }
    }
    if (result == TES_OK) {
        result = tesi_paged_reserve(world, &rep->shadows[id], index, index + 1, size);
    }
    if (result != TES_OK) {
        if (w->result == TES_OK) w->result = result;
        return 0;
    }
    uint8_t *shadow = tesi_paged_at(&rep->shadows[id], index, size);
    uint32_t generation;
    memcpy(&generation, shadow, sizeof generation);
    bool fresh = generation != (e >> TES_INDEX_BITS) + 1u;
    generation = (e >> TES_INDEX_BITS) + 1u;
    memcpy(shadow, &generation, sizeof generation);
    uint8_t *values = shadow + 8u + 8u * c->field_count;
    uint64_t mask = 0;
    for (uint32_t f = 0, at = 0; f < c->field_count; at += c->fields[f++].bytes) {
        const uint8_t *cell = field_cell(world, record, id, index, f);
        uint64_t tick;
        memcpy(&tick, shadow + 8u + 8u * f, sizeof tick);
        if (fresh || memcmp(values + at, cell, c->fields[f].bytes) != 0) {
            memcpy(values + at, cell, c->fields[f].bytes);
            tick = rep->now;
            memcpy(shadow + 8u + 8u * f, &tick, sizeof tick);
        }
        if (tick > baseline) mask |= 1ull << f;
    }
    return all ? all_fields(c) : mask;
}

/* A live entity's record (docs/format.md): its index as the gap from the previous record's
 * (`*previous`) with the whole bit; its generation when whole (otherwise the replica holds this
 * entity already, at that index); two bits per replicated component that is not a relation
 * (absent, present, present with some values, present with values); then, for each component
 * with values, its field mask when only some go, and the values of those added or changed since
 * the baseline (all of them when `whole`). */
static void put_record(tesi_writer_t *w, tes_replicator_t *rep, tes_entity_t e, uint64_t baseline,
                       bool whole, uint32_t *previous) {
    const tes_world_t *world = rep->world;
    const tesi_record_t *record = tesi_record_of(world, e);
    const tesi_chunk_t *chunk = record->chunk;
    const tesi_archetype_t *a = chunk->archetype;
    uint32_t index = e & TESI_INDEX_MASK;
    uint32_t *states = rep->ids, k = 0, values = 0;
    uint64_t *masks = rep->masks;
    /* The quanta follow the components (both by id): quantum_end, those of components before. */
    const tesi_quantum_t *quantum = rep->quanta;
    const tesi_quantum_t *quantum_end = quantum ? quantum + rep->quantum_count : NULL;
    for (uint32_t i = 0; i < rep->component_count; i++) {
        tes_component_t id = rep->components[i];
        const tesi_component_t *c = &world->components[id];
        if (tesi_is_relation(c)) continue;
        uint64_t added, changed; /* (replicated components are tracked) */
        uint32_t state = ABSENT;
        if (tes_ticks(world, e, id, &added, &changed) == TES_OK) {
            bool with = c->field_count && (whole || added > baseline || changed > baseline);
            state = with ? WITH_VALUES : PRESENT_STATE;
            if (with && masks && c->field_count > 1) {
                uint64_t mask = observe(w, rep, id, e, record, whole || added > baseline, baseline);
                if (w->result != TES_OK) return;
                state = mask == all_fields(c) ? WITH_VALUES : mask ? SOME_VALUES : PRESENT_STATE;
                masks[k] = mask;
            }
            values += state == WITH_VALUES || state == SOME_VALUES ? c->row_bytes : 0;
            values += state == SOME_VALUES ? TESI_VARINT_MAX : 0;
        }
        for (; quantum < quantum_end && quantum->component == id; quantum++) {
            if (state == WITH_VALUES || state == SOME_VALUES) {
                values += quantum->length * TESI_VARINT_MAX;
            }
        }
        states[k++] = state;
    }
    /* Room for the longest form, then plain stores; what the varints did not take is given back.
     * A record is on the hot path when most of the world changes every tick. With few
     * components the states ride in the head, between the gap and the whole bit. */
    bool in_head = k <= HEAD_STATES;
    uint32_t state_bytes = in_head ? 0 : (2 * k + 7) / 8, room = 10 + state_bytes + values;
    uint8_t *start = tesi_room(w, room);
    if (!start) return;
    uint64_t head = index - *previous;
    if (in_head) {
        head <<= 2 * k;
        for (uint32_t j = 0; j < k; j++)
            head |= (uint64_t)states[j] << (2 * j);
    }
    uint8_t *out = tesi_varint_to(start, head << 1 | (whole ? 1u : 0u));
    *previous = index;
    if (whole) out = tesi_varint_to(out, e >> TES_INDEX_BITS);
    memset(out, 0, state_bytes);
    for (uint32_t j = 0; !in_head && j < k; j++)
        out[j / 4] |= (uint8_t)(states[j] << (2 * (j % 4)));
    out += state_bytes;
    quantum = rep->quanta;
    for (uint32_t i = 0, j = 0; i < rep->component_count; i++) {
        tes_component_t id = rep->components[i];
        const tesi_component_t *c = &world->components[id];
        while (quantum < quantum_end && quantum->component < id)
            quantum++;
        if (tesi_is_relation(c)) continue;
        uint32_t state = states[j];
        uint64_t mask = state == SOME_VALUES ? masks[j] : UINT64_MAX;
        j++;
        if (state != WITH_VALUES && state != SOME_VALUES) continue;
        if (state == SOME_VALUES) out = tesi_varint_to(out, mask);
        const uint8_t *row = NULL;
        uint32_t type = TESI_NO_TYPE;
        if (tesi_is_sparse(c)) {
            row = tesi_row_at(c->sparse.data, tesi_sparse_slot(&c->sparse, index) - 1, c->stride);
        } else {
            type = tesi_type_index(a, id);
        }
        for (uint32_t f = 0; f < c->field_count; f++) {
            bool quantized =
                quantum < quantum_end && quantum->component == id && quantum->field == f;
            if (!(mask >> f & 1u)) {
                quantum += quantized;
                continue;
            }
            const uint8_t *from = row ? row + c->fields[f].offset
                                      : tesi_cell(chunk, tesi_column_of(a, type, f), record->row);
            if (quantized) {
                out = put_quantized(out, from, quantum++);
                continue;
            }
            memcpy(out, from, c->fields[f].bytes);
            out += c->fields[f].bytes;
        }
    }
    w->size -= (uint32_t)(start + room - out);
}

/* Whether a record goes whole and brings its pairs from before the baseline: it may have
 * entered the scope or the peer's view, or it is owed (withheld while its pairs went by). */
static bool brings_pairs(const tes_replicator_t *rep, uint8_t mark) {
    if ((mark & (PRESENT | WITHHELD)) != PRESENT) return false;
    if (mark & OWED) return true;
    bool may_enter = rep->scope || (rep->peer && (rep->peer->flags & TES_PEER_VISIBILITY));
    return may_enter && (mark & WHOLE);
}

/* An entity the peer's replica will lack after this delta: not in its view, or withheld by
 * its budget when it would have arrived whole. */
static bool missing_for_peer(const tes_replicator_t *rep, tes_entity_t e) {
    if (!tesi_peer_visible(rep->peer, e)) return true;
    uint8_t mark = rep->marks[e & TESI_INDEX_MASK];
    return (mark & WITHHELD) && (mark & (WHOLE | OWED));
}

/* Both ends alive, in scope and on the replica: a pair the replica holds. */
static tes_result_t pair_in_scope(tes_replicator_t *rep, tes_entity_t source, tes_entity_t target,
                                  bool *out) {
    *out = false;
    if (!tesi_record_of(rep->world, source) || !tesi_record_of(rep->world, target)) return TES_OK;
    if (rep->peer && (missing_for_peer(rep, source) || missing_for_peer(rep, target))) {
        return TES_OK;
    }
    tes_result_t result = in_scope(rep, source, out);
    if (result == TES_OK && *out) result = in_scope(rep, target, out);
    return result;
}

static tes_result_t put_event(tesi_writer_t *w, tes_replicator_t *rep, tes_component_t relation,
                              uint32_t kind, tes_entity_t source, tes_entity_t target, uint32_t age,
                              uint32_t *count) {
    bool both;
    tes_result_t result = pair_in_scope(rep, source, target, &both);
    if (result != TES_OK || !both) return result;
    const tesi_component_t *c = &rep->world->components[relation];
    uint32_t id = 0;
    if (c->field_count && (kind == TES_PAIR_ADDED || kind == TES_PAIR_CHANGED)) {
        id = tesi_pair_find(rep->world, relation, source, target);
    }
    tesi_put_varint(w, kind | (id ? DATA : 0));
    tesi_put_varint(w, source);
    tesi_put_varint(w, target);
    tesi_put_varint(w, age);
    if (id) tesi_put_row(w, c, tesi_row_at(c->relation.data, id - 1, c->stride));
    ++*count;
    return TES_OK;
}

/* The order of a target's sources: a moved event for each, in order. */
static tes_result_t put_order(tesi_writer_t *w, tes_replicator_t *rep, tes_component_t relation,
                              tes_entity_t target, uint32_t *count) {
    const tesi_relation_t *r = &rep->world->components[relation].relation;
    tes_result_t result = TES_OK;
    for (uint32_t id = tesi_list_of(r, TESI_IN, target)->first; id && result == TES_OK;
         id = r->pairs[id - 1].next[TESI_IN]) {
        result =
            put_event(w, rep, relation, TES_PAIR_MOVED, r->pairs[id - 1].source, target, 0, count);
    }
    return result;
}

/* A relation's section: its events since the baseline, then the order of the targets whose
 * sources were moved; or (keyframe) every pair in scope as an added event, then the order of
 * every target with several sources. */
static tes_result_t put_relation(tesi_writer_t *w, tes_replicator_t *rep, tes_component_t relation,
                                 uint64_t baseline, uint64_t now, bool keyframe) {
    const tesi_component_t *c = &rep->world->components[relation];
    const tesi_relation_t *r = &c->relation;
    uint32_t at = w->size, count = 0;
    tesi_put_u32(w, 0); /* the count, written at the end */
    tes_result_t result = TES_OK;
    if (!keyframe) {
        uint32_t ordered = 0;
        for (uint32_t i = tesi_log_after(r->event_ticks, r->event_count, baseline);
             i < r->event_count && result == TES_OK; i++) {
            const tes_pair_event_t *e = &r->events[i];
            if (e->kind != TES_PAIR_MOVED) {
                result = put_event(w, rep, relation, e->kind, e->source, e->target,
                                   (uint32_t)(now - r->event_ticks[i]), &count);
                continue;
            }
            uint8_t *mark = &rep->marks[e->target & TESI_INDEX_MASK];
            if ((*mark & ORDERED) || !tesi_record_of(rep->world, e->target)) continue;
            result = tesi_reserve(rep->world, (void **)&rep->ordered, &rep->ordered_slots,
                                  ordered + 1, sizeof *rep->ordered, 16);
            if (result != TES_OK) break;
            *mark |= ORDERED;
            rep->ordered[ordered++] = e->target;
        }
        for (uint32_t i = 0; i < ordered; i++) {
            if (result == TES_OK) result = put_order(w, rep, relation, rep->ordered[i], &count);
            rep->marks[rep->ordered[i] & TESI_INDEX_MASK] &= (uint8_t)~ORDERED;
        }
        /* An entity that may have entered the scope or the peer's view, or that was owed, brings
         * its pairs from before the baseline (those of the window came above; adding one the
         * replica has only writes its data). */
        for (uint32_t i = 0; i < rep->touched_count && result == TES_OK; i++) {
            uint32_t index = rep->touched[i];
            if (!brings_pairs(rep, rep->marks[index])) continue;
            tes_entity_t e = tesi_make_handle(index, tesi_record_at(rep->world, index)->generation);
            for (int side = TESI_OUT; side <= TESI_IN; side++) {
                for (uint32_t id = tesi_list_of(r, side, e)->first; id && result == TES_OK;
                     id = r->pairs[id - 1].next[side]) {
                    const tesi_pair_t *p = &r->pairs[id - 1];
                    result = put_event(w, rep, relation, TES_PAIR_ADDED, p->source, p->target, 0,
                                       &count);
                }
            }
        }
    } else {
        for (uint32_t m = 0; m < c->sparse.count && result == TES_OK; m++) {
            tes_entity_t source = c->sparse.entities[m];
            for (uint32_t id = tesi_list_of(r, TESI_OUT, source)->first; id && result == TES_OK;
                 id = r->pairs[id - 1].next[TESI_OUT]) {
                result = put_event(w, rep, relation, TES_PAIR_ADDED, source,
                                   r->pairs[id - 1].target, 0, &count);
            }
        }
        for (uint32_t index = 1; index < TESI_INDEX_LIMIT && result == TES_OK; index++) {
            const tesi_list_t *in = tesi_paged_find(&r->lists[TESI_IN], index, sizeof *in);
            if (!in) {
                index |= TESI_PAGE_MASK; /* an unallocated page: no pairs */
                continue;
            }
            if (in->count > 1) {
                result = put_order(w, rep, relation, r->pairs[in->first - 1].target, &count);
            }
        }
    }
    if (w->result == TES_OK) memcpy(*w->buffer + at, &count, 4);
    return result;
}
/* A touched index whose entity the replica must drop: one not present, or one withheld that
 * would have arrived whole (the replica may hold another entity there); for a peer, only where
 * its replica may hold one. A keyframe lists none: the replica drops what it lacks. */
static bool goes(const tes_replicator_t *rep, uint32_t index, uint64_t baseline) {
    uint8_t mark = rep->marks[index];
    bool drop = !(mark & PRESENT) || ((mark & WITHHELD) && (mark & WHOLE));
    return drop && (!rep->peer || tesi_peer_may_hold(rep->peer, index, baseline));
}

static tes_result_t write_delta(tesi_writer_t *w, tes_replicator_t *rep, uint64_t baseline,
                                uint64_t now, bool keyframe, bool listed) {
    tes_world_t *world = rep->world;
    uint32_t header[4] = {DELTA_MAGIC, DELTA_VERSION | (keyframe ? KEYFRAME << 16 : 0), 0, 0};
    tesi_put(w, header, sizeof header);
    tesi_put_varint(w, now);
    tesi_put_varint(w, now - (keyframe ? 0 : baseline)); /* from = to - this */
    tesi_put_u32(w, rep->schema_crc);
    tesi_put_varint(w, rep->component_count);
    /* The ids; a keyframe names the components too, for a replica to map them to its own. */
    tesi_put(w, rep->schema, keyframe ? rep->schema_size : rep->ids_size);
    tes_result_t result = TES_OK;
    if (!listed) {
        tesi_put_varint(w, 0); /* nothing gone: the replica drops what the records lack */
        /* Two walks: the count first (a varint), then the records. */
        for (int pass = 0; pass < 2 && result == TES_OK; pass++) {
            uint32_t count = 0, previous = 0;
            for (uint32_t index = 1; index < world->record_count && result == TES_OK; index++) {
                const tesi_record_t *record = tesi_record_find(world, index);
                if (!record) {
                    index |= TESI_PAGE_MASK; /* an unallocated page: no entity */
                    continue;
                }
                if (!record->chunk) continue;
                tes_entity_t e = tesi_make_handle(index, record->generation);
                bool present;
                result = in_scope(rep, e, &present);
                if (result != TES_OK || !present) continue;
                if (pass) put_record(w, rep, e, 0, true, &previous);
                count++;
            }
            if (!pass) tesi_put_varint(w, count);
        }
    } else {
        uint32_t gone = 0, records = 0;
        for (uint32_t i = 0; i < rep->touched_count; i++) {
            uint32_t index = rep->touched[i];
            gone += !keyframe && goes(rep, index, baseline);
            records += (rep->marks[index] & (PRESENT | WITHHELD)) == PRESENT;
        }
        tesi_put_varint(w, gone);
        uint32_t previous = 0; /* indices as gaps from the one before (touched is ascending) */
        for (uint32_t i = 0; i < rep->touched_count && gone; i++) {
            if (!goes(rep, rep->touched[i], baseline)) continue;
            tesi_put_varint(w, rep->touched[i] - previous);
            previous = rep->touched[i];
        }
        tesi_put_varint(w, records);
        previous = 0;
        for (uint32_t i = 0; i < rep->touched_count; i++) {
            uint32_t index = rep->touched[i];
            uint8_t mark = rep->marks[index];
            if ((mark & (PRESENT | WITHHELD)) != PRESENT) continue;
            tes_entity_t e = tesi_make_handle(index, tesi_record_at(world, index)->generation);
            put_record(w, rep, e, baseline, keyframe || (mark & (WHOLE | OWED)), &previous);
        }
    }
    for (uint32_t i = 0; i < rep->component_count && result == TES_OK; i++) {
        if (tesi_is_relation(&world->components[rep->components[i]])) {
            result = put_relation(w, rep, rep->components[i], baseline, now, keyframe);
        }
    }
    return result != TES_OK ? result : w->result;
}

/* Higher scores first; ties in index order. */
static int by_score(const void *a, const void *b) {
    const due_t *x = a, *y = b;
    if (x->score != y->score) return x->score > y->score ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* Which due records go within the peer's budget (bytes of records): the highest scores first,
 * and the first always; the others are marked WITHHELD, with their sights and places in the
 * owed list reserved, so settling after the write cannot fail. A record's size is learned by
 * writing it aside (its head with a gap of 0, so up to 3 bytes more for a real gap). */
static tes_result_t choose(tes_replicator_t *rep, uint64_t baseline, bool keyframe,
                           uint32_t budget) {
    tes_world_t *world = rep->world;
    uint32_t n = 0;
    for (uint32_t i = 0; i < rep->touched_count; i++)
        n += (rep->marks[rep->touched[i]] & PRESENT) != 0;
    tes_result_t result =
        tesi_reserve(world, (void **)&rep->due, &rep->due_slots, n, sizeof *rep->due, 64);
    if (result != TES_OK) return result;
    tesi_writer_t aside = {world, &rep->aside, &rep->aside_slots, 0, TES_OK};
    uint64_t total = 0;
    n = 0;
    for (uint32_t i = 0; i < rep->touched_count; i++) {
        uint32_t index = rep->touched[i];
        uint8_t mark = rep->marks[index];
        if (!(mark & PRESENT)) continue;
        tes_entity_t e = tesi_make_handle(index, tesi_record_at(world, index)->generation);
        uint32_t previous = index;
        aside.size = 0;
        put_record(&aside, rep, e, baseline, keyframe || (mark & (WHOLE | OWED)), &previous);
        if (aside.result != TES_OK) return aside.result;
        rep->due[n] = (due_t){tesi_peer_score(rep->peer, index), index, aside.size + 3, i};
        total += rep->due[n++].size;
    }
    if (total <= budget) return TES_OK;
    qsort(rep->due, n, sizeof *rep->due, by_score);
    uint64_t used = 0;
    uint32_t withheld = 0;
    for (uint32_t k = 0; k < n && result == TES_OK; k++) {
        if (k == 0 || used + rep->due[k].size <= budget) {
            used += rep->due[k].size;
            continue;
        }
        rep->marks[rep->due[k].index] |= WITHHELD;
        result = tesi_peer_reserve(rep->peer, &rep->due[k].index, 1, 0);
        withheld++;
    }
    return result == TES_OK ? tesi_peer_reserve(rep->peer, NULL, 0, withheld) : result;
}

/* After a peer's delta was written: the withheld are owed, the owed that went are sent, and
 * the owed that are gone (or that a keyframe lacks) are forgiven. */
static void settle_peer(tes_replicator_t *rep, uint64_t now) {
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
    /* Records come from a list of touched indices, but for a whole-scope keyframe (a walk). */
    bool listed = !keyframe || peer;
    if (listed) {
        uint32_t old = rep->mark_slots;
        result = tesi_reserve(world, (void **)&rep->marks, &rep->mark_slots, world->record_count, 1,
                              1024);
        if (result == TES_OK) {
            memset(rep->marks + old, 0, rep->mark_slots - old);
            result = touched_reserve(rep, world->record_count);
        }
        if (result == TES_OK)
            result = keyframe ? collect_all(rep, baseline) : collect(rep, baseline);
        if (result == TES_OK && peer && budget) result = choose(rep, baseline, keyframe, budget);
    }
    tesi_writer_t w = {world, &rep->bytes, &rep->byte_slots, 0, TES_OK};
    if (result == TES_OK) result = write_delta(&w, rep, baseline, now, keyframe, listed);
    if (result == TES_OK && peer) settle_peer(rep, now);
    for (uint32_t i = 0; i < rep->touched_count; i++)
        rep->marks[rep->touched[i]] = 0;
    rep->peer = NULL;
    if (result != TES_OK) return result;
    uint32_t crc = tesi_crc32(rep->bytes + HEADER_BYTES, w.size - HEADER_BYTES);
    memcpy(rep->bytes + 8, &w.size, 4);
    memcpy(rep->bytes + 12, &crc, 4);
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
