/**
 * What the cases of the steps slice share: suspending a run on a step,
 * event waits and sends, and reading a job's state.
 *
 * @module
 */
import type { RunRecord } from "../../../base/types.ts";
import type { ClaimedJob, JobRow } from "../../records.ts";
import type { EventSendParams, EventSent, StepRow, StepSuspended, StepSuspendParams } from "../../steps.ts";
import type { Store } from "../../store.ts";
import { checkEqual, checkFields } from "../check.ts";
import { newId, running, T0, waitingStep } from "../fixtures.ts";

/** The data of the events these cases send. */
export const data = new Uint8Array([0x91, 0x2a]);

/** Waits `ms` of real time: long enough for a concurrent statement to reach the store. */
export function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The run a suspension appends to the job's history. */
function suspendedRun(job: ClaimedJob): RunRecord {
  return { attempt: job.attempt, startedAt: job.startedAt, finishedAt: T0 + 2, outcome: "suspended" };
}

/** Suspends `job`'s run on `step` at `T0 + 2`, taking any kept event unless `fields` say otherwise. */
export function suspend(
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
export function eventStep(event: string, key: string, fields: Partial<StepRow> = {}): StepRow {
  return waitingStep({ name: "wait", type: "event", event, key, wakeAt: null, ...fields });
}

/** Sends event "paid" with key "k1" at `T0 + 10` (no wake-up), unless `fields` say otherwise. */
export function send(store: Store, fields: Partial<EventSendParams> = {}): Promise<EventSent> {
  return store.eventSend({ id: newId(), event: "paid", key: "k1", data, now: T0 + 10, notify: false, ...fields });
}

/** A job that ran and is now suspended on `step`, which the store must have accepted. */
export async function suspended(
  store: Store,
  step: StepRow,
  fields: Partial<StepSuspendParams> = {},
): Promise<ClaimedJob> {
  const job = await running(store);
  const outcome = await suspend(store, job, step, fields);
  checkEqual(outcome.status, "suspended", `the suspension of "${job.id}" on "${step.name}"`);
  return job;
}

/**
 * Suspends `job`'s run on `step`, which does not resolve at once, and checks what that leaves: the step
 * stored, the run ended uncounted with no lease, and the job's `fields` (its state, its run time).
 */
export async function checkSuspends(
  store: Store,
  job: ClaimedJob,
  step: StepRow,
  fields: Partial<JobRow>,
): Promise<void> {
  checkEqual(
    await suspend(store, job, step),
    { status: "suspended", job: { id: job.id, hasChildren: false } },
    "the suspension",
  );
  checkFields(
    await store.jobGet({ id: job.id }),
    { leaseUntil: null, attempt: 0, runs: [suspendedRun(job)], ...fields },
    "the job",
  );
  checkEqual(await store.stepList({ id: job.id }), [step], "the stored step");
}

/** The job's state, or null when it is gone. */
export async function stateOf(store: Store, id: string): Promise<string | null> {
  return (await store.jobGet({ id }))?.state ?? null;
}
