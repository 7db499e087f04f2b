/**
 * What errand's workflow workloads share (the shared benchmark's section 9,
 * "Workflows"; `peers/errand-workflows.md` says how errand runs them): the
 * three kinds and their handlers, the in-memory bookkeeping of step bodies
 * and per-workflow marks, the enqueue up front, the wait for completion in
 * the store, and the parts of a line every workload reports.
 *
 * errand replays a workflow: every run calls the handler from the top and
 * completed steps return their kept values, so after a sleep or an event
 * the handler is entered again (`workflow_function_entries`), and marks
 * keep their first call only. Every step body must still run exactly once.
 *
 * @module
 */
import process from "node:process";
import { createErrand, defineJobs, type Duration, type Errand, type Handlers, job } from "../../mod.ts";
import { CFG, now, payloadBatches, percentile, round, waitUntil } from "../harness.ts";
import type { BenchDatabase } from "./databases.ts";
import { type Session, silent } from "./session.ts";
import type { StatementCount, StatementSnapshot } from "./statements.ts";

type Payload = { i: number; s: string };

/** The workflow kinds: `wf_steps` (S steps), `wf_sleep` (step, durable sleep, step), `wf_event` (event wait, step). */
export const wfJobs = defineJobs({
  wf_steps: job<Payload, { i: number }>(),
  wf_sleep: job<Payload, { i: number }>(),
  wf_event: job<Payload, { i: number; got: number | null }>(),
});
/** A workflow kind. */
export type WfKind = keyof typeof wfJobs;
/** An instance running the workflow kinds. */
export type WfErrand = Errand<typeof wfJobs, unknown>;

/** What step `k` of workflow `i` returns. */
export const stepOutput = (i: number, k: number) => ({ i, step: k, s: "x".repeat(100) });
/** The event key workflow `i` waits on. */
export const eventKey = (i: number) => `ev-${i}`;
/** The data of the event for workflow `i`. */
export const eventData = (i: number) => ({ i, s: "x".repeat(100) });
/** The event name of `wf_event`. */
export const EVENT = "go";

/**
 * Counts how often each step body of each workflow ran (the step `k` of
 * workflow `i` calls `step(i, k)`), and how often handlers were entered;
 * `allDone` resolves with the time every workflow's last step first ran.
 */
