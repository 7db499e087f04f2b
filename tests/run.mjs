// Runs every check (types, doc examples, lint, format, import cycles, the docs site's build) and the whole test suite on Node (tsx), Deno and Bun, then
// prints one summary line per runtime and a total. `npm test` runs this.
// Node runs twice: the machine's own (Node 20 here) and Node 24 from the devDependency node24.
// Usage: node tests/run.mjs [--runtimes node,node24,deno,bun] [--skip-checks]
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { fileURLToPath } from "node:url";
import path from "node:path";

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const bin = (name) => path.join(root, "node_modules", ".bin", name);
const args = process.argv.slice(2);
const runtimes = (args.includes("--runtimes") ? args[args.indexOf("--runtimes") + 1] : "node,node24,deno,bun").split(
  ",",
);
const testFiles = readdirSync(path.join(root, "tests"), { recursive: true })
  .filter((f) => f.endsWith("_test.ts"))
  .sort()
  .map((f) => `tests/${f}`);

function run(label, command, commandArgs, env = process.env) {
  console.log(`\n=== ${label}: ${[path.basename(command), ...commandArgs].join(" ")}`);
  const started = Date.now();
  const result = spawnSync(command, commandArgs, {
    cwd: root,
    encoding: "utf8",
    env,
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
      ["type check", [
        "check",
        "mod.ts",
        "src/",
        "adapters/",
        "cli/",
        "tests/",
        "examples/",
        "bench/",
        "chaos/",
        "docs/.vitepress/",
      ]],
      ["doc examples", [
        "test",
        "--doc",
        "--no-run",
        "mod.ts",
        "src/",
        "adapters/libsql/mod.ts",
        "adapters/postgres/mod.ts",
        "adapters/hono/mod.ts",
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
    "src/store/mod.ts",
    "cli/main.ts",
  ];
  const cycles = ["--no-warning", "--no-tree", "--exit-code", "circular:1", ...entries];
  if (!run("import cycles", bin("dpdm"), cycles).ok) failures.push("import cycles");
  // The docs site builds, with no link to a missing page or heading (docs/.vitepress/anchors.ts).
  if (!run("docs build", process.execPath, [bin("vitepress"), "build", "docs"]).ok) failures.push("docs build");
}

/**
 * The machine's own Node: the one running npm, else the first `node` on PATH
 * outside node_modules (the devDependency node24 links a `node` there).
 */
function systemNode() {
  if (process.env.npm_node_execpath) return process.env.npm_node_execpath;
  for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
    if (!dir.includes("node_modules") && existsSync(path.join(dir, "node"))) return path.join(dir, "node");
  }
  return process.execPath;
}

/** The environment of a Node run: `node` on its PATH is `binary`, so tests that spawn `node` get the same one. */
function nodeEnv(binary) {
  const dir = mkdtempSync(path.join(tmpdir(), "errand-node-"));
  symlinkSync(binary, path.join(dir, "node"));
  return { ...process.env, PATH: `${dir}${path.delimiter}${process.env.PATH ?? ""}` };
}

// deno-lint-ignore no-control-regex
const strip = (s) => s.replace(/\x1b\[[0-9;]*m/g, "");
const nodeCounters = () => [/^ℹ pass (\d+)/m, /^ℹ fail (\d+)/m, /^ℹ skipped (\d+)/m];
const counters = {
  node: nodeCounters,
  node24: nodeCounters,
  deno: () => [/(\d+) passed \((\d+) steps\)/, /(\d+) failed/, /(\d+) ignored/],
  bun: () => [/^\s*(\d+) pass$/m, /^\s*(\d+) fail$/m, /^\s*(\d+) skip$/m],
};
/** Each failed test of a Bun run with what it printed: the lines since the previous test's result line. */
function bunFailures(out) {
  const blocks = [];
  let since = [];
  for (const line of out.split("\n")) {
    if (/^\d+ tests? failed:$/.test(line)) break; // Bun's closing list names the failures again, without errors
    since.push(line);
    if (/^\((pass|skip|todo)\)/.test(line) || line.endsWith("_test.ts:")) since = [];
    else if (line.startsWith("(fail)")) {
      blocks.push(since.slice(-80).join("\n"));
      since = [];
    }
  }
  return blocks;
}
const tsxCli = path.join(root, "node_modules", "tsx", "dist", "cli.mjs");
const nodeTests = ["--test", "--test-reporter=spec", ...testFiles];
const nodes = { node: systemNode(), node24: path.join(root, "node_modules", "node24", "bin", "node") };
const commands = {
  node: [nodes.node, [tsxCli, ...nodeTests]],
  node24: [nodes.node24, [tsxCli, ...nodeTests]],
  deno: [bin("deno"), ["test", "-A", ...testFiles]],
  bun: [bin("bun"), ["test", "--timeout", "120000", ...testFiles.map((f) => `./${f}`)]],
};
const summary = [];
const failureBlocks = [];
let passed = 0;
let failed = 0;
for (const runtime of runtimes) {
  const [command, a] = commands[runtime];
  const node = nodes[runtime];
  const version = node ? ` ${spawnSync(node, ["--version"], { encoding: "utf8" }).stdout.trim()}` : "";
  const result = run(`tests on ${runtime}${version}`, command, a, node ? nodeEnv(node) : process.env);
  const out = strip(result.output);
  const [p, f, s] = counters[runtime](out).map((re) => out.match(re));
  // Deno counts each describe() block as a test and its it()s as steps.
  const pass = runtime === "deno" ? Number(p?.[2] ?? 0) : Number(p?.[1] ?? 0);
  const fail = Number(f?.[1] ?? 0) + (result.ok ? 0 : Number(f?.[1] ?? 0) ? 0 : 1);
  passed += pass;
  failed += fail;
  if (!result.ok) failures.push(`tests on ${runtime}`);
  if (runtime === "bun") failureBlocks.push(...bunFailures(out));
  summary.push(
    `${runtime}${version}: ${pass} passed, ${fail} failed, ${Number(s?.[1] ?? 0)} skipped (${result.seconds}s)`,
  );
}
// Bun prints a failure's error where the test ran, far above the end; repeat them where a log's tail shows them.
if (failureBlocks.length) console.log(`\n=== failures on bun, repeated\n${failureBlocks.join("\n\n")}`);
console.log("\n=== summary");
for (const line of summary) console.log(line);
if (failures.length) console.log(`failed: ${failures.join(", ")}`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failures.length ? 1 : 0);
