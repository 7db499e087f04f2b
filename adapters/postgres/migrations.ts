/**
 * The PostgreSQL schema, as numbered migrations. `{schema}` stands for the
 * quoted schema name. Applied in order by `postgresStore` at start under an
 * advisory lock, or printed by {@link postgresMigrationSql} for teams that run
 * migrations themselves.
 *
 * @module
 */
import { LISTED_STATES_SQL } from "../sql/listed_states.ts";
import { sqlString } from "../sql/string_literal.ts";
import { claimLimitedFunctionSql } from "./limited_claim.ts";
import { HISTORY_SQL } from "./history.ts";
import { FAIR_TURNS_SQL, takeTurnFunctionSql } from "./turns.ts";

/** One numbered schema change. */
export interface PostgresMigration {
  /** Applied in increasing order; recorded in `{schema}.migrations`. */
  readonly version: number;
  /** A short description. */
  readonly name: string;
  /** The SQL of this migration, with `{schema}` for the quoted schema. */
  readonly sql: string;
}

/** Creates the schema and the table that records applied migrations. */
export const BOOTSTRAP_SQL = `CREATE SCHEMA IF NOT EXISTS {schema};
CREATE TABLE IF NOT EXISTS {schema}.migrations (
  version integer PRIMARY KEY,
  name text NOT NULL,
  applied_at timestamptz NOT NULL DEFAULT now()
);`;

/** The start of the channel that watched jobs' changes are announced on; the schema's name follows. */
export const CHANGES_CHANNEL_PREFIX = "errand_changes:";

/** Builds `jobs_group_claim` anew, keyed by namespace, queue, then `keys` (its group and state) and claim order. */
function groupClaimIndexSql(keys: string): string {
  return `DROP INDEX {schema}.jobs_group_claim;
CREATE INDEX jobs_group_claim ON {schema}.jobs (namespace, queue, ${keys}, priority, run_at, id) INCLUDE (turn)
  WHERE state IN ('available', 'scheduled') AND grp IS NOT NULL;`;
}

