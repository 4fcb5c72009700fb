/* Rewinding to a checkpoint (the design: rollback.h). Everything that can fail comes first:
 * gathering the images of what changed since the checkpoint, room in the archetypes that grow
 * back, in sparse sets, pair tables, logs and the shadow. Then the images are written back:
 * removals logged, archetypes resized, rows and records, sparse slots, pairs, the values of the
 * indices that did not move, the entity table's numbers; archetypes made since are freed, and the
 * shadow takes the state back. */
#include "rollback.h"
#include "sort.h"

/* An index as it is before the rewind. */
typedef struct before_t {
    tes_entity_t handle; /* live: its handle; else 0 */
    const tesi_chunk_t *chunk;
    uint32_t row;
    const tesi_archetype_t *archetype;
} before_t;

/* A value earlier than its index's earliest whole image, which it goes over. */
typedef struct value_t {
    const uint8_t *bytes; /* the value, in its value image */
    tes_component_t component;
    uint32_t next; /* the index's next one + 1 (0: none) */
} value_t;

/* A value of an index that did not move since the checkpoint (it has no whole image). */
typedef struct in_place_t {
    const uint8_t *value; /* in its value image */
    uint32_t index;
    tes_component_t component;
} in_place_t;

typedef struct rewind_t {
    tes_world_t *world;
    tesi_rollback_t *rb;
    tesi_entry_t *to;     /* the checkpoint */
    uint32_t to_position; /* its place in the ring */
    uint32_t n;           /* indices to write back: rb->touched[0..n) */
    tesi_image_t *image;  /* by position in touched: its earliest whole image, read once */
    before_t *before;     /* by position in touched */
    uint32_t *first;      /* by position: the ring place of that image (the shadow's: count - 1) */
    uint32_t *overrides;  /* by position: its first value earlier than that image + 1 (0: none) */
    value_t *values;      /* room for every value image */
    uint32_t value_count;
    in_place_t *in_place; /* the values of indices that did not move, by index (then newest
                           * first), and as many more for the sort */
    uint32_t in_place_count;
    uint32_t *sparse;    /* 2 per position: a sparse member's slot + 1 and handle, before */
    uint32_t *counts;    /* by archetype id: its entity count at the checkpoint */
    uint8_t *doomed;     /* by archetype id: made since the checkpoint */
    uint32_t archetypes; /* archetype_count before the rewind */
    size_t block;        /* bytes of the allocation above */
} rewind_t;

static tes_entity_t handle_of(const tesi_image_t *img) {
    return img->state.archetype ? tesi_make_handle(img->index, img->state.generation) : 0;
}

/* The position in touched of a listed index. */
static uint32_t where_of(const tesi_rollback_t *rb, uint32_t index) {
    return *(const uint32_t *)tesi_paged_at(&rb->where, index, sizeof(uint32_t)) - 1;
}

/* The entry at ring place `place` since the checkpoint, as a rewind reads it: the newest one's
 * images are the shadow's, written into rb->scratch. */
static const tesi_entry_t *entry_since(const rewind_t *rw, uint32_t place) {
    return place == rw->rb->count - 1 ? &rw->rb->scratch : tesi_entry_at(rw->rb, place);
}

/* Runs `body` with `img` read for every whole image since the checkpoint, the newest first,
 * `place` its entry's place in the ring. */
#define FOR_EACH_IMAGE(rw, place, img, body)                               \
    for (uint32_t place = (rw)->rb->count; place-- > (rw)->to_position;) { \
        const tesi_entry_t *entry_ = entry_since(rw, place);               \
        for (uint32_t at_ = 0; at_ < entry_->size; at_ = (img).end) {      \
            tesi_image_read((rw)->world, entry_->images, at_, &(img));     \
            body                                                           \
        }                                                                  \
    }

