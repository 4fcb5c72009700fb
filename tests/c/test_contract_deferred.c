/* Deferred commands, sparse components and world stats checked against tessera.h's documented
 * contract (written from the header, not the code). Each check quotes the header sentence it
 * relies on.
 *
 * Part 1: a random script of calls made while iterations are live (world A) against a mirror
 * world B that makes the calls the header says happen at once at once, and queues the recorded
 * ones and makes them directly, in order, when A's last live iteration ends. */
#include "fixtures.h"

#include <math.h>

/* ---------------------------------------------------------------------------------------- */
/* Part 1: deferred script vs direct calls                                                    */
/* ---------------------------------------------------------------------------------------- */

static const tes_field_desc_t d_a_fields[] = {{"v", TES_I32, 0}};
static const tes_field_desc_t d_b_fields[] = {{"x", TES_F32, 2}, {"k", TES_U8, 0}};
static const tes_field_desc_t d_s_fields[] = {{"v", TES_I32, 0}, {"d", TES_F64, 0}};
static const tes_field_desc_t d_r_fields[] = {{"w", TES_F64, 0}};

enum { CA, CB, CT, CS, CM, NCOMP }; /* local indices: A, B, Tag, S (sparse), M (sparse tag) */

typedef enum {
    K_SPAWN,
    K_SPAWN_BATCH,
    K_DESPAWN,
    K_DESPAWN_BATCH,
    K_ADD,
    K_REMOVE,
    K_REMOVE_REL,
    K_SET_NUM,
    K_SET,
    K_INIT_NUM,
    K_INIT,
    K_PAIR_ADD,
    K_PAIR_REMOVE,
    K_PAIR_SET,
    K_PAIR_INIT,
    K_ADD_ITEMS,
    K_REMOVE_ITEMS,
    K_SET_ITEMS,
    K_SPAWN_ITEMS,
    K_COUNT
} dkind_t;

static const char *const dkind_names[] = {
    "spawn",     "spawn_batch",  "despawn",     "despawn_batch", "add",
    "remove",    "remove_rel",   "set_number",  "set",           "init_number",
    "init",      "pair_add",     "pair_remove", "pair_set",      "pair_init",
    "add_items", "remove_items", "set_items",   "spawn_items"};

typedef struct dcmd_t {
    dkind_t kind;
    tes_entity_t e[4]; /* the call's entities (pair: e[0] source, e[1] target) */
    uint32_t n;
    tes_component_t comps[6];
    uint32_t ncomp;
    tes_component_t c;
    uint32_t field, elem;
    double num;
    unsigned char bytes[16];
    size_t size;
    tes_item_t items[4];
    uint32_t item_count;
    tes_value_t values[4];
    uint32_t value_count;
    double numbers[16];
    uint32_t number_count;
    tes_entity_t out[4]; /* spawned handles (in A) */
    bool ambiguous_skip; /* a failure at the flush may or may not be counted */
} dcmd_t;

typedef struct dent_t {
    tes_entity_t h;
    bool pending;   /* spawned during the current deferral */
    bool fut_alive; /* alive once the recorded commands apply */
    uint32_t fut;   /* components (local bits) once they apply */
    /* Components the last recorded add or remove of which, in the current deferral and after
     * the entity's last recorded despawn, adds them: a write to one it has now follows that add. */
    uint32_t readd;
} dent_t;

#define DMAX_ENT 600
#define DMAX_Q   4096

typedef struct dctx_t {
    tes_world_t *a, *b;
    tes_component_t id[NCOMP];
    tes_component_t rel;
    dent_t ent[DMAX_ENT];
    uint32_t nent;
    dcmd_t *queue; /* B's recorded commands */
    uint32_t nq;
    bool deferring;
    /* live iterations of A: slot kinds 0 free, 1 iteration, 2 defer_begin token */
    int slot_kind[4];
    tes_iter_t it[4];
    int slot_query[4];
    tes_query_t *q[4];
    uint32_t skipped_before;
    uint32_t flushes;
    uint32_t recorded, immediate;
    uint64_t seed;
} dctx_t;

static tes_result_t drun(tes_world_t *w, dcmd_t *c, tes_entity_t *out) {
    tes_items_t items = {c->items,       c->item_count, c->values,
                         c->value_count, c->numbers,    c->number_count};
    switch (c->kind) {
    case K_SPAWN:
        return tes_spawn(w, c->comps, c->ncomp, out);
    case K_SPAWN_BATCH:
        return tes_spawn_batch(w, c->comps, c->ncomp, c->n, out);
    case K_DESPAWN:
        return tes_despawn(w, c->e[0]);
    case K_DESPAWN_BATCH:
        return tes_despawn_batch(w, c->e, c->n);
    case K_ADD:
        return tes_add(w, c->e[0], c->c);
    case K_REMOVE:
    case K_REMOVE_REL:
        return tes_remove(w, c->e[0], c->c);
    case K_SET_NUM:
        return tes_set_number(w, c->e[0], c->c, c->field, c->elem, c->num);
    case K_SET:
        return tes_set(w, c->e[0], c->c, c->field, c->bytes, c->size);
    case K_INIT_NUM:
        return tes_init_number(w, c->e[0], c->c, c->field, c->elem, c->num);
    case K_INIT:
        return tes_init(w, c->e[0], c->c, c->field, c->bytes, c->size);
    case K_PAIR_ADD:
        return tes_pair_add(w, c->e[0], c->c, c->e[1]);
    case K_PAIR_REMOVE:
        return tes_pair_remove(w, c->e[0], c->c, c->e[1]);
    case K_PAIR_SET:
        return tes_pair_set_number(w, c->e[0], c->c, c->e[1], 0, 0, c->num);
    case K_PAIR_INIT:
        return tes_pair_init_number(w, c->e[0], c->c, c->e[1], 0, 0, c->num);
    case K_ADD_ITEMS:
        return tes_add_items(w, c->e, c->n, &items, NULL);
    case K_REMOVE_ITEMS:
        return tes_remove_items(w, c->e, c->n, &items, NULL);
    case K_SET_ITEMS:
        return tes_set_items(w, c->e, c->n, &items, NULL);
    case K_SPAWN_ITEMS:
        return tes_spawn_items(w, &items, c->n, out, NULL);
    default:
        break;
    }
    return TES_ERR_INVALID_ARGUMENT;
}

static dent_t *dfind(dctx_t *x, tes_entity_t h) {
    for (uint32_t i = 0; i < x->nent; i++) {
        if (x->ent[i].h == h) return &x->ent[i];
    }
    return NULL;
}

/* Placed now: alive in B (B holds what A holds now, pending entities aside). */
static bool dplaced(dctx_t *x, tes_entity_t h) {
    return tes_is_alive(x->b, h);
}
static bool dpending(dctx_t *x, tes_entity_t h) {
    dent_t *d = dfind(x, h);
    return d && d->pending && x->deferring;
}
static bool dhas_now(dctx_t *x, tes_entity_t h, tes_component_t c) {
    bool has = false;
    if (!dplaced(x, h)) return false;
    CHECK_OK(tes_has(x->b, h, c, &has));
    return has;
}
static int dlocal(dctx_t *x, tes_component_t c) {
    for (int i = 0; i < NCOMP; i++)
        if (x->id[i] == c) return i;
    return -1;
}
static bool dfut_has(dctx_t *x, tes_entity_t h, tes_component_t c) {
    dent_t *d = dfind(x, h);
    int l = dlocal(x, c);
    return d && d->fut_alive && l >= 0 && (d->fut & (1u << l));
}
static bool dreadded(dctx_t *x, tes_entity_t h, tes_component_t c) {
    dent_t *d = dfind(x, h);
    int l = dlocal(x, c);
    return d && x->deferring && l >= 0 && (d->readd & (1u << l));
}
static bool ddoomed(dctx_t *x, tes_entity_t h) {
    dent_t *d = dfind(x, h);
    return d && !d->fut_alive && (dplaced(x, h) || dpending(x, h));
}
static bool ddead(dctx_t *x, tes_entity_t h) {
    return !dplaced(x, h) && !dpending(x, h);
}

static tes_entity_t dpick(dctx_t *x, fx_rng_t *rng) {
    if (x->nent == 0) return 0;
    /* favour recent entities (pending ones and the ones still alive) */
    uint32_t i = fx_rng_chance(rng, 60) && x->nent > 16 ? x->nent - 1 - fx_rng_below(rng, 16)
                                                        : fx_rng_below(rng, x->nent);
    return x->ent[i].h;
}