/** Every migration, oldest first. */
export const POSTGRES_MIGRATIONS: readonly PostgresMigration[] = [
  {
    version: 1,
    name: "jobs",
    sql: `CREATE TABLE {schema}.jobs (
  id text PRIMARY KEY,
  namespace text NOT NULL,
  kind text NOT NULL,
  version integer NOT NULL,
  queue text NOT NULL,
  state text NOT NULL,
  priority integer NOT NULL,
  payload bytea NOT NULL,
  attempt integer NOT NULL DEFAULT 0,
  max_attempts integer NOT NULL,
  fence integer NOT NULL DEFAULT 0,
  run_at bigint NOT NULL,
  created_at bigint NOT NULL,
  started_at bigint,
  finished_at bigint,
  lease_until bigint,
  worker_id text,
  timeout_ms integer,
  retry text,
  runs jsonb NOT NULL DEFAULT '[]'
);
CREATE INDEX jobs_claim ON {schema}.jobs (namespace, queue, priority, run_at, id) WHERE state IN ('available', 'scheduled');
CREATE INDEX jobs_scheduled ON {schema}.jobs (namespace, run_at) WHERE state = 'scheduled';
CREATE INDEX jobs_lease ON {schema}.jobs (namespace, lease_until) WHERE state = 'running';
CREATE INDEX jobs_finished ON {schema}.jobs (namespace, state, finished_at) WHERE finished_at IS NOT NULL;
CREATE INDEX jobs_list ON {schema}.jobs (namespace, state, id);`,
  },
  {
    version: 2,
    name: "unique jobs and paused queues",
    sql: `ALTER TABLE {schema}.jobs ADD COLUMN unique_key text, ADD COLUMN unique_scope text;
CREATE UNIQUE INDEX jobs_unique_active ON {schema}.jobs (namespace, kind, unique_key)
  WHERE unique_scope = 'active' AND state IN ('scheduled', 'available', 'running', 'waiting');
CREATE UNIQUE INDEX jobs_unique_any ON {schema}.jobs (namespace, kind, unique_key) WHERE unique_scope = 'any';
CREATE TABLE {schema}.queues (
  namespace text NOT NULL,
  queue text NOT NULL,
  paused boolean NOT NULL,
  PRIMARY KEY (namespace, queue)
);`,
  },
  {
    version: 3,
    name: "continuations",
    sql: `ALTER TABLE {schema}.jobs ADD COLUMN has_children boolean NOT NULL DEFAULT false, ADD COLUMN reason text;
CREATE TABLE {schema}.job_parents (
  namespace text NOT NULL,
  job_id text NOT NULL,
  parent_id text NOT NULL,
  PRIMARY KEY (namespace, job_id, parent_id)
);
CREATE INDEX job_parents_parent ON {schema}.job_parents (namespace, parent_id, job_id);`,
  },
  {
    version: 4,
    name: "worker heartbeats",
    sql: `CREATE TABLE {schema}.workers (
  namespace text NOT NULL,
  id text NOT NULL,
  started_at bigint NOT NULL,
  beat_at bigint NOT NULL,
  info jsonb NOT NULL,
  PRIMARY KEY (namespace, id)
);`,
  },
  {
    version: 5,
    name: "schedules and leadership",
    sql: `CREATE TABLE {schema}.schedules (
  namespace text NOT NULL,
  id text NOT NULL,
  kind text NOT NULL,
  version integer NOT NULL,
  queue text NOT NULL,
  priority integer NOT NULL,
  payload bytea NOT NULL,
  max_attempts integer NOT NULL,
  timeout_ms integer,
  retry text,
  cron text NOT NULL,
  timezone text NOT NULL,
  catch_up integer NOT NULL,
  fingerprint text NOT NULL,
  next_run_at bigint NOT NULL,
  next_job_id text,
  last_run_at bigint,
  last_job_id text,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL,
  PRIMARY KEY (namespace, id)
);
CREATE TABLE {schema}.leaders (
  namespace text NOT NULL,
  name text NOT NULL,
  holder text NOT NULL,
  until bigint NOT NULL,
  PRIMARY KEY (namespace, name)
);`,
  },
  {
    version: 6,
    name: "topics and partitions",
    sql: `ALTER TABLE {schema}.jobs ADD COLUMN topic text, ADD COLUMN "partition" integer, ADD COLUMN seq bigint;
ALTER TABLE {schema}.schedules ADD COLUMN topic text, ADD COLUMN "partition" integer;
DROP INDEX {schema}.jobs_claim;
CREATE INDEX jobs_claim ON {schema}.jobs (namespace, queue, priority, run_at, id)
  WHERE state IN ('available', 'scheduled') AND topic IS NULL;
CREATE INDEX jobs_partition ON {schema}.jobs (namespace, topic, "partition", seq)
  WHERE topic IS NOT NULL AND state IN ('scheduled', 'available', 'running', 'waiting');
CREATE TABLE {schema}.partitions (
  namespace text NOT NULL,
  topic text NOT NULL,
  "partition" integer NOT NULL,
  next_seq bigint NOT NULL,
  PRIMARY KEY (namespace, topic, "partition")
);`,
  },
  {
    version: 7,
    name: "trace context",
    sql: `ALTER TABLE {schema}.jobs ADD COLUMN trace text;`,
  },
  {
    version: 8,
    name: "listing index for the listed states only",
    sql: `DROP INDEX {schema}.jobs_list;
CREATE INDEX jobs_list ON {schema}.jobs (namespace, state, id) WHERE ${LISTED_STATES_SQL};`,
  },
  {
    version: 9,
    name: "flow control",
    sql: `ALTER TABLE {schema}.jobs ADD COLUMN grp text;
ALTER TABLE {schema}.schedules ADD COLUMN grp text;
DROP INDEX {schema}.jobs_claim;
CREATE INDEX jobs_claim ON {schema}.jobs (namespace, queue, priority, run_at, id)
  WHERE state IN ('available', 'scheduled') AND topic IS NULL AND grp IS NULL;
CREATE INDEX jobs_group_claim ON {schema}.jobs (namespace, queue, grp, priority, run_at, id)
  WHERE state IN ('available', 'scheduled') AND grp IS NOT NULL;
CREATE INDEX jobs_group_running ON {schema}.jobs (namespace, grp) WHERE state = 'running' AND grp IS NOT NULL;
CREATE TABLE {schema}.rate_windows (
  namespace text NOT NULL,
  bucket text NOT NULL,
  window_start bigint NOT NULL,
  starts integer NOT NULL,
  PRIMARY KEY (namespace, bucket)
);
CREATE TABLE {schema}.group_pauses (
  namespace text NOT NULL,
  grp text NOT NULL,
  paused_until bigint NOT NULL,
  PRIMARY KEY (namespace, grp)
);`,
  },
  {
    version: 10,
    name: "limited claim function",
    // Generated: a change to the function must come with a migration that installs it again.
    sql: claimLimitedFunctionSql(),
  },
  {
    version: 11,
    name: "results, progress and watched jobs",
    // A watched job's change NOTIFYs the schema's changes channel (CHANGES_CHANNEL_PREFIX + schema,
    // cut to PostgreSQL's 63 bytes), with no payload, when its transaction commits. Unwatched jobs
    // (all but those someone awaits) cost the trigger's WHEN test only.
    sql: `ALTER TABLE {schema}.jobs ADD COLUMN result bytea, ADD COLUMN progress text,
  ADD COLUMN watched boolean NOT NULL DEFAULT false;
CREATE FUNCTION {schema}.notify_watched() RETURNS trigger LANGUAGE plpgsql AS $notify$
BEGIN
  PERFORM pg_notify(left('${CHANGES_CHANNEL_PREFIX}' || TG_TABLE_SCHEMA, 63), '');
  RETURN NULL;
END
$notify$;
CREATE TRIGGER jobs_watched_changed AFTER UPDATE ON {schema}.jobs FOR EACH ROW
  WHEN (NEW.watched AND (OLD.state IS DISTINCT FROM NEW.state OR OLD.progress IS DISTINCT FROM NEW.progress))
  EXECUTE FUNCTION {schema}.notify_watched();
CREATE TRIGGER jobs_watched_deleted AFTER DELETE ON {schema}.jobs FOR EACH ROW
  WHEN (OLD.watched) EXECUTE FUNCTION {schema}.notify_watched();`,
  },
  {
    version: 12,
    name: "retained logs",
    sql: `CREATE TABLE {schema}.log_partitions (
  namespace text NOT NULL,
  log text NOT NULL,
  partition integer NOT NULL,
  next_offset bigint NOT NULL,
  PRIMARY KEY (namespace, log, partition)
);
CREATE TABLE {schema}.log_records (
  namespace text NOT NULL,
  log text NOT NULL,
  partition integer NOT NULL,
  "offset" bigint NOT NULL,
  key text NOT NULL,
  value bytea NOT NULL,
  appended_at bigint NOT NULL,
  PRIMARY KEY (namespace, log, partition, "offset")
);`,
  },
  {
    version: 13,
    name: "log consumer groups",
    sql: `CREATE TABLE {schema}.log_consumers (
  namespace text NOT NULL,
  consumer_group text NOT NULL,
  log text NOT NULL,
  partition integer NOT NULL,
  committed bigint NOT NULL,
  owner text,
  epoch bigint NOT NULL,
  lease_until bigint NOT NULL,
  PRIMARY KEY (namespace, consumer_group, log, partition)
);`,
  },
  {
    version: 14,
    name: "moves",
    // One row per namespace and end of a move (moveStore): its id, phase and what it needs to resume.
    sql: `CREATE TABLE {schema}.moves (
  namespace text NOT NULL,
  role text NOT NULL,
  id text NOT NULL,
  phase text NOT NULL,
  state text NOT NULL,
  started_at bigint NOT NULL,
  updated_at bigint NOT NULL,
  PRIMARY KEY (namespace, role)
);`,
  },
  {
    version: 15,
    name: "fair turns",
    sql: FAIR_TURNS_SQL,
  },
  {
    version: 16,
    name: "limited claim in turn order",
    sql: claimLimitedFunctionSql(),
  },
  {
    version: 17,
    name: "limited claim locks as it reads",
    sql: claimLimitedFunctionSql(),
  },
  {
    version: 18,
    name: "limited claim's checks read in index order",
    sql: claimLimitedFunctionSql(),
  },
  {
    version: 19,
    name: "durable workflows",
    // A workflow's steps, one row per job and step name; the events that resume its waits, numbered in
    // the order they were kept (sends of one name and key are serialised, so in their commit order too).
    // A job waiting on an event keeps its timeout in jobs.wake_at (NO_WAKE for none), so that the promotion
    // of due jobs finds it from an index of its own, never looking at continuations, and the resolve of
    // waiting jobs (continuations, invokes: wake_at null) never looks at the jobs that wait on events.
    sql: `CREATE TABLE {schema}.steps (
  namespace text NOT NULL,
  job_id text NOT NULL,
  name text NOT NULL,
  seq integer NOT NULL,
  type text NOT NULL,
  state text NOT NULL,
  attempt integer NOT NULL,
  started_at bigint NOT NULL,
  finished_at bigint,
  result bytea,
  error text,
  wake_at bigint,
  child_id text,
  event text,
  key text,
  event_seq bigint,
  PRIMARY KEY (namespace, job_id, name)
);
CREATE INDEX steps_waiting_child ON {schema}.steps (namespace, child_id) WHERE state = 'waiting' AND type = 'invoke';
CREATE INDEX steps_waiting_event ON {schema}.steps (namespace, event, key) WHERE state = 'waiting' AND type = 'event';
CREATE TABLE {schema}.events (
  namespace text NOT NULL,
  id text NOT NULL,
  seq bigint GENERATED ALWAYS AS IDENTITY,
  event text NOT NULL,
  key text NOT NULL,
  data bytea NOT NULL,
  sent_at bigint NOT NULL,
  PRIMARY KEY (namespace, id)
);
CREATE INDEX events_key ON {schema}.events (namespace, event, key, seq);
CREATE INDEX events_sent ON {schema}.events (namespace, sent_at);
ALTER TABLE {schema}.jobs ADD COLUMN wake_at bigint;
CREATE INDEX jobs_wake ON {schema}.jobs (namespace, wake_at) WHERE state = 'waiting' AND wake_at IS NOT NULL;
CREATE INDEX jobs_waiting_resolvable ON {schema}.jobs (namespace, id) WHERE state = 'waiting' AND wake_at IS NULL;`,
  },
  {
    version: 20,
    name: "claim index of available jobs only",
    // A claim reads due scheduled jobs from jobs_scheduled (due_jobs.ts). Building the index holds the
    // jobs table's writes for as long as one pass over the table takes.
    sql: `DROP INDEX {schema}.jobs_claim;
CREATE INDEX jobs_claim ON {schema}.jobs (namespace, queue, priority, run_at, id)
  WHERE state = 'available' AND topic IS NULL AND grp IS NULL;
${claimLimitedFunctionSql()}`,
  },
  {
    version: 21,
    name: "group claim index keyed by state",
    // A claim reads a group's available jobs in claim order from jobs_group_claim, and due scheduled
    // grouped jobs from jobs_scheduled; the turns' trigger probes jobs_group_claim once per state.
    // Building the index holds the jobs table's writes for as long as one pass over the table takes.
    sql: `${groupClaimIndexSql("grp, state")}
${takeTurnFunctionSql()}
${claimLimitedFunctionSql()}`,
  },
  {
    version: 22,
    name: "history of finished jobs",
    // Creates the tables only: the finished rows already in jobs are moved by maintenance, a batch at a
    // time (history.ts), so an upgrade holds no lock for longer than these few statements take.
    sql: HISTORY_SQL,
  },
  {
    version: 23,
    name: "group claim visits only groups with due jobs",
    // A claim walks the groups with available jobs from jobs_group_claim, keyed by state before group,
    // one probe a group, and the groups of the due scheduled jobs it read; the turns' trigger probes
    // it by state and group as before. Building the index holds the jobs table's writes for as long
    // as one pass over the table takes.
    sql: `${groupClaimIndexSql("state, grp")}
${claimLimitedFunctionSql()}`,
  },
];

