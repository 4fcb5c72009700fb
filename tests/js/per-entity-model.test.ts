// The per-entity fast paths (bindings/access.ts, bindings/record.ts) held to README.md's
// contract, each test citing the sentence: field handles after a keyframe registered components
// in the core (which moves its component array: a handle once kept an address into the freed
// one and wrote without stamping the change), refused calls inside loops, and random sequences of
// loops, rewinds, reclaims and tracking changes against a model.
import { describe, expect, test } from 'vitest';

import { component, tag, type Component, type Entity, type World } from '../../dist/index.js';
import { expectError, random, worldPerTest } from './support.js';

const newWorld = worldPerTest();

const HA = component('HuntA', { x: 'f32' });
const HB = component('HuntB', { y: 'i32' });
const HU = component('HuntU', { v: 'u8' });
const HFresh = component('HuntFresh', { v: 'u8' });
const HSparse = component('HuntSparse', { s: 'f32' }, { storage: 'sparse' });
const HTag = tag('HuntTag');
/** Components a source registers and a keyframe then registers in the replica (by name). */
const Many = Array.from({ length: 300 }, (_, i) => component(`HuntMany${i}`, { v: 'i32' }));

/**
 * A replica that registered HA itself and holds a field handle of it (used once, so it knows
 * HA's id), then receives a keyframe that registers `n` more components in the C core by name.
 * Returns the replica, the handle, and an entity with HA.
 */
async function replicaAfterKeyframe(n: number): Promise<{ replica: World; entity: Entity; x: ReturnType<World['field']> }> {
    const source = await newWorld();
    const entity = source.spawn(HA({ x: 1 }));
    for (const C of Many.slice(0, n)) source.spawn(C({ v: 3 }));
    const peer = source.replicator().peer();
    const replica = await newWorld();
    const x = replica.field(HA, 'x');
    replica.spawn(HA);
    x.get(1); // the handle looks HA up in this world now
    expect(replica.applyDelta(peer.encode().bytes.slice())).toBe(true);
    expect(x.get(entity)).toBe(1);
    return { replica, entity, x: x as never };
}

/** Several sizes: what the freed array held, and so whether the old defect showed, varied with it. */
const KEYFRAME_SIZES = [20, 33, 40, 63, 100, 129, 255, 257, 300];

describe('field handles and world.set of one field after a keyframe registered components', () => {
    // README: "`hp.set(e, hp.get(e) - 3); // world.get / world.set of that field, errors included`"
    // and "`set`, marks, `writes` and kernels count as changed" / "A subscription ... from then
    // on every add, change and removal, each once."
    test('a write through world.field / world.set(e, C, f, v) is a change a subscription sees', async () => {
        const missed: string[] = [];
        for (const n of KEYFRAME_SIZES) {
            const { replica, entity, x } = await replicaAfterKeyframe(n);
            const sub = replica.subscribe({ changed: [HA] });
            sub.drain();
            (x as { set(e: Entity, v: number): void }).set(entity, 5);
            if (sub.drain().entities.length !== 1) missed.push(`field.set after a keyframe of ${n}`);
            replica.set(entity, HA, 'x', 6);
            if (sub.drain().entities.length !== 1) missed.push(`world.set after a keyframe of ${n}`);
            replica.set(entity, HA, { x: 7 }); // the checked path, for reference
            if (sub.drain().entities.length !== 1) missed.push(`world.set(values) after a keyframe of ${n}`);
            sub.close();
            replica.destroy();
        }
        expect(missed).toEqual([]);
    });

    // README: "`world.rewind(n)` returns the world to checkpoint `n` exactly" ... "`world.set`,
    // `world.field(...).set` and every structural call are seen on their own."
    test('a write through world.field after a checkpoint is rewound', async () => {
        const kept: string[] = [];
        for (const n of KEYFRAME_SIZES) {
            const { replica, entity, x } = await replicaAfterKeyframe(n);
            const checkpoint = replica.checkpoint();
            const before = replica.snapshot();
            (x as { set(e: Entity, v: number): void }).set(entity, 99);
            replica.rewind(checkpoint);
            if (replica.get(entity, HA, 'x') !== 1) kept.push(`keyframe of ${n}: x is ${replica.get(entity, HA, 'x')} after rewind`);
            const after = replica.snapshot();
            if (after.length !== before.length || after.some((b, i) => b !== before[i]))
                kept.push(`keyframe of ${n}: snapshot differs from the checkpoint's`);
            replica.destroy();
        }
        expect(kept).toEqual([]);
    });
});

