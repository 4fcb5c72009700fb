/* The receiving side of replication (docs/format.md, "tessera delta format"): a replica applies
 * a delta after checking it whole, in two passes over the bytes (delta_write.c writes them). The
 * first pass checks everything the bytes can show and changes nothing; the second applies. Its
 * head and components: replica_head.c; here, its entities, values and pair events. */
#include "replica.h"

static bool well_formed(tes_entity_t e) {
    return (e & TESI_INDEX_MASK) != 0 && (e >> (TES_INDEX_BITS + TES_GENERATION_BITS)) == 0;
}

/* Applying, step by step; any failure leaves the replica valid, at replica tick 0. */
typedef struct applier_t {
    tes_world_t *world;
    uint64_t old_tick; /* the replica's tick before */
    tes_entity_t *doomed;
    uint32_t doomed_count;
    uint32_t doomed_slots;
    tes_result_t result;
} applier_t;

/* The handle the replica has at an index, or 0. */
static tes_entity_t live_at(const tes_world_t *world, uint32_t index) {
    const tesi_record_t *record =
        index < world->record_count ? tesi_record_find(world, index) : NULL;
    return record && record->chunk ? tesi_make_handle(index, tesi_generation(record)) : 0;
}

static void doom(applier_t *ap, tes_entity_t e) {
    if (ap->result != TES_OK) return;
    ap->result = tesi_reserve(ap->world, (void **)&ap->doomed, &ap->doomed_slots,
                              ap->doomed_count + 1, sizeof *ap->doomed, 64);
    if (ap->result == TES_OK) ap->doomed[ap->doomed_count++] = e;
}

/* |q| <= 2^53: an integer a quantized element may be. */
static bool within_limit(int64_t q) {
    return q <= (int64_t)QUANTUM_LIMIT && q >= -(int64_t)QUANTUM_LIMIT;
}

/* A quantized element's escape (put_quantized), checked: its q, or `*exact` when its exact
 * bits follow (not read here). A length in its shortest form, and |q| <= 2^53. */
static int64_t read_escape(tesi_reader_t *r, uint64_t *at, bool *exact) {
    uint32_t length = (uint32_t)tesi_bits_get(r, at, LENGTH_BITS);
    *exact = length == EXACT;
    if (*exact) return 0;
    uint64_t zigzag = tesi_bits_get(r, at, length); /* (< 64: lengths past 55 fail below) */
    int64_t q = tesi_unzigzag(zigzag);
    if (tesi_bits_for(zigzag + 1u) != length || !within_limit(q)) {
        tesi_fail(r, TES_ERR_BAD_DELTA);
    }
    return q;
}

/* A quantized field's elements in the bits, checked: a code of the frame's width each, ESCAPE
 * then an escape, or base + code - 1 with |q| <= 2^53 (what put_quantized writes). */
static void read_quantized(tesi_reader_t *r, uint64_t *at, const tesi_quantum_t *quantum) {
    for (uint32_t i = 0; i < quantum->length && r->result == TES_OK; i++) {
        uint64_t code = tesi_bits_get(r, at, quantum->width);
        if (code == ESCAPE) {
            bool exact;
            read_escape(r, at, &exact);
            if (exact) tesi_bits_skip(r, at, 8u * quantum->size);
        } else if (!within_limit(quantum->base + (int64_t)(code - 1))) {
            tesi_fail(r, TES_ERR_BAD_DELTA); /* |q| past 2^53: no source writes it */
        }
    }
}

/* A component's values in the bits: its fields packed, a quantized field's elements as
 * read_quantized reads them; with a field mask (`mask`, not all: the replica has the component,
 * `local` its schema), only the fields in it. The bit where they start, or 0 when they are cut
 * short or not well formed. */
static uint64_t read_values(tesi_reader_t *r, uint64_t *at, const replicated_t *c,
                            const tesi_component_t *local, uint64_t mask) {
    uint64_t start = *at;
    if (local) {
        const tesi_quantum_t *quantum = c->quanta, *end = quantum + c->quantum_count;
        for (uint32_t f = 0; f < c->field_count && r->result == TES_OK; f++) {
            bool quantized = quantum < end && quantum->field == f;
            if (mask >> f & 1u) {
                if (quantized) {
                    read_quantized(r, at, quantum);
                } else {
                    tesi_bits_skip(r, at, 8u * local->fields[f].bytes);
                }
            }
            quantum += quantized;
        }
        return r->result == TES_OK ? start : 0;
    }
    uint32_t done = 0; /* of the packed row */
    for (uint32_t k = 0; k < c->quantum_count && r->result == TES_OK; k++) {
        const tesi_quantum_t *quantum = &c->quanta[k];
        tesi_bits_skip(r, at, 8u * (quantum->offset - done)); /* the exact fields before it */
        read_quantized(r, at, quantum);
        done = quantum->offset + quantum->size * quantum->length;
    }
    tesi_bits_skip(r, at, 8u * (uint64_t)(c->row_bytes - done));
    return r->result == TES_OK ? start : 0;
}

