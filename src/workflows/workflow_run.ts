/**
 * The durable steps of one run of a handler: `job.step()`, `job.sleep()`,
 * `job.invoke()` and `job.waitForEvent()`.
 *
 * A workflow is replayed, not resumed: every run calls the handler from
 * the top, and each step call looks up the job's stored steps (read once
 * per run, on the first call). A completed step returns its stored value
 * without running; the first step not yet done runs (or suspends the job),
 * and its record is written fenced by the run's claim, so a stale run's
 * write is refused and that run stops as a lost lease does.
 *
 * Steps are matched by name and by their place in call order: a replay
 * whose calls no longer match the stored steps (the code changed) fails the
 * run with an error naming the first step that differs.
 *
 * Suspending (a sleep, an event wait, an invoke) ends the run at once: the
 * call's promise never settles, so nothing after it runs in this run, and
 * the job runs again from the top when the step resolves.
 *
 * @module
 */
import type { ServiceDeps } from "../base/services.ts";
import { type Duration, parseDuration } from "../base/duration.ts";
import { JobFailedError, LeaseLostError, StateError, ValidationError } from "../base/errors.ts";
import type { RunError, RunRecord } from "../base/types.ts";
import { checkCount } from "../checks/limits.ts";
import { checkOptions } from "../checks/arguments.ts";
import { decodePayload, encodeStepValue } from "../encoding/codec.ts";
import type { EnqueueResult, JobEnqueueOptions } from "../enqueue/enqueue.ts";
import { backoff, checkRetryPolicy, retryDelay, type RetryPolicy } from "../jobs/retry.ts";
import type { ClaimedJob, FinishedJob, JobFinish } from "../store/records.ts";
import type { StepRow, StepType } from "../store/steps.ts";
import type { Store } from "../store/store.ts";
import type { StepWriter } from "./step_writer.ts";
import { checkEventKey, checkEventName } from "./event_names.ts";
import { cancelledWithParent } from "./children.ts";
import { toRunError } from "../jobs/run_error.ts";
import type { Telemetry } from "../observability/telemetry.ts";

/** Most step calls (steps, sleeps, invokes, event waits) one run of a handler may make. */
export const MAX_STEPS_PER_RUN = 10_000;
/** Longest step name. */
const MAX_STEP_NAME = 200;

/**
 * The wait between a step's tries within a run: short, unlike the job's
 * default policy, since the run holds its slot and its timeout runs meanwhile.
 */
const STEP_RETRY = backoff.exponential("1s", 2, "1h", { jitter: 0.1 });

/** Options of `job.step()`; `TTx` is the store's transaction type. */
export interface StepOptions<TTx = unknown> {
  /**
   * Tries of the function within one run before the step fails the run
   * (which the kind's retry policy then retries, the step with it).
   * @default {1}
   */
  attempts?: number;
  /**
   * The wait between tries within the run, which holds the run's slot and
   * counts against its timeout meanwhile.
   * @default {backoff.exponential("1s", 2, "1h", { jitter: 0.1 })} 1 s, 2 s, 4 s, ... ±10 %
   */
  retry?: RetryPolicy;
  /**
   * The application's transaction: the step's record is written in it, so
   * what `fn` wrote in `tx` and the record commit together. If `tx` rolls
   * back, the step runs again on the next run.
   */
  tx?: TTx;
}

/**
 * Options of `job.invoke()`: the child job's own options, but `unique`
 * (the child is enqueued once per workflow step already) and `tx`.
 */
export type InvokeOptions = Omit<JobEnqueueOptions, "unique">;

/** Options of `job.waitForEvent()`. */
export interface WaitForEventOptions {
  /** Which event of the name to wait for: `sendEvent(name, { key })` with the same key. @default {""} */
  key?: string;
  /** Resume with `null` when no event came within this long (a duration, or a `Date`); none waits for good. */
  timeout?: Duration | Date;
  /**
   * The step's name, when a run waits for the same event more than once.
   * @default {the event name; its second wait in a run "name#2", and so on}
   */
  step?: string;
}

