/**
 * The libSQL / SQLite store over @libsql/client.
 *
 * Limitations, honestly:
 * - SQLite has one writer at a time. Claims are single `UPDATE ... RETURNING`
 *   statements; multi-row writes are one batch (one transaction).
 * - There is no push notification between processes: workers in this process
 *   are woken directly by the core, other processes find new jobs by polling.
 * - Busy handling does not rely on the client's `timeout` (which defaults to 0
 *   and applies only to connections the client opens): every write sets a
 *   short native busy timeout on its connection first, and a write that still
 *   meets `SQLITE_BUSY` is retried for up to `busyTimeout`. A native wait
 *   blocks the event loop for at most a second per try: a write transaction
 *   the application holds open in the same process therefore stalls this
 *   process's event loop for up to a second before errand's write retries,
 *   unless it runs through {@link LibsqlStore.transaction}, in turn with
 *   errand's writes.
 * - errand's operations on the client run one at a time, so the client's pool
 *   keeps reusing one connection.
 * - Every write runs in its own transaction that takes the write lock first,
 *   never as a bare autocommit statement (see connection.ts).
 * - Claims and lease renewals commit without syncing the WAL even with
 *   `synchronous: "full"` (as PostgreSQL claims commit without waiting for
 *   the flush): power loss can undo such a commit, and the job is simply
 *   available again, which at-least-once allows. The next synced commit
 *   syncs it too (the WAL is written in order), so an outcome never
 *   survives without its claim.
 *
 * @module
 */
import type { Transaction as LibsqlTransaction } from "@libsql/client";
import type { Client, Transaction } from "./driver.ts";
import type { StoreFor } from "../../src/store/mod.ts";
import { acquireLeader, beatWorker, listWorkers, releaseLeader, removeWorker } from "./cluster.ts";
import { checkTransaction, LibsqlConnection, type LibsqlContext, type LibsqlStoreSettings } from "./connection.ts";
import { commitOffset, leasePartition, listOffsets, releasePartition, seekOffsets } from "./consumers.ts";
import { countHeld, listGroups, listPausedQueues, pauseGroup, pauseQueue, pruneFlow } from "./flow.ts";
import { readHealth } from "./health.ts";
import { insertJobs, promoteDueJobs, resolveWaitingJobs } from "./inserts.ts";
import {
  countJobs,
  deleteJob,
  deleteJobs,
  getJob,
  listJobs,
  listRelatives,
  pruneJobs,
  readActivity,
  transitionJob,
  transitionJobs,
} from "./jobs.ts";
import { appendRecords, pruneRecords, readLogEnds, readRecords } from "./logs.ts";
import {
  deleteMovedJobs,
  exportEvents,
  exportJobs,
  getMove,
  importConsumers,
  importEvents,
  importJobs,
  importLog,
  importPartitions,
  readEventLastSeq,
  readLogSequences,
  readPartitionSequences,
  saveMove,
} from "./moves.ts";
import { listPartitions, partitionsExist, trimPartitionHistory } from "./partitions.ts";
import { claimJobs, finishJobs, listenForWakes, listExpiredJobs, renewLeases, saveProgress } from "./runs.ts";
import { advanceSchedule, deleteSchedule, getSchedule, listSchedules, saveSchedule } from "./schedules.ts";
import { ensureSchema } from "./schema.ts";
import type { WriteProtocol } from "./write_protocol.ts";
import { listSteps, listWaitingEvents, pruneEvents, saveSteps, sendEvent, suspendStep } from "./steps.ts";
import { listenForChanges, watchJobs } from "./watch.ts";
import { probeJobs } from "./probe.ts";