/* A quantized field's elements (checked by read_values) decoded into `to`: q * step, or the
 * exact bits. */
static void get_quantized(tesi_reader_t *r, uint64_t *at, uint8_t *to,
                          const tesi_quantum_t *quantum) {
    for (uint32_t i = 0; i < quantum->length; i++, to += quantum->size) {
        uint64_t code = tesi_bits_get(r, at, quantum->width);
        int64_t q = quantum->base + (int64_t)(code - 1);
        if (code == ESCAPE) {
            bool exact;
            q = read_escape(r, at, &exact);
            if (exact) {
                tesi_bits_get_bytes(r, at, to, quantum->size);
                continue;
            }
        }
        double value = (double)q * quantum->step;
        if (quantum->size == sizeof(float)) {
            float f = (float)value;
            memcpy(to, &f, sizeof f);
        } else {
            memcpy(to, &value, sizeof value);
        }
    }
}

/* Writes a component's values (at bit `at` of the checked bytes; its quantized fields decoded)
 * into the live entity's storage. As tes_set, a write stamps it changed, unless it is its
 * initial value (`init`) or the values were there already (sent again for a replica ahead of the
 * delta's baseline, or the same quantized value): the replica's own change detection sees what
 * changed for it. */
static void write_packed(tes_world_t *world, tes_entity_t e, const replicated_t *replicated,
                         tesi_reader_t *r, uint64_t at, uint64_t mask, bool init) {
    tes_component_t component = replicated->local;
    const tesi_quantum_t *quantum = replicated->quanta;
    const tesi_quantum_t *quantum_end = quantum ? quantum + replicated->quantum_count : NULL;
    const tesi_component_t *c = &world->components[component];
    const tesi_record_t *record = tesi_record_of(world, e);
    uint8_t *row = NULL;
    uint32_t type = TESI_NO_TYPE, slot = 0;
    if (tesi_is_sparse(c)) {
        slot = tesi_sparse_slot(&c->sparse, e & TESI_INDEX_MASK) - 1;
        row = tesi_row_at(c->sparse.data, slot, c->stride);
    } else {
        type = tesi_type_index(record->chunk->archetype, component);
    }
    bool differs = false;
    for (uint32_t f = 0; f < c->field_count; f++) {
        uint8_t *to =
            row ? row + c->fields[f].offset
                : tesi_cell(record->chunk, tesi_column_of(record->chunk->archetype, type, f),
                            record->row);
        uint32_t bytes = c->fields[f].bytes;
        uint8_t decoded[TES_MAX_ARRAY_LENGTH * sizeof(double)];
        bool quantized = quantum < quantum_end && quantum->field == f;
        if (!(mask >> f & 1u)) {
            quantum += quantized; /* not in the record: the replica's value stays */
            continue;
        }
        if (quantized) {
            get_quantized(r, &at, decoded, quantum++);
        } else {
            tesi_bits_get_bytes(r, &at, decoded, bytes);
        }
        differs = differs || memcmp(to, decoded, bytes) != 0;
        memcpy(to, decoded, bytes);
    }
    if (init || !differs) return;
    if (row) {
        tesi_sparse_mark(world, component, slot);
    } else if (record->chunk->trackers) {
        tesi_mark_changed(world, record->chunk, type, record->row);
    }
}

/* ---- acyclic relations: a pair the replica would refuse is found before anything changes -- */

/* The replica as it will be once the delta's entities are applied, and the parents (targets of
 * an acyclic, so exclusive, relation) that its replayed events give: an open-addressing map by
 * source handle. */
typedef struct after_t {
    tes_world_t *world;
    const delta_t *d;
    const uint32_t *gone; /* ascending indices (delta_t's) */
    uint32_t gone_count;
    tes_entity_t *records; /* the records' handles, ascending by index */
    uint32_t record_count;
    uint32_t record_slots;
    tes_component_t relation;
    tes_entity_t *keys, *parents; /* parents[k]: 0 for none */
    uint32_t slots;               /* a power of two */
} after_t;

static bool alive_after(const after_t *a, tes_entity_t e) {
    uint32_t index = e & TESI_INDEX_MASK, lo = 0, hi = a->record_count;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        uint32_t at = a->records[mid] & TESI_INDEX_MASK;
        if (at == index) return a->records[mid] == e;
        if (at < index)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (a->d->keyframe) return false;
    for (lo = 0, hi = a->gone_count; lo < hi;) {
        uint32_t mid = (lo + hi) / 2, at = a->gone[mid];
        if (at == index) return false;
        if (at < index)
            lo = mid + 1;
        else
            hi = mid;
    }
    return tesi_record_of(a->world, e) != NULL;
}

