/**
 * The admin router: a JSON API and a dashboard page for an errand, as a Hono
 * app any application mounts under a path of its choosing.
 *
 * @example Mount it behind your own check
 * ```ts
 * import process from "node:process";
 * import { Hono } from "hono";
 * import { createClient } from "@libsql/client";
 * import { createErrand, defineJobs, job } from "@errand/errand";
 * import { libsqlStore } from "@errand/errand/libsql";
 * import { adminRouter } from "@errand/errand/hono";
 *
 * const jobs = defineJobs({ sendWelcome: job<{ userId: number }>() });
 * const errand = createErrand({ jobs, store: libsqlStore(createClient({ url: "file:errand.db" })) });
 *
 * const token = process.env.ADMIN_TOKEN;
 * if (!token) throw new Error("Set ADMIN_TOKEN");
 *
 * const app = new Hono();
 * app.route("/jobs", adminRouter(errand, {
 *   authorize: (c) => c.req.header("authorization") === `Bearer ${token}`,
 * }));
 * // The dashboard is at /jobs, the JSON API under /jobs/api.
 * ```
 *
 * @module
 */
import { type Context, Hono } from "hono";
import { HTTPException } from "hono/http-exception";
import { type HealthOptions, NotFoundError, StateError, ValidationError } from "../../mod.ts";
import { checkHealthOptions } from "../../src/observability/health.ts";
import { apiRoutes } from "./api.ts";
import { type Audit, recorder } from "./audit.ts";
import { CHART_MINUTES, DEFAULT_CHART_MINUTES } from "./chart.ts";
import { eventRoutes } from "./events.ts";
import { jobPage } from "./job_views.ts";
import { logRoutes } from "./log_api.ts";
import { logPage } from "./log_views.ts";
import { overview } from "./overview_views.ts";
import { mountBase, sendPage } from "./page.ts";
import { type AdminErrand, listOptions, statsMinutes } from "./present.ts";
import { queuePage } from "./queue_views.ts";
import { type Authorize, guardChanges, jsonError, requireAuthorization } from "./security.ts";
import { topicPage } from "./topic_views.ts";

export type { AdminAction, Audit } from "./audit.ts";
export type { AdminErrand } from "./present.ts";
export type { Authorize } from "./security.ts";

