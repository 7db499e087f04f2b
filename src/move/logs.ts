/**
 * Copying retained logs, after the jobs. Each partition's records are
 * written to the target at their own offsets (a record there already
 * stays), a batch at a time, and the partition's counter follows the last
 * record written, so a rerun goes on from the target's end; after the
 * last batch the counter is the source's. A partition whose oldest records
 * were pruned keeps its offsets: the target's earliest is the source's.
 * Then each consumer group's committed offset and epoch are written, with
 * no owner, so the target's members take the partitions from there.
 *
 * Logs are copied, not removed: the source keeps its records. Records
 * appended to the source after the copy, and records its consumers commit
 * after it, are not on the target (consumed again there: at least once);
 * stop the source's instances before a move to have none.
 *
 * @module
 */
import { StateError } from "../base/errors.ts";
import { checkAborted, type MoveRun, progress, saveState } from "./run.ts";

/** Copies every retained log partition and every consumer group's offsets to the target. */
export async function copyLogs(run: MoveRun): Promise<void> {
  const { from, to } = run;
  const sequences = await from.logSequences();
  const logs = [...new Set(sequences.map((s) => s.log))];
  const ends = new Map<string, { earliest: number; end: number }>();
  const targetEnds = new Map<string, number>();
  for (const log of logs) {
    for (const p of await from.logEnds({ log })) ends.set(`${log}\u0000${p.partition}`, p);
    for (const p of await to.logEnds({ log })) targetEnds.set(`${log}\u0000${p.partition}`, p.end);
  }
  const all = [...ends.values()].reduce((n, p) => n + p.end - p.earliest, 0);
  let done = 0;
  progress(run, "logs", done, all);
  for (const s of sequences) {
    const key = `${s.log}\u0000${s.partition}`;
    const source = ends.get(key) ?? { earliest: s.nextOffset, end: s.nextOffset };
    let next = Math.max(source.earliest, targetEnds.get(key) ?? 0);
    done += next - source.earliest;
    for (;;) {
      checkAborted(run);
      const batch = await from.logRead({
        log: s.log,
        partition: s.partition,
        from: next,
        limit: run.options.batchSize,
      });
      if (batch.length === 0) {
        await to.logImport({ log: s.log, partition: s.partition, records: [], nextOffset: s.nextOffset });
        break;
      }
      next = batch[batch.length - 1].offset + 1;
      await to.logImport({ log: s.log, partition: s.partition, records: batch, nextOffset: next });
      done += batch.length;
      progress(run, "logs", done, all);
    }
  }
  const offsets = await from.consumerOffsets({});
  await to.consumerImport({ offsets });
  await verifyLogs(run, logs, ends);
  await saveState(run, {
    logs: { partitions: sequences.length, records: all, consumerOffsets: offsets.length },
  });
}

/** Checks that each partition reaches at least the source's end on the target. */
async function verifyLogs(
  run: MoveRun,
  logs: readonly string[],
  ends: ReadonlyMap<string, { earliest: number; end: number }>,
): Promise<void> {
  for (const log of logs) {
    const there = new Map((await run.to.logEnds({ log })).map((p) => [p.partition, p.end]));
    for (const [key, p] of ends) {
      const [name, partition] = key.split("\u0000");
      if (name === log && (there.get(Number(partition)) ?? -1) < p.end) {
        throw new StateError(`Partition ${partition} of log "${log}" ends earlier on the target than on the source`);
      }
    }
  }
}
