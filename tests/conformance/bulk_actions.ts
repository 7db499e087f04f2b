import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { backoff, type BulkFilter, defineJobs, type Errand, job, type JobState, ValidationError } from "../../mod.ts";
import type { Store, StoreFor } from "../../src/store/mod.ts";
import type { StoreKind, TestDatabase } from "../support/stores.ts";
import { eventually } from "../support/wait.ts";
import { errandOn, withDatabase } from "./harness.ts";

const jobs = defineJobs({
  flaky: job<{ n: number }>({ attempts: 1, retry: backoff.none }),
  letter: job<{ n: number }>({ queue: "mail", attempts: 1, retry: backoff.none }),
  block: job<{ n: number }>(),
});

type Bulk = "retryMany" | "cancelMany" | "deleteMany";

/** `db` whose stores record the size of every bulk batch they are asked for and give. */
function recordingBatches<TTx>(db: TestDatabase<TTx>, batches: number[]): TestDatabase<TTx> {
  const recorded = (store: StoreFor<TTx>): StoreFor<TTx> =>
    new Proxy(store, {
      get(target, name) {
        const value = Reflect.get(target, name, target);
        if (typeof value !== "function") return value;
        if (name !== "jobTransitionMany" && name !== "jobDeleteMany") return value.bind(target);
        return async (params: Parameters<Store["jobDeleteMany"]>[0]) => {
          const changed = await value.call(target, params);
          assert.ok(params.limit <= 1000, "a batch is at most 1,000 jobs");
          batches.push(changed.length);
          return changed;
        };
      },
    });
  return { ...db, store: (namespace) => recorded(db.store(namespace)) };
}

/** The states of all jobs of `errand`, by state (those with none left out). */
async function byState(errand: Errand<typeof jobs, unknown>): Promise<Partial<Record<JobState, number>>> {
  const { byState } = await errand.counts();
  return Object.fromEntries(Object.entries(byState).filter(([, n]) => n > 0));
}

