// Kernels: column math inside wasm over the rows a query visits (fill, offset, scale,
// addScaled, clamp, countdown), on f32 / f64 scalars and arrays, across chunks, filtered runs,
// change marking, and their errors.
import { describe, expect, test } from 'vitest';

import { component, tag, type World } from '../../dist/index.js';
import { expectError, snapshot, sorted, worldPerTest } from './support.js';

const newWorld = worldPerTest();

const Body = component('Body', {
    x: 'f32',
    v: 'f32',
    d: 'f64',
    w: 'f64',
    arr: ['f32', 3],
    darr: ['f64', 2],
    n: 'i32',
    b: 'u8',
});
const Other = component('Other', { s: 'f32', t: 'f64' });
const Mark = tag('Mark');

interface BodyValues {
    x: number;
    v: number;
    d: number;
    w: number;
    arr: number[];
    darr: number[];
    n: number;
    b: number;
}

/** Values of entity i: small dyadic fractions, so float arithmetic is exact everywhere. */
function initial(i: number): BodyValues {
    return {
        x: (i % 17) - 8,
        v: (i % 5) * 0.5,
        d: (i % 13) * 0.25 - 1,
        w: (i % 3) - 1,
        arr: [i % 7, -(i % 4), 0.5],
        darr: [(i % 11) * 0.125, -2],
        n: i,
        b: i % 256,
    };
}

/** A world of `count` Body entities (a few chunks), plus some without Body. */
async function bodies(count = 700) {
    const world = await newWorld({ chunkBytes: 2048 });
    const handles = world.spawnMany(count, Body);
    handles.forEach((e, i) => world.set(e, Body, initial(i)));
    const strangers = world.spawnMany(10, Other({ s: 1, t: 1 }));
    const all = world.query({ all: [Body] });
    if (count >= 700) expect([...all].length).toBeGreaterThanOrEqual(3);
    return { world, handles, strangers, all };
}

function expectBodies(world: World, handles: ArrayLike<number>, expected: (i: number) => BodyValues): void {
    for (let i = 0; i < handles.length; i++) expect(world.get(handles[i]!, Body)).toEqual(expected(i));
}

