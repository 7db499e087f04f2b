/**
 * Cases of the steps slice on step records: steps saved under the run's
 * fence (one by one, in batches, in a transaction), listed in order,
 * suspended on as a sleep, and deleted with their job.
 *
 * @module
 */
import { cases, skip, type StoreCase } from "../case.ts";
import { checkEqual, checkFields } from "../check.ts";
import { newId, ready, running, stepRow, T0, waitingStep } from "../fixtures.ts";
import { checkSuspends, eventStep, stateOf, suspend } from "./fixtures.ts";

/** The cases of saving, listing and sleeping on steps. */
export const stepRecordCases: StoreCase[] = cases("steps", [
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
      await checkSuspends(store, job, step, { state: "scheduled", runAt: T0 + 60_000 });
      checkEqual(
        await store.jobPromoteDue({ now: T0 + 60_000, limit: 10 }),
        { queues: ["default"], nextAt: null },
        "the promotion at wakeAt",
      );
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
]);
