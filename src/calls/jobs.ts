/**
 * The calls on single jobs: read one or a page of them, retry, cancel,
 * delete, and count them by state and queue. Each checks its arguments
 * before it reads or writes, and says precisely why a change does not
 * apply.
 *
 * @module
 */
import { checkId, checkOptions } from "../checks/arguments.ts";
import { checkCount } from "../checks/limits.ts";
import { checkName } from "../checks/names.ts";
import { liveWorkers } from "../cluster/heartbeat.ts";
import { NotFoundError, StateError, ValidationError } from "../base/errors.ts";
import { toJobInfo } from "../jobs/job_info.ts";
import { payloadForDisplay } from "../encoding/codec.ts";
import { JOB_STATES, type JobInfo, type JobState, type StepInfo, type WaitingFor } from "../base/types.ts";
import { toStepInfo, waitingForOf } from "../workflows/step_info.ts";
import { InvokedChildren } from "../workflows/children.ts";
import type { ChildReleases } from "../enqueue/continuations.ts";
import { type UnhandledCount, unhandledOf } from "../cluster/unhandled.ts";
import type { Watchers } from "../results/watchers.ts";
import type { Workers } from "../running/workers.ts";
import type { JobTransitionParams } from "../store/jobs.ts";
import type { Store } from "../store/store.ts";
import type { Clock } from "../base/clock.ts";
import { whenAll } from "../base/when_all.ts";

/** Filters of `list()`. */
export interface ListOptions {
  /**
   * Only jobs in this state. `"retrying"` lists the jobs waiting for their
   * next attempt after a failed run; `"scheduled"` the others that wait for
   * their run time (a delay, a snooze, a workflow's sleep).
   */
  state?: JobState;
  /** Only jobs on this queue. */
  queue?: string;
  /** Only jobs of this kind (its stored name). */
  kind?: string;
  /** Only jobs of this topic. */
  topic?: string;
  /** The `cursor` of the previous page. */
  cursor?: string;
  /**
   * Page size, 1 to 1000.
   * @default {50}
   */
  limit?: number;
}

/** A page of jobs, newest first. */
export interface JobPage {
  /** The jobs of this page. */
  readonly jobs: readonly JobInfo[];
  /** Pass as `cursor` for the next page; null on the last page. */
  readonly cursor: string | null;
}

/** A job as `get()` returns it: with its parents and first 25 children (continuations). */
export interface JobDetails extends JobInfo {
  /** Its handler's result once it has completed (what the handler returned), else undefined. */
  readonly result: unknown;
  /** The jobs it waits (or waited) for. */
  readonly parents: readonly string[];
  /** The first 25 continuations waiting (or that waited) for it, oldest first. */
  readonly children: readonly string[];
  /** Its durable steps (`job.step()`, `sleep()`, `invoke()`, `waitForEvent()`), in call order; empty for a job without. */
  readonly steps: readonly StepInfo[];
  /** What it waits for while `waiting` as a workflow (an event, or a child job), else null. */
  readonly waitingFor: WaitingFor | null;
}

/**
 * Job counts, as returned by `counts()`; every state is present (0 when
 * none). Jobs waiting for a retry count as `retrying`, not `scheduled`.
 */
export interface JobCounts {
  /** Jobs per state. */
  readonly byState: Readonly<Record<JobState, number>>;
  /** Jobs per state, per queue that has any. */
  readonly byQueue: Readonly<Record<string, Readonly<Record<JobState, number>>>>;
  /**
   * Available jobs that no live `"work"` instance (heartbeat within 15 s)
   * can run: none works their queue with a handler for their kind and
   * version. They stay available, attempts untouched, until one does.
   */
  readonly unhandled: readonly UnhandledCount[];
}

/** The states `retry()` (and `retryMany()`) applies to. */
export const RETRY_FROM: readonly JobState[] = ["failed", "cancelled", "completed", "scheduled", "retrying"];

/** The states `cancel()` applies to; `cancelMany()` takes them but `running`. */
export const CANCEL_FROM: readonly JobState[] = ["scheduled", "retrying", "available", "running", "waiting"];

/** How many children `get()` shows. */
const CHILDREN_SHOWN = 25;

/** What the job calls work with. */
export interface JobCallsEnv {
  readonly store: Pick<
    Store,
    "jobCounts" | "jobDelete" | "jobGet" | "jobList" | "jobRelatives" | "jobTransition" | "stepList" | "workerList"
  >;
  readonly clock: Clock;
  /** This instance's workers: woken for jobs made available, told of cancelled runs. */
  readonly workers: Pick<Workers<unknown>, "cancel" | "wake">;
  /** This instance's waiters, told of each job changed. */
  readonly watchers: Pick<Watchers, "changed">;
  /** Cancels the continuations of cancelled jobs. */
  readonly releases: Pick<ChildReleases, "release">;
  /** Resolves once the store's schema is ready. */
  ready(): Promise<void>;
}

/** The calls on single jobs. */
export class JobCalls {
  readonly #env: JobCallsEnv;
  readonly #children: InvokedChildren;

