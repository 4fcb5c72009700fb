// Black-box contract tests for everything that takes BYTES from outside: restoring snapshots,
// applying deltas, the session messages (ReplicationServer / ReplicationClient / Connection over
// an in-memory transport) and loading the module; plus the memory and lifetime rules (views,
// what detaches them, debug mode). Written from README.md and dist/*.d.ts only.
//
// The contract every test checks (README "Errors": "a failed call leaves the world exactly as it
// was (its snapshot is the same bytes)"): a call that takes bytes either succeeds and the
// receiving world equals the source, or throws a TesseraError naming the operation and leaves the
// receiving world as it was: the same snapshot bytes and hash, validate() passes, the same
// replicaTick and the same next spawned handle. A "twin" receives only the good bytes; the fuzzed
// world must end byte-identical to it.
import fc from 'fast-check';
import { readFileSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';

import {
    ChildOf,
    component,
    init,
    MESSAGE,
    relation,
    ReplicationClient,
    ReplicationServer,
    tag,
    TesseraError,
    type Component,
    type Entity,
    type TesseraModule,
    type World,
    type WorldOptions,
} from '../../dist/index.js';
import { expectError, rng, sorted } from './support.js';
import { MODULE_MEMORY } from '../../dist/abi.js';

// ---------------------------------------------------------------------------------------------
// Definitions: every field type, arrays, tags, sparse data and tags, relations with and without
// data, the built-in hierarchy, and a component that does not replicate.

const AllTypes = component('CBAll', {
    a: 'f32',
    b: 'f64',
    c: 'i8',
    d: 'u8',
    e: 'i16',
    f: 'u16',
    g: 'i32',
    h: 'u32',
    v: ['f32', 3],
    w: ['i16', 2],
});
const Small = component('CBSmall', { x: 'i32' });
const Flag = tag('CBFlag');
const SparseData = component('CBSparse', { s: 'f64', k: ['u8', 2] }, { storage: 'sparse' });
const SparseTag = tag('CBSparseTag', { storage: 'sparse' });
const Likes = relation('CBLikes', { amount: 'f32', n: 'u16' });
const Knows = relation('CBKnows');
const Local = component('CBLocal', { l: 'u8' }, { replicate: false });

const SPECIAL: Record<string, readonly number[]> = {
    f32: [0, -0, 1.5, -2.25, 3.4028234663852886e38, -3.4028234663852886e38, 1.401298464324817e-45, NaN, Infinity, -Infinity],
    f64: [0, -0, Math.PI, -1e308, 5e-324, Number.MAX_VALUE, NaN, Infinity, -Infinity, 2 ** 53],
    i8: [-128, 127, 0, -1, 5],
    u8: [0, 255, 1, 128],
    i16: [-32768, 32767, 0, -7],
    u16: [0, 65535, 300],
    i32: [-2147483648, 2147483647, 0, -1],
    u32: [0, 4294967295, 2147483648, 1],
};

function pick<T>(below: (n: number) => number, list: readonly T[]): T {
    return list[below(list.length)]!;
}

function allTypesValues(below: (n: number) => number) {
    return {
        a: pick(below, SPECIAL.f32!),
        b: pick(below, SPECIAL.f64!),
        c: pick(below, SPECIAL.i8!),
        d: pick(below, SPECIAL.u8!),
        e: pick(below, SPECIAL.i16!),
        f: pick(below, SPECIAL.u16!),
        g: pick(below, SPECIAL.i32!),
        h: pick(below, SPECIAL.u32!),
        v: [pick(below, SPECIAL.f32!), pick(below, SPECIAL.f32!), pick(below, SPECIAL.f32!)],
        w: [pick(below, SPECIAL.i16!), pick(below, SPECIAL.i16!)],
    };
}

/**
 * `steps` random operations on `world`: spawns (always with Small, so every entity replicates),
 * spawnMany with columns, despawns (ChildOf cascades), despawnMany, adds and removes of table,
 * tag, sparse and sparse-tag components, values of every field type, pairs with data, pairs
 * without, parents and reordered children. Every handle ever spawned goes to `all`.
 */
function randomOps(world: World, below: (n: number) => number, steps: number, all: Entity[]): void {
    const live = () => all.filter((e) => world.isAlive(e));
    for (let step = 0; step < steps; step++) {
        const alive = live();
        const e = alive.length ? pick(below, alive) : 0;
        const f = alive.length ? pick(below, alive) : 0;
        const op = alive.length < 6 ? 0 : below(16);
        switch (op) {
            case 0:
            case 1: {
                const items: Parameters<World['spawn']> = [Small({ x: step })];
                if (below(2)) items.push(AllTypes(allTypesValues(below)));
                if (below(3) === 0) items.push(Flag);
                if (below(3) === 0) items.push(SparseData({ s: pick(below, SPECIAL.f64!), k: [below(256), 255] }));
                if (below(3) === 0) items.push(SparseTag);
                if (alive.length && below(3) === 0) items.push(Likes(f, { amount: pick(below, SPECIAL.f32!), n: below(65536) }));
                if (alive.length && below(4) === 0) items.push(ChildOf(f));
                all.push(world.spawn(...items));
                break;
            }
            case 2: {
                const n = 1 + below(5);
                const xs = Array.from({ length: n }, () => below(1000) - 500);
                all.push(...world.spawnMany(n, Small.columns({ x: xs }), AllTypes({ g: -5, v: [1, 2, 3] })));
                break;
            }
            case 3:
                world.despawn(e);
                break;
            case 4: {
                const two = [...new Set([e, f])];
                world.despawnMany(two);
                break;
            }
            case 5:
                world.add(e, pick(below, [Flag, SparseTag]));
                break;
            case 6:
                world.remove(e, pick(below, [Flag, SparseTag, SparseData, AllTypes]));
                break;
            case 7:
                world.add(e, AllTypes(allTypesValues(below)));
                break;
            case 8:
                if (world.has(e, AllTypes)) world.set(e, AllTypes, allTypesValues(below));
                else world.add(e, SparseData({ s: pick(below, SPECIAL.f64!), k: [1, below(256)] }));
                break;
            case 9:
                if (world.has(e, SparseData)) world.set(e, SparseData, 's', pick(below, SPECIAL.f64!));
                else world.set(e, Small, 'x', pick(below, SPECIAL.i32!));
                break;
            case 10:
                world.addPair(e, Likes, f, { amount: pick(below, SPECIAL.f32!), n: below(65536) });
                break;
            case 11:
                if (world.hasPair(e, Likes, f)) world.setPair(e, Likes, f, 'n', below(65536));
                else world.addPair(e, Knows, f);
                break;
            case 12:
                world.removePair(e, pick(below, [Likes, Knows]) as typeof Likes, f);
                break;
            case 13:
                try {
                    world.setParent(e, f);
                } catch (error) {
                    expect((error as TesseraError).code).toBe('CYCLE');
                }
                break;
            case 14: {
                const parent = world.parentOf(e);
                if (parent !== undefined) world.setParent(e, parent, world.childrenOf(parent)[0]);
                else world.setParent(e, undefined);
                break;
            }
            default:
                world.set(e, Small, { x: step });
        }
    }
}

/** Everything observable about the handles: components, values, pairs with data, child order. */
function observe(world: World, handles: readonly Entity[]): unknown {
    const q = world.query({});
    const every = sorted(q.entities());
    q.close();
    return {
        every,
        handles: handles.map((e) => {
            if (!world.isAlive(e)) return [e, 'dead'];
            const o: Record<string, unknown> = {};
            for (const C of [AllTypes, Small, SparseData] as Component<any>[]) if (world.has(e, C)) o[C.name] = world.get(e, C);
            o.flag = world.has(e, Flag);
            o.sparseTag = world.has(e, SparseTag);
            o.likes = world.targets(e, Likes).map((t) => [t, world.getPair(e, Likes, t)]);
            o.knows = world.targets(e, Knows);
            o.parent = world.parentOf(e);
            o.children = world.childrenOf(e);
            return [e, o];
        }),
    };
}

function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
    if (a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
    return true;
}

/**
 * CRC-32 (IEEE, zlib's), for bytes that stay checksummed while being wrong: a snapshot is "versioned,
 * little-endian, CRC-32 checked" with a 16-byte header (README "Snapshots"); its CRC sits at 12 over
 * the body after the header, its length at 8. A delta's CRC sits at 8 over the bytes after 12 (seen
 * on the encoder's output). Fixing the CRC after a mutation gets the mutation past the checksum, to
 * the parser.
 */
const CRC_TABLE = (() => {
    const table = new Uint32Array(256);
    for (let n = 0; n < 256; n++) {
        let c = n;
        for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
        table[n] = c >>> 0;
    }
    return table;
})();
function crc32(bytes: Uint8Array): number {
    let c = 0xffffffff;
    for (let i = 0; i < bytes.length; i++) c = CRC_TABLE[(c ^ bytes[i]!) & 0xff]! ^ (c >>> 8);
    return (c ^ 0xffffffff) >>> 0;
}
function fixSnapshot(bytes: Uint8Array): Uint8Array {
    if (bytes.length >= 16) {
        const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
        view.setUint32(8, bytes.length, true);
        view.setUint32(12, crc32(bytes.subarray(16)), true);
    }
    return bytes;
}
function fixDelta(bytes: Uint8Array): Uint8Array {
    if (bytes.length >= 12) new DataView(bytes.buffer, bytes.byteOffset, bytes.length).setUint32(8, crc32(bytes.subarray(12)), true);
    return bytes;
}

/** A mutation of a body past its header: a cut, bytes replaced, a range deleted, bytes inserted, a range repeated. */
type Mutation =
    | { kind: 'cut'; at: number }
    | { kind: 'set'; edits: [number, number][] }
    | { kind: 'delete'; at: number; length: number }
    | { kind: 'insert'; at: number; bytes: number[] }
    | { kind: 'repeat'; at: number; length: number };
const mutation: fc.Arbitrary<Mutation> = fc.oneof(
    fc.record({ kind: fc.constant('cut' as const), at: fc.nat() }),
    fc.record({
        kind: fc.constant('set' as const),
        edits: fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 4 }),
    }),
    fc.record({ kind: fc.constant('delete' as const), at: fc.nat(), length: fc.integer({ min: 1, max: 12 }) }),
    fc.record({
        kind: fc.constant('insert' as const),
        at: fc.nat(),
        bytes: fc.array(fc.integer({ min: 0, max: 255 }), { minLength: 1, maxLength: 6 }),
    }),
    fc.record({ kind: fc.constant('repeat' as const), at: fc.nat(), length: fc.integer({ min: 1, max: 24 }) }),
);
function mutate(bytes: Uint8Array, header: number, m: Mutation): Uint8Array {
    const body = bytes.length - header;
    const at = header + (m.kind === 'set' ? 0 : m.at % (body + 1));
    switch (m.kind) {
        case 'cut':
            return bytes.slice(0, at);
        case 'set': {
            const out = bytes.slice();
            for (const [where, value] of m.edits) out[header + (where % body)] = value;
            return out;
        }
        case 'delete':
            return Uint8Array.from([...bytes.subarray(0, at), ...bytes.subarray(at + m.length)]);
        case 'insert':
            return Uint8Array.from([...bytes.subarray(0, at), ...m.bytes, ...bytes.subarray(at)]);
        case 'repeat':
            return Uint8Array.from([...bytes.subarray(0, at + m.length), ...bytes.subarray(at)]);
    }
}

