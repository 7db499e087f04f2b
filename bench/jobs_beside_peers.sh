#!/usr/bin/env bash
# errand's PostgreSQL figures of the shared workload (enqueue_single, enqueue_batch, drain, latency) beside
# the PostgreSQL peers and the floor, in one session and one results file:
# bench/results/<UTC date>-peers-errand-<commit>.jsonl, then the median table and issue 43's targets
# (bench/peer_targets.mjs).
#
#   PEERS_DIR=/tmp/peer-bench/peers npm run bench:peers
#
# PEERS_DIR   a writable copy of ../shared/bench/peers with `npm ci` done (that folder may be
#             read-only; its README says how to copy it)
# RUNS        interleaved runs (default 5): per run, the peers (their run-all.sh with RUNS=1), then
#             errand (npm run bench -- postgres ...), then the floor (npm run bench:floor -- postgres ...);
#             every line gets "run"
# PEERS       the peers (default: the PostgreSQL ones measured in the README, "pg-boss graphile-worker
#             bullmq-postgres")
# SCALE=1     each run also errand's PostgreSQL scale workloads after the floor, lines labelled "variant":
#             "scale": SCALE_WORKLOADS, by default "drain_backlog latency_backlog drain_snapshot
#             drain_many_queues" (the backlog's fill takes minutes)
# OUT         the results file
set -u
RUNS=${RUNS:-5}
OUT_NAME=peers-errand
LOG_NAME=errand-jobs.stderr.log
# shellcheck source=bench/beside_peers.sh
. "$(dirname "$0")/beside_peers.sh"
PEERS=${PEERS:-"pg-boss graphile-worker bullmq-postgres"}
WORKLOADS="enqueue_single enqueue_batch drain latency"

for run in $(seq 1 "$RUNS"); do
  echo "[run $run/$RUNS] peers ..." >&2
  peers "$run" run-all.sh RUNS=1 PEERS="$PEERS"
  echo "[run $run/$RUNS] errand ..." >&2
  errand "$run" "" -- postgres $WORKLOADS
  echo "[run $run/$RUNS] floor ..." >&2
  BENCH_SCRIPT=bench:floor errand "$run" "" -- postgres $WORKLOADS
  if [ "${SCALE:-0}" = 1 ]; then
    echo "[run $run/$RUNS] errand at scale ..." >&2
    errand "$run" scale -- postgres ${SCALE_WORKLOADS:-drain_backlog latency_backlog drain_snapshot drain_many_queues}
  fi
done

node bench/peer_targets.mjs "$OUT"
