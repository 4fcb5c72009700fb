/*
 * The randomized change-detection model outside the chunks (test_changes_model.c is the chunk
 * model): a chunk component A, a sparse S with data, a sparse marker M, a plain relation L with
 * pair data and an exclusive, acyclic, cascade relation C. Consumers filter on S, M, A and on L
 * as a component (Added), log removals of S, M, L and C, and take pair events of L and C. The
 * model keeps per entity and component which consumers have an add or change pending, per
 * consumer its removal windows, and per consumer its pair events (ADDED / REMOVED / CHANGED,
 * changes deduplicated per pair per change tick). Runs go through tes_query_collect or by
 * hand; by-hand runs make calls inside (sparse adds and removes, despawns and spawns are
 * recorded and applied at the end, pairs with a pending endpoint too, with their initial
 * values; pair calls on placed entities apply at once), and are sometimes broken off, leaving
 * their filtered rows not handed out to the next run (issue 16, rule 5).
 * Within one call the order of its removals and pair events is free; calls stay in order.
 */
#include "model_support.h"

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
    rdiff_t d = rlist_diff_groups(want, got);
    if (d.found) {
        harness_fail(__FILE__, __LINE__, "%s: %s entries %u..%u differ from the model", m->consumer,
                     what, (unsigned)d.first, (unsigned)d.end - 1);
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
