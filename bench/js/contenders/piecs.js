// piecs 0.4: entities are ids, component data is our own arrays indexed by id (piecs is "bring
// your own component storage"); iteration is through registered entity systems run by
// world.update(), iterating backwards so that removing the current entity is safe (as the
// ecs-benchmark suite's piecs cases do). piecs has no change detection: observers are left out.
import { World, createEntitySystem } from 'piecs';
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
    SET_N,
    SET_STRIDE,
    CHURN_N,
    CHURN_K,
    getHeavySum,
} from '../shared.js';

const comp = (world, cap) => ({ id: world.createComponentId(), value: new Int32Array(cap) });

function packed5() {
    const world = new World();
    const comps = [0, 1, 2, 3, 4].map(() => comp(world, 1024));
    const prefab = world.prefabricate(comps);
    for (const c of comps) {
        const v = c.value;
        world.registerSystem(
            createEntitySystem(
                function double(entities) {
                    for (let i = 0, l = entities.length; i < l; i++) v[entities[i]] *= 2;
                },
                (q) => q.every(c),
            ),
        );
    }
    world.initialize();
    const ids = [];
    for (let i = 0; i < 1000; i++) {
        const e = world.createEntity(prefab);
        for (const c of comps) c.value[e] = 1;
        ids.push(e);
    }
    return {
        op() {
            world.update();
        },
        check(k) {
            assert(prefab.entities.length === 1000, 'packed_5 count');
            for (const c of comps) assert(c.value[ids[0]] === doubled(1, k) && c.value[ids[999]] === doubled(1, k), 'packed_5 value');
        },
    };
}

function simpleIter() {
    const world = new World();
    const C = {};
    for (const l of 'ABCDE') C[l] = comp(world, 4096);
    const init = { A: 1, B: 2, C: 3, D: 4, E: 5 };
    const swapSystem = (c1, c2) => {
        const a = c1.value,
            b = c2.value;
        return createEntitySystem(
            function swap(entities) {
                for (let i = 0, l = entities.length; i < l; i++) {
                    const e = entities[i];
                    const t = a[e];
                    a[e] = b[e];
                    b[e] = t;
                }
            },
            (q) => q.every(c1, c2),
        );
    };
    world.registerSystem(swapSystem(C.A, C.B)).registerSystem(swapSystem(C.C, C.D)).registerSystem(swapSystem(C.C, C.E)).initialize();
    const groups = SIMPLE_ITER_SETS.map((has) => {
        const prefab = world.prefabricate([...has].map((l) => C[l]));
        const ids = [];
        for (let i = 0; i < 1000; i++) {
            const e = world.createEntity(prefab);
            for (const l of has) C[l].value[e] = init[l];
            ids.push(e);
        }
        return { has, ids };
    });
    return {
        op() {
            world.update();
        },
        check(k) {
            for (const g of groups) {
                const want = simpleIterExpected(g.has, k);
                for (const l of g.has)
                    assert(C[l].value[g.ids[0]] === want[l] && C[l].value[g.ids[999]] === want[l], `simple_iter ${g.has}.${l}`);
            }
        },
    };
}

function fragIter() {
    const world = new World();
    const letters = LETTERS.map(() => comp(world, 4096));
    const Data = comp(world, 4096);
    const Z = letters[25];
    const dv = Data.value,
        zv = Z.value;
    world
        .registerSystem(
            createEntitySystem(
                function data(entities) {
                    for (let i = 0, l = entities.length; i < l; i++) dv[entities[i]] *= 2;
                },
                (q) => q.every(Data),
            ),
        )
        .registerSystem(
            createEntitySystem(
                function z(entities) {
                    for (let i = 0, l = entities.length; i < l; i++) zv[entities[i]] *= 2;
                },
                (q) => q.every(Z),
            ),
        )
        .initialize();
    const firsts = letters.map((L) => {
        const prefab = world.prefabricate([L, Data]);
        let first = 0;
        for (let i = 0; i < 100; i++) {
            const e = world.createEntity(prefab);
            L.value[e] = 1;
            dv[e] = 1;
            if (i === 0) first = e;
        }
        return first;
    });
    return {
        op() {
            world.update();
        },
        check(k) {
            firsts.forEach((e, i) => {
                assert(dv[e] === doubled(1, k), 'frag_iter Data');
                assert(letters[i].value[e] === (i === 25 ? doubled(1, k) : 1), 'frag_iter letter');
            });
        },
    };
}

