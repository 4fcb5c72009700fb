/* Entities: the table from handle index to (chunk, row), generations, the FIFO free queue
 * (a list linked through the free records themselves, so despawn never allocates),
 * and every per-entity operation (spawn, despawn, add, remove, field access). Each public
 * function validates everything and reserves every byte it may need before it changes
 * anything, so a failed call leaves the world as it was. */
#include "internal.h"

#include <float.h>
#include <math.h>

/* ---- the entity table ------------------------------------------------------------------ */

static tes_result_t grow_table(tes_world_t *world, uint32_t slots) {
    tesi_record_t *records = tesi_alloc(world, (size_t)slots * sizeof *records);
    if (!records) return TES_ERR_OUT_OF_MEMORY;
    if (world->records) {
        memcpy(records, world->records, (size_t)world->record_count * sizeof *records);
        tesi_free(world, world->records, (size_t)world->record_slots * sizeof *records);
    }
    world->records = records;
    world->record_slots = slots;
    return TES_OK;
}

/* Makes sure `n` more entities can get an index without allocating. */
tes_result_t tesi_entities_reserve(tes_world_t *world, uint32_t n) {
    uint32_t fresh_left = TESI_INDEX_LIMIT - world->record_count;
    if ((uint64_t)n > (uint64_t)fresh_left + world->free_length) {
        return TES_ERR_TOO_MANY_ENTITIES;
    }
    uint32_t reusable =
        world->free_length > world->min_free ? world->free_length - world->min_free : 0;
    uint32_t fresh = n > reusable ? n - reusable : 0;
    if (fresh > fresh_left) fresh = fresh_left;
    uint32_t needed = world->record_count + fresh;
    if (needed <= world->record_slots) return TES_OK;
    uint64_t slots = world->record_slots ? world->record_slots : 1024;
    while (slots < needed)
        slots *= 2;
    if (slots > TESI_INDEX_LIMIT) slots = TESI_INDEX_LIMIT;
    return grow_table(world, (uint32_t)slots);
}

/* The index for a new entity, following the rule tesi_entities_reserve planned for: reuse the
 * oldest freed index once more than min_free wait (or when no fresh index is left). */
uint32_t tesi_take_index(tes_world_t *world) {
    if (world->free_length > world->min_free || world->record_count == TESI_INDEX_LIMIT) {
        uint32_t index = world->free_head;
        world->free_head = world->records[index].row;
        world->free_length--;
        return index;
    }
    uint32_t index = world->record_count++;
    world->records[index] = (tesi_record_t){0};
    return index;
}

void tesi_release_index(tes_world_t *world, uint32_t index) {
    tesi_record_t *record = &world->records[index];
    record->chunk = NULL;
    record->generation = (record->generation + 1) & TESI_GENERATION_MASK;
    record->row = 0;
    if (world->free_length++) {
        world->records[world->free_tail].row = index;
    } else {
        world->free_head = index;
    }
    world->free_tail = index;
}

void tesi_entities_fini(tes_world_t *world) {
    tesi_free(world, world->records, (size_t)world->record_slots * sizeof *world->records);
}

bool tes_is_alive(const tes_world_t *world, tes_entity_t entity) {
    return world && tesi_record_of(world, entity) != NULL;
}

/* ---- spawn and despawn ----------------------------------------------------------------- */

/* Spawns n zeroed entities into an archetype, filling its chunks a run at a time. */
static tes_result_t spawn_into(tes_world_t *world, tesi_archetype_t *a, uint32_t n,
                               tes_entity_t *out_entities) {
    if (tesi_deferring(world)) return tesi_defer_spawn(world, a, n, out_entities);
    /* The common case, room in the table, without a call. */
    tes_result_t result = world->record_count + (uint64_t)n <= world->record_slots
                              ? TES_OK
                              : tesi_entities_reserve(world, n);
    if (result == TES_OK) result = tesi_chunks_reserve(world, a, n);
    if (result != TES_OK) return result;
    for (uint32_t done = 0; done < n;) {
        tesi_chunk_t *chunk;
        uint32_t row;
        uint32_t run = tesi_chunk_take_rows(world, a, n - done, &chunk, &row);
        tesi_zero_rows(chunk, row, run);
        if (a->tracked_count) tesi_trackers_stamp_added(world, chunk, row, run);
        for (uint32_t k = 0; k < run; k++) {
            uint32_t index = tesi_take_index(world);
            tesi_record_t *record = &world->records[index];
            record->chunk = chunk;
            record->row = row + k;
            tes_entity_t e = tesi_make_handle(index, record->generation);
            tesi_chunk_entities(chunk)[row + k] = e;
            if (out_entities) out_entities[done + k] = e;
        }
        done += run;
    }
    world->entity_count += n;
    return TES_OK;
}

