/**
 * Description and option objects from plain JavaScript: `world.query({ ... })`,
 * `world.subscribe({ ... })`, `world.replicator({ ... })`, `world.system({ ... })`. TypeScript
 * catches a misspelt key at compile time; plain JavaScript would ignore it in silence (a query
 * with `alll: [Position]` would visit every entity), so every key is checked at run time.
 *
 * @module
 */
import { TesseraError, describeValue, type ErrorCode, type ErrorContext } from './errors.js';

/**
 * Throws unless `value` is a plain object (not null, not an array) whose own keys are all in
 * `known`. The error names the first unknown key and lists the known ones.
 *
 * @param operation the failing operation, e.g. `'world.query'`.
 * @param what what the object is, for the message: `'query description'`, `'options'`.
 * @param code `INVALID_ARGUMENT` by default; `BAD_SCHEMA` for component definitions.
 * @param context the component (or entity) the object belongs to, if any.
 */
export function checkKeys(
    operation: string,
    what: string,
    value: unknown,
    known: readonly string[],
    code: ErrorCode = 'INVALID_ARGUMENT',
    context: ErrorContext = {},
): asserts value is object {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
        const shape = known.length ? `{ ${known.join(', ')} }` : '{}';
        throw new TesseraError(code, operation, `expected a ${what} object ${shape}, got ${describeValue(value)}`, context);
    }
    for (const key of Object.keys(value)) {
        if (!known.includes(key)) {
            throw new TesseraError(
                code,
                operation,
                `unknown key ${JSON.stringify(key)} in the ${what} (expected ${known.join(', ')})`,
                context,
            );
        }
    }
}
