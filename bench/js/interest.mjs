// Per-client interest management on the wire: each client receives only what is near it,
// through tessera's peers with explicit visibility and through @colyseus/schema's StateView,
// one after the other in one process. N entities with a position { x, y } (f32 each) in a 1000 x 1000
// arena; P clients, each with a fixed focus point (spread over the arena) and radius R, so each
// sees about 1.5% of the entities. Every tick K entities, picked at random, move to random new
// positions (the same moves for every contender); then, for each client, the game updates its
// view incrementally: of the entities that moved this tick (all of them on the first tick), those
// now within R of its focus that it did not see are shown, those it saw that are now outside
// are hidden. The show/hide decisions are computed once by the harness and given to every
// contender, so both do exactly the same view work in their own API. Then each client's bytes
// are encoded and applied to that client's replica state.
//
// Reported per row: bytes per client per tick (mean), bytes per view event (an entity that moved
// and was in the client's view before or after the move: entered, left or moved inside it), the
// first tick's bytes per client (its whole view) and time, and the median over the ticks of: the view
// updates of all clients, the encode for all clients, the apply per client. After the timed ticks
// every client's replica is checked: it holds exactly the entities within R of its focus, with
// the source's positions; a mismatch throws. A budgeted tessera row (a cap on the bytes of
// records per delta) gets extra ticks with no moves until its replicas hold their views, and
// reports how many it needed.
//
// Each contender in its own idiom:
//   tessera   a component Position { x: f32, y: f32 }; world.set(e, Position, { x, y }) per
//             move; one replicator, a peer per client with { visibility: 'explicit' }
//             (peer.show(e) / peer.hide(e)); per client peer.encode() plus the sender's copy
//             (bytes.slice()), replica.applyDelta(bytes), peer.ack(tick). Each replica is a world.
//   colyseus  schema({ x: t.float32(), y: t.float32() }) entities in a t.map(Entity).view()
//             keyed by id (a @view() collection: its children go only to the views that add
//             them), a StateView per client (view.add(e) / view.remove(e)); per tick
//             encoder.encode(it) for the shared part, then encoder.encodeView(view, sharedOffset,
//             it) per client (copied), encoder.discardChanges(); a Decoder per client. Clients
//             join before the first tick with encodeAll + encodeAllView (empty views), as
//             Colyseus' SchemaSerializer does. Encoder.BUFFER_SIZE is raised to 128 KB (below).
//   node bench/js/interest.mjs [--quick] [--no-write]
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

import { Decoder, Encoder, StateView, schema, t } from '@colyseus/schema';

import { component, init } from '../../dist/index.js';
import { fmtNum, median } from './measure.js';
import { envLine, parseBenchArgs, resultsDir, root } from './node-env.mjs';
import { mulberry32 } from './shared.js';

const args = parseBenchArgs(process.argv.slice(2), import.meta.url);
const WARMUP = args.quick ? 5 : 20;
const TICKS = args.quick ? 40 : 200;
const ARENA = 1000;
const RADIUS = 70; // pi R^2 / ARENA^2: 1.54% of the arena
const BUDGET = 256;
const MAX_SETTLE = 2000;
const ROWS = [
    { n: 10_000, p: 10, k: 10 },
    { n: 10_000, p: 10, k: 100 },
    { n: 10_000, p: 50, k: 1_000 },
    ...(args.quick ? [] : [{ n: 100_000, p: 20, k: 1_000 }]),
];

// Colyseus' per-app buffer knob (its own overflow warning suggests raising it). With the default
// 16 KB, @colyseus/schema (5.0.34) corrupts an encodeView that writes more than that for one
// collection (it keeps BUFFER_SIZE free per collection, not per entry): here the map's entries
// of the 1,500 entities a view adds on the first tick of the 100,000-entity row, after which
// the decoders report "refId" not found and miss entities.
Encoder.BUFFER_SIZE = 128 * 1024;

const colyseusVersion = JSON.parse(readFileSync(path.join(root, 'node_modules/@colyseus/schema/package.json'), 'utf8')).version;

