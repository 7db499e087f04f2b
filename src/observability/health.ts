/**
 * What the database's health figures mean for the queue: findings, each
 * with what to do, read from a {@link StoreHealth}. `errand.health()`,
 * `errand stats`, the dashboard and `errand doctor` all show these.
 *
 * - A pinned MVCC horizon (PostgreSQL): a transaction open longer than
 *   `horizonSeconds` keeps every row deleted or updated since it began, in
 *   every table of the database, so claims wade through dead rows and the
 *   indexes grow. An error: the queue slows down until it ends.
 * - Dead tuples (PostgreSQL): a table whose dead rows pass
 *   `deadTuplesRatio` of its live rows and `deadTuplesMin` is bloated;
 *   autovacuum is behind, turned off, or held back by the horizon.
 * - Autovacuum turned off on the server or one of errand's tables (PostgreSQL).
 * - The schema behind or ahead of this errand, an index the migrations
 *   create missing, or invalid (a failed `CREATE INDEX CONCURRENTLY`): errors.
 * - SQLite: a journal mode other than WAL (readers wait for writers), and a
 *   freelist over a quarter of the file (space only `VACUUM` gives back).
 *
 * Whether a claim is slower because of these is not measured: that would
 * take timing claims against a baseline, so the findings name the causes.
 *
 * @module
 */
import { ValidationError } from "../base/errors.ts";
import type { StoreHealth } from "../store/health.ts";

/** Thresholds of the findings of `health()`. */
export interface HealthOptions {
  /**
   * Seconds a transaction may hold the MVCC horizon before it is a finding.
   * @default {300}
   */
  horizonSeconds?: number;
  /**
   * Dead rows of a table, as a share of its live rows, past which it is bloated (with `deadTuplesMin`).
   * @default {0.2}
   */
  deadTuplesRatio?: number;
  /**
   * Dead rows of a table past which it is bloated (with `deadTuplesRatio`).
   * @default {10000}
   */
  deadTuplesMin?: number;
}

/** What a finding is about. */
export type HealthFindingCode =
  | "schema_behind"
  | "schema_ahead"
  | "index_missing"
  | "index_invalid"
  | "horizon_pinned"
  | "dead_tuples"
  | "autovacuum_off"
  | "journal_mode"
  | "freelist";

/** One finding on the database, with what to do. */
export interface HealthFinding {
  readonly code: HealthFindingCode;
  /** `error`: errand fails or slows down until it is fixed; `warning`: it will. */
  readonly severity: "error" | "warning";
  /** What was found, e.g. `transaction of pid 4121 (application "psql") open for 612 s holds the MVCC horizon`. */
  readonly message: string;
  /** What to do about it. */
  readonly fix: string;
}

/** The health figures of the store with the findings they lead to, as `health()` returns them. */
export interface ErrandHealth extends StoreHealth {
  /** Findings, errors first; empty when all is well. */
  readonly findings: readonly HealthFinding[];
}

/** The default thresholds. */
export const HEALTH_DEFAULTS: Required<HealthOptions> = {
  horizonSeconds: 300,
  deadTuplesRatio: 0.2,
  deadTuplesMin: 10_000,
};

/** Free pages, as a share of the file, past which SQLite's freelist is a finding. */
const FREELIST_RATIO = 0.25;

/**
 * Throws a {@link ValidationError} naming a threshold of `options` that is not
 * a number of at least 0; `of` says whose option it is (`health()`, `adminRouter()`'s `health`).
 */
export function checkHealthOptions(options: HealthOptions, of = "health()"): void {
  for (const key of Object.keys(HEALTH_DEFAULTS) as (keyof HealthOptions)[]) {
    const value = options[key];
    if (value !== undefined && !(typeof value === "number" && Number.isFinite(value) && value >= 0)) {
      throw new ValidationError(`Option "${key}" of ${of} must be a number >= 0, got "${String(value)}"`);
    }
  }
}

