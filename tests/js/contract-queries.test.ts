// Contract tests against README.md: queries, subscriptions, loops, systems,
// hierarchies and relations, kernels and argument checks. Each test quotes the README sentence
// it holds tessera to. A random history is checked against a plain JS model of which entity has
// which component, pair and parent, and of what each consumer must report.
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';

import { ChildOf, TesseraError, component, relation, tag, type Entity, type World } from '../../dist/index.js';
import { expectError, rng, sorted, worldPerTest } from './support.js';

const newWorld = worldPerTest();

const P = component('CqP', { x: 'f32', y: 'f32' });
const H = component('CqH', { v: 'i32' });
const S = component('CqS', { w: 'f64' }, { storage: 'sparse' });
const T = tag('CqT');
const U = tag('CqU', { storage: 'sparse' });
const Likes = relation('CqLikes');
const Owns = relation('CqOwns', { n: 'u8' }, { exclusive: true });
const Casc = relation('CqCasc', undefined, { cascade: true });
const Acy = relation('CqAcy', undefined, { acyclic: true });

const bytes = (world: World): string => Buffer.from(world.snapshot()).toString('hex');

/** Runs `fn`, which must throw a TesseraError `code`, and checks the world's snapshot and validity are unchanged. */
function refusedUnchanged(world: World, fn: () => unknown, code: string): TesseraError {
    const before = bytes(world);
    const error = expectError(fn, code as never);
    expect(bytes(world), `${error.operation} threw ${code} but changed the world`).toBe(before);
    world.validate();
    return error;
}

// ---------------------------------------------------------------------------------------------
// The random model
// ---------------------------------------------------------------------------------------------

type Kind = 'added' | 'changed' | 'removed' | 'pairs';
interface ModelSub {
    desc: any;
    sub: any;
    kind: Kind;
    X: any;
    pend: Set<Entity>;
    removed: Entity[];
    pairEv: string[];
}

/**
 * `steps` random calls (spawns with parents, despawns with cascades, adds with and without
 * values, removes, sets, setParent with CYCLE, Likes pairs, ticks, and loops over plain queries
 * that record calls: run whole, left with break, or abandoned and ended by tick) checked every
 * few steps against the model: 10 queries' entities() and 21 subscriptions, drained or run chunk
 * by chunk (whole or left early). Returns a failure description or null.
 */
