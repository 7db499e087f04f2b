/**
 * A time limit on the store calls of errand's own loops (claims, outcomes,
 * lease renewals, maintenance, heartbeats, leadership, recurring jobs).
 *
 * A driver can leave a call unsettled for good: a connection that hangs
 * without closing, or a query the driver never settles after the server
 * refused a connection. Without a limit the loop that made the call would
 * wait forever and its instance would stop working while it looks alive.
 * With one, the call fails with {@link StoreUnavailableError} and the loop
 * retries as it does for any unreachable store.
 *
 * The call itself is not stopped (neither store can cancel it), only no
 * longer awaited. Every background write but a claim is fenced or
 * idempotent, so one that still lands later does no harm. A claim that
 * lands late has leased jobs to this instance: the queue worker limits its
 * claims itself ({@link withinDeadline}) and still runs what a late one took.
 *
 * Time here is the real clock, not the errand's `clock`: the limit is on
 * how long I/O takes, and a fake clock advanced by a test while a call is
 * in flight must not fail that call.
 *
 * @module
 */
import { StoreUnavailableError } from "../base/errors.ts";
import { systemClock } from "../base/clock.ts";

/**
 * Operations not limited here: those in the application's transaction (the
 * application decides how long that runs), `listen`, whose connection stays
 * open by design, and `jobClaim`, which the queue worker limits itself.
 */
const UNLIMITED = new Set<PropertyKey>(["inTransaction", "listen", "jobClaim"]);

/**
 * `store` with every promise-returning operation but those in
 * {@link UNLIMITED} failing with {@link StoreUnavailableError} once it has
 * taken `ms` milliseconds; `timedOut` hears of each such failure.
 */
export function withDeadline<S extends object>(store: S, ms: number, timedOut?: () => void): S {
  return new Proxy(store, {
    get(target, key) {
      const value: unknown = Reflect.get(target, key);
      if (typeof value !== "function") return value;
      if (UNLIMITED.has(key)) return value.bind(target);
      return (...args: unknown[]) => {
        const result: unknown = value.apply(target, args);
        if (!(result instanceof Promise)) return result;
        const limited = withinDeadline(result, ms, String(key));
        if (timedOut) limited.catch((err) => err instanceof StoreUnavailableError && timedOut());
        return limited;
      };
    },
  });
}

/**
 * `call`, or a {@link StoreUnavailableError} once it has taken `ms`
 * milliseconds; `late` then gets its value if it still resolves.
 */
export function withinDeadline<T>(
  call: Promise<T>,
  ms: number,
  operation: string,
  late?: (value: T) => void,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let timedOut = false;
    const timer = systemClock.setTimer(() => {
      timedOut = true;
      reject(
        new StoreUnavailableError(
          `The store did not answer ${operation} within ${ms} ms (option "storeTimeout"); the call is given up on`,
        ),
      );
    }, ms);
    call.then(
      (value) => {
        timer.cancel();
        if (timedOut) late?.(value);
        else resolve(value);
      },
      (err) => {
        timer.cancel();
        reject(err);
      },
    );
  });
}

/**
 * How long a stop waits, at most, for a store call in progress (a background run's, a claim's): shutdown
 * must not wait `storeTimeout` (30 s by default) per step on a pool that reconnects with backoff
 * (postgres.js waits up to 20 s between attempts, even once the server is back). A store that answers
 * takes milliseconds; a write left unawaited is fenced or idempotent, and lands or expires by itself.
 */
export function stopWaitMs(storeTimeoutMs: number): number {
  return Math.min(storeTimeoutMs, STOP_WAIT_MS);
}

const STOP_WAIT_MS = 2_000;
