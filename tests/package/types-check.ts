// Type-checked (not run) in the temp project by package.test.ts, against the installed
// tessera-ecs: its .d.ts files must resolve through the exports map, type-check with
// skipLibCheck off, and carry real types (the @ts-expect-error lines fail if they were any).
import { component, createWorld, tag, TesseraError, type Entity, type World } from 'tessera-ecs';
import { loadTessera, type Tessera } from 'tessera-ecs/raw';

const Position = component('Position', { x: 'f32', y: 'f32' });
const Health = component('Health', { value: 'i32' });
const Frozen = tag('Frozen');

const world: World = await createWorld();
const e: Entity = world.spawn(Position({ x: 1, y: 2 }), Health({ value: 3 }), Frozen);
const position: { x: number; y: number } = world.get(e, Position);
for (const chunk of world.query({ all: [Position, Health], writes: [Position] })) {
    const xs: Float32Array = chunk.column(Position, 'x');
    const hp: Int32Array = chunk.column(Health, 'value');
    // @ts-expect-error: a misspelt field is a type error
    chunk.column(Position, 'z');
    xs[0] = hp[0] ?? 0;
}
// @ts-expect-error: and so is a field the schema does not have
Position({ z: 1 });
// Kernels take every field type, an i32 field included.
const timers = world.query({ all: [Health] });
const expired: Uint32Array = timers.countdown(Health, 'value', 1);
// @ts-expect-error: addScaled's source field must have the target field's type
timers.addScaled(Position, 'x', Health, 'value', 1);
// @ts-expect-error: a tag has no fields to run a kernel on
timers.fill(Frozen, 'value', 1);
const failure: unknown = new Error();
if (failure instanceof TesseraError) {
    const code: string = failure.code;
    void code;
}

const raw: Tessera = await loadTessera();
const size: number = raw.exports.tes_type_size(1);
// @ts-expect-error: the raw exports are typed too: no such function
raw.exports.tes_no_such_function();

export { expired, position, size };
