/**
 * Workflows across kills: 500 durable workflows (quick: 200) of 5 steps and
 * a sleep (chaos/harness/workflow.ts) on 4 worker processes, 5 of them
 * SIGKILLed at random moments (quick: 2), each replaced at once. Each step's
 * function records its run in the application's table of step runs, which
 * has no unique constraint: steps 0, 2 and 4 in the application's
 * transaction, as steps `{ tx }` of it, and steps 1 and 3 in a statement of
 * their own. Between steps 2 and 3 each workflow sleeps durably, its run
 * ended and its slot freed.
 *
 * What must hold, besides what every drain under kills keeps (nothing lost,
 * none failed, nothing run twice while leased):
 * - every step of every workflow ran, and each step `{ tx }` committed
 *   exactly once: one row per workflow and step;
 * - a step ran again only because a kill cut it: every run of a step but
 *   its last (its rows outside a transaction; for a step `{ tx }`, the runs
 *   the run log shows, whose rows rolled back) was in a run of the workflow
 *   that never ended and whose process was SIGKILLed, so a step ran at most
 *   once more per kill that cut it;
 * - so a kill adds at most one run to each job its process was running, at
 *   most the concurrency (8): at most kills × 8 extra runs in all, a bound
 *   checked per kill and in total;
 * - every workflow's stored steps are its 5 steps and its sleep, completed,
 *   and its result is the values its steps kept;
 * - every workflow suspended at its sleep, but those whose run a kill cut
 *   (a rescue that came after the wake time sleeps no more).
 */
import { createClient } from "@libsql/client";
import { libsqlStore } from "errand/libsql";
import { type Check, check, type Figures, type Scenario } from "../harness/scenario.ts";
import { type DrainLog, drainUnderKills } from "../harness/drain_under_kills.ts";
import { orchestrator } from "../harness/orchestrator.ts";
import { type StepRuns, stepRuns } from "../harness/step_runs.ts";
import { inTransaction, SLEEP_AFTER, WORKFLOW_STEPS, type WorkflowResult } from "../harness/workflow.ts";
import type { ScratchDatabase } from "../../tests/support/scratch_database.ts";
import type { TransactionalStore } from "../../tests/support/worker_env.ts";
import { until } from "../../tests/support/wait.ts";

/**
 * How long a step outside a transaction works after recording its run: the
 * window a kill cuts it in, and long enough that the drain outlasts the kills
 * (each waits for its replacement to start, a second or two).
 */
const STEP_MS = 400;
/**
 * How long a step `{ tx }` works inside its transaction. On libSQL the
 * transaction holds the file's write lock, which every process's writes
 * wait for, so it stays short there, as the transactions guide asks.
 */
const TX_MS = { postgres: 200, libsql: 2, sqlite: 2 } as const;
/**
 * The sleep between steps 2 and 3, from when step 2 ran: many poll intervals
 * (100 ms), so the job is parked and claimed anew, and longer than step 2's
 * record takes to commit under load, so the first run reaching it suspends.
 */
const SLEEP_MS = 1_500;

export const scenario: Scenario = {
  name: "workflows_across_kills",
  summary:
    "500 workflows of 5 steps and a sleep, 4 worker processes, 5 SIGKILLs: all complete, steps { tx } commit once, others run at most once more per kill",
  stores: ["libsql", "sqlite", "postgres"],
  async run(context) {
    const { db, quick } = context;
    const jobs = quick ? 200 : 500;
    const kills = quick ? 2 : 5;
    // Random moments of the drain, as points of its progress: 5 to 60 % of the workflows done, for each kill
    // waits for its replacement to start (seconds), and a kill after the last workflow cuts nothing.
    const points = Array.from({ length: kills }, () => Math.floor(jobs * (0.05 + Math.random() * 0.55)))
      .sort((a, b) => a - b);
    // The orchestrator's own connection: on PostgreSQL the scratch database's, on SQLite a libSQL client of its file.
    const client = db.sql ? undefined : createClient({ url: db.env.CHAOS_URL });
    const table = stepRuns(
      client ? { store: libsqlStore(client) as TransactionalStore } : { sql: db.sql!, schema: db.schema! },
    );
    let ids: readonly string[] = [];
    try {
      return await drainUnderKills(context, {
        jobs,
        kills,
        job: (n) => ({ kind: "workflow", payload: { n, ms: STEP_MS, txMs: TX_MS[db.store], sleepMs: SLEEP_MS } }),
        async enqueued(enqueuedIds) {
          // errand's tables (on PostgreSQL, its schema) exist by now; the workers have not started.
          await table.create();
          ids = enqueuedIds;
        },
        killAt: (k, completed) => until(async () => (await completed()) >= points[k], 30_000, 20),
        measure: (log) => measure(db, table, ids, kills, log),
      });
    } finally {
      client?.close();
    }
  },
};

/** A run of a step's function: its process, and when it began. */
interface StepRun {
  readonly pid: number;
  readonly at: number;
}