async function randomHistory(seed: number, steps: number): Promise<string | null> {
    const below = rng(seed);
    const w = await newWorld();
    const KINDS: any[] = [P, H, T, S, U];
    const DATA: any[] = [P, H, S];
    const comps = new Map<Entity, Set<any>>();
    const parent = new Map<Entity, Entity>();
    const likes = new Map<Entity, Set<Entity>>();
    const live = (): Entity[] => [...comps.keys()];
    const hasM = (e: Entity, X: any): boolean =>
        X === ChildOf ? parent.has(e) : X === Likes ? (likes.get(e)?.size ?? 0) > 0 : comps.get(e)!.has(X);
    const matches = (e: Entity, d: any): boolean =>
        (d.all ?? []).every((X: any) => hasM(e, X)) &&
        !(d.none ?? []).some((X: any) => hasM(e, X)) &&
        (!d.any?.length || d.any.some((X: any) => hasM(e, X)));
    const subs: ModelSub[] = [];
    const mkSub = (desc: any, kind: Kind, X: any): void => {
        subs.push({ desc, sub: w.subscribe(desc), kind, X, pend: new Set(), removed: [], pairEv: [] });
    };
    const ev = (type: 'add' | 'change' | 'remove', e: Entity, X: any): void => {
        for (const s of subs) {
            if (s.X !== X) continue;
            if (type === 'add' && s.kind === 'added') s.pend.add(e);
            if (type === 'change' && s.kind === 'changed') s.pend.add(e);
            if (type === 'remove') {
                if (s.kind === 'changed' || s.kind === 'added') s.pend.delete(e);
                if (s.kind === 'removed') s.removed.push(e);
            }
        }
    };
    const pairEv = (kind: string, src: Entity, tgt: Entity, R: any): void => {
        for (const s of subs) if (s.kind === 'pairs' && s.X === R) s.pairEv.push(`${kind} ${src} ${tgt}`);
    };
    for (const X of [P, H, T, S, U, ChildOf]) {
        mkSub({ added: [X] }, 'added', X);
        mkSub({ removed: [X] }, 'removed', X);
    }
    for (const X of DATA) mkSub({ changed: [X] }, 'changed', X);
    mkSub({ changed: [H], none: [T] }, 'changed', H);
    mkSub({ added: [P], any: [S, U] }, 'added', P);
    mkSub({ pairs: [ChildOf] }, 'pairs', ChildOf);
    mkSub({ pairs: [Likes] }, 'pairs', Likes);
    const QDESCS: any[] = [
        { all: [P] },
        { all: [P], none: [T] },
        { any: [T, S] },
        { all: [S] },
        { none: [S], all: [H] },
        { all: [ChildOf] },
        { none: [ChildOf] },
        { all: [Likes] },
        { all: [H], any: [U, T] },
        { all: [U], none: [Likes] },
    ];
    const queries = QDESCS.map((d) => w.query(d));
    const despawnM = (e: Entity): void => {
        if (!comps.has(e)) return;
        for (const X of comps.get(e)!) ev('remove', e, X);
        if (parent.has(e)) {
            ev('remove', e, ChildOf);
            pairEv('removed', e, parent.get(e)!, ChildOf);
            parent.delete(e);
        }
        if (likes.get(e)?.size) {
            for (const t of likes.get(e)!) pairEv('removed', e, t, Likes);
            ev('remove', e, Likes);
            likes.delete(e);
        }
        comps.delete(e);
        for (const [s, ts] of likes)
            if (ts.has(e)) {
                ts.delete(e);
                pairEv('removed', s, e, Likes);
                if (ts.size === 0) ev('remove', s, Likes);
            }
        for (const [c, p] of [...parent]) if (p === e && comps.has(c)) despawnM(c);
    };
    const isAnc = (a: Entity, e: Entity): boolean => {
        for (let x: Entity | undefined = e; x !== undefined; x = parent.get(x)) if (x === a) return true;
        return false;
    };
    let inLoop = false;
    const deferred: (() => void)[] = [];
    const later = (fn: () => void): void => {
        if (inLoop) deferred.push(fn);
        else fn();
    };
    const valuesOf = (X: any, i: number): any => (X === H ? { v: i } : X === P ? { x: i } : { w: i });
    const step = (i: number): string => {
        const L = live();
        const e = L[below(Math.max(L.length, 1))]!;
        const f = L[below(Math.max(L.length, 1))]!;
        const op = below(inLoop ? 11 : 15);
        const X = KINDS[below(KINDS.length)];
        if (op < 3 || L.length < 3) {
            const set = KINDS.filter(() => below(2));
            const items: any[] = set.map((c) => (c === H ? H({ v: i }) : c));
            const pr = !inLoop && L.length && below(3) === 0 ? L[below(L.length)] : undefined;
            if (pr !== undefined) items.push(ChildOf(pr));
            const n = w.spawn(...items);
            later(() => {
                comps.set(n, new Set(set));
                for (const c of set) ev('add', n, c);
                if (pr !== undefined) {
                    parent.set(n, pr);
                    ev('add', n, ChildOf);
                    pairEv('added', n, pr, ChildOf);
                }
            });
            return `spawn ${n}`;
        }
        if (op === 3) {
            w.despawn(e);
            later(() => despawnM(e));
            return `despawn ${e}`;
        }
        if (op === 4) {
            const withValues = DATA.includes(X) && below(2) === 1;
            w.add(e, withValues ? X(valuesOf(X, i)) : X);
            later(() => {
                if (!comps.has(e)) return;
                if (!comps.get(e)!.has(X)) {
                    comps.get(e)!.add(X);
                    ev('add', e, X);
                } else if (withValues) ev('change', e, X);
            });
            return `add ${e} ${X.name}`;
        }
        if (op === 5) {
            w.remove(e, X);
            later(() => {
                if (comps.get(e)?.has(X)) {
                    comps.get(e)!.delete(X);
                    ev('remove', e, X);
                }
            });
            return `remove ${e} ${X.name}`;
        }
        if (op === 6) {
            const Y = DATA[below(3)];
            if (!comps.get(e)!.has(Y)) return 'noop';
            if (Y === H) w.set(e, H, 'v', i);
            else w.set(e, Y, valuesOf(Y, i));
            ev('change', e, Y); // a set on a placed component writes at once, inside a loop too
            return `set ${e} ${Y.name}`;
        }
        if (op === 7) {
            if (isAnc(e, f)) {
                refusedUnchangedIfOutside(() => w.setParent(e, f), 'CYCLE');
                return 'cycle';
            }
            const old = parent.get(e);
            w.setParent(e, f);
            if (old === f) return 'same parent';
            if (old !== undefined) pairEv('removed', e, old, ChildOf);
            else ev('add', e, ChildOf);
            parent.set(e, f);
            pairEv('added', e, f, ChildOf);
            return `setParent ${e} ${f}`;
        }
        if (op === 8) {
            const old = parent.get(e);
            w.setParent(e, undefined);
            if (old !== undefined) {
                parent.delete(e);
                pairEv('removed', e, old, ChildOf);
                ev('remove', e, ChildOf);
            }
            return `unparent ${e}`;
        }
        if (op === 9) {
            const ts = likes.get(e) ?? new Set<Entity>();
            if (ts.has(f)) return 'noop';
            w.addPair(e, Likes, f);
            ts.add(f);
            likes.set(e, ts);
            pairEv('added', e, f, Likes);
            if (ts.size === 1) ev('add', e, Likes);
            return `like ${e} ${f}`;
        }
        if (op === 10) {
            const ts = likes.get(e);
            w.removePair(e, Likes, f);
            if (ts?.has(f)) {
                ts.delete(f);
                pairEv('removed', e, f, Likes);
                if (!ts.size) ev('remove', e, Likes);
            }
            return `unlike ${e} ${f}`;
        }
        if (op === 11) {
            w.tick();
            return 'tick';
        }
        if (op === 12 || op === 13) {
            const k = below(queries.length);
            const q = queries[k]!;
            const ops: string[] = [];
            const mode = below(3); // 0: the whole loop, 1: break, 2: chunks() abandoned, ended by tick()
            if (mode === 2) {
                const it = q.chunks();
                const r = it.next();
                inLoop = true;
                if (!r.done) for (let j = 0, n = 1 + below(5); j < n; j++) ops.push(step(i));
                inLoop = false;
                w.tick();
            } else {
                let first = true;
                inLoop = true;
                for (const _chunk of q) {
                    if (first) {
                        first = false;
                        for (let j = 0, n = 1 + below(5); j < n; j++) ops.push(step(i));
                    }
                    if (mode === 1) break;
                }
                inLoop = false;
            }
            for (const fn of deferred.splice(0)) fn();
            return `loop(${mode}) q${k} [${ops.join('; ')}]`;
        }
        return 'noop';
    };
    function refusedUnchangedIfOutside(fn: () => unknown, code: string): void {
        if (inLoop) expectError(fn, code as never);
        else refusedUnchanged(w, fn, code);
    }
    const name = (d: any): string => JSON.stringify(d, (_k, v) => (typeof v === 'function' ? v.name : v));
    const check = (where: string): string | null => {
        for (let k = 0; k < queries.length; k++) {
            const got = sorted(queries[k]!.entities());
            const exp = sorted(live().filter((e) => matches(e, QDESCS[k])));
            if (JSON.stringify(got) !== JSON.stringify(exp)) return `${where}: query ${name(QDESCS[k])} gave ${got}, model ${exp}`;
        }
        for (const s of subs) {
            if ((s.kind === 'added' || s.kind === 'changed') && below(3) === 0) {
                // the same run chunk by chunk, whole or left after its first chunk
                const exp = new Set([...s.pend].filter((e) => comps.has(e) && hasM(e, s.X) && matches(e, s.desc)));
                const got: Entity[] = [];
                const leave = below(2) === 1;
                for (const chunk of s.sub) {
                    for (const row of chunk.rows) got.push(chunk.entities[row]!);
                    if (leave) break;
                }
                for (const g of got) {
                    if (!exp.has(g)) return `${where}: chunk loop of ${name(s.desc)} gave ${g}, not in ${[...exp]}`;
                    s.pend.delete(g);
                }
                for (const p of [...s.pend]) if (!exp.has(p)) s.pend.delete(p);
                if (!leave && got.length !== exp.size) return `${where}: chunk loop of ${name(s.desc)} gave ${got}, model ${[...exp]}`;
                continue;
            }
            const d = s.sub.drain();
            if (s.kind === 'added' || s.kind === 'changed') {
                const exp = sorted([...s.pend].filter((e) => comps.has(e) && hasM(e, s.X) && matches(e, s.desc)));
                const got = sorted(d.entities);
                s.pend.clear();
                if (JSON.stringify(got) !== JSON.stringify(exp)) return `${where}: drain of ${name(s.desc)} gave ${got}, model ${exp}`;
            } else if (s.kind === 'removed') {
                const exp = sorted(s.removed);
                const got = sorted(d.removed);
                s.removed = [];
                if (JSON.stringify(got) !== JSON.stringify(exp)) return `${where}: removed of ${name(s.desc)} gave ${got}, model ${exp}`;
            } else {
                const exp = [...s.pairEv].sort();
                const got = d.pairEvents.map((p: any) => `${p.kind} ${p.source} ${p.target}`).sort();
                s.pairEv = [];
                if (JSON.stringify(got) !== JSON.stringify(exp))
                    return `${where}: pair events of ${name(s.desc)} gave ${got}, model ${exp}`;
            }
        }
        w.validate();
        return null;
    };
    const trace: string[] = [];
    for (let i = 0; i < steps; i++) {
        trace.push(step(i));
        if (below(4) === 0) {
            const failure = check(`seed ${seed} step ${i}`);
            if (failure) return `${failure}\n  last steps: ${trace.slice(-8).join(' | ')}`;
        }
    }
    const failure = check(`seed ${seed} end`);
    return failure ? `${failure}\n  last steps: ${trace.slice(-8).join(' | ')}` : null;
}

