/**
 * `errand stats [--watch] [--minutes 1|5|60] [--topic name:partitions]`:
 * jobs by state and queue, paused queues, throughput and dispatch wait over
 * the window, the live workers, the recurring jobs and the topics named,
 * and first the database's health findings with their fixes (as `errand doctor`);
 * with `--watch`, again every `--interval` until SIGINT or SIGTERM (one
 * JSON line each with `--json`).
 *
 * @module
 */
import { type Command, InvalidArgumentError, Option } from "commander";
import {
  type ErrandStats,
  type HealthFinding,
  JOB_STATES,
  type JobCounts,
  type ScheduleInfo,
  STATS_MINUTES,
  type StatsMinutes,
  type TopicInfo,
} from "../../mod.ts";
import { globalOptions, outputOf } from "../context.ts";
import { bytes, type Output, relative, shortDuration } from "../output.ts";
import { withErrand } from "../session.ts";
import { sleep, stopSignals } from "../signals.ts";
import { addHealthOptions, type HealthFlags, healthOptionsOf, renderFindings } from "./health_options.ts";
import { durationAtLeast, topicOption } from "./options.ts";

/** What `stats` shows, as `--json` prints it. */
export interface StatsReport {
  readonly at: Date;
  readonly namespace: string;
  readonly jobs: JobCounts;
  readonly paused: readonly string[];
  readonly throughput: {
    readonly windowMs: number;
    readonly enqueued: number;
    readonly started: number;
    readonly attempts: number;
    readonly completed: number;
    readonly failed: number;
    readonly cancelled: number;
  };
  readonly dispatchWait: ErrandStats["dispatchWait"];
  readonly workers: ErrandStats["workers"];
  readonly schedules: readonly ScheduleInfo[];
  readonly topics: readonly TopicInfo[];
  readonly storageBytes: number | null;
  readonly databaseBytes: number | null;
  /** The database's health findings (`errand doctor` lists the same), each with its fix. */
  readonly findings: readonly HealthFinding[];
}

interface StatsOptions extends HealthFlags {
  watch?: boolean;
  interval: number;
  minutes: StatsMinutes;
  topic: Record<string, { partitions: number }>;
}

/** Adds `stats`. */
export function addStatsCommand(program: Command): void {
  addHealthOptions(program
    .command("stats"))
    .description("counts by state and queue, throughput, workers, schedules and topics")
    .option("--watch", "show them again every --interval until Ctrl-C")
    .addOption(
      new Option("--interval <duration>", "with --watch: how often (at least 100ms)").default(2_000, "2s").argParser(
        durationAtLeast(100, "100ms"),
      ),
    )
    .addOption(
      new Option("--minutes <n>", "the throughput window: 1, 5 or 60 minutes").default(1).argParser(windowMinutes),
    )
    .addOption(topicOption())
    .action(async (options: StatsOptions, command: Command) => {
      const out = outputOf(command);
      const namespace = globalOptions(command).namespace;
      await withErrand(command, async (errand, url) => {
        const read = async (): Promise<StatsReport> => {
          const [jobs, paused, stats, schedules, topics, health] = await Promise.all([
            errand.counts(),
            errand.pausedQueues(),
            errand.stats({ minutes: options.minutes }),
            errand.schedules(),
            errand.topics(),
            errand.health(healthOptionsOf(options)),
          ]);
          const sum = (what: "enqueued" | "started" | "attempts" | "completed" | "failed" | "cancelled") =>
            stats.throughput.reduce((n, bucket) => n + bucket[what], 0);
          return {
            at: stats.at,
            namespace,
            jobs,
            paused,
            throughput: {
              windowMs: stats.windowMs,
              enqueued: sum("enqueued"),
              started: sum("started"),
              attempts: sum("attempts"),
              completed: sum("completed"),
              failed: sum("failed"),
              cancelled: sum("cancelled"),
            },
            dispatchWait: stats.dispatchWait,
            workers: stats.workers,
            schedules,
            topics,
            storageBytes: stats.storageBytes,
            databaseBytes: stats.databaseBytes,
            findings: health.findings,
          };
        };
        if (!options.watch) {
          const report = await read();
          if (out.json) out.printJson(report);
          else out.print(renderStats(out, report, url.shown));
          return;
        }
        const stop = stopSignals(() => {});
        try {
          while (!stop.signal.aborted) {
            const report = await read();
            if (out.json) out.printJsonLine(report);
            else if (out.screen) out.print(`\x1b[2J\x1b[H${renderStats(out, report, url.shown)}`);
            else out.print(`${renderStats(out, report, url.shown)}\n`);
            await sleep(options.interval, stop.signal);
          }
        } finally {
          stop.dispose();
        }
      }, { topics: options.topic });
    });
}