/* Runs `body` with `walk` at every value image since the checkpoint, the newest first. */
#define FOR_EACH_VALUE(rw, place, walk, body)                                          \
    for (uint32_t place = (rw)->rb->count; place-- > (rw)->to_position;) {             \
        tesi_value_walk_t walk = tesi_value_walk((rw)->world, entry_since(rw, place)); \
        while (tesi_value_next(&walk)) {                                               \
            body                                                                       \
        }                                                                              \
    }

/* A value image of an index with a whole image since the checkpoint, met in the order newest
 * first: a value earlier than that image goes over the image's, the earliest of each component. */
static void add_override(rewind_t *rw, uint32_t p, const tesi_value_walk_t *walk, uint32_t place) {
    if (place >= rw->first[p]) return;
    for (uint32_t v = rw->overrides[p]; v; v = rw->values[v - 1].next) {
        if (rw->values[v - 1].component != walk->component) continue;
        rw->values[v - 1].bytes = walk->value;
        return;
    }
    rw->values[rw->value_count] = (value_t){walk->value, walk->component, rw->overrides[p]};
    rw->overrides[p] = ++rw->value_count;
}

/* The value of a component an index with a whole image takes over the image's; NULL: the image's.
 */
static const uint8_t *override_of(const rewind_t *rw, uint32_t p, tes_component_t component) {
    for (uint32_t v = rw->overrides[p]; v; v = rw->values[v - 1].next) {
        if (rw->values[v - 1].component == component) return rw->values[v - 1].bytes;
    }
    return NULL;
}

static void keep_in_place(rewind_t *rw, const tesi_value_walk_t *walk) {
    rw->in_place[rw->in_place_count++] = (in_place_t){walk->value, walk->index, walk->component};
}

/* ---- gathering ------------------------------------------------------------------------------- */

/* Every index with a whole image since the checkpoint in touched, with the earliest, and the
 * values earlier than it that go over it. */
