/**
 * The packages as users get them. The npm tarball (`npm pack`, which builds
 * dist/) is installed into a fresh project, where plain Node 20 ESM (no tsx,
 * no loader) and Bun import every subpath and run a job on libSQL, its bin
 * `errand` runs on both, and tsc
 * type-checks a consumer file against the shipped .d.ts. deno.json and
 * package.json export the same subpaths, and `deno publish --dry-run`
 * passes (no slow types). Runs on Node, which drives npm.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { fileURLToPath } from "node:url";
import { describe, it } from "node:test";

const root = fileURLToPath(new URL("../..", import.meta.url));
const onNode = !("Deno" in globalThis) && !process.versions.bun;
const bin = (name: string) => `${root}node_modules/.bin/${name}`;
const run = (command: string, args: string[], cwd: string) =>
  execFileSync(command, args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], timeout: 180_000 });

const CHECK = `
import { createClient } from "@libsql/client";
import { createErrand, defineJobs, job, partitionOf } from "errand";
import { libsqlStore } from "errand/libsql";
import { postgresStore } from "errand/postgres";
import { adminRouter } from "errand/hono";
import { FakeClock } from "errand/testing";

const ran = [];
const jobs = defineJobs({ hello: job() });
const errand = createErrand({
  jobs,
  store: libsqlStore(createClient({ url: "file:" + process.argv[2] })),
  handlers: { hello: (p) => void ran.push(p.name) },
});
await errand.start();
const { id } = await errand.enqueue("hello", { name: "packed" });
for (let i = 0; i < 200 && (await errand.get(id))?.state !== "completed"; i++) await new Promise((r) => setTimeout(r, 25));
await errand.shutdown();
const kinds = [typeof postgresStore, typeof adminRouter(errand, { insecure: true }).fetch, typeof FakeClock];
console.log(JSON.stringify({ ran, kinds, partition: partitionOf("k", 8) }));
`;

const CONSUMER = `
import { createErrand, defineJobs, job, type JobInfo } from "errand";
import { libsqlStore } from "errand/libsql";
import { createClient } from "@libsql/client";

const jobs = defineJobs({ charge: job<{ cents: number }>() });
const errand = createErrand({ jobs, store: libsqlStore(createClient({ url: ":memory:" })), mode: "enqueue" });
export async function ok(): Promise<JobInfo | null> {
  const { id } = await errand.enqueue("charge", { cents: 5 });
  return await errand.get(id);
}
// @ts-expect-error: "cents" must be a number
void errand.enqueue("charge", { cents: "5" });
`;

describe("packages", { skip: onNode ? false : "npm pack and install run from Node" }, () => {
  it("deno.json and package.json export the same subpaths; deno publish --dry-run passes", () => {
    const deno = JSON.parse(readFileSync(`${root}deno.json`, "utf8"));
    const npm = JSON.parse(readFileSync(`${root}package.json`, "utf8"));
    assert.deepEqual(Object.keys(npm.exports).sort(), Object.keys(deno.exports).sort());
    for (const [subpath, target] of Object.entries(deno.exports as Record<string, string>)) {
      const built = target.replace(/^\.\//, "./dist/").replace(/\.ts$/, "");
      assert.deepEqual(npm.exports[subpath], { types: `${built}.d.ts`, default: `${built}.js` }, subpath);
    }
    const out = execFileSync(bin("deno"), ["publish", "--dry-run", "--allow-dirty"], {
      cwd: root,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
      timeout: 180_000,
    });
    assert.ok(out !== undefined);
  });

  it("the npm tarball installs into a fresh project, imports from plain Node and Bun, runs a job, type-checks", () => {
    const work = mkdtempSync(`${tmpdir()}/errand-pack-`);
    try {
      const tarball = run("npm", ["pack", "--silent", "--pack-destination", work], root).trim().split("\n").pop()!;
      const project = `${work}/app`;
      execFileSync("mkdir", ["-p", project]);
      writeFileSync(`${project}/package.json`, JSON.stringify({ name: "app", private: true, type: "module" }));
      run("npm", [
        "install",
        "--prefer-offline",
        "--no-audit",
        "--no-fund",
        `${work}/${tarball}`,
        "@libsql/client",
        "hono",
        "postgres",
      ], project);
      writeFileSync(`${project}/check.mjs`, CHECK);
      const expected = { ran: ["packed"], kinds: ["function", "function", "function"], partition: 0 };
      for (const [runtime, args] of [["node", []], [bin("bun"), []]] as const) {
        const out = run(runtime, [...args, "check.mjs", `${work}/${runtime.length}.db`], project);
        const result = JSON.parse(out.trim().split("\n").pop()!);
        assert.deepEqual(result.ran, expected.ran, runtime);
        assert.deepEqual(result.kinds, expected.kinds, runtime);
      }
      // The bin: `errand` from plain Node (its shebang) and from Bun, on the same database.
      const cli = `${project}/node_modules/.bin/errand`;
      const version = JSON.parse(readFileSync(`${root}package.json`, "utf8")).version;
      assert.equal(run(cli, ["--version"], project).trim(), version);
      const migrated = JSON.parse(run(cli, ["--db", `file:${work}/cli.db`, "migrate", "--json"], project));
      assert.equal(migrated.applied, true);
      for (const [runtime, args] of [[cli, []], [bin("bun"), [cli]]] as const) {
        const stats = JSON.parse(run(runtime, [...args, "--db", `file:${work}/cli.db`, "stats", "--json"], project));
        assert.equal(stats.jobs.byState.failed, 0, runtime);
      }
      writeFileSync(`${project}/consumer.ts`, CONSUMER);
      writeFileSync(
        `${project}/tsconfig.json`,
        JSON.stringify({
          compilerOptions: {
            module: "nodenext",
            moduleResolution: "nodenext",
            strict: true,
            noEmit: true,
            target: "es2022",
          },
          files: ["consumer.ts"],
        }),
      );
      run(bin("tsc"), ["-p", "tsconfig.json"], project);
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  });
});
