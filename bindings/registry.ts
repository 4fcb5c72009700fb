/**
 * Which C component id a definition has in one world. Definitions are made once per process
 * (`component()`, `relation()`) and registered in a world the first time a call there needs
 * them. Registration is part of the world (its snapshot names every component), so a call that
 * registers and then fails takes its registrations back: a refused call leaves the world as it
 * was.
 *
 * @module
 */
import { COMPONENT_DESC, COMPONENT_INFO, FIELD_DESC, FIELD_INFO } from './abi.js';
import { TesseraError } from './errors.js';
import type { Heap } from './heap.js';
import type { Pointer } from './load.js';
import { describeDefinition, fieldsOf, isDefinition } from './definitions.js';
import { typeCode, type Definition } from './schema.js';

/** The ids of one world's definitions. */
export class Registry {
    /** C id by definition key (the process-wide number), checked against `byId`. */
    private readonly ids: number[] = [];
    /** Definitions by C id. */
    private readonly byId: Definition[] = [];
    /**
     * True when the C world has components no definition has claimed yet (made from a snapshot,
     * or a replica whose keyframes registered them): definitions claim them by name.
     */
    restored: boolean;
    /** Registrations made by this registry (claims of restored components not counted). */
    private registered = 0;
    /**
     * Bumped whenever an id is given or taken back: what caches an id (access.ts's Field)
     * compares it, one load, instead of looking the id up again.
     */
    generation = 0;
    /**
     * The latest definition {@link fast} found and its id, valid while `generation` is
     * `latestGeneration`: per-entity code names one component over and over, and comparing it
     * costs less than reading its key (a property of a function object).
     */
    private latest: unknown = undefined;
    private latestId = 0;
    private latestGeneration = -1;

    constructor(
        private readonly heap: Heap,
        private readonly world: () => Pointer,
        restored: boolean,
    ) {
        this.restored = restored;
    }

    /** The definition registered under a C id, if any. */
    definition(id: number): Definition | undefined {
        return this.byId[id];
    }

    /**
     * The id of a definition registered here already; undefined when it is not (reads need not
     * register: no entity can have it). A value that is not a definition throws.
     */
    known(definition: Definition, operation: string): number | undefined {
        const id = this.fast(definition);
        if (id !== undefined) return id;
        if (!isDefinition(definition)) throw notADefinition(definition, operation);
        return this.restored ? this.claim(definition, operation) : undefined;
    }

    /** The id of a definition, registering it on first use (kept: for calls that cannot fail after). */
    idOf(definition: Definition, operation: string): number {
        return this.fast(definition) ?? this.register(definition, operation);
    }

    /**
     * The ids of a call's first `count` definitions, into `ids`, registering those met for the
     * first time; their ids are pushed on `fresh` so that the call can take them back if it fails.
     */
    resolve(definitions: readonly Definition[], count: number, operation: string, fresh: number[], ids: number[]): void {
        for (let i = 0; i < count; i++) {
            const definition = definitions[i]!;
            let id = this.fast(definition);
            if (id === undefined) {
                const registered = this.registered;
                id = this.register(definition, operation);
                if (this.registered !== registered) fresh.push(id); // registered, not claimed
            }
            ids[i] = id;
        }
    }

    /** Takes back the registrations a failed call made (latest first). */
    takeBack(fresh: readonly number[]): void {
        for (let i = fresh.length - 1; i >= 0; i--) {
            const id = fresh[i]!;
            // Refused only when something uses it after all (an archetype kept by an
            // out-of-memory failure): then it stays registered, as an archetype would.
            if (this.heap.exports.tes_component_unregister(this.world(), id) !== 0) return;
            this.forget(id);
            this.registered--;
        }
    }

    /**
     * The core took back every registration from id `count` on (a rewind to before them, when
     * nothing used them any more): their definitions are unregistered here too, and register
     * again, under the same ids in the same order, on their next use.
     */
    takenBack(count: number): void {
        for (let id = this.byId.length - 1; id >= count; id--) this.forget(id);
    }

    /** Forgets the latest id's definition (it has none when the core registered it alone). */
    private forget(id: number): void {
        const definition = this.byId[id];
        if (definition !== undefined) delete this.ids[definition.key];
        this.byId.length = id;
        this.generation++;
    }

    /**
     * The registered id of exactly this definition (a key from another copy never matches);
     * undefined for anything else, never a throw or a claim.
     */
    fast(definition: Definition): number | undefined {
        if (definition === this.latest && this.latestGeneration === this.generation) return this.latestId;
        if (typeof definition !== 'function') return undefined;
        const id = this.ids[definition.key];
        if (id === undefined || this.byId[id] !== definition) return undefined;
        this.latest = definition;
        this.latestId = id;
        this.latestGeneration = this.generation;
        return id;
    }