static tes_entity_t *parent_slot(after_t *a, tes_entity_t source) {
    uint32_t h = (source * 2654435761u) & (a->slots - 1);
    while (a->keys[h] && a->keys[h] != source)
        h = (h + 1) & (a->slots - 1);
    return &a->parents[h];
}

static tes_entity_t parent_after(after_t *a, tes_entity_t e) {
    tes_entity_t *slot = parent_slot(a, e);
    if (a->keys[slot - a->parents]) return *slot;
    if (a->d->keyframe) return 0; /* a keyframe's pairs replace all of them */
    const tesi_relation_t *r = &a->world->components[a->relation].relation;
    const tesi_list_t *out = tesi_list_of(r, TESI_OUT, e);
    tes_entity_t target = out->count ? r->pairs[out->first - 1].target : 0;
    return target && alive_after(a, target) ? target : 0;
}

static void set_parent(after_t *a, tes_entity_t source, tes_entity_t target) {
    tes_entity_t *slot = parent_slot(a, source);
    a->keys[slot - a->parents] = source;
    *slot = target;
}

/* Replays the acyclic relations' events on parents alone: an added pair whose target has its
 * source among its ancestors then is a bad delta (a source never writes one). */
/* One event of an acyclic relation, replayed on the parents as the applying pass will replay it
 * (`tick` is the event's): false when it adds a pair whose target has the source among its
 * ancestors then, a pair no source writes. */
static bool replay_parent(after_t *a, uint32_t kind, tes_entity_t source, tes_entity_t target,
                          uint64_t tick) {
    if ((!a->d->keyframe && tick <= a->world->replica_tick) || !alive_after(a, source) ||
        !alive_after(a, target)) {
        return true; /* as the replay will skip it */
    }
    if (kind == TES_PAIR_REMOVED && parent_after(a, source) == target) {
        set_parent(a, source, 0);
    } else if (kind == TES_PAIR_ADDED && parent_after(a, source) != target) {
        /* Bounded: every entity once, even if the replica's own links were corrupt. */
        uint64_t steps = (uint64_t)a->world->entity_count + a->record_count + 1;
        for (tes_entity_t e = target; e && steps--; e = parent_after(a, e)) {
            if (e == source) return false;
        }
        set_parent(a, source, target);
    }
    return true;
}

/* A record's gap (put_gap): a Rice code with the plan's parameter, or its escape (only for a
 * quotient the code cannot hold: one value, one encoding). 0 when not well formed. */
static uint32_t read_gap(tesi_reader_t *r, delta_t *d) {
    uint32_t quotient = 0;
    while (quotient < GAP_ESCAPE && tesi_bits_get(r, &d->bit, 1))
        quotient++;
    if (quotient < GAP_ESCAPE) {
        uint64_t low = tesi_bits_get(r, &d->bit, d->gap_bits);
        return (uint32_t)(((uint64_t)quotient << d->gap_bits | low) + 1u);
    }
    uint64_t g = tesi_bits_get(r, &d->bit, TES_INDEX_BITS);
    return g >> d->gap_bits >= GAP_ESCAPE ? (uint32_t)g + 1u : 0;
}

/* Component j's state in a pattern (two bits each, low first). */
static uint32_t state_of(const uint8_t *pattern, uint32_t j) {
    return (pattern[j / 4] >> (2 * (j % 4))) & 3u;
}

/* One record: checked, and applied when `ap` is not NULL. `*previous`: the index of the record
 * before (0 for the first). A record that is not whole names the entity the replica holds at
 * its index (there must be one). */
