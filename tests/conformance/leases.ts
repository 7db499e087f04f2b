import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { backoff, defineJobs, job } from "../../mod.ts";
import { FakeClock } from "../../src/testing.ts";
import type { StoreKind } from "../support/stores.ts";
import { eventually } from "../support/wait.ts";
import { errandOn, withDatabase } from "./harness.ts";

const jobs = defineJobs({ work: job<{ n: number }>({ attempts: 3, retry: backoff.fixed(0) }) });

/** Leases: renewal while running, rescue of expired leases, fencing of a stale worker's late write. */
export function leaseCases(kind: StoreKind<unknown>): void {
  describe("leases", () => {
    it("an expired lease is rescued by another instance, and the stale worker's late write changes nothing", () =>
      withDatabase(kind, async (db, track) => {
        // Instance A's clock never moves, so A never renews: it behaves like a hung process.
        let releaseStale!: () => void;
        const staleStarted = new Promise<void>((started) => {
          const a = errandOn(db, {
            jobs,
            lease: "30s",
            handlers: {
              work: () => {
                started();
                return new Promise<void>((r) => (releaseStale = r));
              },
            },
          });
          track(a.errand);
          void a.errand.start().then(() => a.errand.enqueue("work", { n: 1 }));
        });
        await staleStarted;
        const [running] = (await errandOn(db, { jobs, mode: "enqueue" }).errand.list({ state: "running" })).jobs;
        assert.equal(running.attempt, 1);

        // Instance B lives 31 s later: it rescues the job and runs it again.
        const clockB = new FakeClock(new FakeClock().now() + 31_000);
        let runsOnB = 0;
        const b = errandOn(db, { jobs, clock: clockB, handlers: { work: () => void runsOnB++ } });
        track(b.errand);
        await b.errand.start();
        const done = await eventually(async () => {
          const j = await b.errand.get(running.id);
          return j?.state === "completed" && j;
        }, "rescue and rerun on B");
        assert.equal(runsOnB, 1);
        assert.equal(done.attempt, 2);
        assert.equal(done.runs[0].outcome, "retried");
        assert.equal(done.runs[0].error?.name, "LeaseExpired");

        // A wakes up and reports success for its old claim: fenced out.
        releaseStale();
        await new Promise((r) => setTimeout(r, 50));
        const after = (await b.errand.get(running.id))!;
        assert.equal(after.state, "completed");
        assert.equal(after.attempt, 2);
        assert.equal(after.runs.length, 2);
      }));

    it("rescueExpired() retries at once a job whose lease expired, fails one without attempts left, leaves a live lease alone, and fences out the stale worker", () =>
      withDatabase(kind, async (db, track) => {
        const rescueJobs = defineJobs({
          work: job<{ n: number }>({ attempts: 3, retry: backoff.fixed("1m") }),
          once: job<{ n: number }>({ attempts: 1 }),
          hold: job<{ n: number }>({ queue: "other" }),
        });
        const t0 = new FakeClock().now();
        const blocked = () => {
          const releases: (() => void)[] = [];
          const running = new Set<string>();
          const handler = (_: unknown, j: { id: string }) => {
            running.add(j.id);
            return new Promise<void>((r) => releases.push(r));
          };
          return { handler, running, release: () => releases.forEach((r) => r()) };
        };
        // Instance A's clock never moves, so A never renews its 30 s leases: a hung process.
        const stale = blocked();
        const a = track(
          errandOn(db, {
            jobs: rescueJobs,
            lease: "30s",
            clock: new FakeClock(t0),
            handlers: { work: stale.handler, once: stale.handler },
          }).errand,
        );
        await a.start();
        const { id: workId } = await a.enqueue("work", { n: 1 });
        await eventually(() => stale.running.has(workId), "A runs work");
        const { id: onceId } = await a.enqueue("once", { n: 2 });
        await eventually(() => stale.running.has(onceId), "A runs once");
        // Instance C lives 20 s later: the lease of its job ends at t0 + 50 s, live when the operator looks.
        const live = blocked();
        const c = track(
          errandOn(db, {
            jobs: rescueJobs,
            lease: "30s",
            clock: new FakeClock(t0 + 20_000),
            handlers: { hold: live.handler },
          })
            .errand,
        );
        await c.start();
        const { id: holdId } = await c.enqueue("hold", { n: 3 });
        await eventually(() => live.running.has(holdId), "C runs hold");

        // The operator, 31 s after A claimed: A's leases expired, C's did not.
        const now = t0 + 31_000;
        const operator = track(errandOn(db, { jobs: rescueJobs, mode: "enqueue", clock: new FakeClock(now) }).errand);
        assert.equal(await operator.rescueExpired(), 2);
        const work = (await operator.get(workId))!;
        assert.deepEqual([work.state, work.runAt.getTime(), work.attempt], ["available", now, 1], "no retry delay");
        assert.deepEqual(work.runs.map((r) => [r.outcome, r.error?.name]), [["retried", "LeaseExpired"]]);
        const once = (await operator.get(onceId))!;
        assert.deepEqual([once.state, once.runs[0]?.error?.name], ["failed", "LeaseExpired"], "no attempts left");
        const hold = (await operator.get(holdId))!;
        assert.deepEqual(
          [hold.state, hold.attempt, hold.runs.filter((r) => r.error).length],
          ["running", 1, 0],
          "a live lease is left alone",
        );
        assert.equal(await operator.rescueExpired(), 0, "nothing left to rescue");

        // A wakes up and reports success for its old claims: fenced out.
        stale.release();
        await a.shutdown({ drain: "5s" });
        const after = (await operator.get(workId))!;
        assert.deepEqual([after.state, after.attempt, after.runs.length], ["available", 1, 1]);
        assert.equal((await operator.get(onceId))!.state, "failed");
        live.release();
      }));

    it("a rescue does not overwrite a job that finished between its read and its write", () =>
      withDatabase(kind, async (db, track) => {
        const store = db.store();
        const { errand } = errandOn(db, { jobs, mode: "enqueue" });
        track(errand);
        const { id } = await errand.enqueue("work", { n: 1 });
        const now = new FakeClock().now();
        const [claim] = await store.jobClaim({
          queue: "default",
          kinds: ["work@1"],
          limit: 1,
          now,
          leaseUntil: now + 10,
          workerId: "w",
          heads: null,
          limits: null,
        });
        const [expired] = await store.jobListExpired({ now: now + 20, limit: 10 });
        assert.equal(expired.id, id);
        // The worker completes first ...
        assert.deepEqual(
          await store.jobFinishMany({ finishes: [{ id, fence: claim.fence, state: "completed", at: now + 15 }] }),
          [{ id, hasChildren: false }],
        );
        // ... so the rescuer's write, fenced on the same claim, changes nothing.
        const rescued = await store.jobFinishMany({
          finishes: [{
            id,
            fence: expired.fence,
            state: "available",
            at: now + 20,
            runAt: now + 20,
            leaseExpiredBefore: now + 20,
          }],
        });
        assert.deepEqual(rescued, []);
        assert.equal((await errand.get(id))!.state, "completed");
      }));

    it("one batch of outcomes applies each to its own job, on its own fence and lease condition", () =>
      withDatabase(kind, async (db, track) => {
        const store = db.store();
        const { errand } = errandOn(db, { jobs, mode: "enqueue" });
        track(errand);
        const ids = (await errand.enqueueMany([1, 2, 3, 4, 5].map((n) => ({ kind: "work", payload: { n } })))).map(
          (j) => j.id,
        );
        const now = new FakeClock().now() + 1_000;
        const claims = await store.jobClaim({
          queue: "default",
          kinds: ["work@1"],
          limit: 5,
          now,
          leaseUntil: now + 10,
          workerId: "w",
          heads: null,
          limits: null,
        });
        const claim = (id: string) => claims.find((c) => c.id === id)!;
        const [completed, retried, interrupted, stale, notExpired] = ids;
        const run = { attempt: 1, startedAt: now, finishedAt: now + 1 };
        const changed = await store.jobFinishMany({
          finishes: [
            { id: completed, fence: claim(completed).fence, state: "completed", at: now + 1 },
            {
              id: retried,
              fence: claim(retried).fence,
              state: "scheduled",
              at: now + 1,
              runAt: now + 60_000,
              run: { ...run, outcome: "retried", error: { name: "Error", message: "boom" } },
            },
            {
              id: interrupted,
              fence: claim(interrupted).fence,
              state: "available",
              at: now + 2,
              runAt: now + 2,
              uncountAttempt: true,
              run: { ...run, outcome: "interrupted" },
            },
            { id: stale, fence: claim(stale).fence + 1, state: "completed", at: now + 1 },
            {
              id: notExpired,
              fence: claim(notExpired).fence,
              state: "available",
              at: now + 5,
              runAt: now + 5,
              leaseExpiredBefore: now + 5,
            },
          ],
        });
        assert.deepEqual(changed.map((f) => f.id).sort(), [completed, retried, interrupted].sort());
        const job = async (id: string) => (await errand.get(id))!;
        assert.equal((await job(completed)).state, "completed");
        assert.equal((await job(completed)).finishedAt?.getTime(), now + 1);
        const r = await job(retried);
        assert.deepEqual([r.state, r.runAt.getTime(), r.attempt, r.finishedAt], ["retrying", now + 60_000, 1, null]);
        assert.deepEqual(r.runs.map((x) => [x.outcome, x.error?.message]), [["retried", "boom"]]);
        const i = await job(interrupted);
        assert.deepEqual([i.state, i.runAt.getTime(), i.attempt], ["available", now + 2, 0]);
        assert.deepEqual(i.runs.map((x) => x.outcome), ["interrupted"]);
        for (const id of [stale, notExpired]) assert.equal((await job(id)).state, "running");
      }));

    it("a running job's lease is renewed, so it is not rescued while its worker lives", () =>
      withDatabase(kind, async (db, track) => {
        let release!: () => void;
        let started = false;
        const { errand, clock } = errandOn(db, {
          jobs,
          lease: "30s",
          handlers: {
            work: () => {
              started = true;
              return new Promise<void>((r) => (release = r));
            },
          },
        });
        track(errand);
        await errand.start();
        const { id } = await errand.enqueue("work", { n: 1 });
        await eventually(() => started, "start");
        // 90 s in steps of 5 s: renewals (every 10 s) keep the 30 s lease alive throughout.
        for (let i = 0; i < 18; i++) {
          clock.advance(5_000);
          await new Promise((r) => setTimeout(r, 20));
        }
        const j = (await errand.get(id))!;
        assert.equal(j.state, "running");
        assert.equal(j.attempt, 1);
        release();
        await eventually(async () => (await errand.get(id))?.state === "completed", "completion");
        assert.match(await errand.metrics(), /^errand_lease_renewals_total\{outcome="renewed"\} ([1-9]\d*)$/m);
      }));

    it("a renewal that finds its job cancelled by another process stops the run and counts the lease lost", () =>
      withDatabase(kind, async (db, track) => {
        let started = false;
        let stopped = false;
        const { errand, clock } = errandOn(db, {
          jobs,
          lease: "30s",
          handlers: {
            work: (_, job) => {
              started = true;
              return new Promise<void>((resolve) =>
                job.signal.addEventListener("abort", () => {
                  stopped = true;
                  resolve();
                })
              );
            },
          },
        });
        track(errand);
        await errand.start();
        const { id } = await errand.enqueue("work", { n: 1 });
        await eventually(() => started, "start");
        const other = errandOn(db, { jobs, mode: "enqueue" }).errand;
        track(other);
        await other.cancel(id);
        clock.advance(10_000); // the next renewal, a third of the lease on
        await eventually(() => stopped, "the run to stop");
        const text = await errand.metrics();
        assert.match(text, /^errand_lease_renewals_total\{outcome="lost"\} 1$/m);
        assert.match(text, /^errand_jobs_finished_total\{queue="default",kind="work",outcome="lost"\} 1$/m);
        assert.equal((await errand.get(id))?.state, "cancelled");
      }));
  });
}
