// Change detection through queries: added/changed filters, marking (writes, chunk.markChanged,
// world.markChanged), deduplication, each change seen once per consumer, independent consumers.
import { describe, expect, test } from 'vitest';

import { component, tag, type Query } from '../../dist/index.js';
import { expectError, sorted, worldPerTest } from './support.js';

const newWorld = worldPerTest();

const Position = component('Position', { x: 'f32', y: 'f32' });
const Velocity = component('Velocity', { x: 'f32', y: 'f32' });
const Health = component('Health', { value: 'i32' });
const A = tag('A');

/** The entities one run of the query visits, with the chunk details checked on the way. */
function run(query: Query): number[] {
    const visited: number[] = [];
    for (const chunk of query) {
        expect(chunk.filtered).toBe(query.filtered);
        const rows = chunk.rows;
        expect(rows).toHaveLength(chunk.rowCount);
        expect(new Set(rows).size).toBe(rows.length); // each row once
        for (const row of rows) {
            expect(row).toBeLessThan(chunk.count);
            visited.push(chunk.entities[row]!);
        }
    }
    return sorted(visited);
}

describe('filters visit only what changed', () => {
    test('changed: only set rows, each once, then nothing', async () => {
        const world = await newWorld({ chunkBytes: 1024 });
        const handles = world.spawnMany(500, Position, Health);
        const changed = world.query({ changed: [Health] });
        expect(changed.filtered && changed.consumer).toBe(true);
        expect(run(changed)).toEqual([]); // nothing was written since tracking began
        const picked = [handles[3]!, handles[150]!, handles[151]!, handles[499]!];
        for (const e of picked) world.set(e, Health, { value: 1 });
        world.set(handles[3]!, Health, { value: 2 }); // twice: still once
        world.set(handles[7]!, Position, { x: 1 }); // another component: not reported
        let filteredChunks = 0;
        for (const chunk of changed) {
            expect(chunk.filtered).toBe(true);
            expect(chunk.rowCount).toBeLessThan(chunk.count);
            filteredChunks++;
        }
        expect(filteredChunks).toBeGreaterThan(1); // several chunks, only the dirty ones
        for (const e of picked) world.set(e, Health, { value: 3 });
        expect(run(changed)).toEqual(sorted(picked));
        expect(run(changed)).toEqual([]);
    });

    test('added: the existing entities once when tracking starts, then new spawns and adds', async () => {
        const world = await newWorld();
        const old = world.spawnMany(5, Health);
        const added = world.query({ added: [Health] });
        expect(run(added)).toEqual(sorted(old));
        expect(run(added)).toEqual([]);
        const spawned = world.spawn(Health({ value: 1 }));
        const gained = world.spawn(Position);
        world.add(gained, Health);
        world.set(old[0]!, Health, { value: 9 }); // a change, not an add
        expect(run(added)).toEqual(sorted([spawned, gained]));
        // Removed and added back: added again.
        world.remove(old[1]!, Health);
        world.add(old[1]!, Health);
        expect(run(added)).toEqual([old[1]!]);
    });

    test('added and changed together: both must hold (AND)', async () => {
        const world = await newWorld();
        const [a, b] = world.spawnMany(2, Position, Health);
        const both = world.query({ added: [Position], changed: [Health] });
        run(both); // consume the initial adds
        const c = world.spawn(Position, Health);
        const d = world.spawn(Position, Health);
        world.set(a!, Health, { value: 1 }); // changed, not added
        world.set(d, Health, { value: 1 }); // added and changed
        expect(run(both)).toEqual([d]);
        expect([b, c]).not.toContain(d);
    });

    test('filters respect all / none / any', async () => {
        const world = await newWorld();
        const plain = world.spawn(Health);
        const tagged = world.spawn(Health, A);
        const q = world.query({ changed: [Health], none: [A] });
        world.set(plain, Health, { value: 1 });
        world.set(tagged, Health, { value: 1 });
        expect(run(q)).toEqual([plain]);
    });

    test('a write during a run to a row the run has not reached: this run and the next one see it', async () => {
        const world = await newWorld({ chunkBytes: 1024 });
        const handles = world.spawnMany(300, Health);
        const q = world.query({ changed: [Health] });
        world.set(handles[0]!, Health, { value: 1 });
        world.set(handles[299]!, Health, { value: 1 });
        const first: number[] = [];
        for (const chunk of q) {
            for (const row of chunk.rows) first.push(chunk.entities[row]!);
            world.set(handles[299]!, Health, { value: 2 });
        }
        expect(sorted(first)).toEqual(sorted([handles[0]!, handles[299]!]));
        expect(run(q)).toEqual([handles[299]!]);
    });
});

