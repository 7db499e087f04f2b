/**
 * The shape of a chaos scenario. A scenario is one file in chaos/scenarios/
 * that exports one {@link Scenario}: its name, the stores it applies to, and
 * a `run` that breaks something on purpose with real processes and signals,
 * then reads the store and the workers' run logs and returns its figures and
 * the rules they must keep. chaos/run.ts runs scenarios, prints one JSON line
 * per scenario and store, a table, and exits non-zero when a rule is broken.
 */
import type { ChaosDatabase, StoreName } from "./support/database.ts";

/** What a scenario is handed for one run on one store. */
export interface ScenarioContext {
  /** A fresh, empty database on the store under test. */
  readonly db: ChaosDatabase;
  /** `--quick`: a smaller run of the same scenario, for CI. */
  readonly quick: boolean;
  /** A scratch directory of this run (run logs, files), removed afterwards. */
  readonly dir: string;
  /** Progress for the person watching (stderr), not part of the figures. */
  note(message: string): void;
}

/**
 * The figures every scenario reports (a figure that does not apply is
 * left out). Counts are of jobs unless said otherwise.
 */
export interface Figures {
  /** Jobs the scenario enqueued (or committed, for transactional enqueues). */
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
  /** Anything else the scenario measures (rates, counts), by name. */
  [figure: string]: number | undefined;
}

/** One rule a scenario's figures must keep, and whether they did. */
export interface Check {
  readonly rule: string;
  readonly ok: boolean;
}

/** What a scenario returns from one run. */
export interface Outcome {
  readonly figures: Figures;
  readonly checks: readonly Check[];
}

/** One chaos scenario. */
export interface Scenario {
  /** The name `npm run chaos -- <name>` takes, e.g. `kill_storm`. */
  readonly name: string;
  /** One line: what breaks and what must hold. */
  readonly summary: string;
  /**
   * The names of the same scenario in the public harness
   * hardbyte/postgresql-job-queue-benchmarking (docs/method.md), where it has one.
   */
  readonly harness?: readonly string[];
  /** The stores it applies to. */
  readonly stores: readonly StoreName[];
  run(context: ScenarioContext): Promise<Outcome>;
}

/** A rule: `rule` holds when `ok`. */
export function check(rule: string, ok: boolean): Check {
  return { rule, ok };
}
