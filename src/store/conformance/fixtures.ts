/**
 * What the store cases build their data from: ids, job rows, a claim and an
 * operator's state change, each with the fields a case does not care about
 * filled in. Times are fixed (around {@link T0}), as the core's clock would
 * give them; nothing here waits for real time.
 *
 * @module
 */
import { JOB_STATES, type JobState } from "../../base/types.ts";
import type { ClaimedJob, JobInsertRow } from "../records.ts";
import type { StepRow } from "../steps.ts";
import type { Store } from "../store.ts";
import type { StoreCaseEnv } from "./case.ts";
import { checkEqual } from "./check.ts";

/** What a claim takes ({@link Store.jobClaim}). */
type ClaimParams = Parameters<Store["jobClaim"]>[0];

/** The limits a claim enforces. */
type ClaimLimits = NonNullable<ClaimParams["limits"]>;

/** The time the cases start at (ms since the epoch). */
export const T0 = 1_800_000_000_000;

/** The kind every job of the cases has, and the handlers a claim offers for it. */
export const KIND = "conformance";

let counter = 0;
const suffix = Array.from(crypto.getRandomValues(new Uint8Array(6)), (b) => b.toString(16).padStart(2, "0")).join("");

/** A new id, 26 characters as a ULID has, greater than every id this module made before it. */
export function newId(): string {
  return `C${(counter++).toString().padStart(13, "0")}${suffix}`;
}

/** The case's store in `namespace`, its schema brought up to date. */
export async function ready(env: StoreCaseEnv, namespace?: string): Promise<Store> {
  const store = env.store(namespace);
  await store.ensureSchema();
  return store;
}

/** A job row to insert: available on queue "default" at {@link T0}, unless `fields` say otherwise. */
export function jobRow(fields: Partial<JobInsertRow> = {}): JobInsertRow {
  return {
    id: newId(),
    kind: KIND,
    version: 1,
    queue: "default",
    priority: 0,
    payload: new Uint8Array([0x81, 0xa1, 0x6e, 0x01]),
    maxAttempts: 3,
    runAt: T0,
    createdAt: T0,
    timeoutMs: null,
    retry: null,
    state: "available",
    parents: [],
    uniqueKey: null,
    uniqueScope: null,
    topic: null,
    partition: null,
    group: null,
    trace: null,
    ...fields,
  };
}

/** Inserts `rows` (no wake-up) and returns them. */
export async function insert(store: Store, ...rows: JobInsertRow[]): Promise<JobInsertRow[]> {
  await store.jobInsertMany({ rows, notify: false });
  return rows;
}

/** Claims from queue "default" at {@link T0} for worker "w1", leased for 30 s, unless `params` say otherwise. */
export function claim(store: Store, params: Partial<ClaimParams> = {}): Promise<ClaimedJob[]> {
  const now = params.now ?? T0;
  return store.jobClaim({
    queue: "default",
    kinds: [`${KIND}@1`],
    limit: 10,
    now,
    leaseUntil: now + 30_000,
    workerId: "w1",
    heads: null,
    limits: null,
    ...params,
  });
}

/**
 * Claim limits that enforce group pauses and take grouped jobs round-robin,
 * unless `fields` add limits: the shape the core passes whenever a handled
 * kind has groups (a claim with `limits: null` takes only ungrouped jobs).
 */
export function limits(fields: Partial<ClaimLimits> = {}): ClaimLimits {
  return {
    queueConcurrency: null,
    queueRate: null,
    kinds: [],
    after: null,
    groups: 10,
    perGroup: 10,
    round: 1,
    returned: [],
    ...fields,
  };
}

/** Claims exactly the jobs of `ids` (failing otherwise) and returns them in that order. */
export async function claimIds(
  store: Store,
  ids: readonly string[],
  params: Partial<ClaimParams> = {},
): Promise<ClaimedJob[]> {
  const claimed = await claim(store, { limit: ids.length, ...params });
  checkEqual(claimed.map((j) => j.id).sort(), [...ids].sort(), "the claimed jobs");
  return ids.map((id) => claimed.find((j) => j.id === id)!);
}

/** Inserts a job (of `fields`) and claims it: a run in progress. */
export async function running(store: Store, fields: Partial<JobInsertRow> = {}): Promise<ClaimedJob> {
  const [row] = await insert(store, jobRow(fields));
  const [run] = await claimIds(store, [row.id]);
  return run;
}

/** A step of a workflow: a completed `job.step()` named "s" at seq 0, unless `fields` say otherwise. */
export function stepRow(fields: Partial<StepRow> = {}): StepRow {
  return {
    name: "s",
    seq: 0,
    type: "step",
    state: "completed",
    attempt: 1,
    startedAt: T0,
    finishedAt: T0 + 1,
    result: new Uint8Array([0xa2, 0x6f, 0x6b]),
    error: null,
    wakeAt: null,
    childId: null,
    event: null,
    key: null,
    eventSeq: null,
    ...fields,
  };
}

/** A step a workflow suspends on: waiting, started at {@link T0}, nothing run (a sleep to `T0 + 60 s` unless `fields` say otherwise). */
export function waitingStep(fields: Partial<StepRow> = {}): StepRow {
  return stepRow({
    type: "sleep",
    state: "waiting",
    attempt: 0,
    finishedAt: null,
    result: null,
    wakeAt: T0 + 60_000,
    ...fields,
  });
}

/** Moves a job to `state` from any state, as an operator's change does, finished at `at` for a final state. */
export async function settle(store: Store, id: string, state: JobState, at = T0): Promise<void> {
  const final = state === "completed" || state === "failed" || state === "cancelled";
  const applied = await store.jobTransition({ id, from: JOB_STATES, state, finishedAt: final ? at : null });
  checkEqual(applied, true, `jobTransition of "${id}" to "${state}"`);
}

/** Resolves once `called()` holds, polling every 10 ms of real time, or rejects after `ms` saying what did not happen. */
export function eventually(called: () => boolean, what: string, ms = 5_000): Promise<void> {
  const start = Date.now();
  return new Promise((resolve, reject) => {
    const poll = () => {
      if (called()) resolve();
      else if (Date.now() - start > ms) reject(new Error(`${what} did not happen within ${ms} ms`));
      else setTimeout(poll, 10);
    };
    poll();
  });
}