const tessera = await init();
const Position = component('Position', { x: 'f32', y: 'f32' });

/**
 * One row's scenario, the same for every contender: the initial positions, the clients' focus
 * points, and per tick the moves and each client's show/hide decisions (entity numbers; a hide
 * is stored as ~i). Tick 0 moves nothing and shows each client its whole view. Also the final
 * positions and views (for the checks) and the view events per timed tick.
 */
function scenario(n, p, k, seed) {
    const rnd = mulberry32(seed);
    const x0 = new Float64Array(n),
        y0 = new Float64Array(n);
    for (let i = 0; i < n; i++) {
        x0[i] = Math.fround(rnd() * ARENA);
        y0[i] = Math.fround(rnd() * ARENA);
    }
    const focus = Array.from({ length: p }, () => [RADIUS + rnd() * (ARENA - 2 * RADIUS), RADIUS + rnd() * (ARENA - 2 * RADIUS)]);
    const within = (c, x, y) => (x - focus[c][0]) ** 2 + (y - focus[c][1]) ** 2 <= RADIUS * RADIUS;
    const x = Float64Array.from(x0),
        y = Float64Array.from(y0);
    const sees = Array.from({ length: p }, () => new Uint8Array(n));
    const first = [];
    for (let c = 0; c < p; c++) {
        const shows = [];
        for (let i = 0; i < n; i++) {
            if (within(c, x[i], y[i])) {
                sees[c][i] = 1;
                shows.push(i);
            }
        }
        first.push(Int32Array.from(shows));
    }
    const ticks = [];
    let events = 0;
    for (let tick = 0; tick < WARMUP + TICKS; tick++) {
        const picked = new Set();
        while (picked.size < k) picked.add(Math.floor(rnd() * n));
        const moves = Array.from(picked, (i) => [i, Math.fround(rnd() * ARENA), Math.fround(rnd() * ARENA)]);
        const views = [];
        for (let c = 0; c < p; c++) {
            const changes = [];
            for (const [i, nx, ny] of moves) {
                const was = sees[c][i] === 1,
                    is = within(c, nx, ny);
                if (tick >= WARMUP && (was || is)) events++;
                if (is && !was) changes.push(i);
                else if (was && !is) changes.push(~i);
                sees[c][i] = is ? 1 : 0;
            }
            views.push(Int32Array.from(changes));
        }
        for (const [i, nx, ny] of moves) {
            x[i] = nx;
            y[i] = ny;
        }
        ticks.push({ moves, views });
    }
    const visible = sees.map((s) => {
        const out = [];
        for (let i = 0; i < n; i++) if (s[i]) out.push(i);
        return out;
    });
    const meanFirst = first.reduce((a, v) => a + v.length, 0) / p;
    return { x0, y0, first, ticks, visible, eventsPerClientTick: events / (p * TICKS), meanFirst };
}

