/* Checkpoints (the design: rollback.h): the touched indices, images, starting and stopping, and
 * tes_checkpoint, tes_checkpoints, tes_rollback_stop (the shadow itself: shadow.c).
 *
 * The images in a checkpoint's bytes (u32s little-endian as the machine has them, no alignment).
 * A whole image, of an index that moved in the interval:
 *     u32 index
 *     state (tesi_state_t, 12 bytes)
 *     a live state's values: for each component of its archetype in order, value_bytes of it
 *     u32 n, then n sparse memberships: u32 component, u32 slot, value_bytes of it
 *     u32 n, then n relations with pairs: u32 relation, u32 outs, outs x (u32 target, stride of
 *         data), u32 ins, ins x u32 source (both lists in their order)
 * Value images, each of one component's value of an index that did not move in the interval (its
 * place, sparse slots and pairs are the ones before and after), in the entry's `values` bytes by
 * component: u32 component, u32 n, then n x (u32 index, value_bytes of the value). */
#include "rollback.h"

uint32_t tesi_value_bytes(const tesi_component_t *c) {
    return tesi_is_relation(c) ? 0 : c->stride;
}

/* ---- touching -------------------------------------------------------------------------------- */

void tesi_rollback_touch(tesi_rollback_t *rb, uint32_t index) {
    uint32_t *where = tesi_paged_at(&rb->where, index, sizeof *where);
    if (*where) return;
    rb->touched[rb->touched_count++] = index;
    *where = rb->touched_count;
    rb->listed[index >> 6] |= 1ull << (index & 63u);
}

tes_result_t tesi_rollback_table(tes_world_t *world, uint32_t first, uint32_t end) {
    tesi_rollback_t *rb = world->rollback;
    if (!rb) return TES_OK;
    uint32_t missing = tesi_paged_missing(&rb->where, first, end);
    if (!missing) return TES_OK;
    uint64_t listable = ((uint64_t)rb->where.page_count + missing) * TESI_PAGE_SIZE;
    if (listable > rb->touched_slots) {
        /* The list and its sort's spare in one block. */
        uint32_t *block = tesi_alloc(world, 2 * (size_t)listable * sizeof *block);
        if (!block) return TES_ERR_OUT_OF_MEMORY;
        if (rb->touched_count) memcpy(block, rb->touched, rb->touched_count * sizeof *block);
        tesi_free(world, rb->touched, 2 * (size_t)rb->touched_slots * sizeof *block);
        rb->touched = block;
        rb->spare = block + listable;
        rb->touched_slots = (uint32_t)listable;
    }
    tes_result_t result = tesi_reserve_zeroed(world, (void **)&rb->listed, &rb->listed_words,
                                              (end + 63) / 64, sizeof *rb->listed);
    if (result != TES_OK) return result;
    return tesi_paged_reserve(world, &rb->where, first, end, sizeof(uint32_t));
}

void tesi_sort_touched(tesi_rollback_t *rb) {
    tesi_sort_indices(rb->touched, rb->spare, rb->touched_count);
    for (uint32_t i = 0; i < rb->touched_count; i++)
        *(uint32_t *)tesi_paged_at(&rb->where, rb->touched[i], sizeof(uint32_t)) = i + 1;
}

void tesi_untouch(tesi_rollback_t *rb, uint32_t index) {
    *(uint32_t *)tesi_paged_at(&rb->where, index, sizeof(uint32_t)) = 0;
    rb->listed[index >> 6] &= ~(1ull << (index & 63u));
}

void tesi_untouch_all(tesi_rollback_t *rb) {
    for (uint32_t i = 0; i < rb->touched_count; i++)
        tesi_untouch(rb, rb->touched[i]);
    rb->touched_count = 0;
}

/* ---- states and images ----------------------------------------------------------------------- */

tesi_state_t tesi_state_now(const tes_world_t *world, uint32_t index) {
    if (index >= world->record_count) return (tesi_state_t){0};
    const tesi_record_t *r = tesi_record_find(world, index);
    if (!r) return (tesi_state_t){.row = TESI_ROW_SKIPPED};
    if (!r->chunk) return (tesi_state_t){0, r->row, tesi_generation(r)};
    const tesi_chunk_t *chunk = r->chunk;
    const tesi_archetype_t *a = chunk->archetype;
    return (tesi_state_t){a->id + 1, chunk->index * a->capacity + r->row, tesi_generation(r)};
}

