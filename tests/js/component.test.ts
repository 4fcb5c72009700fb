// component() and tag(): definitions, schema validation, field metadata, registration per world.
import { describe, expect, test } from 'vitest';

import { component, isComponent, limits, tag } from '../../dist/index.js';
import { expectError, worldPerTest } from './support.js';

const newWorld = worldPerTest();

const Position = component('Position', { x: 'f32', y: 'f32' });
const Inventory = component('Inventory', { items: ['u32', 4], count: 'u8' });
const Frozen = tag('Frozen');

describe('definitions', () => {
    test('a component carries its name, schema and fields in schema order', () => {
        expect(Position.name).toBe('Position');
        expect(String(Position)).toBe('Position');
        expect(Position.isTag).toBe(false);
        expect(Position.schema).toEqual({ x: 'f32', y: 'f32' });
        expect(Position.fields).toHaveLength(2);
        expect(Position.fields).toMatchObject([
            { name: 'x', index: 0, type: 'f32', length: 1 },
            { name: 'y', index: 1, type: 'f32', length: 1 },
        ]);
        expect(isComponent(Position)).toBe(true);
    });

    test('array fields report their type and length', () => {
        expect(Inventory.fields).toMatchObject([
            { name: 'items', index: 0, type: 'u32', length: 4 },
            { name: 'count', index: 1, type: 'u8', length: 1 },
        ]);
    });

    test('every field type is accepted, with its metadata', () => {
        const types = ['f32', 'f64', 'i8', 'u8', 'i16', 'u16', 'i32', 'u32'] as const;
        const All = component('AllTypes', Object.fromEntries(types.map((t) => [`v_${t}`, t])));
        expect(All.fields.map((f) => [f.name, f.type, f.index])).toEqual(types.map((t, i) => [`v_${t}`, t, i]));
    });

    test('a tag has no fields', () => {
        expect(Frozen.name).toBe('Frozen');
        expect(Frozen.isTag).toBe(true);
        expect(Frozen.fields).toEqual([]);
        expect(Frozen.schema).toEqual({});
        expect(isComponent(Frozen)).toBe(true);
        expect(component('EmptySchema', {}).isTag).toBe(true);
    });

    test('schema and fields are frozen copies: changing the input later changes nothing', () => {
        const schema: Record<string, 'f32' | 'i32'> = { a: 'f32' };
        const Copied = component('Copied', schema);
        schema.a = 'i32';
        schema.b = 'f32';
        expect(Copied.schema).toEqual({ a: 'f32' });
        expect(Copied.fields.map((f) => f.type)).toEqual(['f32']);
        expect(Object.isFrozen(Copied.schema)).toBe(true);
        expect(Object.isFrozen(Copied.fields)).toBe(true);
        expect(Object.isFrozen(Copied.fields[0])).toBe(true);
    });

    test('calling a component makes an initializer naming it and its values', () => {
        const init = Position({ x: 1 });
        expect(init.component).toBe(Position);
        expect(init.values).toEqual({ x: 1 });
        expectError(() => Position(null as never), 'BAD_VALUE', { component: 'Position' });
        expectError(() => Position(3 as never), 'BAD_VALUE', { component: 'Position' });
    });

    test('isComponent recognises only definitions', () => {
        expect(isComponent(() => 0)).toBe(false);
        expect(isComponent({ name: 'Position', schema: { x: 'f32' } })).toBe(false);
        expect(isComponent(Position({ x: 1 }))).toBe(false);
        expect(isComponent(undefined)).toBe(false);
        expect(isComponent('Position')).toBe(false);
    });

    test('limits match the C core', () => {
        expect(limits).toEqual({ maxFields: 64, maxArrayLength: 256, maxNameBytes: 127 });
    });
});

describe('schema validation', () => {
    const bad = (name: unknown, schema: unknown) => () => component(name as string, schema as {});

    test('component names: non-empty strings of at most 127 UTF-8 bytes, without NUL', () => {
        expectError(bad('', { x: 'f32' }), 'BAD_SCHEMA', { operation: 'component' });
        expectError(bad(42, { x: 'f32' }), 'BAD_SCHEMA', { operation: 'component' });
        expectError(bad(undefined, { x: 'f32' }), 'BAD_SCHEMA');
        expectError(bad('a'.repeat(128), { x: 'f32' }), 'BAD_SCHEMA');
        // 64 two-byte characters: 64 characters but 128 bytes.
        expectError(bad('é'.repeat(64), { x: 'f32' }), 'BAD_SCHEMA');
        expectError(bad('bad\0name', { x: 'f32' }), 'BAD_SCHEMA', { component: 'bad\0name' });
        expectError(() => tag(''), 'BAD_SCHEMA');
    });

    test('the schema must be a plain object', () => {
        for (const schema of [null, undefined, 'f32', 5, [['x', 'f32']]]) {
            expectError(bad('S', schema), 'BAD_SCHEMA', { component: 'S' });
        }
    });

    test('field names: non-empty, at most 127 bytes, without NUL', () => {
        expectError(bad('S', { '': 'f32' }), 'BAD_SCHEMA', { component: 'S', field: '' });
        expectError(bad('S', { ['f'.repeat(128)]: 'f32' }), 'BAD_SCHEMA', { component: 'S' });
        expectError(bad('S', { 'a\0b': 'f32' }), 'BAD_SCHEMA', { field: 'a\0b' });
    });

    test('field types: one of the eight, or [type, 2..256]', () => {
        for (const spec of ['f16', 'float', 'F32', '', 1, null, ['f16', 4], ['string', 2]]) {
            expectError(bad('S', { v: spec }), 'BAD_SCHEMA', { component: 'S', field: 'v' });
        }
        for (const length of [1, 0, -2, 257, 2.5, NaN, '4', undefined]) {
            expectError(bad('S', { v: ['f32', length] }), 'BAD_SCHEMA', { component: 'S', field: 'v' });
        }
    });

    test('at most 64 fields', () => {
        const fields = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`f${i}`, 'u8']));
        expectError(bad('S', fields(65)), 'BAD_SCHEMA', { component: 'S' });
        expect(component('Wide', fields(64) as Record<string, 'u8'>).fields).toHaveLength(64);
    });

    test('the limits themselves are accepted and work in a world', async () => {
        const longName = 'n'.repeat(127);
        const Edge = component(longName, { [`${'f'.repeat(127)}`]: 'u8', pair: ['f64', 2], big: ['i16', 256] });
        const world = await newWorld();
        const big = Array.from({ length: 256 }, (_, i) => i * 100 - 12800);
        const e = world.spawn(Edge({ pair: [0.5, -0.25], big }));
        expect(world.get(e, Edge, 'pair')).toEqual([0.5, -0.25]);
        expect(world.get(e, Edge, 'big')).toEqual(big);
        expect(world.get(e, Edge, 'f'.repeat(127))).toBe(0);
    });
});