  /** The calls over `env`. */
  constructor(env: JobCallsEnv) {
    this.#env = env;
    this.#children = new InvokedChildren({ store: env.store, cancel: (id, reason) => this.#cancel(id, reason) });
  }

  /** The children of cancelled workflows, cancelled in turn (for `cancelMany()` as well). */
  get children(): InvokedChildren {
    return this.#children;
  }

  /** See `Errand.get()`. */
  async get(id: string): Promise<JobDetails | null> {
    checkId("get", id);
    await this.#env.ready();
    const { store } = this.#env;
    const row = await store.jobGet({ id });
    if (!row) return null;
    const [{ parents, children }, steps] = await whenAll([
      store.jobRelatives({ id, limit: CHILDREN_SHOWN }),
      store.stepList({ id }),
    ]);
    return {
      ...toJobInfo(row),
      parents,
      children,
      steps: steps.map(toStepInfo),
      waitingFor: row.state === "waiting" ? waitingForOf(steps) : null,
      result: row.result ? payloadForDisplay(row.result) : undefined,
    };
  }

  /** See `Errand.list()`. */
  async list(options: ListOptions = {}): Promise<JobPage> {
    checkOptions("list()", options);
    if (options.cursor !== undefined) checkId("list", options.cursor, 'a "cursor" from the previous page: a job id');
    const limit = checkCount("limit", options.limit ?? 50, 1);
    if (limit > 1000) throw new ValidationError(`Option "limit" must be at most 1000, got "${limit}"`);
    if (options.state !== undefined && !JOB_STATES.includes(options.state)) {
      throw new ValidationError(`Option "state" must be one of ${JOB_STATES.join(", ")}, got "${options.state}"`);
    }
    for (const name of ["queue", "kind", "topic"] as const) {
      if (options[name] !== undefined) checkName(name, options[name]);
    }
    await this.#env.ready();
    const { state, queue, kind, topic, cursor } = options;
    const rows = await this.#env.store.jobList({ state, queue, kind, topic, before: cursor, limit });
    return { jobs: rows.map(toJobInfo), cursor: rows.length === limit ? rows[rows.length - 1].id : null };
  }

  /** See `Errand.retry()`. */
  async retry(id: string): Promise<JobInfo> {
    return await this.#transition(id, "retry", (now) => ({
      from: RETRY_FROM,
      state: "available",
      runAt: now,
      finishedAt: null,
      grantAttempt: true,
    }));
  }

  /** See `Errand.cancel()`. */
  cancel(id: string): Promise<JobInfo> {
    return this.#cancel(id, undefined);
  }

  /** Cancels job `id`, keeping `reason` when given, then its continuations and the children it invoked. */
  async #cancel(id: string, reason: string | undefined): Promise<JobInfo> {
    const job = await this.#transition(id, "cancel", (now) => ({
      from: CANCEL_FROM,
      state: "cancelled",
      finishedAt: now,
      ...(reason === undefined ? {} : { reason }),
    }));
    this.#env.workers.cancel(id);
    await this.#env.releases.release([id]);
    if (job.state === "cancelled") await this.#children.cancelOf([id]);
    return job;
  }

  /** See `Errand.delete()`. */
  async delete(id: string): Promise<void> {
    checkId("delete", id);
    await this.#env.ready();
    const { store } = this.#env;
    if (await store.jobDelete({ id })) return this.#env.watchers.changed(id);
    const job = await store.jobGet({ id });
    if (!job) throw new NotFoundError(`There is no job with id "${id}"`);
    throw new StateError(`Job "${id}" is running; cancel it before deleting it`);
  }

  /** See `Errand.counts()`. */
  async counts(): Promise<JobCounts> {
    await this.#env.ready();
    const { store, clock } = this.#env;
    const zero = () => Object.fromEntries(JOB_STATES.map((s) => [s, 0])) as Record<JobState, number>;
    const byState = zero();
    const byQueue: Record<string, Record<JobState, number>> = {};
    const [counts, workers] = await whenAll([store.jobCounts(), liveWorkers(store, clock.now())]);
    for (const { queue, state, count } of counts) {
      byState[state] += count;
      (byQueue[queue] ??= zero())[state] += count;
    }
    return { byState, byQueue, unhandled: unhandledOf(counts, workers) };
  }

  /** Applies an operator's state change, or says precisely why it does not apply. */
  async #transition(
    id: string,
    call: string,
    change: (now: number) => Omit<JobTransitionParams, "id">,
  ): Promise<JobInfo> {
    checkId(call, id);
    await this.#env.ready();
    const { store, clock, workers, watchers } = this.#env;
    const transition = { id, ...change(clock.now()) };
    const applied = await store.jobTransition(transition);
    const row = await store.jobGet({ id });
    if (!row) throw new NotFoundError(`There is no job with id "${id}"`);
    if (!applied) {
      throw new StateError(
        `${call}() cannot change job "${id}" in state "${row.state}"; it applies to ${
          transition.from.map((s) => `"${s}"`).join(", ")
        } jobs`,
      );
    }
    if (transition.state === "available") workers.wake(row.queue);
    watchers.changed(id);
    return toJobInfo(row);
  }
}
