/**
 * Job ids: ULIDs (time-ordered, monotonic within one instance), with their
 * random part drawn from a pool of random bytes filled a few kilobytes at a
 * time. The `ulid` package's own source asks the runtime for one random byte
 * per character, sixteen native calls per id; those cost more than the rest
 * of an enqueue's JavaScript.
 *
 * @module
 */
import { monotonicFactory } from "ulid";

/** How many random bytes one refill draws: 256 ids' worth. */
const POOL_BYTES = 4096;

/** A source of uniformly random numbers in [0, 1) for `ulid`, each from one byte of a cryptographic pool. */
function pooledRandom(): () => number {
  let pool = new Uint8Array(0);
  let next = 0;
  return () => {
    if (next === pool.length) {
      pool = crypto.getRandomValues(new Uint8Array(POOL_BYTES));
      next = 0;
    }
    return pool[next++] / 256;
  };
}

/** A new id generator: `newId(now)` is a ULID for the instant `now` (ms), greater than every id it made before. */
export function idFactory(): (now: number) => string {
  const next = monotonicFactory(pooledRandom());
  // `ulid` starts its monotonic state at time 0 with no random part, so a first id at the epoch itself
  // (a fake clock at 0) would fail; one millisecond later orders the same.
  return (now) => next(Math.max(now, 1));
}