static void read_record(tesi_reader_t *r, const tes_world_t *world, delta_t *d, applier_t *ap,
                        uint32_t *previous, tes_entity_t *out_handle) {
    uint32_t gap = read_gap(r, d);
    const uint8_t *pattern = d->pattern;
    if (d->patterns) { /* its place in the list (0 bits when the list has one) */
        uint64_t p = tesi_bits_get(r, &d->bit, d->index_bits);
        if (p >= d->patterns) tesi_fail(r, TES_ERR_BAD_DELTA);
        pattern = d->pattern_list + (r->result == TES_OK ? p : 0) * d->pattern_bytes;
    } else {
        uint32_t bits = tesi_pattern_bits(d->plain); /* odd: every byte is written below */
        tesi_bits_get_bytes(r, &d->bit, d->pattern, bits / 8);
        d->pattern[bits / 8] = (uint8_t)tesi_bits_get(r, &d->bit, bits % 8);
    }
    uint64_t index = (uint64_t)*previous + gap;
    bool whole = tesi_pattern_whole(pattern, d->plain);
    tes_entity_t e = 0;
    if (r->result == TES_OK && gap && index <= TESI_INDEX_MASK) {
        if (whole) {
            uint32_t generation = (uint32_t)tesi_bits_get(r, &d->bit, TES_GENERATION_BITS);
            e = (tes_entity_t)index | generation << TES_INDEX_BITS;
        } else if (!d->keyframe) {
            e = live_at(world, (uint32_t)index);
        }
    }
    *out_handle = e;
    *previous = (uint32_t)index;
    if (!e || r->result != TES_OK) {
        tesi_fail(r, TES_ERR_BAD_DELTA);
        return;
    }
    listed_t *listed = d->listed;
    uint32_t n = 0;
    for (uint32_t i = 0, j = 0; i < d->count && r->result == TES_OK; i++) {
        const replicated_t *c = &d->comps[i];
        if (c->flags & TES_COMPONENT_RELATION) continue;
        uint32_t state = state_of(pattern, j++);
        /* Values only for components with fields; some of them only for a component with
         * several that the replica's entity has (the source sends all of them otherwise). */
        bool some_ok = c->field_count > 1 && !whole && !d->keyframe;
        if ((state == SOME_VALUES && !some_ok) || (state == WITH_VALUES && !c->field_count)) {
            tesi_fail(r, TES_ERR_BAD_DELTA);
            return;
        }
        if (state == SOME_VALUES) {
            bool has = false;
            tes_has(world, e, c->local, &has);
            if (!has) {
                tesi_fail(r, TES_ERR_BAD_DELTA);
                return;
            }
        }
        if (state == ABSENT) continue;
        listed[n++] = (listed_t){i, 0, UINT64_MAX, false};
    }
    for (uint32_t i = 0, j = 0, m = 0; i < d->count && m < n && r->result == TES_OK; i++) {
        const replicated_t *c = &d->comps[i];
        if (c->flags & TES_COMPONENT_RELATION) continue;
        uint32_t state = state_of(pattern, j++);
        if (state == ABSENT) continue;
        if (state == WITH_VALUES) listed[m].values = read_values(r, &d->bit, c, NULL, UINT64_MAX);
        if (state == SOME_VALUES) {
            /* Some fields, not none and not all (a record says those as states 1 and 3). */
            uint64_t mask = tesi_bits_get(r, &d->bit, c->field_count);
            uint64_t all = c->field_count >= 64 ? UINT64_MAX : (1ull << c->field_count) - 1;
            if (!mask || mask == all || (mask & ~all)) tesi_fail(r, TES_ERR_BAD_DELTA);
            const tesi_component_t *local = &world->components[c->local];
            if (r->result == TES_OK) listed[m].values = read_values(r, &d->bit, c, local, mask);
            listed[m].mask = mask;
        }
        m++;
    }
    if (!ap || r->result != TES_OK || ap->result != TES_OK) return;
    tes_world_t *w = ap->world;
    if (!tesi_record_of(w, e)) {
        /* New here (or its index held another generation, despawned already): placed whole. */
        for (uint32_t i = 0; i < n; i++) {
            d->local[i] = d->comps[listed[i].at].local;
            listed[i].init = true;
        }
        ap->result = tesi_spawn_at(w, e, d->local, n);
    } else {
        /* An entity the replica had: its replicated components become the listed ones. */
        for (uint32_t i = 0, j = 0; i < d->count && ap->result == TES_OK; i++) {
            const replicated_t *c = &d->comps[i];
            if (c->flags & TES_COMPONENT_RELATION) continue;
            bool in = j < n && listed[j].at == i;
            bool has = false;
            tes_has(w, e, c->local, &has);
            if (has && !in) ap->result = tes_remove(w, e, c->local);
            if (!has && in) {
                ap->result = tes_add(w, e, c->local);
                listed[j].init = true;
            }
            j += in;
        }
    }
    /* Values: a component the entity just got starts with them (an init), others change. */
    for (uint32_t i = 0; i < n && ap->result == TES_OK; i++) {
        if (listed[i].values) {
            write_packed(w, e, &d->comps[listed[i].at], r, listed[i].values, listed[i].mask,
                         listed[i].init);
        }
    }
}

/* The records' plan (tesi_records_plan_t), before their bits: the gap parameter, the patterns
 * and the quantized fields' frames; d->bit then at the first record. */
