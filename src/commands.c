/* Deferred commands: while an iteration is live, structural changes would move rows under the
 * iterator, so they are recorded here and applied, in order, when the last live iteration
 * ends. A deferred spawn reserves its entity index at once, so the caller gets the handle it
 * will have; until the flush that handle is "pending".
 *
 * JS appends the commands of the commonest calls itself (bindings/record.ts): a DESPAWN, ADD
 * or REMOVE of a placed, live entity and a component that is not a relation, while deferring,
 * with only `kind`, `entity` and `a` written, when the list has room; and a SPAWN (its index
 * from the handouts, its record pending) followed by an INIT_NUMBER per initial value. What
 * tes_despawn / tes_add / tes_remove (tesi_sparse_step for sparse components) and
 * tesi_defer_spawn do before their commands, and the members apply() reads of those kinds, are
 * that file's contract too. */
#include "internal.h"

_Static_assert(sizeof(tesi_command_t) == 32, "a recorded command is 32 bytes (internal.h)");

tesi_record_t *tesi_pending_record(const tes_world_t *world, tes_entity_t entity) {
    uint32_t index = entity & TESI_INDEX_MASK;
    if (index >= world->record_count) return NULL;
    tesi_record_t *record = tesi_record_find(world, index);
    /* The duplicate mark tes_despawn_batch may have set on the row does not matter here. */
    if (!record || record->chunk || !(record->row & TESI_ROW_PENDING) ||
        record->row == TESI_ROW_HANDOUT || tesi_generation(record) != (entity >> TES_INDEX_BITS)) {
        return NULL;
    }
    return record;
}

/* Whether the items name (component, target): a pair only when the targets agree (a bare
 * relation, target 0, names every pair of it). */
static bool items_name(const tes_items_t *x, tes_component_t component, tes_entity_t target) {
    for (uint32_t i = 0; i < x->item_count; i++) {
        const tes_item_t *item = &x->items[i];
        if (item->component == component && (!target || !item->target || item->target == target)) {
            return true;
        }
    }
    return false;
}

int tesi_recorded(const tes_world_t *world, tes_entity_t entity, tes_component_t component,
                  tes_entity_t target) {
    uint32_t first = 0;
    const tesi_record_t *placed = tesi_record_of(world, entity);
    if (placed) {
        first = placed->generation >> TESI_RECORDED_SHIFT;
        if (!first) return -1; /* nothing recorded for it */
        first--;
    }
    for (uint32_t i = world->command_count; i-- > first;) {
        const tesi_command_t *cmd = &world->commands[i];
        if (cmd->entity != entity) continue;
        switch (cmd->kind) {
        case TESI_CMD_SPAWN:
            /* The spawn starts the entity: a table component is in its archetype or not. */
            return tesi_type_index(world->archetypes[cmd->a], component) != TESI_NO_TYPE ? 1 : 0;
        case TESI_CMD_DESPAWN:
            return 0;
        case TESI_CMD_ADD:
        case TESI_CMD_REMOVE:
            if (cmd->a == component) return cmd->kind == TESI_CMD_ADD;
            break;
        case TESI_CMD_PAIR_ADD:
        case TESI_CMD_PAIR_REMOVE:
            if (cmd->a == component && (!target || cmd->b == target)) {
                return cmd->kind == TESI_CMD_PAIR_ADD;
            }
            break;
        case TESI_CMD_ITEMS: {
            tes_items_t x;
            tesi_items_view(world->command_data + cmd->data_offset, &x);
            int effect = tesi_items_effect(cmd->a);
            if (effect >= 0 && items_name(&x, component, target)) return effect;
            break;
        }
        }
    }
    return -1;
}

/* Out of line: every recording path calls it, and inlined its two reservations cost their
 * callers registers (a C-recorded tag add+remove 395 -> 345 instructions) and wasm size. */
