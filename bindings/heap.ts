/**
 * The module's linear memory as the wrapper sees it: typed-array views that are re-derived
 * whenever `memory.buffer` changed (memory growth detaches every earlier view), a scratch
 * block for out-parameters, a growable temporary block and copies for arrays passed to C
 * (safe when the caller's array is itself a view of this memory), the pool of iteration
 * blocks, C strings, and the guards debug worlds put around the views they hand out.
 *
 * @module
 */
import { ITER } from './abi.js';
import type { Pointer, TesseraExports } from './load.js';
import { TesseraError, type ErrorCode, type ErrorContext } from './errors.js';
import { arrayTypes, type FieldType, type TypedArrayOf } from './schema.js';

/**
 * The largest block asked of the C heap: below 4 GiB, the most a wasm32 memory can hold (item
 * lists check their numbers against it before growing to them).
 */
export const MAX_BLOCK_BYTES = 0xffff_0000;

/** Bytes of the scratch block: room for every out-parameter struct of the API. */
export const SCRATCH_BYTES = 256;

/**
 * The room the first run reserves (tes_run_reserve) for what its loop body allocates: a
 * recorded spawn takes about 100 bytes (a 40-byte command in an array that doubles, a pending
 * record), 250 with a value. The default memory (256 MiB) holds it without growing; a smaller
 * one grows by it once, at the first run. Pages nobody writes are not backed by the system. A
 * run refused memory makes the next reserve more.
 */
const RUN_RESERVE_BYTES = 64 << 20;

/** @internal */
export class Heap {
    readonly exports: TesseraExports;
    readonly memory: WebAssembly.Memory;
    /** Start of the scratch block, 16-byte aligned. */
    readonly scratch: Pointer;
    /** Error codes by C result number, from the module's own tes_result_name. */
    readonly codes: readonly ErrorCode[];
    /** Messages by C result number. */
    readonly messages: readonly string[];
    /** C result number by error code (the codes are the module's ABI: fixed once loaded). */
    readonly results: { readonly [code in ErrorCode]?: number };

    /** One view per field type (whole memory; index = address / element size), and a DataView. */
    private views!: { typed: { [T in FieldType]: TypedArrayOf[T] }; data: DataView };
    private temp: Pointer = 0;
    private tempBytes = 0;
    /**
     * The temporary block a growing `reserveTemp` replaced, freed only once the caller's input
     * is copied (the input may lie in it, if the caller made a view of memory by hand).
     */
    private staleTemp: Pointer = 0;
    /**
     * Iteration blocks no live iteration uses, shared by every world of the module: its size is
     * the most iterations that were ever live at once, whatever worlds come and go.
     */
    private readonly iterBlocks: Pointer[] = [];
    /** Live runs of every world of this module: the reserve is the module's (one memory). */
    private liveRuns = 0;
    /** Room the next outermost run reserves: twice what the latest took, at least the default. */
    private reserveBytes = RUN_RESERVE_BYTES;
    private readonly decoder = new TextDecoder();
    private readonly encoder = new TextEncoder();

    constructor(exports: TesseraExports, memory: WebAssembly.Memory) {
        this.exports = exports;
        this.memory = memory;
        this.rebuild();
        this.scratch = this.malloc(SCRATCH_BYTES, 'load');
        const codes: ErrorCode[] = [];
        const messages: string[] = [];
        // Past the last result, tes_result_name answers TES_ERR_UNKNOWN_RESULT.
        for (let result = 0; result < 1024; result++) {
            const name = this.string(exports.tes_result_name(result));
            if (name === 'TES_ERR_UNKNOWN_RESULT') break;
            codes.push(name.replace(/^TES_(ERR_)?/, '') as ErrorCode);
            messages.push(this.string(exports.tes_result_message(result)));
        }
        this.codes = codes;
        this.messages = messages;
        this.results = Object.fromEntries(codes.map((code, result) => [code, result]));
    }

