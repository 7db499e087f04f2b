/**
 * An event stream whose client does not read, over a real port: a client
 * asks for a job's events and never reads them while the job reports large
 * progress values, each as soon as the router has taken the last one. The
 * router must cut the stream once {@link STREAM_BUFFER_BYTES} of events
 * wait for that client (counted through the response body: the bytes the
 * router was handed minus those the server took), stop watching the job,
 * and the client, reading at last, finds the connection closed.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { connect } from "node:net";
import { after, before, describe, it } from "node:test";
import { createClient } from "@libsql/client";
import { Hono } from "hono";
import { createErrand, defineJobs, job, type JobUpdate } from "../../mod.ts";
import { libsqlStore } from "../../adapters/libsql/mod.ts";
import { adminRouter } from "../../adapters/hono/mod.ts";
import { STREAM_BUFFER_BYTES } from "../../adapters/hono/events.ts";
import { listen } from "../support/serve.ts";
import { quietLogger } from "../support/wait.ts";

/** Progress of about 60 KB: the client's socket and the kernel take a few MB before the router's buffer fills. */
const PAD = "x".repeat(60_000);

/** How long the router may take to cut the stream: it does within a second or two; this only bounds a hang. */
const DEADLINE_MS = 60_000;

/** Resolves with `promise`, or rejects with `message` after {@link DEADLINE_MS}. */
async function within<T>(promise: Promise<T>, message: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(message)), DEADLINE_MS)));
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

describe("an event stream whose client does not read", () => {
  /** Bytes of events the router was handed by `watch()` for the client (each event as the stream writes it). */
  let handed = 0;
  /** The largest event handed. */
  let largest = 0;
  /** Bytes the server took from the router's response body to send to the client. */
  let taken = 0;
  /** The last progress number the router was handed, and a wake-up for the handler waiting on it. */
  let lastSeen = -1;
  let wake: (() => void) | undefined;
  let watchEnded!: () => void;
  const watchEnd = new Promise<void>((resolve) => (watchEnded = resolve));
  let bodyEnded!: (how: "ended" | "cut" | "cancelled") => void;
  const bodyEnd = new Promise<"ended" | "cut" | "cancelled">((resolve) => (bodyEnded = resolve));
  let stopped = false;

  const jobs = defineJobs({ report: job<Record<string, never>>() });
  const errand = createErrand({
    jobs,
    store: libsqlStore(createClient({ url: ":memory:" })),
    logger: quietLogger(),
    progressInterval: 0,
    handlers: {
      // A new large progress value each time the router has taken the previous one, until told to stop.
      report: async (_payload, job) => {
        for (let n = 0; !stopped && !job.signal.aborted; n++) {
          job.progress({ n, pad: PAD });
          while (lastSeen < n && !stopped && !job.signal.aborted) await new Promise<void>((r) => (wake = r));
        }
      },
    },
  });

  /** The errand, with each update its `watch()` hands the router counted. */
  const observed = new Proxy(errand, {
    get(target, key) {
      if (key === "watch") {
        return async function* (id: string, options?: { signal?: AbortSignal }): AsyncGenerator<JobUpdate> {
          try {
            for await (const update of target.watch(id, options)) {
              const bytes = Buffer.byteLength(`event: update\ndata: ${JSON.stringify(update)}\n\n`);
              handed += bytes;
              largest = Math.max(largest, bytes);
              lastSeen = (update.progress as { n?: number } | null)?.n ?? lastSeen;
              wake?.();
              yield update;
            }
          } finally {
            watchEnded();
          }
        };
      }
      const value = Reflect.get(target, key, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });

  const app = new Hono().route("/ops", adminRouter(observed, { insecure: true, showPayloads: true }));
  let server: Awaited<ReturnType<typeof listen>>;

  before(async () => {
    await errand.start();
    // The server takes the event stream's body through a counter; it takes a chunk only when the socket has room.
    server = await listen({
      async fetch(request) {
        const res = await app.fetch(request);
        if (!res.headers.get("content-type")?.startsWith("text/event-stream")) return res;
        const reader = res.body!.getReader();
        // Settles when the router ends or errors its body, though the server is not reading it (its socket is full).
        reader.closed.then(() => bodyEnded("ended"), () => bodyEnded("cut"));
        const counted = new ReadableStream<Uint8Array>({
          async pull(controller) {
            try {
              const part = await reader.read();
              if (part.done) return controller.close();
              taken += part.value.byteLength;
              controller.enqueue(part.value);
            } catch (err) {
              controller.error(err);
            }
          },
          cancel(reason) {
            bodyEnded("cancelled");
            return reader.cancel(reason);
          },
        }, { highWaterMark: 0 });
        return new Response(counted, { status: res.status, headers: res.headers });
      },
    });
  });
  after(async () => {
    stopped = true;
    wake?.();
    await errand.shutdown({ drain: "5s" });
    await server?.close();
  });

  it("is cut once its buffer is full, holding no more than the bound, and the router stops watching", async () => {
    const { id } = await errand.enqueue("report", {});
    const { port } = new URL(server.url);
    const socket = connect(Number(port), "127.0.0.1");
    const received: Buffer[] = [];
    const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
    socket.on("error", () => {}); // a cut connection may end with a reset
    socket.write(`GET /ops/api/jobs/${id}/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
    socket.pause(); // and never read, until the server has given up

    const how = await within(bodyEnd, "the router did not cut the stream of a client that reads nothing");
    assert.equal(how, "cut", "the router ends the body with an error, so the server closes the connection");
    const held = handed - taken;
    assert.ok(taken > 0, "the server took events until the client's socket was full");
    assert.ok(
      held <= STREAM_BUFFER_BYTES + largest,
      `at most ${STREAM_BUFFER_BYTES} bytes waited, and the event that did not fit: ${held} bytes were handed and not taken`,
    );
    assert.ok(held > STREAM_BUFFER_BYTES - largest, `the buffer was full when the stream was cut: ${held} bytes`);
    await within(watchEnd, "the router went on watching the job after cutting its stream");

    // The client, reading at last, gets the events the server had sent, then the end of the connection.
    socket.on("data", (chunk: Buffer) => received.push(chunk));
    socket.resume();
    await within(closed, "the client's connection stayed open");
    const text = Buffer.concat(received).toString("latin1");
    assert.match(text, /^HTTP\/1\.1 200 /);
    assert.match(text, /event: update\r?\ndata: \{"state":"running","progress":\{"n":0,/);
    stopped = true;
    wake?.();
  });
});
