/**
 * A producer process of the chaos suite (concurrent_appenders): an errand in
 * mode "enqueue" that appends to the retained log `orderEvents` (topic
 * `orders`, 16 partitions) in `appendMany` calls, then exits. Configured like
 * worker.ts (CHAOS_STORE, CHAOS_URL, CHAOS_SCHEMA, CHAOS_APP, CHAOS_LOG), plus:
 *
 * - CHAOS_CALLS: how many calls; CHAOS_RECORDS: records per call, each to a
 *   random one of 1,000 keys;
 * - CHAOS_FROM: the first record's `n` (records are numbered in call order).
 *
 * Prints "ready" once started, then waits for the file `${CHAOS_LOG}.go`, so
 * that every producer starts appending at once. It appends
 * `{ e: "appended", from, count, ms }` to CHAOS_LOG per call, and
 * `{ e: "append-error", from, count, ms, message }` for a call that failed.
 */
import { appendFileSync, existsSync } from "node:fs";
import process from "node:process";
import { createErrand, defineJobs } from "errand";
import { env, openWorkerStore } from "../../../tests/support/worker_env.ts";
import { chaosTopics } from "../../harness/jobs.ts";
import { orderEventLogs } from "../../../tests/support/log_consumers/order_events.ts";

const now = () => performance.timeOrigin + performance.now();
const log = (event: Record<string, unknown>) =>
  appendFileSync(env("CHAOS_LOG"), `${JSON.stringify({ ...event, pid: process.pid, t: now() })}\n`);

const { store, close } = openWorkerStore();
const errand = createErrand({
  jobs: defineJobs({}),
  logs: orderEventLogs,
  topics: chaosTopics,
  store,
  mode: "enqueue",
});
await errand.start();
console.log("ready");
while (!existsSync(`${env("CHAOS_LOG")}.go`)) await new Promise((resolve) => setTimeout(resolve, 10));

const calls = Number(env("CHAOS_CALLS"));
const records = Number(env("CHAOS_RECORDS"));
let n = Number(env("CHAOS_FROM", "0"));
for (let call = 0; call < calls; call++) {
  const from = n;
  n += records;
  const values = Array.from(
    { length: records },
    (_, i) => ({ key: `k${Math.floor(Math.random() * 1_000)}`, n: from + i }),
  );
  const started = now();
  try {
    await errand.appendMany("orderEvents", values);
    log({ e: "appended", from, count: records, ms: now() - started });
  } catch (err) {
    log({ e: "append-error", from, count: records, ms: now() - started, message: String(err) });
  }
}
await errand.shutdown();
await close();
process.exit(0);
