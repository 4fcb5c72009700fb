// State sync on the wire: the same scenario through tessera's deltas, @colyseus/schema and
// bitECS's diff serializer, side by side in one process. N entities with a position { x, y }
// (f32 each); every tick K of them, picked at random (the same picks for every contender),
// move; the source encodes what changed and a second state applies it. Reported per tick:
// bytes on the wire, bytes per moved entity, encode and apply time (median of the ticks'
// times, over `runs` runs of TICKS ticks; the first run is warm-up). After the ticks each
// receiving state is checked against its source, entity by entity; a mismatch throws.
//
// Each contender in its own idiom:
//   tessera   a component Position { x: f32, y: f32 }; world.set(e, Position, { x, y }) per
//             move; a replicator's peer: peer.encode() plus the sender's copy (bytes.slice()),
//             replica.applyDelta(bytes), peer.ack(tick).
//   tessera (0.01)  the same with `quantize: [[Position, { x: 0.01, y: 0.01 }]]`: each value
//             travels as round(v / 0.01) in a varint; the check expects the replica to hold
//             Math.fround(Math.round(v / 0.01) * 0.01) (the core rounds half away from 0, the
//             same for these positive values).
//   colyseus  schema({ x: t.float32(), y: t.float32() }) entities in a t.map keyed by id, the
//             usual Colyseus room state; entity.x = ..., encoder.encode() (copied) and
//             encoder.discardChanges(), decoder.decode(bytes).
//   bitecs    SoA Position { x: Float32Array, y: Float32Array }; createSoASerializer with
//             diff: true (it keeps a shadow copy and writes changed fields only), given every
//             networked entity each tick (bitECS has no change tracking); createSoADeserializer.
//   node bench/js/net.mjs [--quick] [--runs N] [--no-write]
import { writeFileSync } from 'node:fs';
import path from 'node:path';

import { Decoder, Encoder, schema, t } from '@colyseus/schema';
import { createSoADeserializer, createSoASerializer, f32 } from 'bitecs/serialization';

import { component, init } from '../../dist/index.js';
import { fmtNum, median } from './measure.js';
import { envLine, parseBenchArgs, resultsDir } from './node-env.mjs';
import { mulberry32 } from './shared.js';

const args = parseBenchArgs(process.argv.slice(2), import.meta.url);
const { runs } = args;
const TICKS = args.quick ? 50 : 200;
const ROWS = [
    { n: 1_000, k: 10 },
    { n: 1_000, k: 100 },
    { n: 10_000, k: 100 },
    { n: 10_000, k: 1_000 },
    ...(args.quick ? [] : [{ n: 100_000, k: 100 }]),
];

const tessera = await init();
const Position = component('Position', { x: 'f32', y: 'f32' });

/** The moves of one run: per tick, K distinct entities (by number) and their new x, y. */
function moves(n, k, seed) {
    const rnd = mulberry32(seed);
    const ticks = [];
    for (let t = 0; t < TICKS; t++) {
        const picked = new Set();
        while (picked.size < k) picked.add(Math.floor(rnd() * n));
        ticks.push(Array.from(picked, (i) => [i, Math.fround(rnd() * 1000), Math.fround(rnd() * 1000)]));
    }
    return ticks;
}

/** tessera's contender, exact or with every value quantized to `step`. */
function tesseraContender(n, step) {
    const source = tessera.createWorld(),
        replica = tessera.createWorld();
    const ids = source.spawnMany(n, Position);
    const quantize = step === undefined ? undefined : [[Position, { x: step, y: step }]];
    const peer = source.replicator({ components: [Position], quantize }).peer();
    const expected = step === undefined ? (v) => v : (v) => Math.fround(Math.round(v / step) * step);
    const key = peer.encode();
    replica.applyDelta(key.bytes.slice());
    peer.ack(key.tick);
    return {
        move(i, x, y) {
            source.set(ids[i], Position, { x, y });
        },
        encode() {
            const delta = peer.encode();
            this.tick = delta.tick;
            return delta.bytes.slice();
        },
        apply(bytes) {
            replica.applyDelta(bytes);
            peer.ack(this.tick);
        },
        check() {
            for (let i = 0; i < n; i++) {
                const a = source.get(ids[i], Position),
                    b = replica.get(ids[i], Position);
                const x = expected(a.x),
                    y = expected(a.y);
                if (x !== b.x || y !== b.y) return `entity ${i}: ${b.x},${b.y} != ${x},${y}`;
            }
            return null;
        },
        dispose() {
            source.destroy();
            replica.destroy();
        },
    };
}

