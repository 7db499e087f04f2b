// Prints issue 43's targets against the peers and the floor from a results file of jobs_beside_peers.sh:
// the medians over runs of errand's PostgreSQL figures, the best peer's and the floor's, and their ratios.
// Usage: node bench/peer_targets.mjs <results.jsonl>
import { readFileSync } from "node:fs";

const rows = readFileSync(process.argv[2], "utf8").split("\n").filter((l) => l.startsWith("{")).map((l) =>
  JSON.parse(l)
)
  .filter((r) => !r.error && r.variant === undefined);
const median = (xs) => {
  const s = xs.filter((x) => typeof x === "number").sort((a, b) => a - b);
  if (!s.length) return null;
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const figure = (peer, workload, field) =>
  median(rows.filter((r) => r.peer === peer && r.workload === workload).map((r) => r[field]));
const peers = [...new Set(rows.map((r) => r.peer))].filter((p) => !p.startsWith("errand-") && !p.startsWith("floor-"));
const best = (workload, field) => Math.max(...peers.map((p) => figure(p, workload, field) ?? 0));
const ratio = (a, b) => (a == null || !b ? "-" : (a / b).toFixed(2));

const drain = figure("errand-postgres", "drain", "jobs_per_s");
const batch = figure("errand-postgres", "enqueue_batch", "jobs_per_s");
const p50 = figure("errand-postgres", "latency", "p50_ms");
const targets = [
  ["drain ≥ 3× the best peer", ratio(drain, best("drain", "jobs_per_s")), 3],
  ["drain ≥ 0.85 of the floor", ratio(drain, figure("floor-postgres", "drain", "jobs_per_s")), 0.85],
  ["batch enqueue ≥ 1.3× the best peer", ratio(batch, best("enqueue_batch", "jobs_per_s")), 1.3],
  ["batch enqueue ≥ 0.9 of the floor", ratio(batch, figure("floor-postgres", "enqueue_batch", "jobs_per_s")), 0.9],
];
const runs = new Set(rows.map((r) => r.run)).size;
console.log(`\nIssue 43's targets, medians of ${runs} run(s); peers: ${peers.join(", ")}`);
for (const [what, value, goal] of targets) {
  console.log(`- ${what}: ${value} (${Number(value) >= goal ? "met" : "not met"})`);
}
const floorP50 = figure("floor-postgres", "latency", "p50_ms");
const latency = ratio(p50, floorP50);
console.log(`- latency p50 ≤ 1.2× the floor's: ${latency} (${Number(latency) <= 1.2 ? "met" : "not met"})`);
