/**
 * `npm run chaos` (chaos/run.ts) as its own process: `--help` prints the
 * usage and runs nothing; an unknown option or store is refused with exit
 * code 2 before any scenario starts.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, it } from "node:test";
import { runtimeCommand } from "../support/processes.ts";

const root = fileURLToPath(new URL("../..", import.meta.url));
const runner = fileURLToPath(new URL("../../chaos/run.ts", import.meta.url));

/** Runs chaos/run.ts with `args`; kills it after 60 s (a run of the suite would take far longer). */
function chaos(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const [command, prefix] = runtimeCommand(runner);
  const child = spawn(command, [...prefix, ...args], { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
  child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`chaos/run.ts ${args.join(" ")} ran scenarios instead of ending:\n${stdout}\n${stderr}`));
    }, 60_000);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

describe("chaos/run.ts", () => {
  it("--help prints the usage and the scenarios, and runs none", async () => {
    const help = await chaos(["--help"]);
    assert.equal(help.code, 0, help.stderr);
    assert.match(
      help.stdout,
      /^Usage: npm run chaos -- \[scenario \.\.\.\] \[--quick\] \[--store libsql\|sqlite\|postgres\]$/m,
    );
    assert.match(help.stdout, /^ {2}kill_storm {2,}\S/m);
    assert.doesNotMatch(help.stdout, /"scenario":/, "no scenario ran");
  });

  it("refuses an unknown option or store with exit code 2, before any scenario runs", async () => {
    const bogus = await chaos(["kill_storm", "--quik"]);
    assert.equal(bogus.code, 2);
    assert.match(bogus.stderr, /^Unknown option "--quik"$/m);
    assert.match(bogus.stderr, /^Usage: npm run chaos/m);
    assert.equal(bogus.stdout, "", "no scenario ran");
    const store = await chaos(["--store", "mysql"]);
    assert.equal(store.code, 2);
    assert.match(store.stderr, /--store takes libsql, sqlite or postgres, not "mysql"/);
  });
});
