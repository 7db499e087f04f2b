/**
 * What an instance runs in mode `"work"` (and, claiming only when asked, in
 * mode `"manual"`): a worker per queue and the services they share.
 *
 * Services start in this order and stop in the reverse, so nothing that is
 * still running depends on one already stopped:
 * 1. queue workers, the lease keeper, maintenance, the cron leader, the watch
 *    for partitions made elsewhere;
 * 2. the heartbeat, which announces the instance (partition ownership
 *    and consumer groups' assignment follow the live instances it reads);
 * 3. the consumer groups;
 * 4. the wake-up listener, where the store has one.
 * Shutdown deregisters first, so other instances take over partitions
 * while the workers drain, and saves every outcome before it stops renewing
 * leases.
 *
 * The rule of what follows a run lives here too ({@link WorkerPool.finished}).
 *
 * @module
 */
import { Heartbeat, liveWorkers } from "../cluster/heartbeat.ts";
import { Leadership } from "../cluster/leader.ts";
import { Maintenance } from "../cluster/maintenance.ts";
import { StateError, ValidationError } from "../base/errors.ts";
import { checkCount } from "../checks/limits.ts";
import { checkName } from "../checks/names.ts";
import type { Inserter } from "../enqueue/inserter.ts";
import type { RunError } from "../base/types.ts";
import { type FinishOutcome, outcomeOf } from "../observability/telemetry.ts";
import { FlowControl } from "../flow/claims.ts";
import { Completer, type Saved } from "../running/completer.ts";
import type { RunEnds } from "../running/executor.ts";
import { LeaseKeeper } from "../running/leases.ts";
import { QueueWorker } from "../running/worker.ts";
import { Schedules } from "../schedules/schedules.ts";
import { withDeadline, withinDeadline } from "../store/deadline.ts";
import type { ClaimedJob, FinishedJob, HeadFilter, JobFinish } from "../store/records.ts";
import type { StoreFor } from "../store/store.ts";
import { sleep } from "../base/clock.ts";
import { every, type Periodic } from "../time/periodic.ts";
import { Ownership } from "../topics/ownership.ts";
import { LogConsumers } from "../logs/consumers.ts";
import { readParentResults } from "../results/waits.ts";
import type { ClientDeps } from "./deps.ts";
import { unhandledOf } from "./operators.ts";
import type { ErrandMode } from "./options.ts";
import { runDrainSession } from "./drain_session.ts";
import {
  checkDrainOptions,
  DRAIN_GRACE_MS,
  type DrainOptions,
  type DrainPlan,
  type DrainReport,
  DrainSteps,
  settlesBy,
} from "./drain.ts";

/** One run of a `step()`. */
export interface StepRun {
  /** The job's id. */
  readonly id: string;
  /** Its kind. */
  readonly kind: string;
  /** Its queue. */
  readonly queue: string;
  /** The attempt that ran. */
  readonly attempt: number;
  /** How it ended. */
  readonly outcome: FinishOutcome;
  /** The error of a run that did not complete, or null. */
  readonly error: RunError | null;
}

/** What one `step()` did. */
export interface StepReport {
  /** Whether this instance led (and so fired due recurring jobs). */
  readonly leader: boolean;
  /** Occurrences of recurring jobs it enqueued. */
  readonly cronEnqueued: number;
  /** Jobs whose expired lease it rescued. */
  readonly rescued: number;
  /** The runs, in the order they ended. */
  readonly ran: readonly StepRun[];
  /** Records consumer groups consumed. */
  readonly consumed: number;
}

/** Most claim rounds one `step()` runs (a job that keeps making work for itself stops there). */
const MAX_STEP_ROUNDS = 1_000;

/** What the pool works with besides the client's bag. */
export interface PoolDeps<TTx> extends ClientDeps<TTx> {
  /** The insert path, for recurring jobs' firings and handlers' enqueues. */
  readonly inserter: Inserter<TTx>;
  /** Handed to every handler as `job.context`. */
  readonly context: unknown;
}