__attribute__((noinline)) tes_result_t tesi_commands_reserve(tes_world_t *world, uint32_t n,
                                                             uint32_t data) {
    /* Counts from callers' lists: the sums must not wrap. */
    if ((uint64_t)world->command_count + n > UINT32_MAX / 2 ||
        (uint64_t)world->command_data_size + data > UINT32_MAX / 2) {
        return TES_ERR_OUT_OF_MEMORY;
    }
    /* The noted records' room first, grown as the commands' will be: it never falls behind. */
    tes_result_t result = tesi_reserve(world, (void **)&world->noted_records, &world->noted_slots,
                                       world->command_count + n, sizeof *world->noted_records, 64);
    if (result == TES_OK) {
        result = tesi_reserve(world, (void **)&world->commands, &world->command_slots,
                              world->command_count + n, sizeof *world->commands, 64);
    }
    if (result == TES_OK && data) {
        result = tesi_reserve(world, (void **)&world->command_data, &world->command_data_slots,
                              world->command_data_size + data, 1, 256);
    }
    return result;
}

tes_result_t tesi_defer(tes_world_t *world, uint8_t kind, tes_entity_t entity, uint32_t a,
                        uint32_t b, uint32_t c, double value, const void *data, uint32_t size) {
    tes_result_t result = tesi_commands_reserve(world, 1, size);
    if (result != TES_OK) return result;
    tesi_command_t *cmd = &world->commands[world->command_count++];
    *cmd = (tesi_command_t){.kind = kind, .entity = entity, .a = a, .b = b, .c = c, .value = value};
    if (size) { /* bytes instead of a number (tesi_command_t) */
        cmd->data_offset = world->command_data_size;
        cmd->data_size = size;
        memcpy(world->command_data + world->command_data_size, data, size);
        world->command_data_size += size;
    }
    return TES_OK;
}

tes_result_t tesi_defer_spawn(tes_world_t *world, tesi_archetype_t *archetype, uint32_t n,
                              tes_entity_t *out_entities) {
    tes_result_t result = tesi_entities_reserve(world, n);
    if (result == TES_OK) result = tesi_commands_reserve(world, n, 0);
    if (result != TES_OK) return result;
    for (uint32_t i = 0; i < n; i++) {
        tesi_record_t *record;
        uint32_t index = tesi_take_index(world, &record);
        record->chunk = NULL;
        record->row = TESI_ROW_PENDING | archetype->id;
        tes_entity_t e = tesi_make_handle(index, tesi_generation(record));
        world->commands[world->command_count++] =
            (tesi_command_t){.kind = TESI_CMD_SPAWN, .entity = e, .a = archetype->id};
        if (out_entities) out_entities[i] = e;
    }
    return TES_OK;
}

tes_result_t tes_defer_handouts(tes_world_t *world, uint32_t *out_count) {
    if (out_count) *out_count = 0;
    if (!world || !out_count || !tesi_deferring(world)) return TES_ERR_INVALID_ARGUMENT;
    uint32_t waiting = world->handout_count - world->handout_next;
    if (waiting) {
        *out_count = waiting;
        return TES_OK;
    }
    /* As many as the world may still hold, up to a block: a spawn past that is the core's. */
    uint32_t in_use = tesi_indices_in_use(world), max = tesi_max_entities(world);
    uint32_t n = in_use < max ? max - in_use : 0;
    if (n > TESI_HANDOUTS) n = TESI_HANDOUTS;
    world->handout_count = world->handout_next = 0;
    world->handouts_fresh = 0;
    if (!n) return TES_OK;
    tes_result_t result = tesi_entities_reserve(world, n);
    if (result != TES_OK) return result;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t fresh = world->record_count;
        tesi_record_t *record;
        uint32_t index = tesi_take_index(world, &record);
        if (world->record_count != fresh) world->handouts_fresh |= (uint64_t)1 << i;
        record->chunk = NULL;
        record->row = TESI_ROW_HANDOUT;
        world->handouts[i] = index;
    }
    world->handout_count = n;
    *out_count = n;
    return TES_OK;
}

/* Gives the allocator back the handed-out indices nobody took, last first, as they were: fresh
 * ones shrink the table again, queued ones go back to the head of the free queue. */
static void return_handouts(tes_world_t *world) {
    for (uint32_t i = world->handout_count; i-- > world->handout_next;) {
        uint32_t index = world->handouts[i];
        tesi_record_t *record = tesi_record_at(world, index);
        record->chunk = NULL;
        if (world->handouts_fresh & ((uint64_t)1 << i)) {
            record->row = 0;
            world->record_count--;
            continue;
        }
        /* A stale queue is relinked from the records before its next use: no link to keep. */
        record->row = world->free_length && !world->free_stale ? world->free_head : 0;
        if (!world->free_length) world->free_tail = index;
        world->free_head = index;
        world->free_length++;
    }
    world->handout_count = world->handout_next = 0;
    world->handouts_fresh = 0;
}

