/**
 * Held snapshot (PostgreSQL): 20,000 jobs (quick: 4,000) drained by two
 * worker processes, once normally and once, in a fresh schema, while another
 * connection holds a transaction open for the whole drain (REPEATABLE READ,
 * a read of the jobs table, and an XID, as the harness's idle-in-transaction
 * holder takes). That transaction pins the xmin horizon: no dead row version
 * the drain leaves behind (each claim and each completion makes one) can be
 * pruned or vacuumed, and index scans wade through them.
 *
 * A measurement: it reports both drain rates, their ratio, and the jobs
 * table's dead tuples after each drain, and after a VACUUM run before the
 * snapshot is released (the dead tuples it could not remove). What must
 * hold: both drains complete every job within the deadline, none lost or
 * failed, and the snapshot was still held when the held drain ended (else
 * the figures would not measure it).
 */
import postgres from "postgres";
import { check, type Scenario } from "../harness/scenario.ts";
import { openDatabase, type ScratchDatabase } from "../../tests/support/scratch_database.ts";
import { orchestrator } from "../harness/orchestrator.ts";
import { chaosWorkers } from "../harness/workers.ts";
import { readRunLog, runsOf } from "../harness/run_log.ts";
import { sleep, until } from "../../tests/support/wait.ts";

/** What one drain measured. */
interface Drain {
  /** Whether every job completed within the deadline. */
  readonly drained: boolean;
  readonly completed: number;
  readonly failed: number;
  /** Jobs the run log has a run of. */
  readonly ran: number;
  /** Jobs per second, from the first run's start to the last run's end. */
  readonly rate: number;
  /** n_dead_tup of the jobs table once the workers are gone. */
  readonly deadTuples: number;
  /** n_dead_tup of the jobs table after a VACUUM run before the snapshot is released: the dead tuples it could not remove. */
  readonly deadAfterVacuum: number;
  /** Whether the holding transaction was still open, holding its xmin, when the drain ended (held drains only). */
  readonly heldToTheEnd?: boolean;
}

export const scenario: Scenario = {
  name: "held_snapshot",
  summary:
    "20,000 jobs drained normally, then while another connection holds a snapshot open: both rates, dead tuples, nothing lost",
  harness: ["idle_in_tx_saturation"],
  stores: ["postgres"],
  async run({ db, quick, dir, note }) {
    const jobs = quick ? 4_000 : 20_000;
    const deadlineMs = quick ? 45_000 : 120_000;
    const normal = await drain(db, jobs, deadlineMs, `${dir}/normal.jsonl`, false);
    note(`normal drain: ${normal.rate} jobs/s, ${normal.deadTuples} dead tuples`);
    // A schema of its own, so the held drain starts from a table as clean as the first one did.
    const second = openDatabase("postgres", dir, db.env.CHAOS_URL);
    let held: Drain;
    try {
      held = await drain(second, jobs, deadlineMs, `${dir}/held.jsonl`, true);
    } finally {
      await second.close();
    }
    note(`held drain: ${held.rate} jobs/s, ${held.deadTuples} dead tuples`);
    const figures = {
      jobs: 2 * jobs,
      completed: normal.completed + held.completed,
      lost: 2 * jobs - normal.completed - held.completed,
      drainRate: normal.rate,
      drainRateHeld: held.rate,
      ratio: Math.round((held.rate / normal.rate) * 100) / 100,
      deadTuples: normal.deadTuples,
      deadTuplesHeld: held.deadTuples,
      deadAfterVacuum: normal.deadAfterVacuum,
      deadAfterVacuumHeld: held.deadAfterVacuum,
      failed: normal.failed + held.failed,
    };
    return {
      figures,
      checks: [
        check(`the normal drain completes all ${jobs} jobs within ${deadlineMs / 1000} s`, normal.drained),
        check(`the held drain completes all ${jobs} jobs within ${deadlineMs / 1000} s`, held.drained),
        check("nothing lost: every job completed", figures.lost === 0),
        check("every job ran", normal.ran === jobs && held.ran === jobs),
        check("no job failed", figures.failed === 0),
        check("the snapshot was held for the whole held drain", held.heldToTheEnd === true),
      ],
    };
  },
};

