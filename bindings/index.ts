/**
 * tessera: an archetype + chunk Entity Component System whose core is C compiled to
 * WebAssembly. Change detection costs what changed, not what exists.
 *
 * @example
 * import { createWorld, component, tag } from 'tessera-ecs';
 * const Position = component('Position', { x: 'f32', y: 'f32' });
 * const Velocity = component('Velocity', { x: 'f32', y: 'f32' });
 * const world = await createWorld();
 * world.spawn(Position({ x: 0, y: 0 }), Velocity({ x: 1, y: 0 }));
 * const moving = world.query({ all: [Position, Velocity], writes: [Position] });
 * for (const chunk of moving) {
 *     const px = chunk.column(Position, 'x'), vx = chunk.column(Velocity, 'x');
 *     for (let i = 0, n = chunk.count; i < n; i++) px[i] += vx[i];
 * }
 *
 * @module
 */
export { createWorld, init, TesseraModule, type CreateWorldOptions } from './module.js';
export { World, type Entity, type WorldOptions, type WorldStats } from './world.js';
export { component, tag, relation, ChildOf, isComponent, isRelation, isPair } from './definitions.js';
export {
    limits,
    type Component,
    type ComponentInit,
    type ComponentColumns,
    type ComponentItem,
    type ChangeDetection,
    type ComponentOptions,
    type Storage,
    type Relation,
    type RelationOptions,
    type Pair,
    type Tag,
    type Schema,
    type FieldType,
    type FieldSpec,
    type FieldInfo,
    type FieldName,
    type FloatFieldName,
    type FieldLike,
    type ColumnOf,
    type ColumnArray,
    type TypedArrayOf,
    type Values,
    type ValuesInput,
    type FieldValue,
    type FieldInput,
    type ColumnInput,
    type ColumnsInput,
    type ScalarOf,
} from './schema.js';
export { Query, type QueryDesc, type Term } from './query.js';
export { Chunk } from './chunk.js';
export { ChunkIterator } from './chunk-iterator.js';
export { Subscription, Changes, type SubscriptionDesc, type PairEvent, type PairEventKind } from './subscription.js';
export { Replicator, Peer, type ReplicatorOptions, type PeerOptions, type Delta } from './replicate.js';
export { ReplicationServer, ReplicationClient, Connection, MESSAGE, type Transport } from './session.js';
export type { Stage, System, SystemDesc } from './system.js';
export { TesseraError, describeEntity, type ErrorCode, type ErrorContext } from './errors.js';
export type { LoadOptions, WasmBytes, WasmMemory } from './load.js';
export type { Field } from './access.js';
export type { CheckpointRange } from './rollback.js';