    private register(definition: Definition, operation: string): number {
        const world = this.world();
        if (!isDefinition(definition)) throw notADefinition(definition, operation);
        const heap = this.heap;
        if (this.restored) {
            const claimed = this.claim(definition, operation);
            if (claimed !== undefined) return claimed;
        }
        const fields = fieldsOf(definition);
        const strings: Pointer[] = [];
        try {
            strings.push(heap.newString(definition.name, operation));
            for (const meta of fields) strings.push(heap.newString(meta.name, operation));
            // A tes_component_desc_t, then its tes_field_desc_t array.
            const desc = heap.tempBlock(COMPONENT_DESC.size + FIELD_DESC.size * fields.length, operation);
            const first = desc + COMPONENT_DESC.size;
            const u32 = heap.u32;
            u32[(desc + COMPONENT_DESC.name) >>> 2] = strings[0]!;
            u32[(desc + COMPONENT_DESC.fields) >>> 2] = fields.length ? first : 0;
            u32[(desc + COMPONENT_DESC.field_count) >>> 2] = fields.length;
            u32[(desc + COMPONENT_DESC.flags) >>> 2] = definition.flags;
            fields.forEach((meta, i) => {
                const at = first + i * FIELD_DESC.size;
                u32[(at + FIELD_DESC.name) >>> 2] = strings[i + 1]!;
                u32[(at + FIELD_DESC.type) >>> 2] = typeCode(meta.type);
                u32[(at + FIELD_DESC.length) >>> 2] = meta.length;
            });
            const out = heap.scratch;
            const result = heap.exports.tes_component_register(world, desc, out);
            if (result === heap.results.DUPLICATE_NAME) {
                throw new TesseraError(
                    'DUPLICATE_NAME',
                    operation,
                    'another component with this name is registered in this world (component names must be unique per world)',
                    { component: definition.name },
                );
            }
            if (result !== 0) {
                throw new TesseraError(heap.codes[result] ?? 'CORRUPT', operation, heap.problem(result), {
                    component: definition.name,
                });
            }
            const id = heap.u32At(out);
            this.ids[definition.key] = id;
            this.byId[id] = definition;
            this.registered++;
            this.generation++;
            return id;
        } finally {
            for (const pointer of strings) heap.exports.tes_free(pointer);
        }
    }

    /**
     * A component the C world has under the definition's name that no definition claimed yet:
     * mapped to this definition when flags and fields match, BAD_SCHEMA when they do not;
     * undefined when there is none (or it belongs to another definition).
     */
    private claim(definition: Definition, operation: string): number | undefined {
        const heap = this.heap;
        const world = this.world();
        const name = heap.newString(definition.name, operation);
        let found: number;
        try {
            found = heap.exports.tes_component_lookup(world, name, heap.scratch);
        } finally {
            heap.exports.tes_free(name);
        }
        if (found !== 0) return undefined;
        const id = heap.u32At(heap.scratch);
        if (this.byId[id] !== undefined) return undefined;
        const out = heap.scratch;
        const check = (result: number) => {
            if (result !== 0)
                throw new TesseraError(heap.codes[result] ?? 'CORRUPT', operation, heap.problem(result), { component: definition.name });
        };
        check(heap.exports.tes_component_info(world, id, out));
        const fields = fieldsOf(definition);
        let same =
            heap.u32At(out + COMPONENT_INFO.field_count) === fields.length && heap.u32At(out + COMPONENT_INFO.flags) === definition.flags;
        fields.forEach((meta, index) => {
            if (!same) return;
            check(heap.exports.tes_field_info(world, id, index, out));
            same =
                heap.string(heap.u32At(out + FIELD_INFO.name)) === meta.name &&
                heap.u32At(out + FIELD_INFO.type) === typeCode(meta.type) &&
                heap.u32At(out + FIELD_INFO.length) === meta.length;
        });
        if (!same) {
            throw new TesseraError(
                'BAD_SCHEMA',
                operation,
                'the world has a component of this name (from a snapshot or a delta) with another schema or storage',
                {
                    component: definition.name,
                },
            );
        }
        this.ids[definition.key] = id;
        this.byId[id] = definition;
        this.generation++;
        return id;
    }
}

function notADefinition(value: unknown, operation: string): TesseraError {
    return new TesseraError('INVALID_ARGUMENT', operation, describeDefinition(value));
}
