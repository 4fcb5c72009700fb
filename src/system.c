/* Stages and systems: a system is a query (its own consumer when it has filters) and a body;
 * tes_tick runs the due systems stage by stage in creation order, then prunes what every
 * consumer has seen. */
#include "internal.h"

struct tes_system_t {
    tes_query_t *query;
    tes_system_fn run;
    void *user;
    uint32_t stage;
    uint32_t interval;
};

tes_result_t tes_stage_create(tes_world_t *world, const char *name, uint32_t *out_stage) {
    if (!world || !name || !out_stage) return TES_ERR_INVALID_ARGUMENT;
    size_t length = strlen(name);
    if (!length || length > TES_MAX_NAME_LENGTH) return TES_ERR_INVALID_ARGUMENT;
    tes_result_t result = tesi_reserve(world, (void **)&world->stage_names, &world->stage_slots,
                                       world->stage_count + 1, sizeof *world->stage_names, 8);
    if (result != TES_OK) return result;
    char *copy = tesi_alloc(world, length + 1);
    if (!copy) return TES_ERR_OUT_OF_MEMORY;
    memcpy(copy, name, length + 1);
    world->stage_names[world->stage_count] = copy;
    *out_stage = world->stage_count++;
    return TES_OK;
}

tes_result_t tes_system_create(tes_world_t *world, const tes_system_desc_t *desc,
                               tes_system_t **out_system) {
    if (!world || !desc || !desc->run || !out_system) return TES_ERR_INVALID_ARGUMENT;
    if (desc->stage >= world->stage_count) return TES_ERR_UNKNOWN_STAGE;
    tes_result_t result = tesi_reserve(world, (void **)&world->systems, &world->system_slots,
                                       world->system_count + 1, sizeof *world->systems, 8);
    if (result != TES_OK) return result;
    tes_system_t *system = tesi_alloc(world, sizeof *system);
    if (!system) return TES_ERR_OUT_OF_MEMORY;
    *system = (tes_system_t){.run = desc->run,
                             .user = desc->user,
                             .stage = desc->stage,
                             .interval = desc->interval ? desc->interval : 1};
    result = tes_query_create(world, &desc->query, &system->query);
    if (result != TES_OK) {
        tesi_free(world, system, sizeof *system);
        return result;
    }
    world->systems[world->system_count++] = system;
    *out_system = system;
    return TES_OK;
}

void tes_system_destroy(tes_world_t *world, tes_system_t *system) {
    if (!world || !system) return;
    for (uint32_t i = 0; i < world->system_count; i++) {
        if (world->systems[i] != system) continue;
        /* Keep creation order: systems run in it. */
        memmove(world->systems + i, world->systems + i + 1,
                (world->system_count - i - 1) * sizeof *world->systems);
        world->system_count--;
        tes_query_destroy(world, system->query);
        tesi_free(world, system, sizeof *system);
        return;
    }
}

tes_result_t tes_tick(tes_world_t *world) {
    if (!world) return TES_ERR_INVALID_ARGUMENT;
    if (tesi_deferring(world)) return TES_ERR_INVALID_ARGUMENT; /* not from inside a run */
    for (uint32_t stage = 0; stage < world->stage_count; stage++) {
        for (uint32_t i = 0; i < world->system_count; i++) {
            tes_system_t *system = world->systems[i];
            if (system->stage != stage || world->frame % system->interval) continue;
            tes_iter_t it;
            tes_result_t result = tes_query_iter(world, system->query, &it);
            if (result != TES_OK) return result;
            system->run(&it, system->user);
            tes_iter_fini(&it); /* the run ends here even if the body stopped early */
        }
    }
    tesi_prune(world);
    world->frame++;
    return TES_OK;
}

void tesi_systems_fini(tes_world_t *world) {
    for (uint32_t i = 0; i < world->system_count; i++) {
        tesi_free(world, world->systems[i], sizeof *world->systems[i]);
    }
    tesi_free(world, world->systems, world->system_slots * sizeof *world->systems);
    for (uint32_t i = 0; i < world->stage_count; i++) {
        tesi_free(world, world->stage_names[i], strlen(world->stage_names[i]) + 1);
    }
    tesi_free(world, world->stage_names, world->stage_slots * sizeof *world->stage_names);
}
