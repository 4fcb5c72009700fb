/* Encoding, the bytes (docs/format.md, "tessera delta format"): a delta's head, gone entries,
 * records and pair events, from the touched indices delta_collect.c marked. The records are
 * bits, written by a plan learned in a first pass over them: the gap code's parameter, the
 * patterns (states and whole bit) they share, each quantized field's frame. */
#include "delta.h"

/* A component's shadow of one entity (CHANGED_FIELDS): the entity's generation + 1 (0: none
 * yet), then per field the tick of the encode that first saw its current value, then the values
 * packed. */
uint32_t tesi_shadow_size(const tesi_component_t *c) {
    return 8u + 8u * c->field_count + ((c->row_bytes + 7u) & ~7u);
}

/* q = llround(value / step) of a quantized element at `from`; false when it escapes (a value that
 * is not finite, or too far from 0 for the step). */
static bool quantize(const uint8_t *from, const tesi_quantum_t *quantum, int64_t *out) {
    double value;
    if (quantum->size == sizeof(float)) {
        float f;
        memcpy(&f, from, sizeof f);
        value = f;
    } else {
        memcpy(&value, from, sizeof value);
    }
    double scaled = value / quantum->step;
    if (!isfinite(scaled) || fabs(scaled) > QUANTUM_LIMIT) return false;
    /* llround without libm: the truncation and its remainder are exact below 2^53. */
    int64_t q = (int64_t)scaled;
    double rest = scaled - (double)q;
    *out = q + (rest >= 0.5 ? 1 : rest <= -0.5 ? -1 : 0);
    return true;
}

/* A quantized field's elements as codes of the frame's width: q - base + 1; or ESCAPE, then
 * zigzag(q) with its length, or (a value with no q) EXACT and the exact bits. A q is the same
 * whatever the frame: the replica holds the nearest multiple of the step either way. */
static void put_quantized(tesi_bits_t *b, const uint8_t *from, const tesi_quantum_t *quantum) {
    for (uint32_t i = 0; i < quantum->length; i++, from += quantum->size) {
        int64_t q;
        bool quantized = quantize(from, quantum, &q);
        if (quantized && quantum->width && q >= quantum->base && q <= quantum->top) {
            tesi_bits_put(b, (uint64_t)(q - quantum->base) + 1u, quantum->width);
            continue;
        }
        tesi_bits_put(b, ESCAPE, quantum->width);
        if (quantized) {
            uint32_t length = tesi_bits_for(tesi_zigzag(q) + 1u);
            tesi_bits_put(b, length, LENGTH_BITS);
            tesi_bits_put(b, tesi_zigzag(q), length);
        } else {
            tesi_bits_put(b, EXACT, LENGTH_BITS);
            tesi_bits_put_bytes(b, from, quantum->size);
        }
    }
}

/* Where a live entity's values of one component are: its row of sparse data, or its chunk's
 * columns (found once per component, read per field with cell_at). */
typedef struct place_t {
    const tesi_record_t *record;
    const tesi_component_t *c;
    const uint8_t *row; /* sparse: the entity's row; NULL: in the chunk, columns of `type` */
    uint32_t type;
} place_t;

static place_t place_of(const tes_world_t *world, const tesi_record_t *record, tes_component_t id,
                        uint32_t index) {
    const tesi_component_t *c = &world->components[id];
    place_t p = {record, c, NULL, TESI_NO_TYPE};
    if (tesi_is_sparse(c)) {
        p.row = tesi_row_at(c->sparse.data, tesi_sparse_slot(&c->sparse, index) - 1, c->stride);
    } else {
        p.type = tesi_type_index(record->chunk->archetype, id);
    }
    return p;
}

/* Field f's cell at a place. */
static const uint8_t *cell_at(const place_t *p, uint32_t f) {
    if (p->row) return p->row + p->c->fields[f].offset;
    const tesi_chunk_t *chunk = p->record->chunk;
    return tesi_cell(chunk, tesi_column_of(chunk->archetype, p->type, f), p->record->row);
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
 * for no one, withheld by a budget, goes whole when it goes.) Comparing again in the same
 * encode (the plan's pass, then the write's) gives the same answer. The mask at *out; fails
 * when the shadow's page cannot be allocated. */
