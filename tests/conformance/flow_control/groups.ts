/**
 * Flow control's groups: fair claims across groups, paused groups (by a
 * handler or an operator), and the jobs held back by either, as counts and
 * metrics report them.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { defineJobs, job } from "../../../mod.ts";
import { FakeClock } from "../../../src/testing.ts";
import type { StoreKind } from "../../support/stores.ts";
import { eventually } from "../../support/wait.ts";
import { errandOn, withDatabase } from "../harness.ts";
import { type Call, gate, syncByAccount } from "./fixtures.ts";

/** Claims across groups: a full group holds back only its own jobs, and the groups take turns. */
export function groupClaimCases(kind: StoreKind<unknown>): void {
  describe("claims across groups", () => {
    it("a job held back by groupConcurrency stays available with attempt 0 while its group is full", () =>
      withDatabase(kind, async (db, track) => {
        const jobs = defineJobs({
          callCrm: job<Call>({ queue: "crm", group: (p) => p.tenant, groupConcurrency: 1 }),
        });
        const release = gate();
        const started: string[] = [];
        const { errand } = errandOn(db, {
          jobs,
          mode: "manual",
          queues: { crm: { concurrency: 4 } },
          handlers: {
            callCrm: async (p) => {
              started.push(`${p.tenant}/${p.contact}`);
              await release.wait;
            },
          },
        });
        track(errand);
        const first = await errand.enqueue("callCrm", { tenant: "t1", contact: "first" });
        const second = await errand.enqueue("callCrm", { tenant: "t1", contact: "second" });
        await errand.enqueue("callCrm", { tenant: "t2", contact: "other" });
        const stepping = errand.step();
        // One claim took what it could: one job of t1 (its limit) and t2's job (another group).
        await eventually(() => started.length === 2, "two jobs to start");
        assert.deepEqual(started.sort(), ["t1/first", "t2/other"]);
        assert.equal((await errand.get(first.id))?.state, "running");
        const held = (await errand.get(second.id))!;
        assert.equal(held.state, "available");
        assert.equal(held.attempt, 0);
        assert.deepEqual(held.runs, []);
        release.open();
        await stepping; // the next round claims the second once the first gave its slot back
        const done = (await errand.get(second.id))!;
        assert.equal(done.state, "completed");
        assert.equal(done.attempt, 1);
      }));

    it("fair: a group that enqueues after another's backlog is not held up behind it", () =>
      withDatabase(kind, async (db, track) => {
        const { errand, started } = syncByAccount(db);
        track(errand);
        await errand.enqueueMany(
          Array.from({ length: 300 }, (_, n) => ({ kind: "sync" as const, payload: { account: "A", n } })),
        );
        await errand.enqueueMany(
          Array.from({ length: 10 }, (_, n) => ({ kind: "sync" as const, payload: { account: "B", n } })),
        );
        await errand.step();
        assert.equal(started.length, 310);
        const aBeforeLastB = started.slice(0, started.lastIndexOf("B")).filter((a) => a === "A").length;
        assert.ok(
          aBeforeLastB < 40,
          `${aBeforeLastB} of A's jobs started before B's last; all of B's start before A's 40th`,
        );
      }));

    it("priorities still order jobs within a group", () =>
      withDatabase(kind, async (db, track) => {
        const jobs = defineJobs({ sync: job<{ account: string; n: number }>({ group: (p) => p.account }) });
        const started: { account: string; n: number }[] = [];
        const { errand } = errandOn(db, {
          jobs,
          mode: "manual",
          queues: { default: { concurrency: 1 } },
          handlers: { sync: (p) => void started.push(p) },
        });
        track(errand);
        // n is each job's priority; lower runs first.
        for (const [account, n] of [["a", 3], ["b", 2], ["a", 1], ["b", 3], ["a", 2], ["b", 1]] as const) {
          await errand.enqueue("sync", { account, n }, { priority: n });
        }
        await errand.step();
        const order = (account: string) => started.filter((s) => s.account === account).map((s) => s.n);
        assert.deepEqual(order("a"), [1, 2, 3]);
        assert.deepEqual(order("b"), [1, 2, 3]);
      }));

    it("a group's jobs run by priority, then run time, then enqueue order, however they were enqueued", () =>
      withDatabase(kind, async (db, track) => {
        const jobs = defineJobs({
          sync: job<{ account: string; n: number }>({ group: (p) => p.account, groupConcurrency: 1 }),
        });
        const clock = new FakeClock();
        const started: { account: string; n: number }[] = [];
        const { errand } = errandOn(db, {
          jobs,
          clock,
          mode: "manual",
          queues: { default: { concurrency: 2 } },
          handlers: { sync: (p) => void started.push(p) },
        });
        track(errand);
        // A fixed pseudo-random mix of single and bulk enqueues, priorities and run times.
        let seed = 7;
        const random = (n: number) => {
          seed = (seed * 1103515245 + 12345) % 2147483648;
          return (seed >> 8) % n;
        };
        const enqueued: { account: string; n: number; priority: number; runAt: number }[] = [];
        while (enqueued.length < 60) {
          const batch = Array.from({ length: 1 + random(4) }, (_, k) => ({
            account: "abc"[random(3)],
            n: enqueued.length + k,
            priority: random(3),
            runAt: clock.now() + 1000 * random(3),
          }));
          const items = batch.map((b) => ({
            kind: "sync" as const,
            payload: { account: b.account, n: b.n },
            options: { priority: b.priority, runAt: new Date(b.runAt) },
          }));
          if (items.length === 1) await errand.enqueue("sync", items[0].payload, items[0].options);
          else await errand.enqueueMany(items);
          enqueued.push(...batch);
        }
        clock.advance(3_000);
        await errand.step();
        assert.equal(started.length, enqueued.length);
        for (const account of "abc") {
          const expected = enqueued.filter((e) => e.account === account)
            .sort((x, y) => x.priority - y.priority || x.runAt - y.runAt || x.n - y.n).map((e) => e.n);
          assert.deepEqual(started.filter((s) => s.account === account).map((s) => s.n), expected, account);
        }
      }));

    it("groups that may start nothing, however many jobs they hold ahead, do not hold up a group after them", () =>
      withDatabase(kind, async (db, track) => {
        const { errand, started } = syncByAccount(db);
        track(errand);
        const paused = Array.from({ length: 40 }, (_, k) => `paused-${k}`);
        await errand.enqueueMany(
          paused.flatMap((account) => [0, 1, 2].map((n) => ({ kind: "sync" as const, payload: { account, n } }))),
        );
        for (const account of paused) await errand.pauseGroup("sync", account, "1h");
        // "tail" comes after every paused group in key order, where a claim visits groups.
        await errand.enqueueMany([0, 1, 2].map((n) => ({ kind: "sync" as const, payload: { account: "tail", n } })));
        await errand.step();
        assert.deepEqual(started, ["tail", "tail", "tail"]);
      }));
  });
}

