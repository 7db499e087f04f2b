/**
 * errand on the workload of ../shared/bench/WORKLOAD.md, on both stores.
 * `npm run bench` bundles this file with esbuild (so the figures, peak RSS
 * included, are those of plain Node running JavaScript, as for the peers)
 * and runs every workload on libSQL (file) and PostgreSQL;
 * `npm run bench -- libsql drain` runs one store and one workload;
 * `ERRAND_SQLITE_SYNCHRONOUS=normal` runs libSQL with `synchronous: "normal"`.
 * Besides the workloads of WORKLOAD.md, `drain_flow` is the drain with flow
 * control on (see {@link FLOW}); its line says how it compares with the plain
 * drain of the same run in `vs_drain`; `result_idle` and `result_busy` time
 * an enqueue and the `result()` that awaits it, with the worker idle or
 * draining a backlog (see {@link RESULT}).
 * `log_append_single` and `log_append_batch` append the same payloads to a
 * retained log (see `benchLogs`); `log_consume` and `log_consume_members`
 * time a consumer group reading a backlog of it (see {@link CONSUME}).
 * Each line says exactly which options were set, in `settings`.
 */
import process from "node:process";
import { fileURLToPath } from "node:url";
import { createErrand, defineJobs, defineLogs, type Duration, type Errand, job, log } from "../mod.ts";
import type { StoreFor } from "../src/store/mod.ts";
import { HEARTBEAT_MS } from "../src/cluster/heartbeat.ts";
import { flowJobs, jobs } from "./bench_jobs.ts";
import {
  benchMain,
  CFG,
  drainTracker,
  enqueueFigures,
  FLOW,
  latencyFigures,
  latencyProbe,
  measureLatency,
  now,
  payload,
  payloadBatches,
  rate,
  removeSqliteFiles,
  sampleSequential,
  sleep,
  type StoreName,
  type Subject,
  timeSequential,
  waitUntil,
} from "./harness.ts";

/**
 * The kinds of the result workloads: `bench` as everywhere (the backlog of
 * `result_busy`), and `echo`, whose handler returns its payload's `i`: the
 * job that is enqueued and awaited.
 */
const resultJobs = defineJobs({
  bench: job<{ i: number; s: string }>(),
  echo: job<{ i: number; s: string }, number>(),
});
/**
 * The result workloads' setup: each awaited job is enqueued at priority -1,
 * ahead of the plain backlog of `result_busy` in the same queue (lower runs
 * first); on libSQL, where a worker in another process finds a job only by
 * polling, the worker polls every 20 ms, so that the figure shows `result()`
 * rather than the worker's default 1 s poll; and on libSQL the round trip is
 * also measured with `resultPollInterval` at 20 ms (the default is 250 ms).
 */
const RESULT = { priority: -1, libsqlPollInterval: "20ms", fastResultPoll: "20ms", timeout: "60s" } as const;
/**
 * The log of the append workloads: the bench payloads as records of topic
 * `events` (16 partitions), keyed by `i % 500`.
 */
const benchLogs = defineLogs({ events: log<{ i: number; s: string }>({ topic: "events", key: (p) => p.i % 500 }) });
const LOG_TOPICS = { events: { partitions: 16 } };
/**
 * The consume workloads' setup: `N_CONSUME` records appended to the log of
 * the append workloads before any group runs, and groups whose handler only
 * counts the records. `log_consume` runs one member in each of `variants`
 * (a group of its own each, on the same backlog, in this order): batches of
 * 100 and of 1,000 with the default `pollInterval` (500 ms), and batches of
 * 100 polling every 10 ms, which shows what the store takes when the group
 * loop's poll is not what paces it. `log_consume_members` runs `members`
 * members of one group in this process, each an instance with a client of
 * its own, with batches of 100 and the default poll.
 */
