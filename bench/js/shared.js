// Case definitions shared by every contender (plain ES module: runs in Node and browsers).
// BENCHMARKS.md §1 (the suite) and §2 (the scenarios) say what one op does; these helpers fix
// the sizes, the deterministic "random" choices and the expected results, so that every
// contender does the same work and is checked the same way.

export const SUITE = ['packed_5', 'simple_iter', 'frag_iter', 'entity_cycle', 'add_remove'];
export const SCENARIOS = [
    'particles_10k',
    'particles_100k',
    'particles_1m',
    'observers_10k',
    'observers_100k',
    'set_heavy',
    'get_heavy',
    'churn',
];
export const CASES = [...SUITE, ...SCENARIOS];

// Suite cases are reported in op/s, scenarios in ms per tick.
export const isScenario = (name) => SCENARIOS.includes(baseCase(name));
// 'entity_cycle (batch API)' -> 'entity_cycle'
export const baseCase = (name) => name.replace(/ \(.*\)$/, '');

/** A seeded generator (mulberry32): each call gives the next number in [0, 1). */
export function mulberry32(seed) {
    let a = seed >>> 0;
    return () => {
        a = (a + 0x6d2b79f5) >>> 0;
        let t = a;
        t = Math.imul(t ^ (t >>> 15), t | 1);
        t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
        return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
}

export const LETTERS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ'.split('');

// v doubled k times with i32 wrap-around (Int32Array semantics): what `v *= 2` k times stores.
export function doubled(v, k) {
    return k >= 32 ? 0 : (v << k) | 0;
}

export function assert(condition, message) {
    if (!condition) throw new Error('check failed: ' + message);
}

// simple_iter: archetype (A,B) swaps A<->B each op; (A,B,C,D) also C<->D then... the three
// systems run in order (A,B), (C,D), (C,E). Initial values A=1 B=2 C=3 D=4 E=5.
// Returns the expected {A,B,C,D,E} of an entity with `has` (a string of letters) after k ops.
export function simpleIterExpected(has, k) {
    const v = { A: 1, B: 2, C: 3, D: 4, E: 5 };
    for (let i = 0; i < k % 12; i++) {
        [v.A, v.B] = [v.B, v.A];
        if (has.includes('D')) [v.C, v.D] = [v.D, v.C];
        if (has.includes('E')) [v.C, v.E] = [v.E, v.C];
    }
    const out = {};
    for (const c of has) out[c] = v[c];
    return out;
}
export const SIMPLE_ITER_SETS = ['AB', 'ABC', 'ABCD', 'ABCE'];

// particles: N particles; lifetimes are whole ticks so exactly 100 expire and 100 respawn per
// tick: particle i starts with (i % L) + 1 ticks left, a respawned one with L = N / 100.
export const PARTICLE_SIZES = { particles_10k: 10_000, particles_100k: 100_000, particles_1m: 1_000_000 };
export const RESPAWN = 100;
export const DT = 1 / 60;
export const particleLife = (n) => n / RESPAWN;
export const initialLife = (i, n) => (i % particleLife(n)) + 1;
// Respawned particles all start the same way (every contender does the same).
export const SPAWN = { x: 0, y: 0, vx: 1, vy: 0.5, rgba: 0xff8040ff };
export const initialVelocity = (i) => ({ vx: (i % 7) - 3, vy: (i % 5) - 2 });

// observers: N entities with Health, Position, Velocity. Per tick t (1, 2, ...):
// - set Health.value = t on 100 distinct pseudo-random entities (observerSetIndex);
// - add tag X to 10 entities (window t) and remove X from the 10 of window t-1;
// - add tag Y to 10 entities (window t) and remove Y from the 10 of window t-1;
// - run 3 observers: changed Health (sum the new values: 100 * t), added X (10), removed Y (10).
// Setup adds X and Y to window 0 and drains, so tick 1 starts clean.
export const OBS_SETS = 100;
export const OBS_TAGS = 10;
export const OBSERVER_SIZES = { observers_10k: 10_000, observers_100k: 100_000 };
export const observerSetIndex = (t, j, n) => (((t * 104729) % n) + j * 7919) % n;
export const xIndex = (t, j, n) => (t * OBS_TAGS + j) % n;
export const yIndex = (t, j, n) => (Math.floor(n / 2) + t * OBS_TAGS + j) % n;

// set_heavy: 100k entities with Position; per tick t, set Position.x = t on every entity i
// with i % 10 === t % 10 (10%), one public-API set per entity.
export const SET_N = 100_000;
export const SET_STRIDE = 10;

// get_heavy: the same 100k entities, Position.x = i % 1000 for entity i (set up untimed); per
// tick t, sum Position.x over every entity i with i % 10 === t % 10, one public-API read each.
// The sum of a tick is getHeavySum(t).
export const getHeavySum = (t) => {
    let sum = 0;
    for (let i = t % SET_STRIDE; i < SET_N; i += SET_STRIDE) sum += i % 1000;
    return sum;
};

// churn: 100k entities with Position, Velocity, kept in spawn order in a ring of handles.
// Per tick (head h): add tag T to ring slots [h + N/2, +1000), remove T from
// [h + N/2 - 1000, h + N/2) (added the tick before), despawn the 1000 oldest (slots
// [h, h + 1000)) and spawn 1000 new into those slots; h += 1000. Setup tags the first window.
export const CHURN_N = 100_000;
export const CHURN_K = 1000;

// A contender's case table from its setups: each key a case name or a variant of one
// ('churn (batch API)'); the sized families 'particles' and 'observers' (and their variants,
// 'particles (kernels)') take a factory (n) => setup and give one case per size, e.g.
// particles_10k ... particles_1m.
const SIZED = { particles: PARTICLE_SIZES, observers: OBSERVER_SIZES };
export function caseTable(setups) {
    const cases = {};
    for (const [key, setup] of Object.entries(setups)) {
        const family = baseCase(key),
            sizes = SIZED[family];
        if (!sizes) {
            if (!CASES.includes(family)) throw new Error(`caseTable: unknown case ${key}`);
            cases[key] = setup;
            continue;
        }
        const variant = key.slice(family.length);
        for (const [name, n] of Object.entries(sizes)) cases[name + variant] = setup(n);
    }
    return cases;
}
