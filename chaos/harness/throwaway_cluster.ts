/**
 * A PostgreSQL cluster of one scenario's own, for the scenarios that
 * restart a server or exhaust its connections: the shared server at
 * DATABASE_URL is never restarted or overloaded. `initdb` makes it in a new
 * temporary directory, `pg_ctl` runs it on a free port of 127.0.0.1 (its
 * socket in that directory too), and `remove()` stops it and deletes the
 * directory. Run as root (as here and in CI), the server runs as the user
 * `postgres`, since PostgreSQL refuses to run as root.
 */
import { execFile, execFileSync } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import process from "node:process";
import { freePort } from "../../tests/support/free_port.ts";
import { sleep } from "../../tests/support/wait.ts";

/** One running throwaway cluster. */
export interface ThrowawayCluster {
  /** The URL of its database `postgres`, as the superuser `root`. */
  readonly url: string;
  readonly port: number;
  /**
   * Stops the server (fast shutdown: every connection is cut), waits
   * `downMs`, and starts it again. Resolves with when it was down and up
   * again (ms since the epoch, as the run log's `t`).
   */
  restart(downMs: number): Promise<{ downAt: number; upAt: number }>;
  /** What the server has logged so far (e.g. the connections it refused). */
  serverLog(): string;
  /** Stops the server at once and deletes its directory; safe to call twice. */
  remove(): Promise<void>;
}

const now = () => performance.timeOrigin + performance.now();

/** The directory of initdb, pg_ctl and postgres: pg_config's, else the newest under /usr/lib/postgresql. */
function binDir(): string {
  try {
    const dir = execFileSync("pg_config", ["--bindir"], { encoding: "utf8" }).trim();
    if (existsSync(`${dir}/initdb`)) return dir;
  } catch {
    // No pg_config on the PATH: look where Debian installs the server.
  }
  const versions = existsSync("/usr/lib/postgresql")
    ? readdirSync("/usr/lib/postgresql").filter((v) => existsSync(`/usr/lib/postgresql/${v}/bin/initdb`))
    : [];
  const newest = versions.sort((a, b) => Number(b) - Number(a))[0];
  if (!newest) {
    throw new Error("A throwaway PostgreSQL cluster needs initdb and pg_ctl (the PostgreSQL server package)");
  }
  return `/usr/lib/postgresql/${newest}/bin`;
}

/**
 * Starts a new cluster with the server settings `settings` (e.g.
 * `{ max_connections: "40" }`); every command has a deadline.
 */
export async function startThrowawayCluster(settings: Record<string, string> = {}): Promise<ThrowawayCluster> {
  const bin = binDir();
  const dir = mkdtempSync(`${tmpdir()}/errand-chaos-pg-`);
  const asRoot = process.getuid?.() === 0;
  if (asRoot) chownSync(dir, Number(execFileSync("id", ["-u", "postgres"], { encoding: "utf8" })), -1);
  const serverLog = () => existsSync(`${dir}/server.log`) ? readFileSync(`${dir}/server.log`, "utf8") : "";
  const run = (program: string, args: string[], timeoutMs: number) =>
    new Promise<void>((resolve, reject) => {
      const [file, argv] = asRoot ? ["runuser", ["-u", "postgres", "--", `${bin}/${program}`, ...args]] : [
        `${bin}/${program}`,
        args,
      ];
      execFile(file, argv, { timeout: timeoutMs }, (err, _stdout, stderr) => {
        if (!err) return resolve();
        reject(new Error(`${program} ${args[0]} failed: ${err.message}\n${stderr}\n${serverLog().slice(-2_000)}`));
      });
    });
  let port = 0;
  const start = async () => {
    const options = [
      `-p ${port}`,
      `-k ${dir}`,
      "-c listen_addresses=127.0.0.1",
      ...Object.entries(settings).map(([name, value]) => `-c ${name}=${value}`),
    ];
    await run("pg_ctl", [
      "start",
      "-D",
      `${dir}/data`,
      "-l",
      `${dir}/server.log`,
      "-w",
      "-t",
      "30",
      "-o",
      options.join(" "),
    ], 40_000);
  };
  const stop = (mode: "fast" | "immediate") =>
    run("pg_ctl", ["stop", "-D", `${dir}/data`, "-m", mode, "-w", "-t", "30"], 40_000);
  let removed = false;
  const remove = async () => {
    if (removed) return;
    removed = true;
    if (existsSync(`${dir}/data/postmaster.pid`)) await stop("immediate").catch(() => {});
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    // No fsync of the new files: the cluster lives for one run.
    await run("initdb", ["-D", `${dir}/data`, "-U", "root", "--auth=trust", "--no-sync"], 60_000);
    port = await freePort();
    await start();
  } catch (err) {
    await remove();
    throw err;
  }
  return {
    url: `postgres://root@127.0.0.1:${port}/postgres`,
    port,
    async restart(downMs) {
      const downAt = now();
      await stop("fast");
      await sleep(downMs);
      await start();
      return { downAt, upAt: now() };
    },
    serverLog,
    remove,
  };
}