const CONSUME = {
  appendBatch: 1_000,
  variants: [
    { label: "batch_100", batch: 100 },
    { label: "batch_1000", batch: 1_000 },
    { label: "batch_100_poll_10ms", batch: 100, pollInterval: "10ms" },
  ],
  members: 3,
} as const;
/** One group of the consume workloads: its name, batch and poll interval. */
type ConsumeVariant = { label: string; batch: number; pollInterval?: Duration };
/** The consume workloads' instances run no jobs, only their consumer group. */
const noJobs = defineJobs({});
/** A bench job for `enqueueMany`. */
const asJob = (p: { i: number; s: string }) => ({ kind: "bench" as const, payload: p });
const version = process.env.npm_package_version ?? "dev";
const silent = {
  debug() {},
  info() {},
  warn: (m: string, f?: Record<string, unknown>) => console.error(m, f ?? ""),
  error: (m: string, f?: Record<string, unknown>) => console.error(m, f ?? ""),
};

/** A fresh database for one workload, with a count query for verification. */
interface Bench {
  store: StoreFor<unknown>;
  /** Jobs in `state` (of `kind` if given). */
  count(state: string, kind?: string): Promise<number>;
  /** Another store on the same database through a client of its own, as another process would have; closed with the bench. */
  connect(): StoreFor<unknown>;
  settings: Record<string, unknown>;
  close(): Promise<void>;
}

const PG_DB = "bench_errand";
const SQLITE_FILE = `${CFG.sqliteDir}/errand.db`;
/** `libsqlStore({ synchronous })`: "full" (errand's default) or "normal" (what the SQLite peers use). */
const SQLITE_SYNCHRONOUS = process.env.ERRAND_SQLITE_SYNCHRONOUS === "normal" ? "normal" : "full";

/** postgres.js: loaded only by the runs that use it, as an application loads only its own driver. */
async function postgresDriver() {
  const [{ default: postgres }, { postgresStore }] = await Promise.all([
    import("postgres"),
    import("../adapters/postgres/mod.ts"),
  ]);
  return { postgres, postgresStore };
}