/** The state a failed call must leave alone. */
interface Fingerprint {
    readonly bytes: Uint8Array;
    readonly hash: bigint;
    readonly replicaTick: number;
    readonly entityCount: number;
}

function fingerprint(world: World): Fingerprint {
    world.validate();
    return { bytes: world.snapshot(), hash: world.hash(), replicaTick: world.replicaTick, entityCount: world.stats().entityCount };
}

/** Cheap check after each failed call (hash, tick, validate); the bytes are compared with `full`. */
function expectUnchanged(world: World, before: Fingerprint, what: string, full = false): void {
    world.validate();
    expect(world.hash(), what).toBe(before.hash);
    expect(world.replicaTick, what).toBe(before.replicaTick);
    expect(world.stats().entityCount, what).toBe(before.entityCount);
    if (full) expect(bytesEqual(world.snapshot(), before.bytes), what).toBe(true);
}

/** Calls fn; returns undefined when it returned, the TesseraError when it threw one; fails on anything else. */
function attempt<T>(fn: () => T, what: string): { ok: true; value: T } | { ok: false; error: TesseraError } {
    try {
        return { ok: true, value: fn() };
    } catch (error) {
        if (!(error instanceof TesseraError)) {
            throw new Error(`${what}: threw a non-TesseraError: ${String(error)}${(error as Error)?.stack ?? ''}`);
        }
        return { ok: false, error };
    }
}

// ---------------------------------------------------------------------------------------------
// Worlds: one module (init()), destroyed after each test.

let module: TesseraModule;
const worlds: World[] = [];
function mk(options: WorldOptions = {}): World {
    const world = module.createWorld(options);
    worlds.push(world);
    return world;
}
afterEach(() => {
    for (const world of worlds.splice(0)) world.destroy();
});

/** A source world after a random history, its keyframe and a chain of deltas, each with what it must produce. */
interface Step {
    readonly bytes: Uint8Array;
    readonly tick: number;
    readonly keyframe: boolean;
    readonly handles: readonly Entity[];
    readonly expected: unknown;
}
interface Scenario {
    readonly source: World;
    readonly all: Entity[];
    readonly steps: Step[];
}

/** Builds a source and its chain: a keyframe, then `deltas` deltas, each acknowledged by a reference replica. */
function scenario(seed: number, ops = 120, deltas = 4, opsPerDelta = 25): Scenario {
    const source = mk({ minFreeIndices: 4 });
    const below = rng(seed);
    const all: Entity[] = [];
    randomOps(source, below, ops, all);
    const peer = source.replicator().peer();
    const ref = mk();
    const steps: Step[] = [];
    for (let k = 0; k <= deltas; k++) {
        if (k > 0) randomOps(source, below, opsPerDelta, all);
        const delta = peer.encode();
        const step = {
            bytes: delta.bytes.slice(),
            tick: delta.tick,
            keyframe: delta.keyframe,
            handles: all.slice(),
            expected: observe(source, all),
        };
        steps.push(step);
        expect(ref.applyDelta(step.bytes)).toBe(true);
        expect(observe(ref, step.handles)).toEqual(step.expected);
        peer.ack(ref.replicaTick);
    }
    return { source, all, steps };
}

/** A replica that applied steps[0..upTo). */
function replicaAt(s: Scenario, upTo: number, options: WorldOptions = {}): World {
    const world = mk(options);
    for (let k = 0; k < upTo; k++) expect(world.applyDelta(s.steps[k]!.bytes)).toBe(true);
    return world;
}

const DELTA_CODES = ['BAD_DELTA', 'SNAPSHOT_VERSION', 'DELTA_SCHEMA', 'DELTA_BASELINE'];
const SNAPSHOT_CODES = ['BAD_SNAPSHOT', 'SNAPSHOT_VERSION'];

beforeAll(async () => {
    module = await init();
});