/**
 * Enqueues `jobs` jobs on `db`, then drains them with two worker processes,
 * while a transaction holds a snapshot when `hold` is set.
 */
async function drain(
  db: ScratchDatabase,
  jobs: number,
  deadlineMs: number,
  log: string,
  hold: boolean,
): Promise<Drain> {
  const errand = orchestrator(db);
  await errand.start();
  for (let n = 0; n < jobs; n += 1_000) {
    const size = Math.min(1_000, jobs - n);
    await errand.enqueueMany(
      Array.from({ length: size }, (_, i) => ({ kind: "work" as const, payload: { n: n + i, ms: 0 } })),
    );
  }
  const schema = db.schema!;
  const holderApp = `${schema}_holder`;
  const holder = hold ? await holdSnapshot(db.env.CHAOS_URL, schema, holderApp) : undefined;
  const workers = chaosWorkers(db, log);
  try {
    await Promise.all([1, 2].map(() => workers.start({ CHAOS_CONCURRENCY: "8" })));
    const counts = async () => (await errand.counts()).byState;
    const drained = await until(async () => (await counts()).completed === jobs, deadlineMs, 250);
    let heldToTheEnd: boolean | undefined;
    if (holder) {
      const [row] = await db.sql!`
        SELECT state, backend_xmin IS NOT NULL AS pinned FROM pg_stat_activity WHERE application_name = ${holderApp}`;
      heldToTheEnd = row?.state === "idle in transaction" && row.pinned === true && holder.open();
    }
    await workers.stopAll();
    const deadTuples = await settledDeadTuples(db.sql!, schema);
    // A VACUUM while the snapshot (if any) is still held: what it cannot remove stays counted as dead.
    await db.sql!`VACUUM ${db.sql!(schema)}.jobs`;
    const deadAfterVacuum = await settledDeadTuples(db.sql!, schema);
    const byState = await counts();
    const events = readRunLog(log);
    const runs = runsOf(events);
    const first = Math.min(...events.filter((e) => e.e === "start").map((e) => e.t));
    const last = Math.max(...events.filter((e) => e.e === "end").map((e) => e.t));
    return {
      drained,
      completed: byState.completed,
      failed: byState.failed,
      ran: runs.size,
      rate: Math.round(byState.completed / ((last - first) / 1_000)),
      deadTuples,
      deadAfterVacuum,
      heldToTheEnd,
    };
  } finally {
    await workers.stopAll(2_000);
    await holder?.release();
    await errand.shutdown();
  }
}

/**
 * n_dead_tup of the schema's jobs table. Backends report their counts at
 * transaction ends (at most once a second) and when they exit: it is read
 * until two readings agree.
 */
async function settledDeadTuples(sql: postgres.Sql, schema: string): Promise<number> {
  let dead = -1;
  await until(
    async () => {
      await sleep(300);
      const [row] = await sql`
      SELECT n_dead_tup FROM pg_stat_user_tables WHERE schemaname = ${schema} AND relname = 'jobs'`;
      const now = Number(row?.n_dead_tup ?? -1);
      const stable = now === dead;
      dead = now;
      return stable;
    },
    10_000,
    0,
  );
  return dead;
}

/**
 * Opens a connection that begins a REPEATABLE READ transaction, reads the
 * jobs table (taking its snapshot) and takes an XID, then stays idle in that
 * transaction until released.
 */
async function holdSnapshot(
  url: string,
  schema: string,
  app: string,
): Promise<{ open(): boolean; release(): Promise<void> }> {
  const sql = postgres(url, { max: 1, connection: { application_name: app }, onnotice: () => {} });
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let holding!: () => void;
  const held = new Promise<void>((resolve) => (holding = resolve));
  let open = false;
  const transaction = sql.begin("isolation level repeatable read", async (tx) => {
    await tx`SET LOCAL idle_in_transaction_session_timeout = 0`;
    await tx`SELECT 1 FROM ${sql(schema)}.jobs LIMIT 1`;
    await tx`SELECT txid_current()`;
    open = true;
    holding();
    await released;
  }).finally(() => (open = false));
  await Promise.race([held, transaction]);
  return {
    open: () => open,
    async release() {
      release();
      await transaction.catch(() => {});
      await sql.end({ timeout: 5 });
    },
  };
}
