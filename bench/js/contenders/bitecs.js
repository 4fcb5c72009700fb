// bitecs 0.4 (the new API): entities are ids, components are our own SoA typed arrays,
// query(world, terms) returns the matching ids (removals are committed at the next query, so
// removing while iterating is safe). Observers use bitecs' observe(onSet / onAdd / onRemove).
import {
    createWorld,
    deleteWorld,
    addEntity,
    removeEntity,
    addComponent,
    removeComponent,
    setComponent,
    query,
    observe,
    onAdd,
    onRemove,
    onSet,
} from 'bitecs';
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

const i32 = (cap) => ({ value: new Int32Array(cap) });
const xy = (cap) => ({ x: new Float32Array(cap), y: new Float32Array(cap) });

function spawnWith(world, ...comps) {
    const eid = addEntity(world);
    for (const c of comps) addComponent(world, eid, c);
    return eid;
}

function packed5() {
    const world = createWorld();
    const comps = [0, 1, 2, 3, 4].map(() => i32(1024));
    const ids = [];
    for (let i = 0; i < 1000; i++) {
        const e = spawnWith(world, ...comps);
        for (const c of comps) c.value[e] = 1;
        ids.push(e);
    }
    return {
        op() {
            for (let s = 0; s < 5; s++) {
                const v = comps[s].value;
                const ents = query(world, [comps[s]]);
                for (let i = 0, n = ents.length; i < n; i++) v[ents[i]] *= 2;
            }
        },
        check(k) {
            assert(query(world, [comps[0]]).length === 1000, 'packed_5 count');
            for (const c of comps) assert(c.value[ids[0]] === doubled(1, k) && c.value[ids[999]] === doubled(1, k), 'packed_5 value');
        },
        dispose: () => deleteWorld(world),
    };
}

function simpleIter() {
    const world = createWorld();
    const C = { A: i32(4096), B: i32(4096), C: i32(4096), D: i32(4096), E: i32(4096) };
    const init = { A: 1, B: 2, C: 3, D: 4, E: 5 };
    const groups = SIMPLE_ITER_SETS.map((has) => {
        const ids = [];
        for (let i = 0; i < 1000; i++) {
            const e = spawnWith(world, ...[...has].map((l) => C[l]));
            for (const l of has) C[l].value[e] = init[l];
            ids.push(e);
        }
        return { has, ids };
    });
    const swap = (c1, c2) => {
        const a = c1.value,
            b = c2.value;
        const ents = query(world, [c1, c2]);
        for (let i = 0, n = ents.length; i < n; i++) {
            const e = ents[i];
            const t = a[e];
            a[e] = b[e];
            b[e] = t;
        }
    };
    return {
        op() {
            swap(C.A, C.B);
            swap(C.C, C.D);
            swap(C.C, C.E);
        },
        check(k) {
            for (const g of groups) {
                const want = simpleIterExpected(g.has, k);
                for (const l of g.has)
                    assert(C[l].value[g.ids[0]] === want[l] && C[l].value[g.ids[999]] === want[l], `simple_iter ${g.has}.${l}`);
            }
        },
        dispose: () => deleteWorld(world),
    };
}

function fragIter() {
    const world = createWorld();
    const letters = LETTERS.map(() => i32(4096));
    const Data = i32(4096);
    const firsts = letters.map((L) => {
        let first = 0;
        for (let i = 0; i < 100; i++) {
            const e = spawnWith(world, L, Data);
            L.value[e] = 1;
            Data.value[e] = 1;
            if (i === 0) first = e;
        }
        return first;
    });
    const Z = letters[25];
    return {
        op() {
            const d = Data.value;
            let ents = query(world, [Data]);
            for (let i = 0, n = ents.length; i < n; i++) d[ents[i]] *= 2;
            const z = Z.value;
            ents = query(world, [Z]);
            for (let i = 0, n = ents.length; i < n; i++) z[ents[i]] *= 2;
        },
        check(k) {
            assert(query(world, [Data]).length === 2600, 'frag_iter count');
            firsts.forEach((e, i) => {
                assert(Data.value[e] === doubled(1, k), 'frag_iter Data');
                assert(letters[i].value[e] === (i === 25 ? doubled(1, k) : 1), 'frag_iter letter');
            });
        },
        dispose: () => deleteWorld(world),
    };
}

