/**
 * The consumer groups a `"work"` instance runs (and, when asked, a
 * `"manual"` one in `step()`).
 *
 * Assignment: each partition of a group goes to one live member (an
 * instance whose heartbeat lists the group), chosen by the same rendezvous
 * hashing as partition ownership, recomputed at every heartbeat. A member
 * lets go of the leases of partitions it no longer wins, so their new owner
 * need not wait for them to end.
 *
 * Fencing: a member works a partition only under the group's lease of it,
 * which carries an epoch that grows at every takeover and at every seek.
 * A batch commits from the offset it read at, under its epoch, and while
 * the lease lasts; a member that lost the lease (paused past it, cut off,
 * or moved by a seek) has its commit rejected, drops the partition and
 * takes it again only through a new lease. Delivery is therefore at least
 * once and in offset order per partition.
 *
 * Each group loop reads the ends of the log's partitions and the group's
 * stored offsets (two reads), then works each owned partition that has
 * records past its offset, partitions in parallel: batch after batch while
 * they come back full, then the partition waits for the next look. A batch whose
 * handler throws waits out its retry delay; the group's other partitions
 * go on. The next look comes after the group's poll interval, or, while the
 * store's listener announces appends (which wake the groups reading the
 * log), after the safety poll (time/safety_poll.ts); a partition whose lease
 * another member holds keeps the poll interval.
 *
 * @module
 */
import type { ServiceDeps } from "../base/services.ts";
import type { ConsumerStore } from "../store/consumers.ts";
import type { LogStore } from "../store/logs.ts";
import type { ConsumerLease, ConsumerOffsetRow, LogPartitionRow } from "../store/records.ts";
import type { WorkerInfo } from "../base/types.ts";
import type { Telemetry } from "../observability/telemetry.ts";
import { rendezvousOwner } from "../topics/ownership.ts";
import { retryDelay } from "../jobs/retry.ts";
import { sleep } from "../base/clock.ts";
import { Wakeup } from "../time/wakeup.ts";
import { safetyPollMs } from "../time/safety_poll.ts";
import type { ConsumerGroup } from "./consumer.ts";
import { toRecord } from "./record.ts";

/** What the consumers need from the rest of errand. */
export interface ConsumersEnv extends ServiceDeps<LogStore & ConsumerStore> {
  /** This instance's id, as it holds leases. */
  readonly id: string;
  /** The groups this instance runs. */
  readonly groups: readonly ConsumerGroup[];
  /** Where consumed records, failures, rejected commits and skipped records are counted. */
  readonly telemetry: Telemetry;
}

/** This member's view of one partition of a group. */
interface PartitionState {
  /** The epoch of the lease it holds, or null when it holds none. */
  epoch: number | null;
  /** When that lease ends, by this instance's clock. */
  leaseUntil: number;
  /** The group's committed offset as of the lease or the last commit. */
  position: number;
  /** Failed attempts at the current batch. */
  failures: number;
  /** No batch before then (a failed batch's retry delay). */
  retryAt: number;
  /** The batch running now. */
  running: Promise<number> | undefined;
  /** Aborts the running batch's handler. */
  abort: AbortController | undefined;
  /** Records wait but another member held the lease at the last try: no append will announce its end. */
  heldElsewhere?: boolean;
}

/** Most batch rounds of one group one `step()` runs. */
const MAX_STEP_ROUNDS = 1_000;

/** How long shutdown waits for handlers whose signal it aborted before letting their partitions go. */
const ABORT_WAIT_MS = 1_000;

/** Runs this instance's consumer groups. */
export class LogConsumers {
  readonly #env: ConsumersEnv;
  /** Per group (by member name): the partitions this instance owns now. */
  readonly #owned = new Map<string, ReadonlySet<number>>();
  readonly #states = new Map<string, Map<number, PartitionState>>();
  readonly #wakeups = new Map<string, Wakeup>();
  #loops: Promise<void>[] = [];
  #stopping = false;
  #listening = false;
  /** Whether this instance runs its groups: after `start()`, or `activate()` in mode "manual". */
  #active = false;

