/**
 * Cases of the steps slice on invoked child jobs: a run suspended on a
 * child, a child already done, and the resolution that releases the parent
 * once its child finishes.
 *
 * @module
 */
import type { StepSuspended } from "../../steps.ts";
import { cases, skip, type StoreCase } from "../case.ts";
import { check, checkEqual, checkFields } from "../check.ts";
import { insert, jobRow, ready, running, settle, T0, waitingStep } from "../fixtures.ts";
import { checkSuspends, eventStep, pause, stateOf, suspend, suspended } from "./fixtures.ts";

/** The cases of invoking a child job and being released by it. */
export const invokeCases: StoreCase[] = cases("steps", [
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
    "stepSuspend",
    "stepSuspend() on an invoke of a running child leaves the job waiting and marks the child",
    async (env) => {
      const store = await ready(env);
      const child = await running(store);
      const job = await running(store);
      const step = waitingStep({ name: "call", type: "invoke", wakeAt: null, childId: child.id });
      await checkSuspends(store, job, step, { state: "waiting" });
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