/** Options of {@link adminRouter}. */
export interface AdminRouterOptions {
  /**
   * Decides whether a request may use the router (every route, the page
   * included). Required unless `insecure` is true. A request it refuses gets
   * a 401 with a JSON error.
   *
   * @example Allow the application's admins only
   * ```ts
   * import type { Context } from "hono";
   * import { createClient } from "@libsql/client";
   * import { createErrand, defineJobs, job } from "@errand/errand";
   * import { libsqlStore } from "@errand/errand/libsql";
   * import { adminRouter } from "@errand/errand/hono";
   *
   * // The application's own session lookup.
   * const sessions = { find: async (_c: Context) => ({ role: "admin" as "admin" | "member" }) };
   * const jobs = defineJobs({ sendWelcome: job<{ userId: number }>() });
   * const errand = createErrand({ jobs, store: libsqlStore(createClient({ url: ":memory:" })) });
   *
   * const admin = adminRouter(errand, {
   *   authorize: async (c) => (await sessions.find(c))?.role === "admin",
   * });
   * ```
   */
  authorize?: Authorize;
  /**
   * Serve without `authorize`: only for a demo on localhost.
   *
   * @example A local demo
   * ```ts
   * import { createClient } from "@libsql/client";
   * import { createErrand, defineJobs, job } from "@errand/errand";
   * import { libsqlStore } from "@errand/errand/libsql";
   * import { adminRouter } from "@errand/errand/hono";
   *
   * const jobs = defineJobs({ sendWelcome: job<{ userId: number }>() });
   * const errand = createErrand({ jobs, store: libsqlStore(createClient({ url: ":memory:" })) });
   * // Anyone who can reach it can retry, cancel and delete jobs: listen on 127.0.0.1 only.
   * const admin = adminRouter(errand, { insecure: true });
   * ```
   */
  insecure?: boolean;
  /**
   * Return and show job and schedule payloads, and the values of log
   * records. Off, the API and the page never include a payload or a value.
   * @default {false}
   *
   * @example Show payloads to the operators who may see them
   * ```ts
   * import type { Context } from "hono";
   * import { createClient } from "@libsql/client";
   * import { createErrand, defineJobs, job } from "@errand/errand";
   * import { libsqlStore } from "@errand/errand/libsql";
   * import { adminRouter } from "@errand/errand/hono";
   *
   * const jobs = defineJobs({ sendWelcome: job<{ userId: number }>() });
   * const errand = createErrand({ jobs, store: libsqlStore(createClient({ url: ":memory:" })) });
   * // The application's own session lookup.
   * const sessions = { find: async (_c: Context) => ({ role: "support" as "support" | "member" }) };
   * const admin = adminRouter(errand, {
   *   authorize: async (c) => (await sessions.find(c))?.role === "support",
   *   showPayloads: true,
   *   maxPageSize: 50,
   * });
   * ```
   */
  showPayloads?: boolean;
  /**
   * Called after every state-changing request that the router carried out
   * (retry, cancel and delete of a job or in bulk, a schedule's trigger, a
   * partition head's force-fail, a group's pause and resume, a consumer
   * group's seek and a record skipped, a workflow event sent, without its
   * data), with the
   * request's context and what it changed; the response waits for it. A
   * request refused before any change (by `authorize`, the guards, bad input,
   * a state conflict) is not reported. When `audit` throws or rejects, the
   * change has already been made: the router logs the error and answers 500
   * with a message saying the change was applied but not recorded.
   *
   * @example Write every change to the application's audit log
   * ```ts
   * import type { Context } from "hono";
   * import { createClient } from "@libsql/client";
   * import { createErrand, defineJobs, job } from "@errand/errand";
   * import { libsqlStore } from "@errand/errand/libsql";
   * import { type AdminAction, adminRouter } from "@errand/errand/hono";
   *
   * const jobs = defineJobs({ sendWelcome: job<{ userId: number }>() });
   * const errand = createErrand({ jobs, store: libsqlStore(createClient({ url: ":memory:" })) });
   * // The application's own session lookup and audit log.
   * const sessions = { find: (_c: Context) => ({ user: "ada", role: "admin" }) };
   * const auditLog: { at: Date; user: string; action: AdminAction }[] = [];
   *
   * const admin = adminRouter(errand, {
   *   authorize: (c) => sessions.find(c).role === "admin",
   *   audit: (c, action) => {
   *     auditLog.push({ at: new Date(), user: sessions.find(c).user, action });
   *     if (action.action === "retryMany") console.log(`${action.count} jobs retried`, action.filter);
   *   },
   * });
   * ```
   */
  audit?: Audit;
  /**
   * Largest page of jobs a request gets, whatever it asks for.
   * @default {100}
   */
  maxPageSize?: number;
  /**
   * Largest request body in bytes.
   * @default {16_384}
   */
  maxBodyBytes?: number;
  /**
   * How often the page refreshes its numbers, in seconds (0: never). The
   * overview and a job's page follow event streams instead (their numbers
   * every 2 s, a job's changes as they happen) and fetch their tables and
   * chart again at most this often; 0 turns their live updates off too.
   * @default {5}
   */
  refreshSeconds?: number;
  /**
   * The thresholds of the overview's "Database health" panel: how long a
   * transaction may hold the MVCC horizon, and how many dead rows make a
   * table bloated (see `errand.health()`).
   * @default {{ horizonSeconds: 300, deadTuplesRatio: 0.2, deadTuplesMin: 10000 }}
   */
  health?: HealthOptions;
}

/**
 * A Hono app with the admin API under `/api` and the dashboard at `/`; mount
 * it with `app.route("/jobs", adminRouter(errand, { authorize }))`.
 * @throws {ValidationError} Without `authorize` (unless `insecure: true`), or with a bad option.
 */
