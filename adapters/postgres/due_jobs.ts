/**
 * The PostgreSQL store's read of a queue's due jobs outside topics and
 * groups, shared by the plain claim (runs.ts) and the claim under flow
 * control (limited_claim.ts).
 *
 * Available jobs come from `jobs_claim`, which holds only them, in claim
 * order; due scheduled jobs (not yet promoted by the leader) come from
 * `jobs_scheduled`, in run time order. A queue's future scheduled jobs are
 * in neither read's path: when `jobs_claim` held them too, a claim that
 * found nothing due read every one of them, since the index puts
 * `priority` before `run_at`.
 *
 * @module
 */
import { afterSql, type DuePlaceholders } from "../sql/due_placeholders.ts";

/**
 * A locking read of `columns` of at most `$.limit` due jobs of the queue
 * without a topic or a group, in claim order (priority, run time, id).
 * The scheduled ones are the earliest due: when more are due than a claim
 * takes (the leader behind a burst of them), a higher priority among them
 * may wait for their promotion, which puts them in claim order.
 */
export function dueJobsSql(jobs: string, columns: string, $: DuePlaceholders): string {
  const mine = `namespace = ${$.namespace} AND queue = ${$.queue} AND topic IS NULL AND grp IS NULL
                AND run_at <= ${$.now} AND kind || '@' || version = ANY(${$.kinds})${afterSql($)}`;
  return `SELECT ${columns} FROM (
              SELECT * FROM (SELECT ${columns} FROM ${jobs} WHERE state = 'available' AND ${mine}
                             ORDER BY priority, run_at, id LIMIT ${$.limit} FOR UPDATE SKIP LOCKED) AS available
              UNION ALL
              SELECT * FROM (SELECT ${columns} FROM ${jobs} WHERE state = 'scheduled' AND ${mine}
                             ORDER BY run_at LIMIT ${$.limit} FOR UPDATE SKIP LOCKED) AS scheduled
            ) AS due ORDER BY priority, run_at, id LIMIT ${$.limit}`;
}