describe('queries and subscriptions against a model', () => {
    // README: "Every consumer sees each change exactly once." "Added and changed report what is
    // there at the drain." "Filters combine with AND." "While any iteration is live, spawn,
    // despawn, add, remove and their batch forms are recorded and applied, in order, when the last
    // live iteration ends." "Pairs between placed entities (addPair, removePair, setParent ...)
    // apply at once". "A loop left early loses nothing." "world.tick() ends every iteration still
    // live". "despawning a target despawns its sources, recursively". "Making an entity its own
    // ancestor throws CYCLE and changes nothing."
    test('random histories with loops: entities(), drains and chunk runs agree with the model', async () => {
        const failures: string[] = [];
        for (let seed = 1; seed <= 40; seed++) {
            const failure = await randomHistory(seed, 250);
            if (failure) failures.push(failure);
        }
        expect(failures).toEqual([]);
    });
});

// ---------------------------------------------------------------------------------------------
// Reads must not register; failed calls change nothing
// ---------------------------------------------------------------------------------------------

describe('reads never register a component; a failed call changes nothing', () => {
    // README: "A component is registered in a world on its first use there (`get`, `has` and the
    // other reads never register it: no entity can have it)".
    test('hierarchy and pair reads on a world that never used the relation leave its snapshot as it was', async () => {
        const reads: [string, (w: World, a: Entity) => unknown][] = [
            ['childrenOf', (w, a) => w.childrenOf(a)],
            ['parentOf', (w, a) => w.parentOf(a)],
            ['has(a, ChildOf)', (w, a) => w.has(a, ChildOf)],
            ['targets', (w, a) => w.targets(a, Likes)],
            ['sources', (w, a) => w.sources(Likes, a)],
            ['pairs', (w) => w.pairs(Likes)],
            ['descendants', (w, a) => w.descendants(a)],
            ['walk', (w, a) => w.walk(a, () => {})],
            ['descendants(a, Likes)', (w, a) => w.descendants(a, Likes)],
            ['hasPair', (w, a) => w.hasPair(a, Likes, a)],
        ];
        const registering: string[] = [];
        for (const [label, read] of reads) {
            const world = await newWorld();
            const a = world.spawn(P);
            const before = bytes(world);
            const components = world.stats().componentCount;
            read(world, a);
            if (bytes(world) !== before || world.stats().componentCount !== components) registering.push(label);
        }
        expect(registering, 'these reads registered their relation').toEqual([]);
    });

    // README: "Every failure is a TesseraError ... a failed call leaves the world exactly as it was
    // (its snapshot is the same bytes)."
    test('descendants, walk and hasPair that throw leave the snapshot as it was', async () => {
        const changed: string[] = [];
        const cases: [string, (w: World, a: Entity, dead: Entity) => unknown, string][] = [
            ['descendants("x")', (w) => w.descendants('x' as never), 'INVALID_ARGUMENT'],
            ['descendants(dead)', (w, _a, dead) => w.descendants(dead), 'STALE_ENTITY'],
            ['walk(dead)', (w, _a, dead) => w.walk(dead, () => {}), 'STALE_ENTITY'],
            ['hasPair(a, Likes, dead)', (w, a, dead) => w.hasPair(a, Likes, dead), 'STALE_ENTITY'],
            ['hasPair("x", Likes, a)', (w, a) => w.hasPair('x' as never, Likes, a), 'INVALID_ARGUMENT'],
            ['hasPair(a, Likes, 1.5)', (w, a) => w.hasPair(a, Likes, 1.5), 'INVALID_ARGUMENT'],
            ['childrenOf(dead)', (w, _a, dead) => w.childrenOf(dead), 'STALE_ENTITY'],
            ['targets(dead, Likes)', (w, _a, dead) => w.targets(dead, Likes), 'STALE_ENTITY'],
        ];
        for (const [label, call, code] of cases) {
            const world = await newWorld();
            const a = world.spawn(P);
            const dead = world.spawn(P);
            world.despawn(dead);
            const before = bytes(world);
            expectError(() => call(world, a, dead), code as never);
            if (bytes(world) !== before) changed.push(label);
        }
        expect(changed, 'these calls threw and changed the world').toEqual([]);
    });

    // README: "Arguments are checked as plain JavaScript passes them" / "bad input throws a
    // TesseraError with a stable code and leaves the world unchanged".
    test('entity arguments that are not handles: INVALID_ARGUMENT naming the operation, nothing changed (fast-check)', async () => {
        const world = await newWorld();
        const [a, b, c] = world.spawnMany(3, P, H);
        world.addPair(a!, Likes, b!);
        world.setParent(c!, a!); // both relations used: registration is not what this test is about
        const calls: [string, (x: any) => unknown][] = [
            ['world.despawn', (x) => world.despawn(x)],
            ['world.has', (x) => world.has(x, P)],
            ['world.get', (x) => world.get(x, P)],
            ['world.set', (x) => world.set(x, H, 'v', 1)],
            ['world.add', (x) => world.add(x, T)],
            ['world.remove', (x) => world.remove(x, H)],
            ['world.setParent', (x) => world.setParent(x, a!)],
            ['world.setParent', (x) => world.setParent(b!, x)],
            ['world.setParent', (x) => world.setParent(b!, a!, x)],
            ['world.childrenOf', (x) => world.childrenOf(x)],
            ['world.parentOf', (x) => world.parentOf(x)],
            ['world.descendants', (x) => world.descendants(x)],
            ['world.walk', (x) => world.walk(x, () => {})],
            ['world.targets', (x) => world.targets(x, Likes)],
            ['world.sources', (x) => world.sources(Likes, x)],
            ['world.addPair', (x) => world.addPair(a!, Likes, x)],
            ['world.hasPair', (x) => world.hasPair(a!, Likes, x)],
            ['world.removePair', (x) => world.removePair(a!, Likes, x)],
            ['world.despawnMany', (x) => world.despawnMany([c!, x])],
            ['world.markChanged', (x) => world.markChanged(x, H)],
        ];
        const notHandles = fc.oneof(
            fc.string(),
            fc.double({ noInteger: true }),
            fc.integer({ max: -1 }),
            fc.integer({ min: 2 ** 32, max: 2 ** 52 }), // [2^30, 2^32) gives STALE_ENTITY instead (reported separately)
            fc.constantFrom(undefined, null, NaN, Infinity, -Infinity, {}, [], 1n, true),
        );
        const before = bytes(world);
        fc.assert(
            fc.property(fc.integer({ min: 0, max: calls.length - 1 }), notHandles, (k, x) => {
                const [operation, call] = calls[k]!;
                expectError(() => call(x), 'INVALID_ARGUMENT', { operation });
                expect(bytes(world)).toBe(before);
            }),
            { numRuns: 300, seed: 7 },
        );
        world.validate();
    });

    // README: "Every failure is a TesseraError with a stable code, the operation, and the entity,
    // component and field involved".
    test('closing a subscription while its chunk loop is live names subscription.close', async () => {
        const world = await newWorld();
        const e = world.spawn(H);
        const sub = world.subscribe({ changed: [H] });
        world.set(e, H, 'v', 1);
        const it = sub.chunks();
        it.next();
        const error = expectError(() => sub.close(), 'QUERY_IN_USE');
        world.tick(); // ends the loop left live
        expect(error.operation).toBe('subscription.close');
        sub.close();
    });
});

