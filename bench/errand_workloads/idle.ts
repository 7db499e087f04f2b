/**
 * The idle-cost workloads on errand's PostgreSQL store (issue 43, "Idle
 * cost"): `idle_cost` and `idle_cost_polling` start a throwaway PostgreSQL
 * cluster (chaos/harness/throwaway_cluster.ts) that preloads
 * `pg_stat_statements`, run `IDLE_WORKERS` (4) worker processes of this
 * same script (`--idle-worker`, see {@link idleWorkerMain}) in mode
 * `"work"` on its database `errand_idle`, each with 20 queues, 10 cron
 * schedules (none due in the window), the bench log's topic and a consumer
 * group on it, and no jobs; once all are up and have settled, reset the
 * statistics, wait `IDLE_S` seconds (60), and count the statements the
 * workers sent meanwhile: the sum of `calls` in `pg_stat_statements` of
 * their database (the bench reads from the database `postgres`, so none of
 * its own queries is counted), per process per second, with the most
 * frequent. `idle_cost` runs the store as configured by default (LISTEN/NOTIFY),
 * `idle_cost_polling` with `notify: false`; `idle_cost_suspended` is
 * `idle_cost` with 10,000 workflows suspended beforehand (half asleep, half
 * waiting on an event, each for a day), which the workers can run.
 *
 * @module
 */
import { type ChildProcess, spawn } from "node:child_process";
import process from "node:process";
import { createErrand, defineJobs, type ErrandOptions, job } from "../../mod.ts";
import { startThrowawayCluster } from "../../chaos/harness/throwaway_cluster.ts";
import { benchLogs, LOG_TOPICS } from "../bench_jobs.ts";
import { CFG, now, round, sleep, type WorkloadRun } from "../harness.ts";
import { silent } from "./session.ts";

/** The idle setup: its database, queues, schedules and consumer group, and how long workers settle before the count. */
const IDLE = { db: "errand_idle", queues: 20, schedules: 10, group: "idle-readers", settleMs: 5000, pool: 4 } as const;

/** The idle workers' kinds: the bench kind, and the workflows of `idle_cost_suspended`, which sleep or wait a day. */
const idleJobs = defineJobs({
  bench: job<{ i: number; s: string }>(),
  nap: job<{ i: number }>(),
  await: job<{ i: number }>(),
});

/** How many workflows `idle_cost_suspended` suspends before the count, half of them asleep, half waiting on an event. */
const SUSPENDED = 10_000;

/** The idle workers' options on `store`: {@link IDLE}'s queues and consumer group, and handlers for every kind. */
function idleOptions<TTx>(store: ErrandOptions<typeof idleJobs, undefined, TTx, typeof benchLogs>["store"]) {
  return {
    jobs: idleJobs,
    logs: benchLogs,
    topics: LOG_TOPICS,
    store,
    mode: "work",
    logger: silent,
    queues: Object.fromEntries(
      Array.from({ length: IDLE.queues }, (_, k) => [k === 0 ? "default" : `q${k}`, { concurrency: CFG.concurrency }]),
    ),
    handlers: {
      bench: () => Promise.resolve(),
      nap: async (_p, job) => void await job.sleep("nap", "1d"),
      await: async (_p, job) => void await job.waitForEvent("ping", { key: job.id, timeout: "1d" }),
    },
    consumers: { [IDLE.group]: { log: "events", handler: () => {} } },
  } satisfies ErrandOptions<typeof idleJobs, undefined, TTx, typeof benchLogs>;
}

/** The flag that makes this script an idle worker: `--idle-worker <url> notify|poll`. */
export const IDLE_WORKER_FLAG = "--idle-worker";

/**
 * An idle worker process: errand in mode "work" on `url` with the idle
 * setup, `notify` or polling; prints "ready" once started and its schedules
 * registered (as an application registers them at every start), and shuts
 * down on SIGTERM.
 */
