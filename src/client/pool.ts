/**
 * What an instance runs in mode `"work"` (and, claiming only when asked, in
 * mode `"manual"`): a worker per queue and the services they share
 * (`services.ts`), in the order they start and stop, and the calls that run
 * them (`step()`, `drain()`, worker changes, in `calls/`).
 *
 * Services start in this order and stop in the reverse, so nothing that is
 * still running depends on one already stopped:
 * 1. queue workers, the probe, the lease keeper, the cron leader, the watch
 *    for partitions made elsewhere, the report of unhandled jobs;
 * 2. the heartbeat, which announces the instance (partition ownership
 *    and consumer groups' assignment follow the live instances it reads);
 * 3. the consumer groups;
 * 4. the wake-up listener, where the store has one; while it is up, the
 *    probe (which wakes idle workers) and the consumer groups look on their
 *    own only as a safety net;
 * 5. maintenance, on the leader only while the listener is up.
 * Shutdown ends a drain's session first, deregisters, so other instances
 * take over partitions while the workers drain, and saves every outcome
 * before it stops renewing leases.
 *
 * @module
 */
import { stopWaitMs, withinDeadline } from "../store/deadline.ts";
import { sleep } from "../base/clock.ts";
import { every, type Periodic } from "../time/periodic.ts";
import { DrainCall } from "../calls/drain.ts";
import { StepCall } from "../calls/step.ts";
import { WorkerCalls } from "../calls/workers.ts";
import { Services, type ServicesDeps } from "./services.ts";

/** What the pool works with: what its services need but the count of `step()`, which it wires itself. */
export type PoolDeps<TTx> = Omit<ServicesDeps<TTx>, "cronEnqueued">;

/** The queue workers and shared services of one instance. */
export class WorkerPool<TTx> {
  readonly #deps: PoolDeps<TTx>;
  readonly #services: Services<TTx>;
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

  /** Creates the services and the calls that run them; nothing runs before `start()`. */
  constructor(deps: PoolDeps<TTx>) {
    this.#deps = deps;
    const { options, workers } = deps;
    const services = this.#services = new Services({ ...deps, cronEnqueued: (n) => this.steps.cronEnqueued(n) });
    this.steps = new StepCall({ ...services, workers });
    this.drains = new DrainCall({
      ...services,
      clock: deps.clock,
      logger: deps.logger,
      mode: options.mode,
      queues: options.queues,
      leaderLeaseMs: options.leaderLeaseMs,
      started: () => this.#started,
      ready: () => deps.ready(),
      registry: workers,
      worker: (queue, slots) => services.worker(queue, slots, false),
    });
    this.workerCalls = new WorkerCalls({
      store: deps.store,
      clock: deps.clock,
      mode: options.mode,
      workers,
      started: () => this.#started,
      startWorker: (queue, slots) => services.worker(queue, slots, true),
      ready: () => deps.ready(),
    });
  }

  /** The recurring jobs, which the schedule calls save, remove and fire. */
  get schedules(): Services<TTx>["schedules"] {
    return this.#services.schedules;
  }

  /** The consumer groups this instance runs, told of each local append. */
  get consumers(): Services<TTx>["consumers"] {
    return this.#services.consumers;
  }

  /** `rescueExpired()`: maintenance's rescue, run now, retrying the rescued jobs at once. */
  rescueExpired(): Promise<number> {
    return this.#services.maintenance.rescue({ retryAtOnce: true });
  }

