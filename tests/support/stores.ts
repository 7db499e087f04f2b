/**
 * The stores the conformance suite runs against: libSQL on a fresh file,
 * libSQL in memory, and PostgreSQL (a fresh schema per test) when
 * DATABASE_URL is set.
 */
import { type Client, createClient, type Transaction } from "@libsql/client";
import postgres, { type TransactionSql } from "postgres";
import { libsqlStore } from "../../adapters/libsql/mod.ts";
import { sqliteStore, type SqliteTransaction } from "../../adapters/sqlite/mod.ts";
import { postgresStore } from "../../adapters/postgres/mod.ts";
import type { StoreFor } from "../../src/store/mod.ts";
import { type Sqld, startSqld } from "./sqld.ts";
import { type SqliteDriver, sqliteDriver, sqliteDriverMissing } from "../../adapters/sqlite/drivers.ts";

/** One fresh, empty database for one test. */
export interface TestDatabase<TTx> {
  /** A store on this database in `namespace` (default "default"). */
  store(namespace?: string): StoreFor<TTx>;
  /** Runs `fn` in an application transaction: commits when it returns, rolls back when it throws. */
  transaction<T>(fn: (tx: TTx) => Promise<T>): Promise<T>;
  /** How a child process reaches the same database (for multi-process tests). */
  readonly url: string;
  /** Extra store options a child process needs (the PostgreSQL schema). */
  readonly schema?: string;
  /**
   * Makes the database itself refuse every write that adds a run record
   * holding `marker` (a trigger raises an error), as a database refuses a
   * value it cannot hold. Call it once errand has created its tables.
   */
  refuseRunsWith(marker: string): Promise<void>;
  /**
   * Opens another, empty database of the same kind (on PostgreSQL another
   * database of the server, with the same schema name), closed and removed by
   * its own `close()`.
   */
  openAnother(): Promise<TestDatabase<TTx>>;
  /**
   * Locks errand out of the database until the returned function is called,
   * as another connection can: libSQL, a write transaction held open (on
   * `:memory:`, on the client's only connection); PostgreSQL, every table of
   * the schema locked in ACCESS EXCLUSIVE mode. Call it once errand has
   * created its tables.
   */
  lock(): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

/** Opens fresh databases of one kind. */
export interface StoreKind<TTx> {
  readonly name: string;
  /** Why this kind is skipped, or undefined when it runs. */
  readonly skip?: string;
  /** Whether separate processes can share its database. */
  readonly shared: boolean;
  /**
   * Whether its database is behind a server errand reaches over the network
   * (a libSQL server): no notifications, and the server's limits on how
   * long a transaction or a stream may stay open.
   */
  readonly remote?: boolean;
  /**
   * Whether its writes block the process until the server answers (an
   * embedded replica sends them to its primary synchronously): while
   * `lock()` holds the database no timer of the process fires, so nothing
   * can end a wait for the lock before the server does.
   */
  readonly blockingWrites?: boolean;
  open(): Promise<TestDatabase<TTx>>;
}

/** A trigger by which an SQLite database refuses every write of a run record holding `marker` (see refuseRunsWith). */
const refuseRunsSql = (marker: string) =>
  `CREATE TRIGGER refuse_marked_runs BEFORE UPDATE OF runs ON errand_jobs
   WHEN NEW.runs LIKE '%${marker}%'
   BEGIN SELECT RAISE(ABORT, 'the test database refuses this value'); END`;

/** Runs `fn` in a write transaction of the libSQL `client`: commits when it returns, rolls back when it throws. */
async function clientTransaction<T>(client: Client, fn: (tx: Transaction) => Promise<T>): Promise<T> {
  const tx = await client.transaction("write");
  try {
    const result = await fn(tx);
    await tx.commit();
    return result;
  } catch (err) {
    await tx.rollback();
    throw err;
  } finally {
    tx.close();
  }
}

let counter = 0;
const unique = () => `${Date.now().toString(36)}${process.pid.toString(36)}${(counter++).toString(36)}`;

/** libSQL on a new database file, or in memory. */
export function libsqlKind(where: "file" | "memory"): StoreKind<Transaction> {
  const kind: StoreKind<Transaction> = {
    name: `libsql-${where}`,
    shared: where === "file",
    open() {
      const dir = `${tmpdir()}/errand-tests`;
      const url = where === "memory" ? ":memory:" : `file:${dir}/${unique()}.db`;
      if (where === "file") ensureDir(dir);
      const client = createClient({ url });
      return Promise.resolve({
        url,
        store: (namespace = "default") => libsqlStore(client, { namespace }),
        transaction: (fn) => clientTransaction(client, fn),
        refuseRunsWith: (marker) => client.execute(refuseRunsSql(marker)).then(() => {}),
        openAnother: () => kind.open(),
        async lock() {
          const holder = where === "memory" ? client : createClient({ url });
          const tx = await holder.transaction("write");
          return async () => {
            await tx.commit();
            tx.close();
            if (holder !== client) holder.close();
          };
        },
        close() {
          client.close();
          if (where === "file") removeDbFiles(url.slice("file:".length));
          return Promise.resolve();
        },
      });
    },
  };
  return kind;
}

/**
 * libSQL on a libSQL server (sqld) reached over Hrana on HTTP or on
 * WebSockets: a fresh server, so a fresh database, per test database.
 * Without the sqld binary every test fails saying how to install it.
 */
export function sqldKind(protocol: "http" | "ws"): StoreKind<Transaction> {
  return sqldServerKind(`sqld-${protocol}`, {}, (server) => {
    const url = protocol === "http" ? server.httpUrl : server.wsUrl;
    return { url, client: createClient({ url }), remove: () => {} };
  });
}

/**
 * libSQL on an embedded replica of a libSQL server (sqld): a local file
 * that syncs from the server, whose writes go to the server (a fresh server
 * and file per test database). A child process reaches the same database
 * through the server's URL.
 */
export function sqldReplicaKind(): StoreKind<Transaction> {
  return sqldServerKind("sqld-replica", { blockingWrites: true }, (server) => {
    const dir = mkdtempSync(`${tmpdir()}/errand-replica-`);
    const client = createClient({ url: `file:${dir}/replica.db`, syncUrl: server.httpUrl });
    return { url: server.httpUrl, client, remove: () => rmSync(dir, { recursive: true, force: true }) };
  });
}

/**
 * A libSQL server per test database, reached by the client `connect` makes
 * of it, at `url` (another client there holds `lock()`); `remove` deletes
 * what that client left once it is closed.
 */
function sqldServerKind(
  name: string,
  traits: Pick<StoreKind<Transaction>, "blockingWrites">,
  connect: (server: Sqld) => { url: string; client: Client; remove: () => void },
): StoreKind<Transaction> {
  const kind: StoreKind<Transaction> = {
    name,
    shared: true,
    remote: true,
    ...traits,
    async open() {
      const server = await startSqld();
      const { url, client, remove } = connect(server);
      return {
        url,
        store: (namespace = "default") => libsqlStore(client, { namespace }),
        transaction: (fn) => clientTransaction(client, fn),
        refuseRunsWith: (marker) => client.execute(refuseRunsSql(marker)).then(() => {}),
        openAnother: () => kind.open(),
        async lock() {
          // The server takes a write transaction away after 5 s of holding it: a lock lasts at most that long.
          const holder = createClient({ url });
          const tx = await holder.transaction("write");
          await tx.execute("DELETE FROM errand_jobs WHERE 0");
          return async () => {
            await tx.commit().catch(() => undefined);
            tx.close();
            holder.close();
          };
        },
        async close() {
          client.close();
          remove();
          await server.close();
        },
      };
    },
  };
  return kind;
}

/** SQLite on a new database file through `driver`: skipped, saying why, on a runtime without it. */
export async function sqliteKind(driver: SqliteDriver): Promise<StoreKind<SqliteTransaction>> {
  const name = `sqlite-${driver.replace(":sqlite", "")}`;
  const missing = sqliteDriverMissing(driver);
  if (missing) return { name, shared: true, skip: missing, open: () => Promise.reject(new Error(missing)) };
  const open = await sqliteDriver(driver);
  const kind: StoreKind<SqliteTransaction> = {
    name,
    shared: true,
    open() {
      const dir = `${tmpdir()}/errand-tests`;
      ensureDir(dir);
      const path = `${dir}/${unique()}.db`;
      const db = open(path);
      const url = `file:${path}`;
      return Promise.resolve({
        url,
        store: (namespace = "default") => sqliteStore(db, { namespace }),
        transaction: (fn) => sqliteStore(db).transaction(fn),
        refuseRunsWith(marker) {
          db.exec(refuseRunsSql(marker));
          return Promise.resolve();
        },
        openAnother: () => kind.open(),
        lock() {
          const holder = open(path);
          holder.exec("BEGIN IMMEDIATE");
          return Promise.resolve(() => {
            holder.exec("COMMIT");
            (holder as unknown as { close(): void }).close();
            return Promise.resolve();
          });
        },
        close() {
          (db as unknown as { close(): void }).close();
          removeDbFiles(path);
          return Promise.resolve();
        },
      });
    },
  };
  return kind;
}

/**
 * PostgreSQL at DATABASE_URL, a fresh schema per test. PgBouncer users in
 * transaction mode connect with `prepare: false` and `notify: false` (no
 * LISTEN, so workers poll), as users of a server without LISTEN/NOTIFY do.
 */
export function postgresKind(options: { prepare?: boolean; notify?: boolean } = {}): StoreKind<TransactionSql> {
  const prepare = options.prepare ?? true;
  const notify = options.notify ?? true;
  const url = process.env.DATABASE_URL;
  const required = process.env.ERRAND_REQUIRE_PG === "1";
  if (!url && required) throw new Error("ERRAND_REQUIRE_PG=1 but DATABASE_URL is not set");
  return {
    name: ["postgres", ...(prepare ? [] : ["unprepared"]), ...(notify ? [] : ["polling"])].join("-"),
    shared: true,
    skip: url
      ? undefined
      : "DATABASE_URL is not set; PostgreSQL tests skipped (set it, e.g. postgres://root@127.0.0.1:5432/test)",
    open: () => openPostgres(url!, `errand_t_${unique()}`, prepare, notify),
  };
}

/** A fresh schema on the database at `url`. */
function openPostgres(
  url: string,
  schema: string,
  prepare: boolean,
  notify: boolean,
): Promise<TestDatabase<TransactionSql>> {
  const sql = postgres(url, { max: 6, prepare, onnotice: () => {} });
  return Promise.resolve({
    url,
    schema,
    store: (namespace = "default") => postgresStore(sql, { namespace, schema, notify }),
    transaction: <T>(fn: (tx: TransactionSql) => Promise<T>) => sql.begin(fn) as Promise<T>,
    async refuseRunsWith(marker) {
      await sql.unsafe(`
            CREATE FUNCTION "${schema}".refuse_marked_runs() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
              IF NEW.runs::text LIKE '%${marker}%' THEN RAISE EXCEPTION 'the test database refuses this value'; END IF;
              RETURN NEW;
            END $$;
            CREATE TRIGGER refuse_marked_runs BEFORE UPDATE OF runs ON "${schema}".jobs
              FOR EACH ROW EXECUTE FUNCTION "${schema}".refuse_marked_runs();
            -- A finished job's outcome moves its row to the history: an insert there.
            CREATE TRIGGER refuse_marked_runs BEFORE INSERT ON "${schema}".history
              FOR EACH ROW EXECUTE FUNCTION "${schema}".refuse_marked_runs();`);
    },
    async lock() {
      const holder = postgres(url, { max: 1, onnotice: () => {} });
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      let locked!: () => void;
      const held = new Promise<void>((resolve) => (locked = resolve));
      const transaction = holder.begin(async (tx) => {
        const tables = await tx<{ name: string }[]>`
          SELECT tablename AS name FROM pg_tables WHERE schemaname = ${schema}`;
        const names = tables.map((t) => `"${schema}"."${t.name}"`).join(", ");
        await tx.unsafe(`LOCK TABLE ${names} IN ACCESS EXCLUSIVE MODE`);
        locked();
        await released;
      });
      await Promise.race([held, transaction]);
      return async () => {
        release();
        await transaction;
        await holder.end({ timeout: 5 });
      };
    },
    async openAnother() {
      // Creating a database changes no setting of the shared server; the copy is dropped on close.
      const name = `errand_d_${unique()}`;
      await sql.unsafe(`CREATE DATABASE "${name}"`);
      const other = new URL(url);
      other.pathname = `/${name}`;
      const db = await openPostgres(other.href, schema, prepare, notify);
      return {
        ...db,
        async close() {
          await db.close();
          await sql.unsafe(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
        },
      };
    },
    async close() {
      await sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await sql.end({ timeout: 5 });
    },
  });
}

/** Every store kind of the suite. */
export function allKinds(): StoreKind<unknown>[] {
  return [libsqlKind("file"), libsqlKind("memory"), postgresKind()] as StoreKind<unknown>[];
}

import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";

function ensureDir(dir: string): void {
  mkdirSync(dir, { recursive: true });
}

function removeDbFiles(path: string): void {
  for (const suffix of ["", "-wal", "-shm"]) rmSync(path + suffix, { force: true });
}
