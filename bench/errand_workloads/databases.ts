/**
 * The fresh database each of errand's workloads starts from, on either
 * store, with errand's store on it and a count query to verify the figures
 * by: PostgreSQL in the database `bench_errand` beside `PG_URL`, libSQL in
 * the file `errand.db` of `SQLITE_DIR`. Each driver is loaded only by the
 * runs that use it, as an application loads only its own.
 *
 * @module
 */
import type { StoreFor } from "../../src/store/mod.ts";
import { CFG, dropPgDatabase, freshPgDatabase, removeSqliteFiles, type StoreName } from "../harness.ts";

/** A fresh database for one workload, with a count query for verification. */
export interface BenchDatabase {
  store: StoreFor<unknown>;
  /** Jobs in `state` (of `kind` if given). */
  count(state: string, kind?: string): Promise<number>;
  /** Another store on the same database through a client of its own, as another process would have; closed with the database. */
  connect(): StoreFor<unknown>;
  settings: Record<string, unknown>;
  close(): Promise<void>;
}

const PG_DB = "bench_errand";
const SQLITE_FILE = `${CFG.sqliteDir}/errand.db`;

/** A fresh database for `name`'s store (the old one dropped or deleted), with errand's store on it. */
export async function openDatabase(name: StoreName): Promise<BenchDatabase> {
  if (name === "postgres") {
    const url = await freshPgDatabase(PG_DB);
    const [{ default: postgres }, { postgresStore }] = await Promise.all([
      import("postgres"),
      import("../../adapters/postgres/mod.ts"),
    ]);
    const open = () => postgres(url, { max: 1, onnotice: () => {} });
    const sql = open();
    const clients = [sql];
    return {
      store: postgresStore(sql) as StoreFor<unknown>,
      count: async (state, kind) =>
        Number(
          (await sql`SELECT count(*) AS n FROM errand.jobs WHERE state = ${state}
                     AND (${kind ?? null}::text IS NULL OR kind = ${kind ?? null})`)[0].n,
        ),
      connect: () => {
        const other = open();
        clients.push(other);
        return postgresStore(other) as StoreFor<unknown>;
      },
      settings: { storage: "PostgreSQL (postgres.js, pool max 1: one pipelined connection)", notify: true },
      close: async () => {
        await Promise.all(clients.map((c) => c.end({ timeout: 5 })));
      },
    };
  }
  removeSqliteFiles(SQLITE_FILE);
  const [{ createClient }, { libsqlStore }] = await Promise.all([
    import("@libsql/client"),
    import("../../adapters/libsql/mod.ts"),
  ]);
  const client = createClient({ url: `file:${SQLITE_FILE}` });
  const clients = [client];
  return {
    store: libsqlStore(client, { synchronous: CFG.sqliteSynchronous }) as StoreFor<unknown>,
    count: async (state, kind) =>
      Number(
        (await client.execute({
          sql: "SELECT count(*) AS n FROM errand_jobs WHERE state = ? AND (? IS NULL OR kind = ?)",
          args: [state, kind ?? null, kind ?? null],
        })).rows[0].n,
      ),
    connect: () => {
      const other = createClient({ url: `file:${SQLITE_FILE}` });
      clients.push(other);
      return libsqlStore(other, { synchronous: CFG.sqliteSynchronous }) as StoreFor<unknown>;
    },
    settings: { storage: `libSQL file ${SQLITE_FILE}`, journal_mode: "wal", synchronous: CFG.sqliteSynchronous },
    close: () => Promise.resolve(clients.forEach((c) => c.close())),
  };
}

/** Removes the database of `name`'s store, once its clients are closed. */
export async function removeDatabase(name: StoreName): Promise<void> {
  if (name === "postgres") await dropPgDatabase(PG_DB);
  else removeSqliteFiles(SQLITE_FILE);
}