/** The queue workers and shared services of one instance. */
export class WorkerPool<TTx> implements RunEnds {
  readonly #deps: PoolDeps<TTx>;
  /** The store of the services and workers, its calls time-limited. */
  readonly #store: StoreFor<TTx>;
  /** The limits every queue worker's claims enforce. */
  readonly #flow: FlowControl;
  readonly #completer: Completer;
  readonly #leases: LeaseKeeper;
  readonly #maintenance: Maintenance;
  readonly #heartbeat: Heartbeat;
  readonly #ownership: Ownership;
  readonly #leadership: Leadership;
  /** The recurring jobs: defined through the client in every mode, fired by a `"work"` instance's leader. */
  readonly schedules: Schedules;
  /** The consumer groups this instance runs (in mode "work", or in `step()`). */
  readonly consumers: LogConsumers;
  #partitionWatch: Periodic | undefined;
  #unhandledWatch: Periodic | undefined;
  /** The queue and kind identities of unhandled jobs already reported, so each is logged once. */
  readonly #reportedUnhandled = new Set<string>();
  #unlisten: (() => Promise<void>) | undefined;
  /** Where the current `step()` collects its runs. */
  #stepRuns: StepRun[] | undefined;
  #cronEnqueued = 0;
  #started = false;
  /** Whether a drain's session runs (it may outlast its call while the store does not answer). */
  #draining = false;
  /** Aborted to end a shutdown's drain early ({@link WorkerPool.cutDrain}). */
  readonly #cut = new AbortController();
  /** Whether a `drain()` call is in progress. */
  #drainCalled = false;
  /** The session of the latest drain until it ends: the next drain, and `stop()`, wait for it. */
  #session: Promise<void> | undefined;