describe('operations', () => {
    test('fill: scalars and every element of array fields', async () => {
        const { world, handles, strangers, all } = await bodies();
        all.fill(Body, 'x', 2.5);
        all.fill(Body, 'd', -0.1);
        all.fill(Body, 'arr', 4);
        all.fill(Body, 'darr', 0.3);
        expectBodies(world, handles, (i) => ({ ...initial(i), x: 2.5, d: -0.1, arr: [4, 4, 4], darr: [0.3, 0.3] }));
        for (const e of strangers) expect(world.get(e, Other)).toEqual({ s: 1, t: 1 });
    });

    test('f32 fields take the operand rounded to f32', async () => {
        const { world, handles, all } = await bodies(10);
        all.fill(Body, 'x', 0.1);
        expectBodies(world, handles, (i) => ({ ...initial(i), x: Math.fround(0.1) }));
    });

    test('offset and scale', async () => {
        const { world, handles, all } = await bodies();
        all.offset(Body, 'x', 1.5);
        all.offset(Body, 'darr', -0.5);
        all.scale(Body, 'v', 4);
        all.scale(Body, 'arr', -0.5);
        all.scale(Body, 'w', 0);
        expectBodies(world, handles, (i) => {
            const v = initial(i);
            return {
                ...v,
                x: v.x + 1.5,
                darr: v.darr.map((k) => k - 0.5),
                v: v.v * 4,
                arr: v.arr.map((k) => k * -0.5),
                w: v.w * 0,
            };
        });
    });

    test('addScaled: a += b * k, from another field or component, or from the field itself', async () => {
        const { world, handles, all } = await bodies();
        all.addScaled(Body, 'x', Body, 'v', 2);
        all.addScaled(Body, 'd', Body, 'w', 0.5);
        all.addScaled(Body, 'v', Body, 'v', 1); // doubles v
        expectBodies(world, handles, (i) => {
            const v = initial(i);
            return { ...v, x: v.x + v.v * 2, d: v.d + v.w * 0.5, v: v.v * 2 };
        });
        // Across components: both must be in the query's terms.
        for (const e of handles.subarray(0, 100)) world.add(e, Other({ s: 3, t: 0.25 }));
        const both = world.query({ all: [Body, Other] });
        both.addScaled(Body, 'd', Other, 't', 4);
        handles.forEach((e, i) => {
            const v = initial(i);
            expect(world.get(e, Body, 'd')).toBe(v.d + v.w * 0.5 + (i < 100 ? 1 : 0));
        });
    });

    test('clamp, with NaN staying NaN', async () => {
        const { world, handles, all } = await bodies();
        world.set(handles[0]!, Body, { x: NaN, d: NaN });
        all.clamp(Body, 'x', -2, 3);
        all.clamp(Body, 'd', 0, 0.5);
        all.clamp(Body, 'arr', -1, 1);
        const clamp = (k: number, lo: number, hi: number) => Math.min(Math.max(k, lo), hi);
        handles.forEach((e, i) => {
            const v = initial(i);
            const got = world.get(e, Body);
            if (i === 0) {
                expect(got.x).toBeNaN();
                expect(got.d).toBeNaN();
            } else {
                expect([got.x, got.d]).toEqual([clamp(v.x, -2, 3), clamp(v.d, 0, 0.5)]);
            }
            expect(got.arr).toEqual(v.arr.map((k) => clamp(k, -1, 1)));
            expect([got.v, got.w, got.n]).toEqual([v.v, v.w, v.n]);
        });
        all.clamp(Body, 'w', 5, 5); // lo === hi is fine
        for (const e of handles) expect(world.get(e, Body, 'w')).toBe(5);
    });

    test('countdown returns exactly the entities whose value crossed from > 0 to <= 0', async () => {
        const { world, handles, all } = await bodies();
        // x is (i % 17) - 8: -8..8. Subtracting 3 takes 1..3 to <= 0; <= 0 were already there.
        const expected = [...handles].filter((_, i) => {
            const x = initial(i).x;
            return x > 0 && x - 3 <= 0;
        });
        const crossed = all.countdown(Body, 'x', 3);
        expect(crossed).toBeInstanceOf(Uint32Array);
        expect(sorted(crossed)).toEqual(sorted(expected));
        expect(new Set(crossed).size).toBe(crossed.length);
        expectBodies(world, handles, (i) => ({ ...initial(i), x: initial(i).x - 3 }));
        // Again: only the ones that were 4..6 cross now; the returned array stays as it was.
        const keep = [...crossed];
        const second = all.countdown(Body, 'x', 3);
        expect(sorted(second)).toEqual(sorted([...handles].filter((_, i) => [4, 5, 6].includes(initial(i).x))));
        expect([...crossed]).toEqual(keep);
        expect(all.countdown(Body, 'x', 0)).toHaveLength(0);
    });

    test('countdown on f64 and on arrays: an entity is listed once when any element crosses', async () => {
        const { world, handles, all } = await bodies(40);
        // darr is [(i % 11) / 8, -2]: element 0 crosses for 0 < value <= 0.25.
        const crossed = all.countdown(Body, 'darr', 0.25);
        expect(sorted(crossed)).toEqual(sorted([...handles].filter((_, i) => [1, 2].includes(i % 11))));
        // d is (i % 13) / 4 - 1.
        const d = all.countdown(Body, 'd', 0.5);
        expect(sorted(d)).toEqual(sorted([...handles].filter((_, i) => [5, 6].includes(i % 13))));
        expect(world.get(handles[1]!, Body, 'darr')).toEqual([-0.125, -2.25]);
    });

    test('countdown with nothing crossing returns an empty array', async () => {
        const { all } = await bodies(5);
        all.fill(Body, 'x', 1);
        expect(all.countdown(Body, 'x', 0.5)).toHaveLength(0);
    });
});

