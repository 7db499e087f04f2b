/**
 * Cases of the steps slice: steps saved and suspended on under the run's
 * fence, events kept and sent to the jobs waiting on them, invoked children
 * releasing their parent, and the other slices' operations that see
 * workflows (promotion of timed-out event waits, resolution of waiting
 * jobs, deletes taking the steps along).
 *
 * @module
 */
import type { RunRecord } from "../../base/types.ts";
import type { ClaimedJob } from "../records.ts";
import type { EventSendParams, EventSent, StepRow, StepSuspended, StepSuspendParams } from "../steps.ts";
import type { Store } from "../store.ts";
import { cases, skip, type StoreCase } from "./case.ts";
import { check, checkEqual, checkFields } from "./check.ts";
import { insert, jobRow, newId, ready, running, settle, stepRow, T0, waitingStep } from "./fixtures.ts";

const data = new Uint8Array([0x91, 0x2a]);

/** Waits `ms` of real time: long enough for a concurrent statement to reach the store. */
function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The run a suspension appends to the job's history. */
function suspendedRun(job: ClaimedJob): RunRecord {
  return { attempt: job.attempt, startedAt: job.startedAt, finishedAt: T0 + 2, outcome: "suspended" };
}

/** Suspends `job`'s run on `step` at `T0 + 2`, taking any kept event unless `fields` say otherwise. */
function suspend(
  store: Store,
  job: ClaimedJob,
  step: StepRow,
  fields: Partial<StepSuspendParams> = {},
): Promise<StepSuspended> {
  return store.stepSuspend({
    id: job.id,
    fence: job.fence,
    step,
    run: suspendedRun(job),
    now: T0 + 2,
    afterSeq: null,
    sentSince: 0,
    ...fields,
  });
}

/** An event wait on `event` and `key`, without a timeout unless `fields` say otherwise. */
function eventStep(event: string, key: string, fields: Partial<StepRow> = {}): StepRow {
  return waitingStep({ name: "wait", type: "event", event, key, wakeAt: null, ...fields });
}

/** Sends event "paid" with key "k1" at `T0 + 10` (no wake-up), unless `fields` say otherwise. */
function send(store: Store, fields: Partial<EventSendParams> = {}): Promise<EventSent> {
  return store.eventSend({ id: newId(), event: "paid", key: "k1", data, now: T0 + 10, notify: false, ...fields });
}

/** A job that ran and is now suspended on `step`, which the store must have accepted. */
async function suspended(store: Store, step: StepRow, fields: Partial<StepSuspendParams> = {}): Promise<ClaimedJob> {
  const job = await running(store);
  const outcome = await suspend(store, job, step, fields);
  checkEqual(outcome.status, "suspended", `the suspension of "${job.id}" on "${step.name}"`);
  return job;
}

/** The job's state, or null when it is gone. */
async function stateOf(store: Store, id: string): Promise<string | null> {
  return (await store.jobGet({ id }))?.state ?? null;
}