static tes_result_t gather(rewind_t *rw) {
    tes_world_t *world = rw->world;
    tesi_rollback_t *rb = rw->rb;
    rb->scratch.size = rb->scratch.values_size = 0;
    tes_result_t result = tesi_images_write(world, rb, &rb->scratch);
    if (result != TES_OK) return result;
    tesi_image_t img;
    uint32_t values = 0;
    FOR_EACH_IMAGE(rw, place, img, { tesi_rollback_touch(rb, img.index); })
    for (uint32_t place = rb->count; place-- > rw->to_position;)
        values += tesi_value_count(world, entry_since(rw, place));
    rw->n = rb->touched_count;
    rw->archetypes = world->archetype_count;
    size_t n = rw->n, a = rw->archetypes;
    /* In 64 bits: on wasm32 the ring's value images alone may describe more than size_t holds. */
    uint64_t bytes =
        (uint64_t)n * (sizeof *rw->image + sizeof *rw->before + 4 * sizeof *rw->sparse) +
        (uint64_t)values * (sizeof *rw->values + 2 * sizeof *rw->in_place) +
        (uint64_t)a * (sizeof *rw->counts + 1);
    if (bytes > SIZE_MAX) return TES_ERR_OUT_OF_MEMORY;
    rw->block = (size_t)bytes;
    uint8_t *block = tesi_alloc(world, rw->block ? rw->block : 1);
    if (!block) return TES_ERR_OUT_OF_MEMORY;
    rw->image = (tesi_image_t *)(void *)block;
    rw->before = (before_t *)(void *)(rw->image + n);
    rw->values = (value_t *)(void *)(rw->before + n);
    rw->in_place = (in_place_t *)(void *)(rw->values + values);
    rw->sparse = (uint32_t *)(void *)(rw->in_place + 2 * (size_t)values);
    rw->first = rw->sparse + 2 * n;
    rw->overrides = rw->first + n;
    rw->counts = rw->overrides + n;
    rw->doomed = (uint8_t *)(rw->counts + a);
    memset(rw->overrides, 0, n * sizeof *rw->overrides);
    /* In index order, the passes below walk pages and rows in order (the entities of a batch
     * spawn are in rows of increasing index): far fewer cache misses than the order touched. */
    tesi_sort_touched(rb);
    result =
        tesi_reserve_zeroed(world, (void **)&rb->marks, &rb->mark_slots, world->archetype_count, 1);
    if (result != TES_OK) return result;
    /* Whole images, newest first, so that the earliest wins; then the values that go over them,
     * once every earliest whole image is known. */
    FOR_EACH_IMAGE(rw, place, img, {
        uint32_t p = where_of(rb, img.index);
        rw->image[p] = img;
        rw->first[p] = place;
    })
    FOR_EACH_VALUE(rw, place, walk, {
        if (tesi_listed(rb, walk.index)) {
            add_override(rw, where_of(rb, walk.index), &walk, place);
        } else {
            keep_in_place(rw, &walk);
        }
    })
    /* By index, stably (an index's values stay newest first): writing them back then walks the
     * shadow's pages, the records and the rows of a batch-spawned world in order, where in the
     * order met nearly each of the thousands of values of a rewind of 8 ticks was a cache miss. */
    tesi_radix_sort((uint8_t *)rw->in_place, (uint8_t *)(rw->in_place + rw->in_place_count),
                    rw->in_place_count, sizeof *rw->in_place, offsetof(in_place_t, index));
    /* Archetype counts: the shadow's for what moved since the newest checkpoint, then the
     * entries' from the newest down, so the earliest wins (as for images). */
    for (uint32_t at = 0; at < rb->scratch.size; at = img.end) {
        tesi_image_read(world, rb->scratch.images, at, &img);
        tesi_state_t now = tesi_state_now(world, img.index);
        uint32_t ids[2] = {img.state.archetype, now.archetype};
        for (int k = 0; k < 2; k++) {
            if (!ids[k] || rb->marks[ids[k] - 1]) continue;
            uint32_t id = ids[k] - 1;
            rb->marks[id] = 1;
            rw->counts[id] = id < rb->archetype_slots ? rb->archetype_counts[id] : 0;
        }
    }
    for (uint32_t e = rb->count - 1; e-- > rw->to_position;) {
        const tesi_entry_t *entry = tesi_entry_at(rb, e);
        for (uint32_t i = 0; i < entry->count_size; i += 2) {
            rw->counts[entry->counts[i]] = entry->counts[i + 1];
            rb->marks[entry->counts[i]] = 1;
        }
    }
    for (uint32_t id = rw->to->at.archetype_count; id < rw->archetypes; id++)
        rw->counts[id] = 0; /* made since: empty at the checkpoint */
    return TES_OK;
}

/* ---- room ------------------------------------------------------------------------------------ */

static const uint8_t *sparse_value(const tes_world_t *world, const tesi_image_t *img,
                                   tes_component_t component, uint32_t *out_slot) {
    const uint8_t *p = img->sparse;
    uint32_t n = tesi_load_u32(p);
    p += 4;
    for (uint32_t i = 0; i < n; i++) {
        tes_component_t c = tesi_load_u32(p);
        if (c == component) {
            *out_slot = tesi_load_u32(p + 4);
            return p + 8;
        }
        p += 8 + tesi_value_bytes(&world->components[c]);
    }
    return NULL;
}

/* The image's pairs of a relation: its outs and ins (NULL, 0 when it had none). */
static void pairs_of(const tes_world_t *world, const tesi_image_t *img, tes_component_t relation,
                     const uint8_t **outs, uint32_t *out_count, const uint8_t **ins,
                     uint32_t *in_count) {
    const uint8_t *p = img->pairs;
    uint32_t n = tesi_load_u32(p);
    p += 4;
    *outs = *ins = NULL;
    *out_count = *in_count = 0;
    for (uint32_t i = 0; i < n; i++) {
        tes_component_t c = tesi_load_u32(p);
        uint32_t stride = world->components[c].stride, o = tesi_load_u32(p + 4);
        const uint8_t *in = p + 8 + (size_t)o * (4 + stride);
        if (c == relation) {
            *outs = p + 8;
            *out_count = o;
            *ins = in + 4;
            *in_count = tesi_load_u32(in);
            return;
        }
        p = in + 4 + (size_t)tesi_load_u32(in) * 4;
    }
}

