/**
 * Waiting for reads that run side by side.
 *
 * @module
 */

/**
 * Like `Promise.all`, but settles only once every promise has settled, then
 * rejects with the first rejection in order, if any. A call that answered
 * at its first failure would leave its other reads running past its answer:
 * past a shutdown, into a schema being dropped.
 */
export async function whenAll<T extends readonly unknown[] | []>(
  promises: T,
): Promise<{ -readonly [K in keyof T]: Awaited<T[K]> }> {
  const settled = await Promise.allSettled(promises);
  for (const result of settled) if (result.status === "rejected") throw result.reason;
  return settled.map((result) => (result as PromiseFulfilledResult<unknown>).value) as {
    -readonly [K in keyof T]: Awaited<T[K]>;
  };
}
