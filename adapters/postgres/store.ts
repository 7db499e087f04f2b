/**
 * The PostgreSQL store over postgres.js.
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
 * - Wake-ups: inserts of available jobs run `pg_notify` (no payload) on the
 *   namespace's channel in the same statement, so a notification inside the
 *   application's transaction is delivered only if it commits. With
 *   `notify: false` (PgBouncer in transaction mode) workers poll instead.
 *
 * @module
 */
import type { Sql, TransactionSql } from "postgres";
import { SchemaVersionError } from "../../src/base/errors.ts";
import type {
  ChangesListenParams,
  ConsumerCommitParams,
  ConsumerLeaseParams,
  ConsumerOffsetsParams,
  ConsumerReleaseParams,
  ConsumerSeekParams,
  FlowPruneParams,
  GroupHeldParams,
  GroupListParams,
  GroupPauseParams,
  JobActivityParams,
  JobClaimParams,
  JobDeleteManyParams,
  JobFinishParams,
  JobGetParams,
  JobInsertParams,
  JobListParams,
  JobProgressParams,
  JobRenewLeasesParams,
  JobTransitionManyParams,
  JobTransitionParams,
  JobWatchParams,
  LeaderAcquireParams,
  ListenParams,
  LogAppendParams,
  LogEndsParams,
  LogPruneParams,
  LogReadParams,
  PartitionListParams,
  ScheduleAdvanceParams,
  ScheduleGetParams,
  StoreFor,
  TransactionStore,
} from "../../src/store/store.ts";
import type {
  ActivityRow,
  ChangedJob,
  ClaimedJob,
  ConsumerLease,
  ConsumerOffsetRow,
  ExpiredJob,
  FinishedJob,
  GroupHeldRow,
  GroupRow,
  JobChange,
  JobCount,
  JobInsertResult,
  JobRelatives,
  JobRow,
  LogPartitionRow,
  LogRecordRow,
  PartitionRow,
  ResolvedWaiting,
  ScheduleRecord,
} from "../../src/store/records.ts";
import type {
  ConsumerImportParams,
  JobDeleteMovedParams,
  JobExportParams,
  JobImportParams,
  JobImportResult,
  LogImportParams,
  LogSequence,
  MovedJob,
  MoveGetParams,
  MoveRecord,
  MoveSaveParams,
  PartitionImportParams,
  PartitionSequence,
} from "../../src/store/moves.ts";
import { LISTED_STATES, LISTED_STATES_SQL } from "../sql/listed_states.ts";
import type { WorkerInfo } from "../../src/base/types.ts";
import {
  EXPIRED_COLUMNS,
  JOB_COLUMNS,
  JOB_DETAIL_COLUMNS,
  SCHEDULE_COLUMNS,
  scheduleValues,
  toActivityRow,
  toExpiredJob,
  toJobCount,
  toJobRow,
  toPartitionRow,
  toRelatives,
  toResolvedWaiting,
  toScheduleRecord,
  toWorkerInfo,
  workerInfoColumn,
} from "../sql/rows.ts";
import { checkTransaction, PostgresConnection, type Querier, type StoreTarget } from "./connection.ts";
import { deleteJobs, transitionJobs } from "./bulk.ts";
import { claimJobs, finishJobs } from "./claims.ts";
import { countHeld, listGroups, pauseGroup, pruneFlow } from "./flow.ts";
import { claimLimitedJobs } from "./limited_claim.ts";
import { insertJobs } from "./insert.ts";
import { saveProgress, watchJobs } from "./results.ts";
import { appendRecords, pruneRecords, readRecords } from "./logs.ts";
import { commitOffset, leasePartition, listOffsets, logEnds, releasePartition, seekOffsets } from "./consumers.ts";
import {
  deleteMovedJobs,
  exportJobs,
  getMove,
  importConsumers,
  importJobs,
  importLog,
  importPartitions,
  logSequences,
  partitionSequences,
  saveMove,
} from "./moves.ts";
import {
  BOOTSTRAP_SQL,
  CHANGES_CHANNEL_PREFIX,
  POSTGRES_MIGRATIONS,
  POSTGRES_SCHEMA_VERSION,
  quoteIdentifier,
} from "./migrations.ts";