static void dnew_entity(dctx_t *x, tes_entity_t h, uint32_t mask) {
    CHECK(x->nent < DMAX_ENT);
    dent_t *d = &x->ent[x->nent++];
    d->h = h;
    d->pending = x->deferring;
    d->fut_alive = true;
    d->fut = mask;
    d->readd = 0;
}

static uint32_t dmask_of(dctx_t *x, const tes_component_t *c, uint32_t n) {
    uint32_t m = 0;
    for (uint32_t i = 0; i < n; i++) {
        int l = dlocal(x, c[i]);
        if (l >= 0) m |= 1u << l;
    }
    return m;
}

/* The model's future after a call A accepted. */
static void dapply_model(dctx_t *x, dcmd_t *c) {
    switch (c->kind) {
    case K_SPAWN:
        dnew_entity(x, c->out[0], dmask_of(x, c->comps, c->ncomp));
        break;
    case K_SPAWN_BATCH:
        for (uint32_t i = 0; i < c->n; i++)
            dnew_entity(x, c->out[i], dmask_of(x, c->comps, c->ncomp));
        break;
    case K_SPAWN_ITEMS: {
        uint32_t m = 0;
        for (uint32_t i = 0; i < c->item_count; i++) {
            if (c->items[i].target == 0) m |= dmask_of(x, &c->items[i].component, 1);
        }
        for (uint32_t i = 0; i < c->n; i++)
            dnew_entity(x, c->out[i], m);
        break;
    }
    case K_DESPAWN:
    case K_DESPAWN_BATCH:
        for (uint32_t i = 0; i < (c->kind == K_DESPAWN ? 1 : c->n); i++) {
            dent_t *d = dfind(x, c->e[i]);
            if (d) d->fut_alive = false;
            if (d) d->readd = 0;
        }
        break;
    case K_ADD:
    case K_REMOVE: {
        dent_t *d = dfind(x, c->e[0]);
        int l = dlocal(x, c->c);
        if (d && l >= 0) {
            if (c->kind == K_ADD)
                d->fut |= 1u << l;
            else
                d->fut &= ~(1u << l);
            if (x->deferring && c->kind == K_ADD)
                d->readd |= 1u << l;
            else
                d->readd &= ~(1u << l);
        }
        break;
    }
    case K_ADD_ITEMS:
    case K_REMOVE_ITEMS:
        for (uint32_t i = 0; i < c->n; i++) {
            dent_t *d = dfind(x, c->e[i]);
            if (!d) continue;
            for (uint32_t k = 0; k < c->item_count; k++) {
                if (c->items[k].component == x->rel) continue;
                uint32_t m = dmask_of(x, &c->items[k].component, 1);
                if (c->kind == K_ADD_ITEMS)
                    d->fut |= m;
                else
                    d->fut &= ~m;
                if (x->deferring && c->kind == K_ADD_ITEMS)
                    d->readd |= m;
                else
                    d->readd &= ~m;
            }
        }
        break;
    default:
        break;
    }
}

/* A data component, one of its fields and element, and a value it takes (or, with `bad`, one
 * its type refuses). */
static bool dpick_field(dctx_t *x, fx_rng_t *rng, dcmd_t *c, bool bad) {
    uint32_t which = fx_rng_below(rng, 3);
    c->c = x->id[which == 0 ? CA : which == 1 ? CB : CS];
    c->field = which == 0 ? 0 : fx_rng_below(rng, 2);
    c->elem = 0;
    double v = (double)(int)fx_rng_below(rng, 200) - 50;
    if (which == 1 && c->field == 0) {
        c->elem = fx_rng_below(rng, 2);
        v = v * 0.25;
        c->size = 8;
        float f[2] = {(float)v, (float)(v + 1)};
        memcpy(c->bytes, f, 8);
        bad = false;
    } else if (which == 1) {
        v = fx_rng_below(rng, 256);
        if (bad) v = 256 + fx_rng_below(rng, 10);
        c->size = 1;
        c->bytes[0] = (unsigned char)((unsigned)v & 255u);
    } else if (which == 2 && c->field == 1) {
        v = v * 0.125;
        c->size = 8;
        memcpy(c->bytes, &v, 8);
        bad = false;
    } else {
        if (bad) v += 0.5;
        int32_t i = (int32_t)v;
        c->size = 4;
        memcpy(c->bytes, &i, 4);
    }
    c->num = v;
    return bad;
}

/* A random list of components (distinct) for a spawn. */
static void dpick_comps(dctx_t *x, fx_rng_t *rng, dcmd_t *c) {
    uint32_t mask = fx_rng_below(rng, 1u << NCOMP);
    c->ncomp = 0;
    for (int i = 0; i < NCOMP; i++)
        if (mask & (1u << i)) c->comps[c->ncomp++] = x->id[i];
    /* shuffle: "any order" */
    for (uint32_t i = c->ncomp; i > 1; i--) {
        uint32_t j = fx_rng_below(rng, i);
        tes_component_t t = c->comps[i - 1];
        c->comps[i - 1] = c->comps[j];
        c->comps[j] = t;
    }
}

/* Items: a few components, maybe a pair; values for the data ones. */
static void dpick_items(dctx_t *x, fx_rng_t *rng, dcmd_t *c, bool values, bool pairs_only,
                        uint32_t n_entities, tes_entity_t target) {
    c->item_count = 0;
    c->value_count = 0;
    c->number_count = 0;
    if (!pairs_only) {
        uint32_t mask = 1u + fx_rng_below(rng, (1u << NCOMP) - 1);
        for (int i = 0; i < NCOMP && c->item_count < 3; i++) {
            if (mask & (1u << i)) c->items[c->item_count++] = (tes_item_t){x->id[i], 0};
        }
    }
    if (target && (pairs_only || fx_rng_chance(rng, 30))) {
        c->items[c->item_count++] = (tes_item_t){x->rel, target};
    }
    if (!values) return;
    for (uint32_t k = 0; k < c->item_count && c->value_count < 3; k++) {
        tes_component_t comp = c->items[k].component;
        uint32_t len = 1, field = 0;
        if (comp == x->id[CT] || comp == x->id[CM]) continue;
        if (comp == x->id[CB]) {
            field = fx_rng_below(rng, 2);
            len = field == 0 ? 2 : 1;
        } else if (comp == x->id[CS]) {
            field = fx_rng_below(rng, 2);
        }
        bool stride = fx_rng_chance(rng, 40);
        uint32_t need = stride ? len * n_entities : len;
        if (c->number_count + need > 16) continue;
        c->values[c->value_count++] = (tes_value_t){k, field, c->number_count, stride ? len : 0};
        for (uint32_t i = 0; i < need; i++)
            c->numbers[c->number_count++] = (double)fx_rng_below(rng, 100);
    }
}

static const char *dname(tes_result_t r) {
    return tes_result_name(r);
}

/* Result sets. */
#define RBIT(r) (1u << (unsigned)(r))

static int drecord_or_run(dctx_t *x, dcmd_t *c, bool immediate, uint32_t accept) {
    tes_entity_t out[4] = {0, 0, 0, 0};
    tes_result_t ra = drun(x->a, c, out);
    memcpy(c->out, out, sizeof out);
    if (getenv("DTRACE")) {
        fprintf(stderr, "%s %-13s e %u %u %u n %u c %u f %u items %u -> %s out %u %u %u\n",
                !x->deferring ? "direct  "
                : immediate   ? "at once "
                              : "recorded",
                dkind_names[c->kind], c->e[0], c->e[1], c->e[2], c->n, c->c, c->field,
                c->item_count, dname(ra), out[0], out[1], out[2]);
    }
    if (!x->deferring || immediate) {
        tes_entity_t outb[4] = {0, 0, 0, 0};
        tes_result_t rb = drun(x->b, c, outb);
        if (ra != rb) {
            harness_fail(__FILE__, __LINE__,
                         "seed %llu: %s made at once: deferred world %s, direct world %s "
                         "(e %u %u, c %u)",
                         (unsigned long long)x->seed, dkind_names[c->kind], dname(ra), dname(rb),
                         c->e[0], c->e[1], c->c);
        }
        if (ra == TES_OK) {
            for (uint32_t i = 0; i < 4; i++)
                CHECK_EQ(out[i], outb[i]);
            dapply_model(x, c);
        }
        if (x->deferring) x->immediate++;
        return 0;
    }
    if (!(accept & RBIT(ra))) {
        harness_fail(__FILE__, __LINE__,
                     "seed %llu: %s recorded while deferring returned %s (accepted mask %#x; e "
                     "%u %u, c %u, pending %d, placed %d, doomed %d)",
                     (unsigned long long)x->seed, dkind_names[c->kind], dname(ra), accept, c->e[0],
                     c->e[1], c->c, dpending(x, c->e[0]), dplaced(x, c->e[0]), ddoomed(x, c->e[0]));
    }
    if (ra != TES_OK) return 0;
    CHECK(x->nq < DMAX_Q);
    x->queue[x->nq++] = *c;
    x->recorded++;
    dapply_model(x, c);
    return 0;
}

