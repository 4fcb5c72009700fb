// init() and createWorld(): where the module comes from, load failures, worlds sharing a module.
// The order of the first tests matters: they check what becomes the default module.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';

import { component, createWorld, init, Query, TesseraModule, World } from '../../dist/index.js';
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
        expect(error.message).toMatch(/memory and _initialize/);
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
        const tessera = await init();
        const first = tessera.createWorld();
        first.spawnMany(200_000, Position);
        first.destroy();
        const size = tessera.memory.buffer.byteLength;
        for (let i = 0; i < 3; i++) {
            const world = tessera.createWorld();
            try {
                world.spawnMany(200_000, Position);
            } finally {
                world.destroy();
            }
        }
        expect(tessera.memory.buffer.byteLength).toBe(size);
    });
});
