/**
 * Components and tags: defined once, at module level, usable in any world. A schema's field
 * names and types flow into the TypeScript types, so `chunk.column(Position, 'x')` is a
 * `Float32Array` and a misspelt field is a type error.
 *
 * @module
 */
import { LIMITS, TYPES } from './abi.js';

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

/**
 * The same object type, written out: wrapped in it, a value type shows in editors and errors as
 * its members, `{ x: number; y: number }`, instead of as the alias over the schema
 * (`Values<{ readonly x: "f32"; ... }>`).
 */
export type Simplify<T> = { [K in keyof T]: T[K] } & {};

/** All fields of a component, as `world.get(e, C)` returns them. */
export type Values<S extends Schema> = Simplify<{ -readonly [K in FieldName<S>]: FieldValue<S[K]> }>;

/** Some fields of a component, as `world.set` and initial values take them. */
export type ValuesInput<S extends Schema> = Simplify<{ readonly [K in FieldName<S>]?: FieldInput<S[K]> | undefined }>;

/**
 * One field's values for many entities (`spawnMany`): a column of `count × length` numbers,
 * entity after entity, as `chunk.column` lays them out (an array or any typed array); for a
 * scalar field also a single number, which every entity takes.
 */
export type ColumnInput<F extends FieldSpec> = F extends FieldType ? ArrayLike<number> | number : ArrayLike<number>;

/** Values per entity of a component, by field; fields left out start at 0. */
export type ColumnsInput<S extends Schema> = Simplify<{ readonly [K in FieldName<S>]?: ColumnInput<S[K]> }>;

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

/** Limits of the C core (`src/tessera.h`, through bindings/abi.ts). */
export const limits = {
    maxFields: LIMITS.max_fields,
    maxArrayLength: LIMITS.max_array_length,
    maxNameBytes: LIMITS.max_name_length,
} as const;

/** The C core's `tes_type_t` value of a field type. @internal */
export function typeCode(type: FieldType): number {
    return TYPES[type];
}

/** True for the name of a field type (`TYPES` has one key per `tes_type_t`). @internal */
export function isFieldType(type: unknown): type is FieldType {
    return typeof type === 'string' && Object.hasOwn(TYPES, type);
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
