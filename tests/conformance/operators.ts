import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { backoff, defineJobs, type Errand, job, NotFoundError, StateError } from "../../mod.ts";
import { FakeClock } from "../../src/testing.ts";
import type { StoreKind, TestDatabase } from "../support/stores.ts";
import { eventually } from "../support/wait.ts";
import { errandOn, withDatabase } from "./harness.ts";

const jobs = defineJobs({
  task: job<{ n: number }>({ attempts: 1, retry: backoff.none }),
  report: job<{ n: number }>({ queue: "reports" }),
});

const UNKNOWN_ID = "01ARZ3NDEKTSV4RRFFQ69G5FAV";

/** Starts an errand whose `task` handler runs until released, and one running task. */
async function runningTask(db: TestDatabase<unknown>, track: (e: Errand<typeof jobs, unknown>) => void) {
  let release!: () => void;
  const { errand } = errandOn(db, {
    jobs,
    handlers: { task: () => new Promise<void>((r) => (release = r)), report: () => {} },
  });
  track(errand);
  await errand.start();
  const { id } = await errand.enqueue("task", { n: 0 });
  await eventually(async () => (await errand.get(id))?.state === "running", "the run");
  return { errand, id, release: () => release() };
}

/** Operator calls: retry, cancel, delete, counts, and pausing queues; priorities within a queue. */
export function operatorCases(kind: StoreKind<unknown>): void {
  describe("operator calls", () => {
    it("retry(id) runs a failed job again, granting one more attempt", () =>
      withDatabase(kind, async (db, track) => {
        let calls = 0;
        const { errand } = errandOn(db, {
          jobs,
          handlers: {
            task: () => {
              if (++calls === 1) throw new Error("first run fails");
            },
            report: () => {},
          },
        });
        track(errand);
        await errand.start();
        const { id } = await errand.enqueue("task", { n: 1 });
        await eventually(async () => (await errand.get(id))?.state === "failed", "failure");
        const retried = await errand.retry(id);
        assert.ok(["available", "running", "completed"].includes(retried.state));
        const done = await eventually(async () => {
          const j = await errand.get(id);
          return j?.state === "completed" && j;
        }, "the retried run");
        assert.equal(done.attempt, 2);
        assert.equal(done.maxAttempts, 2);
        await assert.rejects(errand.retry(UNKNOWN_ID), NotFoundError);
      }));

    it("retry(id) of a running job is a StateError that names its state", () =>
      withDatabase(kind, async (db, track) => {
        const { errand, id, release } = await runningTask(db, track);
        await assert.rejects(
          errand.retry(id),
          (err: Error) => err instanceof StateError && /in state "running"/.test(err.message),
        );
        release();
      }));

    it("cancel(id) of a running job aborts its signal and fences out its worker's write", () =>
      withDatabase(kind, async (db, track) => {
        let aborted: string | undefined;
        let finish!: () => void;
        const { errand } = errandOn(db, {
          jobs,
          handlers: {
            task: (_p, j) =>
              new Promise<void>((resolve) => {
                j.signal.addEventListener("abort", () => (aborted = (j.signal.reason as Error).name));
                finish = resolve;
              }),
            report: () => {},
          },
        });
        track(errand);
        await errand.start();
        const { id } = await errand.enqueue("task", { n: 1 });
        await eventually(async () => (await errand.get(id))?.state === "running", "the run");
        const cancelled = await errand.cancel(id);
        assert.equal(cancelled.state, "cancelled");
        assert.equal(aborted, "Cancelled");
        finish(); // the handler succeeds anyway: its completion must not land
        await new Promise((r) => setTimeout(r, 50));
        assert.equal((await errand.get(id))!.state, "cancelled");
        await assert.rejects(errand.cancel(id), /cancel\(\) cannot change job .* in state "cancelled"/);
      }));

    it("cancel(id) from another instance stops the run at the worker's next lease renewal", () =>
      withDatabase(kind, async (db, track) => {
        let aborted = false;
        const clock = new FakeClock();
        const worker = errandOn(db, {
          jobs,
          clock,
          lease: "30s",
          handlers: {
            task: (_p, j) => new Promise<void>((r) => j.signal.addEventListener("abort", () => (aborted = true, r()))),
            report: () => {},
          },
        });
        track(worker.errand);
        await worker.errand.start();
        const { id } = await worker.errand.enqueue("task", { n: 1 });
        await eventually(async () => (await worker.errand.get(id))?.state === "running", "the run");
        const operator = errandOn(db, { jobs, mode: "enqueue" });
        await operator.errand.cancel(id);
        assert.equal(aborted, false);
        clock.advance(10_000); // a renewal
        await eventually(() => aborted, "the abort at renewal");
        assert.equal((await operator.errand.get(id))!.state, "cancelled");
      }));

    it("delete(id) removes a job that is not running, and refuses a running one", () =>
      withDatabase(kind, async (db, track) => {
        const { errand, id, release } = await runningTask(db, track);
        const waiting = await errand.enqueue("report", { n: 1 }, { delay: "1h" });
        await errand.delete(waiting.id);
        assert.equal(await errand.get(waiting.id), null);
        await assert.rejects(errand.delete(waiting.id), NotFoundError);
        await assert.rejects(errand.delete(id), /is running; cancel it before deleting it/);
        release();
      }));

    it("counts() gives jobs by state and by queue", () =>
      withDatabase(kind, async (db, track) => {
        const { errand } = errandOn(db, { jobs, mode: "enqueue" });
        track(errand);
        await errand.enqueue("task", { n: 1 });
        await errand.enqueue("task", { n: 2 }, { delay: "1m" });
        await errand.enqueue("report", { n: 3 });
        const { id } = await errand.enqueue("report", { n: 4 });
        await errand.cancel(id);
        const counts = await errand.counts();
        assert.deepEqual(counts.byState, {
          scheduled: 1,
          retrying: 0,
          available: 2,
          running: 0,
          waiting: 0,
          completed: 0,
          failed: 0,
          cancelled: 1,
        });
        assert.equal(counts.byQueue.default.available, 1);
        assert.equal(counts.byQueue.default.scheduled, 1);
        assert.equal(counts.byQueue.reports.available, 1);
        assert.equal(counts.byQueue.reports.cancelled, 1);
      }));

    it("a job waiting for its retry is retrying: got, listed, counted and measured apart from delayed, snoozed and sleeping jobs", () =>
      withDatabase(kind, async (db, track) => {
        const kinds = defineJobs({
          flaky: job<{ n: number }>({ retry: backoff.fixed("1m") }),
          poll: job<{ n: number }>(),
          nap: job<{ n: number }>(),
        });
        let flakyRuns = 0;
        const { errand, clock } = errandOn(db, {
          jobs: kinds,
          mode: "manual",
          handlers: {
            flaky: () => {
              if (++flakyRuns === 1) throw new Error("upstream down");
            },
            poll: (_p, j) => j.snooze("1m"),
            nap: async (_p, j) => void await j.sleep("rest", "1m"),
          },
        });
        track(errand);
        const flaky = await errand.enqueue("flaky", { n: 1 });
        const snoozed = await errand.enqueue("poll", { n: 2 });
        const sleeping = await errand.enqueue("nap", { n: 3 });
        const delayed = await errand.enqueue("flaky", { n: 4 }, { delay: "1h" });
        const ran = (await errand.step()).ran.map((r) => r.outcome).sort();
        assert.deepEqual(ran, ["retried", "snoozed", "suspended"]);

        const retrying = (await errand.get(flaky.id))!;
        assert.deepEqual([retrying.state, retrying.runs.at(-1)?.error?.message], ["retrying", "upstream down"]);
        for (const other of [snoozed, sleeping, delayed]) {
          assert.equal((await errand.get(other.id))!.state, "scheduled");
        }
        const listed = async (state: "retrying" | "scheduled") =>
          (await errand.list({ state })).jobs.map((j) => j.id).sort();
        assert.deepEqual(await listed("retrying"), [flaky.id]);
        assert.deepEqual(await listed("scheduled"), [snoozed.id, sleeping.id, delayed.id].sort());
        const counts = await errand.counts();
        assert.deepEqual([counts.byState.retrying, counts.byState.scheduled], [1, 3]);
        const metrics = await errand.metrics();
        assert.match(metrics, /^errand_jobs_queued\{queue="default",state="retrying"\} 1$/m);
        assert.match(metrics, /^errand_jobs_queued\{queue="default",state="scheduled"\} 3$/m);
        assert.deepEqual(await errand.cancelMany({ state: "retrying", kind: "poll" }), { count: 0 });

        // Due, it runs again like any scheduled job.
        clock.advance(60_000);
        await errand.step();
        assert.deepEqual([(await errand.get(flaky.id))!.state, flakyRuns], ["completed", 2]);
        assert.equal((await errand.counts()).byState.retrying, 0);
      }));

    it("a paused queue keeps accepting jobs and runs none until resumed, in every instance", () =>
      withDatabase(kind, async (db, track) => {
        const ran: number[] = [];
        const operator = errandOn(db, { jobs, mode: "enqueue" });
        track(operator.errand);
        await operator.errand.pauseQueue("reports");
        const { errand, clock } = errandOn(db, {
          jobs,
          handlers: { task: (p) => void ran.push(p.n), report: (p) => void ran.push(p.n) },
        });
        track(errand);
        await errand.start();
        await errand.enqueue("report", { n: 1 });
        await errand.enqueue("task", { n: 2 });
        await eventually(() => ran.includes(2), "the unpaused queue's job");
        await new Promise((r) => setTimeout(r, 100));
        assert.deepEqual(ran, [2]);
        assert.deepEqual(await errand.pausedQueues(), ["reports"]);
        await operator.errand.resumeQueue("reports");
        clock.advance(1_000); // the next poll (PostgreSQL workers are woken by NOTIFY at once)
        await eventually(() => ran.includes(1), "the resumed queue's job");
        assert.deepEqual(await errand.pausedQueues(), []);
      }));

    it("lower priority numbers run first; equal priorities run in enqueue order", () =>
      withDatabase(kind, async (db, track) => {
        const ran: number[] = [];
        const enqueuer = errandOn(db, { jobs, mode: "enqueue" });
        track(enqueuer.errand);
        for (const [n, priority] of [[1, 5], [2, 0], [3, 5], [4, -1], [5, 0]]) {
          await enqueuer.errand.enqueue("report", { n }, { priority });
        }
        const { errand } = errandOn(db, {
          jobs,
          queues: { reports: { concurrency: 1 } },
          handlers: { task: () => {}, report: (p) => void ran.push(p.n) },
        });
        track(errand);
        await errand.start();
        await eventually(() => ran.length === 5, "all five");
        assert.deepEqual(ran, [4, 2, 5, 1, 3]);
      }));

    it("a job that joins a busy queue ahead of the jobs taken runs when the queue runs short, or within a second", () =>
      withDatabase(kind, async (db, track) => {
        const ran: number[] = [];
        const { errand, clock } = errandOn(db, {
          jobs,
          mode: "manual",
          queues: { reports: { concurrency: 2 } },
          handlers: {
            task: () => {},
            report: async (p) => {
              ran.push(p.n);
              // Joins ahead of the jobs the worker's claims have taken so far.
              if (p.n === 2 || p.n === 12) await errand.enqueue("report", { n: p.n + 5 }, { priority: -1 });
              if (p.n === 14) clock.advance(1_000);
            },
          },
        });
        track(errand);
        for (let n = 1; n <= 6; n++) await errand.enqueue("report", { n });
        await errand.step();
        assert.deepEqual(ran, [1, 2, 3, 4, 5, 6, 7], "a claim that filled its slots sends the next past its jobs");
        ran.length = 0;
        for (let n = 11; n <= 16; n++) await errand.enqueue("report", { n });
        await errand.step();
        assert.deepEqual(ran, [11, 12, 13, 14, 17, 15, 16], "a second after the claims left the front");
      }));
  });
}
