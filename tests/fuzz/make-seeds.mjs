// Writes the seed corpus of fuzz_restore (tests/fuzz/corpus/restore/) from worlds made with the
// package's public API: npm run build, then node tests/fuzz/make-seeds.mjs. Each seed is one
// mode byte (1: the target reseals size and CRC; 0: it does not) and a snapshot.
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

import { ChildOf, component, createWorld, relation, tag } from '../../dist/index.js';

const dir = fileURLToPath(new URL('./corpus/restore/', import.meta.url));
mkdirSync(dir, { recursive: true });

const Body = component('Body', { x: 'f32', hp: 'i16', tags: ['u8', 3], mass: 'f64' });
const Frozen = tag('Frozen');
const Weight = component('Weight', { w: 'f64' }, { storage: 'sparse' });
const Marked = tag('Marked', { storage: 'sparse' });
const Likes = relation('Likes', { amount: 'f32' });

const worlds = {
    empty: async () => createWorld(),
    schema: async () => {
        const w = await createWorld();
        w.spawn(Body, Frozen, Weight, Marked, ChildOf(w.spawn()));
        w.despawn(w.spawn(Likes(w.spawn())));
        return w;
    },
    small: async () => {
        const w = await createWorld({ minFreeIndices: 2 });
        const root = w.spawn(Body({ x: 1, hp: -3, tags: [1, 2, 3], mass: 2.5 }));
        const kids = [1, 2, 3].map((i) => w.spawn(Body({ x: i }), Marked, ChildOf(root)));
        w.setParent(kids[2], root, kids[0]);
        w.addPair(kids[0], Likes, kids[1], { amount: 4 });
        w.addPair(kids[0], Likes, root, { amount: 5 });
        w.add(root, Weight({ w: 9 }));
        for (let i = 0; i < 6; i++) w.despawn(w.spawn(Frozen));
        return w;
    },
    // A free queue of runs: ascending, descending, single indices, two generations.
    peak: async () => {
        const w = await createWorld({ minFreeIndices: 4 });
        const all = w.spawnMany(3000, Body({ x: 2 }));
        w.despawnMany(all.subarray(100, 1500));
        for (let i = 2999; i >= 2000; i -= 1) w.despawn(all[i]);
        for (const i of [1700, 40, 1900, 41]) w.despawn(all[i]);
        w.spawnMany(50, Frozen);
        return w;
    },
    // A replica with skipped indices: its source placed entities past pages it never used.
    skipped: async () => {
        const source = await createWorld();
        const all = source.spawnMany(5000, Body({ hp: 7 }));
        source.despawnMany(all.subarray(3, 4990));
        source.add(all[4995], Weight({ w: 1 }));
        source.setParent(all[4996], all[0]);
        const replica = await createWorld();
        replica.applyDelta(source.replicator().peer().encode().bytes);
        return replica;
    },
};

for (const [name, make] of Object.entries(worlds)) {
    const bytes = (await make()).snapshot();
    for (const mode of [0, 1]) writeFileSync(`${dir}${name}-${mode}`, Buffer.concat([Buffer.from([mode]), bytes]));
}
console.log(`wrote ${Object.keys(worlds).length * 2} seeds to ${dir}`);
