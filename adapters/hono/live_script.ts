/**
 * The script by which the overview and a job's page update in place from
 * their event stream (events.ts) instead of refreshing the whole page. It
 * is inlined before the dashboard's script, under the same nonce.
 *
 * @module
 */

/**
 * Defines `errandLive(body, refresh)`, which the dashboard's script calls.
 * When the page names an event stream (`data-events`) and live updates are
 * on (`data-refresh` above 0), it opens the stream with `EventSource` and
 * returns `{ streaming: true, restart }`; `restart()` opens it again after
 * an action (a job retried after its final state). Without a stream it
 * returns `{ streaming: false }` and the page refreshes on its timer.
 *
 * - A job's page (`update` events): the state label, `#progress`,
 *   `#result` and `#job-error` are set from each event; when the state
 *   changes, the live part is fetched again once (runs, times, buttons);
 *   the stream is closed at the final state, before the server ends it, so
 *   `EventSource` does not reconnect.
 * - The overview (`overview` events): the counts by state (`#counts`) and
 *   by queue (`#queues`) are set in place from each event; when the counts,
 *   the jobs started, completed, failed or enqueued or the attempts in the window, the
 *   workers or the logs' consumer lag change, the activity panel (the chart with it), workers,
 *   queues (a new queue), workflows waiting for events, schedules, topics and jobs table are replaced
 *   with the server's, at most once every `data-refresh` seconds, whatever
 *   their markup is.
 *
 * If the stream cannot be opened (no `EventSource`, or the server refuses
 * it), the page falls back to refreshing on its timer.
 */
export const LIVE_JS = `
function errandLive(body, refresh) {
  const path = body.dataset.events;
  const every = Number(body.dataset.refresh) * 1000;
  if (!path || !(every > 0) || typeof EventSource !== "function") return { streaming: false, restart() {} };
  const FINAL = ["completed", "failed", "cancelled"];
  const PARTS = ["activity", "workers", "queues", "event-waits", "schedules", "topics", "job-table"];
  const label = () => document.querySelector("#live h2 .state");
  const setText = (selector, text) => {
    for (const element of document.querySelectorAll(selector)) element.textContent = text;
  };
  const shown = (value) => value === undefined || value === null ? "–" : JSON.stringify(value, null, 2);
  let source = null;
  let fallback = null;
  let state = null;
  let last = "";
  let fetchedAt = 0;

  function onUpdate(event) {
    const update = JSON.parse(event.data);
    if ("progress" in update) setText("#progress", shown(update.progress));
    if ("result" in update) setText("#result", shown(update.result));
    setText("#job-error", update.error ? update.error.name + ": " + update.error.message : "");
    const shownState = label();
    if (shownState) {
      shownState.textContent = update.state;
      shownState.className = "state state-" + update.state;
    }
    const changed = state !== update.state;
    state = update.state;
    if (FINAL.includes(update.state)) close();
    if (changed) void refresh();
  }

  function onOverview(event) {
    const { counts, stats, logs } = JSON.parse(event.data);
    for (const cell of document.querySelectorAll("#counts [data-state]")) {
      cell.textContent = counts.byState[cell.dataset.state] ?? 0;
    }
    for (const row of document.querySelectorAll("#queues tr[data-queue]")) {
      const byState = counts.byQueue[row.dataset.queue] || {};
      for (const cell of row.querySelectorAll("td[data-state]")) cell.textContent = byState[cell.dataset.state] ?? 0;
    }
    const sums = ["started", "attempts", "completed", "failed", "enqueued"]
      .map((what) => stats.throughput.reduce((n, second) => n + second[what], 0));
    const lags = (logs || []).map((l) => [l.log, l.groups.reduce((n, g) => n + g.lag, 0)]);
    const now = JSON.stringify([counts, sums, stats.workers.map((w) => w.id), lags]);
    if (now === last || Date.now() - fetchedAt < every) return;
    last = now;
    fetchedAt = Date.now();
    void refresh(PARTS);
  }

  function close() {
    if (source) source.close();
    source = null;
  }

  function open() {
    const shownState = label();
    state = shownState ? shownState.textContent : null;
    if (source || FINAL.includes(state)) return;
    source = new EventSource(body.dataset.base + path);
    source.addEventListener("update", onUpdate);
    source.addEventListener("overview", onOverview);
    source.addEventListener("gone", () => {
      close();
      void refresh();
    });
    source.addEventListener("error", () => {
      if (!source || source.readyState !== EventSource.CLOSED) return; // it reconnects by itself
      close();
      fallback ??= setInterval(refresh, every);
    });
  }

  open();
  return { streaming: true, restart: open };
}
`;