/** The libSQL store: errand's {@link StoreFor} on a libSQL client, and write transactions for the application. */
export interface LibsqlStore extends StoreFor<LibsqlTransaction> {
  /**
   * Runs `fn` in a write transaction on the store's database, in turn with
   * errand's own writes from this process: commits when `fn` returns, rolls
   * back when it throws (its error reaches you unchanged). Use it for a
   * transaction that errand joins as `{ tx }` (a workflow step, an enqueue,
   * a completion): SQLite has one writer and its busy wait blocks the event
   * loop, so several runs of one process each holding
   * `client.transaction("write")` stall each other and errand's writes for
   * up to a second per wait. Keep it short: errand's writes in this process
   * wait for it. An errand call inside it must take `{ tx }`; one that does
   * not waits for the transaction and fails after `busyTimeout`.
   *
   * On a libSQL server (an `http:`, `ws:` or `libsql:` client) `fn` must
   * finish within 5 s: the server takes a write transaction away once it
   * has been open that long while another writer waits (and ends a stream
   * idle for 10 s), rolling it back; `transaction()` then rejects with a
   * `StoreUnavailableError` that says so.
   *
   * @example A workflow step in the application's transaction
   * ```ts
   * import { createClient } from "@libsql/client";
   * import { createErrand, defineJobs, job } from "@errand/errand";
   * import { libsqlStore } from "@errand/errand/libsql";
   *
   * const client = createClient({ url: "file:app.db" });
   * const store = libsqlStore(client);
   * const errand = createErrand({
   *   jobs: defineJobs({ settle: job<{ orderId: string }>() }),
   *   store,
   *   mode: "work",
   *   handlers: {
   *     settle: async ({ orderId }, job) => {
   *       await store.transaction((tx) =>
   *         job.step("book", () => tx.execute({ sql: "insert into ledger (order_id) values (?)", args: [orderId] }), { tx })
   *       );
   *     },
   *   },
   * });
   * ```
   */
  transaction<T>(fn: (tx: LibsqlTransaction) => Promise<T>): Promise<T>;
}

/**
 * A store of errand's SQLite dialect whose application transactions are
 * `TTx`, with `transaction(fn)` to run one in turn with errand's writes
 * (see {@link LibsqlStore.transaction}).
 */
export type SqliteDialectStore<TTx> = StoreFor<TTx> & {
  /** Runs `fn` in a write transaction, in turn with errand's writes from this process. */
  transaction<T>(fn: (tx: TTx) => Promise<T>): Promise<T>;
};

/**
 * A store of errand's SQLite dialect on `client` (a libSQL client, or a
 * synchronous driver's shim), whose transactions are `TTx` and begin and
 * end by `writes`; nothing is read
 * or written until the first operation. Each operation hands off to the
 * file of its slice, in the slices' order.
 */