/** What a run's steps need from the rest of errand. */
export interface WorkflowEnv extends ServiceDeps<Pick<Store, "inTransaction" | "jobGet" | "stepList" | "stepSuspend">> {
  /** Stores the steps saved outside an application transaction, in batches with other runs' steps. */
  readonly stepWriter: Pick<StepWriter, "save">;
  /** Most bytes of a step's stored value. */
  readonly maxResultBytes: number;
  /** How long sent events are kept for waits reached later, in ms. */
  readonly eventRetentionMs: number;
  /** Counts step tries, suspensions and event waits. */
  readonly telemetry: Pick<Telemetry, "eventWaitEnded" | "stepTried" | "suspended">;
  /** Enqueues the child of an invoke (with the run's trace context). */
  enqueueChild(kind: string, payload: unknown, options: JobEnqueueOptions): Promise<EnqueueResult>;
}

/** How the steps of a run reach the run itself. */
export interface RunHooks {
  /** Aborts when the run is stopped (timeout, cancel, lost lease, shutdown). */
  readonly signal: AbortSignal;
  /** Runs a step's function in its trace span. */
  traced<T>(name: string, fn: () => Promise<T>): Promise<T>;
  /** A step completed in this run: its name, and how many of the job's steps are completed now. */
  stepDone(step: string, steps: number): void;
  /** The run no longer holds its job: stop it as a lost lease. */
  lost(): void;
  /** The run suspended its job (the store wrote its outcome): end the run with it. */
  suspended(finish: JobFinish, applied: FinishedJob): void;
}

/** The durable steps of one run; made on the run's first step call. */
export class WorkflowRun {
  readonly #claim: ClaimedJob;
  readonly #env: WorkflowEnv;
  readonly #hooks: RunHooks;
  #stored: Promise<Stored> | undefined;
  /** The highest `seq` stored when the run began. */
  #lastSeq = -1;
  /** The job's completed steps: those stored when the run began, and this run's. */
  #completed = 0;
  #calls = 0;
  readonly #names = new Set<string>();
  readonly #eventWaits = new Map<string, number>();
  /** Events this run took from those kept, by name and key: a later wait on them takes a later one. */
  readonly #taken = new Map<string, number | null>();
  /** Steps of this run whose functions are running: a suspension waits for them to be recorded. */
  readonly #running = new Set<Promise<unknown>>();

  /** The steps of `claim`'s run. */
  constructor(claim: ClaimedJob, env: WorkflowEnv, hooks: RunHooks) {
    this.#claim = claim;
    this.#env = env;
    this.#hooks = hooks;
  }

