/**
 * Statement and lock timeouts (PostgreSQL): two worker processes drain short
 * jobs, one with `statement_timeout` and one with `lock_timeout` at 1 s on
 * its connections, while another connection, several times mid-drain, locks
 * every running job's row (`SELECT ... FOR UPDATE`) and holds the lock for
 * 2.5 s, then 4 s, in turn (a few of the workers' timeouts: an outcome
 * written alone meets two or three of them before the row is free).
 * The workers' outcome writes, lease renewals and progress writes on those
 * rows are cancelled by the server (57014, 55P03) until it lets go.
 *
 * What must hold: such a cancellation is retried as a store that passes, not
 * taken for a refused outcome: every job completes, none fails, no outcome
 * is replaced (`OutcomeRejected`), and no job's history lacks a run its
 * attempts count. Reported: jobs, completed, lost, wrongly failed, runs
 * missing, outcomes replaced, rows locked per hold.
 */
import postgres from "postgres";
import { check, type Scenario } from "../harness/scenario.ts";
import { orchestrator } from "../harness/orchestrator.ts";
import { chaosWorkers } from "../harness/workers.ts";
import { readRunLog, runsOf } from "../harness/run_log.ts";
import { sleep, until } from "../../tests/support/wait.ts";

const TIMEOUT_MS = 1_000;
/** How long the holds keep the rows, in turn: a few of the workers' timeouts, well within their lease. */
const HOLDS_MS = [2_500, 4_000];
const JOB_MS = 50;
const WORKER_ENV = { CHAOS_LEASE: "15s", CHAOS_CONCURRENCY: "8" };
/** How long the drain may stand still before the scenario stops waiting for it. */
const STALL_MS = 45_000;

export const scenario: Scenario = {
  name: "statement_timeouts",
  summary:
    "running jobs' rows held locked 2.5 s and 4 s, several times, against workers with statement_timeout and lock_timeout 1 s: all complete, none failed, no run missing",
  stores: ["postgres"],
  async run({ db, quick, dir, note }) {
    const jobs = quick ? 1_000 : 3_000;
    const holds = quick ? 2 : 4;
    const log = `${dir}/runs.jsonl`;
    const errand = orchestrator(db);
    const workers = chaosWorkers(db, log);
    const table = `"${db.schema}".jobs`;
    // Finished jobs live in the history: counts read both tables.
    const all = `"${db.schema}".all_jobs`;
    const locker = postgres(db.env.CHAOS_URL, { max: 1, onnotice: () => {} });
    const sql = db.sql!;
    const completed = async () =>
      Number((await sql.unsafe(`SELECT count(*) AS n FROM ${all} WHERE state = 'completed'`))[0].n);
    try {
      await errand.start();
      for (let n = 0; n < jobs; n += 1_000) {
        const size = Math.min(1_000, jobs - n);
        await errand.enqueueMany(
          Array.from({ length: size }, (_, i) => ({ kind: "work" as const, payload: { n: n + i, ms: JOB_MS } })),
        );
      }
      await workers.start({ ...WORKER_ENV, CHAOS_STATEMENT_TIMEOUT: String(TIMEOUT_MS) });
      await workers.start({ ...WORKER_ENV, CHAOS_LOCK_TIMEOUT: String(TIMEOUT_MS) });
      const locked: number[] = [];
      for (let k = 0; k < holds; k++) {
        await until(async () => (await completed()) >= (jobs * (k + 1)) / (holds + 2), STALL_MS, 20);
        locked.push(
          await locker.begin(async (tx) => {
            const rows = await tx.unsafe(`SELECT id FROM ${table} WHERE state = 'running' FOR UPDATE`);
            await sleep(HOLDS_MS[k % HOLDS_MS.length]);
            return rows.length;
          }),
        );
        note(`hold ${k + 1}: ${locked[k]} running jobs' rows locked for ${HOLDS_MS[k % HOLDS_MS.length] / 1000} s`);
      }
      let done = -1;
      let movedAt = Date.now();
      const drained = await until(async () => {
        const count = await completed();
        if (count !== done) [done, movedAt] = [count, Date.now()];
        return count === jobs || Date.now() - movedAt > STALL_MS;
      }, 300_000) && done === jobs;
      const late = await workers.stopAll();
      const [row] = await sql.unsafe(`
        SELECT count(*) FILTER (WHERE state = 'completed') AS completed,
               count(*) FILTER (WHERE state = 'failed') AS failed,
               count(*) FILTER (WHERE jsonb_array_length(runs) + (state = 'completed')::int < attempt) AS runs_missing,
               count(*) FILTER (WHERE EXISTS (
                 SELECT 1 FROM jsonb_array_elements(runs) AS r WHERE r->'error'->>'name' = 'OutcomeRejected'
               )) AS replaced
        FROM ${all}`);
      const runs = runsOf(readRunLog(log));
      const figures = {
        jobs,
        completed: Number(row.completed),
        lost: jobs - Number(row.completed),
        wronglyFailed: Number(row.failed),
        runsMissing: Number(row.runs_missing),
        outcomesReplaced: Number(row.replaced),
        holds,
        rowsLocked: locked.reduce((a, b) => a + b, 0),
        extraRuns: [...runs.values()].reduce((sum, list) => sum + list.length, 0) - jobs,
      };
      return {
        figures,
        checks: [
          check(
            "every hold locked running jobs' rows mid-drain",
            locked.length === holds && locked.every((n) => n > 0),
          ),
          check("every job completes", drained && figures.lost === 0),
          check("no job failed", figures.wronglyFailed === 0),
          check("no job's history lacks a run its attempts count", figures.runsMissing === 0),
          check("no outcome was replaced by OutcomeRejected", figures.outcomesReplaced === 0),
          check("every job ran (the run log has a run of each)", runs.size === jobs),
          check("every worker exits within 15 s of SIGTERM", late === 0),
        ],
      };
    } finally {
      await workers.stopAll();
      await errand.shutdown().catch(() => {});
      await locker.end({ timeout: 5 });
    }
  },
};
