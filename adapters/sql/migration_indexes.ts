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

/** The indexes left by `statements` (in the order they run), as index name to the unqualified table name. */
export function migrationIndexes(statements: readonly string[]): Map<string, string> {
  const indexes = new Map<string, string>();
  for (const statement of statements) {
    const events = [
      ...[...statement.matchAll(CREATE)].map((m) => ({ at: m.index, name: bare(m[1]), table: bare(m[2]) })),
      ...[...statement.matchAll(DROP)].map((m) => ({ at: m.index, name: bare(m[1]), table: undefined })),
    ].sort((a, b) => a.at - b.at);
    for (const e of events) {
      if (e.table === undefined) indexes.delete(e.name);
      else indexes.set(e.name, e.table);
    }
  }
  return indexes;
}

/** `{schema}."name"` or `name` as `name`. */
function bare(name: string): string {
  return name.slice(name.lastIndexOf(".") + 1).replaceAll('"', "");
}
