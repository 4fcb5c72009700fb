/* Archetypes, chunks and the archetype graph: identity of component sets, graph counters,
 * column alignment, chunk packing, chunk sizing, the chunk pool. */
#include "fixtures.h"

static const tes_field_desc_t position_fields[] = {{"x", TES_F32, 0}, {"y", TES_F32, 0}};
static const tes_field_desc_t id_fields[] = {{"v", TES_U32, 0}};
/* Odd sizes, to catch columns laid out without padding. */
static const tes_field_desc_t odd_fields[] = {
    {"a", TES_U8, 0}, {"b", TES_I16, 3}, {"c", TES_F64, 0}, {"d", TES_I8, 5}, {"e", TES_U16, 0}};

static tes_archetype_t find(tes_world_t *world, const tes_component_t *set, uint32_t count) {
    tes_archetype_t a = UINT32_MAX;
    CHECK_OK(tes_archetype_find(world, set, count, &a));
    return a;
}

TEST(archetype_find_same_set_in_any_order) {
    tes_world_t *world = fx_world(NULL);
    tes_component_t p = fx_component(world, "Position", position_fields, 2);
    tes_component_t id = fx_component(world, "Id", id_fields, 1);
    tes_component_t t = fx_tag(world, "Frozen");
    tes_component_t a1[] = {p, id, t}, a2[] = {t, id, p}, a3[] = {id, t, p};
    tes_archetype_t x = find(world, a1, 3);
    CHECK_EQ(find(world, a2, 3), x);
    CHECK_EQ(find(world, a3, 3), x);
    tes_entity_t e;
    CHECK_OK(tes_spawn(world, a3, 3, &e));
    CHECK_EQ(fx_archetype_of(world, e), x);
    CHECK_EQ(tes_archetype_count(world), 2);
}

TEST(archetype_find_creates_then_finds) {
    tes_world_t *world = fx_world(NULL);
    tes_component_t p = fx_component(world, "Position", position_fields, 2);
    tes_component_t id = fx_component(world, "Id", id_fields, 1);
    tes_component_t set[] = {id, p};
    uint32_t before = tes_archetype_count(world);
    tes_archetype_t a = find(world, set, 2);
    CHECK_EQ(tes_archetype_count(world), before + 1);
    CHECK_EQ(a, before); /* dense ids */
    tes_archetype_info_t info = fx_archetype(world, a);
    CHECK_EQ(info.component_count, 2);
    CHECK_EQ(info.entity_count, 0);
    CHECK_EQ(info.chunk_count, 0);
    CHECK(info.capacity >= 1);
    CHECK_EQ(find(world, set, 2), a);
    CHECK_EQ(tes_archetype_count(world), before + 1);
    tes_entity_t e;
    CHECK_OK(tes_spawn(world, set, 2, &e));
    CHECK_EQ(fx_archetype_of(world, e), a);
    CHECK_OK(tes_world_validate(world));
}

TEST(archetype_find_empty_set_is_the_empty_archetype) {
    tes_world_t *world = fx_world(NULL);
    fx_tag(world, "Frozen");
    CHECK_EQ(find(world, NULL, 0), TES_EMPTY_ARCHETYPE);
    CHECK_EQ(tes_archetype_count(world), 1);
}

TEST(archetype_find_rejects_duplicates_and_unknown_components) {
    tes_world_t *world = fx_world(NULL);
    tes_component_t p = fx_component(world, "Position", position_fields, 2);
    tes_component_t t = fx_tag(world, "Frozen");
    fx_snapshot_t *before = fx_snapshot_of(world);
    tes_archetype_t a;
    tes_component_t dup[] = {p, t, p};
    CHECK_ERR(tes_archetype_find(world, dup, 3, &a), TES_ERR_INVALID_ARGUMENT);
    tes_component_t unknown[] = {p, t + 1};
    CHECK_ERR(tes_archetype_find(world, unknown, 2, &a), TES_ERR_UNKNOWN_COMPONENT);
    CHECK_ERR(tes_archetype_find(world, NULL, 2, &a), TES_ERR_INVALID_ARGUMENT);
    CHECK_ERR(tes_archetype_find(world, dup, 1, NULL), TES_ERR_INVALID_ARGUMENT);
    FX_CHECK_UNCHANGED(before, world);
}

