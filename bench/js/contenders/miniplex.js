// miniplex 2: entities are plain objects, components are their properties, queries are
// world.with(...) buckets; data is mutated in place. Loops walk query.entities backwards (the
// order miniplex's own iterator uses, safe when the current entity leaves the query).
// miniplex has no change tracking (no "changed" events), so observers are left out. Values are
// kept i32 with `| 0` (plain numbers would leave the small-integer range when doubled).
import { World } from 'miniplex';
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

function packed5() {
    const world = new World();
    const ids = [];
    for (let i = 0; i < 1000; i++) ids.push(world.add({ A: 1, B: 1, C: 1, D: 1, E: 1 }));
    const qs = 'ABCDE'.split('').map((c) => world.with(c));
    return {
        op() {
            let ents = qs[0].entities;
            for (let i = ents.length - 1; i >= 0; i--) {
                const e = ents[i];
                e.A = (e.A * 2) | 0;
            }
            ents = qs[1].entities;
            for (let i = ents.length - 1; i >= 0; i--) {
                const e = ents[i];
                e.B = (e.B * 2) | 0;
            }
            ents = qs[2].entities;
            for (let i = ents.length - 1; i >= 0; i--) {
                const e = ents[i];
                e.C = (e.C * 2) | 0;
            }
            ents = qs[3].entities;
            for (let i = ents.length - 1; i >= 0; i--) {
                const e = ents[i];
                e.D = (e.D * 2) | 0;
            }
            ents = qs[4].entities;
            for (let i = ents.length - 1; i >= 0; i--) {
                const e = ents[i];
                e.E = (e.E * 2) | 0;
            }
        },
        check(k) {
            assert(qs[0].size === 1000, 'packed_5 count');
            for (const c of 'ABCDE') assert(ids[0][c] === doubled(1, k) && ids[999][c] === doubled(1, k), 'packed_5 value');
        },
    };
}

function simpleIter() {
    const world = new World();
    const init = { A: 1, B: 2, C: 3, D: 4, E: 5 };
    const groups = SIMPLE_ITER_SETS.map((has) => {
        const ids = [];
        for (let i = 0; i < 1000; i++) {
            const e = {};
            for (const l of has) e[l] = init[l];
            ids.push(world.add(e));
        }
        return { has, ids };
    });
    const qAB = world.with('A', 'B'),
        qCD = world.with('C', 'D'),
        qCE = world.with('C', 'E');
    return {
        op() {
            let ents = qAB.entities;
            for (let i = ents.length - 1; i >= 0; i--) {
                const e = ents[i];
                const t = e.A;
                e.A = e.B;
                e.B = t;
            }
            ents = qCD.entities;
            for (let i = ents.length - 1; i >= 0; i--) {
                const e = ents[i];
                const t = e.C;
                e.C = e.D;
                e.D = t;
            }
            ents = qCE.entities;
            for (let i = ents.length - 1; i >= 0; i--) {
                const e = ents[i];
                const t = e.C;
                e.C = e.E;
                e.E = t;
            }
        },
        check(k) {
            for (const g of groups) {
                const want = simpleIterExpected(g.has, k);
                for (const l of g.has) assert(g.ids[0][l] === want[l] && g.ids[999][l] === want[l], `simple_iter ${g.has}.${l}`);
            }
        },
    };
}

function fragIter() {
    const world = new World();
    const firsts = LETTERS.map((l) => {
        let first = null;
        for (let i = 0; i < 100; i++) {
            const e = world.add({ [l]: 1, Data: 1 });
            if (i === 0) first = e;
        }
        return first;
    });
    const qData = world.with('Data'),
        qZ = world.with('Z');
    return {
        op() {
            let ents = qData.entities;
            for (let i = ents.length - 1; i >= 0; i--) {
                const e = ents[i];
                e.Data = (e.Data * 2) | 0;
            }
            ents = qZ.entities;
            for (let i = ents.length - 1; i >= 0; i--) {
                const e = ents[i];
                e.Z = (e.Z * 2) | 0;
            }
        },
        check(k) {
            assert(qData.size === 2600, 'frag_iter count');
            firsts.forEach((e, i) => {
                assert(e.Data === doubled(1, k), 'frag_iter Data');
                assert(e[LETTERS[i]] === (i === 25 ? doubled(1, k) : 1), 'frag_iter letter');
            });
        },
    };
}

function entityCycle() {
    const world = new World();
    for (let i = 0; i < 1000; i++) world.add({ A: i });
    const qA = world.with('A'),
        qB = world.with('B');
    let killed = 0,
        sum = 0;
    return {
        op() {
            const as = qA.entities;
            for (let i = as.length - 1; i >= 0; i--) world.add({ B: as[i].A });
            killed = 0;
            sum = 0;
            const bs = qB.entities;
            for (let i = bs.length - 1; i >= 0; i--) {
                const e = bs[i];
                sum += e.B;
                world.remove(e);
                killed++;
            }
        },
        check() {
            assert(killed === 1000 && sum === 499500, `entity_cycle killed ${killed} sum ${sum}`);
            assert(qA.size === 1000 && qB.size === 0, 'entity_cycle counts');
        },
    };
}

