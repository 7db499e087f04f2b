import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  backoff,
  createErrand,
  defineJobs,
  defineLogs,
  job,
  type JobContext,
  LeaseLostError,
  log,
  type Observer,
  type PayloadOf,
  PermanentError,
  systemClock,
  ValidationError,
} from "../../mod.ts";
import { encodePayload } from "../../src/encoding/codec.ts";
import type { StoreFor } from "../../src/store/mod.ts";
import { idFactory } from "../../src/encoding/ids.ts";
import { FakeClock } from "../../src/testing.ts";
import type { StoreKind, TestDatabase } from "../support/stores.ts";
import { eventually, quietLogger } from "../support/wait.ts";
import { errandOn, testJobs, withDatabase } from "./harness.ts";

const jobs = defineJobs({
  item: job<{
    n: number;
    poison?: "nul" | "surrogate" | "discard" | "unreadable" | "marker" | "huge-retry" | "huge-snooze";
  }>({
    attempts: 1,
  }),
});

type Poison = NonNullable<PayloadOf<typeof jobs.item>["poison"]>;

/**
 * Starts an errand with enough slots and a large claim that the outcomes of
 * one drain are saved in shared batches, calls `setup`, enqueues `n` items
 * (those in `poisons` with their poison), and waits until each has run and
 * none is running. Every run calls `act`; every job must have run once.
 */
async function drain(
  db: TestDatabase<unknown>,
  track: <E extends { shutdown(o?: { drain?: number }): Promise<void> }>(e: E) => E,
  n: number,
  poisons: Readonly<Record<number, Poison>>,
  act: (poison: Poison | undefined, job: JobContext) => void,
  options: { observer?: Observer; setup?: () => Promise<void> } = {},
) {
  const runs = new Map<number, number>();
  const { errand, logger } = errandOn(db, {
    jobs,
    claimBatch: 50,
    queues: { default: { concurrency: 50 } },
    observer: options.observer,
    handlers: {
      item: (p, j) => {
        runs.set(p.n, (runs.get(p.n) ?? 0) + 1);
        act(p.poison, j);
      },
    },
  });
  track(errand);
  await errand.start();
  await options.setup?.();
  const ids = await errand.enqueueMany(
    Array.from({ length: n }, (_, i) => ({ kind: "item" as const, payload: { n: i, poison: poisons[i] } })),
  );
  // Every handler ran, then no job is running: each outcome is written.
  await eventually(async () => runs.size === n && (await errand.counts()).byState.running === 0, "every run");
  assert.deepEqual([...runs.values()].filter((count) => count !== 1), [], "no job ran twice");
  return { errand, logger, ids: ids.map((r) => r.id) };
}