// ---------------------------------------------------------------------------------------------
// Relations and hierarchies
// ---------------------------------------------------------------------------------------------

describe('relations and hierarchies', () => {
    // README: "cascade: despawning a target despawns its sources, recursively" and "Despawning an
    // entity always removes its pairs, as a source and as a target"; "despawns count as removals".
    test('a cascade through ChildOf and another cascading relation, alternating, five deep', async () => {
        const world = await newWorld();
        const other = world.spawn(P);
        const r1 = world.spawn(P);
        const r2 = world.spawn(P, ChildOf(r1));
        const r3 = world.spawn(P, Casc(r2));
        const r4 = world.spawn(P, ChildOf(r3), Likes(other));
        const r5 = world.spawn(P, Casc(r4));
        const pairs = world.subscribe({ pairs: [ChildOf, Casc, Likes] });
        const gone = world.subscribe({ removed: [P, ChildOf, Casc, Likes] });
        world.despawn(r1);
        expect([r1, r2, r3, r4, r5].map((e) => world.isAlive(e))).toEqual([false, false, false, false, false]);
        expect(world.isAlive(other)).toBe(true);
        expect(world.sources(Likes, other)).toEqual([]);
        const events = pairs.drain().pairEvents.map((e) => `${e.kind} ${e.source} ${e.relation.name} ${e.target}`);
        expect(events.sort()).toEqual(
            [
                `removed ${r2} ChildOf ${r1}`,
                `removed ${r3} CqCasc ${r2}`,
                `removed ${r4} ChildOf ${r3}`,
                `removed ${r4} CqLikes ${other}`,
                `removed ${r5} CqCasc ${r4}`,
            ].sort(),
        );
        const removed = gone.drain();
        expect(sorted(removed.removedOf(P))).toEqual(sorted([r1, r2, r3, r4, r5]));
        expect(sorted(removed.removedOf(ChildOf))).toEqual(sorted([r2, r4]));
        expect(sorted(removed.removedOf(Casc))).toEqual(sorted([r3, r5]));
        expect([...removed.removedOf(Likes)]).toEqual([r4]);
        world.validate();
    });

    // README: "replacing an exclusive pair gives removed then added"; "pair data written between
    // two drains gives one changed per pair"; getPair/setPair values follow the rule of set.
    test('exclusive replacement, pair data checked like component values, each refusal changes nothing', async () => {
        const world = await newWorld();
        const [a, b, c] = world.spawnMany(3, P);
        const sub = world.subscribe({ pairs: [Owns] });
        world.addPair(a!, Owns, b!, { n: 1 });
        world.addPair(a!, Owns, c!, { n: 2 });
        expect(sub.drain().pairEvents.map((e) => `${e.kind} ${e.target}`)).toEqual([`added ${b}`, `removed ${b}`, `added ${c}`]);
        expect(world.targets(a!, Owns)).toEqual([c]);
        expect(world.getPair(a!, Owns, c!)).toEqual({ n: 2 });
        for (const bad of [256, -1, 1.5, NaN, Infinity, '3', undefined, null, {}]) {
            const error = refusedUnchanged(world, () => world.setPair(a!, Owns, c!, 'n', bad as never), 'BAD_VALUE');
            expect([error.operation, error.component, error.field]).toEqual(['world.setPair', 'CqOwns', 'n']);
        }
        refusedUnchanged(world, () => world.setPair(a!, Owns, c!, { n: 300 }), 'BAD_VALUE');
        refusedUnchanged(world, () => world.addPair(a!, Owns, b!, { n: 300 }), 'BAD_VALUE');
        expect(world.targets(a!, Owns)).toEqual([c]); // the refused add replaced nothing
        refusedUnchanged(world, () => world.setPair(a!, Owns, b!, 'n', 1), 'MISSING_COMPONENT');
        world.setPair(a!, Owns, c!, 'n', 9);
        world.setPair(a!, Owns, c!, 'n', 10);
        expect(sub.drain().pairEvents.map((e) => `${e.kind} ${e.target}`)).toEqual([`changed ${c}`]);
        expect(world.getPair(a!, Owns, c!)).toEqual({ n: 10 });
    });

    // README: "a pair that would make a source its own ancestor throws CYCLE" / "Making an entity
    // its own ancestor throws CYCLE and changes nothing"; "a refused world.add(e, Frozen, Huge)
    // adds neither".
    test('CYCLE through addPair, add with values, spawn-free chains and setParent with before: nothing changes', async () => {
        const world = await newWorld();
        const x = world.spawn(P);
        const y = world.spawn(P, Acy(x));
        const z = world.spawn(P, Acy(y));
        refusedUnchanged(world, () => world.addPair(x, Acy, z), 'CYCLE');
        refusedUnchanged(world, () => world.add(x, H({ v: 5 }), T, Acy(z)), 'CYCLE');
        expect(world.has(x, H) || world.has(x, T)).toBe(false);
        const [root, k1, k2, k3] = world.spawnMany(4, P);
        world.setParent(k1!, root!);
        world.setParent(k2!, root!);
        world.setParent(k3!, k1!);
        refusedUnchanged(world, () => world.setParent(root!, k3!), 'CYCLE');
        refusedUnchanged(world, () => world.setParent(k1!, k3!, undefined), 'CYCLE');
        refusedUnchanged(world, () => world.setParent(root!, k1!, k3!), 'CYCLE');
        expect(world.descendants(root!)).toEqual([k1, k3, k2]);
        // before a sibling: reorder, then walk order follows
        world.setParent(k2!, root!, k1!);
        expect(world.childrenOf(root!)).toEqual([k2, k1]);
        const walked: [Entity, number, Entity][] = [];
        world.walk(root!, (e, depth, parent) => walked.push([e, depth, parent]));
        expect(walked).toEqual([
            [k2, 1, root],
            [k1, 1, root],
            [k3, 2, k1],
        ]);
        // before that is not a child of the new parent is refused
        const error = refusedUnchanged(world, () => world.setParent(k3!, root!, k3!), 'MISSING_COMPONENT');
        expect(error.operation).toBe('world.setParent');
    });

    // README: "a pair placed elsewhere among its target's sources, by `setParent(e, p, before)` or
    // `placePair`, gives `moved`); `pairsAdded`, `pairsRemoved` and `pairsChanged` are the added,
    // removed and changed events (a `moved` one is in `pairEvents` alone)".
    test('a reorder of children is one moved event, in pairEvents alone', async () => {
        const world = await newWorld();
        const [p, a, b] = world.spawnMany(3, P);
        world.setParent(a!, p!);
        world.setParent(b!, p!);
        const sub = world.subscribe({ pairs: [ChildOf] });
        world.setParent(b!, p!, a!);
        const changes = sub.drain();
        expect(world.childrenOf(p!)).toEqual([b, a]);
        expect(changes.pairEvents).toEqual([{ kind: 'moved', source: b, target: p, relation: ChildOf }]);
        expect(changes.pairsAdded.length + changes.pairsRemoved.length + changes.pairsChanged.length).toBe(0);
    });
});

