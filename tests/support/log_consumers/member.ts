/**
 * A member process of the consumer group "billing" on the log `orderEvents`
 * (order_events.ts), configured by its environment:
 *
 * - CHAOS_STORE (libsql | postgres), CHAOS_URL, CHAOS_SCHEMA: the database (see ../scratch_database.ts);
 * - CHAOS_LOG: the run log, a file every process of the run appends one JSON
 *   line to per event. Each line is one append, so the file's line order is
 *   the order the events happened in, across processes; `t` is `Date.now()`.
 *   A member writes:
 *   - `{ e: "member", id }` once started, `id` being its instance id (as `lag()` names owners);
 *   - `{ e: "start", b, p, attempt, offsets, ns }` when its handler gets a batch: `b` numbers
 *     the batches of this process, `p` is the partition, `offsets` and `ns` the records'
 *     offsets and values' `n`, in the order the handler got them;
 *   - `{ e: "end", b, p, aborted }` when the handler returns, before the commit (`aborted`:
 *     its signal said the lease was lost meanwhile);
 *   - `{ e: "warn", message, ...fields }` for each warning errand logs (a rejected commit is one);
 *   - `{ e: "metrics", consumed, rejected }` on SIGTERM: its counters
 *     errand_log_records_consumed_total and errand_log_commits_rejected_total;
 * - CONSUMER_LEASE (the group's `lease`, default "3s"), CONSUMER_BATCH (its
 *   `batch`, default 100), CONSUMER_BATCH_MS (how long the handler takes per
 *   batch, default 150).
 *
 * The handler takes its time whatever its signal says and then returns, so
 * a batch that outlived its lease (its process was stopped) still commits,
 * late, and the store must reject that commit. Prints "ready" once started,
 * shuts down gracefully on SIGTERM.
 */
import { appendFileSync } from "node:fs";
import process from "node:process";
import { createErrand, defineJobs, type Duration } from "errand";
import { GROUP, orderEventLogs, orderTopics } from "./order_events.ts";
import { env, openWorkerStore } from "../worker_env.ts";

const log = (event: Record<string, unknown>) =>
  appendFileSync(env("CHAOS_LOG"), `${JSON.stringify({ ...event, pid: process.pid, t: Date.now() })}\n`);

const { store, close } = openWorkerStore();
const quiet = () => {};
const batchMs = Number(env("CONSUMER_BATCH_MS", "150"));
let batches = 0;
let id = "";

const errand = createErrand({
  jobs: defineJobs({}),
  logs: orderEventLogs,
  topics: orderTopics,
  store,
  logger: {
    debug: quiet,
    info: (message, fields) => {
      if (message === "Started") id = String(fields?.workerId);
    },
    warn: (message, fields) => {
      log({ e: "warn", message, ...fields });
      console.error(message, fields ?? "");
    },
    error: (message, fields) => console.error(message, fields ?? ""),
  },
  consumers: {
    [GROUP]: {
      log: "orderEvents",
      batch: Number(env("CONSUMER_BATCH", "100")),
      lease: env("CONSUMER_LEASE", "3s") as Duration,
      pollInterval: "100ms",
      handler: async (records, ctx) => {
        const b = ++batches;
        log({
          e: "start",
          b,
          p: ctx.partition,
          attempt: ctx.attempt,
          offsets: records.map((r) => r.offset),
          ns: records.map((r) => r.value.n),
        });
        await new Promise((resolve) => setTimeout(resolve, batchMs));
        log({ e: "end", b, p: ctx.partition, aborted: ctx.signal.aborted });
      },
    },
  },
});
await errand.start();
log({ e: "member", id });
console.log("ready");

/** The value of the counter `name` in this instance's metrics (0 when absent). */
const counter = (text: string, name: string) =>
  Number(text.match(new RegExp(`^${name}\\{[^}]*\\} (\\d+)`, "m"))?.[1] ?? 0);

process.on("SIGTERM", async () => {
  const metrics = await errand.metrics().catch(() => "");
  log({
    e: "metrics",
    consumed: counter(metrics, "errand_log_records_consumed_total"),
    rejected: counter(metrics, "errand_log_commits_rejected_total"),
  });
  await errand.shutdown({ drain: "5s" });
  await close();
  process.exit(0);
});
