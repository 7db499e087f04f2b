/**
 * The worker of one queue: a fetch loop that claims jobs in batches while it
 * has free slots, runs each through the executor, and sleeps when the queue
 * is empty.
 *
 * Modes of the loop:
 * - hot: the last claim filled every free slot, so more work is likely; a
 *   finishing job wakes the loop to claim again.
 * - idle: the last claim came back short; the loop sleeps until a wake-up
 *   (local enqueue, promotion, or the instance's probe, `probe.ts`, which
 *   looks at every queue at once when NOTIFY tells of jobs, when a
 *   scheduled job comes due, and every poll interval), or, held back by a
 *   rate limit, until its next window.
 * - gathering: fewer than half a claim's slots are free and more will free
 *   soon (jobs are running, or outcomes owed beyond the slot count are being
 *   saved); the loop waits a moment (GATHER_MS) for more to free, then claims.
 * - full: no free slot; the loop sleeps until a job finishes.
 *   A slot frees when its handler returns, before its outcome is saved,
 *   so the next claim does not wait for the write (under flow control the
 *   claim tells the store which runs have returned, so their group's and
 *   queue's slots are free too); but runs whose outcome is not saved yet
 *   may number at most the slot count beyond that, so a worker whose
 *   writes fail (the store down) stops claiming instead of running jobs
 *   whose outcomes pile up unsaved.
 * - stopping: no more claims; running jobs get the drain time, then are
 *   stopped and handed back uncounted.
 *
 * @module
 */
import { sleep, systemClock } from "../base/clock.ts";
import { ClaimCursor } from "./claim_cursor.ts";
import { execute, type Execution, type ExecutorEnv } from "./executor.ts";
import type { LeaseKeeper } from "./leases.ts";
import type { ClaimedJob, HeadFilter } from "../store/records.ts";
import type { ClaimKey, ClaimLimits, ReturnedRun, RunStore } from "../store/runs.ts";
import { Wakeup } from "../time/wakeup.ts";
import { stopWaitMs, withinDeadline } from "../store/deadline.ts";
import type { FlowControl } from "../flow/claims.ts";
import type { LocalWorker } from "../enqueue/local_start.ts";

/**
 * How long a worker with jobs running waits for more slots to free before it
 * claims for fewer than half a claim batch: up to this much start latency for fewer,
 * fuller claims (each claim and each outcome batch costs a round trip and
 * the store's per-statement work, whatever its size).
 */
const GATHER_MS = 2;

/** What a queue worker needs from the rest of errand. */
export interface WorkerEnv<TTx> extends ExecutorEnv<TTx> {
  /** The executor's operations, and the claim. */
  readonly store: ExecutorEnv<TTx>["store"] & Pick<RunStore, "jobClaim">;
  readonly leases: LeaseKeeper;
  readonly workerId: string;
  readonly pollMs: number;
  /** Most jobs one claim takes. */
  readonly claimBatch: number;
  /** How long a claim may take before it is given up on (and what it took, if it still lands, run). */
  readonly storeTimeoutMs: number;
  /** The identities (`name@version`) of the kinds this instance has handlers for. */
  readonly handledKinds: readonly string[];
  /** Told what each claim took, and how long a rate limit held jobs back. */
  readonly claims: {
    claimed(claims: readonly ClaimedJob[], now: number): void;
    rateWaited(queue: string, ms: number): void;
  };
  /** Which partition heads a claim may take. */
  readonly partitions: { heads(queue: string): HeadFilter | null };
  /** The limits claims enforce, and the cursor of their round-robin over groups. */
  readonly flow: FlowControl;
}

/** Runs the jobs of one queue with a number of slots. */
export class QueueWorker<TTx> implements LocalWorker {
  /** The queue this worker serves. */
  readonly queue: string;
  #slots: number;
  #hot = false;
  #stopping = false;
  #claiming = false;
  /** Slots held for jobs being inserted already claimed by this worker. */
  #reserved = 0;
  /** Runs whose handler returned and whose outcome is not saved yet, by job id. */
  readonly #returned = new Map<string, ReturnedRun>();
  #loop: Promise<void> | undefined;
  readonly #running = new Map<string, Execution>();
  readonly #wakeup: Wakeup;
  readonly #slotFreed: Wakeup;
  readonly #env: WorkerEnv<TTx>;
  readonly #cursor = new ClaimCursor();
  #shrunk: (() => void)[] = [];