/* B applies its queue in order; returns the range of commands a flush skips. */
static void dflush_b(dctx_t *x, uint32_t *skip_lo, uint32_t *skip_hi) {
    *skip_lo = *skip_hi = 0;
    for (uint32_t i = 0; i < x->nq; i++) {
        dcmd_t *c = &x->queue[i];
        tes_entity_t outb[4] = {0, 0, 0, 0};
        tes_result_t rb = drun(x->b, c, outb);
        if (rb == TES_OK) {
            for (uint32_t k = 0; k < 4; k++) {
                if (c->out[k] != outb[k]) {
                    harness_fail(__FILE__, __LINE__,
                                 "seed %llu: recorded %s handed out %u, the direct call %u",
                                 (unsigned long long)x->seed, dkind_names[c->kind], c->out[k],
                                 outb[k]);
                }
            }
            continue;
        }
        /* "A command whose entity is gone by then (or that runs out of memory) is skipped and
         * counted in commands_skipped"; tes_init*: "it is skipped (commands_skipped) if the
         * entity lacks the component then". Other failures (a recorded tes_set whose component
         * went meanwhile) are not said to be counted either way. */
        bool definite =
            rb == TES_ERR_STALE_ENTITY ||
            ((c->kind == K_INIT || c->kind == K_INIT_NUM) && rb == TES_ERR_MISSING_COMPONENT);
        if (definite && !c->ambiguous_skip) (*skip_lo)++;
        (*skip_hi)++;
    }
    x->nq = 0;
}

static uint32_t dlive_count(dctx_t *x) {
    uint32_t n = 0;
    for (int i = 0; i < 4; i++)
        n += x->slot_kind[i] != 0;
    return n;
}

/* First difference between A and B, entity by entity, for the failure message. */
static void ddiff(dctx_t *x, char *msg, size_t size) {
    snprintf(msg, size, "no per-entity difference found");
    for (uint32_t i = 0; i < x->nent; i++) {
        tes_entity_t h = x->ent[i].h;
        bool la = tes_is_alive(x->a, h), lb = tes_is_alive(x->b, h);
        if (la != lb) {
            snprintf(msg, size, "entity %u alive %d vs %d", h, la, lb);
            return;
        }
        if (!la) continue;
        for (int k = 0; k < NCOMP; k++) {
            bool ha = false, hb = false;
            CHECK_OK(tes_has(x->a, h, x->id[k], &ha));
            CHECK_OK(tes_has(x->b, h, x->id[k], &hb));
            if (ha != hb) {
                snprintf(msg, size, "entity %u component %d: has %d vs %d", h, k, ha, hb);
                return;
            }
            if (!ha || k == CT || k == CM) continue;
            uint32_t fields = k == CA ? 1 : 2;
            for (uint32_t f = 0; f < fields; f++) {
                uint32_t len = (k == CB && f == 0) ? 2 : 1;
                for (uint32_t el = 0; el < len; el++) {
                    double va = 0, vb = 0;
                    CHECK_OK(tes_get_number(x->a, h, x->id[k], f, el, &va));
                    CHECK_OK(tes_get_number(x->b, h, x->id[k], f, el, &vb));
                    if (va != vb) {
                        snprintf(msg, size, "entity %u component %d field %u[%u]: %g vs %g", h, k,
                                 f, el, va, vb);
                        return;
                    }
                }
            }
        }
        tes_entity_t ta[64], tb[64];
        uint32_t na = 0, nb = 0;
        CHECK_OK(tes_pair_targets(x->a, h, x->rel, ta, 64, &na));
        CHECK_OK(tes_pair_targets(x->b, h, x->rel, tb, 64, &nb));
        if (na != nb || memcmp(ta, tb, (na < 64 ? na : 64) * sizeof ta[0]) != 0) {
            snprintf(msg, size, "entity %u pair targets differ (%u vs %u)", h, na, nb);
            return;
        }
        for (uint32_t t = 0; t < na && t < 64; t++) {
            double va = 0, vb = 0;
            CHECK_OK(tes_pair_get_number(x->a, h, x->rel, ta[t], 0, 0, &va));
            CHECK_OK(tes_pair_get_number(x->b, h, x->rel, ta[t], 0, 0, &vb));
            if (va != vb) {
                snprintf(msg, size, "entity %u pair to %u data %g vs %g", h, ta[t], va, vb);
                return;
            }
        }
        CHECK_OK(tes_pair_sources(x->a, x->rel, h, ta, 64, &na));
        CHECK_OK(tes_pair_sources(x->b, x->rel, h, tb, 64, &nb));
        if (na != nb || memcmp(ta, tb, (na < 64 ? na : 64) * sizeof ta[0]) != 0) {
            snprintf(msg, size, "entity %u pair sources differ (%u vs %u)", h, na, nb);
            return;
        }
        tes_location_t loa, lob;
        CHECK_OK(tes_location(x->a, h, &loa));
        CHECK_OK(tes_location(x->b, h, &lob));
        if (loa.chunk != lob.chunk || loa.row != lob.row) {
            snprintf(msg, size, "entity %u location chunk %u row %u vs chunk %u row %u", h,
                     loa.chunk, loa.row, lob.chunk, lob.row);
            return;
        }
    }
}

/* "tes_snapshot ... writes the same bytes" for the same state: A after its flush and B after
 * making the same calls directly. */
static void dcompare(dctx_t *x) {
    CHECK_OK(tes_world_validate(x->a));
    CHECK_OK(tes_world_validate(x->b));
    const uint8_t *pa = NULL, *pb = NULL;
    uint32_t na = 0, nb = 0;
    CHECK_OK(tes_snapshot(x->a, &pa, &na));
    CHECK_OK(tes_snapshot(x->b, &pb, &nb));
    if (na != nb || memcmp(pa, pb, na) != 0) {
        char msg[300];
        ddiff(x, msg, sizeof msg);
        uint32_t at = 16;
        while (at < na && at < nb && pa[at] == pb[at])
            at++;
        size_t len = strlen(msg);
        tes_world_stats_t s1 = fx_stats(x->a), s2 = fx_stats(x->b);
        snprintf(msg + len, sizeof msg - len,
                 "; first byte %u; entities %u/%u capacity %u/%u free %u/%u archetypes %u/%u", at,
                 s1.entity_count, s2.entity_count, s1.entity_capacity, s2.entity_capacity,
                 s1.free_queue_length, s2.free_queue_length, s1.archetype_count,
                 s2.archetype_count);
        if (getenv("DDUMP")) {
            FILE *fa = fopen("/tmp/hunt2_a.bin", "wb"), *fb = fopen("/tmp/hunt2_b.bin", "wb");
            fwrite(pa, 1, na, fa);
            fwrite(pb, 1, nb, fb);
            fclose(fa);
            fclose(fb);
        }
        harness_fail(__FILE__, __LINE__,
                     "seed %llu, flush %u: deferred world's snapshot (%u bytes) differs from the "
                     "direct world's (%u bytes): %s",
                     (unsigned long long)x->seed, x->flushes, na, nb, msg);
    }
    tes_world_stats_t sa = fx_stats(x->a), sb = fx_stats(x->b);
    CHECK_EQ(sa.entity_count, sb.entity_count);
    CHECK_EQ(sa.chunk_count, sb.chunk_count);
    CHECK_EQ(sa.free_queue_length, sb.free_queue_length);
}