  /** Creates the services; nothing runs before `start()`. */
  constructor(deps: PoolDeps<TTx>) {
    this.#deps = deps;
    const { options, kinds, workers, telemetry, workerId } = deps;
    // Each service gets the bag alone, not the client's whole one, and no store call of theirs waits forever.
    this.#store = withDeadline(deps.store, options.storeTimeoutMs);
    const base = { store: this.#store, clock: deps.clock, logger: deps.logger };
    this.#flow = new FlowControl(options.queueFlows, kinds.handledFlows());
    this.#completer = new Completer(base);
    this.#leases = new LeaseKeeper(base, options.leaseMs);
    this.#maintenance = new Maintenance({
      ...base,
      retention: options.retention,
      partitionHistory: options.partitionHistory,
      logRetention: options.logRetention,
      intervals: options.intervals,
      retryPolicy: (kind, version) => kinds.retryPolicy(kind, version),
      wake: (queue) => workers.wake(queue),
      releases: deps.releases,
      rescued: (ids) => telemetry.rescued(ids),
    });
    this.#leadership = new Leadership({
      ...base,
      holder: workerId,
      leaseMs: options.leaderLeaseMs,
      onRenewed: (leading) => telemetry.leader(leading),
    });
    this.schedules = new Schedules({
      ...base,
      leadership: this.#leadership,
      newId: deps.newId,
      // A firing that shutdown interrupts still completes its writes.
      insert: async (rows) => {
        const results = await deps.inserter.insertRows(rows, undefined);
        const inserted = results.filter((r) => r.inserted).length;
        this.#cronEnqueued += inserted;
        telemetry.cronEnqueued(inserted);
        return results;
      },
    });
    this.#ownership = new Ownership(workerId, options.topics, kinds.handledTopics());
    this.consumers = new LogConsumers({ ...base, id: workerId, groups: options.consumers, telemetry });
    this.#heartbeat = new Heartbeat({
      ...base,
      id: workerId,
      describe: () => ({ queues: workers.slots(), kinds: kinds.handled(), consumers: this.consumers.members() }),
      onLive: (live) => {
        this.consumers.refresh(live);
        // Partitions may have come this instance's way.
        if (this.#ownership.refresh(live) && workers.partitioned) workers.wakeAll();
      },
    });
  }

  /** Whether a `drain()` runs now (its workers are in the registry until it ends). */
  get draining(): boolean {
    return this.#draining;
  }

  /** Mode "work": starts every service; mode "manual": makes the workers, which claim only in `step()`. */
  async start(mode: ErrandMode): Promise<void> {
    if (this.#started || mode === "enqueue") return;
    // Before anything runs: where each consumer group begins is pinned, and the first beat lists its groups.
    await this.consumers.activate();
    this.#started = true;
    const { clock, logger, options, workers } = this.#deps;
    const store = this.#store;
    for (const [queue, slots] of options.queues) this.#worker(queue, slots, mode === "work");
    if (mode !== "work") return;
    this.#leases.start();
    this.#maintenance.start();
    this.schedules.start();
    // Another process may start using partitions (a sequential recurring job): look until some exist.
    if (!workers.partitioned) {
      this.#partitionWatch = every(clock, options.intervals.promote, "Looking for partitions", logger, async () => {
        if (!workers.partitioned) workers.partitioned = await store.partitionsExist();
      });
    }
    // First after one interval, once this instance's heartbeat is there to be read.
    this.#unhandledWatch = every(
      clock,
      options.intervals.prune,
      "Looking for jobs no worker runs",
      logger,
      () => this.#reportUnhandled(),
      true,
    );
    await this.#heartbeat.start();
    // After the first beat, which told the groups which partitions are theirs.
    this.consumers.start();
    // A listener whose connection hangs must not hold start() for good; one that comes up too late is stopped.
    const listening = this.#deps.store.listen({ onWake: () => workers.wakeAll() });
    this.#unlisten = (await withinDeadline(listening, options.storeTimeoutMs, "listen", (late) => void late?.())) ??
      undefined;
    logger.info("Started", { workerId: this.#deps.workerId, queues: Object.fromEntries(options.queues) });
  }

  /** Stops in the order of the module comment; running jobs get `drainMs`. Safe to call twice or before start. */
  async stop(drainMs: number): Promise<void> {
    const { logger } = this.#deps;
    // A drain that returned without waiting for the store ends its session first.
    await this.#session;
    logger.debug("Shutdown: deregistering");
    await this.#heartbeat.stop();
    logger.debug("Shutdown: stopping schedules and giving up the leadership");
    await this.schedules.stop();
    logger.debug("Shutdown: stopping the listener");
    // The listener's connection may hang like any other; shutdown does not wait on it for good.
    const unlisten = this.#unlisten?.();
    await (unlisten && withinDeadline(unlisten, this.#deps.options.storeTimeoutMs, "unlisten"))
      ?.catch((err) => logger.warn("Stopping the listener failed", { error: String(err) }));
    this.#unlisten = undefined;
    logger.debug("Shutdown: stopping maintenance");
    await this.#maintenance.stop();
    await this.#partitionWatch?.stop();
    await this.#unhandledWatch?.stop();
    logger.debug("Shutdown: draining workers and consumers", { drainMs });
    await Promise.all([
      ...[...this.#deps.workers.all()].map((w) => w.stop(drainMs, this.#cut.signal)),
      this.consumers.stop(drainMs, this.#cut.signal),
    ]);
    logger.debug("Shutdown: saving outcomes");
    await this.#completer.flush();
    logger.debug("Shutdown: stopping lease renewal");
    await this.#leases.stop();
    // Nothing is left to cut: this clears the timers of later shutdown() calls' drains.
    this.#cut.abort();
    logger.info("Shut down");
  }

  /**
   * Ends the drain of a shutdown `afterMs` from now (at once when it begins later): running jobs are
   * interrupted and go back to available, their outcomes saved.
   */
  cutDrain(afterMs: number): void {
    void sleep(this.#deps.clock, afterMs, this.#cut.signal).then(() => this.#cut.abort());
  }

  /** Mode "manual": one full round (see `Errand.step()`). */
  async step(): Promise<StepReport> {
    if (this.#stepRuns) throw new StateError("step() was called while another step() runs; await the first");
    const ran: StepRun[] = (this.#stepRuns = []);
    this.#cronEnqueued = 0;
    try {
      await this.#heartbeat.beat();
      const leader = await this.#leadership.renew();
      if (leader) await this.schedules.fireDue();
      await this.#maintenance.promote();
      const rescued = await this.#maintenance.rescue();
      await this.#maintenance.prune();
      for (let round = 0; round < MAX_STEP_ROUNDS; round++) {
        let claimed = 0;
        for (const worker of this.#deps.workers.all()) claimed += await worker.runDue();
        if (claimed === 0) break;
      }
      await this.#completer.flush();
      const consumed = await this.consumers.step();
      return { leader, cronEnqueued: this.#cronEnqueued, rescued, ran, consumed };
    } finally {
      this.#stepRuns = undefined;
    }
  }

  /**
   * Runs due jobs until none is left or the budget nears its end (see
   * `Errand.drain()`) in a session (drain_session.ts) that this call awaits
   * until {@link DRAIN_GRACE_MS} after the budget, whatever the store does:
   * a session the store holds up goes on in the background, and the report
   * says what it had not finished. Every timer and registration it makes
   * ends with the session; the next drain, and `stop()`, wait for it first.
   */
  async drain(mode: ErrandMode, options: DrainOptions): Promise<DrainReport> {
    if (mode === "manual") {
      throw new StateError('drain() runs in modes "enqueue" and "work"; in mode "manual" call step()');
    }
    if (this.#started) {
      throw new StateError("drain() cannot run once start() has: this instance works its queues already");
    }
    if (this.#drainCalled) throw new StateError("drain() was called while another drain() runs; await the first");
    const { clock, logger } = this.#deps;
    const plan = checkDrainOptions(options, this.#deps.options.queues);
    const deadline = clock.now() + plan.budgetMs;
    this.#drainCalled = true;
    try {
      if (this.#session && !(await settlesBy(clock, this.#session, deadline))) {
        return reportOf([], null, ["finish the previous drain, which returned without waiting for the store"]);
      }
      const steps = new DrainSteps();
      const runs: StepRun[] = (this.#stepRuns = []);
      const session = this.#drainSession(plan, deadline, steps);
      let returned = false;
      const ended = session.then(
        () => undefined,
        (err) => {
          if (returned) logger.warn("A drain() that returned early failed to finish", { error: String(err) });
        },
      ).finally(() => {
        this.#session = undefined;
        this.#stepRuns = undefined;
      });
      this.#session = ended;
      if (await settlesBy(clock, ended, deadline + DRAIN_GRACE_MS)) return reportOf(runs, await session, []);
      returned = true;
      const unfinished = steps.unfinished;
      logger.warn(
        `drain() returns ${DRAIN_GRACE_MS} ms after its budget without waiting for the store; what it has not finished goes on while the process lives, and jobs left leased return by their leases`,
        { unfinished },
      );
      return reportOf(runs, null, unfinished);
    } finally {
      this.#drainCalled = false;
    }
  }

  /** A drain's session (see drain_session.ts), lent this instance's services. */
  #drainSession(plan: DrainPlan, deadline: number, steps: DrainSteps): Promise<number> {
    const { clock, logger, options, workers: registry } = this.#deps;
    // Draining until the session's last step: a start() before it would lose its heartbeat to the wind-down.
    this.#draining = true;
    return runDrainSession(
      {
        store: this.#store,
        clock,
        logger,
        leaderLeaseMs: options.leaderLeaseMs,
        ready: () => this.#deps.ready(),
        heartbeat: this.#heartbeat,
        leadership: this.#leadership,
        schedules: this.schedules,
        maintenance: this.#maintenance,
        completer: this.#completer,
        leases: this.#leases,
        workers: () => [...plan.queues].map(([queue, slots]) => this.#worker(queue, slots, false)),
        ended: (workers) => {
          for (const worker of workers) if (registry.get(worker.queue) === worker) registry.delete(worker.queue);
        },
      },
      plan,
      deadline,
      steps,
    ).finally(() => (this.#draining = false));
  }

  /** Adds `n` slots to the worker of `queue`, starting one if there is none (mode "work", after start). */
  addWorkers(mode: ErrandMode, queue: string, n: number): void {
    checkName("queue", queue);
    checkCount("n", n, 1);
    if (mode !== "work") throw new StateError(`addWorkers() needs mode "work"; this errand is in mode "${mode}"`);
    const existing = this.#deps.workers.get(queue);
    if (existing) return existing.add(n);
    if (!this.#started) throw new StateError("addWorkers() for a new queue needs start() first");
    this.#worker(queue, n, true);
  }

  /** Removes `n` slots from the worker of `queue`; resolves once the running jobs fit. */
  async removeWorkers(queue: string, n: number): Promise<void> {
    checkCount("n", n, 1);
    const worker = this.#deps.workers.get(queue);
    if (!worker) throw new ValidationError(`There is no worker for queue "${queue}"`);
    await worker.remove(n);
  }

  /** The partition heads a claim on `queue` may take, or null while the namespace has no partitions. */
  heads(queue: string): HeadFilter | null {
    return this.#deps.workers.partitioned ? this.#ownership.heads(queue) : null;
  }

  /**
   * What follows a run's end: its outcome is saved (or, with `applied`,
   * was saved by the application's transaction), and only an outcome the
   * store applied counts as that outcome (a fenced or unsaved one is
   * `lost`); a job available again, or a partition's head that finished,
   * wakes its queue; a finished parent releases or cancels its continuations.
   */
  async finished(finish: JobFinish, claim: ClaimedJob, applied?: FinishedJob): Promise<void> {
    const saved: Saved = applied
      ? { status: "applied", finish, hasChildren: applied.hasChildren }
      : await this.#completer.push({
        finish,
        run: claim,
        policy: this.#deps.kinds.retryPolicy(claim.kind, claim.version),
      });
    const written = saved.status === "applied" || saved.status === "replaced";
    const outcome = written ? outcomeOf(saved.finish) : "lost";
    const error = written ? saved.finish.run?.error ?? null : null;
    const run = { outcome, error, runAt: saved.finish.runAt };
    if (written) this.#deps.watchers.changed(saved.finish.id);
    this.#deps.telemetry.runEnded(claim, saved.finish.at, run, saved.status === "unsaved");
    this.#stepRuns?.push({ ...stepRun(claim), outcome, error });
    if (!written) return;
    const { state } = saved.finish;
    if (state === "available" || claim.topic !== null) this.#deps.workers.wake(claim.queue);
    if (saved.hasChildren && (state === "completed" || state === "failed")) {
      await this.#deps.releases.release([saved.finish.id]);
    }
  }

  /**
   * Logs, once per queue and kind version, available jobs on this
   * instance's queues that no live worker has a handler for: they wait,
   * attempts untouched, until one starts (see `counts().unhandled`).
   */
  async #reportUnhandled(): Promise<void> {
    const { clock, logger, workers } = this.#deps;
    const store = this.#store;
    const [counts, live] = await Promise.all([store.jobCounts(), liveWorkers(store, clock.now())]);
    for (const { queue, kind, version, count } of unhandledOf(counts, live)) {
      const key = `${queue}\u0000${kind}@${version}`;
      if (!workers.get(queue) || this.#reportedUnhandled.has(key)) continue;
      this.#reportedUnhandled.add(key);
      logger.warn(
        `Jobs of kind "${kind}" version ${version} on queue "${queue}" have no handler in any live worker; they wait, attempts untouched, until a worker with a handler for that version starts`,
        { queue, kind, version, available: count },
      );
    }
  }

  /** A run ended with nothing to write: its lease was lost, or its job was cancelled. */
  unfinished(claim: ClaimedJob, reason: "lost" | "cancelled"): void {
    this.#deps.telemetry.runEnded(claim, this.#deps.clock.now(), { outcome: reason });
    this.#stepRuns?.push({ ...stepRun(claim), outcome: reason, error: null });
  }

  #worker(queue: string, slots: number, run: boolean): QueueWorker<TTx> {
    const { clock, logger, options, kinds, workers, telemetry, tracing, inserter, context, workerId, watchers } =
      this.#deps;
    const { leaseMs, pollMs, claimBatch, storeTimeoutMs } = options;
    const worker = new QueueWorker(queue, slots, {
      store: this.#store,
      clock,
      logger,
      context,
      leaseMs,
      pollMs,
      claimBatch,
      storeTimeoutMs,
      workerId,
      leases: this.#leases,
      // Any kind with a handler may run here: enqueue can move a job to another queue.
      handledKinds: kinds.handled(),
      kinds,
      runEnds: this,
      enqueuer: inserter,
      tracing,
      claims: telemetry,
      partitions: this,
      flow: this.#flow,
      maxResultBytes: options.maxResultBytes,
      progressIntervalMs: options.progressIntervalMs,
      changed: (id) => watchers.changed(id),
      parentResults: (id) => readParentResults(this.#store, id),
    });
    workers.add(worker);
    if (run) worker.start();
    return worker;
  }
}

/** The job fields of a step's run. */
function stepRun(claim: ClaimedJob): Pick<StepRun, "id" | "kind" | "queue" | "attempt"> {
  return { id: claim.id, kind: claim.kind, queue: claim.queue, attempt: claim.attempt };
}

/** A drain's report from its runs, the jobs left (null if not counted) and what it did not finish. */
function reportOf(runs: readonly StepRun[], left: number | null, unfinished: readonly string[]): DrainReport {
  const ended = runs.filter((r) => r.outcome !== "interrupted" && r.outcome !== "lost");
  return {
    ran: ended.length,
    completed: ended.filter((r) => r.outcome === "completed").length,
    failed: ended.filter((r) => r.outcome === "failed").length,
    left,
    unfinished,
  };
}
