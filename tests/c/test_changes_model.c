/*
 * The randomized change-detection model test for chunk components (sparse components and
 * relations have theirs in test_sparse_changes_model.c). A seeded sequence of operations (spawns,
 * despawns, adds, removes, writes, marks, batch and archetype forms, deferred commands made
 * inside runs) runs against the world and against a naive model that records, per entity and
 * component, which consumers have an add or a change of it pending, and per consumer the
 * removals it has not seen yet. Consumers (queries at their own rates, three of them closed and
 * reopened at random, and two systems run by tes_tick at their intervals) must report exactly
 * what the model predicts on every run: no more, no fewer, no entity twice; removal windows
 * exactly, oldest first. Runs and system bodies are sometimes broken off (tes_iter_fini before
 * the end, maybe before the first chunk): what they did not hand out stays pending for them.
 *
 * The model follows tessera.h: Added and Changed are independent; losing a component drops its
 * history (added back, it is added again, not changed); despawned entities are not reported
 * by filters; every removal is logged, so an entity can appear twice; a consumer created late
 * sees every entity of its added component as added, and no change or removal from before it
 * existed (whatever other consumers kept); a run broken off reports, on the next run, the rows
 * it did not hand out that still pass; commands made inside a run apply in order when the
 * outermost run ends, and those naming an entity gone by then are skipped and counted.
 *
 * One thing is kept out on purpose: writing, during a run, an entity that run still has to
 * visit (tests/c/test_query.c covers that case on its own).
 *
 * On failure the seed, step, operation and consumer are printed; rerun the case to reproduce.
 */
#include "model_support.h"

#define STEPS         20000
#define NC            6 /* components: A B C D (data), T1 T2 (tags) */
#define NDATA         4
#define CA            0u
#define CB            1u
#define CC            2u
#define CD            3u
#define CT1           4u
#define CT2           5u
#define MAX_CONSUMERS 12
#define ALL_CONSUMERS 0xffffu

static const tes_field_desc_t a_fields[] = {{"x", TES_F32, 0}, {"n", TES_I32, 0}};
static const tes_field_desc_t b_fields[] = {{"v", TES_F64, 0}};
static const tes_field_desc_t c_fields[] = {{"w", TES_U16, 2}};
static const tes_field_desc_t d_fields[] = {{"d", TES_I8, 0}};
static const struct {
    const char *name;
    const tes_field_desc_t *fields;
    uint32_t field_count;
} schema[NC] = {{"A", a_fields, 2}, {"B", b_fields, 1}, {"C", c_fields, 1},
                {"D", d_fields, 1}, {"T1", NULL, 0},    {"T2", NULL, 0}};

typedef struct ment_t {
    tes_entity_t handle;
    uint32_t mask;
    uint16_t added_pend[NC];   /* consumers that have this component's add pending */
    uint16_t changed_pend[NC]; /* consumers that have a change of it pending */
} ment_t;

struct model_t;

typedef struct consumer_t {
    const char *name;
    uint32_t all, none, any, added, changed, removed; /* component masks */
    uint32_t rate;                                    /* queries: run when step % rate == phase */
    uint32_t interval;                                /* systems */
    uint32_t stage;                                   /* systems */
    bool system;
    bool toggles; /* closed and reopened at random */
    bool deferring_body;
    bool open;
    uint32_t index; /* its bit */
    tes_query_t *query;
    tes_system_t *handle;
    rlist_t rlog[NC];
    uint64_t runs;
    struct model_t *model;
} consumer_t;

/* CMD_ADD_VALUES: tes_add_items with a value, an add or (of a held component) a change. */
enum { CMD_SPAWN, CMD_DESPAWN, CMD_ADD, CMD_ADD_VALUES, CMD_REMOVE, CMD_SET };

typedef struct command_t {
    int kind;
    tes_entity_t entity;
    uint32_t component;
    uint32_t mask; /* spawns */
    uint64_t group;
} command_t;

typedef struct model_t {
    tes_world_t *world;
    fx_rng_t rng;
    uint64_t seed;
    uint32_t step;
    uint32_t target_live;
    const char *op;
    const char *consumer;
    ment_t *live;
    uint32_t live_count;
    int32_t *slot_of_index;
    uint64_t next_group;
    consumer_t consumers[MAX_CONSUMERS];
    uint32_t consumer_count;
    tes_query_t *everything;
    /* The consumer run in progress (runs do not nest in one another here). */
    consumer_t *running;
    uint8_t *expected; /* per live slot */
    uint8_t *visited;
    uint32_t expected_count, visited_count;
    rlist_t expected_removed[NC];
    /* Deferred commands, applied when the outermost run ends. */
    uint32_t depth;
    command_t *commands;
    uint32_t command_count, command_capacity;
    tes_entity_t *pending;
    uint32_t pending_count, pending_capacity;
    uint64_t skipped;
    /* Totals for the summary line. */
    uint64_t runs, reported, removals_reported, commands_applied, carried;
    uint64_t held_adds, recorded_sets; /* recorded adds applied as changes; sets after them */
} model_t;

static model_t *current_model;

static void report_context(void *unused) {
    (void)unused;
    model_t *m = current_model;
    if (harness_case_failed() && m != NULL) {
        printf("  model: seed %llu, step %u of %u, operation %s, consumer %s, %u live, "
               "depth %u\n",
               (unsigned long long)m->seed, m->step, STEPS, m->op ? m->op : "?",
               m->consumer ? m->consumer : "-", m->live_count, m->depth);
    }
    current_model = NULL;
}

static void model_free(void *p) {
    model_t *m = (model_t *)p;
    free(m->live);
    free(m->slot_of_index);
    free(m->expected);
    free(m->visited);
    free(m->commands);
    free(m->pending);
    for (uint32_t c = 0; c < NC; c++) {
        free(m->expected_removed[c].items);
        for (uint32_t k = 0; k < m->consumer_count; k++)
            free(m->consumers[k].rlog[c].items);
    }
    free(m);
}

/* ---------------------------------------------------------------------------------------- */
/* The model's entities                                                                      */
/* ---------------------------------------------------------------------------------------- */

static int32_t slot_of(const model_t *m, tes_entity_t h) {
    uint32_t index = tes_entity_index(h);
    if (h == 0 || index >= INDEX_CAP) return -1;
    int32_t slot = m->slot_of_index[index];
    return slot >= 0 && m->live[slot].handle == h ? slot : -1;
}

