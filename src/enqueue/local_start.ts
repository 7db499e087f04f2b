/**
 * Starting jobs in the process that enqueues them. When this instance's
 * worker for a queue sits idle, a job enqueued here goes into the store
 * already claimed by that worker and starts as soon as the insert returns:
 * one round trip from `enqueue` to the handler instead of an insert, a
 * wake-up and a claim. Only plain jobs qualify: due now (not scheduled, not
 * waiting for parents), without a topic, and not enqueued inside the
 * application's transaction (whose commit this process does not see).
 *
 * @module
 */
import type { ClaimedJob, JobInsertRow } from "../store/records.ts";

/** A queue worker of this instance, as the insert path hands it jobs. */
export interface LocalWorker {
  /** Holds up to `n` free slots, while it is idle, for jobs the insert claims for it; returns how many. */
  reserve(n: number): number;
  /** Starts `claims`, the jobs the insert claimed for it, in the `held` slots and frees the ones left over. */
  adopt(claims: readonly ClaimedJob[], held: number, now: number): void;
}

/** The rows one idle worker takes, and the slots it holds for them. */
export interface LocalStart {
  readonly worker: LocalWorker;
  readonly rows: readonly JobInsertRow[];
  readonly held: number;
}

/**
 * Picks the rows that idle workers of this instance take at insert, lowest
 * priority number first, holding a slot for each (`QueueWorker.reserve`).
 * `workerFor(row)` is this instance's worker for the row's queue when it has a handler for its kind.
 */
export function pickLocalStarts(
  rows: readonly JobInsertRow[],
  workerFor: (row: JobInsertRow) => LocalWorker | undefined,
): LocalStart[] {
  const byWorker = new Map<LocalWorker, JobInsertRow[]>();
  for (const row of rows) {
    if (row.state !== "available" || row.topic !== null) continue;
    const worker = workerFor(row);
    if (!worker) continue;
    const list = byWorker.get(worker) ?? [];
    byWorker.set(worker, list);
    list.push(row);
  }
  const starts: LocalStart[] = [];
  for (const [worker, candidates] of byWorker) {
    const held = worker.reserve(candidates.length);
    if (held === 0) continue;
    const taken = candidates.length === held
      ? candidates
      : candidates.slice().sort((a, b) => a.priority - b.priority).slice(0, held);
    starts.push({ worker, rows: taken, held });
  }
  return starts;
}

/** The claim of a row the insert claimed (attempt 1, fence 1, started at its creation), as the store wrote it. */
export function claimOfInsert(row: JobInsertRow): ClaimedJob {
  const { state: _state, parents: _parents, uniqueKey: _key, uniqueScope: _scope, ...fields } = row;
  return Object.assign(fields, { attempt: 1, fence: 1, startedAt: row.createdAt, topic: null, partition: null });
}
