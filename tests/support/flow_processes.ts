/**
 * Worker processes of the flow-control tests: chaos/support/flow_worker.ts
 * on the runtime running the test (Node with tsx, Deno or Bun), each the one
 * process of its program, so a signal reaches the worker itself.
 */
import { type ChildProcess, spawn } from "node:child_process";
import process from "node:process";
import { fileURLToPath } from "node:url";
import type { ChaosDatabase } from "../../chaos/support/database.ts";
import type { FlowProcesses } from "../../chaos/support/flow_property.ts";
import { runtimeCommand } from "./runtime.ts";

const flowWorker = fileURLToPath(new URL("../../chaos/support/flow_worker.ts", import.meta.url));

/** One worker process. */
export interface FlowWorker {
  readonly child: ChildProcess;
  readonly pid: number;
  /** The last 8,000 characters it wrote to stderr. */
  stderr(): string;
  /** Resolves once it has exited. */
  readonly exited: Promise<void>;
}

/** The worker processes of one test on `db`, all appending to the run log `log`. */
export class FlowWorkers implements FlowProcesses<FlowWorker> {
  readonly #env: Record<string, string>;
  readonly #live = new Set<FlowWorker>();
  readonly #all: FlowWorker[] = [];

  /** Workers on `db` that log to `log`. */
  constructor(db: ChaosDatabase, log: string) {
    this.#env = { ...db.env, CHAOS_LOG: log };
  }

  /** Starts a worker with `env` added to its environment; resolves once it says "ready". */
  async start(env: Record<string, string> = {}): Promise<FlowWorker> {
    const [command, args] = runtimeCommand(flowWorker);
    const child = spawn(command, args, {
      env: { ...process.env, ...this.#env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr!.on("data", (chunk) => (stderr = (stderr + chunk).slice(-8_000)));
    const exited = new Promise<void>((resolve) => child.on("exit", () => resolve()));
    const worker: FlowWorker = { child, pid: child.pid!, stderr: () => stderr, exited };
    this.#live.add(worker);
    this.#all.push(worker);
    void exited.then(() => this.#live.delete(worker));
    await new Promise<void>((resolve, reject) => {
      child.stdout!.on("data", (chunk) => String(chunk).includes("ready") && resolve());
      void exited.then(() => reject(new Error(`a worker exited before it was ready:\n${stderr}`)));
    });
    return worker;
  }

  /** SIGKILLs `worker` and waits until it is gone. */
  async kill(worker: FlowWorker): Promise<void> {
    worker.child.kill("SIGKILL");
    await worker.exited;
  }

  /** SIGTERMs `worker` and waits up to `graceMs` for it to exit, then SIGKILLs it; says whether it exited in time. */
  async stop(worker: FlowWorker, graceMs = 15_000): Promise<boolean> {
    if (!this.#live.has(worker)) return true;
    worker.child.kill("SIGTERM");
    let timer: ReturnType<typeof setTimeout> | undefined;
    const inTime = await Promise.race([
      worker.exited.then(() => true),
      new Promise<boolean>((r) => (timer = setTimeout(() => r(false), graceMs))),
    ]);
    // A pending timer would keep the test's process alive after its tests.
    clearTimeout(timer);
    if (!inTime) await this.kill(worker);
    return inTime;
  }

  /** Stops every live worker (see {@link stop}); returns how many had to be killed. */
  async stopAll(graceMs = 15_000): Promise<number> {
    const late = await Promise.all([...this.#live].map((w) => this.stop(w, graceMs)));
    return late.filter((inTime) => !inTime).length;
  }

  /** What every worker started wrote to stderr, for a failure's message. */
  stderr(): string {
    return this.#all.map((w) => `[worker ${w.pid}] ${w.stderr()}`).join("\n");
  }
}