TEST(archetype_info_lists_components_sorted) {
    tes_world_t *world = fx_world(NULL);
    tes_component_t c[6];
    char name[8];
    for (int i = 0; i < 6; i++) {
        snprintf(name, sizeof name, "c%d", i);
        c[i] = i % 2 ? fx_tag(world, name) : fx_component(world, name, id_fields, 1);
    }
    tes_component_t set[] = {c[5], c[0], c[3], c[2]};
    tes_archetype_info_t info = fx_archetype(world, find(world, set, 4));
    CHECK_EQ(info.component_count, 4);
    CHECK_EQ(info.components[0], c[0]);
    CHECK_EQ(info.components[1], c[2]);
    CHECK_EQ(info.components[2], c[3]);
    CHECK_EQ(info.components[3], c[5]);
}

TEST(archetype_ids_are_dense_and_stable) {
    tes_world_t *world = fx_world(NULL);
    tes_component_t c[5];
    char name[8];
    for (int i = 0; i < 5; i++) {
        snprintf(name, sizeof name, "t%d", i);
        c[i] = fx_tag(world, name);
    }
    tes_archetype_t ids[5];
    for (uint32_t i = 0; i < 5; i++) {
        ids[i] = find(world, c, i + 1);
        CHECK_EQ(ids[i], i + 1);
    }
    for (uint32_t i = 0; i < 5; i++)
        CHECK_EQ(find(world, c, i + 1), ids[i]);
    CHECK_EQ(tes_archetype_count(world), 6);
}

TEST(unknown_archetype_is_rejected) {
    tes_world_t *world = fx_world(NULL);
    tes_component_t p = fx_component(world, "Position", position_fields, 2);
    tes_component_t t = fx_tag(world, "Frozen");
    tes_entity_t e;
    CHECK_OK(tes_spawn(world, &p, 1, &e));
    fx_snapshot_t *before = fx_snapshot_of(world);
    const tes_archetype_t bad[] = {tes_archetype_count(world), 1000, UINT32_MAX};
    for (int i = 0; i < 3; i++) {
        tes_archetype_info_t info;
        tes_chunk_info_t chunk;
        void *column;
        CHECK_ERR(tes_archetype_info(world, bad[i], &info), TES_ERR_UNKNOWN_ARCHETYPE);
        CHECK_ERR(tes_chunk_info(world, bad[i], 0, &chunk), TES_ERR_UNKNOWN_ARCHETYPE);
        CHECK_ERR(tes_chunk_column(world, bad[i], 0, p, 0, &column), TES_ERR_UNKNOWN_ARCHETYPE);
        CHECK_ERR(tes_archetype_add(world, bad[i], t), TES_ERR_UNKNOWN_ARCHETYPE);
        CHECK_ERR(tes_archetype_remove(world, bad[i], p), TES_ERR_UNKNOWN_ARCHETYPE);
    }
    FX_CHECK_UNCHANGED(before, world);
}

TEST(chunk_index_out_of_range_is_rejected) {
    tes_world_t *world = fx_world(NULL);
    tes_component_t p = fx_component(world, "Position", position_fields, 2);
    tes_entity_t e;
    CHECK_OK(tes_spawn(world, &p, 1, &e));
    tes_archetype_t a = fx_archetype_of(world, e);
    tes_chunk_info_t chunk;
    void *column;
    CHECK_ERR(tes_chunk_info(world, a, 1, &chunk), TES_ERR_INVALID_ARGUMENT);
    CHECK_ERR(tes_chunk_column(world, a, 1, p, 0, &column), TES_ERR_INVALID_ARGUMENT);
    CHECK_ERR(tes_chunk_info(world, a, UINT32_MAX, &chunk), TES_ERR_INVALID_ARGUMENT);
    /* The empty archetype holds no entity and so no chunk. */
    CHECK_ERR(tes_chunk_info(world, TES_EMPTY_ARCHETYPE, 0, &chunk), TES_ERR_INVALID_ARGUMENT);
}

TEST(graph_generation_grows_by_one_per_new_archetype) {
    tes_world_t *world = fx_world(NULL);
    tes_component_t p = fx_component(world, "Position", position_fields, 2);
    tes_component_t id = fx_component(world, "Id", id_fields, 1);
    tes_component_t t = fx_tag(world, "Frozen");
    uint32_t g = fx_stats(world).graph_generation;
    tes_entity_t e;
    CHECK_OK(tes_spawn(world, &p, 1, &e)); /* {P} */
    CHECK_EQ(fx_stats(world).graph_generation, g + 1);
    CHECK_OK(tes_add(world, e, t)); /* {P,T} */
    CHECK_EQ(fx_stats(world).graph_generation, g + 2);
    CHECK_OK(tes_remove(world, e, p)); /* {T} */
    CHECK_EQ(fx_stats(world).graph_generation, g + 3);
    tes_component_t pid[] = {p, id};
    find(world, pid, 2); /* {P,Id} */
    CHECK_EQ(fx_stats(world).graph_generation, g + 4);
    CHECK_OK(tes_archetype_add(world, fx_archetype_of(world, e), id)); /* {Id,T} */
    CHECK_EQ(fx_stats(world).graph_generation, g + 5);
    CHECK_EQ(fx_stats(world).archetype_count, 6);
}

