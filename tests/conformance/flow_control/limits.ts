/**
 * Flow control's limits: per-group and per-queue concurrency and rate limits,
 * each never exceeded at any instant, and how they compose with unique jobs,
 * topics and the other limits.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { defineJobs, job, systemClock } from "../../../mod.ts";
import { FakeClock } from "../../../src/testing.ts";
import type { StoreKind } from "../../support/stores.ts";
import { eventually, sleep } from "../../support/wait.ts";
import { errandOn, withDatabase } from "../harness.ts";
import { type Call, gate, gauge, mostStartsPerWindow } from "./fixtures.ts";

/** Per-group and per-queue concurrency: never more running at once than the limit. */
export function concurrencyLimitCases(kind: StoreKind<unknown>): void {
  describe("concurrency limits", () => {
    it("groupConcurrency: at no instant do more than N jobs of one group run; every job completes", () =>
      withDatabase(kind, async (db, track) => {
        const jobs = defineJobs({
          callCrm: job<Call & { n: number }>({ queue: "crm", group: (p) => p.tenant, groupConcurrency: 2 }),
        });
        const running = gauge();
        const { errand } = errandOn(db, {
          jobs,
          clock: systemClock,
          queues: { crm: { concurrency: 8 } },
          handlers: {
            callCrm: async (p) => {
              running.enter(p.tenant);
              await sleep(30 + (p.n % 3) * 10);
              running.leave(p.tenant);
            },
          },
        });
        track(errand);
        await errand.start();
        // Enqueued by the working instance itself, as a server would: its idle slots must not start
        // more of a group than the limit either.
        await errand.enqueueMany(
          ["tenant-a", "tenant-b"].flatMap((tenant) =>
            Array.from({ length: 12 }, (_, n) => ({ kind: "callCrm" as const, payload: { tenant, contact: "c", n } }))
          ),
        );
        await eventually(async () => (await errand.counts()).byState.completed === 24, "all 24 jobs", 30_000);
        assert.equal(running.started, 24, "each job ran once");
        assert.deepEqual([...running.peak.keys()].sort(), ["tenant-a", "tenant-b"]);
        for (const [tenant, peak] of running.peak) {
          assert.ok(peak <= 2, `${peak} jobs of ${tenant} ran at once; groupConcurrency is 2`);
        }
      }));

    it("kinds of one queue with different groupConcurrency each cap their own groups", () =>
      withDatabase(kind, async (db, track) => {
        const jobs = defineJobs({
          narrow: job<Call>({ queue: "crm", group: (p) => p.tenant, groupConcurrency: 1 }),
          wide: job<Call>({ queue: "crm", group: (p) => p.tenant, groupConcurrency: 3 }),
        });
        const running = gauge();
        const release = gate();
        const handler = (kind: string) => async (p: Call) => {
          running.enter(`${kind}/${p.tenant}`);
          await release.wait;
          running.leave(`${kind}/${p.tenant}`);
        };
        const { errand } = errandOn(db, {
          jobs,
          clock: systemClock,
          queues: { crm: { concurrency: 8 } },
          handlers: { narrow: handler("narrow"), wide: handler("wide") },
        });
        track(errand);
        await errand.enqueueMany(
          (["narrow", "wide"] as const).flatMap((kind) =>
            Array.from({ length: 4 }, () => ({ kind, payload: { tenant: "t1", contact: "c" } }))
          ),
        );
        await errand.start();
        await eventually(() => running.peak.get("wide/t1") === 3, "3 wide jobs of t1 running", 10_000);
        await sleep(300);
        assert.equal(running.peak.get("narrow/t1"), 1, "narrow's groupConcurrency is 1");
        assert.equal(running.peak.get("wide/t1"), 3, "wide's groupConcurrency is 3");
        release.open();
        await eventually(async () => (await errand.counts()).byState.completed === 8, "all 8 jobs", 30_000);
      }));

    it("globalConcurrency: two instances on one store never run more than N of the queue at once", () =>
      withDatabase(kind, async (db, track) => {
        const jobs = defineJobs({ callCrm: job<Call & { n: number }>({ queue: "crm" }) });
        const running = gauge();
        const instance = () =>
          errandOn(db, {
            jobs,
            clock: systemClock,
            queues: { crm: { concurrency: 4, globalConcurrency: 3 } },
            handlers: {
              callCrm: async (p) => {
                running.enter("crm");
                await sleep(30 + (p.n % 3) * 10);
                running.leave("crm");
              },
            },
          }).errand;
        const a = track(instance());
        const b = track(instance());
        await a.start();
        await b.start();
        await a.enqueueMany(
          Array.from(
            { length: 20 },
            (_, n) => ({ kind: "callCrm" as const, payload: { tenant: "t", contact: "c", n } }),
          ),
        );
        await eventually(async () => (await a.counts()).byState.completed === 20, "all 20 jobs", 30_000);
        assert.equal(running.started, 20, "each job ran once");
        const peak = running.peak.get("crm")!;
        assert.ok(peak <= 3, `${peak} jobs of the queue ran at once across both instances; globalConcurrency is 3`);
      }));

    it("a claim leaves out the claiming worker's returned runs (by job and fence) when it counts running jobs", () =>
      withDatabase(kind, async (db, track) => {
        const jobs = defineJobs({
          callCrm: job<Call>({ queue: "crm", group: (p) => p.tenant, groupConcurrency: 1 }),
        });
        const { errand, clock } = errandOn(db, { jobs, mode: "enqueue", queues: { crm: { globalConcurrency: 1 } } });
        track(errand);
        await errand.enqueueMany([
          { kind: "callCrm", payload: { tenant: "t1", contact: "a" } },
          { kind: "callCrm", payload: { tenant: "t1", contact: "b" } },
        ]);
        const store = db.store();
        const now = clock.now();
        const claim = (returned: { id: string; fence: number }[]) =>
          store.jobClaim({
            queue: "crm",
            kinds: ["callCrm@1"],
            limit: 4,
            now,
            leaseUntil: now + 60_000,
            workerId: "w1",
            heads: null,
            limits: {
              queueConcurrency: 1,
              queueRate: null,
              kinds: [{ kind: "callCrm", groupConcurrency: 1, rate: null, ratePerGroup: false }],
              after: null,
              groups: 128,
              perGroup: 1,
              round: 1,
              returned,
            },
          });
        const first = await claim([]);
        assert.equal(first.length, 1);
        assert.deepEqual(await claim([]), [], "t1 and the queue are full while its job is running");
        const { id, fence } = first[0];
        assert.deepEqual(await claim([{ id, fence: fence + 1 }]), [], "another run of the job: still counted");
        const second = await claim([{ id, fence }]);
        assert.equal(second.length, 1, "its handler returned: its group's and queue's slots are free");
        assert.notEqual(second[0].id, id);
      }));
  });
}