    /**
     * The views, made again if memory grew. Growth detaches the old buffer, which leaves every
     * view over it with length 0 (a live memory is never empty): testing that is a field load,
     * where `memory.buffer` is a getter costing about 20 ns in V8, several times per chunk.
     *
     * Whatever keeps a view of its own tests its length the same way before reading it, and
     * never reads a detached view: the read gives undefined, but V8 then compiles that read,
     * wherever it is inlined, for out-of-bounds answers from then on (measured, after one
     * growth: a field handle's write 12.8 -> 16.6 ns, `world.set` 16.5 -> 19.3 ns).
     */
    private get fresh() {
        if (this.views.typed.u8.length === 0) this.rebuild();
        return this.views;
    }

    /** Every typed view of the whole memory, by field type (fresh: made again if memory grew). */
    get arrays(): { readonly [T in FieldType]: TypedArrayOf[T] } {
        return this.fresh.typed;
    }

    /** The current `memory.buffer`. */
    get current(): ArrayBuffer {
        return this.fresh.typed.u8.buffer as ArrayBuffer;
    }
    get u8(): Uint8Array {
        return this.fresh.typed.u8;
    }
    get u32(): Uint32Array {
        return this.fresh.typed.u32;
    }
    get f64(): Float64Array {
        return this.fresh.typed.f64;
    }
    /** The whole memory as the typed array of a field type (index = address / element size). */
    typed<T extends FieldType>(type: T): TypedArrayOf[T] {
        return this.fresh.typed[type];
    }
    get data(): DataView {
        return this.fresh.data;
    }

    /** The u32 at a (4-aligned) address. */
    u32At(pointer: Pointer): number {
        return this.u32[pointer >>> 2]!;
    }

    /** A u64 at an (8-aligned) address, as a number (exact below 2^53). */
    u64At(pointer: Pointer): number {
        return Number(this.data.getBigUint64(pointer, true));
    }

    /**
     * Memory from the C heap; a TesseraError when the module is out of memory, or when `bytes`
     * is more than a wasm32 `size_t` holds (it would wrap to a small block the caller then
     * writes past).
     */
    malloc(bytes: number, operation: string): Pointer {
        if (!(Number.isSafeInteger(bytes) && bytes >= 0 && bytes <= MAX_BLOCK_BYTES)) {
            throw new TesseraError('OUT_OF_MEMORY', operation, `cannot allocate ${bytes} bytes`);
        }
        const pointer = this.exports.tes_malloc(bytes) >>> 0;
        if (pointer === 0) {
            const during = this.liveRuns === 0 ? '' : ` (${this.problem(this.results.OUT_OF_MEMORY!)})`;
            throw new TesseraError('OUT_OF_MEMORY', operation, `cannot allocate ${bytes} bytes${during}`);
        }
        return pointer;
    }

    /**
     * A temporary block of at least `bytes`, valid until the next `tempBlock`, `tempU32` or
     * `tempArray` call. It only grows, so steady-state calls allocate nothing. Its contents
     * are the caller's to write: to copy an array the caller was given, use `tempArray`.
     */
    tempBlock(bytes: number, operation: string): Pointer {
        const pointer = this.reserveTemp(bytes, operation);
        this.freeStaleTemp();
        return pointer;
    }

    /** Bytes of the current temporary block (0 before the first `tempBlock`). */
    get tempSize(): number {
        return this.tempBytes;
    }

    /**
     * Copies a list of u32 (entities, components) into the temporary block. The list may be a
     * view of this memory (`chunk.entities`): see {@link Heap.tempArray}.
     */
    tempU32(values: ArrayLike<number>, operation: string): Pointer {
        return this.tempArray(values, 'u32', operation);
    }