// ---------------------------------------------------------------------------------------------
// Loops, iterators and systems
// ---------------------------------------------------------------------------------------------

describe('loops, abandoned iterators and systems', () => {
    // README: "Until it ends, every structural change is deferred ... and snapshot() ... refuse"
    // and "world.tick() ends every iteration still live ... the deferred changes are applied".
    test('an abandoned subscription chunk loop: close refused, deferred despawn applied by tick, nothing lost', async () => {
        const world = await newWorld();
        const es = world.spawnMany(6, H);
        const sub = world.subscribe({ changed: [H] });
        world.set(es[1]!, H, 'v', 3);
        const it = sub.chunks();
        expect(it.next().done).toBe(false);
        world.despawn(es[5]!);
        expect(world.isAlive(es[5]!)).toBe(true);
        expectError(() => sub.close(), 'QUERY_IN_USE');
        expectError(() => sub.drain(), 'QUERY_IN_USE', { operation: 'subscription.drain' });
        expectError(() => world.snapshot(), 'INVALID_ARGUMENT', { operation: 'world.snapshot' });
        world.tick();
        expect(world.isAlive(es[5]!)).toBe(false);
        expect(it.next().done).toBe(true);
        world.set(es[2]!, H, 'v', 4);
        expect([...sub.drain().entities]).toEqual([es[2]]); // es[1]'s chunk was handed out: seen
        sub.close();
        world.validate();
    });

    // README: "A system's iterations end when the system returns (or throws)"; "tick() from inside
    // a system is refused and changes nothing ... INVALID_ARGUMENT outside [its loop]"; stages run in
    // creation order.
    test('systems: stage order, spawns seen by later systems, tick refused inside, a throw stops the frame', async () => {
        const world = await newWorld();
        world.spawnMany(3, P, H);
        const order: string[] = [];
        world.stage('first');
        world.stage('second');
        let fail = false;
        world.system({
            name: 'late',
            stage: 'second',
            query: { all: [T] },
            run: (q) => {
                order.push(`late:${q.count()}`);
            },
        });
        world.system({
            name: 'spawner',
            stage: 'first',
            query: { all: [P] },
            run: (q, w) => {
                order.push('spawner');
                for (const _chunk of q) w.spawn(T);
                const before = bytes(w);
                expectError(() => w.tick(), 'INVALID_ARGUMENT', { operation: 'world.tick' });
                expect(bytes(w)).toBe(before);
            },
        });
        world.system({
            name: 'thrower',
            stage: 'second',
            query: { all: [T] },
            run: (q, w) => {
                order.push('thrower');
                if (!fail) return;
                for (const chunk of q) {
                    w.despawn(chunk.entities[0]!);
                    throw new Error('boom');
                }
            },
        });
        world.system({ name: 'after', stage: 'second', query: { all: [P] }, run: () => void order.push('after') });
        world.tick();
        expect(order).toEqual(['spawner', 'late:1', 'thrower', 'after']);
        expect(world.frame).toBe(1);
        order.length = 0;
        fail = true;
        expect(() => world.tick()).toThrow('boom');
        expect(order).toEqual(['spawner', 'late:2', 'thrower']);
        expect(world.frame).toBe(1);
        expect(world.query({ all: [T] }).count()).toBe(1); // spawned 2, one despawned by the thrower's ended loop
        world.validate();
    });
});

