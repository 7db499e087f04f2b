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
 *   process's event loop for up to a second before errand's write retries.
 * - errand's operations on the client run one at a time, so the client's pool
 *   keeps reusing one connection.
 * - Every write runs in its own transaction that takes the write lock first,
 *   never as a bare autocommit statement (see `#write` and `#batchWrite`).
 * - Claims and lease renewals commit without syncing the WAL even with
 *   `synchronous: "full"` (as PostgreSQL claims commit without waiting for
 *   the flush): power loss can undo such a commit, and the job is simply
 *   available again, which at-least-once allows. The next synced commit
 *   syncs it too (the WAL is written in order), so an outcome never
 *   survives without its claim.
 *
 * @module
 */
import type { Client, Transaction } from "@libsql/client";
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
import { checkTransaction, LibsqlConnection } from "./connection.ts";
import { deleteJobs, deleteParentLinks, transitionJobs } from "./bulk.ts";
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
import { LIBSQL_MIGRATIONS, LIBSQL_SCHEMA_VERSION, MIGRATIONS_TABLE_SQL } from "./migrations.ts";

/** Settings of the libSQL store, resolved. */
export interface LibsqlStoreSettings {
  readonly namespace: string;
  readonly migrate: boolean;
  readonly busyTimeoutMs: number;
  readonly synchronous: "full" | "normal";
}

/** A {@link Store} on a libSQL client. Create it with `libsqlStore()`. */
export class LibsqlStore implements StoreFor<Transaction> {
  /** The namespace every operation is confined to. */
  readonly namespace: string;
  readonly #db: LibsqlConnection;
  readonly #settings: LibsqlStoreSettings;

  /** Wraps `client`; nothing is read or written until the first operation. */
  constructor(client: Client, settings: LibsqlStoreSettings) {
    this.#db = new LibsqlConnection(client, settings);
    this.#settings = settings;
    this.namespace = settings.namespace;
  }

  /** Creates or checks the schema (see `libsqlMigrationSql`), then reads the database's id. */
  async ensureSchema(): Promise<void> {
    await this.#migrate();
    await this.#db.databaseId();
  }