// =============================================================================================
describe('snapshots: bytes from outside', () => {
    test('a random world with every field type round-trips: same bytes, hash, entities, next handles', () => {
        for (const seed of [11, 12, 13]) {
            const world = mk({ minFreeIndices: 4 });
            const all: Entity[] = [];
            randomOps(world, rng(seed), 300, all);
            const bytes = world.snapshot();
            const copy = mk({ minFreeIndices: 4, snapshot: bytes });
            copy.validate();
            expect(bytesEqual(copy.snapshot(), bytes)).toBe(true);
            expect(copy.hash()).toBe(world.hash());
            expect(observe(copy, all)).toEqual(observe(world, all));
            for (let i = 0; i < 8; i++) expect(copy.spawn(Small)).toBe(world.spawn(Small));
        }
    });

    test('-0 and NaN survive a snapshot bit for bit (the restored snapshot is the same bytes)', () => {
        const world = mk();
        const e = world.spawn(AllTypes({ a: -0, b: NaN, v: [NaN, -0, Infinity] }), SparseData({ s: -0 }));
        const copy = mk({ snapshot: world.snapshot() });
        expect(Object.is(copy.get(e, AllTypes, 'a'), -0)).toBe(true);
        expect(copy.get(e, AllTypes, 'b')).toBeNaN();
        expect(Object.is(copy.get(e, SparseData, 's'), -0)).toBe(true);
        expect(bytesEqual(copy.snapshot(), world.snapshot())).toBe(true);
    });

    test('truncated at every length: BAD_SNAPSHOT from createWorld, no world made, memory not leaked', () => {
        const world = mk({ minFreeIndices: 4 });
        randomOps(world, rng(21), 150, []);
        const bytes = world.snapshot();
        expect(bytes.length).toBeGreaterThan(500);
        const grown = module.memory.buffer.byteLength;
        for (let n = 0; n < bytes.length; n++) {
            const result = attempt(() => mk({ snapshot: bytes.subarray(0, n) }), `cut ${n}`);
            expect(result.ok, `a snapshot cut to ${n} of ${bytes.length} bytes was accepted`).toBe(false);
            if (!result.ok) {
                expect(SNAPSHOT_CODES, `cut ${n}: ${result.error.message}`).toContain(result.error.code);
                expect(result.error.operation).toBe('createWorld');
            }
        }
        // Thousands of refused restores allocate nothing that stays.
        expect(module.memory.buffer.byteLength - grown).toBeLessThanOrEqual(4 << 20);
        expect(bytesEqual(mk({ minFreeIndices: 4, snapshot: bytes }).snapshot(), bytes)).toBe(true);
    });

    test('random bytes replaced (fast-check): refused with BAD_SNAPSHOT / SNAPSHOT_VERSION, or the same world', () => {
        const world = mk({ minFreeIndices: 4 });
        randomOps(world, rng(22), 150, []);
        const bytes = world.snapshot();
        fc.assert(
            fc.property(
                fc.array(fc.tuple(fc.nat({ max: bytes.length - 1 }), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 6 }),
                (edits) => {
                    const bad = bytes.slice();
                    for (const [at, value] of edits) bad[at] = value;
                    const result = attempt(() => mk({ minFreeIndices: 4, snapshot: bad }), 'edited');
                    if (result.ok) {
                        // Only an edit that changes nothing may be accepted: then it is the same world.
                        result.value.validate();
                        expect(bytesEqual(result.value.snapshot(), bytes)).toBe(true);
                    } else {
                        expect(SNAPSHOT_CODES, result.error.message).toContain(result.error.code);
                        expect(result.error.operation).toBe('createWorld');
                    }
                },
            ),
            { seed: 0x5eed01, numRuns: 400 },
        );
    });

    test('bytes spliced from two worlds, appended garbage, another format: refused or one of the two worlds', () => {
        const a = mk({ minFreeIndices: 4 });
        const b = mk({ minFreeIndices: 4 });
        randomOps(a, rng(23), 100, []);
        randomOps(b, rng(24), 100, []);
        const A = a.snapshot();
        const B = b.snapshot();
        fc.assert(
            fc.property(fc.nat({ max: A.length }), fc.nat({ max: B.length }), (cutA, cutB) => {
                const spliced = new Uint8Array(cutA + (B.length - cutB));
                spliced.set(A.subarray(0, cutA), 0);
                spliced.set(B.subarray(cutB), cutA);
                const result = attempt(() => mk({ minFreeIndices: 4, snapshot: spliced }), 'spliced');
                if (result.ok) {
                    const got = result.value.snapshot();
                    expect(bytesEqual(got, A) || bytesEqual(got, B), `splice ${cutA}/${cutB} made a third world`).toBe(true);
                } else expect(SNAPSHOT_CODES, result.error.message).toContain(result.error.code);
            }),
            { seed: 0x5eed02, numRuns: 300 },
        );
        // Trailing bytes after a whole snapshot are not part of it.
        const longer = new Uint8Array(A.length + 7);
        longer.set(A);
        const result = attempt(() => mk({ minFreeIndices: 4, snapshot: longer }), 'longer');
        if (result.ok) expect(bytesEqual(result.value.snapshot(), A)).toBe(true);
        else expect(result.error.code).toBe('BAD_SNAPSHOT');
        // A delta is not a snapshot.
        const source = mk();
        source.spawn(Small({ x: 1 }));
        expectError(() => mk({ snapshot: source.replicator().encode().bytes.slice() }), 'BAD_SNAPSHOT', { operation: 'createWorld' });
    });

    test('mutations that keep the CRC and length right (fast-check): BAD_SNAPSHOT, or a valid world that round-trips; never a trap', () => {
        const world = mk({ minFreeIndices: 4 });
        randomOps(world, rng(27), 150, []);
        const bytes = world.snapshot();
        let accepted = 0;
        fc.assert(
            fc.property(mutation, (m) => {
                const bad = fixSnapshot(mutate(bytes, 16, m));
                const result = attempt(() => mk({ minFreeIndices: 4, snapshot: bad }), `mutation ${JSON.stringify(m)}`);
                if (result.ok) {
                    // A mutation the format cannot tell from a real snapshot: a world all the same, consistent and restorable.
                    accepted++;
                    result.value.validate();
                    const again = result.value.snapshot();
                    expect(bytesEqual(mk({ minFreeIndices: 4, snapshot: again }).snapshot(), again)).toBe(true);
                } else {
                    expect(SNAPSHOT_CODES, result.error.message).toContain(result.error.code);
                    expect(result.error.operation).toBe('createWorld');
                }
            }),
            { seed: 0x5eed08, numRuns: 500 },
        );
        expect(accepted).toBeLessThan(500); // the parser refuses most of them itself
    });

    test('snapshot bytes given as a subarray at an offset, or a Node Buffer, restore the same world', () => {
        const world = mk({ minFreeIndices: 4 });
        randomOps(world, rng(25), 80, []);
        const bytes = world.snapshot();
        const padded = new Uint8Array(bytes.length + 13);
        padded.set(bytes, 13);
        expect(bytesEqual(mk({ minFreeIndices: 4, snapshot: padded.subarray(13) }).snapshot(), bytes)).toBe(true);
        const buffer = Buffer.from(bytes);
        expect(bytesEqual(mk({ minFreeIndices: 4, snapshot: buffer }).snapshot(), bytes)).toBe(true);
    });

    test('components used after a restore with another schema or storage: BAD_SCHEMA, the world unchanged', () => {
        const world = mk({ minFreeIndices: 4 });
        const all: Entity[] = [];
        randomOps(world, rng(26), 100, all);
        const e = all.find((x) => world.isAlive(x) && world.has(x, AllTypes))!;
        expect(e).toBeDefined();
        const restored = mk({ minFreeIndices: 4, snapshot: world.snapshot() });
        const before = fingerprint(restored);
        const impostors = [
            component('CBAll', { a: 'f64' }), // another type
            component('CBSmall', { x: 'u32' }), // same field, another type
            component('CBSmall', { x: 'i32', y: 'i32' }), // one more field
            component('CBSmall', { y: 'i32' }), // another field name
            component('CBSmall', { x: 'i32' }, { storage: 'sparse' }), // another storage
            component('CBFlag', { x: 'u8' }), // a tag given data
            tag('CBSparse', { storage: 'sparse' }), // data taken away
            tag('CBFlag', { storage: 'sparse' }), // a table tag made sparse
        ];
        for (const C of impostors) {
            const what = `${C.name} ${JSON.stringify(C.fields ?? null)}`;
            const r1 = attempt(() => restored.spawn(C), what);
            expect(r1.ok, `spawn of ${what} was accepted`).toBe(false);
            if (!r1.ok) expect(r1.error.code, what).toBe('BAD_SCHEMA');
            const r2 = attempt(() => restored.add(e, C), what);
            expect(r2.ok, `add of ${what} was accepted`).toBe(false);
            if (!r2.ok) expect(r2.error.code, what).toBe('BAD_SCHEMA');
            expectUnchanged(restored, before, what, true);
        }
        // A relation under a component's name, and a component under a relation's.
        const r3 = attempt(() => restored.addPair(e, relation('CBSmall'), e), 'relation CBSmall');
        expect(r3.ok).toBe(false);
        if (!r3.ok) expect(['BAD_SCHEMA', 'CYCLE']).toContain(r3.error.code);
        const r4 = attempt(() => restored.spawn(component('CBLikes', { amount: 'f32', n: 'u16' })), 'component CBLikes');
        expect(r4.ok, 'a component under the name of a relation was accepted').toBe(false);
        if (!r4.ok) expect(r4.error.code).toBe('BAD_SCHEMA');
        expectUnchanged(restored, before, 'after relations', true);
        // The right definitions still work.
        expect(restored.get(e, AllTypes)).toEqual(world.get(e, AllTypes));
    });
});