describe('marking writes made through views', () => {
    test('writes: every visited row is marked when the iteration passes its chunk', async () => {
        const world = await newWorld({ chunkBytes: 1024 });
        const handles = world.spawnMany(300, Position, Velocity);
        const watcher = world.query({ changed: [Position] });
        const mover = world.query({ all: [Position, Velocity], writes: [Position] });
        for (const chunk of mover) {
            const x = chunk.column(Position, 'x');
            for (let i = 0; i < chunk.count; i++) x[i] = i;
        }
        expect(run(watcher)).toEqual(sorted(handles));
        expect(run(watcher)).toEqual([]);
    });

    test('without writes or marks, view writes are invisible to change detection', async () => {
        const world = await newWorld();
        world.spawnMany(10, Position);
        const watcher = world.query({ changed: [Position] });
        for (const chunk of world.query({ all: [Position] })) chunk.column(Position, 'x').fill(5);
        expect(run(watcher)).toEqual([]);
    });

    test('a filtered writer marks the rows it visits only', async () => {
        const world = await newWorld({ chunkBytes: 1024 });
        const handles = world.spawnMany(300, Position, Velocity);
        const watcher = world.query({ changed: [Position] });
        const follower = world.query({ all: [Position], changed: [Velocity], writes: [Position] });
        run(follower);
        const pushed = [handles[5]!, handles[200]!];
        for (const e of pushed) world.set(e, Velocity, { x: 1 });
        for (const chunk of follower) {
            const x = chunk.column(Position, 'x');
            const vx = chunk.column(Velocity, 'x');
            for (const i of chunk.rows) x[i]! += vx[i]!;
        }
        expect(run(watcher)).toEqual(sorted(pushed));
        for (const e of pushed) expect(world.get(e, Position, 'x')).toBe(1);
    });

    test('chunk.markChanged(C, row) marks that row; markChanged(C) every visited row', async () => {
        const world = await newWorld({ chunkBytes: 1024 });
        const handles = world.spawnMany(300, Health);
        const watcher = world.query({ changed: [Health] });
        const second = world.query({ changed: [Health] }); // the dirty rows are listed once for both
        const marked: number[] = [];
        let firstChunk = true;
        for (const chunk of world.query({ all: [Health] })) {
            if (firstChunk) {
                chunk.markChanged(Health); // the whole chunk
                marked.push(...chunk.entities);
                firstChunk = false;
                continue;
            }
            const hp = chunk.column(Health, 'value');
            for (let i = 0; i < chunk.count; i += 7) {
                hp[i] = -1;
                for (let k = 0; k < 50; k++) chunk.markChanged(Health, i); // deduplicated
                marked.push(chunk.entities[i]!);
            }
        }
        expect(run(watcher)).toEqual(sorted(marked));
        expect(marked.length).toBeLessThan(handles.length);
        expect(run(second)).toEqual(sorted(marked));
    });

    test('markChanged checks its arguments', async () => {
        const world = await newWorld();
        const both = world.spawn(Health, Position);
        const healthOnly = world.spawn(Health);
        const watcher = world.query({ changed: [Position] });
        const chunks: number[] = [];
        for (const chunk of world.query({ all: [Health] })) {
            expectError(() => chunk.markChanged(Health, chunk.count), 'INVALID_ARGUMENT', { component: 'Health' });
            expectError(() => chunk.markChanged(Health, -1), 'INVALID_ARGUMENT');
            expectError(() => chunk.markChanged(Health, 0.5), 'INVALID_ARGUMENT');
            chunks.push(chunk.entities[0]!);
            if (chunk.entities[0] === healthOnly) {
                expectError(() => chunk.markChanged(Position, 0), 'MISSING_COMPONENT', { component: 'Position' });
            } else {
                chunk.markChanged(Position, 0); // not required by the query, but in this archetype
            }
        }
        expect(sorted(chunks)).toEqual(sorted([both, healthOnly]));
        expect(run(watcher)).toEqual([both]);
    });

    test('markChanged interleaving components, then bad rows and an expired chunk: every check holds after the first mark', async () => {
        const world = await newWorld({ chunkBytes: 1024 });
        const handles = world.spawnMany(100, Health, Position);
        const health = world.query({ changed: [Health] });
        const position = world.query({ changed: [Position] });
        let kept: import('../../dist/index.js').Chunk | undefined;
        const wantHealth: number[] = [];
        const wantPosition: number[] = [];
        for (const chunk of world.query({ all: [Health, Position] })) {
            kept ??= chunk;
            for (let i = 0; i < chunk.count; i += 3) {
                chunk.markChanged(Health, i);
                chunk.markChanged(Position, i + 1 < chunk.count ? i + 1 : i);
                chunk.markChanged(Health, i); // again: once
                wantHealth.push(chunk.entities[i]!);
                wantPosition.push(chunk.entities[i + 1 < chunk.count ? i + 1 : i]!);
            }
            // After marks took the fast path, a bad row is still refused.
            expectError(() => chunk.markChanged(Health, chunk.count), 'INVALID_ARGUMENT');
            expectError(() => chunk.markChanged(Health, 1.5), 'INVALID_ARGUMENT');
        }
        expectError(() => kept!.markChanged(Health, 0), 'CHUNK_EXPIRED');
        expectError(() => kept!.markChanged(Position, 0), 'CHUNK_EXPIRED');
        expect(run(health)).toEqual(sorted(wantHealth));
        expect(run(position)).toEqual(sorted([...new Set(wantPosition)]));
        expect(handles.length).toBe(100);
    });

    test('world.markChanged marks one entity, deduplicated', async () => {
        const world = await newWorld();
        const [a, b] = world.spawnMany(2, Health);
        const watcher = world.query({ changed: [Health] });
        world.markChanged(a!, Health);
        world.markChanged(a!, Health);
        expect(run(watcher)).toEqual([a!]);
        expectError(() => world.markChanged(b!, Position), 'MISSING_COMPONENT', { entity: b!, component: 'Position' });
    });

    test('nested runs of one plain query keep their marks apart', async () => {
        const world = await newWorld();
        const first = world.spawn(Health, A); // archetype {Health, A}
        const second = world.spawn(Health); // archetype {Health}
        const watcher = world.query({ changed: [Health] });
        const q = world.query({ all: [Health] });
        for (const outer of q) {
            if (outer.entities[0] !== second) continue;
            outer.markChanged(Health, 0); // marks `second`...
            for (const _ of q) {
                // ...while an inner run of the same query passes over `first`'s chunk.
            }
        }
        expect(run(watcher)).toEqual([second]);
        expect(first).not.toBe(second);
    });
});

