/**
 * Runs one claimed job: decodes its payload, calls the handler with a
 * {@link JobContext}, and races it against its timeout, a lost lease and
 * shutdown. The outcome becomes a fenced {@link JobFinish} handed to the
 * completer; a run whose lease was lost writes nothing.
 *
 * @module
 */
import type { ServiceDeps } from "../base/services.ts";
import { decodePayload } from "../encoding/codec.ts";
import { type Duration, parseDuration } from "../base/duration.ts";
import { LeaseLostError, PermanentError, StateError, ValidationError } from "../base/errors.ts";
import {
  completedFinish,
  discardedFinish,
  failedFinish,
  interruptedFinish,
  namedError,
  snoozedFinish,
} from "./outcome.ts";
import type { RetryPolicy } from "../jobs/retry.ts";
import type { Store } from "../store/store.ts";
import type { ClaimedJob, FinishedJob, JobFinish } from "../store/records.ts";
import { outcomeOf } from "../observability/telemetry.ts";
import type { RunSpan } from "../observability/tracing.ts";
import { parseCarrier } from "../observability/trace_context.ts";
import type { EnqueueOptions, Enqueuer, EnqueueResult } from "../enqueue/enqueue.ts";
import type { JobDefinitions } from "../jobs/job.ts";
import { type AnyPayloadValidator, checkPayload } from "../jobs/validate.ts";
import { encodeResult } from "../encoding/codec.ts";
import { ProgressReporter } from "./progress.ts";
import type { Decided, Handler, JobContext } from "./handler.ts";
import {
  type InvokeOptions,
  type StepOptions,
  type WaitForEventOptions,
  type WorkflowEnv,
  WorkflowRun,
} from "../workflows/workflow_run.ts";

/** What the executor needs from the rest of errand: each collaborator is an object with one role. */
export interface ExecutorEnv<TTx> extends
  ServiceDeps<
    Pick<Store, "groupPause" | "inTransaction" | "jobGet" | "jobProgress" | "stepList" | "stepSuspend">
  > {
  readonly context: unknown;
  /** How long a claim holds; a handler's write in its own transaction renews it there. */
  readonly leaseMs: number;
  /** The kinds this instance runs. */
  readonly kinds: RunnableKinds;
  /** Told how each run ended: the rule of what follows a run. */
  readonly runEnds: RunEnds;
  /** Enqueues from inside a handler. */
  readonly enqueuer: HandlerEnqueuer<TTx>;
  /** Starts the trace span of each run. */
  readonly tracing: { startRun(claim: ClaimedJob): RunSpan };
  /** Counts workflow steps, suspensions and event waits. */
  readonly telemetry: WorkflowEnv["telemetry"];
  /** Stores workflow steps in batches across the instance's runs (one writer per instance). */
  readonly stepWriter: WorkflowEnv["stepWriter"];
  /** Most bytes of a stored result (and of a step's stored value). */
  readonly maxResultBytes: number;
  /** How long sent events are kept for event waits reached later, in ms. */
  readonly eventRetentionMs: number;
  /** Least time between two writes of one run's progress. */
  readonly progressIntervalMs: number;
  /** Told when a job's progress changed, so waiters in this process look at once. */
  changed(id: string): void;
  /** The results of job `id`'s parents, in the order of their ids (`job.parentResults()`). */
  parentResults(id: string): Promise<unknown[]>;
}

/** Where the executor looks up the kind of a claimed job. */
export interface RunnableKinds {
  /** The handler, retry policy and timeout of kind `name` at `version`, or undefined without a handler here. */
  runnable<TTx>(name: string, version: number): RunnableKind<TTx> | undefined;
}

/** What follows a run's end. */
export interface RunEnds {
  /**
   * Saves the outcome of a run, or, with `applied`, takes one the
   * application's transaction already wrote; settles once it is saved or
   * given up on.
   */
  finished(finish: JobFinish, claim: ClaimedJob, applied?: FinishedJob): Promise<void>;
  /** A run ended without an outcome to write (its lease was lost, or its job cancelled). */
  unfinished(claim: ClaimedJob, reason: "lost" | "cancelled"): void;
}

