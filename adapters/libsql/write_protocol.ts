/**
 * How errand's write transactions begin and end on one kind of client: the
 * one piece of the write-lock protocol (connection.ts) that differs between
 * `@libsql/client`'s pool of connections (pooled_writes.ts) and a
 * synchronous driver's single connection (adapters/sqlite/sync_writes.ts).
 *
 * @module
 */
import type { Transaction } from "./driver.ts";

/** A statement that writes nothing but takes SQLite's write lock (waiting up to the busy timeout). */
export const TAKE_WRITE_LOCK = "DELETE FROM errand_jobs WHERE 0";

/**
 * How long SQLite itself waits for another writer per try; tries repeat up
 * to `busyTimeout`. The wait blocks the event loop, yet it must not be short:
 * a short one leaves processes sharing a file to JavaScript-side retries,
 * which stall them, where 1 s lets SQLite's own wait do the work.
 */
export const NATIVE_BUSY_WAIT_MS = 1_000;

/** A write transaction errand opened, holding SQLite's write lock. */
export interface OpenWrite {
  /** Where its statements run. */
  readonly tx: Transaction;
  /** Commits, and puts back the application's settings on the connection. */
  commit(): Promise<void>;
  /**
   * Ends it: rolls back what was not committed and puts back the
   * application's settings. Called once, after `commit()` too.
   */
  close(): Promise<void>;
}

/** How errand opens its write transactions on one kind of client. */
export interface WriteProtocol {
  /**
   * Opens a write transaction with SQLite's native busy wait of
   * {@link NATIVE_BUSY_WAIT_MS} and takes the write lock by `takeLock`; its
   * commit is synced at errand's `synchronous` level when `synced`, not at
   * all otherwise. A failure (the driver's busy error among them) is thrown
   * as the driver's, with nothing left open.
   */
  open(takeLock: string, synced: boolean): Promise<OpenWrite>;
  /** Runs a script of writing statements in a write transaction of its own, synced. */
  script(script: string): Promise<void>;
  /** The application's transaction `tx` as errand's statements run in it on this kind of client. */
  join(tx: Transaction): Promise<Transaction>;
}
