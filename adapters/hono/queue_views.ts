/**
 * The dashboard's views of queues: a queue's row in the overview's queues
 * table, the "Retry all N failed" button, and a queue's page with its limits
 * (the serving instance's options), its kinds' limits and a page of its groups.
 *
 * @module
 */
import { html } from "hono/html";
import { type ErrandLimits, JOB_STATES, type JobState, type QueueLimitsInfo } from "../../mod.ts";
import { type Html, rate, type ViewContext, when } from "./page.ts";
import { type AdminErrand, groupPage } from "./present.ts";
import { whenAll } from "../../src/base/when_all.ts";

/**
 * A queue's page: its limits as this instance is configured, the limits
 * of the kinds that send jobs to it, and a page of its groups with their
 * running and queued jobs and pauses, each with a pause or resume button;
 * its failed jobs, with "Retry all N failed".
 */
export async function queuePage(
  errand: AdminErrand,
  view: ViewContext,
  queue: string,
  query: (name: string) => string | undefined,
  maxPageSize: number,
): Promise<Html | null> {
  const [counts, page] = await whenAll([errand.counts(), groupPage(errand, queue, query, maxPageSize)]);
  const limits = errand.limits();
  const configured = limits.queues.find((q) => q.queue === queue);
  const byState = counts.byQueue[queue];
  if (!configured && !byState) return null;
  const own: QueueLimitsInfo = configured ?? { queue, concurrency: null, globalConcurrency: null, rateLimit: null };
  const kinds = limits.kinds.filter((k) => k.queue === queue);
  /** Each kind's groupConcurrency by stored name, for "running of most" in the groups table. */
  const perGroup = new Map(
    limits.kinds.flatMap((k) => k.groupConcurrency === null ? [] : [[k.kind, k.groupConcurrency]]),
  );
  const { base } = view;
  const running = byState?.running ?? 0;
  const action = (kind: string, group: string, what: string) =>
    `/api/groups/${encodeURIComponent(kind)}/${encodeURIComponent(group)}/${what}`;
  const pageLink = (cursor: string) =>
    `${base}/queue/${encodeURIComponent(queue)}?${new URLSearchParams(cursor ? { cursor } : {})}#groups`;
  return html`
    <div id="live">
      <h2>Queue ${queue}</h2>
      <p><a href="${base}/?queue=${encodeURIComponent(queue)}#jobs">Its jobs</a></p>
      <div class="grid">
        <section class="panel" id="queue-limits"><dl class="facts">
          <dt>running (every process)</dt>
          <dd data-running="${running}">${running}${own.globalConcurrency === null
            ? ""
            : ` of ${own.globalConcurrency}`}</dd>
          <dt>available</dt><dd>${byState?.available ?? 0}</dd>
          <dt>failed</dt><dd>${byState?.failed ?? 0} ${retryAll(byState?.failed ?? 0, queue)}</dd>
          <dt>global concurrency</dt><dd data-limit="globalConcurrency">${own.globalConcurrency ?? "none"}</dd>
          <dt>rate limit</dt><dd data-limit="rateLimit">${own.rateLimit ? rate(own.rateLimit) : "none"}</dd>
          <dt>slots here</dt><dd>${own.concurrency ?? "none: this instance runs no worker for it"}</dd>
        </dl>
        <p class="muted">Limits as this instance is configured; every process should set the same.</p></section>
      </div>
      ${kinds.length === 0 ? "" : html`
        <h2>Kinds with groups or limits</h2>
        <table id="kind-limits">
          <thead>
            <tr>
              <th>kind</th>
              <th>grouped</th>
              <th class="num">group concurrency</th>
              <th>rate limit</th>
            </tr>
          </thead>
          <tbody>${kinds.map((k) =>
            html`
              <tr data-kind="${k.kind}">
                <td>${k.kind} <span class="muted">v${k.version}</span></td>
                <td>${k.grouped ? "yes" : "no"}</td>
                <td class="num">${k.groupConcurrency ?? "–"}</td>
                <td>${k.rateLimit
                  ? `${rate(k.rateLimit)} ${k.rateLimit.perGroup ? "per group" : "for the kind"}`
                  : "–"}</td>
              </tr>
            `
          )}</tbody>
        </table>
      `}
      <h2 id="groups">Groups</h2>
      <table id="groups-table">
        <thead>
          <tr>
            <th>kind</th>
            <th>group</th>
            <th class="num">running</th>
            <th class="num">queued</th>
            <th>paused until (UTC)</th>
            <th><span class="sr-only">action</span></th>
          </tr>
        </thead>
        <tbody>${page.groups.map((g) => {
          const most = perGroup.get(g.kind);
          return html`
            <tr data-kind="${g.kind}" data-group="${g.group}">
              <td>${g.kind}</td>
              <td>${g.group}</td>
              <td class="num">${g.running}${most === undefined ? "" : ` of ${most}`}</td>
              <td class="num">${g.queued}</td>
              <td>${when(g.pausedUntil)}</td>
              <td>${g.pausedUntil
                ? html`<button class="resume" data-action="${
                  action(g.kind, g.group, "resume")
                }" data-done="Resumed ${g.group}">Resume</button>`
                : html`
                  <button class="pause" data-action="${action(g.kind, g.group, "pause")}" data-param="duration"
                    data-prompt="Pause group ${g.group} of ${g.kind} in every process for how long? (30s, 10m, 2h)"
                    data-default="10m" data-done="Paused ${g.group}">Pause</button>
                `}</td>
            </tr>
          `;
        })}</tbody>
      </table>
      <p>${page.groups.length === 0 ? "No group has jobs running or waiting." : ""} ${query("cursor")
        ? html`<a href="${pageLink("")}">First page</a>`
        : ""} ${page.cursor ? html`<a id="next-groups" href="${pageLink(page.cursor)}">Next page</a>` : ""}</p>
    </div>
  `;
}

