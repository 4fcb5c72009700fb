// init() and createWorld(): where the module comes from, load failures, worlds sharing a module.
// The order of the first tests matters: they check what becomes the default module.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';

import { component, createWorld, init, Query, TesseraModule, World } from '../../dist/index.js';
import { DEFAULT_MEMORY_BYTES } from '../../dist/load.js';
import { MODULE_MEMORY } from '../../dist/abi.js';
import { expectRejection } from './support.js';

const wasmUrl = new URL('../../dist/tessera.wasm', import.meta.url);
const Position = component('Position', { x: 'f32', y: 'f32' });

/** A world used in `body` and destroyed afterwards, whatever happens. */
async function using<T>(world: World | Promise<World>, body: (world: World) => T): Promise<T> {
    const w = await world;
    try {
        return body(w);
    } finally {
        w.destroy();
    }
}

describe('load failures', () => {
    test('bad bytes: LOAD_FAILED, and a failed load does not become the default module', async () => {
        // First call of the file: a failing init({ bytes }) must not poison createWorld().
        await expectRejection(init({ bytes: new Uint8Array([1, 2, 3, 4]) }), 'LOAD_FAILED', { operation: 'init' });
        await using(createWorld(), (world) => expect(world.isAlive(world.spawn())).toBe(true));
    });

    test('a valid wasm module that is not tessera: LOAD_FAILED', async () => {
        const empty = new Uint8Array([0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00]);
        const error = await expectRejection(init({ bytes: empty }), 'LOAD_FAILED');
        expect(error.message).toMatch(/does not export _initialize/);
    });

    test('a missing file: LOAD_FAILED naming the location', async () => {
        const missing = new URL('./missing.wasm', wasmUrl);
        const error = await expectRejection(init({ url: missing }), 'LOAD_FAILED');
        expect(error.message).toContain('missing.wasm');
        await expectRejection(createWorld({ wasm: { url: missing } }), 'LOAD_FAILED');
    });
});

describe('loading', () => {
    test('init() without options loads once: the same module every time, used by createWorld()', async () => {
        const [a, b] = await Promise.all([init(), init()]);
        expect(a).toBe(b);
        expect(a).toBeInstanceOf(TesseraModule);
        expect(a.memory).toBeInstanceOf(WebAssembly.Memory);
        expect(await init({})).toBe(a);
    });

    test('init({ bytes }) and init({ url }) make new, independent instances', async () => {
        const base = await init();
        const fromBytes = await init({ bytes: readFileSync(wasmUrl) });
        const fromUrl = await init({ url: wasmUrl });
        const fromPath = await init({ url: fileURLToPath(wasmUrl) });
        const modules = [base, fromBytes, fromUrl, fromPath];
        expect(new Set(modules.map((m) => m.memory)).size).toBe(4);
        for (const module of modules) {
            const world = module.createWorld(); // synchronous once loaded
            try {
                const e = world.spawn(Position({ x: 1.5 }));
                expect(world.get(e, Position)).toEqual({ x: 1.5, y: 0 });
            } finally {
                world.destroy();
            }
        }
        // The default stays the one loaded first.
        expect(await init()).toBe(base);
    });

    test('createWorld({ wasm }) loads from there; options reach the world', async () => {
        await using(createWorld({ wasm: { bytes: readFileSync(wasmUrl) }, chunkBytes: 1000 }), (world) => {
            expect(world.stats().chunkBytes).toBe(1024); // rounded up to a multiple of 64
        });
        await using(createWorld(), (world) => expect(world.stats().chunkBytes).toBe(65536));
    });
});

describe('constructors are internal', () => {
    test('new World(), new Query(), new TesseraModule() say how to make them instead of crashing', () => {
        for (const make of [
            () => new (World as never as new () => unknown)(),
            () => new (Query as never as new () => unknown)(),
            () => new (TesseraModule as never as new () => unknown)(),
        ]) {
            expect(make).toThrow(expect.objectContaining({ name: 'TesseraError', code: 'INVALID_ARGUMENT' }));
        }
    });
});