  /** `job.step(name, fn, options)`. */
  async step<T>(name: string, fn: () => T | Promise<T>, options: StepOptions = {}): Promise<T> {
    const call = this.#call("step", name);
    if (typeof fn !== "function") throw new ValidationError(`job.step("${name}") needs a function, got ${typeof fn}`);
    const opts = checkOptions("job.step()", options);
    const attempts = opts.attempts === undefined
      ? 1
      : checkCount(`job.step("${name}") option "attempts"`, opts.attempts, 1);
    const policy = opts.retry === undefined ? STEP_RETRY : checkRetryPolicy(opts.retry);
    const prior = this.#check(await this.#load(opts.tx), call);
    if (prior?.state === "completed") return decodeStored(prior) as T;
    if (prior?.state === "failed" && this.#passed(prior)) throw storedError(prior);
    const running = this.#runStep(call, prior, fn, attempts, policy, opts.tx);
    this.#running.add(running);
    try {
      return await running;
    } finally {
      this.#running.delete(running);
    }
  }

  /** `job.sleep(name, until)`. */
  async sleep(name: string, until: Duration | Date): Promise<void> {
    const call = this.#call("sleep", name);
    const now = this.#env.clock.now();
    const wakeAt = until instanceof Date
      ? checkDate(`job.sleep("${name}")`, until)
      : now + parseDuration(until, "sleep");
    const prior = await this.#prior(call);
    if (prior?.state === "completed") return;
    const at = prior?.wakeAt ?? wakeAt;
    const step = newStep(call, "waiting", prior?.startedAt ?? now, { wakeAt: at });
    if (at <= this.#env.clock.now()) {
      return await this.#save({ ...step, state: "completed", finishedAt: Math.max(at, step.startedAt) });
    }
    await this.#suspend(step, `sleep "${call.name}" until ${new Date(at).toISOString()}`, "scheduled");
  }

  /** `job.waitForEvent(event, options)`. */
  async waitForEvent(event: string, options: WaitForEventOptions = {}): Promise<unknown> {
    checkEventName("job.waitForEvent()", event);
    const opts = checkOptions("job.waitForEvent()", options);
    const key = opts.key === undefined ? "" : checkEventKey("job.waitForEvent()", opts.key);
    const nth = (this.#eventWaits.get(event) ?? 0) + 1;
    this.#eventWaits.set(event, nth);
    const call = this.#call("event", opts.step ?? (nth === 1 ? event : `${event}#${nth}`));
    const now = this.#env.clock.now();
    const timeoutAt = opts.timeout === undefined
      ? null
      : opts.timeout instanceof Date
      ? checkDate('job.waitForEvent() option "timeout"', opts.timeout)
      : now + parseDuration(opts.timeout, "waitForEvent timeout");
    const stored = await this.#load();
    const prior = this.#check(stored, call);
    if (prior?.state === "completed") return decodeStored(prior);
    const step = newStep(call, "waiting", prior?.startedAt ?? now, {
      wakeAt: prior ? prior.wakeAt : timeoutAt,
      event,
      key,
    });
    if (prior && prior.wakeAt !== null && prior.wakeAt <= this.#env.clock.now()) {
      // Timed out: the answer is null for good, whatever comes later.
      await this.#save({ ...step, state: "completed", finishedAt: this.#env.clock.now() });
      this.#env.telemetry.eventWaitEnded(event, "expired");
      return null;
    }
    const afterSeq = this.#lastTaken(stored, event, key);
    const resolved = await this.#suspend(step, `waitForEvent "${event}"${key ? ` key "${key}"` : ""}`, "waiting", {
      afterSeq,
      sentSince: this.#env.clock.now() - this.#env.eventRetentionMs,
    });
    this.#env.telemetry.eventWaitEnded(event, "taken");
    this.#taken.set(eventKey(event, key), resolved.eventSeq);
    return decodeStored(resolved);
  }

  /** `job.invoke(name, kind, payload, options)`. */
  async invoke(name: string, kind: string, payload: unknown, options: InvokeOptions = {}): Promise<unknown> {
    const call = this.#call("invoke", name);
    const opts = checkOptions("job.invoke()", options);
    // Refused at run time too, for JavaScript callers and options typed wider than InvokeOptions.
    const given = opts as JobEnqueueOptions & { tx?: unknown };
    if (given.tx !== undefined) {
      throw new ValidationError(
        `job.invoke("${name}") takes no "tx": errand enqueues the child once itself; enqueue with job.enqueue(..., { tx }) and wait with job.waitForEvent() instead`,
      );
    }
    if (given.unique !== undefined) {
      throw new ValidationError(
        `job.invoke("${name}") takes no "unique": its child is enqueued once per workflow step already; enqueue with job.enqueue(..., { unique }) for a shared job`,
      );
    }
    const prior = await this.#prior(call);
    if (prior?.state === "completed") return decodeStored(prior);
    if (prior?.state === "failed" && this.#passed(prior)) throw storedError(prior);
    const now = this.#env.clock.now();
    let waitingOn = prior?.state === "waiting" ? prior.childId : null;
    if (waitingOn !== null) {
      const finished = await this.#childOutcome(waitingOn);
      // A child cancelled with this workflow, which an operator has since retried: it runs a new one.
      if (finished?.reason === cancelledWithParent(this.#claim.id)) waitingOn = null;
      else if (finished) return await this.#settleInvoke(prior!, finished);
    }
    // A failed child (the run failed there, and is retried) gets a new child: the step's attempt counts them.
    const attempt = waitingOn !== null ? prior!.attempt : (prior?.attempt ?? 0) + 1;
    const childId = waitingOn ?? (await this.#env.enqueueChild(kind, payload, {
      ...opts,
      // Once per parent, step and try: a run that enqueued the child and stopped before recording it finds it again.
      unique: { key: `errand:invoke:${this.#claim.id}:${call.name}:${attempt}`, scope: "any" },
    })).id;
    const step = newStep(call, "waiting", prior?.startedAt ?? now, { childId, attempt });
    const resolved = await this.#suspend(step, `invoke "${call.name}" (job ${childId})`, "waiting");
    return await this.#settleInvoke(resolved, await this.#childOutcome(childId));
  }

  /** The sequence number of the last event this job took on `event` and `key`, this run's takes included. */
  #lastTaken(stored: Stored, event: string, key: string): number | null {
    const here = this.#taken.get(eventKey(event, key));
    if (here !== undefined) return here;
    let last: number | null = null;
    for (const s of stored.rows) {
      if (s.type === "event" && s.event === event && s.key === key && s.eventSeq !== null) {
        last = last === null ? s.eventSeq : Math.max(last, s.eventSeq);
      }
    }
    return last;
  }

