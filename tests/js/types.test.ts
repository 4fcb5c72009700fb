// Type tests for the schema inference: checked by `npx tsc -p tests/js/tsconfig.json` (every
// expectTypeOf and every @ts-expect-error line), and run, so the runtime agrees with the types.
import { describe, expect, expectTypeOf, test } from 'vitest';

import {
    ChildOf,
    component,
    relation,
    tag,
    type Changes,
    type Pair,
    type PairEvent,
    type Relation,
    type Storage,
    type Chunk,
    type ColumnOf,
    type Component,
    type ComponentInit,
    type Entity,
    type FieldName,
    type FloatFieldName,
    type Values,
    type ValuesInput,
} from '../../dist/index.js';
import type { Delta, Replicator, ReplicatorOptions } from '../../dist/index.js';
import { expectError, worldPerTest } from './support.js';

const newWorld = worldPerTest();

const Position = component('Position', { x: 'f32', y: 'f32' });
const Mixed = component('Mixed', {
    a: 'f64',
    b: 'i8',
    c: 'u8',
    d: 'i16',
    e: 'u16',
    f: 'i32',
    g: 'u32',
    slots: ['u32', 4],
    weights: ['f32', 3],
});
const Frozen = tag('Frozen');

describe('schema inference', () => {
    test('component() keeps field names and types', () => {
        expectTypeOf(Position).toEqualTypeOf<Component<{ readonly x: 'f32'; readonly y: 'f32' }>>();
        expectTypeOf<FieldName<typeof Position.schema>>().toEqualTypeOf<'x' | 'y'>();
        expectTypeOf<FloatFieldName<typeof Mixed.schema>>().toEqualTypeOf<'a' | 'weights'>();
        expectTypeOf(Frozen).toEqualTypeOf<Component<{}>>();
        expectTypeOf(Position({ x: 1 })).toEqualTypeOf<ComponentInit<{ readonly x: 'f32'; readonly y: 'f32' }>>();
        expect(Position.fields.map((f) => f.name)).toEqual(['x', 'y']);
    });

    test('initial values: known fields, numbers, array-likes for array fields', () => {
        expectTypeOf<ValuesInput<typeof Mixed.schema>>().toEqualTypeOf<{
            readonly a?: number;
            readonly b?: number;
            readonly c?: number;
            readonly d?: number;
            readonly e?: number;
            readonly f?: number;
            readonly g?: number;
            readonly slots?: ArrayLike<number>;
            readonly weights?: ArrayLike<number>;
        }>();
        Mixed({ slots: new Uint32Array(4), weights: [1, 2, 3] });
        // @ts-expect-error: no field z
        Position({ z: 1 });
        // @ts-expect-error: a number field takes numbers
        Position({ x: '1' });
        // @ts-expect-error: an array field takes an array
        Mixed({ slots: 1 });
        // @ts-expect-error: a scalar field does not take an array
        Mixed({ a: [1] });
    });
});

describe('columns', () => {
    test('chunk.column is the typed array of the field type; array fields too', async () => {
        const world = await newWorld();
        world.spawn(Position, Mixed);
        for (const chunk of world.query({ all: [Position, Mixed] })) {
            expectTypeOf(chunk).toEqualTypeOf<Chunk>();
            const x = chunk.column(Position, 'x');
            expectTypeOf(x).toEqualTypeOf<Float32Array>();
            expect(x).toBeInstanceOf(Float32Array);
            const columns = {
                a: chunk.column(Mixed, 'a'),
                b: chunk.column(Mixed, 'b'),
                c: chunk.column(Mixed, 'c'),
                d: chunk.column(Mixed, 'd'),
                e: chunk.column(Mixed, 'e'),
                f: chunk.column(Mixed, 'f'),
                g: chunk.column(Mixed, 'g'),
                slots: chunk.column(Mixed, 'slots'),
                weights: chunk.column(Mixed, 'weights'),
            };
            expectTypeOf(columns).toEqualTypeOf<{
                a: Float64Array;
                b: Int8Array;
                c: Uint8Array;
                d: Int16Array;
                e: Uint16Array;
                f: Int32Array;
                g: Uint32Array;
                slots: Uint32Array;
                weights: Float32Array;
            }>();
            expect(Object.values(columns).map((v) => v.constructor)).toEqual([
                Float64Array,
                Int8Array,
                Uint8Array,
                Int16Array,
                Uint16Array,
                Int32Array,
                Uint32Array,
                Uint32Array,
                Float32Array,
            ]);
            expectTypeOf<ColumnOf<typeof Mixed.schema, 'c'>>().toEqualTypeOf<Uint8Array>();
            expectTypeOf(chunk.entities).toEqualTypeOf<Uint32Array>();
            expectTypeOf(chunk.rows).toEqualTypeOf<Uint32Array>();
            expectTypeOf(chunk.slots).toEqualTypeOf<Uint32Array>(); // the deprecated name of rows
            // @ts-expect-error: misspelt field
            expectError(() => chunk.column(Position, 'z'), 'UNKNOWN_FIELD');
            // @ts-expect-error: a tag has no columns
            expectError(() => chunk.column(Frozen, 'x'), 'TAG_HAS_NO_DATA');
        }
    });
});