/** The scenario's own figures and rules, from the table of step runs, the run log and the workflows' records. */
async function measure(
  db: ScratchDatabase,
  table: StepRuns,
  ids: readonly string[],
  kills: number,
  { events, runs, signals, concurrency }: DrainLog,
): Promise<{ figures: Figures; checks: Check[] }> {
  // The storm's kills: the SIGKILLs before the workers were told to stop (a worker late to exit is SIGKILLed then).
  const stopped = signals.findIndex((s) => s.signal === "SIGTERM");
  const killed = new Set(
    signals.slice(0, stopped < 0 ? undefined : stopped).filter((s) => s.signal === "SIGKILL").map((s) => s.pid),
  );
  /** Whether a kill cut the run of `job` in which a step began at `at` in process `pid`: it never ended, its process killed. */
  const cutByKill = (job: string, { pid, at }: StepRun) => {
    const run = (runs.get(job) ?? []).filter((r) => r.pid === pid && r.start <= at).at(-1);
    return run !== undefined && run.end === undefined && killed.has(pid);
  };
  const rows = byStep(await table.all());
  const begun = byStep(
    events.filter((e) => e.e === "step").map((e) => ({ job: e.id, step: e.step!, pid: e.pid, at: e.t })),
  );

  let txMissing = 0;
  let txDuplicated = 0;
  let neverRan = 0;
  let extraRuns = 0;
  let txRolledBack = 0;
  let unexplained = 0;
  const extraPerKill = new Map<number, number>();
  for (const id of ids) {
    for (let i = 0; i < WORKFLOW_STEPS; i++) {
      const recorded = rows.get(`${id} ${i}`) ?? [];
      if (inTransaction(i)) {
        if (recorded.length === 0) txMissing++;
        if (recorded.length > 1) txDuplicated++;
      } else if (recorded.length === 0) neverRan++;
      // A step { tx }'s runs that rolled back left no row: the run log shows them.
      const stepRuns = inTransaction(i) ? begun.get(`${id} ${i}`) ?? [] : recorded;
      // Every run of the step but its last: each must be one a kill cut.
      for (const extra of [...stepRuns].sort((a, b) => a.at - b.at).slice(0, -1)) {
        if (inTransaction(i)) txRolledBack++;
        else extraRuns++;
        if (!cutByKill(id, extra)) unexplained++;
        else extraPerKill.set(extra.pid, (extraPerKill.get(extra.pid) ?? 0) + 1);
      }
    }
  }

  // Runs a kill cut: in a SIGKILLed process, never ended.
  const cut = [...runs.values()].flat().filter((r) => r.end === undefined && killed.has(r.pid));
  const cutJobs = new Set(cut.map((r) => r.id));
  const suspensions = events.filter((e) => e.e === "suspend").length;

  const errand = orchestrator(db);
  await errand.start();
  let wrongRecords = 0;
  let slept = 0;
  try {
    for (const [n, id] of ids.entries()) {
      const job = await errand.get(id);
      const result = job?.result as WorkflowResult | undefined;
      const expected = Array.from({ length: WORKFLOW_STEPS }, (_, i) => 10 * n + i);
      const stepNames = Array.from({ length: WORKFLOW_STEPS }, (_, i) => `step-${i}`);
      stepNames.splice(SLEEP_AFTER + 1, 0, "pause");
      const right = result?.n === n && result.values.join() === expected.join() &&
        job!.steps.map((s) => s.name).join() === stepNames.join() && job!.steps.every((s) => s.state === "completed");
      if (!right) wrongRecords++;
      if (job?.runs.some((r) => r.outcome === "suspended")) slept++;
    }
  } finally {
    await errand.shutdown();
  }

  const bound = kills * concurrency;
  const mostPerKill = Math.max(0, ...extraPerKill.values());
  const figures = {
    stepRuns: [...rows.values()].reduce((sum, list) => sum + list.length, 0),
    extraRuns,
    txRolledBack,
    extraRunsBound: bound,
    mostExtraRunsOfAKill: mostPerKill,
    unexplainedExtraRuns: unexplained,
    txMissing,
    txDuplicated,
    neverRan,
    runsCut: cut.length,
    killsThatCut: new Set(cut.map((r) => r.pid)).size,
    suspensions,
    slept,
    wrongRecords,
  };
  return {
    figures,
    checks: [
      check("every step of every workflow ran", neverRan === 0 && txMissing === 0),
      check("every step { tx } committed exactly once: one row per workflow and step", txDuplicated === 0),
      check(
        "a step ran again only after a SIGKILL cut its run, at most once more per kill",
        unexplained === 0,
      ),
      check(
        `at most ${concurrency} (the concurrency) extra runs per kill, ${bound} in all`,
        mostPerKill <= concurrency && extraRuns + txRolledBack <= bound,
      ),
      check(
        "every workflow's steps are stored completed, and its result is the values they kept",
        wrongRecords === 0,
      ),
      check(
        "every workflow suspended at its sleep, but those whose run a kill cut",
        ids.length - slept <= cutJobs.size,
      ),
    ],
  };
}

/** Step runs by `"<job id> <step>"`. */
function byStep(list: readonly (StepRun & { job: string; step: number })[]): Map<string, StepRun[]> {
  const map = new Map<string, StepRun[]>();
  for (const { job, step, pid, at } of list) {
    const key = `${job} ${step}`;
    const runs = map.get(key) ?? [];
    map.set(key, runs);
    runs.push({ pid, at });
  }
  return map;
}
