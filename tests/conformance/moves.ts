import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  createErrand,
  defineJobs,
  type Errand,
  job,
  type MoveProgress,
  moveStore,
  StateError,
  ValidationError,
} from "../../mod.ts";
import type { Store } from "../../src/store/mod.ts";
import { FakeClock } from "../../src/testing.ts";
import type { StoreKind, TestDatabase } from "../support/stores.ts";
import {
  assertCarried,
  type FillSizes,
  fillSource,
  fixtureErrand,
  moveJobs,
  moveTopics,
  snapshot,
} from "../support/move_fixture.ts";

const SMALL: FillSizes = {
  plain: 30,
  delayed: 5,
  ordered: 40,
  keys: 4,
  continuations: 6,
  unique: 3,
  mail: 4,
  finished: 2,
  lapsed: 2,
};

/** Opens two fresh databases of `kind`, runs `body`, and closes both. */
async function withTwo(
  kind: StoreKind<unknown>,
  body: (a: TestDatabase<unknown>, b: TestDatabase<unknown>) => Promise<void>,
): Promise<void> {
  const a = await kind.open();
  try {
    const b = await kind.open();
    try {
      await body(a, b);
    } finally {
      await b.close();
    }
  } finally {
    await a.close();
  }
}

/** Runs every due job of `store` (the fixture's kinds) and returns each partition key's `n`s in run order. */
async function runTarget(store: Store, clock: FakeClock): Promise<Map<string, number[]>> {
  const order = new Map<string, number[]>();
  const errand = createErrand({
    jobs: moveJobs,
    topics: moveTopics,
    store,
    clock,
    mode: "manual",
    logger: { debug() {}, info() {}, warn() {}, error() {} },
    queues: { lapsed: {}, unique: {} },
    handlers: {
      plain: () => {},
      after: () => {},
      mail: ({ n }) => ({ sent: n }),
      ordered: ({ key, n }) => void order.set(key, [...order.get(key) ?? [], n]),
    },
  });
  try {
    await errand.resumeQueue("after");
    await errand.step();
  } finally {
    await errand.shutdown();
  }
  return order;
}

/** Moves `clock` on a second at a time until `promise` settles. */
async function advanceUntil(clock: FakeClock, promise: Promise<unknown>): Promise<void> {
  let settled = false;
  void promise.then(() => (settled = true), () => (settled = true));
  while (!settled) {
    await new Promise((r) => setTimeout(r, 5));
    clock.advance(1_000);
  }
}

const HOUR = 3_600_000;

/** The workflows of the move tests: each suspends in its own way before the move. */
const flows = defineJobs({
  flow: job<{ key: string; mode: "waits" | "timeout" | "invoke" | "invoked" | "late" }, { got: unknown[] }>(),
  child: job<{ n: number }, { doubled: number }>(),
});

/**
 * An errand running {@link flows} on `store`, counting in `ran` each run of
 * a step's function, by job key and step (and of each child, by `n`). A
 * flow runs step "before", then by mode: "waits" takes an event, sleeps an
 * hour and takes another; "timeout" waits two hours at most for one;
 * "invoke" waits for a child delayed 90 minutes; "invoked" for a child
 * delayed 10 minutes; "late" waits for an event. Then it runs step "after".
 */
function flowErrand(store: Store, clock: FakeClock, ran: Map<string, number>): Errand<typeof flows, unknown> {
  const count = (name: string) => ran.set(name, (ran.get(name) ?? 0) + 1);
  return createErrand({
    jobs: flows,
    store,
    clock,
    mode: "manual",
    queues: { held: {} },
    logger: { debug() {}, info() {}, warn() {}, error() {} },
    handlers: {
      flow: async ({ key, mode }, job) => {
        const got: unknown[] = [await job.step("before", () => (count(`${key} before`), `${key} before`))];
        if (mode === "waits") {
          got.push(await job.waitForEvent("paid", { key }));
          await job.sleep("nap", "1h");
          got.push(await job.waitForEvent("paid", { key }));
        } else if (mode === "timeout") {
          got.push(await job.waitForEvent("paid", { key, timeout: "2h" }));
        } else if (mode === "late") {
          got.push(await job.waitForEvent("paid", { key }));
        } else {
          const [n, delay] = mode === "invoke" ? [21, "90m"] as const : [5, "10m"] as const;
          got.push(await job.invoke("call", "child", { n }, { delay }));
        }
        got.push(await job.step("after", () => (count(`${key} after`), `${key} after`)));
        return { got };
      },
      child: ({ n }) => {
        count(`child ${n}`);
        return { doubled: 2 * n };
      },
    },
  });
}

