/**
 * `errand pause <queue>` and `errand resume <queue>`: every worker of the
 * namespace stops (or starts again) claiming the queue's jobs; jobs
 * already running finish.
 *
 * @module
 */
import type { Command } from "commander";
import { outputOf } from "../context.ts";
import { withErrand } from "../session.ts";

/** Adds `pause` and `resume`. */
export function addQueueCommands(program: Command): void {
  program
    .command("pause")
    .description("stop every worker from claiming a queue's jobs (running jobs finish)")
    .argument("<queue>", "the queue")
    .action(async (queue: string, _flags: unknown, command: Command) => {
      const out = outputOf(command);
      await withErrand(command, async (errand) => {
        await errand.pauseQueue(queue);
        if (out.json) out.printJson({ queue, paused: true, pausedQueues: await errand.pausedQueues() });
        else out.print(`paused queue "${queue}": its jobs wait until errand resume ${queue}`);
      });
    });

  program
    .command("resume")
    .description("let workers claim a paused queue's jobs again")
    .argument("<queue>", "the queue")
    .action(async (queue: string, _flags: unknown, command: Command) => {
      const out = outputOf(command);
      await withErrand(command, async (errand) => {
        await errand.resumeQueue(queue);
        if (out.json) out.printJson({ queue, paused: false, pausedQueues: await errand.pausedQueues() });
        else out.print(`resumed queue "${queue}"`);
      });
    });
}