static tes_result_t observe(tes_replicator_t *rep, tes_component_t id, tes_entity_t e,
                            const tesi_record_t *record, bool all, uint64_t baseline,
                            uint64_t *out) {
    tes_world_t *world = rep->world;
    const tesi_component_t *c = &world->components[id];
    uint32_t index = e & TESI_INDEX_MASK, size = tesi_shadow_size(c);
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
    if (result != TES_OK) return result;
    uint8_t *shadow = tesi_paged_at(&rep->shadows[id], index, size);
    uint32_t generation;
    memcpy(&generation, shadow, sizeof generation);
    bool fresh = generation != (e >> TES_INDEX_BITS) + 1u;
    generation = (e >> TES_INDEX_BITS) + 1u;
    memcpy(shadow, &generation, sizeof generation);
    uint8_t *values = shadow + 8u + 8u * c->field_count;
    uint64_t mask = 0;
    place_t place = place_of(world, record, id, index);
    for (uint32_t f = 0, at = 0; f < c->field_count; at += c->fields[f++].bytes) {
        const uint8_t *cell = cell_at(&place, f);
        uint64_t tick;
        memcpy(&tick, shadow + 8u + 8u * f, sizeof tick);
        if (fresh || memcmp(values + at, cell, c->fields[f].bytes) != 0) {
            memcpy(values + at, cell, c->fields[f].bytes);
            tick = rep->now;
            memcpy(shadow + 8u + 8u * f, &tick, sizeof tick);
        }
        if (tick > baseline) mask |= 1ull << f;
    }
    *out = all ? all_fields(c) : mask;
    return TES_OK;
}

/* A live entity's pattern (docs/format.md, "Records"): two bits per replicated component that is
 * not a relation (absent, present, present with some values, present with values), then the
 * whole bit, at `pattern` (tesi_pattern_bytes); the states in rep->ids too, and the field masks
 * of those with some values in rep->masks. */
static tes_result_t record_pattern(tes_replicator_t *rep, tes_entity_t e,
                                   const tesi_record_t *record, uint64_t baseline, bool whole,
                                   uint8_t *pattern, uint32_t pattern_bytes) {
    const tes_world_t *world = rep->world;
    uint32_t *states = rep->ids, k = 0;
    memset(pattern, 0, pattern_bytes);
    for (uint32_t i = 0; i < rep->component_count; i++) {
        tes_component_t id = rep->components[i];
        const tesi_component_t *c = &world->components[id];
        if (tesi_is_relation(c)) continue;
        uint64_t added, changed; /* (replicated components are tracked) */
        uint32_t state = ABSENT;
        if (tes_ticks(world, e, id, &added, &changed) == TES_OK) {
            bool with = c->field_count && (whole || added > baseline || changed > baseline);
            state = with ? WITH_VALUES : PRESENT_STATE;
            if (with && rep->masks && c->field_count > 1) {
                uint64_t mask;
                tes_result_t result =
                    observe(rep, id, e, record, whole || added > baseline, baseline, &mask);
                if (result != TES_OK) return result;
                state = mask == all_fields(c) ? WITH_VALUES : mask ? SOME_VALUES : PRESENT_STATE;
                rep->masks[k] = mask;
            }
        }
        pattern[k / 4] |= (uint8_t)(state << (2 * (k % 4)));
        states[k++] = state;
    }
    if (whole) pattern[2 * k / 8] |= (uint8_t)(1u << (2 * k % 8));
    return TES_OK;
}

/* The quantized values the record sends (record_pattern's states), counted in the
 * histograms. */
static void count_values(tes_replicator_t *rep, const tesi_record_t *record, uint32_t index) {
    const tes_world_t *world = rep->world;
    const tesi_quantum_t *quantum = rep->quanta, *quantum_end = quantum + rep->quantum_count;
    for (uint32_t i = 0, j = 0; i < rep->component_count && quantum < quantum_end; i++) {
        tes_component_t id = rep->components[i];
        if (tesi_is_relation(&world->components[id])) continue;
        uint32_t state = rep->ids[j];
        uint64_t mask = state == SOME_VALUES ? rep->masks[j] : UINT64_MAX;
        j++;
        while (quantum < quantum_end && quantum->component < id)
            quantum++;
        if (state != WITH_VALUES && state != SOME_VALUES) continue;
        place_t place = place_of(world, record, id, index);
        for (; quantum < quantum_end && quantum->component == id; quantum++) {
            if (!(mask >> quantum->field & 1u)) continue;
            tesi_histogram_t *h = &rep->histograms[quantum - rep->quanta];
            const uint8_t *from = cell_at(&place, quantum->field);
            for (uint32_t k = 0; k < quantum->length; k++, from += quantum->size) {
                int64_t q;
                h->values++;
                if (!quantize(from, quantum, &q)) continue;
                uint32_t bin = tesi_bits_for(tesi_zigzag(q) + 1u);
                if (!h->count[bin] || q < h->low[bin]) h->low[bin] = q;
                if (!h->count[bin] || q > h->high[bin]) h->high[bin] = q;
                h->count[bin]++;
            }
        }
    }
}

