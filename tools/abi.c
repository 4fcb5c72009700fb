/* Writes bindings/abi.ts: the C core's constants and the layout of every structure the
 * TypeScript layer reads or writes, as this build lays them out. Built and run as wasm32 (the
 * wasm preset, under Node), so the offsets are the shipped module's; a native build would print
 * another layout, which is why it is never run natively.
 *
 *   node build/wasm/tes_abi.cjs                  print the file
 *   node build/wasm/tes_abi.cjs --check <file>   exit 1 when <file> differs (ctest abi.current)
 *
 * scripts/build.sh writes bindings/abi.ts with it after every wasm build, so the bindings
 * never carry a number copied by hand from C; the ctest check fails when a layout change was
 * built but the file was not written again. */
#include "../src/internal.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

static char out[1 << 16];
static size_t used;

static void emit(const char *format, ...) {
    va_list args;
    va_start(args, format);
    int n = vsnprintf(out + used, sizeof out - used, format, args);
    va_end(args);
    if (n < 0 || (size_t)n >= sizeof out - used) {
        fprintf(stderr, "tes_abi: output too long\n");
        exit(2);
    }
    used += (size_t)n;
}

/* ---- structures: `export const NAME = { size, member: offset, ... } as const;` ---------- */

static void begin(const char *name, const char *c_type, const char *about, size_t size) {
    emit("\n/** `%s`: %s */\nexport const %s = {\n    size: %zu,\n", c_type, about, name, size);
}

static void member(const char *name, size_t offset) {
    emit("    %s: %zu,\n", name, offset);
}

static void end(void) {
    emit("} as const;\n");
}

#define STRUCT(name, T, about) begin(name, #T, about, sizeof(T))
#define MEMBER(T, m)           member(#m, offsetof(T, m))
/* A member inside a member: `a.b` is written a_b. */
#define NESTED(T, path, name)  member(name, offsetof(T, path))

/* ---- constants: `export const NAME = { key: value, ... } as const;` ----------------------- */

static void group(const char *name, const char *about) {
    emit("\n/** %s */\nexport const %s = {\n", about, name);
}

static void value(const char *key, long long v) {
    emit("    %s: %lld,\n", key, v);
}

