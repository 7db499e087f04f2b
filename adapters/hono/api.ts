/**
 * The JSON admin API: jobs (one at a time and in bulk), counts, workers and
 * the rescue of their expired leases, schedules,
 * topics, stats, flow control's limits and groups, and the workflows
 * waiting on events (and sending one), each route a thin
 * call to the errand. Every state-changing route reports what it changed to
 * the router's audit hook. Errors become JSON bodies in the router's error
 * handler.
 *
 * @module
 */
import { Hono } from "hono";
import { type KindLimitsInfo, NotFoundError, type QueueLimitsInfo, STATS_MINUTES, ValidationError } from "../../mod.ts";
import type { Record } from "./audit.ts";
import {
  type AdminErrand,
  bulkFilter,
  groupedKind,
  groupPage,
  jobDurations,
  jsonBody,
  listOptions,
  pauseDuration,
  sendEventBody,
  statsMinutes,
  withoutPayload,
} from "./present.ts";

/** Settings of the API routes. */
export interface ApiSettings {
  /** Whether job and schedule payloads are returned. */
  readonly showPayloads: boolean;
  /** Largest page of jobs. */
  readonly maxPageSize: number;
  /** Reports each change to the audit hook. */
  readonly record: Record;
}

/** The bulk actions, by the last segment of their route. */
const BULK = { retry: "retryMany", cancel: "cancelMany", delete: "deleteMany" } as const;

/** The routes under `/api`. */
export function apiRoutes(errand: AdminErrand, settings: ApiSettings): Hono {
  const { showPayloads, maxPageSize, record } = settings;
  const api = new Hono();

  api.get("/jobs", async (c) => {
    const page = await errand.list(listOptions((name) => c.req.query(name), maxPageSize));
    return c.json({ jobs: page.jobs.map((j) => withoutPayload(j, showPayloads)), cursor: page.cursor });
  });
  api.get("/jobs/:id", async (c) => {
    const job = await errand.get(c.req.param("id"));
    if (!job) throw new NotFoundError(`There is no job "${c.req.param("id")}"`);
    return c.json({ ...withoutPayload(job, showPayloads), durations: jobDurations(job, Date.now()) });
  });
  for (const [route, action] of Object.entries(BULK) as [keyof typeof BULK, typeof BULK[keyof typeof BULK]][]) {
    api.post(`/jobs/${route}`, async (c) => {
      const filter = bulkFilter(await jsonBody(c, 'a JSON filter such as {"state":"failed","queue":"mail"}'));
      const { count } = await errand[action](filter);
      await record(c, { action, filter, count });
      return c.json({ count });
    });
  }
  api.post("/jobs/:id/retry", async (c) => {
    const job = await errand.retry(c.req.param("id"));
    await record(c, { action: "retry", id: job.id });
    return c.json(withoutPayload(job, showPayloads));
  });
  api.post("/jobs/:id/cancel", async (c) => {
    const job = await errand.cancel(c.req.param("id"));
    await record(c, { action: "cancel", id: job.id });
    return c.json(withoutPayload(job, showPayloads));
  });
  api.delete("/jobs/:id", async (c) => {
    const id = c.req.param("id");
    await errand.delete(id);
    await record(c, { action: "delete", id });
    return c.json({ deleted: id });
  });

  api.get("/counts", async (c) => c.json(await errand.counts()));
  api.get(
    "/stats",
    async (c) => c.json(await errand.stats({ minutes: statsMinutes(c.req.query("minutes"), STATS_MINUTES, 1) })),
  );
  api.get("/workers", async (c) => c.json(await errand.workers()));
  api.post("/rescue", async (c) => {
    const count = await errand.rescueExpired();
    await record(c, { action: "rescueExpired", count });
    return c.json({ rescued: count });
  });

  api.get("/schedules", async (c) => c.json((await errand.schedules()).map((s) => withoutPayload(s, showPayloads))));
  api.post("/schedules/:id/trigger", async (c) => {
    const [schedule, jobId] = [c.req.param("id"), await errand.trigger(c.req.param("id"))];
    await record(c, { action: "triggerSchedule", schedule, jobId });
    return c.json({ jobId });
  });

  api.get("/topics", async (c) => c.json(await errand.topics()));
  api.get("/topics/:topic/partitions", async (c) => {
    const topic = await knownTopic(errand, c.req.param("topic"));
    return c.json(await errand.partitions(topic));
  });
  api.post("/topics/:topic/partitions/:n/force-fail", async (c) => {
    const topic = await knownTopic(errand, c.req.param("topic"));
    const n = c.req.param("n");
    if (!/^\d{1,4}$/.test(n)) throw new ValidationError(`A partition is a whole number, got "${n}"`);
    const failed = await errand.forceFailPartitionHead(topic, Number(n));
    await record(c, { action: "forceFailPartitionHead", topic, partition: Number(n), jobId: failed?.id ?? null });
    return c.json({ failed: failed && withoutPayload(failed, showPayloads) });
  });

  api.get("/event-waits", async (c) => c.json(await errand.eventWaits(c.req.query("event") || undefined)));
  api.post("/event-waits/:event/send", async (c) => {
    const event = c.req.param("event");
    const body = sendEventBody(await jsonBody(c, 'a JSON object such as {"key":"42","data":{"approved":true}}'));
    const sent = await errand.sendEvent(event, body);
    await record(c, { action: "sendEvent", event, key: body.key ?? "", ...sent });
    return c.json(sent);
  });

  api.get("/limits", (c) => c.json(errand.limits()));
  api.get("/queues/:queue/limits", (c) => c.json(queueLimits(errand, c.req.param("queue"))));
  api.get(
    "/queues/:queue/groups",
    async (c) => c.json(await groupPage(errand, c.req.param("queue"), (name) => c.req.query(name), maxPageSize)),
  );
  api.post("/groups/:kind/:group/pause", async (c) => {
    const [kind, group] = [c.req.param("kind"), c.req.param("group")];
    const duration = pauseDuration(c.req.query("duration"));
    await errand.pauseGroup(groupedKind(errand, kind), group, duration);
    await record(c, { action: "pauseGroup", kind, group, duration });
    return c.json({ kind, group, paused: true });
  });
  api.post("/groups/:kind/:group/resume", async (c) => {
    const [kind, group] = [c.req.param("kind"), c.req.param("group")];
    await errand.resumeGroup(groupedKind(errand, kind), group);
    await record(c, { action: "resumeGroup", kind, group });
    return c.json({ kind, group, paused: false });
  });
  return api;
}

/** The limits of `queue` and of the kinds whose jobs go to it. @throws {NotFoundError} For a queue the errand does not know. */
function queueLimits(
  errand: AdminErrand,
  queue: string,
): QueueLimitsInfo & { readonly kinds: readonly KindLimitsInfo[] } {
  const { queues, kinds } = errand.limits();
  const limits = queues.find((q) => q.queue === queue);
  if (!limits) throw new NotFoundError(`There is no queue "${queue}" in this errand's options or kinds`);
  return { ...limits, kinds: kinds.filter((k) => k.queue === queue) };
}

/** `topic` if it is configured. @throws {NotFoundError} Otherwise. */
async function knownTopic(errand: AdminErrand, topic: string): Promise<string> {
  if (!(await errand.topics()).some((t) => t.topic === topic)) throw new NotFoundError(`There is no topic "${topic}"`);
  return topic;
}
