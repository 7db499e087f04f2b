/**
 * Pausing queues for a move. While a move runs no worker of either store
 * claims a job it carries: on the source, so that a job never runs there
 * once it may be on the target; on the target, so that a job the move may
 * still write again (the source's copy is the one that counts until it is
 * removed) never runs there before the move is done.
 *
 * The move pauses every queue the source has jobs in, its schedules' queues
 * and the queues its instances' heartbeats name, and any other queue as
 * soon as a batch holds a job of it. It writes the queues it is about to
 * pause into its record first, so that a rerun knows them, and pauses them
 * again on every call. When it is done it resumes the target's queues but
 * those paused on the source before the move; the source's stay paused.
 *
 * @module
 */
import type { Store } from "../store/store.ts";
import { type MoveRun, progress, saveState } from "./run.ts";

/** The source's queues a move pauses: those of its jobs, schedules and live instances, and those paused before. */
export async function sourceQueues(from: Store, pausedBefore: readonly string[]): Promise<string[]> {
  const [counts, schedules, workers] = await Promise.all([
    from.jobCounts(),
    from.scheduleList(),
    from.workerList({ since: 0 }),
  ]);
  return [
    ...new Set([
      ...counts.map((c) => c.queue),
      ...schedules.map((s) => s.queue),
      ...workers.flatMap((w) => w.queues.map((q) => q.queue)),
      ...pausedBefore,
    ]),
  ].sort();
}

/**
 * Pauses `queues` on both stores unless the move paused them already (or
 * they were paused before it); with `again`, pauses again every queue the
 * move paused, as a rerun does.
 */
export async function pauseQueues(run: MoveRun, queues: Iterable<string>, again = false): Promise<void> {
  const s = run.state;
  const onSource = [...new Set(queues)].filter((q) => !s.sourcePaused.includes(q) && !s.pausedBefore.includes(q));
  const onTarget = [...new Set(queues)].filter((q) => !s.targetPaused.includes(q) && !s.targetPausedBefore.includes(q));
  if (onSource.length || onTarget.length) {
    await saveState(run, {
      sourcePaused: [...s.sourcePaused, ...onSource].sort(),
      targetPaused: [...s.targetPaused, ...onTarget].sort(),
    }, true);
  }
  const source = again ? run.state.sourcePaused : onSource;
  const target = again ? run.state.targetPaused : onTarget;
  for (const queue of source) await run.from.queuePause({ queue, paused: true });
  for (const queue of target) await run.to.queuePause({ queue, paused: true });
  if (onSource.length) {
    progress(
      run,
      run.state.phase,
      0,
      0,
      `Paused ${
        list(onSource)
      } on the source: its workers claim no job there from now on, and the queues stay paused after the move`,
    );
  }
}

/** Resumes the target's queues the move paused, but those paused on the source before the move. */
export async function resumeTarget(run: MoveRun): Promise<string[]> {
  const resumed = run.state.targetPaused.filter((q) => !run.state.pausedBefore.includes(q));
  for (const queue of resumed) await run.to.queuePause({ queue, paused: false });
  return resumed;
}

function list(queues: readonly string[]): string {
  return `${queues.length === 1 ? "queue" : "queues"} ${queues.map((q) => `"${q}"`).join(", ")}`;
}
