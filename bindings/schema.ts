/**
 * Components and tags: defined once, at module level, usable in any world. A schema's field
 * names and types flow into the TypeScript types, so `chunk.column(Position, 'x')` is a
 * `Float32Array` and a misspelt field is a type error.
 *
 * @module
 */
import { TesseraError } from './errors.js';

/** Scalar types a field can have; the C core stores them natively, little-endian. */
export type FieldType = 'f32' | 'f64' | 'i8' | 'u8' | 'i16' | 'u16' | 'i32' | 'u32';

/** A field: a scalar type, or `[type, length]` for a fixed array of `length` (2..256) scalars. */
export type FieldSpec = FieldType | readonly [FieldType, number];

/** A component's fields by name (at most 64). `{}` makes a tag. */
export type Schema = { readonly [field: string]: FieldSpec };

/** The typed array of each field type. */
export interface TypedArrayOf {
    f32: Float32Array;
    f64: Float64Array;
    i8: Int8Array;
    u8: Uint8Array;
    i16: Int16Array;
    u16: Uint16Array;
    i32: Int32Array;
    u32: Uint32Array;
}

/** Any typed array a column can be. */
export type ColumnArray = TypedArrayOf[FieldType];

/** The scalar type of a field spec. */
export type ScalarOf<F extends FieldSpec> = F extends readonly [infer T extends FieldType, number] ? T : F extends FieldType ? F : never;

/** Field names of a schema (as strings). */
export type FieldName<S extends Schema> = keyof S & string;

/** Names of the fields of a schema whose type is `f32` or `f64` (what kernels accept). */
export type FloatFieldName<S extends Schema> = {
    [K in FieldName<S>]: ScalarOf<S[K]> extends 'f32' | 'f64' ? K : never;
}[FieldName<S>];

/** Names of the fields of `S` with exactly the spec `F` (same type and array length). */
export type FieldLike<S extends Schema, F extends FieldSpec> = {
    [K in FieldName<S>]: [S[K]] extends [F] ? ([F] extends [S[K]] ? K : never) : never;
}[FieldName<S>];

/** The column view type of one field: `Float32Array` for an `f32` field, and so on. */
export type ColumnOf<S extends Schema, K extends FieldName<S>> = TypedArrayOf[ScalarOf<S[K]>];

/** The value of one field as `get` returns it: a number, or an array for array fields. */
export type FieldValue<F extends FieldSpec> = F extends FieldType ? number : number[];

/** The value of one field as `set` and initial values take it. */
export type FieldInput<F extends FieldSpec> = F extends FieldType ? number : ArrayLike<number>;

/** All fields of a component, as `world.get(e, C)` returns them. */
export type Values<S extends Schema> = { -readonly [K in FieldName<S>]: FieldValue<S[K]> };

/** Some fields of a component, as `world.set` and initial values take them. */
export type ValuesInput<S extends Schema> = { readonly [K in FieldName<S>]?: FieldInput<S[K]> };

/**
 * One field's values for many entities (`spawnMany`): a column of `count × length` numbers,
 * entity after entity, as `chunk.column` lays them out (an array or any typed array); for a
 * scalar field also a single number, which every entity takes.
 */
export type ColumnInput<F extends FieldSpec> = F extends FieldType ? ArrayLike<number> | number : ArrayLike<number>;

/** Values per entity of a component, by field; fields left out start at 0. */
export type ColumnsInput<S extends Schema> = { readonly [K in FieldName<S>]?: ColumnInput<S[K]> };

/**
 * Where a component's data lives. `'table'` (the default): in the chunks of the entity's
 * archetype, so chunk loops get typed-array columns. `'sparse'`: in a sparse set beside the
 * chunks, so adding and removing it moves nothing; for markers and data that come and go often
 * (Selected, Damaged, Target). Sparse components have no chunk columns.
 */
export type Storage = 'table' | 'sparse';

