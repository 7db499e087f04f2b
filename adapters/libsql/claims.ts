/**
 * The libSQL store's hot path writes: a claim (one `UPDATE ... RETURNING`
 * over the due jobs and partition heads, its commit unsynced) and a batch of
 * outcomes (one `UPDATE ... FROM json_each`, each on its own fence).
 *
 * @module
 */
import type { InValue, Transaction } from "@libsql/client";
import type { JobClaimParams, JobFinishParams } from "../../src/store/store.ts";
import type { ClaimedJob, FinishedJob, JobFinish } from "../../src/store/records.ts";
import { CLAIMED_COLUMNS, toClaimedJob, toFinishedJob } from "../sql/rows.ts";
import { toHex } from "../sql/hex.ts";
import type { LibsqlConnection } from "./connection.ts";

/**
 * The claimed columns but the id and payload, which a claim returns packed in
 * one JSON array: @libsql/client builds each returned row as an object with
 * two properties per column, which cost more than the claim's SQL.
 */
export const PACKED_CLAIM_COLUMNS: readonly string[] = CLAIMED_COLUMNS.filter((c) => c !== "id" && c !== "payload");
const PACKED_CLAIM_KEYS = PACKED_CLAIM_COLUMNS.map((c) => c.replaceAll('"', ""));

/** A claimed row from `id`, `payload` and the `packed` JSON array of {@link PACKED_CLAIM_COLUMNS}. */
export function unpackClaim(row: Record<string, unknown>): Record<string, unknown> {
  const values = JSON.parse(String(row.packed)) as unknown[];
  const out: Record<string, unknown> = { id: row.id, payload: row.payload };
  for (let i = 0; i < PACKED_CLAIM_KEYS.length; i++) out[PACKED_CLAIM_KEYS[i]] = values[i];
  return out;
}

/** Claims due jobs for {@link LibsqlStore.jobClaim}: one `UPDATE ... RETURNING`, unsynced. */
export async function claimJobs(db: LibsqlConnection, namespace: string, p: JobClaimParams): Promise<ClaimedJob[]> {
  const kinds = JSON.stringify(p.kinds);
  const plain = `SELECT id, priority, run_at FROM errand_jobs
                WHERE namespace = ? AND queue = ? AND state IN ('available', 'scheduled') AND run_at <= ?
                  AND topic IS NULL AND grp IS NULL AND kind || '@' || version IN (SELECT value FROM json_each(?))
                ORDER BY priority, run_at, id LIMIT ?`;
  // The head of each partition: its oldest unfinished job.
  const heads = `SELECT h.id, h.priority, h.run_at FROM errand_partitions AS p
              JOIN errand_jobs AS h ON h.id = (
                SELECT e.id FROM errand_jobs AS e
                WHERE e.namespace = p.namespace AND e.topic = p.topic AND e."partition" = p."partition"
                  AND e.state IN ('scheduled', 'available', 'running', 'waiting')
                ORDER BY e.seq LIMIT 1)
              WHERE p.namespace = ?
                AND (p.topic NOT IN (SELECT value FROM json_each(?))
                  OR json_array(p.topic, p."partition") IN (SELECT value FROM json_each(?)))
                AND h.queue = ? AND h.state IN ('available', 'scheduled') AND h.run_at <= ?
                AND h.kind || '@' || h.version IN (SELECT value FROM json_each(?))`;
  const rs = await db.writeUnsynced({
    sql: `UPDATE errand_jobs SET state = 'running', attempt = attempt + 1, fence = fence + 1,
            started_at = ?, lease_until = ?, worker_id = ?
          WHERE id IN (
            SELECT id FROM (${p.heads ? `SELECT * FROM (${plain}) UNION ALL ${heads}` : plain})
            WHERE NOT EXISTS (SELECT 1 FROM errand_queues WHERE namespace = ? AND queue = ? AND paused)
            ORDER BY priority, run_at, id LIMIT ?)
          RETURNING id, payload, json_array(${PACKED_CLAIM_COLUMNS.join(", ")}) AS packed`,
    args: [
      p.now,
      p.leaseUntil,
      p.workerId,
      namespace,
      p.queue,
      p.now,
      kinds,
      p.limit,
      ...(p.heads
        ? [
          namespace,
          JSON.stringify(p.heads.managed),
          JSON.stringify(p.heads.owned.map((o) => [o.topic, o.partition])),
          p.queue,
          p.now,
          kinds,
        ]
        : []),
      namespace,
      p.queue,
      p.limit,
    ],
  });
  return rs.rows.map((row) => toClaimedJob(unpackClaim(row)));
}

