// tessera through its public API (the built package in dist/). One world per case setup,
// destroyed by dispose(). Hot loops follow the README: chunk.count and columns in locals.
import { createWorld, component, tag } from '../../../dist/index.js';
import {
    assert,
    caseTable,
    doubled,
    simpleIterExpected,
    SIMPLE_ITER_SETS,
    LETTERS,
    RESPAWN,
    DT,
    particleLife,
    initialLife,
    initialVelocity,
    SPAWN,
    OBS_SETS,
    OBS_TAGS,
    observerSetIndex,
    xIndex,
    yIndex,
    SET_N,
    SET_STRIDE,
    CHURN_N,
    CHURN_K,
    getHeavySum,
} from '../shared.js';

const V = { value: 'i32' };
const [A, B, C, D, E] = ['A', 'B', 'C', 'D', 'E'].map((l) => component('bench_' + l, V));
const Letters = LETTERS.map((l) => (l <= 'E' ? [A, B, C, D, E]['ABCDE'.indexOf(l)] : component('bench_' + l, V)));
const Data = component('bench_Data', V);
const BtagTable = tag('bench_Btag');
// The README's advice for what comes and goes: sparse storage, so adding and removing moves no row.
const BtagSparse = tag('bench_BtagSparse', { storage: 'sparse' });
const Position = component('bench_Position', { x: 'f32', y: 'f32' });
const Velocity = component('bench_Velocity', { x: 'f32', y: 'f32' });
const Lifetime = component('bench_Lifetime', { t: 'f32' });
const Color = component('bench_Color', { rgba: 'u32' });
const Health = component('bench_Health', V);
const X = tag('bench_X');
const Y = tag('bench_Y');
const T = tag('bench_T');
const byLetter = { A, B, C, D, E };

function packed5() {
    return async () => {
        const world = await createWorld();
        world.spawnMany(1000, A({ value: 1 }), B({ value: 1 }), C({ value: 1 }), D({ value: 1 }), E({ value: 1 }));
        const comps = [A, B, C, D, E];
        const queries = comps.map((c) => world.query({ all: [c] }));
        return {
            op() {
                for (let s = 0; s < 5; s++) {
                    const c = comps[s];
                    for (const chunk of queries[s]) {
                        const v = chunk.column(c, 'value');
                        for (let i = 0, n = chunk.count; i < n; i++) v[i] *= 2;
                    }
                }
            },
            check(k) {
                const ids = queries[0].entities();
                assert(ids.length === 1000, 'packed_5 count');
                for (const c of comps)
                    assert(
                        world.get(ids[0], c, 'value') === doubled(1, k) && world.get(ids[999], c, 'value') === doubled(1, k),
                        'packed_5 value',
                    );
            },
            dispose: () => world.destroy(),
        };
    };
}

function simpleIter() {
    return async () => {
        const world = await createWorld();
        const init = { A: 1, B: 2, C: 3, D: 4, E: 5 };
        const groups = SIMPLE_ITER_SETS.map((has) => ({
            has,
            ids: world.spawnMany(1000, ...[...has].map((l) => byLetter[l]({ value: init[l] }))),
        }));
        const swapQuery = (q, c1, c2) => {
            for (const chunk of q) {
                const a = chunk.column(c1, 'value'),
                    b = chunk.column(c2, 'value');
                for (let i = 0, n = chunk.count; i < n; i++) {
                    const t = a[i];
                    a[i] = b[i];
                    b[i] = t;
                }
            }
        };
        const qAB = world.query({ all: [A, B] }),
            qCD = world.query({ all: [C, D] }),
            qCE = world.query({ all: [C, E] });
        return {
            op() {
                swapQuery(qAB, A, B);
                swapQuery(qCD, C, D);
                swapQuery(qCE, C, E);
            },
            check(k) {
                for (const g of groups) {
                    const want = simpleIterExpected(g.has, k);
                    for (const l of g.has)
                        assert(
                            world.get(g.ids[0], byLetter[l], 'value') === want[l] &&
                                world.get(g.ids[999], byLetter[l], 'value') === want[l],
                            `simple_iter ${g.has}.${l}`,
                        );
                }
            },
            dispose: () => world.destroy(),
        };
    };
}

