/**
 * The packages as users get them. The npm tarball (`npm pack`, which builds
 * dist/) is installed into a fresh project, where plain Node 20 ESM (no tsx,
 * no loader) and Bun import every subpath and run a job on libSQL, its bin
 * `errand` runs on both, and tsc
 * type-checks a consumer file against the shipped .d.ts. deno.json and
 * package.json export the same subpaths, and `deno publish --dry-run`
 * passes (no slow types). The command line's packages are optional
 * dependencies: no entry of the library reaches them, and an install that
 * leaves them out (`--omit=optional`) imports the library while its bin
 * names what to install. Runs on Node, which drives npm.
 */
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { fileURLToPath } from "node:url";
import { after, describe, it } from "node:test";

const root = fileURLToPath(new URL("../..", import.meta.url));
const onNode = !("Deno" in globalThis) && !process.versions.bun;
const bin = (name: string) => `${root}node_modules/.bin/${name}`;
const run = (command: string, args: string[], cwd: string) =>
  execFileSync(command, args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], timeout: 180_000 });
/** The command line's own packages: errand's optional dependencies, which the library never imports. */
const CLI_PACKAGES = ["cli-progress", "cli-table3", "commander", "picocolors"];

/** The repository's source files (.ts, .mjs) as root-relative paths, outside node_modules, builds and dot folders. */
function sourceFiles(dir = ""): string[] {
  return readdirSync(root + dir, { withFileTypes: true }).flatMap((entry) => {
    if (entry.name.startsWith(".") || entry.name === "node_modules" || entry.name === "dist") return [];
    const path = dir + entry.name;
    if (entry.isDirectory()) return sourceFiles(`${path}/`);
    return /\.(ts|mjs)$/.test(entry.name) ? [path] : [];
  });
}

/** The package a bare import specifier names (`name` or `@scope/name`), its subpath cut off. */
const packageOf = (spec: string) => spec.split("/").slice(0, spec.startsWith("@") ? 2 : 1).join("/");

