/* Components: schemas of typed scalar fields (or tags with none), registered per world with
 * dense ids, and the sorted component sets that name archetypes. */
#include "internal.h"

uint32_t tes_type_size(tes_type_t type) {
    switch (type) {
    case TES_F64:
        return 8;
    case TES_F32:
    case TES_I32:
    case TES_U32:
        return 4;
    case TES_I16:
    case TES_U16:
        return 2;
    case TES_I8:
    case TES_U8:
        return 1;
    }
    return 0;
}

/* Length of a name, or 0 when it is NULL, empty or too long. */
static size_t name_length(const char *name) {
    if (!name) return 0;
    size_t n = 0;
    while (name[n] && n <= TES_MAX_NAME_LENGTH)
        n++;
    return n <= TES_MAX_NAME_LENGTH ? n : 0;
}

static char *copy_name(tes_world_t *world, const char *name) {
    size_t n = name_length(name);
    char *copy = tesi_alloc(world, n + 1);
    if (copy) memcpy(copy, name, n + 1);
    return copy;
}

static void free_name(tes_world_t *world, char *name) {
    if (name) tesi_free(world, name, strlen(name) + 1);
}

static void free_component(tes_world_t *world, tesi_component_t *c) {
    tesi_sparse_fini(world, c);
    tesi_relation_fini(world, c);
    /* After the archetypes: freeing a tracker takes it out of this set. */
    tesi_free(world, c->dirty_set, c->dirty_set_slots * sizeof *c->dirty_set);
    if (c->fields) {
        for (uint32_t f = 0; f < c->field_count; f++)
            free_name(world, c->fields[f].name);
        tesi_free(world, c->fields, (size_t)c->field_count * sizeof *c->fields);
    }
    free_name(world, c->name);
}

#define RELATION_FLAGS (TES_RELATION_EXCLUSIVE | TES_RELATION_ACYCLIC | TES_RELATION_CASCADE)

tes_result_t tesi_check_schema(const tes_component_desc_t *desc) {
    if (!name_length(desc->name)) return TES_ERR_BAD_SCHEMA;
    uint32_t flags = desc->flags;
    if (flags &
        ~(TESI_OFF_CHUNK | RELATION_FLAGS | TES_COMPONENT_LOCAL | TES_COMPONENT_CHANGE_BY_VALUE)) {
        return TES_ERR_BAD_SCHEMA;
    }
    if ((flags & RELATION_FLAGS) && !(flags & TES_COMPONENT_RELATION)) return TES_ERR_BAD_SCHEMA;
    /* Values to compare: a tag has none, and a relation's pair writes travel as events. */
    if ((flags & TES_COMPONENT_CHANGE_BY_VALUE) &&
        ((flags & TES_COMPONENT_RELATION) || !desc->field_count)) {
        return TES_ERR_BAD_SCHEMA;
    }
    if ((flags & TES_RELATION_ACYCLIC) && !(flags & TES_RELATION_EXCLUSIVE)) {
        return TES_ERR_BAD_SCHEMA;
    }
    if (desc->field_count > TES_MAX_FIELDS) return TES_ERR_BAD_SCHEMA;
    if (desc->field_count && !desc->fields) return TES_ERR_BAD_SCHEMA;
    for (uint32_t f = 0; f < desc->field_count; f++) {
        const tes_field_desc_t *field = &desc->fields[f];
        if (!name_length(field->name) || !tes_type_size(field->type)) return TES_ERR_BAD_SCHEMA;
        if (field->length > TES_MAX_ARRAY_LENGTH) return TES_ERR_BAD_SCHEMA;
        for (uint32_t g = 0; g < f; g++) {
            if (strcmp(desc->fields[g].name, field->name) == 0) return TES_ERR_BAD_SCHEMA;
        }
    }
    return TES_OK;
}

