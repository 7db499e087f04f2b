// Runs every check (types, doc examples, lint, format, import cycles, upward imports, the docs site's build) and the whole test suite on Node (tsx), Deno and Bun, then
// prints one summary line per runtime, the slowest test files, and a total. `npm test` runs this.
// Node runs twice: the machine's own (Node 20 here) and Node 24 from the devDependency node24.
// What runs where: every test file on the machine's Node, Deno and Bun (each store's conformance suite included),
// and on Node 24 the store suites and the files of NODE24 (what depends on Node's version), except the files of
// ONE_RUNTIME, which run on the one runtime it names: their tests run in processes of another runtime or of a
// fixed Node, repeat a suite on another setting of one driver, or are answered by a server or a store at scale. Files that need Node (playwright, npm pack) skip themselves on Deno and Bun, and the cases of
// tests/support/machine_node.ts (the docs' type check, the command line's output, ...) run on the machine's Node
// only, the rest of their files everywhere. On Node, the command
// line's test and the docs' blocks run bundled by esbuild on plain node rather than through tsx's loader. The checks
// run first, one at a time, not beside a runtime's tests: with both cores busy, timing-bound tests (leases, the
// eight-process shutdown) failed.
// `--quick` (`npm run test:quick`) runs the tests on the machine's Node alone, without the checks and the slow
// files of QUICK_SKIPS: every store's conformance suite once (libSQL on a file, PostgreSQL) in a few minutes.
// `--list` prints the test files a run would take (with `--quick`, those of the quick run), each with the runtimes
// that run it, and runs nothing.
// Usage: node tests/run.mjs [--quick] [--list] [--runtimes node,node24,deno,bun] [--skip-checks]
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { fileURLToPath } from "node:url";
import path from "node:path";

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const bin = (name) => path.join(root, "node_modules", ".bin", name);
const args = process.argv.slice(2);
const quick = args.includes("--quick");
const runtimes =
  (args.includes("--runtimes") ? args[args.indexOf("--runtimes") + 1] : quick ? "node" : "node,node24,deno,bun").split(
    ",",
  );
/**
 * What `--quick` leaves out: the files that start processes of their own (several workers, a CLI,
 * a browser, workerd, a packed install, the examples, the documentation's programs, a store move)
 * or enqueue 200,000 jobs, and the second run of each store's conformance suite and operation cases
 * (libSQL in memory, PostgreSQL unprepared), and the suites against a libSQL server (slow round trips).
 */
const QUICK_SKIPS = new Set([
  "tests/admin/dashboard_browser_test.ts",
  "tests/api/bulk_test.ts",
  "tests/cli/cli_test.ts",
  "tests/docs/docs_test.ts",
  "tests/docs/examples_test.ts",
  "tests/docs/getting_started_test.ts",
  "tests/docs/package_test.ts",
  "tests/processes/flow_multiprocess_test.ts",
  "tests/processes/log_consumers_multiprocess_test.ts",
  "tests/processes/move_test.ts",
  "tests/processes/multiprocess_test.ts",
  "tests/runtimes/deno_permissions_test.ts",
  "tests/runtimes/workerd_test.ts",
  "tests/store_operations/libsql_memory_test.ts",
  "tests/store_operations/postgres_unprepared_test.ts",
  "tests/store_operations/sqld_http_test.ts",
  "tests/store_operations/sqld_ws_test.ts",
  "tests/stores/libsql_memory_test.ts",
  "tests/stores/postgres_unprepared_test.ts",
  "tests/stores/sqld_http_test.ts",
  "tests/stores/sqld_replica_test.ts",
  "tests/stores/sqld_replicas_test.ts",
  "tests/stores/sqld_ws_test.ts",
]);
/**
 * The files run on one runtime only (Deno and Bun would skip a Node-only file anyway), each with the runtime and why:
 * what they test runs in processes of another runtime or of a fixed Node, the test only starting and watching them;
 * or it repeats a suite on another setting of one driver; or a server (or the store, at a scale of 200,000 jobs) does
 * the work.
 */