/** tessera: a source world, one replicator, a peer (explicit visibility) and a replica world per client. */
/** `quiet`: empty deltas left unsent, as many in a row at most (the sessions' idiom: 16). */
function makeTessera(s, n, p, budget, quiet = 0) {
    const source = tessera.createWorld();
    const ids = source.spawnMany(n, Position);
    for (let i = 0; i < n; i++) source.set(ids[i], Position, { x: s.x0[i], y: s.y0[i] });
    const replicator = source.replicator({ components: [Position] });
    const peers = [],
        replicas = [];
    for (let c = 0; c < p; c++) {
        peers.push(replicator.peer(budget ? { visibility: 'explicit', budget } : { visibility: 'explicit' }));
        replicas.push(tessera.createWorld());
    }
    const ticks = new Float64Array(p);
    const skipped = new Uint32Array(p);
    const nothing = new Uint8Array(0);
    return {
        move(i, x, y) {
            source.set(ids[i], Position, { x, y });
        },
        view(c, changes) {
            const peer = peers[c];
            for (let j = 0; j < changes.length; j++) {
                const i = changes[j];
                if (i >= 0) peer.show(ids[i]);
                else peer.hide(ids[~i]);
            }
        },
        encode(c) {
            const delta = peers[c].encode();
            if (quiet && delta.empty && skipped[c] < quiet) {
                skipped[c]++;
                return nothing; // nothing for this client: not sent
            }
            skipped[c] = 0;
            ticks[c] = delta.tick;
            return delta.bytes.slice();
        },
        endEncode() {},
        apply(c, bytes) {
            if (bytes.length === 0) return;
            replicas[c].applyDelta(bytes);
            peers[c].ack(ticks[c]);
        },
        check(c, visible) {
            const replica = replicas[c];
            const count = replica.stats().entityCount;
            if (count !== visible.length) return `client ${c} holds ${count} entities, sees ${visible.length}`;
            for (const i of visible) {
                if (!replica.isAlive(ids[i])) return `client ${c}: entity ${i} missing`;
                const a = source.get(ids[i], Position),
                    b = replica.get(ids[i], Position);
                if (a.x !== b.x || a.y !== b.y) return `client ${c}: entity ${i} at ${b.x},${b.y} != ${a.x},${a.y}`;
            }
            return null;
        },
        dispose() {
            for (const r of replicas) r.destroy();
            source.destroy();
        },
    };
}

/** colyseus: the room state with a @view() map of entities, a StateView and a Decoder per client. */
function makeColyseus(s, n, p) {
    const Entity = schema({ x: t.float32(), y: t.float32() }, 'Entity');
    const State = schema({ entities: t.map(Entity).view() }, 'State');
    const state = new State();
    const entities = [];
    for (let i = 0; i < n; i++) {
        const e = new Entity();
        e.x = s.x0[i];
        e.y = s.y0[i];
        state.entities.set(String(i), e);
        entities.push(e);
    }
    const encoder = new Encoder(state);
    const views = [],
        decoders = [];
    // The clients join: the full state (shared part, then each view's, empty so far).
    const join = { offset: 0 };
    encoder.encodeAll(join);
    for (let c = 0; c < p; c++) {
        views.push(new StateView());
        decoders.push(new Decoder(new State()));
        decoders[c].decode(encoder.encodeAllView(views[c], join.offset, { ...join }).slice());
    }
    encoder.discardChanges();
    let it = null,
        sharedOffset = 0;
    return {
        move(i, x, y) {
            entities[i].x = x;
            entities[i].y = y;
        },
        view(c, changes) {
            const view = views[c];
            for (let j = 0; j < changes.length; j++) {
                const i = changes[j];
                if (i >= 0) view.add(entities[i]);
                else view.remove(entities[~i]);
            }
        },
        encode(c) {
            if (c === 0) {
                it = { offset: 0 };
                encoder.encode(it);
                sharedOffset = it.offset;
            }
            return encoder.encodeView(views[c], sharedOffset, it).slice();
        },
        endEncode() {
            encoder.discardChanges();
        },
        apply(c, bytes) {
            decoders[c].decode(bytes);
        },
        check(c, visible) {
            const got = decoders[c].state.entities;
            const count = got?.size ?? 0;
            if (count !== visible.length) return `client ${c} holds ${count} entities, sees ${visible.length}`;
            for (const i of visible) {
                const a = entities[i],
                    b = got.get(String(i));
                if (!b) return `client ${c}: entity ${i} missing`;
                if (a.x !== b.x || a.y !== b.y) return `client ${c}: entity ${i} at ${b.x},${b.y} != ${a.x},${a.y}`;
            }
            return null;
        },
        dispose() {
            for (const v of views) v.dispose();
        },
    };
}

const contenders = [
    { name: 'tessera', make: (s, n, p) => makeTessera(s, n, p, 0) },
    { name: `tessera (budget ${BUDGET})`, make: (s, n, p) => makeTessera(s, n, p, BUDGET), budget: true },
    { name: 'tessera (empty unsent)', make: (s, n, p) => makeTessera(s, n, p, 0, 16) },
    { name: 'colyseus', make: makeColyseus },
];

