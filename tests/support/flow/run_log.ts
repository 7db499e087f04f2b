/**
 * The run log of the flow-control runs (written by worker.ts, and by the
 * orchestrator for its own marks) read back as runs, with each event's place
 * in the log: the log's line order is the order things happened in across
 * processes, whatever their clocks say.
 */
import { appendFileSync, existsSync, readFileSync } from "node:fs";

/** One line of the run log. */
export interface FlowEvent {
  /**
   * A handler's "start", "end", "abort" (its signal aborted) or "pause";
   * the orchestrator's "killed" (after the process `pid` exited from a
   * SIGKILL: every line of it comes before) or "mark" (named by `what`).
   */
  readonly e: "start" | "end" | "abort" | "pause" | "killed" | "mark";
  readonly id?: string;
  readonly kind?: string;
  readonly g?: string | null;
  readonly attempt?: number;
  readonly what?: string;
  readonly pid: number;
  /** `Date.now()` of the process that wrote it. */
  readonly t: number;
}

/** One run of a job as its handler logged it. */
export interface FlowRun {
  readonly id: string;
  readonly kind: string;
  readonly g: string | null;
  readonly attempt: number;
  readonly pid: number;
  /** `Date.now()` at its start: after the claim committed. */
  readonly start: number;
  /** The line of its start. */
  readonly startLine: number;
  /** The line of its end, abort or process kill; the log's length for a run still open at the end. */
  readonly endLine: number;
  /** How it ended: its handler returned ("end"), saw its signal abort, its process was killed, or it never ended. */
  readonly how: "end" | "abort" | "killed" | "open";
}

/** The events of the run log at `path`, in the order they were written. */
export function readFlowLog(path: string): FlowEvent[] {
  if (!existsSync(path)) return [];
  return readFileSync(path, "utf8").split("\n").filter(Boolean).map((line) => JSON.parse(line));
}

/** Appends the orchestrator's own event to the run log at `path`. */
export function logEvent(path: string, event: Omit<FlowEvent, "t" | "pid"> & { pid?: number }): void {
  appendFileSync(path, `${JSON.stringify({ pid: 0, ...event, t: Date.now() })}\n`);
}

/** The runs in `events`, in the order they started. */
export function flowRuns(events: readonly FlowEvent[]): FlowRun[] {
  const runs: FlowRun[] = [];
  const open = new Map<string, number>();
  const close = (key: string, endLine: number, how: FlowRun["how"]) => {
    const i = open.get(key)!;
    runs[i] = { ...runs[i], endLine, how };
    open.delete(key);
  };
  events.forEach((event, line) => {
    const key = `${event.pid} ${event.id} ${event.attempt}`;
    if (event.e === "start") {
      open.set(key, runs.length);
      runs.push({
        id: event.id!,
        kind: event.kind!,
        g: event.g ?? null,
        attempt: event.attempt!,
        pid: event.pid,
        start: event.t,
        startLine: line,
        endLine: events.length,
        how: "open",
      });
    } else if ((event.e === "end" || event.e === "abort") && open.has(key)) {
      close(key, line, event.e);
    } else if (event.e === "killed") {
      for (const [k, i] of [...open]) if (runs[i].pid === event.pid) close(k, line, "killed");
    }
  });
  return runs;
}