const ONE_RUNTIME = new Map([
  ["tests/runtimes/deno_permissions_test.ts", ["node", "runs the example under `deno run`"]],
  ["tests/runtimes/workerd_test.ts", ["node", "runs the worker in workerd and its jobs on Bun"]],
  [
    "tests/docs/package_test.ts",
    [
      "node",
      "installs the tarball and runs it on the machine's plain Node (20, the oldest supported) and Bun; the Node " +
      "page of tests/docs/getting_started_test.ts runs the tarball on Node 24",
    ],
  ],
  [
    "tests/api/bulk_test.ts",
    [
      "node",
      "enqueues 200,000 jobs in one call: the chunking and the single wake-up are the store's; enqueueMany's cases " +
      "run on every runtime in the conformance suite (the file took 1 to 2 minutes on each runtime)",
    ],
  ],
  [
    "tests/cli/doctor_test.ts",
    [
      "node",
      "runs `errand doctor` as a process against broken databases: its findings are the store's health read, whose " +
      "cases run on every runtime in the conformance suite, and the command line runs on each runtime in cli_test",
    ],
  ],
  [
    "tests/stores/postgres_history_test.ts",
    [
      "node",
      "the history's upgrade under an open writer and its partitions made beside a reader: the server's locks, the " +
      "same SQL from every runtime; the history's moves and reads run on every runtime in the conformance suite " +
      "(on Bun, the upgrade case failed once in a full run, its writer finding no jobs table, and passed alone)",
    ],
  ],
  // The second run of a suite on another setting of one driver: the first run of each suite is on every runtime.
  ...[
    "tests/stores/postgres_unprepared_test.ts",
    "tests/store_operations/postgres_unprepared_test.ts",
  ].map((
    f,
  ) => [f, ["node", "postgres.js without prepared statements or NOTIFY: the prepared run is on every runtime"]]),
  ...["tests/stores/libsql_memory_test.ts", "tests/store_operations/libsql_memory_test.ts"].map((
    f,
  ) => [f, ["node", "@libsql/client on :memory:: the run of the suite on a file is on every runtime"]]),
  // A libSQL server does the work of these suites; the client's remote protocol is the same JavaScript everywhere, and an
  // embedded replica's (sqld_replica*) is the one native libsql module every runtime loads.
  // Bun runs them: its fetch and WebSocket took the suites in a quarter of Node 20's time (about 110 s against 410 s).
  ...[
    "tests/stores/sqld_http_test.ts",
    "tests/stores/sqld_replica_test.ts",
    "tests/stores/sqld_replicas_test.ts",
    "tests/stores/sqld_ws_test.ts",
    "tests/store_operations/sqld_http_test.ts",
    "tests/store_operations/sqld_ws_test.ts",
  ].map((f) => [f, ["bun", "a real sqld answers; @libsql/client's remote protocol is the same on every runtime"]]),
]);
/**
 * What the devDependency node24 runs besides every store's suites. The rest runs on the machine's Node (20, the oldest
 * supported: where an API newer than the oldest Node fails), Deno and Bun: on Node 24 it would be the same JavaScript
 * again, with no path that depends on Node's version. The store suites (the files that call runConformance or
 * runStoreOperations) run on Node 24 too: its sockets, its load of the native libsql module, and node:sqlite, which Node
 * 20 lacks. Each file here, with what it proves on Node 24.
 */
