// tessera's binary interface: the C core's constants and the layout of every structure the
// TypeScript layer reads or writes, as the wasm32 build lays them out. Written by
// tools/abi.c after every wasm build (scripts/build.sh); ctest's abi.current fails when
// it is out of date. Do not edit.

/** Limits and bit widths of src/tessera.h and of the entity table. */
export const LIMITS = {
    index_bits: 21,
    generation_bits: 9,
    max_entities: 2097151,
    max_components: 4096,
    max_fields: 64,
    max_array_length: 256,
    max_name_length: 127,
    max_checkpoints: 1024,
    page_bits: 10,
    no_type: 65535,
    no_fault: 4294967295,
} as const;

/** The module's memory (imported): the least it declares, in bytes. */
export const MODULE_MEMORY = {
    minimum: 16777216,
} as const;

/** Kinds of deferred commands JS records (tesi_command_t.kind). */
export const COMMAND_KIND = {
    spawn: 0,
    init_number: 7,
    despawn: 1,
    add: 2,
    remove: 3,
} as const;

/** A placed entity's note of its first command recorded in the live run: the high bits of its record's generation word. */
export const RECORDED = {
    shift: 9,
    max: 8388607,
} as const;

/** Flags on an entity table record's row. */
export const ROW = {
    pending: 1073741824,
    skipped: 536870912,
    mark: 2147483648,
    handout: 1610612735,
} as const;

/** tes_type_t: field types. */
export const TYPES = {
    f32: 1,
    f64: 2,
    i8: 3,
    u8: 4,
    i16: 5,
    u16: 6,
    i32: 7,
    u32: 8,
} as const;

/** tes_component_desc_t.flags. */
export const COMPONENT_FLAGS = {
    sparse: 1,
    relation: 2,
    exclusive: 4,
    acyclic: 8,
    cascade: 16,
    local: 32,
    change_by_value: 64,
} as const;

/** tes_tracking_t: a component's change-tracking level. */
export const TRACKING = {
    untracked: 0,
    ticks: 1,
    dirty: 2,
} as const;

/** A query term's op (tes_pair_term_t.op). */
export const TERM = {
    all: 0,
    none: 1,
    any: 2,
} as const;

/** tes_pair_event_t.kind. */
export const PAIR_EVENT_KIND = {
    added: 1,
    removed: 2,
    changed: 3,
    moved: 4,
} as const;

/** A delta's header (docs/format.md): where its flags are, and the keyframe flag. */
export const DELTA_HEADER = {
    flags: 6,
    keyframe: 1,
    empty: 2,
} as const;

/** tes_replicator_desc_t.flags. */
export const REPLICATOR_FLAGS = {
    changed_fields: 1,
} as const;

/** tes_peer_create's flags. */
export const PEER_FLAGS = {
    visibility: 1,
} as const;

/** tes_op_kind_t: column operations. */
export const OP_KIND = {
    fill: 1,
    add: 2,
    scale: 3,
    add_scaled: 4,
    clamp: 5,
    sub_collect: 6,
} as const;

/** tes_result_t: the code of result r is RESULTS[r] (TES_ERR_ left out). */
export const RESULTS = [
    /** ok */
    'OK',
    /** invalid argument */
    'INVALID_ARGUMENT',
    /** out of memory */
    'OUT_OF_MEMORY',
    /** entity is not alive (despawned, or never spawned) */
    'STALE_ENTITY',
    /** entity table is full */
    'TOO_MANY_ENTITIES',
    /** the same entity appears twice in one batch */
    'DUPLICATE_ENTITY',
    /** no component with this id in this world */
    'UNKNOWN_COMPONENT',
    /** component table is full */
    'TOO_MANY_COMPONENTS',
    /** a component with this name already exists */
    'DUPLICATE_NAME',
    /** invalid component schema */
    'BAD_SCHEMA',
    /** the component has no field with this index or name */
    'UNKNOWN_FIELD',
    /** array element index out of range */
    'ELEMENT_OUT_OF_RANGE',
    /** the entity does not have this component */
    'MISSING_COMPONENT',
    /** the component is a tag and has no field data */
    'TAG_HAS_NO_DATA',
    /** value size does not match the field's size */
    'BAD_SIZE',
    /** value cannot be stored in the field's type without loss */
    'BAD_VALUE',
    /** no archetype with this id in this world */
    'UNKNOWN_ARCHETYPE',
    /** one entity of this component set needs about 8 MiB or more (8 rows must fit 64 MiB) */
    'ROW_TOO_LARGE',
    /** internal invariant violated (tes_world_validate) */
    'CORRUPT',
    /** entity is spawned by a deferred command, not placed yet */
    'PENDING_ENTITY',
    /** no stage with this id in this world */
    'UNKNOWN_STAGE',
    /** this consumer query already has a live run */
    'QUERY_IN_USE',
    /** the operation does not support this field's type */
    'BAD_FIELD_TYPE',
    /** the component is not stored in chunks (sparse or relation) */
    'SPARSE_COMPONENT',
    /** the component is not a relation */
    'NOT_A_RELATION',
    /** a relation is used per pair: name its target */
    'NEEDS_TARGET',
    /** the pair would close a cycle in an acyclic relation */
    'CYCLE',
    /** the bytes are not a valid snapshot (truncated or corrupted) */
    'BAD_SNAPSHOT',
    /** the snapshot was written by another version of the format */
    'SNAPSHOT_VERSION',
    /** the bytes are not a valid delta (truncated, corrupted or inconsistent) */
    'BAD_DELTA',
    /** the delta's components differ from this world's */
    'DELTA_SCHEMA',
    /** the replica lacks the delta's baseline tick: it needs a keyframe */
    'DELTA_BASELINE',
    /** no checkpoint with this number is kept (not taken, or out of the ring) */
    'NO_CHECKPOINT',
] as const;

