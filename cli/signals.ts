/**
 * Stopping on SIGTERM and SIGINT (node:process signals, which Node, Deno
 * and Bun all deliver): the first one asks the command to stop (an
 * `AbortSignal`), a second one while it stops calls `onForce` (the command
 * gives up waiting).
 *
 * @module
 */
import process from "node:process";

/** A stop request by signal. */
export interface StopSignals {
  /** Aborts at the first SIGTERM or SIGINT; its `reason` is the signal's name. */
  readonly signal: AbortSignal;
  /** Resolves with the first signal's name. */
  readonly stopped: Promise<string>;
  /** Stops listening. */
  dispose(): void;
}

const NAMES = ["SIGTERM", "SIGINT"] as const;

/** Listens for SIGTERM and SIGINT; a second one calls `onForce(name)`. */
export function stopSignals(onForce: (name: string) => void): StopSignals {
  const controller = new AbortController();
  let resolve!: (name: string) => void;
  const stopped = new Promise<string>((r) => (resolve = r));
  const handler = (name: string) => {
    if (controller.signal.aborted) return onForce(name);
    controller.abort(name);
    resolve(name);
  };
  const listeners = NAMES.map((name) => [name, () => handler(name)] as const);
  for (const [name, listener] of listeners) process.on(name, listener);
  return {
    signal: controller.signal,
    stopped,
    dispose() {
      for (const [name, listener] of listeners) process.off(name, listener);
    },
  };
}

/** Waits `ms`, or less when `signal` aborts. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}
