/**
 * What a store case is: plain data naming the slice and operation it
 * checks, and a `run` that any test framework can call with a fresh
 * database. A case that needs what a store may lack (pushed wake-ups, the
 * application's transactions) resolves to a {@link StoreCaseSkip} saying why.
 *
 * @module
 */
import type { Store } from "../store.ts";

/** The slices of the seam, one file of cases each (and one file per slice in each adapter). */
export type StoreSlice =
  | "cluster"
  | "consumers"
  | "flow"
  | "health"
  | "inserts"
  | "jobs"
  | "logs"
  | "moves"
  | "partitions"
  | "runs"
  | "schedules"
  | "schema"
  | "steps"
  | "watch";

/** An operation of the {@link Store}, by name. */
export type StoreOperation = Exclude<keyof Store, "namespace" | "inTransaction">;

/** What a case runs against: one fresh, empty database, opened for this case alone. */
export interface StoreCaseEnv {
  /**
   * A store on the case's database in `namespace` ("default" when absent).
   * Stores of different namespaces share the database; the case brings the
   * schema up to date itself.
   */
  store(namespace?: string): Store;
  /**
   * Runs `fn` in an application transaction on the case's database: commits
   * when it resolves, rolls back when it throws, as the store's
   * `inTransaction` expects its `tx`. Leave it out when the store takes none;
   * the cases that need it then skip.
   */
  transaction?<T>(fn: (tx: unknown) => Promise<T>): Promise<T>;
}

/** What a case that skipped resolves to. */
export interface StoreCaseSkip {
  /** Why the case did not run, e.g. the store pushes no wake-ups. */
  readonly skipped: string;
}

/** One operation-level check of a store. */
export interface StoreCase {
  /** The slice the operation belongs to. */
  readonly slice: StoreSlice;
  /** The operation checked. */
  readonly operation: StoreOperation;
  /** What it checks, as a test name: `operation() does X when Y`. */
  readonly name: string;
  /** Runs the case: resolves when the store keeps the contract, throws an `Error` saying how it does not, or skips. */
  run(env: StoreCaseEnv): Promise<StoreCaseSkip | void>;
}

/** Cases of one slice, declared as `[operation, name, run]`. */
export function cases(
  slice: StoreSlice,
  list: readonly (readonly [StoreOperation, string, StoreCase["run"]])[],
): StoreCase[] {
  return list.map(([operation, name, run]) => ({ slice, operation, name, run }));
}

/** A skip with its reason. */
export function skip(reason: string): StoreCaseSkip {
  return { skipped: reason };
}