describe('field handles across a later delta that brings new components', () => {
    // README: "`hp.set(e, hp.get(e) - 3); // world.get / world.set of that field, errors included`"
    // and "The replica's subscriptions and systems see the applied changes as changes" /
    // "`set`, marks, `writes` and kernels count as changed".
    test('a replica that made its handle after the first keyframe still has its writes seen after the source adds components', async () => {
        const missed: number[] = [];
        for (const n of KEYFRAME_SIZES) {
            const source = await newWorld();
            const entity = source.spawn(HA({ x: 1 }));
            const peer = source.replicator().peer();
            const replica = await newWorld();
            replica.applyDelta(peer.encode().bytes.slice());
            peer.ack(replica.replicaTick);
            const x = replica.field(HA, 'x');
            expect(x.get(entity)).toBe(1);
            expect(x.get(entity)).toBe(1);
            for (const C of Many.slice(0, n)) source.spawn(C({ v: 3 }));
            replica.applyDelta(peer.encode().bytes.slice());
            peer.ack(replica.replicaTick);
            const sub = replica.subscribe({ changed: [HA] });
            sub.drain();
            x.set(entity, 5);
            if (sub.drain().entities.length !== 1) missed.push(n);
            sub.close();
            replica.destroy();
            source.destroy();
        }
        expect(missed).toEqual([]);
    });
});

describe('refused calls inside a loop', () => {
    // README: "Every call is all or nothing. Values are checked before anything is written" and
    // "a failed call leaves the world exactly as it was (its snapshot is the same bytes)", and
    // "a call that registered it and then failed takes the registration back".
    test('refused spawns, adds and sets inside a loop record nothing: same snapshot and handles as without them', async () => {
        async function run(refused: boolean) {
            const world = await newWorld();
            const base = world.spawnMany(5, HA({ x: 1 }));
            const handles: Entity[] = [];
            const codes: string[] = [];
            const attempt = (fn: () => unknown) => {
                if (!refused) return;
                try {
                    fn();
                    codes.push('none');
                } catch (error) {
                    codes.push((error as { code: string }).code);
                }
            };
            for (const _ of world.query({ all: [HA] })) {
                handles.push(world.spawn(HB({ y: 1 })), world.spawn(HB({ y: 2 }))); // planned shape
                attempt(() => world.spawn(HB({ y: 1.5 })));
                attempt(() => world.spawn(HB({ y: 2 ** 31 })));
                attempt(() => world.spawn(HFresh({ v: 300 })));
                attempt(() => world.spawn(HB, HFresh({ v: 300 })));
                attempt(() => world.add(base[0]!, HFresh({ v: -1 })));
                attempt(() => world.add(handles[0]!, HFresh({ v: -1 })));
                attempt(() => world.set(handles[0]!, HB, 'y', 0.5));
                attempt(() => world.set(handles[0]!, HB, { y: NaN }));
                attempt(() => world.spawnMany(3, HB.columns({ y: [1, 2, 3.5] })));
                attempt(() => world.spawnMany(3, HFresh.columns({ v: [1, 2, 300] })));
                handles.push(world.spawn(HB({ y: 3 })));
                world.set(handles[0]!, HB, 'y', 10);
                world.add(handles[1]!, HTag);
                world.despawn(base[1]!);
                handles.push(world.spawn(HSparse({ s: 2 }), HA));
                attempt(() => world.spawn(HSparse({ s: 2 }), HA, HU({ v: 256 })));
                handles.push(world.spawn(HSparse({ s: 3 }), HA));
                break;
            }
            world.validate();
            const bytes = world.snapshot();
            const after = [world.spawn(HA), world.spawn(HB), world.spawn(HFresh)];
            return { bytes, handles, after, codes };
        }
        const clean = await run(false);
        const withRefusals = await run(true);
        expect(withRefusals.codes).toEqual(Array(11).fill('BAD_VALUE'));
        expect(withRefusals.handles).toEqual(clean.handles);
        expect(withRefusals.after).toEqual(clean.after);
        expect(withRefusals.bytes).toEqual(clean.bytes);
    });

    // README: "A loop body that needs more than the room gets `OUT_OF_MEMORY` (saying so; the
    // call changes nothing)" and "Views taken in the loop ... stay valid for the whole loop".
    test('a loop that records until OUT_OF_MEMORY (or TOO_MANY_ENTITIES) keeps its views, and the refused call adds nothing', async () => {
        const world = await newWorld();
        world.spawnMany(1000, HA({ x: 1 }));
        let spawned = 1000;
        let code = '';
        for (const chunk of world.query({ all: [HA] })) {
            const x = chunk.column(HA, 'x');
            const entities = chunk.entities;
            try {
                for (let k = 0; k < 100; k++) {
                    world.spawnMany(20_000, HB({ y: k }), HA, HSparse({ s: 1 }));
                    spawned += 20_000;
                    world.spawnMany(20_000, HA.columns({ x: new Float32Array(20_000).fill(k) }), HTag);
                    spawned += 20_000;
                    for (let i = 0; i < 1000; i++) {
                        const e = world.spawn(HB({ y: i }), HU({ v: i & 255 }));
                        spawned++;
                        world.set(e, HB, 'y', i + 1);
                        world.add(e, HSparse({ s: 3 }));
                    }
                    expect(x.length).toBe(1000);
                    expect(entities.length).toBe(1000);
                }
            } catch (error) {
                code = (error as { code: string }).code;
            }
            expect(x.length).toBe(1000);
            expect(x[999]).toBe(1);
            break;
        }
        // The reserve depends on earlier runs in this module: the loop ends on whichever limit comes first.
        expect(['OUT_OF_MEMORY', 'TOO_MANY_ENTITIES']).toContain(code);
        world.validate();
        expect(world.stats().entityCount).toBe(spawned);
    });
});

