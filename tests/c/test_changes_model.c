/*
 * The randomized change-detection model test. A seeded sequence of operations (spawns,
 * despawns, adds, removes, writes, marks, batch and archetype forms, deferred commands made
 * inside runs) runs against the world and against a naive model that records, per entity and
 * component, which consumers have an add or a change of it pending, and per consumer the
 * removals it has not seen yet. Consumers (queries at their own rates, two of them closed and
 * reopened at random, and two systems run by tes_tick at their intervals) must report exactly
 * what the model predicts on every run: no more, no fewer, no entity twice; removal windows
 * exactly, oldest first.
 *
 * The model follows tessera.h: Added and Changed are independent; losing a component drops its
 * history (added back, it is added again, not changed); despawned entities are not reported
 * by filters; every removal is logged, so an entity can appear twice; a consumer created late
 * sees every entity of its added component as added, and no change or removal from before it
 * existed (whatever other consumers kept); commands made inside a run apply in order when the
 * outermost run ends, and those naming an entity gone by then are skipped and counted.
 *
 * One thing is kept out on purpose: writing, during a run, an entity that run still has to
 * visit (tests/c/test_query.c covers that case on its own).
 *
 * On failure the seed, step, operation and consumer are printed; rerun the case to reproduce.
 */
#include "fixtures.h"

#include <time.h>

#define STEPS         20000
#define NC            6 /* components: A B C D (data), T1 T2 (tags) */
#define NDATA         4
#define CA            0u
#define CB            1u
#define CC            2u
#define CD            3u
#define CT1           4u
#define CT2           5u
#define BIT(c)        (1u << (c))
#define INDEX_CAP     (1u << 16)
#define MAX_LIVE      4096
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

typedef struct rentry_t {
    tes_entity_t entity;
    uint64_t group; /* removals of one call share a group: their order is free */
} rentry_t;

typedef struct rlist_t {
    rentry_t *items;
    uint32_t count;
    uint32_t capacity;
} rlist_t;

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

enum { CMD_SPAWN, CMD_DESPAWN, CMD_ADD, CMD_REMOVE, CMD_SET };

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

static void *grow(void *items, uint32_t *capacity, uint32_t need, size_t size) {
    if (need <= *capacity) return items;
    uint32_t n = *capacity ? *capacity : 16;
    while (n < need)
        n *= 2;
    void *p = realloc(items, (size_t)n * size);
    CHECK(p != NULL);
    *capacity = n;
    return p;
}

