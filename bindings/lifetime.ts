/**
 * Lifetimes of what holds memory in the C core. `world.destroy()` frees a world at once; a
 * `FinalizationRegistry` frees a world the program dropped without destroying it: a backstop,
 * which runs late (after a garbage collection, if ever). Its held value, the world's
 * {@link WorldLink}, never references the world (that would keep it alive); `destroy()`
 * unregisters before it frees, so nothing is freed twice.
 *
 * @module
 */
import type { Heap } from './heap.js';
import type { Pointer } from './load.js';

/**
 * What a world's finalizer needs. It references no JS object of the world, so holding it keeps
 * nothing alive.
 */
export class WorldLink {
    /** The `tes_world_t *`; 0 once the world was destroyed. */
    pointer: Pointer;
    readonly heap: Heap;
    /**
     * Iteration blocks lent to the world's live iterations: they go back to the heap's pool
     * when the world goes, live iterations or not.
     */
    readonly lentBlocks: Pointer[] = [];

    constructor(heap: Heap, pointer: Pointer) {
        this.heap = heap;
        this.pointer = pointer;
    }

    /** Frees the C world and gives its lent iteration blocks back. Idempotent. */
    destroy(): void {
        if (this.pointer === 0) return;
        this.heap.exports.tes_world_destroy(this.pointer);
        this.pointer = 0;
        for (const block of this.lentBlocks) this.heap.returnIterBlock(block);
        this.lentBlocks.length = 0;
    }
}

const worlds = new FinalizationRegistry<WorldLink>((link) => link.destroy());

/** Frees the world's C memory if the program drops it without `destroy()`. */
export function watchWorld(world: object, link: WorldLink): void {
    worlds.register(world, link, world);
}

/** The world was destroyed: its finalizer must not run. */
export function forgetWorld(world: object): void {
    worlds.unregister(world);
}