  /** Mode "work": starts every service; mode "manual": makes the workers, which claim only in `step()`. */
  async start(): Promise<void> {
    const { mode } = this.#deps.options;
    if (this.#started || mode === "enqueue") return;
    // Before anything runs: where each consumer group begins is pinned, and the first beat lists its groups.
    const services = this.#services;
    await services.consumers.activate();
    this.#started = true;
    const { clock, logger, options, workers } = this.#deps;
    const { store } = services;
    for (const [queue, slots] of options.queues) services.worker(queue, slots, mode === "work");
    if (mode !== "work") return;
    services.probe.start();
    services.leases.start();
    // An instance knows whether it leads from the start: maintenance may run on the leader only.
    await services.leadership.renew();
    services.schedules.start();
    // Another process may start using partitions (a sequential recurring job): look until some exist.
    if (!workers.partitioned) {
      this.#partitionWatch = every(clock, options.intervals.promote, "Looking for partitions", logger, async () => {
        if (!workers.partitioned) workers.partitioned = await store.partitionsExist();
      });
    }
    services.unhandled.start();
    await services.heartbeat.start();
    // After the first beat, which told the groups which partitions are theirs.
    services.consumers.start();
    // A listener whose connection hangs must not hold start() for good; one that comes up too late is stopped.
    // Whatever the listener hears proves it alive: the loops go back to looking only as a safety net (after a failed
    // heartbeat made them poll, see services.ts).
    const heard = () => {
      if (this.#unlisten !== undefined) services.listening(true);
    };
    const listening = this.#deps.store.listen({
      onWake: () => {
        heard();
        services.changed();
      },
      onAppend: (log) => {
        heard();
        services.consumers.appended(log);
      },
      // Whatever was announced while the connection was down was missed: look at everything.
      onListen: () => {
        heard();
        services.changed();
        services.consumers.wakeAll();
      },
    });
    this.#unlisten = (await withinDeadline(listening, options.storeTimeoutMs, "listen", (late) => void late?.())) ??
      undefined;
    // Pushed wake-ups make the loops' own looks a safety net only (time/safety_poll.ts), and maintenance the
    // leader's alone: it starts once that is known.
    services.listening(this.#unlisten !== undefined);
    services.maintenance.start();
    // The logger adds this instance's workerId to every line.
    logger.info("Started", { queues: Object.fromEntries(options.queues) });
  }

  /** Stops in the order of the module comment; running jobs get `drainMs`. Safe to call twice or before start. */
  async stop(drainMs: number): Promise<void> {
    const { logger, options } = this.#deps;
    const services = this.#services;
    // A drain that returned without waiting for the store ends its session first.
    await this.drains.settled();
    // Each service's stop waits for its run in progress, whose store calls may take up to storeTimeout each on a
    // pool that reconnects with backoff. The stops are independent of one another: they run at once, each waited
    // for within the stop wait, so the drain does not begin tens of seconds late.
    const grace = stopWaitMs(options.storeTimeoutMs);
    const stopped = async (step: string, stopping: Promise<unknown> | undefined) => {
      if (!stopping) return;
      const finished = await withinDeadline(stopping.then(() => true), grace, step).catch(() => false);
      if (finished) logger.debug(`Shutdown: ${step} done`);
      else logger.warn(`Shutdown: ${step} took over ${grace} ms (a store call in progress); not waited for`);
    };
    logger.debug("Shutdown: deregistering, giving up the leadership, stopping the listener and maintenance");
    const unlisten = this.#unlisten?.();
    this.#unlisten = undefined;
    await Promise.all([
      stopped("deregistering", services.heartbeat.stop()),
      stopped("stopping schedules and giving up the leadership", services.schedules.stop()),
      stopped("stopping the listener", unlisten),
      stopped("stopping maintenance", services.maintenance.stop()),
      stopped("stopping the probe", services.probe.stop()),
      stopped("stopping the watch for partitions", this.#partitionWatch?.stop()),
      stopped("stopping the report of unhandled jobs", services.unhandled.stop()),
    ]);
    logger.debug("Shutdown: draining workers and consumers", { drainMs });
    await Promise.all([
      ...[...this.#deps.workers.all()].map((w) => w.stop(drainMs, this.#cut.signal)),
      services.consumers.stop(drainMs, this.#cut.signal),
    ]);
    logger.debug("Shutdown: saving outcomes");
    await services.completer.flush();
    logger.debug("Shutdown: stopping lease renewal");
    // Every outcome is saved: a renewal still in flight is of no use to wait for.
    await stopped("stopping lease renewal", services.leases.stop());
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
}