/* The last live iteration of A ended: A applied its commands. */
static void dflushed(dctx_t *x) {
    x->deferring = false;
    x->flushes++;
    uint32_t lo, hi;
    dflush_b(x, &lo, &hi);
    uint32_t skipped = fx_stats(x->a).commands_skipped - x->skipped_before;
    /* "A command whose entity is gone by then ... is skipped and counted in commands_skipped" */
    if (skipped < lo || skipped > hi) {
        harness_fail(__FILE__, __LINE__,
                     "seed %llu, flush %u: commands_skipped grew by %u, expected %u..%u",
                     (unsigned long long)x->seed, x->flushes, skipped, lo, hi);
    }
    for (uint32_t i = 0; i < x->nent; i++) {
        x->ent[i].pending = false;
        x->ent[i].readd = 0;
    }
    dcompare(x);
}

static void dend_slot(dctx_t *x, int s, bool fini) {
    if (getenv("DTRACE")) fprintf(stderr, "end slot %d (%s)\n", s, fini ? "fini" : "run out");
    if (x->slot_kind[s] == 2) {
        CHECK_OK(tes_defer_end(x->a));
    } else if (fini) {
        tes_iter_fini(&x->it[s]);
    } else {
        while (tes_iter_next(&x->it[s])) {
        }
    }
    x->slot_kind[s] = 0;
    if (dlive_count(x) == 0) dflushed(x);
}

static int dbegin(dctx_t *x, fx_rng_t *rng) {
    int s = -1;
    for (int i = 0; i < 4; i++)
        if (x->slot_kind[i] == 0) s = i;
    if (s < 0) return 0;
    if (!x->deferring) {
        x->skipped_before = fx_stats(x->a).commands_skipped;
        x->nq = 0;
    }
    if (fx_rng_chance(rng, 20)) {
        CHECK_OK(tes_defer_begin(x->a));
        x->slot_kind[s] = 2;
        if (getenv("DTRACE")) fprintf(stderr, "defer_begin slot %d\n", s);
    } else {
        /* one live run per query (a consumer has at most one) */
        int qi = (int)fx_rng_below(rng, 4);
        for (int i = 0; i < 4; i++)
            if (x->slot_kind[i] == 1 && x->slot_query[i] == qi) return 0;
        CHECK_OK(tes_query_iter(x->a, x->q[qi], &x->it[s]));
        x->slot_kind[s] = 1;
        x->slot_query[s] = qi;
        if (getenv("DTRACE")) fprintf(stderr, "iter q%d slot %d\n", qi, s);
    }
    x->deferring = true;
    return 0;
}

/* One random call. */
static int dstep(dctx_t *x, fx_rng_t *rng) {
    dcmd_t c;
    memset(&c, 0, sizeof c);
    c.kind = (dkind_t)fx_rng_below(rng, K_COUNT);
    const uint32_t all = 0xFFFFFFFFu;
    tes_entity_t e = dpick(x, rng), f = dpick(x, rng);
    c.e[0] = e;
    c.e[1] = f;
    c.n = 1;
    bool def = x->deferring;
    switch (c.kind) {
    case K_SPAWN:
        dpick_comps(x, rng, &c);
        drecord_or_run(x, &c, false, RBIT(TES_OK));
        return 0;
    case K_SPAWN_BATCH:
        dpick_comps(x, rng, &c);
        c.n = 1 + fx_rng_below(rng, 3);
        drecord_or_run(x, &c, false, RBIT(TES_OK));
        return 0;
    case K_DESPAWN: {
        if (ddead(x, e)) return drecord_or_run(x, &c, true, 0);
        /* despawning a pending entity already doomed: not said */
        uint32_t acc = RBIT(TES_OK);
        if (dpending(x, e) && ddoomed(x, e)) {
            acc |= RBIT(TES_ERR_STALE_ENTITY);
            c.ambiguous_skip = true;
        }
        return drecord_or_run(x, &c, false, acc);
    }
    case K_DESPAWN_BATCH: {
        /* Several, recorded or not (the free queue's order once differed: see
         * recorded_despawn_batch_frees_slots_in_the_direct_call_s_order). */
        c.n = 1 + fx_rng_below(rng, 3);
        bool dead = false, pend = false, doomed = false;
        for (uint32_t i = 0; i < c.n; i++) {
            c.e[i] = dpick(x, rng);
            dead |= ddead(x, c.e[i]);
            pend |= dpending(x, c.e[i]);
            doomed |= ddoomed(x, c.e[i]);
        }
        bool dup = false;
        for (uint32_t i = 0; i < c.n; i++)
            for (uint32_t j = i + 1; j < c.n; j++)
                dup |= c.e[i] == c.e[j];
        if (dead || dup) {
            if (pend) return 0; /* B could not say the same about a pending one */
            return drecord_or_run(x, &c, true, 0);
        }
        if (doomed) return 0; /* how a batch with a gone entity is skipped: not said */
        return drecord_or_run(x, &c, false, RBIT(TES_OK));
    }
    case K_ADD:
    case K_REMOVE: {
        c.c = x->id[fx_rng_below(rng, NCOMP)];
        if (ddead(x, e)) return drecord_or_run(x, &c, true, 0);
        uint32_t acc = RBIT(TES_OK);
        if (dpending(x, e) && ddoomed(x, e)) acc |= RBIT(TES_ERR_STALE_ENTITY);
        return drecord_or_run(x, &c, false, acc);
    }
    case K_REMOVE_REL:
        c.c = x->rel;
        /* "tes_pair_add and tes_pair_remove (and tes_remove of a relation, which removes
         * pairs) apply at once ... except when the source or the target is pending" */
        if (!dpending(x, e)) return drecord_or_run(x, &c, true, 0);
        return drecord_or_run(x, &c, false,
                              RBIT(TES_OK) | (ddoomed(x, e) ? RBIT(TES_ERR_STALE_ENTITY) : 0));
    case K_SET_NUM:
    case K_SET:
    case K_INIT_NUM:
    case K_INIT: {
        bool bad = fx_rng_chance(rng, 8) && (c.kind == K_SET_NUM || c.kind == K_INIT_NUM);
        bad = dpick_field(x, rng, &c, bad);
        if (c.kind == K_SET || c.kind == K_INIT) bad = false;
        bool init = c.kind == K_INIT || c.kind == K_INIT_NUM;
        /* "A write to a placed entity happens at once when the entity has the component now,
         * unless the last recorded command that adds or removes it adds it" */
        if (ddead(x, e) || !def || (dhas_now(x, e, c.c) && (init || !dreadded(x, e, c.c))))
            return drecord_or_run(x, &c, true, 0);
        if (bad && !init && (dfut_has(x, e, c.c) || ddoomed(x, e)))
            return drecord_or_run(x, &c, false,
                                  RBIT(TES_ERR_BAD_VALUE) | RBIT(TES_ERR_MISSING_COMPONENT) |
                                      RBIT(TES_ERR_STALE_ENTITY));
        if (bad) {
            /* "recorded after checking the component, field and value" (tes_init*);
             * tes_set*: checked against the future components */
            return drecord_or_run(x, &c, false,
                                  RBIT(TES_ERR_BAD_VALUE) | RBIT(TES_ERR_MISSING_COMPONENT));
        }
        uint32_t acc;
        if (ddoomed(x, e)) {
            acc = RBIT(TES_OK) | RBIT(TES_ERR_STALE_ENTITY) | RBIT(TES_ERR_MISSING_COMPONENT);
            c.ambiguous_skip = true;
        } else if (init) {
            /* "a write to an entity that lacks the component now (a pending entity, or one
             * whose add is recorded too) is recorded ... skipped (commands_skipped) if the
             * entity lacks the component then" */
            /* (tes_query_iter: writes on a pending entity are "checked when recorded against
             * the components the entity will have": either answer for one that never gets it) */
            if (dfut_has(x, e, c.c))
                acc = RBIT(TES_OK);
            else
                acc = RBIT(TES_OK) | RBIT(TES_ERR_MISSING_COMPONENT);
        } else {
            /* "checked when recorded against the components the entity will have"; "when it
             * lacks it but a recorded command adds it, the write is recorded after that
             * command" */
            acc = dfut_has(x, e, c.c) ? RBIT(TES_OK) : RBIT(TES_ERR_MISSING_COMPONENT);
        }
        return drecord_or_run(x, &c, false, acc);
    }
    case K_PAIR_ADD:
    case K_PAIR_REMOVE:
    case K_PAIR_SET:
    case K_PAIR_INIT: {
        c.c = x->rel;
        c.num = (double)fx_rng_below(rng, 1000) * 0.5;
        bool dead = ddead(x, e) || ddead(x, f);
        bool pend = dpending(x, e) || dpending(x, f);
        if (dead) {
            if (pend) return 0;
            return drecord_or_run(x, &c, true, 0);
        }
        if (c.kind == K_PAIR_SET || c.kind == K_PAIR_INIT) {
            if (pend) return 0; /* writes to a recorded pair: only right after it (below) */
            if (!def || fx_pair_has(x->b, e, x->rel, f)) return drecord_or_run(x, &c, true, 0);
            return 0;
        }
        if (!pend) return drecord_or_run(x, &c, true, 0);
        if (ddoomed(x, e) || ddoomed(x, f)) return 0; /* a recorded pair to a gone end: not said */
        drecord_or_run(x, &c, false, RBIT(TES_OK));
        if (c.kind == K_PAIR_ADD && fx_rng_chance(rng, 50)) {
            /* "with tes_pair_init_number values recorded after them" */
            dcmd_t d = c;
            d.kind = K_PAIR_INIT;
            d.num = 7.5;
            drecord_or_run(x, &d, false, RBIT(TES_OK));
        }
        return 0;
    }
    case K_ADD_ITEMS:
    case K_REMOVE_ITEMS:
    case K_SET_ITEMS:
    case K_SPAWN_ITEMS: {
        bool spawn = c.kind == K_SPAWN_ITEMS, set = c.kind == K_SET_ITEMS;
        c.n = 1 + fx_rng_below(rng, 3);
        bool dead = false, pend = false, doomed = false;
        for (uint32_t i = 0; i < c.n; i++) {
            c.e[i] = dpick(x, rng);
            for (uint32_t j = 0; j < i; j++)
                if (c.e[j] == c.e[i]) c.e[i] = 0;
            if (c.e[i] == 0) {
                c.n = i;
                break;
            }
        }
        if (c.n == 0) return 0;
        if (spawn) c.e[0] = c.e[1] = c.e[2] = 0;
        for (uint32_t i = 0; !spawn && i < c.n; i++) {
            dead |= ddead(x, c.e[i]);
            pend |= dpending(x, c.e[i]);
            doomed |= ddoomed(x, c.e[i]);
        }
        tes_entity_t target = set ? 0 : dpick(x, rng);
        bool pairs_only = !set && fx_rng_chance(rng, 25);
        if (pairs_only && target == 0) return 0;
        if (target && (ddead(x, target) || ddoomed(x, target))) target = 0;
        if (pairs_only && target == 0) return 0;
        bool tpend = target && dpending(x, target);
        dpick_items(x, rng, &c, c.kind != K_REMOVE_ITEMS, pairs_only, c.n, target);
        if (c.kind == K_REMOVE_ITEMS && fx_rng_chance(rng, 20) && c.item_count < 4) {
            c.items[c.item_count++] = (tes_item_t){x->rel, 0}; /* every pair of R */
        }
        if (set) {
            /* one valued item, the entities all of one kind (see the header's two cases) */
            if (c.value_count == 0) return 0;
            c.values[0].item = c.values[0].item;
            c.value_count = 1;
            tes_component_t comp = c.items[c.values[0].item].component;
            c.items[0] = c.items[c.values[0].item];
            c.values[0].item = 0;
            c.item_count = 1;
            int now = 0, later = 0;
            for (uint32_t i = 0; i < c.n; i++) {
                if (dhas_now(x, c.e[i], comp) && !dreadded(x, c.e[i], comp))
                    now++;
                else
                    later++;
            }
            if (now && later) c.n = 1;
            if (c.values[0].stride &&
                c.number_count < c.values[0].number + c.values[0].stride * c.n)
                return 0;
            if (dead) {
                if (pend) return 0;
                return drecord_or_run(x, &c, true, 0);
            }
            if (!def || (dhas_now(x, c.e[0], comp) && !dreadded(x, c.e[0], comp)))
                return drecord_or_run(x, &c, true, 0);
            if (doomed) return 0;
            /* "a pending entity (while deferring) must be going to have it once its recorded
             * commands apply, as for tes_set" */
            bool fut = true;
            for (uint32_t i = 0; i < c.n; i++)
                fut &= dfut_has(x, c.e[i], comp);
            return drecord_or_run(x, &c, false,
                                  fut ? RBIT(TES_OK) : RBIT(TES_ERR_MISSING_COMPONENT));
        }
        if (c.item_count == 0) return 0;
        if (dead) {
            if (pend || tpend) return 0;
            return drecord_or_run(x, &c, true, 0);
        }
        if (spawn) return drecord_or_run(x, &c, false, RBIT(TES_OK));
        bool only_pairs = true;
        for (uint32_t k = 0; k < c.item_count; k++)
            only_pairs &= c.items[k].component == x->rel;
        /* "What moves no row happens at once when every entity (and pair target) is placed
         * ...: a call of pairs only" */
        if (!def || (only_pairs && !pend && !tpend)) return drecord_or_run(x, &c, true, 0);
        if (doomed) return 0; /* how a call with a gone entity among several is skipped: not said */
        /* "these calls are recorded, with their items and values, after the checks above" */
        return drecord_or_run(x, &c, false, RBIT(TES_OK));
    }
    default:
        return 0;
    }
    (void)all;
    return 0;
}

