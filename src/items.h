/* The item calls' shared parts: the view a call builds of its items (items_check.c), the plan
 * and commit phases and the calls (items.c), and the calls over a query (items_query.c). */
#ifndef TESSERA_ITEMS_H
#define TESSERA_ITEMS_H

#include "internal.h"

typedef enum edit_t {
    EDIT_SPAWN,  /* new entities: values are initial */
    EDIT_ADD,    /* values of items the entity had are changes, of new ones initial */
    EDIT_INIT,   /* an add whose values are all initial: the items of a recorded spawn */
    EDIT_SET,    /* values only, all changes */
    EDIT_REMOVE, /* no values */
} edit_t;

/* One call's view of its items, built by check_items in the world's scratch (world->edit). */
typedef struct call_t {
    tes_world_t *world;
    edit_t kind;
    const tes_items_t *x;
    tes_fault_t *fault;
    /* The entities the call names: its values with a stride take the numbers of positions
     * first .. first + n - 1 of the caller's list (a recorded call applies one at a time). */
    uint32_t first, n;
    const tes_component_t *table; /* the chunk components among the items, ascending */
    uint32_t table_count;
    const uint32_t
        *pairs; /* indices of the pair items (and bare relations), by (relation, target) */
    uint32_t pair_count;
    uint32_t sparse_count; /* sparse components (not relations) among the items */
    bool deferring;
    bool record; /* a write that must follow recorded commands: record the call */
} call_t;

static inline bool tesi_items_adding(edit_t kind) {
    return kind == EDIT_SPAWN || kind == EDIT_ADD || kind == EDIT_INIT;
}

/* Checks the items and values (a fault names the culprit) and builds the call's view of them. */
tes_result_t tesi_items_check(call_t *call);
/* The check phase (items_check.c): every listed entity alive (or, while recording, pending),
 * none twice; what the entities have (cycles, missing items); whether a placed entity has an
 * item now, and where its pair is (id + 1). */
tes_result_t tesi_items_check_entities(const call_t *call, const tes_entity_t *entities,
                                       uint32_t n);
tes_result_t tesi_items_check_placed(call_t *call, const tes_entity_t *entities, uint32_t n);
bool tesi_items_has(const tes_world_t *world, const tesi_record_t *record, tes_entity_t entity,
                    const tes_item_t *item, uint32_t *out_pair);
/* Fills the call's fault, returns `result`. */
tes_result_t tesi_items_fail(const call_t *call, tes_result_t result, uint32_t item, uint32_t value,
                             uint32_t number, tes_entity_t entity);
/* Whether `from`'s target exists or could be made (TES_ERR_ROW_TOO_LARGE), creating nothing. */
tes_result_t tesi_items_target_fits(const call_t *call, const tesi_archetype_t *from);
/* The archetype `from` becomes (created when missing) and the move there. */
tes_result_t tesi_items_target_of(const call_t *call, tesi_archetype_t *from,
                                  tesi_archetype_t **out, const tesi_move_plan_t **out_moves);
/* Clears the plans (world->edit.plans) and their archetypes' marks. */
void tesi_items_unplan(tes_world_t *world);
/* Gives back the rows the plans reserved in their targets. */
void tesi_items_unreserve_rows(const call_t *call);
/* Add, init, set or remove for a list of entities that exist (placed, or pending while
 * recording): the three phases. */
tes_result_t tesi_items_edit(tes_world_t *world, edit_t kind, const tes_entity_t *entities,
                             uint32_t n, uint32_t first, const tes_items_t *x, tes_fault_t *fault);

#endif
