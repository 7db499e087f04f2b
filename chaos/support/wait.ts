/** Waiting in the chaos suite: polls with a deadline, never a blind sleep for a result. */

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
