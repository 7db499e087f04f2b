/**
 * The two processes of the chaos scenario retention_new_group, by
 * CHAOS_ROLE, on the log `ticks` (topic `orders`, 16 partitions) that keeps
 * only the newest RETAIN records of each partition. The store comes from
 * CHAOS_STORE, CHAOS_URL and CHAOS_SCHEMA (worker_env.ts); CHAOS_LOG is the
 * run log, one JSON line per event, in the order they happened across
 * processes.
 *
 * - `producer`, in mode "enqueue": appends CHUNK records every 20 ms until
 *   SIGTERM, each chunk between `{ e: "appending", c }` (before the call) and
 *   `{ e: "appended", c, placed }` (`placed`: each record's `[partition,
 *   offset]`), then shuts down.
 * - `consumer`, in mode "work", so its maintenance prunes the log every
 *   100 ms: runs the group "fresh" (batches of 10, each handled in
 *   CHAOS_BATCH_MS, default 100 ms, slower than the producer so it falls
 *   behind retention), writes `{ e: "started" }` once `start()` resolved,
 *   `{ e: "got", p, offsets }` per batch, `{ e: "skipped", p, from, to }`
 *   per `retentionSkipped`, `{ e: "warn", message }` per warning, and on
 *   SIGTERM `{ e: "metrics", skipped }` (its errand_log_records_skipped_total).
 *
 * Each prints "ready" once started.
 */
import { appendFileSync } from "node:fs";
import process from "node:process";
import { createErrand, defineJobs, defineLogs, log } from "errand";
import { chaosTopics } from "../../harness/jobs.ts";
import { env, openWorkerStore } from "../../../tests/support/worker_env.ts";

/** Records each partition keeps. */
const RETAIN = 20;
/** Records per append. */
const CHUNK = 50;

const write = (event: Record<string, unknown>) =>
  appendFileSync(env("CHAOS_LOG"), `${JSON.stringify({ ...event, pid: process.pid, t: Date.now() })}\n`);

const { store, close } = openWorkerStore();
const role = env("CHAOS_ROLE");
const batchMs = Number(env("CHAOS_BATCH_MS", "100"));
const quiet = () => {};
const errand = createErrand({
  jobs: defineJobs({}),
  logs: defineLogs({ ticks: log<{ n: number }>({ topic: "orders", key: (v) => v.n, retain: { count: RETAIN } }) }),
  topics: chaosTopics,
  store,
  mode: role === "consumer" ? "work" : "enqueue",
  maintenance: { prune: "100ms" },
  logger: {
    debug: quiet,
    info: quiet,
    warn: (message) => write({ e: "warn", message }),
    error: (message, fields) => console.error(message, fields ?? ""),
  },
  observer: { retentionSkipped: ({ partition, from, to }) => write({ e: "skipped", p: partition, from, to }) },
  consumers: role === "consumer"
    ? {
      fresh: {
        log: "ticks",
        batch: 10,
        pollInterval: "50ms",
        handler: async (records, ctx) => {
          write({ e: "got", p: ctx.partition, offsets: records.map((r) => r.offset) });
          await new Promise((resolve) => setTimeout(resolve, batchMs));
        },
      },
    }
    : {},
});
await errand.start();
let stopping = false;
process.on("SIGTERM", () => void (stopping = true));
if (role === "consumer") write({ e: "started" });
console.log("ready");

let n = 0;
for (let c = 0; !stopping; c++) {
  if (role === "producer") {
    write({ e: "appending", c });
    const values = Array.from({ length: CHUNK }, () => ({ n: n++ }));
    const placed = await errand.appendMany("ticks", values);
    write({ e: "appended", c, placed: placed.map((r) => [r.partition, r.offset]) });
  }
  await new Promise((resolve) => setTimeout(resolve, 20));
}
if (role === "consumer") {
  const metrics = await errand.metrics();
  write({
    e: "metrics",
    skipped: Number(metrics.match(/^errand_log_records_skipped_total\{[^}]*\} (\d+)/m)?.[1] ?? 0),
  });
}
await errand.shutdown({ drain: "1s" });
await close();
process.exit(0);