/**
 * What counts as a change of a component. `'write'` (the default): every write the core makes
 * (`set`, an `add` with values of a component the entity has, kernels) is a change, whatever it
 * writes. `'value'`: only a write that changes the stored bytes is, as a replica compares them
 * (`set(e, Health, 'value', 5)` over 5 is no change; `-0` over `0` is one). Marks (`writes`,
 * `markChanged`) are changes either way: the core did not see those writes. Bevy's
 * `set_if_neq`, made the rule of the component, so that every call site and every replica
 * agree on what a change is.
 */
export type ChangeDetection = 'write' | 'value';

/** Options of {@link component} and {@link tag}. */
export interface ComponentOptions {
    /** `'table'` (default) or `'sparse'`; see {@link Storage}. */
    readonly storage?: Storage;
    /**
     * `false` keeps the component out of deltas (`world.replicator`): local state such as
     * render handles or client-side effects. Default `true`.
     */
    readonly replicate?: boolean;
    /**
     * `'value'`: a write is a change only when it changes the stored bytes (see
     * {@link ChangeDetection}). Default `'write'`. Not for tags (nothing to compare).
     */
    readonly changeDetection?: ChangeDetection;
}

/** Options of {@link relation}; every flag defaults to false. */
export interface RelationOptions {
    /** A source has at most one target: adding a pair to another target replaces the old one. */
    readonly exclusive?: boolean;
    /**
     * A pair that would make a source its own ancestor throws `CYCLE`. Implies `exclusive`
     * (`{ acyclic: true, exclusive: false }` is refused with `BAD_SCHEMA`).
     */
    readonly acyclic?: boolean;
    /**
     * Despawning a target despawns its sources, recursively (cycles are safe). Without it, the
     * pairs to a despawned target are removed and the sources live on.
     */
    readonly cascade?: boolean;
    /** `false` keeps the relation's pairs out of deltas (see {@link ComponentOptions}). */
    readonly replicate?: boolean;
}

/** A component with initial values, as `Position({ x: 1 })` makes it; spawn and add take it. */
export interface ComponentInit<S extends Schema = Schema> {
    readonly component: Component<S>;
    readonly values: ValuesInput<S>;
}

/**
 * A component with initial values per entity, as `Position.columns({ x: xs, y: ys })` makes
 * it; `world.spawnMany(count, ...)` takes it, entity i getting element i of each column.
 */
export interface ComponentColumns<S extends Schema = Schema> {
    readonly component: Component<S>;
    readonly columns: ColumnsInput<S>;
}

/** How a field is laid out; the same order as in the schema. */
export interface FieldInfo {
    readonly name: string;
    /** Index in the component, as the C core numbers fields. */
    readonly index: number;
    readonly type: FieldType;
    /** Scalars per entity: 1 for a scalar field, n for `[type, n]`. */
    readonly length: number;
}

/**
 * A component type: a name and a schema. Call it with values to get an initializer for
 * `spawn` and `add`: `world.spawn(Position({ x: 1, y: 2 }))`.
 */
export interface Component<S extends Schema = Schema> {
    (values: ValuesInput<S>): ComponentInit<S>;
    /**
     * Initial values per entity for `world.spawnMany`: each field a column of `count × length`
     * numbers (entity i's at `i * length`, as in `chunk.column`), or for a scalar field one
     * number for all. `world.spawnMany(n, Bullet.columns({ x: xs, y: ys }), Velocity)`.
     */
    columns(columns: ColumnsInput<S>): ComponentColumns<S>;
    /** The name the component is registered under in every world (unique per world). */
    readonly name: string;
    /** The schema it was defined with. */
    readonly schema: S;
    /** Its fields in schema order. */
    readonly fields: readonly FieldInfo[];
    /** True for a tag (no fields, no storage). */
    readonly isTag: boolean;
    /** Where its data lives: `'table'` (chunk columns) or `'sparse'` (a sparse set). */
    readonly storage: Storage;
    /** False when deltas leave it out (`{ replicate: false }`). */
    readonly replicate: boolean;
    /** What counts as a change: `'write'` (default) or `'value'`; see {@link ChangeDetection}. */
    readonly changeDetection: ChangeDetection;
    /** Process-wide definition number; worlds map it to their own component id. @internal */
    readonly key: number;
    /** `tes_component_desc_t.flags`. @internal */
    readonly flags: number;
}

