/* A delta's head, checked (magic, version, size, checksum, ticks, schema CRC, the replicated
 * components, and a keyframe's schemas and quantized fields), and a keyframe's components mapped
 * to the replica's own: the part of applying a delta that is about its components, not its
 * entities (replica.c). */
#include "replica.h"

/* One allocation: the delta_t, then `count` of comps, listed and local, then a pattern. */
static size_t delta_bytes(uint32_t count) {
    return sizeof(delta_t) +
           count * (sizeof(replicated_t) + sizeof(listed_t) + sizeof(tes_component_t)) +
           tesi_pattern_bytes(count);
}

static delta_t *delta_alloc(tes_world_t *world, uint32_t count) {
    delta_t *d = tesi_alloc(world, delta_bytes(count));
    if (!d) return NULL;
    memset(d, 0, delta_bytes(count));
    d->count = count;
    d->comps = (replicated_t *)(void *)(d + 1);
    d->listed = (listed_t *)(void *)(d->comps + count);
    d->local = (tes_component_t *)(void *)(d->listed + count);
    d->pattern = (uint8_t *)(d->local + count);
    return d;
}

void tesi_delta_free(tes_world_t *world, delta_t *d) {
    if (!d) return;
    tesi_free(world, d->gone, (size_t)d->gone_count * sizeof *d->gone + 1);
    tesi_free(world, d->quanta, (size_t)d->quantum_count * sizeof *d->quanta + 1);
    tesi_free(world, d, delta_bytes(d->count));
}

/* A keyframe's quantized fields, after the schemas (`schema` is scratch): ascending by (place,
 * field), each a replicated component's f32 or f64 field (not a relation's) with a step finite
 * and above 0. */
static void read_quanta(tesi_reader_t *r, tes_world_t *world, delta_t *d, tesi_schema_t *schema) {
    uint32_t count = tesi_get_varint(r);
    /* 10 bytes each at least: a count the bytes cannot hold is refused before it sizes anything. */
    if (count > (r->size - r->at) / 10) tesi_fail(r, TES_ERR_BAD_DELTA);
    if (r->result != TES_OK) return;
    d->quanta = tesi_alloc(world, (size_t)count * sizeof *d->quanta + 1);
    if (!d->quanta) {
        tesi_fail(r, TES_ERR_OUT_OF_MEMORY);
        return;
    }
    d->quantum_count = count;
    uint32_t place = 0, field = 0;
    for (uint32_t i = 0; i < count && r->result == TES_OK; i++) {
        uint32_t at = tesi_get_varint(r), f = tesi_get_varint(r);
        double step;
        tesi_take(r, &step, sizeof step);
        bool ascending = !i || at > place || (at == place && f > field);
        replicated_t *c = &d->comps[at < d->count ? at : 0];
        if (r->result != TES_OK || !ascending || at >= d->count || f >= c->field_count ||
            (c->flags & TES_COMPONENT_RELATION) || !isfinite(step) || !(step > 0)) {
            tesi_fail(r, TES_ERR_BAD_DELTA);
            break;
        }
        tesi_reader_t s = {r->bytes, r->size, c->schema_at, TES_OK, TES_ERR_BAD_DELTA};
        tesi_get_schema(&s, schema); /* (read whole before: its types are valid) */
        uint32_t offset = 0;
        for (uint32_t k = 0; k < f; k++)
            offset += tes_type_size(schema->fields[k].type) * schema->fields[k].length;
        tes_type_t type = schema->fields[f].type;
        if (type != TES_F32 && type != TES_F64) {
            tesi_fail(r, TES_ERR_BAD_DELTA);
            break;
        }
        d->quanta[i] = (tesi_quantum_t){
            c->source, f, offset, tes_type_size(type), schema->fields[f].length, step};
        if (!c->quantum_count) c->quanta = &d->quanta[i];
        c->quantum_count++;
        place = at;
        field = f;
    }
}

/* A keyframe's component schemas: each matched by name to the replica's component (which must
 * have the same schema), or to be registered; then its quantized fields. */
