/**
 * The dashboard's views of durable workflows: a job's steps as a timeline,
 * what a workflow waits for (with a button that sends the event it waits
 * on), and the overview's count of workflows waiting, by event name.
 *
 * @module
 */
import { html } from "hono/html";
import type { EventWaitingRow, JobDetails, StepInfo } from "../../mod.ts";
import { duration, type Html, jobLink, stateLabel, when } from "./page.ts";

/** Width of a timeline bar's drawing, in its own units (the SVG stretches it to the row). */
const BAR_WIDTH = 1000;

/** Narrowest bar drawn, so a step of a few ms beside a three-day sleep stays visible. */
const MIN_BAR = 4;

/**
 * A job's steps, in call order, each with its type, state, attempt, start
 * and duration, and what only some steps have: an error, a sleep's wake
 * time, an invoke's child, an event wait's name, key and timeout. Each has
 * a bar placing it between the first step's start and the last step's end
 * (now, while one waits); the bar only repeats the times written beside it.
 * Nothing for a job without steps.
 */
export function stepTimeline(base: string, job: JobDetails, now: number): Html | string {
  if (job.steps.length === 0) return "";
  const ends = job.steps.map((s) => s.finishedAt?.getTime() ?? now);
  const start = Math.min(...job.steps.map((s) => s.startedAt.getTime()));
  const span = Math.max(1, Math.max(...ends) - start);
  const scale = (ms: number) => Math.round((ms / span) * BAR_WIDTH);
  return html`
    <section id="steps" aria-labelledby="steps-heading">
      <h2 id="steps-heading">Steps <span class="muted">(${job.steps.length})</span></h2>
      <ol class="timeline">${job.steps.map((step, i) => {
        const x = Math.min(BAR_WIDTH - MIN_BAR, scale(step.startedAt.getTime() - start));
        const width = Math.max(MIN_BAR, scale(ends[i] - step.startedAt.getTime()));
        return html`
          <li class="step" data-step="${step.name}" data-state="${step.state}">
            <div class="step-head">
              <span class="step-name">${step.name}</span>
              <span class="step-type">${step.type}</span>
              ${stateLabel(step.state)}
            </div>
            <svg class="step-bar" viewBox="0 0 ${BAR_WIDTH} 8" preserveAspectRatio="none" aria-hidden="true" focusable="false">
              <rect class="track" x="0" y="0" width="${BAR_WIDTH}" height="8"></rect>
              <rect class="bar-${step.state}" x="${x}" y="0" width="${Math.min(
                width,
                BAR_WIDTH - x,
              )}" height="8"></rect>
            </svg>
            <dl class="step-facts">
              ${fact("attempt", String(step.attempt))}${fact("started", when(step.startedAt))}${fact(
                "took",
                took(step, now),
              )}${stepDetails(base, step)}
            </dl>
            ${step.error
              ? html`<p class="error step-error"><strong>${step.error.name}</strong>: ${step.error.message}</p>`
              : ""}
          </li>
        `;
      })}</ol>
    </section>
  `;
}

/** How long a step took, or has waited so far. */
function took(step: StepInfo, now: number): string {
  if (step.durationMs !== null) return duration(step.durationMs);
  return `${duration(Math.max(0, now - step.startedAt.getTime()))} so far`;
}

/** The facts only a sleep, an invoke or an event wait has. */
function stepDetails(base: string, step: StepInfo): Html | string {
  switch (step.type) {
    case "sleep":
      return fact("wakes", when(step.wakeAt));
    case "invoke":
      return fact("child", step.childId ? jobLink(base, step.childId) : "–");
    case "event":
      return html`${fact("event", html`<code>${step.event?.name ?? "–"}</code>${keyText(step.event?.key)}`)}${
        fact("timeout", step.wakeAt ? when(step.wakeAt) : "none")
      }`;
    default:
      return "";
  }
}

/** One fact of a step: its label and value, kept together when the facts wrap. */
function fact(label: string, value: Html | string): Html {
  return html`
    <div>
      <dt>${label}</dt>
      <dd>${value}</dd>
    </div>
  `;
}

/** An event key after its name: nothing for the empty key. */
function keyText(key: string | undefined): Html | string {
  return key ? html`, key <code>${key}</code>` : "";
}

/**
 * What the job waits for, said in a line: the event (with its key and
 * timeout) and a button that sends it, asking for its data; the child job
 * it invoked; or, asleep, the sleep and its end. Nothing otherwise.
 */
export function waitingLine(base: string, job: JobDetails): Html | string {
  const waiting = job.waitingFor;
  if (waiting?.type === "event") {
    const key = waiting.key ? ` (key ${waiting.key})` : "";
    return html`<p id="waiting-for">Waiting for event <code>${waiting.event}</code>${keyText(waiting.key)}${
      waiting.timeoutAt ? html`, until ${when(waiting.timeoutAt)} UTC at most` : ""
    }.
<button id="send-event" data-action="/api/event-waits/${encodeURIComponent(waiting.event)}/send" data-body="${
      JSON.stringify({ key: waiting.key })
    }"
  data-prompt="Send event ${waiting.event}${key}, resuming every workflow waiting on it, with this data (JSON):"
  data-default="null" data-field="data" data-done="Sent ${waiting.event}${key}: {resumed} resumed">Send event</button></p>`;
  }
  if (waiting?.type === "job") {
    return html`<p id="waiting-for">Waiting for the child job ${jobLink(base, waiting.id)} to finish.</p>`;
  }
  const sleep = job.state === "scheduled" ? job.steps.find((s) => s.type === "sleep" && s.state === "waiting") : null;
  if (sleep) {
    return html`<p id="waiting-for">Sleeping (step <code>${sleep.name}</code>) until ${when(sleep.wakeAt)} UTC.</p>`;
  }
  return "";
}

/**
 * The overview's workflows waiting for events, by event name, linking to
 * the waiting jobs; an empty placeholder (that a refresh fills) when none
 * waits.
 */
export function eventWaitsPanel(base: string, waits: readonly EventWaitingRow[]): Html {
  if (waits.length === 0) return html`<div id="event-waits"></div>`;
  return html`
    <div id="event-waits">
      <h2>Waiting for events <a class="heading-link" href="${base}/?state=waiting#jobs">waiting jobs</a></h2>
      <table>
        <thead>
          <tr>
            <th>event</th>
            <th class="num">workflows waiting</th>
          </tr>
        </thead>
        <tbody>${waits.map((w) =>
          html`
            <tr data-event="${w.event}">
              <td><code>${w.event}</code></td>
              <td class="num">${w.jobs}</td>
            </tr>
          `
        )}</tbody>
      </table>
    </div>
  `;
}