/** A component without data: membership only. */
export type Tag = Component<{}>;

/**
 * A relation: entity-to-entity pairs (source, relation, target), each with the relation's
 * fields as its data. Call it with a target to name a pair: `ChildOf(parent)`,
 * `Likes(bob, { amount: 3 })`. A pair goes wherever a component goes in `spawn`, `add`,
 * `remove`, `has` and the `all` / `none` / `any` terms of a query; the bare relation in a query
 * term (or in `has` / `remove`) means "to any target". Pairs never change an entity's
 * archetype: a thousand targets make no new archetype.
 *
 * @example
 * const Likes = relation('Likes', { amount: 'f32' });
 * world.add(alice, Likes(bob, { amount: 3 }));
 * world.targets(alice, Likes); // [bob]
 */
export interface Relation<S extends Schema = Schema> {
    (target: number, values?: ValuesInput<S>): Pair<S>;
    /** The name the relation is registered under in every world (unique per world). */
    readonly name: string;
    /** The schema of each pair's data. */
    readonly schema: S;
    /** The pair data's fields in schema order. */
    readonly fields: readonly FieldInfo[];
    /** True when pairs carry no data. */
    readonly isTag: boolean;
    /** Always true: tells relations from components. */
    readonly isRelation: true;
    /** A source has at most one target (adding another replaces it). */
    readonly exclusive: boolean;
    /** A pair that would close a cycle throws `CYCLE` (implies exclusive). */
    readonly acyclic: boolean;
    /** Despawning a target despawns its sources. */
    readonly cascade: boolean;
    /** False when deltas leave its pairs out (`{ replicate: false }`). */
    readonly replicate: boolean;
    /** @internal */
    readonly key: number;
    /** `tes_component_desc_t.flags`. @internal */
    readonly flags: number;
}

/** One pair of a relation, as `R(target, values?)` makes it: for spawn, add, remove, has, queries. */
export interface Pair<S extends Schema = Schema> {
    readonly relation: Relation<S>;
    /** The target entity; 0 in a query term means any target. */
    readonly target: number;
    /** Initial values of the pair's data (spawn, add), if any. */
    readonly values: ValuesInput<S> | undefined;
}

/**
 * Anything that names a component in an entity's set, with or without initial values, or a
 * pair of a relation.
 */
export type ComponentItem = Component<any> | ComponentInit<any> | Pair<any>;

/** A component or a relation (what worlds register). @internal */
export type Definition = Component<any> | Relation<any>;

/** Limits of the C core (`src/tessera.h`). */
export const limits = {
    maxFields: 64,
    maxArrayLength: 256,
    maxNameBytes: 127,
} as const;

const typeCodes: Record<FieldType, number> = {
    f32: 1,
    f64: 2,
    i8: 3,
    u8: 4,
    i16: 5,
    u16: 6,
    i32: 7,
    u32: 8,
};

/** The C core's `tes_type_t` value of a field type. @internal */
export function typeCode(type: FieldType): number {
    return typeCodes[type];
}

/** Typed array constructor per field type. @internal */
export const arrayTypes = {
    f32: Float32Array,
    f64: Float64Array,
    i8: Int8Array,
    u8: Uint8Array,
    i16: Int16Array,
    u16: Uint16Array,
    i32: Int32Array,
    u32: Uint32Array,
} as const;

/** Internal per-field metadata: name lookup without walking the list. @internal */
export interface FieldMeta extends FieldInfo {
    readonly bytesPerElement: number;
}

/**
 * Each component's fields by name, under a symbol on the component itself: a property load on
 * the hot path (`chunk.column`), where a WeakMap lookup costs several times more.
 */
const FIELDS = Symbol('tessera.fields');
/**
 * Carried by every definition, under a key shared by every copy of the package loaded in one
 * program: a definition from another copy (two bundles, or a library shipping its own) is told
 * apart from a plain wrong value, and refused with an explanation rather than taken for one of
 * this copy's components.
 */