tesi_scalars_t tesi_scalars_now(const tes_world_t *world) {
    return (tesi_scalars_t){.record_count = world->record_count,
                            .free_head = world->free_head,
                            .free_tail = world->free_tail,
                            .free_length = world->free_length,
                            .skipped_count = world->skipped_count,
                            .entity_count = world->entity_count,
                            .archetype_count = world->archetype_count,
                            .component_count = world->component_count,
                            .free_stale = world->free_stale,
                            .replica_tick = world->replica_tick,
                            .replica_source = world->replica_source};
}

static uint32_t shadow_slot(const tesi_rollback_t *rb, tes_component_t c, uint32_t index) {
    const uint32_t *slot = tesi_paged_find(&rb->slots[c], index, sizeof *slot);
    return slot ? *slot : 0;
}

static const tesi_list_t *shadow_list(const tesi_shadow_pairs_t *sp, int side, uint32_t index) {
    static const tesi_list_t empty = {0, 0, 0};
    const tesi_list_t *list = tesi_paged_find(&sp->lists[side], index, sizeof *list);
    return list ? list : &empty;
}

/* A shadow value (zeros when its page was never made: it was never written). */
static uint8_t *put_value(uint8_t *out, const tesi_paged_t *p, uint32_t index, uint32_t bytes) {
    const uint8_t *v = tesi_paged_find(p, index, bytes);
    if (v) {
        tesi_copy_cell(out, v, bytes); /* constant sizes inline */
    } else {
        memset(out, 0, bytes);
    }
    return out + bytes;
}

/* The sparse and pair parts of an image, written at `out` when it is not NULL; their size. */
uint32_t tesi_put_sets(const tes_world_t *world, const tesi_rollback_t *rb, uint32_t index,
                       uint8_t *out) {
    uint32_t size = 8, n = 0;
    uint8_t *count = out;
    if (out) out += 4;
    for (uint32_t i = 0; i < world->sparse_count; i++) {
        tes_component_t c = world->sparse_ids[i];
        uint32_t slot1 = shadow_slot(rb, c, index);
        if (!slot1) continue;
        uint32_t bytes = tesi_value_bytes(&world->components[c]);
        n++;
        size += 8 + bytes;
        if (!out) continue;
        out = tesi_store_u32(tesi_store_u32(out, c), slot1 - 1);
        if (bytes) out = put_value(out, &rb->values[c], index, bytes);
    }
    if (count) tesi_store_u32(count, n);
    count = out;
    if (out) out += 4;
    n = 0;
    for (uint32_t i = 0; world->relation_count && i < world->sparse_count; i++) {
        tes_component_t c = world->sparse_ids[i];
        const tesi_component_t *comp = &world->components[c];
        if (!tesi_is_relation(comp)) continue;
        const tesi_shadow_pairs_t *sp = &rb->pairs[c];
        const tesi_list_t *o = shadow_list(sp, TESI_OUT, index);
        const tesi_list_t *in = shadow_list(sp, TESI_IN, index);
        if (!o->count && !in->count) continue;
        n++;
        size += 12 + o->count * (4 + comp->stride) + in->count * 4;
        if (!out) continue;
        out = tesi_store_u32(tesi_store_u32(out, c), o->count);
        for (uint32_t id = o->first; id; id = sp->pairs[id - 1].next[TESI_OUT]) {
            out = tesi_store_u32(out, sp->pairs[id - 1].target);
            if (comp->stride) {
                memcpy(out, sp->data + (size_t)(id - 1) * comp->stride, comp->stride);
                out += comp->stride;
            }
        }
        out = tesi_store_u32(out, in->count);
        for (uint32_t id = in->first; id; id = sp->pairs[id - 1].next[TESI_IN])
            out = tesi_store_u32(out, sp->pairs[id - 1].source);
    }
    if (count) tesi_store_u32(count, n);
    return size;
}

/* The bytes of a live state's values: its archetype's components, packed. */
static uint32_t values_size(const tes_world_t *world, const tesi_state_t *state) {
    return state->archetype ? world->archetypes[state->archetype - 1]->value_bytes : 0;
}

/* The image of one index as the shadow has it, at `out`; returns the byte after it. `sets`: the
 * size of its sparse and pair parts (8: none, two zero counts). */
