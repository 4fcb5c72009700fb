/* One entity's field values: tes_get / tes_set / tes_init by bytes, tes_get_number /
 * tes_set_number / tes_init_number by number, tes_field_ptr. Every argument is checked first;
 * a write lands in the entity's row and stamps the change for whoever tracks the component,
 * or, inside a run, is recorded when the entity or the component is not placed yet. */
#include "internal.h"

/* The schema of `component`'s field in an entity of archetype `a`, after checking it all. */
static tes_result_t check_field(const tes_world_t *world, const tesi_archetype_t *a,
                                tes_component_t component, uint32_t field,
                                const tesi_field_t **out_field) {
    if (component >= world->component_count) return TES_ERR_UNKNOWN_COMPONENT;
    const tesi_component_t *c = &world->components[component];
    if (tesi_is_relation(c)) return TES_ERR_NEEDS_TARGET;
    /* Sparse components are not in the archetype: plan_write asks the command buffer. */
    if (!tesi_is_sparse(c) && tesi_type_index(a, component) == TESI_NO_TYPE) {
        return TES_ERR_MISSING_COMPONENT;
    }
    return tesi_field_of(c, field, out_field);
}

/* Where an entity's field lives: found once, used for the access and for marking it. */
typedef struct field_ref_t {
    uint8_t *ptr;              /* the entity's cell: its `length` elements */
    const tesi_field_t *field; /* the schema */
    tesi_chunk_t *chunk;       /* NULL for a sparse component */
    uint32_t type;             /* the component's position in the archetype; a sparse one's id */
    uint32_t row;              /* in the chunk; a sparse component's dense slot */
} field_ref_t;

/* field_address for a sparse component (relations have no per-entity data). Inlined: a call
 * here made the callers keep their field_ref_t on the stack, +14 instructions per tes_get. */
static inline __attribute__((always_inline)) tes_result_t
sparse_address(const tes_world_t *world, tes_entity_t entity, tes_component_t component,
               uint32_t field, field_ref_t *out) {
    const tesi_component_t *c = &world->components[component];
    if (tesi_is_relation(c)) return TES_ERR_NEEDS_TARGET;
    const tesi_field_t *f;
    tes_result_t result = tesi_field_of(c, field, &f);
    if (result != TES_OK) return result;
    uint32_t slot1 = tesi_sparse_slot(&c->sparse, entity & TESI_INDEX_MASK);
    if (!slot1) return TES_ERR_MISSING_COMPONENT;
    *out = (field_ref_t){
        .ptr = c->sparse.data + (size_t)(slot1 - 1) * c->stride + f->offset,
        .field = f,
        .chunk = NULL,
        .type = component,
        .row = slot1 - 1,
    };
    return TES_OK;
}

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
    if (!c->field_count)
        return tesi_is_relation(c) ? TES_ERR_NEEDS_TARGET : TES_ERR_TAG_HAS_NO_DATA;
    if (field >= c->field_count) return TES_ERR_UNKNOWN_FIELD;
    const tesi_archetype_t *a = record->chunk->archetype;
    uint32_t type = tesi_type_index(a, component);
    /* A sparse component is never in an archetype: looked at only when the chunk lacks it, so
     * the chunk path pays nothing for it. */
    if (type == TESI_NO_TYPE) {
        return tesi_is_sparse(c) ? sparse_address(world, entity, component, field, out)
                                 : TES_ERR_MISSING_COMPONENT;
    }
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
    if (!ref->chunk) {
        tesi_sparse_mark(world, ref->type, ref->row);
    } else if (ref->chunk->trackers) {
        tesi_mark_changed(world, ref->chunk, ref->type, ref->row);
    }
}

/* Where a write goes: at once into the entity's row (`ref`), or into the command buffer. A write
 * to an entity a deferred spawn has not placed yet is checked against the archetype it will
 * have, then recorded with the spawn. A write to a placed entity that lacks the component now
 * is recorded when a recorded command adds it (so it applies after that add, as a change), and
 * an initial value (`init`) is recorded whenever it lacks it (its add is recorded as well, or
 * the flush skips it). */
static tes_result_t plan_write(const tes_world_t *world, tes_entity_t entity,
                               tes_component_t component, uint32_t field, bool init,
                               field_ref_t *ref, bool *deferred) {
    *deferred = false;
    if (!world) return TES_ERR_INVALID_ARGUMENT;
    if (!tesi_deferring(world)) return field_address(world, entity, component, field, ref);
    const tesi_record_t *pending = tesi_pending_record(world, entity);
    if (pending) {
        *deferred = true;
        tes_result_t result = check_field(world, tesi_pending_archetype(world, pending), component,
                                          field, &ref->field);
        if (result == TES_OK && tesi_is_sparse(&world->components[component]) &&
            !tesi_pending_sparse(world, entity, component)) {
            result = TES_ERR_MISSING_COMPONENT;
        }
        return result;
    }
    tes_result_t result = field_address(world, entity, component, field, ref);
    /* Missing now, but added by a recorded command: the write follows it. */
    if (result == TES_ERR_MISSING_COMPONENT &&
        (init || tesi_recorded(world, entity, component, 0) == 1)) {
        *deferred = true;
        return tesi_field_of(&world->components[component], field, &ref->field);
    }
    /* Present now, but added again by a command recorded since the run began (an add with
     * values of the component it holds, or a remove and an add): the write follows that add,
     * whose values would otherwise land over a write made after it. */
    if (result == TES_OK && !init && tesi_recorded(world, entity, component, 0) == 1) {
        *deferred = true;
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
    bool same = !init && ref.field->by_value && memcmp(ref.ptr, value, size) == 0;
    if (init) tesi_touch(world, entity & TESI_INDEX_MASK); /* no change a checkpoint would see */
    memcpy(ref.ptr, value, size);
    if (!init && !same) mark_written(world, &ref);
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
    *out = tesi_decode_number(ref.field->type,
                              ref.ptr + (size_t)element * tes_type_size(ref.field->type));
    return TES_OK;
}

/* Stores an element encoded aside; false when its bytes were there already (no change). */
static bool store_changed(const field_ref_t *ref, uint32_t element, const uint8_t *encoded) {
    size_t size = tes_type_size(ref->field->type);
    uint8_t *cell = ref->ptr + (size_t)element * size;
    bool changed = memcmp(cell, encoded, size) != 0;
    memcpy(cell, encoded, size);
    return changed;
}

static tes_result_t write_number(tes_world_t *world, tes_entity_t entity, tes_component_t component,
                                 uint32_t field, uint32_t element, double value, bool init) {
    field_ref_t ref;
    bool deferred;
    uint8_t scratch[8];
    tes_result_t result = plan_write(world, entity, component, field, init, &ref, &deferred);
    if (result != TES_OK) return result;
    if (element >= ref.field->length) return TES_ERR_ELEMENT_OUT_OF_RANGE;
    /* By value (TES_COMPONENT_CHANGE_BY_VALUE) the old bytes are needed: encoded aside. */
    bool aside = deferred || (!init && ref.field->by_value);
    if (init && !deferred) tesi_touch(world, entity & TESI_INDEX_MASK);
    uint8_t *target = aside ? scratch : ref.ptr + (size_t)element * tes_type_size(ref.field->type);
    if (!tesi_encode_number(ref.field->type, value, target)) return TES_ERR_BAD_VALUE;
    if (deferred) {
        return tesi_defer(world, init ? TESI_CMD_INIT_NUMBER : TESI_CMD_SET_NUMBER, entity,
                          component, field, element, value, NULL, 0);
    }
    if (aside && !store_changed(&ref, element, scratch)) return TES_OK;
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