const BRAND = Symbol.for('tessera-ecs.definition');
type WithFields = { [FIELDS]?: Map<string, FieldMeta>; flags?: number };

/** `tes_component_desc_t.flags` bits. @internal */
export const FLAGS = { sparse: 1, relation: 2, exclusive: 4, acyclic: 8, cascade: 16, local: 32, byValue: 64 } as const;
let nextKey = 0;
const encoder = new TextEncoder();

/**
 * Defines a component type. Field names and types flow into the TypeScript types.
 *
 * @param name unique per world, 1..127 UTF-8 bytes.
 * @param schema fields by name: `'f32'`, `'f64'`, `'i8'`, `'u8'`, `'i16'`, `'u16'`, `'i32'`,
 *   `'u32'`, or `[type, length]` for a fixed array per entity.
 * @param options `storage: 'sparse'` keeps the data in a sparse set instead of chunk columns
 *   (see {@link Storage}); `replicate: false` keeps it out of deltas; `changeDetection:
 *   'value'` makes a write a change only when it changes the stored bytes (see
 *   {@link ChangeDetection}).
 * @example
 * const Position = component('Position', { x: 'f32', y: 'f32' });
 * const Inventory = component('Inventory', { items: ['u32', 8], count: 'u8' });
 * const Target = component('Target', { entity: 'u32' }, { storage: 'sparse' });
 * const Health = component('Health', { value: 'i32' }, { changeDetection: 'value' });
 */
export function component<const S extends Schema>(name: string, schema: S, options: ComponentOptions = {}): Component<S> {
    const operation = 'component';
    const metas = checkSchema(operation, name, schema);
    checkOptions(operation, name, options, { storage: ['table', 'sparse'], replicate: 'boolean', changeDetection: ['write', 'value'] });
    const storage: Storage = options.storage ?? 'table';
    const replicate = options.replicate !== false;
    const changeDetection: ChangeDetection = options.changeDetection ?? 'write';
    const init = (values: ValuesInput<S>): ComponentInit<S> => {
        if (typeof values !== 'object' || values === null) {
            throw new TesseraError('BAD_VALUE', `${name}(values)`, 'values must be an object', {
                component: name,
            });
        }
        return { component: made, values };
    };
    const columns = (values: ColumnsInput<S>): ComponentColumns<S> => {
        if (typeof values !== 'object' || values === null) {
            throw new TesseraError('BAD_VALUE', `${name}.columns(values)`, 'values must be an object of columns', {
                component: name,
            });
        }
        return { component: made, columns: values };
    };
    const flags =
        (storage === 'sparse' ? FLAGS.sparse : 0) | (replicate ? 0 : FLAGS.local) | (changeDetection === 'value' ? FLAGS.byValue : 0);
    const made = define(init, name, schema, metas, flags, {
        storage: { value: storage, enumerable: true },
        replicate: { value: replicate, enumerable: true },
        changeDetection: { value: changeDetection, enumerable: true },
        columns: { value: columns },
    }) as unknown as Component<S>;
    return made;
}

/**
 * Defines a relation: pairs (source, relation, target) between entities, each with the
 * schema's fields as its data (none by default). See {@link Relation}.
 *
 * @param options `exclusive` (one target per source), `acyclic` (no cycles; implies
 *   exclusive), `cascade` (despawning a target despawns its sources).
 * @example
 * const ChildOf = relation('ChildOf', {}, { exclusive: true, acyclic: true, cascade: true });
 * const Likes = relation('Likes', { amount: 'f32' });
 */
