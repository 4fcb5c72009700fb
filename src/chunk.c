/* Chunks: fixed-size blocks of rows. Rows are taken from the archetype's first non-full chunk
 * and given back by swap-remove from the archetype's very last row, so every chunk but the
 * last stays full (the packing invariant) and the first non-full chunk is always
 * chunks[entity_count / capacity]. Emptied chunks go to the world's pool for reuse. */
#include "internal.h"
#include "row.h"

/* A chunk for the archetype: from the pool when its block is the standard size, else new. */
static tesi_chunk_t *chunk_acquire(tes_world_t *world, const tesi_archetype_t *a) {
    bool standard = a->block_bytes == world->chunk_bytes;
    if (standard && world->pool_count) return world->pool[--world->pool_count];
    /* The pool must be able to take back every standard chunk without allocating. */
    if (standard && tesi_reserve(world, (void **)&world->pool, &world->pool_slots,
                                 world->chunks_made + 1, sizeof *world->pool, 16) != TES_OK) {
        return NULL;
    }
    tesi_chunk_t *chunk = tesi_alloc(world, sizeof *chunk);
    uint8_t *data = chunk ? tesi_alloc(world, a->block_bytes) : NULL;
    if (!data) {
        tesi_free(world, chunk, sizeof *chunk);
        return NULL;
    }
    *chunk = (tesi_chunk_t){.data = data, .block_bytes = a->block_bytes};
    world->chunks_made += standard;
    return chunk;
}

void tesi_chunk_destroy(tes_world_t *world, tesi_chunk_t *chunk) {
    tesi_trackers_detach(world, chunk);
    world->chunks_made -= tesi_chunk_standard(world, chunk);
    tesi_free(world, chunk->data, chunk->block_bytes);
    tesi_free(world, chunk, sizeof *chunk);
}

bool tesi_chunk_add_pooled(tes_world_t *world, tesi_archetype_t *a) {
    /* A standard block of the pool, no tracker to attach, room in the chunk list: a pop and an
     * append (the per-entity moves of an add and a remove that empty and refill an archetype
     * take this path every time). */
    if (!world->pool_count || a->block_bytes != world->chunk_bytes || a->tracked_count ||
        a->chunk_count == a->chunk_slots) {
        return false;
    }
    tesi_chunk_t *chunk = world->pool[--world->pool_count];
    chunk->archetype = a;
    chunk->index = a->chunk_count;
    chunk->count = 0;
    a->chunks[a->chunk_count++] = chunk;
    world->chunk_count++;
    return true;
}

tes_result_t tesi_chunks_grow(tes_world_t *world, tesi_archetype_t *a, uint32_t rows) {
    uint64_t needed = ((uint64_t)a->entity_count + rows + a->capacity - 1) / a->capacity;
    if (needed <= a->chunk_count) return TES_OK;
    if (needed > UINT32_MAX) return TES_ERR_OUT_OF_MEMORY;
    tes_result_t result = tesi_reserve(world, (void **)&a->chunks, &a->chunk_slots,
                                       (uint32_t)needed, sizeof *a->chunks, 4);
    if (result != TES_OK) return result;
    uint32_t first_new = a->chunk_count;
    while (a->chunk_count < needed) {
        tesi_chunk_t *chunk = chunk_acquire(world, a);
        if (chunk) {
            chunk->archetype = a;
            chunk->index = a->chunk_count;
            chunk->count = 0;
            a->chunks[a->chunk_count++] = chunk;
            world->chunk_count++;
        }
        if (!chunk || tesi_trackers_attach(world, chunk) != TES_OK) {
            /* All or nothing: give back what this call took. */
            while (a->chunk_count > first_new)
                tesi_chunk_drop_last(world, a);
            return TES_ERR_OUT_OF_MEMORY;
        }
    }
    return TES_OK;
}

void tesi_chunks_trim(tes_world_t *world, tesi_archetype_t *a) {
    /* Called after tesi_remove_row or a whole-archetype move, which bumped world->layout. */
    while (a->chunk_count && a->chunks[a->chunk_count - 1]->count == 0)
        tesi_chunk_drop_last(world, a);
}

uint32_t tesi_chunk_take_rows(tes_world_t *world, tesi_archetype_t *a, uint32_t want,
                              tesi_chunk_t **out_chunk, uint32_t *out_row) {
    world->layout++;
    tesi_chunk_t *chunk = a->chunks[a->entity_count / a->capacity];
    uint32_t run = a->capacity - chunk->count;
    if (run > want) run = want;
    *out_chunk = chunk;
    *out_row = chunk->count;
    chunk->count += run;
    a->entity_count += run;
    return run;
}

/* Pairs dst's columns with src's (both sorted by key, one merge walk) and copies `n` rows of
 * each shared column; zeroes dst columns src lacks. When the archetypes differ only in tags
 * every key matches and the walk never searches. */
