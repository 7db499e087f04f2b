/**
 * errand's way onto the application's postgres.js client: each statement
 * runs on the client or in the application's transaction (checked to be
 * one), prepared as the client is configured, and driver errors become
 * errand's: `StoreUnavailableError` for a condition that passes (the server
 * cannot be reached or is out of a resource, or it cancelled the statement
 * for a timeout or a conflict with another transaction), `StoreError` for
 * any other.
 *
 * @module
 */
import type { Sql, TransactionSql } from "postgres";
import {
  describeValue,
  ErrandError,
  StoreError,
  StoreUnavailableError,
  ValidationError,
} from "../../src/base/errors.ts";

/** A row as postgres.js returns it. */
export type Row = Record<string, unknown>;
/** The client, or a transaction of it. */
export type Querier = Sql | TransactionSql;

/** Where the store's statements write: the namespace, its NOTIFY channel and the quoted table names. */
export interface StoreTarget {
  /** The quoted schema name. */
  readonly schema: string;
  readonly namespace: string;
  /** Whether inserts of available jobs NOTIFY the namespace's channel. */
  readonly notify: boolean;
  readonly channel: string;
  /** The quoted names of the tables it writes. */
  readonly tables: {
    readonly jobs: string;
    /** Finished jobs (history.ts), and the view of both tables. */
    readonly history: string;
    readonly allJobs: string;
    readonly queues: string;
    readonly parents: string;
    readonly partitions: string;
    /** Rate-limit windows and group pauses (flow control). */
    readonly rates: string;
    readonly pauses: string;
    readonly workers: string;
    readonly schedules: string;
    readonly leaders: string;
    /** Workflows' steps, and the events that resume them. */
    readonly steps: string;
    readonly events: string;
  };
}

/** Settings of the PostgreSQL store, resolved. */
export interface PostgresStoreSettings {
  readonly namespace: string;
  /** The schema's name, unquoted. */
  readonly schema: string;
  readonly migrate: boolean;
  readonly notify: boolean;
}

/** What every operation of the store runs with: the connection, where it writes, and the store's settings. */
export interface PostgresContext {
  /** The connection every statement goes through. */
  readonly db: PostgresConnection;
  readonly target: StoreTarget;
  readonly settings: PostgresStoreSettings;
  /** The names of the history's day partitions this store has seen exist (history.ts). */
  readonly historyDays: Set<string>;
}

/** Statements on a postgres.js client. */
export class PostgresConnection {
  /** The application's client. */
  readonly sql: Sql;

  /** Wraps `sql`. */
  constructor(sql: Sql) {
    this.sql = sql;
  }

  /** Runs `text` with `args` on the client, or in the application's transaction `tx`. */
  query(text: string, args: unknown[], tx?: TransactionSql): Promise<Row[]> {
    const q: Querier = tx === undefined ? this.sql : checkTransaction(tx, this.sql);
    return this.run(async () => [...await q.unsafe(text, args as never[], { prepare: this.sql.options.prepare })]);
  }

  /** Runs `fn`, converting driver errors to errand's. */
  async run<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      throw toErrandError(err);
    }
  }
}

const CONNECTION_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ENOTFOUND",
  "ETIMEDOUT",
  "EPIPE",
  "CONNECTION_CLOSED",
  "CONNECTION_ENDED",
  "CONNECTION_DESTROYED",
  "CONNECT_TIMEOUT",
  "57P01",
  "57P02",
  "57P03",
]);

/**
 * Statements the server cancelled for a reason that passes, not for the
 * values they carry: a `statement_timeout` (57014), a `lock_timeout` (55P03),
 * a deadlock victim (40P01), a serialization failure (40001). The statement,
 * and the transaction it ran in, left nothing behind: trying again is safe.
 */
const CANCELLED_CODES: ReadonlyMap<string, string> = new Map([
  ["57014", "statement timeout or cancel"],
  ["55P03", "lock timeout"],
  ["40P01", "deadlock"],
  ["40001", "serialization failure"],
]);

/**
 * `tx` if it is a postgres.js transaction of the client `sql`: the `sql` of
 * `sql.begin()` or of a savepoint (the client's own `sql` has no
 * `savepoint`). A transaction shares its client's `json` function, which
 * another client (and so any other database) has its own of: a write in
 * another client's transaction would commit where the store never looks.
 * @throws {ValidationError} Otherwise.
 */
export function checkTransaction(tx: unknown, sql: Sql): TransactionSql {
  const t = tx as { unsafe?: unknown; savepoint?: unknown; json?: unknown } | null;
  if (typeof tx !== "function" || typeof t?.unsafe !== "function" || typeof t.savepoint !== "function") {
    throw new ValidationError(
      `Option "tx" must be a postgres.js transaction (the tx of sql.begin(async (tx) => ...)), got ${
        describeValue(tx)
      }`,
    );
  }
  if (t.json !== sql.json) {
    throw new ValidationError(
      `Option "tx" must be a transaction of the client this store was given (sql.begin() on the sql passed to postgresStore), got one of another postgres.js client`,
    );
  }
  return tx as TransactionSql;
}

/** `err` as errand's error: {@link StoreUnavailableError} when trying again later can succeed, else {@link StoreError}. */
export function toErrandError(err: unknown): Error {
  if (err instanceof ErrandError) return err;
  const code = String((err as { code?: unknown })?.code ?? "");
  const message = (err as Error)?.message ?? String(err);
  // Class 08 is a broken connection; class 53 a server out of a resource (connection slots, memory, disk) that
  // frees up again: both are worth retrying, never a reason to fail a job's outcome.
  if (CONNECTION_CODES.has(code) || code.startsWith("08") || code.startsWith("53")) {
    return new StoreUnavailableError(`PostgreSQL cannot be reached (${code}): ${message}`, { cause: err });
  }
  const cancelled = CANCELLED_CODES.get(code);
  if (cancelled) {
    return new StoreUnavailableError(`PostgreSQL cancelled the statement (${code}, ${cancelled}): ${message}`, {
      cause: err,
      conflict: true,
    });
  }
  return new StoreError(`PostgreSQL error${code ? ` ${code}` : ""}: ${message}`, { cause: err });
}
