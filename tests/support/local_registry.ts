/**
 * A tiny npm registry for tests, on 127.0.0.1 at a random port: it serves
 * one package from a packed tarball (`npm pack`) as if it were published,
 * and passes every other request through to the real registry. npm, Deno
 * and Bun install from it when pointed at it (`npm_config_registry`,
 * `NPM_CONFIG_REGISTRY`, `BUN_CONFIG_REGISTRY`), so a getting-started page
 * can be followed as written before the package is on npm.
 *
 * Packuments passed through keep their absolute tarball URLs. Seen with npm
 * 11, Deno 2.9 and Bun 1.4: npm and Deno replace the public registry's host
 * in them with the configured registry (npm's default `replace-registry-host`),
 * so their tarballs come through here too; Bun fetches them from the public
 * registry as given. Either way every client gets every package. Every
 * request is recorded, with its user agent, so a test can tell which client
 * fetched the served package.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Readable } from "node:stream";
import { gunzipSync } from "node:zlib";

/** One request the registry answered. */
export interface RegistryRequest {
  method: string;
  /** The path and query, as the client sent it. */
  url: string;
  status: number;
  userAgent: string;
  /** True when the request was for the served package (its packument or tarball). */
  local: boolean;
}

/** A running registry. */
export interface LocalRegistry {
  /** Its base URL, with a trailing slash, e.g. `http://127.0.0.1:43210/`. */
  url: string;
  /** The served package's name and version, from the tarball's package.json. */
  name: string;
  version: string;
  /** Every request so far, oldest first. */
  requests: RegistryRequest[];
  close(): Promise<void>;
}

/** Options of {@linkcode startLocalRegistry}. */
export interface LocalRegistryOptions {
  /** The packed package (.tgz) to serve. */
  tarball: string;
  /** Where every other request goes (default https://registry.npmjs.org/). */
  upstream?: string;
  /** The longest an upstream request may take (default 60 s). */
  upstreamTimeoutMs?: number;
  /**
   * When the packument says the version was published (default 30 days ago):
   * Deno refuses versions younger than its minimum dependency age (24 hours
   * by default), as it would a real release of the last day.
   */
  published?: Date;
}

/** Starts the registry; `close()` stops it. */
export async function startLocalRegistry(options: LocalRegistryOptions): Promise<LocalRegistry> {
  const upstream = (options.upstream ?? "https://registry.npmjs.org/").replace(/\/?$/, "/");
  const timeout = options.upstreamTimeoutMs ?? 60_000;
  const tgz = readFileSync(options.tarball);
  const manifest = JSON.parse(packageJsonOf(tgz)) as Record<string, unknown> & { name: string; version: string };
  const { name, version } = manifest;
  const file = `${name.split("/").pop()}-${version}.tgz`;
  const tarballPath = `/${name}/-/${file}`;
  const requests: RegistryRequest[] = [];
  const published = (options.published ?? new Date(Date.now() - 30 * 86_400_000)).toISOString();
  const shasum = createHash("sha1").update(tgz).digest("hex");
  const integrity = `sha512-${createHash("sha512").update(tgz).digest("base64")}`;

  const server = createServer((req, res) => {
    const url = req.url ?? "/";
    const path = safeDecode(url.split("?")[0]);
    const record = (status: number, local: boolean) =>
      requests.push({ method: req.method ?? "GET", url, status, userAgent: req.headers["user-agent"] ?? "", local });
    if (path === `/${name}` || path === tarballPath) {
      if (req.method !== "GET" && req.method !== "HEAD") {
        record(405, true);
        return send(res, 405, "text/plain", "read only");
      }
      if (path === tarballPath) {
        record(200, true);
        return send(res, 200, "application/octet-stream", tgz, req.method === "HEAD");
      }
      const base = `http://${req.headers.host}`;
      const packument = {
        _id: name,
        name,
        "dist-tags": { latest: version },
        modified: published,
        time: { created: published, modified: published, [version]: published },
        versions: {
          [version]: {
            ...manifest,
            _id: `${name}@${version}`,
            dist: { tarball: `${base}${tarballPath}`, shasum, integrity },
          },
        },
      };
      record(200, true);
      return send(res, 200, "application/json", JSON.stringify(packument), req.method === "HEAD");
    }
    proxy(req, res, new URL(url.replace(/^\//, ""), upstream), timeout).then(
      (status) => record(status, false),
      (error) => {
        record(502, false);
        if (!res.headersSent) send(res, 502, "text/plain", `upstream: ${error}`);
        else res.destroy();
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/`,
    name,
    version,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function safeDecode(path: string): string {
  try {
    return decodeURIComponent(path);
  } catch {
    return path;
  }
}

function send(res: ServerResponse, status: number, type: string, body: string | Uint8Array, head = false): void {
  const bytes = typeof body === "string" ? Buffer.from(body) : body;
  res.writeHead(status, { "content-type": type, "content-length": String(bytes.byteLength) });
  res.end(head ? undefined : bytes);
}

/** Only what a registry answer depends on; fetch sets its own host, encoding and length. */
const FORWARDED = [
  "accept",
  "content-type",
  "user-agent",
  "npm-command",
  "npm-scope",
  "npm-session",
  "if-none-match",
  "if-modified-since",
];

async function proxy(req: IncomingMessage, res: ServerResponse, target: URL, timeout: number): Promise<number> {
  const headers: Record<string, string> = {};
  for (const header of FORWARDED) {
    const value = req.headers[header];
    if (typeof value === "string") headers[header] = value;
  }
  const method = req.method ?? "GET";
  let body: Uint8Array<ArrayBuffer> | undefined;
  if (method !== "GET" && method !== "HEAD") {
    const chunks: Uint8Array[] = [];
    for await (const chunk of req) chunks.push(chunk as Uint8Array);
    body = new Uint8Array(Buffer.concat(chunks));
  }
  const answer = await fetch(target, {
    method,
    headers,
    body,
    redirect: "follow",
    signal: AbortSignal.timeout(timeout),
  });
  const out: Record<string, string> = {};
  // The body arrives decoded, so its encoding and length headers no longer apply.
  for (const [key, value] of answer.headers) {
    if (!["content-encoding", "content-length", "transfer-encoding", "connection"].includes(key)) out[key] = value;
  }
  res.writeHead(answer.status, out);
  if (!answer.body || method === "HEAD") {
    res.end();
    return answer.status;
  }
  await new Promise<void>((resolve, reject) => {
    const stream = Readable.fromWeb(answer.body as import("node:stream/web").ReadableStream);
    stream.on("error", reject);
    res.on("error", reject);
    res.on("finish", resolve);
    stream.pipe(res);
  });
  return answer.status;
}

/** The `package/package.json` of a packed tarball (a gzipped ustar archive). */
function packageJsonOf(tgz: Uint8Array): string {
  const tar = gunzipSync(tgz);
  for (let at = 0; at + 512 <= tar.length;) {
    const header = tar.subarray(at, at + 512);
    const entry = header.subarray(0, 100).toString("utf8").replace(/\0.*$/s, "");
    const prefix = header.subarray(345, 500).toString("utf8").replace(/\0.*$/s, "");
    if (!entry) break;
    const size = parseInt(header.subarray(124, 136).toString("utf8").replace(/\0.*$/s, "").trim() || "0", 8);
    const path = prefix ? `${prefix}/${entry}` : entry;
    if (path === "package/package.json") return tar.subarray(at + 512, at + 512 + size).toString("utf8");
    at += 512 + Math.ceil(size / 512) * 512;
  }
  throw new Error("the tarball has no package/package.json");
}
