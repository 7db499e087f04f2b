import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { createErrand, defineJobs, type Duration, job, systemClock, ValidationError } from "../../mod.ts";
import { FakeClock } from "../../src/testing.ts";
import type { StoreKind, TestDatabase } from "../support/stores.ts";
import { eventually } from "../support/wait.ts";
import { errandOn, withDatabase } from "./harness.ts";

/** A CRM call of one tenant, as in the README's flow-control example. */
type Call = { tenant: string; contact: string };

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Counts the handlers running at once, per key (a group, or a queue), and
 * keeps the highest count seen. A handler runs inside its job's claim, so
 * the store held at least this many jobs running at that instant.
 */
function gauge() {
  const now = new Map<string, number>();
  const peak = new Map<string, number>();
  let started = 0;
  return {
    peak,
    get started() {
      return started;
    },
    enter(key: string) {
      started++;
      const n = (now.get(key) ?? 0) + 1;
      now.set(key, n);
      peak.set(key, Math.max(peak.get(key) ?? 0, n));
    },
    leave(key: string) {
      now.set(key, now.get(key)! - 1);
    },
  };
}

/** The most starts that fall in one fixed window of `periodMs` (windows start at multiples of it since the epoch). */
function mostStartsPerWindow(starts: readonly Date[], periodMs: number): number {
  const perWindow = new Map<number, number>();
  for (const at of starts) {
    const window = Math.floor(at.getTime() / periodMs);
    perWindow.set(window, (perWindow.get(window) ?? 0) + 1);
  }
  return Math.max(0, ...perWindow.values());
}

/** A promise the test opens by hand, for handlers that must stay running while it looks. */
function gate(): { wait: Promise<void>; open(): void } {
  let open!: () => void;
  const wait = new Promise<void>((resolve) => (open = resolve));
  return { wait, open };
}

/**
 * A manual instance that runs `sync` jobs grouped by account, 4 at a time;
 * `started` lists the accounts of the jobs it started, in order.
 */
function syncByAccount<TTx>(db: TestDatabase<TTx>) {
  const jobs = defineJobs({ sync: job<{ account: string; n: number }>({ group: (p) => p.account }) });
  const started: string[] = [];
  const { errand } = errandOn(db, {
    jobs,
    mode: "manual",
    queues: { default: { concurrency: 4 } },
    handlers: { sync: (p) => void started.push(p.account) },
  });
  return { errand, started };
}

/**
 * Flow control (issue 23): per-group and per-queue concurrency, rate limits,
 * fair claims across groups, and paused groups, all enforced by the store at
 * claim time.
 */
export function flowControlCases(kind: StoreKind<unknown>): void {
  describe("flow control", () => {
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

    describe("bad input", () => {
      it("job() refuses bad limits and combinations with a ValidationError", () => {
        const group = (p: Call) => p.tenant;
        const refused: [string, () => unknown][] = [
          ["groupConcurrency 0", () => job<Call>({ group, groupConcurrency: 0 })],
          ["groupConcurrency -1", () => job<Call>({ group, groupConcurrency: -1 })],
          ["groupConcurrency 1.5", () => job<Call>({ group, groupConcurrency: 1.5 })],
          ["rateLimit.limit 0", () => job<Call>({ rateLimit: { limit: 0, period: "1s" } })],
          ["rateLimit.limit -2", () => job<Call>({ rateLimit: { limit: -2, period: "1s" } })],
          ["rateLimit.limit 2.5", () => job<Call>({ rateLimit: { limit: 2.5, period: "1s" } })],
          ["period 'soon'", () => job<Call>({ rateLimit: { limit: 1, period: "soon" as Duration } })],
          ["period 0", () => job<Call>({ rateLimit: { limit: 1, period: 0 } })],
          ["period over a day", () => job<Call>({ rateLimit: { limit: 1, period: "2d" } })],
          ["groupConcurrency without group", () => job<Call>({ groupConcurrency: 2 })],
          ["perGroup without group", () => job<Call>({ rateLimit: { limit: 1, period: "1s", perGroup: true } })],
          ["group with topic", () => job<Call>({ topic: "calls", partitionKey: group, group })],
        ];
        for (const [what, define] of refused) {
          assert.throws(define, (err: Error) => err instanceof ValidationError, what);
        }
      });

      it("createErrand refuses bad queue limits with a ValidationError", () =>
        withDatabase(kind, (db) => {
          const jobs = defineJobs({ callCrm: job<Call>({ queue: "crm" }) });
          const refused = [
            { globalConcurrency: 0 },
            { globalConcurrency: -1 },
            { globalConcurrency: 1.5 },
            { rateLimit: { limit: 0, period: "1s" as const } },
            { rateLimit: { limit: 5, period: "soon" as Duration } },
          ];
          for (const crm of refused) {
            assert.throws(
              () => createErrand({ jobs, store: db.store(), queues: { crm } }),
              (err: Error) => err instanceof ValidationError,
              JSON.stringify(crm),
            );
          }
          return Promise.resolve();
        }));

      it("a group function that throws or returns no usable value fails enqueue with nothing written", () =>
        withDatabase(kind, async (db, track) => {
          /** What the group function returns for each case. */
          const groups: Record<string, unknown> = {
            object: { id: 1 },
            empty: "",
            nan: NaN,
            infinite: Infinity,
            null: null,
            boolean: true,
            tooLong: "x".repeat(201),
            nul: "a\u0000b",
            unpairedSurrogate: "\ud800",
            longest: "x".repeat(200),
          };
          const jobs = defineJobs({
            callCrm: job<{ case: string }>({ group: (p) => groups[p.case] as string }),
            broken: job<{ n: number }>({
              group: () => {
                throw new Error("no tenant in this payload");
              },
            }),
          });
          const { errand } = errandOn(db, { jobs, mode: "enqueue" });
          track(errand);
          const isValidationError = (err: Error) => err instanceof ValidationError;
          for (const c of Object.keys(groups).filter((c) => c !== "longest")) {
            await assert.rejects(errand.enqueue("callCrm", { case: c }), isValidationError, c);
          }
          await assert.rejects(errand.enqueue("broken", { n: 1 }), isValidationError, "a group function that throws");
          await assert.rejects(
            errand.enqueueMany([
              { kind: "callCrm", payload: { case: "longest" } },
              { kind: "callCrm", payload: { case: "empty" } },
            ]),
            isValidationError,
            "a batch with one bad item",
          );
          assert.equal((await errand.list()).jobs.length, 0);
          assert.equal((await errand.counts()).byState.available, 0);
          // 200 characters is the longest group value.
          assert.equal((await errand.enqueue("callCrm", { case: "longest" })).inserted, true);
        }));
    });

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
  });
}