  /** Whether the run that stored `step` went on past it (a later step is stored): its failure was handled. */
  #passed(step: StepRow): boolean {
    return step.seq < this.#lastSeq;
  }

  /** Counts a step call and checks its name; returns the call. */
  #call(type: StepType, name: string): Call {
    if (typeof name !== "string" || name.length === 0 || name.length > MAX_STEP_NAME) {
      throw new ValidationError(
        `A step's name must be a string of 1 to ${MAX_STEP_NAME} characters, got ${
          typeof name === "string" ? `${name.length} characters` : typeof name
        }`,
      );
    }
    if (this.#names.has(name)) {
      throw new StateError(
        `Step "${name}" was already used in this run; give each step of a run its own name (in a loop, add the index: \`page-\${i}\`)`,
      );
    }
    if (this.#calls >= MAX_STEPS_PER_RUN) {
      throw new StateError(
        `A run may make at most ${MAX_STEPS_PER_RUN} step calls; split the work into child jobs (job.invoke()) or continuations`,
      );
    }
    this.#names.add(name);
    if (this.#hooks.signal.aborted) throw this.#hooks.signal.reason;
    return { type, name, seq: this.#calls++ };
  }

  /** The stored step of `call`, checked against it. */
  async #prior(call: Call): Promise<StepRow | undefined> {
    return this.#check(await this.#load(), call);
  }

  /** The job's stored steps, read once per run (through the application's transaction `tx` when the first call has one). */
  #load(tx?: unknown): Promise<Stored> {
    const store = tx === undefined ? this.#env.store : this.#env.store.inTransaction(tx);
    return this.#stored ??= store.stepList({ id: this.#claim.id }).then((rows) => {
      this.#lastSeq = rows.reduce((max, s) => Math.max(max, s.seq), -1);
      this.#completed = rows.filter((s) => s.state === "completed").length;
      return { rows, byName: new Map(rows.map((s) => [s.name, s])), bySeq: new Map(rows.map((s) => [s.seq, s])) };
    });
  }

  /** The stored step of `call`, or a {@link StateError} when the replay no longer matches what is stored. */
  #check(stored: Stored, call: Call): StepRow | undefined {
    const prior = stored.byName.get(call.name);
    const there = prior ?? stored.bySeq.get(call.seq);
    if (there && (there.name !== call.name || there.seq !== call.seq || there.type !== call.type)) {
      throw new StateError(
        `This run's steps no longer match the job's stored steps (the handler's code changed): call ${
          call.seq + 1
        } is ${call.type} "${call.name}", but the job stored ${there.type} "${there.name}" as call ${
          there.seq + 1
        }. Keep a workflow's steps while jobs run it, or change them under a new kind version`,
      );
    }
    return prior;
  }

  /** Runs a step's function until it succeeds or its tries in this run are used, recording the outcome. */
  async #runStep<T>(
    call: Call,
    prior: StepRow | undefined,
    fn: () => T | Promise<T>,
    attempts: number,
    policy: RetryPolicy,
    tx: unknown,
  ): Promise<T> {
    const { clock } = this.#env;
    const startedAt = prior?.startedAt ?? clock.now();
    let tries = prior?.attempt ?? 0;
    for (let attempt = 1;; attempt++) {
      tries++;
      let value: T;
      try {
        value = await this.#hooks.traced(call.name, async () => await fn());
        this.#env.telemetry.stepTried(this.#claim.kind, "completed");
      } catch (error) {
        this.#env.telemetry.stepTried(this.#claim.kind, "failed");
        const delay = attempt < attempts ? retryDelay(policy, attempt) : null;
        if (delay === null || this.#hooks.signal.aborted) {
          // In `tx` too: a transaction rolled back by this error takes the record along, as it takes the step's writes.
          const failed = newStep(call, "failed", startedAt, {
            attempt: tries,
            error: JSON.stringify(toRunError(error)),
          });
          await this.#save(failed, tx);
          throw error;
        }
        await abortableSleep(this.#env, delay, this.#hooks.signal);
        continue;
      }
      const encoded = value === undefined ? null : encodeStepValue(call.name, value, this.#env.maxResultBytes);
      const done = newStep(call, "completed", startedAt, { attempt: tries, finishedAt: clock.now(), result: encoded });
      await this.#save(done, tx);
      this.#hooks.stepDone(call.name, ++this.#completed);
      return value;
    }
  }

  /**
   * Writes a step fenced by the run's claim (alone in `tx` when given, else
   * through the instance's step writer); a refused write stops the run as lost.
   */
  async #save(step: StepRow, tx?: unknown): Promise<void> {
    const save = {
      id: this.#claim.id,
      fence: this.#claim.fence,
      step: { ...step, finishedAt: step.finishedAt ?? step.startedAt },
    };
    const applied = tx === undefined
      ? await this.#env.stepWriter.save(save)
      : (await this.#env.store.inTransaction(tx).stepSave({ saves: [save] }))[0];
    if (applied) return;
    this.#hooks.lost();
    throw staleRun(this.#claim, step.name);
  }

  /**
   * Suspends the job on `step` once this run's running steps are recorded;
   * returns the step as resolved when there was nothing to wait for, and
   * otherwise never (the run ended).
   */
  async #suspend(
    step: StepRow,
    note: string,
    state: "scheduled" | "waiting",
    event: { afterSeq: number | null; sentSince: number } = { afterSeq: null, sentSince: 0 },
  ): Promise<StepRow> {
    await Promise.allSettled(this.#running);
    if (this.#hooks.signal.aborted) throw this.#hooks.signal.reason;
    const now = this.#env.clock.now();
    const run: RunRecord = {
      attempt: this.#claim.attempt,
      startedAt: this.#claim.startedAt,
      finishedAt: now,
      outcome: "suspended",
      note,
    };
    const done = await this.#env.store.stepSuspend({
      id: this.#claim.id,
      fence: this.#claim.fence,
      step,
      run,
      now,
      ...event,
    });
    if (done.status === "resolved") return done.step;
    if (done.status === "fenced") {
      this.#hooks.lost();
      throw staleRun(this.#claim, step.name);
    }
    const finish: JobFinish = {
      id: this.#claim.id,
      fence: this.#claim.fence,
      state,
      at: now,
      runAt: state === "scheduled" ? step.wakeAt! : undefined,
      run,
      uncountAttempt: true,
    };
    this.#env.telemetry.suspended(this.#claim.kind, step.type === "step" ? "sleep" : step.type);
    this.#hooks.suspended(finish, done.job);
    return new Promise<never>(() => {});
  }

  /** How the invoked child ended, or undefined while it has not. */
  async #childOutcome(childId: string): Promise<ChildOutcome | undefined> {
    const child = await this.#env.store.jobGet({ id: childId });
    if (child === null) return { state: "cancelled", error: null, reason: `Child job "${childId}" no longer exists` };
    if (child.state !== "completed" && child.state !== "failed" && child.state !== "cancelled") return undefined;
    const last = child.runs.at(-1);
    return { state: child.state, result: child.result ?? null, error: last?.error ?? null, reason: child.reason };
  }

  /** Records how an invoked child ended and returns its result, or throws its failure. */
  async #settleInvoke(step: StepRow, child: ChildOutcome | undefined): Promise<unknown> {
    if (!child) throw new StateError(`Job "${step.childId}" was expected to have finished`);
    const finishedAt = this.#env.clock.now();
    if (child.state === "completed") {
      const done = { ...step, state: "completed" as const, finishedAt, result: child.result ?? null };
      await this.#save(done);
      return decodeStored(done);
    }
    const failed = new JobFailedError(step.childId!, child.state, child.error, child.reason);
    const stored = { ...toRunError(failed), state: child.state, error: child.error, reason: child.reason };
    await this.#save({ ...step, state: "failed", finishedAt, error: JSON.stringify(stored) });
    throw failed;
  }
}

