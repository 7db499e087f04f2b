/**
 * The calls of an errand on the events workflows wait for
 * (`job.waitForEvent()`): send one, and count who waits.
 *
 * @module
 */
import type { SendEventOptions, SendEventResult } from "../../calls/events.ts";
import type { EventWaitingRow } from "../../store/steps.ts";

/** The calls of an {@link Errand} on the events workflows wait for. */
export interface ErrandEvents<TTx> {
  /**
   * Sends event `event` with `options.key`: every workflow waiting on that
   * name and key (`job.waitForEvent()`) resumes with `options.data`, and the
   * event is kept for `eventRetention` so that a wait reached later takes
   * it too (each wait takes the oldest kept event its job has not taken).
   * Works in every mode (an edge function can answer a person's click);
   * with `tx`, only if the application's transaction commits; with `id`,
   * at most once.
   * @throws {ValidationError} When the name, key, id or data is invalid.
   *
   * @example Answer the workflows waiting for a survey
   * ```ts
   * import { createClient } from "@libsql/client";
   * import { createErrand, defineJobs, job } from "@errand/errand";
   * import { libsqlStore } from "@errand/errand/libsql";
   *
   * const jobs = defineJobs({ onboard: job<{ userId: number }>() });
   * const errand = createErrand({ jobs, store: libsqlStore(createClient({ url: ":memory:" })), mode: "enqueue" });
   * const { resumed } = await errand.sendEvent("survey", { key: "42", data: { score: 3 }, id: "survey-42" });
   * console.log(`${resumed} workflows resumed`);
   * ```
   */
  sendEvent(event: string, options?: SendEventOptions<TTx>): Promise<SendEventResult>;
  /**
   * Counts the workflows waiting on events (`job.waitForEvent()`), by event
   * name, or on `event` alone; names no workflow waits on are left out.
   *
   * @example See who waits for what
   * ```ts
   * import { createClient } from "@libsql/client";
   * import { createErrand, defineJobs, job } from "@errand/errand";
   * import { libsqlStore } from "@errand/errand/libsql";
   *
   * const jobs = defineJobs({ onboard: job<{ userId: number }>() });
   * const errand = createErrand({ jobs, store: libsqlStore(createClient({ url: ":memory:" })), mode: "enqueue" });
   * for (const { event, jobs: waiting } of await errand.eventWaits()) console.log(event, waiting);
   * ```
   */
  eventWaits(event?: string): Promise<EventWaitingRow[]>;
}
