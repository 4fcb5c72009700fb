// hello: one million moving entities over the raw tessera exports.
//
//   npm run build && node examples/hello.mjs [entity count]
//
// A world with Position {x, y} and Velocity {x, y} (f32), spawned in one batch. Systems run
// over chunks: for every archetype holding both components, for every chunk, Float32Array
// views over the field columns. Memory may grow during spawns and allocations; views are
// re-derived whenever `view.buffer !== memory.buffer`.
import { loadTessera } from '../dist/load.js';

const ENTITY_COUNT = Number(process.argv[2] ?? 1_000_000);
const FRAMES = 60;
const TES_F32 = 1; // tes_type_t

const { exports: tes, memory } = await loadTessera();

// ---- wasm32 memory helpers ------------------------------------------------------------------

let u32 = new Uint32Array(memory.buffer);
let f32 = new Float32Array(memory.buffer);
/** Re-derives the views after memory growth (old views are detached, length 0). */
function views() {
    if (u32.buffer !== memory.buffer) {
        u32 = new Uint32Array(memory.buffer);
        f32 = new Float32Array(memory.buffer);
    }
}

function cString(text) {
    const bytes = new TextEncoder().encode(text);
    const ptr = malloc(bytes.length + 1);
    new Uint8Array(memory.buffer).set([...bytes, 0], ptr);
    return ptr;
}

function malloc(bytes) {
    const ptr = tes.tes_malloc(bytes) >>> 0;
    if (ptr === 0) throw new Error(`tessera hello: tes_malloc(${bytes}) failed`);
    views();
    return ptr;
}

function readCString(ptr) {
    const bytes = new Uint8Array(memory.buffer);
    return new TextDecoder().decode(bytes.subarray(ptr, bytes.indexOf(0, ptr)));
}

/** Throws with the C result name unless `result` is TES_OK. */
function check(result, what) {
    views();
    if (result !== 0) throw new Error(`tessera hello: ${what}: ${readCString(tes.tes_result_name(result) >>> 0)}`);
}

const scratch = malloc(64); // out-parameters and small structs

// ---- world and components -------------------------------------------------------------------

check(tes.tes_world_create(0, scratch), 'tes_world_create');
const world = u32[scratch >>> 2];

/** Registers a component of f32 fields; returns its id. */
function registerF32(name, fieldNames) {
    const fields = malloc(12 * fieldNames.length); // tes_field_desc_t {name, type, length}
    fieldNames.forEach((field, i) => {
        const namePtr = cString(field);
        u32.set([namePtr, TES_F32, 0], (fields >>> 2) + 3 * i);
    });
    const desc = malloc(12); // tes_component_desc_t {name, fields, field_count}
    const namePtr = cString(name);
    u32.set([namePtr, fields, fieldNames.length], desc >>> 2);
    check(tes.tes_component_register(world, desc, scratch), `register ${name}`);
    return u32[scratch >>> 2];
}

const Position = registerF32('Position', ['x', 'y']);
const Velocity = registerF32('Velocity', ['x', 'y']);

// ---- chunk iteration ------------------------------------------------------------------------

/** Archetype ids whose component set includes every one of `components`. */
function archetypesWith(components) {
    const found = [];
    const count = tes.tes_archetype_count(world);
    for (let a = 0; a < count; a++) {
        // tes_archetype_info_t {components, component_count, entity_count, chunk_count, capacity}
        check(tes.tes_archetype_info(world, a, scratch), 'tes_archetype_info');
        const [ptr, n] = u32.subarray(scratch >>> 2, (scratch >>> 2) + 2);
        const set = u32.subarray(ptr >>> 2, (ptr >>> 2) + n);
        if (components.every((c) => set.includes(c))) found.push(a);
    }
    return found;
}

/** Word offset (into u32/f32) of a field column of one chunk. */
function column(archetype, chunk, component, field) {
    check(tes.tes_chunk_column(world, archetype, chunk, component, field, scratch), 'tes_chunk_column');
    return u32[scratch >>> 2] >>> 2;
}

/**
 * Calls fn(count, entitiesWord, pxWord, pyWord, vxWord, vyWord, u32, f32) for every chunk of
 * every archetype with Position and Velocity: the columns are word offsets into the two views,
 * which stay valid inside fn because fn makes no structural change.
 */
function eachMovingChunk(fn) {
    for (const a of archetypesWith([Position, Velocity])) {
        check(tes.tes_archetype_info(world, a, scratch), 'tes_archetype_info');
        const chunkCount = u32[(scratch >>> 2) + 3];
        for (let c = 0; c < chunkCount; c++) {
            // tes_chunk_info_t {entities, count, capacity}
            check(tes.tes_chunk_info(world, a, c, scratch), 'tes_chunk_info');
            const entities = u32[scratch >>> 2] >>> 2;
            const count = u32[(scratch >>> 2) + 1];
            fn(
                count,
                entities,
                column(a, c, Position, 0),
                column(a, c, Position, 1),
                column(a, c, Velocity, 0),
                column(a, c, Velocity, 1),
                u32,
                f32,
            );
        }
    }
}