static void model_spawned(model_t *m, tes_entity_t h, uint32_t mask) {
    CHECK(h != 0);
    uint32_t index = tes_entity_index(h);
    CHECK(index < INDEX_CAP);
    CHECK(m->slot_of_index[index] < 0); /* no live entity holds its index */
    CHECK(m->live_count < MAX_LIVE);
    ment_t *e = &m->live[m->live_count];
    memset(e, 0, sizeof *e);
    e->handle = h;
    e->mask = mask;
    for (uint32_t c = 0; c < NC; c++) {
        if (mask & BIT(c)) e->added_pend[c] = ALL_CONSUMERS;
    }
    m->slot_of_index[index] = (int32_t)m->live_count;
    m->live_count++;
}

static void model_add(model_t *m, uint32_t slot, uint32_t c) {
    ment_t *e = &m->live[slot];
    if (e->mask & BIT(c)) return;
    e->mask |= BIT(c);
    e->added_pend[c] = ALL_CONSUMERS;
    e->changed_pend[c] = 0;
}

static void model_change(model_t *m, uint32_t slot, uint32_t c) {
    ment_t *e = &m->live[slot];
    CHECK(e->mask & BIT(c));
    e->changed_pend[c] = ALL_CONSUMERS;
}

static void log_removal(model_t *m, tes_entity_t h, uint32_t c, uint64_t group) {
    for (uint32_t k = 0; k < m->consumer_count; k++) {
        consumer_t *q = &m->consumers[k];
        if (q->open && (q->removed & BIT(c))) rlist_push(&q->rlog[c], h, group);
    }
}

static void model_remove(model_t *m, uint32_t slot, uint32_t c, uint64_t group) {
    ment_t *e = &m->live[slot];
    if (!(e->mask & BIT(c))) return;
    e->mask &= ~BIT(c);
    e->added_pend[c] = e->changed_pend[c] = 0;
    log_removal(m, e->handle, c, group);
}

static void model_despawn(model_t *m, uint32_t slot, uint64_t group) {
    CHECK(m->running == NULL); /* the live array is stable during a run */
    ment_t *e = &m->live[slot];
    for (uint32_t c = 0; c < NC; c++) {
        if (e->mask & BIT(c)) log_removal(m, e->handle, c, group);
    }
    m->slot_of_index[tes_entity_index(e->handle)] = -1;
    m->live_count--;
    if (slot != m->live_count) {
        m->live[slot] = m->live[m->live_count];
        m->slot_of_index[tes_entity_index(m->live[slot].handle)] = (int32_t)slot;
    }
}

/* ---------------------------------------------------------------------------------------- */
/* Consumer runs                                                                             */
/* ---------------------------------------------------------------------------------------- */

static bool matches_terms(const consumer_t *k, uint32_t mask) {
    uint32_t all = k->all | k->added | k->changed;
    return (mask & all) == all && !(mask & k->none) && (!k->any || (mask & k->any));
}

static bool expected_in_run(const consumer_t *k, const ment_t *e) {
    if (!matches_terms(k, e->mask)) return false;
    uint16_t bit = (uint16_t)(1u << k->index);
    for (uint32_t c = 0; c < NC; c++) {
        if ((k->added & BIT(c)) && !(e->added_pend[c] & bit)) return false;
        if ((k->changed & BIT(c)) && !(e->changed_pend[c] & bit)) return false;
    }
    return true;
}

static void describe(const model_t *m, const consumer_t *k, tes_entity_t h, char *out,
                     size_t size) {
    int32_t slot = slot_of(m, h);
    if (slot < 0) {
        snprintf(out, size, "entity %u (not alive in the model)", (unsigned)h);
        return;
    }
    const ment_t *e = &m->live[slot];
    size_t n = (size_t)snprintf(out, size, "entity %u mask", (unsigned)h);
    for (uint32_t c = 0; c < NC && n < size; c++) {
        if (e->mask & BIT(c)) n += (size_t)snprintf(out + n, size - n, " %s", schema[c].name);
    }
    for (uint32_t c = 0; c < NC && n < size; c++) {
        bool a = (e->added_pend[c] >> k->index) & 1u, ch = (e->changed_pend[c] >> k->index) & 1u;
        if (a || ch) {
            n += (size_t)snprintf(out + n, size - n, "; %s pending:%s%s", schema[c].name,
                                  a ? " added" : "", ch ? " changed" : "");
        }
    }
}

/* The run starts: what it must report is fixed now, and it consumes the consumer's pending
 * adds, changes and removals. */
static void run_begin(model_t *m, consumer_t *k) {
    CHECK(m->running == NULL);
    m->running = k;
    m->consumer = k->name;
    m->expected_count = m->visited_count = 0;
    for (uint32_t i = 0; i < m->live_count; i++) {
        m->expected[i] = expected_in_run(k, &m->live[i]);
        m->visited[i] = 0;
        m->expected_count += m->expected[i];
    }
    uint16_t keep = (uint16_t) ~(1u << k->index);
    for (uint32_t i = 0; i < m->live_count; i++) {
        for (uint32_t c = 0; c < NC; c++) {
            m->live[i].added_pend[c] &= keep;
            m->live[i].changed_pend[c] &= keep;
        }
    }
    for (uint32_t c = 0; c < NC; c++) {
        rlist_t t = m->expected_removed[c];
        m->expected_removed[c] = k->rlog[c];
        k->rlog[c] = t;
        k->rlog[c].count = 0;
    }
    m->depth++;
}

static int compare_entities(const void *a, const void *b) {
    return fx_entity_compare(a, b);
}

