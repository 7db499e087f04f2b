/**
 * The synchronous SQLite drivers the bench measures `sqliteStore()` (and the
 * floor) on, by store name: `sqlite-libsql` (the `libsql` package, Node 20
 * and later, Bun), `sqlite-node` (`node:sqlite`, Node 22.5 and later) and
 * `sqlite-bun` (`bun:sqlite`, Bun). A runtime without a driver skips its
 * store, saying why and how to run it. Which drivers a runtime has, and
 * opening a file with one, are adapters/sqlite/drivers.ts's.
 *
 * @module
 */
import process from "node:process";
import type { SqliteDatabase } from "../adapters/sqlite/mod.ts";
import {
  type OpenSqlite,
  type SqliteDriver,
  sqliteDriver as openWith,
  sqliteDriverMissing as missing,
} from "../adapters/sqlite/drivers.ts";

/** The store names of the synchronous drivers, in the order the bench runs them. */
export const SQLITE_DRIVER_STORES = ["sqlite-libsql", "sqlite-node", "sqlite-bun"] as const;
/** One of {@link SQLITE_DRIVER_STORES}. */
export type SqliteDriverStore = typeof SQLITE_DRIVER_STORES[number];

/** Each store's module, as an application imports it. */
const MODULES: Record<SqliteDriverStore, SqliteDriver> = {
  "sqlite-libsql": "libsql",
  "sqlite-node": "node:sqlite",
  "sqlite-bun": "bun:sqlite",
};

/** Whether `store` is one of the synchronous drivers' stores. */
export const isSqliteDriverStore = (store: string): store is SqliteDriverStore =>
  (SQLITE_DRIVER_STORES as readonly string[]).includes(store);

/** The driver's module and the runtime running the bench, for a line's settings. */
export function driverSettings(store: SqliteDriverStore): Record<string, string> {
  const bun = (globalThis as { Bun?: { version: string } }).Bun;
  return { driver: MODULES[store], runtime: bun ? `Bun ${bun.version}` : `Node ${process.versions.node}` };
}

/** How to run the bench on a runtime that has `store`'s driver. */
const RUN_WITH: Partial<Record<SqliteDriverStore, string>> = {
  "sqlite-bun": "run the bench with node_modules/.bin/bun",
  "sqlite-node": "run the bundle with node_modules/node24/bin/node",
};

/** Why this runtime has no driver for `store` (and how to run it), or undefined when it has one. */
export function sqliteDriverMissing(store: SqliteDriverStore): string | undefined {
  const why = missing(MODULES[store]);
  return why && RUN_WITH[store] ? `${why}: ${RUN_WITH[store]}` : why;
}

/** `store`'s driver: a function that opens a database file (see {@link sqliteDriverMissing} for the runtimes that lack one). */
export function sqliteDriver(store: SqliteDriverStore): Promise<OpenSqlite> {
  return openWith(MODULES[store]);
}

/** Closes a database a {@link sqliteDriver} opened (every driver's database has `close()`). */
export function closeSqliteDriver(db: SqliteDatabase): void {
  (db as SqliteDatabase & { close(): void }).close();
}