  /** The consumers of `env.groups`; nothing runs before `start()` or `step()`. */
  constructor(env: ConsumersEnv) {
    this.#env = env;
    for (const g of env.groups) {
      this.#owned.set(g.member, new Set());
      this.#states.set(g.member, new Map());
      this.#wakeups.set(g.member, new Wakeup(env.clock));
    }
  }

  /** What this instance's heartbeat lists: each group as `group@log`. */
  members(): string[] {
    // An instance that does not consume (a drain) must not be given partitions it would never work.
    return this.#active ? this.#env.groups.map((g) => g.member) : [];
  }

  /**
   * From now on this instance is a member of its groups (mode "work" runs
   * them after `start()`, mode "manual" in each `step()`). The first call
   * pins where each group begins in the partitions it has no offset in
   * (their earliest retained record, or their end with `startAt: "latest"`,
   * as of now), before this member leases any: every record appended from
   * then on is the group's, delivered or, when retention prunes it before a
   * member reads it, reported as skipped.
   */
  async activate(): Promise<void> {
    if (this.#active) return;
    const { store } = this.#env;
    await Promise.all(this.#env.groups.map((g) =>
      store.consumerSeek({
        group: g.group,
        log: g.log,
        partitions: Array.from({ length: g.partitions }, (_, p) => p),
        target: { kind: g.startAt },
        ifNew: true,
      })
    ));
    this.#active = true;
  }