static int dcontrol(dctx_t *x, fx_rng_t *rng) {
    uint32_t live = dlive_count(x);
    uint32_t pick = fx_rng_below(rng, 10);
    if (pick < 3 && live < 4) return dbegin(x, rng);
    if (live == 0) return 0;
    int s;
    do {
        s = (int)fx_rng_below(rng, 4);
    } while (x->slot_kind[s] == 0);
    if (pick < 6 && x->slot_kind[s] == 1) {
        /* visit one more chunk; the rows of a live run were chosen when it started */
        if (!tes_iter_next(&x->it[s])) {
            if (getenv("DTRACE")) fprintf(stderr, "slot %d ran out\n", s);
            x->slot_kind[s] = 0;
            if (dlive_count(x) == 0) dflushed(x);
        } else {
            FX_CHECK_ITER_CHUNK(x->a, &x->it[s]);
        }
        return 0;
    }
    if (pick >= 8) dend_slot(x, s, fx_rng_chance(rng, 50));
    return 0;
}

static void dsetup(dctx_t *x, uint64_t seed, const tes_world_desc_t *desc) {
    memset(x, 0, sizeof *x);
    x->seed = seed;
    x->queue = (dcmd_t *)fx_malloc(sizeof(dcmd_t) * DMAX_Q);
    tes_world_t *w[2];
    for (int k = 0; k < 2; k++) {
        w[k] = fx_world(desc);
        CHECK_EQ(fx_component(w[k], "A", d_a_fields, 1), 0);
        CHECK_EQ(fx_component(w[k], "B", d_b_fields, 2), 1);
        CHECK_EQ(fx_tag(w[k], "Tag"), 2);
        CHECK_EQ(fx_sparse(w[k], "S", d_s_fields, 2), 3);
        CHECK_EQ(fx_sparse(w[k], "M", NULL, 0), 4);
        CHECK_EQ(fx_relation(w[k], "R", d_r_fields, 1, 0), 5);
        /* Every archetype the script can reach, made up front: a recorded call makes its
         * archetype when it is recorded, not when it is applied (tessera.h), so archetype ids
         * and the snapshot's archetype order follow the calls as made, not as applied. */
        for (uint32_t m = 0; m < 8; m++) {
            tes_component_t ids[3];
            uint32_t n = 0;
            for (uint32_t i = 0; i < 3; i++)
                if (m & (1u << i)) ids[n++] = i;
            tes_archetype_t at;
            CHECK_OK(tes_archetype_find(w[k], ids, n, &at));
        }
    }
    x->a = w[0];
    x->b = w[1];
    for (int i = 0; i < NCOMP; i++)
        x->id[i] = (tes_component_t)i;
    x->rel = 5;
    x->q[0] = fx_query(x->a, &(tes_query_desc_t){.all = FX_IDS(0)});
    x->q[1] = fx_query(x->a, &(tes_query_desc_t){.all = FX_IDS(3)});
    x->q[2] = fx_query(x->a, &(tes_query_desc_t){.changed = FX_IDS(0)});
    x->q[3] = fx_query(x->a, &(tes_query_desc_t){.any = FX_IDS(2, 4), .none = FX_IDS(1)});
}

