// Runs every check (types, doc examples, lint, format, import cycles) and the whole test suite on Node (tsx), Deno and Bun, then
// prints one summary line per runtime and a total. `npm test` runs this.
// Usage: node tests/run.mjs [--runtimes node,deno,bun] [--skip-checks]
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import path from "node:path";

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const bin = (name) => path.join(root, "node_modules", ".bin", name);
const args = process.argv.slice(2);
const runtimes = (args.includes("--runtimes") ? args[args.indexOf("--runtimes") + 1] : "node,deno,bun").split(",");
const testFiles = readdirSync(path.join(root, "tests"), { recursive: true })
  .filter((f) => f.endsWith("_test.ts"))
  .sort()
  .map((f) => `tests/${f}`);

function run(label, command, commandArgs) {
  console.log(`\n=== ${label}: ${[path.basename(command), ...commandArgs].join(" ")}`);
  const started = Date.now();
  const result = spawnSync(command, commandArgs, {
    cwd: root,
    encoding: "utf8",
    env: process.env,
    maxBuffer: 64 << 20,
  });
  const output = `${result.stdout ?? ""}${result.stderr ?? ""}`;
  process.stdout.write(output);
  return { ok: result.status === 0, output, seconds: ((Date.now() - started) / 1000).toFixed(1) };
}

const failures = [];
if (!args.includes("--skip-checks")) {
  for (
    const [label, a] of [
      ["type check", ["check", "mod.ts", "src/", "adapters/", "tests/", "examples/", "bench/"]],
      ["doc examples", [
        "test",
        "--doc",
        "--no-run",
        "mod.ts",
        "src/",
        "adapters/libsql/mod.ts",
        "adapters/postgres/mod.ts",
      ]],
      ["lint", ["lint"]],
      ["format", ["fmt", "--check"]],
    ]
  ) {
    if (!run(label, bin("deno"), a).ok) failures.push(label);
  }
  // No import cycle among the package's modules, type-only imports included.
  const entries = [
    "mod.ts",
    "adapters/postgres/mod.ts",
    "adapters/libsql/mod.ts",
    "adapters/hono/mod.ts",
    "src/testing.ts",
  ];
  const cycles = ["--no-warning", "--no-tree", "--exit-code", "circular:1", ...entries];
  if (!run("import cycles", bin("dpdm"), cycles).ok) failures.push("import cycles");
}

// deno-lint-ignore no-control-regex
const strip = (s) => s.replace(/\x1b\[[0-9;]*m/g, "");
const counters = {
  node: () => [/^ℹ pass (\d+)/m, /^ℹ fail (\d+)/m, /^ℹ skipped (\d+)/m],
  deno: () => [/(\d+) passed \((\d+) steps\)/, /(\d+) failed/, /(\d+) ignored/],
  bun: () => [/^\s*(\d+) pass$/m, /^\s*(\d+) fail$/m, /^\s*(\d+) skip$/m],
};
const commands = {
  node: [bin("tsx"), ["--test", "--test-reporter=spec", ...testFiles]],
  deno: [bin("deno"), ["test", "-A", ...testFiles]],
  bun: [bin("bun"), ["test", "--timeout", "120000", ...testFiles.map((f) => `./${f}`)]],
};
const summary = [];
let passed = 0;
let failed = 0;
for (const runtime of runtimes) {
  const [command, a] = commands[runtime];
  const result = run(`tests on ${runtime}`, command, a);
  const out = strip(result.output);
  const [p, f, s] = counters[runtime](out).map((re) => out.match(re));
  // Deno counts each describe() block as a test and its it()s as steps.
  const pass = runtime === "deno" ? Number(p?.[2] ?? 0) : Number(p?.[1] ?? 0);
  const fail = Number(f?.[1] ?? 0) + (result.ok ? 0 : Number(f?.[1] ?? 0) ? 0 : 1);
  passed += pass;
  failed += fail;
  if (!result.ok) failures.push(`tests on ${runtime}`);
  summary.push(`${runtime}: ${pass} passed, ${fail} failed, ${Number(s?.[1] ?? 0)} skipped (${result.seconds}s)`);
}
console.log("\n=== summary");
for (const line of summary) console.log(line);
if (failures.length) console.log(`failed: ${failures.join(", ")}`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failures.length ? 1 : 0);