static uint8_t *put_image(const tes_world_t *world, const tesi_rollback_t *rb, uint32_t index,
                          uint32_t sets, uint8_t *out) {
    const tesi_state_t *state = tesi_shadow_state(rb, index);
    out = tesi_store_u32(out, index);
    memcpy(out, state, sizeof *state);
    out += sizeof *state;
    if (state->archetype) {
        const tesi_archetype_t *a = world->archetypes[state->archetype - 1];
        for (uint32_t i = 0; i < a->component_count; i++) {
            tes_component_t c = a->components[i];
            uint32_t bytes = tesi_value_bytes(&world->components[c]);
            if (bytes) out = put_value(out, &rb->values[c], index, bytes);
        }
    }
    if (sets == 8) { /* no sparse membership, no pair: two zero counts */
        memset(out, 0, 8);
        return out + 8;
    }
    return out + tesi_put_sets(world, rb, index, out);
}

/* Bytes the value images of the rows changed since the newest checkpoint take at most: one per
 * dirty row of a watched component (each listed once), an index that moved or not. */
static uint64_t values_bound(const tes_world_t *world, const tesi_rollback_t *rb) {
    uint64_t size = 0;
    for (uint32_t w = 0; w < rb->watch_count; w++) {
        const tesi_component_t *c = &world->components[rb->watches[w].component];
        uint64_t rows = tesi_is_sparse(c) ? c->sparse.dirty_count : 0;
        for (uint32_t t = 0; t < c->dirty_set_count; t++)
            rows += c->dirty_set[t]->dirty_count;
        if (rows) size += 8 + rows * (4 + tesi_value_bytes(c));
    }
    return size;
}

static uint8_t *put_value_image(uint8_t *out, uint32_t index, const uint8_t *value,
                                uint32_t bytes) {
    out = tesi_store_u32(out, index);
    tesi_copy_cell(out, value, bytes);
    return out + bytes;
}

/* One field's cells in one chunk, for put_group: the column's first cell and its stride, and
 * the field's offset in the shadow's value. */
typedef struct field_cells_t {
    const uint8_t *first;
    uint32_t bytes, offset;
} field_cells_t;

/* One watched component's value images, for put_values. */
static uint8_t *put_group(const tes_world_t *world, const tesi_rollback_t *rb, tes_component_t id,
                          uint8_t *out, bool update) {
    uint64_t base = rb->base;
    const tesi_component_t *c = &world->components[id];
    uint32_t bytes = tesi_value_bytes(c);
    const tesi_paged_t *shadow = &rb->values[id];
    /* When the component's last prune dropped every row stamped up to the newest checkpoint, the
     * rows listed since were stamped after it (changed, or added: an index that moved, which is
     * listed), and their stamps need not be read: a cache miss a row (validate checks it). */
    bool fresh = tesi_rollback_fresh(c, base);
    if (tesi_is_sparse(c)) {
        const tesi_sparse_t *s = &c->sparse;
        for (uint32_t i = 0; i < s->dirty_count; i++) {
            uint32_t index = s->dirty[i], slot1 = tesi_sparse_slot(s, index);
            if (!slot1 || (!fresh && s->changed[slot1 - 1] <= base) || tesi_listed(rb, index)) {
                continue;
            }
            uint8_t *v = tesi_paged_at(shadow, index, bytes);
            if (out) out = put_value_image(out, index, v, bytes);
            if (update) tesi_copy_cell(v, s->data + (size_t)(slot1 - 1) * bytes, bytes);
        }
        return out;
    }
    /* What every row reads is held in locals: the images and the shadow are written through
     * byte pointers, which may alias any member, so the compiler would load each member again
     * for every row (callgrind, a copy of bench:rollback's tick: 142 k -> 96 k instructions
     * a checkpoint). */
    uint32_t fields = c->field_count;
    for (uint32_t t = 0; t < c->dirty_set_count; t++) {
        const tesi_tracker_t *tracker = c->dirty_set[t];
        const tesi_chunk_t *chunk = tracker->chunk;
        const tesi_archetype_t *a = chunk->archetype;
        const tesi_column_t *columns = tesi_column_of(a, tesi_type_index(a, id), 0);
        const tes_entity_t *entities = tesi_chunk_entities(chunk);
        const uint32_t *dirty = tracker->dirty;
        const uint64_t *changed = tracker->changed;
        uint32_t dirty_count = tracker->dirty_count, count = chunk->count;
        /* The component's fields in this chunk: each column's first cell and stride, and where
         * the field sits in the shadow's value; `fours`: every one is 4 bytes (one load and one
         * store a field, the common case). */
        field_cells_t cells[TES_MAX_FIELDS];
        bool fours = true;
        for (uint32_t f = 0; update && f < fields; f++) {
            cells[f] = (field_cells_t){chunk->data + columns[f].offset, columns[f].bytes,
                                       c->fields[f].offset};
            fours &= columns[f].bytes == 4;
        }
        for (uint32_t i = 0; i < dirty_count; i++) {
            uint32_t row = dirty[i];
            if (row >= count || (!fresh && changed[row] <= base)) continue;
            uint32_t index = entities[row] & TESI_INDEX_MASK;
            if (tesi_listed(rb, index)) continue;
            uint8_t *v = tesi_paged_at(shadow, index, bytes);
            if (out) out = put_value_image(out, index, v, bytes);
            if (!update) continue;
            if (fours) {
                for (uint32_t f = 0; f < fields; f++)
                    memcpy(v + cells[f].offset, cells[f].first + (size_t)row * 4, 4);
            } else {
                for (uint32_t f = 0; f < fields; f++)
                    tesi_copy_cell(v + cells[f].offset,
                                   cells[f].first + (size_t)row * cells[f].bytes, cells[f].bytes);
            }
        }
    }
    return out;
}