tes_result_t tesi_spawn_reserved(tes_world_t *world, uint32_t index, tesi_archetype_t *a) {
    tes_result_t result = tesi_chunks_reserve(world, a, 1);
    if (result != TES_OK) return result;
    tesi_chunk_t *chunk;
    uint32_t row;
    tesi_chunk_take_rows(world, a, 1, &chunk, &row);
    tesi_zero_rows(chunk, row, 1);
    tesi_trackers_stamp_added(world, chunk, row, 1);
    tesi_record_t *record = &world->records[index];
    record->chunk = chunk;
    record->row = row;
    tesi_chunk_entities(chunk)[row] = tesi_make_handle(index, record->generation);
    world->entity_count++;
    return TES_OK;
}

tes_result_t tes_archetype_spawn(tes_world_t *world, tes_archetype_t archetype, uint32_t n,
                                 tes_entity_t *out_entities) {
    if (!world) return TES_ERR_INVALID_ARGUMENT;
    if (archetype >= world->archetype_count) return TES_ERR_UNKNOWN_ARCHETYPE;
    return spawn_into(world, world->archetypes[archetype], n, out_entities);
}

tes_result_t tes_spawn_batch(tes_world_t *world, const tes_component_t *components, uint32_t count,
                             uint32_t n, tes_entity_t *out_entities) {
    if (!world) return TES_ERR_INVALID_ARGUMENT;
    tesi_archetype_t *a;
    tes_result_t result = tesi_sort_set(world, components, count);
    if (result == TES_OK) result = tesi_archetype_ensure(world, count, &a);
    if (result != TES_OK) return result;
    return spawn_into(world, a, n, out_entities);
}

tes_result_t tes_spawn(tes_world_t *world, const tes_component_t *components, uint32_t count,
                       tes_entity_t *out_entity) {
    if (!out_entity) return TES_ERR_INVALID_ARGUMENT;
    return tes_spawn_batch(world, components, count, 1, out_entity);
}

static void despawn(tes_world_t *world, tesi_record_t *record) {
    if (tesi_logging(world)) {
        tes_entity_t e = tesi_chunk_entities(record->chunk)[record->row];
        tesi_log_removals(world, record->chunk->archetype, e);
    }
    tesi_remove_row(world, record->chunk, record->row);
    tesi_release_index(world, (uint32_t)(record - world->records));
    world->entity_count--;
}

/* Alive, or pending (spawned by a deferred command): what a deferred command may name. */
static tes_result_t check_deferrable(const tes_world_t *world, tes_entity_t entity) {
    return tesi_record_of(world, entity) || tesi_pending_record(world, entity)
               ? TES_OK
               : TES_ERR_STALE_ENTITY;
}

tes_result_t tes_despawn(tes_world_t *world, tes_entity_t entity) {
    if (!world) return TES_ERR_INVALID_ARGUMENT;
    if (tesi_deferring(world)) {
        tes_result_t result = check_deferrable(world, entity);
        return result != TES_OK ? result
                                : tesi_defer(world, TESI_CMD_DESPAWN, entity, 0, 0, 0, 0, NULL, 0);
    }
    tesi_record_t *record = tesi_record_of(world, entity);
    if (!record) return TES_ERR_STALE_ENTITY;
    if (tesi_logging(world)) {
        tes_result_t result = tesi_logs_reserve(world, record->chunk->archetype, 1);
        if (result != TES_OK) return result;
    }
    despawn(world, record);
    return TES_OK;
}