/** One tick for every client: view updates, encode for all, apply per client. Returns its times (ms) and the bytes of all clients. */
function runTick(c, p, views) {
    let t0 = performance.now();
    if (views) for (let i = 0; i < p; i++) c.view(i, views[i]);
    const view = performance.now() - t0;
    t0 = performance.now();
    const out = [];
    for (let i = 0; i < p; i++) out.push(c.encode(i));
    c.endEncode();
    const encode = performance.now() - t0;
    t0 = performance.now();
    let bytes = 0;
    for (let i = 0; i < p; i++) {
        c.apply(i, out[i]);
        bytes += out[i].length;
    }
    const apply = performance.now() - t0;
    return { view, encode, apply, bytes };
}

function checkAll(c, s, p) {
    for (let i = 0; i < p; i++) {
        const problem = c.check(i, s.visible[i]);
        if (problem) return problem;
    }
    return null;
}

const rows = [],
    scenarios = [];
for (const { n, p, k } of ROWS) {
    const s = scenario(n, p, k, n + 31 * p + k);
    scenarios.push({ n, p, k, visible: s.meanFirst, events: s.eventsPerClientTick });
    console.log(
        `n=${n} p=${p} k=${k}: ${s.meanFirst.toFixed(0)} entities per client view, ${s.eventsPerClientTick.toFixed(2)} view events per client per tick`,
    );
    // One contender after the other, each alone in the process with its own state (run side by
    // side, tessera's first tick at 100,000 entities met back-to-back full collections of the
    // JS heap that Colyseus' state fills).
    for (const { name, make, budget } of contenders) {
        const c = make(s, n, p);
        const first = runTick(c, p, s.first);
        const firstBytes = first.bytes / p,
            firstMs = first.view + first.encode + first.apply;
        let bytes = 0;
        const viewMs = [],
            encodeMs = [],
            applyMs = [];
        for (let tick = 0; tick < s.ticks.length; tick++) {
            const { moves, views } = s.ticks[tick];
            for (const [i, x, y] of moves) c.move(i, x, y);
            const r = runTick(c, p, views);
            if (tick < WARMUP) continue;
            bytes += r.bytes;
            viewMs.push(r.view);
            encodeMs.push(r.encode);
            applyMs.push(r.apply / p);
        }
        let settle = 0;
        if (budget) {
            // Ticks with no moves and no view changes until every replica holds its view.
            while (checkAll(c, s, p) && settle < MAX_SETTLE) {
                runTick(c, p, null);
                settle++;
            }
        }
        const problem = checkAll(c, s, p);
        if (problem) throw new Error(`interest bench ${name} n=${n} p=${p} k=${k}: a replica differs from its view: ${problem}`);
        c.dispose();
        const perClient = bytes / (p * TICKS);
        const row = {
            n,
            p,
            k,
            name,
            perClient,
            perEvent: perClient / s.eventsPerClientTick,
            firstBytes,
            firstMs,
            view: median(viewMs) * 1000,
            encode: median(encodeMs) * 1000,
            apply: median(applyMs) * 1000,
            settle: budget ? settle : null,
        };
        rows.push(row);
        console.log(
            `  ${name}: ${perClient.toFixed(1)} B/client/tick, ${row.perEvent.toFixed(2)} B/event, first tick ${firstBytes.toFixed(0)} B/client in ${firstMs.toFixed(1)} ms (view ${first.view.toFixed(1)}, encode ${first.encode.toFixed(1)}, apply ${first.apply.toFixed(1)}), view ${row.view.toFixed(1)} µs, encode ${row.encode.toFixed(1)} µs, apply ${row.apply.toFixed(1)} µs/client${budget ? `, converged after ${settle} extra ticks` : ''}`,
        );
    }
}

