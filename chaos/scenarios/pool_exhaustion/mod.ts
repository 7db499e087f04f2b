/**
 * Pool exhaustion and overload, on a throwaway cluster of the scenario's own
 * with max_connections 60 (the shared server is never exhausted). Two worker
 * processes drain short jobs, each on a postgres.js pool of 10 (postgres.js's
 * default size). After a baseline that measures the drain rate:
 * - phase 1: idle connections of another client take every free connection
 *   slot of the server but 2, half of them idle in a transaction holding an
 *   XID (which keeps vacuum from cleaning the jobs table), while the workers
 *   drain; errand's pools can grow by those 2 and no more (the server's
 *   refusals of connections while they are held are counted);
 * - phase 2: the idle connections go, and a producer process offers 1.5×
 *   the drain rate.
 * What must hold: errand keeps working while the connections are held,
 * within its pools; work flows at half the baseline rate again within 30 s
 * of their release; the backlog of the overload is worked off within 60 s
 * of its end; no job is lost or fails; no enqueue fails; no two runs of one
 * job overlap while a lease is valid.
 */
import { fileURLToPath } from "node:url";
import postgres from "postgres";
import { check, type Scenario } from "../../harness/scenario.ts";
import { openDatabase, type ScratchDatabase } from "../../../tests/support/scratch_database.ts";
import { orchestrator } from "../../harness/orchestrator.ts";
import { chaosWorkers } from "../../harness/workers.ts";
import { overlapsWhileLeased, readRunLog, runsOf } from "../../harness/run_log.ts";
import { Holders } from "../../harness/holders.ts";
import { startThrowawayCluster } from "../../harness/throwaway_cluster.ts";
import { sleep, until } from "../../../tests/support/wait.ts";

const MAX_CONNECTIONS = 60;
/** Each worker's pool: postgres.js's default `max`, the pool an application that sets none has. */
const POOL = 10;
/** Connection slots the idle connections leave free: errand's pools may grow by this much, and no more. */
const SPARE = 2;
const WORKERS = 2;
const LEASE_MS = 3_000;
const WORKER_ENV = { CHAOS_LEASE: `${LEASE_MS}ms`, CHAOS_CONCURRENCY: "8", CHAOS_POOL: String(POOL) };
const JOB_MS = 5;
/** The overload: producers offer this many times the measured drain rate. */
const OVERLOAD = 1.5;
/** The rules' limits, in seconds. */
const RECOVERY_LIMIT_S = 30;
const BACKLOG_LIMIT_S = 60;
const STALL_LIMIT_S = 5;
const producerScript = fileURLToPath(new URL("./paced_producer.ts", import.meta.url));

const seconds = (ms: number) => Math.round(ms / 100) / 10;
const now = () => performance.timeOrigin + performance.now();

/** One reading of the queue and of the workers' connections. */
interface Sample {
  readonly t: number;
  readonly completed: number;
  /** Jobs not finished yet: waiting to run or running. */
  readonly backlog: number;
  readonly workerConnections: number;
}

/**
 * Reads the queue every 100 ms on a connection of its own, opened before
 * the idle connections take the server's free slots.
 */
class Sampler {
  readonly samples: Sample[] = [];
  readonly #sql: postgres.Sql;
  readonly #db: ScratchDatabase;
  #running: Promise<void> | undefined;
  #stopped = false;

  constructor(db: ScratchDatabase) {
    this.#db = db;
    this.#sql = postgres(db.env.CHAOS_URL, { max: 1, onnotice: () => {} });
  }

  get last(): Sample | undefined {
    return this.samples.at(-1);
  }

  async read(): Promise<Sample> {
    const [row] = await this.#sql.unsafe(
      `SELECT count(*) FILTER (WHERE state = 'completed') AS completed,
              count(*) FILTER (WHERE state IN ('available', 'scheduled', 'running')) AS backlog,
              (SELECT count(*) FROM pg_stat_activity WHERE application_name = $1) AS connections
       FROM "${this.#db.schema}".all_jobs`,
      [this.#db.env.CHAOS_APP],
    );
    const sample = {
      t: now(),
      completed: Number(row.completed),
      backlog: Number(row.backlog),
      workerConnections: Number(row.connections),
    };
    this.samples.push(sample);
    return sample;
  }