static tes_result_t apply(tes_world_t *world, const tesi_command_t *cmd) {
    switch (cmd->kind) {
    case TESI_CMD_SPAWN: {
        tesi_record_t *record = tesi_pending_record(world, cmd->entity);
        if (!record) return TES_ERR_STALE_ENTITY;
        tes_result_t result =
            tesi_spawn_reserved(world, cmd->entity & TESI_INDEX_MASK, world->archetypes[cmd->a]);
        if (result == TES_OK && cmd->data_size) {
            tesi_items_init(world, cmd->entity, cmd->b, world->command_data + cmd->data_offset);
        }
        return result;
    }
    case TESI_CMD_DESPAWN:
        return tes_despawn(world, cmd->entity);
    case TESI_CMD_ADD:
    case TESI_CMD_REMOVE:
        /* Where tes_add / tes_remove end for a sparse component or relation, without the row
         * lookups they try first for chunk components. */
        if (cmd->a < world->component_count && tesi_is_sparse(&world->components[cmd->a])) {
            return tesi_sparse_step(world, cmd->entity, cmd->a, cmd->kind == TESI_CMD_REMOVE);
        }
        return cmd->kind == TESI_CMD_ADD ? tes_add(world, cmd->entity, cmd->a)
                                         : tes_remove(world, cmd->entity, cmd->a);
    case TESI_CMD_SET:
        return tes_set(world, cmd->entity, cmd->a, cmd->b, world->command_data + cmd->data_offset,
                       cmd->data_size);
    case TESI_CMD_SET_NUMBER:
        return tes_set_number(world, cmd->entity, cmd->a, cmd->b, cmd->c, cmd->value);
    case TESI_CMD_INIT:
        return tes_init(world, cmd->entity, cmd->a, cmd->b, world->command_data + cmd->data_offset,
                        cmd->data_size);
    case TESI_CMD_INIT_NUMBER:
        return tes_init_number(world, cmd->entity, cmd->a, cmd->b, cmd->c, cmd->value);
    case TESI_CMD_ARCHETYPE_ADD:
        return tes_archetype_add(world, cmd->a, cmd->b);
    case TESI_CMD_ARCHETYPE_REMOVE:
        return tes_archetype_remove(world, cmd->a, cmd->b);
    case TESI_CMD_PAIR_ADD:
        return tes_pair_add(world, cmd->entity, cmd->a, cmd->b);
    case TESI_CMD_PAIR_REMOVE:
        return tes_pair_remove(world, cmd->entity, cmd->a, cmd->b);
    case TESI_CMD_PAIR_PLACE:
        return tes_pair_place(world, cmd->entity, cmd->a, cmd->b, cmd->c);
    case TESI_CMD_PAIR_INIT_NUMBER:
        return tes_pair_init_number(world, cmd->entity, cmd->a, cmd->b, cmd->c, cmd->d, cmd->value);
    case TESI_CMD_ITEMS: {
        tes_items_t x;
        tesi_items_view(world->command_data + cmd->data_offset, &x);
        return tesi_items_apply(world, cmd->a, cmd->entity, cmd->b, &x);
    }
    }
    return TES_ERR_INVALID_ARGUMENT;
}

tes_result_t tes_defer_begin(tes_world_t *world) {
    if (!world) return TES_ERR_INVALID_ARGUMENT;
    world->defer_depth++;
    return TES_OK;
}

tes_result_t tes_defer_end(tes_world_t *world) {
    if (!world || world->defer_depth == 0) return TES_ERR_INVALID_ARGUMENT;
    tesi_defer_end(world);
    return TES_OK;
}

void tesi_defer_end(tes_world_t *world) {
    if (--world->defer_depth) return;
    tesi_flush(world);
    /* A world whose program never calls tes_tick (no systems, subscriptions drained each
     * frame) would otherwise keep every change and removal forever, and each run would walk
     * all of it. */
    if (world->prune_due) tesi_prune(world);
}

uint32_t tes_world_layout(const tes_world_t *world) {
    return world ? world->layout : 0;
}

/* despawn_archetype after the removal logs' room. */
static tes_result_t despawn_whole(tes_world_t *world, tesi_archetype_t *a) {
    if (tesi_logging(world)) {
        tes_result_t result = tesi_logs_reserve(world, a, a->entity_count);
        if (result != TES_OK) return result;
    }
    tesi_despawn_archetype(world, a);
    return TES_OK;
}