/** Moving a store into another of the same kind (the cross-kind moves are in tests/processes/move_test.ts). */
export function moveCases(kind: StoreKind<unknown>): void {
  describe("moving a store", () => {
    it("moveStore() carries every job with every field, schedules, partitions, paused queues and logs, then the target runs them in order", () =>
      withTwo(kind, async (a, b) => {
        const clock = new FakeClock(Date.now());
        const from = a.store();
        const to = b.store();
        await fillSource(from, clock, SMALL);
        const before = await snapshot(from);
        // The jobs as jobGet() reads them, which shares no code with jobExport().
        const read = async (store: Store) =>
          new Map(
            await Promise.all([...before.jobs.keys()].map(async (id) => [id, await store.jobGet({ id })] as const)),
          );
        const got = await read(from);
        // Failed mail waits for its retry: jobGet() below reads it as retrying on the target too.
        assert.ok([...got.values()].some((j) => j?.state === "retrying"), "the source holds retrying jobs");
        const phases: string[] = [];
        const report = await moveStore(from, to, {
          history: true,
          clock,
          batchSize: 7,
          onProgress: (p) => phases.at(-1) !== p.phase && phases.push(p.phase),
        });
        assert.deepEqual(phases, ["prepare", "copy", "verify", "commit", "events", "logs", "done"]);
        assertCarried(before, await snapshot(to), true);
        for (const [id, job] of await read(to)) {
          const was = got.get(id)!;
          if (was.state === "running" || was.state === "waiting") continue; // rescued or released on the way
          assert.deepEqual(job, was, `jobGet() reads job ${id} from the target as from the source`);
        }
        assert.equal(report.verified, true);
        assert.equal(report.rescued, 2);
        assert.equal(report.running, 2);
        assert.equal(report.schedules, 2);
        assert.equal(report.partitions, before.partitions.length);
        assert.equal(report.jobs + report.history, before.jobs.size);
        assert.equal(
          report.history,
          [...before.jobs.values()].filter((j) =>
            j.state === "completed" || j.state === "failed" || j.state === "cancelled"
          ).length,
        );
        assert.deepEqual(report.pausedQueues, ["after"]);
        assert.ok(before.logs.length > 0 && before.consumers.length > 0);
        assert.deepEqual(report.logs, {
          partitions: before.logs.length,
          records: 50,
          consumerOffsets: before.consumers.length,
        });
        // The source holds nothing it could run, and stays paused.
        const left = await snapshot(from);
        assert.equal(left.jobs.size, 0);
        assert.deepEqual(left.schedules, []);
        assert.deepEqual(report.sourcePaused, left.paused);
        for (const queue of ["default", "mail", "orders", "after", "unique", "lapsed"]) {
          assert.ok(left.paused.includes(queue), `queue "${queue}" stays paused on the source`);
        }
        // The target's queues run but the one paused before the move; its jobs run in partition order.
        assert.deepEqual(await to.queuesPaused(), ["after"]);
        const order = await runTarget(to, clock);
        assert.equal(order.size, SMALL.keys);
        for (const [key, ns] of order) assert.deepEqual(ns, ns.map((_, i) => i), `key ${key} runs in order`);
        const counts = await to.jobCounts();
        assert.deepEqual(counts.filter((c) => c.state === "available"), [], "every due job ran on the target");
      }));

    it("moveStore() carries suspended workflows with their steps and kept events: each completes on the target, no completed step runs again", () =>
      withTwo(kind, async (a, b) => {
        const clock = new FakeClock(Date.now());
        const from = a.store();
        const to = b.store();
        // An event of another namespace of the target: the target has numbered events before.
        const neighbour = createErrand({ jobs: flows, store: b.store("other"), clock, mode: "enqueue" });
        await neighbour.sendEvent("paid", { key: "waits", data: "not this one" });
        await neighbour.shutdown();
        const ran = new Map<string, number>();
        const source = flowErrand(from, clock, ran);
        const ids: Record<string, string> = {};
        await source.sendEvent("paid", { key: "waits", data: { n: 1 } });
        for (const mode of ["waits", "timeout", "invoke", "invoked", "late"] as const) {
          ids[mode] =
            (await source.enqueue("flow", { key: mode, mode }, { queue: mode === "invoked" ? "held" : "default" }))
              .id;
        }
        const start = clock.now();
        await source.step();
        // "invoked"'s child runs; its queue paused, the workflow is resumed but does not run yet.
        await source.pauseQueue("held");
        clock.advance(10 * 60_000);
        await source.step();
        const states = async (store: Store) =>
          Object.fromEntries(
            await Promise.all(Object.entries(ids).map(async ([m, id]) => [m, (await store.jobGet({ id }))?.state])),
          );
        const suspended = {
          waits: "scheduled",
          timeout: "waiting",
          invoke: "waiting",
          invoked: "available",
          late: "waiting",
        };
        assert.deepEqual(
          await states(from),
          suspended,
          "each workflow is suspended, the one whose child ran resumed but not run yet",
        );
        const doneChild = (await from.stepList({ id: ids.invoked }))[1].childId!;
        assert.equal((await from.jobGet({ id: doneChild }))?.state, "completed");
        // Sent while "waits" sleeps, before it reaches its second wait: kept.
        assert.equal((await source.sendEvent("paid", { key: "waits", data: { n: 2 } })).resumed, 0);
        await source.shutdown();
        const stepsBefore = new Map(
          await Promise.all(Object.values(ids).map(async (id) => [id, await from.stepList({ id })] as const)),
        );

        const report = await moveStore(from, to, { clock, batchSize: 2 });
        assert.equal(report.verified, true);
        assert.equal(report.events, 2, "the two events the source kept");
        assert.equal(report.history, 1, "the finished child that a moved workflow waits for");
        assert.deepEqual(await states(to), suspended, "each workflow as it was on the source");
        assert.deepEqual(await from.jobCounts(), [], "nothing is left on the source, not even the finished child");
        assert.equal((await to.jobGet({ id: doneChild }))?.state, "completed");
        const [timing] = await to.jobExport({ ids: [ids.timeout] });
        assert.equal(timing.wakeAt, start + 2 * HOUR, "the event wait's timeout");
        for (const [id, steps] of stepsBefore) {
          const moved = await to.stepList({ id });
          assert.deepEqual(
            moved.map((s) => [s.name, s.type, s.state, s.wakeAt, s.childId, s.result && [...s.result]]),
            steps.map((s) => [s.name, s.type, s.state, s.wakeAt, s.childId, s.result && [...s.result]]),
            `job ${id}'s steps`,
          );
        }

        // Sent to the source after the move, to a workflow that waits on the target: a rerun delivers it.
        const straggler = createErrand({ jobs: flows, store: from, clock, mode: "enqueue" });
        assert.equal((await straggler.sendEvent("paid", { key: "late", data: { n: 3 } })).resumed, 0);
        await straggler.shutdown();
        const again = await moveStore(from, to, { clock });
        assert.equal(again.events, 1);
        assert.equal((await to.jobGet({ id: ids.late }))?.state, "available", "the late event resumed its waiter");

        const target = flowErrand(to, clock, ran);
        try {
          await target.resumeQueue("held");
          await target.step();
          for (let i = 0; i < 5; i++) {
            clock.advance(HOUR / 2);
            await target.step();
            await target.step();
          }
          assert.deepEqual(await target.result(ids.waits), {
            got: ["waits before", { n: 1 }, { n: 2 }, "waits after"],
          }, "the second wait takes the event kept before the move, not the one the first took");
          assert.deepEqual(await target.result(ids.timeout), { got: ["timeout before", null, "timeout after"] });
          assert.deepEqual(await target.result(ids.invoke), {
            got: ["invoke before", { doubled: 42 }, "invoke after"],
          });
          assert.deepEqual(await target.result(ids.invoked), {
            got: ["invoked before", { doubled: 10 }, "invoked after"],
          });
          assert.deepEqual(await target.result(ids.late), { got: ["late before", { n: 3 }, "late after"] });
        } finally {
          await target.shutdown();
        }
        const once = Object.fromEntries([...ran].sort());
        assert.deepEqual(
          once,
          Object.fromEntries(
            [
              ...Object.keys(ids).flatMap((k) => [`${k} before`, `${k} after`]),
              "child 21",
              "child 5",
            ].sort().map((k) => [k, 1]),
          ),
          "every step's function and every child ran once, across both stores",
        );
      }));

    it("moveStore() stopped at any batch and run again never loses or duplicates a job", () =>
      withTwo(kind, async (a, b) => {
        const clock = new FakeClock(Date.now());
        const from = a.store();
        const to = b.store();
        await fillSource(from, clock, SMALL);
        const before = await snapshot(from);
        let stops = 0;
        let report;
        // Each call stops at the 5th progress report after the one the previous call stopped at.
        for (let stopAt = 5;; stopAt += 5) {
          const controller = new AbortController();
          let seen = 0;
          const onProgress = (_: MoveProgress) => ++seen === stopAt && controller.abort(new Error("stopped"));
          try {
            report = await moveStore(from, to, {
              history: false,
              clock,
              batchSize: 4,
              onProgress,
              signal: controller.signal,
            });
            break;
          } catch (err) {
            if ((err as Error).message !== "stopped") throw err;
            stops++;
            // Whatever the move stopped in, no job runs on either store meanwhile.
            assert.ok((await from.queuesPaused()).includes("default"));
          }
        }
        assert.ok(stops >= 5, `the move was stopped ${stops} times`);
        assert.equal(report.verified, true);
        assert.equal(report.resumed, true);
        assertCarried(before, await snapshot(to), false);
        const left = await snapshot(from);
        assert.deepEqual(
          [...left.jobs.values()].map((j) => j.state).sort(),
          [...before.jobs.values()].filter((j) => ["completed", "failed", "cancelled"].includes(j.state)).map((j) =>
            j.state
          ).sort(),
          "only the finished jobs stay on the source without history",
        );
      }));

    it("moveStore() run again after it is done carries what reached the source since", () =>
      withTwo(kind, async (a, b) => {
        const clock = new FakeClock(Date.now());
        const from = a.store();
        const to = b.store();
        const source = fixtureErrand(from, clock);
        await source.enqueue("plain", { n: 1 });
        const first = await moveStore(from, to, { clock });
        const late = await source.enqueue("plain", { n: 2 });
        await source.shutdown();
        const again = await moveStore(from, to, { clock });
        assert.equal(again.id, first.id);
        assert.equal(again.jobs, 1);
        assert.equal((await to.jobExport({ ids: [late.id] }))[0]?.state, "available");
        assert.deepEqual(await to.queuesPaused(), []);
        assert.deepEqual(await from.jobCounts(), []);
      }));

    it("moveStore() never drops a job that reached the source after another with its unique key moved: it carries it under its own id, without the key", () =>
      withTwo(kind, async (a, b) => {
        const clock = new FakeClock(Date.now());
        const from = a.store();
        const to = b.store();
        const source = fixtureErrand(from, clock);
        const unique = { unique: { key: "k" } };
        const first = await source.enqueue("plain", { n: 1 }, unique);
        const firstMove = await moveStore(from, to, { clock });
        const late = await source.enqueue("plain", { n: 2 }, unique);
        assert.equal(late.inserted, true, "the source acknowledges the job: its key left with the moved one");
        await source.shutdown();
        const messages: string[] = [];
        const again = await moveStore(from, to, { clock, onProgress: (p) => p.message && messages.push(p.message) });
        const [kept, carried] = await to.jobExport({ ids: [first.id, late.id] });
        assert.equal(carried?.id, late.id, "the late job is on the target");
        assert.equal(carried.state, "available");
        assert.equal(carried.uniqueKey, null);
        assert.equal(kept.uniqueKey !== null, true, "the job moved first keeps the key");
        assert.deepEqual(await from.jobCounts(), []);
        assert.equal(again.jobs, 1);
        assert.equal(firstMove.uniqueConflicts, 0);
        assert.equal(again.uniqueConflicts, 1);
        assert.ok(messages.some((m) => m.includes(late.id)), messages.join("\n"));
        // Run again, the move finds everything in place.
        assert.equal((await moveStore(from, to, { clock })).uniqueConflicts, 0);
        assert.equal((await to.jobExport({ ids: [late.id] })).length, 1);
      }));

    it("moveStore() waits for a running job, and fails after runningTimeout while its lease holds", () =>
      withTwo(kind, async (a, b) => {
        const clock = new FakeClock(Date.now());
        const from = a.store();
        const to = b.store();
        const source = fixtureErrand(from, clock);
        const { id } = await source.enqueue("plain", { n: 1 });
        await source.shutdown();
        const [claimed] = await from.jobClaim({
          queue: "default",
          kinds: ["plain@1"],
          limit: 1,
          now: clock.now(),
          leaseUntil: clock.now() + 60_000,
          workerId: "busy",
          heads: null,
          limits: null,
        });
        await assert.rejects(moveStore(from, to, { clock, history: true, runningTimeout: 0 }), (err) => {
          assert.ok(err instanceof StateError);
          assert.match(err.message, /1 jobs still run on the source under live leases.*run the move again/);
          return true;
        });
        assert.ok((await from.queuesPaused()).includes("default"), "the source stays paused for the rerun");
        await from.jobFinishMany({ finishes: [{ id, fence: claimed.fence, state: "completed", at: clock.now() }] });
        const report = await moveStore(from, to, { clock, history: true });
        assert.equal(report.history, 1);
        assert.equal((await to.jobExport({ ids: [id] }))[0]?.state, "completed");
      }));

    it("moveStore() refuses the same store, another namespace and a target with jobs; a dry run writes nothing", () =>
      withTwo(kind, async (a, b) => {
        const clock = new FakeClock(Date.now());
        const from = a.store();
        const source = fixtureErrand(from, clock);
        await source.enqueue("plain", { n: 1 });
        await source.enqueue("plain", { n: 2 }, { delay: "1h" });
        await source.shutdown();
        await assert.rejects(moveStore(from, from), ValidationError);
        await assert.rejects(moveStore(from, a.store(), { clock }), /same database and namespace/);
        await assert.rejects(
          moveStore(from, b.store("other")),
          /namespace is "default" but the target's is "other".*renameNamespace/,
        );
        const dry = await moveStore(from, b.store(), { dryRun: true, clock });
        assert.equal(dry.dryRun, true);
        assert.equal(dry.jobs, 2);
        assert.deepEqual(dry.byQueue, { default: { available: 1, scheduled: 1 } });
        assert.deepEqual(dry.sourcePaused, ["default"]);
        assert.deepEqual(await from.queuesPaused(), [], "a dry run pauses nothing");
        const target = fixtureErrand(b.store(), clock);
        await target.enqueue("plain", { n: 3 });
        await target.shutdown();
        await assert.rejects(moveStore(from, b.store(), { clock }), (err) => {
          assert.ok(err instanceof ValidationError);
          assert.match(err.message, /already holds 1 jobs/);
          return true;
        });
        // Into another namespace of the target's database, renamed on the way.
        const report = await moveStore(from, b.store("other"), { clock, renameNamespace: true });
        assert.equal(report.jobs, 2);
        assert.equal((await b.store("other").jobCounts()).reduce((n, c) => n + c.count, 0), 2);
      }));

    it("a second moveStore() call waits for the move's lease, and fails while a live call keeps it", () =>
      withTwo(kind, async (a, b) => {
        const clock = new FakeClock(Date.now());
        const from = a.store();
        const source = fixtureErrand(from, clock);
        await source.enqueue("plain", { n: 1 });
        await source.shutdown();
        // A call that keeps its lease: the other call gives up after two lease lengths.
        await from.leaderAcquire({ name: "move", holder: "live", now: clock.now(), until: clock.now() + 3_600_000 });
        const messages: string[] = [];
        const onProgress = (p: MoveProgress) => void (p.message && messages.push(p.message));
        const refused = assert.rejects(moveStore(from, b.store(), { clock, onProgress }), (err) => {
          assert.ok(err instanceof StateError);
          assert.match(err.message, /Another moveStore\(\) call is moving this store now/);
          return true;
        });
        await advanceUntil(clock, refused);
        await refused;
        assert.match(messages.join("\n"), /Waiting for another moveStore\(\) call/);
        assert.deepEqual(await from.queuesPaused(), [], "the refused call paused nothing");
        // A call that was killed: its lease lapses, and the next call goes on.
        await from.leaderRelease({ name: "move", holder: "live" });
        await from.leaderAcquire({ name: "move", holder: "killed", now: clock.now(), until: clock.now() + 10_000 });
        const moving = moveStore(from, b.store(), { clock });
        await advanceUntil(clock, moving);
        assert.equal((await moving).jobs, 1);
      }));

    it("moveStore() stopped before it removed a job goes into another target; stopped after, it keeps to its target", () =>
      withTwo(kind, async (a, b) => {
        const c = await kind.open();
        try {
          const clock = new FakeClock(Date.now());
          const from = a.store();
          const source = fixtureErrand(from, clock);
          await source.enqueueMany(Array.from({ length: 30 }, (_, n) => ({ kind: "plain" as const, payload: { n } })));
          await source.shutdown();
          const stopIn = (phase: string) => {
            const controller = new AbortController();
            const onProgress = (p: MoveProgress) =>
              p.phase === phase && p.done >= 10 && controller.abort(new Error("stopped"));
            return { clock, batchSize: 5, onProgress, signal: controller.signal };
          };
          await assert.rejects(moveStore(from, b.store(), stopIn("copy")), /stopped/);
          // Into another target after all, and back: it begins afresh each time.
          await assert.rejects(moveStore(from, c.store(), stopIn("copy")), /stopped/);
          await assert.rejects(moveStore(from, b.store(), stopIn("verify")), /stopped/);
          await assert.rejects(moveStore(from, c.store(), stopIn("commit")), /stopped/);
          await assert.rejects(moveStore(from, b.store(), { clock }), (err) => {
            assert.ok(err instanceof StateError);
            assert.match(err.message, /has begun removing jobs from the source into another target/);
            return true;
          });
          const report = await moveStore(from, c.store(), { clock });
          assert.equal(report.verified, true);
          assert.equal((await c.store().jobCounts()).reduce((n, x) => n + x.count, 0), 30);
          assert.deepEqual(await from.jobCounts(), []);
          assert.deepEqual(await c.store().queuesPaused(), []);
        } finally {
          await c.close();
        }
      }));

    it("jobImport() leaves out a job whose unique key the target holds, or whose id another namespace holds", () =>
      withTwo(kind, async (a, b) => {
        const clock = new FakeClock(Date.now());
        const source = fixtureErrand(a.store(), clock);
        const { id } = await source.enqueue("plain", { n: 1 }, { unique: { key: "k" } });
        await source.shutdown();
        const [job] = await a.store().jobExport({ ids: [id] });
        const target = fixtureErrand(b.store(), clock);
        const { id: holder } = await target.enqueue("plain", { n: 1 }, { unique: { key: "k" } });
        await target.shutdown();
        assert.deepEqual(await b.store().jobImport({ jobs: [job] }), { held: [{ id, holder }], foreign: [] });
        const elsewhere = b.store("elsewhere");
        assert.deepEqual(await elsewhere.jobImport({ jobs: [job] }), { held: [], foreign: [] });
        assert.deepEqual(await elsewhere.jobImport({ jobs: [job] }), { held: [], foreign: [] }, "twice is once");
        assert.deepEqual(await b.store("third").jobImport({ jobs: [job] }), { held: [], foreign: [id] });
        assert.equal((await elsewhere.jobCounts()).reduce((n, c) => n + c.count, 0), 1);
      }));

    it("jobDeleteMoved() deletes a job only as stamped, not running, and after its waiting children", () =>
      withTwo(kind, async (a) => {
        const clock = new FakeClock(Date.now());
        const store = a.store();
        const errand = fixtureErrand(store, clock);
        const parent = await errand.enqueue("plain", { n: 1 });
        const child = await errand.enqueueAfter(parent.id, "after", { n: 2 });
        const other = await errand.enqueue("plain", { n: 3 });
        await errand.shutdown();
        const stamp = async (id: string) => {
          const [j] = await store.jobExport({ ids: [id] });
          return { id, state: j.state, fence: j.fence };
        };
        const [p, c, o] = [await stamp(parent.id), await stamp(child.id), await stamp(other.id)];
        assert.deepEqual(await store.jobDeleteMoved({ jobs: [{ ...o, fence: o.fence + 1 }] }), [], "another fence");
        assert.deepEqual(await store.jobDeleteMoved({ jobs: [{ ...o, state: "scheduled" }] }), [], "another state");
        assert.deepEqual(await store.jobDeleteMoved({ jobs: [p, c] }), [child.id], "the parent waits for its child");
        assert.deepEqual(await store.jobDeleteMoved({ jobs: [p] }), [parent.id]);
        assert.deepEqual((await store.jobRelatives({ id: parent.id, limit: 10 })).children, [], "links go too");
        await store.jobClaim({
          queue: "default",
          kinds: ["plain@1"],
          limit: 1,
          now: clock.now(),
          leaseUntil: clock.now() + 1000,
          workerId: "w",
          heads: null,
          limits: null,
        });
        const running = await stamp(other.id);
        assert.equal(running.state, "running");
        assert.deepEqual(await store.jobDeleteMoved({ jobs: [running] }), [], "never a running job");
      }));
  });
}