static void read_schemas(tesi_reader_t *r, tes_world_t *world, delta_t *d) {
    tesi_schema_t *schema = tesi_alloc(world, sizeof *schema);
    if (!schema) {
        tesi_fail(r, TES_ERR_OUT_OF_MEMORY);
        return;
    }
    uint32_t missing = 0;
    for (uint32_t i = 0; i < d->count && r->result == TES_OK; i++) {
        replicated_t *c = &d->comps[i];
        c->schema_at = r->at;
        tesi_get_schema(r, schema);
        if (r->result != TES_OK) break;
        const tes_component_desc_t *desc = &schema->desc;
        c->flags = desc->flags;
        c->field_count = desc->field_count;
        for (uint32_t f = 0; f < desc->field_count; f++)
            c->row_bytes += tes_type_size(desc->fields[f].type) * desc->fields[f].length;
        c->name = r->bytes + c->schema_at + 8;
        c->name_length = (uint32_t)strlen(desc->name);
        /* What registration would refuse is a bad delta: applying registers the missing ones
         * before anything else, and must not fail then for a reason the bytes show. */
        if (tesi_check_schema(desc) != TES_OK || (c->flags & TES_COMPONENT_LOCAL)) {
            tesi_fail(r, TES_ERR_BAD_DELTA);
            break;
        }
        c->local = UINT32_MAX;
        if (tes_component_lookup(world, desc->name, &c->local) == TES_OK) {
            if (!tesi_schema_equal(&world->components[c->local], desc)) {
                tesi_fail(r, TES_ERR_DELTA_SCHEMA);
            }
        } else if (++missing + world->component_count > TES_MAX_COMPONENTS) {
            tesi_fail(r, TES_ERR_DELTA_SCHEMA);
        }
        for (uint32_t j = 0; j < i && r->result == TES_OK; j++) {
            /* Two components of one name: not what a world writes. */
            if (d->comps[j].name_length == c->name_length &&
                !memcmp(d->comps[j].name, c->name, c->name_length)) {
                tesi_fail(r, TES_ERR_BAD_DELTA);
            }
        }
    }
    if (r->result == TES_OK) read_quanta(r, world, d, schema);
    tesi_free(world, schema, sizeof *schema);
}

/* The header and the components; the replica's tick decides DELTA_BASELINE first. */
delta_t *tesi_read_head(tesi_reader_t *r, tes_world_t *world) {
    uint32_t header[3];
    tesi_take(r, header, sizeof header);
    if (r->result != TES_OK || header[0] != DELTA_MAGIC) {
        tesi_fail(r, TES_ERR_BAD_DELTA);
        return NULL;
    }
    if ((header[1] & 0xFFFFu) != DELTA_VERSION) {
        tesi_fail(r, TES_ERR_SNAPSHOT_VERSION);
        return NULL;
    }
    uint32_t flags = header[1] >> 16;
    if ((flags & ~(KEYFRAME | EMPTY)) || (flags & KEYFRAME && flags & EMPTY) ||
        header[2] != tesi_crc32(r->bytes + HEADER_BYTES, r->size - HEADER_BYTES)) {
        tesi_fail(r, TES_ERR_BAD_DELTA);
        return NULL;
    }
    bool keyframe = flags & KEYFRAME;
    uint64_t to = tesi_get_varint64(r), span = tesi_get_varint64(r);
    uint64_t from = to - span;
    /* A keyframe lists its components; a delta has those the replica mapped (checked by CRC). */
    uint32_t schema_crc = tesi_get_u32(r), source = tesi_get_u32(r);
    uint32_t count = keyframe ? tesi_get_varint(r) : 0;
    for (uint32_t k = 0; !keyframe && k < world->replica_id_count; k++)
        count += world->replica_ids[k] != UINT32_MAX;
    if (to == 0 || span > to || (keyframe ? from != 0 : span == 0) || count > TES_MAX_COMPONENTS ||
        source == 0) {
        tesi_fail(r, TES_ERR_BAD_DELTA);
    }
    /* A delta of another source than the keyframe's: its baseline is a tick of that source,
     * which the replica never held, whatever the numbers say. */
    if (r->result == TES_OK && !keyframe &&
        (from > world->replica_tick || source != world->replica_source)) {
        tesi_fail(r, TES_ERR_DELTA_BASELINE);
    }
    const uint8_t *ids = r->bytes + r->at;
    if (r->result != TES_OK) return NULL;
    delta_t *d = delta_alloc(world, count);
    if (!d) {
        tesi_fail(r, TES_ERR_OUT_OF_MEMORY);
        return NULL;
    }
    d->from = from;
    d->to = to;
    d->keyframe = keyframe;
    d->empty = flags & EMPTY;
    d->schema_crc = schema_crc;
    d->source = source;
    for (uint32_t k = 0, i = 0; !keyframe && k < world->replica_id_count; k++) {
        if (world->replica_ids[k] == UINT32_MAX) continue;
        d->comps[i].source = k;
        d->position[k] = (uint16_t)(++i);
    }
    for (uint32_t i = 0; keyframe && i < count && r->result == TES_OK; i++) {
        uint32_t gap = tesi_get_varint(r);
        uint64_t id = (i ? (uint64_t)d->comps[i - 1].source : 0) + gap;
        if (r->result != TES_OK || id >= TES_MAX_COMPONENTS || (i && !gap)) {
            tesi_fail(r, TES_ERR_BAD_DELTA);
            break;
        }
        d->comps[i].source = (tes_component_t)id;
        d->position[id] = (uint16_t)(i + 1);
    }
    if (r->result == TES_OK && keyframe) {
        read_schemas(r, world, d);
        uint32_t crc = tesi_crc32(ids, r->at - (uint32_t)(ids - r->bytes));
        if (r->result == TES_OK && crc != schema_crc) tesi_fail(r, TES_ERR_BAD_DELTA);
    } else if (r->result == TES_OK && to <= world->replica_tick) {
        /* Late (or repeated): it changes nothing, whatever schema it was encoded with (a
         * keyframe with new components may have overtaken it). */
        d->late = true;
    } else if (r->result == TES_OK) {
        /* The components the last keyframe mapped, unchanged since. */
        if (schema_crc != world->replica_schema) tesi_fail(r, TES_ERR_DELTA_SCHEMA);
        tesi_quantum_t *quantum = world->replica_quanta;
        tesi_quantum_t *quantum_end = quantum ? quantum + world->replica_quantum_count : NULL;
        for (uint32_t i = 0; i < count && r->result == TES_OK; i++) {
            replicated_t *c = &d->comps[i];
            /* Both by source id: its quanta are the next ones. */
            while (quantum < quantum_end && quantum->component < c->source)
                quantum++;
            c->quanta = quantum;
            while (quantum < quantum_end && quantum->component == c->source)
                c->quantum_count++, quantum++;
            c->local =
                c->source < world->replica_id_count ? world->replica_ids[c->source] : UINT32_MAX;
            if (c->local == UINT32_MAX) {
                tesi_fail(r, TES_ERR_DELTA_SCHEMA);
                break;
            }
            const tesi_component_t *local = &world->components[c->local];
            c->flags = local->flags;
            c->field_count = local->field_count;
            c->row_bytes = local->row_bytes;
        }
    }
    d->body = r->at;
    if (r->result == TES_OK) return d;
    tesi_delta_free(world, d);
    return NULL;
}