// Issue 16, rule 6: what counts as a change is part of the definition.
describe('changeDetection', () => {
    test("'write' by default, 'value' on request; anything else, and on a tag, BAD_SCHEMA", async () => {
        expect(Position.changeDetection).toBe('write');
        const Health = component('OptionHealth', { value: 'i32' }, { changeDetection: 'value' });
        expect(Health.changeDetection).toBe('value');
        expectError(() => component('Bad', { v: 'i32' }, { changeDetection: 'values' as 'value' }), 'BAD_SCHEMA', { component: 'Bad' });
        expectError(() => tag('BadTag', { changeDetection: 'value' } as object), 'BAD_SCHEMA', { component: 'BadTag' });
        // A field-less component made with component(): the C core refuses it at first use.
        const Empty = component('EmptyByValue', {}, { changeDetection: 'value' });
        const world = await newWorld();
        expectError(() => world.spawn(Empty), 'BAD_SCHEMA', { component: 'EmptyByValue' });
        expect(world.stats().componentCount).toBe(0);
        expect(world.get(world.spawn(Health({ value: 3 })), Health, 'value')).toBe(3);
    });
});

describe('registration per world', () => {
    test('defining a component registers nothing; first use in a world registers it there', async () => {
        const world = await newWorld();
        expect(world.stats().componentCount).toBe(0);
        const e = world.spawn();
        expect(world.stats().componentCount).toBe(0);
        // Reading does not register: no entity can have a component the world never met.
        expect(world.has(e, Position)).toBe(false);
        expectError(() => world.get(e, Position), 'MISSING_COMPONENT', { entity: e, component: 'Position' });
        expectError(() => world.get(e, Position, 'x'), 'MISSING_COMPONENT', { field: 'x' });
        expect(world.stats().componentCount).toBe(0);
        world.add(e, Frozen);
        expect(world.stats().componentCount).toBe(1);
        world.query({ all: [Inventory] });
        expect(world.stats().componentCount).toBe(2);
        // Using them again registers nothing more.
        world.spawn(Position, Frozen, Inventory);
        expect(world.stats().componentCount).toBe(3);
        expect(world.componentById(0)).toBe(Frozen);
        expect(world.componentById(1)).toBe(Inventory);
        expect(world.componentById(2)).toBe(Position);
        expect(world.componentById(3)).toBeUndefined();
    });

    test('one definition works in two worlds, registered in different orders, with separate data', async () => {
        const a = await newWorld();
        const b = await newWorld();
        const ea = a.spawn(Position({ x: 1, y: 2 }), Inventory({ count: 3 }));
        const eb = b.spawn(Inventory({ items: [9, 8, 7, 6], count: 5 }), Position({ x: -1, y: -2 }));
        expect(a.componentById(0)).toBe(Position);
        expect(b.componentById(0)).toBe(Inventory);
        a.set(ea, Position, { x: 10 });
        expect(a.get(ea, Position)).toEqual({ x: 10, y: 2 });
        expect(b.get(eb, Position)).toEqual({ x: -1, y: -2 });
        expect(a.get(ea, Inventory)).toEqual({ items: [0, 0, 0, 0], count: 3 });
        expect(b.get(eb, Inventory)).toEqual({ items: [9, 8, 7, 6], count: 5 });
    });

    test('two definitions with one name in one world: DUPLICATE_NAME, and the world is unchanged', async () => {
        const First = component('Twin', { a: 'f32' });
        const Second = component('Twin', { b: 'i32' });
        const world = await newWorld();
        const e = world.spawn(First({ a: 1.5 }));
        const before = world.stats();
        expectError(() => world.spawn(Second), 'DUPLICATE_NAME', { component: 'Twin', operation: 'world.spawn' });
        expectError(() => world.add(e, Second), 'DUPLICATE_NAME', { component: 'Twin' });
        expectError(() => world.query({ all: [Second] }), 'DUPLICATE_NAME', { component: 'Twin' });
        expect(world.stats().componentCount).toBe(before.componentCount);
        expect(world.stats().entityCount).toBe(1);
        expect(world.get(e, First)).toEqual({ a: 1.5 });
        world.validate();
        // Each is fine in a world of its own.
        const other = await newWorld();
        expect(other.get(other.spawn(Second({ b: 7 })), Second)).toEqual({ b: 7 });
    });

    test('a tag and a component may not share a name either', async () => {
        const world = await newWorld();
        world.spawn(component('Shared', { v: 'u8' }));
        expectError(() => world.spawn(tag('Shared')), 'DUPLICATE_NAME', { component: 'Shared' });
    });
});
