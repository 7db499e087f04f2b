/**
 * The {@link WatchStore} slice of the Store seam: what waiting for jobs
 * reads (their states, progress and results) and the pushed news of their
 * changes. Operations are in alphabetical order of their names, case
 * ignored; each takes one `XxxParams`, declared here in the same order.
 *
 * @module
 */
import type { JobChange } from "./records.ts";

/** Parameters of {@link WatchStore.changesListen}. */
export interface ChangesListenParams {
  /** Called after a watched job's state or progress changed, or it was deleted, by any instance. */
  onChange(): void;
}

/** Parameters of {@link WatchStore.jobWatch}. */
export interface JobWatchParams {
  /** The jobs. */
  readonly ids: readonly string[];
  /**
   * Mark them as watched first, so that from then on every change of their
   * state or progress, and their deletion, is pushed to `changesListen`
   * (by a store that pushes; one that does not ignores it).
   */
  readonly mark: boolean;
}

/** What waiting for jobs reads: their states, progress and results, and pushed news of changes. */
export interface WatchStore {
  /**
   * Calls `onChange` whenever a watched job changes ({@link JobWatchParams.mark});
   * resolves to a function that stops listening, or to null when the store
   * cannot push changes (then waiters poll).
   */
  changesListen(params: ChangesListenParams): Promise<(() => Promise<void>) | null>;
  /**
   * Reads the jobs of `ids` that exist (in any order), with their state,
   * progress, result and latest error; with `mark`, marks them watched in
   * the same statement, reading each as of after the mark (so a change
   * that commits meanwhile is either read or pushed).
   */
  jobWatch(params: JobWatchParams): Promise<JobChange[]>;
}
