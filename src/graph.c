/* The archetype graph: archetypes found by their sorted component set (an open-addressing map
 * probed by the set's hash), and "+C" / "-C" transitions cached as edges both ways. Edges
 * live in a flat array per archetype indexed by component id, each with the move plan that
 * copies a row across it, so a repeated add or remove costs one array load. */
#include "internal.h"

static uint64_t mix64(uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}

uint64_t tesi_hash_set(const tes_component_t *components, uint32_t count) {
    uint64_t h = 0x9e3779b97f4a7c15ull ^ count;
    for (uint32_t i = 0; i < count; i++)
        h = mix64(h + components[i]);
    return h;
}

static bool same_set(const tesi_archetype_t *a, const tes_component_t *components, uint32_t count) {
    return a->component_count == count &&
           (count == 0 || memcmp(a->components, components, count * sizeof *components) == 0);
}

/* ---- archetypes by set ----------------------------------------------------------------- */

tesi_archetype_t *tesi_graph_find(const tes_world_t *world, const tes_component_t *components,
                                  uint32_t count, uint64_t hash) {
    const tesi_graph_t *g = &world->graph;
    if (!g->type_slots) return NULL;
    uint32_t mask = g->type_slots - 1;
    for (uint32_t i = (uint32_t)hash & mask;; i = (i + 1) & mask) {
        uint32_t entry = g->types[i];
        if (!entry) return NULL;
        tesi_archetype_t *a = world->archetypes[entry - 1];
        if (a->hash == hash && same_set(a, components, count)) return a;
    }
}

static void type_put(tesi_graph_t *g, const tesi_archetype_t *a) {
    uint32_t mask = g->type_slots - 1;
    uint32_t i = (uint32_t)a->hash & mask;
    while (g->types[i])
        i = (i + 1) & mask;
    g->types[i] = a->id + 1;
}

tes_result_t tesi_graph_reserve(tes_world_t *world) {
    tesi_graph_t *g = &world->graph;
    /* Keep the load factor at most one half (reclaimed archetypes are not in the map). */
    if ((world->archetype_count - world->archetypes_reclaimed + 1) * 2 <= g->type_slots) {
        return TES_OK;
    }
    uint32_t slots = g->type_slots ? g->type_slots * 2 : 64;
    uint32_t *types = tesi_alloc(world, (size_t)slots * sizeof *types);
    if (!types) return TES_ERR_OUT_OF_MEMORY;
    memset(types, 0, (size_t)slots * sizeof *types);
    tesi_free(world, g->types, (size_t)g->type_slots * sizeof *g->types);
    g->types = types;
    g->type_slots = slots;
    for (uint32_t i = 0; i < world->archetype_count; i++) {
        if (world->archetypes[i]) type_put(g, world->archetypes[i]);
    }
    return TES_OK;
}

void tesi_graph_insert(tes_world_t *world, tesi_archetype_t *archetype) {
    type_put(&world->graph, archetype);
    world->graph.generation++;
}

/* ---- edges ----------------------------------------------------------------------------- */

/* Slot of `component` in a far-edge table of `slots` (a power of two): Fibonacci hashing. */
static inline uint32_t far_home(tes_component_t component, uint32_t slots) {
    return (uint32_t)(component * 2654435769u) & (slots - 1);
}

tesi_edge_t *tesi_far_edge(const tesi_archetype_t *a, tes_component_t component) {
    if (!a->far_slots) return NULL;
    uint32_t mask = a->far_slots - 1;
    for (uint32_t i = far_home(component, a->far_slots);; i = (i + 1) & mask) {
        tesi_far_edge_t *slot = &a->far_edges[i];
        if (slot->component == component) return &slot->edge;
        if (slot->component == TESI_FAR_EMPTY) return NULL;
    }
}

/* The free slot `component` goes to in a table of `slots` (at most half full). */
static tesi_far_edge_t *far_free(tesi_far_edge_t *table, uint32_t slots,
                                 tes_component_t component) {
    uint32_t i = far_home(component, slots);
    while (table[i].component != TESI_FAR_EMPTY)
        i = (i + 1) & (slots - 1);
    return &table[i];
}

/* A free slot for `component` in the far table (grown to stay at most half full); NULL when the
 * memory cannot be had. */
