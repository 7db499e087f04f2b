/**
 * `npm run chaos`: runs the chaos scenarios (chaos/scenarios/, with what
 * they share in chaos/harness/) on libSQL
 * (a file), SQLite (sqliteStore on the runtime's own driver, a file) and PostgreSQL (DATABASE_URL), prints one JSON line per scenario
 * and store with its figures, then a table, and exits 1 when a figure broke
 * its rule. Arguments: scenario names to run only those, `--quick` for the
 * short form CI runs, `--store libsql|sqlite|postgres` for one store, `--help` for
 * the usage; any other option is refused (exit 2) before anything runs.
 */
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import process from "node:process";
import type { Figures, Scenario } from "./harness/scenario.ts";
import { openDatabase, type StoreName, unavailable } from "../tests/support/scratch_database.ts";

const STORES: readonly StoreName[] = ["libsql", "sqlite", "postgres"];
/** The stores as a sentence names them: "libsql, sqlite or postgres". */
const STORES_TEXT = `${STORES.slice(0, -1).join(", ")} or ${STORES.at(-1)}`;
const scenarios: Scenario[] = [];
// A scenario is a file of chaos/scenarios/, or a folder there whose mod.ts is its entry.
for (const entry of readdirSync(new URL("./scenarios/", import.meta.url), { withFileTypes: true })) {
  if (entry.isDirectory()) scenarios.push((await import(`./scenarios/${entry.name}/mod.ts`)).scenario);
  else if (entry.name.endsWith(".ts")) scenarios.push((await import(`./scenarios/${entry.name}`)).scenario);
}
scenarios.sort((a, b) => a.name < b.name ? -1 : 1);
const USAGE = `Usage: npm run chaos -- [scenario ...] [--quick] [--store ${STORES.join("|")}]

Runs the chaos scenarios (all of them, or those named) and exits 1 when one breaks a rule.
  --quick           the short form CI runs
  --store <store>   only on this store (${STORES_TEXT})
  -h, --help        this help

Scenarios:
${scenarios.map((s) => `  ${s.name.padEnd(24)}${s.summary}`).join("\n")}`;

const args = process.argv.slice(2);
let quick = false;
let onlyStore: StoreName | undefined;
const names: string[] = [];
for (let i = 0; i < args.length; i++) {
  const arg = args[i];
  if (arg === "--help" || arg === "-h") {
    console.log(USAGE);
    process.exit(0);
  } else if (arg === "--quick") quick = true;
  else if (arg === "--store") {
    const store = args[++i];
    if (!STORES.includes(store as StoreName)) usageError(`--store takes ${STORES_TEXT}, not "${store ?? ""}"`);
    onlyStore = store as StoreName;
  } else if (arg.startsWith("-")) usageError(`Unknown option "${arg}"`);
  else names.push(arg);
}
const unknown = names.filter((n) => !scenarios.some((s) => s.name === n));
if (unknown.length) {
  console.error(
    `Unknown scenario ${unknown.join(", ")}; the scenarios are: ${scenarios.map((s) => s.name).join(", ")}`,
  );
  process.exit(2);
}

/** One result: a scenario on a store (printed with its figures inline). */
interface Line {
  scenario: string;
  store: StoreName;
  harness?: string;
  seconds?: number;
  ok: boolean;
  broken?: string[];
  skipped?: string;
  error?: string;
  figures: Figures;
}

const print = ({ figures, ...line }: Line) => console.log(JSON.stringify({ ...line, ...figures }));

const lines: Line[] = [];
for (const scenario of scenarios.filter((s) => !names.length || names.includes(s.name))) {
  for (const store of scenario.stores.filter((s) => !onlyStore || s === onlyStore)) {
    const base = { scenario: scenario.name, store, harness: scenario.harness?.join(" ") };
    const why = (quick && !names.includes(scenario.name) && scenario.shortFormTest &&
      `npm test runs its short form: ${scenario.shortFormTest}`) ||
      unavailable(store);
    if (why) {
      lines.push({ ...base, ok: true, skipped: why, figures: {} });
      print(lines.at(-1)!);
      continue;
    }
    const dir = mkdtempSync(`${tmpdir()}/errand-chaos-`);
    const db = openDatabase(store, dir);
    const started = performance.now();
    const note = (message: string) =>
      console.error(`[${scenario.name} ${store} +${secondsSince(started)}s] ${message}`);
    let line: Line;
    try {
      const { figures, checks } = await scenario.run({ db, quick, dir, note });
      const broken = checks.filter((c) => !c.ok).map((c) => c.rule);
      line = { ...base, figures, seconds: secondsSince(started), ok: broken.length === 0, broken };
    } catch (err) {
      line = {
        ...base,
        figures: {},
        seconds: secondsSince(started),
        ok: false,
        error: String((err as Error)?.stack ?? err),
      };
    } finally {
      await db.close().catch(() => {});
    }
    // A broken run's files (its run logs, its libSQL database) stay for a look; a kept run's go.
    if (line.ok) rmSync(dir, { recursive: true, force: true });
    else note(`its files are kept in ${dir}`);
    lines.push(line);
    print(line);
  }
}

console.log(table(lines));
const failed = lines.filter((l) => !l.ok);
console.log(
  `chaos: ${lines.length - failed.length} of ${lines.length} scenario runs kept every rule` +
    (failed.length ? `; broken: ${failed.map((l) => `${l.scenario} on ${l.store}`).join(", ")}` : ""),
);
process.exit(failed.length ? 1 : 0);

function usageError(message: string): never {
  console.error(`${message}\n\n${USAGE}`);
  process.exit(2);
}

function secondsSince(start: number): number {
  return Math.round((performance.now() - start) / 100) / 10;
}

/** The figures as a markdown table, a row per scenario and store. */
function table(rows: readonly Line[]): string {
  const columns: [string, (l: Line) => unknown][] = [
    ["scenario", (l) => l.scenario],
    ["store", (l) => l.store],
    ["jobs", (l) => l.figures.jobs],
    ["completed", (l) => l.figures.completed],
    ["lost", (l) => l.figures.lost],
    ["ran twice while leased", (l) => l.figures.ranTwiceWhileLeased],
    ["order violations", (l) => l.figures.orderViolations],
    ["double fires", (l) => l.figures.doubleFires],
    ["recovery s", (l) => l.figures.recoverySeconds],
    ["seconds", (l) => l.seconds],
    [
      "result",
      (l) =>
        l.skipped
          ? `skipped: ${l.skipped}`
          : l.ok
          ? "ok"
          : `FAILED: ${[...(l.broken ?? []), l.error ?? ""].filter(Boolean).join("; ").split("\n")[0]}`,
    ],
  ];
  const cell = (v: unknown) => v === undefined ? "" : String(v);
  return [
    `| ${columns.map(([name]) => name).join(" | ")} |`,
    `| ${columns.map(() => "---").join(" | ")} |`,
    ...rows.map((row) => `| ${columns.map(([, get]) => cell(get(row))).join(" | ")} |`),
  ].join("\n");
}
