/**
 * What every child program of a run across processes (the chaos suite's
 * worker.ts and scenario programs, flow/worker.ts, log_consumers/member.ts)
 * reads from its environment and shares: the store it opens (CHAOS_STORE,
 * CHAOS_URL, CHAOS_SCHEMA; on PostgreSQL a pool of CHAOS_POOL connections,
 * default 4, named CHAOS_APP, with the server settings `statement_timeout`
 * and `lock_timeout` set to CHAOS_STATEMENT_TIMEOUT and CHAOS_LOCK_TIMEOUT
 * ms when given), and a sleep its handlers abort.
 */
import process from "node:process";
import { type Client, createClient } from "@libsql/client";
import postgres from "postgres";
import { type LibsqlStore, libsqlStore } from "errand/libsql";
import { postgresStore } from "errand/postgres";
import type { StoreFor } from "errand/store";

/** The environment variable `name`, or `fallback` when it is unset or empty. */
export const env = (name: string, fallback = ""): string => process.env[name] || fallback;

/**
 * The driver a worker's store is made on, for its handlers' own writes: an application transaction
 * passed as `{ tx }` must be one of the store's own client.
 */
export type WorkerDriver =
  | { readonly sql: postgres.Sql; readonly schema: string }
  | { readonly client: Client; readonly store: LibsqlStore };

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
  const client = createClient({ url: env("CHAOS_URL") });
  const store = libsqlStore(client);
  return {
    store: store as StoreFor<unknown>,
    driver: { client, store },
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
