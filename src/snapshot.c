/* Snapshots: a whole world as bytes (docs/format.md), and a new world restored from them with
 * the same handles, components, values, sparse memberships and pairs. Writing walks the
 * storage once; restoring builds a fresh world while it reads, checking every count, id and
 * handle against what it has read so far, and destroys that world on the first problem, so bad
 * bytes never touch an existing world. */
#include "internal.h"

#define SNAPSHOT_MAGIC   0x504E5354u /* "TSNP" little-endian */
#define SNAPSHOT_VERSION 2u
#define HEADER_BYTES     16u
#define LIVE_BIT         0x80000000u /* on a record's row while restoring: live, not placed yet */

/* The states of an index in the entity table section (docs/format.md). */
enum { INDEX_FREE, INDEX_LIVE, INDEX_SKIPPED, INDEX_STATES };

/* ---- writing ------------------------------------------------------------------------------- */

void tesi_put(tesi_writer_t *w, const void *bytes, size_t n) {
    if (!n) return;                 /* (and no memcpy from a NULL array of none) */
    if (w->size + n <= *w->slots) { /* the common case, without a call */
        memcpy(*w->buffer + w->size, bytes, n);
        w->size += (uint32_t)n;
        return;
    }
    if (w->hash) { /* tes_world_hash: a slot count of 0 sends every put here */
        tesi_hash_put(w->hash, bytes, n);
        w->size += (uint32_t)n;
        return;
    }
    if (w->result != TES_OK) return;
    if ((uint64_t)w->size + n > UINT32_MAX / 2) {
        w->result = TES_ERR_OUT_OF_MEMORY;
        return;
    }
    w->result =
        tesi_reserve(w->world, (void **)w->buffer, w->slots, w->size + (uint32_t)n, 1, 4096);
    if (w->result != TES_OK) return;
    memcpy(*w->buffer + w->size, bytes, n);
    w->size += (uint32_t)n;
}

/* Integers are little-endian in the format, and copied as they are: wasm is little-endian, and
 * so is every native target the tests run on (a big-endian host would need byte swaps here). */
void tesi_put_u32(tesi_writer_t *w, uint32_t v) {
    tesi_put(w, &v, 4);
}

/* A varint written at `out` (room for TESI_VARINT_MAX): the byte after it. */
static uint8_t *varint_to(uint8_t *out, uint64_t v) {
    for (; v >= 0x80; v >>= 7)
        *out++ = (uint8_t)(v | 0x80);
    *out++ = (uint8_t)v;
    return out;
}

void tesi_put_varint(tesi_writer_t *w, uint64_t v) {
    uint8_t bytes[TESI_VARINT_MAX];
    tesi_put(w, bytes, (uint32_t)(varint_to(bytes, v) - bytes));
}

static void put_name(tesi_writer_t *w, const char *name) {
    uint32_t n = (uint32_t)strlen(name);
    tesi_put_u32(w, n);
    tesi_put(w, name, n);
}

void tesi_put_schema(tesi_writer_t *w, const tesi_component_t *c) {
    tesi_put_u32(w, c->flags);
    put_name(w, c->name);
    tesi_put_u32(w, c->field_count);
    for (uint32_t f = 0; f < c->field_count; f++) {
        put_name(w, c->fields[f].name);
        tesi_put_u32(w, c->fields[f].type);
        tesi_put_u32(w, c->fields[f].length);
    }
}

static void write_components(tesi_writer_t *w) {
    const tes_world_t *world = w->world;
    tesi_put_u32(w, world->component_count);
    for (uint32_t i = 0; i < world->component_count; i++)
        tesi_put_schema(w, &world->components[i]);
}

/* A record's state and generation as the entity table section lists them (NULL: a skipped
 * index of a page never allocated). */
static uint32_t record_state(const tesi_record_t *record, uint32_t *out_generation) {
    *out_generation = 0;
    if (!record || (record->row & TESI_ROW_SKIPPED)) return INDEX_SKIPPED;
    *out_generation = tesi_generation(record);
    return record->chunk ? INDEX_LIVE : INDEX_FREE;
}

/* A run of the entity table: its length and state, and the generation of a run not skipped. */
static void put_run(tesi_writer_t *w, uint32_t length, uint32_t state, uint32_t generation) {
    tesi_put_varint(w, length << 2 | state);
    if (state != INDEX_SKIPPED) tesi_put_varint(w, generation);
}

/* Runs of indices alike (state and generation), then the free queue as runs of consecutive
 * indices: after a peak, the long stretches of free indices a few bytes each (O(live + runs),
 * not O(indices ever used)). */
