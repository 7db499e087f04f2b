/**
 * Database connections cut, in two parts that run side by side:
 * - on the shared server, during a drain on 2 worker processes, every
 *   connection of the workers (those with this run's application_name,
 *   never another's) is ended with `pg_terminate_backend`, 3 times;
 * - on a throwaway cluster of the scenario's own, the whole server is
 *   stopped, left down 2 s and started again mid-drain; afterwards a worker
 *   is SIGKILLed with runs in hand, which only a rescue can repair.
 * What must hold, with no help from outside: work resumes within 30 s of
 * every cut and of the restart; every worker's LISTEN connection is back
 * within 30 s; maintenance still rescues the killed worker's jobs after the
 * restart; no job is lost or fails; no two runs of one job overlap while a
 * lease is valid; no worker holds more jobs running than twice its slots
 * (it stops claiming while outcomes wait to be written). Reported beside
 * them: jobs held running at the peak (claimed, outcome not yet written)
 * and runs beyond one per job.
 */
import postgres from "postgres";
import { check, type Scenario } from "../harness/scenario.ts";
import { openDatabase, type ScratchDatabase } from "../../tests/support/scratch_database.ts";
import { orchestrator } from "../harness/orchestrator.ts";
import type { Workers } from "../../tests/support/processes.ts";
import { chaosWorkers } from "../harness/workers.ts";
import { overlapsWhileLeased, readRunLog, type Run, runsOf, shutdownSteps } from "../harness/run_log.ts";
import { startThrowawayCluster } from "../harness/throwaway_cluster.ts";
import { until } from "../../tests/support/wait.ts";

const LEASE_MS = 3_000;
const CONCURRENCY = 8;
const WORKER_ENV = { CHAOS_LEASE: `${LEASE_MS}ms`, CHAOS_CONCURRENCY: String(CONCURRENCY) };
/**
 * Most jobs one worker may hold running in the store: its slots, and as many
 * again whose handler returned while the outcome waits to be written. Two
 * live workers per part, and the SIGKILLed one's jobs until they are rescued.
 */
const MOST_HELD = 3 * 2 * CONCURRENCY;
/** Long enough that a drain of a few thousand jobs on 2 workers lasts seconds, so the cuts fall inside it. */
const JOB_MS = 50;
/** The probe jobs the SIGKILL cuts short: long enough that the victim still holds them when the signal lands. */
const LONG_PROBE_MS = 2_000;
/** How long recovery may take, by the rule. */
const RECOVERY_LIMIT_S = 30;
/** How long the scenario waits for a recovery before it reports it missing (longer than the rule, so a slow one is measured). */
const WAIT_MS = 45_000;

const seconds = (ms: number) => Math.round(ms / 100) / 10;

/**
 * Reads of one chaos database's jobs and of its workers' connections,
 * straight from PostgreSQL, on a client of its own that retries connecting
 * every 100 ms (postgres.js's default backoff grows to 20 s, and would
 * delay the reading of a recovery, not the recovery).
 */
class Probe {
  readonly #sql: postgres.Sql;
  readonly #jobs: string;
  readonly #app: string;

  constructor(db: ScratchDatabase) {
    this.#sql = postgres(db.env.CHAOS_URL, { max: 2, backoff: () => 0.1, connect_timeout: 2, onnotice: () => {} });
    this.#jobs = `"${db.schema}".all_jobs`;
    this.#app = db.env.CHAOS_APP;
  }

  end(): Promise<void> {
    return this.#sql.end({ timeout: 5 });
  }

  async #count(text: string, args: (string | number | string[])[] = []): Promise<number> {
    return Number((await this.#sql.unsafe(text, args))[0].n);
  }

  /** Jobs completed by an outcome made after `at` (ms since the epoch; finished_at is the worker's Date.now()). */
  completedAfter(at: number): Promise<number> {
    return this.#count(`SELECT count(*) AS n FROM ${this.#jobs} WHERE state = 'completed' AND finished_at > $1`, [at]);
  }

  /** Jobs running now (claimed, outcome not yet written). */
  running(): Promise<number> {
    return this.#count(`SELECT count(*) AS n FROM ${this.#jobs} WHERE state = 'running'`);
  }

  /** Jobs by state. */
  async states(): Promise<Record<string, number>> {
    const rows = await this.#sql.unsafe(`SELECT state, count(*) AS n FROM ${this.#jobs} GROUP BY state`);
    return Object.fromEntries(rows.map((r) => [r.state, Number(r.n)]));
  }

  /** Of the jobs `ids`, those completed after a rescue (a run with error LeaseExpired) made after `at`. */
  rescuedAfter(ids: readonly string[], at: number): Promise<number> {
    return this.#count(
      `SELECT count(*) AS n FROM ${this.#jobs} AS j WHERE j.id = ANY($1::text[]) AND j.state = 'completed'
         AND EXISTS (SELECT 1 FROM jsonb_array_elements(j.runs) AS r
                     WHERE r->'error'->>'name' = 'LeaseExpired' AND (r->>'finishedAt')::bigint > $2)`,
      [[...ids], at],
    );
  }

