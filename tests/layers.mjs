// The layer check: every folder of src/ stands on the ones below it. A file may import only from its
// own folder and from the folders before it in LAYERS (type-only imports included); each import that
// reaches up is printed as `file -> file`, and the exit code is 1. `npm test` runs this beside the
// import-cycle check. Usage: node tests/layers.mjs
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import path from "node:path";

/**
 * The folders of src/ (and its root files) from the bottom up: each may import only those before it,
 * and nothing outside src/ (mod.ts, adapters/ and cli/ stand on top of them all). To add a folder,
 * put it where what it imports is all before it and what imports it is all after.
 */
const LAYERS = [
  "base", // the ground floor: the job vocabulary, errors, logger, clock, durations, the services bundle
  "checks", // checks of ids, names, options and the limits both stores hold
  "encoding", // payload encoding (msgpack) and job ids
  "time", // periodic loops and wake-ups
  "store", // the Store seam every dialect implements, with its records
  "flow", // flow control: groups, limits, the limits of each claim
  "topics", // topic partitions and their ownership
  "jobs", // defining kinds: job(), defineJobs(), the retry policy, validation
  "observability", // metrics, statistics, tracing, telemetry
  "enqueue", // the insert path: rows, unique keys, continuations, jobs started at insert
  "workflows", // durable steps of a run: step, sleep, invoke, waitForEvent; event names
  "running", // the workers: claim, execute, complete, leases, progress
  "results", // waiting for results and watching jobs
  "cluster", // the instances together: heartbeat, leader, maintenance
  "schedules", // recurring jobs: cron and their firing
  "logs", // retained logs: records appended to topics, and their consumers
  "move", // moving the whole state from one store to another
  "calls", // the public calls, one file per call family, each over the narrow dependencies it declares
  "client", // the Errand facade, its contract and options, and the wiring of an instance
  "testing.ts", // the FakeClock for tests (errand/testing)
];

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const src = path.join(root, "src");

/** The layer of a path under src/: its first segment (a folder, or a root file). */
const layerOf = (file) => path.relative(src, file).split(path.sep)[0];

/** The relative module specifiers a file imports or re-exports, static, type-only or dynamic. */
function importsOf(text) {
  const specifiers = [];
  const pattern = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)["'](\.{1,2}\/[^"']+)["']/g;
  for (const match of text.matchAll(pattern)) specifiers.push(match[1]);
  return specifiers;
}

/** Every upward import in src/, as `file -> file` relative to the repository. */
function upwardImports() {
  const offences = [];
  const files = readdirSync(src, { recursive: true }).filter((f) => f.endsWith(".ts")).sort();
  for (const file of files) {
    const from = path.join(src, file);
    const rank = LAYERS.indexOf(layerOf(from));
    for (const specifier of importsOf(readFileSync(from, "utf8"))) {
      const to = path.resolve(path.dirname(from), specifier);
      const target = layerOf(to);
      if (target === layerOf(from)) continue;
      const targetRank = LAYERS.indexOf(target);
      if (rank === -1 || targetRank === -1 || targetRank > rank) {
        offences.push(`${path.relative(root, from)} -> ${path.relative(root, to)}`);
      }
    }
  }
  return offences;
}

const offences = upwardImports();
for (const offence of offences) console.log(offence);
console.log(
  offences.length === 0
    ? "No upward import between the folders of src/."
    : `${offences.length} upward imports: each folder may import only the folders before it in LAYERS (tests/layers.mjs)`,
);
process.exit(offences.length === 0 ? 0 : 1);
