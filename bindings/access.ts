/**
 * Per-entity reads and writes by handle: `world.get` / `world.set` of one field, and
 * `world.field(C, f)`, a handle on one field made once for hot per-entity code.
 *
 * Each call is one call into wasm and nearly nothing else. That is the fastest design measured
 * (tests/js/access.test.ts pins the behaviour, bench/results/latest.md the speed): a call from
 * V8 into wasm costs a few nanoseconds, and the C core finds the row (entity table, chunk,
 * archetype column) with plain loads, where the same walk in JS over typed arrays of wasm
 * memory was slower (a read 18 ns against 14 through tes_get_number, a write 22 against 18
 * through tes_set_number, interleaved in one process at 100k entities). What made per-entity
 * calls slow was the layer around the crossing: several frames, the field looked up by name,
 * definitions in V8's dictionary mode. So the core stays the one owner of every rule (handles,
 * pending entities, sparse storage, what a value a field can hold, change tracking), and JS
 * only keeps what a crossing cannot see: a handle must be an integer (a wasm i32 would
 * truncate 1.5 into another entity) and a value a number (it would coerce '5'). Any failure
 * goes down the checked path (World's error-reporting calls), which throws the full error; a
 * failed call has changed nothing, so doing it again there is safe.
 *
 * @module
 */
import type { Heap } from './heap.js';
import type { Pointer } from './load.js';
import type { Registry } from './registry.js';
import { fieldsOf, isDefinition, isRelation } from './definitions.js';
import type { Component, Definition, FieldMeta } from './schema.js';

/** A component's Field objects in one world, in schema order. @internal */
export class FieldSet {
    private readonly names: readonly string[];

    constructor(
        readonly component: Component<any>,
        readonly list: readonly Field<any>[],
    ) {
        this.names = list.map((access) => access.name);
    }

    /**
     * The Field of that name. A scan: components have few fields, and comparing a name with
     * the same string (a literal at the call site) is one compare, where a Map costs a hash.
     */
    named(name: string): Field<any> | undefined {
        const names = this.names;
        for (let i = 0; i < names.length; i++) if (names[i] === name) return this.list[i];
        return undefined;
    }
}

/**
 * One world's FieldSets, by definition key, made on first use: what `world.get` / `world.set`
 * of one field and `world.field` find their Field through. @internal
 */
export class WorldFields {
    private readonly sets: (FieldSet | undefined)[] = [];

    constructor(private readonly owner: FieldOwner) {}

    /** A component's Field objects; undefined for what is not a component (the checked path says why). */
    of(component: unknown): FieldSet | undefined {
        const key = typeof component === 'function' ? (component as Definition).key : undefined;
        if (key === undefined) return undefined;
        const known = this.sets[key];
        if (known !== undefined && known.component === component) return known;
        if (!isDefinition(component) || isRelation(component)) return undefined;
        const list = fieldsOf(component).map((meta) => new Field<any>(this.owner, component as Component<any>, meta));
        const made = new FieldSet(component as Component<any>, list);
        this.sets[key] = made;
        return made;
    }
}

/** What a Field needs of its world. @internal */
export interface FieldOwner {
    /** The `tes_world_t *`; 0 once destroyed. */
    readonly pointer: Pointer;
    readonly heap: Heap;
    readonly registry: Registry;
    /** The checked path: answers or throws exactly as the C core's result says. */
    getChecked(entity: number, component: Component<any>, field: string, operation: string): unknown;
    setChecked(entity: number, component: Component<any>, field: string, value: unknown, operation: string): void;
}

/**
 * One field of one component in one world, read and written per entity by handle:
 * `world.field(Health, 'value')`. Made once, used in hot per-entity code (damage, targeting,
 * UI): `health.get(e)`, `health.set(e, v)` behave exactly as `world.get(e, Health, 'value')` and
 * `world.set(e, Health, 'value', v)`, errors included, without looking the field up by name.
 * Valid as long as its world.
 */
export class Field<V = number> {
    /** The component's id in the world; -1 while it is not registered there. */
    private id = -1;
    /** The registry's generation when `id` was looked up (ids can be taken back). */
    private registrations = -1;
    /** False for array fields: they go down the checked path (a number each is no answer). */
    private readonly scalar: boolean;

    /** @internal Use `world.field(component, name)`. */
    constructor(
        private readonly owner: FieldOwner,
        /** The component. */
        readonly component: Component<any>,
        /** @internal */
        readonly meta: FieldMeta,
    ) {
        this.scalar = meta.length === 1;
    }

    /** The field's name. */
    get name(): string {
        return this.meta.name;
    }

    /** The entity's value of this field (a fresh array for array fields). */
    get(entity: number): V {
        const value = this.read(entity);
        return (value !== undefined ? value : this.owner.getChecked(entity, this.component, this.meta.name, 'field.get')) as V;
    }

    /** Writes the entity's value of this field, a change for whoever watches the component. */
    set(entity: number, value: V): void {
        if (!this.write(entity, value)) this.owner.setChecked(entity, this.component, this.meta.name, value, 'field.set');
    }

    /** @internal The value in one call (tes_get_number); undefined when the checked path must answer. */
    read(entity: number): number | undefined {
        if (!this.scalar || typeof entity !== 'number' || entity >>> 0 !== entity) return undefined;
        const id = this.resolve();
        if (id < 0) return undefined;
        const heap = this.owner.heap;
        const out = heap.scratch;
        if (heap.exports.tes_get_number(this.owner.pointer, entity, id, this.meta.index, 0, out) !== 0) return undefined;
        return heap.f64[out >>> 3]!;
    }

    /** @internal Writes in one call (tes_set_number); false: refused, nothing written. */
    write(entity: number, value: unknown): boolean {
        if (!this.scalar || typeof value !== 'number' || typeof entity !== 'number' || entity >>> 0 !== entity) return false;
        const id = this.resolve();
        if (id < 0) return false;
        return this.owner.heap.exports.tes_set_number(this.owner.pointer, entity, id, this.meta.index, 0, value) === 0;
    }

    /** The component's id now, -1 when this world has none (a registration can be taken back). */
    private resolve(): number {
        const registry = this.owner.registry;
        if (this.registrations !== registry.generation) {
            this.id = registry.fast(this.component) ?? -1;
            this.registrations = registry.generation;
        }
        return this.id;
    }
}
