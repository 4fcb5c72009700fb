/**
 * Systems and stages: functions run with their query on every due `world.tick()`, stage by
 * stage in creation order. They live on the JavaScript side (a call from wasm into JS per
 * system would buy nothing); `tick` then lets the C core prune change history.
 *
 * @module
 */
import { endIterations } from './chunk-iterator.js';
import { TesseraError, describeValue } from './errors.js';
import { checkKeys } from './options.js';
import { Query, type QueryDesc } from './query.js';
import type { World } from './world.js';

/** A named group of systems; stages run in creation order. */
export interface Stage {
    readonly name: string;
}

/** What a system is. */
export interface SystemDesc {
    /** For error messages and debugging. */
    readonly name?: string;
    /** The stage (or its name) to run in. Default: `'update'`, created first on demand. */
    readonly stage?: Stage | string;
    /** The system's own query; with filters it is a consumer with its own watermark. */
    readonly query: QueryDesc;
    /** Runs every `interval` ticks (when `world.frame % interval === 0`). Default 1. */
    readonly interval?: number;
    /**
     * The body: iterate `query` (`for (const chunk of query)`); one iteration is one run.
     * Structural changes made while iterating are applied when the iteration ends.
     */
    readonly run: (query: Query, world: World) => void;
}

/** A registered system. */
export interface System {
    readonly name: string;
    readonly stage: Stage;
    readonly query: Query;
    /** Unregisters the system and closes its query. Idempotent. */
    destroy(): void;
}

const DEFAULT_STAGE = 'update';
const SYSTEM_KEYS = ['name', 'stage', 'query', 'interval', 'run'] as const;

interface Entry {
    readonly system: System;
    readonly run: (query: Query, world: World) => void;
    readonly interval: number;
}

/** @internal The stages and systems of one world. */
export class Scheduler {
    frame = 0;
    private readonly world: World;
    private readonly stages: { stage: Stage; systems: Entry[] }[] = [];
    private ticking = false;

    constructor(world: World) {
        this.world = world;
    }

    stage(name: string): Stage {
        return this.slot(name).stage;
    }

    /** A stage and its systems, made on first use. */
    private slot(name: string): { stage: Stage; systems: Entry[] } {
        if (typeof name !== 'string' || name.length === 0) {
            throw new TesseraError('INVALID_ARGUMENT', 'world.stage', 'a stage name must be a non-empty string');
        }
        let slot = this.stages.find((s) => s.stage.name === name);
        if (slot === undefined) this.stages.push((slot = { stage: Object.freeze({ name }), systems: [] }));
        return slot;
    }

    system(desc: SystemDesc): System {
        const operation = 'world.system';
        checkKeys(operation, 'system description', desc, SYSTEM_KEYS);
        if (typeof desc.run !== 'function') {
            throw new TesseraError(
                'INVALID_ARGUMENT',
                operation,
                `run must be a function (query, world) => void, got ${describeValue(desc.run)}`,
            );
        }
        const interval = desc.interval ?? 1;
        if (!Number.isInteger(interval) || interval < 1) {
            throw new TesseraError('INVALID_ARGUMENT', operation, `interval must be an integer >= 1, got ${describeValue(interval)}`);
        }
        if (desc.name !== undefined && typeof desc.name !== 'string') {
            throw new TesseraError('INVALID_ARGUMENT', operation, `name must be a string, got ${describeValue(desc.name)}`);
        }
        const given: unknown = desc.stage;
        const stageName =
            given === undefined
                ? DEFAULT_STAGE
                : typeof given === 'string'
                  ? given
                  : typeof given === 'object' && given !== null
                    ? (given as Partial<Stage>).name
                    : undefined;
        if (typeof stageName !== 'string' || stageName.length === 0) {
            throw new TesseraError('INVALID_ARGUMENT', operation, `stage must be a stage or its name, got ${describeValue(desc.stage)}`);
        }
        // The system owns its query: it lives as long as the system (no finalizer of its own).
        // Made before the stage, so that a bad query leaves no new stage behind.
        const query = new Query(this.world, desc.query, operation, true);
        const slot = this.slot(stageName);
        const stage = slot.stage;
        const name = desc.name ?? (desc.run.name || `system ${slot.systems.length + 1}`);
        const system: System = {
            name,
            stage,
            query,
            destroy: () => {
                const at = slot.systems.indexOf(entry);
                if (at < 0) return;
                // Close first: it throws while the query is iterated, and then nothing changed.
                query.close();
                slot.systems.splice(at, 1);
            },
        };
        const entry: Entry = { system, run: desc.run, interval };
        slot.systems.push(entry);
        return Object.freeze(system);
    }

    /**
     * Ends the iterations a program left live (abandoned iterators), then runs the due systems
     * stage by stage, ending what each system leaves live when it returns, then prunes. Called
     * from inside a system, it is refused and changes nothing.
     */
    tick(): void {
        const operation = 'world.tick';
        const world = this.world;
        if (this.ticking) {
            // Refused as it always was: ending the system's own run under it, or running every
            // system inside one, would pull the frame from under the running system.
            if (world.liveIterations > 0) {
                throw new TesseraError('QUERY_IN_USE', operation, 'tick() was called from a system, inside a loop over a query');
            }
            throw new TesseraError('INVALID_ARGUMENT', operation, 'tick() was called from a system');
        }
        // Abandoned iterations (a chunks() iterator not run to its end) would defer every
        // structural change forever: they end here, as break would have ended them.
        endIterations(world);
        this.ticking = true;
        try {
            for (const { systems } of this.stages) {
                for (const entry of [...systems]) {
                    if (this.frame % entry.interval !== 0 || entry.system.query.closed) continue;
                    this.runSystem(entry);
                }
            }
        } finally {
            this.ticking = false;
        }
        world.check(world.heap.exports.tes_tick(world.live(operation)), operation);
        this.frame++;
    }

    /** One system's run; an iteration it leaves live ends when it returns (or throws). */
    private runSystem(entry: Entry): void {
        const world = this.world;
        try {
            entry.run(entry.system.query, world);
        } catch (error) {
            if (!world.destroyed) {
                try {
                    endIterations(world);
                } catch {
                    // The system's own error is the one to report.
                }
            }
            throw error;
        }
        if (!world.destroyed && world.liveIterations > 0) endIterations(world);
    }
}