static void read_plan(tesi_reader_t *r, delta_t *d) {
    uint8_t gap_bits = 0;
    tesi_take(r, &gap_bits, 1);
    d->gap_bits = gap_bits;
    d->patterns = tesi_get_varint(r);
    d->pattern_bytes = tesi_pattern_bytes(d->plain);
    d->index_bits = tesi_bits_for(d->patterns);
    if (gap_bits > GAP_BITS_MAX || d->patterns > PATTERNS_MAX) tesi_fail(r, TES_ERR_BAD_DELTA);
    d->pattern_list = tesi_span(r, d->patterns, d->pattern_bytes);
    /* A pattern's bits past its whole bit are 0. */
    uint32_t used = tesi_pattern_bits(d->plain) % 8;
    for (uint32_t p = 0; used && p < d->patterns && r->result == TES_OK; p++) {
        if (d->pattern_list[(p + 1) * d->pattern_bytes - 1] >> used) {
            tesi_fail(r, TES_ERR_BAD_DELTA);
        }
    }
    for (uint32_t i = 0; i < d->count; i++) {
        for (uint32_t k = 0; k < d->comps[i].quantum_count && r->result == TES_OK; k++) {
            tesi_quantum_t *quantum = &d->comps[i].quanta[k];
            int64_t base = tesi_unzigzag(tesi_get_varint64(r));
            uint8_t width = 0;
            tesi_take(r, &width, 1);
            if (!within_limit(base) || width > WIDTH_MAX) {
                tesi_fail(r, TES_ERR_BAD_DELTA);
            }
            quantum->base = base;
            quantum->width = width;
        }
    }
    d->bit = (uint64_t)r->at * 8u;
}

/* After the last record: the bits padded to a byte with zeros. */
static void end_records(tesi_reader_t *r, delta_t *d) {
    if (r->result != TES_OK) return;
    uint32_t pad = (uint32_t)(-d->bit & 7u);
    if (tesi_bits_get(r, &d->bit, pad)) tesi_fail(r, TES_ERR_BAD_DELTA);
    r->at = (uint32_t)(d->bit / 8u);
}

/* The gone indices and the records: checked (ascending, disjoint, well formed), and applied when
 * `ap` is not NULL: first every despawn (gone entities, entities a record replaces, and for a
 * keyframe every entity it lacks), then the records. */
static void read_entities(tesi_reader_t *r, const tes_world_t *world, delta_t *d, applier_t *ap) {
    uint32_t gone = tesi_get_varint(r);
    if (d->empty && gone) tesi_fail(r, TES_ERR_BAD_DELTA);
    /* A gap takes a byte at least: a count the bytes cannot hold is refused before it sizes
     * anything. */
    if ((d->keyframe && gone) || gone > r->size - r->at) tesi_fail(r, TES_ERR_BAD_DELTA);
    if (!ap && r->result == TES_OK) {
        /* The check reads the replica and allocates only this (and the acyclic replay's map). */
        d->gone = tesi_alloc((tes_world_t *)world, (size_t)gone * sizeof *d->gone + 1);
        if (!d->gone) tesi_fail(r, TES_ERR_OUT_OF_MEMORY);
        if (d->gone) d->gone_count = gone;
    }
    uint32_t previous = 0;
    for (uint32_t i = 0; i < gone && r->result == TES_OK; i++) {
        uint32_t gap = tesi_get_varint(r);
        uint64_t index = (uint64_t)previous + gap;
        if (r->result != TES_OK || !gap || index > TESI_INDEX_MASK) {
            tesi_fail(r, TES_ERR_BAD_DELTA);
            break;
        }
        previous = (uint32_t)index;
        if (!ap) d->gone[i] = previous;
        if (ap && live_at(world, previous)) doom(ap, live_at(world, previous));
    }
    const uint32_t *indices = d->gone;
    uint32_t records = tesi_get_varint(r);
    if (d->empty && records) tesi_fail(r, TES_ERR_BAD_DELTA);
    /* A record takes a bit at least: a count the bytes cannot hold is refused before it sizes
     * anything. */
    if (records > (uint64_t)(r->size - r->at) * 8u) tesi_fail(r, TES_ERR_BAD_DELTA);
    if (records) read_plan(r, d);
    /* The records' first bit: the applying walk starts there again. */
    uint64_t first = records ? d->bit : 0;
    after_t *after = ap ? NULL : d->after;
    if (after && r->result == TES_OK) {
        after->gone = indices;
        after->gone_count = gone;
        after->records = tesi_alloc(after->world, (size_t)records * sizeof *after->records + 1);
        if (!after->records) tesi_fail(r, TES_ERR_OUT_OF_MEMORY);
        after->record_slots = records;
    }
    /* First pass: check, and find what the records replace (an index in the gone list is not
     * a record's too: the two lists merge in index order). */
    uint32_t g = 0, kept = 1; /* keyframe: live indices below `kept` were looked at */
    previous = 0;
    for (uint32_t i = 0; i < records && r->result == TES_OK; i++) {
        tes_entity_t e;
        read_record(r, world, d, NULL, &previous, &e);
        uint32_t index = e & TESI_INDEX_MASK;
        if (r->result != TES_OK) break;
        if (after) after->records[after->record_count++] = e;
        for (; g < gone; g++) {
            uint32_t gi = indices[g];
            if (gi >= index) {
                if (gi == index) tesi_fail(r, TES_ERR_BAD_DELTA);
                break;
            }
        }
        if (!ap) continue;
        tes_entity_t there = live_at(world, index);
        if (there && there != e) doom(ap, there);
        for (; d->keyframe && kept < index && kept < world->record_count; kept++) {
            if (live_at(world, kept)) doom(ap, live_at(world, kept));
        }
        kept = index + 1;
    }
    if (records) end_records(r, d);
    for (; ap && d->keyframe && kept < world->record_count; kept++) {
        if (live_at(world, kept)) doom(ap, live_at(world, kept));
    }
    if (!ap || r->result != TES_OK || ap->result != TES_OK) return;
    tes_world_t *w = ap->world;
    /* The delta lists every despawn itself: no cascade here. */
    ap->result = tesi_despawn_all(w, ap->doomed, ap->doomed_count, false);
    /* A keyframe's pairs are set relation by relation, over the replica's (keyframe_pairs). */
    d->bit = first; /* the plan read above still holds: only the records are read again */
    previous = 0;
    for (uint32_t i = 0; i < records && ap->result == TES_OK; i++) {
        tes_entity_t e;
        read_record(r, w, d, ap, &previous, &e);
    }
}

