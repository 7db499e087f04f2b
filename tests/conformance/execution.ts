import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  backoff,
  createErrand,
  defineJobs,
  job,
  type JobContext,
  PermanentError,
  type RetryPolicy,
} from "../../mod.ts";
import { FakeClock } from "../../src/testing.ts";
import type { StoreKind } from "../support/stores.ts";
import { eventually, quietLogger } from "../support/wait.ts";
import { errandOn, testJobs, withDatabase } from "./harness.ts";

/** Workers: running handlers, retries by policy, permanent failure, timeouts. */
export function executionCases(kind: StoreKind<unknown>): void {
  describe("execution", () => {
    it("a worker runs a job with its typed payload and records the run", () =>
      withDatabase(kind, async (db, track) => {
        const seen: { name: string; attempt: number; context: string }[] = [];
        const { errand } = errandOn(db, {
          jobs: testJobs,
          context: undefined,
          handlers: {
            greet: (p, j) => void seen.push({ name: p.name, attempt: j.attempt, context: typeof j.context }),
          },
        });
        track(errand);
        await errand.start();
        const { id } = await errand.enqueue("greet", { name: "ada" });
        const done = await eventually(
          async () => (await errand.get(id))?.state === "completed" && errand.get(id),
          "completion",
        );
        assert.deepEqual(seen, [{ name: "ada", attempt: 1, context: "undefined" }]);
        assert.equal(done!.attempt, 1);
        assert.equal(done!.runs.length, 1);
        assert.equal(done!.runs[0].outcome, "completed");
        assert.ok(done!.finishedAt);
      }));

    it("a worker draining a long queue leaves the application's timers and I/O their turns", () =>
      withDatabase(kind, async (db, track) => {
        // A store that answers without I/O (a local SQLite file) must not hold the event loop for the whole drain.
        // A server's store yields at every round trip, and drains 2,000 jobs slower than the wait allows: 500 there.
        const total = kind.remote ? 500 : 2_000;
        let handled = 0;
        let handledWhenTimerFired: number | undefined;
        const { errand } = errandOn(db, {
          jobs: testJobs,
          handlers: {
            greet: () => {
              if (handled++ === 0) setTimeout(() => (handledWhenTimerFired = handled), 0);
            },
          },
        });
        track(errand);
        await errand.enqueueMany(
          Array.from({ length: total }, (_, i) => ({ kind: "greet", payload: { name: `n${i}` } })),
        );
        await errand.start();
        await eventually(() => handled === total, "all jobs handled");
        assert.ok(
          handledWhenTimerFired !== undefined && handledWhenTimerFired < total / 2,
          `a timer set at the first job fired after ${handledWhenTimerFired} of ${total} jobs`,
        );
      }));

    it("an idle worker starts a job enqueued in its process with the insert, no claim; a busy one leaves it queued", () =>
      withDatabase(kind, async (db, track) => {
        // The real store, counting the claims it answers.
        const store = db.store();
        let claims = 0;
        const counted = new Proxy(store, {
          get(target, key) {
            const value = Reflect.get(target, key);
            if (key === "jobClaim") {
              return (...args: Parameters<typeof store.jobClaim>) => target.jobClaim(...args).finally(() => claims++);
            }
            return typeof value === "function" ? value.bind(target) : value;
          },
        });
        const release: (() => void)[] = [];
        const ran: string[] = [];
        const errand = track(createErrand({
          jobs: testJobs,
          store: counted,
          logger: quietLogger(),
          clock: new FakeClock(),
          queues: { default: { concurrency: 2 } },
          handlers: {
            greet: async (p) => {
              ran.push(p.name);
              if (p.name !== "quick") await new Promise<void>((r) => release.push(r));
            },
          },
        }));
        await errand.start();
        await eventually(() => claims >= 1, "the worker's first claim");
        // Claims at start-up (the first, and one when PostgreSQL's listener connects) end in a moment.
        await new Promise((r) => setTimeout(r, 200));
        const idle = claims;
        const quick = await errand.enqueue("greet", { name: "quick" });
        await eventually(async () => (await errand.get(quick.id))?.state === "completed", "the quick job");
        assert.equal(claims, idle, "the job started without a claim");
        const first = await errand.enqueue("greet", { name: "first" });
        const second = await errand.enqueue("greet", { name: "second" });
        await eventually(() => ran.length === 3, "both slots in use");
        assert.equal(claims, idle);
        assert.equal((await errand.get(first.id))?.state, "running");
        assert.equal((await errand.get(second.id))?.attempt, 1);
        // No slot is free: the next job waits in the queue and is claimed when a slot frees.
        const third = await errand.enqueue("greet", { name: "third" });
        assert.equal((await errand.get(third.id))?.state, "available");
        release.shift()!();
        await eventually(() => ran.includes("third"), "the third job, claimed");
        assert.ok(claims > idle);
        for (const r of release.splice(0)) r();
        await eventually(async () => (await errand.get(third.id))?.state === "completed", "all jobs");
      }));

    it("a failing job is retried by its policy, then fails with its history", () =>
      withDatabase(kind, async (db, track) => {
        const jobs = defineJobs({ flaky: job<{ n: number }>({ attempts: 3, retry: backoff.fixed("1m") }) });
        let calls = 0;
        // Mode "manual": each step() runs what is due, so the test decides when time passes.
        const { errand, clock } = errandOn(db, {
          jobs,
          mode: "manual",
          handlers: {
            flaky: () => {
              calls++;
              throw new Error(`failure ${calls}`);
            },
          },
        });
        track(errand);
        const { id } = await errand.enqueue("flaky", { n: 1 });
        assert.deepEqual((await errand.step()).ran.map((r) => r.outcome), ["retried"]);
        const first = (await errand.get(id))!;
        assert.equal(first.state, "retrying");
        assert.equal(first.runAt.getTime(), clock.now() + 60_000);
        assert.equal(first.runs[0].outcome, "retried");
        assert.equal(first.runs[0].error?.message, "failure 1");
        clock.advance(59_999);
        assert.deepEqual((await errand.step()).ran, [], "not due before its minute");
        clock.advance(1);
        assert.deepEqual((await errand.step()).ran.map((r) => r.outcome), ["retried"]);
        clock.advance(60_000);
        assert.deepEqual((await errand.step()).ran.map((r) => r.outcome), ["failed"]);
        const failed = (await errand.get(id))!;
        assert.equal(failed.state, "failed");
        assert.equal(calls, 3);
        assert.equal(failed.attempt, 3);
        assert.deepEqual(failed.runs.map((r) => r.outcome), ["retried", "retried", "failed"]);
        assert.deepEqual(failed.runs.map((r) => r.error?.message), ["failure 1", "failure 2", "failure 3"]);
      }));

    it("a per-job retry policy overrides the kind's", () =>
      withDatabase(kind, async (db, track) => {
        const { errand, clock } = errandOn(db, {
          jobs: testJobs,
          handlers: { greet: () => Promise.reject(new Error("no")) },
        });
        track(errand);
        await errand.start();
        const { id } = await errand.enqueue("greet", { name: "x" }, { retry: backoff.fixed("7s") });
        const j = await eventually(async () => {
          const j = await errand.get(id);
          return j?.state === "retrying" && j;
        }, "retry");
        assert.equal(j.runAt.getTime(), clock.now() + 7_000);
      }));

    it("a PermanentError fails the job at once", () =>
      withDatabase(kind, async (db, track) => {
        const { errand } = errandOn(db, {
          jobs: testJobs,
          handlers: { mail: () => Promise.reject(new PermanentError("bad address")) },
        });
        track(errand);
        await errand.start();
        const { id } = await errand.enqueue("mail", { to: "nobody" });
        const j = await eventually(async () => {
          const j = await errand.get(id);
          return j?.state === "failed" && j;
        }, "failure");
        assert.equal(j.attempt, 1);
        assert.equal(j.runs[0].error?.name, "PermanentError");
      }));

    it("backoff.none fails after the first error whatever attempts says", () =>
      withDatabase(kind, async (db, track) => {
        const jobs = defineJobs({ once: job<null>({ attempts: 5, retry: backoff.none }) });
        const { errand } = errandOn(db, { jobs, handlers: { once: () => Promise.reject(new Error("x")) } });
        track(errand);
        await errand.start();
        const { id } = await errand.enqueue("once", null);
        await eventually(async () => (await errand.get(id))?.state === "failed", "failure");
      }));

    it("a job whose stored payload cannot be decoded fails with a clear error and the worker goes on", () =>
      withDatabase(kind, async (db, track) => {
        const ran: string[] = [];
        const { errand, clock } = errandOn(db, { jobs: testJobs, handlers: { greet: (p) => void ran.push(p.name) } });
        track(errand);
        const now = clock.now();
        const corrupt = "01ARZ3NDEKTSV4RRFFQ69G5FAV";
        const store = db.store();
        await store.ensureSchema();
        await store.jobInsertMany({
          notify: false,
          rows: [{
            id: corrupt,
            kind: "greet",
            version: 1,
            queue: "default",
            state: "available",
            priority: 0,
            payload: new Uint8Array([0xd4, 0x65, 0x00]),
            maxAttempts: 5,
            runAt: now,
            createdAt: now,
            timeoutMs: null,
            retry: null,
            uniqueKey: null,
            uniqueScope: null,
            topic: null,
            partition: null,
            group: null,
            trace: null,
            parents: [],
          }],
        });
        await errand.start();
        const { id } = await errand.enqueue("greet", { name: "after" });
        await eventually(async () => (await errand.get(id))?.state === "completed", "the next job");
        const failed = await eventually(async () => {
          const j = await errand.get(corrupt);
          return j?.state === "failed" && j;
        }, "the corrupt job to fail");
        assert.equal(failed.attempt, 1);
        assert.match(failed.runs[0].error!.message, /stored payload cannot be decoded: Unsupported extension type 101/);
        assert.deepEqual(ran, ["after"]);
      }));

    it("a kind without retry options retries 25 attempts, 15 s doubling up to 6 h with equal jitter", () =>
      withDatabase(kind, async (db, track) => {
        const jobs = defineJobs({ flaky: job<null>() });
        const { errand, clock } = errandOn(db, {
          jobs,
          mode: "manual",
          handlers: { flaky: () => Promise.reject(new Error("down")) },
        });
        track(errand);
        const { id } = await errand.enqueue("flaky", null);
        for (let attempt = 1; attempt < 25; attempt++) {
          assert.deepEqual((await errand.step()).ran.map((r) => r.outcome), ["retried"], `attempt ${attempt}`);
          const j = (await errand.get(id))!;
          const delay = Math.min(15_000 * 2 ** (attempt - 1), 6 * 3_600_000);
          const waits = j.runAt.getTime() - clock.now();
          assert.ok(
            waits >= delay / 2 && waits <= delay,
            `after attempt ${attempt}: ${waits} ms, not ${delay / 2} to ${delay}`,
          );
          clock.advance(waits);
        }
        assert.deepEqual((await errand.step()).ran.map((r) => r.outcome), ["failed"]);
        const failed = (await errand.get(id))!;
        assert.equal(failed.state, "failed");
        assert.equal(failed.maxAttempts, 25);
        assert.equal(failed.attempt, 25);
      }));

    it("a job's stored policy applies its jitter mode, and one stored with a fraction still does", () =>
      withDatabase(kind, async (db, track) => {
        const { errand, clock } = errandOn(db, {
          jobs: testJobs,
          mode: "manual",
          handlers: { greet: () => Promise.reject(new Error("down")) },
        });
        track(errand);
        const policies: [string, RetryPolicy, number, number][] = [
          ["full", backoff.exponential("1m", 2, "1h", { jitter: "full" }), 0, 60_000],
          ["equal", backoff.exponential("1m", 2, "1h", { jitter: "equal" }), 30_000, 60_000],
          ["none", backoff.exponential("1m", 2, "1h", { jitter: "none" }), 60_000, 60_000],
          // As an older version stored it: jitter only as a fraction.
          ["0.1", { type: "exponential", baseMs: 60_000, factor: 2, capMs: 3_600_000, jitter: 0.1 }, 54_000, 66_000],
        ];
        const ids: string[] = [];
        for (const [name, retry] of policies) ids.push((await errand.enqueue("greet", { name }, { retry })).id);
        assert.equal((await errand.step()).ran.length, policies.length);
        for (const [i, [name, , least, most]] of policies.entries()) {
          const j = (await errand.get(ids[i]))!;
          const waits = j.runAt.getTime() - clock.now();
          assert.equal(j.runs[0].outcome, "retried");
          assert.ok(waits >= least && waits <= most, `jitter ${name}: ${waits} ms, not ${least} to ${most}`);
        }
      }));

    it("a kind without a timeout is stopped after 15 minutes; one with timeout: null runs on", () =>
      withDatabase(kind, async (db, track) => {
        const jobs = defineJobs({
          hangs: job<null>({ attempts: 2, retry: backoff.fixed("1h") }),
          endless: job<null>({ attempts: 2, retry: backoff.fixed("1h"), timeout: null }),
        });
        const signals = new Map<string, AbortSignal>();
        const hang = (_p: null, j: JobContext) => {
          signals.set(j.kind, j.signal);
          return new Promise<void>(() => {});
        };
        // A lease longer than the test moves the clock: its renewals then cannot race a rescue.
        const { errand, clock } = errandOn(db, { jobs, lease: "1h", handlers: { hangs: hang, endless: hang } });
        track(errand);
        await errand.start();
        const hangs = await errand.enqueue("hangs", null);
        const endless = await errand.enqueue("endless", null);
        await eventually(() => signals.size === 2, "both to start");
        clock.advance(15 * 60_000 - 1);
        assert.equal(signals.get("hangs")!.aborted, false, "not before its 15 minutes");
        clock.advance(1);
        assert.equal(signals.get("hangs")!.aborted, true);
        const timedOut = await eventually(async () => {
          const j = await errand.get(hangs.id);
          return j?.state === "retrying" && j;
        }, "the timeout");
        assert.equal(timedOut.runs[0].error?.name, "Timeout");
        assert.match(timedOut.runs[0].error!.message, /within its timeout of 900000 ms/);
        clock.advance(15 * 60_000);
        assert.equal(signals.get("endless")!.aborted, false);
        assert.equal((await errand.get(endless.id))?.state, "running");
      }));

    it("a timeout aborts job.signal and counts a failed attempt", () =>
      withDatabase(kind, async (db, track) => {
        const jobs = defineJobs({ slow: job<null>({ timeout: "5s", attempts: 2, retry: backoff.fixed("1s") }) });
        const signals: AbortSignal[] = [];
        const { errand, clock } = errandOn(db, {
          jobs,
          handlers: {
            slow: (_p, j: JobContext) => {
              signals.push(j.signal);
              return new Promise(() => {});
            },
          },
        });
        track(errand);
        await errand.start();
        const { id } = await errand.enqueue("slow", null);
        await eventually(() => signals.length === 1, "start");
        clock.advance(5_000);
        const j = await eventually(async () => {
          const j = await errand.get(id);
          return j?.state === "retrying" && j;
        }, "timeout");
        assert.equal(signals[0].aborted, true);
        assert.equal(j.runs[0].error?.name, "Timeout");
        assert.equal(j.attempt, 1);
      }));
  });
}
