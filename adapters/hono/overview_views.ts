/**
 * The dashboard's overview: the database's health findings with their
 * fixes (when there are any), counts with "Retry all N failed", activity,
 * workers, queues, workflows waiting for events, schedules, topics with
 * their logs, and the jobs table
 * with its filters. Every number comes from the store, so every instance
 * sharing the database shows the same page.
 *
 * @module
 */
import { html } from "hono/html";
import {
  type ErrandStats,
  type HealthFinding,
  type HealthOptions,
  JOB_STATES,
  type JobState,
  type ListOptions,
  type StatsMinutes,
} from "../../mod.ts";
import { activityChart, DEFAULT_CHART_MINUTES, windowLinks, windowName } from "./chart.ts";
import { logBadges } from "./log_views.ts";
import { bytes, duration, type Html, jobLink, stateLabel, type ViewContext, when } from "./page.ts";
import type { AdminErrand } from "./present.ts";
import { queueRow, retryAll } from "./queue_views.ts";
import { eventWaitsPanel } from "./workflow_views.ts";
import { whenAll } from "../../src/base/when_all.ts";

/**
 * The overview: counts, activity over the last `minutes`, workers, storage,
 * queues, workflows waiting by event, schedules, topics, then jobs filtered
 * by `filters`; the health panel's findings by the thresholds of `health`.
 */
