/**
 * Workers that must connect into a full server, on a throwaway cluster of the
 * scenario's own with max_connections 60. Two worker processes drain short
 * jobs, each on a postgres.js pool of 10. Then, while both are SIGSTOPped
 * (so that neither can reconnect first), every connection of theirs is
 * ended with `pg_terminate_backend`, and idle connections of another client
 * take every free connection slot of the server, leaving none. The two are
 * resumed and a third worker process starts: all three must open their
 * connections into the full server, which refuses them (SQLSTATE 53300, too
 * many clients). The third one's `start()` fails on it, so it is started
 * again a second later, as a supervisor would. After 10 s (5 s with
 * `--quick`) the idle connections go.
 * What must hold: every worker process completes a job again within 30 s of
 * their release (a run of it that ended after the release, of a job the store
 * holds as completed at that run's attempt); no job is lost or fails; no two
 * runs of one job overlap while a lease is valid.
 */
import { Buffer } from "node:buffer";
import { closeSync, openSync, readSync, statSync } from "node:fs";
import postgres from "postgres";
import { check, type Scenario } from "../harness/scenario.ts";
import { openDatabase } from "../../tests/support/scratch_database.ts";
import { orchestrator } from "../harness/orchestrator.ts";
import type { SentSignal, Worker } from "../../tests/support/processes.ts";
import { chaosWorkers } from "../harness/workers.ts";
import { overlapsWhileLeased, readRunLog, type RunEvent, runsOf } from "../harness/run_log.ts";
import { Holders } from "../harness/holders.ts";
import { startThrowawayCluster } from "../harness/throwaway_cluster.ts";
import { sleep, until } from "../../tests/support/wait.ts";

const MAX_CONNECTIONS = 60;
const LEASE_MS = 3_000;
/** A store call that hangs past 5 s is given up on and retried, so a hang near the release cannot outlast the rule. */
const WORKER_ENV = {
  CHAOS_LEASE: `${LEASE_MS}ms`,
  CHAOS_CONCURRENCY: "8",
  CHAOS_POOL: "10",
  CHAOS_STORE_TIMEOUT: "5s",
};
const JOB_MS = 5;
/** The rule's limit, in seconds. */
const RECOVERY_LIMIT_S = 30;
/** How long the scenario waits for every worker to recover (longer than the rule, so a slow one is measured). */
const WAIT_MS = 45_000;
/** How long the backlog may take to be worked off once the feeding stops. */
const DRAIN_MS = 60_000;

const seconds = (ms: number) => Math.round(ms / 100) / 10;
const now = () => performance.timeOrigin + performance.now();

/** The run log read as it grows: each `read()` returns the events appended since the last. */
class LogTail {
  readonly #path: string;
  #offset = 0;
  #partial = "";

  constructor(path: string) {
    this.#path = path;
  }