/** The human form of `report`. */
export function renderStats(out: Output, report: StatsReport, database: string): string {
  const now = report.at.getTime();
  const c = out.color;
  const lines: string[] = [];
  lines.push(
    `${c.bold("errand")} ${c.dim(`namespace "${report.namespace}" on ${database}, ${report.at.toISOString()}`)}`,
  );
  if (report.findings.length > 0) lines.push("", out.heading("Health"), ...renderFindings(out, report.findings));
  lines.push("", out.heading("Jobs"));
  const paused = new Set(report.paused);
  const queues = [...new Set([...Object.keys(report.jobs.byQueue), ...paused])].sort();
  const row = (name: string, counts: Readonly<Record<string, number>> | undefined) => [
    name,
    ...JOB_STATES.map((s) => String(counts?.[s] ?? 0)),
  ];
  lines.push(out.table(
    ["queue", ...JOB_STATES.map((s) => out.state(s))],
    [
      row(c.bold("all queues"), report.jobs.byState),
      ...queues.map((q) => row(paused.has(q) ? `${q} ${c.yellow("(paused)")}` : q, report.jobs.byQueue[q])),
    ],
    JOB_STATES.map((_, i) => i + 1),
  ));
  for (const u of report.jobs.unhandled) {
    lines.push(c.yellow(`${u.count} available ${u.kind}@${u.version} on "${u.queue}": no live worker has its handler`));
  }
  const t = report.throughput;
  const seconds = t.windowMs / 1000;
  lines.push("", out.heading(`Throughput, last ${shortDuration(t.windowMs)}`));
  lines.push(out.table(
    ["enqueued", "started", "attempts", "completed", "failed", "cancelled", "completed/s"],
    [[
      String(t.enqueued),
      String(t.started),
      String(t.attempts),
      String(t.completed),
      String(t.failed),
      String(t.cancelled),
      (t.completed / seconds).toFixed(1),
    ]],
    [0, 1, 2, 3, 4, 5, 6],
  ));
  const wait = report.dispatchWait.regular;
  if (wait.count > 0) {
    lines.push(
      `dispatch wait: ${ms(wait.avgMs)} average, ${ms(wait.maxMs)} at most (${wait.count} started)`,
    );
  }
  lines.push("", out.heading(`Workers (${report.workers.length} live)`));
  if (report.workers.length === 0) lines.push(c.dim("no live worker: start one with errand work <module>"));
  else {
    lines.push(out.table(
      ["id", "queues (busy/slots)", "kinds", "started", "last beat"],
      report.workers.map((w) => [
        w.id,
        w.queues.map((q) => `${q.queue} ${q.busy}/${q.slots}`).join(", "),
        String(w.kinds.length),
        relative(w.startedAt, now),
        relative(w.beatAt, now),
      ]),
      [2],
    ));
  }
  lines.push("", out.heading(`Schedules (${report.schedules.length})`));
  if (report.schedules.length > 0) {
    lines.push(out.table(
      ["id", "kind", "queue", "schedule", "next", "last"],
      report.schedules.map((s) => [
        s.id,
        s.kind,
        s.queue,
        // An interval counts elapsed time: no time zone applies.
        `${s.cron}${s.every !== null || s.timezone === "UTC" ? "" : ` (${s.timezone})`}`,
        relative(s.nextRunAt, now),
        relative(s.lastRunAt, now),
      ]),
    ));
  }
  if (report.topics.length > 0) {
    lines.push("", out.heading("Topics"));
    lines.push(out.table(
      ["topic", "partitions", "unfinished", "active partitions", "oldest head waits"],
      report.topics.map((t) => [
        t.topic,
        String(t.partitions),
        String(t.depth),
        String(t.activePartitions),
        t.oldestHeadAgeMs > 0 ? shortDuration(t.oldestHeadAgeMs) : "-",
      ]),
      [1, 2, 3, 4],
    ));
  }
  lines.push(
    "",
    `${c.dim("storage")} ${bytes(report.storageBytes)}, ${c.dim("database")} ${bytes(report.databaseBytes)}`,
  );
  return lines.join("\n");
}

function ms(value: number | null): string {
  return value === null ? "-" : `${Math.round(value)} ms`;
}

function windowMinutes(value: string): StatsMinutes {
  const n = Number(value);
  if (!STATS_MINUTES.includes(n as StatsMinutes)) throw new InvalidArgumentError("Give 1, 5 or 60.");
  return n as StatsMinutes;
}