tes_result_t tes_despawn_batch(tes_world_t *world, const tes_entity_t *entities, uint32_t n) {
    if (!world || (n && !entities)) return TES_ERR_INVALID_ARGUMENT;
    /* Validate first: a mark bit on each record's row finds duplicates without memory. While
     * deferring, entities a deferred spawn has not placed yet may be listed too. */
    bool deferring = tesi_deferring(world);
    tes_result_t result = TES_OK;
    uint32_t marked = 0;
    for (; marked < n; marked++) {
        tesi_record_t *record = tesi_record_of(world, entities[marked]);
        if (!record && deferring) record = tesi_pending_record(world, entities[marked]);
        if (!record) {
            result = TES_ERR_STALE_ENTITY;
            break;
        }
        if (record->row & TESI_ROW_MARK) {
            result = TES_ERR_DUPLICATE_ENTITY;
            break;
        }
        record->row |= TESI_ROW_MARK;
    }
    for (uint32_t i = 0; i < marked; i++) {
        world->records[entities[i] & TESI_INDEX_MASK].row &= ~TESI_ROW_MARK;
    }
    if (result == TES_OK && deferring) {
        result = tesi_commands_reserve(world, n, 0); /* all recorded, or none */
        for (uint32_t i = 0; i < n && result == TES_OK; i++) {
            result = tesi_defer(world, TESI_CMD_DESPAWN, entities[i], 0, 0, 0, 0, NULL, 0);
        }
        return result;
    }
    if (result == TES_OK && tesi_logging(world)) result = tesi_logs_reserve(world, NULL, n);
    if (result != TES_OK) return result;
    /* Back to front: despawning a list in the order it was spawned then removes rows from
     * the archetype's end, where swap-remove has nothing to move. */
    for (uint32_t i = n; i-- > 0;) {
        despawn(world, &world->records[entities[i] & TESI_INDEX_MASK]);
    }
    return TES_OK;
}

/* ---- add and remove -------------------------------------------------------------------- */

/* Moves the entity to the archetype one component away: a row is taken in the target, the
 * shared columns are copied, and the old row is swap-removed. */
static tes_result_t step(tes_world_t *world, tes_entity_t entity, tes_component_t component,
                         bool removing) {
    if (!world) return TES_ERR_INVALID_ARGUMENT;
    if (tesi_deferring(world)) {
        tes_result_t result = check_deferrable(world, entity);
        if (result == TES_OK && component >= world->component_count) {
            result = TES_ERR_UNKNOWN_COMPONENT;
        }
        tesi_record_t *pending = result == TES_OK ? tesi_pending_record(world, entity) : NULL;
        if (pending) {
            /* The pending entity's target archetype follows its recorded adds and removes, so
             * later writes to it are checked against what it will have. */
            tesi_archetype_t *from = tesi_pending_archetype(world, pending), *to = from;
            const tesi_move_t *moves;
            if ((tesi_type_index(from, component) != TESI_NO_TYPE) == removing) {
                result = tesi_graph_step(world, from, component, removing, &to, &moves);
            }
            if (result == TES_OK) pending->row = TESI_ROW_PENDING | to->id;
        }
        uint8_t kind = removing ? TESI_CMD_REMOVE : TESI_CMD_ADD;
        return result != TES_OK ? result
                                : tesi_defer(world, kind, entity, component, 0, 0, 0, NULL, 0);
    }
    tesi_record_t *record = tesi_record_of(world, entity);
    if (!record) return TES_ERR_STALE_ENTITY;
    if (component >= world->component_count) return TES_ERR_UNKNOWN_COMPONENT;
    tesi_archetype_t *from = record->chunk->archetype, *to;
    if ((tesi_type_index(from, component) != TESI_NO_TYPE) != removing) return TES_OK;
    const tesi_move_t *moves;
    tes_result_t result = tesi_graph_step(world, from, component, removing, &to, &moves);
    if (result == TES_OK) result = tesi_chunks_reserve(world, to, 1);
    if (result == TES_OK && removing && tesi_logging(world) &&
        world->components[component].removal_consumers) {
        result = tesi_logs_reserve(world, from, 1);
    }
    if (result != TES_OK) return result;
    tesi_chunk_t *chunk = record->chunk, *dst;
    uint32_t row = record->row, dst_row;
    if (removing && tesi_logging(world)) tesi_log_removal(world, component, entity);
    tesi_chunk_take_rows(world, to, 1, &dst, &dst_row);
    tesi_move_row(world, dst, dst_row, chunk, row, moves);
    record->chunk = dst;
    record->row = dst_row;
    tesi_remove_row(world, chunk, row);
    return TES_OK;
}

