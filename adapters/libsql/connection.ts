/**
 * How errand writes to a libSQL database that other processes share: the
 * write-lock protocol, and the context every operation of the store runs
 * with (the connection, the namespace, the settings). Every write runs in
 * its own transaction that takes SQLite's write lock first, never as a bare
 * autocommit statement, with SQLite's own busy wait set on the connection
 * that runs it; a write that still meets `SQLITE_BUSY` is retried for up to
 * `busyTimeout`. Operations take turns (turns.ts).
 *
 * @module
 */
import type { Client, InStatement, ResultSet, Transaction } from "./driver.ts";
import {
  describeValue,
  ErrandError,
  StoreError,
  StoreUnavailableError,
  ValidationError,
} from "../../src/base/errors.ts";
import { runtimeTimers, Turns } from "./turns.ts";
import { TAKE_WRITE_LOCK, type WriteProtocol } from "./write_protocol.ts";

/**
 * Reads the random id that tells this database from any other (see
 * {@link LibsqlConnection.joinTransaction}). It is a row of
 * `errand_migrations` at version 0, below every migration, so it needs no
 * migration of its own.
 */
const DATABASE_ID = "SELECT name FROM errand_migrations WHERE version = 0";

/** The settings the protocol needs. */
export interface ConnectionSettings {
  /** How long a write retries while another writer holds the database. */
  readonly busyTimeoutMs: number;
  /** SQLite's `synchronous` level of synced commits. */
  readonly synchronous: "full" | "normal";
}

/** Settings of the libSQL store, resolved. */
export interface LibsqlStoreSettings extends ConnectionSettings {
  /** The namespace every operation is confined to. */
  readonly namespace: string;
  /** Whether `ensureSchema` may migrate an older schema (else it refuses it). */
  readonly migrate: boolean;
}

/** What every operation of the store runs with: the connection, the namespace and the settings. */
export interface LibsqlContext {
  /** The connection every statement goes through. */
  readonly db: LibsqlConnection;
  /** The namespace every operation is confined to (`settings.namespace`). */
  readonly namespace: string;
  /** The store's settings. */
  readonly settings: LibsqlStoreSettings;
}

/**
 * errand's operations on one client, from every store made on it: stores of
 * several namespaces on one client take turns together, so that no store
 * begins a write while another's transaction is open on the same connection.
 */
interface ClientTurns extends Turns {
  /** How many of the application's write transactions ({@link LibsqlConnection.applicationTransaction}) are queued or open. */
  applicationTransactions: number;
}

const clientTurns = new WeakMap<Client, ClientTurns>();

/** The turns of every store on `client`. */
function turnsOf(client: Client): ClientTurns {
  let turns = clientTurns.get(client);
  if (!turns) clientTurns.set(client, turns = Object.assign(new Turns(), { applicationTransactions: 0 }));
  return turns;
}

/** errand's way onto a libSQL client: reads, writes and write transactions under the protocol. */
export class LibsqlConnection {
  /** The application's client. */
  readonly client: Client;
  readonly #busyTimeoutMs: number;
  /** The turns of every store on this client (see {@link turnsOf}). */
  readonly #turns: ClientTurns;
  /** How errand's write transactions begin and end on this client. */
  readonly #writes: WriteProtocol;
  /** This database's id (see {@link DATABASE_ID}), read or made once errand's tables exist. */
  #databaseId: Promise<string> | undefined;
  /** The application's transactions already seen to be on this database. */
  readonly #ownTransactions = new WeakSet<Transaction>();

  /** Wraps `client`, whose write transactions begin and end by `writes`. */
  constructor(client: Client, settings: ConnectionSettings, writes: WriteProtocol) {
    this.client = client;
    this.#busyTimeoutMs = settings.busyTimeoutMs;
    this.#writes = writes;
    this.#turns = turnsOf(client);
  }

  /** Runs one read-only statement. */
  read(statement: InStatement): Promise<ResultSet> {
    return this.run(() => this.client.execute(statement));
  }

  /**
   * Runs one writing statement in the application's transaction, or else in
   * its own write transaction. Never as a bare autocommit
   * statement: when the commit of an autocommit `UPDATE ... RETURNING` meets
   * SQLITE_BUSY, the driver hands back the returned rows without an error
   * although nothing was written, which would let two processes claim one job.
   */
  async write(statement: InStatement, tx?: Transaction): Promise<ResultSet> {
    if (tx) return await this.run(() => tx.execute(statement), false);
    return await this.run(() => this.transaction((t) => t.execute(statement)));
  }

  /**
   * Runs writing statements in order as one batch (one round trip), in the
   * application's transaction, or else in its own write transaction; a later
   * statement sees what an earlier one wrote.
   */
  async writeBatch(statements: InStatement[], tx?: Transaction): Promise<ResultSet[]> {
    if (tx) return await this.run(() => tx.batch(statements), false);
    return await this.run(() => this.transaction((t) => t.batch(statements)));
  }