    /**
     * Copies numbers into the temporary block as elements of `type`. `values` may be a view of
     * this very memory (`delta.bytes`, `chunk.entities`, a column): allocating the block may
     * grow memory, which detaches such a view, so where it lies is noted first and it is
     * copied from there afterwards (see `copyIn`).
     */
    tempArray(values: ArrayLike<number>, type: FieldType, operation: string): Pointer {
        const pointer = this.copyIn(values, type, (bytes) => this.reserveTemp(Math.max(bytes, 4), operation));
        this.freeStaleTemp();
        return pointer;
    }

    /**
     * Copies numbers into fresh memory from the C heap (free it with tes_free), for inputs too
     * big to keep in the temporary block (snapshots). `values` may be a view of this memory,
     * as for {@link Heap.tempArray}.
     */
    newArray(values: ArrayLike<number>, type: FieldType, operation: string): Pointer {
        return this.copyIn(values, type, (bytes) => this.malloc(Math.max(bytes, 1), operation));
    }

    /**
     * @internal A run starts (a loop over a query hands out views of memory): the first live
     * one makes room in the C heap now and keeps memory from growing until the last ends, so
     * nothing its loop body does (spawns, adds, thousands of them) detaches a view it holds.
     */
    beginRun(operation: string): void {
        if (this.liveRuns === 0) {
            const result = this.exports.tes_run_reserve(this.reserveBytes);
            if (result !== 0) {
                throw new TesseraError('OUT_OF_MEMORY', operation, `no room for a run's reserve of ${this.reserveBytes} bytes`);
            }
        }
        this.liveRuns++;
    }

    /**
     * @internal A run ended (after its deferred commands applied): the last one ends the
     * reserve. A run that was refused memory makes the next one reserve more.
     */
    endRun(): void {
        if (--this.liveRuns !== 0) return;
        const refused = this.exports.tes_run_release() >>> 0;
        if (refused !== 0) this.reserveBytes = Math.min(MAX_BLOCK_BYTES / 2, 2 * (this.reserveBytes + refused));
    }

    /**
     * @internal The message of a C result: an OUT_OF_MEMORY met while a run is live says why
     * (memory may not grow then) and what happens next.
     */
    problem(result: number): string {
        const message = this.messages[result] ?? `unknown result ${result}`;
        if (this.liveRuns === 0 || result !== this.results.OUT_OF_MEMORY) return message;
        return (
            `out of memory: memory may not grow while a loop over a query is live (its views would detach), and the ` +
            `room the run reserved (${this.reserveBytes} bytes) is used up; the next run reserves more`
        );
    }

    /** @internal A 56-byte `tes_iter_t` block, from the pool when one is free. */
    takeIterBlock(operation: string): Pointer {
        return this.iterBlocks.pop() ?? this.malloc(ITER.size, operation);
    }

    /** @internal Gives an iteration block back to the pool (its iteration ended, or its world went). */
    returnIterBlock(block: Pointer): void {
        this.iterBlocks.push(block);
    }

    /** @internal Iteration blocks in the pool (no live iteration uses them). */
    get pooledIterBlocks(): number {
        return this.iterBlocks.length;
    }

    /**
     * The one way a caller's array gets into wasm memory. An array that is a view of this
     * memory (its buffer is `memory.buffer`) is detached by any growth, and `reserve` may
     * grow memory: so its byte offset is noted before, and its bytes are copied within memory
     * after (the region it views is not freed by an allocation). A view of another element
     * type is copied out to JS first. Anything else (plain arrays, typed arrays over JS
     * memory) is read only after `reserve`, as it cannot be detached by it.
     */
    private copyIn(values: ArrayLike<number>, type: FieldType, reserve: (bytes: number) => Pointer): Pointer {
        const Type = arrayTypes[type];
        const elementBytes = Type.BYTES_PER_ELEMENT;
        let source = -1;
        // Debug worlds hand out Proxies over views: property reads go through to the view.
        const buffer = (values as Partial<ArrayBufferView>).buffer;
        if (buffer !== undefined && buffer === this.current) {
            if (values instanceof Type) source = (values as unknown as ArrayBufferView).byteOffset;
            else values = Array.from(values);
        }
        const length = values.length;
        const pointer = reserve(length * elementBytes);
        if (source >= 0) {
            this.u8.copyWithin(pointer, source, source + length * elementBytes);
        } else if (type === 'u32' && !ArrayBuffer.isView(values)) {
            // A loop beats TypedArray.set for the few ids of a component set (and plain arrays).
            const u32 = this.u32;
            for (let i = 0, at = pointer >>> 2; i < length; i++) u32[at + i] = values[i]!;
        } else {
            this.typed(type).set(values, pointer / elementBytes);
        }
        return pointer;
    }

