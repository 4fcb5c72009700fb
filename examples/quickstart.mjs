import { createWorld, component, tag } from 'tessera-ecs';

// Components are schemas of typed fields; tags have none.
const Position = component('Position', { x: 'f32', y: 'f32' });
const Velocity = component('Velocity', { x: 'f32', y: 'f32' });
const Health = component('Health', { value: 'i32' });
const Frozen = tag('Frozen');

const world = await createWorld();
const units = [];
for (let i = 0; i < 1000; i++) {
    units.push(world.spawn(Position({ x: i }), Velocity({ x: 1, y: 0.5 }), Health({ value: 100 })));
}
world.spawn(Position, Velocity({ x: 9 }), Frozen);

// A query visits chunks; columns are typed arrays straight over wasm memory.
const moving = world.query({ all: [Position, Velocity], none: [Frozen], writes: [Position] });
// A subscription reports what changed since its last drain, each change once.
const health = world.subscribe({ changed: [Health], removed: [Health] });

for (const chunk of moving) {
    const x = chunk.column(Position, 'x');
    const y = chunk.column(Position, 'y');
    const vx = chunk.column(Velocity, 'x');
    const vy = chunk.column(Velocity, 'y');
    for (let i = 0, n = chunk.count; i < n; i++) {
        x[i] += vx[i];
        y[i] += vy[i];
    }
}
moving.addScaled(Position, 'x', Velocity, 'x', 2); // the same math inside wasm, with SIMD

world.set(units[5], Health, { value: 90 });
world.despawn(units[6]);
world.tick();

const changes = health.drain();
console.log(world.get(units[0], Position)); // { x: 3, y: 0.5 }
console.log(changes.entities, changes.removed); // Uint32Array(1) [ 6 ] Uint32Array(1) [ 7 ]
health.close();
world.destroy();
