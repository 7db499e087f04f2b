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
