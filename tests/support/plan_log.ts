/**
 * A postgres.js client on one connection whose every statement's plan, as
 * the server ran it (nested statements of functions included), is logged by
 * `auto_explain` and kept in `plans`: for tests of what a statement reads.
 */
import postgres from "postgres";

/** A client of `url` whose server-side plans land in the returned `plans`, oldest first. */
export function planLoggingClient(url: string): { sql: postgres.Sql; plans: string[] } {
  const plans: string[] = [];
  const sql = postgres(url, {
    max: 1,
    onnotice: (n) => plans.push(n.message ?? ""),
    connection: {
      session_preload_libraries: "auto_explain",
      "auto_explain.log_min_duration": "0",
      "auto_explain.log_nested_statements": "on",
      "auto_explain.log_level": "notice",
    } as Record<string, string>,
  });
  return { sql, plans };
}
