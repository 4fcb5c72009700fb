// koota 0.6: traits with SoA stores (plain JS arrays), entities are numbers with methods
// (koota extends Number.prototype). Hot loops use query.useStores (README: "for
// performance-critical operations") with entities[i].id() as the store index; structural
// changes go through entity.add / remove / destroy and world.spawn. Change detection through
// the Changed / Added / Removed query modifiers. Values are kept i32 with `| 0` because the
// stores are plain arrays (the doubling would otherwise leave the small-integer range).
import { createWorld, trait, cacheQuery, createAdded, createChanged, createRemoved } from 'koota';
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

const V = () => trait({ value: 0 });
const [A, B, C, D, E] = [V(), V(), V(), V(), V()];
const byLetter = { A, B, C, D, E };
const Letters = LETTERS.map((l) => byLetter[l] ?? V());
const Data = V();
const Btag = trait();
const Position = trait({ x: 0, y: 0 });
const Velocity = trait({ x: 0, y: 0 });
const Lifetime = trait({ t: 0 });
const Color = trait({ rgba: 0 });
const Health = V();
const X = trait(),
    Y = trait(),
    T = trait();

const dispose = (world) => () => world.destroy();

function doubleStore(store, entities) {
    const v = store.value;
    for (let i = 0, n = entities.length; i < n; i++) {
        const e = entities[i].id();
        v[e] = (v[e] * 2) | 0;
    }
}

function packed5() {
    const world = createWorld();
    const comps = [A, B, C, D, E];
    const ids = [];
    for (let i = 0; i < 1000; i++) ids.push(world.spawn(...comps.map((c) => c({ value: 1 }))));
    const queries = comps.map((c) => cacheQuery(c));
    const cb = ([s], entities) => doubleStore(s, entities);
    return {
        op() {
            for (let s = 0; s < 5; s++) world.query(queries[s]).useStores(cb);
        },
        check(k) {
            assert(world.query(A).length === 1000, 'packed_5 count');
            for (const c of comps)
                assert(ids[0].get(c).value === doubled(1, k) && ids[999].get(c).value === doubled(1, k), 'packed_5 value');
        },
        dispose: dispose(world),
    };
}

function simpleIter() {
    const world = createWorld();
    const init = { A: 1, B: 2, C: 3, D: 4, E: 5 };
    const groups = SIMPLE_ITER_SETS.map((has) => {
        const ids = [];
        for (let i = 0; i < 1000; i++) ids.push(world.spawn(...[...has].map((l) => byLetter[l]({ value: init[l] }))));
        return { has, ids };
    });
    const swap = ([s1, s2], entities) => {
        const a = s1.value,
            b = s2.value;
        for (let i = 0, n = entities.length; i < n; i++) {
            const e = entities[i].id();
            const t = a[e];
            a[e] = b[e];
            b[e] = t;
        }
    };
    const qAB = cacheQuery(A, B),
        qCD = cacheQuery(C, D),
        qCE = cacheQuery(C, E);
    return {
        op() {
            world.query(qAB).useStores(swap);
            world.query(qCD).useStores(swap);
            world.query(qCE).useStores(swap);
        },
        check(k) {
            for (const g of groups) {
                const want = simpleIterExpected(g.has, k);
                for (const l of g.has)
                    assert(
                        g.ids[0].get(byLetter[l]).value === want[l] && g.ids[999].get(byLetter[l]).value === want[l],
                        `simple_iter ${g.has}.${l}`,
                    );
            }
        },
        dispose: dispose(world),
    };
}

function fragIter() {
    const world = createWorld();
    const firsts = Letters.map((L) => {
        let first = 0;
        for (let i = 0; i < 100; i++) {
            const e = world.spawn(L({ value: 1 }), Data({ value: 1 }));
            if (i === 0) first = e;
        }
        return first;
    });
    const Z = Letters[25];
    const qData = cacheQuery(Data),
        qZ = cacheQuery(Z);
    const cb = ([s], entities) => doubleStore(s, entities);
    return {
        op() {
            world.query(qData).useStores(cb);
            world.query(qZ).useStores(cb);
        },
        check(k) {
            assert(world.query(Data).length === 2600, 'frag_iter count');
            firsts.forEach((e, i) => {
                assert(e.get(Data).value === doubled(1, k), 'frag_iter Data');
                assert(e.get(Letters[i]).value === (i === 25 ? doubled(1, k) : 1), 'frag_iter letter');
            });
        },
        dispose: dispose(world),
    };
}

