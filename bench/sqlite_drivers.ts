/**
 * The synchronous SQLite drivers the bench measures `sqliteStore()` (and the
 * floor) on, by store name: `sqlite-libsql` (the `libsql` package, Node 20
 * and later, Bun), `sqlite-node` (`node:sqlite`, Node 22.5 and later) and
 * `sqlite-bun` (`bun:sqlite`, Bun). A runtime without a driver skips its
 * store, saying why.
 *
 * @module
 */
import process from "node:process";
import type { SqliteDatabase } from "../adapters/sqlite/mod.ts";

/** The store names of the synchronous drivers, in the order the bench runs them. */
export const SQLITE_DRIVER_STORES = ["sqlite-libsql", "sqlite-node", "sqlite-bun"] as const;
/** One of {@link SQLITE_DRIVER_STORES}. */
export type SqliteDriverStore = typeof SQLITE_DRIVER_STORES[number];

/** Each store's module, as an application imports it. */
const MODULES: Record<SqliteDriverStore, string> = {
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

/** Why this runtime has no driver for `store` (and how to run it), or undefined when it has one. */
export function sqliteDriverMissing(store: SqliteDriverStore): string | undefined {
  const bun = typeof (globalThis as { Bun?: unknown }).Bun !== "undefined";
  if (store === "sqlite-bun" && !bun) return "bun:sqlite is Bun's own: run the bench with node_modules/.bin/bun";
  if (store === "sqlite-node") {
    if (bun) return "Bun has no node:sqlite";
    const [major, minor] = process.versions.node.split(".").map(Number);
    if (major < 22 || (major === 22 && minor < 5)) {
      return `node:sqlite needs Node 22.5 or later, this is Node ${process.versions.node}: run the bundle with node_modules/node24/bin/node`;
    }
  }
  return undefined;
}

/** `store`'s driver: a function that opens a database file (see {@link sqliteDriverMissing} for the runtimes that lack one). */
export async function sqliteDriver(store: SqliteDriverStore): Promise<(path: string) => SqliteDatabase> {
  // A specifier in a variable: esbuild, the type check and a runtime without the module leave it alone until it runs.
  const specifier: string = MODULES[store];
  const module = await import(specifier);
  const Database = store === "sqlite-node"
    ? module.DatabaseSync
    : store === "sqlite-bun"
    ? module.Database
    : module.default;
  return (path) => new Database(path) as SqliteDatabase;
}

/** Closes a database a {@link sqliteDriver} opened (every driver's database has `close()`). */
export function closeSqliteDriver(db: SqliteDatabase): void {
  (db as SqliteDatabase & { close(): void }).close();
}