static void public_structures(void) {
    STRUCT("WORLD_DESC", tes_world_desc_t, "options of tes_world_create.");
    MEMBER(tes_world_desc_t, chunk_bytes);
    MEMBER(tes_world_desc_t, min_free_indices);
    MEMBER(tes_world_desc_t, checkpoints);
    MEMBER(tes_world_desc_t, allocator);
    end();

    STRUCT("WORLD_STATS", tes_world_stats_t, "tes_world_stats.");
    MEMBER(tes_world_stats_t, entity_count);
    MEMBER(tes_world_stats_t, entity_capacity);
    MEMBER(tes_world_stats_t, free_queue_length);
    MEMBER(tes_world_stats_t, component_count);
    MEMBER(tes_world_stats_t, archetype_count);
    MEMBER(tes_world_stats_t, chunk_count);
    MEMBER(tes_world_stats_t, pooled_chunk_count);
    MEMBER(tes_world_stats_t, chunk_bytes);
    MEMBER(tes_world_stats_t, edge_count);
    MEMBER(tes_world_stats_t, graph_generation);
    MEMBER(tes_world_stats_t, bytes_allocated);
    MEMBER(tes_world_stats_t, change_tick);
    MEMBER(tes_world_stats_t, frame);
    MEMBER(tes_world_stats_t, query_count);
    MEMBER(tes_world_stats_t, commands_skipped);
    MEMBER(tes_world_stats_t, checkpoint_count);
    MEMBER(tes_world_stats_t, checkpoint_bytes);
    MEMBER(tes_world_stats_t, shadow_bytes);
    end();

    STRUCT("FIELD_DESC", tes_field_desc_t, "one field of a component description.");
    MEMBER(tes_field_desc_t, name);
    MEMBER(tes_field_desc_t, type);
    MEMBER(tes_field_desc_t, length);
    end();

    STRUCT("COMPONENT_DESC", tes_component_desc_t, "tes_component_register's description.");
    MEMBER(tes_component_desc_t, name);
    MEMBER(tes_component_desc_t, fields);
    MEMBER(tes_component_desc_t, field_count);
    MEMBER(tes_component_desc_t, flags);
    end();

    STRUCT("COMPONENT_INFO", tes_component_info_t, "tes_component_info.");
    MEMBER(tes_component_info_t, name);
    MEMBER(tes_component_info_t, field_count);
    MEMBER(tes_component_info_t, row_bytes);
    MEMBER(tes_component_info_t, flags);
    end();

    STRUCT("FIELD_INFO", tes_field_info_t, "tes_field_info.");
    MEMBER(tes_field_info_t, name);
    MEMBER(tes_field_info_t, type);
    MEMBER(tes_field_info_t, length);
    MEMBER(tes_field_info_t, bytes);
    end();

    STRUCT("LOCATION", tes_location_t, "tes_location.");
    MEMBER(tes_location_t, archetype);
    MEMBER(tes_location_t, chunk);
    MEMBER(tes_location_t, row);
    end();

    STRUCT("ITEM", tes_item_t, "one item of an item list.");
    MEMBER(tes_item_t, component);
    MEMBER(tes_item_t, target);
    end();

    STRUCT("VALUE", tes_value_t, "one value of an item list.");
    MEMBER(tes_value_t, item);
    MEMBER(tes_value_t, field);
    MEMBER(tes_value_t, number);
    MEMBER(tes_value_t, stride);
    end();

    STRUCT("ITEMS", tes_items_t, "an item list.");
    MEMBER(tes_items_t, items);
    MEMBER(tes_items_t, item_count);
    MEMBER(tes_items_t, values);
    MEMBER(tes_items_t, value_count);
    MEMBER(tes_items_t, numbers);
    MEMBER(tes_items_t, number_count);
    end();

    STRUCT("FAULT", tes_fault_t, "the part of an item call at fault.");
    MEMBER(tes_fault_t, item);
    MEMBER(tes_fault_t, value);
    MEMBER(tes_fault_t, number);
    MEMBER(tes_fault_t, entity);
    end();

    STRUCT("ARCHETYPE_INFO", tes_archetype_info_t, "tes_archetype_info.");
    MEMBER(tes_archetype_info_t, components);
    MEMBER(tes_archetype_info_t, component_count);
    MEMBER(tes_archetype_info_t, entity_count);
    MEMBER(tes_archetype_info_t, chunk_count);
    MEMBER(tes_archetype_info_t, capacity);
    end();

    STRUCT("CHUNK_INFO", tes_chunk_info_t, "tes_chunk_info.");
    MEMBER(tes_chunk_info_t, entities);
    MEMBER(tes_chunk_info_t, count);
    MEMBER(tes_chunk_info_t, capacity);
    end();

    STRUCT("PAIR_EVENT", tes_pair_event_t, "one pair event.");
    MEMBER(tes_pair_event_t, source);
    MEMBER(tes_pair_event_t, target);
    MEMBER(tes_pair_event_t, relation);
    MEMBER(tes_pair_event_t, kind);
    end();

    STRUCT("PAIR_TERM", tes_pair_term_t, "a query's pair term.");
    MEMBER(tes_pair_term_t, relation);
    MEMBER(tes_pair_term_t, target);
    MEMBER(tes_pair_term_t, op);
    end();

    STRUCT("QUERY_DESC", tes_query_desc_t, "tes_query_create's description.");
    MEMBER(tes_query_desc_t, all);
    MEMBER(tes_query_desc_t, all_count);
    MEMBER(tes_query_desc_t, none);
    MEMBER(tes_query_desc_t, none_count);
    MEMBER(tes_query_desc_t, any);
    MEMBER(tes_query_desc_t, any_count);
    MEMBER(tes_query_desc_t, added);
    MEMBER(tes_query_desc_t, added_count);
    MEMBER(tes_query_desc_t, changed);
    MEMBER(tes_query_desc_t, changed_count);
    MEMBER(tes_query_desc_t, removed);
    MEMBER(tes_query_desc_t, removed_count);
    MEMBER(tes_query_desc_t, pairs);
    MEMBER(tes_query_desc_t, pair_count);
    MEMBER(tes_query_desc_t, pair_changes);
    MEMBER(tes_query_desc_t, pair_change_count);
    end();

    STRUCT("ITER", tes_iter_t, "a run's iterator (its private part included: JS allocates it).");
    MEMBER(tes_iter_t, archetype);
    MEMBER(tes_iter_t, chunk);
    MEMBER(tes_iter_t, count);
    MEMBER(tes_iter_t, entities);
    MEMBER(tes_iter_t, rows);
    MEMBER(tes_iter_t, row_count);
    MEMBER(tes_iter_t, this_run);
    end();

    STRUCT("COLLECT", tes_collect_t, "tes_query_collect's output.");
    MEMBER(tes_collect_t, entities);
    MEMBER(tes_collect_t, count);
    MEMBER(tes_collect_t, removed);
    MEMBER(tes_collect_t, removed_counts);
    MEMBER(tes_collect_t, removed_total);
    MEMBER(tes_collect_t, pair_events);
    MEMBER(tes_collect_t, pair_event_count);
    end();

    STRUCT("OP", tes_op_t, "a column operation (kernels).");
    MEMBER(tes_op_t, k);
    MEMBER(tes_op_t, lo);
    MEMBER(tes_op_t, hi);
    MEMBER(tes_op_t, kind);
    MEMBER(tes_op_t, component);
    MEMBER(tes_op_t, field);
    MEMBER(tes_op_t, src_component);
    MEMBER(tes_op_t, src_field);
    end();

    STRUCT("SYSTEM_DESC", tes_system_desc_t, "tes_system_create's description.");
    MEMBER(tes_system_desc_t, stage);
    MEMBER(tes_system_desc_t, query);
    MEMBER(tes_system_desc_t, run);
    MEMBER(tes_system_desc_t, user);
    MEMBER(tes_system_desc_t, interval);
    end();

    STRUCT("REPLICATOR_DESC", tes_replicator_desc_t, "tes_replicator_create's description.");
    MEMBER(tes_replicator_desc_t, components);
    MEMBER(tes_replicator_desc_t, component_count);
    MEMBER(tes_replicator_desc_t, scope);
    MEMBER(tes_replicator_desc_t, history);
    MEMBER(tes_replicator_desc_t, quanta);
    MEMBER(tes_replicator_desc_t, quantum_count);
    MEMBER(tes_replicator_desc_t, flags);
    MEMBER(tes_replicator_desc_t, source);
    end();

    STRUCT("QUANTUM", tes_quantum_t, "a quantized field of tes_replicator_desc_t's quanta.");
    MEMBER(tes_quantum_t, component);
    MEMBER(tes_quantum_t, field);
    MEMBER(tes_quantum_t, step);
    end();
}

