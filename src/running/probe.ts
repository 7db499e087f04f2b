/**
 * The probe of a `"work"` instance: one look at all its queues at once
 * (`jobProbe`), which wakes only the workers of queues that hold a due job,
 * instead of every idle worker claiming on its own queue every poll.
 *
 * Idle workers wait for a wake-up and never poll; the probe looks
 * - at once when woken: the store's listener heard of jobs made available
 *   or scheduled elsewhere (or reconnected), or this instance did something
 *   that may have done so;
 * - when the earliest scheduled job of its queues it knows of comes due;
 * - otherwise every `pollInterval`, or, while the store's listener is up,
 *   every {@link SAFETY_POLL_MS} at most as a safety net.
 *
 * @module
 */
import type { ServiceDeps } from "../base/services.ts";
import type { RunStore } from "../store/runs.ts";
import { safetyPollMs } from "../time/safety_poll.ts";
import { Wakeup } from "../time/wakeup.ts";

/** What the probe needs from the rest of errand. */
export interface ProbeEnv extends ServiceDeps<Pick<RunStore, "jobProbe">> {
  /** The interval of a look without a listener. */
  readonly pollMs: number;
  /** The queues this instance works now. */
  queues(): string[];
  /** Wakes this instance's worker of `queue`. */
  wake(queue: string): void;
}

/** The loop that looks at every queue of this instance and wakes the workers of those with due jobs. */
export class Probe {
  readonly #env: ProbeEnv;
  readonly #wakeup: Wakeup;
  #listening = false;
  #stopping = false;
  #loop: Promise<void> | undefined;

  /** Creates the probe; `start()` runs it. */
  constructor(env: ProbeEnv) {
    this.#env = env;
    this.#wakeup = new Wakeup(env.clock);
  }

  /** Starts the loop, which looks at once; a second call does nothing. */
  start(): void {
    this.#stopping = false;
    this.#loop ??= this.#run();
  }

  /** Looks again at once (or once the look in progress ends). */
  wake(): void {
    this.#wakeup.notify();
  }

  /** Whether the store's listener is up: then the probe's own looks are only the safety net. */
  set listening(listening: boolean) {
    this.#listening = listening;
  }

  /** Stops the loop; safe to call twice or before start. */
  async stop(): Promise<void> {
    this.#stopping = true;
    this.#wakeup.notify();
    await this.#loop;
    this.#loop = undefined;
  }

  async #run(): Promise<void> {
    const { store, clock, logger, pollMs } = this.#env;
    let failures = 0;
    while (!this.#stopping) {
      const now = clock.now();
      let waitMs = safetyPollMs(pollMs, this.#listening);
      try {
        const found = await store.jobProbe({ queues: this.#env.queues(), now });
        failures = 0;
        for (const queue of found.due) this.#env.wake(queue);
        // A timer may fire a millisecond early by the wall clock: one more keeps the look from coming too soon.
        if (found.nextAt !== null) waitMs = Math.min(waitMs, found.nextAt + 1 - now);
      } catch (err) {
        failures++;
        // A store that fails is looked at again sooner than the safety net, as a worker's claims retry.
        waitMs = Math.min(waitMs, pollMs * 5, 100 * 2 ** Math.min(failures, 10));
        logger.warn(`Looking for due jobs failed; retrying in ${waitMs} ms`, { error: String(err) });
      }
      if (this.#stopping) return;
      // Counted from the look's start, so time that passed during it is not waited again.
      await this.#wakeup.wait(waitMs - (clock.now() - now));
    }
  }
}
