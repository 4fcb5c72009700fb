// world.reclaimArchetypes(): empty archetypes are freed, and nothing JS learned about them (a
// field handle's column, the spawn plan, chunk column offsets) outlives them.
import { describe, expect, test } from 'vitest';
import { component, tag } from '../../dist/index.js';
import { expectError, worldPerTest } from './support.js';

const newWorld = worldPerTest();

const Position = component('ReclaimPosition', { x: 'f32', y: 'f32' });
/** Fields before Position's in the chunk: a row of another layout puts x somewhere else. */
const Wide = component('ReclaimWide', { a: 'f64', b: 'f64', c: 'f64', d: 'f64' });
const Tags = Array.from({ length: 40 }, (_, i) => tag(`ReclaimT${i}`));

describe('world.reclaimArchetypes', () => {
    test('frees the archetypes that hold no entity and keeps every entity as it was', async () => {
        const world = await newWorld();
        const kept: [number, number][] = [];
        for (let i = 0; i < Tags.length; i++) {
            const e = world.spawn(Position({ x: i, y: -i }), Tags[i]!, Tags[(i + 1) % Tags.length]!);
            if (i % 4 === 0) kept.push([e, i]);
            else world.despawn(e);
        }
        const before = world.stats().archetypeCount;
        const freed = world.reclaimArchetypes();
        expect(freed).toBe(before - world.stats().archetypeCount);
        // The empty set's, and one per kept entity at most (some may share one).
        expect(world.stats().archetypeCount).toBeLessThanOrEqual(2 + kept.length);
        expect(freed).toBeGreaterThanOrEqual(Tags.length - kept.length - 1);
        for (const [e, i] of kept) expect(world.get(e, Position)).toEqual({ x: i, y: -i });
        expect(world.query({ all: [Position] }).count()).toBe(kept.length);
        expect(world.reclaimArchetypes()).toBe(0);
        world.validate();
    });

    test('a field handle made before writes the right cell of archetypes made after', async () => {
        const world = await newWorld();
        const x = world.field(Position, 'x');
        for (let round = 0; round < 20; round++) {
            // The handle learns this archetype's column of x...
            const gone = world.spawn(Position, Tags[round]!);
            x.set(gone, 1);
            world.despawn(gone);
            world.reclaimArchetypes();
            // ...which is freed; a new one of another layout may take its address.
            const e = world.spawn(Wide({ a: 5, b: 6, c: 7, d: 8 }), Position({ y: 9 }), Tags[round]!);
            x.set(e, round + 0.5);
            expect(x.get(e)).toBe(round + 0.5);
            const q = world.query({ all: [Wide, Position, Tags[round]!] });
            for (const chunk of q) {
                expect(Array.from(chunk.column(Position, 'x'))).toEqual([round + 0.5]);
                expect(Array.from(chunk.column(Position, 'y'))).toEqual([9]);
                expect(Array.from(chunk.column(Wide, 'd'))).toEqual([8]);
            }
            q.close();
            world.despawn(e);
        }
        world.validate();
    });

    test('the latest spawn shape spawns again after its archetype was freed', async () => {
        const world = await newWorld();
        const T = Tags[0]!;
        world.despawn(world.spawn(Position, T));
        world.despawn(world.spawn(Position, T)); // planned
        expect(world.reclaimArchetypes()).toBeGreaterThan(0);
        const e = world.spawn(Position, T);
        expect(world.has(e, T) && world.has(e, Position)).toBe(true);
        world.validate();
    });

    test('a chunk loop reads right columns of archetypes made after one was freed', async () => {
        const world = await newWorld();
        const q = world.query({ all: [Position] });
        for (let round = 0; round < 10; round++) {
            const e = world.spawn(round % 2 ? Wide : Tags[round]!, Position({ x: round, y: 2 * round }));
            for (const chunk of q) {
                expect(Array.from(chunk.column(Position, 'x'))).toEqual([round]);
                expect(Array.from(chunk.column(Position, 'y'))).toEqual([2 * round]);
            }
            world.despawn(e);
            world.reclaimArchetypes();
        }
        world.validate();
    });

    test('is refused inside a loop over a query, and frees nothing', async () => {
        const world = await newWorld();
        world.despawn(world.spawn(Position, Tags[3]!));
        world.spawn(Position);
        const before = world.stats().archetypeCount;
        for (const _ of world.query({ all: [Position] })) {
            const error = expectError(() => world.reclaimArchetypes(), 'INVALID_ARGUMENT');
            expect(error.message).toContain('inside a loop over a query');
        }
        expect(world.stats().archetypeCount).toBe(before);
        expect(world.reclaimArchetypes()).toBe(1);
    });
});