describe('get and set', () => {
    test('get returns the schema as numbers and number arrays', async () => {
        const world = await newWorld();
        const e = world.spawn(Position({ x: 1, y: 2 }), Mixed({ slots: [1, 2, 3, 4] }));
        expectTypeOf(e).toEqualTypeOf<Entity>();
        const position = world.get(e, Position);
        expectTypeOf(position).toEqualTypeOf<{ x: number; y: number }>();
        expect(position).toEqual({ x: 1, y: 2 });
        expectTypeOf(world.get(e, Mixed)).toEqualTypeOf<Values<typeof Mixed.schema>>();
        expectTypeOf(world.get(e, Mixed).slots).toEqualTypeOf<number[]>();
        expectTypeOf(world.get(e, Mixed, 'slots')).toEqualTypeOf<number[]>();
        expectTypeOf(world.get(e, Position, 'x')).toEqualTypeOf<number>();
        expect(world.get(e, Mixed, 'slots')).toEqual([1, 2, 3, 4]);
        expect(typeof world.get(e, Position, 'x')).toBe('number');
        // @ts-expect-error: misspelt field
        expectError(() => world.get(e, Position, 'z'), 'UNKNOWN_FIELD');
        // @ts-expect-error: Values has no such property
        expect(world.get(e, Position).z).toBeUndefined();
    });

    test('set takes known fields with values of the right shape', async () => {
        const world = await newWorld();
        const e = world.spawn(Position, Mixed);
        world.set(e, Position, { x: 1 });
        world.set(e, Position, 'y', 2);
        world.set(e, Mixed, 'slots', new Uint32Array([1, 2, 3, 4]));
        world.set(e, Mixed, { weights: [0.5, 1, 2], b: -1 });
        expect(world.get(e, Position)).toEqual({ x: 1, y: 2 });
        // @ts-expect-error: misspelt field (object form)
        expectError(() => world.set(e, Position, { z: 1 }), 'UNKNOWN_FIELD');
        // @ts-expect-error: misspelt field (one field)
        expectError(() => world.set(e, Position, 'z', 1), 'UNKNOWN_FIELD');
        // @ts-expect-error: a string into a number field
        expectError(() => world.set(e, Position, 'x', '1'), 'BAD_VALUE');
        // @ts-expect-error: a string into a number field (object form)
        expectError(() => world.set(e, Position, { x: '1' }), 'BAD_VALUE');
        // @ts-expect-error: a number into an array field
        expectError(() => world.set(e, Mixed, 'slots', 4), 'BAD_VALUE');
        // @ts-expect-error: an array into a scalar field
        expectError(() => world.set(e, Mixed, { a: [1] }), 'BAD_VALUE');
        expect(world.get(e, Position)).toEqual({ x: 1, y: 2 });
    });
});

