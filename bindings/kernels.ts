/**
 * Kernels: column math over every chunk a query matches, run inside wasm by `tes_query_apply`
 * (SIMD for floats; integer results saturate at the type's range), marking what they write.
 * `query.fill`, `offset`, `scale`, `addScaled`, `clamp` and `countdown` are the public forms.
 *
 * @module
 */
import { OP, OP_KIND } from './abi.js';
import { fieldName } from './chunk.js';
import { TesseraError, describeValue } from './errors.js';
import { fieldOf } from './definitions.js';
import type { Query } from './query.js';
import type { Component, FieldLike, FieldName, FieldSpec, FieldType, Schema } from './schema.js';

/**
 * The field a kernel takes: a field name of the component. A tag has none, and the type error
 * says so instead of "not assignable to parameter of type 'never'".
 */
export type KernelField<S extends Schema> = [FieldName<S>] extends [never]
    ? 'tessera: this component has no fields (a tag); kernels take a field of a component'
    : FieldName<S> & {};

/** A field spec as the schema spells it, for messages: `f32`, `[f32, 3]`. */
export type SpecName<F extends FieldSpec> = F extends FieldType
    ? F
    : F extends readonly [infer T extends FieldType, infer N extends number]
      ? `[${T}, ${N}]`
      : never;

/**
 * `addScaled`'s source field: a field of the source component with the target field's spec
 * (the same type and array length). When the source has none, the type error names the spec
 * it needs instead of "not assignable to parameter of type 'never'".
 */
export type SourceField<T extends Schema, F extends FieldSpec> = [FieldLike<T, F>] extends [never]
    ? `tessera: addScaled needs a source field of the target's type, ${SpecName<F>}, and the source component has none`
    : FieldLike<T, F>;

/** `tes_op_kind_t`: what a kernel does. */
export type KernelKind = (typeof OP_KIND)[keyof typeof OP_KIND];

/**
 * Runs a kernel over every chunk the query matches. Every number is the caller's, checked here
 * (none has a default: a left-out `max` must not clamp to 0): `scalar` is the kernel's k with
 * its name, `range` clamp's bounds, `source` addScaled's other field.
 */
export function runKernel(
    query: Query,
    operation: string,
    kind: KernelKind,
    component: Component<any>,
    field: string,
    scalar: readonly [name: string, value: number] | undefined,
    range?: readonly [min: number, max: number],
    source?: { readonly source: Component<any>; readonly sourceField: string },
): Uint32Array {
    const world = query.live(operation);
    if (query.runs > 0) {
        throw new TesseraError('QUERY_IN_USE', operation, 'an iteration of this query is live');
    }
    const heap = query.world.heap;
    // The fields before the ids: a misspelt field must not register the component. A component
    // met here for the first time is registered, and taken back when the call fails (README:
    // a call that registered it and then failed takes the registration back).
    const meta = fieldOf(component, fieldName(field, operation, component), operation);
    let sourceIndex = 0;
    if (source !== undefined) {
        sourceIndex = fieldOf(source.source, fieldName(source.sourceField, operation, source.source), operation).index;
    }
    const definitions = source !== undefined ? [component, source.source] : [component];
    const fresh: number[] = [];
    const ids: number[] = [];
    query.world.registry.resolve(definitions, definitions.length, operation, fresh, ids);
    const id = ids[0]!;
    const sourceId = source !== undefined ? ids[1]! : 0;
    /** The kernel's run once its ids are known: anything it throws takes them back (below). */
    function apply(): Uint32Array {
        const numbers: [string, unknown][] = [];
        if (scalar !== undefined) numbers.push([scalar[0], scalar[1]]);
        if (range !== undefined) numbers.push(['min', range[0]], ['max', range[1]]);
        for (const [name, value] of numbers) {
            if (typeof value !== 'number') {
                throw new TesseraError('BAD_VALUE', operation, `${name} must be a number, got ${describeValue(value)}`, {
                    component: component.name,
                    field,
                });
            }
        }
        const op = heap.tempBlock(OP.size, operation);
        const f64 = heap.f64;
        f64[(op + OP.k) >>> 3] = scalar?.[1] ?? 0;
        f64[(op + OP.lo) >>> 3] = range?.[0] ?? 0;
        f64[(op + OP.hi) >>> 3] = range?.[1] ?? 0;
        const u32 = heap.u32;
        u32[(op + OP.kind) >>> 2] = kind;
        u32[(op + OP.component) >>> 2] = id;
        u32[(op + OP.field) >>> 2] = meta.index;
        u32[(op + OP.src_component) >>> 2] = sourceId;
        u32[(op + OP.src_field) >>> 2] = sourceIndex;
        const out = heap.scratch;
        const result = heap.exports.tes_query_apply(world, query.pointer, op, out, out + 4);
        if (result === heap.results.BAD_VALUE) {
            // The operands the core refused, named: only C says what a type may hold.
            const given = numbers.map(([name, value]) => `${name} ${String(value)}`).join(', ');
            throw new TesseraError(
                'BAD_VALUE',
                operation,
                `${given}: not a value of ${meta.type} (integer fields take whole numbers in their range)`,
                {
                    component: component.name,
                    field,
                },
            );
        }
        if (result === heap.results.MISSING_COMPONENT) {
            // Some archetype the query matches may lack it: the core only runs what the query requires.
            const names =
                source !== undefined && source.source !== component ? `${component.name} and ${source.source.name}` : component.name;
            throw new TesseraError(
                'MISSING_COMPONENT',
                operation,
                `a kernel visits every entity the query matches, so ${names} must be among the query's all terms`,
                { component: component.name, field },
            );
        }
        if (result === heap.results.BAD_FIELD_TYPE && source !== undefined) {
            const sourceMeta = fieldOf(source.source, source.sourceField, operation);
            throw new TesseraError(
                'BAD_FIELD_TYPE',
                operation,
                `${source.source.name}.${source.sourceField} is ${sourceMeta.type} and ${component.name}.${field} is ${meta.type}: ` +
                    "addScaled takes a source field of the target field's type",
                { component: component.name, field },
            );
        }
        query.world.check(result, operation, undefined, component.name, field);
        const count = heap.u32At(out + 4);
        const entities = heap.u32At(out);
        return count ? heap.u32.slice(entities >>> 2, (entities >>> 2) + count) : new Uint32Array(0);
    }

    try {
        return apply();
    } catch (error) {
        query.world.registry.takeBack(fresh);
        throw error;
    }
}
