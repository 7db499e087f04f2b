/**
 * What errand reports about itself as it runs: the Prometheus metrics of
 * `errand.metrics()` and the application's `observer` callbacks. The core
 * calls one method per event; this module turns it into counters,
 * histograms and callbacks. An observer that throws is logged and ignored.
 *
 * @module
 */
import type { Logger } from "../base/logger.ts";
import { HealthGauges } from "./health_metrics.ts";
import { type Metric, Registry } from "./metrics.ts";
import type { StoreHealth } from "../store/health.ts";
import type { ClaimedJob, JobFinish } from "../store/records.ts";
import type { JobState, RunError, RunOutcome } from "../base/types.ts";

/** A job as observer events describe it. */
export interface ObservedJob {
  /** The job's id. */
  readonly id: string;
  /** Its kind. */
  readonly kind: string;
  /** Its queue. */
  readonly queue: string;
}

/** A run's end as observer events describe it. */
export interface ObservedRun extends ObservedJob {
  /** The attempt that ended. */
  readonly attempt: number;
  /** How long it ran, in ms. */
  readonly durationMs: number;
}

/**
 * Callbacks for what happens to jobs, for logging or forwarding events. Each
 * is optional and called synchronously after the event; keep them quick.
 */
export interface Observer {
  /** A job was enqueued (`inserted: false`: a unique key matched an existing job). */
  enqueued?(event: ObservedJob & { readonly inserted: boolean }): void;
  /** A worker of this instance claimed a job; `waitMs` is how long it had been due. */
  claimed?(event: ObservedJob & { readonly attempt: number; readonly waitMs: number }): void;
  /** A run completed and the store applied its outcome (a stale run's rejected outcome is not reported). */
  completed?(event: ObservedRun): void;
  /** A run failed and the job will not run again (attempts used up, discarded or permanent). */
  failed?(event: ObservedRun & { readonly error: RunError | null }): void;
  /** A run failed and the job will run again at `runAt`. */
  retried?(event: ObservedRun & { readonly error: RunError | null; readonly runAt: Date }): void;
  /** This instance rescued jobs whose lease had expired. */
  rescued?(event: { readonly ids: readonly string[] }): void;
  /** This instance became the leader (cron), or stopped being it. */
  leaderChanged?(event: { readonly leader: boolean }): void;
  /**
   * A consumer group fell behind a log's retention: records `from` to
   * `to - 1` of `partition` were pruned before the group read them, and it
   * resumes at `to`.
   */
  retentionSkipped?(event: RetentionSkip): void;
}

/** Records a consumer group never got because retention pruned them first. */
export interface RetentionSkip {
  /** The consumer group. */
  readonly group: string;
  /** The log's key in `defineLogs`. */
  readonly log: string;
  /** The partition. */
  readonly partition: number;
  /** The group's committed offset: the first record it missed. */
  readonly from: number;
  /** The first retained record, where it resumes. */
  readonly to: number;
}

/** How a run ended, as the metrics count it. */
export type FinishOutcome =
  | "completed"
  | "retried"
  | "failed"
  | "snoozed"
  | "suspended"
  | "cancelled"
  | "interrupted"
  | "lost";

/** How the outcome `finish` writes counts (a discard is a failure; a finish without a run record, by its state). */
export function outcomeOf(finish: JobFinish): FinishOutcome {
  const outcome: RunOutcome | undefined = finish.run?.outcome;
  if (outcome === "discarded") return "failed";
  if (outcome === undefined || outcome === "running") {
    return finish.state === "completed" || finish.state === "failed" ? finish.state : "retried";
  }
  return outcome;
}

/** Upper bounds of the run and wait histograms, in seconds. */
const SECONDS_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800];

/** Upper bounds of the job duration histogram, in seconds: a job's retries can stretch over hours. */
const JOB_SECONDS_BUCKETS = [...SECONDS_BUCKETS, 3600, 21600, 86400];

/** How the lease of a running job fared at a renewal: renewed, found lost, or not renewed because the write failed. */
export type RenewalOutcome = "renewed" | "lost" | "failed";

