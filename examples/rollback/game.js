// @ts-check
// The rollback example's game: two ships in an arena of drifting asteroids, steered by one input
// byte per player per frame, shooting bullets that break asteroids. It is deterministic: the
// same world and the same inputs give the same world, bit for bit, so two peers that apply the
// same inputs hash alike. That takes three rules, which every system below keeps:
// - all the state is in the world (no JS variable outlives a frame), so rewinding the world
//   rewinds the whole game;
// - no clock and no Math.random: what looks random comes from the seed (setup) or from the
//   frame number (respawns);
// - column writes are declared (`writes`), or a rewind would not see them and keep them.
import { component } from '../../dist/index.js';

/** @typedef {import('../../dist/index.js').World} World */
/** @typedef {import('../../dist/index.js').Entity} Entity */

export const Position = component('Position', { x: 'f32', y: 'f32' });
export const Velocity = component('Velocity', { x: 'f32', y: 'f32' });
/** `aimX`, `aimY`: the direction of the latest steering (-1, 0 or 1 each), where it shoots. */
export const Ship = component('Ship', { player: 'u8', cooldown: 'u8', aimX: 'i8', aimY: 'i8', score: 'u16' });
export const Bullet = component('Bullet', { owner: 'u8' });
/** Frames left before the bullet disappears. */
export const Lifetime = component('Lifetime', { frames: 'i32' });
export const Asteroid = component('Asteroid', { radius: 'u8' });

/** The arena is WIDTH x HEIGHT units; ships and asteroids wrap around its edges. */
export const WIDTH = 480;
export const HEIGHT = 360;

/** The bits of a player's input byte. */
export const INPUT = Object.freeze({ LEFT: 1, RIGHT: 2, UP: 4, DOWN: 8, FIRE: 16 });
/** Inputs are bytes below this (every combination of the bits). */
export const INPUTS = 32;

const THRUST = 0.3;
/** The share of its speed a ship keeps each frame: without steering it drifts to a stop. */
const DRAG = 0.96;
const BULLET_SPEED = 5;
const BULLET_FRAMES = 50;
/** Frames between two shots of a ship. */
const COOLDOWN = 6;

/** mulberry32: each call the next uint32 of the seed's sequence. @param {number} seed */
export function mulberry32(seed) {
    let a = seed >>> 0;
    return () => {
        a = (a + 0x6d2b79f5) >>> 0;
        let t = a;
        t = Math.imul(t ^ (t >>> 15), t | 1);
        t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
        return (t ^ (t >>> 14)) >>> 0;
    };
}

/** A well-mixed uint32 of a uint32 (lowbias32): the game's "randomness" during play. @param {number} n */
function mix(n) {
    n = Math.imul(n ^ (n >>> 16), 0x7feb352d);
    n = Math.imul(n ^ (n >>> 15), 0x846ca68b);
    return (n ^ (n >>> 16)) >>> 0;
}

/** `value` moved back into [0, size) after a step of less than `size` out of it. @type {(value: number, size: number) => number} */
const wrap = (value, size) => (value < 0 ? value + size : value >= size ? value - size : value);

/**
 * Fills `world` with the game's start (the same for the same seed) and returns its `step`.
 * @param {World} world an empty world
 * @param {{ seed?: number, asteroids?: number }} [options]
 */
