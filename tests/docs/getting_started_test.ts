/**
 * The getting-started pages, followed as written. Each runtime page
 * (docs/getting-started/{node,deno,bun}.md) marks its shell steps and its
 * program files:
 *
 * - `<!-- step -->` before a ```sh block: commands typed in a terminal;
 *   `<!-- step: TAG ... -->` only in the runs that have every TAG (`node20`,
 *   `node22`, `postgres`).
 * - `<!-- file: NAME -->` before a ```ts block: a file saved under NAME where
 *   the page stands; `<!-- file: NAME TAG ... -->` only in the runs that
 *   have every TAG (a page's variants of one file, e.g. in a code group).
 *
 * Each page becomes one bash script in document order (so its `cd` carries
 * over): the steps as written, each file saved with a here-document. The
 * blocks from the first `postgres` step on are the page's PostgreSQL part,
 * run after the rest in the same project directory, only with DATABASE_URL.
 *
 * `errand` is not on the public registry yet, so the pages install it from
 * the tarball `npm pack` writes in a checkout, copied next to the project
 * (`../errand-0.1.0.tgz` from inside it). The checkout is packed (which
 * builds dist/) into the directory each run starts in, under the name npm
 * gives it, so a page that names another version fails. Every other
 * package comes through a local registry (tests/support/local_registry.ts)
 * that also serves errand as if it were published; every client is pointed
 * at it with the environment variables it reads, with caches of its own
 * under a fresh temporary directory, and none may ask it for errand: the
 * pages must work while errand is not published.
 *
 * The Node page runs twice: its node20 steps on the machine's Node and its
 * node22 steps on Node 24 (the devDependency node24). Runs on Node only,
 * once: the suite's run on Node 24 skips it.
 */
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
} from "node:fs";
import { basename } from "node:path";
import { tmpdir } from "node:os";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { after, before, describe, it } from "node:test";
import { fencedBlocks } from "../support/doc_blocks.ts";
import { type LocalRegistry, startLocalRegistry } from "../support/local_registry.ts";

const root = fileURLToPath(new URL("../..", import.meta.url));
const onNode = !("Deno" in globalThis) && !process.versions.bun;
/** The machine's own Node; undefined when this runs on the devDependency node24. */
const machineNode = process.execPath.includes("/node_modules/") ? undefined : process.execPath;
const node24 = `${root}node_modules/node24/bin/node`;
const databaseUrl = process.env.DATABASE_URL;

const skip = !onNode
  ? "npm pack and the installs run from Node"
  : !machineNode
  ? "followed once, from the machine's Node, which runs both Node variants of the page"
  : false;

/** A marked block of a page. */
type Block =
  | { kind: "step"; tags: string[]; code: string; line: number }
  | { kind: "file"; name: string; tags: string[]; code: string; line: number };

const MARKER = /^(?:step(?::([\w\s-]*))?|file:\s*([\w.-]+)([\w\s-]*))$/;

/** The marked blocks of a page, in order. */
function blocksOf(page: string): Block[] {
  const blocks: Block[] = [];
  for (const { lang, marker: comment, code, line } of fencedBlocks(page)) {
    const marker = MARKER.exec(comment ?? "");
    if (!marker) continue;
    const [, stepTags, name, fileTags] = marker;
    const tags = (name ? fileTags : stepTags)?.trim().split(/\s+/).filter(Boolean) ?? [];
    if (name) {
      assert.equal(lang, "ts", `${page}:${line}: a file: block is a ts block`);
      blocks.push({ kind: "file", name, tags, code, line });
    } else {
      assert.equal(lang, "sh", `${page}:${line}: a step is an sh block`);
      blocks.push({ kind: "step", tags, code, line });
    }
  }
  return blocks;
}

/** The blocks before the first `postgres` step, and the rest. */
function partsOf(blocks: Block[]): { sqlite: Block[]; postgres: Block[] } {
  const at = blocks.findIndex((b) => b.kind === "step" && b.tags.includes("postgres"));
  return at < 0 ? { sqlite: blocks, postgres: [] } : { sqlite: blocks.slice(0, at), postgres: blocks.slice(at) };
}

const included = (block: Block, tags: string[]) => block.tags.every((t) => tags.includes(t));

