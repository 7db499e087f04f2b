/**
 * The libSQL store's cluster bookkeeping: the leader leases in
 * `errand_leaders` (one row per name, taken over once expired) and the
 * workers' heartbeats in `errand_workers`.
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
import type { LibsqlContext } from "./connection.ts";

/** `leaderAcquire`: takes or renews the lease of a name, unless another holder's lease still runs. */
export async function acquireLeader({ db, namespace }: LibsqlContext, p: LeaderAcquireParams): Promise<boolean> {
  const rs = await db.write({
    sql: `INSERT INTO errand_leaders (namespace, name, holder, until) VALUES (?, ?, ?, ?)
            ON CONFLICT (namespace, name) DO UPDATE SET holder = excluded.holder, until = excluded.until
            WHERE errand_leaders.holder = excluded.holder OR errand_leaders.until < ?
            RETURNING holder`,
    args: [namespace, p.name, p.holder, p.until, p.now],
  });
  return rs.rows.length > 0;
}

/** `leaderRelease`: gives up a lease the holder has. */
export async function releaseLeader({ db, namespace }: LibsqlContext, p: LeaderReleaseParams): Promise<void> {
  await db.write({
    sql: "DELETE FROM errand_leaders WHERE namespace = ? AND name = ? AND holder = ?",
    args: [namespace, p.name, p.holder],
  });
}

/** `workerBeat`: records a worker's heartbeat and forgets workers silent since `p.expiredBefore`. */
export async function beatWorker({ db, namespace }: LibsqlContext, p: WorkerBeatParams): Promise<void> {
  const w = p.worker;
  await db.run(() =>
    db.transaction(async (tx) => {
      await tx.execute({
        sql: `INSERT INTO errand_workers (namespace, id, started_at, beat_at, info) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (namespace, id) DO UPDATE SET beat_at = excluded.beat_at, info = excluded.info`,
        args: [namespace, w.id, w.startedAt, w.beatAt, workerInfoColumn(w)],
      });
      await tx.execute({
        sql: "DELETE FROM errand_workers WHERE namespace = ? AND beat_at < ?",
        args: [namespace, p.expiredBefore],
      });
    })
  );
}

/** `workerList`: the workers that beat since `p.since`, the oldest first. */
export async function listWorkers({ db, namespace }: LibsqlContext, p: WorkerListParams): Promise<WorkerInfo[]> {
  const rs = await db.read({
    sql: `SELECT id, started_at, beat_at, info FROM errand_workers WHERE namespace = ? AND beat_at >= ?
            ORDER BY started_at, id`,
    args: [namespace, p.since],
  });
  return rs.rows.map(toWorkerInfo);
}

/** `workerRemove`: forgets a worker. */
export async function removeWorker({ db, namespace }: LibsqlContext, p: WorkerRemoveParams): Promise<void> {
  await db.write({
    sql: "DELETE FROM errand_workers WHERE namespace = ? AND id = ?",
    args: [namespace, p.id],
  });
}