function entityCycle() {
    const world = createWorld();
    const A = i32(4096),
        B = i32(4096);
    for (let i = 0; i < 1000; i++) A.value[spawnWith(world, A)] = i;
    let killed = 0,
        sum = 0;
    return {
        op() {
            const as = query(world, [A]);
            const av = A.value,
                bv = B.value;
            for (let i = 0, n = as.length; i < n; i++) {
                const e = addEntity(world);
                addComponent(world, e, B);
                bv[e] = av[as[i]];
            }
            killed = 0;
            sum = 0;
            const bs = query(world, [B]);
            for (let i = 0, n = bs.length; i < n; i++) {
                sum += bv[bs[i]];
                removeEntity(world, bs[i]);
                killed++;
            }
        },
        check() {
            assert(killed === 1000 && sum === 499500, `entity_cycle killed ${killed} sum ${sum}`);
            assert(query(world, [A]).length === 1000 && query(world, [B]).length === 0, 'entity_cycle counts');
        },
        dispose: () => deleteWorld(world),
    };
}

function addRemove() {
    const world = createWorld();
    const A = i32(4096),
        B = {};
    for (let i = 0; i < 1000; i++) spawnWith(world, A);
    let removed = 0;
    return {
        op() {
            const as = query(world, [A]);
            for (let i = 0, n = as.length; i < n; i++) addComponent(world, as[i], B);
            removed = 0;
            const bs = query(world, [B]);
            for (let i = 0, n = bs.length; i < n; i++) {
                removeComponent(world, bs[i], B);
                removed++;
            }
        },
        check() {
            assert(removed === 1000, `add_remove removed ${removed}`);
            assert(query(world, [A]).length === 1000 && query(world, [B]).length === 0, 'add_remove counts');
        },
        dispose: () => deleteWorld(world),
    };
}

function particles(n) {
    return () => {
        const world = createWorld();
        const cap = n + 2 * RESPAWN + 2;
        const Position = xy(cap),
            Velocity = xy(cap),
            Lifetime = { t: new Float32Array(cap) },
            Color = { rgba: new Uint32Array(cap) };
        for (let i = 0; i < n; i++) {
            const e = spawnWith(world, Position, Velocity, Lifetime, Color);
            const v = initialVelocity(i);
            Velocity.x[e] = v.vx;
            Velocity.y[e] = v.vy;
            Lifetime.t[e] = initialLife(i, n);
            Color.rgba[e] = SPAWN.rgba;
        }
        const L = particleLife(n);
        const terms = [Position, Velocity, Lifetime];
        let lastExpired = -1,
            spawned = 0;
        return {
            op() {
                const px = Position.x,
                    py = Position.y,
                    vx = Velocity.x,
                    vy = Velocity.y,
                    life = Lifetime.t;
                const ents = query(world, terms);
                let m = 0;
                for (let i = 0, c = ents.length; i < c; i++) {
                    const e = ents[i];
                    px[e] += vx[e] * DT;
                    py[e] += vy[e] * DT;
                    if ((life[e] -= 1) <= 0) {
                        removeEntity(world, e);
                        m++;
                    }
                }
                for (let j = 0; j < RESPAWN; j++) {
                    const e = spawnWith(world, Position, Velocity, Lifetime, Color);
                    if (e >= cap) throw new Error('bitecs particles: id beyond the stores');
                    px[e] = SPAWN.x;
                    py[e] = SPAWN.y;
                    vx[e] = SPAWN.vx;
                    vy[e] = SPAWN.vy;
                    life[e] = L;
                    Color.rgba[e] = SPAWN.rgba;
                }
                spawned += RESPAWN;
                lastExpired = m;
            },
            check(k) {
                const c = query(world, terms).length;
                assert(c === n, `particles population ${c}`);
                assert(lastExpired === RESPAWN, `particles expired ${lastExpired} per tick`);
                assert(spawned === RESPAWN * k, 'particles spawned');
            },
            dispose: () => deleteWorld(world),
        };
    };
}

