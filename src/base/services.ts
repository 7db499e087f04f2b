/**
 * The one bag every long-lived service of errand is handed (workers, the
 * completer, the lease keeper, heartbeat, leadership, maintenance,
 * recurring jobs, the client's owners): the slice of the store it uses, the
 * clock every time comes from, and the logger.
 *
 * @module
 */
import type { Logger } from "./logger.ts";
import type { Clock } from "./clock.ts";

/** A service's dependencies: `S` is the store slice it uses. */
export interface ServiceDeps<S> {
  /** The store slice the service uses. */
  readonly store: S;
  /** The source of every time the service writes or compares. */
  readonly clock: Clock;
  /** Where the service reports what it does. */
  readonly logger: Logger;
}
