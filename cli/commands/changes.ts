/**
 * `errand retry|cancel|delete <id>`, and the same for every job a filter
 * matches: `--state` (required) with `--queue`, `--kind`, `--before`,
 * `--after`. A bulk change runs `retryMany`/`cancelMany`/`deleteMany`,
 * which work in batches; its progress is read from the count of jobs left
 * in `--state` (of `--queue`), so with `--kind`, `--before` or `--after` it
 * shows an upper bound.
 *
 * @module
 */
import type { Command } from "commander";
import type { BulkFilter, BulkResult, JobInfo, JobState } from "../../mod.ts";
import { globalOptions, outputOf } from "../context.ts";
import { UsageError } from "../failures.ts";
import { startProgress } from "../progress.ts";
import { type OperatorErrand, withErrand } from "../session.ts";
import { pointInTime, stateOption } from "./options.ts";

interface ChangeFlags {
  state?: JobState;
  queue?: string;
  kind?: string;
  before?: Date;
  after?: Date;
}

/** One change: its command, its words, and the single and bulk calls. */
interface Change {
  readonly name: "retry" | "cancel" | "delete";
  readonly summary: string;
  /** The past tense, for what it did. */
  readonly done: string;
  /** Which states it takes, for the help. */
  readonly states: string;
  one(errand: OperatorErrand, id: string): Promise<JobInfo | null>;
  many(errand: OperatorErrand, filter: BulkFilter): Promise<BulkResult>;
}

const CHANGES: readonly Change[] = [
  {
    name: "retry",
    summary: "run a job again now, or every job a filter matches",
    done: "retried",
    states: "failed, cancelled, completed, scheduled or retrying",
    one: (errand, id) => errand.retry(id),
    many: (errand, filter) => errand.retryMany(filter),
  },
  {
    name: "cancel",
    summary: "cancel a job that has not finished, or every job a filter matches",
    done: "cancelled",
    states: "scheduled, retrying, available or waiting (running too, for one job by id)",
    one: (errand, id) => errand.cancel(id),
    many: (errand, filter) => errand.cancelMany(filter),
  },
  {
    name: "delete",
    summary: "delete a job that is not running, or every job a filter matches",
    done: "deleted",
    states: "any state but running",
    one: async (errand, id) => {
      await errand.delete(id);
      return null;
    },
    many: (errand, filter) => errand.deleteMany(filter),
  },
];

/** Adds `retry`, `cancel` and `delete`. */
export function addChangeCommands(program: Command): void {
  for (const change of CHANGES) {
    program
      .command(change.name)
      .description(change.summary)
      .argument("[id]", "the job's id")
      .addOption(stateOption(`every job in this state (${change.states})`))
      .option("--queue <queue>", "with --state: only jobs on this queue")
      .option("--kind <kind>", "with --state: only jobs of this kind")
      .option(
        "--before <time>",
        'with --state: only jobs created before this time (ISO date, or "7d" ago)',
        pointInTime,
      )
      .option("--after <time>", "with --state: only jobs created at or after this time", pointInTime)
      .action(async (id: string | undefined, flags: ChangeFlags, command: Command) => {
        const filters = (["queue", "kind", "before", "after"] as const).filter((f) => flags[f] !== undefined);
        if (id !== undefined && (flags.state !== undefined || filters.length > 0)) {
          throw new UsageError(
            `${change.name} takes a job id or a filter (--state with --queue, --kind, --before, --after), not both: drop the id or the filter`,
          );
        }
        if (id === undefined && flags.state === undefined) {
          throw new UsageError(
            filters.length > 0
              ? `${change.name} with ${
                filters.map((f) => `--${f}`).join(", ")
              } needs --state too (${change.states}), so that no state is changed by accident`
              : `${change.name} needs a job id, or --state (${change.states}) with --queue, --kind, --before or --after for every job that matches`,
          );
        }
        if (id !== undefined) await changeOne(command, change, id);
        else await changeMany(command, change, { ...flags, state: flags.state! });
      });
  }
}

async function changeOne(command: Command, change: Change, id: string): Promise<void> {
  const out = outputOf(command);
  await withErrand(command, async (errand) => {
    const job = await change.one(errand, id);
    if (out.json) return out.printJson(job ?? { id, deleted: true });
    out.print(job ? `${change.done} ${id}: now ${out.state(job.state)}` : `${change.done} ${id}`);
  });
}

async function changeMany(command: Command, change: Change, filter: BulkFilter): Promise<void> {
  const out = outputOf(command);
  const namespace = globalOptions(command).namespace;
  await withErrand(command, async (errand) => {
    const left = async () => {
      const counts = await errand.counts();
      return filter.queue === undefined
        ? counts.byState[filter.state]
        : counts.byQueue[filter.queue]?.[filter.state] ?? 0;
    };
    const total = await left();
    const narrowed = filter.kind !== undefined || filter.before !== undefined || filter.after !== undefined;
    const progress = startProgress(out, `${change.name}`, total, { unit: narrowed ? "jobs at most" : "jobs" });
    let running = true;
    const watching = (async () => {
      while (running) {
        await new Promise((resolve) => setTimeout(resolve, 250));
        if (running) progress.update(Math.max(0, total - await left().catch(() => total)));
      }
    })();
    let result: BulkResult;
    try {
      result = await change.many(errand, filter);
      progress.update(narrowed ? total : result.count);
    } finally {
      running = false;
      await watching;
      progress.stop();
    }
    if (result.count === 0) { for (const note of await unknownNames(errand, filter, namespace)) out.note(note); }
    if (out.json) return out.printJson(result);
    const where = [
      `state ${filter.state}`,
      filter.queue && `queue ${filter.queue}`,
      filter.kind && `kind ${filter.kind}`,
      filter.before && `created before ${filter.before.toISOString()}`,
      filter.after && `created after ${filter.after.toISOString()}`,
    ].filter(Boolean).join(", ");
    out.print(`${change.done} ${result.count} job${result.count === 1 ? "" : "s"} (${where})`);
  });
}

/**
 * When a filter matched nothing: what its `--kind` or `--queue` names that
 * no job in the namespace has, in any state (a typo, most likely), so that it
 * is not a silent "0 jobs". Job kinds are not registered anywhere the command
 * line can read, so it cannot list the known ones; it lists the queues that
 * have jobs.
 */
async function unknownNames(errand: OperatorErrand, filter: BulkFilter, namespace: string): Promise<string[]> {
  const notes: string[] = [];
  if (filter.kind !== undefined && (await errand.list({ kind: filter.kind, limit: 1 })).jobs.length === 0) {
    notes.push(
      `No job of kind "${filter.kind}" exists in namespace "${namespace}", in any state; check --kind (errand list shows the jobs and their kinds)`,
    );
  }
  if (filter.queue !== undefined) {
    const queues = Object.keys((await errand.counts()).byQueue).sort();
    if (!queues.includes(filter.queue)) {
      notes.push(
        `No job is on queue "${filter.queue}" in namespace "${namespace}"; the queues with jobs: ${
          queues.join(", ") || "none"
        }`,
      );
    }
  }
  return notes;
}
