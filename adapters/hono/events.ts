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
 * Events wait in the response body's queue until the server takes them,
 * which it does as fast as the client's connection takes them. A client
 * that stops reading (a stuck tab, a dead peer that never closed) would
 * make that queue grow for as long as the stream lives, so it is bounded:
 * an event that would take it past {@link STREAM_BUFFER_BYTES} cuts the
 * stream instead: the events held are dropped, the store is no longer read
 * for it, and the body errors, so the server closes the connection when it
 * next reads (once the client has read what the connection held). A
 * browser's `EventSource` then reconnects and gets the current state.
 *
 * @module
 */
import type { Context } from "hono";
import { Hono } from "hono";
import { NotFoundError } from "../../mod.ts";
import { type AdminErrand, jsonSafe, withoutPayload } from "./present.ts";
import { whenAll } from "../../src/base/when_all.ts";

/** How often the overview stream sends its numbers. */
export const OVERVIEW_EVERY_MS = 2_000;

/** How often a stream sends a comment line, so proxies do not close it for being idle. */
export const HEARTBEAT_MS = 15_000;

/**
 * Most bytes of events a stream holds for a client that has not taken them
 * (1 MiB, past what the connection itself buffers); an event that would
 * take it past this cuts the stream. An event larger than this alone is
 * still sent, into an empty queue.
 */
export const STREAM_BUFFER_BYTES = 1024 * 1024;

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
          send("update", withoutPayload(update, settings.showPayloads));
        }
      } catch (err) {
        if (!(err instanceof NotFoundError)) throw err;
        send("gone", { error: err.message });
      }
    });
  });

  events.get("/events", (c) =>
    eventStream(c, async (send, signal) => {
      while (!signal.aborted) {
        const [counts, stats, logs] = await whenAll([errand.counts(), errand.stats(), errand.logs()]);
        send("overview", { counts, stats, logs });
        await pause(OVERVIEW_EVERY_MS, signal);
      }
    }));
  return events;
}

/** Sends one event: its name and a value sent as JSON (nothing once the stream has ended). */
type Send = (event: string, value: unknown) => void;

/**
 * An SSE response whose events `body` sends until it returns or `signal`
 * aborts: the client went away (the response body was cancelled or the
 * request aborted), or the stream was cut because its client did not take
 * {@link STREAM_BUFFER_BYTES} of events. A heartbeat comment goes meanwhile.
 */
function eventStream(c: Context, body: (send: Send, signal: AbortSignal) => Promise<void>): Response {
  const gone = new AbortController();
  const stop = () => gone.abort();
  const encoder = new TextEncoder();
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      const write = (text: string) => {
        if (gone.signal.aborted) return;
        const bytes = encoder.encode(text);
        const held = STREAM_BUFFER_BYTES - controller.desiredSize!;
        if (held > 0 && held + bytes.byteLength > STREAM_BUFFER_BYTES) return cut(held);
        controller.enqueue(bytes);
      };
      const cut = (held: number) => {
        const why =
          `the client has not taken ${held} bytes of events, and the stream holds at most ${STREAM_BUFFER_BYTES}`;
        console.warn(`errand admin: closed the event stream ${c.req.path}: ${why}`);
        controller.error(new Error(`Event stream closed: ${why}`));
        stop();
      };
      const heartbeat = setInterval(() => write(": heartbeat\n\n"), HEARTBEAT_MS);
      c.req.raw.signal.addEventListener("abort", stop, { once: true });
      gone.signal.addEventListener("abort", () => {
        clearInterval(heartbeat);
        c.req.raw.signal.removeEventListener("abort", stop);
      }, { once: true });
      // Not awaited: the body runs while the stream is read.
      void body((event, value) => write(`event: ${event}\ndata: ${JSON.stringify(value, jsonSafe)}\n\n`), gone.signal)
        .catch((err) => {
          if (!gone.signal.aborted) console.error("errand admin: an event stream failed", err);
        })
        .finally(() => {
          if (!gone.signal.aborted) controller.close();
          stop();
        });
    },
    cancel: stop,
  }, new ByteLengthQueuingStrategy({ highWaterMark: STREAM_BUFFER_BYTES }));
  return c.body(stream, 200, {
    "Content-Type": "text/event-stream",
    "Cache-Control": "no-cache",
    "X-Accel-Buffering": "no", // nginx: pass events on as they come
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
