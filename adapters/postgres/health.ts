/**
 * The PostgreSQL store's health figures (`HealthStore`), read from the
 * statistics views: the oldest transaction of the current database holding
 * back vacuum (`pg_stat_activity.backend_xmin`, and prepared transactions),
 * dead tuples, vacuums and sizes of the tables of errand's schema
 * (`pg_stat_user_tables`), and its indexes against what the migrations
 * create (`pg_index.indisvalid`). The statistics are the collector's, so a
 * change shows up within a second or so. Replication slots also hold the
 * horizon back, but they have no age in time to report, so they are left out.
 *
 * @module
 */
import type { HorizonHolder, IndexHealth, StoreHealth, TableHealth } from "../../src/store/mod.ts";
import { migrationIndexes } from "../sql/migration_indexes.ts";
import type { PostgresContext, Row } from "./connection.ts";
import { POSTGRES_MIGRATIONS, POSTGRES_SCHEMA_VERSION } from "./migrations.ts";
import { schemaVersion } from "./schema.ts";

/** The indexes the migrations leave. */
const EXPECTED_INDEXES = migrationIndexes(POSTGRES_MIGRATIONS.map((m) => m.sql));

/** `healthRead`: the figures of errand's schema and the current database's horizon. */
export async function readHealth(ctx: PostgresContext): Promise<StoreHealth> {
  const { db, settings } = ctx;
  const [version, tables, indexes, horizon, server] = await Promise.all([
    schemaVersion(ctx, db.sql),
    db.query(
      `SELECT c.relname AS "table", s.n_live_tup AS live, s.n_dead_tup AS dead,
         extract(epoch FROM now() - greatest(s.last_vacuum, s.last_autovacuum)) AS vacuum_age,
         extract(epoch FROM now() - s.last_autovacuum) AS autovacuum_age,
         NOT EXISTS (SELECT FROM unnest(c.reloptions) o WHERE o ~* '^autovacuum_enabled=(false|off|no|f|n|0)$')
           AS autovacuum,
         pg_table_size(c.oid) AS table_bytes, pg_indexes_size(c.oid) AS index_bytes
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
       LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid
       WHERE n.nspname = $1 AND c.relkind IN ('r', 'p') ORDER BY c.relname`,
      [settings.schema],
    ),
    db.query(
      `SELECT ci.relname AS index, i.indisvalid AND i.indisready AS valid
       FROM pg_index i JOIN pg_class ci ON ci.oid = i.indexrelid JOIN pg_namespace n ON n.oid = ci.relnamespace
       WHERE n.nspname = $1`,
      [settings.schema],
    ),
    readHorizon(ctx),
    db.query("SELECT current_setting('autovacuum')::boolean AS autovacuum", []),
  ]);
  const found = new Map(indexes.map((r) => [String(r.index), Boolean(r.valid)]));
  return {
    schema: settings.schema,
    autovacuum: Boolean(server[0].autovacuum),
    schemaVersion: version,
    schemaVersionExpected: POSTGRES_SCHEMA_VERSION,
    tables: tables.map(toTableHealth),
    indexes: [...EXPECTED_INDEXES].map(([index, { table, sql }]): IndexHealth => {
      const valid = found.get(index);
      return {
        index,
        table,
        state: valid === undefined ? "missing" : valid ? "valid" : "invalid",
        // Concurrently: rebuilding an index of a busy jobs table must not block its writes.
        definition: sql.replaceAll("{schema}", ctx.target.schema).replace(
          /^CREATE (UNIQUE )?INDEX /i,
          "CREATE $1INDEX CONCURRENTLY ",
        ),
      };
    }),
    horizon,
  };
}

/**
 * The oldest session transaction or prepared transaction of the current
 * database, other than this session. Autovacuum workers are left out: vacuum
 * ignores their snapshots, and a long one would read as a pinned horizon.
 */
async function readHorizon({ db }: PostgresContext): Promise<HorizonHolder | null> {
  const rows = await db.query(
    `SELECT * FROM (
       SELECT 'transaction' AS kind, extract(epoch FROM now() - coalesce(xact_start, query_start)) AS age,
         pid, application_name, usename AS "user", state, NULL AS gid
       FROM pg_stat_activity
       WHERE datname = current_database() AND pid <> pg_backend_pid()
         AND backend_type IS DISTINCT FROM 'autovacuum worker'
         AND (backend_xmin IS NOT NULL OR backend_xid IS NOT NULL)
       UNION ALL
       SELECT 'prepared', extract(epoch FROM now() - prepared), NULL, NULL, owner, NULL, gid
       FROM pg_prepared_xacts WHERE database = current_database()
     ) AS holders ORDER BY age DESC NULLS LAST LIMIT 1`,
    [],
  );
  return rows.length === 0 ? null : toHorizonHolder(rows[0]);
}

function toHorizonHolder(r: Row): HorizonHolder {
  const ageSeconds = Math.max(0, Number(r.age ?? 0));
  if (r.kind === "prepared") return { kind: "prepared", ageSeconds, user: String(r.user), gid: String(r.gid) };
  return {
    kind: "transaction",
    ageSeconds,
    pid: Number(r.pid),
    application: String(r.application_name ?? ""),
    user: String(r.user ?? ""),
    state: String(r.state ?? ""),
  };
}

function toTableHealth(r: Row): TableHealth {
  const age = (v: unknown) => v == null ? null : Math.max(0, Number(v));
  return {
    table: String(r.table),
    liveTuples: Number(r.live ?? 0),
    deadTuples: Number(r.dead ?? 0),
    vacuumAgeSeconds: age(r.vacuum_age),
    autovacuumAgeSeconds: age(r.autovacuum_age),
    autovacuumEnabled: Boolean(r.autovacuum),
    tableBytes: Number(r.table_bytes),
    indexBytes: Number(r.index_bytes),
  };
}