// Changed Health: setComponent + an onSet observer (bitecs' change hook) feeding a deduplicated
// dirty list; Added X / Removed Y: onAdd / onRemove observers feeding lists; drained per tick.
function observers(n) {
    return () => {
        const world = createWorld();
        const Health = i32(n + 2),
            Position = xy(n + 2),
            Velocity = xy(n + 2),
            X = {},
            Y = {};
        const ids = new Int32Array(n);
        for (let i = 0; i < n; i++) {
            const e = spawnWith(world, Health, Position, Velocity);
            Health.value[e] = 100;
            ids[i] = e;
        }
        for (let j = 0; j < OBS_TAGS; j++) {
            addComponent(world, ids[xIndex(0, j, n)], X);
            addComponent(world, ids[yIndex(0, j, n)], Y);
        }
        const dirty = new Uint8Array(n + 2),
            changed = [],
            addedX = [],
            removedY = [];
        observe(world, onSet(Health), (e, params) => {
            Health.value[e] = params.value;
            if (!dirty[e]) {
                dirty[e] = 1;
                changed.push(e);
            }
        });
        observe(world, onAdd(X), (e) => {
            addedX.push(e);
        });
        observe(world, onRemove(Y), (e) => {
            removedY.push(e);
        });
        let t = 0,
            seen = null;
        return {
            op() {
                t++;
                for (let j = 0; j < OBS_SETS; j++) setComponent(world, ids[observerSetIndex(t, j, n)], Health, { value: t });
                for (let j = 0; j < OBS_TAGS; j++) {
                    addComponent(world, ids[xIndex(t, j, n)], X);
                    removeComponent(world, ids[xIndex(t - 1, j, n)], X);
                    addComponent(world, ids[yIndex(t, j, n)], Y);
                    removeComponent(world, ids[yIndex(t - 1, j, n)], Y);
                }
                const hp = Health.value;
                let sum = 0;
                for (let i = 0; i < changed.length; i++) {
                    const e = changed[i];
                    sum += hp[e];
                    dirty[e] = 0;
                }
                let sumX = 0;
                for (let i = 0; i < addedX.length; i++) sumX += hp[addedX[i]];
                seen = { changed: changed.length, sum, added: addedX.length, removed: removedY.length, sumX };
                changed.length = 0;
                addedX.length = 0;
                removedY.length = 0;
            },
            check(k) {
                assert(t === k, 'observer ticks');
                assert(seen.changed === OBS_SETS && seen.sum === OBS_SETS * t, `changed ${seen.changed} sum ${seen.sum}`);
                assert(seen.added === OBS_TAGS && seen.removed === OBS_TAGS, `added ${seen.added} removed ${seen.removed}`);
            },
            dispose: () => deleteWorld(world),
        };
    };
}

// bitecs' way to set a field is a store write: Position.x[eid] = v.
function setHeavy() {
    const world = createWorld();
    const Position = xy(SET_N + 2),
        Velocity = xy(SET_N + 2);
    const ids = new Int32Array(SET_N);
    for (let i = 0; i < SET_N; i++) ids[i] = spawnWith(world, Position, Velocity);
    let t = 0;
    return {
        op() {
            t++;
            const x = Position.x;
            for (let i = t % SET_STRIDE; i < SET_N; i += SET_STRIDE) x[ids[i]] = t;
        },
        check(k) {
            assert(t === k && Position.x[ids[(k % SET_STRIDE) + SET_STRIDE * 7]] === k, 'set_heavy value');
        },
        dispose: () => deleteWorld(world),
    };
}

function churn() {
    const world = createWorld();
    const N = CHURN_N,
        K = CHURN_K,
        half = N / 2;
    const Position = xy(N + K + 2),
        Velocity = xy(N + K + 2),
        T = {};
    const ring = new Int32Array(N);
    for (let i = 0; i < N; i++) ring[i] = spawnWith(world, Position, Velocity);
    for (let j = 0; j < K; j++) addComponent(world, ring[(half - K + j) % N], T);
    let h = 0;
    return {
        op() {
            for (let j = 0; j < K; j++) {
                addComponent(world, ring[(h + half + j) % N], T);
                removeComponent(world, ring[(h + half - K + j) % N], T);
            }
            for (let j = h; j < h + K; j++) {
                removeEntity(world, ring[j]);
                ring[j] = spawnWith(world, Position, Velocity);
            }
            h = (h + K) % N;
        },
        check() {
            const t = query(world, [T]).length,
                all = query(world, [Position]).length;
            assert(t === K && all === N, `churn T ${t} all ${all}`);
        },
        dispose: () => deleteWorld(world),
    };
}

// bitecs' way to read a field is a store read: Position.x[eid].
function getHeavy() {
    const world = createWorld();
    const Position = xy(SET_N + 2),
        Velocity = xy(SET_N + 2);
    const ids = new Int32Array(SET_N);
    for (let i = 0; i < SET_N; i++) Position.x[(ids[i] = spawnWith(world, Position, Velocity))] = i % 1000;
    let t = 0,
        sum = 0;
    return {
        op() {
            t++;
            sum = 0;
            const x = Position.x;
            for (let i = t % SET_STRIDE; i < SET_N; i += SET_STRIDE) sum += x[ids[i]];
        },
        check(k) {
            assert(t === k && sum === getHeavySum(k), 'get_heavy sum');
        },
        dispose: () => deleteWorld(world),
    };
}

const cases = caseTable({
    packed_5: packed5,
    simple_iter: simpleIter,
    frag_iter: fragIter,
    entity_cycle: entityCycle,
    add_remove: addRemove,
    particles,
    observers,
    set_heavy: setHeavy,
    get_heavy: getHeavy,
    churn,
});

export default { name: 'bitecs', pkg: 'bitecs', kind: 'peer', cases };