/** A scrape-time view of state that lives elsewhere (workers, the store). */
export interface Snapshot {
  /** Per local queue: slots and busy slots. */
  readonly queues: readonly { readonly queue: string; readonly slots: number; readonly busy: number }[];
  /** Jobs by queue and state, as read from the store. */
  readonly queued: Readonly<Record<string, Readonly<Record<string, number>>>>;
  /** Per topic: active partitions, backlog and the oldest due head's age in ms. */
  readonly topics: readonly {
    readonly topic: string;
    readonly activePartitions: number;
    readonly depth: number;
    readonly oldestHeadAgeMs: number;
  }[];
  /** Jobs held back by a concurrency limit or a paused group, per queue and limit (see {@link HeldLimit}). */
  readonly held: readonly { readonly queue: string; readonly limit: HeldLimit; readonly jobs: number }[];
  /** Per log's topic and consumer group: records appended that the group has not consumed. */
  readonly consumerLag: readonly { readonly topic: string; readonly group: string; readonly lag: number }[];
  /** The live `"work"` instances of the namespace, by their heartbeats. */
  readonly liveWorkers: number;
  /** Per topic, its partitions that have unfinished jobs with how many. */
  readonly partitionDepths: readonly {
    readonly topic: string;
    readonly partition: number;
    readonly depth: number;
  }[];
  /** The database's health figures, when the store was asked. */
  readonly health?: StoreHealth;
}

/**
 * What holds jobs back: their group is paused, their group runs as many as
 * its kind's `groupConcurrency`, or their queue runs as many as its
 * `globalConcurrency`.
 */
export type HeldLimit = "group_paused" | "group_concurrency" | "global_concurrency";

/** Records events as metrics and hands them to the observer. */
export class Telemetry {
  readonly #registry = new Registry();
  readonly #observer: Observer;
  readonly #logger: Logger;
  #leader = false;
  readonly #m: Record<string, Metric>;
  readonly #health: HealthGauges;