// =============================================================================================
describe('deltas: bytes from outside', () => {
    let s: Scenario;
    beforeAll(() => {
        // Built once for the describe (its worlds outlive afterEach: kept out of `worlds`).
        const keep = worlds.length;
        s = scenario(31, 150, 4, 30);
        kept.push(...worlds.splice(keep)); // not destroyed after the first test
    });
    const kept: World[] = [];
    afterAll(() => {
        for (const world of kept.splice(0)) world.destroy();
    });

    test('the chain applies: every step leaves the replica equal to the source at its tick; replay and late ones are no-ops', () => {
        const replica = mk();
        for (const step of s.steps) {
            expect(replica.applyDelta(step.bytes)).toBe(true);
            expect(replica.replicaTick).toBe(step.tick);
            replica.validate();
            expect(observe(replica, step.handles)).toEqual(step.expected);
            const before = fingerprint(replica);
            expect(replica.applyDelta(step.bytes)).toBe(false); // replayed
            expectUnchanged(replica, before, 'replayed', true);
        }
        const before = fingerprint(replica);
        for (const step of s.steps.slice(0, -1)) expect(replica.applyDelta(step.bytes)).toBe(false); // late
        expectUnchanged(replica, before, 'late', true);
    });

    test('a keyframe truncated at every length, applied to a fresh world: refused, the world untouched (registrations included)', () => {
        const fresh = mk();
        fresh.spawn(Local({ l: 1 })); // the replica's own entity
        const before = fingerprint(fresh);
        const kf = s.steps[0]!.bytes;
        for (let n = 0; n < kf.length; n++) {
            const r = attempt(() => fresh.applyDelta(kf.subarray(0, n)), `cut ${n}`);
            expect(r.ok, `a keyframe cut to ${n} of ${kf.length} was accepted`).toBe(false);
            if (!r.ok) {
                expect(DELTA_CODES, r.error.message).toContain(r.error.code);
                expect(r.error.operation).toBe('world.applyDelta');
            }
            expectUnchanged(fresh, before, `cut ${n}`, n % 97 === 0);
        }
        expectUnchanged(fresh, before, 'after all cuts', true);
        expect(fresh.applyDelta(kf)).toBe(true);
        expect(observe(fresh, s.steps[0]!.handles)).toEqual(observe(replicaAt(s, 1), s.steps[0]!.handles));
    });

    test('each delta of the chain truncated at every length: refused, the replica byte-identical to a twin that saw only good bytes', () => {
        for (let k = 1; k < s.steps.length; k++) {
            const fuzzed = replicaAt(s, k);
            const twin = replicaAt(s, k);
            const before = fingerprint(fuzzed);
            const d = s.steps[k]!.bytes;
            for (let n = 0; n < d.length; n++) {
                const r = attempt(() => fuzzed.applyDelta(d.subarray(0, n)), `delta ${k} cut ${n}`);
                expect(r.ok, `delta ${k} cut to ${n} of ${d.length} was accepted`).toBe(false);
                if (!r.ok) expect(DELTA_CODES, r.error.message).toContain(r.error.code);
                expectUnchanged(fuzzed, before, `delta ${k} cut ${n}`);
            }
            expectUnchanged(fuzzed, before, `delta ${k}`, true);
            expect(fuzzed.applyDelta(d)).toBe(true);
            expect(twin.applyDelta(d)).toBe(true);
            expect(bytesEqual(fuzzed.snapshot(), twin.snapshot())).toBe(true);
            expect(fuzzed.spawn(Small)).toBe(twin.spawn(Small));
        }
    });

    test('random bytes replaced in keyframes and deltas (fast-check): refused and unchanged, or exactly the source', () => {
        const replicas = s.steps.map((_, k) => replicaAt(s, k)); // replicas[k] can take step k
        const befores = replicas.map(fingerprint);
        fc.assert(
            fc.property(
                fc.nat({ max: s.steps.length - 1 }),
                fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 5 }),
                (k, edits) => {
                    const step = s.steps[k]!;
                    const bad = step.bytes.slice();
                    for (const [at, value] of edits) bad[at % bad.length] = value;
                    const replica = replicas[k]!;
                    const r = attempt(() => replica.applyDelta(bad), `step ${k}`);
                    if (r.ok && r.value) {
                        // Accepted: only if it brought exactly the source's state; then put the replica back.
                        replica.validate();
                        expect(observe(replica, step.handles)).toEqual(step.expected);
                        replicas[k] = replicaAt(s, k);
                    } else {
                        if (!r.ok) {
                            expect(DELTA_CODES, r.error.message).toContain(r.error.code);
                            expect(r.error.operation).toBe('world.applyDelta');
                        }
                        expectUnchanged(replica, befores[k]!, `step ${k} edited`);
                    }
                },
            ),
            { seed: 0x5eed03, numRuns: 500 },
        );
        for (let k = 0; k < replicas.length; k++) expectUnchanged(replicas[k]!, befores[k]!, `replica ${k}`, true);
    });

    test('bytes of two deltas spliced together (fast-check): refused and unchanged, or exactly the source', () => {
        const other = scenario(32, 150, 4, 30);
        const replicas = s.steps.map((_, k) => replicaAt(s, k));
        const befores = replicas.map(fingerprint);
        fc.assert(
            fc.property(
                fc.nat({ max: s.steps.length - 1 }),
                fc.nat({ max: other.steps.length - 1 }),
                fc.nat(),
                fc.nat(),
                (k, j, c1, c2) => {
                    const mine = s.steps[k]!.bytes;
                    const theirs = other.steps[j]!.bytes;
                    const cutA = c1 % (mine.length + 1);
                    const cutB = c2 % (theirs.length + 1);
                    const spliced = new Uint8Array(cutA + theirs.length - cutB);
                    spliced.set(mine.subarray(0, cutA), 0);
                    spliced.set(theirs.subarray(cutB), cutA);
                    if (bytesEqual(spliced, mine)) return;
                    const replica = replicas[k]!;
                    const r = attempt(() => replica.applyDelta(spliced), `splice ${k}/${j} at ${cutA}/${cutB}`);
                    if (r.ok && r.value) {
                        // Accepted: it must be one of the two sources' states (a keyframe of the other world is).
                        replica.validate();
                        const mineOk = JSON.stringify(observe(replica, s.steps[k]!.handles)) === JSON.stringify(s.steps[k]!.expected);
                        const theirsOk =
                            JSON.stringify(observe(replica, other.steps[j]!.handles)) === JSON.stringify(other.steps[j]!.expected);
                        expect(mineOk || theirsOk, `splice ${k}/${j} at ${cutA}/${cutB} made a third world`).toBe(true);
                        replicas[k] = replicaAt(s, k);
                        befores[k] = fingerprint(replicas[k]!);
                    } else {
                        if (!r.ok) expect(DELTA_CODES, r.error.message).toContain(r.error.code);
                        expectUnchanged(replica, befores[k]!, 'spliced');
                    }
                },
            ),
            { seed: 0x5eed04, numRuns: 300 },
        );
    });

    test('mutations that keep the CRC right (fast-check): refused with the world unchanged (no partial apply), or a valid world', () => {
        for (const debug of [false, true]) {
            const replicas = s.steps.map((_, k) => replicaAt(s, k, { debug }));
            const befores = replicas.map(fingerprint);
            let refused = 0;
            fc.assert(
                fc.property(fc.nat({ max: s.steps.length - 1 }), mutation, (k, m) => {
                    const bad = fixDelta(mutate(s.steps[k]!.bytes, 12, m));
                    const replica = replicas[k]!;
                    const r = attempt(() => replica.applyDelta(bad), `step ${k} ${JSON.stringify(m)}`);
                    if (r.ok) {
                        replica.validate();
                        if (r.value) {
                            replicas[k] = replicaAt(s, k, { debug });
                            befores[k] = fingerprint(replicas[k]!);
                        } else expectUnchanged(replica, befores[k]!, 'returned false');
                    } else {
                        refused++;
                        expect(DELTA_CODES, r.error.message).toContain(r.error.code);
                        expect(r.error.operation).toBe('world.applyDelta');
                        expectUnchanged(replica, befores[k]!, `refused ${r.error.code} ${JSON.stringify(m)}`);
                    }
                }),
                { seed: debug ? 0x5eed09 : 0x5eed0a, numRuns: 600 },
            );
            expect(refused).toBeGreaterThan(300);
            for (let k = 0; k < replicas.length; k++) expectUnchanged(replicas[k]!, befores[k]!, `replica ${k}`, true);
        }
    });

    test('a replica that edited replicated entities itself: a delta touching them is refused whole (nothing of it applied), a keyframe heals', () => {
        for (const edit of ['despawn', 'remove', 'pair'] as const) {
            const source = mk();
            const e = Array.from({ length: 8 }, (_, i) => source.spawn(Small({ x: i }), AllTypes({ g: i })));
            source.addPair(e[0]!, Likes, e[2]!, { amount: 0.5, n: 2 }); // Likes is registered: it replicates
            const peer = source.replicator().peer();
            const replica = mk();
            replica.applyDelta(peer.encode().bytes);
            peer.ack(replica.replicaTick);
            if (edit === 'despawn') replica.despawn(e[5]!);
            else if (edit === 'remove') replica.remove(e[5]!, AllTypes);
            else replica.addPair(e[5]!, Likes, e[6]!, { amount: 1, n: 1 });
            const before = fingerprint(replica);
            // The delta changes entities before and after the edited one.
            source.set(e[1]!, Small, { x: 100 });
            source.set(e[5]!, AllTypes, { g: 55 });
            source.despawn(e[7]!);
            source.spawn(Small({ x: 9 }));
            const delta = peer.encode();
            const r = attempt(() => replica.applyDelta(delta.bytes), edit);
            if (r.ok) {
                // Applied: then exactly the source for what the delta carried (a pair the replica added
                // itself is not the source's: like its own components, it may stay until a keyframe).
                replica.validate();
                for (const x of [e[1]!, e[7]!]) expect(observe(replica, [x]), edit).toEqual(observe(source, [x]));
                expect(replica.get(e[5]!, AllTypes, 'g')).toBe(55);
            } else {
                expect(DELTA_CODES).toContain(r.error.code);
                expectUnchanged(replica, before, edit, true);
                expect(replica.get(e[1]!, Small, 'x')).toBe(1); // nothing of the delta was applied
            }
            peer.reset();
            expect(replica.applyDelta(peer.encode().bytes)).toBe(true);
            const all = sorted(
                (() => {
                    const q = source.query({});
                    const x = q.entities();
                    q.close();
                    return x;
                })(),
            );
            expect(observe(replica, all), `${edit}: the keyframe did not heal`).toEqual(observe(source, all));
        }
    });

    test('a keyframe after a long gap removes what the source removed: entities, components, sparse parts, pairs, order', () => {
        const replica = replicaAt(s, 1);
        const source = s.source;
        const lastHandles = s.all.slice();
        // The source moves on; the replica misses it all and gets a keyframe.
        const below = rng(33);
        const all = s.all.slice();
        const peer = source.replicator().peer();
        randomOps(source, below, 200, all);
        const alive = all.filter((x) => source.isAlive(x));
        for (const x of alive.slice(0, 10)) source.remove(x, AllTypes, SparseData, SparseTag, Flag);
        const keyframe = peer.encode();
        expect(keyframe.keyframe).toBe(true);
        expect(replica.applyDelta(keyframe.bytes)).toBe(true);
        replica.validate();
        expect(observe(replica, all)).toEqual(observe(source, all));
        expect(lastHandles.length).toBeGreaterThan(0);
        peer.close();
    });

    test('out of order: a delta whose baseline the replica lacks is DELTA_BASELINE and changes nothing; the keyframe heals', () => {
        for (let k = 0; k < s.steps.length - 2; k++) {
            const replica = replicaAt(s, k);
            const before = fingerprint(replica);
            for (let j = k + 1; j < s.steps.length; j++) {
                if (s.steps[j]!.keyframe) continue;
                const r = attempt(() => replica.applyDelta(s.steps[j]!.bytes), `step ${j} on replica at ${k}`);
                expect(r.ok, `step ${j} (baseline beyond the replica at ${k}) was accepted`).toBe(false);
                if (!r.ok) expect(r.error.code).toBe('DELTA_BASELINE');
                expectUnchanged(replica, before, `step ${j} at ${k}`, true);
            }
        }
    });

    test('deltas encoded from an old baseline, delivered lost, duplicated and shuffled (fast-check): each apply exact or a no-op', () => {
        fc.assert(
            fc.property(
                fc.integer({ min: 1, max: 1 << 30 }),
                fc.array(fc.nat({ max: 99 }), { minLength: 12, maxLength: 12 }),
                (seed, order) => {
                    const source = mk();
                    const below = rng(seed);
                    const all: Entity[] = [];
                    randomOps(source, below, 40, all);
                    const replicator = source.replicator({ history: 8 });
                    const replica = mk();
                    // Encodes against baselines the replica acknowledged at random earlier points.
                    const sent: Step[] = [];
                    const acked: number[] = [0];
                    for (let i = 0; i < 12; i++) {
                        randomOps(source, below, 6, all);
                        const baseline = pick(below, acked);
                        const delta = replicator.encode(baseline);
                        sent.push({
                            bytes: delta.bytes.slice(),
                            tick: delta.tick,
                            keyframe: delta.keyframe,
                            handles: all.slice(),
                            expected: observe(source, all),
                        });
                        // Deliver a random earlier message (lost ones are never picked, some twice).
                        const m = sent[order[i]! % sent.length]!;
                        const before = fingerprint(replica);
                        const r = attempt(() => replica.applyDelta(m.bytes), `message ${i}`);
                        if (r.ok && r.value) {
                            replica.validate();
                            expect(replica.replicaTick).toBe(m.tick);
                            expect(observe(replica, m.handles)).toEqual(m.expected);
                            acked.push(m.tick);
                        } else {
                            if (!r.ok) expect(r.error.code).toBe('DELTA_BASELINE');
                            else expect(m.tick).toBeLessThanOrEqual(before.replicaTick);
                            expectUnchanged(replica, before, `message ${i}`);
                        }
                    }
                    replicator.close();
                },
            ),
            { seed: 0x5eed05, numRuns: 15 },
        );
    });

    test('a keyframe into a world with other components registered first (other ids): matched by name, equal to the source', () => {
        const replica = mk();
        const Other = component('CBOther', { q: 'u8' });
        replica.spawn(Other({ q: 3 }));
        replica.spawn(Local({ l: 9 })); // its own entity, not replicated
        for (const step of s.steps) {
            expect(replica.applyDelta(step.bytes)).toBe(true);
            replica.validate();
            const got = observe(replica, step.handles) as { every: number[]; handles: unknown };
            const want = step.expected as { every: number[]; handles: unknown };
            expect(got.handles).toEqual(want.handles);
            // Its own entities stay; every source entity is there.
            for (const e of want.every) expect(got.every).toContain(e);
        }
    });

    test('a keyframe into a world whose same-named components differ: DELTA_SCHEMA, nothing registered or changed', () => {
        const impostors = [
            component('CBAll', { a: 'f32' }),
            component('CBSmall', { x: 'u32' }),
            component('CBSmall', { x: 'i32' }, { storage: 'sparse' }),
            component('CBSparse', { s: 'f64', k: ['u8', 3] }, { storage: 'sparse' }),
            component('CBSparse', { s: 'f64', k: ['u8', 2] }),
            component('CBFlag', { f: 'u8' }),
            tag('CBSparseTag'),
        ];
        for (const C of impostors) {
            const replica = mk();
            replica.spawn(C);
            const before = fingerprint(replica);
            const what = `${C.name} ${JSON.stringify(C.fields ?? null)}`;
            const r = attempt(() => replica.applyDelta(s.steps[0]!.bytes), what);
            expect(r.ok, `keyframe accepted over ${what}`).toBe(false);
            if (!r.ok) expect(r.error.code, what).toBe('DELTA_SCHEMA');
            expectUnchanged(replica, before, what, true);
        }
        // A relation registered under a relation's name with another schema.
        const replica = mk();
        const a = replica.spawn(Small);
        replica.addPair(a, relation('CBLikes', { amount: 'f64' }), a);
        const before = fingerprint(replica);
        const r = attempt(() => replica.applyDelta(s.steps[0]!.bytes), 'CBLikes f64');
        expect(r.ok).toBe(false);
        if (!r.ok) expect(r.error.code).toBe('DELTA_SCHEMA');
        expectUnchanged(replica, before, 'CBLikes', true);
    });

    test('a keyframe over a world whose own entities hold the source handles: refused unchanged, or the source entities exact', () => {
        const replica = mk();
        replica.spawnMany(200, Local({ l: 7 })); // its own entities, at the indices the source uses
        const before = fingerprint(replica);
        const step = s.steps[0]!;
        const r = attempt(() => replica.applyDelta(step.bytes), 'keyframe over own entities');
        if (r.ok) {
            replica.validate();
            expect((observe(replica, step.handles) as { handles: unknown }).handles).toEqual(
                (step.expected as { handles: unknown }).handles,
            );
        } else {
            expect(DELTA_CODES).toContain(r.error.code);
            expectUnchanged(replica, before, 'own entities', true);
        }
    });

    test('applyDelta inside a loop over the replica is refused and changes nothing; after the loop it applies', () => {
        const replica = replicaAt(s, 1);
        replica.spawn(Local({ l: 1 }));
        const before = fingerprint(replica);
        let looped = false;
        for (const _chunk of replica.query({ all: [Local] })) {
            expectError(() => replica.applyDelta(s.steps[1]!.bytes), 'INVALID_ARGUMENT', { operation: 'world.applyDelta' });
            looped = true;
        }
        expect(looped).toBe(true);
        expectUnchanged(replica, before, 'after the loop', true);
        expect(replica.applyDelta(s.steps[1]!.bytes)).toBe(true);
    });

    test('what is not bytes is INVALID_ARGUMENT and changes nothing', () => {
        const replica = replicaAt(s, 1);
        const before = fingerprint(replica);
        const d = s.steps[1]!.bytes;
        for (const bad of [undefined, null, 'x', 5, {}, Array.from(d), new Uint16Array(d.length), d.buffer]) {
            const r = attempt(() => replica.applyDelta(bad as unknown as Uint8Array), String(bad));
            expect(r.ok, `applyDelta(${Object.prototype.toString.call(bad)}) was accepted`).toBe(false);
            if (!r.ok) expect(r.error.code).toBe('INVALID_ARGUMENT');
        }
        expectUnchanged(replica, before, 'not bytes', true);
    });
});

