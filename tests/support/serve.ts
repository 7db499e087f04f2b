/**
 * Serving a Hono app on a real port with node:http (Node, Deno and Bun all
 * have it), streaming its responses so event streams arrive as they are
 * written; a client that goes away aborts the request's signal and cancels
 * the response body, a client that does not read stops the reading of the
 * body until its socket takes more, and a body that fails cuts the
 * connection, as the runtimes' own servers do. And reading a
 * Server-Sent Events stream with `fetch()`.
 */
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Buffer } from "node:buffer";

/** Something that answers requests, as a Hono app does. */
export interface Fetcher {
  fetch(request: Request): Response | Promise<Response>;
}

/** Serves `app` on 127.0.0.1 with node:http; resolves to its base URL and a close function. */
export async function listen(app: Fetcher): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer(async (req, res) => {
    const gone = new AbortController();
    res.on("close", () => gone.abort());
    const chunks: Uint8Array[] = [];
    for await (const chunk of req) chunks.push(chunk);
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers)) {
      if (typeof value === "string") headers.set(name, value);
    }
    const method = req.method ?? "GET";
    const body = method === "GET" || method === "HEAD" ? undefined : new Uint8Array(Buffer.concat(chunks));
    const request = new Request(`http://127.0.0.1${req.url}`, { method, headers, body, signal: gone.signal });
    const answer = await app.fetch(request);
    res.writeHead(answer.status, Object.fromEntries(answer.headers));
    if (!answer.body) return void res.end();
    const reader = answer.body.getReader();
    gone.signal.addEventListener("abort", () => void reader.cancel().catch(() => {}), { once: true });
    try {
      for (let part = await reader.read(); !part.done; part = await reader.read()) {
        // A client that does not read: wait until the socket takes more, as the runtimes' servers do.
        if (!res.write(part.value)) await drained(res, gone.signal);
      }
    } catch {
      // The client went away, or the body failed: the connection is cut, as the runtimes' servers do.
      return void res.destroy();
    }
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections?.();
      }),
  };
}

/** Resolves when `res` has taken what it buffered (its "drain"), or when `signal` aborts. */
function drained(res: ServerResponse, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off("drain", done);
      signal.removeEventListener("abort", done);
      resolve();
    };
    res.on("drain", done);
    signal.addEventListener("abort", done, { once: true });
  });
}

/** One Server-Sent Event: its name (`message` when it has none) and its data. */
export interface ServerSentEvent {
  readonly event: string;
  readonly data: string;
}

/**
 * The events of an SSE response as they arrive, without its comments
 * (heartbeats); ends when the server ends the stream. Leaving the loop early
 * cancels the body: the client goes away.
 */
export async function* serverSentEvents(res: Response): AsyncGenerator<ServerSentEvent> {
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = "";
  try {
    for (let part = await reader.read(); !part.done; part = await reader.read()) {
      buffered += part.value.replaceAll("\r\n", "\n");
      for (let end = buffered.indexOf("\n\n"); end >= 0; end = buffered.indexOf("\n\n")) {
        const lines = buffered.slice(0, end).split("\n");
        buffered = buffered.slice(end + 2);
        const field = (name: string) =>
          lines.filter((l) => l.startsWith(`${name}:`)).map((l) => l.slice(name.length + 1).replace(/^ /, ""));
        const data = field("data");
        if (data.length > 0) yield { event: field("event")[0] ?? "message", data: data.join("\n") };
      }
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
}
