/**
 * `errand work <module> [--drain 10s]` runs the errand instance the module
 * exports, in mode "work", until SIGTERM or SIGINT, then shuts it down
 * with a graceful drain: claiming stops, running jobs get `--drain` to
 * finish, and those still running then go back to available with the
 * attempt not counted. A second signal ends the drain at once: running jobs
 * go back to available (their attempt not counted) and it exits with 1; a
 * third exits without waiting for the store.
 *
 * The module opens its own store: `--db` is not used. Before importing it,
 * ERRAND_MODE is set to "work" (unless set already), for a module that
 * picks its mode from it.
 *
 * @module
 */
import process from "node:process";
import { type Command, Option } from "commander";
import { outputOf } from "../context.ts";
import { CommandFailure, UsageError } from "../failures.ts";
import { loadErrand, refuseDb, seconds } from "../module.ts";
import { stopSignals } from "../signals.ts";
import { duration } from "./options.ts";

/** Adds `work`. */
export function addWorkCommand(program: Command): void {
  program
    .command("work")
    .description('run the errand instance a module exports, in mode "work", until SIGTERM or SIGINT (then drain)')
    .argument("<module>", "the module (a path from the working directory) that exports the errand instance")
    .addOption(
      new Option("--drain <duration>", "at a stop signal, how long running jobs may take to finish")
        .default(10_000, "10s")
        .argParser(duration),
    )
    .action(async (spec: string, flags: { drain: number }, command: Command) => {
      refuseDb(command, "work");
      process.env.ERRAND_MODE ??= "work";
      const out = outputOf(command);
      const { errand, name } = await loadErrand(spec);
      if (errand.mode !== "work") {
        throw new UsageError(
          `The errand "${name}" of "${spec}" is in mode "${errand.mode}"; errand work runs an instance created with mode: "work" (or mode: process.env.ERRAND_MODE, which errand work sets to "work")`,
        );
      }
      let forced = 0;
      const stop = stopSignals((signal) => {
        // A third signal does not wait for the store: the leases of jobs still running then lapse on their own.
        if (++forced > 1) process.exit(1);
        out.note(`errand: ${signal} again: stopping now; running jobs go back to available (again to exit at once)`);
        // The first shutdown() call reports a failure to stop; this one only shortens its drain.
        errand.shutdown({ drain: 0 }).catch(() => {});
      });
      try {
        await errand.start();
        const queues = errand.limits().queues;
        out.note(
          `errand: working ${
            queues.map((q) => `${q.queue}${q.concurrency ? ` (${q.concurrency} at once)` : ""}`).join(", ") ||
            "no queue"
          } from ${spec}, pid ${process.pid}; SIGTERM or Ctrl-C drains and stops`,
        );
        if (out.json) out.printJsonLine({ event: "started", pid: process.pid, queues });
        const signal = await stop.stopped;
        out.note(`errand: ${signal}: no new claims; running jobs have ${seconds(flags.drain)} to finish`);
        await errand.shutdown({ drain: flags.drain });
        if (forced > 0) {
          throw new CommandFailure("Stopped by a second signal: jobs still running went back to available");
        }
        out.note("errand: stopped");
        if (out.json) out.printJsonLine({ event: "stopped", signal });
      } finally {
        stop.dispose();
      }
    });
}