// =============================================================================================
// Sessions: the message framing is learnt from the transports: a down message is MESSAGE.delta
// then the delta; an up message MESSAGE.ack / reset / bye.

class Pipe {
    messages: Uint8Array[] = [];
    send(bytes: Uint8Array): void {
        expect(bytes).toBeInstanceOf(Uint8Array);
        this.messages.push(bytes);
    }
    take(): Uint8Array[] {
        return this.messages.splice(0);
    }
}

interface Session {
    server: ReplicationServer;
    client: ReplicationClient;
    connection: ReturnType<ReplicationServer['connect']>;
    down: Pipe;
    up: Pipe;
    source: World;
    replica: World;
    all: Entity[];
    below: (n: number) => number;
}

function session(seed: number): Session {
    const source = mk({ minFreeIndices: 4 });
    const replica = mk();
    const below = rng(seed);
    const all: Entity[] = [];
    randomOps(source, below, 80, all);
    const server = new ReplicationServer(source);
    const down = new Pipe();
    const up = new Pipe();
    const connection = server.connect(down);
    const client = new ReplicationClient(replica, up);
    return { server, client, connection, down, up, source, replica, all, below };
}

/** Delivers everything queued both ways until quiet; the client must then equal the server. */
function settle(x: Session): void {
    for (let round = 0; round < 4; round++) {
        x.server.update();
        for (const m of x.down.take()) x.client.receive(m);
        for (const m of x.up.take()) x.connection.receive(m);
    }
    expect(observe(x.replica, x.all)).toEqual(observe(x.source, x.all));
}