export function createGame(world, { seed = 1, asteroids = 200 } = {}) {
    const next = mulberry32(seed);
    /** A number in [-1, 1) from the seed's sequence. */
    const signed = () => next() / 2 ** 31 - 1;
    for (let i = 0; i < asteroids; i++) {
        world.spawn(
            Position({ x: (next() % (WIDTH * 16)) / 16, y: (next() % (HEIGHT * 16)) / 16 }),
            Velocity({ x: signed() * 0.75, y: signed() * 0.75 }),
            Asteroid({ radius: 3 + (next() % 8) }),
        );
    }
    // The ships are never despawned: their handles are the same in every run, after any rewind.
    /** @type {readonly Entity[]} */
    const ships = [0, 1].map((player) =>
        world.spawn(
            Position({ x: ((1 + 2 * player) * WIDTH) / 4, y: HEIGHT / 2 }),
            Velocity({ x: 0, y: 0 }),
            Ship({ player, cooldown: 0, aimX: player === 0 ? 1 : -1, aimY: 0, score: 0 }),
        ),
    );
    const bullets = world.query({ all: [Position, Velocity, Lifetime, Bullet], writes: [Position, Lifetime] });
    const rocks = world.query({ all: [Position, Velocity, Asteroid], writes: [Position] });

    /** Thrust, drift and shots of each ship: the only place inputs enter the game. @param {readonly number[]} inputs */
    function steer(inputs) {
        for (const player of [0, 1]) {
            const ship = ships[player],
                input = inputs[player] ?? 0;
            const ax = (input & INPUT.RIGHT ? 1 : 0) - (input & INPUT.LEFT ? 1 : 0);
            const ay = (input & INPUT.DOWN ? 1 : 0) - (input & INPUT.UP ? 1 : 0);
            const { x, y } = world.get(ship, Position);
            const velocity = world.get(ship, Velocity);
            const state = world.get(ship, Ship);
            const vx = (velocity.x + ax * THRUST) * DRAG,
                vy = (velocity.y + ay * THRUST) * DRAG;
            const aimX = ax || ay ? ax : state.aimX,
                aimY = ax || ay ? ay : state.aimY;
            let cooldown = Math.max(0, state.cooldown - 1);
            if (input & INPUT.FIRE && cooldown === 0) {
                cooldown = COOLDOWN;
                world.spawn(
                    Position({ x, y }),
                    Velocity({ x: vx + aimX * BULLET_SPEED, y: vy + aimY * BULLET_SPEED }),
                    Lifetime({ frames: BULLET_FRAMES }),
                    Bullet({ owner: player }),
                );
            }
            world.set(ship, Position, { x: wrap(x + vx, WIDTH), y: wrap(y + vy, HEIGHT) });
            world.set(ship, Velocity, { x: vx, y: vy });
            world.set(ship, Ship, { cooldown, aimX, aimY });
        }
    }

    /** Bullets fly straight and go when their time is up or when they leave the arena. */
    function fly() {
        for (const chunk of bullets) {
            const px = chunk.column(Position, 'x'),
                py = chunk.column(Position, 'y');
            const vx = chunk.column(Velocity, 'x'),
                vy = chunk.column(Velocity, 'y');
            const frames = chunk.column(Lifetime, 'frames');
            for (let i = 0, n = chunk.count; i < n; i++) {
                px[i] += vx[i];
                py[i] += vy[i];
                frames[i] -= 1;
                const outside = px[i] < 0 || px[i] >= WIDTH || py[i] < 0 || py[i] >= HEIGHT;
                // Deferred to the end of the loop by the query: the rows stay put meanwhile.
                if (frames[i] <= 0 || outside) world.despawn(chunk.entities[i]);
            }
        }
    }

    function drift() {
        for (const chunk of rocks) {
            const px = chunk.column(Position, 'x'),
                py = chunk.column(Position, 'y');
            const vx = chunk.column(Velocity, 'x'),
                vy = chunk.column(Velocity, 'y');
            for (let i = 0, n = chunk.count; i < n; i++) {
                px[i] = wrap(px[i] + vx[i], WIDTH);
                py[i] = wrap(py[i] + vy[i], HEIGHT);
            }
        }
    }

    /**
     * A bullet inside an asteroid breaks it and scores for its owner; a new asteroid enters at
     * the top edge for each one broken, so the field stays as full. Bullets are tried in row
     * order, which a rewind restores, so the same bullet wins a shared asteroid every time.
     * @param {number} frame
     */
    function collide(frame) {
        /** @type {{ entity: Entity, x: number, y: number, owner: number, spent: boolean }[]} */
        const flying = [];
        for (const chunk of bullets) {
            const x = chunk.column(Position, 'x'),
                y = chunk.column(Position, 'y'),
                owner = chunk.column(Bullet, 'owner');
            for (let i = 0; i < chunk.count; i++)
                flying.push({ entity: chunk.entities[i], x: x[i], y: y[i], owner: owner[i], spent: false });
        }
        if (flying.length === 0) return;
        const scored = [0, 0];
        for (const chunk of rocks) {
            const x = chunk.column(Position, 'x'),
                y = chunk.column(Position, 'y'),
                radius = chunk.column(Asteroid, 'radius');
            for (let i = 0; i < chunk.count; i++) {
                const hit = flying.find((b) => !b.spent && (b.x - x[i]) ** 2 + (b.y - y[i]) ** 2 < radius[i] ** 2);
                if (!hit) continue;
                hit.spent = true;
                scored[hit.owner] += 1;
                world.despawn(hit.entity);
                world.despawn(chunk.entities[i]);
            }
        }
        for (let k = 0; k < scored[0] + scored[1]; k++) {
            const h = mix(frame * 64 + k);
            world.spawn(
                Position({ x: h % WIDTH, y: 0 }),
                Velocity({ x: ((h >>> 12) % 16) / 10 - 0.75, y: 0.25 + ((h >>> 20) % 8) / 16 }),
                Asteroid({ radius: 3 + ((h >>> 28) % 8) }),
            );
        }
        for (const player of [0, 1]) {
            const score = world.get(ships[player], Ship, 'score') + scored[player];
            if (scored[player]) world.set(ships[player], Ship, { score: score & 0xffff }); // a u16 wraps
        }
    }

    return {
        world,
        ships,
        /**
         * Simulates one frame.
         * @param {number} frame its number (respawns depend on it)
         * @param {readonly number[]} inputs each player's input byte (INPUT bits)
         */
        step(frame, inputs) {
            steer(inputs);
            fly();
            drift();
            collide(frame);
        },
    };
}
