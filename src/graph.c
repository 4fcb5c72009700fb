/* The archetype graph: archetypes found by their sorted component set (an open-addressing map
 * probed by the set's hash), and "+C" / "-C" transitions cached as edges both ways, so that a
 * repeated add or remove costs one hash probe. */
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
    /* Keep the load factor at most one half. */
    if ((world->archetype_count + 1) * 2 <= g->type_slots) return TES_OK;
    uint32_t slots = g->type_slots ? g->type_slots * 2 : 64;
    uint32_t *types = tesi_alloc(world, (size_t)slots * sizeof *types);
    if (!types) return TES_ERR_OUT_OF_MEMORY;
    memset(types, 0, (size_t)slots * sizeof *types);
    tesi_free(world, g->types, (size_t)g->type_slots * sizeof *g->types);
    g->types = types;
    g->type_slots = slots;
    for (uint32_t i = 0; i < world->archetype_count; i++) {
        type_put(g, world->archetypes[i]);
    }
    return TES_OK;
}

void tesi_graph_insert(tes_world_t *world, tesi_archetype_t *archetype) {
    type_put(&world->graph, archetype);
    world->graph.generation++;
}

/* ---- edges ----------------------------------------------------------------------------- */

static uint64_t edge_key(tes_archetype_t from, tes_component_t component, bool removing) {
    return (((uint64_t)from << 32) | ((uint64_t)component << 1) | (uint64_t)removing) + 1u;
}

static const tesi_edge_t *edge_find(const tesi_graph_t *g, uint64_t key) {
    if (!g->edge_slots) return NULL;
    uint32_t mask = g->edge_slots - 1;
    for (uint32_t i = (uint32_t)mix64(key) & mask;; i = (i + 1) & mask) {
        const tesi_edge_t *e = &g->edges[i];
        if (e->key == key) return e;
        if (!e->key) return NULL;
    }
}

/* Inserts an entry whose key is not in the table yet. */
static void edge_put(tesi_edge_t *edges, uint32_t slots, tesi_edge_t edge) {
    uint32_t mask = slots - 1;
    uint32_t i = (uint32_t)mix64(edge.key) & mask;
    while (edges[i].key)
        i = (i + 1) & mask;
    edges[i] = edge;
}

/* The move plan from `src` rows to `dst` rows: for each dst column, the matching src column
 * (found by one merge walk over the two key-sorted lists) or TESI_NEW_COLUMN. */
static tesi_move_t *plan_moves(tes_world_t *world, const tesi_archetype_t *dst,
                               const tesi_archetype_t *src) {
    if (!dst->column_count) return NULL;
    tesi_move_t *moves = tesi_alloc(world, dst->column_count * sizeof *moves);
    if (!moves) return NULL;
    const tesi_column_t *sc = src->columns, *send = src->columns + src->column_count;
    for (uint32_t d = 0; d < dst->column_count; d++) {
        const tesi_column_t *dc = &dst->columns[d];
        while (sc < send && sc->key < dc->key)
            sc++;
        bool shared = sc < send && sc->key == dc->key;
        moves[d] = (tesi_move_t){dc->offset, shared ? sc->offset : TESI_NEW_COLUMN, dc->bytes};
    }
    return moves;
}

static void edge_add(tes_world_t *world, tesi_archetype_t *from, tesi_archetype_t *to,
                     tes_component_t c, bool removing) {
    tesi_graph_t *g = &world->graph;
    uint64_t key = edge_key(from->id, c, removing);
    if (edge_find(g, key)) return;
    edge_put(g->edges, g->edge_slots, (tesi_edge_t){key, to->id, plan_moves(world, to, from)});
    g->edge_count++;
}

/* Caches a -> b for "+c" and b -> a for "-c", each with its move plan. The cache is an
 * optimisation: when memory for it cannot be had, the transition still happens, it is just
 * not remembered (or rows move by the general merge walk). */