describe('sessions: messages from outside', () => {
    test('a delta message truncated or with bytes replaced (fast-check): refused unchanged and a keyframe asked, or exact', () => {
        const x = session(41);
        settle(x);
        let refusals = 0;
        fc.assert(
            fc.property(
                fc.oneof(
                    fc.record({ cut: fc.nat() }),
                    fc.record({ edits: fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 4 }) }),
                ),
                (mutation) => {
                    randomOps(x.source, x.below, 8, x.all);
                    x.server.update();
                    const messages = x.down.take();
                    expect(messages.length).toBe(1);
                    const good = messages[0]!;
                    expect(good[0]).toBe(MESSAGE.delta);
                    const expected = observe(x.source, x.all);
                    let bad = good.slice();
                    if ('cut' in mutation) bad = bad.subarray(0, mutation.cut % good.length);
                    else for (const [at, value] of mutation.edits) bad[at % bad.length] = value;
                    const before = fingerprint(x.replica);
                    const tick = x.client.tick;
                    const r = attempt(() => x.client.receive(bad), 'mutated message');
                    const asked = x.up.take();
                    if (r.ok) {
                        if (r.value) {
                            x.replica.validate();
                            expect(observe(x.replica, x.all)).toEqual(expected);
                        } else expectUnchanged(x.replica, before, 'unchanged receive');
                    } else {
                        refusals++;
                        expect(
                            ['BAD_DELTA', 'DELTA_SCHEMA', 'SNAPSHOT_VERSION', 'INVALID_ARGUMENT', 'DELTA_BASELINE'],
                            r.error.message,
                        ).toContain(r.error.code);
                        expectUnchanged(x.replica, before, `refused ${r.error.code}`);
                        expect(x.client.tick).toBe(tick);
                        if (r.error.code === 'BAD_DELTA' || r.error.code === 'DELTA_SCHEMA') {
                            expect(
                                asked.map((m) => m[0]),
                                `a ${r.error.code} asked for no keyframe`,
                            ).toContain(MESSAGE.reset);
                        }
                    }
                    for (const m of asked) x.connection.receive(m);
                    // The good message may follow the bad one (a duplicate of it was damaged); then all heals.
                    x.client.receive(good);
                    for (const m of x.up.take()) x.connection.receive(m);
                    settle(x);
                },
            ),
            { seed: 0x5eed06, numRuns: 120 },
        );
        expect(refusals).toBeGreaterThan(50);
        x.server.close();
    });

    test('a client fed the messages of another server: each is exact for that server or refused unchanged; its own server heals it', () => {
        const x = session(42);
        const y = session(43);
        settle(x);
        settle(y);
        for (let round = 0; round < 6; round++) {
            randomOps(x.source, x.below, 10, x.all);
            randomOps(y.source, y.below, 10, y.all);
            x.server.update();
            y.server.update();
            const foreign = y.down.take();
            x.down.take(); // x's own message is lost
            for (const m of foreign) {
                const before = fingerprint(x.replica);
                const r = attempt(() => x.client.receive(m), 'foreign');
                if (r.ok && r.value) {
                    // Accepted: it must be y's world then (a delta of y's applied over x's state is neither).
                    const got = observe(x.replica, y.all);
                    expect(got, `round ${round}: a delta of another server made a third world`).toEqual(observe(y.source, y.all));
                } else if (!r.ok) {
                    expectUnchanged(x.replica, before, 'foreign refused');
                } else expectUnchanged(x.replica, before, 'foreign ignored');
            }
            for (const m of y.up.take()) y.connection.receive(m);
            for (const m of x.up.take()) x.connection.receive(m);
            x.connection.peer.reset(); // the server forgets: a keyframe heals whatever happened
            settle(x);
        }
        x.server.close();
        y.server.close();
    });

    test('Connection.receive of random bytes (fast-check): INVALID_ARGUMENT and nothing changed, or a real message; the client stays exact', () => {
        const x = session(44);
        settle(x);
        fc.assert(
            fc.property(
                fc.oneof(
                    fc.uint8Array({ minLength: 0, maxLength: 12 }),
                    fc
                        .tuple(fc.constantFrom(MESSAGE.ack, MESSAGE.reset, MESSAGE.bye, MESSAGE.delta), fc.uint8Array({ maxLength: 10 }))
                        .map(([t, rest]) => Uint8Array.of(t, ...rest)),
                    fc.double().map((tick) => {
                        const m = new Uint8Array(9);
                        m[0] = MESSAGE.ack;
                        new DataView(m.buffer).setFloat64(1, tick, true);
                        return m;
                    }),
                ),
                (bytes) => {
                    const acked = x.connection.acked;
                    const r = attempt(() => x.connection.receive(bytes), `receive ${Array.from(bytes)}`);
                    if (!r.ok) {
                        expect(r.error.code, r.error.message).toBe('INVALID_ARGUMENT');
                        expect(x.connection.acked).toBe(acked);
                        expect(x.connection.connected).toBe(true);
                    } else {
                        expect(x.connection.acked).toBeGreaterThanOrEqual(acked);
                    }
                    if (!x.connection.connected) {
                        // A goodbye was accepted: the client joins again.
                        expect(Array.from(bytes)).toEqual([MESSAGE.bye]);
                        x.connection = x.server.connect(x.down);
                        x.client = new ReplicationClient(x.replica, x.up);
                    }
                    // Whatever was accepted (an ack of a tick the client never had), the client ends up exact.
                    randomOps(x.source, x.below, 3, x.all);
                    settle(x);
                },
            ),
            { seed: 0x5eed07, numRuns: 150 },
        );
        x.server.close();
    });

    test('a client answers a message meant for the server with INVALID_ARGUMENT; after leave(), deltas are ignored', () => {
        const x = session(45);
        settle(x);
        const before = fingerprint(x.replica);
        for (const m of [Uint8Array.of(MESSAGE.reset), Uint8Array.of(MESSAGE.bye), Uint8Array.of(0), Uint8Array.of(77, 1, 2)]) {
            expectError(() => x.client.receive(m), 'INVALID_ARGUMENT');
            expectUnchanged(x.replica, before, `message ${Array.from(m)}`);
        }
        x.client.leave();
        expect(x.up.take().map((m) => Array.from(m))).toEqual([[MESSAGE.bye]]);
        randomOps(x.source, x.below, 10, x.all);
        x.server.update();
        for (const m of x.down.take()) expect(x.client.receive(m)).toBe(false);
        expectUnchanged(x.replica, before, 'after leave', true);
        x.server.close();
    });
});

