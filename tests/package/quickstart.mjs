// quickstart.mjs: run with node in a project that installed the tessera-ecs tarball. Exits
// non-zero, naming what went wrong, when the package does not behave.
import { createWorld, component, tag, TesseraError } from 'tessera-ecs';

function check(condition, what, got) {
    if (!condition) {
        console.error(`quickstart: FAILED: ${what}${got === undefined ? '' : `; got ${JSON.stringify(got)}`}`);
        process.exit(1);
    }
}

const Position = component('Position', { x: 'f32', y: 'f32' });
const Velocity = component('Velocity', { x: 'f32', y: 'f32' });
const Frozen = tag('Frozen');

const world = await createWorld();
const e = world.spawn(Position({ x: 1, y: 2 }), Velocity({ x: 3, y: 0 }));
const still = world.spawn(Position({ x: 10, y: 20 }), Velocity({ x: 5, y: 5 }), Frozen);
const moving = world.query({ all: [Position, Velocity], none: [Frozen], writes: [Position] });
const changes = world.subscribe({ changed: [Position] });

for (const chunk of moving) {
    const px = chunk.column(Position, 'x'),
        vx = chunk.column(Velocity, 'x');
    check(px instanceof Float32Array, 'chunk.column(Position, "x") is a Float32Array');
    for (let i = 0; i < chunk.count; i++) px[i] += vx[i];
}
world.tick();

const seen = changes.drain();
check(seen.entities instanceof Uint32Array, 'drain().entities is a Uint32Array');
check(seen.entities.length === 1 && seen.entities[0] === e, 'the subscription saw exactly e change', [...seen.entities]);
check(changes.drain().entities.length === 0, 'a second drain sees nothing new');
const p = world.get(e, Position);
check(p.x === 4 && p.y === 2, 'Position of e after one frame is { x: 4, y: 2 }', p);
const q = world.get(still, Position);
check(q.x === 10 && q.y === 20, 'the Frozen entity did not move', q);

world.despawn(e);
try {
    world.get(e, Position);
    check(false, 'world.get on a despawned entity throws');
} catch (error) {
    check(error instanceof TesseraError, 'the error is a TesseraError', String(error));
    check(error.code === 'STALE_ENTITY', 'its code is STALE_ENTITY', error.code);
}
changes.close();
world.destroy();

console.log('quickstart: ok (spawn, query with writes, subscription, tick, get, TesseraError)');
