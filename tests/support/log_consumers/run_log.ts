/**
 * The run log of the consumer-group runs (log_consumers.ts), read back: the
 * members' batches and warnings (written by member.ts) and the
 * orchestrator's own lines, its `lag()` samples and its marks of kills,
 * stops and continues. Every line is one append, so the file's line order is
 * the order things happened in across processes, whatever their clocks say.
 */
import { appendFileSync, existsSync, readFileSync } from "node:fs";

/** A line of the run log: `pid` wrote it (0 for the orchestrator) at `t` (`Date.now()`). */
export type ConsumerEvent =
  & { readonly pid: number; readonly t: number }
  & (
    /** A member started, as the instance `id`. */
    | { readonly e: "member"; readonly id: string }
    /** A member's handler got batch `b` of partition `p`: the records' offsets and values' `n`, in the order given. */
    | {
      readonly e: "start";
      readonly b: number;
      readonly p: number;
      readonly attempt: number;
      readonly offsets: readonly number[];
      readonly ns: readonly number[];
    }
    /** The handler of batch `b` returned (before its commit); `aborted`: its signal had said the lease was lost. */
    | { readonly e: "end"; readonly b: number; readonly p: number; readonly aborted: boolean }
    /** A warning errand logged in a member, with its fields. */
    | { readonly e: "warn"; readonly message: string; readonly partition?: number; readonly epoch?: number }
    /** A member's counters, logged at its SIGTERM. */
    | { readonly e: "metrics"; readonly consumed: number; readonly rejected: number }
    /** The orchestrator's `lag()` sample: the group's committed offset and the end of each partition. */
    | { readonly e: "lag"; readonly committed: readonly number[]; readonly end: readonly number[] }
    /**
     * The orchestrator's marks about the process `of`: "killed" once it exited
     * from a SIGKILL (every line of it comes before), "stopped" once a SIGSTOP
     * held (no line of it comes after until it is continued), "continued" just
     * before its SIGCONT.
     */
    | { readonly e: "killed"; readonly of: number }
    | { readonly e: "stopped"; readonly of: number }
    | { readonly e: "continued"; readonly of: number }
  );

/** An event of the run log with its line (from 0). */
export type Line<E extends ConsumerEvent["e"] = ConsumerEvent["e"]> = Extract<ConsumerEvent, { e: E }> & {
  readonly line: number;
};

/** The events of the run log at `path`, each with its line, in the order they were written. */
export function readConsumerLog(path: string): Line[] {
  if (!existsSync(path)) return [];
  return readFileSync(path, "utf8").split("\n").filter(Boolean).map((text, line) => ({ ...JSON.parse(text), line }));
}

/** Appends the orchestrator's own event to the run log at `path`. */
export function logOrchestrator(path: string, event: Record<string, unknown> & { e: ConsumerEvent["e"] }): void {
  appendFileSync(path, `${JSON.stringify({ ...event, pid: 0, t: Date.now() })}\n`);
}

/** Only the events of kind `e`. */
export function eventsOf<E extends ConsumerEvent["e"]>(events: readonly Line[], e: E): Line<E>[] {
  return events.filter((x): x is Line<E> => x.e === e);
}

/** One batch a member's handler got. */
export interface Batch {
  readonly pid: number;
  /** Its number in its process. */
  readonly b: number;
  readonly p: number;
  readonly offsets: readonly number[];
  readonly ns: readonly number[];
  /** The offsets it began and ended with. */
  readonly first: number;
  readonly last: number;
  readonly startLine: number;
  /** When its handler got it. */
  readonly start: number;
  /** The line of its handler's return; undefined when its process was killed first. */
  readonly endLine: number | undefined;
  /** The line of the warning that its commit was rejected, when one came. */
  readonly rejectedLine: number | undefined;
}

/** A warning that a member lost its lease and its commit was rejected (`consumers.ts`). */
export const REJECTED = /lost its lease .* was rejected/;

/** The batches in `events`, in the order they started, each with its end and its commit's rejection, if any. */
export function batchesOf(events: readonly Line[]): Batch[] {
  const batches: Batch[] = [];
  const open = new Map<string, number>();
  /** Per process and partition, the batches that ended, their commit not yet rejected. */
  const ended = new Map<string, number[]>();
  for (const x of events) {
    if (x.e === "start") {
      open.set(`${x.pid} ${x.b}`, batches.length);
      batches.push({
        pid: x.pid,
        b: x.b,
        p: x.p,
        offsets: x.offsets,
        ns: x.ns,
        first: x.offsets[0],
        last: x.offsets.at(-1)!,
        startLine: x.line,
        start: x.t,
        endLine: undefined,
        rejectedLine: undefined,
      });
    } else if (x.e === "end") {
      const i = open.get(`${x.pid} ${x.b}`);
      if (i === undefined) continue;
      open.delete(`${x.pid} ${x.b}`);
      batches[i] = { ...batches[i], endLine: x.line };
      const key = `${x.pid} ${x.p}`;
      ended.set(key, [...ended.get(key) ?? [], i]);
    } else if (x.e === "warn" && REJECTED.test(x.message) && x.partition !== undefined) {
      // "... the commit of records <from> to <last> was rejected ...": the batch of that process and range.
      const [, from, last] = x.message.match(/records (\d+) to (\d+) was rejected/) ?? [];
      const key = `${x.pid} ${x.partition}`;
      const candidates = ended.get(key) ?? [];
      const j = candidates.findIndex((i) => batches[i].first === Number(from) && batches[i].last === Number(last));
      if (j < 0) continue;
      batches[candidates[j]] = { ...batches[candidates[j]], rejectedLine: x.line };
      ended.set(key, candidates.filter((_, k) => k !== j));
    }
  }
  return batches;
}

/** The batches of process `pid` that had started and not ended at `line`. */
export function openAt(batches: readonly Batch[], pid: number, line: number): Batch[] {
  return batches.filter((b) => b.pid === pid && b.startLine < line && (b.endLine === undefined || b.endLine > line));
}
