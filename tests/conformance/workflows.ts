import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { backoff, defineJobs, type Handler, job, JobFailedError } from "../../mod.ts";
import type { StoreKind } from "../support/stores.ts";
import { eventually } from "../support/wait.ts";
import { errandOn, withDatabase } from "./harness.ts";

const DAY = 86_400_000;

const jobs = defineJobs({
  onboard: job<{ userId: number }, { plan: string; host: string; score: number | null }>({
    attempts: 3,
    retry: backoff.fixed("1m"),
  }),
  provision: job<{ userId: number; fail?: boolean }, { host: string }>({ attempts: 1, retry: backoff.none }),
  steps: job<{ n: number }, { total: number }>({ attempts: 3, retry: backoff.fixed("1m") }),
  wait: job<{ key: string; timeout?: string }, { got: unknown }>(),
});

/** Kinds under a topic and under flow control, for the tests of how suspension meets them. */
const orderedJobs = defineJobs({
  ordered: job<{ customer: string; n: number }>({ topic: "orders", partitionKey: (p) => p.customer }),
});
const limitedJobs = defineJobs({
  tenant: job<{ tenant: string; n: number }>({ queue: "limited", group: (p) => p.tenant, groupConcurrency: 1 }),
});

/** Durable workflows: steps that run once, sleeps, event waits, child jobs, replays and their limits. */
export function workflowCases(kind: StoreKind<unknown>): void {
  describe("workflows", () => {
    it("a workflow's steps run once each across sleeps, events and a child job, and get() shows them", () =>
      withDatabase(kind, async (db, track) => {
        const calls: Record<string, number> = {};
        const count = (name: string) => (calls[name] = (calls[name] ?? 0) + 1);
        let entries = 0;
        const { errand, clock } = errandOn(db, {
          jobs,
          mode: "manual",
          handlers: {
            onboard: async ({ userId }, job) => {
              entries++;
              const account = await job.step("create-account", () => {
                count("create-account");
                return { plan: "pro", email: `u${userId}@example.com` };
              });
              await job.step("welcome-email", () => void count("welcome-email"));
              const { host } = await job.invoke("provision", "provision", { userId });
              await job.sleep("welcome-wait", "3d");
              const answer = await job.waitForEvent<{ score: number }>("survey", {
                key: String(userId),
                timeout: "7d",
              });
              return { plan: account.plan, host, score: answer?.score ?? null };
            },
            provision: ({ userId }) => {
              count("provision");
              return { host: `host-${userId}` };
            },
          },
        });
        track(errand);
        const { id } = await errand.enqueue("onboard", { userId: 42 });
        // The parent runs its two steps and suspends on the child; the child runs in the same step().
        await errand.step();
        await errand.step(); // the child's completion resumes the parent, which goes to sleep
        let details = (await errand.get(id))!;
        assert.equal(details.state, "scheduled", "asleep");
        assert.equal(details.runAt.getTime(), clock.now() + 3 * DAY);
        assert.deepEqual(details.steps.map((s) => [s.name, s.type, s.state]), [
          ["create-account", "step", "completed"],
          ["welcome-email", "step", "completed"],
          ["provision", "invoke", "completed"],
          ["welcome-wait", "sleep", "waiting"],
        ]);
        const child = details.steps[2].childId!;
        assert.equal((await errand.get(child))?.state, "completed");

        clock.advance(3 * DAY);
        await errand.step();
        details = (await errand.get(id))!;
        assert.equal(details.state, "waiting", "waits for the survey");
        assert.deepEqual(details.waitingFor, {
          type: "event",
          event: "survey",
          key: "42",
          timeoutAt: new Date(clock.now() + 7 * DAY),
        });
        assert.deepEqual(await errand.eventWaits(), [{ event: "survey", jobs: 1 }]);

        const sent = await errand.sendEvent("survey", { key: "42", data: { score: 3 } });
        assert.equal(typeof sent.id, "string");
        assert.equal(sent.resumed, 1);
        await errand.step();
        details = (await errand.get(id))!;
        assert.equal(details.state, "completed");
        assert.deepEqual(await errand.result(id), { plan: "pro", host: "host-42", score: 3 });
        assert.deepEqual(calls, { "create-account": 1, "welcome-email": 1, provision: 1 }, "each step body ran once");
        assert.equal(entries, 4, "the handler was entered once per run: start, after the child, the sleep, the event");
        assert.equal(details.attempt, 1, "suspensions use no attempt");
        assert.deepEqual(
          details.runs.map((r) => r.outcome),
          ["suspended", "suspended", "suspended", "completed"],
        );
        assert.deepEqual(details.steps.map((s) => s.state), [
          "completed",
          "completed",
          "completed",
          "completed",
          "completed",
        ]);
        assert.deepEqual(details.steps[4].event, { name: "survey", key: "42" });
        assert.equal(details.steps[3].durationMs, 3 * DAY, "the sleep took its three days");
        for (const s of details.steps) {
          assert.ok(s.durationMs !== null && s.durationMs >= 0, `${s.name} has a duration`);
        }
        assert.deepEqual(await errand.eventWaits(), []);
      }));

    it("a failing step retries within the run, then fails the run; the retry skips the completed steps", () =>
      withDatabase(kind, async (db, track) => {
        const calls: Record<string, number> = {};
        let failures = 4;
        const { errand, clock } = errandOn(db, {
          jobs,
          mode: "manual",
          handlers: {
            steps: async ({ n }, job) => {
              const a = await job.step("a", () => (calls.a = (calls.a ?? 0) + 1, n));
              const b = await job.step("b", () => {
                calls.b = (calls.b ?? 0) + 1;
                if (failures-- > 0) throw new Error(`b failed (${calls.b})`);
                return 10;
              }, { attempts: 3, retry: backoff.fixed(0) });
              return { total: a + b };
            },
          },
        });
        track(errand);
        const { id } = await errand.enqueue("steps", { n: 5 });
        assert.deepEqual((await errand.step()).ran.map((r) => r.outcome), ["retried"]);
        let details = (await errand.get(id))!;
        assert.equal(calls.b, 3, "three tries within the first run");
        assert.deepEqual(details.steps.map((s) => [s.name, s.state, s.attempt]), [["a", "completed", 1], [
          "b",
          "failed",
          3,
        ]]);
        assert.equal(details.steps[1].error?.message, "b failed (3)");
        assert.equal(details.runs[0].error?.message, "b failed (3)", "the run failed with the step's error");
        clock.advance(60_000);
        assert.deepEqual((await errand.step()).ran.map((r) => r.outcome), ["completed"]);
        details = (await errand.get(id))!;
        assert.deepEqual(await errand.result(id), { total: 15 });
        assert.equal(calls.a, 1, "the completed step did not run again");
        assert.equal(calls.b, 5);
        assert.deepEqual(details.steps.map((s) => [s.name, s.state, s.attempt]), [["a", "completed", 1], [
          "b",
          "completed",
          5,
        ]]);
      }));

    it("a sleep frees the slot and is scheduled; a sleep already over returns at once on replay", () =>
      withDatabase(kind, async (db, track) => {
        let woke = 0;
        const { errand, clock } = errandOn(db, {
          jobs,
          mode: "manual",
          handlers: {
            steps: async (_p, job) => {
              await job.sleep("nap", "30d");
              woke++;
              await job.sleep("past", new Date(0));
              return { total: woke };
            },
          },
        });
        track(errand);
        const { id } = await errand.enqueue("steps", { n: 1 });
        assert.deepEqual((await errand.step()).ran.map((r) => r.outcome), ["suspended"]);
        assert.equal((await errand.get(id))?.state, "scheduled");
        clock.advance(30 * DAY - 1);
        assert.deepEqual((await errand.step()).ran, [], "not due yet");
        clock.advance(1);
        assert.deepEqual((await errand.step()).ran.map((r) => r.outcome), ["completed"]);
        assert.deepEqual(await errand.result(id), { total: 1 });
        const steps = (await errand.get(id))!.steps;
        assert.deepEqual(steps.map((s) => [s.name, s.type, s.state]), [["nap", "sleep", "completed"], [
          "past",
          "sleep",
          "completed",
        ]]);
      }));

    it("an event sent before the wait is kept and taken when the wait comes; a second wait of the job takes the next one", () =>
      withDatabase(kind, async (db, track) => {
        const got: unknown[] = [];
        const { errand } = errandOn(db, {
          jobs,
          mode: "manual",
          handlers: {
            wait: async ({ key }, job) => {
              const first = await job.waitForEvent("paid", { key });
              const second = await job.waitForEvent("paid", { key });
              got.push(first, second);
              return { got: [first, second] };
            },
          },
        });
        track(errand);
        await errand.sendEvent("paid", { key: "k1", data: { n: 1 } });
        const { id } = await errand.enqueue("wait", { key: "k1" });
        await errand.step();
        const details = (await errand.get(id))!;
        assert.equal(details.state, "waiting", "the first wait took the kept event; the second waits");
        assert.deepEqual(details.steps.map((s) => [s.name, s.state]), [["paid", "completed"], ["paid#2", "waiting"]]);
        await errand.sendEvent("paid", { key: "k1", data: { n: 2 } });
        await errand.step();
        assert.deepEqual(await errand.result(id), { got: [{ n: 1 }, { n: 2 }] });

        // Another workflow reaching the wait later takes the oldest kept event of its key too.
        const later = await errand.enqueue("wait", { key: "k1" });
        await errand.step();
        assert.deepEqual((await errand.get(later.id))?.steps.map((s) => s.state), ["completed", "completed"]);
        assert.deepEqual(await errand.result(later.id), { got: [{ n: 1 }, { n: 2 }] });
      }));

    it("sendEvent resumes every waiter of its name and key, and only those; an id makes it idempotent", () =>
      withDatabase(kind, async (db, track) => {
        const { errand } = errandOn(db, {
          jobs,
          mode: "manual",
          handlers: { wait: async ({ key }, job) => ({ got: await job.waitForEvent("go", { key }) }) },
        });
        track(errand);
        const ids = [];
        for (let i = 0; i < 5; i++) ids.push((await errand.enqueue("wait", { key: "a" })).id);
        const other = (await errand.enqueue("wait", { key: "b" })).id;
        await errand.step();
        assert.deepEqual(await errand.eventWaits("go"), [{ event: "go", jobs: 6 }]);
        const sent = await errand.sendEvent("go", { key: "a", data: 7, id: "go-a-1" });
        assert.deepEqual({ duplicate: sent.duplicate, resumed: sent.resumed, id: sent.id }, {
          duplicate: false,
          resumed: 5,
          id: "go-a-1",
        });
        const again = await errand.sendEvent("go", { key: "a", data: 8, id: "go-a-1" });
        assert.deepEqual({ duplicate: again.duplicate, resumed: again.resumed }, { duplicate: true, resumed: 0 });
        await errand.step();
        for (const id of ids) assert.deepEqual(await errand.result(id), { got: 7 });
        assert.equal((await errand.get(other))?.state, "waiting", "key b still waits");
      }));

    it("an event wait times out with null, through the promotion of due jobs", () =>
      withDatabase(kind, async (db, track) => {
        const { errand, clock } = errandOn(db, {
          jobs,
          mode: "manual",
          handlers: {
            wait: async ({ key, timeout }, job) => ({
              got: await job.waitForEvent("reply", { key, timeout: timeout as `${number}h` }),
            }),
          },
        });
        track(errand);
        const { id } = await errand.enqueue("wait", { key: "x", timeout: "2h" });
        await errand.step();
        assert.equal((await errand.get(id))?.state, "waiting");
        clock.advance(2 * 3_600_000 - 1);
        await errand.step();
        assert.equal((await errand.get(id))?.state, "waiting", "not timed out yet");
        clock.advance(1);
        await errand.step();
        assert.deepEqual(await errand.result(id), { got: null });
        // An event after the timeout changes nothing.
        assert.equal((await errand.sendEvent("reply", { key: "x", data: 1 })).resumed, 0);
      }));

    it("invoke: a failed child throws JobFailedError in the parent, which may catch it and go on", () =>
      withDatabase(kind, async (db, track) => {
        const caught: unknown[] = [];
        const { errand } = errandOn(db, {
          jobs,
          mode: "manual",
          handlers: {
            onboard: async ({ userId }, job) => {
              try {
                await job.invoke("provision", "provision", { userId, fail: userId === 1 });
              } catch (err) {
                caught.push(err);
              }
              await job.sleep("rest", "1d");
              return { plan: "free", host: "", score: null };
            },
            provision: ({ fail }) => {
              if (fail) throw new Error("no capacity");
              return { host: "h" };
            },
          },
        });
        track(errand);
        const failing = await errand.enqueue("onboard", { userId: 1 });
        await errand.step();
        await errand.step();
        assert.equal(caught.length, 1);
        assert.ok(caught[0] instanceof JobFailedError);
        assert.match((caught[0] as JobFailedError).message, /no capacity/);
        assert.equal((await errand.get(failing.id))?.state, "scheduled", "it went on to its sleep");
        const failedStep = (await errand.get(failing.id))!.steps[0];
        assert.equal(failedStep.state, "failed");
      }));

    it("cancelling a waiting parent (cancel or cancelMany) cancels its unfinished child", () =>
      withDatabase(kind, async (db, track) => {
        const { errand } = errandOn(db, {
          jobs,
          mode: "enqueue",
        });
        track(errand);
        const worker = errandOn(db, {
          jobs,
          mode: "manual",
          handlers: {
            onboard: async ({ userId }, job) => {
              const { host } = await job.invoke("provision", "provision", { userId }, { delay: "1h" });
              return { plan: "free", host, score: null };
            },
            provision: () => ({ host: "h" }),
          },
        });
        track(worker.errand);
        const parent = await errand.enqueue("onboard", { userId: 5 });
        await worker.errand.step();
        const details = (await errand.get(parent.id))!;
        assert.equal(details.state, "waiting");
        assert.equal(details.waitingFor?.type, "job");
        const child = (details.waitingFor as { id: string }).id;
        assert.equal((await errand.get(child))?.state, "scheduled");
        await errand.cancel(parent.id);
        assert.equal((await errand.get(child))?.state, "cancelled");
        // A retry of the cancelled parent runs a new child (the old one was cancelled with it, not on its own).
        await errand.retry(parent.id);
        await worker.errand.step();
        const retried = (await errand.get(parent.id))!;
        assert.equal(retried.state, "waiting");
        const newChild = (retried.waitingFor as { id: string }).id;
        assert.notEqual(newChild, child);
        assert.equal(retried.steps[0].attempt, 2, "the step's second child");
        await errand.cancel(parent.id);

        const other = await errand.enqueue("onboard", { userId: 6 });
        await worker.errand.step();
        const otherChild = ((await errand.get(other.id))!.waitingFor as { id: string }).id;
        assert.deepEqual(await errand.cancelMany({ state: "waiting", kind: "onboard" }), { count: 1 });
        assert.equal((await errand.get(otherChild))?.state, "cancelled", "cancelMany cancels children too");
      }));

    it("a replay whose steps no longer match fails the run naming the first step that differs; a reused name is refused", () =>
      withDatabase(kind, async (db, track) => {
        let version = 1;
        const { errand, clock } = errandOn(db, {
          jobs,
          mode: "manual",
          handlers: {
            steps: async (_p, job) => {
              await job.step(version === 2 ? "download" : "fetch", () => 1);
              await job.sleep("nap", "1h");
              if (version === 3) await job.step("nap", () => 2);
              return { total: 1 };
            },
          },
        });
        track(errand);
        const { id } = await errand.enqueue("steps", { n: 1 });
        await errand.step();
        version = 2;
        clock.advance(3_600_000);
        assert.deepEqual((await errand.step()).ran.map((r) => r.outcome), ["retried"]);
        const run = (await errand.get(id))!.runs.at(-1)!;
        assert.match(run.error?.message ?? "", /call 1 is step "download", but the job stored step "fetch"/);
        version = 3;
        // The first step matches again; the reused name is refused.
        clock.advance(60_000);
        await errand.step();
        const last = (await errand.get(id))!.runs.at(-1)!;
        assert.match(last.error?.message ?? "", /Step "nap" was already used in this run/);
      }));

    it("a run that lost its job writes no step: a cancelled running workflow's step is not recorded and no further step runs", () =>
      withDatabase(kind, async (db, track) => {
        let release!: () => void;
        let later = 0;
        const { errand, clock } = errandOn(db, {
          jobs,
          handlers: {
            steps: async (_p, job) => {
              await job.step("slow", () => new Promise<number>((r) => (release = () => r(1))));
              await job.step("later", () => later++);
              return { total: 1 };
            },
          },
        });
        track(errand);
        await errand.start();
        const { id } = await errand.enqueue("steps", { n: 1 });
        await eventually(() => release !== undefined, "the step to start");
        await errand.cancel(id);
        release();
        await eventually(async () => (await errand.get(id))?.state === "cancelled", "cancelled");
        clock.advance(1_000);
        await new Promise((r) => setTimeout(r, 50));
        assert.deepEqual((await errand.get(id))?.steps, [], "the stale run's step was refused");
        assert.equal(later, 0, "no step ran after the cancel");
      }));

    it("retry() of a failed workflow resumes from its last completed step", () =>
      withDatabase(kind, async (db, track) => {
        const calls: string[] = [];
        let broken = true;
        const { errand } = errandOn(db, {
          jobs,
          mode: "manual",
          handlers: {
            provision: async (_p, job) => {
              await job.step("one", () => void calls.push("one"));
              await job.step("two", () => {
                calls.push("two");
                if (broken) throw new Error("broken");
              });
              return { host: "h" };
            },
          },
        });
        track(errand);
        const { id } = await errand.enqueue("provision", { userId: 1 });
        await errand.step();
        assert.equal((await errand.get(id))?.state, "failed");
        broken = false;
        await errand.retry(id);
        await errand.step();
        assert.equal((await errand.get(id))?.state, "completed");
        assert.deepEqual(calls, ["one", "two", "two"]);
      }));

    it("a step with { tx } is recorded only if the application's transaction commits; so is an event sent with { tx }", () =>
      withDatabase(kind, async (db, track) => {
        let tries = 0;
        const { errand, clock } = errandOn(db, {
          jobs,
          mode: "manual",
          handlers: {
            steps: async (_p, job) => {
              const value = await db.transaction(async (tx) => {
                const v = await job.step("charge", () => ++tries, { tx });
                if (tries === 1) throw new Error("the transaction rolls back");
                return v;
              });
              const got = await job.waitForEvent("ok", { key: "k" });
              return { total: value + (got as number) };
            },
          },
        });
        track(errand);
        const { id } = await errand.enqueue("steps", { n: 1 });
        await errand.step();
        assert.deepEqual((await errand.get(id))?.steps, [], "the rolled-back step left no record");
        clock.advance(60_000);
        await errand.step();
        assert.deepEqual((await errand.get(id))?.steps.map((s) => [s.name, s.state]), [["charge", "completed"], [
          "ok",
          "waiting",
        ]]);
        await assert.rejects(
          db.transaction(async (tx) => {
            await errand.sendEvent("ok", { key: "k", data: 100, tx });
            throw new Error("rolled back");
          }),
          /rolled back/,
        );
        await errand.step();
        assert.equal((await errand.get(id))?.state, "waiting", "the rolled-back event resumed nothing");
        const sent = await db.transaction((tx) => errand.sendEvent("ok", { key: "k", data: 40, tx }));
        assert.equal(sent.resumed, 1);
        await errand.step();
        assert.deepEqual(await errand.result(id), { total: 42 });
        assert.equal(tries, 2);
      }));

    it("a long run's completed steps are its progress, unless the handler reports its own", () =>
      withDatabase(kind, async (db, track) => {
        let own = false;
        const { errand, clock } = errandOn(db, {
          jobs,
          mode: "manual",
          handlers: {
            steps: async (_p, job) => {
              await job.step("quick", () => 1);
              await job.step("slow", () => void clock.advance(2_000)); // the run is now past progressInterval
              if (own) job.progress({ pct: 50 });
              await job.step("last", () => 2);
              return { total: 3 };
            },
          },
        });
        track(errand);
        const { id } = await errand.enqueue("steps", { n: 1 });
        await errand.step();
        assert.deepEqual((await errand.get(id))?.progress, { step: "last", steps: 3 });
        own = true;
        const second = await errand.enqueue("steps", { n: 2 });
        await errand.step();
        assert.deepEqual((await errand.get(second.id))?.progress, { pct: 50 });
      }));

    it("a sleeping or waiting partition head keeps its partition blocked, as a delayed head does", () =>
      withDatabase(kind, async (db, track) => {
        const ran: string[] = [];
        const { errand, clock } = errandOn(db, {
          jobs: orderedJobs,
          mode: "manual",
          topics: { orders: { partitions: 4 } },
          handlers: {
            ordered: async ({ customer, n }, job) => {
              if (n === 0) await job.sleep("nap", "1h");
              if (n === 1) await job.waitForEvent("go", { key: customer });
              ran.push(`${customer}:${n}`);
            },
          },
        });
        track(errand);
        for (let n = 0; n < 3; n++) await errand.enqueue("ordered", { customer: "alice", n });
        await errand.step();
        assert.deepEqual(ran, [], "the head sleeps; the others wait behind it");
        clock.advance(3_600_000);
        await errand.step();
        assert.deepEqual(ran, ["alice:0"], "the next head waits for its event");
        await errand.sendEvent("go", { key: "alice" });
        await errand.step();
        assert.deepEqual(ran, ["alice:0", "alice:1", "alice:2"]);
      }));

    it("a suspended workflow holds no flow-control slot: its group and its queue's global limit run others meanwhile", () =>
      withDatabase(kind, async (db, track) => {
        const ran: number[] = [];
        const { errand, clock } = errandOn(db, {
          jobs: limitedJobs,
          mode: "manual",
          queues: { limited: { concurrency: 4, globalConcurrency: 1 } },
          handlers: {
            tenant: async ({ n }, job) => {
              await job.sleep("nap", "1m");
              ran.push(n);
            },
          },
        });
        track(errand);
        for (let n = 0; n < 3; n++) await errand.enqueue("tenant", { tenant: "acme", n });
        await errand.step();
        const states = async () => (await errand.list({ kind: "tenant" })).jobs.map((j) => j.state);
        assert.deepEqual(await states(), ["scheduled", "scheduled", "scheduled"], "all three asleep at once");
        clock.advance(60_000);
        await errand.step();
        assert.deepEqual(ran.toSorted(), [0, 1, 2]);
      }));

    it("the serverless drain() runs a workflow to its suspension, and a later drain resumes it", () =>
      withDatabase(kind, async (db, track) => {
        const ran: string[] = [];
        const { errand, clock } = errandOn(db, {
          jobs,
          mode: "enqueue",
          handlers: {
            steps: async (_p, job) => {
              await job.step("before", () => void ran.push("before"));
              await job.sleep("nap", "10m");
              await job.step("after", () => void ran.push("after"));
              return { total: 2 };
            },
          },
        });
        track(errand);
        const { id } = await errand.enqueue("steps", { n: 1 });
        const first = await errand.drain({ budget: "20s" });
        assert.equal(first.left, 0, "nothing left available: the workflow sleeps");
        assert.equal((await errand.get(id))?.state, "scheduled");
        clock.advance(10 * 60_000);
        const second = await errand.drain({ budget: "20s" });
        assert.equal(second.completed, 1);
        assert.deepEqual(ran, ["before", "after"]);
      }));

    it("shutdown keeps the steps a run finished: the interrupted run's next run starts after them", () =>
      withDatabase(kind, async (db, track) => {
        const calls: string[] = [];
        let started!: () => void;
        const inSecond = new Promise<void>((r) => (started = r));
        const steps: Handler<{ n: number }, { total: number }> = async (_p, job) => {
          await job.step("first", () => void calls.push("first"));
          await job.step("second", () => {
            calls.push("second");
            started();
            return new Promise<void>((resolve, reject) => {
              if (calls.length > 2) return resolve();
              job.signal.addEventListener("abort", () => reject(job.signal.reason));
            });
          });
          return { total: 2 };
        };
        const a = errandOn(db, { jobs, handlers: { steps } });
        track(a.errand);
        await a.errand.start();
        const { id } = await a.errand.enqueue("steps", { n: 1 });
        await inSecond;
        await a.errand.shutdown({ drain: 0 });
        assert.equal((await a.errand.get(id))?.state, "available", "handed back, the attempt not counted");
        const b = errandOn(db, { jobs, mode: "manual", handlers: { steps } });
        track(b.errand);
        await b.errand.step();
        assert.deepEqual(await b.errand.result(id), { total: 2 });
        assert.deepEqual(calls, ["first", "second", "second"], "the first step did not run again");
      }));

    it("bad step calls are refused with errors that say what to change", () =>
      withDatabase(kind, async (db, track) => {
        const errors: string[] = [];
        const { errand } = errandOn(db, {
          jobs,
          mode: "manual",
          handlers: {
            steps: async (_p, job) => {
              for (
                const bad of [
                  () => job.step("", () => 1),
                  () => job.sleep("s", "soon" as "1s"),
                  () => job.waitForEvent("bad name!"),
                  () => job.step("big", () => "x".repeat(300 * 1024)),
                ]
              ) {
                try {
                  await bad();
                } catch (err) {
                  errors.push((err as Error).message);
                }
              }
              return { total: 0 };
            },
          },
        });
        track(errand);
        await errand.enqueue("steps", { n: 1 });
        await errand.step();
        assert.equal(errors.length, 4);
        assert.match(errors[0], /name must be a string of 1 to 200 characters/);
        assert.match(errors[1], /sleep/);
        assert.match(errors[2], /event name/);
        assert.match(errors[3], /step "big".*maxResultBytes/s);
        await assert.rejects(errand.sendEvent("go", { key: 5 as unknown as string }), /option "key" must be a string/);
        await assert.rejects(errand.sendEvent("go", { data: () => 1 }), /data of event "go"/);
      }));
  });
}
