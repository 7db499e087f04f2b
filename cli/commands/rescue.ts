/**
 * `errand rescue`: rescues now the running jobs whose lease expired (their
 * worker died or hung), as maintenance does every few seconds on instances
 * in mode "work" (`errand.rescueExpired()`): each is retried at once, or
 * fails when its attempts are used up.
 *
 * @module
 */
import type { Command } from "commander";
import { outputOf } from "../context.ts";
import { withErrand } from "../session.ts";

/** Adds `rescue`. */
export function addRescueCommand(program: Command): void {
  program
    .command("rescue")
    .description("retry now the running jobs whose lease expired (their worker died or hung)")
    .action(async (_flags: unknown, command: Command) => {
      const out = outputOf(command);
      await withErrand(command, async (errand) => {
        const rescued = await errand.rescueExpired();
        if (out.json) out.printJson({ rescued });
        else out.print(`rescued ${rescued} job${rescued === 1 ? "" : "s"} whose lease expired`);
      });
    });
}
