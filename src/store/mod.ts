/**
 * The store seam, for writing an adapter of your own (see `adapters/` for
 * two): the {@link Store} interface in its role slices, one `XxxParams` per
 * operation, and the records that cross it.
 *
 * **Unstable**: this subpath is for adapter authors and may change in any
 * release before 1.0. An adapter is ready when the conformance suite
 * (`tests/conformance/`) passes against it.
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
export type * from "./records.ts";
export type * from "./moves.ts";
export type { RunError, RunRecord } from "../base/types.ts";