  /** Telemetry of instance `workerId` reporting to `observer` (and logging its failures to `logger`). */
  constructor(observer: Observer | undefined, logger: Logger, workerId: string) {
    this.#observer = observer ?? {};
    this.#logger = logger;
    const r = this.#registry;
    this.#m = {
      enqueued: r.counter("errand_jobs_enqueued_total", "Jobs enqueued by this instance.", ["queue", "kind"]),
      duplicates: r.counter(
        "errand_jobs_duplicates_total",
        "Enqueues that matched an existing job by unique key (nothing inserted).",
      ),
      finished: r.counter("errand_jobs_finished_total", "Runs ended on this instance, by outcome.", [
        "queue",
        "kind",
        "outcome",
      ]),
      run: r.histogram("errand_job_run_seconds", "How long runs took.", ["kind", "outcome"], SECONDS_BUCKETS),
      wait: r.histogram("errand_job_wait_seconds", "How long claimed jobs had been due (available to started).", [], [
        ...SECONDS_BUCKETS,
      ]),
      running: r.gauge("errand_jobs_running", "Jobs running on this instance.", ["queue"]),
      workers: r.gauge("errand_workers", "Worker slots of this instance, busy or idle.", ["queue", "state"]),
      queued: r.gauge(
        "errand_jobs_queued",
        "Jobs in the store by queue and state, a job waiting for a retry as retrying (shared by every instance: aggregate with max, not sum).",
        ["queue", "state"],
      ),
      rescued: r.counter("errand_jobs_rescued_total", "Jobs whose expired lease this instance rescued."),
      unsaved: r.counter("errand_outcome_unsaved_total", "Run outcomes given up on after retries (the lease decides)."),
      leader: r.gauge("errand_leader", "1 while this instance is the leader (cron)."),
      cron: r.counter("errand_cron_enqueued_total", "Occurrences of recurring jobs this instance enqueued."),
      topicClaims: r.counter("errand_topic_claims_total", "Partition heads claimed by this instance.", ["topic"]),
      topicActive: r.gauge("errand_topic_active_partitions", "Partitions with unfinished jobs (shared).", ["topic"]),
      topicBacklog: r.gauge("errand_topic_backlog", "Unfinished jobs of the topic (shared).", ["topic"]),
      topicOldest: r.gauge(
        "errand_topic_oldest_head_age_seconds",
        "How long the oldest due partition head has waited (shared).",
        ["topic"],
      ),
      heldBack: r.gauge(
        "errand_jobs_held_back",
        "Due jobs a concurrency limit or a paused group holds back, by limit (shared: aggregate with max, not sum).",
        ["queue", "limit"],
      ),
      appended: r.counter("errand_log_appends_total", "Records this instance appended to retained logs.", ["log"]),
      consumed: r.counter("errand_log_records_consumed_total", "Records consumer groups consumed on this instance.", [
        "log",
        "group",
      ]),
      consumerFailures: r.counter(
        "errand_log_consumer_failures_total",
        "Batches whose handler threw on this instance (each is retried).",
        ["log", "group"],
      ),
      commitsRejected: r.counter(
        "errand_log_commits_rejected_total",
        "Commits this instance made after losing the partition's lease (rejected; the batch is consumed again).",
        ["log", "group"],
      ),
      retentionSkipped: r.counter(
        "errand_log_records_skipped_total",
        "Records consumer groups never got because retention pruned them first.",
        ["log", "group"],
      ),
      consumerLag: r.gauge(
        "errand_log_consumer_lag",
        "Records appended that the consumer group has not consumed, over the topic's partitions (shared).",
        ["topic", "group"],
      ),
      steps: r.counter(
        "errand_workflow_steps_total",
        "Workflow step functions run on this instance, by how the try ended (completed or failed).",
        ["kind", "outcome"],
      ),
      suspensions: r.counter(
        "errand_workflow_suspensions_total",
        "Workflow runs this instance suspended, by what they wait for (sleep, event, invoke).",
        ["kind", "type"],
      ),
      eventsSent: r.counter("errand_events_sent_total", "Events this instance sent (duplicates by id not counted).", [
        "event",
      ]),
      eventsDelivered: r.counter(
        "errand_events_delivered_total",
        "Event waits answered: by a send that resumed a waiting workflow, or by a kept event when the wait came.",
        ["event"],
      ),
      eventsExpired: r.counter(
        "errand_event_waits_expired_total",
        "Event waits that timed out with no event, as the workflow's next run found them.",
        ["event"],
      ),
      jobDuration: r.histogram(
        "errand_job_duration_seconds",
        "How long jobs that ended for good on this instance took from enqueue to that end, across retries.",
        ["kind", "outcome"],
        JOB_SECONDS_BUCKETS,
      ),
      transitions: r.counter(
        "errand_job_transitions_total",
        "Jobs this instance moved into a state: by inserting, claiming or ending a run (each retry counts).",
        ["queue", "to"],
      ),
      claims: r.counter(
        "errand_claims_total",
        "Claims this instance's workers made, by whether they took jobs (claimed) or found none (empty).",
        ["outcome"],
      ),
      renewals: r.counter(
        "errand_lease_renewals_total",
        "Leases of running jobs this instance renewed, found lost, or failed to renew (the write failed).",
        ["outcome"],
      ),
      workersLive: r.gauge("errand_workers_live", "Live work instances of the namespace, by heartbeat (shared)."),
      partitionDepth: r.gauge(
        "errand_topic_partition_depth",
        "Unfinished jobs of each partition of the topic that has any (shared).",
        ["topic", "partition"],
      ),
      rateWait: r.histogram(
        "errand_rate_limit_wait_seconds",
        "How long this instance's workers waited for a rate window before starting jobs a rate limit held back.",
        ["queue"],
        SECONDS_BUCKETS,
      ),
    };
    this.#health = new HealthGauges(r);
    this.#m.leader.set({}, 0);
    // The instance's id once, on a series of its own, rather than as a label on every series.
    r.gauge("errand_instance_info", "Always 1: this instance's workerId, as a label.", ["worker_id"])
      .set({ worker_id: workerId }, 1);
  }

  /** A try of a workflow step's function of kind `kind` ended with `outcome`. */
  stepTried(kind: string, outcome: "completed" | "failed"): void {
    this.#m.steps.inc({ kind, outcome });
  }

  /** A run of kind `kind` suspended on a step of `type`. */
  suspended(kind: string, type: "sleep" | "event" | "invoke"): void {
    this.#m.suspensions.inc({ kind, type });
  }

  /** An event was sent (not a duplicate) and resumed `resumed` waiting workflows. */
  eventSent(event: string, resumed: number): void {
    this.#m.eventsSent.inc({ event });
    if (resumed) this.#m.eventsDelivered.inc({ event }, resumed);
  }

  /** A wait took a kept event (`taken`), or found its timeout passed (`expired`). */
  eventWaitEnded(event: string, how: "taken" | "expired"): void {
    (how === "taken" ? this.#m.eventsDelivered : this.#m.eventsExpired).inc({ event });
  }

  /** Jobs `rows` were enqueued with `results` (`inserted: false` for unique-key matches). */
  enqueued(
    rows: readonly { readonly kind: string; readonly queue: string; readonly state: JobState }[],
    results: readonly { readonly id: string; readonly inserted: boolean }[],
  ): void {
    // Counted per (queue, kind, state) first: a bulk enqueue touches each series a few times, not once a job.
    const counts = new Map<string, { queue: string; kind: string; state: JobState; n: number }>();
    let duplicates = 0;
    for (let i = 0; i < rows.length; i++) {
      if (!results[i].inserted) {
        duplicates++;
        continue;
      }
      const { queue, kind, state } = rows[i];
      const key = `${queue}\u0000${kind}\u0000${state}`;
      const count = counts.get(key);
      if (count) count.n++;
      else counts.set(key, { queue, kind, state, n: 1 });
    }
    for (const { queue, kind, state, n } of counts.values()) {
      this.#m.enqueued.inc({ queue, kind }, n);
      this.#m.transitions.inc({ queue, to: state }, n);
    }
    if (duplicates) this.#m.duplicates.inc({}, duplicates);
    if (!this.#observer.enqueued) return;
    rows.forEach(({ kind, queue }, i) => this.#tell("enqueued", { ...results[i], kind, queue }));
  }

  /** A worker claimed `claims` at `now` (none: its claim found nothing due). */
  claimed(claims: readonly ClaimedJob[], now: number): void {
    this.#m.claims.inc({ outcome: claims.length ? "claimed" : "empty" });
    for (const c of claims) {
      this.#m.transitions.inc({ queue: c.queue, to: "running" });
      const waitMs = Math.max(0, now - c.runAt);
      this.#m.wait.observe({}, waitMs / 1000);
      if (c.topic !== null) this.#m.topicClaims.inc({ topic: c.topic });
      if (this.#observer.claimed) {
        this.#tell("claimed", { id: c.id, kind: c.kind, queue: c.queue, attempt: c.attempt, waitMs });
      }
    }
  }

  /**
   * A run of `claim` ended at `at` with `outcome`, as the store applied it
   * (`lost` when it did not), moving its job to `state` when it wrote one;
   * `unsaved`: its outcome was given up on.
   */
  runEnded(
    claim: ClaimedJob,
    at: number,
    run: {
      readonly outcome: FinishOutcome;
      readonly error?: RunError | null;
      readonly runAt?: number;
      readonly state?: JobState;
    },
    unsaved = false,
  ): void {
    const outcome = run.outcome;
    const durationMs = Math.max(0, at - claim.startedAt);
    this.#m.finished.inc({ queue: claim.queue, kind: claim.kind, outcome });
    this.#m.run.observe({ kind: claim.kind, outcome }, durationMs / 1000);
    // A job waiting for its retry is stored as scheduled but reads as retrying everywhere (see JobState).
    const to = run.state === "scheduled" && outcome === "retried" ? "retrying" : run.state;
    if (to) this.#m.transitions.inc({ queue: claim.queue, to });
    if (outcome === "completed" || outcome === "failed" || outcome === "cancelled") {
      this.#m.jobDuration.observe({ kind: claim.kind, outcome }, Math.max(0, at - claim.createdAt) / 1000);
    }
    if (unsaved) this.#m.unsaved.inc();
    // The event is made only for an observer of the outcome: every job pays for it otherwise.
    const observer = this.#observer;
    if (!(observer.completed || observer.failed || observer.retried)) return;
    const event = { id: claim.id, kind: claim.kind, queue: claim.queue, attempt: claim.attempt, durationMs };
    if (outcome === "completed") this.#tell("completed", event);
    if (outcome === "failed") this.#tell("failed", { ...event, error: run.error ?? null });
    if (outcome === "retried") {
      this.#tell("retried", { ...event, error: run.error ?? null, runAt: new Date(run.runAt ?? at) });
    }
  }

  /** A lease renewal found `n` leases `outcome`. */
  leasesRenewed(outcome: RenewalOutcome, n: number): void {
    if (n > 0) this.#m.renewals.inc({ outcome }, n);
  }

  /** A worker of `queue` started jobs a rate limit had held back for `ms`. */
  rateWaited(queue: string, ms: number): void {
    this.#m.rateWait.observe({ queue }, ms / 1000);
  }

  /** This instance rescued `ids`. */
  rescued(ids: readonly string[]): void {
    if (ids.length === 0) return;
    this.#m.rescued.inc({}, ids.length);
    this.#tell("rescued", { ids });
  }

  /** Whether this instance holds the leadership now. */
  leader(isLeader: boolean): void {
    if (isLeader === this.#leader) return;
    this.#leader = isLeader;
    this.#m.leader.set({}, isLeader ? 1 : 0);
    this.#tell("leaderChanged", { leader: isLeader });
  }

  /** This instance appended `n` records to `log` (its key). */
  appended(log: string, n: number): void {
    if (n > 0) this.#m.appended.inc({ log }, n);
  }

  /** Group `group`'s handler consumed `n` records of `log`. */
  consumed(group: string, log: string, n: number): void {
    this.#m.consumed.inc({ log, group }, n);
  }

  /** A batch of group `group` on `log` failed (it is retried). */
  consumerFailed(group: string, log: string): void {
    this.#m.consumerFailures.inc({ log, group });
  }

  /** A commit of group `group` on `log` was rejected: the member had lost the lease. */
  commitRejected(group: string, log: string): void {
    this.#m.commitsRejected.inc({ log, group });
  }

  /** A consumer group skipped records retention had pruned. */
  retentionSkipped(skip: RetentionSkip): void {
    this.#m.retentionSkipped.inc({ log: skip.log, group: skip.group }, skip.to - skip.from);
    this.#tell("retentionSkipped", skip);
  }

  /** This instance enqueued `n` occurrences of recurring jobs. */
  cronEnqueued(n: number): void {
    if (n > 0) this.#m.cron.inc({}, n);
  }

  /** The metrics in the Prometheus text format, with the gauges set from `snapshot`. */
  encode(snapshot: Snapshot): string {
    const { running, workers, queued, topicActive, topicBacklog, topicOldest, heldBack, consumerLag } = this.#m;
    const { workersLive, partitionDepth } = this.#m;
    for (const gauge of [running, workers, queued, topicActive, topicBacklog, topicOldest, heldBack, consumerLag]) {
      gauge.reset();
    }
    partitionDepth.reset();
    workersLive.set({}, snapshot.liveWorkers);
    // Added rather than set: past the label bound, partitions that read `other` sum up.
    for (const p of snapshot.partitionDepths) {
      partitionDepth.inc({ topic: p.topic, partition: String(p.partition) }, p.depth);
    }
    for (const q of snapshot.queues) {
      running.set({ queue: q.queue }, q.busy);
      workers.set({ queue: q.queue, state: "busy" }, q.busy);
      workers.set({ queue: q.queue, state: "idle" }, Math.max(0, q.slots - q.busy));
    }
    for (const [queue, byState] of Object.entries(snapshot.queued)) {
      for (const [state, n] of Object.entries(byState)) queued.set({ queue, state }, n);
    }
    for (const t of snapshot.topics) {
      topicActive.set({ topic: t.topic }, t.activePartitions);
      topicBacklog.set({ topic: t.topic }, t.depth);
      topicOldest.set({ topic: t.topic }, t.oldestHeadAgeMs / 1000);
    }
    for (const h of snapshot.held) heldBack.set({ queue: h.queue, limit: h.limit }, h.jobs);
    for (const l of snapshot.consumerLag) consumerLag.set({ topic: l.topic, group: l.group }, l.lag);
    this.#health.set(snapshot.health);
    return this.#registry.encode();
  }

  #tell<K extends keyof Observer>(name: K, event: Parameters<NonNullable<Observer[K]>>[0]): void {
    const callback = this.#observer[name] as ((e: typeof event) => void) | undefined;
    if (!callback) return;
    try {
      callback.call(this.#observer, event);
    } catch (err) {
      this.#logger.warn(`The observer's ${name}() threw; errand carries on`, { error: String(err) });
    }
  }
}
