/** Waiting in the tests and the chaos suite: polls with a deadline, never a blind sleep for a result. */

/** Resolves after `ms`. */
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Polls `probe` every `everyMs` until it returns true or `timeoutMs` passes;
 * resolves with whether it became true.
 */
export async function until(
  probe: () => Promise<boolean> | boolean,
  timeoutMs: number,
  everyMs = 100,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await probe()) return true;
    await sleep(everyMs);
  }
  return await probe();
}

/** Polls `check` until it returns a truthy value (returned) or `timeoutMs` of real time passes (throws). */
export async function eventually<T>(
  check: () => Promise<T> | T,
  what: string,
  timeoutMs = 10_000,
): Promise<Exclude<T, false | null | undefined | 0 | "">> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value) return value as Exclude<T, false | null | undefined | 0 | "">;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}${last ? `: ${String(last)}` : ""}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** A logger that keeps what it is told, for tests that check warnings. */
export function quietLogger(): {
  lines: string[];
  debug(m: string): void;
  info(m: string): void;
  warn(m: string, fields?: Record<string, unknown>): void;
  error(m: string, fields?: Record<string, unknown>): void;
} {
  const lines: string[] = [];
  const keep = (m: string, fields?: Record<string, unknown>) =>
    void lines.push(fields ? `${m} ${JSON.stringify(fields)}` : m);
  return { lines, debug: () => {}, info: () => {}, warn: keep, error: keep };
}
