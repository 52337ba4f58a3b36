#!/usr/bin/env bash
# bench-vs-llamacpp.sh [-p N[,N...]] [-n N] [-t N[,N...]] [-r N] [--mixes LIST] [--keep DIR] [MODEL.gguf...]
#
# Runs llama.cpp's llama-bench and `irtool bench` back to back on each
# model, alternating: each of the -r runs is one llama-bench repetition
# then one irtool repetition, for every thread count of -t, with the same
# prompt lengths (-p, each a prefill test "ppN": -p 64,512 runs pp64 and
# pp512) and decode length (-n, "tgN"; 0 skips it). Prints one table: per
# file, thread count and test, the median tokens/s of each tool over the runs with their range
# [min-max], the ratio of the medians irtool / llama.cpp and the range of
# the per-run ratios. Compare only ratios: both run in the same minute on
# the same load.
#
# --mixes LIST builds the test files itself into a temporary directory
# (or into --keep DIR, reusing the files already there) and benchmarks
# them before the MODEL arguments. LIST is comma-separated: a
# llama-quantize preset (Q4_K_M, Q5_K_M, Q6_K, Q3_K_M, ...) of the
# Qwen2.5-0.5B-shaped F16 file the generator writes; pure-TYPE for
# `llama-quantize --pure` (pure-Q8_0, pure-Q4_0); F16 for the generated
# file itself; SHAPE:ITEM for another shape of the generator (e.g.
# llama3.2-1b:Q4_K_M). "default" stands for
# Q4_K_M,Q5_K_M,Q6_K,Q3_K_M,F16,pure-Q8_0,pure-Q4_0,llama3.2-1b:Q4_K_M.
#
# Environment:
#   LLAMA_BENCH       path of llama-bench (default: llama-bench on PATH)
#   LLAMA_BENCH_ARGS  extra arguments for llama-bench (e.g. "-fa off")
#   IRTOOL            path of an irtool binary (default: built from this tree)
#   LLAMA_QUANTIZE    path of llama-quantize (--mixes; default: on PATH)
#   GEN_QWEN_SHAPE    path of the Qwen-shape GGUF generator script, which
#                     writes OUT.gguf (F16, random weights) and takes
#                     --shape NAME (--mixes)
#   PYTHON            interpreter for the generator (default: the first of
#                     python3 and /usr/bin/python3 that imports numpy and
#                     PyYAML, which it needs)
#   IRTOOL_KERNELS    passed on to irtool: forces kernel paths (e.g. avx2;
#                     docs/KERNELS.md); the header shows it when set
#
# Needs python3 (standard library only) to read the JSON outputs.
# Exit status 0 when every run succeeded.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"

usage() { sed -n '2,39p' "$0" | sed 's/^# \{0,1\}//'; }

plist=64 n=32 tlist=2 r=3 mixes="" keep=""
while [ "$#" -gt 0 ]; do
  case "$1" in
    -p) plist="$2"; shift 2 ;;
    -n) n="$2"; shift 2 ;;
    -t) tlist="$2"; shift 2 ;;
    -r) r="$2"; shift 2 ;;
    --mixes) mixes="$2"; shift 2 ;;
    --keep) keep="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    --) shift; break ;;
    -*) echo "bench-vs-llamacpp: unknown flag $1" >&2; usage >&2; exit 2 ;;
    *) break ;;
  esac
done
if [ "$#" -eq 0 ] && [ -z "$mixes" ]; then
  echo "usage: $0 [-p N[,N...]] [-n N] [-t N[,N...]] [-r N] [--mixes LIST] [--keep DIR] [MODEL.gguf...]" >&2
  exit 2
fi
case "$r" in ''|*[!0-9]*|0) echo "bench-vs-llamacpp: -r wants a positive count" >&2; exit 2 ;; esac

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