describe('kernels and results', () => {
    test('kernels take fields of every type; addScaled a source of the same spec', async () => {
        const world = await newWorld();
        world.spawn(Position, Mixed);
        const q = world.query({ all: [Position, Mixed] });
        q.offset(Position, 'x', 1);
        q.fill(Mixed, 'weights', 2);
        q.addScaled(Position, 'y', Position, 'x', 1);
        expectTypeOf(q.countdown(Mixed, 'a', 1)).toEqualTypeOf<Uint32Array>();
        q.offset(Mixed, 'f', 1); // i32
        q.scale(Mixed, 'c', 2); // u8
        q.fill(Mixed, 'slots', 7); // u32 array
        q.clamp(Mixed, 'd', 0, 1); // i16
        expect(world.get(world.query({ all: [Mixed] }).entities()[0]!, Mixed)).toMatchObject({ f: 1, c: 0, slots: [7, 7, 7, 7], d: 0 });
        // @ts-expect-error: no such field
        expectError(() => q.offset(Mixed, 'nope', 1), 'UNKNOWN_FIELD');
        // @ts-expect-error: integer source field
        expectError(() => q.addScaled(Position, 'x', Mixed, 'g', 1), 'BAD_FIELD_TYPE');
        // @ts-expect-error: an f64 source for an f32 target
        expectError(() => q.addScaled(Position, 'x', Mixed, 'a', 1), 'BAD_FIELD_TYPE');
        // @ts-expect-error: an f32 array of 3 for a scalar f32 target
        expectError(() => q.addScaled(Position, 'x', Mixed, 'weights', 1), 'BAD_SIZE');
        q.addScaled(Mixed, 'weights', Mixed, 'weights', 0); // the same spec: fine (k = 0 keeps the check below)
        // @ts-expect-error: misspelt field
        expectError(() => q.countdown(Position, 'z', 1), 'UNKNOWN_FIELD');
        expect(world.get(world.query({ all: [Mixed] }).entities()[0]!, Mixed, 'weights')).toEqual([2, 2, 2]);
    });

    test('drain results are typed arrays', async () => {
        const world = await newWorld();
        const sub = world.subscribe({ added: [Position], removed: [Position] });
        const changes = sub.drain();
        expectTypeOf(changes).toEqualTypeOf<Changes>();
        expectTypeOf(changes.entities).toEqualTypeOf<Uint32Array>();
        expectTypeOf(changes.removedOf(Position)).toEqualTypeOf<Uint32Array>();
        expect(changes.empty).toBe(true);
    });
});