static void write_entities(tesi_writer_t *w) {
    tes_world_t *world = w->world;
    tesi_free_queue(world);
    tesi_put_varint(w, world->record_count);
    uint32_t run_state = 0, run_generation = 0, run_length = 0;
    /* Page by page: a page's records are one array (a lookup per index was most of
     * tes_world_hash's instructions), and an unallocated page is one step. */
    for (uint32_t index = 1; index < world->record_count;) {
        uint32_t next = (index | TESI_PAGE_MASK) + 1;
        uint32_t end = next < world->record_count ? next : world->record_count;
        const tesi_record_t *record = tesi_record_find(world, index);
        while (index < end) {
            uint32_t generation, state = record_state(record, &generation), n = end - index;
            if (record) { /* the records after it alike, in a tight loop: most of a table */
                uint32_t g;
                for (n = 1; index + n < end; n++)
                    if (record_state(record + n, &g) != state || g != generation) break;
            }
            if (run_length && (state != run_state || generation != run_generation)) {
                put_run(w, run_length, run_state, run_generation);
                run_length = 0;
            }
            run_state = state;
            run_generation = generation;
            run_length += n;
            index += n;
            if (record) record += n;
        }
    }
    if (run_length) put_run(w, run_length, run_state, run_generation);
    /* The queue, oldest first: each run is `first` (as the step from the previous run's last
     * index, zigzag) and its length - 1 with the direction (1: descending) in the low bit.
     * Runs are as long as they go, so every queue has one encoding. */
    tesi_put_varint(w, world->free_length);
    uint32_t last = 0;
    for (uint32_t k = 0, index = world->free_head; k < world->free_length;) {
        uint32_t first = index, length = 1, down = 0;
        index = tesi_record_at(world, index)->row; /* (the tail's link is 0, never followed) */
        k++;
        /* The second index sets the direction; the run lasts while the queue keeps to it. */
        if (k < world->free_length && index + 1 == first) down = 1;
        while (k < world->free_length && index == (down ? first - length : first + length)) {
            index = tesi_record_at(world, index)->row;
            k++;
            length++;
        }
        int64_t step = (int64_t)first - last;
        tesi_put_varint(w, tesi_zigzag(step));
        tesi_put_varint(w, (length - 1) << 1 | down);
        last = down ? first - (length - 1) : first + (length - 1);
    }
}

static void write_archetypes(tesi_writer_t *w) {
    const tes_world_t *world = w->world;
    uint32_t used = 0;
    for (uint32_t i = 0; i < world->archetype_count; i++)
        used += world->archetypes[i] && world->archetypes[i]->entity_count > 0;
    tesi_put_u32(w, used);
    for (uint32_t i = 0; i < world->archetype_count; i++) {
        const tesi_archetype_t *a = world->archetypes[i];
        if (!a || !a->entity_count) continue;
        tesi_put_u32(w, a->component_count);
        tesi_put(w, a->components, a->component_count * sizeof *a->components);
        tesi_put_u32(w, a->entity_count);
        for (uint32_t k = 0; k < a->chunk_count; k++) {
            const tesi_chunk_t *chunk = a->chunks[k];
            tesi_put(w, tesi_chunk_entities(chunk), chunk->count * sizeof(tes_entity_t));
        }
        /* Column by column, in the archetype's column order (component, then field). */
        for (uint32_t col = 0; col < a->column_count; col++) {
            const tesi_column_t *column = &a->columns[col];
            for (uint32_t k = 0; k < a->chunk_count; k++) {
                const tesi_chunk_t *chunk = a->chunks[k];
                tesi_put(w, tesi_cell(chunk, column, 0), (size_t)chunk->count * column->bytes);
            }
        }
    }
}

/* Row i of a sparse set's or a relation's data (NULL data and stride 0 for tags and relations
 * without fields: no arithmetic on the null pointer). */
uint8_t *tesi_row_at(uint8_t *base, uint32_t i, uint32_t stride) {
    return stride ? base + (size_t)i * stride : base;
}

/* A sparse member's or a pair's fields, packed (no alignment padding). */
void tesi_put_row(tesi_writer_t *w, const tesi_component_t *c, const uint8_t *row) {
    for (uint32_t f = 0; f < c->field_count; f++)
        tesi_put(w, row + c->fields[f].offset, c->fields[f].bytes);
}

