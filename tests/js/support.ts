// Shared helpers of the public-API suites (not a test file: vitest runs *.test.ts only).
import fc from 'fast-check';
import { afterEach, expect } from 'vitest';

import {
    createWorld,
    TesseraError,
    type Component,
    type Relation,
    type CreateWorldOptions,
    type Entity,
    type ErrorCode,
    type World,
} from '../../dist/index.js';

/**
 * Worlds made by `make()` are destroyed after each test of the calling file (the hook is
 * registered in the file that calls `worldPerTest()`, at collection time).
 */
export function worldPerTest(): (options?: CreateWorldOptions) => Promise<World> {
    const worlds: World[] = [];
    afterEach(() => {
        // Destroy every world even when one throws (a test left an iteration live), then fail.
        const errors: unknown[] = [];
        for (const world of worlds.splice(0)) {
            try {
                world.destroy();
            } catch (error) {
                errors.push(error);
            }
        }
        if (errors.length) throw errors[0];
    });
    return async (options = {}) => {
        const world = await createWorld(options);
        worlds.push(world);
        return world;
    };
}

/** What a TesseraError should say, beyond its code (a key given as undefined: it must name none). */
export interface Expected {
    readonly operation?: string;
    readonly entity?: number | undefined;
    readonly component?: string | undefined;
    readonly field?: string | undefined;
    readonly position?: number | undefined;
}

/** Runs `fn`, which must throw a TesseraError with `code` (and the given context); returns it. */
export function expectError(fn: () => unknown, code: ErrorCode, expected: Expected = {}): TesseraError {
    let thrown: unknown;
    try {
        fn();
    } catch (error) {
        thrown = error;
    }
    if (thrown === undefined) throw new Error(`expected a TesseraError ${code}, nothing was thrown`);
    expect(thrown).toBeInstanceOf(TesseraError);
    const error = thrown as TesseraError;
    expect(error.code, error.message).toBe(code);
    for (const key of ['operation', 'entity', 'component', 'field', 'position'] as const) {
        if (key in expected) expect(error[key], `${key} of ${error.message}`).toBe(expected[key]);
    }
    return error;
}

/** The same for a promise. */
/** What `fn` throws (undefined when it returns). */
export function caught(fn: () => unknown): unknown {
    try {
        fn();
    } catch (error) {
        return error;
    }
    return undefined;
}

export async function expectRejection(promise: Promise<unknown>, code: ErrorCode, expected: Expected = {}): Promise<TesseraError> {
    let thrown: unknown;
    try {
        await promise;
    } catch (error) {
        thrown = error;
    }
    return expectError(
        () => {
            if (thrown !== undefined) throw thrown;
        },
        code,
        expected,
    );
}

/**
 * Everything observable about some entities: alive or not, and for each component whether the
 * entity has it and its values. Compare two snapshots with toEqual.
 */
export function snapshot(world: World, entities: readonly Entity[], components: readonly Component<any>[]): unknown {
    const entries = entities.map((entity) => {
        if (!world.isAlive(entity)) return [entity, 'dead'] as const;
        const parts: Record<string, unknown> = {};
        for (const component of components) {
            if (!world.has(entity, component)) continue;
            parts[component.name] = component.isTag ? true : world.get(entity, component);
        }
        return [entity, parts] as const;
    });
    return { entities: entries, count: world.stats().entityCount };
}

/** Numbers at every field type's edges (integer ranges, f32's largest, rounding, specials). */
export const EDGE_VALUES: readonly number[] = [
    0,
    -0,
    1,
    -1,
    0.5,
    -0.5,
    1.5,
    2.5,
    127,
    128,
    -128,
    -129,
    255,
    256,
    32767,
    32768,
    -32768,
    -32769,
    65535,
    65536,
    2 ** 31 - 1,
    2 ** 31,
    -(2 ** 31),
    -(2 ** 31) - 1,
    2 ** 32 - 1,
    2 ** 32,
    2 ** 53,
    -(2 ** 53),
    2 ** 53 + 2,
    3.4028234663852886e38,
    3.4028235e38,
    3.4028236e38,
    -3.4028235e38,
    1e39,
    -1e39,
    1e-46,
    5e-324,
    Number.MAX_VALUE,
    Number.MIN_VALUE,
    Number.EPSILON,
    Infinity,
    -Infinity,
    NaN,
];

/** The edges, and any double or wide integer: values to store. */
export const EDGE_NUMBERS = fc.oneof(fc.double(), fc.integer({ min: -(2 ** 33), max: 2 ** 33 }), fc.constantFrom(...EDGE_VALUES));

/** Each integer field type's smallest and largest value. */
export const INT_RANGE = {
    i8: [-128, 127],
    u8: [0, 255],
    i16: [-32768, 32767],
    u16: [0, 65535],
    i32: [-(2 ** 31), 2 ** 31 - 1],
    u32: [0, 2 ** 32 - 1],
} as const satisfies Record<string, readonly [number, number]>;

/** Every field type. */
export const FIELD_TYPES = ['f32', 'f64', 'i8', 'u8', 'i16', 'u16', 'i32', 'u32'] as const;
export type FieldTypeName = (typeof FIELD_TYPES)[number];

/** The largest finite f32. */
export const F32_MAX = (2 - 2 ** -23) * 2 ** 127;

/**
 * The model of what a field of `type` stores for `v`, from the docs, or 'refused': README "300
 * into a u8, 1.5 into an i32, a string ... BAD_VALUE"; tessera.h "a finite value whose magnitude
 * exceeds FLT_MAX is rejected" (even one that rounds down to FLT_MAX); -0 in an integer field
 * is 0.
 */
