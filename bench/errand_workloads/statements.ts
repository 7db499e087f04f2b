/**
 * Counts the SQL statements errand sends to its database between two
 * snapshots, for the workflow workloads (the shared benchmark's section
 * 9.0, "SQL statements"), the way its reference counter (`wf-common.mjs`)
 * does for the peers, so the figures compare:
 * - PostgreSQL: `pg_stat_statements` when the server preloads it (exact
 *   counts of top-level statements, BEGIN and COMMIT included), read from
 *   the admin database so the snapshots do not count themselves, with the
 *   bench's own queries ({@link PROBE}) left out; otherwise the differences
 *   of `pg_stat_database` (approximate: PostgreSQL 15 backends publish them
 *   at most once a second). Never preload `pg_stat_statements` on a shared
 *   server: run against a throwaway cluster.
 * - libSQL has no server-side statistics: the store's clients are wrapped,
 *   as bench/libsql_costs.ts wraps them to time statements, and each
 *   statement they run is counted in memory (BEGIN and COMMIT of a
 *   transaction or batch included, each statement of a script apart).
 *
 * @module
 */
import type { Client, InStatement, Transaction, TransactionMode } from "@libsql/client";
import { CFG, now, round } from "../harness.ts";

/** Marks the bench's own queries, which the PostgreSQL count leaves out. */
export const PROBE = "/* wfbench-probe */ ";

/** What a window's count says (the shared benchmark's `sql_total` and `sleep_window_sql` fields). */
export interface StatementCount {
  readonly source: string;
  readonly window_ms: number;
  readonly statements?: number;
  readonly statements_per_s?: number | null;
  /** libSQL: calls into the driver (a transaction's BEGIN, each execute, batch or script, its COMMIT). */
  readonly driver_calls?: number;
  readonly top?: { calls: number; query: string }[];
  readonly xact_commit_plus_tup_returned?: number;
  readonly pg_stat_database?: Record<string, number>;
}

/** The counts at one moment. */
export interface StatementSnapshot {
  readonly t: number;
  readonly calls: number;
  readonly statements: ReadonlyMap<string, number> | null;
  readonly db: Readonly<Record<string, number>> | null;
}

/** Takes snapshots of a database's statement counts and tells two apart. */
export interface StatementCounter {
  readonly source: string;
  snapshot(): Promise<StatementSnapshot>;
  /** What was sent from `a` to `b`, with the `top` most frequent statements where they are known. */
  diff(a: StatementSnapshot, b: StatementSnapshot, top?: number): StatementCount;
  close(): Promise<void>;
}

/** A statement's text on one line, short enough for a results line. */
const shorten = (sql: string) => sql.replace(/\s+/g, " ").trim().slice(0, 110);

/** Counts per statement from `a` to `b`: the total and the most frequent. */
function statementDiff(a: ReadonlyMap<string, number>, b: ReadonlyMap<string, number>, top: number) {
  let total = 0;
  const per: { calls: number; query: string }[] = [];
  for (const [query, calls] of b) {
    const d = calls - (a.get(query) ?? 0);
    if (d > 0 && !query.includes(PROBE.trim())) {
      total += d;
      per.push({ calls: d, query: shorten(query) });
    }
  }
  per.sort((x, y) => y.calls - x.calls);
  return { total, top: per.slice(0, top) };
}

/** The counter of the PostgreSQL database `dbName` beside `CFG.pgBaseUrl`. */
export async function pgStatementCounter(dbName: string): Promise<StatementCounter> {
  const { default: postgres } = await import("postgres");
  const admin = postgres(CFG.pgBaseUrl, { max: 1, onnotice: () => {} });
  let source = "pg_stat_database";
  const [{ v }] = await admin`SELECT current_setting('shared_preload_libraries') AS v`;
  if (/\bpg_stat_statements\b/.test(String(v))) {
    await admin`CREATE EXTENSION IF NOT EXISTS pg_stat_statements`;
    source = "pg_stat_statements";
  }
  const num = (x: unknown) => (x == null ? 0 : Number(x));
  return {
    source,
    async snapshot() {
      const t = now();
      const [row] = await admin`SELECT xact_commit, xact_rollback, tup_returned, tup_fetched, tup_inserted,
        tup_updated, tup_deleted FROM pg_stat_database WHERE datname = ${dbName}`;
      const db = Object.fromEntries(Object.entries(row ?? {}).map(([k, x]) => [k, num(x)]));
      let statements: Map<string, number> | null = null;
      if (source === "pg_stat_statements") {
        const rows = await admin`SELECT s.query, sum(s.calls) AS calls FROM pg_stat_statements s
          JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = ${dbName} GROUP BY s.query`;
        statements = new Map(rows.map((r) => [String(r.query), num(r.calls)]));
      }
      return { t, calls: 0, statements, db };
    },
    diff(a, b, top = 3) {
      const ms = b.t - a.t;
      const dd = Object.fromEntries(Object.keys(b.db ?? {}).map((k) => [k, b.db![k] - (a.db?.[k] ?? 0)]));
      const counted = a.statements && b.statements ? statementDiff(a.statements, b.statements, top) : null;
      return {
        source,
        window_ms: Math.round(ms),
        ...(counted
          ? {
            statements: counted.total,
            statements_per_s: ms > 0 ? round(counted.total / (ms / 1000), 1) : null,
            top: counted.top,
          }
          : {}),
        xact_commit_plus_tup_returned: dd.xact_commit + dd.tup_returned,
        pg_stat_database: dd,
      };
    },
    close: () => admin.end({ timeout: 5 }),
  };
}