tes_result_t tes_add(tes_world_t *world, tes_entity_t entity, tes_component_t component) {
    return step(world, entity, component, false);
}

tes_result_t tes_remove(tes_world_t *world, tes_entity_t entity, tes_component_t component) {
    return step(world, entity, component, true);
}

tes_result_t tes_has(const tes_world_t *world, tes_entity_t entity, tes_component_t component,
                     bool *out_has) {
    if (!world || !out_has) return TES_ERR_INVALID_ARGUMENT;
    const tesi_record_t *record = tesi_record_of(world, entity);
    if (!record) return tesi_not_alive(world, entity);
    if (component >= world->component_count) return TES_ERR_UNKNOWN_COMPONENT;
    *out_has = tesi_type_index(record->chunk->archetype, component) != TESI_NO_TYPE;
    return TES_OK;
}

tes_result_t tes_location(const tes_world_t *world, tes_entity_t entity, tes_location_t *out) {
    if (!world || !out) return TES_ERR_INVALID_ARGUMENT;
    const tesi_record_t *record = tesi_record_of(world, entity);
    if (!record) return tesi_not_alive(world, entity);
    *out = (tes_location_t){record->chunk->archetype->id, record->chunk->index, record->row};
    return TES_OK;
}

/* ---- field access ---------------------------------------------------------------------- */

/* The schema of `component`'s field in an entity of archetype `a`, after checking it all. */
static tes_result_t check_field(const tes_world_t *world, const tesi_archetype_t *a,
                                tes_component_t component, uint32_t field,
                                const tesi_field_t **out_field) {
    if (component >= world->component_count) return TES_ERR_UNKNOWN_COMPONENT;
    if (tesi_type_index(a, component) == TESI_NO_TYPE) return TES_ERR_MISSING_COMPONENT;
    return tesi_field_of(&world->components[component], field, out_field);
}

/* Where an entity's field lives: found once, used for the access and for marking it. */
typedef struct field_ref_t {
    uint8_t *ptr;              /* the entity's cell: its `length` elements */
    const tesi_field_t *field; /* the schema */
    tesi_chunk_t *chunk;
    uint32_t type; /* the component's position in the archetype */
    uint32_t row;
} field_ref_t;

/* Finds an entity's field after checking every argument. */
static tes_result_t field_address(const tes_world_t *world, tes_entity_t entity,
                                  tes_component_t component, uint32_t field, field_ref_t *out) {
    if (!world) return TES_ERR_INVALID_ARGUMENT;
    const tesi_record_t *record = tesi_record_of(world, entity);
    if (!record) return tesi_not_alive(world, entity);
    if (component >= world->component_count) return TES_ERR_UNKNOWN_COMPONENT;
    /* tesi_field_of's checks, written out: calling it cost 4 more instructions per tes_get
     * and 1 per tes_set_number (callgrind, -O3 + LTO), and this is the per-entity path. */
    const tesi_component_t *c = &world->components[component];
    if (!c->field_count) return TES_ERR_TAG_HAS_NO_DATA;
    if (field >= c->field_count) return TES_ERR_UNKNOWN_FIELD;
    const tesi_archetype_t *a = record->chunk->archetype;
    uint32_t type = tesi_type_index(a, component);
    if (type == TESI_NO_TYPE) return TES_ERR_MISSING_COMPONENT;
    *out = (field_ref_t){
        .ptr = tesi_cell(record->chunk, tesi_column_of(a, type, field), record->row),
        .field = &c->fields[field],
        .chunk = record->chunk,
        .type = type,
        .row = record->row,
    };
    return TES_OK;
}