tes_result_t tes_component_register(tes_world_t *world, const tes_component_desc_t *desc,
                                    tes_component_t *out_component) {
    if (!world || !desc || !out_component) return TES_ERR_INVALID_ARGUMENT;
    tes_result_t result = tesi_check_schema(desc);
    if (result != TES_OK) return result;
    tes_component_t existing;
    if (tes_component_lookup(world, desc->name, &existing) == TES_OK) {
        return TES_ERR_DUPLICATE_NAME;
    }
    if (world->component_count >= TES_MAX_COMPONENTS) return TES_ERR_TOO_MANY_COMPONENTS;
    result = tesi_reserve(world, (void **)&world->components, &world->component_slots,
                          world->component_count + 1, sizeof *world->components, 16);
    if (result == TES_OK && (desc->flags & TESI_OFF_CHUNK)) {
        result = tesi_reserve(world, (void **)&world->sparse_ids, &world->sparse_slots,
                              world->sparse_count + 1, sizeof *world->sparse_ids, 8);
    }
    if (result == TES_OK) result = tesi_rollback_reserve_component(world, world->component_count);
    if (result != TES_OK) return result;

    tesi_component_t c = {.field_count = desc->field_count, .flags = desc->flags};
    c.name = copy_name(world, desc->name);
    if (c.field_count) {
        c.fields = tesi_alloc(world, (size_t)c.field_count * sizeof *c.fields);
        if (c.fields) memset(c.fields, 0, (size_t)c.field_count * sizeof *c.fields);
    }
    if (!c.name || (c.field_count && !c.fields)) {
        free_component(world, &c);
        return TES_ERR_OUT_OF_MEMORY;
    }
    for (uint32_t f = 0; f < c.field_count; f++) {
        const tes_field_desc_t *fd = &desc->fields[f];
        tesi_field_t *field = &c.fields[f];
        field->name = copy_name(world, fd->name);
        if (!field->name) {
            free_component(world, &c);
            return TES_ERR_OUT_OF_MEMORY;
        }
        field->type = fd->type;
        field->length = fd->length ? fd->length : 1;
        field->bytes = tes_type_size(fd->type) * field->length;
        field->offset = tesi_align_up(c.stride, tes_type_size(fd->type));
        field->by_value = (desc->flags & TES_COMPONENT_CHANGE_BY_VALUE) != 0;
        c.stride = field->offset + field->bytes;
        c.row_bytes += field->bytes;
    }
    c.stride = tesi_align_up(c.stride, 8);
    if (tesi_is_sparse(&c)) world->sparse_ids[world->sparse_count++] = world->component_count;
    world->relation_count += tesi_is_relation(&c);
    world->components[world->component_count] = c;
    *out_component = world->component_count++;
    world->access_epoch++;
    tesi_rollback_add_component(world);
    return TES_OK;
}

/* Whether anything refers to the component: an archetype, a query (replicators' included), a
 * member or pair, change tracking, a replica's mapping. */
static bool in_use(const tes_world_t *world, tes_component_t component) {
    const tesi_component_t *c = &world->components[component];
    if (c->sparse.count || c->relation.pair_count || c->level != TES_UNTRACKED ||
        c->removal_consumers || c->relation.event_consumers) {
        return true;
    }
    for (uint32_t i = 0; i < world->archetype_count; i++) {
        const tesi_archetype_t *a = world->archetypes[i];
        if (a && tesi_type_index(a, component) != TESI_NO_TYPE) return true;
    }
    for (uint32_t i = 0; i < world->query_count; i++) {
        if (tesi_query_names(world->queries[i], component)) return true;
    }
    for (uint32_t i = 0; i < world->replica_id_count; i++) {
        if (world->replica_ids[i] == component) return true;
    }
    return false;
}

tes_result_t tes_component_unregister(tes_world_t *world, tes_component_t component) {
    if (!world) return TES_ERR_INVALID_ARGUMENT;
    if (component >= world->component_count) return TES_ERR_UNKNOWN_COMPONENT;
    return tesi_component_take_back(world, component) ? TES_OK : TES_ERR_INVALID_ARGUMENT;
}

bool tesi_component_take_back(tes_world_t *world, tes_component_t component) {
    if (component != world->component_count - 1 || in_use(world, component)) return false;
    tesi_rollback_drop_component(world, component);
    tesi_component_t *c = &world->components[component];
    /* The latest id is the last of the sparse list (ids ascend) when it is on it. */
    if (tesi_is_sparse(c)) world->sparse_count--;
    world->relation_count -= tesi_is_relation(c);
    free_component(world, c);
    *c = (tesi_component_t){0};
    world->component_count--;
    world->access_epoch++;
    return true;
}

