// @ts-check
// The particle scenario of BENCHMARKS.md on tessera: four swarms of particles, each held by
// its own moving well, bouncing off the walls; about `emitRate` particles expire and are
// respawned per tick, and the population stays at the target count.
//
// The physics is written twice, and both flavours compute the same thing:
// - 'wasm': the built-in kernels (addScaled, offset, countdown) over each swarm's query, inside
//   wasm with SIMD, one pass per field operation;
// - 'js': one fused loop per chunk over typed-array views of the same columns.
// A well pulls with a spring force, F = -k (p - centre), which is a column operation
// (v += p * -k dt, then v += k centre dt) and so fits the kernels; kx != ky makes each
// particle draw a Lissajous figure around its moving centre. What kernels cannot express (the
// bounces, the reaction to them, spawning with random values) is the same JS in both modes.
import { component, tag } from '../dist/index.js';

/** @typedef {import('../dist/index.js').World} World */
/** @typedef {import('../dist/index.js').Query} Query */
/** @typedef {import('../dist/index.js').Subscription} Subscription */
/** @typedef {import('../dist/index.js').Tag} Tag */
/** @typedef {'js' | 'wasm'} Mode */

export const Position = component('Position', { x: 'f32', y: 'f32' });
export const Velocity = component('Velocity', { x: 'f32', y: 'f32' });
export const Lifetime = component('Lifetime', { seconds: 'f32' });
/** Packed 0xAABBGGRR: the byte order of ImageData on little-endian machines. */
export const Color = component('Color', { rgba: 'u32' });
/** Wall hits so far; marked changed on every hit, which the heat reaction subscribes to. */
export const Bounce = component('Bounce', { count: 'u8' });

/** The world is WIDTH x HEIGHT units: one unit is one pixel of the render buffer. */
export const WIDTH = 960;
export const HEIGHT = 540;
/** A fixed time step per tick (seconds), so runs are repeatable. */
export const DT = 1 / 60;
/** The share of speed a particle keeps when it hits a wall. */
const RESTITUTION = 0.9;

/**
 * A swarm: a tag (its own archetype, so kernels run with its constants), a colour, a well
 * with spring constants per axis, and the path of the well's centre (where it also emits).
 * @typedef {object} SwarmSpec
 * @property {string} name
 * @property {Tag} tag
 * @property {[number, number, number]} rgb
 * @property {number} kx spring constant along x (1/s^2); sqrt(k) is the angular frequency
 * @property {number} ky
 * @property {number} speed the largest launch speed (units/s)
 * @property {WellPath} path
 */

/**
 * The well's centre drifts around the middle of the box:
 * `x = WIDTH/2 + ax sin(fx t + px)`, `y = HEIGHT/2 + ay sin(fy t + py)`. Its frequencies are
 * far below the wells' own, so that the swarms follow without being pumped up.
 * @typedef {{ ax: number, fx: number, px: number, ay: number, fy: number, py: number }} WellPath
 */

/** @type {readonly SwarmSpec[]} */
const SWARM_SPECS = [
    {
        name: 'Cyan',
        tag: tag('SwarmCyan'),
        rgb: [40, 170, 255],
        kx: 1.2 ** 2,
        ky: 1.8 ** 2,
        speed: 260,
        path: { ax: 300, fx: 0.41, px: 3.5, ay: 140, fy: 0.53, py: 1 },
    },
    {
        name: 'Magenta',
        tag: tag('SwarmMagenta'),
        rgb: [255, 60, 190],
        kx: 1.6 ** 2,
        ky: 1.2 ** 2,
        speed: 260,
        path: { ax: 280, fx: 0.37, px: 0.5, ay: 150, fy: 0.47, py: 2.5 },
    },
    {
        name: 'Amber',
        tag: tag('SwarmAmber'),
        rgb: [255, 150, 30],
        kx: 1.0 ** 2,
        ky: 2.0 ** 2,
        speed: 230,
        path: { ax: 320, fx: 0.29, px: 5, ay: 160, fy: 0.61, py: 4 },
    },
    {
        name: 'Lime',
        tag: tag('SwarmLime'),
        rgb: [80, 255, 120],
        kx: 1.5 ** 2,
        ky: 1.5 ** 2,
        speed: 200,
        path: { ax: 250, fx: 0.45, px: 2, ay: 130, fy: 0.33, py: 0.3 },
    },
];