static void write_sparse(tesi_writer_t *w) {
    const tes_world_t *world = w->world;
    for (uint32_t i = 0; i < world->component_count; i++) {
        const tesi_component_t *c = &world->components[i];
        if (!tesi_is_sparse(c) || tesi_is_relation(c)) continue;
        tesi_put_u32(w, c->sparse.count);
        for (uint32_t m = 0; m < c->sparse.count; m++) {
            tesi_put_u32(w, c->sparse.entities[m]);
            tesi_put_row(w, c, tesi_row_at(c->sparse.data, m, c->stride));
        }
    }
}

static void write_relations(tesi_writer_t *w) {
    const tes_world_t *world = w->world;
    for (uint32_t i = 0; i < world->component_count; i++) {
        const tesi_component_t *c = &world->components[i];
        if (!tesi_is_relation(c)) continue;
        const tesi_relation_t *r = &c->relation;
        /* Sources in membership order, each with its targets in order and the pair data. */
        tesi_put_u32(w, c->sparse.count);
        for (uint32_t m = 0; m < c->sparse.count; m++) {
            tes_entity_t source = c->sparse.entities[m];
            const tesi_list_t *out = tesi_list_of(r, TESI_OUT, source);
            tesi_put_u32(w, source);
            tesi_put_u32(w, out->count);
            for (uint32_t id = out->first; id; id = r->pairs[id - 1].next[TESI_OUT]) {
                tesi_put_u32(w, r->pairs[id - 1].target);
                tesi_put_row(w, c, tesi_row_at(r->data, id - 1, c->stride));
            }
        }
        /* Then every target with more than one source, with its sources in order: relinking the
         * pairs source by source gives each source its targets in order, not each target its
         * sources (tes_pair_place, and the order pairs were added in across sources). */
        uint32_t reordered = 0;
        for (uint32_t index = tesi_next_ordered_target(r, 1); index < TESI_INDEX_LIMIT;
             index = tesi_next_ordered_target(r, index + 1)) {
            reordered++;
        }
        tesi_put_u32(w, reordered);
        for (uint32_t index = tesi_next_ordered_target(r, 1); index < TESI_INDEX_LIMIT;
             index = tesi_next_ordered_target(r, index + 1)) {
            const tesi_list_t *in = tesi_paged_at(&r->lists[TESI_IN], index, sizeof *in);
            tesi_put_u32(w, r->pairs[in->first - 1].target);
            tesi_put_u32(w, in->count);
            for (uint32_t id = in->first; id; id = r->pairs[id - 1].next[TESI_IN])
                tesi_put_u32(w, r->pairs[id - 1].source);
        }
    }
}

/* Sections 1 to 5, what follows the header. Kept out of line: tes_snapshot and tes_world_hash
 * both write it, and inlined into each it made the module 0.5 KB larger. */
static __attribute__((noinline)) void write_body(tesi_writer_t *w) {
    write_components(w);
    write_entities(w);
    write_archetypes(w);
    write_sparse(w);
    write_relations(w);
}

tes_result_t tes_snapshot(tes_world_t *world, const uint8_t **out_bytes, uint32_t *out_size) {
    if (!world || !out_bytes || !out_size) return TES_ERR_INVALID_ARGUMENT;
    /* Deferred commands and pending entities are not part of any state a snapshot can name. */
    if (tesi_deferring(world)) return TES_ERR_INVALID_ARGUMENT;
    tesi_writer_t w = {world, &world->snapshot, &world->snapshot_slots, 0, TES_OK};
    uint32_t header[4] = {SNAPSHOT_MAGIC, SNAPSHOT_VERSION, 0, 0};
    tesi_put(&w, header, sizeof header);
    write_body(&w);
    if (w.result != TES_OK) return w.result;
    uint32_t size = w.size, crc = tesi_crc32(world->snapshot + HEADER_BYTES, size - HEADER_BYTES);
    memcpy(world->snapshot + 8, &size, 4);
    memcpy(world->snapshot + 12, &crc, 4);
    *out_bytes = world->snapshot;
    *out_size = size;
    return TES_OK;
}

tes_result_t tes_world_hash(tes_world_t *world, uint64_t *out_hash) {
    if (out_hash) *out_hash = 0;
    if (!world || !out_hash) return TES_ERR_INVALID_ARGUMENT;
    /* As tes_snapshot: a run's deferred changes are in no state yet. */
    if (tesi_deferring(world)) return TES_ERR_INVALID_ARGUMENT;
    /* The snapshot's body, as tes_snapshot writes it after the header, streamed into XXH64. */
    tesi_hash_t hash;
    tesi_hash_init(&hash);
    uint32_t no_slots = 0;
    tesi_writer_t w = {world, NULL, &no_slots, 0, TES_OK, &hash};
    write_body(&w);
    if (w.result != TES_OK) return w.result;
    *out_hash = tesi_hash_final(&hash);
    return TES_OK;
}