static void drandom_script(uint64_t seed, const tes_world_desc_t *desc, uint32_t steps) {
    dctx_t *x = (dctx_t *)fx_malloc(sizeof *x);
    dsetup(x, seed, desc);
    fx_rng_t rng = {seed};
    /* a start both worlds make directly */
    for (uint32_t i = 0; i < 60; i++)
        dstep(x, &rng);
    dcompare(x);
    for (uint32_t i = 0; i < steps; i++) {
        if (x->nent > DMAX_ENT - 20) break;
        if (fx_rng_chance(&rng, 25))
            dcontrol(x, &rng);
        else
            dstep(x, &rng);
    }
    while (dlive_count(x)) {
        for (int s = 0; s < 4; s++)
            if (x->slot_kind[s]) dend_slot(x, s, fx_rng_chance(&rng, 50));
    }
    CHECK(x->flushes > 0);
    CHECK(x->recorded > 0);
    if (getenv("DSUM"))
        fprintf(stderr, "seed %llu: %u flushes, %u recorded, %u at once, %u skipped, %u entities\n",
                (unsigned long long)seed, x->flushes, x->recorded, x->immediate,
                fx_stats(x->a).commands_skipped, x->nent);
}

/* "While any iteration is live, structural changes ... are recorded and applied, in order,
 * when the last live iteration ends"; writes "happen at once when the entity has the component
 * now"; "A command whose entity is gone by then ... is skipped and counted in
 * commands_skipped". */
TEST(deferred_random_script_seed_1) {
    drandom_script(1, NULL, 1500);
}
TEST(deferred_random_script_seed_2) {
    drandom_script(2, NULL, 1500);
}
TEST(deferred_random_script_seed_3_small_chunks) {
    tes_world_desc_t d = {.chunk_bytes = 1024};
    drandom_script(3, &d, 1500);
}
TEST(deferred_random_script_many_seeds) {
    for (uint64_t s = 100; s < 400; s++)
        drandom_script(s, s % 2 ? NULL : &(tes_world_desc_t){.chunk_bytes = 1024}, 400);
}

/* The free queue's order, decoded from the snapshot (docs/format.md, "2. Entity table"): what
 * decides the handles later spawns get ("Slots are recycled first in, first out"). */
static uint32_t dvarint(const uint8_t *b, uint32_t *p) {
    uint32_t v = 0, shift = 0;
    for (;;) {
        uint8_t c = b[(*p)++];
        v |= (uint32_t)(c & 127u) << shift;
        shift += 7;
        if (c < 128) return v;
    }
}
static uint32_t dfree_queue(tes_world_t *w, uint32_t *out, uint32_t cap) {
    const uint8_t *b = NULL;
    uint32_t size = 0, p = 16;
    CHECK_OK(tes_snapshot(w, &b, &size));
    uint32_t count, u;
    memcpy(&count, b + p, 4);
    p += 4;
    for (uint32_t c = 0; c < count; c++) {
        p += 4; /* flags */
        memcpy(&u, b + p, 4);
        p += 4 + u; /* name */
        uint32_t fields;
        memcpy(&fields, b + p, 4);
        p += 4;
        for (uint32_t f = 0; f < fields; f++) {
            memcpy(&u, b + p, 4);
            p += 4 + u + 8;
        }
    }
    uint32_t records = dvarint(b, &p);
    for (uint32_t i = 1; i < records;) {
        uint32_t x = dvarint(b, &p);
        if ((x & 3u) != 2u) (void)dvarint(b, &p);
        i += x >> 2;
    }
    uint32_t n = dvarint(b, &p), got = 0;
    int64_t last = 0;
    while (got < n) {
        uint32_t z = dvarint(b, &p);
        int64_t step = (z & 1u) ? -(int64_t)((z + 1) >> 1) : (int64_t)(z >> 1);
        int64_t first = last + step;
        uint32_t y = dvarint(b, &p);
        uint32_t len = (y >> 1) + 1;
        int64_t d = (y & 1u) ? -1 : 1;
        for (uint32_t k = 0; k < len; k++) {
            if (got < cap) out[got] = (uint32_t)(first + d * (int64_t)k);
            got++;
        }
        last = first + d * (int64_t)(len - 1);
    }
    return n;
}

/* "While any iteration is live, structural changes (spawn, despawn, add, remove and their batch
 * forms) are recorded and applied, in order, when the last live iteration ends" — a recorded
 * tes_despawn_batch should leave the world (free queue included: "Slots are recycled first in,
 * first out", and the snapshot holds "the free queue in order") as the direct call does. */
TEST(recorded_despawn_batch_frees_slots_in_the_direct_call_s_order) {
    tes_world_t *w[2];
    uint32_t q[2][8], n[2];
    for (int mode = 0; mode < 2; mode++) {
        w[mode] = fx_world(NULL);
        tes_component_t a = fx_component(w[mode], "A", d_a_fields, 1);
        tes_entity_t e[4];
        CHECK_OK(tes_spawn_batch(w[mode], &a, 1, 4, e));
        tes_entity_t list[3] = {e[1], e[3], e[0]};
        if (mode == 1) {
            tes_query_t *query = fx_query(w[mode], &(tes_query_desc_t){.all = FX_IDS(a)});
            tes_iter_t it;
            CHECK_OK(tes_query_iter(w[mode], query, &it));
            CHECK_OK(tes_despawn_batch(w[mode], list, 3));
            tes_iter_fini(&it);
        } else {
            CHECK_OK(tes_despawn_batch(w[mode], list, 3));
        }
        CHECK_OK(tes_world_validate(w[mode]));
        n[mode] = dfree_queue(w[mode], q[mode], 8);
    }
    CHECK_EQ(n[0], 3);
    CHECK_EQ(n[1], 3);
    for (int i = 0; i < 3; i++) {
        if (q[0][i] != q[1][i]) {
            harness_fail(__FILE__, __LINE__,
                         "free queue direct [%u %u %u], recorded [%u %u %u] (list 2 4 1)", q[0][0],
                         q[0][1], q[0][2], q[1][0], q[1][1], q[1][2]);
        }
    }
}

/* One more seed (or the one in $DSEED, to reproduce a failure of the many-seeds case). */
TEST(deferred_random_script_one_seed) {
    const char *env = getenv("DSEED");
    uint64_t s = env ? strtoull(env, NULL, 10) : 7;
    drandom_script(s, s % 2 ? NULL : &(tes_world_desc_t){.chunk_bytes = 1024}, 400);
}

/* ---------------------------------------------------------------------------------------- */
/* Part 2: sparse components with values: queries, filters, removals, snapshots, deltas      */
/* ---------------------------------------------------------------------------------------- */

#define SP_MAX 300

typedef struct sp_model_t {
    tes_entity_t h[SP_MAX];
    bool alive[SP_MAX], has_a[SP_MAX], has_s[SP_MAX], has_m[SP_MAX];
    int32_t v[SP_MAX];
    bool added[SP_MAX], changed[SP_MAX]; /* since the consumers' last run */
    tes_entity_t removed[4 * SP_MAX];
    uint32_t removed_n;
    uint32_t n;
} sp_model_t;

static int sp_cmp(const void *a, const void *b) {
    tes_entity_t x = *(const tes_entity_t *)a, y = *(const tes_entity_t *)b;
    return x < y ? -1 : x > y;
}

static void sp_check_run(tes_world_t *w, tes_query_t *q, sp_model_t *m, int kind, uint64_t seed,
                         uint32_t step) {
    tes_collect_t col;
    CHECK_OK(tes_query_collect(w, q, &col));
    tes_entity_t exp[4 * SP_MAX];
    uint32_t n = 0;
    if (kind == 2) {
        memcpy(exp, m->removed, m->removed_n * sizeof exp[0]);
        n = m->removed_n;
    } else {
        for (uint32_t i = 0; i < m->n; i++) {
            if (m->alive[i] && m->has_s[i] && (kind == 0 ? m->added[i] : m->changed[i]))
                exp[n++] = m->h[i];
        }
    }
    const tes_entity_t *got = kind == 2 ? col.removed : col.entities;
    uint32_t got_n = kind == 2 ? col.removed_total : col.count;
    tes_entity_t sorted[4 * SP_MAX];
    if (got_n > 4 * SP_MAX) got_n = 4 * SP_MAX;
    if (got_n) memcpy(sorted, got, got_n * sizeof sorted[0]);
    if (kind == 2) {
        /* "oldest first" */
        for (uint32_t i = 0; i < n && i < got_n; i++) {
            if (sorted[i] != exp[i])
                harness_fail(__FILE__, __LINE__,
                             "seed %llu step %u: removed[%u] = %u, expected %u (of %u / %u)",
                             (unsigned long long)seed, step, i, sorted[i], exp[i], got_n, n);
        }
    } else {
        qsort(sorted, got_n, sizeof sorted[0], sp_cmp);
        qsort(exp, n, sizeof exp[0], sp_cmp);
    }
    if (got_n != n || memcmp(sorted, exp, n * sizeof exp[0]) != 0) {
        harness_fail(
            __FILE__, __LINE__,
            "seed %llu step %u: %s consumer reported %u entities, expected %u (first %u vs "
            "%u)",
            (unsigned long long)seed, step,
            kind == 0   ? "added"
            : kind == 1 ? "changed"
                        : "removed",
            got_n, n, got_n ? sorted[0] : 0, n ? exp[0] : 0);
    }
}

