#!/usr/bin/env bash
# errand's workflow workloads (the shared benchmark's section 9: wf_drain, wf_latency, wf_sleep,
# wf_event) beside the workflow peers (DBOS), in one session and one results file:
# bench/results/<UTC date>-peers-errand-workflows-<commit>.jsonl, then the peers' median table.
#
#   PEERS_DIR=/tmp/peer-bench/peers npm run bench:workflows
#
# PEERS_DIR   a writable copy of ../shared/bench/peers with `npm ci` done (that folder may be
#             read-only; its README says how to copy it)
# RUNS        interleaved runs (default 3): per run, the peers (their run-workflows.sh with RUNS=1),
#             then errand on libSQL and PostgreSQL (npm run bench -- wf_drain wf_latency wf_sleep
#             wf_event); every line gets "run"
# PGSS_URL    the admin URL of a throwaway cluster that preloads pg_stat_statements (never the shared
#             server; the peers' README says how to start one): afterwards the peers' variants
#             (VARIANTS=1, on that cluster too) and every errand PostgreSQL workload once more on it,
#             lines labelled "variant": "pg_stat_statements-cluster"
# IDLE=1      also the idle-cost figure: wf_sleep with 10,000 workflows sleeping IDLE_SLEEP_MS (90 s),
#             errand with its default promotion interval (1 s), on both stores (PostgreSQL on PGSS_URL
#             when set), and DBOS with the same sizes; variant "idle-10000x<seconds>s"
# OUT         the results file
set -u
RUNS=${RUNS:-3}
OUT_NAME=peers-errand-workflows
LOG_NAME=errand-workflows.stderr.log
# shellcheck source=bench/beside_peers.sh
. "$(dirname "$0")/beside_peers.sh"
WORKLOADS="wf_drain wf_latency wf_sleep wf_event"

for run in $(seq 1 "$RUNS"); do
  echo "[run $run/$RUNS] peers ..." >&2
  peers "$run" run-workflows.sh RUNS=1
  echo "[run $run/$RUNS] errand ..." >&2
  errand "$run" "" -- $WORKLOADS
done

if [ -n "${PGSS_URL:-}" ]; then
  echo "[pg_stat_statements] peers' variants ..." >&2
  (cd "$PEERS_DIR" && RUNS=0 VARIANTS=1 PGSS_URL="$PGSS_URL" OUT="$OUT" LOGDIR="$LOGDIR" ./run-workflows.sh >/dev/null)
  echo "[pg_stat_statements] errand ..." >&2
  errand 1 pg_stat_statements-cluster PG_URL="$PGSS_URL" -- postgres $WORKLOADS
  # as the peers' variant of the same name: a longer window with all workflows asleep
  errand 1 pg_stat_statements-cluster-sleep-10s PG_URL="$PGSS_URL" WF_SLEEP_MS=10000 -- postgres wf_sleep
fi

if [ "${IDLE:-0}" = 1 ]; then
  # 10,000 workflows take longer than 30 s to fall asleep with 32 slots on a busy 2-core machine, which leaves
  # no window (WORKLOAD.md 9.3: "a longer WF_SLEEP_MS then gives a window"): IDLE_SLEEP_MS, 90 s by default
  IDLE_SLEEP_MS=${IDLE_SLEEP_MS:-90000}
  IDLE_ENV=(WF_N_SLEEP=10000 WF_SLEEP_MS="$IDLE_SLEEP_MS" WORKLOAD_TIMEOUT_S=${IDLE_TIMEOUT_S:-400})
  IDLE_LABEL=idle-10000x$((IDLE_SLEEP_MS / 1000))s
  PG=${PGSS_URL:-${PG_URL:-postgres://root@127.0.0.1:5432/test}}
  echo "[idle] errand ..." >&2
  errand 1 "$IDLE_LABEL" "${IDLE_ENV[@]}" ERRAND_WF_PROMOTE=default PG_URL="$PG" -- wf_sleep
  echo "[idle] peers ..." >&2
  (cd "$PEERS_DIR" && env "${IDLE_ENV[@]}" PG_URL="$PG" node dbos-workflows.mjs wf_sleep 2>>"$LOGDIR/dbos-workflows.variants.stderr.log") |
    label 1 "$IDLE_LABEL" >>"$OUT"
fi

node "$PEERS_DIR/summarize-workflows.mjs" "$OUT"