const contenders = {
    tessera: (n) => tesseraContender(n),
    'tessera (0.01)': (n) => tesseraContender(n, 0.01),
    colyseus(n) {
        const Entity = schema({ x: t.float32(), y: t.float32() }, 'Entity');
        const State = schema({ entities: t.map(Entity) }, 'State');
        const state = new State();
        const entities = [];
        for (let i = 0; i < n; i++) {
            const e = new Entity();
            e.x = 0;
            e.y = 0;
            state.entities.set(String(i), e);
            entities.push(e);
        }
        const encoder = new Encoder(state);
        const decoder = new Decoder(new State());
        decoder.decode(encoder.encodeAll().slice());
        encoder.discardChanges();
        return {
            move(i, x, y) {
                entities[i].x = x;
                entities[i].y = y;
            },
            encode() {
                const bytes = encoder.encode().slice();
                encoder.discardChanges();
                return bytes;
            },
            apply(bytes) {
                decoder.decode(bytes);
            },
            check() {
                const got = decoder.state.entities;
                for (let i = 0; i < n; i++) {
                    const a = entities[i],
                        b = got.get(String(i));
                    if (!b || a.x !== b.x || a.y !== b.y) return `entity ${i}: ${b?.x},${b?.y} != ${a.x},${a.y}`;
                }
                return null;
            },
            dispose() {},
        };
    },
    bitecs(n) {
        const source = { x: f32(new Array(n).fill(0)), y: f32(new Array(n).fill(0)) };
        const replica = { x: f32(new Array(n).fill(0)), y: f32(new Array(n).fill(0)) };
        const all = Array.from({ length: n }, (_, i) => i);
        const serialize = createSoASerializer([source], { diff: true, buffer: new ArrayBuffer(64 * n + 1024) });
        const deserialize = createSoADeserializer([replica], { diff: true });
        deserialize(serialize(all)); // the first full sync: every value differs from the shadow
        return {
            move(i, x, y) {
                source.x[i] = x;
                source.y[i] = y;
            },
            encode() {
                return new Uint8Array(serialize(all));
            },
            apply(bytes) {
                deserialize(bytes.buffer);
            },
            check() {
                for (let i = 0; i < n; i++) {
                    if (Math.fround(source.x[i]) !== Math.fround(replica.x[i]) || Math.fround(source.y[i]) !== Math.fround(replica.y[i])) {
                        return `entity ${i}: ${replica.x[i]},${replica.y[i]} != ${source.x[i]},${source.y[i]}`;
                    }
                }
                return null;
            },
            dispose() {},
        };
    },
};

const rows = [];
for (const { n, k } of ROWS) {
    for (const [name, make] of Object.entries(contenders)) {
        const c = make(n);
        const bytes = [],
            encodeMs = [],
            applyMs = [];
        for (let run = 0; run <= runs; run++) {
            for (const tick of moves(n, k, 1000 * run + n + k)) {
                for (const [i, x, y] of tick) c.move(i, x, y);
                let t = performance.now();
                const b = c.encode();
                const encode = performance.now() - t;
                t = performance.now();
                c.apply(b);
                const apply = performance.now() - t;
                if (run === 0) continue; // warm-up
                bytes.push(b.length);
                encodeMs.push(encode);
                applyMs.push(apply);
            }
        }
        const problem = c.check();
        if (problem) throw new Error(`net bench ${name} n=${n} k=${k}: the receiving state differs: ${problem}`);
        c.dispose();
        const perTick = bytes.reduce((a, b) => a + b, 0) / bytes.length;
        rows.push({ n, k, name, perTick, perMove: perTick / k, encode: median(encodeMs) * 1000, apply: median(applyMs) * 1000 });
        console.log(
            `n=${n} k=${k} ${name}: ${perTick.toFixed(0)} B/tick, ${(perTick / k).toFixed(2)} B/move, encode ${(median(encodeMs) * 1000).toFixed(1)} µs, apply ${(median(applyMs) * 1000).toFixed(1)} µs`,
        );
    }
}

const lines = [
    '# State sync on the wire: tessera deltas vs @colyseus/schema vs bitECS (`npm run bench:net`)',
    '',
    envLine(),
    '',
    `N entities with a position { x, y } (f32 each); every tick K of them, picked at random, move (the same picks for every contender); the source encodes what changed and a second state applies it. ${TICKS} ticks per run, ${runs} runs after a warm-up run; bytes are the mean per tick, times the median of the ticks' times. Each receiving state is checked against its source after the ticks. Contenders in their own idiom (bench/js/net.mjs): tessera's replicator peer (\`peer.encode()\`, \`applyDelta\`), exact and with \`quantize\` at a step of 0.01 on x and y ("tessera (0.01)": the replica holds each value rounded to the nearest 0.01); a Colyseus room state (\`t.map\` of \`schema({ x: t.float32(), y: t.float32() })\`, \`encoder.encode()\` / \`decoder.decode()\`); bitECS's SoA serializer with \`diff: true\`, given every networked entity each tick (it has no change tracking). "vs tessera": the contender's bytes over tessera's (above 1: tessera sends fewer).`,
    '',
    '| entities | moved per tick | contender | bytes per tick | bytes per moved entity | vs tessera | encode µs | apply µs |',
    '|--:|--:|---|--:|--:|--:|--:|--:|',
];
for (const r of rows) {
    const own = rows.find((o) => o.n === r.n && o.k === r.k && o.name === 'tessera');
    lines.push(
        `| ${r.n.toLocaleString('en-US')} | ${r.k.toLocaleString('en-US')} | ${r.name} | ${fmtNum(r.perTick)} | ${r.perMove.toFixed(2)} | ${(r.perTick / own.perTick).toFixed(2)} | ${fmtNum(r.encode)} | ${fmtNum(r.apply)} |`,
    );
}
const text = lines.join('\n') + '\n';
console.log('\n' + text);
if (args.write) {
    writeFileSync(path.join(resultsDir, 'net.md'), text);
    console.log('wrote bench/results/net.md');
}