  /** Takes the live instances as just read; recomputes the partitions this instance owns and wakes groups that changed. */
  refresh(workers: readonly WorkerInfo[]): void {
    for (const g of this.#env.groups) {
      const candidates = workers.filter((w) => w.consumers.includes(g.member)).map((w) => w.id);
      const owned = new Set<number>();
      for (let p = 0; p < g.partitions; p++) {
        if (rendezvousOwner(candidates, g.member, p) === this.#env.id) owned.add(p);
      }
      const before = this.#owned.get(g.member)!;
      this.#owned.set(g.member, owned);
      if (owned.size !== before.size || [...owned].some((p) => !before.has(p))) this.#wakeups.get(g.member)!.notify();
    }
  }

  /** Whether the store's listener is up (it announces appends): then the loops' own looks are a safety net only. */
  set listening(listening: boolean) {
    this.#listening = listening;
  }

  /** Wakes every group: the listener reconnected, and appends announced meanwhile were missed. */
  wakeAll(): void {
    for (const wakeup of this.#wakeups.values()) wakeup.notify();
  }

  /** Wakes the groups reading `log` (its stored name): records were just appended (here or, announced, elsewhere). */
  appended(log: string): void {
    for (const g of this.#env.groups) if (g.log === log) this.#wakeups.get(g.member)!.notify();
  }

  /** Mode "work", after `activate()`: runs each group's loop until `stop()`. */
  start(): void {
    this.#loops = this.#env.groups.map((g) => this.#loop(g));
  }

  /**
   * Mode "manual": runs every due batch of every group, one round after
   * another, until no owned partition has records past its offset or every
   * one waits for a retry. Returns how many records handlers consumed.
   */
  async step(): Promise<number> {
    let consumed = 0;
    for (const g of this.#env.groups) {
      for (let round = 0; round < MAX_STEP_ROUNDS; round++) {
        // A round that consumed nothing (its batches failed, or found their partitions leased elsewhere) ends the step.
        const done = (await Promise.all(await this.#tick(g))).reduce((a, b) => a + b, 0);
        if (done === 0) break;
        consumed += done;
      }
    }
    return consumed;
  }

  /**
   * Stops the loops, gives running batches `drainMs` (or until `cut` aborts)
   * to finish (then aborts their handlers' signals), and lets go of every
   * lease whose batch ended.
   */
  async stop(drainMs: number, cut?: AbortSignal): Promise<void> {
    if (this.#stopping) return;
    this.#stopping = true;
    for (const wakeup of this.#wakeups.values()) wakeup.notify();
    await Promise.all(this.#loops);
    const running = [...this.#states.values()].flatMap((states) => [...states.values()])
      .flatMap((s) => s.running ? [s.running] : []);
    if (running.length > 0) {
      const drained = new AbortController();
      const ends = cut ? AbortSignal.any([drained.signal, cut]) : drained.signal;
      await Promise.race([Promise.allSettled(running), sleep(this.#env.clock, drainMs, ends)]);
      drained.abort();
      for (const states of this.#states.values()) for (const s of states.values()) s.abort?.abort("shutdown");
      // Handlers that honour their signal end now; their partitions are let go below, not left to their leases.
      const aborted = new AbortController();
      await Promise.race([Promise.allSettled(running), sleep(this.#env.clock, ABORT_WAIT_MS, aborted.signal)]);
      aborted.abort();
    }
    await Promise.all(
      this.#env.groups.flatMap((g) =>
        [...this.#states.get(g.member)!].filter(([, s]) => !s.running).map(([p]) => this.#release(g, p))
      ),
    );
  }

  async #loop(g: ConsumerGroup): Promise<void> {
    const wakeup = this.#wakeups.get(g.member)!;
    while (!this.#stopping) {
      try {
        await this.#tick(g);
      } catch (err) {
        this.#env.logger.warn(`Consumer group "${g.group}" could not read its offsets; retrying`, {
          error: String(err),
        });
      }
      if (!this.#stopping) await wakeup.wait(this.#nextWait(g));
    }
  }

  /**
   * How long the loop of `g` sleeps: its poll interval (while the listener
   * announces appends, the safety poll, unless another member's lease holds
   * records back), or less when a failed batch's retry comes sooner.
   */
  #nextWait(g: ConsumerGroup): number {
    const now = this.#env.clock.now();
    const states = [...this.#states.get(g.member)!.values()];
    let wait = safetyPollMs(g.pollMs, this.#listening && !states.some((s) => s.heldElsewhere));
    for (const s of states) {
      if (s.failures > 0 && !s.running) wait = Math.min(wait, Math.max(0, s.retryAt - now));
    }
    return wait;
  }

  /**
   * One look at group `g`: lets go of partitions it no longer owns, then
   * starts a batch in each owned partition with records past its offset.
   * Returns the started batches (each resolves to the records it consumed).
   */
  async #tick(g: ConsumerGroup): Promise<Promise<number>[]> {
    const { store } = this.#env;
    const owned = this.#owned.get(g.member)!;
    const states = this.#states.get(g.member)!;
    await Promise.all(
      [...states].filter(([p, s]) => !owned.has(p) && !s.running && s.epoch !== null).map(([p]) => this.#release(g, p)),
    );
    if (owned.size === 0 || this.#stopping) return [];
    const [ends, offsets] = await Promise.all([
      store.logEnds({ log: g.log }),
      store.consumerOffsets({ log: g.log, group: g.group }),
    ]);
    const endOf = new Map<number, LogPartitionRow>(ends.map((e) => [e.partition, e]));
    const storedOf = new Map<number, ConsumerOffsetRow>(offsets.map((o) => [o.partition, o]));
    const now = this.#env.clock.now();
    const started: Promise<number>[] = [];
    for (const p of owned) {
      let s = states.get(p);
      if (!s) {
        s = { epoch: null, leaseUntil: 0, position: 0, failures: 0, retryAt: 0, running: undefined, abort: undefined };
        states.set(p, s);
      }
      if (s.running || this.#stopping) continue;
      const stored = storedOf.get(p);
      // A seek or another member's takeover moved the epoch: this member's lease is gone.
      if (s.epoch !== null && stored?.epoch !== s.epoch) s.epoch = null;
      const end = endOf.get(p)?.end ?? 0;
      // Every partition has the group's offset from `activate()` on: where it began, or where it got to.
      const position = s.epoch !== null ? s.position : stored?.committed ?? 0;
      if (end <= position) continue;
      if (s.failures > 0 && now < s.retryAt) continue;
      const running = this.#workPartition(g, p, s, end).finally(() => s.running = undefined);
      s.running = running;
      started.push(running);
    }
    return started;
  }

  /**
   * Batches of partition `p` one after another while each comes back full
   * (more records are waiting) and the partition is still this member's,
   * so a backlog is consumed at the store's pace, not the poll's. Resolves
   * to the records consumed.
   */
  async #workPartition(g: ConsumerGroup, p: number, s: PartitionState, end: number): Promise<number> {
    let consumed = 0;
    for (;;) {
      const n = await this.#batch(g, p, s, end);
      consumed += n;
      if (n < g.batch || this.#stopping || s.epoch === null || !this.#owned.get(g.member)!.has(p)) return consumed;
    }
  }

  /** One batch of partition `p`: lease, read, handle, commit. Resolves to the records consumed (0 when none were). */
  async #batch(g: ConsumerGroup, p: number, s: PartitionState, end: number): Promise<number> {
    const { store, clock, logger, telemetry } = this.#env;
    try {
      const now = clock.now();
      // A retry asks the store again, so a seek past a poison record is seen at once.
      if (s.epoch === null || s.failures > 0 || s.leaseUntil - now < g.leaseMs / 3) {
        const lease = await this.#lease(g, p, now);
        s.heldElsewhere = !lease;
        if (!lease) {
          // Another member holds it until its lease ends or it lets go.
          s.epoch = null;
          return 0;
        }
        // Moved by a seek: a batch that kept failing is no longer the one to retry.
        if (lease.committed !== s.position) s.failures = 0;
        s.epoch = lease.epoch;
        s.position = lease.committed;
        s.leaseUntil = now + g.leaseMs;
      }
      const epoch = s.epoch;
      const rows = await store.logRead({ log: g.log, partition: p, from: s.position, limit: g.batch });
      // Offsets are gap-free: records missing from the group's offset on were pruned by retention before it read
      // them. The group moves past them at once (committed, so the skip is reported once), then handles the rest.
      const first = rows.length > 0 ? rows[0].offset : end;
      if (first > s.position) {
        const skipped = { group: g.group, log: g.key, partition: p, from: s.position, to: first };
        if (!await this.#commit(g, p, s, epoch, skipped.from, skipped.to)) return 0;
        telemetry.retentionSkipped(skipped);
        logger.warn(
          `Consumer group "${g.group}" fell behind the retention of log "${g.key}" in partition ${p}: records ${skipped.from} to ${
            first - 1
          } were pruned before it read them; it resumes at ${first}`,
          { group: g.group, log: g.key, partition: p, skipped: first - skipped.from },
        );
      }
      if (rows.length === 0) return 0;
      const from = s.position;
      const records = rows.map(toRecord);
      const abort = new AbortController();
      s.abort = abort;
      const renewal = this.#renewWhileRunning(g, p, s, epoch, abort);
      try {
        await g.handler(records, {
          group: g.group,
          log: g.key,
          partition: p,
          attempt: s.failures + 1,
          signal: abort.signal,
        });
      } catch (err) {
        if (abort.signal.aborted) {
          // The lease was lost (a seek, a takeover) or shutdown came: not the batch's fault, and its commit would
          // be rejected anyway. The partition's next batch starts where the store says.
          logger.info(`Consumer group "${g.group}" stopped a batch of partition ${p} of log "${g.key}"`, {
            reason: String(abort.signal.reason),
          });
          return 0;
        }
        s.failures++;
        const delay = retryDelay(g.retry, s.failures) ?? g.pollMs;
        s.retryAt = clock.now() + delay;
        telemetry.consumerFailed(g.group, g.key);
        logger.warn(
          `Consumer group "${g.group}" failed on records ${from} to ${
            records.at(-1)!.offset
          } of log "${g.key}" partition ${p} (attempt ${s.failures}); retrying in ${delay} ms. Skip a poison record with seek("${g.group}", { to: { partition: ${p}, offset } })`,
          { group: g.group, log: g.key, partition: p, error: String(err) },
        );
        return 0;
      } finally {
        renewal.stop();
        s.abort = undefined;
      }
      const to = records.at(-1)!.offset + 1;
      if (!await this.#commit(g, p, s, epoch, from, to)) return 0;
      telemetry.consumed(g.group, g.key, records.length);
      return records.length;
    } catch (err) {
      // The store failed, or gave up on a call that may still have applied (a commit): the next batch takes the
      // lease again and so reads the committed offset from the store.
      s.leaseUntil = 0;
      logger.warn(`Consumer group "${g.group}" could not work partition ${p} of log "${g.key}"; retrying`, {
        error: String(err),
      });
      return 0;
    }
  }

  /** Commits `from` → `to` under `epoch`; on rejection the member drops the partition. Returns whether it applied. */
  async #commit(
    g: ConsumerGroup,
    p: number,
    s: PartitionState,
    epoch: number,
    from: number,
    to: number,
  ): Promise<boolean> {
    const now = this.#env.clock.now();
    const applied = await this.#env.store.consumerCommit({
      group: g.group,
      log: g.log,
      partition: p,
      owner: this.#env.id,
      epoch,
      from,
      to,
      now,
      until: now + g.leaseMs,
    });
    if (applied) {
      s.position = to;
      s.failures = 0;
      s.leaseUntil = now + g.leaseMs;
      return true;
    }
    if (s.epoch === epoch) s.epoch = null;
    this.#env.telemetry.commitRejected(g.group, g.key);
    this.#env.logger.warn(
      `Consumer group "${g.group}" lost its lease of partition ${p} of log "${g.key}" (taken over, moved by a seek, or expired); the commit of records ${from} to ${
        to - 1
      } was rejected and the partition's owner handles them again`,
      { group: g.group, log: g.key, partition: p, epoch },
    );
    return false;
  }

  /** Renews the lease every third of it while a handler runs; aborts `abort` when the lease is lost. */
  #renewWhileRunning(
    g: ConsumerGroup,
    p: number,
    s: PartitionState,
    epoch: number,
    abort: AbortController,
  ): { stop(): void } {
    const { clock, logger } = this.#env;
    const stopped = new AbortController();
    void (async () => {
      while (!stopped.signal.aborted && !abort.signal.aborted) {
        await sleep(clock, g.leaseMs / 3, stopped.signal);
        if (stopped.signal.aborted) return;
        const now = clock.now();
        try {
          const lease = await this.#lease(g, p, now);
          if (lease?.epoch === epoch) {
            s.leaseUntil = now + g.leaseMs;
            continue;
          }
          if (lease) {
            // Taken again under a new epoch (after a seek): the next batch starts from the stored offset.
            if (lease.committed !== s.position) s.failures = 0;
            s.epoch = lease.epoch;
            s.position = lease.committed;
            s.leaseUntil = now + g.leaseMs;
          } else if (s.epoch === epoch) s.epoch = null;
          abort.abort("lease lost");
        } catch (err) {
          logger.warn(`Renewing the lease of consumer group "${g.group}" failed; retrying`, { error: String(err) });
        }
      }
    })();
    return { stop: () => stopped.abort() };
  }

  /** Takes or renews this member's lease of partition `p` of `g` at `now`; null while another member holds it. */
  #lease(g: ConsumerGroup, p: number, now: number): Promise<ConsumerLease | null> {
    return this.#env.store.consumerLease({
      group: g.group,
      log: g.log,
      partition: p,
      owner: this.#env.id,
      initial: g.startAt,
      now,
      until: now + g.leaseMs,
    });
  }

  /** Lets go of this member's lease of partition `p` of `g`, if it holds one. */
  async #release(g: ConsumerGroup, p: number): Promise<void> {
    const s = this.#states.get(g.member)!.get(p);
    if (!s || s.epoch === null) return;
    const epoch = s.epoch;
    s.epoch = null;
    await this.#env.store.consumerRelease({ group: g.group, log: g.log, partition: p, owner: this.#env.id, epoch })
      .catch((err) =>
        this.#env.logger.warn(`Letting go of a consumer lease failed; it ends by itself`, { error: String(err) })
      );
  }
}