static void check_removed(model_t *m, tes_iter_t *it) {
    consumer_t *k = m->running;
    for (uint32_t c = 0; c < NC; c++) {
        if (!(k->removed & BIT(c))) continue;
        const tes_entity_t *got = NULL;
        uint32_t count = UINT32_MAX;
        CHECK_OK(tes_iter_removed(it, c, &got, &count));
        const rlist_t *want = &m->expected_removed[c];
        if (count != want->count) {
            harness_fail(__FILE__, __LINE__, "%s: removed %s gave %u entities, model says %u",
                         k->name, schema[c].name, (unsigned)count, (unsigned)want->count);
        }
        /* Group by group, in order; any order inside a group. */
        for (uint32_t i = 0; i < count;) {
            uint32_t j = i;
            while (j < count && want->items[j].group == want->items[i].group)
                j++;
            uint32_t n = j - i;
            tes_entity_t *a = (tes_entity_t *)malloc(2 * n * sizeof *a), *b = a + n;
            CHECK(a != NULL);
            for (uint32_t x = i; x < j; x++) {
                a[x - i] = got[x];
                b[x - i] = want->items[x].entity;
            }
            qsort(a, n, sizeof a[0], compare_entities);
            qsort(b, n, sizeof b[0], compare_entities);
            uint32_t bad = n;
            for (uint32_t x = 0; x < n && bad == n; x++) {
                if (a[x] != b[x]) bad = x;
            }
            tes_entity_t got_bad = bad < n ? a[bad] : 0, want_bad = bad < n ? b[bad] : 0;
            free(a);
            if (bad < n) {
                harness_fail(__FILE__, __LINE__,
                             "%s: removed %s entries %u..%u: got %u, model says %u", k->name,
                             schema[c].name, (unsigned)i, (unsigned)j - 1, (unsigned)got_bad,
                             (unsigned)want_bad);
            }
            i = j;
        }
        m->removals_reported += count;
    }
}

static void run_chunk(model_t *m, tes_iter_t *it) {
    consumer_t *k = m->running;
    FX_CHECK_ITER_CHUNK(m->world, it);
    for (uint32_t i = 0; i < it->row_count; i++) {
        tes_entity_t h = it->entities[fx_iter_row(it, i)];
        int32_t slot = slot_of(m, h);
        char what[256];
        if (slot < 0 || !m->expected[slot] || m->visited[slot]) {
            describe(m, k, h, what, sizeof what);
            harness_fail(__FILE__, __LINE__, "%s reported %s: %s", k->name,
                         slot < 0           ? "an entity the model has not alive"
                         : m->visited[slot] ? "an entity twice"
                                            : "an entity it should not",
                         what);
        }
        m->visited[slot] = 1;
        m->visited_count++;
    }
}

static void model_flush(model_t *m);

/* The run ends; `early`: before its last chunk (tes_iter_fini), so what it did not hand out
 * is its next run's (issue 16, rule 5): those entities keep their adds and changes pending for
 * this consumer, checked again then like the rest. */
static void run_end(model_t *m, bool early) {
    consumer_t *k = m->running;
    if (early) {
        uint16_t bit = (uint16_t)(1u << k->index);
        for (uint32_t i = 0; i < m->live_count; i++) {
            if (!m->expected[i] || m->visited[i]) continue;
            for (uint32_t c = 0; c < NC; c++) {
                if (k->added & BIT(c)) m->live[i].added_pend[c] |= bit;
                if (k->changed & BIT(c)) m->live[i].changed_pend[c] |= bit;
            }
            m->carried++;
        }
    } else if (m->visited_count != m->expected_count) {
        for (uint32_t i = 0; i < m->live_count; i++) {
            if (m->expected[i] && !m->visited[i]) {
                char what[256];
                describe(m, k, m->live[i].handle, what, sizeof what);
                harness_fail(__FILE__, __LINE__, "%s reported %u of %u entities; missed %s",
                             k->name, (unsigned)m->visited_count, (unsigned)m->expected_count,
                             what);
            }
        }
    }
    m->runs++;
    m->reported += m->visited_count;
    k->runs++;
    m->running = NULL;
    m->consumer = NULL;
    m->depth--;
    if (m->depth == 0) model_flush(m);
}

/* ---------------------------------------------------------------------------------------- */
/* Deferred commands                                                                         */
/* ---------------------------------------------------------------------------------------- */

static void push_command(model_t *m, int kind, tes_entity_t e, uint32_t component, uint32_t mask,
                         uint64_t group) {
    m->commands = (command_t *)grow(m->commands, &m->command_capacity, m->command_count + 1,
                                    sizeof *m->commands);
    command_t *cmd = &m->commands[m->command_count++];
    cmd->kind = kind;
    cmd->entity = e;
    cmd->component = component;
    cmd->mask = mask;
    cmd->group = group;
}

static void push_pending(model_t *m, tes_entity_t e) {
    m->pending = (tes_entity_t *)grow(m->pending, &m->pending_capacity, m->pending_count + 1,
                                      sizeof *m->pending);
    m->pending[m->pending_count++] = e;
}

/* What the world does when the outermost run ends (the model's side; the world's counters are
 * compared after the step). */
