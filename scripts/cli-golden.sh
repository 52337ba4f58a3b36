#!/usr/bin/env bash
# cli-golden.sh: run a matrix of irtool commands with one binary and record
# each command's stdout, stderr, exit code and output files, with timing
# fields stripped, so that two binaries' records can be compared byte for
# byte (diff -r). Used to check that moving code out of package cli changes
# no output.
#
#   scripts/cli-golden.sh BINARY OUTDIR [MODEL...]
#
# With no MODEL it runs on the embedded model and every .gguf under
# $IRTOOL_REFERENCE (no default; set it to the reference model directory).
# Compare two records with: diff -r OUTDIR1 OUTDIR2
set -u
bin=$(realpath "$1"); out=$2; shift 2
mkdir -p "$out"; out=$(realpath "$out")
models=("$@")
if [ ${#models[@]} -eq 0 ]; then
  models=(embedded)
  if [ -n "${IRTOOL_REFERENCE:-}" ]; then
    while IFS= read -r f; do models+=("$f"); done < <(find "$IRTOOL_REFERENCE" -name '*.gguf' | sort)
  fi
fi
here=$(dirname "$(realpath "$0")")
norm="$here/cli-golden-norm.py"
py=/usr/bin/python3
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT

# rec NAME CMD...: run CMD in a fresh directory, record its outputs under NAME.
rec() {
  local name=$1; shift
  local d="$out/$name"; mkdir -p "$d"
  local w="$work/$name"; mkdir -p "$w"
  (cd "$w" && "$@" >"$d/stdout" 2>"$d/stderr"; echo $? >"$d/rc")
  # Output files the command wrote into its directory.
  (cd "$w" && find . -type f | sort | while IFS= read -r f; do
      mkdir -p "$d/files/$(dirname "$f")"; cp "$f" "$d/files/$f"; done)
  find "$d" -type f ! -name rc -print0 | xargs -0 -r "$py" "$norm"
  # Paths of the temporary directory vary from run to run.
  find "$d" -type f -print0 | xargs -0 -r sed -i "s#$work#WORK#g"
}

for m in "${models[@]}"; do
  if [ "$m" = embedded ]; then n=embedded; M=(); else n=$(basename "$m" .gguf); M=("$m"); fi
  rec "$n/compile-json"        "$bin" compile --json "${M[@]}"
  rec "$n/compile-text"        "$bin" compile "${M[@]}"
  rec "$n/compile-tp2"         "$bin" compile --json --tp 2 "${M[@]}"
  rec "$n/compile-tp2-text"    "$bin" compile --tp 2 "${M[@]}"
  rec "$n/compile-pp2"         "$bin" compile --json --pp 2 "${M[@]}"
  rec "$n/compile-310b"        "$bin" compile --json --target ascend310b "${M[@]}"
  rec "$n/compile-310b-text"   "$bin" compile --target ascend310b "${M[@]}"
  rec "$n/compile-cpu"         "$bin" compile --json --target cpu "${M[@]}"
  rec "$n/compile-cpu-text"    "$bin" compile --target cpu "${M[@]}"
  rec "$n/compile-out"         "$bin" compile --out out --report report.html --export-buffers buf.csv "${M[@]}"
  rec "$n/compile-sweep"       "$bin" compile --json --tp-sweep 1,2,4 "${M[@]}"
  rec "$n/plan"                "$bin" plan "${M[@]}"
  rec "$n/plan-json"           "$bin" plan --json "${M[@]}"
  rec "$n/viz-graph"           "$bin" viz -o g.dot "${M[@]}"
  rec "$n/viz-buffers"         "$bin" viz --what buffers -o b.svg "${M[@]}"
  rec "$n/viz-partition"       "$bin" viz --what partition -o p.dot "${M[@]}"
  rec "$n/viz-liveness"        "$bin" viz --what liveness --layer 0 -o l.html "${M[@]}"
  rec "$n/inspect"             "$bin" inspect "${M[@]}"
  rec "$n/inspect-json"        "$bin" inspect --json "${M[@]}"
  rec "$n/tokenize"            "$bin" tokenize "${M[@]}" "Once upon a time, <s> there"
  rec "$n/tokenize-json"       "$bin" tokenize --json --no-special "${M[@]}" "Once upon a time"
  rec "$n/ir"                  "$bin" ir "${M[@]}"
  rec "$n/ir-table"            "$bin" ir --table --bind n_tokens=1,n_kv=32 "${M[@]}"
  rec "$n/run-cpu"             "$bin" run --backend cpu -n 4 --json "${M[@]}"
  rec "$n/run-cpu-text"        "$bin" run --backend cpu -n 4 -p "Once upon" "${M[@]}"
  rec "$n/run-sim"             "$bin" run --backend sim -n 4 --json "${M[@]}"
  rec "$n/run-sample"          "$bin" run -n 4 --temp 0.8 --seed 7 --json "${M[@]}"
  rec "$n/run-tp2"             "$bin" run --tp 2 -n 3 --json "${M[@]}"
  rec "$n/bench"               "$bin" bench -p 4 -n 2 -r 1 "${M[@]}"
  rec "$n/bench-json"          "$bin" bench -p 4 -n 2 -r 1 --json "${M[@]}"
done
rec misc/plan-compare sh -c "'$bin' compile --export-buffers b.csv >/dev/null 2>&1; '$bin' plan --compare --strategies naive,greedy-size b.csv"
rec misc/passes    "$bin" passes
rec misc/passes-j  "$bin" passes --json
rec misc/targets   "$bin" targets
rec misc/help      "$bin" help
for c in compile run plan viz passes bench doctor ir targets inspect tokenize version; do
  rec "misc/help-$c" "$bin" help "$c"
done
rec misc/doctor    "$bin" doctor
rec misc/bad-flag  "$bin" compile --nope
rec misc/bad-model "$bin" inspect /nonexistent.gguf