function fragIter() {
    return async () => {
        const world = await createWorld();
        const firsts = Letters.map((L) => world.spawnMany(100, L({ value: 1 }), Data({ value: 1 }))[0]);
        const qData = world.query({ all: [Data] });
        const Z = Letters[25];
        const qZ = world.query({ all: [Z] });
        return {
            op() {
                for (const chunk of qData) {
                    const v = chunk.column(Data, 'value');
                    for (let i = 0, n = chunk.count; i < n; i++) v[i] *= 2;
                }
                for (const chunk of qZ) {
                    const v = chunk.column(Z, 'value');
                    for (let i = 0, n = chunk.count; i < n; i++) v[i] *= 2;
                }
            },
            check(k) {
                assert(qData.count() === 2600, 'frag_iter count');
                firsts.forEach((e, i) => {
                    assert(world.get(e, Data, 'value') === doubled(1, k), 'frag_iter Data');
                    assert(world.get(e, Letters[i], 'value') === (i === 25 ? doubled(1, k) : 1), 'frag_iter letter');
                });
            },
            dispose: () => world.destroy(),
        };
    };
}

// entity_cycle as defined: per entity, spawns and despawns inside query loops (deferred to the
// end of the loop). batch: the same work with spawnMany + column copies + despawnAll.
function entityCycle(batch) {
    return async () => {
        const world = await createWorld();
        const as = world.spawnMany(1000, A);
        as.forEach((e, i) => world.set(e, A, 'value', i));
        const qA = world.query({ all: [A] }),
            qB = world.query({ all: [B] });
        const buf = new Int32Array(1000);
        let killed = 0,
            sum = 0;
        const perEntity = () => {
            for (const chunk of qA) {
                const v = chunk.column(A, 'value'); // valid for the whole run, spawns and all
                for (let i = 0, n = chunk.count; i < n; i++) world.spawn(B({ value: v[i] }));
            }
            killed = 0;
            sum = 0;
            for (const chunk of qB) {
                const ids = chunk.entities,
                    v = chunk.column(B, 'value');
                for (let i = 0, n = chunk.count; i < n; i++) {
                    sum += v[i];
                    world.despawn(ids[i]);
                    killed++;
                }
            }
        };
        const batched = () => {
            let m = 0;
            for (const chunk of qA) {
                const v = chunk.column(A, 'value');
                const n = chunk.count;
                buf.set(v.subarray(0, n), m);
                m += n;
            }
            world.spawnMany(m, B.columns({ value: buf.subarray(0, m) }));
            killed = qB.count();
            sum = 0;
            for (const chunk of qB) {
                const v = chunk.column(B, 'value');
                for (let i = 0, n = chunk.count; i < n; i++) sum += v[i];
            }
            qB.despawnAll();
        };
        return {
            op: batch ? batched : perEntity,
            check() {
                assert(killed === 1000 && sum === 499500, `entity_cycle killed ${killed} sum ${sum}`);
                assert(qA.count() === 1000 && qB.count() === 0, 'entity_cycle counts');
            },
            dispose: () => world.destroy(),
        };
    };
}

// way: 'entity' (world.add / world.remove per entity), 'batch' (addAll / removeAll), or 'sparse'
// (per entity, of a tag with sparse storage).
function addRemove(way) {
    const batch = way === 'batch';
    const Btag = way === 'sparse' ? BtagSparse : BtagTable;
    return async () => {
        const world = await createWorld();
        world.spawnMany(1000, A);
        const qA = world.query({ all: [A] }),
            qB = world.query({ all: [Btag] });
        let removed = 0;
        const perEntity = () => {
            for (const chunk of qA) {
                const ids = chunk.entities;
                for (let i = 0, n = chunk.count; i < n; i++) world.add(ids[i], Btag);
            }
            removed = 0;
            for (const chunk of qB) {
                const ids = chunk.entities;
                for (let i = 0, n = chunk.count; i < n; i++) {
                    world.remove(ids[i], Btag);
                    removed++;
                }
            }
        };
        const batched = () => {
            qA.addAll(Btag);
            removed = qB.count();
            qB.removeAll(Btag);
        };
        return {
            op: batch ? batched : perEntity,
            check() {
                assert(removed === 1000, `add_remove removed ${removed}`);
                assert(qA.count() === 1000 && qB.count() === 0, 'add_remove counts');
            },
            dispose: () => world.destroy(),
        };
    };
}