/** Settings of the PostgreSQL store, resolved. */
export interface PostgresStoreSettings {
  readonly namespace: string;
  readonly schema: string;
  readonly migrate: boolean;
  readonly notify: boolean;
}

/** A {@link Store} on a postgres.js client. Create it with `postgresStore()`. */
export class PostgresStore implements StoreFor<TransactionSql> {
  /** The namespace every operation is confined to. */
  readonly namespace: string;
  readonly #db: PostgresConnection;
  readonly #target: StoreTarget;
  readonly #settings: PostgresStoreSettings;
  readonly #schema: string;
  readonly #jobs: string;
  readonly #queues: string;
  readonly #parents: string;
  readonly #workers: string;
  readonly #schedules: string;
  readonly #leaders: string;
  readonly #partitions: string;
  readonly #channel: string;

  /** Wraps `sql`; nothing is sent until the first operation. */
  constructor(sql: Sql, settings: PostgresStoreSettings) {
    this.#db = new PostgresConnection(sql);
    this.#settings = settings;
    this.namespace = settings.namespace;
    this.#schema = quoteIdentifier(settings.schema);
    this.#jobs = `${this.#schema}.jobs`;
    this.#queues = `${this.#schema}.queues`;
    this.#parents = `${this.#schema}.job_parents`;
    this.#workers = `${this.#schema}.workers`;
    this.#schedules = `${this.#schema}.schedules`;
    this.#leaders = `${this.#schema}.leaders`;
    this.#partitions = `${this.#schema}.partitions`;
    // PostgreSQL refuses channel names over 63 bytes; two namespaces cut to the same name only share wake-ups.
    this.#channel = `errand:${settings.schema}:${settings.namespace}`.slice(0, 63);
    this.#target = {
      schema: this.#schema,
      namespace: settings.namespace,
      notify: settings.notify,
      channel: this.#channel,
      tables: {
        jobs: this.#jobs,
        queues: this.#queues,
        parents: this.#parents,
        partitions: this.#partitions,
        rates: `${this.#schema}.rate_windows`,
        pauses: `${this.#schema}.group_pauses`,
      },
    };
  }

  /** Creates or checks the schema (see `postgresMigrationSql`). */
  async ensureSchema(): Promise<void> {
    const version = await this.#schemaVersion(this.#db.sql);
    if (version > POSTGRES_SCHEMA_VERSION) throw newerSchema(version);
    if (version === POSTGRES_SCHEMA_VERSION) return;
    if (!this.#settings.migrate) {
      throw new SchemaVersionError(
        `Schema "${this.#settings.schema}" has errand schema version "${version}" but "${POSTGRES_SCHEMA_VERSION}" is needed; apply postgresMigrationSql({ fromVersion: ${version} }) or drop "migrate: false"`,
      );
    }
    await this.#db.run(() =>
      this.#db.sql.begin(async (tx) => {
        await tx.unsafe("SELECT pg_advisory_xact_lock(hashtext($1))", [`errand:migrate:${this.#settings.schema}`]);
        await tx.unsafe(BOOTSTRAP_SQL.replaceAll("{schema}", this.#schema));
        const current = await this.#schemaVersion(tx);
        if (current > POSTGRES_SCHEMA_VERSION) throw newerSchema(current);
        for (const m of POSTGRES_MIGRATIONS) {
          if (m.version <= current) continue;
          await tx.unsafe(m.sql.replaceAll("{schema}", this.#schema));
          await tx.unsafe(`INSERT INTO ${this.#schema}.migrations (version, name) VALUES ($1, $2)`, [
            m.version,
            m.name,
          ]);
        }
      })
    );
  }

  jobClaim(p: JobClaimParams): Promise<ClaimedJob[]> {
    return p.limits ? claimLimitedJobs(this.#db, this.#target, p) : claimJobs(this.#db, this.#target, p);
  }

  groupPause(p: GroupPauseParams): Promise<void> {
    return pauseGroup(this.#db, this.#target, p);
  }

  groupList(p: GroupListParams): Promise<GroupRow[]> {
    return listGroups(this.#db, this.#target, p);
  }

  groupHeld(p: GroupHeldParams): Promise<GroupHeldRow[]> {
    return countHeld(this.#db, this.#target, p);
  }

  flowPrune(p: FlowPruneParams): Promise<void> {
    return pruneFlow(this.#db, this.#target, p);
  }

  /** The transactional operations inside the application's postgres.js transaction. */
  inTransaction(tx: TransactionSql): TransactionStore {
    checkTransaction(tx, this.#db.sql);
    return {
      jobFinishMany: (p) => finishJobs(this.#db, this.#target, p, tx),
      jobInsertMany: (p) => insertJobs(this.#db, this.#target, p, tx),
      jobRenewLeases: (p) => this.#renew(p, tx),
      logAppend: (p) => appendRecords(this.#db, this.#target, p, tx),
    };
  }

  logAppend(p: LogAppendParams): Promise<number[]> {
    return appendRecords(this.#db, this.#target, p);
  }

  logEnds(p: LogEndsParams): Promise<LogPartitionRow[]> {
    return logEnds(this.#db, this.#target, p);
  }

  consumerCommit(p: ConsumerCommitParams): Promise<boolean> {
    return commitOffset(this.#db, this.#target, p);
  }

  consumerLease(p: ConsumerLeaseParams): Promise<ConsumerLease | null> {
    return leasePartition(this.#db, this.#target, p);
  }

  consumerOffsets(p: ConsumerOffsetsParams): Promise<ConsumerOffsetRow[]> {
    return listOffsets(this.#db, this.#target, p);
  }

  consumerRelease(p: ConsumerReleaseParams): Promise<void> {
    return releasePartition(this.#db, this.#target, p);
  }

  consumerSeek(p: ConsumerSeekParams): Promise<{ partition: number; committed: number }[]> {
    return seekOffsets(this.#db, this.#target, p);
  }

  logRead(p: LogReadParams): Promise<LogRecordRow[]> {
    return readRecords(this.#db, this.#target, p);
  }

  logPrune(p: LogPruneParams): Promise<number> {
    return pruneRecords(this.#db, this.#target, p);
  }

  jobFinishMany(p: JobFinishParams): Promise<FinishedJob[]> {
    return finishJobs(this.#db, this.#target, p);
  }

  consumerImport(p: ConsumerImportParams): Promise<void> {
    return importConsumers(this.#db, this.#target, p);
  }

  jobDeleteMoved(p: JobDeleteMovedParams): Promise<string[]> {
    return deleteMovedJobs(this.#db, this.#target, p);
  }

  jobExport(p: JobExportParams): Promise<MovedJob[]> {
    return exportJobs(this.#db, this.#target, p);
  }

  jobImport(p: JobImportParams): Promise<JobImportResult> {
    return importJobs(this.#db, this.#target, p);
  }

  logImport(p: LogImportParams): Promise<void> {
    return importLog(this.#db, this.#target, p);
  }

  logSequences(): Promise<LogSequence[]> {
    return logSequences(this.#db, this.#target);
  }

  moveGet(p: MoveGetParams): Promise<MoveRecord | null> {
    return getMove(this.#db, this.#target, p);
  }

  moveSave(p: MoveSaveParams): Promise<void> {
    return saveMove(this.#db, this.#target, p);
  }

  partitionImport(p: PartitionImportParams): Promise<void> {
    return importPartitions(this.#db, this.#target, p);
  }

  partitionSequences(): Promise<PartitionSequence[]> {
    return partitionSequences(this.#db, this.#target);
  }

  async jobGet({ id }: JobGetParams): Promise<JobRow | null> {
    const rows = await this.#db.query(
      `SELECT ${JOB_DETAIL_COLUMNS.join(", ")} FROM ${this.#jobs} WHERE id = $1 AND namespace = $2`,
      [
        id,
        this.namespace,
      ],
    );
    return rows.length ? toJobRow(rows[0]) : null;
  }

  async jobInsertMany(p: JobInsertParams): Promise<JobInsertResult> {
    return await insertJobs(this.#db, this.#target, p);
  }

  async jobCounts(): Promise<JobCount[]> {
    const rows = await this.#db.query(
      `SELECT queue, kind, version, state, count(*)::int AS count FROM ${this.#jobs} WHERE namespace = $1
       GROUP BY queue, kind, version, state`,
      [this.namespace],
    );
    return rows.map(toJobCount);
  }

  async jobDelete(p: { id: string }): Promise<boolean> {
    const rows = await this.#db.query(
      `WITH gone AS (DELETE FROM ${this.#jobs} WHERE id = $1 AND namespace = $2 AND state <> 'running' RETURNING id),
         links AS (DELETE FROM ${this.#parents} WHERE namespace = $2 AND job_id IN (SELECT id FROM gone))
       SELECT id FROM gone`,
      [p.id, this.namespace],
    );
    return rows.length > 0;
  }

  jobDeleteMany(p: JobDeleteManyParams): Promise<string[]> {
    return deleteJobs(this.#db, this.#target, p);
  }

  jobTransitionMany(p: JobTransitionManyParams): Promise<ChangedJob[]> {
    return transitionJobs(this.#db, this.#target, p);
  }

  async jobTransition(p: JobTransitionParams): Promise<boolean> {
    const notify = p.state === "available" && this.#settings.notify;
    const [result] = await this.#db.query(
      `WITH changed AS (
         UPDATE ${this.#jobs} SET state = $3, run_at = coalesce($4, run_at), finished_at = $5, fence = fence + 1,
           lease_until = NULL, worker_id = NULL, reason = coalesce($8, reason),
           max_attempts = CASE WHEN $6 AND attempt >= max_attempts THEN attempt + 1 ELSE max_attempts END
         WHERE id = $1 AND namespace = $2 AND state = ANY($7::text[])
         RETURNING 1)
       SELECT count(*) AS n${notify ? ", pg_notify($9, '')" : ""} FROM changed`,
      [
        p.id,
        this.namespace,
        p.state,
        p.runAt ?? null,
        p.finishedAt,
        p.grantAttempt ?? false,
        p.from,
        p.reason ?? null,
        ...(notify ? [this.#channel] : []),
      ],
    );
    return Number(result.n) > 0;
  }

  async queuePause(p: { queue: string; paused: boolean }): Promise<void> {
    await this.#db.query(
      `INSERT INTO ${this.#queues} (namespace, queue, paused) VALUES ($1, $2, $3)
       ON CONFLICT (namespace, queue) DO UPDATE SET paused = excluded.paused`,
      [this.namespace, p.queue, p.paused],
    );
    if (!p.paused && this.#settings.notify) await this.#db.query("SELECT pg_notify($1, '')", [this.#channel]);
  }

  async queuesPaused(): Promise<string[]> {
    const rows = await this.#db.query(`SELECT queue FROM ${this.#queues} WHERE namespace = $1 AND paused`, [
      this.namespace,
    ]);
    return rows.map((r) => String(r.queue));
  }

  async workerBeat(p: { worker: WorkerInfo; expiredBefore: number }): Promise<void> {
    const w = p.worker;
    await this.#db.query(
      `WITH beat AS (
         INSERT INTO ${this.#workers} (namespace, id, started_at, beat_at, info) VALUES ($1, $2, $3, $4, $5::jsonb)
         ON CONFLICT (namespace, id) DO UPDATE SET beat_at = excluded.beat_at, info = excluded.info)
       DELETE FROM ${this.#workers} WHERE namespace = $1 AND beat_at < $6 AND id <> $2`,
      [this.namespace, w.id, w.startedAt, w.beatAt, workerInfoColumn(w), p.expiredBefore],
    );
  }

  async workerList(p: { since: number }): Promise<WorkerInfo[]> {
    const rows = await this.#db.query(
      `SELECT id, started_at, beat_at, info FROM ${this.#workers} WHERE namespace = $1 AND beat_at >= $2
       ORDER BY started_at, id`,
      [this.namespace, p.since],
    );
    return rows.map(toWorkerInfo);
  }

  async workerRemove(p: { id: string }): Promise<void> {
    await this.#db.query(`DELETE FROM ${this.#workers} WHERE namespace = $1 AND id = $2`, [this.namespace, p.id]);
  }

  async partitionTrimHistory(
    p: { topic?: string; partition?: number; keep: number; limit: number },
  ): Promise<number> {
    const rows = await this.#db.query(
      `WITH ranked AS (
         SELECT id, row_number() OVER (PARTITION BY topic, "partition" ORDER BY seq DESC) AS newest
         FROM ${this.#jobs}
         WHERE namespace = $1 AND topic IS NOT NULL AND state IN ('completed', 'failed', 'cancelled')
           AND ($2::text IS NULL OR (topic = $2 AND "partition" = $3))),
       gone AS (
         DELETE FROM ${this.#jobs} WHERE id IN (SELECT id FROM ranked WHERE newest > $4 LIMIT $5) RETURNING id),
       links AS (DELETE FROM ${this.#parents} WHERE namespace = $1 AND job_id IN (SELECT id FROM gone))
       SELECT count(*) AS n FROM gone`,
      [this.namespace, p.topic ?? null, p.partition ?? null, p.keep, p.limit],
    );
    return Number(rows[0].n);
  }

  async partitionsExist(): Promise<boolean> {
    const [row] = await this.#db.query(
      `SELECT EXISTS (SELECT 1 FROM ${this.#partitions} WHERE namespace = $1) AS present`,
      [this.namespace],
    );
    return Boolean(row.present);
  }

  async partitionList(p: PartitionListParams): Promise<PartitionRow[]> {
    const rows = await this.#db.query(
      `SELECT p."partition",
         (SELECT count(*) FROM ${this.#jobs} AS e WHERE e.namespace = p.namespace AND e.topic = p.topic
            AND e."partition" = p."partition" AND e.state IN ('scheduled', 'available', 'running', 'waiting')) AS depth,
         h.id, h.kind, h.version, h.queue, h.state, h.attempt, h.run_at, h.started_at, h.worker_id
       FROM ${this.#partitions} AS p
       LEFT JOIN LATERAL (
         SELECT e.* FROM ${this.#jobs} AS e
         WHERE e.namespace = p.namespace AND e.topic = p.topic AND e."partition" = p."partition"
           AND e.state IN ('scheduled', 'available', 'running', 'waiting')
         ORDER BY e.seq LIMIT 1) AS h ON true
       WHERE p.namespace = $1 AND p.topic = $2 AND ($3::int IS NULL OR p."partition" = $3) ORDER BY p."partition"`,
      [this.namespace, p.topic, p.partition ?? null],
    );
    return rows.map(toPartitionRow);
  }

  async jobActivity(p: JobActivityParams): Promise<ActivityRow> {
    const [events, waits, storageBytes] = await Promise.all([
      this.#db.query(
        `SELECT 'enqueued' AS what, (created_at - $2) / $3::bigint AS bucket, count(*) AS count FROM ${this.#jobs}
           WHERE namespace = $1 AND created_at >= $2 GROUP BY 2
         UNION ALL
         SELECT 'started', (started_at - $2) / $3::bigint, count(*) FROM ${this.#jobs}
           WHERE namespace = $1 AND started_at >= $2 GROUP BY 2
         UNION ALL
         SELECT state, (finished_at - $2) / $3::bigint, count(*) FROM ${this.#jobs}
           WHERE namespace = $1 AND finished_at >= $2 GROUP BY 1, 2`,
        [this.namespace, p.since, p.bucketMs],
      ),
      this.#db.query(
        `SELECT topic IS NOT NULL AS partitioned, count(*) AS count,
           sum(greatest(0, started_at - run_at)) AS total_ms, max(greatest(0, started_at - run_at)) AS max_ms
         FROM ${this.#jobs} WHERE namespace = $1 AND started_at >= $2 GROUP BY 1`,
        [this.namespace, p.since],
      ),
      this.#storageBytes(),
    ]);
    return toActivityRow(events, waits, storageBytes);
  }

  async #storageBytes(): Promise<number | null> {
    const [row] = await this.#db.query(
      `SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) AS bytes FROM pg_class AS c
       JOIN pg_namespace AS n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'r'`,
      [this.#settings.schema],
    );
    return Number(row.bytes);
  }

  async leaderAcquire(p: LeaderAcquireParams): Promise<boolean> {
    const rows = await this.#db.query(
      `INSERT INTO ${this.#leaders} AS l (namespace, name, holder, until) VALUES ($1, $2, $3, $4)
       ON CONFLICT (namespace, name) DO UPDATE SET holder = excluded.holder, until = excluded.until
       WHERE l.holder = excluded.holder OR l.until < $5
       RETURNING holder`,
      [this.namespace, p.name, p.holder, p.until, p.now],
    );
    return rows.length > 0;
  }

  async leaderRelease(p: { name: string; holder: string }): Promise<void> {
    await this.#db.query(`DELETE FROM ${this.#leaders} WHERE namespace = $1 AND name = $2 AND holder = $3`, [
      this.namespace,
      p.name,
      p.holder,
    ]);
  }

  async scheduleAdvance(p: ScheduleAdvanceParams): Promise<boolean> {
    const rows = await this.#db.query(
      `UPDATE ${this.#schedules} SET next_run_at = $1, last_run_at = $2, last_job_id = $3
       WHERE namespace = $4 AND id = $5 AND fingerprint = $6 AND next_run_at = $7 RETURNING id`,
      [p.nextRunAt, p.lastRunAt, p.lastJobId, this.namespace, p.id, p.fingerprint, p.from],
    );
    return rows.length > 0;
  }

  async scheduleDelete(p: { id: string }): Promise<boolean> {
    const rows = await this.#db.query(`DELETE FROM ${this.#schedules} WHERE namespace = $1 AND id = $2 RETURNING id`, [
      this.namespace,
      p.id,
    ]);
    return rows.length > 0;
  }

  async scheduleGet({ id }: ScheduleGetParams): Promise<ScheduleRecord | null> {
    const rows = await this.#db.query(
      `SELECT ${SCHEDULE_COLUMNS.join(", ")} FROM ${this.#schedules} WHERE namespace = $1 AND id = $2`,
      [this.namespace, id],
    );
    return rows.length ? toScheduleRecord(rows[0]) : null;
  }

  async scheduleList(): Promise<ScheduleRecord[]> {
    const rows = await this.#db.query(
      `SELECT ${SCHEDULE_COLUMNS.join(", ")} FROM ${this.#schedules} WHERE namespace = $1 ORDER BY id`,
      [this.namespace],
    );
    return rows.map(toScheduleRecord);
  }

  async scheduleSave(p: { schedule: ScheduleRecord }): Promise<void> {
    const columns = SCHEDULE_COLUMNS.filter((c) => c !== "id" && c !== "created_at");
    await this.#db.query(
      `INSERT INTO ${this.#schedules} (namespace, ${SCHEDULE_COLUMNS.join(", ")})
       VALUES ($1, ${SCHEDULE_COLUMNS.map((_, i) => `$${i + 2}`).join(", ")})
       ON CONFLICT (namespace, id) DO UPDATE SET ${columns.map((c) => `${c} = excluded.${c}`).join(", ")}`,
      [this.namespace, ...scheduleValues(p.schedule)],
    );
  }

  async jobList(p: JobListParams): Promise<JobRow[]> {
    const where = ["namespace = $1"];
    const args: unknown[] = [this.namespace];
    for (
      const [column, value] of [
        ["state", p.state],
        ["queue", p.queue],
        ["kind", p.kind],
        ["topic", p.topic],
        ["id <", p.before],
      ] as const
    ) {
      if (value === undefined) continue;
      args.push(value);
      where.push(`${column.includes("<") ? column : `${column} =`} $${args.length}`);
    }
    // A listed state's jobs come from the listing index, in generic plans too.
    if (p.state !== undefined && LISTED_STATES.includes(p.state)) where.push(LISTED_STATES_SQL);
    args.push(p.limit);
    const rows = await this.#db.query(
      `SELECT ${JOB_COLUMNS.join(", ")} FROM ${this.#jobs} WHERE ${
        where.join(" AND ")
      } ORDER BY id DESC LIMIT $${args.length}`,
      args,
    );
    return rows.map(toJobRow);
  }

  async jobListExpired(p: { now: number; limit: number }): Promise<ExpiredJob[]> {
    const rows = await this.#db.query(
      `SELECT ${EXPIRED_COLUMNS.join(", ")} FROM ${this.#jobs}
       WHERE namespace = $1 AND state = 'running' AND lease_until < $2 ORDER BY lease_until LIMIT $3`,
      [this.namespace, p.now, p.limit],
    );
    return rows.map(toExpiredJob);
  }

  async jobPromoteDue(p: { now: number; limit: number }): Promise<string[]> {
    const rows = await this.#db.query(
      `WITH promoted AS (
         UPDATE ${this.#jobs} SET state = 'available'
         WHERE id IN (SELECT id FROM ${this.#jobs} WHERE namespace = $1 AND state = 'scheduled' AND run_at <= $2
                      ORDER BY run_at LIMIT $3 FOR UPDATE SKIP LOCKED)
         RETURNING queue)
       SELECT DISTINCT queue FROM promoted`,
      [this.namespace, p.now, p.limit],
    );
    if (rows.length && this.#settings.notify) await this.#db.query("SELECT pg_notify($1, '')", [this.#channel]);
    return rows.map((r) => String(r.queue));
  }

  async jobPrune(p: { state: "completed" | "failed" | "cancelled"; before: number; limit: number }): Promise<number> {
    const rows = await this.#db.query(
      `WITH gone AS (
         DELETE FROM ${this.#jobs} WHERE id IN (
           SELECT id FROM ${this.#jobs} WHERE namespace = $1 AND state = $2 AND finished_at < $3 LIMIT $4
           FOR UPDATE SKIP LOCKED)
         RETURNING id),
         links AS (DELETE FROM ${this.#parents} WHERE namespace = $1 AND job_id IN (SELECT id FROM gone))
       SELECT count(*) AS n FROM gone`,
      [this.namespace, p.state, p.before, p.limit],
    );
    return Number(rows[0].n);
  }

  async jobRelatives(p: { id: string; limit: number }): Promise<JobRelatives> {
    const rows = await this.#db.query(
      `(SELECT 'parent' AS side, parent_id AS id FROM ${this.#parents} WHERE namespace = $1 AND job_id = $2 ORDER BY parent_id)
       UNION ALL
       (SELECT 'child', job_id FROM ${this.#parents} WHERE namespace = $1 AND parent_id = $2 ORDER BY job_id LIMIT $3)`,
      [this.namespace, p.id, p.limit],
    );
    return toRelatives(rows);
  }

  async jobResolveWaiting(p: { parents?: readonly string[]; now: number; limit: number }): Promise<ResolvedWaiting> {
    const rows = await this.#db.query(
      `WITH candidates AS (
         SELECT j.id, j.run_at FROM ${this.#jobs} AS j
         WHERE j.namespace = $1 AND j.state = 'waiting'
           AND ($2::text[] IS NULL OR j.id IN (
             SELECT job_id FROM ${this.#parents} WHERE namespace = $1 AND parent_id = ANY($2::text[])))
         -- Not SKIP LOCKED: a resolver that skipped a child another resolver holds could leave it waiting
         -- (each judging it on a snapshot where the other's parent had not completed yet).
         ORDER BY j.id LIMIT $4 FOR UPDATE),
       verdicts AS (
         SELECT c.id, c.run_at,
           (SELECT 'Parent job "' || l.parent_id || '" ' || coalesce(pj.state, 'no longer exists')
            FROM ${this.#parents} AS l LEFT JOIN ${this.#jobs} AS pj ON pj.id = l.parent_id AND pj.namespace = l.namespace
            WHERE l.namespace = $1 AND l.job_id = c.id AND (pj.id IS NULL OR pj.state IN ('failed', 'cancelled'))
            ORDER BY l.parent_id LIMIT 1) AS doomed_by,
           NOT EXISTS (
             SELECT 1 FROM ${this.#parents} AS l JOIN ${this.#jobs} AS pj ON pj.id = l.parent_id AND pj.namespace = l.namespace
             WHERE l.namespace = $1 AND l.job_id = c.id AND pj.state <> 'completed') AS ready
         FROM candidates AS c),
       changed AS (
         UPDATE ${this.#jobs} AS j SET
           state = CASE WHEN v.doomed_by IS NOT NULL THEN 'cancelled' WHEN v.run_at > $3 THEN 'scheduled' ELSE 'available' END,
           finished_at = CASE WHEN v.doomed_by IS NOT NULL THEN $3::bigint END,
           reason = v.doomed_by
         FROM verdicts AS v
         WHERE j.id = v.id AND (v.doomed_by IS NOT NULL OR v.ready)
         RETURNING j.id, j.state, j.queue)
       SELECT id, state, queue FROM changed`,
      [this.namespace, p.parents ?? null, p.now, p.limit],
    );
    const resolved = toResolvedWaiting(rows);
    if (resolved.queues.length && this.#settings.notify) {
      await this.#db.query("SELECT pg_notify($1, '')", [this.#channel]);
    }
    return resolved;
  }

  jobRenewLeases(p: JobRenewLeasesParams): Promise<string[]> {
    return this.#renew(p);
  }

  async #renew(p: JobRenewLeasesParams, tx?: TransactionSql): Promise<string[]> {
    if (p.leases.length === 0) return [];
    // Alone, the renewal's commit need not wait for the flush; in the application's transaction it must not
    // change how that commits.
    const unsynced = tx ? "" : ", (SELECT set_config('synchronous_commit', 'off', true)) AS async_commit";
    const rows = await this.#db.query(
      `UPDATE ${this.#jobs} AS j SET lease_until = $1
       FROM unnest($2::text[], $3::int[]) AS l(id, fence)${unsynced}
       WHERE j.id = l.id AND j.namespace = $4 AND j.state = 'running' AND j.fence = l.fence
       RETURNING j.id`,
      [p.leaseUntil, p.leases.map((l) => l.id), p.leases.map((l) => l.fence), this.namespace],
      tx,
    );
    return rows.map((r) => String(r.id));
  }

  jobProgress(p: JobProgressParams): Promise<boolean> {
    return saveProgress(this.#db, this.#target, p);
  }

  jobWatch(p: JobWatchParams): Promise<JobChange[]> {
    return watchJobs(this.#db, this.#target, p);
  }

  /** LISTENs on the schema's changes channel; null with `notify: false`. */
  async changesListen({ onChange }: ChangesListenParams): Promise<(() => Promise<void>) | null> {
    if (!this.#settings.notify) return null;
    const channel = `${CHANGES_CHANNEL_PREFIX}${this.#settings.schema}`.slice(0, 63);
    const request = await this.#db.run(() => this.#db.sql.listen(channel, () => onChange(), onChange));
    return () => request.unlisten();
  }

  /** LISTENs on the namespace's channel (postgres.js re-listens after reconnecting); null with `notify: false`. */
  async listen({ onWake }: ListenParams): Promise<(() => Promise<void>) | null> {
    if (!this.#settings.notify) return null;
    const request = await this.#db.run(() => this.#db.sql.listen(this.#channel, () => onWake(), onWake));
    return () => request.unlisten();
  }

  async #schemaVersion(q: Querier): Promise<number> {
    const rows = await this.#db.run(() =>
      q.unsafe("SELECT to_regclass($1) IS NOT NULL AS present", [`${this.#schema}.migrations`])
    );
    if (!rows[0].present) return 0;
    const v = await this.#db.run(() =>
      q.unsafe(`SELECT coalesce(max(version), 0) AS v FROM ${this.#schema}.migrations`)
    );
    return Number(v[0].v);
  }
}

function newerSchema(version: number): SchemaVersionError {
  return new SchemaVersionError(
    `The database has errand schema version "${version}", newer than "${POSTGRES_SCHEMA_VERSION}" which this errand supports; upgrade errand`,
  );
}
