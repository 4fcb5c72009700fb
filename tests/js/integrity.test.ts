// Integrity under hostile but plain use: a refused call changes nothing (its snapshot bytes stay
// the same, registrations included), every value is read once, sizes from the caller are checked
// before anything is sized by them, stale handles never alias, and definitions are never taken
// for one another. Each case is one that once broke (issue 15 of the project).
import { cpSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, test } from 'vitest';

import { ChildOf, component, relation, tag, type Component, type Entity, type World } from '../../dist/index.js';
import { expectError, expectRejection, worldPerTest } from './support.js';

const newWorld = worldPerTest();

const Position = component('IntegrityPosition', { x: 'f32', y: 'f32' });
const Inventory = component('IntegrityInventory', { items: ['u16', 4], count: 'u8' });
const Frozen = tag('IntegrityFrozen');
const Likes = relation('IntegrityLikes', { v: 'f32' });

/** Byte for byte (a deep toEqual of megabytes is slow). */
function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
    return a.length === b.length && Buffer.compare(a, b) === 0;
}

/** `fn` must throw `code` and leave the world's snapshot byte for byte as it was. */
function expectUnchanged(world: World, fn: () => unknown, code: Parameters<typeof expectError>[1]) {
    const before = world.snapshot();
    const error = expectError(fn, code);
    expect(sameBytes(world.snapshot(), before), `${error.message}: the snapshot changed`).toBe(true);
    world.validate();
    return error;
}

describe('sizes from the caller', () => {
    test('spawnMany of more entities than a world holds is refused before anything is sized by the count', async () => {
        const world = await newWorld();
        world.spawnMany(3, Position);
        for (const count of [2 ** 30, 2 ** 31, 2 ** 32 - 1, 2_097_152]) {
            expectUnchanged(world, () => world.spawnMany(count, Position), 'TOO_MANY_ENTITIES');
            expectUnchanged(world, () => world.spawnMany(count, Position, Likes(1)), 'TOO_MANY_ENTITIES');
        }
        // The module is fine afterwards, in this world and in another one.
        expect(world.spawnMany(1000, Position({ x: 2 })).length).toBe(1000);
        const other = await newWorld();
        other.spawnMany(10, Position);
        other.validate();
        world.validate();
    });
});

describe('values are read once', () => {
    /** Values whose `items` getter answers a 4-element array first, then a far longer one. */
    function shifty(): { items: number[]; count: number } {
        let reads = 0;
        return {
            get items() {
                return reads++ === 0 ? [1, 2, 3, 4] : new Array(100_000).fill(7);
            },
            count: 1,
        };
    }

    test('a getter that answers differently on a second read cannot write past the field', async () => {
        const world = await newWorld();
        const neighbour = world.spawn(Inventory({ items: [9, 9, 9, 9], count: 2 }), Position({ x: 5 }));
        const e = world.spawn(Inventory(shifty()));
        expect(world.get(e, Inventory)).toEqual({ items: [1, 2, 3, 4], count: 1 });
        world.set(e, Inventory, shifty());
        world.add(e, Inventory(shifty()));
        const [m] = world.spawnMany(3, Inventory(shifty()));
        expect(world.get(m!, Inventory, 'items')).toEqual([1, 2, 3, 4]);
        expect(world.get(neighbour, Inventory)).toEqual({ items: [9, 9, 9, 9], count: 2 });
        expect(world.get(neighbour, Position)).toEqual({ x: 5, y: 0 });
        world.validate();
    });

    test('a value that is refused late writes none of the call', async () => {
        const world = await newWorld();
        const e = world.spawn(Inventory({ items: [1, 2, 3, 4], count: 1 }));
        // count: 300 does not fit a u8; items come first and must not be written.
        expectUnchanged(world, () => world.set(e, Inventory, { items: [5, 6, 7, 8], count: 300 }), 'BAD_VALUE');
        expectUnchanged(world, () => world.add(e, Frozen, Inventory({ items: [5, 6, 7, 8], count: 1.5 })), 'BAD_VALUE');
        expect(world.get(e, Inventory)).toEqual({ items: [1, 2, 3, 4], count: 1 });
        expect(world.has(e, Frozen)).toBe(false);
    });
});