function particles(n, kernels) {
    return async () => {
        const world = await createWorld();
        const ids = world.spawnMany(n, Position, Velocity, Lifetime, Color({ rgba: SPAWN.rgba }));
        const L = particleLife(n);
        const q = world.query({ all: [Position, Velocity, Lifetime] });
        let p = 0; // setup writes through views (world.set per entity is slow for 1M)
        for (const chunk of q) {
            const vx = chunk.column(Velocity, 'x'),
                vy = chunk.column(Velocity, 'y'),
                life = chunk.column(Lifetime, 't');
            for (let i = 0, c = chunk.count; i < c; i++, p++) {
                const v = initialVelocity(p);
                vx[i] = v.vx;
                vy[i] = v.vy;
                life[i] = initialLife(p, n);
            }
        }
        assert(p === ids.length, 'particles setup');
        const expired = new Uint32Array(n);
        let lastExpired = -1,
            spawned = 0;
        const spawnItems = [
            Position({ x: SPAWN.x, y: SPAWN.y }),
            Velocity({ x: SPAWN.vx, y: SPAWN.vy }),
            Lifetime({ t: L }),
            Color({ rgba: SPAWN.rgba }),
        ];
        const jsTick = () => {
            let m = 0;
            for (const chunk of q) {
                const x = chunk.column(Position, 'x'),
                    y = chunk.column(Position, 'y');
                const vx = chunk.column(Velocity, 'x'),
                    vy = chunk.column(Velocity, 'y');
                const life = chunk.column(Lifetime, 't'),
                    ents = chunk.entities;
                for (let i = 0, c = chunk.count; i < c; i++) {
                    x[i] += vx[i] * DT;
                    y[i] += vy[i] * DT;
                    if ((life[i] -= 1) <= 0) expired[m++] = ents[i];
                }
            }
            world.despawnMany(expired.subarray(0, m));
            world.spawnMany(RESPAWN, ...spawnItems);
            spawned += RESPAWN;
            lastExpired = m;
        };
        const kernelTick = () => {
            q.addScaled(Position, 'x', Velocity, 'x', DT);
            q.addScaled(Position, 'y', Velocity, 'y', DT);
            const gone = q.countdown(Lifetime, 't', 1);
            world.despawnMany(gone);
            world.spawnMany(RESPAWN, ...spawnItems);
            spawned += RESPAWN;
            lastExpired = gone.length;
        };
        return {
            world, // for bench/js/footprint.mjs (what the world holds)
            op: kernels ? kernelTick : jsTick,
            check(k) {
                assert(q.count() === n, `particles population ${q.count()}`);
                assert(lastExpired === RESPAWN, `particles expired ${lastExpired} per tick`);
                assert(spawned === RESPAWN * k, 'particles spawned');
            },
            dispose: () => world.destroy(),
        };
    };
}

function observers(n) {
    return async () => {
        const world = await createWorld();
        const ids = world.spawnMany(n, Health({ value: 100 }), Position, Velocity);
        for (let j = 0; j < OBS_TAGS; j++) {
            world.add(ids[xIndex(0, j, n)], X);
            world.add(ids[yIndex(0, j, n)], Y);
        }
        const changed = world.subscribe({ changed: [Health] });
        const addedX = world.subscribe({ added: [X] });
        const removedY = world.subscribe({ removed: [Y] });
        world.tick();
        let t = 0,
            seen = null;
        return {
            op() {
                t++;
                for (let j = 0; j < OBS_SETS; j++) world.set(ids[observerSetIndex(t, j, n)], Health, 'value', t);
                for (let j = 0; j < OBS_TAGS; j++) {
                    world.add(ids[xIndex(t, j, n)], X);
                    world.remove(ids[xIndex(t - 1, j, n)], X);
                    world.add(ids[yIndex(t, j, n)], Y);
                    world.remove(ids[yIndex(t - 1, j, n)], Y);
                }
                const c = changed.drain().entities;
                let sum = 0;
                for (let i = 0; i < c.length; i++) sum += world.get(c[i], Health, 'value');
                const ax = addedX.drain().entities;
                let sumX = 0;
                for (let i = 0; i < ax.length; i++) sumX += world.get(ax[i], Health, 'value');
                const ry = removedY.drain().removed;
                world.tick();
                seen = { changed: c.length, sum, added: ax.length, removed: ry.length, sumX };
            },
            check(k) {
                assert(t === k, 'observer ticks');
                assert(seen.changed === OBS_SETS && seen.sum === OBS_SETS * t, `changed ${seen.changed} sum ${seen.sum}`);
                assert(seen.added === OBS_TAGS && seen.removed === OBS_TAGS, `added ${seen.added} removed ${seen.removed}`);
            },
            dispose: () => world.destroy(),
        };
    };
}

// set_heavy and get_heavy: one op function literal per row. V8 shares type feedback between
// the closures of one literal, so rows sharing an op would each run code shaped by the others'
// paths (measured: the field row's writes took twice as long beside the tracked row's), where a
// game's systems are functions of their own (run.mjs runs each case in its own process for the
// same reason).
async function heavyWorld() {
    const world = await createWorld();
    return { world, ids: world.spawnMany(SET_N, Position, Velocity) };
}

function setHeavyRow(setup) {
    return async () => {
        const { world, ids, op, state } = await setup();
        return {
            op,
            check(k) {
                assert(state.t === k && world.get(ids[(k % SET_STRIDE) + SET_STRIDE * 7], Position, 'x') === k, 'set_heavy value');
                assert(state.changed === undefined || state.changed === SET_N / SET_STRIDE, `set_heavy changes ${state.changed}`);
            },
            dispose: () => world.destroy(),
        };
    };
}