static void model_flush(model_t *m) {
    for (uint32_t i = 0; i < m->command_count; i++) {
        const command_t *cmd = &m->commands[i];
        if (cmd->kind == CMD_SPAWN) {
            model_spawned(m, cmd->entity, cmd->mask);
            continue;
        }
        int32_t slot = slot_of(m, cmd->entity);
        if (slot < 0) {
            m->skipped++;
            continue;
        }
        switch (cmd->kind) {
        case CMD_DESPAWN:
            model_despawn(m, (uint32_t)slot, cmd->group);
            break;
        case CMD_ADD:
            model_add(m, (uint32_t)slot, cmd->component);
            break;
        case CMD_ADD_VALUES:
            /* Decided when applied: a change when the entity has the component by then. */
            if (m->live[slot].mask & BIT(cmd->component)) {
                model_change(m, (uint32_t)slot, cmd->component);
                m->held_adds++;
            } else {
                model_add(m, (uint32_t)slot, cmd->component);
            }
            break;
        case CMD_REMOVE:
            model_remove(m, (uint32_t)slot, cmd->component, cmd->group);
            break;
        case CMD_SET:
            model_change(m, (uint32_t)slot, cmd->component);
            break;
        default:
            CHECK(false);
        }
    }
    m->commands_applied += m->command_count;
    m->command_count = 0;
    m->pending_count = 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Operations                                                                                */
/* ---------------------------------------------------------------------------------------- */

static uint32_t random_mask(model_t *m) {
    static const uint32_t common[] = {BIT(CA), BIT(CA) | BIT(CB), BIT(CA) | BIT(CC),
                                      BIT(CA) | BIT(CB) | BIT(CC), BIT(CB) | BIT(CC) | BIT(CT1)};
    if (fx_rng_chance(&m->rng, 55)) return common[fx_rng_below(&m->rng, 5)];
    uint32_t mask = 0;
    for (uint32_t c = 0; c < NC; c++) {
        if (fx_rng_chance(&m->rng, 40)) mask |= BIT(c);
    }
    return mask;
}

static uint32_t mask_list(model_t *m, uint32_t mask, tes_component_t *out) {
    uint32_t n = 0;
    for (uint32_t c = 0; c < NC; c++) {
        if (mask & BIT(c)) out[n++] = c;
    }
    for (uint32_t i = n; i > 1; i--) {
        uint32_t j = fx_rng_below(&m->rng, i);
        tes_component_t t = out[i - 1];
        out[i - 1] = out[j];
        out[j] = t;
    }
    return n;
}

static int32_t pick_live(model_t *m) {
    return m->live_count ? (int32_t)fx_rng_below(&m->rng, m->live_count) : -1;
}

/* A live entity with a data component, and that component. */
static bool pick_data(model_t *m, uint32_t *out_slot, uint32_t *out_c) {
    for (int tries = 0; tries < 8; tries++) {
        int32_t slot = pick_live(m);
        if (slot < 0) return false;
        uint32_t data = m->live[slot].mask & (BIT(NDATA) - 1u);
        if (!data) continue;
        uint32_t c;
        do {
            c = fx_rng_below(&m->rng, NDATA);
        } while (!(data & BIT(c)));
        *out_slot = (uint32_t)slot;
        *out_c = c;
        return true;
    }
    return false;
}

/* Writes field 0 of component c of the entity at `slot` (a changing value). */
static void write_number(model_t *m, uint32_t slot, uint32_t c) {
    double value = (double)(fx_rng_below(&m->rng, 100));
    CHECK_OK(tes_set_number(m->world, m->live[slot].handle, c, 0, 0, value));
}

/* A write while a consumer run is going on must not target an entity that run still has to
 * visit (see the file comment). */
static bool writable_now(const model_t *m, uint32_t slot) {
    return m->running == NULL || !m->expected[slot] || m->visited[slot];
}

static void op_write(model_t *m) {
    uint32_t slot, c;
    if (!pick_data(m, &slot, &c) || !writable_now(m, slot)) return;
    tes_entity_t h = m->live[slot].handle;
    switch (fx_rng_below(&m->rng, 4)) {
    case 0:
        m->op = "set_number";
        write_number(m, slot, c);
        break;
    case 1: {
        m->op = "set";
        tes_field_info_t info;
        CHECK_OK(tes_field_info(m->world, c, 0, &info));
        unsigned char bytes[16] = {0};
        bytes[0] = (unsigned char)fx_rng_below(&m->rng, 100);
        CHECK_OK(tes_set(m->world, h, c, 0, bytes, info.bytes));
        break;
    }
    default:
        m->op = "mark_changed";
        CHECK_OK(tes_mark_changed(m->world, h, c));
    }
    model_change(m, slot, c);
}

static void op_raw_write(model_t *m) {
    uint32_t slot, c;
    m->op = "raw write";
    if (!pick_data(m, &slot, &c)) return;
    void *ptr = NULL;
    CHECK_OK(tes_field_ptr(m->world, m->live[slot].handle, c, 0, &ptr));
    *(unsigned char *)ptr ^= 1u; /* unmarked: nobody sees it */
}

static void op_chunk_mark(model_t *m) {
    uint32_t slot, c;
    m->op = "chunk_mark_changed";
    if (!pick_data(m, &slot, &c)) return;
    tes_location_t loc;
    tes_chunk_info_t chunk;
    CHECK_OK(tes_location(m->world, m->live[slot].handle, &loc));
    CHECK_OK(tes_chunk_info(m->world, loc.archetype, loc.chunk, &chunk));
    uint32_t rows[512];
    uint32_t n = 0;
    bool all = fx_rng_chance(&m->rng, 30);
    for (uint32_t r = 0; r < chunk.count && n < 512; r++) {
        if (all || fx_rng_chance(&m->rng, 30)) rows[n++] = r;
    }
    for (uint32_t i = 0; i < n; i++) {
        int32_t s = slot_of(m, chunk.entities[rows[i]]);
        CHECK(s >= 0);
        if (!writable_now(m, (uint32_t)s)) return;
    }
    if (all) {
        CHECK_OK(tes_chunk_mark_changed(m->world, loc.archetype, loc.chunk, c, NULL, 0));
    } else {
        CHECK_OK(tes_chunk_mark_changed(m->world, loc.archetype, loc.chunk, c, rows, n));
    }
    for (uint32_t i = 0; i < n; i++)
        model_change(m, (uint32_t)slot_of(m, chunk.entities[rows[i]]), c);
}

static void op_spawn(model_t *m) {
    m->op = "spawn";
    uint32_t mask = random_mask(m);
    tes_component_t set[NC];
    uint32_t n = mask_list(m, mask, set);
    tes_entity_t e = 0;
    CHECK_OK(tes_spawn(m->world, set, n, &e));
    model_spawned(m, e, mask);
    if ((mask & (BIT(NDATA) - 1u)) && fx_rng_chance(&m->rng, 50)) {
        uint32_t c;
        do {
            c = fx_rng_below(&m->rng, NDATA);
        } while (!(mask & BIT(c)));
        write_number(m, m->live_count - 1, c);
        model_change(m, m->live_count - 1, c);
    }
}

static void op_spawn_batch(model_t *m) {
    tes_entity_t e[8];
    uint32_t count = 1 + fx_rng_below(&m->rng, 8);
    uint32_t mask;
    if (m->live_count && fx_rng_chance(&m->rng, 40)) {
        m->op = "archetype_spawn";
        uint32_t slot = (uint32_t)pick_live(m);
        mask = m->live[slot].mask;
        tes_location_t loc;
        CHECK_OK(tes_location(m->world, m->live[slot].handle, &loc));
        CHECK_OK(tes_archetype_spawn(m->world, loc.archetype, count, e));
    } else {
        m->op = "spawn_batch";
        mask = random_mask(m);
        tes_component_t set[NC];
        uint32_t n = mask_list(m, mask, set);
        CHECK_OK(tes_spawn_batch(m->world, set, n, count, e));
    }
    for (uint32_t i = 0; i < count; i++)
        model_spawned(m, e[i], mask);
}

static void op_despawn(model_t *m) {
    m->op = "despawn";
    int32_t slot = pick_live(m);
    if (slot < 0) return;
    CHECK_OK(tes_despawn(m->world, m->live[slot].handle));
    model_despawn(m, (uint32_t)slot, m->next_group++);
}

static void op_despawn_batch(model_t *m) {
    m->op = "despawn_batch";
    tes_entity_t list[8];
    uint32_t n = 0, want = 1 + fx_rng_below(&m->rng, 8);
    for (int tries = 0; tries < 32 && n < want && n < m->live_count; tries++) {
        tes_entity_t h = m->live[fx_rng_below(&m->rng, m->live_count)].handle;
        bool dup = false;
        for (uint32_t i = 0; i < n; i++)
            dup |= list[i] == h;
        if (!dup) list[n++] = h;
    }
    if (!n) return;
    CHECK_OK(tes_despawn_batch(m->world, list, n));
    uint64_t group = m->next_group++;
    for (uint32_t i = 0; i < n; i++)
        model_despawn(m, (uint32_t)slot_of(m, list[i]), group);
}

static void op_add_remove(model_t *m) {
    int32_t slot = pick_live(m);
    if (slot < 0) return;
    uint32_t c = fx_rng_below(&m->rng, NC);
    tes_entity_t h = m->live[slot].handle;
    if (fx_rng_chance(&m->rng, 50)) {
        m->op = "add";
        CHECK_OK(tes_add(m->world, h, c));
        model_add(m, (uint32_t)slot, c);
    } else {
        m->op = "remove";
        CHECK_OK(tes_remove(m->world, h, c));
        model_remove(m, (uint32_t)slot, c, m->next_group++);
    }
}

static void op_archetype(model_t *m) {
    int32_t slot = pick_live(m);
    if (slot < 0) return;
    uint32_t mask = m->live[slot].mask;
    uint32_t c = fx_rng_below(&m->rng, NC);
    tes_location_t loc;
    CHECK_OK(tes_location(m->world, m->live[slot].handle, &loc));
    if (!(mask & BIT(c))) {
        m->op = "archetype_add";
        CHECK_OK(tes_archetype_add(m->world, loc.archetype, c));
        for (uint32_t i = 0; i < m->live_count; i++) {
            if (m->live[i].mask == mask) model_add(m, i, c);
        }
    } else {
        m->op = "archetype_remove";
        CHECK_OK(tes_archetype_remove(m->world, loc.archetype, c));
        uint64_t group = m->next_group++;
        for (uint32_t i = 0; i < m->live_count; i++) {
            if (m->live[i].mask == mask) model_remove(m, i, c, group);
        }
    }
}

/* A live or pending entity, for a deferred command. */
static tes_entity_t pick_target(model_t *m) {
    if (m->pending_count && fx_rng_chance(&m->rng, 25)) {
        return m->pending[fx_rng_below(&m->rng, m->pending_count)];
    }
    int32_t slot = pick_live(m);
    return slot < 0 ? 0 : m->live[slot].handle;
}

/* Whether the entity will have component c once the recorded commands apply: 1 or 0 when a
 * recorded command decides it, -1 when none names it (the model's tesi_recorded). */
static int model_recorded(const model_t *m, tes_entity_t e, uint32_t c) {
    for (uint32_t i = m->command_count; i-- > 0;) {
        const command_t *cmd = &m->commands[i];
        if (cmd->entity != e) continue;
        if (cmd->kind == CMD_SPAWN) return (cmd->mask & BIT(c)) != 0;
        if (cmd->kind == CMD_DESPAWN) return 0;
        if (cmd->component != c) continue;
        if (cmd->kind == CMD_ADD || cmd->kind == CMD_ADD_VALUES) return 1;
        if (cmd->kind == CMD_REMOVE) return 0;
    }
    return -1;
}

/* An add with a value of a data component (tes_add_items): recorded, decided when applied. */
static void deferred_add_values(model_t *m) {
    m->op = "deferred add with values";
    tes_entity_t e = pick_target(m);
    if (!e) return;
    uint32_t c = fx_rng_below(&m->rng, NDATA);
    double numbers[2] = {(double)fx_rng_below(&m->rng, 100), 1}; /* C's field has two */
    tes_items_t x = {&(tes_item_t){c, 0}, 1, &(tes_value_t){0, 0, 0}, 1, numbers, 2};
    CHECK_OK(tes_add_items(m->world, &e, 1, &x, NULL));
    push_command(m, CMD_ADD_VALUES, e, c, 0, 0);
}

/* A set of a component a placed entity lacks now: recorded after the add that brings it (a
 * change), refused when no recorded add brings it; at once when the entity has it. */
static void deferred_set(model_t *m) {
    m->op = "deferred set";
    int32_t slot = pick_live(m);
    uint32_t c = fx_rng_below(&m->rng, NDATA);
    /* Mostly a placed entity a recorded add gives a data component it lacks now. */
    for (uint32_t i = m->command_count; i-- > 0 && fx_rng_chance(&m->rng, 90);) {
        const command_t *cmd = &m->commands[i];
        int32_t s = slot_of(m, cmd->entity);
        bool add = cmd->kind == CMD_ADD || cmd->kind == CMD_ADD_VALUES;
        if (add && cmd->component < NDATA && s >= 0 && !(m->live[s].mask & BIT(cmd->component))) {
            slot = s;
            c = cmd->component;
            break;
        }
    }
    if (slot < 0) return;
    tes_entity_t e = m->live[slot].handle;
    if (m->live[slot].mask & BIT(c)) {
        if (!writable_now(m, (uint32_t)slot)) return;
        write_number(m, (uint32_t)slot, c);
        model_change(m, (uint32_t)slot, c);
        return;
    }
    tes_result_t result = tes_set_number(m->world, e, c, 0, 0, 3);
    if (model_recorded(m, e, c) == 1) {
        CHECK_OK(result);
        push_command(m, CMD_SET, e, c, 0, 0);
        m->recorded_sets++;
    } else {
        CHECK_ERR(result, TES_ERR_MISSING_COMPONENT);
    }
}

/* One call made while a run is live: recorded (structural) or done at once (writes to live
 * entities). */
static void deferred_op(model_t *m) {
    tes_world_t *w = m->world;
    switch (fx_rng_below(&m->rng, 12)) {
    case 0:
    case 1: {
        m->op = "deferred spawn";
        uint32_t mask = random_mask(m);
        tes_component_t set[NC];
        uint32_t n = mask_list(m, mask, set);
        tes_entity_t e = 0;
        CHECK_OK(tes_spawn(w, set, n, &e));
        CHECK(e != 0);
        CHECK(!tes_is_alive(w, e));
        push_command(m, CMD_SPAWN, e, 0, mask, 0);
        push_pending(m, e);
        uint32_t data = mask & (BIT(NDATA) - 1u);
        if (data && fx_rng_chance(&m->rng, 60)) {
            uint32_t c;
            do {
                c = fx_rng_below(&m->rng, NDATA);
            } while (!(data & BIT(c)));
            double d;
            CHECK_ERR(tes_get_number(w, e, c, 0, 0, &d), TES_ERR_PENDING_ENTITY);
            CHECK_OK(tes_set_number(w, e, c, 0, 0, 7));
            push_command(m, CMD_SET, e, c, 0, 0);
        }
        break;
    }
    case 2: {
        m->op = "deferred spawn_batch";
        tes_entity_t e[4];
        uint32_t mask = random_mask(m), count = 1 + fx_rng_below(&m->rng, 4);
        tes_component_t set[NC];
        uint32_t n = mask_list(m, mask, set);
        CHECK_OK(tes_spawn_batch(w, set, n, count, e));
        for (uint32_t i = 0; i < count; i++) {
            CHECK(!tes_is_alive(w, e[i]));
            push_command(m, CMD_SPAWN, e[i], 0, mask, 0);
            push_pending(m, e[i]);
        }
        break;
    }
    case 3: {
        m->op = "deferred despawn";
        tes_entity_t e = pick_target(m);
        if (!e) break;
        CHECK_OK(tes_despawn(w, e));
        push_command(m, CMD_DESPAWN, e, 0, 0, m->next_group++);
        break;
    }
    case 4: {
        m->op = "deferred despawn_batch";
        tes_entity_t list[4];
        uint32_t n = 0;
        for (int tries = 0; tries < 8 && n < 4 && m->live_count; tries++) {
            tes_entity_t h = m->live[fx_rng_below(&m->rng, m->live_count)].handle;
            bool dup = false;
            for (uint32_t i = 0; i < n; i++)
                dup |= list[i] == h;
            if (!dup) list[n++] = h;
        }
        if (!n) break;
        CHECK_OK(tes_despawn_batch(w, list, n));
        uint64_t group = m->next_group++;
        for (uint32_t i = 0; i < n; i++)
            push_command(m, CMD_DESPAWN, list[i], 0, 0, group);
        break;
    }
    case 5:
    case 6: {
        tes_entity_t e = pick_target(m);
        if (!e) break;
        uint32_t c = fx_rng_below(&m->rng, NC);
        if (fx_rng_chance(&m->rng, 50)) {
            m->op = "deferred add";
            CHECK_OK(tes_add(w, e, c));
            push_command(m, CMD_ADD, e, c, 0, 0);
        } else {
            m->op = "deferred remove";
            CHECK_OK(tes_remove(w, e, c));
            push_command(m, CMD_REMOVE, e, c, 0, m->next_group++);
        }
        break;
    }
    case 9:
    case 10:
        deferred_add_values(m);
        break;
    case 11:
        deferred_set(m);
        break;
    default:
        op_write(m); /* at once */
    }
}

/* Whether a loop leaves now (a break: tes_iter_fini before the end). */
static bool breaks_off(model_t *m) {
    return fx_rng_chance(&m->rng, 6);
}

static void run_query(model_t *m, consumer_t *k, bool with_calls) {
    run_begin(m, k);
    tes_iter_t it;
    CHECK_OK(tes_query_iter(m->world, k->query, &it));
    check_removed(m, &it);
    bool early = breaks_off(m); /* sometimes before the first chunk */
    while (!early && tes_iter_next(&it)) {
        run_chunk(m, &it);
        if (with_calls && fx_rng_chance(&m->rng, 30)) {
            uint32_t n = 1 + fx_rng_below(&m->rng, 3);
            for (uint32_t i = 0; i < n; i++)
                deferred_op(m);
            m->consumer = k->name;
        }
        early = breaks_off(m);
    }
    if (early) tes_iter_fini(&it);
    run_end(m, early);
}

static void system_body(tes_iter_t *it, void *user) {
    consumer_t *k = (consumer_t *)user;
    model_t *m = k->model;
    m->op = "tes_tick";
    run_begin(m, k);
    check_removed(m, it);
    bool early = false; /* a body that stops early: tes_tick ends the run after it returns */
    while (!early && tes_iter_next(it)) {
        run_chunk(m, it);
        if (k->deferring_body && fx_rng_chance(&m->rng, 30)) {
            deferred_op(m);
            m->consumer = k->name;
        }
        early = breaks_off(m);
    }
    run_end(m, early); /* the world applies the commands right after this returns */
}

/* A plain iteration over everything with calls made inside it, sometimes a nested run. */
static void op_burst(model_t *m, int level) {
    tes_iter_t it;
    CHECK_OK(tes_query_iter(m->world, m->everything, &it));
    if (!tes_iter_next(&it)) return; /* nothing alive: the run is already over */
    m->depth++;
    uint32_t n = 1 + fx_rng_below(&m->rng, 6);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t r = fx_rng_below(&m->rng, 100);
        if (r < 10) {
            consumer_t *k = &m->consumers[fx_rng_below(&m->rng, m->consumer_count)];
            if (!k->system && k->open) run_query(m, k, false);
        } else if (r < 15 && level == 0) {
            op_burst(m, 1);
        } else {
            deferred_op(m);
        }
    }
    m->op = "burst end";
    if (fx_rng_chance(&m->rng, 50)) {
        tes_iter_fini(&it);
    } else {
        while (tes_iter_next(&it)) {
        }
    }
    m->depth--;
    if (m->depth == 0) model_flush(m);
}

