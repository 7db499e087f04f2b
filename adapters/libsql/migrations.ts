/**
 * The libSQL / SQLite schema, as numbered migrations. Applied in order by
 * `libsqlStore` at start, or printed by {@link libsqlMigrationSql} for teams
 * that run migrations themselves.
 *
 * @module
 */
import { LISTED_STATES_SQL } from "../sql/listed_states.ts";
import { sqlString } from "../sql/string_literal.ts";

/** One numbered schema change. */
export interface LibsqlMigration {
  /** Applied in increasing order; recorded in `errand_migrations`. */
  readonly version: number;
  /** A short description. */
  readonly name: string;
  /** The statements of this migration. */
  readonly statements: readonly string[];
}

/** Creates the table that records applied migrations. */
export const MIGRATIONS_TABLE_SQL =
  "CREATE TABLE IF NOT EXISTS errand_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)";

/** Every migration, oldest first. */
export const LIBSQL_MIGRATIONS: readonly LibsqlMigration[] = [
  {
    version: 1,
    name: "jobs",
    statements: [
      `CREATE TABLE errand_jobs (
        id TEXT PRIMARY KEY,
        namespace TEXT NOT NULL,
        kind TEXT NOT NULL,
        version INTEGER NOT NULL,
        queue TEXT NOT NULL,
        state TEXT NOT NULL,
        priority INTEGER NOT NULL,
        payload BLOB NOT NULL,
        attempt INTEGER NOT NULL DEFAULT 0,
        max_attempts INTEGER NOT NULL,
        fence INTEGER NOT NULL DEFAULT 0,
        run_at INTEGER NOT NULL,
        created_at INTEGER NOT NULL,
        started_at INTEGER,
        finished_at INTEGER,
        lease_until INTEGER,
        worker_id TEXT,
        timeout_ms INTEGER,
        retry TEXT,
        runs TEXT NOT NULL DEFAULT '[]'
      ) WITHOUT ROWID`,
      "CREATE INDEX errand_jobs_claim ON errand_jobs (namespace, queue, priority, run_at, id) WHERE state IN ('available', 'scheduled')",
      "CREATE INDEX errand_jobs_scheduled ON errand_jobs (namespace, run_at) WHERE state = 'scheduled'",
      "CREATE INDEX errand_jobs_lease ON errand_jobs (namespace, lease_until) WHERE state = 'running'",
      "CREATE INDEX errand_jobs_finished ON errand_jobs (namespace, state, finished_at) WHERE finished_at IS NOT NULL",
      "CREATE INDEX errand_jobs_list ON errand_jobs (namespace, state, id)",
    ],
  },
  {
    version: 2,
    name: "unique jobs and paused queues",
    statements: [
      "ALTER TABLE errand_jobs ADD COLUMN unique_key TEXT",
      "ALTER TABLE errand_jobs ADD COLUMN unique_scope TEXT",
      `CREATE UNIQUE INDEX errand_jobs_unique_active ON errand_jobs (namespace, kind, unique_key)
        WHERE unique_scope = 'active' AND state IN ('scheduled', 'available', 'running', 'waiting')`,
      "CREATE UNIQUE INDEX errand_jobs_unique_any ON errand_jobs (namespace, kind, unique_key) WHERE unique_scope = 'any'",
      `CREATE TABLE errand_queues (
        namespace TEXT NOT NULL,
        queue TEXT NOT NULL,
        paused INTEGER NOT NULL,
        PRIMARY KEY (namespace, queue)
      ) WITHOUT ROWID`,
    ],
  },
  {
    version: 3,
    name: "continuations",
    statements: [
      "ALTER TABLE errand_jobs ADD COLUMN has_children INTEGER NOT NULL DEFAULT 0",
      "ALTER TABLE errand_jobs ADD COLUMN reason TEXT",
      `CREATE TABLE errand_job_parents (
        namespace TEXT NOT NULL,
        job_id TEXT NOT NULL,
        parent_id TEXT NOT NULL,
        PRIMARY KEY (namespace, job_id, parent_id)
      ) WITHOUT ROWID`,
      "CREATE INDEX errand_job_parents_parent ON errand_job_parents (namespace, parent_id, job_id)",
    ],
  },
  {
    version: 4,
    name: "worker heartbeats",
    statements: [
      `CREATE TABLE errand_workers (
        namespace TEXT NOT NULL,
        id TEXT NOT NULL,
        started_at INTEGER NOT NULL,
        beat_at INTEGER NOT NULL,
        info TEXT NOT NULL,
        PRIMARY KEY (namespace, id)
      ) WITHOUT ROWID`,
    ],
  },
  {
    version: 5,
    name: "schedules and leadership",
    statements: [
      `CREATE TABLE errand_schedules (
        namespace TEXT NOT NULL,
        id TEXT NOT NULL,
        kind TEXT NOT NULL,
        version INTEGER NOT NULL,
        queue TEXT NOT NULL,
        priority INTEGER NOT NULL,
        payload BLOB NOT NULL,
        max_attempts INTEGER NOT NULL,
        timeout_ms INTEGER,
        retry TEXT,
        cron TEXT NOT NULL,
        timezone TEXT NOT NULL,
        catch_up INTEGER NOT NULL,
        fingerprint TEXT NOT NULL,
        next_run_at INTEGER NOT NULL,
        next_job_id TEXT,
        last_run_at INTEGER,
        last_job_id TEXT,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        PRIMARY KEY (namespace, id)
      ) WITHOUT ROWID`,
      `CREATE TABLE errand_leaders (
        namespace TEXT NOT NULL,
        name TEXT NOT NULL,
        holder TEXT NOT NULL,
        until INTEGER NOT NULL,
        PRIMARY KEY (namespace, name)
      ) WITHOUT ROWID`,
    ],
  },
  {
    version: 6,
    name: "topics and partitions",
    statements: [
      "ALTER TABLE errand_jobs ADD COLUMN topic TEXT",
      'ALTER TABLE errand_jobs ADD COLUMN "partition" INTEGER',
      "ALTER TABLE errand_jobs ADD COLUMN seq INTEGER",
      "ALTER TABLE errand_schedules ADD COLUMN topic TEXT",
      'ALTER TABLE errand_schedules ADD COLUMN "partition" INTEGER',
      "DROP INDEX errand_jobs_claim",
      `CREATE INDEX errand_jobs_claim ON errand_jobs (namespace, queue, priority, run_at, id)
        WHERE state IN ('available', 'scheduled') AND topic IS NULL`,
      `CREATE INDEX errand_jobs_partition ON errand_jobs (namespace, topic, "partition", seq)
        WHERE topic IS NOT NULL AND state IN ('scheduled', 'available', 'running', 'waiting')`,
      `CREATE TABLE errand_partitions (
        namespace TEXT NOT NULL,
        topic TEXT NOT NULL,
        "partition" INTEGER NOT NULL,
        next_seq INTEGER NOT NULL,
        PRIMARY KEY (namespace, topic, "partition")
      ) WITHOUT ROWID`,
    ],
  },
  {
    version: 7,
    name: "trace context",
    statements: ["ALTER TABLE errand_jobs ADD COLUMN trace TEXT"],
  },
  {
    version: 8,
    name: "listing index for the listed states only",
    statements: [
      "DROP INDEX errand_jobs_list",
      `CREATE INDEX errand_jobs_list ON errand_jobs (namespace, state, id) WHERE ${LISTED_STATES_SQL}`,
    ],
  },
  {
    version: 9,
    name: "flow control",
    statements: [
      "ALTER TABLE errand_jobs ADD COLUMN grp TEXT",
      "ALTER TABLE errand_schedules ADD COLUMN grp TEXT",
      "DROP INDEX errand_jobs_claim",
      `CREATE INDEX errand_jobs_claim ON errand_jobs (namespace, queue, priority, run_at, id)
        WHERE state IN ('available', 'scheduled') AND topic IS NULL AND grp IS NULL`,
      `CREATE INDEX errand_jobs_group_claim ON errand_jobs (namespace, queue, grp, priority, run_at, id)
        WHERE state IN ('available', 'scheduled') AND grp IS NOT NULL`,
      `CREATE INDEX errand_jobs_group_running ON errand_jobs (namespace, grp)
        WHERE state = 'running' AND grp IS NOT NULL`,
      `CREATE TABLE errand_rate_windows (
        namespace TEXT NOT NULL,
        bucket TEXT NOT NULL,
        window_start INTEGER NOT NULL,
        starts INTEGER NOT NULL,
        PRIMARY KEY (namespace, bucket)
      ) WITHOUT ROWID`,
      `CREATE TABLE errand_group_pauses (
        namespace TEXT NOT NULL,
        grp TEXT NOT NULL,
        paused_until INTEGER NOT NULL,
        PRIMARY KEY (namespace, grp)
      ) WITHOUT ROWID`,
    ],
  },
  {
    version: 10,
    name: "results and progress",
    statements: ["ALTER TABLE errand_jobs ADD COLUMN result BLOB", "ALTER TABLE errand_jobs ADD COLUMN progress TEXT"],
  },
  {
    version: 11,
    name: "retained logs",
    statements: [
      `CREATE TABLE errand_log_partitions (
        namespace TEXT NOT NULL,
        log TEXT NOT NULL,
        partition INTEGER NOT NULL,
        next_offset INTEGER NOT NULL,
        PRIMARY KEY (namespace, log, partition)
      ) WITHOUT ROWID`,
      `CREATE TABLE errand_log_records (
        namespace TEXT NOT NULL,
        log TEXT NOT NULL,
        partition INTEGER NOT NULL,
        "offset" INTEGER NOT NULL,
        key TEXT NOT NULL,
        value BLOB NOT NULL,
        appended_at INTEGER NOT NULL,
        PRIMARY KEY (namespace, log, partition, "offset")
      ) WITHOUT ROWID`,
    ],
  },
  {
    version: 12,
    name: "log consumer groups",
    statements: [
      `CREATE TABLE errand_log_consumers (
        namespace TEXT NOT NULL,
        consumer_group TEXT NOT NULL,
        log TEXT NOT NULL,
        partition INTEGER NOT NULL,
        committed INTEGER NOT NULL,
        owner TEXT,
        epoch INTEGER NOT NULL,
        lease_until INTEGER NOT NULL,
        PRIMARY KEY (namespace, consumer_group, log, partition)
      ) WITHOUT ROWID`,
    ],
  },
  {
    version: 13,
    name: "moves",
    statements: [
      `CREATE TABLE errand_moves (
        namespace TEXT NOT NULL,
        role TEXT NOT NULL,
        id TEXT NOT NULL,
        phase TEXT NOT NULL,
        state TEXT NOT NULL,
        started_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        PRIMARY KEY (namespace, role)
      ) WITHOUT ROWID`,
    ],
  },
  {
    version: 14,
    name: "durable workflows",
    statements: [
      // A job waiting on an event keeps its timeout (NO_WAKE for none): promotion finds it without reading
      // its steps, and the resolve of waiting jobs (continuations, invokes: wake_at null) never looks at it.
      "ALTER TABLE errand_jobs ADD COLUMN wake_at INTEGER",
      "CREATE INDEX errand_jobs_wake ON errand_jobs (namespace, wake_at) WHERE state = 'waiting' AND wake_at IS NOT NULL",
      "CREATE INDEX errand_jobs_waiting_resolvable ON errand_jobs (namespace, id) WHERE state = 'waiting' AND wake_at IS NULL",
      `CREATE TABLE errand_steps (
        namespace TEXT NOT NULL,
        job_id TEXT NOT NULL,
        name TEXT NOT NULL,
        seq INTEGER NOT NULL,
        type TEXT NOT NULL,
        state TEXT NOT NULL,
        attempt INTEGER NOT NULL,
        started_at INTEGER NOT NULL,
        finished_at INTEGER,
        result BLOB,
        error TEXT,
        wake_at INTEGER,
        child_id TEXT,
        event TEXT,
        key TEXT,
        event_seq INTEGER,
        PRIMARY KEY (namespace, job_id, name)
      ) WITHOUT ROWID`,
      "CREATE INDEX errand_steps_child ON errand_steps (namespace, child_id) WHERE state = 'waiting' AND type = 'invoke'",
      "CREATE INDEX errand_steps_event ON errand_steps (namespace, event, key) WHERE state = 'waiting' AND type = 'event'",
      // The steps that took an event: an event's send finds those it just completed.
      "CREATE INDEX errand_steps_event_seq ON errand_steps (namespace, event_seq) WHERE event_seq IS NOT NULL",
      // AUTOINCREMENT: a sequence number is never reused, even once every event was pruned, so a
      // wait that took event n never mistakes a later event for one it took.
      `CREATE TABLE errand_events (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        namespace TEXT NOT NULL,
        id TEXT NOT NULL,
        event TEXT NOT NULL,
        key TEXT NOT NULL,
        data BLOB NOT NULL,
        sent_at INTEGER NOT NULL,
        UNIQUE (namespace, id)
      )`,
      "CREATE INDEX errand_events_key ON errand_events (namespace, event, key, seq)",
      "CREATE INDEX errand_events_sent ON errand_events (namespace, sent_at)",
    ],
  },
  {
    version: 15,
    name: "claim indexes of available jobs only",
    // A claim reads due scheduled jobs from errand_jobs_scheduled (due_jobs.ts, limited_claim.ts).
    statements: [
      "DROP INDEX errand_jobs_claim",
      `CREATE INDEX errand_jobs_claim ON errand_jobs (namespace, queue, priority, run_at, id)
        WHERE state = 'available' AND topic IS NULL AND grp IS NULL`,
      "DROP INDEX errand_jobs_group_claim",
      `CREATE INDEX errand_jobs_group_claim ON errand_jobs (namespace, queue, grp, priority, run_at, id)
        WHERE state = 'available' AND grp IS NOT NULL`,
    ],
  },
];

/** The newest schema version this errand understands. */
export const LIBSQL_SCHEMA_VERSION: number = LIBSQL_MIGRATIONS[LIBSQL_MIGRATIONS.length - 1].version;

/**
 * The complete schema as one SQL script, for teams that apply migrations
 * themselves (then pass `migrate: false` to `libsqlStore`).
 *
 * @param fromVersion Only migrations after this version (default 0: all).
 *
 * @example Print the schema
 * ```ts
 * import { libsqlMigrationSql } from "@errand/errand/libsql";
 * console.log(libsqlMigrationSql());
 * ```
 */
export function libsqlMigrationSql(fromVersion = 0): string {
  const parts = [`${MIGRATIONS_TABLE_SQL};`];
  for (const m of LIBSQL_MIGRATIONS) {
    if (m.version <= fromVersion) continue;
    parts.push(`-- ${m.version}: ${m.name}`, ...m.statements.map((s) => `${s};`));
    parts.push(
      `INSERT INTO errand_migrations (version, name, applied_at) VALUES (${m.version}, ${
        sqlString(m.name)
      }, ${"strftime('%s','now') * 1000"});`,
    );
  }
  return parts.join("\n") + "\n";
}
