// hello: one million moving entities through the public API, in Node.
//
//   npm run build && node examples/hello.mjs [entity count]
//
// Moves every entity for 60 frames twice: with a JavaScript loop over chunk columns (marking
// Position through the query's `writes`), then with the addScaled kernel inside wasm. Then it
// damages a few entities each frame and shows that a change subscription's drain costs what
// changed, not what exists. Finally it despawns half of the world and checks what is left.
import { createWorld, component } from '../dist/index.js';

const ENTITY_COUNT = Number(process.argv[2] ?? 1_000_000);
const FRAMES = 60;
const DT = 1 / 60;

const Position = component('Position', { x: 'f32', y: 'f32' });
const Velocity = component('Velocity', { x: 'f32', y: 'f32' });
const Health = component('Health', { value: 'i32' });

const world = await createWorld();
let started = performance.now();
const entities = world.spawnMany(ENTITY_COUNT, Position, Velocity({ x: 1, y: -2 }), Health({ value: 100 }));
console.log(`spawned ${entities.length.toLocaleString()} entities in ${ms(started)} (${world.stats().chunkCount} chunks)`);

const moving = world.query({ all: [Position, Velocity], writes: [Position] });
const watcher = world.subscribe({ changed: [Position] }); // makes Position tracked: marking costs

function jsFrame() {
    for (const chunk of moving) {
        const px = chunk.column(Position, 'x'),
            py = chunk.column(Position, 'y');
        const vx = chunk.column(Velocity, 'x'),
            vy = chunk.column(Velocity, 'y');
        for (let i = 0, n = chunk.count; i < n; i++) {
            px[i] += vx[i] * DT;
            py[i] += vy[i] * DT;
        }
    }
}

function kernelFrame() {
    moving.addScaled(Position, 'x', Velocity, 'x', DT);
    moving.addScaled(Position, 'y', Velocity, 'y', DT);
}

for (const [name, frame] of [
    ['JS loop over columns', jsFrame],
    ['addScaled kernels (wasm SIMD)', kernelFrame],
]) {
    const times = [];
    for (let f = 0; f < FRAMES; f++) {
        started = performance.now();
        frame();
        times.push(performance.now() - started);
        world.tick();
    }
    const seen = watcher.drain().entities.length;
    times.sort((a, b) => a - b);
    console.log(
        `${name}: median ${times[FRAMES >> 1].toFixed(2)} ms per frame; the subscription saw ${seen.toLocaleString()} changed entities`,
    );
}
const expectedX = 2 * FRAMES * DT; // two passes of 60 frames at vx = 1
const first = world.get(entities[0], Position);
if (Math.abs(first.x - expectedX) > 1e-3 || Math.abs(first.y + 2 * expectedX) > 1e-3) {
    throw new Error(`hello: entity moved to ${JSON.stringify(first)}, expected x ${expectedX}`);
}

// Change detection costs what changed: damage 1,000 entities per frame, drain once per frame.
moving.close();
watcher.close();
const damage = world.subscribe({ changed: [Health] });
const drains = [];
for (let f = 0; f < FRAMES; f++) {
    const hit = new Set();
    for (let i = 0; i < 1000; i++) hit.add(entities[(f * 7919 + i * 104729) % ENTITY_COUNT]);
    for (const e of hit) world.set(e, Health, 'value', 100 - f);
    started = performance.now();
    const { entities: hurt } = damage.drain();
    drains.push(performance.now() - started);
    if (hurt.length !== hit.size) throw new Error(`hello: drained ${hurt.length} changes, expected ${hit.size}`);
    world.tick();
}
drains.sort((a, b) => a - b);
console.log(`drain of 1,000 changes among ${ENTITY_COUNT.toLocaleString()} entities: median ${(drains[FRAMES >> 1] * 1000).toFixed(0)} µs`);
damage.close();

started = performance.now();
world.despawnMany(entities.filter((_, i) => i % 2 === 0));
const left = world.query({ all: [Position] }).count();
console.log(`despawned half in ${ms(started)}; ${left.toLocaleString()} left`);
if (left !== ENTITY_COUNT - Math.ceil(ENTITY_COUNT / 2)) throw new Error('hello: wrong count after despawn');
world.validate();
world.destroy();
console.log('ok');

function ms(since) {
    return `${(performance.now() - since).toFixed(1)} ms`;
}