describe('a failed call changes nothing', () => {
    /** 64 components of 64 [f64, 256] fields: 63 of them fit in one row, the 64th does not. */
    const wide = Array.from({ length: 64 }, (_, i) =>
        component(`IntegrityWide${i}`, Object.fromEntries(Array.from({ length: 64 }, (_, f) => [`f${f}`, ['f64', 256] as const]))),
    ) as Component<any>[];

    test('an add whose row would be too large adds none of its components', async () => {
        const world = await newWorld();
        const big = world.spawn(...wide.slice(0, 63));
        const error = expectUnchanged(world, () => world.add(big, Frozen, wide[63]!), 'ROW_TOO_LARGE');
        expect(error.entity).toBe(big);
        expect(world.has(big, Frozen)).toBe(false);
    });

    test('addAll over several archetypes moves none of them when one cannot take the component', async () => {
        const world = await newWorld();
        const small = world.spawn(wide[0]!, Frozen);
        const big = world.spawn(...wide.slice(0, 63));
        const query = world.query({ all: [wide[0]!] });
        expectUnchanged(world, () => query.addAll(wide[63]!), 'ROW_TOO_LARGE');
        expect(world.has(small, wide[63]!)).toBe(false);
        expect(world.has(big, wide[63]!)).toBe(false);
    });

    test('a spawn with a stale pair target takes no index from the free queue', async () => {
        const world = await newWorld({ minFreeIndices: 1 });
        const freed = world.spawnMany(50, Position);
        world.despawnMany(freed);
        const dead = freed[0]!;
        expectUnchanged(world, () => world.spawnMany(5000, Position, Likes(dead)), 'STALE_ENTITY');
        expectUnchanged(world, () => world.spawn(Position, Frozen, Likes(dead)), 'STALE_ENTITY');
    });

    test('a refused call registers nothing: the snapshot stays the same bytes', async () => {
        const world = await newWorld();
        const e = world.spawn(Position);
        const dead = world.spawn(Position);
        world.despawn(dead);
        const Fresh = component('IntegrityFresh', { v: 'u8' });
        const FreshTag = tag('IntegrityFreshTag');
        const FreshLikes = relation('IntegrityFreshLikes');
        expectUnchanged(world, () => world.spawn(Fresh({ v: 300 })), 'BAD_VALUE');
        expectUnchanged(world, () => world.add(dead, FreshTag), 'STALE_ENTITY');
        expectUnchanged(world, () => world.add(e, FreshTag, Fresh({ v: -1 })), 'BAD_VALUE');
        expectUnchanged(world, () => world.add(e, FreshLikes(dead)), 'STALE_ENTITY');
        expectUnchanged(world, () => world.set(e, Fresh, 'v', 1), 'MISSING_COMPONENT');
        expectUnchanged(world, () => world.setParent(e, dead), 'STALE_ENTITY');
        expect(world.has(e, FreshTag)).toBe(false);
        expect(world.targets(e, FreshLikes)).toEqual([]);
        // The same definitions work afterwards.
        world.add(e, Fresh({ v: 3 }), FreshTag);
        expect(world.get(e, Fresh, 'v')).toBe(3);
        world.validate();
    });
});

describe('stale handles', () => {
    test('never alias a new entity before 512 recycles of their index, even with the table full', async () => {
        const world = await newWorld({ minFreeIndices: 16 });
        // As many entities as the world takes: every index but minFreeIndices of them.
        const error = expectError(() => world.spawnMany(2_097_151 - 15, Position), 'TOO_MANY_ENTITIES');
        expect(error.operation).toBe('world.spawnMany');
        const all = world.spawnMany(2_097_151 - 16, Position);
        expectError(() => world.spawn(Position), 'TOO_MANY_ENTITIES');
        const stale = all[0]!;
        world.despawn(stale);
        let despawns = 1;
        for (let round = 0; round < 600 * 17; round++) {
            const e = world.spawn(Position);
            if (e === stale) break;
            expect(world.isAlive(stale)).toBe(false);
            world.despawn(e);
            despawns++;
        }
        expect(despawns).toBeGreaterThanOrEqual(512 * 17);
    });
});

describe('definitions are never taken for one another', () => {
    test('a component from another copy of the package is refused, not read as one of this copy', async () => {
        // A second copy of the package's files, as a second bundle or a library's own copy has.
        const dir = mkdtempSync(join(tmpdir(), 'tessera-copy-'));
        cpSync(fileURLToPath(new URL('../../dist/', import.meta.url)), dir, { recursive: true });
        const copy = (await import(pathToFileURL(join(dir, 'index.js')).href)) as typeof import('../../dist/index.js');
        const world = await newWorld();
        const ForeignPosition = copy.component('ForeignPosition', { x: 'f32' });
        const LocalFrozen = tag('IntegrityLocalFrozen');
        const e = world.spawn(Position, LocalFrozen);
        const before = world.snapshot();
        for (const call of [
            () => world.spawn(ForeignPosition as never),
            () => world.add(e, ForeignPosition as never),
            () => world.remove(e, ForeignPosition as never),
            () => world.has(e, ForeignPosition as never),
            () => world.get(e, ForeignPosition as never),
            () => world.query({ all: [ForeignPosition as never] }),
        ]) {
            const error = expectError(call, 'INVALID_ARGUMENT');
            expect(error.message).toContain('another copy of tessera-ecs');
        }
        expect(world.has(e, LocalFrozen)).toBe(true);
        expect(sameBytes(world.snapshot(), before)).toBe(true);
    });
});

