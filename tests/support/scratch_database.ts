/**
 * A fresh database per run across processes (a chaos scenario's, or a test
 * that shares one): a new SQLite file in the run's directory (opened by
 * libsqlStore, or by sqliteStore on the runtime's own driver), or a new schema
 * on the PostgreSQL at DATABASE_URL (dropped afterwards). The orchestrating
 * process reaches it through `storeFor()`; worker processes reach it through
 * `env` (worker_env.ts reads it).
 */
import process from "node:process";
import { createClient } from "@libsql/client";
import postgres from "postgres";
import { libsqlStore } from "errand/libsql";
import { sqliteStore } from "errand/sqlite";
import { postgresStore } from "errand/postgres";
import type { StoreFor } from "errand/store";
import { nativeSqliteDriver, sqliteDriver } from "../../adapters/sqlite/drivers.ts";

/** Opens a database file with the runtime's own SQLite driver (the store "sqlite"). */
const openNativeSqlite = await sqliteDriver(nativeSqliteDriver());

/** The stores a run across processes runs on. */
export type StoreName = "libsql" | "sqlite" | "postgres";

/** One fresh database of one store. */
export interface ScratchDatabase {
  readonly store: StoreName;
  /** The environment a worker process needs to open the same database (see worker.ts). */
  readonly env: Record<string, string>;
  /** A store on this database, for the orchestrator's own errand. */
  storeFor(): StoreFor<unknown>;
  /** The PostgreSQL connection of the orchestrator (PostgreSQL only), for the scenarios that act on the server. */
  readonly sql?: postgres.Sql;
  /** The PostgreSQL schema errand's tables live in (PostgreSQL only). */
  readonly schema?: string;
  close(): Promise<void>;
}

/** Why a store cannot run here, or undefined when it can. */
export function unavailable(store: StoreName): string | undefined {
  return store === "postgres" && !process.env.DATABASE_URL ? "DATABASE_URL is not set" : undefined;
}

let opened = 0;

/**
 * Opens a fresh database of `store`; SQLite files go in `dir`. PostgreSQL is
 * the server at DATABASE_URL, or at `postgresUrl` (a scenario's own throwaway cluster).
 */
export function openDatabase(store: StoreName, dir: string, postgresUrl?: string): ScratchDatabase {
  const tag = `${Date.now().toString(36)}${process.pid.toString(36)}${(opened++).toString(36)}`;
  if (store === "libsql") {
    const url = `file:${dir}/chaos-${tag}.db`;
    const client = createClient({ url });
    return {
      store,
      env: { CHAOS_STORE: "libsql", CHAOS_URL: url },
      storeFor: () => libsqlStore(client) as StoreFor<unknown>,
      close() {
        client.close();
        return Promise.resolve();
      },
    };
  }
  if (store === "sqlite") {
    const path = `${dir}/chaos-${tag}.db`;
    const db = openNativeSqlite(path);
    return {
      store,
      env: { CHAOS_STORE: "sqlite", CHAOS_URL: `file:${path}` },
      storeFor: () => sqliteStore(db) as StoreFor<unknown>,
      close() {
        (db as { close?(): void }).close?.();
        return Promise.resolve();
      },
    };
  }
  const url = postgresUrl ?? process.env.DATABASE_URL!;
  const schema = `errand_chaos_${tag}`;
  const sql = postgres(url, { max: 4, onnotice: () => {} });
  return {
    store,
    // Worker connections carry the schema as their application_name, so a scenario can act on exactly them.
    env: { CHAOS_STORE: "postgres", CHAOS_URL: url, CHAOS_SCHEMA: schema, CHAOS_APP: schema },
    sql,
    schema,
    storeFor: () => postgresStore(sql, { schema }) as StoreFor<unknown>,
    async close() {
      await sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await sql.end({ timeout: 5 });
    },
  };
}