/* After a write through tes_set / tes_set_number: stamps the component changed. The level
 * test is inline, so a write nobody watches costs one branch. */
static inline void mark_written(tes_world_t *world, const field_ref_t *ref) {
    if (ref->chunk->trackers) tesi_mark_changed(world, ref->chunk, ref->type, ref->row);
}

/* Where a write goes: at once into the entity's row (`ref`), or into the command buffer. A write
 * to an entity a deferred spawn has not placed yet is checked against the archetype it will
 * have, then recorded with the spawn. An initial value (`init`) while deferring is recorded too
 * when the entity lacks the component now: its add is recorded as well (or the flush skips it). */
static tes_result_t plan_write(const tes_world_t *world, tes_entity_t entity,
                               tes_component_t component, uint32_t field, bool init,
                               field_ref_t *ref, bool *deferred) {
    *deferred = false;
    if (!world) return TES_ERR_INVALID_ARGUMENT;
    if (!tesi_deferring(world)) return field_address(world, entity, component, field, ref);
    const tesi_record_t *pending = tesi_pending_record(world, entity);
    if (pending) {
        *deferred = true;
        return check_field(world, tesi_pending_archetype(world, pending), component, field,
                           &ref->field);
    }
    tes_result_t result = field_address(world, entity, component, field, ref);
    if (result == TES_ERR_MISSING_COMPONENT && init) {
        *deferred = true;
        return tesi_field_of(&world->components[component], field, &ref->field);
    }
    return result;
}

tes_result_t tes_get(const tes_world_t *world, tes_entity_t entity, tes_component_t component,
                     uint32_t field, void *out, size_t size) {
    field_ref_t ref;
    tes_result_t result = field_address(world, entity, component, field, &ref);
    if (result != TES_OK) return result;
    if (!out) return TES_ERR_INVALID_ARGUMENT;
    if (size != ref.field->bytes) return TES_ERR_BAD_SIZE;
    memcpy(out, ref.ptr, size);
    return TES_OK;
}

static tes_result_t write_bytes(tes_world_t *world, tes_entity_t entity, tes_component_t component,
                                uint32_t field, const void *value, size_t size, bool init) {
    field_ref_t ref;
    bool deferred;
    tes_result_t result = plan_write(world, entity, component, field, init, &ref, &deferred);
    if (result != TES_OK) return result;
    if (!value) return TES_ERR_INVALID_ARGUMENT;
    if (size != ref.field->bytes) return TES_ERR_BAD_SIZE;
    if (deferred) {
        return tesi_defer(world, init ? TESI_CMD_INIT : TESI_CMD_SET, entity, component, field, 0,
                          0, value, (uint32_t)size);
    }
    memcpy(ref.ptr, value, size);
    if (!init) mark_written(world, &ref);
    return TES_OK;
}

tes_result_t tes_set(tes_world_t *world, tes_entity_t entity, tes_component_t component,
                     uint32_t field, const void *value, size_t size) {
    return write_bytes(world, entity, component, field, value, size, false);
}

tes_result_t tes_init(tes_world_t *world, tes_entity_t entity, tes_component_t component,
                      uint32_t field, const void *value, size_t size) {
    return write_bytes(world, entity, component, field, value, size, true);
}

tes_result_t tes_field_ptr(tes_world_t *world, tes_entity_t entity, tes_component_t component,
                           uint32_t field, void **out_ptr) {
    field_ref_t ref;
    tes_result_t result = field_address(world, entity, component, field, &ref);
    if (result != TES_OK) return result;
    if (!out_ptr) return TES_ERR_INVALID_ARGUMENT;
    *out_ptr = ref.ptr;
    return TES_OK;
}

