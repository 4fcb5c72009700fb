// The limit: plain typed-array loops over the same data, no ECS (BENCHMARKS.md §3), each
// field in the best layout for the case's loops (contiguous where an ECS would split it).
// Structural cases (entity_cycle, add_remove, churn) have no plain-loop equivalent: left out.
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
    getHeavySum,
} from '../shared.js';

function packed5() {
    const cols = [0, 1, 2, 3, 4].map(() => new Int32Array(1000).fill(1));
    return {
        op() {
            for (let c = 0; c < 5; c++) {
                const v = cols[c];
                for (let i = 0, n = v.length; i < n; i++) v[i] *= 2;
            }
        },
        check(k) {
            for (const v of cols) for (let i = 0; i < 1000; i++) assert(v[i] === doubled(1, k), 'packed_5 value');
        },
    };
}

// Every entity has A and B: one 4000-long pair; C is 3000 long (the ABC, ABCD, ABCE thousands
// in that order) so C<->D and C<->E are loops over its second and third thousand.
function simpleIter() {
    const A = new Int32Array(4000).fill(1),
        B = new Int32Array(4000).fill(2);
    const C = new Int32Array(3000).fill(3),
        D = new Int32Array(1000).fill(4),
        E = new Int32Array(1000).fill(5);
    const groups = { AB: 0, ABC: 1000, ABCD: 2000, ABCE: 3000 };
    return {
        op() {
            for (let i = 0; i < 4000; i++) {
                const t = A[i];
                A[i] = B[i];
                B[i] = t;
            }
            for (let i = 0; i < 1000; i++) {
                const t = C[1000 + i];
                C[1000 + i] = D[i];
                D[i] = t;
            }
            for (let i = 0; i < 1000; i++) {
                const t = C[2000 + i];
                C[2000 + i] = E[i];
                E[i] = t;
            }
        },
        check(k) {
            for (const has of SIMPLE_ITER_SETS) {
                const want = simpleIterExpected(has, k),
                    o = groups[has];
                for (const j of [0, 999]) {
                    const got = { A: A[o + j], B: B[o + j], C: C[o - 1000 + j], D: D[j], E: E[j] };
                    for (const l of has) assert(got[l] === want[l], `simple_iter ${has}.${l}`);
                }
            }
        },
    };
}

// The limit: Data of all 26 groups in one array, Z's own values in another.
function fragIter() {
    const data = new Int32Array(2600).fill(1),
        own = new Int32Array(2600).fill(1);
    const z = own.subarray(2500);
    return {
        op() {
            for (let i = 0; i < 2600; i++) data[i] *= 2;
            for (let i = 0; i < 100; i++) z[i] *= 2;
        },
        check(k) {
            LETTERS.forEach((l, g) => {
                assert(data[g * 100] === doubled(1, k) && data[g * 100 + 99] === doubled(1, k), 'frag_iter Data');
                assert(own[g * 100 + 50] === (l === 'Z' ? doubled(1, k) : 1), 'frag_iter letter');
            });
        },
    };
}

// Dense SoA: one pass integrates, ages and lists the expired; swap-remove them; append the
// respawned.
function particles(n) {
    return () => {
        const cap = n + RESPAWN;
        const x = new Float32Array(cap),
            y = new Float32Array(cap);
        const vx = new Float32Array(cap),
            vy = new Float32Array(cap);
        const life = new Float32Array(cap),
            rgba = new Uint32Array(cap);
        let count = n,
            lastExpired = -1,
            spawned = 0;
        for (let i = 0; i < n; i++) {
            const v = initialVelocity(i);
            vx[i] = v.vx;
            vy[i] = v.vy;
            life[i] = initialLife(i, n);
            rgba[i] = SPAWN.rgba;
        }
        const L = particleLife(n);
        const dead = new Int32Array(cap);
        return {
            op() {
                let expired = 0;
                for (let i = 0; i < count; i++) {
                    x[i] += vx[i] * DT;
                    y[i] += vy[i] * DT;
                    if ((life[i] -= 1) <= 0) dead[expired++] = i;
                }
                for (let k = expired - 1; k >= 0; k--) {
                    // descending: the last row is never a pending dead one
                    const i = dead[k],
                        last = --count;
                    x[i] = x[last];
                    y[i] = y[last];
                    vx[i] = vx[last];
                    vy[i] = vy[last];
                    life[i] = life[last];
                    rgba[i] = rgba[last];
                }
                for (let j = 0; j < RESPAWN; j++) {
                    const i = count++;
                    x[i] = SPAWN.x;
                    y[i] = SPAWN.y;
                    vx[i] = SPAWN.vx;
                    vy[i] = SPAWN.vy;
                    life[i] = L;
                    rgba[i] = SPAWN.rgba;
                }
                spawned += RESPAWN;
                lastExpired = expired;
            },
            check(k) {
                assert(count === n, `particles population ${count} != ${n}`);
                assert(lastExpired === RESPAWN, `particles expired ${lastExpired} per tick`);
                assert(spawned === RESPAWN * k, 'particles spawned');
            },
        };
    };
}

