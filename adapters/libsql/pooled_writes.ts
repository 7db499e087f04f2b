/**
 * errand's write transactions on `@libsql/client`'s pool of connections (an
 * embedded file or `:memory:`): the busy wait and the `synchronous` level
 * go on the connection a transaction owns, and the application's own come
 * back before it returns to the pool, where the application's next call may
 * take it.
 *
 * `synchronous` cannot change inside a transaction, so the empty deferred
 * transaction the driver began is committed first and another begun. Every
 * step runs as a script, which prepares no statement object (one would hold
 * native memory until garbage collection).
 *
 * The write lock is taken by a script statement inside a deferred
 * transaction, not by `BEGIN IMMEDIATE`: when `BEGIN IMMEDIATE` fails with
 * SQLITE_BUSY, @libsql/client leaves that statement active on the
 * connection until it is garbage-collected, and every later commit on the
 * connection fails ("SQL statements in progress", then
 * SQLITE_BUSY_SNAPSHOT). A script statement is finalized even when it fails.
 *
 * @module
 */
import type { Client, Transaction } from "./driver.ts";
import { NATIVE_BUSY_WAIT_MS, type OpenWrite, TAKE_WRITE_LOCK, type WriteProtocol } from "./write_protocol.ts";

/** {@link WriteProtocol} on a libSQL client's pool of connections. */
export class PooledWrites implements WriteProtocol {
  readonly #client: Client;
  /** Set on the connection before each write: the busy wait and errand's `synchronous` level. */
  readonly #pragmas: string;
  /** {@link PooledWrites.#pragmas} for claims and lease renewals: no sync of the commit. */
  readonly #unsyncedPragmas: string;
  /**
   * The statements that put back the application's own busy wait and
   * `synchronous` level, as its client's connections had them before errand
   * first wrote (read then).
   */
  #restore: Promise<string> | undefined;

  /** On `client`, with errand's `synchronous` level. */
  constructor(client: Client, synchronous: "full" | "normal") {
    this.#client = client;
    const pragmas = (level: string) => `PRAGMA busy_timeout = ${NATIVE_BUSY_WAIT_MS}; PRAGMA synchronous = ${level};`;
    this.#pragmas = pragmas(synchronous.toUpperCase());
    this.#unsyncedPragmas = pragmas("NORMAL");
  }

  async open(takeLock: string, synced: boolean): Promise<OpenWrite> {
    const restore = await this.#applicationPragmas();
    const tx = await this.#client.transaction("deferred");
    let committed = false;
    const close = async () => {
      // Closing rolls back what is left. After a failure the application's settings cannot go back through
      // `tx`: the driver runs nothing on a transaction that has ended, and a rollback (or SQLite itself, on
      // a busy lock) ends it. The client's pool lends the connection it got back last first, so the next
      // call, made at once, puts them back on that same connection.
      tx.close();
      if (!committed) await this.#client.executeMultiple(restore).catch(() => undefined);
    };
    try {
      await tx.executeMultiple(`COMMIT; ${synced ? this.#pragmas : this.#unsyncedPragmas} BEGIN; ${takeLock};`);
    } catch (err) {
      await close();
      throw err;
    }
    return {
      tx,
      commit: async () => {
        await tx.executeMultiple(`COMMIT; ${restore}`);
        committed = true;
      },
      close,
    };
  }

  async script(script: string): Promise<void> {
    const restore = await this.#applicationPragmas();
    const tx: Transaction = await this.#client.transaction("deferred");
    try {
      await tx.executeMultiple(`COMMIT; ${this.#pragmas} BEGIN; ${TAKE_WRITE_LOCK}; ${script} COMMIT; ${restore}`);
    } catch (err) {
      tx.close();
      await this.#client.executeMultiple(restore).catch(() => undefined);
      throw err;
    }
    tx.close();
  }

  join(tx: Transaction): Promise<Transaction> {
    return Promise.resolve(tx);
  }

  /** See {@link PooledWrites.#restore}. */
  #applicationPragmas(): Promise<string> {
    this.#restore ??= (async () => {
      const read = async (pragma: string) => Number((await this.#client.execute(`PRAGMA ${pragma}`)).rows[0]?.[0]);
      const [busy, synchronous] = [await read("busy_timeout"), await read("synchronous")];
      return `PRAGMA busy_timeout = ${busy}; PRAGMA synchronous = ${synchronous};`;
    })().catch(() => ""); // a remote database that refuses pragmas has nothing to put back
    return this.#restore;
  }
}