/* One pair event as the bytes carry it; its row (the pair's data, fields packed) or NULL. */
typedef struct pair_event_t {
    uint32_t kind, age;
    tes_entity_t source, target;
    const uint8_t *row;
} pair_event_t;

/* Reads and checks one event of relation `c`: false once the bytes are bad. Out of line: its
 * three callers' loops would each carry a copy of the varint reads (0.9 KB of wasm). */
static __attribute__((noinline)) bool read_event(tesi_reader_t *r, const delta_t *d,
                                                 const replicated_t *c, pair_event_t *e) {
    uint32_t word = tesi_get_varint(r);
    e->source = tesi_get_varint(r);
    e->target = tesi_get_varint(r);
    e->kind = word & ~DATA;
    e->age = tesi_get_varint(r);
    bool data = word & DATA;
    bool writes = e->kind == TES_PAIR_ADDED || e->kind == TES_PAIR_CHANGED;
    bool ok = e->kind >= TES_PAIR_ADDED && e->kind <= TES_PAIR_MOVED && well_formed(e->source) &&
              well_formed(e->target) && (!data || (writes && c->field_count)) &&
              (d->keyframe ? e->age == 0 : e->age < d->to - d->from);
    if (!ok) tesi_fail(r, TES_ERR_BAD_DELTA);
    e->row = data ? tesi_span(r, 1, c->row_bytes) : NULL;
    return r->result == TES_OK;
}

/* Whether pair `id`'s data is the packed row (its fields one after another). */
static bool pair_row_is(const tesi_component_t *c, uint32_t id, const uint8_t *packed) {
    const uint8_t *row = tesi_row_at(c->relation.data, id - 1, c->stride);
    for (uint32_t f = 0; f < c->field_count; f++) {
        if (memcmp(row + c->fields[f].offset, packed, c->fields[f].bytes) != 0) return false;
        packed += c->fields[f].bytes;
    }
    return true;
}

static bool marked(const uint64_t *bits, uint32_t id) {
    return (bits[(id - 1) >> 6] >> ((id - 1) & 63u)) & 1u;
}

/* Applies a keyframe's `count` events of one relation, which list every pair it has (added,
 * a source's targets in their order, source after source) and then the order of every target
 * with several sources (moved), over the pairs the replica has, judged by state as its values
 * are: the pairs the keyframe lacks are removed first (what is left is part of the keyframe's
 * pairs, so no step can close a cycle), new ones added, data written where it differs, and a
 * source's targets or a target's sources put in order only from where their order differs. A
 * keyframe sent again over a replica that has it all so changes nothing and reports nothing.
 * False when the marks' memory could not be had: nothing was read or changed. */
