#!/usr/bin/env bash
# errand's SQLite store on each synchronous driver beside @libsql/client, and the floor on each,
# on each runtime, in interleaved rounds, into one results file:
# bench/results/<UTC date>-errand-sqlite-drivers-<commit>.jsonl.
#
#   bash bench/sqlite_drivers.sh
#
# Per round, on each runtime in turn (Node 20: libsql, sqlite-libsql; Node 24: the same and
# sqlite-node; Bun: the same and sqlite-bun), for each workload (WORKLOADS, default
# "drain_flow enqueue_single": drain_flow brings the plain drain along) errand's bench then the
# floor, the stores interleaved within each; then plainjob's drain when PLAINJOB_DIR is set. Every
# line gets "run" and "runtime".
#
# NODE20, NODE24, BUN  the runtimes (default: node on PATH, node_modules/node24/bin/node,
#                      node_modules/.bin/bun); one that is missing is left out, saying so
# PLAINJOB_DIR         a folder holding ../shared/bench/peers' plainjob.mjs and common.mjs with
#                      plainjob, better-sqlite3 and pg installed (npm ci of that folder does it)
# SQLITE_DIR           where the SQLite files go (default: a new temporary folder, removed at the
#                      end, so that no other run on the machine deletes or writes them meanwhile)
# RUNS                 rounds (default 3)
# OUT                  the results file
set -u
cd "$(dirname "$0")/.."
NODE20=${NODE20:-$(command -v node)}
NODE24=${NODE24:-node_modules/node24/bin/node}
BUN=${BUN:-node_modules/.bin/bun}
RUNS=${RUNS:-3}
WORKLOADS=${WORKLOADS:-"drain_flow enqueue_single"}
OUT=${OUT:-bench/results/$(date -u +%Y-%m-%d)-errand-sqlite-drivers-$(git rev-parse --short HEAD).jsonl}
OUT=$(realpath -m "$OUT")
LOGDIR=${LOGDIR:-/tmp/queue-bench-logs}
mkdir -p "$LOGDIR"
if [ -z "${SQLITE_DIR:-}" ]; then
  SQLITE_DIR=$(mktemp -d)
  trap 'rm -rf "$SQLITE_DIR"' EXIT
fi
export SQLITE_DIR

node_modules/.bin/esbuild bench/errand_bench.ts bench/floor_bench.ts --bundle --platform=node \
  --format=esm --packages=external --log-level=warning --outdir=bench/.out --out-extension:.js=.mjs || exit 1

# label <run> <runtime>: keeps the JSON lines of stdin, setting "run" and "runtime"
label() {
  RUN_NO=$1 RUNTIME=$2 "$NODE20" -e '
    const rl = require("readline").createInterface({ input: process.stdin });
    rl.on("line", (l) => {
      if (!l.startsWith("{")) return;
      const o = JSON.parse(l);
      o.run = Number(process.env.RUN_NO);
      o.runtime = process.env.RUNTIME;
      console.log(JSON.stringify(o));
    });'
}

# runtime <name> <binary> <stores...>: each workload on errand then on the floor, with that runtime
runtime() {
  local name=$1 bin=$2
  shift 2
  if ! [ -x "$bin" ] && ! command -v "$bin" >/dev/null; then
    echo "[run $run] $name: skipped: no $bin" >&2
    return
  fi
  for w in $WORKLOADS; do
    for script in errand_bench floor_bench; do
      echo "[run $run] $name $script $w ($*)" >&2
      "$bin" "bench/.out/$script.mjs" "$@" "$w" 2>>"$LOGDIR/sqlite-drivers.stderr.log" | label "$run" "$name" >>"$OUT"
    done
  done
}

echo "$(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); SQLite files in $SQLITE_DIR; writing to $OUT" >&2
for run in $(seq 1 "$RUNS"); do
  runtime "node $("$NODE20" --version)" "$NODE20" libsql sqlite-libsql
  runtime "node $("$NODE24" --version 2>/dev/null)" "$NODE24" libsql sqlite-libsql sqlite-node
  runtime "bun $("$BUN" --version 2>/dev/null)" "$BUN" libsql sqlite-libsql sqlite-bun
  if [ -n "${PLAINJOB_DIR:-}" ]; then
    echo "[run $run] plainjob drain" >&2
    (cd "$PLAINJOB_DIR" && "$NODE20" plainjob.mjs drain 2>>"$LOGDIR/sqlite-drivers.stderr.log") |
      label "$run" "node $("$NODE20" --version)" >>"$OUT"
  fi
done
echo "load $(cut -d' ' -f1-3 /proc/loadavg) at the end" >&2
