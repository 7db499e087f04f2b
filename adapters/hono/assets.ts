/**
 * The dashboard's stylesheet and script, inlined into the page under the
 * response's nonce: no external scripts, fonts or CDNs, so the page works
 * offline and at the edge.
 *
 * @module
 */

/** The request header by which the page's script asks for the live part of a page alone. */
export const LIVE_HEADER = "x-errand-live";

/** The page's styles. */
export const DASHBOARD_CSS = `
:root { color-scheme: light dark; --fg: #1d2330; --muted: #5d6675; --line: #d8dde6; --bg: #fff; --panel: #f6f8fb;
  --ok: #2b7a3b; --bad: #c92a2a; --warn: #a85400; --info: #1971c2; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6e9ef; --muted: #9aa3b2; --line: #343a46; --bg: #14171c;
  --panel: #1c2027; --ok: #51cf66; --bad: #ff6b6b; --warn: #ffa94d; --info: #74c0fc; } }
.sr-only { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, sans-serif; color: var(--fg); background: var(--bg); }
header { display: flex; flex-wrap: wrap; gap: .3rem 1.5rem; align-items: baseline; padding: .8rem 1.5rem;
  border-bottom: 1px solid var(--line); }
header > span, h2 code { overflow-wrap: anywhere; }
header h1 { font-size: 1.1rem; margin: 0; }
header nav a { margin-right: 1rem; }
main { padding: 1rem 1.5rem 3rem; max-width: 1200px; }
a { color: var(--info); text-decoration: none; }
a:hover { text-decoration: underline; }
h2 { font-size: 1rem; margin: 1.6rem 0 .5rem; }
h3 { font-size: .95rem; margin: 1.2rem 0 .4rem; display: flex; gap: .6rem; align-items: baseline; flex-wrap: wrap; }
a.log-link { margin-right: .3rem; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .3rem .6rem; border-bottom: 1px solid var(--line); vertical-align: top; }
th { color: var(--muted); font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(260px, 1fr)); gap: 1rem; }
.panel { background: var(--panel); border: 1px solid var(--line); border-radius: 6px; padding: .8rem 1rem; }
.muted { color: var(--muted); }
#health { margin-bottom: 1rem; border-color: var(--warn); } #health .bad { color: var(--bad); } #health .warn { color: var(--warn); }
.state { display: inline-block; padding: 0 .45rem; border-radius: 4px; font-size: 12px; border: 1px solid var(--line); }
.state-completed { color: var(--ok); } .state-failed { color: var(--bad); } .state-cancelled { color: var(--muted); }
.state-running { color: var(--info); } .state-scheduled, .state-retrying, .state-waiting { color: var(--warn); }
.badge { display: inline-block; min-width: 1.6rem; padding: 0 .4rem; border-radius: 9px; background: var(--info);
  color: var(--bg); text-align: center; font-size: 12px; }
.badge.zero { background: var(--line); color: var(--muted); }
button { font: inherit; padding: .2rem .7rem; border: 1px solid var(--line); border-radius: 4px; background: var(--panel);
  color: var(--fg); cursor: pointer; }
button.danger { border-color: var(--bad); color: var(--bad); }
form.filters { display: flex; gap: .6rem; flex-wrap: wrap; align-items: end; margin-bottom: .6rem; }
form.filters label { display: flex; flex-direction: column; font-size: 12px; color: var(--muted); }
input, select { font: inherit; padding: .15rem .3rem; }
pre { background: var(--panel); border: 1px solid var(--line); padding: .6rem; overflow: auto; white-space: pre-wrap; }
.panel-head { display: flex; justify-content: space-between; align-items: baseline; gap: .6rem; }
.panel-head h2 { margin-top: 0; }
nav.window a { margin-left: .5rem; } nav.window a[aria-current] { color: var(--fg); font-weight: 600; }
:root { --attempts: #0072b2; --completed: #009e73; --failed: #d55e00; }
@media (prefers-color-scheme: dark) { :root { --attempts: #56b4e9; } }
svg.chart { display: block; width: 100%; height: auto; font-size: 10px; }
svg.chart text { fill: var(--muted); } svg.chart text.y-label { text-anchor: end; }
svg.chart text.x-label { text-anchor: middle; }
svg.chart line { stroke: var(--line); stroke-width: 1; }
svg.chart rect.completed { fill: var(--completed); } svg.chart rect.failed { fill: var(--failed); }
svg.chart path.attempts { fill: none; stroke: var(--attempts); stroke-width: 1.5; }
ul.legend { display: flex; flex-wrap: wrap; gap: .2rem 1rem; list-style: none; margin: .3rem 0 .6rem; padding: 0;
  font-size: 12px; }
ul.legend .key { display: inline-block; width: .8rem; height: .6rem; margin-right: .3rem; }
ul.legend .key.attempts { height: 0; border-top: 2px solid var(--attempts); vertical-align: middle; }
ul.legend .key.completed { background: var(--completed); } ul.legend .key.failed { background: var(--failed); }
#status { min-height: 1.4rem; color: var(--muted); }
#status.error { color: var(--bad); }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem; margin: 0; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; }
a.heading-link { font-size: 12px; font-weight: normal; margin-left: .6rem; }
ol.timeline { list-style: none; margin: 0; padding: 0; border-top: 1px solid var(--line); }
ol.timeline li.step { display: grid; grid-template-columns: minmax(12rem, 18rem) minmax(6rem, 1fr) minmax(16rem, 2fr);
  gap: .2rem 1rem; align-items: center; padding: .4rem 0; border-bottom: 1px solid var(--line); }
.step-head { display: flex; flex-wrap: wrap; gap: .2rem .5rem; align-items: baseline; min-width: 0; }
.step-name { font-weight: 600; overflow-wrap: anywhere; }
.step-type { color: var(--muted); font-size: 12px; }
svg.step-bar { display: block; width: 100%; height: .6rem; }
svg.step-bar rect.track { fill: var(--panel); stroke: var(--line); stroke-width: 1; vector-effect: non-scaling-stroke; }
svg.step-bar rect.bar-completed { fill: var(--completed); } svg.step-bar rect.bar-failed { fill: var(--failed); }
svg.step-bar rect.bar-waiting { fill: var(--warn); }
dl.step-facts { display: flex; flex-wrap: wrap; gap: 0 1rem; margin: 0; font-size: 13px; }
dl.step-facts div { display: flex; gap: .3rem; min-width: 0; }
dl.step-facts dt { color: var(--muted); white-space: nowrap; } dl.step-facts dd { margin: 0; overflow-wrap: anywhere; }
.step-error { grid-column: 1 / -1; margin: 0; overflow-wrap: anywhere; }
#waiting-for button { margin-left: .6rem; }
@media (max-width: 700px) {
  header, main { padding-left: .8rem; padding-right: .8rem; }
  ol.timeline li.step { grid-template-columns: 1fr; }
  th, td { padding: .3rem .35rem; }
}
div.scroll { overflow-x: auto; }
`;