// Issue 16, rule 6: `set` that marks only when the value differs, as a replica compares.
describe("changeDetection: 'value'", () => {
    const Hp = component('ValueHp', { value: 'i32', max: 'f32' }, { changeDetection: 'value' });
    const Score = component('ValueScore', { points: 'f64' }, { changeDetection: 'value', storage: 'sparse' });

    test('a write is a change only where it changes the stored bytes; marks are changes', async () => {
        const world = await newWorld();
        const [a, b, c] = world.spawnMany(3, Hp({ value: 10, max: 0.5 }), Score({ points: 1 }));
        const hp = world.subscribe({ changed: [Hp] });
        const score = world.subscribe({ changed: [Score] });
        world.set(a!, Hp, 'value', 10); // the same value, one field
        world.set(b!, Hp, { value: 10, max: 0.5 }); // the same values, several
        world.add(c!, Hp({ max: 0.5 })); // an add of a held component, the same value
        world.set(a!, Score, 'points', 1);
        expect(hp.drain().empty).toBe(true);
        expect(score.drain().empty).toBe(true);
        world.set(a!, Hp, { value: 10, max: 0.75 }); // one of two differs
        world.set(b!, Hp, 'max', 0.5000000001); // the same f32
        world.set(c!, Score, 'points', -0); // -0 is not 0 in bytes
        expect([...hp.drain().entities]).toEqual([a!]);
        expect([...score.drain().entities]).toEqual([c!]);
        world.markChanged(b!, Hp); // a mark: the core did not see the write
        for (const chunk of world.query({ all: [Hp], writes: [Hp] })) chunk.column(Hp, 'value')[0] = 10;
        expect(hp.drain().entities).toHaveLength(3);
    });

    test('kernels mark only the rows whose values they changed', async () => {
        const world = await newWorld({ chunkBytes: 1024 });
        const handles = world.spawnMany(200, Hp);
        for (let i = 0; i < 200; i++) world.set(handles[i]!, Hp, 'max', i % 4);
        const hp = world.subscribe({ changed: [Hp] });
        const all = world.query({ all: [Hp] });
        all.clamp(Hp, 'max', 0, 2); // only the rows at 3
        expect(hp.drain().entities).toHaveLength(50);
        all.fill(Hp, 'max', 2); // the rows at 0 and 1
        expect(hp.drain().entities).toHaveLength(100);
        all.offset(Hp, 'max', 0);
        all.scale(Hp, 'max', 1);
        expect(hp.drain().empty).toBe(true);
    });

    test('recorded writes are compared when they apply', async () => {
        const world = await newWorld();
        const e = world.spawn(Hp({ value: 4 }), Position);
        const hp = world.subscribe({ changed: [Hp] });
        for (const _ of world.query({ all: [Position] })) {
            world.add(e, Hp({ value: 4 })); // held: its values, the same, when the loop ends
            const f = world.spawn(Hp({ value: 1 }));
            world.set(f, Hp, 'value', 1); // after the spawn's 1
        }
        expect(hp.drain().empty).toBe(true);
    });
});

