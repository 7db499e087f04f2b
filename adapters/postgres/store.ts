/**
 * The PostgreSQL store over postgres.js: each operation hands off to the
 * file of its slice (the files mirror `src/store/`), in the slices' order.
 *
 * - Claims take a batch in one `UPDATE ... FROM (SELECT ... FOR UPDATE SKIP
 *   LOCKED LIMIT n)` statement, served by a partial index in claim order.
 * - Claims and lease renewals commit without waiting for the WAL flush
 *   (`synchronous_commit = off` for that statement alone): if the server
 *   crashes before the flush, the claim is undone and the job is simply
 *   available again, which at-least-once allows. Enqueues and outcomes
 *   commit durably.
 * - Batched writes pass one array per column through `unnest`, so a batch of
 *   any size is one statement with a fixed number of parameters.
 * - Wake-ups: inserts of available or scheduled jobs, and outcomes that make
 *   a job due again or end a run of a group, a partition or a shared queue
 *   slot, run `pg_notify` (no payload) on the namespace's channel in the same
 *   statement, so a notification inside the application's transaction is
 *   delivered only if it commits; log appends notify with the log's name
 *   (runs.ts, `APPEND_PAYLOAD_PREFIX`). With `notify: false` (PgBouncer in
 *   transaction mode) instances poll instead.
 *
 * @module
 */
import type { Sql, TransactionSql } from "postgres";
import type { StoreFor } from "../../src/store/mod.ts";
import { acquireLeader, beatWorker, listWorkers, releaseLeader, removeWorker } from "./cluster.ts";
import {
  checkTransaction,
  PostgresConnection,
  type PostgresContext,
  type PostgresStoreSettings,
} from "./connection.ts";
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
import { quoteIdentifier } from "./migrations.ts";
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
import { listSteps, listWaitingEvents, pruneEvents, saveSteps, sendEvent, suspendStep } from "./steps.ts";
import { listenForChanges, watchJobs } from "./watch.ts";
import { probeJobs } from "./probe.ts";

/**
 * A {@link StoreFor} on a postgres.js client; nothing is sent until the
 * first operation. Each operation hands off to the file of its slice, in
 * the slices' order.
 */
export function composePostgresStore(sql: Sql, settings: PostgresStoreSettings): StoreFor<TransactionSql> {
  const ctx = postgresContext(sql, settings);
  return {
    namespace: settings.namespace,
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
    // The transactional operations inside the application's postgres.js transaction.
    inTransaction(tx) {
      checkTransaction(tx, ctx.db.sql);
      return {
        eventSend: (p) => sendEvent(ctx, p, tx),
        jobFinishMany: (p) => finishJobs(ctx, p, tx),
        jobInsertMany: (p) => insertJobs(ctx, p, tx),
        jobRenewLeases: (p) => renewLeases(ctx, p, tx),
        logAppend: (p) => appendRecords(ctx, p, tx),
        stepList: (p) => listSteps(ctx, p, tx),
        stepSave: (p) => saveSteps(ctx, p, tx),
      };
    },
  };
}

/** The context of a store on `sql` with `settings`; nothing is sent. */
function postgresContext(sql: Sql, settings: PostgresStoreSettings): PostgresContext {
  const schema = quoteIdentifier(settings.schema);
  return {
    db: new PostgresConnection(sql),
    settings,
    historyDays: new Set(),
    target: {
      schema,
      namespace: settings.namespace,
      notify: settings.notify,
      // PostgreSQL refuses channel names over 63 bytes; two namespaces cut to the same name only share wake-ups.
      channel: `errand:${settings.schema}:${settings.namespace}`.slice(0, 63),
      tables: {
        jobs: `${schema}.jobs`,
        history: `${schema}.history`,
        allJobs: `${schema}.all_jobs`,
        queues: `${schema}.queues`,
        parents: `${schema}.job_parents`,
        partitions: `${schema}.partitions`,
        rates: `${schema}.rate_windows`,
        pauses: `${schema}.group_pauses`,
        workers: `${schema}.workers`,
        schedules: `${schema}.schedules`,
        leaders: `${schema}.leaders`,
        steps: `${schema}.steps`,
        events: `${schema}.events`,
      },
    },
  };
}