/** Rate limits per queue, per kind and per group: starts per fixed window never exceed the limit. */
export function rateLimitCases(kind: StoreKind<unknown>): void {
  describe("rate limits", () => {
    it("a queue's rateLimit: starts per fixed window never exceed the limit; every job completes", () =>
      withDatabase(kind, async (db, track) => {
        const jobs = defineJobs({ callCrm: job<Call>({ queue: "crm" }) });
        const { errand } = errandOn(db, {
          jobs,
          clock: systemClock,
          queues: { crm: { concurrency: 8, rateLimit: { limit: 5, period: "1s" } } },
          handlers: { callCrm: () => {} },
        });
        track(errand);
        await errand.start();
        const ids = (await errand.enqueueMany(
          Array.from({ length: 12 }, (_, n) => ({
            kind: "callCrm" as const,
            payload: { tenant: "t", contact: `c${n}` },
          })),
        )).map((r) => r.id);
        // 12 starts at 5 per second need 3 windows; more are allowed for a loaded machine.
        await eventually(async () => (await errand.counts()).byState.completed === 12, "all 12 jobs", 30_000);
        // The store's own start times (the claim's clock), which the windows count, not the handlers'.
        const details = await Promise.all(ids.map(async (id) => (await errand.get(id))!));
        const starts = details.flatMap((d) => d.runs.map((r) => r.startedAt));
        assert.equal(starts.length, 12, "each job ran once");
        const most = mostStartsPerWindow(starts, 1_000);
        assert.ok(most <= 5, `${most} starts in one 1 s window; the queue's rateLimit is 5 per 1s`);
      }));

    it("a kind's rateLimit, per group and for the whole kind, counts fixed windows aligned to the epoch", () =>
      withDatabase(kind, async (db, track) => {
        const jobs = defineJobs({
          callCrm: job<Call>({
            queue: "crm",
            group: (p) => p.tenant,
            rateLimit: { limit: 2, period: "1m", perGroup: true },
          }),
          report: job<{ n: number }>({ queue: "crm", rateLimit: { limit: 3, period: "1m" } }),
        });
        const clock = new FakeClock(Date.UTC(2026, 0, 1, 10, 0, 30)); // half way through a minute
        const started: string[] = [];
        const { errand } = errandOn(db, {
          jobs,
          clock,
          mode: "manual",
          queues: { crm: { concurrency: 16 } },
          handlers: {
            callCrm: (p) => void started.push(p.tenant),
            report: () => void started.push("report"),
          },
        });
        track(errand);
        const calls = await errand.enqueueMany(
          ["a", "b"].flatMap((tenant) =>
            Array.from({ length: 5 }, (_, n) => ({ kind: "callCrm" as const, payload: { tenant, contact: `c${n}` } }))
          ),
        );
        await errand.enqueueMany(Array.from({ length: 5 }, (_, n) => ({ kind: "report" as const, payload: { n } })));
        /** What started since the last look, counted by group ("report" for the ungrouped kind). */
        const startedSince = (() => {
          let seen = 0;
          return () => {
            const counts: Record<string, number> = {};
            for (const key of started.slice(seen)) counts[key] = (counts[key] ?? 0) + 1;
            seen = started.length;
            return counts;
          };
        })();

        await errand.step(); // 10:00:30
        assert.deepEqual(startedSince(), { a: 2, b: 2, report: 3 }, "one group's limit does not hold another back");
        // 10:00:59.999 is still the same window: nothing starts, even with free slots.
        clock.advance(29_999);
        await errand.step();
        assert.deepEqual(startedSince(), {});
        // 10:01:00 starts a new window, although only 30 s passed since the first starts.
        clock.advance(1);
        await errand.step();
        assert.deepEqual(startedSince(), { a: 2, b: 2, report: 2 });
        clock.advance(60_000);
        await errand.step();
        assert.deepEqual(startedSince(), { a: 1, b: 1 });
        assert.equal((await errand.counts()).byState.completed, 15);
        // Every job ran once: being held back cost no attempt.
        for (const { id } of calls) assert.equal((await errand.get(id))?.attempt, 1);
      }));

    it("a job held back by a rate limit stays available with attempt 0 and no run", () =>
      withDatabase(kind, async (db, track) => {
        const jobs = defineJobs({
          callCrm: job<Call>({
            queue: "crm",
            group: (p) => p.tenant,
            rateLimit: { limit: 1, period: "1h", perGroup: true },
          }),
        });
        const { errand, clock } = errandOn(db, { jobs, mode: "manual", handlers: { callCrm: () => {} } });
        track(errand);
        const first = await errand.enqueue("callCrm", { tenant: "t", contact: "first" });
        const second = await errand.enqueue("callCrm", { tenant: "t", contact: "second" });
        await errand.step();
        assert.equal((await errand.get(first.id))?.state, "completed");
        const held = (await errand.get(second.id))!;
        assert.equal(held.state, "available");
        assert.equal(held.attempt, 0);
        assert.deepEqual(held.runs, []);
        clock.advance(3_600_000);
        await errand.step();
        const done = (await errand.get(second.id))!;
        assert.equal(done.state, "completed");
        assert.equal(done.attempt, 1);
      }));
  });
}