tes_result_t tes_component_lookup(const tes_world_t *world, const char *name,
                                  tes_component_t *out_component) {
    if (!world || !name || !out_component) return TES_ERR_INVALID_ARGUMENT;
    for (uint32_t i = 0; i < world->component_count; i++) {
        if (strcmp(world->components[i].name, name) == 0) {
            *out_component = i;
            return TES_OK;
        }
    }
    return TES_ERR_UNKNOWN_COMPONENT;
}

tes_result_t tes_component_info(const tes_world_t *world, tes_component_t component,
                                tes_component_info_t *out) {
    if (!world || !out) return TES_ERR_INVALID_ARGUMENT;
    if (component >= world->component_count) return TES_ERR_UNKNOWN_COMPONENT;
    const tesi_component_t *c = &world->components[component];
    *out = (tes_component_info_t){c->name, c->field_count, c->row_bytes, c->flags};
    return TES_OK;
}

tes_result_t tes_field_info(const tes_world_t *world, tes_component_t component, uint32_t field,
                            tes_field_info_t *out) {
    if (!world || !out) return TES_ERR_INVALID_ARGUMENT;
    if (component >= world->component_count) return TES_ERR_UNKNOWN_COMPONENT;
    const tesi_component_t *c = &world->components[component];
    if (field >= c->field_count) return TES_ERR_UNKNOWN_FIELD;
    const tesi_field_t *f = &c->fields[field];
    *out = (tes_field_info_t){f->name, f->type, f->length, f->bytes};
    return TES_OK;
}

tes_result_t tes_field_lookup(const tes_world_t *world, tes_component_t component, const char *name,
                              uint32_t *out_field) {
    if (!world || !name || !out_field) return TES_ERR_INVALID_ARGUMENT;
    if (component >= world->component_count) return TES_ERR_UNKNOWN_COMPONENT;
    const tesi_component_t *c = &world->components[component];
    for (uint32_t f = 0; f < c->field_count; f++) {
        if (strcmp(c->fields[f].name, name) == 0) {
            *out_field = f;
            return TES_OK;
        }
    }
    return TES_ERR_UNKNOWN_FIELD;
}

void tesi_components_fini(tes_world_t *world) {
    for (uint32_t i = 0; i < world->component_count; i++) {
        free_component(world, &world->components[i]);
    }
    tesi_free(world, world->components, (size_t)world->component_slots * sizeof *world->components);
    tesi_free(world, world->sparse_ids, (size_t)world->sparse_slots * sizeof *world->sparse_ids);
}

tes_result_t tesi_sort_set(tes_world_t *world, const tes_component_t *components, uint32_t count) {
    if (count && !components) return TES_ERR_INVALID_ARGUMENT;
    if (count > world->component_count) {
        /* More ids than components exist: an unknown id or a duplicate, whichever comes. */
        for (uint32_t i = 0; i < count; i++) {
            if (components[i] >= world->component_count) return TES_ERR_UNKNOWN_COMPONENT;
        }
        return TES_ERR_INVALID_ARGUMENT;
    }
    tes_result_t result = tesi_reserve(world, (void **)&world->scratch, &world->scratch_slots,
                                       count + 1, sizeof *world->scratch, 32);
    if (result != TES_OK) return result;
    tes_component_t *set = world->scratch;
    /* Insertion sort: sets are short, and usually arrive sorted already. */
    for (uint32_t i = 0; i < count; i++) {
        tes_component_t c = components[i];
        if (c >= world->component_count) return TES_ERR_UNKNOWN_COMPONENT;
        uint32_t j = i;
        while (j > 0 && set[j - 1] > c) {
            set[j] = set[j - 1];
            j--;
        }
        if (j > 0 && set[j - 1] == c) return TES_ERR_INVALID_ARGUMENT; /* duplicate */
        set[j] = c;
    }
    return TES_OK;
}