/** Paused groups: none of their jobs starts before the pause ends, and every one starts after it. */
export function pausedGroupCases(kind: StoreKind<unknown>): void {
  describe("paused groups", () => {
    it("job.pauseGroup(d): the job runs again after d, attempt not counted; its group waits, others run", () =>
      withDatabase(kind, async (db, track) => {
        const jobs = defineJobs({ callCrm: job<Call>({ queue: "crm", group: (p) => p.tenant }) });
        const clock = new FakeClock();
        const started: { tenant: string; contact: string; at: number; attempt: number }[] = [];
        let answered429 = false;
        const { errand } = errandOn(db, {
          jobs,
          clock,
          mode: "manual",
          queues: { crm: { concurrency: 8 } },
          handlers: {
            callCrm: (p, j) => {
              started.push({ ...p, at: clock.now(), attempt: j.attempt });
              // The CRM answers 429 with Retry-After: 30 to the first call.
              if (p.contact === "first" && !answered429) {
                answered429 = true;
                return j.pauseGroup("30s");
              }
            },
          },
        });
        track(errand);
        const first = await errand.enqueue("callCrm", { tenant: "t1", contact: "first" });
        await errand.step();
        const pausedUntil = clock.now() + 30_000;
        const paused = (await errand.get(first.id))!;
        assert.equal(paused.attempt, 0, "a paused attempt is not counted");
        assert.deepEqual(paused.runs.map((r) => r.outcome), ["snoozed"]);
        const t1 = (await errand.groups("crm")).find((g) => g.kind === "callCrm" && g.group === "t1");
        assert.deepEqual(t1?.pausedUntil, new Date(pausedUntil));

        const later = await errand.enqueueMany(
          ["t1", "t2"].flatMap((tenant) =>
            Array.from({ length: 3 }, (_, n) => ({ kind: "callCrm" as const, payload: { tenant, contact: `c${n}` } }))
          ),
        );
        await errand.step();
        assert.deepEqual(started.slice(1).map((s) => s.tenant), ["t2", "t2", "t2"], "other groups keep running");
        for (const { id } of later.slice(0, 3)) {
          const held = (await errand.get(id))!;
          assert.equal(held.state, "available");
          assert.equal(held.attempt, 0);
        }
        clock.advance(29_999);
        await errand.step();
        assert.equal(started.length, 4, "no job of the group starts before the pause ends");

        clock.advance(1);
        await errand.step();
        assert.equal((await errand.counts()).byState.completed, 7);
        const t1Starts = started.filter((s) => s.tenant === "t1");
        assert.equal(t1Starts.length, 5);
        for (const s of t1Starts.slice(1)) assert.ok(s.at >= pausedUntil, `${s.contact} started during the pause`);
        // The handler saw attempt 1 both times: the paused run did not count.
        assert.deepEqual(t1Starts.filter((s) => s.contact === "first").map((s) => s.attempt), [1, 1]);
        const done = (await errand.get(first.id))!;
        assert.equal(done.attempt, 1);
        assert.deepEqual(done.runs.map((r) => r.outcome), ["snoozed", "completed"]);
      }));

    it("errand.pauseGroup / resumeGroup, and groups(queue) listing running, queued and pausedUntil", () =>
      withDatabase(kind, async (db, track) => {
        const jobs = defineJobs({
          callCrm: job<Call>({ queue: "crm", group: (p) => p.tenant, groupConcurrency: 1 }),
        });
        const release = gate();
        let running = 0;
        const { errand, clock } = errandOn(db, {
          jobs,
          mode: "manual",
          queues: { crm: { concurrency: 4 } },
          handlers: {
            callCrm: async () => {
              running++;
              await release.wait;
            },
          },
        });
        track(errand);
        const enqueued = await errand.enqueueMany([
          ...Array.from(
            { length: 3 },
            (_, n) => ({ kind: "callCrm" as const, payload: { tenant: "t1", contact: `${n}` } }),
          ),
          ...Array.from(
            { length: 2 },
            (_, n) => ({ kind: "callCrm" as const, payload: { tenant: "t2", contact: `${n}` } }),
          ),
        ]);
        const listed = async () =>
          (await errand.groups("crm"))
            .map(({ kind, group, running, queued, pausedUntil }) => ({ kind, group, running, queued, pausedUntil }))
            .sort((x, y) => x.group.localeCompare(y.group));
        assert.deepEqual(await listed(), [
          { kind: "callCrm", group: "t1", running: 0, queued: 3, pausedUntil: null },
          { kind: "callCrm", group: "t2", running: 0, queued: 2, pausedUntil: null },
        ]);

        const stepping = errand.step();
        await eventually(() => running === 2, "one job of each group to start");
        assert.deepEqual(await listed(), [
          { kind: "callCrm", group: "t1", running: 1, queued: 2, pausedUntil: null },
          { kind: "callCrm", group: "t2", running: 1, queued: 1, pausedUntil: null },
        ]);

        await errand.pauseGroup("callCrm", "t2", "10m");
        const pausedUntil = new Date(clock.now() + 600_000);
        assert.deepEqual((await listed()).find((g) => g.group === "t2"), {
          kind: "callCrm",
          group: "t2",
          running: 1,
          queued: 1,
          pausedUntil,
        });
        release.open();
        await stepping;
        // t1 ran to the end; t2's running job finished, and its queued one waits for the pause.
        for (const { id } of enqueued.slice(0, 4)) assert.equal((await errand.get(id))?.state, "completed");
        const held = (await errand.get(enqueued[4].id))!;
        assert.equal(held.state, "available");
        assert.equal(held.attempt, 0);
        assert.deepEqual((await listed()).find((g) => g.group === "t2"), {
          kind: "callCrm",
          group: "t2",
          running: 0,
          queued: 1,
          pausedUntil,
        });

        await errand.resumeGroup("callCrm", "t2");
        assert.equal((await listed()).find((g) => g.group === "t2")?.pausedUntil, null);
        await errand.step();
        assert.equal((await errand.get(enqueued[4].id))?.state, "completed");
      }));

    it("a number group is listed as its text, paused by its number, and the pause expires by itself", () =>
      withDatabase(kind, async (db, track) => {
        const jobs = defineJobs({ resize: job<{ shard: number }>({ group: (p) => p.shard }) });
        let ran = 0;
        const { errand, clock } = errandOn(db, { jobs, mode: "manual", handlers: { resize: () => void ran++ } });
        track(errand);
        const { id } = await errand.enqueue("resize", { shard: 7 });
        await errand.pauseGroup("resize", 7, "1m");
        const [shard] = await errand.groups("default");
        assert.equal(shard.kind, "resize");
        assert.equal(shard.group, "7");
        assert.equal(shard.queued, 1);
        assert.deepEqual(shard.pausedUntil, new Date(clock.now() + 60_000));
        await errand.step();
        assert.equal(ran, 0);
        clock.advance(60_000);
        await errand.step();
        assert.equal(ran, 1);
        assert.equal((await errand.get(id))?.state, "completed");
      }));

    it("job.pauseGroup() in a job without a group throws in the handler", () =>
      withDatabase(kind, async (db, track) => {
        const jobs = defineJobs({ plain: job<{ n: number }>({ attempts: 1 }) });
        const { errand } = errandOn(db, {
          jobs,
          mode: "manual",
          handlers: { plain: (_p, j) => j.pauseGroup("30s") },
        });
        track(errand);
        const { id } = await errand.enqueue("plain", { n: 1 });
        await errand.step();
        const failed = (await errand.get(id))!;
        assert.equal(failed.state, "failed");
        assert.match(failed.runs[0].error?.name ?? "", /^(StateError|ValidationError)$/);
      }));
  });
}

