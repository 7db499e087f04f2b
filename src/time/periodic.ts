import { type Clock, sleep } from "../base/clock.ts";
import type { Logger } from "../base/logger.ts";

/** A background task started by {@link every}. */
export interface Periodic {
  /** Stops the task and waits for a run in progress; safe to call twice. */
  stop(): Promise<void>;
}

/**
 * Runs `task` now (or first after one interval, with `waitFirst`) and then
 * every `intervalMs` (counted from each run's start) on `clock` until stopped.
 * A background loop never throws: a failing run is logged and the next run
 * comes after the interval as usual.
 */
export function every(
  clock: Clock,
  intervalMs: number,
  name: string,
  logger: Logger,
  task: () => Promise<unknown>,
  waitFirst = false,
): Periodic {
  const stopper = new AbortController();
  const loop = (async () => {
    if (waitFirst) await sleep(clock, intervalMs, stopper.signal);
    while (!stopper.signal.aborted) {
      const startedAt = clock.now();
      try {
        await task();
      } catch (err) {
        logger.warn(`${name} failed; retrying in ${intervalMs} ms`, { error: String(err) });
      }
      // The interval counts from the run's start, so time that passed during it is not waited again.
      await sleep(clock, intervalMs - (clock.now() - startedAt), stopper.signal);
    }
  })();
  return {
    async stop() {
      stopper.abort();
      await loop;
    },
  };
}