describe('integer fields: saturating at the type range', () => {
    const Counters = component('Counters', { hp: 'i32', timer: 'u16', ammo: 'u8', slots: ['i8', 2], big: 'u32' });

    test('every op on every integer field, against a saturating reference', async () => {
        const world = await newWorld({ chunkBytes: 1024 });
        const n = 300;
        const values = (i: number) => ({
            hp: i % 3 === 0 ? 2147483647 - (i % 5) : i - 150,
            timer: i % 4 === 0 ? 65535 : i % 7,
            ammo: (i * 37) % 256,
            slots: [(i % 256) - 128, 127 - (i % 9)],
            big: i % 2 ? 4294967295 - i : i,
        });
        const handles = world.spawnMany(n, Counters);
        handles.forEach((e, i) => world.set(e, Counters, values(i)));
        const q = world.query({ all: [Counters] });
        const clampTo = (v: number, lo: number, hi: number) => Math.min(Math.max(v, lo), hi);
        q.offset(Counters, 'hp', 10);
        q.countdown(Counters, 'timer', 3);
        q.scale(Counters, 'ammo', 2);
        q.addScaled(Counters, 'slots', Counters, 'slots', -3); // a += a * -3
        q.addScaled(Counters, 'big', Counters, 'big', 4294967295); // products beyond 2^64 too
        handles.forEach((e, i) => {
            const v = values(i);
            expect(world.get(e, Counters)).toEqual({
                hp: clampTo(v.hp + 10, -2147483648, 2147483647),
                timer: clampTo(v.timer - 3, 0, 65535),
                ammo: clampTo(v.ammo * 2, 0, 255),
                slots: v.slots.map((s) => clampTo(s + s * -3, -128, 127)),
                big: clampTo(v.big + v.big * 4294967295, 0, 4294967295),
            });
        });
        q.fill(Counters, 'ammo', 255);
        q.clamp(Counters, 'hp', -5, 5);
        for (const e of handles) expect(world.get(e, Counters)).toMatchObject({ ammo: 255 });
        for (const e of handles) expect(Math.abs(world.get(e, Counters, 'hp'))).toBeLessThanOrEqual(5);
    });

    test('an unsigned countdown stops at 0: each entity is returned once, by the call that reaches 0', async () => {
        const world = await newWorld();
        const handles = world.spawnMany(6, Counters.columns({ timer: [0, 1, 2, 3, 4, 5] }));
        const q = world.query({ all: [Counters] });
        const seen: number[][] = [];
        for (let call = 0; call < 7; call++) seen.push([...q.countdown(Counters, 'timer', 2)]);
        expect(seen).toEqual([[handles[1], handles[2]], [handles[3], handles[4]], [handles[5]], [], [], [], []]);
        for (const e of handles) expect(world.get(e, Counters, 'timer')).toBe(0);
    });

    test('integer kernels mark what they write as float kernels do', async () => {
        const world = await newWorld();
        const ByValue = component('CountersByValue', { ammo: 'u8' }, { changeDetection: 'value' });
        const handles = world.spawnMany(100, Counters, ByValue.columns({ ammo: Array.from({ length: 100 }, (_, i) => (i % 2 ? 255 : 0)) }));
        const sub = world.subscribe({ changed: [Counters] });
        const byValue = world.subscribe({ changed: [ByValue] });
        sub.drain();
        byValue.drain();
        world.query({ all: [Counters] }).offset(Counters, 'ammo', 1);
        expect(sorted(sub.drain().entities)).toEqual(sorted(handles));
        expect(sub.drain().empty).toBe(true);
        // By value: a row saturated where it was (255 + 1) did not change.
        world.query({ all: [ByValue] }).offset(ByValue, 'ammo', 1);
        expect(sorted(byValue.drain().entities)).toEqual(sorted(handles.filter((_, i) => i % 2 === 0)));
    });
});