describe('each change once per consumer', () => {
    test('two consumers have independent watermarks', async () => {
        const world = await newWorld();
        const [a, b, c] = world.spawnMany(3, Health);
        const one = world.query({ changed: [Health] });
        const two = world.query({ changed: [Health] });
        world.set(a!, Health, { value: 1 });
        expect(run(one)).toEqual([a!]);
        world.set(b!, Health, { value: 1 });
        expect(run(two)).toEqual(sorted([a!, b!]));
        world.set(c!, Health, { value: 1 });
        expect(run(one)).toEqual(sorted([b!, c!]));
        expect(run(two)).toEqual([c!]);
        expect(run(one)).toEqual([]);
        expect(run(two)).toEqual([]);
    });

    test('pruning by tick keeps what a slower consumer has not seen', async () => {
        const world = await newWorld();
        const [a, b] = world.spawnMany(2, Health);
        const fast = world.query({ changed: [Health] });
        const slow = world.query({ changed: [Health] });
        world.set(a!, Health, { value: 1 });
        run(fast);
        world.tick();
        world.tick();
        world.set(b!, Health, { value: 1 });
        run(fast);
        world.tick();
        expect(run(slow)).toEqual(sorted([a!, b!]));
    });

    // Issue 16, rule 3: before, a late consumer saw the changes another consumer still kept.
    test('a consumer created later starts then: what exists is added, earlier changes are not its', async () => {
        const world = await newWorld();
        const [a, b] = world.spawnMany(2, Health);
        const early = world.query({ changed: [Health] });
        world.set(a!, Health, { value: 1 });
        run(early);
        world.set(b!, Health, { value: 1 }); // early has not seen this one: it is kept for it
        world.tick();
        const late = world.query({ changed: [Health] });
        const lateAdded = world.query({ added: [Health] });
        expect(run(late)).toEqual([]);
        expect(run(lateAdded)).toEqual(sorted([a!, b!]));
        world.set(a!, Health, { value: 2 });
        expect(run(late)).toEqual([a!]);
        expect(run(early)).toEqual(sorted([a!, b!]));
        expect(run(late)).toEqual([]);
        expect(run(lateAdded)).toEqual([]);
    });

    test('moves between archetypes keep a pending change', async () => {
        const world = await newWorld({ chunkBytes: 1024 });
        const handles = world.spawnMany(200, Health);
        const watcher = world.query({ changed: [Health] });
        world.set(handles[10]!, Health, { value: 5 });
        world.add(handles[10]!, A); // moves it to another archetype
        world.despawn(handles[0]!); // swap-remove moves the last row into row 0
        world.set(handles[199]!, Health, { value: 6 });
        world.despawn(handles[1]!); // and again, moving a dirty row
        expect(run(watcher)).toEqual(sorted([handles[10]!, handles[199]!]));
        world.validate();
    });
});
