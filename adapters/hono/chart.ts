/**
 * The overview's activity chart: attempts started (every run, retries
 * included), jobs completed and failed per
 * second over the last 5 or 60 minutes, as an inline SVG with a y axis of
 * round rates, an x axis of minutes before now, a text legend, and links
 * that choose the window. Server-rendered: the page needs no script for it.
 *
 * Attempts are drawn as a line, completed and failed as stacked bars, so the
 * series differ by shape as well as colour; the SVG's title and description
 * say in words what it shows.
 *
 * @module
 */
import { html } from "hono/html";
import type { ErrandStats, StatsMinutes } from "../../mod.ts";
import type { Html } from "./page.ts";

/** The windows the overview offers, in minutes. */
export const CHART_MINUTES: readonly StatsMinutes[] = [5, 60];

/** The overview's window when the query has none. */
export const DEFAULT_CHART_MINUTES: StatsMinutes = 5;

/** The window in words: `5 minutes`, `60 minutes`. */
export function windowName(minutes: number): string {
  return minutes === 1 ? "minute" : `${minutes} minutes`;
}

/** Links to the windows the overview offers, the current one marked; `href` gives a window's address. */
export function windowLinks(minutes: StatsMinutes, href: (minutes: StatsMinutes) => string): Html {
  return html`<nav class="window" aria-label="Chart window">${
    CHART_MINUTES.map((m) =>
      m === minutes
        ? html`<a href="${href(m)}" aria-current="true" data-minutes="${m}">${m} min</a>`
        : html`<a href="${href(m)}" data-minutes="${m}">${m} min</a>`
    )
  }</nav>`;
}

// The drawing's size in SVG units; it scales to the panel's width.
const WIDTH = 360;
const HEIGHT = 170;
const LEFT = 44;
const RIGHT = 12;
const TOP = 8;
const BOTTOM = 22;
const PLOT_W = WIDTH - LEFT - RIGHT;
const PLOT_H = HEIGHT - TOP - BOTTOM;