/** The packages `text` imports, statically or dynamically. */
const importedPackages = (text: string) =>
  [...text.matchAll(/(?:\bfrom|\bimport)\s*\(?\s*["']([^"'.][^"']*)["']/g)].map(([, spec]) => packageOf(spec));

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
  let work: string | undefined;
  let tarball: string | undefined;
  /** This suite's folder of tarballs, projects and databases, made on first use. */
  const workDir = () => (work ??= mkdtempSync(`${tmpdir()}/errand-pack-`));
  /** The npm tarball (`npm pack`, which builds dist/), made once for the tests that install it. */
  const packed = () => {
    if (tarball) return tarball;
    const name = run("npm", ["pack", "--silent", "--pack-destination", workDir()], root).trim().split("\n").pop();
    return (tarball = `${workDir()}/${name}`);
  };
  /** A fresh project `work/<name>` with the tarball and the drivers and Hono installed by `npm install` with `flags`. */
  const project = (name: string, ...flags: string[]) => {
    const dir = `${workDir()}/${name}`;
    mkdirSync(dir, { recursive: true });
    writeFileSync(`${dir}/package.json`, JSON.stringify({ name: "app", private: true, type: "module" }));
    run("npm", [
      "install",
      "--prefer-offline",
      "--no-audit",
      "--no-fund",
      ...flags,
      packed(),
      "@libsql/client",
      "hono",
      "postgres",
    ], dir);
    return dir;
  };
  after(() => work && rmSync(work, { recursive: true, force: true }));

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
    const app = project("app");
    writeFileSync(`${app}/check.mjs`, CHECK);
    const expected = { ran: ["packed"], kinds: ["function", "function", "function"], partition: 0 };
    for (const [runtime, args] of [["node", []], [bin("bun"), []]] as const) {
      const out = run(runtime, [...args, "check.mjs", `${workDir()}/${runtime.length}.db`], app);
      const result = JSON.parse(out.trim().split("\n").pop()!);
      assert.deepEqual(result.ran, expected.ran, runtime);
      assert.deepEqual(result.kinds, expected.kinds, runtime);
    }
    // The bin: `errand` from plain Node (its shebang) and from Bun, on the same database.
    const cli = `${app}/node_modules/.bin/errand`;
    const version = JSON.parse(readFileSync(`${root}package.json`, "utf8")).version;
    assert.equal(run(cli, ["--version"], app).trim(), version);
    const migrated = JSON.parse(run(cli, ["--db", `file:${workDir()}/cli.db`, "migrate", "--json"], app));
    assert.equal(migrated.applied, true);
    for (const [runtime, args] of [[cli, []], [bin("bun"), [cli]]] as const) {
      const stats = JSON.parse(run(runtime, [...args, "--db", `file:${workDir()}/cli.db`, "stats", "--json"], app));
      assert.equal(stats.jobs.byState.failed, 0, runtime);
    }
    writeFileSync(`${app}/consumer.ts`, CONSUMER);
    writeFileSync(
      `${app}/tsconfig.json`,
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
    run(bin("tsc"), ["-p", "tsconfig.json"], app);
  });

  it("the library's entries never reach the command line's packages; only cli/ imports them", async () => {
    const npm = JSON.parse(readFileSync(`${root}package.json`, "utf8"));
    assert.deepEqual(Object.keys(npm.optionalDependencies).sort(), CLI_PACKAGES);
    const deno = JSON.parse(readFileSync(`${root}deno.json`, "utf8"));
    const { build } = await import("esbuild");
    for (const entry of Object.values(deno.exports as Record<string, string>)) {
      // Every package left external: the metafile lists each module the entry reaches and what it imports.
      const { metafile } = await build({
        entryPoints: [`${root}${entry}`],
        bundle: true,
        write: false,
        metafile: true,
        packages: "external",
        platform: "node",
        format: "esm",
        outdir: "out",
        logLevel: "silent",
      });
      const modules = Object.keys(metafile.inputs);
      assert.ok(modules.length > 0, entry);
      assert.deepEqual(modules.filter((m) => m.startsWith("cli/")), [], entry);
      const reached = Object.values(metafile.inputs).flatMap((input) =>
        input.imports.filter((i) => i.external).map((i) => packageOf(i.path))
      );
      assert.deepEqual(CLI_PACKAGES.filter((p) => reached.includes(p)), [], entry);
    }
    const importers = sourceFiles().filter((file) =>
      importedPackages(readFileSync(root + file, "utf8")).some((p) => CLI_PACKAGES.includes(p))
    );
    assert.ok(importers.length > 0);
    assert.deepEqual(importers.filter((file) => !file.startsWith("cli/")), []);
  });

  it("installed without optional dependencies, the library imports and the bin names the packages to install", () => {
    const lean = project("lean", "--omit=optional");
    const missing = CLI_PACKAGES.filter((p) => !existsSync(`${lean}/node_modules/${p}`));
    assert.ok(missing.includes("commander"), "commander was left out");
    const imported = run("node", [
      "--input-type=module",
      "--eval",
      `const subpaths = ["errand", "errand/postgres", "errand/libsql", "errand/hono", "errand/testing", "errand/store",
         "errand/sqlite"];
       const modules = await Promise.all(subpaths.map((s) => import(s)));
       const [core, pg, libsql, hono, testing, , sqlite] = modules;
       console.log(JSON.stringify([core.createErrand, pg.postgresStore, libsql.libsqlStore, hono.adminRouter,
         testing.FakeClock, sqlite.sqliteStore].map((f) => typeof f)));`,
    ], lean);
    assert.deepEqual(JSON.parse(imported.trim()), Array(6).fill("function"));
    const cli = spawnSync(`${lean}/node_modules/.bin/errand`, ["--version"], { cwd: lean, encoding: "utf8" });
    assert.equal(cli.status, 1, cli.stderr);
    assert.equal(cli.stdout, "");
    assert.match(cli.stderr, /^errand: the command line needs .*npm install /);
    for (const p of missing) assert.match(cli.stderr, new RegExp(` ${p}@\\^`), p);
    assert.doesNotMatch(cli.stderr, /\n\s+at /, "no stack trace");
  });
});