static tesi_edge_t *far_slot(tes_world_t *world, tesi_archetype_t *a, tes_component_t component) {
    if ((a->far_count + 1) * 2 > a->far_slots) {
        uint32_t slots = a->far_slots ? a->far_slots * 2 : 4;
        tesi_far_edge_t *table = tesi_alloc(world, (size_t)slots * sizeof *table);
        if (!table) return NULL;
        for (uint32_t i = 0; i < slots; i++)
            table[i].component = TESI_FAR_EMPTY;
        for (uint32_t i = 0; i < a->far_slots; i++) {
            const tesi_far_edge_t *old = &a->far_edges[i];
            if (old->component != TESI_FAR_EMPTY) *far_free(table, slots, old->component) = *old;
        }
        tesi_free(world, a->far_edges, (size_t)a->far_slots * sizeof *a->far_edges);
        a->far_edges = table;
        a->far_slots = slots;
    }
    tesi_far_edge_t *slot = far_free(a->far_edges, a->far_slots, component);
    *slot = (tesi_far_edge_t){.component = component};
    a->far_count++;
    return &slot->edge;
}

/* Room for from's edge by `c`: the flat array grown to cover a low id (zeroing the new slots),
 * a far slot for a high one. NULL when the memory cannot be had. */
static tesi_edge_t *edge_room(tes_world_t *world, tesi_archetype_t *a, tes_component_t c) {
    if (c >= TESI_DIRECT_IDS) return far_slot(world, a, c);
    uint32_t old = a->edge_slots;
    if (c >= old) {
        if (tesi_reserve(world, (void **)&a->edges, &a->edge_slots, c + 1, sizeof *a->edges, 16) !=
            TES_OK) {
            return NULL;
        }
        if (a->edge_slots > TESI_DIRECT_IDS) a->edge_slots = TESI_DIRECT_IDS; /* never past it */
        memset(a->edges + old, 0, (size_t)(a->edge_slots - old) * sizeof *a->edges);
    }
    return &a->edges[c];
}

/* Caches from --c--> to with its move plan. The cache is an optimisation: when memory for it
 * cannot be had, the transition still happens, it is just not remembered (or rows move by the
 * general merge walk). */
static void edge_cache(tes_world_t *world, tesi_archetype_t *from, tesi_archetype_t *to,
                       tes_component_t c) {
    if (tesi_edge_of(from, c)) return;
    tesi_edge_t *edge = edge_room(world, from, c);
    if (!edge) return;
    *edge = (tesi_edge_t){to, tesi_move_plan_make(world, to, from)};
    world->graph.edge_count++;
}

tes_result_t tesi_graph_step(tes_world_t *world, tesi_archetype_t *from, tes_component_t component,
                             bool removing, tesi_archetype_t **out,
                             const tesi_move_plan_t **out_plan) {
    const tesi_edge_t *cached = tesi_edge_of(from, component);
    if (cached) {
        *out = cached->target;
        *out_plan = cached->plan;
        return TES_OK;
    }
    tes_result_t result = tesi_reserve(world, (void **)&world->scratch, &world->scratch_slots,
                                       from->component_count + 1, sizeof *world->scratch, 32);
    if (result != TES_OK) return result;
    /* The neighbour's set: from's set with `component` inserted or taken out, still sorted. */
    uint32_t n = 0;
    bool placed = removing;
    for (uint32_t i = 0; i < from->component_count; i++) {
        tes_component_t c = from->components[i];
        if (!placed && c > component) {
            world->scratch[n++] = component;
            placed = true;
        }
        if (c != component) world->scratch[n++] = c;
    }
    if (!placed) world->scratch[n++] = component;
    tesi_archetype_t *to;
    result = tesi_archetype_ensure(world, n, &to);
    if (result != TES_OK) return result;
    edge_cache(world, from, to, component);
    edge_cache(world, to, from, component);
    *out = to;
    const tesi_edge_t *made = tesi_edge_of(from, component);
    *out_plan = made ? made->plan : NULL;
    return TES_OK;
}

/* Empties far slot i by backward shift (linear probing keeps every entry findable from its home
 * without tombstones): later entries of the cluster that may sit at i move up. */
static void far_delete(tesi_archetype_t *a, uint32_t i) {
    uint32_t mask = a->far_slots - 1;
    for (uint32_t j = (i + 1) & mask; a->far_edges[j].component != TESI_FAR_EMPTY;
         j = (j + 1) & mask) {
        uint32_t home = far_home(a->far_edges[j].component, a->far_slots);
        /* j's entry may fill i unless its home lies cyclically in (i, j]. */
        bool stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
        if (stays) continue;
        a->far_edges[i] = a->far_edges[j];
        i = j;
    }
    a->far_edges[i].component = TESI_FAR_EMPTY;
    a->far_count--;
}