export function adminRouter(errand: AdminErrand, options: AdminRouterOptions): Hono {
  if (typeof options?.authorize !== "function" && options?.insecure !== true) {
    throw new ValidationError(
      'adminRouter() needs "authorize": a function (c) => boolean that checks each request; pass "insecure: true" only for a local demo',
    );
  }
  const maxPageSize = whole("maxPageSize", options.maxPageSize ?? 100, 1);
  const maxBodyBytes = whole("maxBodyBytes", options.maxBodyBytes ?? 16_384, 2);
  const refreshSeconds = whole("refreshSeconds", options.refreshSeconds ?? 5, 0);
  const showPayloads = options.showPayloads === true;
  if (options.audit !== undefined && typeof options.audit !== "function") {
    throw new ValidationError('Option "audit" must be a function (c, action) => void that records each change');
  }
  const health = { ...options.health };
  checkHealthOptions(health, "adminRouter()'s health");
  const record = recorder(options.audit);
  const view = (c: Context, pattern: string) => ({ base: mountBase(c, pattern), showPayloads });

  const app = new Hono();
  app.onError((err, c) => {
    if (err instanceof ValidationError) return jsonError(c, 400, err.message);
    if (err instanceof NotFoundError) return jsonError(c, 404, err.message);
    if (err instanceof StateError) return jsonError(c, 409, err.message);
    if (err instanceof HTTPException) return err.getResponse();
    console.error("errand admin: request failed", err);
    return jsonError(c, 500, "Internal error; the server's log has the details");
  });
  app.notFound((c) => jsonError(c, 404, `No admin route ${c.req.method} ${c.req.path}`));
  app.use("*", requireAuthorization(options.authorize), guardChanges(maxBodyBytes));
  app.route("/api", eventRoutes(errand, { showPayloads }));
  app.route("/api", apiRoutes(errand, { showPayloads, maxPageSize, record }));
  app.route("/api", logRoutes(errand, { showPayloads, maxPageSize, record }));
  app.get(
    "/metrics",
    async (c) => c.body(await errand.metrics(), 200, { "content-type": "text/plain; version=0.0.4; charset=utf-8" }),
  );

  app.get("/job/:id", async (c) => {
    const v = view(c, "/job/:id");
    const live = await jobPage(errand, v, c.req.param("id"));
    if (!live) return c.text(`There is no job "${c.req.param("id")}"`, 404);
    const events = `/api/jobs/${encodeURIComponent(c.req.param("id"))}/events`;
    return await sendPage(c, { ...v, title: `Job ${c.req.param("id")}`, refreshSeconds, live, events });
  });
  app.get("/topic/:topic", async (c) => {
    const v = view(c, "/topic/:topic");
    const live = await topicPage(errand, v, c.req.param("topic"));
    if (!live) return c.text(`There is no topic "${c.req.param("topic")}"`, 404);
    return await sendPage(c, { ...v, title: `Topic ${c.req.param("topic")}`, refreshSeconds, live });
  });
  app.get("/log/:log", async (c) => {
    const v = view(c, "/log/:log");
    const log = c.req.param("log");
    const live = await logPage(errand, v, log);
    if (!live) return c.text(`There is no log "${log}"`, 404);
    return await sendPage(c, { ...v, title: `Log ${log}`, refreshSeconds, live });
  });
  app.get("/queue/:queue", async (c) => {
    const v = view(c, "/queue/:queue");
    const queue = c.req.param("queue");
    const live = await queuePage(errand, v, queue, (name) => c.req.query(name), maxPageSize);
    if (!live) return c.text(`There is no queue "${queue}"`, 404);
    return await sendPage(c, { ...v, title: `Queue ${queue}`, refreshSeconds, live });
  });
  // The overview answers at the mount path with or without a trailing slash; other paths are not found.
  app.get("/*", async (c) => {
    const v = view(c, "/*");
    if (c.req.path.length > v.base.length + 1) return jsonError(c, 404, `No admin route GET ${c.req.path}`);
    const filters = listOptions((name) => c.req.query(name), maxPageSize);
    const minutes = statsMinutes(c.req.query("minutes"), CHART_MINUTES, DEFAULT_CHART_MINUTES);
    const live = await overview(errand, v, filters, minutes, health);
    return await sendPage(c, { ...v, title: "Overview", refreshSeconds, live, events: "/api/events" });
  });
  return app;
}

function whole(name: string, value: number, min: number): number {
  if (!Number.isInteger(value) || value < min) {
    throw new ValidationError(`Option "${name}" must be a whole number of at least ${min}, got "${String(value)}"`);
  }
  return value;
}