static void edge_cache(tes_world_t *world, tesi_archetype_t *a, tesi_archetype_t *b,
                       tes_component_t c) {
    tesi_graph_t *g = &world->graph;
    if ((g->edge_count + 2) * 2 > g->edge_slots) {
        uint32_t slots = g->edge_slots ? g->edge_slots * 2 : 256;
        tesi_edge_t *edges = tesi_alloc(world, (size_t)slots * sizeof *edges);
        if (!edges) return;
        memset(edges, 0, (size_t)slots * sizeof *edges);
        for (uint32_t i = 0; i < g->edge_slots; i++) {
            if (g->edges[i].key) edge_put(edges, slots, g->edges[i]);
        }
        tesi_free(world, g->edges, (size_t)g->edge_slots * sizeof *g->edges);
        g->edges = edges;
        g->edge_slots = slots;
    }
    edge_add(world, a, b, c, false);
    edge_add(world, b, a, c, true);
}

tes_result_t tesi_graph_step(tes_world_t *world, tesi_archetype_t *from, tes_component_t component,
                             bool removing, tesi_archetype_t **out, const tesi_move_t **out_moves) {
    uint64_t key = edge_key(from->id, component, removing);
    const tesi_edge_t *edge = edge_find(&world->graph, key);
    if (edge) {
        *out = world->archetypes[edge->target];
        *out_moves = edge->moves;
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
    if (removing) {
        edge_cache(world, to, from, component);
    } else {
        edge_cache(world, from, to, component);
    }
    edge = edge_find(&world->graph, key);
    *out = to;
    *out_moves = edge ? edge->moves : NULL;
    return TES_OK;
}

tes_result_t tesi_graph_validate(const tes_world_t *world) {
    const tesi_graph_t *g = &world->graph;
    uint32_t edges = 0;
    for (uint32_t i = 0; i < g->edge_slots; i++) {
        const tesi_edge_t *e = &g->edges[i];
        if (!e->key) continue;
        edges++;
        uint64_t key = e->key - 1;
        tes_archetype_t from_id = (tes_archetype_t)(key >> 32);
        tes_component_t c = (tes_component_t)((key >> 1) & 0x7fffffffu);
        bool removing = key & 1u;
        if (from_id >= world->archetype_count || e->target >= world->archetype_count) {
            return TES_ERR_CORRUPT;
        }
        const tesi_archetype_t *from = world->archetypes[from_id];
        const tesi_archetype_t *to = world->archetypes[e->target];
        /* "+c" leads to a set with c and one more member; "-c" to one without c, one fewer. */
        bool has_c = tesi_type_index(to, c) != TESI_NO_TYPE;
        uint32_t expected = removing ? from->component_count - 1 : from->component_count + 1;
        if (has_c == removing || to->component_count != expected) return TES_ERR_CORRUPT;
        const tesi_archetype_t *small = removing ? to : from, *big = removing ? from : to;
        for (uint32_t k = 0; k < small->component_count; k++) {
            if (tesi_type_index(big, small->components[k]) == TESI_NO_TYPE) {
                return TES_ERR_CORRUPT;
            }
        }
    }
    if (edges != g->edge_count) return TES_ERR_CORRUPT;
    for (uint32_t i = 0; i < world->archetype_count; i++) {
        const tesi_archetype_t *a = world->archetypes[i];
        if (tesi_graph_find(world, a->components, a->component_count, a->hash) != a) {
            return TES_ERR_CORRUPT;
        }
    }
    return TES_OK;
}

void tesi_graph_fini(tes_world_t *world) {
    tesi_graph_t *g = &world->graph;
    for (uint32_t i = 0; i < g->edge_slots; i++) {
        const tesi_edge_t *e = &g->edges[i];
        if (e->key && e->moves) {
            tesi_free(world, e->moves,
                      world->archetypes[e->target]->column_count * sizeof *e->moves);
        }
    }
    tesi_free(world, g->types, (size_t)g->type_slots * sizeof *g->types);
    tesi_free(world, g->edges, (size_t)g->edge_slots * sizeof *g->edges);
}