/** `tes_world_desc_t`: options of tes_world_create. */
export const WORLD_DESC = {
    size: 24,
    chunk_bytes: 0,
    min_free_indices: 4,
    checkpoints: 20,
    allocator: 8,
} as const;

/** `tes_world_stats_t`: tes_world_stats. */
export const WORLD_STATS = {
    size: 96,
    entity_count: 0,
    entity_capacity: 4,
    free_queue_length: 8,
    component_count: 12,
    archetype_count: 16,
    chunk_count: 20,
    pooled_chunk_count: 24,
    chunk_bytes: 28,
    edge_count: 32,
    graph_generation: 36,
    bytes_allocated: 40,
    change_tick: 48,
    frame: 56,
    query_count: 64,
    commands_skipped: 68,
    checkpoint_count: 72,
    checkpoint_bytes: 80,
    shadow_bytes: 88,
} as const;

/** `tes_field_desc_t`: one field of a component description. */
export const FIELD_DESC = {
    size: 12,
    name: 0,
    type: 4,
    length: 8,
} as const;

/** `tes_component_desc_t`: tes_component_register's description. */
export const COMPONENT_DESC = {
    size: 16,
    name: 0,
    fields: 4,
    field_count: 8,
    flags: 12,
} as const;

/** `tes_component_info_t`: tes_component_info. */
export const COMPONENT_INFO = {
    size: 16,
    name: 0,
    field_count: 4,
    row_bytes: 8,
    flags: 12,
} as const;

/** `tes_field_info_t`: tes_field_info. */
export const FIELD_INFO = {
    size: 16,
    name: 0,
    type: 4,
    length: 8,
    bytes: 12,
} as const;

/** `tes_location_t`: tes_location. */
export const LOCATION = {
    size: 12,
    archetype: 0,
    chunk: 4,
    row: 8,
} as const;

/** `tes_item_t`: one item of an item list. */
export const ITEM = {
    size: 8,
    component: 0,
    target: 4,
} as const;

/** `tes_value_t`: one value of an item list. */
export const VALUE = {
    size: 16,
    item: 0,
    field: 4,
    number: 8,
    stride: 12,
} as const;

/** `tes_items_t`: an item list. */
export const ITEMS = {
    size: 24,
    items: 0,
    item_count: 4,
    values: 8,
    value_count: 12,
    numbers: 16,
    number_count: 20,
} as const;

/** `tes_fault_t`: the part of an item call at fault. */
export const FAULT = {
    size: 16,
    item: 0,
    value: 4,
    number: 8,
    entity: 12,
} as const;

/** `tes_archetype_info_t`: tes_archetype_info. */
export const ARCHETYPE_INFO = {
    size: 20,
    components: 0,
    component_count: 4,
    entity_count: 8,
    chunk_count: 12,
    capacity: 16,
} as const;

/** `tes_chunk_info_t`: tes_chunk_info. */
export const CHUNK_INFO = {
    size: 12,
    entities: 0,
    count: 4,
    capacity: 8,
} as const;

