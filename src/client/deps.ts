/**
 * The one bag of dependencies the client's owners share (the insert path,
 * the worker pool, the call families of `calls/`), made once by
 * `createErrand`; each owner declares, and sees, only the part it uses.
 *
 * @module
 */
import type { KindRegistry } from "./kinds.ts";
import type { ErrandLimits } from "../calls/limits.ts";
import type { ResolvedOptions } from "./options.ts";
import type { Telemetry } from "../observability/telemetry.ts";
import type { Tracing } from "../observability/tracing.ts";
import type { Workers } from "../running/workers.ts";
import type { StoreFor } from "../store/store.ts";
import type { ServiceDeps } from "../base/services.ts";
import type { Watchers } from "../results/watchers.ts";
import type { ChildReleases } from "../enqueue/continuations.ts";

/** What the insert path, the worker pool and the call families work with. */
export interface ClientDeps<TTx> extends ServiceDeps<StoreFor<TTx>> {
  /** The checked options, with the clock and the logger. */
  readonly options: ResolvedOptions;
  readonly kinds: KindRegistry;
  /** The queues' and kinds' limits this instance is configured with. */
  readonly limits: ErrandLimits;
  /** This instance's queue workers. */
  readonly workers: Workers<TTx>;
  readonly telemetry: Telemetry;
  readonly tracing: Tracing;
  /** This instance's id (heartbeat, leadership, claims). */
  readonly workerId: string;
  /** Those waiting for jobs in this instance (`result()`, `watch()`), told of changes made here. */
  readonly watchers: Watchers;
  /** Releases the continuations of finished parents, one resolve at a time. */
  readonly releases: ChildReleases;
  /** Makes job ids. */
  readonly newId: (now: number) => string;
  /** Resolves once the store's schema is ready and tracing was looked for. */
  ready(): Promise<void>;
}