/* A run of recorded adds (or removes) of one chunk component, or of despawns, whose entities
 * are every row of an archetype, in row order (what a loop over a query's chunks records),
 * applies as one change of the archetype (tes_archetype_add / _remove, despawn_whole): the
 * rows end where the calls one by one would put them, in the same order, at batch speed. `i`
 * is an add, a remove or a despawn. Returns the commands applied (0: not such a run), and in
 * *checked how many it compared. */
static uint32_t apply_whole(tes_world_t *world, uint32_t i, uint32_t *checked) {
    const tesi_command_t *cmd = &world->commands[i];
    *checked = 0;
    bool despawn = cmd->kind == TESI_CMD_DESPAWN;
    if (despawn ? world->sparse_count != 0
                : cmd->a >= world->component_count || tesi_is_sparse(&world->components[cmd->a])) {
        return 0;
    }
    const tesi_record_t *record = tesi_record_of(world, cmd->entity);
    if (!record) return 0;
    tesi_archetype_t *a = record->chunk->archetype;
    uint32_t n = a->entity_count;
    if (n < 2 || world->command_count - i < n) return 0;
    for (uint32_t c = 0, k = 0; c < a->chunk_count; c++) {
        const tesi_chunk_t *chunk = a->chunks[c];
        const tes_entity_t *entities = tesi_chunk_entities(chunk);
        for (uint32_t row = 0; row < chunk->count; row++, k++) {
            const tesi_command_t *next = &world->commands[i + k];
            *checked = k + 1;
            if (next->kind != cmd->kind || (!despawn && next->a != cmd->a) ||
                next->entity != entities[row]) {
                return 0;
            }
        }
    }
    tes_result_t result = despawn                     ? despawn_whole(world, a)
                          : cmd->kind == TESI_CMD_ADD ? tes_archetype_add(world, a->id, cmd->a)
                                                      : tes_archetype_remove(world, a->id, cmd->a);
    return result == TES_OK ? n : 0;
}

/* A run of recorded adds (or removes) of one sparse component, at `i`: applied together, the
 * room for all of them reserved once (tesi_sparse_apply_run), in the order and with the
 * outcome each would have alone. Returns the commands applied (0: not such a run of two or
 * more, or no room for it: the caller applies one by one). */
static uint32_t apply_sparse_run(tes_world_t *world, uint32_t i) {
    const tesi_command_t *cmd = &world->commands[i];
    tes_component_t component = cmd->a;
    if (component >= world->component_count) return 0;
    const tesi_component_t *c = &world->components[component];
    if (!tesi_is_sparse(c) || tesi_is_relation(c)) return 0;
    uint32_t n = 1;
    while (i + n < world->command_count && world->commands[i + n].kind == cmd->kind &&
           world->commands[i + n].a == component) {
        n++;
    }
    uint32_t failed;
    if (n < 2 ||
        !tesi_sparse_apply_run(world, component, cmd->kind == TESI_CMD_REMOVE, cmd, n, &failed)) {
        return 0;
    }
    world->commands_skipped += failed;
    return n;
}

/* Where an INIT_NUMBER's value goes in a row of archetype `a`: its column, and the field's
 * type in *out_type; NULL when the command names no element of a field of a chunk component
 * the archetype has (tes_init_number, applied alone, says why). */
static inline __attribute__((always_inline)) const tesi_column_t *
init_column(const tes_world_t *world, const tesi_archetype_t *a, const tesi_command_t *cmd,
            tes_type_t *out_type) {
    if (cmd->a >= world->component_count) return NULL;
    const tesi_component_t *c = &world->components[cmd->a];
    if (cmd->b >= c->field_count) return NULL;
    uint32_t type = tesi_type_index(a, cmd->a);
    const tesi_field_t *f = &c->fields[cmd->b];
    if (type == TESI_NO_TYPE || cmd->c >= f->length) return NULL;
    *out_type = f->type;
    return tesi_column_of(a, type, cmd->b);
}