TEST(graph_generation_unchanged_by_cached_moves) {
    tes_world_t *world = fx_world(NULL);
    tes_component_t p = fx_component(world, "Position", position_fields, 2);
    tes_component_t t = fx_tag(world, "Frozen");
    tes_entity_t e[20];
    CHECK_OK(tes_spawn_batch(world, &p, 1, 20, e));
    CHECK_OK(tes_add(world, e[0], t));
    CHECK_OK(tes_remove(world, e[0], t));
    tes_world_stats_t s = fx_stats(world);
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 20; i++)
            CHECK_OK(tes_add(world, e[i], t));
        for (int i = 0; i < 20; i++)
            CHECK_OK(tes_remove(world, e[i], t));
        tes_entity_t extra;
        CHECK_OK(tes_spawn(world, &p, 1, &extra));
        CHECK_OK(tes_despawn(world, extra));
        tes_component_t pt[] = {t, p};
        find(world, pt, 2);
    }
    tes_world_stats_t after = fx_stats(world);
    CHECK_EQ(after.graph_generation, s.graph_generation);
    CHECK_EQ(after.archetype_count, s.archetype_count);
    CHECK_EQ(after.edge_count, s.edge_count);
}

TEST(edge_count_grows_on_first_transition_then_stays) {
    tes_world_t *world = fx_world(NULL);
    tes_component_t p = fx_component(world, "Position", position_fields, 2);
    tes_component_t t = fx_tag(world, "Frozen");
    tes_component_t id = fx_component(world, "Id", id_fields, 1);
    tes_entity_t e[4];
    CHECK_OK(tes_spawn_batch(world, &p, 1, 4, e));
    uint32_t e0 = fx_stats(world).edge_count;
    CHECK_OK(tes_add(world, e[0], t)); /* {P} -> {P,T}: first time */
    uint32_t e1 = fx_stats(world).edge_count;
    CHECK(e1 > e0);
    CHECK_OK(tes_remove(world, e[0], t)); /* {P,T} -> {P} */
    uint32_t e2 = fx_stats(world).edge_count;
    CHECK(e2 >= e1);
    for (int round = 0; round < 5; round++) {
        for (int i = 0; i < 4; i++)
            CHECK_OK(tes_add(world, e[i], t));
        for (int i = 0; i < 4; i++)
            CHECK_OK(tes_remove(world, e[i], t));
    }
    CHECK_EQ(fx_stats(world).edge_count, e2);
    CHECK_OK(tes_remove(world, e[1], p)); /* {P} -> {}: a new transition */
    uint32_t e3 = fx_stats(world).edge_count;
    CHECK(e3 > e2);
    CHECK_OK(tes_add(world, e[1], p));
    CHECK_OK(tes_remove(world, e[1], p));
    CHECK_OK(tes_add(world, e[1], p));
    uint32_t e4 = fx_stats(world).edge_count;
    CHECK(e4 >= e3);
    CHECK_OK(tes_add(world, e[2], id)); /* {P} -> {P,Id} */
    CHECK(fx_stats(world).edge_count > e4);
    CHECK_OK(tes_world_validate(world));
}

TEST(chunk_columns_are_16_byte_aligned) {
    static const uint32_t chunk_sizes[] = {1024, 1088, 5056, 16384};
    for (size_t s = 0; s < sizeof chunk_sizes / sizeof chunk_sizes[0]; s++) {
        tes_world_desc_t desc = {.chunk_bytes = chunk_sizes[s]};
        tes_world_t *world = fx_world(&desc);
        tes_component_t odd = fx_component(world, "Odd", odd_fields, 5);
        tes_component_t p = fx_component(world, "Position", position_fields, 2);
        tes_component_t id = fx_component(world, "Id", id_fields, 1);
        tes_component_t t = fx_tag(world, "Frozen");
        tes_component_t sets[4][3] = {{odd, 0, 0}, {odd, id, 0}, {id, t, p}, {p, odd, t}};
        const uint32_t counts[4] = {1, 2, 3, 3};
        for (int k = 0; k < 4; k++) {
            tes_archetype_t a = find(world, sets[k], counts[k]);
            uint32_t n = fx_archetype(world, a).capacity * 2 + 1;
            CHECK_OK(tes_spawn_batch(world, sets[k], counts[k], n, NULL));
            tes_archetype_info_t info = fx_archetype(world, a);
            CHECK_EQ(info.chunk_count, 3);
            for (uint32_t chunk = 0; chunk < info.chunk_count; chunk++) {
                for (uint32_t i = 0; i < info.component_count; i++) {
                    tes_component_info_t c;
                    CHECK_OK(tes_component_info(world, info.components[i], &c));
                    for (uint32_t f = 0; f < c.field_count; f++) {
                        void *column = NULL;
                        CHECK_OK(tes_chunk_column(world, a, chunk, info.components[i], f, &column));
                        CHECK(column != NULL);
                        CHECK_EQ((uintptr_t)column % 16, 0);
                    }
                }
            }
        }
    }
}

