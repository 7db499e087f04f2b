/**
 * The calls of an errand on workers: the live instances, rescuing the jobs
 * of dead ones, and changing this instance's slots at run time.
 *
 * @module
 */
import type { WorkerInfo } from "../../base/types.ts";

/** The calls of an {@link Errand} on workers, its own and the other instances'. */
export interface ErrandWorkers {
  /**
   * The live `"work"` instances (heartbeat within 15 s) of this namespace, in every process, oldest first.
   *
   * @example See which instances work which queues
   * ```ts
   * import { createClient } from "@libsql/client";
   * import { createErrand, defineJobs, job } from "@errand/errand";
   * import { libsqlStore } from "@errand/errand/libsql";
   *
   * const jobs = defineJobs({ sendWelcome: job<{ userId: number }>({ queue: "mail" }) });
   * const errand = createErrand({ jobs, store: libsqlStore(createClient({ url: ":memory:" })) });
   * for (const worker of await errand.workers()) {
   *   const queues = worker.queues.map((q) => `${q.queue} ${q.busy}/${q.slots}`).join(", ");
   *   console.log(worker.id, new Date(worker.beatAt).toISOString(), queues, worker.kinds);
   * }
   * ```
   */
  workers(): Promise<WorkerInfo[]>;
  /**
   * Rescues, now, the running jobs of this namespace whose lease expired
   * (their worker died, hung, or lost the database), as maintenance does
   * every `maintenance.rescue` on `"work"` instances; resolves to how many
   * it rescued. Each run is recorded with error `LeaseExpired` and counts as
   * an attempt: a job with attempts left is available at once (without its
   * retry delay), one without fails. Jobs whose lease is live are left alone,
   * and the stale worker's late outcome is refused as always. Works in
   * every mode (an `"enqueue"` instance, `errand rescue`, the admin API).
   *
   * @example Rescue the jobs of a worker that was killed
   * ```ts
   * import { createClient } from "@libsql/client";
   * import { createErrand, defineJobs, job } from "@errand/errand";
   * import { libsqlStore } from "@errand/errand/libsql";
   *
   * const jobs = defineJobs({ sendWelcome: job<{ userId: number }>({ queue: "mail" }) });
   * const errand = createErrand({ jobs, mode: "enqueue", store: libsqlStore(createClient({ url: ":memory:" })) });
   * console.log(`${await errand.rescueExpired()} jobs are available again`);
   * ```
   */
  rescueExpired(): Promise<number>;
  /**
   * Adds `n` slots to the worker of `queue` (starting one if needed).
   * @throws {StateError} In a mode other than `"work"`, or for a queue with no worker yet before `start()`.
   *
   * @example Scale a queue up and down at run time
   * ```ts
   * import { createClient } from "@libsql/client";
   * import { createErrand, defineJobs, job } from "@errand/errand";
   * import { libsqlStore } from "@errand/errand/libsql";
   *
   * const jobs = defineJobs({ sendWelcome: job<{ userId: number }>({ queue: "mail" }) });
   * const errand = createErrand({
   *   jobs,
   *   store: libsqlStore(createClient({ url: ":memory:" })),
   *   queues: { mail: { concurrency: 2 } },
   *   handlers: { sendWelcome: ({ userId }) => console.log(`welcome ${userId}`) },
   * });
   * await errand.start();
   * errand.addWorkers("mail", 4); // 6 jobs of "mail" at once in this process
   * await errand.removeWorkers("mail", 4); // back to 2, once the running jobs fit
   * await errand.shutdown();
   * ```
   */
  addWorkers(queue: string, n: number): void;
  /**
   * Removes `n` slots from the worker of `queue`; resolves once the running jobs fit.
   * @throws {ValidationError} When this instance has no worker for `queue`.
   */
  removeWorkers(queue: string, n: number): Promise<void>;
}