export function storedAs(type: FieldTypeName, v: unknown): number | 'refused' {
    if (typeof v !== 'number') return 'refused';
    if (type === 'f64') return v;
    if (type === 'f32') return Number.isFinite(v) && Math.abs(v) > F32_MAX ? 'refused' : Math.fround(v);
    const [lo, hi] = INT_RANGE[type];
    if (!Number.isInteger(v) || v < lo || v > hi) return 'refused';
    return v === 0 ? 0 : v;
}

/** The entities as a sorted plain array (order-free comparison). */
export function sorted(entities: ArrayLike<number> | Iterable<number>): number[] {
    return Array.from(entities as Iterable<number>).sort((a, b) => a - b);
}

/** mulberry32: each call the next uint32 of the seed's sequence. */
function mulberry32(seed: number): () => number {
    let a = seed >>> 0;
    return () => {
        a = (a + 0x6d2b79f5) >>> 0;
        let t = a;
        t = Math.imul(t ^ (t >>> 15), t | 1);
        t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
        return (t ^ (t >>> 14)) >>> 0;
    };
}

/** A small deterministic PRNG (mulberry32): `below(n)` is an integer in [0, n). */
export function rng(seed: number): (n: number) => number {
    const next = mulberry32(seed);
    return (n) => (next() % n) >>> 0;
}

/** The same generator as numbers in [0, 1). */
export function random(seed: number): () => number {
    const next = mulberry32(seed);
    return () => next() / 4294967296;
}

/**
 * The definitions of a mixed world (snapshots, deltas): Body { x: f32, hp: i16, tags: [u8, 3],
 * mass: f64 }, Vel, the tag Frozen, sparse Weight { w: f64 } and Marked, the relation Likes
 * { amount: f32 } beside ChildOf; `extra` components are spawned at random too but not observed.
 */
export interface MixedKinds {
    readonly Body: Component<any>;
    readonly Vel: Component<any>;
    readonly Frozen: Component<any>;
    readonly Weight: Component<any>;
    readonly Marked: Component<any>;
    readonly Likes: Relation<any>;
    readonly extra?: readonly Component<any>[];
}

/**
 * `steps` random changes: spawns (each handle goes to `all` and `live`), despawns (ChildOf
 * takes the subtree along), adds and removes, values, pairs with data, parents and reordered
 * children. `live` is kept to the living handles.
 */
export function randomChanges(
    world: World,
    kinds: MixedKinds,
    below: (n: number) => number,
    steps: number,
    all: Entity[],
    live: Entity[],
    step0 = 0,
): void {
    const { Body, Vel, Frozen, Weight, Marked, Likes } = kinds;
    const spawned = [Body, Vel, Frozen, Weight, Marked, ...(kinds.extra ?? [])];
    for (let step = step0; step < step0 + steps; step++) {
        const op = below(11);
        const e = live.length ? live[below(live.length)]! : 0;
        const f = live.length ? live[below(live.length)]! : 0;
        if (op < 3 || live.length < 4) {
            const entity = world.spawn(...spawned.filter(() => below(2) === 0));
            if (world.has(entity, Body))
                world.set(entity, Body, { x: step / 2, hp: -step % 300, tags: [step % 7, 1, 2], mass: step * 1.25 });
            if (world.has(entity, Weight)) world.set(entity, Weight, { w: step + 0.5 });
            all.push(entity);
            live.push(entity);
        } else if (op === 3) {
            world.despawn(e);
        } else if (op === 4) {
            world.add(e, below(2) ? Marked : Frozen);
        } else if (op === 5) {
            world.remove(e, below(2) ? Marked : Vel);
        } else if (op === 6) {
            world.addPair(e, Likes, f, { amount: step });
        } else if (op === 7) {
            try {
                world.setParent(e, f);
            } catch (error) {
                expect((error as { code: string }).code).toBe('CYCLE');
            }
        } else if (op === 8) {
            const parent = world.parentOf(e);
            if (parent !== undefined) world.setParent(e, parent, world.childrenOf(parent)[0]);
        } else if (op === 9 && world.has(e, Body)) {
            world.set(e, Body, { hp: step % 1000 });
        } else {
            world.removePair(e, Likes, f);
        }
        live.splice(0, live.length, ...live.filter((x) => world.isAlive(x)));
    }
}

/** Everything about the handles that a snapshot or a delta carries: components, values, pairs, child order. */
export function observeMixed(world: World, kinds: MixedKinds, handles: readonly Entity[]): unknown {
    const { Body, Vel, Frozen, Weight, Marked, Likes } = kinds;
    return {
        base: snapshot(world, handles, [Body, Vel, Frozen, Weight, Marked]),
        pairs: handles.map((e) =>
            world.isAlive(e)
                ? {
                      likes: world.targets(e, Likes).map((t) => [t, world.getPair(e, Likes, t)]),
                      likedBy: world.sources(Likes, e),
                      parent: world.parentOf(e),
                      children: world.childrenOf(e),
                  }
                : 'dead',
        ),
    };
}

/**
 * Notes every call a world makes into wasm, by export name, until `restore()`: the module's
 * exports are frozen, so the world's heap gets a copy whose functions note their calls. For
 * tests of what a call costs in crossings (a design property no result shows).
 */
export function countCalls(world: World): { calls: string[]; restore(): void } {
    const heap = (world as unknown as { heap: { exports: Record<string, unknown> } }).heap;
    const real = heap.exports;
    const calls: string[] = [];
    const counted: Record<string, unknown> = {};
    for (const [name, value] of Object.entries(real)) {
        counted[name] =
            typeof value !== 'function'
                ? value
                : (...args: unknown[]) => {
                      calls.push(name);
                      return (value as (...a: unknown[]) => unknown)(...args);
                  };
    }
    heap.exports = counted;
    return {
        calls,
        restore: () => {
            heap.exports = real;
        },
    };
}