/**
 * Applies outcomes for {@link LibsqlStore.jobFinishMany} (in the application's
 * transaction `tx` when given), each on its own fence condition.
 */
export async function finishJobs(
  db: LibsqlConnection,
  namespace: string,
  p: JobFinishParams,
  tx?: Transaction,
): Promise<FinishedJob[]> {
  if (p.finishes.length === 0) return [];
  // Each item is a JSON array of its id, its fence and the fields that differ between items; a
  // field with one value in every item (in a busy worker's batch, all of them) is one parameter,
  // and one that is absent from every item leaves its column or condition out. SQLite then
  // reads two array elements per row instead of eight object keys.
  const items = p.finishes.map((f): unknown[] => [f.id, f.fence]);
  const args: InValue[] = [null, namespace];
  const field = (value: (f: JobFinish) => string | number | null): { sql: string; absent: boolean } => {
    const first = value(p.finishes[0]);
    if (p.finishes.every((f) => value(f) === first)) {
      return { sql: `?${args.push(first)}`, absent: first === null };
    }
    p.finishes.forEach((f, i) => items[i].push(value(f)));
    return { sql: `f.value ->> ${items[0].length - 1}`, absent: false };
  };
  const state = field((f) => f.state);
  const at = field((f) => f.at);
  const runAt = field((f) => f.runAt ?? null);
  const run = field((f) => f.run ? JSON.stringify(f.run) : null);
  const uncount = field((f) => f.uncountAttempt ? 1 : null);
  const expiredBefore = field((f) => f.leaseExpiredBefore ?? null);
  // Results as hex text (JSON holds no bytes), turned back into a blob by unhex().
  const result = field((f) => f.result === undefined ? null : toHex(f.result));
  const progress = field((f) => f.progress ?? null);
  args[0] = JSON.stringify(items);
  const set = [
    `state = ${state.sql}`,
    `finished_at = CASE WHEN ${state.sql} IN ('completed', 'failed') THEN ${at.sql} END`,
    "lease_until = NULL",
    "worker_id = NULL",
    ...runAt.absent ? [] : [`run_at = coalesce(${runAt.sql}, j.run_at)`],
    ...uncount.absent ? [] : [`attempt = j.attempt - coalesce(${uncount.sql}, 0)`],
    ...run.absent
      ? []
      : [`runs = CASE WHEN ${run.sql} IS NULL THEN j.runs ELSE json_insert(j.runs, '$[#]', json(${run.sql})) END`],
    ...result.absent ? [] : [`result = coalesce(unhex(${result.sql}), j.result)`],
    ...progress.absent ? [] : [`progress = coalesce(${progress.sql}, j.progress)`],
  ];
  const rs = await db.write({
    sql: `UPDATE errand_jobs AS j SET ${set.join(", ")}
          FROM json_each(?1) AS f
          -- "+" keeps the planner on the primary key (one lookup per item), not a scan of the namespace.
          WHERE j.id = f.value ->> 0 AND +j.namespace = ?2 AND j.state = 'running' AND j.fence = f.value ->> 1
            ${expiredBefore.absent ? "" : `AND (${expiredBefore.sql} IS NULL OR j.lease_until < ${expiredBefore.sql})`}
          RETURNING id, has_children`,
    args,
  }, tx);
  return rs.rows.map(toFinishedJob);
}