function entityCycle() {
    const world = createWorld();
    for (let i = 0; i < 1000; i++) world.spawn(A({ value: i }));
    const qA = cacheQuery(A),
        qB = cacheQuery(B);
    let killed = 0,
        sum = 0;
    const spawnBs = ([a], entities) => {
        const v = a.value;
        for (let i = 0, n = entities.length; i < n; i++) world.spawn(B({ value: v[entities[i].id()] }));
    };
    const killBs = ([b], entities) => {
        const v = b.value;
        for (let i = entities.length - 1; i >= 0; i--) {
            const e = entities[i];
            sum += v[e.id()];
            e.destroy();
            killed++;
        }
    };
    return {
        op() {
            world.query(qA).useStores(spawnBs);
            killed = 0;
            sum = 0;
            world.query(qB).useStores(killBs);
        },
        check() {
            assert(killed === 1000 && sum === 499500, `entity_cycle killed ${killed} sum ${sum}`);
            assert(world.query(A).length === 1000 && world.query(B).length === 0, 'entity_cycle counts');
        },
        dispose: dispose(world),
    };
}

function addRemove() {
    const world = createWorld();
    for (let i = 0; i < 1000; i++) world.spawn(A);
    const qA = cacheQuery(A),
        qB = cacheQuery(Btag);
    let removed = 0;
    return {
        op() {
            const as = world.query(qA);
            for (let i = as.length - 1; i >= 0; i--) as[i].add(Btag);
            removed = 0;
            const bs = world.query(qB);
            for (let i = bs.length - 1; i >= 0; i--) {
                bs[i].remove(Btag);
                removed++;
            }
        },
        check() {
            assert(removed === 1000, `add_remove removed ${removed}`);
            assert(world.query(A).length === 1000 && world.query(Btag).length === 0, 'add_remove counts');
        },
        dispose: dispose(world),
    };
}

function particles(n) {
    return () => {
        const world = createWorld();
        for (let i = 0; i < n; i++) {
            const v = initialVelocity(i);
            world.spawn(Position, Velocity({ x: v.vx, y: v.vy }), Lifetime({ t: initialLife(i, n) }), Color({ rgba: SPAWN.rgba }));
        }
        const L = particleLife(n);
        const q = cacheQuery(Position, Velocity, Lifetime);
        const expired = [];
        let lastExpired = -1,
            spawned = 0;
        const move = ([p, v, l], entities) => {
            const px = p.x,
                py = p.y,
                vx = v.x,
                vy = v.y,
                life = l.t;
            for (let i = 0, c = entities.length; i < c; i++) {
                const e = entities[i].id();
                px[e] += vx[e] * DT;
                py[e] += vy[e] * DT;
                if ((life[e] -= 1) <= 0) expired.push(entities[i]);
            }
        };
        return {
            op() {
                expired.length = 0;
                world.query(q).useStores(move);
                for (let i = 0; i < expired.length; i++) expired[i].destroy();
                for (let j = 0; j < RESPAWN; j++) {
                    world.spawn(
                        Position({ x: SPAWN.x, y: SPAWN.y }),
                        Velocity({ x: SPAWN.vx, y: SPAWN.vy }),
                        Lifetime({ t: L }),
                        Color({ rgba: SPAWN.rgba }),
                    );
                }
                spawned += RESPAWN;
                lastExpired = expired.length;
            },
            check(k) {
                const c = world.query(q).length;
                assert(c === n, `particles population ${c}`);
                assert(lastExpired === RESPAWN, `particles expired ${lastExpired} per tick`);
                assert(spawned === RESPAWN * k, 'particles spawned');
            },
            dispose: dispose(world),
        };
    };
}