export class StepTracker {
  readonly #counts: Uint32Array;
  readonly #steps: number;
  readonly #n: number;
  #calls = 0;
  #entries = 0;
  #finished = 0;
  #resolve!: (t: number) => void;
  /** Resolves with `now()` once the last step of every workflow ran. */
  readonly allDone = new Promise<number>((r) => (this.#resolve = r));

  /** A tracker of `n` workflows of `steps` steps each. */
  constructor(n: number, steps: number) {
    this.#n = n;
    this.#steps = steps;
    this.#counts = new Uint32Array(n * steps);
  }

  /** The handler was entered. */
  enter(): void {
    this.#entries++;
  }

  /** The body of step `k` of workflow `i` ran. */
  step(i: number, k: number): void {
    this.#calls++;
    const at = i * this.#steps + k;
    this.#counts[at]++;
    if (k === this.#steps - 1 && this.#counts[at] === 1 && ++this.#finished === this.#n) this.#resolve(now());
  }

  /** Whether every step body ran exactly once. */
  ok(): boolean {
    return this.#calls === this.#counts.length && this.#counts.every((c) => c === 1);
  }

  /** The figures of the check (the shared benchmark's field names). */
  verify() {
    let distinct = 0;
    let more = 0;
    for (const c of this.#counts) {
      if (c) distinct++;
      if (c > 1) more++;
    }
    return {
      step_calls: this.#calls,
      distinct_steps: distinct,
      expected_steps: this.#counts.length,
      steps_run_more_than_once: more,
      workflow_function_entries: this.#entries,
    };
  }
}

/** Per-workflow times: `mark(name, i)` keeps the time of its first call for `(name, i)`. */
export class Marks<N extends string> {
  readonly #n: number;
  readonly #marks = new Map<N, { t: Float64Array; count: number; first: number; last: number; all: () => void }>();
  readonly #all = new Map<N, Promise<void>>();

  /** Marks `names` of `n` workflows. */
  constructor(n: number, names: readonly N[]) {
    this.#n = n;
    for (const name of names) {
      const m = { t: new Float64Array(n).fill(NaN), count: 0, first: Infinity, last: -Infinity, all: () => {} };
      this.#all.set(name, new Promise<void>((r) => (m.all = r)));
      this.#marks.set(name, m);
    }
  }

  /** Records now as `name` of workflow `i`, unless it was recorded already. */
  mark(name: N, i: number): void {
    const m = this.#marks.get(name)!;
    if (!Number.isNaN(m.t[i])) return;
    const t = now();
    m.t[i] = t;
    m.count++;
    m.first = Math.min(m.first, t);
    m.last = Math.max(m.last, t);
    if (m.count === this.#n) m.all();
  }

  /** How many workflows have `name`. */
  count(name: N): number {
    return this.#marks.get(name)!.count;
  }
  /** The earliest `name`. */
  first(name: N): number {
    return this.#marks.get(name)!.first;
  }
  /** The latest `name`. */
  last(name: N): number {
    return this.#marks.get(name)!.last;
  }
  /** Every workflow's `name` (NaN where unset). */
  times(name: N): Float64Array {
    return this.#marks.get(name)!.t;
  }
  /** Resolves with the time of the last `name` once every workflow has it. */
  async whenAll(name: N): Promise<number> {
    await this.#all.get(name);
    return this.last(name);
  }
}

/** What the handlers record into: the step bodies and the marks of the workload under way. */
export interface Bookkeeping {
  readonly steps: StepTracker;
  readonly marks: Marks<"asleep" | "woke" | "waiting" | "resumed" | "done">;
}

/** The marks of the sleep and event workloads, with nothing marked. */
export const noMarks = (n: number) => new Marks(n, ["asleep", "woke", "waiting", "resumed", "done"]);

/** The handlers of the workflow kinds, recording into `book`. */
function handlers({ steps, marks }: Bookkeeping): Handlers<typeof wfJobs, unknown, unknown> {
  return {
    wf_steps: async ({ i }, job) => {
      steps.enter();
      for (let k = 0; k < CFG.wf.steps; k++) {
        await job.step(`s${k}`, () => {
          steps.step(i, k);
          return stepOutput(i, k);
        });
      }
      return { i };
    },
    wf_sleep: async ({ i }, job) => {
      steps.enter();
      await job.step("a", () => {
        steps.step(i, 0);
        return stepOutput(i, 0);
      });
      marks.mark("asleep", i);
      await job.sleep("nap", CFG.wf.sleepMs);
      marks.mark("woke", i);
      await job.step("b", () => {
        steps.step(i, 1);
        return stepOutput(i, 1);
      });
      return { i };
    },
    wf_event: async ({ i }, job) => {
      steps.enter();
      marks.mark("waiting", i);
      const ev = await job.waitForEvent<{ i: number }>(EVENT, {
        key: eventKey(i),
        timeout: `${CFG.wf.eventTimeoutS}s`,
      });
      marks.mark("resumed", i);
      const got = ev ? ev.i : null;
      await job.step("after", () => {
        steps.step(i, 0);
        return { ...stepOutput(i, 0), got };
      });
      marks.mark("done", i);
      return { i, got };
    },
  };
}

/**
 * The duration in the environment variable `name` (`"default"`: errand's
 * default, returned as undefined), or `fallback` when it is unset.
 */
export function envDuration(name: string, fallback: Duration | undefined): Duration | undefined {
  const v = process.env[name];
  if (v === undefined || v === "") return fallback;
  return v === "default" ? undefined : /^\d+$/.test(v) ? Number(v) : v as Duration;
}

/** Options of a worker instance beyond the bench's queue (its poll and promotion intervals). */
export interface WorkerTuning {
  pollInterval?: Duration;
  promote?: Duration;
}

/**
 * A `"work"` instance on `db` running the workflow kinds into `book`, not
 * started: queue `default` with `C` slots and a claim batch of `C`, as in
 * the queue drain, and the `tuning` given (errand's defaults otherwise).
 */
export function workflowWorker(session: Session, db: BenchDatabase, book: Bookkeeping, tuning: WorkerTuning = {}) {
  return session.keep(createErrand({
    jobs: wfJobs,
    store: db.store,
    mode: "work",
    logger: silent,
    queues: { default: { concurrency: CFG.concurrency } },
    claimBatch: CFG.concurrency,
    ...(tuning.pollInterval === undefined ? {} : { pollInterval: tuning.pollInterval }),
    ...(tuning.promote === undefined ? {} : { maintenance: { promote: tuning.promote } }),
    handlers: handlers(book),
  }));
}

/** The settings of {@link workflowWorker} with `tuning`, as a line reports them. */
export const workerSettings = (tuning: WorkerTuning = {}) => ({
  mode: "work",
  queue: { name: "default", concurrency: CFG.concurrency },
  claimBatch: CFG.concurrency,
  pollInterval: tuning.pollInterval ?? "1s (default)",
  maintenance_promote: tuning.promote ?? "1s (default)",
  eventRetention: "24h (default)",
  kinds: "wf_steps, wf_sleep, wf_event: job<{ i, s }, result>() with default options",
});

/**
 * Enqueues `n` workflows of `kind` with inputs `payload(0..n-1)` before
 * the worker starts (setup, not timed), from an instance in mode
 * `"enqueue"` on the same store, `enqueueMany` 1000 at a time, and checks
 * that the store counts `n` available.
 */
export async function enqueueUpFront(db: BenchDatabase, kind: WfKind, n: number): Promise<string[]> {
  const loader = createErrand({ jobs: wfJobs, store: db.store, mode: "enqueue", logger: silent });
  const ids: string[] = [];
  for (const batch of payloadBatches(n, 1000)) {
    for (const r of await loader.enqueueMany(batch.map((p) => ({ kind, payload: p })))) ids.push(r.id);
  }
  const available = await db.count("available", kind);
  if (available !== n) throw new Error(`pre-enqueue failed: ${available} of ${n} ${kind} available`);
  return ids;
}

/** Polls the store (every 10 ms, on the probe connection) until it counts `n` completed `kind` jobs; returns that time. */
export const whenCompleted = (db: BenchDatabase, kind: WfKind, n: number, signal: AbortSignal) =>
  waitUntil(async () => (await db.count("completed", kind)) === n, signal, 10);

/** The nearest-rank summary of `samples` (ms): n, p50, p95, p99, min, max, mean. */
export function summary(samples: readonly number[]) {
  const s = samples.filter(Number.isFinite).sort((a, b) => a - b);
  if (!s.length) return { n: 0 };
  return {
    n: s.length,
    p50: round(percentile(s, 50)),
    p95: round(percentile(s, 95)),
    p99: round(percentile(s, 99)),
    min: round(s[0]),
    max: round(s[s.length - 1]),
    mean: round(s.reduce((a, b) => a + b, 0) / s.length),
  };
}

/** User and system CPU ms of this process since `since`. */
export function cpuMs(since: ReturnType<typeof process.cpuUsage>): number {
  const u = process.cpuUsage(since);
  return Math.round((u.user + u.system) / 1000);
}

/** A snapshot of `db`'s statement counter. */
export const snapshot = (db: BenchDatabase) => db.statements!.snapshot();

/** The `sql_total` of a timed section of `n` workflows: the statements from `a` to `b`, and per workflow. */
export function sqlTotal(db: BenchDatabase, a: StatementSnapshot, b: StatementSnapshot, n: number) {
  const count: StatementCount = db.statements!.diff(a, b, 16);
  return { ...count, per_workflow: count.statements === undefined ? null : round(count.statements / n, 1) };
}
