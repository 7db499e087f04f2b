/**
 * The indexes a dialect's migrations leave, read from their SQL in order: a
 * `CREATE [UNIQUE] INDEX` adds one, a `DROP INDEX` removes it. `errand
 * doctor` and the health figures compare the database with this list, so
 * it follows the migrations without a second copy of their names.
 *
 * @module
 */

const CREATE =
  /CREATE\s+(?:UNIQUE\s+)?INDEX\s+(?:CONCURRENTLY\s+)?(?:IF\s+NOT\s+EXISTS\s+)?("?[\w]+"?)\s+ON\s+(?:ONLY\s+)?([\w{}."]+)/gi;
const DROP = /DROP\s+INDEX\s+(?:CONCURRENTLY\s+)?(?:IF\s+EXISTS\s+)?([\w{}."]+)/gi;

/** An index a dialect's migrations leave. */
export interface MigrationIndex {
  /** The unqualified name of its table. */
  readonly table: string;
  /** The statement that creates it, as the migration writes it (without a trailing semicolon). */
  readonly sql: string;
}

/** The indexes left by `statements` (in the order they run), by name. */
export function migrationIndexes(statements: readonly string[]): Map<string, MigrationIndex> {
  const indexes = new Map<string, MigrationIndex>();
  for (const statement of statements) {
    const events = [
      ...[...statement.matchAll(CREATE)].map((m) => ({
        at: m.index,
        name: bare(m[1]),
        index: { table: bare(m[2]), sql: upTo(statement, m.index) },
      })),
      ...[...statement.matchAll(DROP)].map((m) => ({ at: m.index, name: bare(m[1]), index: undefined })),
    ].sort((a, b) => a.at - b.at);
    for (const e of events) {
      if (e.index === undefined) indexes.delete(e.name);
      else indexes.set(e.name, e.index);
    }
  }
  return indexes;
}

/** The statement of `text` that starts at `at`: up to its semicolon or the end, on one line. */
function upTo(text: string, at: number): string {
  const end = text.indexOf(";", at);
  return text.slice(at, end === -1 ? undefined : end).replace(/\s+/g, " ").trim();
}

/** `{schema}."name"` or `name` as `name`. */
function bare(name: string): string {
  return name.slice(name.lastIndexOf(".") + 1).replaceAll('"', "");
}