// world.set, as the README teaches.
const setHeavy = setHeavyRow(async () => {
    const { world, ids } = await heavyWorld();
    const state = { t: 0 };
    const op = () => {
        const t = ++state.t;
        for (let i = t % SET_STRIDE; i < SET_N; i += SET_STRIDE) world.set(ids[i], Position, 'x', t);
    };
    return { world, ids, op, state };
});

// A field handle made once, world.field(C, f).
const setHeavyField = setHeavyRow(async () => {
    const { world, ids } = await heavyWorld();
    const x = world.field(Position, 'x');
    const state = { t: 0 };
    const op = () => {
        const t = ++state.t;
        for (let i = t % SET_STRIDE; i < SET_N; i += SET_STRIDE) x.set(ids[i], t);
    };
    return { world, ids, op, state };
});

// world.set on a component a changed subscription watches, drained each tick.
const setHeavyTracked = setHeavyRow(async () => {
    const { world, ids } = await heavyWorld();
    const changes = world.subscribe({ changed: [Position] });
    const state = { t: 0, changed: 0 };
    const op = () => {
        const t = ++state.t;
        for (let i = t % SET_STRIDE; i < SET_N; i += SET_STRIDE) world.set(ids[i], Position, 'x', t);
        state.changed = changes.drain().entities.length;
    };
    return { world, ids, op, state };
});

function getHeavyRow(setup) {
    return async () => {
        const { world, ids } = await heavyWorld();
        for (let i = 0; i < SET_N; i++) world.set(ids[i], Position, 'x', i % 1000);
        const state = { t: 0, sum: 0 };
        return {
            op: setup(world, ids, state),
            check(k) {
                assert(state.t === k && state.sum === getHeavySum(k), 'get_heavy sum');
            },
            dispose: () => world.destroy(),
        };
    };
}

// world.get(e, C, field).
const getHeavy = getHeavyRow((world, ids, state) => () => {
    const t = ++state.t;
    let sum = 0;
    for (let i = t % SET_STRIDE; i < SET_N; i += SET_STRIDE) sum += world.get(ids[i], Position, 'x');
    state.sum = sum;
});

// A field handle made once.
const getHeavyField = getHeavyRow((world, ids, state) => {
    const x = world.field(Position, 'x');
    return () => {
        const t = ++state.t;
        let sum = 0;
        for (let i = t % SET_STRIDE; i < SET_N; i += SET_STRIDE) sum += x.get(ids[i]);
        state.sum = sum;
    };
});

// batch: spawnMany/despawnMany for the 1% spawned/despawned; tags are per entity either way.
function churn(batch) {
    return async () => {
        const world = await createWorld();
        const N = CHURN_N,
            K = CHURN_K,
            half = N / 2;
        const ring = world.spawnMany(N, Position, Velocity);
        for (let j = 0; j < K; j++) world.add(ring[(half - K + j) % N], T);
        const qT = world.query({ all: [T] }),
            qAll = world.query({ all: [Position] });
        let h = 0;
        return {
            op() {
                for (let j = 0; j < K; j++) {
                    world.add(ring[(h + half + j) % N], T);
                    world.remove(ring[(h + half - K + j) % N], T);
                }
                if (batch) {
                    const old = ring.subarray(h, h + K);
                    world.despawnMany(old);
                    old.set(world.spawnMany(K, Position, Velocity));
                } else {
                    for (let j = h; j < h + K; j++) {
                        world.despawn(ring[j]);
                        ring[j] = world.spawn(Position, Velocity);
                    }
                }
                h = (h + K) % N;
            },
            check() {
                assert(qT.count() === K && qAll.count() === N, `churn T ${qT.count()} all ${qAll.count()}`);
            },
            dispose: () => world.destroy(),
        };
    };
}

const cases = caseTable({
    packed_5: packed5(),
    simple_iter: simpleIter(),
    frag_iter: fragIter(),
    entity_cycle: entityCycle(false),
    'entity_cycle (batch API)': entityCycle(true),
    add_remove: addRemove('entity'),
    'add_remove (batch API)': addRemove('batch'),
    'add_remove (sparse tag)': addRemove('sparse'),
    particles: (n) => particles(n, false),
    'particles (kernels)': (n) => particles(n, true),
    observers,
    set_heavy: setHeavy,
    'set_heavy (field)': setHeavyField,
    'set_heavy (tracked)': setHeavyTracked,
    get_heavy: getHeavy,
    'get_heavy (field)': getHeavyField,
    churn: churn(false),
    'churn (batch API)': churn(true),
});

export default { name: 'tessera', version: '0.1.0', kind: 'self', cases };