/** `tes_pair_event_t`: one pair event. */
export const PAIR_EVENT = {
    size: 16,
    source: 0,
    target: 4,
    relation: 8,
    kind: 12,
} as const;

/** `tes_pair_term_t`: a query's pair term. */
export const PAIR_TERM = {
    size: 12,
    relation: 0,
    target: 4,
    op: 8,
} as const;

/** `tes_query_desc_t`: tes_query_create's description. */
export const QUERY_DESC = {
    size: 64,
    all: 0,
    all_count: 4,
    none: 8,
    none_count: 12,
    any: 16,
    any_count: 20,
    added: 24,
    added_count: 28,
    changed: 32,
    changed_count: 36,
    removed: 40,
    removed_count: 44,
    pairs: 48,
    pair_count: 52,
    pair_changes: 56,
    pair_change_count: 60,
} as const;

/** `tes_iter_t`: a run's iterator (its private part included: JS allocates it). */
export const ITER = {
    size: 56,
    archetype: 0,
    chunk: 4,
    count: 8,
    entities: 12,
    rows: 16,
    row_count: 20,
    this_run: 24,
} as const;

/** `tes_collect_t`: tes_query_collect's output. */
export const COLLECT = {
    size: 28,
    entities: 0,
    count: 4,
    removed: 8,
    removed_counts: 12,
    removed_total: 16,
    pair_events: 20,
    pair_event_count: 24,
} as const;

/** `tes_op_t`: a column operation (kernels). */
export const OP = {
    size: 48,
    k: 0,
    lo: 8,
    hi: 16,
    kind: 24,
    component: 28,
    field: 32,
    src_component: 36,
    src_field: 40,
} as const;

/** `tes_system_desc_t`: tes_system_create's description. */
export const SYSTEM_DESC = {
    size: 80,
    stage: 0,
    query: 4,
    run: 68,
    user: 72,
    interval: 76,
} as const;

/** `tes_replicator_desc_t`: tes_replicator_create's description. */
export const REPLICATOR_DESC = {
    size: 32,
    components: 0,
    component_count: 4,
    scope: 8,
    history: 12,
    quanta: 16,
    quantum_count: 20,
    flags: 24,
    source: 28,
} as const;

/** `tes_quantum_t`: a quantized field of tes_replicator_desc_t's quanta. */
export const QUANTUM = {
    size: 16,
    component: 0,
    field: 4,
    step: 8,
} as const;

/** `tes_world_t`: the parts of a world that JS reads. */
export const WORLD = {
    size: 760,
    records_pages: 88,
    records_page_slots: 92,
    record_count: 100,
    components: 32,
    component_count: 36,
    access_epoch: 44,
    archetypes: 48,
    archetype_count: 52,
    defer_depth: 348,
    layout: 308,
    commands: 356,
    command_count: 360,
    command_slots: 364,
    noted: 372,
    noted_records: 368,
    handouts: 396,
    handout_count: 664,
    handout_next: 668,
} as const;

/** `tesi_command_t`: a deferred command (JS records spawns, initial values, adds, removes, despawns). */
export const COMMAND = {
    size: 32,
    kind: 0,
    entity: 4,
    a: 8,
    b: 12,
    c: 16,
    value: 24,
    data_size: 28,
} as const;

/** `tesi_record_t`: an entity table entry. */
export const RECORD = {
    size: 12,
    chunk: 0,
    row: 4,
    generation: 8,
} as const;

/** `tesi_component_t`: a registered component. */
export const COMPONENT = {
    size: 208,
    flags: 4,
    fields: 8,
    field_count: 12,
    stride: 20,
    level: 24,
    sparse_slot_of_pages: 88,
    sparse_slot_of_page_slots: 92,
    sparse_data: 104,
} as const;

/** `tesi_field_t`: a component's field. */
export const FIELD = {
    size: 24,
    type: 4,
    length: 8,
    bytes: 12,
    offset: 16,
} as const;

/** `tesi_chunk_t`: a chunk. */
export const CHUNK = {
    size: 28,
    data: 0,
    trackers: 4,
    archetype: 8,
    count: 12,
    index: 16,
} as const;

/** `tesi_archetype_t`: an archetype. */
export const ARCHETYPE = {
    size: 104,
    id: 0,
    type_index: 24,
    lookup_length: 28,
    first_column: 32,
    columns: 36,
    column_count: 40,
    capacity: 44,
} as const;

/** `tesi_column_t`: one field column of a chunk. */
export const COLUMN = {
    size: 12,
    offset: 0,
    bytes: 4,
} as const;