/** A failed step's stored error; an invoke's also says how its child ended. */
interface StoredFailure extends RunError {
  readonly state?: "failed" | "cancelled";
  readonly error?: RunError | null;
  readonly reason?: string | null;
}

/** One map key for an event name and key. */
function eventKey(event: string, key: string): string {
  return `${event}\u0000${key}`;
}

/** A step call: its type, name and place in the run's calls. */
interface Call {
  readonly type: StepType;
  readonly name: string;
  readonly seq: number;
}

/** The job's steps as read at the run's first step call. */
interface Stored {
  readonly rows: readonly StepRow[];
  readonly byName: ReadonlyMap<string, StepRow>;
  readonly bySeq: ReadonlyMap<number, StepRow>;
}

/** How an invoked child ended. */
interface ChildOutcome {
  readonly state: "completed" | "failed" | "cancelled";
  readonly result?: Uint8Array | null;
  readonly error: RunError | null;
  readonly reason: string | null;
}

/** A step record of `call`. */
function newStep(
  call: Call,
  state: StepRow["state"],
  startedAt: number,
  fields: Partial<StepRow> = {},
): StepRow {
  return {
    name: call.name,
    seq: call.seq,
    type: call.type,
    state,
    attempt: 0,
    startedAt,
    finishedAt: null,
    result: null,
    error: null,
    wakeAt: null,
    childId: null,
    event: null,
    key: null,
    eventSeq: null,
    ...fields,
  };
}

