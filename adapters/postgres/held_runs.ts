/**
 * How the PostgreSQL store's writes under a fence (outcomes, lease renewals,
 * progress, steps) find the runs they change: by the primary key, whatever
 * the statistics say.
 *
 * A constant `state = 'running'` beside `namespace = $n` lets the planner
 * read the jobs through `jobs_lease` or `jobs_list`, partial indexes of the
 * running jobs led by the namespace, which it believes nearly empty when
 * the table was last analyzed with few jobs running. That plan visits every
 * running job of the namespace for each write and, while another
 * transaction holds a snapshot older than them, the entry of every job that
 * has run since. So the runs come as a materialized list that carries the
 * state their jobs must be in: compared with a column of the list, the
 * state proves no partial index applicable, which leaves the plan the
 * primary key (or, while the table is small, one pass over it).
 *
 * @module
 */

/** The state a run's job is in while its claim holds. */
const CLAIMED_STATE = "'running'::text AS claimed";

/**
 * The common table expression `name`, materialized: the rows of `from` (a
 * FROM item naming `id` and `fence`, such as an `unnest(...) AS r(id, fence)`)
 * with the state their jobs must be in, for {@link heldRunSql}.
 */
export function runListSql(name: string, from: string): string {
  return `${name} AS MATERIALIZED (SELECT *, ${CLAIMED_STATE} FROM ${from})`;
}

/**
 * Whether job row `j` is the run `r` of a {@link runListSql} list with its
 * claim still holding: the same id and fence, in `namespace`, running.
 */
export function heldRunSql(j: string, r: string, namespace: string): string {
  return `${j}.id = ${r}.id AND ${j}.namespace = ${namespace} AND ${j}.state = ${r}.claimed AND ${j}.fence = ${r}.fence`;
}