static void rlist_push(rlist_t *l, tes_entity_t e, uint64_t group) {
    l->items = (rentry_t *)grow(l->items, &l->capacity, l->count + 1, sizeof *l->items);
    l->items[l->count].entity = e;
    l->items[l->count].group = group;
    l->count++;
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

/* One call made while a run is live: recorded (structural) or done at once (writes to live
 * entities). */
static void deferred_op(model_t *m) {
    tes_world_t *w = m->world;
    switch (fx_rng_below(&m->rng, 9)) {
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
        check_counts(m);
        if (m->step % 500 == 0) check_full(m);
    }
    check_full(m);
    for (uint32_t i = 0; i < m->consumer_count; i++)
        CHECK(m->consumers[i].runs > 0);
    printf("  model seed %llu: %u steps, %llu runs, %llu reported, %llu carried past a broken-off "
           "loop, %llu removals reported, %llu deferred commands (%llu skipped), %.2f s\n",
           (unsigned long long)seed, STEPS, (unsigned long long)m->runs,
           (unsigned long long)m->reported, (unsigned long long)m->carried,
           (unsigned long long)m->removals_reported, (unsigned long long)m->commands_applied,
           (unsigned long long)m->skipped, (double)(clock() - start) / CLOCKS_PER_SEC);
    CHECK(m->carried > 0);
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

/* ---------------------------------------------------------------------------------------- */
/* Sparse components and relations under consumers                                           */
/* ---------------------------------------------------------------------------------------- */
/*
 * A second model for change detection outside the chunks: a chunk component A, a sparse S with
 * data, a sparse marker M, a plain relation L with pair data and an exclusive, acyclic, cascade
 * relation C. Consumers filter on S, M, A and on L as a component (Added), log removals of S, M,
 * L and C, and take pair events of L and C. The model keeps per entity and component which
 * consumers have an add or change pending, per consumer its removal windows, and per consumer
 * its pair events (ADDED / REMOVED / CHANGED, changes deduplicated per pair per change tick).
 * Runs go through tes_query_collect or by hand; by-hand runs make calls inside: sparse adds and
 * removes, despawns and spawns are recorded and applied at the end (pairs with a pending
 * endpoint too, with their initial values), pair calls on placed entities apply at once.
 * Within one call the order of its removals and pair events is free; calls stay in order.
 */

#define CM_STEPS     20000
#define CM_NC        5
#define CM_A         0u
#define CM_S         1u
#define CM_M         2u
#define CM_L         3u
#define CM_C         4u
#define CM_CONSUMERS 8
#define CM_MAX_PAIRS 4096
#define CM_ALL       0xffu

static const tes_field_desc_t cm_a_fields[] = {{"v", TES_F64, 0}};
static const tes_field_desc_t cm_s_fields[] = {{"v", TES_F64, 0}, {"n", TES_I32, 0}};
static const tes_field_desc_t cm_l_fields[] = {{"w", TES_F64, 0}};
static const char *const cm_names[CM_NC] = {"A", "S", "M", "L", "C"};

typedef struct cm_ent_t {
    tes_entity_t handle;
    uint32_t mask; /* A S M */
    uint8_t added_pend[CM_NC];
    uint8_t changed_pend[CM_NC];
} cm_ent_t;

typedef struct cm_pair_t {
    tes_entity_t source, target;
    uint64_t seq;
    uint64_t changed_tick; /* tick of its last CHANGED event, 0 none */
} cm_pair_t;

typedef struct cm_event_t {
    tes_pair_event_t event;
    uint64_t group;
} cm_event_t;

typedef struct cm_events_t {
    cm_event_t *items;
    uint32_t count, capacity;
} cm_events_t;

typedef struct cm_consumer_t {
    const char *name;
    uint32_t all, none, added, changed; /* component bits */
    tes_component_t removed[4];
    uint32_t removed_count;
    tes_component_t pair_changes[2];
    uint32_t pair_change_count;
    uint32_t rate;
    tes_query_t *query;
    rlist_t rlog[CM_NC];
    cm_events_t elog;
    uint64_t runs;
} cm_consumer_t;

enum {
    CM_CMD_SPAWN,
    CM_CMD_DESPAWN,
    CM_CMD_ADD,
    CM_CMD_REMOVE,
    CM_CMD_PAIR_ADD,
    CM_CMD_PAIR_INIT,
    CM_CMD_INIT,
    CM_CMD_SET
};

typedef struct cm_command_t {
    int kind;
    tes_entity_t entity, target;
    uint32_t component; /* or mask for spawns */
    uint64_t group;
    double value;
} cm_command_t;

typedef struct cm_model_t {
    tes_world_t *world;
    fx_rng_t rng;
    uint64_t seed;
    uint32_t step;
    const char *op;
    const char *consumer;
    cm_ent_t *live;
    uint32_t live_count;
    int32_t *slot_of_index;
    cm_pair_t pairs[2][CM_MAX_PAIRS]; /* L, C */
    uint32_t pair_count[2];
    uint64_t seq, tick, next_group;
    cm_consumer_t consumers[CM_CONSUMERS];
    uint32_t consumer_count;
    /* The run in progress. */
    cm_consumer_t *running;
    uint8_t *expected, *visited;
    uint32_t expected_count, visited_count;
    rlist_t expected_removed[CM_NC];
    cm_events_t expected_events;
    /* Recorded commands. */
    uint32_t depth;
    cm_command_t *commands;
    uint32_t command_count, command_capacity;
    tes_entity_t *pending;
    uint32_t pending_count, pending_capacity;
    uint64_t skipped;
    uint8_t *dying;
    uint64_t runs, reported, removals_reported, events_reported;
} cm_model_t;

static cm_model_t *cm_current;

static void cm_report_context(void *unused) {
    (void)unused;
    cm_model_t *m = cm_current;
    if (harness_case_failed() && m != NULL) {
        printf("  sparse/relation changes model: seed %llu, step %u of %u, operation %s, "
               "consumer %s, %u live, depth %u\n",
               (unsigned long long)m->seed, m->step, CM_STEPS, m->op ? m->op : "?",
               m->consumer ? m->consumer : "-", m->live_count, m->depth);
    }
    cm_current = NULL;
}

static void cm_free(void *p) {
    cm_model_t *m = (cm_model_t *)p;
    free(m->live);
    free(m->slot_of_index);
    free(m->expected);
    free(m->visited);
    free(m->dying);
    free(m->commands);
    free(m->pending);
    free(m->expected_events.items);
    for (uint32_t c = 0; c < CM_NC; c++) {
        free(m->expected_removed[c].items);
        for (uint32_t k = 0; k < m->consumer_count; k++)
            free(m->consumers[k].rlog[c].items);
    }
    for (uint32_t k = 0; k < m->consumer_count; k++)
        free(m->consumers[k].elog.items);
    free(m);
}

static tes_component_t cm_rel(uint32_t r) {
    return CM_L + r;
}

static int32_t cm_slot(const cm_model_t *m, tes_entity_t h) {
    uint32_t index = tes_entity_index(h);
    if (h == 0 || index >= INDEX_CAP) return -1;
    int32_t slot = m->slot_of_index[index];
    return slot >= 0 && m->live[slot].handle == h ? slot : -1;
}

static bool cm_is_pending(const cm_model_t *m, tes_entity_t h) {
    for (uint32_t i = 0; i < m->pending_count; i++) {
        if (m->pending[i] == h) return true;
    }
    return false;
}

/* ---- the model's bookkeeping ---- */

static void cm_log_event(cm_model_t *m, tes_entity_t s, uint32_t r, tes_entity_t t, uint32_t kind,
                         uint64_t group) {
    for (uint32_t k = 0; k < m->consumer_count; k++) {
        cm_consumer_t *q = &m->consumers[k];
        bool wants = false;
        for (uint32_t i = 0; i < q->pair_change_count; i++)
            wants |= q->pair_changes[i] == cm_rel(r);
        if (!wants) continue;
        cm_events_t *l = &q->elog;
        l->items = (cm_event_t *)grow(l->items, &l->capacity, l->count + 1, sizeof *l->items);
        l->items[l->count].event = (tes_pair_event_t){s, t, cm_rel(r), kind};
        l->items[l->count].group = group;
        l->count++;
    }
}

static void cm_log_removal(cm_model_t *m, tes_entity_t h, uint32_t c, uint64_t group) {
    for (uint32_t k = 0; k < m->consumer_count; k++) {
        cm_consumer_t *q = &m->consumers[k];
        for (uint32_t i = 0; i < q->removed_count; i++) {
            if (q->removed[i] == c) rlist_push(&q->rlog[c], h, group);
        }
    }
}

static bool cm_has_rel(const cm_model_t *m, uint32_t r, tes_entity_t s) {
    for (uint32_t i = 0; i < m->pair_count[r]; i++) {
        if (m->pairs[r][i].source == s) return true;
    }
    return false;
}

static int32_t cm_find(const cm_model_t *m, uint32_t r, tes_entity_t s, tes_entity_t t) {
    for (uint32_t i = 0; i < m->pair_count[r]; i++) {
        if (m->pairs[r][i].source == s && m->pairs[r][i].target == t) return (int32_t)i;
    }
    return -1;
}

static bool cm_has(const cm_model_t *m, const cm_ent_t *e, uint32_t c) {
    return c < CM_L ? (e->mask & BIT(c)) != 0 : cm_has_rel(m, c - CM_L, e->handle);
}

static void cm_spawned(cm_model_t *m, tes_entity_t h, uint32_t mask) {
    CHECK(h != 0);
    uint32_t index = tes_entity_index(h);
    CHECK(index < INDEX_CAP);
    CHECK(m->slot_of_index[index] < 0);
    CHECK(m->live_count < MAX_LIVE);
    cm_ent_t *e = &m->live[m->live_count];
    memset(e, 0, sizeof *e);
    e->handle = h;
    e->mask = mask;
    for (uint32_t c = 0; c < CM_L; c++) {
        if (mask & BIT(c)) e->added_pend[c] = CM_ALL;
    }
    m->slot_of_index[index] = (int32_t)m->live_count;
    m->live_count++;
}

static void cm_add(cm_model_t *m, uint32_t slot, uint32_t c) {
    cm_ent_t *e = &m->live[slot];
    if (e->mask & BIT(c)) return;
    e->mask |= BIT(c);
    e->added_pend[c] = CM_ALL;
    e->changed_pend[c] = 0;
}

static void cm_remove(cm_model_t *m, uint32_t slot, uint32_t c, uint64_t group) {
    cm_ent_t *e = &m->live[slot];
    if (!(e->mask & BIT(c))) return;
    e->mask &= ~BIT(c);
    e->added_pend[c] = e->changed_pend[c] = 0;
    cm_log_removal(m, e->handle, c, group);
}

static void cm_change(cm_model_t *m, uint32_t slot, uint32_t c) {
    CHECK(m->live[slot].mask & BIT(c));
    m->live[slot].changed_pend[c] = CM_ALL;
}

/* Drops pair i of relation r (a REMOVED event); the source losing its last pair of r is a
 * removal of r. */
static void cm_drop_pair(cm_model_t *m, uint32_t r, uint32_t i, uint64_t group, bool log_loss) {
    cm_pair_t p = m->pairs[r][i];
    m->pairs[r][i] = m->pairs[r][--m->pair_count[r]];
    cm_log_event(m, p.source, r, p.target, TES_PAIR_REMOVED, group);
    if (log_loss && !cm_has_rel(m, r, p.source)) {
        int32_t s = cm_slot(m, p.source);
        CHECK(s >= 0);
        m->live[s].added_pend[CM_L + r] = 0;
        cm_log_removal(m, p.source, CM_L + r, group);
    }
}

static void cm_pair_added(cm_model_t *m, uint32_t r, tes_entity_t s, tes_entity_t t,
                          uint64_t group) {
    bool first = !cm_has_rel(m, r, s);
    CHECK(m->pair_count[r] < CM_MAX_PAIRS);
    cm_pair_t *p = &m->pairs[r][m->pair_count[r]++];
    p->source = s;
    p->target = t;
    p->seq = ++m->seq;
    p->changed_tick = 0;
    cm_log_event(m, s, r, t, TES_PAIR_ADDED, group);
    if (first) {
        int32_t slot = cm_slot(m, s);
        CHECK(slot >= 0);
        m->live[slot].added_pend[CM_L + r] = CM_ALL;
    }
}

static void cm_pair_changed(cm_model_t *m, uint32_t i) {
    cm_pair_t *p = &m->pairs[0][i];
    if (p->changed_tick == m->tick) return; /* once per pair per tick */
    p->changed_tick = m->tick;
    cm_log_event(m, p->source, 0, p->target, TES_PAIR_CHANGED, m->next_group++);
}

/* Despawns `list` and, through C (cascade), the sources below, recursively. */
static void cm_despawn(cm_model_t *m, const tes_entity_t *list, uint32_t n, uint64_t group) {
    CHECK(m->running == NULL);
    memset(m->dying, 0, MAX_LIVE);
    uint32_t *work = (uint32_t *)malloc(MAX_LIVE * sizeof *work);
    CHECK(work != NULL);
    uint32_t top = 0;
    for (uint32_t i = 0; i < n; i++) {
        int32_t slot = cm_slot(m, list[i]);
        if (slot >= 0 && !m->dying[slot]) {
            m->dying[slot] = 1;
            work[top++] = (uint32_t)slot;
        }
    }
    while (top > 0) {
        tes_entity_t x = m->live[work[--top]].handle;
        for (uint32_t i = 0; i < m->pair_count[1]; i++) {
            if (m->pairs[1][i].target != x) continue;
            int32_t s = cm_slot(m, m->pairs[1][i].source);
            if (!m->dying[s]) {
                m->dying[s] = 1;
                work[top++] = (uint32_t)s;
            }
        }
    }
    free(work);
    /* Removals of every dying entity's components and relations, then the pairs. */
    for (uint32_t slot = 0; slot < m->live_count; slot++) {
        if (!m->dying[slot]) continue;
        const cm_ent_t *e = &m->live[slot];
        for (uint32_t c = 0; c < CM_NC; c++) {
            if (cm_has(m, e, c)) cm_log_removal(m, e->handle, c, group);
        }
    }
    for (uint32_t r = 0; r < 2; r++) {
        for (uint32_t i = 0; i < m->pair_count[r];) {
            int32_t s = cm_slot(m, m->pairs[r][i].source), t = cm_slot(m, m->pairs[r][i].target);
            if (m->dying[s] || m->dying[t]) {
                cm_drop_pair(m, r, i, group, !m->dying[s]);
            } else {
                i++;
            }
        }
    }
    for (uint32_t slot = m->live_count; slot-- > 0;) {
        if (!m->dying[slot]) continue;
        m->slot_of_index[tes_entity_index(m->live[slot].handle)] = -1;
        m->live_count--;
        if (slot != m->live_count) {
            m->live[slot] = m->live[m->live_count];
            m->dying[slot] = m->dying[m->live_count];
            m->slot_of_index[tes_entity_index(m->live[slot].handle)] = (int32_t)slot;
        }
    }
}

static bool cm_cycle(const cm_model_t *m, tes_entity_t s, tes_entity_t t) {
    for (uint32_t hops = 0; t != 0 && hops <= m->live_count; hops++) {
        if (t == s) return true;
        tes_entity_t parent = 0;
        for (uint32_t i = 0; i < m->pair_count[1]; i++) {
            if (m->pairs[1][i].source == t) parent = m->pairs[1][i].target;
        }
        t = parent;
    }
    return false;
}

/* tes_remove(source, relation): every pair of the source goes, one removal of the relation. */
static void cm_remove_relation(cm_model_t *m, uint32_t slot, uint32_t r, uint64_t group) {
    tes_entity_t s = m->live[slot].handle;
    bool had = cm_has_rel(m, r, s);
    for (uint32_t i = 0; i < m->pair_count[r];) {
        if (m->pairs[r][i].source == s) {
            cm_drop_pair(m, r, i, group, false);
        } else {
            i++;
        }
    }
    if (had) {
        m->live[slot].added_pend[CM_L + r] = 0;
        cm_log_removal(m, s, CM_L + r, group);
    }
}

/* tes_pair_add on placed entities, and the model's answer. */
static void cm_pair_add_now(cm_model_t *m, uint32_t r, tes_entity_t s, tes_entity_t t) {
    tes_result_t res = tes_pair_add(m->world, s, cm_rel(r), t);
    if (r == 1 && cm_cycle(m, s, t)) {
        CHECK_ERR(res, TES_ERR_CYCLE);
        return;
    }
    CHECK_OK(res);
    if (cm_find(m, r, s, t) >= 0) return;
    if (r == 1) { /* exclusive: the old pair goes first, the source keeps C */
        for (uint32_t i = 0; i < m->pair_count[1]; i++) {
            if (m->pairs[1][i].source == s) {
                cm_drop_pair(m, 1, i, m->next_group++, false);
                break;
            }
        }
    }
    cm_pair_added(m, r, s, t, m->next_group++);
}

/* ---- runs ---- */

static bool cm_expected(const cm_consumer_t *k, uint32_t index, const cm_model_t *m,
                        const cm_ent_t *e) {
    uint32_t need = k->all | k->added | k->changed;
    for (uint32_t c = 0; c < CM_NC; c++) {
        bool has = cm_has(m, e, c);
        if ((need & BIT(c)) && !has) return false;
        if ((k->none & BIT(c)) && has) return false;
        if ((k->added & BIT(c)) && !((e->added_pend[c] >> index) & 1u)) return false;
        if ((k->changed & BIT(c)) && !((e->changed_pend[c] >> index) & 1u)) return false;
    }
    return true;
}

static void cm_run_begin(cm_model_t *m, cm_consumer_t *k) {
    CHECK(m->running == NULL);
    uint32_t index = (uint32_t)(k - m->consumers);
    m->running = k;
    m->consumer = k->name;
    m->expected_count = m->visited_count = 0;
    for (uint32_t i = 0; i < m->live_count; i++) {
        m->expected[i] = cm_expected(k, index, m, &m->live[i]);
        m->visited[i] = 0;
        m->expected_count += m->expected[i];
    }
    uint8_t keep = (uint8_t) ~(1u << index);
    for (uint32_t i = 0; i < m->live_count; i++) {
        for (uint32_t c = 0; c < CM_NC; c++) {
            m->live[i].added_pend[c] &= keep;
            m->live[i].changed_pend[c] &= keep;
        }
    }
    for (uint32_t c = 0; c < CM_NC; c++) {
        rlist_t t = m->expected_removed[c];
        m->expected_removed[c] = k->rlog[c];
        k->rlog[c] = t;
        k->rlog[c].count = 0;
    }
    cm_events_t t = m->expected_events;
    m->expected_events = k->elog;
    k->elog = t;
    k->elog.count = 0;
    m->tick++; /* the run takes the tick; later writes carry the next */
    m->depth++;
}

/* Same multiset group by group, groups in order. */
static void cm_check_entities_list(cm_model_t *m, const char *what, const tes_entity_t *got,
                                   uint32_t count, const rlist_t *want) {
    if (count != want->count) {
        harness_fail(__FILE__, __LINE__, "%s: %s gave %u entities, model says %u", m->consumer,
                     what, (unsigned)count, (unsigned)want->count);
    }
    for (uint32_t i = 0; i < count;) {
        uint32_t j = i;
        while (j < count && want->items[j].group == want->items[i].group)
            j++;
        for (uint32_t x = i; x < j; x++) {
            uint32_t in_got = 0, in_want = 0;
            for (uint32_t y = i; y < j; y++) {
                in_got += got[y] == want->items[x].entity;
                in_want += want->items[y].entity == want->items[x].entity;
            }
            if (in_got != in_want) {
                harness_fail(__FILE__, __LINE__, "%s: %s entries %u..%u differ from the model",
                             m->consumer, what, (unsigned)i, (unsigned)j - 1);
            }
        }
        i = j;
    }
}

static bool cm_same_event(const tes_pair_event_t *a, const tes_pair_event_t *b) {
    return a->source == b->source && a->target == b->target && a->relation == b->relation &&
           a->kind == b->kind;
}

/* The events of relation r the model expects, and a check of what the world gave for it. */
static void cm_check_events(cm_model_t *m, tes_component_t r, const tes_pair_event_t *got,
                            uint32_t count) {
    const cm_events_t *all = &m->expected_events;
    uint32_t n = 0;
    for (uint32_t i = 0; i < all->count; i++)
        n += all->items[i].event.relation == r;
    if (count != n) {
        for (uint32_t i = 0; i < count; i++)
            printf("  got (%u, %s, %u) kind %u\n", (unsigned)got[i].source, cm_names[r],
                   (unsigned)got[i].target, (unsigned)got[i].kind);
        for (uint32_t i = 0; i < all->count; i++) {
            const tes_pair_event_t *e = &all->items[i].event;
            if (e->relation == r)
                printf("  want (%u, %s, %u) kind %u\n", (unsigned)e->source, cm_names[r],
                       (unsigned)e->target, (unsigned)e->kind);
        }
        harness_fail(__FILE__, __LINE__, "%s: %u pair events of %s, model says %u", m->consumer,
                     (unsigned)count, cm_names[r], (unsigned)n);
    }
    cm_event_t *want = (cm_event_t *)malloc((n + 1) * sizeof *want);
    CHECK(want != NULL);
    n = 0;
    for (uint32_t i = 0; i < all->count; i++) {
        if (all->items[i].event.relation == r) want[n++] = all->items[i];
    }
    uint32_t bad = UINT32_MAX;
    for (uint32_t i = 0; i < n && bad == UINT32_MAX;) {
        uint32_t j = i;
        while (j < n && want[j].group == want[i].group)
            j++;
        for (uint32_t x = i; x < j && bad == UINT32_MAX; x++) {
            uint32_t in_got = 0, in_want = 0;
            for (uint32_t y = i; y < j; y++) {
                in_got += cm_same_event(&got[y], &want[x].event);
                in_want += cm_same_event(&want[y].event, &want[x].event);
            }
            if (in_got != in_want) bad = x;
        }
        i = j;
    }
    if (bad != UINT32_MAX) {
        for (uint32_t i = 0; i < n; i++) {
            printf("  [%u] got (%u, %u) kind %u; model (%u, %u) kind %u, call %llu\n", (unsigned)i,
                   (unsigned)got[i].source, (unsigned)got[i].target, (unsigned)got[i].kind,
                   (unsigned)want[i].event.source, (unsigned)want[i].event.target,
                   (unsigned)want[i].event.kind, (unsigned long long)want[i].group);
        }
        tes_pair_event_t e = want[bad].event, g = got[bad];
        free(want);
        harness_fail(__FILE__, __LINE__,
                     "%s: pair event %u of %s: model (%u, %u) kind %u, got (%u, %u) kind %u",
                     m->consumer, (unsigned)bad, cm_names[r], (unsigned)e.source,
                     (unsigned)e.target, (unsigned)e.kind, (unsigned)g.source, (unsigned)g.target,
                     (unsigned)g.kind);
    }
    free(want);
    m->events_reported += count;
}

static void cm_visit(cm_model_t *m, tes_entity_t h) {
    int32_t slot = cm_slot(m, h);
    if (slot < 0 || !m->expected[slot] || m->visited[slot]) {
        harness_fail(__FILE__, __LINE__, "%s reported %u: %s", m->consumer, (unsigned)h,
                     slot < 0           ? "not alive in the model"
                     : m->visited[slot] ? "twice"
                                        : "not expected");
    }
    m->visited[slot] = 1;
    m->visited_count++;
}

static void cm_flush(cm_model_t *m);

/* The run ends; `early`: a run by hand left before its last chunk, whose filtered rows not
 * handed out stay pending for this consumer (issue 16, rule 5). */
static void cm_run_end(cm_model_t *m, bool early) {
    cm_consumer_t *k = m->running;
    if (early) {
        uint32_t index = (uint32_t)(k - m->consumers);
        for (uint32_t i = 0; i < m->live_count && (k->added || k->changed); i++) {
            if (!m->expected[i] || m->visited[i]) continue;
            for (uint32_t c = 0; c < CM_NC; c++) {
                if (k->added & BIT(c)) m->live[i].added_pend[c] |= (uint8_t)(1u << index);
                if (k->changed & BIT(c)) m->live[i].changed_pend[c] |= (uint8_t)(1u << index);
            }
        }
    } else if (m->visited_count != m->expected_count) {
        for (uint32_t i = 0; i < m->live_count; i++) {
            if (m->expected[i] && !m->visited[i]) {
                harness_fail(__FILE__, __LINE__, "%s reported %u of %u entities; missed %u",
                             m->consumer, (unsigned)m->visited_count, (unsigned)m->expected_count,
                             (unsigned)m->live[i].handle);
            }
        }
    }
    m->runs++;
    m->reported += m->visited_count;
    m->running->runs++;
    m->running = NULL;
    m->consumer = NULL;
    m->depth--;
    if (m->depth == 0) cm_flush(m);
}

/* ---- recorded commands ---- */

static void cm_push(cm_model_t *m, int kind, tes_entity_t e, uint32_t component, tes_entity_t t,
                    uint64_t group, double value) {
    m->commands = (cm_command_t *)grow(m->commands, &m->command_capacity, m->command_count + 1,
                                       sizeof *m->commands);
    m->commands[m->command_count++] = (cm_command_t){kind, e, t, component, group, value};
}

static void cm_flush(cm_model_t *m) {
    for (uint32_t i = 0; i < m->command_count; i++) {
        const cm_command_t *cmd = &m->commands[i];
        if (cmd->kind == CM_CMD_SPAWN) {
            cm_spawned(m, cmd->entity, cmd->component);
            continue;
        }
        int32_t slot = cm_slot(m, cmd->entity);
        if (slot < 0) {
            m->skipped++;
            continue;
        }
        /* Its removals and pair events come after everything done at once before the flush. */
        uint64_t group = m->next_group++;
        switch (cmd->kind) {
        case CM_CMD_DESPAWN:
            cm_despawn(m, &cmd->entity, 1, group);
            break;
        case CM_CMD_ADD:
            cm_add(m, (uint32_t)slot, cmd->component);
            break;
        case CM_CMD_REMOVE:
            cm_remove(m, (uint32_t)slot, cmd->component, group);
            break;
        case CM_CMD_PAIR_ADD:
            if (cm_slot(m, cmd->target) < 0) {
                m->skipped++;
            } else if (cm_find(m, 0, cmd->entity, cmd->target) < 0) {
                cm_pair_added(m, 0, cmd->entity, cmd->target, group);
            }
            break;
        case CM_CMD_PAIR_INIT:
            if (cm_find(m, 0, cmd->entity, cmd->target) < 0) m->skipped++;
            break;
        case CM_CMD_INIT: /* a value, not a change; skipped when the component is gone */
            if (!(m->live[slot].mask & BIT(cmd->component))) m->skipped++;
            break;
        case CM_CMD_SET: /* a change, after the add it followed; skipped when gone again */
            if (m->live[slot].mask & BIT(cmd->component)) {
                cm_change(m, (uint32_t)slot, cmd->component);
            } else {
                m->skipped++;
            }
            break;
        default:
            CHECK(false);
        }
    }
    m->command_count = 0;
    m->pending_count = 0;
}

/* ---- operations ---- */

/* Whether the recorded commands end with e having component c (the last one naming it adds). */
static bool cm_recorded_add(const cm_model_t *m, tes_entity_t e, uint32_t c) {
    for (uint32_t i = m->command_count; i-- > 0;) {
        const cm_command_t *cmd = &m->commands[i];
        if (cmd->entity != e) continue;
        if (cmd->kind == CM_CMD_DESPAWN) return false;
        if (cmd->kind == CM_CMD_SPAWN) return (cmd->component & BIT(c)) != 0;
        if ((cmd->kind == CM_CMD_ADD || cmd->kind == CM_CMD_REMOVE) && cmd->component == c) {
            return cmd->kind == CM_CMD_ADD;
        }
    }
    return false;
}

static int32_t cm_pick(cm_model_t *m) {
    return m->live_count ? (int32_t)fx_rng_below(&m->rng, m->live_count) : -1;
}

static uint32_t cm_mask(cm_model_t *m) {
    uint32_t mask = 0;
    for (uint32_t c = 0; c < CM_L; c++) {
        if (fx_rng_chance(&m->rng, 50)) mask |= BIT(c);
    }
    return mask;
}

static uint32_t cm_list(cm_model_t *m, uint32_t mask, tes_component_t *out) {
    uint32_t n = 0;
    for (uint32_t c = 0; c < CM_L; c++) {
        if (mask & BIT(c)) out[n++] = c;
    }
    if (n == 2 && fx_rng_chance(&m->rng, 50)) {
        tes_component_t t = out[0];
        out[0] = out[1];
        out[1] = t;
    }
    return n;
}

/* Writes made while a run is live must not hit a row that run still has to visit. */
static bool cm_writable(const cm_model_t *m, uint32_t slot) {
    return m->running == NULL || !m->expected[slot] || m->visited[slot];
}

static void cm_op_write(cm_model_t *m) {
    int32_t slot = cm_pick(m);
    if (slot < 0 || !cm_writable(m, (uint32_t)slot)) return;
    cm_ent_t *e = &m->live[slot];
    uint32_t c = fx_rng_chance(&m->rng, 60) ? CM_S : CM_A;
    double v = (double)fx_rng_below(&m->rng, 1000);
    uint32_t how = fx_rng_below(&m->rng, 4);
    tes_result_t r;
    if (how == 0) {
        m->op = "init_number";
        r = tes_init_number(m->world, e->handle, c, 0, 0, v);
    } else if (how == 1) {
        m->op = "mark_changed";
        r = tes_mark_changed(m->world, e->handle, c);
    } else {
        m->op = "set_number";
        r = tes_set_number(m->world, e->handle, c, 0, 0, v);
    }
    if (how == 0 && m->depth > 0 && !(e->mask & BIT(c))) {
        /* Deferring, and a placed entity lacks it now: recorded, applied at the flush or
         * skipped there if the entity lacks it then (tes_init). */
        CHECK_OK(r);
        cm_push(m, CM_CMD_INIT, e->handle, c, 0, 0, v);
        return;
    }
    if (how >= 2 && m->depth > 0 && !(e->mask & BIT(c)) && cm_recorded_add(m, e->handle, c)) {
        /* A write to a component a recorded add brings: recorded after it, a change then. */
        CHECK_OK(r);
        cm_push(m, CM_CMD_SET, e->handle, c, 0, 0, v);
        return;
    }
    if (!(e->mask & BIT(c))) {
        CHECK_ERR(r, TES_ERR_MISSING_COMPONENT);
        return;
    }
    CHECK_OK(r);
    if (how != 0) cm_change(m, (uint32_t)slot, c);
}

static void cm_op_pair(cm_model_t *m) {
    int32_t a = cm_pick(m), b = cm_pick(m);
    if (a < 0) return;
    uint32_t r = fx_rng_chance(&m->rng, 60) ? 0 : 1;
    tes_entity_t s = m->live[a].handle, t = m->live[b].handle;
    /* A live run of added[L] must not see a first pair land on a row it has yet to visit. */
    if (!cm_writable(m, (uint32_t)a)) return;
    uint32_t roll = fx_rng_below(&m->rng, 100);
    if (roll < 45) {
        m->op = "pair_add";
        cm_pair_add_now(m, r, s, t);
    } else if (roll < 65) {
        m->op = "pair_remove";
        if (m->pair_count[r] && fx_rng_chance(&m->rng, 80)) {
            const cm_pair_t *p = &m->pairs[r][fx_rng_below(&m->rng, m->pair_count[r])];
            s = p->source;
            t = p->target;
            int32_t ps = cm_slot(m, s);
            if (!cm_writable(m, (uint32_t)ps)) return;
        }
        CHECK_OK(tes_pair_remove(m->world, s, cm_rel(r), t));
        int32_t i = cm_find(m, r, s, t);
        if (i >= 0) cm_drop_pair(m, r, (uint32_t)i, m->next_group++, true);
    } else if (roll < 72) {
        m->op = "remove the relation";
        CHECK_OK(tes_remove(m->world, s, cm_rel(r))); /* at once, in a run too */
        cm_remove_relation(m, (uint32_t)a, r, m->next_group++);
    } else {
        if (m->pair_count[0] == 0) return;
        uint32_t i = fx_rng_below(&m->rng, m->pair_count[0]);
        cm_pair_t *p = &m->pairs[0][i];
        if (!cm_writable(m, (uint32_t)cm_slot(m, p->source))) return;
        double v = (double)fx_rng_below(&m->rng, 500);
        if (fx_rng_chance(&m->rng, 25)) {
            m->op = "pair_init_number";
            CHECK_OK(tes_pair_init_number(m->world, p->source, CM_L, p->target, 0, 0, v));
        } else {
            m->op = "pair_set_number";
            CHECK_OK(tes_pair_set_number(m->world, p->source, CM_L, p->target, 0, 0, v));
            cm_pair_changed(m, i);
        }
    }
}

static void cm_op_spawn(cm_model_t *m) {
    uint32_t mask = cm_mask(m);
    tes_component_t set[3];
    uint32_t n = cm_list(m, mask, set);
    if (fx_rng_chance(&m->rng, 70)) {
        m->op = "spawn";
        tes_entity_t h = 0;
        CHECK_OK(tes_spawn(m->world, set, n, &h));
        cm_spawned(m, h, mask);
    } else {
        m->op = "spawn_batch";
        tes_entity_t h[6];
        uint32_t count = 1 + fx_rng_below(&m->rng, 6);
        CHECK_OK(tes_spawn_batch(m->world, set, n, count, h));
        for (uint32_t i = 0; i < count; i++)
            cm_spawned(m, h[i], mask);
    }
}

static void cm_op_despawn(cm_model_t *m) {
    tes_entity_t list[4];
    uint32_t n = 0, want = 1 + fx_rng_below(&m->rng, 4);
    for (int tries = 0; tries < 12 && n < want && m->live_count; tries++) {
        tes_entity_t h = m->live[cm_pick(m)].handle;
        bool dup = false;
        for (uint32_t i = 0; i < n; i++)
            dup |= list[i] == h;
        if (!dup) list[n++] = h;
    }
    if (n == 0) return;
    if (n == 1) {
        m->op = "despawn";
        CHECK_OK(tes_despawn(m->world, list[0]));
    } else {
        m->op = "despawn_batch";
        CHECK_OK(tes_despawn_batch(m->world, list, n));
    }
    cm_despawn(m, list, n, m->next_group++);
}

static void cm_op_add_remove(cm_model_t *m) {
    int32_t slot = cm_pick(m);
    if (slot < 0) return;
    uint32_t c = fx_rng_below(&m->rng, CM_L);
    if (fx_rng_chance(&m->rng, 50)) {
        m->op = "add";
        CHECK_OK(tes_add(m->world, m->live[slot].handle, c));
        cm_add(m, (uint32_t)slot, c);
    } else {
        m->op = "remove";
        CHECK_OK(tes_remove(m->world, m->live[slot].handle, c));
        cm_remove(m, (uint32_t)slot, c, m->next_group++);
    }
}

/* One call made inside a by-hand run. */
static void cm_inside_op(cm_model_t *m) {
    tes_world_t *w = m->world;
    uint32_t roll = fx_rng_below(&m->rng, 100);
    if (roll < 15) {
        m->op = "recorded spawn";
        uint32_t mask = cm_mask(m);
        tes_component_t set[3];
        uint32_t n = cm_list(m, mask, set);
        tes_entity_t p = 0;
        CHECK_OK(tes_spawn(w, set, n, &p));
        CHECK(!tes_is_alive(w, p));
        cm_push(m, CM_CMD_SPAWN, p, mask, 0, 0, 0);
        m->pending = (tes_entity_t *)grow(m->pending, &m->pending_capacity, m->pending_count + 1,
                                          sizeof *m->pending);
        m->pending[m->pending_count++] = p;
    } else if (roll < 35 && m->pending_count) {
        m->op = "recorded pair with a pending endpoint";
        tes_entity_t p = m->pending[fx_rng_below(&m->rng, m->pending_count)];
        int32_t other = cm_pick(m);
        tes_entity_t o = other >= 0 && fx_rng_chance(&m->rng, 80)
                             ? m->live[other].handle
                             : m->pending[fx_rng_below(&m->rng, m->pending_count)];
        bool source_pending = fx_rng_chance(&m->rng, 50);
        tes_entity_t s = source_pending ? p : o, t = source_pending ? o : p;
        if (!cm_is_pending(m, s) && !cm_writable(m, (uint32_t)cm_slot(m, s))) return;
        CHECK_OK(tes_pair_add(w, s, CM_L, t));
        cm_push(m, CM_CMD_PAIR_ADD, s, 0, t, m->next_group++, 0);
        if (fx_rng_chance(&m->rng, 50)) {
            CHECK_OK(tes_pair_init_number(w, s, CM_L, t, 0, 0, 3));
            cm_push(m, CM_CMD_PAIR_INIT, s, 0, t, 0, 3);
        }
    } else if (roll < 55) {
        int32_t slot = cm_pick(m);
        tes_entity_t e = m->pending_count && fx_rng_chance(&m->rng, 20)
                             ? m->pending[fx_rng_below(&m->rng, m->pending_count)]
                         : slot >= 0 ? m->live[slot].handle
                                     : 0;
        if (!e) return;
        uint32_t c = fx_rng_below(&m->rng, CM_L);
        if (fx_rng_chance(&m->rng, 50)) {
            m->op = "recorded add";
            CHECK_OK(tes_add(w, e, c));
            cm_push(m, CM_CMD_ADD, e, c, 0, 0, 0);
        } else {
            m->op = "recorded remove";
            CHECK_OK(tes_remove(w, e, c));
            cm_push(m, CM_CMD_REMOVE, e, c, 0, m->next_group++, 0);
        }
    } else if (roll < 62) {
        int32_t slot = cm_pick(m);
        if (slot < 0) return;
        m->op = "recorded despawn";
        CHECK_OK(tes_despawn(w, m->live[slot].handle));
        cm_push(m, CM_CMD_DESPAWN, m->live[slot].handle, 0, 0, m->next_group++, 0);
    } else if (roll < 80) {
        cm_op_pair(m); /* at once */
    } else {
        cm_op_write(m); /* at once */
    }
}

static void cm_run(cm_model_t *m, cm_consumer_t *k) {
    cm_run_begin(m, k);
    bool filtered = k->added || k->changed;
    if (fx_rng_chance(&m->rng, 50)) {
        m->op = "collect";
        tes_collect_t out;
        CHECK_OK(tes_query_collect(m->world, k->query, &out));
        for (uint32_t i = 0; i < out.count; i++)
            cm_visit(m, out.entities[i]);
        if (!filtered) {
            CHECK_EQ(out.count, 0);               /* collect walks nothing */
            m->visited_count = m->expected_count; /* (a run by hand would visit these) */
        }
        uint32_t at = 0;
        for (uint32_t t = 0; t < k->removed_count; t++) {
            tes_component_t c = k->removed[t];
            cm_check_entities_list(m, cm_names[c], out.removed ? out.removed + at : NULL,
                                   out.removed_counts[t], &m->expected_removed[c]);
            at += out.removed_counts[t];
            m->removals_reported += out.removed_counts[t];
        }
        CHECK_EQ(at, out.removed_total);
        at = 0;
        for (uint32_t r = 0; r < k->pair_change_count; r++) {
            tes_component_t rel = k->pair_changes[r];
            uint32_t n = 0;
            for (uint32_t i = 0; i < m->expected_events.count; i++)
                n += m->expected_events.items[i].event.relation == rel;
            CHECK(at + n <= out.pair_event_count);
            cm_check_events(m, rel, out.pair_events ? out.pair_events + at : NULL, n);
            at += n;
        }
        CHECK_EQ(at, out.pair_event_count);
        cm_run_end(m, false);
        return;
    }
    m->op = "run by hand";
    tes_iter_t it;
    CHECK_OK(tes_query_iter(m->world, k->query, &it));
    for (uint32_t t = 0; t < k->removed_count; t++) {
        const tes_entity_t *got = NULL;
        uint32_t count = 0;
        CHECK_OK(tes_iter_removed(&it, k->removed[t], &got, &count));
        cm_check_entities_list(m, cm_names[k->removed[t]], got, count,
                               &m->expected_removed[k->removed[t]]);
        m->removals_reported += count;
    }
    for (uint32_t r = 0; r < k->pair_change_count; r++) {
        const tes_pair_event_t *got = NULL;
        uint32_t count = 0;
        CHECK_OK(tes_iter_pair_events(&it, k->pair_changes[r], &got, &count));
        cm_check_events(m, k->pair_changes[r], got, count);
    }
    bool early = fx_rng_chance(&m->rng, 6); /* a loop broken off, maybe before any chunk */
    while (!early && tes_iter_next(&it)) {
        FX_CHECK_ITER_CHUNK(m->world, &it);
        for (uint32_t i = 0; i < it.row_count; i++)
            cm_visit(m, it.entities[fx_iter_row(&it, i)]);
        if (fx_rng_chance(&m->rng, 30)) {
            uint32_t n = 1 + fx_rng_below(&m->rng, 3);
            for (uint32_t i = 0; i < n; i++)
                cm_inside_op(m);
            m->consumer = k->name;
        }
        early = fx_rng_chance(&m->rng, 6);
    }
    if (early) tes_iter_fini(&it);
    cm_run_end(m, early);
}

static cm_consumer_t *cm_consumer(cm_model_t *m, const char *name, uint32_t rate) {
    cm_consumer_t *k = &m->consumers[m->consumer_count++];
    memset(k, 0, sizeof *k);
    k->name = name;
    k->rate = rate;
    return k;
}

static void cm_open(cm_model_t *m, cm_consumer_t *k) {
    tes_component_t all[CM_NC], none[CM_NC], added[CM_NC], changed[CM_NC];
    tes_query_desc_t desc = {0};
    desc.all = all;
    desc.none = none;
    desc.added = added;
    desc.changed = changed;
    for (uint32_t c = 0; c < CM_NC; c++) {
        if (k->all & BIT(c)) all[desc.all_count++] = c;
        if (k->none & BIT(c)) none[desc.none_count++] = c;
        if (k->added & BIT(c)) added[desc.added_count++] = c;
        if (k->changed & BIT(c)) changed[desc.changed_count++] = c;
    }
    desc.removed = k->removed;
    desc.removed_count = k->removed_count;
    desc.pair_changes = k->pair_changes;
    desc.pair_change_count = k->pair_change_count;
    k->query = fx_query(m->world, &desc);
    m->tick++; /* a consumer starts at its creation: the tick moves on, as at a run */
}

static void cm_check_full(cm_model_t *m) {
    tes_world_t *w = m->world;
    tes_world_stats_t stats = fx_stats(w);
    CHECK_EQ(stats.entity_count, m->live_count);
    CHECK_EQ(stats.commands_skipped, m->skipped);
    CHECK_EQ(stats.change_tick, m->tick);
    for (uint32_t i = 0; i < m->live_count; i++) {
        const cm_ent_t *e = &m->live[i];
        for (uint32_t c = 0; c < CM_NC; c++) {
            bool has = false;
            CHECK_OK(tes_has(w, e->handle, c, &has));
            if (has != cm_has(m, e, c)) {
                harness_fail(__FILE__, __LINE__, "entity %u: has(%s) = %d, model says %d",
                             (unsigned)e->handle, cm_names[c], has, !has);
            }
        }
    }
    for (uint32_t r = 0; r < 2; r++) {
        uint32_t count = 0;
        CHECK_OK(tes_relation_pairs(w, cm_rel(r), NULL, NULL, 0, &count));
        CHECK_EQ(count, m->pair_count[r]);
    }
    CHECK_OK(tes_world_validate(w));
}

static void run_sparse_relation_changes_model(uint64_t seed, const tes_world_desc_t *desc,
                                              uint32_t target_live, uint32_t tick_percent) {
    clock_t start = clock();
    cm_model_t *m = (cm_model_t *)calloc(1, sizeof *m);
    CHECK(m != NULL);
    harness_defer(cm_free, m);
    m->live = (cm_ent_t *)calloc(MAX_LIVE, sizeof *m->live);
    m->slot_of_index = (int32_t *)malloc(INDEX_CAP * sizeof *m->slot_of_index);
    m->expected = (uint8_t *)calloc(MAX_LIVE, 1);
    m->visited = (uint8_t *)calloc(MAX_LIVE, 1);
    m->dying = (uint8_t *)calloc(MAX_LIVE, 1);
    CHECK(m->live && m->slot_of_index && m->expected && m->visited && m->dying);
    for (uint32_t i = 0; i < INDEX_CAP; i++)
        m->slot_of_index[i] = -1;
    m->seed = seed;
    m->rng.state = seed;
    m->tick = 1;
    m->world = fx_world(desc);
    cm_current = m;
    harness_defer(cm_report_context, NULL);
    CHECK_EQ(fx_component(m->world, "A", cm_a_fields, 1), CM_A);
    CHECK_EQ(fx_sparse(m->world, "S", cm_s_fields, 2), CM_S);
    CHECK_EQ(fx_sparse(m->world, "M", NULL, 0), CM_M);
    CHECK_EQ(fx_relation(m->world, "L", cm_l_fields, 1, 0), CM_L);
    CHECK_EQ(fx_relation(m->world, "C", NULL, 0,
                         TES_RELATION_EXCLUSIVE | TES_RELATION_ACYCLIC | TES_RELATION_CASCADE),
             CM_C);
    cm_consumer_t *k;
    k = cm_consumer(m, "added[S]", 1);
    k->added = BIT(CM_S);
    k = cm_consumer(m, "changed[S]", 2);
    k->changed = BIT(CM_S);
    k = cm_consumer(m, "added[M] all[A]", 3);
    k->added = BIT(CM_M);
    k->all = BIT(CM_A);
    k = cm_consumer(m, "removed[S,M,L,C]", 4);
    k->removed[0] = CM_S;
    k->removed[1] = CM_M;
    k->removed[2] = CM_L;
    k->removed[3] = CM_C;
    k->removed_count = 4;
    k = cm_consumer(m, "changed[A] none[M]", 2);
    k->changed = BIT(CM_A);
    k->none = BIT(CM_M);
    k = cm_consumer(m, "added[L]", 3);
    k->added = BIT(CM_L);
    k = cm_consumer(m, "pair_changes[L,C]", 2);
    k->pair_changes[0] = CM_L;
    k->pair_changes[1] = CM_C;
    k->pair_change_count = 2;
    k = cm_consumer(m, "added[S] all[L] pair_changes[C]", 5);
    k->added = BIT(CM_S);
    k->all = BIT(CM_L);
    k->pair_changes[0] = CM_C;
    k->pair_change_count = 1;
    for (uint32_t i = 0; i < m->consumer_count; i++)
        cm_open(m, &m->consumers[i]);
    cm_check_full(m);
    for (m->step = 0; m->step < CM_STEPS; m->step++) {
        m->op = NULL;
        uint32_t r = fx_rng_below(&m->rng, 100);
        bool more = m->live_count<target_live / 2, fewer = m->live_count> target_live * 2;
        if (r < 14) {
            fewer ? cm_op_despawn(m) : cm_op_spawn(m);
        } else if (r < 24) {
            more ? cm_op_spawn(m) : cm_op_despawn(m);
        } else if (r < 40) {
            cm_op_add_remove(m);
        } else if (r < 55) {
            cm_op_write(m);
        } else {
            cm_op_pair(m);
        }
        for (uint32_t i = 0; i < m->consumer_count; i++) {
            cm_consumer_t *q = &m->consumers[i];
            if (m->step % q->rate == i % q->rate) cm_run(m, q);
        }
        if (fx_rng_chance(&m->rng, tick_percent)) {
            m->op = "tes_tick";
            CHECK_OK(tes_tick(m->world));
        }
        CHECK_EQ(fx_stats(m->world).entity_count, m->live_count);
        if (m->step % 100 == 0) cm_check_full(m);
    }
    cm_check_full(m);
    printf("  model seed %llu: %u steps, %llu runs, %llu reported, %llu removals, %llu pair "
           "events, %llu skipped, %.2f s\n",
           (unsigned long long)seed, CM_STEPS, (unsigned long long)m->runs,
           (unsigned long long)m->reported, (unsigned long long)m->removals_reported,
           (unsigned long long)m->events_reported, (unsigned long long)m->skipped,
           (double)(clock() - start) / CLOCKS_PER_SEC);
}

TEST(sparse_relation_changes_model_seed_1_default_world) {
    run_sparse_relation_changes_model(11, NULL, 60, 25);
}

TEST(sparse_relation_changes_model_seed_2_small_chunks_fast_recycling) {
    run_sparse_relation_changes_model(
        12, &(tes_world_desc_t){.chunk_bytes = 1024, .min_free_indices = 2}, 120, 50);
}

TEST(sparse_relation_changes_model_seed_3_rare_frames) {
    run_sparse_relation_changes_model(13, &(tes_world_desc_t){.chunk_bytes = 2048}, 40, 3);
}