void tesi_snapshot_fini(tes_world_t *world) {
    tesi_free(world, world->snapshot, world->snapshot_slots);
}

/* ---- restoring ----------------------------------------------------------------------------- */

bool tesi_take(tesi_reader_t *r, void *out, uint32_t n) {
    if (r->result != TES_OK || n > r->size - r->at) {
        if (r->result == TES_OK) r->result = r->bad;
        if (out && n) memset(out, 0, n);
        return false;
    }
    if (out) memcpy(out, r->bytes + r->at, n);
    r->at += n;
    return true;
}

uint32_t tesi_get_u32(tesi_reader_t *r) {
    uint32_t v = 0;
    tesi_take(r, &v, 4);
    return v;
}

uint64_t tesi_get_varint64(tesi_reader_t *r) {
    uint64_t v = 0;
    for (uint32_t shift = 0;; shift += 7) {
        uint8_t byte;
        if (!tesi_take(r, &byte, 1)) return 0;
        /* The tenth byte holds bit 63 only; a last byte of 0 after others is a longer form of a
         * shorter value. */
        if ((shift == 63 && byte > 1) || (shift && byte == 0)) {
            tesi_fail(r, r->bad);
            return 0;
        }
        v |= (uint64_t)(byte & 0x7F) << shift;
        if (!(byte & 0x80)) return v;
    }
}

uint32_t tesi_get_varint(tesi_reader_t *r) {
    uint64_t v = tesi_get_varint64(r);
    if (v > UINT32_MAX) {
        tesi_fail(r, r->bad);
        return 0;
    }
    return (uint32_t)v;
}

/* Reads `n` items of `size` bytes without copying: a pointer into the bytes, or NULL when they
 * are not all there. */
const uint8_t *tesi_span(tesi_reader_t *r, uint32_t n, uint32_t size) {
    if ((uint64_t)n * size > r->size - r->at) {
        tesi_take(r, NULL, r->size); /* records the problem */
        return NULL;
    }
    const uint8_t *at = r->bytes + r->at;
    r->at += n * size;
    return at;
}

void tesi_fail(tesi_reader_t *r, tes_result_t result) {
    if (r->result == TES_OK) r->result = result;
}

/* A name as a C string in `buffer` (names are at most TES_MAX_NAME_LENGTH bytes, no NUL). */
static void get_name(tesi_reader_t *r, char *buffer) {
    uint32_t n = tesi_get_u32(r);
    const uint8_t *name = n <= TES_MAX_NAME_LENGTH ? tesi_span(r, n, 1) : NULL;
    if (!name || memchr(name, 0, n)) {
        tesi_fail(r, r->bad);
        buffer[0] = 0;
        return;
    }
    memcpy(buffer, name, n);
    buffer[n] = 0;
}

void tesi_get_schema(tesi_reader_t *r, tesi_schema_t *out) {
    uint32_t flags = tesi_get_u32(r);
    get_name(r, out->name);
    uint32_t field_count = tesi_get_u32(r);
    if (field_count > TES_MAX_FIELDS) tesi_fail(r, r->bad);
    for (uint32_t f = 0; f < field_count && r->result == TES_OK; f++) {
        get_name(r, out->field_names[f]);
        out->fields[f] =
            (tes_field_desc_t){out->field_names[f], (tes_type_t)tesi_get_u32(r), tesi_get_u32(r)};
        /* The writer writes the registered length, at least 1: 0 (which registration would
         * read as 1) would not write back the same bytes. */
        if (out->fields[f].length == 0) tesi_fail(r, r->bad);
    }
    out->desc = (tes_component_desc_t){out->name, out->fields, field_count, flags};
}

bool tesi_schema_equal(const tesi_component_t *c, const tes_component_desc_t *desc) {
    if (c->flags != desc->flags || c->field_count != desc->field_count) return false;
    for (uint32_t f = 0; f < c->field_count; f++) {
        const tesi_field_t *field = &c->fields[f];
        if (strcmp(field->name, desc->fields[f].name) || field->type != desc->fields[f].type ||
            field->length != desc->fields[f].length) {
            return false;
        }
    }
    return true;
}