/* Shadow pages for the state an image describes (the shadow takes it after the rewind). */
static tes_result_t reserve_shadow(tes_world_t *world, tesi_rollback_t *rb,
                                   const tesi_image_t *img) {
    uint32_t i = img->index;
    tes_result_t result = tesi_page_for(world, &rb->states, i, sizeof(tesi_shadow_state_t));
    if (result == TES_OK && img->state.archetype) {
        const tesi_archetype_t *a = world->archetypes[img->state.archetype - 1];
        for (uint32_t k = 0; k < a->component_count && result == TES_OK; k++) {
            uint32_t bytes = tesi_value_bytes(&world->components[a->components[k]]);
            if (bytes) result = tesi_page_for(world, &rb->values[a->components[k]], i, bytes);
        }
    }
    for (uint32_t s = 0; s < world->sparse_count && result == TES_OK; s++) {
        tes_component_t c = world->sparse_ids[s];
        const tesi_component_t *comp = &world->components[c];
        uint32_t slot;
        if (sparse_value(world, img, c, &slot)) {
            result = tesi_page_for(world, &rb->slots[c], i, sizeof(uint32_t));
            uint32_t bytes = tesi_value_bytes(comp);
            if (result == TES_OK && bytes) {
                result = tesi_page_for(world, &rb->values[c], i, bytes);
            }
        }
        const uint8_t *outs, *ins;
        uint32_t o, n;
        pairs_of(world, img, c, &outs, &o, &ins, &n);
        if (result == TES_OK && (o || n)) {
            result = tesi_page_for(world, &rb->pairs[c].lists[TESI_OUT], i, sizeof(tesi_list_t));
            if (result == TES_OK) {
                result = tesi_page_for(world, &rb->pairs[c].lists[TESI_IN], i, sizeof(tesi_list_t));
            }
        }
    }
    return result;
}

/* Everything the writing needs; on failure the archetypes given chunks are trimmed again. */
static tes_result_t reserve(rewind_t *rw) {
    tes_world_t *world = rw->world;
    tesi_rollback_t *rb = rw->rb;
    tes_result_t result = tesi_logs_reserve(world, NULL, rw->n);
    for (uint32_t s = 0; s < world->sparse_count && result == TES_OK; s++) {
        tes_component_t c = world->sparse_ids[s];
        tesi_sparse_t *set = &world->components[c].sparse;
        uint32_t want = s < rw->to->sparse_known ? rw->to->sparse_counts[s] : 0;
        result = tesi_log_reserve(world, c, rw->n);
        if (result == TES_OK && want > set->count) {
            result = tesi_sparse_reserve(world, c, want - set->count, 0, 0);
        }
        if (result != TES_OK || !world->relation_count ||
            !tesi_is_relation(&world->components[c])) {
            continue;
        }
        /* Pairs added back at most every out pair of the images; events: per out pair at most
         * removed, added and changed, the current pairs removed, the moved sources. */
        uint64_t adds = 0, events = 0;
        for (uint32_t p = 0; p < rw->n; p++) {
            tesi_image_t img = rw->image[p];
            const uint8_t *outs, *ins;
            uint32_t o, n;
            pairs_of(world, &img, c, &outs, &o, &ins, &n);
            adds += o;
            events += 3 * (uint64_t)o + n +
                      tesi_list_of(&world->components[c].relation, TESI_OUT, img.index)->count;
        }
        result = tesi_pairs_restore_reserve(world, c, adds, events);
    }
    for (uint32_t p = 0; p < rw->n && result == TES_OK; p++) {
        tesi_image_t img = rw->image[p];
        result = reserve_shadow(world, rb, &img);
    }
    /* The tables only: the pages of the states written back were reserved from the images. */
    if (result == TES_OK) result = tesi_shadow_reserve(world, rb, 0);
    for (uint32_t a = 0; a < rw->archetypes && result == TES_OK; a++) {
        tesi_archetype_t *arch = world->archetypes[a];
        if (rb->marks[a] && arch && rw->counts[a] > arch->entity_count) {
            result = tesi_chunks_reserve(world, arch, rw->counts[a] - arch->entity_count);
        }
    }
    if (result != TES_OK) {
        for (uint32_t a = 0; a < rw->archetypes; a++) {
            if (rb->marks[a] && world->archetypes[a]) tesi_chunks_trim(world, world->archetypes[a]);
        }
    }
    return result;
}

