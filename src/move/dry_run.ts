/**
 * A dry run of a move: what the source holds that a move would carry,
 * read from the source alone. Nothing is written to either store (not even
 * the schema: a source whose schema is older than this errand's is read as
 * it is).
 *
 * @module
 */
import type { Store } from "../store/store.ts";
import type { MoveRecord } from "../store/moves.ts";
import type { MoveReport, ResolvedMoveOptions } from "./options.ts";
import { sourceQueues } from "./queues.ts";
import { stateOf } from "./run.ts";
import { FINISHED, movedStates, tallyOfCounts, total, UNFINISHED } from "./tally.ts";

/** What a move from `from` would carry now. */
export async function dryRun(from: Store, options: ResolvedMoveOptions): Promise<MoveReport> {
  // A source from before moves existed has no record of one.
  const record: MoveRecord | null = await from.moveGet({ role: "source" }).catch(() => null);
  const underway = record !== null && record.phase !== "done";
  const counts = await from.jobCounts();
  const byQueue = tallyOfCounts(counts, movedStates(options.history));
  const pausedQueues = underway ? stateOf(record).pausedBefore : await from.queuesPaused();
  const queues = await sourceQueues(from, pausedQueues);
  const expired = await from.jobListExpired({ now: options.clock.now(), limit: 10_000 });
  let logs = { partitions: 0, records: 0, consumerOffsets: 0 };
  if (options.logs) {
    const sequences = await from.logSequences();
    let records = 0;
    for (const log of new Set(sequences.map((s) => s.log))) {
      for (const p of await from.logEnds({ log })) records += p.end - p.earliest;
    }
    logs = { partitions: sequences.length, records, consumerOffsets: (await from.consumerOffsets({})).length };
  }
  let events = 0;
  for (let after: number | null = null;;) {
    const batch = await from.eventExport({ after, limit: options.batchSize });
    if (batch.length === 0) break;
    events += batch.length;
    after = batch[batch.length - 1].seq;
  }
  return {
    id: underway ? record.id : "",
    dryRun: true,
    resumed: underway,
    jobs: total(byQueue, UNFINISHED),
    history: total(byQueue, FINISHED),
    byQueue,
    late: 0,
    running: counts.filter((c) => c.state === "running").reduce((n, c) => n + c.count, 0),
    rescued: expired.length,
    uniqueConflicts: 0,
    schedules: (await from.scheduleList()).length,
    partitions: (await from.partitionSequences()).length,
    events,
    pausedQueues,
    sourcePaused: queues.filter((q) => !pausedQueues.includes(q)),
    logs,
    verified: false,
  };
}
