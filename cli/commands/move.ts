/**
 * `errand move --from <url> --to <url> [--dry-run] [--history] [--no-logs]
 * [--running-timeout 5m]`: moves a store into another (`moveStore()`),
 * typically an embedded libSQL file into PostgreSQL when one machine is
 * outgrown. `--namespace` names the namespace on both sides and `--schema`
 * the PostgreSQL schema of whichever side is PostgreSQL. The progress shows
 * each phase; the messages the move gives (which queues it paused, that it
 * resumes an earlier move) are printed as they come. Interrupted, it
 * resumes when run again.
 *
 * @module
 */
import { existsSync } from "node:fs";
import path from "node:path";
import type { Command } from "commander";
import { type MovePhase, type MoveReport, moveStore } from "../../mod.ts";
import type { Store } from "../../src/store/mod.ts";
import { givenOnCommandLine, globalOptions, outputOf } from "../context.ts";
import { type DatabaseUrl, type OpenDatabase, openDatabase, parseDatabaseUrl } from "../database.ts";
import { CommandFailure, UsageError } from "../failures.ts";
import { type Progress, startProgress } from "../progress.ts";
import { duration } from "./options.ts";

interface MoveFlags {
  from?: string;
  to?: string;
  dryRun?: boolean;
  history?: boolean;
  logs: boolean;
  runningTimeout?: number;
}

/** Adds `move`. */
export function addMoveCommand(program: Command): void {
  program
    .command("move")
    .description("move every unfinished job, schedule, partition sequence and paused queue into another store")
    .requiredOption("--from <url>", "the store to move out of (e.g. file:errand.db)")
    .requiredOption("--to <url>", "the store to move into (e.g. postgres://user@host/db)")
    .option("--dry-run", "only report what would move; write nothing")
    .option("--history", "also move finished jobs, with their results and run history")
    .option("--no-logs", "leave retained logs and consumer offsets behind")
    .option("--running-timeout <duration>", "how long to wait for jobs running on the source (default 5m)", duration)
    .action(async (flags: MoveFlags, command: Command) => {
      if (givenOnCommandLine(command, "db")) {
        throw new UsageError("move takes --from and --to, not --db; drop --db");
      }
      const from = parseDatabaseUrl(flags.from);
      const to = parseDatabaseUrl(flags.to);
      if (from.url === to.url && from.kind === "libsql") {
        throw new UsageError(`--from and --to name the same database (${from.shown}); give the store to move into`);
      }
      const out = outputOf(command);
      // The source must exist; its schema is brought up to date, as the move needs its record table.
      const source = await open(command, from, { migrate: true, create: false });
      let target: OpenDatabase | undefined;
      let progress: { phase: MovePhase; bar: Progress } | undefined;
      let report: MoveReport;
      try {
        // A dry run reads the source only: the target is neither created nor migrated.
        const dry = flags.dryRun === true;
        // A dry run reads the source only and leaves the target untouched: a target file not there yet stays
        // uncreated (an empty database in memory stands in for it).
        const standIn = dry && to.file !== undefined && !existsSync(path.resolve(to.file));
        target = await open(command, standIn ? { kind: "libsql", url: ":memory:", shown: to.shown } : to, {
          migrate: !dry,
          create: !dry,
        });
        report = await moveStore(source.store as Store, target.store as Store, {
          dryRun: flags.dryRun === true,
          history: flags.history === true,
          logs: flags.logs,
          runningTimeout: flags.runningTimeout,
          onProgress: ({ phase, done, total, message }) => {
            if (message) {
              progress?.bar.stop();
              progress = undefined;
              out.note(message);
              return;
            }
            if (progress?.phase !== phase) {
              progress?.bar.stop();
              progress = {
                phase,
                bar: startProgress(out, phase, total, { unit: phase === "logs" ? "records" : "jobs" }),
              };
            }
            progress.bar.update(done);
          },
        });
      } finally {
        progress?.bar.stop();
        await target?.close().catch(() => {});
        await source.close().catch(() => {});
      }
      if (!report.dryRun && !report.verified) {
        throw new CommandFailure(`The move into ${to.shown} did not verify; run it again: it resumes`);
      }
      if (out.json) return out.printJson(report);
      out.print(describe(report, from, to));
    });
}

/** Opens one side of the move, in the namespace (and PostgreSQL schema) of the global options. */
function open(command: Command, url: DatabaseUrl, how: { migrate: boolean; create: boolean }): Promise<OpenDatabase> {
  const globals = globalOptions(command);
  return openDatabase(url, {
    namespace: globals.namespace,
    schema: url.kind === "postgres" ? globals.schema : undefined,
    connectTimeoutMs: globals.connectTimeout,
    prepare: globals.prepare,
    ...how,
  });
}

/** The report for people. */
function describe(r: MoveReport, from: DatabaseUrl, to: DatabaseUrl): string {
  const lines = [
    r.dryRun
      ? `A move from ${from.shown} to ${to.shown} would move:`
      : `Moved from ${from.shown} to ${to.shown}${r.resumed ? " (resuming an earlier move)" : ""}:`,
    `  jobs        ${r.jobs} unfinished${r.history ? `, ${r.history} finished` : ""}${
      r.late ? ` (${r.late} arrived during the move)` : ""
    }`,
    `  running     ${r.running} waited for${r.rescued ? `, ${r.rescued} rescued (lease lapsed)` : ""}`,
    `  schedules   ${r.schedules}`,
    `  partitions  ${r.partitions} sequences`,
    `  logs        ${r.logs.records} records in ${r.logs.partitions} partitions, ${r.logs.consumerOffsets} consumer offsets`,
  ];
  if (r.events) lines.push(`  events      ${r.events} kept for workflows`);
  if (r.uniqueConflicts) {
    lines.push(`  ${r.uniqueConflicts} jobs moved without their unique key, which a job moved before them holds`);
  }
  if (!r.dryRun) {
    lines.push("Every job was verified on the target.");
    if (r.sourcePaused.length) {
      lines.push(
        `The source's queues stay paused (${r.sourcePaused.join(", ")}): point your workers at ${to.shown}.`,
      );
    }
  } else if (r.sourcePaused.length) {
    lines.push(`A move would pause the source's queues ${r.sourcePaused.join(", ")}.`);
  }
  return lines.join("\n");
}