function addRemove() {
    const world = new World();
    for (let i = 0; i < 1000; i++) world.add({ A: 0 });
    const qA = world.with('A'),
        qB = world.with('B');
    let removed = 0;
    return {
        op() {
            const as = qA.entities;
            for (let i = as.length - 1; i >= 0; i--) world.addComponent(as[i], 'B', true);
            removed = 0;
            const bs = qB.entities;
            for (let i = bs.length - 1; i >= 0; i--) {
                world.removeComponent(bs[i], 'B');
                removed++;
            }
        },
        check() {
            assert(removed === 1000, `add_remove removed ${removed}`);
            assert(qA.size === 1000 && qB.size === 0, 'add_remove counts');
        },
    };
}

function particles(n) {
    return () => {
        const world = new World();
        for (let i = 0; i < n; i++) {
            const v = initialVelocity(i);
            world.add({ position: { x: 0, y: 0 }, velocity: { x: v.vx, y: v.vy }, life: initialLife(i, n), color: SPAWN.rgba });
        }
        const L = particleLife(n);
        const q = world.with('position', 'velocity', 'life');
        let lastExpired = -1,
            spawned = 0;
        return {
            op() {
                const ents = q.entities;
                let m = 0;
                for (let i = ents.length - 1; i >= 0; i--) {
                    const e = ents[i],
                        p = e.position,
                        v = e.velocity;
                    p.x += v.x * DT;
                    p.y += v.y * DT;
                    if ((e.life -= 1) <= 0) {
                        world.remove(e);
                        m++;
                    }
                }
                for (let j = 0; j < RESPAWN; j++) {
                    world.add({ position: { x: SPAWN.x, y: SPAWN.y }, velocity: { x: SPAWN.vx, y: SPAWN.vy }, life: L, color: SPAWN.rgba });
                }
                spawned += RESPAWN;
                lastExpired = m;
            },
            check(k) {
                assert(q.size === n, `particles population ${q.size}`);
                assert(lastExpired === RESPAWN, `particles expired ${lastExpired} per tick`);
                assert(spawned === RESPAWN * k, 'particles spawned');
            },
        };
    };
}

// Setting a field in miniplex is writing the entity object's property.
function setHeavy() {
    const world = new World();
    const ids = [];
    for (let i = 0; i < SET_N; i++) ids.push(world.add({ position: { x: 0, y: 0 }, velocity: { x: 0, y: 0 } }));
    let t = 0;
    return {
        op() {
            t++;
            for (let i = t % SET_STRIDE; i < SET_N; i += SET_STRIDE) ids[i].position.x = t;
        },
        check(k) {
            assert(t === k && ids[(k % SET_STRIDE) + SET_STRIDE * 7].position.x === k, 'set_heavy value');
        },
    };
}

function churn() {
    const world = new World();
    const N = CHURN_N,
        K = CHURN_K,
        half = N / 2;
    const ring = [];
    for (let i = 0; i < N; i++) ring.push(world.add({ position: { x: 0, y: 0 }, velocity: { x: 0, y: 0 } }));
    for (let j = 0; j < K; j++) world.addComponent(ring[(half - K + j) % N], 'T', true);
    const qT = world.with('T'),
        qAll = world.with('position');
    let h = 0;
    return {
        op() {
            for (let j = 0; j < K; j++) {
                world.addComponent(ring[(h + half + j) % N], 'T', true);
                world.removeComponent(ring[(h + half - K + j) % N], 'T');
            }
            for (let j = h; j < h + K; j++) {
                world.remove(ring[j]);
                ring[j] = world.add({ position: { x: 0, y: 0 }, velocity: { x: 0, y: 0 } });
            }
            h = (h + K) % N;
        },
        check() {
            assert(qT.size === K && qAll.size === N, `churn T ${qT.size} all ${qAll.size}`);
        },
    };
}

function getHeavy() {
    const world = new World();
    const ids = [];
    for (let i = 0; i < SET_N; i++) ids.push(world.add({ position: { x: i % 1000, y: 0 }, velocity: { x: 0, y: 0 } }));
    let t = 0,
        sum = 0;
    return {
        op() {
            t++;
            sum = 0;
            for (let i = t % SET_STRIDE; i < SET_N; i += SET_STRIDE) sum += ids[i].position.x;
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
    observers_10k: 'no change tracking (only query add/remove events)',
    observers_100k: 'no change tracking (only query add/remove events)',
};

export default { name: 'miniplex', pkg: 'miniplex', kind: 'peer', cases, missing };