/**
 * Where a well is at time t (s).
 * @param {WellPath} path @param {number} t
 * @returns {[number, number]}
 */
function wellCentre(path, t) {
    return [WIDTH / 2 + path.ax * Math.sin(path.fx * t + path.px), HEIGHT / 2 + path.ay * Math.sin(path.fy * t + path.py)];
}

/** The colour a particle takes on as it hits walls: each hit moves it a step towards this. */
const HEAT = [255, 236, 200];
const HEAT_STEP = 0.45;

/** @param {number} r @param {number} g @param {number} b */
function pack(r, g, b) {
    return ((255 << 24) | (b << 16) | (g << 8) | r) >>> 0;
}

/**
 * A small seeded generator (mulberry32): the same seed gives the same run.
 * @param {number} seed
 */
function random32(seed) {
    let state = seed >>> 0;
    return () => {
        state = (state + 0x6d2b79f5) >>> 0;
        let t = state;
        t = Math.imul(t ^ (t >>> 15), t | 1);
        t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
        return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
}

/**
 * @typedef {object} ScenarioOptions
 * @property {number} count particles to keep alive
 * @property {number} emitRate particles that expire and respawn per tick, on average
 * @property {Mode} mode which flavour of the physics runs
 * @property {number} [seed]
 */

/**
 * Per-tick counters and timings of the latest tick (ms).
 * @typedef {object} TickReport
 * @property {number} motionMs forces, integration and ageing (the part the mode switches)
 * @property {number} collideMs wall bounces
 * @property {number} reactMs the heat reaction to the Bounce subscription
 * @property {number} emitMs despawning the expired, spawning and initialising newcomers
 * @property {number} expired particles whose lifetime ran out
 * @property {number} spawned particles spawned (respawns plus a raised count)
 * @property {number} bounced wall hits found by the collide step
 * @property {number} changed entities the Bounce subscription reported
 */

/**
 * The scenario: a world with the particle swarms and the systems that run them.
 */
export class Scenario {
    /**
     * @param {World} world an empty world
     * @param {ScenarioOptions} options
     */
    constructor(world, options) {
        this.world = world;
        /** @type {Mode} */
        this.mode = options.mode;
        this.count = options.count;
        this.emitRate = options.emitRate;
        this.random = random32(options.seed ?? 0x7e55e4a);
        /** Simulated seconds. */
        this.time = 0;
        this.swarms = SWARM_SPECS.map((spec) => {
            /** Everything the motion step touches, in this swarm only. */
            const all = [Position, Velocity, Lifetime, spec.tag];
            return {
                spec,
                color: pack(...spec.rgb),
                query: world.query({ all }),
                /** The same columns in JS; `writes` marks them like the kernels do. */
                jsQuery: world.query({ all, writes: [Position, Velocity, Lifetime] }),
                /**
                 * Newcomers only (an `added` filter): their random start values are set here.
                 * It watches Color, not Lifetime: a watched component pays for change marks,
                 * and Lifetime changes on every row every tick while Color rarely does.
                 */
                fresh: world.query({ added: [Color], all }),
                live: 0,
                target: 0,
                expired: 0,
                /** The expired particles of this tick, by handle (grown as needed). */
                expiredList: new Uint32Array(1024),
                centre: wellCentre(spec.path, 0),
            };
        });
        /** The bounce step's query: every particle. */
        this.walls = world.query({ all: [Position, Velocity, Bounce] });
        /** Rows of the current chunk found outside the walls (grown as needed). */
        this.outsideRows = new Uint32Array(4096);
        /** Rendering reads these two columns of every particle. */
        this.visible = world.query({ all: [Position, Color] });
        /** Wall hits since the last tick: drained every tick by the heat reaction. */
        this.hits = world.subscribe({ changed: [Bounce], all: [Color, Position] });
        /** Where the particles the subscription reported are: x, y pairs (drawn as sparks). */
        this.sparks = new Float32Array(2048);
        this.sparkCount = 0;
        /** Mean lifetime (s) the current lifetimes were drawn for. */
        this.meanLife = this.lifeFor(this.count, this.emitRate);
        /** @type {TickReport} */
        this.report = {
            motionMs: 0,
            collideMs: 0,
            reactMs: 0,
            emitMs: 0,
            expired: 0,
            spawned: 0,
            bounced: 0,
            changed: 0,
        };
        this.retarget();
    }

    /**
     * Mean lifetime giving `emitRate` expiries per tick in a population of `count`.
     * @param {number} count @param {number} emitRate
     */
    lifeFor(count, emitRate) {
        return Math.max(1, count / Math.max(1, emitRate)) * DT;
    }

    /**
     * Changes the population, rate or mode; takes effect in the next tick. Lifetimes left are
     * rescaled (with the scale kernel) so that the expiry rate follows at once.
     * @param {{ count?: number, emitRate?: number, mode?: Mode }} changes
     */
    configure(changes) {
        if (changes.mode !== undefined) this.mode = changes.mode;
        if (changes.count !== undefined) this.count = changes.count;
        if (changes.emitRate !== undefined) this.emitRate = changes.emitRate;
        const meanLife = this.lifeFor(this.count, this.emitRate);
        if (meanLife !== this.meanLife) {
            for (const swarm of this.swarms) swarm.query.scale(Lifetime, 'seconds', meanLife / this.meanLife);
            this.meanLife = meanLife;
        }
        this.retarget();
    }

    /** Splits the target count among the swarms. */
    retarget() {
        const n = this.swarms.length;
        this.swarms.forEach((swarm, i) => {
            swarm.target = Math.floor(this.count / n) + (i < this.count % n ? 1 : 0);
        });
    }

    /** One tick: motion, walls, the heat reaction, expiry and respawn; then `world.tick()`. */
    tick() {
        const report = this.report;
        this.time += DT;
        for (const swarm of this.swarms) swarm.centre = wellCentre(swarm.spec.path, this.time);

        // Each step's time: ms since the previous lap.
        let last = performance.now();
        const lap = () => {
            const now = performance.now();
            const ms = now - last;
            last = now;
            return ms;
        };
        report.expired = this.mode === 'wasm' ? this.motionKernels() : this.motionJs();
        report.motionMs = lap();
        report.bounced = this.collide();
        report.collideMs = lap();
        report.changed = this.react();
        report.reactMs = lap();
        report.spawned = this.emit();
        this.world.tick();
        report.emitMs = lap();
        return report;
    }

    /**
     * Motion in wasm: per swarm, seven kernel calls, each one SIMD pass over a column.
     * @returns {number} particles expired
     */
    motionKernels() {
        let expired = 0;
        for (const swarm of this.swarms) {
            const { query, spec } = swarm;
            const [cx, cy] = swarm.centre;
            // The spring towards the well's centre: v += (centre - p) k dt.
            query.addScaled(Velocity, 'x', Position, 'x', -spec.kx * DT);
            query.offset(Velocity, 'x', spec.kx * cx * DT);
            query.addScaled(Velocity, 'y', Position, 'y', -spec.ky * DT);
            query.offset(Velocity, 'y', spec.ky * cy * DT);
            // Semi-implicit Euler: positions move with the new velocities.
            query.addScaled(Position, 'x', Velocity, 'x', DT);
            query.addScaled(Position, 'y', Velocity, 'y', DT);
            const gone = query.countdown(Lifetime, 'seconds', DT);
            swarm.expired = gone.length;
            if (gone.length) this.world.despawnMany(gone);
            expired += gone.length;
        }
        return expired;
    }

    /**
     * Motion in JS: the same math as the kernels, fused into one loop per chunk.
     * @returns {number} particles expired
     */
    motionJs() {
        let expired = 0;
        for (const swarm of this.swarms) {
            const { spec } = swarm;
            const [cx, cy] = swarm.centre;
            const ax = -spec.kx * DT,
                bx = spec.kx * cx * DT;
            const ay = -spec.ky * DT,
                by = spec.ky * cy * DT;
            let list = swarm.expiredList;
            let gone = 0;
            for (const chunk of swarm.jsQuery) {
                const px = chunk.column(Position, 'x'),
                    py = chunk.column(Position, 'y');
                const vx = chunk.column(Velocity, 'x'),
                    vy = chunk.column(Velocity, 'y');
                const life = chunk.column(Lifetime, 'seconds');
                const n = chunk.count;
                for (let i = 0; i < n; i++) {
                    const nvx = vx[i] + px[i] * ax + bx;
                    const nvy = vy[i] + py[i] * ay + by;
                    vx[i] = nvx;
                    vy[i] = nvy;
                    px[i] += nvx * DT;
                    py[i] += nvy * DT;
                    const before = life[i];
                    life[i] = before - DT;
                    // Compared as stored (f32), as the countdown kernel does.
                    if (before > 0 && life[i] <= 0) {
                        if (gone === list.length) list = grow(list, 2 * gone);
                        list[gone++] = chunk.entities[i];
                    }
                }
            }
            swarm.expiredList = list;
            swarm.expired = gone;
            if (gone) this.world.despawnMany(list.subarray(0, gone));
            expired += gone;
        }
        return expired;
    }

    /**
     * Wall bounces (both modes): reflect, lose a little speed, count the hit and mark Bounce
     * changed for that row only. Position and Velocity were marked changed for every row by
     * the motion step in this same tick, so the rewrites here need no marks of their own.
     * @returns {number} wall hits
     */
    collide() {
        let hits = 0;
        for (const chunk of this.walls) {
            const px = chunk.column(Position, 'x'),
                py = chunk.column(Position, 'y');
            // The scan is a tight loop of its own; the few rows outside are handled after it.
            if (this.outsideRows.length < chunk.count) this.outsideRows = new Uint32Array(chunk.count);
            const rows = this.outsideRows;
            const outside = findOutside(px, py, chunk.count, rows);
            if (outside === 0) continue;
            const vx = chunk.column(Velocity, 'x'),
                vy = chunk.column(Velocity, 'y');
            const count = chunk.column(Bounce, 'count');
            for (let j = 0; j < outside; j++) {
                const i = rows[j];
                const x = px[i],
                    y = py[i];
                if (x < 0 || x > WIDTH) {
                    px[i] = Math.min(WIDTH, Math.max(0, x < 0 ? -x : 2 * WIDTH - x));
                    vx[i] = -vx[i] * RESTITUTION;
                }
                if (y < 0 || y > HEIGHT) {
                    py[i] = Math.min(HEIGHT, Math.max(0, y < 0 ? -y : 2 * HEIGHT - y));
                    vy[i] = -vy[i] * RESTITUTION;
                }
                if (count[i] < 255) count[i]++;
                chunk.markChanged(Bounce, i);
            }
            hits += outside;
        }
        return hits;
    }

    /**
     * The heat reaction: the Bounce subscription hands over exactly the particles that hit a
     * wall since the last tick, chunk by chunk; each takes a step towards white-hot and leaves
     * a spark where it is. It costs what bounced, never a scan of the population.
     * @returns {number} entities the subscription reported
     */
    react() {
        let changed = 0;
        let sparks = this.sparks;
        for (const chunk of this.hits) {
            const colors = chunk.column(Color, 'rgba');
            const xs = chunk.column(Position, 'x'),
                ys = chunk.column(Position, 'y');
            const rows = chunk.rows;
            const needed = 2 * (changed + rows.length);
            if (sparks.length < needed) sparks = grow(sparks, needed);
            for (let j = 0; j < rows.length; j++) {
                const row = rows[j];
                colors[row] = heatUp(colors[row]);
                chunk.markChanged(Color, row);
                sparks[2 * (changed + j)] = xs[row];
                sparks[2 * (changed + j) + 1] = ys[row];
            }
            changed += rows.length;
        }
        this.sparks = sparks;
        this.sparkCount = changed;
        return changed;
    }

    /**
     * Keeps every swarm at its target: despawns a surplus (spread over the swarm), spawns a
     * deficit in one batch at the well, then gives the newcomers their random velocities,
     * lifetimes and shades through an `added` query, which visits only them.
     * @returns {number} particles spawned
     */
    emit() {
        const world = this.world;
        let spawned = 0;
        for (const swarm of this.swarms) {
            const deficit = swarm.target - (swarm.live - swarm.expired);
            swarm.live = swarm.target;
            if (deficit < 0) {
                world.despawnMany(spread(swarm.query.entities(), -deficit));
            } else if (deficit > 0) {
                const [x, y] = swarm.centre;
                world.spawnMany(deficit, Position({ x, y }), Velocity, Lifetime, Color({ rgba: swarm.color }), Bounce, swarm.spec.tag);
                spawned += deficit;
            }
            // Respawns get a whole life; particles added by a raised count get what is left
            // of one in a population that has been running for a while.
            const renewShare = deficit > 0 ? Math.min(1, swarm.expired / deficit) : 1;
            this.initialise(swarm, renewShare);
            swarm.expired = 0;
        }
        return spawned;
    }

    /**
     * Random launch velocities, lifetimes and shades for a swarm's newcomers.
     * @param {Scenario['swarms'][number]} swarm
     * @param {number} renewShare the share of newcomers that get a whole life
     */
    initialise(swarm, renewShare) {
        const random = this.random;
        const mean = this.meanLife;
        const { speed, kx, ky } = swarm.spec;
        const wx = Math.sqrt(kx),
            wy = Math.sqrt(ky);
        const [r, g, b] = swarm.spec.rgb;
        for (const chunk of swarm.fresh) {
            const px = chunk.column(Position, 'x'),
                py = chunk.column(Position, 'y');
            const vx = chunk.column(Velocity, 'x'),
                vy = chunk.column(Velocity, 'y');
            const life = chunk.column(Lifetime, 'seconds');
            const colors = chunk.column(Color, 'rgba');
            const rows = chunk.rows;
            for (let j = 0; j < rows.length; j++) {
                const row = rows[j];
                const angle = random() * 2 * Math.PI;
                const v = speed * (0.15 + 0.85 * Math.sqrt(random()));
                const launchX = v * Math.cos(angle),
                    launchY = v * Math.sin(angle);
                if (random() < renewShare) {
                    // A respawn: launched from the well now, with a whole life.
                    life[row] = mean * (0.5 + random());
                    vx[row] = launchX;
                    vy[row] = launchY;
                    px[row] += (random() - 0.5) * 6;
                    py[row] += (random() - 0.5) * 6;
                } else {
                    // Added by a raised count: where a particle launched `age` seconds ago would
                    // be now, with the rest of a life, so that the swarm looks settled at once.
                    life[row] = residualLife(mean, random());
                    const age = random() * 120;
                    px[row] += (launchX / wx) * Math.sin(wx * age);
                    py[row] += (launchY / wy) * Math.sin(wy * age);
                    vx[row] = launchX * Math.cos(wx * age);
                    vy[row] = launchY * Math.cos(wy * age);
                }
                const shade = 0.6 + 0.4 * random();
                colors[row] = pack((r * shade) | 0, (g * shade) | 0, (b * shade) | 0);
            }
        }
    }

    /** Closes the queries and the subscription (the world stays). */
    close() {
        for (const swarm of this.swarms) {
            swarm.query.close();
            swarm.jsQuery.close();
            swarm.fresh.close();
        }
        this.walls.close();
        this.visible.close();
        this.hits.close();
    }
}

/**
 * Time left to a particle picked at random in a steady population whose lifetimes are uniform
 * in [mean/2, 3 mean/2]: with these, a freshly filled population expires at the steady rate
 * from the first tick on.
 * @param {number} mean @param {number} u uniform in [0, 1)
 */
function residualLife(mean, u) {
    if (u < 0.5) return mean * (u + 1e-6);
    return mean * (1.5 - Math.sqrt(2 * (1 - u)));
}

/**
 * One step of a particle's colour towards white-hot.
 * @param {number} rgba
 */
function heatUp(rgba) {
    const r = rgba & 255,
        g = (rgba >>> 8) & 255,
        b = (rgba >>> 16) & 255;
    return pack((r + (HEAT[0] - r) * HEAT_STEP) | 0, (g + (HEAT[1] - g) * HEAT_STEP) | 0, (b + (HEAT[2] - b) * HEAT_STEP) | 0);
}

/**
 * Lists the rows whose position is outside the walls.
 * @param {Float32Array} px @param {Float32Array} py @param {number} n rows to look at
 * @param {Uint32Array} rows where to list them (room for n)
 * @returns {number} rows listed
 */
function findOutside(px, py, n, rows) {
    let listed = 0;
    for (let i = 0; i < n; i++) {
        const x = px[i],
            y = py[i];
        if (x < 0 || x > WIDTH || y < 0 || y > HEIGHT) rows[listed++] = i;
    }
    return listed;
}

/**
 * `count` handles picked evenly across `entities`.
 * @param {Uint32Array} entities @param {number} count
 */
function spread(entities, count) {
    const picked = new Uint32Array(count);
    const stride = entities.length / count;
    for (let i = 0; i < count; i++) picked[i] = entities[Math.floor(i * stride)];
    return picked;
}

/**
 * A copy of a typed array with room for at least `length` elements.
 * @template {Uint32Array | Float32Array} T
 * @param {T} list @param {number} length
 * @returns {T}
 */
function grow(list, length) {
    const size = Math.max(length, list.length * 2);
    const bigger = list instanceof Uint32Array ? new Uint32Array(size) : new Float32Array(size);
    bigger.set(list);
    return /** @type {T} */ (bigger);
}
