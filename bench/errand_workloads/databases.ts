/**
 * The fresh database each of errand's workloads starts from, on either
 * store, with errand's store on it and a count query to verify the figures
 * by: PostgreSQL in the database `bench_errand` beside `PG_URL`, SQLite in
 * the file `errand.db` of `SQLITE_DIR`, through `@libsql/client`
 * (`libsqlStore`) or a synchronous driver (`sqliteStore`, see
 * sqlite_drivers.ts; its count queries run on a connection of their own, so
 * none joins a transaction errand holds open on the store's). Each driver is loaded only by the
 * runs that use it, as an application loads only its own. Opened `counted`
 * (the workflow workloads), it also counts the statements errand sends
 * (see statements.ts), and its count queries run on a connection of their
 * own, as the shared benchmark's storage polls do, left out of that count.
 *
 * @module
 */
import process from "node:process";
import type { StoreFor } from "../../src/store/mod.ts";
import { CFG, dropPgDatabase, freshPgDatabase, removeSqliteFiles, type StoreName } from "../harness.ts";
import { closeSqliteDriver, driverSettings, isSqliteDriverStore, sqliteDriver } from "../sqlite_drivers.ts";
import { libsqlStatementCounter, pgStatementCounter, PROBE, type StatementCounter } from "./statements.ts";

/** A fresh database for one workload, with a count query for verification. */
export interface BenchDatabase {
  store: StoreFor<unknown>;
  /** Jobs in `state` (of `kind` if given). */
  count(state: string, kind?: string): Promise<number>;
  /** Step records of `type` (`step`, `sleep`, `event`, `invoke`) in `state`, of every job. */
  countSteps(type: string, state: string): Promise<number>;
  /** The count of the statements sent to the database, when it was opened `counted`. */
  statements?: StatementCounter;
  /** Another store on the same database through a client of its own, as another process would have; closed with the database. */
  connect(): StoreFor<unknown>;
  /**
   * PostgreSQL only: its URL, and `sql(text)`, one statement run by the
   * bench itself (setup and reads, marked {@link PROBE} so a count leaves it out).
   */
  pg?: { url: string; sql(text: string): Promise<Record<string, unknown>[]> };
  settings: Record<string, unknown>;
  close(): Promise<void>;
}

const PG_DB = "bench_errand";

/** The counts of a {@link BenchDatabase} on an SQLite file, by `countRows` (a query with its arguments, read as `n`). */
function sqliteCounts(
  countRows: (query: string, args: (string | null)[]) => Promise<number>,
): Pick<BenchDatabase, "count" | "countSteps"> {
  return {
    count: (state, kind) =>
      countRows("SELECT count(*) AS n FROM errand_jobs WHERE state = ? AND (? IS NULL OR kind = ?)", [
        state,
        kind ?? null,
        kind ?? null,
      ]),
    countSteps: (type, state) =>
      countRows("SELECT count(*) AS n FROM errand_steps WHERE type = ? AND state = ?", [type, state]),
  };
}
const SQLITE_FILE = `${CFG.sqliteDir}/errand.db`;

/**
 * A fresh database for `name`'s store (the old one dropped or deleted), with
 * errand's store on it; `counted`: its statements counted.
 */
