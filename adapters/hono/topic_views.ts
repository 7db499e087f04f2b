/**
 * The dashboard's page of one topic: its partitions (depth, head, owner,
 * lag, and a force-fail button for each head) and its retained logs.
 *
 * @module
 */
import { html } from "hono/html";
import { logBadges } from "./log_views.ts";
import { duration, type Html, jobLink, stateLabel, type ViewContext } from "./page.ts";
import type { AdminErrand } from "./present.ts";
import { whenAll } from "../../src/base/when_all.ts";

/** A topic's partitions (depth, head, owner, lag, and a force-fail button for each head) and its logs. */
export async function topicPage(errand: AdminErrand, view: ViewContext, topic: string): Promise<Html | null> {
  const known = (await errand.topics()).find((t) => t.topic === topic);
  if (!known) return null;
  const [partitions, logs] = await whenAll([errand.partitions(topic), errand.logs()]);
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
            <th><span class="sr-only">action</span></th>
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