static bool keyframe_pairs(tesi_reader_t *r, const delta_t *d, const replicated_t *rc,
                           applier_t *ap, uint32_t count) {
    tes_world_t *w = ap->world;
    tes_component_t relation = rc->local;
    tesi_component_t *c = &w->components[relation];
    tesi_relation_t *rel = &c->relation;
    size_t bytes = ((size_t)rel->pair_used / 64 + 1) * sizeof(uint64_t);
    uint64_t *kept = tesi_alloc(w, bytes); /* by pair id - 1: the keyframe has it */
    if (!kept) return false;
    memset(kept, 0, bytes);
    uint32_t start = r->at;
    pair_event_t e;
    for (uint32_t i = 0; i < count && read_event(r, d, rc, &e); i++) {
        bool both = tesi_record_of(w, e.source) && tesi_record_of(w, e.target);
        uint32_t id = both ? tesi_pair_find(w, relation, e.source, e.target) : 0;
        if (e.kind == TES_PAIR_ADDED && id) kept[(id - 1) >> 6] |= 1ull << ((id - 1) & 63u);
    }
    for (uint32_t id = 1; id <= rel->pair_used && ap->result == TES_OK; id++) {
        const tesi_pair_t *p = &rel->pairs[id - 1];
        if (p->source && !marked(kept, id)) {
            ap->result = tes_pair_remove(w, p->source, relation, p->target);
        }
    }
    tesi_free(w, kept, bytes);
    r->at = start;
    tes_entity_t out_of = 0, in_of = 0; /* the source (target) whose list is being walked */
    uint32_t out_at = 0, in_at = 0;     /* its pair the next event should name, 0: the end */
    for (uint32_t i = 0; i < count && read_event(r, d, rc, &e); i++) {
        if (ap->result != TES_OK) continue;
        if (!tesi_record_of(w, e.source) || !tesi_record_of(w, e.target)) continue;
        uint32_t id = tesi_pair_find(w, relation, e.source, e.target);
        if (e.kind == TES_PAIR_MOVED) {
            if (!id) continue;
            if (e.target != in_of) {
                in_of = e.target;
                in_at = tesi_list_of(rel, TESI_IN, e.target)->first;
            }
            if (id == in_at) {
                in_at = rel->pairs[id - 1].next[TESI_IN];
            } else {
                tes_entity_t before = in_at ? rel->pairs[in_at - 1].source : 0;
                ap->result = tes_pair_place(w, e.source, relation, e.target, before);
            }
            continue;
        }
        if (e.source != out_of) {
            out_of = e.source;
            out_at = tesi_list_of(rel, TESI_OUT, e.source)->first;
        }
        if (id && id == out_at) { /* in its place: its data where it differs */
            out_at = rel->pairs[id - 1].next[TESI_OUT];
            if (e.row && !pair_row_is(c, id, e.row)) {
                ap->result = tesi_pair_write(w, relation, id, e.row, false);
            }
            continue;
        }
        /* Out of order from here: the source's pairs from here on go, and come back in order
         * (this one, if it is there, is among them: those before it matched). */
        while (out_at && ap->result == TES_OK) {
            const tesi_pair_t *p = &rel->pairs[out_at - 1];
            uint32_t next = p->next[TESI_OUT];
            ap->result = tes_pair_remove(w, p->source, relation, p->target);
            out_at = next;
        }
        if (ap->result == TES_OK) ap->result = tes_pair_add(w, e.source, relation, e.target);
        id = ap->result == TES_OK ? tesi_pair_find(w, relation, e.source, e.target) : 0;
        if (id && e.row) ap->result = tesi_pair_write(w, relation, id, e.row, true);
    }
    return true;
}

/* One relation's events: checked, and replayed when `ap` is not NULL (those newer than the
 * replica's tick, between entities it has; a keyframe's over the pairs it has). */
static void read_relation(tesi_reader_t *r, const delta_t *d, const replicated_t *c,
                          applier_t *ap) {
    uint32_t count = tesi_get_u32(r);
    if (d->empty && count) tesi_fail(r, TES_ERR_BAD_DELTA);
    if (count > (r->size - r->at) / 4)
        tesi_fail(r, TES_ERR_BAD_DELTA); /* 4 bytes an event at least */
    /* Checking an acyclic relation: its events replayed on the parents (a map by source). */
    after_t *a = !ap && (c->flags & TES_RELATION_ACYCLIC) ? d->after : NULL;
    if (a && r->result == TES_OK) {
        a->relation = c->local;
        for (a->slots = 16; a->slots < 2 * (uint64_t)count;)
            a->slots *= 2;
        a->keys = tesi_alloc(a->world, 2 * (size_t)a->slots * sizeof *a->keys);
        if (!a->keys) {
            tesi_fail(r, TES_ERR_OUT_OF_MEMORY);
            return;
        }
        memset(a->keys, 0, 2 * (size_t)a->slots * sizeof *a->keys);
        a->parents = a->keys + a->slots;
    }
    if (ap && d->keyframe && r->result == TES_OK && ap->result == TES_OK) {
        if (keyframe_pairs(r, d, c, ap, count)) return;
        /* No memory for its marks: the relation's pairs go, and the keyframe's come again. */
        tesi_component_t *rel = &ap->world->components[c->local];
        while (rel->sparse.count && ap->result == TES_OK) {
            ap->result =
                tesi_pairs_clear(ap->world, rel->sparse.entities[rel->sparse.count - 1], c->local);
        }
    }
    pair_event_t e;
    for (uint32_t i = 0; i < count && read_event(r, d, c, &e); i++) {
        if (a && !replay_parent(a, e.kind, e.source, e.target, d->to - e.age)) {
            tesi_fail(r, TES_ERR_BAD_DELTA);
        }
        if (!ap || r->result != TES_OK || ap->result != TES_OK) continue;
        tes_world_t *w = ap->world;
        tes_component_t relation = c->local;
        if (!d->keyframe && d->to - e.age <= ap->old_tick) continue; /* the replica has it */
        if (!tesi_record_of(w, e.source) || !tesi_record_of(w, e.target)) continue; /* gone */
        uint32_t id = tesi_pair_find(w, relation, e.source, e.target);
        bool writes = e.kind == TES_PAIR_ADDED || e.kind == TES_PAIR_CHANGED;
        if (e.kind == TES_PAIR_ADDED && !id) {
            ap->result = tes_pair_add(w, e.source, relation, e.target);
            id = ap->result == TES_OK ? tesi_pair_find(w, relation, e.source, e.target) : 0;
            if (id && e.row) ap->result = tesi_pair_write(w, relation, id, e.row, true);
        } else if (e.kind == TES_PAIR_REMOVED && id) {
            ap->result = tes_pair_remove(w, e.source, relation, e.target);
        } else if (writes && id && e.row) {
            ap->result = tesi_pair_write(w, relation, id, e.row, false);
        } else if (e.kind == TES_PAIR_MOVED && id) {
            ap->result = tes_pair_place(w, e.source, relation, e.target, 0);
        }
    }
    if (a) tesi_free(a->world, a->keys, 2 * (size_t)a->slots * sizeof *a->keys);
}

