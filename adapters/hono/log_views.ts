/**
 * The dashboard's views of retained logs: a badge per log (its groups'
 * total lag) for the topics table and a topic's page, and a log's page:
 * its partitions' earliest and end offsets, and each consumer group's
 * committed offset, lag and owner per partition, with "Seek to earliest",
 * "Seek to latest" and "Skip record N" buttons that ask for confirmation
 * and post to the log routes (log_api.ts).
 *
 * @module
 */
import { html } from "hono/html";
import type { LagInfo, LogInfo } from "../../mod.ts";
import type { Html } from "./page.ts";
import type { AdminErrand } from "./present.ts";
import type { ViewContext } from "./page.ts";
import { whenAll } from "../../src/base/when_all.ts";

/** A log's consumer groups' lag, summed over groups and partitions. */
export function totalLag(log: LogInfo): number {
  return log.groups.reduce((n, g) => n + g.lag, 0);
}

/** A badge per log of `logs`, each linking to its page: "log orderEvents · lag 120". */
export function logBadges(base: string, logs: readonly LogInfo[]): Html | string {
  if (logs.length === 0) return "";
  return html`${
    logs.map((l) => {
      const lag = totalLag(l);
      const badge = html`<span class="badge${lag === 0 ? " zero" : ""}">log ${l.log} · lag ${lag}</span>`;
      return html`
        <a class="log-link" data-log="${l.log}" href="${base}/log/${encodeURIComponent(l.log)}">${badge}</a>
      `;
    })
  }`;
}

/** A log's page: its partitions, and per consumer group where it stands in each, with the seek and skip buttons. */
export async function logPage(errand: AdminErrand, view: ViewContext, log: string): Promise<Html | null> {
  const info = (await errand.logs()).find((l) => l.log === log);
  if (!info) return null;
  const [partitions, lag] = await whenAll([errand.logPartitions(log), errand.lag(log)]);
  const { base } = view;
  const byGroup = new Map<string, LagInfo[]>();
  for (const row of lag) byGroup.set(row.group, [...byGroup.get(row.group) ?? [], row]);
  const total = totalLag(info);
  return html`
    <div id="live">
      <h2>Log ${info.log} <span class="badge${total === 0 ? " zero" : ""}" id="log-lag">lag ${total}</span></h2>
      <p class="muted">Topic <a href="${base}/topic/${encodeURIComponent(info.topic)}">${info.topic}</a>, ${info
        .partitions} partitions; ${info.records} records held, ${info.appended} appended${info.name === info.log
        ? ""
        : `; stored as ${info.name}`}.</p>
      <h2>Partitions</h2>
      <table id="log-partitions">
        <thead>
          <tr>
            <th class="num">partition</th>
            <th class="num">earliest</th>
            <th class="num">end</th>
            <th class="num">records held</th>
          </tr>
        </thead>
        <tbody>${partitions.map((p) =>
          html`
            <tr data-partition="${p.partition}">
              <td class="num">${p.partition}</td>
              <td class="num">${p.earliest}</td>
              <td class="num">${p.end}</td>
              <td class="num">${p.end - p.earliest}</td>
            </tr>
          `
        )}</tbody>
      </table>
      <h2>Consumer groups</h2>
      ${byGroup.size === 0
        ? html`<p class="muted">No consumer group reads this log, here or in the store.</p>`
        : [...byGroup].map(([group, rows]) => groupSection(base, info.log, group, rows))}
    </div>
  `;
}

/** One consumer group of a log: its lag, seek buttons, and its committed offset, lag, owner and skip button per partition. */
function groupSection(base: string, log: string, group: string, rows: readonly LagInfo[]): Html {
  const action = (what: string) => `/api/logs/${encodeURIComponent(log)}/groups/${encodeURIComponent(group)}/${what}`;
  const lag = rows.reduce((n, r) => n + r.lag, 0);
  // A link to the record a partition's group is at, so an operator can look before skipping it.
  const recordLink = (r: LagInfo) =>
    `${base}/api/logs/${encodeURIComponent(log)}/records?partition=${r.partition}&from=${r.committed}&limit=1`;
  return html`
    <section class="log-group" data-group="${group}">
      <h3>${group} <span class="badge${lag === 0 ? " zero" : ""}">lag ${lag}</span>
        <button class="seek-earliest" data-action="${action("seek")}" data-body="${JSON.stringify({ to: "earliest" })}"
          data-confirm="Move group ${group} to the earliest record of every partition of log ${log}? It gets every retained record again."
          data-done="Moved ${group} to the earliest records">Seek to earliest</button>
        <button class="seek-latest danger" data-action="${action("seek")}" data-body="${JSON.stringify({
          to: "latest",
        })}"
          data-confirm="Move group ${group} to the end of every partition of log ${log}? It never gets the ${lag} records it has not consumed."
          data-done="Moved ${group} to the end of the log">Seek to latest</button>
      </h3>
      <table class="group-lag">
        <thead>
          <tr>
            <th class="num">partition</th>
            <th class="num">committed</th>
            <th class="num">end</th>
            <th class="num">lag</th>
            <th>owner</th>
            <th><span class="sr-only">action</span></th>
          </tr>
        </thead>
        <tbody>${rows.map((r) =>
          html`
            <tr data-partition="${r.partition}">
              <td class="num">${r.partition}</td>
              <td class="num" data-committed="${r.committed}">${r.lag === 0
                ? r.committed
                : html`<a href="${recordLink(r)}" title="The record the group is at, as JSON">${r.committed}</a>`}</td>
              <td class="num">${r.end}</td>
              <td class="num">${r.lag}</td>
              <td>${r.owner ?? "–"}</td>
              <td>${r.lag === 0 ? "" : html`
                <button class="skip danger" data-action="${action("skip")}"
                  data-body="${JSON.stringify({ partition: r.partition, offset: r.committed })}"
                  data-confirm="Skip record ${r.committed} of partition ${r
                    .partition} for group ${group}? The group never gets it."
                  data-done="Skipped record ${r.committed} of partition ${r.partition}">Skip record ${r
                    .committed}</button>
              `}</td>
            </tr>
          `
        )}</tbody>
      </table>
    </section>
  `;
}