/* The value images of the rows whose watched component changed since the newest checkpoint, of
 * the indices not listed (one that moved has its whole image), written at `out` when it is not
 * NULL: the shadow's values. With `update`, the shadow then takes the values now. Returns the
 * byte after them. One walk over the dirty lists: the cost is the rows changed, and of each only
 * the component that changed is read and copied. */
static uint8_t *put_values(tes_world_t *world, tesi_rollback_t *rb, uint8_t *out, bool update) {
    for (uint32_t w = 0; w < rb->watch_count; w++) {
        tes_component_t id = rb->watches[w].component;
        uint8_t *group = out;
        out = put_group(world, rb, id, out ? out + 8 : NULL, update);
        if (!group) continue;
        uint32_t n = (uint32_t)(out - group - 8) / (4 + tesi_value_bytes(&world->components[id]));
        if (n) {
            tesi_store_u32(tesi_store_u32(group, id), n);
        } else {
            out = group; /* no value of it changed */
        }
    }
    return out;
}

/* The room for the images of the touched indices and the changed rows in `entry`: sizes first,
 * then one reservation. The shadow knows each touched index's sets size; it goes in the sort's
 * spare (unused until the list is sorted) for the pass that writes them. */
static tes_result_t images_reserve(tes_world_t *world, tesi_rollback_t *rb, tesi_entry_t *entry) {
    uint64_t size = entry->size, values = entry->values_size + values_bound(world, rb);
    uint32_t *sets = rb->spare;
    for (uint32_t i = 0; i < rb->touched_count; i++) {
        const tesi_shadow_state_t *shadow = tesi_shadow_of(rb, rb->touched[i]);
        sets[i] = 8 + shadow->sets;
        size += 4 + sizeof(tesi_state_t) + values_size(world, &shadow->state) + sets[i];
    }
    if (size > UINT32_MAX || values > UINT32_MAX) return TES_ERR_OUT_OF_MEMORY;
    tes_result_t result =
        tesi_reserve(world, (void **)&entry->images, &entry->slots, (uint32_t)size, 1, 4096);
    if (result != TES_OK) return result;
    return tesi_reserve(world, (void **)&entry->values, &entry->value_slots, (uint32_t)values, 1,
                        4096);
}

/* The images as images_reserve counted them, appended to `entry` (or, with NULL, none: the
 * shadow's values alone taken when `update`). */
static void images_put(tes_world_t *world, tesi_rollback_t *rb, tesi_entry_t *entry, bool update) {
    if (!entry) {
        put_values(world, rb, NULL, update);
        return;
    }
    uint8_t *out = TESI_PAST(entry->images, entry->size);
    for (uint32_t i = 0; i < rb->touched_count; i++)
        out = put_image(world, rb, rb->touched[i], rb->spare[i], out);
    entry->size = (uint32_t)(out - entry->images);
    out = put_values(world, rb, TESI_PAST(entry->values, entry->values_size), update);
    entry->values_size = (uint32_t)(out - entry->values);
}

tes_result_t tesi_images_write(tes_world_t *world, tesi_rollback_t *rb, tesi_entry_t *entry) {
    tes_result_t result = images_reserve(world, rb, entry);
    if (result == TES_OK) images_put(world, rb, entry, false);
    return result;
}