export async function overview(
  errand: AdminErrand,
  view: ViewContext,
  filters: ListOptions,
  minutes: StatsMinutes,
  health: HealthOptions,
): Promise<Html> {
  const [counts, stats, schedules, topics, page, logs, waits, findings] = await whenAll([
    errand.counts(),
    errand.stats({ minutes }),
    errand.schedules(),
    errand.topics(),
    errand.list(filters),
    errand.logs(),
    errand.eventWaits(),
    // The page's own reads decide its answer (a bad cursor is a 400); a health read that fails shows on the panel.
    errand.health(health).then(
      (h) => h.findings,
      (err: unknown) => err instanceof Error ? err : new Error(String(err)),
    ),
  ]);
  const { base } = view;
  const limits = errand.limits();
  const queues = [...new Set([...Object.keys(counts.byQueue), ...limits.queues.map((q) => q.queue)])].sort();
  const totalBusy = stats.workers.reduce((n, w) => n + w.queues.reduce((m, q) => m + q.busy, 0), 0);
  /** The chart's window in a link: none for the default. */
  const windowParam = (m: StatsMinutes): Record<string, string> =>
    m === DEFAULT_CHART_MINUTES ? {} : { minutes: String(m) };
  const pageLink = (cursor: string) =>
    `${base}/?${new URLSearchParams({ ...textFilters(filters), ...windowParam(minutes), cursor })}#jobs`;
  const windowLink = (m: StatsMinutes) =>
    `${base}/?${new URLSearchParams({ ...textFilters(filters), ...windowParam(m) })}`;
  return html`<div id="live">
${healthPanel(findings)}
<div class="grid">
  <section class="panel" id="counts"><h2>Jobs by state</h2>
    <table><tbody>${
    JOB_STATES.map((s) =>
      html`
        <tr>
          <td>${stateLabel(s)}</td>
          <td class="num" data-state="${s}">${counts.byState[s]}</td>
        </tr>
      `
    )
  }</tbody></table>${retryAll(counts.byState.failed)}</section>
  <section class="panel" id="activity"><div class="panel-head"><h2>Last ${windowName(minutes)}</h2>${
    windowLinks(minutes, windowLink)
  }</div>${activityChart(stats)}
    <dl class="facts">
      <dt>completed</dt><dd>${sum(stats, "completed")}</dd>
      <dt>failed</dt><dd>${sum(stats, "failed")}</dd>
      <dt>started</dt><dd>${sum(stats, "started")}</dd>
      <dt title="Every run: a job retried in the window counts once per attempt">attempts</dt><dd>${
    sum(stats, "attempts")
  }</dd>
      <dt>enqueued</dt><dd>${sum(stats, "enqueued")}</dd>
      <dt>dispatch wait</dt><dd>avg ${duration(stats.dispatchWait.regular.avgMs)}, max ${
    duration(stats.dispatchWait.regular.maxMs)
  }</dd>
      <dt>partitioned wait</dt><dd>avg ${duration(stats.dispatchWait.partitioned.avgMs)}, max ${
    duration(stats.dispatchWait.partitioned.maxMs)
  }</dd>
      <dt title="PostgreSQL: errand's schema; libSQL: the whole database file">storage</dt><dd>${
    bytes(stats.storageBytes)
  }</dd>
      <dt title="PostgreSQL: the whole database, every schema; libSQL: the database file, as storage">database</dt><dd>${
    bytes(stats.databaseBytes)
  }</dd>
    </dl></section>
  <section class="panel" id="workers"><h2>Workers <span class="muted">(${stats.workers.length} live, ${totalBusy} busy slots)</span></h2>
    <table><thead><tr><th>instance</th><th>queues (busy/slots)</th><th>last beat</th></tr></thead><tbody>${
    stats.workers.map((w) =>
      html`
        <tr>
          <td title="${w.id}">${w.id}</td>
          <td>${w.queues.map((q) => `${q.queue} ${q.busy}/${q.slots}`).join(", ")}</td>
          <td>${when(new Date(w.beatAt))}</td>
        </tr>
      `
    )
  }</tbody></table></section>
</div>

<h2 id="queues-heading">Queues</h2>
<div class="scroll" role="region" aria-labelledby="queues-heading" tabindex="0"><table id="queues"><thead><tr><th>queue</th>${
    JOB_STATES.map((s) => html`<th class="num">${s}</th>`)
  }<th>limits and groups</th></tr></thead>
<tbody>${queues.map((q) => queueRow(base, q, counts.byQueue[q], limits))}</tbody></table></div>

${eventWaitsPanel(base, waits)}

<h2 id="schedules-heading">Schedules</h2>
<div class="scroll" role="region" aria-labelledby="schedules-heading" tabindex="0"><table id="schedules"><thead><tr><th>id</th><th>kind</th><th>schedule</th><th>next run (UTC)</th><th>last job</th><th><span class="sr-only">action</span></th></tr></thead>
<tbody>${
    schedules.map((s) =>
      html`
        <tr>
          <td>${s.id}</td>
          <td>${s.kind}</td>
          <td><code>${s.cron}</code> <span class="muted">${s.every === null ? s.timezone : ""}</span></td>
          <td>${when(s.nextRunAt)}</td>
          <td>${s.lastJobId ? jobLink(base, s.lastJobId) : "–"}</td>
          <td><button data-action="/api/schedules/${encodeURIComponent(s.id)}/trigger" data-done="Triggered ${s
            .id}">Trigger</button></td>
        </tr>
      `
    )
  }</tbody></table></div>

${
    topics.length === 0 ? "" : html`
      <h2>Topics</h2>
      <table id="topics">
        <thead>
          <tr>
            <th>topic</th>
            <th>depth</th>
            <th>partitions (active)</th>
            <th>oldest head waiting</th>
            ${logs.length === 0 ? "" : html`<th>logs (consumer lag)</th>`}
          </tr>
        </thead>
        <tbody>${topics.map((t) =>
          html`
            <tr data-topic="${t.topic}">
              <td><a href="${base}/topic/${encodeURIComponent(t.topic)}">${t.topic}</a></td>
              <td><span class="badge${t.depth === 0 ? " zero" : ""}">${t.depth}</span></td>
              <td>${t.partitions} (${t.activePartitions})</td>
              <td>${duration(t.oldestHeadAgeMs)}</td>
              ${logs.length === 0 ? "" : html`<td>${logBadges(base, logs.filter((l) => l.topic === t.topic))}</td>`}
            </tr>
          `
        )}</tbody>
      </table>
    `
  }

<h2 id="jobs">Jobs</h2>
${filterForm(base, filters, queues, topics.map((t) => t.topic), windowParam(minutes).minutes)}
<div class="scroll" role="region" aria-labelledby="jobs" tabindex="0"><table id="job-table"><thead><tr><th>id</th><th>state</th><th>kind</th><th>queue</th><th class="num">attempt</th><th>created (UTC)</th><th>run at (UTC)</th></tr></thead>
<tbody>${
    page.jobs.map((j) =>
      html`
        <tr data-job="${j.id}">
          <td>${jobLink(base, j.id)}</td>
          <td>${stateLabel(j.state)}</td>
          <td>${j.kind}</td>
          <td>${j.queue}</td>
          <td class="num">${j.attempt}/${j.maxAttempts}</td>
          <td>${when(j.createdAt)}</td>
          <td>${when(j.runAt)}</td>
        </tr>
      `
    )
  }</tbody></table></div>
<p>${page.jobs.length === 0 ? "No jobs match." : ""} ${
    filters.cursor ? html`<a href="${pageLink("")}">First page</a>` : ""
  } ${page.cursor ? html`<a id="next-page" href="${pageLink(page.cursor)}">Next page</a>` : ""}</p>
</div>`;
}

