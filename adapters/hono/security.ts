/**
 * The admin router's guards: the application's `authorize` check on every
 * route, and on state-changing routes a JSON content type, a same-origin
 * `Sec-Fetch-Site` and a body size limit, so a plain cross-site page or form
 * cannot change anything. The page's Content-Security-Policy allows only
 * the script and styles carrying the response's nonce.
 *
 * @module
 */
import type { Context, MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";

/** Decides whether a request may use the admin router (check a session, a token, a network). */
export type Authorize = (c: Context) => boolean | Promise<boolean>;

/** A JSON error body with `status`. */
export function jsonError(
  c: Context,
  status: 400 | 401 | 403 | 404 | 409 | 413 | 415 | 500,
  message: string,
): Response {
  return c.json({ error: message }, status);
}

/** Refuses every request that `authorize` does not allow, with 401. */
export function requireAuthorization(authorize: Authorize | undefined): MiddlewareHandler {
  return async (c, next) => {
    if (authorize && !(await authorize(c))) return jsonError(c, 401, "Not authorized to use the errand admin");
    return await next();
  };
}

/**
 * Guards state-changing requests (anything but GET and HEAD): a JSON
 * content type (415 otherwise), no cross-site `Sec-Fetch-Site` (403) and a
 * body of at most `maxBodyBytes` (413).
 */
export function guardChanges(maxBodyBytes: number): MiddlewareHandler {
  const limit = bodyLimit({
    maxSize: maxBodyBytes,
    onError: (c) => jsonError(c, 413, `Request bodies are limited to ${maxBodyBytes} bytes`),
  });
  return async (c, next) => {
    if (c.req.method === "GET" || c.req.method === "HEAD") return await next();
    const type = c.req.header("content-type")?.split(";")[0].trim().toLowerCase();
    if (type !== "application/json") {
      return jsonError(c, 415, 'State-changing requests must send "content-type: application/json"');
    }
    const site = c.req.header("sec-fetch-site");
    if (site !== undefined && site !== "same-origin" && site !== "none") {
      return jsonError(c, 403, `Cross-site requests (Sec-Fetch-Site: ${site}) may not change jobs`);
    }
    return await limit(c, next);
  };
}

/** A fresh nonce for one page response. */
export function newNonce(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(18));
  return btoa(String.fromCharCode(...bytes));
}

/** The page's Content-Security-Policy: nothing but its own nonce'd script and styles, and fetches to itself. */
export function pagePolicy(nonce: string): string {
  return [
    "default-src 'none'",
    `script-src 'nonce-${nonce}'`,
    `style-src 'nonce-${nonce}'`,
    "img-src 'self' data:",
    "connect-src 'self'",
    "form-action 'self'",
    "base-uri 'none'",
    "frame-ancestors 'none'",
  ].join("; ");
}