/* ---- writing back ---------------------------------------------------------------------------- */

/* Each index as it is (for write_rows), and what the rewind takes from it: removals of chunk
 * components (what an entity had and will not have, or an entity going) and the replicators'
 * stamps of indices whose entity changes. */
static void note_before(rewind_t *rw) {
    tes_world_t *world = rw->world;
    for (uint32_t p = 0; p < rw->n; p++) {
        const tesi_image_t *img = &rw->image[p];
        const tesi_record_t *r =
            img->index < world->record_count ? tesi_record_find(world, img->index) : NULL;
        before_t *b = &rw->before[p];
        *b = r && r->chunk ? (before_t){tesi_chunk_entities(r->chunk)[r->row], r->chunk, r->row,
                                        r->chunk->archetype}
                           : (before_t){0};
        tes_entity_t after = handle_of(img);
        if (b->handle != after) tesi_index_stamp(world, img->index);
        if (!b->handle || !tesi_logging(world)) continue;
        if (b->handle != after) {
            tesi_log_removals(world, b->archetype, b->handle);
            continue;
        }
        const tesi_archetype_t *a = world->archetypes[img->state.archetype - 1];
        if (a == b->archetype) continue;
        for (uint32_t i = 0; i < b->archetype->component_count; i++) {
            tes_component_t c = b->archetype->components[i];
            if (tesi_type_index(a, c) == TESI_NO_TYPE) tesi_log_removal(world, c, b->handle);
        }
    }
}

/* Each archetype whose count changed gets its count at the checkpoint: rows past it vacated,
 * rows below it taken (the chunks were reserved). */
static void resize_archetypes(rewind_t *rw) {
    tes_world_t *world = rw->world;
    for (uint32_t id = 0; id < rw->archetypes; id++) {
        tesi_archetype_t *a = world->archetypes[id];
        if (!rw->rb->marks[id] || !a) continue;
        uint32_t want = rw->counts[id], cap = a->capacity;
        for (uint32_t row = want; row < a->entity_count && a->tracked_count; row++)
            tesi_trackers_clear_row(a->chunks[row / cap], row % cap);
        for (uint32_t c = 0; c < a->chunk_count; c++) {
            uint64_t first = (uint64_t)c * cap;
            a->chunks[c]->count = want <= first         ? 0
                                  : want - first >= cap ? cap
                                                        : (uint32_t)(want - first);
        }
        a->entity_count = want;
        tesi_chunks_trim(world, a);
    }
    world->layout++;
}