/* A quantum's frame from its histogram: of the frames holding every q up to some length of
 * zigzag(q) (longer ones escape with their length), the one whose codes and escapes take the
 * fewest bits. */
static void choose_frame(tesi_quantum_t *quantum, const tesi_histogram_t *h) {
    uint64_t escapes = 0; /* the bits of escaping every value */
    uint32_t quantized = 0;
    for (uint32_t bin = 0; bin < HISTOGRAM_BINS; bin++) {
        escapes += (uint64_t)h->count[bin] * (LENGTH_BITS + bin);
        quantized += h->count[bin];
    }
    escapes += (uint64_t)(h->values - quantized) * (LENGTH_BITS + 8u * quantum->size);
    uint64_t best = escapes; /* width 0 */
    quantum->base = quantum->top = 0;
    quantum->width = 0;
    int64_t low = 0, high = 0;
    for (uint32_t bin = 0, in = 0; bin < HISTOGRAM_BINS; bin++) {
        if (!h->count[bin]) continue;
        low = in && low < h->low[bin] ? low : h->low[bin];
        high = in && high > h->high[bin] ? high : h->high[bin];
        in += h->count[bin];
        escapes -= (uint64_t)h->count[bin] * (LENGTH_BITS + bin);
        uint32_t width = tesi_bits_for((uint64_t)(high - low) + 2u);
        uint64_t cost = (uint64_t)h->values * width + escapes;
        if (cost < best) {
            best = cost;
            quantum->base = low;
            quantum->top = high;
            quantum->width = width;
        }
    }
}

/* Whether the record at a touched index goes: present, and not withheld. */
static bool goes_record(const tes_replicator_t *rep, uint32_t index) {
    return (rep->marks[index] & (PRESENT | WITHHELD)) == PRESENT;
}

tes_result_t tesi_plan_records(tes_replicator_t *rep, uint64_t baseline, bool keyframe,
                               tesi_records_plan_t *plan) {
    tes_world_t *world = rep->world;
    uint32_t plain = 0;
    for (uint32_t i = 0; i < rep->component_count; i++)
        plain += !tesi_is_relation(&world->components[rep->components[i]]);
    *plan = (tesi_records_plan_t){.plain = plain, .pattern_bytes = tesi_pattern_bytes(plain)};
    tes_result_t result = tesi_reserve(world, (void **)&rep->patterns, &rep->pattern_slots,
                                       (PATTERNS_MAX + 1) * plan->pattern_bytes, 1, 64);
    if (result == TES_OK && rep->quantum_count) {
        result = tesi_reserve(world, (void **)&rep->histograms, &rep->histogram_slots,
                              rep->quantum_count, sizeof *rep->histograms, 1);
    }
    if (result != TES_OK) return result;
    if (rep->quantum_count)
        memset(rep->histograms, 0, rep->quantum_count * sizeof *rep->histograms);
    uint32_t last = 0, listed = 0;
    bool overflow = false; /* more patterns than PATTERNS_MAX */
    uint8_t *pattern = rep->patterns + PATTERNS_MAX * plan->pattern_bytes;
    for (uint32_t i = 0; i < rep->touched_count; i++) {
        uint32_t index = rep->touched[i];
        if (!goes_record(rep, index)) continue;
        const tesi_record_t *record = tesi_record_at(world, index);
        tes_entity_t e = tesi_make_handle(index, tesi_generation(record));
        bool whole = keyframe || (rep->marks[index] & (WHOLE | OWED));
        result = record_pattern(rep, e, record, baseline, whole, pattern, plan->pattern_bytes);
        if (result != TES_OK) return result;
        if (rep->quantum_count) count_values(rep, record, index);
        plan->count++;
        last = index;
        uint32_t p = 0;
        while (!overflow && p < listed &&
               memcmp(rep->patterns + p * plan->pattern_bytes, pattern, plan->pattern_bytes))
            p++;
        if (!overflow && p == listed) {
            if (listed == PATTERNS_MAX) {
                overflow = true;
            } else {
                memcpy(rep->patterns + listed++ * plan->pattern_bytes, pattern,
                       plan->pattern_bytes);
            }
        }
    }
    plan->patterns = overflow ? 0 : listed;
    plan->index_bits = tesi_bits_for(plan->patterns);
    /* A Rice parameter near the log of the mean gap: near the fewest bits for gaps that are
     * spread at random (geometric), one bit a record for neighbours. */
    uint32_t mean = plan->count ? last / plan->count : 1;
    while (plan->gap_bits < GAP_BITS_MAX && mean >> (plan->gap_bits + 1))
        plan->gap_bits++;
    for (uint32_t q = 0; q < rep->quantum_count; q++)
        choose_frame(&rep->quanta[q], &rep->histograms[q]);
    return TES_OK;
}