    /** The temporary block, grown when smaller than `bytes`; the old one waits in `staleTemp`. */
    private reserveTemp(bytes: number, operation: string): Pointer {
        if (bytes > this.tempBytes) {
            const size = Math.max(bytes, this.tempBytes * 2, 1024);
            const block = this.malloc(size, operation);
            this.staleTemp = this.temp;
            this.temp = block;
            this.tempBytes = size;
        }
        return this.temp;
    }

    private freeStaleTemp(): void {
        if (this.staleTemp !== 0) {
            this.exports.tes_free(this.staleTemp);
            this.staleTemp = 0;
        }
    }

    /** Reads a NUL-terminated UTF-8 string. */
    string(pointer: Pointer): string {
        const bytes = this.u8;
        let end = pointer;
        while (bytes[end] !== 0) end++;
        return this.decoder.decode(bytes.subarray(pointer, end));
    }

    /** Copies `text` as a NUL-terminated string into fresh C memory; free it with tes_free. */
    newString(text: string, operation: string): Pointer {
        const encoded = this.encoder.encode(text);
        const pointer = this.malloc(encoded.length + 1, operation);
        this.u8.set(encoded, pointer);
        this.u8[pointer + encoded.length] = 0;
        return pointer;
    }

    private rebuild(): void {
        const buffer = this.memory.buffer;
        this.views = {
            data: new DataView(buffer),
            typed: {
                f32: new Float32Array(buffer),
                f64: new Float64Array(buffer),
                i8: new Int8Array(buffer),
                u8: new Uint8Array(buffer),
                i16: new Int16Array(buffer),
                u16: new Uint16Array(buffer),
                i32: new Int32Array(buffer),
                u32: new Uint32Array(buffer),
            },
        };
    }
}

/**
 * A view handed out by a debug world, wrapped so that every use checks first that it may still
 * be used: `problem` answers the error to throw (the world was destroyed, memory grew, the
 * delta was encoded again), or undefined. The only way to make a stale typed array loud; a
 * Proxy costs on every element access, so only debug worlds use it. Methods are bound to the
 * view, so `view.fill()`, `view.slice()` and `view.subarray()` work on it too.
 */
export function guardView<T extends object>(view: T, problem: () => TesseraError | undefined): T {
    const check = () => {
        const error = problem();
        if (error !== undefined) throw error;
    };
    return new Proxy(view, {
        get(target, property) {
            check();
            const value = Reflect.get(target, property, target);
            return typeof value === 'function' ? value.bind(target) : value;
        },
        set(target, property, value) {
            check();
            return Reflect.set(target, property, value, target);
        },
    });
}

/**
 * The usual problem of a view over wasm memory in a debug world: `DESTROYED` once its world is,
 * `VIEW_DETACHED` once memory grew (growth detaches the buffer: every view over it drops to
 * length 0, and the views the API hands out are never empty).
 */
export function viewProblem(
    view: ArrayLike<number>,
    destroyed: () => boolean,
    operation: string,
    refresh: string,
    context: ErrorContext = {},
): TesseraError | undefined {
    if (destroyed()) return new TesseraError('DESTROYED', operation, 'the world was destroyed', context);
    if (view.length === 0) {
        return new TesseraError(
            'VIEW_DETACHED',
            operation,
            `memory grew after this view was made (a call that allocates ran); ${refresh}`,
            context,
        );
    }
    return undefined;
}