void tesi_image_read(const tes_world_t *world, const uint8_t *images, uint32_t at,
                     tesi_image_t *out) {
    const uint8_t *p = images + at;
    out->index = tesi_load_u32(p);
    memcpy(&out->state, p + 4, sizeof out->state);
    p += 4 + sizeof out->state;
    out->values = p;
    p += values_size(world, &out->state);
    out->sparse = p;
    uint32_t n = tesi_load_u32(p);
    p += 4;
    for (uint32_t i = 0; i < n; i++) {
        p += 8 + tesi_value_bytes(&world->components[tesi_load_u32(p)]);
    }
    out->pairs = p;
    n = tesi_load_u32(p);
    p += 4;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t stride = world->components[tesi_load_u32(p)].stride;
        uint32_t outs = tesi_load_u32(p + 4);
        p += 8 + (size_t)outs * (4 + stride);
        p += 4 + (size_t)tesi_load_u32(p) * 4;
    }
    out->end = (uint32_t)(p - images);
}

/* ---- starting and stopping ------------------------------------------------------------------- */

static void entry_fini(tes_world_t *world, tesi_entry_t *e) {
    tesi_free(world, e->sparse_counts, (size_t)e->sparse_slots * sizeof *e->sparse_counts);
    tesi_free(world, e->images, e->slots);
    tesi_free(world, e->values, e->value_slots);
    tesi_free(world, e->counts, (size_t)e->count_slots * sizeof *e->counts);
    *e = (tesi_entry_t){0};
}

static void rollback_free(tes_world_t *world, tesi_rollback_t *rb) {
    for (uint32_t i = 0; i < rb->watch_count; i++)
        tes_query_destroy(world, rb->watches[i].query);
    size_t n = rb->component_slots;
    tesi_free(world, rb->watches, n * sizeof *rb->watches);
    for (uint32_t i = 0; i < rb->depth; i++)
        entry_fini(world, &rb->ring[i]);
    tesi_free(world, rb->ring, (size_t)rb->depth * sizeof *rb->ring);
    entry_fini(world, &rb->scratch);
    for (uint32_t c = 0; c < rb->component_count; c++) {
        const tesi_component_t *comp = &world->components[c];
        if (rb->values) tesi_paged_fini(world, &rb->values[c], tesi_value_bytes(comp));
        if (rb->slots) tesi_paged_fini(world, &rb->slots[c], sizeof(uint32_t));
        if (!rb->pairs) continue;
        tesi_shadow_pairs_t *sp = &rb->pairs[c];
        tesi_free(world, sp->pairs, (size_t)sp->slots * sizeof *sp->pairs);
        tesi_free(world, sp->data, (size_t)sp->slots * comp->stride);
        tesi_paged_fini(world, &sp->lists[TESI_OUT], sizeof(tesi_list_t));
        tesi_paged_fini(world, &sp->lists[TESI_IN], sizeof(tesi_list_t));
    }
    tesi_free(world, rb->values, n * sizeof *rb->values);
    tesi_free(world, rb->slots, n * sizeof *rb->slots);
    tesi_free(world, rb->pairs, n * sizeof *rb->pairs);
    tesi_paged_fini(world, &rb->states, sizeof(tesi_shadow_state_t));
    tesi_paged_fini(world, &rb->where, sizeof(uint32_t));
    tesi_free(world, rb->listed, (size_t)rb->listed_words * sizeof *rb->listed);
    tesi_free(world, rb->touched, 2 * (size_t)rb->touched_slots * sizeof *rb->touched);
    tesi_free(world, rb->archetype_counts, (size_t)rb->archetype_slots * sizeof(uint32_t));
    tesi_free(world, rb->marks, rb->mark_slots);
    tesi_free(world, rb, sizeof *rb);
}

void tesi_rollback_forget(tes_world_t *world) {
    tesi_rollback_t *rb = world->rollback;
    if (!rb) return;
    world->rollback = NULL;
    rollback_free(world, rb);
}

tes_result_t tes_rollback_stop(tes_world_t *world) {
    if (!world) return TES_ERR_INVALID_ARGUMENT;
    if (tesi_deferring(world)) return TES_ERR_INVALID_ARGUMENT;
    tesi_rollback_forget(world);
    return TES_OK;
}