// =============================================================================================
describe('memory and lifetime rules', () => {
    const Big = component('CBBig', { v: ['f64', 256] });
    const Blob = component('CBBlob', { b: ['u8', 256] });

    test('structural calls recorded in a loop never detach the loop views; deferred changes may after it', () => {
        for (const debug of [false, true]) {
            const world = mk({ debug });
            const handles = world.spawnMany(50, Small, AllTypes({ g: 7 }));
            const q = world.query({ all: [Small, AllTypes] });
            let perCall = 0;
            let kept: Int32Array | undefined;
            let buffer: ArrayBuffer | undefined;
            for (const chunk of q) {
                buffer = module.memory.buffer; // the run reserved its room when it started
                // Rows of 2 KiB enough to outgrow the memory as it is: applying them must grow it.
                perCall = Math.ceil(buffer.byteLength / 2048 / 20) + 500;
                const g = chunk.column(AllTypes, 'g');
                kept = g;
                for (let i = 0; i < 20; i++) {
                    world.spawnMany(perCall, Small, Big, Likes(handles[0]!, { amount: 1, n: 2 }));
                    world.add(handles[i]!, Flag, SparseData({ s: i }));
                    world.despawn(handles[30 + i]!);
                }
                // Everything recorded: the loop's views still read and write.
                expect(module.memory.buffer === buffer, 'memory grew inside the loop').toBe(true);
                expect(g.length).toBe(chunk.count);
                expect(g[0]).toBe(7);
                g[0] = 8;
                expect(chunk.entities[0]).toBe(handles[0]);
            }
            q.close();
            // The deferred spawns grew memory when the loop ended.
            expect(module.memory.buffer !== buffer, 'memory did not grow after the loop').toBe(true);
            expect(world.stats().entityCount).toBe(50 - 20 + 20 * perCall);
            world.validate();
            if (debug) expectError(() => kept![0], 'VIEW_DETACHED');
            else expect(kept![0]).toBeUndefined(); // a detached view reads undefined
            expect(world.get(handles[0]!, AllTypes, 'g')).toBe(8); // the write made in the loop stayed
            world.destroy();
        }
    });

    test('a loop body that needs more than the run reserve gets OUT_OF_MEMORY and changes nothing; the next run has room', async () => {
        // A module of its own, with the least memory: the heap holds no free room from other tests
        // beyond the run's reserve.
        const world = (await init({ memory: MODULE_MEMORY.minimum })).createWorld();
        worlds.push(world);
        const seed = world.spawn(Small({ x: 1 }));
        const before = fingerprint(world);
        const n = 60_000; // 60,000 x 2 KiB of recorded values: more than the 64 MiB first reserve
        const values = new Float64Array(n * 256).fill(0.5);
        const q = world.query({ all: [Small] });
        let refused: TesseraError | undefined;
        for (const _chunk of q) {
            const r = attempt(() => world.spawnMany(n, Small, Big.columns({ v: values })), 'spawnMany in a loop');
            if (!r.ok) refused = r.error;
        }
        expect(refused?.code).toBe('OUT_OF_MEMORY');
        expectUnchanged(world, before, 'after the refused body', true);
        let spawned: Uint32Array | undefined;
        for (const _chunk of q) spawned = world.spawnMany(n, Small, Big.columns({ v: values }));
        expect(world.stats().entityCount).toBe(n + 1);
        expect(world.get(spawned![n - 1]!, Big, 'v')[255]).toBe(0.5);
        expect(world.isAlive(seed)).toBe(true);
        world.validate();
        q.close();
        world.destroy();
    });

    test('inputs lying in wasm memory (column views, debug proxies): snapshots and deltas restored exactly while memory grows', () => {
        for (const debug of [false, true]) {
            const source = mk({ minFreeIndices: 4 });
            randomOps(source, rng(51), 200, []);
            const snap = source.snapshot();
            const delta = source.replicator().encode().bytes.slice();
            // A holder world whose u8[256] columns carry the bytes: a view of wasm memory.
            const holder = mk({ debug });
            const rows = Math.ceil(Math.max(snap.length, delta.length) / 256);
            holder.spawnMany(rows, Blob);
            const chunks = [...holder.query({ all: [Blob] })];
            expect(chunks.length).toBe(1);
            const place = (bytes: Uint8Array): Uint8Array => {
                let view!: Uint8Array;
                for (const chunk of holder.query({ all: [Blob] })) {
                    view = chunk.column(Blob, 'b');
                    for (let i = 0; i < bytes.length; i++) view[i] = bytes[i]!;
                }
                return view.subarray(0, bytes.length);
            };
            // The restore allocates: grow memory first as a big allocation would, then restore from the view.
            const inMemory = place(snap);
            const restored = mk({ minFreeIndices: 4, snapshot: inMemory });
            expect(bytesEqual(restored.snapshot(), snap)).toBe(true);
            const replica = mk({ debug });
            replica.spawnMany(30_000, Big); // the replica's own rows: the apply allocates past them
            const deltaView = place(delta);
            expect(replica.applyDelta(deltaView)).toBe(true);
            replica.validate();
            const check = mk();
            expect(check.applyDelta(delta)).toBe(true);
            const all = sorted(
                (() => {
                    const q = source.query({});
                    const e = q.entities();
                    q.close();
                    return e;
                })(),
            );
            expect(observe(replica, all)).toEqual(observe(check, all));
        }
    });

    test("a delta's bytes read after the next encode or after close: VIEW_DETACHED / DESTROYED, never another delta's bytes", () => {
        const world = mk();
        world.spawn(Small({ x: 1 }));
        const replicator = world.replicator();
        const first = replicator.encode();
        const firstBytes = first.bytes.slice();
        world.spawn(Small({ x: 2 }));
        const second = replicator.encode();
        const r = attempt(() => first.bytes, 'first.bytes after the next encode');
        // Either the getter refuses, or it still hands out the first delta's bytes: never the second's.
        if (r.ok) expect(bytesEqual(r.value, firstBytes)).toBe(true);
        else expect(r.error.code).toBe('VIEW_DETACHED');
        expect(second.bytes.length).toBeGreaterThan(0);
        replicator.close();
        expectError(() => second.bytes[0], 'DESTROYED');
    });

    test('a nested loop over another world may detach the outer views: debug mode says VIEW_DETACHED, never stale data', () => {
        const outer = mk({ debug: true });
        const inner = mk({ debug: true });
        outer.spawnMany(10, Small({ x: 3 }));
        inner.spawn(Small);
        let detached = false;
        let total = 1;
        for (const chunk of outer.query({ all: [Small] })) {
            const x = chunk.column(Small, 'x');
            const buffer = module.memory.buffer;
            // Inner loops whose deferred spawns (applied when each ends) fill memory until it grows.
            for (let round = 0; round < 200 && module.memory.buffer === buffer; round++) {
                for (const _c of inner.query({ all: [Small] })) inner.spawnMany(4_000, Big);
                total += 4_000;
            }
            if (module.memory.buffer !== buffer) {
                expectError(() => x[0], 'VIEW_DETACHED');
                detached = true;
            } else expect(x[0]).toBe(3);
            expect(chunk.column(Small, 'x')[0]).toBe(3); // a fresh view reads
        }
        expect(detached).toBe(true);
        expect(inner.stats().entityCount).toBe(total);
    });

    test('a destroyed world refuses bytes with DESTROYED; a snapshot taken before restores it', () => {
        const world = mk();
        randomOps(world, rng(52), 60, []);
        const bytes = world.snapshot();
        const delta = world.replicator().encode().bytes.slice();
        world.destroy();
        expectError(() => world.applyDelta(delta), 'DESTROYED');
        expectError(() => world.snapshot(), 'DESTROYED');
        expectError(() => world.hash(), 'DESTROYED');
        const again = mk({ snapshot: bytes });
        expect(bytesEqual(again.snapshot(), bytes)).toBe(true);
    });
});