/** Enqueues from inside a handler. */
export interface HandlerEnqueuer<TTx> {
  /**
   * `job.enqueue`, or `job.enqueueAfter` with `after` and the running job as
   * `from` (whose sequential partition it joins), with the run's trace context `trace`.
   */
  enqueue(
    after: string | readonly string[] | undefined,
    kind: string,
    payload: unknown,
    options: EnqueueOptions<TTx> | undefined,
    from: ClaimedJob | undefined,
    trace: string | null,
  ): Promise<EnqueueResult>;
}

/** What the executor needs to run a kind. */
export interface RunnableKind<TTx> {
  readonly handler: Handler<unknown, unknown, unknown, TTx, JobDefinitions>;
  readonly retry: RetryPolicy;
  readonly timeoutMs: number | undefined;
  readonly validate: AnyPayloadValidator | undefined;
}

/** What the handler decided through `job.snooze()`, `job.discard()` or `job.retryIn()`. */
type Decision =
  | { readonly type: "snooze"; readonly delayMs: number }
  | { readonly type: "pauseGroup"; readonly delayMs: number }
  | { readonly type: "discard"; readonly reason: string }
  | { readonly type: "retryIn"; readonly delayMs: number };

/** How an execution can be stopped from outside: shutdown, a lost lease, or an operator's cancel. */
export type StopReason = "interrupted" | "lost" | "cancelled";

/** How a run's `job` ends the run from inside: a suspension, or a step write that found the job lost. */
interface RunControl {
  settle(ending: Ending): void;
  stop(reason: StopReason): void;
}

/** A job being run. */
export interface Execution {
  readonly claim: ClaimedJob;
  /** Stops the run: its signal aborts and the outcome is decided by `reason`. */
  stop(reason: StopReason): void;
  /** Settles once the outcome has been handed to the completer (the slot is free again). */
  readonly done: Promise<void>;
  /** Settles once the outcome is saved, given up on, or (lease lost) not to be written. */
  readonly saved: Promise<void>;
}

/** What the handler decided through its `job`, read when it returns. */
interface RunDecision {
  decision: Decision | undefined;
  note: string | undefined;
  /** The completion `job.complete(tx)` wrote in the application's transaction (which may yet roll back). */
  completedInTx: { readonly finish: JobFinish; readonly applied: FinishedJob } | undefined;
  /** The run's progress, from its first `job.progress()` (or a workflow's first step reported as progress). */
  progress: ProgressReporter | undefined;
  /** Whether the handler called `job.progress()`: then its steps are not reported as progress. */
  reported: boolean;
}

/** What a run's `job` acts on. */
interface RunState<TTx> {
  readonly claim: ClaimedJob;
  readonly env: ExecutorEnv<TTx>;
  readonly controller: AbortController;
  readonly span: RunSpan;
  readonly decided: RunDecision;
  readonly control: RunControl;
  /** The run's workflow steps, from its first step, sleep, invoke or event wait. */
  workflow: WorkflowRun | undefined;
  /** `job.createdAt`, from its first read. */
  createdAt: Date | undefined;
}

/**
 * The handler's `job`. Everything it offers is a getter on the prototype,
 * so a run pays only for what its handler reads: the methods are made at
 * each read, bound to the run, so a handler may destructure them; the
 * AbortSignal (an event target with its own listener map) is made by
 * Node only once a handler reads `signal`.
 */
class RunContext<TTx> implements JobContext<unknown, TTx, JobDefinitions, unknown> {
  readonly #run: RunState<TTx>;

  constructor(run: RunState<TTx>) {
    this.#run = run;
  }

