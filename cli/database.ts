/**
 * The `--db` URL: which store it names (PostgreSQL for `postgres://` and
 * `postgresql://`; libSQL for `file:`, `libsql://`, `http(s)://` and
 * `ws(s)://`), how it is shown (password and auth token hidden), and
 * opening the store on it with the driver the project installed
 * (`postgres` or `@libsql/client`, imported only when used; for a `file:`
 * URL without `@libsql/client`, the runtime's own SQLite driver).
 *
 * @module
 */
import { existsSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { StoreFor } from "../src/store/mod.ts";
import { type OpenSqlite, sqliteDriver, sqliteDriverMissing } from "../adapters/sqlite/drivers.ts";
import { CommandFailure, UsageError } from "./failures.ts";

/** The stores the command line opens. */
export type DatabaseKind = "postgres" | "libsql";

/** A checked `--db` URL. */
export interface DatabaseUrl {
  readonly kind: DatabaseKind;
  /** The URL as given. */
  readonly url: string;
  /** The URL to show: password and auth token replaced by `***`. */
  readonly shown: string;
  /** For a libSQL `file:` URL, the file's path. */
  readonly file?: string;
}

const EXAMPLES =
  "postgres://user:password@host:5432/db, file:path/to/errand.db or libsql://name.turso.io?authToken=...";

/**
 * Checks `raw` (from `--db` or ERRAND_DATABASE_URL).
 * @throws {UsageError} When it is missing, malformed or of a kind errand has no store for.
 */
export function parseDatabaseUrl(raw: string | undefined): DatabaseUrl {
  if (raw === undefined || raw.trim() === "") {
    throw new UsageError(`No database: pass --db <url> or set ERRAND_DATABASE_URL (${EXAMPLES})`);
  }
  const url = raw.trim();
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(url)?.[1]?.toLowerCase();
  if (url === ":memory:" || url === "file::memory:") {
    throw new UsageError(`--db "${url}" is an in-memory database, empty in every process; use a file: or server URL`);
  }
  if (scheme === "postgres" || scheme === "postgresql") {
    checkParses(url, "PostgreSQL");
    return { kind: "postgres", url, shown: hideSecrets(url) };
  }
  if (scheme === "file") {
    const rest = url.slice("file:".length).split(/[?#]/)[0];
    if (rest === "") throw new UsageError(`--db "${url}" names no file; write it as file:path/to/errand.db`);
    return { kind: "libsql", url, shown: url, file: filePath(url, rest) };
  }
  if (scheme && ["libsql", "http", "https", "ws", "wss"].includes(scheme)) {
    checkParses(url, "libSQL");
    return { kind: "libsql", url, shown: hideSecrets(url) };
  }
  throw new UsageError(
    `--db "${hideSecrets(url)}" is not a database URL errand can open${
      scheme ? ` (no store for "${scheme}:")` : ""
    }; use ${EXAMPLES}`,
  );
}

/** The path of the `file:` URL `url`, whose part after `file:` is `rest`. */
function filePath(url: string, rest: string): string {
  try {
    return rest.startsWith("//") ? fileURLToPath(url.split(/[?#]/)[0]) : decodeURIComponent(rest);
  } catch (err) {
    throw new UsageError(
      `--db "${url}" is not a valid file: URL (${
        (err as Error).message
      }); write a "%" in the path as "%25", or write it as file:path/to/errand.db`,
      { cause: err },
    );
  }
}

function checkParses(url: string, what: string): void {
  try {
    new URL(url);
  } catch (err) {
    throw new UsageError(`--db "${hideSecrets(url)}" is not a valid ${what} URL; write it as ${EXAMPLES}`, {
      cause: err,
    });
  }
}

/** `message` (a driver's, which may quote the URL) without the password or auth token of `url`. */
export function scrubbed(message: string, url: string): string {
  const secrets = [
    /^[a-z][a-z0-9+.-]*:\/\/[^:/@]*:([^@/]+)@/i.exec(url)?.[1],
    /[?&]authToken=([^&#]+)/i.exec(url)?.[1],
  ].filter((s): s is string => s !== undefined && s !== "");
  let out = message.replaceAll(url, hideSecrets(url));
  for (const secret of secrets) {
    out = out.replaceAll(secret, "***");
    try {
      out = out.replaceAll(decodeURIComponent(secret), "***");
    } catch {
      // Not percent-encoded.
    }
  }
  return out;
}

/** `url` with its password and `authToken` replaced by `***`; as it was written when it has neither. */
export function hideSecrets(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return url.replace(/:[^:@/]*@/, ":***@").replace(/(authToken=)[^&#]*/i, "$1***");
  }
  // Re-serializing would rewrite the URL (a relative `file:nope.db` becomes `file:///nope.db`).
  if (!parsed.password && !parsed.searchParams.has("authToken")) return url;
  if (parsed.password) parsed.password = "***";
  if (parsed.searchParams.has("authToken")) parsed.searchParams.set("authToken", "***");
  return parsed.toString();
}

/** A store opened on a database, and how to close the client under it. */
export interface OpenDatabase {
  readonly url: DatabaseUrl;
  /** The store for the namespace (and schema) given. */
  readonly store: StoreFor<unknown>;
  /** Closes the client (the connections). */
  close(): Promise<void>;
}

/** How to open a store. */
export interface OpenOptions {
  /** The namespace (`--namespace`). */
  readonly namespace: string;
  /** The PostgreSQL schema (`--schema`); undefined for the store's default. */
  readonly schema?: string;
  /** Whether the store may create or upgrade errand's tables (only `migrate` does). */
  readonly migrate: boolean;
  /** Whether a `file:` database may be created (a new file); otherwise a missing file is an error. */
  readonly create: boolean;
  /** How long PostgreSQL may take to accept a connection, in milliseconds. @default {10_000} */
  readonly connectTimeoutMs?: number;
  /** Whether PostgreSQL statements are prepared (not behind a pooler in transaction mode). @default {true} */
  readonly prepare?: boolean;
}

/** Where a server URL connects to, "host:port", for messages; undefined for a `file:` database. */
export function addressOf(url: DatabaseUrl): string | undefined {
  if (url.file !== undefined) return undefined;
  const parsed = new URL(url.url);
  const ports: Record<string, string> = {
    "postgres:": "5432",
    "postgresql:": "5432",
    "libsql:": "443",
    "https:": "443",
    "wss:": "443",
    "http:": "80",
    "ws:": "80",
  };
  return `${parsed.hostname}:${parsed.port || ports[parsed.protocol]}`;
}

/**
 * Opens the store `url` names, with the driver the project installed.
 * @throws {CommandFailure} When the driver is not installed or a database file is missing.
 * @throws {UsageError} When the driver refuses the URL.
 */
export async function openDatabase(url: DatabaseUrl, options: OpenOptions): Promise<OpenDatabase> {
  return url.kind === "postgres" ? await openPostgres(url, options) : await openLibsql(url, options);
}

async function openPostgres(url: DatabaseUrl, options: OpenOptions): Promise<OpenDatabase> {
  const { default: postgres } = await importDriver(() => import("postgres"), "postgres", "PostgreSQL");
  const { postgresStore } = await import("../adapters/postgres/mod.ts");
  let sql: ReturnType<typeof postgres>;
  try {
    sql = postgres(url.url, {
      max: 4,
      connect_timeout: (options.connectTimeoutMs ?? 10_000) / 1000,
      prepare: options.prepare ?? true,
      onnotice: () => {},
      connection: { application_name: "errand-cli" },
    });
  } catch (err) {
    throw new UsageError(
      `--db "${url.shown}" is not a valid PostgreSQL URL: ${scrubbed((err as Error).message, url.url)}`,
      { cause: err },
    );
  }
  const store = postgresStore(sql, { namespace: options.namespace, schema: options.schema, migrate: options.migrate });
  return { url, store: store as StoreFor<unknown>, close: () => sql.end({ timeout: 5 }) };
}

async function openLibsql(url: DatabaseUrl, options: OpenOptions): Promise<OpenDatabase> {
  if (url.file !== undefined) {
    const file = path.resolve(url.file);
    if (!options.create && !existsSync(file)) {
      throw new CommandFailure(
        `There is no database file "${file}" (--db ${url.shown}); check the path, or create it with: errand --db ${url.shown} migrate`,
      );
    }
    if (!existsSync(path.dirname(file))) {
      throw new CommandFailure(
        `The folder "${path.dirname(file)}" of --db ${url.shown} does not exist; create it first`,
      );
    }
    if (!statSync(path.dirname(file)).isDirectory()) {
      throw new CommandFailure(`"${path.dirname(file)}" of --db ${url.shown} is a file, not a folder; check the path`);
    }
  }
  let libsql: typeof import("@libsql/client");
  try {
    libsql = await import("@libsql/client");
  } catch (err) {
    if (url.file !== undefined) return await openSqliteFile(url, url.file, options, err as Error);
    throw driverMissing("@libsql/client", "libSQL", err as Error);
  }
  const { libsqlStore } = await import("../adapters/libsql/mod.ts");
  let client: ReturnType<typeof libsql.createClient>;
  try {
    client = libsql.createClient({ url: url.url });
  } catch (err) {
    if (url.file !== undefined && cannotOpen(err)) throw cannotOpenFile(url, url.file, err as Error);
    throw new UsageError(
      `--db "${url.shown}" is not a valid libSQL URL: ${scrubbed((err as Error).message, url.url)}`,
      { cause: err },
    );
  }
  const store = libsqlStore(client, { namespace: options.namespace, migrate: options.migrate });
  return {
    url,
    store: store as StoreFor<unknown>,
    close: () => {
      client.close();
      return Promise.resolve();
    },
  };
}

/**
 * A `file:` database in a project without `@libsql/client` (the getting-started pages install none): opened with
 * the runtime's own SQLite driver, `bun:sqlite` on Bun and `node:sqlite` on Node 22.5+ and Deno, else the `libsql`
 * package when the project has it. `clientError` is why `@libsql/client` could not be loaded.
 */
async function openSqliteFile(
  url: DatabaseUrl,
  file: string,
  options: OpenOptions,
  clientError: Error,
): Promise<OpenDatabase> {
  const drivers = (["bun:sqlite", "node:sqlite", "libsql"] as const).filter((driver) => !sqliteDriverMissing(driver));
  for (const driver of drivers) {
    let open: OpenSqlite;
    try {
      open = await sqliteDriver(driver);
    } catch {
      continue; // Not installed, or node:sqlite behind its flag (Node 22 before 22.13).
    }
    let db: ReturnType<OpenSqlite>;
    try {
      db = open(file);
    } catch (err) {
      throw cannotOpen(err) ? cannotOpenFile(url, file, err as Error) : err;
    }
    const { sqliteStore } = await import("../adapters/sqlite/mod.ts");
    return {
      url,
      store: sqliteStore(db, { namespace: options.namespace, migrate: options.migrate }) as StoreFor<unknown>,
      close: () => Promise.resolve(db.close()),
    };
  }
  throw new CommandFailure(
    `No SQLite driver for --db ${url.shown}: "@libsql/client" cannot be loaded (${
      clientError.message.split("\n")[0]
    }), and this runtime has no SQLite of its own (node:sqlite needs Node 22.5 or later, or Deno; Bun has ` +
      "bun:sqlite); install one in your project: npm install @libsql/client (or npm install libsql)",
    { cause: clientError },
  );
}

/** Whether `err` is SQLite's SQLITE_CANTOPEN (14): the file cannot be opened or created where the URL names. */
function cannotOpen(err: unknown): boolean {
  return /\b14\b|CANTOPEN|unable to open database file/i.test(String((err as Error)?.message));
}

function cannotOpenFile(url: DatabaseUrl, file: string, err: Error): CommandFailure {
  const resolved = path.resolve(file);
  return new CommandFailure(
    `Cannot open or create the database file "${resolved}" (--db ${url.shown}): the folder "${
      path.dirname(resolved)
    }" cannot be written, or the file cannot be read; check their permissions, or choose another path`,
    { cause: err },
  );
}

async function importDriver<T>(load: () => Promise<T>, name: string, what: string): Promise<T> {
  try {
    return await load();
  } catch (err) {
    throw driverMissing(name, what, err as Error);
  }
}

function driverMissing(name: string, what: string, err: Error): CommandFailure {
  return new CommandFailure(
    `The ${what} driver "${name}" cannot be loaded (${
      err.message.split("\n")[0]
    }); install it in your project: npm install ${name}`,
    { cause: err },
  );
}
