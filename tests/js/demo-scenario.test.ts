// The demo's scenario (demo/scenario.js) in Node: the JS and the wasm-kernel flavours simulate
// the same physics, the population stays at its target with about emitRate respawns per tick,
// and the heat reaction is driven by exactly the bounces the Changed subscription reports.
import { describe, expect, test } from 'vitest';

import { createWorld, type World } from '../../dist/index.js';
// @ts-expect-error: a plain ES module (checked with // @ts-check) without declarations
import { Bounce, Position, Scenario } from '../../demo/scenario.js';

interface Run {
    world: World;
    positions: number[];
    bounced: number;
    changed: number;
    expired: number;
    spawned: number;
}

async function simulate(mode: 'js' | 'wasm', ticks: number, count = 20_000, emitRate = 100): Promise<Run> {
    const world = await createWorld();
    const scenario = new Scenario(world, { count, emitRate, mode });
    const totals = { bounced: 0, changed: 0, expired: 0, spawned: 0 };
    for (let t = 0; t < ticks; t++) {
        const report = scenario.tick();
        totals.bounced += report.bounced;
        totals.changed += report.changed;
        totals.expired += report.expired;
        totals.spawned += report.spawned;
    }
    const positions: number[] = [];
    for (const chunk of scenario.visible) {
        const x = chunk.column(Position, 'x');
        const y = chunk.column(Position, 'y');
        for (let i = 0; i < chunk.count; i++) positions.push(x[i]!, y[i]!);
    }
    return { world, positions, ...totals };
}

describe('the demo scenario', () => {
    test('JS loops and wasm kernels agree: same particles, same places, same bounces', async () => {
        const wasm = await simulate('wasm', 120);
        const js = await simulate('js', 120);
        try {
            expect(js.positions.length).toBe(wasm.positions.length);
            let worst = 0;
            wasm.positions.forEach((p, i) => (worst = Math.max(worst, Math.abs(p - js.positions[i]!))));
            expect(worst).toBeLessThan(0.01); // float rounding of a fused loop vs separate kernels
            expect(js.bounced).toBe(wasm.bounced);
            expect(js.bounced).toBeGreaterThan(0);
            wasm.world.validate();
            js.world.validate();
        } finally {
            wasm.world.destroy();
            js.world.destroy();
        }
    });

    test('the population holds at its target; about emitRate particles respawn per tick', async () => {
        const run = await simulate('wasm', 300, 20_000, 100);
        try {
            expect(run.world.stats().entityCount).toBe(20_000);
            expect(run.spawned - 20_000).toBe(run.expired); // the first tick spawns the population
            expect(run.expired / 300).toBeGreaterThan(70);
            expect(run.expired / 300).toBeLessThan(130);
        } finally {
            run.world.destroy();
        }
    });

    test('the heat reaction sees exactly the bounces: the subscription reports each bounced particle once', async () => {
        const run = await simulate('js', 200);
        try {
            // Each tick's bounced rows are marked on Bounce; the subscription drained each tick
            // reports them (an entity bouncing twice in one tick counts once).
            expect(run.changed).toBeGreaterThan(0);
            expect(run.changed).toBeLessThanOrEqual(run.bounced);
            expect(run.changed).toBeGreaterThan(run.bounced * 0.9);
            expect(Bounce.name).toBe('Bounce');
        } finally {
            run.world.destroy();
        }
    });
});