  get id(): string {
    return this.#run.claim.id;
  }
  get kind(): string {
    return this.#run.claim.kind;
  }
  get version(): number {
    return this.#run.claim.version;
  }
  get queue(): string {
    return this.#run.claim.queue;
  }
  get attempt(): number {
    return this.#run.claim.attempt;
  }
  get maxAttempts(): number {
    return this.#run.claim.maxAttempts;
  }
  get createdAt(): Date {
    return this.#run.createdAt ??= new Date(this.#run.claim.createdAt);
  }
  get traceId(): string | undefined {
    return this.#run.span.traceId;
  }
  get spanId(): string | undefined {
    return this.#run.span.spanId;
  }
  get context(): unknown {
    return this.#run.env.context;
  }
  /** Aborts on timeout, on a lost lease and when shutdown's drain time is up. */
  get signal(): AbortSignal {
    return this.#run.controller.signal;
  }

  get traceparent(): () => string | undefined {
    const { claim } = this.#run;
    return () => parseCarrier(claim.trace)?.traceparent;
  }
  get tracestate(): () => string | undefined {
    const { claim } = this.#run;
    return () => parseCarrier(claim.trace)?.tracestate;
  }

  get complete(): (tx: TTx, result?: unknown) => Promise<void> {
    const { claim, env, decided } = this.#run;
    return async (tx, result) => {
      const stored = result === undefined ? undefined : encodeResult(claim.kind, result, env.maxResultBytes);
      const finish = withValues(
        completedFinish(claim, env.clock.now(), decided.note),
        stored,
        decided.progress?.latest,
      );
      const [applied] = await env.store.inTransaction(tx).jobFinishMany({ finishes: [finish] });
      if (!applied) throw staleRun(claim, "job.complete(tx)");
      decided.completedInTx = { finish, applied };
    };
  }

