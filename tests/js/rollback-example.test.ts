// The rollback example (examples/rollback/): two peers in one process over a link with random
// latency, each predicting the other's input and rewinding its world when a prediction was
// wrong. Both peers must hash alike on every confirmed tick, and alike the world of a straight
// run with the true inputs; without the rewinds (the control) they must part.
import { beforeAll, describe, expect, test } from 'vitest';
import { init, type TesseraModule } from '../../dist/index.js';
// @ts-expect-error: a plain ES module without type declarations
import { referenceHashes, runPeers } from '../../examples/rollback/peers.js';

type Counters = { rollbacks: number; resimulated: number; maxDepth: number; mispredictions: number };
type Run = Counters & { ticks: number; hashes: [bigint[], bigint[]]; agreeing: number; peers: Counters[] };
const run = runPeers as (options: Record<string, unknown>) => Run;
const reference = referenceHashes as (options: Record<string, unknown>) => bigint[];

const TICKS = 1000;
const SEEDS = [1, 2, 3, 4, 5];

let tessera: TesseraModule;
beforeAll(async () => {
    tessera = await init();
});

describe('the rollback example', () => {
    test.each(SEEDS)('seed %i: both peers hash alike on every confirmed tick, as a straight run does', (seed) => {
        const result = run({ tessera, seed, ticks: TICKS, inputDelay: 2, maxLatency: 6 });
        const [a, b] = result.hashes;
        // Every tick confirmed on both (the last inputs in flight were let arrive).
        expect(a.length).toBe(TICKS);
        expect(b.length).toBe(TICKS);
        expect(a).toEqual(b);
        expect(result.agreeing).toBe(TICKS);
        // And what they confirmed is the true game: the same inputs, no link, no prediction.
        expect(a).toEqual(reference({ tessera, seed, ticks: TICKS, inputDelay: 2 }));
        // The netcode was exercised: many rollbacks on each peer, some deeper than 2 frames, up
        // to latency - input delay (4), never past it.
        expect(result.rollbacks).toBeGreaterThan(50);
        for (const peer of result.peers) expect(peer.rollbacks).toBeGreaterThan(25);
        expect(result.maxDepth).toBeGreaterThan(2);
        expect(result.maxDepth).toBeLessThanOrEqual(4);
        expect(result.mispredictions).toBeGreaterThanOrEqual(result.rollbacks);
        expect(result.resimulated).toBeGreaterThan(result.rollbacks);
    });

    test('a slower link (up to 15 ticks, no input delay): rollbacks 15 frames deep, the whole checkpoint ring', () => {
        const result = run({ tessera, seed: 9, ticks: TICKS, inputDelay: 0, maxLatency: 15 });
        expect(result.hashes[0]).toEqual(result.hashes[1]);
        expect(result.hashes[0]).toEqual(reference({ tessera, seed: 9, ticks: TICKS, inputDelay: 0 }));
        expect(result.maxDepth).toBe(15);
    });

    test('the control: without the rewinds the predictions stay wrong and the peers part', () => {
        for (const seed of SEEDS.slice(0, 3)) {
            const result = run({ tessera, seed, ticks: TICKS, inputDelay: 2, maxLatency: 6, rollback: false });
            const [a, b] = result.hashes;
            expect(a.length).toBe(TICKS);
            expect(result.rollbacks).toBe(0);
            expect(result.mispredictions).toBeGreaterThan(50);
            expect(a).not.toEqual(b);
            // Not a tick here and there: once parted, the worlds stay apart.
            expect(result.agreeing).toBeLessThan(TICKS / 10);
        }
    });

    test('a link slower than the checkpoint ring reaches is refused, not rolled back wrong', () => {
        expect(() => run({ tessera, seed: 1, ticks: 300, inputDelay: 0, maxLatency: 30, checkpoints: 16 })).toThrow(/needs checkpoint/);
    });
});
