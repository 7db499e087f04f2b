/**
 * Reading the workers' run log (see worker.ts) and the checks made on it:
 * runs of one job that overlapped while a lease was valid, and the order of
 * partitioned jobs.
 */
import { existsSync, readFileSync } from "node:fs";
import { partitionOf } from "errand";
import type { SentSignal } from "../../tests/support/processes.ts";

/**
 * One line of the run log: a run's `start`, and its `end`, `abort` or
 * `suspend` (a workflow's sleep ended the run); a workflow's runs also log
 * `step` as a step's function begins (with `step`, its place), which ends nothing.
 * A worker's shutdown logs `sigterm`, `shutdown` as each of its steps begins (with `phase`), and `exit`.
 */
export interface RunEvent {
  readonly e: "start" | "end" | "abort" | "suspend" | "step" | "sigterm" | "shutdown" | "exit";
  readonly id: string;
  readonly kind: string;
  readonly attempt: number;
  readonly key?: string;
  readonly n?: number;
  readonly step?: number;
  readonly phase?: string;
  readonly pid: number;
  readonly t: number;
}

/** One run of a job: its start and, if the handler returned, its end. */
export interface Run {
  readonly id: string;
  readonly pid: number;
  readonly attempt: number;
  readonly key?: string;
  readonly n?: number;
  readonly start: number;
  /**
   * When the handler returned (or saw its signal abort, or suspended its workflow); absent when its
   * process died or stopped first.
   */
  readonly end?: number;
  readonly aborted: boolean;
}

/** The events of the run log at `path`, in the order they were written. */
export function readRunLog(path: string): RunEvent[] {
  if (!existsSync(path)) return [];
  return readFileSync(path, "utf8").split("\n").filter(Boolean).map((line) => JSON.parse(line));
}

/** The runs in `events`, by job id, in the order they started. */
export function runsOf(events: readonly RunEvent[]): Map<string, Run[]> {
  const open = new Map<string, { event: RunEvent; run: Run[] }>();
  const byJob = new Map<string, Run[]>();
  for (const event of events) {
    const runKey = `${event.id} ${event.pid} ${event.attempt}`;
    if (event.e === "start") {
      const runs = byJob.get(event.id) ?? [];
      byJob.set(event.id, runs);
      runs.push({ ...pick(event), start: event.t, aborted: false });
      open.set(runKey, { event, run: runs });
    } else if (event.e === "end" || event.e === "abort" || event.e === "suspend") {
      const started = open.get(runKey);
      if (!started) continue;
      open.delete(runKey);
      const i = started.run.findIndex((r) => r.pid === event.pid && r.attempt === event.attempt && r.end === undefined);
      if (i >= 0) started.run[i] = { ...started.run[i], end: event.t, aborted: event.e === "abort" };
    }
  }
  return byJob;
}

function pick(e: RunEvent) {
  return { id: e.id, pid: e.pid, attempt: e.attempt, key: e.key, n: e.n };
}

/**
 * How the shutdown of process `pid` went, for a note: each step it logged (worker.ts) with the
 * seconds since it got SIGTERM, "exit" last when it exited, "SIGKILL" when it was killed first.
 * Undefined when it logged no SIGTERM.
 */
export function shutdownSteps(events: readonly RunEvent[], signals: readonly SentSignal[], pid: number) {
  const from = events.find((e) => e.pid === pid && e.e === "sigterm")?.t;
  if (from === undefined) return undefined;
  const steps = events.filter((e) => e.pid === pid && e.t >= from && (e.e === "shutdown" || e.e === "exit"))
    .map((e) => ({ phase: e.phase ?? e.e, t: e.t }));
  const killed = signals.find((s) => s.pid === pid && s.signal === "SIGKILL" && s.t >= from);
  if (killed && !steps.some((s) => s.phase === "exit")) steps.push({ phase: "SIGKILL", t: killed.t });
  return steps.map((s) => `${s.phase.replace(/^Shutdown: /, "")} +${((s.t - from) / 1000).toFixed(2)} s`).join(", ");
}

/**
 * Until when a run held its job's lease, at the latest: its end; else the
 * SIGKILL of its process; and when its process was SIGSTOPped meanwhile, two
 * thirds of a lease after the stop (a lease is renewed every third of it, so
 * a stopped process's lease lasts at least that long, and a rescue before it
 * would be a broken lease).
 */
export function heldUntil(run: Run, signals: readonly SentSignal[], leaseMs: number): number {
  let until = run.end ?? Infinity;
  for (const s of signals) {
    if (s.pid !== run.pid) continue;
    // A killed process logs nothing after its SIGKILL: a start it logged a hair after the signal's time
    // (two processes' clocks) was still cut short then, not held for ever.
    if (s.signal === "SIGKILL" && s.t < until) until = Math.max(run.start, s.t);
    if (s.signal === "SIGSTOP" && s.t >= run.start && s.t <= until) until = Math.min(until, s.t + (2 * leaseMs) / 3);
  }
  return until;
}

/** Pairs of runs of one job where the later one started while the earlier one still held its lease. */
export function overlapsWhileLeased(
  runs: Map<string, Run[]>,
  signals: readonly SentSignal[],
  leaseMs: number,
): number {
  let overlaps = 0;
  for (const list of runs.values()) {
    for (let i = 0; i < list.length; i++) {
      for (let j = i + 1; j < list.length; j++) {
        if (list[j].start < heldUntil(list[i], signals, leaseMs)) overlaps++;
      }
    }
  }
  return overlaps;
}

/**
 * Order violations of partitioned jobs: per key, jobs whose first completed
 * run ended before that of a job enqueued earlier (`n` is the enqueue order
 * within its key), plus pairs of runs in one partition that overlapped while held.
 */
export function orderViolations(
  runs: Map<string, Run[]>,
  signals: readonly SentSignal[],
  leaseMs: number,
  partitions: number,
): number {
  const firstEnd = new Map<string, { n: number; end: number }[]>();
  const byPartition = new Map<number, { start: number; until: number }[]>();
  for (const list of runs.values()) {
    const done = list.filter((r) => r.end !== undefined && !r.aborted).sort((a, b) => a.end! - b.end!)[0];
    if (done?.key !== undefined) {
      const ends = firstEnd.get(done.key) ?? [];
      firstEnd.set(done.key, ends);
      ends.push({ n: done.n!, end: done.end! });
    }
    for (const run of list) {
      if (run.key === undefined) continue;
      const p = partitionOf(run.key, partitions);
      const spans = byPartition.get(p) ?? [];
      byPartition.set(p, spans);
      spans.push({ start: run.start, until: heldUntil(run, signals, leaseMs) });
    }
  }
  let violations = 0;
  for (const ends of firstEnd.values()) {
    ends.sort((a, b) => a.end - b.end);
    for (let i = 1; i < ends.length; i++) if (ends[i].n < ends[i - 1].n) violations++;
  }
  for (const spans of byPartition.values()) {
    spans.sort((a, b) => a.start - b.start);
    let heldTo = -Infinity;
    for (const span of spans) {
      if (span.start < heldTo) violations++;
      heldTo = Math.max(heldTo, span.until);
    }
  }
  return violations;
}