/** Limits with the rest of errand: unique jobs, several limits at once. */
export function compositionCases(kind: StoreKind<unknown>): void {
  describe("composition", () => {
    it("unique jobs of a grouped kind still dedupe", () =>
      withDatabase(kind, async (db, track) => {
        const jobs = defineJobs({
          callCrm: job<Call>({ queue: "crm", group: (p) => p.tenant, groupConcurrency: 2 }),
        });
        const { errand } = errandOn(db, { jobs, mode: "enqueue" });
        track(errand);
        const first = await errand.enqueue("callCrm", { tenant: "t1", contact: "a" }, { unique: true });
        assert.equal(first.inserted, true);
        assert.deepEqual(
          await errand.enqueue("callCrm", { tenant: "t1", contact: "a" }, { unique: true }),
          { id: first.id, inserted: false },
        );
        const batch = await errand.enqueueMany([
          { kind: "callCrm", payload: { tenant: "t1", contact: "a" }, options: { unique: true } },
          { kind: "callCrm", payload: { tenant: "t2", contact: "a" }, options: { unique: true } },
        ]);
        assert.deepEqual(batch.map((r) => r.inserted), [false, true]);
        assert.equal(batch[0].id, first.id);
        assert.equal((await errand.list()).jobs.length, 2);
      }));

    it("a continuation of a grouped kind runs once its parent completes and frees the group's slot", () =>
      withDatabase(kind, async (db, track) => {
        const jobs = defineJobs({
          callCrm: job<Call>({ queue: "crm", group: (p) => p.tenant, groupConcurrency: 1 }),
        });
        const started: string[] = [];
        const { errand } = errandOn(db, {
          jobs,
          mode: "manual",
          handlers: { callCrm: (p) => void started.push(p.contact) },
        });
        track(errand);
        const parent = await errand.enqueue("callCrm", { tenant: "t1", contact: "parent" });
        const child = await errand.enqueueAfter(parent.id, "callCrm", { tenant: "t1", contact: "child" });
        assert.equal((await errand.get(child.id))?.state, "waiting");
        await errand.step();
        assert.deepEqual(started, ["parent", "child"]);
        assert.equal((await errand.get(child.id))?.state, "completed");
      }));
    it("a topic's kind in a queue with limits keeps each partition in order, within the queue's limits", () =>
      withDatabase(kind, async (db, track) => {
        const jobs = defineJobs({
          order: job<{ customer: string; n: number }>({
            queue: "orders",
            topic: "orders",
            partitionKey: (p) => p.customer,
          }),
        });
        const running = gauge();
        const handled: string[] = [];
        const { errand } = errandOn(db, {
          jobs,
          clock: systemClock,
          topics: { orders: { partitions: 4 } },
          queues: { orders: { concurrency: 4, globalConcurrency: 1 } },
          pollInterval: "20ms",
          handlers: {
            order: async (p) => {
              running.enter("orders");
              handled.push(`${p.customer}:${p.n}`);
              await sleep(5);
              running.leave("orders");
            },
          },
        });
        track(errand);
        await errand.enqueueMany(
          Array.from(
            { length: 12 },
            (_, i) => ({ kind: "order" as const, payload: { customer: `c${i % 3}`, n: i } }),
          ),
        );
        await errand.start();
        await eventually(async () => (await errand.counts()).byState.completed === 12, "every order to complete");
        assert.equal(running.peak.get("orders"), 1, "the queue's globalConcurrency of 1 held");
        for (const customer of ["c0", "c1", "c2"]) {
          const ns = handled.filter((h) => h.startsWith(`${customer}:`)).map((h) => Number(h.split(":")[1]));
          assert.deepEqual(ns, [...ns].sort((a, b) => a - b), `${customer}'s orders ran in enqueue order`);
        }
      }));

    it("a recurring job of a grouped kind fires into its group and runs within the group's limit", () =>
      withDatabase(kind, async (db, track) => {
        const jobs = defineJobs({
          callCrm: job<Call>({ queue: "crm", group: (p) => p.tenant, groupConcurrency: 1 }),
        });
        const started: string[] = [];
        const { errand, clock } = errandOn(db, {
          jobs,
          mode: "manual",
          handlers: { callCrm: (p) => void started.push(p.contact) },
        });
        track(errand);
        await errand.schedule("sync-t1", "callCrm", { tenant: "t1", contact: "cron" }, "0 * * * *");
        await errand.pauseGroup("callCrm", "t1", "90m");
        clock.advance(3_600_000);
        await errand.step();
        assert.deepEqual(started, [], "the occurrence waits while its group is paused");
        const [group] = await errand.groups("crm");
        assert.equal(group?.group, "t1");
        assert.equal(group?.queued, 1);
        clock.advance(31 * 60_000);
        await errand.step();
        assert.deepEqual(started, ["cron"]);
      }));
  });
}