/* The gap from the previous record's index: a Rice code of gap - 1 with the plan's parameter k
 * (the quotient in unary, ones ended by a zero, then the k low bits), or GAP_ESCAPE ones and
 * the 21 bits of gap - 1 when the quotient would be GAP_ESCAPE or more. */
static void put_gap(tesi_bits_t *b, uint32_t gap, uint32_t k) {
    uint32_t g = gap - 1u, quotient = g >> k;
    if (quotient < GAP_ESCAPE) {
        tesi_bits_put(b, (1ull << quotient) - 1u, quotient + 1u);
        tesi_bits_put(b, g, k);
    } else {
        tesi_bits_put(b, (1ull << GAP_ESCAPE) - 1u, GAP_ESCAPE);
        tesi_bits_put(b, g, TES_INDEX_BITS);
    }
}

/* A live entity's record: its index as the gap from the previous record's (`*previous`), its
 * pattern (an index in the plan's list, or the pattern itself), its generation when whole
 * (otherwise the replica holds this entity already, at that index); then, for each component
 * with values, its field mask when only some go, and the values of those added or changed since
 * the baseline (all of them when `whole`). */
void tesi_put_record(tesi_bits_t *b, tes_replicator_t *rep, const tesi_records_plan_t *plan,
                     tes_entity_t e, uint64_t baseline, bool whole, uint32_t *previous) {
    tesi_writer_t *w = b->w;
    const tes_world_t *world = rep->world;
    const tesi_record_t *record = tesi_record_of(world, e);
    uint32_t index = e & TESI_INDEX_MASK;
    uint8_t *pattern = rep->patterns + PATTERNS_MAX * plan->pattern_bytes;
    tes_result_t result =
        record_pattern(rep, e, record, baseline, whole, pattern, plan->pattern_bytes);
    if (result != TES_OK) {
        if (w->result == TES_OK) w->result = result;
        return;
    }
    put_gap(b, index - *previous, plan->gap_bits);
    *previous = index;
    if (plan->patterns) {
        uint32_t p = 0;
        while (p + 1 < plan->patterns &&
               memcmp(rep->patterns + p * plan->pattern_bytes, pattern, plan->pattern_bytes))
            p++;
        tesi_bits_put(b, p, plan->index_bits);
    } else {
        uint32_t bits = tesi_pattern_bits(plan->plain); /* odd: its last byte's padding aside */
        tesi_bits_put_bytes(b, pattern, bits / 8);
        tesi_bits_put(b, pattern[bits / 8], bits % 8);
    }
    if (whole) tesi_bits_put(b, e >> TES_INDEX_BITS, TES_GENERATION_BITS);
    const uint32_t *states = rep->ids;
    const tesi_quantum_t *quantum = rep->quanta;
    const tesi_quantum_t *quantum_end = quantum ? quantum + rep->quantum_count : NULL;
    for (uint32_t i = 0, j = 0; i < rep->component_count; i++) {
        tes_component_t id = rep->components[i];
        const tesi_component_t *c = &world->components[id];
        while (quantum < quantum_end && quantum->component < id)
            quantum++;
        if (tesi_is_relation(c)) continue;
        uint32_t state = states[j];
        uint64_t mask = state == SOME_VALUES ? rep->masks[j] : UINT64_MAX;
        j++;
        if (state != WITH_VALUES && state != SOME_VALUES) continue;
        if (state == SOME_VALUES) tesi_bits_put(b, mask, c->field_count);
        place_t place = place_of(world, record, id, index);
        for (uint32_t f = 0; f < c->field_count; f++) {
            bool quantized =
                quantum < quantum_end && quantum->component == id && quantum->field == f;
            if (!(mask >> f & 1u)) {
                quantum = TESI_PAST(quantum, quantized);
                continue;
            }
            const uint8_t *from = cell_at(&place, f);
            if (quantized) {
                put_quantized(b, from, quantum++);
                continue;
            }
            tesi_bits_put_bytes(b, from, c->fields[f].bytes);
        }
    }
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
 * its budget when it would have arrived whole (a gone entry drops it there). An owed record
 * withheld again is not one: the replica may hold it, from a delta that carried it but is not
 * acknowledged, so its pair events go (the replica skips those whose ends it lacks). Held back,
 * they were lost once the baseline passed them: bringing its pairs when it goes adds, it cannot
 * remove a pair the replica got from that delta. */
static bool missing_for_peer(const tes_replicator_t *rep, tes_entity_t e) {
    if (!tesi_peer_visible(rep->peer, e)) return true;
    uint8_t mark = rep->marks[e & TESI_INDEX_MASK];
    return (mark & WITHHELD) && (mark & WHOLE);
}

/* Both ends alive, in scope and on the replica: a pair the replica holds. */
static tes_result_t pair_in_scope(tes_replicator_t *rep, tes_entity_t source, tes_entity_t target,
                                  bool *out) {
    *out = false;
    if (!tesi_record_of(rep->world, source) || !tesi_record_of(rep->world, target)) return TES_OK;
    if (rep->peer && (missing_for_peer(rep, source) || missing_for_peer(rep, target))) {
        return TES_OK;
    }
    tes_result_t result = tesi_in_scope(rep, source, out);
    if (result == TES_OK && *out) result = tesi_in_scope(rep, target, out);
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

/* Lists a live target whose sources' order the section sends after its events, once (the
 * ORDERED mark, cleared when it is sent). */
static tes_result_t order_later(tes_replicator_t *rep, tes_entity_t target, uint32_t *ordered) {
    uint8_t *mark = &rep->marks[target & TESI_INDEX_MASK];
    if ((*mark & ORDERED) || !tesi_record_of(rep->world, target)) return TES_OK;
    tes_result_t result = tesi_reserve(rep->world, (void **)&rep->ordered, &rep->ordered_slots,
                                       *ordered + 1, sizeof *rep->ordered, 16);
    if (result != TES_OK) return result;
    *mark |= ORDERED;
    rep->ordered[(*ordered)++] = target;
    return TES_OK;
}

/* A relation's section: its events since the baseline, then the order of the targets whose
 * sources were moved (or gained a source that entered the replica's view); or (keyframe) every pair
 * in scope as an added event, then the order of every target with several sources. */
static tes_result_t put_relation(tesi_writer_t *w, tes_replicator_t *rep, tes_component_t relation,
                                 uint64_t baseline, uint64_t now, bool keyframe, uint32_t *events) {
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
            result = order_later(rep, e->target, &ordered);
        }
        /* An entity that may have entered the scope or the peer's view, or that was owed, brings
         * its pairs from before the baseline (those of the window came above; adding one the
         * replica has only writes its data). A pair it brings as a source lands last among its
         * target's sources there: the target's order follows, when it has several. */
        for (uint32_t i = 0;
             (rep->scope || rep->peer) && i < rep->touched_count && result == TES_OK; i++) {
            uint32_t index = rep->touched[i];
            if (!brings_pairs(rep, rep->marks[index])) continue;
            tes_entity_t e =
                tesi_make_handle(index, tesi_generation(tesi_record_at(rep->world, index)));
            for (int side = TESI_OUT; side <= TESI_IN; side++) {
                for (uint32_t id = tesi_list_of(r, side, e)->first; id && result == TES_OK;
                     id = r->pairs[id - 1].next[side]) {
                    const tesi_pair_t *p = &r->pairs[id - 1];
                    result = put_event(w, rep, relation, TES_PAIR_ADDED, p->source, p->target, 0,
                                       &count);
                    if (result == TES_OK && side == TESI_OUT &&
                        tesi_list_of(r, TESI_IN, p->target)->count > 1) {
                        result = order_later(rep, p->target, &ordered);
                    }
                }
            }
        }
        for (uint32_t i = 0; i < ordered; i++) {
            if (result == TES_OK) result = put_order(w, rep, relation, rep->ordered[i], &count);
            rep->marks[rep->ordered[i] & TESI_INDEX_MASK] &= (uint8_t)~ORDERED;
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
        for (uint32_t index = tesi_next_ordered_target(r, 1);
             index < TESI_INDEX_LIMIT && result == TES_OK;
             index = tesi_next_ordered_target(r, index + 1)) {
            const tesi_list_t *in = tesi_paged_at(&r->lists[TESI_IN], index, sizeof *in);
            result = put_order(w, rep, relation, r->pairs[in->first - 1].target, &count);
        }
    }
    if (w->result == TES_OK) memcpy(*w->buffer + at, &count, 4);
    *events += count;
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

/* The records: the plan's parameters (gap parameter, patterns, quantized frames) in bytes, then
 * the records as bits, padded to a byte. */
static tes_result_t put_records(tesi_writer_t *w, tes_replicator_t *rep, uint64_t baseline,
                                bool keyframe, uint32_t *content) {
    tesi_records_plan_t plan = rep->plan;
    tes_result_t result = rep->planned ? TES_OK : tesi_plan_records(rep, baseline, keyframe, &plan);
    rep->planned = false;
    if (result != TES_OK) return result;
    tesi_put_varint(w, plan.count);
    *content += plan.count;
    if (!plan.count) return TES_OK;
    uint8_t gap_bits = (uint8_t)plan.gap_bits;
    tesi_put(w, &gap_bits, 1);
    tesi_put_varint(w, plan.patterns);
    tesi_put(w, rep->patterns, (size_t)plan.patterns * plan.pattern_bytes);
    for (uint32_t q = 0; q < rep->quantum_count; q++) {
        int64_t base = rep->quanta[q].base;
        uint8_t width = (uint8_t)rep->quanta[q].width;
        tesi_put_varint(w, tesi_zigzag(base));
        tesi_put(w, &width, 1);
    }
    tesi_bits_t b = {w, 0, 0};
    uint32_t previous = 0; /* indices as gaps from the one before (touched is ascending) */
    for (uint32_t i = 0; i < rep->touched_count && w->result == TES_OK; i++) {
        uint32_t index = rep->touched[i];
        if (!goes_record(rep, index)) continue;
        uint8_t mark = rep->marks[index];
        tes_entity_t e =
            tesi_make_handle(index, tesi_generation(tesi_record_at(rep->world, index)));
        tesi_put_record(&b, rep, &plan, e, baseline, keyframe || (mark & (WHOLE | OWED)),
                        &previous);
    }
    tesi_bits_end(&b);
    return TES_OK;
}

tes_result_t tesi_write_delta(tesi_writer_t *w, tes_replicator_t *rep, uint64_t baseline,
                              uint64_t now, bool keyframe) {
    uint32_t content = 0; /* gone entries, records and pair events */
    tes_world_t *world = rep->world;
    uint32_t header[3] = {DELTA_MAGIC, DELTA_VERSION | (keyframe ? KEYFRAME << 16 : 0), 0};
    tesi_put(w, header, sizeof header);
    tesi_put_varint(w, now);
    tesi_put_varint(w, now - (keyframe ? 0 : baseline)); /* from = to - this */
    tesi_put_u32(w, rep->schema_crc);
    tesi_put_u32(w, rep->source); /* a replica takes deltas from the source of its keyframe */
    /* A keyframe names the components (ids and schemas), for a replica to map them to its own;
     * a delta only the CRC of that: the replica takes the list from the keyframe it mapped. */
    if (keyframe) {
        tesi_put_varint(w, rep->component_count);
        tesi_put(w, rep->schema, rep->schema_size);
    }
    uint32_t gone = 0;
    for (uint32_t i = 0; i < rep->touched_count; i++)
        gone += !keyframe && goes(rep, rep->touched[i], baseline);
    tesi_put_varint(w, gone);
    content += gone;
    uint32_t previous = 0; /* indices as gaps from the one before (touched is ascending) */
    for (uint32_t i = 0; i < rep->touched_count && gone; i++) {
        if (!goes(rep, rep->touched[i], baseline)) continue;
        tesi_put_varint(w, rep->touched[i] - previous);
        previous = rep->touched[i];
    }
    tes_result_t result = put_records(w, rep, baseline, keyframe, &content);
    for (uint32_t i = 0; i < rep->component_count && result == TES_OK; i++) {
        if (tesi_is_relation(&world->components[rep->components[i]])) {
            result = put_relation(w, rep, rep->components[i], baseline, now, keyframe, &content);
        }
    }
    /* Nothing for the replica: a session may leave it unsent (the next delta covers the same). */
    if (!keyframe && !content && w->result == TES_OK) (*w->buffer)[TESI_DELTA_FLAGS_BYTE] |= EMPTY;
    return result != TES_OK ? result : w->result;
}
