/**
 * Definitions: `component()`, `tag()` and `relation()` make them once per process, checked
 * against the C core's limits; the functions here tell them apart, find their fields, and
 * name what is wrong with a value given where one belongs. `ChildOf` is the built-in one.
 *
 * @module
 */
import { COMPONENT_FLAGS as FLAGS, TYPES } from './abi.js';
import { TesseraError, describeValue } from './errors.js';
import {
    arrayTypes,
    isFieldType,
    limits,
    type ChangeDetection,
    type Component,
    type ComponentColumns,
    type ComponentInit,
    type ComponentOptions,
    type ColumnsInput,
    type Definition,
    type FieldMeta,
    type FieldType,
    type Pair,
    type Relation,
    type RelationOptions,
    type Schema,
    type Storage,
    type Tag,
    type ValuesInput,
} from './schema.js';

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
        (storage === 'sparse' ? FLAGS.sparse : 0) |
        (replicate ? 0 : FLAGS.local) |
        (changeDetection === 'value' ? FLAGS.change_by_value : 0);
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
        if (!isFieldType(type)) {
            const hint = typeof type === 'boolean' ? ' (options are the third argument)' : '';
            throw new TesseraError(
                'BAD_SCHEMA',
                operation,
                `unknown field type ${JSON.stringify(type)} (expected one of ${Object.keys(TYPES).join(', ')})${hint}`,
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
    const operation = 'tag';
    // A tag has no values to compare: changeDetection is not one of its options.
    const known = { storage: ['table', 'sparse'], replicate: 'boolean' } as const;
    if (typeof options === 'object' && options !== null && !Array.isArray(options)) {
        // tag('T', { a: 'f32' }): a schema where the options go, from someone who wanted data.
        const field = Object.entries(options).find(([key, spec]) => !(key in known) && (isFieldType(spec) || Array.isArray(spec)));
        if (field !== undefined) {
            throw new TesseraError(
                'BAD_SCHEMA',
                operation,
                `a tag has no fields, and ${JSON.stringify(field[0])} is not an option (a tag's options: ${Object.keys(known).join(', ')}); ` +
                    `for a component with data, use component(${JSON.stringify(name)}, { ${field[0]}: ${JSON.stringify(field[1])} })`,
                { component: String(name), field: field[0] },
            );
        }
    }
    checkOptions(operation, name, options, known);
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
            `${component.name} has no field ${describeValue(field)} (fields: ${known})`,
            {
                ...(entity === undefined ? {} : { entity }),
                component: component.name,
                field: typeof field === 'string' ? field : describeValue(field),
            },
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

const LONE_SURROGATE = /\p{Cs}/u;

function checkName(operation: string, name: unknown, what: string, context: { component?: string; field?: string }): void {
    if (typeof name !== 'string' || name.length === 0) {
        throw new TesseraError('BAD_SCHEMA', operation, `a ${what} must be a non-empty string`, context);
    }
    // A lone surrogate has no UTF-8 form: encoded it would become U+FFFD, the name of every
    // other such string (components are matched by name).
    if (LONE_SURROGATE.test(name)) {
        throw new TesseraError('BAD_SCHEMA', operation, `a ${what} must be well-formed Unicode (it has a lone surrogate)`, context);
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
