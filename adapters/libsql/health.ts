/**
 * The SQLite dialect's health figures (`HealthStore`), shared by
 * `libsqlStore` and `sqliteStore`: the schema version, errand's tables and
 * indexes against what the migrations create, and the file's pages
 * (`PRAGMA page_count`, `freelist_count`, `journal_mode`). SQLite has no
 * MVCC horizon, no dead tuples and no autovacuum: a deleted row's page goes
 * to the freelist and is reused. Per-table sizes would need the `dbstat`
 * table, which not every build has and which reads every page, so they
 * are left out.
 *
 * @module
 */
import type { FileHealth, IndexHealth, StoreHealth } from "../../src/store/mod.ts";
import { migrationIndexes } from "../sql/migration_indexes.ts";
import type { LibsqlConnection, LibsqlContext } from "./connection.ts";
import { LIBSQL_MIGRATIONS, LIBSQL_SCHEMA_VERSION } from "./migrations.ts";
import { schemaVersion } from "./schema.ts";

/** The indexes the migrations leave. */
const EXPECTED_INDEXES = migrationIndexes(LIBSQL_MIGRATIONS.flatMap((m) => m.statements));

/** `healthRead`: the schema, errand's tables and indexes, and the file's pages. */
export async function readHealth({ db }: LibsqlContext): Promise<StoreHealth> {
  const version = await schemaVersion(db);
  const objects = await db.read(
    "SELECT type, name FROM sqlite_master WHERE type IN ('table', 'index') AND name LIKE 'errand\\_%' ESCAPE '\\' ORDER BY name",
  );
  const names = (type: string) => objects.rows.filter((r) => r.type === type).map((r) => String(r.name));
  const indexes = new Set(names("index"));
  const file = await readFile(db);
  return {
    schemaVersion: version,
    schemaVersionExpected: LIBSQL_SCHEMA_VERSION,
    tables: names("table").map((table) => ({ table })),
    indexes: [...EXPECTED_INDEXES].map(([index, { table, sql }]): IndexHealth => ({
      index,
      table,
      state: indexes.has(index) ? "valid" : "missing",
      definition: sql,
    })),
    ...file ? { file } : {},
  };
}

/** The file's pages, or undefined where the server refuses the pragmas (a remote database may). */
async function readFile(db: LibsqlConnection): Promise<FileHealth | undefined> {
  const pragma = async (name: string) => (await db.read(`PRAGMA ${name}`)).rows[0]?.[name];
  try {
    return {
      pageSize: Number(await pragma("page_size")),
      pageCount: Number(await pragma("page_count")),
      freelistPages: Number(await pragma("freelist_count")),
      journalMode: String(await pragma("journal_mode")),
    };
  } catch {
    return undefined;
  }
}
