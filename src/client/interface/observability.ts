/**
 * The calls of an errand that observe it: activity statistics, Prometheus
 * metrics, and the database's health.
 *
 * @module
 */
import type { ErrandStats, StatsOptions } from "../../observability/stats.ts";
import type { ErrandHealth, HealthOptions } from "../../observability/health.ts";

/** The calls of an {@link Errand} that observe it: statistics, metrics and health. */
export interface ErrandObservability {
  /**
   * Activity over the last 60 s, read from the store (so every instance sees
   * the same): jobs enqueued, started and finished and attempts started per
   * second, dispatch wait, live workers, the storage errand's tables take
   * (`storageBytes`: errand's schema on PostgreSQL, the whole file on libSQL)
   * and the whole database's (`databaseBytes`: every schema on PostgreSQL, the
   * same file on libSQL). With `{ minutes: 5 }` or
   * `{ minutes: 60 }` it covers the last 5 minutes or the last hour, still
   * in 60 buckets (of 5 s or 1 min: `bucketMs`).
   *
   * @throws {ValidationError} For `minutes` other than 1, 5 or 60.
   *
   * @example Sum up the last minute
   * ```ts
   * import { createClient } from "@libsql/client";
   * import { createErrand, defineJobs, job } from "@errand/errand";
   * import { libsqlStore } from "@errand/errand/libsql";
   *
   * const jobs = defineJobs({ sendWelcome: job<{ userId: number }>({ queue: "mail" }) });
   * const errand = createErrand({ jobs, store: libsqlStore(createClient({ url: ":memory:" })) });
   * const stats = await errand.stats();
   * const completed = stats.throughput.reduce((sum, second) => sum + second.completed, 0);
   * const failed = stats.throughput.reduce((sum, second) => sum + second.failed, 0);
   * console.log(`${completed} completed, ${failed} failed in ${stats.windowMs / 1000} s`);
   * console.log(`average wait ${stats.dispatchWait.regular.avgMs ?? 0} ms, ${stats.storageBytes ?? "?"} bytes on disk`);
   * ```
   *
   * @example The last hour, minute by minute
   * ```ts
   * import { createClient } from "@libsql/client";
   * import { createErrand, defineJobs, job } from "@errand/errand";
   * import { libsqlStore } from "@errand/errand/libsql";
   *
   * const jobs = defineJobs({ sendWelcome: job<{ userId: number }>() });
   * const errand = createErrand({ jobs, store: libsqlStore(createClient({ url: ":memory:" })) });
   * const hour = await errand.stats({ minutes: 60 });
   * console.log(hour.windowMs, hour.bucketMs, hour.throughput.length); // 3600000 60000 60
   * const busiest = Math.max(...hour.throughput.map((m) => m.completed));
   * console.log(`at most ${busiest / (hour.bucketMs / 1000)} completed per second in any minute`);
   * ```
   */
  stats(options?: StatsOptions): Promise<ErrandStats>;
  /**
   * This instance's metrics in the Prometheus text format: counters and
   * histograms of what it did, its slots, and the store's job counts and
   * topic backlogs (read at most every 15 s and the same on every instance:
   * aggregate those with `max`, not `sum`).
   *
   * @example Serve metrics to Prometheus
   * ```ts
   * import { createClient } from "@libsql/client";
   * import { createErrand, defineJobs, job } from "@errand/errand";
   * import { libsqlStore } from "@errand/errand/libsql";
   *
   * const jobs = defineJobs({ sendWelcome: job<{ userId: number }>({ queue: "mail" }) });
   * const errand = createErrand({ jobs, store: libsqlStore(createClient({ url: ":memory:" })) });
   * // A fetch handler for any web-standard server (Deno's, Bun's, Hono's, a Worker's).
   * async function serveMetrics(_request: Request): Promise<Response> {
   *   return new Response(await errand.metrics(), {
   *     headers: { "content-type": "text/plain; version=0.0.4; charset=utf-8" },
   *   });
   * }
   * console.log(await (await serveMetrics(new Request("http://localhost/metrics"))).text());
   * ```
   */
  metrics(): Promise<string>;
  /**
   * The database's health figures for errand's tables, read now, with the
   * findings they lead to, each with what to do: the MVCC horizon held by a
   * long transaction, dead rows, autovacuum turned off, the schema version,
   * indexes missing or invalid; on SQLite the journal mode and free pages.
   * `errand stats`, the dashboard and `errand doctor` show the same.
   *
   * @example Log what needs doing
   * ```ts
   * import { createClient } from "@libsql/client";
   * import { createErrand, defineJobs, job } from "@errand/errand";
   * import { libsqlStore } from "@errand/errand/libsql";
   *
   * const jobs = defineJobs({ sendWelcome: job<{ userId: number }>() });
   * const errand = createErrand({ jobs, store: libsqlStore(createClient({ url: ":memory:" })) });
   * const health = await errand.health({ horizonSeconds: 120 });
   * for (const f of health.findings) console.log(`${f.severity}: ${f.message}; fix: ${f.fix}`);
   * console.log(health.schemaVersion === health.schemaVersionExpected); // true
   * ```
   */
  health(options?: HealthOptions): Promise<ErrandHealth>;
}
