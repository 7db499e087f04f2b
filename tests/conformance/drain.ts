import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { createErrand, defineJobs, type DrainReport, job, StateError, ValidationError } from "../../mod.ts";
import { FakeClock } from "../../src/testing.ts";
import type { StoreKind } from "../support/stores.ts";
import { eventually, quietLogger } from "../support/wait.ts";
import { errandOn, eventuallyOnClock, withDatabase } from "./harness.ts";

const jobs = defineJobs({
  task: job<{ n: number; ms?: number; fail?: boolean }>({ attempts: 1 }),
  ordered: job<{ key: string; n: number }>({ topic: "orders", partitionKey: (p) => p.key }),
  report: job<{ name: string }>({ queue: "reports" }),
});
const topics = { orders: { partitions: 2 } };

/** The serverless drain: runs what is due within a budget, then leaves nothing running. */
export function drainCases(kind: StoreKind<unknown>): void {
  describe("drain()", () => {
    it("runs every due job (delayed ones come due, recurring ones fire, partitions in order) and leaves nothing behind", () =>
      withDatabase(kind, async (db, track) => {
        const ran: string[] = [];
        const { errand, clock } = errandOn(db, {
          jobs,
          topics,
          mode: "enqueue",
          handlers: {
            task: ({ n, fail }) => {
              ran.push(`task ${n}`);
              if (fail) throw new Error("no");
            },
            ordered: ({ key, n }) => void ran.push(`${key}${n}`),
            report: ({ name }) => void ran.push(`report ${name}`),
          },
        });
        track(errand);
        await errand.schedule("nightly", "report", { name: "nightly" }, "0 3 * * *");
        await errand.enqueueMany([
          { kind: "task", payload: { n: 1 } },
          { kind: "task", payload: { n: 2, fail: true } },
          { kind: "task", payload: { n: 3 }, options: { delay: "10m" } },
          { kind: "ordered", payload: { key: "a", n: 1 } },
          { kind: "ordered", payload: { key: "a", n: 2 } },
          { kind: "ordered", payload: { key: "b", n: 1 } },
        ]);
        // Just past the next 03:00 (UTC) and the delayed task's time: both are due, one occurrence each.
        const nextThree = new Date(clock.now());
        nextThree.setUTCHours(3, 0, 0, 0);
        if (nextThree.getTime() <= clock.now()) nextThree.setUTCDate(nextThree.getUTCDate() + 1);
        clock.set(Math.max(nextThree.getTime(), clock.now() + 10 * 60_000) + 1_000);
        const report = await errand.drain({ budget: "25s" });
        assert.deepEqual(report, { ran: 7, completed: 6, failed: 1, left: 0, unfinished: [] }, ran.join(", "));
        assert.deepEqual(ran.filter((r) => r.startsWith("a")), ["a1", "a2"], "a partition's jobs in order");
        assert.ok(ran.includes("report nightly") && ran.includes("task 3"));
        assert.deepEqual(await errand.workers(), [], "the drain's heartbeat is gone");
        assert.deepEqual(await errand.drain({ budget: "1s" }), {
          ran: 0,
          completed: 0,
          failed: 0,
          left: 0,
          unfinished: [],
        });
        // A day later a drain prunes what its retention (24 h for completed jobs) lets go, as maintenance would.
        const completed = new Set((await errand.list({ state: "completed" })).jobs.map((j) => j.id));
        clock.advance(25 * 3_600_000);
        await errand.drain({ budget: "5s" });
        const left = (await errand.list({ state: "completed" })).jobs.filter((j) => completed.has(j.id));
        assert.deepEqual(left, [], "the completed jobs of yesterday are pruned");
      }));

    it("stops claiming while the budget has no room for another round", () =>
      withDatabase(kind, async (db, track) => {
        let runs = 0;
        const { errand, clock } = errandOn(db, {
          jobs,
          topics,
          mode: "enqueue",
          handlers: {
            task: () => {
              runs++;
              clock.advance(400); // each run takes 400 ms of the budget
            },
          },
        });
        track(errand);
        await errand.enqueueMany(Array.from({ length: 5 }, (_, n) => ({ kind: "task", payload: { n } })));
        // 1 s: the first round leaves 600 ms, room for one more 400 ms round; the second leaves 200 ms.
        const report = await errand.drain({ budget: "1s", concurrency: 1, queues: ["default"] });
        assert.equal(runs, 2);
        assert.deepEqual(report, { ran: 2, completed: 2, failed: 0, left: 3, unfinished: [] });
      }));

    it("a run still going when the budget ends is handed back with its attempt not counted", () =>
      withDatabase(kind, async (db, track) => {
        let signal: AbortSignal | undefined;
        const { errand, clock } = errandOn(db, {
          jobs,
          topics,
          mode: "enqueue",
          handlers: {
            task: async (_payload, j) => {
              signal = j.signal;
              clock.advance(2_000); // past the budget: its timer stops the run
              await new Promise((resolve) => j.signal.addEventListener("abort", resolve));
            },
          },
        });
        track(errand);
        const { id } = await errand.enqueue("task", { n: 1 });
        const report = await errand.drain({ budget: "1s" });
        assert.equal(signal?.aborted, true);
        assert.deepEqual(report, { ran: 0, completed: 0, failed: 0, left: 1, unfinished: [] });
        const handedBack = await errand.get(id);
        assert.equal(handedBack?.state, "available");
        assert.equal(handedBack?.attempt, 0, "the interrupted attempt is not counted");
      }));

    it("returns within its budget and grace while the store is locked, saying what it did not finish; the job runs later", () =>
      withDatabase(kind, async (db, track) => {
        const ran: number[] = [];
        const { errand, clock } = errandOn(db, {
          jobs,
          topics,
          mode: "enqueue",
          handlers: { task: ({ n }) => void ran.push(n) },
        });
        track(errand);
        await errand.enqueue("task", { n: 1 });
        const release = await db.lock();
        let report: DrainReport | undefined;
        try {
          const drained = errand.drain({ budget: "1s" }).then((r) => (report = r));
          // The budget and its grace pass on the errand's clock; the store answers nothing meanwhile.
          await eventuallyOnClock(clock, () => report !== undefined, "drain() to return", 500);
          await drained;
        } finally {
          await release();
        }
        if (kind.blockingWrites) {
          // The process stood still until the server took the lock away (after 5 s) and let the drain's writes
          // through: the drain finished everything but the run, whose budget had passed, and counted the job left.
          assert.deepEqual(report, { ran: 0, completed: 0, failed: 0, left: 1, unfinished: [] });
        } else {
          assert.equal(report?.left, null, "the jobs left could not be counted");
          assert.deepEqual(report?.unfinished, [
            "announce this drain (heartbeat)",
            "hand back the runs still going",
            "save the runs' outcomes",
            "stop renewing leases",
            "give up the leader lease",
            "remove this drain's heartbeat",
            "count the jobs left",
          ]);
        }
        assert.deepEqual(ran, []);
        // Once the store answers again the next drain finishes what the first one left, then runs the job.
        assert.deepEqual(await errand.drain({ budget: "5s" }), {
          ran: 1,
          completed: 1,
          failed: 0,
          left: 0,
          unfinished: [],
        });
        assert.deepEqual(ran, [1]);
        assert.deepEqual(await errand.workers(), [], "no heartbeat left behind");
      }));

    it("a claim that lands after drain() returned hands its job back unrun, its attempt not counted", () =>
      withDatabase(kind, async (db, track) => {
        // The real store, its claims held back until the test lets them through: a claim that commits late.
        let letClaimsThrough!: () => void;
        const through = new Promise<void>((resolve) => (letClaimsThrough = resolve));
        let claiming = false;
        const store = db.store();
        const held = new Proxy(store, {
          get(target, key) {
            const value = Reflect.get(target, key);
            if (typeof value !== "function") return value;
            if (key !== "jobClaim") return value.bind(target);
            return async (...args: unknown[]) => {
              claiming = true;
              await through;
              return await value.apply(target, args);
            };
          },
        });
        const ran: number[] = [];
        const clock = new FakeClock();
        const errand = track(createErrand({
          jobs,
          topics,
          store: held,
          clock,
          logger: quietLogger(),
          mode: "enqueue",
          handlers: { task: ({ n }) => void ran.push(n) },
        }));
        const { id } = await errand.enqueue("task", { n: 1 });
        let report: DrainReport | undefined;
        const drained = errand.drain({ budget: "1s", queues: ["default"] }).then((r) => (report = r));
        await eventually(() => claiming, "the drain's claim");
        await eventuallyOnClock(clock, () => report !== undefined, "drain() to return", 500);
        await drained;
        assert.equal(report?.unfinished[0], 'claim and run jobs of queue "default"');
        letClaimsThrough();
        await eventually(async () => (await errand.get(id))?.runs.length === 1, "the late claim's hand-back");
        const job = await errand.get(id);
        assert.deepEqual(ran, [], "the handler never ran");
        assert.equal(job?.state, "available");
        assert.equal(job?.attempt, 0, "the attempt is not counted");
        assert.equal(job?.runs[0].outcome, "interrupted");
      }));

    it("bad options and modes are refused with what to change", () =>
      withDatabase(kind, async (db, track) => {
        const handlers = { task: () => {} };
        const { errand } = errandOn(db, { jobs, topics, mode: "enqueue", handlers });
        track(errand);
        const refused: [unknown, RegExp][] = [
          [{}, /needs a "budget", such as "25s"/],
          [{ budget: "10ms" }, /at least 100 ms/],
          [{ budget: "5s", queues: ["reports"] }, /cannot drain queue "reports": this errand has no handler/],
          [{ budget: "5s", concurrency: 0 }, /"concurrency"/],
        ];
        for (const [options, message] of refused) {
          await assert.rejects(
            errand.drain(options as never),
            (e: unknown) => e instanceof ValidationError && message.test(e.message),
          );
        }
        const manual = errandOn(db, { jobs, topics, mode: "manual", handlers }).errand;
        track(manual);
        await assert.rejects(manual.drain({ budget: "1s" }), (e: unknown) =>
          e instanceof StateError && /step\(\)/.test(e.message));
      }));
  });
}