tes_result_t tesi_rollback_reserve_component(tes_world_t *world, tes_component_t c) {
    tesi_rollback_t *rb = world->rollback;
    if (!rb || c < rb->component_count) return TES_OK;
    uint32_t slots = rb->component_slots;
    if (c >= slots) {
        slots = slots ? slots * 2 : 16;
        while (slots <= c)
            slots *= 2;
        void *arrays[4] = {NULL, NULL, NULL, NULL};
        const size_t elems[4] = {sizeof *rb->values, sizeof *rb->slots, sizeof *rb->pairs,
                                 sizeof *rb->watches};
        void **owned[4] = {(void **)&rb->values, (void **)&rb->slots, (void **)&rb->pairs,
                           (void **)&rb->watches};
        for (int i = 0; i < 4; i++) {
            arrays[i] = tesi_alloc(world, slots * elems[i]);
            if (arrays[i]) continue;
            while (i-- > 0)
                tesi_free(world, arrays[i], slots * elems[i]);
            return TES_ERR_OUT_OF_MEMORY;
        }
        for (int i = 0; i < 4; i++) {
            memset(arrays[i], 0, slots * elems[i]);
            if (*owned[i]) memcpy(arrays[i], *owned[i], rb->component_slots * elems[i]);
            tesi_free(world, *owned[i], rb->component_slots * elems[i]);
            *owned[i] = arrays[i];
        }
        rb->component_slots = slots;
    }
    rb->values[c] = (tesi_paged_t){0};
    rb->slots[c] = (tesi_paged_t){0};
    rb->pairs[c] = (tesi_shadow_pairs_t){0};
    return TES_OK;
}

void tesi_rollback_add_component(tes_world_t *world) {
    if (world->rollback) world->rollback->component_count = world->component_count;
}

/* A component unregistered (the latest, unused): one registered since the newest checkpoint
 * appears in no checkpoint and leaves its place; an older one may, and the checkpoints go. */
void tesi_rollback_drop_component(tes_world_t *world, tes_component_t c) {
    tesi_rollback_t *rb = world->rollback;
    if (!rb || c >= rb->component_count) return;
    if (c < rb->components_settled) {
        tesi_rollback_forget(world);
        return;
    }
    const tesi_component_t *comp = &world->components[c];
    tesi_paged_fini(world, &rb->values[c], tesi_value_bytes(comp));
    tesi_paged_fini(world, &rb->slots[c], sizeof(uint32_t));
    tesi_shadow_pairs_t *sp = &rb->pairs[c];
    tesi_free(world, sp->pairs, (size_t)sp->slots * sizeof *sp->pairs);
    tesi_free(world, sp->data, (size_t)sp->slots * comp->stride);
    tesi_paged_fini(world, &sp->lists[TESI_OUT], sizeof(tesi_list_t));
    tesi_paged_fini(world, &sp->lists[TESI_IN], sizeof(tesi_list_t));
    *sp = (tesi_shadow_pairs_t){0};
    rb->component_count = c;
    if (rb->watched_below > c) rb->watched_below = c; /* it had no watch: in use else */
}

/* A consumer of every component with fields not watched yet, so that they are dirty-tracked
 * (one registered since the last checkpoint joins here: its members were all added since, so
 * every one of them is touched already). */
static tes_result_t watch_missing(tes_world_t *world, tesi_rollback_t *rb) {
    for (tes_component_t c = rb->watched_below; c < world->component_count; c++) {
        const tesi_component_t *comp = &world->components[c];
        if (comp->field_count && !tesi_is_relation(comp)) {
            tes_query_desc_t desc = {.changed = &c, .changed_count = 1};
            tes_query_t *q;
            tes_result_t result = tes_query_create(world, &desc, &q);
            if (result != TES_OK) return result;
            tesi_query_hold(q, rb->base);
            rb->watches[rb->watch_count++] = (tesi_watch_t){c, q};
        }
        rb->watched_below = c + 1;
    }
    return TES_OK;
}

void tesi_rollback_unwatch(tes_world_t *world, tesi_rollback_t *rb, tes_component_t first) {
    /* Watches are made in id order (watch_missing): the ones to end are the last. */
    while (rb->watch_count && rb->watches[rb->watch_count - 1].component >= first)
        tes_query_destroy(world, rb->watches[--rb->watch_count].query);
    if (rb->watched_below > first) rb->watched_below = first;
}

