/**
 * The shared services of one instance, wired once from the client's bag:
 * the completer and the post-run rule (`running/after_run.ts`), the
 * workflow step writer, the lease keeper, maintenance, the leadership, the
 * recurring jobs, partition ownership, the consumer groups, the heartbeat,
 * the report of unhandled jobs and the probe that wakes idle workers, and
 * the factory of queue workers that run on them.
 * Nothing runs until the pool (`pool.ts`) starts it.
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
import { Probe } from "../running/probe.ts";
import { QueueWorker } from "../running/worker.ts";
import { Schedules } from "../schedules/schedules.ts";
import { withDeadline } from "../store/deadline.ts";
import type { HeadFilter } from "../store/records.ts";
import type { StoreFor } from "../store/store.ts";
import { Ownership } from "../topics/ownership.ts";
import { StepWriter } from "../workflows/step_writer.ts";
import type { ClientDeps } from "./deps.ts";

/** What the services work with besides the client's bag. */
export interface ServicesDeps<TTx> extends ClientDeps<TTx> {
  /** The insert path, for recurring jobs' firings and handlers' enqueues. */
  readonly inserter: Inserter<TTx>;
  /** Handed to every handler as `job.context`. */
  readonly context: unknown;
  /** Told of `n` occurrences of recurring jobs enqueued (a `step()` reports them). */
  cronEnqueued(n: number): void;
}

/** The shared services of one instance. */
export class Services<TTx> {
  readonly #deps: ServicesDeps<TTx>;
  /** The store of the services and workers, its calls time-limited. */
  readonly store: StoreFor<TTx>;
  /** The limits every queue worker's claims enforce. */
  readonly #flow: FlowControl;
  readonly completer: Completer;
  /** Stores the workflow steps of every run of this instance, in batches. */
  readonly #stepWriter: StepWriter;
  readonly afterRun: AfterRun;
  readonly leases: LeaseKeeper;
  readonly maintenance: Maintenance;
  readonly leadership: Leadership;
  /** The recurring jobs: defined through the client in every mode, fired by a `"work"` instance's leader. */
  readonly schedules: Schedules;
  readonly #ownership: Ownership;
  /** The consumer groups this instance runs (in mode "work", or in `step()`). */
  readonly consumers: LogConsumers;
  readonly heartbeat: Heartbeat;
  readonly unhandled: UnhandledReport;
  /** The one look at every queue that wakes idle workers. */
  readonly probe: Probe;

  /** Wires the services; nothing runs yet. */
  constructor(deps: ServicesDeps<TTx>) {
    this.#deps = deps;
    const { options, kinds, workers, telemetry, workerId, watchers, releases } = deps;
    // Each service gets the bag alone, not the client's whole one, and no store call of theirs waits forever.
    // A call that hangs may be on the listener's connection too, which then hears nothing: the loops poll
    // until it is heard again (pool.ts).
    const store = this.store = withDeadline(deps.store, options.storeTimeoutMs, () => {
      this.listening(false);
      this.probe.wake();
    });
    const base = { store, clock: deps.clock, logger: deps.logger };
    this.#flow = new FlowControl(options.queueFlows, kinds.handledFlows());
    this.completer = new Completer(base);
    this.#stepWriter = new StepWriter(base);
    const flow = this.#flow;
    this.afterRun = new AfterRun({
      ...base,
      completer: this.completer,
      kinds,
      flow,
      workers,
      telemetry,
      watchers,
      releases,
    });
    this.leases = new LeaseKeeper(base, options.leaseMs, (outcome, n) => telemetry.leasesRenewed(outcome, n));
    this.maintenance = new Maintenance({
      ...base,
      retention: options.retention,
      eventRetentionMs: options.eventRetentionMs,
      partitionHistory: options.partitionHistory,
      logRetention: options.logRetention,
      intervals: options.intervals,
      retryPolicy: (kind, version) => kinds.retryPolicy(kind, version),
      wake: (queue) => workers.wake(queue),
      releases,
      rescued: (ids) => telemetry.rescued(ids),
      leading: () => this.leadership.isLeader,
    });
    const leadership = this.leadership = new Leadership({
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
        deps.cronEnqueued(inserted);
        telemetry.cronEnqueued(inserted);
        return results;
      },
    });
    this.#ownership = new Ownership(workerId, options.topics, kinds.handledTopics());
    this.consumers = new LogConsumers({ ...base, id: workerId, groups: options.consumers, telemetry });
    this.heartbeat = new Heartbeat({
      ...base,
      id: workerId,
      describe: () => ({ queues: workers.slots(), kinds: kinds.handled(), consumers: this.consumers.members() }),
      onLive: (live) => {
        this.consumers.refresh(live);
        // Partitions may have come this instance's way.
        if (this.#ownership.refresh(live) && workers.partitioned) workers.wakeAll();
      },
    });
    this.probe = new Probe({
      ...base,
      pollMs: options.pollMs,
      queues: () => [...workers.all()].map((w) => w.queue),
      wake: (queue) => workers.wake(queue),
    });
    this.unhandled = new UnhandledReport({
      ...base,
      intervalMs: options.intervals.prune,
      works: (queue) => workers.get(queue) !== undefined,
    });
  }

  /**
   * Whether the store's listener is up: then the probe and the consumer
   * groups look on their own only as a safety net, and maintenance runs on
   * the leader only (its promotions wake the others through the listener).
   */
  listening(listening: boolean): void {
    this.probe.listening = listening;
    this.consumers.listening = listening;
    this.maintenance.leaderOnly = listening;
  }

  /** The listener heard of a change (or came up, having missed some): the probe and the leader's promotion look. */
  changed(): void {
    this.probe.wake();
    this.maintenance.changed();
  }

  /** The partition heads a claim on `queue` may take, or null while the namespace has no partitions. */
  heads(queue: string): HeadFilter | null {
    return this.#deps.workers.partitioned ? this.#ownership.heads(queue) : null;
  }

  /** Makes and registers the worker of `queue` with `slots` slots, running it at once when `run`. */
  worker(queue: string, slots: number, run: boolean): QueueWorker<TTx> {
    const { clock, logger, options, kinds, workers, telemetry, tracing, inserter, context, workerId, watchers } =
      this.#deps;
    const { leaseMs, pollMs, claimBatch, storeTimeoutMs } = options;
    const worker = new QueueWorker(queue, slots, {
      store: this.store,
      clock,
      logger,
      context,
      leaseMs,
      pollMs,
      claimBatch,
      storeTimeoutMs,
      workerId,
      leases: this.leases,
      // Any kind with a handler may run here: enqueue can move a job to another queue.
      handledKinds: kinds.handled(),
      kinds,
      runEnds: this.afterRun,
      enqueuer: inserter,
      tracing,
      telemetry,
      stepWriter: this.#stepWriter,
      claims: telemetry,
      partitions: this,
      flow: this.#flow,
      maxResultBytes: options.maxResultBytes,
      eventRetentionMs: options.eventRetentionMs,
      progressIntervalMs: options.progressIntervalMs,
      changed: (id) => watchers.changed(id),
      parentResults: (id) => readParentResults(this.store, id),
    });
    workers.add(worker);
    if (run) worker.start();
    return worker;
  }
}