static void read_components(tesi_reader_t *r, tes_world_t *world) {
    uint32_t count = tesi_get_u32(r);
    if (count > TES_MAX_COMPONENTS) tesi_fail(r, TES_ERR_BAD_SNAPSHOT);
    tesi_schema_t *schema = tesi_alloc(world, sizeof *schema);
    if (!schema) tesi_fail(r, TES_ERR_OUT_OF_MEMORY);
    for (uint32_t i = 0; i < count && r->result == TES_OK; i++) {
        tesi_get_schema(r, schema);
        if (r->result != TES_OK) break;
        tes_component_t id;
        tes_result_t result = tes_component_register(world, &schema->desc, &id);
        /* A schema tes_component_register refuses is bad bytes here, not a bad argument. */
        if (result != TES_OK) {
            tesi_fail(r, result == TES_ERR_OUT_OF_MEMORY ? result : TES_ERR_BAD_SNAPSHOT);
        }
    }
    tesi_free(world, schema, sizeof *schema);
}

/* The entity table: runs of indices alike (free, live or skipped, with their generation), then
 * the free queue as runs of consecutive indices. Live records stay unplaced (chunk NULL, row
 * LIVE_BIT) until an archetype section names them. What is allocated is the table these bytes
 * describe: record pages for the free and live indices, none for skipped ones. Every encoding
 * is the one tes_snapshot writes (shortest varints, runs as long as they go): anything else is
 * refused, so what is accepted writes back byte for byte. */
static void read_entities(tesi_reader_t *r, tes_world_t *world) {
    uint32_t count = tesi_get_varint(r);
    if (r->result != TES_OK || count == 0 || count > TESI_INDEX_LIMIT) {
        tesi_fail(r, TES_ERR_BAD_SNAPSHOT);
        return;
    }
    tes_result_t covered = tesi_paged_cover(world, &world->records, count);
    if (covered != TES_OK) {
        tesi_fail(r, covered);
        return;
    }
    world->record_count = count;
    uint32_t free_total = 0, previous_state = INDEX_STATES, previous_generation = 0;
    for (uint32_t index = 1; index < count && r->result == TES_OK;) {
        uint32_t word = tesi_get_varint(r), state = word & 3, length = word >> 2;
        uint32_t generation = state != INDEX_SKIPPED ? tesi_get_varint(r) : 0;
        if (r->result != TES_OK || state >= INDEX_STATES || length == 0 || length > count - index ||
            generation > TESI_GENERATION_MASK ||
            (state == previous_state && generation == previous_generation)) {
            tesi_fail(r, TES_ERR_BAD_SNAPSHOT);
            return;
        }
        previous_state = state;
        previous_generation = generation;
        if (state == INDEX_SKIPPED) {
            world->skipped_count += length;
            tesi_mark_skipped(world, index, index + length);
        } else {
            tes_result_t result = tesi_table_reserve(world, index, index + length);
            if (result != TES_OK) {
                tesi_fail(r, result);
                return;
            }
            for (uint32_t i = index; i < index + length; i++) {
                *tesi_record_at(world, i) = (tesi_record_t){
                    .row = state == INDEX_LIVE ? LIVE_BIT : 0, .generation = generation};
            }
            free_total += state == INDEX_FREE ? length : 0;
        }
        index += length;
    }
    uint32_t free_length = tesi_get_varint(r);
    if (r->result == TES_OK && free_length != free_total) tesi_fail(r, TES_ERR_BAD_SNAPSHOT);
    uint32_t last = 0, last_length = 0, last_down = 0;
    for (uint32_t k = 0; k < free_length && r->result == TES_OK;) {
        uint32_t zigzag = tesi_get_varint(r), word = tesi_get_varint(r), down = word & 1;
        int64_t first = (int64_t)last + tesi_unzigzag(zigzag);
        uint64_t length = (uint64_t)(word >> 1) + 1;
        int64_t end = down ? first - (int64_t)(length - 1) : first + (int64_t)(length - 1);
        /* Within the table and the queue's length; a run of one has no direction; the previous
         * run would have taken this one's first index if it continued it. */
        bool continues = last_length > 1 ? first == (int64_t)last + (last_down ? -1 : 1)
                                         : last_length && (first == (int64_t)last + 1 ||
                                                           first == (int64_t)last - 1);
        if (r->result != TES_OK || length > free_length - k || (length == 1 && down) || continues ||
            first < 1 || first >= count || end < 1 || end >= count) {
            tesi_fail(r, TES_ERR_BAD_SNAPSHOT);
            break;
        }
        for (uint64_t j = 0; j < length; j++) {
            uint32_t index = (uint32_t)(down ? first - (int64_t)j : first + (int64_t)j);
            tesi_record_t *record = tesi_record_find(world, index);
            /* A free index once: the mark on its row says it is queued already (live and
             * skipped records have a row too). */
            if (!record || record->row) {
                tesi_fail(r, TES_ERR_BAD_SNAPSHOT);
                break;
            }
            record->row = TESI_ROW_MARK;
            if (world->free_length++) {
                tesi_record_at(world, world->free_tail)->row = index | TESI_ROW_MARK;
            } else {
                world->free_head = index;
            }
            world->free_tail = index;
        }
        k += (uint32_t)length;
        last = (uint32_t)end;
        last_length = (uint32_t)length;
        last_down = down;
    }
    /* The links keep the mark until now so that a repeated index is caught; drop it. */
    for (uint32_t k = 0, index = world->free_head; k < world->free_length; k++) {
        tesi_record_t *record = tesi_record_at(world, index);
        uint32_t next = record->row & ~TESI_ROW_MARK;
        record->row = k + 1 < world->free_length ? next : 0;
        index = next;
    }
}

