// The browser scenario: what the pages and workers run against the installed tessera-ecs.
// `tessera` is the package's module namespace (the pages import it their own way: by name
// under Vite, by relative path without a bundler). Returns plain data for the test to check.
export async function scenario(tessera) {
    const { createWorld, component, tag, TesseraError } = tessera;
    const Position = component('Position', { x: 'f32', y: 'f32' });
    const Velocity = component('Velocity', { x: 'f32', y: 'f32' });
    const Frozen = tag('Frozen');

    const world = await createWorld();
    const e = world.spawn(Position({ x: 1, y: 2 }), Velocity({ x: 3, y: 0 }));
    const frozen = world.spawn(Position({ x: 10, y: 20 }), Velocity({ x: 5, y: 5 }), Frozen);
    const moving = world.query({ all: [Position, Velocity], none: [Frozen], writes: [Position] });
    const changes = world.subscribe({ changed: [Position] });
    let columnType = '';
    const frame = () => {
        for (const chunk of moving) {
            const px = chunk.column(Position, 'x'),
                vx = chunk.column(Velocity, 'x');
            const py = chunk.column(Position, 'y'),
                vy = chunk.column(Velocity, 'y');
            columnType = px.constructor.name;
            for (let i = 0; i < chunk.count; i++) {
                px[i] += vx[i];
                py[i] += vy[i];
            }
        }
        world.tick();
    };

    frame();
    const first = changes.drain();
    const afterOne = world.get(e, Position);

    // Enough entities to span many chunks and grow the wasm memory.
    const bulk = world.spawnMany(50_000, Position({ x: 0, y: 0 }), Velocity({ x: 1, y: 0.5 }));
    frame();
    frame();
    const second = changes.drain();
    let bulkX = 0,
        bulkY = 0;
    for (const entity of bulk) {
        bulkX += world.get(entity, Position, 'x');
        bulkY += world.get(entity, Position, 'y');
    }

    world.despawn(e);
    let stale = 'no error';
    try {
        world.get(e, Position);
    } catch (error) {
        stale = error instanceof TesseraError ? error.code : `not a TesseraError: ${error}`;
    }
    const result = {
        columnType,
        firstChanged: first.entities.length === 1 && first.entities[0] === e ? ['e'] : [...first.entities],
        afterOne,
        secondChangedCount: second.entities.length,
        bulkX,
        bulkY,
        frozen: world.get(frozen, Position),
        stale,
        aliveAfterDespawn: world.isAlive(e),
    };
    changes.close();
    world.destroy();
    return result;
}
