// npm run example:rollback — two peers of the rollback example (peers.js) play 1,000 ticks over a
// link with random latency, in this process; prints what the netcode did and whether both peers'
// worlds hashed alike on every confirmed tick (exit code 1 if not).
//   SEED=n for another run (default 1), TICKS=n for another length
import { init } from '../../dist/index.js';
import { runPeers } from './peers.js';

const tessera = await init();
const ticks = Number(process.env.TICKS ?? 1000);
const seed = Number(process.env.SEED ?? 1);
const started = performance.now();
const result = runPeers({ tessera, ticks, seed, inputDelay: 2, maxLatency: 6 });
const ms = (performance.now() - started) / ticks;
const confirmed = Math.min(result.hashes[0].length, result.hashes[1].length);
const agree = result.agreeing === confirmed;

console.log(
    `${ticks} ticks (seed ${seed}, input delay 2, latency 1-6 ticks): ${result.rollbacks} rollbacks (${result.mispredictions} mispredictions), ` +
        `${result.resimulated} frames re-simulated (at most ${result.maxDepth} deep); ` +
        `hashes ${agree ? 'agree' : 'DISAGREE'} on ${result.agreeing}/${confirmed} confirmed ticks; ${ms.toFixed(3)} ms per tick (both peers)`,
);
if (!agree) {
    const frame = result.hashes[0].findIndex((hash, f) => hash !== result.hashes[1][f]);
    console.error(`the peers part at frame ${frame}`);
    process.exitCode = 1;
}