/** The velocity an entity gets: small multiples of 1/4, so 60 f32 additions stay exact. */
const velocityX = (entity) => 0.25 * (1 + (entity % 16));
const VELOCITY_Y = -0.5;

// ---- the run --------------------------------------------------------------------------------

const timings = [];
function timed(label, fn) {
    const start = performance.now();
    const result = fn();
    timings.push([label, performance.now() - start]);
    return result;
}

const handles = timed('spawn_batch', () => {
    const components = malloc(8);
    u32.set([Position, Velocity], components >>> 2);
    const out = malloc(4 * ENTITY_COUNT);
    check(tes.tes_spawn_batch(world, components, 2, ENTITY_COUNT, out), 'tes_spawn_batch');
    return u32.slice(out >>> 2, (out >>> 2) + ENTITY_COUNT);
});

timed('write velocities', () => {
    eachMovingChunk((count, entities, px, py, vx, vy, u32, f32) => {
        for (let i = 0; i < count; i++) {
            f32[vx + i] = velocityX(u32[entities + i]);
            f32[vy + i] = VELOCITY_Y;
        }
    });
});

timed(`${FRAMES} frames`, () => {
    for (let frame = 0; frame < FRAMES; frame++) {
        eachMovingChunk((count, entities, px, py, vx, vy, u32, f32) => {
            for (let i = 0; i < count; i++) {
                f32[px + i] += f32[vx + i];
                f32[py + i] += f32[vy + i];
            }
        });
    }
});

timed('despawn_batch (half)', () => {
    const half = handles.filter((_, i) => i % 2 === 0);
    const list = malloc(4 * half.length);
    u32.set(half, list >>> 2);
    check(tes.tes_despawn_batch(world, list, half.length), 'tes_despawn_batch');
});

// ---- results --------------------------------------------------------------------------------

// Every survivor must sit at FRAMES * its velocity, and exactly the odd half must survive.
let checked = 0;
const seen = new Set();
eachMovingChunk((count, entities, px, py, vx, vy, u32, f32) => {
    for (let i = 0; i < count; i++) {
        const e = u32[entities + i];
        if (f32[px + i] !== FRAMES * velocityX(e) || f32[py + i] !== FRAMES * VELOCITY_Y) {
            throw new Error(`tessera hello: entity ${e} is at (${f32[px + i]}, ${f32[py + i]})`);
        }
        seen.add(e);
        checked++;
    }
});
const survivors = handles.filter((_, i) => i % 2 === 1);
const expectedLive = survivors.length;
if (checked !== expectedLive || seen.size !== checked || !survivors.every((e) => seen.has(e))) {
    throw new Error(`tessera hello: ${checked} entities in chunks, expected the ${expectedLive} odd ones`);
}
const probe = survivors[survivors.length - 1];
check(tes.tes_get_number(world, probe, Position, 0, 0, scratch), 'tes_get_number');
const probeX = new Float64Array(memory.buffer, scratch, 1)[0];
if (probeX !== FRAMES * velocityX(probe)) throw new Error(`tessera hello: probe x = ${probeX}`);
check(tes.tes_world_validate(world), 'tes_world_validate');

// tes_world_stats_t: ten uint32 then uint64 bytes_allocated at offset 40.
check(tes.tes_world_stats(world, scratch), 'tes_world_stats');
const s = u32.slice(scratch >>> 2, (scratch >>> 2) + 10);
const bytesAllocated = Number(new BigUint64Array(memory.buffer, scratch + 40, 1)[0]);
const stats = {
    entities: s[0],
    archetypes: s[4],
    chunks: s[5],
    pooledChunks: s[6],
    chunkBytes: s[7],
    bytesAllocated,
};

const n = (x) => x.toLocaleString('en-US');
console.log(`tessera hello: ${n(ENTITY_COUNT)} entities with Position + Velocity (f32 x, y)`);
for (const [label, ms] of timings) {
    const perFrame = label.endsWith('frames') ? `  (${(ms / FRAMES).toFixed(2)} ms/frame)` : '';
    console.log(`  ${label.padEnd(22)} ${ms.toFixed(1).padStart(8)} ms${perFrame}`);
}
console.log(
    `  world: ${n(stats.entities)} entities, ${stats.archetypes} archetypes, ` +
        `${n(stats.chunks)} chunks (+${stats.pooledChunks} pooled) of ${n(stats.chunkBytes)} bytes, ` +
        `${n(stats.bytesAllocated)} bytes allocated = ` +
        `${(stats.bytesAllocated / stats.entities).toFixed(1)} bytes/entity`,
);
console.log(`  wasm memory: ${n(memory.buffer.byteLength)} bytes`);
console.log(
    `  check: ${n(checked)} survivors at ${FRAMES} x velocity, e.g. entity ${probe} at x = ${probeX}: OK`,
);

tes.tes_world_destroy(world);