/* ---------------------------------------------------------------------------------------- */
/* Consumers                                                                                 */
/* ---------------------------------------------------------------------------------------- */

static uint32_t mask_to_ids(uint32_t mask, tes_component_t *out) {
    uint32_t n = 0;
    for (uint32_t c = 0; c < NC; c++) {
        if (mask & BIT(c)) out[n++] = c;
    }
    return n;
}

static void consumer_open(model_t *m, consumer_t *k) {
    tes_component_t all[NC], none[NC], any[NC], added[NC], changed[NC], removed[NC];
    tes_query_desc_t desc = {0};
    desc.all = all;
    desc.all_count = mask_to_ids(k->all, all);
    desc.none = none;
    desc.none_count = mask_to_ids(k->none, none);
    desc.any = any;
    desc.any_count = mask_to_ids(k->any, any);
    desc.added = added;
    desc.added_count = mask_to_ids(k->added, added);
    desc.changed = changed;
    desc.changed_count = mask_to_ids(k->changed, changed);
    desc.removed = removed;
    desc.removed_count = mask_to_ids(k->removed, removed);
    if (k->system) {
        tes_system_desc_t sd = {.stage = k->stage,
                                .query = desc,
                                .run = system_body,
                                .user = k,
                                .interval = k->interval};
        CHECK_OK(tes_system_create(m->world, &sd, &k->handle));
    } else {
        CHECK_OK(tes_query_create(m->world, &desc, &k->query));
    }
    k->open = true;
    /* A consumer starts at its creation (issue 16, rule 3): every entity that has one of its
     * components then counts as added, and nothing from before is its: no change, no removal,
     * whatever the other consumers kept. */
    uint16_t bit = (uint16_t)(1u << k->index);
    for (uint32_t i = 0; i < m->live_count; i++) {
        ment_t *e = &m->live[i];
        for (uint32_t c = 0; c < NC; c++) {
            e->added_pend[c] =
                (uint16_t)((e->added_pend[c] & ~bit) | ((e->mask & BIT(c)) ? bit : 0));
            e->changed_pend[c] &= (uint16_t)~bit;
        }
    }
    for (uint32_t c = 0; c < NC; c++)
        k->rlog[c].count = 0;
}

