/**
 * Bringing the source to rest before its jobs are carried, once its queues
 * are paused (no new claim):
 * - a job running under a live lease is waited for, until it finishes or
 *   `runningTimeout` passes (the move then fails; a rerun resumes it);
 * - a job whose lease lapsed (its worker died or hung) is rescued as
 *   maintenance would: its run is recorded with error `LeaseExpired` and
 *   the attempt stays counted (the run may have done its work), and it
 *   becomes available again, or failed when that was its last attempt. It
 *   is then moved in that state. The write is fenced by the run's claim and
 *   the lapsed lease, so a worker that finishes meanwhile wins;
 * - continuations whose parents are all finished are resolved (available,
 *   or cancelled after a failed parent), so that none waits on the target
 *   for a parent that stays behind (finished jobs move only with `history`);
 *   so are workflows waiting for a child they invoked that finished (the
 *   child moves with them: they read how it ended when they resume).
 *
 * @module
 */
import { StateError } from "../base/errors.ts";
import { failedFinish, namedError } from "../running/outcome.ts";
import { sleep } from "../base/clock.ts";
import { checkAborted, type MoveRun, progress, saveState } from "./run.ts";
import type { MovedJob } from "../store/moves.ts";

const BATCH = 500;
/** Most waiting children one resolving call looks at. */
const RESOLVE_BATCH = 5_000;
/** The rescue runs a lapsed job again at once: the move has no kind's retry policy to wait by. */
const AT_ONCE = { type: "fixed", delayMs: 0 } as const;

/**
 * Waits until no job runs on the source, rescuing those whose lease lapsed.
 * @throws {StateError} When jobs still run under live leases after `runningTimeout`.
 */
export async function settleSource(run: MoveRun): Promise<void> {
  const { clock, runningTimeoutMs, pollIntervalMs, signal } = run.options;
  const deadline = clock.now() + runningTimeoutMs;
  for (let round = 0;; round++) {
    checkAborted(run);
    if (round === 0) {
      const running = await runningOnSource(run);
      if (running > run.state.running) await saveState(run, { running });
    }
    await rescueLapsed(run);
    await resolveWaiting(run);
    const running = await runningOnSource(run);
    if (running === 0) return;
    if (clock.now() >= deadline) {
      throw new StateError(
        `${running} jobs still run on the source under live leases after ${runningTimeoutMs} ms (option "runningTimeout"); stop the source's workers or let the jobs finish, then run the move again: it resumes`,
      );
    }
    progress(
      run,
      run.state.phase,
      0,
      running,
      `Waiting for ${running} jobs running on the source to finish or their leases to lapse`,
    );
    await sleep(clock, Math.min(pollIntervalMs, Math.max(1, deadline - clock.now())), signal);
  }
}

/** How many jobs run on the source. */
async function runningOnSource(run: MoveRun): Promise<number> {
  return (await run.from.jobCounts({ unfinished: true })).filter((c) => c.state === "running").reduce(
    (n, c) => n + c.count,
    0,
  );
}

/** Rescues the source's running jobs whose lease lapsed; returns how many. */
async function rescueLapsed(run: MoveRun): Promise<number> {
  const error = namedError("LeaseExpired", "The worker running this job stopped renewing its lease before a move");
  let rescued = 0;
  for (;;) {
    const now = run.options.clock.now();
    const expired = await run.from.jobListExpired({ now, limit: BATCH });
    if (expired.length === 0) break;
    const finishes = expired.map((job) => ({
      ...failedFinish({ ...job, retry: null }, error, now, AT_ONCE),
      leaseExpiredBefore: now,
    }));
    const changed = await run.from.jobFinishMany({ finishes });
    rescued += changed.length;
    if (expired.length < BATCH) break;
  }
  if (rescued) await saveState(run, { rescued: run.state.rescued + rescued });
  return rescued;
}

/** The children that `job`'s waiting invoke steps wait for. */
export function waitingChildren(job: MovedJob): string[] {
  return job.steps.flatMap((s) => s.type === "invoke" && s.state === "waiting" && s.childId ? [s.childId] : []);
}

/**
 * Resolves the source's continuations whose parents all finished, and
 * workflows whose invoked child finished: page by page of waiting jobs,
 * the waiting children of their parents and invoked children (so that a
 * long run of waiting jobs whose parents still run never hides a later
 * one), then the children of each job that resolving cancelled.
 */
async function resolveWaiting(run: MoveRun): Promise<void> {
  for (let after: string | null = null;;) {
    const page = await run.from.jobExport({ states: ["waiting"], after, limit: run.options.batchSize });
    if (page.length === 0) return;
    await resolveChildren(run, [...new Set(page.flatMap((j) => [...j.parents, ...waitingChildren(j)]))]);
    after = page[page.length - 1].id;
  }
}

async function resolveChildren(run: MoveRun, parents: readonly string[]): Promise<void> {
  if (parents.length === 0) return;
  for (;;) {
    const now = run.options.clock.now();
    const resolved = await run.from.jobResolveWaiting({ parents, now, limit: RESOLVE_BATCH });
    await resolveChildren(run, resolved.cancelled);
    if (resolved.queues.length === 0 && resolved.cancelled.length === 0) return;
  }
}
