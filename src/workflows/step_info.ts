/**
 * What `get()` shows of a workflow's steps: each stored step as a
 * {@link StepInfo}, and what a `waiting` workflow waits for.
 *
 * @module
 */
import type { RunError, StepInfo, WaitingFor } from "../base/types.ts";
import type { StepRow } from "../store/steps.ts";

/** A stored step as `get()` returns it. */
export function toStepInfo(step: StepRow): StepInfo {
  const error = step.error === null ? undefined : runErrorOf(step.error);
  return {
    name: step.name,
    type: step.type,
    state: step.state,
    attempt: step.attempt,
    startedAt: new Date(step.startedAt),
    finishedAt: step.finishedAt === null ? null : new Date(step.finishedAt),
    durationMs: step.finishedAt === null ? null : step.finishedAt - step.startedAt,
    ...(error ? { error } : {}),
    wakeAt: step.wakeAt === null ? null : new Date(step.wakeAt),
    childId: step.childId,
    event: step.event === null ? null : { name: step.event, key: step.key ?? "" },
  };
}

/** What a waiting workflow with these steps waits for: its waiting event wait or invoke, or null (a continuation). */
export function waitingForOf(steps: readonly StepRow[]): WaitingFor | null {
  const waiting = steps.find((s) => s.state === "waiting" && (s.type === "event" || s.type === "invoke"));
  if (!waiting) return null;
  if (waiting.type === "invoke") return { type: "job", id: waiting.childId ?? "" };
  return {
    type: "event",
    event: waiting.event ?? "",
    key: waiting.key ?? "",
    timeoutAt: waiting.wakeAt === null ? null : new Date(waiting.wakeAt),
  };
}

/** A stored step error (JSON of a `RunError`), or a stand-in for text that is not one. */
function runErrorOf(json: string): RunError {
  try {
    const parsed = JSON.parse(json) as Partial<RunError>;
    return {
      name: String(parsed.name ?? "Error"),
      message: String(parsed.message ?? ""),
      ...(parsed.stack ? { stack: String(parsed.stack) } : {}),
    };
  } catch {
    return { name: "Error", message: json };
  }
}
