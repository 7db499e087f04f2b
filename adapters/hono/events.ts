/**
 * The admin router's Server-Sent Events streams, which the dashboard's
 * overview and job pages read to update in place:
 * - `GET /api/jobs/:id/events`: an `update` event with the job's state,
 *   progress, result (once completed) and latest error at once and after
 *   each change, from `errand.watch()`; the stream ends after the final
 *   state, or with a `gone` event when the job is deleted meanwhile.
 * - `GET /api/events`: an `overview` event every
 *   {@link OVERVIEW_EVERY_MS} with the overview's numbers, the bodies of
 *   `GET /api/counts`, `GET /api/stats` and `GET /api/logs` together (a
 *   log's consumer lag moves without any job changing).
 * Both send a comment every {@link HEARTBEAT_MS} so proxies keep them
 * open, and stop reading the store when the client goes away.
 *
 * @module
 */
import type { Context } from "hono";
import { Hono } from "hono";
import { streamSSE } from "hono/streaming";
import { NotFoundError } from "../../mod.ts";
import { type AdminErrand, jsonSafe, withoutPayload } from "./present.ts";

/** How often the overview stream sends its numbers. */
export const OVERVIEW_EVERY_MS = 2_000;

/** How often a stream sends a comment line, so proxies do not close it for being idle. */
export const HEARTBEAT_MS = 15_000;

/** Settings of the event streams. */
export interface EventSettings {
  /** Whether a job's progress and result are sent (they are its contents, like its payload). */
  readonly showPayloads: boolean;
}

/** The event stream routes, mounted under `/api`. */
export function eventRoutes(errand: AdminErrand, settings: EventSettings): Hono {
  const events = new Hono();

  events.get("/jobs/:id/events", async (c) => {
    const id = c.req.param("id");
    // Checked before the stream starts, so an unknown id gets a 404 like every other route.
    if (!(await errand.get(id))) throw new NotFoundError(`There is no job "${id}"`);
    return eventStream(c, async (send, signal) => {
      try {
        for await (const update of errand.watch(id, { signal })) {
          await send("update", withoutPayload(update, settings.showPayloads));
        }
      } catch (err) {
        if (!(err instanceof NotFoundError)) throw err;
        await send("gone", { error: err.message });
      }
    });
  });

  events.get("/events", (c) =>
    eventStream(c, async (send, signal) => {
      while (!signal.aborted) {
        const [counts, stats, logs] = await Promise.all([errand.counts(), errand.stats(), errand.logs()]);
        await send("overview", { counts, stats, logs });
        await pause(OVERVIEW_EVERY_MS, signal);
      }
    }));
  return events;
}

/** Sends one event: its name and a value sent as JSON. */
type Send = (event: string, value: unknown) => Promise<void>;

/**
 * An SSE response whose events `body` sends until it returns or `signal`
 * aborts (the client went away: the response stream was cancelled or the
 * request aborted), with a heartbeat comment meanwhile.
 */
function eventStream(c: Context, body: (send: Send, signal: AbortSignal) => Promise<void>): Response {
  c.header("X-Accel-Buffering", "no"); // nginx: pass events on as they come
  return streamSSE(c, async (stream) => {
    const gone = new AbortController();
    const stop = () => gone.abort();
    stream.onAbort(stop);
    c.req.raw.signal.addEventListener("abort", stop, { once: true });
    const heartbeat = setInterval(() => void stream.write(": heartbeat\n\n"), HEARTBEAT_MS);
    try {
      await body(async (event, value) => {
        if (!gone.signal.aborted) await stream.writeSSE({ event, data: JSON.stringify(value, jsonSafe) });
      }, gone.signal);
    } catch (err) {
      if (!gone.signal.aborted) console.error("errand admin: an event stream failed", err);
    } finally {
      clearInterval(heartbeat);
      c.req.raw.signal.removeEventListener("abort", stop);
    }
  });
}

/** Resolves after `ms`, or at once when `signal` aborts. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}
