/**
 * The synchronous SQLite drivers `sqliteStore()` takes, for the tests: which ones this runtime has, and opening a
 * file with one.
 *
 * @module
 */
import process from "node:process";
import type { SqliteDatabase } from "../../adapters/sqlite/mod.ts";

/** The synchronous SQLite drivers `sqliteStore()` takes. */
export type SqliteDriver = "node:sqlite" | "bun:sqlite" | "libsql";

/** Opens a database file with `driver`'s own constructor. */
export type OpenSqlite = (path: string) => SqliteDatabase;

/**
 * Why this runtime has no `driver`, or undefined when it has it:
 * `node:sqlite` needs Node 22.5+ or Deno, `bun:sqlite` needs Bun.
 */
export function sqliteDriverMissing(driver: SqliteDriver): string | undefined {
  const bun = typeof (globalThis as { Bun?: unknown }).Bun !== "undefined";
  if (driver === "bun:sqlite" && !bun) return "bun:sqlite is Bun's own";
  if (driver === "node:sqlite" && bun) return "Bun has no node:sqlite";
  const [major, minor] = process.versions.node.split(".").map(Number);
  if (driver === "node:sqlite" && (major < 22 || (major === 22 && minor < 5))) {
    return `node:sqlite needs Node 22.5 or later, this is Node ${process.versions.node}`;
  }
  return undefined;
}

/** The fastest SQLite driver this runtime has of its own: bun:sqlite on Bun, node:sqlite where it exists, else libsql. */
export function nativeSqliteDriver(): SqliteDriver {
  if (!sqliteDriverMissing("bun:sqlite")) return "bun:sqlite";
  return sqliteDriverMissing("node:sqlite") ? "libsql" : "node:sqlite";
}

/** `driver`'s constructor (see {@link sqliteDriverMissing} for the runtimes that lack one). */
export async function sqliteDriver(driver: SqliteDriver): Promise<OpenSqlite> {
  // A specifier in a variable: the type check and a runtime without the module leave it alone until it runs.
  const specifier: string = driver;
  const module = await import(specifier);
  const Database = driver === "node:sqlite"
    ? module.DatabaseSync
    : driver === "bun:sqlite"
    ? module.Database
    : module.default;
  return (path) => new Database(path);
}
