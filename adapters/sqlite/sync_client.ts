/**
 * A synchronous SQLite driver's database (`node:sqlite`'s `DatabaseSync`,
 * `bun:sqlite`'s `Database`, the `libsql` package's `Database`) in the shape
 * errand's SQLite dialect runs on (adapters/libsql/driver.ts), with every
 * statement prepared once and reused.
 *
 * The database is one connection: a transaction begun on it holds every
 * statement run on it until it ends, so errand's operations on it take
 * turns (adapters/libsql/turns.ts) and the application's writes go through
 * `store.transaction()`.
 *
 * @module
 */
import type { Client, InStatement, InValue, ResultSet, Row, Transaction } from "../libsql/driver.ts";
import { type Parameters, parameters, usedArguments } from "../libsql/parameters.ts";

/** The part of a synchronous SQLite driver's statement errand uses. */
export interface SqliteStatement {
  /** Runs it and returns its rows. */
  all(...params: never[]): unknown[];
  /** Runs it and returns how many rows it wrote. */
  run(...params: never[]): { changes: number | bigint };
}

/**
 * The part of a synchronous SQLite driver's database errand uses:
 * `node:sqlite`'s `DatabaseSync` (Node 22.5+, Deno), `bun:sqlite`'s
 * `Database` (Bun) and the `libsql` package's `Database` (Node 20+, Deno,
 * Bun) all have it.
 */
export interface SqliteDatabase {
  /** Compiles one statement. */
  prepare(sql: string): SqliteStatement;
  /** Runs a script of statements without arguments. */
  exec(sql: string): unknown;
}

/** The driver's statement, as errand runs it, with the parameters it uses. */
interface Prepared extends Parameters {
  readonly all: (...params: unknown[]) => Row[];
  readonly run: (...params: unknown[]) => { changes: number | bigint };
  /** Whether it returns rows (run with `all`), else run with `run` for the count of rows written. */
  readonly reader: boolean;
}

/**
 * How many statements stay prepared: more than errand's statement shapes,
 * so that only the application's own SQL (run through `tx.execute`) can
 * push it over, and then the cache starts again.
 */
const MOST_PREPARED = 2_000;

/** A synchronous driver's database as a {@link Client}. */
export class SyncClient implements Client {
  readonly protocol = "file";
  readonly synchronousDriver = true;
  readonly #db: SqliteDatabase;
  readonly #prepared = new Map<string, Prepared>();

  /** Wraps `db`. */
  constructor(db: SqliteDatabase) {
    this.#db = db;
  }

  execute(statement: InStatement): Promise<ResultSet> {
    try {
      return Promise.resolve(this.executeNow(statement));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** Runs one statement now, on the driver's thread. */
  executeNow(statement: InStatement): ResultSet {
    const { sql, args } = typeof statement === "string" ? { sql: statement, args: undefined } : statement;
    const prepared = this.#prepare(sql);
    // A driver may refuse arguments its statement does not use (node:sqlite does): they are left out.
    const used = args === undefined ? [] : usedArguments(args, prepared);
    const params = Array.isArray(used)
      ? used.map(toDriverValue)
      : [Object.fromEntries(Object.entries(used).map(([name, value]) => [name, toDriverValue(value)]))];
    if (prepared.reader) {
      const rows = prepared.all(...params);
      return { rows, rowsAffected: rows.length };
    }
    return { rows: [], rowsAffected: Number(prepared.run(...params).changes) };
  }

  /** Runs one statement without arguments now, on the driver's thread, leaving any rows it returns unread. */
  runNow(sql: string): void {
    this.#prepare(sql).run();
  }

  executeMultiple(sql: string): Promise<void> {
    try {
      this.executeScriptNow(sql);
      return Promise.resolve();
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** Runs a script of statements now, on the driver's thread. */
  executeScriptNow(sql: string): void {
    this.#db.exec(sql);
  }

  /** Begins a transaction on the database's one connection (`"write"`: holding the write lock from the start). */
  async transaction(mode: "write" | "read" | "deferred"): Promise<Transaction> {
    await this.execute(mode === "write" ? "BEGIN IMMEDIATE" : "BEGIN");
    return new SyncTransaction(this);
  }

  #prepare(sql: string): Prepared {
    let prepared = this.#prepared.get(sql);
    if (prepared) return prepared;
    if (this.#prepared.size >= MOST_PREPARED) this.#prepared.clear();
    const statement = this.#db.prepare(sql) as unknown as DriverStatement;
    prepared = {
      all: statement.all.bind(statement) as Prepared["all"],
      run: statement.run.bind(statement) as Prepared["run"],
      reader: returnsRows(statement, sql),
      ...parameters(sql),
    };
    this.#prepared.set(sql, prepared);
    return prepared;
  }
}

/** A transaction on a {@link SyncClient}'s connection, begun already. */
export class SyncTransaction implements Transaction {
  readonly #client: SyncClient;
  #ended = false;

  /** On `client`, whose connection is in a transaction. */
  constructor(client: SyncClient) {
    this.#client = client;
  }

  execute(statement: InStatement): Promise<ResultSet> {
    return this.#client.execute(statement);
  }

  async batch(statements: InStatement[]): Promise<ResultSet[]> {
    const results: ResultSet[] = [];
    for (const statement of statements) results.push(await this.execute(statement));
    return results;
  }

  executeMultiple(sql: string): Promise<void> {
    return this.#client.executeMultiple(sql);
  }

  async commit(): Promise<void> {
    await this.execute("COMMIT");
    this.#ended = true;
  }

  async rollback(): Promise<void> {
    this.#ended = true;
    await this.execute("ROLLBACK");
  }

  close(): void {
    if (this.#ended) return;
    this.#ended = true;
    try {
      this.#client.executeNow("ROLLBACK");
    } catch {
      // SQLite rolled it back already (after some errors it does).
    }
  }
}

/** What the three drivers' statements have beyond {@link SqliteStatement}, each its own way. */
interface DriverStatement {
  all(...params: unknown[]): Row[];
  run(...params: unknown[]): { changes: number | bigint };
  /** `bun:sqlite` and `libsql`: whether it returns rows. */
  readonly reader?: boolean;
  /** `node:sqlite` (22.16 and later): the columns it returns. */
  columns?(): unknown[];
}

/**
 * Whether a statement returns rows: as its driver says, or (`node:sqlite`
 * before 22.16) as its text does.
 */
function returnsRows(statement: DriverStatement, sql: string): boolean {
  if (typeof statement.reader === "boolean") return statement.reader;
  if (typeof statement.columns === "function") return statement.columns().length > 0;
  return /^\s*(SELECT|PRAGMA|VALUES|WITH)\b|\bRETURNING\b/i.test(sql);
}

/** A value as every driver binds it: `libsql` and `node:sqlite` take no booleans, none takes an ArrayBuffer or a Date. */
function toDriverValue(value: InValue): unknown {
  if (typeof value === "boolean") return value ? 1 : 0;
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  if (value instanceof Date) return value.getTime();
  return value;
}
