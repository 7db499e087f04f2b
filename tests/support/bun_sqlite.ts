/**
 * The part of `bun:sqlite` the documentation's Bun programs use, for their type check: the type checker (Deno's)
 * cannot resolve Bun's built-in modules, so tests/support/doc_blocks.ts points `"bun:sqlite"` here. Declarations
 * only: Bun runs those programs with its own module (tests/docs/getting_started_test.ts).
 *
 * @module
 */

/** A statement of Bun's SQLite driver. */
export declare class Statement {
  /** Runs it and returns its rows. */
  all(...params: unknown[]): unknown[];
  /** Runs it and returns how many rows it wrote. */
  run(...params: unknown[]): { changes: number; lastInsertRowid: number | bigint };
}

/** A database of Bun's SQLite driver: one connection to a file, created if missing. */
export declare class Database {
  constructor(filename?: string, options?: { readonly?: boolean; create?: boolean; strict?: boolean });
  /** Compiles one statement. */
  prepare(sql: string): Statement;
  /** Runs a script of statements. */
  exec(sql: string): void;
  /** Closes the connection. */
  close(): void;
}