export function relation<const S extends Schema = {}>(name: string, schema: S = {} as S, options: RelationOptions = {}): Relation<S> {
    const operation = 'relation';
    const metas = checkSchema(operation, name, schema);
    checkOptions(operation, name, options, {
        exclusive: 'boolean',
        acyclic: 'boolean',
        cascade: 'boolean',
        replicate: 'boolean',
    });
    if (options.acyclic === true && options.exclusive === false) {
        throw new TesseraError(
            'BAD_SCHEMA',
            operation,
            'an acyclic relation is exclusive (one target per source): leave exclusive out or set it to true',
            { component: name },
        );
    }
    const acyclic = options.acyclic === true;
    const exclusive = acyclic || options.exclusive === true;
    const cascade = options.cascade === true;
    const replicate = options.replicate !== false;
    const flags =
        FLAGS.relation |
        (exclusive ? FLAGS.exclusive : 0) |
        (acyclic ? FLAGS.acyclic : 0) |
        (cascade ? FLAGS.cascade : 0) |
        (replicate ? 0 : FLAGS.local);
    const pair = (target: number, values?: ValuesInput<S>): Pair<S> => {
        if (typeof target !== 'number' || target >>> 0 !== target) {
            throw new TesseraError(
                'INVALID_ARGUMENT',
                `${name}(target)`,
                `expected a target entity handle (a non-negative integer), got ${describeValue(target)}`,
                { component: name },
            );
        }
        if (values !== undefined && (typeof values !== 'object' || values === null)) {
            throw new TesseraError('BAD_VALUE', `${name}(target, values)`, 'values must be an object', {
                component: name,
            });
        }
        return { relation: made, target, values };
    };
    const made = define(pair, name, schema, metas, flags, {
        isRelation: { value: true, enumerable: true },
        exclusive: { value: exclusive, enumerable: true },
        acyclic: { value: acyclic, enumerable: true },
        cascade: { value: cascade, enumerable: true },
        replicate: { value: replicate, enumerable: true },
    }) as unknown as Relation<S>;
    return made;
}

/** The schema's fields as metadata, or a BAD_SCHEMA naming the problem. */
function checkSchema(operation: string, name: string, schema: unknown): FieldMeta[] {
    checkName(operation, name, 'component name', { component: String(name) });
    if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) {
        throw new TesseraError('BAD_SCHEMA', operation, 'the schema must be an object of fields', {
            component: name,
        });
    }
    const entries = Object.entries(schema);
    if (entries.length > limits.maxFields) {
        throw new TesseraError('BAD_SCHEMA', operation, `${entries.length} fields, at most ${limits.maxFields} are allowed`, {
            component: name,
        });
    }
    return entries.map(([field, spec], index) => {
        checkName(operation, field, 'field name', { component: name, field });
        if (field === '__proto__') {
            // An object built with it as a key would get a prototype instead of the field.
            throw new TesseraError('BAD_SCHEMA', operation, 'the field name __proto__ is reserved by JavaScript objects', {
                component: name,
                field,
            });
        }
        const [type, length] = Array.isArray(spec) ? spec : [spec, 1];
        if (!Object.hasOwn(typeCodes, type)) {
            const hint = typeof type === 'boolean' ? ' (options are the third argument)' : '';
            throw new TesseraError(
                'BAD_SCHEMA',
                operation,
                `unknown field type ${JSON.stringify(type)} (expected one of ${Object.keys(typeCodes).join(', ')})${hint}`,
                { component: name, field },
            );
        }
        if (Array.isArray(spec) && (!Number.isInteger(length) || length < 2 || length > limits.maxArrayLength)) {
            throw new TesseraError(
                'BAD_SCHEMA',
                operation,
                `array length ${String(length)} is not an integer in 2..${limits.maxArrayLength}`,
                { component: name, field },
            );
        }
        const fieldType = type as FieldType;
        return {
            name: field,
            index,
            type: fieldType,
            length: length as number,
            bytesPerElement: arrayTypes[fieldType].BYTES_PER_ELEMENT,
        };
    });
}

/**
 * Checks an options object: only the known keys, each `'boolean'` or one of a list of strings
 * (undefined is always fine). BAD_SCHEMA otherwise: a misspelt option must not pass silently.
 */
