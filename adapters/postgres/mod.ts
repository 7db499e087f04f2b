/**
 * The PostgreSQL store, on the application's own postgres.js client.
 *
 * @example Use the application's postgres.js client
 * ```ts
 * import postgres from "postgres";
 * import { postgresStore } from "@errand/errand/postgres";
 * const sql = postgres("postgres://localhost/app");
 * const store = postgresStore(sql, { namespace: "app", schema: "errand" });
 * ```
 *
 * @module
 */
import type { Sql, TransactionSql } from "postgres";
import type { StoreFor } from "../../src/store/mod.ts";
import { checkName, NAMESPACE_PATTERN } from "../../src/checks/names.ts";
import { composePostgresStore } from "./store.ts";

export { POSTGRES_SCHEMA_VERSION, postgresMigrationSql } from "./migrations.ts";

/** Schema names: lower-case letters, digits and `_`, starting with a letter or `_`, at most 63 characters. */
export const SCHEMA_PATTERN: RegExp = /^[a-z_][a-z0-9_]{0,62}$/;

/** Options of {@link postgresStore}. */
export interface PostgresStoreOptions {
  /**
   * Isolates this pool from others sharing the database.
   * @default {"default"}
   */
  namespace?: string;
  /**
   * The schema errand's tables live in.
   * @default {"errand"}
   *
   * @example Two applications on one database
   * ```ts
   * import postgres from "postgres";
   * import { postgresStore } from "@errand/errand/postgres";
   *
   * const sql = postgres("postgres://localhost/app");
   * // One schema for errand's tables; a namespace per application that shares them.
   * const shop = postgresStore(sql, { schema: "jobs", namespace: "shop" });
   * const billing = postgresStore(sql, { schema: "jobs", namespace: "billing" });
   * ```
   */
  schema?: string;
  /**
   * Create and upgrade errand's tables at start. With `false`, errand only
   * checks the schema version; apply `postgresMigrationSql()` yourself.
   * @default {true}
   *
   * @example Apply the migrations yourself
   * ```ts
   * import postgres from "postgres";
   * import { postgresMigrationSql, postgresStore } from "@errand/errand/postgres";
   *
   * const sql = postgres("postgres://localhost/app");
   * await sql.unsafe(postgresMigrationSql({ schema: "errand" })); // or save it as a migration of your own tool
   * const store = postgresStore(sql, { schema: "errand", migrate: false });
   * ```
   */
  migrate?: boolean;
  /**
   * Wake workers of other processes with LISTEN/NOTIFY. Turn it off behind
   * PgBouncer in transaction mode, or on a server without LISTEN/NOTIFY: no
   * statement then sends a NOTIFY, workers poll every `pollInterval` and
   * `result()` every `resultPollInterval`.
   * @default {true}
   *
   * @example Behind PgBouncer in transaction mode
   * ```ts
   * import postgres from "postgres";
   * import { createErrand, defineJobs, job } from "@errand/errand";
   * import { postgresStore } from "@errand/errand/postgres";
   *
   * const jobs = defineJobs({ sendWelcome: job<{ userId: number }>() });
   * const sql = postgres("postgres://pgbouncer.internal:6432/app", { prepare: false });
   * const errand = createErrand({
   *   jobs,
   *   store: postgresStore(sql, { notify: false }),
   *   pollInterval: "500ms", // how soon other processes' workers see a new job
   *   handlers: { sendWelcome: ({ userId }) => console.log(`welcome ${userId}`) },
   * });
   * ```
   */
  notify?: boolean;
}

/**
 * Creates a store on the application's own postgres.js client.
 *
 * @param sql A client from `postgres(...)`.
 * @param options See {@link PostgresStoreOptions}.
 * @throws {ValidationError} When an option is invalid.
 *
 * @example Behind PgBouncer
 * ```ts
 * import postgres from "postgres";
 * import { postgresStore } from "@errand/errand/postgres";
 * const store = postgresStore(postgres({ prepare: false }), { notify: false });
 * ```
 */
export function postgresStore(sql: Sql, options: PostgresStoreOptions = {}): StoreFor<TransactionSql> {
  return composePostgresStore(sql, {
    namespace: checkName("namespace", options.namespace ?? "default", NAMESPACE_PATTERN),
    schema: checkName("schema", options.schema ?? "errand", SCHEMA_PATTERN),
    migrate: options.migrate ?? true,
    notify: options.notify ?? true,
  });
}