  /**
   * {@link LibsqlConnection.write} for claims and lease renewals: the commit
   * is not synced. An `urgent` one (a renewal) runs before every operation
   * waiting for its turn.
   */
  writeUnsynced(statement: InStatement, urgent = false): Promise<ResultSet> {
    return this.run(() => this.transaction((t) => t.execute(statement), TAKE_WRITE_LOCK, false), true, urgent);
  }

  /**
   * Runs a script of writing statements in its own write transaction, as
   * one script: it prepares no statement object, which would hold native
   * memory until garbage collection.
   */
  writeScript(script: string): Promise<void> {
    return this.run(() => this.#writes.script(script));
  }

  /**
   * This database's id (see {@link DATABASE_ID}), made on first use by the
   * first process to need it. Read when errand's tables are ready (before the
   * application's transaction can hold an in-memory database's only connection).
   */
  databaseId(): Promise<string> {
    this.#databaseId ??= this.#readDatabaseId().catch((err) => {
      this.#databaseId = undefined; // read again next time
      throw err;
    });
    return this.#databaseId;
  }

  async #readDatabaseId(): Promise<string> {
    const read = async () => (await this.read(DATABASE_ID)).rows[0]?.name;
    const id = await read();
    if (id !== undefined) return String(id);
    await this.write({
      sql: `INSERT INTO errand_migrations (version, name, applied_at)
            VALUES (0, 'database ' || lower(hex(randomblob(16))), ?) ON CONFLICT DO NOTHING`,
      args: [Date.now()],
    });
    return String(await read());
  }

  /**
   * The application's transaction `tx` as errand's statements run in it,
   * once it is checked to be on this database (read once per transaction):
   * the driver's `Transaction` tells nothing of its client, so its
   * database's id is compared. A write in a transaction of another database
   * would commit where the store never looks.
   * @throws {ValidationError} Unless it is.
   */
  async joinTransaction(tx: Transaction): Promise<Transaction> {
    await this.#checkOwnTransaction(tx);
    return await this.#writes.join(tx);
  }

  async #checkOwnTransaction(tx: Transaction): Promise<void> {
    if (this.#ownTransactions.has(tx)) return;
    const own = await this.databaseId();
    const id = await this.run(() => tx.execute(DATABASE_ID), false).then(
      (rs) => rs.rows[0]?.name,
      (err) => {
        // A database without errand's tables is another one too.
        if (/no such table/i.test(String((err as Error)?.message))) return undefined;
        throw err;
      },
    );
    if (id !== own) {
      throw new ValidationError(
        `Option "tx" must be a transaction of the database this store is on (client.transaction("write") on a client of that database), got one of another database`,
      );
    }
    this.#ownTransactions.add(tx);
  }

  /**
   * Runs `fn` in a write transaction that holds SQLite's write lock (taken
   * by `takeLock`) and has SQLite's own busy wait set: retrying from
   * JavaScript alone stalls processes that share a file, and so does
   * setting the wait only after a busy error (see write_protocol.ts). With
   * `synced` false the commit is not synced (claims and lease renewals).
   */
  async transaction<T>(
    fn: (tx: Transaction) => Promise<T>,
    takeLock = TAKE_WRITE_LOCK,
    synced = true,
  ): Promise<T> {
    const write = await this.#writes.open(takeLock, synced);
    try {
      const result = await fn(write.tx);
      await write.commit();
      return result;
    } finally {
      await write.close();
    }
  }

  /**
   * Runs the application's `fn` in a write transaction of its own, in turn
   * with errand's operations: SQLite's busy wait blocks the event loop, so a
   * write of this process that waited for the lock held by a transaction of
   * this same process would stall the very loop that transaction needs to
   * commit. Only taking the lock is retried while another process holds it;
   * `fn` runs once, its errors reach the caller as they are, and the commit
   * is synced at errand's level.
   */
  async applicationTransaction<T>(fn: (tx: Transaction) => Promise<T>): Promise<T> {
    this.#turns.applicationTransactions++;
    try {
      return await this.#inTurn(async () => {
        const deadline = Date.now() + this.#busyTimeoutMs;
        for (let attempt = 0;; attempt++) {
          let write;
          try {
            write = await this.#writes.open(TAKE_WRITE_LOCK, true);
          } catch (err) {
            if (isBusy(err) && Date.now() < deadline) {
              await backOff(attempt);
              continue;
            }
            throw toErrandError(err);
          }
          try {
            // The application's own errors reach it as they are; a server's ending the transaction is errand's to say.
            const value = await fn(write.tx).catch((err) =>
              Promise.reject(serverEnded(err) ? toErrandError(err) : err)
            );
            await write.commit().catch((err) => Promise.reject(toErrandError(err)));
            return value;
          } finally {
            await write.close();
          }
        }
      });
    } finally {
      this.#turns.applicationTransactions--;
    }
  }

  /**
   * Runs `fn` (on the client unless `onClient` is false: the application's
   * transaction), retrying it on the client while SQLite reports the database
   * busy, and converts driver errors to errand's. An `urgent` one takes its
   * turn before every operation waiting for theirs.
   */
  run<T>(fn: () => Promise<T>, onClient = true, urgent = false): Promise<T> {
    if (!onClient) return this.#attempt(fn, false);
    return this.#inTurn(() => this.#attempt(fn, true), urgent);
  }

  /**
   * Runs `fn` in its turn (see turns.ts). While the application's
   * transaction is queued or open, an operation gives up after the busy
   * timeout: an errand call made inside that transaction without `{ tx }`
   * waits for it to end, which waits for the call, so it fails as it would
   * have waiting for the lock instead of never ending.
   */
  #inTurn<T>(fn: () => Promise<T>, urgent = false): Promise<T> {
    if (this.#turns.applicationTransactions === 0) return this.#turns.take(fn, urgent);
    return this.#turns.take(fn, urgent, {
      ms: this.#busyTimeoutMs,
      error: () =>
        new StoreUnavailableError(
          `An errand operation waited ${this.#busyTimeoutMs} ms for the application's write transaction (store.transaction()) to end; an errand call made inside that transaction must take it as { tx }`,
        ),
    });
  }

  async #attempt<T>(fn: () => Promise<T>, retryBusy: boolean): Promise<T> {
    const deadline = Date.now() + this.#busyTimeoutMs;
    for (let attempt = 0;; attempt++) {
      try {
        return await fn();
      } catch (err) {
        if (retryBusy && isBusy(err) && Date.now() < deadline) {
          await backOff(attempt);
          continue;
        }
        throw toErrandError(err);
      }
    }
  }
}