export async function idleWorkerMain(url: string, notify: boolean): Promise<never> {
  const [{ default: postgres }, { postgresStore }] = await Promise.all([
    import("postgres"),
    import("../../adapters/postgres/mod.ts"),
  ]);
  const sql = postgres(url, { max: IDLE.pool, onnotice: () => {} });
  const errand = createErrand(idleOptions(postgresStore(sql, { notify })));
  await errand.start();
  // Minute k past midnight on January 1st: registered, never due in the window.
  for (let k = 0; k < IDLE.schedules; k++) {
    await errand.schedule(`idle-${k}`, "bench", { i: k, s: "" }, `${k} 0 1 1 *`);
  }
  console.log("ready");
  await new Promise((r) => process.once("SIGTERM", r));
  await errand.shutdown({ drain: "5s" });
  await sql.end({ timeout: 5 });
  process.exit(0);
}

/** Starts an idle worker process on `url`; resolves once it printed "ready". */
function startIdleWorker(url: string, notify: boolean): Promise<ChildProcess> {
  const child = spawn(
    process.execPath,
    [...process.execArgv, process.argv[1], IDLE_WORKER_FLAG, url, notify ? "notify" : "poll"],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  return new Promise((resolve, reject) => {
    let out = "";
    child.stdout!.on("data", (d) => {
      out += d;
      if (out.includes("ready")) resolve(child);
    });
    child.once("exit", (code) => reject(new Error(`an idle worker exited with ${code} before it was ready`)));
  });
}

/** Stops `child` with SIGTERM and waits for its exit (SIGKILL after 15 s). */
async function stopWorker(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once("exit", r));
  child.kill("SIGTERM");
  const killer = setTimeout(() => child.kill("SIGKILL"), 15_000);
  await exited;
  clearTimeout(killer);
}

/**
 * Suspends {@link SUSPENDED} workflows on `url` (half asleep, half waiting
 * on an event, each for a day) with an instance of the idle workers'
 * options, which it shuts down once every one is suspended.
 */
async function suspendWorkflows(url: string): Promise<void> {
  const [{ default: postgres }, { postgresStore }] = await Promise.all([
    import("postgres"),
    import("../../adapters/postgres/mod.ts"),
  ]);
  const sql = postgres(url, { max: IDLE.pool, onnotice: () => {} });
  const errand = createErrand(idleOptions(postgresStore(sql)));
  try {
    await errand.start();
    const half = SUSPENDED / 2;
    await errand.enqueueMany(Array.from({ length: half }, (_, i) => ({ kind: "nap" as const, payload: { i } })));
    await errand.enqueueMany(Array.from({ length: half }, (_, i) => ({ kind: "await" as const, payload: { i } })));
    for (;;) {
      const { byState } = await errand.counts();
      if (byState.scheduled === half && byState.waiting === half) break;
      await sleep(200);
    }
  } finally {
    await errand.shutdown({ drain: "5s" });
    await sql.end({ timeout: 5 });
  }
}