/* The core's own structures, which the per-entity paths read directly. JS writes cells of
 * untracked fields and, inside a run, appends commands to the recorded list (bindings/record.ts):
 * nothing else. */
static void internal_structures(void) {
    STRUCT("WORLD", tes_world_t, "the parts of a world that JS reads.");
    NESTED(tes_world_t, records.pages, "records_pages");
    NESTED(tes_world_t, records.page_slots, "records_page_slots");
    MEMBER(tes_world_t, record_count);
    MEMBER(tes_world_t, components);
    MEMBER(tes_world_t, component_count);
    MEMBER(tes_world_t, access_epoch);
    MEMBER(tes_world_t, archetypes);
    MEMBER(tes_world_t, archetype_count);
    MEMBER(tes_world_t, defer_depth);
    MEMBER(tes_world_t, layout);
    MEMBER(tes_world_t, commands);
    MEMBER(tes_world_t, command_count);
    MEMBER(tes_world_t, command_slots);
    MEMBER(tes_world_t, noted);
    MEMBER(tes_world_t, noted_records);
    MEMBER(tes_world_t, handouts);
    MEMBER(tes_world_t, handout_count);
    MEMBER(tes_world_t, handout_next);
    end();

    STRUCT("COMMAND", tesi_command_t,
           "a deferred command (JS records spawns, initial values, adds, removes, despawns).");
    MEMBER(tesi_command_t, kind);
    MEMBER(tesi_command_t, entity);
    MEMBER(tesi_command_t, a);
    MEMBER(tesi_command_t, b);
    MEMBER(tesi_command_t, c);
    MEMBER(tesi_command_t, value);
    MEMBER(tesi_command_t, data_size);
    end();

    STRUCT("RECORD", tesi_record_t, "an entity table entry.");
    MEMBER(tesi_record_t, chunk);
    MEMBER(tesi_record_t, row);
    MEMBER(tesi_record_t, generation);
    end();

    STRUCT("COMPONENT", tesi_component_t, "a registered component.");
    MEMBER(tesi_component_t, flags);
    MEMBER(tesi_component_t, fields);
    MEMBER(tesi_component_t, field_count);
    MEMBER(tesi_component_t, stride);
    MEMBER(tesi_component_t, level);
    NESTED(tesi_component_t, sparse.slot_of.pages, "sparse_slot_of_pages");
    NESTED(tesi_component_t, sparse.slot_of.page_slots, "sparse_slot_of_page_slots");
    NESTED(tesi_component_t, sparse.data, "sparse_data");
    end();

    STRUCT("FIELD", tesi_field_t, "a component's field.");
    MEMBER(tesi_field_t, type);
    MEMBER(tesi_field_t, length);
    MEMBER(tesi_field_t, bytes);
    MEMBER(tesi_field_t, offset);
    end();

    STRUCT("CHUNK", tesi_chunk_t, "a chunk.");
    MEMBER(tesi_chunk_t, data);
    MEMBER(tesi_chunk_t, trackers);
    MEMBER(tesi_chunk_t, archetype);
    MEMBER(tesi_chunk_t, count);
    MEMBER(tesi_chunk_t, index);
    end();

    STRUCT("ARCHETYPE", tesi_archetype_t, "an archetype.");
    MEMBER(tesi_archetype_t, id);
    MEMBER(tesi_archetype_t, type_index);
    MEMBER(tesi_archetype_t, lookup_length);
    MEMBER(tesi_archetype_t, first_column);
    MEMBER(tesi_archetype_t, columns);
    MEMBER(tesi_archetype_t, column_count);
    MEMBER(tesi_archetype_t, capacity);
    end();

    STRUCT("COLUMN", tesi_column_t, "one field column of a chunk.");
    MEMBER(tesi_column_t, offset);
    MEMBER(tesi_column_t, bytes);
    end();
}