describe('filtered runs', () => {
    test('a changed-filtered kernel touches the dirty rows only, and marks them for its next run', async () => {
        const { world, handles } = await bodies();
        const changed = world.query({ changed: [Body] });
        changed.entities(); // consume the set() calls of the setup
        const dirty = [handles[3]!, handles[400]!, handles[699]!];
        for (const e of dirty) world.set(e, Body, 'x', 100);
        changed.offset(Body, 'x', 1);
        handles.forEach((e, i) => expect(world.get(e, Body, 'x')).toBe(dirty.includes(e) ? 101 : initial(i).x));
        // Its own writes are newer than its run: the next run sees those rows again.
        changed.offset(Body, 'x', 1);
        for (const e of dirty) expect(world.get(e, Body, 'x')).toBe(102);
        expect(sorted(changed.entities())).toEqual(sorted(dirty));
        expect(changed.entities()).toHaveLength(0);
    });

    test('a kernel is one run of a consumer: it consumes what it visited', async () => {
        const { world, handles } = await bodies(20);
        const added = world.query({ added: [Body] });
        added.fill(Body, 'w', 9); // the first run sees every entity as added
        for (const e of handles) expect(world.get(e, Body, 'w')).toBe(9);
        const late = world.spawn(Body);
        added.fill(Body, 'w', 7);
        expect(world.get(late, Body, 'w')).toBe(7);
        expect(world.get(handles[0]!, Body, 'w')).toBe(9);
        expect(added.entities()).toHaveLength(0);
    });

    test('countdown on a filtered run reports crossings among visited rows only', async () => {
        const { world, handles } = await bodies(50);
        const changed = world.query({ changed: [Body] });
        changed.entities();
        world.set(handles[1]!, Body, 'x', 1); // crosses
        world.set(handles[2]!, Body, 'x', 5); // does not
        // handles[9] has x = 1 too, but is not dirty: untouched, not reported.
        expect(initial(9).x).toBe(1);
        expect([...changed.countdown(Body, 'x', 2)]).toEqual([handles[1]!]);
        expect(world.get(handles[9]!, Body, 'x')).toBe(1);
        expect(world.get(handles[2]!, Body, 'x')).toBe(3);
    });
});

describe('change marking', () => {
    test('a kernel marks every row it writes: a changed subscription sees each once', async () => {
        const { world, handles, strangers } = await bodies();
        const sub = world.subscribe({ changed: [Body] });
        const others = world.subscribe({ changed: [Other] });
        sub.drain();
        world.query({ all: [Body] }).scale(Body, 'x', 2);
        world.query({ all: [Body] }).offset(Body, 'd', 2);
        expect(sorted(sub.drain().entities)).toEqual(sorted(handles));
        expect(sub.drain().empty).toBe(true);
        expect(others.drain().empty).toBe(true);
        // A filtered subset: only those rows are marked.
        const some = world.query({ all: [Body, Mark] });
        for (const e of handles.subarray(0, 5)) world.add(e, Mark);
        some.fill(Body, 'v', 1);
        expect(sorted(sub.drain().entities)).toEqual(sorted(handles.subarray(0, 5)));
        expect(strangers.length).toBe(10);
    });
});

