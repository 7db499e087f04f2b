/**
 * The store seam, for writing an adapter of your own (see `adapters/` for
 * two): the {@link Store} interface in its slices, one `XxxParams` per
 * operation, and the records that cross it.
 *
 * **Unstable**: this subpath is for adapter authors and may change in any
 * release before 1.0. {@link storeConformance} gives the operation-level
 * cases, one file per slice, to run against an adapter with any test
 * framework; an adapter is ready when they pass and errand's behavioural
 * suite (`tests/conformance/`) does.
 *
 * @example A store's type as createErrand reads it
 * ```ts
 * import type { StoreFor } from "@errand/errand/store";
 * type MyTransaction = { execute(sql: string): Promise<void> };
 * function describe(store: StoreFor<MyTransaction>): string {
 *   return store.namespace;
 * }
 * ```
 *
 * @module
 */
export type * from "./store.ts";
export type * from "./cluster.ts";
export type * from "./consumers.ts";
export type * from "./flow.ts";
export type * from "./health.ts";
export type * from "./inserts.ts";
export type * from "./jobs.ts";
export type * from "./logs.ts";
export type * from "./moves.ts";
export type * from "./partitions.ts";
export type * from "./runs.ts";
export type * from "./schedules.ts";
export type * from "./schema.ts";
export type * from "./steps.ts";
export type * from "./watch.ts";
export type * from "./records.ts";
export type { RunError, RunRecord } from "../base/types.ts";
export { storeConformance } from "./conformance/mod.ts";
export type { StoreCase, StoreCaseEnv, StoreCaseSkip, StoreOperation, StoreSlice } from "./conformance/mod.ts";
