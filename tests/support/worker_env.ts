/**
 * What every child program of a run across processes (the chaos suite's
 * worker.ts and scenario programs, flow/worker.ts, log_consumers/member.ts)
 * reads from its environment and shares: the store it opens (CHAOS_STORE:
 * libsql, sqlite (sqliteStore on the runtime's own driver) or postgres;
 * CHAOS_URL, CHAOS_SCHEMA; on PostgreSQL a pool of CHAOS_POOL connections,
 * default 4, named CHAOS_APP, with the server settings `statement_timeout`
 * and `lock_timeout` set to CHAOS_STATEMENT_TIMEOUT and CHAOS_LOCK_TIMEOUT
 * ms when given), and a sleep its handlers abort.
 */
import process from "node:process";
import { createClient } from "@libsql/client";
import postgres from "postgres";
import { libsqlStore } from "errand/libsql";
import { sqliteStore } from "errand/sqlite";
import { postgresStore } from "errand/postgres";
import type { StoreFor } from "errand/store";
import { nativeSqliteDriver, sqliteDriver } from "../../adapters/sqlite/drivers.ts";

/** Opens a database file with the runtime's own SQLite driver (for CHAOS_STORE=sqlite). */
const openNativeSqlite = await sqliteDriver(nativeSqliteDriver());

/** The environment variable `name`, or `fallback` when it is unset or empty. */
export const env = (name: string, fallback = ""): string => process.env[name] || fallback;

/**
 * What a worker's handlers write their own rows through: on PostgreSQL the
 * driver (an application transaction passed as `{ tx }` must be one of the
 * store's own client); on SQLite the store's `transaction(fn)`, in turn with
 * errand's writes.
 */
export type WorkerDriver =
  | { readonly sql: postgres.Sql; readonly schema: string }
  | { readonly store: TransactionalStore };

/** A SQLite store's `transaction(fn)` (libsqlStore's and sqliteStore's). */
export interface TransactionalStore {
  transaction<T>(fn: (tx: SqliteTx) => Promise<T>): Promise<T>;
}

/** The part of a SQLite store's transaction a handler writes through. */
export interface SqliteTx {
  execute(statement: string | { sql: string; args: (string | number)[] }): Promise<{ rows: Record<string, unknown>[] }>;
}

/** The process's store, the driver it is made on, and `close()` to end that driver once errand has shut down. */
export function openWorkerStore(): { store: StoreFor<unknown>; driver: WorkerDriver; close(): Promise<void> } {
  if (env("CHAOS_STORE") === "postgres") {
    const sql = postgres(env("CHAOS_URL"), {
      max: Number(env("CHAOS_POOL", "4")),
      connect_timeout: 5,
      connection: {
        application_name: env("CHAOS_APP", "errand_chaos"),
        ...(env("CHAOS_STATEMENT_TIMEOUT") ? { statement_timeout: Number(env("CHAOS_STATEMENT_TIMEOUT")) } : {}),
        ...(env("CHAOS_LOCK_TIMEOUT") ? { lock_timeout: Number(env("CHAOS_LOCK_TIMEOUT")) } : {}),
      },
      onnotice: () => {},
    });
    return {
      store: postgresStore(sql, { schema: env("CHAOS_SCHEMA") }) as StoreFor<unknown>,
      driver: { sql, schema: env("CHAOS_SCHEMA") },
      close: () => sql.end({ timeout: 5 }),
    };
  }
  if (env("CHAOS_STORE") === "sqlite") {
    const db = openNativeSqlite(env("CHAOS_URL").replace(/^file:/, ""));
    const store = sqliteStore(db);
    return {
      store: store as StoreFor<unknown>,
      driver: { store: store as TransactionalStore },
      close: () => Promise.resolve((db as { close?(): void }).close?.()),
    };
  }
  const client = createClient({ url: env("CHAOS_URL") });
  const store = libsqlStore(client);
  return {
    store: store as StoreFor<unknown>,
    driver: { store: store as TransactionalStore },
    close: () => Promise.resolve(client.close()),
  };
}

/** Sleeps `ms`, or less when `signal` aborts; says whether it slept the whole time. */
export function sleep(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    // Each sleep takes its listener off the signal when it ends: a handler that sleeps in a loop would pile them up.
    const aborted = () => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", aborted);
      resolve(true);
    }, ms);
    signal.addEventListener("abort", aborted, { once: true });
  });
}