/* Places n live entities (handles in `handles`) into the archetype and fills their columns. */
static void place(tesi_reader_t *r, tes_world_t *world, tesi_archetype_t *a, const uint8_t *handles,
                  uint32_t n) {
    tes_result_t result = tesi_chunks_reserve(world, a, n);
    if (result != TES_OK) {
        tesi_fail(r, result);
        return;
    }
    for (uint32_t done = 0; done < n && r->result == TES_OK;) {
        tesi_chunk_t *chunk;
        uint32_t row;
        uint32_t run = tesi_chunk_take_rows(world, a, n - done, &chunk, &row);
        for (uint32_t k = 0; k < run; k++) {
            tes_entity_t e;
            memcpy(&e, handles + (size_t)(done + k) * 4, 4);
            uint32_t index = e & TESI_INDEX_MASK;
            tesi_record_t *record =
                index && index < world->record_count ? tesi_record_find(world, index) : NULL;
            /* Live, not placed yet, and the generation the table gave it. */
            if (!record || record->row != LIVE_BIT || record->chunk ||
                tesi_generation(record) != (e >> TES_INDEX_BITS) || e >= (1u << 30)) {
                tesi_fail(r,
                          TES_ERR_BAD_SNAPSHOT); /* the world is torn down: rows need not add up */
                return;
            }
            record->chunk = chunk;
            record->row = row + k;
            tesi_chunk_entities(chunk)[row + k] = e;
            world->entity_count++;
        }
        done += run;
    }
    /* Column data, in the archetype's column order. The archetype was empty, so its chunks
     * hold exactly these entities in this order: each column is one copy per chunk. */
    for (uint32_t col = 0; col < a->column_count && r->result == TES_OK; col++) {
        const tesi_column_t *column = &a->columns[col];
        const uint8_t *data = tesi_span(r, n, column->bytes);
        for (uint32_t k = 0, first = 0; data && k < a->chunk_count; k++) {
            const tesi_chunk_t *chunk = a->chunks[k];
            memcpy(tesi_cell(chunk, column, 0), data + (size_t)first * column->bytes,
                   (size_t)chunk->count * column->bytes);
            first += chunk->count;
        }
    }
}

static void read_archetypes(tesi_reader_t *r, tes_world_t *world) {
    uint32_t count = tesi_get_u32(r);
    for (uint32_t i = 0; i < count && r->result == TES_OK; i++) {
        uint32_t set_count = tesi_get_u32(r);
        const uint8_t *set =
            set_count <= world->component_count ? tesi_span(r, set_count, 4) : NULL;
        /* The empty set's archetype is every world's first: it can only be listed first. */
        if (!set || (i && !set_count)) {
            tesi_fail(r, TES_ERR_BAD_SNAPSHOT);
            return;
        }
        /* Sorted, known, no duplicates, chunk components only. */
        tes_component_t ids[TES_MAX_COMPONENTS];
        memcpy(ids, set, (size_t)set_count * 4);
        for (uint32_t k = 0; k < set_count; k++) {
            if (ids[k] >= world->component_count || (k && ids[k] <= ids[k - 1]) ||
                tesi_is_sparse(&world->components[ids[k]])) {
                tesi_fail(r, TES_ERR_BAD_SNAPSHOT);
                return;
            }
        }
        tes_result_t result = tesi_sort_set(world, ids, set_count);
        tesi_archetype_t *a = NULL;
        if (result == TES_OK) result = tesi_archetype_ensure(world, set_count, &a);
        if (result != TES_OK) {
            tesi_fail(r, result);
            return;
        }
        uint32_t n = tesi_get_u32(r);
        /* Each archetype once, with entities: what tes_snapshot writes. */
        if (n == 0 || a->entity_count) {
            tesi_fail(r, TES_ERR_BAD_SNAPSHOT);
            return;
        }
        const uint8_t *handles = tesi_span(r, n, 4);
        if (handles) place(r, world, a, handles, n);
    }
    /* Every live index was placed exactly once. */
    uint32_t live = 0;
    for (uint32_t i = 1; i < world->record_count; i++) {
        const tesi_record_t *record = tesi_record_find(world, i);
        if (!record) {
            i |= TESI_PAGE_MASK; /* skipped, all of the page */
            continue;
        }
        live += record->chunk != NULL || record->row == LIVE_BIT;
    }
    if (r->result == TES_OK && live != world->entity_count) tesi_fail(r, TES_ERR_BAD_SNAPSHOT);
}

