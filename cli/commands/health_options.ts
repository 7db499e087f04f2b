/**
 * The thresholds of the health findings as options, shared by `errand
 * doctor` and `errand stats`: `--horizon-after`, `--dead-ratio`,
 * `--dead-min`.
 *
 * @module
 */
import { type Command, InvalidArgumentError, Option } from "commander";
import type { HealthFinding, HealthOptions } from "../../mod.ts";
import type { Output } from "../output.ts";
import { HEALTH_DEFAULTS } from "../../src/observability/health.ts";
import { durationAtLeast } from "./options.ts";

/** The options as commander parses them. */
export interface HealthFlags {
  horizonAfter: number;
  deadRatio: number;
  deadMin: number;
}

/** Adds the threshold options to `command`. */
export function addHealthOptions(command: Command): Command {
  return command
    .addOption(
      new Option("--horizon-after <duration>", "a transaction holding the MVCC horizon this long is a finding")
        .default(HEALTH_DEFAULTS.horizonSeconds * 1000, "5m").argParser(durationAtLeast(1_000, "1s")),
    )
    .addOption(
      new Option("--dead-ratio <share>", "dead rows past this share of live rows (and --dead-min) are a finding")
        .default(HEALTH_DEFAULTS.deadTuplesRatio).argParser(atLeastZero),
    )
    .addOption(
      new Option("--dead-min <rows>", "dead rows past this many (and --dead-ratio) are a finding").default(
        HEALTH_DEFAULTS.deadTuplesMin,
      )
        .argParser(atLeastZero),
    );
}

/** The thresholds of `flags` as `health()` takes them. */
export function healthOptionsOf(flags: HealthFlags): HealthOptions {
  return { horizonSeconds: flags.horizonAfter / 1000, deadTuplesRatio: flags.deadRatio, deadTuplesMin: flags.deadMin };
}

/** One line per finding, with its fix on the next. */
export function renderFindings(out: Output, findings: readonly HealthFinding[]): string[] {
  const c = out.color;
  return findings.flatMap((f) => [
    `${f.severity === "error" ? c.red("error") : c.yellow("warning")} ${f.message}`,
    `  ${c.dim("fix:")} ${f.fix}`,
  ]);
}

function atLeastZero(value: string): number {
  const n = Number(value);
  if (value.trim() === "" || !Number.isFinite(n) || n < 0) throw new InvalidArgumentError("Give a number >= 0.");
  return n;
}
