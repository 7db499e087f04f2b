/**
 * What a command prints: for people, aligned tables (cli-table3, without
 * borders), relative times ("3m ago", "in 20s") and colours only where they
 * are seen (a TTY, unless NO_COLOR or --no-color; FORCE_COLOR forces them);
 * for machines (`--json`), one JSON document on stdout. Notes and progress
 * go to stderr, so stdout stays parseable.
 *
 * @module
 */
import process from "node:process";
import Table from "cli-table3";
import picocolors from "picocolors";
import type { JobState } from "../mod.ts";

/** The colour functions, each the identity when colours are off. */
export type Colors = ReturnType<typeof picocolors.createColors>;

/** Whether to colour what goes to a stream: never with `--no-color` or NO_COLOR, always with FORCE_COLOR, else on a TTY. */
export function colorsWanted(
  stream: { readonly isTTY?: boolean },
  flag: boolean,
  env: Record<string, string | undefined>,
): boolean {
  if (!flag || (env.NO_COLOR ?? "") !== "") return false;
  const force = env.FORCE_COLOR;
  if (force !== undefined && force !== "") return force !== "0" && force !== "false";
  return stream.isTTY === true;
}

/** Where and how a command prints. */
export class Output {
  /** Machine output: one JSON document on stdout. */
  readonly json: boolean;
  /** Colours for stdout. */
  readonly color: Colors;
  /** Colours for stderr. */
  readonly errColor: Colors;
  /** Whether stderr is a terminal (progress bars go there). */
  readonly interactive: boolean;
  /** Whether stdout is a terminal (`stats --watch` redraws it). */
  readonly screen: boolean;

  /** Output to the process's streams, with `--json` and `--color` as given. */
  constructor(options: { json: boolean; color: boolean }) {
    this.json = options.json;
    this.color = picocolors.createColors(colorsWanted(process.stdout, options.color, process.env));
    this.errColor = picocolors.createColors(colorsWanted(process.stderr, options.color, process.env));
    this.interactive = process.stderr.isTTY === true;
    this.screen = process.stdout.isTTY === true;
  }

  /** Prints `text` and a line end on stdout. */
  print(text = ""): void {
    process.stdout.write(`${text}\n`);
  }

  /** Prints `value` as indented JSON on stdout. */
  printJson(value: unknown): void {
    process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
  }

  /** Prints `value` as one line of JSON (for a stream of documents, as `stats --watch --json`). */
  printJsonLine(value: unknown): void {
    process.stdout.write(`${JSON.stringify(value)}\n`);
  }

  /** Prints a note for people on stderr. */
  note(text: string): void {
    process.stderr.write(`${text}\n`);
  }

  /** Prints what a command did: on stdout for people; nothing with `--json` (the command prints its JSON). */
  done(text: string): void {
    if (!this.json) this.print(text);
  }

  /** A section's heading. */
  heading(text: string): string {
    return this.color.bold(text);
  }

  /** `state` in its colour. */
  state(state: JobState | string): string {
    const c = this.color;
    switch (state) {
      case "failed":
        return c.red(state);
      case "completed":
        return c.green(state);
      case "running":
        return c.cyan(state);
      case "cancelled":
        return c.dim(state);
      case "waiting":
      case "scheduled":
      case "retrying":
        return c.yellow(state);
      default:
        return state;
    }
  }

  /** An aligned table with a header row; `right` names the columns aligned right (numbers). */
  table(head: readonly string[], rows: readonly (readonly string[])[], right: readonly number[] = []): string {
    return renderTable(rows, { head: head.map((h) => this.color.dim(h)), right });
  }

  /** Label and value lines, the labels aligned. */
  fields(rows: readonly (readonly [string, string])[]): string {
    return renderTable(rows.map(([label, value]) => [this.color.dim(label), value]), { head: [], right: [] });
  }
}

const NO_BORDER = {
  top: "",
  "top-mid": "",
  "top-left": "",
  "top-right": "",
  bottom: "",
  "bottom-mid": "",
  "bottom-left": "",
  "bottom-right": "",
  left: "",
  "left-mid": "",
  mid: "",
  "mid-mid": "",
  right: "",
  "right-mid": "",
  middle: "  ",
};

function renderTable(
  rows: readonly (readonly string[])[],
  options: { head: readonly string[]; right: readonly number[] },
): string {
  const width = Math.max(options.head.length, ...rows.map((r) => r.length));
  const table = new Table({
    head: [...options.head],
    chars: NO_BORDER,
    colAligns: Array.from({ length: width }, (_, i) => options.right.includes(i) ? "right" : "left"),
    style: { head: [], border: [], "padding-left": 0, "padding-right": 0, compact: true },
    wordWrap: false,
  });
  for (const row of rows) table.push([...row]);
  return table.toString().split("\n").map((line) => line.trimEnd()).join("\n");
}

/** `ms` in the largest unit that keeps it short: "850ms", "42s", "3m", "5h", "2d". */
export function shortDuration(ms: number): string {
  const abs = Math.abs(ms);
  if (abs < 1_000) return `${Math.round(abs)}ms`;
  if (abs < 60_000) return `${Math.floor(abs / 1_000)}s`;
  if (abs < 3_600_000) return `${Math.floor(abs / 60_000)}m`;
  if (abs < 172_800_000) return `${Math.floor(abs / 3_600_000)}h`;
  return `${Math.floor(abs / 86_400_000)}d`;
}

/** When `at` was or will be, from `now`: "3m ago", "in 20s", "now"; "-" for none. */
export function relative(at: Date | number | null | undefined, now: number = Date.now()): string {
  if (at === null || at === undefined) return "-";
  const ms = (typeof at === "number" ? at : at.getTime()) - now;
  if (Math.abs(ms) < 1_000) return "now";
  return ms < 0 ? `${shortDuration(ms)} ago` : `in ${shortDuration(ms)}`;
}

/** A byte count as "512 B", "1.2 MB". */
export function bytes(n: number | null): string {
  if (n === null) return "unknown";
  const units = ["B", "kB", "MB", "GB", "TB"];
  let value = n;
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit++;
  }
  return `${unit === 0 ? value : value.toFixed(1)} ${units[unit]}`;
}

/** The first line of `text`, cut to `max` characters. */
export function oneLine(text: string | null | undefined, max = 60): string {
  if (!text) return "";
  const line = text.split("\n")[0];
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}
