import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { defineJobs, type Errand, job, NotFoundError, ValidationError } from "../../mod.ts";
import { FakeClock } from "../../src/testing.ts";
import type { StoreKind } from "../support/stores.ts";
import { eventually } from "../support/wait.ts";
import { errandOn, eventuallyOnClock, withDatabase } from "./harness.ts";

const jobs = defineJobs({ report: job<{ name: string }>() });

/** 2026-01-01T00:00:00Z, where every fake clock starts unless told otherwise. */
const T0 = Date.UTC(2026, 0, 1);
const MINUTE = 60_000;

/** The occurrence jobs of `name` as `runAt state`, oldest first. */
async function occurrences(errand: Errand<typeof jobs, unknown>, name: string): Promise<string[]> {
  const { jobs: found } = await errand.list({ kind: "report", limit: 1000 });
  return found
    .filter((j) => (j.payload as { name: string }).name === name)
    .sort((a, b) => a.runAt.getTime() - b.runAt.getTime())
    .map((j) => `${j.runAt.toISOString().slice(11, 19)} ${j.state}`);
}

/** `n` completed occurrences 10 s apart after T0, as {@link occurrences} lists them. */
function completedEveryTenSeconds(n: number): string[] {
  return Array.from(
    { length: n },
    (_, i) => `${new Date(T0 + (i + 1) * 10_000).toISOString().slice(11, 19)} completed`,
  );
}