tes_result_t tes_get_number(const tes_world_t *world, tes_entity_t entity,
                            tes_component_t component, uint32_t field, uint32_t element,
                            double *out) {
    field_ref_t ref;
    tes_result_t result = field_address(world, entity, component, field, &ref);
    if (result != TES_OK) return result;
    if (!out) return TES_ERR_INVALID_ARGUMENT;
    if (element >= ref.field->length) return TES_ERR_ELEMENT_OUT_OF_RANGE;
    const uint8_t *ptr = ref.ptr + (size_t)element * tes_type_size(ref.field->type);
    switch (ref.field->type) {
    case TES_F32:
        *out = *(const float *)(const void *)ptr;
        break;
    case TES_F64:
        *out = *(const double *)(const void *)ptr;
        break;
    case TES_I8:
        *out = *(const int8_t *)ptr;
        break;
    case TES_U8:
        *out = *ptr;
        break;
    case TES_I16:
        *out = *(const int16_t *)(const void *)ptr;
        break;
    case TES_U16:
        *out = *(const uint16_t *)(const void *)ptr;
        break;
    case TES_I32:
        *out = *(const int32_t *)(const void *)ptr;
        break;
    case TES_U32:
        *out = *(const uint32_t *)(const void *)ptr;
        break;
    }
    return TES_OK;
}

/* True when v is a whole number in [lo, hi] (false for NaN). */
static bool integral_within(double v, double lo, double hi) {
    return v >= lo && v <= hi && (double)(int64_t)v == v;
}

/* Writes `value` as one scalar of `type` to `out`; false (nothing written) when the type cannot
 * hold it without loss. */
static bool encode_number(tes_type_t type, double value, uint8_t *out) {
    /* Each case stores with a constant size: one store, no memcpy call. */
#define STORE(T, x)                  \
    do {                             \
        T v_ = (T)(x);               \
        memcpy(out, &v_, sizeof v_); \
    } while (0)
    switch (type) {
    case TES_F32:
        /* Finite values beyond float's range would become infinity: that is loss, not rounding. */
        if (!((value >= -FLT_MAX && value <= FLT_MAX) || value != value || value == INFINITY ||
              value == -INFINITY)) {
            return false;
        }
        STORE(float, value);
        return true;
    case TES_F64:
        STORE(double, value);
        return true;
    case TES_I8:
        if (!integral_within(value, INT8_MIN, INT8_MAX)) return false;
        STORE(int8_t, value);
        return true;
    case TES_U8:
        if (!integral_within(value, 0, UINT8_MAX)) return false;
        STORE(uint8_t, value);
        return true;
    case TES_I16:
        if (!integral_within(value, INT16_MIN, INT16_MAX)) return false;
        STORE(int16_t, value);
        return true;
    case TES_U16:
        if (!integral_within(value, 0, UINT16_MAX)) return false;
        STORE(uint16_t, value);
        return true;
    case TES_I32:
        if (!integral_within(value, INT32_MIN, INT32_MAX)) return false;
        STORE(int32_t, value);
        return true;
    case TES_U32:
        if (!integral_within(value, 0, UINT32_MAX)) return false;
        STORE(uint32_t, value);
        return true;
    }
#undef STORE
    return false;
}

static tes_result_t write_number(tes_world_t *world, tes_entity_t entity, tes_component_t component,
                                 uint32_t field, uint32_t element, double value, bool init) {
    field_ref_t ref;
    bool deferred;
    uint8_t scratch[8];
    tes_result_t result = plan_write(world, entity, component, field, init, &ref, &deferred);
    if (result != TES_OK) return result;
    if (element >= ref.field->length) return TES_ERR_ELEMENT_OUT_OF_RANGE;
    uint8_t *target =
        deferred ? scratch : ref.ptr + (size_t)element * tes_type_size(ref.field->type);
    if (!encode_number(ref.field->type, value, target)) return TES_ERR_BAD_VALUE;
    if (deferred) {
        return tesi_defer(world, init ? TESI_CMD_INIT_NUMBER : TESI_CMD_SET_NUMBER, entity,
                          component, field, element, value, NULL, 0);
    }
    if (!init) mark_written(world, &ref);
    return TES_OK;
}

tes_result_t tes_set_number(tes_world_t *world, tes_entity_t entity, tes_component_t component,
                            uint32_t field, uint32_t element, double value) {
    return write_number(world, entity, component, field, element, value, false);
}

tes_result_t tes_init_number(tes_world_t *world, tes_entity_t entity, tes_component_t component,
                             uint32_t field, uint32_t element, double value) {
    return write_number(world, entity, component, field, element, value, true);
}