const NODE24 = new Map([
  [
    "tests/processes/multiprocess_test.ts",
    "worker processes of Node 24 started, signalled and killed; their sqliteStore is on node:sqlite (libsql on Node 20)",
  ],
  [
    "tests/cli/cli_test.ts",
    "the command line as a process of Node 24: exit codes, signals, the dashboard's server, `work` and `drain`",
  ],
  [
    "tests/docs/docs_test.ts",
    "the docs' blocks that import node:sqlite, and their test files under Node 24's own test runner",
  ],
  ["tests/api/schedule_daylight_saving_test.ts", "cron's time zones are Intl's, from the ICU data each Node bundles"],
  [
    "tests/admin/event_stream_slow_client_test.ts",
    "back pressure of node:http over a real port, whose stream buffers grew in Node 22",
  ],
]);
/** Whether `file` is a store's conformance suite or its operation cases, which run on every runtime. */
const storeSuite = (file) =>
  /\b(runConformance|runStoreOperations)\(/.test(readFileSync(path.join(root, file), "utf8"));
// Every *_test.ts below tests/, in its folders (stores/, processes/, admin/, ...).
const testFiles = readdirSync(path.join(root, "tests"), { recursive: true })
  .filter((f) => f.endsWith("_test.ts"))
  .map((f) => `tests/${f.split(path.sep).join("/")}`)
  .sort()
  .filter((f) => !quick || !QUICK_SKIPS.has(f));
/** The test files of `runtime`'s run: all but those ONE_RUNTIME gives to another runtime; on node24, those of NODE24. */
const filesOf = (runtime) =>
  testFiles.filter((f) =>
    (ONE_RUNTIME.get(f)?.[0] ?? runtime) === runtime && (runtime !== "node24" || NODE24.has(f) || storeSuite(f))
  );
if (args.includes("--list")) {
  const where = testFiles.map((f) => [f, runtimes.filter((runtime) => filesOf(runtime).includes(f))]);
  for (const [f, on] of where) console.log(`${f} ${on.join(",") || "(on none of these runtimes)"}`);
  process.exit(0);
}

/** The longest one test may take on Node 24 and Bun, which stop it and go on (Deno has no such limit). */
const TEST_LIMIT_MS = 3 * 60_000;
/**
 * The longest one test file (or one check) may take: the machine's Node (20 here) stops a file that
 * takes longer (Node 20's `--test-timeout` limits each file as well as each test) and goes on with the next; on every
 * runtime, a run still in one file half a minute later is stopped and fails naming the file. A
 * hang fails fast instead of stalling CI. On Node, with two busy cores, the slowest file
 * (tests/docs/docs_test.ts) took under 3 minutes.
 */
const FILE_LIMIT_MS = 8 * 60_000;

/**
 * Runs a command, its output shown as it comes. `marker` finds in a line of output the test file
 * that starts there; each file (or, without a marker, the whole command) gets FILE_LIMIT_MS, after
 * which the command's processes are stopped. Resolves with the output, the time taken, and the
 * seconds each test file took (each until the next starts: each runtime runs one file at a time,
 * Node as long as it has at most two cores, as on CI; with more, it runs several at once, and the
 * limit and the seconds count from the file that started last).
 */
function run(label, command, commandArgs, { env = process.env, marker } = {}) {
  console.log(`\n=== ${label}: ${[path.basename(command), ...commandArgs].join(" ")}`);
  const started = Date.now();
  // Its own process group, so that stopping it stops the test processes it started too.
  const child = spawn(command, commandArgs, { cwd: root, env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
  const files = [];
  let current = { file: label, at: started };
  let output = "";
  let stopped;
  const take = (stream) => {
    let partial = "";
    stream.on("data", (chunk) => {
      const text = chunk.toString();
      process.stdout.write(text);
      output += text;
      const lines = (partial + text).split("\n");
      partial = lines.pop();
      for (const line of lines) {
        const file = marker?.exec(strip(line))?.[1];
        if (file) files.push(current = { file, at: Date.now() });
      }
    });
  };
  take(child.stdout);
  take(child.stderr);
  const watchdog = setInterval(() => {
    if (Date.now() - current.at <= FILE_LIMIT_MS + 30_000) return;
    stopped = current.file;
    clearInterval(watchdog);
    try {
      process.kill(-child.pid, "SIGKILL");
    } catch {
      // Already gone.
    }
  }, 1_000);
  return new Promise((resolve) => {
    child.on("close", (code) => {
      clearInterval(watchdog);
      const ended = Date.now();
      let note = "";
      if (stopped) {
        note = `\n=== ${label}: ${stopped} did not finish within ${FILE_LIMIT_MS / 60_000} min; stopped\n`;
        console.log(note);
      }
      const seconds = files.map((f, i) => ({ file: f.file, seconds: ((files[i + 1]?.at ?? ended) - f.at) / 1000 }));
      resolve({
        ok: code === 0 && !stopped,
        output: output + note,
        seconds: ((ended - started) / 1000).toFixed(1),
        files: seconds,
        stopped,
      });
    });
  });
}

// deno-lint-ignore no-control-regex
const strip = (s) => s.replace(/\x1b\[[0-9;]*m/g, "");

const failures = [];
if (!quick && !args.includes("--skip-checks")) {
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
        "adapters/sqlite/mod.ts",
        "adapters/postgres/mod.ts",
        "adapters/hono/mod.ts",
      ]],
      ["lint", ["lint"]],
      ["format", ["fmt", "--check"]],
    ]
  ) {
    if (!(await run(label, bin("deno"), a)).ok) failures.push(label);
  }
  // No import cycle among the package's modules, type-only imports included.
  const entries = [
    "mod.ts",
    "adapters/postgres/mod.ts",
    "adapters/libsql/mod.ts",
    "adapters/sqlite/mod.ts",
    "adapters/hono/mod.ts",
    "src/testing.ts",
    "src/store/mod.ts",
    "cli/main.ts",
  ];
  const cycles = ["--no-warning", "--no-tree", "--exit-code", "circular:1", ...entries];
  if (!(await run("import cycles", bin("dpdm"), cycles)).ok) failures.push("import cycles");
  // No folder of src/ imports from a folder above it (the order is LAYERS in tests/layers.mjs).
  if (!(await run("upward imports", process.execPath, ["tests/layers.mjs"])).ok) failures.push("upward imports");
  // The docs site builds, with no link to a missing page or heading (docs/.vitepress/anchors.ts).
  if (!(await run("docs build", process.execPath, [bin("vitepress"), "build", "docs"])).ok) failures.push("docs build");
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
/** The lines of `out` from the last that matches `from` up to one that matches `to` (or the end), or none. */
function section(out, from, to) {
  const lines = out.split("\n");
  const start = lines.findLastIndex((line) => from.test(line));
  if (start < 0) return [];
  const end = to ? lines.findIndex((line, i) => i > start && to.test(line)) : -1;
  return [lines.slice(start, end < 0 ? undefined : end).slice(0, 120).join("\n")];
}
/**
 * A Node run's failures: its closing list of failing tests, or, for a run stopped before it could print one, each
 * failure as tests/support/file_reporter.mjs printed it when it happened.
 */
function nodeFailures(out) {
  const closing = section(out, /^✖ failing tests:$/);
  if (closing.length) return closing;
  const lines = out.split("\n");
  const starts = lines.flatMap((line, i) => line.startsWith("✖ failed: ") ? [i] : []);
  return starts.map((start) => {
    const end = lines.findIndex((line, i) => i > start && !line.startsWith("  "));
    return lines.slice(start, end < 0 ? undefined : end).join("\n");
  });
}
/** Each runtime's failed tests with their errors, as its output gives them. */
const failuresOf = {
  node: nodeFailures,
  node24: nodeFailures,
  deno: (out) => section(out, /^ ERRORS $/, /^FAILED \|/),
  bun: bunFailures,
};
const tsxCli = path.join(root, "node_modules", "tsx", "dist", "cli.mjs");
const nodeTests = (timeoutMs, files) => [
  "--test",
  `--test-timeout=${timeoutMs}`,
  "--test-reporter=spec",
  "--test-reporter-destination=stdout",
  // Names each file as it starts, on stderr: for the per-file limit.
  `--test-reporter=${path.join(root, "tests", "support", "file_reporter.mjs")}`,
  "--test-reporter-destination=stderr",
  ...files,
];
const nodes = { node: systemNode(), node24: path.join(root, "node_modules", "node24", "bin", "node") };
const commands = {
  node: [nodes.node, [tsxCli, ...nodeTests(FILE_LIMIT_MS, filesOf("node"))]],
  node24: [nodes.node24, [tsxCli, ...nodeTests(TEST_LIMIT_MS, filesOf("node24"))]],
  deno: [bin("deno"), ["test", "-A", ...filesOf("deno")]],
  bun: [bin("bun"), ["test", "--timeout", String(TEST_LIMIT_MS), ...filesOf("bun").map((f) => `./${f}`)]],
};
/** Where each runtime's output names a test file as it starts. */
const markers = {
  node: /^▷ (\S+_test\.ts)$/,
  node24: /^▷ (\S+_test\.ts)$/,
  deno: /^running \d+ tests? from \.\/(\S+_test\.ts)/,
  bun: /^(\S+_test\.ts):$/,
};
/** Per runtime, its test files by the seconds they took. */
const slowest = [];
const summary = [];
/** Per runtime, the failures its output names, to repeat at the end where a log's tail shows them. */
const failureReports = [];
let passed = 0;
let failed = 0;
for (const runtime of runtimes) {
  const [command, a] = commands[runtime];
  const node = nodes[runtime];
  const version = node ? ` ${spawnSync(node, ["--version"], { encoding: "utf8" }).stdout.trim()}` : "";
  const result = await run(`tests on ${runtime}${version}`, command, a, {
    env: node ? nodeEnv(node) : process.env,
    marker: markers[runtime],
  });
  const files = result.files.toSorted((x, y) => y.seconds - x.seconds);
  slowest.push(`${runtime}: ${files.map((f) => `${f.file} ${f.seconds.toFixed(0)}s`).join(", ")}`);
  const out = strip(result.output);
  const [p, f, s] = counters[runtime](out).map((re) => out.match(re));
  // Deno counts each describe() block as a test and its it()s as steps.
  const pass = runtime === "deno" ? Number(p?.[2] ?? 0) : Number(p?.[1] ?? 0);
  const fail = Number(f?.[1] ?? 0) + (result.ok ? 0 : Number(f?.[1] ?? 0) ? 0 : 1);
  passed += pass;
  failed += fail;
  if (!result.ok) failures.push(`tests on ${runtime}${result.stopped ? ` (${result.stopped} stopped)` : ""}`);
  if (fail) failureReports.push(...failuresOf[runtime](out).map((report) => [runtime, report]));
  summary.push(
    `${runtime}${version}: ${pass} passed, ${fail} failed, ${Number(s?.[1] ?? 0)} skipped (${result.seconds}s)`,
  );
}
console.log("\n=== seconds per test file, slowest first");
for (const line of slowest) console.log(line);
// Each runtime prints a failure's error far above the end of the log; repeat them where the log's tail shows them.
for (const [runtime, report] of failureReports) console.log(`\n=== failed on ${runtime}, repeated\n${report}`);
console.log("\n=== summary");
for (const line of summary) console.log(line);
if (failures.length) console.log(`failed: ${failures.join(", ")}`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failures.length ? 1 : 0);
