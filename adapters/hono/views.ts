/**
 * The dashboard's views: the overview (counts with "Retry all N failed",
 * activity, workers, schedules, topics with their logs and the jobs table), a job's
 * page, a topic's partitions and logs, and a queue's limits and groups (a log's page
 * is in log_views.ts). Every number comes from the
 * store, so every instance sharing the database shows the same page (the
 * limits are the serving instance's options).
 *
 * @module
 */
import { html } from "hono/html";
import {
  type ErrandLimits,
  type ErrandStats,
  JOB_STATES,
  type JobState,
  type ListOptions,
  type QueueLimitsInfo,
  type StatsMinutes,
} from "../../mod.ts";
import { activityChart, DEFAULT_CHART_MINUTES, windowLinks, windowName } from "./chart.ts";
import { logBadges } from "./log_views.ts";
import { bytes, duration, type Html, jobLink, rate, stateLabel, type ViewContext, when } from "./page.ts";
import { type AdminErrand, groupPage, jobDurations, jsonSafe } from "./present.ts";

/**
 * The overview: counts, activity over the last `minutes`, workers, storage,
 * schedules, topics, then jobs filtered by `filters`.
 */
export async function overview(
  errand: AdminErrand,
  view: ViewContext,
  filters: ListOptions,
  minutes: StatsMinutes,
): Promise<Html> {
  const [counts, stats, schedules, topics, page, logs] = await Promise.all([
    errand.counts(),
    errand.stats({ minutes }),
    errand.schedules(),
    errand.topics(),
    errand.list(filters),
    errand.logs(),
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

<h2>Queues</h2>
<table id="queues"><thead><tr><th>queue</th>${
    JOB_STATES.map((s) => html`<th class="num">${s}</th>`)
  }<th>limits and groups</th></tr></thead>
<tbody>${queues.map((q) => queueRow(base, q, counts.byQueue[q], limits))}</tbody></table>

<h2>Schedules</h2>
<table id="schedules"><thead><tr><th>id</th><th>kind</th><th>cron</th><th>next run (UTC)</th><th>last job</th><th></th></tr></thead>
<tbody>${
    schedules.map((s) =>
      html`
        <tr>
          <td>${s.id}</td>
          <td>${s.kind}</td>
          <td><code>${s.cron}</code> <span class="muted">${s.timezone}</span></td>
          <td>${when(s.nextRunAt)}</td>
          <td>${s.lastJobId ? jobLink(base, s.lastJobId) : "–"}</td>
          <td><button data-action="/api/schedules/${encodeURIComponent(s.id)}/trigger" data-done="Triggered ${s
            .id}">Trigger</button></td>
        </tr>
      `
    )
  }</tbody></table>

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
<table id="job-table"><thead><tr><th>id</th><th>state</th><th>kind</th><th>queue</th><th class="num">attempt</th><th>created (UTC)</th><th>run at (UTC)</th></tr></thead>
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
  }</tbody></table>
<p>${page.jobs.length === 0 ? "No jobs match." : ""} ${
    filters.cursor ? html`<a href="${pageLink("")}">First page</a>` : ""
  } ${page.cursor ? html`<a id="next-page" href="${pageLink(page.cursor)}">Next page</a>` : ""}</p>
</div>`;
}

/** A job's page: facts, durations, runs, relatives, latest error, progress, result and payload when shown, and actions. */
export async function jobPage(errand: AdminErrand, view: ViewContext, id: string): Promise<Html | null> {
  const job = await errand.get(id);
  if (!job) return null;
  const { base } = view;
  const d = jobDurations(job, Date.now());
  const finished = job.state === "completed" || job.state === "failed" || job.state === "cancelled";
  const action = (what: string) => `/api/jobs/${encodeURIComponent(job.id)}/${what}`;
  // As the job's event stream sends it: the latest run's error while the job is not completed.
  const error = job.state === "completed" ? null : job.runs.at(-1)?.error;
  return html`<div id="live">
<h2>Job <code>${job.id}</code> ${stateLabel(job.state)}</h2>
<p>
${
    job.state === "failed" || job.state === "cancelled"
      ? html`<button id="retry" data-action="${action("retry")}" data-done="Retried">Retry</button>`
      : ""
  }
${
    finished ? "" : html`<button id="cancel" class="danger" data-action="${action("cancel")}" data-done="Cancelled"
  data-confirm="Cancel this job?">Cancel</button>`
  }
</p>
<p id="job-error" class="error">${error ? `${error.name}: ${error.message}` : ""}</p>
<div class="grid">
<section class="panel"><dl class="facts">
  <dt>kind</dt><dd>${job.kind} <span class="muted">v${job.version}</span></dd>
  <dt>queue</dt><dd><a href="${base}/?queue=${encodeURIComponent(job.queue)}#jobs">${job.queue}</a></dd>
  <dt>attempt</dt><dd>${job.attempt} of ${job.maxAttempts}</dd>
  <dt>priority</dt><dd>${job.priority}</dd>
  ${
    job.topic === null ? "" : html`
      <dt>topic</dt>
      <dd>${job.topic}, partition ${job.partition}, sequence ${job.seq}</dd>
    `
  }
  ${
    job.group === null ? "" : html`
      <dt>group</dt>
      <dd><a href="${base}/queue/${encodeURIComponent(job.queue)}#groups">${job.group}</a></dd>
    `
  }
  ${
    job.reason === null ? "" : html`
      <dt>reason</dt>
      <dd class="reason">${job.reason}</dd>
    `
  }
</dl></section>
<section class="panel"><dl class="facts">
  <dt>created</dt><dd>${when(job.createdAt)}</dd>
  <dt>run at</dt><dd>${when(job.runAt)}</dd>
  <dt>started</dt><dd>${when(job.startedAt)}</dd>
  <dt>finished</dt><dd>${when(job.finishedAt)}</dd>
  <dt>elapsed</dt><dd>${duration(d.elapsedMs)}</dd>
  <dt>processing</dt><dd>${duration(d.processingMs)}</dd>
  <dt>waiting</dt><dd>${duration(d.waitingMs)}</dd>
</dl></section>
<section class="panel"><dl class="facts">
  <dt>parents</dt><dd>${
    job.parents.length === 0 ? "none" : job.parents.map((p) =>
      html`
        ${jobLink(base, p)}
      `
    )
  }</dd>
  <dt>children</dt><dd>${
    job.children.length === 0 ? "none" : job.children.map((ch) =>
      html`
        ${jobLink(base, ch)}
      `
    )
  }</dd>
</dl></section>
</div>
${
    view.showPayloads
      ? html`
        <h2>Progress</h2>
        <pre id="progress">${shown(job.progress)}</pre>
        <h2>Result</h2>
        <pre id="result">${shown(job.result)}</pre>
      `
      : ""
  }
<h2>Runs</h2>
<table id="runs"><thead><tr><th class="num">attempt</th><th>started (UTC)</th><th>duration</th><th>outcome</th><th>error</th><th>note</th></tr></thead>
<tbody>${
    job.runs.map((r) =>
      html`
        <tr>
          <td class="num">${r.attempt}</td>
          <td>${when(r.startedAt)}</td>
          <td>${duration(r.durationMs)}</td>
          <td>${r.outcome}</td>
          <td class="error">${r.error ? html`<strong>${r.error.name}</strong>: ${r.error.message}` : ""}</td>
          <td>${r.note ?? ""}</td>
        </tr>
      `
    )
  }</tbody></table>
${
    view.showPayloads
      ? html`
        <h2>Payload</h2>
        <pre>${JSON.stringify(job.payload, null, 2)}</pre>
      `
      : ""
  }
</div>`;
}

/** A topic's partitions (depth, head, owner, lag, and a force-fail button for each head) and its logs. */
export async function topicPage(errand: AdminErrand, view: ViewContext, topic: string): Promise<Html | null> {
  const known = (await errand.topics()).find((t) => t.topic === topic);
  if (!known) return null;
  const [partitions, logs] = await Promise.all([errand.partitions(topic), errand.logs()]);
  const ofTopic = logs.filter((l) => l.topic === topic);
  const { base } = view;
  return html`
    <div id="live">
      <h2>Topic ${topic} <span class="badge${known.depth === 0 ? " zero" : ""}">${known.depth}</span></h2>
      <p class="muted">${known.partitions} partitions, ${known.activePartitions} with unfinished jobs.</p>
      ${ofTopic.length === 0 ? "" : html`<p id="topic-logs">Retained logs: ${logBadges(base, ofTopic)}</p>`}
      <table id="partitions">
        <thead>
          <tr>
            <th class="num">partition</th>
            <th class="num">depth</th>
            <th>head</th>
            <th>owner</th>
            <th>running on</th>
            <th>lag</th>
            <th></th>
          </tr>
        </thead>
        <tbody>${partitions.map((p) =>
          html`
            <tr data-partition="${p.partition}">
              <td class="num">${p.partition}</td>
              <td class="num">${p.depth}</td>
              <td>${p.head
                ? html`${jobLink(base, p.head.id)} ${p.head.kind} ${stateLabel(p.head.state)} #${p.head.attempt}`
                : "–"}</td>
              <td>${p.owner ?? "–"}</td>
              <td>${p.head?.workerId ?? "–"}</td>
              <td>${duration(p.lagMs)}</td>
              <td>${p.head
                ? html`
                  <button class="danger" data-action="/api/topics/${encodeURIComponent(topic)}/partitions/${p
                    .partition}/force-fail"
                    data-confirm="Fail the head of partition ${p.partition} now?"
                    data-done="Failed the head of partition ${p.partition}">Force-fail head</button>
                `
                : ""}</td>
            </tr>
          `
        )}</tbody>
      </table>
    </div>
  `;
}

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
  const [counts, page] = await Promise.all([errand.counts(), groupPage(errand, queue, query, maxPageSize)]);
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
            <th></th>
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
function retryAll(failed: number, queue?: string): Html | string {
  if (failed === 0) return "";
  const of = queue === undefined ? "" : ` of queue ${queue}`;
  const filter = queue === undefined ? { state: "failed" } : { state: "failed", queue };
  return html`<p><button class="retry-all" data-action="/api/jobs/retry" data-body="${JSON.stringify(filter)}"
  data-confirm="Retry all ${failed} failed jobs${of}? Each runs again now, with one more attempt if it used up its attempts."
  data-done="Retried {count} failed jobs${of}">Retry all ${failed} failed</button></p>`;
}

/** One row of the overview's queues table: jobs by state (none when `byState` is absent), and a link to its limits and groups. */
function queueRow(
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

/** A job's progress or result as indented JSON, as the page's script shows it too; a dash for none. */
function shown(value: unknown): string {
  return value === undefined || value === null ? "–" : JSON.stringify(value, jsonSafe, 2);
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

function sum(stats: ErrandStats, what: "completed" | "failed" | "started" | "enqueued"): number {
  return stats.throughput.reduce((n, s) => n + s[what], 0);
}
