// Prints the medians of a results file of jobs_beside_peers.sh (the peers', errand's and the floor's, on
// PostgreSQL) and issue 43's targets against them; lines with a "variant" (errand's scale workloads) have a
// table of their own. Usage: node bench/peer_targets.mjs <results.jsonl>
import { readFileSync } from "node:fs";

const lines = readFileSync(process.argv[2], "utf8").split("\n").filter((l) => l.startsWith("{")).map((l) =>
  JSON.parse(l)
)
  .filter((r) => !r.error);
const rows = lines.filter((r) => r.variant === undefined);
const median = (xs) => {
  const s = xs.filter((x) => typeof x === "number").sort((a, b) => a - b);
  if (!s.length) return null;
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const figure = (peer, workload, field, from = rows) =>
  median(from.filter((r) => r.peer === peer && r.workload === workload).map((r) => r[field]));
const fmt = (
  x,
  d = 0,
) => (x == null ? "-" : x.toLocaleString("en-US", { maximumFractionDigits: d, minimumFractionDigits: d }));
const ratio = (a, b) => (a == null || !b ? "-" : (a / b).toFixed(2));

const all = [...new Set(rows.map((r) => r.peer))];
const peers = all.filter((p) => !p.startsWith("errand-") && !p.startsWith("floor-"));
console.log(`Medians of ${new Set(rows.map((r) => r.run)).size} run(s):\n`);
console.log("| | enqueue one by one | enqueue batches | drain | latency p50 / p99 |");
console.log("| --- | --- | --- | --- | --- |");
for (const p of all) {
  const version = rows.find((r) => r.peer === p)?.version;
  console.log(
    `| ${p}${version && version !== "-" ? ` ${version}` : ""} | ${
      fmt(figure(p, "enqueue_single", "jobs_per_s"))
    }/s | ` +
      `${fmt(figure(p, "enqueue_batch", "jobs_per_s"))}/s | ${fmt(figure(p, "drain", "jobs_per_s"))}/s | ` +
      `${fmt(figure(p, "latency", "p50_ms"), 2)} / ${fmt(figure(p, "latency", "p99_ms"), 2)} ms |`,
  );
}

const scale = lines.filter((r) => r.variant === "scale" && typeof r.vs_drain === "number");
if (scale.length) {
  console.log("\nerrand's scale workloads, each beside the plain drain of its run (vs_drain, per run):");
  for (const w of [...new Set(scale.map((r) => r.workload))]) {
    const of = scale.filter((r) => r.workload === w);
    console.log(
      `- ${w}: median ${fmt(median(of.map((r) => r.vs_drain)), 2)} (${of.map((r) => r.vs_drain).join(", ")})`,
    );
  }
}

const best = (workload, field) => Math.max(...peers.map((p) => figure(p, workload, field) ?? 0));
const errand = (workload, field) => figure("errand-postgres", workload, field);
const floor = (workload, field) => figure("floor-postgres", workload, field);
const targets = [
  ["drain ≥ 3× the best peer", ratio(errand("drain", "jobs_per_s"), best("drain", "jobs_per_s")), (v) => v >= 3],
  ["drain ≥ 0.85 of the floor", ratio(errand("drain", "jobs_per_s"), floor("drain", "jobs_per_s")), (v) => v >= 0.85],
  [
    "batch enqueue ≥ 1.3× the best peer",
    ratio(errand("enqueue_batch", "jobs_per_s"), best("enqueue_batch", "jobs_per_s")),
    (v) => v >= 1.3,
  ],
  [
    "batch enqueue ≥ 0.9 of the floor",
    ratio(errand("enqueue_batch", "jobs_per_s"), floor("enqueue_batch", "jobs_per_s")),
    (v) => v >= 0.9,
  ],
  ["latency p50 ≤ 1.2× the floor's", ratio(errand("latency", "p50_ms"), floor("latency", "p50_ms")), (v) => v <= 1.2],
];
console.log(`\nIssue 43's targets (peers: ${peers.join(", ")}):`);
for (const [what, value, met] of targets) {
  console.log(`- ${what}: ${value} (${met(Number(value)) ? "met" : "not met"})`);
}
