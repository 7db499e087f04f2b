/** An errand in mode "manual" on a fresh in-memory libSQL database and a FakeClock, as the README's testing section sets one up. */
import { createClient } from "@libsql/client";
import { createErrand, type Errand, type ErrandOptions, type JobDefinitions } from "../../mod.ts";
import { libsqlStore } from "../../adapters/libsql/mod.ts";
import { FakeClock } from "../../src/testing.ts";
import { quietLogger } from "./wait.ts";

/** Creates the errand with `options` (jobs, handlers, topics...); the clock starts at `start`. */
export function manualErrand<J extends JobDefinitions>(
  options: Omit<ErrandOptions<J, undefined, unknown>, "store" | "mode" | "clock">,
  start?: number,
): { errand: Errand<J, unknown>; clock: FakeClock } {
  const clock = new FakeClock(start);
  const errand = createErrand<J, undefined, unknown>({
    logger: quietLogger(),
    ...options,
    store: libsqlStore(createClient({ url: ":memory:" })),
    mode: "manual",
    clock,
  });
  return { errand, clock };
}