/** One bash script that does what the blocks say, for a run with these tags. */
function scriptOf(page: string, blocks: Block[], tags: string[]): string {
  const lines = ["set -eo pipefail", "PS4='$ '", "set -x"];
  for (const block of blocks.filter((b) => included(b, tags))) {
    lines.push(`# ${page}:${block.line}`);
    if (block.kind === "step") {
      lines.push(block.code);
    } else {
      const end = "ERRAND_GETTING_STARTED_EOF";
      assert.ok(!block.code.includes(end), `${page}:${block.line}`);
      lines.push(`cat > '${block.name}' <<'${end}'`, block.code.replace(/\n$/, ""), end);
    }
  }
  return `${lines.join("\n")}\n`;
}

/** Runs a bash script in its own process group, killed with everything it started after `timeoutMs`. */
function bash(
  script: string,
  cwd: string,
  env: Record<string, string>,
  timeoutMs: number,
): Promise<{ code: number | null; output: string }> {
  const child = spawn("bash", ["-c", script], { cwd, env, stdio: ["ignore", "pipe", "pipe"], detached: true });
  let output = "";
  child.stdout.on("data", (d) => (output += d));
  child.stderr.on("data", (d) => (output += d));
  const killGroup = () => {
    try {
      process.kill(-child.pid!, "SIGKILL");
    } catch {
      // Already gone.
    }
  };
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      output += `\n(killed after ${timeoutMs} ms)`;
      killGroup();
    }, timeoutMs);
    child.on("close", (code) => {
      clearTimeout(timer);
      killGroup(); // anything the script left behind
      resolve({ code, output });
    });
  });
}

/** The last lines of a transcript. */
const tail = (output: string) => output.trimEnd().split("\n").slice(-6).join("\n");

/** One way to follow a page. */
interface Run {
  label: string;
  /** The tags of the steps it follows. */
  tags: string[];
  /** The `node` on its PATH. */
  node: string | undefined;
}

const pages: { page: string; runs: Run[] }[] = [
  {
    page: "docs/getting-started/node.md",
    runs: [
      { label: `Node ${process.version}, the node20 steps`, tags: ["node20"], node: machineNode },
      { label: "Node 24, the node22 steps", tags: ["node22"], node: existsSync(node24) ? node24 : undefined },
    ],
  },
  {
    page: "docs/getting-started/deno.md",
    runs: [{ label: "Deno", tags: [], node: machineNode }],
  },
  {
    page: "docs/getting-started/bun.md",
    runs: [{ label: "Bun", tags: [], node: machineNode }],
  },
];

/** DATABASE_URL as the pages use it: a loopback address written as `localhost`, as in their Deno `--allow-net`. */
function pageDatabaseUrl(url: string): URL {
  const parsed = new URL(url);
  if (parsed.hostname === "127.0.0.1") parsed.hostname = "localhost";
  return parsed;
}