static void consumer_close(model_t *m, consumer_t *k) {
    m->op = "close consumer";
    tes_query_destroy(m->world, k->query);
    k->query = NULL;
    k->open = false;
}

static consumer_t *add_consumer(model_t *m, const char *name) {
    CHECK(m->consumer_count < MAX_CONSUMERS);
    consumer_t *k = &m->consumers[m->consumer_count];
    memset(k, 0, sizeof *k);
    k->name = name;
    k->index = m->consumer_count++;
    k->model = m;
    return k;
}

/* ---------------------------------------------------------------------------------------- */
/* Checks between steps                                                                      */
/* ---------------------------------------------------------------------------------------- */

static void check_counts(model_t *m) {
    tes_world_stats_t stats = fx_stats(m->world);
    CHECK_EQ(stats.entity_count, m->live_count);
    CHECK_EQ(stats.commands_skipped, m->skipped);
}

static void check_full(model_t *m) {
    tes_world_t *w = m->world;
    uint32_t open = 0;
    for (uint32_t k = 0; k < m->consumer_count; k++)
        open += m->consumers[k].open;
    CHECK_EQ(fx_stats(w).query_count, open + 1); /* + the burst query */
    bool c_first = false;
    for (uint32_t k = 0; k < m->consumer_count; k++) {
        const consumer_t *q = &m->consumers[k];
        c_first |= q->open && (q->added & BIT(CC));
    }
    const tes_tracking_t levels[NC] = {
        TES_TRACK_DIRTY, TES_TRACK_DIRTY, c_first ? TES_TRACK_DIRTY : TES_TRACK_TICKS,
        TES_UNTRACKED,   TES_TRACK_DIRTY, TES_UNTRACKED};
    for (uint32_t c = 0; c < NC; c++) {
        tes_tracking_t level;
        CHECK_OK(tes_component_tracking(w, c, &level));
        if (level != levels[c]) {
            harness_fail(__FILE__, __LINE__, "tracking of %s is %d, expected %d", schema[c].name,
                         (int)level, (int)levels[c]);
        }
    }
    for (uint32_t i = 0; i < m->live_count; i++) {
        const ment_t *e = &m->live[i];
        CHECK(tes_is_alive(w, e->handle));
        for (uint32_t c = 0; c < NC; c++) {
            bool has = false;
            CHECK_OK(tes_has(w, e->handle, c, &has));
            if (has != ((e->mask >> c) & 1u)) {
                harness_fail(__FILE__, __LINE__, "entity %u: has(%s) = %d, model says %d",
                             (unsigned)e->handle, schema[c].name, has, !has);
            }
        }
        if (e->mask & BIT(CD)) {
            uint64_t added = 1, changed = 1;
            CHECK_OK(tes_ticks(w, e->handle, CD, &added, &changed));
            CHECK_EQ(added, 0); /* nobody filters on D */
            CHECK_EQ(changed, 0);
        }
    }
    CHECK_OK(tes_world_validate(w));
}

