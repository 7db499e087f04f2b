/**
 * The PostgreSQL store's cluster bookkeeping (`ClusterStore`): the leader
 * leases in `{schema}.leaders` (one row per name, taken over once expired)
 * and the workers' heartbeats in `{schema}.workers`.
 *
 * @module
 */
import type {
  LeaderAcquireParams,
  LeaderReleaseParams,
  WorkerBeatParams,
  WorkerListParams,
  WorkerRemoveParams,
} from "../../src/store/mod.ts";
import type { WorkerInfo } from "../../src/base/types.ts";
import { toWorkerInfo, workerInfoColumn } from "../sql/rows.ts";
import type { PostgresContext } from "./connection.ts";

/** `leaderAcquire`: takes or renews the lease of a name, unless another holder's lease still runs. */
export async function acquireLeader({ db, target }: PostgresContext, p: LeaderAcquireParams): Promise<boolean> {
  const rows = await db.query(
    `INSERT INTO ${target.tables.leaders} AS l (namespace, name, holder, until) VALUES ($1, $2, $3, $4)
     ON CONFLICT (namespace, name) DO UPDATE SET holder = excluded.holder, until = excluded.until
     WHERE l.holder = excluded.holder OR l.until < $5
     RETURNING holder`,
    [target.namespace, p.name, p.holder, p.until, p.now],
  );
  return rows.length > 0;
}

/** `leaderRelease`: gives up a lease the holder has. */
export async function releaseLeader({ db, target }: PostgresContext, p: LeaderReleaseParams): Promise<void> {
  await db.query(`DELETE FROM ${target.tables.leaders} WHERE namespace = $1 AND name = $2 AND holder = $3`, [
    target.namespace,
    p.name,
    p.holder,
  ]);
}

/** `workerBeat`: records a worker's heartbeat and forgets workers silent since `p.expiredBefore`. */
export async function beatWorker({ db, target }: PostgresContext, p: WorkerBeatParams): Promise<void> {
  const w = p.worker;
  await db.query(
    `WITH beat AS (
       INSERT INTO ${target.tables.workers} (namespace, id, started_at, beat_at, info) VALUES ($1, $2, $3, $4, $5::jsonb)
       ON CONFLICT (namespace, id) DO UPDATE SET beat_at = excluded.beat_at, info = excluded.info)
     DELETE FROM ${target.tables.workers} WHERE namespace = $1 AND beat_at < $6 AND id <> $2`,
    [target.namespace, w.id, w.startedAt, w.beatAt, workerInfoColumn(w), p.expiredBefore],
  );
}

/** `workerList`: the workers that beat since `p.since`, oldest first. */
export async function listWorkers({ db, target }: PostgresContext, p: WorkerListParams): Promise<WorkerInfo[]> {
  const rows = await db.query(
    `SELECT id, started_at, beat_at, info FROM ${target.tables.workers} WHERE namespace = $1 AND beat_at >= $2
     ORDER BY started_at, id`,
    [target.namespace, p.since],
  );
  return rows.map(toWorkerInfo);
}

/** `workerRemove`: forgets a worker at its shutdown. */
export async function removeWorker({ db, target }: PostgresContext, p: WorkerRemoveParams): Promise<void> {
  await db.query(`DELETE FROM ${target.tables.workers} WHERE namespace = $1 AND id = $2`, [target.namespace, p.id]);
}
