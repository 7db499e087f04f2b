/**
 * The application's table of step runs, `chaos_step_runs`, where the chaos
 * workflow's steps record that they ran (workflow.ts): one row per run of a
 * step's function, `(job_id, step, pid, at)`, with no unique constraint, so a
 * step that ran twice leaves two rows. The workers write it, in a statement
 * of its own or in an application write transaction on their store's own
 * client (on PostgreSQL errand accepts a `{ tx }` of no other); the scenario
 * creates and reads it.
 */
import type postgres from "postgres";
import type { SqliteTx, TransactionalStore, WorkerDriver } from "../../tests/support/worker_env.ts";

/** One run of a step's function. */
export interface StepRun {
  /** The workflow's job id. */
  readonly job: string;
  /** The step's place in the workflow, from 0. */
  readonly step: number;
  /** The worker process that ran it. */
  readonly pid: number;
  /** When its function began (ms since the epoch, as a run log's `t`). */
  readonly at: number;
}

/** Writes a step run in the transaction it was made for. */
export type RecordRun = (run: StepRun) => Promise<void>;

/** The table of step runs on one database. */
export interface StepRuns {
  /** Creates the table (before any worker starts). */
  create(): Promise<void>;
  /** Records a run in a statement of its own, committed at once. */
  record(run: StepRun): Promise<void>;
  /**
   * Runs `fn` in an application write transaction `tx` (postgres.js
   * `sql.begin`, on libSQL the errand store's `store.transaction`), with a `record` that
   * writes in it: commits when `fn` returns, rolls back when it throws.
   */
  transaction<T>(fn: (tx: unknown, record: RecordRun) => Promise<T>): Promise<T>;
  /** Every recorded run. */
  all(): Promise<StepRun[]>;
}

const TABLE = "chaos_step_runs";
const COLUMNS = "job_id, step, pid, at";
const toRun = (r: Record<string, unknown>): StepRun => ({
  job: String(r.job_id),
  step: Number(r.step),
  pid: Number(r.pid),
  at: Number(r.at),
});

/** The table of step runs on the database of `driver` (whose owner closes it). */
export function stepRuns(driver: WorkerDriver): StepRuns {
  return "sql" in driver ? onPostgres(driver.sql, driver.schema) : onSqlite(driver.store);
}

function onPostgres(sql: postgres.Sql, schema: string): StepRuns {
  const table = sql(`${schema}.${TABLE}`);
  const insert = (q: postgres.Sql | postgres.TransactionSql, run: StepRun) =>
    q`INSERT INTO ${table} (job_id, step, pid, at) VALUES (${run.job}, ${run.step}, ${run.pid}, ${run.at})`;
  return {
    async create() {
      await sql`CREATE TABLE ${table} (job_id text NOT NULL, step integer NOT NULL, pid integer NOT NULL, at double precision NOT NULL)`;
    },
    async record(run) {
      await insert(sql, run);
    },
    async transaction(fn) {
      // postgres.js types begin's result as an array when the callback's might be one; it is the callback's own.
      return await sql.begin((tx) => fn(tx, async (run) => void await insert(tx, run))) as Awaited<
        ReturnType<typeof fn>
      >;
    },
    async all() {
      return (await sql`SELECT job_id, step, pid, at FROM ${table}`).map(toRun);
    },
  };
}

/**
 * On SQLite (libsqlStore or sqliteStore) every statement on the table runs
 * in a write transaction of the errand store (`store.transaction`), in turn
 * with errand's writes from the same process, as the workflows guide asks.
 */
function onSqlite(store: TransactionalStore): StepRuns {
  const insert = (tx: SqliteTx, run: StepRun) =>
    tx.execute({
      sql: `INSERT INTO ${TABLE} (${COLUMNS}) VALUES (?, ?, ?, ?)`,
      args: [run.job, run.step, run.pid, run.at],
    });
  return {
    async create() {
      await store.transaction((tx) =>
        tx.execute(
          `CREATE TABLE ${TABLE} (job_id TEXT NOT NULL, step INTEGER NOT NULL, pid INTEGER NOT NULL, at REAL NOT NULL)`,
        )
      );
    },
    record: (run) => store.transaction((tx) => insert(tx, run)).then(() => {}),
    transaction: (fn) => store.transaction((tx) => fn(tx, async (run) => void await insert(tx, run))),
    async all() {
      return (await store.transaction((tx) => tx.execute(`SELECT ${COLUMNS} FROM ${TABLE}`))).rows.map(toRun);
    },
  };
}