/** The jobs table's filters; `minutes`, when given, keeps the chart's window across a filter. */
function filterForm(
  base: string,
  filters: ListOptions,
  queues: string[],
  topics: string[],
  minutes: string | undefined,
): Html {
  const options = (values: readonly string[], selected: string | undefined) =>
    values.map((v) =>
      html`
        <option value="${v}" ${v === selected ? " selected" : ""}>${v}</option>
      `
    );
  return html`<form class="filters" method="get" action="${base}/">
<label>state<select name="state"><option value="">any</option>${
    options(JOB_STATES as readonly JobState[], filters.state)
  }</select></label>
<label>queue<select name="queue"><option value="">any</option>${options(queues, filters.queue)}</select></label>
<label>kind<input name="kind" value="${filters.kind ?? ""}" size="14"></label>
${
    topics.length === 0
      ? ""
      : html`<label>topic<select name="topic"><option value="">any</option>${
        options(topics, filters.topic)
      }</select></label>`
  }
${minutes === undefined ? "" : html`<input type="hidden" name="minutes" value="${minutes}">`}
<button type="submit">Filter</button></form>`;
}

/** The filters worth putting in a link. */
function textFilters(filters: ListOptions): Record<string, string> {
  const entries = Object.entries({
    state: filters.state,
    queue: filters.queue,
    kind: filters.kind,
    topic: filters.topic,
  })
    .filter((e): e is [string, string] => typeof e[1] === "string");
  return Object.fromEntries(entries);
}

/** The window's total of `what` over the throughput buckets. */
function sum(stats: ErrandStats, what: "completed" | "failed" | "started" | "attempts" | "enqueued"): number {
  return stats.throughput.reduce((n, s) => n + s[what], 0);
}

/**
 * The database's findings, each with its fix (nothing when there is none), or why they could not be read:
 * see `errand doctor`.
 */
function healthPanel(findings: readonly HealthFinding[] | Error): Html | string {
  if (!(findings instanceof Error) && findings.length === 0) return "";
  return html`
    <section class="panel" id="health">
      <h2>Database health</h2>
      <ul>${findings instanceof Error
        ? html`<li><strong class="bad">error</strong> the database's health could not be read: ${findings.message}</li>`
        : findings.map((f) =>
          html`
            <li><strong class="${f.severity === "error" ? "bad" : "warn"}">${f.severity}</strong> ${f.message}<br>
              <span class="muted">fix:</span> ${f.fix}</li>
          `
        )}</ul>
    </section>
  `;
}
