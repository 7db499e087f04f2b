/**
 * `errand list [--state --queue --kind --topic --limit --cursor]` and
 * `errand get <id>`: a page of jobs, newest first, and one job with its
 * runs, steps (a workflow's), what it waits for, parents and children.
 *
 * @module
 */
import { type Command, Option } from "commander";
import type { JobDetails, JobInfo, JobState, StepInfo, WaitingFor } from "../../mod.ts";
import { globalOptions, outputOf } from "../context.ts";
import { CommandFailure } from "../failures.ts";
import { oneLine, type Output, relative, shortDuration } from "../output.ts";
import { withErrand } from "../session.ts";
import { stateOption, wholeNumber } from "./options.ts";

interface ListFlags {
  state?: JobState;
  queue?: string;
  kind?: string;
  topic?: string;
  limit: number;
  cursor?: string;
}

/** Adds `list` and `get`. */
export function addJobCommands(program: Command): void {
  program
    .command("list")
    .description("a page of jobs, newest first")
    .addOption(stateOption("only jobs in this state"))
    .option("--queue <queue>", "only jobs on this queue")
    .option("--kind <kind>", "only jobs of this kind")
    .option("--topic <topic>", "only jobs of this topic")
    .addOption(new Option("--limit <n>", "jobs per page, 1 to 1000").default(50).argParser(wholeNumber(1, 1000)))
    .option("--cursor <cursor>", "the next page: the cursor the previous page printed")
    .action(async (flags: ListFlags, command: Command) => {
      const out = outputOf(command);
      await withErrand(command, async (errand) => {
        const page = await errand.list({
          state: flags.state,
          queue: flags.queue,
          kind: flags.kind,
          topic: flags.topic,
          limit: flags.limit,
          cursor: flags.cursor,
        });
        if (out.json) return out.printJson(page);
        if (page.jobs.length === 0) return out.print(out.color.dim("no jobs match"));
        out.print(renderList(out, page.jobs));
        if (page.cursor) out.print(out.color.dim(`next page: errand list ... --cursor ${page.cursor}`));
      });
    });

  program
    .command("get")
    .description("one job: its state, payload, result, runs, steps, what it waits for, parents and children")
    .argument("<id>", "the job's id")
    .action(async (id: string, _flags: unknown, command: Command) => {
      const out = outputOf(command);
      await withErrand(command, async (errand) => {
        const job = await errand.get(id);
        if (!job) {
          throw new CommandFailure(
            `There is no job "${id}" in namespace "${
              globalOptions(command).namespace
            }"; check the id (errand list shows them) and --namespace`,
          );
        }
        if (out.json) out.printJson(job);
        else out.print(renderJob(out, job));
      });
    });
}

/** A table of jobs. */
export function renderList(out: Output, jobs: readonly JobInfo[], now = Date.now()): string {
  return out.table(
    ["id", "kind", "queue", "state", "attempt", "created", "runs at", "last error"],
    jobs.map((job) => [
      job.id,
      job.kind,
      job.queue,
      out.state(job.state),
      `${job.attempt}/${job.maxAttempts}`,
      relative(job.createdAt, now),
      job.finishedAt ? "-" : relative(job.runAt, now),
      out.color.red(oneLine(job.runs.at(-1)?.error?.message ?? job.reason, 50)),
    ]),
    [4],
  );
}

/** One job in full. */
export function renderJob(out: Output, job: JobDetails, now = Date.now()): string {
  const when = (at: Date | null) => at ? `${relative(at, now)} ${out.color.dim(`(${at.toISOString()})`)}` : "-";
  const fields: [string, string][] = [
    ["id", job.id],
    ["kind", `${job.kind}@${job.version}`],
    ["queue", job.queue],
    ["state", out.state(job.state)],
    ["attempt", `${job.attempt} of ${job.maxAttempts}`],
    ["priority", String(job.priority)],
    ["created", when(job.createdAt)],
    ["runs at", when(job.runAt)],
    ["started", when(job.startedAt)],
    ["finished", when(job.finishedAt)],
  ];
  if (job.topic !== null) fields.push(["topic", `${job.topic}, partition ${job.partition}, seq ${job.seq}`]);
  if (job.group !== null) fields.push(["group", job.group]);
  if (job.reason) fields.push(["reason", job.reason]);
  if (job.waitingFor) fields.push(["waiting for", waitingText(job.waitingFor, now)]);
  if (job.progress !== null && job.progress !== undefined) fields.push(["progress", json(job.progress)]);
  fields.push(["payload", json(job.payload)]);
  if (job.result !== undefined) fields.push(["result", json(job.result)]);
  if (job.parents.length) fields.push(["parents", job.parents.join(", ")]);
  if (job.children.length) fields.push(["children", job.children.join(", ")]);
  const lines = [out.fields(fields)];
  lines.push("", out.heading(`Runs (${job.runs.length})`));
  if (job.runs.length > 0) {
    lines.push(out.table(
      ["attempt", "started", "took", "outcome", "error"],
      job.runs.map((run) => [
        String(run.attempt),
        relative(run.startedAt, now),
        run.durationMs === null ? "running" : shortDuration(run.durationMs),
        out.state(run.outcome),
        out.color.red(oneLine(run.error ? `${run.error.name}: ${run.error.message}` : run.note, 70)),
      ]),
      [0, 2],
    ));
  }
  if (job.steps.length > 0) {
    lines.push("", out.heading(`Steps (${job.steps.length})`));
    lines.push(out.table(
      ["step", "type", "state", "attempt", "started", "took", "detail"],
      job.steps.map((step) => [
        step.name,
        step.type,
        out.state(step.state),
        String(step.attempt),
        relative(step.startedAt, now),
        step.durationMs === null ? "waiting" : shortDuration(step.durationMs),
        step.error ? out.color.red(oneLine(`${step.error.name}: ${step.error.message}`, 70)) : stepDetail(step, now),
      ]),
      [3, 5],
    ));
  }
  return lines.join("\n");
}

/** What a waiting workflow waits for, in a few words. */
function waitingText(waiting: WaitingFor, now: number): string {
  if (waiting.type === "job") return `child job ${waiting.id}`;
  const key = waiting.key ? ` key ${JSON.stringify(waiting.key)}` : "";
  const until = waiting.timeoutAt ? `, times out ${relative(waiting.timeoutAt, now)}` : "";
  return `event ${waiting.event}${key}${until}`;
}

/** What only a sleep, an invoke or an event wait has: its wake time, child, or event and timeout. */
function stepDetail(step: StepInfo, now: number): string {
  if (step.type === "sleep") return `wakes ${relative(step.wakeAt, now)}`;
  if (step.type === "invoke") return `child ${step.childId ?? "-"}`;
  if (step.type !== "event" || !step.event) return "";
  const key = step.event.key ? ` key ${JSON.stringify(step.event.key)}` : "";
  return `event ${step.event.name}${key}${step.wakeAt ? `, timeout ${relative(step.wakeAt, now)}` : ""}`;
}

function json(value: unknown): string {
  const text = JSON.stringify(value);
  return text === undefined ? String(value) : oneLine(text, 200);
}