/** The statements of a script, split at semicolons outside quotes. */
function scriptStatements(script: string): string[] {
  const out: string[] = [];
  let quote: string | null = null;
  let start = 0;
  for (let i = 0; i < script.length; i++) {
    const c = script[i];
    if (quote) {
      if (c === quote) quote = null;
    } else if (c === "'" || c === '"') quote = c;
    else if (c === ";") {
      out.push(script.slice(start, i));
      start = i + 1;
    }
  }
  out.push(script.slice(start));
  return out.map((s) => s.trim()).filter((s) => s.length > 0);
}

/** The text of a statement as the client takes it. */
const sqlOf = (stmt: InStatement | [string, unknown[]?]) =>
  typeof stmt === "string" ? stmt : Array.isArray(stmt) ? stmt[0] : stmt.sql;

/**
 * A counter of libSQL statements: `instrument(client)` wraps a client (in
 * place, as bench/libsql_costs.ts does) so that every statement it and its
 * transactions run is counted.
 */
export function libsqlStatementCounter(): StatementCounter & { instrument(client: Client): Client } {
  const statements = new Map<string, number>();
  let calls = 0;
  const count = (...sqls: string[]) => {
    calls++;
    for (const sql of sqls) statements.set(sql, (statements.get(sql) ?? 0) + 1);
  };
  const source = "libsql client instrumented (statements run through @libsql/client, counted in memory)";
  /** Wraps `tx`'s calls. */
  const instrumentTx = (tx: Transaction): Transaction => {
    const { execute, batch, executeMultiple, commit, rollback } = tx;
    return Object.assign(tx, {
      execute: (stmt: InStatement, args?: unknown[]) => {
        count(sqlOf(stmt));
        return (execute as (s: InStatement, a?: unknown[]) => ReturnType<Transaction["execute"]>).call(tx, stmt, args);
      },
      batch: (stmts: InStatement[]) => {
        count(...stmts.map(sqlOf));
        return batch.call(tx, stmts);
      },
      executeMultiple: (script: string) => {
        count(...scriptStatements(script));
        return executeMultiple.call(tx, script);
      },
      commit: () => {
        count("COMMIT");
        return commit.call(tx);
      },
      rollback: () => {
        count("ROLLBACK");
        return rollback.call(tx);
      },
    });
  };
  return {
    source,
    instrument(client) {
      const { execute, batch, executeMultiple } = client;
      const transaction = client.transaction.bind(client);
      return Object.assign(client, {
        execute: (stmt: InStatement, args?: unknown[]) => {
          count(sqlOf(stmt));
          return (execute as (s: InStatement, a?: unknown[]) => ReturnType<Client["execute"]>).call(
            client,
            stmt,
            args,
          );
        },
        // A batch runs in a transaction of its own: BEGIN, its statements, COMMIT.
        batch: (stmts: InStatement[], mode?: TransactionMode) => {
          count("BEGIN", ...stmts.map(sqlOf), "COMMIT");
          return batch.call(client, stmts, mode);
        },
        executeMultiple: (script: string) => {
          count(...scriptStatements(script));
          return executeMultiple.call(client, script);
        },
        transaction: async (mode?: TransactionMode) => {
          count(`BEGIN ${mode ?? "write"}`);
          return instrumentTx(await transaction(mode));
        },
      });
    },
    snapshot: () => Promise.resolve({ t: now(), calls, statements: new Map(statements), db: null }),
    diff(a, b, top = 3) {
      const ms = b.t - a.t;
      const counted = statementDiff(a.statements!, b.statements!, top);
      return {
        source,
        window_ms: Math.round(ms),
        statements: counted.total,
        statements_per_s: ms > 0 ? round(counted.total / (ms / 1000), 1) : null,
        driver_calls: b.calls - a.calls,
        top: counted.top,
      };
    },
    close: () => Promise.resolve(),
  };
}