describe('worlds sharing a module', () => {
    test('are independent: entities, values, components, destruction', async () => {
        const tessera = await init();
        const a = tessera.createWorld();
        const b = tessera.createWorld();
        try {
            const Other = component('Other', { v: 'u8' });
            b.spawn(Other({ v: 1 })); // different registration orders
            const ea = a.spawn(Position({ x: 1, y: 1 }));
            const eb = b.spawn(Position({ x: 2, y: 2 }));
            a.set(ea, Position, { x: 10 });
            expect(a.get(ea, Position)).toEqual({ x: 10, y: 1 });
            expect(b.get(eb, Position)).toEqual({ x: 2, y: 2 });
            expect(a.stats().entityCount).toBe(1);
            expect(b.stats().entityCount).toBe(2);
            a.despawn(ea);
            // The same handle value may exist in the other world; it is untouched there.
            const sameHandle = b.isAlive(ea);
            if (sameHandle) expect(b.has(ea, Other) || b.has(ea, Position)).toBe(true);
            a.destroy();
            expect(b.get(eb, Position)).toEqual({ x: 2, y: 2 });
            b.spawnMany(1000, Position({ x: 3 }));
            expect(b.query({ all: [Position] }).count()).toBe(1001);
            b.validate();
        } finally {
            a.destroy();
            b.destroy();
        }
    });

    test('destroying worlds gives their memory back for the next ones', async () => {
        const tessera = await init({ memory: MODULE_MEMORY.minimum }); // the first world must grow it
        const least = tessera.memory.buffer.byteLength;
        const first = tessera.createWorld();
        first.spawnMany(600_000, Position);
        first.destroy();
        const size = tessera.memory.buffer.byteLength;
        for (let i = 0; i < 3; i++) {
            const world = tessera.createWorld();
            try {
                world.spawnMany(600_000, Position);
            } finally {
                world.destroy();
            }
        }
        expect(tessera.memory.buffer.byteLength).toBe(size);
        expect(size).toBeGreaterThan(least);
    });
});

describe("the module's memory", () => {
    const MiB = 1024 * 1024;
    const Wide = component('Wide', { a: 'f64', b: 'f64', c: 'f64', d: 'f64' });

    test('by default 256 MiB: a run and 100,000 spawns in it grow nothing', async () => {
        const tessera = await init({ bytes: readFileSync(wasmUrl) });
        expect(DEFAULT_MEMORY_BYTES).toBe(256 * MiB);
        expect(tessera.memory.buffer.byteLength).toBe(DEFAULT_MEMORY_BYTES);
        const buffer = tessera.memory.buffer;
        await using(tessera.createWorld(), (world) => {
            world.spawnMany(100_000, Position, Wide);
            const query = world.query({ all: [Position] });
            for (const chunk of query) for (let i = 0; i < chunk.count; i++) world.spawn(Wide);
            expect(world.stats().entityCount).toBe(200_000);
        });
        // Not detached: no view of it, nor any typed array of the process, was made slower.
        expect(tessera.memory.buffer).toBe(buffer);
    });

    test('init({ memory }) sizes it in whole pages, and it grows past that when the worlds need more', async () => {
        const tessera = await init({ memory: 32 * MiB + 1 });
        expect(tessera.memory.buffer.byteLength).toBe(32 * MiB + 64 * 1024);
        expect(tessera).not.toBe(await init()); // a new instance, the default untouched
        const least = await init({ memory: MODULE_MEMORY.minimum });
        expect(least.memory.buffer.byteLength).toBe(16 * MiB);
        const buffer = least.memory.buffer;
        await using(least.createWorld(), (world) => {
            const many = world.spawnMany(300_000, Wide({ a: 1.5 }));
            expect(world.get(many[299_999]!, Wide, 'a')).toBe(1.5);
        });
        expect(least.memory.buffer).not.toBe(buffer);
        expect(least.memory.buffer.byteLength).toBeGreaterThan(16 * MiB);
    });

    test('a size out of range is INVALID_ARGUMENT naming memory, and makes no module', async () => {
        const base = await init();
        for (const memory of [0, MODULE_MEMORY.minimum - 1, 2 ** 32 + 1, NaN, Infinity, -1, '64', 64n, null]) {
            const error = await expectRejection(init({ memory: memory as number }), 'INVALID_ARGUMENT', { operation: 'init' });
            expect(error.message).toMatch(/: memory: expected a number of bytes from 16777216 \(16 MiB\) to 4294967296 \(4 GiB\), got /);
        }
        expect(await init()).toBe(base);
    });

    test('a platform that refuses 256 MiB at once: the least the module takes; a size asked for and refused: OUT_OF_MEMORY', async () => {
        const Real = WebAssembly.Memory;
        const leastPages = MODULE_MEMORY.minimum / (64 * 1024);
        // A 32-bit browser's answer to a large memory: RangeError.
        class Refusing extends Real {
            constructor(descriptor: WebAssembly.MemoryDescriptor) {
                if (descriptor.initial > leastPages) throw new RangeError('WebAssembly.Memory(): could not allocate memory');
                super(descriptor);
            }
        }
        WebAssembly.Memory = Refusing;
        try {
            const tessera = await init({ bytes: readFileSync(wasmUrl) });
            expect(tessera.memory.buffer.byteLength).toBe(MODULE_MEMORY.minimum);
            await using(tessera.createWorld(), (world) => expect(world.isAlive(world.spawn(Position))).toBe(true));
            const error = await expectRejection(init({ memory: 64 * MiB }), 'OUT_OF_MEMORY', { operation: 'init' });
            expect(error.message).toMatch(/: memory: the platform would not give 67108864 bytes at once/);
        } finally {
            WebAssembly.Memory = Real;
        }
    });
});