  /** Creates a worker with `slots` concurrent jobs; call `start()` to run it. */
  constructor(queue: string, slots: number, env: WorkerEnv<TTx>) {
    this.queue = queue;
    this.#slots = slots;
    this.#env = env;
    this.#wakeup = new Wakeup(env.clock);
    // Real time: its only timed wait is the gathering before a claim, a few milliseconds of batching.
    this.#slotFreed = new Wakeup(systemClock);
  }

  /** How many jobs may run at once. */
  get slots(): number {
    return this.#slots;
  }

  /** How many jobs are running now. */
  get running(): number {
    return this.#running.size;
  }

  /** Starts the fetch loop; a second call does nothing. */
  start(): void {
    this.#loop ??= this.#run();
  }

  /** Tells the loop that jobs may be available. */
  wake(): void {
    this.#wakeup.notify();
  }

  /**
   * Holds up to `n` free slots for jobs enqueued in this process that the
   * insert itself claims for this worker, but only while the worker is idle
   * (its last claim found the queue empty and no claim is in flight), so
   * such a job never overtakes jobs waiting in the queue. Returns how many
   * slots it holds; hand them back with {@link QueueWorker.adopt}.
   */
  reserve(n: number): number {
    if (this.#loop === undefined || this.#stopping || this.#hot || this.#claiming) return 0;
    if (this.#env.flow.limited(this.queue)) return 0; // a job started by its insert would skip the limits
    const held = Math.max(0, Math.min(n, this.#free()));
    this.#reserved += held;
    return held;
  }

  /**
   * Starts the jobs the insert claimed for this worker in the `held` slots
   * of {@link QueueWorker.reserve} and frees the slots left over. Jobs that
   * arrive once the worker is stopping are handed back at once.
   */
  adopt(claims: readonly ClaimedJob[], held: number, now: number): void {
    this.#reserved -= held;
    if (claims.length) this.#env.claims.claimed(claims, now);
    for (const claim of claims) this.#startUnlessStopping(claim);
    if (held > claims.length) this.#slotFreed.notify();
  }

  /** Adds `n` slots. */
  add(n: number): void {
    this.#slots += n;
    this.#slotFreed.notify();
  }

  /** Removes `n` slots (keeping at least 0); resolves once the running jobs fit. */
  remove(n: number): Promise<void> {
    this.#slots = Math.max(0, this.#slots - n);
    if (this.#running.size <= this.#slots) return Promise.resolve();
    return new Promise((resolve) => this.#shrunk.push(resolve));
  }

  /**
   * Stops claiming, lets running jobs finish for up to `drainMs` (or until
   * `cut` aborts), then stops the rest (they return to available with the
   * attempt not counted).
   */
  async stop(drainMs: number, cut?: AbortSignal): Promise<void> {
    this.#stopping = true;
    this.#wakeup.notify();
    this.#slotFreed.notify();
    const deadline = new AbortController();
    const ends = cut ? AbortSignal.any([deadline.signal, cut]) : deadline.signal;
    const drained = sleep(this.#env.clock, drainMs, ends);
    // The drain counts from now. A claim in flight may wait on the store for up to storeTimeout (a pool that
    // reconnects with backoff): the loop is waited for within the drain, or the stop wait when that is longer,
    // and a claim that lands later has its jobs handed back at once.
    const waitMs = Math.max(drainMs, stopWaitMs(this.#env.storeTimeoutMs));
    await withinDeadline(this.#loop ?? Promise.resolve(), waitMs, "jobClaim").catch(() => {});
    if (this.#running.size > 0) {
      await Promise.race([Promise.all([...this.#running.values()].map((e) => e.done)), drained]);
    }
    deadline.abort();
    for (const execution of this.#running.values()) execution.stop("interrupted");
    await Promise.all([...this.#running.values()].map((e) => e.done));
  }

  /**
   * Mode "manual": claims what is due (up to the free slots) and runs it to
   * the end, outcomes saved; returns how many jobs ran.
   */
  async runDue(): Promise<number> {
    if (this.#slots === 0) return 0;
    const claimed = await this.#claim(Math.min(this.#slots, this.#env.claimBatch), this.#env.clock.now());
    await Promise.all(claimed.map((claim) => this.#startUnlessStopping(claim).saved));
    return claimed.length;
  }

  /**
   * Starts `claim`, or, once the worker is stopping (the claim landed late:
   * a drain's budget ended while the store was slow), hands it back unrun.
   */
  #startUnlessStopping(claim: ClaimedJob): Execution {
    const execution = this.#start(claim);
    if (this.#stopping) execution.stop("interrupted");
    return execution;
  }

  async #claim(limit: number, now: number): Promise<ClaimedJob[]> {
    const limits = this.#env.flow.limits(this.queue, now, limit, this.#returned.values());
    if (limits) return inClaimOrder(await this.#claimOnce(limit, now, limits, null));
    const after = this.#cursor.next(now);
    const claimed = inClaimOrder(await this.#claimOnce(limit, now, null, after));
    if (after === null || claimed.length === limit) {
      this.#cursor.took(after, claimed, claimed.length === limit, now);
      return claimed;
    }
    // Past the cursor the queue ran short, but jobs may have joined ahead of it: the free slots go to those.
    const front = inClaimOrder(await this.#claimOnce(limit - claimed.length, now, null, null));
    this.#cursor.took(null, front, front.length === limit - claimed.length, now);
    return inClaimOrder(claimed.concat(front));
  }

  /** One claim of at most `limit` jobs under `limits`, after `after` in claim order. */
  async #claimOnce(
    limit: number,
    now: number,
    limits: ClaimLimits | null,
    after: ClaimKey | null,
  ): Promise<ClaimedJob[]> {
    const env = this.#env;
    const call = env.store.jobClaim({
      queue: this.queue,
      kinds: env.handledKinds,
      limit,
      now,
      leaseUntil: now + env.leaseMs,
      workerId: env.workerId,
      heads: env.partitions.heads(this.queue),
      limits,
      after,
    });
    // A claim given up on that lands after all has leased its jobs to this worker: run them rather than
    // leave them to a rescue that would charge an attempt that never ran.
    const claimed = await withinDeadline(call, env.storeTimeoutMs, "jobClaim", (late) => this.adopt(late, 0, now));
    env.claims.claimed(claimed, now);
    if (limits) env.flow.claimed(this.queue, limits, claimed);
    return claimed;
  }

  async #run(): Promise<void> {
    const env = this.#env;
    let failures = 0;
    /** When a claim first left free slots in a queue with a rate limit: jobs due then may wait for a window. */
    let rateWaitSince: number | undefined;
    /** Whether the loop has waited for more slots to free since its last claim. */
    let gathered = false;
    while (!this.#stopping) {
      const free = this.#free();
      if (free <= 0) {
        await this.#slotFreed.wait(Infinity);
        continue;
      }
      if (!gathered && free < this.#gatherTarget() && this.#freeing()) {
        await this.#gather();
        gathered = true;
        continue;
      }
      gathered = false;
      const limit = Math.min(free, env.claimBatch);
      // Poll periods count from the claim's start, so time that passed during it is not waited again.
      const now = env.clock.now();
      let claimed;
      this.#claiming = true;
      try {
        claimed = await this.#claim(limit, now);
        failures = 0;
      } catch (err) {
        failures++;
        const backoff = Math.min(env.pollMs * 5, 100 * 2 ** Math.min(failures, 10));
        env.logger.warn(`Claiming from queue "${this.queue}" failed; retrying in ${backoff} ms`, {
          error: String(err),
        });
        await this.#wakeup.wait(backoff);
        continue;
      } finally {
        this.#claiming = false;
      }
      for (const claim of claimed) this.#start(claim);
      this.#hot = claimed.length === limit;
      rateWaitSince = this.#rateWait(rateWaitSince, claimed, now);
      if (!this.#hot) {
        // Idle: the instance's probe (probe.ts) wakes the worker when its queue has due jobs. Held back by a
        // rate limit, the next chance is when its window opens.
        const window = env.flow.untilNextWindow(this.queue, now) ?? Infinity;
        await this.#wakeup.wait(window - (env.clock.now() - now));
      } else if (this.#free() <= 0) await this.#slotFreed.wait(Infinity);
    }
  }

  /** Free slots worth a claim of their own while jobs are running: half a full claim. */
  #gatherTarget(): number {
    return Math.ceil(Math.min(this.#slots, this.#env.claimBatch) / 2);
  }

  /**
   * Waits up to {@link GATHER_MS} for more running jobs to free their slots,
   * so that the next claim takes several jobs instead of one.
   */
  async #gather(): Promise<void> {
    const until = systemClock.now() + GATHER_MS;
    const target = this.#gatherTarget();
    while (!this.#stopping && this.#free() < target && this.#freeing()) {
      const left = until - systemClock.now();
      if (left <= 0) return;
      await this.#slotFreed.wait(left);
    }
  }

  /** Stops the run of job `id` if this worker is running it (its job was cancelled); returns whether it was. */
  cancel(id: string): boolean {
    const execution = this.#running.get(id);
    execution?.stop("cancelled");
    return execution !== undefined;
  }

  /**
   * Reports how long a rate limit held jobs back, and returns the `since` to
   * carry to the next claim. `since` is when a claim first left free slots
   * in a queue with a rate limit (the queue's or a handled kind's). Once a
   * window has opened after it, jobs already due at `since` that this claim
   * (at `now`) starts waited for that window; a claim that fills its slots
   * waited for nothing.
   */
  #rateWait(since: number | undefined, claimed: readonly ClaimedJob[], now: number): number | undefined {
    const flow = this.#env.flow;
    let carried = since;
    if (since !== undefined && now - since >= (flow.untilNextWindow(this.queue, since) ?? Infinity)) {
      if (claimed.some((c) => c.runAt <= since)) this.#env.claims.rateWaited(this.queue, now - since);
      carried = undefined;
    }
    if (this.#hot || flow.untilNextWindow(this.queue, now) === undefined) return undefined;
    return carried ?? now;
  }

  /** Whether slots will free without a claim: jobs are running, or outcomes owed beyond the slot count are being saved. */
  #freeing(): boolean {
    return this.#running.size > 0 || this.#returned.size > this.#slots;
  }

  /** Slots a claim may fill now: those not running, reserved, or owed to outcomes waiting beyond the slot count. */
  #free(): number {
    return this.#slots - this.#running.size - this.#reserved - Math.max(0, this.#returned.size - this.#slots);
  }

  #start(claim: ClaimedJob): Execution {
    const execution = execute(claim, this.#env);
    this.#running.set(claim.id, execution);
    this.#env.leases.hold(claim.id, claim.fence, () => execution.stop("lost"));
    // The lease stays renewed until the outcome is written, so a slow write does not let the job be rescued.
    const run: ReturnedRun = { id: claim.id, fence: claim.fence };
    let [saved, done] = [false, false];
    execution.saved.finally(() => {
      this.#env.leases.release(claim.id, claim.fence);
      saved = true;
      if (!done) return;
      if (this.#returned.get(claim.id) === run) this.#returned.delete(claim.id);
      this.#slotFreed.notify();
    });
    execution.done.finally(() => {
      done = true;
      if (!saved) this.#returned.set(claim.id, run);
      this.#running.delete(claim.id);
      this.#slotFreed.notify();
      // Under limits a short claim may have been held back by this run's group or queue slot, free now.
      if (this.#hot || this.#env.flow.limited(this.queue)) this.#wakeup.notify();
      if (this.#running.size <= this.#slots) {
        for (const resolve of this.#shrunk.splice(0)) resolve();
      }
    });
    return execution;
  }
}

/** `claimed` sorted in claim order (priority, run time, id): a store may return a batch in any order, and jobs start in this one. */
function inClaimOrder(claimed: ClaimedJob[]): ClaimedJob[] {
  return claimed.sort((a, b) => a.priority - b.priority || a.runAt - b.runAt || (a.id < b.id ? -1 : 1));
}
