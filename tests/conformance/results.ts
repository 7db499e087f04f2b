import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  backoff,
  defineJobs,
  type Errand,
  job,
  JobFailedError,
  type JobUpdate,
  NotFoundError,
  PermanentError,
  StoreError,
  TimeoutError,
  ValidationError,
} from "../../mod.ts";
import { completedFinish } from "../../src/running/outcome.ts";
import { FakeClock } from "../../src/testing.ts";
import type { StoreKind } from "../support/stores.ts";
import { eventually } from "../support/wait.ts";
import { errandOn, withDatabase } from "./harness.ts";

const jobs = defineJobs({
  render: job<{ docId: string; fail?: "throw" | "discard" }, { url: string; pages: number }>({
    attempts: 1,
    retry: backoff.none,
  }),
  notify: job<{ docId: string }, string[]>(),
  count: job<{ n: number }, number>(),
  loose: job<{ give: "function" | "big" | "fine" | "invalid-date" }, unknown>({ attempts: 1 }),
  wait: job<{ name: string }>(),
});

/** The TimeoutError of a 1 s `result()` wait for job `id`, moving the errand's clock until it came. */
async function timeoutOf(
  { errand, clock }: { errand: Pick<Errand<typeof jobs, unknown>, "result">; clock: FakeClock },
  id: string,
): Promise<TimeoutError> {
  let error: unknown;
  void errand.result(id, { timeout: "1s" }).catch((e: unknown) => (error = e));
  await eventually(() => (clock.advance(100), error !== undefined), "the wait's timeout");
  assert.ok(error instanceof TimeoutError, `got ${String(error)}`);
  return error;
}

