/**
 * errand on the workload of ../shared/bench/WORKLOAD.md, on both stores.
 * `npm run bench` bundles this file with esbuild (so the figures, peak RSS
 * included, are those of plain Node running JavaScript, as for the peers)
 * and runs every workload on libSQL (file) and PostgreSQL;
 * `npm run bench -- libsql drain` runs one store and one workload;
 * `ERRAND_SQLITE_SYNCHRONOUS=normal` runs libSQL with `synchronous: "normal"`.
 * Besides the workloads of WORKLOAD.md, `drain_flow` is the drain with flow
 * control on (see {@link FLOW}); its line says how it compares with the plain
 * drain of the same run in `vs_drain`.
 * Each line says exactly which options were set, in `settings`.
 */
import process from "node:process";
import { fileURLToPath } from "node:url";
import { createErrand, defineJobs, type Errand, job } from "../mod.ts";
import type { StoreFor } from "../src/store/mod.ts";
import {
  benchMain,
  CFG,
  drainTracker,
  enqueueFigures,
  latencyProbe,
  measureLatency,
  now,
  payload,
  payloadBatches,
  rate,
  removeSqliteFiles,
  type StoreName,
  type Subject,
  timeSequential,
  waitUntil,
} from "./harness.ts";

const jobs = defineJobs({ bench: job<{ i: number; s: string }>() });
/**
 * The flow-controlled drain's setup (issue 23's figure): the queue runs at
 * most 32 jobs across all processes, and job `i` is in group `i % 100`, each
 * group running at most 2 at once.
 */
const FLOW = { globalConcurrency: 32, groups: 100, groupConcurrency: 2 } as const;
/** The bench kind under flow control: the same payloads, spread round-robin over the groups. */
const flowJobs = defineJobs({
  bench: job<{ i: number; s: string }>({ group: (p) => p.i % FLOW.groups, groupConcurrency: FLOW.groupConcurrency }),
});
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
  count(state: string): Promise<number>;
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
    const sql = postgres(url.toString(), { max: 1, onnotice: () => {} });
    return {
      store: postgresStore(sql) as StoreFor<unknown>,
      count: async (state) => Number((await sql`SELECT count(*) AS n FROM errand.jobs WHERE state = ${state}`)[0].n),
      settings: { storage: "PostgreSQL (postgres.js, pool max 1: one pipelined connection)", notify: true },
      close: () => sql.end({ timeout: 5 }),
    };
  }
  removeSqliteFiles(SQLITE_FILE);
  const [{ createClient }, { libsqlStore }] = await Promise.all([
    import("@libsql/client"),
    import("../adapters/libsql/mod.ts"),
  ]);
  const client = createClient({ url: `file:${SQLITE_FILE}` });
  return {
    store: libsqlStore(client, { synchronous: SQLITE_SYNCHRONOUS }) as StoreFor<unknown>,
    count: async (state) =>
      Number(
        (await client.execute({ sql: "SELECT count(*) AS n FROM errand_jobs WHERE state = ?", args: [state] })).rows[0]
          .n,
      ),
    settings: { storage: `libSQL file ${SQLITE_FILE}`, journal_mode: "wal", synchronous: SQLITE_SYNCHRONOUS },
    close: () => Promise.resolve(client.close()),
  };
}

function subject(name: StoreName): Subject {
  let bench: Bench | undefined;
  let errand: Errand<typeof jobs, unknown> | undefined;
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
    drain: ({ signal }) => drain(signal, false),
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
      await bench?.close();
      if (name === "postgres") await pgAdmin(`DROP DATABASE IF EXISTS ${PG_DB} WITH (FORCE)`);
      else removeSqliteFiles(SQLITE_FILE);
    },
  };
}

await benchMain(fileURLToPath(import.meta.url), "errand", subject);