export function composeLibsqlStore<TTx extends Transaction>(
  client: Client,
  settings: LibsqlStoreSettings,
  writes: WriteProtocol,
): SqliteDialectStore<TTx> {
  const db = new LibsqlConnection(client, settings, writes);
  const ctx: LibsqlContext = { db, namespace: settings.namespace, settings };
  return {
    namespace: settings.namespace,
    // The transaction handed to `fn` is one of `client`'s, so a TTx.
    transaction: (fn) => ctx.db.applicationTransaction(fn as (tx: Transaction) => Promise<never>),
    // cluster.ts
    leaderAcquire: (p) => acquireLeader(ctx, p),
    leaderRelease: (p) => releaseLeader(ctx, p),
    workerBeat: (p) => beatWorker(ctx, p),
    workerList: (p) => listWorkers(ctx, p),
    workerRemove: (p) => removeWorker(ctx, p),
    // consumers.ts
    consumerCommit: (p) => commitOffset(ctx, p),
    consumerLease: (p) => leasePartition(ctx, p),
    consumerOffsets: (p) => listOffsets(ctx, p),
    consumerRelease: (p) => releasePartition(ctx, p),
    consumerSeek: (p) => seekOffsets(ctx, p),
    // flow.ts
    flowPrune: (p) => pruneFlow(ctx, p),
    groupHeld: (p) => countHeld(ctx, p),
    groupList: (p) => listGroups(ctx, p),
    groupPause: (p) => pauseGroup(ctx, p),
    queuePause: (p) => pauseQueue(ctx, p),
    queuesPaused: () => listPausedQueues(ctx),
    // health.ts
    healthRead: () => readHealth(ctx),
    // inserts.ts
    jobInsertMany: (p) => insertJobs(ctx, p),
    jobPromoteDue: (p) => promoteDueJobs(ctx, p),
    jobResolveWaiting: (p) => resolveWaitingJobs(ctx, p),
    // jobs.ts
    jobActivity: (p) => readActivity(ctx, p),
    jobCounts: (p) => countJobs(ctx, p),
    jobDelete: (p) => deleteJob(ctx, p),
    jobDeleteMany: (p) => deleteJobs(ctx, p),
    jobGet: (p) => getJob(ctx, p),
    jobList: (p) => listJobs(ctx, p),
    jobPrune: (p) => pruneJobs(ctx, p),
    jobRelatives: (p) => listRelatives(ctx, p),
    jobTransition: (p) => transitionJob(ctx, p),
    jobTransitionMany: (p) => transitionJobs(ctx, p),
    // logs.ts
    logAppend: (p) => appendRecords(ctx, p),
    logEnds: (p) => readLogEnds(ctx, p),
    logPrune: (p) => pruneRecords(ctx, p),
    logRead: (p) => readRecords(ctx, p),
    // moves.ts
    consumerImport: (p) => importConsumers(ctx, p),
    eventExport: (p) => exportEvents(ctx, p),
    eventImport: (p) => importEvents(ctx, p),
    eventLastSeq: () => readEventLastSeq(ctx),
    jobDeleteMoved: (p) => deleteMovedJobs(ctx, p),
    jobExport: (p) => exportJobs(ctx, p),
    jobImport: (p) => importJobs(ctx, p),
    logImport: (p) => importLog(ctx, p),
    logSequences: () => readLogSequences(ctx),
    moveGet: (p) => getMove(ctx, p),
    moveSave: (p) => saveMove(ctx, p),
    partitionImport: (p) => importPartitions(ctx, p),
    partitionSequences: () => readPartitionSequences(ctx),
    // partitions.ts
    partitionList: (p) => listPartitions(ctx, p),
    partitionsExist: () => partitionsExist(ctx),
    partitionTrimHistory: (p) => trimPartitionHistory(ctx, p),
    // runs.ts
    jobClaim: (p) => claimJobs(ctx, p),
    jobFinishMany: (p) => finishJobs(ctx, p),
    jobListExpired: (p) => listExpiredJobs(ctx, p),
    jobProbe: (p) => probeJobs(ctx, p),
    jobProgress: (p) => saveProgress(ctx, p),
    jobRenewLeases: (p) => renewLeases(ctx, p),
    listen: (p) => listenForWakes(ctx, p),
    // schedules.ts
    scheduleAdvance: (p) => advanceSchedule(ctx, p),
    scheduleDelete: (p) => deleteSchedule(ctx, p),
    scheduleGet: (p) => getSchedule(ctx, p),
    scheduleList: () => listSchedules(ctx),
    scheduleSave: (p) => saveSchedule(ctx, p),
    // schema.ts
    ensureSchema: () => ensureSchema(ctx),
    // steps.ts
    eventListWaiting: (p) => listWaitingEvents(ctx, p),
    eventPrune: (p) => pruneEvents(ctx, p),
    eventSend: (p) => sendEvent(ctx, p),
    stepList: (p) => listSteps(ctx, p),
    stepSave: (p) => saveSteps(ctx, p),
    stepSuspend: (p) => suspendStep(ctx, p),
    // watch.ts
    changesListen: (p) => listenForChanges(ctx, p),
    jobWatch: (p) => watchJobs(ctx, p),
    // The transactional operations inside the application's libSQL `Transaction`.
    inTransaction(tx) {
      checkTransaction(tx);
      const own = <P, R>(op: (p: P, inTx: Transaction) => Promise<R>) => async (p: P): Promise<R> =>
        await op(p, await ctx.db.joinTransaction(tx as Transaction));
      return {
        eventSend: own((p, inTx) => sendEvent(ctx, p, inTx)),
        jobFinishMany: own((p, inTx) => finishJobs(ctx, p, inTx)),
        jobInsertMany: own((p, inTx) => insertJobs(ctx, p, inTx)),
        jobRenewLeases: own((p, inTx) => renewLeases(ctx, p, inTx)),
        logAppend: own((p, inTx) => appendRecords(ctx, p, inTx)),
        stepList: own((p, inTx) => listSteps(ctx, p, inTx)),
        stepSave: own((p, inTx) => saveSteps(ctx, p, inTx)),
      };
    },
  };
}