/* The first checkpoint: the shadow of every index, written in full. */
static tes_result_t start(tes_world_t *world) {
    tesi_rollback_t *rb = tesi_alloc(world, sizeof *rb);
    if (!rb) return TES_ERR_OUT_OF_MEMORY;
    *rb = (tesi_rollback_t){.depth = world->checkpoint_depth};
    rb->ring = tesi_alloc(world, rb->depth * sizeof *rb->ring);
    if (!rb->ring) {
        tesi_free(world, rb, sizeof *rb);
        return TES_ERR_OUT_OF_MEMORY;
    }
    memset(rb->ring, 0, rb->depth * sizeof *rb->ring);
    tes_result_t result = TES_OK;
    world->rollback = rb;
    for (uint32_t c = 0; c < world->component_count && result == TES_OK; c++) {
        result = tesi_rollback_reserve_component(world, c);
        if (result == TES_OK) rb->component_count = c + 1;
    }
    /* Every index with a record page can be touched, and is in the shadow. */
    uint32_t end = world->records.page_slots * TESI_PAGE_SIZE;
    for (uint32_t page = 0; page < world->records.page_slots && result == TES_OK; page++) {
        if (!world->records.pages[page]) continue;
        uint32_t base = page << TESI_PAGE_BITS;
        result = tesi_rollback_table(world, base, base + TESI_PAGE_SIZE);
    }
    if (result == TES_OK) result = watch_missing(world, rb);
    for (uint32_t index = 1; index < end && index < world->record_count && result == TES_OK;
         index++) {
        if (!tesi_record_find(world, index)) {
            index |= TESI_PAGE_MASK;
            continue;
        }
        tesi_rollback_touch(rb, index);
    }
    if (result == TES_OK) result = tesi_shadow_reserve(world, rb, rb->touched_count);
    if (result != TES_OK) {
        tesi_rollback_forget(world);
        return result;
    }
    for (uint32_t a = 0; a < world->archetype_count; a++)
        rb->marks[a] = world->archetypes[a] != NULL;
    tesi_shadow_update(world, rb, rb->touched_count);
    return TES_OK;
}

/* ---- checkpoints ----------------------------------------------------------------------------- */

/* Marks the archetypes an index was in at the newest checkpoint and is in now. */
static void mark_archetypes(tes_world_t *world, tesi_rollback_t *rb, uint32_t index) {
    uint32_t then = tesi_shadow_state(rb, index)->archetype;
    if (then) rb->marks[then - 1] = 1;
    tesi_state_t now = tesi_state_now(world, index);
    if (now.archetype) rb->marks[now.archetype - 1] = 1;
}

/* Appends (archetype, count at the newest checkpoint) for each archetype the moved indices were
 * or are in, and marks them for tesi_shadow_update. An archetype's count changes only when an
 * index moves in or out of it: indices whose values alone changed mark nothing. */
static tes_result_t write_counts(tes_world_t *world, tesi_rollback_t *rb, tesi_entry_t *entry,
                                 uint32_t moved) {
    for (uint32_t i = 0; i < moved; i++)
        mark_archetypes(world, rb, rb->touched[i]);
    uint32_t n = 0;
    for (uint32_t a = 0; a < world->archetype_count; a++)
        n += rb->marks[a];
    tes_result_t result = tesi_reserve(world, (void **)&entry->counts, &entry->count_slots,
                                       entry->count_size + 2 * n, sizeof *entry->counts, 16);
    if (result != TES_OK) return result;
    for (uint32_t a = 0; a < world->archetype_count; a++) {
        if (!rb->marks[a]) continue;
        uint32_t then = a < rb->archetype_slots ? rb->archetype_counts[a] : 0;
        entry->counts[entry->count_size++] = a;
        entry->counts[entry->count_size++] = then;
    }
    return TES_OK;
}

/* A new newest entry with the world's numbers now (the oldest makes room when the ring is full). */
static tes_result_t push_entry(tes_world_t *world, tesi_rollback_t *rb, uint32_t number) {
    tesi_entry_t *e = rb->count < rb->depth ? tesi_entry_at(rb, rb->count) : tesi_entry_at(rb, 0);
    tes_result_t result = tesi_reserve(world, (void **)&e->sparse_counts, &e->sparse_slots,
                                       world->sparse_count, sizeof *e->sparse_counts, 8);
    if (result != TES_OK) return result;
    if (rb->count == rb->depth) {
        rb->first = (rb->first + 1) % rb->depth;
        rb->count--;
    }
    e->number = number;
    e->at = tesi_scalars_now(world);
    e->sparse_known = world->sparse_count;
    for (uint32_t i = 0; i < world->sparse_count; i++)
        e->sparse_counts[i] = world->components[world->sparse_ids[i]].sparse.count;
    e->size = e->values_size = 0;
    e->count_size = 0;
    rb->count++;
    return TES_OK;
}

void tesi_rollback_settle(tes_world_t *world, tesi_rollback_t *rb) {
    tesi_untouch_all(rb);
    rb->components_settled = world->component_count;
    rb->base = world->change_tick;
    for (uint32_t i = 0; i < rb->watch_count; i++)
        tesi_query_hold(rb->watches[i].query, rb->base);
    /* A consumer's run: what every consumer has seen goes (never inside a run: refused there).
     * Without it a world whose other consumers never run would keep every row it ever wrote
     * on the dirty lists the next checkpoint walks. Before the tick moves on: when the watches
     * are the only consumers, they have seen every stamp, and the rows go unread. */
    tesi_prune(world);
    world->change_tick++;
}

