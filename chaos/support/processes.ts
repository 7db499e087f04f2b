/**
 * Worker processes for the chaos suite: real OS processes running
 * chaos/support/worker.ts (or another program of the suite) on this Node
 * through tsx, or as a test's runtime runs it, each as one process so a
 * signal reaches the program itself, with every signal sent to them recorded
 * with its time for the run-log checks.
 */
import { type ChildProcess, spawn } from "node:child_process";
import process from "node:process";
import { fileURLToPath } from "node:url";
import type { ChaosDatabase } from "./database.ts";

const workerScript = fileURLToPath(new URL("./worker.ts", import.meta.url));
const tsconfig = fileURLToPath(new URL("../../tsconfig.json", import.meta.url));

/** A signal sent to a worker, and when (ms since the epoch, as the run log's `t`). */
export interface SentSignal {
  readonly pid: number;
  readonly signal: NodeJS.Signals;
  readonly t: number;
}

/** One running worker process. */
export interface Worker {
  readonly child: ChildProcess;
  readonly pid: number;
  /** Everything it wrote to stderr (its last 8,000 characters). */
  stderr(): string;
  /** Resolves when it has exited. */
  readonly exited: Promise<void>;
}

const now = () => performance.timeOrigin + performance.now();

/** How a program is run: the command and its arguments that run the TypeScript file `script` as one process. */
export type ProgramCommand = (script: string) => [string, string[]];

/** This Node with tsx: how the chaos suite runs its programs. */
const nodeWithTsx: ProgramCommand = (script) => [process.execPath, ["--import", import.meta.resolve("tsx"), script]];

/** The worker processes of one scenario run, and the signals sent to them. */
export class Workers {
  readonly #db: ChaosDatabase;
  readonly #log: string;
  readonly #command: ProgramCommand;
  readonly #live = new Set<Worker>();
  /** Every signal sent, in order. */
  readonly signals: SentSignal[] = [];

  /**
   * Workers on `db`, each appending to the run log `log`, run by `command`
   * (a test passes the runtime it runs on; the default is this Node with tsx).
   */
  constructor(db: ChaosDatabase, log: string, command: ProgramCommand = nodeWithTsx) {
    this.#db = db;
    this.#log = log;
    this.#command = command;
  }

  /** The workers still running. */
  get live(): Worker[] {
    return [...this.#live];
  }

  /**
   * Starts a worker with `env` added to its environment, and waits until it
   * says "ready". `script` is another program to run the same way (a
   * scenario's own child, e.g. an enqueuer), which prints "ready" too.
   */
  async start(env: Record<string, string> = {}, script = workerScript): Promise<Worker> {
    const [command, args] = this.#command(script);
    const child = spawn(command, args, {
      env: { ...process.env, TSX_TSCONFIG_PATH: tsconfig, ...this.#db.env, CHAOS_LOG: this.#log, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr!.on("data", (chunk) => (stderr = (stderr + chunk).slice(-8_000)));
    const exited = new Promise<void>((resolve) => child.on("exit", () => resolve()));
    const worker: Worker = { child, pid: child.pid!, stderr: () => stderr, exited };
    this.#live.add(worker);
    void exited.then(() => this.#live.delete(worker));
    await new Promise<void>((resolve, reject) => {
      child.stdout!.on("data", (chunk) => String(chunk).includes("ready") && resolve());
      void exited.then(() => reject(new Error(`a worker exited before it was ready:\n${stderr}`)));
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
   * SIGTERMs every live worker and waits up to `graceMs` for each to exit;
   * SIGKILLs the ones still there. Returns how many had to be killed.
   */
  async stopAll(graceMs = 15_000): Promise<number> {
    const workers = this.live;
    for (const w of workers) this.signal(w, "SIGCONT"); // a stopped process cannot handle SIGTERM
    for (const w of workers) this.signal(w, "SIGTERM");
    const late = await Promise.all(workers.map(async (w) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const inTime = await Promise.race([
        w.exited.then(() => true),
        new Promise<boolean>((r) => (timer = setTimeout(() => r(false), graceMs))),
      ]);
      // A pending timer would keep a test's process alive after its tests.
      clearTimeout(timer);
      if (!inTime) await this.kill(w);
      return !inTime;
    }));
    return late.filter(Boolean).length;
  }
}