TEST(field_ptr_is_the_entity_slot_of_its_chunk_column) {
    tes_world_desc_t desc = {.chunk_bytes = 1024};
    tes_world_t *world = fx_world(&desc);
    tes_component_t odd = fx_component(world, "Odd", odd_fields, 5);
    tes_component_t id = fx_component(world, "Id", id_fields, 1);
    tes_component_t set[] = {odd, id};
    tes_entity_t e[200];
    CHECK_OK(tes_spawn_batch(world, set, 2, 200, e));
    for (int i = 0; i < 200; i++) {
        tes_location_t loc = fx_check_location(world, e[i]);
        for (uint32_t f = 0; f < 5; f++) {
            void *column, *ptr;
            tes_field_info_t info;
            CHECK_OK(tes_field_info(world, odd, f, &info));
            CHECK_OK(tes_chunk_column(world, loc.archetype, loc.chunk, odd, f, &column));
            CHECK_OK(tes_field_ptr(world, e[i], odd, f, &ptr));
            CHECK(ptr == (unsigned char *)column + (size_t)loc.row * info.bytes);
            CHECK_EQ((uintptr_t)ptr % tes_type_size(info.type), 0);
        }
    }
}

TEST(chunk_column_holds_the_entities_field_values) {
    tes_world_desc_t desc = {.chunk_bytes = 1024};
    tes_world_t *world = fx_world(&desc);
    tes_component_t p = fx_component(world, "Position", position_fields, 2);
    tes_component_t id = fx_component(world, "Id", id_fields, 1);
    tes_component_t set[] = {p, id};
    tes_entity_t e[300];
    CHECK_OK(tes_spawn_batch(world, set, 2, 300, e));
    for (int i = 0; i < 300; i++) {
        CHECK_OK(tes_set_number(world, e[i], id, 0, 0, 1000 + i));
        CHECK_OK(tes_set_number(world, e[i], p, 1, 0, i * 0.5));
    }
    tes_archetype_t a = fx_archetype_of(world, e[0]);
    tes_archetype_info_t info = fx_archetype(world, a);
    uint32_t seen = 0;
    for (uint32_t k = 0; k < info.chunk_count; k++) {
        tes_chunk_info_t chunk;
        void *ids, *ys;
        CHECK_OK(tes_chunk_info(world, a, k, &chunk));
        CHECK_OK(tes_chunk_column(world, a, k, id, 0, &ids));
        CHECK_OK(tes_chunk_column(world, a, k, p, 1, &ys));
        for (uint32_t row = 0; row < chunk.count; row++) {
            double v = fx_get_number(world, chunk.entities[row], id, 0, 0);
            CHECK_EQ(((uint32_t *)ids)[row], (uint32_t)v);
            CHECK_NUM_EQ(((float *)ys)[row], (v - 1000) * 0.5);
            /* Writes through the column are what get reads. */
            ((uint32_t *)ids)[row] = (uint32_t)v + 1;
            CHECK_NUM_EQ(fx_get_number(world, chunk.entities[row], id, 0, 0), v + 1);
            seen++;
        }
    }
    CHECK_EQ(seen, 300);
}