/** Recurring jobs: upsert on every start, firing by one leader, time zones, catch-up. */
export function scheduleCases(kind: StoreKind<unknown>): void {
  describe("recurring jobs", () => {
    it("schedule() with the same definition on 10 restarts keeps one definition and enqueues nothing extra", () =>
      withDatabase(kind, async (db, track) => {
        const results: (string | null)[] = [];
        for (let i = 0; i < 10; i++) {
          const { errand } = errandOn(db, { jobs, handlers: { report: () => {} } });
          await errand.start();
          results.push(await errand.schedule("hourly", "report", { name: "h" }, "0 * * * *"));
          await errand.shutdown();
        }
        assert.equal(typeof results[0], "string", "the first call enqueues the next occurrence");
        assert.deepEqual(results.slice(1), Array(9).fill(null));
        const observer = track(errandOn(db, { jobs, mode: "enqueue" }).errand);
        const [schedule, ...others] = await observer.schedules();
        assert.equal(others.length, 0);
        assert.equal(schedule.id, "hourly");
        assert.equal(schedule.cron, "0 * * * *");
        assert.equal(schedule.nextRunAt.toISOString(), "2026-01-01T01:00:00.000Z");
        assert.deepEqual(await occurrences(observer, "h"), ["01:00:00 scheduled"]);
        assert.equal((await observer.get(results[0]!))!.runAt.toISOString(), "2026-01-01T01:00:00.000Z");
      }));

    it("a changed cron or payload replaces the definition and its pending occurrence; unschedule removes it", () =>
      withDatabase(kind, async (db, track) => {
        const { errand } = errandOn(db, { jobs, mode: "enqueue" });
        track(errand);
        const first = await errand.schedule("digest", "report", { name: "d" }, "0 * * * *");
        const second = await errand.schedule("digest", "report", { name: "d" }, "*/30 * * * *");
        assert.ok(first && second && first !== second);
        assert.equal((await errand.get(first))!.state, "cancelled", "the old definition's occurrence is cancelled");
        assert.equal((await errand.get(second))!.runAt.toISOString(), "2026-01-01T00:30:00.000Z");
        const [schedule] = await errand.schedules();
        assert.equal(schedule.cron, "*/30 * * * *");
        assert.equal(schedule.nextRunAt.toISOString(), "2026-01-01T00:30:00.000Z");

        const third = await errand.schedule("digest", "report", { name: "d2" }, "*/30 * * * *");
        assert.ok(third && third !== second, "a new payload is a change");
        assert.deepEqual((await errand.get(third))!.payload, { name: "d2" });
        assert.equal((await errand.get(second))!.state, "cancelled");
        assert.equal(await errand.schedule("digest", "report", { name: "d2" }, "*/30 * * * *"), null);
        assert.equal(
          typeof await errand.schedule("digest", "report", { name: "d2" }, "*/30 * * * *", { priority: 5 }),
          "string",
          "so is a new option",
        );

        assert.equal(await errand.unschedule("digest"), true);
        assert.equal(await errand.unschedule("digest"), false);
        assert.deepEqual(await errand.schedules(), []);
        assert.deepEqual(await occurrences(errand, "d2"), ["00:30:00 cancelled", "00:30:00 cancelled"]);
      }));

    it("fires 6-field and 5-field expressions once per occurrence, on the leader's clock", () =>
      withDatabase(kind, async (db, track) => {
        const { errand, clock } = errandOn(db, { jobs, handlers: { report: () => {} } });
        track(errand);
        await errand.start();
        await errand.schedule("seconds", "report", { name: "s" }, "*/10 * * * * *");
        await errand.schedule("minutes", "report", { name: "m" }, "* * * * *");
        const last = async (id: string) =>
          (await errand.schedules()).find((s) => s.id === id)!.lastRunAt?.toISOString().slice(11, 19);
        for (let i = 1; i <= 6; i++) {
          clock.advance(10_000);
          // The leader's next tick is set on its clock after it fired: move time on only then.
          const expected = new Date(T0 + i * 10_000).toISOString().slice(11, 19);
          await eventuallyOnClock(clock, async () => (await last("seconds")) === expected, `occurrence ${i}`);
        }
        await eventually(async () => {
          const s = await occurrences(errand, "s");
          return s.every((o) => o.endsWith("completed")) && s;
        }, "the occurrences to run");
        assert.deepEqual(await occurrences(errand, "s"), completedEveryTenSeconds(6));
        await eventually(async () => (await occurrences(errand, "m")).join() === "00:01:00 completed", "minutes");
        const seconds = (await errand.schedules()).find((s) => s.id === "seconds")!;
        assert.equal(seconds.lastRunAt?.toISOString(), "2026-01-01T00:01:00.000Z");
        assert.equal(seconds.nextRunAt.toISOString(), "2026-01-01T00:01:10.000Z");
      }));

    it("reads the cron in its time zone across a daylight-saving change", () =>
      withDatabase(kind, async (db, track) => {
        // Berlin leaves summer time (UTC+2) for UTC+1 on 2026-10-25.
        const clock = new FakeClock(Date.UTC(2026, 9, 24));
        const { errand } = errandOn(db, { jobs, clock, handlers: { report: () => {} } });
        track(errand);
        await errand.start();
        await errand.schedule("morning", "report", { name: "b" }, "0 9 * * *", { timezone: "Europe/Berlin" });
        const next = async () => (await errand.schedules())[0].nextRunAt.toISOString();
        assert.equal(await next(), "2026-10-24T07:00:00.000Z");
        const last = async () => (await errand.schedules())[0].lastRunAt?.toISOString();
        clock.advance(7 * 60 * MINUTE);
        await eventuallyOnClock(clock, async () => (await last()) === "2026-10-24T07:00:00.000Z", "the first morning");
        assert.equal(await next(), "2026-10-25T08:00:00.000Z", "the next morning is an hour later in UTC");
        clock.advance(25 * 60 * MINUTE);
        await eventuallyOnClock(clock, async () => (await last()) === "2026-10-25T08:00:00.000Z", "the second morning");
        assert.equal(await next(), "2026-10-26T08:00:00.000Z");
      }));

    it("an interval fires exactly `every` apart from its first occurrence, however late a firing; upserts keep its phase", () =>
      withDatabase(kind, async (db, track) => {
        // Thirteen seconds past the minute: occurrences keep that phase, they are not rounded to a cron's minutes.
        const anchor = T0 + 13_000;
        const clock = new FakeClock(anchor);
        const { errand } = errandOn(db, { jobs, clock, handlers: { report: () => {} } });
        track(errand);
        await errand.start();
        const first = await errand.schedule("poll", "report", { name: "p" }, { every: "7m" });
        assert.equal(typeof first, "string");
        assert.equal(await errand.schedule("poll", "report", { name: "p" }, { every: 7 * MINUTE }), null);
        assert.equal(await errand.schedule("poll", "report", { name: "p" }, "@every 420s"), null, "the same interval");
        const poll = async () => (await errand.schedules())[0];
        const listed = await poll();
        assert.deepEqual([listed.cron, listed.every, listed.timezone], ["@every 7m", 7 * MINUTE, "UTC"]);
        assert.equal(listed.nextRunAt.getTime(), anchor + 7 * MINUTE);
        assert.equal((await errand.get(first!))!.runAt.getTime(), anchor + 7 * MINUTE);

        // The leader fires the first occurrence 40 s late (no leader until then): the next stays at 14 minutes.
        clock.advance(7 * MINUTE + 40_000);
        await eventuallyOnClock(clock, async () => (await poll()).lastRunAt?.getTime() === anchor + 7 * MINUTE, "7m");
        assert.equal((await poll()).nextRunAt.getTime(), anchor + 14 * MINUTE, "not 7 minutes after the firing");
        // Its run ends before the clock jumps on: a run caught by a jump of minutes would outlive its lease.
        await eventuallyOnClock(clock, async () => (await occurrences(errand, "p"))[0] === "00:07:13 completed", "run");
        clock.set(anchor + 14 * MINUTE);
        await eventuallyOnClock(clock, async () => (await poll()).lastRunAt?.getTime() === anchor + 14 * MINUTE, "14m");
        assert.equal((await poll()).nextRunAt.getTime(), anchor + 21 * MINUTE);

        // A new payload with the same interval keeps the phase; a new interval counts from when it is saved.
        const changed = await errand.schedule("poll", "report", { name: "p2" }, { every: "7m" });
        assert.equal((await errand.get(changed!))!.runAt.getTime(), anchor + 21 * MINUTE);
        assert.equal((await poll()).nextRunAt.getTime(), anchor + 21 * MINUTE);
        const savedAt = clock.now();
        await errand.schedule("poll", "report", { name: "p2" }, { every: "5m" });
        assert.equal((await poll()).nextRunAt.getTime(), savedAt + 5 * MINUTE);
        assert.deepEqual((await poll()).every, 5 * MINUTE);
        await eventually(async () => (await occurrences(errand, "p")).every((o) => o.endsWith("completed")), "runs");
        assert.deepEqual(await occurrences(errand, "p"), ["00:07:13 completed", "00:14:13 completed"]);
      }));

    it("two instances register the same interval and hand the leadership over: each occurrence fires once", () =>
      withDatabase(kind, async (db, track) => {
        const clocks = [new FakeClock(T0), new FakeClock(T0)];
        const [a, b] = clocks.map((clock) => errandOn(db, { jobs, clock, handlers: { report: () => {} } }).errand);
        track(a);
        track(b);
        await a.start();
        await b.start();
        assert.equal(typeof await a.schedule("tick", "report", { name: "t" }, { every: "10s", catchUp: 5 }), "string");
        assert.equal(await b.schedule("tick", "report", { name: "t" }, { every: "10s", catchUp: 5 }), null);
        const fired = async (at: number) => (await b.schedules())[0].lastRunAt?.getTime() === at;
        // Both clocks move together; each try nudges both so the leader's pending tick comes due.
        const advance = async (ms: number, at: number, what: string) => {
          for (const clock of clocks) clock.advance(ms);
          await eventually(async () => (await fired(at)) || (clocks.forEach((c) => c.advance(50)), false), what);
        };
        for (let i = 1; i <= 3; i++) await advance(10_000 - (clocks[1].now() - T0) % 10_000, T0 + i * 10_000, `${i}`);
        await a.shutdown(); // gives the leadership up: b takes it at its next look
        for (let i = 4; i <= 6; i++) await advance(10_000 - (clocks[1].now() - T0) % 10_000, T0 + i * 10_000, `${i}`);
        await eventually(async () => (await occurrences(b, "t")).every((o) => o.endsWith("completed")), "the runs");
        assert.deepEqual(await occurrences(b, "t"), completedEveryTenSeconds(6));
      }));

    it("after occurrences were missed, a leader enqueues only the latest catchUp of them", () =>
      withDatabase(kind, async (db, track) => {
        const { errand: registrar } = errandOn(db, { jobs, mode: "enqueue" });
        track(registrar);
        await registrar.schedule("one", "report", { name: "one" }, "* * * * *");
        await registrar.schedule("three", "report", { name: "three" }, "* * * * *", { catchUp: 3 });
        // No leader ran for ten and a half minutes.
        const clock = new FakeClock(T0 + 10.5 * MINUTE);
        const { errand } = errandOn(db, { jobs, clock, handlers: { report: () => {} } });
        track(errand);
        await errand.start();
        await eventually(async () => (await occurrences(registrar, "three")).length === 4, "the catch-up");
        await eventually(async () => (await occurrences(registrar, "one")).length === 2, "the catch-up");
        // The first occurrence was enqueued in advance by schedule(); then the latest missed ones.
        const runAts = async (name: string) => (await occurrences(registrar, name)).map((o) => o.slice(0, 8));
        assert.deepEqual(await runAts("one"), ["00:01:00", "00:10:00"]);
        assert.deepEqual(await runAts("three"), ["00:01:00", "00:08:00", "00:09:00", "00:10:00"]);
        const { jobs: all } = await registrar.list({ kind: "report", limit: 100 });
        assert.equal(all.length, 6);
        // The schedule advances right after its occurrences are written.
        const three = await eventually(async () => {
          const s = (await registrar.schedules()).find((s) => s.id === "three")!;
          return s.lastRunAt !== null && s;
        }, "the schedule to advance");
        assert.equal(three.lastRunAt?.toISOString(), "2026-01-01T00:10:00.000Z");
        assert.equal(three.nextRunAt.toISOString(), "2026-01-01T00:11:00.000Z");
      }));

    it("sequential: true runs occurrences one at a time, with an occurrence's continuations before the next", () =>
      withDatabase(kind, async (db, track) => {
        const ran: string[] = [];
        let running = 0;
        let overlap = 0;
        let release: () => void = () => {};
        const { errand, clock } = errandOn(db, {
          jobs,
          queues: { default: { concurrency: 4 } },
          // The last wait below runs the clock some 20 times faster than real time: a lease of the default 30 s
          // could lapse between two renewals of the slow run on a busy machine, and its rescue is not this test's.
          lease: "1h",
          handlers: {
            report: async (p, job) => {
              running++;
              overlap = Math.max(overlap, running);
              ran.push(`start ${p.name}`);
              if (p.name === "slow") {
                await job.enqueueAfter(job.id, "report", { name: "follow-up" });
                await new Promise<void>((r) => (release = r));
              }
              running--;
            },
          },
        });
        track(errand);
        await errand.start();
        await errand.schedule("slow", "report", { name: "slow" }, "*/10 * * * * *", { sequential: true });
        const fired = async (second: number) =>
          (await errand.schedules())[0].lastRunAt?.getTime() === T0 + second * 1000;
        clock.advance(10_000);
        await eventuallyOnClock(clock, async () => ran.length === 1 && await fired(10), "the first occurrence");
        // The next occurrence is due and enqueued while the first still runs: it waits.
        clock.advance(10_000);
        await eventuallyOnClock(clock, () => fired(20), "the second occurrence");
        await new Promise((r) => setTimeout(r, 50));
        assert.deepEqual(ran, ["start slow"]);
        release();
        // Maintenance's sweep (every second of the clock) releases the follow-up should the immediate release miss.
        await eventuallyOnClock(clock, () => ran.length === 3, "the follow-up, then the second occurrence", 100);
        release();
        assert.deepEqual(ran, ["start slow", "start follow-up", "start slow"]);
        assert.equal(overlap, 1, "no two ran at once");
      }));

    it("a worker that has never seen a partition finds a sequential schedule registered elsewhere", () =>
      withDatabase(kind, async (db, track) => {
        // Another instance leads (and runs nothing); the worker below neither leads nor has topics.
        const { errand: leader } = errandOn(db, { jobs, leaderLease: "1h" });
        track(leader);
        await leader.start();
        const { errand: registrar } = errandOn(db, { jobs, mode: "enqueue" });
        track(registrar);
        await registrar.schedule("elsewhere", "report", { name: "e" }, "*/10 * * * * *", { sequential: true });
        const ran: string[] = [];
        const { errand: worker, clock } = errandOn(db, { jobs, handlers: { report: (p) => void ran.push(p.name) } });
        track(worker);
        await worker.start();
        // Its claims leave partition heads out until its look for partitions (every promote interval) finds one.
        for (let i = 0; i < 15 && ran.length === 0; i++) {
          clock.advance(1_000);
          await new Promise((r) => setTimeout(r, 20));
        }
        await eventually(() => ran.length === 1, "the first occurrence");
        assert.deepEqual(ran, ["e"]);
      }));

    it("trigger(id) enqueues an occurrence now; bad definitions are clear errors that write nothing", () =>
      withDatabase(kind, async (db, track) => {
        const { errand } = errandOn(db, { jobs, handlers: { report: () => {} } });
        track(errand);
        await errand.start();
        await errand.schedule("nightly", "report", { name: "n" }, "0 3 * * *");
        const id = await errand.trigger("nightly");
        await eventually(async () => (await errand.get(id))?.state === "completed", "the triggered run");
        await assert.rejects(errand.trigger("missing"), NotFoundError);

        const bad: [() => Promise<unknown>, RegExp][] = [
          [() => errand.schedule("x", "report", { name: "x" }, "* * *"), /has 3 field\(s\); give 5 .* or 6/],
          [
            () => errand.schedule("x", "report", { name: "x" }, "61 * * * *"),
            /Invalid cron expression "61 \* \* \* \*"/,
          ],
          [
            () => errand.schedule("x", "report", { name: "x" }, "* * * * *", { timezone: "Mars/Olympus" }),
            /Invalid time zone "Mars\/Olympus": give an IANA name/,
          ],
          [
            () => errand.schedule("x", "report", { name: "x" }, "* * * * *", { sequential: "yes" as never }),
            /Option "sequential" of schedule "x" must be true or false/,
          ],
          [
            () => errand.schedule("x", "report", { name: "x" }, "* * * * *", { delay: "1m" } as never),
            /schedule\(\) does not take option "delay"/,
          ],
          [() => errand.schedule("x", "report", { name: "x" }, "* * * * *", { catchUp: 0 }), /"catchUp" must be/],
          [() => errand.schedule("bad id!", "report", { name: "x" }, "* * * * *"), /Invalid schedule id "bad id!"/],
          [() => errand.schedule("x", "nope" as never, { name: "x" } as never, "* * * * *"), /Unknown job kind "nope"/],
          [() => errand.schedule("x", "report", { name: "x" }, { every: 0 }), /"every" must be at least "1s".*got "0"/],
          [() => errand.schedule("x", "report", { name: "x" }, { every: "500ms" }), /at least "1s".*got "500ms"/],
          [() => errand.schedule("x", "report", { name: "x" }, "@every 0.5s"), /at least "1s".*got "0.5s"/],
          [() => errand.schedule("x", "report", { name: "x" }, { every: -1 }), /"every" must be a non-negative/],
          [() => errand.schedule("x", "report", { name: "x" }, { every: "-5s" as never }), /"every" must be milli/],
          [() => errand.schedule("x", "report", { name: "x" }, { every: "soon" as never }), /got "soon"/],
          [
            () => errand.schedule("x", "report", { name: "x" }, "* * * * *", { every: "1m" } as never),
            /both a cron expression \("\* \* \* \* \*"\) and option "every": give one/,
          ],
          [
            () => errand.schedule("x", "report", { name: "x" }, {} as never),
            /needs a cron expression \(such as "0 3 \* \* \*"\) or option "every"/,
          ],
          [
            () => errand.schedule("x", "report", { name: "x" }, { every: "1m", timezone: "Europe/Paris" } as never),
            /"timezone" of schedule "x" does not apply to an interval/,
          ],
          [
            () => errand.schedule("x", "report", { name: "x" }, { every: "1m" } as never, {}),
            /got options twice/,
          ],
        ];
        for (const [call, message] of bad) {
          await assert.rejects(call(), (e: Error) => e instanceof ValidationError && message.test(e.message));
        }
        assert.deepEqual((await errand.schedules()).map((s) => s.id), ["nightly"]);
      }));
  });
}
