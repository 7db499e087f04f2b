/**
 * `errand drain <module> [--budget 25s] [--queue q] [--concurrency n]`:
 * the serverless drain (`errand.drain()`) from a shell or a cron. It runs
 * the due jobs of the errand instance the module exports until none is
 * left or the budget is spent, prints what it did, and exits 0; the
 * progress shows the budget spent.
 *
 * The module opens its own store: `--db` is not used. Before importing it,
 * ERRAND_MODE is set to "enqueue" (unless set already): the drain needs an
 * instance that has not started.
 *
 * @module
 */
import process from "node:process";
import { type Command, Option } from "commander";
import type { DrainReport } from "../../mod.ts";
import { outputOf } from "../context.ts";
import { loadErrand, refuseDb, seconds } from "../module.ts";
import { startProgress } from "../progress.ts";
import { duration, wholeNumber } from "./options.ts";

interface DrainFlags {
  budget: number;
  queue: string[];
  concurrency?: number;
}

/** Adds `drain`. */
export function addDrainCommand(program: Command): void {
  program
    .command("drain")
    .description("run a module's due jobs until none is left or the budget is spent, then exit")
    .argument("<module>", "the module (a path from the working directory) that exports the errand instance")
    .addOption(new Option("--budget <duration>", "how long it may take").default(25_000, "25s").argParser(duration))
    .option(
      "--queue <queue>",
      "only this queue (repeatable); default: every queue it has handlers for",
      (value: string, previous: string[]) => [...previous, value],
      [],
    )
    .option("--concurrency <n>", "jobs run at once per queue; default: each queue's own", wholeNumber(1, 1000))
    .action(async (spec: string, flags: DrainFlags, command: Command) => {
      refuseDb(command, "drain");
      process.env.ERRAND_MODE ??= "enqueue";
      const out = outputOf(command);
      const { errand } = await loadErrand(spec);
      const progress = startProgress(out, "drain", flags.budget, { format: seconds });
      const started = Date.now();
      const ticker = setInterval(() => progress.update(Date.now() - started), 200);
      let report: DrainReport;
      try {
        report = await errand.drain({
          budget: flags.budget,
          queues: flags.queue.length ? flags.queue : undefined,
          concurrency: flags.concurrency,
        });
      } finally {
        clearInterval(ticker);
        progress.update(Date.now() - started);
        progress.stop();
      }
      if (out.json) return out.printJson(report);
      out.print(
        `ran ${report.ran} job${report.ran === 1 ? "" : "s"} in ${
          seconds(Date.now() - started)
        }: ${report.completed} completed, ${report.failed} failed; ${
          report.left === null ? "the count of jobs left is unknown" : `${report.left} left`
        } for the next drain`,
      );
      // The store did not answer within the budget: say which steps go on without this process waiting.
      if (report.unfinished.length) {
        out.note(`the store did not answer in time; unfinished: ${report.unfinished.join(", ")}`);
      }
    });
}
