/**
 * A worker process of the flow-control runs (see jobs.ts), configured
 * by its environment:
 *
 * - CHAOS_STORE (libsql | postgres), CHAOS_URL, CHAOS_SCHEMA: the database (see ../scratch_database.ts);
 * - CHAOS_LOG: the run log, a file every process of the run appends one JSON
 *   line to per event, `{ e: "start" | "end" | "abort" | "pause", id, kind, g, attempt, pid, t }`.
 *   Each line is one append, so the file's line order is the order the events
 *   happened in, across processes. `t` is `Date.now()`, the clock the store's
 *   times come from in every process. A handler logs "start" once the claim
 *   has committed and "end" before its outcome is written: a run's lines lie
 *   inside the time the store counted it as running;
 * - FLOW_LIMITS: the {@link FlowLimits} as JSON;
 * - CHAOS_LEASE (default "2s").
 *
 * Each handler sleeps its payload's `ms` (aborted by its signal). A job with
 * `pauseMs` pauses its group on its first run (`job.pauseGroup`) and logs
 * "pause" instead. Prints "ready" once started, shuts down gracefully on SIGTERM.
 */
import { appendFileSync } from "node:fs";
import process from "node:process";
import { env, openWorkerStore, sleep } from "../worker_env.ts";
import { createErrand, type Duration, type Handler } from "errand";
import { flowJobs, type FlowLimits, type FlowPayload, flowQueues } from "./jobs.ts";

const log = (event: Record<string, unknown>) =>
  appendFileSync(env("CHAOS_LOG"), `${JSON.stringify({ ...event, pid: process.pid, t: Date.now() })}\n`);

const { store, close } = openWorkerStore();
const quiet = () => {};

const limits: FlowLimits = JSON.parse(env("FLOW_LIMITS"));
const jobs = flowJobs(limits);

const handler: Handler<FlowPayload> = async (p, job) => {
  const run = { id: job.id, kind: job.kind, g: p.g ?? null, attempt: job.attempt };
  // A pause's run is snoozed with its attempt not counted, so its job's history tells a first run from a second.
  if (p.pauseMs !== undefined && !(await errand.get(job.id))?.runs.some((r) => r.outcome === "snoozed")) {
    log({ e: "pause", ...run });
    return job.pauseGroup(p.pauseMs);
  }
  log({ e: "start", ...run });
  const done = await sleep(p.ms, job.signal);
  log({ e: done ? "end" : "abort", ...run });
};

const errand = createErrand({
  jobs,
  store,
  logger: { debug: quiet, info: quiet, warn: quiet, error: (m, f) => console.error(m, f ?? "") },
  lease: env("CHAOS_LEASE", "2s") as Duration,
  leaderLease: "2s",
  pollInterval: "100ms",
  maintenance: { rescue: "250ms" },
  queues: flowQueues(limits),
  handlers: Object.fromEntries(Object.keys(jobs).map((name) => [name, handler])),
});
await errand.start();
console.log("ready");
process.on("SIGTERM", async () => {
  await errand.shutdown({ drain: "5s" });
  await close();
  process.exit(0);
});
