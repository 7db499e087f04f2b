/**
 * `errand events [--event <name>]` counts the workflows waiting on events,
 * by event name; `errand send-event <name> [--key --data --id]` sends one,
 * resuming the workflows waiting on its name and key (an operator answering
 * a stuck approval).
 *
 * @module
 */
import { type Command, InvalidArgumentError } from "commander";
import { outputOf } from "../context.ts";
import { withErrand } from "../session.ts";

interface SendFlags {
  key?: string;
  data?: unknown;
  id?: string;
}

/** Adds `events` and `send-event`. */
export function addEventCommands(program: Command): void {
  program
    .command("events")
    .description("the workflows waiting on events (job.waitForEvent), by event name")
    .option("--event <name>", "only this event")
    .action(async (flags: { event?: string }, command: Command) => {
      const out = outputOf(command);
      await withErrand(command, async (errand) => {
        const waits = await errand.eventWaits(flags.event);
        if (out.json) return out.printJson(waits);
        if (waits.length === 0) return out.print(out.color.dim("no workflow waits for an event"));
        out.print(out.table(["event", "waiting"], waits.map((w) => [w.event, String(w.jobs)]), [1]));
      });
    });

  program
    .command("send-event")
    .description("send a workflow event: resumes every workflow waiting on its name and key, with its data")
    .argument("<name>", "the event's name")
    .option("--key <key>", "which waits it answers: those with this key", "")
    .option("--data <json>", "what the workflows resume with, as JSON (default null)", json)
    .option("--id <id>", "an idempotency key: a second send with the same id does nothing")
    .action(async (name: string, flags: SendFlags, command: Command) => {
      const out = outputOf(command);
      await withErrand(command, async (errand) => {
        const sent = await errand.sendEvent(name, { key: flags.key, data: flags.data, id: flags.id });
        if (out.json) return out.printJson(sent);
        const key = flags.key ? ` (key ${flags.key})` : "";
        if (sent.duplicate) out.print(`event ${sent.id} was sent before: nothing done`);
        else {out.print(
            `sent ${name}${key} as ${sent.id}: resumed ${sent.resumed} workflow${sent.resumed === 1 ? "" : "s"}`,
          );}
      });
    });
}

/** `--data`: a JSON value. */
function json(value: string): unknown {
  try {
    return JSON.parse(value);
  } catch {
    throw new InvalidArgumentError(`Give JSON, such as '{"approved":true}', '"yes"' or 42.`);
  }
}