TEST(chunk_column_rejects_tags_missing_components_and_unknown_fields) {
    tes_world_t *world = fx_world(NULL);
    tes_component_t p = fx_component(world, "Position", position_fields, 2);
    tes_component_t id = fx_component(world, "Id", id_fields, 1);
    tes_component_t t = fx_tag(world, "Frozen");
    tes_component_t set[] = {p, t};
    tes_entity_t e;
    CHECK_OK(tes_spawn(world, set, 2, &e));
    tes_archetype_t a = fx_archetype_of(world, e);
    void *column;
    CHECK_ERR(tes_chunk_column(world, a, 0, t, 0, &column), TES_ERR_TAG_HAS_NO_DATA);
    CHECK_ERR(tes_chunk_column(world, a, 0, id, 0, &column), TES_ERR_MISSING_COMPONENT);
    CHECK_ERR(tes_chunk_column(world, a, 0, p, 2, &column), TES_ERR_UNKNOWN_FIELD);
    CHECK_ERR(tes_chunk_column(world, a, 0, t + 1, 0, &column), TES_ERR_UNKNOWN_COMPONENT);
    CHECK_ERR(tes_chunk_column(world, a, 0, p, 0, NULL), TES_ERR_INVALID_ARGUMENT);
}

TEST(chunks_stay_packed_after_random_despawns) {
    tes_world_desc_t desc = {.chunk_bytes = 1024};
    tes_world_t *world = fx_world(&desc);
    tes_component_t p = fx_component(world, "Position", position_fields, 2);
    tes_component_t id = fx_component(world, "Id", id_fields, 1);
    tes_component_t set[] = {p, id};
    enum { N = 2000 };
    tes_entity_t e[N];
    bool alive[N];
    CHECK_OK(tes_spawn_batch(world, set, 2, N, e));
    for (int i = 0; i < N; i++) {
        CHECK_OK(tes_set_number(world, e[i], id, 0, 0, i));
        alive[i] = true;
    }
    fx_rng_t rng = {12345};
    for (int k = 0; k < 1500; k++) {
        uint32_t i = fx_rng_below(&rng, N);
        if (!alive[i]) continue;
        CHECK_OK(tes_despawn(world, e[i]));
        alive[i] = false;
        if (k % 100 == 0) fx_check_all_packed(world);
    }
    fx_check_all_packed(world);
    uint32_t live = 0;
    for (int i = 0; i < N; i++) {
        CHECK_EQ(tes_is_alive(world, e[i]), alive[i]);
        if (!alive[i]) continue;
        live++;
        CHECK_NUM_EQ(fx_get_number(world, e[i], id, 0, 0), i);
    }
    tes_archetype_info_t info = fx_archetype(world, fx_archetype_of(world, e[N - 1]));
    CHECK_EQ(info.entity_count, live);
    CHECK_EQ(info.chunk_count, (live + info.capacity - 1) / info.capacity);
    CHECK_OK(tes_world_validate(world));
}

TEST(hole_in_a_full_chunk_is_filled_from_the_last_chunk) {
    tes_world_desc_t desc = {.chunk_bytes = 1024};
    tes_world_t *world = fx_world(&desc);
    tes_component_t id = fx_component(world, "Id", id_fields, 1);
    tes_component_t t = fx_tag(world, "Frozen");
    tes_archetype_t a = find(world, &id, 1);
    uint32_t cap = fx_archetype(world, a).capacity;
    uint32_t n = cap * 2 + 3;
    tes_entity_t *e = (tes_entity_t *)fx_malloc(n * sizeof *e);
    CHECK_OK(tes_spawn_batch(world, &id, 1, n, e));
    for (uint32_t i = 0; i < n; i++)
        CHECK_OK(tes_set_number(world, e[i], id, 0, 0, i));
    tes_entity_t victim = 0, last = 0;
    tes_chunk_info_t chunk;
    CHECK_OK(tes_chunk_info(world, a, 0, &chunk));
    victim = chunk.entities[5];
    CHECK_OK(tes_chunk_info(world, a, 2, &chunk));
    CHECK_EQ(chunk.count, 3);
    last = chunk.entities[2];
    double last_value = fx_get_number(world, last, id, 0, 0);

    CHECK_OK(tes_despawn(world, victim)); /* despawn: the archetype's last entity fills in */
    tes_location_t loc = fx_check_location(world, last);
    CHECK_EQ(loc.chunk, 0);
    CHECK_EQ(loc.row, 5);
    CHECK_NUM_EQ(fx_get_number(world, last, id, 0, 0), last_value);
    fx_check_packed(world, a);

    CHECK_OK(tes_chunk_info(world, a, 1, &chunk));
    victim = chunk.entities[7];
    CHECK_OK(tes_chunk_info(world, a, 2, &chunk));
    last = chunk.entities[chunk.count - 1];
    last_value = fx_get_number(world, last, id, 0, 0);
    CHECK_OK(tes_add(world, victim, t)); /* moving out: same rule */
    loc = fx_check_location(world, last);
    CHECK_EQ(loc.chunk, 1);
    CHECK_EQ(loc.row, 7);
    CHECK_NUM_EQ(fx_get_number(world, last, id, 0, 0), last_value);
    fx_check_all_packed(world);
    CHECK_OK(tes_world_validate(world));
}

