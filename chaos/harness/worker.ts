/**
 * A worker process of the chaos suite, configured by its environment:
 *
 * - CHAOS_STORE (libsql | postgres), CHAOS_URL, CHAOS_SCHEMA: the database (see tests/support/scratch_database.ts);
 * - CHAOS_LOG: the run log, a file it appends one JSON line to per event
 *   (`{ e: "start" | "end" | "abort", id, kind, attempt, key?, n?, pid, t }`,
 *   `t` in ms since the epoch with a fraction, comparable across processes);
 * - CHAOS_CONCURRENCY (default 8), CHAOS_LEASE (default "3s"), CHAOS_DRAIN
 *   (the drain on SIGTERM, default "5s"), CHAOS_POOL (PostgreSQL connections, default 4),
 *   CHAOS_STORE_TIMEOUT (the `storeTimeout`, default errand's), CHAOS_STATEMENT_TIMEOUT and
 *   CHAOS_LOCK_TIMEOUT (PostgreSQL's `statement_timeout` and `lock_timeout` on its connections, in ms);
 * - a `workflow` job records its steps' runs in the application's table of step runs
 *   (step_runs.ts) through the store's own client, and also logs
 *   `{ e: "step", step }` as a step's function begins and `{ e: "suspend" }` when its sleep ends the run;
 * - CHAOS_SCHEDULE: a cron expression; when set, it registers the schedule
 *   "tick" at start, as an application does on every start (CHAOS_CATCH_UP: its catchUp);
 * - CHAOS_ENQUEUE=N: after start, it also enqueues N `work` jobs of CHAOS_JOB_MS (default 1) ms one
 *   by one, logging `{ e: "enqueued", id }` for each and `{ e: "enqueue-error", message }` for a failure;
 * - CHAOS_APP: the application_name of its PostgreSQL connections;
 * - on SIGTERM it logs `{ e: "sigterm" }`, then `{ e: "shutdown", phase }` as each step of shutdown begins
 *   (errand's debug lines that begin "Shutdown", then closing its connections), and `{ e: "exit" }` last,
 *   so a late exit shows the step it was in;
 * - CHAOS_DRAIN_BUDGET: instead of starting, it prints "ready", runs one
 *   `drain({ budget })` as a serverless function would, writes
 *   `{ report, ms, t }` (the report, the call's duration in ms, and when it
 *   returned) as JSON to the file CHAOS_OUT, and exits at once.
 *
 * Prints "ready" once started, and shuts down gracefully on SIGTERM.
 */
import { appendFileSync, writeFileSync } from "node:fs";
import process from "node:process";
import { env, openWorkerStore, sleep } from "../../tests/support/worker_env.ts";
import { createErrand, type Duration } from "errand";
import { chaosJobs, chaosTopics } from "./jobs.ts";
import { stepRuns } from "./step_runs.ts";
import { workflowHandler } from "./workflow.ts";

const now = () => performance.timeOrigin + performance.now();
const log = (event: Record<string, unknown>) =>
  appendFileSync(env("CHAOS_LOG"), `${JSON.stringify({ ...event, pid: process.pid, t: now() })}\n`);

const { store, driver, close } = openWorkerStore();
const quiet = () => {};

const errand = createErrand({
  jobs: chaosJobs,
  topics: chaosTopics,
  store,
  logger: {
    debug: (m) => void (m.startsWith("Shutdown") && log({ e: "shutdown", phase: m })),
    info: quiet,
    warn: quiet,
    error: (m, f) => console.error(m, f ?? ""),
  },
  lease: env("CHAOS_LEASE", "3s") as Duration,
  ...(env("CHAOS_STORE_TIMEOUT") ? { storeTimeout: env("CHAOS_STORE_TIMEOUT") as Duration } : {}),
  leaderLease: "2s",
  pollInterval: "100ms",
  maintenance: { rescue: "250ms" },
  queues: { default: { concurrency: Number(env("CHAOS_CONCURRENCY", "8")) } },
  handlers: {
    work: async ({ n, ms }, job) => {
      log({ e: "start", id: job.id, kind: "work", attempt: job.attempt, n });
      // Progress at the start and at the end: a stale run's end writes it too, and the fence must refuse it.
      job.progress({ pid: process.pid, attempt: job.attempt, at: "start" });
      const done = await sleep(ms, job.signal);
      if (done) job.progress({ pid: process.pid, attempt: job.attempt, at: "end" });
      log({ e: done ? "end" : "abort", id: job.id, kind: "work", attempt: job.attempt, n });
    },
    ordered: async ({ key, n, ms }, job) => {
      log({ e: "start", id: job.id, kind: "ordered", attempt: job.attempt, key, n });
      const done = await sleep(ms, job.signal);
      log({ e: done ? "end" : "abort", id: job.id, kind: "ordered", attempt: job.attempt, key, n });
    },
    compute: async ({ n, ms }, job) => {
      log({ e: "start", id: job.id, kind: "compute", attempt: job.attempt, n });
      const done = await sleep(ms, job.signal);
      log({ e: done ? "end" : "abort", id: job.id, kind: "compute", attempt: job.attempt, n });
      return { n, doubled: 2 * n };
    },
    tick: (_p, job) => {
      log({ e: "start", id: job.id, kind: "tick", attempt: job.attempt });
      log({ e: "end", id: job.id, kind: "tick", attempt: job.attempt });
    },
    workflow: workflowHandler(stepRuns(driver), log),
  },
});
const drainBudget = env("CHAOS_DRAIN_BUDGET");
if (drainBudget) {
  console.log("ready");
  const started = performance.now();
  const report = await errand.drain({ budget: drainBudget as Duration });
  const ms = performance.now() - started;
  writeFileSync(env("CHAOS_OUT"), JSON.stringify({ report, ms, t: now() }));
  // As a function returns: what the drain left unfinished is not waited for.
  process.exit(0);
}
await errand.start();
const cron = env("CHAOS_SCHEDULE");
if (cron) {
  await errand.schedule("tick", "tick", { schedule: "tick" }, cron, { catchUp: Number(env("CHAOS_CATCH_UP", "1")) });
}
console.log("ready");
process.on("SIGTERM", async () => {
  log({ e: "sigterm" });
  await errand.shutdown({ drain: env("CHAOS_DRAIN", "5s") as Duration });
  log({ e: "shutdown", phase: "closing the store's connections" });
  await close();
  log({ e: "exit" });
  process.exit(0);
});
const toEnqueue = Number(env("CHAOS_ENQUEUE", "0"));
for (let n = 0; n < toEnqueue; n++) {
  try {
    const { id } = await errand.enqueue("work", { n, ms: Number(env("CHAOS_JOB_MS", "1")) });
    log({ e: "enqueued", id, n });
  } catch (err) {
    log({ e: "enqueue-error", n, message: String(err) });
  }
}
