/**
 * The libSQL / SQLite store: an embedded `file:` database (the zero-setup
 * default), `:memory:` for tests, or a remote libSQL / Turso database.
 *
 * @example An embedded database file
 * ```ts
 * import { createClient } from "@libsql/client";
 * import { libsqlStore } from "@errand/errand/libsql";
 * const store = libsqlStore(createClient({ url: "file:errand.db" }), { namespace: "app" });
 * ```
 *
 * @module
 */
import type { Client } from "@libsql/client";
import { type Duration, parseDuration } from "../../src/base/duration.ts";
import { ValidationError } from "../../src/base/errors.ts";
import { checkName, NAMESPACE_PATTERN } from "../../src/checks/names.ts";
import { composeLibsqlStore, type LibsqlStore } from "./store.ts";
import { isRemote, remoteClient } from "./remote_client.ts";
import { RemoteWrites } from "./remote_writes.ts";
import { FileWrites } from "./replica.ts";

export { LIBSQL_SCHEMA_VERSION, libsqlMigrationSql } from "./migrations.ts";
export type { LibsqlStore } from "./store.ts";

/** Options of {@link libsqlStore}. */
export interface LibsqlStoreOptions {
  /**
   * Isolates this pool from others sharing the database.
   * @default {"default"}
   */
  namespace?: string;
  /**
   * Create and upgrade errand's tables at start. With `false`, errand only
   * checks the schema version; apply `libsqlMigrationSql()` yourself.
   * @default {true}
   *
   * @example Apply the migrations yourself
   * ```ts
   * import { createClient } from "@libsql/client";
   * import { libsqlMigrationSql, libsqlStore } from "@errand/errand/libsql";
   *
   * const client = createClient({ url: "file:errand.db" });
   * await client.executeMultiple(libsqlMigrationSql()); // or save it as a migration of your own tool
   * const store = libsqlStore(client, { migrate: false });
   * ```
   */
  migrate?: boolean;
  /**
   * How long a write waits for another writer before it fails.
   * @default {"30s"}
   */
  busyTimeout?: Duration;
  /**
   * SQLite's `synchronous` level for errand's writes. `"full"` syncs the WAL
   * on every commit, so a committed job survives power loss; `"normal"` skips
   * that sync (still safe against process crashes and corruption; the last
   * commits may be lost on power loss) and is several times faster.
   * @default {"full"}
   *
   * @example Faster writes, at the risk of losing the last commits on power loss
   * ```ts
   * import { createClient } from "@libsql/client";
   * import { libsqlStore } from "@errand/errand/libsql";
   *
   * const store = libsqlStore(createClient({ url: "file:errand.db" }), {
   *   synchronous: "normal",
   *   busyTimeout: "10s", // a write waits at most 10 s for another process's write
   * });
   * ```
   */
  synchronous?: "full" | "normal";
}

/**
 * Creates a store on the application's own libSQL client.
 *
 * @param client A client from `createClient()` of `@libsql/client`: an
 *   embedded `file:` database, `:memory:`, or a libSQL server (`http:`,
 *   `ws:`, `libsql:`) or an embedded replica of one (`file:` with
 *   `syncUrl`), where errand's writes are the server's own write
 *   transactions and `busyTimeout` and `synchronous` are the server's to set.
 * @param options See {@link LibsqlStoreOptions}.
 * @throws {ValidationError} When an option is invalid.
 *
 * @example In-memory store for tests
 * ```ts
 * import { createClient } from "@libsql/client";
 * import { libsqlStore } from "@errand/errand/libsql";
 * const store = libsqlStore(createClient({ url: ":memory:" }));
 * ```
 */
export function libsqlStore(client: Client, options: LibsqlStoreOptions = {}): LibsqlStore {
  const settings = {
    namespace: checkName("namespace", options.namespace ?? "default", NAMESPACE_PATTERN),
    migrate: options.migrate ?? true,
    busyTimeoutMs: parseDuration(options.busyTimeout ?? "30s", "busyTimeout"),
    synchronous: checkSynchronous(options.synchronous ?? "full"),
  };
  // A file of its own, or an embedded replica whose writes go to its primary (replica.ts).
  if (!isRemote(client)) return composeLibsqlStore(client, settings, new FileWrites(client, settings.synchronous));
  // A libSQL server: its own write transactions, and only the arguments each statement uses (remote_client.ts).
  const remote = remoteClient(client);
  return composeLibsqlStore(remote, settings, new RemoteWrites(remote));
}

function checkSynchronous(value: string): "full" | "normal" {
  if (value !== "full" && value !== "normal") {
    throw new ValidationError(`Option "synchronous" must be "full" or "normal", got "${value}"`);
  }
  return value;
}