tes_result_t tes_checkpoint(tes_world_t *world, uint32_t *out_checkpoint) {
    if (out_checkpoint) *out_checkpoint = 0;
    if (!world || !out_checkpoint || tesi_deferring(world)) return TES_ERR_INVALID_ARGUMENT;
    tesi_rollback_t *rb = world->rollback;
    if (!rb) {
        tes_result_t result = start(world);
        if (result == TES_OK) result = push_entry(world, world->rollback, 1);
        if (result != TES_OK) {
            tesi_rollback_forget(world);
            return result;
        }
        tesi_rollback_settle(world, world->rollback);
        *out_checkpoint = 1;
        return TES_OK;
    }
    /* The indices touched moved (their record, row, sparse slots or pairs changed): a whole
     * image each. The other rows the dirty lists hold changed values alone: a value image each,
     * of the component that changed. */
    uint32_t moved = rb->touched_count;
    tesi_sort_touched(rb);
    tesi_entry_t *newest = tesi_entry_at(rb, rb->count - 1);
    /* Everything that can fail first: watches of new components, the newest entry's images and
     * counts, the shadow's pages, the next entry. */
    tes_result_t result = watch_missing(world, rb);
    if (result == TES_OK) result = images_reserve(world, rb, newest);
    if (result == TES_OK) result = tesi_shadow_reserve(world, rb, moved);
    if (result == TES_OK) result = write_counts(world, rb, newest, moved);
    uint32_t number = newest->number + 1;
    if (result == TES_OK) {
        /* The entry the new one takes, when the ring is full, is the oldest, never `newest`
         * (a ring of one keeps no images: it can only go back to its one checkpoint). */
        result = push_entry(world, rb, number);
    }
    if (result != TES_OK) {
        newest->size = newest->values_size = 0;
        newest->count_size = 0;
        memset(rb->marks, 0, rb->mark_slots);
        return result;
    }
    /* Nothing fails from here. The images go into what is now the second newest entry (a ring
     * of one keeps none); a value image and its shadow update are one step. */
    images_put(world, rb, rb->depth > 1 ? newest : NULL, true);
    tesi_shadow_update(world, rb, moved);
    tesi_rollback_settle(world, rb);
    *out_checkpoint = number;
    return TES_OK;
}

tes_result_t tes_checkpoints(const tes_world_t *world, uint32_t *out_oldest, uint32_t *out_newest) {
    if (out_oldest) *out_oldest = 0;
    if (out_newest) *out_newest = 0;
    if (!world || !out_oldest || !out_newest) return TES_ERR_INVALID_ARGUMENT;
    tesi_rollback_t *rb = world->rollback;
    if (!rb || !rb->count) return TES_OK;
    *out_oldest = tesi_entry_at(rb, 0)->number;
    *out_newest = tesi_entry_at(rb, rb->count - 1)->number;
    return TES_OK;
}

void tesi_rollback_stats(const tes_world_t *world, uint32_t *count, uint64_t *ring_bytes,
                         uint64_t *shadow_bytes) {
    tesi_rollback_t *rb = world->rollback;
    *count = 0;
    *ring_bytes = *shadow_bytes = 0;
    if (!rb) return;
    *count = rb->count;
    for (uint32_t i = 0; i < rb->depth; i++) {
        const tesi_entry_t *e = &rb->ring[i];
        *ring_bytes += e->slots + (uint64_t)e->value_slots + (uint64_t)e->count_slots * 4 +
                       (uint64_t)e->sparse_slots * 4;
    }
    uint64_t pages = rb->states.page_count * (uint64_t)TESI_PAGE_SIZE * sizeof(tesi_shadow_state_t);
    for (uint32_t c = 0; c < rb->component_count; c++) {
        const tesi_component_t *comp = &world->components[c];
        pages += rb->values[c].page_count * (uint64_t)TESI_PAGE_SIZE * tesi_value_bytes(comp);
        pages += rb->slots[c].page_count * (uint64_t)TESI_PAGE_SIZE * 4;
        const tesi_shadow_pairs_t *sp = &rb->pairs[c];
        pages += (uint64_t)sp->slots * (sizeof *sp->pairs + comp->stride);
        pages += (sp->lists[0].page_count + sp->lists[1].page_count) * (uint64_t)TESI_PAGE_SIZE *
                 sizeof(tesi_list_t);
    }
    *shadow_bytes = pages;
}
