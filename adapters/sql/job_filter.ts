/**
 * The `WHERE` conditions of a bulk operation's {@link JobFilter}, the same in
 * both dialects: each dialect binds the values its own way (`$n` or `?`).
 *
 * @module
 */
import type { JobFilter } from "../../src/store/mod.ts";
import { allListed, LISTED_STATES_SQL } from "./listed_states.ts";
import { readStatesSql } from "./retrying.ts";

/**
 * The conditions of `filter` on the jobs table (unqualified columns, the
 * namespace left to the caller), joined by `AND`; `bind` adds a value to the
 * statement's arguments and returns its placeholder, called in the order the
 * placeholders appear; `lastOutcome` is the dialect's SQL for the outcome of
 * the latest run (see {@link readStatesSql}).
 */
export function jobFilterSql(
  filter: JobFilter,
  bind: (value: string | number) => string,
  lastOutcome: string,
): string {
  const where = [readStatesSql(filter.states, bind, lastOutcome)];
  if (filter.queue !== undefined) where.push(`queue = ${bind(filter.queue)}`);
  if (filter.kind !== undefined) where.push(`kind = ${bind(filter.kind)}`);
  if (filter.createdFrom !== undefined) where.push(`created_at >= ${bind(filter.createdFrom)}`);
  if (filter.createdBefore !== undefined) where.push(`created_at < ${bind(filter.createdBefore)}`);
  if (filter.afterId !== undefined) where.push(`id > ${bind(filter.afterId)}`);
  // Listed states' jobs come from the listing index in id order (spelled out for SQLite and generic plans).
  if (allListed(filter.states)) where.push(LISTED_STATES_SQL);
  return where.join(" AND ");
}
