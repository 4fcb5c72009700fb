// @ts-check
// Drawing up to a million particles on a 2D canvas. Every path plots the particles with one
// JS loop over the chunks' Position and Color columns (typed arrays over wasm memory) into a
// Uint32Array of pixels, then hands it to the canvas with one putImageData; they differ in
// how particles blend and how trails fade (see the README for the measurements):
//
// - 'add+lighter' (the default): saturating additive blend per particle in JS into a buffer
//   cleared every frame; the canvas fades the previous frames (a translucent fillRect) and
//   adds the new one on top ('lighter'). Dense regions glow; Skia does the per-pixel fading.
// - 'add+js-fade': the same additive plot into a buffer that persists, faded in JS, and put
//   straight onto the visible canvas: no compositing at all, but a fade pass over every pixel.
// - 'store+lighter': one plain store per particle (the last particle in a pixel wins), then
//   like 'add+lighter'. The cheapest plot; dense regions do not glow.
import { Color, HEIGHT, Position, WIDTH } from './scenario.js';

/** @typedef {'add+lighter' | 'add+js-fade' | 'store+lighter'} RenderPath */

/** @type {readonly RenderPath[]} */
export const RENDER_PATHS = ['add+lighter', 'add+js-fade', 'store+lighter'];

/** What fades the previous frames in the canvas paths: 16% of the way to black per frame. */
const FADE_STYLE = 'rgba(0, 0, 0, 0.16)';

export class Renderer {
    /**
     * @param {HTMLCanvasElement | OffscreenCanvas} canvas sized WIDTH x HEIGHT (an
     *   OffscreenCanvas in the mirror's worker, demo/replica-worker.js)
     * @param {RenderPath} path
     */
    constructor(canvas, path) {
        canvas.width = WIDTH;
        canvas.height = HEIGHT;
        const context = /** @type {CanvasRenderingContext2D | OffscreenCanvasRenderingContext2D | null} */ (
            canvas.getContext('2d', { alpha: false })
        );
        if (!context) throw new Error('this browser has no 2D canvas');
        this.context = context;
        this.image = new ImageData(WIDTH, HEIGHT);
        /** The image's pixels, one u32 (0xAABBGGRR) each. */
        this.pixels = new Uint32Array(this.image.data.buffer);
        // A worker has no document; the page keeps the element it was measured with.
        this.layer = typeof document === 'undefined' ? new OffscreenCanvas(WIDTH, HEIGHT) : document.createElement('canvas');
        this.layer.width = WIDTH;
        this.layer.height = HEIGHT;
        const layerContext = /** @type {CanvasRenderingContext2D | OffscreenCanvasRenderingContext2D | null} */ (
            this.layer.getContext('2d')
        );
        if (!layerContext) throw new Error('this browser has no 2D canvas');
        this.layerContext = layerContext;
        /** @type {RenderPath} */
        this.path = path;
        this.setPath(path);
    }

    /** @param {RenderPath} path */
    setPath(path) {
        this.path = path;
        this.context.globalCompositeOperation = 'source-over';
        this.context.fillStyle = '#000';
        this.context.fillRect(0, 0, WIDTH, HEIGHT);
        // The JS-faded buffer persists from frame to frame, opaque black.
        this.pixels.fill(path === 'add+js-fade' ? 0xff000000 : 0);
    }

    /**
     * Draws one frame of the particles the query visits, and the sparks of this tick's wall
     * hits.
     * @param {import('../dist/index.js').Query} visible a query over Position and Color
     * @param {number} count particles alive (sets the exposure)
     * @param {Float32Array} sparks x, y pairs
     * @param {number} sparkCount
     */
    draw(visible, count, sparks, sparkCount) {
        const pixels = this.pixels;
        const path = this.path;
        if (path === 'add+js-fade') fadePixels(pixels);
        else pixels.fill(0);
        // Exposure: the more particles, the dimmer each one, so dense swarms glow instead of
        // clipping to white. A per-byte shift of the packed colour, alpha kept at 255.
        // A stored particle does not add up with its neighbours, only with its trail.
        const shift = Math.min(path === 'store+lighter' ? 2 : 6, exposureShift(count));
        const mask = ((0xff >>> shift) * 0x010101) | 0;
        for (const chunk of visible) {
            const xs = chunk.column(Position, 'x');
            const ys = chunk.column(Position, 'y');
            const colors = chunk.column(Color, 'rgba');
            if (path === 'store+lighter') plotStore(pixels, xs, ys, colors, chunk.count, shift, mask);
            else plotAdd(pixels, xs, ys, colors, chunk.count, shift, mask);
        }
        plotSparks(pixels, sparks, sparkCount);
        const context = this.context;
        if (path === 'add+js-fade') {
            context.putImageData(this.image, 0, 0);
            return;
        }
        this.layerContext.putImageData(this.image, 0, 0);
        context.globalCompositeOperation = 'source-over';
        context.fillStyle = FADE_STYLE;
        context.fillRect(0, 0, WIDTH, HEIGHT);
        context.globalCompositeOperation = 'lighter';
        context.drawImage(this.layer, 0, 0);
    }
}

