/**
 * Carrying workflows' events: the sequence numbers a workflow's steps
 * refer to, and the events the source keeps.
 *
 * An event wait takes the earliest kept event numbered above the last one
 * its job took of the same name and key, so the numbers of the moved events
 * and the numbers the moved steps hold must keep their order on the target,
 * and come after every number the target gave before (libSQL numbers the
 * events of every namespace of a database from one counter, and never
 * reuses one). Before the first job is written, the move chooses a shift:
 * the target's last number. Every moved event and every step's `eventSeq`
 * is the source's number plus the shift, and the target's counter is raised
 * past the source's last number shifted, and {@link RESERVED} numbers
 * further for the events the source keeps while the move runs, so that the
 * target numbers its own events (of any namespace) after every moved one.
 *
 * After the commit, when no job is left on the source to take them, the
 * events it keeps are copied, as retained logs are: an event with an id the
 * target keeps already is left out, so a rerun copies only those that came
 * since. An event sent to the source after a waiting job left it resumes
 * that job as it is copied, as if it had been sent to the target.
 *
 * @module
 */
import type { MovedJob } from "../store/moves.ts";
import { checkAborted, type MoveRun, progress, saveState } from "./run.ts";

/**
 * Sequence numbers the target keeps free past the source's last when the
 * shift is chosen: the source may keep events until the move copies them
 * (and libSQL refuses a number another namespace took meanwhile).
 */
const RESERVED = 1_000_000;

/** Chooses the run's event shift, unless it has one, and raises the target's counter past the source's numbers. */
export async function chooseEventShift(run: MoveRun): Promise<void> {
  if (run.state.eventShift !== null) return;
  const shift = await run.to.eventLastSeq();
  // Raised before the shift is recorded: a call killed in between chooses a higher shift, which is as good.
  await run.to.eventImport({
    events: [],
    lastSeq: await run.from.eventLastSeq() + shift + RESERVED,
    now: run.options.clock.now(),
  });
  await saveState(run, { eventShift: shift });
}

/** `job` with its steps' event sequence numbers as the target numbers them. */
export function withTargetSeqs(run: MoveRun, job: MovedJob): MovedJob {
  const shift = run.state.eventShift ?? 0;
  if (shift === 0 || !job.steps.some((s) => s.eventSeq !== null)) return job;
  return {
    ...job,
    steps: job.steps.map((s) => (s.eventSeq === null ? s : { ...s, eventSeq: s.eventSeq + shift })),
  };
}

/** Copies every event the source keeps to the target, and raises the target's counter past the source's last. */
export async function copyEvents(run: MoveRun): Promise<void> {
  const shift = run.state.eventShift ?? 0;
  let done = 0;
  progress(run, "events", done, 0);
  for (let after: number | null = null;;) {
    checkAborted(run);
    const batch = await run.from.eventExport({ after, limit: run.options.batchSize });
    if (batch.length === 0) break;
    after = batch[batch.length - 1].seq;
    const imported = await run.to.eventImport({
      events: batch.map((e) => ({ ...e, seq: e.seq + shift })),
      lastSeq: after + shift,
      now: run.options.clock.now(),
    });
    if (imported.kept) await saveState(run, { events: run.state.events + imported.kept });
    done += batch.length;
    progress(run, "events", done, 0);
  }
  await run.to.eventImport({
    events: [],
    lastSeq: await run.from.eventLastSeq() + shift,
    now: run.options.clock.now(),
  });
}
