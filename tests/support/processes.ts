/**
 * Child processes of the tests and the chaos suite: the command that runs a
 * TypeScript program on the runtime running this one (Node through tsx, Deno
 * or Bun), and {@link Workers}, the programs of one run on one database, each
 * started as the one process of its program (so a signal reaches the program
 * itself), waited for until it prints "ready", and stopped or killed with
 * signals that are recorded with their time for the run-log checks.
 */
import { type ChildProcess, spawn } from "node:child_process";
import process from "node:process";
import { fileURLToPath } from "node:url";

const denoConfig = fileURLToPath(new URL("../../deno.json", import.meta.url));
// Its paths point the package's own name (`errand`, `errand/libsql`, ...) at this checkout, as deno.json's imports do
// for Deno; tsx reads it from this variable in every process this one starts, whatever their working directory.
process.env.TSX_TSCONFIG_PATH ??= fileURLToPath(new URL("../../tsconfig.json", import.meta.url));

/**
 * The command that runs a TypeScript file on the runtime running this process
 * (Deno, Bun, or Node with tsx), from any working directory. It is the one
 * process that runs the file, so a signal sent to it reaches the program.
 */
export function runtimeCommand(script: string): [string, string[]] {
  if ("Deno" in globalThis) return [Deno.execPath(), ["run", "-A", "--config", denoConfig, script]];
  if (process.versions.bun) return [process.execPath, [script]];
  return [process.execPath, ["--import", import.meta.resolve("tsx"), script]];
}

/** A signal sent to a worker, and when (ms since the epoch, as a run log's `t`). */
export interface SentSignal {
  readonly pid: number;
  readonly signal: NodeJS.Signals;
  readonly t: number;
}

/** One running child process. */
export interface Worker {
  readonly child: ChildProcess;
  readonly pid: number;
  /** Everything it wrote to stderr. */
  stderr(): string;
  /** Resolves when it has exited. */
  readonly exited: Promise<void>;
}

const now = () => performance.timeOrigin + performance.now();

/** The child processes of one test or scenario run, and the signals sent to them. */
export class Workers {
  readonly #env: Record<string, string>;
  readonly #program: string;
  readonly #live = new Set<Worker>();
  readonly #all: Worker[] = [];
  /** Every signal sent, in order. */
  readonly signals: SentSignal[] = [];

  /**
   * Children that run `program` (unless {@link start} is given another) with
   * `env` added to this process's environment (how they open the database,
   * where their run log is).
   */
  constructor(program: string, env: Record<string, string> = {}) {
    this.#program = program;
    this.#env = env;
  }

  /** The children still running. */
  get live(): Worker[] {
    return [...this.#live];
  }

  /**
   * Starts `program` with `env` added to its environment, and waits until it
   * says "ready" (a program of a run prints it once it has started).
   */
  async start(env: Record<string, string> = {}, program = this.#program): Promise<Worker> {
    const [command, args] = runtimeCommand(program);
    const child = spawn(command, args, {
      env: { ...process.env, ...this.#env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr!.on("data", (chunk) => (stderr += chunk));
    const exited = new Promise<void>((resolve) => child.on("exit", () => resolve()));
    const worker: Worker = { child, pid: child.pid!, stderr: () => stderr, exited };
    this.#live.add(worker);
    this.#all.push(worker);
    void exited.then(() => this.#live.delete(worker));
    await new Promise<void>((resolve, reject) => {
      child.stdout!.on("data", (chunk) => String(chunk).includes("ready") && resolve());
      void exited.then(() => reject(new Error(`a worker exited before it was ready:\n${stderr.slice(-8_000)}`)));
    });
    return worker;
  }

  /** Sends `signal` to `worker`, unless it has exited, and records it. */
  signal(worker: Worker, signal: NodeJS.Signals): void {
    if (!this.#live.has(worker)) return;
    this.signals.push({ pid: worker.pid, signal, t: now() });
    // By its pid: Deno's `ChildProcess.kill()` sends a child one signal only (later calls send nothing and return
    // false), and a test that runs on Deno stops and continues a member more than once.
    try {
      process.kill(worker.pid, signal);
    } catch (err) {
      // It exited meanwhile.
      if ((err as NodeJS.ErrnoException).code !== "ESRCH") throw err;
    }
  }

  /** SIGKILLs `worker` and waits until it is gone. */
  async kill(worker: Worker): Promise<void> {
    this.signal(worker, "SIGKILL");
    await worker.exited;
  }

  /**
   * SIGTERMs `worker` (after a SIGCONT: a stopped process cannot handle
   * SIGTERM) and waits up to `graceMs` for it to exit, then SIGKILLs it;
   * says whether it exited in time.
   */
  async stop(worker: Worker, graceMs = 15_000): Promise<boolean> {
    if (!this.#live.has(worker)) return true;
    this.signal(worker, "SIGCONT");
    this.signal(worker, "SIGTERM");
    let timer: ReturnType<typeof setTimeout> | undefined;
    const inTime = await Promise.race([
      worker.exited.then(() => true),
      new Promise<boolean>((r) => (timer = setTimeout(() => r(false), graceMs))),
    ]);
    // A pending timer would keep a test's process alive after its tests.
    clearTimeout(timer);
    if (!inTime) await this.kill(worker);
    return inTime;
  }

  /** Stops every live worker at once (see {@link stop}); returns how many had to be killed. */
  async stopAll(graceMs = 15_000): Promise<number> {
    const inTime = await Promise.all(this.live.map((w) => this.stop(w, graceMs)));
    return inTime.filter((ok) => !ok).length;
  }

  /** What every worker started wrote to stderr (the last 8,000 characters of each), for a failure's message. */
  stderr(): string {
    return this.#all.map((w) => `[worker ${w.pid}] ${w.stderr().slice(-8_000)}`).join("\n");
  }
}
