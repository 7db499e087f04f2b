/**
 * A drain under kills, as kill_storm and partition_order run it: jobs
 * enqueued up front, worked by 4 worker processes of which some are
 * SIGKILLed one after another at moments the scenario picks, each replaced at
 * once; then the store's counts and the run log are read, and the figures
 * and rules of every such drain are made.
 */
import type { EnqueueItem } from "errand";
import { type Check, check, type Figures, type Outcome, type ScenarioContext } from "./scenario.ts";
import { orchestrator } from "./orchestrator.ts";
import type { chaosJobs } from "./jobs.ts";
import type { SentSignal } from "../../tests/support/processes.ts";
import { chaosWorkers } from "./workers.ts";
import { overlapsWhileLeased, readRunLog, type Run, type RunEvent, runsOf } from "./run_log.ts";
import { until } from "../../tests/support/wait.ts";

const LEASE_MS = 3_000;
const WORKERS = 4;
const CONCURRENCY = 8;
const BATCH = 1_000;

/** What a drain's run log shows, for a scenario's own figures and rules. */
export interface DrainLog {
  /** The run log's events, in the order they were written. */
  readonly events: readonly RunEvent[];
  /** The runs of each job, by job id. */
  readonly runs: Map<string, Run[]>;
  /** Every signal sent to the workers. */
  readonly signals: readonly SentSignal[];
  /** The workers' lease, in ms. */
  readonly leaseMs: number;
  /** How many jobs each worker runs at once. */
  readonly concurrency: number;
}

/** How {@link drainUnderKills} drains. */
export interface DrainUnderKillsOptions {
  /** How many jobs it enqueues. */
  readonly jobs: number;
  /** How many workers it SIGKILLs, one after another. */
  readonly kills: number;
  /** Job `i` (0 to `jobs` - 1); the jobs are enqueued in that order. */
  job(i: number): EnqueueItem<typeof chaosJobs>;
  /** Called with the jobs' ids, in enqueue order, before the workers start. */
  enqueued?(ids: readonly string[]): Promise<void>;
  /** Resolves at the moment of kill `k` (0 to `kills` - 1); `completed` reads how many jobs are done. */
  killAt(k: number, completed: () => Promise<number>): Promise<unknown>;
  /**
   * The scenario's own figures and rules on the run log: its figures stand
   * after `lost`, its rules after "every job ran".
   */
  measure?(log: DrainLog): { figures: Figures; checks: Check[] } | Promise<{ figures: Figures; checks: Check[] }>;
}

/**
 * Enqueues `jobs` jobs on `context.db` (and hands their ids to `enqueued`), starts 4 worker processes (lease
 * 3 s, concurrency 8), and SIGKILLs a random live one at each of the `kills`
 * moments `killAt` waits for, starting a new one at once; then waits for
 * every job to complete (180 s at most), SIGTERMs the workers, and reads the
 * store and the run log.
 *
 * Figures: `jobs`, `completed`, `lost`, the scenario's own, `ranTwiceWhileLeased`,
 * `recoverySeconds` (from the last kill until the drain finished), `kills`,
 * `runs` (in the run log) and `failed`. Rules: every job completes, none
 * failed, every job ran, the scenario's own, no two runs of one job overlap
 * while a lease is valid, and every worker exits within 15 s of SIGTERM.
 */
export async function drainUnderKills(
  { db, dir, note }: ScenarioContext,
  { jobs, kills, job, enqueued, killAt, measure }: DrainUnderKillsOptions,
): Promise<Outcome> {
  const errand = orchestrator(db);
  await errand.start();
  const ids: string[] = [];
  for (let n = 0; n < jobs; n += BATCH) {
    const batch = await errand.enqueueMany(Array.from({ length: Math.min(BATCH, jobs - n) }, (_, i) => job(n + i)));
    ids.push(...batch.map((r) => r.id));
  }
  note(`enqueued ${jobs}`);
  await enqueued?.(ids);
  const log = `${dir}/runs.jsonl`;
  const workers = chaosWorkers(db, log);
  const env = { CHAOS_LEASE: `${LEASE_MS}ms`, CHAOS_CONCURRENCY: String(CONCURRENCY) };
  const completed = async () => (await errand.counts()).byState.completed ?? 0;
  let drained = false;
  let late = 0;
  let lastKill = performance.now();
  let recoverySeconds = 0;
  try {
    await Promise.all(Array.from({ length: WORKERS }, () => workers.start(env)));
    for (let k = 0; k < kills; k++) {
      await killAt(k, completed);
      const live = workers.live;
      const victim = live[Math.floor(Math.random() * live.length)];
      await workers.kill(victim);
      lastKill = performance.now();
      note(`killed ${victim.pid} (${k + 1}/${kills}) at ${await completed()} completed`);
      await workers.start(env);
    }
    // A dead instance keeps its topic partitions until its heartbeat expires (15 s): allow for several in a row.
    drained = await until(async () => (await completed()) === jobs, 180_000, 250);
    recoverySeconds = Math.round((performance.now() - lastKill) / 100) / 10;
    late = await workers.stopAll();
  } finally {
    // When something above threw, no worker may outlive the run.
    await workers.stopAll(0);
  }
  const counts = (await errand.counts()).byState;
  const events = readRunLog(log);
  const runs = runsOf(events);
  await errand.shutdown();
  const own =
    await measure?.({ events, runs, signals: workers.signals, leaseMs: LEASE_MS, concurrency: CONCURRENCY }) ??
      { figures: {}, checks: [] };
  const done = counts.completed ?? 0;
  const figures = {
    jobs,
    completed: done,
    lost: jobs - done,
    ...own.figures,
    ranTwiceWhileLeased: overlapsWhileLeased(runs, workers.signals, LEASE_MS),
    recoverySeconds,
    kills,
    runs: [...runs.values()].reduce((sum, list) => sum + list.length, 0),
    failed: counts.failed ?? 0,
  };
  return {
    figures,
    checks: [
      check("every job completes", drained && figures.lost === 0),
      check("no job failed", figures.failed === 0),
      check("every job ran (the run log has a run of each)", runs.size === jobs),
      ...own.checks,
      check("no two runs of one job overlap while a lease is valid", figures.ranTwiceWhileLeased === 0),
      check("every worker exits within 15 s of SIGTERM", late === 0),
    ],
  };
}
