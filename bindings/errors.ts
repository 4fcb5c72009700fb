/**
 * `TesseraError`: the one error type of the API. Its `code` is stable; its message names the
 * operation and the entity, component and field involved.
 *
 * @module
 */
import { LIMITS, type RESULTS } from './abi.js';

/**
 * The C core's result codes (`TES_ERR_*` in `src/tessera.h`, without the prefix), in
 * bindings/abi.ts's `RESULTS`, which tools/abi.c writes from the core's own list with each
 * code's message.
 */
type CoreErrorCode = Exclude<(typeof RESULTS)[number], 'OK'>;

/**
 * Stable error codes. The C core's results (`TES_ERR_*` in `src/tessera.h`) appear without
 * their prefix (see `RESULTS` in bindings/abi.ts for each one's message); the rest are raised
 * by the TypeScript layer.
 */
export type ErrorCode =
    | CoreErrorCode
    // From the TypeScript layer.
    /** The world, query, subscription or system was destroyed or closed. */
    | 'DESTROYED'
    /** A chunk was used after its iteration moved on. */
    | 'CHUNK_EXPIRED'
    /** Memory grew while a column view handed out for the chunk was still in use. */
    | 'VIEW_DETACHED'
    /** The module could not be loaded or does not look like tessera.wasm. */
    | 'LOAD_FAILED';

/** What an error is about; every part is optional. */
export interface ErrorContext {
    /** The entity handle involved. */
    readonly entity?: number | undefined;
    /** The component's name. */
    readonly component?: string | undefined;
    /** The field's name. */
    readonly field?: string | undefined;
    /**
     * Where the entity at fault is in a call that takes values per entity (`spawnMany` with
     * `C.columns(...)`): 0 for the first. Its handle may not exist (a refused spawn makes none).
     */
    readonly position?: number | undefined;
}

/**
 * Every failure of the API. A failed call leaves the world exactly as it was (the C core's
 * contract), except where a method's documentation says otherwise.
 *
 * @example
 * try { world.get(e, Position); }
 * catch (error) { if (error instanceof TesseraError && error.code === 'STALE_ENTITY') ... }
 */
export class TesseraError extends Error {
    override readonly name = 'TesseraError';
    /** Stable code, e.g. `'STALE_ENTITY'`. */
    readonly code: ErrorCode;
    /** The operation that failed, e.g. `'world.set'`. */
    readonly operation: string;
    /** The entity handle involved, if any. */
    readonly entity: number | undefined;
    /** The component's name, if any. */
    readonly component: string | undefined;
    /** The field's name, if any. */
    readonly field: string | undefined;
    /** The position of the entity at fault among a call's entities, if the call takes values per entity. */
    readonly position: number | undefined;

    constructor(code: ErrorCode, operation: string, problem: string, context: ErrorContext = {}) {
        super(`tessera: ${operation} failed${describeContext(context)}: ${problem}`);
        this.code = code;
        this.operation = operation;
        this.entity = context.entity;
        this.component = context.component;
        this.field = context.field;
        this.position = context.position;
    }
}

/** "entity 42 (index 42, generation 0)": a handle packs an index and a generation (LIMITS.index_bits). */
export function describeEntity(entity: number): string {
    return `entity ${entity} (index ${entity & INDEX_MASK}, generation ${entity >>> LIMITS.index_bits})`;
}

const INDEX_MASK = 2 ** LIMITS.index_bits - 1;

/** "no pair (source, R, target)": what a pair call found missing. @internal */
export function describePair(source: number, relation: string | undefined, target: number): string {
    return `no pair (${describeEntity(source)}, ${relation}, ${describeEntity(target)})`;
}

/** A CYCLE refusal's problem: the target that would have closed the cycle. @internal */
export function describeCycle(message: string, target: number): string {
    return `${message}: the target, ${describeEntity(target)}, is the source or one of its descendants`;
}

function describeContext({ entity, component, field, position }: ErrorContext): string {
    const parts: string[] = [];
    if (entity !== undefined) parts.push(describeEntity(entity));
    if (position !== undefined) parts.push(`entity #${position} of the call`);
    if (component !== undefined) parts.push(field === undefined ? component : `${component}.${field}`);
    return parts.length ? ` for ${parts.join(', ')}` : '';
}

/** A short description of any value for error messages. @internal */
export function describeValue(value: unknown): string {
    if (typeof value === 'string') return JSON.stringify(value);
    if (typeof value === 'function') return `function ${value.name || '(anonymous)'}`;
    if (Array.isArray(value)) return `an array of ${value.length}`;
    if (value === null || typeof value !== 'object') return String(value);
    return `an object (${Object.prototype.toString.call(value)})`;
}