/** Bulk actions: retryMany, cancelMany and deleteMany over a filter, in batches, never touching a running job. */
export function bulkActionCases(kind: StoreKind<unknown>): void {
  describe("bulk actions", () => {
    it("retryMany() runs again the failed jobs its filter matches, granting each one more attempt", () =>
      withDatabase(kind, async (db, track) => {
        const calls = new Map<string, number>();
        const failFirst = (p: { n: number }, j: { kind: string }) => {
          const key = `${j.kind}${p.n}`;
          calls.set(key, (calls.get(key) ?? 0) + 1);
          if (calls.get(key) === 1) throw new Error("the first run fails");
        };
        const { errand } = errandOn(db, {
          jobs,
          mode: "manual",
          handlers: { flaky: failFirst, letter: failFirst, block: () => {} },
        });
        track(errand);
        await errand.enqueueMany([1, 2, 3].map((n) => ({ kind: "flaky" as const, payload: { n } })));
        await errand.enqueueMany([1, 2].map((n) => ({ kind: "letter" as const, payload: { n } })));
        await errand.step();
        assert.deepEqual(await byState(errand), { failed: 5 });

        assert.deepEqual(await errand.retryMany({ state: "failed", queue: "mail" }), { count: 2 });
        const mail = (await errand.list({ queue: "mail" })).jobs;
        assert.deepEqual(mail.map((j) => [j.state, j.maxAttempts]), [["available", 2], ["available", 2]]);
        assert.deepEqual(await byState(errand), { failed: 3, available: 2 });
        await errand.step();
        assert.deepEqual(await byState(errand), { failed: 3, completed: 2 });

        assert.deepEqual(await errand.retryMany({ state: "failed", kind: "flaky" }), { count: 3 });
        await errand.step();
        assert.deepEqual(await byState(errand), { completed: 5 });
        // Completed jobs are among retry's states too; nothing matches a queue with no jobs.
        assert.deepEqual(await errand.retryMany({ state: "completed", queue: "nowhere" }), { count: 0 });
        assert.deepEqual(await errand.retryMany({ state: "completed", kind: "letter" }), { count: 2 });
        assert.deepEqual(await byState(errand), { completed: 3, available: 2 });
      }));

    it("retryMany() wakes this instance's workers: the retried jobs run without waiting for a poll", () =>
      withDatabase(kind, async (db, track) => {
        let runs = 0;
        const { errand } = errandOn(db, {
          jobs,
          handlers: {
            flaky: () => {
              if (++runs <= 2) throw new Error("the first runs fail");
            },
            letter: () => {},
            block: () => {},
          },
        });
        track(errand);
        await errand.start();
        await errand.enqueueMany([1, 2].map((n) => ({ kind: "flaky" as const, payload: { n } })));
        await eventually(async () => (await errand.counts()).byState.failed === 2, "both failures");
        assert.deepEqual(await errand.retryMany({ state: "failed" }), { count: 2 });
        // The fake clock never moves: only a wake-up starts them.
        await eventually(async () => (await errand.counts()).byState.completed === 2, "the retried runs");
      }));

    it("filters on created before (exclusive) and after (inclusive), with queue and kind", () =>
      withDatabase(kind, async (db, track) => {
        const { errand, clock } = errandOn(db, { jobs, mode: "enqueue" });
        track(errand);
        const ids: string[] = [];
        const times: Date[] = [];
        for (let i = 0; i < 3; i++) {
          times.push(new Date(clock.now()));
          ids.push((await errand.enqueue("flaky", { n: i })).id);
          ids.push((await errand.enqueue("letter", { n: i })).id);
          clock.advance(60_000);
        }
        const cancelled = async () => (await errand.list({ state: "cancelled" })).jobs.map((j) => j.id).sort();
        assert.deepEqual(
          await errand.cancelMany({ state: "available", kind: "flaky", after: times[1], before: times[2] }),
          { count: 1 },
        );
        assert.deepEqual(await cancelled(), [ids[2]]);
        assert.deepEqual(await errand.cancelMany({ state: "available", queue: "mail", before: times[1] }), {
          count: 1,
        });
        assert.deepEqual(await cancelled(), [ids[1], ids[2]].sort());
        assert.deepEqual(await errand.cancelMany({ state: "available", after: times[2] }), { count: 2 });
        assert.deepEqual(await cancelled(), [ids[1], ids[2], ids[4], ids[5]].sort());
        assert.deepEqual(await errand.deleteMany({ state: "cancelled", kind: "letter" }), { count: 2 });
        assert.deepEqual(await byState(errand), { available: 2, cancelled: 2 });
      }));

    it("cancelMany() cancels scheduled, available and waiting jobs, and the continuations waiting for them", () =>
      withDatabase(kind, async (db, track) => {
        const { errand } = errandOn(db, { jobs, mode: "enqueue" });
        track(errand);
        const parent = await errand.enqueue("block", { n: 1 }, { delay: "1h" });
        const child = await errand.enqueueAfter(parent.id, "flaky", { n: 2 });
        await errand.enqueue("block", { n: 3 });
        assert.deepEqual(await errand.cancelMany({ state: "scheduled" }), { count: 1 });
        const released = await errand.get(child.id);
        assert.equal(released?.state, "cancelled", "the continuation of a cancelled job is cancelled");
        assert.match(released?.reason ?? "", new RegExp(`${parent.id}.*cancelled`));
        const again = await errand.enqueueAfter(
          (await errand.enqueue("block", { n: 4 }, { delay: "1h" })).id,
          "flaky",
          {
            n: 5,
          },
        );
        assert.deepEqual(await errand.cancelMany({ state: "waiting" }), { count: 1 });
        assert.equal((await errand.get(again.id))?.state, "cancelled");
        assert.deepEqual(await errand.cancelMany({ state: "available", kind: "block" }), { count: 1 });
        const finished = (await errand.list({ state: "cancelled" })).jobs;
        assert.ok(finished.every((j) => j.finishedAt !== null), "each has its finish time, as cancel() sets it");
        assert.deepEqual(await byState(errand), { scheduled: 1, cancelled: 4 });
      }));

    it("works in batches of 1,000: 2,500 jobs are 3 short writes per action, and every job changes", () =>
      withDatabase(kind, async (db, track) => {
        const batches: number[] = [];
        const { errand } = errandOn(recordingBatches(db, batches), { jobs, mode: "enqueue" });
        track(errand);
        const n = 2_500;
        await errand.enqueueMany(
          Array.from(
            { length: n },
            (_, i) => ({ kind: "letter" as const, payload: { n: i }, options: { delay: "1h" } }),
          ),
        );
        assert.deepEqual(await errand.cancelMany({ state: "scheduled", queue: "mail" }), { count: n });
        assert.deepEqual(batches.splice(0), [1000, 1000, 500]);
        assert.deepEqual(await byState(errand), { cancelled: n });
        assert.deepEqual(await errand.retryMany({ state: "cancelled" }), { count: n });
        assert.deepEqual(batches.splice(0), [1000, 1000, 500]);
        assert.deepEqual(await byState(errand), { available: n });
        assert.deepEqual(await errand.deleteMany({ state: "available", kind: "letter" }), { count: n });
        assert.deepEqual(batches.splice(0), [1000, 1000, 500]);
        assert.deepEqual(await byState(errand), {});
      }));

    it("never touches a running job: its lease and fence stay, and its run completes normally", () =>
      withDatabase(kind, async (db, track) => {
        let release!: () => void;
        const released = new Promise<void>((r) => (release = r));
        const { errand } = errandOn(db, {
          jobs,
          queues: { default: { concurrency: 1 } },
          handlers: { flaky: () => {}, letter: () => {}, block: () => released },
        });
        track(errand);
        await errand.start();
        const running = await errand.enqueue("block", { n: 0 });
        await eventually(async () => (await errand.get(running.id))?.state === "running", "the run");
        await errand.enqueueMany([1, 2, 3].map((n) => ({ kind: "block" as const, payload: { n } })));
        const before = await db.store().jobGet({ id: running.id });

        for (const call of ["retryMany", "cancelMany", "deleteMany"] as const) {
          await assert.rejects(
            errand[call]({ state: "running" }),
            (err: Error) => err instanceof ValidationError && /"running" jobs/.test(err.message),
          );
        }
        assert.deepEqual(await errand.cancelMany({ state: "available", kind: "block" }), { count: 3 });
        assert.deepEqual(await errand.deleteMany({ state: "cancelled", kind: "block" }), { count: 3 });
        const after = await db.store().jobGet({ id: running.id });
        assert.deepEqual(
          [after?.state, after?.fence, after?.leaseUntil, after?.attempt],
          [before?.state, before?.fence, before?.leaseUntil, before?.attempt],
        );
        release();
        await eventually(async () => (await errand.get(running.id))?.state === "completed", "the run to complete");
        assert.deepEqual(await byState(errand), { completed: 1 });
      }));

    it("deleteMany() deletes any state but running, in its own namespace only", () =>
      withDatabase(kind, async (db, track) => {
        const { errand } = errandOn(db, { jobs, mode: "enqueue" });
        const other = errandOn(db, { jobs, mode: "enqueue", namespace: "other" });
        track(errand);
        track(other.errand);
        await errand.enqueue("flaky", { n: 1 }, { delay: "1m" });
        await errand.enqueue("flaky", { n: 2 });
        await other.errand.enqueue("flaky", { n: 3 });
        assert.deepEqual(await errand.deleteMany({ state: "scheduled" }), { count: 1 });
        assert.deepEqual(await errand.deleteMany({ state: "available" }), { count: 1 });
        assert.deepEqual(await byState(errand), {});
        assert.deepEqual(await byState(other.errand), { available: 1 });
      }));

    it("a bad filter is a ValidationError that says what to change, and nothing is written", () =>
      withDatabase(kind, async (db, track) => {
        const { errand } = errandOn(db, { jobs, mode: "enqueue" });
        track(errand);
        await errand.enqueue("flaky", { n: 1 });
        const { id } = await errand.enqueue("flaky", { n: 2 }, { delay: "1m" });
        await errand.cancel(id);
        const counts = await byState(errand);
        const day = (d: number) => new Date(Date.UTC(2026, 0, d));
        const bad: [Bulk, unknown, RegExp][] = [
          ["retryMany", undefined, /needs a filter such as \{ state: "failed"/],
          ["cancelMany", {}, /needs "state" in its filter, one of "scheduled", "retrying", "available", "waiting"/],
          ["deleteMany", { queue: "mail" }, /needs "state"/],
          ["retryMany", { state: "failed", queu: "mail" }, /filter has no "queu"; it takes "state", "queue"/],
          ["retryMany", { state: "available" }, /cannot apply to "available" jobs; .*one of "failed", "cancelled"/],
          ["cancelMany", { state: "cancelled" }, /cannot apply to "cancelled" jobs/],
          ["cancelMany", { state: "bogus" }, /"bogus" jobs \(not a job state\)/],
          ["cancelMany", { state: "available", queue: "no spaces" }, /Invalid queue "no spaces": it must match/],
          ["deleteMany", { state: "cancelled", kind: "" }, /Invalid kind ""/],
          ["deleteMany", { state: "cancelled", before: new Date(Number.NaN) }, /"before" must be a valid Date/],
          [
            "retryMany",
            { state: "cancelled", after: "2026-01-01" },
            /"after" must be a valid Date, got the string "2026-01-01"/,
          ],
          ["deleteMany", { state: "cancelled", after: day(2), before: day(1) }, /"after" .* must be earlier than/],
          ["deleteMany", { state: "cancelled", after: day(1), before: day(1) }, /must be earlier than/],
        ];
        for (const [call, filter, message] of bad) {
          await assert.rejects(
            errand[call](filter as BulkFilter),
            (err: Error) => err instanceof ValidationError && message.test(err.message),
            `${call}(${JSON.stringify(filter)})`,
          );
        }
        assert.deepEqual(await byState(errand), counts, "nothing changed");
      }));
  });
}
