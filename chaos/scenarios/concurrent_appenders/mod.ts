/**
 * Concurrent appenders: three producer processes append to one retained log
 * over 16 partitions at once, each in `appendMany` calls of 20 records to
 * random keys, so every call touches most partitions and the calls of
 * different producers meet on the same partitions' counters all the time.
 * The short form: 50 calls each; the full one 150 (450 calls, 9,000 records).
 *
 * What must hold: no call fails (on PostgreSQL, appends lock partition
 * counters in one order, so none is a deadlock victim); every record of
 * every call is stored once, none of a failed call; each partition's offsets
 * run from 0 without a gap. Reported: calls, failed calls, the seconds from
 * the first call to the last, the slowest call, records lost.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { createErrand, defineJobs } from "errand";
import { check, type Scenario } from "../../harness/scenario.ts";
import { chaosWorkers } from "../../harness/workers.ts";
import { chaosTopics } from "../../harness/jobs.ts";
import { orderEventLogs } from "../../../tests/support/log_consumers/order_events.ts";
import { until } from "../../../tests/support/wait.ts";

const PRODUCERS = 3;
const RECORDS = 20;
const producerScript = fileURLToPath(new URL("./log_producer.ts", import.meta.url));

/** One call as a producer logged it. */
interface Call {
  readonly e: "appended" | "append-error";
  readonly from: number;
  readonly count: number;
  readonly ms: number;
  readonly t: number;
  readonly message?: string;
}

export const scenario: Scenario = {
  name: "concurrent_appenders",
  summary:
    "3 producer processes appendMany() 20 records at a time to random keys over 16 partitions: no call fails, every record stored once, offsets without gaps",
  stores: ["libsql", "postgres"],
  async run({ db, quick, dir, note }) {
    const calls = quick ? 50 : 150;
    const log = `${dir}/calls.jsonl`;
    const producers = chaosWorkers(db, log);
    const errand = createErrand({
      jobs: defineJobs({}),
      logs: orderEventLogs,
      topics: chaosTopics,
      store: db.storeFor(),
      mode: "enqueue",
    });
    try {
      await errand.start();
      await Promise.all(Array.from({ length: PRODUCERS }, (_, p) =>
        producers.start({
          CHAOS_CALLS: String(calls),
          CHAOS_RECORDS: String(RECORDS),
          CHAOS_FROM: String(p * calls * RECORDS),
        }, producerScript)));
      writeFileSync(`${log}.go`, "");
      const finished = await until(() => producers.live.length === 0, 300_000, 50);
      const done: Call[] = existsSync(log)
        ? readFileSync(log, "utf8").split("\n").filter(Boolean).map((line) => JSON.parse(line))
        : [];
      const failed = done.filter((c) => c.e === "append-error");
      for (const message of new Set(failed.map((c) => c.message))) note(`failed call: ${message}`);
      // Every record read back, by its n, and each partition's offsets.
      const stored = new Map<number, number>();
      let gaps = 0;
      for (let partition = 0; partition < chaosTopics.orders.partitions; partition++) {
        for (let from = 0, expected = 0;;) {
          const page = await errand.read("orderEvents", { partition, from, limit: 1_000 });
          for (const record of page) {
            if (record.offset !== expected++) gaps++;
            stored.set(record.value.n, (stored.get(record.value.n) ?? 0) + 1);
          }
          if (page.length < 1_000) break;
          from = page.at(-1)!.offset + 1;
        }
      }
      const owed = (c: Call) => Array.from({ length: c.count }, (_, i) => c.from + i);
      const appended = done.filter((c) => c.e === "appended").flatMap(owed);
      const first = Math.min(...done.map((c) => c.t - c.ms));
      const last = Math.max(...done.map((c) => c.t));
      const figures = {
        calls: done.length,
        failedCalls: failed.length,
        appendSeconds: Math.round((last - first) / 100) / 10,
        slowestCallMs: Math.round(Math.max(...done.map((c) => c.ms))),
        records: appended.length,
        recordsLost: appended.filter((n) => !stored.has(n)).length,
        recordsOfFailedCalls: failed.flatMap(owed).filter((n) => stored.has(n)).length,
        recordsDuplicated: [...stored.values()].filter((count) => count > 1).length,
        offsetGaps: gaps,
      };
      return {
        figures,
        checks: [
          check(`every producer made its ${calls} calls and exited`, finished && done.length === PRODUCERS * calls),
          check("no call failed", figures.failedCalls === 0),
          check("every record of every call is stored", figures.recordsLost === 0),
          check("no record of a failed call is stored", figures.recordsOfFailedCalls === 0),
          check("no record is stored twice", figures.recordsDuplicated === 0),
          check("each partition's offsets run from 0 without a gap", figures.offsetGaps === 0),
        ],
      };
    } finally {
      await producers.stopAll();
      await errand.shutdown().catch(() => {});
    }
  },
};