/**
 * The page's script: refreshes the live part of the page every few seconds
 * (unless the user is editing a filter), or has `errandLive` (live_script.ts)
 * update it from the page's event stream, and sends the action buttons'
 * requests as JSON (`data-body`, or `{}`), then refreshes. A button with
 * `data-confirm` asks first; one with `data-prompt` first asks for a value
 * (`data-default` filled in) and sends it as the query parameter
 * `data-param`, or, with `data-field`, parses it as JSON and sends it as
 * that field of the body. `{name}` in `data-done` becomes the answer's
 * field `name` (`{count}`, `{resumed}`).
 */
export const DASHBOARD_JS = `
(() => {
  const body = document.body;
  const base = body.dataset.base;
  const every = Number(body.dataset.refresh) * 1000;
  const status = document.getElementById("status");
  const say = (text, isError) => { status.textContent = text; status.className = isError ? "error" : ""; };
  // Replaces the elements with the ids in parts (all the live part by default) with the server's.
  async function refresh(parts) {
    const active = document.activeElement;
    if (active && active.closest && active.closest("form")) return;
    try {
      const res = await fetch(location.href, { headers: { "${LIVE_HEADER}": "1" }, credentials: "same-origin" });
      if (!res.ok) return;
      const template = document.createElement("template");
      template.innerHTML = await res.text();
      for (const id of parts || ["live"]) {
        const next = template.content.getElementById(id);
        const current = document.getElementById(id);
        if (next && current) current.replaceWith(next);
      }
    } catch (_) { /* offline for a moment: try again next time */ }
  }
  document.addEventListener("click", async (event) => {
    const button = event.target.closest && event.target.closest("button[data-action]");
    if (!button) return;
    if (button.dataset.confirm && !confirm(button.dataset.confirm)) return;
    let action = button.dataset.action;
    let sent = button.dataset.body || "{}";
    if (button.dataset.prompt) {
      const answer = prompt(button.dataset.prompt, button.dataset.default || "");
      if (!answer) return;
      if (button.dataset.field) {
        let value;
        try {
          value = JSON.parse(answer);
        } catch (_) {
          return say('Not sent: the data must be JSON, such as {"approved": true} or null', true);
        }
        sent = JSON.stringify({ ...JSON.parse(sent), [button.dataset.field]: value });
      } else action += (action.includes("?") ? "&" : "?") + button.dataset.param + "=" + encodeURIComponent(answer);
    }
    button.disabled = true;
    try {
      const res = await fetch(base + action, {
        method: button.dataset.method || "POST",
        headers: { "content-type": "application/json" },
        body: sent,
        credentials: "same-origin",
      });
      const answer = await res.json().catch(() => ({}));
      const done = (button.dataset.done || "Done").replace(/\\{(\\w+)\\}/g, (_, name) => String(answer[name]));
      say(res.ok ? done : (answer.error || "Failed: HTTP " + res.status), !res.ok);
      if (res.ok && button.dataset.then) location.href = base + button.dataset.then;
      else {
        await refresh();
        live.restart();
      }
    } finally {
      button.disabled = false;
    }
  });
  const live = errandLive(body, refresh);
  if (!live.streaming && every > 0) setInterval(refresh, every);
})();
`;
