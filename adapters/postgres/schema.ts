/**
 * The PostgreSQL store's schema (`SchemaStore`): the migrations of
 * migrations.ts applied in one transaction under an advisory lock (so two
 * processes starting at once apply them once), or, with `migrate: false`,
 * only checked; a database newer than this errand is refused either way.
 *
 * @module
 */
import { SchemaVersionError } from "../../src/base/errors.ts";
import type { PostgresContext, Querier } from "./connection.ts";
import { BOOTSTRAP_SQL, pendingMigrations, POSTGRES_SCHEMA_VERSION } from "./migrations.ts";

/** `ensureSchema`: creates or checks the schema (see `postgresMigrationSql`). */
export async function ensureSchema(ctx: PostgresContext): Promise<void> {
  const { db, target, settings } = ctx;
  const version = await schemaVersion(ctx, db.sql);
  if (version > POSTGRES_SCHEMA_VERSION) throw newerSchema(version);
  if (version === POSTGRES_SCHEMA_VERSION) return;
  if (!settings.migrate) {
    throw new SchemaVersionError(
      `Schema "${settings.schema}" has errand schema version "${version}" but "${POSTGRES_SCHEMA_VERSION}" is needed; apply postgresMigrationSql({ fromVersion: ${version} }) or drop "migrate: false"`,
    );
  }
  await db.run(() =>
    db.sql.begin(async (tx) => {
      await tx.unsafe("SELECT pg_advisory_xact_lock(hashtext($1))", [`errand:migrate:${settings.schema}`]);
      await tx.unsafe(BOOTSTRAP_SQL.replaceAll("{schema}", target.schema));
      const current = await schemaVersion(ctx, tx);
      if (current > POSTGRES_SCHEMA_VERSION) throw newerSchema(current);
      // Every pending step in one round trip: a fresh schema's setup (each new deployment's, each test's) is DDL the
      // server runs at once, not forty statements waiting on the network in turn.
      const pending = pendingMigrations(current);
      if (pending.length) await tx.unsafe(pending.join("\n").replaceAll("{schema}", target.schema));
    })
  );
}

/** The version the schema's `migrations` table records, 0 when there is none. */
export async function schemaVersion({ db, target }: PostgresContext, q: Querier): Promise<number> {
  const rows = await db.run(() =>
    q.unsafe("SELECT to_regclass($1) IS NOT NULL AS present", [`${target.schema}.migrations`])
  );
  if (!rows[0].present) return 0;
  const v = await db.run(() => q.unsafe(`SELECT coalesce(max(version), 0) AS v FROM ${target.schema}.migrations`));
  return Number(v[0].v);
}

/** The refusal of a database whose schema is newer than this errand's. */
function newerSchema(version: number): SchemaVersionError {
  return new SchemaVersionError(
    `The database has errand schema version "${version}", newer than "${POSTGRES_SCHEMA_VERSION}" which this errand supports; upgrade errand`,
  );
}