/* Rows narrow enough for a useful chunk live in standard blocks of chunk_bytes. */
TEST(chunk_capacity_times_row_fits_chunk_bytes) {
    static const uint32_t chunk_sizes[] = {1024, 1088, 4096, 16384, 65536};
    for (size_t s = 0; s < sizeof chunk_sizes / sizeof chunk_sizes[0]; s++) {
        tes_world_desc_t desc = {.chunk_bytes = chunk_sizes[s]};
        tes_world_t *world = fx_world(&desc);
        uint32_t bytes = fx_stats(world).chunk_bytes;
        tes_component_t odd = fx_component(world, "Odd", odd_fields, 5);
        tes_component_t p = fx_component(world, "Position", position_fields, 2);
        tes_component_t t = fx_tag(world, "Frozen");
        tes_component_t sets[4][2] = {{0, 0}, {odd, 0}, {p, t}, {odd, p}};
        const uint32_t counts[4] = {0, 1, 2, 2};
        for (int k = 0; k < 4; k++) {
            tes_archetype_info_t info = fx_archetype(world, find(world, sets[k], counts[k]));
            uint32_t row = 4; /* the entity handle */
            for (uint32_t i = 0; i < info.component_count; i++) {
                tes_component_info_t c;
                CHECK_OK(tes_component_info(world, info.components[i], &c));
                row += c.row_bytes;
            }
            CHECK(info.capacity >= 1);
            CHECK((uint64_t)info.capacity * row <= bytes);
            /* And the budget is used: not even one more row plus worst-case padding fits. */
            CHECK((uint64_t)(info.capacity + 1) * row + 16 * (1 + info.component_count * 5) >
                  bytes);
        }
    }
}

/* A row too wide for a standard block still gets chunks (the core gives such archetypes a
 * larger block of their own: see the report on the header). */
TEST(wide_rows_still_get_chunks) {
    tes_world_desc_t desc = {.chunk_bytes = 1024};
    tes_world_t *world = fx_world(&desc);
    tes_field_desc_t wide_fields[] = {{"w", TES_F64, 128}}; /* 1024 bytes per entity */
    tes_component_t w = fx_component(world, "Wide", wide_fields, 1);
    tes_component_t id = fx_component(world, "Id", id_fields, 1);
    tes_entity_t e[40];
    for (int i = 0; i < 40; i++) {
        CHECK_OK(tes_spawn(world, &w, 1, &e[i]));
        CHECK_OK(tes_set_number(world, e[i], w, 0, 127, i + 0.5));
    }
    for (int i = 0; i < 40; i += 3)
        CHECK_OK(tes_add(world, e[i], id));
    for (int i = 0; i < 40; i++)
        CHECK_NUM_EQ(fx_get_number(world, e[i], w, 0, 127), i + 0.5);
    CHECK(fx_archetype(world, fx_archetype_of(world, e[1])).capacity >= 1);
    fx_check_all_packed(world);
    CHECK_OK(tes_world_validate(world));
}

TEST(empty_chunks_go_to_the_pool_and_are_reused) {
    tes_world_desc_t desc = {.chunk_bytes = 1024, .min_free_indices = 1};
    tes_world_t *world = fx_world(&desc);
    tes_component_t p = fx_component(world, "Position", position_fields, 2);
    tes_component_t id = fx_component(world, "Id", id_fields, 1);
    tes_archetype_t a = find(world, &p, 1);
    tes_archetype_t b = find(world, &id, 1);
    uint32_t cap_a = fx_archetype(world, a).capacity, cap_b = fx_archetype(world, b).capacity;
    uint32_t n = cap_a * 3;
    tes_entity_t *e = (tes_entity_t *)fx_malloc(n * sizeof *e);
    /* Warm up the entity table and free queue once. */
    CHECK_OK(tes_spawn_batch(world, &p, 1, n, e));
    CHECK_OK(tes_despawn_batch(world, e, n));
    tes_world_stats_t warm = fx_stats(world);
    CHECK_EQ(warm.chunk_count, 0);
    CHECK(warm.pooled_chunk_count >= 3);

    CHECK_OK(tes_spawn_batch(world, &p, 1, n, e));
    tes_world_stats_t full = fx_stats(world);
    CHECK_EQ(full.chunk_count, 3);
    CHECK_EQ(full.pooled_chunk_count, warm.pooled_chunk_count - 3); /* taken from the pool */
    CHECK_EQ(full.bytes_allocated, warm.bytes_allocated);
    CHECK_OK(tes_despawn_batch(world, e, n));
    tes_world_stats_t empty = fx_stats(world);
    CHECK_EQ(empty.chunk_count, 0);
    CHECK_EQ(fx_archetype(world, a).chunk_count, 0);
    CHECK_EQ(empty.pooled_chunk_count, full.pooled_chunk_count + 3);
    CHECK_EQ(empty.bytes_allocated, full.bytes_allocated); /* kept, not freed */

    /* Another archetype takes the same pooled blocks (once its own chunk list exists). */
    uint32_t m = cap_b * 3 < n ? cap_b * 3 : n;
    CHECK_OK(tes_spawn_batch(world, &id, 1, 1, e));
    CHECK_OK(tes_despawn(world, e[0]));
    empty = fx_stats(world);
    CHECK_OK(tes_spawn_batch(world, &id, 1, m, e));
    tes_world_stats_t other = fx_stats(world);
    CHECK_EQ(other.chunk_count, (m + cap_b - 1) / cap_b);
    CHECK_EQ(other.pooled_chunk_count + other.chunk_count, empty.pooled_chunk_count);
    CHECK_EQ(other.bytes_allocated, empty.bytes_allocated);
    CHECK_OK(tes_world_validate(world));
}

