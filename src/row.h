/* Moving one row: what every add, remove and despawn of one entity does, inline in its caller.
 * Out of line in chunk.c these were two calls per move whose prologues, epilogues and argument
 * shuffles were 110 of the 621 instructions of a tag's add + remove (callgrind, native -O3 +
 * LTO: 621 -> 512). Also the chunk steps one row needs at the end of an archetype: a row taken
 * without a division, an emptied chunk given back. */
#ifndef TESSERA_ROW_H
#define TESSERA_ROW_H

#include "internal.h"

/* ---- chunks at the end of an archetype: one row taken, an emptied one given back ---------- */

/* True for a block of the world's standard size: the pool takes those back. */
static inline bool tesi_chunk_standard(const tes_world_t *world, const tesi_chunk_t *chunk) {
    return chunk->block_bytes == world->chunk_bytes;
}
/* An emptied chunk out of its archetype: a standard block to the world's pool (which has room
 * for every standard chunk), any other freed. In line: swap-remove gives one back whenever an
 * archetype empties (an add and a remove on an entity alone in it, every time). */
static inline void tesi_chunk_release(tes_world_t *world, tesi_chunk_t *chunk) {
    if (chunk->trackers) tesi_trackers_detach(world, chunk);
    if (!tesi_chunk_standard(world, chunk)) {
        tesi_chunk_destroy(world, chunk);
        return;
    }
    chunk->archetype = NULL;
    chunk->count = 0;
    world->pool[world->pool_count++] = chunk;
}
/* Drops the archetype's last chunk, which is empty. */
static inline void tesi_chunk_drop_last(tes_world_t *world, tesi_archetype_t *archetype) {
    archetype->chunk_count--;
    world->chunk_count--;
    tesi_chunk_release(world, archetype->chunks[archetype->chunk_count]);
}
/* Takes one row for a single entity between calls, where every chunk but the last is full:
 * the last chunk's next row, or the first of a block from the pool (tesi_chunk_add_pooled).
 * The chunk, its row in *out_row; NULL, nothing changed, when neither has room without an
 * allocation (the caller's general path reserves). No division, unlike tesi_chunk_take_rows. */
static inline tesi_chunk_t *tesi_row_take(tes_world_t *world, tesi_archetype_t *a,
                                          uint32_t *out_row) {
    tesi_chunk_t *chunk = a->chunk_count ? a->chunks[a->chunk_count - 1] : NULL;
    if (!chunk || chunk->count == a->capacity) {
        if (!tesi_chunk_add_pooled(world, a)) return NULL;
        chunk = a->chunks[a->chunk_count - 1];
    }
    world->layout++;
    *out_row = chunk->count++;
    a->entity_count++;
    return chunk;
}

/* Copies one row's cells by the plan (the entity column apart). */
static inline __attribute__((always_inline)) void tesi_move_cells(uint8_t *dst, uint32_t dst_row,
                                                                  const uint8_t *src,
                                                                  uint32_t src_row,
                                                                  const tesi_move_plan_t *plan) {
    const tesi_move_t *m = plan->moves, *end = m + plan->n4;
    size_t d = (size_t)dst_row * 4, s = (size_t)src_row * 4;
    for (; m < end; m++)
        memcpy(dst + m->dst_offset + d, src + m->src_offset + s, 4);
    if (!plan->wide) return; /* most rows: 4-byte fields only */
    d *= 2;
    s *= 2;
    for (end += plan->n8; m < end; m++)
        memcpy(dst + m->dst_offset + d, src + m->src_offset + s, 8);
    for (end += plan->other; m < end; m++) {
        memcpy(dst + m->dst_offset + (size_t)dst_row * m->bytes,
               src + m->src_offset + (size_t)src_row * m->bytes, m->bytes);
    }
    for (end += plan->zero; m < end; m++)
        memset(dst + m->dst_offset + (size_t)dst_row * m->bytes, 0, m->bytes);
}

/* Zeroes one row by its archetype's own plan (which exists: a->self): fixed-size stores, the
 * offset once a group. A spawn's row. */
static inline __attribute__((always_inline)) void tesi_zero_row(tesi_chunk_t *chunk, uint32_t row) {
    const tesi_move_plan_t *plan = chunk->archetype->self;
    uint8_t *data = chunk->data;
    const tesi_move_t *m = plan->moves, *end = m + plan->n4;
    size_t d = (size_t)row * 4;
    for (; m < end; m++)
        memset(data + m->dst_offset + d, 0, 4);
    if (!plan->wide) return; /* an archetype's own plan zeroes nothing */
    d *= 2;
    for (end += plan->n8; m < end; m++)
        memset(data + m->dst_offset + d, 0, 8);
    for (end += plan->other; m < end; m++)
        memset(data + m->dst_offset + (size_t)row * m->bytes, 0, m->bytes);
}

/* Moves one row along a graph edge using its plan (tesi_copy_rows when `plan` is NULL). */
static inline void tesi_move_row(tes_world_t *world, tesi_chunk_t *dst, uint32_t dst_row,
                                 const tesi_chunk_t *src, uint32_t src_row,
                                 const tesi_move_plan_t *plan) {
    if (!plan) {
        tesi_copy_rows(world, dst, dst_row, src, src_row, 1);
        return;
    }
    tesi_chunk_entities(dst)[dst_row] = tesi_chunk_entities(src)[src_row];
    tesi_move_cells(dst->data, dst_row, src->data, src_row, plan);
    if (dst->archetype->tracked_count) tesi_trackers_copy(world, dst, dst_row, src, src_row, 1);
}

/* Swap-remove: fills (chunk, row) with the archetype's very last entity, updates that
 * entity's record, and releases the last chunk when it empties. Never allocates. `touching`:
 * checkpoints are kept (the moved entity's row changes); a constant false where the caller
 * knows none are, so that the hot path carries no test of it. */
static inline __attribute__((always_inline)) void
tesi_remove_row_as(tes_world_t *world, tesi_chunk_t *chunk, uint32_t row, bool touching) {
    tesi_archetype_t *a = chunk->archetype;
    world->layout++;
    /* Rows are only removed from archetypes with no reserved (empty) chunks at the end. */
    tesi_chunk_t *last = a->chunks[a->chunk_count - 1];
    uint32_t last_row = last->count - 1;
    if (last != chunk || last_row != row) {
        tesi_chunk_entities(chunk)[row] = tesi_chunk_entities(last)[last_row];
        tesi_move_cells(chunk->data, row, last->data, last_row, a->self);
        if (a->tracked_count) tesi_trackers_copy(world, chunk, row, last, last_row, 1);
        uint32_t index = tesi_chunk_entities(chunk)[row] & TESI_INDEX_MASK;
        if (touching) tesi_touch(world, index);
        tesi_record_t *moved = tesi_record_at(world, index);
        moved->chunk = chunk;
        moved->row = row;
    }
    if (a->tracked_count) tesi_trackers_clear_row(last, last_row);
    last->count--;
    a->entity_count--;
    if (last->count == 0) tesi_chunk_drop_last(world, a); /* the only one it empties */
}

static inline __attribute__((always_inline)) void
tesi_remove_row(tes_world_t *world, tesi_chunk_t *chunk, uint32_t row) {
    tesi_remove_row_as(world, chunk, row, true);
}

#endif