const lines = [
    '# Per-client interest: tessera peers vs @colyseus/schema StateView (`npm run bench:interest`)',
    '',
    envLine(),
    '',
    `N entities with a position { x, y } (f32 each) in a ${ARENA} x ${ARENA} arena; P clients, each with a fixed focus point and a radius of ${RADIUS} (about 1.5% of the arena). Every tick K entities, picked at random, move to random positions (the same moves for every contender); then for each client the view is updated incrementally (of the entities that moved, those now within the radius that it did not see are shown, those it saw that are now outside are hidden; on the first tick every entity within the radius is shown), with the same show/hide decisions for every contender; then each client's bytes are encoded and applied to its replica. ${WARMUP} warm-up ticks, then ${TICKS} timed ticks, one contender after the other. Bytes: the mean per client per tick; per view event: over the entities that moved and were in the client's view before or after the move (entered, left, or moved inside it); first tick: the bytes per client of the tick that shows each client its whole view (not in the mean), and that tick's time (view updates, encode and apply of all clients; it includes one-time costs: the JIT's warm-up in the first row, and for tessera the growth of its wasm memory, which the unbudgeted row, run first, pays: at 100,000 entities most of its first tick goes to V8 garbage collections during that growth). Times: the median over the ticks of the view updates of all clients, of the encode for all clients, and of the apply per client. After the ticks every client's replica is checked: exactly the entities within its radius, at the source's positions. "tessera (empty unsent)" leaves a delta that carries nothing for its client (\`delta.empty\`) unsent, 16 in a row at most, as \`ReplicationServer\` does. The budgeted tessera row caps the bytes of records per delta at ${BUDGET}; after the timed ticks it gets ticks with no moves until its replicas hold their views ("ticks to converge"). Contenders in their own idiom (bench/js/interest.mjs): tessera's replicator with a peer per client (\`{ visibility: 'explicit' }\`, \`peer.show\` / \`peer.hide\`, \`peer.encode()\`, \`applyDelta\`); a Colyseus room state with a \`t.map(Entity).view()\` of \`schema({ x: t.float32(), y: t.float32() })\`, a \`StateView\` per client (\`view.add\` / \`view.remove\`), \`encoder.encode(it)\` once then \`encoder.encodeView(view, sharedOffset, it)\` per client, \`encoder.discardChanges()\`, a \`Decoder\` per client. "vs tessera": the contender's bytes over tessera's (unbudgeted; above 1: tessera sends fewer).`,
    '',
    `Colyseus' \`Encoder.BUFFER_SIZE\` is raised to 128 KB: with the default 16 KB, @colyseus/schema ${colyseusVersion} corrupts an \`encodeView\` that writes more than that for one collection (here the map's entries of the 1,500 entities a view adds in the 100,000-entity row's first tick: the decoders report "refId" not found and miss entities).`,
    '',
    '| entities | clients | moved per tick | entities per client view | view events per client per tick |',
    '|--:|--:|--:|--:|--:|',
    ...scenarios.map(
        (s) =>
            `| ${s.n.toLocaleString('en-US')} | ${s.p} | ${s.k.toLocaleString('en-US')} | ${s.visible.toFixed(0)} | ${s.events.toFixed(2)} |`,
    ),
    '',
    '| entities | clients | moved per tick | contender | bytes per client per tick | bytes per view event | vs tessera | first tick bytes per client | first tick ms | view updates µs | encode µs (all clients) | apply µs per client | ticks to converge |',
    '|--:|--:|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|',
];
for (const r of rows) {
    const own = rows.find((o) => o.n === r.n && o.p === r.p && o.k === r.k && o.name === 'tessera');
    lines.push(
        `| ${r.n.toLocaleString('en-US')} | ${r.p} | ${r.k.toLocaleString('en-US')} | ${r.name} | ${fmtNum(r.perClient)} | ${r.perEvent.toFixed(2)} | ${(r.perClient / own.perClient).toFixed(2)} | ${fmtNum(r.firstBytes)} | ${fmtNum(r.firstMs)} | ${fmtNum(r.view)} | ${fmtNum(r.encode)} | ${fmtNum(r.apply)} | ${r.settle ?? '—'} |`,
    );
}
const text = lines.join('\n') + '\n';
console.log('\n' + text);
if (args.write) {
    writeFileSync(path.join(resultsDir, 'interest.md'), text);
    console.log('wrote bench/results/interest.md');
}