function entityCycle() {
    const world = new World();
    const A = comp(world, 4096),
        B = comp(world, 4096);
    const prefabA = world.prefabricate([A]),
        prefabB = world.prefabricate([B]);
    const av = A.value,
        bv = B.value;
    let killed = 0,
        sum = 0;
    world
        .registerSystem(
            createEntitySystem(
                function spawnBs(entities, w) {
                    for (let i = 0, l = entities.length; i < l; i++) {
                        const e = w.createEntity(prefabB);
                        bv[e] = av[entities[i]];
                    }
                },
                (q) => q.every(A),
            ),
        )
        .registerSystem(
            createEntitySystem(
                function deleteBs(entities, w) {
                    for (let i = entities.length - 1; i >= 0; i--) {
                        const e = entities[i];
                        sum += bv[e];
                        w.deleteEntity(e);
                        killed++;
                    }
                },
                (q) => q.every(B),
            ),
        )
        .initialize();
    for (let i = 0; i < 1000; i++) av[world.createEntity(prefabA)] = i;
    return {
        op() {
            killed = 0;
            sum = 0;
            world.update();
        },
        check() {
            assert(killed === 1000 && sum === 499500, `entity_cycle killed ${killed} sum ${sum}`);
            assert(prefabA.entities.length === 1000 && prefabB.entities.length === 0, 'entity_cycle counts');
        },
    };
}

// add_remove: the tag is a component id; adding and removing it per entity with
// transformEntity between two prefabs, as piecs' own benchmark case does.
function addRemove() {
    const world = new World();
    const A = comp(world, 4096),
        B = world.createComponentId();
    const prefabA = world.prefabricate([A]),
        prefabAB = world.prefabricate([A, B]);
    let removed = 0;
    world
        .registerSystem(
            createEntitySystem(
                function addB(entities, w) {
                    for (let i = entities.length - 1; i >= 0; i--) w.transformEntity(entities[i], prefabAB);
                },
                (q) => q.every(A).not(B),
            ),
        )
        .registerSystem(
            createEntitySystem(
                function removeB(entities, w) {
                    for (let i = entities.length - 1; i >= 0; i--) {
                        w.transformEntity(entities[i], prefabA);
                        removed++;
                    }
                },
                (q) => q.every(B),
            ),
        )
        .initialize();
    for (let i = 0; i < 1000; i++) world.createEntity(prefabA);
    return {
        op() {
            removed = 0;
            world.update();
        },
        check() {
            assert(removed === 1000, `add_remove removed ${removed}`);
            assert(prefabA.entities.length === 1000 && prefabAB.entities.length === 0, 'add_remove counts');
        },
    };
}

function particles(n) {
    return () => {
        const world = new World();
        const cap = n + 2 * RESPAWN + 2;
        const P = world.createComponentId(),
            V = world.createComponentId(),
            Lt = world.createComponentId(),
            Col = world.createComponentId();
        const px = new Float32Array(cap),
            py = new Float32Array(cap),
            vx = new Float32Array(cap),
            vy = new Float32Array(cap);
        const life = new Float32Array(cap),
            rgba = new Uint32Array(cap);
        const prefab = world.prefabricate([P, V, Lt, Col]);
        let m = 0,
            lastExpired = -1,
            spawned = 0;
        world
            .registerSystem(
                createEntitySystem(
                    function move(entities, w) {
                        for (let i = entities.length - 1; i >= 0; i--) {
                            const e = entities[i];
                            px[e] += vx[e] * DT;
                            py[e] += vy[e] * DT;
                            if ((life[e] -= 1) <= 0) {
                                w.deleteEntity(e);
                                m++;
                            }
                        }
                    },
                    (q) => q.every(P, V, Lt),
                ),
            )
            .initialize();
        for (let i = 0; i < n; i++) {
            const e = world.createEntity(prefab);
            const v = initialVelocity(i);
            vx[e] = v.vx;
            vy[e] = v.vy;
            life[e] = initialLife(i, n);
            rgba[e] = SPAWN.rgba;
        }
        const L = particleLife(n);
        return {
            op() {
                m = 0;
                world.update();
                for (let j = 0; j < RESPAWN; j++) {
                    const e = world.createEntity(prefab);
                    px[e] = SPAWN.x;
                    py[e] = SPAWN.y;
                    vx[e] = SPAWN.vx;
                    vy[e] = SPAWN.vy;
                    life[e] = L;
                    rgba[e] = SPAWN.rgba;
                }
                spawned += RESPAWN;
                lastExpired = m;
            },
            check(k) {
                assert(prefab.entities.length === n, `particles population ${prefab.entities.length}`);
                assert(lastExpired === RESPAWN, `particles expired ${lastExpired} per tick`);
                assert(spawned === RESPAWN * k, 'particles spawned');
            },
        };
    };
}