/** A stored step's value (undefined for a step that returned nothing, null for a wait that timed out). */
function decodeStored(step: StepRow): unknown {
  if (step.result === null) return step.type === "step" ? undefined : null;
  return decodePayload(step.result);
}

/**
 * The failure a step stored, thrown again on a replay that goes past it (the
 * handler caught it the first time): an `Error` with the stored name,
 * message and stack (a child's failure as a {@link JobFailedError}).
 */
function storedError(step: StepRow): Error {
  const stored = step.error ? (JSON.parse(step.error) as StoredFailure) : null;
  if (step.type === "invoke" && step.childId !== null) {
    return new JobFailedError(step.childId, stored?.state ?? "failed", stored?.error ?? null, stored?.reason ?? null);
  }
  const error = new Error(stored?.message ?? "The step failed");
  error.name = stored?.name ?? "Error";
  if (stored?.stack) error.stack = stored.stack;
  return error;
}

function checkDate(where: string, date: Date): number {
  const ms = date.getTime();
  if (!Number.isFinite(ms)) throw new ValidationError(`${where} needs a valid Date, got an Invalid Date`);
  return ms;
}

/** Waits `ms` on the errand's clock, or until `signal` aborts (then throws its reason). */
async function abortableSleep(env: WorkflowEnv, ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) throw signal.reason;
  if (ms <= 0) return;
  await new Promise<void>((resolve, reject) => {
    const onAbort = () => {
      timer.cancel();
      reject(signal.reason);
    };
    const timer = env.clock.setTimer(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/** The error of a step write a run makes after it lost its job. */
function staleRun(claim: ClaimedJob, step: string): LeaseLostError {
  return new LeaseLostError(
    `Step "${step}" was not recorded: this run (attempt ${claim.attempt}) no longer holds job "${claim.id}", whose lease expired or which was cancelled, and another run or an operator took it over`,
  );
}
