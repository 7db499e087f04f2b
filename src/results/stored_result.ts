/**
 * A completed job's stored result, decoded: what `result()` and `watch()`
 * hand the application, and what `job.parentResults()` reads of a
 * continuation's parents.
 *
 * @module
 */
import { decodePayload } from "../encoding/codec.ts";
import { StoreError } from "../base/errors.ts";
import type { JobChange } from "../store/records.ts";
import type { Store } from "../store/store.ts";

/**
 * The results of the parents of job `id`, in the order of their ids
 * (`job.parentResults()`): undefined for one without a result, or gone.
 */
export async function readParentResults(
  store: Pick<Store, "jobRelatives" | "jobWatch">,
  id: string,
): Promise<unknown[]> {
  const { parents } = await store.jobRelatives({ id, limit: 0 });
  if (parents.length === 0) return [];
  const found = new Map((await store.jobWatch({ ids: parents, mark: false })).map((c) => [c.id, c]));
  return parents.map((parent) => {
    const change = found.get(parent);
    return change ? resultOf(change) : undefined;
  });
}

/**
 * The decoded result of a completed job.
 * @throws {StoreError} When its stored bytes cannot be decoded (written around errand's encoder).
 */
export function resultOf(change: JobChange): unknown {
  if (change.result === null) return undefined;
  try {
    return decodePayload(change.result);
  } catch (err) {
    throw new StoreError(
      `Job "${change.id}" completed, but its stored result cannot be decoded (${
        String(err)
      }); it holds bytes errand's encoder does not write, such as an Invalid Date an older errand stored`,
      { cause: err },
    );
  }
}
