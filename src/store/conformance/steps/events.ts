/**
 * Cases of the steps slice on events: events kept, pruned and sent to the
 * jobs waiting on them, waits that take a kept event, and the other slices'
 * operations that see event waits (their timeout's promotion, a cancel).
 *
 * @module
 */
import type { StepSuspended } from "../../steps.ts";
import { cases, skip, type StoreCase } from "../case.ts";
import { check, checkEqual, checkFields } from "../check.ts";
import { newId, ready, running, T0 } from "../fixtures.ts";
import { checkSuspends, data, eventStep, pause, send, stateOf, suspend, suspended } from "./fixtures.ts";

/** The cases of events and the jobs waiting on them. */
export const eventCases: StoreCase[] = cases("steps", [
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
    "jobPromoteDue",
    "jobPromoteDue() makes a job waiting on an event available once its wakeAt passed, not before",
    async (env) => {
      const store = await ready(env);
      const job = await suspended(store, eventStep("paid", "k1", { wakeAt: T0 + 1_000 }));
      // A wait without a timeout is never due.
      await suspended(store, eventStep("paid", "k2"));
      checkEqual(
        await store.jobPromoteDue({ now: T0 + 999, limit: 10 }),
        { queues: [], nextAt: T0 + 1_000 },
        "a promotion before the timeout",
      );
      checkEqual(await stateOf(store, job.id), "waiting", "the job before its timeout");
      checkEqual(
        await store.jobPromoteDue({ now: T0 + 1_000, limit: 10 }),
        { queues: ["default"], nextAt: null },
        "the promotion",
      );
      checkEqual(await stateOf(store, job.id), "available", "the job after its timeout");
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
      checkEqual(
        (await store.jobPromoteDue({ now: T0 + 1_000, limit: 10 })).queues,
        [],
        "a promotion after the timeout",
      );
      checkEqual(await send(store), { duplicate: false, resumed: [] }, "a send");
      checkEqual(await store.eventListWaiting({}), [], "the waits");
      checkFields(await store.jobGet({ id: job.id }), { state: "cancelled", finishedAt: T0 + 3 }, "the job");
    },
  ],
  [
    "stepSuspend",
    "stepSuspend() on an event wait with no kept event leaves the job waiting, which eventSend resumes",
    async (env) => {
      const store = await ready(env);
      const job = await running(store);
      const step = eventStep("paid", "k1", { wakeAt: T0 + 60_000 });
      await checkSuspends(store, job, step, { state: "waiting" });
      checkEqual(
        await store.jobPromoteDue({ now: T0 + 59_999, limit: 10 }),
        { queues: [], nextAt: T0 + 60_000 },
        "a promotion before the timeout",
      );
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
]);