/* A game that spawns and despawns the same amount every frame allocates nothing once warm. */
TEST(steady_spawn_despawn_allocates_nothing) {
    fx_alloc_t *counter = fx_alloc_new();
    tes_world_desc_t desc = {
        .chunk_bytes = 1024, .min_free_indices = 16, .allocator = fx_allocator(counter)};
    tes_world_t *world = fx_world(&desc);
    tes_component_t p = fx_component(world, "Position", position_fields, 2);
    tes_component_t id = fx_component(world, "Id", id_fields, 1);
    tes_component_t t = fx_tag(world, "Frozen");
    tes_component_t set[] = {p, id};
    enum { N = 400 };
    tes_entity_t e[N];
    uint64_t allocs_when_warm = 0, bytes_when_warm = 0;
    for (int frame = 0; frame < 60; frame++) {
        if (frame == 10) {
            allocs_when_warm = counter->allocs;
            bytes_when_warm = fx_stats(world).bytes_allocated;
        }
        CHECK_OK(tes_spawn_batch(world, set, 2, N / 2, e));
        for (int i = N / 2; i < N; i++)
            CHECK_OK(tes_spawn(world, set, 2, &e[i]));
        for (int i = 0; i < N; i += 3)
            CHECK_OK(tes_add(world, e[i], t));
        for (int i = 0; i < N; i += 6)
            CHECK_OK(tes_remove(world, e[i], id));
        for (int i = 0; i < N / 2; i++)
            CHECK_OK(tes_despawn(world, e[i]));
        CHECK_OK(tes_despawn_batch(world, e + N / 2, N / 2));
        if (frame >= 10) {
            CHECK_EQ(counter->allocs, allocs_when_warm);
            CHECK_EQ(fx_stats(world).bytes_allocated, bytes_when_warm);
        }
    }
    CHECK_EQ(fx_stats(world).chunk_count, 0);
    CHECK(fx_stats(world).pooled_chunk_count > 0);
}

