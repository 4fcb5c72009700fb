// Shared helpers of the public-API suites (not a test file: vitest runs *.test.ts only).
import { afterEach, expect } from 'vitest';

import {
    createWorld,
    TesseraError,
    type Component,
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

/** What a TesseraError should say, beyond its code. */
export interface Expected {
    readonly operation?: string;
    readonly entity?: number;
    readonly component?: string;
    readonly field?: string;
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
    for (const key of ['operation', 'entity', 'component', 'field'] as const) {
        if (key in expected) expect(error[key], `${key} of ${error.message}`).toBe(expected[key]);
    }
    return error;
}

/** The same for a promise. */
export async function expectRejection(
    promise: Promise<unknown>,
    code: ErrorCode,
    expected: Expected = {},
): Promise<TesseraError> {
    let thrown: unknown;
    try {
        await promise;
    } catch (error) {
        thrown = error;
    }
    return expectError(() => {
        if (thrown !== undefined) throw thrown;
    }, code, expected);
}

/**
 * Everything observable about some entities: alive or not, and for each component whether the
 * entity has it and its values. Compare two snapshots with toEqual.
 */
export function snapshot(
    world: World,
    entities: readonly Entity[],
    components: readonly Component<any>[],
): unknown {
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

/** The entities as a sorted plain array (order-free comparison). */
export function sorted(entities: ArrayLike<number> | Iterable<number>): number[] {
    return Array.from(entities as Iterable<number>).sort((a, b) => a - b);
}