export async function openDatabase(name: StoreName, counted = false): Promise<BenchDatabase> {
  if (name === "postgres") {
    const url = await freshPgDatabase(PG_DB);
    const [{ default: postgres }, { postgresStore }] = await Promise.all([
      import("postgres"),
      import("../../adapters/postgres/mod.ts"),
    ]);
    const open = () => postgres(url, { max: 1, onnotice: () => {} });
    const sql = open();
    const probe = counted ? open() : sql;
    const clients = counted ? [sql, probe] : [sql];
    const statements = counted ? await pgStatementCounter(PG_DB) : undefined;
    const countRows = async (query: string, args: (string | null)[]) =>
      Number((await probe.unsafe(PROBE + query, args, { prepare: true }))[0].n);
    return {
      store: postgresStore(sql) as StoreFor<unknown>,
      count: (state, kind) =>
        countRows("SELECT count(*) AS n FROM errand.all_jobs WHERE state = $1 AND ($2::text IS NULL OR kind = $2)", [
          state,
          kind ?? null,
        ]),
      countSteps: (type, state) =>
        countRows("SELECT count(*) AS n FROM errand.steps WHERE type = $1 AND state = $2", [type, state]),
      statements,
      pg: { url, sql: (text) => probe.unsafe(PROBE + text) },
      connect: () => {
        const other = open();
        clients.push(other);
        return postgresStore(other) as StoreFor<unknown>;
      },
      settings: { storage: "PostgreSQL (postgres.js, pool max 1: one pipelined connection)", notify: true },
      close: async () => {
        await statements?.close();
        await Promise.all(clients.map((c) => c.end({ timeout: 5 })));
      },
    };
  }
  removeSqliteFiles(SQLITE_FILE);
  if (isSqliteDriverStore(name)) {
    if (counted) throw new Error(`statements are counted on @libsql/client and PostgreSQL only, not on ${name}`);
    const { sqliteStore } = await import("../../adapters/sqlite/mod.ts");
    const options = { synchronous: CFG.sqliteSynchronous };
    const open = await sqliteDriver(name);
    const db = open(SQLITE_FILE);
    const probe = open(SQLITE_FILE);
    const dbs = [db, probe];
    const countRows = (query: string, args: (string | null)[]) =>
      Promise.resolve(Number((probe.prepare(query).all(...args as never[])[0] as { n: number | bigint }).n));
    return {
      store: sqliteStore(db, options) as StoreFor<unknown>,
      ...sqliteCounts(countRows),
      connect: () => {
        const other = open(SQLITE_FILE);
        dbs.push(other);
        return sqliteStore(other, options) as StoreFor<unknown>;
      },
      settings: {
        storage: `SQLite file ${SQLITE_FILE}`,
        ...driverSettings(name),
        journal_mode: "wal",
        synchronous: CFG.sqliteSynchronous,
      },
      close: () => Promise.resolve(dbs.forEach(closeSqliteDriver)),
    };
  }
  const [{ createClient }, { libsqlStore }] = await Promise.all([
    import("@libsql/client"),
    import("../../adapters/libsql/mod.ts"),
  ]);
  const counter = counted ? libsqlStatementCounter() : undefined;
  // ERRAND_BENCH_LIBSQL_URL: a libSQL server's URL (http:, ws:) instead of the file; start it empty for each run.
  const url = process.env.ERRAND_BENCH_LIBSQL_URL ?? `file:${SQLITE_FILE}`;
  const open = () => {
    const client = createClient({ url });
    return counter ? counter.instrument(client) : client;
  };
  const client = open();
  const probe = counted ? createClient({ url }) : client;
  const clients = counted ? [client, probe] : [client];
  const countRows = async (query: string, args: (string | null)[]) =>
    Number((await probe.execute({ sql: query, args })).rows[0].n);
  return {
    store: libsqlStore(client, { synchronous: CFG.sqliteSynchronous }) as StoreFor<unknown>,
    ...sqliteCounts(countRows),
    statements: counter,
    connect: () => {
      const other = open();
      clients.push(other);
      return libsqlStore(other, { synchronous: CFG.sqliteSynchronous }) as StoreFor<unknown>;
    },
    settings: url.startsWith("file:")
      ? { storage: `libSQL file ${SQLITE_FILE}`, journal_mode: "wal", synchronous: CFG.sqliteSynchronous }
      : { storage: `libSQL server ${url}` },
    close: () => Promise.resolve(clients.forEach((c) => c.close())),
  };
}

/** Removes the database of `name`'s store, once its clients are closed. */
export async function removeDatabase(name: StoreName): Promise<void> {
  if (name === "postgres") await dropPgDatabase(PG_DB);
  else removeSqliteFiles(SQLITE_FILE);
}
