/**
 * Whether the target holds a job as the source has it: every field, bytes
 * by content, run history as JSON whatever order its keys come back in
 * (PostgreSQL's `jsonb` keeps its own), parents as a set, steps one by one
 * and field by field.
 *
 * @module
 */
import type { MovedJob } from "../store/moves.ts";
import type { StepRow } from "../store/steps.ts";

/** The name of the first field in which `target` differs from `source`, or null when they agree. */
export function differingField(source: MovedJob, target: MovedJob): string | null {
  for (const key of Object.keys(source) as (keyof MovedJob)[]) {
    const a = source[key];
    const b = target[key];
    if (a instanceof Uint8Array || b instanceof Uint8Array) {
      if (!sameBytes(a as Uint8Array | null, b as Uint8Array | null)) return key;
    } else if (key === "runs") {
      if (canonical(a) !== canonical(b)) return key;
    } else if (key === "parents") {
      if ([...source.parents].sort().join(",") !== [...target.parents].sort().join(",")) return key;
    } else if (key === "steps") {
      if (!sameSteps(source.steps, target.steps)) return key;
    } else if (a !== b) {
      return key;
    }
  }
  return null;
}

/** Whether two jobs' steps agree in every field, in the same order. */
function sameSteps(a: readonly StepRow[], b: readonly StepRow[]): boolean {
  return a.length === b.length && a.every((step, i) =>
    (Object.keys(step) as (keyof StepRow)[]).every((key) => {
      const x = step[key];
      const y = b[i][key];
      return x instanceof Uint8Array || y instanceof Uint8Array
        ? sameBytes(x as Uint8Array | null, y as Uint8Array | null)
        : x === y;
    })
  );
}

function sameBytes(a: Uint8Array | null, b: Uint8Array | null): boolean {
  if (a === null || b === null) return a === b;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** JSON of `value` with every object's keys sorted. */
function canonical(value: unknown): string {
  return JSON.stringify(
    value,
    (_key, v: unknown) =>
      v !== null && typeof v === "object" && !Array.isArray(v)
        ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([x], [y]) => (x < y ? -1 : 1)))
        : v,
  );
}

/** Bytes as text, to compare records that hold them (a driver may hand back a `Uint8Array` subclass). */
export function bytesText(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}
