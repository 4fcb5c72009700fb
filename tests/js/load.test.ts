// The built package (dist/load.js + dist/tessera.wasm) against the C header: what the module
// imports and exports, and the raw API driven through linear memory (wasm32 layout).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, test } from 'vitest';

import { DEFAULT_MEMORY_BYTES, loadTessera, type Tessera, type TesseraExports } from '../../dist/load.js';

const wasmUrl = new URL('../../dist/tessera.wasm', import.meta.url);
const header = readFileSync(new URL('../../src/tessera.h', import.meta.url), 'utf8');

/** Names of the TES_API functions, in header order. */
const apiFunctions = [...header.matchAll(/^TES_API [^(]*[ *](tes_[a-z0-9_]+)\(/gm)].map((m) => m[1]!);

/** TES_RESULTS names in header order: the index is the numeric code. */
const resultNames = (() => {
    const list = header.slice(header.indexOf('#define TES_RESULTS(X)'), header.indexOf('typedef enum tes_result_t'));
    return [...list.matchAll(/X\((TES_[A-Z_]+),/g)].map((m) => m[1]!);
})();
const code = (name: string): number => {
    const index = resultNames.indexOf(name);
    if (index < 0) throw new Error(`no result ${name} in tessera.h`);
    return index;
};

// tes_type_t values from the header (TES_F32 = 1, then in order).
const TES_F32 = 1;
const TES_I32 = 7;

/** Reads and writes wasm32 C data, re-deriving views after memory growth. */
class Heap {
    readonly #tes: TesseraExports;
    readonly #memory: WebAssembly.Memory;
    readonly #blocks: number[] = [];

    constructor({ exports, memory }: Tessera) {
        this.#tes = exports;
        this.#memory = memory;
    }

    /** A zeroed block from tes_malloc, freed by freeAll(). */
    alloc(bytes: number): number {
        const ptr = this.#tes.tes_malloc(bytes) >>> 0;
        expect(ptr).not.toBe(0);
        expect(ptr % 16).toBe(0);
        new Uint8Array(this.#memory.buffer, ptr, bytes).fill(0);
        this.#blocks.push(ptr);
        return ptr;
    }

    u32(ptr: number): number {
        return new DataView(this.#memory.buffer).getUint32(ptr, true);
    }
    setU32(ptr: number, value: number): void {
        new DataView(this.#memory.buffer).setUint32(ptr, value, true);
    }
    f64(ptr: number): number {
        return new DataView(this.#memory.buffer).getFloat64(ptr, true);
    }

    /** A NUL-terminated UTF-8 copy of `text`. */
    cString(text: string): number {
        const bytes = new TextEncoder().encode(text);
        const ptr = this.alloc(bytes.length + 1);
        new Uint8Array(this.#memory.buffer).set(bytes, ptr);
        return ptr;
    }
    readCString(ptr: number): string {
        const memory = new Uint8Array(this.#memory.buffer);
        const end = memory.indexOf(0, ptr);
        return new TextDecoder().decode(memory.subarray(ptr, end));
    }

    freeAll(): void {
        for (const ptr of this.#blocks.splice(0)) this.#tes.tes_free(ptr);
    }
}

describe('tessera.wasm', () => {
    const bytes = readFileSync(wasmUrl);
    const module = new WebAssembly.Module(bytes);

    test('imports only its memory (env.memory) and env.emscripten_notify_memory_growth', () => {
        const imports = WebAssembly.Module.imports(module).sort((a, b) => a.name.localeCompare(b.name));
        expect(imports).toEqual([
            { module: 'env', name: 'emscripten_notify_memory_growth', kind: 'function' },
            { module: 'env', name: 'memory', kind: 'memory' },
        ]);
    });

    test('exports every TES_API function of tessera.h and _initialize, and no memory of its own', () => {
        expect(apiFunctions.length).toBeGreaterThanOrEqual(35);
        expect(apiFunctions).toContain('tes_chunk_column');
        const kinds = new Map(WebAssembly.Module.exports(module).map((e) => [e.name, e.kind]));
        for (const name of [...apiFunctions, '_initialize']) {
            expect.soft(kinds.get(name), name).toBe('function');
        }
        expect(kinds.has('memory')).toBe(false);
    });

    test('the TesseraExports interface of bindings/load.ts declares every TES_API function', () => {
        const source = readFileSync(new URL('../../bindings/load.ts', import.meta.url), 'utf8');
        const body = source.slice(source.indexOf('export interface TesseraExports'));
        const declared = [...body.slice(0, body.indexOf('\n}')).matchAll(/^ {4}(tes_[a-z0-9_]+)\(/gm)];
        expect(declared.map((m) => m[1]).sort()).toEqual([...apiFunctions].sort());
    });
});

describe('loadTessera', () => {
    test('loads from its default URL (dist/tessera.wasm), bytes, a file: URL and a path', async () => {
        const sources = [
            await loadTessera(),
            await loadTessera({ bytes: readFileSync(wasmUrl) }),
            await loadTessera({ url: wasmUrl }),
            await loadTessera({ url: fileURLToPath(wasmUrl) }),
        ];
        for (const tessera of sources) {
            expect(tessera.memory).toBeInstanceOf(WebAssembly.Memory);
            expect(tessera.memory.buffer.byteLength).toBe(DEFAULT_MEMORY_BYTES);
            expect(tessera.exports.tes_type_size(TES_F32)).toBe(4);
        }
        // Independent instances: separate memories.
        expect(sources[0]!.memory).not.toBe(sources[1]!.memory);
    });

    test('names the library and the location when the file is missing', async () => {
        await expect(loadTessera({ url: new URL('./missing.wasm', wasmUrl) })).rejects.toThrow(
            /^tessera: cannot load tessera\.wasm from file:.*missing\.wasm/,
        );
    });
});

describe('raw API through memory', () => {
    let tessera: Tessera;
    beforeAll(async () => {
        tessera = await loadTessera();
    });

    test('result names follow the TES_RESULTS order of the header', () => {
        const heap = new Heap(tessera);
        expect(resultNames[0]).toBe('TES_OK');
        expect(resultNames.length).toBeGreaterThan(10);
        resultNames.forEach((name, index) => {
            expect(heap.readCString(tessera.exports.tes_result_name(index) >>> 0)).toBe(name);
        });
    });

    test('world, component, spawn, set/get, despawn, stale handle, destroy', () => {
        const tes = tessera.exports;
        const heap = new Heap(tessera);
        const OK = code('TES_OK');
        const STALE = code('TES_ERR_STALE_ENTITY');
        const BAD_VALUE = code('TES_ERR_BAD_VALUE');

        const worldSlot = heap.alloc(4);
        expect(tes.tes_world_create(0, worldSlot)).toBe(OK);
        const world = heap.u32(worldSlot);
        expect(world).not.toBe(0);

        // tes_field_desc_t[2] = {name ptr, type, length} x 2; tes_component_desc_t = {name, fields, count}.
        const fields = heap.alloc(24);
        heap.setU32(fields + 0, heap.cString('x'));
        heap.setU32(fields + 4, TES_F32);
        heap.setU32(fields + 8, 0);
        heap.setU32(fields + 12, heap.cString('hp'));
        heap.setU32(fields + 16, TES_I32);
        heap.setU32(fields + 20, 1);
        const desc = heap.alloc(12);
        heap.setU32(desc + 0, heap.cString('Body'));
        heap.setU32(desc + 4, fields);
        heap.setU32(desc + 8, 2);
        const idSlot = heap.alloc(4);
        heap.setU32(idSlot, 0xffffffff);
        expect(tes.tes_component_register(world, desc, idSlot)).toBe(OK);
        const body = heap.u32(idSlot);
        expect(body).toBe(0); // ids are dense from 0

        // The registered schema reads back by name.
        const fieldSlot = heap.alloc(4);
        expect(tes.tes_field_lookup(world, body, heap.cString('hp'), fieldSlot)).toBe(OK);
        expect(heap.u32(fieldSlot)).toBe(1);
        heap.setU32(idSlot, 0xffffffff);
        expect(tes.tes_component_lookup(world, heap.cString('Body'), idSlot)).toBe(OK);
        expect(heap.u32(idSlot)).toBe(body);

        // Spawn two, so that a wrong entity would read the other's data.
        const components = heap.alloc(4);
        heap.setU32(components, body);
        const entitySlot = heap.alloc(4);
        expect(tes.tes_spawn(world, components, 1, entitySlot)).toBe(OK);
        const entity = heap.u32(entitySlot);
        expect(tes.tes_spawn(world, components, 1, entitySlot)).toBe(OK);
        const other = heap.u32(entitySlot);
        expect(entity).not.toBe(0);
        expect(other).not.toBe(entity);
        expect(tes.tes_is_alive(world, entity)).toBe(1);

        const number = heap.alloc(8);
        expect(tes.tes_get_number(world, entity, body, 0, 0, number)).toBe(OK);
        expect(heap.f64(number)).toBe(0); // field data starts zeroed
        expect(tes.tes_set_number(world, entity, body, 0, 0, 0.1)).toBe(OK);
        expect(tes.tes_set_number(world, entity, body, 1, 0, 42)).toBe(OK);
        expect(tes.tes_set_number(world, other, body, 1, 0, -7)).toBe(OK);
        expect(tes.tes_get_number(world, entity, body, 0, 0, number)).toBe(OK);
        expect(heap.f64(number)).toBe(Math.fround(0.1)); // stored as f32
        expect(tes.tes_get_number(world, entity, body, 1, 0, number)).toBe(OK);
        expect(heap.f64(number)).toBe(42);
        expect(tes.tes_get_number(world, other, body, 1, 0, number)).toBe(OK);
        expect(heap.f64(number)).toBe(-7);
        // An i32 field refuses a fraction and keeps its value.
        expect(tes.tes_set_number(world, entity, body, 1, 0, 2.5)).toBe(BAD_VALUE);
        expect(tes.tes_get_number(world, entity, body, 1, 0, number)).toBe(OK);
        expect(heap.f64(number)).toBe(42);

        // tes_world_stats_t: entity_count is the first uint32.
        const stats = heap.alloc(48);
        expect(tes.tes_world_stats(world, stats)).toBe(OK);
        expect(heap.u32(stats)).toBe(2);

        expect(tes.tes_despawn(world, entity)).toBe(OK);
        expect(tes.tes_is_alive(world, entity)).toBe(0);
        expect(tes.tes_is_alive(world, other)).toBe(1);
        heap.setU32(number, 0x12345678);
        expect(tes.tes_get_number(world, entity, body, 1, 0, number)).toBe(STALE);
        expect(heap.u32(number)).toBe(0x12345678); // nothing written on failure
        expect(tes.tes_set_number(world, entity, body, 1, 0, 1)).toBe(STALE);
        expect(tes.tes_despawn(world, entity)).toBe(STALE);
        expect(heap.readCString(tes.tes_result_name(STALE) >>> 0)).toBe('TES_ERR_STALE_ENTITY');
        // The survivor kept its data through the despawn.
        expect(tes.tes_get_number(world, other, body, 1, 0, number)).toBe(OK);
        expect(heap.f64(number)).toBe(-7);

        expect(tes.tes_world_stats(world, stats)).toBe(OK);
        expect(heap.u32(stats)).toBe(1);
        expect(tes.tes_world_validate(world)).toBe(OK);

        tes.tes_world_destroy(world);
        heap.freeAll();
    });

    test('views made before memory growth detach; fresh views see the data', () => {
        const { exports: tes, memory } = tessera;
        const before = memory.buffer;
        const view = new Uint8Array(before);
        const block = tes.tes_malloc(before.byteLength) >>> 0; // forces growth
        expect(block).not.toBe(0);
        expect(memory.buffer).not.toBe(before);
        expect(view.byteLength).toBe(0);
        new Uint8Array(memory.buffer, block, 4).set([1, 2, 3, 4]);
        expect([...new Uint8Array(memory.buffer, block, 4)]).toEqual([1, 2, 3, 4]);
        tes.tes_free(block);
    });
});