/* The initial values recorded right after a spawn (INIT_NUMBER commands of its entity, as
 * bindings/record.ts appends them), written into the row just placed with tes_init_number's
 * checks, without finding the row again. Returns how many it wrote; the first one it cannot
 * write here (not a field of a chunk component of the row, or a value its type cannot hold)
 * and those after it are apply()'s, which says why. Inline in both its callers, the flush and
 * write_initial's rare way (called from two, it was a call in the flush again: +20
 * instructions a spawn recorded through tes_spawn_items, bench_core deferred_cycle). */
static inline __attribute__((always_inline)) uint32_t apply_initial(tes_world_t *world,
                                                                    uint32_t i) {
    tes_entity_t entity = world->commands[i].entity;
    const tesi_record_t *record = tesi_record_at(world, entity & TESI_INDEX_MASK);
    tesi_chunk_t *chunk = record->chunk;
    const tesi_archetype_t *a = chunk->archetype;
    uint32_t k = i + 1;
    for (; k < world->command_count; k++) {
        const tesi_command_t *cmd = &world->commands[k];
        if (cmd->kind != TESI_CMD_INIT_NUMBER || cmd->entity != entity) break;
        tes_type_t type;
        const tesi_column_t *column = init_column(world, a, cmd, &type);
        if (!column) break;
        uint8_t *cell = tesi_cell(chunk, column, record->row);
        if (!tesi_encode_number(type, cmd->value, cell + (size_t)cmd->c * tes_type_size(type))) {
            break;
        }
    }
    return k - i - 1;
}

/* Most initial values a spawn of a run writes by the fields resolved once (more: one by one). */
#define RUN_VALUES 16u

/* An INIT_NUMBER applied alone, as apply() would (its result skipped when refused): the rare
 * way of write_initial, kept out of apply's one call site so that the flush keeps it inline. */
static void init_alone(tes_world_t *world, const tesi_command_t *cmd) {
    if (tes_init_number(world, cmd->entity, cmd->a, cmd->b, cmd->c, cmd->value) != TES_OK) {
        world->commands_skipped++;
    }
}

/* The initial values of a run of n spawns placed by apply_spawns (`step` commands a spawn: the
 * SPAWN, then its INIT_NUMBERs). One shape: each value's field is resolved once, from the
 * first spawn's commands, with apply_initial's checks, and a spawn whose commands name other
 * fields goes through apply_initial. A value its field cannot hold, and any value of a field
 * that failed the checks, is applied alone (tes_init_number says why), as the main loop would. */
static void write_initial(tes_world_t *world, uint32_t i, uint32_t n, uint32_t step) {
    const tesi_command_t *commands = world->commands;
    uint32_t values = step - 1;
    const tesi_archetype_t *a = world->archetypes[commands[i].a];
    const tesi_column_t *columns[RUN_VALUES];
    tes_type_t types[RUN_VALUES];
    uint32_t sizes[RUN_VALUES];
    for (uint32_t v = 0; v < values && v < RUN_VALUES; v++) {
        columns[v] = init_column(world, a, &commands[i + 1 + v], &types[v]);
        if (columns[v]) sizes[v] = tes_type_size(types[v]);
    }
    for (uint32_t k = 0, at = i; k < n; k++, at += step) {
        bool same = values <= RUN_VALUES;
        for (uint32_t v = 1; v < step && same; v++) {
            const tesi_command_t *cmd = &commands[at + v], *model = &commands[i + v];
            same = cmd->a == model->a && cmd->b == model->b && cmd->c == model->c;
        }
        if (!same) {
            for (uint32_t v = at + 1 + apply_initial(world, at); v < at + step; v++) {
                init_alone(world, &commands[v]);
            }
            continue;
        }
        const tesi_record_t *record = tesi_record_at(world, commands[at].entity & TESI_INDEX_MASK);
        for (uint32_t v = 0; v < values; v++) {
            const tesi_command_t *cmd = &commands[at + 1 + v];
            uint8_t *cell = columns[v] ? tesi_cell(record->chunk, columns[v], record->row) : NULL;
            if (cell &&
                tesi_encode_number(types[v], cmd->value, cell + (size_t)cmd->c * sizes[v])) {
                continue;
            }
            init_alone(world, cmd);
        }
    }
}