/* Every modelled entity alive as the model says, with its sparse members and values. */
static void sp_check_members(const tes_world_t *w, const sp_model_t *m, tes_component_t s,
                             tes_component_t mk) {
    for (uint32_t k = 0; k < m->n; k++) {
        CHECK_EQ(tes_is_alive(w, m->h[k]), m->alive[k]);
        if (!m->alive[k]) continue;
        CHECK_EQ(fx_has(w, m->h[k], s), m->has_s[k]);
        CHECK_EQ(fx_has(w, m->h[k], mk), m->has_m[k]);
        if (m->has_s[k]) CHECK_NUM_EQ(fx_get_number(w, m->h[k], s, 0, 0), m->v[k]);
    }
}

/* "spawning or adding a component stamps its added tick; tes_set, tes_set_number ... stamp its
 * changed tick"; "A component it gains ... counts as added at that tick, changed 0"; "(entity,
 * tick) for every removal of the component, despawns included"; tes_init*: "not a change";
 * "Adding one the entity already has does nothing". And plain queries with sparse all / none /
 * any terms "visit ... the rows that pass", across archetype moves of the entities. */

static void sp_model_run(uint64_t seed, uint32_t steps, const tes_world_desc_t *desc) {
    sp_model_t *m = (sp_model_t *)fx_malloc(sizeof *m);
    tes_world_t *w = fx_world(desc);
    tes_component_t a = fx_component(w, "A", d_a_fields, 1);
    tes_component_t tag = fx_tag(w, "T");
    tes_component_t s = fx_sparse(w, "S", d_s_fields, 2);
    tes_component_t mk = fx_sparse(w, "M", NULL, 0);
    tes_query_t *qadd = fx_query(w, &(tes_query_desc_t){.added = FX_IDS(s)});
    tes_query_t *qchg = fx_query(w, &(tes_query_desc_t){.changed = FX_IDS(s)});
    tes_query_t *qrem = fx_query(w, &(tes_query_desc_t){.removed = FX_IDS(s)});
    fx_rng_t rng = {seed};
    for (uint32_t step = 0; step < steps; step++) {
        uint32_t op = fx_rng_below(&rng, 12);
        uint32_t i = m->n ? fx_rng_below(&rng, m->n) : 0;
        if (op < 2 || m->n == 0) {
            if (m->n == SP_MAX) continue;
            tes_component_t ids[4];
            uint32_t k = 0;
            bool ha = fx_rng_chance(&rng, 50), hs = fx_rng_chance(&rng, 50),
                 hm = fx_rng_chance(&rng, 30);
            if (hs) ids[k++] = s;
            if (ha) ids[k++] = a;
            if (hm) ids[k++] = mk;
            if (fx_rng_chance(&rng, 30)) ids[k++] = tag;
            uint32_t j = m->n++;
            CHECK_OK(tes_spawn(w, ids, k, &m->h[j]));
            m->alive[j] = true;
            m->has_a[j] = ha;
            m->has_s[j] = hs;
            m->has_m[j] = hm;
            m->v[j] = 0;
            m->added[j] = hs;
            m->changed[j] = false;
            if (hs && fx_rng_chance(&rng, 50)) {
                int32_t v = (int32_t)fx_rng_below(&rng, 1000);
                CHECK_OK(tes_init_number(w, m->h[j], s, 0, 0, v));
                m->v[j] = v;
            }
            continue;
        }
        if (!m->alive[i]) continue;
        tes_entity_t e = m->h[i];
        if (op == 2) {
            CHECK_OK(tes_despawn(w, e));
            m->alive[i] = false;
            if (m->has_s[i]) m->removed[m->removed_n++] = e;
        } else if (op == 3) {
            CHECK_OK(tes_add(w, e, s));
            if (!m->has_s[i]) {
                m->has_s[i] = true;
                m->v[i] = 0;
                m->added[i] = true;
                m->changed[i] = false;
            }
        } else if (op == 4) {
            CHECK_OK(tes_remove(w, e, s));
            if (m->has_s[i]) {
                m->has_s[i] = false;
                m->removed[m->removed_n++] = e;
            }
        } else if (op == 5 || op == 6) {
            int32_t v = (int32_t)fx_rng_below(&rng, 1000);
            tes_result_t r = tes_set_number(w, e, s, 0, 0, v);
            if (m->has_s[i]) {
                CHECK_OK(r);
                m->v[i] = v;
                m->changed[i] = true;
            } else {
                CHECK_ERR(r, TES_ERR_MISSING_COMPONENT);
            }
        } else if (op == 7) {
            /* moves the row to another archetype; the sparse value stays */
            if (m->has_a[i])
                CHECK_OK(tes_remove(w, e, a));
            else
                CHECK_OK(tes_add(w, e, a));
            m->has_a[i] = !m->has_a[i];
        } else if (op == 8) {
            if (m->has_m[i])
                CHECK_OK(tes_remove(w, e, mk));
            else
                CHECK_OK(tes_add(w, e, mk));
            m->has_m[i] = !m->has_m[i];
        } else if (op == 9) {
            CHECK_OK(fx_rng_chance(&rng, 50) ? tes_add(w, e, tag) : tes_remove(w, e, tag));
        } else if (op == 10 && m->has_s[i]) {
            /* add_items of an item the entity has: "its values are written as a change" */
            tes_item_t it[] = {{s, 0}};
            double num = fx_rng_below(&rng, 1000);
            tes_value_t val[] = {{0, 0, 0, 0}};
            tes_items_t items = {it, 1, val, 1, &num, 1};
            CHECK_OK(tes_add_items(w, &e, 1, &items, NULL));
            m->v[i] = (int32_t)num;
            m->changed[i] = true;
        } else if (op == 11) {
            /* a run of a consumer, then check every value through the API */
            int which = (int)fx_rng_below(&rng, 3);
            sp_check_run(w, which == 0 ? qadd : which == 1 ? qchg : qrem, m, which, seed, step);
            for (uint32_t k = 0; k < m->n; k++) {
                if (which == 0) m->added[k] = false;
                if (which == 1) m->changed[k] = false;
            }
            if (which == 2) m->removed_n = 0;
            /* plain queries with random terms over A, S, M */
            tes_component_t pool[3] = {a, s, mk};
            fx_term_masks_t t = fx_random_terms(&rng, 3, 4);
            tes_component_t al[3], no[3], an[3];
            uint32_t na = 0, nn = 0, ny = 0;
            for (uint32_t k = 0; k < 3; k++) {
                if (t.all & (1u << k)) al[na++] = pool[k];
                if (t.none & (1u << k)) no[nn++] = pool[k];
                if (t.any & (1u << k)) an[ny++] = pool[k];
            }
            tes_query_desc_t qd = {al, na, no, nn, an, ny};
            tes_query_t *q = fx_query(w, &qd);
            fx_entities_t *got = fx_run(w, q);
            fx_entities_t *exp = fx_entities_new();
            for (uint32_t k = 0; k < m->n; k++) {
                if (!m->alive[k]) continue;
                bool hv[3] = {m->has_a[k], m->has_s[k], m->has_m[k]};
                bool ok = true, any = ny == 0;
                for (uint32_t c = 0; c < 3; c++) {
                    if ((t.all & (1u << c)) && !hv[c]) ok = false;
                    if ((t.none & (1u << c)) && hv[c]) ok = false;
                    if ((t.any & (1u << c)) && hv[c]) any = true;
                }
                if (ok && any) fx_entities_push(exp, m->h[k]);
            }
            FX_CHECK_SAME_ENTITIES(got, exp->items, exp->count);
            tes_query_destroy(w, q);
        }
    }
    /* values and membership, then a snapshot round trip that keeps them */
    sp_check_members(w, m, s, mk);
    CHECK_OK(tes_world_validate(w));
    const uint8_t *bytes = NULL;
    uint32_t size = 0;
    CHECK_OK(tes_snapshot(w, &bytes, &size));
    tes_world_t *r = NULL;
    CHECK_OK(tes_world_restore(NULL, bytes, size, &r));
    harness_defer(fx_destroy_world, r);
    sp_check_members(r, m, s, mk);
}