/**
 * The per-byte right shift that dims particles as their number grows.
 * @param {number} count
 */
function exposureShift(count) {
    return Math.max(0, Math.round(Math.log2(count / 50_000)) + 1);
}

/**
 * The byte-wise sum of two packed colours, each byte saturating at 255: four adds in one
 * 32-bit add (the low 7 bits of each byte, then the top bits by xor), and bytes that carried
 * out set to 255.
 * @param {number} a @param {number} b
 */
function addColors(a, b) {
    const sum = ((a & 0x7f7f7f7f) + (b & 0x7f7f7f7f)) ^ ((a ^ b) & 0x80808080);
    const carry = ((a & b) | ((a | b) & ~sum)) & 0x80808080;
    return sum | (carry - (carry >>> 7)) | carry;
}

/** A spark: a bright warm centre and a dimmer cross around it. */
const SPARK_CENTRE = 0xffc0e8ff;
const SPARK_ARM = 0xff3060a0;

/**
 * Draws a spark at each position.
 * @param {Uint32Array} pixels
 * @param {Float32Array} sparks x, y pairs
 * @param {number} n
 */
function plotSparks(pixels, sparks, n) {
    for (let i = 0; i < n; i++) {
        // Inside by one pixel, so that the arms stay in the image.
        const x = Math.min(WIDTH - 2, Math.max(1, sparks[2 * i] | 0));
        const y = Math.min(HEIGHT - 2, Math.max(1, sparks[2 * i + 1] | 0));
        const at = y * WIDTH + x;
        pixels[at] = addColors(pixels[at], SPARK_CENTRE);
        pixels[at - 1] = addColors(pixels[at - 1], SPARK_ARM);
        pixels[at + 1] = addColors(pixels[at + 1], SPARK_ARM);
        pixels[at - WIDTH] = addColors(pixels[at - WIDTH], SPARK_ARM);
        pixels[at + WIDTH] = addColors(pixels[at + WIDTH], SPARK_ARM);
    }
}

/**
 * Adds each particle's (dimmed) colour to its pixel, per byte, saturating at 255.
 * @param {Uint32Array} pixels
 * @param {Float32Array} xs
 * @param {Float32Array} ys
 * @param {Uint32Array} colors
 * @param {number} n
 * @param {number} shift
 * @param {number} mask the bytes' bits left after the shift (alpha excluded)
 */
function plotAdd(pixels, xs, ys, colors, n, shift, mask) {
    for (let i = 0; i < n; i++) {
        const x = xs[i] | 0,
            y = ys[i] | 0;
        if (x >>> 0 >= WIDTH || y >>> 0 >= HEIGHT) continue;
        const at = y * WIDTH + x;
        pixels[at] = addColors(pixels[at], ((colors[i] >>> shift) & mask) | 0xff000000);
    }
}

/**
 * Stores each particle's (dimmed) colour in its pixel.
 * @param {Uint32Array} pixels
 * @param {Float32Array} xs
 * @param {Float32Array} ys
 * @param {Uint32Array} colors
 * @param {number} n
 * @param {number} shift
 * @param {number} mask
 */
function plotStore(pixels, xs, ys, colors, n, shift, mask) {
    for (let i = 0; i < n; i++) {
        const x = xs[i] | 0,
            y = ys[i] | 0;
        if (x >>> 0 >= WIDTH || y >>> 0 >= HEIGHT) continue;
        pixels[y * WIDTH + x] = ((colors[i] >>> shift) & mask) | 0xff000000;
    }
}

/**
 * Fades every pixel by about an eighth (and at least one step, so that trails end at black),
 * per byte, in one pass; alpha stays 255.
 * @param {Uint32Array} pixels
 */
function fadePixels(pixels) {
    for (let i = 0; i < pixels.length; i++) {
        const p = pixels[i];
        const rgb = p & 0xffffff;
        if (rgb === 0) continue;
        // 0x80 in each byte that is not zero: the 1 subtracted from it.
        const nonzero = (((rgb & 0x7f7f7f) + 0x7f7f7f) | rgb) & 0x808080;
        pixels[i] = p - (((p >>> 3) & 0x1f1f1f) | (nonzero >>> 7));
    }
}