/* A run of recorded spawns into one archetype, each followed by the same number of initial
 * values (INIT_NUMBER commands of its entity): what a loop that spawns one shape records
 * (bindings/record.ts). Placed as one batch (tesi_spawn_pending: the rows reserved once, zeroed
 * and stamped a chunk run at a time), then each spawn's values written (apply_initial; any it
 * does not take are applied one by one, as the main loop would). Rows and handles end where
 * the spawns one by one would put them. Returns the commands applied; 0, with nothing done and
 * *checked the commands it looked at, when `i` starts no run of two spawns or more or the rows
 * cannot be had (then the spawns go one by one, which says what each one meets). */
static uint32_t apply_spawns(tes_world_t *world, uint32_t i, uint32_t *checked) {
    const tesi_command_t *commands = world->commands, *first = &commands[i];
    uint32_t count = world->command_count, values = 0;
    while (i + 1 + values < count && commands[i + 1 + values].kind == TESI_CMD_INIT_NUMBER &&
           commands[i + 1 + values].entity == first->entity) {
        values++;
    }
    uint32_t step = values + 1, n = 0;
    for (uint32_t at = i; at + step <= count; at += step, n++) {
        const tesi_command_t *cmd = &commands[at];
        if (cmd->kind != TESI_CMD_SPAWN || cmd->a != first->a || cmd->data_size ||
            !tesi_pending_record(world, cmd->entity)) {
            break;
        }
        uint32_t v = 1;
        while (v < step && commands[at + v].kind == TESI_CMD_INIT_NUMBER &&
               commands[at + v].entity == cmd->entity) {
            v++;
        }
        /* Another shape (fewer values, or more of them after) ends the run. */
        bool more = at + step < count && commands[at + step].kind == TESI_CMD_INIT_NUMBER &&
                    commands[at + step].entity == cmd->entity;
        if (v < step || more) break;
    }
    *checked = n * step;
    if (n < 2 || tesi_spawn_pending(world, world->archetypes[first->a], n, &first->entity,
                                    step * sizeof *first) != TES_OK) {
        return 0;
    }
    write_initial(world, i, n, step);
    return n * step;
}

void tesi_flush(tes_world_t *world) {
    /* Commands applied here may not defer again (no iteration is live), but a command's effect
     * can be an error: an entity despawned by an earlier command, say. Those are skipped. */
    tesi_reserve_lift(true);
    /* The notes of recorded adds to placed entities go first (an add and the item calls are
     * the commands that leave one): they would send the host's own lookups to the core after
     * the run. */
    for (uint32_t i = 0; i < world->noted; i++)
        world->noted_records[i]->generation &= TESI_GENERATION_MASK;
    world->noted = 0;
    return_handouts(world); /* before any command frees or takes an index */
    uint32_t retry = 0;     /* a run compared and found partial is not compared again */
    for (uint32_t i = 0; i < world->command_count; i++) {
        const tesi_command_t *cmd = &world->commands[i];
        if (i >= retry && (cmd->kind == TESI_CMD_ADD || cmd->kind == TESI_CMD_REMOVE ||
                           cmd->kind == TESI_CMD_DESPAWN)) {
            uint32_t checked, whole = apply_whole(world, i, &checked);
            if (whole) {
                i += whole - 1;
                continue;
            }
            retry = i + checked;
            uint32_t run = cmd->kind != TESI_CMD_DESPAWN ? apply_sparse_run(world, i) : 0;
            if (run) {
                i += run - 1;
                continue;
            }
        }
        if (i >= retry && cmd->kind == TESI_CMD_SPAWN && !cmd->data_size) {
            uint32_t checked, placed = apply_spawns(world, i, &checked);
            if (placed) {
                i += placed - 1;
                continue;
            }
            retry = i + checked;
        }
        if (apply(world, cmd) == TES_OK) {
            if (cmd->kind == TESI_CMD_SPAWN) i += apply_initial(world, i);
            continue;
        }
        world->commands_skipped++;
        /* A spawn that could not happen (out of memory) gives its reserved index back. */
        if (cmd->kind == TESI_CMD_SPAWN && tesi_pending_record(world, cmd->entity)) {
            tesi_release_index(world, cmd->entity & TESI_INDEX_MASK);
        }
    }
    world->command_count = 0;
    world->command_data_size = 0;
    tesi_reserve_lift(false);
}

void tesi_commands_fini(tes_world_t *world) {
    tesi_free(world, world->commands, world->command_slots * sizeof *world->commands);
    tesi_free(world, world->noted_records, world->noted_slots * sizeof *world->noted_records);
    tesi_free(world, world->command_data, world->command_data_slots);
}
