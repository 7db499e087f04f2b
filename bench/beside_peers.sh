# Sourced by the scripts that run errand beside the shared benchmark's peers (jobs_beside_peers.sh,
# workflows_beside_peers.sh): the results file, labelling of lines by run, and errand's and the floor's runs.
# The sourcing script sets RUNS' default, OUT's default name (OUT_NAME) and LOGDIR's stderr log (LOG_NAME).
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# One Node for both sides: the one npm runs the bench with (under npm, node_modules/.bin may hold another `node`).
NODE=${npm_node_execpath:-$(command -v node)}
PATH="$(dirname "$NODE"):$PATH"
export PATH
: "${PEERS_DIR:?set PEERS_DIR to a writable copy of ../shared/bench/peers with npm ci done}"
PEERS_DIR=$(cd "$PEERS_DIR" && pwd)
OUT=${OUT:-bench/results/$(date -u +%Y-%m-%d)-${OUT_NAME}-$(git rev-parse --short HEAD).jsonl}
OUT=$(realpath -m "$OUT")
LOGDIR=${LOGDIR:-/tmp/queue-bench-logs}
mkdir -p "$LOGDIR"

# label <run> <variant>: keeps the JSON lines of stdin, setting "run" (and "variant" if not empty)
label() {
  RUN_NO=$1 LABEL=$2 node -e '
    const rl = require("readline").createInterface({ input: process.stdin });
    rl.on("line", (l) => {
      if (!l.startsWith("{")) return;
      const o = JSON.parse(l);
      o.run = Number(process.env.RUN_NO);
      if (process.env.LABEL) o.variant = process.env.LABEL;
      console.log(JSON.stringify(o));
    });'
}

# peers <run> <script> <env...>: one of the peers' run scripts once, its lines relabelled with this run
peers() {
  local run=$1 script=$2; shift 2
  local tmp
  tmp=$(mktemp)
  (cd "$PEERS_DIR" && env "$@" OUT="$tmp" LOGDIR="$LOGDIR" "./$script" >/dev/null)
  label "$run" "" <"$tmp" >>"$OUT"
  rm -f "$tmp"
}

# errand <run> <variant> <env...> -- <args...>: `npm run <script>` (BENCH_SCRIPT, default bench) with env and args,
# its lines labelled
errand() {
  local run=$1 lab=$2; shift 2
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  env "${envs[@]}" npm run --silent "${BENCH_SCRIPT:-bench}" -- "$@" 2>>"$LOGDIR/$LOG_NAME" | label "$run" "$lab" >>"$OUT"
}

echo "node $(node --version), $(nproc) cores; writing to $OUT; stderr logs in $LOGDIR" >&2