function checkOptions(operation: string, name: string, options: unknown, known: Record<string, 'boolean' | readonly string[]>): void {
    if (typeof options !== 'object' || options === null || Array.isArray(options)) {
        throw new TesseraError('BAD_SCHEMA', operation, `options must be an object, got ${describeValue(options)}`, {
            component: name,
        });
    }
    for (const [key, value] of Object.entries(options)) {
        const rule = known[key];
        if (rule === undefined) {
            throw new TesseraError(
                'BAD_SCHEMA',
                operation,
                `unknown option ${JSON.stringify(key)} (expected ${Object.keys(known).join(', ')})`,
                { component: name },
            );
        }
        if (value === undefined) continue;
        const ok = rule === 'boolean' ? typeof value === 'boolean' : rule.includes(value as string);
        if (!ok) {
            const expected = rule === 'boolean' ? 'true or false' : rule.map((r) => JSON.stringify(r)).join(' or ');
            throw new TesseraError('BAD_SCHEMA', operation, `option ${key} must be ${expected}, got ${describeValue(value)}`, {
                component: name,
            });
        }
    }
}

/** Gives a definition function its public properties and its field map. */
function define(
    fn: (...args: any[]) => unknown,
    name: string,
    schema: object,
    metas: FieldMeta[],
    flags: number,
    extra: PropertyDescriptorMap,
): unknown {
    // Named where it is made: redefining a function's `name` puts it in V8's dictionary mode,
    // where every property load (`key`, `flags`, on every per-entity call) costs about 5 ns.
    const named = { [name]: (...args: any[]) => fn(...args) }[name]!;
    const made = Object.defineProperties(named, {
        schema: { value: Object.freeze({ ...schema }), enumerable: true },
        fields: { value: Object.freeze(metas.map((m) => Object.freeze({ ...m }))), enumerable: true },
        isTag: { value: metas.length === 0, enumerable: true },
        ...extra,
        key: { value: nextKey++ },
        flags: { value: flags },
        toString: { value: () => name },
    });
    Object.defineProperty(made, FIELDS, { value: new Map(metas.map((meta) => [meta.name, meta])) });
    Object.defineProperty(made, BRAND, { value: true });
    return made;
}

/**
 * Defines a tag: a component without fields. Entities have it or not; it costs no storage.
 * A sparse tag (`{ storage: 'sparse' }`) comes and goes without moving the entity.
 * @example
 * const Frozen = tag('Frozen');
 * const Selected = tag('Selected', { storage: 'sparse' });
 * world.add(e, Frozen);
 */
export function tag(name: string, options: Omit<ComponentOptions, 'changeDetection'> = {}): Tag {
    // A tag has no values to compare: changeDetection is not one of its options.
    checkOptions('tag', name, options, { storage: ['table', 'sparse'], replicate: 'boolean' });
    return component(name, {}, options);
}

/** True when `value` is a component made by {@link component} or {@link tag} (not a relation). */
export function isComponent(value: unknown): value is Component<any> {
    return isDefinition(value) && (value.flags & FLAGS.relation) === 0;
}

/** True when `value` is a relation made by {@link relation}. */
export function isRelation(value: unknown): value is Relation<any> {
    return isDefinition(value) && (value.flags & FLAGS.relation) !== 0;
}

/** True when `value` is a pair made by calling a relation: `R(target)`. */
export function isPair(value: unknown): value is Pair<any> {
    return typeof value === 'object' && value !== null && isRelation((value as Pair).relation);
}

/** A component or a relation. @internal */
export function isDefinition(value: unknown): value is Definition {
    return typeof value === 'function' && (value as WithFields)[FIELDS] instanceof Map;
}

/** What is wrong with a value given where a definition belongs (it is none of this copy's). @internal */
export function describeDefinition(value: unknown): string {
    if (typeof value === 'function' && !isDefinition(value) && (value as { [BRAND]?: boolean })[BRAND] === true) {
        return (
            `${String((value as { name?: unknown }).name)} was defined by another copy of tessera-ecs ` +
            '(two copies of the package are loaded: make the app resolve one, e.g. with npm dedupe or a bundler alias)'
        );
    }
    return `expected a component made by component(), tag() or relation(), got ${describeValue(value)}`;
}

