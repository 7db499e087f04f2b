import { splitGroupKey } from "../flow/limits.ts";
import { payloadForDisplay } from "../encoding/codec.ts";
import type { JobRow } from "../store/records.ts";
import type { JobInfo, RunInfo, RunRecord } from "../base/types.ts";

/**
 * Builds what `get()` returns from a stored row. Runs that did not complete
 * (and completed runs with a note) are stored in the row's history; the
 * latest run, running or completed, is otherwise added from the row's own
 * timestamps.
 */
export function toJobInfo(row: JobRow): JobInfo {
  const runs: RunRecord[] = [...row.runs];
  if (row.state === "running" && row.startedAt !== null) {
    runs.push({ attempt: row.attempt, startedAt: row.startedAt, outcome: "running" });
  } else if (row.state === "completed" && row.startedAt !== null && runs.at(-1)?.outcome !== "completed") {
    runs.push({
      attempt: row.attempt,
      startedAt: row.startedAt,
      finishedAt: row.finishedAt ?? undefined,
      outcome: "completed",
    });
  }
  return {
    id: row.id,
    kind: row.kind,
    version: row.version,
    queue: row.queue,
    state: row.state,
    priority: row.priority,
    attempt: row.attempt,
    maxAttempts: row.maxAttempts,
    payload: payloadForDisplay(row.payload),
    createdAt: new Date(row.createdAt),
    runAt: new Date(row.runAt),
    startedAt: row.startedAt === null ? null : new Date(row.startedAt),
    finishedAt: row.finishedAt === null ? null : new Date(row.finishedAt),
    runs: runs.map(toRunInfo),
    reason: row.reason,
    topic: row.topic,
    partition: row.partition,
    seq: row.seq,
    group: row.group === null ? null : splitGroupKey(row.group).group,
    progress: progressOf(row.progress),
  };
}

/** Stored progress as its JSON value; null for none, or for text that is not JSON (written outside errand). */
export function progressOf(json: string | null): unknown {
  if (json === null) return null;
  try {
    return JSON.parse(json);
  } catch {
    return null;
  }
}

function toRunInfo(run: RunRecord): RunInfo {
  const finishedAt = run.finishedAt ?? null;
  return {
    attempt: run.attempt,
    startedAt: new Date(run.startedAt),
    finishedAt: finishedAt === null ? null : new Date(finishedAt),
    durationMs: finishedAt === null ? null : finishedAt - run.startedAt,
    outcome: run.outcome,
    error: run.error ?? null,
    note: run.note ?? null,
  };
}
