/**
 * The dashboard's views: the overview (counts, activity, workers,
 * schedules, topics and the jobs table), a job's page and a topic's
 * partitions. Every number comes from the store, so every instance sharing
 * the database shows the same page.
 *
 * @module
 */
import { html } from "hono/html";
import { type ErrandStats, JOB_STATES, type JobState, type ListOptions } from "../../mod.ts";
import { bytes, duration, type Html, jobLink, stateLabel, when } from "./page.ts";
import { type AdminErrand, jobDurations } from "./present.ts";

/** What every view knows about its request. */
export interface ViewContext {
  /** Where the router is mounted. */
  readonly base: string;
  /** Whether payloads are shown. */
  readonly showPayloads: boolean;
}

/** The overview: counts, activity, workers, storage, schedules, topics, then jobs filtered by `filters`. */
export async function overview(errand: AdminErrand, view: ViewContext, filters: ListOptions): Promise<Html> {
  const [counts, stats, schedules, topics, page] = await Promise.all([
    errand.counts(),
    errand.stats(),
    errand.schedules(),
    errand.topics(),
    errand.list(filters),
  ]);
  const { base } = view;
  const queues = Object.keys(counts.byQueue).sort();
  const totalBusy = stats.workers.reduce((n, w) => n + w.queues.reduce((m, q) => m + q.busy, 0), 0);
  const pageLink = (cursor: string) => `${base}/?${new URLSearchParams({ ...textFilters(filters), cursor })}#jobs`;
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
  }</tbody></table></section>
  <section class="panel" id="activity"><h2>Last 60 s</h2>${chart(stats)}
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
      <dt>database size</dt><dd>${bytes(stats.storageBytes)}</dd>
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
<table id="queues"><thead><tr><th>queue</th>${JOB_STATES.map((s) => html`<th class="num">${s}</th>`)}</tr></thead>
<tbody>${
    queues.map((q) =>
      html`<tr><td><a href="${base}/?queue=${encodeURIComponent(q)}#jobs">${q}</a></td>${
        JOB_STATES.map((s) => html`<td class="num">${counts.byQueue[q][s]}</td>`)
      }</tr>`
    )
  }</tbody></table>

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
          </tr>
        </thead>
        <tbody>${topics.map((t) =>
          html`
            <tr>
              <td><a href="${base}/topic/${encodeURIComponent(t.topic)}">${t.topic}</a></td>
              <td><span class="badge${t.depth === 0 ? " zero" : ""}">${t.depth}</span></td>
              <td>${t.partitions} (${t.activePartitions})</td>
              <td>${duration(t.oldestHeadAgeMs)}</td>
            </tr>
          `
        )}</tbody>
      </table>
    `
  }

<h2 id="jobs">Jobs</h2>
${filterForm(base, filters, queues, topics.map((t) => t.topic))}
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

/** A job's page: facts, durations, runs, relatives, payload when shown, and actions. */
export async function jobPage(errand: AdminErrand, view: ViewContext, id: string): Promise<Html | null> {
  const job = await errand.get(id);
  if (!job) return null;
  const { base } = view;
  const d = jobDurations(job, Date.now());
  const finished = job.state === "completed" || job.state === "failed" || job.state === "cancelled";
  const action = (what: string) => `/api/jobs/${encodeURIComponent(job.id)}/${what}`;
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

/** A topic's partitions: depth, head, owner, lag, and a force-fail button for each head. */
export async function topicPage(errand: AdminErrand, view: ViewContext, topic: string): Promise<Html | null> {
  const known = (await errand.topics()).find((t) => t.topic === topic);
  if (!known) return null;
  const partitions = await errand.partitions(topic);
  const { base } = view;
  return html`
    <div id="live">
      <h2>Topic ${topic} <span class="badge${known.depth === 0 ? " zero" : ""}">${known.depth}</span></h2>
      <p class="muted">${known.partitions} partitions, ${known.activePartitions} with unfinished jobs.</p>
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

function filterForm(base: string, filters: ListOptions, queues: string[], topics: string[]): Html {
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

/** Completed (green), failed (red) and started (faint) per second over the window, as SVG bars. */
function chart(stats: ErrandStats): Html {
  const seconds = stats.throughput;
  const peak = Math.max(1, ...seconds.map((s) => Math.max(s.started, s.completed + s.failed)));
  const h = 80;
  const bar = (i: number, value: number, y0: number, cls: string) => {
    const height = (value / peak) * h;
    return height <= 0
      ? ""
      : html`<rect class="${cls}" x="${i * 10}" y="${(y0 - height).toFixed(1)}" width="9" height="${
        height.toFixed(1)
      }"></rect>`;
  };
  return html`<svg class="chart" viewBox="0 0 ${seconds.length * 10} ${h}" preserveAspectRatio="none" role="img"
  aria-label="jobs per second over the last 60 s">${
    seconds.map((s, i) => {
      const done = h - (s.completed / peak) * h;
      return html`${bar(i, s.started, h, "started")}${bar(i, s.completed, h, "completed")}${
        bar(i, s.failed, done, "failed")
      }`;
    })
  }</svg>`;
}
