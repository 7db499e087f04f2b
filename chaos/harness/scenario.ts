/**
 * The shape of a chaos scenario. A scenario is one file in chaos/scenarios/
 * (or, when it has programs or pieces of its own, a folder there whose
 * mod.ts is its entry) that exports one {@link Scenario}: its name, the
 * stores it applies to, and a `run` that breaks something on purpose with
 * real processes and signals, then reads the store and the workers' run logs
 * and returns its figures and the rules they must keep. chaos/run.ts runs
 * scenarios, prints one JSON line per scenario and store, a table, and exits
 * non-zero when a rule is broken.
 */
import type { Outcome } from "../../tests/support/outcome.ts";
import type { ScratchDatabase, StoreName } from "../../tests/support/scratch_database.ts";

export { type Check, check, type Figures, type Outcome } from "../../tests/support/outcome.ts";

/** What a scenario is handed for one run on one store. */
export interface ScenarioContext {
  /** A fresh, empty database on the store under test. */
  readonly db: ScratchDatabase;
  /** `--quick`: a smaller run of the same scenario, for CI. */
  readonly quick: boolean;
  /** A scratch directory of this run (run logs, files), removed afterwards. */
  readonly dir: string;
  /** Progress for the person watching (stderr), not part of the figures. */
  note(message: string): void;
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
  /**
   * The test file of `npm test` that runs this scenario's short form on the same stores, if one does: `--quick` (CI,
   * which runs `npm test` too) leaves the scenario out rather than run it twice.
   */
  readonly shortFormTest?: string;
  run(context: ScenarioContext): Promise<Outcome>;
}