/* Drops a's cached edges that lead to doomed archetypes. */
static void forget_edges(tes_world_t *world, tesi_archetype_t *a, const uint8_t *doomed) {
    for (uint32_t c = 0; c < a->edge_slots; c++) {
        tesi_edge_t *edge = &a->edges[c];
        if (!edge->target || !doomed[edge->target->id]) continue;
        tesi_move_plan_free(world, edge->plan);
        *edge = (tesi_edge_t){NULL, NULL};
        world->graph.edge_count--;
    }
    /* A slot is looked at again after a deletion: the shift may have moved an entry into it
     * (entries moved to slots already passed were looked at before). */
    for (uint32_t i = 0; i < a->far_slots;) {
        tesi_far_edge_t *slot = &a->far_edges[i];
        if (slot->component == TESI_FAR_EMPTY || !doomed[slot->edge.target->id]) {
            i++;
            continue;
        }
        tesi_move_plan_free(world, slot->edge.plan);
        far_delete(a, i);
        world->graph.edge_count--;
    }
}

void tesi_graph_forget(tes_world_t *world, const uint8_t *doomed) {
    tesi_graph_t *g = &world->graph;
    memset(g->types, 0, (size_t)g->type_slots * sizeof *g->types);
    for (uint32_t i = 0; i < world->archetype_count; i++) {
        tesi_archetype_t *a = world->archetypes[i];
        if (!a) continue;
        if (doomed[i]) {
            /* Its own edges go with it (tesi_edges_fini): only the count is kept right here. */
            for (uint32_t c = 0; c < a->edge_slots; c++)
                world->graph.edge_count -= a->edges[c].target != NULL;
            world->graph.edge_count -= a->far_count;
            continue;
        }
        forget_edges(world, a, doomed);
        type_put(g, a);
    }
    g->generation++;
}

void tesi_edges_fini(tes_world_t *world, tesi_archetype_t *a) {
    for (uint32_t c = 0; c < a->edge_slots; c++)
        tesi_move_plan_free(world, a->edges[c].plan);
    tesi_free(world, a->edges, (size_t)a->edge_slots * sizeof *a->edges);
    for (uint32_t i = 0; i < a->far_slots; i++) {
        if (a->far_edges[i].component != TESI_FAR_EMPTY)
            tesi_move_plan_free(world, a->far_edges[i].edge.plan);
    }
    tesi_free(world, a->far_edges, (size_t)a->far_slots * sizeof *a->far_edges);
}

/* Checks one cached edge from --c--> to: "+c" leads to a superset with one more member, "-c"
 * to a subset with one fewer. */
static bool edge_valid(const tesi_archetype_t *from, tes_component_t c,
                       const tesi_archetype_t *to) {
    bool removing = tesi_type_index(from, c) != TESI_NO_TYPE;
    bool to_has = tesi_type_index(to, c) != TESI_NO_TYPE;
    uint32_t expected = removing ? from->component_count - 1 : from->component_count + 1;
    if (to_has == removing || to->component_count != expected) return false;
    const tesi_archetype_t *small = removing ? to : from, *big = removing ? from : to;
    for (uint32_t k = 0; k < small->component_count; k++) {
        if (tesi_type_index(big, small->components[k]) == TESI_NO_TYPE) return false;
    }
    return true;
}

tes_result_t tesi_graph_validate(const tes_world_t *world) {
    uint32_t edges = 0;
    for (uint32_t i = 0; i < world->archetype_count; i++) {
        const tesi_archetype_t *from = world->archetypes[i];
        if (!from) continue;
        if (tesi_graph_find(world, from->components, from->component_count, from->hash) != from) {
            return TES_ERR_CORRUPT;
        }
        if (from->edge_slots > TESI_DIRECT_IDS) return TES_ERR_CORRUPT;
        for (tes_component_t c = 0; c < from->edge_slots; c++) {
            const tesi_archetype_t *to = from->edges[c].target;
            if (!to) continue;
            edges++;
            if (!edge_valid(from, c, to)) return TES_ERR_CORRUPT;
        }
        uint32_t far = 0;
        for (uint32_t i = 0; i < from->far_slots; i++) {
            const tesi_far_edge_t *slot = &from->far_edges[i];
            if (slot->component == TESI_FAR_EMPTY) continue;
            far++;
            /* Findable from its home slot, and valid. */
            if (slot->component < TESI_DIRECT_IDS || !slot->edge.target ||
                tesi_far_edge(from, slot->component) != &slot->edge ||
                !edge_valid(from, slot->component, slot->edge.target)) {
                return TES_ERR_CORRUPT;
            }
        }
        if (far != from->far_count || far * 2 > from->far_slots) return TES_ERR_CORRUPT;
        edges += far;
    }
    return edges == world->graph.edge_count ? TES_OK : TES_ERR_CORRUPT;
}

void tesi_graph_fini(tes_world_t *world) {
    tesi_graph_t *g = &world->graph;
    tesi_free(world, g->types, (size_t)g->type_slots * sizeof *g->types);
}