  read(): RunEvent[] {
    let size = 0;
    try {
      size = statSync(this.#path).size;
    } catch {
      return []; // not written yet
    }
    if (size <= this.#offset) return [];
    const buffer = Buffer.alloc(size - this.#offset);
    const fd = openSync(this.#path, "r");
    try {
      readSync(fd, buffer, 0, buffer.length, this.#offset);
    } finally {
      closeSync(fd);
    }
    this.#offset = size;
    const lines = (this.#partial + buffer.toString("utf8")).split("\n");
    this.#partial = lines.pop()!;
    return lines.filter(Boolean).map((line) => JSON.parse(line));
  }
}

/**
 * When each worker process completed a job again after `since`: its first run
 * that ended after it, of a job the store holds as completed at that run's
 * attempt (so the outcome written was that run's, not a rerun's).
 */
class Completions {
  /** Processes that ended a run at all. */
  readonly ended = new Set<number>();
  /** By process: when the run of its first completion since `since` ended. */
  readonly first = new Map<number, number>();
  since = Infinity;
  readonly #tail: LogTail;
  readonly #sql: postgres.Sql;
  readonly #jobs: string;
  /** By process: its runs since `since` whose outcome is not known yet (job id → attempt and end). */
  readonly #pending = new Map<number, Map<string, { attempt: number; end: number }>>();

  constructor(log: string, sql: postgres.Sql, jobs: string) {
    this.#tail = new LogTail(log);
    this.#sql = sql;
    this.#jobs = jobs;
  }

  async poll(): Promise<void> {
    for (const e of this.#tail.read()) {
      if (e.e !== "end") continue;
      this.ended.add(e.pid);
      const pending = this.#pending.get(e.pid) ?? new Map();
      this.#pending.set(e.pid, pending);
      // A few runs in question per process are enough: most complete, and a stalled one ends none.
      if (e.t > this.since && !this.first.has(e.pid) && pending.size < 100) {
        pending.set(e.id, { attempt: e.attempt, end: e.t });
      }
    }
    const ids = [...this.#pending.values()].flatMap((runs) => [...runs.keys()]);
    if (!ids.length) return;
    const rows = await this.#sql.unsafe(`SELECT id, state, attempt FROM ${this.#jobs} WHERE id = ANY($1::text[])`, [
      ids,
    ]);
    const jobs = new Map(rows.map((r) => [r.id as string, { state: r.state as string, attempt: Number(r.attempt) }]));
    for (const [pid, runs] of this.#pending) {
      for (const [id, run] of runs) {
        const job = jobs.get(id);
        if (job?.attempt !== run.attempt) runs.delete(id); // run again since: not this run's outcome
        else if (job.state === "completed") {
          this.first.set(pid, Math.min(this.first.get(pid) ?? Infinity, run.end));
          runs.delete(id);
        } else if (job.state !== "running") runs.delete(id);
      }
      if (this.first.has(pid)) runs.clear();
    }
  }
}

export const scenario: Scenario = {
  name: "pool_exhaustion_connect",
  summary:
    "workers' connections are cut and a new worker starts while idle connections hold every free slot: each worker completes jobs again within 30 s of their release, loses nothing",
  harness: ["chaos_pool_exhaustion"],
  stores: ["postgres"],
  async run({ quick, dir, note }) {
    const holdMs = quick ? 5_000 : 10_000;
    const cluster = await startThrowawayCluster({ max_connections: String(MAX_CONNECTIONS) });
    const db = openDatabase("postgres", dir, cluster.url);
    const app = db.env.CHAOS_APP;
    const log = `${dir}/runs.jsonl`;
    const workers = chaosWorkers(db, log);
    const holders = new Holders(cluster.url, MAX_CONNECTIONS);
    const probe = postgres(cluster.url, { max: 1, onnotice: () => {} });
    const workerConnections = async () =>
      Number((await probe`SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = ${app}`)[0].n);
    let feeding: Promise<void> | undefined;
    let feed = false;
    let supervising: Promise<void> | undefined;
    let supervise = true;
    try {
      const errand = orchestrator(db);
      await errand.start();
      // The scenario's own connections open now, before the server's slots are taken.
      await Promise.all([1, 2, 3, 4].map(() => db.sql!`SELECT pg_sleep(0.05)`));
      await probe`SELECT 1`;
      await holders.open();

      // The orchestrator keeps a backlog, so every worker that can claim has work.
      let fed = 0;
      let peakWhileHeld = 0;
      let holding = false;
      const topUp = async () => {
        await errand.enqueueMany(
          Array.from({ length: 1_000 }, (_, i) => ({ kind: "work" as const, payload: { n: fed + i, ms: JOB_MS } })),
        );
        fed += 1_000;
      };
      await topUp();
      feed = true;
      feeding = (async () => {
        while (feed) {
          await (async () => {
            const [row] = await probe.unsafe(
              `SELECT (SELECT count(*) FROM "${db.schema}".jobs WHERE state IN ('available', 'scheduled', 'running')) AS backlog,
                      (SELECT count(*) FROM pg_stat_activity WHERE application_name = $1) AS connections`,
              [app],
            );
            if (holding) peakWhileHeld = Math.max(peakWhileHeld, Number(row.connections));
            if (Number(row.backlog) < 1_000) await topUp();
          })().catch(() => {}); // a missed round is retried on the next
          await sleep(200);
        }
      })();
      const cut = await Promise.all([1, 2].map(() => workers.start(WORKER_ENV)));
      const completions = new Completions(log, probe, `"${db.schema}".all_jobs`);
      await until(
        async () => {
          await completions.poll();
          return cut.every((w) => completions.ended.has(w.pid));
        },
        30_000,
        250,
      );
      await sleep(1_000); // the pools open what the load asks for

      // The cut: no worker can reconnect before the idle connections have taken every slot.
      for (const w of cut) workers.signal(w, "SIGSTOP");
      const connectedBefore = await workerConnections();
      await probe`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = ${app}`;
      await until(async () => (await workerConnections()) === 0, 10_000, 50);
      await holders.fill(0);
      const logFrom = cluster.serverLog().length;
      holding = true;
      for (const w of cut) workers.signal(w, "SIGCONT");
      const holdFrom = now();
      note(`cut ${connectedBefore} worker connections; holding ${holders.count}; a new worker starts`);

      // The new worker: started again a second after each start that failed before it was ready.
      const fresh: Worker[] = [];
      // When each start that failed had exited: a process gone holds no lease, as after a SIGKILL.
      const gone: SentSignal[] = [];
      let failedStarts = 0;
      let firstFailure = "";
      supervising = (async () => {
        while (supervise) {
          const before = new Set(workers.live);
          const ready = workers.start(WORKER_ENV);
          const started = workers.live.find((w) => !before.has(w))!;
          fresh.push(started);
          try {
            await ready;
            return;
          } catch (err) {
            gone.push({ pid: started.pid, signal: "SIGKILL", t: now() });
            failedStarts++;
            firstFailure ||= String(err).split("\n").filter((l) => /^\w+Error: /.test(l)).at(-1) ?? String(err);
            await sleep(1_000);
          }
        }
      })();

      await sleep(holdMs);
      holding = false;
      const held = holders.count;
      await holders.release();
      const releasedAt = now();
      completions.since = releasedAt;
      const refused = (cluster.serverLog().slice(logFrom).match(/too many clients/g) ?? []).length;
      note(`released them; the server refused ${refused} connections; the new worker's start failed ${failedStarts}x`);

      // The processes of each worker: the two cut, and every start of the new one.
      const slots = [() => [cut[0].pid], () => [cut[1].pid], () => fresh.map((w) => w.pid)];
      const recoveredAt = (pids: number[]) => Math.min(...pids.map((pid) => completions.first.get(pid) ?? Infinity));
      await until(
        async () => {
          await completions.poll().catch(() => {}); // a missed round is retried on the next
          return slots.every((pids) => recoveredAt(pids()) < Infinity);
        },
        WAIT_MS,
        250,
      );
      note(
        `${slots.filter((pids) => recoveredAt(pids()) < Infinity).length} of 3 workers completed jobs again; draining`,
      );
      feed = false;
      await feeding;
      const drained = await until(
        async () => {
          const [{ n }] = await probe.unsafe(
            `SELECT count(*) AS n FROM "${db.schema}".jobs WHERE state IN ('available', 'scheduled', 'running')`,
          );
          return Number(n) === 0;
        },
        DRAIN_MS,
        250,
      );
      supervise = false;
      const late = await workers.stopAll();
      await supervising;

      const states: Record<string, number> = Object.fromEntries(
        (await probe.unsafe(`SELECT state, count(*) AS n FROM "${db.schema}".all_jobs GROUP BY state`)).map((r) => [
          r.state,
          Number(r.n),
        ]),
      );
      const inStore = Object.values(states).reduce((sum, n) => sum + n, 0);
      const runs = runsOf(readRunLog(log).sort((a, b) => a.t - b.t));
      await errand.shutdown();
      const recovery = slots.map((pids) => {
        const at = recoveredAt(pids());
        return at < Infinity ? seconds(at - releasedAt) : undefined;
      });
      const recovered = recovery.filter((s) => s !== undefined && s < RECOVERY_LIMIT_S).length;
      const figures = {
        jobs: inStore,
        completed: states.completed ?? 0,
        lost: inStore - (states.completed ?? 0),
        failed: states.failed ?? 0,
        ranTwiceWhileLeased: overlapsWhileLeased(runs, [...workers.signals, ...gone], LEASE_MS),
        recoverySeconds: recovered === 3 ? Math.max(...recovery as number[]) : undefined,
        recoverySecondsCutWorker1: recovery[0],
        recoverySecondsCutWorker2: recovery[1],
        recoverySecondsNewWorker: recovery[2],
        workersNotRecovered: 3 - recovered,
        maxConnections: MAX_CONNECTIONS,
        heldConnections: held,
        workerConnectionsCut: connectedBefore,
        workerConnectionsWhileHeld: peakWhileHeld,
        connectionsRefused: refused,
        newWorkerFailedStarts: failedStarts,
        holdSeconds: seconds(releasedAt - holdFrom),
      };
      if (firstFailure) note(`the new worker's first failed start: ${firstFailure}`);
      return {
        figures,
        checks: [
          check("the server refused the workers' connections while every slot was held", refused > 0),
          check("no worker connection got in while every slot was held", peakWhileHeld === 0),
          check(
            `every worker process completes jobs again within ${RECOVERY_LIMIT_S} s of the release`,
            recovered === 3,
          ),
          check("the backlog is worked off", drained),
          check("every enqueued job is in the store", inStore === fed),
          check("every job completes", figures.lost === 0),
          check("no job failed", figures.failed === 0),
          check("no two runs of one job overlap while a lease is valid", figures.ranTwiceWhileLeased === 0),
          check("every worker exits within 15 s of SIGTERM", late === 0),
        ],
      };
    } finally {
      feed = false;
      supervise = false;
      await feeding?.catch(() => {});
      await holders.release().catch(() => {});
      await workers.stopAll();
      await supervising?.catch(() => {});
      await probe.end({ timeout: 5 }).catch(() => {});
      await db.close().catch(() => {});
      await cluster.remove();
    }
  },
};
