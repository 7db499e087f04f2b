/**
 * The seam between errand's core and a database. **Unstable: for adapter
 * authors; it may change in any release before 1.0.** The core holds the
 * rules (states, retries, leases, fencing); a store only knows how to carry
 * out each operation as one atomic statement or transaction in its
 * dialect. Times are milliseconds since the epoch and always come from the
 * core's clock, never from the database. A store is bound to one namespace.
 *
 * The operations come in slices by concern, a file each, and no operation
 * is in two: {@link ClusterStore} (`cluster.ts`), {@link ConsumerStore}
 * (`consumers.ts`), {@link FlowStore} (`flow.ts`), {@link HealthStore} (`health.ts`), {@link InsertStore}
 * (`inserts.ts`), {@link JobsStore} (`jobs.ts`), {@link LogStore} (`logs.ts`),
 * {@link MoveStore} (`moves.ts`), {@link PartitionStore} (`partitions.ts`),
 * {@link RunStore} (`runs.ts`), {@link ScheduleStore} (`schedules.ts`),
 * {@link SchemaStore} (`schema.ts`), {@link StepStore} (`steps.ts`) and
 * {@link WatchStore} (`watch.ts`).
 * Operations are named noun first, listed alphabetically within their slice
 * (case ignored), and take one `XxxParams` each, declared beside their
 * slice. This file only composes them: a service of the core declares the
 * slices, or the operations (`Pick<Store, ...>`), it uses.
 *
 * @module
 */
import type { ClusterStore } from "./cluster.ts";
import type { ConsumerStore } from "./consumers.ts";
import type { FlowStore } from "./flow.ts";
import type { HealthStore } from "./health.ts";
import type { InsertStore } from "./inserts.ts";
import type { JobsStore } from "./jobs.ts";
import type { LogStore } from "./logs.ts";
import type { MoveStore } from "./moves.ts";
import type { PartitionStore } from "./partitions.ts";
import type { RunStore } from "./runs.ts";
import type { ScheduleStore } from "./schedules.ts";
import type { SchemaStore } from "./schema.ts";
import type { StepStore } from "./steps.ts";
import type { WatchStore } from "./watch.ts";

/**
 * The operations that can run inside the application's transaction
 * ({@link Store.inTransaction}), committed with it: an append that rolls
 * back leaves no gap in its log, and renewed leases are held by the
 * application's transaction until it ends (a handler's write there is
 * fenced by it); a step saved or an event sent there counts only if it commits,
 * and a step's reads go through it (on a database with one connection, the
 * transaction holds it).
 */
export type TransactionStore = Pick<
  Store,
  "eventSend" | "jobFinishMany" | "jobInsertMany" | "jobRenewLeases" | "logAppend" | "stepList" | "stepSave"
>;

/** The database operations errand needs, every slice; one implementation per dialect in `adapters/`. */
export interface Store
  extends
    ClusterStore,
    ConsumerStore,
    FlowStore,
    HealthStore,
    InsertStore,
    JobsStore,
    LogStore,
    MoveStore,
    PartitionStore,
    RunStore,
    ScheduleStore,
    SchemaStore,
    StepStore,
    WatchStore {
  /** The namespace this store's operations are confined to. */
  readonly namespace: string;
  /** The operations of {@link TransactionStore} inside the application's transaction `tx`. */
  inTransaction(tx: unknown): TransactionStore;
}

/**
 * A store whose {@link Store.inTransaction} takes the application's
 * transactions of type `TTx`, as `createErrand({ store })` reads it to type
 * every `{ tx }` of the errand.
 */
export interface StoreFor<TTx> extends Store {
  /** The operations of {@link TransactionStore} inside the application's transaction `tx`. */
  inTransaction(tx: TTx): TransactionStore;
}