async function pgAdmin(statement: string): Promise<void> {
  const { postgres } = await postgresDriver();
  const admin = postgres(CFG.pgBaseUrl, { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(statement);
  } finally {
    await admin.end();
  }
}

async function openBench(name: StoreName): Promise<Bench> {
  if (name === "postgres") {
    await pgAdmin(`DROP DATABASE IF EXISTS ${PG_DB} WITH (FORCE)`);
    await pgAdmin(`CREATE DATABASE ${PG_DB}`);
    const url = new URL(CFG.pgBaseUrl);
    url.pathname = `/${PG_DB}`;
    const { postgres, postgresStore } = await postgresDriver();
    const open = () => postgres(url.toString(), { max: 1, onnotice: () => {} });
    const sql = open();
    const clients = [sql];
    return {
      store: postgresStore(sql) as StoreFor<unknown>,
      count: async (state, kind) =>
        Number(
          (await sql`SELECT count(*) AS n FROM errand.jobs WHERE state = ${state}
                     AND (${kind ?? null}::text IS NULL OR kind = ${kind ?? null})`)[0].n,
        ),
      connect: () => {
        const other = open();
        clients.push(other);
        return postgresStore(other) as StoreFor<unknown>;
      },
      settings: { storage: "PostgreSQL (postgres.js, pool max 1: one pipelined connection)", notify: true },
      close: async () => {
        await Promise.all(clients.map((c) => c.end({ timeout: 5 })));
      },
    };
  }
  removeSqliteFiles(SQLITE_FILE);
  const [{ createClient }, { libsqlStore }] = await Promise.all([
    import("@libsql/client"),
    import("../adapters/libsql/mod.ts"),
  ]);
  const client = createClient({ url: `file:${SQLITE_FILE}` });
  const clients = [client];
  return {
    store: libsqlStore(client, { synchronous: SQLITE_SYNCHRONOUS }) as StoreFor<unknown>,
    count: async (state, kind) =>
      Number(
        (await client.execute({
          sql: "SELECT count(*) AS n FROM errand_jobs WHERE state = ? AND (? IS NULL OR kind = ?)",
          args: [state, kind ?? null, kind ?? null],
        })).rows[0].n,
      ),
    connect: () => {
      const other = createClient({ url: `file:${SQLITE_FILE}` });
      clients.push(other);
      return libsqlStore(other, { synchronous: SQLITE_SYNCHRONOUS }) as StoreFor<unknown>;
    },
    settings: { storage: `libSQL file ${SQLITE_FILE}`, journal_mode: "wal", synchronous: SQLITE_SYNCHRONOUS },
    close: () => Promise.resolve(clients.forEach((c) => c.close())),
  };
}

function subject(name: StoreName): Subject {
  let bench: Bench | undefined;
  let errand: Errand<typeof jobs, unknown> | undefined;
  /** The result workloads' instances, shut down by cleanup. */
  const others: Pick<Errand<typeof resultJobs, unknown>, "shutdown">[] = [];
  /** A fresh database and an instance on it; with `flow`, the kind and queue of the flow-controlled drain. */
  const make = async (mode: "work" | "enqueue", handler?: (id: string) => void, flow = false) => {
    bench = await openBench(name);
    errand = createErrand({
      jobs: flow ? flowJobs : jobs,
      store: bench.store,
      mode,
      logger: silent,
      queues: {
        default: flow
          ? { concurrency: CFG.concurrency, globalConcurrency: FLOW.globalConcurrency }
          : { concurrency: CFG.concurrency },
      },
      claimBatch: CFG.concurrency,
      handlers: handler ? { bench: (_p, j) => Promise.resolve(handler(j.id)) } : undefined,
    });
    return { bench, errand };
  };
  const workSettings = () => ({
    concurrency: CFG.concurrency,
    claimBatch: CFG.concurrency,
    pollInterval: "1s (default)",
  });
  /** The drain workload, plain or (`flow`) with flow control on; the same jobs and handler either way. */
  const drain = async (signal: AbortSignal, flow: boolean) => {
    const tracker = drainTracker(CFG.nDrain);
    const { bench, errand } = await make("work", (id) => tracker.hit(id), flow);
    const loader = createErrand({ jobs: flow ? flowJobs : jobs, store: bench.store, mode: "enqueue", logger: silent });
    for (const batch of payloadBatches(CFG.nDrain, 1000)) await loader.enqueueMany(batch.map(asJob));
    if ((await bench.count("available")) !== CFG.nDrain) throw new Error("pre-enqueue failed");
    const t0 = now();
    await errand.start();
    await tracker.done;
    const t1 = await waitUntil(async () => (await bench.count("completed")) === CFG.nDrain, signal, 10);
    const ms = t1 - t0;
    return {
      n: CFG.nDrain,
      c: CFG.concurrency,
      jobs_per_s: rate(CFG.nDrain, ms),
      elapsed_ms: Math.round(ms),
      verified: {
        completed_in_db: await bench.count("completed"),
        handler_calls: tracker.calls,
        distinct_jobs: tracker.distinct,
      },
      settings: {
        ...workSettings(),
        ...(flow
          ? {
            globalConcurrency: FLOW.globalConcurrency,
            group: `payload.i % ${FLOW.groups} (${FLOW.groups} groups, ${CFG.nDrain / FLOW.groups} jobs each)`,
            groupConcurrency: FLOW.groupConcurrency,
          }
          : {}),
        ...bench.settings,
      },
    };
  };
  /**
   * `result_idle` and (`busy`) `result_busy`: enqueue an `echo` job, then
   * await `result(id)`, one round trip after another (with the latency
   * workload's idle gaps). The waiter is an instance of its own in mode
   * "enqueue" with a client of its own, as an HTTP handler in another
   * process would be; then the worker instance itself awaits (the
   * same-instance figure), and on libSQL a waiter with a short
   * `resultPollInterval`. Busy: the worker drains the drain workload's
   * backlog meanwhile, topped up by a loader of its own so it never runs dry.
   */
  const results = async (signal: AbortSignal, busy: boolean) => {
    const b = bench = await openBench(name);
    const started = new Map<number, number>();
    let plainRuns = 0;
    const worker = createErrand({
      jobs: resultJobs,
      store: b.store,
      mode: "work",
      logger: silent,
      queues: { default: { concurrency: CFG.concurrency } },
      claimBatch: CFG.concurrency,
      ...(name === "libsql" ? { pollInterval: RESULT.libsqlPollInterval } : {}),
      handlers: {
        bench: () => Promise.resolve(void plainRuns++),
        echo: (p) => {
          started.set(p.i, now());
          return Promise.resolve(p.i);
        },
      },
    });
    const open = (options: { resultPollInterval?: Duration } = {}) => {
      const e = createErrand({ jobs: resultJobs, store: b.connect(), mode: "enqueue", logger: silent, ...options });
      others.push(e);
      return e;
    };
    others.push(worker);
    const waiter = open();
    let enqueued = 0;
    const loader = busy ? open() : undefined;
    const refill = payloadBatches(1000, 1000)[0].map(asJob);
    if (loader) {
      for (const batch of payloadBatches(CFG.nDrain, 1000)) await loader.enqueueMany(batch.map(asJob));
      enqueued = CFG.nDrain;
      if ((await b.count("available")) !== CFG.nDrain) throw new Error("pre-enqueue failed");
    }
    const variants = [
      { label: "separate_instance", errand: waiter },
      { label: "same_instance", errand: worker },
      ...(name === "libsql"
        ? [{
          label: `separate_instance_poll_${RESULT.fastResultPoll}`,
          errand: open({ resultPollInterval: RESULT.fastResultPoll }),
        }]
        : []),
    ];
    await waiter.start();
    const tStart = now();
    await worker.start();
    if (!busy) await sleep(1000);
    let stop = false;
    let leastBacklog = Infinity;
    // Keeps at least half the drain's backlog queued while the samples are taken.
    const topUp = (async () => {
      while (loader && !stop && !signal.aborted) {
        if (enqueued - plainRuns < CFG.nDrain / 2) {
          await loader.enqueueMany(refill);
          enqueued += refill.length;
        } else await sleep(5);
      }
    })();
    const plainBefore = plainRuns;
    const tSampling = now();
    let wrong = 0;
    const figures: Record<string, unknown> = {};
    try {
      for (const [k, { label, errand }] of variants.entries()) {
        const pickup: number[] = [];
        const notice: number[] = [];
        const samples = await sampleSequential(CFG.nResult, async (j) => {
          const i = k * CFG.nResult + j;
          if (busy) leastBacklog = Math.min(leastBacklog, enqueued - plainRuns);
          const t0 = now();
          const { id } = await errand.enqueue("echo", payload(i), { priority: RESULT.priority });
          const value = await errand.result(id, { timeout: RESULT.timeout });
          const t1 = now();
          if (value !== i) wrong++;
          if (busy) leastBacklog = Math.min(leastBacklog, enqueued - plainRuns);
          pickup.push(started.get(i)! - t0);
          notice.push(t1 - started.get(i)!);
          return t1 - t0;
        }, signal);
        figures[label] = {
          ...latencyFigures(samples),
          enqueue_to_handler_ms: pick(latencyFigures(pickup)),
          handler_to_result_ms: pick(latencyFigures(notice)),
        };
      }
    } finally {
      stop = true;
      await topUp;
    }
    const samplingMs = now() - tSampling;
    const awaited = variants.length * CFG.nResult;
    const completed = await b.count("completed", "echo");
    if (wrong || completed !== awaited) {
      throw new Error(`verification failed: ${wrong} wrong results, ${completed} of ${awaited} echo jobs completed`);
    }
    if (busy && leastBacklog <= 0) throw new Error("the backlog ran dry while samples were taken");
    const { separate_instance: headline, ...more } = figures;
    return {
      ...(headline as Record<string, unknown>),
      ...more,
      idle_gap_ms: [CFG.latencyGapMinMs, CFG.latencyGapMaxMs],
      verified: {
        results_right: awaited - wrong,
        echo_completed_in_db: completed,
        ...(busy
          ? {
            plain_jobs_run_while_sampling: plainRuns - plainBefore,
            plain_jobs_per_s_while_sampling: rate(plainRuns - plainBefore, samplingMs),
            least_backlog_at_a_sample: leastBacklog,
            worker_started_ms_before_sampling: Math.round(tSampling - tStart),
          }
          : {}),
      },
      settings: {
        sample: `t0; await enqueue("echo", payload, { priority: ${RESULT.priority} }); ` +
          `await result(id, { timeout: "${RESULT.timeout}" }); t1 (the handler returns payload.i)`,
        order: variants.map((v) => v.label),
        worker: {
          mode: "work",
          ...workSettings(),
          ...(name === "libsql" ? { pollInterval: RESULT.libsqlPollInterval } : {}),
        },
        separate_instance: {
          mode: "enqueue",
          client: "a store and driver client of its own",
          resultPollInterval: "250ms (default)",
        },
        same_instance: "the worker instance enqueues and awaits: a job it enqueues starts at insert when one of " +
          "its workers is idle, and its own outcomes wake its waiters at once",
        wakeup: name === "postgres"
          ? "the worker: the enqueue's NOTIFY; result(): NOTIFY of a watched job's change (and a read every 5 s)"
          : "the worker: its poll; result(): its poll every resultPollInterval",
        ...(name === "libsql"
          ? {
            [`separate_instance_poll_${RESULT.fastResultPoll}`]: {
              mode: "enqueue",
              client: "a store and driver client of its own",
              resultPollInterval: RESULT.fastResultPoll,
            },
          }
          : {}),
        ...(busy
          ? {
            backlog: `${CFG.nDrain} bench jobs (priority 0) enqueued before the worker starts (enqueueMany, 1000 a ` +
              `call), topped up 1000 at a time by a loader instance (mode "enqueue", a client of its own) ` +
              `whenever fewer than ${CFG.nDrain / 2} remain; sampling starts as soon as the worker is started`,
          }
          : { idle: "sampling starts 1 s after the worker started, with no other jobs" }),
        ...b.settings,
      },
    };
  };
  /**
   * Appends to a log of 16 partitions: `N_SINGLE` records one `append` at a
   * time, or (`batched`) `N_BATCH` records in `appendMany` calls of
   * `BATCH_SIZE`; verified by reading every partition back.
   */
  const appends = async (signal: AbortSignal, batched: boolean) => {
    bench = await openBench(name);
    const appender = createErrand({
      jobs,
      logs: benchLogs,
      topics: LOG_TOPICS,
      store: bench.store,
      mode: "enqueue",
      logger: silent,
    });
    others.push(appender);
    await appender.start();
    const n = batched ? CFG.nBatch : CFG.nSingle;
    const batches = payloadBatches(n, batched ? CFG.batchSize : 1);
    const ms = await timeSequential(
      batches.length,
      (k) => batched ? appender.appendMany("events", batches[k]) : appender.append("events", batches[k][0]),
      signal,
    );
    let stored = 0;
    for (let partition = 0; partition < LOG_TOPICS.events.partitions; partition++) {
      for (let from = 0;; from += 1_000) {
        const page = await appender.read("events", { partition, from, limit: 1_000 });
        stored += page.length;
        if (page.length < 1_000) break;
      }
    }
    if (stored !== n) throw new Error(`verification failed: ${stored} of ${n} records read back`);
    return {
      n,
      records_per_s: rate(n, ms),
      elapsed_ms: Math.round(ms),
      ...(batched ? { batch_size: CFG.batchSize } : {}),
      verified: { records_read_back: stored },
      settings: {
        api: batched ? "errand.appendMany(log, [...]) (one statement per call)" : "errand.append(log, value)",
        log: "16 partitions, key i % 500",
        mode: "enqueue",
        ...bench.settings,
      },
    };
  };
  /**
   * `log_consume` and (`members` > 1) `log_consume_members`: `N_CONSUME`
   * records appended to the log of the append workloads (`appendMany` calls
   * of 1,000, not timed), then read by a consumer group whose handler only
   * counts each record by partition and offset (a record handled twice
   * shows as more records than distinct ones). Each member is an instance
   * in mode "work" that runs the group and no jobs, with a client of its own.
   * The clock stops at the first check, every 10 ms once the handlers have
   * seen every record, that finds the group's lag 0 in every partition: its
   * last offsets committed. One member: the clock starts just before
   * `start()`, once per variant of {@link CONSUME}, each a group of its own
   * on the same backlog. Several: the members start with `startAt: "latest"`
   * (so nothing is consumed) and run until every one has beaten after the
   * last one started, so that the partitions are divided among them; then
   * the clock starts just before `seek(group, { to: "earliest" })`.
   */
  const consume = async (signal: AbortSignal, members: number) => {
    const b = bench = await openBench(name);
    const loader = createErrand({
      jobs,
      logs: benchLogs,
      topics: LOG_TOPICS,
      store: b.store,
      mode: "enqueue",
      logger: silent,
    });
    others.push(loader);
    await loader.start();
    const n = CFG.nConsume;
    for (const batch of payloadBatches(n, CONSUME.appendBatch)) await loader.appendMany("events", batch);
    const appended = (await loader.logPartitions("events")).reduce((sum, p) => sum + p.end, 0);
    if (appended !== n) throw new Error(`pre-append failed: ${appended} of ${n} records`);
    const lagOf = async (group: string) => (await loader.lag("events")).filter((r) => r.group === group);
    /** The members of the group `variant.label`, not started, and what their handlers saw. */
    const open = (variant: ConsumeVariant, startAt: "earliest" | "latest") => {
      const tracker = drainTracker(n);
      const handled = Array.from({ length: members }, () => 0);
      const instances = handled.map((_, m) => {
        const member = createErrand({
          jobs: noJobs,
          logs: benchLogs,
          topics: LOG_TOPICS,
          store: b.connect(),
          mode: "work",
          logger: silent,
          consumers: {
            [variant.label]: {
              log: "events",
              batch: variant.batch,
              startAt,
              ...(variant.pollInterval ? { pollInterval: variant.pollInterval } : {}),
              handler: (records) => {
                handled[m] += records.length;
                for (const r of records) tracker.hit(`${r.partition}:${r.offset}`);
              },
            },
          },
        });
        others.push(member);
        return member;
      });
      return { tracker, handled, instances };
    };
    /** Waits for every record and the lag of 0; returns the figures of the time since `t0`. */
    const figures = async (variant: ConsumeVariant, t0: number, tracker: ReturnType<typeof drainTracker>) => {
      await tracker.done;
      const t1 = await waitUntil(async () => (await lagOf(variant.label)).every((r) => r.lag === 0), signal, 10);
      const ms = t1 - t0;
      const lag = await lagOf(variant.label);
      if (tracker.distinct !== n || lag.length !== LOG_TOPICS.events.partitions) {
        throw new Error(`verification failed: ${tracker.distinct} of ${n} records handled`);
      }
      return {
        n,
        batch: variant.batch,
        records_per_s: rate(n, ms),
        elapsed_ms: Math.round(ms),
        verified: {
          records_handled: tracker.calls,
          distinct_records: tracker.distinct,
          committed_in_db: lag.reduce((sum, r) => sum + r.committed, 0),
          partitions_with_lag: lag.filter((r) => r.lag > 0).length,
        },
        group: {
          name: variant.label,
          batch: variant.batch,
          pollInterval: variant.pollInterval ?? "500ms (default)",
          lease: "30s (default)",
        },
      };
    };
    const settings = {
      backlog: `${n} records appended beforehand (appendMany, ${CONSUME.appendBatch} a call, not timed)`,
      log: "16 partitions, key i % 500",
      member: 'an instance in mode "work" running the group and no jobs, with a store and driver client of its own',
      handler: "counts each record by partition and offset",
      ...b.settings,
    };
    if (members === 1) {
      const results: Record<string, unknown>[] = [];
      for (const variant of CONSUME.variants) {
        const { tracker, instances: [member] } = open(variant, "earliest");
        const t0 = now();
        await member.start();
        results.push(await figures(variant, t0, tracker));
        await member.shutdown({ drain: "5s" });
      }
      const [headline, ...more] = results;
      return {
        ...headline,
        ...Object.fromEntries(more.map((r, k) => [CONSUME.variants[k + 1].label, r])),
        settings: {
          timed: "from just before start() to the first check that finds the lag 0",
          order: CONSUME.variants.map((v) => v.label),
          ...settings,
        },
      };
    }
    const variant = { ...CONSUME.variants[0], label: "members" };
    const { tracker, handled, instances } = open(variant, "latest");
    for (const member of instances) await member.start();
    await sleep(HEARTBEAT_MS + 1_000);
    const owners = new Set((await lagOf(variant.label)).map((r) => r.owner));
    if (owners.size !== members || handled.some((h) => h > 0)) {
      throw new Error(`setup failed: ${owners.size} owners, ${handled} records handled before the seek`);
    }
    const t0 = now();
    await instances[0].seek(variant.label, { to: "earliest" });
    const result = await figures(variant, t0, tracker);
    return {
      ...result,
      members,
      verified: { ...result.verified, records_per_member: handled, owners: owners.size },
      settings: {
        timed: 'from just before seek(group, { to: "earliest" }) to the first check that finds the lag 0',
        members: `${members} in this process, started with startAt: "latest" and run ${
          HEARTBEAT_MS + 1_000
        } ms before the seek, so the partitions are divided among them`,
        ...settings,
      },
    };
  };
  const workloads: Subject["workloads"] = {
    async enqueue_single({ signal }) {
      const { bench, errand } = await make("enqueue");
      await errand.start();
      const ms = await timeSequential(CFG.nSingle, (i) => errand.enqueue("bench", payload(i)), signal);
      return {
        ...enqueueFigures(CFG.nSingle, ms, await bench.count("available")),
        settings: { api: "errand.enqueue(kind, payload)", mode: "enqueue", ...bench.settings },
      };
    },
    async enqueue_batch({ signal }) {
      const { bench, errand } = await make("enqueue");
      await errand.start();
      const batches = payloadBatches(CFG.nBatch, CFG.batchSize).map((b) => b.map(asJob));
      const ms = await timeSequential(batches.length, (k) => errand.enqueueMany(batches[k]), signal);
      return {
        ...enqueueFigures(CFG.nBatch, ms, await bench.count("available")),
        batch_size: CFG.batchSize,
        settings: { api: "errand.enqueueMany([...]) (one statement per call)", mode: "enqueue", ...bench.settings },
      };
    },
    log_append_single: ({ signal }) => appends(signal, false),
    log_append_batch: ({ signal }) => appends(signal, true),
    log_consume: ({ signal }) => consume(signal, 1),
    log_consume_members: ({ signal }) => consume(signal, CONSUME.members),
    drain: ({ signal }) => drain(signal, false),
    result_idle: ({ signal }) => results(signal, false),
    result_busy: ({ signal }) => results(signal, true),
    drain_flow: ({ signal }) => drain(signal, true),
    async latency({ signal }) {
      const probe = latencyProbe();
      const { bench, errand } = await make("work", () => probe.hit());
      await errand.start();
      await new Promise((r) => setTimeout(r, 1000));
      const result = await measureLatency((i) => errand.enqueue("bench", payload(i)), probe, signal);
      return {
        ...result,
        settings: {
          ...workSettings(),
          wakeup: name === "postgres"
            ? "the idle worker of the enqueuing process takes the job at insert; LISTEN/NOTIFY for other processes"
            : "the idle worker of the enqueuing process takes the job at insert; polling for other processes",
          ...bench.settings,
        },
      };
    },
  };
  return {
    peer: `errand-${name}`,
    version,
    workloads,
    async cleanup() {
      await errand?.shutdown({ drain: "5s" });
      for (const other of others) await other.shutdown({ drain: "5s" });
      await bench?.close();
      if (name === "postgres") await pgAdmin(`DROP DATABASE IF EXISTS ${PG_DB} WITH (FORCE)`);
      else removeSqliteFiles(SQLITE_FILE);
    },
  };
}

/** p50 and p99 of a breakdown's figures. */
const pick = (f: ReturnType<typeof latencyFigures>) => ({ p50: f.p50_ms, p99: f.p99_ms });

await benchMain(fileURLToPath(import.meta.url), "errand", subject);