static void constants(void) {
    group("LIMITS", "Limits and bit widths of src/tessera.h and of the entity table.");
    value("index_bits", TES_INDEX_BITS);
    value("generation_bits", TES_GENERATION_BITS);
    value("max_entities", TES_MAX_ENTITIES);
    value("max_components", TES_MAX_COMPONENTS);
    value("max_fields", TES_MAX_FIELDS);
    value("max_array_length", TES_MAX_ARRAY_LENGTH);
    value("max_name_length", TES_MAX_NAME_LENGTH);
    value("max_checkpoints", TES_MAX_CHECKPOINTS);
    value("page_bits", TESI_PAGE_BITS);
    value("no_type", TESI_NO_TYPE);
    value("no_fault", TES_NO_FAULT);
    end();

    group("MODULE_MEMORY", "The module's memory (imported): the least it declares, in bytes.");
    value("minimum", TES_WASM_MIN_MEMORY);
    end();

    group("COMMAND_KIND", "Kinds of deferred commands JS records (tesi_command_t.kind).");
    value("spawn", TESI_CMD_SPAWN);
    value("init_number", TESI_CMD_INIT_NUMBER);
    value("despawn", TESI_CMD_DESPAWN);
    value("add", TESI_CMD_ADD);
    value("remove", TESI_CMD_REMOVE);
    end();

    group("RECORDED", "A placed entity's note of its first command recorded in the live run: the "
                      "high bits of its record's generation word.");
    value("shift", TESI_RECORDED_SHIFT);
    value("max", TESI_RECORDED_MAX);
    end();

    group("ROW", "Flags on an entity table record's row.");
    value("pending", TESI_ROW_PENDING);
    value("skipped", TESI_ROW_SKIPPED);
    value("mark", TESI_ROW_MARK);
    value("handout", TESI_ROW_HANDOUT);
    end();

    group("TYPES", "tes_type_t: field types.");
    value("f32", TES_F32);
    value("f64", TES_F64);
    value("i8", TES_I8);
    value("u8", TES_U8);
    value("i16", TES_I16);
    value("u16", TES_U16);
    value("i32", TES_I32);
    value("u32", TES_U32);
    end();

    group("COMPONENT_FLAGS", "tes_component_desc_t.flags.");
    value("sparse", TES_COMPONENT_SPARSE);
    value("relation", TES_COMPONENT_RELATION);
    value("exclusive", TES_RELATION_EXCLUSIVE);
    value("acyclic", TES_RELATION_ACYCLIC);
    value("cascade", TES_RELATION_CASCADE);
    value("local", TES_COMPONENT_LOCAL);
    value("change_by_value", TES_COMPONENT_CHANGE_BY_VALUE);
    end();

    group("TRACKING", "tes_tracking_t: a component's change-tracking level.");
    value("untracked", TES_UNTRACKED);
    value("ticks", TES_TRACK_TICKS);
    value("dirty", TES_TRACK_DIRTY);
    end();

    group("TERM", "A query term's op (tes_pair_term_t.op).");
    value("all", TES_TERM_ALL);
    value("none", TES_TERM_NONE);
    value("any", TES_TERM_ANY);
    end();

    group("PAIR_EVENT_KIND", "tes_pair_event_t.kind.");
    value("added", TES_PAIR_ADDED);
    value("removed", TES_PAIR_REMOVED);
    value("changed", TES_PAIR_CHANGED);
    value("moved", TES_PAIR_MOVED);
    end();

    group("DELTA_HEADER",
          "A delta's header (docs/format.md): where its flags are, and the keyframe flag.");
    value("flags", TESI_DELTA_FLAGS_BYTE);
    value("keyframe", TESI_DELTA_KEYFRAME);
    value("empty", TESI_DELTA_EMPTY);
    end();

    group("REPLICATOR_FLAGS", "tes_replicator_desc_t.flags.");
    value("changed_fields", TES_REPLICATOR_CHANGED_FIELDS);
    end();

    group("PEER_FLAGS", "tes_peer_create's flags.");
    value("visibility", TES_PEER_VISIBILITY);
    end();

    group("OP_KIND", "tes_op_kind_t: column operations.");
    value("fill", TES_OP_FILL);
    value("add", TES_OP_ADD);
    value("scale", TES_OP_SCALE);
    value("add_scaled", TES_OP_ADD_SCALED);
    value("clamp", TES_OP_CLAMP);
    value("sub_collect", TES_OP_SUB_COLLECT);
    end();

    /* The result codes by value, as tes_result_name spells them without TES_ / TES_ERR_. */
    emit("\n/** tes_result_t: the code of result r is RESULTS[r] (TES_ERR_ left out). */\n");
    emit("export const RESULTS = [\n");
    for (int r = 0; r < TES_RESULT_COUNT; r++) {
        const char *name = tes_result_name((tes_result_t)r);
        const char *code = strncmp(name, "TES_ERR_", 8) == 0 ? name + 8 : name + 4;
        emit("    /** %s */\n    '%s',\n", tes_result_message((tes_result_t)r), code);
    }
    emit("] as const;\n");
}

int main(int argc, char **argv) {
    emit(
        "// tessera's binary interface: the C core's constants and the layout of every structure "
        "the\n"
        "// TypeScript layer reads or writes, as the wasm32 build lays them out. Written by\n"
        "// tools/abi.c after every wasm build (scripts/build.sh); ctest's abi.current fails when\n"
        "// it is out of date. Do not edit.\n");
    constants();
    public_structures();
    internal_structures();
    if (argc == 3 && strcmp(argv[1], "--check") == 0) {
        FILE *f = fopen(argv[2], "rb");
        static char file[sizeof out];
        size_t n = f ? fread(file, 1, sizeof file, f) : 0;
        if (f) fclose(f);
        if (n != used || memcmp(file, out, used) != 0) {
            fprintf(stderr, "%s is out of date: run npm run build (scripts/build.sh writes it)\n",
                    argv[2]);
            return 1;
        }
        printf("%s matches the build's layout\n", argv[2]);
        return 0;
    }
    if (argc != 1) {
        fprintf(stderr, "usage: tes_abi [--check <file>]\n");
        return 2;
    }
    fwrite(out, 1, used, stdout);
    return 0;
}