  async #migrate(): Promise<void> {
    const version = await this.#schemaVersion();
    if (version > LIBSQL_SCHEMA_VERSION) {
      throw new SchemaVersionError(
        `The database has errand schema version "${version}", newer than "${LIBSQL_SCHEMA_VERSION}" which this errand supports; upgrade errand`,
      );
    }
    if (version === LIBSQL_SCHEMA_VERSION) return;
    if (!this.#settings.migrate) {
      throw new SchemaVersionError(
        `The database has errand schema version "${version}" but "${LIBSQL_SCHEMA_VERSION}" is needed; apply libsqlMigrationSql(${version}) or drop "migrate: false"`,
      );
    }
    // WAL lets readers go on while one process writes; it is a property of the file.
    await this.#db.run(() => this.#db.client.execute("PRAGMA journal_mode = WAL").catch(() => undefined));
    const migrating = this.#db.run(() =>
      this.#db.transaction(async (tx) => {
        const current = Number(
          (await tx.execute("SELECT coalesce(max(version), 0) AS v FROM errand_migrations")).rows[0].v,
        );
        for (const m of LIBSQL_MIGRATIONS) {
          if (m.version <= current) continue;
          for (const statement of m.statements) await tx.execute(statement);
          await tx.execute({
            sql: "INSERT INTO errand_migrations (version, name, applied_at) VALUES (?, ?, ?)",
            args: [m.version, m.name, Date.now()],
          });
        }
      }, `${MIGRATIONS_TABLE_SQL}; DELETE FROM errand_migrations WHERE 0`)
    );
    try {
      await migrating;
    } catch (err) {
      // Processes starting at once on a new file: one migrates, and another may keep failing to take the
      // write lock meanwhile. If the schema is up to date now, that one has nothing left to do.
      if ((await this.#schemaVersion().catch(() => -1)) !== LIBSQL_SCHEMA_VERSION) throw err;
    }
  }

  jobClaim(p: JobClaimParams): Promise<ClaimedJob[]> {
    return p.limits ? claimLimitedJobs(this.#db, this.namespace, p) : claimJobs(this.#db, this.namespace, p);
  }

  groupPause(p: GroupPauseParams): Promise<void> {
    return pauseGroup(this.#db, this.namespace, p);
  }

  groupList(p: GroupListParams): Promise<GroupRow[]> {
    return listGroups(this.#db, this.namespace, p);
  }

  groupHeld(p: GroupHeldParams): Promise<GroupHeldRow[]> {
    return countHeld(this.#db, this.namespace, p);
  }

  flowPrune(p: FlowPruneParams): Promise<void> {
    return pruneFlow(this.#db, this.namespace, p);
  }

  /** The transactional operations inside the application's libSQL `Transaction`. */
  inTransaction(tx: Transaction): TransactionStore {
    checkTransaction(tx);
    const own = <P, R>(op: (p: P) => Promise<R>) => async (p: P): Promise<R> => {
      await this.#db.checkOwnTransaction(tx);
      return await op(p);
    };
    return {
      jobFinishMany: own((p) => finishJobs(this.#db, this.namespace, p, tx)),
      jobInsertMany: own((p) => insertJobs(this.#db, this.namespace, p, tx)),
      jobRenewLeases: own((p) => this.#renew(p, tx)),
      logAppend: own((p) => appendRecords(this.#db, this.namespace, p, tx)),
    };
  }

  logAppend(p: LogAppendParams): Promise<number[]> {
    return appendRecords(this.#db, this.namespace, p);
  }

  logEnds(p: LogEndsParams): Promise<LogPartitionRow[]> {
    return logEnds(this.#db, this.namespace, p);
  }

  consumerCommit(p: ConsumerCommitParams): Promise<boolean> {
    return commitOffset(this.#db, this.namespace, p);
  }

  consumerLease(p: ConsumerLeaseParams): Promise<ConsumerLease | null> {
    return leasePartition(this.#db, this.namespace, p);
  }

  consumerOffsets(p: ConsumerOffsetsParams): Promise<ConsumerOffsetRow[]> {
    return listOffsets(this.#db, this.namespace, p);
  }

  consumerRelease(p: ConsumerReleaseParams): Promise<void> {
    return releasePartition(this.#db, this.namespace, p);
  }

  consumerSeek(p: ConsumerSeekParams): Promise<{ partition: number; committed: number }[]> {
    return seekOffsets(this.#db, this.namespace, p);
  }

  logRead(p: LogReadParams): Promise<LogRecordRow[]> {
    return readRecords(this.#db, this.namespace, p);
  }

  logPrune(p: LogPruneParams): Promise<number> {
    return pruneRecords(this.#db, this.namespace, p);
  }

  jobFinishMany(p: JobFinishParams): Promise<FinishedJob[]> {
    return finishJobs(this.#db, this.namespace, p);
  }

  consumerImport(p: ConsumerImportParams): Promise<void> {
    return importConsumers(this.#db, this.namespace, p);
  }

  jobDeleteMoved(p: JobDeleteMovedParams): Promise<string[]> {
    return deleteMovedJobs(this.#db, this.namespace, p);
  }

  jobExport(p: JobExportParams): Promise<MovedJob[]> {
    return exportJobs(this.#db, this.namespace, p);
  }

  jobImport(p: JobImportParams): Promise<JobImportResult> {
    return importJobs(this.#db, this.namespace, p);
  }

  logImport(p: LogImportParams): Promise<void> {
    return importLog(this.#db, this.namespace, p);
  }

  logSequences(): Promise<LogSequence[]> {
    return logSequences(this.#db, this.namespace);
  }

  moveGet(p: MoveGetParams): Promise<MoveRecord | null> {
    return getMove(this.#db, this.namespace, p);
  }

  moveSave(p: MoveSaveParams): Promise<void> {
    return saveMove(this.#db, this.namespace, p);
  }

  partitionImport(p: PartitionImportParams): Promise<void> {
    return importPartitions(this.#db, this.namespace, p);
  }

  partitionSequences(): Promise<PartitionSequence[]> {
    return partitionSequences(this.#db, this.namespace);
  }

  async jobGet({ id }: JobGetParams): Promise<JobRow | null> {
    const rs = await this.#db.read({
      sql: `SELECT ${JOB_DETAIL_COLUMNS.join(", ")} FROM errand_jobs WHERE id = ? AND namespace = ?`,
      args: [id, this.namespace],
    });
    return rs.rows.length ? toJobRow(rs.rows[0]) : null;
  }

  async jobInsertMany(p: JobInsertParams): Promise<JobInsertResult> {
    return await insertJobs(this.#db, this.namespace, p);
  }

  async jobCounts(): Promise<JobCount[]> {
    const rs = await this.#db.read({
      sql: `SELECT queue, kind, version, state, count(*) AS count FROM errand_jobs WHERE namespace = ?
            GROUP BY queue, kind, version, state`,
      args: [this.namespace],
    });
    return rs.rows.map(toJobCount);
  }

  async jobDelete(p: { id: string }): Promise<boolean> {
    return await this.#db.run(() =>
      this.#db.transaction(async (tx) => {
        const rs = await tx.execute({
          sql: "DELETE FROM errand_jobs WHERE id = ? AND namespace = ? AND state <> 'running' RETURNING id",
          args: [p.id, this.namespace],
        });
        if (rs.rows.length === 0) return false;
        await tx.execute({
          sql: "DELETE FROM errand_job_parents WHERE namespace = ? AND job_id = ?",
          args: [this.namespace, p.id],
        });
        return true;
      })
    );
  }

  jobDeleteMany(p: JobDeleteManyParams): Promise<string[]> {
    return deleteJobs(this.#db, this.namespace, p);
  }

  jobTransitionMany(p: JobTransitionManyParams): Promise<ChangedJob[]> {
    return transitionJobs(this.#db, this.namespace, p);
  }

  async jobTransition(p: JobTransitionParams): Promise<boolean> {
    const rs = await this.#db.write({
      sql: `UPDATE errand_jobs SET state = ?, run_at = coalesce(?, run_at), finished_at = ?, fence = fence + 1,
              lease_until = NULL, worker_id = NULL, reason = coalesce(?, reason),
              max_attempts = CASE WHEN ? AND attempt >= max_attempts THEN attempt + 1 ELSE max_attempts END
            WHERE id = ? AND namespace = ? AND state IN (SELECT value FROM json_each(?))
            RETURNING id`,
      args: [
        p.state,
        p.runAt ?? null,
        p.finishedAt,
        p.reason ?? null,
        p.grantAttempt ? 1 : 0,
        p.id,
        this.namespace,
        JSON.stringify(p.from),
      ],
    });
    return rs.rows.length > 0;
  }

  async queuePause(p: { queue: string; paused: boolean }): Promise<void> {
    await this.#db.write({
      sql: `INSERT INTO errand_queues (namespace, queue, paused) VALUES (?, ?, ?)
            ON CONFLICT (namespace, queue) DO UPDATE SET paused = excluded.paused`,
      args: [this.namespace, p.queue, p.paused ? 1 : 0],
    });
  }

  async queuesPaused(): Promise<string[]> {
    const rs = await this.#db.read({
      sql: "SELECT queue FROM errand_queues WHERE namespace = ? AND paused",
      args: [this.namespace],
    });
    return rs.rows.map((r) => String(r.queue));
  }

  async workerBeat(p: { worker: WorkerInfo; expiredBefore: number }): Promise<void> {
    const w = p.worker;
    await this.#db.run(() =>
      this.#db.transaction(async (tx) => {
        await tx.execute({
          sql: `INSERT INTO errand_workers (namespace, id, started_at, beat_at, info) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (namespace, id) DO UPDATE SET beat_at = excluded.beat_at, info = excluded.info`,
          args: [this.namespace, w.id, w.startedAt, w.beatAt, workerInfoColumn(w)],
        });
        await tx.execute({
          sql: "DELETE FROM errand_workers WHERE namespace = ? AND beat_at < ?",
          args: [this.namespace, p.expiredBefore],
        });
      })
    );
  }

  async workerList(p: { since: number }): Promise<WorkerInfo[]> {
    const rs = await this.#db.read({
      sql: `SELECT id, started_at, beat_at, info FROM errand_workers WHERE namespace = ? AND beat_at >= ?
            ORDER BY started_at, id`,
      args: [this.namespace, p.since],
    });
    return rs.rows.map(toWorkerInfo);
  }

  async workerRemove(p: { id: string }): Promise<void> {
    await this.#db.write({
      sql: "DELETE FROM errand_workers WHERE namespace = ? AND id = ?",
      args: [this.namespace, p.id],
    });
  }

  async partitionTrimHistory(
    p: { topic?: string; partition?: number; keep: number; limit: number },
  ): Promise<number> {
    return await this.#db.run(() =>
      this.#db.transaction(async (tx) => {
        const gone = await tx.execute({
          sql: `DELETE FROM errand_jobs WHERE id IN (
                  SELECT id FROM (
                    SELECT id, row_number() OVER (PARTITION BY topic, "partition" ORDER BY seq DESC) AS newest
                    FROM errand_jobs
                    WHERE namespace = ? AND topic IS NOT NULL AND state IN ('completed', 'failed', 'cancelled')
                      AND (? IS NULL OR (topic = ? AND "partition" = ?)))
                  WHERE newest > ? LIMIT ?)
                RETURNING id`,
          args: [this.namespace, p.topic ?? null, p.topic ?? null, p.partition ?? null, p.keep, p.limit],
        });
        await deleteParentLinks(tx, this.namespace, gone.rows.map((r) => r.id));
        return gone.rows.length;
      })
    );
  }

  async partitionsExist(): Promise<boolean> {
    const rs = await this.#db.read({
      sql: "SELECT EXISTS (SELECT 1 FROM errand_partitions WHERE namespace = ?) AS present",
      args: [this.namespace],
    });
    return Boolean(Number(rs.rows[0].present));
  }

  async partitionList(p: PartitionListParams): Promise<PartitionRow[]> {
    const rs = await this.#db.read({
      sql: `SELECT p."partition" AS "partition",
              (SELECT count(*) FROM errand_jobs AS e WHERE e.namespace = p.namespace AND e.topic = p.topic
                 AND e."partition" = p."partition" AND e.state IN ('scheduled', 'available', 'running', 'waiting')) AS depth,
              h.id, h.kind, h.version, h.queue, h.state, h.attempt, h.run_at, h.started_at, h.worker_id
            FROM errand_partitions AS p
            LEFT JOIN errand_jobs AS h ON h.id = (
              SELECT e.id FROM errand_jobs AS e
              WHERE e.namespace = p.namespace AND e.topic = p.topic AND e."partition" = p."partition"
                AND e.state IN ('scheduled', 'available', 'running', 'waiting')
              ORDER BY e.seq LIMIT 1)
            WHERE p.namespace = ? AND p.topic = ? ${p.partition === undefined ? "" : 'AND p."partition" = ?'}
            ORDER BY p."partition"`,
      args: p.partition === undefined ? [this.namespace, p.topic] : [this.namespace, p.topic, p.partition],
    });
    return rs.rows.map(toPartitionRow);
  }

  async jobActivity(p: JobActivityParams): Promise<ActivityRow> {
    const [events, waits, storageBytes] = await Promise.all([
      this.#db.read({
        sql: `SELECT 'enqueued' AS what, (created_at - ?2) / ?3 AS bucket, count(*) AS count FROM errand_jobs
                WHERE namespace = ?1 AND created_at >= ?2 GROUP BY 2
              UNION ALL
              SELECT 'started', (started_at - ?2) / ?3, count(*) FROM errand_jobs
                WHERE namespace = ?1 AND started_at >= ?2 GROUP BY 2
              UNION ALL
              SELECT state, (finished_at - ?2) / ?3, count(*) FROM errand_jobs
                WHERE namespace = ?1 AND finished_at >= ?2 GROUP BY 1, 2`,
        args: [this.namespace, p.since, p.bucketMs],
      }),
      this.#db.read({
        sql: `SELECT topic IS NOT NULL AS partitioned, count(*) AS count,
                sum(max(0, started_at - run_at)) AS total_ms, max(max(0, started_at - run_at)) AS max_ms
              FROM errand_jobs WHERE namespace = ? AND started_at >= ? GROUP BY 1`,
        args: [this.namespace, p.since],
      }),
      this.#storageBytes(),
    ]);
    return toActivityRow(events.rows, waits.rows, storageBytes);
  }

  async #storageBytes(): Promise<number | null> {
    try {
      const rs = await this.#db.read(
        "SELECT page_count * page_size AS bytes FROM pragma_page_count(), pragma_page_size()",
      );
      return Number(rs.rows[0].bytes);
    } catch {
      // A remote database may not allow pragmas.
      return null;
    }
  }

  async leaderAcquire(p: LeaderAcquireParams): Promise<boolean> {
    const rs = await this.#db.write({
      sql: `INSERT INTO errand_leaders (namespace, name, holder, until) VALUES (?, ?, ?, ?)
            ON CONFLICT (namespace, name) DO UPDATE SET holder = excluded.holder, until = excluded.until
            WHERE errand_leaders.holder = excluded.holder OR errand_leaders.until < ?
            RETURNING holder`,
      args: [this.namespace, p.name, p.holder, p.until, p.now],
    });
    return rs.rows.length > 0;
  }

  async leaderRelease(p: { name: string; holder: string }): Promise<void> {
    await this.#db.write({
      sql: "DELETE FROM errand_leaders WHERE namespace = ? AND name = ? AND holder = ?",
      args: [this.namespace, p.name, p.holder],
    });
  }

  async scheduleAdvance(p: ScheduleAdvanceParams): Promise<boolean> {
    const rs = await this.#db.write({
      sql: `UPDATE errand_schedules SET next_run_at = ?, last_run_at = ?, last_job_id = ?
            WHERE namespace = ? AND id = ? AND fingerprint = ? AND next_run_at = ? RETURNING id`,
      args: [p.nextRunAt, p.lastRunAt, p.lastJobId, this.namespace, p.id, p.fingerprint, p.from],
    });
    return rs.rows.length > 0;
  }

  async scheduleDelete(p: { id: string }): Promise<boolean> {
    const rs = await this.#db.write({
      sql: "DELETE FROM errand_schedules WHERE namespace = ? AND id = ? RETURNING id",
      args: [this.namespace, p.id],
    });
    return rs.rows.length > 0;
  }

  async scheduleGet({ id }: ScheduleGetParams): Promise<ScheduleRecord | null> {
    const rs = await this.#db.read({
      sql: `SELECT ${SCHEDULE_COLUMNS.join(", ")} FROM errand_schedules WHERE namespace = ? AND id = ?`,
      args: [this.namespace, id],
    });
    return rs.rows.length ? toScheduleRecord(rs.rows[0]) : null;
  }

  async scheduleList(): Promise<ScheduleRecord[]> {
    const rs = await this.#db.read({
      sql: `SELECT ${SCHEDULE_COLUMNS.join(", ")} FROM errand_schedules WHERE namespace = ? ORDER BY id`,
      args: [this.namespace],
    });
    return rs.rows.map(toScheduleRecord);
  }

  async scheduleSave(p: { schedule: ScheduleRecord }): Promise<void> {
    const columns = SCHEDULE_COLUMNS.filter((c) => c !== "id" && c !== "created_at");
    await this.#db.write({
      sql: `INSERT INTO errand_schedules (namespace, ${SCHEDULE_COLUMNS.join(", ")})
            VALUES (?, ${SCHEDULE_COLUMNS.map(() => "?").join(", ")})
            ON CONFLICT (namespace, id) DO UPDATE SET ${columns.map((c) => `${c} = excluded.${c}`).join(", ")}`,
      args: [this.namespace, ...scheduleValues(p.schedule)],
    });
  }

  async jobList(p: JobListParams): Promise<JobRow[]> {
    const where = ["namespace = ?"];
    const args: (string | number)[] = [this.namespace];
    for (
      const [column, value] of [
        ["state =", p.state],
        ["queue =", p.queue],
        ["kind =", p.kind],
        ["topic =", p.topic],
        ["id <", p.before],
      ] as const
    ) {
      if (value !== undefined) {
        where.push(`${column} ?`);
        args.push(value);
      }
    }
    // A listed state's jobs come from the listing index; SQLite needs its predicate spelled out to use it.
    if (p.state !== undefined && LISTED_STATES.includes(p.state)) where.push(LISTED_STATES_SQL);
    args.push(p.limit);
    const rs = await this.#db.read({
      sql: `SELECT ${JOB_COLUMNS.join(", ")} FROM errand_jobs WHERE ${where.join(" AND ")} ORDER BY id DESC LIMIT ?`,
      args,
    });
    return rs.rows.map(toJobRow);
  }

  async jobListExpired(p: { now: number; limit: number }): Promise<ExpiredJob[]> {
    const rs = await this.#db.read({
      sql: `SELECT ${EXPIRED_COLUMNS.join(", ")} FROM errand_jobs
            WHERE namespace = ? AND state = 'running' AND lease_until < ? ORDER BY lease_until LIMIT ?`,
      args: [this.namespace, p.now, p.limit],
    });
    return rs.rows.map(toExpiredJob);
  }

  async jobPromoteDue(p: { now: number; limit: number }): Promise<string[]> {
    const rs = await this.#db.write({
      sql: `UPDATE errand_jobs SET state = 'available'
            WHERE id IN (SELECT id FROM errand_jobs WHERE namespace = ? AND state = 'scheduled' AND run_at <= ? ORDER BY run_at LIMIT ?)
            RETURNING queue`,
      args: [this.namespace, p.now, p.limit],
    });
    return [...new Set(rs.rows.map((r) => String(r.queue)))];
  }

  async jobPrune(p: { state: "completed" | "failed" | "cancelled"; before: number; limit: number }): Promise<number> {
    return await this.#db.run(() =>
      this.#db.transaction(async (tx) => {
        const gone = await tx.execute({
          sql: `DELETE FROM errand_jobs WHERE id IN (
                  SELECT id FROM errand_jobs WHERE namespace = ? AND state = ? AND finished_at < ? LIMIT ?)
                RETURNING id`,
          args: [this.namespace, p.state, p.before, p.limit],
        });
        await deleteParentLinks(tx, this.namespace, gone.rows.map((r) => r.id));
        return gone.rows.length;
      })
    );
  }

  async jobRelatives(p: { id: string; limit: number }): Promise<JobRelatives> {
    const rs = await this.#db.read({
      sql: `SELECT * FROM (SELECT 'parent' AS side, parent_id AS id FROM errand_job_parents
                           WHERE namespace = ? AND job_id = ? ORDER BY parent_id)
            UNION ALL
            SELECT * FROM (SELECT 'child', job_id FROM errand_job_parents
                           WHERE namespace = ? AND parent_id = ? ORDER BY job_id LIMIT ?)`,
      args: [this.namespace, p.id, this.namespace, p.id, p.limit],
    });
    return toRelatives(rs.rows);
  }

  async jobResolveWaiting(p: { parents?: readonly string[]; now: number; limit: number }): Promise<ResolvedWaiting> {
    const rs = await this.#db.write({
      sql: `WITH candidates AS (
              SELECT j.id, j.run_at FROM errand_jobs AS j
              WHERE j.namespace = ?1 AND j.state = 'waiting' AND ${LISTED_STATES_SQL}
                AND (?2 IS NULL OR j.id IN (
                  SELECT job_id FROM errand_job_parents WHERE namespace = ?1 AND parent_id IN (SELECT value FROM json_each(?2))))
              ORDER BY j.id LIMIT ?4),
            verdicts AS (
              SELECT c.id, c.run_at,
                (SELECT 'Parent job "' || l.parent_id || '" ' || coalesce(pj.state, 'no longer exists')
                 FROM errand_job_parents AS l LEFT JOIN errand_jobs AS pj ON pj.id = l.parent_id AND pj.namespace = l.namespace
                 WHERE l.namespace = ?1 AND l.job_id = c.id AND (pj.id IS NULL OR pj.state IN ('failed', 'cancelled'))
                 ORDER BY l.parent_id LIMIT 1) AS doomed_by,
                NOT EXISTS (
                  SELECT 1 FROM errand_job_parents AS l JOIN errand_jobs AS pj ON pj.id = l.parent_id AND pj.namespace = l.namespace
                  WHERE l.namespace = ?1 AND l.job_id = c.id AND pj.state <> 'completed') AS ready
              FROM candidates AS c)
            UPDATE errand_jobs AS j SET
              state = CASE WHEN v.doomed_by IS NOT NULL THEN 'cancelled' WHEN v.run_at > ?3 THEN 'scheduled' ELSE 'available' END,
              finished_at = CASE WHEN v.doomed_by IS NOT NULL THEN ?3 END,
              reason = v.doomed_by
            FROM verdicts AS v
            WHERE j.id = v.id AND (v.doomed_by IS NOT NULL OR v.ready)
            RETURNING id, state, queue`,
      args: [this.namespace, p.parents ? JSON.stringify(p.parents) : null, p.now, p.limit],
    });
    return toResolvedWaiting(rs.rows);
  }

  jobRenewLeases(p: JobRenewLeasesParams): Promise<string[]> {
    return this.#renew(p);
  }

  jobProgress(p: JobProgressParams): Promise<boolean> {
    return saveProgress(this.#db, this.namespace, p);
  }

  jobWatch(p: JobWatchParams): Promise<JobChange[]> {
    return watchJobs(this.#db, this.namespace, p);
  }

  /** libSQL cannot push changes across processes: waiters poll. */
  changesListen(_params: ChangesListenParams): Promise<null> {
    return Promise.resolve(null);
  }

  /** libSQL cannot push wake-ups across processes: workers in other processes poll. */
  listen(_params: ListenParams): Promise<null> {
    return Promise.resolve(null);
  }

  async #renew(p: JobRenewLeasesParams, tx?: Transaction): Promise<string[]> {
    if (p.leases.length === 0) return [];
    const statement = {
      sql: `UPDATE errand_jobs AS j SET lease_until = ?
            FROM json_each(?) AS l
            WHERE j.id = l.value ->> 'id' AND +j.namespace = ? AND j.state = 'running' AND j.fence = l.value ->> 'fence'
            RETURNING id`,
      args: [p.leaseUntil, JSON.stringify(p.leases), this.namespace],
    };
    const rs = tx ? await this.#db.write(statement, tx) : await this.#db.writeUnsynced(statement);
    return rs.rows.map((r) => String(r.id));
  }

  async #schemaVersion(): Promise<number> {
    const table = await this.#db.read(
      "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'errand_migrations'",
    );
    if (table.rows.length === 0) return 0;
    const rs = await this.#db.read("SELECT coalesce(max(version), 0) AS v FROM errand_migrations");
    return Number(rs.rows[0].v);
  }
}
