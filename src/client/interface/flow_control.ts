/**
 * The calls of an errand on flow control: pause and resume queues and groups
 * in every process, list a queue's groups, and read the configured limits.
 *
 * @module
 */
import type { KindKey } from "../../enqueue/enqueue.ts";
import type { JobDefinitions } from "../../jobs/job.ts";
import type { Duration } from "../../base/duration.ts";
import type { GroupValue } from "../../flow/limits.ts";
import type { GroupInfo, GroupListOptions } from "../../calls/groups.ts";
import type { ErrandLimits } from "../../calls/limits.ts";

/** The calls of an {@link Errand} on flow control: pauses of queues and groups, and limits. */
export interface ErrandFlowControl<J extends JobDefinitions> {
  /**
   * Pauses a queue in every process: its jobs wait (still accepted) until {@link ErrandFlowControl.resumeQueue}.
   * Jobs already running finish.
   *
   * @example Hold a queue during maintenance
   * ```ts
   * import { createClient } from "@libsql/client";
   * import { createErrand, defineJobs, job } from "@errand/errand";
   * import { libsqlStore } from "@errand/errand/libsql";
   *
   * const jobs = defineJobs({ sendWelcome: job<{ userId: number }>({ queue: "mail" }) });
   * const errand = createErrand({ jobs, store: libsqlStore(createClient({ url: ":memory:" })) });
   * await errand.pauseQueue("mail"); // no process claims from "mail"; enqueue still works
   * console.log(await errand.pausedQueues()); // ["mail"]
   * await errand.resumeQueue("mail");
   * ```
   */
  pauseQueue(queue: string): Promise<void>;
  /** Resumes a paused queue. */
  resumeQueue(queue: string): Promise<void>;
  /** The queues paused now. */
  pausedQueues(): Promise<string[]>;
  /**
   * Pauses group `group` of kind `kind` for `duration` in every process: no
   * job of it starts until then (running ones finish). The pause is stored,
   * so every process honours it, and it ends by itself.
   *
   * @example Hold one tenant's jobs for ten minutes
   * ```ts
   * import { createClient } from "@libsql/client";
   * import { createErrand, defineJobs, job } from "@errand/errand";
   * import { libsqlStore } from "@errand/errand/libsql";
   *
   * const jobs = defineJobs({
   *   callCrm: job<{ tenant: string }>({ queue: "crm", group: (p) => p.tenant, groupConcurrency: 2 }),
   * });
   * const errand = createErrand({ jobs, store: libsqlStore(createClient({ url: ":memory:" })), mode: "enqueue" });
   * await errand.pauseGroup("callCrm", "tenant-7", "10m");
   * console.log((await errand.groups("crm")).length); // 0: no job of the group is queued yet
   * await errand.resumeGroup("callCrm", "tenant-7");
   * ```
   */
  pauseGroup(kind: KindKey<J>, group: GroupValue, duration: Duration): Promise<void>;
  /** Ends a group's pause now. */
  resumeGroup(kind: KindKey<J>, group: GroupValue): Promise<void>;
  /**
   * The groups of `queue` that have jobs running or waiting, with their
   * counts and pauses, by kind and group; with `options.limit`, a page of
   * them (pass the last group of a page as `after` for the next).
   * @throws {ValidationError} When the queue name, `after` or `limit` is invalid.
   *
   * @example Page through the groups of a queue
   * ```ts
   * import { createClient } from "@libsql/client";
   * import { createErrand, defineJobs, type GroupInfo, job } from "@errand/errand";
   * import { libsqlStore } from "@errand/errand/libsql";
   *
   * const jobs = defineJobs({
   *   callCrm: job<{ tenant: string }>({ queue: "crm", group: (p) => p.tenant, groupConcurrency: 2 }),
   * });
   * const errand = createErrand({ jobs, store: libsqlStore(createClient({ url: ":memory:" })), mode: "enqueue" });
   * let after: GroupInfo | undefined;
   * do {
   *   const page = await errand.groups("crm", { after, limit: 100 });
   *   for (const g of page) console.log(g.kind, g.group, g.running, g.queued, g.pausedUntil);
   *   after = page.length === 100 ? page[page.length - 1] : undefined;
   * } while (after);
   * ```
   */
  groups(queue: string, options?: GroupListOptions): Promise<GroupInfo[]>;
  /**
   * The flow control this instance is configured with: every queue it knows
   * with its limits, and every kind with a group or a limit. Limits are
   * options of each process, so this is what this one enforces when it claims.
   *
   * @example Print the limits
   * ```ts
   * import { createClient } from "@libsql/client";
   * import { createErrand, defineJobs, job } from "@errand/errand";
   * import { libsqlStore } from "@errand/errand/libsql";
   *
   * const jobs = defineJobs({
   *   callCrm: job<{ tenant: string }>({ queue: "crm", group: (p) => p.tenant, groupConcurrency: 2 }),
   * });
   * const errand = createErrand({
   *   jobs,
   *   store: libsqlStore(createClient({ url: ":memory:" })),
   *   queues: { crm: { concurrency: 8, globalConcurrency: 20, rateLimit: { limit: 100, period: "1s" } } },
   * });
   * const { queues, kinds } = errand.limits();
   * console.log(queues); // [{ queue: "crm", concurrency: 8, globalConcurrency: 20, rateLimit: { limit: 100, periodMs: 1000 } }]
   * console.log(kinds); // [{ key: "callCrm", kind: "callCrm", version: 1, queue: "crm", grouped: true, groupConcurrency: 2, rateLimit: null }]
   * ```
   */
  limits(): ErrandLimits;
}
