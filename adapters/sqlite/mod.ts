/**
 * The SQLite store on a runtime's own synchronous driver: `node:sqlite`
 * (Node 22.5+, Deno), `bun:sqlite` (Bun) or the `libsql` package (Node 20+,
 * Deno, Bun). It speaks the same SQLite dialect as `libsqlStore()`, with the
 * same tables: one database file can be opened by either, from several
 * processes at once. Every statement is prepared once and reused.
 *
 * @example node:sqlite
 * ```ts
 * import { DatabaseSync } from "node:sqlite";
 * import { sqliteStore } from "@errand/errand/sqlite";
 * const store = sqliteStore(new DatabaseSync("errand.db"), { namespace: "app" });
 * ```
 *
 * @module
 */
import { type Duration, parseDuration } from "../../src/base/duration.ts";
import { ValidationError } from "../../src/base/errors.ts";
import { checkName, NAMESPACE_PATTERN } from "../../src/checks/names.ts";
import type { Transaction } from "../libsql/driver.ts";
import { composeLibsqlStore, type SqliteDialectStore } from "../libsql/store.ts";
import { type SqliteDatabase, SyncClient } from "./sync_client.ts";
import { SyncWrites } from "./sync_writes.ts";

export type { SqliteDatabase, SqliteStatement } from "./sync_client.ts";
export type { InStatement, InValue, ResultSet, Row } from "../libsql/driver.ts";

/**
 * A transaction of the store's database, as `store.transaction(fn)` hands it
 * to `fn`: pass it to errand's calls as `{ tx }`. Your own statements in it
 * run on the same database object, directly or through `tx.execute()`.
 */
export type SqliteTransaction = Transaction;

/** The SQLite store: errand's store on a synchronous driver's database, and write transactions for the application. */
export type SqliteStore = SqliteDialectStore<SqliteTransaction>;

/** Options of {@link sqliteStore}. */
export interface SqliteStoreOptions {
  /**
   * Isolates this pool from others sharing the database.
   * @default {"default"}
   */
  namespace?: string;
  /**
   * Create and upgrade errand's tables at start. With `false`, errand only
   * checks the schema version; apply `libsqlMigrationSql()` (from
   * `errand/libsql`: both stores share the schema) yourself.
   * @default {true}
   */
  migrate?: boolean;
  /**
   * How long a write waits for another process's writer before it fails.
   * @default {"30s"}
   */
  busyTimeout?: Duration;
  /**
   * SQLite's `synchronous` level for errand's writes. `"full"` syncs the WAL
   * on every commit, so a committed job survives power loss; `"normal"` skips
   * that sync (still safe against process crashes and corruption; the last
   * commits may be lost on power loss) and is several times faster.
   * @default {"full"}
   */
  synchronous?: "full" | "normal";
}

/** One client per database object: every store on it takes turns with the others on its one connection. */
const clients = new WeakMap<SqliteDatabase, SyncClient>();

/**
 * Creates a store on a synchronous SQLite driver's database.
 *
 * The database object is one connection, and errand's transactions run on
 * it. Write to it yourself inside `store.transaction(fn)` (which errand's
 * writes take turns with), or open the file a second time for the
 * application's own writes: a statement run on the object while errand's
 * transaction is open would join that transaction. errand sets its busy
 * wait and `synchronous` level on the connection for its own transactions
 * and puts back the ones the connection had when errand first wrote.
 *
 * @param db A `DatabaseSync` of `node:sqlite`, a `Database` of `bun:sqlite`, or a `Database` of `libsql`.
 * @param options See {@link SqliteStoreOptions}.
 * @throws {ValidationError} When `db` is not such a database or an option is invalid.
 *
 * @example bun:sqlite
 * ```ts ignore
 * import { Database } from "bun:sqlite";
 * import { sqliteStore } from "@errand/errand/sqlite";
 * const store = sqliteStore(new Database("errand.db"));
 * ```
 *
 * @example libsql (Node 20 and later)
 * ```ts ignore
 * import Database from "libsql";
 * import { sqliteStore } from "@errand/errand/sqlite";
 * const store = sqliteStore(new Database("errand.db"));
 * ```
 */
export function sqliteStore(db: SqliteDatabase, options: SqliteStoreOptions = {}): SqliteStore {
  const candidate = db as Partial<SqliteDatabase> | null;
  if (typeof candidate?.prepare !== "function" || typeof candidate.exec !== "function") {
    throw new ValidationError(
      `sqliteStore() needs a synchronous SQLite database (new DatabaseSync(path) of "node:sqlite", new Database(path) of "bun:sqlite" or of "libsql"); for a @libsql/client client use libsqlStore()`,
    );
  }
  const synchronous = options.synchronous ?? "full";
  if (synchronous !== "full" && synchronous !== "normal") {
    throw new ValidationError(`Option "synchronous" must be "full" or "normal", got "${synchronous}"`);
  }
  let client = clients.get(db);
  if (!client) clients.set(db, client = new SyncClient(db));
  return composeLibsqlStore<SqliteTransaction>(client, {
    namespace: checkName("namespace", options.namespace ?? "default", NAMESPACE_PATTERN),
    migrate: options.migrate ?? true,
    busyTimeoutMs: parseDuration(options.busyTimeout ?? "30s", "busyTimeout"),
    synchronous,
  }, new SyncWrites(client, synchronous));
}
