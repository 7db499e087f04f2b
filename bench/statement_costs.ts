/**
 * What the cost breakdowns (libsql_costs.ts on `@libsql/client`,
 * sqlite_costs.ts on the synchronous drivers) share: the kind of each
 * statement errand runs, read from its text, the time spent per kind, and
 * the line that reports one workload's time by kind.
 *
 * @module
 */
import { round } from "./harness.ts";

/** What a statement errand runs does, from its text. */
export function statementKind(sql: string): string {
  if (sql.includes("WITH RECURSIVE") && sql.includes("SET state = 'running'")) return "claim under limits";
  if (sql.includes("SET state = 'running'")) return "claim";
  if (sql.startsWith("SELECT 'running' AS what")) return "read before a claim under limits";
  if (sql.startsWith("UPDATE errand_jobs AS j SET")) return "outcomes";
  if (sql.trimStart().startsWith("INSERT INTO errand_jobs")) return "insert jobs";
  return sql.trim().split(/\s+/).slice(0, 3).join(" ");
}

/** One kind's totals. */
interface KindTotals {
  calls: number;
  ms: number;
  rows: number;
  /** The text of its first statement. */
  sql: string;
}

/** Time spent per kind of statement. */
export class Ledger {
  readonly #kinds = new Map<string, KindTotals>();

  add(kind: string, ms: number, rows: number, sql: string): void {
    const k = this.#kinds.get(kind) ?? { calls: 0, ms: 0, rows: 0, sql };
    k.calls++;
    k.ms += ms;
    k.rows += rows;
    this.#kinds.set(kind, k);
  }

  clear(): void {
    this.#kinds.clear();
  }

  /** The kinds, most time first. */
  entries(): [string, KindTotals][] {
    return [...this.#kinds].sort((a, b) => b[1].ms - a[1].ms);
  }

  /**
   * The figures of a workload of `n` jobs that took `elapsedMs`: its rate,
   * the time in statements and the time left over (errand's JavaScript and
   * the event loop's turns), and per kind of statement the calls, the total
   * and mean time, the calls and microseconds per job and the rows per
   * call (with `extra(kind, sql)`'s figures). The kinds that took under 1 %
   * of the statements' time are one figure, `other`.
   */
  figures(
    n: number,
    elapsedMs: number,
    extra: (kind: string, sql: string) => Record<string, number> = () => ({}),
  ): Record<string, unknown> {
    const entries = this.entries();
    const total = entries.reduce((sum, [, k]) => sum + k.ms, 0);
    const minor = entries.filter(([, k]) => k.ms < total / 100);
    const statements = Object.fromEntries(
      entries.filter(([, k]) => k.ms >= total / 100).map(([kind, k]) => [kind, {
        calls: k.calls,
        ms: Math.round(k.ms),
        us_per_call: round((k.ms / k.calls) * 1000, 1),
        calls_per_job: round(k.calls / n, 2),
        us_per_job: round((k.ms / n) * 1000, 1),
        rows_per_call: round(k.rows / k.calls),
        ...extra(kind, k.sql),
      }]),
    );
    return {
      n,
      jobs_per_s: round(n / (elapsedMs / 1000), 1),
      elapsed_ms: Math.round(elapsedMs),
      us_per_job: round((elapsedMs / n) * 1000, 1),
      statements_ms: Math.round(total),
      left_over_ms: Math.round(elapsedMs - total),
      left_over_us_per_job: round(((elapsedMs - total) / n) * 1000, 1),
      statements_per_job: round(entries.reduce((sum, [, k]) => sum + k.calls, 0) / n, 2),
      statements: {
        ...statements,
        other: {
          calls: minor.reduce((sum, [, k]) => sum + k.calls, 0),
          ms: Math.round(minor.reduce((sum, [, k]) => sum + k.ms, 0)),
        },
      },
    };
  }
}