/** Jobs held back by a paused or a full group: counted per queue and reported by the metrics. */
export function heldBackCases(kind: StoreKind<unknown>): void {
  describe("jobs held back", () => {
    it("groupHeld counts, per queue, the due jobs of paused groups and of full groups; the metrics report them", () =>
      withDatabase(kind, async (db, track) => {
        const jobs = defineJobs({
          callCrm: job<Call>({ queue: "crm", group: (p) => p.tenant, groupConcurrency: 1 }),
          report: job<{ n: number }>({ queue: "crm" }),
          sync: job<{ account: string }>({ group: (p) => p.account }),
        });
        const release = gate();
        let running = 0;
        const { errand, clock } = errandOn(db, {
          jobs,
          mode: "manual",
          queues: { crm: { concurrency: 4, globalConcurrency: 2 } },
          handlers: {
            callCrm: async () => {
              running++;
              await release.wait;
            },
            report: () => {},
            sync: () => {},
          },
        });
        track(errand);
        const call = (tenant: string, contact: string) => ({
          kind: "callCrm" as const,
          payload: { tenant, contact },
        });
        await errand.enqueueMany([
          call("t1", "a"),
          call("t1", "b"),
          call("t1", "c"),
          call("t2", "a"),
          call("t2", "b"),
        ]);
        await errand.enqueue("callCrm", { tenant: "t3", contact: "later" }, { delay: "1h" }); // not due: not held
        const sync = { kind: "sync" as const, payload: { account: "a" } };
        await errand.enqueueMany([sync, sync]);
        await errand.pauseGroup("sync", "a", "10m");

        const stepping = errand.step();
        await eventually(() => running === 2, "one job of t1 and one of t2 to start");
        await errand.pauseGroup("callCrm", "t2", "10m");
        // Enqueued while the queue runs its globalConcurrency: held back by it.
        await errand.enqueueMany([{ kind: "report", payload: { n: 1 } }, { kind: "report", payload: { n: 2 } }]);

        const held = await db.store().groupHeld({
          now: clock.now(),
          kinds: [{ kind: "callCrm", groupConcurrency: 1 }],
        });
        assert.deepEqual(held, [
          // t1 runs its one allowed job with two due; t2's due job waits for its pause (and its running one).
          { queue: "crm", paused: 1, full: 2 },
          { queue: "default", paused: 2, full: 0 },
        ]);
        // Without a limit for the kind, no group is ever full.
        assert.deepEqual(await db.store().groupHeld({ now: clock.now(), kinds: [] }), [
          { queue: "crm", paused: 1, full: 0 },
          { queue: "default", paused: 2, full: 0 },
        ]);
        // Once the pauses end, their groups hold nothing back.
        const later = await db.store().groupHeld({ now: clock.now() + 600_001, kinds: [] });
        assert.deepEqual(later.map((q) => [q.queue, q.paused]), [["crm", 0], ["default", 0]]);

        const metrics = await errand.metrics();
        const heldBack = (queue: string, limit: string) =>
          Number(
            new RegExp(`^errand_jobs_held_back\\{queue="${queue}",limit="${limit}"\\} (\\d+)$`, "m").exec(metrics)
              ?.[1],
          );
        assert.equal(heldBack("crm", "group_paused"), 1);
        assert.equal(heldBack("crm", "group_concurrency"), 2);
        assert.equal(heldBack("crm", "global_concurrency"), 2, "the two report jobs");
        assert.equal(heldBack("default", "group_paused"), 2);
        assert.equal(heldBack("default", "group_concurrency"), 0);
        assert.doesNotMatch(metrics, /errand_jobs_held_back\{queue="default",limit="global_concurrency"\}/);
        assert.doesNotMatch(metrics, /"t[12]"/, "no group value is a label");

        release.open();
        await stepping;
      }));
  });
}
