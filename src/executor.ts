/**
 * Runs one claimed job: decodes its payload, calls the handler with a
 * {@link JobContext}, and races it against its timeout, a lost lease and
 * shutdown. The outcome becomes a fenced {@link JobFinish} handed to the
 * completer; a run whose lease was lost writes nothing.
 *
 * @module
 */
import type { Clock } from "./clock.ts";
import { decodePayload } from "./codec.ts";
import { PermanentError } from "./errors.ts";
import type { Logger } from "./logger.ts";
import { completedFinish, failedFinish, interruptedFinish, namedError } from "./outcome.ts";
import type { RetryPolicy } from "./retry.ts";
import type { ClaimedJob, JobFinish, Store } from "./store.ts";

/** What a handler learns about the job it runs, as its second argument. */
export interface JobContext<Ctx = unknown, TTx = unknown> {
  /** The job's id. */
  readonly id: string;
  /** The kind's name. */
  readonly kind: string;
  /** The version of the kind's payload shape the job was enqueued with. */
  readonly version: number;
  /** The queue it runs on. */
  readonly queue: string;
  /** This run's attempt number, from 1. */
  readonly attempt: number;
  /** How many attempts the job may use. */
  readonly maxAttempts: number;
  /** When the job was enqueued. */
  readonly createdAt: Date;
  /** Aborts on timeout, on a lost lease and when shutdown's drain time is up. */
  readonly signal: AbortSignal;
  /** The `context` given to `createErrand`. */
  readonly context: Ctx;
  /**
   * Marks the job completed inside the application's transaction `tx`, so
   * the handler's writes and the completion commit together. If `tx` rolls
   * back, the job's outcome is decided as if this was never called.
   */
  complete(tx: TTx): Promise<void>;
}

/** A function that runs jobs of one kind. Throw to fail the attempt. */
export type Handler<T, Ctx = unknown, TTx = unknown> = (
  payload: T,
  job: JobContext<Ctx, TTx>,
) => unknown;

/** What the executor needs from the rest of errand. */
export interface ExecutorEnv<TTx> {
  readonly store: Store<TTx>;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly context: unknown;
  /** The handler, retry policy and timeout of a kind this worker runs. */
  kind(
    name: string,
  ): { handler: Handler<unknown, unknown, TTx>; retry: RetryPolicy; timeoutMs: number | undefined } | undefined;
  /** Hands the outcome of a job of `queue` to the completer; settles once it is saved or given up on. */
  finish(finish: JobFinish, queue: string): Promise<void>;
}

/** How an execution can be stopped from outside. */
export type StopReason = "interrupted" | "lost";

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

/** What a run hands on when it ends: the outcome's pending write. */
interface HandedOff {
  readonly saved: Promise<void>;
}

type Ending = { type: "ok" } | { type: "error"; error: unknown } | { type: StopReason };

/** Starts running `claim`. */
export function execute<TTx>(claim: ClaimedJob, env: ExecutorEnv<TTx>): Execution {
  const controller = new AbortController();
  let settle!: (ending: Ending) => void;
  const ending = new Promise<Ending>((resolve) => {
    let settled = false;
    settle = (e) => {
      if (settled) return;
      settled = true;
      resolve(e);
    };
  });
  const stop = (reason: StopReason) => {
    settle({ type: reason });
    controller.abort(namedError(reason === "lost" ? "LeaseLost" : "Interrupted", `The run was stopped: ${reason}`));
  };
  const handedOff = run(claim, env, controller, ending, settle);
  return { claim, stop, done: handedOff.then(() => undefined), saved: handedOff.then((h) => h.saved) };
}

async function run<TTx>(
  claim: ClaimedJob,
  env: ExecutorEnv<TTx>,
  controller: AbortController,
  ending: Promise<Ending>,
  settle: (e: Ending) => void,
): Promise<HandedOff> {
  const kind = env.kind(claim.kind);
  if (!kind) return { saved: env.finish(interruptedFinish(claim, env.clock.now()), claim.queue) };
  let payload: unknown;
  try {
    payload = decodePayload(claim.payload);
  } catch (err) {
    const error = new PermanentError(`The stored payload cannot be decoded: ${(err as Error).message}`, { cause: err });
    return { saved: env.finish(failedFinish(claim, error, env.clock.now(), kind.retry), claim.queue) };
  }
  const timeoutMs = claim.timeoutMs ?? kind.timeoutMs;
  const timer = timeoutMs === undefined ? undefined : env.clock.setTimer(() => {
    const error = namedError("Timeout", `The job did not finish within its timeout of ${timeoutMs} ms`);
    settle({ type: "error", error });
    controller.abort(error);
  }, timeoutMs);
  const jobContext: JobContext<unknown, TTx> = {
    id: claim.id,
    kind: claim.kind,
    version: claim.version,
    queue: claim.queue,
    attempt: claim.attempt,
    maxAttempts: claim.maxAttempts,
    createdAt: new Date(claim.createdAt),
    signal: controller.signal,
    context: env.context,
    complete: async (tx) => {
      await env.store.jobFinishMany({ finishes: [completedFinish(claim, env.clock.now())], tx });
    },
  };
  Promise.resolve()
    .then(() => kind.handler(payload, jobContext))
    .then(() => settle({ type: "ok" }), (error) => settle({ type: "error", error }));
  const end = await ending;
  timer?.cancel();
  const now = env.clock.now();
  switch (end.type) {
    case "ok":
      return { saved: env.finish(completedFinish(claim, now), claim.queue) };
    case "error":
      return { saved: env.finish(failedFinish(claim, end.error, now, kind.retry), claim.queue) };
    case "interrupted":
      return { saved: env.finish(interruptedFinish(claim, now), claim.queue) };
    case "lost":
      env.logger.warn("A job's lease was lost; its outcome is left to the run that replaced it", { id: claim.id });
      return { saved: Promise.resolve() };
  }
}