/**
 * "Retry all N failed" (of `queue`, or of every queue), asking for
 * confirmation first; nothing when none failed.
 */
export function retryAll(failed: number, queue?: string): Html | string {
  if (failed === 0) return "";
  const of = queue === undefined ? "" : ` of queue ${queue}`;
  const filter = queue === undefined ? { state: "failed" } : { state: "failed", queue };
  return html`<p><button class="retry-all" data-action="/api/jobs/retry" data-body="${JSON.stringify(filter)}"
  data-confirm="Retry all ${failed} failed jobs${of}? Each runs again now, with one more attempt if it used up its attempts."
  data-done="Retried {count} failed jobs${of}">Retry all ${failed} failed</button></p>`;
}

/** One row of the overview's queues table: jobs by state (none when `byState` is absent), and a link to its limits and groups. */
export function queueRow(
  base: string,
  queue: string,
  byState: Readonly<Record<JobState, number>> | undefined,
  limits: ErrandLimits,
): Html {
  const q = encodeURIComponent(queue);
  return html`
    <tr data-queue="${queue}">
      <td><a href="${base}/?queue=${q}#jobs">${queue}</a></td>
      ${JOB_STATES.map((s) => html`<td class="num" data-state="${s}">${byState?.[s] ?? 0}</td>`)}
      <td><a class="queue-link" href="${base}/queue/${q}">${limitsSummary(limits, queue)}</a></td>
    </tr>
  `;
}

/** The limits of `queue` in a few words, for the overview's queues table. */
function limitsSummary(limits: ErrandLimits, queue: string): string {
  const q = limits.queues.find((l) => l.queue === queue);
  const grouped = limits.kinds.filter((k) => k.queue === queue && k.grouped).length;
  const parts = [
    q?.globalConcurrency ? `${q.globalConcurrency} at once` : "",
    q?.rateLimit ? rate(q.rateLimit) : "",
    grouped === 0 ? "" : `${grouped} grouped kind${grouped === 1 ? "" : "s"}`,
  ].filter(Boolean);
  return parts.length === 0 ? "none" : parts.join(", ");
}