/* A sparse member's or a pair's fields from their packed form; integers and floats are stored
 * as they are, which tes_set would take too. */
bool tesi_get_row(tesi_reader_t *r, const tesi_component_t *c, uint8_t *row) {
    for (uint32_t f = 0; f < c->field_count; f++) {
        if (!tesi_take(r, row + c->fields[f].offset, c->fields[f].bytes)) return false;
    }
    return true;
}

/* A handle in the bytes that must name a placed entity. */
static bool alive(tesi_reader_t *r, const tes_world_t *world, tes_entity_t e) {
    if (tesi_record_of(world, e)) return true;
    tesi_fail(r, TES_ERR_BAD_SNAPSHOT);
    return false;
}

static void read_sparse(tesi_reader_t *r, tes_world_t *world) {
    for (tes_component_t id = 0; id < world->component_count && r->result == TES_OK; id++) {
        const tesi_component_t *c = &world->components[id];
        if (!tesi_is_sparse(c) || tesi_is_relation(c)) continue;
        uint32_t n = tesi_get_u32(r);
        if (n > world->entity_count) tesi_fail(r, TES_ERR_BAD_SNAPSHOT);
        for (uint32_t m = 0; m < n && r->result == TES_OK; m++) {
            tes_entity_t e = tesi_get_u32(r);
            if (!alive(r, world, e)) return;
            uint32_t index = e & TESI_INDEX_MASK;
            if (tesi_sparse_slot(&c->sparse, index)) {
                tesi_fail(r, TES_ERR_BAD_SNAPSHOT); /* listed twice */
                return;
            }
            /* Member by member: the map gets the pages of the indices named, no others. */
            tes_result_t result = tesi_sparse_reserve(world, id, 1, index, index + 1);
            if (result != TES_OK) {
                tesi_fail(r, result);
                return;
            }
            tesi_sparse_insert(world, id, e);
            tesi_get_row(r, c, tesi_row_at(c->sparse.data, c->sparse.count - 1, c->stride));
        }
    }
}