// ---------------------------------------------------------------------------------------------
// Kernels
// ---------------------------------------------------------------------------------------------

describe('kernels', () => {
    const Ints = component('CqInts', { u8: 'u8', i8: 'i8', u16: 'u16', i32: 'i32', u32: 'u32' });
    const Src = component('CqSrc', { u8: 'u8', i32: 'i32', u32: 'u32' });
    const Floats = component('CqFloats', { a: 'f32', b: 'f64' });

    // README: "Integer fields saturate ... every result is computed exactly and then held to the
    // type's range ... nothing wraps"; "countdown returns it once, on the call that reached 0";
    // "The operands themselves must be values of the field's type ... the error names the operands,
    // and nothing is written".
    test('saturation at both ends of every integer type; bad operands refused whole', async () => {
        const world = await newWorld();
        const es = world.spawnMany(
            3,
            Ints({ u8: 250, i8: -120, u16: 5, i32: 2147483000, u32: 4294967290 }),
            Src({ u8: 3, i32: -5, u32: 7 }),
            Floats,
        );
        const q = world.query({ all: [Ints, Src, Floats] });
        q.offset(Ints, 'u8', 10);
        q.offset(Ints, 'i8', -20);
        q.offset(Ints, 'i32', 1000);
        q.offset(Ints, 'u32', 100);
        expect(world.get(es[0]!, Ints)).toEqual({ u8: 255, i8: -128, u16: 5, i32: 2147483647, u32: 4294967295 });
        q.scale(Ints, 'i32', -3);
        expect(world.get(es[1]!, Ints, 'i32')).toBe(-2147483648);
        q.addScaled(Ints, 'i32', Src, 'i32', -1);
        expect(world.get(es[2]!, Ints, 'i32')).toBe(-2147483643);
        expect([...q.countdown(Ints, 'u16', 3)]).toEqual([]);
        expect(sorted(q.countdown(Ints, 'u16', 3))).toEqual(sorted(es));
        expect([...q.countdown(Ints, 'u16', 3)]).toEqual([]);
        expect(world.get(es[0]!, Ints, 'u16')).toBe(0);
        for (const [label, call] of [
            ['scale u32 by -1', () => q.scale(Ints, 'u32', -1)],
            ['addScaled u32 by 0.5', () => q.addScaled(Ints, 'u32', Src, 'u32', 0.5)],
            ['offset i32 by NaN', () => q.offset(Ints, 'i32', NaN)],
            ['offset i32 by Infinity', () => q.offset(Ints, 'i32', Infinity)],
            ['fill u8 256', () => q.fill(Ints, 'u8', 256)],
            ['fill f32 1e39', () => q.fill(Floats, 'a', 1e39)],
            ['fill f32 "3"', () => q.fill(Floats, 'a', '3' as never)],
            ['clamp u8 -1..300', () => q.clamp(Ints, 'u8', -1, 300)],
            ['countdown without amount', () => (q.countdown as any)(Ints, 'u8')],
        ] as const) {
            const before = bytes(world);
            const error = expectError(call, 'BAD_VALUE');
            expect(error.component, label).toBeDefined();
            expect(bytes(world), label).toBe(before);
        }
    });

    // README: "Kernels mark like writes"; a consumer sees each change once.
    test('a float kernel writing NaN and Infinity marks every visited row once; values are IEEE', async () => {
        const world = await newWorld();
        const es = world.spawnMany(5, Floats({ a: 1, b: 2 }));
        const sub = world.subscribe({ changed: [Floats] });
        sub.drain();
        const q = world.query({ all: [Floats] });
        q.offset(Floats, 'a', NaN);
        q.scale(Floats, 'b', Infinity);
        expect(sorted(sub.drain().entities)).toEqual(sorted(es));
        expect(world.get(es[0]!, Floats)).toEqual({ a: NaN, b: Infinity });
        expect(sub.drain().entities.length).toBe(0);
    });
});