/**
 * Random sequences of spawns, despawns, adds, removes, sets (world.set and field handles),
 * subscriptions made and closed, reclaims, checkpoints with rewinds, and loops recording
 * structural calls (left by their end, `break` or an exception), against a plain model.
 */
describe('random sequences against a model', () => {
    const MA = component('HuntModelA', { x: 'f32' });
    const MB = component('HuntModelB', { y: 'i32' });
    const MS = component('HuntModelS', { s: 'u8' }, { storage: 'sparse' });
    const MV = component('HuntModelV', { v: 'i16' }, { changeDetection: 'value' });
    const MT = tag('HuntModelT');
    const comps: Component<any>[] = [MA, MB, MS, MV];
    const fieldName = new Map<Component<any>, string>([
        [MA, 'x'],
        [MB, 'y'],
        [MS, 's'],
        [MV, 'v'],
    ]);
    type Model = Map<Entity, Map<Component<any>, number | true>>;

    async function trial(seed: number): Promise<void> {
        const r = random(seed);
        const pick = <T>(list: readonly T[]): T => list[Math.floor(r() * list.length)]!;
        const world = await newWorld({ minFreeIndices: pick([1, 2, 4]) });
        const fields = new Map(
            comps.map((c) => [
                c,
                world.field(c, fieldName.get(c) as never) as unknown as { get(e: Entity): number; set(e: Entity, v: number): void },
            ]),
        );
        const model: Model = new Map();
        const dead = new Set<Entity>();
        const subs: { close(): void }[] = [];
        const value = (c: Component<any>) =>
            c === MA
                ? Math.fround(Math.round(r() * 1000) / 8)
                : c === MB
                  ? Math.floor(r() * 2000) - 1000
                  : c === MS
                    ? Math.floor(r() * 256)
                    : Math.floor(r() * 600) - 300;
        const alive = () => [...model.keys()];
        const trace: string[] = [];
        const check = (where: string) => {
            world.validate();
            for (const [e, m] of model) {
                expect(world.isAlive(e), `${where}: ${e} alive`).toBe(true);
                for (const c of [...comps, MT]) {
                    const has = world.has(e, c);
                    expect(has, `${where}: has(${e}, ${c.name})\n${trace.join('\n')}`).toBe(m.has(c));
                    if (has && c !== MT) {
                        const f = fieldName.get(c)!;
                        const expected = m.get(c);
                        expect(
                            [world.get(e, c, f as never), fields.get(c)!.get(e), (world.get(e, c) as Record<string, number>)[f]],
                            `${where}: ${e} ${c.name}`,
                        ).toEqual([expected, expected, expected]);
                    }
                }
            }
            for (const e of dead) {
                if (world.isAlive(e)) continue;
                for (const c of comps) {
                    expectError(() => fields.get(c)!.get(e), 'STALE_ENTITY');
                    expectError(() => fields.get(c)!.set(e, 1), 'STALE_ENTITY');
                    expectError(() => world.get(e, c), 'STALE_ENTITY');
                    expectError(() => world.set(e, c, { [fieldName.get(c)!]: 1 } as never), 'STALE_ENTITY');
                }
            }
        };
        const query = world.query({ all: [MA] });
        for (let step = 0; step < 60; step++) {
            const op = r();
            if (op < 0.2) {
                const items: unknown[] = [];
                const m = new Map<Component<any>, number | true>();
                for (const c of comps) {
                    if (r() < 0.5) {
                        const v = value(c);
                        const bare = r() < 0.5;
                        items.push(bare ? c : c({ [fieldName.get(c)!]: v }));
                        m.set(c, bare ? 0 : v);
                    }
                }
                if (r() < 0.3) {
                    items.push(MT);
                    m.set(MT, true);
                }
                const n = r() < 0.2 ? Math.floor(r() * 50) : 1;
                if (n === 1) {
                    const e = world.spawn(...(items as never[]));
                    model.set(e, m);
                    trace.push(`spawn ${e}`);
                    if (r() < 0.5) {
                        // The same shape again: the spawn plan's (outside a loop, placed by the
                        // core and written by JS when every value is addressable).
                        const again = world.spawn(...(items as never[]));
                        model.set(again, new Map(m));
                        trace.push(`spawn again ${again}`);
                    }
                } else for (const e of world.spawnMany(n, ...(items as never[]))) model.set(e, new Map(m));
            } else if (op < 0.3) {
                const es = alive();
                if (!es.length) continue;
                const e = pick(es);
                world.despawn(e);
                model.delete(e);
                dead.add(e);
                trace.push(`despawn ${e}`);
            } else if (op < 0.5) {
                const es = alive();
                if (!es.length) continue;
                const e = pick(es);
                const c = pick(comps);
                const m = model.get(e)!;
                const v = value(c);
                if (!m.has(c)) {
                    expectError(() => fields.get(c)!.set(e, v), 'MISSING_COMPONENT');
                    continue;
                }
                const way = r();
                if (way < 0.33) fields.get(c)!.set(e, v);
                else if (way < 0.66) world.set(e, c, fieldName.get(c) as never, v as never);
                else world.set(e, c, { [fieldName.get(c)!]: v } as never);
                m.set(c, v);
                trace.push(`set ${e} ${c.name} ${v}`);
            } else if (op < 0.65) {
                const es = alive();
                if (!es.length) continue;
                const e = pick(es);
                const c = pick([...comps, MT]);
                const m = model.get(e)!;
                if (r() < 0.5) {
                    if (c === MT || r() < 0.5) {
                        world.add(e, c);
                        if (!m.has(c)) m.set(c, c === MT ? true : 0);
                    } else {
                        const v = value(c);
                        world.add(e, c({ [fieldName.get(c)!]: v }));
                        m.set(c, v);
                    }
                    trace.push(`add ${e} ${c.name}`);
                } else {
                    world.remove(e, c);
                    m.delete(c);
                    trace.push(`remove ${e} ${c.name}`);
                }
            } else if (op < 0.7) {
                if (r() < 0.5) subs.push(world.subscribe({ changed: [pick(comps)] }));
                else if (subs.length) subs.splice(Math.floor(r() * subs.length), 1)[0]!.close();
            } else if (op < 0.74) {
                world.reclaimArchetypes();
                trace.push('reclaim');
            } else if (op < 0.8) {
                const saved = new Map([...model].map(([e, m]) => [e, new Map(m)] as const));
                const checkpoint = world.checkpoint();
                trace.push('checkpoint');
                const es = alive();
                for (let k = 0; k < 5 && es.length; k++) {
                    const e = pick(es);
                    const c = pick(comps);
                    if (model.get(e)!.has(c)) fields.get(c)!.set(e, value(c));
                    else world.add(e, c);
                }
                world.spawn(MA, MV({ v: 3 }), MT);
                world.spawn(MB, MS);
                if (r() < 0.5 && es.length) world.despawn(es[0]!);
                world.rewind(checkpoint);
                trace.push('rewind');
                model.clear();
                for (const [e, m] of saved) model.set(e, m);
                if (r() < 0.5) world.stopRollback();
            } else {
                // A loop: structural calls recorded, applied in order at its end.
                const commands: (() => void)[] = [];
                const pending = new Map<Entity, Map<Component<any>, number | true>>();
                const loopDead = new Set<Entity>();
                const touched = new Set<Entity>();
                let left = false;
                try {
                    for (const chunk of query) {
                        const x = chunk.column(MA, 'x');
                        const length = x.length;
                        const k = Math.floor(r() * 8);
                        for (let j = 0; j < k; j++) {
                            const o = r();
                            if (o < 0.3) {
                                const items: unknown[] = [];
                                const m = new Map<Component<any>, number | true>();
                                for (const c of comps) {
                                    if (r() < 0.5) {
                                        const v = value(c);
                                        items.push(c({ [fieldName.get(c)!]: v }));
                                        m.set(c, v);
                                    }
                                }
                                if (r() < 0.3) {
                                    items.push(MT);
                                    m.set(MT, true);
                                }
                                const e = world.spawn(...(items as never[]));
                                pending.set(e, m);
                                commands.push(() => model.set(e, m));
                                trace.push(`L spawn ${e}`);
                                expectError(() => world.get(e, MA), 'PENDING_ENTITY');
                            } else if (o < 0.45) {
                                const es = [...alive(), ...pending.keys()].filter((e) => !loopDead.has(e));
                                if (!es.length) continue;
                                const e = pick(es);
                                world.despawn(e);
                                loopDead.add(e);
                                commands.push(() => {
                                    if (model.has(e)) {
                                        model.delete(e);
                                        dead.add(e);
                                    }
                                });
                                trace.push(`L despawn ${e}`);
                            } else if (o < 0.65) {
                                const es = [...alive(), ...pending.keys()].filter((e) => !loopDead.has(e));
                                if (!es.length) continue;
                                const e = pick(es);
                                const c = pick([...comps, MT]);
                                touched.add(e);
                                if (r() < 0.5) {
                                    if (c === MT || r() < 0.5) {
                                        world.add(e, c);
                                        commands.push(() => {
                                            const m = model.get(e);
                                            if (m && !m.has(c)) m.set(c, c === MT ? true : 0);
                                        });
                                    } else {
                                        const v = value(c);
                                        world.add(e, c({ [fieldName.get(c)!]: v }));
                                        commands.push(() => model.get(e)?.set(c, v));
                                    }
                                    trace.push(`L add ${e} ${c.name}`);
                                } else {
                                    world.remove(e, c);
                                    commands.push(() => model.get(e)?.delete(c));
                                    trace.push(`L remove ${e} ${c.name}`);
                                }
                            } else if (o < 0.85) {
                                // README: "set ... on a pending entity ... is recorded after those commands"
                                const es = [...pending.keys()].filter((e) => !loopDead.has(e) && !touched.has(e));
                                if (!es.length) continue;
                                const e = pick(es);
                                const c = pick(comps);
                                if (!pending.get(e)!.has(c)) continue;
                                const v = value(c);
                                if (r() < 0.5) fields.get(c)!.set(e, v);
                                else world.set(e, c, fieldName.get(c) as never, v as never);
                                commands.push(() => {
                                    const m = model.get(e);
                                    if (m?.has(c)) m.set(c, v);
                                });
                                trace.push(`L set ${e} ${c.name} ${v}`);
                            } else if (o < 0.9) {
                                // README: "Views taken in the loop ... stay valid for the whole loop"
                                expect(x.length).toBe(length);
                            } else if (o < 0.95) {
                                left = true;
                                break;
                            } else {
                                throw Object.assign(new Error('left by an exception'), { planned: true });
                            }
                        }
                        if (left) break;
                    }
                } catch (error) {
                    if (!(error as { planned?: boolean }).planned) throw error;
                    trace.push('L throw');
                }
                for (const command of commands) command();
            }
            check(`seed ${seed} step ${step}`);
        }
    }

    test('loops, rewinds, reclaims and tracking changes keep values, handles and STALE_ENTITY right', async () => {
        for (let seed = 1; seed <= 30; seed++) await trial(seed);
    });
});