/** The chart of `stats` (per second, whatever its buckets' width) and its legend. */
export function activityChart(stats: ErrandStats): Html {
  const buckets = stats.throughput;
  const seconds = stats.bucketMs / 1000;
  const minutes = Math.round(stats.windowMs / 60_000);
  const perSecond = (n: number) => n / seconds;
  const peak = Math.max(0, ...buckets.map((b) => perSecond(Math.max(b.attempts, b.completed + b.failed))));
  const ticks = rateTicks(peak);
  const top = ticks[ticks.length - 1];
  const width = PLOT_W / Math.max(1, buckets.length);
  const x = (i: number) => LEFT + i * width;
  const y = (rate: number) => TOP + PLOT_H - (rate / top) * PLOT_H;
  const bar = (i: number, from: number, rate: number, cls: string) =>
    rate <= 0
      ? ""
      : html`<rect class="${cls}" x="${fixed(x(i) + width * 0.1)}" y="${fixed(y(from + rate))}" width="${
        fixed(width * 0.8)
      }" height="${fixed(y(from) - y(from + rate))}"></rect>`;
  // Attempts as a step line: across each bucket at its rate.
  const attempts = buckets
    .map((b, i) => `${i === 0 ? "M" : "L"}${fixed(x(i))} ${fixed(y(perSecond(b.attempts)))}H${fixed(x(i + 1))}`)
    .join("");
  const from = buckets[0]?.at ?? stats.at;
  const most = (what: "attempts" | "completed" | "failed") =>
    amount(Math.max(0, ...buckets.map((b) => perSecond(b[what]))));
  const description = `Attempts started (line), jobs completed and failed (stacked bars) per second from ${
    clock(from)
  } to ${clock(stats.at)} UTC, in ${buckets.length} bars of ${seconds} s each. Most per second: ${
    most("attempts")
  } attempts, ${most("completed")} completed, ${most("failed")} failed.`;
  const base = TOP + PLOT_H;
  const grid = ticks.map((t) =>
    html`
      <line x1="${LEFT}" x2="${WIDTH - RIGHT}" y1="${fixed(y(t))}" y2="${fixed(y(t))}"></line>
      <text class="y-label" x="${LEFT - 4}" y="${fixed(y(t) + 3.5)}">${rateText(t)}</text>
    `
  );
  const bars = buckets.map((b, i) =>
    html`${bar(i, 0, perSecond(b.completed), "completed")}${
      bar(i, perSecond(b.completed), perSecond(b.failed), "failed")
    }`
  );
  const xAxis = timeTicks(minutes).map(({ at, label }) => {
    const tx = fixed(LEFT + at * PLOT_W);
    return html`
      <line x1="${tx}" x2="${tx}" y1="${base}" y2="${base + 4}"></line>
      <text class="x-label" x="${tx}" y="${HEIGHT - 6}">${label}</text>
    `;
  });
  return html`
    <svg class="chart" viewBox="0 0 ${WIDTH} ${HEIGHT}" role="img" aria-labelledby="chart-title chart-desc"
      data-minutes="${minutes}" data-bucket-seconds="${seconds}">
      <title id="chart-title">Jobs per second over the last ${windowName(minutes)}</title>
      <desc id="chart-desc">${description}</desc>
      <g class="grid">${grid}</g>
      <g class="bars">${bars}</g>
      <path class="attempts" d="${attempts}"></path>
      <g class="x-axis"><line x1="${LEFT}" x2="${WIDTH - RIGHT}" y1="${base}" y2="${base}"></line>${xAxis}</g>
    </svg>
    <ul class="legend">
      <li><span class="key attempts"></span>attempts</li>
      <li><span class="key completed"></span>completed</li>
      <li><span class="key failed"></span>failed</li>
      <li class="muted">per second, each bar ${seconds} s</li>
    </ul>
  `;
}

/** Round rates from 0 to at least `peak` (1 when nothing happened), 3 to 5 of them, in steps of 1, 2 or 5 times a power of ten. */
function rateTicks(peak: number): number[] {
  const most = peak > 0 ? peak : 1;
  const rough = most / 4;
  const power = 10 ** Math.floor(Math.log10(rough));
  const step = [1, 2, 5, 10].map((f) => f * power).find((s) => s >= rough) ?? 10 * power;
  const count = Math.ceil(most / step - 1e-9);
  return Array.from({ length: count + 1 }, (_, i) => Number((i * step).toPrecision(12)));
}

/** Where the x axis is labelled (0 to 1 across the plot) and how: minutes (or seconds) before now, then `now`. */
function timeTicks(minutes: number): { at: number; label: string }[] {
  const parts = minutes === 5 ? 5 : 4;
  const windowSeconds = minutes * 60;
  return Array.from({ length: parts + 1 }, (_, k) => {
    const ago = (windowSeconds * (parts - k)) / parts;
    const label = ago === 0 ? "now" : ago < 60 ? `-${ago}s` : `-${Math.round(ago / 60)}m`;
    return { at: k / parts, label };
  });
}

/** A rate per second on the axis: `0`, `0.25/s`, `40/s`, `12k/s`. */
function rateText(rate: number): string {
  return rate === 0 ? "0" : `${amount(rate)}/s`;
}

/** A number in two significant digits (three in thousands): `0.017`, `1.4`, `40`, `12k`. */
function amount(value: number): string {
  if (value >= 10_000) return `${Number((value / 1000).toPrecision(3))}k`;
  return String(Number(value.toPrecision(2)));
}

/** A coordinate with one decimal. */
function fixed(value: number): string {
  return value.toFixed(1);
}

/** A time of day, UTC `hh:mm:ss`. */
function clock(date: Date): string {
  return date.toISOString().slice(11, 19);
}
