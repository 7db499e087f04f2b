/**
 * The synchronous SQLite drivers `sqliteStore()` takes: which ones this runtime has, and opening a database file with
 * one. The command line opens a `file:` database with them when the project has no `@libsql/client`; the tests and
 * the benchmarks run `sqliteStore()` on each.
 *
 * @module
 */
import type { SqliteDatabase } from "./sync_client.ts";

/** The synchronous SQLite drivers `sqliteStore()` takes. */
export type SqliteDriver = "node:sqlite" | "bun:sqlite" | "libsql";

/** Opens (or creates) a database file with a driver's own constructor. */
export type OpenSqlite = (path: string) => SqliteDatabase & { close(): void };

/** Each driver's module exports its database class under this name. */
const CLASS_NAMES: Record<SqliteDriver, string> = {
  "node:sqlite": "DatabaseSync",
  "bun:sqlite": "Database",
  libsql: "default",
};

/**
 * Why this runtime has no `driver`, or undefined when it may have it:
 * `node:sqlite` needs Node 22.5+ or Deno, `bun:sqlite` needs Bun.
 */
export function sqliteDriverMissing(driver: SqliteDriver): string | undefined {
  const bun = typeof (globalThis as { Bun?: unknown }).Bun !== "undefined";
  if (driver === "bun:sqlite" && !bun) return "bun:sqlite is Bun's own";
  if (driver === "node:sqlite" && bun) return "Bun has no node:sqlite";
  const node = (globalThis as { process?: { versions?: { node?: string } } }).process?.versions?.node;
  const [major, minor] = (node ?? "0.0").split(".").map(Number);
  if (driver === "node:sqlite" && (major < 22 || (major === 22 && minor < 5))) {
    return `node:sqlite needs Node 22.5 or later, this is ${node ? `Node ${node}` : "not Node"}`;
  }
  return undefined;
}

/** The fastest SQLite driver this runtime has of its own: bun:sqlite on Bun, node:sqlite where it exists, else libsql. */
export function nativeSqliteDriver(): SqliteDriver {
  if (!sqliteDriverMissing("bun:sqlite")) return "bun:sqlite";
  return sqliteDriverMissing("node:sqlite") ? "libsql" : "node:sqlite";
}

/**
 * `driver`'s constructor.
 * @throws When its module cannot be loaded here (see {@link sqliteDriverMissing}; on Node 22 before 22.13,
 *   `node:sqlite` also needs `--experimental-sqlite`, and `libsql` must be installed).
 */
export async function sqliteDriver(driver: SqliteDriver): Promise<OpenSqlite> {
  // A specifier in a variable: the type check and a runtime without the module leave it alone until it runs.
  const specifier: string = driver;
  const Database = (await import(specifier))[CLASS_NAMES[driver]];
  if (typeof Database !== "function") throw new Error(`${driver} has no ${CLASS_NAMES[driver]} class`);
  return (path) => new Database(path);
}
