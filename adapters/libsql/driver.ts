/**
 * The part of a SQLite driver errand's SQLite dialect uses, in the shape of
 * `@libsql/client`'s `Client` and `Transaction`: a libSQL client fits it as
 * it is, and `sqliteStore()` wraps a synchronous driver (`node:sqlite`,
 * `bun:sqlite`, `libsql`) to fit it (adapters/sqlite/sync_client.ts). The
 * statements of every operation are written once, against these types.
 *
 * @module
 */

/** A value bound to a statement's parameter. */
export type InValue = null | string | number | bigint | boolean | Uint8Array | ArrayBuffer | Date;

/** A statement: SQL alone, or with positional (`?`, `?1`) or named (`:name`) arguments. */
export type InStatement = string | { sql: string; args?: InValue[] | Record<string, InValue> };

/** A row, read by column name. */
export type Row = Record<string, unknown>;

/** What one statement returned. */
export interface ResultSet {
  /** The rows it returned, if any. */
  rows: Row[];
  /** How many rows it wrote. */
  rowsAffected: number;
}

/** Statements on one connection, inside a transaction begun by {@link Client.transaction}. */
export interface Transaction {
  /** Runs one statement. */
  execute(statement: InStatement): Promise<ResultSet>;
  /** Runs statements in order; a later one sees what an earlier one wrote. */
  batch(statements: InStatement[]): Promise<ResultSet[]>;
  /** Runs a script of statements separated by semicolons, without arguments. */
  executeMultiple(sql: string): Promise<void>;
  /** Commits. */
  commit(): Promise<void>;
  /** Rolls back. */
  rollback(): Promise<void>;
  /** Ends the transaction, rolling back what was not committed. */
  close(): void;
}

/** A database errand's SQLite dialect runs on. */
export interface Client {
  /** "file" for a local database (a file or in memory); "http", "ws" and the like for a server. */
  readonly protocol: string;
  /**
   * Whether it is a synchronous driver's shim (adapters/sqlite/sync_client.ts):
   * it keeps each statement prepared for later calls, so a statement with
   * parameters is compiled once, and its driver builds each returned row
   * natively; `@libsql/client` compiles every statement anew and builds
   * each row in JavaScript, two properties per column.
   */
  readonly synchronousDriver?: boolean;
  /** Runs one statement, outside any transaction of errand's. */
  execute(statement: InStatement): Promise<ResultSet>;
  /** Runs a script of statements separated by semicolons, without arguments. */
  executeMultiple(sql: string): Promise<void>;
  /** Begins a transaction on a connection it owns until it ends. */
  transaction(mode: "write" | "read" | "deferred"): Promise<Transaction>;
}
