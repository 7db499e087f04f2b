/**
 * Progress of a long operation (a bulk change, a migration, a drain): a bar
 * (cli-progress) on stderr when it is a terminal, and plain lines when it is
 * piped, at most one a second and one at the end, so a log gets a few lines
 * and no control characters.
 *
 * @module
 */
import process from "node:process";
import cliProgress from "cli-progress";
import type { Output } from "./output.ts";

/** A running progress report. */
export interface Progress {
  /** Sets how far it is (0 to the total), with an optional word on what it does now. */
  update(value: number, detail?: string): void;
  /** Ends the report; a bar stays on screen at its last value. Safe to call twice. */
  stop(): void;
}

/** How often piped progress prints a line. */
const LINE_EVERY_MS = 1_000;

/**
 * Starts a progress report of `label` towards `total` (in `unit`s); `format`
 * shows a value (such as seconds as "12s").
 */
export function startProgress(
  out: Output,
  label: string,
  total: number,
  options: { unit?: string; format?: (value: number) => string } = {},
): Progress {
  const format = options.format ?? String;
  const unit = options.unit ? ` ${options.unit}` : "";
  if (out.interactive) {
    const bar = new cliProgress.SingleBar({
      stream: process.stderr,
      format: `${label} {bar} {percentage}% | {shown}/{goal}${unit} {detail}`,
      barsize: 30,
      hideCursor: true,
      clearOnComplete: false,
      stopOnComplete: false,
      fps: 10,
    }, cliProgress.Presets.shades_classic);
    bar.start(Math.max(total, 1), 0, { shown: format(0), goal: format(total), detail: "" });
    let stopped = false;
    return {
      update(value, detail = "") {
        if (!stopped) bar.update(Math.min(value, total), { shown: format(Math.min(value, total)), detail });
      },
      stop() {
        if (stopped) return;
        stopped = true;
        bar.stop();
      },
    };
  }
  let printed = -1;
  let last = 0;
  let latest = 0;
  let latestDetail = "";
  let stopped = false;
  const line = (value: number, detail: string) => {
    out.note(`${label}: ${format(value)}/${format(total)}${unit}${detail ? ` ${detail}` : ""}`);
    printed = value;
    last = Date.now();
  };
  line(0, "");
  return {
    update(value, detail = "") {
      if (stopped) return;
      latest = Math.min(value, total);
      latestDetail = detail;
      if (latest !== printed && Date.now() - last >= LINE_EVERY_MS) line(latest, detail);
    },
    stop() {
      if (stopped) return;
      stopped = true;
      if (latest !== printed) line(latest, latestDetail);
    },
  };
}