  get snooze(): (delay: Duration) => Decided {
    return (delay) => decide(this.#run.decided, { type: "snooze", delayMs: parseDuration(delay, "snooze") });
  }
  get pauseGroup(): (delay: Duration) => Decided {
    const { claim, decided } = this.#run;
    return (delay) => {
      if (claim.group === null) {
        throw new StateError(
          `job.pauseGroup() needs a job with a group; kind "${claim.kind}" has no "group" option (use job.snooze() to delay this job alone)`,
        );
      }
      return decide(decided, { type: "pauseGroup", delayMs: parseDuration(delay, "pauseGroup") });
    };
  }
  get discard(): (reason: string) => Decided {
    return (reason) => decide(this.#run.decided, { type: "discard", reason: checkText("discard", reason) });
  }
  get retryIn(): (delay: Duration) => Decided {
    return (delay) => decide(this.#run.decided, { type: "retryIn", delayMs: parseDuration(delay, "retryIn") });
  }
  get explain(): (message: string) => void {
    const { decided } = this.#run;
    return (message) => void (decided.note = checkText("explain", message));
  }
  get progress(): (value: unknown) => void {
    const { claim, env, decided } = this.#run;
    return (value) => {
      decided.reported = true;
      (decided.progress ??= new ProgressReporter(claim.id, claim.fence, env)).report(value);
    };
  }
  get parentResults(): () => Promise<unknown[]> {
    const { claim, env } = this.#run;
    return () => env.parentResults(claim.id);
  }

  get enqueue(): Enqueuer<JobDefinitions, TTx>["enqueue"] {
    const { claim, env, span } = this.#run;
    return async (kind: string, payload: unknown, options?: EnqueueOptions<TTx>) => {
      await holdClaimIn(env, claim, options, "job.enqueue()");
      return await env.enqueuer.enqueue(undefined, kind, payload, options, undefined, span.carrier);
    };
  }
  get enqueueAfter(): Enqueuer<JobDefinitions, TTx>["enqueueAfter"] {
    const { claim, env, span } = this.#run;
    return async (
      parents: string | readonly string[],
      kind: string,
      payload: unknown,
      options?: EnqueueOptions<TTx>,
    ) => {
      await holdClaimIn(env, claim, options, "job.enqueueAfter()");
      return await env.enqueuer.enqueue(parents, kind, payload, options, claim, span.carrier);
    };
  }

  get step(): <T>(name: string, fn: () => T | Promise<T>, options?: StepOptions<TTx>) => Promise<T> {
    return (name, fn, options) => this.#steps().step(name, fn, options);
  }
  get sleep(): (name: string, until: Duration | Date) => Promise<void> {
    return (name, until) => this.#steps().sleep(name, until);
  }
  get invoke(): (name: string, kind: string, payload: unknown, options?: InvokeOptions) => Promise<unknown> {
    return (name, kind, payload, options) => this.#steps().invoke(name, kind, payload, options);
  }
  // waitForEvent's type parameter only names what the sender sends: the data is whatever was sent.
  get waitForEvent(): <T = unknown>(event: string, options?: WaitForEventOptions) => Promise<T | null> {
    return <T>(event: string, options?: WaitForEventOptions) =>
      this.#steps().waitForEvent(event, options) as Promise<T | null>;
  }

  /** The run's workflow, made at its first step. */
  #steps(): WorkflowRun {
    const run = this.#run;
    const { claim, env, controller, span, decided, control } = run;
    return run.workflow ??= new WorkflowRun(claim, {
      ...env,
      enqueueChild: (kind, payload, options) =>
        env.enqueuer.enqueue(undefined, kind, payload, options, undefined, span.carrier),
    }, {
      signal: controller.signal,
      traced: (name, fn) => span.step(name, fn),
      // A long run's steps show in watch() as its progress, unless the handler reports its own; a run shorter
      // than the interval writes none (its outcome or suspension is the news).
      stepDone: (step, steps) => {
        if (decided.reported || env.clock.now() - claim.startedAt < env.progressIntervalMs) return;
        (decided.progress ??= new ProgressReporter(claim.id, claim.fence, env)).report({ step, steps });
      },
      lost: () => control.stop("lost"),
      suspended: (finish, applied) => control.settle({ type: "suspended", finish, applied }),
    });
  }
}

/** Records the handler's decision `next`, once per run. */
function decide(decided: RunDecision, next: Decision): Decided {
  if (decided.decision) {
    throw new StateError(`job.${next.type}() was called after job.${decided.decision.type}(); decide once per run`);
  }
  decided.decision = next;
  return DECIDED[next.type];
}

/** What a run hands on when it ends: the outcome's pending write. */
interface HandedOff {
  readonly saved: Promise<void>;
}

type Ending =
  | { type: "ok"; value: unknown }
  | { type: "suspended"; finish: JobFinish; applied: FinishedJob }
  | { type: "error"; error: unknown }
  | { type: "interrupted" }
  | { type: "lost" }
  | { type: "cancelled" };

/** What each decision method returns, one frozen object per decision. */
const DECIDED: Readonly<Record<Decided["decided"], Decided>> = {
  snooze: Object.freeze({ decided: "snooze" }),
  pauseGroup: Object.freeze({ decided: "pauseGroup" }),
  discard: Object.freeze({ decided: "discard" }),
  retryIn: Object.freeze({ decided: "retryIn" }),
};

/** `finish` carrying the run's result and last progress, where it has them. */
function withValues(finish: JobFinish, result: Uint8Array | undefined, progress: string | undefined): JobFinish {
  if (result === undefined && progress === undefined) return finish;
  return {
    ...finish,
    ...(result === undefined ? {} : { result }),
    ...(progress === undefined ? {} : { progress }),
  };
}

const STOP_ERRORS: Record<StopReason, [name: string, message: string]> = {
  interrupted: ["Interrupted", "The worker is shutting down"],
  lost: ["LeaseLost", "The job's lease was lost; another run replaces this one"],
  cancelled: ["Cancelled", "The job was cancelled"],
};

/** Starts running `claim`. */
export function execute<TTx>(claim: ClaimedJob, env: ExecutorEnv<TTx>): Execution {
  const controller = new AbortController();
  let settled = false;
  let resolveEnding!: (ending: Ending) => void;
  const ending = new Promise<Ending>((resolve) => (resolveEnding = resolve));
  const settle = (e: Ending) => {
    if (settled) return;
    settled = true;
    resolveEnding(e);
  };
  const stop = (reason: StopReason) => {
    settle({ type: reason });
    controller.abort(namedError(...STOP_ERRORS[reason]));
  };
  const handedOff = run(claim, env, controller, ending, { settle, stop }, () => settled);
  return { claim, stop, done: handedOff.then(() => undefined), saved: handedOff.then((h) => h.saved) };
}

async function run<TTx>(
  claim: ClaimedJob,
  env: ExecutorEnv<TTx>,
  controller: AbortController,
  ending: Promise<Ending>,
  control: RunControl,
  ended: () => boolean,
): Promise<HandedOff> {
  const { settle } = control;
  const kind = env.kinds.runnable<TTx>(claim.kind, claim.version);
  if (!kind) return { saved: env.runEnds.finished(interruptedFinish(claim, env.clock.now()), claim) };
  if (claim.unreadable !== undefined) {
    const error = new PermanentError(`The stored job cannot be run: ${claim.unreadable}`);
    return { saved: env.runEnds.finished(failedFinish(claim, error, env.clock.now(), kind.retry), claim) };
  }
  let payload: unknown;
  try {
    payload = decodePayload(claim.payload);
  } catch (err) {
    const error = new PermanentError(`The stored payload cannot be decoded: ${(err as Error).message}`, { cause: err });
    return { saved: env.runEnds.finished(failedFinish(claim, error, env.clock.now(), kind.retry), claim) };
  }
  if (kind.validate) {
    const problem = await checkPayload(kind.validate, payload);
    if (problem !== null) {
      const reason = `The stored payload fails the validation of "${claim.kind}": ${problem}`;
      return { saved: env.runEnds.finished(discardedFinish(claim, reason, env.clock.now()), claim) };
    }
  }
  const timeoutMs = claim.timeoutMs ?? kind.timeoutMs;
  const timer = timeoutMs === undefined ? undefined : env.clock.setTimer(() => {
    const error = namedError("Timeout", `The job did not finish within its timeout of ${timeoutMs} ms`);
    settle({ type: "error", error });
    controller.abort(error);
  }, timeoutMs);
  const span = env.tracing.startRun(claim);
  const decided: RunDecision = {
    decision: undefined,
    note: undefined,
    completedInTx: undefined,
    progress: undefined,
    reported: false,
  };
  const jobContext = new RunContext({
    claim,
    env,
    controller,
    span,
    decided,
    control,
    workflow: undefined,
    createdAt: undefined,
  });
  Promise.resolve()
    // A run stopped before its handler starts (claimed once its worker was stopping) never starts it. Not read
    // from the controller's signal: Node makes that object on first read, a cost every run would pay.
    .then(() => ended() ? undefined : span.wrap(() => kind.handler(payload, jobContext)))
    .then((value) => settle({ type: "ok", value }), (error) => settle({ type: "error", error }));
  const end = await ending;
  timer?.cancel();
  decided.progress?.end();
  if (decided.completedInTx && await committed(env, claim)) {
    // The application's transaction committed the completion: that is the run's outcome, whatever came after.
    const { finish, applied } = decided.completedInTx;
    span.end("completed", null);
    return { saved: env.runEnds.finished(finish, claim, applied) };
  }
  if (end.type === "suspended") {
    // The store wrote the suspension with the step; the progress reported so far stays with the job.
    span.end("suspended", null);
    return { saved: env.runEnds.finished(end.finish, claim, end.applied) };
  }
  const now = env.clock.now();
  if (end.type === "lost" || end.type === "cancelled") {
    if (end.type === "lost") {
      env.logger.warn("A job's lease was lost; its outcome is left to the run that replaced it", { id: claim.id });
    }
    env.runEnds.unfinished(claim, end.type);
    span.end(end.type, null);
    return { saved: Promise.resolve() };
  }
  if (decided.decision?.type === "pauseGroup" && end.type !== "interrupted") {
    await pauseGroupOf(env, claim, now + decided.decision.delayMs);
  }
  const finish = withValues(
    finishOf(claim, end, decided.decision, decided.note, kind.retry, now, env.maxResultBytes),
    undefined,
    decided.progress?.latest,
  );
  span.end(outcomeOf(finish), finish.run?.error ?? null);
  return { saved: env.runEnds.finished(finish, claim) };
}

/** The finish of a run that ended by `end` (not a lost lease or a cancel), after the handler's decision if it made one. */
function finishOf(
  claim: ClaimedJob,
  end: Exclude<Ending, { type: "lost" | "cancelled" | "suspended" }>,
  decision: Decision | undefined,
  note: string | undefined,
  retry: RetryPolicy,
  now: number,
  maxResultBytes: number,
): JobFinish {
  if (end.type === "interrupted") return interruptedFinish(claim, now);
  switch (decision?.type) {
    case "snooze":
      return snoozedFinish(claim, now, decision.delayMs, note);
    case "pauseGroup":
      return snoozedFinish(
        claim,
        now,
        decision.delayMs,
        note ?? `The handler paused its group for ${decision.delayMs} ms`,
      );
    case "discard":
      return discardedFinish(claim, decision.reason, now, note);
    case "retryIn": {
      const error = end.type === "error" ? end.error : namedError("RetryRequested", "The handler asked for a retry");
      return failedFinish(claim, error, now, retry, { retryInMs: decision.delayMs, note });
    }
  }
  if (end.type === "error") return failedFinish(claim, end.error, now, retry, { note });
  if (end.value === undefined) return completedFinish(claim, now, note);
  let result: Uint8Array;
  try {
    result = encodeResult(claim.kind, end.value, maxResultBytes);
  } catch (err) {
    const error = namedError("InvalidResult", (err as Error).message);
    return failedFinish(claim, error, now, retry, { note });
  }
  return withValues(completedFinish(claim, now, note), result, undefined);
}

/**
 * Writes the pause of the claim's group before its outcome, so the group is
 * paused by the time this job is available again. A pause that cannot be
 * written is logged: the job is still snoozed, and the rest of its group may
 * start meanwhile.
 */
async function pauseGroupOf<TTx>(env: ExecutorEnv<TTx>, claim: ClaimedJob, until: number): Promise<void> {
  try {
    await env.store.groupPause({ group: claim.group!, until });
  } catch (err) {
    env.logger.error("A group's pause could not be saved; the job is snoozed alone", {
      id: claim.id,
      error: String(err),
    });
  }
}

/** Whether the job is completed under this run's fence: its `job.complete(tx)` committed. */
async function committed<TTx>(env: ExecutorEnv<TTx>, claim: ClaimedJob): Promise<boolean> {
  try {
    const row = await env.store.jobGet({ id: claim.id });
    return row?.state === "completed" && row.fence === claim.fence;
  } catch {
    // Unknown: the completer writes the run's own outcome, which the fence rejects if the transaction committed.
    return false;
  }
}

/**
 * Before a handler's write in the application's transaction (`options.tx`),
 * renews the run's lease in that transaction: a stale run's write fails, and
 * (on PostgreSQL) no rescue can take the job before the transaction ends.
 */
async function holdClaimIn<TTx>(
  env: ExecutorEnv<TTx>,
  claim: ClaimedJob,
  options: EnqueueOptions<TTx> | undefined,
  call: string,
): Promise<void> {
  if (typeof options !== "object" || options === null || options.tx === undefined) return;
  const held = await env.store.inTransaction(options.tx).jobRenewLeases({
    leases: [{ id: claim.id, fence: claim.fence }],
    leaseUntil: env.clock.now() + env.leaseMs,
  });
  if (held.length === 0) throw staleRun(claim, call);
}

/** The error of a write a run makes after it lost its job. */
function staleRun(claim: ClaimedJob, call: string): LeaseLostError {
  return new LeaseLostError(
    `${call} was not applied: this run (attempt ${claim.attempt}) no longer holds job "${claim.id}", whose lease expired or which was cancelled, and another run or an operator took it over; let the transaction roll back`,
  );
}

function checkText(method: string, text: string): string {
  if (typeof text !== "string") throw new ValidationError(`job.${method}() needs a string, got ${typeof text}`);
  return text;
}