  /** The workers' LISTEN connections (postgres.js runs LISTEN alone, on a connection of its own). */
  listeners(): Promise<number> {
    return this.#count(
      `SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = $1 AND query ILIKE 'listen %'`,
      [this.#app],
    );
  }

  /** Ends every connection of the workers, waiting (up to 5 s each) until each is gone; returns how many. */
  terminateWorkers(): Promise<number> {
    return this.#count(
      `SELECT count(*) FILTER (WHERE gone) AS n FROM (
         SELECT pg_terminate_backend(pid, 5000) AS gone FROM pg_stat_activity
         WHERE application_name = $1 AND pid <> pg_backend_pid()) AS t`,
      [this.#app],
    );
  }
}

/**
 * Seconds from `at` until `probe` holds, or undefined when it did not
 * within {@link WAIT_MS}; a probe that fails (the server is still down)
 * counts as not holding.
 */
async function secondsUntil(at: number, probe: () => Promise<boolean>): Promise<number | undefined> {
  const held = await until(() => probe().catch(() => false), WAIT_MS - (Date.now() - at), 20);
  return held ? seconds(Date.now() - at) : undefined;
}

/** The highest count of running jobs seen while `during` runs (sampled every 100 ms). */
async function peakRunning<T>(probe: Probe, during: Promise<T>): Promise<[T, number]> {
  let peak = 0;
  let done = false;
  const sampling = (async () => {
    while (!done) {
      peak = Math.max(peak, await probe.running().catch(() => 0));
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  try {
    return [await during, peak];
  } finally {
    done = true;
    await sampling;
  }
}

/** Enqueues `jobs` work jobs of `ms` each through `errand`, numbered from `from`. */
async function enqueueWork(errand: ReturnType<typeof orchestrator>, jobs: number, from = 0, ms = JOB_MS) {
  for (let n = 0; n < jobs; n += 1_000) {
    const size = Math.min(1_000, jobs - n);
    await errand.enqueueMany(
      Array.from({ length: size }, (_, i) => ({ kind: "work" as const, payload: { n: from + n + i, ms } })),
    );
  }
}

/** Waits until `total` jobs completed, or until none completed for {@link WAIT_MS}; says whether they all did. */
async function drain(probe: Probe, total: number): Promise<boolean> {
  let done = -1;
  let movedAt = Date.now();
  return await until(
    async () => {
      const count = await probe.completedAfter(0);
      if (count !== done) [done, movedAt] = [count, Date.now()];
      return count === total || Date.now() - movedAt > WAIT_MS;
    },
    300_000,
    100,
  ) && done === total;
}

/** Runs of process `pid` whose handler has not returned (still running, or its process was killed first). */
const cutShort = (runs: Map<string, Run[]>, pid: number) =>
  [...runs.values()].flat().filter((r) => r.pid === pid && r.end === undefined);

const max = (values: readonly (number | undefined)[]) =>
  values.every((v) => v !== undefined) ? Math.max(...values as number[]) : undefined;

/** What a part reports: its jobs' states and runs, and what it measured. */
interface Part {
  readonly jobs: number;
  readonly states: Record<string, number>;
  readonly runs: Map<string, Run[]>;
  readonly ranTwiceWhileLeased: number;
  readonly drained: boolean;
  /** Workers that did not exit within 15 s of SIGTERM. */
  readonly late: number;
  /** Each SIGTERMed worker's shutdown: its steps, with when each began (a late one's last is where it hung). */
  readonly shutdowns: string[];
  /** Seconds from each disruption until a job whose outcome was made after it was completed in the store. */
  readonly recovery: (number | undefined)[];
  /** Seconds from each disruption until every worker's LISTEN connection was back. */
  readonly listenerBack: (number | undefined)[];
  /** Jobs left to do at each disruption. */
  readonly left: number[];
  /** How long the server was down, for a restart. */
  readonly downSeconds?: number;
  readonly peakRunning: number;
}

/** Runs `disrupt` while 2 workers drain `jobs` jobs on `db`, and reads the outcome through `probe`. */
async function drainWith(
  db: ScratchDatabase,
  probe: Probe,
  jobs: number,
  log: string,
  disrupt: (probe: Probe, workers: Workers, errand: ReturnType<typeof orchestrator>) => Promise<{
    recovery: (number | undefined)[];
    listenerBack: (number | undefined)[];
    left: number[];
    total: number;
    downSeconds?: number;
  }>,
): Promise<Part> {
  const errand = orchestrator(db);
  const workers = chaosWorkers(db, log);
  try {
    await errand.start();
    await enqueueWork(errand, jobs);
    await Promise.all([1, 2].map(() => workers.start(WORKER_ENV)));
    const [disrupted, peak] = await peakRunning(probe, disrupt(probe, workers, errand));
    const drained = await drain(probe, disrupted.total);
    const late = await workers.stopAll();
    const events = readRunLog(log);
    const runs = runsOf(events);
    const shutdowns = [...new Set(workers.signals.map((s) => s.pid))]
      .flatMap((pid) => shutdownSteps(events, workers.signals, pid) ?? []);
    return {
      jobs: disrupted.total,
      states: await probe.states(),
      runs,
      ranTwiceWhileLeased: overlapsWhileLeased(runs, workers.signals, LEASE_MS),
      drained,
      late,
      shutdowns,
      recovery: disrupted.recovery,
      listenerBack: disrupted.listenerBack,
      left: disrupted.left,
      downSeconds: disrupted.downSeconds,
      peakRunning: peak,
    };
  } finally {
    await workers.stopAll();
    await errand.shutdown().catch(() => {});
  }
}

export const scenario: Scenario = {
  name: "connections_cut",
  summary:
    "every worker connection terminated 3 times mid-drain, then a PostgreSQL restart: work, LISTEN and rescue are back within 30 s, nothing lost",
  harness: ["chaos_pg_backend_kill", "chaos_postgres_restart"],
  stores: ["postgres"],
  async run({ db, quick, dir, note }) {
    const jobs = quick ? 1_500 : 4_000;
    const cuts = 3;
    // Enqueued after the restart, so the worker to be killed has runs in hand however far the drain got.
    const probeJobs = 500;
    const terminated: number[] = [];
    const probes: Probe[] = [];
    const probeOf = (on: ScratchDatabase) => probes[probes.push(new Probe(on)) - 1];
    // Part 1 on the shared server: cuts of the connections with this run's application_name, and no other.
    const cutPart = drainWith(db, probeOf(db), jobs, `${dir}/cuts.jsonl`, async (probe) => {
      const recovery: (number | undefined)[] = [];
      const listenerBack: (number | undefined)[] = [];
      const left: number[] = [];
      for (let k = 0; k < cuts; k++) {
        // At a fifth, two fifths and three fifths of the drain, each once the last one's recovery was seen.
        await until(async () => (await probe.completedAfter(0)) >= (jobs * (k + 1)) / (cuts + 2), WAIT_MS, 20);
        left.push(jobs - await probe.completedAfter(0));
        terminated.push(await probe.terminateWorkers());
        const at = Date.now();
        const [resumed, listening] = await Promise.all([
          secondsUntil(at, async () => (await probe.completedAfter(at)) > 0),
          secondsUntil(at, async () => (await probe.listeners()) >= 2),
        ]);
        recovery.push(resumed);
        listenerBack.push(listening);
        note(
          `cut ${k + 1}: ${terminated[k]} connections, ${
            left[k]
          } jobs left; work back ${resumed} s, LISTEN ${listening} s`,
        );
        if (resumed === undefined) break; // the rules are broken already: no more waiting
      }
      return { recovery, listenerBack, left, total: jobs };
    });
    // Part 2, at the same time, on a cluster of the scenario's own: a restart, then a SIGKILL only a rescue repairs.
    let restartDb: ScratchDatabase | undefined;
    let killed: { pid: number; at: number } | undefined;
    const cluster = startThrowawayCluster();
    let restartProbe: Probe | undefined;
    const restartPart = cluster.then((c) => {
      restartDb = openDatabase("postgres", dir, c.url);
      restartProbe = probeOf(restartDb);
      note(`part 2 on a cluster of its own at port ${c.port}`);
      const log = `${dir}/restart.jsonl`;
      return drainWith(restartDb, restartProbe, jobs, log, async (probe, workers, errand) => {
        await until(async () => (await probe.completedAfter(0)) >= jobs / 4, WAIT_MS, 20);
        const left = jobs - await probe.completedAfter(0);
        const { downAt, upAt } = await c.restart(2_000);
        const up = Date.now();
        note(`restarted (down ${seconds(upAt - downAt)} s) with ${left} jobs left`);
        const [resumed, listening] = await Promise.all([
          secondsUntil(up, async () => (await probe.completedAfter(up)) > 0),
          secondsUntil(up, async () => (await probe.listeners()) >= 2),
        ]);
        note(`after the restart: work back ${resumed} s, LISTEN ${listening} s`);
        const outcome = {
          recovery: [resumed],
          listenerBack: [listening],
          left: [left],
          total: jobs + probeJobs,
          downSeconds: seconds(upAt - downAt),
        };
        if (resumed === undefined) return { ...outcome, total: jobs }; // the rules are broken already
        // The victim is a worker with runs in hand: one whose pool is still waiting to reconnect may have none.
        // The first probe jobs are long: a worker starts its 50 ms runs together and may end them all between
        // the reading of the log and the kill, leaving nothing to rescue.
        await enqueueWork(errand, 2 * CONCURRENCY, jobs, LONG_PROBE_MS);
        await enqueueWork(errand, probeJobs - 2 * CONCURRENCY, jobs + 2 * CONCURRENCY);
        const working = () => {
          const runs = runsOf(readRunLog(log));
          return workers.live.find((w) => cutShort(runs, w.pid).length > 0);
        };
        await until(() => working() !== undefined, WAIT_MS, 5);
        const victim = working() ?? workers.live[0];
        await workers.kill(victim);
        killed = { pid: victim.pid, at: Date.now() };
        return outcome;
      });
    });
    try {
      const [cut, restart] = await Promise.all([cutPart, restartPart]);
      for (const [part, { shutdowns }] of [["cuts", cut], ["restart", restart]] as const) {
        for (const steps of shutdowns) note(`${part}: a worker's shutdown: ${steps}`);
      }
      // The jobs the SIGKILL cut short: only a rescue by the other worker's maintenance can finish them.
      const orphans = killed ? [...new Set(cutShort(restart.runs, killed.pid).map((r) => r.id))] : [];
      const rescued = killed ? await restartProbe!.rescuedAfter(orphans, killed.at) : 0;
      const total = cut.jobs + restart.jobs;
      const runs = [...cut.runs.values(), ...restart.runs.values()].reduce((sum, list) => sum + list.length, 0);
      const completed = (cut.states.completed ?? 0) + (restart.states.completed ?? 0);
      const figures = {
        jobs: total,
        completed,
        lost: total - completed,
        failed: (cut.states.failed ?? 0) + (restart.states.failed ?? 0),
        ranTwiceWhileLeased: cut.ranTwiceWhileLeased + restart.ranTwiceWhileLeased,
        recoverySeconds: max([...cut.recovery, ...restart.recovery]),
        cuts,
        backendsTerminated: terminated.reduce((a, b) => a + b, 0),
        cutRecoverySeconds: max(cut.recovery),
        cutListenerSeconds: max(cut.listenerBack),
        restarts: 1,
        restartDownSeconds: restart.downSeconds,
        restartRecoverySeconds: restart.recovery[0],
        restartListenerSeconds: restart.listenerBack[0],
        rescuedAfterRestart: rescued,
        peakRunning: Math.max(cut.peakRunning, restart.peakRunning),
        runs,
        // Runs again after a rescue (a lease lapsed while its outcome waited to be written, or a SIGKILL).
        extraRuns: runs - total,
      };
      const inTime = (s: number | undefined) => s !== undefined && s < RECOVERY_LIMIT_S;
      return {
        figures,
        checks: [
          check(
            "every cut ended worker connections mid-drain",
            terminated.length === cuts && terminated.every((n) => n >= 2) && cut.left.every((n) => n > 0),
          ),
          check("the restart came mid-drain", restart.left[0] > 0),
          check(
            `work resumes within ${RECOVERY_LIMIT_S} s of every cut and of the restart`,
            inTime(figures.recoverySeconds),
          ),
          check(
            `every worker's LISTEN connection is back within ${RECOVERY_LIMIT_S} s of every cut and of the restart`,
            inTime(figures.cutListenerSeconds) && inTime(figures.restartListenerSeconds),
          ),
          check(
            "after the restart, maintenance rescues every job the SIGKILLed worker held",
            orphans.length > 0 && rescued === orphans.length,
          ),
          check("every job completes", cut.drained && restart.drained && figures.lost === 0),
          check("no job failed", figures.failed === 0),
          check("every job ran (the run logs have a run of each)", cut.runs.size + restart.runs.size === total),
          check("no two runs of one job overlap while a lease is valid", figures.ranTwiceWhileLeased === 0),
          check(
            `no more than ${MOST_HELD} jobs are held running at once (workers stop claiming while outcomes wait to be written)`,
            figures.peakRunning <= MOST_HELD,
          ),
          check("every worker exits within 15 s of SIGTERM", cut.late + restart.late === 0),
        ],
      };
    } finally {
      // Both parts end (and stop their workers) before their databases go.
      await Promise.allSettled([cutPart, restartPart]);
      await Promise.all(probes.map((p) => p.end().catch(() => {})));
      await restartDb?.close().catch(() => {});
      await cluster.then((c) => c.remove(), () => {});
    }
  },
};