/* A keyframe registers the components the replica lacks and remembers the mapping. */
tes_result_t tesi_map_components(tes_world_t *world, delta_t *d, const uint8_t *bytes,
                                 uint32_t size) {
    uint32_t slots = d->count ? d->comps[d->count - 1].source + 1 : 0;
    uint32_t *ids = slots ? tesi_alloc(world, slots * sizeof *ids) : NULL;
    tesi_schema_t *schema = tesi_alloc(world, sizeof *schema);
    tes_result_t result = (slots && !ids) || !schema ? TES_ERR_OUT_OF_MEMORY : TES_OK;
    for (uint32_t i = 0; i < d->count && result == TES_OK; i++) {
        replicated_t *c = &d->comps[i];
        if (c->local != UINT32_MAX) continue;
        tesi_reader_t r = {bytes, size, c->schema_at, TES_OK, TES_ERR_BAD_DELTA};
        tesi_get_schema(&r, schema);
        result = tes_component_register(world, &schema->desc, &c->local);
    }
    if (result == TES_OK) {
        for (uint32_t k = 0; k < slots; k++)
            ids[k] = d->position[k] ? d->comps[d->position[k] - 1].local : UINT32_MAX;
        tesi_free(world, world->replica_ids, world->replica_id_count * sizeof *ids);
        world->replica_ids = ids;
        world->replica_id_count = slots;
        world->replica_schema = d->schema_crc;
        ids = NULL;
        /* The steps stay for the deltas that follow (the components point at them already). */
        tesi_free(world, world->replica_quanta,
                  (size_t)world->replica_quantum_count * sizeof *d->quanta + 1);
        world->replica_quanta = d->quanta;
        world->replica_quantum_count = d->quantum_count;
        d->quanta = NULL;
        d->quantum_count = 0;
    }
    tesi_free(world, ids, slots * sizeof *ids);
    tesi_free(world, schema, sizeof *schema);
    return result;
}

void tesi_replica_fini(tes_world_t *world) {
    tesi_free(world, world->replica_ids, world->replica_id_count * sizeof *world->replica_ids);
    tesi_free(world, world->replica_quanta,
              (size_t)world->replica_quantum_count * sizeof *world->replica_quanta + 1);
}