function setHeavy() {
    const world = new World();
    const P = world.createComponentId(),
        V = world.createComponentId();
    const x = new Float32Array(SET_N + 2),
        y = new Float32Array(SET_N + 2);
    const prefab = world.prefabricate([P, V]);
    world.initialize();
    const ids = new Int32Array(SET_N);
    for (let i = 0; i < SET_N; i++) ids[i] = world.createEntity(prefab);
    let t = 0;
    return {
        op() {
            t++;
            for (let i = t % SET_STRIDE; i < SET_N; i += SET_STRIDE) x[ids[i]] = t;
        },
        check(k) {
            assert(t === k && x[ids[(k % SET_STRIDE) + SET_STRIDE * 7]] === k, 'set_heavy value');
        },
    };
}

function churn() {
    const world = new World();
    const N = CHURN_N,
        K = CHURN_K,
        half = N / 2;
    const P = world.createComponentId(),
        V = world.createComponentId(),
        T = world.createComponentId();
    const prefab = world.prefabricate([P, V]),
        prefabT = world.prefabricate([P, V, T]);
    world.initialize();
    const ring = new Int32Array(N);
    for (let i = 0; i < N; i++) ring[i] = world.createEntity(prefab);
    for (let j = 0; j < K; j++) world.addComponent(ring[(half - K + j) % N], T);
    let h = 0;
    return {
        op() {
            for (let j = 0; j < K; j++) {
                world.addComponent(ring[(h + half + j) % N], T);
                world.removeComponent(ring[(h + half - K + j) % N], T);
            }
            for (let j = h; j < h + K; j++) {
                world.deleteEntity(ring[j]);
                ring[j] = world.createEntity(prefab);
            }
            h = (h + K) % N;
        },
        check() {
            const t = prefabT.entities.length,
                all = prefab.entities.length + t;
            assert(t === K && all === N, `churn T ${t} all ${all}`);
        },
    };
}

function getHeavy() {
    const world = new World();
    const P = world.createComponentId(),
        V = world.createComponentId();
    const x = new Float32Array(SET_N + 2),
        y = new Float32Array(SET_N + 2);
    const prefab = world.prefabricate([P, V]);
    world.initialize();
    const ids = new Int32Array(SET_N);
    for (let i = 0; i < SET_N; i++) x[(ids[i] = world.createEntity(prefab))] = i % 1000;
    let t = 0,
        sum = 0;
    return {
        op() {
            t++;
            sum = 0;
            for (let i = t % SET_STRIDE; i < SET_N; i += SET_STRIDE) sum += x[ids[i]];
        },
        check(k) {
            assert(t === k && sum === getHeavySum(k), 'get_heavy sum');
        },
    };
}

const cases = caseTable({
    packed_5: packed5,
    simple_iter: simpleIter,
    frag_iter: fragIter,
    entity_cycle: entityCycle,
    add_remove: addRemove,
    particles,
    set_heavy: setHeavy,
    get_heavy: getHeavy,
    churn,
});

const missing = {
    observers_10k: 'no change detection or add/remove events',
    observers_100k: 'no change detection or add/remove events',
};

export default { name: 'piecs', pkg: 'piecs', kind: 'peer', cases, missing };
