/**
 * What an instance runs in mode `"work"` (and, claiming only when asked, in
 * mode `"manual"`): a worker per queue and the services they share, made
 * here and lent to the calls that run them (`step()`, `drain()`, worker
 * changes, in `calls/`).
 *
 * Services start in this order and stop in the reverse, so nothing that is
 * still running depends on one already stopped:
 * 1. queue workers, the lease keeper, maintenance, the cron leader, the watch
 *    for partitions made elsewhere, the report of unhandled jobs;
 * 2. the heartbeat, which announces the instance (partition ownership
 *    and consumer groups' assignment follow the live instances it reads);
 * 3. the consumer groups;
 * 4. the wake-up listener, where the store has one.
 * Shutdown ends a drain's session first, deregisters, so other instances
 * take over partitions while the workers drain, and saves every outcome
 * before it stops renewing leases.
 *
 * What follows each run is the post-run rule (`running/after_run.ts`).
 *
 * @module
 */
import { Heartbeat } from "../cluster/heartbeat.ts";
import { Leadership } from "../cluster/leader.ts";
import { Maintenance } from "../cluster/maintenance.ts";
import { UnhandledReport } from "../cluster/unhandled.ts";
import type { Inserter } from "../enqueue/inserter.ts";
import { FlowControl } from "../flow/claims.ts";
import { LogConsumers } from "../logs/consumers.ts";
import { readParentResults } from "../results/stored_result.ts";
import { AfterRun } from "../running/after_run.ts";
import { Completer } from "../running/completer.ts";
import { LeaseKeeper } from "../running/leases.ts";
import { QueueWorker } from "../running/worker.ts";
import { Schedules } from "../schedules/schedules.ts";
import { withDeadline, withinDeadline } from "../store/deadline.ts";
import type { HeadFilter } from "../store/records.ts";
import type { StoreFor } from "../store/store.ts";
import { sleep } from "../time/clock.ts";
import { every, type Periodic } from "../time/periodic.ts";
import { Ownership } from "../topics/ownership.ts";
import { DrainCall } from "../calls/drain.ts";
import { StepCall } from "../calls/step.ts";
import { WorkerCalls } from "../calls/workers.ts";
import type { ClientDeps } from "./deps.ts";

/** What the pool works with besides the client's bag. */
export interface PoolDeps<TTx> extends ClientDeps<TTx> {
  /** The insert path, for recurring jobs' firings and handlers' enqueues. */
  readonly inserter: Inserter<TTx>;
  /** Handed to every handler as `job.context`. */
  readonly context: unknown;
}

/** The queue workers and shared services of one instance. */
export class WorkerPool<TTx> {
  readonly #deps: PoolDeps<TTx>;
  /** The store of the services and workers, its calls time-limited. */
  readonly #store: StoreFor<TTx>;
  /** The limits every queue worker's claims enforce. */
  readonly #flow: FlowControl;
  readonly #completer: Completer;
  readonly #afterRun: AfterRun;
  readonly #leases: LeaseKeeper;
  readonly #maintenance: Maintenance;
  readonly #heartbeat: Heartbeat;
  readonly #ownership: Ownership;
  readonly #leadership: Leadership;
  readonly #unhandled: UnhandledReport;
  /** The recurring jobs: defined through the client in every mode, fired by a `"work"` instance's leader. */
  readonly schedules: Schedules;
  /** The consumer groups this instance runs (in mode "work", or in `step()`). */
  readonly consumers: LogConsumers;
  /** `step()`, over these services. */
  readonly steps: StepCall;
  /** `drain()`, over these services. */
  readonly drains: DrainCall<TTx>;
  /** `workers()`, `addWorkers()` and `removeWorkers()`. */
  readonly workerCalls: WorkerCalls;
  #partitionWatch: Periodic | undefined;
  #unlisten: (() => Promise<void>) | undefined;
  #started = false;
  /** Aborted to end a shutdown's drain early ({@link WorkerPool.cutDrain}). */
  readonly #cut = new AbortController();

  /** Creates the services; nothing runs before `start()`. */
  constructor(deps: PoolDeps<TTx>) {
    this.#deps = deps;
    const { options, kinds, workers, telemetry, workerId } = deps;
    // Each service gets the bag alone, not the client's whole one, and no store call of theirs waits forever.
    const store = this.#store = withDeadline(deps.store, options.storeTimeoutMs);
    const base = { store, clock: deps.clock, logger: deps.logger };
    this.#flow = new FlowControl(options.queueFlows, kinds.handledFlows());
    this.#completer = new Completer(base);
    const { watchers, releases } = deps;
    this.#afterRun = new AfterRun({
      ...base,
      completer: this.#completer,
      kinds,
      workers,
      telemetry,
      watchers,
      releases,
    });
    this.#leases = new LeaseKeeper(base, options.leaseMs);
    this.#maintenance = new Maintenance({
      ...base,
      retention: options.retention,
      partitionHistory: options.partitionHistory,
      logRetention: options.logRetention,
      intervals: options.intervals,
      retryPolicy: (kind, version) => kinds.retryPolicy(kind, version),
      wake: (queue) => workers.wake(queue),
      releases,
      rescued: (ids) => telemetry.rescued(ids),
    });
    const leadership = this.#leadership = new Leadership({
      ...base,
      holder: workerId,
      leaseMs: options.leaderLeaseMs,
      onRenewed: (leading) => telemetry.leader(leading),
    });
    this.schedules = new Schedules({
      ...base,
      leadership,
      newId: deps.newId,
      // A firing that shutdown interrupts still completes its writes.
      insert: async (rows) => {
        const results = await deps.inserter.insertRows(rows, undefined);
        const inserted = results.filter((r) => r.inserted).length;
        this.steps.cronEnqueued(inserted);
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
    this.#unhandled = new UnhandledReport({
      ...base,
      intervalMs: options.intervals.prune,
      works: (queue) => workers.get(queue) !== undefined,
    });
    const services = {
      heartbeat: this.#heartbeat,
      leadership,
      schedules: this.schedules,
      maintenance: this.#maintenance,
      completer: this.#completer,
      afterRun: this.#afterRun,
    };
    this.steps = new StepCall({ ...services, workers, consumers: this.consumers });
    this.drains = new DrainCall({
      ...base,
      ...services,
      leases: this.#leases,
      mode: options.mode,
      queues: options.queues,
      leaderLeaseMs: options.leaderLeaseMs,
      started: () => this.#started,
      ready: () => deps.ready(),
      registry: workers,
      worker: (queue, slots) => this.#worker(queue, slots, false),
    });
    this.workerCalls = new WorkerCalls({
      store: deps.store,
      clock: deps.clock,
      mode: options.mode,
      workers,
      started: () => this.#started,
      startWorker: (queue, slots) => this.#worker(queue, slots, true),
      ready: () => deps.ready(),
    });
  }

  /** Mode "work": starts every service; mode "manual": makes the workers, which claim only in `step()`. */
  async start(): Promise<void> {
    const { mode } = this.#deps.options;
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
    this.#unhandled.start();
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
    await this.drains.settled();
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
    await this.#unhandled.stop();
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

  /** The partition heads a claim on `queue` may take, or null while the namespace has no partitions. */
  heads(queue: string): HeadFilter | null {
    return this.#deps.workers.partitioned ? this.#ownership.heads(queue) : null;
  }

  /** Makes and registers the worker of `queue` with `slots` slots, running it at once when `run`. */
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
      runEnds: this.#afterRun,
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