/** Bad values from handlers and callers never spoil other jobs, and are refused or stored safely. */
export function poisonCases(kind: StoreKind<unknown>): void {
  describe("poison values", () => {
    it("text with NUL or unpaired surrogates, or a thrown value that cannot be read, is stored readably; the jobs beside it run once", () =>
      withDatabase(kind, async (db, track) => {
        const poisons = { 3: "nul", 17: "surrogate", 29: "discard", 33: "unreadable" } as const;
        const { errand, ids } = await drain(db, track, 40, poisons, (poison, j) => {
          if (poison === "nul") {
            j.explain("note\u0000with NUL");
            throw new PermanentError("bad\u0000value");
          }
          if (poison === "surrogate") throw new Error("half a pair: \ud800!");
          if (poison === "discard") j.discard("reason\u0000");
          if (poison === "unreadable") {
            const { proxy, revoke } = Proxy.revocable({}, {});
            revoke();
            throw proxy;
          }
        });
        const counts = (await errand.counts()).byState;
        assert.equal(counts.completed, 36);
        assert.equal(counts.failed, 4);
        const nul = (await errand.get(ids[3]))!;
        assert.equal(nul.runs[0].error?.message, "bad\\u0000value");
        assert.equal(nul.runs[0].note, "note\\u0000with NUL");
        assert.equal((await errand.get(ids[17]))!.runs[0].error?.message, "half a pair: \ufffd!");
        assert.equal((await errand.get(ids[29]))!.runs[0].error?.message, "reason\\u0000");
        assert.equal(
          (await errand.get(ids[33]))!.runs[0].error?.message,
          "The handler threw a value that cannot be read",
        );
      }));

    it("an outcome the store refuses fails only its own job with OutcomeRejected; the rest of its batch is saved", () =>
      withDatabase(kind, async (db, track) => {
        const told: string[] = [];
        const { errand, logger, ids } = await drain(db, track, 30, { 11: "marker" }, (poison, j) => {
          if (poison === "marker") j.explain("refuse-me");
        }, {
          observer: {
            completed: () => void told.push("completed"),
            failed: (e) => void told.push(`failed ${e.error?.name}`),
          },
          setup: () => db.refuseRunsWith("refuse-me"),
        });
        const counts = (await errand.counts()).byState;
        assert.equal(counts.completed, 29);
        assert.equal(counts.failed, 1);
        const refused = (await errand.get(ids[11]))!;
        assert.equal(refused.state, "failed");
        assert.equal(refused.runs.at(-1)?.error?.name, "OutcomeRejected");
        assert.match(refused.runs.at(-1)?.error?.message ?? "", /refused to save this run's outcome \(completed\)/);
        assert.equal(told.filter((t) => t === "completed").length, 29);
        assert.deepEqual(told.filter((t) => t !== "completed"), ["failed OutcomeRejected"]);
        assert.ok(logger.lines.some((l) => l.includes("OutcomeRejected") && l.includes(ids[11])));
      }));

    it("an outcome the store refuses is kept in the history as a failed run, and its job is retried while attempts remain", () =>
      withDatabase(kind, async (db, track) => {
        const again = defineJobs({ again: job<{ n: number }>({ attempts: 2, retry: backoff.fixed("1m") }) });
        let runs = 0;
        const { errand, clock } = errandOn(db, {
          jobs: again,
          mode: "manual",
          handlers: {
            again: (_, j) => {
              runs++;
              j.explain("refuse-me");
            },
          },
        });
        track(errand);
        const { id } = await errand.enqueue("again", { n: 1 });
        await db.refuseRunsWith("refuse-me");
        assert.deepEqual((await errand.step()).ran.map((r) => r.outcome), ["retried"]);
        const retried = (await errand.get(id))!;
        assert.equal(retried.state, "retrying");
        assert.deepEqual(retried.runs.map((r) => [r.attempt, r.outcome, r.error?.name]), [
          [1, "retried", "OutcomeRejected"],
        ]);
        assert.match(retried.runs[0].error?.message ?? "", /refused to save this run's outcome \(completed\)/);
        clock.advance(60_000);
        assert.deepEqual((await errand.step()).ran.map((r) => r.outcome), ["failed"]);
        const failed = (await errand.get(id))!;
        assert.equal(failed.state, "failed");
        assert.deepEqual(failed.runs.map((r) => [r.attempt, r.outcome, r.error?.name]), [
          [1, "retried", "OutcomeRejected"],
          [2, "failed", "OutcomeRejected"],
        ]);
        assert.equal(runs, 2);
      }));

    it("an Invalid Date in a payload or a log value (append, appendMany) is refused at the call, with nothing written", () =>
      withDatabase(kind, async (db, track) => {
        const logs = defineLogs({ events: log<{ id: string; at: Date }>({ topic: "events", key: (e) => e.id }) });
        const dated = defineJobs({ remind: job<{ at: Date }>() });
        const { errand } = errandOn(db, { jobs: dated, logs, topics: { events: { partitions: 1 } }, mode: "enqueue" });
        track(errand);
        const invalid = new Date(NaN);
        const refused: [() => Promise<unknown>, RegExp][] = [
          [
            () => errand.enqueue("remind", { at: invalid }),
            /The payload of "remind" cannot be encoded: payload.at is an Invalid Date/,
          ],
          [
            () =>
              errand.enqueueMany([{ kind: "remind", payload: { at: new Date() } }, {
                kind: "remind",
                payload: { at: invalid },
              }]),
            /payload.at is an Invalid Date/,
          ],
          [
            () => errand.append("events", { id: "a", at: invalid }),
            /The value appended to log "events" cannot be encoded: value.at is an Invalid Date/,
          ],
          [
            () => errand.appendMany("events", [{ id: "a", at: new Date() }, { id: "b", at: invalid }]),
            /value.at is an Invalid Date/,
          ],
        ];
        for (const [call, message] of refused) {
          await assert.rejects(call(), (e: unknown) => e instanceof ValidationError && message.test(e.message));
        }
        assert.equal((await errand.list()).jobs.length, 0, "no job written");
        assert.deepEqual(await errand.read("events", { partition: 0 }), [], "no record written");
      }));

    it("durations and counts beyond the stores' range are refused at the call, with nothing written", () =>
      withDatabase(kind, async (db, track) => {
        const { errand } = errandOn(db, { jobs, mode: "enqueue" });
        track(errand);
        assert.throws(() => backoff.fixed(1e20), /"backoff.fixed delay" must be at most 100 years/);
        assert.throws(() => job({ attempts: 2 ** 31 }), /"attempts" must be a whole number of at least 1 and at most/);
        assert.throws(() => job({ timeout: "25d" }), /"timeout" must be at most 2147483647 ms \(about 24.8 days\)/);
        const refused: [Promise<unknown>, RegExp][] = [
          [errand.enqueue("item", { n: 1 }, { delay: 1e20 }), /"delay" must be at most 100 years/],
          [errand.enqueue("item", { n: 1 }, { attempts: 2 ** 31 }), /at most 2147483647/],
          [errand.enqueue("item", { n: 1 }, { retry: { type: "fixed", delayMs: 1e20 } }), /delayMs must be from 0/],
          [
            errand.enqueue("item", { n: 1 }, {
              retry: { type: "exponential", baseMs: 1, factor: 2, capMs: 1e20, jitter: 0 },
            }),
            /capMs must be from 0/,
          ],
          [errand.enqueue("item", { n: 1 }, { timeout: "25d" }), /"timeout" must be at most 2147483647 ms/],
        ];
        // Every call runs at once; their rejections are awaited one by one below.
        for (const [call] of refused) call.catch(() => {});
        for (const [call, message] of refused) {
          await assert.rejects(call, (e) => e instanceof ValidationError && message.test(e.message));
        }
        assert.throws(
          () => createErrand({ jobs, store: db.store(), lease: "40000d" }),
          /"lease" must be at most 100 years/,
        );
        assert.equal((await errand.list()).jobs.length, 0);
      }));

    it("a handler's retryIn() or snooze() beyond the range fails its own run with a clear error, and the rest run on", () =>
      withDatabase(kind, async (db, track) => {
        const { errand, ids } = await drain(db, track, 20, { 4: "huge-retry", 9: "huge-snooze" }, (poison, j) => {
          if (poison === "huge-retry") j.retryIn(1e20);
          if (poison === "huge-snooze") j.snooze("50000000d");
        });
        assert.equal((await errand.counts()).byState.completed, 18);
        for (const n of [4, 9]) {
          const j = (await errand.get(ids[n]))!;
          assert.equal(j.state, "failed");
          assert.match(j.runs[0].error?.message ?? "", /must be at most 100 years/);
        }
      }));

    it("a job an older errand stored with a retry delay out of range is rescued on its kind's policy, and so are the jobs beside it", () =>
      withDatabase(kind, async (db, track) => {
        // Instance A's clock never moves: it holds three jobs and never renews, like a hung process.
        const a = errandOn(db, { jobs, handlers: { item: () => new Promise<void>(() => {}) } });
        track(a.errand);
        await a.errand.start();
        await a.errand.pauseQueue("default");
        const now = a.clock.now();
        const newId = idFactory();
        // As an errand without range checks wrote it: a fixed retry delay of 1e20 ms.
        const stored = {
          id: newId(now),
          kind: "item",
          version: 1,
          queue: "default",
          state: "available" as const,
          parents: [],
          priority: 0,
          payload: encodePayload("item", { n: 0 }, 1024),
          maxAttempts: 3,
          runAt: now,
          createdAt: now,
          timeoutMs: null,
          retry: JSON.stringify({ type: "fixed", delayMs: 1e20 }),
          uniqueKey: null,
          uniqueScope: null,
          topic: null,
          partition: null,
          group: null,
          trace: null,
        };
        await db.store().jobInsertMany({ rows: [stored], notify: false });
        const others = await a.errand.enqueueMany([1, 2].map((n) => ({ kind: "item" as const, payload: { n } })));
        await a.errand.resumeQueue("default");
        await eventually(async () => (await a.errand.counts()).byState.running === 3, "A holding all three");

        // Instance B lives 31 s later and rescues them.
        const clockB = new FakeClock(now + 31_000);
        const b = errandOn(db, { jobs, clock: clockB, mode: "manual" });
        track(b.errand);
        const report = await b.errand.step();
        assert.equal(report.rescued, 3);
        const rescued = (await b.errand.get(stored.id))!;
        assert.equal(rescued.state, "retrying");
        assert.equal(rescued.runs[0].error?.name, "LeaseExpired");
        assert.ok(rescued.runAt.getTime() - clockB.now() <= 3_600_000, `retried at ${rescued.runAt.toISOString()}`);
        for (const { id } of others) assert.equal((await b.errand.get(id))?.state, "failed");
      }));

    it("a stale run's job.complete(tx) and job.enqueue(..., { tx }) throw LeaseLostError, so its transaction rolls back and counts as lost", () =>
      withDatabase(kind, async (db, track) => {
        let releaseStale!: () => void;
        const staleResults: unknown[] = [];
        const toldA: string[] = [];
        // Instance A's clock never moves: it never renews, like a hung process.
        const a = errandOn(db, {
          jobs: testJobs,
          lease: "30s",
          observer: { completed: () => void toldA.push("completed") },
          handlers: {
            greet: async (_p, j) => {
              await new Promise<void>((r) => (releaseStale = r));
              for (
                const write of [
                  (tx: unknown) => a.errand.enqueue("mail", { to: "committed-by-the-stale-run" }, { tx }),
                  (tx: unknown) => j.enqueue("mail", { to: "enqueued-by-the-stale-run" }, { tx }),
                  (tx: unknown) => j.complete(tx),
                ]
              ) {
                staleResults.push(
                  await db.transaction(async (tx) => {
                    await a.errand.enqueue("mail", { to: "the-handler's-own-write" }, { tx });
                    return await write(tx);
                  }).then(() => "committed", (e) => e),
                );
              }
            },
          },
        });
        track(a.errand);
        await a.errand.start();
        const { id } = await a.errand.enqueue("greet", { name: "stale" }, { retry: backoff.fixed(0) });
        await eventually(() => releaseStale !== undefined, "the stale run's start");

        // Instance B lives 31 s later: it rescues the job and completes it.
        const b = errandOn(db, {
          jobs: testJobs,
          clock: new FakeClock(new FakeClock().now() + 31_000),
          handlers: { greet: () => {} },
        });
        track(b.errand);
        await b.errand.start();
        await eventually(async () => (await b.errand.get(id))?.state === "completed", "rescue and rerun on B");

        releaseStale();
        await eventually(() => staleResults.length === 3, "the stale run's writes");
        assert.equal(staleResults[0], "committed", "a plain enqueue in the transaction is not the run's to fence");
        for (const result of staleResults.slice(1)) {
          assert.ok(result instanceof LeaseLostError, `expected LeaseLostError, got ${String(result)}`);
          assert.match(result.message, new RegExp(`no longer holds job "${id}"`));
        }
        const mails = (await b.errand.list({ kind: "mail" })).jobs;
        assert.equal(mails.length, 2, "only the first transaction committed its two enqueues");
        await eventually(async () => /outcome="lost"/.test(await a.errand.metrics()), "the stale run counted");
        const metrics = await a.errand.metrics();
        assert.match(metrics, /errand_jobs_finished_total\{queue="default",kind="greet",outcome="lost"\} 1/);
        assert.doesNotMatch(metrics, /outcome="completed"/);
        assert.deepEqual(toldA, []);
      }));

    it("a live run's job.complete(tx) commits with its writes and counts as completed once", () =>
      withDatabase(kind, async (db, track) => {
        const told: string[] = [];
        const { errand } = errandOn(db, {
          jobs: testJobs,
          observer: { completed: (e) => void told.push(e.id) },
          handlers: {
            greet: (_p, j) =>
              db.transaction(async (tx) => {
                await j.enqueue("mail", { to: "follow-up" }, { tx });
                await j.complete(tx);
              }),
          },
        });
        track(errand);
        await errand.start();
        const { id } = await errand.enqueue("greet", { name: "x" });
        await eventually(() => told.length === 1, "the completed event");
        assert.equal((await errand.get(id))?.state, "completed");
        assert.equal((await errand.list({ kind: "mail" })).jobs.length, 1);
        assert.deepEqual(told, [id]);
        assert.match(await errand.metrics(), /kind="greet",outcome="completed"\} 1/);
        assert.doesNotMatch(await errand.metrics(), /kind="greet",outcome="lost"/);
      }));

    it("timers longer than the runtime's (24.8 days) fire on time: a 30-day lease or interval is no busy loop", () =>
      withDatabase(kind, async (db, track) => {
        const store = db.store();
        let calls = 0;
        const counted = new Proxy(store, {
          get(target, key) {
            const value = Reflect.get(target, key);
            if (typeof value !== "function") return value;
            return (...args: unknown[]) => (calls++, value.apply(target, args));
          },
        }) as StoreFor<unknown>;
        let finished = false;
        const errand = track(createErrand({
          jobs: defineJobs({ long: job<null>({ timeout: "24d", attempts: 1 }) }),
          store: counted,
          clock: systemClock,
          logger: quietLogger(),
          lease: "30d",
          pollInterval: "30d",
          maintenance: { promote: "30d", rescue: "30d", prune: "30d" },
          handlers: {
            long: async () => {
              await new Promise((r) => setTimeout(r, 100));
              finished = true;
            },
          },
        }));
        await errand.start();
        const { id } = await errand.enqueue("long", null);
        const started = calls;
        await new Promise((r) => setTimeout(r, 300));
        assert.ok(calls - started < 20, `${calls - started} store calls in 300 ms of idling`);
        assert.ok(finished, "the handler ran to its end");
        const done = (await errand.get(id))!;
        assert.equal(done.state, "completed", `job ${done.state}: ${done.runs[0]?.error?.message}`);
      }));
  });
}