describe('sparse components and relations', () => {
    const Selected = tag('Selected', { storage: 'sparse' });
    const Damage = component('Damage', { amount: 'f32' }, { storage: 'sparse' });
    const Likes = relation('Likes', { amount: 'f32', tags: ['u8', 2] });
    const Owns = relation('Owns');

    test('relation() keeps the pair schema; a relation makes pairs; storage is a Storage', () => {
        expectTypeOf(Likes).toEqualTypeOf<Relation<{ readonly amount: 'f32'; readonly tags: readonly ['u8', 2] }>>();
        expectTypeOf(Owns).toEqualTypeOf<Relation<{}>>();
        expectTypeOf(ChildOf).toEqualTypeOf<Relation<{}>>();
        expectTypeOf(Likes(1, { amount: 2 })).toEqualTypeOf<Pair<typeof Likes.schema>>();
        expectTypeOf(Damage.storage).toEqualTypeOf<Storage>();
        expect(Damage.storage).toBe('sparse');
        // @ts-expect-error: no field z in the pair data
        Likes(1, { z: 1 });
        // @ts-expect-error: options are the third argument
        expectError(() => relation('Bad', { exclusive: true }), 'BAD_SCHEMA');
        // @ts-expect-error: options are booleans
        expectError(() => relation('Bad2', {}, { exclusive: 1 }), 'BAD_SCHEMA');
        // @ts-expect-error: storage is 'table' or 'sparse'
        expectError(() => component('Bad3', { v: 'u8' }, { storage: 'heap' }), 'BAD_SCHEMA');
    });

    test('pair methods are typed from the relation schema; relations are not components', async () => {
        const world = await newWorld();
        const [a, b] = world.spawnMany(2, Position);
        world.addPair(a!, Likes, b!, { amount: 1, tags: [1, 2] });
        expectTypeOf(world.getPair(a!, Likes, b!)).toEqualTypeOf<{ amount: number; tags: number[] }>();
        expectTypeOf(world.getPair(a!, Likes, b!, 'amount')).toEqualTypeOf<number>();
        expectTypeOf(world.targets(a!, Likes)).toEqualTypeOf<Entity[]>();
        expectTypeOf(world.target(a!, Likes)).toEqualTypeOf<Entity | undefined>();
        expectTypeOf(world.pairs(Likes)).toEqualTypeOf<Array<[Entity, Entity]>>();
        expectTypeOf(world.parentOf(a!)).toEqualTypeOf<Entity | undefined>();
        expect(world.getPair(a!, Likes, b!)).toEqual({ amount: 1, tags: [1, 2] });
        world.setPair(a!, Likes, b!, 'tags', [3, 4]);
        // @ts-expect-error: misspelt pair field
        expectError(() => world.setPair(a!, Likes, b!, 'amont', 1), 'UNKNOWN_FIELD');
        // @ts-expect-error: a string into a number field
        expectError(() => world.setPair(a!, Likes, b!, { amount: '1' }), 'BAD_VALUE');
        // @ts-expect-error: a component is not a relation
        expectError(() => world.addPair(a!, Position, b!), 'NOT_A_RELATION');
        // @ts-expect-error: a relation has no per-entity data: get a pair
        expectError(() => world.get(a!, Likes), 'NEEDS_TARGET');
        for (const chunk of world.query({ all: [Likes] })) {
            // @ts-expect-error: nor columns
            expectError(() => chunk.column(Likes, 'amount'), 'SPARSE_COMPONENT');
        }
        world.spawn(Position, Selected, Damage({ amount: 1 }), Likes(b!, { amount: 2 }), ChildOf(a!));
        world.add(b!, Owns(a!), Selected);
        world.remove(b!, Owns, Selected, Likes(a!));
        expect(world.has(b!, Owns(a!))).toBe(false);
        const q = world.query({ all: [Position, Likes(b!)], none: [ChildOf, Owns], any: [Selected, Likes], changed: [Likes] });
        expect(q.consumer).toBe(true);
        q.close();
        // @ts-expect-error: a pair is not a filter
        expectError(() => world.query({ added: [Likes(b!)] }), 'INVALID_ARGUMENT');
    });

    test('replication is typed: a Delta is bytes, tick, keyframe; applyDelta is a boolean', async () => {
        const world = await newWorld();
        const replicator = world.replicator({ components: [Position], scope: { all: [Position] }, history: 8 });
        expectTypeOf(replicator).toEqualTypeOf<Replicator>();
        const delta = replicator.peer().encode();
        expectTypeOf(delta).toEqualTypeOf<Delta>();
        expectTypeOf(delta.bytes).toEqualTypeOf<Uint8Array>();
        expectTypeOf(delta.tick).toEqualTypeOf<number>();
        expectTypeOf(world.applyDelta).returns.toEqualTypeOf<boolean>();
        expectTypeOf<ReplicatorOptions['history']>().toEqualTypeOf<number | undefined>();
        expect(() =>
            // @ts-expect-error scope takes matching terms only, not filters (refused at run time too)
            world.replicator({ scope: { changed: [Position] } }),
        ).toThrow(/unknown key "changed" in the scope/);
        expect(delta.keyframe).toBe(true);
    });

    test('pair events are typed', async () => {
        const world = await newWorld();
        const sub = world.subscribe({ pairs: [Likes, ChildOf] });
        const changes = sub.drain();
        expectTypeOf(changes.pairEvents).toEqualTypeOf<readonly PairEvent[]>();
        expectTypeOf<Changes['pairsAdded'][number]['kind']>().toEqualTypeOf<'added' | 'removed' | 'changed' | 'moved'>();
        expectTypeOf<PairEvent['relation']>().toEqualTypeOf<Relation<any>>();
        expectTypeOf<PairEvent['source']>().toEqualTypeOf<Entity>();
        expect(changes.pairEvents).toEqual([]);
        // @ts-expect-error: pairs takes relations
        expectError(() => world.subscribe({ pairs: [Position] }), 'NOT_A_RELATION');
    });
});
