/**
 * The PostgreSQL store's read of due partition heads (each partition's
 * oldest unfinished job, when it is due), shared by the plain claim
 * (runs.ts) and the claim under flow control (limited_claim.ts).
 *
 * @module
 */
import type { StoreTarget } from "./connection.ts";

/** Where a due-heads read finds its parameters: a placeholder for each (`$4`, ...). */
export interface HeadsPlaceholders {
  readonly namespace: string;
  readonly queue: string;
  readonly now: string;
  /** `name@version` of the kinds to take, text[]. */
  readonly kinds: string;
  /** The managed topics, text[]. */
  readonly managed: string;
  /** The owned partitions' topics, text[], and partitions, int[]. */
  readonly ownedTopics: string;
  readonly ownedPartitions: string;
}

/**
 * A locking read of `columns` of the due heads of partitions (each its
 * partition's oldest unfinished job), looked up by primary key in a read
 * planned on its own.
 */
export function dueHeadsSql(
  tables: Pick<StoreTarget["tables"], "jobs" | "partitions">,
  columns: string,
  $: HeadsPlaceholders,
): string {
  return `SELECT ${columns} FROM ${tables.jobs}
              WHERE id = ANY(ARRAY(
                  SELECT h.id FROM ${tables.partitions} AS p
                  CROSS JOIN LATERAL (
                    SELECT e.id, e.queue, e.state, e.run_at, e.kind, e.version FROM ${tables.jobs} AS e
                    WHERE e.namespace = p.namespace AND e.topic = p.topic AND e."partition" = p."partition"
                      AND e.state IN ('scheduled', 'available', 'running', 'waiting')
                    ORDER BY e.seq LIMIT 1) AS h
                  WHERE p.namespace = ${$.namespace}
                    AND (p.topic <> ALL(${$.managed}::text[])
                      OR (p.topic, p."partition") IN (SELECT * FROM unnest(${$.ownedTopics}::text[], ${$.ownedPartitions}::int[])))
                    AND h.queue = ${$.queue} AND h.state IN ('available', 'scheduled')
                    AND h.run_at <= ${$.now} AND h.kind || '@' || h.version = ANY(${$.kinds}::text[])))
                AND state IN ('available', 'scheduled')
              FOR UPDATE SKIP LOCKED`;
}