function observers(n) {
    return () => {
        const world = createWorld();
        const ids = [];
        for (let i = 0; i < n; i++) ids.push(world.spawn(Health({ value: 100 }), Position, Velocity));
        for (let j = 0; j < OBS_TAGS; j++) {
            ids[xIndex(0, j, n)].add(X);
            ids[yIndex(0, j, n)].add(Y);
        }
        const Changed = createChanged(),
            Added = createAdded(),
            Removed = createRemoved();
        const qChanged = cacheQuery(Changed(Health)),
            qAdded = cacheQuery(Added(X)),
            qRemoved = cacheQuery(Removed(Y));
        world.query(qChanged);
        world.query(qAdded);
        world.query(qRemoved);
        let t = 0,
            seen = null;
        return {
            op() {
                t++;
                for (let j = 0; j < OBS_SETS; j++) ids[observerSetIndex(t, j, n)].set(Health, { value: t });
                for (let j = 0; j < OBS_TAGS; j++) {
                    ids[xIndex(t, j, n)].add(X);
                    ids[xIndex(t - 1, j, n)].remove(X);
                    ids[yIndex(t, j, n)].add(Y);
                    ids[yIndex(t - 1, j, n)].remove(Y);
                }
                const c = world.query(qChanged);
                let sum = 0;
                for (let i = 0; i < c.length; i++) sum += c[i].get(Health).value;
                const ax = world.query(qAdded);
                let sumX = 0;
                for (let i = 0; i < ax.length; i++) sumX += ax[i].get(Health).value;
                const ry = world.query(qRemoved);
                seen = { changed: c.length, sum, added: ax.length, removed: ry.length, sumX };
            },
            check(k) {
                assert(t === k, 'observer ticks');
                assert(seen.changed === OBS_SETS && seen.sum === OBS_SETS * t, `changed ${seen.changed} sum ${seen.sum}`);
                assert(seen.added === OBS_TAGS && seen.removed === OBS_TAGS, `added ${seen.added} removed ${seen.removed}`);
            },
            dispose: dispose(world),
        };
    };
}

function setHeavy() {
    const world = createWorld();
    const ids = [];
    for (let i = 0; i < SET_N; i++) ids.push(world.spawn(Position, Velocity));
    let t = 0;
    return {
        op() {
            t++;
            for (let i = t % SET_STRIDE; i < SET_N; i += SET_STRIDE) ids[i].set(Position, { x: t });
        },
        check(k) {
            assert(t === k && ids[(k % SET_STRIDE) + SET_STRIDE * 7].get(Position).x === k, 'set_heavy value');
        },
        dispose: dispose(world),
    };
}

function churn() {
    const world = createWorld();
    const N = CHURN_N,
        K = CHURN_K,
        half = N / 2;
    const ring = [];
    for (let i = 0; i < N; i++) ring.push(world.spawn(Position, Velocity));
    for (let j = 0; j < K; j++) ring[(half - K + j) % N].add(T);
    let h = 0;
    return {
        op() {
            for (let j = 0; j < K; j++) {
                ring[(h + half + j) % N].add(T);
                ring[(h + half - K + j) % N].remove(T);
            }
            for (let j = h; j < h + K; j++) {
                ring[j].destroy();
                ring[j] = world.spawn(Position, Velocity);
            }
            h = (h + K) % N;
        },
        check() {
            const t = world.query(T).length,
                all = world.query(Position).length;
            assert(t === K && all === N, `churn T ${t} all ${all}`);
        },
        dispose: dispose(world),
    };
}

function getHeavy() {
    const world = createWorld();
    const ids = [];
    for (let i = 0; i < SET_N; i++) ids.push(world.spawn(Position({ x: i % 1000 }), Velocity));
    let t = 0,
        sum = 0;
    return {
        op() {
            t++;
            sum = 0;
            for (let i = t % SET_STRIDE; i < SET_N; i += SET_STRIDE) sum += ids[i].get(Position).x;
        },
        check(k) {
            assert(t === k && sum === getHeavySum(k), 'get_heavy sum');
        },
        dispose: dispose(world),
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

export default { name: 'koota', pkg: 'koota', kind: 'peer', cases };