models=()
if [ -n "$mixes" ]; then
  lq="${LLAMA_QUANTIZE:-$(command -v llama-quantize || true)}"
  gen="${GEN_QWEN_SHAPE:-}"
  py="${PYTHON:-}"
  if [ -z "$py" ]; then
    py=python3
    for c in python3 /usr/bin/python3; do
      if "$c" -c 'import numpy, yaml' >/dev/null 2>&1; then py="$c"; break; fi
    done
  fi
  if [ -z "$lq" ] || [ ! -x "$lq" ]; then
    echo "bench-vs-llamacpp: --mixes: llama-quantize not found: set LLAMA_QUANTIZE to its path" >&2; exit 1
  fi
  if [ -z "$gen" ] || [ ! -f "$gen" ]; then
    echo "bench-vs-llamacpp: --mixes: set GEN_QWEN_SHAPE to the generator script" >&2; exit 1
  fi
  dir="$tmp/models"
  if [ -n "$keep" ]; then dir="$keep"; fi
  mkdir -p "$dir"
  [ "$mixes" = default ] && mixes="Q4_K_M,Q5_K_M,Q6_K,Q3_K_M,F16,pure-Q8_0,pure-Q4_0,llama3.2-1b:Q4_K_M"
  IFS=',' read -r -a items <<<"$mixes"
  for item in "${items[@]}"; do
    shape=qwen2.5-0.5b item_t="$item"
    case "$item" in *:*) shape="${item%%:*}"; item_t="${item#*:}" ;; esac
    f16="$dir/$shape-shape-F16.gguf"
    case "$item_t" in
      F16) out="$f16" ;;
      pure-*) out="$dir/$shape-shape-${item_t#pure-}.gguf"; qargs=(--pure "$f16" "$out.part" "${item_t#pure-}") ;;
      *) out="$dir/$shape-shape-$item_t.gguf"; qargs=("$f16" "$out.part" "$item_t") ;;
    esac
    # The F16 file is made only when something still needs it.
    if [ ! -s "$out" ] && [ ! -s "$f16" ]; then
      echo "# generating $(basename "$f16")" >&2
      if [ "$shape" = qwen2.5-0.5b ]; then
        "$py" "$gen" "$f16.part" >"$tmp/gen.log" 2>&1 || { cat "$tmp/gen.log" >&2; exit 1; }
      else
        "$py" "$gen" --shape "$shape" "$f16.part" >"$tmp/gen.log" 2>&1 || { cat "$tmp/gen.log" >&2; exit 1; }
      fi
      mv "$f16.part" "$f16"
    fi
    if [ ! -s "$out" ]; then
      echo "# quantising $(basename "$out")" >&2
      "$lq" "${qargs[@]}" "$(nproc)" >"$tmp/quant.log" 2>&1 || { tail -20 "$tmp/quant.log" >&2; exit 1; }
      mv "$out.part" "$out"
    fi
    models+=("$out")
  done
fi
models+=("$@")

IFS=',' read -r -a threads <<<"$tlist"
cpu_model="$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -n 1 || true)"
cpu_flags="$(sed -n 's/^flags[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -n 1 | tr ' ' '\n' | grep -xE 'avx2|fma|f16c|avx512f|avx512_vnni|avx_vnni' | tr '\n' ' ' | sed "s/ $//" || true)"
[ -n "$cpu_flags" ] && cpu_model="$cpu_model; $cpu_flags"
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs (${cpu_model:-unknown model}), load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# $(basename "$lb") ${LLAMA_BENCH_ARGS:-} vs $(basename "$irtool") bench${IRTOOL_KERNELS:+ (IRTOOL_KERNELS=$IRTOOL_KERNELS)}; -p $plist -n $n -t $tlist, $r alternating runs of each"
list="$tmp/runs.txt"
: >"$list"
i=0
for model in "${models[@]}"; do
  for t in "${threads[@]}"; do
    for run in $(seq 1 "$r"); do
      i=$((i + 1))
      # shellcheck disable=SC2086
      "$lb" -m "$model" -p "$plist" -n "$n" -t "$t" -r 1 -o json ${LLAMA_BENCH_ARGS:-} >"$tmp/llama-$i.json" 2>"$tmp/llama-$i.err" || {
        echo "bench-vs-llamacpp: llama-bench failed on $(basename "$model"):" >&2; cat "$tmp/llama-$i.err" >&2; exit 1; }
      # irtool bench takes llama-bench's lists: the same tests in one run.
      "$irtool" bench "$model" -p "$plist" -n "$n" -t "$t" -r 1 --json >"$tmp/irtool-$i.json" 2>"$tmp/irtool-$i.err" || {
        echo "bench-vs-llamacpp: irtool bench failed on $(basename "$model"):" >&2; cat "$tmp/irtool-$i.err" >&2; exit 1; }
      echo "$i $t $(basename "$model")" >>"$list"
    done
  done
done
echo "# load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$tmp" "$list" <<'EOF'
import json, os, statistics, sys
tmp, listfile = sys.argv[1], sys.argv[2]
res = {}   # (model, threads, test) -> {"ll": [...], "ir": [...]}
order = []
for line in open(listfile):
    i, t, model = line.split(maxsplit=2)
    model = model.strip()
    with open(os.path.join(tmp, f"llama-{i}.json")) as f:
        ll = json.load(f)
    with open(os.path.join(tmp, f"irtool-{i}.json")) as f:
        ir = json.load(f)
    for mine in ir["results"]:
        rows = [x for x in ll if x.get("n_prompt", 0) == mine["n_prompt"] and x.get("n_gen", 0) == mine["n_gen"]]
        if not rows:
            continue
        name = (model, int(t), mine["test"])
        if name not in res:
            res[name] = {"ll": [], "ir": []}
            order.append(name)
        res[name]["ll"].append(rows[0]["avg_ts"])
        res[name]["ir"].append(mine["tok_s"])

def fmt(v):
    return f"{statistics.median(v):.2f} [{min(v):.2f}-{max(v):.2f}]"

print("| model | threads | test | runs | llama.cpp t/s median [range] | irtool t/s median [range] | irtool / llama.cpp (medians) | per-run ratios |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for name in order:
    ll, ir = res[name]["ll"], res[name]["ir"]
    ratio = statistics.median(ir) / statistics.median(ll) if statistics.median(ll) else float("nan")
    rr = [a / b for a, b in zip(ir, ll) if b]
    print(f"| {name[0]} | {name[1]} | {name[2]} | {len(ll)} | {fmt(ll)} | {fmt(ir)} | {ratio:.3f} | {min(rr):.3f}-{max(rr):.3f} |")
EOF
