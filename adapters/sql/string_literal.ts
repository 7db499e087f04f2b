/**
 * A SQL string literal, the same in SQLite and in PostgreSQL (with
 * `standard_conforming_strings`, the default): for the texts the stores
 * write into SQL text rather than pass as parameters.
 *
 * @module
 */

/** A SQL string literal of `text`: quoted, its quotes doubled (callers pass no NUL). */
export function sqlString(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}
