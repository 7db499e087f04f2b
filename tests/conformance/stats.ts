import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { defineJobs, type ErrandStats, job, PermanentError, ValidationError } from "../../mod.ts";
import type { StoreKind } from "../support/stores.ts";
import { errandOn, eventuallyOnClock, withDatabase } from "./harness.ts";

const jobs = defineJobs({
  ok: job<{ n: number }>(),
  bad: job<{ n: number }>({ attempts: 1 }),
  order: job<{ customer: string }>({ topic: "orders", partitionKey: (p) => p.customer }),
});

/** Operator views read from the store: the last minute's (or 5 minutes', or hour's) activity, the database's size, topics. */
export function statsCases(kind: StoreKind<unknown>): void {
  describe("stats and topics", () => {
    it("stats() counts the last minute by second, or the last 5 or 60 minutes in 60 buckets, and the dispatch wait; topics() sums the partitions", () =>
      withDatabase(kind, async (db, track) => {
        let release!: () => void;
        const held = new Promise<void>((r) => (release = r));
        const { errand, clock } = errandOn(db, {
          jobs,
          topics: { orders: { partitions: 4 } },
          handlers: {
            ok: () => {},
            bad: () => {
              throw new PermanentError("no");
            },
            order: () => held,
          },
        });
        track(errand);
        await errand.enqueueMany([1, 2, 3].map((n) => ({ kind: "ok" as const, payload: { n } })));
        await errand.enqueue("bad", { n: 0 });
        await errand.enqueue("order", { customer: "a" });
        await errand.enqueue("order", { customer: "a" });
        // Due for 2 s before a worker starts: that is their dispatch wait.
        clock.advance(2_000);
        await errand.start();
        await eventuallyOnClock(clock, async () => {
          const c = (await errand.counts()).byState;
          return c.completed === 3 && c.failed === 1 && c.running === 1;
        }, "the jobs to run");

        const stats = await errand.stats();
        assert.equal(stats.windowMs, 60_000);
        assert.equal(stats.bucketMs, 1_000);
        assert.equal(stats.throughput.length, 60);
        type What = "enqueued" | "started" | "attempts" | "completed" | "failed";
        const sumOf = (of: ErrandStats, what: What) => of.throughput.reduce((n, s) => n + s[what], 0);
        const total = (what: What) => sumOf(stats, what);
        assert.deepEqual(
          [total("enqueued"), total("started"), total("attempts"), total("completed"), total("failed")],
          [6, 5, 5, 3, 1],
        );
        // Enqueued 2 s (and the clock's nudges) before now: in the 58th or 59th second of the window.
        assert.ok([56, 57, 58].some((i) => stats.throughput[i].enqueued === 6), "enqueued about 2 s ago");
        assert.equal(stats.dispatchWait.regular.count, 4);
        assert.ok(stats.dispatchWait.regular.avgMs! >= 2_000 && stats.dispatchWait.regular.maxMs! >= 2_000);
        assert.equal(stats.dispatchWait.partitioned.count, 1);
        assert.equal(stats.workers.length, 1);
        assert.ok(stats.storageBytes === null || stats.storageBytes > 0);
        assert.ok(stats.databaseBytes === null || stats.databaseBytes >= (stats.storageBytes ?? 1));

        const [orders] = await errand.topics();
        assert.deepEqual(
          { ...orders, oldestHeadAgeMs: orders.oldestHeadAgeMs >= 2_000 },
          { topic: "orders", partitions: 4, depth: 2, activePartitions: 1, oldestHeadAgeMs: true },
        );

        // A minute later the window is empty.
        clock.advance(61_000);
        const later = await errand.stats();
        assert.equal(later.throughput.reduce((n, s) => n + s.completed + s.enqueued, 0), 0);
        assert.deepEqual(later.dispatchWait.regular, { count: 0, avgMs: null, maxMs: null });

        // The last 5 minutes, in buckets of 5 s, still hold them: about 63 s ago, the 48th bucket.
        const five = await errand.stats({ minutes: 5 });
        assert.deepEqual([five.windowMs, five.bucketMs, five.throughput.length], [300_000, 5_000, 60]);
        assert.equal(five.throughput[1].at.getTime() - five.throughput[0].at.getTime(), 5_000);
        assert.equal(five.throughput[59].at.getTime() + 5_000, five.at.getTime());
        assert.deepEqual([sumOf(five, "enqueued"), sumOf(five, "completed"), sumOf(five, "failed")], [6, 3, 1]);
        assert.ok([46, 47, 48].some((i) => five.throughput[i].enqueued === 6), "enqueued about 63 s ago");
        assert.equal(five.dispatchWait.regular.count, 4);

        // Half an hour on, only the last hour (by the minute) holds them: about 31 minutes ago, the 28th bucket.
        clock.advance(30 * 60_000);
        assert.equal(sumOf(await errand.stats({ minutes: 5 }), "enqueued"), 0);
        const hour = await errand.stats({ minutes: 60 });
        assert.deepEqual([hour.windowMs, hour.bucketMs, hour.throughput.length], [3_600_000, 60_000, 60]);
        assert.deepEqual([sumOf(hour, "enqueued"), sumOf(hour, "failed")], [6, 1]);
        assert.ok(sumOf(hour, "completed") >= 3);
        assert.ok([27, 28].some((i) => hour.throughput[i].enqueued === 6), "enqueued about 31 minutes ago");

        for (const minutes of [0, 2, 30, "5"]) {
          await assert.rejects(
            errand.stats({ minutes: minutes as never }),
            (e: unknown) =>
              e instanceof ValidationError &&
              e.message === `Option "minutes" must be one of 1, 5, 60, got "${minutes}"`,
          );
        }
        release();
      }));
  });
}