static void copy_columns(tesi_chunk_t *dst, uint32_t dst_row, const tesi_chunk_t *src,
                         uint32_t src_row, uint32_t n) {
    /* By index: an archetype without columns (tags only) has a NULL column array, and even
     * NULL + 0 is undefined behaviour. */
    const tesi_archetype_t *da = dst->archetype, *sa = src->archetype;
    for (uint32_t d = 0, s = 0; d < da->column_count; d++) {
        const tesi_column_t *dc = &da->columns[d];
        while (s < sa->column_count && sa->columns[s].key < dc->key)
            s++;
        uint8_t *cell = tesi_cell(dst, dc, dst_row);
        if (s < sa->column_count && sa->columns[s].key == dc->key) {
            const uint8_t *from = tesi_cell(src, &sa->columns[s], src_row);
            if (n == 1) {
                tesi_copy_cell(cell, from, dc->bytes);
            } else {
                memcpy(cell, from, (size_t)n * dc->bytes);
            }
        } else {
            memset(cell, 0, (size_t)n * dc->bytes);
        }
    }
}

/* ---- move plans ---------------------------------------------------------------------------- */

static size_t plan_bytes(uint32_t moves) {
    return sizeof(tesi_move_plan_t) + (size_t)moves * sizeof(tesi_move_t);
}

tesi_move_plan_t *tesi_move_plan_make(tes_world_t *world, const tesi_archetype_t *dst,
                                      const tesi_archetype_t *src) {
    tesi_move_plan_t *plan = tesi_alloc(world, plan_bytes(dst->column_count));
    if (!plan) return NULL;
    *plan = (tesi_move_plan_t){0};
    /* Counted by group first, then each cell written at its group's next place. The columns are
     * sorted by key in both archetypes: one merge walk pairs them. By index: an archetype without
     * columns has a NULL array (and NULL + 0 is undefined behaviour). */
    for (int pass = 0; pass < 2; pass++) {
        uint32_t at[4] = {0, plan->n4, plan->n4 + plan->n8, plan->n4 + plan->n8 + plan->other};
        for (uint32_t d = 0, s = 0; d < dst->column_count; d++) {
            const tesi_column_t *dc = &dst->columns[d];
            while (s < src->column_count && src->columns[s].key < dc->key)
                s++;
            bool shared = s < src->column_count && src->columns[s].key == dc->key;
            uint32_t group = !shared ? 3 : dc->bytes == 4 ? 0 : dc->bytes == 8 ? 1 : 2;
            if (pass == 0) {
                uint16_t *counts[4] = {&plan->n4, &plan->n8, &plan->other, &plan->zero};
                (*counts[group])++;
                continue;
            }
            plan->moves[at[group]++] = (tesi_move_t){
                dc->offset, shared ? src->columns[s].offset : TESI_NEW_COLUMN, dc->bytes};
        }
    }
    plan->wide = (plan->n8 | plan->other | plan->zero) != 0;
    return plan;
}

void tesi_move_plan_free(tes_world_t *world, tesi_move_plan_t *plan) {
    if (plan) tesi_free(world, plan, plan_bytes(plan->n4 + plan->n8 + plan->other + plan->zero));
}

void tesi_copy_rows(tes_world_t *world, tesi_chunk_t *dst, uint32_t dst_row,
                    const tesi_chunk_t *src, uint32_t src_row, uint32_t n) {
    if (n != 1 || dst->archetype != src->archetype) {
        memcpy(tesi_chunk_entities(dst) + dst_row, tesi_chunk_entities(src) + src_row,
               (size_t)n * sizeof(tes_entity_t));
        copy_columns(dst, dst_row, src, src_row, n);
    } else {
        tesi_chunk_entities(dst)[dst_row] = tesi_chunk_entities(src)[src_row];
        tesi_move_cells(dst->data, dst_row, src->data, src_row, dst->archetype->self);
    }
    if (dst->archetype->tracked_count) tesi_trackers_copy(world, dst, dst_row, src, src_row, n);
}

void tesi_zero_rows(tesi_chunk_t *chunk, uint32_t row, uint32_t n) {
    const tesi_archetype_t *a = chunk->archetype;
    if (n == 1 && a->self) {
        tesi_zero_row(chunk, row);
        return;
    }
    for (uint32_t i = 0; i < a->column_count; i++) {
        const tesi_column_t *c = &a->columns[i];
        uint8_t *cell = tesi_cell(chunk, c, row);
        if (n == 1 && c->bytes == 4) {
            memset(cell, 0, 4); /* one store: the common single spawn of a 4-byte field */
        } else {
            memset(cell, 0, (size_t)n * c->bytes);
        }
    }
}
