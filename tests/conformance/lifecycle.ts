import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { defineJobs, job, StateError } from "../../mod.ts";
import type { StoreKind } from "../support/stores.ts";
import { eventually } from "../support/wait.ts";
import { errandOn, testJobs, withDatabase } from "./harness.ts";

const jobs = defineJobs({ hold: job<{ n: number }>() });

/** Modes, shutdown with drain, namespaces and resizing workers. */
export function lifecycleCases(kind: StoreKind<unknown>): void {
  describe("lifecycle", () => {
    it("shutdown() lets a run finish within the drain time and keeps its outcome", () =>
      withDatabase(kind, async (db, track) => {
        let release!: () => void;
        const { errand, clock } = errandOn(db, {
          jobs,
          handlers: { hold: () => new Promise<void>((r) => (release = r)) },
        });
        track(errand);
        await errand.start();
        const { id } = await errand.enqueue("hold", { n: 1 });
        await eventually(() => release, "start");
        const stopping = errand.shutdown({ drain: "10s" });
        clock.advance(5_000);
        release();
        await stopping;
        const j = (await errand.get(id))!;
        assert.equal(j.state, "completed");
        assert.equal(j.attempt, 1);
      }));

    it("a run that drains may still enqueue; the application may not; a second shutdown() waits for the first", () =>
      withDatabase(kind, async (db, track) => {
        let release!: () => void;
        const { errand, clock } = errandOn(db, {
          jobs,
          handlers: {
            hold: async ({ n }, j) => {
              if (n > 1) return;
              await new Promise<void>((r) => (release = r));
              await j.enqueue("hold", { n: n + 1 });
            },
          },
        });
        track(errand);
        await errand.start();
        const { id } = await errand.enqueue("hold", { n: 1 });
        await eventually(() => release, "start");
        const first = errand.shutdown({ drain: "10s" });
        let secondDone = false;
        const second = errand.shutdown().then(() => (secondDone = true));
        await assert.rejects(errand.enqueue("hold", { n: 9 }), StateError);
        clock.advance(1_000);
        assert.equal(secondDone, false, "the second shutdown() waits while the run drains");
        release();
        await Promise.all([first, second]);
        const j = (await errand.get(id))!;
        assert.deepEqual([j.state, j.attempt], ["completed", 1]);
        const all = (await errand.list({ kind: "hold" })).jobs;
        const ns = all.map((x) => (x.payload as { n: number }).n).sort();
        assert.deepEqual(ns, [1, 2]);
        await assert.rejects(errand.enqueue("hold", { n: 9 }), StateError);
      }));

    it("shutdown() aborts runs still going at the drain deadline and hands them back uncounted", () =>
      withDatabase(kind, async (db, track) => {
        let signal: AbortSignal | undefined;
        const { errand, clock } = errandOn(db, {
          jobs,
          // The clock jumps 10 s at a time below: a lease that lapsed meanwhile would be rescued (and its
          // attempt counted) before the run is handed back.
          lease: "1h",
          handlers: {
            hold: (_p, j) => {
              signal = j.signal;
              return new Promise<void>(() => {});
            },
          },
        });
        track(errand);
        await errand.start();
        const { id } = await errand.enqueue("hold", { n: 1 });
        await eventually(() => signal, "start");
        let stopped = false;
        const stopping = errand.shutdown({ drain: "10s" }).then(() => (stopped = true));
        // Move time until shutdown is done: its drain timer starts only once the earlier steps are through.
        await eventually(() => (clock.advance(10_000), stopped), "shutdown at the drain deadline");
        await stopping;
        assert.equal(signal!.aborted, true);
        const j = (await errand.get(id))!;
        assert.equal(j.state, "available");
        assert.equal(j.attempt, 0);
        assert.equal(j.runs[0].outcome, "interrupted");
        await assert.rejects(errand.enqueue("hold", { n: 2 }), StateError);
      }));

    it("a second shutdown() with a drain of its own ends the first one's drain then, handing runs back uncounted", () =>
      withDatabase(kind, async (db, track) => {
        let signal: AbortSignal | undefined;
        const { errand } = errandOn(db, {
          jobs,
          lease: "1h",
          handlers: {
            hold: (_p, j) => {
              signal = j.signal;
              return new Promise<void>(() => {});
            },
          },
        });
        track(errand);
        await errand.start();
        const { id } = await errand.enqueue("hold", { n: 1 });
        await eventually(() => signal, "start");
        let stopped = false;
        const first = errand.shutdown({ drain: "1h" }).then(() => (stopped = true));
        // As at a second SIGTERM: the fake clock never moves, so only the second call can end the drain.
        const second = errand.shutdown({ drain: 0 });
        await eventually(() => stopped, "the first shutdown() to end without its hour of drain");
        await Promise.all([first, second]);
        assert.equal(signal!.aborted, true);
        const j = (await errand.get(id))!;
        assert.deepEqual([j.state, j.attempt, j.runs[0].outcome], ["available", 0, "interrupted"]);
      }));

    it('mode "enqueue" starts no timer and runs no job', () =>
      withDatabase(kind, async (db, track) => {
        let ran = false;
        const { errand, clock } = errandOn(db, { jobs, mode: "enqueue", handlers: { hold: () => void (ran = true) } });
        track(errand);
        await errand.start();
        const { id } = await errand.enqueue("hold", { n: 1 });
        await new Promise((r) => setTimeout(r, 30));
        assert.equal(clock.pendingTimers, 0);
        assert.equal(ran, false);
        assert.equal((await errand.get(id))!.state, "available");
        assert.throws(() => errand.addWorkers("default", 1), StateError);
      }));

    it("namespaces sharing a database never see each other's jobs", () =>
      withDatabase(kind, async (db, track) => {
        const ranIn: string[] = [];
        const a = errandOn(db, { jobs, namespace: "a", handlers: { hold: () => void ranIn.push("a") } });
        const b = errandOn(db, { jobs, namespace: "b", handlers: { hold: () => void ranIn.push("b") } });
        track(a.errand);
        track(b.errand);
        await a.errand.start();
        await b.errand.start();
        const { id } = await a.errand.enqueue("hold", { n: 1 });
        await eventually(async () => (await a.errand.get(id))?.state === "completed", "completion in a");
        assert.deepEqual(ranIn, ["a"]);
        assert.equal(await b.errand.get(id), null);
        assert.equal((await b.errand.list()).jobs.length, 0);
      }));

    it("addWorkers() and removeWorkers() change a queue's concurrency at run time", () =>
      withDatabase(kind, async (db, track) => {
        const releases: (() => void)[] = [];
        const { errand } = errandOn(db, {
          jobs,
          queues: { default: { concurrency: 1 } },
          handlers: { hold: () => new Promise<void>((r) => releases.push(r)) },
        });
        track(errand);
        await errand.start();
        await errand.enqueueMany([1, 2, 3, 4].map((n) => ({ kind: "hold" as const, payload: { n } })));
        await eventually(() => releases.length === 1, "one running");
        errand.addWorkers("default", 2);
        await eventually(() => releases.length === 3, "three running");
        const removal = errand.removeWorkers("default", 2);
        let removed = false;
        void removal.then(() => (removed = true));
        await new Promise((r) => setTimeout(r, 20));
        assert.equal(removed, false, "removal waits for the running jobs");
        releases[0]();
        releases[1]();
        await removal;
        await new Promise((r) => setTimeout(r, 30));
        assert.equal(releases.length, 3, "no new job while over the new concurrency");
        releases[2]();
        await eventually(() => releases.length === 4, "fourth job after the slot frees");
        releases[3]();
      }));

    it("maintenance promotes a due scheduled job to available", () =>
      withDatabase(kind, async (db, track) => {
        // A "work" instance without handlers runs maintenance but no worker.
        const { errand, clock } = errandOn(db, { jobs });
        track(errand);
        await errand.start();
        const { id } = await errand.enqueue("hold", { n: 1 }, { delay: "30s" });
        assert.equal((await errand.get(id))!.state, "scheduled");
        clock.advance(30_000);
        await eventually(async () => (await errand.get(id))?.state === "available", "promotion");
      }));

    it("createErrand() rejects handlers for unknown kinds", () =>
      withDatabase(kind, (db) => {
        assert.throws(
          // @ts-expect-error: "nope" is not a kind
          () => errandOn(db, { jobs: testJobs, handlers: { nope: () => {} } }),
          /handler for "nope", which is not a kind/,
        );
        return Promise.resolve();
      }));
  });
}