static void read_relations(tesi_reader_t *r, tes_world_t *world) {
    for (tes_component_t id = 0; id < world->component_count && r->result == TES_OK; id++) {
        tesi_component_t *c = &world->components[id];
        if (!tesi_is_relation(c)) continue;
        uint32_t sources = tesi_get_u32(r);
        if (sources > world->entity_count) tesi_fail(r, TES_ERR_BAD_SNAPSHOT);
        for (uint32_t m = 0; m < sources && r->result == TES_OK; m++) {
            tes_entity_t source = tesi_get_u32(r);
            uint32_t n = tesi_get_u32(r);
            /* A source is listed once, with at least one pair (else it would not be one). */
            if (!alive(r, world, source) || n == 0 ||
                tesi_sparse_slot(&c->sparse, source & TESI_INDEX_MASK)) {
                tesi_fail(r, TES_ERR_BAD_SNAPSHOT);
                return;
            }
            for (uint32_t k = 0; k < n && r->result == TES_OK; k++) {
                tes_entity_t target = tesi_get_u32(r);
                if (!alive(r, world, target)) return;
                bool has = false;
                tes_pair_has(world, source, id, target, &has);
                /* What tes_pair_add would refuse or merge is not what tes_snapshot writes. */
                if (has || (k && (c->flags & TES_RELATION_EXCLUSIVE))) {
                    tesi_fail(r, TES_ERR_BAD_SNAPSHOT);
                    return;
                }
                tes_result_t result = tes_pair_add(world, source, id, target);
                if (result != TES_OK) {
                    tesi_fail(r, result == TES_ERR_OUT_OF_MEMORY ? result : TES_ERR_BAD_SNAPSHOT);
                    return;
                }
                uint32_t pair = tesi_pair_find(world, id, source, target);
                tesi_get_row(r, c, tesi_row_at(c->relation.data, pair - 1, c->stride));
            }
        }
        /* The sources of each target in their order: moved to the end one after another. */
        uint32_t targets = tesi_get_u32(r);
        if (targets > world->entity_count) tesi_fail(r, TES_ERR_BAD_SNAPSHOT);
        uint32_t previous = 0;
        for (uint32_t t = 0; t < targets && r->result == TES_OK; t++) {
            tes_entity_t target = tesi_get_u32(r);
            uint32_t n = tesi_get_u32(r);
            /* As the writer lists them: by index, each once, only those with several sources. */
            bool in_order = (target & TESI_INDEX_MASK) > previous;
            previous = target & TESI_INDEX_MASK;
            if (!alive(r, world, target) || !in_order || n < 2 ||
                n != tesi_list_of(&c->relation, TESI_IN, target)->count) {
                tesi_fail(r, TES_ERR_BAD_SNAPSHOT);
                return;
            }
            const uint8_t *order = tesi_span(r, n, 4);
            for (uint32_t k = 0; order && k < n; k++) {
                tes_entity_t source;
                memcpy(&source, order + (size_t)k * 4, 4);
                if (tes_pair_place(world, source, id, target, 0) != TES_OK) {
                    tesi_fail(r, TES_ERR_BAD_SNAPSHOT);
                    return;
                }
            }
            /* A source named twice leaves another where it was: the list must read as given. */
            uint32_t k = 0;
            const tesi_relation_t *rel = &c->relation;
            for (uint32_t pid = tesi_list_of(rel, TESI_IN, target)->first; order && pid;
                 pid = rel->pairs[pid - 1].next[TESI_IN], k++) {
                tes_entity_t source;
                memcpy(&source, order + (size_t)k * 4, 4);
                if (rel->pairs[pid - 1].source != source) {
                    tesi_fail(r, TES_ERR_BAD_SNAPSHOT);
                    return;
                }
            }
        }
        /* Every target with several sources is listed: one left out would keep the order the
         * relinking gave, and write back with its list (bytes the writer never wrote). */
        const tesi_relation_t *rel = &c->relation;
        uint32_t several = 0;
        for (uint32_t pid = 1; pid <= rel->pair_used && r->result == TES_OK; pid++) {
            const tesi_pair_t *p = &rel->pairs[pid - 1];
            const tesi_list_t *in = p->source ? tesi_list_of(rel, TESI_IN, p->target) : NULL;
            several += in && in->first == pid && in->count > 1;
        }
        if (r->result == TES_OK && several != targets) tesi_fail(r, TES_ERR_BAD_SNAPSHOT);
    }
}

tes_result_t tes_world_restore(const tes_world_desc_t *desc, const uint8_t *bytes, uint32_t size,
                               tes_world_t **out_world) {
    if (!out_world || (size && !bytes)) return TES_ERR_INVALID_ARGUMENT;
    tesi_reader_t r = {bytes, size, 0, TES_OK, TES_ERR_BAD_SNAPSHOT};
    uint32_t header[4];
    if (!tesi_take(&r, header, HEADER_BYTES) || header[0] != SNAPSHOT_MAGIC) {
        return TES_ERR_BAD_SNAPSHOT;
    }
    if ((header[1] & 0xFFFFu) != SNAPSHOT_VERSION) return TES_ERR_SNAPSHOT_VERSION;
    if (header[1] >> 16 || header[2] != size ||
        header[3] != tesi_crc32(bytes + HEADER_BYTES, size - HEADER_BYTES)) {
        return TES_ERR_BAD_SNAPSHOT;
    }
    tes_world_t *world;
    tes_result_t result = tes_world_create(desc, &world);
    if (result != TES_OK) return result;
    read_components(&r, world);
    read_entities(&r, world);
    read_archetypes(&r, world);
    read_sparse(&r, world);
    read_relations(&r, world);
    if (r.result == TES_OK && r.at != size) r.result = TES_ERR_BAD_SNAPSHOT;
    if (r.result == TES_OK && tes_world_validate(world) != TES_OK) r.result = TES_ERR_BAD_SNAPSHOT;
    if (r.result != TES_OK) {
        tes_world_destroy(world);
        return r.result;
    }
    *out_world = world;
    return TES_OK;
}