/* Writes one component's packed value into a row's cells; true when the bytes differed. */
static bool put_cells(const tesi_component_t *c, const tesi_archetype_t *a, uint32_t type,
                      tesi_chunk_t *chunk, uint32_t row, const uint8_t *value, bool compare) {
    /* In locals: the cells are written through byte pointers, which may alias any member, so
     * the compiler would load each again for every field. A component's columns follow one
     * another in its field order. */
    const tesi_column_t *columns = tesi_column_of(a, type, 0);
    const tesi_field_t *fields = c->fields;
    uint32_t n = c->field_count;
    uint8_t *data = chunk->data;
    bool differs = false;
    for (uint32_t f = 0; f < n; f++) {
        uint8_t *cell = data + columns[f].offset + (size_t)row * columns[f].bytes;
        const uint8_t *v = value + fields[f].offset;
        if (compare) {
            differs |= tesi_put_field(cell, v, fields[f].bytes);
        } else {
            tesi_copy_cell(cell, v, fields[f].bytes);
        }
    }
    return differs || !compare;
}

static void write_rows(rewind_t *rw) {
    tes_world_t *world = rw->world;
    const tesi_scalars_t *at = &rw->to->at;
    for (uint32_t p = 0; p < rw->n; p++) {
        tesi_image_t img = rw->image[p];
        tesi_record_t *record = tesi_record_at(world, img.index);
        if (!img.state.archetype) {
            *record = img.index < at->record_count
                          ? (tesi_record_t){NULL, img.state.row, img.state.generation}
                          : (tesi_record_t){0};
            continue;
        }
        const tesi_archetype_t *a = world->archetypes[img.state.archetype - 1];
        tesi_chunk_t *chunk = a->chunks[img.state.row / a->capacity];
        uint32_t row = img.state.row % a->capacity;
        tes_entity_t handle = handle_of(&img);
        const before_t *b = &rw->before[p];
        bool same = b->handle == handle && b->chunk == chunk && b->row == row && b->archetype == a;
        *record = (tesi_record_t){chunk, row, img.state.generation};
        tesi_chunk_entities(chunk)[row] = handle;
        const uint8_t *value = img.values;
        for (uint32_t i = 0; i < a->component_count; i++) {
            const tesi_component_t *c = &world->components[a->components[i]];
            uint32_t bytes = tesi_value_bytes(c);
            if (!bytes) continue;
            const uint8_t *earlier = override_of(rw, p, a->components[i]);
            if (put_cells(c, a, i, chunk, row, earlier ? earlier : value, same) && same) {
                tesi_mark_changed(world, chunk, i, row);
            }
            value += bytes;
        }
        if (!same) tesi_trackers_stamp_added(world, chunk, row, 1);
    }
}

/* One sparse set back to the checkpoint: its count, and each listed index's membership. */
static void write_sparse(rewind_t *rw, uint32_t s) {
    tes_world_t *world = rw->world;
    tes_component_t id = world->sparse_ids[s];
    tesi_component_t *c = &world->components[id];
    tesi_sparse_t *set = &c->sparse;
    uint32_t bytes = tesi_value_bytes(c);
    for (uint32_t p = 0; p < rw->n; p++) {
        uint32_t index = rw->rb->touched[p];
        uint32_t *slot = tesi_paged_find(&set->slot_of, index, sizeof *slot);
        uint32_t slot1 = slot ? *slot & TESI_SLOT_MASK : 0;
        rw->sparse[2 * p] = slot1;
        rw->sparse[2 * p + 1] = slot1 ? set->entities[slot1 - 1] : 0;
        if (slot) *slot &= TESI_SLOT_LISTED;
    }
    set->count = s < rw->to->sparse_known ? rw->to->sparse_counts[s] : 0;
    for (uint32_t p = 0; p < rw->n; p++) {
        tesi_image_t img = rw->image[p];
        uint32_t was1 = rw->sparse[2 * p];
        tes_entity_t had = rw->sparse[2 * p + 1], handle = handle_of(&img);
        uint32_t slot = 0;
        const uint8_t *value = handle ? sparse_value(world, &img, id, &slot) : NULL;
        if (had && (!value || had != handle)) tesi_log_removal(world, id, had);
        if (!value) continue;
        const uint8_t *earlier = bytes ? override_of(rw, p, id) : NULL;
        if (earlier) value = earlier;
        uint32_t *slot_of = tesi_paged_at(&set->slot_of, img.index, sizeof *slot_of);
        *slot_of |= slot + 1;
        set->entities[slot] = handle;
        bool same = had == handle && was1 == slot + 1;
        uint8_t *data = bytes ? set->data + (size_t)slot * bytes : NULL;
        bool differs = bytes && memcmp(data, value, bytes);
        if (differs) memcpy(data, value, bytes);
        if (!same) {
            tesi_sparse_stamp(world, id, slot, true);
        } else if (differs) {
            tesi_sparse_stamp(world, id, slot, false);
        }
    }
}