  async start(): Promise<void> {
    await this.read();
    this.#running = (async () => {
      while (!this.#stopped) {
        await sleep(100);
        await this.read().catch(() => {}); // a missed reading is skipped, not fatal
      }
    })();
  }

  /** The samples taken between `from` and `to`. */
  between(from: number, to: number): Sample[] {
    return this.samples.filter((s) => s.t >= from && s.t <= to);
  }

  /** Jobs completed per second between `from` and `to`, by the samples nearest inside. */
  rate(from: number, to: number): number {
    const inside = this.between(from, to);
    if (inside.length < 2) return 0;
    const [first, last] = [inside[0], inside.at(-1)!];
    return Math.round(((last.completed - first.completed) * 1_000) / (last.t - first.t));
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    await this.#running?.catch(() => {});
    await this.#sql.end({ timeout: 5 });
  }
}

/** The longest time, in seconds, between `from` and `to` in which no job completed. */
function longestStall(samples: readonly Sample[], from: number, to: number): number {
  let longest = 0;
  let since = from;
  for (let i = 1; i < samples.length; i++) {
    if (samples[i].completed > samples[i - 1].completed) {
      longest = Math.max(longest, samples[i].t - since);
      since = samples[i].t;
    }
  }
  return seconds(Math.max(longest, to - since));
}

