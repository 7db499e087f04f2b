/** What every conformance section shares: a fresh database per test and an errand on a fake clock. */
import {
  createErrand,
  defineJobs,
  type Errand,
  type ErrandOptions,
  job,
  type JobDefinitions,
  type LogDefinitions,
  type NoLogs,
} from "../../mod.ts";
import { FakeClock } from "../../src/testing.ts";
import type { StoreKind, TestDatabase } from "../support/stores.ts";
import { eventually, quietLogger } from "../support/wait.ts";

/** The kinds most sections use. */
export const testJobs = defineJobs({
  greet: job<{ name: string }>(),
  mail: job<{ to: string }>({ queue: "mail", attempts: 3 }),
});

type Stoppable = { shutdown(options?: { drain?: number }): Promise<void> };

/** The loggers of the errands of the running test. */
const logs: { lines: string[] }[] = [];

/** Opens a database, runs `body`, and always closes what it opened. */
export async function withDatabase<TTx>(
  kind: StoreKind<TTx>,
  body: (db: TestDatabase<TTx>, track: <E extends Stoppable>(e: E) => E) => Promise<void>,
): Promise<void> {
  const db = await kind.open();
  const errands: Stoppable[] = [];
  logs.length = 0;
  try {
    await body(db, (e) => {
      errands.push(e);
      return e;
    });
  } catch (err) {
    // What errand logged (warnings and errors) explains most failures.
    for (const line of logs.flatMap((l) => l.lines)) console.error(`errand logged: ${line}`);
    throw err;
  } finally {
    for (const e of errands) await e.shutdown({ drain: 0 });
    await db.close();
  }
}

/** Creates an errand on `db` with a fake clock and a quiet logger unless the options say otherwise. */
export function errandOn<J extends JobDefinitions, TTx, L extends LogDefinitions = NoLogs>(
  db: TestDatabase<TTx>,
  options: Omit<ErrandOptions<J, undefined, TTx, L>, "store"> & { namespace?: string },
): { errand: Errand<J, TTx, L>; clock: FakeClock; logger: ReturnType<typeof quietLogger> } {
  const clock = (options.clock as FakeClock | undefined) ?? new FakeClock();
  const logger = process.env.ERRAND_TEST_LOG
    ? { debug: console.log, info: console.log, warn: console.log, error: console.log, lines: [] }
    : quietLogger();
  logs.push(logger);
  const errand = createErrand<J, undefined, TTx, L>({
    logger,
    ...options,
    clock,
    store: db.store(options.namespace),
  });
  return { errand, clock, logger };
}

/**
 * Waits until `check()` holds after the test moved a fake clock. A background
 * loop (worker poll, cron leader, maintenance) sets its next timer only when its
 * current round ends; a round still running when the test moved the clock sets
 * a timer that a fake clock fires only at its next move, so each try moves it
 * `stepMs` (1 ms by default: a nudge that changes no outcome).
 */
export async function eventuallyOnClock(
  clock: FakeClock,
  check: () => boolean | Promise<boolean>,
  what: string,
  stepMs = 1,
): Promise<void> {
  await eventually(async () => (await check()) || (clock.advance(stepMs), false), what);
}
