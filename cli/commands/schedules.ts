/**
 * `errand schedules` lists the recurring jobs; `errand trigger <id>` runs
 * one now, as an extra occurrence.
 *
 * @module
 */
import type { Command } from "commander";
import { outputOf } from "../context.ts";
import { relative } from "../output.ts";
import { withErrand } from "../session.ts";

/** Adds `schedules` and `trigger`. */
export function addScheduleCommands(program: Command): void {
  program
    .command("schedules")
    .description("the recurring jobs, with their next and latest occurrence")
    .action(async (_flags: unknown, command: Command) => {
      const out = outputOf(command);
      await withErrand(command, async (errand) => {
        const schedules = await errand.schedules();
        if (out.json) return out.printJson(schedules);
        if (schedules.length === 0) return out.print(out.color.dim("no recurring jobs"));
        const now = Date.now();
        out.print(out.table(
          ["id", "kind", "queue", "schedule", "time zone", "next", "last", "last job"],
          schedules.map((s) => [
            s.id,
            `${s.kind}@${s.version}`,
            s.queue,
            s.cron,
            // An interval counts elapsed time: no time zone applies.
            s.every === null ? s.timezone : "-",
            relative(s.nextRunAt, now),
            relative(s.lastRunAt, now),
            s.lastJobId ?? "-",
          ]),
        ));
      });
    });

  program
    .command("trigger")
    .description("run a recurring job now (its schedule goes on as before)")
    .argument("<id>", "the recurring job's id (errand schedules lists them)")
    .action(async (id: string, _flags: unknown, command: Command) => {
      const out = outputOf(command);
      await withErrand(command, async (errand) => {
        const job = await errand.trigger(id);
        if (out.json) out.printJson({ schedule: id, job });
        else out.print(`triggered ${id}: job ${job}`);
      });
    });
}