/* The whole delta after its head: checked, or applied. */
static void read_body(tesi_reader_t *r, const tes_world_t *world, delta_t *d, applier_t *ap) {
    r->at = d->body;
    d->plain = 0;
    for (uint32_t i = 0; i < d->count; i++)
        d->plain += !(d->comps[i].flags & TES_COMPONENT_RELATION);
    read_entities(r, world, d, ap);
    for (uint32_t i = 0; i < d->count && r->result == TES_OK; i++) {
        if (d->comps[i].flags & TES_COMPONENT_RELATION) read_relation(r, d, &d->comps[i], ap);
    }
    if (r->result == TES_OK && r->at != r->size) tesi_fail(r, TES_ERR_BAD_DELTA);
}

tes_result_t tes_delta_apply(tes_world_t *world, const uint8_t *bytes, uint32_t size,
                             bool *out_applied) {
    if (out_applied) *out_applied = false;
    if (!world || (size && !bytes)) return TES_ERR_INVALID_ARGUMENT;
    if (tesi_deferring(world)) return TES_ERR_INVALID_ARGUMENT;
    tesi_reader_t r = {bytes, size, 0, TES_OK, TES_ERR_BAD_DELTA};
    delta_t *d = tesi_read_head(&r, world);
    if (d && d->late) {
        tesi_delta_free(world, d);
        return TES_OK;
    }
    /* A delta that will be applied and has an acyclic relation: the check replays its events on
     * the parents too, so that a pair the relation would refuse stops it before any change. */
    after_t after = {.world = world, .d = d};
    /* A keyframe of another source is never late: the replica holds that source's state from
     * now (a server that restarted, a world that was another server's replica). */
    bool news =
        d && (d->to > world->replica_tick || (d->keyframe && d->source != world->replica_source));
    for (uint32_t i = 0; news && i < d->count; i++) {
        if (d->comps[i].flags & TES_RELATION_ACYCLIC) d->after = &after;
    }
    if (d) read_body(&r, world, d, NULL);
    if (d) d->after = NULL;
    tesi_free(world, after.records, (size_t)after.record_slots * sizeof *after.records + 1);
    if (r.result != TES_OK || !news) { /* bad, or nothing new */
        tesi_delta_free(world, d);
        return r.result;
    }
    applier_t ap = {world, world->replica_tick, NULL, 0, 0, TES_OK};
    world->replica_tick = 0; /* until it all went in */
    if (d->keyframe) ap.result = tesi_map_components(world, d, bytes, size);
    if (ap.result == TES_OK) read_body(&r, world, d, &ap);
    /* The applying pass reads what the check read: a read that fails there is a bug, but it must
     * not pass for an applied delta (the replica stays at tick 0: a keyframe repairs it). */
    if (ap.result == TES_OK && r.result != TES_OK) ap.result = r.result;
    tesi_free(world, ap.doomed, ap.doomed_slots * sizeof *ap.doomed);
    if (ap.result == TES_OK) world->replica_tick = d->to;
    if (ap.result == TES_OK && d->keyframe) world->replica_source = d->source;
    tesi_delta_free(world, d);
    if (out_applied) *out_applied = ap.result == TES_OK;
    return ap.result;
}

uint64_t tes_replica_tick(const tes_world_t *world) {
    return world ? world->replica_tick : 0;
}