/* 64 components of 64 fields x 256 f64 make an 8 MiB row: no chunk holds that. */
TEST(row_too_large_is_rejected) {
    tes_world_t *world = fx_world(NULL);
    static tes_field_desc_t huge_fields[TES_MAX_FIELDS];
    static char names[TES_MAX_FIELDS][8];
    for (uint32_t f = 0; f < TES_MAX_FIELDS; f++) {
        snprintf(names[f], sizeof names[f], "f%u", (unsigned)f);
        huge_fields[f] = (tes_field_desc_t){names[f], TES_F64, TES_MAX_ARRAY_LENGTH};
    }
    tes_component_t huge[64];
    char name[16];
    for (int i = 0; i < 64; i++) {
        snprintf(name, sizeof name, "Huge%d", i);
        huge[i] = fx_component(world, name, huge_fields, TES_MAX_FIELDS);
    }
    tes_component_t id = fx_component(world, "Id", id_fields, 1);
    tes_entity_t small;
    CHECK_OK(tes_spawn(world, &id, 1, &small));
    CHECK_OK(tes_set_number(world, small, id, 0, 0, 5));
    fx_snapshot_t *before = fx_snapshot_of(world);
    tes_entity_t x;
    tes_archetype_t a;
    CHECK_ERR(tes_archetype_find(world, huge, 64, &a), TES_ERR_ROW_TOO_LARGE);
    CHECK_ERR(tes_spawn(world, huge, 64, &x), TES_ERR_ROW_TOO_LARGE);
    CHECK_ERR(tes_spawn_batch(world, huge, 64, 10, NULL), TES_ERR_ROW_TOO_LARGE);
    FX_CHECK_UNCHANGED(before, world);
    /* One component short of the limit may or may not fit; either way adding the last one to
     * it must fail cleanly. */
    tes_result_t r = tes_archetype_find(world, huge, 63, &a);
    if (r == TES_OK) {
        CHECK_OK(tes_spawn(world, huge, 63, &x));
        CHECK_OK(tes_set_number(world, x, huge[62], 63, 255, 9.5));
        fx_snapshot_take(before, world);
        CHECK_ERR(tes_add(world, x, huge[63]), TES_ERR_ROW_TOO_LARGE);
        CHECK_ERR(tes_archetype_add(world, a, huge[63]), TES_ERR_ROW_TOO_LARGE);
        FX_CHECK_UNCHANGED(before, world);
        CHECK_NUM_EQ(fx_get_number(world, x, huge[62], 63, 255), 9.5);
        CHECK_OK(tes_despawn(world, x));
    } else {
        CHECK_ERR(r, TES_ERR_ROW_TOO_LARGE);
    }
    CHECK_NUM_EQ(fx_get_number(world, small, id, 0, 0), 5);
    CHECK_OK(tes_world_validate(world));
}

/* Worlds with many component types: ids past the flat tables (64) are searched in the set and
 * their edges hashed. Every lookup agrees with the set, cached moves land where uncached ones
 * do, the graph validates, and an archetype's memory follows its own components and edges. */
TEST(many_component_types_lookups_edges_and_memory) {
    tes_world_t *world = fx_world(NULL);
    enum { TYPES = 600 };
    tes_component_t ids[TYPES];
    for (uint32_t i = 0; i < TYPES; i++) {
        char name[16];
        snprintf(name, sizeof name, "T%u", i);
        ids[i] = fx_tag(world, name);
    }
    tes_component_t data = fx_component(world, "Position", position_fields, 2); /* id 600 */
    uint64_t seed = 7;
    tes_entity_t e[64];
    for (uint32_t round = 0; round < 2000; round++) {
        /* A set of 3 distinct tags, low and high ids mixed, plus the data component. */
        tes_component_t set[4] = {data};
        uint32_t n = 1;
        while (n < 4) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            tes_component_t c = ids[(seed >> 33) % TYPES];
            bool seen = false;
            for (uint32_t j = 0; j < n; j++)
                seen |= set[j] == c;
            if (!seen) set[n++] = c;
        }
        tes_entity_t *x = &e[round % 64];
        if (round >= 64) CHECK_OK(tes_despawn(world, *x));
        CHECK_OK(tes_spawn(world, set, 4, x));
        CHECK_OK(tes_set_number(world, *x, data, 0, 0, (double)round));
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        tes_component_t extra = ids[(seed >> 33) % TYPES];
        bool had = false;
        for (uint32_t j = 1; j < 4; j++)
            had |= set[j] == extra;
        /* Twice each way: the second goes along the edge the first cached. */
        for (int k = 0; k < 2; k++) {
            CHECK_OK(tes_add(world, *x, extra));
            bool has;
            CHECK_OK(tes_has(world, *x, extra, &has));
            CHECK(has);
            CHECK_OK(tes_remove(world, *x, extra));
            CHECK_OK(tes_has(world, *x, extra, &has));
            CHECK(!has);
            if (had) CHECK_OK(tes_add(world, *x, extra)); /* back to its set */
        }
        for (uint32_t j = 0; j < 4; j++) {
            bool has;
            CHECK_OK(tes_has(world, *x, set[j], &has));
            CHECK(has);
        }
        double v;
        CHECK_OK(tes_get_number(world, *x, data, 0, 0, &v));
        CHECK_EQ(v, (double)round);
        if (round % 100 == 0) CHECK_OK(tes_world_validate(world));
    }
    CHECK_OK(tes_world_validate(world));
    /* Memory per archetype: with ids up to 600, flat tables by id would take 1.2 KB (type
     * index) and up to 9.6 KB (edges) each. */
    tes_world_stats_t stats = fx_stats(world);
    CHECK(stats.archetype_count > 1000);
    uint64_t chunks = (uint64_t)(stats.chunk_count + stats.pooled_chunk_count) * stats.chunk_bytes;
    CHECK((stats.bytes_allocated - chunks) / stats.archetype_count < 1024);
}