TEST(sparse_values_filters_and_terms_follow_a_model_seed_1) {
    sp_model_run(11, 3000, NULL);
}
TEST(sparse_values_filters_and_terms_follow_a_model_small_chunks) {
    for (uint64_t seed = 20; seed < 40; seed++)
        sp_model_run(seed, 1500, &(tes_world_desc_t){.chunk_bytes = 1024});
}

/* Deltas: "Applying it to a replica ... gives the source's state at the delta's tick", sparse
 * members and values included, across moves of their entities between archetypes. */
TEST(sparse_values_replicate_through_deltas_across_moves) {
    for (uint64_t seed = 1; seed <= 12; seed++) {
        fx_mixed_t src = fx_mixed(NULL, false);
        fx_mixed_t dst = fx_mixed(NULL, false);
        tes_replicator_t *rep = NULL;
        CHECK_OK(tes_replicator_create(src.world, &(tes_replicator_desc_t){0}, &rep));
        fx_rng_t rng = {seed};
        fx_live_t *live = (fx_live_t *)fx_malloc(sizeof *live);
        uint64_t ack = 0;
        for (uint32_t round = 0; round < 30; round++) {
            fx_mixed_changes(&src, &rng, live, 20, round * 20);
            const uint8_t *bytes = NULL;
            uint32_t size = 0;
            uint64_t tick = 0;
            CHECK_OK(
                tes_delta_encode(rep, fx_rng_chance(&rng, 20) ? 0 : ack, &bytes, &size, &tick));
            bool applied = false;
            CHECK_OK(tes_delta_apply(dst.world, bytes, size, &applied));
            ack = tick;
            CHECK_OK(tes_world_validate(dst.world));
            CHECK_EQ(fx_stats(dst.world).entity_count, fx_stats(src.world).entity_count);
            for (uint32_t i = 0; i < live->n; i++) {
                tes_entity_t e = live->e[i];
                CHECK(tes_is_alive(dst.world, e));
                const tes_component_t sp[2] = {src.sparse, src.marker};
                for (int k = 0; k < 2; k++) {
                    bool hs = fx_has(src.world, e, sp[k]), hd = fx_has(dst.world, e, sp[k]);
                    if (hs != hd)
                        harness_fail(__FILE__, __LINE__,
                                     "seed %llu round %u: entity %u sparse %d: %d vs replica %d",
                                     (unsigned long long)seed, round, e, k, hs, hd);
                }
                if (fx_has(src.world, e, src.sparse)) {
                    CHECK_NUM_EQ(fx_get_number(dst.world, e, src.sparse, 0, 0),
                                 fx_get_number(src.world, e, src.sparse, 0, 0));
                    CHECK_NUM_EQ(fx_get_number(dst.world, e, src.sparse, 1, 0),
                                 fx_get_number(src.world, e, src.sparse, 1, 0));
                }
            }
        }
    }
}

/* ---------------------------------------------------------------------------------------- */
/* Part 3: tes_world_stats after random histories                                             */
/* ---------------------------------------------------------------------------------------- */

/* "bytes_allocated: everything the world holds from its allocator right now"; "entity_count:
 * live entities"; "archetype_count: existing ones, the empty archetype included"; "chunk_count:
 * chunks holding entities"; archetype_info: "every chunk but the last is full". */
static void st_check(tes_world_t *w, const fx_alloc_t *al, const fx_live_t *live, uint64_t seed,
                     uint32_t round) {
    tes_world_stats_t st = fx_stats(w);
    if (st.bytes_allocated != al->live_bytes)
        harness_fail(__FILE__, __LINE__,
                     "seed %llu round %u: bytes_allocated %llu, the allocator holds %llu for it",
                     (unsigned long long)seed, round, (unsigned long long)st.bytes_allocated,
                     (unsigned long long)al->live_bytes);
    CHECK_EQ(st.entity_count, live->n);
    uint32_t exist = 0, chunks = 0, entities = 0;
    for (tes_archetype_t at = 0; at < tes_archetype_count(w); at++) {
        tes_archetype_info_t info;
        tes_result_t r = tes_archetype_info(w, at, &info);
        if (r == TES_ERR_UNKNOWN_ARCHETYPE) continue;
        CHECK_OK(r);
        exist++;
        chunks += info.chunk_count;
        entities += info.entity_count;
        CHECK_EQ(info.chunk_count, (info.entity_count + info.capacity - 1) / info.capacity);
    }
    CHECK_EQ(st.archetype_count, exist);
    CHECK_EQ(st.chunk_count, chunks);
    CHECK_EQ(entities, live->n);
}

static void st_history(uint64_t seed, bool small) {
    fx_alloc_t *al = fx_alloc_new();
    tes_world_desc_t desc = {.allocator = fx_allocator(al), .chunk_bytes = small ? 1024 : 0};
    fx_mixed_t w = fx_mixed(&desc, true);
    fx_rng_t rng = {seed};
    fx_live_t *live = (fx_live_t *)fx_malloc(sizeof *live);
    tes_query_t *cons = fx_query(
        w.world, &(tes_query_desc_t){.changed = FX_IDS(w.body), .removed = FX_IDS(w.sparse)});
    tes_replicator_t *rep = NULL;
    uint64_t ack = 0;
    for (uint32_t round = 0; round < 40; round++) {
        fx_mixed_changes(&w, &rng, live, 25, round * 25);
        st_check(w.world, al, live, seed, round);
        uint32_t what = fx_rng_below(&rng, 8);
        if (what == 0) {
            const uint8_t *b;
            uint32_t n;
            CHECK_OK(tes_snapshot(w.world, &b, &n));
        } else if (what == 1) {
            tes_collect_t col;
            CHECK_OK(tes_query_collect(w.world, cons, &col));
        } else if (what == 2) {
            if (!rep) CHECK_OK(tes_replicator_create(w.world, &(tes_replicator_desc_t){0}, &rep));
            const uint8_t *b;
            uint32_t n;
            CHECK_OK(tes_delta_encode(rep, ack, &b, &n, &ack));
        } else if (what == 3) {
            uint32_t cp;
            CHECK_OK(tes_checkpoint(w.world, &cp));
        } else if (what == 4) {
            CHECK_OK(tes_tick(w.world));
        } else if (what == 5) {
            uint32_t freed = 0;
            CHECK_OK(tes_archetypes_reclaim(w.world, &freed));
        } else if (what == 6) {
            /* a deferred stretch */
            tes_iter_t it;
            tes_query_t *q = fx_query(w.world, &(tes_query_desc_t){.all = FX_IDS(w.body)});
            CHECK_OK(tes_query_iter(w.world, q, &it));
            tes_entity_t p = 0;
            CHECK_OK(tes_spawn(w.world, FX_IDS(w.body, w.sparse), &p));
            if (live->n) CHECK_OK(tes_despawn(w.world, live->e[live->n - 1]));
            if (live->n) CHECK_OK(tes_despawn(w.world, live->e[live->n - 1])); /* skipped */
            uint32_t before = fx_stats(w.world).commands_skipped;
            tes_iter_fini(&it);
            CHECK_EQ(fx_stats(w.world).commands_skipped, before + (live->n ? 1 : 0));
            if (live->n) live->n--;
            live->e[live->n++] = p;
            tes_query_destroy(w.world, q);
        } else {
            tes_query_t *q = fx_query(w.world, &(tes_query_desc_t){.any = FX_IDS(w.sparse, w.tag)});
            fx_run_count(w.world, q);
            tes_query_destroy(w.world, q);
        }
        st_check(w.world, al, live, seed, round);
        CHECK_OK(tes_world_validate(w.world));
    }
    if (rep) tes_replicator_destroy(rep);
    fx_world_destroy_now(w.world);
    FX_CHECK_ALLOC_CLEAN(al);
}

TEST(world_stats_match_the_allocator_and_archetypes_after_random_histories) {
    for (uint64_t seed = 1; seed <= 16; seed++)
        st_history(seed, seed % 2 == 0);
}
