/**
 * What the insert path needs from the client that owns it, declared here so
 * that enqueue/ stands below the client and the workers: the client's bag of
 * dependencies (`ClientDeps`) is one of these.
 *
 * @module
 */
import type { ServiceDeps } from "../base/services.ts";
import type { JobDefinition } from "../jobs/job.ts";
import type { Telemetry } from "../observability/telemetry.ts";
import type { Tracing } from "../observability/tracing.ts";
import type { StoreFor } from "../store/store.ts";
import type { ChildReleases } from "./continuations.ts";
import type { LocalWorker } from "./local_start.ts";

/** The kinds this instance knows, as the insert path reads them. */
export interface InsertKinds {
  /** The definition of kind key `key`; throws when there is none. */
  definition(key: string): JobDefinition<unknown, unknown>;
  /** Whether this instance runs kind `name` at `version`. */
  handles(name: string, version: number): boolean;
}

/** This instance's queue workers, as the insert path reaches them. */
export interface InsertWorkers {
  /** Whether any job went to a topic's partition, which the workers then claim by partition. */
  partitioned: boolean;
  /** The worker of `queue`, if this instance runs one. */
  get(queue: string): LocalWorker | undefined;
  /** Wakes the worker of `queue`, if any. */
  wake(queue: string): void;
}

/** What the insert path works with. */
export interface InsertDeps<TTx> extends ServiceDeps<StoreFor<TTx>> {
  /** The options the insert path reads: the lease of a job started at insert, the payload limit, the topics. */
  readonly options: {
    readonly leaseMs: number;
    readonly maxPayloadBytes: number;
    readonly topics: ReadonlyMap<string, number>;
  };
  readonly kinds: InsertKinds;
  readonly workers: InsertWorkers;
  readonly telemetry: Pick<Telemetry, "enqueued">;
  readonly tracing: Pick<Tracing, "loaded" | "carrier">;
  /** This instance's id, the claimant of the jobs started at insert. */
  readonly workerId: string;
  /** Releases the continuations of finished parents. */
  readonly releases: Pick<ChildReleases, "release">;
  /** Makes job ids. */
  readonly newId: (now: number) => string;
  /** Resolves once the store's schema is ready and tracing was looked for. */
  ready(): Promise<void>;
}
