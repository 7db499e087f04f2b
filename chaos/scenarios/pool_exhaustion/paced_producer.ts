/**
 * A producer process of the chaos suite (pool_exhaustion): an errand in mode
 * "enqueue" that offers `work` jobs at a steady rate for a while, then exits.
 * Configured like worker.ts (CHAOS_STORE, CHAOS_URL, CHAOS_SCHEMA,
 * CHAOS_APP, CHAOS_LOG), plus:
 *
 * - CHAOS_RATE: jobs per second; CHAOS_SECONDS: for how long;
 * - CHAOS_JOB_MS: each job's `ms`; CHAOS_FROM: the first job's `n`.
 *
 * Every 100 ms it enqueues, in one `enqueueMany`, what the rate owes by then,
 * so a slow enqueue is caught up on and the offered load stays the rate.
 * It appends `{ e: "enqueued", count, t }` to CHAOS_LOG per batch, and
 * `{ e: "enqueue-error", count, message, t }` for a batch that failed.
 * Prints "ready" once started.
 */
import { appendFileSync } from "node:fs";
import process from "node:process";
import postgres from "postgres";
import { createErrand } from "errand";
import { postgresStore } from "errand/postgres";
import { chaosJobs, chaosTopics } from "../../harness/jobs.ts";

const env = (name: string, fallback = "") => process.env[name] || fallback;
const now = () => performance.timeOrigin + performance.now();
const log = (event: Record<string, unknown>) =>
  appendFileSync(env("CHAOS_LOG"), `${JSON.stringify({ ...event, pid: process.pid, t: now() })}\n`);

const sql = postgres(env("CHAOS_URL"), {
  max: 4,
  connect_timeout: 5,
  connection: { application_name: env("CHAOS_APP", "errand_chaos_producer") },
  onnotice: () => {},
});
const errand = createErrand({
  jobs: chaosJobs,
  topics: chaosTopics,
  store: postgresStore(sql, { schema: env("CHAOS_SCHEMA") }),
  mode: "enqueue",
});
await errand.start();
console.log("ready");

const rate = Number(env("CHAOS_RATE"));
const durationMs = Number(env("CHAOS_SECONDS")) * 1_000;
const ms = Number(env("CHAOS_JOB_MS", "1"));
let n = Number(env("CHAOS_FROM", "0"));
let offered = 0;
const start = performance.now();
for (;;) {
  const elapsed = Math.min(performance.now() - start, durationMs);
  const count = Math.floor((rate * elapsed) / 1_000) - offered;
  if (count > 0) {
    const from = n;
    n += count;
    offered += count;
    try {
      await errand.enqueueMany(
        Array.from({ length: count }, (_, i) => ({ kind: "work" as const, payload: { n: from + i, ms } })),
      );
      log({ e: "enqueued", count });
    } catch (err) {
      log({ e: "enqueue-error", count, message: String(err) });
    }
  }
  if (elapsed >= durationMs) break;
  await new Promise((resolve) => setTimeout(resolve, 100));
}
await errand.shutdown();
await sql.end({ timeout: 5 });
process.exit(0);