/** The findings `health` leads to under `options`, errors first. */
export function healthFindings(health: StoreHealth, options: HealthOptions = {}): HealthFinding[] {
  const limits = { ...HEALTH_DEFAULTS, ...options };
  const found: HealthFinding[] = [];
  const add = (severity: HealthFinding["severity"], code: HealthFindingCode, message: string, fix: string) =>
    found.push({ code, severity, message, fix });
  const { schemaVersion: has, schemaVersionExpected: wants } = health;
  const name = (table: string) => health.schema === undefined ? table : `"${health.schema}".${table}`;
  if (has < wants) {
    add(
      "error",
      "schema_behind",
      has === 0 ? "errand's schema does not exist" : `schema version ${has} is behind this errand's ${wants}`,
      "start errand with migrations on (the default), or run `errand migrate`",
    );
  } else if (has > wants) {
    add("error", "schema_ahead", `schema version ${has} is newer than this errand's ${wants}`, "upgrade errand");
  }
  if (has > 0) {
    for (const i of health.indexes) {
      if (i.state === "missing") {
        add(
          "error",
          "index_missing",
          `index ${i.index} on ${i.table} is missing`,
          `recreate it as errand's migrations do: ${i.definition}`,
        );
      } else if (i.state === "invalid") {
        add(
          "error",
          "index_invalid",
          `index ${i.index} on ${i.table} is invalid (a CREATE INDEX CONCURRENTLY failed or is still running)`,
          `REINDEX INDEX CONCURRENTLY ${name(i.index)}`,
        );
      }
    }
  }
  const h = health.horizon;
  if (h && h.ageSeconds > limits.horizonSeconds) {
    const seconds = Math.round(h.ageSeconds);
    if (h.kind === "prepared") {
      add(
        "error",
        "horizon_pinned",
        `prepared transaction "${h.gid}" open for ${seconds} s holds the MVCC horizon: vacuum removes no dead rows newer than it`,
        `COMMIT PREPARED or ROLLBACK PREPARED '${h.gid}'`,
      );
    } else {
      add(
        "error",
        "horizon_pinned",
        `transaction of pid ${h.pid} (application "${h.application}", user "${h.user}", ${h.state}) open for ${seconds} s ` +
          "holds the MVCC horizon: vacuum removes no dead rows newer than it, and claims slow down",
        `end that transaction (SELECT pg_terminate_backend(${h.pid})), and set idle_in_transaction_session_timeout ` +
          "(and statement_timeout for long reports, or run them on a replica) so it cannot happen again",
      );
    }
  }
  if (health.autovacuum === false) {
    add(
      "warning",
      "autovacuum_off",
      "autovacuum is off on the server: dead rows of errand's tables stay until someone runs VACUUM",
      "set autovacuum = on in postgresql.conf (ALTER SYSTEM SET autovacuum = on; SELECT pg_reload_conf())",
    );
  }
  for (const t of health.tables) {
    const dead = t.deadTuples ?? 0;
    if (dead > limits.deadTuplesMin && dead > limits.deadTuplesRatio * (t.liveTuples ?? 0)) {
      add(
        "warning",
        "dead_tuples",
        `table ${t.table} has ${dead} dead rows beside ${t.liveTuples ?? 0} live ones` +
          (t.autovacuumAgeSeconds == null
            ? " and was never autovacuumed"
            : `, last autovacuumed ${Math.round(t.autovacuumAgeSeconds)} s ago`),
        (h && h.ageSeconds > limits.horizonSeconds ? "end the transaction holding the horizon (above), then " : "") +
          `VACUUM (ANALYZE) ${name(t.table)}; if it recurs, make autovacuum visit it sooner ` +
          `(ALTER TABLE ${
            name(t.table)
          } SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_cost_delay = 0))`,
      );
    }
    if (t.autovacuumEnabled === false) {
      add(
        "warning",
        "autovacuum_off",
        `autovacuum is off for table ${t.table}`,
        `ALTER TABLE ${name(t.table)} RESET (autovacuum_enabled)`,
      );
    }
  }
  const f = health.file;
  if (f && ["delete", "truncate", "persist"].includes(f.journalMode.toLowerCase())) {
    add(
      "warning",
      "journal_mode",
      `journal mode is ${f.journalMode}: readers wait while a process writes`,
      "PRAGMA journal_mode = WAL (errand sets it when it creates the schema)",
    );
  }
  if (f && f.freelistPages > FREELIST_RATIO * f.pageCount && f.freelistPages * f.pageSize > 1 << 20) {
    add(
      "warning",
      "freelist",
      `${f.freelistPages} of ${f.pageCount} pages (${Math.round(f.freelistPages * f.pageSize / 1048576)} MiB) are free`,
      "VACUUM in a quiet moment to give the space back to the file system (SQLite reuses free pages anyway)",
    );
  }
  return found.sort((a, b) => (a.severity === b.severity ? 0 : a.severity === "error" ? -1 : 1));
}