/* ---------------------------------------------------------------------------------------- */
/* The run                                                                                   */
/* ---------------------------------------------------------------------------------------- */

/* tick_percent: chance of a tes_tick (systems, pruning) after each step. */
static void run_model(uint64_t seed, const tes_world_desc_t *desc, uint32_t target_live,
                      uint32_t tick_percent) {
    clock_t start = clock();
    model_t *m = (model_t *)calloc(1, sizeof *m);
    CHECK(m != NULL);
    harness_defer(model_free, m);
    m->live = (ment_t *)calloc(MAX_LIVE, sizeof *m->live);
    m->slot_of_index = (int32_t *)malloc(INDEX_CAP * sizeof *m->slot_of_index);
    m->expected = (uint8_t *)calloc(MAX_LIVE, 1);
    m->visited = (uint8_t *)calloc(MAX_LIVE, 1);
    CHECK(m->live && m->slot_of_index && m->expected && m->visited);
    for (uint32_t i = 0; i < INDEX_CAP; i++)
        m->slot_of_index[i] = -1;
    m->seed = seed;
    m->rng.state = seed;
    m->target_live = target_live;
    m->world = fx_world(desc);
    current_model = m;
    harness_defer(report_context, NULL);
    for (uint32_t c = 0; c < NC; c++) {
        CHECK_EQ(fx_component(m->world, schema[c].name, schema[c].fields, schema[c].field_count),
                 c);
    }
    m->everything = fx_query(m->world, &(tes_query_desc_t){0});
    uint32_t stage_b = 0, stage_c = 0;
    CHECK_OK(tes_stage_create(m->world, "first", &stage_b));
    CHECK_OK(tes_stage_create(m->world, "second", &stage_c));

    consumer_t *k;
    k = add_consumer(m, "changed[A]");
    k->changed = BIT(CA);
    k->rate = 1;
    k = add_consumer(m, "added[B]");
    k->added = BIT(CB);
    k->rate = 2;
    k = add_consumer(m, "changed[A,C]");
    k->changed = BIT(CA) | BIT(CC);
    k->rate = 3;
    k = add_consumer(m, "removed[A,B,T1] none[T2]");
    k->removed = BIT(CA) | BIT(CB) | BIT(CT1);
    k->none = BIT(CT2);
    k->rate = 5;
    k = add_consumer(m, "added[A] changed[B] none[T2]");
    k->added = BIT(CA);
    k->changed = BIT(CB);
    k->none = BIT(CT2);
    k->rate = 4;
    k = add_consumer(m, "changed[A] any[T1,T2] (reopened)");
    k->changed = BIT(CA);
    k->any = BIT(CT1) | BIT(CT2);
    k->rate = 7;
    k->toggles = true;
    k = add_consumer(m, "added[C] all[B] (reopened)");
    k->added = BIT(CC);
    k->all = BIT(CB);
    k->rate = 2;
    k->toggles = true;
    /* Removals of A beside "removed[A,B,T1]", which keeps A's log: reopened, it must still
     * start empty (issue 16, rule 3). */
    k = add_consumer(m, "removed[A,C] (reopened)");
    k->removed = BIT(CA) | BIT(CC);
    k->rate = 3;
    k->toggles = true;
    k = add_consumer(m, "added[T1]");
    k->added = BIT(CT1);
    k->rate = 3;
    k = add_consumer(m, "all[A] none[T1] (plain)");
    k->all = BIT(CA);
    k->none = BIT(CT1);
    k->rate = 6;
    k = add_consumer(m, "system changed[B] every 3rd tick");
    k->system = true;
    k->changed = BIT(CB);
    k->interval = 3;
    k->stage = stage_c;
    k->deferring_body = true;
    k = add_consumer(m, "system removed[C] all[A] every 2nd tick");
    k->system = true;
    k->removed = BIT(CC);
    k->all = BIT(CA);
    k->interval = 2;
    k->stage = stage_b;
    for (uint32_t i = 0; i < m->consumer_count; i++)
        consumer_open(m, &m->consumers[i]);
    check_full(m);

    for (m->step = 0; m->step < STEPS; m->step++) {
        m->op = NULL;
        uint32_t r = fx_rng_below(&m->rng, 100);
        bool grow_more = m->live_count < m->target_live / 2;
        bool shrink = m->live_count > m->target_live * 2;
        if (r < 12) {
            if (shrink) {
                op_despawn_batch(m);
            } else {
                op_spawn(m);
            }
        } else if (r < 17) {
            if (shrink) {
                op_despawn(m);
            } else {
                op_spawn_batch(m);
            }
        } else if (r < 27) {
            if (grow_more) {
                op_spawn(m);
            } else {
                op_despawn(m);
            }
        } else if (r < 31) {
            if (grow_more) {
                op_spawn_batch(m);
            } else {
                op_despawn_batch(m);
            }
        } else if (r < 51) {
            op_add_remove(m);
        } else if (r < 71) {
            op_write(m);
        } else if (r < 75) {
            op_chunk_mark(m);
        } else if (r < 77) {
            op_raw_write(m);
        } else if (r < 80) {
            op_archetype(m);
        } else if (r < 87) {
            m->op = "burst";
            op_burst(m, 0);
        } else if (r < 89) {
            consumer_t *t = &m->consumers[fx_rng_below(&m->rng, m->consumer_count)];
            if (t->toggles) {
                if (t->open) {
                    consumer_close(m, t);
                } else {
                    m->op = "reopen consumer";
                    consumer_open(m, t);
                }
            }
        }
        /* Runs at their rates, then sometimes a frame. */
        for (uint32_t i = 0; i < m->consumer_count; i++) {
            consumer_t *q = &m->consumers[i];
            if (q->system || !q->open || m->step % q->rate != i % q->rate) continue;
            m->op = "run";
            run_query(m, q, fx_rng_chance(&m->rng, 25));
        }
        if (fx_rng_chance(&m->rng, tick_percent)) {
            m->op = "tes_tick";
            CHECK_OK(tes_tick(m->world));
            m->op = NULL;
        }
        if (fx_rng_chance(&m->rng, 1)) {
            /* Queries and trackers must not notice: what they report is checked every step. */
            m->op = "tes_archetypes_reclaim";
            CHECK_OK(tes_archetypes_reclaim(m->world, NULL));
            m->op = NULL;
        }
        check_counts(m);
        if (m->step % 500 == 0) check_full(m);
    }
    check_full(m);
    for (uint32_t i = 0; i < m->consumer_count; i++)
        CHECK(m->consumers[i].runs > 0);
    printf("  model seed %llu: %u steps, %llu runs, %llu reported, %llu carried past a broken-off "
           "loop, %llu removals reported, %llu deferred commands (%llu skipped; %llu adds of a "
           "held component, %llu sets after a recorded add), %.2f s\n",
           (unsigned long long)seed, STEPS, (unsigned long long)m->runs,
           (unsigned long long)m->reported, (unsigned long long)m->carried,
           (unsigned long long)m->removals_reported, (unsigned long long)m->commands_applied,
           (unsigned long long)m->skipped, (unsigned long long)m->held_adds,
           (unsigned long long)m->recorded_sets, (double)(clock() - start) / CLOCKS_PER_SEC);
    CHECK(m->carried > 0 && m->held_adds > 0 && m->recorded_sets > 0);
}

TEST(changes_model_seed_1_default_world) {
    run_model(1, NULL, 150, 25);
}

TEST(changes_model_seed_2_small_chunks_fast_recycling) {
    run_model(2, &(tes_world_desc_t){.chunk_bytes = 1024, .min_free_indices = 4}, 200, 25);
}

TEST(changes_model_seed_3_small_chunks) {
    run_model(3, &(tes_world_desc_t){.chunk_bytes = 1024, .min_free_indices = 64}, 120, 25);
}

TEST(changes_model_seed_4_large_population) {
    run_model(4, &(tes_world_desc_t){.min_free_indices = 1}, 400, 25);
}

TEST(changes_model_seed_5_small_chunks_small_population) {
    run_model(5, &(tes_world_desc_t){.chunk_bytes = 1024, .min_free_indices = 16}, 40, 25);
}

TEST(changes_model_seed_6_a_frame_every_step) {
    run_model(6, &(tes_world_desc_t){.chunk_bytes = 1024, .min_free_indices = 8}, 150, 100);
}

TEST(changes_model_seed_7_rare_frames) {
    run_model(7, &(tes_world_desc_t){.chunk_bytes = 2048}, 150, 2);
}