/** The newest schema version this errand understands. */
export const POSTGRES_SCHEMA_VERSION: number = POSTGRES_MIGRATIONS[POSTGRES_MIGRATIONS.length - 1].version;

/** Quotes a (validated) schema name as an identifier. */
export function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/**
 * The migrations after `fromVersion`, each followed by the insert that
 * records it, with `{schema}` where the schema goes: the body of the script
 * that `postgresMigrationSql` prints and that `ensureSchema` sends in one
 * round trip.
 */
export function pendingMigrations(fromVersion: number): string[] {
  return POSTGRES_MIGRATIONS.filter((m) => m.version > fromVersion).flatMap((m) => [
    `-- ${m.version}: ${m.name}`,
    m.sql,
    `INSERT INTO {schema}.migrations (version, name) VALUES (${m.version}, ${sqlString(m.name)});`,
  ]);
}

/**
 * The complete schema as one SQL script, for teams that apply migrations
 * themselves (then pass `migrate: false` to `postgresStore`).
 *
 * @param options.schema The schema errand's tables live in (default `"errand"`).
 * @param options.fromVersion Only migrations after this version (default 0: all).
 *
 * @example Print the schema
 * ```ts
 * import { postgresMigrationSql } from "@errand/errand/postgres";
 * console.log(postgresMigrationSql({ schema: "jobs" }));
 * ```
 */
export function postgresMigrationSql(options: { schema?: string; fromVersion?: number } = {}): string {
  const schema = quoteIdentifier(options.schema ?? "errand");
  const parts = [BOOTSTRAP_SQL, ...pendingMigrations(options.fromVersion ?? 0)];
  return parts.join("\n").replaceAll("{schema}", schema) + "\n";
}