// =============================================================================================
describe('loading: module bytes from outside', () => {
    const wasm = readFileSync(new URL('../../dist/tessera.wasm', import.meta.url));

    test('truncated, corrupted, empty or foreign module bytes: LOAD_FAILED; the default module still works', async () => {
        const candidates: [string, Uint8Array][] = [
            ['empty', new Uint8Array(0)],
            ['not wasm', new TextEncoder().encode('tessera')],
            ['magic only', Uint8Array.of(0, 0x61, 0x73, 0x6d)],
            ['an empty module', Uint8Array.of(0, 0x61, 0x73, 0x6d, 1, 0, 0, 0)],
            ['another version', Uint8Array.of(0, 0x61, 0x73, 0x6d, 2, 0, 0, 0)],
        ];
        for (const n of [9, 100, 1000, wasm.length >> 1, wasm.length - 1]) candidates.push([`cut to ${n}`, wasm.subarray(0, n)]);
        const flipped = new Uint8Array(wasm);
        flipped[0] = 1;
        candidates.push(['magic flipped', flipped]);
        for (const [what, bytes] of candidates) {
            let thrown: unknown;
            try {
                await init({ bytes });
            } catch (error) {
                thrown = error;
            }
            expect(thrown, `${what} loaded`).toBeInstanceOf(TesseraError);
            expect((thrown as TesseraError).code, what).toBe('LOAD_FAILED');
        }
        let thrown: unknown;
        try {
            await init({ url: new URL('./no-such-file.wasm', import.meta.url) });
        } catch (error) {
            thrown = error;
        }
        expect((thrown as TesseraError).code).toBe('LOAD_FAILED');
        // A failed load is not kept: the default module makes worlds, and good bytes load.
        const world = (await init()).createWorld();
        world.spawn(Small({ x: 1 }));
        world.destroy();
        const own = await init({ bytes: new Uint8Array(wasm) });
        const w2 = own.createWorld();
        expect(w2.spawn(Small({ x: 2 }))).toBeGreaterThan(0);
        w2.destroy();
    });

    test('bytes cross modules: a snapshot and a delta of one module restore in another exactly', async () => {
        const other = await init({ bytes: new Uint8Array(wasm) });
        const source = mk({ minFreeIndices: 4 });
        const all: Entity[] = [];
        randomOps(source, rng(61), 150, all);
        const w = other.createWorld({ minFreeIndices: 4, snapshot: source.snapshot() });
        expect(bytesEqual(w.snapshot(), source.snapshot())).toBe(true);
        const r = other.createWorld();
        expect(r.applyDelta(source.replicator().encode().bytes)).toBe(true);
        expect(observe(r, all)).toEqual(observe(source, all));
        w.destroy();
        r.destroy();
    });
});

// =============================================================================================
describe('sources', () => {
    // README "Replication: deltas": "Each delta names its source (a random number per
    // replicator): a replica takes deltas only from the replicator whose keyframe it holds
    // (another's throw `DELTA_BASELINE`, however the ticks line up)".
    test('a delta of another source on the same baseline tick is refused (DELTA_BASELINE) and changes nothing', () => {
        const a = mk();
        const b = mk();
        const ea = Array.from({ length: 5 }, (_, i) => a.spawn(Small({ x: i })));
        const eb = Array.from({ length: 5 }, (_, i) => b.spawn(Small({ x: 100 + i })));
        const pa = a.replicator().peer();
        const pb = b.replicator().peer();
        const ra = mk();
        const rb = mk();
        ra.applyDelta(pa.encode().bytes);
        pa.ack(ra.replicaTick);
        rb.applyDelta(pb.encode().bytes);
        pb.ack(rb.replicaTick);
        expect(ra.replicaTick).toBe(rb.replicaTick); // both sources made one encode: the same ticks
        b.set(eb[0]!, Small, { x: 999 });
        b.despawn(eb[1]!);
        const foreign = pb.encode().bytes.slice();
        const before = fingerprint(ra);
        const r = attempt(() => ra.applyDelta(foreign), 'foreign delta');
        // Before deltas named their source: applied, and ra held entity 1 with x 999 (B's), entity
        // 2 gone, 3..5 A's: a world equal to neither.
        expect(r.ok ? `applied; x of ${ea[0]} is ${ra.isAlive(ea[0]!) ? ra.get(ea[0]!, Small, 'x') : 'dead'}` : r.error.code).toBe(
            'DELTA_BASELINE',
        );
        expectUnchanged(ra, before, 'foreign delta', true);
    });
});
