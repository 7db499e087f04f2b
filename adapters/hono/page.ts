/**
 * The dashboard page's frame and the small formatting pieces every view
 * uses. Views are built with Hono's `html` template, which escapes every
 * interpolated value: error messages, names and ids render as text.
 *
 * @module
 */
import type { Context } from "hono";
import { html, raw } from "hono/html";
import type { HtmlEscapedString } from "hono/utils/html";
import type { JobState } from "../../mod.ts";
import { DASHBOARD_CSS, DASHBOARD_JS, LIVE_HEADER } from "./assets.ts";
import { LIVE_JS } from "./live_script.ts";
import { newNonce, pagePolicy } from "./security.ts";

/** A piece of escaped HTML. */
export type Html = HtmlEscapedString | Promise<HtmlEscapedString>;

/** Where the router is mounted, from a route's full path and its own pattern (`/job/:id` under `/jobs` gives `/jobs`). */
export function mountBase(c: Context, pattern: string): string {
  const full = c.req.routePath;
  const base = full.endsWith(pattern) ? full.slice(0, full.length - pattern.length) : full;
  return base.replace(/\/+$/, "");
}

/**
 * Sends a full page: `live` is the part the page's script refreshes every
 * `refreshSeconds`, or, with `events` (the path of an event stream under
 * the mount), updates from that stream.
 */
export function sendPage(
  c: Context,
  page: { base: string; title: string; refreshSeconds: number; live: Html; events?: string },
): Response | Promise<Response> {
  const nonce = newNonce();
  c.header("Content-Security-Policy", pagePolicy(nonce));
  c.header("X-Content-Type-Options", "nosniff");
  c.header("Referrer-Policy", "same-origin");
  c.header("Cache-Control", "no-store");
  c.header("Vary", LIVE_HEADER);
  // The page's refresh asks for the live part alone.
  if (c.req.header(LIVE_HEADER) === "1") return c.html(page.live);
  return c.html(html`
    <!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>${page.title} · errand</title>
        <link rel="icon" href="data:,">
        <style nonce="${nonce}">${raw(DASHBOARD_CSS)}</style>
      </head>
      <body data-base="${page.base}" data-refresh="${page.refreshSeconds}" data-events="${page.events ?? ""}">
        <header><h1>errand</h1><nav><a href="${page.base}/">Overview</a><a href="${page.base}/#jobs">Jobs</a></nav>
    <span class="muted">${page.title}</span></header>
        <main>
    <div id="status" role="status"></div>
    ${page.live}
        </main>
        <script nonce="${nonce}">${raw(LIVE_JS)}${raw(DASHBOARD_JS)}</script>
      </body>
    </html>
  `);
}

/** A job id as its last 6 characters, linking to its page, with the full id on hover. */
export function jobLink(base: string, id: string): Html {
  return html`<a class="job-link" href="${base}/job/${encodeURIComponent(id)}" title="${id}">…${id.slice(-6)}</a>`;
}

/** A job state as a coloured label. */
export function stateLabel(state: JobState): Html {
  return html`<span class="state state-${state}">${state}</span>`;
}

/** A time as UTC `YYYY-MM-DD hh:mm:ss`, a dash for none, or "invalid time" for one beyond `Date`'s range (a row written outside errand). */
export function when(date: Date | null | undefined): string {
  if (!date) return "–";
  return Number.isNaN(date.getTime()) ? "invalid time" : date.toISOString().replace("T", " ").slice(0, 19);
}

/** A duration for people: `850 ms`, `3.2 s`, `4.0 min`, `2.5 h`. */
export function duration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return "–";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  if (ms < 3_600_000) return `${(ms / 60_000).toFixed(1)} min`;
  return `${(ms / 3_600_000).toFixed(1)} h`;
}

/** A rate limit for people: `100 per 1s`, `5 per 1.5m`, `3 per 250ms`. */
export function rate(limit: { readonly limit: number; readonly periodMs: number }): string {
  const ms = limit.periodMs;
  const units: [number, string][] = [[86_400_000, "d"], [3_600_000, "h"], [60_000, "m"], [1_000, "s"]];
  const [size, unit] = units.find(([size]) => ms >= size) ?? [1, "ms"];
  return `${limit.limit} per ${Math.round((ms / size) * 1000) / 1000}${unit}`;
}

/** A size in bytes for people, or a dash when unknown. */
export function bytes(n: number | null): string {
  if (n === null) return "–";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  let v = n;
  while (v >= 1024 && i < units.length - 1) (v /= 1024), i++;
  return `${i === 0 ? v : v.toFixed(1)} ${units[i]}`;
}

/** What every view knows about its request. */
export interface ViewContext {
  /** Where the router is mounted. */
  readonly base: string;
  /** Whether payloads are shown. */
  readonly showPayloads: boolean;
}
