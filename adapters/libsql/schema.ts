/**
 * The libSQL store's schema: creates it or brings it up to date from the
 * numbered migrations (migrations.ts), in one write transaction, or refuses
 * a database whose schema is newer than this errand or, with
 * `migrate: false`, older.
 *
 * @module
 */
import { SchemaVersionError } from "../../src/base/errors.ts";
import type { LibsqlConnection, LibsqlContext } from "./connection.ts";
import { LIBSQL_MIGRATIONS, LIBSQL_SCHEMA_VERSION, MIGRATIONS_TABLE_SQL } from "./migrations.ts";

/**
 * `ensureSchema`: creates or checks the schema (see `libsqlMigrationSql`),
 * migrating only when the settings allow, then reads the database's id.
 */
export async function ensureSchema({ db, settings }: LibsqlContext): Promise<void> {
  await migrateSchema(db, settings.migrate);
  await db.databaseId();
}

/** Brings the schema to {@link LIBSQL_SCHEMA_VERSION}, or throws {@link SchemaVersionError} where it may not. */
async function migrateSchema(db: LibsqlConnection, migrate: boolean): Promise<void> {
  const version = await schemaVersion(db);
  if (version > LIBSQL_SCHEMA_VERSION) {
    throw new SchemaVersionError(
      `The database has errand schema version "${version}", newer than "${LIBSQL_SCHEMA_VERSION}" which this errand supports; upgrade errand`,
    );
  }
  if (version === LIBSQL_SCHEMA_VERSION) return;
  if (!migrate) {
    throw new SchemaVersionError(
      `The database has errand schema version "${version}" but "${LIBSQL_SCHEMA_VERSION}" is needed; apply libsqlMigrationSql(${version}) or drop "migrate: false"`,
    );
  }
  // WAL lets readers go on while one process writes; it is a property of the file.
  await db.run(() => db.client.execute("PRAGMA journal_mode = WAL").catch(() => undefined));
  const migrating = db.run(() =>
    db.transaction(async (tx) => {
      const current = Number(
        (await tx.execute("SELECT coalesce(max(version), 0) AS v FROM errand_migrations")).rows[0].v,
      );
      for (const m of LIBSQL_MIGRATIONS) {
        if (m.version <= current) continue;
        for (const statement of m.statements) await tx.execute(statement);
        await tx.execute({
          sql: "INSERT INTO errand_migrations (version, name, applied_at) VALUES (?, ?, ?)",
          args: [m.version, m.name, Date.now()],
        });
      }
    }, `${MIGRATIONS_TABLE_SQL}; DELETE FROM errand_migrations WHERE 0`)
  );
  try {
    await migrating;
  } catch (err) {
    // Processes starting at once on a new file: one migrates, and another may keep failing to take the
    // write lock meanwhile. If the schema is up to date now, that one has nothing left to do.
    if ((await schemaVersion(db).catch(() => -1)) !== LIBSQL_SCHEMA_VERSION) throw err;
  }
}

/** The schema version the database has: 0 before errand's tables exist. */
export async function schemaVersion(db: LibsqlConnection): Promise<number> {
  const table = await db.read(
    "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'errand_migrations'",
  );
  if (table.rows.length === 0) return 0;
  const rs = await db.read("SELECT coalesce(max(version), 0) AS v FROM errand_migrations");
  return Number(rs.rows[0].v);
}