/** @throws {ValidationError} Unless `tx` is absent or a libSQL `Transaction`. */
export function checkTransaction(tx: unknown): void {
  if (tx === undefined) return;
  const t = tx as Partial<Transaction> | null;
  if (typeof t?.execute !== "function" || typeof t.commit !== "function" || typeof t.rollback !== "function") {
    throw new ValidationError(
      `Option "tx" must be a libSQL Transaction (from await client.transaction("write")), got ${describeValue(tx)}`,
    );
  }
}

/**
 * Whether another writer holds the database: SQLite's busy error, or (on a
 * single-connection client such as `:memory:`) an open transaction holding the
 * client's only connection.
 */
function isBusy(err: unknown): boolean {
  const code = String((err as { code?: unknown })?.code ?? "");
  return code.startsWith("SQLITE_BUSY") || code === "TRANSACTION_ACTIVE" ||
    /database is locked/i.test(String((err as Error)?.message));
}

/**
 * Whether a libSQL server ended the transaction under it: it takes a write
 * transaction away once it has been open 5 s and another writer waits
 * (TRANSACTION_TIMEOUT), and ends a stream left idle for 10 s (STREAM_EXPIRED).
 */
function serverEnded(err: unknown): boolean {
  const code = String((err as { code?: unknown })?.code ?? "");
  return code === "TRANSACTION_TIMEOUT" || code === "STREAM_EXPIRED";
}

function toErrandError(err: unknown): Error {
  if (err instanceof ErrandError) return err;
  const code = String((err as { code?: unknown })?.code ?? "");
  const message = (err as Error)?.message ?? String(err);
  if (serverEnded(err)) {
    return new StoreUnavailableError(
      `The libSQL server ended the transaction and rolled it back (${code}): a server takes a write transaction away once it has been open 5 s while another writer waits, and ends a stream idle for 10 s, so a store.transaction() on a libSQL server must finish within 5 s (${message})`,
      { cause: err },
    );
  }
  if (code === "CLIENT_CLOSED" || code === "SQLITE_CANTOPEN" || /ECONNREFUSED|fetch failed/i.test(message)) {
    return new StoreUnavailableError(`The libSQL database cannot be reached: ${message}`, { cause: err });
  }
  if (isBusy(err)) {
    // Another writer held the database past the busy timeout: it passes, like an unreachable database.
    return new StoreUnavailableError(`The libSQL database stayed locked by another writer (${code}): ${message}`, {
      cause: err,
    });
  }
  return new StoreError(`libSQL error${code ? ` ${code}` : ""}: ${message}`, { cause: err });
}

/**
 * Waits before the next try of a write that met another writer. Writes hold
 * the lock for well under a millisecond: retry at once a few times, then
 * back off a little.
 */
function backOff(attempt: number): Promise<void> {
  const ms = attempt < 20 ? 0 : Math.random() * Math.min(20, attempt - 19);
  return new Promise((resolve) => runtimeTimers.after(ms, resolve));
}