/** The cases of steps and events. */
export const stepCases: StoreCase[] = cases("steps", [
  ["eventListWaiting", "eventListWaiting() counts the waiting jobs by event name, only jobs waiting", async (env) => {
    const store = await ready(env);
    await suspended(store, eventStep("paid", "k1"));
    await suspended(store, eventStep("paid", "k2"));
    await suspended(store, eventStep("shipped", "k1"));
    // A waiting event step of a job that is not waiting (its run goes on) is not counted.
    const busy = await running(store);
    checkEqual(
      await store.stepSave({ saves: [{ id: busy.id, fence: busy.fence, step: eventStep("paid", "k3") }] }),
      [true],
      "the save",
    );
    const counts = (await store.eventListWaiting({})).sort((a, b) => a.event.localeCompare(b.event));
    checkEqual(counts, [{ event: "paid", jobs: 2 }, { event: "shipped", jobs: 1 }], "every event");
    checkEqual(await store.eventListWaiting({ event: "paid" }), [{ event: "paid", jobs: 2 }], "one event");
    checkEqual(await store.eventListWaiting({ event: "none" }), [], "an event nobody waits on");
  }],
  ["eventPrune", "eventPrune() deletes at most limit events sent before before", async (env) => {
    const store = await ready(env);
    for (const now of [T0, T0 + 1, T0 + 2]) await send(store, { now, data: new Uint8Array([now - T0]) });
    checkEqual(await store.eventPrune({ before: T0 + 2, limit: 1 }), 1, "the first prune");
    checkEqual(await store.eventPrune({ before: T0 + 2, limit: 10 }), 1, "the second prune");
    checkEqual(await store.eventPrune({ before: T0 + 2, limit: 10 }), 0, "the third prune");
    // The event left is the last one: a wait takes it.
    const job = await running(store);
    const outcome = await suspend(store, job, eventStep("paid", "k1"));
    check(outcome.status === "resolved", `the wait took a kept event: ${JSON.stringify(outcome.status)}`);
    checkEqual(outcome.step.result, new Uint8Array([2]), "the event the wait took");
  }],
  ["eventSend", "eventSend() with the id of a kept event does nothing", async (env) => {
    const store = await ready(env);
    const id = newId();
    checkEqual(await send(store, { id, now: T0 }), { duplicate: false, resumed: [] }, "the first send");
    // Waits only on events sent after the first one.
    const job = await suspended(store, eventStep("paid", "k1"), { sentSince: T0 + 1 });
    checkEqual(await send(store, { id, now: T0 + 20 }), { duplicate: true, resumed: [] }, "the second send");
    checkEqual(await stateOf(store, job.id), "waiting", "the waiting job");
    checkFields((await store.stepList({ id: job.id }))[0], { state: "waiting" }, "its step");
  }],
  [
    "eventSend",
    "eventSend() resumes every job waiting on its name and key, not other keys, names, namespaces, nor a job not waiting",
    async (env) => {
      const store = await ready(env);
      const other = await ready(env, "other");
      const a = await suspended(store, eventStep("paid", "k1"));
      const b = await suspended(store, eventStep("paid", "k1", { name: "other step" }));
      const otherKey = await suspended(store, eventStep("paid", "k2"));
      const otherName = await suspended(store, eventStep("shipped", "k1"));
      const elsewhere = await suspended(other, eventStep("paid", "k1"));
      const busy = await running(store);
      await store.stepSave({ saves: [{ id: busy.id, fence: busy.fence, step: eventStep("paid", "k1") }] });
      const sent = await send(store, { now: T0 + 10 });
      checkEqual(sent.duplicate, false, "duplicate");
      checkEqual(
        [...sent.resumed].sort((x, y) => x.id.localeCompare(y.id)),
        [{ id: a.id, queue: "default" }, { id: b.id, queue: "default" }],
        "the resumed jobs",
      );
      for (const job of [a, b]) {
        checkEqual(await stateOf(store, job.id), "available", `resumed job "${job.id}"`);
        const [step] = await store.stepList({ id: job.id });
        checkFields(step, { state: "completed", result: data, finishedAt: T0 + 10 }, `the step of "${job.id}"`);
        check(typeof step.eventSeq === "number", `the step of "${job.id}" names the event taken: ${step.eventSeq}`);
      }
      for (const job of [otherKey, otherName]) checkEqual(await stateOf(store, job.id), "waiting", `job "${job.id}"`);
      checkEqual(await stateOf(other, elsewhere.id), "waiting", "the other namespace's job");
      checkEqual(await stateOf(store, busy.id), "running", "the job not waiting");
      checkFields((await store.stepList({ id: busy.id }))[0], { state: "waiting" }, "its step");
    },
  ],
  ["eventSend", "eventSend() in an application transaction counts only if it commits", async (env) => {
    if (!env.transaction) return skip("the store takes no application transaction");
    const store = await ready(env);
    const job = await suspended(store, eventStep("paid", "k1"));
    const id = newId();
    const failure = new Error("roll back");
    const thrown = await env.transaction(async (tx): Promise<never> => {
      const sent = await store.inTransaction(tx).eventSend({
        id,
        event: "paid",
        key: "k1",
        data,
        now: T0 + 10,
        notify: true,
      });
      checkEqual(sent.resumed.map((r) => r.id), [job.id], "resumed in the transaction");
      throw failure;
    }).catch((err: unknown) => err);
    checkEqual(thrown === failure, true, "the transaction's error came back");
    checkEqual(await stateOf(store, job.id), "waiting", "the job after the rollback");
    checkFields((await store.stepList({ id: job.id }))[0], { state: "waiting" }, "its step after the rollback");
    const sent = await env.transaction((tx) =>
      store.inTransaction(tx).eventSend({ id, event: "paid", key: "k1", data, now: T0 + 11, notify: true })
    );
    checkEqual(sent, { duplicate: false, resumed: [{ id: job.id, queue: "default" }] }, "the send after the rollback");
    checkEqual(await stateOf(store, job.id), "available", "the job after a commit");
    return undefined;
  }],
  [
    "eventSend",
    "eventSend() and an event wait of its name and key at the same time lose no wake-up",
    async (env) => {
      if (!env.transaction) return skip("the store takes no application transaction");
      const store = await ready(env);
      const job = await running(store);
      // The send stays uncommitted while the wait looks: the wait takes the event once it commits, or is resumed.
      let waited: Promise<StepSuspended> | undefined;
      await env.transaction(async (tx) => {
        await store.inTransaction(tx).eventSend({
          id: newId(),
          event: "paid",
          key: "k1",
          data,
          now: T0,
          notify: false,
        });
        waited = suspend(store, job, eventStep("paid", "k1"));
        await pause(100);
      });
      const outcome = await waited!;
      check(
        outcome.status === "resolved" || await stateOf(store, job.id) === "available",
        `the wait took the event or was resumed: ${outcome.status}, the job ${await stateOf(store, job.id)}`,
      );
      return undefined;
    },
  ],
  [
    "jobDelete",
    "jobDelete() and jobPrune() delete the job's steps with it",
    async (env) => {
      const store = await ready(env);
      for (const remove of ["delete", "prune"]) {
        const job = await running(store);
        await store.stepSave({ saves: [{ id: job.id, fence: job.fence, step: stepRow() }] });
        await store.jobFinishMany({ finishes: [{ id: job.id, fence: job.fence, state: "completed", at: T0 + 1 }] });
        checkEqual((await store.stepList({ id: job.id })).length, 1, `steps before the ${remove}`);
        if (remove === "delete") checkEqual(await store.jobDelete({ id: job.id }), true, "jobDelete()");
        else checkEqual(await store.jobPrune({ state: "completed", before: T0 + 2, limit: 10 }), 1, "jobPrune()");
        checkEqual(await store.stepList({ id: job.id }), [], `steps after the ${remove}`);
      }
    },
  ],
  [
    "jobPromoteDue",
    "jobPromoteDue() makes a job waiting on an event available once its wakeAt passed, not before",
    async (env) => {
      const store = await ready(env);
      const job = await suspended(store, eventStep("paid", "k1", { wakeAt: T0 + 1_000 }));
      checkEqual(await store.jobPromoteDue({ now: T0 + 999, limit: 10 }), [], "a promotion before the timeout");
      checkEqual(await stateOf(store, job.id), "waiting", "the job before its timeout");
      checkEqual(await store.jobPromoteDue({ now: T0 + 1_000, limit: 10 }), ["default"], "the promotion");
      checkEqual(await stateOf(store, job.id), "available", "the job after its timeout");
    },
  ],
  [
    "jobResolveWaiting",
    "jobResolveWaiting() releases a job waiting on an invoked child once it completed, failed, was cancelled or is gone",
    async (env) => {
      const store = await ready(env);
      for (const end of ["completed", "failed", "cancelled", "gone"] as const) {
        const child = await running(store);
        const parent = await suspended(store, waitingStep({ type: "invoke", wakeAt: null, childId: child.id }));
        checkEqual(
          await store.jobResolveWaiting({ parents: [child.id], now: T0 + 3, limit: 10 }),
          { queues: [], cancelled: [] },
          "a resolution while the child runs",
        );
        checkEqual(await stateOf(store, parent.id), "waiting", "the parent while the child runs");
        if (end === "gone") {
          await settle(store, child.id, "scheduled");
          checkEqual(await store.jobDelete({ id: child.id }), true, "the child's delete");
        } else if (end === "cancelled") {
          await settle(store, child.id, "cancelled");
        } else {
          const finished = await store.jobFinishMany({
            finishes: [{ id: child.id, fence: child.fence, state: end, at: T0 + 4 }],
          });
          checkEqual(finished, [{ id: child.id, hasChildren: true }], `the child's outcome (${end})`);
        }
        checkEqual(
          await store.jobResolveWaiting({ parents: [child.id], now: T0 + 5, limit: 10 }),
          { queues: ["default"], cancelled: [] },
          `the resolution once the child is ${end}`,
        );
        checkEqual(await stateOf(store, parent.id), "available", `the parent once the child is ${end}`);
        await settle(store, parent.id, "completed"); // out of the next round's claim
      }
    },
  ],
  [
    "jobResolveWaiting",
    "jobResolveWaiting() without parents releases an invoking job whose child is done, never one waiting on an event",
    async (env) => {
      const store = await ready(env);
      const child = await running(store);
      const invoking = await suspended(store, waitingStep({ type: "invoke", wakeAt: null, childId: child.id }));
      const waiting = await suspended(store, eventStep("paid", "k1"));
      await store.jobFinishMany({ finishes: [{ id: child.id, fence: child.fence, state: "completed", at: T0 + 4 }] });
      checkEqual(
        await store.jobResolveWaiting({ now: T0 + 5, limit: 10 }),
        { queues: ["default"], cancelled: [] },
        "the resolution",
      );
      checkEqual(await stateOf(store, invoking.id), "available", "the invoking job");
      checkEqual(await stateOf(store, waiting.id), "waiting", "the job waiting on an event");
      checkEqual(
        await store.jobResolveWaiting({ now: T0 + 6, limit: 10 }),
        { queues: [], cancelled: [] },
        "a second resolution",
      );
    },
  ],
  [
    "jobTransition",
    "jobTransition() cancels a job waiting on an event, which then neither times out nor is resumed",
    async (env) => {
      const store = await ready(env);
      const job = await suspended(store, eventStep("paid", "k1", { wakeAt: T0 + 1_000 }));
      const cancelled = await store.jobTransition({
        id: job.id,
        from: ["waiting"],
        state: "cancelled",
        finishedAt: T0 + 3,
      });
      checkEqual(cancelled, true, "the cancel");
      checkEqual(await store.jobPromoteDue({ now: T0 + 1_000, limit: 10 }), [], "a promotion after the timeout");
      checkEqual(await send(store), { duplicate: false, resumed: [] }, "a send");
      checkEqual(await store.eventListWaiting({}), [], "the waits");
      checkFields(await store.jobGet({ id: job.id }), { state: "cancelled", finishedAt: T0 + 3 }, "the job");
    },
  ],
  ["stepList", "stepList() returns the job's steps in seq order, no other job's", async (env) => {
    const store = await ready(env);
    const job = await running(store);
    const other = await running(store);
    const steps = [stepRow({ name: "c", seq: 2 }), stepRow({ name: "a", seq: 0 }), stepRow({ name: "b", seq: 1 })];
    await store.stepSave({
      saves: [
        ...steps.map((step) => ({ id: job.id, fence: job.fence, step })),
        { id: other.id, fence: other.fence, step: stepRow({ name: "z", seq: 0 }) },
      ],
    });
    checkEqual(await store.stepList({ id: job.id }), [steps[1], steps[2], steps[0]], "the steps");
    checkEqual(await store.stepList({ id: newId() }), [], "the steps of no job");
  }],
  ["stepSave", "stepSave() stores every field of a step and replaces the job's step of the same name", async (env) => {
    const store = await ready(env);
    const job = await running(store);
    const failed = stepRow({
      state: "failed",
      attempt: 2,
      result: null,
      error: '{"name":"Error","message":"boom"}',
    });
    checkEqual(
      await store.stepSave({ saves: [{ id: job.id, fence: job.fence, step: failed }] }),
      [true],
      "the first save",
    );
    checkEqual(await store.stepList({ id: job.id }), [failed], "the stored step");
    const done = stepRow({ attempt: 3, finishedAt: T0 + 9 });
    checkEqual(
      await store.stepSave({ saves: [{ id: job.id, fence: job.fence, step: done }] }),
      [true],
      "the second save",
    );
    checkEqual(await store.stepList({ id: job.id }), [done], "the replaced step");
    const waiting = eventStep("paid", "k1", { name: "w", seq: 1, wakeAt: T0 + 5, eventSeq: null });
    await store.stepSave({ saves: [{ id: job.id, fence: job.fence, step: waiting }] });
    checkEqual(await store.stepList({ id: job.id }), [done, waiting], "both steps");
  }],
  [
    "stepSave",
    "stepSave() stores a batch of saves of several jobs, each on its own fence, a later one of a job and name last",
    async (env) => {
      const store = await ready(env);
      const [a, b, stale] = [await running(store), await running(store), await running(store)];
      const failed = stepRow({ name: "x", seq: 0, state: "failed", result: null, error: '{"name":"Error"}' });
      const done = stepRow({ name: "x", seq: 0, attempt: 2, finishedAt: T0 + 9 });
      const other = stepRow({ name: "y", seq: 1, result: new Uint8Array([7]) });
      const applied = await store.stepSave({
        saves: [
          { id: a.id, fence: a.fence, step: failed },
          { id: b.id, fence: b.fence, step: failed },
          { id: stale.id, fence: stale.fence + 1, step: done },
          { id: a.id, fence: a.fence, step: done },
          { id: a.id, fence: a.fence, step: other },
        ],
      });
      checkEqual(applied, [true, true, false, true, true], "what was applied");
      checkEqual(await store.stepList({ id: a.id }), [done, other], "the first job's steps");
      checkEqual(await store.stepList({ id: b.id }), [failed], "the second job's steps");
      checkEqual(await store.stepList({ id: stale.id }), [], "the steps of the job saved under a stale fence");
      checkEqual(await store.stepSave({ saves: [] }), [], "an empty batch");
    },
  ],
  ["stepSave", "stepSave() writes nothing under a stale fence or once the job is not running", async (env) => {
    const store = await ready(env);
    const job = await running(store);
    checkEqual(
      await store.stepSave({ saves: [{ id: job.id, fence: job.fence + 1, step: stepRow() }] }),
      [false],
      "a save under another fence",
    );
    await store.jobFinishMany({ finishes: [{ id: job.id, fence: job.fence, state: "completed", at: T0 + 1 }] });
    checkEqual(
      await store.stepSave({ saves: [{ id: job.id, fence: job.fence, step: stepRow() }] }),
      [false],
      "a save after the outcome",
    );
    checkEqual(
      await store.stepSave({ saves: [{ id: newId(), fence: 1, step: stepRow() }] }),
      [false],
      "a save for no job",
    );
    checkEqual(await store.stepList({ id: job.id }), [], "the steps");
  }],
  ["stepSave", "stepSave() in an application transaction counts only if it commits", async (env) => {
    if (!env.transaction) return skip("the store takes no application transaction");
    const store = await ready(env);
    const job = await running(store);
    const failure = new Error("roll back");
    const thrown = await env.transaction(async (tx): Promise<never> => {
      const saved = await store.inTransaction(tx).stepSave({
        saves: [{ id: job.id, fence: job.fence, step: stepRow() }],
      });
      checkEqual(saved, [true], "the save in the transaction");
      throw failure;
    }).catch((err: unknown) => err);
    checkEqual(thrown === failure, true, "the transaction's error came back");
    checkEqual(await store.stepList({ id: job.id }), [], "the steps after the rollback");
    const kept = stepRow({ name: "kept" });
    await env.transaction((tx) =>
      store.inTransaction(tx).stepSave({ saves: [{ id: job.id, fence: job.fence, step: kept }] })
    );
    checkEqual(await store.stepList({ id: job.id }), [kept], "the steps after a commit");
    return undefined;
  }],
  [
    "stepSuspend",
    "stepSuspend() on a sleep stores the step and schedules the job at wakeAt, its run ended uncounted",
    async (env) => {
      const store = await ready(env);
      const job = await running(store);
      const step = waitingStep({ name: "nap", wakeAt: T0 + 60_000 });
      checkEqual(
        await suspend(store, job, step),
        { status: "suspended", job: { id: job.id, hasChildren: false } },
        "the suspension",
      );
      checkFields(
        await store.jobGet({ id: job.id }),
        { state: "scheduled", runAt: T0 + 60_000, leaseUntil: null, attempt: 0, runs: [suspendedRun(job)] },
        "the job",
      );
      checkEqual(await store.stepList({ id: job.id }), [step], "the steps");
      checkEqual(await store.jobPromoteDue({ now: T0 + 60_000, limit: 10 }), ["default"], "the promotion at wakeAt");
    },
  ],
  ["stepSuspend", "stepSuspend() writes nothing under a stale fence or once the job is not running", async (env) => {
    const store = await ready(env);
    const job = await running(store);
    const step = waitingStep();
    checkEqual(await suspend(store, job, step, { fence: job.fence + 1 }), { status: "fenced" }, "a stale suspension");
    checkFields(
      await store.jobGet({ id: job.id }),
      { state: "running", attempt: 1, fence: job.fence, runs: [] },
      "the job",
    );
    await store.jobFinishMany({ finishes: [{ id: job.id, fence: job.fence, state: "completed", at: T0 + 1 }] });
    for (const s of [step, eventStep("paid", "k1")]) {
      checkEqual(await suspend(store, job, s), { status: "fenced" }, `a ${s.type} suspension after the outcome`);
    }
    checkEqual(await stateOf(store, job.id), "completed", "the finished job");
    checkEqual(await store.stepList({ id: job.id }), [], "the steps");
  }],
  [
    "stepSuspend",
    "stepSuspend() on an event wait with no kept event leaves the job waiting, which eventSend resumes",
    async (env) => {
      const store = await ready(env);
      const job = await running(store);
      const step = eventStep("paid", "k1", { wakeAt: T0 + 60_000 });
      checkEqual(
        await suspend(store, job, step),
        { status: "suspended", job: { id: job.id, hasChildren: false } },
        "the suspension",
      );
      checkFields(
        await store.jobGet({ id: job.id }),
        { state: "waiting", leaseUntil: null, attempt: 0, runs: [suspendedRun(job)] },
        "the waiting job",
      );
      checkEqual(await store.stepList({ id: job.id }), [step], "the stored step");
      checkEqual(await store.jobPromoteDue({ now: T0 + 59_999, limit: 10 }), [], "a promotion before the timeout");
      const sent = await send(store, { now: T0 + 10 });
      checkEqual(sent, { duplicate: false, resumed: [{ id: job.id, queue: "default" }] }, "the send");
      checkEqual(await stateOf(store, job.id), "available", "the resumed job");
      const [done] = await store.stepList({ id: job.id });
      checkFields(
        done,
        { ...step, state: "completed", result: data, finishedAt: T0 + 10, eventSeq: done.eventSeq },
        "the step",
      );
      check(typeof done.eventSeq === "number", `the step names the event it took: ${done.eventSeq}`);
    },
  ],
  [
    "stepSuspend",
    "stepSuspend() on an event wait takes the earliest kept event above afterSeq sent at or after sentSince",
    async (env) => {
      const store = await ready(env);
      const other = await ready(env, "other");
      const bytes = (n: number) => new Uint8Array([n]);
      await send(store, { now: T0 - 100, data: bytes(1) });
      await send(store, { now: T0 - 100, data: bytes(9), key: "k2" });
      await send(store, { now: T0 - 100, data: bytes(9), event: "shipped" });
      await send(other, { now: T0 - 50, data: bytes(9) });
      await send(store, { now: T0 - 10, data: bytes(2) });
      await send(store, { now: T0 - 5, data: bytes(3) });
      const job = await running(store);
      const first = await suspend(store, job, eventStep("paid", "k1", { name: "first" }), { sentSince: T0 - 60 });
      check(first.status === "resolved", `the first wait resolved: ${JSON.stringify(first.status)}`);
      checkFields(
        first.step,
        { name: "first", type: "event", state: "completed", result: bytes(2), finishedAt: T0 + 2 },
        "the first wait's step",
      );
      check(typeof first.step.eventSeq === "number", `the step names the event taken: ${first.step.eventSeq}`);
      checkFields(
        await store.jobGet({ id: job.id }),
        { state: "running", fence: job.fence, attempt: 1, runs: [] },
        "the job after a resolved wait",
      );
      checkEqual(await store.stepList({ id: job.id }), [first.step], "the stored steps");
      const second = await suspend(store, job, eventStep("paid", "k1", { name: "second", seq: 1 }), {
        sentSince: T0 - 60,
        afterSeq: first.step.eventSeq,
      });
      check(second.status === "resolved", `the second wait resolved: ${JSON.stringify(second.status)}`);
      checkEqual(second.step.result, bytes(3), "the second wait's event");
      check(
        second.step.eventSeq! > first.step.eventSeq!,
        `the later event's sequence number is higher: ${first.step.eventSeq} then ${second.step.eventSeq}`,
      );
      const third = await suspend(store, job, eventStep("paid", "k1", { name: "third", seq: 2 }), {
        sentSince: T0 - 60,
        afterSeq: second.step.eventSeq,
      });
      checkEqual(third.status, "suspended", "the third wait, with no event left");
      checkEqual(await stateOf(store, job.id), "waiting", "the job");
    },
  ],
  [
    "stepSuspend",
    "stepSuspend() on an invoke of a running child leaves the job waiting and marks the child",
    async (env) => {
      const store = await ready(env);
      const child = await running(store);
      const job = await running(store);
      const step = waitingStep({ name: "call", type: "invoke", wakeAt: null, childId: child.id });
      checkEqual(
        await suspend(store, job, step),
        { status: "suspended", job: { id: job.id, hasChildren: false } },
        "the suspension",
      );
      checkFields(
        await store.jobGet({ id: job.id }),
        { state: "waiting", leaseUntil: null, attempt: 0, runs: [suspendedRun(job)] },
        "the job",
      );
      checkEqual(await store.stepList({ id: job.id }), [step], "the stored step");
      checkEqual(
        await store.jobFinishMany({ finishes: [{ id: child.id, fence: child.fence, state: "completed", at: T0 + 4 }] }),
        [{ id: child.id, hasChildren: true }],
        "the child's outcome",
      );
    },
  ],
  [
    "stepSuspend",
    "stepSuspend() on an invoke at the same time as its child's outcome loses no wake-up",
    async (env) => {
      if (!env.transaction) return skip("the store takes no application transaction");
      const store = await ready(env);
      const child = await running(store);
      const job = await running(store);
      // The outcome stays uncommitted while the invoke looks: the invoke resolves once it commits, or the
      // outcome reports the child as having children (so the core resolves the waiting parent).
      let invoked: Promise<StepSuspended> | undefined;
      const finished = await env.transaction(async (tx) => {
        const finished = await store.inTransaction(tx).jobFinishMany({
          finishes: [{ id: child.id, fence: child.fence, state: "completed", at: T0 + 1 }],
        });
        invoked = suspend(store, job, waitingStep({ type: "invoke", wakeAt: null, childId: child.id }));
        await pause(100);
        return finished;
      });
      const outcome = await invoked!;
      check(
        outcome.status === "resolved" || finished[0]?.hasChildren === true,
        `the invoke resolved or the outcome reported the child: ${outcome.status}, ${JSON.stringify(finished)}`,
      );
      return undefined;
    },
  ],
  [
    "stepSuspend",
    "stepSuspend() on an invoke of a child already done resolves, stores nothing, and the job keeps running",
    async (env) => {
      const store = await ready(env);
      for (const end of ["completed", "failed", "cancelled"] as const) {
        const [child] = await insert(store, jobRow());
        await settle(store, child.id, end);
        const job = await running(store);
        const step = waitingStep({ name: "call", type: "invoke", wakeAt: null, childId: child.id });
        checkEqual(await suspend(store, job, step), { status: "resolved", step }, `the suspension (child ${end})`);
        checkEqual(await store.stepList({ id: job.id }), [], `the steps (child ${end})`);
        checkFields(
          await store.jobGet({ id: job.id }),
          { state: "running", fence: job.fence, attempt: 1, runs: [] },
          `the job (child ${end})`,
        );
      }
    },
  ],
]);