export const scenario: Scenario = {
  name: "pool_exhaustion",
  summary:
    "idle connections hold all but 2 of max_connections, then producers offer 1.5x the drain rate: errand keeps working, recovers, loses nothing",
  harness: ["chaos_pool_exhaustion", "idle_in_tx_saturation", "sustained_high_load"],
  stores: ["postgres"],
  async run({ quick, dir, note }) {
    const [baselineS, holdS, overloadS] = quick ? [3, 5, 5] : [5, 10, 10];
    const cluster = await startThrowawayCluster({ max_connections: String(MAX_CONNECTIONS) });
    const db = openDatabase("postgres", dir, cluster.url);
    const app = db.env.CHAOS_APP;
    const log = `${dir}/runs.jsonl`;
    const producerLog = `${dir}/producer.jsonl`;
    const workers = chaosWorkers(db, log);
    const sampler = new Sampler(db);
    const holders = new Holders(cluster.url, MAX_CONNECTIONS);
    let feeding: Promise<void> | undefined;
    let feed = false;
    try {
      const errand = orchestrator(db);
      await errand.start();
      // The scenario's own connections open now, before the server's slots are taken.
      await Promise.all([1, 2, 3, 4].map(() => db.sql!`SELECT pg_sleep(0.05)`));
      await sampler.start();
      await holders.open();

      // Until the producer takes over, the orchestrator keeps a backlog, so the workers are never idle.
      let fed = 0;
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
          if ((sampler.last?.backlog ?? 0) < 1_000) await topUp();
          await sleep(100);
        }
      })();
      await Promise.all(Array.from({ length: WORKERS }, () => workers.start(WORKER_ENV)));
      await sleep(1_000); // the pools open what the load asks for
      const baselineFrom = now();
      await sleep(baselineS * 1_000);
      const drainRate = sampler.rate(baselineFrom, now());
      note(`drain rate ${drainRate} jobs/s`);

      // Phase 1: the server's free connection slots are held, all but SPARE.
      const logFrom = cluster.serverLog().length;
      await holders.fill(SPARE, true);
      const holdFrom = now();
      const held = holders.count;
      const idleInTransaction = holders.idleInTransaction;
      note(`holding ${held} connections (${idleInTransaction} idle in a transaction)`);
      await sleep(holdS * 1_000);
      const holdTo = now();
      const refused = (cluster.serverLog().slice(logFrom).match(/too many clients/g) ?? []).length - holders.refused;
      await holders.release();
      const releasedAt = now();
      const rateUnderPressure = sampler.rate(holdFrom, holdTo);
      note(`released them; ${rateUnderPressure} jobs/s while held; ${refused} connections refused to others`);

      // Phase 2: 1.5 times the drain rate, offered by a producer process.
      const offeredRate = Math.ceil(OVERLOAD * drainRate);
      const producer = await workers.start({
        CHAOS_APP: `${app}_producer`,
        CHAOS_LOG: producerLog,
        CHAOS_RATE: String(offeredRate),
        CHAOS_SECONDS: String(overloadS),
        CHAOS_JOB_MS: String(JOB_MS),
        CHAOS_FROM: String(fed),
      }, producerScript);
      const overloadFrom = now();
      feed = false;
      await feeding;
      const produced = await Promise.race([
        producer.exited.then(() => true),
        sleep(overloadS * 1_000 + 30_000).then(() => false),
      ]);
      const batches = readRunLog(producerLog) as unknown as { e: string; count: number; t: number }[];
      const offered = batches.filter((b) => b.e === "enqueued").reduce((sum, b) => sum + b.count, 0);
      const enqueueErrors = batches.filter((b) => b.e === "enqueue-error").length;
      // The pressure ends with the producer's last batch.
      const overloadTo = batches.at(-1)?.t ?? now();
      note(`offered ${offered} jobs at ${offeredRate} jobs/s; backlog ${sampler.last?.backlog}`);
      const caughtUp = await until(() => sampler.last?.backlog === 0, BACKLOG_LIMIT_S * 1_000 + 30_000, 100);
      const caughtUpAt = now();
      const late = await workers.stopAll();
      await sampler.stop();

      const states: Record<string, number> = Object.fromEntries(
        (await db.sql!.unsafe(`SELECT state, count(*) AS n FROM "${db.schema}".all_jobs GROUP BY state`)).map((r) => [
          r.state,
          Number(r.n),
        ]),
      );
      const inStore = Object.values(states).reduce((sum, n) => sum + n, 0);
      const runs = runsOf(readRunLog(log));
      await errand.shutdown();
      // Back to half the baseline rate: the first second after the release that completed that much.
      const recoveredAt = sampler.between(releasedAt, caughtUpAt).find((s) =>
        sampler.rate(s.t, s.t + 1_000) >= drainRate / 2
      )?.t;
      const figures = {
        jobs: inStore,
        completed: states.completed ?? 0,
        lost: inStore - (states.completed ?? 0),
        failed: states.failed ?? 0,
        ranTwiceWhileLeased: overlapsWhileLeased(runs, workers.signals, LEASE_MS),
        recoverySeconds: recoveredAt === undefined ? undefined : seconds(recoveredAt - releasedAt),
        drainRate,
        maxConnections: MAX_CONNECTIONS,
        heldConnections: held,
        idleInTransaction,
        // Connections the server refused while they were held, but to the idle connections' own client.
        connectionsRefused: refused,
        peakWorkerConnections: Math.max(...sampler.samples.map((s) => s.workerConnections)),
        rateUnderPressure,
        longestStallSeconds: longestStall(sampler.between(holdFrom, holdTo), holdFrom, holdTo),
        offeredRate,
        offered,
        rateUnderOverload: sampler.rate(overloadFrom, overloadTo),
        backlogPeak: Math.max(...sampler.between(overloadFrom, caughtUpAt).map((s) => s.backlog)),
        backlogSeconds: caughtUp ? seconds(caughtUpAt - overloadTo) : undefined,
        enqueueErrors,
      };
      const within = (s: number | undefined, limit: number) => s !== undefined && s < limit;
      return {
        figures,
        checks: [
          check("the idle connections held most of max_connections", held >= MAX_CONNECTIONS / 2),
          check(
            `errand keeps working while they are held (never ${STALL_LIMIT_S} s without a completion)`,
            rateUnderPressure > 0 && figures.longestStallSeconds < STALL_LIMIT_S,
          ),
          check(
            "errand stays within its pools",
            figures.peakWorkerConnections <= WORKERS * (POOL + 1), // each pool, and its LISTEN connection
          ),
          check(
            `work flows at half the drain rate within ${RECOVERY_LIMIT_S} s of their release`,
            within(figures.recoverySeconds, RECOVERY_LIMIT_S),
          ),
          check(`the producer offered ${OVERLOAD}x the drain rate`, produced && offered >= offeredRate * overloadS),
          check("no enqueue failed", enqueueErrors === 0),
          check(
            `the backlog is worked off within ${BACKLOG_LIMIT_S} s of the overload's end`,
            within(figures.backlogSeconds, BACKLOG_LIMIT_S),
          ),
          check("every enqueued job is in the store", inStore === fed + offered),
          check("every job completes", figures.lost === 0),
          check("no job failed", figures.failed === 0),
          check("no two runs of one job overlap while a lease is valid", figures.ranTwiceWhileLeased === 0),
          check("every worker exits within 15 s of SIGTERM", late === 0),
        ],
      };
    } finally {
      feed = false;
      await feeding?.catch(() => {});
      await holders.release().catch(() => {});
      await workers.stopAll();
      await sampler.stop().catch(() => {});
      await db.close().catch(() => {});
      await cluster.remove();
    }
  },
};