// A hand-written dirty list with dedup bitmap per watched thing: the cheapest observer.
function observers(n) {
    return () => {
        const hp = new Int32Array(n).fill(100);
        const hasX = new Uint8Array(n),
            hasY = new Uint8Array(n);
        const dirty = new Uint8Array(n),
            dirtyList = new Int32Array(n);
        let dirtyCount = 0;
        const addedX = [],
            removedY = [];
        for (let j = 0; j < OBS_TAGS; j++) {
            hasX[xIndex(0, j, n)] = 1;
            hasY[yIndex(0, j, n)] = 1;
        }
        let t = 0,
            seen = null;
        return {
            op() {
                t++;
                for (let j = 0; j < OBS_SETS; j++) {
                    const e = observerSetIndex(t, j, n);
                    hp[e] = t;
                    if (!dirty[e]) {
                        dirty[e] = 1;
                        dirtyList[dirtyCount++] = e;
                    }
                }
                for (let j = 0; j < OBS_TAGS; j++) {
                    const a = xIndex(t, j, n);
                    if (!hasX[a]) {
                        hasX[a] = 1;
                        addedX.push(a);
                    }
                    hasX[xIndex(t - 1, j, n)] = 0;
                    hasY[yIndex(t, j, n)] = 1;
                    const r = yIndex(t - 1, j, n);
                    if (hasY[r]) {
                        hasY[r] = 0;
                        removedY.push(r);
                    }
                }
                let sum = 0;
                for (let i = 0; i < dirtyCount; i++) {
                    const e = dirtyList[i];
                    sum += hp[e];
                    dirty[e] = 0;
                }
                let sumX = 0;
                for (let i = 0; i < addedX.length; i++) sumX += hp[addedX[i]];
                seen = { changed: dirtyCount, sum, added: addedX.length, removed: removedY.length, sumX };
                dirtyCount = 0;
                addedX.length = 0;
                removedY.length = 0;
            },
            check(k) {
                assert(t === k, 'observer ticks');
                assert(seen.changed === OBS_SETS && seen.sum === OBS_SETS * t, `changed ${seen.changed}`);
                assert(seen.added === OBS_TAGS && seen.removed === OBS_TAGS, `added ${seen.added} removed ${seen.removed}`);
            },
        };
    };
}

function setHeavy() {
    const x = new Float32Array(SET_N),
        y = new Float32Array(SET_N);
    let t = 0;
    return {
        op() {
            t++;
            for (let i = t % SET_STRIDE; i < SET_N; i += SET_STRIDE) x[i] = t;
        },
        check(k) {
            assert(t === k && x[(k % SET_STRIDE) + SET_STRIDE * 7] === k, 'set_heavy value');
        },
    };
}

function getHeavy() {
    const x = new Float32Array(SET_N);
    for (let i = 0; i < SET_N; i++) x[i] = i % 1000;
    let t = 0,
        sum = 0;
    return {
        op() {
            t++;
            sum = 0;
            for (let i = t % SET_STRIDE; i < SET_N; i += SET_STRIDE) sum += x[i];
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
    particles,
    observers,
    set_heavy: setHeavy,
    get_heavy: getHeavy,
});

const missing = {
    entity_cycle: 'structural: no plain-loop equivalent',
    add_remove: 'structural: no plain-loop equivalent',
    churn: 'structural: no plain-loop equivalent',
};

export default { name: 'raw', version: 'typed arrays', kind: 'limit', cases, missing };
