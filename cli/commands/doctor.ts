/**
 * `errand doctor`: checks the database and prints each finding with its
 * fix; exits with 1 when a finding is an error. It reads the schema
 * version, the indexes errand's migrations create, dead rows, the MVCC
 * horizon and autovacuum on errand's tables (PostgreSQL), the journal mode
 * and free pages (SQLite), through `errand.health()`. It writes nothing and
 * works on a schema that is behind. PgBouncer in transaction mode is not
 * detected: through it a session cannot tell (see docs/guides/health.md).
 *
 * @module
 */
import type { Command } from "commander";
import type { ErrandHealth } from "../../mod.ts";
import { outputOf } from "../context.ts";
import type { Output } from "../output.ts";
import { CommandFailure } from "../failures.ts";
import { withErrand } from "../session.ts";
import { addHealthOptions, type HealthFlags, healthOptionsOf, renderFindings } from "./health_options.ts";

/** Adds `doctor`. */
export function addDoctorCommand(program: Command): void {
  addHealthOptions(
    program
      .command("doctor")
      .description("check the database (schema, indexes, bloat, MVCC horizon, autovacuum) and say what to fix"),
  ).action(async (flags: HealthFlags, command: Command) => {
    const out = outputOf(command);
    const health = await withErrand(command, (errand) => errand.health(healthOptionsOf(flags)), { start: false });
    if (out.json) out.printJson(health);
    else out.print(renderDoctor(out, health));
    const errors = health.findings.filter((f) => f.severity === "error").length;
    if (errors > 0) {
      throw new CommandFailure(
        `${errors} ${errors === 1 ? "finding is an error" : "findings are errors"}: fix as shown`,
      );
    }
  });
}

/** What was checked, then the findings. */
function renderDoctor(out: Output, health: ErrandHealth): string {
  const c = out.color;
  const lines = [
    `schema version ${health.schemaVersion} (this errand: ${health.schemaVersionExpected})`,
    `${health.indexes.filter((i) => i.state === "valid").length} of ${health.indexes.length} indexes valid`,
  ];
  if (health.horizon !== undefined) {
    lines.push(
      health.horizon
        ? `oldest transaction holding the MVCC horizon: ${Math.round(health.horizon.ageSeconds)} s (${
          health.horizon.kind === "prepared" ? `prepared "${health.horizon.gid}"` : `pid ${health.horizon.pid}`
        })`
        : "no transaction holds the MVCC horizon",
    );
  }
  const dead = health.tables.reduce((n, t) => n + (t.deadTuples ?? 0), 0);
  if (health.tables.some((t) => t.deadTuples !== undefined)) lines.push(`${dead} dead rows in errand's tables`);
  if (health.file) {
    lines.push(
      `journal mode ${health.file.journalMode}, ${health.file.freelistPages} of ${health.file.pageCount} pages free`,
    );
  }
  lines.push("");
  lines.push(...health.findings.length === 0 ? [c.green("no findings")] : renderFindings(out, health.findings));
  return lines.join("\n");
}