/** Results, progress, `result()`, `watch()` and `job.parentResults()`. */
export function resultCases(kind: StoreKind<unknown>): void {
  describe("results and progress", () => {
    it("a handler's result is stored with its completion; result() resolves with it, before and after; get() shows it", () =>
      withDatabase(kind, async (db, track) => {
        let release!: () => void;
        const { errand } = errandOn(db, {
          jobs,
          handlers: {
            render: async ({ docId }) => {
              await new Promise<void>((r) => (release = r));
              return { url: `https://cdn.example.com/${docId}.pdf`, pages: 10 };
            },
          },
        });
        track(errand);
        await errand.start();
        const { id } = await errand.enqueue("render", { docId: "d1" });
        const early = errand.result(id);
        await eventually(() => release !== undefined, "the run to start");
        assert.equal((await errand.get(id))?.result, undefined, "no result while it runs");
        release();
        const result: { url: string; pages: number } = await early;
        assert.deepEqual(result, { url: "https://cdn.example.com/d1.pdf", pages: 10 });
        assert.deepEqual(await errand.result(id), result, "a completed job's result, at once");
        assert.deepEqual(await errand.result<"render">(String(id)), result, "by a plain id string, kind named");
        const details = await errand.get(id);
        assert.equal(details?.state, "completed");
        assert.deepEqual(details?.result, result);
      }));

    it("result() in mode enqueue waits for a job another instance runs, and 1,000 waits share the reads", () =>
      withDatabase(kind, async (db, track) => {
        const caller = errandOn(db, { jobs, mode: "enqueue" });
        track(caller.errand);
        const worker = errandOn(db, { jobs, handlers: { count: ({ n }) => n * 2 } });
        track(worker.errand);
        const ids = [];
        for (let i = 0; i < 1_000; i += 250) {
          ids.push(
            ...(await caller.errand.enqueueMany(
              Array.from({ length: 250 }, (_, k) => ({ kind: "count" as const, payload: { n: i + k } })),
            )).map((r) => r.id),
          );
        }
        const waits = ids.map((id) => caller.errand.result<"count">(id, { timeout: "1h" }));
        await worker.errand.start();
        const results = await Promise.all(waits);
        assert.deepEqual(results, ids.map((_, i) => i * 2));
      }));

    it("result() rejects with JobFailedError for a failed or a cancelled job, with its state, error and reason", () =>
      withDatabase(kind, async (db, track) => {
        const { errand } = errandOn(db, {
          jobs,
          handlers: {
            render: (p, job) => {
              if (p.fail === "discard") return job.discard("the document is gone");
              throw new PermanentError("the renderer crashed");
            },
          },
        });
        track(errand);
        const thrown = await errand.enqueue("render", { docId: "d1", fail: "throw" });
        const discarded = await errand.enqueue("render", { docId: "d2", fail: "discard" });
        const cancelled = await errand.enqueue("render", { docId: "d3" }, { delay: "1h" });
        const waits = [thrown, discarded, cancelled].map((j) => errand.result(j.id).catch((e: unknown) => e));
        await errand.cancel(cancelled.id);
        await errand.start();
        const [a, b, c] = await Promise.all(waits);
        for (const error of [a, b, c]) assert.ok(error instanceof JobFailedError, `got ${String(error)}`);
        const [failed, gone, stopped] = [a, b, c] as JobFailedError[];
        assert.equal(failed.state, "failed");
        assert.equal(failed.jobId, thrown.id);
        assert.equal(failed.error?.name, "PermanentError");
        assert.equal(failed.error?.message, "the renderer crashed");
        assert.match(failed.message, /failed: PermanentError: the renderer crashed/);
        assert.equal(gone.state, "failed");
        assert.equal(gone.error?.name, "Discarded");
        assert.equal(stopped.state, "cancelled");
        assert.equal(stopped.error, null);
        assert.equal(failed.code, "job_failed");
      }));

    it("result() gives up after its timeout on the errand's clock, stops on its signal, and knows no unknown job", () =>
      withDatabase(kind, async (db, track) => {
        const { errand, clock } = errandOn(db, { jobs, mode: "enqueue" });
        track(errand);
        const { id } = await errand.enqueue("render", { docId: "d1" });
        const timedOut = errand.result(id, { timeout: "30s" }).catch((e: unknown) => e);
        const stopper = new AbortController();
        const aborted = errand.result(id, { signal: stopper.signal }).catch((e: unknown) => e);
        // The wait sets its timer once the errand is ready: move the clock until it has fired.
        let timeout: unknown;
        void timedOut.then((e) => (timeout = e));
        await eventually(() => (clock.advance(30_000), timeout !== undefined), "the wait's timeout");
        assert.ok(timeout instanceof TimeoutError, `got ${String(timeout)}`);
        assert.match(timeout.message, /did not finish within 30000 ms of waiting; it goes on/);
        stopper.abort(new Error("the caller left"));
        assert.equal(((await aborted) as Error).message, "the caller left");
        assert.equal((await errand.get(id))?.state, "available", "the job goes on");
        await assert.rejects(errand.result("01ARZ3NDEKTSV4RRFFQ69G5FAV"), NotFoundError);
        await assert.rejects(errand.result(""), ValidationError);
        await assert.rejects(errand.result(id, { signal: "soon" as unknown as AbortSignal }), ValidationError);
      }));

    it("result()'s TimeoutError says why a job waits: this instance has not started, or no live worker has a handler for its kind", () =>
      withDatabase(kind, async (db, track) => {
        const render = () => ({ url: "u", pages: 1 });
        // A "work" instance never started, alone in its namespace: its enqueues warn once, not each time.
        const idle = errandOn(db, { jobs, handlers: { render }, namespace: "idle" });
        track(idle.errand);
        const { id } = await idle.errand.enqueue("render", { docId: "d1" });
        await idle.errand.enqueue("render", { docId: "d2" });
        await idle.errand.enqueueMany([{ kind: "render", payload: { docId: "d3" } }]);
        assert.equal(idle.logger.lines.filter((l) => /has not started/.test(l)).length, 1, "warned once");
        assert.match((await timeoutOf(idle, id)).message, /this instance has not started/);

        // A started instance with no handler for "notify", and no other live worker that has one.
        const live = errandOn(db, { jobs, handlers: { render }, namespace: "live" });
        track(live.errand);
        await live.errand.start();
        const orphan = await live.errand.enqueue("notify", { docId: "d4" });
        const unhandled = (await timeoutOf(live, orphan.id)).message;
        assert.match(unhandled, /no live worker has a handler for "notify"/);
        assert.doesNotMatch(unhandled, /has not started/);

        // A job a live worker has a handler for, not yet due: neither is said.
        const later = await live.errand.enqueue("render", { docId: "d5" }, { delay: "1h" });
        const handled = (await timeoutOf(live, later.id)).message;
        assert.doesNotMatch(handled, /has not started|no live worker/);
        assert.equal(live.logger.lines.filter((l) => /has not started/.test(l)).length, 0);
      }));

    it("a result that is not plain data, or over maxResultBytes, fails its attempt with InvalidResult; a fitting one is stored", () =>
      withDatabase(kind, async (db, track) => {
        const { errand } = errandOn(db, {
          jobs,
          maxResultBytes: 1_000,
          handlers: {
            loose: ({ give }) =>
              give === "function"
                ? () => 1
                : give === "big"
                ? "x".repeat(2_000)
                : give === "invalid-date"
                ? { at: new Date(NaN) }
                : { ok: true },
          },
        });
        track(errand);
        await errand.start();
        const outcomes = [];
        for (const give of ["function", "big", "invalid-date", "fine"] as const) {
          const { id } = await errand.enqueue("loose", { give });
          outcomes.push(await errand.result(id).catch((e: unknown) => e));
        }
        const [fn, big, invalidDate, fine] = outcomes;
        assert.ok(fn instanceof JobFailedError && big instanceof JobFailedError);
        assert.equal(fn.error?.name, "InvalidResult");
        assert.match(fn.error!.message, /The result of "loose" cannot be encoded: result is a function/);
        assert.ok(invalidDate instanceof JobFailedError, `got ${String(invalidDate)}`);
        assert.equal(invalidDate.error?.name, "InvalidResult");
        assert.match(
          invalidDate.error!.message,
          /The result of "loose" cannot be encoded: result.at is an Invalid Date/,
        );
        assert.equal(big.error?.name, "InvalidResult");
        assert.match(big.error!.message, /over the limit of 1000; .*raise "maxResultBytes"/);
        assert.deepEqual(fine, { ok: true });
      }));

    it("a stored result errand cannot decode rejects its own result() and watch() with StoreError; other waits are served", () =>
      withDatabase(kind, async (db, track) => {
        const { errand, clock } = errandOn(db, { jobs, mode: "enqueue" });
        track(errand);
        const poisoned = await errand.enqueue("loose", { give: "fine" });
        const other = await errand.enqueue("count", { n: 20 });
        const waits = [errand.result(poisoned.id), errand.result(other.id)].map((p) =>
          p.then((value) => ({ value }), (error: unknown) => ({ error }))
        );
        // Written around errand's encoder: the bytes msgpackr writes for an Invalid Date, which no decoder reads.
        const store = db.store();
        const now = clock.now();
        const [claim] = await store.jobClaim({
          queue: "default",
          kinds: ["loose@1"],
          limit: 1,
          now,
          leaseUntil: now + 30_000,
          workerId: "outside",
          heads: null,
          limits: null,
        });
        assert.equal(claim?.id, poisoned.id);
        await store.jobFinishMany({
          finishes: [{ ...completedFinish(claim, now), result: new Uint8Array([0xd4, 0xff, 0xff]) }],
        });
        const undecodable = (e: unknown) =>
          e instanceof StoreError &&
          e.message.includes(`Job "${poisoned.id}" completed, but its stored result cannot be decoded`);
        const first = await waits[0];
        assert.ok("error" in first && undecodable(first.error), `got ${JSON.stringify(first)}`);
        await assert.rejects(errand.result(poisoned.id), undecodable);
        await assert.rejects(async () => {
          for await (const _ of errand.watch(poisoned.id)) { /* the first update is the completed one */ }
        }, undecodable);
        // The waiters' loop goes on: the other job's result arrives once a worker runs it.
        const worker = errandOn(db, { jobs, clock, handlers: { count: ({ n }) => n + 1 } });
        track(worker.errand);
        await worker.errand.start();
        assert.deepEqual(await waits[1], { value: 21 });
        assert.equal((await errand.get(poisoned.id))?.state, "completed");
      }));

    it("job.complete(tx, result) stores the result in the handler's own transaction", () =>
      withDatabase(kind, async (db, track) => {
        const { errand } = errandOn(db, {
          jobs,
          handlers: {
            count: async ({ n }, job) => {
              await db.transaction((tx) => job.complete(tx, n + 1));
              return n + 100; // not stored: the transaction completed the job
            },
          },
        });
        track(errand);
        await errand.start();
        const { id } = await errand.enqueue("count", { n: 41 });
        assert.equal(await errand.result(id), 42);
      }));

    it("job.progress(): written at once, then at most once per progressInterval, the last value when the run ends", () =>
      withDatabase(kind, async (db, track) => {
        const steps: (() => void)[] = [];
        const next = () => new Promise<void>((r) => steps.push(r));
        const { errand, clock } = errandOn(db, {
          jobs,
          progressInterval: "1s",
          handlers: {
            render: async (_p, job) => {
              job.progress({ page: 1 });
              await next();
              job.progress({ page: 2 }); // within the interval: waits for it
              await next();
              job.progress({ page: 3 });
              assert.throws(() => job.progress(() => 1), /job.progress\(\) needs a JSON value/);
              assert.throws(() => job.progress("x".repeat(70_000)), /more than 65536 bytes/);
              return { url: "u", pages: 3 };
            },
          },
        });
        track(errand);
        await errand.start();
        const { id } = await errand.enqueue("render", { docId: "d1" });
        const progressOf = async () => (await errand.get(id))?.progress;
        await eventually(async () => JSON.stringify(await progressOf()) === '{"page":1}', "the first value at once");
        steps.shift()!();
        await eventually(() => steps.length === 1, "the second value reported");
        assert.deepEqual(await progressOf(), { page: 1 }, "the second waits for the interval");
        clock.advance(1_000);
        await eventually(async () => JSON.stringify(await progressOf()) === '{"page":2}', "the second after 1 s");
        steps.shift()!();
        await errand.result(id);
        const done = await errand.get(id);
        assert.deepEqual(done?.progress, { page: 3 }, "the last value, with the outcome");
        assert.equal(done?.runs.at(-1)?.outcome, "completed");
      }));

    it("a stale run's progress is not written over the run that replaced it", () =>
      withDatabase(kind, async (db, track) => {
        let releaseStale!: () => void;
        // Instance A's clock never moves: it never renews, like a hung process.
        const a = errandOn(db, {
          jobs,
          lease: "30s",
          handlers: {
            count: async (_p, job) => {
              await new Promise<void>((r) => (releaseStale = r));
              job.progress("from the stale run");
              return 0;
            },
          },
        });
        track(a.errand);
        await a.errand.start();
        const { id } = await a.errand.enqueue("count", { n: 1 }, { retry: backoff.fixed(0) });
        await eventually(() => releaseStale !== undefined, "the stale run's start");
        const b = errandOn(db, {
          jobs,
          clock: new FakeClock(new FakeClock().now() + 31_000),
          handlers: {
            count: (_p, job) => {
              job.progress("from the rescuing run");
              return 7;
            },
          },
        });
        track(b.errand);
        await b.errand.start();
        assert.equal(await b.errand.result(id), 7);
        releaseStale();
        await eventually(async () => /outcome="lost"/.test(await a.errand.metrics()), "the stale run's end");
        const job = await b.errand.get(id);
        assert.equal(job?.progress, "from the rescuing run");
        assert.equal(await b.errand.result(id), 7);
      }));

    it("watch() yields the state, progress and result after each change and ends at the final state", () =>
      withDatabase(kind, async (db, track) => {
        const steps: (() => void)[] = [];
        const { errand } = errandOn(db, {
          jobs,
          progressInterval: "0s",
          handlers: {
            render: async (_p, job) => {
              job.progress({ page: 1 });
              await new Promise<void>((r) => steps.push(r));
              job.progress({ page: 2 });
              await new Promise<void>((r) => steps.push(r));
              return { url: "u", pages: 2 };
            },
          },
        });
        track(errand);
        const { id } = await errand.enqueue("render", { docId: "d1" });
        const seen: JobUpdate<{ url: string; pages: number }>[] = [];
        // The handler goes on to its next page once this watch has seen the page it reported.
        let released = 0;
        const watching = (async () => {
          for await (const change of errand.watch(id)) {
            seen.push(change);
            const page = (change.progress as { page?: number } | null)?.page;
            if (page === released + 1 && steps.length) {
              released++;
              steps.shift()!();
            }
          }
        })();
        await eventually(() => seen.length === 1, "the first read");
        assert.deepEqual(seen[0], { state: "available", progress: null });
        await errand.start();
        await watching;
        assert.deepEqual(seen.at(-1), { state: "completed", progress: { page: 2 }, result: { url: "u", pages: 2 } });
        const progress = seen.map((c) => JSON.stringify(c.progress));
        assert.ok(progress.includes('{"page":1}') && progress.includes('{"page":2}'), `pages seen: ${progress}`);
        for (let i = 1; i < seen.length; i++) assert.notDeepEqual(seen[i], seen[i - 1], "one update per change");
      }));

    it("watch() read slower than the job changes gets the latest state it missed, not every change", () =>
      withDatabase(kind, async (db, track) => {
        const { errand } = errandOn(db, {
          jobs,
          progressInterval: "0s",
          handlers: {
            render: async (_p, job) => {
              for (let page = 1; page <= 40; page++) {
                job.progress({ page });
                // Each page waits for its write, so the waiters read many distinct states.
                await errand.get(job.id);
              }
              return { url: "u", pages: 40 };
            },
          },
        });
        track(errand);
        const { id } = await errand.enqueue("render", { docId: "d1" });
        const updates = errand.watch(id)[Symbol.asyncIterator]();
        assert.deepEqual((await updates.next()).value, { state: "available", progress: null });
        // The watch is not read while the job runs 40 pages and completes.
        await errand.start();
        await errand.result(id, { timeout: "30s" });
        const later: unknown[] = [];
        for (let next = await updates.next(); !next.done; next = await updates.next()) later.push(next.value);
        assert.deepEqual(later, [{ state: "completed", progress: { page: 40 }, result: { url: "u", pages: 40 } }]);
      }));

    it("watch() of a failing job shows its error while it retries, and stops on its signal", () =>
      withDatabase(kind, async (db, track) => {
        const { errand } = errandOn(db, {
          jobs,
          handlers: {
            count: () => {
              throw new Error("flaky");
            },
          },
        });
        track(errand);
        await errand.start();
        const { id } = await errand.enqueue("count", { n: 1 }, { retry: backoff.fixed("1h") });
        const stopper = new AbortController();
        const seen: JobUpdate[] = [];
        for await (const change of errand.watch(id, { signal: stopper.signal })) {
          seen.push(change);
          if (change.state === "retrying") stopper.abort();
        }
        const last = seen.at(-1)!;
        assert.equal(last.state, "retrying");
        assert.equal(last.progress, null);
        assert.equal(last.error?.name, "Error");
        assert.equal(last.error?.message, "flaky");
        assert.equal(last.result, undefined);
        await assert.rejects(
          (async () => {
            for await (const _ of errand.watch("01ARZ3NDEKTSV4RRFFQ69G5FAV")) break;
          })(),
          NotFoundError,
        );
      }));

    it("job.parentResults() gives a continuation its parents' results, in the order of their ids", () =>
      withDatabase(kind, async (db, track) => {
        let got: unknown;
        const { errand } = errandOn(db, {
          jobs,
          handlers: {
            render: ({ docId }) => ({ url: docId, pages: docId.length }),
            wait: () => {},
            notify: async (_p, job) => {
              const results = await job.parentResults<"render">();
              got = results;
              return results.map((r) => r?.url ?? "none");
            },
          },
        });
        track(errand);
        const first = await errand.enqueue("render", { docId: "first" });
        const second = await errand.enqueue("render", { docId: "second!" });
        const plain = await errand.enqueue("wait", { name: "no result" });
        const after = await errand.enqueueAfter([second.id, plain.id, first.id], "notify", { docId: "d" });
        await errand.start();
        assert.deepEqual(await errand.result(after.id), ["first", "second!", "none"]);
        assert.deepEqual(got, [{ url: "first", pages: 5 }, { url: "second!", pages: 7 }, undefined]);
      }));
  });
}
