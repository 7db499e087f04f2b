/**
 * What a run across processes reports: its figures and the rules they must
 * keep. A chaos scenario returns one (chaos/harness/scenario.ts), and so do
 * the runs a test shares with a scenario (flow/property.ts,
 * log_consumers/run.ts), whose test asserts that no rule broke.
 */

/**
 * The figures a run reports (a figure that does not apply is left out).
 * Counts are of jobs unless said otherwise.
 */
export interface Figures {
  /** Jobs the run enqueued (or committed, for transactional enqueues). */
  jobs?: number;
  /** Jobs the store holds as completed at the end. */
  completed?: number;
  /** Jobs that should have completed and did not, or committed jobs missing from the store. */
  lost?: number;
  /** Pairs of runs of one job that overlapped while the earlier run's lease was still valid. */
  ranTwiceWhileLeased?: number;
  /** Jobs handled out of their key's enqueue order, plus partitions that ran two jobs at once. */
  orderViolations?: number;
  /** Recurring occurrences enqueued more than once, or unique keys held by more than one active job. */
  doubleFires?: number;
  /** Seconds from the end of the disruption until work flowed again (or finished). */
  recoverySeconds?: number;
  /** Anything else the run measures (rates, counts), by name. */
  [figure: string]: number | undefined;
}

/** One rule a run's figures must keep, and whether they did. */
export interface Check {
  readonly rule: string;
  readonly ok: boolean;
}

/** What a run returns: its figures and its rules. */
export interface Outcome {
  readonly figures: Figures;
  readonly checks: readonly Check[];
}

/** A rule: `rule` holds when `ok`. */
export function check(rule: string, ok: boolean): Check {
  return { rule, ok };
}