/* The relations' pairs back: first every pair the images lack goes, then the images' pairs are
 * put back (data and the sources' order of targets), then the targets' order of sources. */
static void write_pairs(rewind_t *rw) {
    tes_world_t *world = rw->world;
    for (int pass = 0; pass < 3; pass++) {
        for (uint32_t s = 0; s < world->sparse_count; s++) {
            tes_component_t id = world->sparse_ids[s];
            if (!tesi_is_relation(&world->components[id])) continue;
            for (uint32_t p = 0; p < rw->n; p++) {
                tesi_image_t img = rw->image[p];
                const uint8_t *outs, *ins;
                uint32_t o, n;
                pairs_of(world, &img, id, &outs, &o, &ins, &n);
                if (pass == 0) {
                    tesi_pairs_keep(world, id, img.index, handle_of(&img), outs, o);
                } else if (pass == 1 && o) {
                    tesi_pairs_put(world, id, handle_of(&img), outs, o);
                } else if (pass == 2 && n) {
                    tesi_pairs_order_sources(world, id, handle_of(&img), ins, n);
                }
            }
        }
    }
}

/* The values of the indices that did not move: the shadow takes them, by index and newest first
 * (the earliest wins), then each cell whose bytes differ from the shadow's takes them, a change. */
static void write_values(rewind_t *rw) {
    tes_world_t *world = rw->world;
    tesi_rollback_t *rb = rw->rb;
    /* In locals: the copies below store through byte pointers, which may alias any member. */
    const in_place_t *in_place = rw->in_place;
    uint32_t count = rw->in_place_count;
    tesi_component_t *components = world->components;
    const tesi_paged_t *values = rb->values;
    for (uint32_t i = 0; i < count; i++) {
        const in_place_t *v = &in_place[i];
        uint32_t bytes = tesi_value_bytes(&components[v->component]);
        tesi_copy_cell(tesi_paged_at(&values[v->component], v->index, bytes), v->value, bytes);
    }
    for (uint32_t i = 0; i < count; i++) {
        const in_place_t *v = &in_place[i];
        tesi_component_t *c = &components[v->component];
        uint32_t bytes = tesi_value_bytes(c);
        const uint8_t *shadow = tesi_paged_at(&values[v->component], v->index, bytes);
        if (tesi_is_sparse(c)) {
            uint32_t slot = tesi_sparse_slot(&c->sparse, v->index) - 1;
            uint8_t *data = c->sparse.data + (size_t)slot * bytes;
            if (!memcmp(data, shadow, bytes)) continue;
            memcpy(data, shadow, bytes);
            tesi_sparse_stamp(world, v->component, slot, false);
            continue;
        }
        const tesi_record_t *r = tesi_record_at(world, v->index);
        const tesi_archetype_t *a = r->chunk->archetype;
        uint32_t type = tesi_type_index(a, v->component);
        if (put_cells(c, a, type, r->chunk, r->row, shadow, true)) {
            tesi_mark_changed(world, r->chunk, type, r->row);
        }
    }
}

/* The checkpoint's numbers, archetypes made since freed, the ring cut back to the checkpoint,
 * the shadow brought to the state written back. */