describe('no silent defaults', () => {
    test('a missing value is BAD_VALUE, never a write; undefined fields of a values object are left as they are', async () => {
        const world = await newWorld();
        const e = world.spawn(Position({ x: 1, y: 2 }));
        expectUnchanged(world, () => (world.set as (...args: unknown[]) => void)(e, Position, 'x'), 'BAD_VALUE');
        expectUnchanged(world, () => world.set(e, Position, 'x', undefined as never), 'BAD_VALUE');
        expectUnchanged(world, () => world.set(e, Position, 'x', '3' as never), 'BAD_VALUE');
        expectUnchanged(world, () => world.spawn(Position({ x: null as never })), 'BAD_VALUE');
        world.set(e, Position, { x: undefined, y: 5 } as never); // from plain JS
        expect(world.get(e, Position)).toEqual({ x: 1, y: 5 });
    });

    test('misspelt world options are refused like misspelt component options', async () => {
        for (const [options, word] of [
            [{ chunkbytes: 1 }, 'chunkbytes'],
            [{ minFree: 3 }, 'minFree'],
            [{ debug: 'yes' }, 'debug'],
        ] as const) {
            const error = await expectRejection(newWorld(options as never), 'INVALID_ARGUMENT', { operation: 'createWorld' });
            expect(error.message).toContain(word);
        }
    });

    test('what is not a component is refused by spawn and add; relations by per-entity data calls', async () => {
        const world = await newWorld();
        const e = world.spawn(Position);
        const f = world.spawn(Position);
        expectUnchanged(world, () => world.spawn({} as never), 'INVALID_ARGUMENT');
        expectUnchanged(world, () => world.add(e, {} as never), 'INVALID_ARGUMENT');
        expectUnchanged(world, () => world.add(e, null as never), 'INVALID_ARGUMENT');
        expectUnchanged(world, () => world.remove(e, 'Position' as never), 'INVALID_ARGUMENT');
        expectUnchanged(world, () => world.set(e, Likes as never, 'v', 1), 'NEEDS_TARGET');
        expectUnchanged(world, () => world.get(e, Likes as never), 'NEEDS_TARGET');
        world.addPair(e, Likes, f);
        const dead = world.spawn(Position);
        world.despawn(dead);
        for (const [source, target, before] of [
            [dead, f, undefined],
            [e, dead, undefined],
            [e, f, dead],
        ] as const) {
            const error = expectUnchanged(world, () => world.placePair(source, Likes, target, before), 'STALE_ENTITY');
            expect(error.entity).toBe(dead);
        }
    });

    test('isAlive is false for anything that is not a live handle, and never throws for it', async () => {
        const world = await newWorld();
        const e = world.spawn(Position);
        for (const value of [1n, Symbol('e'), '1', null, undefined, {}, -1, 1.5, 2 ** 32, NaN]) {
            expect(world.isAlive(value as never)).toBe(false);
        }
        expect(world.isAlive(e)).toBe(true);
    });

    test('a field named __proto__ is refused where it is defined', () => {
        const schema = JSON.parse('{"__proto__": "f32", "x": "f32"}');
        expectError(() => component('IntegrityProto', schema), 'BAD_SCHEMA');
    });
});

describe('cost of relations', () => {
    test('an 80,000-deep ChildOf chain builds (no walk up the chain per add) and still refuses the cycle at its bottom', async () => {
        const world = await newWorld();
        const chain = world.spawnMany(80_000, Position);
        for (let i = 1; i < chain.length; i++) world.setParent(chain[i]!, chain[i - 1]!);
        for (let i = 1; i < 1000; i++) world.add(world.spawn(Position), ChildOf(chain[chain.length - i]!));
        expectUnchanged(world, () => world.setParent(chain[0]!, chain[chain.length - 1]!), 'CYCLE');
        expect(world.parentOf(chain[79_999]!)).toBe(chain[79_998]);
        expect(world.stats().entityCount).toBe(80_000 + 999);
    });
});

export type { Entity };
