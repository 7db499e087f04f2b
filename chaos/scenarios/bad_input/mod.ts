/**
 * Bad input: the admin API (adapters/hono, served by a real HTTP server)
 * and the `errand` command line (one process per command) are fed a table
 * of wrong inputs (bad_inputs.ts) against a database holding
 * a few jobs in several states, a schedule and a paused queue.
 *
 * What must hold: no 5xx answer; every answer a refusal whose message says
 * what is wrong in words (no crash, stack trace or internal error) unless
 * the input may rightly be answered; and not one job, schedule or paused
 * queue changed. The quick form sends every request and runs the first
 * commands of the table.
 *
 * @module
 */
import { spawn } from "node:child_process";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { adminRouter } from "errand/hono";
import { check, type Scenario } from "../../harness/scenario.ts";
import type { ScratchDatabase } from "../../../tests/support/scratch_database.ts";
import { orchestrator } from "../../harness/orchestrator.ts";
import {
  BAD_COMMANDS,
  BAD_REQUESTS,
  type BadCommand,
  type BadRequest,
  judgeAnswer,
  judgeRun,
  QUICK_COMMANDS,
} from "./bad_inputs.ts";
import { listen } from "../../../tests/support/serve.ts";

const cliMain = fileURLToPath(new URL("../../../cli/main.ts", import.meta.url));
const tsconfig = fileURLToPath(new URL("../../../tsconfig.json", import.meta.url));
/** A command that has not ended by then is counted as a crash (a hang). */
const COMMAND_TIMEOUT_MS = 30_000;
/** Commands run at once (the machine the suite runs on may have two cores). */
const PARALLEL_COMMANDS = 2;

type Orchestrator = ReturnType<typeof orchestrator>;

export const scenario: Scenario = {
  name: "bad_input",
  summary:
    "the admin API and the command line fed malformed ids, unknown names, bad numbers, durations, URLs and bodies: no 5xx, no unclear message, nothing changed",
  stores: ["libsql", "postgres"],
  async run({ db, quick, dir, note }) {
    const errand = orchestrator(db);
    await errand.start();
    try {
      await seed(errand);
      const before = await snapshot(errand);
      const server = await listen(adminRouter(errand, { insecure: true }));
      const broken: string[] = [];
      let serverErrors = 0;
      try {
        for (const request of BAD_REQUESTS) {
          const { status, body } = await send(server.url, request);
          if (status >= 500) serverErrors++;
          const why = judgeAnswer(request, status, body);
          if (why) broken.push(`${request.method} ${request.path.slice(0, 80)}: ${why}`);
        }
      } finally {
        await server.close();
      }
      const commands = quick ? BAD_COMMANDS.slice(0, QUICK_COMMANDS) : BAD_COMMANDS;
      const runs = await inBatches(commands, PARALLEL_COMMANDS, (command) => runCommand(db, command, dir));
      commands.forEach((command, i) => {
        const why = judgeRun(command, runs[i].code, runs[i].stderr);
        if (why) broken.push(`errand ${command.args.join(" ")}: ${why}`);
      });
      for (const line of broken) note(line);
      const rowsChanged = changedRows(before, await snapshot(errand));
      const figures = {
        inputsTried: BAD_REQUESTS.length + commands.length,
        serverErrors,
        unclearAnswers: broken.length,
        rowsChanged,
      };
      return {
        figures,
        checks: [
          check("no bad input gets a 5xx answer", serverErrors === 0),
          check("every bad input gets a clear refusal (no crash, no unclear message)", broken.length === 0),
          check("no bad input changes a job, a schedule or a paused queue", rowsChanged === 0),
        ],
      };
    } finally {
      await errand.shutdown();
    }
  },
};

/** Jobs in several states, a schedule and a paused queue, for the bad inputs to (not) change. */
async function seed(errand: Orchestrator): Promise<void> {
  for (let n = 0; n < 3; n++) await errand.enqueue("work", { n, ms: 1 });
  for (let n = 3; n < 5; n++) await errand.enqueue("work", { n, ms: 1 }, { delay: "1h" });
  const { id } = await errand.enqueue("work", { n: 5, ms: 1 });
  await errand.cancel(id);
  await errand.schedule("nightly", "tick", { schedule: "nightly" }, "0 3 * * *");
  await errand.pauseQueue("paused");
}

/** Every job, schedule and paused queue, each as a JSON string, by a key. */
async function snapshot(errand: Orchestrator): Promise<Map<string, string>> {
  const rows = new Map<string, string>();
  for (const job of (await errand.list({ limit: 1000 })).jobs) rows.set(`job ${job.id}`, JSON.stringify(job));
  for (const s of await errand.schedules()) rows.set(`schedule ${s.id}`, JSON.stringify(s));
  for (const queue of await errand.pausedQueues()) rows.set(`paused ${queue}`, queue);
  return rows;
}

function changedRows(before: Map<string, string>, after: Map<string, string>): number {
  let changed = 0;
  for (const [key, row] of before) if (after.get(key) !== row) changed++;
  for (const key of after.keys()) if (!before.has(key)) changed++;
  return changed;
}

async function send(base: string, request: BadRequest): Promise<{ status: number; body: string }> {
  const headers: Record<string, string> = {};
  if (request.method !== "GET") headers["content-type"] = request.contentType ?? "application/json";
  const res = await fetch(`${base}${request.path}`, { method: request.method, headers, body: request.body });
  return { status: res.status, body: await res.text() };
}

/** Runs `errand` with the command's arguments (after this database's `--db`), as its own process. */
function runCommand(
  db: ScratchDatabase,
  command: BadCommand,
  cwd: string,
): Promise<{ code: number | null; stderr: string }> {
  const dbArgs = ["--db", db.env.CHAOS_URL, ...(db.schema ? ["--schema", db.schema] : [])];
  const env: Record<string, string> = { TSX_TSCONFIG_PATH: tsconfig };
  for (const [k, v] of Object.entries(process.env)) {
    if (v !== undefined && !k.startsWith("ERRAND_") && !(k in env)) env[k] = v;
  }
  const args = ["--import", import.meta.resolve("tsx"), cliMain, ...(command.noDb ? [] : dbArgs), ...command.args];
  const child = spawn(process.execPath, args, { cwd, env, stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
  const timer = setTimeout(() => child.kill("SIGKILL"), COMMAND_TIMEOUT_MS);
  return new Promise((resolve) => {
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stderr });
    });
  });
}

/** `fn` over `items`, `size` at a time; the results in order. */
async function inBatches<T, R>(items: readonly T[], size: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = [];
  for (let i = 0; i < items.length; i += size) results.push(...await Promise.all(items.slice(i, i + size).map(fn)));
  return results;
}