static void finish(rewind_t *rw) {
    tes_world_t *world = rw->world;
    tesi_rollback_t *rb = rw->rb;
    const tesi_scalars_t *at = &rw->to->at;
    world->record_count = at->record_count;
    world->free_head = at->free_head;
    world->free_tail = at->free_tail;
    world->free_length = at->free_length;
    world->free_stale = at->free_stale;
    world->skipped_count = at->skipped_count;
    world->entity_count = at->entity_count;
    world->replica_tick = at->replica_tick;
    world->replica_source = at->replica_source;
    tesi_archetypes_truncate(world, at->archetype_count, rw->doomed);
    for (uint32_t id = world->archetype_count; id < rw->archetypes; id++) {
        rb->marks[id] = 0;
        if (id < rb->archetype_slots) rb->archetype_counts[id] = 0; /* the id is free again */
    }
    rb->count = rw->to_position + 1;
    rw->to->size = rw->to->values_size = 0;
    rw->to->count_size = 0;
    /* The shadow takes the state written back (the values of the indices that did not move have
     * it: write_values). The indices whose whole image was the shadow's own (moved only since the
     * newest checkpoint) have it already when no earlier value went over it: they go off the list
     * first. Not with relations: putting pairs back may give them other ids, and the shadow's copy
     * of the pair table is by id. The list stays a list of indices from here on, its positions no
     * longer read. */
    const uint8_t *own = rb->scratch.images, *own_end = TESI_PAST(own, rb->scratch.size);
    uint32_t kept = 0;
    for (uint32_t p = 0; p < rw->n; p++) {
        uint32_t index = rb->touched[p];
        const uint8_t *at = rw->image[p].values;
        if (!world->relation_count && at >= own && at < own_end && !rw->overrides[p]) {
            tesi_untouch(rb, index);
        } else {
            rb->touched[kept++] = index;
        }
    }
    rb->touched_count = kept;
    tesi_shadow_update(world, rb, kept);
    /* The registrations made since, newest first, while nothing uses them any more (the
     * archetypes, members and pairs are gone; a query made since may still name one): ids as
     * the straight run hands them out, and snapshots and hashes without them. Their watches
     * are rollback's own, and end first; a component kept gets its watch at the next
     * checkpoint again. */
    rb->components_settled = at->component_count;
    tesi_rollback_unwatch(world, rb, at->component_count);
    for (tes_component_t c = world->component_count; c > at->component_count; c--) {
        if (!tesi_component_take_back(world, c - 1)) break;
    }
    tesi_rollback_settle(world, rb);
}

tes_result_t tes_rewind(tes_world_t *world, uint32_t checkpoint) {
    if (!world || tesi_deferring(world)) return TES_ERR_INVALID_ARGUMENT;
    tesi_rollback_t *rb = world->rollback;
    if (!rb || !rb->count) return TES_ERR_NO_CHECKPOINT;
    uint32_t oldest = tesi_entry_at(rb, 0)->number;
    if (checkpoint < oldest || checkpoint - oldest >= rb->count) return TES_ERR_NO_CHECKPOINT;
    rewind_t rw = {.world = world, .rb = rb, .to_position = checkpoint - oldest};
    rw.to = tesi_entry_at(rb, rw.to_position);
    tes_result_t result = gather(&rw);
    if (result == TES_OK) result = reserve(&rw);
    if (result != TES_OK) {
        /* The indices listed from the entries stay listed: the next checkpoint finds them as
         * the shadow has them, which changes nothing. The marks go. */
        memset(rb->marks, 0, rb->mark_slots);
        if (rw.image) tesi_free(world, (void *)rw.image, rw.block ? rw.block : 1);
        return result;
    }
    note_before(&rw);
    resize_archetypes(&rw);
    write_rows(&rw);
    for (uint32_t s = 0; s < world->sparse_count; s++)
        write_sparse(&rw, s);
    if (world->relation_count) write_pairs(&rw);
    write_values(&rw);
    finish(&rw);
    tesi_free(world, (void *)rw.image, rw.block ? rw.block : 1);
    return TES_OK;
}
