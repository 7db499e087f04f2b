/**
 * The dashboard's page of one job: its facts, durations, what it waits
 * for, its steps' timeline, runs, relatives, latest error, progress, result
 * and payload when shown, and its retry and cancel buttons.
 *
 * @module
 */
import { html } from "hono/html";
import { duration, type Html, jobLink, stateLabel, type ViewContext, when } from "./page.ts";
import { type AdminErrand, jobDurations, jsonSafe } from "./present.ts";
import { stepTimeline, waitingLine } from "./workflow_views.ts";

/** A job's page: facts, durations, what it waits for, steps, runs, relatives, latest error, progress, result and payload when shown, and actions. */
export async function jobPage(errand: AdminErrand, view: ViewContext, id: string): Promise<Html | null> {
  const job = await errand.get(id);
  if (!job) return null;
  const { base } = view;
  const now = Date.now();
  const d = jobDurations(job, now);
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
${waitingLine(base, job)}
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
${stepTimeline(base, job, now)}
<h2 id="runs-heading">Runs</h2>
<div class="scroll" role="region" aria-labelledby="runs-heading" tabindex="0"><table id="runs"><thead><tr><th class="num">attempt</th><th>started (UTC)</th><th>duration</th><th>outcome</th><th>error</th><th>note</th></tr></thead>
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
  }</tbody></table></div>
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

/** A job's progress or result as indented JSON, as the page's script shows it too; a dash for none. */
function shown(value: unknown): string {
  return value === undefined || value === null ? "–" : JSON.stringify(value, jsonSafe, 2);
}