describe('errors: nothing written, nothing consumed', () => {
    test('integer operands must be values of the field type: BAD_VALUE naming them, nothing written', async () => {
        const { world, handles, all } = await bodies(30);
        const before = snapshot(world, [...handles], [Body]);
        const error = expectError(() => all.offset(Body, 'n', 1.5), 'BAD_VALUE', {
            operation: 'query.offset',
            component: 'Body',
            field: 'n',
        });
        expect(error.message).toContain('value 1.5');
        expectError(() => all.offset(Body, 'b', -1), 'BAD_VALUE', { field: 'b' }); // u8: use countdown
        expectError(() => all.fill(Body, 'b', 256), 'BAD_VALUE', { field: 'b' });
        expectError(() => all.scale(Body, 'n', 0.5), 'BAD_VALUE');
        expectError(() => all.countdown(Body, 'n', NaN), 'BAD_VALUE');
        expectError(() => all.fill(Body, 'n', Infinity), 'BAD_VALUE');
        const bounds = expectError(() => all.clamp(Body, 'b', -1, 10), 'BAD_VALUE', { operation: 'query.clamp' });
        expect(bounds.message).toContain('min -1');
        // @ts-expect-error: the source is an integer field, the target f32 (also refused at run time)
        const mixed = expectError(() => all.addScaled(Body, 'x', Body, 'n', 1), 'BAD_FIELD_TYPE', { operation: 'query.addScaled' });
        // Says that the two types differ, and which they are (not that the type is unsupported).
        expect(mixed.message).toContain('Body.n is i32 and Body.x is f32');
        expect(snapshot(world, [...handles], [Body])).toEqual(before);
    });

    test('unknown fields, tags, components outside the query terms', async () => {
        const { world, handles, all } = await bodies(30);
        const before = snapshot(world, [...handles], [Body]);
        // @ts-expect-error: no such field
        expectError(() => all.fill(Body, 'z', 1), 'UNKNOWN_FIELD', { component: 'Body', field: 'z' });
        // @ts-expect-error: a tag has no fields
        expectError(() => all.fill(Mark, 'x', 1), 'TAG_HAS_NO_DATA', { component: 'Mark' });
        const outside = expectError(() => world.query({ all: [Other] }).fill(Body, 'x', 1), 'MISSING_COMPONENT', {
            component: 'Body',
            entity: undefined,
        });
        // About the query's terms, not an entity (no entity is at fault).
        expect(outside.message).toContain("Body must be among the query's all terms");
        expect(outside.message).not.toContain('the entity does not have');
        expectError(() => world.query({ any: [Body] }).fill(Body, 'x', 1), 'MISSING_COMPONENT');
        const source = expectError(() => all.addScaled(Body, 'x', Other, 's', 1), 'MISSING_COMPONENT');
        expect(source.message).toContain('Body and Other');
        expect(snapshot(world, [...handles], [Body])).toEqual(before);
    });

    test('addScaled needs the same type and length; clamp needs lo <= hi; f32 operands in range', async () => {
        const { world, handles, all } = await bodies(30);
        const changed = world.query({ changed: [Body] });
        changed.entities();
        world.set(handles[0]!, Body, 'w', 3); // a pending change that failed kernels must not consume
        const before = snapshot(world, [...handles], [Body]);
        // @ts-expect-error: the source's spec differs from the target's (also refused at run time)
        expectError(() => changed.addScaled(Body, 'x', Body, 'd', 1), 'BAD_FIELD_TYPE');
        // @ts-expect-error: the source's spec differs from the target's (also refused at run time)
        expectError(() => changed.addScaled(Body, 'x', Body, 'arr', 1), 'BAD_SIZE');
        // @ts-expect-error: the source's spec differs from the target's (also refused at run time)
        expectError(() => changed.addScaled(Body, 'darr', Body, 'd', 1), 'BAD_SIZE');
        expectError(() => changed.clamp(Body, 'x', 2, 1), 'INVALID_ARGUMENT');
        expectError(() => changed.clamp(Body, 'x', NaN, 1), 'INVALID_ARGUMENT');
        expectError(() => changed.clamp(Body, 'd', 0, NaN), 'INVALID_ARGUMENT');
        expectError(() => changed.fill(Body, 'x', 1e39), 'BAD_VALUE');
        expectError(() => changed.clamp(Body, 'arr', -1e39, 0), 'BAD_VALUE');
        expectError(() => changed.offset(Body, 'x', '1' as never), 'BAD_VALUE', { operation: 'query.offset' });
        expect(snapshot(world, [...handles], [Body])).toEqual(before);
        expect([...changed.entities()]).toEqual([handles[0]!]);
        // Not f32: f64 takes it, and f32 takes infinities.
        all.fill(Body, 'd', 1e39);
        all.fill(Body, 'x', Infinity);
        expect(world.get(handles[1]!, Body)).toMatchObject({ d: 1e39, x: Infinity });
    });

    test('not while an iteration of the same query is live', async () => {
        const { all } = await bodies(5);
        for (const _ of all) expectError(() => all.fill(Body, 'x', 1), 'QUERY_IN_USE', { operation: 'query.fill' });
    });

    test('not on a closed query or in a destroyed world', async () => {
        const { world } = await bodies(5);
        const q = world.query({ all: [Body] });
        q.close();
        expectError(() => q.fill(Body, 'x', 1), 'DESTROYED');
        const q2 = world.query({ all: [Body] });
        world.destroy();
        expectError(() => q2.offset(Body, 'x', 1), 'DESTROYED');
    });
});