/** `idle_cost`, `idle_cost_polling` and `idle_cost_suspended` (PostgreSQL, on a cluster of their own). */
export function idleWorkloads(): Record<"idle_cost" | "idle_cost_polling" | "idle_cost_suspended", WorkloadRun> {
  const idle = async (signal: AbortSignal, notify: boolean, suspended = 0) => {
    const { default: postgres } = await import("postgres");
    const cluster = await startThrowawayCluster({ shared_preload_libraries: "pg_stat_statements" });
    const admin = postgres(cluster.url, { max: 1, onnotice: () => {} });
    const workers: ChildProcess[] = [];
    try {
      await admin`CREATE EXTENSION pg_stat_statements`;
      await admin.unsafe(`CREATE DATABASE ${IDLE.db}`);
      const url = new URL(cluster.url);
      url.pathname = `/${IDLE.db}`;
      if (suspended) await suspendWorkflows(url.toString());
      // The first creates the schema; the others start beside each other, as a deployment's would.
      workers.push(await startIdleWorker(url.toString(), notify));
      const rest = CFG.scale.idleWorkers - 1;
      workers.push(...await Promise.all(Array.from({ length: rest }, () => startIdleWorker(url.toString(), notify))));
      await sleep(IDLE.settleMs);
      if (signal.aborted) throw new Error("aborted");
      await admin`SELECT pg_stat_statements_reset()`;
      const t0 = now();
      await sleep(CFG.scale.idleS * 1000);
      const rows = await admin`SELECT s.query, sum(s.calls)::bigint AS calls FROM pg_stat_statements s
        JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = ${IDLE.db} GROUP BY s.query ORDER BY 2 DESC`;
      const seconds = (now() - t0) / 1000;
      const [{ connections }] = await admin`SELECT count(*)::int AS connections FROM pg_stat_activity
        WHERE datname = ${IDLE.db}`;
      const running = workers.filter((w) => w.exitCode === null && w.signalCode === null).length;
      if (running !== workers.length) {
        throw new Error(`verification failed: ${workers.length - running} idle workers exited during the window`);
      }
      const check = postgres(url.toString(), { max: 1, onnotice: () => {} });
      const [{ schedules, jobs: jobCount, suspended: stillSuspended }] = await check`SELECT
        (SELECT count(*)::int FROM errand.schedules) AS schedules, (SELECT count(*)::int FROM errand.jobs) AS jobs,
        (SELECT count(*)::int FROM errand.jobs WHERE kind IN ('nap', 'await') AND state IN ('scheduled', 'waiting'))
          AS suspended`;
      await check.end({ timeout: 5 });
      if (schedules !== IDLE.schedules) {
        throw new Error(`verification failed: ${schedules} schedules, expected ${IDLE.schedules}`);
      }
      if (stillSuspended !== suspended) {
        throw new Error(
          `verification failed: ${stillSuspended} jobs suspended after the window, expected ${suspended}`,
        );
      }
      const total = rows.reduce((sum, r) => sum + Number(r.calls), 0);
      return {
        processes: workers.length,
        window_s: round(seconds, 1),
        statements: total,
        statements_per_s: round(total / seconds, 2),
        statements_per_process_per_s: round(total / seconds / workers.length, 2),
        top: rows.slice(0, 10).map((r) => ({
          calls: Number(r.calls),
          per_process_per_s: round(Number(r.calls) / seconds / workers.length, 3),
          query: String(r.query).replace(/\s+/g, " ").trim().slice(0, 160),
        })),
        verified: {
          workers_running: running,
          schedules_in_db: schedules,
          jobs_in_db: jobCount,
          suspended_in_db: stillSuspended,
          connections,
        },
        settings: {
          cluster: "a throwaway PostgreSQL cluster (initdb + pg_ctl, shared_preload_libraries=pg_stat_statements)",
          count: `sum of calls in pg_stat_statements of database ${IDLE.db} (top-level statements, BEGIN and ` +
            `COMMIT included), reset ${IDLE.settleMs / 1000} s after the last worker was ready`,
          worker: `a process of its own each: mode "work", ${IDLE.queues} queues (default, q1..q${IDLE.queues - 1}), ` +
            `${IDLE.schedules} cron schedules (never due in the window), the log "events" (topic of ` +
            `${LOG_TOPICS.events.partitions} partitions) with the consumer group "${IDLE.group}", ` +
            (suspended
              ? `${suspended} workflows suspended before the workers start (half in job.sleep, half in ` +
                `job.waitForEvent, each for a day); `
              : "no jobs; ") +
            `postgres.js pool max ${IDLE.pool}; pollInterval 1s (default), every other option at its default`,
          notify,
        },
      };
    } finally {
      await Promise.all(workers.map(stopWorker));
      await admin.end({ timeout: 5 });
      await cluster.remove();
    }
  };
  return {
    idle_cost: ({ signal }) => idle(signal, true),
    idle_cost_polling: ({ signal }) => idle(signal, false),
    idle_cost_suspended: ({ signal }) => idle(signal, true, SUSPENDED),
  };
}