/** True for a sparse component or a relation (no chunk columns). @internal */
export function isSparse(definition: Definition): boolean {
    return (definition.flags & (FLAGS.sparse | FLAGS.relation)) !== 0;
}

/** fieldOf's latest answer: per-entity loops ask for the same field over and over. */
let lastComponent: unknown;
let lastField: unknown;
let lastMeta: FieldMeta | undefined;

/**
 * The field metadata of `component.field`, or a TesseraError naming both (and the entity, when
 * the call is about one, as every other error of such a call does). @internal
 */
export function fieldOf(component: Definition, field: string, operation: string, entity?: number): FieldMeta {
    // A symbol-keyed load from the component function plus a Map lookup cost about 15 ns per
    // call in world.set loops (27% of set_heavy); comparing two references costs nothing.
    if (component === lastComponent && field === lastField) return lastMeta!;
    const fields = (component as WithFields | null | undefined)?.[FIELDS];
    if (fields === undefined) throw new TesseraError('INVALID_ARGUMENT', operation, describeDefinition(component));
    const meta = fields.get(field);
    if (meta === undefined) {
        const known = component.fields.map((f) => f.name).join(', ') || 'none: it is a tag';
        throw new TesseraError(
            component.isTag ? 'TAG_HAS_NO_DATA' : 'UNKNOWN_FIELD',
            operation,
            `${component.name} has no field ${JSON.stringify(field)} (fields: ${known})`,
            { ...(entity === undefined ? {} : { entity }), component: component.name, field: String(field) },
        );
    }
    lastComponent = component;
    lastField = field;
    lastMeta = meta;
    return meta;
}

/** The fields of a component as internal metadata. @internal */
export function fieldsOf(component: Definition): readonly FieldMeta[] {
    return component.fields as readonly FieldMeta[];
}

/**
 * Splits a spawn/add item (not a pair) into its component and its initial values (if any).
 * A bare relation comes back as itself: the caller reports NEEDS_TARGET. @internal
 */
export function splitItem(item: ComponentItem | Relation<any>, operation: string): [Definition, ValuesInput<any> | undefined] {
    if (isDefinition(item)) return [item, undefined];
    if (typeof item === 'object' && item !== null && 'component' in item && isComponent(item.component)) {
        return [item.component, item.values];
    }
    throw new TesseraError(
        'INVALID_ARGUMENT',
        operation,
        `expected a component, Component(values) or Relation(target), got ${describeValue(item)}`,
    );
}

/** A short description of any value for error messages. @internal */
export function describeValue(value: unknown): string {
    if (typeof value === 'string') return JSON.stringify(value);
    if (typeof value === 'function') return `function ${value.name || '(anonymous)'}`;
    if (Array.isArray(value)) return `an array of ${value.length}`;
    if (value === null || typeof value !== 'object') return String(value);
    return `an object (${Object.prototype.toString.call(value)})`;
}

function checkName(operation: string, name: unknown, what: string, context: { component?: string; field?: string }): void {
    if (typeof name !== 'string' || name.length === 0) {
        throw new TesseraError('BAD_SCHEMA', operation, `a ${what} must be a non-empty string`, context);
    }
    const bytes = encoder.encode(name).length;
    if (bytes > limits.maxNameBytes || name.includes('\0')) {
        throw new TesseraError(
            'BAD_SCHEMA',
            operation,
            `a ${what} must be 1..${limits.maxNameBytes} UTF-8 bytes without NUL (got ${bytes})`,
            context,
        );
    }
}

/**
 * The built-in hierarchy relation: `ChildOf(parent)`. Exclusive (one parent per entity),
 * acyclic (an entity cannot become its own ancestor: `CYCLE`) and cascading (despawning a
 * parent despawns its children, recursively). Registered in a world the first time it is used
 * there, like any component. `world.setParent`, `parentOf`, `childrenOf`, `descendants` and
 * `walk` are built on it.
 * @example
 * const arm = world.spawn(Transform, ChildOf(body));
 * world.parentOf(arm); // body
 */
export const ChildOf: Relation<{}> = relation('ChildOf', {}, { exclusive: true, acyclic: true, cascade: true });