/** Why a run's PostgreSQL part is skipped, if it is. */
function postgresSkip(blocks: Block[], tags: string[]): string | false {
  if (!databaseUrl) return "DATABASE_URL is not set";
  const url = pageDatabaseUrl(databaseUrl);
  const where = `${url.hostname}:${url.port || 5432}`;
  for (const block of blocks) {
    if (block.kind !== "step" || !included(block, [...tags, "postgres"])) continue;
    for (const [, allowed] of block.code.matchAll(/--allow-net=["']?([^\s"']+)/g)) {
      if (allowed !== where) return `the page allows --allow-net=${allowed}; DATABASE_URL is at ${where}`;
    }
  }
  return false;
}

describe("getting started, followed as written", { skip }, () => {
  let work = "";
  let tarball = "";
  let registry: LocalRegistry;
  const bins = new Map<string, string>();

  before(async () => {
    work = mkdtempSync(`${tmpdir()}/errand-getting-started-`);
    const packed = execFileSync("npm", ["pack", "--silent", "--pack-destination", work], {
      cwd: root,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
      timeout: 180_000,
    }).trim().split("\n").pop()!;
    tarball = `${work}/${packed}`;
    registry = await startLocalRegistry({ tarball });
  });

  after(async () => {
    await registry?.close();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  /** A directory with `node` (the given one), `deno`, `bun` and `bunx`, as a user has them installed. */
  const binFor = (node: string) => {
    if (!bins.has(node)) {
      const dir = `${work}/bin-${bins.size}`;
      mkdirSync(dir);
      symlinkSync(node, `${dir}/node`);
      for (const tool of ["deno", "bun", "bunx"]) {
        symlinkSync(realpathSync(`${root}node_modules/.bin/${tool}`), `${dir}/${tool}`);
      }
      bins.set(node, dir);
    }
    return bins.get(node)!;
  };

  /**
   * The environment of a run: the user's, with every package client pointed at
   * the registry, and caches of the run's own in `caches` (so each run fetches
   * errand from the registry, and never an older errand).
   */
  const envFor = (node: string, caches: string, extra: Record<string, string> = {}) => {
    const env: Record<string, string> = {};
    for (const [key, value] of Object.entries(process.env)) {
      // Not the settings of an `npm test` around this run, its test runner, or a database the page does not ask for.
      if (
        value === undefined ||
        /^(npm_|bun_|deno_|node$|node_options$|node_test_context$|init_cwd$|database_url$)/i.test(key)
      ) {
        continue;
      }
      env[key] = value;
    }
    const path = (process.env.PATH ?? "").split(":").filter((dir) => dir && !dir.includes("node_modules"));
    return {
      ...env,
      PATH: [binFor(node), ...path].join(":"),
      NO_COLOR: "1",
      npm_config_registry: registry.url,
      NPM_CONFIG_REGISTRY: registry.url,
      BUN_CONFIG_REGISTRY: registry.url,
      npm_config_cache: `${caches}/npm`,
      npm_config_audit: "false",
      npm_config_fund: "false",
      npm_config_update_notifier: "false",
      DENO_DIR: `${caches}/deno`,
      DENO_NO_UPDATE_CHECK: "1",
      BUN_INSTALL_CACHE_DIR: `${caches}/bun`,
      ...extra,
    };
  };

  for (const { page, runs } of pages) {
    const blocks = blocksOf(page);
    const { sqlite, postgres } = partsOf(blocks);

    it(`${page}: every step is followed by one of its runs`, () => {
      assert.ok(blocks.some((b) => b.kind === "file" && b.name === "main.ts"), "the page saves main.ts");
      for (const block of blocks) {
        const runsIt = runs.some((run) => included(block, [...run.tags, "postgres"]));
        assert.ok(runsIt, `${page}:${block.line} is marked for no run (${block.kind}: ${block.tags.join(" ")})`);
      }
    });

    for (const run of runs) {
      describe(`${page} on ${run.label}`, { skip: run.node ? false : "no such Node here" }, () => {
        let project: string | undefined;
        const name = `${page.replace(/\W/g, "_")}_${run.tags.join("_")}`;
        const state = () => `${work}/${name}.pwd`;
        const caches = () => `${work}/${name}.caches`;

        it(
          "with SQLite: installs errand from the tarball next to the project, runs main.ts, its job completes",
          { timeout: 240_000 },
          async (t) => {
            const cwd = mkdtempSync(`${work}/run-`);
            copyFileSync(tarball, `${cwd}/${basename(tarball)}`); // where the page has the reader put it
            const seen = registry.requests.length;
            const script = `${scriptOf(page, sqlite, run.tags)}pwd > '${state()}'\n`;
            const { code, output } = await bash(script, cwd, envFor(run.node!, caches()), 200_000);
            t.diagnostic(tail(output));
            assert.equal(code, 0, `${page} (${run.label}) failed:\n${output}`);
            assert.match(output, /^Job \S+ completed$/m, output);
            const asked = registry.requests.slice(seen).filter((r) => r.local);
            assert.deepEqual(asked, [], "the page asks a registry for errand, which is not published yet");
            project = readFileSync(state(), "utf8").trim();
          },
        );

        it("with PostgreSQL: the page's last section runs main_pg.ts, its job completes", {
          skip: postgres.length ? postgresSkip(postgres, run.tags) : "the page has no PostgreSQL section",
          timeout: 180_000,
        }, async (t) => {
          if (!project) return t.skip("the SQLite part did not finish");
          const script = `cd '${project}'\n${scriptOf(page, postgres, [...run.tags, "postgres"])}`;
          const env = envFor(run.node!, caches(), { DATABASE_URL: pageDatabaseUrl(databaseUrl!).toString() });
          const seen = registry.requests.length;
          const { code, output } = await bash(script, project, env, 150_000);
          t.diagnostic(tail(output));
          assert.deepEqual(registry.requests.slice(seen).filter((r) => r.local), [], "asks a registry for errand");
          assert.equal(code, 0, `${page} (${run.label}, PostgreSQL) failed:\n${output}`);
          assert.match(output, /^Job \S+ completed$/m, output);
        });
      });
    }
  }
});
