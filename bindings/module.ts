/**
 * Loading: `createWorld()` loads `tessera.wasm` once (found next to this file through
 * `new URL('./tessera.wasm', import.meta.url)`, which works in Node, plain browsers, workers
 * and bundlers such as Vite) and makes worlds in it. `init()` loads it from elsewhere, or
 * ahead of time so that worlds can then be made synchronously.
 *
 * @module
 */
import { TesseraError, describeValue } from './errors.js';
import { Heap } from './heap.js';
import { loadTessera, type LoadOptions, type WasmMemory } from './load.js';
import { World, type WorldOptions } from './world.js';

/** A loaded tessera module: worlds made from it share its wasm memory. */
export class TesseraModule {
    /** @internal */
    readonly heap: Heap;

    /** @internal Use `init()`. */
    constructor(heap: Heap) {
        if (!(heap instanceof Heap)) {
            throw new TesseraError('INVALID_ARGUMENT', 'new TesseraModule', 'load the module with init()');
        }
        this.heap = heap;
    }

    /** The module's linear memory (for tools; views over it are invalidated by growth). */
    get memory(): WasmMemory {
        return this.heap.memory;
    }

    /** Makes a world, synchronously. */
    createWorld(options: WorldOptions = {}): World {
        return new World(this.heap, options);
    }
}

let defaultModule: Promise<TesseraModule> | undefined;

/**
 * Loads and instantiates `tessera.wasm`. Without options the module is loaded once and shared
 * (later calls return the same one); with `bytes`, `url` or `memory` a new instance is made,
 * and the first such call also becomes the default used by `createWorld()`. A load that fails
 * is not kept: the next call loads again. `memory` sizes the module's memory at start (default
 * 256 MiB; see {@link LoadOptions.memory}): a game that knows it needs more says so here.
 *
 * @example
 * // Vite or a plain browser: the default finds the .wasm next to the package's JS.
 * const tessera = await init();
 * const world = tessera.createWorld();
 * // Anywhere: bring your own bytes.
 * await init({ bytes: await (await fetch('/assets/tessera.wasm')).arrayBuffer() });
 */
export function init(options: LoadOptions = {}): Promise<TesseraModule> {
    // null or a primitive: a TesseraError (a promise's, as every failure of init), not a TypeError.
    if (typeof options !== 'object' || options === null) {
        return Promise.reject(new TesseraError('INVALID_ARGUMENT', 'init', `options: expected an object, got ${describeValue(options)}`));
    }
    const explicit = options.bytes !== undefined || options.url !== undefined || options.memory !== undefined;
    if (!explicit && defaultModule !== undefined) return defaultModule;
    const loaded = load(options);
    if (defaultModule === undefined) {
        defaultModule = loaded;
        // A failed load must not stay the default (createWorld() would fail for good, e.g.
        // after init() was given bad bytes first): the next call loads again.
        loaded.catch(() => {
            if (defaultModule === loaded) defaultModule = undefined;
        });
    }
    return loaded;
}

/** Options of {@link createWorld}: the world's own, plus where to load the module from. */
export interface CreateWorldOptions extends WorldOptions {
    /** Where to load `tessera.wasm` from (passed to {@link init}). */
    readonly wasm?: LoadOptions;
}

/**
 * Makes a world, loading the module on first use.
 *
 * @example
 * import { createWorld, component } from 'tessera-ecs';
 * const Position = component('Position', { x: 'f32', y: 'f32' });
 * const world = await createWorld();
 * const e = world.spawn(Position({ x: 1, y: 2 }));
 */
export async function createWorld(options: CreateWorldOptions = {}): Promise<World> {
    // Options that are not an object reach the world's own check (INVALID_ARGUMENT), not a read.
    const wasm = typeof options === 'object' && options !== null ? options.wasm : undefined;
    const module = await init(wasm ?? {});
    return module.createWorld(options);
}

async function load(options: LoadOptions): Promise<TesseraModule> {
    try {
        const { exports, memory } = await loadTessera(options);
        return new TesseraModule(new Heap(exports, memory));
    } catch (error) {
        if (error instanceof TesseraError) throw error;
        throw new TesseraError('LOAD_FAILED', 'init', error instanceof Error ? error.message : String(error), {});
    }
}
