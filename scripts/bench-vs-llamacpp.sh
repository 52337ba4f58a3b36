#!/usr/bin/env bash
# bench-vs-llamacpp.sh [-p N] [-n N] [-t N] [-r N] MODEL.gguf...
#
# Runs llama.cpp's llama-bench and `irtool bench` back to back on each
# model (same prompt length, decode length, threads and repetitions) and
# prints one table: tokens/s of both (mean ± sample stddev over the
# repetitions) and the ratio irtool / llama.cpp per test. Compare only the
# ratios: both run in the same minute on the same load.
#
# Environment:
#   LLAMA_BENCH  path of llama-bench (default: llama-bench on PATH)
#   LLAMA_BENCH_ARGS  extra arguments for llama-bench (e.g. "-fa off")
#   IRTOOL       path of an irtool binary (default: built from this tree)
#
# Needs python3 (standard library only) to read the two JSON outputs.
# Exit status 0 when every run succeeded.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"

p=64 n=32 t=2 r=3
while getopts "p:n:t:r:h" opt; do
  case "$opt" in
    p) p="$OPTARG" ;;
    n) n="$OPTARG" ;;
    t) t="$OPTARG" ;;
    r) r="$OPTARG" ;;
    *) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
if [ "$#" -eq 0 ]; then
  echo "usage: $0 [-p N] [-n N] [-t N] [-r N] MODEL.gguf..." >&2
  exit 2
fi

lb="${LLAMA_BENCH:-$(command -v llama-bench || true)}"
if [ -z "$lb" ] || [ ! -x "$lb" ]; then
  echo "bench-vs-llamacpp: llama-bench not found: set LLAMA_BENCH to its path" >&2
  exit 1
fi
command -v python3 >/dev/null || { echo "bench-vs-llamacpp: python3 is needed" >&2; exit 1; }

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
irtool="${IRTOOL:-}"
if [ -z "$irtool" ]; then
  irtool="$tmp/irtool"
  (cd "$here" && go build -o "$irtool" ./cmd/irtool)
fi

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# llama-bench: $lb ${LLAMA_BENCH_ARGS:-}; irtool: $irtool; -p $p -n $n -t $t -r $r"
i=0
for model in "$@"; do
  i=$((i + 1))
  # shellcheck disable=SC2086
  "$lb" -m "$model" -p "$p" -n "$n" -t "$t" -r "$r" -o json ${LLAMA_BENCH_ARGS:-} >"$tmp/llama-$i.json" 2>"$tmp/llama-$i.err" || {
    echo "bench-vs-llamacpp: llama-bench failed on $model:" >&2; cat "$tmp/llama-$i.err" >&2; exit 1; }
  "$irtool" bench "$model" -p "$p" -n "$n" -t "$t" -r "$r" --json >"$tmp/irtool-$i.json" 2>"$tmp/irtool-$i.err" || {
    echo "bench-vs-llamacpp: irtool bench failed on $model:" >&2; cat "$tmp/irtool-$i.err" >&2; exit 1; }
done
echo "# load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$tmp" "$i" "$@" <<'EOF'
import json, os, sys
tmp, count, models = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
print("| model | test | llama.cpp t/s | irtool t/s | irtool / llama.cpp |")
print("| --- | ---: | ---: | ---: | ---: |")
for i, model in enumerate(models, 1):
    with open(os.path.join(tmp, f"llama-{i}.json")) as f:
        ll = json.load(f)
    with open(os.path.join(tmp, f"irtool-{i}.json")) as f:
        ir = json.load(f)
    for key, test in (("prefill", "pp"), ("decode", "tg")):
        mine = ir.get(key)
        if not mine:
            continue
        if key == "prefill":
            rows = [x for x in ll if x.get("n_prompt", 0) == mine["n"] and x.get("n_gen", 0) == 0]
        else:
            rows = [x for x in ll if x.get("n_gen", 0) == mine["n"] and x.get("n_prompt", 0) == 0]
        if not rows:
            continue
        ref = rows[0]
        ratio = mine["tok_s"] / ref["avg_ts"] if ref["avg_ts"] else float("nan")
        print(f"| {os.path.basename(model)} | {test}{mine['n']} | {ref['avg_ts']:.2f} ± {ref['stddev_ts']:.2f} "
              f"| {mine['tok_s']:.2f} ± {mine['stddev']:.2f} | {ratio:.3f} |")
EOF
