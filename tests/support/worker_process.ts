/**
 * A worker process for the multi-process tests. Configured by environment:
 * ERRAND_CHILD_STORE (libsql | sqlite | postgres; for sqlite, ERRAND_CHILD_DRIVER names the
 * driver: node:sqlite, bun:sqlite or libsql), ERRAND_CHILD_URL, ERRAND_CHILD_SCHEMA,
 * ERRAND_CHILD_LOG (a file it appends "start <id>" and "done <id>" lines to, and
 * for the partitioned kind "ordered" "start <id> <key> <n> <time> <pid> <attempt>"
 * and "end <id> <key> <n> <time> <pid> <attempt> <head>", where <head> is the id
 * of its partition's oldest unfinished job as the store saw it after the start
 * line, or "none"; several processes may share the file),
 * ERRAND_CHILD_SCHEDULE (when set, registers the every-second schedule "tick" at
 * start, as an application would on every start, and logs "scheduled <result>").
 * Prints "ready" once started; shuts down gracefully on SIGTERM. Its kind
 * "square" returns a result and reports progress, for callers in another process.
 */
import { appendFileSync } from "node:fs";
import process from "node:process";
import { createClient } from "@libsql/client";
import postgres from "postgres";
import { libsqlStore } from "../../adapters/libsql/mod.ts";
import { postgresStore } from "../../adapters/postgres/mod.ts";
import { sqliteStore } from "../../adapters/sqlite/mod.ts";
import { type SqliteDriver, sqliteDriver } from "../../adapters/sqlite/drivers.ts";
import { createErrand, partitionOf } from "../../mod.ts";
import type { StoreFor } from "../../src/store/mod.ts";
import { processJobs, processTopics } from "./process_jobs.ts";

const env = (name: string) => process.env[name] ?? "";
const log = (line: string) => appendFileSync(env("ERRAND_CHILD_LOG"), `${line}\n`);
const kind = env("ERRAND_CHILD_STORE");
const sql = kind === "postgres" ? postgres(env("ERRAND_CHILD_URL"), { max: 4, onnotice: () => {} }) : null;
const client = kind === "libsql" ? createClient({ url: env("ERRAND_CHILD_URL") }) : null;
const database = kind === "sqlite"
  ? (await sqliteDriver(env("ERRAND_CHILD_DRIVER") as SqliteDriver))(env("ERRAND_CHILD_URL").replace(/^file:/, ""))
  : null;
const store =
  (sql
    ? postgresStore(sql, { schema: env("ERRAND_CHILD_SCHEMA") })
    : database
    ? sqliteStore(database)
    : libsqlStore(client!)) as StoreFor<unknown>;

// With ERRAND_TEST_TIMING, everything errand logs goes to stderr with a time, to find stalls.
const verbose = (message: string, fields?: Record<string, unknown>) =>
  console.error(`[worker ${process.pid} +${Math.round(performance.now())} ms] ${message}`, fields ?? "");
const logger = process.env.ERRAND_TEST_TIMING
  ? { debug: verbose, info: verbose, warn: verbose, error: verbose }
  : undefined;

const errand = createErrand({
  jobs: processJobs,
  topics: processTopics,
  store,
  logger,
  // Short, so tests of killed processes are quick, yet long enough that eight processes on one
  // SQLite file under a loaded CI machine (each write may wait a second for the lock) renew in time.
  lease: "3s",
  leaderLease: "2s",
  pollInterval: "50ms",
  maintenance: { rescue: "250ms" },
  queues: { default: { concurrency: 8 } },
  handlers: {
    record: (_p, job) => log(`done ${job.id}`),
    // Times are in ms since the epoch with a fraction, exact within a process; across processes they can disagree
    // by about a millisecond (each process reads its time origin once, at its start), so the test orders runs of
    // different processes by their lines' order in the shared log instead.
    ordered: async (p, job) => {
      const run = `${job.id} ${p.key} ${p.n}`;
      const who = `${process.pid} ${job.attempt}`;
      log(`start ${run} ${performance.timeOrigin + performance.now()} ${who}`);
      // What the store has committed: a run of the head job has every earlier job of its partition finished.
      const [row] = await store.partitionList({
        topic: "t16",
        partition: partitionOf(p.key, processTopics.t16.partitions),
      });
      await new Promise((r) => setTimeout(r, 1));
      log(`end ${run} ${performance.timeOrigin + performance.now()} ${who} ${row?.head?.id ?? "none"}`);
    },
    slow: async (_p, job) => {
      log(`start ${job.id}`);
      await new Promise((r) => setTimeout(r, 300));
      log(`done ${job.id}`);
    },
    // A result and progress for the caller in another process; a negative n fails.
    square: async ({ n }, job) => {
      job.progress({ pid: process.pid, n });
      await new Promise((r) => setTimeout(r, 100));
      if (n < 0) throw new Error(`no square root of the test's ${n}`);
      return { square: n * n, pid: process.pid };
    },
  },
});
await errand.start();
if (env("ERRAND_CHILD_SCHEDULE")) {
  const result = await errand.schedule("tick", "record", { n: -1 }, "* * * * * *", { catchUp: 10 });
  log(`scheduled ${result}`);
}
console.log("ready");
process.on("SIGTERM", async () => {
  logger?.info("SIGTERM");
  await errand.shutdown({ drain: "5s" });
  await sql?.end();
  client?.close();
  (database as { close?(): void } | null)?.close?.();
  process.exit(0);
});
